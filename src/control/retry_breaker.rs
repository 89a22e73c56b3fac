//! A circuit breaker that stops only retries (M. Brooker, "Fixing retries with token buckets
//! and circuit breakers", 2022; the simulator behind it, `mbrooker/simulator_example`
//! `retry_sim/retry_strategy.py`, `CircuitBreakerRetryStrategy`).
//!
//! A breaker that refuses first attempts (resilience4j's, [`super::circuit_breaker`]) turns a
//! partial failure into a total one; this one never does: first attempts always go out, and
//! only retries stop while the client fails too much. It counts `calls` (calls started) and
//! `failures` (every attempt that did not succeed, first or retry, as the simulator counts
//! every failure it is asked to retry), and allows a retry only while
//! `failures / calls <= max_failures_per_call` (0.1 in the simulator); the policy's retry limit
//! applies on top. When it refuses, nothing else changes: the failure that asked is counted all
//! the same.
//!
//! The simulator's counters are cumulative: they never forget, so a client that once failed
//! a lot retries again only after enough good calls to bring the ratio back down, and one with
//! a long good history keeps retrying through a new outage until its failures catch up with a
//! tenth of every call it ever made. That is the default, as the source has it; `window` keeps
//! the counts of the last `window` only, in ten slices (as Finagle's budget keeps its window),
//! so that the breaker follows the recent failure rate.
//!
//! The comparison is exact: the ratio is kept in thousandths, and `failures * 1000 >
//! calls * ratio` is what the simulator's floats compute for every count a run can reach.

use super::{AttemptEnd, Control, SlidingWindow};
use crate::base::time::Micros;

/// Thousandths of the ratio.
pub const MILLI: u64 = 1000;
/// Slices of a window.
pub(super) const SLICES: usize = 10;

/// Settings of the breaker; defaults the simulator's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryBreakerConfig {
    /// Failed attempts per call above which retries stop, in thousandths (0.1).
    pub max_failures_per_call_milli: u64,
    /// The window the counts are kept over; `None` for all of the run (the simulator's).
    pub window: Option<Micros>,
}

impl Default for RetryBreakerConfig {
    fn default() -> Self {
        RetryBreakerConfig {
            max_failures_per_call_milli: MILLI / 10,
            window: None,
        }
    }
}

/// Calls and failures, over the run or a window.
#[derive(Debug)]
enum Counts {
    /// Since the start.
    Cumulative { calls: u64, failures: u64 },
    /// Over the window: `[calls, failures]`.
    Windowed(SlidingWindow<2>),
}

/// The breaker of one client (or process, or all).
#[derive(Debug)]
pub struct RetryBreaker {
    max_milli: u64,
    counts: Counts,
}

impl RetryBreaker {
    /// A breaker that has counted nothing.
    pub fn new(config: &RetryBreakerConfig) -> Self {
        RetryBreaker {
            max_milli: config.max_failures_per_call_milli,
            counts: match config.window {
                None => Counts::Cumulative {
                    calls: 0,
                    failures: 0,
                },
                Some(window) => {
                    Counts::Windowed(SlidingWindow::new(SLICES, window / SLICES as Micros))
                }
            },
        }
    }

    /// Calls and failures counted at `now`.
    pub fn counts(&mut self, now: Micros) -> (u64, u64) {
        match &mut self.counts {
            Counts::Cumulative { calls, failures } => (*calls, *failures),
            Counts::Windowed(window) => {
                let [calls, failures] = window.sums(now);
                (calls as u64, failures as u64)
            }
        }
    }
}

impl Control for RetryBreaker {
    fn call_started(&mut self, now: Micros) {
        match &mut self.counts {
            Counts::Cumulative { calls, .. } => *calls += 1,
            Counts::Windowed(window) => window.add(now, [1, 0]),
        }
    }

    fn attempt_ended(&mut self, now: Micros, end: &AttemptEnd) {
        if end.succeeded() {
            return;
        }
        match &mut self.counts {
            Counts::Cumulative { failures, .. } => *failures += 1,
            Counts::Windowed(window) => window.add(now, [0, 1]),
        }
    }

    fn admit_retry(&mut self, now: Micros, _timed_out: bool) -> bool {
        let (calls, failures) = self.counts(now);
        // `failures / calls > max` refuses, as the simulator's `should_retry`.
        u128::from(failures) * u128::from(MILLI) <= u128::from(calls) * u128::from(self.max_milli)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::MICROS_PER_SECOND;
    use crate::vocabulary::outcome::AttemptOutcome;

    fn ended(breaker: &mut RetryBreaker, now: Micros, outcome: AttemptOutcome) {
        breaker.attempt_ended(
            now,
            &AttemptEnd {
                retry: false,
                outcome,
                status: None,
                transient: true,
                latency: 1,
            },
        );
    }

    /// The simulator's rule, `failures / calls > 0.1` refuses: after 10 calls one failure
    /// (0.1) still allows a retry, a second (0.2) does not; 10 more calls bring it back to
    /// 0.1 and retries are allowed again. Successes change nothing.
    #[test]
    fn retries_stop_above_a_tenth_of_a_failure_per_call() {
        let mut breaker = RetryBreaker::new(&RetryBreakerConfig::default());
        for _ in 0..10 {
            breaker.call_started(0);
            ended(&mut breaker, 0, AttemptOutcome::Ok);
        }
        ended(&mut breaker, 0, AttemptOutcome::Rejected);
        assert!(breaker.admit_retry(0, false), "1 failure in 10 calls");
        ended(&mut breaker, 0, AttemptOutcome::Timeout);
        assert!(!breaker.admit_retry(0, true), "2 failures in 10 calls");
        for _ in 0..10 {
            breaker.call_started(0);
        }
        assert_eq!(breaker.counts(0), (20, 2));
        assert!(breaker.admit_retry(0, false), "2 failures in 20 calls");
    }

    /// The simulator's counters never forget; a window of 10 s does: the calls and failures
    /// of the first second are gone at 10 s (ten slices of 1 s), and with them the refusal.
    #[test]
    fn a_window_forgets_what_the_cumulative_count_keeps() {
        let mut cumulative = RetryBreaker::new(&RetryBreakerConfig::default());
        let mut windowed = RetryBreaker::new(&RetryBreakerConfig {
            window: Some(10 * MICROS_PER_SECOND),
            ..RetryBreakerConfig::default()
        });
        for breaker in [&mut cumulative, &mut windowed] {
            breaker.call_started(0);
            ended(breaker, 0, AttemptOutcome::Reset);
            assert!(!breaker.admit_retry(0, false));
            breaker.call_started(10 * MICROS_PER_SECOND);
        }
        assert!(!cumulative.admit_retry(10 * MICROS_PER_SECOND, false));
        assert_eq!(windowed.counts(10 * MICROS_PER_SECOND), (1, 0));
        assert!(windowed.admit_retry(10 * MICROS_PER_SECOND, false));
    }
}
