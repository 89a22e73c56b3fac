//! Reading a scenario: the file, `--set` overrides, and errors that point at the right place.
//!
//! Overrides are applied to the TOML document itself (with `toml_edit`, which keeps the rest of
//! the file as written), and the edited document goes through exactly the same reading and
//! validation as a file, so `--set clients.count=0` is refused with the same words as
//! `count = 0` in the file. To point errors at the right place, every line of the edited
//! document is traced back to the line of the file it came from, or to the override that wrote
//! it.

use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::str::FromStr;

use toml_edit::{DocumentMut, InlineTable, Item, Table, TableLike, Value};

use super::incident::resolve_incident;
use super::override_key::{is_control, name_of, split_index};
use super::switch::{remove, switch_at};
use super::topology::resolve_defaults;
use super::validate::validate;
use super::{DEFAULT_POLICY_NAME, ImportPart, Imported, ImportedFleet, Overrides, Scenario};
use crate::base::escape::user_text;
use crate::base::suggest::did_you_mean;
use crate::base::text_file::{TextFileError, byte_size, read_text};

/// `KEY=VALUE` from `--set`: a dotted path into the scenario and a TOML value. A value that is
/// not valid TOML is taken as a string, so `--set upstream.outage=crash` and
/// `--set policy.base=250ms` need no quotes. An index selects one table of an array
/// (`policy.1.base=50ms`); without one the value is set in every table (`policy.base=50ms`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    /// Dotted path, such as `clients.count`.
    pub key: String,
    /// The value as written.
    pub value: String,
    /// The command-line flag that gave it (`--set`, `--grid`, `--seed`), named in errors.
    pub flag: &'static str,
}

impl Override {
    /// An override given with `--set`.
    pub fn set(key: &str, value: &str) -> Override {
        Override {
            key: key.to_string(),
            value: value.to_string(),
            flag: "--set",
        }
    }
}

impl FromStr for Override {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                Ok(Override::set(key.trim(), value.trim()))
            }
            _ => Err(format!(
                "{text:?} is not KEY=VALUE; write for example clients.count=50000"
            )),
        }
    }
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// The most parts a `--set` key may have: the deepest real key
/// (`policy.0.controls.retry-budget.percent`) has five.
pub const MAX_KEY_DEPTH: usize = 16;
/// The longest `--set` key, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;

/// The first 60 characters of `text`, marked when cut.
fn truncated(text: &str) -> String {
    let mut shown: String = text.chars().take(60).collect();
    if shown.len() < text.len() {
        shown.push_str("...");
    }
    shown
}

/// Where a scenario error is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A place in the file; line and column count from 1.
    File {
        path: String,
        line: usize,
        column: usize,
    },
    /// The file as a whole (it could not be read).
    WholeFile { path: String },
    /// A command-line override; `text` is the flag and the assignment, `--set key=value`.
    Override { path: String, text: String },
}

/// A scenario that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// Where.
    pub location: Location,
    /// What is wrong and what would be valid.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Location::File { path, line, column } => {
                write!(f, "{}:{line}:{column}: ", user_text(path))?
            }
            Location::WholeFile { path } => write!(f, "{}: ", user_text(path))?,
            Location::Override { path, text } => {
                write!(f, "{}: {}: ", user_text(path), user_text(text))?
            }
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// The largest scenario file read: a scenario is a few kilobytes, and `/dev/zero` never ends.
/// The resolved scenario a run writes is held to it too ([`check_resolved_fits`]), so that
/// every scenario accepted reloads from its resolved form.
pub const MAX_SCENARIO_BYTES: u64 = 4 * 1024 * 1024;

/// The first line of the resolved `scenario.toml` a run writes.
pub const RESOLVED_HEADER: &str =
    "# The scenario exactly as simulated: every default written out.\n";

/// How the configs a scenario's `import`s name become settings: the narrow interface through
/// which the importers (the layer above) are handed to the loader, so that this layer knows
/// neither where configs are read from nor their formats. A run reads the files; a sweep reads
/// each once and keeps its text, so that every point, every shard and `merge` see the same
/// bytes, and `merge` reads no path a shard names.
pub trait ConfigSource: Sync {
    /// The settings of the config at `path` (the scenario's folder joined with the `import`),
    /// for the `part` named where it has several; the error names the config and the field.
    fn import(&self, path: &Path, part: Option<&ImportPart>) -> Result<Imported, String>;

