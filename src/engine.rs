//! The discrete-event engine: clients, network and upstream of one scenario under one policy.
//!
//! # Model
//!
//! *Clients* start operations (open loop: a Poisson process of `count * rate` per second, each
//! arrival assigned to a uniformly drawn client; closed loop: one operation at a time per client,
//! with an exponential think time between). An operation picks an endpoint by weight, gets a
//! deadline, and sends its first attempt at once. Each attempt waits `min(attempt_timeout, time
//! left)`. When an attempt fails (a status, a reset, or the timeout) the client asks the retry
//! decision ([`crate::decision::plan_retry`]) with the 0-based index of the failed attempt,
//! exactly as the article's procedure takes it: with `max_attempts = 3` an operation is sent at
//! most four times. A write endpoint with a status endpoint first asks it (a real request,
//! using capacity) after a failure without a response: committed means success, not found means
//! the decision may repeat the request; still pending, or no answer, means the decision may ask
//! again later (within the same attempt budget and deadline), and if it stops the outcome is
//! unknown.
//!
//! The *network* delays every message by a latency draw; `request_loss` drops a request before
//! the upstream sees it, `response_loss` drops a response after the work is done, and only the
//! second can duplicate a write.
//!
//! The *upstream* checks, in order: an outage (capacity zero) and what it means, the rate
//! limiter (429 with Retry-After), load-independent errors, the idempotency key
//! ([`crate::idempotency`]), then admission: a free worker serves at once, else the request
//! waits in a FIFO queue of at most `queue_limit`, else it is refused with `overload_status`.
//! Serving a request of a non-idempotent method commits a write; a commit beyond the first for
//! one logical operation is a duplicate write. Work whose client has given up is finished anyway
//! and counted as wasted, unless `drop_expired` drops it when it reaches a worker.
//!
//! # Determinism
//!
//! Time is integer microseconds; events pop in (time, insertion) order; all randomness comes
//! from the streams of [`crate::random`], split by purpose, so every policy sees the same
//! open-loop arrivals and the same endpoint choices. Nothing here iterates a hash map.
//!
//! # Ending
//!
//! Operations start until `duration`; operations in flight then run to their end (success, or
//! the decision stops them, which the deadline guarantees), and the run stops when the last one
//! ends. Requests still queued then are abandoned.

use std::collections::{BTreeMap, VecDeque};

use crate::capacity::CapacityCurve;
use crate::decision::{Decision, RetryInput, is_idempotent_method, plan_retry};
use crate::distribution::Distribution;
use crate::event_queue::EventQueue;
use crate::idempotency::{KeyState, KeyVerdict};
use crate::metrics::{Measurements, Recorder, UNKNOWN_STATUS};
use crate::random::{Purpose, Stream};
use crate::rate_limiter::RateLimiter;
use crate::retry_after::RetryAfterMode;
use crate::scenario::{InFlightRepeat, Outage, Policy, Scenario, Start, Workload};
use crate::slab::{Key, Slab};
use crate::time::{MICROS_PER_MS, MICROS_PER_SECOND, Micros};

/// How often, in events, the observer hears about progress.
const PROGRESS_EVERY: u64 = 1 << 16;

/// One attempt as the client saw it, for `--trace`.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRecord {
    /// The client that sent it.
    pub client: u32,
    /// The logical operation (numbered from 0 in start order).
    pub operation: u64,
    /// 0-based attempt index; a status check carries the index of the attempt it asks about.
    pub attempt: u32,
    /// When it was sent.
    pub send: Micros,
    /// When the client learned its result or stopped waiting.
    pub end: Micros,
    /// What happened: `ok`, `rejected`, `conflict`, `error`, `reset`, `timeout`, or for status
    /// checks `committed`, `not-found`, `pending`.
    pub outcome: &'static str,
    /// HTTP status received, if any.
    pub status: Option<u16>,
    /// Retry-After received, if any.
    pub retry_after: Option<Micros>,
    /// Delay before the next attempt, if the client retries.
    pub next_delay: Option<Micros>,
    /// What the client did next: `success`, `retry`, `status-check`, or why it stopped.
    pub reason: &'static str,
}

