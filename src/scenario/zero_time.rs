//! Operations that take no simulated time, and the least time an operation takes.
//!
//! A closed loop starts a client's next operation when its previous one ends plus a think time.
//! If the think time is zero and an operation can end at the instant it started, the client
//! starts operations at one instant forever: simulated time never advances and the run never
//! ends (issue 23: 681 MB after 10 s for one client, an abort at 5.9 GB for a hundred). Loading
//! refuses that combination, naming the zeros that make the loop ([`instant_ends`]); the engine
//! stops whatever slips through (`engine`'s same-instant guard).
//!
//! An operation ends at the instant it started along a path on which every delay is certainly
//! zero: a control that refuses the call locally (a circuit breaker while open, adaptive
//! throttling, the AWS adaptive limiter when its delay would pass the deadline); or, over a
//! network whose latency is certainly zero, an answer the service gives without work (a full
//! queue, an outage, a rate limit, errors, a concurrency limit, a collision) that the policy
//! does not retry after a wait, or a success whose work is certainly zero. A distribution that
//! is only sometimes zero (an exponential latency) does not loop forever, since each operation
//! then takes time with some probability; what it costs is in [`least_operation_micros`].

use super::{Outage, Policy, Scenario, Service};
use crate::control::ControlKind;
use crate::retry::retry_after::RetryAfterMode;
use crate::scenario::TransportError;

/// The ways an operation of `policy` can end at the very instant it started, whatever the
/// random draws, each said with the settings that make it (empty if every operation takes
/// time).
pub fn instant_ends(scenario: &Scenario, policy: &Policy) -> Vec<String> {
    let mut ends: Vec<String> = local_refusals(policy)
        .map(|kind| format!("the {kind} control refuses a call locally, at once"))
        .collect();
    let entry = scenario.entry();
    let Some(latency) = zero_latency(scenario, None, entry) else {
        return ends;
    };
    if let Some(success) = (0..scenario.clients.operations.len())
        .find_map(|operation| instant_success(scenario, entry, operation))
    {
        ends.push(format!("{latency} and {success}: a success takes no time"));
    }
    let service = scenario.services()[entry];
    for refusal in instant_refusals(service) {
        if let Some(why) = ends_at_once(scenario, policy, &refusal) {
            ends.push(format!(
                "{latency} and {}: {}, {why}",
                refusal.cause,
                refusal.answer()
            ));
        }
    }
    ends
}

/// Whether a control of `policy` can refuse its calls locally.
pub fn refuses_locally(policy: &Policy) -> bool {
    local_refusals(policy).next().is_some()
}

/// The least time an operation of `policy` takes on average, in microseconds, for an upper
/// bound on how many operations a closed loop can start: zero if a control can refuse it
/// locally, else one round trip over the network (a service can refuse at once; each way the
/// latency's [`crate::base::distribution::Distribution::least_mean_micros`]), cut short by the
/// attempt's timeout. Over a network without latency: zero if an operation can end at once
/// ([`instant_ends`]), else the least of a success's work and a retry's wait (full jitter's
/// first averages half the base).
pub fn least_operation_micros(scenario: &Scenario, policy: &Policy) -> f64 {
    if refuses_locally(policy) {
        return 0.0;
    }
    let timeout = policy
        .attempt_timeout
        .map_or(scenario.clients.attempt_timeout.micros(), |timeout| {
            timeout.limit_micros()
        })
        .min(
            policy
                .deadline
                .unwrap_or(scenario.clients.deadline)
                .micros(),
        ) as f64;
    let entry = scenario.services()[scenario.entry()].name();
    let round_trip = 2.0
        * scenario
            .link_network(None, entry)
            .latency
            .least_mean_micros();
    if round_trip > 0.0 {
        return round_trip.min(timeout);
    }
    if !instant_ends(scenario, policy).is_empty() {
        return 0.0;
    }
    let service = scenario.services()[scenario.entry()];
    let work = service
        .cache
        .as_ref()
        .map_or(service.service_time.mean_micros(), |cache| {
            (cache.get_ref().hit_time.micros() as f64).min(service.service_time.mean_micros())
        });
    work.min(policy.base.micros() as f64 / 2.0).min(timeout)
}

