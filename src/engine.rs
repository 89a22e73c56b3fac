//! The discrete-event engine: user clients, the network and the services of one [`Model`].
//!
//! # Model
//!
//! *Clients* start operations (open loop: a Poisson process of `count * rate` per second, each
//! arrival assigned to a uniformly drawn client; closed loop: one operation at a time per client,
//! with an exponential think time between). An operation picks an endpoint by weight, gets a
//! deadline, and sends its first attempt to the entry service at once. Each attempt waits
//! `min(attempt_timeout, time left)`. When an attempt fails (a status, a reset, or the timeout)
//! the client asks the retry decision ([`crate::retry::decision::plan_retry`]) with the 0-based index
//! of the failed attempt, exactly as the article's procedure takes it: with `max_attempts = 3`
//! an operation is sent at most four times. A write endpoint with a status endpoint first asks
//! it (a real request, using capacity) after a failure without a response: committed means
//! success, not found means the decision may repeat the request; still pending, or no answer,
//! means the decision may ask again later (within the same attempt budget and deadline), and if
//! it stops the outcome is unknown. All of this is the *client side* ([`client`]), and it is the
//! same code for a user and for a service calling the next one.
//!
//! The *network* delays every message by a latency draw; `request_loss` drops a request before
//! the service sees it, `response_loss` drops a response after the work is done, and only the
//! second can duplicate a write.
//!
//! A *service* ([`crate::engine::service`]) checks, in order: an outage (capacity zero) and what it
//! means, the rate limiter (429 with Retry-After), load-independent errors, the idempotency key
//! ([`crate::engine::idempotency`]), then its concurrency limit, if it has one, then admission: a free
//! worker serves at once, else the request waits in a queue of at most `queue_limit` (FIFO, or
//! the service's `queue_discipline`), else it is refused with `overload_status`. A refusal may
//! cost a worker's time (`rejection_cost`); a service may crash under overload and come back
//! cold ([`crate::engine::service::health`]).
//! A worker spends a `service_time` on the request (with `contention`, longer the more requests
//! are in service as it starts: [`crate::model::ContentionModel`]), then, if the service calls
//! others, makes each call in order as a client of its own (its `retry` policy, or the call's own
//! `call_retry`, the deadline propagated or fresh), held all the while, as a thread-per-request
//! server is; the calls are those of the operation's own `path` where it names the service, and
//! with `fan_out = "parallel"` they go out at once and the first that fails for good fails the
//! request. When every call
//! succeeded it answers success; when one failed for good it answers its `failure_status`. A
//! service that calls nothing holds the data: serving a request of a non-idempotent method there
//! commits a write, and a commit beyond the first for one logical operation at one service is a
//! duplicate write. Work whose caller has given up is finished anyway and counted as wasted,
//! unless `drop_expired` drops it when it reaches a worker or `cancellation` stops it when the
//! caller gives up.
//!
//! # Determinism
//!
//! Time is integer microseconds; events pop in (time, insertion) order. Randomness comes from
//! [`crate::base::random`] in two kinds. What belongs to no request is a ChaCha8 stream per
//! purpose: the open loop's arrivals and which client starts each, the endpoint each operation
//! calls (both consumed identically by every policy, so every policy sees the same operations),
//! a closed loop's first starts, a service's adaptive limit and the callers' controls. What
//! belongs to a request is addressed by it, from Philox4x64-10, a counter-based generator: the
//! counter is the request's [`Identity`] (its call, a user operation's number or the name of a
//! downstream call derived from the request that made it, and which attempt of the call it is,
//! a status check apart), what the draw is for ([`crate::base::random::Draw`]) and the block.
//! One block a request, computed as it is sent, gives the first word of its latency to the
//! service, its cache's hit or miss, its response's latency back and the jitter of the retry
//! decision after it ([`RequestWords`], kept beside the attempt in `Engine::drawn`); losses,
//! injected errors, Retry-After's jitter, an optimistic row's trips, think times and the rare
//! draw that needs a second word come from blocks of their own. A service's service times are
//! one addressed sequence per service, in the order its workers take requests: the work a
//! server does is then the same sequence under every policy compared (common random numbers),
//! where a service time per request decorrelated the policies' results (the variance of the
//! difference between two policies' success rates, over 20 seeds of the standard benchmark,
//! grew 270 times).
//!
//! So no draw depends on the order in which events are handled, and a draw for a new purpose
//! moves no other: a feature that is off draws nothing and changes no output. Nothing here
//! iterates a hash map, and nothing that reaches a result depends on which slab slot a record
//! occupies: a crash resets the requests it holds in the order they were sent (their identity
//! breaking ties).
//!
//! # Events
//!
//! A step of the model is an event only where something else could happen before it: an
//! operation starting or retrying, a request reaching its service, a worker finishing, a
//! response the caller must react to. Steps whose outcome is certain when the step before them
//! happens are handled then, at their own time ([`ahead`]): a refusal during an outage of the
//! capacity curve is handled as the request is sent; a user's answer is learned as it is sent
//! when nothing before its arrival can change what the user makes of it (no one hears attempts
//! in order, the users start operations on their own schedule, no control or hedge of theirs
//! watches, and for a failure, no endpoint asks a status endpoint); and a user's retry into
//! the same outage is sent as it is decided. Since every draw is addressed by its request,
//! none of this moves a draw or changes a result (a test runs scenarios both ways); on the
//! large benchmark the events per operation fell from 5.44 to 3.29. An attempt's timeout that
//! finds the attempt answered is a cancelled timer, never handled (the timers behind each one
//! taken from their lane are dropped with it while their attempts are answered, a run at a
//! time; the attempts whose callers still wait are kept in a table of their own, [`awaiting`],
//! so that dropping one reads no record), and an attempt whose answer is learned as it is sent
//! arms none. `--stats` counts the events, and the timers cancelled apart. The event queue
//! ([`crate::engine::event_queue`]) keeps the streams whose times never go back (arrivals,
//! timeouts, a constant latency's messages) in lanes of their own, and open-loop arrivals are
//! drawn ahead in batches ([`arrivals`]).
//!
//! # Ending
//!
//! Operations start until `duration`; operations in flight then run to their end (success, or
//! the decision stops them, which the deadline guarantees), and the run stops when the last one
//! ends. Requests still queued then, and downstream calls still out, are abandoned.
//!
//! Simulated time must advance for that. The one loop in the model is a closed-loop client's:
//! its next operation starts when the previous one ends, plus a think time. Loading refuses a
//! zero think time with operations that can certainly take no time
//! ([`crate::scenario::instant_ends`]); what is left (draws that are zero only most of the time)
//! is bounded here: a client that starts [`MAX_INSTANT_OPERATIONS`] operations in a row at one
//! instant stops the run with [`Stalled`], an error that names the loop, before its timers fill
//! the memory.

