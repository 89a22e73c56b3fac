//! An Envoy route `retry_policy` (`route_components.proto`, `RetryPolicy`), with the cluster's
//! `circuit_breakers` retry limit (`circuit_breaker.proto`).
//!
//! The file holds `retry_policy` and, optionally, `circuit_breakers` (the cluster's, with one
//! `thresholds` entry):
//!
//! | config | policy |
//! |---|---|
//! | `num_retries` (default 1) | `max_attempts` |
//! | `per_try_timeout` (default: none, the route timeout bounds every attempt) | `attempt_timeout` (default `"none"`) |
//! | `retry_back_off { base_interval (25 ms), max_interval (10 x base) }` | `base`, `cap`, `jitter = "full"` (Envoy's fully jittered backoff, `U[0, min(base * 2^n, max))`) |
//! | `retry_on`: `5xx`, `gateway-error`, `retriable-4xx`, `retriable-status-codes` (+ `retriable_status_codes`) | `retryable_statuses`: 500-599, 502-504, 409, the list |
//! | `retry_on`: `5xx`, `gateway-error`, `reset` (an upstream reset counts as a 5xx, a per-try timeout is a local reset); `connect-failure`; `refused-stream` | `retryable_transport_errors`: all of `timeout`, `reset`, `refused`; `refused`; none (the simulated services never refuse a stream) |
//! | `rate_limited_retry_back_off` with a `Retry-After` `SECONDS` reset header | `retry_after = "honor-jittered"`, `U(ra, 1.5 ra)`; without it Envoy ignores Retry-After: `"ignore"` |
//! | `circuit_breakers.thresholds[0].retry_budget { budget_percent (20), min_retry_concurrency (3) }` | a `retry-budget` control with `min_concurrency`, per process |
//! | no retry budget: `max_retries` (default 3) | a `retry-budget` control of 0% and `min_concurrency = max_retries`: Envoy's default cap of 3 concurrent retries |
//! | `retry_host_predicate: [{ name: envoy.retry_host_predicates.previous_hosts }]`, `host_selection_retry_max_attempts` (default 1) | `previous_hosts`: a retry avoids the hosts its call tried, at a fleet |
//! | `circuit_breakers.thresholds[0].max_requests` (default 1024) | a `connection-pool` control, per process: an attempt over it ends the call with `pool-overflow` |
//! | `max_connections`, `max_pending_requests` (default 1024 each, if either is written) | the pool is HTTP/1.1: a request that finds every connection busy waits, up to `max_pending_requests` |
//!
//! | (no rule on methods: any request whose failure matches `retry_on` is retried) | `unsafe_retries = true`: a POST without key is retried too |
//!
//! Conditions and settings that depend on what the simulator does not model (response
//! headers, gRPC statuses, host metadata, priorities) are refused by name.
//! A `retry_on` of `retriable-status-codes` alone retries the listed statuses and no timeout,
//! reset or refused connection, as such an Envoy does.

use serde_json::{Map, Value};

use super::{ImportError, Imported, field_error, integer, positive_seconds, refuse_unknown};
use crate::base::time::Duration;
use crate::base::values::{Bounded, BudgetPercent};
use crate::control::ControlKind;
use crate::control::connection_pool::{DEFAULT_HTTP1_LIMIT, DEFAULT_MAX_REQUESTS};
use crate::retry::backoff::Jitter;
use crate::retry::decision::StatusSet;
use crate::retry::retry_after::RetryAfterMode;
use crate::scenario::{AttemptTimeout, ControlSpec, TransportError};

/// Envoy's default `retry_back_off.base_interval`.
const DEFAULT_BASE: Duration = Duration::from_ms(25);
/// Envoy's default circuit-breaker `max_retries`.
const DEFAULT_MAX_RETRIES: u64 = 3;

/// Imports `config` (`retry_policy` and optionally `circuit_breakers`).
pub fn import(config: &Map<String, Value>) -> Result<Imported, ImportError> {
    refuse_unknown(config, "", &["retry_policy", "circuit_breakers"], &[])?;
    let Some(Value::Object(policy)) = config.get("retry_policy") else {
        return Err(field_error("retry_policy", "must be an object"));
    };
    let mut imported = Imported {
        source: "Envoy route retry_policy".into(),
        jitter: Some(Jitter::Full),
        ..Imported::default()
    };
    read_retry_policy(policy, &mut imported)?;
    let limit = retry_limit(config.get("circuit_breakers"), &mut imported)?;
    imported.controls.push(limit);
    let pool = request_limit(config.get("circuit_breakers"), &mut imported)?;
    imported.controls.push(pool);
    Ok(imported)
}

