//! How a service behaves under overload, as a scenario file writes it: what a rejection
//! costs, its queue discipline, an adaptive concurrency limit, crashing under load and coming
//! back cold, slowing down with the requests it serves at once, a cache that must warm up.
//! Every one of them is off unless written, and a service without them behaves (and draws
//! random numbers) exactly as before they existed.

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::base::time::Duration;
use crate::base::values::{Bounded, CoherencyKappa, ContentionSigma, Factor, Probability};

/// `rejection_cost = { queue_full = 0.1, ... }`: how long a rejection holds a worker, as a
/// fraction of the mean service time, per kind of rejection. Rejecting is work: parsing,
/// authenticating and answering a request cost about as much as serving a cheap one (Google
/// SRE book, ch. 21), so under enough overload a server spends itself on rejections.
///
/// There is no cost of refusing during an outage: a service refuses then only while no worker
/// is up (capacity zero with `outage = "reject"`, or down after a crash, when "it accepts
/// nothing": `OVERLOAD.md` §3.3), so the refusal has no worker to hold, and a crashed server's
/// refused connection is the kernel's, not its workers'. The field `outage` once written here
/// never cost anything; `outage = 0` is still read (older resolved scenarios write it), any
/// other value is refused at its place.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RejectionCost {
    /// A full queue's 503.
    #[serde(default)]
    pub queue_full: Factor,
    /// The rate limiter's 429.
    #[serde(default)]
    pub rate_limit: Factor,
    /// No longer a cost (see above): read only to refuse a value other than 0 at its place.
    #[serde(default, skip_serializing)]
    pub outage: Option<Spanned<Factor>>,
    /// The concurrency limit's rejection.
    #[serde(default)]
    pub concurrency_limit: Factor,
    /// A request the queue discipline sheds.
    #[serde(default)]
    pub shed: Factor,
}

/// `queue_discipline = { kind = "codel", target = "5ms", interval = "100ms" }`.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QueueDiscipline {
    /// `fifo`, `lifo`, `codel` or `adaptive-lifo`.
    pub kind: DisciplineKind,
    /// CoDel's target sojourn (default 5 ms, RFC 8289); adaptive LIFO's M, the longest wait
    /// while the queue stands (default 5 ms, "Fail at Scale").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Duration>,
    /// CoDel's interval (default 100 ms, RFC 8289); adaptive LIFO's N, the window and the
    /// longest wait otherwise (default 100 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Duration>,
}

/// The queue disciplines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DisciplineKind {
    /// First in, first out (the default without `queue_discipline`).
    Fifo,
    /// Last in, first out.
    Lifo,
    /// CoDel: shed at dequeue once the sojourn stays above target.
    Codel,
    /// FIFO until a queue stands, then LIFO with a short allowed wait.
    AdaptiveLifo,
}

/// `concurrency_limit = { algorithm = "vegas" }`: requests let into the service at once
/// (queued or served), learnt from latency; above it a request is rejected at once.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConcurrencyLimit {
    /// `fixed`, `vegas`, `gradient2` or `envoy-gradient`.
    pub algorithm: LimitKind,
    /// `fixed`: the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<Bounded<1, 10_000_000>>,
    /// The starting limit (Netflix's default 20; Envoy starts at its floor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial: Option<Bounded<1, 10_000_000>>,
    /// The floor (Gradient2 20, Envoy's `min_concurrency` 3; Vegas 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<Bounded<1, 10_000_000>>,
    /// The ceiling (Vegas 1000, Gradient2 200, Envoy 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<Bounded<1, 10_000_000>>,
    /// Status of a rejection (default 503: gRPC's UNAVAILABLE and Envoy's answer).
    #[serde(default = "default_limit_status")]
    pub status: Bounded<400, 599>,
}

fn default_limit_status() -> Bounded<400, 599> {
    Bounded(503)
}

/// The limit algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitKind {
    /// A fixed limit.
    Fixed,
    /// Netflix concurrency-limits' VegasLimit.
    Vegas,
    /// Netflix concurrency-limits' Gradient2Limit.
    Gradient2,
    /// Envoy's adaptive concurrency filter, gradient controller.
    EnvoyGradient,
}

