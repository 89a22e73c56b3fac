//! A gRPC service config (gRFC A6, `service_config.proto`): one `methodConfig` entry's
//! `retryPolicy` and `timeout`, and the channel's `retryThrottling`.
//!
//! | config | policy |
//! |---|---|
//! | `retryPolicy.maxAttempts` (counts the first call; clients clamp it to 5) | `max_attempts = min(maxAttempts, 5) - 1` |
//! | `initialBackoff`, `maxBackoff`, `backoffMultiplier` | `base`, `cap`, `multiplier` |
//! | (the current spec's jitter, `U(0.8, 1.2)`) | `jitter = "grpc"` |
//! | `retryableStatusCodes` | the HTTP statuses whose gRPC code (gRPC's HTTP-to-gRPC table) is listed |
//! | `timeout` (the call's deadline) | `deadline`; without it the scenario's, which the notes say |
//! | (gRPC has no per-attempt timeout) | `attempt_timeout = "none"` |
//! | no `retryPolicy` (or only `retryThrottling`) | `max_attempts = 0`: gRPC does not retry |
//! | `waitForReady: false` (the default: fail at once when not connected) | as simulated; `true` is refused |
//! | `retryThrottling { maxTokens, tokenRatio }` | a `grpc-throttling` control per process (one channel) |
//! | server pushback (`grpc-retry-pushback-ms`) | `retry_after = "pushback"`: a service's Retry-After read as pushback, exact, and the backoff restarts |
//!
//! Services answer HTTP statuses, so a retryable gRPC code becomes the statuses a gRPC client
//! maps to it when a response has no `grpc-status` (`doc/http-grpc-status-mapping.md`): 400 is
//! INTERNAL, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 UNIMPLEMENTED, 429, 502, 503 and
//! 504 are UNAVAILABLE, every other status is UNKNOWN. A `hedgingPolicy` (`maxAttempts`,
//! `hedgingDelay`, `nonFatalStatusCodes`) becomes the policy's `hedging`. A reset or a refused
//! connection fails an attempt with UNAVAILABLE, so it is retryable only if that code is.
//! `waitForReady: true`, message size limits and load-balancing settings change what a client
//! does in ways the simulator does not model, and are refused by name.
//!
//! **Which RPCs are retried.** gRPC has no rule on methods: "gRPC retries do not provide a
//! mechanism to specifically mark a method as idempotent" (gRFC A6). It stops retrying an RPC
//! once it is *committed*, when "the client receives Response-Headers", and servers "should
//! delay the Response-Headers until the first response message", sending an error "in
//! Trailers-Only" when the handler fails first. The simulated RPCs are unary and answer
//! whole, so none is committed before it ends: an error status (an overloaded service's 503,
//! an injected error, even after the write committed) comes Trailers-Only and is retried if
//! its code is retryable; a reset or refused connection has received nothing (UNAVAILABLE);
//! a timeout ends the call at its deadline (gRPC has no per-attempt timeout), and a timed-out
//! attempt under a policy's own `attempt_timeout` has received nothing either. So the import
//! sets `unsafe_retries = true`: a POST without key is retried on every failure the policy
//! retries. A server that sends its headers early (a streaming response) would commit the RPC;
//! the simulator has none.
//!
//! With several entries, `import_method` (`--method`) names the method simulated, and the entry
//! read is the one gRPC applies to it: the most specific match wins (`service_config.proto`,
//! `MethodConfig.name`), the entry naming the service and method, else the service alone,
//! else the default entry (a name without a service). The source line says which it was.

use serde_json::{Map, Value};

use super::{ImportError, Imported, field_error, positive_seconds, refuse_unknown};
use crate::base::values::{Bounded, Positive};
use crate::control::ControlKind;
use crate::retry::backoff::Jitter;
use crate::retry::decision::StatusSet;
use crate::retry::retry_after::RetryAfterMode;
use crate::scenario::{AttemptTimeout, ControlSpec, TransportError};

/// Which RPCs gRPC retries, as it applies to the simulated ones (see the module's documentation).
const COMMITTED_RULE: &str = "gRPC retries an RPC whatever its method until it is committed, when its response headers arrive (gRFC A6); a server answers an error status Trailers-Only, without headers, and a reset, refused or timed-out attempt has received none, so every failure simulated is retried whatever the method";

/// gRPC clients clamp `maxAttempts` to this by default.
const MAX_ATTEMPTS_CLAMP: u64 = 5;