mod ahead;
mod arrivals;
mod awaiting;
mod balancer;
mod client;
pub mod counters;
pub mod downtime;
pub mod event_queue;
mod hedging;
pub mod idempotency;
mod manual;
pub mod outlier;
mod ring_hash;
mod server;
pub mod service;

use std::collections::{BTreeMap, VecDeque};

use crate::base::distribution::Distribution;
use crate::base::random::{Identity, Keyed, Purpose, Random, RequestWords, Stream};
use crate::base::slab::{Key, Slab};
use crate::base::time::Micros;
use crate::control::{ControlSet, WaitQueue};
use crate::engine::counters::{Measurements, Recorder, ServiceRecord};
use crate::engine::event_queue::{EventQueue, Lane};
use crate::engine::service::{Placement, Service};
use crate::model::{Arrivals, CallerPolicy, LinkId, Model, ServiceId};
use crate::retry::retry_after::RetryAfterMode;
use crate::scenario::fleet::{Balancer, KeyStore};
use crate::vocabulary::outcome::{AttemptOutcome, NextStep};
use arrivals::{OpenArrivals, Shape};
use awaiting::Awaiting;
use balancer::{Fleet, Tried};

/// How many events ahead of the one being handled the engine prefetches for: a record that
/// misses every cache takes as long to arrive as handling a few events does.
const PREFETCH_AHEAD: usize = 4;
/// Calls in flight (user operations and downstream calls) from which the engine prefetches:
/// with fewer, their records and their attempts' (about 140 bytes a call) fit in the cache
/// anyway, and asking for them only costs the asking. Calls rather than attempts: through an
/// outage that refuses at once, hundreds of thousands of operations wait out their backoff
/// with few attempts in flight, and a retry's send reads its operation's record.
const PREFETCH_FROM: usize = 4096;

/// The most operations one closed-loop client may start in a row at one instant, each ending
/// where it started and followed by a think time of zero. A think time of 1 µs mean is zero
/// after rounding 63% of the time, so with answers that take no time a run of 128 has a chance
/// of 0.63^128 = 3e-26: a legitimate run never reaches it.
pub const MAX_INSTANT_OPERATIONS: u16 = 128;

/// A simulation stopped because simulated time stopped advancing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stalled {
    /// The policy simulated (empty until the runner names it).
    pub policy: String,
    /// The closed-loop client that looped.
    pub client: u32,
    /// Operations it started in a row at that instant.
    pub operations: u16,
    /// The instant.
    pub at: Micros,
}

impl std::fmt::Display for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "policy {:?}: simulated time stopped advancing at {}: client {} started {} operations in a row at that instant, each ending as it started and followed by a think time of zero, a closed loop that would never end; give think_time a mean above zero and answers that take time (a network latency, a service time)",
            self.policy,
            crate::base::time::Duration(self.at),
            self.client,
            self.operations
        )
    }
}

impl std::error::Error for Stalled {}

/// How often, in events, the observer hears about progress.
const PROGRESS_EVERY: u64 = 1 << 16;

/// One attempt of a user operation as its client saw it, for `--trace`.
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
    /// What happened.
    pub outcome: AttemptOutcome,
    /// HTTP status received, if any.
    pub status: Option<u16>,
    /// Retry-After received, if any.
    pub retry_after: Option<Micros>,
    /// Delay before the next attempt, if the client retries.
    pub next_delay: Option<Micros>,
    /// What the client did next.
    pub next: NextStep,
}

