//! Importing the retry configs teams already run: a gRPC service config ([`grpc`]), an Envoy
//! route `retry_policy` with its cluster's retry budget ([`envoy`]), an Istio VirtualService
//! route ([`istio`]), a Linkerd ServiceProfile route or retry annotations ([`linkerd`]),
//! resilience4j's retry and circuit breaker from a Spring `application.yml` ([`resilience4j`]),
//! and an AWS SDK profile of `~/.aws/config` ([`aws`]).
//!
//! An import turns a config into the settings of a `[[policy]]`: backoff, attempts, retryable
//! statuses, jitter, Retry-After handling, timeouts and controls, each mapped as the client that
//! reads the config behaves. A config field the simulator cannot model is an error that names
//! the field and says why, never dropped: a policy that silently lost its hedging or its
//! `retriable_headers` would answer a different question from the one asked. Mappings that are
//! faithful but worth knowing (a clamp, a default filled in, a mapping of gRPC codes to HTTP
//! statuses) are returned as notes, which `retrystorm import` prints as comments.
//!
//! JSON and YAML are read into one JSON value ([`document`]), so the importers see one shape
//! (the AWS INI file has its own small reader); the file is read as every input file is ([`crate::base::text_file`]), at most
//! [`MAX_CONFIG_BYTES`]. Keys echoed in errors go through [`crate::base::escape::user_text`].

pub mod aws;
pub mod document;
pub mod envoy;
pub mod grpc;
pub mod istio;
pub mod istio_fleet;
pub mod linkerd;
pub mod resilience4j;
pub mod yaml_limits;

use std::fmt;
use std::path::Path;

use serde_json::Value;

use crate::scenario::{
    ConfigSource, ImportPart, ImportedFleet, Override, Scenario, ScenarioError,
    check_resolved_fits, load_with_configs, read_data_file, read_scenario,
};

use crate::base::time::{Duration, MICROS_PER_SECOND};
pub use crate::scenario::Imported;

/// A config that cannot be imported: where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError {
    /// The config's path, as given.
    pub file: String,
    /// The field, as a path into the document (`methodConfig[0].retryPolicy.maxAttempts`), or
    /// a line and column for a syntax error.
    pub field: String,
    /// What is wrong and what would be valid.
    pub message: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts = [
            self.file.as_str(),
            self.field.as_str(),
            self.message.as_str(),
        ];
        let written: Vec<&str> = parts.into_iter().filter(|part| !part.is_empty()).collect();
        f.write_str(&written.join(": "))
    }
}

impl std::error::Error for ImportError {}

/// An error about `field`, before the file is known (the caller adds it).
pub(crate) fn field_error(field: impl Into<String>, message: impl Into<String>) -> ImportError {
    ImportError {
        file: String::new(),
        field: field.into(),
        message: message.into(),
    }
}

/// Reads, overrides and validates the scenario file at `path`, its `import`s read from the
/// files they name ([`ConfigFiles`]), and checks that its resolved form would reload
/// ([`check_resolved_fits`]): what `run`, `check` and `sweep` load.
pub fn load(path: &Path, overrides: &[Override]) -> Result<Scenario, ScenarioError> {
    let label = path.display().to_string();
    let text = read_scenario(path)?;
    let scenario = load_str(&text, &label, overrides)?;
    check_resolved_fits(&scenario, &label)?;
    Ok(scenario)
}

/// Like [`load`], with the file's text given; `label` names it in errors, and its folder is
/// where `import`s are read from. The resolved form is not checked.
pub fn load_str(
    text: &str,
    label: &str,
    overrides: &[Override],
) -> Result<Scenario, ScenarioError> {
    load_with_configs(text, label, overrides, &ConfigFiles)
}

/// The config files an `import` names, read from disk ([`read_config`]) and imported, and the
/// data files a distribution names ([`read_data_file`]).
pub struct ConfigFiles;

impl ConfigSource for ConfigFiles {
    fn import(&self, path: &Path, part: Option<&ImportPart>) -> Result<Imported, String> {
        import_file(path, part).map_err(|error| error.to_string())
    }

    fn import_fleet(&self, path: &Path) -> Result<ImportedFleet, String> {
        read_config(path)
            .and_then(|text| import_fleet_text_of(path, &text))
            .map_err(|error| error.to_string())
    }

    fn data_file(&self, path: &Path) -> Result<String, String> {
        read_data_file(path)
    }
}

/// The largest config file read, as for scenarios: a config is a few kilobytes.
pub const MAX_CONFIG_BYTES: u64 = crate::scenario::MAX_SCENARIO_BYTES;