/// Hears what the engine does, for traces and progress bars. Both methods default to nothing.
pub trait Observer {
    /// An attempt was resolved.
    fn attempt(&mut self, _record: &AttemptRecord) {}
    /// The simulation reached time `now`; called every few tens of thousands of events.
    fn progress(&mut self, _now: Micros) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct Quiet;

impl Observer for Quiet {}

/// Simulates `scenario` under `policy` and returns what was measured.
pub fn simulate(
    scenario: &Scenario,
    policy: &Policy,
    observer: &mut impl Observer,
) -> Measurements {
    Engine::new(scenario, policy, observer).run()
}

#[derive(Debug, Clone, Copy)]
enum Event {
    /// The next open-loop operation starts.
    Arrival,
    /// A closed-loop client starts its next operation.
    ClientReady(u32),
    /// An operation sends its next attempt.
    Send(Key),
    /// A request reaches the upstream.
    Reach(Key),
    /// A worker finishes a request.
    ServiceDone(Key),
    /// A response reaches the client.
    Response(Key),
    /// A client stops waiting for an attempt.
    Timeout(Key),
    /// The number of available workers changes.
    Capacity,
    /// A time bucket ends.
    Tick,
}

/// An endpoint, with what the engine needs of it precomputed.
#[derive(Debug, Clone)]
struct Endpoint {
    cumulative_weight: f64,
    idempotent_method: bool,
    idempotency_key: bool,
    status_endpoint: bool,
}

/// What the upstream answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reply {
    Pending,
    Ok,
    RateLimited { retry_after: Micros },
    Overloaded { retry_after: Option<Micros> },
    Conflict,
    Error(u16),
    Reset,
    Committed,
    NotFound,
    StillPending,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Travelling,
    Queued,
    InService { start: Micros },
    Waiting,
    Responding,
}

#[derive(Debug)]
struct Attempt {
    operation: Key,
    index: u32,
    status_check: bool,
    sent: Micros,
    gives_up: Micros,
    client_waiting: bool,
    server_holds: bool,
    stage: Stage,
    reply: Reply,
}

#[derive(Debug)]
struct Operation {
    id: u64,
    client: u32,
    endpoint: u16,
    start: Micros,
    attempt: u16,
    previous_delay_ms: Option<f64>,
    live_attempts: u16,
    finished: bool,
    writes: u16,
    key: KeyState,
    in_upstream: u16,
    /// The client is asking the status endpoint rather than repeating the request.
    checking: bool,
}

/// The policy, in the units the decision takes.
#[derive(Debug, Clone)]
struct Client {
    base_ms: f64,
    cap_ms: f64,
    max_attempts: f64,
    policy: Policy,
}

struct Engine<'a, O: Observer> {
    scenario: &'a Scenario,
    client: Client,
    observer: &'a mut O,
    now: Micros,
    events: EventQueue<Event>,
    recorder: Recorder,
    // Precomputed configuration.
    duration: Micros,
    /// Every operation's time budget.
    deadline: Micros,
    /// How long the upstream remembers a completed key, in this policy's simulation.
    idempotency_ttl: Micros,
    bucket: Micros,
    endpoints: Vec<Endpoint>,
    latency: Distribution,
    service: Distribution,
    arrival_mean_us: f64,
    /// The open workload's load curve, if it has one, and its peak factor (1 without one).
    load: Option<CapacityCurve>,
    load_peak: f64,
    think_mean_us: f64,
    // Random streams.
    arrivals: Stream,
    operations_stream: Stream,
    network: Stream,
    service_stream: Stream,
    jitter: Stream,
    errors: Stream,
    // State.
    operations: Slab<Operation>,
    attempts: Slab<Attempt>,
    next_operation_id: u64,
    unfinished: u64,
    next_arrival_us: f64,
    capacity: CapacityCurve,
    available: u64,
    busy: u64,
    queue: VecDeque<Key>,
    rate_limiter: Option<RateLimiter>,
    waiting_on_key: BTreeMap<u32, Vec<Key>>,
}