/// Hears what the engine does, for traces and progress bars. `attempt` and `progress` default
/// to nothing.
pub trait Observer {
    /// Whether the observer hears attempts: then [`Observer::attempt`] hears every attempt of a
    /// user operation in the order they resolve. Without it the engine builds no records, and
    /// may learn a response before its time (see `Engine::reply`), which changes no result
    /// but the order in which attempts would be heard.
    fn hears_attempts(&self) -> bool {
        true
    }
    /// An attempt of a user operation was resolved.
    fn attempt(&mut self, _record: &AttemptRecord) {}
    /// The simulation reached time `now`; called every few tens of thousands of events.
    fn progress(&mut self, _now: Micros) {}
    /// Whether the simulation stops where it is, asked after each [`Observer::progress`]: a
    /// pilot out of its wall time ([`crate::run::forecast`]). The measurements of a stopped
    /// simulation cover the time it reached, and are only a pilot's.
    fn stop(&self) -> bool {
        false
    }
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct Quiet;

impl Observer for Quiet {
    fn hears_attempts(&self) -> bool {
        false
    }
}

/// Simulates `model` and returns what was measured, or that simulated time stopped advancing.
pub fn simulate(model: &Model, observer: &mut impl Observer) -> Result<Measurements, Stalled> {
    Engine::new(model, observer).run()
}

#[derive(Debug, Clone, Copy)]
enum Event {
    /// The next open-loop operation starts, at this client.
    Arrival(u32),
    /// A closed-loop client starts its next operation: the client, and how many operations it
    /// has started in a row at this instant before (see [`MAX_INSTANT_OPERATIONS`]).
    ClientReady(u32, u16),
    /// An operation sends its next attempt.
    Send(Key),
    /// An attempt a client-side rate limiter held back goes out.
    DelayedSend(Key),
    /// The deadline of a call whose attempt waits for a connection of its caller's pool.
    PoolGiveUp(Key),
    /// A hedged call's next hedge is due.
    Hedge(Key),
    /// A request reaches its service.
    Reach(Key),
    /// A worker finishes its own work on a request.
    WorkDone(Key),
    /// The write of a request reaches an optimistic row.
    WriteArrives(Key),
    /// A response reaches the caller.
    Response(Key),
    /// A caller stops waiting for an attempt.
    Timeout(Key),
    /// The number of available workers of a service changes.
    Capacity(ServiceId),
    /// A worker of a service finishes the work of rejections.
    RejectionWorkDone(ServiceId),
    /// A service's overload has lasted its `crash.hold`, if it still holds.
    CrashCheck(ServiceId),
    /// A crashed service comes back.
    Restart(ServiceId),
    /// A time bucket ends.
    Tick,
    /// A user's patience with an operation runs out, if they still wait for it.
    Patience(Key),
    /// A user starts again the intent whose first operation this is.
    Press(Key),
}

/// What a service answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reply {
    Pending,
    Ok,
    RateLimited {
        retry_after: Micros,
    },
    Overloaded {
        retry_after: Option<Micros>,
    },
    /// Refused by the concurrency limit, with its status.
    LimitReached(u16),
    Conflict,
    Error(u16),
    /// The service reset a request it had accepted.
    Reset,
    /// The service refused the connection: it was down after a crash.
    Refused,
    Committed,
    NotFound,
    StillPending,
}

impl Reply {
    /// Whether an outlier detector counts it as a failure: a 5xx, or a failure without a
    /// response (Envoy counts local-origin failures with 5xx by default); a 4xx such as a 429
    /// or a 409 is an answer like a success.
    /// `overload_status` is what the service answers an overload with.
    fn is_failure(self, overload_status: u16) -> bool {
        match self {
            Reply::Overloaded { .. } => overload_status >= 500,
            Reply::LimitReached(status) | Reply::Error(status) => status >= 500,
            Reply::Reset | Reply::Refused => true,
            Reply::Pending
            | Reply::Ok
            | Reply::RateLimited { .. }
            | Reply::Conflict
            | Reply::Committed
            | Reply::NotFound
            | Reply::StillPending => false,
        }
    }
}

/// Where a request is on the service's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Travelling,
    Queued,
    /// A worker holds it, since `Attempt::service_start`: doing its own work, or waiting on a
    /// downstream call.
    InService,
    /// At an event-driven service, its own work done: its downstream calls are out, and no
    /// worker holds it.
    Forwarding,
    Waiting,
    /// Read from an optimistic row; its write is on its way.
    Writing,
    Responding,
}

/// One request: an attempt of an operation, or a status check about it.
#[derive(Debug)]
struct Attempt {
    operation: Key,
    /// Which attempt of its call it is, from 0; a status check carries the index of the
    /// attempt it asks about. Its [`Identity`] is in `Engine::drawn`.
    index: u16,
    status_check: bool,
    /// A user client sent it (else a service calling the next one).
    from_user: bool,
    /// The service it is sent to.
    service: ServiceId,
    sent: Micros,
    gives_up: Micros,
    /// The service still has it (travelling, queued, in service or answering); whether its
    /// caller still waits is in `Engine::awaiting`.
    server_holds: bool,
    stage: Stage,
    /// When a worker took it, while it is [`Stage::InService`].
    service_start: Micros,
    reply: Reply,
}

/// A call and its attempts: a user operation, or a service's call to the next service made on
/// behalf of one (then [`DownstreamCall`] says whose).
#[derive(Debug)]
struct Operation {
    /// A user operation's number, from 0 in start order; a service's call to the next, its
    /// name, [`Identity::call_made_by`] of the request that made it. It names the call's draws.
    id: u64,
    client: u32,
    endpoint: u16,
    /// A service's call to the next one: its [`DownstreamCall`] is in `Engine::downstream`
    /// at this operation's slot.
    downstream: bool,
    start: Micros,
    deadline: Micros,
    attempt: u16,
    /// The delay chosen before the previous retry, in ms; NaN before the first.
    previous_delay_ms: f64,
    live_attempts: u16,
    /// A user operation: downstream calls made on its behalf that are still alive. Services
    /// keep key and write records under the user operation, so it lives until they end.
    live_calls: u32,
    finished: bool,
    /// A user operation: writes committed for it, at any service.
    writes: u16,
    /// Its requests queued or in service at its target.
    in_service: u16,
    /// The caller is asking the status endpoint rather than repeating the request.
    checking: bool,
    /// A closed-loop user operation: how many its client started in a row at this instant
    /// before it.
    instant_streak: u16,
}

/// What a call needs only when controls, hedging or pushback are on: kept beside its
/// operation, in `Engine::extras` at the operation's slot, so that operations stay within one
/// cache line and a run without these features neither stores nor reads it.
#[derive(Debug, Clone, Copy)]
struct CallExtras {
    /// What the last retry of the request followed, for the controls' refunds.
    last_retry: LastRetry,
    /// The attempt the backoff counts from: 0, or the one after the last gRPC pushback.
    backoff_from: u16,
    /// The call is hedged: its [`HedgeState`] is in `Engine::hedges` at the same slot.
    hedged: bool,
    /// The instances of a fleet it has tried, for `previous_hosts`.
    tried: Tried,
}

