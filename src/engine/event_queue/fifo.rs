//! A lane's events, first in first out, kept small.
//!
//! A lane holds what the calendar would otherwise sort: on the large benchmark, over 800,000
//! attempt timeouts at once during an outage. So an entry is 24 bytes, as a calendar entry
//! without its sequence number would be: the time, the low 32 bits of the sequence, and the
//! event. The front's whole sequence is carried beside the entries: a lane's entries are in
//! sequence order and less than 2^32 schedulings apart (the lane refuses one that would not
//! be, and it goes to the calendar), so each next front's sequence is the last one's plus the
//! difference of their low bits.
//!
//! The entries live in blocks of [`BLOCK`]: a lane grows by a block, never by reallocating
//! itself, so it never holds a copy of itself, and the allocator is never asked for the tens of
//! megabytes it would keep resident afterwards. A lane that fits in one block (most of them,
//! most of the time) is that block alone, read from `head` and written at its end.

use std::collections::VecDeque;

use crate::base::time::Micros;

/// Entries per block: 12 KiB of the engine's events.
const BLOCK: usize = 512;

#[derive(Debug, Clone, Copy)]
struct Entry<E> {
    time: Micros,
    /// The low 32 bits of the sequence number.
    sequence: u32,
    event: E,
}

/// Events in (time, sequence) order, pushed at the back and taken from the front.
#[derive(Debug)]
pub(super) struct Fifo<E> {
    /// The block read from, the front at `head`; also written to while it is the only one.
    front: Vec<Entry<E>>,
    head: usize,
    /// Full blocks after the front one, oldest first.
    middle: VecDeque<Vec<Entry<E>>>,
    /// The block written to, once the front one is full.
    back: Vec<Entry<E>>,
    /// An emptied block, for the next one needed.
    spare: Vec<Entry<E>>,
    len: usize,
    /// The time and sequence of the last entry pushed.
    last_time: Micros,
    last_sequence: u64,
    /// The sequence of the front entry.
    front_sequence: u64,
}

impl<E> Default for Fifo<E> {
    fn default() -> Self {
        Fifo {
            front: Vec::new(),
            head: 0,
            middle: VecDeque::new(),
            back: Vec::new(),
            spare: Vec::new(),
            len: 0,
            last_time: 0,
            last_sequence: 0,
            front_sequence: 0,
        }
    }
}

impl<E: Copy> Fifo<E> {
    /// Whether an event at `time`, scheduled as number `sequence`, may join the lane: it is
    /// empty, or the event is not earlier than the last and close enough in sequence.
    #[inline]
    pub(super) fn accepts(&self, time: Micros, sequence: u64) -> bool {
        self.len == 0 || (self.last_time <= time && sequence - self.last_sequence < 1 << 32)
    }

    /// Appends an event that [`Fifo::accepts`] accepted.
    #[inline(always)]
    pub(super) fn push(&mut self, time: Micros, sequence: u64, event: E) {
        debug_assert!(self.accepts(time, sequence));
        let entry = Entry {
            time,
            sequence: sequence as u32,
            event,
        };
        if self.len == 0 {
            self.front_sequence = sequence;
        }
        let block = if self.back.is_empty() && self.front.len() < BLOCK {
            &mut self.front
        } else {
            if self.back.len() == BLOCK {
                self.shift_back();
            }
            &mut self.back
        };
        if block.capacity() == 0 {
            *block = if self.spare.capacity() == 0 {
                Vec::with_capacity(BLOCK)
            } else {
                std::mem::take(&mut self.spare)
            };
        }
        block.push(entry);
        self.len += 1;
        self.last_time = time;
        self.last_sequence = sequence;
    }

    /// The back block is full: it joins the middle ones, and an empty one takes its place.
    #[cold]
    fn shift_back(&mut self) {
        let full = std::mem::take(&mut self.back);
        self.middle.push_back(full);
    }

    /// The front's (time, sequence) key, time in the high 64 bits; `None` if the lane is empty.
    #[inline]
    pub(super) fn front_key(&self) -> Option<u128> {
        let entry = self.front.get(self.head)?;
        Some(u128::from(entry.time) << 64 | u128::from(self.front_sequence))
    }

    /// The front entry's time and event.
    #[inline]
    pub(super) fn front(&self) -> Option<(Micros, &E)> {
        let entry = self.front.get(self.head)?;
        Some((entry.time, &entry.event))
    }

    /// Takes the front entry: its time and event.
    #[inline]
    pub(super) fn pop(&mut self) -> Option<(Micros, E)> {
        let entry = *self.front.get(self.head)?;
        self.head += 1;
        self.len -= 1;
        if let Some(next) = self.front.get(self.head) {
            self.front_sequence += u64::from(next.sequence.wrapping_sub(entry.sequence));
        } else if self.len == 0 {
            // Empty: the front block starts again.
            self.head = 0;
            self.front.clear();
        } else {
            self.next_block();
            let next = self.front[0];
            self.front_sequence += u64::from(next.sequence.wrapping_sub(entry.sequence));
        }
        Some((entry.time, entry.event))
    }

    /// The front block is used up and more entries follow: the next block becomes the front,
    /// and this one the spare.
    #[cold]
    fn next_block(&mut self) {
        self.head = 0;
        let next = match self.middle.pop_front() {
            Some(next) => next,
            None => std::mem::take(&mut self.back),
        };
        let mut used = std::mem::replace(&mut self.front, next);
        used.clear();
        self.spare = used;
    }

    /// Events in the lane.
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Through the buffer's growth while it has wrapped around, and with sequences whose low
    /// bits wrap around too: entries come out in order, and the front's whole sequence follows
    /// exactly.
    #[test]
    fn fronts_keep_their_whole_sequence() {
        let mut fifo = Fifo::default();
        let first = (1u64 << 32) - 700;
        let sequence = |index: usize| first + 3 * index as u64;
        let (mut pushed, mut popped) = (0, 0);
        // Push three, pop two, over and over: the buffer wraps, then grows, again and again.
        while pushed < 20 * BLOCK {
            for _ in 0..3 {
                assert!(fifo.accepts(pushed as Micros, sequence(pushed)));
                fifo.push(pushed as Micros, sequence(pushed), pushed);
                pushed += 1;
            }
            for _ in 0..2 {
                assert_eq!(
                    fifo.front_key(),
                    Some(u128::from(popped as u64) << 64 | u128::from(sequence(popped)))
                );
                assert_eq!(fifo.pop(), Some((popped as Micros, popped)));
                popped += 1;
            }
        }
        assert!(!fifo.accepts(0, sequence(pushed)), "earlier than the last");
        assert!(
            !fifo.accepts(Micros::MAX, sequence(pushed) + (1 << 33)),
            "too far in sequence"
        );
        while popped < pushed {
            assert_eq!(
                fifo.front_key().map(|key| key as u64),
                Some(sequence(popped))
            );
            assert_eq!(fifo.pop(), Some((popped as Micros, popped)));
            popped += 1;
        }
        assert_eq!(fifo.front_key(), None);
        assert_eq!(fifo.pop(), None);
        assert_eq!(fifo.len(), 0);
        assert!(fifo.accepts(0, 0), "an empty lane takes anything");
    }
}
