//! Client-side overload controls: what real clients put between the retry decision and the
//! network so that retries cannot multiply an overload.
//!
//! The article's decision says whether a retry is *allowed* by the operation (repeatable,
//! transient, attempts and deadline left). Production clients add a second gate that looks at
//! the client's recent history instead of the single operation: a retry budget (Finagle,
//! Linkerd, Envoy), gRPC's retry throttling, the AWS SDKs' retry quota, Google's client-side
//! adaptive throttling, a circuit breaker, and Brooker's retry-only breaker and retry token
//! bucket. Each is a small module behind [`Control`], asked at
//! fixed points of a call's life:
//!
//! | hook | when | who uses it |
//! |---|---|---|
//! | [`Control::call_started`] | a call starts | Finagle's budget deposits, Brooker's bucket and breaker count |
//! | [`Control::admit_send`] | an attempt (first or retry) is about to go out | breaker, adaptive throttling |
//! | [`Control::attempt_ended`] | the caller learned an attempt's result | all that count outcomes |
//! | [`Control::admit_retry`] | the decision said retry, before the backoff | budgets, throttling, quota |
//! | [`Control::call_ended`] | the call ended | gRPC's and AWS's refunds |
//!
//! Controls are asked in the order the policy lists them; the first that refuses decides, and
//! the call ends with that control's [`ControlKind`] as its failure reason (a veto is never
//! silently turned into a retry later). Controls that had already admitted are told the send or
//! retry will not happen ([`Control::send_cancelled`], [`Control::retry_cancelled`]) so that
//! concurrency counts and half-open permits are given back. Status checks are not gated: they
//! ask another endpoint what happened, and no control in the sources counts them.
//!
//! Every control keeps its state from the timestamps it is given (windows advance lazily), so
//! none adds events to the queue, and a policy without controls draws no random number and
//! does no work here. State is kept per client, per client process (`clients.processes`, the
//! clients spread over them round-robin), or once for all clients ([`Scope`]); a service calling
//! the next one is a process (each instance of a fleet its own), so at a tier every scope is one
//! state per calling instance.

pub mod aws_adaptive;
pub mod aws_retry_quota;
pub mod circuit_breaker;
pub mod connection_pool;
pub mod grpc_throttling;
pub mod retry_breaker;
pub mod retry_budget;
pub mod sre_throttling;
pub mod token_bucket;
mod window;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::base::random::Stream;
use crate::base::time::Micros;
use crate::retry::decision::StopReason;
use crate::vocabulary::outcome::{AttemptOutcome, FailureReason};

pub use crate::vocabulary::outcome::ControlKind;
pub use window::SlidingWindow;

/// Whose history a control's state holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Each client has its own.
    Client,
    /// The clients of one process share one (`clients.processes`), as a Finagle client, a
    /// gRPC channel or an AWS SDK client is shared by the threads of one process.
    #[default]
    Process,
    /// One for all clients.
    Global,
    /// At a tier, one per instance of the calling service, whatever the scenario wrote: each
    /// instance is a process. Not written in a scenario; the model sets it for a tier's
    /// controls.
    #[serde(skip)]
    CallingInstance,
}

impl Scope {
    /// The name a scenario writes.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Client => "client",
            Scope::Process => "process",
            Scope::Global => "global",
            Scope::CallingInstance => "calling instance",
        }
    }
}

/// What a control learns when an attempt ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptEnd {
    /// The attempt was a retry (it was admitted by [`Control::admit_retry`]).
    pub retry: bool,
    /// What happened to it.
    pub outcome: AttemptOutcome,
    /// The status of the answer, if one came.
    pub status: Option<u16>,
    /// A retry could outlive the failure: a transport error or a retryable status (the
    /// decision's check 2). Successes are not transient.
    pub transient: bool,
    /// From send to result.
    pub latency: Micros,
}

impl AttemptEnd {
    /// The server took the request and answered it: success, or an error it produced after
    /// accepting the work. Rejections (429, the overload status, a concurrency limit), resets
    /// and timeouts are not accepted.
    pub fn accepted(&self) -> bool {
        matches!(
            self.outcome,
            AttemptOutcome::Ok | AttemptOutcome::Error | AttemptOutcome::Conflict
        )
    }

