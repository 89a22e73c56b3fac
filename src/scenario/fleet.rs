//! Fleets: a service run as several instances behind a load balancer, as a scenario writes it.
//!
//! Production services are fleets, and what saves or sinks one in an incident is usually one
//! bad instance of many and how its callers pick instances: round robin keeps sending a dead
//! host its share, least-request sends a host that fails fast more than its share, and a retry
//! that avoids the hosts already tried escapes a bad one. `fleet` on a
//! service makes it `instances` copies, each with the service's own `workers`, queue, limits,
//! crash and cold-start state; the caller picks one for each attempt.
//!
//! ```toml
//! fleet = { instances = 10, load_balancer = "least-request", capacity_instances = 1 }
//! ```
//!
//! `import` reads `load_balancer` and `outlier_detection` from the Istio DestinationRule a
//! team runs (`crate::import::istio_fleet`), the table's own settings winning.
//!
//! What is refused, at its place: more than [`MAX_INSTANCES`] instances, a `choice_count`
//! without `least-request` or outside 2 to [`MAX_CHOICES`], and `capacity_instances` above
//! `instances`.

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::{IdempotencyStore, InFlightRepeat, Problem, Service};
use crate::base::time::Duration;
use crate::base::values::Bounded;

// Envoy's outlier-detection defaults (`envoy.config.cluster.v3.OutlierDetection`, and the
// cluster's `healthy_panic_threshold`).
/// `consecutive_5xx`: 5 failures in a row eject.
pub const DEFAULT_CONSECUTIVE_FAILURES: u32 = 5;
/// `interval`: a sweep every 10 s.
pub const DEFAULT_INTERVAL: crate::base::time::Micros = 10 * crate::base::time::MICROS_PER_SECOND;
/// `base_ejection_time`: 30 s.
pub const DEFAULT_BASE_EJECTION_TIME: crate::base::time::Micros =
    30 * crate::base::time::MICROS_PER_SECOND;
/// `max_ejection_time` when unset and `base_ejection_time` is not longer: 300 s (Envoy's
/// `DEFAULT_MAX_EJECTION_TIME_MS = 10 * DEFAULT_BASE_EJECTION_TIME_MS`).
pub const DEFAULT_MAX_EJECTION_TIME: crate::base::time::Micros =
    300 * crate::base::time::MICROS_PER_SECOND;
/// `max_ejection_percent`: 10 %.
pub const DEFAULT_MAX_EJECTION_PERCENT: u32 = 10;
/// `healthy_panic_threshold`: 50 %.
pub const DEFAULT_PANIC_THRESHOLD: f64 = 50.0;

/// At most this many instances in one fleet.
pub const MAX_INSTANCES: u64 = 1000;
/// At most this many counts of requests outstanding per caller and instance, for
/// `least-request` (64 MiB).
pub const MAX_OUTSTANDING_COUNTS: u64 = 16 << 20;
/// At most this many hosts compared by `least-request`.
pub const MAX_CHOICES: u64 = 100;

/// `fleet = { ... }`: the service as `instances` copies behind a load balancer.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Fleet {
    /// The copies of the service, each with its own `workers` and queue.
    pub instances: Bounded<1, MAX_INSTANCES>,
    /// An Istio DestinationRule whose `trafficPolicy.loadBalancer` and `outlierDetection`
    /// give `load_balancer` and `outlier_detection` where the table does not write them;
    /// replaced by them when the scenario is loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<Spanned<String>>,
    /// How each caller picks an instance (default `round-robin`, Envoy's default `lb_policy`).
    #[serde(default)]
    pub load_balancer: Balancer,
    /// `least-request`: the hosts drawn (with replacement) for each pick, the one with the
    /// fewest requests outstanding kept (default 2, Envoy's `choice_count`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice_count: Option<Spanned<Bounded<2, MAX_CHOICES>>>,
    /// The instances the service's `capacity` curve applies to: the first ones, by index
    /// (default all). The others keep their full capacity: one bad host of many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_instances: Option<Spanned<Bounded<0, MAX_INSTANCES>>>,
    /// Each caller ejects an instance after consecutive failures, as Envoy's passive outlier
    /// detection does (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outlier_detection: Option<Spanned<OutlierDetection>>,
    /// Where the instances keep their idempotency keys (default `shared`).
    #[serde(default)]
    pub key_store: KeyStore,
}

/// Where a fleet's instances keep the idempotency keys they have seen. The writes themselves
/// always go to the fleet's one database.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyStore {
    /// One store for the fleet (a Redis or a table beside the data): a repeat is recognised
    /// whichever instance it reaches.
    #[default]
    Shared,
    /// Each instance its own (an in-process cache): a repeat that reaches another instance
    /// than the first is processed again, and a write is committed twice.
    PerInstance,
}

/// `outlier_detection = { ... }`: Envoy's `OutlierDetection` (consecutive 5xx) and the
/// cluster's `healthy_panic_threshold`, with Envoy's defaults.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutlierDetection {
    /// Failures in a row (5xx and local-origin failures: timeouts, resets) that eject (5).
    #[serde(default = "defaults::consecutive_5xx")]
    pub consecutive_5xx: Bounded<1, 1_000_000>,
    /// The time between sweeps that return ejected instances (10 s).
    #[serde(default = "defaults::interval")]
    pub interval: Duration,
    /// An ejection lasts this times the instance's ejections in a row (30 s).
    #[serde(default = "defaults::base_ejection_time")]
    pub base_ejection_time: Duration,
    /// The longest an ejection lasts (300 s, or `base_ejection_time` if longer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ejection_time: Option<Spanned<Duration>>,
    /// At most this percent of the instances ejected at once (10).
    #[serde(default = "defaults::max_ejection_percent")]
    pub max_ejection_percent: Bounded<0, 100>,
    /// One instance may be ejected whatever `max_ejection_percent` says (false).
    #[serde(default)]
    pub always_eject_one_host: bool,
    /// Below this percent of instances not ejected, callers ignore ejections (50; 0: never).
    #[serde(default = "defaults::panic_threshold")]
    pub panic_threshold: Bounded<0, 100>,
}

