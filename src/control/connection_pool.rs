//! Envoy's limit on a cluster's requests in flight: the `max_requests` threshold of its
//! `circuit_breakers` (`circuit_breaker.proto`, default 1024).
//!
//! Each Envoy process counts, per upstream cluster, the requests it has sent and not yet
//! finished; a request that would pass `max_requests` is not sent: the connection pool
//! overflows, Envoy counts `upstream_rq_pending_overflow` and answers a local 503 with
//! `x-envoy-overloaded`, and its router never retries an overflow (`RetryStateImpl` returns
//! "no retry" for a reset of reason `Overflow`). Here the caller's call ends at once with the
//! failure reason `pool-overflow`; at a tier the calling service then answers its
//! `failure_status`, as the Envoy's 503 reaches its downstream.
//!
//! The limit is on concurrency, not on a rate, so it is a pool of HTTP/2 streams (or of
//! HTTP/1.1 connections with no request waiting for one). Envoy's HTTP/1.1 pools also let
//! requests wait for a free connection (`max_connections`, then up to `max_pending_requests`
//! waiting); that wait is not modelled, and a scenario or an import that sets either is refused.
//! The thresholds are per Envoy process and not coordinated across Envoys, so the state is kept
//! per client process, or per calling instance at a tier (see [`crate::control::Scope`]).

use super::{AttemptEnd, Control};
use crate::base::random::Stream;
use crate::base::time::Micros;

/// Envoy's default `max_requests`.
pub const DEFAULT_MAX_REQUESTS: u64 = 1024;

/// Why `max_connections` and `max_pending_requests` are refused, in a scenario and in an
/// imported Envoy config.
pub const POOL_WAIT_NOT_MODELLED: &str = "the wait of Envoy's HTTP/1.1 pool, where requests wait for one of max_connections, up to max_pending_requests of them";

/// The pool's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionPoolConfig {
    /// Attempts that may be in flight at once (`max_requests`).
    pub max_requests: u64,
}

impl Default for ConnectionPoolConfig {
    fn default() -> Self {
        ConnectionPoolConfig {
            max_requests: DEFAULT_MAX_REQUESTS,
        }
    }
}

/// One caller's pool: its attempts in flight.
#[derive(Debug)]
pub struct ConnectionPool {
    config: ConnectionPoolConfig,
    /// Attempts sent whose result the caller has not learned.
    active: u64,
}

impl ConnectionPool {
    /// A pool with nothing in flight.
    pub fn new(config: &ConnectionPoolConfig) -> Self {
        ConnectionPool {
            config: *config,
            active: 0,
        }
    }
}

impl Control for ConnectionPool {
    /// Checked when the attempt is about to go out and counted when it does: a send a later
    /// control refuses or holds never takes a slot it would not use.
    fn admit_send(&mut self, _now: Micros, _retry: bool, _random: &mut Stream) -> bool {
        self.active < self.config.max_requests
    }

    fn sent(&mut self, _now: Micros) {
        self.active += 1;
    }

    fn attempt_ended(&mut self, _now: Micros, _end: &AttemptEnd) {
        self.active -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::random::Purpose;
    use crate::vocabulary::outcome::AttemptOutcome;

    /// `max_requests` in flight are admitted, the next is not, and an attempt that ends frees
    /// its slot (Envoy's `ResourceManager::requests().canCreate()`).
    #[test]
    fn admits_up_to_max_requests_in_flight() {
        let mut pool = ConnectionPool::new(&ConnectionPoolConfig { max_requests: 3 });
        let mut random = Stream::new(1, Purpose::ClientControl);
        for _ in 0..3 {
            assert!(pool.admit_send(0, false, &mut random));
            pool.sent(0);
        }
        assert!(!pool.admit_send(0, false, &mut random));
        assert!(!pool.admit_send(0, true, &mut random));
        let ended = AttemptEnd {
            retry: false,
            outcome: AttemptOutcome::Ok,
            status: Some(200),
            transient: false,
            latency: 10,
        };
        pool.attempt_ended(10, &ended);
        assert!(pool.admit_send(10, true, &mut random));
    }
}
