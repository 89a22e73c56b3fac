//! The engine's counters over a run: buckets created on first use, the users' side counted
//! by a [`Recorder`], and everything a simulation measured, returned as [`Measurements`].
//!
//! The engine only counts: the users' side in a [`Recorder`], each service in its own
//! [`Buckets`] of [`ServiceBucket`]; everything else is arithmetic on the counts, in
//! [`crate::metrics`], so the writers and charts read plain numbers and never reach into the
//! engine. Every count is attributed to the bucket of the simulated time at which it happened:
//! an attempt to the bucket in which it was sent, an operation's success or failure to the
//! bucket in which it ended, a duplicate write to the bucket in which it was committed.
//!
//! A scenario of two operations or more is also counted per operation, over the whole run
//! ([`OperationCounts`]): mixed traffic takes different paths, and one operation's failures
//! hide in the run's sums. With one operation those counts would be the run's own, so none is
//! kept: the per-operation counting is one length check on an empty list.

use std::collections::BTreeMap;

use crate::base::histogram::Histogram;
use crate::base::time::Micros;
use crate::engine::downtime::Downtime;
use crate::model::ServiceModel;
pub use crate::vocabulary::counts::InstanceTotals;
use crate::vocabulary::counts::{
    BucketCounts, HealthCounts, IntentCounts, ServiceBucket, health_step,
};
use crate::vocabulary::outcome::FailureReason;

/// Bins per power of two of the per-bucket latency histograms (0.4% error).
const BUCKET_PRECISION: u32 = 7;
/// Bins per power of two of the whole-run latency histogram (0.05% error).
const TOTAL_PRECISION: u32 = 10;
/// How far above the slowest operation (`max_ms`) a percentile of the run (`p50_ms`, `p99_ms`)
/// can be, as a fraction of it: a percentile is read at its bin's midpoint, less than half a bin
/// above the bin's lowest value, and a bin is at most `1/2^TOTAL_PRECISION` of its lowest value
/// wide (see [`crate::base::histogram`]).
pub const PERCENTILE_EXCESS: f64 = 1.0 / (1u64 << (TOTAL_PRECISION + 1)) as f64;

/// Counters per time bucket, created on first use. The bounds of the bucket in use are kept,
/// so consecutive counts in one bucket (the usual case: the engine counts at the current time)
/// cost a comparison and an index, not a division; moving to another bucket moves no counts.
#[derive(Debug, Clone)]
pub struct Buckets<T> {
    width: Micros,
    list: Vec<T>,
    /// The bucket in use.
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
        &mut self.list[self.index]
    }

    #[cold]
    fn seek(&mut self, t: Micros) {
        let index = (t / self.width) as usize;
        if index >= self.list.len() {
            self.list.resize_with(index + 1, T::default);
        }
        self.index = index;
        self.start = index as Micros * self.width;
        self.end = self.start + self.width;
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
        self.list
            .resize_with(length.max(self.list.len()), T::default);
        self.list
    }
}

/// A service at the end of a run: its name, its counts and its crashes under overload.
#[derive(Debug)]
pub struct ServiceRecord {
    /// The service's name.
    pub name: String,
    /// Its counts per bucket.
    pub counts: Buckets<ServiceBucket>,
    /// When it was down after crashing under overload.
    pub downtime: Downtime,
    /// The longest its queue was at any instant.
    pub peak_queue_len: u64,
    /// An instance of a fleet: the time its callers' outlier detection kept it ejected, on
    /// average over the callers.
    pub ejected_us: Micros,
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
    /// The longest its queue was at any instant (a fleet's: the longest of any instance's).
    pub peak_queue_len: u64,
    /// A fleet's instances, each one's counts over the whole run, in order (empty outside a
    /// fleet).
    pub instances: Vec<InstanceTotals>,
    /// A fleet's instances, the requests sent to each per bucket, in order (empty outside a
    /// fleet): what the load chart draws per instance. One number per instance and bucket,
    /// against the whole [`ServiceBucket`] per instance and bucket the run already kept.
    pub instance_requests: Vec<Vec<u64>>,
    /// Requests per second it could serve at each bucket's end (`None` where there is no
    /// finite capacity, or a calling service let go of nothing): for a leaf, each instance's
    /// capacity with the workers it had available and its mean work then
    /// ([`ServiceModel::instance_capacity_rps`]), summed, so that an instance down adds
    /// nothing and one at full health its whole curve under contention; for a calling
    /// service, its workers over the mean time one was held
    /// ([`ServiceBucket::held_capacity_rps`]).
    pub capacity_rps: Vec<Option<f64>>,
}