    /// The attempt succeeded.
    pub fn succeeded(&self) -> bool {
        self.outcome == AttemptOutcome::Ok
    }
}

/// What a control learns when a call ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallEnd {
    /// The call succeeded.
    pub success: bool,
    /// The failure that led to the last retry was a timeout (`Some(true)`), another failure
    /// (`Some(false)`), or the call was never retried (`None`).
    pub last_retry_after_timeout: Option<bool>,
}

/// One control's state, for one scope. Every hook has a default that does nothing.
pub trait Control {
    /// A call starts.
    fn call_started(&mut self, _now: Micros) {}
    /// May an attempt go out now? `random` is the caller's control stream; a control that
    /// draws from it must draw only when it could refuse, so that an idle control draws nothing.
    fn admit_send(&mut self, _now: Micros, _retry: bool, _random: &mut Stream) -> bool {
        true
    }
    /// An attempt this control admitted will not go out: a later control refused it.
    fn send_cancelled(&mut self, _now: Micros) {}
    /// It refused to send now: may the attempt wait for it instead (a place in the queue of
    /// an HTTP/1.1 connection pool, then taken)?
    fn waits(&mut self, _now: Micros) -> bool {
        false
    }
    /// May the first attempt waiting for it go out now?
    fn has_room(&self) -> bool {
        true
    }
    /// An attempt waiting for it leaves the queue: it goes out, or its caller gave up.
    fn wait_ended(&mut self) {}
    /// Every control admitted the attempt: how long must it wait before it goes out? `None`
    /// if not within `time_left` (then nothing is reserved); a control that answers more than
    /// zero has reserved its slot (the AWS adaptive rate limiter).
    fn send_delay(&mut self, _now: Micros, _time_left: Micros) -> Option<Micros> {
        Some(0)
    }
    /// The attempt goes out.
    fn sent(&mut self, _now: Micros) {}
    /// The caller learned the result of an attempt.
    fn attempt_ended(&mut self, _now: Micros, _end: &AttemptEnd) {}
    /// The decision said retry after a failure (a timeout if `timed_out`): may it?
    fn admit_retry(&mut self, _now: Micros, _timed_out: bool) -> bool {
        true
    }
    /// A retry this control admitted will not be sent: a control refused it.
    fn retry_cancelled(&mut self, _now: Micros) {}
    /// The call ended.
    fn call_ended(&mut self, _now: Micros, _end: &CallEnd) {}
}

/// A control's settings, resolved: every default filled in, durations in microseconds.
#[derive(Debug, Clone, PartialEq)]
pub enum ControlConfig {
    /// A retry budget over a window of requests (Finagle, Linkerd).
    WindowedBudget(retry_budget::WindowedBudgetConfig),
    /// A retry budget over concurrent requests (Envoy).
    ConcurrencyBudget(retry_budget::ConcurrencyBudgetConfig),
    /// gRPC retry throttling.
    GrpcThrottling(grpc_throttling::GrpcThrottlingConfig),
    /// The AWS retry quota.
    AwsRetryQuota(aws_retry_quota::AwsRetryQuotaConfig),
    /// Adaptive throttling.
    SreThrottling(sre_throttling::SreThrottlingConfig),
    /// A circuit breaker.
    CircuitBreaker(circuit_breaker::CircuitBreakerConfig),
    /// The AWS adaptive rate limiter (it has no settings).
    AwsAdaptive,
    /// Envoy's limit on requests in flight.
    ConnectionPool(connection_pool::ConnectionPoolConfig),
    /// A circuit breaker of retries only (Brooker's).
    RetryBreaker(retry_breaker::RetryBreakerConfig),
    /// Brooker's retry token bucket.
    TokenBucket(token_bucket::TokenBucketConfig),
}