/// Reads a route's `retry_policy` into `imported`: everything but the cluster's limits (Istio
/// generates one, [`super::istio`]).
pub(crate) fn read_retry_policy(
    policy: &Map<String, Value>,
    imported: &mut Imported,
) -> Result<(), ImportError> {
    const UNMODELLED: [(&str, &str); 6] = [
        ("retry_priority", "priorities are not simulated"),
        ("retriable_headers", "response headers are not simulated"),
        (
            "retriable_request_headers",
            "request headers are not simulated",
        ),
        ("per_try_idle_timeout", "streams are not simulated"),
        (
            "retry_options_predicates",
            "retry option predicates are not simulated",
        ),
        (
            "hedge_on_per_try_timeout",
            "a retry that keeps the timed-out attempt alive is not simulated (gRPC's hedgingPolicy is)",
        ),
    ];
    refuse_unknown(
        policy,
        "retry_policy",
        &[
            "retry_on",
            "num_retries",
            "per_try_timeout",
            "retry_back_off",
            "retriable_status_codes",
            "rate_limited_retry_back_off",
            "retry_host_predicate",
            "host_selection_retry_max_attempts",
        ],
        &UNMODELLED,
    )?;
    imported.previous_hosts = previous_hosts(policy, imported)?;
    let retry_on = policy
        .get("retry_on")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            field_error(
                "retry_policy.retry_on",
                "required: without it Envoy does not retry; for example \"5xx,reset\"",
            )
        })?;
    let listed: Vec<u16> = match policy.get("retriable_status_codes") {
        None => Vec::new(),
        Some(Value::Array(codes)) => codes
            .iter()
            .map(|code| {
                code.as_u64()
                    .and_then(|c| u16::try_from(c).ok())
                    .filter(|c| (400..=599).contains(c))
                    .ok_or_else(|| {
                        field_error(
                            "retry_policy.retriable_status_codes",
                            format!("{code} is not an error status from 400 to 599"),
                        )
                    })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(field_error(
                "retry_policy.retriable_status_codes",
                "must be a list of statuses",
            ));
        }
    };
    let mut statuses = Vec::new();
    let mut transport: Vec<TransportError> = Vec::new();
    for condition in retry_on.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        match condition {
            // An upstream reset counts as a 5xx (retry_state_impl.cc), and a per-try timeout
            // is a local reset, so 5xx, gateway-error and reset retry every failure without a
            // response.
            "5xx" => {
                statuses.extend(500..=599);
                transport.extend(TransportError::ALL);
            }
            "gateway-error" => {
                statuses.extend([502, 503, 504]);
                transport.extend(TransportError::ALL);
            }
            "reset" => transport.extend(TransportError::ALL),
            "connect-failure" => transport.push(TransportError::Refused),
            "refused-stream" => imported.notes.push(
                "refused-stream: the simulated services never refuse an HTTP/2 stream, so it retries nothing here".into(),
            ),
            "retriable-4xx" => statuses.push(409),
            "retriable-status-codes" => statuses.extend(&listed),
            "envoy-ratelimited" | "retriable-headers" => {
                return Err(field_error(
                    "retry_policy.retry_on",
                    format!("{condition}: response headers are not simulated"),
                ));
            }
            "http3-post-connect-failure" => {
                return Err(field_error(
                    "retry_policy.retry_on",
                    format!("{condition}: HTTP/3 is not simulated"),
                ));
            }
            "reset-before-request" => {
                return Err(field_error(
                    "retry_policy.retry_on",
                    format!(
                        "{condition}: whether a reset came before the request's first byte is not simulated; use reset (every reset) or connect-failure (refused connections)"
                    ),
                ));
            }
            "cancelled" | "deadline-exceeded" | "internal" | "resource-exhausted"
            | "unavailable" => {
                return Err(field_error(
                    "retry_policy.retry_on",
                    format!(
                        "{condition}: a gRPC condition (x-envoy-retry-grpc-on); the simulated services answer HTTP statuses"
                    ),
                ));
            }
            other => {
                return Err(field_error(
                    "retry_policy.retry_on",
                    format!(
                        "{other:?} is not an Envoy retry condition; the HTTP ones are 5xx, gateway-error, reset, connect-failure, retriable-4xx, refused-stream, retriable-status-codes"
                    ),
                ));
            }
        }
    }
    if !listed.is_empty() && !retry_on.contains("retriable-status-codes") {
        return Err(field_error(
            "retry_policy.retriable_status_codes",
            "Envoy reads the list only with retriable-status-codes in retry_on",
        ));
    }
    statuses.sort_unstable();
    statuses.dedup();
    transport.sort_unstable();
    transport.dedup();
    imported.notes.push(format!(
        "retry_on {retry_on:?} retries {} and the statuses {}",
        describe_transport(&transport),
        if statuses.is_empty() {
            "(none)".to_string()
        } else {
            statuses.iter().copied().collect::<StatusSet>().to_string()
        }
    ));
    imported.retryable_transport_errors = Some(transport);
    imported.retryable_statuses = Some(statuses);
    // The router has no rule on methods; only `retriable_request_headers` (refused above, as
    // request headers are not simulated) would restrict which requests are retried.
    super::retries_any_method(
        imported,
        "Envoy's router retries any request whose failure matches retry_on, whatever its method (only retriable_request_headers, such as :method GET, would restrict it)",
    );
    let retries = match policy.get("num_retries") {
        None => 1,
        Some(value) => integer(value, "retry_policy.num_retries", 100)?,
    };
    imported.max_attempts = Some(retries);
    if let Some(timeout) = policy.get("per_try_timeout") {
        imported.attempt_timeout = Some(AttemptTimeout::After(positive_seconds(
            timeout,
            "retry_policy.per_try_timeout",
        )?));
    } else {
        imported.attempt_timeout = Some(AttemptTimeout::None);
        imported.notes.push("no per_try_timeout: attempt_timeout = \"none\", an attempt may take all the time left before the deadline, as Envoy's route timeout bounds all attempts together (the deadline is the scenario's: the clients' `deadline`, or a tier's propagated one)".into());
    }
    let (base, cap) = match policy.get("retry_back_off") {
        None => (DEFAULT_BASE, Duration(DEFAULT_BASE.micros() * 10)),
        Some(Value::Object(back_off)) => {
            refuse_unknown(
                back_off,
                "retry_policy.retry_back_off",
                &["base_interval", "max_interval"],
                &[],
            )?;
            let base = back_off
                .get("base_interval")
                .ok_or_else(|| {
                    field_error(
                        "retry_policy.retry_back_off.base_interval",
                        "required when retry_back_off is given",
                    )
                })
                .and_then(|v| positive_seconds(v, "retry_policy.retry_back_off.base_interval"))?;
            let cap = match back_off.get("max_interval") {
                Some(v) => positive_seconds(v, "retry_policy.retry_back_off.max_interval")?,
                None => Duration(base.micros() * 10),
            };
            if cap < base {
                return Err(field_error(
                    "retry_policy.retry_back_off.max_interval",
                    format!("{cap} is below base_interval {base}"),
                ));
            }
            (base, cap)
        }
        Some(_) => {
            return Err(field_error(
                "retry_policy.retry_back_off",
                "must be an object",
            ));
        }
    };
    imported.base = Some(base);
    imported.cap = Some(cap);
    imported.retry_after = Some(rate_limited_back_off(
        policy.get("rate_limited_retry_back_off"),
        imported,
    )?);
    Ok(())
}