impl ServiceMeasurements {
    /// The measurements of a service of `model` run as the instances `fleet` (one outside a
    /// fleet), each padded to `length` buckets: their counts added, their end-of-bucket states
    /// too (a fleet's queue is its instances' queues), their capacities summed, their crash
    /// periods joined.
    fn of_fleet(
        mut fleet: Vec<ServiceRecord>,
        length: usize,
        model: &ServiceModel,
    ) -> ServiceMeasurements {
        let capacity = |bucket: &ServiceBucket| {
            if model.is_leaf() {
                model.instance_capacity_rps(bucket.workers_available, bucket.mean_work_us)
            } else {
                bucket.held_capacity_rps()
            }
        };
        if fleet.len() == 1 {
            let service = fleet.remove(0);
            let buckets = service.counts.into_padded(length);
            return ServiceMeasurements {
                name: service.name,
                capacity_rps: buckets.iter().map(capacity).collect(),
                buckets,
                downtime: service.downtime,
                peak_queue_len: service.peak_queue_len,
                instances: Vec::new(),
                instance_requests: Vec::new(),
            };
        }
        let name = fleet[0].name.clone();
        let peak_queue_len = fleet.iter().map(|instance| instance.peak_queue_len).max();
        let mut periods: Vec<(Micros, Micros)> = fleet
            .iter()
            .flat_map(|instance| instance.downtime.periods().iter().copied())
            .collect();
        periods.sort_unstable();
        let mut downtime = Downtime::default();
        for (down, up) in periods {
            downtime.record(down, up);
        }
        let down: Vec<(Micros, Micros)> = fleet
            .iter()
            .map(|instance| {
                let periods = instance.downtime.periods();
                let down = periods.iter().map(|&(down, up)| up - down).sum();
                (down, instance.ejected_us)
            })
            .collect();
        let instances: Vec<Vec<ServiceBucket>> = fleet
            .into_iter()
            .map(|instance| instance.counts.into_padded(length))
            .collect();
        let mut capacity_rps = Vec::with_capacity(length);
        let buckets = (0..length)
            .map(|bucket| {
                let mut merged = ServiceBucket::default();
                let mut leaves = Some(0.0);
                for instance in &instances {
                    let own = &instance[bucket];
                    merged.add_counts(own);
                    merged.queue_len += own.queue_len;
                    merged.busy += own.busy;
                    merged.workers_available += own.workers_available;
                    leaves = leaves.zip(capacity(own)).map(|(sum, own)| sum + own);
                }
                // A calling service's hold is measured over the fleet: one instance may have
                // let go of nothing in the bucket.
                capacity_rps.push(if model.is_leaf() {
                    leaves
                } else {
                    merged.held_capacity_rps()
                });
                merged
            })
            .collect();
        ServiceMeasurements {
            name,
            buckets,
            capacity_rps,
            downtime,
            peak_queue_len: peak_queue_len.unwrap_or(0),
            instance_requests: instances
                .iter()
                .map(|buckets| buckets.iter().map(ServiceBucket::requests).collect())
                .collect(),
            instances: instances
                .iter()
                .zip(down)
                .map(|(buckets, (down_us, ejected_us))| {
                    let mut counts = ServiceBucket::default();
                    for bucket in buckets {
                        counts.add_counts(bucket);
                    }
                    InstanceTotals {
                        counts,
                        down_us,
                        ejected_us,
                    }
                })
                .collect(),
        }
    }

    /// The counts over the whole run (the end-of-bucket state fields are zero).
    pub fn totals(&self) -> ServiceBucket {
        let mut total = ServiceBucket::default();
        for bucket in &self.buckets {
            total.add_counts(bucket);
        }
        total
    }
}

/// One operation's counts over a run, in a scenario of two operations or more.
#[derive(Debug, Clone)]
pub struct OperationCounts {
    /// The operation's name.
    pub name: String,
    /// Operations of it started.
    pub operations: u64,
    /// Of them, those that succeeded.
    pub succeeded: u64,
    /// Requests its clients sent: first attempts and retries.
    pub attempts: u64,
    /// Status-endpoint requests its clients sent.
    pub status_checks: u64,
    /// Writes beyond the first of one of its logical operations, at any service.
    pub duplicate_writes: u64,
    /// Of its operations, those that ended with their outcome unknown.
    pub unknown_results: u64,
    /// Latency of its successful operations.
    pub latency: Histogram,
    /// Sum of those latencies, for an exact mean.
    pub latency_sum_us: u128,
    /// The slowest of them.
    pub latency_max_us: Micros,
}

