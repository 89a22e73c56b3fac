//! Brooker's capped retry token bucket (M. Brooker, "Fixing retries with token buckets and
//! circuit breakers", 2022; the simulator behind it, `mbrooker/simulator_example`
//! `retry_sim/retry_strategy.py`, `AdaptiveRetryStrategy`).
//!
//! A bucket per client: it starts full at `capacity`; every call that starts adds `credit`
//! (never above `capacity`), whether it will succeed or not (the simulator credits
//! `start()`, where the post's prose speaks of successes); a retry is allowed only while the
//! bucket holds more than `threshold`, and takes `cost`. First attempts are always sent. With
//! the simulator's numbers (5, 0.1, 1, 1.0) a client retries at most a tenth of its calls in
//! the long run, plus the four tokens above the threshold it starts with.
//!
//! Tokens are kept in thousandths (the settings to three decimals), so the comparison with
//! the threshold is exact: the simulator's floats make 1.0 after ten credits of 0.1 land on
//! either side of it.

use super::Control;
use crate::base::time::Micros;

/// Thousandths per token.
pub const MILLI: i64 = 1000;

/// Settings of the bucket, in thousandths of a token; defaults the simulator's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenBucketConfig {
    /// Tokens at the start and at most (5).
    pub capacity_milli: i64,
    /// Tokens a call that starts adds (0.1).
    pub credit_milli: i64,
    /// Tokens a retry takes (1).
    pub cost_milli: i64,
    /// A retry needs more than this many tokens (1.0).
    pub threshold_milli: i64,
}

impl Default for TokenBucketConfig {
    fn default() -> Self {
        TokenBucketConfig {
            capacity_milli: 5 * MILLI,
            credit_milli: MILLI / 10,
            cost_milli: MILLI,
            threshold_milli: MILLI,
        }
    }
}

/// The bucket of one client (or process, or all).
#[derive(Debug)]
pub struct TokenBucket {
    config: TokenBucketConfig,
    /// Tokens, in thousandths.
    tokens: i64,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(config: &TokenBucketConfig) -> Self {
        TokenBucket {
            config: *config,
            tokens: config.capacity_milli,
        }
    }

    /// Tokens left, in thousandths.
    pub fn tokens_milli(&self) -> i64 {
        self.tokens
    }
}

impl Control for TokenBucket {
    fn call_started(&mut self, _now: Micros) {
        self.tokens = (self.tokens + self.config.credit_milli).min(self.config.capacity_milli);
    }

    fn admit_retry(&mut self, _now: Micros, _timed_out: bool) -> bool {
        if self.tokens > self.config.threshold_milli {
            self.tokens -= self.config.cost_milli;
            true
        } else {
            false
        }
    }

    fn retry_cancelled(&mut self, _now: Micros) {
        // A later control refused the retry this bucket paid for: the retry is not made.
        self.tokens = (self.tokens + self.config.cost_milli).min(self.config.capacity_milli);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The simulator's bucket (`AdaptiveRetryStrategy(0.1, 5)`): full at 5, a retry needs
    /// more than 1 and takes 1, so four retries in a row pass (5 -> 1) and the fifth is
    /// refused; ten calls add 1 (-> 2), which pays for one more, and at exactly 1.0 the next is
    /// refused (`bucket > 1.0`); one more call (1.1) lets one through. Credits never fill it
    /// above 5.
    #[test]
    fn four_retries_from_full_then_one_per_ten_calls() {
        let mut bucket = TokenBucket::new(&TokenBucketConfig::default());
        assert_eq!((0..10).filter(|_| bucket.admit_retry(0, false)).count(), 4);
        assert_eq!(bucket.tokens_milli(), 1000);
        for _ in 0..10 {
            bucket.call_started(0);
        }
        assert_eq!(bucket.tokens_milli(), 2000);
        assert!(bucket.admit_retry(0, false));
        assert!(!bucket.admit_retry(0, false), "at exactly 1.0");
        bucket.call_started(0);
        assert!(bucket.admit_retry(0, false), "at 1.1");
        assert_eq!(bucket.tokens_milli(), 100);
        bucket.retry_cancelled(0);
        assert_eq!(bucket.tokens_milli(), 1100);
        for _ in 0..100 {
            bucket.call_started(0);
        }
        assert_eq!(bucket.tokens_milli(), 5000);
    }
}