impl CallExtras {
    /// A call that has not been retried, hedged or pushed back.
    const NONE: CallExtras = CallExtras {
        last_retry: LastRetry::None,
        backoff_from: 0,
        hedged: false,
        tried: Tried::EMPTY,
    };
}

/// The hedges of a hedged call: the attempts in flight, and when the next one is due.
#[derive(Debug, Clone, Copy)]
struct HedgeState {
    /// Attempts in flight whose result the caller still waits for.
    live: [Key; MAX_HEDGES],
    /// How many of `live` are in use.
    count: u8,
    /// When the next hedge is due; an `Event::Hedge` at another time is stale. `Micros::MAX`:
    /// no more hedges.
    next_at: Micros,
}

/// gRPC caps hedging at five attempts.
const MAX_HEDGES: usize = 5;

impl HedgeState {
    const EMPTY: HedgeState = HedgeState {
        live: [DOWNSTREAM_KEY_PLACEHOLDER; MAX_HEDGES],
        count: 0,
        next_at: Micros::MAX,
    };

    fn remove(&mut self, key: Key) {
        let count = usize::from(self.count);
        if let Some(index) = self.live[..count].iter().position(|live| *live == key) {
            self.live.swap(index, count - 1);
            self.count -= 1;
        }
    }
}

/// A key no live record has.
const DOWNSTREAM_KEY_PLACEHOLDER: Key = Key {
    slot: u32::MAX,
    generation: 0,
};

/// What the last retry of a request followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LastRetry {
    /// The request has not been retried.
    None,
    /// A failure with a response, or a reset.
    Failure,
    /// A timeout.
    Timeout,
}

/// What a request draws after it is sent, kept beside it: who it is, and the first words of
/// its later draws (its [`RequestWords`] but the first, used as it is sent), if they were
/// computed as it was sent, and the link it travels. Forty bytes, its identity's fields side
/// by side.
#[derive(Debug, Clone, Copy, Default)]
struct Drawn {
    call: u64,
    part: u32,
    /// The [`crate::model::Link`] it travels, both ways.
    link: LinkId,
    /// `later` holds the request's words: they were computed as it was sent, since its latency
    /// draws (not a constant).
    ready: bool,
    /// The words of its cache, its response and its retry decision.
    later: [u64; 3],
}

impl Drawn {
    fn new(identity: Identity, link: LinkId, words: Option<RequestWords>) -> Drawn {
        let later = words.map_or([0; 3], |words| {
            [words.cache(), words.response(), words.retry()]
        });
        Drawn {
            call: identity.call,
            part: identity.part,
            link,
            ready: words.is_some(),
            later,
        }
    }

    /// Who the request is.
    #[inline]
    fn identity(&self) -> Identity {
        Identity {
            call: self.call,
            part: self.part,
        }
    }

    /// The words of its cache, its response and its retry decision: kept, or computed now.
    #[inline]
    fn later(&self, keyed: &Keyed) -> [u64; 3] {
        if self.ready {
            return self.later;
        }
        let words = keyed.request_words(self.identity());
        [words.cache(), words.response(), words.retry()]
    }

    /// The first word of its response's latency back, if it was computed as the request was
    /// sent: else the latency is a constant and draws nothing.
    #[inline]
    fn response(&self) -> Option<u64> {
        self.ready.then_some(self.later[1])
    }
}

/// Every instance of every service of `model`, a service's side by side (see
/// `Engine::services`).
fn instances(model: &Model) -> Vec<Service<'_>> {
    let mut instances = Vec::new();
    for (id, service) in model.services.iter().enumerate() {
        let store = instances.len() as ServiceId;
        let fleet = &service.fleet;
        for instance in 0..fleet.instances {
            let number = instances.len() as ServiceId;
            let curve = instance < fleet.capacity_instances;
            let key_store = match fleet.key_store {
                KeyStore::Shared => store,
                KeyStore::PerInstance => number,
            };
            instances.push(Service::new(
                service,
                number,
                Placement {
                    service: id as ServiceId,
                    writes: store,
                    keys: key_store,
                    curve,
                },
                model.seed,
                model.users.count,
                model.bucket,
            ));
        }
    }
    instances
}

/// Each instance's controls toward the services it calls: one [`ControlSet`] per instance of
/// its default policy, then, for a service whose calls have their own policies
/// (`call_retry`), one per instance of each of those, after it (see
/// `Engine::first_call_controls`): a pool toward the ledger is not the pool toward the card
/// network.
fn caller_controls(model: &Model) -> Vec<ControlSet> {
    let instances = model
        .services
        .iter()
        .flat_map(|service| (0..service.fleet.instances).map(move |_| service));
    let mut sets = Vec::new();
    for (instance, service) in instances.enumerate() {
        let controls = service
            .downstream
            .as_ref()
            .map_or(&[][..], |policy| &policy.controls[..]);
        let stream = Stream::owned(model.seed, Purpose::CallerControl, instance as u32);
        sets.push(ControlSet::new(controls, 1, 1, stream));
        for (index, policy) in service.call_policies.iter().enumerate() {
            let owner = (instance as u32) << 8 | (index as u32 + 1);
            let stream = Stream::owned(model.seed, Purpose::CallControl, owner);
            sets.push(ControlSet::new(&policy.controls, 1, 1, stream));
        }
    }
    sets
}

