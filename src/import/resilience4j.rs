//! resilience4j's `Retry` and `CircuitBreaker` (and `TimeLimiter`) of one instance, from a
//! Spring Boot `application.yml` (`resilience4j.retry`, `resilience4j.circuitbreaker`,
//! `resilience4j.timelimiter`; `resilience4j-spring-boot`'s configuration properties).
//!
//! An instance's settings are its own over those of its `baseConfig` (a `configs` entry), or of
//! `configs.default` when it names none; Spring's relaxed names are read (`maxAttempts`,
//! `max-attempts`). Spring's aspects nest Retry outside CircuitBreaker outside TimeLimiter, so
//! the breaker and the time limit apply to every attempt:
//!
//! | config | policy |
//! |---|---|
//! | `retry.maxAttempts` (3, the first call included) | `max_attempts = maxAttempts - 1` |
//! | `waitDuration` (500 ms) | `base`; constant: `multiplier = 1`, `cap = base` |
//! | `enableExponentialBackoff`, `exponentialBackoffMultiplier` (1.5), `exponentialMaxWaitDuration` (none) | `multiplier`, `cap` (without a maximum, the longest wait `maxAttempts` reaches) |
//! | `enableRandomizedWait`, `randomizedWaitFactor` 0.5 (its default; another factor is refused) | `jitter = "resilience4j"`, `U(0.5 d, 1.5 d)`; otherwise `"none"` |
//! | (every exception retried: a Spring HTTP client throws for every 4xx and 5xx and every I/O error) | `retryable_statuses` 400-599, every failure without a response |
//! | `circuitbreaker.*` (`failureRateThreshold` 50, `slowCallRateThreshold` 100, `slowCallDurationThreshold` 60 s, `slidingWindowType` COUNT_BASED, `slidingWindowSize` 100, `minimumNumberOfCalls` 100, `waitDurationInOpenState` 60 s, `permittedNumberOfCallsInHalfOpenState` 10) | a `circuit-breaker` control per process: `failure_rate`, `slow_call_rate`, `slow_call_duration`, `window_calls` or `window`, `minimum_calls`, `wait_open`, `half_open_calls` |
//! | `timelimiter.timeoutDuration` (1 s) | `attempt_timeout`; without a time limiter `"none"` |
//!
//! A `Retry` decorates a call, whatever it does: it knows no HTTP method, so the import sets
//! `unsafe_retries = true` (a POST without key is retried too).
//!
//! `retryExceptions`, `ignoreExceptions` and predicates name Java classes, whose meaning
//! depends on the HTTP client; they are refused by name, as are a bulkhead or rate limiter of
//! the instance. With several instances, `import_instance` (`--instance`) names the one read.

use serde_json::{Map, Value};

use super::{ImportError, Imported, field_error, go_duration, unknown_field};
use crate::base::time::{Duration, MICROS_PER_SECOND};
use crate::base::values::{Bounded, Percent};
use crate::control::ControlKind;
use crate::retry::backoff::Jitter;
use crate::retry::retry_after::RetryAfterMode;
use crate::scenario::{AttemptTimeout, ControlSpec, TransportError};

/// `RetryConfig` defaults.
pub const DEFAULT_MAX_ATTEMPTS: u64 = 3;
pub const DEFAULT_WAIT: Duration = Duration::from_ms(500);
pub const DEFAULT_MULTIPLIER: f64 = 1.5;
pub const DEFAULT_RANDOMIZED_WAIT_FACTOR: f64 = 0.5;
/// `TimeLimiterConfig`'s default `timeoutDuration`.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_ms(1000);

