//! The validated model one simulation runs: no spans, no names to look up, no defaults left.
//!
//! A [`Scenario`] is what the file says, with the spans its errors need. The engine wants
//! something else on its hot path: durations in [`Micros`], statuses as `u16`, probabilities
//! as checked numbers, service names resolved to indices, curves built once, and every
//! per-policy choice (the policy's overrides of the topology, its idempotency-key and deadline
//! settings) already applied. [`Model::new`] builds that, once per simulated policy, from a
//! validated scenario; nothing downstream of it reads the scenario types.

mod contention;
mod describe;
pub mod outlier;
pub mod overload;

pub use contention::ContentionModel;

pub use describe::{
    CallerText, EffectivePolicies, PolicyText, attempt_timeout_text, effective_policies,
    service_failures,
};

use crate::base::capacity::CapacityCurve;
use crate::base::distribution::Distribution;
use crate::control::{ControlKind, ControlModel, Scope};
use crate::retry::backoff::Jitter;
use crate::retry::decision::{StatusSet, is_idempotent_method};
use crate::retry::retry_after::RetryAfterMode;
use crate::scenario::incident::Window as IncidentWindow;
use crate::scenario::manual_retry::{KeyReuse, ManualRetry, Trigger};
use crate::vocabulary::metric::{HealthRule, Incident};
use toml::Spanned;

use crate::base::time::{MICROS_PER_SECOND, Micros};
use crate::base::values::{Bounded, Probability};
use crate::scenario::fleet::{Balancer, KeyStore};
use crate::scenario::routes::{self, FanOut};
use crate::scenario::{
    CacheFill, CallDeadline, CallRetry, ConcurrencyLimit, ControlSpec, DeadlineCheck,
    DisciplineKind, ErrorsAt, IdempotencyStore, InFlightRepeat, LimitKind, LinkNetwork, Outage,
    Policy, QueueDiscipline, RateLimitScope, Scenario, ServerKind, Service, Start, TransportError,
    Workload,
};
use outlier::OutlierModel;
use overload::{
    DEFAULT_INTERVAL, DEFAULT_TARGET, Discipline, EnvoyGradientConfig, Gradient2Config,
    LimitAlgorithm, VegasConfig,
};

/// A service's position in [`Model::services`].
pub type ServiceId = u16;

/// Everything one simulation of one policy needs.
#[derive(Debug, Clone)]
pub struct Model {
    /// Seed of every random stream.
    pub seed: u64,
    /// Operations start until this time.
    pub duration: Micros,
    /// Width of a time-series bucket.
    pub bucket: Micros,
    /// The user clients.
    pub users: Users,
    /// The network of each edge, between the users and the entry service
    /// ([`USERS_LINK`]) and between a service and each it calls
    /// ([`ServiceModel::call_links`]).
    pub links: Vec<Link>,
    /// The services, as the policy sees them (its overrides applied).
    pub services: Vec<ServiceModel>,
    /// The service the users call.
    pub entry: ServiceId,
    /// When a time bucket counts as healthy, for `recovery_s`.
    pub health: HealthRule,
    /// The incident's start and end (`None`: not over by the end of arrivals), if there is
    /// one: the scenario's resolved `[incident]`.
    pub incident: Option<IncidentWindow>,
}

/// The user clients: who starts operations, what they call, and how they retry.
#[derive(Debug, Clone)]
pub struct Users {
    /// Number of clients.
    pub count: u64,
    /// How operations start.
    pub workload: Arrivals,
    /// The endpoints, with cumulative weights for drawing one.
    pub endpoints: Vec<Endpoint>,
    /// The policy under test.
    pub policy: CallerPolicy,
    /// The processes the clients run in, for controls kept per process.
    pub processes: u64,
    /// Users who retry by hand, if they do.
    pub manual_retry: Option<ManualRetryModel>,
}

/// Users who retry by hand (a policy's `manual_retry`): when they start an operation again.
#[derive(Debug, Clone)]
pub struct ManualRetryModel {
    /// A failed operation makes them press again.
    pub on_failure: bool,
    /// They give up on an operation after this long and may press again.
    pub patience: Option<Micros>,
    /// The chance that they press again.
    pub probability: f64,
    /// The time between giving up and pressing again.
    pub delay: Distribution,
    /// The most presses after the first, per intent.
    pub max: u8,
    /// Each press carries a key of its own (else the first press's).
    pub new_key: bool,
}

impl std::fmt::Display for ManualRetryModel {
    /// `after a failure or 8s, 60% press again after exponential, mean 3s, at most 2 times,
    /// a new key each`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let patience = self
            .patience
            .map(|patience| crate::base::time::Duration(patience).to_string());
        let when = match (self.on_failure, patience) {
            (true, Some(patience)) => format!("after a failure or {patience}"),
            (true, None) => "after a failure".to_string(),
            (false, Some(patience)) => format!("after {patience}"),
            (false, None) => unreachable!("validated: a trigger at least"),
        };
        write!(
            f,
            "{when}, {}% press again after {}, at most {} time{}, {}",
            self.probability * 100.0,
            self.delay,
            self.max,
            if self.max == 1 { "" } else { "s" },
            if self.new_key {
                "a new key each"
            } else {
                "the first key"
            }
        )
    }
}