impl ControlConfig {
    /// Which kind of control this is.
    pub fn kind(&self) -> ControlKind {
        match self {
            ControlConfig::WindowedBudget(_) | ControlConfig::ConcurrencyBudget(_) => {
                ControlKind::RetryBudget
            }
            ControlConfig::GrpcThrottling(_) => ControlKind::GrpcThrottling,
            ControlConfig::AwsRetryQuota(_) => ControlKind::AwsRetryQuota,
            ControlConfig::SreThrottling(_) => ControlKind::SreThrottling,
            ControlConfig::CircuitBreaker(_) => ControlKind::CircuitBreaker,
            ControlConfig::AwsAdaptive => ControlKind::AwsAdaptive,
            ControlConfig::ConnectionPool(_) => ControlKind::ConnectionPool,
            ControlConfig::RetryBreaker(_) => ControlKind::RetryBreaker,
            ControlConfig::TokenBucket(_) => ControlKind::TokenBucket,
        }
    }

    /// Whether an attempt it refuses may wait for it: an HTTP/1.1 connection pool.
    pub fn lets_wait(&self) -> bool {
        matches!(self, ControlConfig::ConnectionPool(pool) if pool.max_pending.is_some())
    }

    /// A fresh state.
    fn build(&self) -> Box<dyn Control> {
        match self {
            ControlConfig::WindowedBudget(config) => {
                Box::new(retry_budget::WindowedBudget::new(config))
            }
            ControlConfig::ConcurrencyBudget(config) => {
                Box::new(retry_budget::ConcurrencyBudget::new(config))
            }
            ControlConfig::GrpcThrottling(config) => {
                Box::new(grpc_throttling::GrpcThrottling::new(config))
            }
            ControlConfig::AwsRetryQuota(config) => {
                Box::new(aws_retry_quota::AwsRetryQuota::new(config))
            }
            ControlConfig::SreThrottling(config) => {
                Box::new(sre_throttling::SreThrottling::new(config))
            }
            ControlConfig::CircuitBreaker(config) => {
                Box::new(circuit_breaker::CircuitBreaker::new(config))
            }
            ControlConfig::AwsAdaptive => Box::new(aws_adaptive::AwsAdaptive::new()),
            ControlConfig::ConnectionPool(config) => {
                Box::new(connection_pool::ConnectionPool::new(config))
            }
            ControlConfig::RetryBreaker(config) => {
                Box::new(retry_breaker::RetryBreaker::new(config))
            }
            ControlConfig::TokenBucket(config) => Box::new(token_bucket::TokenBucket::new(config)),
        }
    }
}

/// What the windows of one control state may hold, for the cost estimate ([`crate::run::cost`]).
/// A window keeps only what it was given ([`SlidingWindow`], the breaker's ring of calls), so
/// it grows with the attempts its state sees, up to the whole window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowMemory {
    /// Bytes when every slice or call of the window is held.
    pub most: u64,
    /// Bytes at most each attempt adds: an attempt asked for, sent or not, updates a window at
    /// most twice (adaptive throttling counts the request and its accept; a budget, a call's
    /// deposit and a retry's withdrawal, or its refund when a later control refuses).
    pub per_attempt: u64,
}

impl ControlConfig {
    /// What one state's windows may hold.
    pub fn window_memory(&self) -> WindowMemory {
        let slices = |slices: usize, entry: usize| WindowMemory {
            most: (slices * entry) as u64,
            per_attempt: 2 * entry as u64,
        };
        match self {
            ControlConfig::WindowedBudget(_) => {
                slices(retry_budget::SLICES, SlidingWindow::<1>::ENTRY_BYTES)
            }
            ControlConfig::SreThrottling(_) => {
                slices(sre_throttling::SLICES, SlidingWindow::<2>::ENTRY_BYTES)
            }
            ControlConfig::RetryBreaker(config) if config.window.is_some() => {
                slices(retry_breaker::SLICES, SlidingWindow::<2>::ENTRY_BYTES)
            }
            // One window at a time: the closed one, or the half-open ring of one byte a call;
            // one entry or byte per attempt that ends.
            ControlConfig::CircuitBreaker(config) => {
                let trials = u64::from(config.half_open_calls);
                match config.window {
                    circuit_breaker::BreakerWindow::Calls(calls) => WindowMemory {
                        most: u64::from(calls).max(trials),
                        per_attempt: 1,
                    },
                    circuit_breaker::BreakerWindow::Seconds(seconds) => {
                        let entry = SlidingWindow::<3>::ENTRY_BYTES as u64;
                        WindowMemory {
                            most: (u64::from(seconds) * entry).max(trials),
                            per_attempt: entry,
                        }
                    }
                }
            }
            ControlConfig::ConcurrencyBudget(_)
            | ControlConfig::GrpcThrottling(_)
            | ControlConfig::AwsRetryQuota(_)
            | ControlConfig::AwsAdaptive
            | ControlConfig::ConnectionPool(_)
            | ControlConfig::RetryBreaker(_)
            | ControlConfig::TokenBucket(_) => WindowMemory {
                most: 0,
                per_attempt: 0,
            },
        }
    }
}

