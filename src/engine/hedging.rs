//! Hedged calls (gRPC's hedging policy, gRFC A6): more attempts of one call in flight at once,
//! sent on a schedule rather than after a failure, the first success winning.
//!
//! The first attempt goes out as any other. Another follows every `delay` (an `Event::Hedge`
//! the call's [`HedgeState`] keeps current) while no attempt has succeeded, up to
//! `max_attempts`. An answer with a non-fatal status, a timeout or a reset sends the next
//! hedge at once (or after the service's Retry-After, read as gRPC pushback); later hedges
//! keep the `delay` spacing from there. A fatal status ends the call (`not-transient`); so does
//! the last failure with nothing left in flight (`max-attempts`, or `deadline-exhausted` once
//! the deadline has passed). When the call ends, the attempts still in flight are cancelled:
//! the caller stops waiting, and a service with `cancellation` stops their work. A hedge after
//! the first passes the caller's controls as a retry does (gRPC throttling: "every later hedge
//! needs tokens"); one they refuse ends the hedging, and the call if nothing is in flight.

use super::client::Heard;
use super::client::Passage;
use super::{AttemptRecord, Engine, Event, HedgeState, MAX_HEDGES, Observer};
use crate::base::slab::Key;
use crate::base::time::Micros;
use crate::model::HedgingModel;
use crate::retry::decision::StopReason;
use crate::vocabulary::outcome::{AttemptOutcome, FailureReason, NextStep};

impl<O: Observer> Engine<'_, O> {
    /// Makes the call at `key` a hedged one, before its first attempt.
    pub(super) fn start_hedging(&mut self, key: Key) {
        let slot = key.slot as usize;
        if slot >= self.hedges.len() {
            self.hedges.resize(slot + 1, HedgeState::EMPTY);
        }
        self.hedges[slot] = HedgeState::EMPTY;
        self.extras_mut(key).hedged = true;
    }

    /// After the first attempt went out: schedules the second.
    pub(super) fn first_hedge_sent(&mut self, key: Key, hedging: HedgingModel) {
        if self
            .operations
            .get(key)
            .is_some_and(|operation| !operation.finished)
        {
            self.schedule_hedge(key, self.now + hedging.delay, hedging);
        }
    }

    /// Records an attempt of a hedged call that went out.
    pub(super) fn hedge_sent(&mut self, key: Key, attempt: Key) {
        let state = &mut self.hedges[key.slot as usize];
        state.live[usize::from(state.count)] = attempt;
        state.count += 1;
    }

    /// The next hedge is due at `at`, if the call may send one.
    fn schedule_hedge(&mut self, key: Key, at: Micros, hedging: HedgingModel) {
        let operation = self.operations.get(key).expect("a hedged call is live");
        let state = &mut self.hedges[key.slot as usize];
        if operation.attempt >= hedging.max_attempts || at >= operation.deadline {
            state.next_at = Micros::MAX;
            return;
        }
        state.next_at = at;
        self.events.push(at, Event::Hedge(key));
    }

    /// An `Event::Hedge` fired: sends the hedge if it is still the one due.
    pub(super) fn hedge_due(&mut self, key: Key) {
        let Some(operation) = self.operations.get(key) else {
            return;
        };
        if operation.finished || self.hedges[key.slot as usize].next_at != self.now {
            return;
        }
        self.send_hedge(key);
    }

    /// Sends the next hedge through the caller's controls, and schedules the one after.
    fn send_hedge(&mut self, key: Key) {
        let now = self.now;
        let operation = self.operations.get(key).expect("a hedged call is live");
        let client = operation.client;
        let call = self.downstream_call(key, operation);
        let hedging = self.hedging_of(key);
        self.hedges[key.slot as usize].next_at = Micros::MAX;
        // A hedge is a retry to the controls.
        let retry_admitted = self.controls_of(call).admit_retry(now, client, false);
        let passage = match retry_admitted {
            Ok(()) => self.pass_controls(key, true),
            Err(kind) => Passage::Refused(FailureReason::Control(kind)),
        };
        match passage {
            Passage::Now => self.send(key, false),
            Passage::Held => {}
            Passage::Refused(reason) => return self.hedge_refused(key, reason),
        }
        self.schedule_hedge(key, now + hedging.delay, hedging);
    }

    /// A control refused a hedge: no more hedges; the call fails if nothing is in flight.
    fn hedge_refused(&mut self, key: Key, reason: FailureReason) {
        if self.hedges[key.slot as usize].count == 0 {
            self.fail(key, reason);
        }
    }

    /// The hedging policy of the call at `key`.
    fn hedging_of(&self, key: Key) -> HedgingModel {
        let operation = self.operations.get(key).expect("a hedged call is live");
        super::client::policy_of(self.model, self.downstream_call(key, operation))
            .hedging
            .expect("a hedged call has a hedging policy")
    }

    /// An attempt of a hedged call failed (`status`, or none for a timeout or reset; a
    /// Retry-After read as pushback): what the call does next.
    pub(super) fn hedge_failed(
        &mut self,
        key: Key,
        attempt: Key,
        status: Option<u16>,
        retry_after: Option<Micros>,
    ) -> (Option<Micros>, NextStep) {
        let hedging = self.hedging_of(key);
        let state = &mut self.hedges[key.slot as usize];
        state.remove(attempt);
        let in_flight = state.count;
        if status.is_some_and(|status| !hedging.non_fatal.contains(status)) {
            return self.fail(key, StopReason::NotTransient.into());
        }
        let operation = self.operations.get(key).expect("a hedged call is live");
        let (sent, deadline) = (operation.attempt, operation.deadline);
        if sent < hedging.max_attempts && self.now < deadline {
            let delay = retry_after.unwrap_or(0);
            if delay == 0 {
                self.send_hedge(key);
            } else {
                self.schedule_hedge(key, self.now + delay, hedging);
            }
            return (Some(delay), NextStep::Hedge);
        }
        if in_flight > 0 {
            return (None, NextStep::AwaitHedges);
        }
        let reason = if self.now >= deadline {
            StopReason::DeadlineExhausted
        } else {
            StopReason::MaxAttempts
        };
        self.fail(key, reason.into())
    }

    /// The attempts of a hedged call that ended still in flight: the caller stops waiting for
    /// them, and a service that supports it stops their work.
    pub(super) fn cancel_hedges(&mut self, key: Key) {
        let state = std::mem::replace(&mut self.hedges[key.slot as usize], HedgeState::EMPTY);
        for &attempt in &state.live[..usize::from(state.count).min(MAX_HEDGES)] {
            let Some(live) = self.attempts.get(attempt) else {
                continue;
            };
            let (service, index, sent, user) =
                (live.service, live.index, live.sent, live.from_user);
            if self.awaiting.stop(attempt) {
                self.stopped_waiting(attempt, service, Heard::Nothing);
            }
            if user && self.hears_attempts {
                let operation = self
                    .operations
                    .get(key)
                    .expect("a call outlives its hedges");
                self.observer.attempt(&AttemptRecord {
                    client: operation.client,
                    operation: operation.id,
                    attempt: u32::from(index),
                    send: sent,
                    end: self.now,
                    outcome: AttemptOutcome::Cancelled,
                    status: None,
                    retry_after: None,
                    next_delay: None,
                    next: NextStep::CallEnded,
                });
            }
            self.release_attempt(attempt);
            if self.services[usize::from(service)].model.cancellation {
                self.cancel(attempt);
            }
        }
    }
}
