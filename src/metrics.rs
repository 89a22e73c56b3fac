//! What a simulation measured: counters per time bucket, and the summary derived from them.
//!
//! The engine only counts: the users' side in a [`Recorder`], each service in its own
//! [`Buckets`] of [`ServiceBucket`]; everything else here is arithmetic on the counts, so the
//! writers and charts read plain numbers and never reach into the engine. Every count is
//! attributed to the bucket of the simulated time at which it happened: an attempt to the bucket
//! in which it was sent, an operation's success or failure to the bucket in which it ended, a
//! duplicate write to the bucket in which it was committed.

mod named;
mod summary;

use std::collections::BTreeMap;

use crate::histogram::Histogram;
use crate::outcome::FailureReason;
use crate::service::ServiceRecord;
use crate::service::downtime::Downtime;

use crate::time::{MICROS_PER_MS, MICROS_PER_SECOND, Micros};
pub use named::{AT, NamedMetric, check_name, direction, domain, metric_value};
pub use summary::{
    Better, Domain, HealthRule, Incident, METRICS, Metric, Recovery, SERVICE_METRICS,
    ServiceSummary, Summary, Unit, Window, format_metric, format_value, metric, metric_names,
    parse_metric,
};

/// Bins per power of two of the per-bucket latency histograms (0.4% error).
const BUCKET_PRECISION: u32 = 7;
/// Bins per power of two of the whole-run latency histogram (0.05% error).
const TOTAL_PRECISION: u32 = 10;
/// How far above the slowest operation (`max_ms`) a percentile of the run (`p50_ms`, `p99_ms`)
/// can be, as a fraction of it: a percentile is read at its bin's midpoint, less than half a bin
/// above the bin's lowest value, and a bin is at most `1/2^TOTAL_PRECISION` of its lowest value
/// wide (see [`crate::histogram`]).
pub const PERCENTILE_EXCESS: f64 = 1.0 / (1u64 << (TOTAL_PRECISION + 1)) as f64;

/// Counts of one time bucket, as the user clients saw it.
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
    /// Error responses received: injected errors, and downstream calls that failed for good.
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
    /// Operations that ended without success, by reason, in the order of
    /// [`FailureReason::ALL`].
    pub failures: [u64; FailureReason::ALL.len()],
    /// Writes committed beyond the first for one logical operation at one service.
    pub duplicate_writes: u64,
}

/// The step of the health series recovery is measured on (see [`health_step`]).
pub const HEALTH_STEP: Micros = 10 * MICROS_PER_MS;
/// The most steps the health series of one run has: 100,000 of 32 bytes, 3.2 MB a policy.
pub const MAX_HEALTH_STEPS: u64 = 100_000;

/// The step of the health series of a run whose arrivals last `duration`, with buckets of
/// `bucket`: 10 ms (the bucket, if it is finer), widened in a run so long that arrivals would
/// span more than [`MAX_HEALTH_STEPS`] of them. Recovery is measured to a step, so a 1 s bucket
/// does not make every recovery a whole number of seconds.
pub fn health_step(bucket: Micros, duration: Micros) -> Micros {
    bucket
        .min(HEALTH_STEP)
        .max(duration.div_ceil(MAX_HEALTH_STEPS))
        .max(1)
}

/// The counts the health rule reads, per step of the health series or summed over a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HealthCounts {
    /// Operations that ended successfully.
    pub succeeded: u64,
    /// Operations that ended without success.
    pub failed: u64,
    /// First attempts of operations sent.
    pub first_attempts: u64,
    /// Attempts after the first sent.
    pub retries: u64,
}

impl HealthCounts {
    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &HealthCounts) {
        self.succeeded += other.succeeded;
        self.failed += other.failed;
        self.first_attempts += other.first_attempts;
        self.retries += other.retries;
    }

    /// Takes away `other`'s counts (a part of these).
    pub fn subtract(&mut self, other: &HealthCounts) {
        self.succeeded -= other.succeeded;
        self.failed -= other.failed;
        self.first_attempts -= other.first_attempts;
        self.retries -= other.retries;
    }
}