/// `crash = { queue_above = 500, hold = "1s", restart_after = "10s" }`: the service crashes
/// when its queue (or the requests in it, queued and served) has stayed above a threshold for
/// `hold`; everything it holds is reset, it refuses connections for `restart_after`, then it
/// comes back (cold, with `cold_start`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Crash {
    /// Crash when more than this many requests wait in the queue...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_above: Option<Bounded<0, 100_000_000>>,
    /// ... or when more than this many are in the service, queued or served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight_above: Option<Bounded<0, 100_000_000>>,
    /// For how long the condition must hold.
    pub hold: Duration,
    /// How long the service is down before it comes back.
    pub restart_after: Spanned<Duration>,
}

/// `cold_start = { factor = 3, requests = 1000 }`: after a restart the service time is
/// multiplied by `1 + (factor - 1) * exp(-n / requests)`, `n` the requests served since the
/// restart (or `exp(-t / time)`, `t` the time since it): caches, JIT and connection pools are
/// cold (SRE book, ch. 22).
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ColdStart {
    /// The multiplier right after the restart, at least 1.
    pub factor: Factor,
    /// It decays with requests served: `e` of its excess is left after this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<Bounded<1, 1_000_000_000>>,
    /// It decays with time: `e` of its excess is left after this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<Duration>,
}

/// `contention = { sigma = 0.02, kappa = 0.0001 }`: the service slows down with the requests
/// it serves at once, as Gunther's Universal Scalability Law says (N. J. Gunther, "Guerrilla
/// Capacity Planning", 2007): a request's work takes `1 + sigma (N - 1) + kappa N (N - 1)`
/// times its drawn service time, `N` the requests its workers hold when it starts, itself
/// included. Past `N* = sqrt((1 - sigma) / kappa)` more concurrency serves fewer requests a
/// second, which lets timeouts and retries hold a service in collapse. See
/// [`crate::model::ContentionModel`] for what is counted and why the multiplier is fixed when
/// the work starts.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Contention {
    /// The serialised share of the work (a lock, one database connection): each other request
    /// in service adds this share of a service time.
    pub sigma: ContentionSigma,
    /// Crosstalk (cache lines, lock state, replicas kept consistent): with `N` requests in
    /// service, `N (N - 1)` times this share of a service time is added, growing with the
    /// square of the concurrency.
    pub kappa: CoherencyKappa,
}

/// `optimistic_row = { collision_status = 503 }`: the service is one row with a version, as in
/// AWS's backoff simulation (M. Brooker, "Exponential Backoff And Jitter", AWS Architecture
/// Blog, 2015). A request reads the row when a worker has done its `service_time`, and its
/// write, carrying the version read, arrives two network delays later (the answer to the read
/// and the write itself travel). The write succeeds only if nobody wrote in between; else it
/// is a collision, answered with `collision_status`, which the caller retries.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OptimisticRow {
    /// The answer to a collision (default 503, so that the article's decision retries it:
    /// 409 would be final).
    #[serde(default = "default_collision_status")]
    pub collision_status: Bounded<400, 599>,
}

fn default_collision_status() -> Bounded<400, 599> {
    Bounded(503)
}

/// `cache = { hit_ratio = 0.9, hit_time = "1ms", fill = "look-aside", fills = 1000 }`: a
/// cache in front of the work. A hit costs `hit_time`, a miss `service_time`. The hit ratio
/// is `hit_ratio` until the service restarts; then it starts at 0 and each fill moves it
/// `1/fills` of the way back (Bronson et al., "Metastable Failures in Distributed Systems",
/// HotOS '21: a look-aside cache is filled only by answers that reach the caller in time, so
/// under overload it may never refill).
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Cache {
    /// The steady hit ratio.
    pub hit_ratio: Probability,
    /// The work of a hit.
    pub hit_time: Duration,
    /// Which answers fill it.
    #[serde(default)]
    pub fill: CacheFill,
    /// Fills that bring it most of the way back (`1 - 1/e`) after a restart.
    pub fills: Bounded<1, 1_000_000_000>,
}

/// Which answers fill a cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheFill {
    /// Only answers to callers still waiting: the caller writes the cache.
    #[default]
    LookAside,
    /// Every completed miss: the service writes the cache.
    ReadThrough,
}
