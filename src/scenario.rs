//! Scenario files: what is simulated, read from TOML and validated before anything runs.
//!
//! A scenario describes the clients, the network, the services they call (one `[upstream]`, or a
//! topology of `[[service]]` tables calling each other) and one or more retry policies; every
//! policy is simulated on the same arrivals. The field names below are the file format's
//! contract: extend, don't rename. Every field that has a default is listed with it, and
//! `retrystorm run` writes the fully resolved scenario (defaults filled in) next to its results,
//! so nothing a run used is implicit.
//!
//! Validation happens while reading (types, unknown keys, ranges of single values) and right
//! after (relations between values: cap below base, unsorted capacity points, ...). Every error
//! names the file, line and column, and says what would be valid; see [`crate::import::load`].

pub mod arrivals;
mod controls;
mod data_files;
pub mod fleet;
mod imported;
pub mod incident;
mod links;
mod load;
pub mod manual_retry;
mod overload;
mod override_key;
pub mod risk;
pub mod routes;
mod server_kind;
pub mod switch;
mod topology;
pub mod uncertain;
mod validate;
mod zero_time;

use serde::{Deserialize, Serialize};
use toml::Spanned;

pub use crate::base::capacity::CapacityPoint;
pub use controls::ControlSpec;
pub use data_files::read_data_file;
pub use imported::{ImportPart, Imported, ImportedFleet};
pub use links::{CLIENTS, LinkNetwork};
pub use load::{
    ConfigSource, MAX_SCENARIO_BYTES, Override, RESOLVED_HEADER, ScenarioError,
    check_resolved_fits, load_with_configs, read_scenario,
};
pub use overload::{
    Cache, CacheFill, ColdStart, ConcurrencyLimit, Contention, Crash, DisciplineKind, LimitKind,
    OptimisticRow, QueueDiscipline, RejectionCost,
};
pub use validate::{check_policy_name, longest_operation};
pub use zero_time::{instant_ends, least_operation_micros, refuses_locally};

use crate::base::distribution::Distribution;
use crate::base::time::Duration;
use crate::base::values::{AtLeastOne, Bounded, Factor, Name, Positive, Probability, ServiceName};
use crate::retry::backoff::Jitter;
use crate::retry::retry_after::RetryAfterMode;

/// A problem found while validating: the span of the value it is about, and what is wrong.
type Problem = (std::ops::Range<usize>, String);

/// The span of `value` if it was written in the file, else `fallback` (defaults have no span).
fn span_of<T>(value: &Spanned<T>, fallback: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let span = value.span();
    if span.is_empty() { fallback } else { span }
}

/// A whole scenario file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name; results go to `output/<name>/`. Letters, digits, `-`, `_` and `.`.
    pub name: Name,
    /// What the scenario shows, in a sentence or two.
    #[serde(default)]
    pub description: String,
    /// Seed of every random stream (default 1): a TOML integer, or above the largest one
    /// (2^63 - 1; a sweep derives seeds up to 2^64 - 1) the same digits as a string.
    #[serde(default = "defaults::seed", with = "seed_text")]
    pub seed: u64,
    /// How long operations keep arriving. In-flight operations then run to their end.
    pub duration: Spanned<Duration>,
    /// Width of a time-series bucket (default 1s).
    #[serde(default = "defaults::bucket")]
    pub bucket: Spanned<Duration>,
    /// Who calls the upstream, and how.
    pub clients: Clients,
    /// What lies between clients and services, and between services: every message's latency
    /// and loss, on every edge no `[[link]]` describes.
    #[serde(default)]
    pub network: Network,
    /// The network of single edges (clients to the entry, a service to one it calls), where
    /// it differs from `[network]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub link: Vec<Spanned<Link>>,
    /// The one service the clients call, for a scenario without a topology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Service>,
    /// A topology: services that call each other, each named (instead of `[upstream]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service: Vec<Spanned<Service>>,
    /// The incident `recovery_s` is measured from (default: the services' capacity changes,
    /// never the load curve). A run writes it out resolved, as `start` and `end`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incident: Option<Spanned<IncidentSpec>>,
    /// When a time bucket counts as healthy, for `recovery_s` (default: at most 1% of the
    /// operations ending in it failed, and retries added at most 10% to its first attempts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryRule>,
    /// The retry policies to compare (default: one policy with the article's settings).
    #[serde(default = "defaults::policies")]
    pub policy: Vec<Policy>,
    /// The lesson, as claims about the policies' metrics that every run checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<Spanned<Expect>>,
    /// Replications of every policy over seeds, for probabilities ([`risk`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<Spanned<risk::RiskSpec>>,
    /// Inputs the user is unsure of, drawn once per replication ([`risk`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub uncertain: risk::Uncertain,
    /// The plane `retrystorm map` draws, and its claims ([`risk`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<Spanned<risk::MapSpec>>,
    /// The comment at the top of the file, without its `#`s: what the scenario sets up and
    /// what to look at, shown in `report.html`. Not a setting, so not written back.
    #[serde(skip)]
    pub header: String,
    /// The `--set KEY=VALUE` changes made on the command line, as given: a run's report
    /// says that the scenario ran changed, and which policies the changes touched.
    #[serde(skip)]
    pub command_line_changes: Vec<(String, String)>,
}

/// `[[expect]]`: one claim of the scenario's lesson. Exactly one of `better_than`, `at_least`
/// and `at_most`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The policy the claim is about.
    pub policy: String,
    /// A summary metric (`success_rate`, `recovery_s`, ...); with `window`, one of
    /// `goodput_rps`, `failed_rps`, `success_rate`, `attempts_rps`, `peak_attempts_rps`,
    /// `amplification` over the window.
    pub metric: String,
    /// The policy beats this one on the metric (in the metric's better direction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub better_than: Option<String>,
    /// With `better_than`: by more than this fraction of the other's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin: Option<Probability>,
    /// The metric is at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_least: Option<f64>,
    /// The metric is at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_most: Option<f64>,
    /// Compare over this time window only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<ExpectWindow>,
    /// Holds when, over the replications of `[risk]`, the lower end of the 95% exact
    /// (Clopper-Pearson) interval of the share of runs in which it held is above this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<Probability>,
    /// Why the lesson says so, shown with the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// `window = { from = "20s", to = "40s" }`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectWindow {
    /// Start of the window.
    pub from: Duration,
    /// End of the window (exclusive).
    pub to: Duration,
}

