//! A policy's results in a few numbers, each named for what it measures, and the one table
//! that says how each is written, which values it takes, which way is better and what it means.
//!
//! The incident matters to several of them: the trigger (a capacity drop, a declared load
//! spike: see [`crate::scenario::incident`]) is the [`Incident`] window; `recovery_s` counts from
//! its end to lasting health by the scenario's [`HealthRule`], on the health series of 10 ms
//! steps rather than the buckets, so that its resolution is not the bucket's; the peak of attempts, goodput and failures are reported during it and after
//! it, because a synchronised herd shows in the peak after the incident and a collapse in the
//! goodput during it.

use super::{BucketCounts, HealthCounts, Measurements, ServiceBucket};
use crate::time::{MICROS_PER_MS, MICROS_PER_SECOND, Micros};

/// One policy's results in a few numbers. [`METRICS`] says what each means.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Operations started.
    pub operations: u64,
    /// Operations that succeeded.
    pub succeeded: u64,
    /// `succeeded / operations`.
    pub success_rate: f64,
    /// Operations succeeded per second of arrivals.
    pub goodput_rps: f64,
    /// Requests sent, first attempts and retries.
    pub attempts: u64,
    /// Status-endpoint requests sent.
    pub status_checks: u64,
    /// `(attempts + status_checks) / operations`: load per operation.
    pub amplification: f64,
    /// Writes beyond the first of one logical operation.
    pub duplicate_writes: u64,
    /// Operations that ended with their outcome unknown.
    pub unknown_results: u64,
    /// Attempts whose client stopped waiting.
    pub timeouts: u64,
    /// Mean latency of successful operations, ms.
    pub mean_ms: Option<f64>,
    /// Median latency of successful operations, ms.
    pub p50_ms: Option<f64>,
    /// 99th percentile latency of successful operations, ms.
    pub p99_ms: Option<f64>,
    /// The slowest successful operation, ms.
    pub max_ms: Option<f64>,
    /// Highest attempts per second of a bucket during the incident.
    pub peak_incident_rps: f64,
    /// Highest attempts per second of a bucket after the incident.
    pub peak_after_rps: f64,
    /// Operations succeeded per second during the incident.
    pub incident_goodput_rps: f64,
    /// Operations that ended without success during the incident.
    pub incident_failed: u64,
    /// Worker seconds spent on requests whose client had given up.
    pub wasted_work_s: f64,
    /// From the end of the incident until the system is healthy for good.
    pub recovery_s: Recovery,
}

/// How long the system took to recover from its incident.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Recovery {
    /// The scenario has no incident to recover from (steady conditions all run long).
    NoIncident,
    /// Healthy for good this many seconds after the incident ended.
    After(f64),
    /// Not healthy by the end of arrivals.
    Never,
}

impl Recovery {
    /// The seconds it took: infinite for never, undefined (NaN) without an incident.
    pub fn seconds(self) -> f64 {
        match self {
            Recovery::NoIncident => f64::NAN,
            Recovery::After(seconds) => seconds,
            Recovery::Never => f64::INFINITY,
        }
    }
}

impl std::fmt::Display for Recovery {
    /// `-` without an incident, `never`, or seconds with two decimals, the health series' 10 ms
    /// (`1.25s`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Recovery::NoIncident => f.write_str("-"),
            Recovery::After(seconds) => write!(f, "{seconds:.2}s"),
            Recovery::Never => f.write_str("never"),
        }
    }
}

/// How a metric is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count: written as an integer.
    Count,
    /// Anything else: written with six decimals.
    Number,
}

/// The values a metric takes in any run: what `merge` accepts in a shard's `results.csv`
/// (where an undefined value is empty and an infinite one `never`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    /// 0 or more, always defined; a count ([`Unit::Count`]) is also a whole number.
    NonNegative,
    /// A share of the operations: 0 to 1, always defined.
    Share,
    /// 0 or more, or undefined: a latency when nothing succeeded, a rate during the incident
    /// when there is none.
    NonNegativeOrUndefined,
    /// Seconds (0 or more), `never`, or undefined when there is no incident: [`Recovery`].
    Recovery,
}

/// Which way a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Higher is better (success, goodput).
    Higher,
    /// Lower is better (load, latency, failures, recovery).
    Lower,
    /// Neither: it describes the scenario (operations started).
    Neither,
}