    /// The fleet settings of the Istio DestinationRule at `path` (the scenario's folder joined
    /// with a fleet's `import`); the error names the config and the field.
    fn import_fleet(&self, path: &Path) -> Result<ImportedFleet, String>;

    /// The text of the data file at `path` (the scenario's folder joined with what a
    /// distribution's `histogram` or `samples` or `clients.replay` names); the error names the file.
    fn data_file(&self, path: &Path) -> Result<String, String>;
}

/// The text of the scenario file at `path`: a regular file of at most [`MAX_SCENARIO_BYTES`],
/// in UTF-8 ([`read_text`]); the error points at the first byte that is not.
pub fn read_scenario(path: &Path) -> Result<String, ScenarioError> {
    let label = path.display().to_string();
    let whole_file = |message: String| ScenarioError {
        location: Location::WholeFile {
            path: label.clone(),
        },
        message,
    };
    read_text(path, MAX_SCENARIO_BYTES).map_err(|error| match error {
        TextFileError::NotUtf8 { line, column } => ScenarioError {
            location: Location::File {
                path: label.clone(),
                line,
                column,
            },
            message: "not UTF-8 text: a scenario is a TOML file".into(),
        },
        TextFileError::TooLarge(_) => whole_file(format!(
            "{error}; a scenario is a TOML file of a few kilobytes"
        )),
        TextFileError::NotRegular(_) | TextFileError::Io(_) => {
            whole_file(format!("cannot read the scenario: {error}"))
        }
    })
}

/// Refuses a scenario whose resolved form (the `scenario.toml` a run writes, every default
/// written out) is over [`MAX_SCENARIO_BYTES`]: it could not be read back, though a resolved
/// scenario is meant to reload and run the same. Resolving can triple a file (a capacity curve
/// of 200,000 points, 3.3 MB, resolves to 10 MB), so the size is that of the resolution itself.
pub fn check_resolved_fits(scenario: &Scenario, label: &str) -> Result<(), ScenarioError> {
    let resolved = RESOLVED_HEADER.len() + scenario.to_resolved_toml().len();
    if resolved as u64 > MAX_SCENARIO_BYTES {
        return Err(ScenarioError {
            location: Location::WholeFile {
                path: label.to_string(),
            },
            message: format!(
                "its resolved form (the scenario.toml a run writes, every default written out) would be {resolved} bytes, larger than the {} a scenario may be, so it could not be read back; make the scenario smaller (fewer capacity points, operations, services or policies)",
                byte_size(MAX_SCENARIO_BYTES)
            ),
        });
    }
    Ok(())
}

/// Reads, overrides and validates a scenario given as `text`, its `import`s turned into
/// settings by `configs`; `label` names it in errors, and its folder is where `import`s are
/// read from. The resolved form is not checked ([`check_resolved_fits`]).
pub fn load_with_configs(
    text: &str,
    label: &str,
    overrides: &[Override],
    configs: &dyn ConfigSource,
) -> Result<Scenario, ScenarioError> {
    let source = Source::new(text, label, overrides, configs)?;
    let mut scenario = source.read()?;
    scenario.header = header_comment(text);
    scenario.command_line_changes = overrides
        .iter()
        .filter(|item| item.flag == "--set")
        .map(|item| (item.key.clone(), item.value.clone()))
        .collect();
    for policy in &scenario.policy {
        let overridden = apply_overrides(&scenario, &policy.overrides).map_err(|message| {
            source.error_at(
                policy.overrides.span.clone(),
                &format!("policy {:?}: overrides: {message}", policy.name.get_ref()),
            )
        })?;
        if !policy.overrides.is_empty() {
            super::validate::validate_claims_of_policy(
                &scenario.expect,
                policy.name.get_ref(),
                (&overridden.service_shapes(), &overridden.operation_names()),
                &scenario.service_shapes(),
            )
            .map_err(|(span, message)| source.error_at(span, &message))?;
        }
    }
    Ok(scenario)
}

