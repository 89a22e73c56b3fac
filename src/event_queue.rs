//! The event queue: events pop in (time, insertion sequence) order, fast.
//!
//! Two events at the same microsecond pop in the order they were scheduled, so a run never
//! depends on how a heap breaks ties, and the same scenario and seed give the same event order
//! on every machine. The key packs time and sequence into one `u128` so that a comparison is a
//! single integer compare.
//!
//! A plain binary heap of everything pending is correct but slow at scale: a million clients
//! keep a few hundred thousand events pending, the heap outgrows the caches, and popping from it
//! took three quarters of the run time. This is a calendar queue instead. Time is cut into
//! buckets of [`BUCKET_WIDTH`] microseconds. The next [`RING_BUCKETS`] buckets (about 8 s) are
//! vectors in a ring, appended to in O(1); when a bucket's turn comes its vector is sorted once,
//! by a counting sort on the microsecond within the bucket (a bucket of a few events, as most
//! are in a scenario of thousands of clients, by insertion), into descending order and drained
//! from the back; small drained vectors are kept for later buckets to reuse. An event scheduled
//! into the bucket being drained (most are, like the next arrival, a few microseconds ahead) is
//! inserted near the back, which is cheap. Anything further ahead than the ring waits in an
//! overflow heap until the ring reaches it. Events may not be scheduled before the last event
//! popped, which a discrete-event simulation never does.
//!
//! The ring needs no sequence numbers: a bucket's vector is filled in scheduling order (events
//! from the overflow arrive before any event scheduled directly into that bucket, and in
//! (time, sequence) order), so a *stable* sort by time alone yields (time, sequence) order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::time::Micros;

/// log2 of the width of a bucket in microseconds.
const BUCKET_SHIFT: u32 = 8;
/// Width of a bucket: 256 µs.
pub const BUCKET_WIDTH: Micros = 1 << BUCKET_SHIFT;
/// Buckets in the ring: 32 768 of 256 µs, about 8.4 s ahead.
pub const RING_BUCKETS: u64 = 1 << 15;
/// The most entries a bucket sorts by insertion rather than by counting.
const SMALL_BUCKET: usize = 24;
/// The largest bucket vector kept for reuse, in entries: larger ones would hold memory in every
/// sparse bucket they were reused for.
const SPARE_CAPACITY: usize = 64;
/// The most bucket vectors kept for reuse.
const MAX_SPARES: usize = 256;

/// A min-queue of events keyed by (time, insertion sequence).
#[derive(Debug)]
pub struct EventQueue<E> {
    /// Pending events of bucket `cursor`, by (time, sequence) descending: the next is last.
    current: Vec<Entry<E>>,
    /// Scratch space of the counting sort.
    sorted: Vec<Entry<E>>,
    /// Events of buckets `cursor + 1 .. cursor + RING_BUCKETS`, at `bucket % RING_BUCKETS`, in
    /// scheduling order.
    ring: Vec<Vec<Entry<E>>>,
    /// Events in `ring`.
    in_ring: usize,
    /// Emptied bucket vectors of at most [`SPARE_CAPACITY`] entries, for ring slots to reuse
    /// rather than allocate and grow anew: most buckets of a small scenario hold a handful of
    /// events, and allocating each one's vector cost a tenth of the run.
    spare: Vec<Vec<Entry<E>>>,
    /// Events of later buckets, keyed by (time, sequence).
    far: BinaryHeap<Reverse<FarEntry<E>>>,
    /// The bucket being drained.
    cursor: u64,
    next_sequence: u64,
}

#[derive(Debug, Clone, Copy)]
struct Entry<E> {
    time: Micros,
    event: E,
}

#[derive(Debug)]
struct FarEntry<E> {
    key: u128,
    event: E,
}

fn bucket_of(time: Micros) -> u64 {
    // Counted from 1, so that the queue starts before bucket 0's time: events scheduled before
    // the first pop (a million clients starting together at time zero) are appended to the
    // ring and sorted once, not inserted one by one into the current bucket.
    (time >> BUCKET_SHIFT) + 1
}

impl<E> PartialEq for FarEntry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for FarEntry<E> {}
impl<E> PartialOrd for FarEntry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for FarEntry<E> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            current: Vec::new(),
            sorted: Vec::new(),
            ring: (0..RING_BUCKETS).map(|_| Vec::new()).collect(),
            in_ring: 0,
            spare: Vec::new(),
            far: BinaryHeap::new(),
            cursor: 0,
            next_sequence: 0,
        }
    }
}

