//! A policy's results in a few numbers, each named for what it measures, and the one table
//! that says how each is written, which values it takes, which way is better and what it means.
//!
//! The incident matters to several of them: the trigger (a capacity drop, a declared load
//! spike: see [`crate::scenario::incident`]) is the [`Incident`] window; `recovery_s` counts from
//! its end to lasting health by the scenario's [`HealthRule`], on the health series of 10 ms
//! steps rather than the buckets, so that its resolution is not the bucket's; the peak of attempts, goodput and failures are reported during it and after
//! it, because a synchronised herd shows in the peak after the incident and a collapse in the
//! goodput during it.

pub mod baseline;
mod named;

use crate::base::time::{MICROS_PER_SECOND, Micros};
use crate::vocabulary::counts::{
    BucketCounts, HealthCounts, InstanceTotals, IntentCounts, ServiceBucket,
};

pub use named::{
    AT, INSTANCE, NamedMetric, OPERATION, ServiceShape, WINDOW_METRICS, check_name,
    claim_direction, direction, domain, metric_value,
};

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
    /// Highest attempts per second of a bucket after the incident; without an incident, of the
    /// whole run.
    pub peak_after_rps: f64,
    /// Operations succeeded per second during the incident.
    pub incident_goodput_rps: f64,
    /// Operations that ended without success during the incident.
    pub incident_failed: u64,
    /// Worker seconds spent on requests whose client had given up.
    pub wasted_work_s: f64,
    /// From the end of the incident until the system is healthy for good.
    pub recovery_s: Recovery,
    /// The health before the incident, under the baseline rule with an incident.
    pub baseline: Option<crate::vocabulary::metric::baseline::Baseline>,
    /// The users' intents: with presses by hand, each spans several operations; without,
    /// each is one.
    pub intents: IntentCounts,
    /// Each operation's results, in the scenario's order, with two operations or more (else
    /// empty: the run's are the operation's).
    pub by_operation: Vec<OperationSummary>,
}

/// One operation's results, in a scenario of two operations or more: the run's metrics of the
/// users' side that one operation has on its own ([`OPERATION_METRICS`]).
#[derive(Debug, Clone, PartialEq)]
pub struct OperationSummary {
    /// The operation's name.
    pub name: String,
    /// Operations of it started.
    pub operations: u64,
    /// Of them, those that succeeded.
    pub succeeded: u64,
    /// `succeeded / operations`.
    pub success_rate: f64,
    /// Of them, those that succeeded per second of arrivals.
    pub goodput_rps: f64,
    /// Requests its clients sent: first attempts and retries.
    pub attempts: u64,
    /// Status-endpoint requests its clients sent.
    pub status_checks: u64,
    /// `(attempts + status_checks) / operations`.
    pub amplification: f64,
    /// Writes beyond the first of one of its logical operations.
    pub duplicate_writes: u64,
    /// Of its operations, those that ended with their outcome unknown.
    pub unknown_results: u64,
    /// Mean latency of its successful operations, ms.
    pub mean_ms: Option<f64>,
    /// Their median latency, ms.
    pub p50_ms: Option<f64>,
    /// Their 99th percentile latency, ms.
    pub p99_ms: Option<f64>,
    /// The slowest of them, ms.
    pub max_ms: Option<f64>,
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
    /// Already unhealthy before the incident, so there is no health to return to
    /// ([`crate::vocabulary::metric::baseline`]).
    UnhealthyBefore,
}

/// How `recovery_s` is written for a run that was unhealthy before its incident.
pub const UNHEALTHY_BEFORE: &str = "unhealthy before";