/// The comment lines before the first line of TOML, each without its `#` and one space; a lone
/// `#` stays as an empty line (a paragraph break).
fn header_comment(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .take_while(|line| line.starts_with('#') || line.is_empty())
        .filter_map(|line| line.strip_prefix('#'))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect();
    lines.join("\n").trim().to_string()
}

/// The scenario with a policy's `overrides` applied to its topology, as `--set` would apply
/// them, and validated again; the error says which key is wrong and why.
pub(super) fn apply_overrides(
    scenario: &Scenario,
    overrides: &Overrides,
) -> Result<Scenario, String> {
    if overrides.is_empty() {
        return Ok(scenario.clone());
    }
    let names: Vec<&str> = scenario.services().iter().map(|s| s.name()).collect();
    let mut list = Vec::new();
    for (key, value) in &overrides.entries {
        let mut parts = key.split('.');
        let valid = match (parts.next(), parts.next(), parts.next()) {
            (Some("upstream"), Some(_), _) => scenario.upstream.is_some(),
            (Some("service"), Some(name), Some(_)) => {
                if scenario.upstream.is_none() && !names.contains(&name) {
                    return Err(format!(
                        "`{key}`: there is no service named {name:?}; the services are {}",
                        names.join(", ")
                    ));
                }
                scenario.upstream.is_none()
            }
            _ => false,
        };
        if !valid {
            return Err(format!(
                "`{key}`: a policy may override only the topology it runs against, with keys such as {}; what the clients do is shared by every policy so that all see the same arrivals",
                if scenario.upstream.is_some() {
                    "upstream.workers".to_string()
                } else {
                    format!("service.{}.retry.max_attempts", names[0])
                }
            ));
        }
        list.push(Override {
            key: key.clone(),
            value: value.to_string(),
            flag: "overrides",
        });
    }
    // Without the claims: they are the scenario's, checked against each policy's services
    // once its overrides are applied (`validate_claims_of_policy`), and a claim on another
    // policy's fleet need not hold of this one's.
    let mut unclaimed = scenario.clone();
    unclaimed.expect.clear();
    let text = unclaimed.to_resolved_toml();
    // The resolved text has no `import` left: its configs were applied.
    let source =
        Source::new(&text, "overrides", &list, &NoImports).map_err(|error| error.message)?;
    source.read().map_err(|error| match error.location {
        Location::Override { text, .. } => format!("{text}: {}", error.message),
        _ => error.message,
    })
}

/// The configs of a resolved scenario, which has none: its `import`s were applied when it was
/// loaded.
struct NoImports;

impl ConfigSource for NoImports {
    fn import(&self, path: &Path, _: Option<&ImportPart>) -> Result<Imported, String> {
        Err(format!(
            "{}: a resolved scenario imports nothing",
            path.display()
        ))
    }

    fn import_fleet(&self, path: &Path) -> Result<ImportedFleet, String> {
        Err(format!(
            "{}: a resolved scenario imports nothing",
            path.display()
        ))
    }

    fn data_file(&self, path: &Path) -> Result<String, String> {
        Err(format!(
            "{}: a resolved scenario reads no data file (its distributions are inline, its replay applied)",
            path.display()
        ))
    }
}

/// The text that is read, and where each of its lines came from.
struct Source<'a> {
    label: &'a str,
    overrides: &'a [Override],
    configs: &'a dyn ConfigSource,
    edited: String,
    /// For each line of `edited`: its line in the file (0-based), or `None` if an override
    /// wrote it.
    origin: Vec<Option<usize>>,
}

