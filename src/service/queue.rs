//! Queue disciplines: in which order a service's waiting requests reach its workers, and which
//! it sheds instead.
//!
//! (Stub: the disciplines are being written.)

use std::collections::VecDeque;

use crate::slab::Key;
use crate::time::Micros;

/// How a queue orders and sheds its requests, as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Discipline {
    /// First in, first out.
    #[default]
    Fifo,
    /// Last in, first out.
    Lifo,
    /// CoDel (Nichols and Jacobson; RFC 8289), as Linux's `codel_impl.h` implements it: FIFO,
    /// shedding at dequeue by the control law once the sojourn time has stayed above `target`
    /// for an `interval`.
    CoDel {
        /// Acceptable standing sojourn time (RFC 8289: 5 ms).
        target: Micros,
        /// Window in which the sojourn time must dip below `target` (RFC 8289: 100 ms).
        interval: Micros,
    },
    /// Facebook's "Fail at Scale" adaptive LIFO with controlled delay: FIFO while the queue has
    /// been empty within the last `interval` (N), and then a request may wait up to `interval`;
    /// once it has not, LIFO, and a request may wait only `target` (M).
    AdaptiveLifo {
        /// M: the longest wait while the queue is standing (5 ms).
        target: Micros,
        /// N: the window, and the longest wait otherwise (100 ms).
        interval: Micros,
    },
}

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
    entries: VecDeque<Key>,
}

impl Queue {
    /// An empty queue with `discipline`.
    pub fn new(_discipline: Discipline) -> Queue {
        Queue {
            entries: VecDeque::new(),
        }
    }

    /// Requests waiting.
    #[inline]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none waits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A request joins the queue at `now`.
    #[inline]
    pub fn push(&mut self, _now: Micros, key: Key) {
        self.entries.push_back(key);
    }

    /// The next request for a worker free at `now`, or one the discipline sheds; `None` when
    /// the queue is empty.
    #[inline]
    pub fn pop(&mut self, _now: Micros) -> Option<Dequeued> {
        self.entries.pop_front().map(Dequeued::Serve)
    }

    /// Every request still waiting, in the order they arrived (a crash resets them).
    pub fn drain(&mut self) -> Vec<Key> {
        self.entries.drain(..).collect()
    }
}