/// Counts of one service in one time bucket: what its callers sent it and saw, what it did,
/// and its state at the bucket's end.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServiceBucket {
    /// First attempts its callers sent it.
    pub first_attempts: u64,
    /// Retries its callers sent it.
    pub retries: u64,
    /// Status-endpoint requests its callers sent it.
    pub status_checks: u64,
    /// Attempts to it whose caller stopped waiting.
    pub timeouts: u64,
    /// Requests that reached it (sent and not lost on the way).
    pub received: u64,
    /// Requests that found a free worker at once.
    pub served_at_once: u64,
    /// Requests that waited in the queue.
    pub queued: u64,
    /// Requests a worker finished (its own work and its downstream calls).
    pub served: u64,
    /// Refused because the queue was full.
    pub rejected_overload: u64,
    /// Refused while capacity was zero (`outage = "reject"`, or a crashed service).
    pub rejected_outage: u64,
    /// Refused by the rate limiter (429).
    pub rate_limited: u64,
    /// Refused with 409 because a request with the same idempotency key was in flight.
    pub conflicts: u64,
    /// Answered with an injected error.
    pub errors: u64,
    /// Answered with its failure status because a downstream call failed for good.
    pub downstream_failures: u64,
    /// Dropped from the queue because the caller had given up (`drop_expired`).
    pub dropped_expired: u64,
    /// Shed by the queue discipline (CoDel, controlled delay) and answered as an overload.
    pub shed: u64,
    /// Refused by the concurrency limit.
    pub concurrency_limited: u64,
    /// Dropped or stopped because the caller had gone (`cancellation`).
    pub cancelled: u64,
    /// Crashes under overload.
    pub crashes: u64,
    /// Writes to an optimistic row that collided with another.
    pub collisions: u64,
    /// Worker time spent on rejections, in microseconds (`rejection_cost`).
    pub rejection_work_us: u64,
    /// Reset by a crash while queued, in service or waiting on a key.
    pub resets: u64,
    /// Answered from the idempotency-key store without new work.
    pub replayed: u64,
    /// Writes committed (leaf services only).
    pub writes: u64,
    /// Worker time spent on requests whose caller had already given up, in microseconds.
    pub wasted_work_us: u64,
    /// Requests a worker let go of: served, failed downstream, or reset by a crash.
    pub released: u64,
    /// How long workers held the requests they let go of, in microseconds (their own work and
    /// their downstream calls).
    pub held_us: u64,
    /// Requests waiting in the queue at the end of the bucket.
    pub queue_len: u64,
    /// Workers busy at the end of the bucket (serving, or waiting on a downstream call).
    pub busy: u64,
    /// Workers available at the end of the bucket.
    pub workers_available: u64,
    /// The mean work of a request at the end of the bucket, in microseconds, when a cold start
    /// or a cache makes it differ from the mean service time (0 when it does not).
    pub mean_work_us: u64,
}

impl ServiceBucket {
    /// Requests its callers sent it: first attempts, retries and status checks.
    pub fn requests(&self) -> u64 {
        self.first_attempts + self.retries + self.status_checks
    }

    /// Requests it refused, shed or answered without serving, of every kind.
    pub fn rejected(&self) -> u64 {
        self.rejected_overload
            + self.rejected_outage
            + self.rate_limited
            + self.conflicts
            + self.errors
            + self.downstream_failures
            + self.shed
            + self.concurrency_limited
            + self.collisions
    }

