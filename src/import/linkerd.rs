//! Linkerd's retries and timeouts: a `ServiceProfile` route (`linkerd.io/v1alpha2`, the
//! proxy's legacy retries) with the profile's `retryBudget`, or the `retry.linkerd.io` and
//! `timeout.linkerd.io` annotations of Linkerd 2.16+ on a `Service`, `HTTPRoute` or
//! `GRPCRoute`.
//!
//! **ServiceProfile.** A route with `isRetryable: true` retries a response its response
//! classes call a failure: a 5xx (Linkerd's default classification). The proxy retries at once
//! and counts no attempts (`linkerd2-proxy`, `retry.rs`: `retry` asks the budget alone, an
//! error without a response is not retried), so only the budget and the route `timeout` stop
//! it:
//!
//! | config | policy |
//! |---|---|
//! | `isRetryable: true` (default false) | `retryable_statuses` 500-599, no failure without a response; `max_attempts = 100` (the most the simulator runs: Linkerd has no count), `base = cap = "0s"`, `jitter = "none"` |
//! | `timeout` (default 10 s) | `deadline` (the whole request, retries included); `attempt_timeout = "none"` |
//! | `retryBudget { retryRatio (0.2), minRetriesPerSecond (10), ttl (10s) }` | a `retry-budget` control: `percent = 100 retryRatio`, `min_per_s`, `ttl`, per process (one proxy) |
//!
//! **Annotations** (a route's override the Service's; ignored where a ServiceProfile exists):
//!
//! | annotation | policy |
//! |---|---|
//! | `retry.linkerd.io/http`: `5xx`, `gateway-error`, a status, a range `a-b` | `retryable_statuses` |
//! | `retry.linkerd.io/grpc`: `cancelled`, `deadline-exceeded`, `internal`, `resource-exhausted`, `unavailable` | the HTTP statuses a gRPC client reads as those codes (see the gRPC importer) |
//! | `retry.linkerd.io/limit` (default 1; 0 is unset) | `max_attempts` |
//! | `retry.linkerd.io/timeout` | `attempt_timeout`, and a timed-out attempt is retried |
//! | `timeout.linkerd.io/request`, `timeout.linkerd.io/response` | `deadline` (the earlier) |
//! | (the backoff the policy controller sends: 25 ms to 250 ms, jitter ratio 1) | `base = "25ms"`, `cap = "250ms"`, `jitter = "linkerd"` |
//!
//! Linkerd checks no method: "Retries are supported for all idempotent requests, whatever verb
//! they use" (its docs), idempotent meaning what the user marked retryable, so a retryable
//! route's POST is retried too (`unsafe_retries = true`); a body over 64 KiB is not retried (the
//! proxy buffers at most that), and the simulated requests carry none.
//!
//! Resets and refused connections are not retried by these imports, and Retry-After is not
//! read (`retry_after = "ignore"`). Failure accrual (circuit
//! breaking) ejects instances of the service's fleet and is refused with the fleet setting to
//! write; `timeout.linkerd.io/idle` concerns streams and is refused.

use serde_json::{Map, Value};

use super::istio::{metadata_name, resource_spec};
use super::{ImportError, Imported, field_error, go_duration, refuse_unknown};
use crate::base::time::{Duration, MICROS_PER_SECOND};
use crate::base::values::{Bounded, BudgetPercent};
use crate::control::ControlKind;
use crate::retry::backoff::Jitter;
use crate::retry::decision::StatusSet;
use crate::retry::retry_after::RetryAfterMode;
use crate::scenario::{AttemptTimeout, ControlSpec, TransportError};

/// Which requests Linkerd retries: those of a route marked retryable, whatever their method.
const ROUTE_RULE: &str = "Linkerd retries the requests of a route marked retryable, whatever their method: marking only idempotent routes is left to the user (Linkerd's retries docs); bodies over 64 KiB are not retried, and the simulated requests have none";

