//! What a simulation measured: counters per time bucket, and the summary derived from them.
//!
//! The engine only counts ([`Recorder`]); everything else here is arithmetic on the counts, so
//! the writers and charts read plain numbers and never reach into the engine. Every count is
//! attributed to the bucket of the simulated time at which it happened: an attempt to the bucket
//! in which it was sent, an operation's success or failure to the bucket in which it ended, a
//! duplicate write to the bucket in which it was committed.

use std::collections::BTreeMap;

use crate::decision::StopReason;
use crate::histogram::Histogram;
use crate::time::{MICROS_PER_MS, MICROS_PER_SECOND, Micros};

/// Bins per power of two of the per-bucket latency histograms (0.4% error).
const BUCKET_PRECISION: u32 = 7;
/// Bins per power of two of the whole-run latency histogram (0.05% error).
const TOTAL_PRECISION: u32 = 10;

/// Counts of one time bucket.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BucketCounts {
    /// Requests sent by clients (first attempts and retries, not status checks).
    pub attempts: u64,
    /// First attempts of operations.
    pub first_attempts: u64,
    /// Attempts after the first.
    pub retries: u64,
    /// Status-endpoint requests sent.
    pub status_checks: u64,
    /// Successful responses received.
    pub ok: u64,
    /// 429 responses from the rate limiter received.
    pub rejected_429: u64,
    /// Overload rejections (`overload_status`, 503 by default) received.
    pub rejected_503: u64,
    /// 409 responses (idempotency key in flight) received.
    pub conflicts_409: u64,
    /// Load-independent error responses received.
    pub errors: u64,
    /// Connection resets and refusals seen by clients.
    pub resets: u64,
    /// Attempts whose client stopped waiting.
    pub timeouts: u64,
    /// Operations that ended successfully.
    pub succeeded: u64,
    /// Operations that ended without success (including unknown results).
    pub failed: u64,
    /// Operations that ended with the outcome unknown (the write may or may not have happened).
    pub unknown_results: u64,
    /// Operations that ended without success, by reason, in the order of [`FAILURE_REASONS`].
    pub failures: [u64; FAILURE_REASONS.len()],
    /// Writes committed beyond the first for one logical operation.
    pub duplicate_writes: u64,
    /// Requests waiting in the upstream's queue at the end of the bucket.
    pub queue_len: u64,
    /// Workers available at the end of the bucket.
    pub workers_available: u64,
    /// Worker time spent on requests whose client had already given up, in microseconds.
    pub wasted_work_us: u64,
}

/// Counters of the upstream as a whole, for checks against queueing theory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UpstreamCounts {
    /// Requests that reached the upstream.
    pub arrivals: u64,
    /// Requests that found a free worker at once.
    pub served_at_once: u64,
    /// Requests that waited in the queue.
    pub queued: u64,
    /// Requests refused because the queue was full (or the upstream down).
    pub refused: u64,
    /// Requests served to completion.
    pub served: u64,
    /// Queued requests dropped because their client had given up (`drop_expired`).
    pub dropped_expired: u64,
    /// Requests answered from the idempotency-key store without new work.
    pub replayed: u64,
    /// Writes committed.
    pub writes: u64,
}

/// Everything one simulation of one policy measured.
#[derive(Debug, Clone)]
pub struct Measurements {
    /// Bucket width.
    pub bucket: Micros,
    /// Counts per bucket, from time zero to the end of the last operation.
    pub buckets: Vec<BucketCounts>,
    /// Latency of successful operations per bucket (by end time).
    pub latency: Vec<Histogram>,
    /// Latency of all successful operations.
    pub total_latency: Histogram,
    /// Sum of the latencies of successful operations, for an exact mean.
    pub latency_sum_us: u128,
    /// The upstream's own counters.
    pub upstream: UpstreamCounts,
    /// Operations started.
    pub operations: u64,
    /// Events the engine processed.
    pub events: u64,
    /// Most operations in flight at once (started, not yet ended or with attempts still out).
    pub peak_operations_in_flight: u64,
    /// Most attempts in flight at once (in the network, queued, in service or awaited).
    pub peak_attempts_in_flight: u64,
}

/// The engine's handle for counting.
#[derive(Debug)]
pub struct Recorder {
    measurements: Measurements,
}