impl<'a, O: Observer> Engine<'a, O> {
    fn new(scenario: &'a Scenario, policy: &Policy, observer: &'a mut O) -> Self {
        let seed = scenario.seed;
        let clients = &scenario.clients;
        let mut cumulative_weight = 0.0;
        let endpoints = clients
            .operations
            .iter()
            .map(|operation| {
                cumulative_weight += *operation.weight.get_ref();
                Endpoint {
                    cumulative_weight,
                    idempotent_method: is_idempotent_method(&operation.method),
                    idempotency_key: policy.idempotency_key.unwrap_or(operation.idempotency_key),
                    status_endpoint: policy.status_endpoint.unwrap_or(operation.status_endpoint),
                }
            })
            .collect();
        let count = clients.count.get_ref().get();
        let total_rate = clients.rate.map_or(0.0, |rate| rate.get() * count as f64);
        let upstream = &scenario.upstream;
        Engine {
            scenario,
            client: Client {
                base_ms: policy.base.as_ms_f64(),
                cap_ms: policy.cap.get_ref().as_ms_f64(),
                max_attempts: policy.max_attempts.get() as f64,
                policy: policy.clone(),
            },
            observer,
            now: 0,
            events: EventQueue::default(),
            recorder: Recorder::new(scenario.bucket.get_ref().micros()),
            duration: scenario.duration.get_ref().micros(),
            deadline: clients.deadline.micros(),
            idempotency_ttl: policy
                .idempotency_ttl
                .unwrap_or(upstream.idempotency_ttl)
                .micros(),
            bucket: scenario.bucket.get_ref().micros(),
            endpoints,
            latency: scenario.network.latency,
            service: upstream.service_time,
            arrival_mean_us: if total_rate > 0.0 {
                MICROS_PER_SECOND as f64 / total_rate
            } else {
                f64::INFINITY
            },
            think_mean_us: clients
                .think_time
                .map_or(0.0, |think| think.micros() as f64),
            load: (!clients.load.is_empty()).then(|| CapacityCurve::new(1, &clients.load)),
            load_peak: CapacityCurve::new(1, &clients.load).peak_factor(),
            arrivals: Stream::new(seed, Purpose::Arrivals),
            operations_stream: Stream::new(seed, Purpose::Operations),
            network: Stream::new(seed, Purpose::Network),
            service_stream: Stream::new(seed, Purpose::Service),
            jitter: Stream::new(seed, Purpose::Jitter),
            errors: Stream::new(seed, Purpose::Errors),
            operations: Slab::default(),
            attempts: Slab::default(),
            next_operation_id: 0,
            unfinished: 0,
            next_arrival_us: 0.0,
            capacity: CapacityCurve::new(upstream.workers.get(), &upstream.capacity),
            available: 0,
            busy: 0,
            queue: VecDeque::new(),
            rate_limiter: upstream
                .rate_limit
                .as_ref()
                .map(|limit| RateLimiter::new(limit, count)),
            waiting_on_key: BTreeMap::new(),
        }
    }

    fn run(mut self) -> Measurements {
        self.start();
        while let Some((time, event)) = self.events.pop() {
            self.now = time;
            self.recorder.count_event();
            self.handle(event);
            if self.now >= self.duration && self.unfinished == 0 {
                break;
            }
            if self.recorder.events().is_multiple_of(PROGRESS_EVERY) {
                self.observer.progress(self.now);
            }
        }
        self.record_upstream_state(self.now);
        self.recorder.finish()
    }

    fn start(&mut self) {
        self.available = self.capacity.available(0);
        if let Some(next) = self.capacity.next_change(0) {
            self.events.push(next, Event::Capacity);
        }
        self.events.push(self.bucket - 1, Event::Tick);
        let clients = &self.scenario.clients;
        match clients.workload.get_ref() {
            Workload::Open => self.schedule_next_arrival(),
            Workload::Closed => {
                let count = clients.count.get_ref().get() as u32;
                let together = clients.start == Start::Together;
                for client in 0..count {
                    let start = if together {
                        0
                    } else {
                        self.arrivals.exponential(self.think_mean_us) as Micros
                    };
                    self.events.push(start, Event::ClientReady(client));
                }
            }
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Arrival => {
                let clients = self.scenario.clients.count.get_ref().get();
                let client = self.arrivals.index(clients) as u32;
                self.start_operation(client);
                self.schedule_next_arrival();
            }
            Event::ClientReady(client) => {
                if self.now < self.duration {
                    self.start_operation(client);
                }
            }
            Event::Send(operation) => {
                let checking = self
                    .operations
                    .get(operation)
                    .expect("a waiting operation is live")
                    .checking;
                self.send(operation, checking);
            }
            Event::Reach(attempt) => self.reach(attempt),
            Event::ServiceDone(attempt) => self.service_done(attempt),
            Event::Response(attempt) => self.response(attempt),
            Event::Timeout(attempt) => self.timeout(attempt),
            Event::Capacity => self.capacity_change(),
            Event::Tick => {
                // At the last microsecond of a bucket, so that the bucket records its own end.
                self.record_upstream_state(self.now);
                if self.now < self.duration || self.unfinished > 0 {
                    self.events.push(self.now + self.bucket, Event::Tick);
                }
            }
        }
    }