/// One metric: its name, how it is written, which way is better, how to read it from what it
/// summarises (`S`: a run's [`Summary`], or a [`ServiceSummary`] for [`SERVICE_METRICS`]), and
/// what it means.
pub struct Metric<S: 'static = Summary> {
    /// The name, as `summary.csv`, sweeps and claims spell it (a service's metric followed by
    /// `@` and the service's name: [`super::named`]).
    pub name: &'static str,
    /// How it is written.
    pub unit: Unit,
    /// The values it takes in a run.
    pub domain: Domain,
    /// Which way is better.
    pub better: Better,
    /// Its value: NaN where undefined (no successful operation has no latency), infinity for a
    /// recovery that never came.
    pub value: fn(&S) -> f64,
    /// What it means, for the report.
    pub meaning: &'static str,
}

// By hand: derived, they would ask `S` to be `Clone`, `Copy` and `Debug` too.
impl<S> Clone for Metric<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Metric<S> {}

impl<S> std::fmt::Debug for Metric<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metric")
            .field("name", &self.name)
            .field("unit", &self.unit)
            .field("domain", &self.domain)
            .field("better", &self.better)
            .finish_non_exhaustive()
    }
}

/// Every summary metric, in the order of `summary.csv`.
pub const METRICS: [Metric; 20] = [
    Metric {
        name: "operations",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Neither,
        value: |s| s.operations as f64,
        meaning: "Operations started: one per call a client made, however many attempts it took.",
    },
    Metric {
        name: "succeeded",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Higher,
        value: |s| s.succeeded as f64,
        meaning: "Operations that succeeded.",
    },
    Metric {
        name: "success_rate",
        unit: Unit::Number,
        domain: Domain::Share,
        better: Better::Higher,
        value: |s| s.success_rate,
        meaning: "Operations that succeeded, as a share of those started.",
    },
    Metric {
        name: "goodput_rps",
        unit: Unit::Number,
        domain: Domain::NonNegative,
        better: Better::Higher,
        value: |s| s.goodput_rps,
        meaning: "Operations that succeeded, per second of arrivals: the useful work done.",
    },
    Metric {
        name: "attempts",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.attempts as f64,
        meaning: "Requests the clients sent: first attempts and retries.",
    },
    Metric {
        name: "status_checks",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.status_checks as f64,
        meaning: "Requests to status endpoints, asking whether a write happened.",
    },
    Metric {
        name: "amplification",
        unit: Unit::Number,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.amplification,
        meaning: "Requests the service received per operation: attempts plus status checks, divided by operations. 1 means no retries.",
    },
    Metric {
        name: "duplicate_writes",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.duplicate_writes as f64,
        meaning: "Writes committed beyond the first for one logical operation: a customer charged twice.",
    },
    Metric {
        name: "unknown_results",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.unknown_results as f64,
        meaning: "Operations that ended with their outcome unknown: the write may or may not have happened, and someone has to reconcile it.",
    },
    Metric {
        name: "timeouts",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.timeouts as f64,
        meaning: "Attempts whose client stopped waiting before an answer came.",
    },
    Metric {
        name: "mean_ms",
        unit: Unit::Number,
        domain: Domain::NonNegativeOrUndefined,
        better: Better::Lower,
        value: |s| s.mean_ms.unwrap_or(f64::NAN),
        meaning: "Mean latency of the operations that succeeded, from the first attempt to the answer, in milliseconds.",
    },
    Metric {
        name: "p50_ms",
        unit: Unit::Number,
        domain: Domain::NonNegativeOrUndefined,
        better: Better::Lower,
        value: |s| s.p50_ms.unwrap_or(f64::NAN),
        meaning: "Median latency of the operations that succeeded, in milliseconds.",
    },
    Metric {
        name: "p99_ms",
        unit: Unit::Number,
        domain: Domain::NonNegativeOrUndefined,
        better: Better::Lower,
        value: |s| s.p99_ms.unwrap_or(f64::NAN),
        meaning: "99th percentile latency of the operations that succeeded, in milliseconds.",
    },
    Metric {
        name: "max_ms",
        unit: Unit::Number,
        domain: Domain::NonNegativeOrUndefined,
        better: Better::Lower,
        value: |s| s.max_ms.unwrap_or(f64::NAN),
        meaning: "The slowest operation that succeeded, in milliseconds: when every client starts at once, the time until the last one is done.",
    },
    Metric {
        name: "peak_incident_rps",
        unit: Unit::Number,
        domain: Domain::NonNegativeOrUndefined,
        better: Better::Lower,
        value: |s| s.peak_incident_rps,
        meaning: "The highest rate of attempts in any time bucket during the incident; undefined without one.",
    },
    Metric {
        name: "peak_after_rps",
        unit: Unit::Number,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.peak_after_rps,
        meaning: "The highest rate of attempts in any time bucket after the incident: the height of the second wave.",
    },
    Metric {
        name: "incident_goodput_rps",
        unit: Unit::Number,
        domain: Domain::NonNegativeOrUndefined,
        better: Better::Higher,
        value: |s| s.incident_goodput_rps,
        meaning: "Operations that succeeded per second during the incident; undefined without one.",
    },
    Metric {
        name: "incident_failed",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.incident_failed as f64,
        meaning: "Operations that ended without success during the incident.",
    },
    Metric {
        name: "wasted_work_s",
        unit: Unit::Number,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.wasted_work_s,
        meaning: "Worker-seconds the services spent on requests whose caller had already given up.",
    },
    Metric {
        name: "recovery_s",
        unit: Unit::Number,
        domain: Domain::Recovery,
        better: Better::Lower,
        value: |s| s.recovery_s.seconds(),
        meaning: "Seconds from the end of the incident until the system is healthy for good by the scenario's health rule, to 10 ms; \"never\" if it is not healthy by the end of arrivals, or the incident has not ended by then; undefined (empty, null, -) in a scenario without an incident.",
    },
];