/// The retry settings read, by their canonical names.
const RETRY_KEYS: [&str; 13] = [
    "baseConfig",
    "maxAttempts",
    "waitDuration",
    "enableExponentialBackoff",
    "exponentialBackoffMultiplier",
    "exponentialMaxWaitDuration",
    "enableRandomizedWait",
    "randomizedWaitFactor",
    "failAfterMaxAttempts",
    "writableStackTraceEnabled",
    "eventConsumerBufferSize",
    "registerHealthIndicator",
    "metricsEnabled",
];
/// Settings that name Java classes or functions.
const CLASS_KEYS: [(&str, &str); 8] = [
    (
        "retryExceptions",
        "exception classes are not simulated (which failures a class covers depends on the HTTP client): remove it and write retryable_statuses and retryable_transport_errors in the policy",
    ),
    (
        "ignoreExceptions",
        "exception classes are not simulated (which failures a class covers depends on the HTTP client): remove it and write retryable_statuses and retryable_transport_errors in the policy",
    ),
    (
        "recordExceptions",
        "exception classes are not simulated: every failed attempt is a failure",
    ),
    (
        "retryExceptionPredicate",
        "Java predicates are not simulated",
    ),
    ("resultPredicate", "Java predicates are not simulated"),
    (
        "recordFailurePredicate",
        "Java predicates are not simulated",
    ),
    ("intervalFunction", "Java functions are not simulated"),
    ("intervalBiFunction", "Java functions are not simulated"),
];
/// The circuit breaker settings read.
const BREAKER_KEYS: [&str; 14] = [
    "baseConfig",
    "failureRateThreshold",
    "slowCallRateThreshold",
    "slowCallDurationThreshold",
    "slidingWindowType",
    "slidingWindowSize",
    "minimumNumberOfCalls",
    "waitDurationInOpenState",
    "permittedNumberOfCallsInHalfOpenState",
    "automaticTransitionFromOpenToHalfOpenEnabled",
    "maxWaitDurationInHalfOpenState",
    "writableStackTraceEnabled",
    "eventConsumerBufferSize",
    "registerHealthIndicator",
];
/// The time limiter settings read.
const LIMITER_KEYS: [&str; 5] = [
    "baseConfig",
    "timeoutDuration",
    "cancelRunningFuture",
    "eventConsumerBufferSize",
    "registerHealthIndicator",
];

/// A module's settings of the instance, merged over its base config, and where they were
/// read (for errors); `None` if the module has no such instance.
type Settings = Option<(Map<String, Value>, String)>;

