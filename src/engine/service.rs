//! A service: workers, a queue, a capacity curve, an outage mode, a rate limiter, an
//! idempotency-key store, injected errors, its own random streams and its own counters.
//!
//! The service decides; the engine moves messages. Each method answers one question the engine
//! asks when a request reaches the service, waits for a worker or finishes (is it down? over
//! its rate? does its key say replay? is a worker free?), and counts what it did in the
//! service's own [`ServiceBucket`]s. It never sees a client's records: requests are attempt
//! keys it queues and hands back, and what it needs to know of the operation behind a request
//! (its logical operation's key, the client) comes in as arguments. So a topology is just
//! several of these, addressed by index, and its behaviours under overload (queue disciplines,
//! concurrency limits, crashes and cold starts, a cache) each live in a module of their own
//! below it.
//!
//! The idempotency-key store keeps, per logical operation, the key's state and the writes
//! committed here ([`crate::engine::idempotency`]). Records are indexed by the logical operation's
//! slab slot and tagged with its generation, so the store costs memory only for operations in
//! flight, and a record left by a finished operation reads as empty for the slot's next tenant.

pub mod health;
pub mod limit;
pub mod queue;
pub mod rate_limiter;

use std::collections::BTreeMap;

use crate::base::capacity::CapacityCurve;

use crate::base::random::{Draw, Draws, Identity, Keyed, Purpose, Random, Stream};
use crate::base::slab::Key;
use crate::base::time::Micros;
use crate::engine::counters::{Buckets, ServiceRecord};
use crate::engine::idempotency::{KeyState, KeyVerdict};
use crate::engine::service::rate_limiter::RateLimiter;
use crate::model::RejectionKind;
use crate::model::{Errors, ServiceId, ServiceModel};
use crate::scenario::{ErrorsAt, Outage};
use crate::vocabulary::counts::ServiceBucket;
use health::Health;
use limit::ConcurrencyLimit;
use queue::{Dequeued, Queue};

/// The longest a worker's own work lasts: about 146,000 years, beyond the end of any run, so
/// that a slowdown too large for the clock (a `kappa` of 10^300) ends the work there, where
/// nothing is left to see it, instead of overflowing.
const LONGEST_WORK: Micros = Micros::MAX / 4;

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

/// The bytes of one slot of an instance's idempotency-key records, for the cost estimate.
pub const KEY_RECORD_BYTES: usize = std::mem::size_of::<KeyRecord>();

/// One logical operation's record in a service's key store.
#[derive(Debug, Clone, Copy, Default)]
struct KeyRecord {
    generation: u32,
    key: KeyState,
    writes: u16,
}

/// What a service remembers of a request it admitted, when a limit or a cache needs it.
#[derive(Debug, Clone, Copy, Default)]
struct RequestRecord {
    generation: u32,
    arrived: Micros,
    in_flight: u64,
    miss: bool,
    /// The optimistic row's version the request read.
    version: u64,
}

/// A record kept per slab slot, for the slot's current tenant (a generation).
trait Tenant: Clone + Default {
    fn generation(&self) -> u32;
    fn new_tenant(generation: u32) -> Self;
}

impl Tenant for KeyRecord {
    fn generation(&self) -> u32 {
        self.generation
    }
    fn new_tenant(generation: u32) -> Self {
        KeyRecord {
            generation,
            ..KeyRecord::default()
        }
    }
}

impl Tenant for RequestRecord {
    fn generation(&self) -> u32 {
        self.generation
    }
    fn new_tenant(generation: u32) -> Self {
        RequestRecord {
            generation,
            ..RequestRecord::default()
        }
    }
}

/// The record in `table` for `key`, fresh if `key` is a new tenant of its slot.
#[inline]
fn tenant<T: Tenant>(table: &mut Vec<T>, key: Key) -> &mut T {
    let slot = key.slot as usize;
    if slot >= table.len() {
        table.resize(slot + 1, T::default());
    }
    let record = &mut table[slot];
    if record.generation() != key.generation {
        *record = T::new_tenant(key.generation);
    }
    record
}

