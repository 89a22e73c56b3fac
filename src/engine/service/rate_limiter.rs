//! The upstream's rate limiter: a token bucket answering 429 with a Retry-After.
//!
//! Tokens refill continuously at `rate` per second up to `burst`; a request takes one or is
//! refused. The Retry-After of a refusal is the time until a whole token is back, rounded up to
//! the configured granularity (1 ms by default; `"1s"` gives what an HTTP header can say), so a
//! client that honours it exactly finds a token when it returns, unless others took it first.

use crate::base::time::{MICROS_PER_SECOND, Micros};
use crate::model::RateLimit;

/// One bucket of tokens.
#[derive(Debug, Clone, Copy)]
struct TokenBucket {
    tokens: f64,
    updated: Micros,
}

/// A token bucket, global or one per client.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    tokens_per_micro: f64,
    burst: f64,
    granularity: Micros,
    per_client: bool,
    buckets: Vec<TokenBucket>,
}

impl RateLimiter {
    /// The limiter `config` describes, for `clients` clients. Buckets start full.
    pub fn new(config: &RateLimit, clients: u64) -> RateLimiter {
        let full = TokenBucket {
            tokens: config.burst,
            updated: 0,
        };
        RateLimiter {
            tokens_per_micro: config.rate / MICROS_PER_SECOND as f64,
            burst: config.burst,
            granularity: config.retry_after_granularity,
            per_client: config.per_client,
            buckets: vec![
                full;
                if config.per_client {
                    clients as usize
                } else {
                    1
                }
            ],
        }
    }

    /// Takes a token for a request of `client` at `now`, or returns the Retry-After: the wait
    /// until a token is free, rounded up to the granularity.
    #[inline]
    pub fn admit(&mut self, now: Micros, client: u32) -> Result<(), Micros> {
        let bucket = &mut self.buckets[if self.per_client { client as usize } else { 0 }];
        let refill = (now - bucket.updated) as f64 * self.tokens_per_micro;
        bucket.tokens = (bucket.tokens + refill).min(self.burst);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        let wait = ((1.0 - bucket.tokens) / self.tokens_per_micro).ceil() as Micros;
        Err(wait.div_ceil(self.granularity).max(1) * self.granularity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(rate: f64, burst: f64, granularity_ms: u64) -> RateLimiter {
        let config = RateLimit {
            rate,
            burst,
            per_client: false,
            retry_after_granularity: granularity_ms * 1000,
        };
        RateLimiter::new(&config, 1)
    }

    #[test]
    fn a_burst_passes_then_the_rate_holds() {
        let mut limiter = limiter(10.0, 3.0, 1);
        for _ in 0..3 {
            assert_eq!(limiter.admit(0, 0), Ok(()));
        }
        // Empty: the next token is 100 ms away.
        assert_eq!(limiter.admit(0, 0), Err(100_000));
        assert_eq!(limiter.admit(40_000, 0), Err(60_000));
        assert_eq!(limiter.admit(100_000, 0), Ok(()));
    }

    #[test]
    fn retry_after_rounds_up_to_the_granularity() {
        let mut limiter = limiter(10.0, 1.0, 1000);
        assert_eq!(limiter.admit(0, 0), Ok(()));
        assert_eq!(limiter.admit(0, 0), Err(1_000_000));
    }
}