impl<E: Copy> EventQueue<E> {
    /// Schedules `event` at `time`, which must not be before the last event popped.
    #[inline]
    pub fn push(&mut self, time: Micros, event: E) {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let bucket = bucket_of(time);
        debug_assert!(bucket >= self.cursor, "an event scheduled in the past");
        if bucket - self.cursor >= RING_BUCKETS {
            let key = (u128::from(time) << 64) | u128::from(sequence);
            self.far.push(Reverse(FarEntry { key, event }));
        } else {
            self.place(Entry { time, event });
        }
    }

    /// Puts an entry of a bucket within the ring where it belongs.
    #[inline]
    fn place(&mut self, entry: Entry<E>) {
        let bucket = bucket_of(entry.time);
        if bucket <= self.cursor {
            // Before (popped after) every pending event of the same time: FIFO among equals.
            let position = self
                .current
                .partition_point(|pending| pending.time > entry.time);
            self.current.insert(position, entry);
        } else {
            let slot = &mut self.ring[(bucket % RING_BUCKETS) as usize];
            if slot.capacity() == 0
                && let Some(spare) = self.spare.pop()
            {
                *slot = spare;
            }
            slot.push(entry);
            self.in_ring += 1;
        }
    }

    /// The event `ahead` places behind the next one in the bucket being drained (0: the next),
    /// if the bucket holds that many: what the caller is about to handle, to prefetch for.
    #[inline]
    pub fn peek_ahead(&self, ahead: usize) -> Option<&E> {
        let index = self.current.len().checked_sub(ahead + 1)?;
        Some(&self.current[index].event)
    }