/// Where an instance sits in its fleet (outside a fleet, every field but `curve` is the
/// instance itself).
#[derive(Debug, Clone, Copy)]
pub struct Placement {
    /// The service of the model it is an instance of.
    pub service: ServiceId,
    /// The instance that keeps the fleet's writes.
    pub writes: ServiceId,
    /// The instance that keeps the idempotency keys this one sees.
    pub keys: ServiceId,
    /// It follows the service's capacity curve (else it keeps full capacity).
    pub curve: bool,
}

/// A running service.
#[derive(Debug)]
pub struct Service<'m> {
    /// What the service is.
    pub model: &'m ServiceModel,
    /// Which service of the model it is an instance of (itself, outside a fleet).
    pub service: ServiceId,
    /// The instance that keeps its fleet's writes: the fleet's first, as a fleet shares one
    /// database (itself, outside a fleet).
    pub store: ServiceId,
    /// The instance that keeps the idempotency keys it sees: the fleet's first with a shared
    /// key store, else itself.
    pub key_store: ServiceId,
    /// Its capacity over time: the service's curve, or a full one for an instance of a fleet
    /// beyond the curve's `capacity_instances`.
    capacity: &'m CapacityCurve,
    available: u64,
    /// Until when (exclusive) the capacity curve keeps `available` as it is: its next change.
    available_until: Micros,
    /// Workers holding a request or paying for rejections.
    busy: u64,
    /// Of the busy workers, those paying for rejections.
    rejecting: u64,
    /// An event-driven service: requests whose own work is done and whose downstream calls
    /// are out. They are in the service (its concurrency limit and crash threshold count
    /// them) but hold no worker.
    forwarding: u64,
    /// Worker time owed for rejections that found no free worker.
    rejection_debt: Micros,
    queue: Queue,
    /// The longest the queue has been.
    peak_queue_len: u64,
    limit: Option<ConcurrencyLimit>,
    limit_random: Stream,
    /// The service times of the requests it serves, in the order its workers take them (see
    /// [`Draw::ServiceTime`]).
    service_times: Draws,
    /// Per attempt slot, for the limit and the cache.
    requests: Vec<RequestRecord>,
    /// Crash, restart, cold start, cache warmth.
    pub health: Health,
    /// An optimistic row's version: writes so far.
    row_version: u64,
    rate_limiter: Option<RateLimiter>,
    keys: Vec<KeyRecord>,
    waiting_on_key: BTreeMap<u32, Vec<Key>>,
    counts: Buckets<ServiceBucket>,
}

