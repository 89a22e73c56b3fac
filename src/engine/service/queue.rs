//! Queue disciplines: in which order a service's waiting requests reach its workers, and which
//! it sheds instead.
//!
//! A request that finds every worker busy waits in its service's [`Queue`]. Whenever a worker
//! is free, the service calls [`Queue::pop`]: each call hands back either the request to serve
//! or one the discipline sheds, which the service answers at once with its overload status
//! before calling `pop` again. When the service crashes, [`Queue::drain`] takes every waiting
//! request, oldest first.
//!
//! # Why there are several disciplines
//!
//! - **FIFO** (first in, first out) is what most servers do, and what this simulator always
//!   did. It is fair and it sheds nothing, but under a standing queue it is the worst order:
//!   every request waits the whole length of the queue, so once that wait exceeds the clients'
//!   timeout, the workers spend their time on requests whose callers have already given up, and
//!   the callers' retries lengthen the queue further.
//! - **LIFO** (last in, first out) serves the newest request first. Under a standing queue the
//!   newest request is the one whose caller is most likely still waiting; the oldest ones time
//!   out in the queue instead of occupying a worker. The joemag1 queueing simulator
//!   (`github.com/joemag1/queueingsimulator`: FIFO or LIFO workers, timeouts, retries and an
//!   optional latency spike) showed the difference: under a standing queue, FIFO serves only
//!   requests that have already expired, while LIFO keeps serving fresh ones.
//! - **CoDel** ("controlled delay", K. Nichols and V. Jacobson; RFC 8289) is the active queue
//!   management of network routers, implemented in Linux's `include/net/codel_impl.h`. It tells
//!   a good queue (a burst that drains within an interval) from a bad one (a standing queue
//!   whose sojourn time never falls below a target) and sheds only the bad one, at a rate that
//!   rises with the square root of the number of sheds until the sojourn time falls below the
//!   target again. Requests take the place of packets.
//! - **Adaptive LIFO** with controlled delay is what Facebook's servers do (B. Maurer, "Fail at
//!   Scale: Reliability in the face of rapid change", ACM Queue 13(8), 2015). While the queue
//!   has been empty within the last N, it is a short burst: FIFO, and a request may wait up to
//!   N. Once it has not, the queue is standing: LIFO, so the freshest requests are served, and
//!   a request may wait only M. The article reports that M = 5 ms and N = 100 ms work broadly.
//!
//! # CoDel here
//!
//! The state machine is Linux's (`codel_should_drop` and `codel_dequeue`), with these
//! differences:
//!
//! - Linux's "nearly empty" test (`backlog <= mtu`, at most a packet's worth left) becomes: no
//!   other request waits after the one just taken.
//! - The sojourn time has been above target long enough when `now >= first_above_time`, as in
//!   RFC 8289; Linux tests `now > first_above_time`, which on its nanosecond clock hardly
//!   differs.
//! - The control law `t + interval / sqrt(count)` divides in `f64` and rounds to the nearest
//!   microsecond, halves away from zero. IEEE 754 rounds a square root, like a division,
//!   correctly, so the times are the same on every machine. Linux approximates `1 / sqrt(count)` in fixed point
//!   by Newton steps instead, so its drop times can differ from these by a little.
//! - No ECN: shedding is the only signal.
//! - Linux's dequeue drops packets in a loop and returns the first one it keeps. Here `pop`
//!   returns one request per call, so the loop stops at each shed: `pop` returns
//!   [`Dequeued::Shed`], remembers where the loop stopped, and the next `pop` resumes it. The
//!   service calls `pop` again at once, at the same time, so the sheds and the serve come out
//!   exactly as the Linux loop produces them. (Were the next call later, the loop would resume
//!   at that later time.)
//!
//! # Adaptive LIFO here
//!
//! The queue keeps `last_empty`, the last time it was empty: a push into an empty queue sets
//! it to the push's time, and so does a pop that empties the queue. A pop at `now` finds the
//! queue standing when `last_empty < now - interval`. Every waiting request arrived at or after
//! `last_empty`, so while the queue is not standing none has waited longer than `interval`:
//! the FIFO mode's limit never binds, and only the standing (LIFO) mode sheds. The allowed wait is judged when a worker
//! takes the request, from the state of the queue then (the article sets a request's timeout
//! when it is queued).

use std::collections::VecDeque;

use crate::base::slab::Key;
use crate::base::time::Micros;
use crate::model::overload::Discipline;

/// What the queue hands a free worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dequeued {
    /// Serve this request.
    Serve(Key),
    /// The discipline sheds this request: drop it unserved.
    Shed(Key),
}

/// A service's queue.
#[derive(Debug)]
pub struct Queue {
    inner: Inner,
}

/// The waiting requests and the discipline's state. FIFO and LIFO keep bare keys; the others
/// keep each request's enqueue time as well.
#[derive(Debug, PartialEq)]
enum Inner {
    /// Keys in arrival order, served from the front.
    Fifo(VecDeque<Key>),
    /// Keys in arrival order, served from the back.
    Lifo(VecDeque<Key>),
    /// Requests in arrival order, served from the front, and CoDel's variables.
    CoDel(CoDel),
    /// Requests in arrival order, served from either end, and `last_empty`.
    AdaptiveLifo(AdaptiveLifo),
}

/// A waiting request and when it joined the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Waiting {
    key: Key,
    enqueued: Micros,
}

impl Waiting {
    /// How long it has waited at `now`.
    #[inline]
    fn sojourn(self, now: Micros) -> Micros {
        now.saturating_sub(self.enqueued)
    }
}

