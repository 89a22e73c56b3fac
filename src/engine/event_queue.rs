//! The event queue: events pop in (time, insertion sequence) order, fast.
//!
//! Two events at the same microsecond pop in the order they were scheduled, so a run never
//! depends on how a heap breaks ties, and the same scenario and seed give the same event order
//! on every machine. Every entry carries its time and its sequence number, and wherever it is
//! kept, the next event popped is the least (time, sequence) of all.
//!
//! A plain binary heap of everything pending is correct but slow at scale: a million clients
//! keep a few hundred thousand events pending, the heap outgrows the caches, and popping from it
//! took three quarters of the run time. So most events live in a calendar queue. Time is cut
//! into buckets of [`BUCKET_WIDTH`] microseconds. The next [`RING_BUCKETS`] buckets (about 8 s)
//! are vectors in a ring, appended to in O(1); when a bucket's turn comes its vector is sorted
//! once, by a counting sort on the microsecond within the bucket (a bucket of a few events, as
//! most are in a scenario of thousands of clients, by insertion), into descending order and
//! drained from the back; small drained vectors are kept for later buckets to reuse. An event
//! scheduled into the bucket being drained (a hop shorter than the bucket, say) goes into a
//! small heap beside it rather than into the middle of its vector, which would move half of a
//! busy bucket. Anything further ahead than the ring waits in an overflow heap until the ring
//! reaches it. Events may not be scheduled before the last event popped, which a discrete-event
//! simulation never does.
//!
//! Some events come in streams whose times never decrease in the order they are scheduled: the
//! next open-loop arrival, every attempt's timeout when the timeout is a constant, every hop of
//! a constant network latency. Those are a fifth to a half of all events, and their timeouts are
//! the furthest ahead, in cold buckets. A caller may schedule such a stream into a *lane*
//! ([`EventQueue::push_in`]): a first-in first-out queue ([`fifo`]), appended to and popped from
//! its ends, never sorted. A lane is only a place, not a promise: an event earlier than its
//! lane's last goes to the calendar instead, so a lane is always in (time, sequence) order and
//! popping the least of the lanes' heads and the calendar's next gives exactly the order one
//! heap would. The calendar is not even moved on while a lane's event is next: it moves only
//! to its own events, skipping the buckets between them (a bit per bucket says which hold
//! any), however long a stretch only lanes fill.
//!
//! Within a ring bucket no sort by sequence is needed: a bucket's vector is filled in scheduling
//! order (events from the overflow arrive before any event scheduled directly into that bucket,
//! and in (time, sequence) order), so a *stable* sort by time alone yields (time, sequence)
//! order. An entry there keeps its microsecond within the bucket rather than its whole time,
//! which the bucket gives: 24 bytes rather than 32, and the ring holds most pending events.

mod fifo;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::base::time::Micros;
use fifo::Fifo;

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

/// A lane of an [`EventQueue`], as [`EventQueue::add_lane`] returned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane(u8);

/// A min-queue of events keyed by (time, insertion sequence).
#[derive(Debug)]
pub struct EventQueue<E> {
    /// Pending events of bucket `cursor` scheduled before it became current, by (time,
    /// sequence) descending: the next is last.
    current: Vec<BucketEntry<E>>,
    /// The time bucket `cursor` starts at: an entry of `current` is at this plus its offset.
    current_start: Micros,
    /// The key of `current`'s last entry, [`NONE`] if it is empty.
    current_next: u128,
    /// Pending events scheduled into bucket `cursor` (or before it) after it became current.
    near: BinaryHeap<Reverse<Entry<E>>>,
    /// The key of `near`'s least entry, [`NONE`] if it is empty.
    near_next: u128,
    /// Events of buckets `cursor + 1 .. cursor + RING_BUCKETS`, at `bucket % RING_BUCKETS`, in
    /// scheduling order.
    ring: Vec<Vec<BucketEntry<E>>>,
    /// Events in `ring`.
    in_ring: usize,
    /// One bit per ring slot: whether it holds events, so that empty buckets are skipped
    /// rather than visited (most are empty where lanes carry the steady streams).
    occupied: Vec<u64>,
    /// Emptied bucket vectors of at most [`SPARE_CAPACITY`] entries, for ring slots to take at
    /// their first event rather than allocate anew: most buckets of a small scenario hold a
    /// handful of events, and allocating each one's vector cost a tenth of the run.
    spare: Vec<Vec<BucketEntry<E>>>,
    /// Events of later buckets.
    far: BinaryHeap<Reverse<Entry<E>>>,
    /// Streams of events in (time, sequence) order, each popped from its front.
    lanes: Vec<Fifo<E>>,
    /// The key of each lane's front ([`NONE`] if it is empty), and which is least: what the
    /// calendar's next is compared with at every pop.
    lane_fronts: Vec<u128>,
    first_lane: usize,
    /// The bucket being drained.
    cursor: u64,
    /// The first bucket after the cursor that holds events in the ring or the overflow, or
    /// `u64::MAX`: where the calendar goes next.
    next_bucket: u64,
    next_sequence: u64,
}