/// `[incident]`: the trigger the run recovers from, when it is not (only) the services'
/// capacity changes. Either `from`, the curve that is the incident, or `start` and (if it ends
/// within the run) `end`. See [`incident`] for what counts without it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IncidentSpec {
    /// The curve whose changes are the incident, by its key: `clients.load` (a load spike),
    /// `upstream.capacity` or `service.NAME.capacity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Spanned<String>>,
    /// When the incident starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Spanned<Duration>>,
    /// When it ends; without it, it lasts past the end of arrivals (and the run never recovers
    /// from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<Spanned<Duration>>,
}

/// `[recovery]`: the health rule behind `recovery_s`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RecoveryRule {
    /// The largest share of the operations ending in a bucket that may fail (default 0.01).
    #[serde(default = "defaults::max_failed")]
    pub max_failed: Probability,
    /// The largest ratio of retries to first attempts in a bucket (default 0.1).
    #[serde(default = "defaults::max_retries")]
    pub max_retries: Factor,
    /// The time the counts are summed over before the rule is applied (default 1 s, rounded
    /// up to whole steps of the health series: see [`crate::vocabulary::counts::health_step`]).
    #[serde(default = "defaults::health_window")]
    pub window: Spanned<Duration>,
    /// `baseline` (the default when absent): a window is healthy also when its failures and
    /// retries are within the noise of the health before the incident, and a run already
    /// unhealthy before it says so; `absolute`: only the limits count
    /// ([`crate::vocabulary::metric::baseline`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<RecoveryBasis>,
}

/// `[recovery] rule`: what a window's health is judged against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RecoveryBasis {
    /// The limits, or the noise of the health before the incident, whichever allows more.
    Baseline,
    /// The limits alone.
    Absolute,
}

/// `[clients]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Clients {
    /// Number of clients, 1 to 100 000 000.
    pub count: Spanned<Bounded<1, 100_000_000>>,
    /// `open` (default): operations arrive as a Poisson process whatever the upstream does;
    /// `closed`: each client starts its next operation after the previous one ends and a think
    /// time.
    #[serde(default = "defaults::workload")]
    pub workload: Spanned<Workload>,
    /// Open workload: operations per second per client (the total rate is `count * rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Positive>,
    /// Open workload: the offered rate over time as a factor of `rate`, piecewise linear like
    /// `upstream.capacity` (a load spike: `[{ at = "10s", factor = 1 }, { at = "10s", factor =
    /// 3 }, { at = "12s", factor = 3 }, { at = "12s", factor = 1 }]`). Default: always 1.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load: Vec<CapacityPoint>,
    /// Open workload: the process operations arrive by (default `{ process = "poisson" }`;
    /// see [`arrivals::ArrivalProcess`]), its mean rate always `count * rate * load`.
    #[serde(
        default = "defaults::arrivals",
        skip_serializing_if = "arrivals_are_poisson"
    )]
    pub arrivals: Spanned<arrivals::ArrivalProcess>,
    /// Open workload: `rate` and `load` from a recorded rate curve (see [`arrivals::Replay`]);
    /// read as the scenario is loaded, so a resolved scenario holds the curve instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<Spanned<arrivals::Replay>>,
    /// Closed workload: mean think time between operations (exponential).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_time: Option<Spanned<Duration>>,
    /// Closed workload: `staggered` (default) starts each client after a think time;
    /// `together` starts every client at time zero, which synchronises them.
    #[serde(default)]
    pub start: Start,
    /// Time budget of a whole operation, all attempts and waits included (default 5s).
    #[serde(default = "defaults::deadline")]
    pub deadline: Duration,
    /// Timeout of one attempt; each attempt gets `min(attempt_timeout, time left)` (default 1s).
    #[serde(default = "defaults::attempt_timeout")]
    pub attempt_timeout: Duration,
    /// The endpoints called, chosen by weight (default: one `GET`).
    #[serde(default = "defaults::operations")]
    pub operations: Vec<Operation>,
    /// The service the clients call, in a topology: the entry point (default: the only
    /// service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<Spanned<String>>,
    /// The processes the clients run in (default 1), client `i` in process `i % processes`:
    /// controls with `scope = "process"` keep one state per process.
    #[serde(default = "defaults::processes")]
    pub processes: Spanned<Bounded<1, 100_000_000>>,
}

/// Whether `clients.arrivals` is the default, which a resolved scenario leaves out.
fn arrivals_are_poisson(process: &Spanned<arrivals::ArrivalProcess>) -> bool {
    process.get_ref().is_poisson()
}

/// How operations arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// Poisson arrivals at a fixed rate, independent of the upstream.
    #[default]
    Open,
    /// One operation at a time per client, with a think time between.
    Closed,
}

/// When closed-loop clients start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Start {
    /// Each client starts after an exponential think time.
    #[default]
    Staggered,
    /// Every client starts at time zero.
    Together,
}

/// `[[clients.operations]]`: one endpoint.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Operation {
    /// Name, unique within the scenario.
    pub name: Spanned<String>,
    /// HTTP method, case-sensitive (default `GET`). GET, HEAD, PUT, DELETE, OPTIONS and TRACE
    /// are idempotent; anything else commits a write each time it is processed.
    #[serde(default = "defaults::method")]
    pub method: Spanned<String>,
    /// Relative weight (default 1).
    #[serde(default = "defaults::weight")]
    pub weight: Spanned<f64>,
    /// Requests carry an idempotency key that the upstream honours.
    #[serde(default)]
    pub idempotency_key: bool,
    /// The client can ask a status endpoint what happened after a timeout.
    #[serde(default)]
    pub status_endpoint: bool,
    /// Per service it names, the calls that service makes for this operation (a list, in
    /// order, or a table that can set `fan_out`); a service it does not name makes its own
    /// `calls` (see [`routes`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub path: routes::OperationPath,
}