/// Where the next [`Queue::pop`] resumes Linux's `codel_dequeue` after a shed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resume {
    /// No dequeue is under way: start one.
    Start,
    /// The shed that entered the dropping state: take the next request, judge it (for
    /// `first_above_time` only) and serve it.
    AfterFirstShed,
    /// A shed inside the dropping loop: take the next request and go on with the loop.
    DropLoop,
}

/// CoDel's requests and variables (Linux's `struct codel_vars`, without ECN and statistics).
#[derive(Debug, PartialEq)]
struct CoDel {
    entries: VecDeque<Waiting>,
    target: Micros,
    interval: Micros,
    /// When the sojourn time will have been above target for an interval; `None` while it is
    /// below (Linux's 0).
    first_above_time: Option<Micros>,
    /// When the next shed is due while dropping.
    drop_next: Micros,
    /// Sheds in the current (or last) dropping state, counted from where it started: 1, or
    /// the count reused from the state before.
    count: u64,
    /// `count` when the dropping state was last entered.
    lastcount: u64,
    /// Whether in the dropping state.
    dropping: bool,
    resume: Resume,
}

impl CoDel {
    fn new(target: Micros, interval: Micros) -> CoDel {
        CoDel {
            entries: VecDeque::new(),
            target,
            interval,
            first_above_time: None,
            drop_next: 0,
            count: 0,
            lastcount: 0,
            dropping: false,
            resume: Resume::Start,
        }
    }

    /// Linux's `codel_should_drop` for `entry`, just taken from the front (`None`: the queue
    /// was empty).
    fn should_drop(&mut self, entry: Option<Waiting>, now: Micros) -> bool {
        let Some(entry) = entry else {
            self.first_above_time = None;
            return false;
        };
        if entry.sojourn(now) < self.target || self.entries.is_empty() {
            // Below target, or nearly empty: it must stay above for a whole interval again.
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now.saturating_add(self.interval));
                false
            }
            Some(first_above_time) => now >= first_above_time,
        }
    }

    /// Linux's `codel_control_law`: `t + interval / sqrt(count)`, rounded to the nearest
    /// microsecond.
    fn control_law(&self, t: Micros) -> Micros {
        // Every caller has just set `count` to 1 or more; it stays far below 2^53, where the
        // conversion to f64 is exact.
        let step = (self.interval as f64 / (self.count.max(1) as f64).sqrt()).round();
        t.saturating_add(step as Micros)
    }

    fn pop(&mut self, now: Micros) -> Option<Dequeued> {
        match std::mem::replace(&mut self.resume, Resume::Start) {
            Resume::Start => self.dequeue(now),
            Resume::AfterFirstShed => {
                let next = self.entries.pop_front();
                // Linux judges the packet after the first drop but serves it whatever the
                // verdict; the verdict matters only for `first_above_time`.
                self.should_drop(next, now);
                next.map(|entry| Dequeued::Serve(entry.key))
            }
            Resume::DropLoop => {
                let next = self.entries.pop_front();
                if !self.should_drop(next, now) {
                    self.dropping = false;
                    return next.map(|entry| Dequeued::Serve(entry.key));
                }
                let entry = next.expect("should_drop is false when the queue was empty");
                self.drop_next = self.control_law(self.drop_next);
                Some(self.drop_loop(entry, now))
            }
        }
    }

    /// The head of Linux's `codel_dequeue`, up to its first drop or its return.
    fn dequeue(&mut self, now: Micros) -> Option<Dequeued> {
        let Some(entry) = self.entries.pop_front() else {
            self.dropping = false;
            return None;
        };
        let drop = self.should_drop(Some(entry), now);
        if self.dropping {
            if drop {
                return Some(self.drop_loop(entry, now));
            }
            // Sojourn time below target: leave the dropping state.
            self.dropping = false;
        } else if drop {
            self.dropping = true;
            // If the sojourn time went above target soon after the last dropping state ended,
            // start from the drop rate that controlled the queue then.
            let delta = self.count.saturating_sub(self.lastcount);
            let reuse_before = self
                .drop_next
                .saturating_add(self.interval.saturating_mul(16));
            self.count = if delta > 1 && now < reuse_before {
                delta
            } else {
                1
            };
            self.lastcount = self.count;
            self.drop_next = self.control_law(now);
            self.resume = Resume::AfterFirstShed;
            return Some(Dequeued::Shed(entry.key));
        }
        Some(Dequeued::Serve(entry.key))
    }

    /// One turn of Linux's loop `while dropping && now >= drop_next`, for `entry` while
    /// dropping: shed it if the next drop is due, else serve it.
    fn drop_loop(&mut self, entry: Waiting, now: Micros) -> Dequeued {
        if now >= self.drop_next {
            self.count = self.count.saturating_add(1);
            self.resume = Resume::DropLoop;
            Dequeued::Shed(entry.key)
        } else {
            Dequeued::Serve(entry.key)
        }
    }
}

/// Adaptive LIFO's requests and state.
#[derive(Debug, PartialEq)]
struct AdaptiveLifo {
    /// In arrival order.
    entries: VecDeque<Waiting>,
    /// M: the longest wait while the queue is standing.
    target: Micros,
    /// N: the window, and the longest wait otherwise.
    interval: Micros,
    /// The last time the queue was empty.
    last_empty: Micros,
}

impl AdaptiveLifo {
    fn new(target: Micros, interval: Micros) -> AdaptiveLifo {
        AdaptiveLifo {
            entries: VecDeque::new(),
            target,
            interval,
            last_empty: 0,
        }
    }

    fn push(&mut self, now: Micros, key: Key) {
        if self.entries.is_empty() {
            self.last_empty = now;
        }
        self.entries.push_back(Waiting { key, enqueued: now });
    }