impl ManualRetryModel {
    fn new(manual: &ManualRetry) -> ManualRetryModel {
        ManualRetryModel {
            on_failure: manual.on(Trigger::Failure),
            patience: manual
                .patience
                .as_ref()
                .filter(|_| manual.on(Trigger::Impatience))
                .map(|patience| patience.get_ref().micros()),
            probability: manual.probability.get(),
            delay: manual.delay.clone(),
            max: manual.max.get() as u8,
            new_key: manual.key == KeyReuse::New,
        }
    }
}

/// How operations start.
#[derive(Debug, Clone)]
pub enum Arrivals {
    /// Arrivals at `count * rate` per second, shaped by an optional load curve.
    Open {
        /// Mean time between arrivals at a load factor of 1, in microseconds.
        mean_gap_us: f64,
        /// The load curve, if the rate changes over time; arrivals are thinned to it.
        load: Option<CapacityCurve>,
        /// The curve's highest factor (1 without a curve).
        load_peak: f64,
        /// How arrivals bunch, at that mean rate.
        process: crate::scenario::arrivals::ArrivalProcess,
    },
    /// One operation at a time per client.
    Closed {
        /// Mean think time between operations, in microseconds.
        think_mean_us: f64,
        /// Every client starts at time zero (else after a think time).
        together: bool,
    },
}

/// An endpoint, with what the engine needs of it precomputed.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The operation's name (`[[clients.operations]]`'s `name`).
    pub name: String,
    /// Sum of the weights of this endpoint and those before it.
    pub cumulative_weight: f64,
    /// The method is idempotent (RFC 9110).
    pub idempotent_method: bool,
    /// Requests carry an idempotency key.
    pub idempotency_key: bool,
    /// The caller can ask a status endpoint after a failure without a response.
    pub status_endpoint: bool,
}

/// How a caller (the user clients, or a service calling the next one) retries.
#[derive(Debug, Clone)]
pub struct CallerPolicy {
    /// Base delay, ms, as the decision takes it.
    pub base_ms: f64,
    /// Cap of the exponential backoff, ms.
    pub cap_ms: f64,
    /// Retries allowed after the first attempt; 0 means the caller never retries.
    pub max_attempts: u32,
    /// The backoff's growth per retry.
    pub multiplier: f64,
    /// The statuses the decision may retry.
    pub retryable: StatusSet,
    /// The failures without a response the decision may retry; the others reach it as no
    /// signal at all, which it does not retry (`not-transient`).
    pub retryable_transport: TransportErrors,
    /// How the backoff is spread.
    pub jitter: Jitter,
    /// How Retry-After is treated.
    pub retry_after: RetryAfterMode,
    /// Repeat non-repeatable requests anyway.
    pub unsafe_retries: bool,
    /// Timeout of one attempt; [`Micros::MAX`] for none (an attempt may take the time left).
    pub attempt_timeout: Micros,
    /// The budget of a whole call.
    pub deadline: Deadline,
    /// Client-side overload controls, in the order they are asked.
    pub controls: Vec<ControlModel>,
    /// A retry to a fleet draws a host it already tried again, up to this many times
    /// (Envoy's `previous_hosts` with `host_selection_retry_max_attempts`; 0: off).
    pub previous_hosts: u32,
    /// Hedged requests instead of retries.
    pub hedging: Option<HedgingModel>,
    /// The chance that a retry the decision allows is made (1: always); a retry not made ends
    /// the call, `retry-declined`.
    pub retry_probability: f64,
}

/// A set of [`TransportError`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportErrors([bool; 3]);

impl TransportErrors {
    /// The set of the errors `list` names.
    pub fn of(list: &[TransportError]) -> TransportErrors {
        let mut set = [false; 3];
        for &error in list {
            set[error as usize] = true;
        }
        TransportErrors(set)
    }

    /// Whether `error` is in the set.
    #[inline]
    pub fn contains(self, error: TransportError) -> bool {
        self.0[error as usize]
    }

    /// The errors in the set, in [`TransportError::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = TransportError> {
        TransportError::ALL
            .into_iter()
            .filter(move |&error| self.contains(error))
    }
}

/// gRPC's hedging policy, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HedgingModel {
    /// Attempts in all.
    pub max_attempts: u16,
    /// Time between hedges.
    pub delay: Micros,
    /// Statuses that send the next hedge at once.
    pub non_fatal: StatusSet,
}

impl HedgingModel {
    fn new(hedging: &crate::scenario::Hedging) -> HedgingModel {
        HedgingModel {
            max_attempts: hedging.max_attempts.get() as u16,
            delay: hedging.delay.micros(),
            non_fatal: statuses(&hedging.non_fatal_statuses),
        }
    }
}

/// The budget of a call, from its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadline {
    /// A fixed budget.
    Budget(Micros),
    /// The time the caller of the request being served has left (services only).
    Propagate,
    /// The time the caller has left, but at most this (services only).
    PropagateAtMost(Micros),
    /// No deadline: only the retry budget ends the call.
    Unbounded,
}

/// Index of a [`Link`] in [`Model::links`].
pub type LinkId = u16;