/// An event and its key: time in the high 64 bits, sequence in the low, so that (time,
/// sequence) order is one integer comparison.
#[derive(Debug, Clone, Copy)]
struct Entry<E> {
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    #[inline]
    fn time(&self) -> Micros {
        (self.key >> 64) as Micros
    }
}

/// No event: above every key, since no sequence number reaches `u64::MAX`.
const NONE: u128 = u128::MAX;

fn bucket_of(time: Micros) -> u64 {
    // Counted from 1, so that the queue starts before bucket 0's time: events scheduled before
    // the first pop (a million clients starting together at time zero) are appended to the
    // ring and sorted once, not inserted one by one into the current bucket.
    (time >> BUCKET_SHIFT) + 1
}

/// An entry of a ring bucket: its time is the bucket's start plus `offset`, so that it takes
/// 24 bytes rather than an [`Entry`]'s 32 (a key of 128 bits is aligned to 16). The busy
/// buckets of a large scenario hold hundreds of entries, written when scheduled and read when
/// their turn comes, long after: a quarter less to move each way.
#[derive(Debug, Clone, Copy)]
struct BucketEntry<E> {
    sequence: u64,
    /// Microseconds after the bucket's start, below [`BUCKET_WIDTH`].
    offset: u32,
    event: E,
}

impl<E> BucketEntry<E> {
    /// The entry of `entry` in its bucket.
    #[inline]
    fn of(entry: Entry<E>) -> BucketEntry<E> {
        BucketEntry {
            sequence: entry.key as u64,
            offset: (entry.time() & (BUCKET_WIDTH - 1)) as u32,
            event: entry.event,
        }
    }

    /// Its (time, sequence) key, in the bucket starting at `start`.
    #[inline]
    fn key(&self, start: Micros) -> u128 {
        (u128::from(start + Micros::from(self.offset)) << 64) | u128::from(self.sequence)
    }
}

/// Sorts a bucket of a few entries, in scheduling order, by (time, sequence) descending: too
/// few for a counting sort's 256 counters to pay. An entry moves before every earlier-scheduled
/// one of its time, too.
fn sort_by_insertion<E: Copy>(bucket: &mut [BucketEntry<E>]) {
    for index in 1..bucket.len() {
        let entry = bucket[index];
        let mut position = index;
        while position > 0 && bucket[position - 1].offset <= entry.offset {
            bucket[position] = bucket[position - 1];
            position -= 1;
        }
        bucket[position] = entry;
    }
}

/// The time bucket `bucket` starts at (see [`bucket_of`]).
fn bucket_start(bucket: u64) -> Micros {
    (bucket - 1) << BUCKET_SHIFT
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
            current: Vec::new(),
            current_start: 0,
            current_next: NONE,
            near: BinaryHeap::new(),
            near_next: NONE,
            ring: (0..RING_BUCKETS).map(|_| Vec::new()).collect(),
            in_ring: 0,
            occupied: vec![0; (RING_BUCKETS / 64) as usize],
            spare: Vec::new(),
            far: BinaryHeap::new(),
            lanes: Vec::new(),
            lane_fronts: Vec::new(),
            first_lane: 0,
            cursor: 0,
            next_bucket: u64::MAX,
            next_sequence: 0,
        }
    }
}

impl<E: Copy> EventQueue<E> {
    /// A new lane, empty.
    pub fn add_lane(&mut self) -> Lane {
        let lane = Lane(u8::try_from(self.lanes.len()).expect("fewer than 256 lanes"));
        self.lanes.push(Fifo::default());
        self.lane_fronts.push(NONE);
        lane
    }

    /// Schedules `event` at `time`, which must not be before the last event popped.
    #[inline]
    pub fn push(&mut self, time: Micros, event: E) {
        let entry = self.entry(time, event);
        self.schedule(entry);
    }