/// A ServiceProfile route's default `timeout` (Linkerd's current documentation).
pub const DEFAULT_ROUTE_TIMEOUT: Duration = Duration(10 * MICROS_PER_SECOND);
/// `retryBudget` defaults: `retryRatio`, `minRetriesPerSecond`, `ttl` (seconds).
pub const DEFAULT_RETRY_RATIO: f64 = 0.2;
pub const DEFAULT_MIN_RETRIES_PER_SECOND: u64 = 10;
pub const DEFAULT_TTL_SECONDS: u64 = 10;
/// The retries a ServiceProfile route may make as far as the simulator goes: Linkerd counts
/// none, and a policy's `max_attempts` is at most 100.
pub const UNCOUNTED_RETRIES: u64 = 100;
/// `retry.linkerd.io/limit`'s default.
pub const DEFAULT_LIMIT: u64 = 1;
/// The backoff the policy controller sends with annotation retries.
pub const ANNOTATION_BASE: Duration = Duration::from_ms(25);
pub const ANNOTATION_CAP: Duration = Duration::from_ms(250);

/// Imports the route of a ServiceProfile named by `route` (or its only retryable one).
pub fn import_service_profile(
    config: &Map<String, Value>,
    route: Option<&str>,
) -> Result<Imported, ImportError> {
    let spec = resource_spec(config)?;
    refuse_unknown(
        spec,
        "spec",
        &["routes", "retryBudget", "opaquePorts"],
        &[(
            "dstOverrides",
            "traffic splitting between services is not simulated",
        )],
    )?;
    let routes = match spec.get("routes") {
        Some(Value::Array(routes)) if !routes.is_empty() => routes,
        _ => return Err(field_error("spec.routes", "required: a list of routes")),
    };
    let name_of = |entry: &Value| {
        entry
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let names = |filter: &dyn Fn(&Value) -> bool| {
        routes
            .iter()
            .filter(|entry| filter(entry))
            .map(|entry| {
                crate::base::escape::user_text(&name_of(entry).unwrap_or_default()).into_owned()
            })
            .map(|name| format!("{name:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let retryable = |entry: &Value| entry.get("isRetryable") == Some(&Value::Bool(true));
    let index = match route {
        Some(wanted) => routes
            .iter()
            .position(|entry| name_of(entry).as_deref() == Some(wanted))
            .ok_or_else(|| {
                field_error(
                    "spec.routes",
                    format!(
                        "no route named {:?}; the routes are {}",
                        crate::base::escape::user_text(wanted),
                        names(&|_| true)
                    ),
                )
            })?,
        None if routes.len() == 1 => 0,
        None => {
            let candidates: Vec<usize> = (0..routes.len())
                .filter(|&i| retryable(&routes[i]))
                .collect();
            match candidates.as_slice() {
                [only] => *only,
                _ => {
                    return Err(field_error(
                        "spec.routes",
                        format!(
                            "several routes ({}); choose one by its name with import_route (or --route)",
                            names(&|_| true)
                        ),
                    ));
                }
            }
        }
    };
    let prefix = format!("spec.routes[{index}]");
    let Value::Object(entry) = &routes[index] else {
        return Err(field_error(prefix, "must be an object"));
    };
    refuse_unknown(
        entry,
        &prefix,
        &["name", "condition", "isRetryable", "timeout"],
        &[(
            "responseClasses",
            "response classes other than Linkerd's default (a 5xx is a failure) are not read; remove it to simulate the default",
        )],
    )?;
    let mut imported = Imported {
        source: format!(
            "Linkerd ServiceProfile {}, {prefix} ({})",
            metadata_name(config),
            crate::base::escape::user_text(&name_of(&routes[index]).unwrap_or_default())
        ),
        attempt_timeout: Some(AttemptTimeout::None),
        retryable_transport_errors: Some(Vec::new()),
        retry_after: Some(RetryAfterMode::Ignore),
        ..Imported::default()
    };
    let deadline = match entry.get("timeout") {
        Some(value) => {
            let timeout = go_duration(value, &format!("{prefix}.timeout"))?;
            if timeout.micros() == 0 {
                return Err(field_error(
                    format!("{prefix}.timeout"),
                    "must be above zero",
                ));
            }
            timeout
        }
        None => {
            imported.notes.push(format!(
                "no timeout: Linkerd's default route timeout, {DEFAULT_ROUTE_TIMEOUT}"
            ));
            DEFAULT_ROUTE_TIMEOUT
        }
    };
    imported.deadline = Some(deadline);
    imported.notes.push(format!(
        "timeout {deadline} bounds the request and its retries: the deadline; attempt_timeout = \"none\""
    ));
    match entry.get("isRetryable") {
        None | Some(Value::Bool(false)) => {
            imported.max_attempts = Some(0);
            imported
                .notes
                .push("isRetryable is not true: Linkerd does not retry this route".into());
        }
        Some(Value::Bool(true)) => {
            imported.max_attempts = Some(UNCOUNTED_RETRIES);
            imported.retryable_statuses = Some((500..=599).collect());
            imported.base = Some(Duration(0));
            imported.cap = Some(Duration(0));
            imported.jitter = Some(Jitter::None);
            imported.notes.push(format!(
                "isRetryable: a 5xx (Linkerd's default failure class) is retried at once, without backoff; an error without a response is not; the proxy counts no attempts, so only the budget and the timeout stop retries (max_attempts = {UNCOUNTED_RETRIES}, the simulator's most)"
            ));
            let budget = budget(spec.get("retryBudget"), &mut imported)?;
            imported.controls.push(budget);
            super::retries_any_method(&mut imported, ROUTE_RULE);
        }
        Some(_) => {
            return Err(field_error(
                format!("{prefix}.isRetryable"),
                "must be true or false",
            ));
        }
    }
    Ok(imported)
}

/// The profile's `retryBudget` as a `retry-budget` control.
fn budget(value: Option<&Value>, imported: &mut Imported) -> Result<ControlSpec, ImportError> {
    let prefix = "spec.retryBudget";
    let empty = Map::new();
    let budget = match value {
        None => &empty,
        Some(Value::Object(budget)) => budget,
        Some(_) => return Err(field_error(prefix, "must be an object")),
    };
    refuse_unknown(
        budget,
        prefix,
        &["retryRatio", "minRetriesPerSecond", "ttl"],
        &[],
    )?;
    let ratio = match budget.get("retryRatio") {
        None => DEFAULT_RETRY_RATIO,
        Some(value) => value
            .as_f64()
            .filter(|ratio| (0.0..=1000.0).contains(ratio))
            .ok_or_else(|| {
                field_error(
                    format!("{prefix}.retryRatio"),
                    "must be a number from 0 to 1000 (retries per request)",
                )
            })?,
    };
    let min = match budget.get("minRetriesPerSecond") {
        None => DEFAULT_MIN_RETRIES_PER_SECOND,
        Some(value) => super::integer(value, &format!("{prefix}.minRetriesPerSecond"), 1_000_000)?,
    };
    let ttl = match budget.get("ttl") {
        None => Duration(DEFAULT_TTL_SECONDS * MICROS_PER_SECOND),
        Some(value) => {
            let ttl = go_duration(value, &format!("{prefix}.ttl"))?;
            if ttl.micros() % MICROS_PER_SECOND != 0
                || !(1..=60).contains(&(ttl.micros() / MICROS_PER_SECOND))
            {
                return Err(field_error(
                    format!("{prefix}.ttl"),
                    format!("{ttl}: the simulated budget's window is whole seconds from 1s to 60s"),
                ));
            }
            ttl
        }
    };
    let percent = ratio * 100.0;
    imported.notes.push(format!(
        "retryBudget{}: retries at most {percent}% of the requests plus {min} per second, over {ttl}, per proxy (a retry-budget control per process)",
        if value.is_none() { " (not written: Linkerd's defaults)" } else { "" }
    ));
    Ok(ControlSpec {
        percent: Some(BudgetPercent(percent)),
        min_per_s: Some(Bounded(min)),
        ttl: Some(toml::Spanned::new(0..0, ttl)),
        ..ControlSpec::empty(ControlKind::RetryBudget)
    })
}

/// The annotations read, each with what it sets.
const ANNOTATIONS: [&str; 6] = [
    "retry.linkerd.io/http",
    "retry.linkerd.io/grpc",
    "retry.linkerd.io/limit",
    "retry.linkerd.io/timeout",
    "timeout.linkerd.io/request",
    "timeout.linkerd.io/response",
];

/// Imports the retry and timeout annotations of a Service, HTTPRoute or GRPCRoute.
pub fn import_annotations(config: &Map<String, Value>) -> Result<Imported, ImportError> {
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    let empty = Map::new();
    let annotations = match config.get("metadata").and_then(|m| m.get("annotations")) {
        None => &empty,
        Some(Value::Object(annotations)) => annotations,
        Some(_) => return Err(field_error("metadata.annotations", "must be a mapping")),
    };
    let field = |name: &str| format!("metadata.annotations.{name}");
    for (name, why) in [
        (
            "balancer.linkerd.io/failure-accrual",
            "failure accrual ejects instances of the service's fleet, not a caller's retries: write it as the service's fleet.outlier_detection (consecutive failures as consecutive_5xx)",
        ),
        ("timeout.linkerd.io/idle", "idle streams are not simulated"),
    ] {
        if annotations.contains_key(name) {
            return Err(field_error(
                field(name),
                format!(
                    "not simulated: {why}; remove it from the imported copy to simulate the rest"
                ),
            ));
        }
    }
    let text = |name: &str| -> Result<Option<&str>, ImportError> {
        match annotations.get(name) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.as_str())),
            Some(_) => Err(field_error(
                field(name),
                "an annotation's value is a string",
            )),
        }
    };
    let mut imported = Imported {
        source: format!("Linkerd annotations of {kind} {}", metadata_name(config)),
        attempt_timeout: Some(AttemptTimeout::None),
        retry_after: Some(RetryAfterMode::Ignore),
        ..Imported::default()
    };
    if !ANNOTATIONS
        .iter()
        .any(|name| annotations.contains_key(*name))
    {
        imported.max_attempts = Some(0);
        imported.notes.push(format!(
            "no retry.linkerd.io or timeout.linkerd.io annotation: Linkerd does not retry (the annotations read are {})",
            ANNOTATIONS.join(", ")
        ));
        return Ok(imported);
    }
    imported.notes.push(format!(
        "annotations on a {kind} are ignored by Linkerd where a ServiceProfile exists for the service; a route's override its Service's"
    ));
    let mut statuses: Vec<u16> = Vec::new();
    let (http, grpc) = (
        text("retry.linkerd.io/http")?,
        text("retry.linkerd.io/grpc")?,
    );
    if let Some(http) = http {
        statuses.extend(http_conditions(http, &field("retry.linkerd.io/http"))?);
    }
    if let Some(grpc) = grpc {
        statuses.extend(grpc_conditions(
            grpc,
            &field("retry.linkerd.io/grpc"),
            &mut imported,
        )?);
    }
    statuses.sort_unstable();
    statuses.dedup();
    let limit = match text("retry.linkerd.io/limit")? {
        None => None,
        Some(limit) => Some(
            limit
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|&n| n <= 100)
                .ok_or_else(|| {
                    field_error(
                        field("retry.linkerd.io/limit"),
                        format!("{limit:?} is not an integer from 0 to 100"),
                    )
                })?,
        ),
    };
    let attempt_timeout = text("retry.linkerd.io/timeout")?
        .map(|t| positive(t, &field("retry.linkerd.io/timeout")))
        .transpose()?;
    if http.is_none() && grpc.is_none() {
        if limit.is_some() || attempt_timeout.is_some() {
            return Err(field_error(
                field("retry.linkerd.io/http"),
                "required with retry.linkerd.io/limit or retry.linkerd.io/timeout: which responses are retried (for example \"5xx\")",
            ));
        }
        imported.max_attempts = Some(0);
        imported.notes.push(
            "no retry.linkerd.io/http or retry.linkerd.io/grpc: Linkerd does not retry".into(),
        );
    } else {
        let retries = match limit {
            None | Some(0) => {
                imported.notes.push(format!(
                    "retry.linkerd.io/limit {}: Linkerd's default, {DEFAULT_LIMIT} retry",
                    if limit.is_some() {
                        "0 (unset)"
                    } else {
                        "not written"
                    }
                ));
                DEFAULT_LIMIT
            }
            Some(n) => n,
        };
        imported.max_attempts = Some(retries);
        imported.base = Some(ANNOTATION_BASE);
        imported.cap = Some(ANNOTATION_CAP);
        imported.multiplier = Some(2.0);
        imported.jitter = Some(Jitter::Linkerd);
        imported.notes.push(format!(
            "backoff as the policy controller sends it: {ANNOTATION_BASE} doubling to {ANNOTATION_CAP}, jitter ratio 1 (each wait U(1, 2) times the backoff, at most {ANNOTATION_CAP})"
        ));
        imported.notes.push(format!(
            "retries the statuses {}{}; not resets or refused connections",
            if statuses.is_empty() {
                "(none)".to_string()
            } else {
                statuses.iter().copied().collect::<StatusSet>().to_string()
            },
            if attempt_timeout.is_some() {
                " and attempts that time out"
            } else {
                ""
            }
        ));
        imported.retryable_statuses = Some(statuses);
        imported.retryable_transport_errors = Some(if attempt_timeout.is_some() {
            vec![TransportError::Timeout]
        } else {
            Vec::new()
        });
        super::retries_any_method(&mut imported, ROUTE_RULE);
    }
    if let Some(timeout) = attempt_timeout {
        imported.attempt_timeout = Some(AttemptTimeout::After(timeout));
        imported.notes.push(format!(
            "retry.linkerd.io/timeout {timeout}: each attempt's timeout"
        ));
    }
    let request = text("timeout.linkerd.io/request")?
        .map(|t| positive(t, &field("timeout.linkerd.io/request")))
        .transpose()?;
    let response = text("timeout.linkerd.io/response")?
        .map(|t| positive(t, &field("timeout.linkerd.io/response")))
        .transpose()?;
    match request.into_iter().chain(response).min() {
        Some(deadline) => {
            imported.deadline = Some(deadline);
            imported.notes.push(format!(
                "timeout.linkerd.io: the request ends after {deadline}, retries included: the deadline"
            ));
        }
        None => imported.notes.push(
            "no timeout.linkerd.io/request or response: the call's deadline is the scenario's"
                .into(),
        ),
    }
    Ok(imported)
}