/// `[network]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// One-way latency of every message (default 1ms).
    #[serde(default = "defaults::latency")]
    pub latency: Distribution,
    /// Probability that a request never reaches the upstream.
    #[serde(default)]
    pub request_loss: Probability,
    /// Probability that a response never reaches the client (the work was done).
    #[serde(default)]
    pub response_loss: Probability,
}

impl Default for Network {
    fn default() -> Self {
        Network {
            latency: defaults::latency(),
            request_loss: Probability::default(),
            response_loss: Probability::default(),
        }
    }
}

/// `[[link]]`: the network of one edge, both ways, where it differs from `[network]` (see
/// [`links`]).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// The caller: `clients`, or a service's name.
    pub from: Spanned<String>,
    /// The service it calls.
    pub to: Spanned<String>,
    /// One-way latency of every message on the edge, both ways (default: `[network]`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Distribution>,
    /// Probability that a request on the edge is lost (default: `[network]`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_loss: Option<Probability>,
    /// Probability that a response on the edge is lost (default: `[network]`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_loss: Option<Probability>,
}

/// `[upstream]`, or one `[[service]]` of a topology.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Service {
    /// A `[[service]]`'s name, unique: letters, digits, `-` and `_`. `[upstream]` has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Spanned<ServiceName>>,
    /// Requests served at once at full capacity, 1 to 10 000 000.
    pub workers: Bounded<1, 10_000_000>,
    /// Time a worker spends on one request.
    pub service_time: Distribution,
    /// Requests that may wait for a worker (default 1000); beyond it the upstream answers
    /// `overload_status` at once. 0 means no queue at all.
    #[serde(default = "defaults::queue_limit")]
    pub queue_limit: Bounded<0, 100_000_000>,
    /// Status of an overload rejection (default 503).
    #[serde(default = "defaults::overload_status")]
    pub overload_status: Bounded<400, 599>,
    /// Retry-After sent with overload rejections, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<Duration>,
    /// A token bucket in front of the upstream, answering 429.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// Load-independent errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<Errors>,
    /// Fraction of workers available over time, piecewise linear between points; a time
    /// repeated makes a step. Before the first point the first factor holds, after the last the
    /// last. Default: always 1.
    #[serde(default)]
    pub capacity: Vec<CapacityPoint>,
    /// What happens while capacity is zero (default `queue`).
    #[serde(default)]
    pub outage: Outage,
    /// Drop queued requests whose client has already timed out instead of serving them.
    #[serde(default)]
    pub drop_expired: bool,
    /// The deadline each request carries (its caller's time left, as `grpc-timeout` or
    /// Envoy's `x-envoy-expected-rq-timeout-ms` says it) checked here: work whose deadline has
    /// passed is refused (default: never checked, every request is worked on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Spanned<ServerDeadline>>,
    /// Where the idempotency keys are kept: `durable` (default), a store that survives a
    /// crash; `in-memory`, in the process, lost when it crashes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub idempotency_store: IdempotencyStore,
    /// How long a completed idempotency key is remembered (default 24h, as Stripe).
    #[serde(default = "defaults::idempotency_ttl")]
    pub idempotency_ttl: Duration,
    /// A repeat of a key whose first request is still being processed: `reject` (default)
    /// answers 409 Conflict, `wait` holds it until the first finishes and replays that result.
    #[serde(default)]
    pub idempotency_in_flight: InFlightRepeat,
    /// How long each kind of rejection holds a worker (default: rejections are free).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejection_cost: Option<Spanned<RejectionCost>>,
    /// In which order waiting requests are served, and which are shed (default FIFO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_discipline: Option<Spanned<QueueDiscipline>>,
    /// Stop work whose caller has gone: a queued request is dropped when it is reached, a
    /// request in service frees its worker at once (default: finish it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancellation: bool,
    /// An adaptive (or fixed) concurrency limit in front of the queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_limit: Option<Spanned<ConcurrencyLimit>>,
    /// Crash when overloaded for a while, and restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<Spanned<Crash>>,
    /// Slower service right after a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_start: Option<Spanned<ColdStart>>,
    /// Slower service the more requests are in service at once (the Universal Scalability
    /// Law).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<Contention>,
    /// A cache in front of the work, cold after a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<Spanned<Cache>>,
    /// The service as several instances behind a load balancer (default: one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<Spanned<fleet::Fleet>>,
    /// The service is one row written with optimistic concurrency control: concurrent
    /// writers collide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimistic_row: Option<Spanned<OptimisticRow>>,
    /// The services this one calls, in order, for every request it serves (after its own
    /// `service_time`); the worker is held until the last call returns. Empty: a leaf, where
    /// the data lives and writes are committed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<Spanned<String>>,
    /// How it makes its `calls`: `sequential` (default), one after another, or `parallel`,
    /// all at once after its service time (see [`routes`]).
    #[serde(default, skip_serializing_if = "is_default")]
    pub fan_out: routes::FanOut,
    /// Per service it calls, that call's own policy, instead of `retry` (the settings it does
    /// not write take `retry`'s defaults, not the tier's `retry` values; `"none"`: never
    /// retried).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub call_retry: routes::CallPolicies,
    /// A calling service: its client policy toward the services it calls. Without it the
    /// calls are never retried, and each waits as long as its caller does (no attempt timeout,
    /// deadline propagated), as a proxy or an RPC stub without a retry policy behaves; with it,
    /// the settings it does not write are the article's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Spanned<CallRetry>>,
    /// A calling service: the status it answers when a downstream call fails for good
    /// (default 503).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_status: Option<Spanned<Bounded<400, 599>>>,
    /// A calling service: what kind of server it is, which decides whether a worker is held
    /// while its calls are out and whether it keeps idempotency keys (default
    /// `thread-per-request`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Spanned<ServerKind>>,
}