/// The link of the users to the entry service.
pub const USERS_LINK: LinkId = 0;

/// The network of one edge: from a caller (the users, or a service) to a service it calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// One-way latency of every message, both ways.
    pub latency: Distribution,
    /// Probability that a request is lost on its way.
    pub request_loss: Probability,
    /// Probability that a response is lost on its way back.
    pub response_loss: Probability,
}

/// One service: its workers, queue, capacity, limits and what it calls.
#[derive(Debug, Clone)]
pub struct ServiceModel {
    /// Its name (`upstream` for the `[upstream]` table).
    pub name: String,
    /// Workers at full capacity.
    pub workers: u64,
    /// Time a worker spends on a request, before any downstream call.
    pub service_time: Distribution,
    /// Requests that may wait for a worker.
    pub queue_limit: u64,
    /// In which order waiting requests are served, and which are shed.
    pub queue_discipline: Discipline,
    /// Status of an overload rejection.
    pub overload_status: u16,
    /// Retry-After sent with overload rejections.
    pub retry_after: Option<Micros>,
    /// A token bucket in front of the service.
    pub rate_limit: Option<RateLimit>,
    /// Load-independent errors.
    pub errors: Option<Errors>,
    /// Workers available over time (each instance's, in a fleet).
    pub capacity: CapacityCurve,
    /// All the workers all the time: the curve of a fleet's instances that the capacity curve
    /// does not apply to.
    pub full_capacity: CapacityCurve,
    /// What happens while capacity is zero.
    pub outage: Outage,
    /// Drop queued requests whose caller has given up.
    pub drop_expired: bool,
    /// Where the deadline each request carries is checked, if it is.
    pub deadline_check: Option<DeadlineCheck>,
    /// Where the idempotency keys are kept.
    pub idempotency_store: IdempotencyStore,
    /// How long a completed idempotency key is remembered.
    pub idempotency_ttl: Micros,
    /// What a repeat of an in-flight key gets.
    pub idempotency_in_flight: InFlightRepeat,
    /// The services called, in order, for every request of an operation whose `path` does not
    /// name it: its own `calls`, the calls of `routes[0]`.
    pub calls: Vec<ServiceId>,
    /// The calls it makes for each kind of request: `routes[0]` its own `calls` and `fan_out`,
    /// the others those of operations' paths that name it (one per different path).
    pub routes: Vec<Route>,
    /// Per endpoint, the index of its route in `routes`; empty when every endpoint takes
    /// `routes[0]` (no operation's path names the service).
    pub endpoint_routes: Vec<u8>,
    /// The retry policy toward the services called, for the calls without one of their own
    /// (`None` for a service that calls nothing on any path).
    pub downstream: Option<CallerPolicy>,
    /// The policies of the calls that have their own (`call_retry`), in the order of its keys:
    /// a [`RouteCall::policy`] of `i` above 0 is `call_policies[i - 1]`.
    pub call_policies: Vec<CallerPolicy>,
    /// The status answered when a downstream call fails for good.
    pub failure_status: u16,
    /// A worker is held while a request's downstream calls are out (a thread-per-request
    /// server); else it lets go after the service's own work (an event-driven server).
    pub holds_worker_on_calls: bool,
    /// The service keeps idempotency keys (a proxy forwards them instead).
    pub keeps_keys: bool,
    /// Worker time each kind of rejection costs.
    pub rejection_cost: RejectionCosts,
    /// Stop work whose caller has gone.
    pub cancellation: bool,
    /// A concurrency limit in front of the queue.
    pub concurrency_limit: Option<LimitModel>,
    /// Crashing under overload.
    pub crash: Option<CrashModel>,
    /// Slower service after a restart.
    pub cold_start: Option<ColdStartModel>,
    /// Slower service the more requests are in service.
    pub contention: Option<ContentionModel>,
    /// A cache in front of the work.
    pub cache: Option<CacheModel>,
    /// One row written with optimistic concurrency: the status of a collision.
    pub optimistic_row: Option<u16>,
    /// Its instances and how callers pick one (one instance without a `fleet`).
    pub fleet: FleetModel,
}

/// The calls a service makes for one kind of request, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// The calls, in order; empty: the data lives here for these requests.
    pub calls: Vec<RouteCall>,
    /// All at once (else one after another).
    pub parallel: bool,
}

/// One call of a [`Route`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteCall {
    /// The service called.
    pub target: ServiceId,
    /// The [`Link`] it travels.
    pub link: LinkId,
    /// Its policy: 0 for the service's `downstream`, `i` for its `call_policies[i - 1]`.
    pub policy: u8,
}

/// A service's instances and how its callers pick one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FleetModel {
    /// How many copies of the service run, each with its `workers` and queue.
    pub instances: u16,
    /// How a caller picks one.
    pub balancer: Balancer,
    /// `least-request`: the hosts compared for each pick.
    pub choice_count: u16,
    /// The first this many instances follow the capacity curve; the others keep full
    /// capacity.
    pub capacity_instances: u16,
    /// Each caller's outlier detection over the instances, if any.
    pub outlier: Option<OutlierModel>,
    /// Where its instances keep their idempotency keys.
    pub key_store: KeyStore,
}