/// The metric called `name`, if there is one.
pub fn metric(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|metric| metric.name == name)
}

/// Every metric's name, in order.
pub fn metric_names() -> impl Iterator<Item = &'static str> {
    METRICS.iter().map(|metric| metric.name)
}

/// Formats a metric as `summary.csv` and a sweep's `results.csv` hold it: counts as integers,
/// other values with six decimals, `never` for infinity, empty for undefined.
pub fn format_metric<S>(metric: &Metric<S>, value: f64) -> String {
    format_value(metric.unit, value)
}

/// Formats a value of a metric of `unit` as [`format_metric`] does.
pub fn format_value(unit: Unit, value: f64) -> String {
    if value.is_nan() {
        String::new()
    } else if value.is_infinite() {
        "never".to_string()
    } else if unit == Unit::Count {
        format!("{value:.0}")
    } else {
        format!("{value:.6}")
    }
}

/// Reads a metric back from its text: empty is undefined (NaN), `never` infinity, anything else
/// a finite number (`NaN` or `inf` spelled out are not what [`format_metric`] writes).
pub fn parse_metric(text: &str) -> Result<f64, String> {
    match text {
        "" => Ok(f64::NAN),
        "never" => Ok(f64::INFINITY),
        _ => text
            .parse()
            .ok()
            .filter(|value: &f64| value.is_finite())
            .ok_or_else(|| format!("{} is not a metric value", crate::escape::quoted(text))),
    }
}

impl Summary {
    /// The metric called `name` as a number; `None` for an unknown name.
    pub fn metric(&self, name: &str) -> Option<f64> {
        metric(name).map(|metric| (metric.value)(self))
    }
}