impl Recovery {
    /// The seconds it took: infinite for never, undefined (NaN) without an incident or when
    /// unhealthy before it.
    pub fn seconds(self) -> f64 {
        match self {
            Recovery::NoIncident | Recovery::UnhealthyBefore => f64::NAN,
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
            Recovery::UnhealthyBefore => f.write_str(UNHEALTHY_BEFORE),
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
    /// `@` and the service's name: [`named`]).
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
        meaning: "The highest rate of attempts in any time bucket after the incident: the height of the second wave. In a scenario without an incident, of the whole run.",
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

/// The metrics of the users' intents, when users retry by hand (a policy's `manual_retry`):
/// not among `summary.csv`'s columns, which stay those of [`METRICS`], but in `summary.json`'s
/// `intents` block of a scenario whose users retry by hand, and named as the run's metrics
/// are by claims and sweeps. Without presses by hand each operation is an intent.
pub const INTENT_METRICS: [Metric; 5] = [
    Metric {
        name: "intents",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Neither,
        value: |s| s.intents.started as f64,
        meaning: "What the users set out to do: one per arrival, spanning the operation it starts with and those its user starts again by hand.",
    },
    Metric {
        name: "manual_retries",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.intents.manual_retries as f64,
        meaning: "Operations users started again by hand, after a failure or past their patience: new calls to the client, each an operation.",
    },
    Metric {
        name: "intents_succeeded",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Higher,
        value: |s| s.intents.succeeded as f64,
        meaning: "Intents whose user saw a success.",
    },
    Metric {
        name: "intent_success_rate",
        unit: Unit::Number,
        domain: Domain::Share,
        better: Better::Higher,
        value: |s| {
            if s.intents.started == 0 {
                0.0
            } else {
                s.intents.succeeded as f64 / s.intents.started as f64
            }
        },
        meaning: "Intents whose user saw a success, as a share of those started.",
    },
    Metric {
        name: "requests_per_intent",
        unit: Unit::Number,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| {
            if s.intents.started == 0 {
                0.0
            } else {
                (s.attempts + s.status_checks) as f64 / s.intents.started as f64
            }
        },
        meaning: "Requests the service received per intent: the SDK's retries and the users' presses multiplied.",
    },
];

/// A metric of the run that each operation has too, named `METRIC:OPERATION` ([`named`]) in a
/// scenario of two operations or more: its unit, domain, direction and meaning are the run's
/// metric's of the same name ([`OperationMetric::of_run`]), its value the operation's.
#[derive(Debug, Clone, Copy)]
pub struct OperationMetric {
    /// The name, the run's metric's.
    pub name: &'static str,
    /// Its value for one operation: NaN where undefined.
    pub value: fn(&OperationSummary) -> f64,
}

impl OperationMetric {
    /// The run's metric of the same name, whose unit, domain, direction and meaning it has.
    pub fn of_run(&self) -> &'static Metric {
        metric(self.name).expect("an operation's metric is one of the run's")
    }
}

/// The run's metrics each operation has, in the order of its entry in `summary.json`'s
/// `per_operation` list (which is written from this table): what its users started, what
/// succeeded and how fast, the load it put on the system and the writes it duplicated. The
/// others are the system's (the incident's peaks, recovery, wasted work) or per attempt.
pub const OPERATION_METRICS: [OperationMetric; 13] = [
    OperationMetric {
        name: "operations",
        value: |o| o.operations as f64,
    },
    OperationMetric {
        name: "succeeded",
        value: |o| o.succeeded as f64,
    },
    OperationMetric {
        name: "success_rate",
        value: |o| o.success_rate,
    },
    OperationMetric {
        name: "goodput_rps",
        value: |o| o.goodput_rps,
    },
    OperationMetric {
        name: "attempts",
        value: |o| o.attempts as f64,
    },
    OperationMetric {
        name: "status_checks",
        value: |o| o.status_checks as f64,
    },
    OperationMetric {
        name: "amplification",
        value: |o| o.amplification,
    },
    OperationMetric {
        name: "duplicate_writes",
        value: |o| o.duplicate_writes as f64,
    },
    OperationMetric {
        name: "unknown_results",
        value: |o| o.unknown_results as f64,
    },
    OperationMetric {
        name: "mean_ms",
        value: |o| o.mean_ms.unwrap_or(f64::NAN),
    },
    OperationMetric {
        name: "p50_ms",
        value: |o| o.p50_ms.unwrap_or(f64::NAN),
    },
    OperationMetric {
        name: "p99_ms",
        value: |o| o.p99_ms.unwrap_or(f64::NAN),
    },
    OperationMetric {
        name: "max_ms",
        value: |o| o.max_ms.unwrap_or(f64::NAN),
    },
];

/// The metric called `name`, if there is one.
pub fn metric(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|metric| metric.name == name)
}

/// The operation metric called `name`, if there is one.
pub fn operation_metric(name: &str) -> Option<&'static OperationMetric> {
    OPERATION_METRICS.iter().find(|metric| metric.name == name)
}