impl<'a> Source<'a> {
    fn new(
        text: &'a str,
        label: &'a str,
        overrides: &'a [Override],
        configs: &'a dyn ConfigSource,
    ) -> Result<Self, ScenarioError> {
        let plain = |edited: String, origin| Source {
            label,
            overrides,
            configs,
            edited,
            origin,
        };
        if overrides.is_empty() {
            return plain(
                text.to_string(),
                (0..text.lines().count()).map(Some).collect(),
            )
            .with_data_files();
        }
        let file_only = plain(
            text.to_string(),
            (0..text.lines().count()).map(Some).collect(),
        );
        let mut document: DocumentMut = text.parse().map_err(|error: toml_edit::TomlError| {
            file_only.error_at(error.span().unwrap_or(0..0), error.message())
        })?;
        // A scenario without [[policy]] runs the default policy; `--set policy.*` changes it.
        if document.get("policy").is_none()
            && overrides
                .iter()
                .any(|item| item.key.split('.').next().map(str::trim) == Some("policy"))
        {
            let mut default = Table::new();
            default.insert("name", toml_edit::value(DEFAULT_POLICY_NAME));
            let mut policies = toml_edit::ArrayOfTables::new();
            policies.push(default);
            document.insert("policy", Item::ArrayOfTables(policies));
        }
        for item in overrides {
            let path: Vec<&str> = item.key.split('.').map(str::trim).collect();
            if path.len() > MAX_KEY_DEPTH || item.key.len() > MAX_KEY_BYTES {
                return Err(ScenarioError {
                    location: Location::Override {
                        path: label.to_string(),
                        text: format!("{} {}", item.flag, truncated(&item.key)),
                    },
                    message: format!(
                        "the key is {} parts and {} bytes long; a scenario's keys are at most {MAX_KEY_DEPTH} parts and {MAX_KEY_BYTES} bytes",
                        path.len(),
                        item.key.len()
                    ),
                });
            }
            let at_override = |message| ScenarioError {
                location: Location::Override {
                    path: label.to_string(),
                    text: format!("{} {item}", item.flag),
                },
                message,
            };
            // `off` removes the control or table the key reaches ([`super::switch`]).
            if let Some(parts) = switch_at(&path, &item.value).map_err(at_override)? {
                remove(document.as_item_mut(), &path[..parts]).map_err(at_override)?;
                continue;
            }
            let value = item
                .value
                .parse::<Value>()
                .unwrap_or_else(|_| Value::from(item.value.as_str()));
            set(document.as_item_mut(), &path, &value).map_err(at_override)?;
        }
        let edited = document.to_string();
        let original: Vec<&str> = text.lines().collect();
        let new: Vec<&str> = edited.lines().collect();
        let origin = align(&original, &new);
        plain(edited, origin).with_data_files()
    }

    /// This source with the data files its distributions name written inline, on the lines
    /// that name them ([`super::data_files`]).
    fn with_data_files(self) -> Result<Self, ScenarioError> {
        let folder = Path::new(self.label).parent().unwrap_or(Path::new(""));
        match super::data_files::inline_data_files(&self.edited, folder, self.configs) {
            Ok(Some(edited)) => Ok(Source { edited, ..self }),
            Ok(None) => Ok(self),
            Err((span, message)) => Err(self.error_at(span, &message)),
        }
    }

    /// Reads and checks the edited text, then writes out the topology's defaults.
    fn read(&self) -> Result<Scenario, ScenarioError> {
        let mut scenario: Scenario = toml::from_str(&self.edited).map_err(|error| {
            self.error_at(error.span().unwrap_or(0..0), &explain(error.message()))
        })?;
        self.import_configs(&mut scenario)?;
        self.replay_rates(&mut scenario)?;
        validate(&scenario).map_err(|(span, message)| self.error_at(span, &message))?;
        resolve_defaults(&mut scenario);
        super::links::resolve_links(&mut scenario);
        resolve_incident(&mut scenario);
        Ok(scenario)
    }