/// Every metric of one service, in the order of its block in `summary.json` (which is written
/// from this table): the run's [`ServiceSummary`], named `METRIC@SERVICE` in sweeps, requirements
/// and claims ([`super::named`]). Load and refusals are better lower; what a service merely did
/// (served, wrote, replayed, let go of) has no better direction.
pub const SERVICE_METRICS: [Metric<ServiceSummary>; 30] = [
    Metric {
        name: "amplification",
        unit: Unit::Number,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.amplification,
        meaning: "Requests its callers sent it (attempts and status checks) per user operation: how much the retries above it multiplied the users' load. 1 at the service the clients call means no client retried.",
    },
    Metric {
        name: "requests",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.requests() as f64,
        meaning: "Requests its callers sent it: first attempts, retries and status checks.",
    },
    Metric {
        name: "first_attempts",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.first_attempts as f64,
        meaning: "First attempts its callers sent it: its share of the users' operations, multiplied by the retries of the tiers above its callers.",
    },
    Metric {
        name: "retries",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.retries as f64,
        meaning: "Retries its callers sent it.",
    },
    Metric {
        name: "status_checks",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.status_checks as f64,
        meaning: "Status-endpoint requests its callers sent it.",
    },
    Metric {
        name: "timeouts",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.timeouts as f64,
        meaning: "Attempts to it whose caller stopped waiting before an answer came.",
    },
    Metric {
        name: "received",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.received as f64,
        meaning: "Requests that reached it (sent and not lost on the way).",
    },
    Metric {
        name: "served_at_once",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Neither,
        value: |s| s.totals.served_at_once as f64,
        meaning: "Requests that found a free worker at once.",
    },
    Metric {
        name: "queued",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.queued as f64,
        meaning: "Requests that waited in its queue.",
    },
    Metric {
        name: "served",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Neither,
        value: |s| s.totals.served as f64,
        meaning: "Requests a worker finished: its own work and its downstream calls.",
    },
    Metric {
        name: "rejected_overload",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.rejected_overload as f64,
        meaning: "Requests refused because its queue was full.",
    },
    Metric {
        name: "rejected_outage",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.rejected_outage as f64,
        meaning: "Requests refused while its capacity was zero (`outage = \"reject\"`, or crashed).",
    },
    Metric {
        name: "rate_limited",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.rate_limited as f64,
        meaning: "Requests refused by its rate limiter (429).",
    },
    Metric {
        name: "conflicts",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.conflicts as f64,
        meaning: "Requests refused with 409 because one with the same idempotency key was in flight.",
    },
    Metric {
        name: "errors",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.errors as f64,
        meaning: "Requests answered with an injected error.",
    },
    Metric {
        name: "downstream_failures",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.downstream_failures as f64,
        meaning: "Requests answered with its failure status because a downstream call failed for good.",
    },
    Metric {
        name: "dropped_expired",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.dropped_expired as f64,
        meaning: "Requests dropped from its queue because the caller had given up (`drop_expired`).",
    },
    Metric {
        name: "shed",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.shed as f64,
        meaning: "Requests shed by its queue discipline (CoDel) and answered as an overload.",
    },
    Metric {
        name: "concurrency_limited",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.concurrency_limited as f64,
        meaning: "Requests refused by its concurrency limit.",
    },
    Metric {
        name: "cancelled",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.cancelled as f64,
        meaning: "Requests dropped or stopped because the caller had gone (`cancellation`).",
    },
    Metric {
        name: "crashes",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.crashes as f64,
        meaning: "Its crashes under overload.",
    },
    Metric {
        name: "collisions",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.collisions as f64,
        meaning: "Writes to an optimistic row that collided with another.",
    },
    Metric {
        name: "resets",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.resets as f64,
        meaning: "Requests reset by its crashes, while queued, in service or waiting on a key.",
    },
    Metric {
        name: "replayed",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Neither,
        value: |s| s.totals.replayed as f64,
        meaning: "Requests answered from its idempotency-key store without new work.",
    },
    Metric {
        name: "writes",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Neither,
        value: |s| s.totals.writes as f64,
        meaning: "Writes it committed (a leaf service): duplicates included.",
    },
    Metric {
        name: "released",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Neither,
        value: |s| s.totals.released as f64,
        meaning: "Requests a worker let go of: served, failed downstream, or reset by a crash.",
    },
    Metric {
        name: "peak_requests_rps",
        unit: Unit::Number,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.peak_requests_rps,
        meaning: "The highest rate of requests sent to it in any time bucket.",
    },
    Metric {
        name: "peak_queue_len",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.peak_queue_len as f64,
        meaning: "The longest its queue was at any instant.",
    },
    Metric {
        name: "wasted_work_s",
        unit: Unit::Number,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.wasted_work_s,
        meaning: "Worker-seconds it spent on requests whose caller had already given up.",
    },
    Metric {
        name: "rejection_work_s",
        unit: Unit::Number,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.rejection_work_us as f64 / MICROS_PER_SECOND as f64,
        meaning: "Worker-seconds it spent refusing requests (`rejection_cost`).",
    },
];

/// One service's results in a few numbers: its share of the load and what it did with it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceSummary {
    /// The service's name.
    pub name: String,
    /// Requests its callers sent it (attempts and status checks) per user operation: how much
    /// the retries above it multiplied the users' load.
    pub amplification: f64,
    /// The highest requests per second sent to it in any bucket.
    pub peak_requests_rps: f64,
    /// The longest its queue was at any instant.
    pub peak_queue_len: u64,
    /// Worker-seconds it spent on requests whose caller had given up.
    pub wasted_work_s: f64,
    /// Its counts over the whole run.
    pub totals: ServiceBucket,
}