/// The controls of `policy` that can refuse a call locally.
fn local_refusals(policy: &Policy) -> impl Iterator<Item = ControlKind> + '_ {
    policy
        .controls
        .iter()
        .map(|control| control.get_ref().kind)
        .filter(|kind| kind.refuses_locally())
}

/// Why service `index` can answer a success with certainly no work (its own and that of every
/// service it calls for operation `operation`), over a network of no latency.
fn instant_success(scenario: &Scenario, index: usize, operation: usize) -> Option<String> {
    let services = scenario.services();
    let service = services[index];
    let own = if service.service_time.is_certainly_zero() {
        format!("{}.service_time = {}", service.name(), service.service_time)
    } else {
        let cache = service.cache.as_ref()?.get_ref();
        if cache.hit_time.micros() > 0 || cache.hit_ratio.get() <= 0.0 {
            return None;
        }
        format!("{}.cache hit_time = {}", service.name(), cache.hit_time)
    };
    let mut parts = vec![own];
    for call in super::routes::calls_for(scenario, operation, service).0 {
        let callee = services
            .iter()
            .position(|callee| callee.name_is(call.get_ref()))?;
        parts.push(zero_latency(scenario, Some(index), callee)?);
        parts.push(instant_success(scenario, callee, operation)?);
    }
    Some(parts.join(" and "))
}

/// The setting that makes the latency from `caller` (`None` for the clients) to service
/// `callee` certainly zero, as a scenario writes it; `None` if it is not.
fn zero_latency(scenario: &Scenario, caller: Option<usize>, callee: usize) -> Option<String> {
    let services = scenario.services();
    let caller = caller.map(|index| services[index].name());
    let callee = services[callee].name();
    let latency = scenario.link_network(caller, callee).latency;
    if !latency.is_certainly_zero() {
        return None;
    }
    let from = caller.unwrap_or(super::CLIENTS);
    let own_link = scenario.link.iter().any(|link| {
        let link = link.get_ref();
        link.from.get_ref() == from && link.to.get_ref() == callee
    });
    Some(if own_link {
        format!("the [[link]] from {from:?} to {callee:?} has latency = {latency}")
    } else {
        format!("network.latency = {latency}")
    })
}

/// An answer a service gives without doing the work.
struct Refusal {
    /// The settings that make it, as a scenario writes them.
    cause: String,
    /// Its status, or the failure without a response it is.
    answer: Answer,
    /// It carries a Retry-After.
    retry_after: bool,
}

/// What a refusal answers.
enum Answer {
    Status(u16),
    Transport(TransportError),
}

impl Refusal {
    fn answer(&self) -> String {
        match self.answer {
            Answer::Status(status) => format!("answered {status} at once"),
            Answer::Transport(_) => "refused at once".to_string(),
        }
    }
}

