//! A service: workers, a queue, a capacity curve, an outage mode, a rate limiter, an
//! idempotency-key store, injected errors, its own random streams and its own counters.
//!
//! The service decides; the engine moves messages. Each method answers one question the engine
//! asks when a request reaches the service, waits for a worker or finishes (is it down? over
//! its rate? does its key say replay? is a worker free?), and counts what it did in the
//! service's own [`ServiceBucket`]s. It never sees a client's records: requests are attempt
//! keys it queues and hands back, and what it needs to know of the operation behind a request
//! (its logical operation's key, the client) comes in as arguments. So a topology is just
//! several of these, addressed by index, and the behaviours still to come (queue disciplines,
//! concurrency limits, crashes under overload) each have one place to live.
//!
//! The idempotency-key store keeps, per logical operation, the key's state and the writes
//! committed here ([`crate::idempotency`]). Records are indexed by the logical operation's
//! slab slot and tagged with its generation, so the store costs memory only for operations in
//! flight, and a record left by a finished operation reads as empty for the slot's next tenant.

pub mod limit;
pub mod queue;

use std::collections::BTreeMap;

use crate::idempotency::{KeyState, KeyVerdict};
use crate::metrics::{Buckets, ServiceBucket};
use crate::model::{ServiceId, ServiceModel};
use crate::random::{Purpose, Stream};
use crate::rate_limiter::RateLimiter;
use crate::scenario::Outage;
use crate::slab::Key;
use crate::time::Micros;
use queue::{Dequeued, Queue};

/// What a service that is down does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Answers its overload status at once, with its Retry-After.
    Reject,
    /// Refuses the connection: the caller sees a reset.
    Reset,
    /// Never answers.
    Blackhole,
}

/// Where an admitted request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// A worker is free.
    Serve,
    /// It waits in the queue.
    Queue,
    /// The queue is full: refused with the overload status.
    Refuse,
}

/// One logical operation's record in a service's key store.
#[derive(Debug, Clone, Copy, Default)]
struct KeyRecord {
    generation: u32,
    key: KeyState,
    writes: u16,
}

/// A running service.
#[derive(Debug)]
pub struct Service<'m> {
    /// What the service is.
    pub model: &'m ServiceModel,
    available: u64,
    busy: u64,
    queue: Queue,
    rate_limiter: Option<RateLimiter>,
    keys: Vec<KeyRecord>,
    waiting_on_key: BTreeMap<u32, Vec<Key>>,
    service_times: Stream,
    errors: Stream,
    /// Jitter of its retries toward the services it calls.
    pub jitter: Stream,
    counts: Buckets<ServiceBucket>,
}