/// Reads the config at `path` and imports it ([`import_str`] says how its kind is told);
/// `part` chooses among several methods, routes, instances or profiles.
pub fn import_file(path: &Path, part: Option<&ImportPart>) -> Result<Imported, ImportError> {
    import_text_of(path, &read_config(path)?, part)
}

/// The text of the config at `path`: a regular file of at most [`MAX_CONFIG_BYTES`], UTF-8.
pub fn read_config(path: &Path) -> Result<String, ImportError> {
    let error = |message: String| ImportError {
        file: path.display().to_string(),
        field: String::new(),
        message,
    };
    crate::base::text_file::read_text(path, MAX_CONFIG_BYTES).map_err(|why| match why {
        crate::base::text_file::TextFileError::TooLarge(_) => error(format!(
            "cannot read the config: {why}; a config is a few kilobytes"
        )),
        why => error(format!("cannot read the config: {why}")),
    })
}

/// Imports `text`, the config that was read from `path` (YAML for `.yaml`/`.yml`, else JSON
/// or an AWS INI file); `path` names it in errors and is not read.
pub fn import_text_of(
    path: &Path,
    text: &str,
    part: Option<&ImportPart>,
) -> Result<Imported, ImportError> {
    let yaml = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    );
    import_str(text, yaml, part).map_err(|error| ImportError {
        file: path.display().to_string(),
        ..error
    })
}

/// Imports `text`, the config that was read from `path`, as a fleet's: an Istio
/// DestinationRule's load balancer and outlier detection ([`istio_fleet`]); `path` names it in
/// errors and is not read.
pub fn import_fleet_text_of(path: &Path, text: &str) -> Result<ImportedFleet, ImportError> {
    let yaml = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    );
    let imported = match document::parse(text, yaml)? {
        Value::Object(object)
            if object.get("kind").and_then(Value::as_str) == Some("DestinationRule") =>
        {
            istio_fleet::import_fleet(&object)
        }
        _ => Err(field_error(
            "kind",
            "a fleet imports an Istio DestinationRule (kind: DestinationRule), whose trafficPolicy has its loadBalancer and outlierDetection",
        )),
    };
    imported.map_err(|error| ImportError {
        file: path.display().to_string(),
        ..error
    })
}

/// The fleet half of `text` (read from `path`) when it is an Istio DestinationRule that writes
/// one (`loadBalancer` or `outlierDetection`): what a service's `fleet.import` of the file
/// gives, with whether the rule has the callers' half (`connectionPool`) too; `None` for any
/// other config. `retrystorm import` shows it beside the policy.
pub fn fleet_half_of(
    path: &Path,
    text: &str,
) -> Result<Option<(ImportedFleet, bool)>, ImportError> {
    let yaml = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    );
    if !yaml && aws::is_ini(text) {
        return Ok(None);
    }
    let document = document::parse(text, yaml).map_err(|error| ImportError {
        file: path.display().to_string(),
        ..error
    })?;
    let traffic = document
        .get("spec")
        .and_then(|spec| spec.get("trafficPolicy"))
        .and_then(Value::as_object);
    let (Some("DestinationRule"), Some(traffic)) =
        (document.get("kind").and_then(Value::as_str), traffic)
    else {
        return Ok(None);
    };
    if istio::present(traffic, &istio::FLEET_HALF).is_empty() {
        return Ok(None);
    }
    let callers = traffic.contains_key("connectionPool");
    import_fleet_text_of(path, text).map(|fleet| Some((fleet, callers)))
}

/// The kinds of config recognised, for the error about a file that is none of them.
const RECOGNISED: &str = "a gRPC service config (methodConfig, retryThrottling), an Envoy retry policy (retry_policy), an Istio VirtualService (kind: VirtualService), a Linkerd ServiceProfile (kind: ServiceProfile) or a Service, HTTPRoute or GRPCRoute with retry.linkerd.io annotations, a Spring application.yml with resilience4j, or an AWS shared config file (an INI file of [default] and [profile NAME] sections); see scenarios/configs/";