/// One control of a policy: its settings and whose history it keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlModel {
    /// The settings.
    pub config: ControlConfig,
    /// Per client, per process, or global.
    pub scope: Scope,
}

impl fmt::Display for ControlModel {
    /// One line for a reader: the control, its settings, its scope.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = |micros: Micros| micros as f64 / 1e6;
        let milli = |thousandths: i64| thousandths as f64 / 1000.0;
        match &self.config {
            ControlConfig::WindowedBudget(c) => write!(
                f,
                "retry budget {}% of calls + {}/s over {}s",
                c.percent,
                c.min_per_s,
                seconds(c.ttl)
            ),
            ControlConfig::ConcurrencyBudget(c) => write!(
                f,
                "retry budget {}% of requests in flight, at least {}",
                c.percent, c.min_concurrency
            ),
            ControlConfig::GrpcThrottling(c) => write!(
                f,
                "gRPC throttling {} tokens, {} back per success",
                c.max_tokens,
                f64::from(c.token_ratio_milli) / 1000.0
            ),
            ControlConfig::AwsRetryQuota(c) => write!(
                f,
                "AWS retry quota {} tokens, {} per retry, {} after a timeout",
                c.capacity, c.retry_cost, c.timeout_cost
            ),
            ControlConfig::AwsAdaptive => f.write_str("AWS adaptive rate limiter"),
            ControlConfig::ConnectionPool(c) => match c.max_pending {
                None => write!(
                    f,
                    "connection pool of {} requests in flight",
                    c.max_requests
                ),
                Some(pending) => write!(
                    f,
                    "HTTP/1.1 connection pool of {} requests in flight, {pending} more waiting",
                    c.in_flight()
                ),
            },
            ControlConfig::SreThrottling(c) => write!(
                f,
                "adaptive throttling K = {} over {}s",
                c.k,
                seconds(c.window)
            ),
            ControlConfig::CircuitBreaker(c) => {
                let window = match c.window {
                    circuit_breaker::BreakerWindow::Calls(calls) => format!("{calls} calls"),
                    circuit_breaker::BreakerWindow::Seconds(s) => format!("{s}s"),
                };
                write!(
                    f,
                    "circuit breaker at {}% failures of the last {window}, open {}s, {} trial calls",
                    c.failure_rate,
                    seconds(c.wait_open),
                    c.half_open_calls
                )
            }
            ControlConfig::RetryBreaker(c) => {
                write!(
                    f,
                    "retry breaker: no retry above {} failed attempts per call",
                    milli(c.max_failures_per_call_milli as i64)
                )?;
                match c.window {
                    None => f.write_str(" since the start"),
                    Some(window) => write!(f, " over {}s", seconds(window)),
                }
            }
            ControlConfig::TokenBucket(c) => write!(
                f,
                "retry token bucket of {}, {} per call, {} per retry, a retry needs more than {}",
                milli(c.capacity_milli),
                milli(c.credit_milli),
                milli(c.cost_milli),
                milli(c.threshold_milli)
            ),
        }?;
        write!(f, " (per {})", self.scope.name())
    }
}

/// What a caller's controls made of an attempt about to go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// It goes out after this delay; at once if 0, when the controls have heard it sent.
    After(Micros),
    /// It waits in this queue until a place frees ([`ControlSet::has_room`]), or its caller
    /// gives up.
    Waits(WaitQueue),
    /// It is not sent, for this reason.
    Refused(FailureReason),
}