impl FleetModel {
    /// One instance: a service without a `fleet`.
    pub const SINGLE: FleetModel = FleetModel {
        instances: 1,
        balancer: Balancer::RoundRobin,
        choice_count: 2,
        capacity_instances: 1,
        outlier: None,
        key_store: KeyStore::Shared,
    };
}

/// The kinds of rejection, each with its own cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectionKind {
    /// The queue was full.
    QueueFull,
    /// The rate limiter refused.
    RateLimit,
    /// The concurrency limit was reached.
    ConcurrencyLimit,
    /// The queue discipline shed the request.
    Shed,
    /// The request's deadline had passed.
    DeadlineExpired,
}

/// Worker time per rejection, by kind, in microseconds (a fraction of the mean service time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RejectionCosts {
    /// A full queue's rejection.
    pub queue_full: Micros,
    /// A rate limiter's rejection.
    pub rate_limit: Micros,
    /// A concurrency limit's rejection.
    pub concurrency_limit: Micros,
    /// A request shed by the queue discipline.
    pub shed: Micros,
    /// A request refused because its deadline had passed.
    pub deadline_expired: Micros,
}

/// What kind of server `service` is (thread-per-request unless it says otherwise).
fn server_kind(service: &Service) -> ServerKind {
    service
        .server
        .as_ref()
        .map_or_else(ServerKind::default, |server| *server.get_ref())
}

/// The worker time of each kind of rejection at `service`: `rejection_cost`'s kinds, and its
/// deadline's `reject_cost`, each a share of the mean service time.
fn rejection_costs(service: &Service) -> RejectionCosts {
    let mean = service.service_time.mean_micros();
    let micros = |factor: crate::base::values::Factor| (factor.get() * mean).round() as Micros;
    let deadline_expired = service
        .deadline
        .as_ref()
        .map_or(0, |deadline| micros(deadline.get_ref().reject_cost));
    service.rejection_cost.as_ref().map_or(
        RejectionCosts {
            deadline_expired,
            ..RejectionCosts::default()
        },
        |cost| {
            let cost = cost.get_ref();
            RejectionCosts {
                queue_full: micros(cost.queue_full),
                rate_limit: micros(cost.rate_limit),
                concurrency_limit: micros(cost.concurrency_limit),
                shed: micros(cost.shed),
                deadline_expired,
            }
        },
    )
}

impl RejectionCosts {
    /// The cost of a rejection of `kind`.
    #[inline]
    pub fn of(&self, kind: RejectionKind) -> Micros {
        match kind {
            RejectionKind::QueueFull => self.queue_full,
            RejectionKind::RateLimit => self.rate_limit,
            RejectionKind::ConcurrencyLimit => self.concurrency_limit,
            RejectionKind::Shed => self.shed,
            RejectionKind::DeadlineExpired => self.deadline_expired,
        }
    }
}

/// A concurrency limit: its algorithm and the status of its rejections.
#[derive(Debug, Clone)]
pub struct LimitModel {
    /// How the limit is learnt.
    pub algorithm: LimitAlgorithm,
    /// The status of a rejection.
    pub status: u16,
}

/// When a service crashes and for how long.
#[derive(Debug, Clone, Copy)]
pub struct CrashModel {
    /// What must stay above its threshold.
    pub threshold: CrashThreshold,
    /// For how long.
    pub hold: Micros,
    /// How long it stays down.
    pub restart_after: Micros,
}

/// The overload a crash follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashThreshold {
    /// More than this many requests waiting.
    Queue(u64),
    /// More than this many requests queued or served.
    InFlight(u64),
}

/// How much slower a restarted service is, and how it warms up.
#[derive(Debug, Clone, Copy)]
pub struct ColdStartModel {
    /// The service-time multiplier right after a restart.
    pub factor: f64,
    /// What its excess decays with.
    pub decay: Decay,
}

/// What a cold start's excess decays with: `exp(-x / scale)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decay {
    /// Requests served since the restart.
    Requests(f64),
    /// Microseconds since the restart.
    Time(f64),
}

/// A cache in front of a service's work.
#[derive(Debug, Clone, Copy)]
pub struct CacheModel {
    /// The steady hit ratio.
    pub hit_ratio: f64,
    /// The work of a hit.
    pub hit_time: Micros,
    /// Only answers to waiting callers fill it (look-aside), or every miss (read-through).
    pub look_aside: bool,
    /// Fills that bring it most of the way back after a restart.
    pub fills: f64,
}

/// A token bucket's settings.
#[derive(Debug, Clone)]
pub struct RateLimit {
    /// Tokens per second.
    pub rate: f64,
    /// Bucket size.
    pub burst: f64,
    /// One bucket per user client (else one for all).
    pub per_client: bool,
    /// Retry-After is rounded up to a multiple of this.
    pub retry_after_granularity: Micros,
}

/// Load-independent errors.
#[derive(Debug, Clone, Copy)]
pub struct Errors {
    /// Probability that a request fails.
    pub rate: Probability,
    /// The status of such a failure.
    pub status: u16,
    /// When it is answered: at once, or after the work.
    pub at: ErrorsAt,
    /// After the work: the write was committed before the error.
    pub committed: bool,
}