/// Where each instance's controls start in [`caller_controls`]'s list, if some service's
/// calls have policies of their own; else nothing.
fn first_call_controls(model: &Model) -> Vec<u32> {
    if model
        .services
        .iter()
        .all(|service| service.call_policies.is_empty())
    {
        return Vec::new();
    }
    let mut first = 0;
    let mut starts = Vec::new();
    for service in &model.services {
        for _ in 0..service.fleet.instances {
            starts.push(first);
            first += 1 + service.call_policies.len() as u32;
        }
    }
    starts
}

/// Each service's [`Fleet`]: its instances among `Engine::services`, and the balancing state
/// of its callers, one scope per user client process for the entry, one per calling instance
/// for the others (the entry has no calling service: a topology has no cycle).
fn fleets(model: &Model) -> Vec<Fleet> {
    let all: usize = model
        .services
        .iter()
        .map(|service| usize::from(service.fleet.instances))
        .sum();
    let mut first = 0;
    model
        .services
        .iter()
        .enumerate()
        .map(|(id, service)| {
            let fleet = &service.fleet;
            let scopes = if id == usize::from(model.entry) {
                model.users.processes as usize
            } else {
                all
            };
            let built = Fleet::new(first, fleet, scopes);
            first += fleet.instances;
            built
        })
        .collect()
}

/// When a caller with `policy` stops waiting for an attempt sent at `sent` of a call with
/// `deadline`: after its attempt timeout, or at the deadline if that comes first.
#[inline]
fn attempt_gives_up(policy: &CallerPolicy, deadline: Micros, sent: Micros) -> Micros {
    sent + policy.attempt_timeout.min(deadline.saturating_sub(sent))
}

/// The [`Identity`] of attempt `index` of call `call` (its [`Operation::id`]), or of the status
/// check about it: who the request's draws belong to.
#[inline]
fn request_identity(call: u64, index: u16, status_check: bool) -> Identity {
    Identity {
        call,
        part: u32::from(index) | u32::from(status_check) << 16,
    }
}

impl Operation {
    /// A call that starts at `start`, before its first attempt.
    fn new(
        id: u64,
        client: u32,
        endpoint: u16,
        downstream: bool,
        start: Micros,
        deadline: Micros,
    ) -> Operation {
        Operation {
            id,
            client,
            endpoint,
            downstream,
            start,
            deadline,
            attempt: 0,
            previous_delay_ms: f64::NAN,
            live_attempts: 0,
            live_calls: 0,
            finished: false,
            writes: 0,
            in_service: 0,
            checking: false,
            instant_streak: 0,
        }
    }

    /// It has ended and nothing of it is left in flight: no attempt, no downstream call.
    #[inline]
    fn is_done(&self) -> bool {
        self.finished && self.live_attempts == 0 && self.live_calls == 0
    }
}

/// Who made a downstream call, and for which user operation.
#[derive(Debug, Clone, Copy)]
struct DownstreamCall {
    /// The calling instance (among `Engine::services`).
    service: ServiceId,
    /// The calling service (among the model's).
    caller: ServiceId,
    /// The request its worker is serving.
    parent: Key,
    /// Which call of its route this is.
    number: u8,
    /// The route its request takes at the calling service (see [`crate::model::Route`]).
    route: u8,
    /// Its policy among the calling service's (see [`crate::model::RouteCall::policy`]).
    policy: u8,
    /// The service called.
    target: ServiceId,
    /// The link it travels.
    link: LinkId,
    /// The user operation it is made for: services store keys and writes under it.
    logical: Key,
}

/// The lanes of the event queue: streams of events whose times never decrease in the order
/// they are scheduled, so that the queue keeps them in first-in first-out order rather than
/// sorting them (see [`crate::engine::event_queue`]).
#[derive(Debug)]
struct Lanes {
    /// The next open-loop arrival.
    arrivals: Lane,
    /// Per link, the lane of its messages if its latency is a constant: their arrivals are
    /// then a stream in sending order (a random latency would make the lane a cost, not a
    /// saving). Links of one constant latency share a lane.
    network: Vec<Option<Lane>>,
    /// Attempt timeouts of the users: their timeout is one constant, cut short only by a
    /// deadline.
    user_timeouts: Lane,
    /// Each service's attempt timeouts toward the services it calls, if it calls any.
    service_timeouts: Vec<Option<Lane>>,
}

impl Lanes {
    fn new(events: &mut EventQueue<Event>, model: &Model) -> Lanes {
        let arrivals = events.add_lane();
        let mut constants: Vec<(Distribution, Lane)> = Vec::new();
        let network = model
            .links
            .iter()
            .map(|link| {
                if !link.constant_latency() {
                    return None;
                }
                let shared = constants
                    .iter()
                    .find(|(latency, _)| *latency == link.latency)
                    .map(|&(_, lane)| lane);
                Some(shared.unwrap_or_else(|| {
                    let lane = events.add_lane();
                    constants.push((link.latency.clone(), lane));
                    lane
                }))
            })
            .collect();
        Lanes {
            arrivals,
            network,
            user_timeouts: events.add_lane(),
            service_timeouts: model
                .services
                .iter()
                .map(|service| service.downstream.is_some().then(|| events.add_lane()))
                .collect(),
        }
    }

    /// Schedules the arrival at `time` of a message on `link`, in the link's lane if it has
    /// one.
    #[inline]
    fn push_message(
        &self,
        events: &mut EventQueue<Event>,
        link: LinkId,
        time: Micros,
        event: Event,
    ) {
        match self.network[usize::from(link)] {
            Some(lane) => events.push_in(lane, time, event),
            None => events.push(time, event),
        }
    }

    /// The lane of the timeouts of the caller of `call` (the users', or the calling service's).
    fn timeouts(&self, call: Option<DownstreamCall>) -> Lane {
        match call {
            None => self.user_timeouts,
            Some(call) => self.service_timeouts[usize::from(call.caller)]
                .expect("a service that calls others has a lane for its timeouts"),
        }
    }
}