/// Imports a config given as text: YAML if `yaml`, else an AWS INI file if its first line
/// that is not blank or a comment opens a `[section]`, else JSON. Its kind is told by keys no
/// other kind has: `methodConfig` or `retryThrottling` (gRPC), `retry_policy` (Envoy), `kind`
/// (Istio, Linkerd), a `resilience4j` root (Spring).
pub fn import_str(
    text: &str,
    yaml: bool,
    part: Option<&ImportPart>,
) -> Result<Imported, ImportError> {
    if !yaml && aws::is_ini(text) {
        return aws::import(
            text,
            part_for(part, "import_profile", "an AWS config file")?,
        );
    }
    let document = document::parse(text, yaml)?;
    let Value::Object(object) = &document else {
        return Err(field_error(
            "",
            format!("the config must be an object: {RECOGNISED}"),
        ));
    };
    if object.contains_key("methodConfig") || object.contains_key("retryThrottling") {
        grpc::import(
            object,
            part_for(part, "import_method", "a gRPC service config")?,
        )
    } else if object.contains_key("retry_policy") {
        part_for(part, "", "an Envoy retry policy")?;
        envoy::import(object)
    } else if object.contains_key("resilience4j") {
        resilience4j::import(
            object,
            part_for(part, "import_instance", "a resilience4j config")?,
        )
    } else if let Some(kind) = object.get("kind") {
        match kind.as_str() {
            Some("VirtualService") => istio::import_virtual_service(
                object,
                part_for(part, "import_route", "an Istio VirtualService")?,
            ),
            Some("DestinationRule") => {
                part_for(part, "", "an Istio DestinationRule")?;
                istio::import_destination_rule(object)
            }
            Some("ServiceProfile") => linkerd::import_service_profile(
                object,
                part_for(part, "import_route", "a Linkerd ServiceProfile")?,
            ),
            Some("Service" | "HTTPRoute" | "GRPCRoute") => {
                part_for(part, "", "a Kubernetes resource with Linkerd annotations")?;
                linkerd::import_annotations(object)
            }
            _ => Err(field_error(
                "kind",
                format!(
                    "{} is not a kind read here; the kinds are VirtualService, DestinationRule (Istio), ServiceProfile, Service, HTTPRoute and GRPCRoute (Linkerd)",
                    crate::base::escape::user_text(&kind.to_string())
                ),
            )),
        }
    } else {
        Err(field_error(
            "",
            format!("not a config read here; the configs read are {RECOGNISED}"),
        ))
    }
}

/// Marks `imported` as its system retries: whatever request fails as its conditions say,
/// whatever the method (`unsafe_retries = true`), the article's client rule (no retry of a POST
/// without idempotency key or status endpoint) not applied; `rule` says why, citing the
/// system, in a note that also says how to get the article's rule back.
pub(crate) fn retries_any_method(imported: &mut Imported, rule: &str) {
    imported.unsafe_retries = Some(true);
    imported.notes.push(format!(
        "{rule}: unsafe_retries = true, so a POST without idempotency key or status endpoint is retried too, and a write whose answer was lost is written again; write unsafe_retries = false beside the import for the article's client rule"
    ));
}

/// The name `part` gives, if it is the `field` this kind of config reads (`""`: it reads
/// none); `what` names the kind in the error.
fn part_for<'p>(
    part: Option<&'p ImportPart>,
    field: &str,
    what: &str,
) -> Result<Option<&'p str>, ImportError> {
    match part {
        None => Ok(None),
        Some(part) if part.field == field => Ok(Some(&part.name)),
        Some(part) => Err(field_error(
            "",
            if field.is_empty() {
                format!("{} chooses a part of a config; {what} has one", part.field)
            } else {
                format!(
                    "{} does not choose within {what}; it is chosen with {field}",
                    part.field
                )
            },
        )),
    }
}

/// A duration as Go (Istio, Linkerd) writes it: a decimal number and a unit, `h`, `m`, `s`,
/// `ms`, `us` or `µs` (`"250ms"`, `"1.5s"`, `"0s"`), to the microsecond; the parts of a
/// compound one (`"1m30s"`) add up.
pub(crate) fn go_duration(value: &Value, field: &str) -> Result<Duration, ImportError> {
    let bad = || {
        field_error(
            field,
            format!(
                "{value} is not a duration; write a number and a unit (h, m, s, ms, us), such as \"250ms\" or \"2s\""
            ),
        )
    };
    let text = value.as_str().ok_or_else(bad)?;
    let mut rest = text;
    let mut total: u128 = 0;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let (number, after) = rest.split_at(number_len);
        if number.is_empty() || number.matches('.').count() > 1 {
            return Err(bad());
        }
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let micros_per_unit: u128 = match unit {
            "h" => 3_600_000_000,
            "m" => 60_000_000,
            "s" => 1_000_000,
            "ms" => 1_000,
            "us" | "µs" => 1,
            _ => return Err(bad()),
        };
        total += decimal_micros(number, micros_per_unit).ok_or_else(|| {
            field_error(
                field,
                format!("{text} is not a whole number of microseconds, the simulator's resolution"),
            )
        })?;
        rest = after;
    }
    u64::try_from(total)
        .ok()
        .filter(|&micros| micros <= 1_000_000 * MICROS_PER_SECOND)
        .map(Duration)
        .ok_or_else(|| field_error(field, format!("{text} is longer than 10^6 s")))
}