/// `retry = { ... }` of a `[[service]]` that calls others: how it retries its calls. The
/// decision is the article's, as for the clients.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CallRetry {
    /// Base delay (default 100ms).
    #[serde(default = "defaults::base")]
    pub base: Duration,
    /// Cap of the exponential backoff (default 2s).
    #[serde(default = "defaults::cap")]
    pub cap: Spanned<Duration>,
    /// Retries after the first attempt, as the article counts them (default 3); 0 means the
    /// service never retries, as the SRE book advises for every layer but one.
    #[serde(default = "defaults::call_max_attempts")]
    pub max_attempts: Bounded<0, 100>,
    /// The backoff's growth per retry (default 2).
    #[serde(default = "defaults::multiplier")]
    pub multiplier: Positive,
    /// The statuses that may be retried, besides transport errors (default 429 and 503).
    #[serde(default = "defaults::retryable_statuses")]
    pub retryable_statuses: Vec<Bounded<400, 599>>,
    /// The failures without a response that may be retried (default all: `timeout`, `reset`,
    /// `refused`, as the article's procedure retries every transport error).
    #[serde(default = "defaults::retryable_transport_errors")]
    pub retryable_transport_errors: Vec<TransportError>,
    /// How the backoff is spread (default `full`).
    #[serde(default = "defaults::jitter")]
    pub jitter: Jitter,
    /// How Retry-After is treated (default `honor`).
    #[serde(default)]
    pub retry_after: RetryAfterMode,
    /// Repeat a non-idempotent call without key or status endpoint anyway.
    #[serde(default)]
    pub unsafe_retries: bool,
    /// Timeout of one attempt (default 1s); each gets `min(attempt_timeout, time left)`.
    /// `"none"`: an attempt may take all the time the call has left.
    #[serde(default = "defaults::call_attempt_timeout")]
    pub attempt_timeout: AttemptTimeout,
    /// The budget of a downstream call: `"propagate"` (default) gives it the time its caller
    /// has left, as gRPC propagates deadlines; a duration starts a fresh one for every call;
    /// `"propagate, at most 2s"` the caller's time left, at most that (an imported gRPC
    /// `timeout`).
    #[serde(default)]
    pub deadline: CallDeadline,
    /// Hedged calls instead of retries, as a policy's `hedging`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedging: Option<Spanned<Hedging>>,
    /// Client-side overload controls of this tier's calls, as a policy's `controls`; each
    /// instance of the service is one process, so every scope is one state per instance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controls: Vec<Spanned<ControlSpec>>,
    /// A retry to a fleet avoids the instances this call already tried, as a policy's
    /// `previous_hosts`.
    #[serde(default = "defaults::previous_hosts", skip_serializing_if = "is_zero")]
    pub previous_hosts: Bounded<0, 100>,
    /// The chance that a retry the decision allows is made, as a policy's
    /// `retry_probability`.
    #[serde(
        default = "defaults::retry_probability",
        skip_serializing_if = "is_one"
    )]
    pub retry_probability: Probability,
    /// Read the settings from the config this tier runs, as a policy's `import` (an edge
    /// proxy's Envoy `retry_policy`, a gRPC service config), relative to the scenario file;
    /// settings written in this table win over the imported ones.
    #[serde(default, skip_serializing)]
    pub import: Option<Spanned<String>>,
    /// With `import` of a gRPC service config of several `methodConfig` entries: the method
    /// whose policy is imported.
    #[serde(default, skip_serializing)]
    pub import_method: Option<String>,
    /// With `import` of an Istio VirtualService or a Linkerd ServiceProfile of several routes:
    /// the route's `name`.
    #[serde(default, skip_serializing)]
    pub import_route: Option<String>,
    /// With `import` of a Spring `application.yml` of several resilience4j instances: the
    /// instance's name.
    #[serde(default, skip_serializing)]
    pub import_instance: Option<String>,
    /// With `import` of an AWS shared config file: the profile (default: `default`).
    #[serde(default, skip_serializing)]
    pub import_profile: Option<String>,
}

/// `hedging = { max_attempts = 3, delay = "50ms", non_fatal_statuses = [503] }`: gRPC's hedging
/// policy (gRFC A6). The first attempt goes out at once and another every `delay` while none
/// has succeeded, up to `max_attempts` in all; an answer with a non-fatal status (or none, a
/// timeout or reset) sends the next one at once, a fatal status ends the call; the first
/// success wins and the others are cancelled (stopped at a service with `cancellation`, else
/// finished as wasted work). Hedges are never retried. Only a repeatable operation is hedged.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Hedging {
    /// Attempts in all, 2 to 5 (gRPC clients cap hedging at 5).
    pub max_attempts: Bounded<2, 5>,
    /// Time between hedges (default 0: all at once).
    #[serde(default)]
    pub delay: Duration,
    /// Statuses that send the next hedge at once instead of ending the call (default none).
    #[serde(default)]
    pub non_fatal_statuses: Vec<Bounded<400, 599>>,
}

/// The deadline of a downstream call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallDeadline {
    /// The time the caller of the request being served has left.
    #[default]
    Propagate,
    /// A fresh budget for every call.
    Fresh(Duration),
    /// The caller's time left, but at most this (`"propagate, at most 2s"`): a gRPC stub whose
    /// service config sets a `timeout` and whose server propagates deadlines.
    PropagateAtMost(Duration),
}

/// The timeout of one attempt: a duration, or `"none"`, which lets an attempt take all the time
/// its call has left (gRPC has no per-attempt timeout; Envoy without `per_try_timeout` waits
/// for the route timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptTimeout {
    /// An attempt gets `min(this, time left)`.
    After(Duration),
    /// An attempt gets the time left.
    None,
}

impl AttemptTimeout {
    /// The timeout in microseconds; `None` is longer than any deadline.
    pub fn limit_micros(self) -> crate::base::time::Micros {
        match self {
            AttemptTimeout::After(timeout) => timeout.micros(),
            AttemptTimeout::None => crate::base::time::Micros::MAX,
        }
    }
}