/// The failures without a response in `errors`, in words.
fn describe_transport(errors: &[TransportError]) -> String {
    let words: Vec<&str> = errors
        .iter()
        .map(|error| match error {
            TransportError::Timeout => "per-try timeouts",
            TransportError::Reset => "resets",
            TransportError::Refused => "refused connections",
        })
        .collect();
    if words.is_empty() {
        "no failure without a response (no timeout, reset or refused connection)".into()
    } else {
        words.join(", ")
    }
}

/// What Envoy does with Retry-After.
fn rate_limited_back_off(
    value: Option<&Value>,
    imported: &mut Imported,
) -> Result<RetryAfterMode, ImportError> {
    let Some(value) = value else {
        imported
            .notes
            .push("no rate_limited_retry_back_off: Envoy ignores Retry-After".into());
        return Ok(RetryAfterMode::Ignore);
    };
    let prefix = "retry_policy.rate_limited_retry_back_off";
    let Value::Object(back_off) = value else {
        return Err(field_error(prefix, "must be an object"));
    };
    refuse_unknown(back_off, prefix, &["reset_headers", "max_interval"], &[])?;
    let Some(Value::Array(headers)) = back_off.get("reset_headers") else {
        return Err(field_error(
            format!("{prefix}.reset_headers"),
            "required: a list of { name, format }",
        ));
    };
    let reads_retry_after = headers.iter().any(|header| {
        header
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| n.eq_ignore_ascii_case("retry-after"))
            && header
                .get("format")
                .and_then(Value::as_str)
                .is_none_or(|f| f == "SECONDS")
    });
    if let Some(max) = back_off.get("max_interval") {
        let max = positive_seconds(max, &format!("{prefix}.max_interval"))?;
        imported.notes.push(format!(
            "rate_limited_retry_back_off.max_interval {max}: Envoy falls back to the exponential backoff for a longer Retry-After; the simulated client honours it"
        ));
    }
    if reads_retry_after {
        imported.notes.push("Retry-After (SECONDS) read by rate_limited_retry_back_off: the wait is U(ra, 1.5 ra), or the backoff if longer".into());
        Ok(RetryAfterMode::HonorJittered)
    } else {
        imported.notes.push("reset_headers without Retry-After in SECONDS: the simulated services send only Retry-After, so Envoy never finds its headers and uses the exponential backoff".into());
        Ok(RetryAfterMode::Ignore)
    }
}

