//! An Istio `DestinationRule`'s `trafficPolicy.loadBalancer` and `outlierDetection`, read as
//! the service fleet's `load_balancer` and `outlier_detection` (a fleet's `import`).
//!
//! These two act on the instances of the service the rule is for, so they belong to its
//! fleet, while `connectionPool` limits each caller and is read by a policy's `import`
//! ([`super::istio::import_destination_rule`]). istiod writes them as the Envoy cluster's
//! `lb_policy` and `outlier_detection` (`pilot/pkg/networking/core/cluster_traffic_policy.go`):
//!
//! | DestinationRule | fleet |
//! |---|---|
//! | `loadBalancer.simple` `ROUND_ROBIN`, `RANDOM`, `LEAST_REQUEST` | `round-robin`, `random`, `least-request` |
//! | `loadBalancer.simple` `LEAST_CONN` (Istio's deprecated name of `LEAST_REQUEST`) | `least-request` |
//! | `loadBalancer.consistentHash` on `httpHeaderName` or `httpCookie` | `ring-hash` (the header or cookie taken to name the user, the key the model hashes) |
//! | no `loadBalancer`, or `simple: UNSPECIFIED` | `least-request`: what istiod writes when none is set, by a secondary reading of its code (`cluster_traffic_policy.go`); Istio's API reference says only that istiod picks "an appropriate default", so this is less sure than the rest |
//! | `outlierDetection.consecutive5xxErrors` (default 5; 0 refused, as it turns the counter off) | `consecutive_5xx` |
//! | `outlierDetection.interval` (default 10s) | `interval` |
//! | `outlierDetection.baseEjectionTime` (default 30s) | `base_ejection_time` |
//! | `outlierDetection.maxEjectionPercent` (default 10; 0 is unset, as istiod applies it only above 0) | `max_ejection_percent` |
//! | `outlierDetection.minHealthPercent` (default 0: never panic) | `panic_threshold` |
//! | no `outlierDetection` | none: Istio ejects nothing |
//!
//! The defaults are those of Istio's `OutlierDetection` reference. What the fleet model does
//! not have is refused by name: gateway errors counted apart (`consecutiveGatewayErrors` above
//! 0), local-origin failures counted apart, `PASSTHROUGH`, Maglev, hashing on the source
//! address or a query parameter, localities, slow start, subsets. `connectionPool` is the
//! callers' half, left with a note: the callers' `import` of the same file reads it.

use serde_json::{Map, Value};

use super::istio::{HALVES, metadata_name, traffic_policy};
use super::{ImportError, field_error, go_duration, integer, refuse_unknown};
use crate::base::time::Duration;
use crate::base::values::Bounded;
use crate::scenario::ImportedFleet;
use crate::scenario::fleet::{
    Balancer, DEFAULT_BASE_EJECTION_TIME, DEFAULT_CONSECUTIVE_FAILURES, DEFAULT_INTERVAL,
    DEFAULT_MAX_EJECTION_PERCENT, OutlierDetection,
};

/// Istio's `minHealthPercent` default: 0, the panic threshold off.
const DEFAULT_MIN_HEALTH_PERCENT: u64 = 0;

/// The largest `consecutive5xxErrors` read, as the fleet's `consecutive_5xx`.
const MAX_CONSECUTIVE: u64 = 1_000_000;