/// The intent metric called `name`, if there is one.
pub fn intent_metric(name: &str) -> Option<&'static Metric> {
    INTENT_METRICS.iter().find(|metric| metric.name == name)
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

/// Formats a summary metric of `summary` as [`format_metric`] does, with `unhealthy before`
/// for the `recovery_s` of a run unhealthy before its incident.
pub fn format_summary_metric(metric: &Metric, summary: &Summary) -> String {
    if metric.name == "recovery_s" && summary.recovery_s == Recovery::UnhealthyBefore {
        UNHEALTHY_BEFORE.to_string()
    } else {
        format_metric(metric, (metric.value)(summary))
    }
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

/// Reads a metric back from its text: empty and `unhealthy before` are undefined (NaN), `never`
/// infinity, anything else
/// a finite number (`NaN` or `inf` spelled out are not what [`format_metric`] writes).
pub fn parse_metric(text: &str) -> Result<f64, String> {
    match text {
        "" | UNHEALTHY_BEFORE => Ok(f64::NAN),
        "never" => Ok(f64::INFINITY),
        _ => text
            .parse()
            .ok()
            .filter(|value: &f64| value.is_finite())
            .ok_or_else(|| {
                format!(
                    "{} is not a metric value",
                    crate::base::escape::quoted(text)
                )
            }),
    }
}

impl Summary {
    /// The metric called `name` (one of [`METRICS`] or [`INTENT_METRICS`]) as a number; `None`
    /// for an unknown name.
    pub fn metric(&self, name: &str) -> Option<f64> {
        metric(name)
            .or_else(|| intent_metric(name))
            .map(|metric| (metric.value)(self))
    }
}

/// Every metric of one service, in the order of its block in `summary.json` (which is written
/// from this table): the run's [`ServiceSummary`], named `METRIC@SERVICE` in sweeps, requirements
/// and claims ([`named`]). Load and refusals are better lower; what a service merely did
/// (served, wrote, replayed, let go of) has no better direction.
pub const SERVICE_METRICS: [Metric<ServiceSummary>; 31] = [
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
        meaning: "Requests answered with an injected error (at arrival, or after the work with `errors.at = \"after-service\"`).",
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
        meaning: "Requests dropped from its queue because the caller had given up (`drop_expired`), or refused because the deadline they carried had passed (`deadline`).",
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
        name: "duplicate_writes",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |s| s.totals.duplicate_writes as f64,
        meaning: "Of its writes, those beyond the first of one logical operation (of one intent, when users retry by hand) in the data it keeps (a fleet's instances share theirs): a duplicate row or a second charge here. The run's `duplicate_writes` is the sum over the services.",
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

/// The service metrics that are the run's own in a scenario of one service, so that its
/// `summary.json`'s `upstream` block leaves them out (its `duplicate_writes` is the run's).
pub const TOPOLOGY_SERVICE_METRICS: [&str; 1] = ["duplicate_writes"];

/// A fleet's metrics (a service run as several instances: `fleet = { instances = N }`), named
/// `METRIC@SERVICE` like a service's, in a scenario of one service too; a service that is not a
/// fleet has none ([`named`] refuses them there). Not in `summary.json` or a sweep's columns
/// unless asked for: they are read from the instances' totals there.
pub const FLEET_METRICS: [Metric<ServiceSummary>; 1] = [Metric {
    name: "busiest_share",
    unit: Unit::Number,
    domain: Domain::Share,
    better: Better::Lower,
    value: busiest_share,
    meaning: "The largest share of the fleet's requests that one instance was sent: 1/N for N instances is a perfect balance, 1 everything on one. A fleet sent nothing counts as balanced (1/N).",
}];

/// The largest share of a fleet's requests one instance was sent (1 outside a fleet: its one
/// instance is sent everything; 1/N for a fleet of N sent nothing).
fn busiest_share(service: &ServiceSummary) -> f64 {
    let requests = || {
        service
            .instances
            .iter()
            .map(|instance| instance.counts.requests())
    };
    let total: u64 = requests().sum();
    match (service.instances.len(), total) {
        (0, _) => 1.0,
        (instances, 0) => 1.0 / instances as f64,
        _ => requests().max().unwrap_or(0) as f64 / total as f64,
    }
}

/// The metrics of each instance of a fleet, named `METRIC@SERVICE#K` for instance K (from 0),
/// in the order of its entry under `instances` in `summary.json` (which is written from this
/// table). What an instance is sent is its balancer's doing, and an ejection may be right or
/// wrong: neither has a better direction.
pub const INSTANCE_METRICS: [Metric<InstanceTotals>; 6] = [
    Metric {
        name: "requests",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Neither,
        value: |i| i.counts.requests() as f64,
        meaning: "Requests its callers' balancers sent the instance: first attempts, retries and status checks.",
    },
    Metric {
        name: "served",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Neither,
        value: |i| i.counts.served as f64,
        meaning: "Requests a worker of the instance finished.",
    },
    Metric {
        name: "refused",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |i| i.counts.rejected() as f64,
        meaning: "Requests the instance refused, shed or answered without serving, of every kind: a full queue, an outage, its rate limiter or concurrency limit, a conflict, an injected error, a failed downstream call.",
    },
    Metric {
        name: "crashes",
        unit: Unit::Count,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |i| i.counts.crashes as f64,
        meaning: "The instance's crashes under overload.",
    },
    Metric {
        name: "down_s",
        unit: Unit::Number,
        domain: Domain::NonNegative,
        better: Better::Lower,
        value: |i| i.down_us as f64 / MICROS_PER_SECOND as f64,
        meaning: "Seconds the instance was down after crashing under overload.",
    },
    Metric {
        name: "ejected_s",
        unit: Unit::Number,
        domain: Domain::NonNegative,
        better: Better::Neither,
        value: |i| i.ejected_us as f64 / MICROS_PER_SECOND as f64,
        meaning: "Seconds its callers' outlier detection kept the instance ejected, averaged over the callers: long for a bad instance is the detection working, for a good one lost capacity.",
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
    /// A fleet's instances, each one's counts over the whole run, in order (empty outside a
    /// fleet).
    pub instances: Vec<InstanceTotals>,
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
    /// Whether a window within the noise of the health before the incident is healthy too
    /// (the default, [`crate::vocabulary::metric::baseline`]), or only the limits count.
    pub baseline: bool,
}

impl Default for HealthRule {
    fn default() -> Self {
        HealthRule {
            max_failed: 0.01,
            max_retries: 0.1,
            window: MICROS_PER_SECOND,
            baseline: true,
        }
    }
}

impl HealthRule {
    /// Whether a window's counts are healthy.
    pub fn is_healthy(&self, window: &HealthCounts) -> bool {
        self.failures_healthy(window) && self.retries_healthy(window)
    }

    /// Whether at most `max_failed` of the operations that ended in the window failed.
    pub fn failures_healthy(&self, window: &HealthCounts) -> bool {
        let failed = window.failed as f64;
        failed <= self.max_failed * (window.succeeded as f64 + failed)
    }

    /// Whether retries added at most `max_retries` to the window's first attempts.
    pub fn retries_healthy(&self, window: &HealthCounts) -> bool {
        window.retries as f64 <= self.max_retries * window.first_attempts as f64
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