    /// Schedules `event` at `time` in `lane` if no event of the lane is later, else as
    /// [`EventQueue::push`] does: the same order either way, and cheaper in the lane.
    #[inline(always)]
    pub fn push_in(&mut self, lane: Lane, time: Micros, event: E) {
        let entry = self.entry(time, event);
        let sequence = entry.key as u64;
        let index = usize::from(lane.0);
        let queue = &mut self.lanes[index];
        if !queue.accepts(time, sequence) {
            return self.schedule(entry);
        }
        let was_empty = queue.len() == 0;
        queue.push(time, sequence, event);
        if was_empty {
            self.lane_fronts[index] = entry.key;
            if entry.key < self.lane_fronts[self.first_lane] {
                self.first_lane = index;
            }
        }
    }

    #[inline(always)]
    fn entry(&mut self, time: Micros, event: E) -> Entry<E> {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        debug_assert!(
            bucket_of(time) >= self.cursor,
            "an event scheduled in the past"
        );
        Entry {
            key: (u128::from(time) << 64) | u128::from(sequence),
            event,
        }
    }

    /// Puts an entry in the calendar: the current bucket's heap, the ring, or the overflow.
    #[inline]
    fn schedule(&mut self, entry: Entry<E>) {
        let bucket = bucket_of(entry.time());
        if bucket - self.cursor >= RING_BUCKETS {
            self.next_bucket = self.next_bucket.min(bucket);
            self.far.push(Reverse(entry));
        } else {
            self.place(entry);
        }
    }

    /// Puts an entry of a bucket within the ring where it belongs.
    #[inline]
    fn place(&mut self, entry: Entry<E>) {
        let bucket = bucket_of(entry.time());
        if bucket <= self.cursor {
            self.near_next = self.near_next.min(entry.key);
            self.near.push(Reverse(entry));
        } else {
            let index = (bucket % RING_BUCKETS) as usize;
            self.occupied[index / 64] |= 1 << (index % 64);
            self.next_bucket = self.next_bucket.min(bucket);
            let slot = &mut self.ring[index];
            if slot.capacity() == 0
                && let Some(spare) = self.spare.pop()
            {
                *slot = spare;
            }
            slot.push(BucketEntry::of(entry));
            self.in_ring += 1;
        }
    }

