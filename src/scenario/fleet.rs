//! Fleets: a service run as several instances behind a load balancer, as a scenario writes it.
//!
//! Production services are fleets, and what saves or sinks one in an incident is usually one
//! bad instance of many and how its callers pick instances: round robin keeps sending a dead
//! host its share, least-request sends a host that fails fast more than its share, and a retry
//! that avoids the hosts already tried escapes a bad one (`SYSTEMS.md` §1). `fleet` on a
//! service makes it `instances` copies, each with the service's own `workers`, queue, limits,
//! crash and cold-start state; the caller picks one for each attempt.
//!
//! ```toml
//! fleet = { instances = 10, load_balancer = "least-request", capacity_instances = 1 }
//! ```
//!
//! What is refused, at its place: more than [`MAX_INSTANCES`] instances, a `choice_count`
//! without `least-request` or outside 2 to [`MAX_CHOICES`], and `capacity_instances` above
//! `instances`.

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::{InFlightRepeat, Problem, Service};
use crate::base::values::Bounded;

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
    Ok(())
}