/// A queue of attempts waiting for one control's state: an HTTP/1.1 pool's pending requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct WaitQueue {
    /// The control, in the caller's order.
    pub control: usize,
    /// Its state (the scope slot).
    pub slot: usize,
}

/// One control and its states, one per scope slot, built when first used.
struct Scoped {
    model: ControlModel,
    states: Vec<Option<Box<dyn Control>>>,
}

/// The controls of one caller (the user clients, or one calling service), in the policy's
/// order, with their states.
pub struct ControlSet {
    controls: Vec<Scoped>,
    /// Processes the clients are spread over (1 for a service).
    processes: u64,
    random: Stream,
}

impl ControlSet {
    /// The controls of `models` for `clients` clients spread over `processes` processes (a
    /// service calling others passes 1 and 1); `random` is the caller's control stream.
    pub fn new(models: &[ControlModel], clients: u64, processes: u64, random: Stream) -> Self {
        let controls = models
            .iter()
            .map(|model| {
                let slots = match model.scope {
                    Scope::Client => clients,
                    Scope::Process => processes,
                    Scope::Global | Scope::CallingInstance => 1,
                };
                Scoped {
                    model: model.clone(),
                    states: (0..slots.max(1)).map(|_| None).collect(),
                }
            })
            .collect();
        ControlSet {
            controls,
            processes: processes.max(1),
            random,
        }
    }