impl Recorder {
    /// A recorder with buckets of `bucket` microseconds.
    pub fn new(bucket: Micros) -> Recorder {
        Recorder {
            measurements: Measurements {
                bucket,
                buckets: Vec::new(),
                latency: Vec::new(),
                total_latency: Histogram::new(TOTAL_PRECISION),
                latency_sum_us: 0,
                upstream: UpstreamCounts::default(),
                operations: 0,
                events: 0,
                peak_operations_in_flight: 0,
                peak_attempts_in_flight: 0,
            },
        }
    }

    /// The counts of the bucket holding time `t`, created on first use.
    #[inline]
    pub fn at(&mut self, t: Micros) -> &mut BucketCounts {
        let index = (t / self.measurements.bucket) as usize;
        let buckets = &mut self.measurements.buckets;
        if index >= buckets.len() {
            buckets.resize_with(index + 1, BucketCounts::default);
        }
        &mut buckets[index]
    }

    /// The upstream's counters.
    #[inline]
    pub fn upstream(&mut self) -> &mut UpstreamCounts {
        &mut self.measurements.upstream
    }

    /// An operation started.
    #[inline]
    pub fn operation_started(&mut self) {
        self.measurements.operations += 1;
    }

    /// An operation that started at `start` succeeded at `end`.
    pub fn succeeded(&mut self, start: Micros, end: Micros) {
        let latency = end - start;
        self.at(end).succeeded += 1;
        let index = (end / self.measurements.bucket) as usize;
        let histograms = &mut self.measurements.latency;
        if index >= histograms.len() {
            histograms.resize_with(index + 1, || Histogram::new(BUCKET_PRECISION));
        }
        histograms[index].record(latency);
        self.measurements.total_latency.record(latency);
        self.measurements.latency_sum_us += u128::from(latency);
    }

    /// An operation ended without success at `end`, for `reason`, one of [`FAILURE_REASONS`].
    pub fn failed(&mut self, end: Micros, reason: &'static str) {
        let index = FAILURE_REASONS
            .iter()
            .position(|known| *known == reason)
            .expect("the engine fails operations only for known reasons");
        let counts = self.at(end);
        counts.failed += 1;
        counts.failures[index] += 1;
        if reason == StopReason::UnknownResult.name() || reason == UNKNOWN_STATUS {
            counts.unknown_results += 1;
        }
    }

    /// Notes how many operations and attempts are in flight.
    #[inline]
    pub fn in_flight(&mut self, operations: usize, attempts: usize) {
        let measurements = &mut self.measurements;
        measurements.peak_operations_in_flight = measurements
            .peak_operations_in_flight
            .max(operations as u64);
        measurements.peak_attempts_in_flight =
            measurements.peak_attempts_in_flight.max(attempts as u64);
    }

    /// Counts one processed event.
    #[inline]
    pub fn count_event(&mut self) {
        self.measurements.events += 1;
    }

    /// Events processed so far.
    #[inline]
    pub fn events(&self) -> u64 {
        self.measurements.events
    }

    /// The measurements, with bucket and histogram lists padded to the same length.
    pub fn finish(mut self) -> Measurements {
        let length = self
            .measurements
            .buckets
            .len()
            .max(self.measurements.latency.len());
        self.measurements
            .buckets
            .resize_with(length, BucketCounts::default);
        self.measurements
            .latency
            .resize_with(length, || Histogram::new(BUCKET_PRECISION));
        self.measurements
    }
}

/// The failure reason of an operation whose status check could not say what happened.
pub const UNKNOWN_STATUS: &str = "status-unknown";

/// Why an operation can end without success: the decision's reasons, in the order of its
/// checks, then [`UNKNOWN_STATUS`].
pub const FAILURE_REASONS: [&str; 8] = [
    "unknown-result",
    "not-transient",
    "invalid-attempt",
    "max-attempts",
    "invalid-delay",
    "invalid-retry-after",
    "deadline-exhausted",
    UNKNOWN_STATUS,
];

/// One policy's results in a few numbers. See the README for each definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Operations started.
    pub operations: u64,
    /// Operations that succeeded.
    pub succeeded: u64,
    /// `succeeded / operations`.
    pub success_rate: f64,
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
    /// Highest attempts per second of any bucket.
    pub peak_attempts_rps: f64,
    /// Worker seconds spent on requests whose client had given up.
    pub wasted_work_s: f64,
    /// Seconds from the end of the incident until the system is healthy for good; `None`
    /// means never (within the run).
    pub recovery_s: Option<f64>,
}