impl OperationCounts {
    /// Nothing counted yet for the operation `name`.
    fn new(name: &str) -> OperationCounts {
        OperationCounts {
            name: name.to_string(),
            operations: 0,
            succeeded: 0,
            attempts: 0,
            status_checks: 0,
            duplicate_writes: 0,
            unknown_results: 0,
            latency: Histogram::new(TOTAL_PRECISION),
            latency_sum_us: 0,
            latency_max_us: 0,
        }
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
    /// The users' intents, when they retry by hand (else each operation is one).
    pub intents: Option<IntentCounts>,
    /// Each operation's counts, in the scenario's order, with two operations or more (else
    /// empty: the run's counts are the operation's).
    pub by_operation: Vec<OperationCounts>,
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
    /// The users' intents, when they retry by hand.
    intents: Option<IntentCounts>,
    /// Each operation's counts, with two operations or more (else empty).
    by_operation: Vec<OperationCounts>,
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
            intents: None,
            by_operation: Vec::new(),
        }
    }

    /// The recorder, counting each of `operations` (the operations' names, in the scenario's
    /// order) apart too if there are two or more.
    pub fn by_operation<'a>(
        mut self,
        operations: impl ExactSizeIterator<Item = &'a str>,
    ) -> Recorder {
        if operations.len() > 1 {
            self.by_operation = operations.map(OperationCounts::new).collect();
        }
        self
    }

    /// The counts of operation `operation`, if operations are counted apart.
    #[inline]
    fn operation(&mut self, operation: u16) -> Option<&mut OperationCounts> {
        self.by_operation.get_mut(usize::from(operation))
    }

    /// The users' intents, counted from now on (users who retry by hand).
    #[inline]
    pub fn intents(&mut self) -> &mut IntentCounts {
        self.intents.get_or_insert_default()
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
    fn attempt_sent(&mut self, t: Micros, first: bool) {
        if let Some(counts) = self.health_at(t) {
            if first {
                counts.first_attempts += 1;
            } else {
                counts.retries += 1;
            }
        }
    }

    /// An operation of `operation` (its index among the scenario's operations) started.
    #[inline]
    pub fn operation_started(&mut self, operation: u16) {
        self.operations += 1;
        if let Some(counts) = self.operation(operation) {
            counts.operations += 1;
        }
    }

    /// A user's client sent a request of an operation of `operation` at `t`: a status check,
    /// or an attempt, its operation's `first` or a retry.
    #[inline]
    pub fn sent(&mut self, t: Micros, operation: u16, status_check: bool, first: bool) {
        let counts = self.at(t);
        if status_check {
            counts.status_checks += 1;
        } else {
            counts.attempts += 1;
            if first {
                counts.first_attempts += 1;
            } else {
                counts.retries += 1;
            }
            self.attempt_sent(t, first);
        }
        if let Some(counts) = self.operation(operation) {
            if status_check {
                counts.status_checks += 1;
            } else {
                counts.attempts += 1;
            }
        }
    }

    /// A write beyond the first of a logical operation of `operation` was committed at `t`.
    #[inline]
    pub fn duplicate_write(&mut self, t: Micros, operation: u16) {
        self.at(t).duplicate_writes += 1;
        if let Some(counts) = self.operation(operation) {
            counts.duplicate_writes += 1;
        }
    }

    /// An operation of `operation` that started at `start` succeeded at `end`.
    pub fn succeeded(&mut self, start: Micros, end: Micros, operation: u16) {
        let latency = end - start;
        if let Some(counts) = self.operation(operation) {
            counts.succeeded += 1;
            counts.latency.record(latency);
            counts.latency_sum_us += u128::from(latency);
            counts.latency_max_us = counts.latency_max_us.max(latency);
        }
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

    /// An operation of `operation` ended without success at `end`, for `reason`.
    pub fn failed(&mut self, end: Micros, reason: FailureReason, operation: u16) {
        let counts = self.at(end);
        counts.failed += 1;
        counts.failures[reason.index()] += 1;
        if reason.is_unknown_outcome() {
            counts.unknown_results += 1;
            if let Some(counts) = self.operation(operation) {
                counts.unknown_results += 1;
            }
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
    /// The measurements of the run, from the records of each service's instances.
    /// `models` are the services, in the model's order.
    pub fn finish(
        self,
        services: Vec<Vec<ServiceRecord>>,
        models: &[ServiceModel],
        entry: usize,
    ) -> Measurements {
        let length = services
            .iter()
            .flatten()
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
            .zip(models)
            .map(|(fleet, model)| ServiceMeasurements::of_fleet(fleet, length, model))
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
            intents: self.intents,
            by_operation: self.by_operation,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::MICROS_PER_SECOND;
    use crate::retry::decision::StopReason;

    #[test]
    fn failures_are_counted_by_reason() {
        let mut recorder = Recorder::new(MICROS_PER_SECOND, MICROS_PER_SECOND);
        recorder.failed(10, FailureReason::Decision(StopReason::MaxAttempts), 0);
        recorder.failed(
            2 * MICROS_PER_SECOND,
            FailureReason::Decision(StopReason::MaxAttempts),
            0,
        );
        recorder.failed(20, FailureReason::StatusUnknown, 0);
        let measurements = recorder.finish(Vec::new(), &[], 0);
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
        let measurements = recorder.finish(Vec::new(), &[], 0);
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
}
