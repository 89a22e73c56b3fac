//! Requests at services: a request reaches its service, is admitted, queued or refused, is
//! worked on, makes the service's downstream calls, and is answered. The decisions are the
//! [`Service`]'s own; this is where they meet the requests' records and the network.

use super::ahead::Leg;
use super::{Attempt, DownstreamCall, Engine, Event, Observer, Reply, Stage};
use crate::base::random::Draw;
use crate::base::slab::Key;
use crate::base::time::Micros;
use crate::engine::idempotency::{KeyState, KeyVerdict};
use crate::engine::service::queue::Dequeued;
use crate::engine::service::{Admission, Refusal, Service};
use crate::model::{Errors, RejectionKind, ServiceId};
use crate::scenario::{DeadlineCheck, ErrorsAt, IdempotencyStore, InFlightRepeat};

/// The status of a request refused because its deadline had passed: 504, Gateway Timeout,
/// which a gateway answers for DEADLINE_EXCEEDED (grpc-gateway's mapping of the code).
const DEADLINE_EXCEEDED: u16 = 504;

/// What a worker holds: a request at its service since `start`; or, at an event-driven
/// service, a request whose calls are out (`forwarding`), which no worker holds.
#[derive(Debug, Clone, Copy)]
struct Held {
    service: ServiceId,
    operation: Key,
    status_check: bool,
    start: Micros,
    caller_waiting: bool,
    forwarding: bool,
}

