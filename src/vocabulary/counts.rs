//! What the engine counts: the records it fills per time bucket (the users' side, the health
//! series recovery is measured on, and each service's own counts) and every layer above reads.
//!
//! Plain numbers with the arithmetic that belongs to them (adding buckets up, a service's
//! capacity in a bucket); what they add up to over a run is [`crate::metrics`]'s, how they are
//! named in the output files is here, so that a service can keep its own counts without
//! knowing who reads them.

use crate::base::time::{MICROS_PER_MS, MICROS_PER_SECOND, Micros};
use crate::vocabulary::outcome::FailureReason;

/// What the users set out to do over a run, when they retry by hand: an intent is an arrival,
/// and spans the operation it starts with and those its user starts again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IntentCounts {
    /// Intents started: one per arrival.
    pub started: u64,
    /// Intents whose user saw a success.
    pub succeeded: u64,
    /// Operations users started again by hand.
    pub manual_retries: u64,
}

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
    /// Of those, writes beyond the first of one logical operation (of one intent, when users
    /// retry by hand) in the data it keeps (its fleet's, for a fleet).
    pub duplicate_writes: u64,
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

    /// Its callers sent it a request: a status check, else a first attempt (`first`) or a
    /// retry.
    #[inline]
    pub fn count_sent(&mut self, status_check: bool, first: bool) {
        if status_check {
            self.status_checks += 1;
        } else if first {
            self.first_attempts += 1;
        } else {
            self.retries += 1;
        }
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
    pub fn add_counts(&mut self, other: &ServiceBucket) {
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
        self.duplicate_writes += other.duplicate_writes;
        self.wasted_work_us += other.wasted_work_us;
        self.released += other.released;
        self.held_us += other.held_us;
    }

    /// Requests per second a calling service's workers available at the bucket's end could
    /// serve: they are held for their calls as well as their own work, so its capacity is
    /// measured, `workers / mean time a worker held a request` among those it let go of in the
    /// bucket (`None` if it let go of none, or held them no time: a worker then serves any
    /// number of requests at one instant, so there is no finite capacity to write). A leaf's
    /// is the model's ([`crate::model::ServiceModel::instance_capacity_rps`]).
    pub fn held_capacity_rps(&self) -> Option<f64> {
        let mean_hold_us = self.held_us as f64 / self.released as f64;
        (self.released > 0 && self.held_us > 0)
            .then(|| self.workers_available as f64 * MICROS_PER_SECOND as f64 / mean_hold_us)
    }
}

/// One instance of a fleet over the whole run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstanceTotals {
    /// Its counts (the end-of-bucket state fields are zero).
    pub counts: ServiceBucket,
    /// The time it was down after crashing under overload.
    pub down_us: Micros,
    /// The time its callers' outlier detection kept it ejected, on average over the callers.
    pub ejected_us: Micros,
}

/// A column of a service's counts: its name and how to read it.
pub type ServiceColumn = (&'static str, fn(&ServiceBucket) -> u64);

/// The counts of a [`ServiceBucket`] (but its worker times, which are written in seconds), by
/// the names `services.csv` and `summary.json` give them, in their column order.
pub const SERVICE_COUNTS: [ServiceColumn; 25] = [
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
    ("duplicate_writes", |b| b.duplicate_writes),
    ("released", |b| b.released),
];

/// The end-of-bucket state of a [`ServiceBucket`], by column name.
pub const SERVICE_STATE: [ServiceColumn; 3] = [
    ("queue_len", |b| b.queue_len),
    ("busy", |b| b.busy),
    ("workers_available", |b| b.workers_available),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calling_services_capacity_is_measured_from_how_long_workers_were_held() {
        let bucket = ServiceBucket {
            workers_available: 50,
            released: 10,
            held_us: MICROS_PER_SECOND,
            ..ServiceBucket::default()
        };
        // A caller whose workers were held 100 ms per request serves 500.
        assert_eq!(bucket.held_capacity_rps(), Some(500.0));
        let idle = ServiceBucket {
            released: 0,
            ..bucket
        };
        assert_eq!(idle.held_capacity_rps(), None);
    }
}