/// When the system counts as healthy: over a `window` of time, at most `max_failed` of the
/// operations that ended in it failed, and retries added at most `max_retries` to its first
/// attempts.
///
/// The window is what keeps the rule about the system and not about noise: a 50 ms bucket
/// holds a few dozen operations, and two unlucky timeouts among them are already 1% failed.
/// A second of traffic says whether the storm is over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HealthRule {
    /// The largest share of failed operations (default 1%).
    pub max_failed: f64,
    /// The largest ratio of retries to first attempts (default 10%).
    pub max_retries: f64,
    /// The time the counts are summed over (default 1 s; at least one step of the health
    /// series).
    pub window: Micros,
}

impl Default for HealthRule {
    fn default() -> Self {
        HealthRule {
            max_failed: 0.01,
            max_retries: 0.1,
            window: MICROS_PER_SECOND,
        }
    }
}

impl HealthRule {
    /// Whether a window's counts are healthy.
    pub fn is_healthy(&self, window: &HealthCounts) -> bool {
        let failed = window.failed as f64;
        let ended = window.succeeded as f64 + failed;
        failed <= self.max_failed * ended
            && window.retries as f64 <= self.max_retries * window.first_attempts as f64
    }
}

/// What a run of consecutive buckets adds up to: the counts that a claim's window and the
/// incident's metrics are computed from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Its length in seconds.
    pub seconds: f64,
    /// Operations that succeeded in it.
    pub succeeded: u64,
    /// Operations that failed in it.
    pub failed: u64,
    /// Requests sent in it.
    pub attempts: u64,
    /// First attempts sent in it.
    pub first_attempts: u64,
    /// Retries sent in it.
    pub retries: u64,
    /// Attempts per second of its busiest bucket; NaN for a window of no bucket.
    pub peak_attempts_rps: f64,
}

impl Window {
    /// Adds up `buckets`, each `bucket` long.
    pub fn of(buckets: &[BucketCounts], bucket: Micros) -> Window {
        let sum = |field: fn(&BucketCounts) -> u64| buckets.iter().map(field).sum::<u64>();
        let bucket_s = bucket as f64 / MICROS_PER_SECOND as f64;
        Window {
            seconds: buckets.len() as f64 * bucket_s,
            succeeded: sum(|b| b.succeeded),
            failed: sum(|b| b.failed),
            attempts: sum(|b| b.attempts),
            first_attempts: sum(|b| b.first_attempts),
            retries: sum(|b| b.retries),
            peak_attempts_rps: buckets
                .iter()
                .map(|b| b.attempts as f64)
                .fold(f64::NAN, f64::max)
                / bucket_s,
        }
    }

    /// `count` per second of the window; NaN for a window of no bucket.
    pub fn per_second(&self, count: u64) -> f64 {
        if self.seconds > 0.0 {
            count as f64 / self.seconds
        } else {
            f64::NAN
        }
    }
}

/// The incident of a run (the trigger: see [`crate::scenario::incident`]), the end of
/// arrivals, and the rule that says when the system is healthy again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Incident {
    /// When it starts, and when it ends (`None`: not by the end of arrivals); `None` without
    /// an incident.
    pub window: Option<(Micros, Option<Micros>)>,
    /// End of arrivals: buckets after it only drain.
    pub duration: Micros,
    /// When a window is healthy.
    pub health: HealthRule,
}