    fn pop(&mut self, now: Micros) -> Option<Dequeued> {
        let standing = now
            .checked_sub(self.interval)
            .is_some_and(|since| self.last_empty < since);
        let (entry, allowed) = if standing {
            (self.entries.pop_back()?, self.target)
        } else {
            (self.entries.pop_front()?, self.interval)
        };
        if self.entries.is_empty() {
            self.last_empty = now;
        }
        Some(if entry.sojourn(now) > allowed {
            Dequeued::Shed(entry.key)
        } else {
            Dequeued::Serve(entry.key)
        })
    }
}

impl Queue {
    /// An empty queue with `discipline`.
    pub fn new(discipline: Discipline) -> Queue {
        let inner = match discipline {
            Discipline::Fifo => Inner::Fifo(VecDeque::new()),
            Discipline::Lifo => Inner::Lifo(VecDeque::new()),
            Discipline::CoDel { target, interval } => Inner::CoDel(CoDel::new(target, interval)),
            Discipline::AdaptiveLifo { target, interval } => {
                Inner::AdaptiveLifo(AdaptiveLifo::new(target, interval))
            }
        };
        Queue { inner }
    }

    /// Requests waiting.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.inner {
            Inner::Fifo(keys) | Inner::Lifo(keys) => keys.len(),
            Inner::CoDel(codel) => codel.entries.len(),
            Inner::AdaptiveLifo(adaptive) => adaptive.entries.len(),
        }
    }

    /// Whether none waits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A request joins the queue at `now`.
    #[inline]
    pub fn push(&mut self, now: Micros, key: Key) {
        match &mut self.inner {
            Inner::Fifo(keys) | Inner::Lifo(keys) => keys.push_back(key),
            Inner::CoDel(codel) => codel.entries.push_back(Waiting { key, enqueued: now }),
            Inner::AdaptiveLifo(adaptive) => adaptive.push(now, key),
        }
    }

    /// The next request for a worker free at `now`, or one the discipline sheds; `None` when
    /// the queue is empty. After a shed the worker is still free: call again.
    #[inline]
    pub fn pop(&mut self, now: Micros) -> Option<Dequeued> {
        match &mut self.inner {
            Inner::Fifo(keys) => keys.pop_front().map(Dequeued::Serve),
            Inner::Lifo(keys) => keys.pop_back().map(Dequeued::Serve),
            Inner::CoDel(codel) => codel.pop(now),
            Inner::AdaptiveLifo(adaptive) => adaptive.pop(now),
        }
    }

    /// Every request still waiting, in the order they arrived (a crash resets them), whatever
    /// the discipline. The discipline's state is reset as in a new queue: CoDel forgets its
    /// dropping state and counts, and adaptive LIFO's `last_empty` goes back to 0, which is
    /// never read before the next push into the now empty queue sets it to that push's time.
    pub fn drain(&mut self) -> Vec<Key> {
        match &mut self.inner {
            Inner::Fifo(keys) | Inner::Lifo(keys) => keys.drain(..).collect(),
            Inner::CoDel(codel) => {
                let keys = codel.entries.drain(..).map(|entry| entry.key).collect();
                *codel = CoDel::new(codel.target, codel.interval);
                keys
            }
            Inner::AdaptiveLifo(adaptive) => {
                let keys = adaptive.entries.drain(..).map(|entry| entry.key).collect();
                *adaptive = AdaptiveLifo::new(adaptive.target, adaptive.interval);
                keys
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::MICROS_PER_MS;
    use proptest::prelude::*;

    /// Milliseconds, in the queue's microseconds.
    const MS: Micros = MICROS_PER_MS;
    /// An hour: far longer than any target or interval.
    const HOUR: Micros = 3_600_000 * MS;

    fn key(slot: u32) -> Key {
        Key {
            slot,
            generation: 0,
        }
    }

    fn serve(slot: u32) -> Option<Dequeued> {
        Some(Dequeued::Serve(key(slot)))
    }

    fn shed(slot: u32) -> Option<Dequeued> {
        Some(Dequeued::Shed(key(slot)))
    }

    fn keys(slots: impl IntoIterator<Item = u32>) -> Vec<Key> {
        slots.into_iter().map(key).collect()
    }

    fn codel_state(queue: &Queue) -> &CoDel {
        match &queue.inner {
            Inner::CoDel(codel) => codel,
            other => panic!("not a CoDel queue: {other:?}"),
        }
    }

    fn last_empty(queue: &Queue) -> Micros {
        match &queue.inner {
            Inner::AdaptiveLifo(adaptive) => adaptive.last_empty,
            other => panic!("not an adaptive LIFO queue: {other:?}"),
        }
    }

    /// What a service does when a worker frees at `now`: pop until a request is served or the
    /// queue is empty, collecting the sheds on the way.
    fn dispatch(queue: &mut Queue, now: Micros) -> (Vec<Key>, Option<Key>) {
        let mut sheds = Vec::new();
        loop {
            match queue.pop(now) {
                Some(Dequeued::Shed(key)) => sheds.push(key),
                Some(Dequeued::Serve(key)) => return (sheds, Some(key)),
                None => return (sheds, None),
            }
        }
    }

    /// FIFO serves in arrival order (pop_front), never sheds however long a request waited,
    /// and keeps `len` exact.
    #[test]
    fn fifo_serves_oldest_first_and_never_sheds() {
        let mut queue = Queue::new(Discipline::Fifo);
        assert!(queue.is_empty());
        for slot in 0..3 {
            queue.push(u64::from(slot), key(slot));
        }
        assert_eq!(queue.len(), 3);
        assert_eq!(queue.pop(HOUR), serve(0));
        queue.push(5, key(3));
        assert_eq!(queue.pop(HOUR), serve(1));
        assert_eq!(queue.pop(HOUR), serve(2));
        assert_eq!(queue.pop(HOUR), serve(3));
        assert_eq!(queue.pop(HOUR), None);
        assert!(queue.is_empty());
    }

    /// LIFO serves the newest waiting request first (pop_back) and never sheds.
    #[test]
    fn lifo_serves_newest_first_and_never_sheds() {
        let mut queue = Queue::new(Discipline::Lifo);
        for slot in 0..3 {
            queue.push(u64::from(slot), key(slot));
        }
        assert_eq!(queue.pop(HOUR), serve(2));
        queue.push(5, key(3));
        assert_eq!(queue.len(), 3);
        assert_eq!(queue.pop(HOUR), serve(3));
        assert_eq!(queue.pop(HOUR), serve(1));
        assert_eq!(queue.pop(HOUR), serve(0));
        assert_eq!(queue.pop(HOUR), None);
    }

    /// `drain` returns what is still waiting in arrival order whatever the discipline, and
    /// leaves the queue empty. Keys 0..=2 arrive at 0, 1 and 2 ms and one is popped at 2 ms:
    /// FIFO, CoDel (sojourn 2 ms, below target) and adaptive LIFO (not standing, so FIFO)
    /// serve key 0, LIFO the newest, key 2. Keys 3..=5 arrive after, and `drain` returns the
    /// other five oldest first.
    #[test]
    fn drain_returns_arrival_order_for_every_discipline() {
        for (discipline, served) in [
            (Discipline::Fifo, 0),
            (Discipline::Lifo, 2),
            (Discipline::codel(), 0),
            (Discipline::adaptive_lifo(), 0),
        ] {
            let mut queue = Queue::new(discipline);
            for slot in 0..3 {
                queue.push(u64::from(slot) * MS, key(slot));
            }
            assert_eq!(queue.pop(2 * MS), serve(served), "{discipline:?}");
            for slot in 3..6 {
                queue.push(u64::from(slot) * MS, key(slot));
            }
            let expected: Vec<Key> = keys((0..6).filter(|&slot| slot != served));
            assert_eq!(queue.drain(), expected, "{discipline:?}");
            assert!(queue.is_empty(), "{discipline:?}");
            assert_eq!(queue.pop(10 * MS), None, "{discipline:?}");
            assert_eq!(queue.drain(), Vec::<Key>::new(), "{discipline:?}");
        }
    }

    /// should_drop: a sojourn below target resets `first_above_time` and never drops. Keys
    /// arrive one per ms and each is served 4 ms after it arrived (sojourn 4 ms < 5 ms) with
    /// four more waiting behind it, for 1 s (ten intervals): all are served, in order.
    #[test]
    fn codel_never_sheds_below_target() {
        let mut queue = Queue::new(Discipline::codel());
        for slot in 0..1000 {
            let t = u64::from(slot) * MS;
            queue.push(t, key(slot));
            if slot >= 4 {
                assert_eq!(queue.pop(t), serve(slot - 4));
                assert_eq!(queue.len(), 4);
                assert_eq!(codel_state(&queue).first_above_time, None);
            }
        }
        assert!(!codel_state(&queue).dropping);
    }

    /// A standing queue: 100 keys queued at t = 0, one popped every 10 ms from 10 ms.
    ///
    /// - 10 ms: sojourn 10 ms >= target, so `first_above_time = 10 + 100 = 110 ms`; serve 0.
    /// - 110 ms: `now >= first_above_time`: shed key 10 and enter dropping; `count = 1` (delta
    ///   0), `drop_next = 110 + 100/sqrt(1) = 210 ms`; serve key 11 at once.
    /// - 210 ms: `now >= drop_next`: count 2, shed key 21; the next (22) still should drop, so
    ///   `drop_next = 210 000 + round(100 000/sqrt 2 = 70 710.68) = 280 711 us`; serve 22.
    /// - 290 ms (first pop at or after 280.711 ms): count 3, shed key 30;
    ///   `drop_next = 280 711 + round(57 735.03) = 338 446 us`; serve 31.
    /// - 340 ms: count 4, shed 36; `drop_next = 338 446 + 50 000 = 388 446 us`; serve 37.
    /// - 390 ms: count 5, shed 42; `drop_next = 388 446 + round(44 721.36) = 433 167 us`.
    #[test]
    fn codel_standing_queue_sheds_by_the_control_law() {
        let mut queue = Queue::new(Discipline::codel());
        for slot in 0..100 {
            queue.push(0, key(slot));
        }
        let mut sheds = Vec::new();
        let mut served = Vec::new();
        let mut drop_next_after_shed = Vec::new();
        for tick in 1..=40 {
            let now = tick * 10 * MS;
            let (shed_now, serve_now) = dispatch(&mut queue, now);
            for key in shed_now {
                sheds.push((now, key.slot));
                drop_next_after_shed.push(codel_state(&queue).drop_next);
            }
            served.push(serve_now.expect("100 keys last 40 ticks").slot);
            if now == 10 * MS {
                assert_eq!(codel_state(&queue).first_above_time, Some(110 * MS));
            }
        }
        assert_eq!(
            sheds,
            [
                (110 * MS, 10),
                (210 * MS, 21),
                (290 * MS, 30),
                (340 * MS, 36),
                (390 * MS, 42)
            ]
        );
        // drop_next as read just after each dispatch that shed (after the serve).
        assert_eq!(
            drop_next_after_shed,
            [210_000, 280_711, 338_446, 388_446, 433_167]
        );
        let shed_slots = [10, 21, 30, 36, 42];
        let expected: Vec<u32> = (0..45).filter(|slot| !shed_slots.contains(slot)).collect();
        assert_eq!(served, expected);
        let state = codel_state(&queue);
        assert!(state.dropping);
        assert_eq!((state.count, state.lastcount), (5, 1));
    }

    /// The exact boundaries: the first shed needs `now >= first_above_time` (RFC 8289) and a
    /// sojourn of exactly `target` counts as above it (Linux: below means `sojourn < target`);
    /// a later shed needs `now >= drop_next`. Keys queued at 0; first pop at 5 ms (sojourn
    /// exactly 5 ms) sets `first_above_time = 105 ms`.
    #[test]
    fn codel_shed_boundaries_are_exact() {
        let mut queue = Queue::new(Discipline::codel());
        for slot in 0..20 {
            queue.push(0, key(slot));
        }
        assert_eq!(queue.pop(5 * MS), serve(0));
        assert_eq!(codel_state(&queue).first_above_time, Some(105 * MS));
        assert_eq!(queue.pop(105 * MS - 1), serve(1));
        assert_eq!(queue.pop(105 * MS), shed(2));
        assert_eq!(queue.pop(105 * MS), serve(3));
        assert_eq!(codel_state(&queue).drop_next, 205 * MS);
        assert_eq!(queue.pop(205 * MS - 1), serve(4));
        assert_eq!(queue.pop(205 * MS), shed(5));
        assert_eq!(queue.pop(205 * MS), serve(6));
        // 205 000 + round(70 710.68) = 275 711.
        assert_eq!(codel_state(&queue).drop_next, 275_711);
        assert_eq!(queue.pop(275_710), serve(7));
        assert_eq!(queue.pop(275_711), shed(8));
        assert_eq!(queue.pop(275_711), serve(9));
    }

    /// Linux's `while (dropping && now >= drop_next)` loop can shed several packets in one
    /// dequeue. 100 keys at 0; pop at 10 ms (`first_above_time = 110 ms`), at 110 ms (shed 1,
    /// `drop_next = 210 ms`, serve 2), then not until 500 ms. There key 3 is shed (count 2) and
    /// each following key is shed while the control law keeps `drop_next <= 500 ms`:
    /// 280 711 (count 3, shed 4), 338 446 (count 4, shed 5), 388 446 (count 5, shed 6),
    /// 433 167 (count 6, shed 7), 473 992 (+ round(100 000/sqrt 6 = 40 824.83); count 7, shed
    /// 8), 511 788 (+ round(100 000/sqrt 7 = 37 796.45)) > 500 ms: serve 9.
    #[test]
    fn codel_sheds_several_in_one_dequeue_like_the_linux_loop() {
        let mut queue = Queue::new(Discipline::codel());
        for slot in 0..100 {
            queue.push(0, key(slot));
        }
        assert_eq!(dispatch(&mut queue, 10 * MS), (vec![], Some(key(0))));
        assert_eq!(dispatch(&mut queue, 110 * MS), (keys([1]), Some(key(2))));
        assert_eq!(
            dispatch(&mut queue, 500 * MS),
            (keys([3, 4, 5, 6, 7, 8]), Some(key(9)))
        );
        let state = codel_state(&queue);
        assert_eq!((state.count, state.drop_next), (7, 511_788));
        assert!(state.dropping);
        assert_eq!(queue.len(), 90);
    }

    /// Leaving the dropping state. `if dropping: if !drop: dropping = false`: a request whose
    /// sojourn is below target ends it. 12 keys at 0, pops every 10 ms: shed 10 at 110 ms
    /// (dropping), then 11 is served and, the last one, resets `first_above_time` (nearly
    /// empty). Fresh keys 12..=14 arrive at 115 ms; popped at 118 ms, key 12 waited 3 ms <
    /// 5 ms: served, and dropping ends. An empty pop also ends it (Linux: `if (!skb)
    /// dropping = false`).
    #[test]
    fn codel_leaves_dropping_when_sojourn_falls_below_target() {
        let mut queue = Queue::new(Discipline::codel());
        for slot in 0..12 {
            queue.push(0, key(slot));
        }
        for tick in 1..=10 {
            assert_eq!(
                dispatch(&mut queue, tick * 10 * MS),
                (vec![], Some(key(tick as u32 - 1)))
            );
        }
        assert_eq!(dispatch(&mut queue, 110 * MS), (keys([10]), Some(key(11))));
        assert!(codel_state(&queue).dropping);
        assert_eq!(codel_state(&queue).first_above_time, None);
        for slot in 12..15 {
            queue.push(115 * MS, key(slot));
        }
        assert_eq!(queue.pop(118 * MS), serve(12));
        assert!(!codel_state(&queue).dropping);

        // Back into dropping with the old keys, then out by an empty pop.
        let mut queue = Queue::new(Discipline::codel());
        for slot in 0..4 {
            queue.push(0, key(slot));
        }
        assert_eq!(queue.pop(10 * MS), serve(0));
        assert_eq!(dispatch(&mut queue, 110 * MS), (keys([1]), Some(key(2))));
        assert!(codel_state(&queue).dropping);
        assert_eq!(queue.pop(120 * MS), serve(3));
        assert_eq!(queue.pop(130 * MS), None);
        assert!(!codel_state(&queue).dropping);
    }

    /// Runs the first dropping episode of the count-reuse tests: 38 keys at 0, pops every
    /// 10 ms. As in the standing-queue test, sheds at 110, 210, 290 and 340 ms (keys 10, 21,
    /// 30, 36), leaving `count = 4`, `lastcount = 1`; at 340 ms key 37 is the last one, so it
    /// does not "should drop" (nearly empty): it is served and dropping ends with `drop_next`
    /// still 338 446 us.
    fn codel_first_episode() -> Queue {
        let mut queue = Queue::new(Discipline::codel());
        for slot in 0..38 {
            queue.push(0, key(slot));
        }
        let mut sheds = Vec::new();
        for tick in 1..=34 {
            sheds.extend(dispatch(&mut queue, tick * 10 * MS).0);
        }
        assert_eq!(sheds, keys([10, 21, 30, 36]));
        assert!(queue.is_empty());
        let state = codel_state(&queue);
        assert!(!state.dropping);
        assert_eq!(
            (state.count, state.lastcount, state.drop_next),
            (4, 1, 338_446)
        );
        queue
    }

    /// Count reuse (`delta = count - lastcount; count = delta > 1 && now - drop_next <
    /// 16 * interval ? delta : 1`). After the first episode (count 4, lastcount 1, drop_next
    /// 338 446 us), keys 38..=70 arrive at 400 ms and are popped every 10 ms from 410 ms:
    /// `first_above_time = 510 ms`, so key 48 is shed at 510 ms. delta = 3 > 1 and
    /// 510 000 - 338 446 = 171 554 < 1 600 000, so count = lastcount = 3 and `drop_next =
    /// 510 000 + round(100 000/sqrt 3) = 567 735 us`: the next shed is at 570 ms (key 55, count
    /// 4), not at 610 ms as it would be from count 1.
    #[test]
    fn codel_reuses_the_count_when_dropping_resumes_soon() {
        let mut queue = codel_first_episode();
        for slot in 38..=70 {
            queue.push(400 * MS, key(slot));
        }
        let mut sheds = Vec::new();
        for tick in 41..=57 {
            let now = tick * 10 * MS;
            for key in dispatch(&mut queue, now).0 {
                sheds.push((now, key.slot));
                if now == 510 * MS {
                    let state = codel_state(&queue);
                    assert_eq!((state.count, state.lastcount), (3, 3));
                    assert_eq!(state.drop_next, 567_735);
                }
            }
        }
        assert_eq!(sheds, [(510 * MS, 48), (570 * MS, 55)]);
        let state = codel_state(&queue);
        // 567 735 + 100 000/sqrt 4.
        assert_eq!((state.count, state.drop_next), (4, 617_735));
    }

    /// Count reuse does not apply when the sojourn time rises again 16 intervals or more
    /// after `drop_next`: after the first episode, keys arrive at 2 s, the shed at 2.11 s has
    /// 2 110 000 - 338 446 = 1 771 554 >= 1 600 000, so count = 1 and `drop_next = 2.21 s`.
    /// Nor when delta <= 1: an episode with one drop in the loop leaves count 2, lastcount 1.
    #[test]
    fn codel_restarts_the_count_when_dropping_resumes_late_or_briefly() {
        let mut queue = codel_first_episode();
        for slot in 38..60 {
            queue.push(2000 * MS, key(slot));
        }
        assert_eq!(dispatch(&mut queue, 2010 * MS), (vec![], Some(key(38))));
        for tick in 202..=210 {
            assert_eq!(dispatch(&mut queue, tick * 10 * MS).0, vec![]);
        }
        assert_eq!(dispatch(&mut queue, 2110 * MS), (keys([48]), Some(key(49))));
        let state = codel_state(&queue);
        assert_eq!((state.count, state.lastcount), (1, 1));
        assert_eq!(state.drop_next, 2210 * MS);

        // delta = 1: sheds at 110 and 210 ms only (23 keys: key 22 is the last one at 210 ms).
        let mut queue = Queue::new(Discipline::codel());
        for slot in 0..23 {
            queue.push(0, key(slot));
        }
        let mut sheds = Vec::new();
        for tick in 1..=21 {
            sheds.extend(dispatch(&mut queue, tick * 10 * MS).0);
        }
        assert_eq!(sheds, keys([10, 21]));
        let state = codel_state(&queue);
        assert!(!state.dropping);
        assert_eq!((state.count, state.lastcount), (2, 1));
        for slot in 23..40 {
            queue.push(300 * MS, key(slot));
        }
        // first_above_time = 410 ms; the shed at 410 ms restarts from count 1.
        for tick in 31..=40 {
            assert_eq!(dispatch(&mut queue, tick * 10 * MS).0, vec![]);
        }
        assert_eq!(dispatch(&mut queue, 410 * MS).0, keys([33]));
        let state = codel_state(&queue);
        assert_eq!((state.count, state.drop_next), (1, 510 * MS));
    }

    /// The count-reuse window is `now - drop_next < 16 * interval`, strictly. After the first
    /// episode (drop_next 338 446 us), the shed that re-enters dropping 1 599 999 us after
    /// drop_next reuses delta = 3; one 1 600 000 us after starts from count 1. Keys arrive at
    /// `shed time - 110 ms`; the pop 10 ms later sets `first_above_time` to the shed time.
    #[test]
    fn codel_count_reuse_window_is_strict() {
        for (shed_at, count) in [(338_446 + 1_599_999, 3), (338_446 + 1_600_000, 1)] {
            let mut queue = codel_first_episode();
            for slot in 38..50 {
                queue.push(shed_at - 110 * MS, key(slot));
            }
            assert_eq!(queue.pop(shed_at - 100 * MS), serve(38));
            assert_eq!(codel_state(&queue).first_above_time, Some(shed_at));
            assert_eq!(queue.pop(shed_at), shed(39));
            assert_eq!(codel_state(&queue).count, count, "shed at {shed_at}");
        }
    }

    /// A drain in the middle of a dequeue (after a shed, before the serve) returns the rest
    /// in arrival order and resets CoDel to the state of a new queue.
    #[test]
    fn codel_drain_resets_the_state() {
        let mut queue = Queue::new(Discipline::codel());
        for slot in 0..5 {
            queue.push(0, key(slot));
        }
        assert_eq!(queue.pop(10 * MS), serve(0));
        assert_eq!(queue.pop(110 * MS), shed(1));
        assert_eq!(queue.drain(), keys(2..5));
        assert_eq!(queue.inner, Queue::new(Discipline::codel()).inner);
    }

    /// Adaptive LIFO while the queue was empty within the last N (`last_empty >= now - N`):
    /// FIFO, and a request may wait up to N. A push into an empty queue sets `last_empty`, and
    /// so does a pop that empties it.
    #[test]
    fn adaptive_lifo_is_fifo_when_recently_empty() {
        let mut queue = Queue::new(Discipline::adaptive_lifo());
        queue.push(0, key(0));
        assert_eq!(last_empty(&queue), 0);
        queue.push(40 * MS, key(1));
        queue.push(80 * MS, key(2));
        assert_eq!(last_empty(&queue), 0, "pushes into a non-empty queue");
        assert_eq!(queue.pop(90 * MS), serve(0));
        // now - N = 0, and last_empty = 0 is not before it: still FIFO; key 0 would have
        // waited exactly N here, which is allowed.
        assert_eq!(queue.pop(100 * MS), serve(1));
        assert_eq!(queue.pop(100 * MS), serve(2));
        assert_eq!(last_empty(&queue), 100 * MS, "the pop that emptied it");
        assert_eq!(queue.pop(150 * MS), None);

        // A wait of exactly N, served FIFO at the last instant before standing.
        queue.push(200 * MS, key(3));
        assert_eq!(last_empty(&queue), 200 * MS);
        queue.push(250 * MS, key(4));
        assert_eq!(queue.pop(300 * MS), serve(3));
        assert_eq!(queue.pop(300 * MS), serve(4));
    }

    /// Adaptive LIFO once the queue has not been empty for more than N
    /// (`last_empty < now - N`): LIFO, and a request that waited more than M is shed. Key 0
    /// at 0 starts the busy period; at 101 ms the queue is standing. Keys 2..=4 arrive at 80,
    /// 101 and 102 ms: at 107 ms key 4 (waited 5 ms = M) is served newest-first; at 110 ms key
    /// 3 (9 ms > M) and key 2 (30 ms) are shed, emptying the queue (`last_empty = 110 ms`).
    /// A push at 120 ms starts a new busy period: FIFO again.
    #[test]
    fn adaptive_lifo_turns_lifo_and_sheds_beyond_m_when_standing() {
        let mut queue = Queue::new(Discipline::adaptive_lifo());
        queue.push(0, key(0));
        queue.push(40 * MS, key(1));
        queue.push(80 * MS, key(2));
        assert_eq!(queue.pop(90 * MS), serve(0));
        assert_eq!(queue.pop(100 * MS), serve(1));
        queue.push(101 * MS, key(3));
        queue.push(102 * MS, key(4));
        assert_eq!(queue.pop(107 * MS), serve(4));
        assert_eq!(queue.pop(110 * MS), shed(3));
        assert_eq!(last_empty(&queue), 0);
        assert_eq!(queue.pop(110 * MS), shed(2));
        assert_eq!(last_empty(&queue), 110 * MS);
        assert_eq!(queue.pop(110 * MS), None);

        queue.push(120 * MS, key(5));
        queue.push(121 * MS, key(6));
        assert_eq!(last_empty(&queue), 120 * MS);
        assert_eq!(queue.pop(125 * MS), serve(5));
        assert_eq!(queue.pop(126 * MS), serve(6));
    }

    /// Adaptive LIFO's `drain` returns arrival order even after LIFO pops, and resets
    /// `last_empty` to 0; the next push sets it again.
    #[test]
    fn adaptive_lifo_drain_resets_last_empty() {
        let mut queue = Queue::new(Discipline::adaptive_lifo());
        for slot in 0..4 {
            queue.push(u64::from(slot) * 50 * MS, key(slot));
        }
        // At 160 ms the queue has been busy since 0: standing, so key 3 (10 ms old) is shed.
        assert_eq!(queue.pop(160 * MS), shed(3));
        assert_eq!(queue.drain(), keys(0..3));
        assert_eq!(last_empty(&queue), 0);
        queue.push(500 * MS, key(4));
        assert_eq!(last_empty(&queue), 500 * MS);
    }

    /// The names scenario files use.
    #[test]
    fn names() {
        assert_eq!(Discipline::Fifo.name(), "fifo");
        assert_eq!(Discipline::Lifo.name(), "lifo");
        assert_eq!(Discipline::codel().name(), "codel");
        assert_eq!(Discipline::adaptive_lifo().name(), "adaptive-lifo");
    }

    /// Linux's `codel_dequeue`, transcribed loop and all, over a plain FIFO of waiting
    /// requests: the reference the one-item-per-pop state machine must match.
    #[derive(Default)]
    struct LinuxCoDel {
        entries: VecDeque<Waiting>,
        first_above_time: Option<Micros>,
        drop_next: Micros,
        count: u64,
        lastcount: u64,
        dropping: bool,
    }

    impl LinuxCoDel {
        fn should_drop(
            &mut self,
            entry: Option<Waiting>,
            now: Micros,
            params: (Micros, Micros),
        ) -> bool {
            let (target, interval) = params;
            let Some(entry) = entry else {
                self.first_above_time = None;
                return false;
            };
            if now - entry.enqueued < target || self.entries.is_empty() {
                self.first_above_time = None;
                return false;
            }
            match self.first_above_time {
                None => {
                    self.first_above_time = Some(now + interval);
                    false
                }
                Some(at) => now >= at,
            }
        }

        fn control_law(t: Micros, interval: Micros, count: u64) -> Micros {
            t + (interval as f64 / (count as f64).sqrt()).round() as Micros
        }

        fn dequeue(&mut self, now: Micros, params: (Micros, Micros)) -> (Vec<Key>, Option<Key>) {
            let interval = params.1;
            let mut dropped = Vec::new();
            let Some(mut entry) = self.entries.pop_front() else {
                self.dropping = false;
                return (dropped, None);
            };
            let drop = self.should_drop(Some(entry), now, params);
            if self.dropping {
                if !drop {
                    self.dropping = false;
                } else {
                    while self.dropping && now >= self.drop_next {
                        self.count += 1;
                        dropped.push(entry.key);
                        let next = self.entries.pop_front();
                        if !self.should_drop(next, now, params) {
                            self.dropping = false;
                        } else {
                            self.drop_next =
                                Self::control_law(self.drop_next, interval, self.count);
                        }
                        match next {
                            Some(next) => entry = next,
                            None => return (dropped, None),
                        }
                    }
                }
            } else if drop {
                dropped.push(entry.key);
                let next = self.entries.pop_front();
                self.should_drop(next, now, params);
                self.dropping = true;
                let delta = self.count - self.lastcount;
                self.count = if delta > 1 && now < self.drop_next + 16 * interval {
                    delta
                } else {
                    1
                };
                self.lastcount = self.count;
                self.drop_next = Self::control_law(now, interval, self.count);
                match next {
                    Some(next) => entry = next,
                    None => return (dropped, None),
                }
            }
            (dropped, Some(entry.key))
        }
    }

    /// A discipline drawn for the property tests, with small target and interval so that
    /// every rule is exercised.
    fn discipline() -> impl Strategy<Value = Discipline> {
        (0..4u8, 1..20 * MS, 1..200 * MS).prop_map(|(which, target, interval)| match which {
            0 => Discipline::Fifo,
            1 => Discipline::Lifo,
            2 => Discipline::CoDel { target, interval },
            _ => Discipline::AdaptiveLifo { target, interval },
        })
    }

    /// An operation: 0..=4 push, 5..=7 a service dispatch (pop until a serve), 8 a single pop,
    /// 9 a drain; after advancing time by the offset.
    fn operations() -> impl Strategy<Value = Vec<(u8, Micros)>> {
        prop::collection::vec((0..10u8, 0..30 * MS), 1..600)
    }

    proptest! {
        /// Whatever the discipline, every pushed key comes out exactly once, served, shed or
        /// drained, and `len` counts those still in; FIFO and LIFO never shed.
        #[test]
        fn every_key_comes_out_exactly_once(discipline in discipline(), operations in operations()) {
            let may_shed = matches!(
                discipline,
                Discipline::CoDel { .. } | Discipline::AdaptiveLifo { .. }
            );
            let mut queue = Queue::new(discipline);
            let mut now = 0;
            let mut pushed = 0u32;
            let mut out = Vec::new();
            for (operation, advance) in operations {
                now += advance;
                match operation {
                    0..=4 => {
                        queue.push(now, key(pushed));
                        pushed += 1;
                    }
                    5..=8 => loop {
                        match queue.pop(now) {
                            Some(Dequeued::Serve(key)) => {
                                out.push(key.slot);
                                break;
                            }
                            Some(Dequeued::Shed(key)) => {
                                prop_assert!(may_shed);
                                out.push(key.slot);
                                if operation == 8 {
                                    break;
                                }
                            }
                            None => break,
                        }
                    },
                    _ => out.extend(queue.drain().into_iter().map(|key| key.slot)),
                }
                prop_assert_eq!(queue.len(), pushed as usize - out.len());
            }
            out.extend(queue.drain().into_iter().map(|key| key.slot));
            out.sort_unstable();
            prop_assert_eq!(out, (0..pushed).collect::<Vec<_>>());
        }

        /// CoDel's pops, called until a serve at the same time as the service does, give the
        /// same sheds, the same served request and the same variables as Linux's loop.
        #[test]
        fn codel_matches_the_linux_loop(
            target in 1..20 * MS,
            interval in 1..200 * MS,
            operations in prop::collection::vec((0..3u8, 0..30 * MS), 1..800),
        ) {
            let mut queue = Queue::new(Discipline::CoDel { target, interval });
            let mut linux = LinuxCoDel::default();
            let mut now = 0;
            for (index, (operation, advance)) in operations.into_iter().enumerate() {
                now += advance;
                if operation < 2 {
                    let key = key(index as u32);
                    queue.push(now, key);
                    linux.entries.push_back(Waiting { key, enqueued: now });
                } else {
                    prop_assert_eq!(dispatch(&mut queue, now), linux.dequeue(now, (target, interval)));
                    let state = codel_state(&queue);
                    prop_assert_eq!(&state.entries, &linux.entries);
                    prop_assert_eq!(state.first_above_time, linux.first_above_time);
                    prop_assert_eq!(
                        (state.drop_next, state.count, state.lastcount, state.dropping),
                        (linux.drop_next, linux.count, linux.lastcount, linux.dropping)
                    );
                }
            }
        }
    }
}