impl std::fmt::Display for AttemptTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AttemptTimeout::After(timeout) => timeout.fmt(f),
            AttemptTimeout::None => f.write_str("none"),
        }
    }
}

/// A failure without a response, as `retryable_transport_errors` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransportError {
    /// No answer within the attempt's timeout (lost, blackholed, or too slow).
    Timeout,
    /// The service reset the request it had accepted (a crash).
    Reset,
    /// The service refused the connection (down after a crash): Envoy's `connect-failure`.
    Refused,
}

impl TransportError {
    /// Every kind, in the order they are listed.
    pub const ALL: [TransportError; 3] = [
        TransportError::Timeout,
        TransportError::Reset,
        TransportError::Refused,
    ];
}

/// `rate_limit = { rate = 1000, burst = 100, scope = "global" }`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// Tokens per second.
    pub rate: Positive,
    /// Bucket size: requests allowed in a burst (default: one second of `rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<AtLeastOne>,
    /// `global` (default): one bucket; `client`: one bucket per client.
    #[serde(default)]
    pub scope: RateLimitScope,
    /// The Retry-After of a 429 is the time until a token is free, rounded up to a multiple of
    /// this (default 1ms; "1s" gives the whole seconds an HTTP header carries).
    #[serde(default = "defaults::retry_after_granularity")]
    pub retry_after_granularity: Spanned<Duration>,
}

/// Whose requests share a token bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RateLimitScope {
    /// All requests.
    #[default]
    Global,
    /// Each client's requests.
    Client,
}

/// `errors = { rate = 0.01, status = 503 }`: failures that do not depend on load.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Errors {
    /// Probability that a request fails.
    pub rate: Probability,
    /// Status of such a failure (default 503).
    #[serde(default = "defaults::overload_status")]
    pub status: Bounded<400, 599>,
    /// When the failure is answered: `arrival` (default), at once, without being processed;
    /// `after-service`, once a worker has done the request's work (and its calls).
    #[serde(default, skip_serializing_if = "is_default")]
    pub at: ErrorsAt,
    /// With `at = "after-service"`: the write of a non-idempotent request was committed before
    /// the error was answered (default false: nothing was written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub committed: Option<Spanned<bool>>,
}

/// When an injected error is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorsAt {
    /// As the request arrives, before any work: a worker is never held for it.
    #[default]
    Arrival,
    /// After the work: a 500 after the database was called.
    AfterService,
}

/// `deadline = { check = "dequeue", reject_cost = 0.05 }`: a service that refuses work whose
/// deadline has passed. The deadline is relative, as grpc-go sets it: the request's arrival
/// plus the timeout its caller sent (the time its attempt had left), so the network transit
/// before it arrived is not deducted.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerDeadline {
    /// Where it is checked (default `arrival`).
    #[serde(default)]
    pub check: DeadlineCheck,
    /// The worker time a refusal costs, as a share of the mean service time (default 0).
    #[serde(default)]
    pub reject_cost: Factor,
}

/// Where a service checks a request's deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeadlineCheck {
    /// As it arrives (a timeout of zero: already expired), as gRPC servers do before
    /// invoking the handler.
    #[default]
    Arrival,
    /// As it arrives and again when a worker takes it from the queue: the application drops
    /// work that waited past its deadline.
    Dequeue,
}

pub use server_kind::ServerKind;

/// Where a service keeps its idempotency keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdempotencyStore {
    /// A store that survives the service's crash (a database table, a replicated Redis).
    #[default]
    Durable,
    /// In the service's memory: a crash forgets every key, so a retry after it is processed
    /// again.
    InMemory,
}

/// What the upstream does while its capacity is zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outage {
    /// Requests wait in the queue (up to `queue_limit`) for capacity to return.
    #[default]
    Queue,
    /// Requests are refused at once with `overload_status`.
    Reject,
    /// Requests get no answer at all; clients time out.
    Blackhole,
    /// A crash: when capacity reaches zero every queued and in-service request is reset, and
    /// new connections are refused until capacity returns. Clients see transport errors.
    Crash,
}

/// What a repeat of an in-flight idempotency key gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InFlightRepeat {
    /// 409 Conflict, as the Idempotency-Key draft specifies.
    #[default]
    Reject,
    /// Wait for the first request to finish and replay its result.
    Wait,
}

