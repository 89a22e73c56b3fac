//! What is certain ahead of its time, handled then and not as an event of its own.
//!
//! Every draw is addressed by its request ([`crate::base::random`]), so handling a step early
//! moves no draw of any other request: results are those of handling every step as an event,
//! and only the events are fewer. Three steps are certain ahead of their time:
//!
//! - **A refusal during a scheduled outage.** A service that its capacity curve has down from
//!   the moment a request is sent until the moment it reaches it, and that no overload can
//!   crash meanwhile, refuses the request whatever else happens: the refusal is handled as
//!   the request is sent, at the time it reaches ([`Engine::send`]).
//! - **A user's answer.** What a user makes of an answer (its counts, the end of its
//!   operation, or a retry scheduled for later) depends on nothing that can happen while the
//!   answer travels, for users that start operations on their own schedule with no control or
//!   hedge watching and no one hearing attempts in order: the answer is learned as it is sent,
//!   at the time it arrives (`Engine::reply`).
//! - **A user's retry into the same outage.** When both hold for the retry a user has just
//!   decided (the outage refuses it, and the refusal comes back before the attempt times out),
//!   the retry is sent at once, at its time, rather than as an event: an operation's attempts
//!   through an outage are handled in one go while its record is in the cache
//!   ([`Engine::schedule_retry`]), at most [`MAX_RETRIES_AHEAD`] deep.
//!
//! A timer is armed only if it can still fire: an attempt whose answer is learned as it is sent
//! arms none.

use super::{Engine, Event, Observer, attempt_gives_up, request_identity};
use crate::base::distribution::Distribution;
use crate::base::random::{Draw, Identity, Random, RequestWords};
use crate::base::slab::Key;
use crate::base::time::Micros;
use crate::engine::service::Refusal;
use crate::model::{LinkId, USERS_LINK};

/// Which way a message travels.
#[derive(Debug, Clone, Copy)]
pub(super) enum Leg {
    /// A request, to its service.
    Request,
    /// A response, back to its caller.
    Response,
}

/// The most retries sent ahead in a row from one event: each is a few frames of the stack, and
/// a policy may allow thousands.
pub(super) const MAX_RETRIES_AHEAD: u8 = 16;

impl<O: Observer> Engine<'_, O> {
    /// When a message of request `identity` sent at `sent` on `leg` of `link` arrives
    /// (`first` is the first word of its latency, none if the latency is a constant, which
    /// draws nothing); `None` if the network loses it.
    #[inline(always)]
    pub(super) fn arrives(
        &self,
        link: LinkId,
        leg: Leg,
        identity: Identity,
        first: Option<u64>,
        sent: Micros,
    ) -> Option<Micros> {
        let network = &self.model.links[usize::from(link)];
        let (loss, probability, latency) = match leg {
            Leg::Request => (Draw::RequestLoss, network.request_loss, Draw::Request),
            Leg::Response => (Draw::ResponseLoss, network.response_loss, Draw::Response),
        };
        // Neither a loss of probability zero nor a constant latency draws: their draws are
        // not even set up.
        let probability = probability.get();
        if probability > 0.0 && self.keyed.draws(loss, identity).unit() < probability {
            return None;
        }
        Some(
            sent + match network.latency {
                Distribution::Constant(value) => value.0,
                ref distribution => {
                    distribution.sample(&mut self.keyed.draws_from(latency, identity, first))
                }
            },
        )
    }

    /// The first words of the draws of request `identity` on `link`, computed as it is sent
    /// if its latency draws: a constant latency draws nothing, and the words a request needs
    /// later (for a cache, or a retry decision) are then computed when it needs them.
    #[inline(always)]
    pub(super) fn request_words_at_send(
        &self,
        link: LinkId,
        identity: Identity,
    ) -> Option<RequestWords> {
        (!self.model.links[usize::from(link)].constant_latency())
            .then(|| self.keyed.request_words(identity))
    }

    /// Schedules the next attempt of the call at `key`, decided now, for `at`: sent at once,
    /// at its time, if it is a user's retry that its service will certainly refuse and whose
    /// refusal the user will learn as it is sent (see the module's docs), else as an event.
    pub(super) fn schedule_retry(&mut self, key: Key, at: Micros) {
        let entry = &self.services[usize::from(self.model.entry)];
        if self.retries_ahead_on
            && self.retries_ahead < MAX_RETRIES_AHEAD
            && entry.certain_refusal(at).is_some()
            && let Some(words) = self.refused_and_answered_in_time(key, at)
        {
            self.retries_ahead += 1;
            let now = std::mem::replace(&mut self.now, at);
            self.send_drawn(key, false, words);
            self.now = now;
            self.retries_ahead -= 1;
        } else {
            self.events.push(at, Event::Send(key));
        }
    }

    /// Whether the attempt the call at `key` will send at `at` is a user's request that its
    /// service will certainly refuse, with a refusal back before the attempt times out and
    /// before the run ends: the path [`Engine::send`] then takes to the end, arming no timer.
    /// If it is, the request's words, for the send to use rather than compute again (none for
    /// a constant latency, which needs none).
    fn refused_and_answered_in_time(&self, key: Key, at: Micros) -> Option<Option<RequestWords>> {
        let operation = self.operations.get(key).expect("a retrying call is live");
        if operation.downstream || operation.checking {
            return None;
        }
        let identity = request_identity(operation.id, operation.attempt, false);
        let words = self.request_words_at_send(USERS_LINK, identity);
        let first = words.map(RequestWords::request);
        let reaches = self.arrives(USERS_LINK, Leg::Request, identity, first, at)?;
        let entry = &self.services[usize::from(self.model.entry)];
        if !matches!(
            entry.certain_refusal(reaches),
            Some(Refusal::Reject | Refusal::Reset)
        ) {
            return None;
        }
        let first = words.map(RequestWords::response);
        let arrives = self.arrives(USERS_LINK, Leg::Response, identity, first, reaches)?;
        let gives_up = attempt_gives_up(&self.model.users.policy, operation.deadline, at);
        (arrives < gives_up && arrives < self.model.duration).then_some(words)
    }
}
