//! Users who retry by hand (a policy's `manual_retry`): an intent, and the operations its user
//! starts for it.
//!
//! An arrival is an *intent*: a person who wants one thing done. Its first operation starts as
//! any other. When the client gives up on it (a failure) or the user stops waiting for it (their
//! patience runs out), the user may start the same operation again after a think time: a new
//! operation, a new call to the client, whose retries stack on the first's and which no
//! client-side budget sees coming. An operation the user stopped waiting for goes on (its
//! retries, the server's work); when it ends, nobody hears it. The intent ends when the user
//! hears a success, or gives up for good.
//!
//! The intent's first operation holds what the presses share: it stays alive until every
//! operation of the intent has ended and no press is pending (each counts in its `live_calls`,
//! as a downstream call does), so that the services' records under it outlive them all. A press
//! that reuses the key is the first operation to the key store ([`Engine::key_holder`]); a press
//! with a key of its own is a new operation there. Either way a write is counted against the
//! intent ([`Engine::intent_of`]): a second committed write of one intent at one service is a
//! duplicate, the customer charged twice, whichever keys the writes carried.
//!
//! A press's number is its intent's first operation's with the press in bits 56 to 62 (a run's
//! operations are numbered below 2^56; the top bit names a service's calls), so that its draws
//! are its own and an intent's first operation draws as it would without presses. Whether a
//! user presses again, and after how long, is drawn for the intent and the press
//! ([`Draw::ManualRetry`]): it moves no other draw.

use super::{Engine, Event, Observer};
use crate::base::random::{Draw, Identity, Random};
use crate::base::slab::Key;

/// Where a press's number keeps the press (see the module's documentation).
const PRESS_SHIFT: u32 = 56;

/// What the engine keeps of a user operation's intent, at the operation's slot.
#[derive(Debug, Clone, Copy)]
pub(super) struct IntentSlot {
    /// The intent's first operation (the operation itself, for the first).
    root: Key,
    /// At the first operation's slot: the operation its user waits for; none while a press is
    /// pending, or once the intent has ended.
    waiting_on: Option<Key>,
    /// At the first operation's slot: the presses after the first so far.
    presses: u8,
}

impl<O: Observer> Engine<'_, O> {
    /// The operation whose key the user operation at `key` carries: itself, or, when presses
    /// reuse the key, its intent's first operation.
    #[inline]
    pub(super) fn key_holder(&self, key: Key) -> Key {
        match &self.model.users.manual_retry {
            Some(manual) if !manual.new_key => self.intents[key.slot as usize].root,
            _ => key,
        }
    }

    /// The intent of the user operation `logical` (a key holder), which its writes count
    /// against: its first operation, or itself when users do not retry by hand.
    #[inline]
    pub(super) fn intent_of(&self, logical: Key) -> Key {
        if self.model.users.manual_retry.is_some() {
            self.intents[logical.slot as usize].root
        } else {
            logical
        }
    }

    /// The user operation at `key`, just opened, begins an intent.
    pub(super) fn intent_started(&mut self, key: Key) {
        self.set_intent(
            key,
            IntentSlot {
                root: key,
                waiting_on: Some(key),
                presses: 0,
            },
        );
        self.recorder.intents().started += 1;
        self.arm_patience(key);
    }

    /// The user stops waiting for the operation at `key` if they still wait for it: they may
    /// press again. The operation goes on.
    pub(super) fn patience_over(&mut self, key: Key) {
        if self
            .operations
            .get(key)
            .is_none_or(|operation| operation.finished)
        {
            return;
        }
        let root = self.intents[key.slot as usize].root;
        let intent = &mut self.intents[root.slot as usize];
        if intent.waiting_on == Some(key) {
            intent.waiting_on = None;
            self.gave_up(root);
        }
    }

    /// The user operation at `key` ended (the client succeeded or gave up): its user hears it
    /// if they still wait for it, and either the intent ends or, after a failure, they may
    /// press again. Nobody hears an operation they stopped waiting for.
    pub(super) fn user_heard(&mut self, key: Key, succeeded: bool) {
        let root = self.intents[key.slot as usize].root;
        let intent = &mut self.intents[root.slot as usize];
        if intent.waiting_on != Some(key) {
            return;
        }
        intent.waiting_on = None;
        let on_failure = self
            .model
            .users
            .manual_retry
            .as_ref()
            .is_some_and(|manual| manual.on_failure);
        if succeeded {
            self.recorder.intents().succeeded += 1;
            self.think(root);
        } else if on_failure {
            self.gave_up(root);
        } else {
            self.think(root);
        }
    }

    /// The user of the intent begun by `root` gave up on an operation: with the probability
    /// and within the most presses, they press again after a drawn delay; else the intent
    /// ends without success.
    fn gave_up(&mut self, root: Key) {
        let manual = self
            .model
            .users
            .manual_retry
            .as_ref()
            .expect("only users who retry by hand give up");
        let presses = self.intents[root.slot as usize].presses;
        if presses < manual.max {
            let id = self
                .operations
                .get(root)
                .expect("an intent's first lives")
                .id;
            let mut draws = self.keyed.draws(
                Draw::ManualRetry,
                Identity {
                    call: id,
                    part: u32::from(presses),
                },
            );
            if draws.unit() < manual.probability {
                let delay = manual.delay.sample(&mut draws);
                self.intents[root.slot as usize].presses += 1;
                self.operations
                    .get_mut(root)
                    .expect("an intent's first lives")
                    .live_calls += 1;
                // The pending press keeps the run going.
                self.unfinished += 1;
                self.recorder.intents().manual_retries += 1;
                self.events.push(self.now + delay, Event::Press(root));
                return;
            }
        }
        self.think(root);
    }

    /// The user of the intent begun by `root` presses again: a new operation, of the same
    /// client and endpoint, sent as a first one.
    pub(super) fn press_again(&mut self, root: Key) {
        self.unfinished -= 1;
        let operation = self.operations.get(root).expect("an intent's first lives");
        let (client, endpoint, id) = (operation.client, operation.endpoint, operation.id);
        let presses = self.intents[root.slot as usize].presses;
        let key = self.open_operation(client, endpoint, id | u64::from(presses) << PRESS_SHIFT, 0);
        self.set_intent(
            key,
            IntentSlot {
                root,
                waiting_on: None,
                presses: 0,
            },
        );
        self.intents[root.slot as usize].waiting_on = Some(key);
        self.arm_patience(key);
        self.send_first(key, None);
    }

    /// The user operation at `key` was freed: if it was a press, its intent's first operation
    /// waits for one thing fewer, and goes too if that was the last.
    pub(super) fn intent_member_freed(&mut self, key: Key) {
        let root = self.intents[key.slot as usize].root;
        if root == key {
            return;
        }
        let first = self
            .operations
            .get_mut(root)
            .expect("an intent's first outlives its presses");
        first.live_calls -= 1;
        if first.is_done() {
            self.free_operation(root);
        }
    }

    /// The user of the operation at `key` stops waiting for it after their patience, if they
    /// have one.
    fn arm_patience(&mut self, key: Key) {
        let patience = self
            .model
            .users
            .manual_retry
            .as_ref()
            .and_then(|manual| manual.patience);
        if let Some(patience) = patience {
            self.events.push(self.now + patience, Event::Patience(key));
        }
    }

    fn set_intent(&mut self, key: Key, intent: IntentSlot) {
        let slot = key.slot as usize;
        if slot >= self.intents.len() {
            self.intents.resize(slot + 1, intent);
        }
        self.intents[slot] = intent;
    }
}