    /// Adds the counts of `other` (not its end-of-bucket state).
    fn add_counts(&mut self, other: &ServiceBucket) {
        self.first_attempts += other.first_attempts;
        self.retries += other.retries;
        self.status_checks += other.status_checks;
        self.timeouts += other.timeouts;
        self.received += other.received;
        self.served_at_once += other.served_at_once;
        self.queued += other.queued;
        self.served += other.served;
        self.rejected_overload += other.rejected_overload;
        self.rejected_outage += other.rejected_outage;
        self.rate_limited += other.rate_limited;
        self.conflicts += other.conflicts;
        self.errors += other.errors;
        self.downstream_failures += other.downstream_failures;
        self.dropped_expired += other.dropped_expired;
        self.shed += other.shed;
        self.concurrency_limited += other.concurrency_limited;
        self.cancelled += other.cancelled;
        self.crashes += other.crashes;
        self.collisions += other.collisions;
        self.rejection_work_us += other.rejection_work_us;
        self.resets += other.resets;
        self.replayed += other.replayed;
        self.writes += other.writes;
        self.wasted_work_us += other.wasted_work_us;
        self.released += other.released;
        self.held_us += other.held_us;
    }

    /// Requests per second the workers available at the bucket's end could serve. For a
    /// service that calls nothing that is `workers / mean work`, the work slowed by a cold
    /// start or sped by a warm cache at that moment (`mean_service_us` without them); a calling
    /// service's workers are also held for their calls, so its capacity is measured:
    /// `workers / mean time a worker held a request` among those it let go of in the bucket
    /// (`None` if it let go of none). `None` too where that time is zero (a service time of
    /// zero, a cache hit that takes none, calls that take none): a worker then serves any
    /// number of requests at one instant, so there is no finite capacity to write.
    pub fn capacity_rps(&self, leaf: bool, mean_service_us: f64) -> Option<f64> {
        let mean_hold_us = if leaf && self.mean_work_us > 0 {
            self.mean_work_us as f64
        } else if leaf {
            mean_service_us
        } else if self.released > 0 {
            self.held_us as f64 / self.released as f64
        } else {
            return None;
        };
        (mean_hold_us > 0.0)
            .then(|| self.workers_available as f64 * MICROS_PER_SECOND as f64 / mean_hold_us)
    }
}