/// The fleet settings of a DestinationRule (the module's table says how).
pub fn import_fleet(config: &Map<String, Value>) -> Result<ImportedFleet, ImportError> {
    let traffic = traffic_policy(config, &HALVES, &[])?;
    let mut notes = Vec::new();
    if traffic.contains_key("connectionPool") {
        notes.push("connectionPool left to the callers: it limits each caller, and a [[policy]]'s or a tier retry's import of this file reads it".to_string());
    }
    let load_balancer = match traffic.get("loadBalancer") {
        None => Balancer::LeastRequest,
        Some(Value::Object(settings)) => balancer(settings)?,
        Some(_) => {
            return Err(field_error(
                "spec.trafficPolicy.loadBalancer",
                "must be an object",
            ));
        }
    };
    let outlier_detection = match traffic.get("outlierDetection") {
        None => None,
        Some(Value::Object(rules)) => Some(outlier_detection(rules, &mut notes)?),
        Some(_) => {
            return Err(field_error(
                "spec.trafficPolicy.outlierDetection",
                "must be an object",
            ));
        }
    };
    Ok(ImportedFleet {
        source: format!(
            "Istio DestinationRule {}, trafficPolicy.loadBalancer and outlierDetection",
            metadata_name(config)
        ),
        load_balancer,
        outlier_detection,
        notes,
    })
}

/// `trafficPolicy.loadBalancer` as a balancer.
fn balancer(settings: &Map<String, Value>) -> Result<Balancer, ImportError> {
    let prefix = "spec.trafficPolicy.loadBalancer";
    refuse_unknown(
        settings,
        prefix,
        &["simple", "consistentHash"],
        &[
            (
                "localityLbSetting",
                "localities are not simulated: a fleet is one locality",
            ),
            (
                "warmupDurationSecs",
                "slow start is not simulated: a new instance gets its full share at once",
            ),
            (
                "warmup",
                "slow start is not simulated: a new instance gets its full share at once",
            ),
        ],
    )?;
    match (settings.get("simple"), settings.get("consistentHash")) {
        (Some(_), Some(_)) => Err(field_error(
            prefix,
            "simple and consistentHash are alternatives; write one",
        )),
        (Some(simple), None) => {
            let field = format!("{prefix}.simple");
            match simple.as_str() {
                Some("ROUND_ROBIN") => Ok(Balancer::RoundRobin),
                Some("RANDOM") => Ok(Balancer::Random),
                Some("LEAST_REQUEST" | "LEAST_CONN" | "UNSPECIFIED") => Ok(Balancer::LeastRequest),
                Some("PASSTHROUGH") => Err(field_error(
                    field,
                    "not simulated: PASSTHROUGH sends each request to the address the caller chose, which the simulated callers never choose; use ROUND_ROBIN, RANDOM or LEAST_REQUEST",
                )),
                _ => Err(field_error(
                    field,
                    format!(
                        "{} is not a simple load balancer; the ones read are ROUND_ROBIN, RANDOM, LEAST_REQUEST, LEAST_CONN (as LEAST_REQUEST) and UNSPECIFIED (Istio's default, LEAST_REQUEST)",
                        crate::base::escape::user_text(&simple.to_string())
                    ),
                )),
            }
        }
        (None, Some(Value::Object(hash))) => {
            refuse_unknown(
                hash,
                &format!("{prefix}.consistentHash"),
                &["httpHeaderName", "httpCookie"],
                &[
                    (
                        "useSourceIp",
                        "the simulated users have no addresses; hash on a header or cookie that names the user",
                    ),
                    (
                        "httpQueryParameterName",
                        "the simulated requests have no query; hash on a header or cookie that names the user",
                    ),
                    (
                        "maglev",
                        "Maglev is not simulated; the ring hash is (remove maglev for it)",
                    ),
                    (
                        "ringHash",
                        "the ring's size is fixed at 1024 entries at least; remove ringHash",
                    ),
                    (
                        "minimumRingSize",
                        "the ring's size is fixed at 1024 entries at least; remove minimumRingSize",
                    ),
                ],
            )?;
            if hash.is_empty() {
                return Err(field_error(
                    format!("{prefix}.consistentHash"),
                    "required: httpHeaderName or httpCookie, naming the user",
                ));
            }
            Ok(Balancer::RingHash)
        }
        (None, Some(_)) => Err(field_error(
            format!("{prefix}.consistentHash"),
            "must be an object",
        )),
        (None, None) => Ok(Balancer::LeastRequest),
    }
}

