//! Adaptive concurrency limits: how many requests a service lets in at once, learnt from the
//! latency of those it served. Above the limit a request is rejected at once.
//!
//! (Stub: the algorithms are being written.)

use crate::random::Stream;
use crate::time::Micros;

/// A limit algorithm, as configured.
#[derive(Debug, Clone, PartialEq)]
pub enum LimitAlgorithm {
    /// A fixed limit.
    Fixed(u64),
}

/// A running concurrency limit.
#[derive(Debug, Clone)]
pub struct ConcurrencyLimit {
    limit: u64,
}

impl ConcurrencyLimit {
    /// The limit `algorithm` starts with.
    pub fn new(algorithm: &LimitAlgorithm) -> ConcurrencyLimit {
        match algorithm {
            LimitAlgorithm::Fixed(limit) => ConcurrencyLimit { limit: *limit },
        }
    }

    /// Requests that may be in the service at once now.
    #[inline]
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// A request that was admitted when `inflight` requests were in the service (itself
    /// included) ended at `now` after `rtt` in the service; `dropped` if it timed out or was
    /// dropped rather than served. `random` is the limit's own stream, for algorithms that
    /// jitter.
    pub fn sample(
        &mut self,
        _now: Micros,
        _rtt: Micros,
        _inflight: u64,
        _dropped: bool,
        _random: &mut Stream,
    ) {
    }
}