/// `number` (decimal digits with at most one point) times `scale` microseconds, if whole.
fn decimal_micros(number: &str, scale: u128) -> Option<u128> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty())
        || fraction.contains('.')
        || whole.len() > 12
        || fraction.len() > 12
    {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let digits: u128 = if fraction.is_empty() {
        0
    } else {
        fraction.parse().ok()?
    };
    let denominator = 10u128.pow(fraction.len() as u32);
    let scaled = digits * scale;
    scaled
        .is_multiple_of(denominator)
        .then(|| whole * scale + scaled / denominator)
}

/// A duration as gRPC's JSON and Envoy's YAML write it: decimal seconds with an `s`
/// (`"0.1s"`, `"2s"`), to the microsecond.
pub(crate) fn seconds(value: &Value, field: &str) -> Result<Duration, ImportError> {
    let bad = || {
        field_error(
            field,
            format!(
                "{value} is not a duration; write decimal seconds with an `s`, such as \"0.1s\""
            ),
        )
    };
    let text = value.as_str().ok_or_else(bad)?;
    let number = text.strip_suffix('s').ok_or_else(bad)?;
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
        || fraction.len() > 9
    {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let nanos: u64 = format!("{fraction:0<9}").parse().map_err(|_| bad())?;
    if !nanos.is_multiple_of(1000) {
        return Err(field_error(
            field,
            format!("{text} is finer than a microsecond, the simulator's resolution"),
        ));
    }
    whole
        .checked_mul(MICROS_PER_SECOND)
        .and_then(|micros| micros.checked_add(nanos / 1000))
        .filter(|&micros| micros <= 1_000_000 * MICROS_PER_SECOND)
        .map(Duration)
        .ok_or_else(|| field_error(field, format!("{text} is longer than 10^6 s")))
}

/// An integer from 0 to `max`.
pub(crate) fn integer(value: &Value, field: &str, max: u64) -> Result<u64, ImportError> {
    value
        .as_u64()
        .filter(|&n| n <= max)
        .ok_or_else(|| field_error(field, format!("must be an integer from 0 to {max}")))
}

/// A positive duration.
pub(crate) fn positive_seconds(value: &Value, field: &str) -> Result<Duration, ImportError> {
    let duration = seconds(value, field)?;
    if duration.micros() == 0 {
        return Err(field_error(field, "must be above zero"));
    }
    Ok(duration)
}

/// Fails on the first key of `object` not in `known`, naming it with `prefix`; `why` explains
/// the keys that are known to the config format but not modelled.
pub(crate) fn refuse_unknown(
    object: &serde_json::Map<String, Value>,
    prefix: &str,
    known: &[&str],
    unmodelled: &[(&str, &str)],
) -> Result<(), ImportError> {
    for key in object.keys() {
        let key_shown = crate::base::escape::user_text(key);
        let field = if prefix.is_empty() {
            key_shown.into_owned()
        } else {
            format!("{prefix}.{key_shown}")
        };
        if let Some((_, why)) = unmodelled.iter().find(|(name, _)| name == key) {
            return Err(field_error(
                field,
                format!(
                    "not simulated: {why}; remove it from the imported copy to simulate the rest"
                ),
            ));
        }
        if !known.contains(&key.as_str()) {
            return Err(unknown_field(field, key, known));
        }
    }
    Ok(())
}

/// The error for `key`, written at `field`, which is none of the `known` fields: the nearest
/// known one suggested, and all of them listed.
pub(crate) fn unknown_field(field: String, key: &str, known: &[&str]) -> ImportError {
    let suggestion = crate::base::suggest::did_you_mean(key, known.iter().copied())
        .map(|near| format!(" (did you mean `{near}`?)"))
        .unwrap_or_default();
    field_error(
        field,
        format!(
            "unknown field{suggestion}; the fields read here are {}",
            known.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn go(text: &str) -> Result<u64, String> {
        go_duration(&Value::String(text.into()), "f")
            .map(|d| d.micros())
            .map_err(|e| e.to_string())
    }

    /// Go's `time.ParseDuration` units, compound durations adding up, and the refusals.
    #[test]
    fn go_durations_read_as_go_writes_them() {
        assert_eq!(go("250ms"), Ok(250_000));
        assert_eq!(go("1.5s"), Ok(1_500_000));
        assert_eq!(go("1m30s"), Ok(90_000_000));
        assert_eq!(go("2h"), Ok(7_200_000_000));
        assert_eq!(go("0s"), Ok(0));
        assert_eq!(go("10us"), Ok(10));
        assert!(go("1.5us").unwrap_err().contains("microseconds"));
        for bad in ["", "10", "ms", "1.2.3s", "5 s", "1d"] {
            assert!(go(bad).unwrap_err().contains("not a duration"), "{bad}");
        }
    }
}
