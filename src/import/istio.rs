//! An Istio `VirtualService` HTTP route's `retries` and `timeout` (`networking.istio.io`,
//! `HTTPRetry`), read as the Envoy route `retry_policy` that istiod generates from them
//! (`pilot/pkg/networking/core/route/retry/retry.go`, `ConvertPolicy`), and a
//! `DestinationRule`'s `trafficPolicy.connectionPool`, read as the cluster's circuit breakers
//! it becomes.
//!
//! | config | Envoy `retry_policy` | policy |
//! |---|---|---|
//! | no `retries` | Istio's default policy: `num_retries` 2, `retry_on` `connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes`, no status listed (503 excluded since Istio 1.24, `EXCLUDE_UNSAFE_503_FROM_DEFAULT_RETRY`), `previous_hosts` with `host_selection_retry_max_attempts` 5 | `max_attempts = 2`, refused connections retried, `previous_hosts = 5` |
//! | `retries.attempts` (0 or unset: no retries) | `num_retries` | `max_attempts` |
//! | `retries.retryOn` (bare status codes such as `503` are listed in `retriable_status_codes`; unset: the default's) | `retry_on`, `retriable_status_codes` | as the Envoy importer maps them |
//! | `retries.perTryTimeout` | `per_try_timeout` | `attempt_timeout` (default `"none"`: the route timeout bounds every attempt) |
//! | `retries.backoff` | `retry_back_off.base_interval` (`max_interval` 10 x base) | `base`, `cap`, `jitter = "full"` |
//! | `retries.retryIgnorePreviousHosts` (default true) | the `previous_hosts` predicate | `previous_hosts = 5`, or 0 |
//! | `retries.retryRemoteLocalities` | `previous_priorities` | nothing: a simulated fleet is one locality |
//! | `timeout` (default: disabled) | the route timeout | `deadline`; without it the scenario's |
//!
//! The gRPC conditions of `retryOn` (`unavailable`, `cancelled`, ...) match a response's
//! `grpc-status`, which the simulated services (answering HTTP statuses) never send, so they
//! retry nothing here and say so. istiod sets the cluster's circuit breakers to 2^32 - 1
//! unless a `DestinationRule` sets them, so an imported route has no retry or request limit
//! (Envoy's default of 3 concurrent retries does not apply under Istio).
//!
//! The generated `retry_policy` has no `retriable_request_headers` (a VirtualService cannot
//! write one; only an EnvoyFilter can), so Envoy retries any request of the route whose failure
//! matches `retryOn`, whatever its method: `unsafe_retries = true`, as the Envoy importer sets
//! it (the notes say so). With `attempts` 0 there is no retry policy, and nothing to set.
//!
//! A route that injects faults, mirrors, redirects, answers directly or delegates does what
//! the simulator does not model, and is refused by name. With several routes,
//! `import_route` (`--route`) names the one read.

use serde_json::{Map, Value, json};

use super::{ImportError, Imported, field_error, go_duration, integer, refuse_unknown};
use crate::base::time::{Duration, MICROS_PER_SECOND};
use crate::base::values::{Bounded, BudgetPercent};
use crate::control::ControlKind;
use crate::scenario::ControlSpec;

/// Istio's default `retry_on` (`retry.go`, `defaultPolicy`).
pub const DEFAULT_RETRY_ON: &str =
    "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes";
/// Istio's default `num_retries`.
pub const DEFAULT_RETRIES: u64 = 2;
/// Istio's `host_selection_retry_max_attempts`, fixed.
pub const HOST_SELECTION_RETRY_MAX_ATTEMPTS: u64 = 5;
/// The largest limit a connection-pool control takes: Istio's "unlimited" (2^32 - 1) is read
/// as this.
const UNLIMITED: u64 = 1_000_000_000;

/// The `retryOn` conditions that match a gRPC status only.
const GRPC_CONDITIONS: [&str; 5] = [
    "cancelled",
    "deadline-exceeded",
    "internal",
    "resource-exhausted",
    "unavailable",
];