struct Engine<'a, O: Observer> {
    model: &'a Model,
    observer: &'a mut O,
    now: Micros,
    events: EventQueue<Event>,
    lanes: Lanes,
    recorder: Recorder,
    /// The arrivals of an open loop.
    open_arrivals: Option<OpenArrivals<'a>>,
    /// A closed loop's start times.
    arrivals: Stream,
    operations_stream: Stream,
    /// Every draw of a request, addressed by it.
    keyed: Keyed,
    /// Per attempt slot, the [`Identity`] and the [`RequestWords`] of its request, for its
    /// draws after it is sent: apart from the attempts' records, which then fit a cache line,
    /// and read only where a request draws.
    drawn: Vec<Drawn>,
    /// Retries being sent ahead of their time, one inside another (see [`ahead`]).
    retries_ahead: u8,
    operations: Slab<Operation>,
    /// The [`DownstreamCall`] of each operation slot that holds a downstream call; empty
    /// without a topology.
    downstream: Vec<DownstreamCall>,
    attempts: Slab<Attempt>,
    /// The attempts whose callers still wait for them.
    awaiting: Awaiting,
    /// Every instance of every service: a service's instances side by side, in the model's
    /// order of services (one each outside a fleet, so that an instance's index is then its
    /// service's).
    services: Vec<Service<'a>>,
    /// Per service of the model, its instances and how callers pick one.
    fleets: Vec<Fleet>,
    /// Some service is a fleet of several instances: without one, a request goes to its
    /// service's only instance, picked by nothing.
    fleets_anywhere: bool,
    /// Some fleet's balancer hears how its callers' attempts end: it counts the requests
    /// outstanding per instance, or detects outliers.
    results_heard_anywhere: bool,
    /// A user's retry into an outage may be sent ahead of its time (`Engine::schedule_retry`):
    /// answers to failures are learned as they are sent, and the entry is one instance, which
    /// the retry will certainly reach.
    retries_ahead_on: bool,
    /// The user clients' overload controls.
    user_controls: ControlSet,
    /// Each instance's controls toward the services it calls (empty for most), indexed as
    /// `services`: an instance of a fleet is a process of its own, as each Envoy keeps its own
    /// circuit breakers and each Finagle client its own budget.
    caller_controls: Vec<ControlSet>,
    /// Where each instance's controls start in `caller_controls` when some service gives a
    /// call its own policy (its default policy's, then each of its calls' own); empty
    /// otherwise, when an instance's controls are at its index.
    first_call_controls: Vec<u32>,
    /// Some caller has a control: without one, the client side skips every control hook.
    controls_anywhere: bool,
    /// The attempts waiting for a connection, per caller (see `controls_owner`) and pool
    /// state, first come first served.
    pool_waiters: BTreeMap<(u32, WaitQueue), VecDeque<Key>>,
    /// Where each waiting attempt waits.
    pool_waiting: BTreeMap<Key, (u32, WaitQueue)>,
    /// Some caller has an HTTP/1.1 pool, where attempts wait.
    pool_waits_anywhere: bool,
    /// Per attempt slot of a request whose calls are out at once (a parallel route), how many
    /// have yet to succeed; empty without one.
    joins: Vec<u8>,
    /// The [`HedgeState`] of each operation slot that holds a hedged call; empty without
    /// hedging.
    hedges: Vec<HedgeState>,
    /// Some caller hedges: without one, the client side skips every hedging check.
    hedging_anywhere: bool,
    /// The [`CallExtras`] of each operation slot; empty unless `extras_on`.
    extras: Vec<CallExtras>,
    /// Some caller has controls, hedging or pushback, which keep [`CallExtras`].
    extras_on: bool,
    /// The observer hears attempts ([`Observer::hears_attempts`]).
    hears_attempts: bool,
    /// A user's success may be learned as it is sent (see `Engine::reply`): nothing but the
    /// attempt's timeout could come between, since no one hears attempts in order, the users
    /// start operations on their own schedule (an open loop), and no control or hedge of theirs
    /// watches the response arrive.
    learn_successes_early: bool,
    /// A user's failure may be learned as it is sent too: as for a success, and no endpoint of
    /// theirs asks a status endpoint after a failure, the one reaction that sends at once (any
    /// other schedules its retry for later, as an event).
    learn_failures_early: bool,
    next_operation_id: u64,
    /// User operations started and not ended.
    unfinished: u64,
    /// Simulated time stopped advancing: the run ends with this error.
    stalled: Option<Stalled>,
    /// Users retry by hand: each user operation's intent, at its slot ([`manual`]).
    intents: Vec<manual::IntentSlot>,
}