    /// Keeps an emptied bucket vector for later buckets, if it is small and there is room
    /// among the spares.
    #[inline]
    fn recycle(&mut self, mut vector: Vec<BucketEntry<E>>) {
        if (1..=SPARE_CAPACITY).contains(&vector.capacity()) && self.spare.len() < MAX_SPARES {
            vector.clear();
            self.spare.push(vector);
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
        self.pop_dropping(|_, _| false)
    }

    /// The earliest event and its time, as [`EventQueue::pop`]; and when it comes from a lane,
    /// the events right behind it in that lane that `dead` calls dead are dropped, never
    /// returned (a lane of timers, most of them cancelled by then, is emptied of them in one go
    /// rather than one pop each). `dead` must call an event dead only if nothing would come of
    /// handling it: dropping it early changes nothing else, since the rest keep their order.
    #[inline]
    pub fn pop_dropping(&mut self, dead: impl FnMut(Micros, &E) -> bool) -> Option<(Micros, E)> {
        loop {
            let lane = self
                .lane_fronts
                .get(self.first_lane)
                .copied()
                .unwrap_or(NONE);
            let (current, near) = (self.current_next, self.near_next);
            let calendar = current.min(near);
            if lane < calendar {
                // Before anything of the current bucket. With the current bucket empty, the
                // calendar may still hold events before the lane's in a later bucket: it moves
                // on to the first of them. Else the lane's event is next and the calendar stays
                // where it is, however far behind: only the calendar's own events move it.
                if calendar == NONE && self.calendar_holds_by(bucket_of((lane >> 64) as Micros)) {
                    self.advance();
                    continue;
                }
                return Some(self.pop_lane(dead));
            } else if calendar == NONE {
                if !self.advance() {
                    return None;
                }
                continue;
            } else if current < near {
                let entry = self.current.pop().expect("its key was known");
                let start = self.current_start;
                self.current_next = self.current.last().map_or(NONE, |next| next.key(start));
                return Some((start + Micros::from(entry.offset), entry.event));
            } else {
                let Reverse(entry) = self.near.pop().expect("its key was known");
                self.near_next = self.near.peek().map_or(NONE, |Reverse(entry)| entry.key);
                return Some((entry.time(), entry.event));
            }
        }
    }

    /// Whether the ring or the overflow holds an event of a bucket after the cursor and not
    /// after `bucket`.
    #[inline]
    fn calendar_holds_by(&self, bucket: u64) -> bool {
        self.next_bucket <= bucket
    }

    /// Takes the front of the lane whose front is least, drops the dead events behind it, and
    /// finds the next least.
    #[inline]
    fn pop_lane(&mut self, mut dead: impl FnMut(Micros, &E) -> bool) -> (Micros, E) {
        let index = self.first_lane;
        let queue = &mut self.lanes[index];
        let (time, event) = queue.pop().expect("a lane's front is known");
        while let Some((time, event)) = queue.front()
            && dead(time, event)
        {
            queue.pop();
        }
        self.lane_fronts[index] = queue.front_key().unwrap_or(NONE);
        // Which lane is next is data, not a pattern: choose by masks rather than by branches.
        let (mut first, mut least) = (0, NONE);
        for (lane, &front) in self.lane_fronts.iter().enumerate() {
            let earlier = usize::from(front < least).wrapping_neg();
            first = (lane & earlier) | (first & !earlier);
            let earlier = earlier as u128 | (earlier as u128) << 64;
            least = (front & earlier) | (least & !earlier);
        }
        self.first_lane = first;
        (time, event)
    }

    /// Moves the cursor to the calendar's next bucket that holds anything, the ring's next
    /// occupied bucket or the overflow's first, and makes it current. False when the calendar
    /// is empty.
    fn advance(&mut self) -> bool {
        if self.next_bucket == u64::MAX {
            return false;
        }
        let target = self.next_bucket;
        debug_assert!(target > self.cursor, "the calendar moves forward");
        // Buckets skipped are empty, and the overflow holds nothing for them: it holds only
        // buckets a whole ring ahead of the cursor.
        self.cursor = target;
        // The slot's vector is taken and made the current bucket, sorted (the slot starts
        // afresh, so memory follows the events pending, not the busiest bucket ever seen).
        let slot = (self.cursor % RING_BUCKETS) as usize;
        self.in_ring -= self.ring[slot].len();
        self.occupied[slot / 64] &= !(1 << (slot % 64));
        let mut bucket = std::mem::take(&mut self.ring[slot]);
        // The ring now reaches further: bring in what the overflow holds for it, in
        // (time, sequence) order, before anything can be scheduled there directly.
        while let Some(Reverse(entry)) = self.far.peek() {
            if bucket_of(entry.time()) - self.cursor >= RING_BUCKETS {
                break;
            }
            let Reverse(entry) = self.far.pop().expect("peeked");
            if bucket_of(entry.time()) == self.cursor {
                bucket.push(BucketEntry::of(entry));
            } else {
                self.place(entry);
            }
        }
        self.next_bucket = match self.next_occupied() {
            Some(bucket) => bucket,
            None => self
                .far
                .peek()
                .map_or(u64::MAX, |Reverse(entry)| bucket_of(entry.time())),
        };
        self.make_current(bucket);
        self.current_start = bucket_start(self.cursor);
        let start = self.current_start;
        self.current_next = self.current.last().map_or(NONE, |next| next.key(start));
        true
    }

    /// The first bucket after the cursor whose ring slot holds events, if any does: a scan of
    /// the occupancy bits from the cursor's slot on, around the ring.
    #[inline]
    fn next_occupied(&self) -> Option<u64> {
        if self.in_ring == 0 {
            return None;
        }
        let end = self.cursor + RING_BUCKETS;
        let mut bucket = self.cursor + 1;
        while bucket < end {
            let slot = (bucket % RING_BUCKETS) as usize;
            // The bits of this slot and the slots after it in the same word.
            let word = self.occupied[slot / 64] >> (slot % 64);
            if word != 0 {
                let found = bucket + u64::from(word.trailing_zeros());
                return (found < end).then_some(found);
            }
            bucket += 64 - (slot % 64) as u64;
        }
        None
    }

    /// Makes `bucket`, in scheduling order, the current bucket, sorted by (time, sequence)
    /// descending; the vector left over is kept among the spares if it is small. The current
    /// bucket is empty here.
    fn make_current(&mut self, mut bucket: Vec<BucketEntry<E>>) {
        if bucket.len() <= SMALL_BUCKET && self.current.capacity() <= SPARE_CAPACITY {
            // A few events, as most buckets of a small scenario hold: sorted where they are.
            sort_by_insertion(&mut bucket);
            let emptied = std::mem::replace(&mut self.current, bucket);
            self.recycle(emptied);
            return;
        }
        // The current bucket's vector has grown to the busy buckets of a large scenario: it is
        // kept, and the bucket sorted into it.
        self.current.clear();
        if bucket.len() <= SMALL_BUCKET {
            self.current.extend_from_slice(&bucket);
            sort_by_insertion(&mut self.current);
        } else {
            self.sort_by_counting(&bucket);
        }
        self.recycle(bucket);
    }

    /// Sorts `bucket` into the empty current bucket. Every time lies in one bucket, so a
    /// counting sort on the microsecond within the bucket does it in linear time; walking the
    /// input backwards puts the later-scheduled of two equal times first.
    fn sort_by_counting(&mut self, bucket: &[BucketEntry<E>]) {
        let offset = |entry: &BucketEntry<E>| entry.offset as usize;
        let mut next_position = [0usize; BUCKET_WIDTH as usize];
        for entry in bucket {
            next_position[offset(entry)] += 1;
        }
        // Descending: the latest microsecond of the bucket comes first.
        let mut position = 0;
        for slot in next_position.iter_mut().rev() {
            let count = *slot;
            *slot = position;
            position += count;
        }
        self.current.resize(bucket.len(), bucket[0]);
        for entry in bucket.iter().rev() {
            let slot = &mut next_position[offset(entry)];
            self.current[*slot] = *entry;
            *slot += 1;
        }
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.current.len()
            + self.near.len()
            + self.in_ring
            + self.far.len()
            + self.lanes.iter().map(Fifo::len).sum::<usize>()
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

    /// The ring's entries of the engine's events (12 bytes, aligned to 4) take three quarters
    /// of the room of the entries that carry a whole key.
    #[test]
    fn a_bucket_entry_is_smaller_than_a_keyed_one() {
        assert_eq!(std::mem::size_of::<BucketEntry<[u32; 3]>>(), 24);
        assert_eq!(std::mem::size_of::<Entry<[u32; 3]>>(), 32);
    }

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

    /// An offset ahead of the present: within a bucket or two, within the ring, beyond it, or
    /// on its edge.
    fn offset() -> impl Strategy<Value = u64> {
        let ring = RING_BUCKETS * BUCKET_WIDTH;
        prop_oneof![
            0u64..2_000,
            0u64..ring + 20_000,
            0u64..3 * ring,
            prop::sample::select(vec![ring - BUCKET_WIDTH, ring - 1, ring, ring + 1]),
        ]
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

        /// Against the obvious reference, sort everything by (time, insertion): events pushed
        /// to the calendar near and far (beyond the ring, and on its edges), and into two lanes
        /// in order or not (a lane takes what is in order, the calendar the rest), with ties
        /// between them all; popped with a predicate that calls a third of the events dead, so
        /// that the queue may drop those (only those) and must return every other, in order.
        #[test]
        fn matches_a_sorted_reference(
            steps in prop::collection::vec((0u8..4, offset(), 0u64..3), 1..400)
        ) {
            let mut queue = EventQueue::default();
            let lanes = [queue.add_lane(), queue.add_lane()];
            let dead = |index: usize| index.is_multiple_of(3);
            let mut reference: Vec<(Micros, usize)> = Vec::new();
            let mut now = 0;
            // Takes the next event and checks it against the reference: only dead events may
            // have been skipped.
            let pop = |queue: &mut EventQueue<usize>, reference: &mut Vec<(Micros, usize)>| {
                reference.sort();
                let popped = queue.pop_dropping(|_, &index| dead(index));
                let skipped = match popped {
                    Some(next) => reference.iter().take_while(|&&entry| entry < next).count(),
                    None => reference.len(),
                };
                let all_dead = reference[..skipped].iter().all(|&(_, index)| dead(index));
                reference.drain(..skipped);
                if let Some(next) = popped {
                    assert_eq!(reference.first(), Some(&next));
                    reference.remove(0);
                }
                (popped, all_dead)
            };
            for (index, (action, offset, tie)) in steps.into_iter().enumerate() {
                // Times in few distinct microseconds, so that equal times are common.
                let time = now + offset - offset % 3 + tie;
                match action {
                    0 => {
                        let (popped, all_dead) = pop(&mut queue, &mut reference);
                        prop_assert!(all_dead, "a live event was skipped");
                        if let Some((time, _)) = popped {
                            now = time;
                        }
                        continue;
                    }
                    1 => queue.push(time, index),
                    lane => queue.push_in(lanes[usize::from(lane) - 2], time, index),
                }
                reference.push((time, index));
            }
            loop {
                let (popped, all_dead) = pop(&mut queue, &mut reference);
                prop_assert!(all_dead, "a live event was skipped");
                if popped.is_none() {
                    break;
                }
            }
            prop_assert!(reference.is_empty());
            prop_assert!(queue.is_empty());
        }
    }
}
