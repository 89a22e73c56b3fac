//! The client side: starting an operation, sending attempts, learning their results, and the
//! retry decision. The same code serves a user client and a service calling the next service;
//! what differs is the policy ([`policy_of`]) and who hears the end of the call
//! ([`Engine::finish`]).

use super::ahead::Leg;
use super::balancer::Tried;
use super::{
    Attempt, AttemptRecord, DownstreamCall, Drawn, Engine, Event, LastRetry,
    MAX_INSTANT_OPERATIONS, Observer, Operation, Reply, Stage, Stalled, attempt_gives_up,
    request_identity,
};
use crate::base::random::{Draw, Identity, Random, RequestWords};
use crate::base::slab::Key;
use crate::base::time::{MICROS_PER_MS, Micros};
use std::collections::VecDeque;

use crate::control::{Admission, AttemptEnd, CallEnd, ControlSet, WaitQueue};
use crate::model::{Arrivals, CallerPolicy, Deadline, Model, ServiceId, USERS_LINK};
use crate::retry::decision::{Decision, RetryInput, StopReason, plan_retry};
use crate::retry::retry_after::RetryAfterMode;
use crate::scenario::TransportError;
use crate::vocabulary::outcome::{AttemptOutcome, FailureReason, NextStep};

/// The failure without a response an attempt ended with, if it did.
fn transport_error(timed_out: bool, reply: Reply) -> Option<TransportError> {
    match (timed_out, reply) {
        (true, _) => Some(TransportError::Timeout),
        (false, Reply::Reset) => Some(TransportError::Reset),
        (false, Reply::Refused) => Some(TransportError::Refused),
        (false, _) => None,
    }
}

/// A practically endless deadline, far from overflow.
const NO_DEADLINE: Micros = Micros::MAX / 2;