/// The names of the summary's metrics, as `summary.csv` spells them and as sweeps require or
/// minimise them.
pub const SUMMARY_METRICS: [&str; 15] = [
    "operations",
    "succeeded",
    "success_rate",
    "attempts",
    "status_checks",
    "amplification",
    "duplicate_writes",
    "unknown_results",
    "timeouts",
    "mean_ms",
    "p50_ms",
    "p99_ms",
    "peak_attempts_rps",
    "wasted_work_s",
    "recovery_s",
];

/// Metrics that count things; their values print as integers.
const COUNTS: [&str; 7] = [
    "operations",
    "succeeded",
    "attempts",
    "status_checks",
    "duplicate_writes",
    "unknown_results",
    "timeouts",
];

/// Whether `metric` counts things.
pub fn is_count(metric: &str) -> bool {
    COUNTS.contains(&metric)
}

/// Formats a metric as `summary.csv` and a sweep's `results.csv` hold it: counts as integers,
/// other values with six decimals, `never` for infinity, empty for undefined.
pub fn format_metric(name: &str, value: f64) -> String {
    if value.is_nan() {
        String::new()
    } else if value.is_infinite() {
        "never".to_string()
    } else if is_count(name) {
        format!("{value:.0}")
    } else {
        format!("{value:.6}")
    }
}

/// Reads a metric back from its text.
pub fn parse_metric(text: &str) -> Result<f64, String> {
    match text {
        "" => Ok(f64::NAN),
        "never" => Ok(f64::INFINITY),
        _ => text
            .parse()
            .map_err(|_| format!("{text:?} is not a metric value")),
    }
}

impl Summary {
    /// The metric called `name` (one of [`SUMMARY_METRICS`]) as a number: NaN where it is
    /// undefined (no successful operation has no latency), infinity for a recovery that never
    /// came. `None` for an unknown name.
    pub fn metric(&self, name: &str) -> Option<f64> {
        let count = |value: u64| value as f64;
        Some(match name {
            "operations" => count(self.operations),
            "succeeded" => count(self.succeeded),
            "success_rate" => self.success_rate,
            "attempts" => count(self.attempts),
            "status_checks" => count(self.status_checks),
            "amplification" => self.amplification,
            "duplicate_writes" => count(self.duplicate_writes),
            "unknown_results" => count(self.unknown_results),
            "timeouts" => count(self.timeouts),
            "mean_ms" => self.mean_ms.unwrap_or(f64::NAN),
            "p50_ms" => self.p50_ms.unwrap_or(f64::NAN),
            "p99_ms" => self.p99_ms.unwrap_or(f64::NAN),
            "peak_attempts_rps" => self.peak_attempts_rps,
            "wasted_work_s" => self.wasted_work_s,
            "recovery_s" => self.recovery_s.unwrap_or(f64::INFINITY),
            _ => return None,
        })
    }
}

/// When the incident ends and how long the run's arrivals last, for [`Summary::recovery_s`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryWindow {
    /// The last time capacity came back to its initial level (0 if it never dipped).
    pub incident_end: Micros,
    /// End of arrivals: buckets after it only drain.
    pub duration: Micros,
}

/// A bucket is healthy when at most 1% of the operations that ended in it failed and retries
/// add at most 10% to its first attempts.
pub fn is_healthy(counts: &BucketCounts) -> bool {
    let ended = counts.succeeded + counts.failed;
    counts.failed * 100 <= ended && counts.retries * 10 <= counts.first_attempts
}