/// The canonical status codes, by number.
const CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The gRPC code a client gives an HTTP status without `grpc-status`
/// (`doc/http-grpc-status-mapping.md`).
pub fn code_of_http_status(status: u16) -> &'static str {
    match status {
        400 => "INTERNAL",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "UNIMPLEMENTED",
        429 | 502 | 503 | 504 => "UNAVAILABLE",
        _ => "UNKNOWN",
    }
}

/// Imports `config`; `method` chooses the `methodConfig` entry when there are several.
pub fn import(config: &Map<String, Value>, method: Option<&str>) -> Result<Imported, ImportError> {
    refuse_unknown(
        config,
        "",
        &["methodConfig", "retryThrottling"],
        &[
            (
                "loadBalancingConfig",
                "the simulated services are single endpoints",
            ),
            (
                "loadBalancingPolicy",
                "the simulated services are single endpoints",
            ),
            (
                "healthCheckConfig",
                "the simulated services are single endpoints",
            ),
        ],
    )?;
    let mut imported = Imported::default();
    let entries = match config.get("methodConfig") {
        None => Vec::new(),
        Some(Value::Array(entries)) => entries.iter().enumerate().collect(),
        Some(_) => return Err(field_error("methodConfig", "must be a list")),
    };
    let chosen = choose(&entries, method)?;
    imported.source = match chosen {
        Some(Chosen { index, entry, how }) => format!(
            "gRPC service config, methodConfig[{index}] ({}): {how}",
            names(entry).join(", ")
        ),
        None => "gRPC service config, retryThrottling only".into(),
    };
    // gRPC has no per-attempt timeout: an attempt may last the whole deadline.
    imported.attempt_timeout = Some(AttemptTimeout::None);
    match chosen {
        Some(Chosen { index, entry, .. }) => {
            read_method_config(entry, &format!("methodConfig[{index}]"), &mut imported)?
        }
        None => {
            imported.max_attempts = Some(0);
            imported.notes.push(
                "no methodConfig entry with a retryPolicy: gRPC does not retry (retryThrottling only limits the retries a retryPolicy makes)".into(),
            );
        }
    }
    if imported.deadline.is_none() {
        imported.notes.push(
            "no timeout: gRPC sets no deadline, so the call's deadline is the scenario's (the clients' `deadline`, 5s unless set; a tier's is propagated from its caller); attempt_timeout = \"none\": an attempt may take all of it, as gRPC has no per-attempt timeout".into(),
        );
    }
    if let Some(throttling) = config.get("retryThrottling") {
        imported.controls.push(throttling_control(throttling)?);
        imported
            .notes
            .push("retryThrottling is per channel: kept per process (clients.processes)".into());
    }
    Ok(imported)
}

/// The `methodConfig` entry to read: the only one with a retry policy, or the one that applies
/// to `method` as gRPC chooses it.
fn choose<'v>(
    entries: &[(usize, &'v Value)],
    method: Option<&str>,
) -> Result<Option<Chosen<'v>>, ImportError> {
    if let Some(method) = method {
        return best_match(entries, method).map(Some).ok_or_else(|| {
            let all: Vec<String> = entries.iter().flat_map(|(_, e)| names(e)).collect();
            field_error(
                "methodConfig",
                format!(
                    "no entry applies to {:?} (by its service and method, its service, or a default entry `{{}}`); the names are {}",
                    crate::base::escape::user_text(method),
                    all.join(", ")
                ),
            )
        });
    }
    let with_policy: Vec<(usize, &Value)> = entries
        .iter()
        .filter(|(_, entry)| {
            ["retryPolicy", "hedgingPolicy", "timeout"]
                .iter()
                .any(|key| entry.get(key).is_some())
        })
        .copied()
        .collect();
    match with_policy.len() {
        0 => Ok(None),
        1 => Ok(Some(Chosen {
            index: with_policy[0].0,
            entry: with_policy[0].1,
            how: "the only entry that sets a policy",
        })),
        _ => Err(field_error(
            "methodConfig",
            format!(
                "several entries set a policy ({}); choose one with import_method (or --method)",
                with_policy
                    .iter()
                    .flat_map(|(_, entry)| names(entry))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// The `methodConfig` entry read, and why it was chosen.
#[derive(Clone, Copy)]
struct Chosen<'v> {
    index: usize,
    entry: &'v Value,
    how: &'static str,
}

/// A `(service, method)` name to find, if this level applies.
type Wanted<'a> = Option<(&'a str, Option<&'a str>)>;

/// The entry gRPC applies to `method` (`package.Service/Method`, or `package.Service` for any
/// of its methods): "the most specific match wins" (`grpc/service_config/service_config.proto`,
/// `MethodConfig.name`), first a name with this service and method, then one with the service
/// alone, then the default, a name with neither.
fn best_match<'v>(entries: &[(usize, &'v Value)], method: &str) -> Option<Chosen<'v>> {
    let (service, method) = match method.split_once('/') {
        Some((service, method)) => (service, Some(method)),
        None => (method, None),
    };
    let levels: [(Wanted<'_>, &'static str); 3] = [
        (
            method.map(|method| (service, Some(method))),
            "the entry naming this service and method",
        ),
        (
            Some((service, None)),
            "the entry naming the service alone (gRPC's default for its methods)",
        ),
        (
            Some(("", None)),
            "the default entry (a name without service: gRPC's default for every method)",
        ),
    ];
    levels.into_iter().find_map(|(wanted, how)| {
        let wanted = wanted?;
        entries
            .iter()
            .find(|(_, entry)| {
                name_pairs(entry)
                    .iter()
                    .any(|(s, m)| (s.as_str(), m.as_deref()) == wanted)
            })
            .map(|&(index, entry)| Chosen { index, entry, how })
    })
}