impl<'a, O: Observer> Engine<'a, O> {
    #[inline]
    fn service(&mut self, service: ServiceId) -> &mut Service<'a> {
        &mut self.services[usize::from(service)]
    }

    /// The instance that keeps the writes of instance `id`'s fleet (itself, outside a
    /// fleet): a fleet shares one database.
    #[inline]
    fn store(&mut self, id: ServiceId) -> &mut Service<'a> {
        let store = self.services[usize::from(id)].store;
        &mut self.services[usize::from(store)]
    }

    /// The instance that keeps the idempotency keys instance `id` sees: the fleet's shared
    /// store, or `id` itself (`key_store = "per-instance"`, and outside a fleet).
    #[inline]
    fn key_store(&mut self, id: ServiceId) -> &mut Service<'a> {
        let store = self.services[usize::from(id)].key_store;
        &mut self.services[usize::from(store)]
    }

    #[inline]
    pub(super) fn reach(&mut self, key: Key) {
        let now = self.now;
        let attempt = self
            .attempts
            .get(key)
            .expect("a travelling attempt is live");
        let (operation, status_check, id) =
            (attempt.operation, attempt.status_check, attempt.service);
        if let Some(refusal) = self.service(id).refusal() {
            return self.refuse_at_reach(key, id, refusal);
        }
        self.service(id).counts(now).received += 1;
        if self.services[usize::from(id)]
            .model
            .deadline_check
            .is_some()
            && self.deadline_passed_at_reach(key)
        {
            return self.refuse_expired(key, id);
        }
        let (operation_key, operation) = (
            operation,
            self.operations.get(operation).expect("live operation"),
        );
        let (client, logical) = (operation.client, self.logical(operation_key, operation));
        let keyed = self.model.users.endpoints[usize::from(operation.endpoint)].idempotency_key;
        let error_draws = self.services[usize::from(id)]
            .model
            .errors
            .is_some_and(|errors| errors.at == ErrorsAt::Arrival)
            .then(|| self.keyed.draws(Draw::Error, self.drawn(key).identity()));
        let service = &mut self.services[usize::from(id)];
        if let Err(retry_after) = service.rate_limit(now, client) {
            service.counts(now).rate_limited += 1;
            self.charge(id, RejectionKind::RateLimit);
            return self.reply(key, Reply::RateLimited { retry_after });
        }
        if let Some(errors) =
            error_draws.and_then(|draws| service.injected_error(draws, ErrorsAt::Arrival))
        {
            service.counts(now).errors += 1;
            return self.reply(key, Reply::Error(errors.status));
        }
        if !status_check && keyed && self.services[usize::from(id)].model.keeps_keys {
            match self.key_store(id).judge_key(now, logical) {
                KeyVerdict::Process => {}
                KeyVerdict::Replay => {
                    self.service(id).counts(now).replayed += 1;
                    return self.reply(key, Reply::Ok);
                }
                KeyVerdict::InFlight => match self.service(id).model.idempotency_in_flight {
                    InFlightRepeat::Reject => {
                        self.service(id).counts(now).conflicts += 1;
                        return self.reply(key, Reply::Conflict);
                    }
                    InFlightRepeat::Wait => {
                        self.key_store(id).wait_on_key(logical, key);
                        self.attempts.get_mut(key).expect("live attempt").stage = Stage::Waiting;
                        return;
                    }
                },
            }
        }
        self.admit(key);
    }

    /// Service `id`, down, refuses request `key` as it reaches it (now), as `refusal` says.
    /// No worker is up to refuse it, so refusing costs none (`RejectionCost`).
    pub(super) fn refuse_at_reach(&mut self, key: Key, id: ServiceId, refusal: Refusal) {
        let now = self.now;
        let service = self.service(id);
        service.counts(now).received += 1;
        match refusal {
            Refusal::Reject => {
                service.counts(now).rejected_outage += 1;
                let retry_after = service.model.retry_after;
                self.reply(key, Reply::Overloaded { retry_after })
            }
            Refusal::Reset => {
                service.counts(now).rejected_outage += 1;
                self.reply(key, Reply::Refused)
            }
            Refusal::Blackhole => self.drop_request(key),
        }
    }

    /// Whether request `key`, reaching its service now, carries a deadline already past (a
    /// timeout of zero: its caller's time ran out before it was sent); otherwise the service
    /// notes when it arrived, where its deadline starts. The deadline is relative, as grpc-go
    /// sets it: arrival plus the timeout sent (`Engine::deadline_of`).
    fn deadline_passed_at_reach(&mut self, key: Key) -> bool {
        let now = self.now;
        let attempt = self
            .attempts
            .get_mut(key)
            .expect("a reaching attempt is live");
        attempt.service_start = now;
        attempt.gives_up <= attempt.sent
    }

    /// The deadline at its service of request `key`, which reached it at `service_start`:
    /// its arrival plus the time its attempt had left as it was sent (`grpc-timeout`, Envoy's
    /// `x-envoy-expected-rq-timeout-ms`). The transit before it arrived is not deducted, so
    /// it is never earlier than the time its caller gives up.
    fn deadline_of(&self, key: Key) -> Micros {
        let attempt = self
            .attempts
            .get(key)
            .expect("a request at its service is live");
        attempt
            .service_start
            .saturating_add(attempt.gives_up - attempt.sent)
    }

    /// Service `id` refuses request `key` because its deadline has passed: a refusal that
    /// costs a worker the deadline's `reject_cost`, answered 504 (`DEADLINE_EXCEEDED`). Its
    /// caller has stopped waiting by then (its deadline is never later than this one), so
    /// nobody acts on the answer.
    fn refuse_expired(&mut self, key: Key, id: ServiceId) {
        let now = self.now;
        self.service(id).counts(now).dropped_expired += 1;
        self.charge(id, RejectionKind::DeadlineExpired);
        self.reply(key, Reply::Error(DEADLINE_EXCEEDED))
    }

    /// A free worker, else the queue, else an overload rejection.
    #[inline]
    fn admit(&mut self, key: Key) {
        let attempt = self.attempts.get(key).expect("live attempt");
        let (operation, status_check, id) =
            (attempt.operation, attempt.status_check, attempt.service);
        let now = self.now;
        if self.service(id).limit_reached() {
            self.service(id).counts(now).concurrency_limited += 1;
            self.abandon_key(key);
            self.charge(id, RejectionKind::ConcurrencyLimit);
            let limit = self.services[usize::from(id)]
                .model
                .concurrency_limit
                .as_ref()
                .expect("a service whose limit is reached has one");
            return self.reply(key, Reply::LimitReached(limit.status));
        }
        let admission = self.service(id).admission(now);
        if admission == Admission::Refuse {
            self.abandon_key(key);
            self.charge(id, RejectionKind::QueueFull);
            let retry_after = self.services[usize::from(id)].model.retry_after;
            return self.reply(key, Reply::Overloaded { retry_after });
        }
        self.service(id).admitted(now, key);
        if !status_check {
            self.operations
                .get_mut(operation)
                .expect("live operation")
                .in_service += 1;
        }
        if admission == Admission::Serve {
            self.start_work(key);
        } else {
            self.attempts.get_mut(key).expect("live attempt").stage = Stage::Queued;
            self.service(id).enqueue(now, key);
        }
        self.watch_load(id);
    }

    /// A rejection of `kind` costs a worker of service `id` its time: at once if one is free.
    #[inline]
    fn charge(&mut self, id: ServiceId, kind: RejectionKind) {
        let now = self.now;
        if let Some(done) = self.service(id).charge(now, kind) {
            self.events.push(done, Event::RejectionWorkDone(id));
        }
    }

    pub(super) fn rejection_work_done(&mut self, id: ServiceId) {
        self.service(id).rejection_work_done();
        self.dispatch(id);
    }

    /// After the load on service `id` changed: if the overload that crashes it has just begun,
    /// check again when it will have lasted long enough.
    #[inline]
    fn watch_load(&mut self, id: ServiceId) {
        let now = self.now;
        if let Some(check) = self.service(id).observe_load(now) {
            self.events.push(check, Event::CrashCheck(id));
        }
    }

    /// Service `id` crashes under overload if its overload has held long enough: everything it
    /// holds is reset, and it comes back after its `restart_after`.
    pub(super) fn crash_check(&mut self, id: ServiceId) {
        let now = self.now;
        if !self.service(id).health.crash_due(now) {
            return;
        }
        let back = self.service(id).go_down(now);
        self.crash(id);
        self.events.push(back, Event::Restart(id));
    }

    pub(super) fn restart(&mut self, id: ServiceId) {
        let now = self.now;
        self.service(id).come_back(now);
        self.dispatch(id);
    }

    /// The caller of `key` has gone: a service with `cancellation` stops its work at once (a
    /// queued request is dropped when the queue reaches it).
    pub(super) fn cancel(&mut self, key: Key) {
        let Some(held) = self.held(key) else {
            return;
        };
        let (id, now) = (held.service, self.now);
        self.let_go(Held {
            caller_waiting: false,
            ..held
        });
        let service = self.service(id);
        service.counts(now).cancelled += 1;
        service.ended(now, key, false, true);
        self.leave_service(key);
        self.drop_request(key);
        self.dispatch(id);
    }

    #[inline]
    fn start_work(&mut self, key: Key) {
        let now = self.now;
        let attempt = self.attempts.get_mut(key).expect("live attempt");
        attempt.stage = Stage::InService;
        attempt.service_start = now;
        let id = attempt.service;
        let hit = self.services[usize::from(id)]
            .model
            .cache
            .is_some()
            .then(|| {
                let drawn = self.drawn(key);
                let [cache, _, _] = drawn.later(&self.keyed);
                self.keyed
                    .draws_from(Draw::Cache, drawn.identity(), Some(cache))
            });
        let done = self.service(id).begin_work(now, key, hit);
        self.events.push(done, Event::WorkDone(key));
    }

    /// A worker finished its own work on a request: it answers, or, for a service that calls
    /// others, makes the first call (status checks are answered at once).
    #[inline]
    pub(super) fn work_done(&mut self, key: Key) {
        // Nothing if the request was reset by a crash while in service.
        let Some(held) = self.held(key) else {
            return;
        };
        let model = self.services[usize::from(held.service)].model;
        // A service that calls nothing on any path (the only one of most scenarios) skips the
        // route lookup, kept out of line.
        if !held.status_check && model.downstream.is_some() && self.start_calls(key, held) {
            return;
        }
        if !held.status_check && model.optimistic_row.is_some() {
            return self.read_row(key, held);
        }
        self.complete(key, held);
    }

    /// The worker serving request `key` (`held`) at a service that calls others makes the
    /// calls of the request's route, if it has any (an event-driven service's worker letting
    /// go first); `false` if the route makes none, and the request is answered here.
    #[inline(never)]
    fn start_calls(&mut self, key: Key, held: Held) -> bool {
        let model = self.services[usize::from(held.service)].model;
        let route = if model.endpoint_routes.is_empty() {
            0
        } else {
            let operation = self.operations.get(held.operation).expect("live operation");
            model.route_of(operation.endpoint)
        };
        let calls = &model.routes[usize::from(route)];
        if calls.calls.is_empty() {
            return false;
        }
        if !model.holds_worker_on_calls {
            self.forward(key, held);
        }
        if calls.parallel {
            self.start_parallel(held.service, key, route);
        } else {
            self.start_call(held.service, key, route, 0);
        }
        if !model.holds_worker_on_calls {
            self.dispatch(held.service);
        }
        true
    }

    /// An event-driven service's worker is done with its own work on request `key`: it lets
    /// go while the request's calls are out (the caller then starts them, and the worker takes
    /// the next queued request).
    fn forward(&mut self, key: Key, held: Held) {
        let (id, now) = (held.service, self.now);
        self.service(id)
            .forward(now, held.start, held.caller_waiting);
        self.attempts.get_mut(key).expect("live attempt").stage = Stage::Forwarding;
    }

    /// The service lets go of what `held` is: its worker, or, for a request whose calls
    /// were out at an event-driven service, its place among those forwarded.
    fn let_go(&mut self, held: Held) {
        let now = self.now;
        let service = self.service(held.service);
        if held.forwarding {
            service.forwarded_back();
        } else {
            service.release_worker_after(now, held.start, held.caller_waiting);
        }
    }

    /// An optimistic row: the worker has read the row's version for request `key`; the write
    /// carrying it arrives two network delays later (the answer to the read, then the write).
    fn read_row(&mut self, key: Key, held: Held) {
        let (id, now) = (held.service, self.now);
        let service = self.service(id);
        service.release_worker_after(now, held.start, held.caller_waiting);
        service.read_row(key);
        let attempt = self.attempts.get_mut(key).expect("live attempt");
        attempt.stage = Stage::Writing;
        let drawn = self.drawn(key);
        let mut draws = self.keyed.draws(Draw::RowTrip, drawn.identity());
        let latency = &self.model.links[usize::from(drawn.link)].latency;
        let travel = latency.sample(&mut draws) + latency.sample(&mut draws);
        self.events.push(now + travel, Event::WriteArrives(key));
        self.dispatch(id);
    }

    /// The write of request `key` reaches its optimistic row: it succeeds if the row still has
    /// the version the request read, else it collides. A row that is down meanwhile resets it.
    pub(super) fn write_row(&mut self, key: Key) {
        let Some(attempt) = self.attempts.get(key) else {
            return;
        };
        if attempt.stage != Stage::Writing {
            return;
        }
        let (id, operation_key, now) = (attempt.service, attempt.operation, self.now);
        if self.service(id).refusal().is_some() {
            self.leave_service(key);
            return self.reply(key, Reply::Reset);
        }
        if self.service(id).write_row(key) {
            return self.answer_served(key, id, operation_key, false);
        }
        self.service(id).counts(now).collisions += 1;
        self.leave_service(key);
        let status = self.services[usize::from(id)]
            .model
            .optimistic_row
            .expect("a request writes only to an optimistic row");
        self.reply(key, Reply::Error(status));
    }

    /// What a worker holding `key` (or an event-driven service forwarding it) needs to let go
    /// of it; `None` if nothing holds it (a stale key, or a request reset by a crash).
    #[inline]
    fn held(&self, key: Key) -> Option<Held> {
        let attempt = self.attempts.get(key)?;
        if !matches!(attempt.stage, Stage::InService | Stage::Forwarding) {
            return None;
        }
        Some(Held {
            service: attempt.service,
            operation: attempt.operation,
            status_check: attempt.status_check,
            start: attempt.service_start,
            caller_waiting: self.awaiting.contains(key),
            forwarding: attempt.stage == Stage::Forwarding,
        })
    }

    /// A worker serving request `key` at instance `service` makes every call of its route
    /// `route` at once ([`crate::scenario::routes::FanOut::Parallel`]): the request is answered
    /// when all have succeeded, or as soon as one fails for good. A call that fails as it is
    /// made (a control refuses it) fails the request before the next is made.
    fn start_parallel(&mut self, service: ServiceId, key: Key, route: u8) {
        let calls = self.services[usize::from(service)].model.routes[usize::from(route)]
            .calls
            .len();
        let slot = key.slot as usize;
        if slot >= self.joins.len() {
            self.joins.resize(slot + 1, 0);
        }
        self.joins[slot] = calls as u8;
        for number in 0..calls as u8 {
            if self.held(key).is_none() {
                break;
            }
            self.start_call(service, key, route, number);
        }
    }

    /// A downstream call ended: the worker that made it makes the next call, or answers (a
    /// parallel route's, once every call has succeeded or one has failed for good). Nothing
    /// happens if its request was answered already (a parallel call failed) or reset by a
    /// crash meanwhile: its answer reaches nobody.
    pub(super) fn call_returned(&mut self, call: DownstreamCall, succeeded: bool) {
        let Some(held) = self.held(call.parent) else {
            return;
        };
        let route = &self.services[usize::from(call.service)].model.routes[usize::from(call.route)];
        if !succeeded {
            self.fail_request(call.parent, held);
        } else if route.parallel {
            let left = &mut self.joins[call.parent.slot as usize];
            *left -= 1;
            if *left == 0 {
                self.complete(call.parent, held);
            }
        } else if usize::from(call.number) + 1 < route.calls.len() {
            self.start_call(call.service, call.parent, call.route, call.number + 1);
        } else {
            self.complete(call.parent, held);
        }
    }

    /// The worker is done with a request (and its calls, if any): it commits a write where the
    /// data lives, stores the key's result, answers, and takes the next request.
    #[inline]
    fn complete(&mut self, key: Key, held: Held) {
        let (id, now) = (held.service, self.now);
        self.let_go(held);
        self.service(id).ended(now, key, true, !held.caller_waiting);
        self.answer_served(key, id, held.operation, held.status_check);
        self.dispatch(id);
    }

    /// A request was served: the service commits a write where the data lives, stores the
    /// key's result and answers (a status check with what it knows).
    fn answer_served(&mut self, key: Key, id: ServiceId, operation_key: Key, status_check: bool) {
        let now = self.now;
        // An error after the work is counted as an error, not as served.
        let error = if status_check {
            None
        } else {
            self.error_after_service(key, id)
        };
        let service = self.service(id);
        if error.is_some() {
            service.counts(now).errors += 1;
        } else {
            service.counts(now).served += 1;
        }
        service.health.served();
        let operation = self.operations.get(operation_key).expect("live operation");
        let (logical, endpoint) = (self.logical(operation_key, operation), operation.endpoint);
        let reply = if status_check {
            let pending = operation.in_service > 0;
            let writes = self.operations.get(logical).expect("live operation").writes;
            if writes > 0 {
                Reply::Committed
            } else if pending || self.key_store(id).key_state(logical) == KeyState::InFlight {
                Reply::StillPending
            } else {
                Reply::NotFound
            }
        } else {
            if let Some(errors) = error
                && !errors.committed
            {
                // Nothing was written: the key is forgotten, as for any request that does not
                // complete.
                self.leave_service(key);
                return self.reply(key, Reply::Error(errors.status));
            }
            self.operations
                .get_mut(operation_key)
                .expect("live operation")
                .in_service -= 1;
            self.commit_write(id, operation_key);
            let endpoint = &self.model.users.endpoints[usize::from(endpoint)];
            if endpoint.idempotency_key && self.services[usize::from(id)].model.keeps_keys {
                for waiter in self.key_store(id).complete_key(now, logical) {
                    self.service(id).counts(now).replayed += 1;
                    self.reply(waiter, Reply::Ok);
                }
            }
            error.map_or(Reply::Ok, |errors| Reply::Error(errors.status))
        };
        self.reply(key, reply);
    }

    /// The injected error that request `key` drew as it reached service `id`, if it is
    /// answered after the work (`errors.at = "after-service"`).
    fn error_after_service(&self, key: Key, id: ServiceId) -> Option<Errors> {
        let service = &self.services[usize::from(id)];
        service
            .model
            .errors
            .filter(|errors| errors.at == ErrorsAt::AfterService)?;
        let draws = self.keyed.draws(Draw::Error, self.drawn(key).identity());
        service.injected_error(draws, ErrorsAt::AfterService)
    }

    /// Where the data lives (a service that calls no other for its operation), a served request of a
    /// non-idempotent endpoint commits a write: its logical operation has written once more,
    /// and the service tells whether that is a duplicate (of its intent, when users retry by
    /// hand: [`super::manual`]).
    fn commit_write(&mut self, id: ServiceId, operation_key: Key) {
        let now = self.now;
        let operation = self.operations.get(operation_key).expect("live operation");
        let (logical, index) = (self.logical(operation_key, operation), operation.endpoint);
        if self.model.users.endpoints[usize::from(index)].idempotent_method {
            return;
        }
        let model = self.services[usize::from(id)].model;
        let route = model.route_of(operation.endpoint);
        if !model.routes[usize::from(route)].calls.is_empty() {
            return;
        }
        self.operations
            .get_mut(logical)
            .expect("live operation")
            .writes += 1;
        self.service(id).counts(now).writes += 1;
        // A user who pressed again may be charged twice whatever keys the presses carried.
        let intent = self.intent_of(logical);
        if self.store(id).record_write(intent) {
            self.recorder.duplicate_write(now, index);
            self.service(id).counts(now).duplicate_writes += 1;
        }
    }

    /// The run stops when the last operation has ended, but a worker still doing a write whose
    /// caller gave up would finish it: those writes are committed as the run stops, in its last
    /// bucket, so that the duplicate-write count is exact. A write to an optimistic row
    /// commits only if no write has changed the row since it was read, as it would have.
    pub(super) fn commit_writes_in_service(&mut self) {
        let in_service = self.requests_in_sending_order(|attempt| {
            !attempt.status_check && matches!(attempt.stage, Stage::InService | Stage::Writing)
        });
        for key in in_service {
            let attempt = self.attempts.get(key).expect("listed above");
            let (id, operation_key) = (attempt.service, attempt.operation);
            if self
                .error_after_service(key, id)
                .is_some_and(|errors| !errors.committed)
            {
                continue;
            }
            let optimistic = self.services[usize::from(id)]
                .model
                .optimistic_row
                .is_some();
            if !optimistic || self.service(id).write_row(key) {
                self.commit_write(id, operation_key);
            }
        }
    }

    /// A downstream call failed for good: the service answers its failure status.
    fn fail_request(&mut self, key: Key, held: Held) {
        let (id, now) = (held.service, self.now);
        self.let_go(held);
        let service = self.service(id);
        service.counts(now).downstream_failures += 1;
        service.ended(now, key, true, !held.caller_waiting);
        self.leave_service(key);
        let status = self.services[usize::from(id)].model.failure_status;
        self.reply(key, Reply::Error(status));
        self.dispatch(id);
    }

    /// Starts queued requests while workers are free.
    #[inline]
    fn dispatch(&mut self, id: ServiceId) {
        let now = self.now;
        if let Some(done) = self.service(id).pay_rejection_debt(now) {
            self.events.push(done, Event::RejectionWorkDone(id));
        }
        let model = self.services[usize::from(id)].model;
        while let Some(next) = self.service(id).next_queued(now) {
            match next {
                Dequeued::Serve(key) => {
                    let attempt = self.attempts.get(key).expect("queued attempts are live");
                    let expired = model.drop_expired && now >= attempt.gives_up;
                    let cancelled = model.cancellation && !self.awaiting.contains(key);
                    if model.deadline_check == Some(DeadlineCheck::Dequeue)
                        && !expired
                        && !cancelled
                        && now >= self.deadline_of(key)
                    {
                        self.service(id).ended(now, key, false, true);
                        self.leave_service(key);
                        self.refuse_expired(key, id);
                    } else if expired || cancelled {
                        let counts = self.service(id).counts(now);
                        if expired {
                            counts.dropped_expired += 1;
                        } else {
                            counts.cancelled += 1;
                        }
                        self.service(id).ended(now, key, false, true);
                        self.leave_service(key);
                        self.drop_request(key);
                    } else {
                        self.start_work(key);
                    }
                }
                Dequeued::Shed(key) => {
                    // The discipline sheds it: answered at once as an overload.
                    self.service(id).counts(now).shed += 1;
                    self.service(id).ended(now, key, false, true);
                    self.leave_service(key);
                    self.charge(id, RejectionKind::Shed);
                    self.reply(
                        key,
                        Reply::Overloaded {
                            retry_after: model.retry_after,
                        },
                    );
                }
            }
        }
        self.watch_load(id);
    }

    /// A request leaves the queue or a worker without being served.
    fn leave_service(&mut self, key: Key) {
        let attempt = self.attempts.get(key).expect("live attempt");
        if !attempt.status_check {
            let operation = attempt.operation;
            self.operations
                .get_mut(operation)
                .expect("live operation")
                .in_service -= 1;
        }
        self.abandon_key(key);
    }

    /// The request holding its operation's key in flight will not complete: the service
    /// forgets the key and the repeats that waited for it try again.
    fn abandon_key(&mut self, key: Key) {
        let attempt = self.attempts.get(key).expect("live attempt");
        if attempt.status_check {
            return;
        }
        let (id, operation_key) = (attempt.service, attempt.operation);
        let operation = self.operations.get(operation_key).expect("live operation");
        if !self.model.users.endpoints[usize::from(operation.endpoint)].idempotency_key
            || !self.services[usize::from(id)].model.keeps_keys
        {
            return;
        }
        let logical = self.logical(operation_key, operation);
        for waiter in self.key_store(id).abandon_key(logical) {
            self.reach_again(waiter);
        }
    }

    /// A repeat that waited on a key whose holder was abandoned is judged afresh.
    fn reach_again(&mut self, key: Key) {
        let attempt = self.attempts.get(key).expect("waiting attempts are live");
        let (id, operation_key) = (attempt.service, attempt.operation);
        let operation = self.operations.get(operation_key).expect("live operation");
        let logical = self.logical(operation_key, operation);
        let service = self.key_store(id);
        if service.key_state(logical) == KeyState::InFlight {
            service.wait_on_key(logical, key);
        } else {
            service.claim_key(logical);
            self.admit(key);
        }
    }

    /// The live requests that `select` picks, in the order they were sent.
    fn requests_in_sending_order(&self, select: impl Fn(&Attempt) -> bool) -> Vec<Key> {
        let mut keys: Vec<Key> = self
            .attempts
            .keys()
            .filter(|&key| self.attempts.get(key).is_some_and(&select))
            .collect();
        self.in_sending_order(&mut keys);
        keys
    }

    /// Puts requests in the order they were sent, those sent at one instant in the order of
    /// their identities: an order that no slab slot and no event order at equal times affects.
    fn in_sending_order(&self, keys: &mut [Key]) {
        keys.sort_unstable_by_key(|&key| {
            let attempt = self.attempts.get(key).expect("requests to order are live");
            let identity = self.drawn(key).identity();
            (attempt.sent, identity.call, identity.part)
        });
    }

    /// The service lets go of a request without answering.
    fn drop_request(&mut self, key: Key) {
        self.attempts
            .get_mut(key)
            .expect("live attempt")
            .server_holds = false;
        self.release_attempt(key);
    }

    /// The service answers; the network may lose the answer.
    ///
    /// A user's answer that will arrive before the attempt times out and before the run's end
    /// is learned at once, at the time it arrives, rather than as an event of its own, when
    /// nothing that happens before it arrives can change what the user makes of it (see
    /// `Engine::learn_successes_early` and `Engine::learn_failures_early`): the user's counts,
    /// the operation's end, or the retry it schedules for later are what they would have been,
    /// and nothing any other event sees before then changes. Every draw is addressed by its
    /// request, so learning early moves none.
    fn reply(&mut self, key: Key, reply: Reply) {
        let attempt = self.attempts.get_mut(key).expect("live attempt");
        attempt.reply = reply;
        attempt.stage = Stage::Responding;
        let (user, status_check, gives_up) =
            (attempt.from_user, attempt.status_check, attempt.gives_up);
        let drawn = self.drawn(key);
        let Some(arrives) = self.arrives(
            drawn.link,
            Leg::Response,
            drawn.identity(),
            drawn.response(),
            self.now,
        ) else {
            return self.drop_request(key);
        };
        let learn_early = if reply == Reply::Ok {
            self.learn_successes_early
        } else {
            self.learn_failures_early
        };
        if learn_early
            && user
            && !status_check
            && arrives < gives_up
            && arrives < self.model.duration
        {
            let now = std::mem::replace(&mut self.now, arrives);
            self.response(key);
            self.now = now;
            return;
        }
        self.lanes
            .push_message(&mut self.events, drawn.link, arrives, Event::Response(key));
    }

    pub(super) fn capacity_change(&mut self, id: ServiceId) {
        let now = self.now;
        let (crashed, next) = self.service(id).update_capacity(now);
        if crashed {
            self.crash(id);
        }
        if let Some(next) = next {
            self.events.push(next, Event::Capacity(id));
        }
        self.dispatch(id);
    }

    /// Every queued and in-service request is reset at once, and so is every repeat waiting
    /// on an idempotency key. Downstream calls of reset requests run on; their answers find no
    /// one waiting. Keys kept in the service's memory (`idempotency_store = "in-memory"`) are
    /// lost with it.
    fn crash(&mut self, id: ServiceId) {
        let now = self.now;
        let (mut waiters, mut victims) = self.service(id).take_all_waiting();
        self.in_sending_order(&mut waiters);
        for key in waiters {
            self.service(id).counts(now).resets += 1;
            self.reply(key, Reply::Reset);
        }
        victims.extend(self.requests_in_sending_order(|attempt| {
            attempt.service == id && matches!(attempt.stage, Stage::InService | Stage::Forwarding)
        }));
        for key in victims {
            let attempt = self.attempts.get(key).expect("a victim is live");
            match attempt.stage {
                Stage::InService => {
                    let start = attempt.service_start;
                    self.service(id).release_worker_after(now, start, true);
                }
                Stage::Forwarding => self.service(id).forwarded_back(),
                _ => {}
            }
            self.service(id).counts(now).resets += 1;
            self.leave_service(key);
            self.reply(key, Reply::Reset);
        }
        if self.service(id).model.idempotency_store == IdempotencyStore::InMemory {
            self.key_store(id).forget_keys();
        }
    }
}