/// Imports the HTTP route of a VirtualService named by `route` (or its only one).
pub fn import_virtual_service(
    config: &Map<String, Value>,
    route: Option<&str>,
) -> Result<Imported, ImportError> {
    let spec = resource_spec(config)?;
    refuse_unknown(
        spec,
        "spec",
        &["hosts", "gateways", "http", "tcp", "tls", "exportTo"],
        &[],
    )?;
    let routes = match spec.get("http") {
        Some(Value::Array(routes)) if !routes.is_empty() => routes,
        _ => {
            return Err(field_error(
                "spec.http",
                "required: a list of HTTP routes (tcp and tls routes have no retries)",
            ));
        }
    };
    let name_of = |entry: &Value| {
        entry
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let names = || {
        routes
            .iter()
            .enumerate()
            .map(|(index, entry)| match name_of(entry) {
                Some(name) => crate::base::escape::user_text(&name).into_owned(),
                None => format!("http[{index}] (unnamed)"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let index = match route {
        Some(wanted) => routes
            .iter()
            .position(|entry| name_of(entry).as_deref() == Some(wanted))
            .ok_or_else(|| {
                field_error(
                    "spec.http",
                    format!(
                        "no route named {:?}; the routes are {}",
                        crate::base::escape::user_text(wanted),
                        names()
                    ),
                )
            })?,
        None if routes.len() == 1 => 0,
        None => {
            return Err(field_error(
                "spec.http",
                format!(
                    "several routes ({}); choose one by its name with import_route (or --route)",
                    names()
                ),
            ));
        }
    };
    let prefix = format!("spec.http[{index}]");
    let Value::Object(entry) = &routes[index] else {
        return Err(field_error(prefix, "must be an object"));
    };
    refuse_unknown(
        entry,
        &prefix,
        &[
            "name",
            "match",
            "route",
            "rewrite",
            "headers",
            "corsPolicy",
            "retries",
            "timeout",
        ],
        &[
            (
                "fault",
                "fault injection is not simulated; write the failures as the services' incidents",
            ),
            ("mirror", "mirrored traffic is not simulated"),
            ("mirrors", "mirrored traffic is not simulated"),
            ("mirrorPercentage", "mirrored traffic is not simulated"),
            ("mirrorPercent", "mirrored traffic is not simulated"),
            ("redirect", "a redirect answers without calling upstream"),
            (
                "directResponse",
                "a direct response answers without calling upstream",
            ),
            (
                "delegate",
                "the delegate VirtualService holds the routes: import that one",
            ),
        ],
    )?;
    let mut imported = Imported {
        source: format!(
            "Istio VirtualService {}, {prefix}{}",
            metadata_name(config),
            name_of(&routes[index])
                .map(|name| format!(" ({})", crate::base::escape::user_text(&name)))
                .unwrap_or_default()
        ),
        jitter: Some(crate::retry::backoff::Jitter::Full),
        ..Imported::default()
    };
    let policy = envoy_policy(entry.get("retries"), &prefix, &mut imported)?;
    match policy {
        Some(policy) => {
            super::envoy::read_retry_policy(&policy, &mut imported)
                .map_err(|error| istio_field(error, &prefix))?;
        }
        None => {
            imported.max_attempts = Some(0);
            imported.notes.push(
                "retries.attempts 0: istiod writes no retry policy, so Envoy does not retry".into(),
            );
        }
    }
    match entry.get("timeout") {
        Some(timeout) => {
            let timeout = go_duration(timeout, &format!("{prefix}.timeout"))?;
            if timeout.micros() == 0 {
                imported.notes.push("timeout 0s: the route timeout is disabled, so the call's deadline is the scenario's".into());
            } else {
                imported.deadline = Some(timeout);
                imported.notes.push(format!(
                    "timeout {timeout}: the route timeout bounds the call and all its attempts: the deadline"
                ));
            }
        }
        None => imported.notes.push(
            "no timeout: Istio disables the route timeout, so the call's deadline is the scenario's (the clients' `deadline`, or a tier's propagated one)".into(),
        ),
    }
    imported.notes.push(
        "istiod sets the cluster's circuit breakers to 2^32 - 1 unless a DestinationRule sets them: no limit on concurrent retries or requests (Envoy's default of 3 concurrent retries does not apply)".into(),
    );
    Ok(imported)
}

/// The Envoy `retry_policy` istiod writes for `retries` (absent: its default), or `None` for
/// no retries (`attempts` 0 or unset).
fn envoy_policy(
    retries: Option<&Value>,
    prefix: &str,
    imported: &mut Imported,
) -> Result<Option<Map<String, Value>>, ImportError> {
    let mut policy = Map::new();
    policy.insert("num_retries".into(), json!(DEFAULT_RETRIES));
    policy.insert(
        "host_selection_retry_max_attempts".into(),
        json!(HOST_SELECTION_RETRY_MAX_ATTEMPTS),
    );
    policy.insert(
        "retry_host_predicate".into(),
        json!([{ "name": "envoy.retry_host_predicates.previous_hosts" }]),
    );
    let mut retry_on = DEFAULT_RETRY_ON.to_string();
    let mut codes: Vec<u64> = Vec::new();
    match retries {
        None => imported.notes.push(format!(
            "no retries: Istio's default policy, {DEFAULT_RETRIES} retries on {DEFAULT_RETRY_ON} with no status listed (503 is excluded since Istio 1.24; to simulate an older Istio, write retryOn with 503)"
        )),
        Some(Value::Object(retries)) => {
            let prefix = format!("{prefix}.retries");
            refuse_unknown(
                retries,
                &prefix,
                &[
                    "attempts",
                    "perTryTimeout",
                    "retryOn",
                    "retryRemoteLocalities",
                    "retryIgnorePreviousHosts",
                    "backoff",
                ],
                &[],
            )?;
            let attempts = match retries.get("attempts") {
                None => 0,
                Some(value) => integer(value, &format!("{prefix}.attempts"), 100)?,
            };
            if attempts == 0 {
                return Ok(None);
            }
            policy.insert("num_retries".into(), json!(attempts));
            if let Some(value) = retries.get("retryOn") {
                let text = value.as_str().ok_or_else(|| {
                    field_error(
                        format!("{prefix}.retryOn"),
                        "must be a comma-separated list of conditions and statuses",
                    )
                })?;
                if !text.trim().is_empty() {
                    let mut conditions = Vec::new();
                    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                        match part.parse::<u64>() {
                            Ok(code) if (100..=599).contains(&code) => codes.push(code),
                            _ => conditions.push(part),
                        }
                    }
                    // retry.go adds retriable-status-codes when codes are listed.
                    if !codes.is_empty() && !conditions.contains(&"retriable-status-codes") {
                        conditions.push("retriable-status-codes");
                    }
                    retry_on = conditions.join(",");
                }
            }
            if let Some(timeout) = retries.get("perTryTimeout") {
                let timeout = go_duration(timeout, &format!("{prefix}.perTryTimeout"))?;
                if timeout.micros() == 0 {
                    return Err(field_error(
                        format!("{prefix}.perTryTimeout"),
                        "must be above zero",
                    ));
                }
                policy.insert("per_try_timeout".into(), json!(envoy_seconds(timeout)));
            }
            if let Some(base) = retries.get("backoff") {
                let base = go_duration(base, &format!("{prefix}.backoff"))?;
                if base.micros() == 0 {
                    return Err(field_error(format!("{prefix}.backoff"), "must be above zero"));
                }
                policy.insert(
                    "retry_back_off".into(),
                    json!({ "base_interval": envoy_seconds(base) }),
                );
            }
            match retries.get("retryIgnorePreviousHosts") {
                None | Some(Value::Bool(true)) => {}
                Some(Value::Bool(false)) => {
                    policy.remove("retry_host_predicate");
                }
                Some(_) => {
                    return Err(field_error(
                        format!("{prefix}.retryIgnorePreviousHosts"),
                        "must be true or false",
                    ));
                }
            }
            match retries.get("retryRemoteLocalities") {
                None | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) => imported.notes.push(
                    "retryRemoteLocalities true: a retry may go to another locality; a simulated fleet is one locality, so it changes nothing here".into(),
                ),
                Some(_) => {
                    return Err(field_error(
                        format!("{prefix}.retryRemoteLocalities"),
                        "must be true or false",
                    ));
                }
            }
        }
        Some(_) => return Err(field_error(format!("{prefix}.retries"), "must be an object")),
    }
    let (grpc, http): (Vec<&str>, Vec<&str>) = retry_on
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .partition(|c| GRPC_CONDITIONS.contains(c));
    if !grpc.is_empty() {
        imported.notes.push(format!(
            "{}: gRPC conditions match a response's grpc-status; the simulated services answer HTTP statuses, so they retry nothing here",
            grpc.join(", ")
        ));
    }
    policy.insert("retry_on".into(), json!(http.join(",")));
    if !codes.is_empty() {
        policy.insert("retriable_status_codes".into(), json!(codes));
    }
    Ok(Some(policy))
}

/// `micros` as Envoy's decimal seconds.
fn envoy_seconds(duration: Duration) -> String {
    let micros = duration.micros();
    format!(
        "{}.{:06}s",
        micros / MICROS_PER_SECOND,
        micros % MICROS_PER_SECOND
    )
}

/// An error of the generated Envoy policy, its field named as the VirtualService writes it.
fn istio_field(error: ImportError, prefix: &str) -> ImportError {
    const NAMES: [(&str, &str); 6] = [
        ("retry_policy.retry_on", "retries.retryOn"),
        ("retry_policy.retriable_status_codes", "retries.retryOn"),
        ("retry_policy.num_retries", "retries.attempts"),
        ("retry_policy.per_try_timeout", "retries.perTryTimeout"),
        (
            "retry_policy.retry_back_off.base_interval",
            "retries.backoff",
        ),
        (
            "retry_policy.retry_back_off.max_interval",
            "retries.backoff",
        ),
    ];
    let field = NAMES
        .iter()
        .find(|(envoy, _)| *envoy == error.field)
        .map_or_else(
            || format!("{prefix} (as Envoy's {})", error.field),
            |(_, istio)| format!("{prefix}.{istio}"),
        );
    ImportError { field, ..error }
}

/// A DestinationRule's `trafficPolicy.connectionPool` as the cluster circuit breakers istiod
/// writes from it (`cluster_traffic_policy.go`, `applyConnectionPool`): `http.maxRetries` the
/// concurrent retries (a 0% `retry-budget` with that `min_concurrency`), `http.http2MaxRequests`
/// the requests in flight, `tcp.maxConnections` and `http.http1MaxPendingRequests` an HTTP/1.1
/// pool (a `connection-pool` control). What is unset, or 0 (istiod writes only limits above
/// 0), stays Istio's 2^32 - 1, unlimited. Outlier detection and load balancing belong to the
/// service's fleet, whose `import` of the same file reads them ([`super::istio_fleet`]); here
/// they are left with a note.
pub fn import_destination_rule(config: &Map<String, Value>) -> Result<Imported, ImportError> {
    let traffic = traffic_policy(config, &HALVES, &[])?;
    let fleet_half = present(traffic, &FLEET_HALF);
    let Some(Value::Object(pool)) = traffic.get("connectionPool") else {
        return Err(field_error(
            "spec.trafficPolicy.connectionPool",
            if fleet_half.is_empty() {
                "required: an object with tcp and http settings".to_string()
            } else {
                format!(
                    "required: an object with tcp and http settings, the half a caller's import reads; this rule's {} are its service's fleet's: import it there (fleet = {{ import = ... }})",
                    fleet_half.join(" and ")
                )
            },
        ));
    };
    let prefix = "spec.trafficPolicy.connectionPool";
    refuse_unknown(pool, prefix, &["tcp", "http"], &[])?;
    let mut imported = Imported {
        source: format!(
            "Istio DestinationRule {}, trafficPolicy.connectionPool",
            metadata_name(config)
        ),
        ..Imported::default()
    };
    if !fleet_half.is_empty() {
        imported.notes.push(format!(
            "{} left to the service's fleet: they act on its instances, and its fleet.import of this file reads them",
            fleet_half.join(" and ")
        ));
    }
    let section = |name: &str| -> Result<Option<&Map<String, Value>>, ImportError> {
        match pool.get(name) {
            None => Ok(None),
            Some(Value::Object(section)) => Ok(Some(section)),
            Some(_) => Err(field_error(format!("{prefix}.{name}"), "must be an object")),
        }
    };
    let (tcp, http) = (section("tcp")?, section("http")?);
    if let Some(tcp) = tcp {
        refuse_unknown(
            tcp,
            &format!("{prefix}.tcp"),
            &["maxConnections", "connectTimeout"],
            &[
                ("tcpKeepalive", "TCP keepalives are not simulated"),
                (
                    "maxConnectionDuration",
                    "connection lifetimes are not simulated",
                ),
                ("idleTimeout", "idle connections are not simulated"),
            ],
        )?;
        if tcp.contains_key("connectTimeout") {
            imported.notes.push("tcp.connectTimeout: connection setup is not simulated (a refused connection fails at once)".into());
        }
    }
    if let Some(http) = http {
        refuse_unknown(
            http,
            &format!("{prefix}.http"),
            &[
                "http1MaxPendingRequests",
                "http2MaxRequests",
                "maxRetries",
                "maxRequestsPerConnection",
            ],
            &[
                ("idleTimeout", "idle connections are not simulated"),
                (
                    "h2UpgradePolicy",
                    "the HTTP version of a connection is not simulated",
                ),
                (
                    "useClientProtocol",
                    "the HTTP version of a connection is not simulated",
                ),
                ("maxConcurrentStreams", "HTTP/2 streams are not simulated"),
            ],
        )?;
        if http.contains_key("maxRequestsPerConnection") {
            imported.notes.push("http.maxRequestsPerConnection: connection reuse is not simulated (an HTTP/1.1 connection carries one request at a time, without setup cost)".into());
        }
    }
    // istiod writes each limit into Envoy only when it is above 0 (it cannot tell an unset
    // field from 0), so a 0 is Istio's default, unlimited.
    let mut zeros: Vec<String> = Vec::new();
    let mut read = |section: Option<&Map<String, Value>>, name: &str, part: &str| {
        let value = section
            .and_then(|section| section.get(name))
            .map(|value| integer(value, &format!("{prefix}.{part}.{name}"), UNLIMITED))
            .transpose()?;
        if value == Some(0) {
            zeros.push(format!("{part}.{name}"));
        }
        Ok::<_, ImportError>(value.filter(|&limit| limit > 0))
    };
    let max_retries = read(http, "maxRetries", "http")?;
    let max_requests = read(http, "http2MaxRequests", "http")?;
    let max_pending = read(http, "http1MaxPendingRequests", "http")?;
    let max_connections = read(tcp, "maxConnections", "tcp")?;
    if !zeros.is_empty() {
        imported.notes.push(format!(
            "{} 0: istiod applies these only when above 0, so 0 is unset, Istio's 2^32 - 1 (unlimited)",
            zeros.join(", ")
        ));
    }
    if let Some(max) = max_retries {
        imported.notes.push(format!(
            "http.maxRetries {max}: at most {max} concurrent retries per cluster, per Envoy (a 0% retry budget with min_concurrency {max})"
        ));
        imported.controls.push(ControlSpec {
            percent: Some(BudgetPercent(0.0)),
            min_concurrency: Some(Bounded(max)),
            ..ControlSpec::empty(ControlKind::RetryBudget)
        });
    } else {
        imported
            .notes
            .push("no http.maxRetries: Istio's 2^32 - 1, no limit on concurrent retries".into());
    }
    if max_requests.is_some() || max_connections.is_some() || max_pending.is_some() {
        let http1 = max_connections.is_some() || max_pending.is_some();
        let shown = |value: Option<u64>| {
            value.map_or("unlimited (Istio's 2^32 - 1)".to_string(), |v| {
                v.to_string()
            })
        };
        imported.notes.push(format!(
            "a connection pool per Envoy: http2MaxRequests {} in flight{}; one more overflows (a local 503, never retried)",
            shown(max_requests),
            if http1 {
                format!(
                    ", as HTTP/1.1: maxConnections {}, http1MaxPendingRequests {} waiting for a connection",
                    shown(max_connections),
                    shown(max_pending)
                )
            } else {
                String::new()
            }
        ));
        imported.controls.push(ControlSpec {
            max_requests: Some(Bounded(max_requests.unwrap_or(UNLIMITED))),
            max_connections: http1.then(|| Bounded(max_connections.unwrap_or(UNLIMITED))),
            max_pending_requests: http1.then(|| Bounded(max_pending.unwrap_or(UNLIMITED))),
            ..ControlSpec::empty(ControlKind::ConnectionPool)
        });
    }
    imported.notes.push(
        "a DestinationRule sets no retries: the policy's retry settings are the scenario's (write the route's own, or import its VirtualService in another policy and copy these controls)".into(),
    );
    Ok(imported)
}

/// A DestinationRule's `trafficPolicy` settings: the callers' half and the fleet's half. One
/// file serves both imports, each reading its half and leaving the other with a note.
pub(crate) const HALVES: [&str; 3] = ["connectionPool", "loadBalancer", "outlierDetection"];
/// The half a fleet's `import` reads ([`super::istio_fleet`]).
pub(crate) const FLEET_HALF: [&str; 2] = ["loadBalancer", "outlierDetection"];

/// Which of `names` `traffic` writes, in that order.
pub(crate) fn present<'n>(traffic: &Map<String, Value>, names: &[&'n str]) -> Vec<&'n str> {
    names
        .iter()
        .copied()
        .filter(|name| traffic.contains_key(*name))
        .collect()
}