/// `[[policy]]`: one client retry policy.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Name, unique within the scenario.
    pub name: Spanned<String>,
    /// Base delay (default 100ms, the article's).
    #[serde(default = "defaults::base")]
    pub base: Duration,
    /// Cap of the exponential backoff (default 2s).
    #[serde(default = "defaults::cap")]
    pub cap: Spanned<Duration>,
    /// Retry budget as the article counts it (default 3): a retry is allowed after attempts
    /// 0 to `max_attempts - 1`, so an operation is sent at most `max_attempts + 1` times; 0 is a
    /// client that never retries, the baseline a comparison needs.
    #[serde(default = "defaults::max_attempts")]
    pub max_attempts: Bounded<0, 100>,
    /// The backoff's growth per retry, `min(cap, base * multiplier^attempt)` (default 2, the
    /// article's; gRPC's `backoffMultiplier`).
    #[serde(default = "defaults::multiplier")]
    pub multiplier: Positive,
    /// The statuses that may be retried, besides transport errors (default 429 and 503, the
    /// article's); for example `[429, 500, 502, 503, 504]`.
    #[serde(default = "defaults::retryable_statuses")]
    pub retryable_statuses: Vec<Bounded<400, 599>>,
    /// The failures without a response that may be retried: `timeout` (the attempt timed
    /// out), `reset` (the service reset it), `refused` (the service refused the connection).
    /// Default all three, as the article's procedure retries every transport error; an Envoy
    /// that retries only `retriable-status-codes` retries none.
    #[serde(default = "defaults::retryable_transport_errors")]
    pub retryable_transport_errors: Vec<TransportError>,
    /// How the backoff is spread (default `full`).
    #[serde(default = "defaults::jitter")]
    pub jitter: Jitter,
    /// How Retry-After is treated (default `honor`).
    #[serde(default)]
    pub retry_after: RetryAfterMode,
    /// A naive client that retries operations the article says must not be retried (a POST
    /// without key or status endpoint), to show the duplicate writes that causes.
    #[serde(default)]
    pub unsafe_retries: bool,
    /// This client attaches an idempotency key to every operation (`true`) or to none
    /// (`false`), whatever the operations say; unset, the operations decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<bool>,
    /// This client uses (`true`) or ignores (`false`) the status endpoint of every operation;
    /// unset, the operations decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_endpoint: Option<bool>,
    /// This client's budget of a whole operation, instead of `clients.deadline` (an imported
    /// config's call timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Duration>,
    /// This client's timeout of one attempt, instead of `clients.attempt_timeout` (Envoy's
    /// `per_try_timeout`); `"none"`: an attempt may take all the time left before the deadline
    /// (a gRPC client, which has no per-attempt timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_timeout: Option<AttemptTimeout>,
    /// Read the retry settings from a client config (a gRPC service config, an Envoy route
    /// `retry_policy`, an Istio VirtualService or DestinationRule, a Linkerd ServiceProfile or
    /// annotations, resilience4j in a Spring `application.yml`, an AWS config file), relative
    /// to the scenario file. Settings written in
    /// this table win over the imported ones; the resolved scenario has them all written out.
    #[serde(default, skip_serializing)]
    pub import: Option<Spanned<String>>,
    /// With `import` of a gRPC service config of several `methodConfig` entries: the method
    /// whose policy is imported, `package.Service/Method` or `package.Service`.
    #[serde(default, skip_serializing)]
    pub import_method: Option<String>,
    /// With `import` of an Istio VirtualService or a Linkerd ServiceProfile of several routes:
    /// the route's `name`.
    #[serde(default, skip_serializing)]
    pub import_route: Option<String>,
    /// With `import` of a Spring `application.yml` of several resilience4j instances: the
    /// instance's name.
    #[serde(default, skip_serializing)]
    pub import_instance: Option<String>,
    /// With `import` of an AWS shared config file: the profile (default: `default`).
    #[serde(default, skip_serializing)]
    pub import_profile: Option<String>,
    /// A client that ignores the operation's deadline: every attempt waits the full
    /// `attempt_timeout` and retries go on until the retry budget is spent, long after the
    /// caller has given up. For showing why the deadline belongs to the operation.
    #[serde(default)]
    pub ignore_deadline: bool,
    /// What-if: in this policy's simulation every service keeps completed keys this long
    /// instead of its `idempotency_ttl` (each policy is simulated on its own, so policies can
    /// compare key stores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_ttl: Option<Duration>,
    /// Hedged requests instead of retries (gRPC's `hedgingPolicy`): more attempts sent before
    /// any fails; the first success wins. With hedging the retry settings do not apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedging: Option<Spanned<Hedging>>,
    /// Client-side overload controls, asked in this order after the decision says retry (and,
    /// for a breaker or adaptive throttling, before every send): retry budgets, gRPC
    /// throttling, the AWS retry quota, adaptive throttling, a circuit breaker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controls: Vec<Spanned<ControlSpec>>,
    /// A retry to a fleet avoids the instances this call already tried: a pick of one is
    /// drawn again, up to this many times (Envoy's `previous_hosts` retry host predicate with
    /// `host_selection_retry_max_attempts`; default 0, off).
    #[serde(default = "defaults::previous_hosts", skip_serializing_if = "is_zero")]
    pub previous_hosts: Bounded<0, 100>,
    /// The chance that a retry the decision allows is made (default 1: always), as a load
    /// generator or a retrial queue models a caller that gives up with probability
    /// `1 - retry_probability` after each failure; a retry not made ends the operation,
    /// `retry-declined`. Status checks and hedges are not affected.
    #[serde(
        default = "defaults::retry_probability",
        skip_serializing_if = "is_one"
    )]
    pub retry_probability: Probability,
    /// Topology settings changed for this policy's run only, with the keys of `--set`:
    /// `overrides = { "service.api.retry.max_attempts" = 0 }` compares retrying at every layer
    /// with retrying only at the edge in one scenario.
    #[serde(default, skip_serializing_if = "Overrides::is_empty")]
    pub overrides: Overrides,
    /// Users who retry by hand in this policy's run: after a failure or past their patience
    /// they start the operation again, a new call to the client (default: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_retry: Option<Spanned<manual_retry::ManualRetry>>,
}

impl Policy {
    /// A policy named `name` with every default: the article's settings.
    pub fn named(name: &str) -> Policy {
        let mut policy = defaults::policies().remove(0);
        policy.name = Spanned::new(0..0, name.to_string());
        policy
    }
}

/// A policy's `overrides`: dotted keys (as `--set` takes them) and TOML values. Nested tables
/// are read as dotted keys, so `{ service.api.workers = 10 }` and
/// `{ "service.api.workers" = 10 }` are the same.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// Where the table was written, for errors.
    pub span: std::ops::Range<usize>,
    /// Each dotted key and its value, sorted by key.
    pub entries: std::collections::BTreeMap<String, toml::Value>,
}

impl Overrides {
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The name of the policy a scenario without `[[policy]]` runs: the article's settings.
pub const DEFAULT_POLICY_NAME: &str = "article";

/// Default values, one function each because serde wants functions.
mod defaults {
    use super::*;

    pub fn previous_hosts() -> Bounded<0, 100> {
        Bounded(0)
    }

    pub fn retry_probability() -> Probability {
        Probability(1.0)
    }