    /// The earliest event and its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Micros, E)> {
        loop {
            if let Some(entry) = self.current.pop() {
                return Some((entry.time, entry.event));
            }
            if !self.advance() {
                return None;
            }
        }
    }

    /// Moves the cursor to the next bucket, making it current. False when nothing is left.
    fn advance(&mut self) -> bool {
        if self.in_ring == 0 {
            // Nothing within the ring: jump straight to the overflow's first bucket.
            match self.far.peek() {
                Some(Reverse(entry)) => self.cursor = bucket_of((entry.key >> 64) as Micros) - 1,
                None => return false,
            }
        }
        self.cursor += 1;
        // The slot's vector becomes the current bucket (the slot starts afresh, so memory follows
        // the events pending, not the busiest bucket ever seen).
        let slot = (self.cursor % RING_BUCKETS) as usize;
        self.in_ring -= self.ring[slot].len();
        let drained = std::mem::replace(&mut self.current, std::mem::take(&mut self.ring[slot]));
        if drained.capacity() <= SPARE_CAPACITY
            && drained.capacity() > 0
            && self.spare.len() < MAX_SPARES
        {
            self.spare.push(drained);
        }
        // The ring now reaches one bucket further: bring in what the overflow holds for it, in
        // (time, sequence) order, before anything can be scheduled there directly.
        while let Some(Reverse(entry)) = self.far.peek() {
            let time = (entry.key >> 64) as Micros;
            if bucket_of(time) - self.cursor >= RING_BUCKETS {
                break;
            }
            let Reverse(entry) = self.far.pop().expect("peeked");
            let entry = Entry {
                time,
                event: entry.event,
            };
            if bucket_of(time) == self.cursor {
                self.current.push(entry);
            } else {
                self.place(entry);
            }
        }
        self.sort_current();
        true
    }

    /// Sorts the current bucket by (time, sequence) descending. Its vector is in scheduling
    /// order and every time lies in one bucket, so a counting sort on the microsecond within
    /// the bucket does it in linear time; walking the input backwards puts the later-scheduled
    /// of two equal times first.
    fn sort_current(&mut self) {
        if self.current.len() <= SMALL_BUCKET {
            // Too few for the counting sort's 256 counters to pay: an insertion sort, into the
            // same order (an entry moves before every earlier-scheduled one of its time, too).
            for index in 1..self.current.len() {
                let entry = self.current[index];
                let mut position = index;
                while position > 0 && self.current[position - 1].time <= entry.time {
                    self.current[position] = self.current[position - 1];
                    position -= 1;
                }
                self.current[position] = entry;
            }
            return;
        }
        let filler = self.current[0];
        let offset = |entry: &Entry<E>| (entry.time & (BUCKET_WIDTH - 1)) as usize;
        let mut next_position = [0usize; BUCKET_WIDTH as usize];
        for entry in &self.current {
            next_position[offset(entry)] += 1;
        }
        // Descending: the latest microsecond of the bucket comes first.
        let mut position = 0;
        for slot in next_position.iter_mut().rev() {
            let count = *slot;
            *slot = position;
            position += count;
        }
        self.sorted.clear();
        self.sorted.resize(self.current.len(), filler);
        for entry in self.current.iter().rev() {
            let slot = &mut next_position[offset(entry)];
            self.sorted[*slot] = *entry;
            *slot += 1;
        }
        std::mem::swap(&mut self.current, &mut self.sorted);
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.current.len() + self.in_ring + self.far.len()
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
    fn far_future_and_the_top_of_the_range() {
        let mut queue = EventQueue::default();
        queue.push(u64::MAX, 1);
        queue.push(u64::MAX - 1, 2);
        queue.push(u64::MAX, 3);
        queue.push(10 * RING_BUCKETS * BUCKET_WIDTH, 4);
        queue.push(7, 5);
        assert_eq!(queue.len(), 5);
        assert_eq!(queue.pop(), Some((7, 5)));
        assert_eq!(queue.pop(), Some((10 * RING_BUCKETS * BUCKET_WIDTH, 4)));
        assert_eq!(queue.pop(), Some((u64::MAX - 1, 2)));
        assert_eq!(queue.pop(), Some((u64::MAX, 1)));
        assert_eq!(queue.pop(), Some((u64::MAX, 3)));
        assert!(queue.is_empty());
        assert_eq!(queue.pop(), None);
    }

    /// Pops everything `pushes` schedule (each a burst at one time, by offset from the last
    /// event popped, then `pops` pops) and returns the order.
    fn replay(steps: &[(u64, usize, usize)]) -> Vec<(Micros, usize)> {
        let mut queue = EventQueue::default();
        let (mut now, mut name, mut popped) = (0, 0, Vec::new());
        for &(offset, burst, pops) in steps {
            for _ in 0..burst {
                queue.push(now + offset, name);
                name += 1;
            }
            for _ in 0..pops {
                if let Some((time, event)) = queue.pop() {
                    now = time;
                    popped.push((time, event));
                }
            }
        }
        popped.extend(std::iter::from_fn(|| queue.pop()));
        popped
    }

    proptest! {
        /// Many events at the same microsecond, in buckets both sorted by insertion (at most
        /// [`SMALL_BUCKET`]) and by counting, and vectors reused from the spares: still FIFO
        /// among equals.
        #[test]
        fn ties_pop_in_insertion_order(
            steps in prop::collection::vec((0u64..600, 1usize..40, 0usize..50), 1..200)
        ) {
            let popped = replay(&steps);
            let mut expected = popped.clone();
            expected.sort();
            prop_assert_eq!(popped, expected);
        }

        /// Against the obvious reference: sort everything by (time, insertion).
        #[test]
        fn matches_a_sorted_reference(
            steps in prop::collection::vec((any::<bool>(), 0u64..3 * RING_BUCKETS * BUCKET_WIDTH), 1..400)
        ) {
            let mut queue = EventQueue::default();
            let mut reference: Vec<(Micros, usize)> = Vec::new();
            let mut now = 0;
            for (index, (pop, offset)) in steps.into_iter().enumerate() {
                if pop {
                    reference.sort();
                    let expected = if reference.is_empty() { None } else { Some(reference.remove(0)) };
                    let popped = queue.pop();
                    prop_assert_eq!(popped, expected);
                    if let Some((time, _)) = popped {
                        now = time;
                    }
                } else {
                    // Mostly near, sometimes far, never in the past.
                    let time = now + if index % 5 == 0 { offset } else { offset % 2000 };
                    queue.push(time, index);
                    reference.push((time, index));
                }
            }
            reference.sort();
            let rest: Vec<_> = std::iter::from_fn(|| queue.pop()).collect();
            prop_assert_eq!(rest, reference);
        }
    }
}