impl<'a, O: Observer> Engine<'a, O> {
    fn new(model: &'a Model, observer: &'a mut O) -> Self {
        let seed = model.seed;
        let mut events = EventQueue::default();
        let lanes = Lanes::new(&mut events, model);
        let hears_attempts = observer.hears_attempts();
        // A user who retries by hand hears the end of an operation as it comes, in order with
        // their patience running out.
        let learn_successes_early = !hears_attempts
            && model.users.manual_retry.is_none()
            && matches!(model.users.workload, Arrivals::Open { .. })
            && model.users.policy.controls.is_empty()
            && model.users.policy.hedging.is_none();
        let learn_failures_early = learn_successes_early
            && !model
                .users
                .endpoints
                .iter()
                .any(|endpoint| endpoint.status_endpoint && !endpoint.idempotent_method);
        Engine {
            model,
            observer,
            now: 0,
            events,
            lanes,
            recorder: Recorder::new(model.bucket, model.duration).by_operation(
                model
                    .users
                    .endpoints
                    .iter()
                    .map(|endpoint| endpoint.name.as_str()),
            ),
            open_arrivals: match model.users.workload {
                Arrivals::Open {
                    mean_gap_us,
                    ref load,
                    load_peak,
                    ref process,
                } => Some(OpenArrivals::new(
                    Stream::new(seed, Purpose::Arrivals),
                    Shape {
                        mean_gap_us,
                        load: load.as_ref(),
                        load_peak,
                        process,
                        phases: Stream::new(seed, Purpose::ArrivalPhases),
                    },
                    model.users.count,
                    model.duration,
                )),
                Arrivals::Closed { .. } => None,
            },
            arrivals: Stream::new(seed, Purpose::Arrivals),
            operations_stream: Stream::new(seed, Purpose::Operations),
            keyed: Keyed::new(seed),
            drawn: Vec::new(),
            retries_ahead: 0,
            operations: Slab::default(),
            downstream: Vec::new(),
            attempts: Slab::default(),
            awaiting: Awaiting::default(),
            services: instances(model),
            fleets: fleets(model),
            fleets_anywhere: model
                .services
                .iter()
                .any(|service| service.fleet.instances > 1),
            results_heard_anywhere: model.services.iter().any(|service| {
                let fleet = &service.fleet;
                fleet.instances > 1
                    && (fleet.balancer == Balancer::LeastRequest || fleet.outlier.is_some())
            }),
            retries_ahead_on: learn_failures_early && model.entry_service().fleet.instances == 1,
            user_controls: ControlSet::new(
                &model.users.policy.controls,
                model.users.count,
                model.users.processes,
                Stream::new(seed, Purpose::ClientControl),
            ),
            caller_controls: caller_controls(model),
            first_call_controls: first_call_controls(model),
            controls_anywhere: model.any_caller(|policy| !policy.controls.is_empty()),
            pool_waiters: BTreeMap::new(),
            pool_waiting: BTreeMap::new(),
            pool_waits_anywhere: model.any_caller(|policy| {
                policy
                    .controls
                    .iter()
                    .any(|control| control.config.lets_wait())
            }),
            joins: Vec::new(),
            hedges: Vec::new(),
            hedging_anywhere: model.any_caller(|policy| policy.hedging.is_some()),
            extras: Vec::new(),
            extras_on: model.any_caller(|policy| {
                !policy.controls.is_empty()
                    || policy.hedging.is_some()
                    || policy.retry_after == RetryAfterMode::Pushback
                    || policy.previous_hosts > 0
            }),
            hears_attempts,
            learn_successes_early,
            learn_failures_early,
            next_operation_id: 0,
            unfinished: 0,
            stalled: None,
            intents: Vec::new(),
        }
    }

    fn run(mut self) -> Result<Measurements, Stalled> {
        self.start();
        while let Some((time, event)) = self.next_event() {
            self.now = time;
            self.recorder.count_event();
            if self.operations.len() > PREFETCH_FROM {
                if let Some(&later) = self.events.peek_ahead(PREFETCH_AHEAD) {
                    self.prefetch(later);
                }
                if let Some(&next) = self.events.peek_ahead(0) {
                    self.prefetch_operation(next);
                }
            }
            self.handle(event);
            if let Some(stalled) = self.stalled.take() {
                return Err(stalled);
            }
            if self.now >= self.model.duration && self.unfinished == 0 {
                break;
            }
            if self.recorder.events().is_multiple_of(PROGRESS_EVERY) {
                self.observer.progress(self.now);
                if self.observer.stop() {
                    break;
                }
            }
        }
        self.commit_writes_in_service();
        self.record_service_state();
        let mut services: Vec<Vec<ServiceRecord>> =
            self.model.services.iter().map(|_| Vec::new()).collect();
        for instance in self.services {
            services[usize::from(instance.service)].push(instance.into_counts());
        }
        for (fleet, records) in self.fleets.iter_mut().zip(&mut services) {
            for (record, ejected) in records.iter_mut().zip(fleet.ejected_us(self.now)) {
                record.ejected_us = ejected;
            }
        }
        Ok(self.recorder.finish(
            services,
            &self.model.services,
            usize::from(self.model.entry),
        ))
    }

    /// The next event. Timers behind it in a lane whose attempts were answered in time are
    /// dropped with it, without being taken one by one: they are cancelled (and counted as
    /// such), except from the end of the run on, where the first event of all marks the time
    /// the run stops at, even a cancelled timer.
    #[inline]
    fn next_event(&mut self) -> Option<(Micros, Event)> {
        let (awaiting, duration) = (&self.awaiting, self.model.duration);
        let mut cancelled = 0;
        let next = self.events.pop_dropping(|time, event| {
            let dead = time < duration
                && matches!(event, Event::Timeout(attempt) if !awaiting.contains(*attempt));
            cancelled += u64::from(dead);
            dead
        });
        self.recorder.cancelled_timers(cancelled);
        next
    }