impl Model {
    /// The model of `scenario` (validated) as `policy`, one of its policies, simulates it.
    pub fn new(scenario: &Scenario, policy: &Policy) -> Model {
        let topology = scenario.for_policy(policy);
        let clients = &scenario.clients;
        let count = clients.count.get_ref().get();
        let mut cumulative_weight = 0.0;
        let endpoints = clients
            .operations
            .iter()
            .map(|operation| {
                cumulative_weight += *operation.weight.get_ref();
                Endpoint {
                    name: operation.name.get_ref().clone(),
                    cumulative_weight,
                    idempotent_method: is_idempotent_method(operation.method.get_ref()),
                    idempotency_key: policy.idempotency_key.unwrap_or(operation.idempotency_key),
                    status_endpoint: policy.status_endpoint.unwrap_or(operation.status_endpoint),
                }
            })
            .collect();
        let workload = match clients.workload.get_ref() {
            Workload::Open => {
                let total_rate = clients.rate.map_or(0.0, |rate| rate.get() * count as f64);
                let load = CapacityCurve::new(1, &clients.load);
                Arrivals::Open {
                    mean_gap_us: if total_rate > 0.0 {
                        MICROS_PER_SECOND as f64 / total_rate
                    } else {
                        f64::INFINITY
                    },
                    load_peak: load.peak_factor(),
                    load: (!clients.load.is_empty()).then_some(load),
                    process: clients.arrivals.get_ref().clone(),
                }
            }
            Workload::Closed => Arrivals::Closed {
                think_mean_us: clients
                    .think_time
                    .as_ref()
                    .map_or(0.0, |think| think.get_ref().micros() as f64),
                together: clients.start == Start::Together,
            },
        };
        let users = Users {
            count,
            workload,
            endpoints,
            policy: CallerPolicy {
                base_ms: policy.base.as_ms_f64(),
                cap_ms: policy.cap.get_ref().as_ms_f64(),
                max_attempts: policy.max_attempts.get() as u32,
                multiplier: policy.multiplier.get(),
                retryable: statuses(&policy.retryable_statuses),
                retryable_transport: TransportErrors::of(&policy.retryable_transport_errors),
                jitter: policy.jitter,
                retry_after: policy.retry_after,
                unsafe_retries: policy.unsafe_retries,
                attempt_timeout: policy
                    .attempt_timeout
                    .map_or(clients.attempt_timeout.micros(), |timeout| {
                        timeout.limit_micros()
                    }),
                deadline: if policy.ignore_deadline {
                    Deadline::Unbounded
                } else {
                    Deadline::Budget(policy.deadline.unwrap_or(clients.deadline).micros())
                },
                controls: controls(&policy.controls),
                hedging: policy
                    .hedging
                    .as_ref()
                    .map(|hedging| HedgingModel::new(hedging.get_ref())),
                previous_hosts: policy.previous_hosts.get() as u32,
                retry_probability: policy.retry_probability.get(),
            },
            processes: clients.processes.get_ref().get(),
            manual_retry: policy
                .manual_retry
                .as_ref()
                .map(|manual| ManualRetryModel::new(manual.get_ref())),
        };
        let services = topology.services();
        let index_of = |name: &str| -> ServiceId {
            services
                .iter()
                .position(|service| service.name() == name)
                .expect("validated: calls name services") as ServiceId
        };
        let entry = topology.entry();
        let mut links = vec![Link::of(
            topology.link_network(None, services[entry].name()),
        )];
        let mut link_of = |from: &str, to: &str| -> LinkId {
            // Links of the same settings are one: the engine keeps one lane per constant.
            let link = Link::of(topology.link_network(Some(from), to));
            links
                .iter()
                .position(|known| *known == link)
                .unwrap_or_else(|| {
                    links.push(link);
                    links.len() - 1
                }) as LinkId
        };
        let services = services
            .iter()
            .map(|service| {
                let routes = Routes::new(&topology, service, &index_of, &mut link_of);
                let mut model = ServiceModel::new(service, &index_of, routes);
                if let Some(ttl) = policy.idempotency_ttl {
                    model.idempotency_ttl = ttl.micros();
                }
                model
            })
            .collect();
        Model {
            seed: scenario.seed,
            duration: scenario.duration.get_ref().micros(),
            bucket: scenario.bucket.get_ref().micros(),
            users,
            links,
            services,
            entry: entry as ServiceId,
            health: scenario
                .recovery
                .as_ref()
                .map_or_else(HealthRule::default, |rule| HealthRule {
                    max_failed: rule.max_failed.get(),
                    max_retries: rule.max_retries.get(),
                    window: rule.window.get_ref().micros(),
                    baseline: rule.rule != Some(crate::scenario::RecoveryBasis::Absolute),
                }),
            incident: crate::scenario::incident::window(scenario),
        }
    }

    /// Whether the users or some calling service have a control of `kind`.
    pub fn has_control(&self, kind: ControlKind) -> bool {
        self.any_caller(|policy| {
            policy
                .controls
                .iter()
                .any(|control| control.config.kind() == kind)
        })
    }

