//! Importing the retry configs teams already run: a gRPC service config ([`grpc`]) and an
//! Envoy route `retry_policy` with its cluster's retry budget ([`envoy`]).
//!
//! An import turns a config into the settings of a `[[policy]]`: backoff, attempts, retryable
//! statuses, jitter, Retry-After handling, timeouts and controls, each mapped as the client that
//! reads the config behaves. A config field the simulator cannot model is an error that names
//! the field and says why, never dropped: a policy that silently lost its hedging or its
//! `retriable_headers` would answer a different question from the one asked. Mappings that are
//! faithful but worth knowing (a clamp, a default filled in, a mapping of gRPC codes to HTTP
//! statuses) are returned as notes, which `retrystorm import` prints as comments.
//!
//! Both JSON and YAML are read into one JSON value ([`document`]), so the two importers see one
//! shape; the file is read as every input file is ([`crate::base::text_file`]), at most
//! [`MAX_CONFIG_BYTES`]. Keys echoed in errors go through [`crate::base::escape::user_text`].

pub mod document;
pub mod envoy;
pub mod grpc;
pub mod yaml_limits;

use std::fmt;
use std::path::Path;

use serde_json::Value;

use crate::scenario::{
    ConfigSource, Override, Scenario, ScenarioError, check_resolved_fits, load_with_configs,
    read_scenario,
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

/// The config files an `import` names, read from disk ([`read_config`]) and imported.
pub struct ConfigFiles;

impl ConfigSource for ConfigFiles {
    fn import(&self, path: &Path, method: Option<&str>) -> Result<Imported, String> {
        import_file(path, method).map_err(|error| error.to_string())
    }

    fn data(&self, path: &Path) -> Result<String, String> {
        crate::base::text_file::read_text(path, MAX_CONFIG_BYTES)
            .map_err(|error| format!("cannot read {}: {error}", path.display()))
    }
}

/// The largest config file read, as for scenarios: a config is a few kilobytes.
pub const MAX_CONFIG_BYTES: u64 = crate::scenario::MAX_SCENARIO_BYTES;

/// Reads the config at `path` (JSON, or YAML for `.yaml`/`.yml`) and imports it: a gRPC
/// service config if it has `methodConfig` or `retryThrottling`, an Envoy retry policy if it
/// has `retry_policy`. `method` chooses among several `methodConfig` entries.
pub fn import_file(path: &Path, method: Option<&str>) -> Result<Imported, ImportError> {
    import_text_of(path, &read_config(path)?, method)
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

/// Imports `text`, the config that was read from `path` (JSON, or YAML for `.yaml`/`.yml`);
/// `path` names it in errors and is not read.
pub fn import_text_of(
    path: &Path,
    text: &str,
    method: Option<&str>,
) -> Result<Imported, ImportError> {
    let yaml = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    );
    import_str(text, yaml, method).map_err(|error| ImportError {
        file: path.display().to_string(),
        ..error
    })
}

/// Imports a config given as text; `yaml` says how to read it.
pub fn import_str(text: &str, yaml: bool, method: Option<&str>) -> Result<Imported, ImportError> {
    let document = document::parse(text, yaml)?;
    let Value::Object(object) = &document else {
        return Err(field_error("", "the config must be an object"));
    };
    if object.contains_key("methodConfig") || object.contains_key("retryThrottling") {
        grpc::import(object, method)
    } else if object.contains_key("retry_policy") {
        if method.is_some() {
            return Err(field_error(
                "",
                "import_method chooses a gRPC methodConfig; an Envoy retry policy has none",
            ));
        }
        envoy::import(object)
    } else {
        Err(field_error(
            "",
            "neither a gRPC service config (methodConfig, retryThrottling) nor an Envoy retry policy (retry_policy); see scenarios/configs/ for both",
        ))
    }
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
            let suggestion = crate::base::suggest::did_you_mean(key, known.iter().copied())
                .map(|near| format!(" (did you mean `{near}`?)"))
                .unwrap_or_default();
            return Err(field_error(
                field,
                format!(
                    "unknown field{suggestion}; the fields read here are {}",
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}