/// A column of a service's counts: its name and how to read it.
pub type ServiceColumn = (&'static str, fn(&ServiceBucket) -> u64);

/// The counts of a [`ServiceBucket`] (but its worker times, which are written in seconds), by
/// the names `services.csv` and `summary.json` give them, in their column order.
pub const SERVICE_COUNTS: [ServiceColumn; 24] = [
    ("first_attempts", |b| b.first_attempts),
    ("retries", |b| b.retries),
    ("status_checks", |b| b.status_checks),
    ("timeouts", |b| b.timeouts),
    ("received", |b| b.received),
    ("served_at_once", |b| b.served_at_once),
    ("queued", |b| b.queued),
    ("served", |b| b.served),
    ("rejected_overload", |b| b.rejected_overload),
    ("rejected_outage", |b| b.rejected_outage),
    ("rate_limited", |b| b.rate_limited),
    ("conflicts", |b| b.conflicts),
    ("errors", |b| b.errors),
    ("downstream_failures", |b| b.downstream_failures),
    ("dropped_expired", |b| b.dropped_expired),
    ("shed", |b| b.shed),
    ("concurrency_limited", |b| b.concurrency_limited),
    ("cancelled", |b| b.cancelled),
    ("crashes", |b| b.crashes),
    ("collisions", |b| b.collisions),
    ("resets", |b| b.resets),
    ("replayed", |b| b.replayed),
    ("writes", |b| b.writes),
    ("released", |b| b.released),
];

/// The end-of-bucket state of a [`ServiceBucket`], by column name.
pub const SERVICE_STATE: [ServiceColumn; 3] = [
    ("queue_len", |b| b.queue_len),
    ("busy", |b| b.busy),
    ("workers_available", |b| b.workers_available),
];

/// Counters per time bucket, created on first use. The bucket in use is held apart from the
/// list, so consecutive counts in one bucket (the usual case: the engine counts at the current
/// time) cost a comparison, not a division or an index.
#[derive(Debug, Clone)]
pub struct Buckets<T> {
    width: Micros,
    /// Every bucket; the one in use is stale here until it is put back.
    list: Vec<T>,
    current: T,
    index: usize,
    start: Micros,
    /// End of the bucket in use; 0 before the first count.
    end: Micros,
}

impl<T: Default> Buckets<T> {
    /// No buckets yet, each `width` microseconds wide.
    pub fn new(width: Micros) -> Buckets<T> {
        Buckets {
            width,
            list: Vec::new(),
            current: T::default(),
            index: 0,
            start: 0,
            end: 0,
        }
    }

    /// The counts of the bucket holding time `t`, created (with every bucket before it) on
    /// first use.
    #[inline]
    pub fn at(&mut self, t: Micros) -> &mut T {
        if t < self.start || t >= self.end {
            self.seek(t);
        }
        &mut self.current
    }

    #[cold]
    fn seek(&mut self, t: Micros) {
        self.put_back();
        let index = (t / self.width) as usize;
        if index >= self.list.len() {
            self.list.resize_with(index + 1, T::default);
        }
        self.current = std::mem::take(&mut self.list[index]);
        self.index = index;
        self.start = index as Micros * self.width;
        self.end = self.start + self.width;
    }

    /// Puts the bucket in use back in the list.
    fn put_back(&mut self) {
        if self.end > 0 {
            self.list[self.index] = std::mem::take(&mut self.current);
        }
    }

    /// How many buckets exist.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether none exists.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The buckets, padded to `length`.
    pub fn into_padded(mut self, length: usize) -> Vec<T> {
        self.put_back();
        self.list
            .resize_with(length.max(self.list.len()), T::default);
        self.list
    }
}

/// One service's measurements.
#[derive(Debug, Clone)]
pub struct ServiceMeasurements {
    /// The service's name.
    pub name: String,
    /// Its counts per bucket, as many buckets as the users'.
    pub buckets: Vec<ServiceBucket>,
    /// When it was down after crashing under overload.
    pub downtime: Downtime,
    /// The longest its queue was at any instant.
    pub peak_queue_len: u64,
}

impl ServiceMeasurements {
    /// The counts over the whole run (the end-of-bucket state fields are zero).
    pub fn totals(&self) -> ServiceBucket {
        let mut total = ServiceBucket::default();
        for bucket in &self.buckets {
            total.add_counts(bucket);
        }
        total
    }
}

/// Everything one simulation of one policy measured.
#[derive(Debug, Clone)]
pub struct Measurements {
    /// Bucket width.
    pub bucket: Micros,
    /// The users' counts per bucket, from time zero to the end of the last operation.
    pub buckets: Vec<BucketCounts>,
    /// Latency of successful operations per bucket (by end time).
    pub latency: Vec<Histogram>,
    /// The step of `health`: see [`health_step`].
    pub health_step: Micros,
    /// The users' counts the health rule reads, per step, over the arrivals (the steps that
    /// overlap `[0, duration)`): recovery is measured on these, finer than a bucket.
    pub health: Vec<HealthCounts>,
    /// Latency of all successful operations.
    pub total_latency: Histogram,
    /// Sum of the latencies of successful operations, for an exact mean.
    pub latency_sum_us: u128,
    /// The latency of the slowest successful operation.
    pub latency_max_us: Micros,
    /// Each service's counts, in the model's order, with as many buckets as the users'.
    pub services: Vec<ServiceMeasurements>,
    /// The index of the service the users call.
    pub entry: usize,
    /// Operations started.
    pub operations: u64,
    /// Events the engine processed.
    pub events: u64,
    /// Attempt timers that came due after their attempt was answered: dropped unhandled, and
    /// not among `events`.
    pub cancelled_timers: u64,
    /// Most operations in flight at once (started, not yet ended or with attempts still out;
    /// services' downstream calls included).
    pub peak_operations_in_flight: u64,
    /// Most attempts in flight at once (in the network, queued, in service or awaited).
    pub peak_attempts_in_flight: u64,
}

/// The engine's handle for counting the users' side.
#[derive(Debug)]
pub struct Recorder {
    buckets: Buckets<BucketCounts>,
    health: Buckets<HealthCounts>,
    /// Steps of `health`: those that overlap the arrivals.
    health_steps: usize,
    /// The end of the last of them: later counts are the drain, outside every health window.
    health_end: Micros,
    latency: Vec<Histogram>,
    total_latency: Histogram,
    latency_sum_us: u128,
    latency_max_us: Micros,
    operations: u64,
    /// Events taken from the queue, cancelled timers among them.
    events: u64,
    /// Of those, timers whose attempts had been answered.
    cancelled_taken: u64,
    /// Timers whose attempts had been answered, dropped without being taken.
    cancelled_dropped: u64,
    peak_operations_in_flight: u64,
    peak_attempts_in_flight: u64,
}

impl Recorder {
    /// A recorder with buckets of `bucket` microseconds, for arrivals that last `duration`.
    pub fn new(bucket: Micros, duration: Micros) -> Recorder {
        let step = health_step(bucket, duration);
        let health_steps = duration.div_ceil(step);
        Recorder {
            buckets: Buckets::new(bucket),
            health: Buckets::new(step),
            health_steps: health_steps as usize,
            health_end: health_steps * step,
            latency: Vec::new(),
            total_latency: Histogram::new(TOTAL_PRECISION),
            latency_sum_us: 0,
            latency_max_us: 0,
            operations: 0,
            events: 0,
            cancelled_taken: 0,
            cancelled_dropped: 0,
            peak_operations_in_flight: 0,
            peak_attempts_in_flight: 0,
        }
    }

    /// The counts of the bucket holding time `t`, created on first use.
    #[inline]
    pub fn at(&mut self, t: Micros) -> &mut BucketCounts {
        self.buckets.at(t)
    }

    /// The health counts of the step holding time `t`, if it overlaps the arrivals.
    #[inline]
    fn health_at(&mut self, t: Micros) -> Option<&mut HealthCounts> {
        (t < self.health_end).then(|| self.health.at(t))
    }

    /// A user's client sent an attempt at `t`: its operation's first, or a retry.
    #[inline]
    pub fn attempt_sent(&mut self, t: Micros, first: bool) {
        if let Some(counts) = self.health_at(t) {
            if first {
                counts.first_attempts += 1;
            } else {
                counts.retries += 1;
            }
        }
    }

    /// An operation started.
    #[inline]
    pub fn operation_started(&mut self) {
        self.operations += 1;
    }

    /// An operation that started at `start` succeeded at `end`.
    pub fn succeeded(&mut self, start: Micros, end: Micros) {
        let latency = end - start;
        self.at(end).succeeded += 1;
        if let Some(counts) = self.health_at(end) {
            counts.succeeded += 1;
        }
        let index = (end / self.buckets.width) as usize;
        if index >= self.latency.len() {
            self.latency
                .resize_with(index + 1, || Histogram::new(BUCKET_PRECISION));
        }
        self.latency[index].record(latency);
        self.total_latency.record(latency);
        self.latency_sum_us += u128::from(latency);
        self.latency_max_us = self.latency_max_us.max(latency);
    }

    /// An operation ended without success at `end`, for `reason`.
    pub fn failed(&mut self, end: Micros, reason: FailureReason) {
        let counts = self.at(end);
        counts.failed += 1;
        counts.failures[reason.index()] += 1;
        if reason.is_unknown_outcome() {
            counts.unknown_results += 1;
        }
        if let Some(counts) = self.health_at(end) {
            counts.failed += 1;
        }
    }

    /// Notes how many operations and attempts are in flight.
    #[inline]
    pub fn in_flight(&mut self, operations: usize, attempts: usize) {
        self.peak_operations_in_flight = self.peak_operations_in_flight.max(operations as u64);
        self.peak_attempts_in_flight = self.peak_attempts_in_flight.max(attempts as u64);
    }

    /// Counts one event taken from the queue.
    #[inline]
    pub fn count_event(&mut self) {
        self.events += 1;
    }

    /// The last event taken was a timer whose attempt had been answered: a cancelled timer,
    /// not an event.
    #[inline]
    pub fn cancelled_timer(&mut self) {
        self.cancelled_taken += 1;
    }

    /// `count` timers whose attempts had been answered were dropped without being taken as
    /// events.
    #[inline]
    pub fn cancelled_timers(&mut self, count: u64) {
        self.cancelled_dropped += count;
    }

    /// Events taken from the queue so far, cancelled timers among them.
    #[inline]
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The measurements, with the services' counts (in the model's order, `entry` the one the
    /// users call); every bucket list padded to the same length. Only the users call the entry
    /// service (a call back to it would be a cycle), so what its callers sent and saw is what
    /// the users sent and saw, copied here rather than counted twice.
    pub fn finish(self, services: Vec<ServiceRecord>, entry: usize) -> Measurements {
        let length = services
            .iter()
            .map(|service| service.counts.len())
            .chain([self.buckets.len(), self.latency.len()])
            .max()
            .unwrap_or(0);
        let mut latency = self.latency;
        latency.resize_with(length, || Histogram::new(BUCKET_PRECISION));
        let width = self.buckets.width;
        let users = self.buckets.into_padded(length);
        let mut services: Vec<ServiceMeasurements> = services
            .into_iter()
            .map(|service| ServiceMeasurements {
                name: service.name,
                buckets: service.counts.into_padded(length),
                downtime: service.downtime,
                peak_queue_len: service.peak_queue_len,
            })
            .collect();
        if let Some(service) = services.get_mut(entry) {
            for (counts, sent) in service.buckets.iter_mut().zip(&users) {
                counts.first_attempts = sent.first_attempts;
                counts.retries = sent.retries;
                counts.status_checks = sent.status_checks;
                counts.timeouts = sent.timeouts;
            }
        }
        Measurements {
            bucket: width,
            buckets: users,
            latency,
            health_step: self.health.width,
            health: self.health.into_padded(self.health_steps),
            total_latency: self.total_latency,
            latency_sum_us: self.latency_sum_us,
            latency_max_us: self.latency_max_us,
            services,
            entry,
            operations: self.operations,
            events: self.events - self.cancelled_taken,
            cancelled_timers: self.cancelled_taken + self.cancelled_dropped,
            peak_operations_in_flight: self.peak_operations_in_flight,
            peak_attempts_in_flight: self.peak_attempts_in_flight,
        }
    }
}

impl Measurements {
    /// Operations that ended without success over the whole run, by reason; reasons that never
    /// occurred are left out.
    pub fn failures(&self) -> BTreeMap<FailureReason, u64> {
        FailureReason::ALL
            .into_iter()
            .map(|reason| {
                (
                    reason,
                    self.buckets
                        .iter()
                        .map(|b| b.failures[reason.index()])
                        .sum(),
                )
            })
            .filter(|(_, count)| *count > 0)
            .collect()
    }

    /// The counts over the whole run of the service the users call.
    pub fn upstream(&self) -> ServiceBucket {
        self.services[self.entry].totals()
    }

    /// Each service's summary, in the model's order.
    pub fn service_summaries(&self) -> Vec<ServiceSummary> {
        let bucket_s = self.bucket as f64 / MICROS_PER_SECOND as f64;
        self.services
            .iter()
            .map(|service| {
                let totals = service.totals();
                ServiceSummary {
                    name: service.name.clone(),
                    amplification: if self.operations == 0 {
                        0.0
                    } else {
                        totals.requests() as f64 / self.operations as f64
                    },
                    peak_requests_rps: service
                        .buckets
                        .iter()
                        .map(|b| b.requests() as f64 / bucket_s)
                        .fold(0.0, f64::max),
                    peak_queue_len: service.peak_queue_len,
                    wasted_work_s: totals.wasted_work_us as f64 / MICROS_PER_SECOND as f64,
                    totals,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::StopReason;

    #[test]
    fn failures_are_counted_by_reason() {
        let mut recorder = Recorder::new(MICROS_PER_SECOND, MICROS_PER_SECOND);
        recorder.failed(10, FailureReason::Decision(StopReason::MaxAttempts));
        recorder.failed(
            2 * MICROS_PER_SECOND,
            FailureReason::Decision(StopReason::MaxAttempts),
        );
        recorder.failed(20, FailureReason::StatusUnknown);
        let measurements = recorder.finish(Vec::new(), 0);
        assert_eq!(
            measurements.failures().into_iter().collect::<Vec<_>>(),
            [
                (FailureReason::Decision(StopReason::MaxAttempts), 2),
                (FailureReason::StatusUnknown, 1)
            ]
        );
        assert_eq!(measurements.buckets[0].unknown_results, 1);
        assert_eq!(measurements.buckets.len(), 3);
    }

    /// The health series' step: 10 ms, the bucket where it is finer, and wider only where
    /// arrivals would span more than 100,000 steps (an hour: 36 ms), so its memory is bounded.
    #[test]
    fn the_health_step_is_10_ms_unless_the_bucket_is_finer_or_the_run_very_long() {
        assert_eq!(
            health_step(MICROS_PER_SECOND, 40 * MICROS_PER_SECOND),
            10_000
        );
        assert_eq!(health_step(1_000, 40 * MICROS_PER_SECOND), 1_000);
        assert_eq!(
            health_step(MICROS_PER_SECOND, 3600 * MICROS_PER_SECOND),
            36_000
        );
        let mut recorder = Recorder::new(MICROS_PER_SECOND, 3600 * MICROS_PER_SECOND);
        // Counts after the arrivals (the drain) are outside every health window.
        recorder.attempt_sent(3600 * MICROS_PER_SECOND, true);
        recorder.attempt_sent(0, false);
        let measurements = recorder.finish(Vec::new(), 0);
        assert_eq!(measurements.health.len(), 100_000);
        assert_eq!(measurements.health[0].retries, 1);
        assert_eq!(
            measurements
                .health
                .iter()
                .map(|c| c.first_attempts)
                .sum::<u64>(),
            0
        );
    }

    #[test]
    fn buckets_are_created_up_to_the_last_touched_and_padded() {
        let mut buckets: Buckets<u64> = Buckets::new(10);
        *buckets.at(25) += 1;
        *buckets.at(3) += 2;
        *buckets.at(29) += 1;
        assert_eq!(buckets.len(), 3);
        assert_eq!(buckets.into_padded(5), [2, 0, 2, 0, 0]);
    }

    #[test]
    fn a_calling_services_capacity_is_measured_from_how_long_workers_were_held() {
        let bucket = ServiceBucket {
            workers_available: 50,
            released: 10,
            held_us: MICROS_PER_SECOND,
            ..ServiceBucket::default()
        };
        // A leaf: 50 workers of 10 ms each serve 5,000 requests per second.
        assert_eq!(bucket.capacity_rps(true, 10_000.0), Some(5000.0));
        // A caller whose workers were held 100 ms per request serves 500.
        assert_eq!(bucket.capacity_rps(false, 10_000.0), Some(500.0));
        let idle = ServiceBucket {
            released: 0,
            ..bucket
        };
        assert_eq!(idle.capacity_rps(false, 10_000.0), None);
        // A leaf restarted cold, each request taking 25 ms for now, serves 2,000.
        let cold = ServiceBucket {
            mean_work_us: 25_000,
            ..bucket
        };
        assert_eq!(cold.capacity_rps(true, 10_000.0), Some(2000.0));
    }
}