    /// Replaces each policy's, tier's and fleet's `import` by the settings of the config it names
    /// (read relative to the scenario file), keeping the settings the table writes itself. An
    /// error names the config, the field in it, and the `import` it came from.
    fn import_configs(&self, scenario: &mut Scenario) -> Result<(), ScenarioError> {
        let tier_imports = scenario.service.iter().any(|service| {
            service
                .get_ref()
                .retry
                .as_ref()
                .is_some_and(|retry| retry.get_ref().import.is_some())
        });
        let fleet_imports = scenario
            .upstream
            .iter()
            .chain(scenario.service.iter().map(toml::Spanned::get_ref))
            .any(|service| {
                service
                    .fleet
                    .as_ref()
                    .is_some_and(|fleet| fleet.get_ref().import.is_some())
            });
        if !tier_imports
            && !fleet_imports
            && scenario.policy.iter().all(|policy| policy.import.is_none())
        {
            return Ok(());
        }
        let raw: toml::Table = toml::from_str(&self.edited).unwrap_or_default();
        let tables = |name: &str| raw.get(name).and_then(toml::Value::as_array);
        let keys = |table: Option<&toml::Value>| -> Vec<String> {
            table
                .and_then(toml::Value::as_table)
                .map(|table| table.keys().cloned().collect())
                .unwrap_or_default()
        };
        for (index, policy) in scenario.policy.iter_mut().enumerate() {
            let Some(import) = policy.import.take() else {
                continue;
            };
            let written = keys(tables("policy").and_then(|tables| tables.get(index)));
            let part = [
                ("import_method", policy.import_method.take()),
                ("import_route", policy.import_route.take()),
                ("import_instance", policy.import_instance.take()),
                ("import_profile", policy.import_profile.take()),
            ];
            let imported = self.import_config(&import, part)?;
            imported.apply(policy, &written);
        }
        for (index, service) in scenario.service.iter_mut().enumerate() {
            let Some(retry) = service.get_mut().retry.as_mut() else {
                continue;
            };
            let retry = retry.get_mut();
            let Some(import) = retry.import.take() else {
                continue;
            };
            let written = keys(
                tables("service")
                    .and_then(|tables| tables.get(index))
                    .and_then(|table| table.get("retry")),
            );
            let part = [
                ("import_method", retry.import_method.take()),
                ("import_route", retry.import_route.take()),
                ("import_instance", retry.import_instance.take()),
                ("import_profile", retry.import_profile.take()),
            ];
            let imported = self.import_config(&import, part)?;
            imported.apply_to_call(retry, &written);
        }
        let upstream = scenario
            .upstream
            .as_mut()
            .map(|upstream| (upstream, raw.get("upstream")));
        let services = scenario
            .service
            .iter_mut()
            .enumerate()
            .map(|(index, service)| {
                let table = tables("service").and_then(|tables| tables.get(index));
                (service.get_mut(), table)
            });
        for (service, table) in upstream.into_iter().chain(services) {
            let Some(fleet) = service.fleet.as_mut() else {
                continue;
            };
            let fleet = fleet.get_mut();
            let Some(import) = fleet.import.take() else {
                continue;
            };
            let written = keys(table.and_then(|table| table.get("fleet")));
            let path = self.config_path(&import);
            let imported = self
                .configs
                .import_fleet(&path)
                .map_err(|error| self.import_error(&import, &error))?;
            imported.apply(fleet, &written);
        }
        Ok(())
    }

