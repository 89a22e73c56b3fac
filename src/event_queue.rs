//! The event queue: events pop in (time, insertion sequence) order.
//!
//! Two events at the same microsecond pop in the order they were scheduled, so a run never
//! depends on how a heap breaks ties, and the same scenario and seed give the same event order
//! on every machine. The key packs time and sequence into one `u128` so that a comparison is a
//! single integer compare.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::time::Micros;

/// A min-queue of events keyed by (time, insertion sequence).
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    next_sequence: u64,
}

#[derive(Debug)]
struct Entry<E> {
    key: u128,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            next_sequence: 0,
        }
    }
}

impl<E> EventQueue<E> {
    /// Schedules `event` at `time`.
    #[inline]
    pub fn push(&mut self, time: Micros, event: E) {
        let key = (u128::from(time) << 64) | u128::from(self.next_sequence);
        self.next_sequence += 1;
        self.heap.push(Reverse(Entry { key, event }));
    }

    /// The earliest event and its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Micros, E)> {
        self.heap
            .pop()
            .map(|Reverse(entry)| ((entry.key >> 64) as Micros, entry.event))
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_by_insertion() {
        let mut queue = EventQueue::default();
        for (time, name) in [(5, "a"), (1, "b"), (5, "c"), (0, "d"), (1, "e"), (5, "f")] {
            queue.push(time, name);
        }
        let order: Vec<_> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(
            order,
            [(0, "d"), (1, "b"), (1, "e"), (5, "a"), (5, "c"), (5, "f")]
        );
    }

    #[test]
    fn times_near_the_top_of_the_range_keep_their_order() {
        let mut queue = EventQueue::default();
        queue.push(u64::MAX, 1);
        queue.push(u64::MAX - 1, 2);
        queue.push(u64::MAX, 3);
        assert_eq!(queue.pop(), Some((u64::MAX - 1, 2)));
        assert_eq!(queue.pop(), Some((u64::MAX, 1)));
        assert_eq!(queue.pop(), Some((u64::MAX, 3)));
        assert!(queue.is_empty());
    }
}