    /// Whether the caller has no control (then nothing here needs to be called).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.controls.is_empty()
    }

    /// The state of control `index` for `client`.
    fn state(&mut self, index: usize, client: u32) -> &mut dyn Control {
        state_of(&mut self.controls[index], self.processes, client)
    }

    /// Calls `hook` on every control's state for `client`.
    fn each(&mut self, client: u32, mut hook: impl FnMut(&mut dyn Control)) {
        for index in 0..self.controls.len() {
            hook(self.state(index, client));
        }
    }

    /// A call of `client` starts.
    pub fn call_started(&mut self, now: Micros, client: u32) {
        self.each(client, |control| control.call_started(now));
    }

    /// May `client` send an attempt now, and after what delay? On a refusal, says why: the
    /// control that refused, or `deadline-exhausted` when a rate limiter has no token before
    /// the deadline (`time_left`). A control that refuses may let the attempt wait for it
    /// instead ([`Admission::Waits`]), if every other control admits it. Controls that had
    /// admitted a refused attempt (and, for a retry, admitted the retry) are told. Without a
    /// delay the attempt goes out at once and the controls hear [`Control::sent`]; with one,
    /// or after a wait, the caller calls [`ControlSet::sent`] when it goes out.
    pub fn admit_send(
        &mut self,
        now: Micros,
        client: u32,
        retry: bool,
        time_left: Micros,
    ) -> Admission {
        let mut refusal = None;
        let mut waiting = None;
        let mut admitted = 0;
        for index in 0..self.controls.len() {
            let state = state_of(&mut self.controls[index], self.processes, client);
            if !state.admit_send(now, retry, &mut self.random) {
                if waiting.is_none() && state.waits(now) {
                    waiting = Some(index);
                } else {
                    refusal = Some(FailureReason::Control(
                        self.controls[index].model.config.kind(),
                    ));
                    break;
                }
            }
            admitted += 1;
        }
        let mut delay = Some(0);
        // A send that waits for a connection does not wait for a rate limiter's token too.
        if refusal.is_none() && waiting.is_none() {
            self.each(client, |control| {
                delay = match (delay, control.send_delay(now, time_left)) {
                    (Some(longest), Some(this)) => Some(longest.max(this)),
                    _ => None,
                }
            });
            if delay.is_none() {
                refusal = Some(FailureReason::Decision(StopReason::DeadlineExhausted));
            }
        }
        if let Some(reason) = refusal {
            for earlier in 0..admitted {
                if Some(earlier) == waiting {
                    self.state(earlier, client).wait_ended();
                } else {
                    self.state(earlier, client).send_cancelled(now);
                }
            }
            if retry {
                self.each(client, |control| control.retry_cancelled(now));
            }
            return Admission::Refused(reason);
        }
        if let Some(control) = waiting {
            return Admission::Waits(self.queue(control, client));
        }
        let delay = delay.unwrap_or(0);
        if delay == 0 {
            self.sent(now, client);
        }
        Admission::After(delay)
    }

    /// The queue of control `control`'s state for `client`.
    fn queue(&self, control: usize, client: u32) -> WaitQueue {
        WaitQueue {
            control,
            slot: slot_of(&self.controls[control], self.processes, client),
        }
    }

    /// The queues an attempt of `client` that ends may free a place in: those of its
    /// controls' states that let attempts wait.
    pub fn wait_queues(&self, client: u32) -> impl Iterator<Item = WaitQueue> + '_ {
        (0..self.controls.len())
            .filter(|&control| self.controls[control].model.config.lets_wait())
            .map(move |control| self.queue(control, client))
    }

    /// May the first attempt waiting in `queue` go out now?
    pub fn has_room(&self, queue: WaitQueue) -> bool {
        self.controls[queue.control].states[queue.slot]
            .as_ref()
            .is_none_or(|state| state.has_room())
    }

    /// An attempt of `client` that waited gives up before it went out: the controls that had
    /// admitted it (every one but those it waited for) and, for a retry, admitted the retry,
    /// are told, as for a refusal.
    pub fn send_abandoned(&mut self, now: Micros, client: u32, retry: bool) {
        for index in 0..self.controls.len() {
            if !self.controls[index].model.config.lets_wait() {
                self.state(index, client).send_cancelled(now);
            }
        }
        if retry {
            self.each(client, |control| control.retry_cancelled(now));
        }
    }

    /// An attempt waiting in `queue` leaves it (then goes out, or its caller gave up).
    pub fn wait_ended(&mut self, queue: WaitQueue) {
        if let Some(state) = self.controls[queue.control].states[queue.slot].as_mut() {
            state.wait_ended();
        }
    }

    /// An attempt of `client` goes out.
    pub fn sent(&mut self, now: Micros, client: u32) {
        self.each(client, |control| control.sent(now));
    }

    /// `client` learned the result of an attempt.
    pub fn attempt_ended(&mut self, now: Micros, client: u32, end: &AttemptEnd) {
        self.each(client, |control| control.attempt_ended(now, end));
    }

    /// The decision said `client` may retry: may it? On a refusal, says which control refused,
    /// and the controls that had admitted it are told.
    pub fn admit_retry(
        &mut self,
        now: Micros,
        client: u32,
        timed_out: bool,
    ) -> Result<(), ControlKind> {
        for index in 0..self.controls.len() {
            if !self.state(index, client).admit_retry(now, timed_out) {
                for earlier in 0..index {
                    self.state(earlier, client).retry_cancelled(now);
                }
                return Err(self.controls[index].model.config.kind());
            }
        }
        Ok(())
    }

    /// A call of `client` ended.
    pub fn call_ended(&mut self, now: Micros, client: u32, end: &CallEnd) {
        self.each(client, |control| control.call_ended(now, end));
    }
}

/// Which state of `scoped` is `client`'s.
fn slot_of(scoped: &Scoped, processes: u64, client: u32) -> usize {
    match scoped.model.scope {
        Scope::Client => client as usize % scoped.states.len(),
        Scope::Process => (u64::from(client) % processes) as usize % scoped.states.len(),
        // A calling instance's set is its own (`Engine::caller_controls`).
        Scope::Global | Scope::CallingInstance => 0,
    }
}

/// The state of `scoped` for `client`, built on first use.
fn state_of(scoped: &mut Scoped, processes: u64, client: u32) -> &mut dyn Control {
    let slot = slot_of(scoped, processes, client);
    let config = &scoped.model.config;
    scoped.states[slot]
        .get_or_insert_with(|| config.build())
        .as_mut()
}

impl fmt::Debug for ControlSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.controls.iter().map(|scoped| &scoped.model))
            .finish()
    }
}
