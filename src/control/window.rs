//! A sum over a sliding window of time, kept as the slices that hold something and advanced
//! lazily from the timestamps it is given: no timer events, and nothing to do while nobody asks.
//!
//! Windowed counters are how the controls remember "recently": Finagle's retry budget keeps
//! its deposits and withdrawals in a `WindowedAdder` of ten slices over its ttl, Google's
//! adaptive throttling counts requests and accepts over two minutes, and resilience4j's
//! time-based window keeps one bucket per second. A value added in slice `i` leaves the sum
//! when the window has moved `slices` slices past it, so the window covers between
//! `(slices - 1) * slice` and `slices * slice` of the past, as those implementations do.
//!
//! Only the slices something was added in are kept (in time order), so a window costs memory
//! in proportion to what it holds, never more than `slices` entries: a breaker of 3600 one-second
//! buckets kept for each of 100,000 clients that each call a few times holds a few entries per
//! client, not 3600 ([`SlidingWindow::ENTRY_BYTES`] each).

use std::collections::VecDeque;

use crate::base::time::Micros;

/// `K` sums over the last `slices` slices of `slice` microseconds each.
#[derive(Debug, Clone)]
pub struct SlidingWindow<const K: usize> {
    slice: Micros,
    slices: u64,
    /// The slices that hold something, oldest first: each slice's number and its values.
    held: VecDeque<(u64, [i64; K])>,
    sums: [i64; K],
    /// The number of the slice that `now` falls in at the last update (`now / slice`).
    current: u64,
}

impl<const K: usize> SlidingWindow<K> {
    /// The memory of one slice held (its number and its `K` values).
    pub const ENTRY_BYTES: usize = std::mem::size_of::<(u64, [i64; K])>();

    /// A window of `slices` slices (at least one) of `slice` microseconds (at least one).
    pub fn new(slices: usize, slice: Micros) -> Self {
        SlidingWindow {
            slice: slice.max(1),
            slices: slices.max(1) as u64,
            held: VecDeque::new(),
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
        while let Some(&(number, values)) = self.held.front() {
            if number + self.slices > target {
                break;
            }
            for (sum, value) in self.sums.iter_mut().zip(values) {
                *sum -= value;
            }
            self.held.pop_front();
        }
        self.current = target;
    }

    /// Adds `values` at `now`.
    pub fn add(&mut self, now: Micros, values: [i64; K]) {
        self.advance(now);
        match self.held.back_mut() {
            Some((number, held)) if *number == self.current => {
                for (slot, value) in held.iter_mut().zip(values) {
                    *slot += value;
                }
            }
            _ => self.held.push_back((self.current, values)),
        }
        for (sum, value) in self.sums.iter_mut().zip(values) {
            *sum += value;
        }
    }

    /// The sums over the window at `now`.
    pub fn sums(&mut self, now: Micros) -> [i64; K] {
        self.advance(now);
        self.sums
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
        // A jump of more than a window drops every slice.
        window.add(12_000_000, [5, 5]);
        assert_eq!(window.sums(100_000_000), [0, 0]);
        window.add(100_000_001, [1, 2]);
        assert_eq!(window.sums(100_000_001), [1, 2]);
    }

    /// Only the slices added to are kept, and never more than the window's: three adds in one
    /// slice keep one entry, adds in 25 consecutive slices of a 10-slice window keep 10.
    #[test]
    fn it_holds_only_the_slices_added_to() {
        let mut window = SlidingWindow::<1>::new(10, 1_000);
        for _ in 0..3 {
            window.add(5, [1]);
        }
        assert_eq!(window.held.len(), 1);
        for slice in 0..25 {
            window.add(slice * 1_000, [1]);
        }
        assert_eq!(window.held.len(), 10);
        assert_eq!(window.sums(24_000), [10]);
    }
}