    // ---- clients -------------------------------------------------------------------------

    /// The deadline the client works to: the operation's, or practically none for a client
    /// that ignores it (then only the retry budget ends the operation).
    fn deadline_of(&self, start: Micros) -> Micros {
        if self.client.policy.ignore_deadline {
            Micros::MAX / 2
        } else {
            start + self.deadline
        }
    }

    /// The next open-loop arrival. With a load curve, arrivals are drawn at the curve's peak
    /// rate and thinned (kept with probability `factor(t) / peak`), which gives a Poisson
    /// process of rate `rate * factor(t)` from the arrival stream alone.
    fn schedule_next_arrival(&mut self) {
        loop {
            self.next_arrival_us += self
                .arrivals
                .exponential(self.arrival_mean_us / self.load_peak);
            let Some(load) = &self.load else { break };
            let keep = load.factor(self.next_arrival_us as Micros) / self.load_peak;
            if self.next_arrival_us >= self.duration as f64 || self.arrivals.unit() < keep {
                break;
            }
        }
        if self.next_arrival_us < self.duration as f64 {
            self.events
                .push(self.next_arrival_us as Micros, Event::Arrival);
        }
    }

    fn start_operation(&mut self, client: u32) {
        let total = self
            .endpoints
            .last()
            .expect("validated: one endpoint at least")
            .cumulative_weight;
        let draw = self.operations_stream.unit() * total;
        let endpoint = self
            .endpoints
            .partition_point(|endpoint| endpoint.cumulative_weight <= draw)
            .min(self.endpoints.len() - 1);
        let id = self.next_operation_id;
        self.next_operation_id += 1;
        self.unfinished += 1;
        self.recorder.operation_started();
        let operation = self.operations.insert(Operation {
            id,
            client,
            endpoint: endpoint as u16,
            start: self.now,
            attempt: 0,
            previous_delay_ms: None,
            live_attempts: 0,
            finished: false,
            writes: 0,
            key: KeyState::Unseen,
            in_upstream: 0,
            checking: false,
        });
        self.send(operation, false);
    }

    /// Sends an attempt of `operation`, or a status check about it.
    fn send(&mut self, key: Key, status_check: bool) {
        let now = self.now;
        let start = self
            .operations
            .get(key)
            .expect("a live operation sends")
            .start;
        let time_left = self.deadline_of(start).saturating_sub(now);
        let operation = self
            .operations
            .get_mut(key)
            .expect("a live operation sends");
        let index = u32::from(operation.attempt);
        operation.live_attempts += 1;
        let counts = self.recorder.at(now);
        if status_check {
            counts.status_checks += 1;
        } else {
            counts.attempts += 1;
            if index == 0 {
                counts.first_attempts += 1;
            } else {
                counts.retries += 1;
            }
        }
        let gives_up = now
            + self
                .scenario
                .clients
                .attempt_timeout
                .micros()
                .min(time_left);
        let lost = self
            .network
            .chance(self.scenario.network.request_loss.get());
        let attempt = self.attempts.insert(Attempt {
            operation: key,
            index,
            status_check,
            sent: now,
            gives_up,
            client_waiting: true,
            server_holds: !lost,
            stage: Stage::Travelling,
            reply: Reply::Pending,
        });
        self.recorder
            .in_flight(self.operations.len(), self.attempts.len());
        self.events.push(gives_up, Event::Timeout(attempt));
        if !lost {
            let arrives = now + self.latency.sample(&mut self.network);
            self.events.push(arrives, Event::Reach(attempt));
        }
    }

    fn response(&mut self, key: Key) {
        let Some(attempt) = self.attempts.get_mut(key) else {
            return;
        };
        attempt.server_holds = false;
        if attempt.client_waiting {
            attempt.client_waiting = false;
            self.resolve(key, None);
        }
        self.release_attempt(key);
    }

    fn timeout(&mut self, key: Key) {
        let Some(attempt) = self.attempts.get_mut(key) else {
            return;
        };
        if !attempt.client_waiting {
            return;
        }
        attempt.client_waiting = false;
        self.recorder.at(self.now).timeouts += 1;
        self.resolve(key, Some("timeout"));
        self.release_attempt(key);
    }