/// A DestinationRule's `spec.trafficPolicy`, refusing what neither of its imports models: the
/// settings read are `read`; `elsewhere` are refused with why.
pub(crate) fn traffic_policy<'c>(
    config: &'c Map<String, Value>,
    read: &[&str],
    elsewhere: &[(&str, &str)],
) -> Result<&'c Map<String, Value>, ImportError> {
    let spec = resource_spec(config)?;
    refuse_unknown(
        spec,
        "spec",
        &["host", "trafficPolicy", "exportTo", "workloadSelector"],
        &[(
            "subsets",
            "subsets pick instances by label, which the simulated fleets do not have",
        )],
    )?;
    let Some(Value::Object(traffic)) = spec.get("trafficPolicy") else {
        return Err(field_error(
            "spec.trafficPolicy",
            format!("required: an object with {}", read.join(" or ")),
        ));
    };
    let mut unmodelled = elsewhere.to_vec();
    unmodelled.extend([
        ("portLevelSettings", "ports are not simulated"),
        ("tls", "TLS is not simulated"),
        ("tunnel", "tunnels are not simulated"),
        ("proxyProtocol", "the PROXY protocol is not simulated"),
    ]);
    refuse_unknown(traffic, "spec.trafficPolicy", read, &unmodelled)?;
    Ok(traffic)
}

/// The `spec` of a Kubernetes resource, its other top-level fields checked.
pub(crate) fn resource_spec(
    config: &Map<String, Value>,
) -> Result<&Map<String, Value>, ImportError> {
    refuse_unknown(
        config,
        "",
        &["apiVersion", "kind", "metadata", "spec", "status"],
        &[],
    )?;
    match config.get("spec") {
        Some(Value::Object(spec)) => Ok(spec),
        _ => Err(field_error("spec", "required: an object")),
    }
}

/// `metadata.name`, for the source line.
pub(crate) fn metadata_name(config: &Map<String, Value>) -> String {
    config
        .get("metadata")
        .and_then(|metadata| metadata.get("name"))
        .and_then(Value::as_str)
        .map_or("(unnamed)".into(), |name| {
            crate::base::escape::user_text(name).into_owned()
        })
}
