//! The upstream's idempotency-key store: what a request carrying a key gets.
//!
//! Following the IETF Idempotency-Key draft (draft-ietf-httpapi-idempotency-key-header) and
//! Stripe's documentation of idempotent requests: the first request
//! with a key is processed; a repeat after it completed gets the stored result and writes
//! nothing; a repeat while the first is still being processed gets 409 Conflict (or, if so
//! configured, waits for it); a key older than its TTL is forgotten, so a late retry is
//! processed as new and writes again: a duplicate.
//!
//! In a simulation a key belongs to one logical operation, and no request with that key can
//! arrive once the operation has ended and none of its attempts is left in the network or the
//! upstream. So the engine keeps each key's state on its operation, and the store costs memory
//! only for what is in flight, however long the TTL.

use crate::base::time::Micros;

/// What the upstream remembers of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyState {
    /// No request with this key has been accepted (or its processing was abandoned).
    #[default]
    Unseen,
    /// A request with this key is queued or being served.
    InFlight,
    /// A request with this key completed at `at`; its result is stored.
    Completed {
        /// When the result was stored.
        at: Micros,
    },
}

/// What to do with a request that carries a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyVerdict {
    /// Process it: the key is new, or forgotten.
    Process,
    /// Answer with the stored result, without new work.
    Replay,
    /// Another request with the key is in flight.
    InFlight,
}

impl KeyState {
    /// The verdict for a request arriving at `now`, with keys kept for `ttl`.
    pub fn verdict(self, now: Micros, ttl: Micros) -> KeyVerdict {
        match self {
            KeyState::Unseen => KeyVerdict::Process,
            KeyState::InFlight => KeyVerdict::InFlight,
            KeyState::Completed { at } if now.saturating_sub(at) <= ttl => KeyVerdict::Replay,
            KeyState::Completed { .. } => KeyVerdict::Process,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_the_draft() {
        assert_eq!(KeyState::Unseen.verdict(5, 10), KeyVerdict::Process);
        assert_eq!(KeyState::InFlight.verdict(5, 10), KeyVerdict::InFlight);
        let done = KeyState::Completed { at: 100 };
        assert_eq!(done.verdict(110, 10), KeyVerdict::Replay);
        assert_eq!(
            done.verdict(111, 10),
            KeyVerdict::Process,
            "expired keys are forgotten"
        );
    }
}