/// Imports the instance named `instance` (or the only one) of `config`'s `resilience4j`.
pub fn import(
    config: &Map<String, Value>,
    instance: Option<&str>,
) -> Result<Imported, ImportError> {
    let Some(Value::Object(root)) = config.get("resilience4j") else {
        return Err(field_error("resilience4j", "must be a mapping"));
    };
    let modules = relaxed(
        root,
        "resilience4j",
        &[
            "retry",
            "circuitbreaker",
            "timelimiter",
            "bulkhead",
            "thread-pool-bulkhead",
            "ratelimiter",
        ],
    )?;
    for (module, settings) in &modules {
        let prefix = format!("resilience4j.{module}");
        let Value::Object(settings) = settings else {
            return Err(field_error(prefix, "must be a mapping"));
        };
        if let Some(key) = settings
            .keys()
            .find(|key| key.to_ascii_lowercase().ends_with("aspectorder"))
        {
            return Err(field_error(
                format!("{prefix}.{}", crate::base::escape::user_text(key)),
                "not simulated: the aspects nest in Spring's default order here (Retry outside CircuitBreaker outside TimeLimiter); remove it from the imported copy to simulate the rest",
            ));
        }
        super::refuse_unknown(settings, &prefix, &["configs", "instances"], &[])?;
    }
    let instances = |module: &str| -> Result<Option<&Map<String, Value>>, ImportError> {
        match modules.get(module).and_then(|m| m.get("instances")) {
            None => Ok(None),
            Some(Value::Object(instances)) => Ok(Some(instances)),
            Some(_) => Err(field_error(
                format!("resilience4j.{module}.instances"),
                "must be a mapping",
            )),
        }
    };
    let mut names: Vec<String> = Vec::new();
    for module in ["retry", "circuitbreaker"] {
        for name in instances(module)?.into_iter().flat_map(|i| i.keys()) {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    let shown = || {
        names
            .iter()
            .map(|name| format!("{:?}", crate::base::escape::user_text(name)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let name = match instance {
        Some(wanted) => {
            if !names.iter().any(|name| name == wanted) {
                return Err(field_error(
                    "resilience4j",
                    format!(
                        "no retry or circuitbreaker instance named {:?}; the instances are {}",
                        crate::base::escape::user_text(wanted),
                        if names.is_empty() {
                            "(none)".to_string()
                        } else {
                            shown()
                        }
                    ),
                ));
            }
            wanted.to_string()
        }
        None => match names.as_slice() {
            [only] => only.clone(),
            [] => {
                return Err(field_error(
                    "resilience4j",
                    "no retry or circuitbreaker instances: write resilience4j.retry.instances.NAME",
                ));
            }
            _ => {
                return Err(field_error(
                    "resilience4j",
                    format!(
                        "several instances ({}); choose one with import_instance (or --instance)",
                        shown()
                    ),
                ));
            }
        },
    };
    for module in ["bulkhead", "thread-pool-bulkhead", "ratelimiter"] {
        if instances(module)?.is_some_and(|i| i.contains_key(&name)) {
            return Err(field_error(
                format!(
                    "resilience4j.{module}.instances.{}",
                    crate::base::escape::user_text(&name)
                ),
                format!(
                    "not simulated: a {module} limits the calls themselves; remove it from the imported copy to simulate the rest"
                ),
            ));
        }
    }
    let shown_name = crate::base::escape::user_text(&name).into_owned();
    let mut imported = Imported {
        source: format!("resilience4j instance {shown_name} (Spring application.yml)"),
        retry_after: Some(RetryAfterMode::Ignore),
        ..Imported::default()
    };
    let settings = |module: &str, known: &[&str]| -> Result<Settings, ImportError> {
        let Some(own) = instances(module)?.and_then(|i| i.get(&name)) else {
            return Ok(None);
        };
        let prefix = format!("resilience4j.{module}.instances.{shown_name}");
        let Value::Object(own) = own else {
            return Err(field_error(prefix, "must be a mapping"));
        };
        let own = relaxed(own, &prefix, known)?;
        let base_name = match own.get("baseConfig") {
            None => None,
            Some(Value::String(base)) => Some(base.clone()),
            Some(_) => {
                return Err(field_error(
                    format!("{prefix}.baseConfig"),
                    "must be the name of a configs entry",
                ));
            }
        };
        let configs = modules.get(module).and_then(|m| m.get("configs"));
        let base = match (
            &base_name,
            configs.and_then(|c| c.get(base_name.as_deref().unwrap_or("default"))),
        ) {
            (_, Some(Value::Object(base))) => {
                let from = format!(
                    "resilience4j.{module}.configs.{}",
                    crate::base::escape::user_text(base_name.as_deref().unwrap_or("default"))
                );
                Some((relaxed(base, &from, known)?, from))
            }
            (Some(base), _) => {
                return Err(field_error(
                    format!("{prefix}.baseConfig"),
                    format!(
                        "no resilience4j.{module}.configs.{}",
                        crate::base::escape::user_text(base)
                    ),
                ));
            }
            (None, _) => None,
        };
        let mut merged = Map::new();
        let mut from = prefix.clone();
        if let Some((base, base_prefix)) = base {
            merged.extend(base);
            from = format!("{prefix} over {base_prefix}");
        }
        merged.extend(own);
        merged.remove("baseConfig");
        Ok(Some((merged, from)))
    };
    match settings("retry", &RETRY_KEYS)? {
        Some((retry, from)) => read_retry(&retry, &from, &mut imported)?,
        None => {
            imported.max_attempts = Some(0);
            imported.notes.push(format!(
                "no resilience4j.retry.instances.{shown_name}: no retries"
            ));
        }
    }
    if let Some((breaker, from)) = settings("circuitbreaker", &BREAKER_KEYS)? {
        let breaker = read_breaker(&breaker, &from, &mut imported)?;
        imported.controls.push(breaker);
    }
    match settings("timelimiter", &LIMITER_KEYS)? {
        Some((limiter, from)) => {
            let limit = match limiter.get("timeoutDuration") {
                None => DEFAULT_TIME_LIMIT,
                Some(value) => positive(value, &format!("{from}: timeoutDuration"))?,
            };
            imported.attempt_timeout = Some(AttemptTimeout::After(limit));
            imported.notes.push(format!(
                "timelimiter timeoutDuration {limit}: inside the retry, each attempt's timeout"
            ));
        }
        None => {
            imported.attempt_timeout = Some(AttemptTimeout::None);
            imported.notes.push(format!(
                "no resilience4j.timelimiter.instances.{shown_name}: attempt_timeout = \"none\", an attempt may take all the time left before the scenario's deadline"
            ));
        }
    }
    Ok(imported)
}

/// `object` with Spring's relaxed names made canonical (`max-attempts` and `max_attempts` are
/// `maxAttempts`): a key that is none of `known`, or written twice, is an error.
fn relaxed(
    object: &Map<String, Value>,
    prefix: &str,
    known: &[&str],
) -> Result<Map<String, Value>, ImportError> {
    let canonical = |key: &str| -> String {
        key.chars()
            .filter(|c| *c != '-' && *c != '_')
            .flat_map(char::to_lowercase)
            .collect()
    };
    let mut out = Map::new();
    for (key, value) in object {
        let field = format!("{prefix}.{}", crate::base::escape::user_text(key));
        if let Some((_, why)) = CLASS_KEYS
            .iter()
            .find(|(name, _)| canonical(name) == canonical(key))
        {
            return Err(field_error(field, format!("not simulated: {why}")));
        }
        let Some(name) = known.iter().find(|name| canonical(name) == canonical(key)) else {
            return Err(unknown_field(field, key, known));
        };
        if out.insert((*name).to_string(), value.clone()).is_some() {
            return Err(field_error(
                field,
                format!("{name} is written twice (Spring reads either spelling)"),
            ));
        }
    }
    Ok(out)
}

fn read_retry(
    retry: &Map<String, Value>,
    from: &str,
    imported: &mut Imported,
) -> Result<(), ImportError> {
    let field = |name: &str| format!("{from}: {name}");
    let attempts = match retry.get("maxAttempts") {
        None => DEFAULT_MAX_ATTEMPTS,
        Some(value) => integer(value, &field("maxAttempts"), 1, 101)?,
    };
    let wait = match retry.get("waitDuration") {
        None => DEFAULT_WAIT,
        Some(value) => spring_duration(value, &field("waitDuration"))?,
    };
    let exponential = boolean(
        retry,
        "enableExponentialBackoff",
        &field("enableExponentialBackoff"),
    )?;
    let randomized = boolean(
        retry,
        "enableRandomizedWait",
        &field("enableRandomizedWait"),
    )?;
    for (name, needs) in [
        ("exponentialBackoffMultiplier", exponential),
        ("exponentialMaxWaitDuration", exponential),
        ("randomizedWaitFactor", randomized),
    ] {
        if retry.contains_key(name) && !needs {
            imported.notes.push(format!(
                "{name} is read only when {} is true: ignored, as resilience4j does",
                if name.starts_with("random") {
                    "enableRandomizedWait"
                } else {
                    "enableExponentialBackoff"
                }
            ));
        }
    }
    imported.max_attempts = Some(attempts - 1);
    imported.base = Some(wait);
    if exponential {
        let multiplier = match retry.get("exponentialBackoffMultiplier") {
            None => DEFAULT_MULTIPLIER,
            Some(value) => value
                .as_f64()
                .filter(|m| *m >= 1.0 && *m <= 1000.0)
                .ok_or_else(|| {
                    field_error(
                        field("exponentialBackoffMultiplier"),
                        "must be a number from 1 to 1000",
                    )
                })?,
        };
        let cap = match retry.get("exponentialMaxWaitDuration") {
            Some(value) => spring_duration(value, &field("exponentialMaxWaitDuration"))?,
            None => {
                // Without a maximum the waits grow to the last retry's.
                let longest =
                    wait.micros() as f64 * multiplier.powi(attempts.saturating_sub(2) as i32);
                let longest = Duration(longest.min(1e6 * MICROS_PER_SECOND as f64).round() as u64);
                imported.notes.push(format!(
                    "no exponentialMaxWaitDuration: the waits are not capped; cap = {longest}, the longest wait {} attempts reach",
                    attempts
                ));
                longest
            }
        };
        if cap < wait {
            return Err(field_error(
                field("exponentialMaxWaitDuration"),
                format!("{cap} is below waitDuration {wait}"),
            ));
        }
        imported.multiplier = Some(multiplier);
        imported.cap = Some(cap);
        imported.notes.push(format!(
            "exponential backoff: waitDuration {wait} times {multiplier} per retry, at most {cap}"
        ));
    } else {
        imported.multiplier = Some(1.0);
        imported.cap = Some(wait);
        imported.notes.push(format!(
            "waitDuration {wait} before every retry (constant: multiplier 1, cap = base)"
        ));
    }
    if randomized {
        if let Some(value) = retry.get("randomizedWaitFactor") {
            let factor = value
                .as_f64()
                .ok_or_else(|| field_error(field("randomizedWaitFactor"), "must be a number"))?;
            if factor != DEFAULT_RANDOMIZED_WAIT_FACTOR {
                return Err(field_error(
                    field("randomizedWaitFactor"),
                    format!(
                        "{factor} is not simulated: only resilience4j's default, 0.5 (jitter = \"resilience4j\", U(0.5 d, 1.5 d)); remove it or write 0.5"
                    ),
                ));
            }
        }
        imported.jitter = Some(Jitter::Resilience4j);
        imported.notes.push("enableRandomizedWait, factor 0.5: each wait uniform over [0.5 d, 1.5 d] (jitter = \"resilience4j\"; resilience4j adds up to 1 ms more)".into());
    } else {
        imported.jitter = Some(Jitter::None);
    }
    imported.retryable_statuses = Some((400..=599).collect());
    imported.retryable_transport_errors = Some(TransportError::ALL.to_vec());
    imported.notes.push(
        "the wait is resilience4j's own: Retry-After is not read (retry_after = \"ignore\")".into(),
    );
    imported.notes.push("no retryExceptions: resilience4j retries every exception, and a Spring HTTP client throws one for every 4xx and 5xx and every I/O error: statuses 400-599, timeouts, resets, refused connections".into());
    super::retries_any_method(
        imported,
        "resilience4j retries whatever call it decorates, on the exceptions configured; it knows no HTTP method",
    );
    Ok(())
}

fn read_breaker(
    breaker: &Map<String, Value>,
    from: &str,
    imported: &mut Imported,
) -> Result<ControlSpec, ImportError> {
    let field = |name: &str| format!("{from}: {name}");
    let rate = |name: &str, default: f64| -> Result<f64, ImportError> {
        match breaker.get(name) {
            None => Ok(default),
            Some(value) => value
                .as_f64()
                .filter(|rate| *rate > 0.0 && *rate <= 100.0)
                .ok_or_else(|| {
                    field_error(field(name), "must be a percentage above 0 and at most 100")
                }),
        }
    };
    let duration = |name: &str, default: Duration| -> Result<Duration, ImportError> {
        breaker
            .get(name)
            .map_or(Ok(default), |value| positive(value, &field(name)))
    };
    let count = |name: &str, default: u64| -> Result<u64, ImportError> {
        breaker.get(name).map_or(Ok(default), |value| {
            integer(value, &field(name), 1, 100_000)
        })
    };
    let failure_rate = rate("failureRateThreshold", 50.0)?;
    let slow_call_rate = rate("slowCallRateThreshold", 100.0)?;
    let slow_call_duration = duration(
        "slowCallDurationThreshold",
        Duration(60 * MICROS_PER_SECOND),
    )?;
    let size = count("slidingWindowSize", 100)?;
    let minimum_calls = count("minimumNumberOfCalls", 100)?;
    let wait_open = duration("waitDurationInOpenState", Duration(60 * MICROS_PER_SECOND))?;
    let half_open_calls = count("permittedNumberOfCallsInHalfOpenState", 10)?;
    let time_based = match breaker.get("slidingWindowType") {
        None => false,
        Some(Value::String(kind)) if kind.eq_ignore_ascii_case("COUNT_BASED") => false,
        Some(Value::String(kind)) if kind.eq_ignore_ascii_case("TIME_BASED") => true,
        Some(_) => {
            return Err(field_error(
                field("slidingWindowType"),
                "must be COUNT_BASED or TIME_BASED",
            ));
        }
    };
    if time_based && size > 3600 {
        return Err(field_error(
            field("slidingWindowSize"),
            "a TIME_BASED window is at most 3600 seconds here",
        ));
    }
    match breaker.get("maxWaitDurationInHalfOpenState") {
        None => {}
        Some(value)
            if spring_duration(value, &field("maxWaitDurationInHalfOpenState"))?.micros() == 0 => {}
        Some(_) => {
            return Err(field_error(
                field("maxWaitDurationInHalfOpenState"),
                "not simulated: the simulated breaker stays half-open until its trial calls end (resilience4j's default, 0); remove it or write 0",
            ));
        }
    }
    if boolean(
        breaker,
        "automaticTransitionFromOpenToHalfOpenEnabled",
        &field("automaticTransitionFromOpenToHalfOpenEnabled"),
    )? {
        imported.notes.push("automaticTransitionFromOpenToHalfOpenEnabled: half-open by a timer, where the simulated breaker turns half-open at the first attempt after waitDurationInOpenState; either way that attempt is the first trial call".into());
    }
    imported.notes.push(format!(
        "circuit breaker per process: opens at {failure_rate}% failures or {slow_call_rate}% calls slower than {slow_call_duration}, over {}, with at least {minimum_calls} calls; open {wait_open}, then {half_open_calls} trial calls. An attempt it refuses ends the call (circuit-open); resilience4j's Retry would retry the CallNotPermittedException after its wait unless ignoreExceptions lists it",
        if time_based { format!("the last {size} s") } else { format!("the last {size} calls") }
    ));
    Ok(ControlSpec {
        failure_rate: Some(Percent(failure_rate)),
        slow_call_rate: Some(Percent(slow_call_rate)),
        slow_call_duration: Some(slow_call_duration),
        window_calls: (!time_based).then_some(Bounded(size)),
        window: time_based.then(|| toml::Spanned::new(0..0, Duration(size * MICROS_PER_SECOND))),
        minimum_calls: Some(Bounded(minimum_calls)),
        wait_open: Some(wait_open),
        half_open_calls: Some(Bounded(half_open_calls)),
        ..ControlSpec::empty(ControlKind::CircuitBreaker)
    })
}

/// A boolean setting, false if unset.
fn boolean(object: &Map<String, Value>, name: &str, field: &str) -> Result<bool, ImportError> {
    match object.get(name) {
        None => Ok(false),
        Some(Value::Bool(value)) => Ok(*value),
        Some(Value::String(text)) if text == "true" || text == "false" => Ok(text == "true"),
        Some(_) => Err(field_error(field, "must be true or false")),
    }
}

/// An integer from `low` to `high`, also written as a string.
fn integer(value: &Value, field: &str, low: u64, high: u64) -> Result<u64, ImportError> {
    value
        .as_u64()
        .or_else(|| value.as_str().and_then(|text| text.trim().parse().ok()))
        .filter(|n| (low..=high).contains(n))
        .ok_or_else(|| field_error(field, format!("must be an integer from {low} to {high}")))
}

/// A positive Spring duration.
fn positive(value: &Value, field: &str) -> Result<Duration, ImportError> {
    let duration = spring_duration(value, field)?;
    if duration.micros() == 0 {
        return Err(field_error(field, "must be above zero"));
    }
    Ok(duration)
}

/// A duration as Spring Boot binds it: a number of milliseconds (`500`), a number and a unit
/// (`"500ms"`, `"10s"`, `"1m"`, `"2h"`, `"1d"`), or ISO-8601 (`"PT0.5S"`, `"PT1M30S"`).
pub fn spring_duration(value: &Value, field: &str) -> Result<Duration, ImportError> {
    let bad = || {
        field_error(
            field,
            format!(
                "{value} is not a duration; write milliseconds (500), a number and a unit (\"500ms\", \"10s\", \"1m\") or ISO-8601 (\"PT0.5S\")"
            ),
        )
    };
    if let Some(millis) = value.as_u64() {
        return Ok(Duration(
            millis
                .checked_mul(1000)
                .filter(|m| *m <= 1_000_000 * MICROS_PER_SECOND)
                .ok_or_else(bad)?,
        ));
    }
    let text = value.as_str().ok_or_else(bad)?.trim();
    if let Some(iso) = text.strip_prefix("PT").or_else(|| text.strip_prefix("pt")) {
        // PTnHnMn.nS, as Go units, lower case.
        let go = iso.to_ascii_lowercase();
        if go.is_empty() || !go.ends_with(['h', 'm', 's']) {
            return Err(bad());
        }
        return go_duration(&Value::String(go), field).map_err(|_| bad());
    }
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return spring_duration(&Value::from(text.parse::<u64>().map_err(|_| bad())?), field);
    }
    if let Some(days) = text.strip_suffix('d') {
        let days: u64 = days.parse().map_err(|_| bad())?;
        return go_duration(
            &Value::String(format!("{}h", days.saturating_mul(24))),
            field,
        );
    }
    go_duration(&Value::String(text.to_string()), field).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spring(value: Value) -> Option<u64> {
        spring_duration(&value, "f").ok().map(|d| d.micros())
    }

    /// Spring Boot's duration forms: plain milliseconds (number or string), a unit suffix
    /// (`ms`, `s`, `m`, `h`, `d`) and ISO-8601 (`PT0.5S`, `PT1M30S`).
    #[test]
    fn spring_durations() {
        assert_eq!(spring(Value::from(500)), Some(500_000));
        assert_eq!(spring(Value::from("500")), Some(500_000));
        assert_eq!(spring(Value::from("500ms")), Some(500_000));
        assert_eq!(spring(Value::from("10s")), Some(10_000_000));
        assert_eq!(spring(Value::from("1d")), Some(86_400_000_000));
        assert_eq!(spring(Value::from("PT0.5S")), Some(500_000));
        assert_eq!(spring(Value::from("PT1M30S")), Some(90_000_000));
        assert_eq!(spring(Value::from("P1D")), None);
        assert_eq!(spring(Value::from("soon")), None);
    }
}