/// The answers `service` can give at once, without work: a full queue always can (enough
/// clients, a capacity dip), the others where the service has them.
fn instant_refusals(service: &Service) -> Vec<Refusal> {
    let name = service.name();
    let overload = Answer::Status(service.overload_status.get() as u16);
    let mut refusals = vec![Refusal {
        cause: format!(
            "{name}'s full queue (queue_limit = {})",
            service.queue_limit.get()
        ),
        answer: Answer::Status(service.overload_status.get() as u16),
        retry_after: service.retry_after.is_some(),
    }];
    // The curve is piecewise linear: its least value is at one of its points.
    let reaches_zero = service
        .capacity
        .iter()
        .any(|point| (service.workers.get() as f64 * point.factor.get()).floor() < 1.0);
    match service.outage {
        Outage::Reject if reaches_zero => refusals.push(Refusal {
            cause: format!("{name}.outage = \"reject\" while capacity is zero"),
            answer: overload,
            retry_after: service.retry_after.is_some(),
        }),
        Outage::Crash if reaches_zero => refusals.push(Refusal {
            cause: format!("{name}.outage = \"crash\" while capacity is zero"),
            answer: Answer::Transport(TransportError::Refused),
            retry_after: false,
        }),
        _ => {}
    }
    if service.crash.is_some() {
        refusals.push(Refusal {
            cause: format!("{name}.crash (connections refused while down)"),
            answer: Answer::Transport(TransportError::Refused),
            retry_after: false,
        });
    }
    if service.rate_limit.is_some() {
        refusals.push(Refusal {
            cause: format!("{name}.rate_limit"),
            answer: Answer::Status(429),
            retry_after: true,
        });
    }
    if let Some(errors) = service
        .errors
        .as_ref()
        .filter(|errors| errors.rate.get() > 0.0)
    {
        refusals.push(Refusal {
            cause: format!("{name}.errors (rate {})", errors.rate.get()),
            answer: Answer::Status(errors.status.get() as u16),
            retry_after: false,
        });
    }
    if let Some(limit) = &service.concurrency_limit {
        refusals.push(Refusal {
            cause: format!("{name}.concurrency_limit"),
            answer: Answer::Status(limit.get_ref().status.get() as u16),
            retry_after: false,
        });
    }
    if let Some(row) = &service.optimistic_row {
        refusals.push(Refusal {
            cause: format!("{name}.optimistic_row's collisions"),
            answer: Answer::Status(row.get_ref().collision_status.get() as u16),
            retry_after: false,
        });
    }
    refusals
}

/// Why `refusal` ends an operation of `policy` at once, if it can: the policy does not retry
/// it, a control may refuse the retry, the policy may decline it (`retry_probability`), or
/// every retry goes out at once (no backoff and no
/// Retry-After honoured), so that the retries end at the same instant too.
fn ends_at_once(scenario: &Scenario, policy: &Policy, refusal: &Refusal) -> Option<String> {
    if policy.max_attempts.get() == 0 {
        return Some(format!(
            "and policy {:?} has max_attempts = 0",
            policy.name.get_ref()
        ));
    }
    let retryable = match refusal.answer {
        Answer::Status(status) => policy
            .retryable_statuses
            .iter()
            .any(|retryable| retryable.get() as u16 == status),
        Answer::Transport(error) => policy.retryable_transport_errors.contains(&error),
    };
    if !retryable {
        return Some(format!(
            "which policy {:?} does not retry",
            policy.name.get_ref()
        ));
    }
    let unrepeatable = scenario.clients.operations.iter().find(|operation| {
        !crate::retry::decision::is_idempotent_method(operation.method.get_ref())
            && !operation.idempotency_key
            && !operation.status_endpoint
            && !policy.unsafe_retries
            && policy.idempotency_key != Some(true)
            && policy.status_endpoint != Some(true)
    });
    if let Some(operation) = unrepeatable {
        return Some(format!(
            "which operation {:?} ({}) cannot repeat",
            operation.name.get_ref(),
            operation.method.get_ref()
        ));
    }
    if let Some(kind) = policy
        .controls
        .iter()
        .map(|control| control.get_ref().kind)
        .find(|kind| kind.refuses_retries())
    {
        return Some(format!("whose retry the {kind} control may refuse"));
    }
    if policy.retry_probability.get() < 1.0 {
        return Some(format!(
            "whose retry policy {:?} may decline (retry_probability = {})",
            policy.name.get_ref(),
            policy.retry_probability.get()
        ));
    }
    let waits = refusal.retry_after && policy.retry_after != RetryAfterMode::Ignore;
    (policy.base.micros() == 0 && !waits).then(|| {
        format!(
            "retried at once (policy {:?} has base = {})",
            policy.name.get_ref(),
            policy.base
        )
    })
}