impl<O: Observer> Engine<'_, O> {
    /// Schedules the next open-loop arrival, if one comes before the end.
    pub(super) fn schedule_next_arrival(&mut self) {
        let arrivals = self
            .open_arrivals
            .as_mut()
            .expect("only an open workload has arrivals");
        if let Some((time, client)) = arrivals.next() {
            let lane = self.lanes.arrivals;
            self.events.push_in(lane, time, Event::Arrival(client));
        }
    }

    /// A user client starts an operation, the `streak`-th it starts in a row at this instant
    /// (closed loop; 0 for an open loop's).
    pub(super) fn start_operation(&mut self, client: u32, streak: u16) {
        let endpoints = &self.model.users.endpoints;
        let total = endpoints
            .last()
            .expect("validated: one endpoint at least")
            .cumulative_weight;
        let draw = self.operations_stream.unit() * total;
        let endpoint = endpoints
            .partition_point(|endpoint| endpoint.cumulative_weight <= draw)
            .min(endpoints.len() - 1);
        let id = self.next_operation_id;
        self.next_operation_id += 1;
        let key = self.open_operation(client, endpoint as u16, id, streak);
        if self.model.users.manual_retry.is_some() {
            self.intent_started(key);
        }
        self.send_first(key, None);
    }

    /// A user client starts operation `id` on `endpoint`: the record, its deadline, its
    /// controls told; its first attempt is the caller's to send.
    pub(super) fn open_operation(
        &mut self,
        client: u32,
        endpoint: u16,
        id: u64,
        streak: u16,
    ) -> Key {
        self.unfinished += 1;
        self.recorder.operation_started(endpoint);
        let deadline = match self.model.users.policy.deadline {
            Deadline::Budget(budget) => self.now + budget,
            Deadline::Propagate | Deadline::PropagateAtMost(_) | Deadline::Unbounded => NO_DEADLINE,
        };
        let key = self.operations.insert(Operation {
            instant_streak: streak,
            ..Operation::new(id, client, endpoint, false, self.now, deadline)
        });
        self.call_created(key);
        if !self.user_controls.is_empty() {
            self.user_controls.call_started(self.now, client);
        }
        key
    }

    /// Sends a call's first attempt, and starts its hedging if its policy hedges and the
    /// operation may be repeated (a write without protection is never hedged).
    pub(super) fn send_first(&mut self, key: Key, call: Option<DownstreamCall>) {
        let policy = policy_of(self.model, call);
        let hedging = policy.hedging.filter(|_| {
            let operation = self.operations.get(key).expect("a starting call is live");
            let endpoint = &self.model.users.endpoints[usize::from(operation.endpoint)];
            endpoint.idempotent_method || endpoint.idempotency_key || policy.unsafe_retries
        });
        match hedging {
            None => self.send_request(key, false),
            Some(hedging) => {
                self.start_hedging(key);
                self.send_request(key, false);
                self.first_hedge_sent(key, hedging);
            }
        }
    }

    /// A service's worker, serving `parent`, makes call number `number` of its route `route`
    /// to the next service.
    pub(super) fn start_call(&mut self, service: ServiceId, parent: Key, route: u8, number: u8) {
        let (model, caller) = {
            let instance = &self.services[usize::from(service)];
            (instance.model, instance.service)
        };
        let made = model.routes[usize::from(route)].calls[usize::from(number)];
        let policy = model.call_policy(made.policy);
        let request = self.attempts.get(parent).expect("a served request is live");
        let deadline = match policy.deadline {
            Deadline::Budget(budget) => self.now + budget,
            Deadline::Propagate => request.gives_up,
            Deadline::PropagateAtMost(budget) => request.gives_up.min(self.now + budget),
            Deadline::Unbounded => NO_DEADLINE,
        };
        let served = self
            .operations
            .get(request.operation)
            .expect("operations outlive their attempts");
        let (client, endpoint) = (served.client, served.endpoint);
        let id = self.drawn(parent).identity().call_made_by(number);
        let logical = self.logical(request.operation, served);
        self.operations
            .get_mut(logical)
            .expect("a user operation outlives its calls")
            .live_calls += 1;
        let key = self.operations.insert(Operation::new(
            id, client, endpoint, true, self.now, deadline,
        ));
        self.call_created(key);
        let slot = key.slot as usize;
        if slot >= self.downstream.len() {
            self.downstream.resize(slot + 1, DOWNSTREAM_PLACEHOLDER);
        }
        self.downstream[slot] = DownstreamCall {
            service,
            caller,
            parent,
            number,
            route,
            policy: made.policy,
            target: made.target,
            link: made.link,
            logical,
        };
        let index = self.controls_index(service, made.policy);
        let controls = &mut self.caller_controls[index];
        if !controls.is_empty() {
            controls.call_started(self.now, client);
        }
        let call = self.downstream_call(key, self.operations.get(key).expect("just inserted"));
        self.send_first(key, call);
    }

    /// The controls of the caller of `call` (the users', or the calling instance's for the
    /// call's policy).
    pub(super) fn controls_of(&mut self, call: Option<DownstreamCall>) -> &mut ControlSet {
        match call {
            None => &mut self.user_controls,
            Some(call) => {
                let index = self.controls_index(call.service, call.policy);
                &mut self.caller_controls[index]
            }
        }
    }

    /// Where the controls of instance `service` for its calls of policy `policy` are in
    /// `Engine::caller_controls`.
    #[inline]
    fn controls_index(&self, service: ServiceId, policy: u8) -> usize {
        if self.first_call_controls.is_empty() {
            usize::from(service)
        } else {
            self.first_call_controls[usize::from(service)] as usize + usize::from(policy)
        }
    }

    /// Whose controls a call's are, as the pool queues name them: 0 for the users', 1 + their
    /// index in `Engine::caller_controls` for a service's.
    #[inline]
    fn controls_owner(&self, call: Option<DownstreamCall>) -> u32 {
        call.map_or(0, |call| {
            1 + self.controls_index(call.service, call.policy) as u32
        })
    }

    /// The controls `owner` names (see [`controls_owner`]): of a call that may have ended.
    fn owned_controls(&mut self, owner: u32) -> &mut ControlSet {
        match owner {
            0 => &mut self.user_controls,
            instance => &mut self.caller_controls[instance as usize - 1],
        }
    }

    /// Sends an attempt of the request itself (first, or a `retry`) if the caller's controls
    /// admit it; a refusal ends the call with the refusing control as its reason.
    #[inline]
    pub(super) fn send_request(&mut self, key: Key, retry: bool) {
        if self.controls_anywhere {
            self.send_controlled(key, retry);
        } else {
            self.send(key, false);
        }
    }

    /// [`Engine::send_request`] when some caller has controls.
    fn send_controlled(&mut self, key: Key, retry: bool) {
        match self.pass_controls(key, retry) {
            Passage::Now => self.send(key, false),
            Passage::Held => {}
            Passage::Refused(reason) => self.refuse(key, reason),
        }
    }

    /// Asks the caller's controls whether an attempt of the call at `key` may go out now. A
    /// rate limiter may hold it: it then goes out (`Event::DelayedSend`) when its token is due,
    /// or, with no token before the deadline, the caller waits for one until it gives up, as a
    /// thread blocked in the SDK does, and the call ends at its deadline.
    pub(super) fn pass_controls(&mut self, key: Key, retry: bool) -> Passage {
        let now = self.now;
        let operation = self.operations.get(key).expect("a live operation sends");
        let (client, deadline) = (operation.client, operation.deadline);
        let call = self.downstream_call(key, operation);
        let controls = self.controls_of(call);
        if controls.is_empty() {
            return Passage::Now;
        }
        match controls.admit_send(now, client, retry, deadline.saturating_sub(now)) {
            Admission::After(0) => Passage::Now,
            Admission::After(delay) => {
                self.events.push(now + delay, Event::DelayedSend(key));
                Passage::Held
            }
            Admission::Refused(FailureReason::Decision(StopReason::DeadlineExhausted)) => {
                self.events.push(deadline, Event::DelayedSend(key));
                Passage::Held
            }
            Admission::Refused(reason) => Passage::Refused(reason),
            Admission::Waits(queue) => {
                let owner = self.controls_owner(call);
                self.pool_waiters
                    .entry((owner, queue))
                    .or_default()
                    .push_back(key);
                self.pool_waiting.insert(key, (owner, queue));
                self.events.push(deadline, Event::PoolGiveUp(key));
                Passage::Held
            }
        }
    }

    /// An attempt of `client`, a caller under `call`, ended: the first attempts waiting for a
    /// connection of its pool go out, as many as have room.
    fn wake_pool_waiters(&mut self, call: Option<DownstreamCall>, client: u32) {
        // Nobody waits, most of the time: nothing to look up, nothing to allocate.
        if self.pool_waiting.is_empty() {
            return;
        }
        let owner = self.controls_owner(call);
        let queues: Vec<WaitQueue> = self.controls_of(call).wait_queues(client).collect();
        for queue in queues {
            while self.controls_of(call).has_room(queue) {
                let Some(key) = self
                    .pool_waiters
                    .get_mut(&(owner, queue))
                    .and_then(VecDeque::pop_front)
                else {
                    break;
                };
                self.pool_waiting.remove(&key);
                self.controls_of(call).wait_ended(queue);
                // A hedged call may have ended while this hedge waited.
                let Some(operation) = self.operations.get(key).filter(|o| !o.finished) else {
                    continue;
                };
                let waiter = operation.client;
                let now = self.now;
                self.controls_of(call).sent(now, waiter);
                self.send(key, false);
            }
        }
    }

    /// The deadline of a call whose attempt waits for a connection: if it still waits, it
    /// leaves the queue and the call ends, as the caller gives up.
    pub(super) fn pool_give_up(&mut self, key: Key) {
        let Some((owner, queue)) = self.pool_waiting.remove(&key) else {
            return;
        };
        if let Some(waiters) = self.pool_waiters.get_mut(&(owner, queue)) {
            waiters.retain(|&waiting| waiting != key);
        }
        let now = self.now;
        let live = self
            .operations
            .get(key)
            .filter(|o| !o.finished)
            .map(|o| (o.client, o.attempt > 0));
        let controls = self.owned_controls(owner);
        controls.wait_ended(queue);
        // A hedged call may have ended while this hedge waited.
        if let Some((client, retry)) = live {
            controls.send_abandoned(now, client, retry);
            self.refuse(key, StopReason::DeadlineExhausted.into());
        }
    }

    /// Ends a call whose request a control did not let out, and traces the attempt that was
    /// never sent.
    fn refuse(&mut self, key: Key, reason: FailureReason) {
        let now = self.now;
        let operation = self.operations.get(key).expect("live operation");
        let (client, index, id) = (operation.client, operation.attempt, operation.id);
        let user = !operation.downstream;
        self.fail(key, reason);
        if user && self.hears_attempts {
            self.observer.attempt(&AttemptRecord {
                client,
                operation: id,
                attempt: u32::from(index),
                send: now,
                end: now,
                outcome: AttemptOutcome::NotSent,
                status: None,
                retry_after: None,
                next_delay: None,
                next: NextStep::Stop(reason),
            });
        }
    }

    /// A send a rate limiter held back goes out now, or, if it never got a token, the call
    /// ends at its deadline; nothing if the call has already ended.
    pub(super) fn delayed_send(&mut self, key: Key) {
        // A hedged call may have ended (another hedge won) while this send was held.
        let Some(operation) = self.operations.get(key).filter(|o| !o.finished) else {
            return;
        };
        let client = operation.client;
        let call = self.downstream_call(key, operation);
        let now = self.now;
        if now >= operation.deadline {
            return self.refuse(key, StopReason::DeadlineExhausted.into());
        }
        self.controls_of(call).sent(now, client);
        self.send(key, false);
    }

    /// Sends an attempt of `operation`, or a status check about it.
    pub(super) fn send(&mut self, key: Key, status_check: bool) {
        self.send_drawn(key, status_check, None);
    }

    /// [`Engine::send`], with the request's words if they were computed already (a retry
    /// checked ahead of its time, `Engine::schedule_retry`).
    pub(super) fn send_drawn(&mut self, key: Key, status_check: bool, words: Option<RequestWords>) {
        let now = self.now;
        let operation = self.operations.get(key).expect("a live operation sends");
        let call = self.downstream_call(key, operation);
        // One match on the call for all four: this runs for every request sent.
        let model = self.model;
        let (policy, service, from_user, link) = match call {
            None => (&model.users.policy, model.entry, true, USERS_LINK),
            Some(call) => (policy_of(model, Some(call)), call.target, false, call.link),
        };
        let gives_up = attempt_gives_up(policy, operation.deadline, now);
        let hedged = self.hedging_anywhere && self.extras(key).hedged;
        let operation = self
            .operations
            .get_mut(key)
            .expect("a live operation sends");
        let (index, call_id, client, endpoint) = (
            operation.attempt,
            operation.id,
            operation.client,
            operation.endpoint,
        );
        let identity = request_identity(call_id, index, status_check);
        operation.live_attempts += 1;
        let hedge = !status_check && hedged;
        if hedge {
            operation.attempt += 1;
        }
        // Outside a fleet a service's only instance has its index.
        let service = if self.fleets_anywhere {
            self.pick_instance(key, service, call, client, (identity, index, status_check))
        } else {
            service
        };
        // The entry service's callers are the users: their counts are its (`Recorder::finish`).
        if from_user {
            self.recorder.sent(now, endpoint, status_check, index == 0);
        } else {
            self.services[usize::from(service)]
                .counts(now)
                .count_sent(status_check, index == 0);
        }
        let words = words.or_else(|| self.request_words_at_send(link, identity));
        let first = words.map(RequestWords::request);
        let reaches = self.arrives(link, Leg::Request, identity, first, now);
        let attempt = self.attempts.insert(Attempt {
            operation: key,
            index,
            status_check,
            service,
            from_user,
            sent: now,
            gives_up,
            server_holds: reaches.is_some(),
            stage: Stage::Travelling,
            service_start: 0,
            reply: Reply::Pending,
        });
        self.awaiting.start(attempt);
        self.keep_drawn(attempt, Drawn::new(identity, link, words));
        self.recorder
            .in_flight(self.operations.len(), self.attempts.len());
        if hedge {
            self.hedge_sent(key, attempt);
        }
        if let Some(reaches) = reaches {
            match self.services[usize::from(service)].certain_refusal(reaches) {
                None => {
                    self.lanes
                        .push_message(&mut self.events, link, reaches, Event::Reach(attempt));
                }
                // A service down by its capacity curve until the request reaches it: the
                // refusal is handled as the request is sent, at the time it reaches.
                Some(refusal) => {
                    self.now = reaches;
                    self.refuse_at_reach(attempt, service, refusal);
                    self.now = now;
                }
            }
        }
        // A timer only if it can still fire: not for an attempt whose answer is learned
        // already. A retry sent ahead of its time always is (`Engine::schedule_retry`).
        debug_assert!(self.retries_ahead == 0 || !self.awaiting.contains(attempt));
        if self.awaiting.contains(attempt) {
            let timeouts = self.lanes.timeouts(call);
            self.events
                .push_in(timeouts, gives_up, Event::Timeout(attempt));
        }
    }

    /// The instance of service `service` that the attempt `identity` of the call at `key`
    /// goes to, picked by its caller's balancer (see [`super::balancer`]): the users' process
    /// of `client`, or the calling instance of `call`. Kept out of line: inlined, it slowed
    /// every send of a run without a fleet by a few percent.
    #[inline(never)]
    fn pick_instance(
        &mut self,
        key: Key,
        service: ServiceId,
        call: Option<DownstreamCall>,
        client: u32,
        (identity, index, status_check): (Identity, u16, bool),
    ) -> ServiceId {
        let fleet = &mut self.fleets[usize::from(service)];
        if fleet.instances == 1 {
            return fleet.first;
        }
        let scope = scope_of(self.model, call, client);
        let reselections = policy_of(self.model, call).previous_hosts;
        let tried = if reselections > 0 {
            self.extras[key.slot as usize].tried
        } else {
            Tried::EMPTY
        };
        let mut draws = self.keyed.draws(Draw::Host, identity);
        let host = fleet.pick(scope, self.now, (client, &mut draws), &tried, reselections);
        fleet.sent(scope, host);
        let first = fleet.first;
        if reselections > 0 {
            self.extras_mut(key).tried.push(host);
        }
        let instance = first + host;
        if call.is_none() {
            // The users' sends are counted for the entry as a whole (`Recorder::finish`); an
            // instance of a fleet counts its own, for its totals.
            self.services[usize::from(instance)]
                .counts(self.now)
                .count_sent(status_check, index == 0);
        }
        instance
    }

    /// The caller of the attempt at `key` (to instance `instance`) stops waiting for it, as
    /// `heard` says: its balancer counts one request fewer outstanding there, and its outlier
    /// detection hears whether it failed (a 5xx, or a failure without a response).
    #[inline]
    pub(super) fn stopped_waiting(&mut self, key: Key, instance: ServiceId, heard: Heard) {
        if self.results_heard_anywhere {
            self.balancer_heard(key, instance, heard);
        }
    }

    /// [`Engine::stopped_waiting`] with some fleet's balancer to tell.
    #[inline(never)]
    fn balancer_heard(&mut self, key: Key, instance: ServiceId, heard: Heard) {
        let service = self.services[usize::from(instance)].service;
        if !self.fleets[usize::from(service)].hears_results() {
            return;
        }
        let attempt = self.attempts.get(key).expect("a live attempt");
        let overload_status = self.services[usize::from(instance)].model.overload_status;
        let failed = match heard {
            Heard::Answer => Some(attempt.reply.is_failure(overload_status)),
            Heard::Timeout => Some(true),
            Heard::Nothing => None,
        };
        let operation_key = attempt.operation;
        let operation = self
            .operations
            .get(operation_key)
            .expect("a live operation");
        let scope = scope_of(
            self.model,
            self.downstream_call(operation_key, operation),
            operation.client,
        );
        let now = self.now;
        let fleet = &mut self.fleets[usize::from(service)];
        let host = instance - fleet.first;
        fleet.result(scope, host, failed, now);
    }

    pub(super) fn response(&mut self, key: Key) {
        let Some(attempt) = self.attempts.get_mut(key) else {
            return;
        };
        attempt.server_holds = false;
        let instance = attempt.service;
        if self.awaiting.stop(key) {
            self.stopped_waiting(key, instance, Heard::Answer);
            self.resolve(key, false);
        }
        self.release_attempt(key);
    }

    /// The caller stops waiting for an attempt it still awaits (the run loop drops the timers
    /// of attempts answered in time).
    pub(super) fn timeout(&mut self, key: Key) {
        let attempt = self
            .attempts
            .get(key)
            .expect("only an awaited attempt times out");
        let stopped = self.awaiting.stop(key);
        debug_assert!(stopped, "only an awaited attempt times out");
        let (service, from_user) = (attempt.service, attempt.from_user);
        self.stopped_waiting(key, service, Heard::Timeout);
        if from_user {
            self.recorder.at(self.now).timeouts += 1;
        } else {
            self.services[usize::from(service)]
                .counts(self.now)
                .timeouts += 1;
        }
        self.resolve(key, true);
        self.release_attempt(key);
        if self.services[usize::from(service)].model.cancellation {
            self.cancel(key);
        }
    }

    /// The caller learned the result of an attempt (its reply, or that it timed out): count
    /// it, decide what to do next, and trace it.
    fn resolve(&mut self, key: Key, timed_out: bool) {
        let attempt = self.attempts.get(key).expect("resolving a live attempt");
        let (operation, reply, status_check) =
            (attempt.operation, attempt.reply, attempt.status_check);
        let (send, index, service, user) = (
            attempt.sent,
            attempt.index,
            attempt.service,
            attempt.from_user,
        );
        let overload_status = self.services[usize::from(service)].model.overload_status;
        let (outcome, status, retry_after) = if timed_out {
            (AttemptOutcome::Timeout, None, None)
        } else {
            match reply {
                Reply::Ok => (AttemptOutcome::Ok, Some(200), None),
                Reply::Committed => (AttemptOutcome::Committed, Some(200), None),
                Reply::NotFound => (AttemptOutcome::NotFound, Some(404), None),
                Reply::StillPending => (AttemptOutcome::Pending, Some(202), None),
                Reply::RateLimited { retry_after } => {
                    (AttemptOutcome::Rejected, Some(429), Some(retry_after))
                }
                Reply::Overloaded { retry_after } => {
                    (AttemptOutcome::Rejected, Some(overload_status), retry_after)
                }
                Reply::Conflict => (AttemptOutcome::Conflict, Some(409), None),
                Reply::Error(code) => (AttemptOutcome::Error, Some(code), None),
                Reply::Reset | Reply::Refused => (AttemptOutcome::Reset, None, None),
                Reply::LimitReached(code) => (AttemptOutcome::Rejected, Some(code), None),
                Reply::Pending => unreachable!("a response carries a reply"),
            }
        };
        if user && !timed_out {
            let counts = self.recorder.at(self.now);
            match reply {
                Reply::Ok | Reply::Committed | Reply::NotFound | Reply::StillPending => {
                    counts.ok += 1
                }
                Reply::RateLimited { .. } => counts.rejected_429 += 1,
                Reply::Overloaded { .. } | Reply::LimitReached(_) => counts.rejected_503 += 1,
                Reply::Conflict => counts.conflicts_409 += 1,
                Reply::Error(_) => counts.errors += 1,
                Reply::Reset | Reply::Refused => counts.resets += 1,
                Reply::Pending => {}
            }
        }
        if !status_check && self.controls_anywhere {
            let live = self.operations.get(operation).expect("live operation");
            let client = live.client;
            let call = self.downstream_call(operation, live);
            let now = self.now;
            let model = self.model;
            let controls = self.controls_of(call);
            if !controls.is_empty() {
                let policy = policy_of(model, call);
                let end = AttemptEnd {
                    retry: index > 0,
                    outcome,
                    status,
                    transient: outcome != AttemptOutcome::Ok
                        && match status {
                            Some(status) => policy.retryable.contains(status),
                            None => transport_error(timed_out, reply)
                                .is_some_and(|error| policy.retryable_transport.contains(error)),
                        },
                    latency: now - send,
                };
                controls.attempt_ended(now, client, &end);
                if self.pool_waits_anywhere {
                    self.wake_pool_waiters(call, client);
                }
            }
        }
        let (next_delay, next) = if status_check {
            match (timed_out, reply) {
                (false, Reply::Committed) => self.succeed(operation),
                (false, Reply::NotFound) => {
                    // Never written: the request itself may be repeated.
                    self.operations
                        .get_mut(operation)
                        .expect("live operation")
                        .checking = false;
                    self.decide(operation, key, None, true, None, false)
                }
                // Still being processed: ask again later, as after a transport error.
                (false, Reply::StillPending)
                | (true, _)
                | (false, Reply::Reset | Reply::Refused) => {
                    self.decide(operation, key, None, true, None, timed_out)
                }
                (false, _) => self.decide(operation, key, status, false, retry_after, false),
            }
        } else if self.hedging_anywhere && self.extras(operation).hedged {
            self.hedges[operation.slot as usize].remove(key);
            let reads = |policy: &CallerPolicy| policy.retry_after.reads_header();
            let call =
                self.downstream_call(operation, self.operations.get(operation).expect("live"));
            let pushback = retry_after.filter(|_| reads(policy_of(self.model, call)));
            match (timed_out, reply) {
                (false, Reply::Ok) => self.succeed(operation),
                (true, _) | (false, Reply::Reset | Reply::Refused) => {
                    self.hedge_failed(operation, key, None, None)
                }
                (false, _) => self.hedge_failed(operation, key, status, pushback),
            }
        } else {
            match (timed_out, reply) {
                (false, Reply::Ok) => self.succeed(operation),
                _ => match transport_error(timed_out, reply) {
                    Some(error) => self.no_response(operation, key, error),
                    None => self.decide(operation, key, status, false, retry_after, false),
                },
            }
        };
        if user && self.hears_attempts {
            let operation = self
                .operations
                .get(operation)
                .expect("operations outlive their attempts");
            let record = AttemptRecord {
                client: operation.client,
                operation: operation.id,
                attempt: u32::from(index),
                send,
                end: self.now,
                outcome,
                status,
                retry_after,
                next_delay,
                next,
            };
            self.observer.attempt(&record);
        }
    }

    /// An attempt failed without a response (`error`): ask the status endpoint if the
    /// operation may have written, else let the decision judge it: as a transport error if the
    /// policy retries this kind (`retryable_transport_errors`), else as no signal at all, which
    /// the decision does not retry (`not-transient`).
    fn no_response(
        &mut self,
        key: Key,
        after: Key,
        error: TransportError,
    ) -> (Option<Micros>, NextStep) {
        let operation = self.operations.get(key).expect("live operation");
        let endpoint = &self.model.users.endpoints[usize::from(operation.endpoint)];
        if endpoint.status_endpoint && !endpoint.idempotent_method {
            if operation.deadline > self.now {
                self.operations
                    .get_mut(key)
                    .expect("live operation")
                    .checking = true;
                self.send(key, true);
                return (None, NextStep::StatusCheck);
            }
            return self.fail(key, FailureReason::StatusUnknown);
        }
        let call = self.downstream_call(key, operation);
        let retryable = policy_of(self.model, call)
            .retryable_transport
            .contains(error);
        let timed_out = error == TransportError::Timeout;
        self.decide(key, after, None, retryable, None, timed_out)
    }

    /// Asks the retry decision and acts on it. While the caller is asking the status endpoint,
    /// a retry asks it again, and a stop leaves the outcome unknown. A caller whose policy
    /// allows no retries stops at once, without asking. A retry of the request itself must
    /// then pass the caller's controls; `timed_out` says the failure was a timeout (which some
    /// controls charge more for).
    fn decide(
        &mut self,
        key: Key,
        after: Key,
        status: Option<u16>,
        transport_error: bool,
        retry_after: Option<Micros>,
        timed_out: bool,
    ) -> (Option<Micros>, NextStep) {
        let model = self.model;
        let operation = self.operations.get(key).expect("live operation");
        let endpoint = &model.users.endpoints[usize::from(operation.endpoint)];
        let call = self.downstream_call(key, operation);
        let policy = policy_of(model, call);
        if policy.max_attempts == 0 {
            let reason = if operation.checking {
                FailureReason::StatusUnknown
            } else {
                FailureReason::Decision(StopReason::MaxAttempts)
            };
            return self.fail(key, reason);
        }
        // The decision after request `after`, whoever makes it.
        let failed = self.drawn(after);
        let [_, _, retry] = failed.later(&self.keyed);
        let mut draws = self
            .keyed
            .draws_from(Draw::Retry, failed.identity(), Some(retry));
        let random = draws.unit();
        let retry_after_random =
            if policy.retry_after == RetryAfterMode::HonorJittered && retry_after.is_some() {
                draws.unit()
            } else {
                0.5
            };
        let input = RetryInput {
            idempotent_method: endpoint.idempotent_method || policy.unsafe_retries,
            status: status.map(f64::from),
            transport_error,
            attempt: f64::from(operation.attempt),
            now_ms: self.now as f64 / MICROS_PER_MS as f64,
            deadline_ms: operation.deadline as f64 / MICROS_PER_MS as f64,
            base_ms: policy.base_ms,
            cap_ms: policy.cap_ms,
            max_attempts: f64::from(policy.max_attempts),
            random,
            retry_after_ms: retry_after.map(|micros| micros as f64 / MICROS_PER_MS as f64),
            idempotency_key: endpoint.idempotency_key,
            status_endpoint: endpoint.status_endpoint,
            previous_delay_ms: (!operation.previous_delay_ms.is_nan())
                .then_some(operation.previous_delay_ms),
            retry_after_random,
            multiplier: policy.multiplier,
            backoff_from: f64::from(self.extras(key).backoff_from),
            retryable: policy.retryable,
        };
        match plan_retry(&input, &policy.jitter, policy.retry_after) {
            Decision::Retry { delay_ms, .. } => {
                let (checking, client) = (operation.checking, operation.client);
                if !checking
                    && policy.retry_probability < 1.0
                    && !self
                        .keyed
                        .draws(Draw::RetryChance, failed.identity())
                        .chance(policy.retry_probability)
                {
                    return self.fail(key, FailureReason::RetryDeclined);
                }
                let now = self.now;
                let anywhere = self.controls_anywhere;
                let controls = self.controls_of(call);
                if anywhere
                    && !checking
                    && !controls.is_empty()
                    && let Err(kind) = controls.admit_retry(now, client, timed_out)
                {
                    return self.fail(key, FailureReason::Control(kind));
                }
                // Round up so that an honoured Retry-After is never undercut by a microsecond.
                let delay = (delay_ms * MICROS_PER_MS as f64).ceil() as Micros;
                let operation = self.operations.get_mut(key).expect("live operation");
                operation.attempt += 1;
                operation.previous_delay_ms = delay_ms;
                let attempt = operation.attempt;
                if self.extras_on {
                    let extras = self.extras_mut(key);
                    if policy.retry_after == RetryAfterMode::Pushback && retry_after.is_some() {
                        // gRPC: the retries after a pushback back off from the base again.
                        extras.backoff_from = attempt;
                    }
                    if !checking {
                        extras.last_retry = if timed_out {
                            LastRetry::Timeout
                        } else {
                            LastRetry::Failure
                        };
                    }
                }
                self.schedule_retry(key, self.now + delay);
                (Some(delay), NextStep::Retry)
            }
            Decision::Stop(reason) => {
                let checking = self.operations.get(key).expect("live operation").checking;
                self.fail(
                    key,
                    if checking {
                        FailureReason::StatusUnknown
                    } else {
                        reason.into()
                    },
                )
            }
        }
    }

    fn succeed(&mut self, key: Key) -> (Option<Micros>, NextStep) {
        let operation = self.operations.get(key).expect("live operation");
        if !operation.downstream {
            self.recorder
                .succeeded(operation.start, self.now, operation.endpoint);
        }
        self.finish(key, true);
        (None, NextStep::Success)
    }

    pub(super) fn fail(&mut self, key: Key, reason: FailureReason) -> (Option<Micros>, NextStep) {
        let operation = self.operations.get(key).expect("live operation");
        if !operation.downstream {
            self.recorder.failed(self.now, reason, operation.endpoint);
        }
        self.finish(key, false);
        (None, NextStep::Stop(reason))
    }

    /// The operation ended: a user's client thinks before its next one (closed loop), a
    /// service's worker goes on with its request.
    fn finish(&mut self, key: Key, succeeded: bool) {
        let operation = self.operations.get_mut(key).expect("live operation");
        operation.finished = true;
        let client = operation.client;
        let last_retry = self.extras(key).last_retry;
        let call = self.downstream_call(key, self.operations.get(key).expect("live operation"));
        let now = self.now;
        let anywhere = self.controls_anywhere;
        let controls = self.controls_of(call);
        if anywhere && !controls.is_empty() {
            let end = CallEnd {
                success: succeeded,
                last_retry_after_timeout: match last_retry {
                    LastRetry::None => None,
                    LastRetry::Failure => Some(false),
                    LastRetry::Timeout => Some(true),
                },
            };
            controls.call_ended(now, client, &end);
        }
        match call {
            None => {
                self.unfinished -= 1;
                if self.model.users.manual_retry.is_some() {
                    self.user_heard(key, succeeded);
                } else {
                    self.think(key);
                }
            }
            Some(call) => self.call_returned(call, succeeded),
        }
        let hedged = self.hedging_anywhere && self.extras(key).hedged;
        self.release_operation(key);
        if hedged {
            self.cancel_hedges(key);
        }
    }

    /// What a user did (the operation at `key`, or the intent it began) ended: a closed-loop
    /// client thinks before its next one.
    pub(super) fn think(&mut self, key: Key) {
        let Arrivals::Closed { think_mean_us, .. } = self.model.users.workload else {
            return;
        };
        let operation = self.operations.get(key).expect("live operation");
        let client = operation.client;
        let think = self
            .keyed
            .draws(
                Draw::Think,
                Identity {
                    call: operation.id,
                    part: 0,
                },
            )
            .exponential(think_mean_us) as Micros;
        let streak = if think == 0 && operation.start == self.now {
            operation.instant_streak + 1
        } else {
            0
        };
        if streak >= MAX_INSTANT_OPERATIONS {
            self.stalled = Some(Stalled {
                policy: String::new(),
                client,
                operations: streak,
                at: self.now,
            });
        }
        self.events
            .push(self.now + think, Event::ClientReady(client, streak));
    }

    pub(super) fn release_attempt(&mut self, key: Key) {
        let attempt = self.attempts.get(key).expect("live attempt");
        if attempt.server_holds || self.awaiting.contains(key) {
            return;
        }
        let operation_key = attempt.operation;
        self.attempts.remove(key);
        let operation = self
            .operations
            .get_mut(operation_key)
            .expect("operations outlive their attempts");
        operation.live_attempts -= 1;
        if operation.is_done() {
            self.free_operation(operation_key);
        }
    }

    /// Frees an operation that has ended and has nothing left in flight: no attempt, and, for
    /// a user operation, no downstream call made on its behalf (services keep their key and
    /// write records under it until then).
    #[inline]
    fn release_operation(&mut self, key: Key) {
        if self.operations.get(key).expect("live operation").is_done() {
            self.free_operation(key);
        }
    }

    /// Frees an operation that is done; a downstream call lets its user operation go too if
    /// it was the last thing that operation waited for.
    pub(super) fn free_operation(&mut self, key: Key) {
        let operation = self.operations.remove(key).expect("live operation");
        if let Some(DownstreamCall { logical, .. }) = self.downstream_call(key, &operation) {
            let user = self
                .operations
                .get_mut(logical)
                .expect("a user operation outlives its calls");
            user.live_calls -= 1;
            if user.is_done() {
                self.free_operation(logical);
            }
        } else if self.model.users.manual_retry.is_some() {
            self.intent_member_freed(key);
        }
    }
}

