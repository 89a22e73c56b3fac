//! `retrystorm import`: a client config in, the `[[policy]]` table it amounts to out.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use retrystorm::import::{fleet_half_of, import_file, read_config};
use retrystorm::scenario::{ImportPart, ImportedFleet, Policy, check_policy_name};

/// Flags of `import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The config: a gRPC service config (JSON), an Envoy retry policy (YAML or JSON), an Istio
    /// VirtualService or DestinationRule, a Linkerd ServiceProfile or annotated Service or
    /// route (YAML), a Spring application.yml with resilience4j, or an AWS config file (INI).
    config: PathBuf,
    /// The gRPC method whose methodConfig is read, when there are several
    /// (`package.Service/Method` or `package.Service`).
    #[arg(long, group = "part")]
    method: Option<String>,
    /// The route read (its `name`), when an Istio VirtualService or a Linkerd ServiceProfile
    /// has several.
    #[arg(long, group = "part")]
    route: Option<String>,
    /// The resilience4j instance read, when the application.yml has several.
    #[arg(long, group = "part")]
    instance: Option<String>,
    /// The AWS profile read (default: `default`).
    #[arg(long, group = "part")]
    profile: Option<String>,
    /// The policy's name (default: the file's name without extension): 1 to 100 characters,
    /// without control characters, as a scenario's policy names.
    #[arg(long, value_parser = policy_name)]
    name: Option<String>,
}

/// Prints the policy, or the error, which names the field.
pub fn import(args: &ImportArgs) -> io::Result<ExitCode> {
    let part = ImportPart::from_fields([
        ("import_method", args.method.clone()),
        ("import_route", args.route.clone()),
        ("import_instance", args.instance.clone()),
        ("import_profile", args.profile.clone()),
    ])
    .expect("clap allows one of them");
    let fleet = match read_config(&args.config).and_then(|text| fleet_half_of(&args.config, &text))
    {
        Ok(fleet) => fleet,
        Err(error) => {
            super::report(format_args!("{error}"));
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut out = io::stdout().lock();
    // A DestinationRule of the fleet's half alone has no policy to print.
    if let Some((fleet, false)) = &fleet {
        if part.is_some() {
            super::report(format_args!(
                "{}: a DestinationRule has one part; remove the flag that chooses one",
                args.config.display()
            ));
            return Ok(ExitCode::FAILURE);
        }
        write_fleet(&mut out, &args.config, fleet, "")?;
        return Ok(ExitCode::SUCCESS);
    }
    let imported = match import_file(&args.config, part.as_ref()) {
        Ok(imported) => imported,
        Err(error) => {
            super::report(format_args!("{error}"));
            return Ok(ExitCode::FAILURE);
        }
    };
    let name = args.name.clone().unwrap_or_else(|| {
        args.config.file_stem().map_or("imported".into(), |stem| {
            stem.to_string_lossy().into_owned()
        })
    });
    if let Err(message) = check_policy_name(&name) {
        super::report(format_args!(
            "{}: {message}; name it with --name",
            args.config.display()
        ));
        return Ok(ExitCode::FAILURE);
    }
    let mut policy = Policy::named(&name);
    imported.apply(&mut policy, &[]);
    writeln!(
        out,
        "# Imported from {} ({}).",
        retrystorm::base::escape::user_text(&args.config.display().to_string()),
        imported.source
    )?;
    for note in &imported.notes {
        writeln!(out, "# - {note}")?;
    }
    let document = toml::to_string(&PolicyList {
        policy: vec![policy],
    })
    .map_err(|error| io::Error::other(error.to_string()))?;
    out.write_all(document.as_bytes())?;
    if let Some((fleet, _)) = &fleet {
        // Commented, so that what is printed stays one `[[policy]]` table to paste.
        writeln!(out)?;
        write_fleet(&mut out, &args.config, fleet, "# ")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The fleet half of a DestinationRule as the `fleet` line of a `[[service]]` (or
/// `[upstream]`), each line after `prefix` (`"# "` below a policy), with its notes.
fn write_fleet(
    out: &mut impl Write,
    config: &std::path::Path,
    fleet: &ImportedFleet,
    prefix: &str,
) -> io::Result<()> {
    let shown = retrystorm::base::escape::user_text(&config.display().to_string()).into_owned();
    writeln!(
        out,
        "# The fleet half ({}): what a service's fleet = {{ import = {shown:?} }} gives its instances.",
        fleet.source
    )?;
    for note in &fleet.notes {
        writeln!(out, "# - {note}")?;
    }
    let mut table = toml::Table::new();
    table.insert(
        "load_balancer".into(),
        toml::Value::try_from(fleet.load_balancer).map_err(io::Error::other)?,
    );
    if let Some(rules) = &fleet.outlier_detection {
        table.insert(
            "outlier_detection".into(),
            toml::Value::try_from(rules).map_err(io::Error::other)?,
        );
    }
    writeln!(out, "{prefix}fleet = {}", toml::Value::Table(table))
}

/// `--name`, checked as the scenario loader checks a policy's name.
fn policy_name(name: &str) -> Result<String, String> {
    check_policy_name(name).map(|()| name.to_string())
}

/// `[[policy]]` as TOML writes it.
#[derive(serde::Serialize)]
struct PolicyList {
    policy: Vec<Policy>,
}