    /// The client learned the result of an attempt (its reply, or `timed_out`): count it,
    /// decide what to do next, and trace it.
    fn resolve(&mut self, key: Key, timed_out: Option<&'static str>) {
        let attempt = self.attempts.get(key).expect("resolving a live attempt");
        let (operation, reply, status_check) =
            (attempt.operation, attempt.reply, attempt.status_check);
        let (send, index) = (attempt.sent, attempt.index);
        let overload_status = self.scenario.upstream.overload_status.get() as u16;
        let (outcome, status, retry_after): (&'static str, Option<u16>, Option<Micros>) =
            match (timed_out, reply) {
                (Some(outcome), _) => (outcome, None, None),
                (None, Reply::Ok) => ("ok", Some(200), None),
                (None, Reply::Committed) => ("committed", Some(200), None),
                (None, Reply::NotFound) => ("not-found", Some(404), None),
                (None, Reply::StillPending) => ("pending", Some(202), None),
                (None, Reply::RateLimited { retry_after }) => {
                    ("rejected", Some(429), Some(retry_after))
                }
                (None, Reply::Overloaded { retry_after }) => {
                    ("rejected", Some(overload_status), retry_after)
                }
                (None, Reply::Conflict) => ("conflict", Some(409), None),
                (None, Reply::Error(code)) => ("error", Some(code), None),
                (None, Reply::Reset) => ("reset", None, None),
                (None, Reply::Pending) => unreachable!("a response carries a reply"),
            };
        let counts = self.recorder.at(self.now);
        match reply {
            _ if timed_out.is_some() => {}
            Reply::Ok | Reply::Committed | Reply::NotFound | Reply::StillPending => counts.ok += 1,
            Reply::RateLimited { .. } => counts.rejected_429 += 1,
            Reply::Overloaded { .. } => counts.rejected_503 += 1,
            Reply::Conflict => counts.conflicts_409 += 1,
            Reply::Error(_) => counts.errors += 1,
            Reply::Reset => counts.resets += 1,
            Reply::Pending => {}
        }
        let (next_delay, reason) = if status_check {
            match (timed_out, reply) {
                (None, Reply::Committed) => self.succeed(operation),
                (None, Reply::NotFound) => {
                    // Never written: the request itself may be repeated.
                    self.operations
                        .get_mut(operation)
                        .expect("live operation")
                        .checking = false;
                    self.decide(operation, None, true, None)
                }
                // Still being processed: ask again later, as after a transport error.
                (None, Reply::StillPending) | (Some(_), _) | (None, Reply::Reset) => {
                    self.decide(operation, None, true, None)
                }
                (None, _) => self.decide(operation, status, false, retry_after),
            }
        } else {
            match (timed_out, reply) {
                (None, Reply::Ok) => self.succeed(operation),
                (Some(_), _) | (None, Reply::Reset) => self.no_response(operation),
                (None, _) => self.decide(operation, status, false, retry_after),
            }
        };
        let operation = self
            .operations
            .get(operation)
            .expect("operations outlive their attempts");
        let record = AttemptRecord {
            client: operation.client,
            operation: operation.id,
            attempt: index,
            send,
            end: self.now,
            outcome,
            status,
            retry_after,
            next_delay,
            reason,
        };
        self.observer.attempt(&record);
    }

    /// An attempt failed without a response: ask the status endpoint if the operation may
    /// have written, else let the decision judge a transport error.
    fn no_response(&mut self, key: Key) -> (Option<Micros>, &'static str) {
        let operation = self.operations.get(key).expect("live operation");
        let endpoint = &self.endpoints[usize::from(operation.endpoint)];
        if endpoint.status_endpoint && !endpoint.idempotent_method {
            if self.deadline_of(operation.start) > self.now {
                self.operations
                    .get_mut(key)
                    .expect("live operation")
                    .checking = true;
                self.send(key, true);
                return (None, "status-check");
            }
            return self.fail(key, UNKNOWN_STATUS);
        }
        self.decide(key, None, true, None)
    }

    /// Asks the retry decision and acts on it. While the client is asking the status endpoint,
    /// a retry asks it again, and a stop leaves the outcome unknown.
    fn decide(
        &mut self,
        key: Key,
        status: Option<u16>,
        transport_error: bool,
        retry_after: Option<Micros>,
    ) -> (Option<Micros>, &'static str) {
        let operation = self.operations.get(key).expect("live operation");
        let endpoint = &self.endpoints[usize::from(operation.endpoint)];
        let policy = &self.client.policy;
        let retry_after_random =
            if policy.retry_after == RetryAfterMode::HonorJittered && retry_after.is_some() {
                self.jitter.unit()
            } else {
                0.5
            };
        let input = RetryInput {
            idempotent_method: endpoint.idempotent_method || policy.unsafe_retries,
            status: status.map(f64::from),
            transport_error,
            attempt: f64::from(operation.attempt),
            now_ms: self.now as f64 / MICROS_PER_MS as f64,
            deadline_ms: self.deadline_of(operation.start) as f64 / MICROS_PER_MS as f64,
            base_ms: self.client.base_ms,
            cap_ms: self.client.cap_ms,
            max_attempts: self.client.max_attempts,
            random: self.jitter.unit(),
            retry_after_ms: retry_after.map(|micros| micros as f64 / MICROS_PER_MS as f64),
            idempotency_key: endpoint.idempotency_key,
            status_endpoint: endpoint.status_endpoint,
            previous_delay_ms: operation.previous_delay_ms,
            retry_after_random,
        };
        match plan_retry(&input, &policy.jitter, policy.retry_after) {
            Decision::Retry { delay_ms, .. } => {
                // Round up so that an honoured Retry-After is never undercut by a microsecond.
                let delay = (delay_ms * MICROS_PER_MS as f64).ceil() as Micros;
                let operation = self.operations.get_mut(key).expect("live operation");
                operation.attempt += 1;
                operation.previous_delay_ms = Some(delay_ms);
                self.events.push(self.now + delay, Event::Send(key));
                (Some(delay), "retry")
            }
            Decision::Stop(reason) => {
                let checking = self.operations.get(key).expect("live operation").checking;
                self.fail(
                    key,
                    if checking {
                        UNKNOWN_STATUS
                    } else {
                        reason.name()
                    },
                )
            }
        }
    }

    fn succeed(&mut self, key: Key) -> (Option<Micros>, &'static str) {
        let start = self.operations.get(key).expect("live operation").start;
        self.recorder.succeeded(start, self.now);
        self.finish(key);
        (None, "success")
    }

    fn fail(&mut self, key: Key, reason: &'static str) -> (Option<Micros>, &'static str) {
        self.recorder.failed(self.now, reason);
        self.finish(key);
        (None, reason)
    }

    fn finish(&mut self, key: Key) {
        let operation = self.operations.get_mut(key).expect("live operation");
        operation.finished = true;
        let client = operation.client;
        self.unfinished -= 1;
        if *self.scenario.clients.workload.get_ref() == Workload::Closed {
            let think = self.arrivals.exponential(self.think_mean_us) as Micros;
            self.events
                .push(self.now + think, Event::ClientReady(client));
        }
        self.release_operation(key);
    }

    fn release_attempt(&mut self, key: Key) {
        let attempt = self.attempts.get(key).expect("live attempt");
        if attempt.client_waiting || attempt.server_holds {
            return;
        }
        let operation = attempt.operation;
        self.attempts.remove(key);
        self.operations
            .get_mut(operation)
            .expect("operations outlive their attempts")
            .live_attempts -= 1;
        self.release_operation(operation);
    }

    fn release_operation(&mut self, key: Key) {
        let operation = self.operations.get(key).expect("live operation");
        if operation.finished && operation.live_attempts == 0 {
            self.operations.remove(key);
        }
    }

    // ---- upstream ------------------------------------------------------------------------

    fn reach(&mut self, key: Key) {
        self.recorder.upstream().arrivals += 1;
        let upstream = &self.scenario.upstream;
        if self.available == 0 {
            match upstream.outage {
                Outage::Queue => {}
                Outage::Reject => {
                    let retry_after = upstream.retry_after.map(|after| after.micros());
                    return self.reply(key, Reply::Overloaded { retry_after });
                }
                Outage::Crash => return self.reply(key, Reply::Reset),
                Outage::Blackhole => return self.drop_request(key),
            }
        }
        let attempt = self
            .attempts
            .get(key)
            .expect("a travelling attempt is live");
        let (operation_key, status_check) = (attempt.operation, attempt.status_check);
        if let Some(limiter) = &mut self.rate_limiter {
            let client = self
                .operations
                .get(operation_key)
                .expect("live operation")
                .client;
            if let Err(retry_after) = limiter.admit(self.now, client) {
                return self.reply(key, Reply::RateLimited { retry_after });
            }
        }
        if let Some(errors) = &upstream.errors
            && self.errors.chance(errors.rate.get())
        {
            return self.reply(key, Reply::Error(errors.status.get() as u16));
        }
        if !status_check {
            let operation = self
                .operations
                .get_mut(operation_key)
                .expect("live operation");
            if self.endpoints[usize::from(operation.endpoint)].idempotency_key {
                match operation.key.verdict(self.now, self.idempotency_ttl) {
                    KeyVerdict::Process => operation.key = KeyState::InFlight,
                    KeyVerdict::Replay => {
                        self.recorder.upstream().replayed += 1;
                        return self.reply(key, Reply::Ok);
                    }
                    KeyVerdict::InFlight => {
                        return match upstream.idempotency_in_flight {
                            InFlightRepeat::Reject => self.reply(key, Reply::Conflict),
                            InFlightRepeat::Wait => {
                                self.attempts.get_mut(key).expect("live attempt").stage =
                                    Stage::Waiting;
                                self.waiting_on_key
                                    .entry(operation_key.slot)
                                    .or_default()
                                    .push(key);
                            }
                        };
                    }
                }
            }
        }
        self.admit(key);
    }

    /// A free worker, else the queue, else an overload rejection.
    fn admit(&mut self, key: Key) {
        let attempt = self.attempts.get(key).expect("live attempt");
        let (operation, status_check) = (attempt.operation, attempt.status_check);
        if self.busy < self.available {
            self.recorder.upstream().served_at_once += 1;
        } else if (self.queue.len() as u64) < self.scenario.upstream.queue_limit.get() {
            self.recorder.upstream().queued += 1;
        } else {
            self.recorder.upstream().refused += 1;
            self.abandon_key(key);
            let retry_after = self
                .scenario
                .upstream
                .retry_after
                .map(|after| after.micros());
            return self.reply(key, Reply::Overloaded { retry_after });
        }
        if !status_check {
            self.operations
                .get_mut(operation)
                .expect("live operation")
                .in_upstream += 1;
        }
        if self.busy < self.available {
            self.start_service(key);
        } else {
            self.attempts.get_mut(key).expect("live attempt").stage = Stage::Queued;
            self.queue.push_back(key);
        }
    }

    fn start_service(&mut self, key: Key) {
        self.busy += 1;
        self.attempts.get_mut(key).expect("live attempt").stage =
            Stage::InService { start: self.now };
        let done = self.now + self.service.sample(&mut self.service_stream);
        self.events.push(done, Event::ServiceDone(key));
    }

    fn service_done(&mut self, key: Key) {
        let Some(attempt) = self.attempts.get(key) else {
            return;
        };
        let Stage::InService { start } = attempt.stage else {
            return; // reset by a crash while in service
        };
        let (operation_key, status_check, client_waiting) = (
            attempt.operation,
            attempt.status_check,
            attempt.client_waiting,
        );
        self.busy -= 1;
        self.recorder.upstream().served += 1;
        if !client_waiting {
            self.recorder.at(self.now).wasted_work_us += self.now - start;
        }
        let operation = self
            .operations
            .get_mut(operation_key)
            .expect("live operation");
        let reply = if status_check {
            if operation.writes > 0 {
                Reply::Committed
            } else if operation.in_upstream > 0 || operation.key == KeyState::InFlight {
                Reply::StillPending
            } else {
                Reply::NotFound
            }
        } else {
            operation.in_upstream -= 1;
            let endpoint = &self.endpoints[usize::from(operation.endpoint)];
            if !endpoint.idempotent_method {
                operation.writes += 1;
                let duplicate = operation.writes > 1;
                self.recorder.upstream().writes += 1;
                if duplicate {
                    self.recorder.at(self.now).duplicate_writes += 1;
                }
            }
            if endpoint.idempotency_key {
                let operation = self
                    .operations
                    .get_mut(operation_key)
                    .expect("live operation");
                operation.key = KeyState::Completed { at: self.now };
                for waiter in self
                    .waiting_on_key
                    .remove(&operation_key.slot)
                    .unwrap_or_default()
                {
                    self.recorder.upstream().replayed += 1;
                    self.reply(waiter, Reply::Ok);
                }
            }
            Reply::Ok
        };
        self.reply(key, reply);
        self.dispatch();
    }

    /// Starts queued requests while workers are free.
    fn dispatch(&mut self) {
        while self.busy < self.available {
            let Some(key) = self.queue.pop_front() else {
                return;
            };
            let attempt = self.attempts.get(key).expect("queued attempts are live");
            if self.scenario.upstream.drop_expired && self.now >= attempt.gives_up {
                self.recorder.upstream().dropped_expired += 1;
                self.leave_upstream(key);
                self.drop_request(key);
            } else {
                self.start_service(key);
            }
        }
    }

    /// A request leaves the queue or a worker without being served.
    fn leave_upstream(&mut self, key: Key) {
        let attempt = self.attempts.get(key).expect("live attempt");
        if !attempt.status_check {
            let operation = attempt.operation;
            self.operations
                .get_mut(operation)
                .expect("live operation")
                .in_upstream -= 1;
        }
        self.abandon_key(key);
    }

    /// The request holding its operation's key in flight will not complete: forget the key and
    /// let waiting repeats try again.
    fn abandon_key(&mut self, key: Key) {
        let attempt = self.attempts.get(key).expect("live attempt");
        let operation_key = attempt.operation;
        if attempt.status_check {
            return;
        }
        let operation = self
            .operations
            .get_mut(operation_key)
            .expect("live operation");
        if !self.endpoints[usize::from(operation.endpoint)].idempotency_key
            || operation.key != KeyState::InFlight
        {
            return;
        }
        operation.key = KeyState::Unseen;
        for waiter in self
            .waiting_on_key
            .remove(&operation_key.slot)
            .unwrap_or_default()
        {
            self.reach_again(waiter);
        }
    }

    /// A repeat that waited on a key whose holder was abandoned is judged afresh.
    fn reach_again(&mut self, key: Key) {
        let attempt = self.attempts.get(key).expect("waiting attempts are live");
        let operation_key = attempt.operation;
        let operation = self
            .operations
            .get_mut(operation_key)
            .expect("live operation");
        if operation.key == KeyState::InFlight {
            self.waiting_on_key
                .entry(operation_key.slot)
                .or_default()
                .push(key);
        } else {
            operation.key = KeyState::InFlight;
            self.admit(key);
        }
    }

    /// The upstream lets go of a request without answering.
    fn drop_request(&mut self, key: Key) {
        self.attempts
            .get_mut(key)
            .expect("live attempt")
            .server_holds = false;
        self.release_attempt(key);
    }

    /// The upstream answers; the network may lose the answer.
    fn reply(&mut self, key: Key, reply: Reply) {
        let attempt = self.attempts.get_mut(key).expect("live attempt");
        attempt.reply = reply;
        attempt.stage = Stage::Responding;
        if self
            .network
            .chance(self.scenario.network.response_loss.get())
        {
            return self.drop_request(key);
        }
        let arrives = self.now + self.latency.sample(&mut self.network);
        self.events.push(arrives, Event::Response(key));
    }

    fn capacity_change(&mut self) {
        let before = self.available;
        self.available = self.capacity.available(self.now);
        if self.available == 0 && before > 0 && self.scenario.upstream.outage == Outage::Crash {
            self.crash();
        }
        if let Some(next) = self.capacity.next_change(self.now) {
            self.events.push(next, Event::Capacity);
        }
        self.dispatch();
    }

    /// Every queued and in-service request is reset at once, and so is every repeat waiting
    /// on an idempotency key.
    fn crash(&mut self) {
        let waiters: Vec<Key> = std::mem::take(&mut self.waiting_on_key)
            .into_values()
            .flatten()
            .collect();
        for key in waiters {
            self.reply(key, Reply::Reset);
        }
        let mut victims: Vec<Key> = self.queue.drain(..).collect();
        victims.extend(self.attempts.keys().filter(|&key| {
            matches!(
                self.attempts.get(key).map(|attempt| attempt.stage),
                Some(Stage::InService { .. })
            )
        }));
        for key in victims {
            if matches!(
                self.attempts.get(key).expect("live attempt").stage,
                Stage::InService { .. }
            ) {
                self.busy -= 1;
            }
            self.leave_upstream(key);
            self.reply(key, Reply::Reset);
        }
    }

    fn record_upstream_state(&mut self, at: Micros) {
        let (queue_len, available) = (self.queue.len() as u64, self.available);
        let counts = self.recorder.at(at);
        counts.queue_len = queue_len;
        counts.workers_available = available;
    }
}