/// The `(service, method)` pairs an entry names; an empty service or method is none.
fn name_pairs(entry: &Value) -> Vec<(String, Option<String>)> {
    let text = |name: &Value, key: &str| {
        name.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    entry
        .get("name")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .map(|name| {
                    let method = text(name, "method");
                    (
                        text(name, "service"),
                        (!method.is_empty()).then_some(method),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The names an entry applies to, for the reader: `service/method`, `service`, or `{}` for the
/// default.
fn names(entry: &Value) -> Vec<String> {
    name_pairs(entry)
        .into_iter()
        .map(|(service, method)| {
            let shown = match method {
                Some(method) => format!("{service}/{method}"),
                None if service.is_empty() => "{}".to_string(),
                None => service,
            };
            crate::base::escape::user_text(&shown).into_owned()
        })
        .collect()
}

fn read_method_config(
    entry: &Value,
    prefix: &str,
    imported: &mut Imported,
) -> Result<(), ImportError> {
    let Value::Object(entry) = entry else {
        return Err(field_error(prefix, "must be an object"));
    };
    refuse_unknown(
        entry,
        prefix,
        &[
            "name",
            "retryPolicy",
            "hedgingPolicy",
            "timeout",
            "waitForReady",
        ],
        &[
            ("maxRequestMessageBytes", "message sizes are not simulated"),
            ("maxResponseMessageBytes", "message sizes are not simulated"),
        ],
    )?;
    match entry.get("waitForReady") {
        None => {}
        Some(Value::Bool(false)) => imported.notes.push(
            "waitForReady false: a call to a service that refuses connections fails at once (UNAVAILABLE), as simulated".into(),
        ),
        Some(Value::Bool(true)) => {
            return Err(field_error(
                format!("{prefix}.waitForReady"),
                "true is not simulated: such a call waits for a ready connection (until its deadline) where the simulated clients fail at once, as gRPC's default (false) does; remove it or set it to false",
            ));
        }
        Some(other) => {
            return Err(field_error(
                format!("{prefix}.waitForReady"),
                format!("{other} is not a boolean"),
            ));
        }
    }
    if let Some(timeout) = entry.get("timeout") {
        let timeout = positive_seconds(timeout, &format!("{prefix}.timeout"))?;
        imported.deadline = Some(timeout);
        imported.notes.push(format!(
            "timeout {timeout} is the call's deadline; attempt_timeout = \"none\": gRPC has no per-attempt timeout, so each attempt may wait until the deadline"
        ));
    }
    if let Some(hedging) = entry.get("hedgingPolicy") {
        if entry.contains_key("retryPolicy") {
            return Err(field_error(
                format!("{prefix}.hedgingPolicy"),
                "a methodConfig has a retryPolicy or a hedgingPolicy, not both (gRFC A6)",
            ));
        }
        let hedging = hedging_policy(hedging, &format!("{prefix}.hedgingPolicy"), imported)?;
        imported.hedging = Some(hedging);
        imported.max_attempts = Some(0);
        imported.retry_after = Some(RetryAfterMode::Pushback);
        super::retries_any_method(
            imported,
            "gRPC hedges the methods its config names, whatever they do (gRFC A6: \"gRPC retries do not provide a mechanism to specifically mark a method as idempotent\")",
        );
        return Ok(());
    }
    let Some(policy) = entry.get("retryPolicy") else {
        imported.max_attempts = Some(0);
        imported
            .notes
            .push("no retryPolicy: gRPC does not retry".into());
        return Ok(());
    };
    let prefix = format!("{prefix}.retryPolicy");
    let Value::Object(policy) = policy else {
        return Err(field_error(prefix, "must be an object"));
    };
    const FIELDS: [&str; 5] = [
        "maxAttempts",
        "initialBackoff",
        "maxBackoff",
        "backoffMultiplier",
        "retryableStatusCodes",
    ];
    refuse_unknown(
        policy,
        &prefix,
        &FIELDS,
        &[(
            "perAttemptRecvTimeout",
            "a per-attempt receive timeout is a gRFC A6 extension not every client implements; set attempt_timeout in the policy instead",
        )],
    )?;
    let required = |name: &str| {
        policy.get(name).ok_or_else(|| {
            field_error(
                format!("{prefix}.{name}"),
                "required: gRPC's retryPolicy has no defaults",
            )
        })
    };
    let field = |name: &str| format!("{prefix}.{name}");
    let attempts = required("maxAttempts")?
        .as_u64()
        .filter(|&n| n > 1)
        .ok_or_else(|| {
            field_error(
                field("maxAttempts"),
                "must be an integer above 1 (it counts the first call)",
            )
        })?;
    if attempts > MAX_ATTEMPTS_CLAMP {
        imported.notes.push(format!(
            "maxAttempts {attempts} is clamped to {MAX_ATTEMPTS_CLAMP}, as gRPC clients do by default"
        ));
    }
    imported.max_attempts = Some(attempts.min(MAX_ATTEMPTS_CLAMP) - 1);
    let base = positive_seconds(required("initialBackoff")?, &field("initialBackoff"))?;
    let cap = positive_seconds(required("maxBackoff")?, &field("maxBackoff"))?;
    if cap < base {
        return Err(field_error(
            field("maxBackoff"),
            format!("{cap} is below initialBackoff {base}"),
        ));
    }
    imported.base = Some(base);
    imported.cap = Some(cap);
    let multiplier = required("backoffMultiplier")?
        .as_f64()
        .filter(|&m| m > 0.0 && m <= 1e9)
        .ok_or_else(|| field_error(field("backoffMultiplier"), "must be a number above 0"))?;
    imported.multiplier = Some(multiplier);
    imported.jitter = Some(Jitter::Grpc);
    imported.retry_after = Some(RetryAfterMode::Pushback);
    imported.notes.push("a service's Retry-After is read as gRPC server pushback: retry after exactly that long, then back off from initialBackoff again".into());
    let codes = retryable_codes(
        required("retryableStatusCodes")?,
        &field("retryableStatusCodes"),
    )?;
    // Only error statuses (400 to 599) can fail an attempt.
    let statuses: Vec<u16> = (400..=599)
        .filter(|&status| codes.contains(&code_of_http_status(status)))
        .collect();
    for code in &codes {
        if !(400..=599).any(|status| code_of_http_status(status) == *code) {
            imported.notes.push(format!(
                "{code}: no HTTP status maps to it, so it adds no retryable status"
            ));
        }
    }
    if statuses.is_empty() {
        return Err(field_error(
            field("retryableStatusCodes"),
            "no HTTP status maps to these codes (gRPC's table maps statuses to INTERNAL, UNAUTHENTICATED, PERMISSION_DENIED, UNIMPLEMENTED, UNAVAILABLE and UNKNOWN)",
        ));
    }
    imported.notes.push(format!(
        "retryableStatusCodes {} are the HTTP statuses {}",
        codes.join(", "),
        statuses.iter().copied().collect::<StatusSet>()
    ));
    imported.retryable_statuses = Some(statuses);
    // A reset stream or a refused connection fails an attempt with UNAVAILABLE.
    if !codes.contains(&"UNAVAILABLE") {
        imported.retryable_transport_errors = Some(vec![TransportError::Timeout]);
        imported.notes.push("UNAVAILABLE is not retryable, so neither is a reset or a refused connection (gRPC fails such an attempt with UNAVAILABLE)".into());
    }
    super::retries_any_method(imported, COMMITTED_RULE);
    Ok(())
}

/// `hedgingPolicy` as the policy's hedging.
fn hedging_policy(
    value: &Value,
    prefix: &str,
    imported: &mut Imported,
) -> Result<crate::scenario::Hedging, ImportError> {
    let Value::Object(policy) = value else {
        return Err(field_error(prefix, "must be an object"));
    };
    refuse_unknown(
        policy,
        prefix,
        &["maxAttempts", "hedgingDelay", "nonFatalStatusCodes"],
        &[],
    )?;
    let attempts = policy
        .get("maxAttempts")
        .and_then(Value::as_u64)
        .filter(|&n| n > 1)
        .ok_or_else(|| {
            field_error(
                format!("{prefix}.maxAttempts"),
                "required: an integer above 1",
            )
        })?;
    if attempts > MAX_ATTEMPTS_CLAMP {
        imported.notes.push(format!(
            "hedging maxAttempts {attempts} is clamped to {MAX_ATTEMPTS_CLAMP}, as gRPC clients do"
        ));
    }
    let delay = match policy.get("hedgingDelay") {
        Some(delay) => super::seconds(delay, &format!("{prefix}.hedgingDelay"))?,
        None => crate::base::time::Duration(0),
    };
    let statuses: Vec<u16> = match policy.get("nonFatalStatusCodes") {
        None => Vec::new(),
        Some(codes) => {
            let codes = retryable_codes(codes, &format!("{prefix}.nonFatalStatusCodes"))?;
            (400..=599)
                .filter(|&status| codes.contains(&code_of_http_status(status)))
                .collect()
        }
    };
    imported.notes.push(format!(
        "hedgingPolicy: {} attempts, {} apart; non-fatal statuses {}",
        attempts.min(MAX_ATTEMPTS_CLAMP),
        delay,
        if statuses.is_empty() {
            "none".to_string()
        } else {
            statuses.iter().copied().collect::<StatusSet>().to_string()
        }
    ));
    Ok(crate::scenario::Hedging {
        max_attempts: Bounded(attempts.min(MAX_ATTEMPTS_CLAMP)),
        delay,
        non_fatal_statuses: statuses
            .into_iter()
            .map(|s| Bounded(u64::from(s)))
            .collect(),
    })
}

/// The codes of `retryableStatusCodes`, by name or number, checked.
fn retryable_codes(value: &Value, field: &str) -> Result<Vec<&'static str>, ImportError> {
    let Value::Array(list) = value else {
        return Err(field_error(
            field,
            "must be a non-empty list of status codes",
        ));
    };
    if list.is_empty() {
        return Err(field_error(field, "must not be empty"));
    }
    list.iter()
        .map(|code| {
            let name = match code {
                Value::String(name) => CODES.iter().find(|c| c.eq_ignore_ascii_case(name)),
                Value::Number(number) => number
                    .as_u64()
                    .and_then(|n| CODES.get(usize::try_from(n).ok()?)),
                _ => None,
            };
            name.copied().filter(|&name| name != "OK").ok_or_else(|| {
                field_error(
                    field,
                    format!("{code} is not a gRPC status code other than OK (names such as UNAVAILABLE, or numbers 1 to 16)"),
                )
            })
        })
        .collect()
}

/// `retryThrottling` as a control.
fn throttling_control(value: &Value) -> Result<ControlSpec, ImportError> {
    let Value::Object(object) = value else {
        return Err(field_error("retryThrottling", "must be an object"));
    };
    refuse_unknown(object, "retryThrottling", &["maxTokens", "tokenRatio"], &[])?;
    let max_tokens = object
        .get("maxTokens")
        .and_then(Value::as_u64)
        .filter(|n| (1..=1000).contains(n))
        .ok_or_else(|| {
            field_error(
                "retryThrottling.maxTokens",
                "required: an integer from 1 to 1000",
            )
        })?;
    let token_ratio = object
        .get("tokenRatio")
        .and_then(Value::as_f64)
        .filter(|r| (0.001..=1e9).contains(r))
        .ok_or_else(|| {
            field_error(
                "retryThrottling.tokenRatio",
                "required: a number of at least 0.001 (three decimals are kept)",
            )
        })?;
    Ok(ControlSpec {
        max_tokens: Some(Bounded(max_tokens)),
        token_ratio: Some(Positive(token_ratio)),
        ..ControlSpec::empty(ControlKind::GrpcThrottling)
    })
}