mod defaults {
    use super::{Bounded, Duration};
    use super::{
        DEFAULT_BASE_EJECTION_TIME, DEFAULT_CONSECUTIVE_FAILURES, DEFAULT_INTERVAL,
        DEFAULT_MAX_EJECTION_PERCENT, DEFAULT_PANIC_THRESHOLD,
    };

    pub fn consecutive_5xx() -> Bounded<1, 1_000_000> {
        Bounded(u64::from(DEFAULT_CONSECUTIVE_FAILURES))
    }
    pub fn interval() -> Duration {
        Duration(DEFAULT_INTERVAL)
    }
    pub fn base_ejection_time() -> Duration {
        Duration(DEFAULT_BASE_EJECTION_TIME)
    }
    pub fn max_ejection_percent() -> Bounded<0, 100> {
        Bounded(u64::from(DEFAULT_MAX_EJECTION_PERCENT))
    }
    pub fn panic_threshold() -> Bounded<0, 100> {
        Bounded(DEFAULT_PANIC_THRESHOLD as u64)
    }
}

/// The load-balancing policies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Balancer {
    /// Each caller cycles over the instances, from a random start (Envoy `ROUND_ROBIN`, gRPC
    /// `round_robin`).
    #[default]
    RoundRobin,
    /// A uniform draw for every pick (Envoy `RANDOM`).
    Random,
    /// `choice_count` uniform draws with replacement, the one with the fewest requests this
    /// caller has outstanding kept, the earlier draw on a tie (Envoy `LEAST_REQUEST`).
    LeastRequest,
    /// The first host at or after the hash of the user client on a ring of 1024 entries at
    /// least (Envoy `RING_HASH`, hashing a header that names the user): a user's requests
    /// always reach the same instance.
    RingHash,
}

/// Checks a service's `fleet` against itself; `callers` is how many scopes pick its
/// instances (the users' processes for the entry, every instance of every service for the
/// others).
pub(super) fn validate_fleet(service: &Service, callers: u64) -> Result<(), Problem> {
    let Some(spanned) = &service.fleet else {
        return Ok(());
    };
    let (fleet, span) = (spanned.get_ref(), spanned.span());
    let instances = fleet.instances.get();
    if instances > 1 {
        let not_yet = |what: &str| {
            Err((
                span.clone(),
                format!(
                    "a fleet of several instances with {what} is not modelled yet; use one instance (no `fleet`), or remove {what}"
                ),
            ))
        };
        if service.optimistic_row.is_some() {
            return not_yet("`optimistic_row` (one row, written at one place)");
        }
        if service.idempotency_in_flight == InFlightRepeat::Wait {
            return not_yet("idempotency_in_flight = \"wait\"");
        }
        let scopes = callers;
        if fleet.load_balancer == Balancer::LeastRequest
            && scopes.saturating_mul(instances) > MAX_OUTSTANDING_COUNTS
        {
            return Err((
                span,
                format!(
                    "least-request keeps a count per caller and instance: {scopes} callers x {instances} instances is more than {MAX_OUTSTANDING_COUNTS}; use fewer clients.processes or instances, or round-robin"
                ),
            ));
        }
    }
    if instances > 1
        && fleet.key_store == KeyStore::Shared
        && service.idempotency_store == IdempotencyStore::InMemory
    {
        return Err((
            span,
            "idempotency_store = \"in-memory\" keeps the keys in each instance's process, but key_store = \"shared\" (the default) keeps a fleet's keys in one store of their own: add key_store = \"per-instance\" for keys each instance loses when it crashes, or use idempotency_store = \"durable\"".into(),
        ));
    }
    if let Some(choices) = &fleet.choice_count
        && fleet.load_balancer != Balancer::LeastRequest
    {
        return Err((
            choices.span(),
            "choice_count is the number of hosts `least-request` compares; add load_balancer = \"least-request\" or remove choice_count".into(),
        ));
    }
    if let Some(count) = &fleet.capacity_instances
        && count.get_ref().get() > instances
    {
        return Err((
            count.span(),
            format!(
                "capacity_instances = {} is more than the fleet's {instances} instances; give 0 to {instances}",
                count.get_ref().get()
            ),
        ));
    }
    if let Some(detection) = &fleet.outlier_detection {
        let (rules, at) = (detection.get_ref(), detection.span());
        if rules.interval.micros() == 0 || rules.base_ejection_time.micros() == 0 {
            return Err((
                at,
                "outlier_detection's interval and base_ejection_time must be above zero (Envoy's defaults: 10s and 30s)".into(),
            ));
        }
        if let Some(most) = &rules.max_ejection_time
            && *most.get_ref() < rules.base_ejection_time
        {
            return Err((
                most.span(),
                format!(
                    "max_ejection_time {} is below base_ejection_time {}; it must be at least that",
                    most.get_ref(),
                    rules.base_ejection_time
                ),
            ));
        }
    }
    Ok(())
}