    fn start(&mut self) {
        if self.model.users.manual_retry.is_some() {
            // Counted from zero, even if no intent starts.
            self.recorder.intents();
        }
        for (id, service) in self.services.iter_mut().enumerate() {
            if let (_, Some(next)) = service.update_capacity(0) {
                self.events.push(next, Event::Capacity(id as ServiceId));
            }
        }
        self.events.push(self.model.bucket - 1, Event::Tick);
        match self.model.users.workload {
            Arrivals::Open { .. } => self.schedule_next_arrival(),
            Arrivals::Closed {
                think_mean_us,
                together,
            } => {
                for client in 0..self.model.users.count as u32 {
                    let start = if together {
                        0
                    } else {
                        self.arrivals.exponential(think_mean_us) as Micros
                    };
                    self.events.push(start, Event::ClientReady(client, 0));
                }
            }
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Arrival(client) => {
                self.start_operation(client, 0);
                self.schedule_next_arrival();
            }
            Event::ClientReady(client, streak) => {
                if self.now < self.model.duration {
                    self.start_operation(client, streak);
                }
            }
            Event::Send(operation) => {
                let checking = self
                    .operations
                    .get(operation)
                    .expect("a waiting operation is live")
                    .checking;
                if checking {
                    self.send(operation, true);
                } else {
                    self.send_request(operation, true);
                }
            }
            Event::DelayedSend(operation) => self.delayed_send(operation),
            Event::PoolGiveUp(operation) => self.pool_give_up(operation),
            Event::Hedge(operation) => self.hedge_due(operation),
            Event::Reach(attempt) => self.reach(attempt),
            Event::WorkDone(attempt) => self.work_done(attempt),
            Event::WriteArrives(attempt) => self.write_row(attempt),
            Event::Response(attempt) => self.response(attempt),
            Event::Timeout(attempt) => {
                if self.awaiting.contains(attempt) {
                    self.timeout(attempt);
                } else {
                    // Answered in time: the timer is cancelled, and not counted as an event.
                    // Still, it marks the time, for the end of the run.
                    self.recorder.cancelled_timer();
                }
            }
            Event::Capacity(service) => self.capacity_change(service),
            Event::RejectionWorkDone(service) => self.rejection_work_done(service),
            Event::CrashCheck(service) => self.crash_check(service),
            Event::Restart(service) => self.restart(service),
            Event::Patience(operation) => self.patience_over(operation),
            Event::Press(root) => self.press_again(root),
            Event::Tick => {
                // At the last microsecond of a bucket, so that the bucket records its own end.
                self.record_service_state();
                if self.now < self.model.duration || self.unfinished > 0 {
                    self.events.push(self.now + self.model.bucket, Event::Tick);
                }
            }
        }
    }

    /// Brings the record `event` will read into the cache. Events name records of requests and
    /// calls sent long ago, scattered over slabs of megabytes: reading one waits for memory
    /// about as long as handling an event takes, unless it was asked for an event earlier.
    #[inline]
    fn prefetch(&self, event: Event) {
        match event {
            Event::Reach(key)
            | Event::WorkDone(key)
            | Event::WriteArrives(key)
            | Event::Response(key)
            | Event::Timeout(key) => self.attempts.prefetch(key),
            Event::Send(key)
            | Event::DelayedSend(key)
            | Event::PoolGiveUp(key)
            | Event::Hedge(key)
            | Event::Patience(key)
            | Event::Press(key) => self.operations.prefetch(key),
            Event::Arrival(_)
            | Event::ClientReady(..)
            | Event::Capacity(_)
            | Event::RejectionWorkDone(_)
            | Event::CrashCheck(_)
            | Event::Restart(_)
            | Event::Tick => {}
        }
    }

    /// Brings the operation record of a request's event into the cache: the request's own
    /// record was asked for a few events ago and is there by now, and names it.
    #[inline]
    fn prefetch_operation(&self, event: Event) {
        if let Event::Reach(key) | Event::WorkDone(key) | Event::Response(key) = event
            && let Some(attempt) = self.attempts.get(key)
        {
            self.operations.prefetch(attempt.operation);
        }
    }

    fn record_service_state(&mut self) {
        let now = self.now;
        for service in &mut self.services {
            service.record_state(now);
        }
    }

    /// Keeps what the request at `key`, just sent, draws.
    #[inline]
    fn keep_drawn(&mut self, key: Key, drawn: Drawn) {
        let slot = key.slot as usize;
        if slot >= self.drawn.len() {
            self.drawn.resize(slot + 1, Drawn::default());
        }
        self.drawn[slot] = drawn;
    }

    /// What the live request at `key` draws.
    #[inline]
    fn drawn(&self, key: Key) -> Drawn {
        self.drawn[key.slot as usize]
    }

    /// The extras of the call at `key` (nothing stored when no feature needs them).
    #[inline]
    fn extras(&self, key: Key) -> CallExtras {
        if self.extras_on {
            self.extras[key.slot as usize]
        } else {
            CallExtras::NONE
        }
    }

    /// The extras of the call at `key`, to change (only when `extras_on`).
    fn extras_mut(&mut self, key: Key) -> &mut CallExtras {
        let slot = key.slot as usize;
        if slot >= self.extras.len() {
            self.extras.resize(slot + 1, CallExtras::NONE);
        }
        &mut self.extras[slot]
    }

    /// A call was just created at `key`: it starts with no extras.
    #[inline]
    fn call_created(&mut self, key: Key) {
        if self.extras_on {
            *self.extras_mut(key) = CallExtras::NONE;
        }
    }

    /// The downstream call `operation` (at `key`) is, if it is one.
    #[inline]
    fn downstream_call(&self, key: Key, operation: &Operation) -> Option<DownstreamCall> {
        operation
            .downstream
            .then(|| self.downstream[key.slot as usize])
    }

    /// The user operation that `operation` (at `key`) belongs to: itself, or the one its
    /// downstream call is made for; a press by hand that reuses its key belongs to its intent's
    /// first operation ([`manual`]).
    #[inline]
    fn logical(&self, key: Key, operation: &Operation) -> Key {
        match self.downstream_call(key, operation) {
            Some(call) => call.logical,
            None => self.key_holder(key),
        }
    }
}

#[cfg(test)]
mod tests {
    /// Operations and attempts are the memory of a simulation: one slot per request in flight,
    /// a million and more on the benchmark. A cache line each keeps them cheap to reach.
    #[test]
    fn in_flight_records_fit_a_cache_line() {
        assert!(std::mem::size_of::<Option<super::Operation>>() <= 64);
        assert!(std::mem::size_of::<Option<super::Attempt>>() <= 64);
    }
}
