//! The attempts whose callers still wait for them, in a table of their own.
//!
//! Every attempt arms a timer when it is sent, and nearly every timer fires after its attempt
//! was answered: on the large benchmark a fifth of all events were such timers. Whether the
//! caller still waits is all a timer needs to know, and the attempt's own record, sent a whole
//! timeout ago and scattered over megabytes of slab, is cold by then. So the answer is kept
//! apart, eight bytes per attempt slot in one dense table that stays in the cache, and a timer
//! whose attempt was answered is dropped without reading the record.

use crate::base::slab::Key;

/// Per attempt slot: the generation of the attempt in it that its caller awaits, or [`NONE`].
#[derive(Debug, Default)]
pub(super) struct Awaiting {
    generations: Vec<u64>,
}

/// No attempt of this slot is awaited: no generation (a `u32`) is this.
const NONE: u64 = u64::MAX;

impl Awaiting {
    /// The caller of the attempt at `key`, just sent, waits for it.
    #[inline]
    pub(super) fn start(&mut self, key: Key) {
        let slot = key.slot as usize;
        if slot >= self.generations.len() {
            self.generations.resize(slot + 1, NONE);
        }
        self.generations[slot] = u64::from(key.generation);
    }

    /// Whether the caller of the attempt at `key` still waits for it.
    #[inline]
    pub(super) fn contains(&self, key: Key) -> bool {
        self.generations.get(key.slot as usize) == Some(&u64::from(key.generation))
    }

    /// The caller of the attempt at `key` stops waiting for it; false if it already had.
    #[inline]
    pub(super) fn stop(&mut self, key: Key) -> bool {
        let waited = self.contains(key);
        if waited {
            self.generations[key.slot as usize] = NONE;
        }
        waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_awaits_only_its_current_attempt() {
        let mut awaiting = Awaiting::default();
        let first = Key {
            slot: 3,
            generation: 7,
        };
        let next = Key {
            slot: 3,
            generation: 8,
        };
        assert!(!awaiting.contains(first), "nothing is awaited at first");
        awaiting.start(first);
        assert!(awaiting.contains(first));
        assert!(!awaiting.contains(next));
        assert!(awaiting.stop(first));
        assert!(!awaiting.stop(first), "a caller stops waiting once");
        awaiting.start(next);
        assert!(
            !awaiting.contains(first),
            "a stale timer finds its slot's next tenant"
        );
        assert!(awaiting.contains(next));
    }
}