impl<'m> Service<'m> {
    /// Service number `id` of a simulation seeded with `seed`, whose users are `clients`
    /// clients, counting in buckets of `bucket`.
    pub fn new(
        model: &'m ServiceModel,
        id: ServiceId,
        seed: u64,
        clients: u64,
        bucket: Micros,
    ) -> Service<'m> {
        Service {
            model,
            available: 0,
            busy: 0,
            queue: Queue::new(model.queue_discipline),
            rate_limiter: model
                .rate_limit
                .as_ref()
                .map(|limit| RateLimiter::new(limit, clients)),
            keys: Vec::new(),
            waiting_on_key: BTreeMap::new(),
            service_times: Stream::owned(seed, Purpose::Service, id),
            errors: Stream::owned(seed, Purpose::Errors, id),
            jitter: Stream::owned(seed, Purpose::CallerJitter, id),
            counts: Buckets::new(bucket),
        }
    }

    /// The counts of the bucket holding `now`.
    #[inline]
    pub fn counts(&mut self, now: Micros) -> &mut ServiceBucket {
        self.counts.at(now)
    }

    /// Its name and counts, at the end of the run.
    pub fn into_counts(self) -> (String, Buckets<ServiceBucket>) {
        (self.model.name.clone(), self.counts)
    }

    // ---- capacity --------------------------------------------------------------------------

    /// Sets the workers available at `now` from the capacity curve; returns whether this is a
    /// crash (capacity just reached zero with `outage = "crash"`) and when capacity next
    /// changes.
    pub fn update_capacity(&mut self, now: Micros) -> (bool, Option<Micros>) {
        let before = self.available;
        self.available = self.model.capacity.available(now);
        let crashed = self.available == 0 && before > 0 && self.model.outage == Outage::Crash;
        (crashed, self.model.capacity.next_change(now))
    }

    /// What happens to a request arriving now, if the service is down (capacity zero) and does
    /// not let requests wait for it.
    #[inline]
    pub fn refusal(&self) -> Option<Refusal> {
        if self.available > 0 {
            return None;
        }
        match self.model.outage {
            Outage::Queue => None,
            Outage::Reject => Some(Refusal::Reject),
            Outage::Crash => Some(Refusal::Reset),
            Outage::Blackhole => Some(Refusal::Blackhole),
        }
    }

    /// The rate limiter's verdict on a request of `client` at `now`: `Err` carries the
    /// Retry-After.
    #[inline]
    pub fn rate_limit(&mut self, now: Micros, client: u32) -> Result<(), Micros> {
        match &mut self.rate_limiter {
            Some(limiter) => limiter.admit(now, client),
            None => Ok(()),
        }
    }

    /// An injected error's status, if this request draws one.
    #[inline]
    pub fn injected_error(&mut self) -> Option<u16> {
        let errors = self.model.errors?;
        self.errors
            .chance(errors.rate.get())
            .then_some(errors.status)
    }

    // ---- workers and queue -----------------------------------------------------------------

    /// Where a request goes now, counted.
    #[inline]
    pub fn admission(&mut self, now: Micros) -> Admission {
        if self.busy < self.available {
            self.counts(now).served_at_once += 1;
            Admission::Serve
        } else if (self.queue.len() as u64) < self.model.queue_limit {
            self.counts(now).queued += 1;
            Admission::Queue
        } else {
            self.counts(now).rejected_overload += 1;
            Admission::Refuse
        }
    }

    /// Whether a worker is free.
    #[inline]
    pub fn has_free_worker(&self) -> bool {
        self.busy < self.available
    }

    /// A request joins the queue at `now`.
    #[inline]
    pub fn enqueue(&mut self, now: Micros, attempt: Key) {
        self.queue.push(now, attempt);
    }

    /// What the queue hands a worker free at `now` (a request to serve, or one its discipline
    /// sheds), if a worker is free and a request waits.
    #[inline]
    pub fn next_queued(&mut self, now: Micros) -> Option<Dequeued> {
        if self.busy < self.available {
            self.queue.pop(now)
        } else {
            None
        }
    }

    /// A worker takes a request at `now`; returns when its own work is done.
    #[inline]
    pub fn begin_work(&mut self, now: Micros) -> Micros {
        self.busy += 1;
        now + self.model.service_time.sample(&mut self.service_times)
    }

    /// A worker lets go at `now` of a request it took at `start`; the time is wasted if the
    /// caller has stopped waiting.
    #[inline]
    pub fn release_worker_after(&mut self, now: Micros, start: Micros, caller_waiting: bool) {
        self.busy -= 1;
        let counts = self.counts(now);
        counts.released += 1;
        counts.held_us += now - start;
        if !caller_waiting {
            counts.wasted_work_us += now - start;
        }
    }

    /// Records the queue and the workers at `now`, for the bucket holding it.
    pub fn record_state(&mut self, now: Micros) {
        let (queue_len, busy, available) = (self.queue.len() as u64, self.busy, self.available);
        let counts = self.counts(now);
        counts.queue_len = queue_len;
        counts.busy = busy;
        counts.workers_available = available;
    }

    /// Takes every queued request and every repeat waiting on a key (waiters first, in key
    /// order, then the queue in order), for a crash.
    pub fn take_all_waiting(&mut self) -> (Vec<Key>, Vec<Key>) {
        let waiters = std::mem::take(&mut self.waiting_on_key)
            .into_values()
            .flatten()
            .collect();
        (waiters, self.queue.drain())
    }

    // ---- idempotency keys and writes -------------------------------------------------------

    fn record(&mut self, logical: Key) -> &mut KeyRecord {
        let slot = logical.slot as usize;
        if slot >= self.keys.len() {
            self.keys.resize(slot + 1, KeyRecord::default());
        }
        let record = &mut self.keys[slot];
        if record.generation != logical.generation {
            *record = KeyRecord {
                generation: logical.generation,
                ..KeyRecord::default()
            };
        }
        record
    }

    /// The key state of the logical operation `logical`.
    pub fn key_state(&self, logical: Key) -> KeyState {
        self.keys
            .get(logical.slot as usize)
            .filter(|record| record.generation == logical.generation)
            .map_or(KeyState::Unseen, |record| record.key)
    }

    /// The verdict on a keyed request of `logical` arriving at `now`; a request to process
    /// marks the key in flight.
    pub fn judge_key(&mut self, now: Micros, logical: Key) -> KeyVerdict {
        let ttl = self.model.idempotency_ttl;
        let record = self.record(logical);
        let verdict = record.key.verdict(now, ttl);
        if verdict == KeyVerdict::Process {
            record.key = KeyState::InFlight;
        }
        verdict
    }

    /// The key of `logical` is now held in flight by a request admitted again after the one
    /// holding it was abandoned.
    pub fn claim_key(&mut self, logical: Key) {
        self.record(logical).key = KeyState::InFlight;
    }

    /// A repeat waits for the request holding its key.
    pub fn wait_on_key(&mut self, logical: Key, attempt: Key) {
        self.waiting_on_key
            .entry(logical.slot)
            .or_default()
            .push(attempt);
    }

    /// The key of `logical` completed at `now`: its result is stored; returns the repeats that
    /// waited for it, to answer from the store.
    pub fn complete_key(&mut self, now: Micros, logical: Key) -> Vec<Key> {
        self.record(logical).key = KeyState::Completed { at: now };
        self.waiting_on_key
            .remove(&logical.slot)
            .unwrap_or_default()
    }

    /// The request holding the key of `logical` in flight will not complete: the key is
    /// forgotten; returns the repeats that waited, to be judged afresh. Nothing changes (and
    /// nothing is returned) if the key is not in flight.
    pub fn abandon_key(&mut self, logical: Key) -> Vec<Key> {
        if self.key_state(logical) != KeyState::InFlight {
            return Vec::new();
        }
        self.record(logical).key = KeyState::Unseen;
        self.waiting_on_key
            .remove(&logical.slot)
            .unwrap_or_default()
    }

    /// A write of `logical` is committed here at `now`; returns whether it is a duplicate (a
    /// commit beyond the first of that logical operation at this service).
    pub fn commit_write(&mut self, now: Micros, logical: Key) -> bool {
        self.counts(now).writes += 1;
        let record = self.record(logical);
        record.writes += 1;
        record.writes > 1
    }
}