/// The name of Envoy's predicate that makes a retry avoid the hosts already tried.
const PREVIOUS_HOSTS: &str = "envoy.retry_host_predicates.previous_hosts";

/// `retry_host_predicate: [{ name: envoy.retry_host_predicates.previous_hosts }]` with
/// `host_selection_retry_max_attempts` (default 1): a retry's pick of a host already tried is
/// drawn again, up to that many times (the policy's `previous_hosts`). Other predicates pick by
/// host metadata or canary status, which the simulated fleets do not have.
fn previous_hosts(
    policy: &Map<String, Value>,
    imported: &mut Imported,
) -> Result<Option<u64>, ImportError> {
    let attempts = match policy.get("host_selection_retry_max_attempts") {
        None => 1,
        Some(value) => integer(value, "retry_policy.host_selection_retry_max_attempts", 100)?,
    };
    let Some(predicates) = policy.get("retry_host_predicate") else {
        if policy.contains_key("host_selection_retry_max_attempts") {
            imported.notes.push(
                "host_selection_retry_max_attempts without a retry_host_predicate: Envoy picks every retry's host afresh".into(),
            );
        }
        return Ok(None);
    };
    let Value::Array(predicates) = predicates else {
        return Err(field_error(
            "retry_policy.retry_host_predicate",
            "must be a list of predicates",
        ));
    };
    for (index, predicate) in predicates.iter().enumerate() {
        let name = predicate.get("name").and_then(Value::as_str);
        if name != Some(PREVIOUS_HOSTS) {
            return Err(field_error(
                format!("retry_policy.retry_host_predicate[{index}].name"),
                format!(
                    "not simulated: only {PREVIOUS_HOSTS} (the simulated instances have no metadata or canary status); remove it from the imported copy to simulate the rest"
                ),
            ));
        }
    }
    if predicates.is_empty() {
        return Ok(None);
    }
    imported.notes.push(format!(
        "retry_host_predicate previous_hosts: a retry's pick of a host already tried is drawn again, up to {attempts} times (previous_hosts = {attempts}; it matters at a fleet)"
    ));
    Ok(Some(attempts))
}