    /// Replaces `clients.replay` by the `rate` and `load` of the rate file it names, or by the
    /// `recorded` arrivals of the timestamps file it names (read relative to the scenario
    /// file); an error in the file names the file and its line.
    fn replay_rates(&self, scenario: &mut Scenario) -> Result<(), ScenarioError> {
        let Some(replay) = scenario.clients.replay.take() else {
            return Ok(());
        };
        let span = replay.span();
        let replay = replay.into_inner();
        let clients = &mut scenario.clients;
        if *clients.workload.get_ref() == super::Workload::Closed {
            return Err(self.error_at(
                span,
                "`replay` gives an open workload its rate; a closed workload has `think_time`",
            ));
        }
        if clients.rate.is_some() || !clients.load.is_empty() {
            return Err(self.error_at(
                span,
                "`replay` sets the clients' `rate` and `load` from its file; remove them",
            ));
        }
        let (file, parse_rates) = match (&replay.rates, &replay.timestamps) {
            (Some(rates), None) => (rates, true),
            (None, Some(timestamps)) => (timestamps, false),
            _ => {
                return Err(self.error_at(
                    span,
                    "`replay` names exactly one file: `rates` (requests per second over time) or `timestamps` (one request time a line)",
                ));
            }
        };
        let name = file.get_ref();
        let folder = Path::new(self.label).parent().unwrap_or(Path::new(""));
        let path = folder.join(name);
        let in_file = |(line, message): (usize, String)| {
            self.error_at(
                file.span(),
                &match line {
                    0 => format!("replay {name:?}: {}: {message}", path.display()),
                    _ => format!("replay {name:?}: {}:{line}: {message}", path.display()),
                },
            )
        };
        let text = self
            .configs
            .data_file(&path)
            .map_err(|error| self.error_at(file.span(), &format!("replay {name:?}: {error}")))?;
        let in_replay =
            |message: String| self.error_at(span.clone(), &format!("replay: {message}"));
        let length = if parse_rates {
            let samples = super::arrivals::parse_rates(&text).map_err(in_file)?;
            let count = clients.count.get_ref().get();
            let load = super::arrivals::replay_load(&replay, &samples, count).map_err(in_replay)?;
            clients.rate = Some(load.rate);
            clients.load = load.points;
            load.length
        } else {
            if !clients.arrivals.get_ref().is_poisson() {
                return Err(self.error_at(
                    clients.arrivals.span(),
                    "`replay` of `timestamps` gives the arrivals themselves; remove `arrivals`",
                ));
            }
            let times = super::arrivals::parse_timestamps(&text).map_err(in_file)?;
            let (at_us, length) =
                super::arrivals::replay_times(&replay, &times).map_err(in_replay)?;
            *clients.arrivals.get_mut() = super::arrivals::ArrivalProcess::Recorded { at_us };
            length
        };
        let duration = scenario.duration.get_ref().micros();
        if duration > length {
            return Err(self.error_at(
                scenario.duration.span(),
                &format!(
                    "the replay lasts {} in the run ((to - from + warmup) / speedup{}); duration must be at most that",
                    crate::base::time::Duration(length),
                    if parse_rates {
                        ""
                    } else {
                        ", `to` by default 1us after the file's last line"
                    }
                ),
            ));
        }
        Ok(())
    }