    pub fn seed() -> u64 {
        1
    }
    pub fn processes() -> Spanned<Bounded<1, 100_000_000>> {
        Spanned::new(0..0, Bounded(1))
    }
    pub fn max_failed() -> Probability {
        Probability(0.01)
    }
    pub fn max_retries() -> Factor {
        Factor(0.1)
    }
    pub fn health_window() -> Spanned<Duration> {
        Spanned::new(0..0, Duration::from_ms(1000))
    }
    pub fn bucket() -> Spanned<Duration> {
        Spanned::new(0..0, Duration::from_ms(1000))
    }
    pub fn workload() -> Spanned<Workload> {
        Spanned::new(0..0, Workload::Open)
    }
    pub fn arrivals() -> Spanned<super::arrivals::ArrivalProcess> {
        Spanned::new(0..0, super::arrivals::ArrivalProcess::Poisson)
    }
    pub fn deadline() -> Duration {
        Duration::from_ms(5000)
    }
    pub fn attempt_timeout() -> Duration {
        Duration::from_ms(1000)
    }
    pub fn method() -> Spanned<String> {
        Spanned::new(0..0, "GET".to_string())
    }
    pub fn weight() -> Spanned<f64> {
        Spanned::new(0..0, 1.0)
    }
    pub fn operations() -> Vec<Operation> {
        vec![Operation {
            name: Spanned::new(0..0, "get".to_string()),
            method: method(),
            weight: weight(),
            idempotency_key: false,
            status_endpoint: false,
            path: Default::default(),
        }]
    }
    pub fn latency() -> Distribution {
        Distribution::Constant(Duration::from_ms(1))
    }
    pub fn queue_limit() -> Bounded<0, 100_000_000> {
        Bounded(1000)
    }
    pub fn overload_status() -> Bounded<400, 599> {
        Bounded(503)
    }
    pub fn idempotency_ttl() -> Duration {
        Duration::from_ms(24 * 3600 * 1000)
    }
    pub fn retry_after_granularity() -> Spanned<Duration> {
        Spanned::new(0..0, Duration::from_ms(1))
    }
    pub fn base() -> Duration {
        Duration::from_ms(100)
    }
    pub fn cap() -> Spanned<Duration> {
        Spanned::new(0..0, Duration::from_ms(2000))
    }
    pub fn max_attempts() -> Bounded<0, 100> {
        Bounded(3)
    }
    pub fn multiplier() -> Positive {
        Positive(2.0)
    }
    pub fn retryable_statuses() -> Vec<Bounded<400, 599>> {
        vec![Bounded(429), Bounded(503)]
    }
    pub fn call_max_attempts() -> Bounded<0, 100> {
        Bounded(3)
    }
    pub fn call_attempt_timeout() -> AttemptTimeout {
        AttemptTimeout::After(attempt_timeout())
    }
    pub fn retryable_transport_errors() -> Vec<TransportError> {
        TransportError::ALL.to_vec()
    }
    pub fn jitter() -> Jitter {
        Jitter::Full
    }
    pub fn policies() -> Vec<Policy> {
        vec![Policy {
            name: Spanned::new(0..0, DEFAULT_POLICY_NAME.to_string()),
            base: base(),
            cap: cap(),
            max_attempts: max_attempts(),
            multiplier: multiplier(),
            retryable_statuses: retryable_statuses(),
            retryable_transport_errors: retryable_transport_errors(),
            jitter: jitter(),
            retry_after: RetryAfterMode::Honor,
            unsafe_retries: false,
            ignore_deadline: false,
            deadline: None,
            attempt_timeout: None,
            hedging: None,
            import: None,
            import_method: None,
            import_route: None,
            import_instance: None,
            import_profile: None,
            idempotency_key: None,
            status_endpoint: None,
            idempotency_ttl: None,
            controls: Vec::new(),
            previous_hosts: previous_hosts(),
            retry_probability: retry_probability(),
            overrides: Overrides::default(),
            manual_retry: None,
        }]
    }
    /// The calls of a service without a `retry` table: sent once, each waiting as long as
    /// its caller does; the other settings are the table's defaults, written out so that
    /// `--set service.NAME.retry.max_attempts=2` has the article's backoff.
    pub fn no_call_retry() -> CallRetry {
        CallRetry {
            base: base(),
            cap: cap(),
            max_attempts: Bounded(0),
            multiplier: multiplier(),
            retryable_statuses: retryable_statuses(),
            retryable_transport_errors: retryable_transport_errors(),
            jitter: jitter(),
            retry_after: RetryAfterMode::Honor,
            unsafe_retries: false,
            attempt_timeout: AttemptTimeout::None,
            deadline: CallDeadline::Propagate,
            hedging: None,
            controls: Vec::new(),
            previous_hosts: previous_hosts(),
            retry_probability: retry_probability(),
            import: None,
            import_method: None,
            import_route: None,
            import_instance: None,
            import_profile: None,
        }
    }
}

impl Scenario {
    /// The scenario as TOML, every default written out.
    pub fn to_resolved_toml(&self) -> String {
        toml::to_string(self).expect("a validated scenario always serializes")
    }

    /// The services, in the file's order: the `[upstream]` alone, or the `[[service]]` tables.
    pub fn services(&self) -> Vec<&Service> {
        match &self.upstream {
            Some(upstream) => vec![upstream],
            None => self.service.iter().map(Spanned::get_ref).collect(),
        }
    }

    /// Each service's name and instances (1 outside a fleet), in [`Scenario::services`]'s
    /// order: what a metric's name may name (`refused@api#0`).
    pub fn service_shapes(&self) -> Vec<crate::vocabulary::metric::ServiceShape<'_>> {
        self.services()
            .into_iter()
            .map(|service| crate::vocabulary::metric::ServiceShape {
                name: service.name(),
                instances: service
                    .fleet
                    .as_ref()
                    .map_or(1, |fleet| fleet.get_ref().instances.get()),
            })
            .collect()
    }

    /// The names of the clients' operations, in the file's order: what a metric's name may
    /// name (`success_rate:pay`).
    pub fn operation_names(&self) -> Vec<&str> {
        self.clients
            .operations
            .iter()
            .map(|operation| operation.name.get_ref().as_str())
            .collect()
    }

    /// The index in [`Scenario::services`] of the service the clients call.
    pub fn entry(&self) -> usize {
        let named = self.clients.calls.as_ref().map(|name| name.get_ref());
        named
            .and_then(|name| self.services().iter().position(|s| s.name_is(name)))
            .unwrap_or(0)
    }