    /// Whether the users' policy or some calling service's satisfies `test`.
    pub fn any_caller(&self, test: impl Fn(&CallerPolicy) -> bool) -> bool {
        test(&self.users.policy)
            || self
                .services
                .iter()
                .flat_map(ServiceModel::caller_policies)
                .any(test)
    }

    /// The service the users call.
    pub fn entry_service(&self) -> &ServiceModel {
        &self.services[usize::from(self.entry)]
    }

    /// The incident (the scenario's, declared or inferred from its capacity curves: see
    /// [`crate::scenario::incident`]), the end of arrivals, and the rule recovery is measured
    /// by.
    pub fn incident(&self) -> Incident {
        Incident {
            window: self.incident,
            duration: self.duration,
            health: self.health,
        }
    }
}

impl Link {
    fn of(network: LinkNetwork) -> Link {
        Link {
            latency: network.latency,
            request_loss: network.request_loss,
            response_loss: network.response_loss,
        }
    }

    /// Whether every message on the link takes the same time.
    #[inline]
    pub fn constant_latency(&self) -> bool {
        matches!(self.latency, Distribution::Constant(_))
    }
}

/// A service's routes and which endpoint takes which, as [`ServiceModel`] keeps them.
struct Routes {
    routes: Vec<Route>,
    endpoint_routes: Vec<u8>,
}

impl Routes {
    /// The routes of `service` in `scenario`: its own calls first, then each different path
    /// an operation gives it. `link_of` names the link between two services.
    fn new(
        scenario: &Scenario,
        service: &Service,
        index_of: &impl Fn(&str) -> ServiceId,
        link_of: &mut impl FnMut(&str, &str) -> LinkId,
    ) -> Routes {
        let mut route = |calls: &[Spanned<String>], fan_out: FanOut| Route {
            calls: calls
                .iter()
                .map(|call| {
                    let name = call.get_ref().as_str();
                    RouteCall {
                        target: index_of(name),
                        link: link_of(service.name(), name),
                        policy: service
                            .call_retry
                            .keys()
                            .position(|own| own.get_ref() == name)
                            .map_or(0, |index| index as u8 + 1),
                    }
                })
                .collect(),
            parallel: fan_out == FanOut::Parallel,
        };
        let mut routes = vec![route(&service.calls, service.fan_out)];
        let operations = &scenario.clients.operations;
        if operations
            .iter()
            .all(|operation| !operation.path.contains_key(service.name()))
        {
            return Routes {
                routes,
                endpoint_routes: Vec::new(),
            };
        }
        let endpoint_routes = (0..operations.len())
            .map(|operation| {
                let (calls, fan_out) = routes::calls_for(scenario, operation, service);
                let built = route(calls, fan_out);
                let index = routes.iter().position(|known| *known == built);
                index.unwrap_or_else(|| {
                    routes.push(built);
                    routes.len() - 1
                }) as u8
            })
            .collect();
        Routes {
            routes,
            endpoint_routes,
        }
    }
}