impl Measurements {
    /// Operations that ended without success over the whole run, by reason; reasons that never
    /// occurred are left out.
    pub fn failures(&self) -> BTreeMap<&'static str, u64> {
        FAILURE_REASONS
            .iter()
            .enumerate()
            .map(|(index, reason)| {
                (
                    *reason,
                    self.buckets.iter().map(|b| b.failures[index]).sum(),
                )
            })
            .filter(|(_, count)| *count > 0)
            .collect()
    }

    /// The summary of these measurements.
    pub fn summary(&self, window: RecoveryWindow) -> Summary {
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
        let bucket_s = self.bucket as f64 / MICROS_PER_SECOND as f64;
        Summary {
            operations,
            succeeded,
            success_rate: ratio(succeeded),
            attempts,
            status_checks,
            amplification: ratio(attempts + status_checks),
            duplicate_writes: total(|b| b.duplicate_writes),
            unknown_results: total(|b| b.unknown_results),
            timeouts: total(|b| b.timeouts),
            mean_ms: (succeeded > 0).then(|| to_ms(self.latency_sum_us as f64 / succeeded as f64)),
            p50_ms: self.total_latency.quantile(0.5).map(to_ms),
            p99_ms: self.total_latency.quantile(0.99).map(to_ms),
            peak_attempts_rps: self
                .buckets
                .iter()
                .map(|b| b.attempts as f64 / bucket_s)
                .fold(0.0, f64::max),
            wasted_work_s: total(|b| b.wasted_work_us) as f64 / MICROS_PER_SECOND as f64,
            recovery_s: self.recovery_s(window),
        }
    }

    /// Seconds from the incident's end to the start of the first bucket from which every bucket
    /// up to the end of arrivals is healthy ([`is_healthy`]); `None` if the last one is not.
    fn recovery_s(&self, window: RecoveryWindow) -> Option<f64> {
        let first = (window.incident_end / self.bucket) as usize;
        let last = (window.duration.div_ceil(self.bucket) as usize).min(self.buckets.len());
        if first >= last {
            return Some(0.0);
        }
        let mut recovered = None;
        for index in (first..last).rev() {
            if !is_healthy(&self.buckets[index]) {
                break;
            }
            recovered = Some(index);
        }
        recovered.map(|index| {
            let start = (index as Micros * self.bucket).max(window.incident_end);
            (start - window.incident_end) as f64 / MICROS_PER_SECOND as f64
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn measurements(buckets: Vec<BucketCounts>) -> Measurements {
        let mut recorder = Recorder::new(MICROS_PER_SECOND);
        recorder.operation_started();
        let mut measurements = recorder.finish();
        measurements.buckets = buckets;
        measurements
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
        let window = |end_s: u64| RecoveryWindow {
            incident_end: end_s * MICROS_PER_SECOND,
            duration: 7 * MICROS_PER_SECOND,
        };
        // Healthy for good from bucket 5.
        assert_eq!(run.recovery_s(window(2)), Some(3.0));
        assert_eq!(run.recovery_s(window(6)), Some(0.0));
        let never = measurements(vec![healthy(), storm()]);
        assert_eq!(
            never.recovery_s(RecoveryWindow {
                incident_end: 0,
                duration: 2 * MICROS_PER_SECOND
            }),
            None
        );
    }

    #[test]
    fn failure_reasons_are_the_decisions_plus_status_unknown() {
        let decision: Vec<&str> = StopReason::ALL.iter().map(|reason| reason.name()).collect();
        assert_eq!(&FAILURE_REASONS[..7], &decision[..]);
        let mut recorder = Recorder::new(MICROS_PER_SECOND);
        recorder.failed(10, "max-attempts");
        recorder.failed(2 * MICROS_PER_SECOND, "max-attempts");
        recorder.failed(20, UNKNOWN_STATUS);
        let measurements = recorder.finish();
        assert_eq!(
            measurements.failures().into_iter().collect::<Vec<_>>(),
            [("max-attempts", 2), (UNKNOWN_STATUS, 1)]
        );
        assert_eq!(measurements.buckets[0].unknown_results, 1);
    }

    #[test]
    fn every_summary_metric_has_a_value() {
        let summary = measurements(vec![healthy()]).summary(RecoveryWindow {
            incident_end: 0,
            duration: MICROS_PER_SECOND,
        });
        for name in SUMMARY_METRICS {
            assert!(summary.metric(name).is_some(), "{name}");
        }
        assert_eq!(summary.metric("p99_ms").map(f64::is_nan), Some(true));
        assert_eq!(summary.metric("nonsense"), None);
    }

    #[test]
    fn health_thresholds() {
        assert!(is_healthy(&healthy()));
        assert!(!is_healthy(&storm()));
        let one_percent_failed = BucketCounts {
            succeeded: 99,
            failed: 1,
            ..healthy()
        };
        assert!(is_healthy(&one_percent_failed));
        let too_many_retries = BucketCounts {
            retries: 11,
            ..healthy()
        };
        assert!(!is_healthy(&too_many_retries));
    }
}