impl Measurements {
    /// The summary of these measurements.
    pub fn summary(&self, incident: Incident) -> Summary {
        let total = |field: fn(&BucketCounts) -> u64| self.buckets.iter().map(field).sum::<u64>();
        let operations = self.operations;
        let succeeded = total(|b| b.succeeded);
        let attempts = total(|b| b.attempts);
        let status_checks = total(|b| b.status_checks);
        let ratio = |numerator: u64| {
            if operations == 0 {
                0.0
            } else {
                numerator as f64 / operations as f64
            }
        };
        let to_ms = |micros: f64| micros / MICROS_PER_MS as f64;
        let seconds = |micros: Micros| micros as f64 / MICROS_PER_SECOND as f64;
        let (start, end) = incident.window.unwrap_or((0, Some(0)));
        let end = end.unwrap_or(Micros::MAX);
        let during = self.window(start, end);
        let after = self.window(end, Micros::MAX);
        Summary {
            operations,
            succeeded,
            success_rate: ratio(succeeded),
            goodput_rps: succeeded as f64 / seconds(incident.duration).max(1e-9),
            attempts,
            status_checks,
            amplification: ratio(attempts + status_checks),
            duplicate_writes: total(|b| b.duplicate_writes),
            unknown_results: total(|b| b.unknown_results),
            timeouts: total(|b| b.timeouts),
            mean_ms: (succeeded > 0).then(|| to_ms(self.latency_sum_us as f64 / succeeded as f64)),
            p50_ms: self.total_latency.quantile(0.5).map(to_ms),
            p99_ms: self.total_latency.quantile(0.99).map(to_ms),
            max_ms: (succeeded > 0).then(|| to_ms(self.latency_max_us as f64)),
            // A peak over no bucket is 0: nothing was sent.
            peak_incident_rps: if incident.window.is_some() {
                during.peak_attempts_rps.max(0.0)
            } else {
                f64::NAN
            },
            peak_after_rps: after.peak_attempts_rps.max(0.0),
            incident_goodput_rps: if incident.window.is_some() {
                during.per_second(during.succeeded)
            } else {
                f64::NAN
            },
            incident_failed: during.failed,
            wasted_work_s: self
                .services
                .iter()
                .flat_map(|service| &service.buckets)
                .map(|b| b.wasted_work_us)
                .sum::<u64>() as f64
                / MICROS_PER_SECOND as f64,
            recovery_s: self.recovery_s(incident),
        }
    }

    /// The buckets that overlap `[from, to)`, added up.
    pub fn window(&self, from: Micros, to: Micros) -> Window {
        Window::of(&self.buckets[self.buckets_between(from, to)], self.bucket)
    }

    /// The buckets that overlap `[from, to)`.
    fn buckets_between(&self, from: Micros, to: Micros) -> std::ops::Range<usize> {
        if to <= from {
            return 0..0;
        }
        let first = (from / self.bucket) as usize;
        let last = to.div_ceil(self.bucket).min(self.buckets.len() as Micros) as usize;
        first.min(last)..last
    }