    /// Whether a `--set` change touched policy `index`: a key `policy.<index>...`,
    /// `policy.<its name>...`, or `policy.<field>` for every policy.
    pub fn changed_on_command_line(&self, index: usize) -> bool {
        self.command_line_changes.iter().any(|(key, _)| {
            let mut parts = key.split('.');
            if parts.next() != Some("policy") {
                return false;
            }
            match parts.next() {
                Some(selector) if selector.parse::<usize>().is_ok() => {
                    selector.parse::<usize>() == Ok(index)
                }
                Some(selector) if self.policy.iter().any(|p| p.name.get_ref() == selector) => {
                    self.policy[index].name.get_ref() == selector
                }
                _ => true,
            }
        })
    }

    /// The scenario as `policy` simulates it: its `overrides` applied to the topology. Every
    /// policy's overrides were checked when the scenario was loaded.
    pub fn for_policy(&self, policy: &Policy) -> std::borrow::Cow<'_, Scenario> {
        if policy.overrides.is_empty() {
            return std::borrow::Cow::Borrowed(self);
        }
        let overridden = load::apply_overrides(self, &policy.overrides)
            .expect("policy overrides are checked when the scenario is loaded");
        std::borrow::Cow::Owned(overridden)
    }
}

impl Service {
    /// The service's name: its own, or `upstream` for the `[upstream]` table.
    pub fn name(&self) -> &str {
        self.name
            .as_ref()
            .map_or("upstream", |name| name.get_ref().as_str())
    }

    pub(crate) fn name_is(&self, name: &str) -> bool {
        self.name
            .as_ref()
            .is_some_and(|own| own.get_ref().as_str() == name)
    }
}

/// Whether a count is zero, to leave it out of the resolved scenario.
fn is_zero<const MIN: u64, const MAX: u64>(value: &Bounded<MIN, MAX>) -> bool {
    value.get() == 0
}

/// Whether a setting is its default, to leave it out of the resolved scenario.
fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// Whether a probability is 1, its default where the field is left out of the resolved file.
fn is_one(value: &Probability) -> bool {
    value.get() == 1.0
}

/// How `deadline = "propagate, at most 2s"` begins.
const PROPAGATE_AT_MOST: &str = "propagate, at most ";

impl Serialize for CallDeadline {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            CallDeadline::Propagate => serializer.serialize_str("propagate"),
            CallDeadline::Fresh(budget) => budget.serialize(serializer),
            CallDeadline::PropagateAtMost(budget) => {
                serializer.serialize_str(&format!("{PROPAGATE_AT_MOST}{budget}"))
            }
        }
    }
}

/// A seed as a scenario writes it: a TOML integer, which stops at 2^63 - 1, or above that its
/// digits as a string, so that every seed a sweep derives (any `u64`) can be given to `run
/// --seed` or `--set seed=` and written back in the resolved scenario.
mod seed_text {
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};

    /// An integer where TOML has one, else the digits.
    pub fn serialize<S: Serializer>(seed: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        match i64::try_from(*seed) {
            Ok(small) => serializer.serialize_i64(small),
            Err(_) => serializer.serialize_str(&seed.to_string()),
        }
    }

    /// An integer from 0, or a string of its digits.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        struct Seed;
        impl Visitor<'_> for Seed {
            type Value = u64;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a seed: a whole number from 0 to 18446744073709551615 (above 9223372036854775807 written as a string of digits)")
            }

            fn visit_u64<E: de::Error>(self, seed: u64) -> Result<u64, E> {
                Ok(seed)
            }

            fn visit_i64<E: de::Error>(self, seed: i64) -> Result<u64, E> {
                u64::try_from(seed)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(seed), &self))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<u64, E> {
                text.parse()
                    .map_err(|_| E::invalid_value(de::Unexpected::Str(text), &self))
            }
        }
        deserializer.deserialize_any(Seed)
    }
}

impl<'de> Deserialize<'de> for CallDeadline {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text == "propagate" {
            return Ok(CallDeadline::Propagate);
        }
        let (at_most, budget) = match text.strip_prefix(PROPAGATE_AT_MOST) {
            Some(budget) => (true, budget),
            None => (false, text.as_str()),
        };
        match budget.parse::<Duration>() {
            Ok(budget) if budget.micros() > 0 && at_most => {
                Ok(CallDeadline::PropagateAtMost(budget))
            }
            Ok(budget) if budget.micros() > 0 => Ok(CallDeadline::Fresh(budget)),
            _ => Err(serde::de::Error::custom(format!(
                "deadline {text:?} is neither \"propagate\" (the caller's time left), a duration above zero such as \"2s\" (a fresh budget for every call), nor \"propagate, at most 2s\" (the caller's time left, at most that)"
            ))),
        }
    }
}

impl Serialize for AttemptTimeout {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for AttemptTimeout {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text == "none" {
            return Ok(AttemptTimeout::None);
        }
        text.parse::<Duration>()
            .map(AttemptTimeout::After)
            .map_err(|error| {
                serde::de::Error::custom(format!(
                    "{error}, or \"none\" (an attempt may take all the time its call has left)"
                ))
            })
    }
}

impl Serialize for Overrides {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.entries.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Overrides {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let table = Spanned::<toml::Table>::deserialize(deserializer)?;
        let span = table.span();
        let mut entries = std::collections::BTreeMap::new();
        flatten("", table.into_inner(), &mut entries);
        Ok(Overrides { span, entries })
    }
}

/// Nested tables as dotted keys: `{ a = { b = 1 } }` is `a.b = 1`. An empty table is kept
/// as a value, `a = {}`: a table of defaults (an `outlier_detection = {}`), not nothing.
fn flatten(
    prefix: &str,
    table: toml::Table,
    entries: &mut std::collections::BTreeMap<String, toml::Value>,
) {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) if !inner.is_empty() => flatten(&path, inner, entries),
            value => {
                entries.insert(path, value);
            }
        }
    }
}