impl ServiceModel {
    fn new(
        service: &Service,
        index_of: &impl Fn(&str) -> ServiceId,
        routes: Routes,
    ) -> ServiceModel {
        ServiceModel {
            name: service.name().to_string(),
            workers: service.workers.get(),
            service_time: service.service_time.clone(),
            queue_limit: service.queue_limit.get(),
            queue_discipline: discipline(service.queue_discipline.as_ref().map(Spanned::get_ref)),
            overload_status: service.overload_status.get() as u16,
            retry_after: service.retry_after.map(|after| after.micros()),
            rate_limit: service.rate_limit.as_ref().map(|limit| {
                let rate = limit.rate.get();
                RateLimit {
                    rate,
                    burst: limit.burst.map_or(rate.max(1.0), |burst| burst.get()),
                    per_client: limit.scope == RateLimitScope::Client,
                    retry_after_granularity: limit.retry_after_granularity.get_ref().micros(),
                }
            }),
            errors: service.errors.as_ref().map(|errors| Errors {
                rate: errors.rate,
                status: errors.status.get() as u16,
                at: errors.at,
                committed: errors
                    .committed
                    .as_ref()
                    .is_some_and(|committed| *committed.get_ref()),
            }),
            capacity: CapacityCurve::new(service.workers.get(), &service.capacity),
            full_capacity: CapacityCurve::new(service.workers.get(), &[]),
            outage: service.outage,
            drop_expired: service.drop_expired,
            deadline_check: service
                .deadline
                .as_ref()
                .map(|deadline| deadline.get_ref().check),
            idempotency_store: service.idempotency_store,
            idempotency_ttl: service.idempotency_ttl.micros(),
            idempotency_in_flight: service.idempotency_in_flight,
            calls: service
                .calls
                .iter()
                .map(|call| index_of(call.get_ref()))
                .collect(),
            routes: routes.routes,
            endpoint_routes: routes.endpoint_routes,
            downstream: service
                .retry
                .as_ref()
                .map(|retry| CallerPolicy::downstream(retry.get_ref())),
            call_policies: service
                .call_retry
                .values()
                .map(|policy| CallerPolicy::downstream(&policy.get_ref().0))
                .collect(),
            failure_status: service
                .failure_status
                .as_ref()
                .map_or(503, |status| status.get_ref().get() as u16),
            holds_worker_on_calls: server_kind(service).holds_worker_on_calls(),
            keeps_keys: server_kind(service).keeps_keys(),
            rejection_cost: rejection_costs(service),
            cancellation: service.cancellation,
            concurrency_limit: service.concurrency_limit.as_ref().map(|limit| {
                let limit = limit.get_ref();
                LimitModel {
                    algorithm: limit_algorithm(limit),
                    status: limit.status.get() as u16,
                }
            }),
            crash: service.crash.as_ref().map(|crash| {
                let crash = crash.get_ref();
                CrashModel {
                    threshold: match (crash.queue_above, crash.in_flight_above) {
                        (Some(queue), _) => CrashThreshold::Queue(queue.get()),
                        (None, Some(in_flight)) => CrashThreshold::InFlight(in_flight.get()),
                        (None, None) => unreachable!("validated: a crash has a threshold"),
                    },
                    hold: crash.hold.micros(),
                    restart_after: crash.restart_after.get_ref().micros(),
                }
            }),
            cold_start: service.cold_start.as_ref().map(|cold| {
                let cold = cold.get_ref();
                ColdStartModel {
                    factor: cold.factor.get(),
                    decay: match (cold.requests, cold.time) {
                        (Some(requests), _) => Decay::Requests(requests.get() as f64),
                        (None, Some(time)) => Decay::Time(time.micros() as f64),
                        (None, None) => unreachable!("validated: a cold start decays"),
                    },
                }
            }),
            contention: service.contention.map(|contention| ContentionModel {
                sigma: contention.sigma.get(),
                kappa: contention.kappa.get(),
            }),
            optimistic_row: service
                .optimistic_row
                .as_ref()
                .map(|row| row.get_ref().collision_status.get() as u16),
            cache: service.cache.as_ref().map(|cache| {
                let cache = cache.get_ref();
                CacheModel {
                    hit_ratio: cache.hit_ratio.get(),
                    hit_time: cache.hit_time.micros(),
                    look_aside: cache.fill == CacheFill::LookAside,
                    fills: cache.fills.get() as f64,
                }
            }),
            fleet: service.fleet.as_ref().map_or(FleetModel::SINGLE, |fleet| {
                let fleet = fleet.get_ref();
                let instances = fleet.instances.get() as u16;
                FleetModel {
                    instances,
                    balancer: fleet.load_balancer,
                    choice_count: fleet
                        .choice_count
                        .as_ref()
                        .map_or(2, |count| count.get_ref().get() as u16),
                    capacity_instances: fleet
                        .capacity_instances
                        .as_ref()
                        .map_or(instances, |count| count.get_ref().get() as u16),
                    key_store: fleet.key_store,
                    outlier: fleet.outlier_detection.as_ref().map(|rules| {
                        let rules = rules.get_ref();
                        let base = rules.base_ejection_time.micros();
                        OutlierModel {
                            consecutive_failures: rules.consecutive_5xx.get() as u32,
                            interval: rules.interval.micros(),
                            base_ejection_time: base,
                            max_ejection_time: rules.max_ejection_time.as_ref().map_or_else(
                                || outlier::default_max_ejection_time(base),
                                |most| most.get_ref().micros(),
                            ),
                            max_ejection_percent: rules.max_ejection_percent.get() as u32,
                            always_eject_one_host: rules.always_eject_one_host,
                            panic_threshold: rules.panic_threshold.get() as f64,
                        }
                    }),
                }
            }),
        }
    }

    /// Mean service time in microseconds, to turn workers into requests per second.
    pub fn mean_service_us(&self) -> f64 {
        self.service_time.mean_micros()
    }

    /// Requests per second one instance with `available` workers serves at best, a request's
    /// mean work being `mean_work_us` (0: its mean service time, neither a cold start nor a
    /// cache changing it): `available / S`, or with `contention` the most they serve at the
    /// best concurrency they allow, `N / (S m(N))` ([`ContentionModel::most_served`]). An
    /// instance slows down with its own load, so a fleet's capacity is its instances', each
    /// with its own workers, summed. `None` where a request takes no time: a worker then serves
    /// any number at one instant, and there is no finite capacity to write.
    pub fn instance_capacity_rps(&self, available: u64, mean_work_us: u64) -> Option<f64> {
        let mean_us = if mean_work_us > 0 {
            mean_work_us as f64
        } else {
            self.mean_service_us()
        };
        let serving = self.contention.map_or(available as f64, |contention| {
            contention.most_served(available)
        });
        (mean_us > 0.0).then(|| serving * MICROS_PER_SECOND as f64 / mean_us)
    }

    /// Its capacity ([`ServiceModel::instance_capacity_rps`]) at its mean service time, when
    /// the instances the capacity curve applies to have `curve_workers` each and the others
    /// all their `workers`: each instance's, summed.
    pub fn capacity_rps(&self, curve_workers: u64) -> Option<f64> {
        let fleet = &self.fleet;
        let steady = fleet.instances - fleet.capacity_instances;
        let curve = self.instance_capacity_rps(curve_workers, 0)?;
        let full = self.instance_capacity_rps(self.workers, 0)?;
        Some(f64::from(fleet.capacity_instances) * curve + f64::from(steady) * full)
    }