    /// Reads the config an `import` names, relative to the scenario file, from the source of
    /// configs; `part` holds the `import_*` fields that choose within it.
    fn import_config(
        &self,
        import: &toml::Spanned<String>,
        part: [(&'static str, Option<String>); 4],
    ) -> Result<Imported, ScenarioError> {
        let part = ImportPart::from_fields(part)
            .map_err(|message| self.error_at(import.span(), &message))?;
        let path = self.config_path(import);
        let imported = self.configs.import(&path, part.as_ref());
        imported.map_err(|error| self.import_error(import, &error))
    }

    /// The path of the config an `import` names: relative to the scenario file.
    fn config_path(&self, import: &toml::Spanned<String>) -> std::path::PathBuf {
        let folder = Path::new(self.label).parent().unwrap_or(Path::new(""));
        folder.join(import.get_ref())
    }

    /// The error of the config an `import` names, at the `import`.
    fn import_error(&self, import: &toml::Spanned<String>, error: &str) -> ScenarioError {
        self.error_at(
            import.span(),
            &format!("import {:?}: {error}", import.get_ref()),
        )
    }

    /// The error for a byte range of the edited text.
    fn error_at(&self, span: Range<usize>, message: &str) -> ScenarioError {
        let start = span.start.min(self.edited.len());
        let before = &self.edited[..start];
        let line = before.matches('\n').count();
        let column = before[before.rfind('\n').map_or(0, |i| i + 1)..]
            .chars()
            .count()
            + 1;
        let location = match self.origin.get(line).copied().flatten() {
            Some(file_line) => Location::File {
                path: self.label.to_string(),
                line: file_line + 1,
                column,
            },
            None if self.origin.get(line).is_some() => Location::Override {
                path: self.label.to_string(),
                text: self.override_of_line(line),
            },
            // Past the end: the error concerns the file as a whole (a missing field).
            None => Location::File {
                path: self.label.to_string(),
                line: line + 1,
                column,
            },
        };
        ScenarioError {
            location,
            message: message.to_string(),
        }
    }

    /// The override that most likely wrote an edited line: the one whose last key the line sets.
    fn override_of_line(&self, line: usize) -> String {
        let text = self.edited.lines().nth(line).unwrap_or("").trim_start();
        let writes = |item: &&Override| {
            let last = item.key.rsplit('.').next().unwrap_or(&item.key);
            text.starts_with(last)
                || text.contains(&format!("{last} ="))
                || text.contains(&format!("[{}", item.key))
        };
        match self.overrides.iter().find(writes) {
            Some(item) => format!("{} {item}", item.flag),
            None => self
                .overrides
                .iter()
                .map(|item| format!("{} {item}", item.flag))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// Sets `value` at `path` below `item`, creating tables on the way.
fn set(item: &mut Item, path: &[&str], value: &Value) -> Result<(), String> {
    match item {
        Item::Table(table) => set_in_table(table, path, value, false),
        Item::Value(Value::InlineTable(table)) => set_in_table(table, path, value, true),
        Item::ArrayOfTables(array) => {
            let names: Vec<Option<String>> = array.iter().map(|table| name_of(table)).collect();
            let kinds = array.iter().all(|table| is_control(table));
            let (index, rest) = split_index(path, &names, kinds)?;
            match index {
                Some(index) => set_in_table(
                    array.get_mut(index).expect("index checked"),
                    rest,
                    value,
                    false,
                ),
                None => array
                    .iter_mut()
                    .try_for_each(|table| set_in_table(table, rest, value, false)),
            }
        }
        Item::Value(Value::Array(array)) => {
            let names: Vec<Option<String>> = array
                .iter()
                .map(|element| element.as_inline_table().and_then(|table| name_of(table)))
                .collect();
            let kinds = !array.is_empty()
                && array.iter().all(|element| {
                    element
                        .as_inline_table()
                        .is_some_and(|table| is_control(table))
                });
            let (index, rest) = split_index(path, &names, kinds)?;
            let apply = |element: &mut Value| match element {
                Value::InlineTable(table) => set_in_table(table, rest, value, true),
                _ => Err(format!("`{}` is not a table", path.join("."))),
            };
            match index {
                Some(index) => apply(array.get_mut(index).expect("index checked")),
                None => array.iter_mut().try_for_each(apply),
            }
        }
        _ => Err(format!(
            "cannot set `{}` inside a value that is not a table",
            path.join(".")
        )),
    }
}

fn set_in_table(
    table: &mut dyn TableLike,
    path: &[&str],
    value: &Value,
    inline: bool,
) -> Result<(), String> {
    let Some((key, rest)) = path.split_first() else {
        return Err("the key is empty".into());
    };
    if key.is_empty() {
        return Err("the key has an empty part; write for example clients.count=50000".into());
    }
    if rest.is_empty() {
        table.insert(key, Item::Value(value.clone()));
        return Ok(());
    }
    if table.get(key).is_none() {
        if let Some(index) = rest.first().filter(|next| next.parse::<usize>().is_ok()) {
            return Err(format!(
                "a table this key reaches has no `{key}`, so `{key}.{index}` selects nothing; select a table that has it, by index or by name (as in policy.1.controls.0.percent)"
            ));
        }
        if *key == "controls" {
            return Err(format!(
                "the policy (or tier retry) this key selects has no `controls`, so `controls.{}` changes nothing: a --set changes a control the file has; add the control in the file (as controls = [{{ kind = \"retry-budget\" }}])",
                rest.join(".")
            ));
        }
        let child = if inline {
            Item::Value(Value::InlineTable(InlineTable::new()))
        } else {
            Item::Table(Table::new())
        };
        table.insert(key, child);
    }
    set(table.get_mut(key).expect("just inserted"), rest, value)
}

/// The most cells of the table [`align`] builds for the lines between the common prefix and
/// suffix (16 MiB of `u32`); beyond it, lines are matched greedily instead.
const MAX_ALIGN_CELLS: usize = 4 * 1024 * 1024;

/// Maps each line of `new` to the line of `original` it is. Overrides change a few lines and
/// keep the rest in order, so the common prefix and suffix are matched directly and only the
/// lines between them are aligned: as a longest common subsequence when that is small enough,
/// else greedily (each new line to the next equal original line), so that a long file costs
/// linear memory.
fn align(original: &[&str], new: &[&str]) -> Vec<Option<usize>> {
    let prefix = original.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = original[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (middle_original, middle_new) = (
        &original[prefix..original.len() - suffix],
        &new[prefix..new.len() - suffix],
    );
    let mut origin: Vec<Option<usize>> = (0..prefix).map(Some).collect();
    let middle = if (middle_original.len() + 1) * (middle_new.len() + 1) <= MAX_ALIGN_CELLS {
        longest_common(middle_original, middle_new)
    } else {
        greedy(middle_original, middle_new)
    };
    origin.extend(
        middle
            .into_iter()
            .map(|line| line.map(|line| line + prefix)),
    );
    origin.extend((original.len() - suffix..original.len()).map(Some));
    origin
}

/// [`align`] by a longest common subsequence.
fn longest_common(original: &[&str], new: &[&str]) -> Vec<Option<usize>> {
    let (n, m) = (original.len(), new.len());
    // common[i][j]: LCS length of original[i..] and new[j..].
    let mut common = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            common[i][j] = if original[i] == new[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let mut origin = vec![None; m];
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if original[i] == new[j] {
            origin[j] = Some(i);
            i += 1;
            j += 1;
        } else if common[i + 1][j] >= common[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    origin
}

/// [`align`] greedily: each new line to the next equal original line, if any.
fn greedy(original: &[&str], new: &[&str]) -> Vec<Option<usize>> {
    let mut next = 0;
    new.iter()
        .map(|line| {
            let found = original[next..]
                .iter()
                .position(|candidate| candidate == line)?;
            next += found + 1;
            Some(next - 1)
        })
        .collect()
}

/// Adds "did you mean" to serde's unknown-field and unknown-variant messages, which list the
/// valid names: "unknown field `atempt`, expected one of `a`, `b`".
fn explain(message: &str) -> String {
    let message = message.trim_end();
    let unknown = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix));
    let Some(rest) = unknown else {
        return message.to_string();
    };
    let Some((given, expected)) = rest.split_once('`') else {
        return message.to_string();
    };
    let valid: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    match did_you_mean(given, valid.iter().copied()) {
        Some(near) => format!("{message} (did you mean `{near}`?)"),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The comment before the first setting is the header, without its `#`s, its paragraph
    /// breaks kept; comments further down are not part of it.
    #[test]
    fn the_header_is_the_leading_comment() {
        let text = "# first: line\n# continued\n#\n#   cargo run\n\nname = \"x\"\n# later\n";
        assert_eq!(
            header_comment(text),
            "first: line\ncontinued\n\n  cargo run"
        );
        assert_eq!(header_comment("name = \"x\"\n# later\n"), "");
    }

    #[test]
    fn alignment_follows_inserted_and_changed_lines() {
        let original = ["a", "b", "c", "d"];
        let new = ["a", "b", "x = 1", "c", "D"];
        assert_eq!(
            align(&original, &new),
            [Some(0), Some(1), None, Some(2), None]
        );
    }

    /// A long file with one changed line aligns through its prefix and suffix, and a middle
    /// too large for the table is matched greedily, in linear memory.
    #[test]
    fn long_files_align_in_linear_memory() {
        let original: Vec<String> = (0..50_000).map(|i| format!("line {}", i % 7)).collect();
        let mut new = original.clone();
        new[25_000] = "x = 1".into();
        let original: Vec<&str> = original.iter().map(String::as_str).collect();
        let new: Vec<&str> = new.iter().map(String::as_str).collect();
        let origin = align(&original, &new);
        assert_eq!(origin[24_999], Some(24_999));
        assert_eq!(origin[25_000], None);
        assert_eq!(origin[25_001], Some(25_001));
        assert_eq!(
            greedy(&["a", "b", "c"], &["a", "x", "c"]),
            [Some(0), None, Some(2)]
        );
    }

    #[test]
    fn unknown_names_get_a_suggestion() {
        assert_eq!(
            explain("unknown field `atempt_timeout`, expected one of `count`, `attempt_timeout`"),
            "unknown field `atempt_timeout`, expected one of `count`, `attempt_timeout` (did you mean `attempt_timeout`?)"
        );
        assert_eq!(
            explain("unknown variant `crahs`, expected one of `queue`, `crash`"),
            "unknown variant `crahs`, expected one of `queue`, `crash` (did you mean `crash`?)"
        );
        assert_eq!(explain("invalid type"), "invalid type");
    }
}