/// The cluster's limit on concurrent retries: its retry budget, or `max_retries`.
fn retry_limit(value: Option<&Value>, imported: &mut Imported) -> Result<ControlSpec, ImportError> {
    let concurrency = |percent: f64, min: u64| ControlSpec {
        percent: Some(BudgetPercent(percent)),
        min_concurrency: Some(Bounded(min)),
        ..ControlSpec::empty(ControlKind::RetryBudget)
    };
    let Some(value) = value else {
        imported.notes.push(format!(
            "no circuit_breakers: Envoy's default max_retries allows {DEFAULT_MAX_RETRIES} concurrent retries per cluster, per Envoy (a 0% budget with min_concurrency {DEFAULT_MAX_RETRIES})"
        ));
        return Ok(concurrency(0.0, DEFAULT_MAX_RETRIES));
    };
    let Value::Object(breakers) = value else {
        return Err(field_error("circuit_breakers", "must be an object"));
    };
    refuse_unknown(
        breakers,
        "circuit_breakers",
        &["thresholds"],
        &[("per_host_thresholds", "a simulated service is one host")],
    )?;
    let thresholds = match breakers.get("thresholds") {
        Some(Value::Array(list)) if list.len() == 1 => &list[0],
        _ => {
            return Err(field_error(
                "circuit_breakers.thresholds",
                "must be a list of one entry (the DEFAULT priority; priorities are not simulated)",
            ));
        }
    };
    let prefix = "circuit_breakers.thresholds[0]";
    let Value::Object(thresholds) = thresholds else {
        return Err(field_error(prefix, "must be an object"));
    };
    refuse_unknown(
        thresholds,
        prefix,
        &[
            "priority",
            "retry_budget",
            "max_retries",
            "max_requests",
            "max_connections",
            "max_pending_requests",
        ],
        &[
            ("max_connection_pools", "connection pools are not simulated"),
            ("track_remaining", "a statistic, not a behaviour"),
        ],
    )?;
    if let Some(priority) = thresholds.get("priority")
        && priority.as_str() != Some("DEFAULT")
    {
        return Err(field_error(
            format!("{prefix}.priority"),
            "only DEFAULT: priorities are not simulated",
        ));
    }
    let Some(budget) = thresholds.get("retry_budget") else {
        let max = match thresholds.get("max_retries") {
            None => DEFAULT_MAX_RETRIES,
            Some(value) => integer(value, &format!("{prefix}.max_retries"), 1_000_000)?,
        };
        imported.notes.push(format!(
            "max_retries {max}: at most {max} concurrent retries per cluster, per Envoy"
        ));
        return Ok(concurrency(0.0, max));
    };
    let Value::Object(budget) = budget else {
        return Err(field_error(
            format!("{prefix}.retry_budget"),
            "must be an object",
        ));
    };
    refuse_unknown(
        budget,
        &format!("{prefix}.retry_budget"),
        &["budget_percent", "min_retry_concurrency"],
        &[],
    )?;
    let percent = match budget.get("budget_percent") {
        None => 20.0,
        Some(percent) => percent
            .get("value")
            .and_then(Value::as_f64)
            .filter(|p| (0.0..=100_000.0).contains(p))
            .ok_or_else(|| {
                field_error(
                    format!("{prefix}.retry_budget.budget_percent"),
                    "must be { value: N }, N a percentage",
                )
            })?,
    };
    let min = match budget.get("min_retry_concurrency") {
        None => 3,
        Some(min) => integer(
            min,
            &format!("{prefix}.retry_budget.min_retry_concurrency"),
            1_000_000,
        )?,
    };
    imported.notes.push(format!(
        "retry_budget: retries outstanding at most max({percent}% of the requests in flight, {min}), per process (one Envoy)"
    ));
    Ok(concurrency(percent, min))
}

/// The cluster's limits on requests in flight: `max_requests`, Envoy's 1024 if not written,
/// and, if the config writes `max_connections` or `max_pending_requests`, an HTTP/1.1 pool of
/// those (Envoy's 1024 each where not written). The circuit breakers were checked by
/// [`retry_limit`].
fn request_limit(
    breakers: Option<&Value>,
    imported: &mut Imported,
) -> Result<ControlSpec, ImportError> {
    let thresholds = breakers
        .and_then(|breakers| breakers.get("thresholds"))
        .and_then(|thresholds| thresholds.get(0));
    let read = |name: &str| -> Result<Option<u64>, ImportError> {
        thresholds
            .and_then(|thresholds| thresholds.get(name))
            .map(|value| {
                integer(
                    value,
                    &format!("circuit_breakers.thresholds[0].{name}"),
                    1_000_000_000,
                )
            })
            .transpose()
    };
    let (requests, connections, pending) = (
        read("max_requests")?,
        read("max_connections")?,
        read("max_pending_requests")?,
    );
    let max = requests.unwrap_or(DEFAULT_MAX_REQUESTS);
    imported.notes.push(format!(
        "max_requests {max}{}: at most {max} requests in flight per cluster, per Envoy; one more overflows (a local 503, never retried)",
        if requests.is_none() { " (Envoy's default)" } else { "" }
    ));
    let mut spec = ControlSpec {
        max_requests: Some(Bounded(max)),
        ..ControlSpec::empty(ControlKind::ConnectionPool)
    };
    if connections.is_some() || pending.is_some() {
        let (connections, pending) = (
            connections.unwrap_or(DEFAULT_HTTP1_LIMIT),
            pending.unwrap_or(DEFAULT_HTTP1_LIMIT),
        );
        imported.notes.push(format!(
            "max_connections {connections}, max_pending_requests {pending}: an HTTP/1.1 pool, one request a connection; a request that finds every connection busy waits, up to {pending} waiting"
        ));
        spec.max_connections = Some(Bounded(connections));
        spec.max_pending_requests = Some(Bounded(pending));
    }
    Ok(spec)
}
