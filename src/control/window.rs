//! A sum over a sliding window of time, kept as a ring of slices and advanced lazily from the
//! timestamps it is given: no timer events, and nothing to do while nobody asks.
//!
//! Windowed counters are how the controls remember "recently": Finagle's retry budget keeps
//! its deposits and withdrawals in a `WindowedAdder` of ten slices over its ttl, Google's
//! adaptive throttling counts requests and accepts over two minutes, and resilience4j's
//! time-based window keeps one bucket per second. A value added in slice `i` leaves the sum
//! when the window has moved `slices` slices past it, so the window covers between
//! `(slices - 1) * slice` and `slices * slice` of the past, as those implementations do.

use crate::time::Micros;

/// `K` sums over the last `slices` slices of `slice` microseconds each.
#[derive(Debug, Clone)]
pub struct SlidingWindow<const K: usize> {
    slice: Micros,
    ring: Box<[[i64; K]]>,
    sums: [i64; K],
    /// The number of the slice that `now` falls in at the last update (`now / slice`).
    current: u64,
}

impl<const K: usize> SlidingWindow<K> {
    /// A window of `slices` slices (at least one) of `slice` microseconds (at least one).
    pub fn new(slices: usize, slice: Micros) -> Self {
        SlidingWindow {
            slice: slice.max(1),
            ring: vec![[0; K]; slices.max(1)].into_boxed_slice(),
            sums: [0; K],
            current: 0,
        }
    }

    /// Moves the window to `now`, dropping the slices that fell out of it.
    fn advance(&mut self, now: Micros) {
        let target = now / self.slice;
        if target <= self.current {
            return;
        }
        let len = self.ring.len() as u64;
        let steps = (target - self.current).min(len);
        for step in 1..=steps {
            let index = ((self.current + step) % len) as usize;
            for (sum, value) in self.sums.iter_mut().zip(self.ring[index]) {
                *sum -= value;
            }
            self.ring[index] = [0; K];
        }
        self.current = target;
    }

    /// Adds `values` at `now`.
    pub fn add(&mut self, now: Micros, values: [i64; K]) {
        self.advance(now);
        let index = (self.current % self.ring.len() as u64) as usize;
        for ((slot, sum), value) in self.ring[index].iter_mut().zip(&mut self.sums).zip(values) {
            *slot += value;
            *sum += value;
        }
    }

    /// The sums over the window at `now`.
    pub fn sums(&mut self, now: Micros) -> [i64; K] {
        self.advance(now);
        self.sums
    }

    /// Forgets everything (a circuit breaker's fresh window).
    pub fn clear(&mut self) {
        self.ring.iter_mut().for_each(|slice| *slice = [0; K]);
        self.sums = [0; K];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value stays for exactly `slices` slice boundaries: added in slice 0 of a window of
    /// 10 slices of 1 s, it is counted at 9.999 s and gone at 10 s.
    #[test]
    fn values_leave_after_the_whole_window() {
        let mut window = SlidingWindow::<2>::new(10, 1_000_000);
        window.add(500_000, [3, 1]);
        window.add(2_500_000, [4, 0]);
        assert_eq!(window.sums(9_999_999), [7, 1]);
        assert_eq!(window.sums(10_000_000), [4, 0]);
        assert_eq!(window.sums(12_000_000), [0, 0]);
        // A jump of more than a window clears every slice once.
        window.add(12_000_000, [5, 5]);
        assert_eq!(window.sums(100_000_000), [0, 0]);
        window.add(100_000_001, [1, 2]);
        assert_eq!(window.sums(100_000_001), [1, 2]);
        window.clear();
        assert_eq!(window.sums(100_000_002), [0, 0]);
    }
}
