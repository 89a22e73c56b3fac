//! gRPC retry throttling (gRFC A6, `retryThrottling` in the service config; grpc-go's
//! `retryThrottler`).
//!
//! A token bucket per server name: it starts full at `max_tokens`; every attempt that fails
//! with a retryable status (or without a response) takes one token, every successful call
//! gives back `token_ratio`; a retry (or hedge) is allowed only while more than half the
//! tokens are left. With `token_ratio = 0.1`, retries stop once failures outnumber a tenth of
//! the successes. A throttled retry fails the call at once. The first attempt is always sent.
//!
//! Tokens are kept in thousandths and `token_ratio` is truncated to three decimals, as
//! grpc-java's `RetriableStream.Throttle` keeps them (grpc-go keeps a float; the service config
//! documents three decimals), so the arithmetic is exact. gRPC publishes no defaults: both fields are required in a service
//! config (the gRFC's example is `maxTokens = 10`, `tokenRatio = 0.1`).

use super::{AttemptEnd, CallEnd, Control};
use crate::base::time::Micros;

/// Thousandths per token.
const MILLI: i64 = 1000;

/// Settings of the token bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GrpcThrottlingConfig {
    /// Bucket size, an integer in (0, 1000].
    pub max_tokens: u32,
    /// Tokens a successful call gives back, in thousandths (`tokenRatio * 1000`, truncated).
    pub token_ratio_milli: u32,
}

/// The bucket of one channel.
#[derive(Debug)]
pub struct GrpcThrottling {
    /// Tokens, in thousandths.
    tokens: i64,
    max: i64,
    ratio: i64,
}

impl GrpcThrottling {
    /// A full bucket.
    pub fn new(config: &GrpcThrottlingConfig) -> Self {
        let max = i64::from(config.max_tokens) * MILLI;
        GrpcThrottling {
            tokens: max,
            max,
            ratio: i64::from(config.token_ratio_milli),
        }
    }

    /// Tokens left, in thousandths.
    pub fn tokens_milli(&self) -> i64 {
        self.tokens
    }
}

impl Control for GrpcThrottling {
    fn attempt_ended(&mut self, _now: Micros, end: &AttemptEnd) {
        if end.transient {
            self.tokens = (self.tokens - MILLI).max(0);
        }
    }

    fn admit_retry(&mut self, _now: Micros, _timed_out: bool) -> bool {
        // `tokens > maxTokens / 2`; both sides in thousandths, and `max` is even.
        self.tokens > self.max / 2
    }

    fn call_ended(&mut self, _now: Micros, end: &CallEnd) {
        if end.success {
            self.tokens = (self.tokens + self.ratio).min(self.max);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::outcome::AttemptOutcome;

    fn failure() -> AttemptEnd {
        AttemptEnd {
            status: None,
            retry: false,
            outcome: AttemptOutcome::Rejected,
            transient: true,
            latency: 1,
        }
    }

    const SUCCESS: CallEnd = CallEnd {
        success: true,
        last_retry_after_timeout: None,
    };

    /// The gRFC's example, `maxTokens = 10, tokenRatio = 0.1`: retries are allowed while
    /// tokens > 5, so after five failures (10 -> 5) the next retry is throttled, and it takes
    /// one success (5 -> 5.1) to allow one again.
    #[test]
    fn retries_stop_at_half_the_tokens_and_successes_refill_them() {
        let mut bucket = GrpcThrottling::new(&GrpcThrottlingConfig {
            max_tokens: 10,
            token_ratio_milli: 100,
        });
        for failures in 1..=4 {
            bucket.attempt_ended(0, &failure());
            assert!(bucket.admit_retry(0, false), "after {failures} failures");
        }
        bucket.attempt_ended(0, &failure());
        assert_eq!(bucket.tokens_milli(), 5000);
        assert!(!bucket.admit_retry(0, false));
        bucket.call_ended(0, &SUCCESS);
        assert_eq!(bucket.tokens_milli(), 5100);
        assert!(bucket.admit_retry(0, false));
        // Successes never fill it above the maximum, failures never below zero.
        for _ in 0..100 {
            bucket.call_ended(0, &SUCCESS);
        }
        assert_eq!(bucket.tokens_milli(), 10_000);
        for _ in 0..100 {
            bucket.attempt_ended(0, &failure());
        }
        assert_eq!(bucket.tokens_milli(), 0);
        // A failure that is not retryable costs nothing.
        bucket.attempt_ended(
            0,
            &AttemptEnd {
                transient: false,
                ..failure()
            },
        );
        assert_eq!(bucket.tokens_milli(), 0);
    }
}