impl<'m> Service<'m> {
    /// Instance `id` (numbered across every service's instances) of service `service` of a
    /// simulation seeded with `seed`, whose users are `clients` clients, counting in buckets of
    /// `bucket`. `store` is the instance that keeps its fleet's keys; `curve` says whether it
    /// follows the service's capacity curve (else it keeps full capacity).
    pub fn new(
        model: &'m ServiceModel,
        id: ServiceId,
        placement: Placement,
        seed: u64,
        clients: u64,
        bucket: Micros,
    ) -> Service<'m> {
        Service {
            model,
            service: placement.service,
            store: placement.writes,
            key_store: placement.keys,
            capacity: if placement.curve {
                &model.capacity
            } else {
                &model.full_capacity
            },
            available: 0,
            available_until: 0,
            busy: 0,
            rejecting: 0,
            forwarding: 0,
            rejection_debt: 0,
            queue: Queue::new(model.queue_discipline),
            peak_queue_len: 0,
            limit: model
                .concurrency_limit
                .as_ref()
                .map(|limit| ConcurrencyLimit::new(&limit.algorithm)),
            limit_random: Stream::owned(seed, Purpose::Limit, id.into()),
            service_times: Keyed::new(seed).draws(
                Draw::ServiceTime,
                Identity {
                    call: 0,
                    part: u32::from(id),
                },
            ),
            requests: Vec::new(),
            health: Health::new(model),
            row_version: 0,
            rate_limiter: model
                .rate_limit
                .as_ref()
                .map(|limit| RateLimiter::new(limit, clients)),
            keys: Vec::new(),
            waiting_on_key: BTreeMap::new(),
            counts: Buckets::new(bucket),
        }
    }

    /// The counts of the bucket holding `now`.
    #[inline]
    pub fn counts(&mut self, now: Micros) -> &mut ServiceBucket {
        self.counts.at(now)
    }

    /// Its name, counts and crashes (down, back up), at the end of the run.
    pub fn into_counts(self) -> ServiceRecord {
        ServiceRecord {
            name: self.model.name.clone(),
            counts: self.counts,
            downtime: self.health.into_downtime(),
            peak_queue_len: self.peak_queue_len,
            ejected_us: 0,
        }
    }

    // ---- capacity --------------------------------------------------------------------------

    /// Sets the workers available at `now` from the capacity curve; returns whether this is a
    /// crash (capacity just reached zero with `outage = "crash"`) and when capacity next
    /// changes.
    pub fn update_capacity(&mut self, now: Micros) -> (bool, Option<Micros>) {
        let next = self.capacity.next_change(now);
        self.available_until = next.unwrap_or(Micros::MAX);
        if self.health.is_down() {
            return (false, next);
        }
        let before = self.available;
        self.available = self.capacity.available(now);
        let crash = self.model.outage == Outage::Crash;
        if crash && before == 0 && self.available > 0 && now > 0 {
            self.health.come_back(now);
        }
        (crash && self.available == 0 && before > 0, next)
    }

    /// It crashes under overload at `now`: no worker is available until it comes back, at the
    /// time returned.
    pub fn go_down(&mut self, now: Micros) -> Micros {
        self.available = 0;
        self.counts(now).crashes += 1;
        self.health.go_down(now)
    }

    /// It comes back at `now` after crashing under overload, cold.
    pub fn come_back(&mut self, now: Micros) {
        self.health.come_back(now);
        self.available = self.capacity.available(now);
    }

    /// Notes the load now; returns when to check for a crash, if the overload that crashes it
    /// has just begun.
    #[inline]
    pub fn observe_load(&mut self, now: Micros) -> Option<Micros> {
        self.model.crash?;
        let (queue_len, in_flight) = (self.queue.len() as u64, self.in_flight());
        self.health.observe_load(now, queue_len, in_flight)
    }

    /// What happens to a request arriving now, if the service is down (crashed, or capacity
    /// zero) and does not let requests wait for it.
    #[inline]
    pub fn refusal(&self) -> Option<Refusal> {
        if self.health.is_down() {
            return Some(Refusal::Reset);
        }
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

    /// What happens to a request that will reach the service at `at`, if that is certain now:
    /// the capacity curve has it down from now until then and it does not let requests wait,
    /// and no overload can crash it meanwhile (only the load decides a crash). A request that
    /// reaches an outage's first or last instant is never certain: the curve's change is an
    /// event of that instant, and which comes first is the order of events.
    #[inline]
    pub fn certain_refusal(&self, at: Micros) -> Option<Refusal> {
        if self.available > 0 || at >= self.available_until || self.model.crash.is_some() {
            return None;
        }
        self.refusal()
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

    /// An injected error answered `at` arrival or after the work, if the request whose
    /// `draws` these are draws one. The draw is the request's own, so asking again after the
    /// work gives the answer the request drew as it arrived.
    #[inline]
    pub fn injected_error(&self, mut draws: Draws, at: ErrorsAt) -> Option<Errors> {
        let errors = self.model.errors.filter(|errors| errors.at == at)?;
        draws.chance(errors.rate.get()).then_some(errors)
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

    /// A request joins the queue at `now`.
    #[inline]
    pub fn enqueue(&mut self, now: Micros, attempt: Key) {
        self.queue.push(now, attempt);
        self.peak_queue_len = self.peak_queue_len.max(self.queue.len() as u64);
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

    /// A worker takes request `attempt` at `now`; returns when its own work is done: a cache
    /// hit's time or a service time (a miss), longer while the service is cold and the more
    /// requests are in service with contention. `hit` is the request's draw for its cache, if
    /// the service has one.
    #[inline]
    pub fn begin_work(&mut self, now: Micros, attempt: Key, hit: Option<Draws>) -> Micros {
        self.busy += 1;
        if self.model.cache.is_none()
            && self.model.cold_start.is_none()
            && self.model.contention.is_none()
        {
            return now + self.model.service_time.sample(&mut self.service_times);
        }
        self.cached_or_slowed_work(now, attempt, hit)
    }

    /// [`Service::begin_work`] with a cache, a cold start or contention to account for. The
    /// slowdowns multiply: a cold service under contention is slow for both reasons. They draw
    /// nothing: contention's multiplier is that of the requests in service as this one starts,
    /// itself included ([`crate::model::ContentionModel`]).
    #[inline(never)]
    fn cached_or_slowed_work(&mut self, now: Micros, attempt: Key, hit: Option<Draws>) -> Micros {
        let work = match (self.health.hit_ratio(), hit) {
            (Some(hit_ratio), Some(mut hit)) => {
                let hit = hit.unit() < hit_ratio;
                self.request(attempt).miss = !hit;
                match (hit, &self.model.cache) {
                    (true, Some(cache)) => cache.hit_time,
                    _ => self.model.service_time.sample(&mut self.service_times),
                }
            }
            // No cache (a hit ratio comes with one): a cold start alone.
            _ => self.model.service_time.sample(&mut self.service_times),
        };
        let cold = self.health.cold_multiplier(now);
        let in_service = self.busy - self.rejecting;
        let crowded = self
            .model
            .contention
            .map_or(1.0, |contention| contention.multiplier(in_service));
        let slowed = (work as f64 * cold * crowded).round();
        now + slowed.min(LONGEST_WORK as f64) as Micros
    }

    /// The record of request `attempt`, new if it is a new tenant of its slot.
    fn request(&mut self, attempt: Key) -> &mut RequestRecord {
        tenant(&mut self.requests, attempt)
    }

    /// Requests in the service: queued, or held by a worker.
    #[inline]
    pub fn in_flight(&self) -> u64 {
        self.queue.len() as u64 + self.busy - self.rejecting + self.forwarding
    }

    /// Whether the concurrency limit turns a request away now.
    #[inline]
    pub fn limit_reached(&self) -> bool {
        self.limit
            .as_ref()
            .is_some_and(|limit| self.in_flight() >= limit.limit())
    }

    /// Request `attempt` was admitted at `now` (queued or served).
    #[inline]
    pub fn admitted(&mut self, now: Micros, attempt: Key) {
        if self.limit.is_some() {
            let in_flight = self.in_flight() + 1;
            let record = self.request(attempt);
            record.arrived = now;
            record.in_flight = in_flight;
        }
    }

    /// Request `attempt` left the service at `now`: answered (`dropped` if its caller had
    /// gone), or shed, dropped or cancelled (`dropped`). The limit learns from it, a cache
    /// miss may fill the cache.
    #[inline]
    pub fn ended(&mut self, now: Micros, attempt: Key, answered: bool, dropped: bool) {
        if self.limit.is_none() && self.model.cache.is_none() {
            return;
        }
        let record = *self.request(attempt);
        if answered && record.miss {
            self.health.miss_answered(!dropped);
        }
        if let Some(limit) = &mut self.limit {
            limit.sample(
                now,
                now - record.arrived,
                record.in_flight,
                dropped,
                &mut self.limit_random,
            );
        }
    }

    /// Request `attempt` reads the optimistic row's version.
    pub fn read_row(&mut self, attempt: Key) {
        let version = self.row_version;
        self.request(attempt).version = version;
    }

    /// The write of request `attempt` reaches the optimistic row: it succeeds (and the version
    /// moves on) only if nobody wrote since the request read it.
    pub fn write_row(&mut self, attempt: Key) -> bool {
        if self.request(attempt).version != self.row_version {
            return false;
        }
        self.row_version += 1;
        true
    }

    /// A rejection of `kind` at `now` costs a worker's time: a free worker pays it at once
    /// (returns when it is done), else it is owed until one frees. Nothing is owed while no
    /// worker is up.
    #[inline]
    pub fn charge(&mut self, now: Micros, kind: RejectionKind) -> Option<Micros> {
        let cost = self.model.rejection_cost.of(kind);
        if cost == 0 || self.available == 0 {
            return None;
        }
        self.counts(now).rejection_work_us += cost;
        if self.busy < self.available {
            self.busy += 1;
            self.rejecting += 1;
            Some(now + cost)
        } else {
            self.rejection_debt += cost;
            None
        }
    }

    /// A free worker takes on the rejection work owed, if any; returns when it is done.
    #[inline]
    pub fn pay_rejection_debt(&mut self, now: Micros) -> Option<Micros> {
        if self.rejection_debt == 0 || self.busy >= self.available {
            return None;
        }
        self.busy += 1;
        self.rejecting += 1;
        Some(now + std::mem::take(&mut self.rejection_debt))
    }

    /// A worker finished its rejection work.
    #[inline]
    pub fn rejection_work_done(&mut self) {
        self.busy -= 1;
        self.rejecting -= 1;
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

    /// An event-driven service's worker, done at `now` with its own work on a request it took
    /// at `start`, lets go of it while its downstream calls are out.
    pub fn forward(&mut self, now: Micros, start: Micros, caller_waiting: bool) {
        self.release_worker_after(now, start, caller_waiting);
        self.forwarding += 1;
    }

    /// A request whose calls were out (see [`Service::forward`]) leaves the service.
    pub fn forwarded_back(&mut self) {
        self.forwarding -= 1;
    }

    /// Records the queue and the workers at `now`, for the bucket holding it.
    pub fn record_state(&mut self, now: Micros) {
        let (queue_len, busy, available) = (self.queue.len() as u64, self.busy, self.available);
        let mean_work_us = self.mean_work_us(now);
        let counts = self.counts(now);
        counts.queue_len = queue_len;
        counts.busy = busy;
        counts.workers_available = available;
        counts.mean_work_us = mean_work_us;
    }

    /// The mean work of a request started at `now`, in microseconds, if a cold start or a
    /// cache makes it differ from the mean service time (0 if neither is configured).
    fn mean_work_us(&self, now: Micros) -> u64 {
        if self.model.cache.is_none() && self.model.cold_start.is_none() {
            return 0;
        }
        let service = self.model.mean_service_us();
        let work = match (&self.model.cache, self.health.hit_ratio()) {
            (Some(cache), Some(hit_ratio)) => {
                hit_ratio * cache.hit_time as f64 + (1.0 - hit_ratio) * service
            }
            _ => service,
        };
        (work * self.health.cold_multiplier(now)).round().max(1.0) as u64
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
        tenant(&mut self.keys, logical)
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

    /// The service crashed and its keys were in its memory: every key is forgotten (the
    /// writes stay where the data lives), so a retry of an operation that completed before
    /// the crash is processed again.
    pub fn forget_keys(&mut self) {
        for record in &mut self.keys {
            record.key = KeyState::Unseen;
        }
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

    /// A write of `logical` is committed to the data this service keeps (its fleet's, for the
    /// fleet's store); returns whether it is a duplicate (a commit beyond the first of that
    /// logical operation here).
    pub fn record_write(&mut self, logical: Key) -> bool {
        let record = self.record(logical);
        record.writes += 1;
        record.writes > 1
    }
}
