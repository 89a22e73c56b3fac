//! Client-side adaptive throttling (Google SRE book, ch. 21, "Handling Overload").
//!
//! Each client task counts, over the last two minutes, the requests it attempted (including
//! those it rejected itself) and the requests the backend accepted, and rejects each new
//! request locally with probability
//!
//! ```text
//! P(reject) = max(0, (requests - K * accepts) / (requests + 1))
//! ```
//!
//! computed before the new request is counted (the `+ 1` stands for it, as in go-zero's
//! `googleBreaker`). With `K = 2` (the book's recommendation) the backend sees at most about
//! twice the requests it accepts. A locally rejected attempt, first or retry, ends the call with
//! `throttled-locally`. The window is kept in 24 slices (five seconds each for the default two
//! minutes). An answer counts as accepted when the backend took the work: a success, or an
//! error it produced after accepting it; rejections, resets and timeouts are not.

use super::{AttemptEnd, Control, SlidingWindow};
use crate::base::random::{Random, Stream};
use crate::base::time::{MICROS_PER_SECOND, Micros};

/// Slices of the window.
pub(super) const SLICES: usize = 24;

/// Settings of the throttle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SreThrottlingConfig {
    /// The multiplier on accepts (the book's `K`), default 2.
    pub k: f64,
    /// How far back requests and accepts are counted, default 2 minutes.
    pub window: Micros,
}

impl Default for SreThrottlingConfig {
    fn default() -> Self {
        SreThrottlingConfig {
            k: 2.0,
            window: 120 * MICROS_PER_SECOND,
        }
    }
}

/// The throttle of one client task.
#[derive(Debug)]
pub struct SreThrottling {
    k: f64,
    /// Requests and accepts.
    window: SlidingWindow<2>,
}

impl SreThrottling {
    /// A throttle with no history.
    pub fn new(config: &SreThrottlingConfig) -> Self {
        SreThrottling {
            k: config.k,
            window: SlidingWindow::new(SLICES, (config.window / SLICES as u64).max(1)),
        }
    }

    /// The probability that the next request is rejected locally.
    pub fn reject_probability(&mut self, now: Micros) -> f64 {
        let [requests, accepts] = self.window.sums(now);
        ((requests as f64 - self.k * accepts as f64) / (requests as f64 + 1.0)).max(0.0)
    }
}

impl Control for SreThrottling {
    fn admit_send(&mut self, now: Micros, _retry: bool, random: &mut Stream) -> bool {
        let p = self.reject_probability(now);
        self.window.add(now, [1, 0]);
        !random.chance(p)
    }

    fn attempt_ended(&mut self, now: Micros, end: &AttemptEnd) {
        if end.accepted() {
            self.window.add(now, [0, 1]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::random::Purpose;
    use crate::vocabulary::outcome::AttemptOutcome;

    fn ended(outcome: AttemptOutcome) -> AttemptEnd {
        AttemptEnd {
            status: None,
            retry: false,
            outcome,
            transient: outcome != AttemptOutcome::Ok,
            latency: 1,
        }
    }

    /// The book's formula on known counts: 100 requests, 30 accepted, K = 2 gives
    /// (100 - 60) / 101; with every request accepted nothing is rejected.
    #[test]
    fn the_probability_is_the_books_formula() {
        let mut throttle = SreThrottling::new(&SreThrottlingConfig::default());
        let mut random = Stream::new(1, Purpose::ClientControl);
        for request in 0..100 {
            throttle.window.add(0, [1, 0]);
            if request < 30 {
                throttle.attempt_ended(0, &ended(AttemptOutcome::Ok));
            } else {
                throttle.attempt_ended(0, &ended(AttemptOutcome::Rejected));
            }
        }
        assert_eq!(throttle.reject_probability(0), 40.0 / 101.0);
        // Two minutes later the window has forgotten everything.
        assert_eq!(throttle.reject_probability(120 * MICROS_PER_SECOND), 0.0);
        let mut healthy = SreThrottling::new(&SreThrottlingConfig::default());
        for _ in 0..1000 {
            assert!(healthy.admit_send(0, false, &mut random));
            healthy.attempt_ended(0, &ended(AttemptOutcome::Ok));
        }
        assert_eq!(healthy.reject_probability(0), 0.0);
    }

    /// With a backend that accepts nothing, the share of requests let through falls like
    /// `1 / (n + 1)` summed: after n requests the throttle has sent about `ln n` of them
    /// (P = n / (n + 1) for the n-th), far fewer than n.
    #[test]
    fn a_dead_backend_is_left_alone() {
        let mut throttle = SreThrottling::new(&SreThrottlingConfig::default());
        let mut random = Stream::new(7, Purpose::ClientControl);
        let sent = (0..10_000)
            .filter(|_| throttle.admit_send(0, false, &mut random))
            .count();
        // Expected sum_{n=0}^{9999} 1/(n+1) = H(10000) = 9.79; its variance is below 9.79, so
        // 5 sigma is under 16.
        assert!((1..=26).contains(&sent), "sent {sent}");
    }
}