    /// It calls no other service on its own `calls`: the data lives here.
    pub fn is_leaf(&self) -> bool {
        self.calls.is_empty()
    }

    /// The index in `routes` of the calls it makes for a request of `endpoint`.
    #[inline]
    pub fn route_of(&self, endpoint: u16) -> u8 {
        self.endpoint_routes
            .get(usize::from(endpoint))
            .copied()
            .unwrap_or(0)
    }

    /// The policy of a call whose [`RouteCall::policy`] is `policy`.
    #[inline]
    pub fn call_policy(&self, policy: u8) -> &CallerPolicy {
        match policy {
            0 => self
                .downstream
                .as_ref()
                .expect("a service that calls others has a policy toward them"),
            own => &self.call_policies[usize::from(own) - 1],
        }
    }

    /// Every policy it calls with: its `downstream`, then its calls' own.
    pub fn caller_policies(&self) -> impl Iterator<Item = &CallerPolicy> {
        self.downstream.iter().chain(&self.call_policies)
    }
}

impl CallerPolicy {
    fn downstream(retry: &CallRetry) -> CallerPolicy {
        CallerPolicy {
            base_ms: retry.base.as_ms_f64(),
            cap_ms: retry.cap.get_ref().as_ms_f64(),
            max_attempts: retry.max_attempts.get() as u32,
            multiplier: retry.multiplier.get(),
            retryable: statuses(&retry.retryable_statuses),
            retryable_transport: TransportErrors::of(&retry.retryable_transport_errors),
            jitter: retry.jitter,
            retry_after: retry.retry_after,
            unsafe_retries: retry.unsafe_retries,
            attempt_timeout: retry.attempt_timeout.limit_micros(),
            deadline: match retry.deadline {
                CallDeadline::Propagate => Deadline::Propagate,
                CallDeadline::Fresh(budget) => Deadline::Budget(budget.micros()),
                CallDeadline::PropagateAtMost(budget) => Deadline::PropagateAtMost(budget.micros()),
            },
            // Each instance of the calling service keeps its own state of every control.
            controls: controls(&retry.controls)
                .into_iter()
                .map(|control| ControlModel {
                    scope: Scope::CallingInstance,
                    ..control
                })
                .collect(),
            hedging: retry
                .hedging
                .as_ref()
                .map(|hedging| HedgingModel::new(hedging.get_ref())),
            previous_hosts: retry.previous_hosts.get() as u32,
            retry_probability: retry.retry_probability.get(),
        }
    }
}

/// A list of statuses as a set.
fn statuses(list: &[Bounded<400, 599>]) -> StatusSet {
    list.iter().map(|status| status.get() as u16).collect()
}

/// The controls of a policy or tier, defaults filled in.
fn controls(specs: &[Spanned<ControlSpec>]) -> Vec<ControlModel> {
    specs.iter().map(|spec| spec.get_ref().model()).collect()
}

/// The queue discipline a service's `queue_discipline` table describes, defaults filled in.
fn discipline(config: Option<&QueueDiscipline>) -> Discipline {
    let Some(config) = config else {
        return Discipline::Fifo;
    };
    let target = config
        .target
        .map_or(DEFAULT_TARGET, |target| target.micros());
    let interval = config
        .interval
        .map_or(DEFAULT_INTERVAL, |interval| interval.micros());
    match config.kind {
        DisciplineKind::Fifo => Discipline::Fifo,
        DisciplineKind::Lifo => Discipline::Lifo,
        DisciplineKind::Codel => Discipline::CoDel { target, interval },
        DisciplineKind::AdaptiveLifo => Discipline::AdaptiveLifo { target, interval },
    }
}

/// The limit algorithm a service's `concurrency_limit` table describes: the published
/// defaults, with the bounds the table gives.
fn limit_algorithm(config: &ConcurrencyLimit) -> LimitAlgorithm {
    let given = |bound: Option<crate::base::values::Bounded<1, 10_000_000>>, default: u64| {
        bound.map_or(default, |bound| bound.get())
    };
    match config.algorithm {
        LimitKind::Fixed => LimitAlgorithm::Fixed(given(config.limit, 1)),
        LimitKind::Vegas => {
            let defaults = VegasConfig::default();
            LimitAlgorithm::Vegas(VegasConfig {
                initial_limit: given(config.initial, defaults.initial_limit),
                max_concurrency: given(config.max, defaults.max_concurrency),
                ..defaults
            })
        }
        LimitKind::Gradient2 => {
            let defaults = Gradient2Config::default();
            LimitAlgorithm::Gradient2(Gradient2Config {
                initial_limit: given(config.initial, defaults.initial_limit),
                min_limit: given(config.min, defaults.min_limit),
                max_concurrency: given(config.max, defaults.max_concurrency),
                ..defaults
            })
        }
        LimitKind::EnvoyGradient => {
            let defaults = EnvoyGradientConfig::default();
            LimitAlgorithm::EnvoyGradient(EnvoyGradientConfig {
                min_concurrency: given(config.min, defaults.min_concurrency),
                max_concurrency_limit: given(config.max, defaults.max_concurrency_limit),
                ..defaults
            })
        }
    }
}