    /// Seconds from the incident's end to the start of the first step of the health series
    /// from which every health window (whole windows sliding by one step, up to the end of
    /// arrivals) is healthy; never if the last one is not, or if the incident has not ended
    /// before the end of arrivals.
    fn recovery_s(&self, incident: Incident) -> Recovery {
        let Some((_, end)) = incident.window else {
            return Recovery::NoIncident;
        };
        let Some(end) = end.filter(|&end| end < incident.duration) else {
            return Recovery::Never;
        };
        let step = self.health_step;
        let first = (end / step) as usize;
        let last = (incident.duration.div_ceil(step) as usize).min(self.health.len());
        if first >= last {
            return Recovery::Never;
        }
        // Whole windows only: a window cut short by the end of arrivals could hold nothing but
        // the instants of an outage in which nothing ended and nothing was retried yet, and call
        // that healthy. With less than one window left after the incident, the rest is one.
        let width = (incident.health.window.div_ceil(step) as usize)
            .max(1)
            .min(last - first);
        let mut window = HealthCounts::default();
        for counts in &self.health[last - width..last] {
            window.add(counts);
        }
        let mut recovered = None;
        for index in (first..=last - width).rev() {
            if index < last - width {
                // Slide back one step: the step before comes in, the last one goes out.
                window.add(&self.health[index]);
                window.subtract(&self.health[index + width]);
            }
            if !incident.health.is_healthy(&window) {
                break;
            }
            recovered = Some(index);
        }
        recovered.map_or(Recovery::Never, |index| {
            let start = (index as Micros * step).max(end);
            Recovery::After((start - end) as f64 / MICROS_PER_SECOND as f64)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Recorder;

    fn healthy() -> BucketCounts {
        BucketCounts {
            first_attempts: 100,
            attempts: 100,
            succeeded: 100,
            ..BucketCounts::default()
        }
    }

    fn storm() -> BucketCounts {
        BucketCounts {
            first_attempts: 100,
            retries: 300,
            attempts: 400,
            succeeded: 20,
            failed: 80,
            ..BucketCounts::default()
        }
    }

    /// The health counts of a bucket.
    fn health_of(bucket: &BucketCounts) -> HealthCounts {
        HealthCounts {
            succeeded: bucket.succeeded,
            failed: bucket.failed,
            first_attempts: bucket.first_attempts,
            retries: bucket.retries,
        }
    }

    /// Measurements of 1 s `buckets`, whose health series has one step per bucket.
    fn measurements(buckets: Vec<BucketCounts>) -> Measurements {
        let mut recorder = Recorder::new(MICROS_PER_SECOND, MICROS_PER_SECOND);
        recorder.operation_started();
        let mut measurements = recorder.finish(Vec::new(), 0);
        measurements.health_step = MICROS_PER_SECOND;
        measurements.health = buckets.iter().map(health_of).collect();
        measurements.buckets = buckets;
        measurements
    }

    fn incident(start_s: u64, end_s: u64, duration_s: u64) -> Incident {
        Incident {
            window: Some((start_s * MICROS_PER_SECOND, Some(end_s * MICROS_PER_SECOND))),
            duration: duration_s * MICROS_PER_SECOND,
            health: HealthRule::default(),
        }
    }

    #[test]
    fn recovery_is_measured_from_the_incident_end_to_lasting_health() {
        let run = measurements(vec![
            healthy(),
            storm(),
            storm(),
            healthy(),
            storm(),
            healthy(),
            healthy(),
        ]);
        // Healthy for good from bucket 5.
        assert_eq!(run.recovery_s(incident(1, 2, 7)), Recovery::After(3.0));
        assert_eq!(run.recovery_s(incident(1, 6, 7)), Recovery::After(0.0));
        let never = measurements(vec![healthy(), storm()]);
        assert_eq!(never.recovery_s(incident(0, 0, 2)), Recovery::Never);
        let calm = Incident {
            window: None,
            ..incident(0, 0, 2)
        };
        assert_eq!(never.recovery_s(calm), Recovery::NoIncident);
        // A looser rule forgives the storm's retries but not its failures...
        let loose = Incident {
            health: HealthRule {
                max_failed: 0.01,
                max_retries: 5.0,
                ..HealthRule::default()
            },
            ..incident(1, 2, 7)
        };
        assert_eq!(run.recovery_s(loose), Recovery::After(3.0));
        // ... and one that forgives both calls it healthy from the incident's end.
        let lax = Incident {
            health: HealthRule {
                max_failed: 0.9,
                max_retries: 5.0,
                ..HealthRule::default()
            },
            ..incident(1, 2, 7)
        };
        assert_eq!(run.recovery_s(lax), Recovery::After(0.0));
    }

    /// One unlucky failure among 50 operations is 2% of its bucket but 0.7% of the two
    /// buckets' 150: a two-bucket window calls the system healthy as soon as the storm ends.
    #[test]
    fn a_health_window_sums_buckets_so_noise_is_not_a_storm() {
        let mut unlucky = healthy();
        unlucky.first_attempts = 50;
        unlucky.attempts = 50;
        unlucky.succeeded = 49;
        unlucky.failed = 1;
        let run = measurements(vec![healthy(), storm(), unlucky, healthy(), healthy()]);
        let bucket_wide = incident(1, 1, 5);
        assert_eq!(run.recovery_s(bucket_wide), Recovery::After(2.0));
        let two_buckets = Incident {
            health: HealthRule {
                window: 2 * MICROS_PER_SECOND,
                ..HealthRule::default()
            },
            ..bucket_wide
        };
        assert_eq!(run.recovery_s(two_buckets), Recovery::After(1.0));
    }

    /// A crash in the last second: the buckets after it hold refused attempts that have not
    /// failed or been retried yet, so on their own they look healthy. Only whole windows count,
    /// and the one that holds the crash is not healthy: the run never recovered.
    #[test]
    fn a_window_cut_short_by_the_end_of_arrivals_does_not_count() {
        let silent = BucketCounts::default();
        let run = measurements(vec![healthy(), storm(), healthy(), storm(), silent]);
        let two_buckets = Incident {
            health: HealthRule {
                window: 2 * MICROS_PER_SECOND,
                ..HealthRule::default()
            },
            ..incident(0, 1, 5)
        };
        assert_eq!(run.recovery_s(two_buckets), Recovery::Never);
        // With less than a window left after the incident, what is left is the window.
        let late = Incident {
            health: HealthRule {
                window: 10 * MICROS_PER_SECOND,
                ..HealthRule::default()
            },
            ..incident(0, 2, 5)
        };
        assert_eq!(run.recovery_s(late), Recovery::Never);
        let calm_end = measurements(vec![storm(), healthy(), healthy()]);
        assert_eq!(
            calm_end.recovery_s(Incident {
                health: late.health,
                ..incident(0, 1, 3)
            }),
            Recovery::After(0.0)
        );
    }

    /// Recovery is measured on the health series, to its step, not to a bucket (issue 22).
    /// 10 ms steps: two operations fail in each step up to 2.37 s, one succeeds in each from then
    /// on (so that a window holding one failing step is 2% failed, unhealthy); the incident
    /// ended at 2 s, so with 1 s windows the first healthy one starts at 2.37 s and recovery
    /// is 0.37 s exactly. An incident that has not ended by the end of arrivals has no
    /// recovery: never.
    #[test]
    fn recovery_is_measured_to_a_step_of_the_health_series() {
        let mut run = measurements(vec![healthy(); 5]);
        run.health_step = 10 * crate::time::MICROS_PER_MS;
        run.health = (0..500)
            .map(|step| HealthCounts {
                succeeded: u64::from(step >= 237),
                failed: 2 * u64::from(step < 237),
                first_attempts: 1,
                retries: 0,
            })
            .collect();
        assert_eq!(run.recovery_s(incident(1, 2, 5)), Recovery::After(0.37));
        // From an end after the storm, recovery is immediate.
        assert_eq!(run.recovery_s(incident(1, 3, 5)), Recovery::After(0.0));
        let endless = Incident {
            window: Some((MICROS_PER_SECOND, None)),
            ..incident(1, 2, 5)
        };
        assert_eq!(run.recovery_s(endless), Recovery::Never);
        assert_eq!(run.recovery_s(incident(1, 5, 5)), Recovery::Never);
    }

    #[test]
    fn peaks_goodput_and_failures_are_split_at_the_incident() {
        let mut spike = storm();
        spike.attempts = 900;
        let run = measurements(vec![healthy(), storm(), storm(), spike, healthy()]);
        let summary = run.summary(incident(1, 3, 5));
        assert_eq!(summary.peak_incident_rps, 400.0);
        assert_eq!(summary.peak_after_rps, 900.0);
        assert_eq!(summary.incident_goodput_rps, 20.0);
        assert_eq!(summary.incident_failed, 160);
        assert_eq!(summary.goodput_rps, 260.0 / 5.0);
        // Without an incident, nothing is "during" and everything is "after".
        let none = run.summary(incident(0, 0, 5));
        assert_eq!((none.peak_incident_rps, none.peak_after_rps), (0.0, 900.0));
        assert_eq!(none.incident_failed, 0);
    }

    #[test]
    fn every_summary_metric_has_a_value_and_one_entry() {
        let summary = measurements(vec![healthy()]).summary(incident(0, 0, 1));
        for metric in METRICS {
            assert!(summary.metric(metric.name).is_some(), "{}", metric.name);
            assert_eq!(
                METRICS.iter().filter(|m| m.name == metric.name).count(),
                1,
                "{}",
                metric.name
            );
        }
        assert_eq!(summary.metric("p99_ms").map(f64::is_nan), Some(true));
        assert_eq!(summary.metric("nonsense"), None);
        let count = metric("operations").unwrap();
        assert_eq!(format_metric(count, 12.0), "12");
        let number = metric("recovery_s").unwrap();
        assert_eq!(format_metric(number, f64::INFINITY), "never");
        assert_eq!(format_metric(number, 1.5), "1.500000");
    }

    #[test]
    fn health_thresholds() {
        let rule = HealthRule::default();
        assert!(rule.is_healthy(&health_of(&healthy())));
        assert!(!rule.is_healthy(&health_of(&storm())));
        let one_percent_failed = BucketCounts {
            succeeded: 99,
            failed: 1,
            ..healthy()
        };
        assert!(rule.is_healthy(&health_of(&one_percent_failed)));
        let too_many_retries = BucketCounts {
            retries: 11,
            ..healthy()
        };
        assert!(!rule.is_healthy(&health_of(&too_many_retries)));
    }
}