/// What the caller's controls made of an attempt about to go out.
pub(super) enum Passage {
    /// It goes out now.
    Now,
    /// A rate limiter holds it (an `Event::DelayedSend` is scheduled), or it waits for a
    /// connection of its caller's pool.
    Held,
    /// A control refused it, for this reason.
    Refused(FailureReason),
}

/// What a caller that stops waiting for an attempt has heard of it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Heard {
    /// Its answer.
    Answer,
    /// Nothing before its timeout: a failure.
    Timeout,
    /// Nothing, and it no longer asks (a hedge cancelled once another answered).
    Nothing,
}

/// The scope of the balancer that picks for `call` (see [`super::balancer`]): the process of
/// user client `client`, or the instance that makes the call.
#[inline]
fn scope_of(model: &Model, call: Option<DownstreamCall>, client: u32) -> usize {
    match call {
        None => (u64::from(client) % model.users.processes) as usize,
        Some(call) => usize::from(call.service),
    }
}

/// The retry policy of the users, or of the service that made `call`.
#[inline]
pub(super) fn policy_of(model: &Model, call: Option<DownstreamCall>) -> &CallerPolicy {
    match call {
        None => &model.users.policy,
        Some(call) => model.services[usize::from(call.caller)].call_policy(call.policy),
    }
}

/// What the downstream table holds at slots that are not downstream calls.
const DOWNSTREAM_PLACEHOLDER: DownstreamCall = DownstreamCall {
    service: 0,
    caller: 0,
    parent: Key {
        slot: u32::MAX,
        generation: 0,
    },
    number: 0,
    route: 0,
    policy: 0,
    target: 0,
    link: 0,
    logical: Key {
        slot: u32::MAX,
        generation: 0,
    },
};