/// A positive Go duration written as an annotation.
fn positive(text: &str, field: &str) -> Result<Duration, ImportError> {
    let duration = go_duration(&Value::String(text.to_string()), field)?;
    if duration.micros() == 0 {
        return Err(field_error(field, "must be above zero"));
    }
    Ok(duration)
}

/// The statuses `retry.linkerd.io/http` lists: `5xx`, `gateway-error`, a status or a range.
fn http_conditions(text: &str, field: &str) -> Result<Vec<u16>, ImportError> {
    let mut statuses = Vec::new();
    let status = |part: &str| {
        part.trim()
            .parse::<u16>()
            .ok()
            .filter(|s| (100..=599).contains(s))
    };
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part {
            "5xx" => statuses.extend(500..=599),
            "gateway-error" => statuses.extend([502, 503, 504]),
            _ => {
                let (low, high) = match part.split_once('-') {
                    Some((low, high)) => (status(low), status(high)),
                    None => (status(part), status(part)),
                };
                match (low, high) {
                    (Some(low), Some(high)) if low <= high => {
                        statuses.extend((low..=high).filter(|s| *s >= 400));
                    }
                    _ => {
                        return Err(field_error(
                            field,
                            format!(
                                "{:?} is not 5xx, gateway-error, a status or a range of statuses such as 500-504",
                                crate::base::escape::user_text(part)
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(statuses)
}

/// The HTTP statuses a gRPC client reads as the codes `retry.linkerd.io/grpc` lists.
fn grpc_conditions(
    text: &str,
    field: &str,
    imported: &mut Imported,
) -> Result<Vec<u16>, ImportError> {
    let mut codes = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let code = match part {
            "cancelled" => "CANCELLED",
            "deadline-exceeded" => "DEADLINE_EXCEEDED",
            "internal" => "INTERNAL",
            "resource-exhausted" => "RESOURCE_EXHAUSTED",
            "unavailable" => "UNAVAILABLE",
            _ => {
                return Err(field_error(
                    field,
                    format!(
                        "{:?} is not a gRPC condition; they are cancelled, deadline-exceeded, internal, resource-exhausted, unavailable",
                        crate::base::escape::user_text(part)
                    ),
                ));
            }
        };
        codes.push(code);
    }
    let statuses: Vec<u16> = (400..=599)
        .filter(|&status| codes.contains(&super::grpc::code_of_http_status(status)))
        .collect();
    imported.notes.push(format!(
        "retry.linkerd.io/grpc {text:?}: the simulated services answer HTTP statuses, read as a gRPC client reads them (429, 502, 503, 504 UNAVAILABLE, 400 INTERNAL, no status CANCELLED, DEADLINE_EXCEEDED or RESOURCE_EXHAUSTED)"
    ));
    Ok(statuses)
}