/// `trafficPolicy.outlierDetection` as the fleet's, Istio's defaults for what it leaves out.
fn outlier_detection(
    rules: &Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<OutlierDetection, ImportError> {
    let prefix = "spec.trafficPolicy.outlierDetection";
    refuse_unknown(
        rules,
        prefix,
        &[
            "consecutive5xxErrors",
            "consecutiveGatewayErrors",
            "interval",
            "baseEjectionTime",
            "maxEjectionPercent",
            "minHealthPercent",
            "splitExternalLocalOriginErrors",
        ],
        &[
            (
                "consecutiveErrors",
                "it is Istio's deprecated name; write consecutive5xxErrors",
            ),
            (
                "consecutiveLocalOriginFailures",
                "local-origin failures (timeouts, resets) count with 5xx responses, as Envoy counts them unless splitExternalLocalOriginErrors",
            ),
        ],
    )?;
    let field = |name: &str| format!("{prefix}.{name}");
    let number = |name: &str, max: u64| {
        rules
            .get(name)
            .map(|value| integer(value, &field(name), max))
            .transpose()
    };
    let duration = |name: &str, default: u64| -> Result<Duration, ImportError> {
        let Some(value) = rules.get(name) else {
            return Ok(Duration(default));
        };
        let duration = go_duration(value, &field(name))?;
        if duration.micros() == 0 {
            return Err(field_error(field(name), "must be above zero"));
        }
        Ok(duration)
    };
    if let Some(split) = rules.get("splitExternalLocalOriginErrors")
        && split != &Value::Bool(false)
    {
        return Err(field_error(
            field("splitExternalLocalOriginErrors"),
            "not simulated: the fleet counts local-origin failures (timeouts, resets) with 5xx responses in one counter, as Envoy does by default; remove it (or write false) to simulate the rest",
        ));
    }
    if number("consecutiveGatewayErrors", MAX_CONSECUTIVE)?.is_some_and(|count| count > 0) {
        return Err(field_error(
            field("consecutiveGatewayErrors"),
            "not simulated: the fleet ejects on consecutive failures of any kind (consecutive5xxErrors), not on 502, 503 and 504 counted apart; remove it (Istio's default, off) or write the count as consecutive5xxErrors",
        ));
    }
    let consecutive = number("consecutive5xxErrors", MAX_CONSECUTIVE)?
        .unwrap_or(u64::from(DEFAULT_CONSECUTIVE_FAILURES));
    if consecutive == 0 {
        return Err(field_error(
            field("consecutive5xxErrors"),
            "0 turns ejection on 5xx off, and the fleet ejects on nothing else; remove outlierDetection for no ejection, or write 1 or more",
        ));
    }
    // istiod writes maxEjectionPercent only when above 0: 0 leaves Envoy's default, 10%.
    let max_ejection_percent = match number("maxEjectionPercent", 100)? {
        Some(0) => {
            notes.push(format!("outlierDetection.maxEjectionPercent 0: istiod applies it only when above 0, so 0 is unset, Envoy's {DEFAULT_MAX_EJECTION_PERCENT}%"));
            u64::from(DEFAULT_MAX_EJECTION_PERCENT)
        }
        Some(percent) => percent,
        None => u64::from(DEFAULT_MAX_EJECTION_PERCENT),
    };
    Ok(OutlierDetection {
        consecutive_5xx: Bounded(consecutive),
        interval: duration("interval", DEFAULT_INTERVAL)?,
        base_ejection_time: duration("baseEjectionTime", DEFAULT_BASE_EJECTION_TIME)?,
        max_ejection_time: None,
        max_ejection_percent: Bounded(max_ejection_percent),
        always_eject_one_host: false,
        panic_threshold: Bounded(
            number("minHealthPercent", 100)?.unwrap_or(DEFAULT_MIN_HEALTH_PERCENT),
        ),
    })
}
