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
//! Without more, the pool is one of HTTP/2 streams: the limit is on concurrency, and one
//! more request overflows. Envoy's HTTP/1.1 pool carries one request per connection: at most
//! `max_connections` (and `max_requests`) are in flight, and a request that finds every
//! connection busy waits for one, up to `max_pending_requests` waiting (each 1024 by default);
//! one more overflows. A request that waits keeps its place until a connection frees, first
//! come first served, or until its caller's deadline; its attempt (and its per-try timeout,
//! which Envoy starts when the request gets a connection) starts when it goes out. Writing
//! `max_connections` or `max_pending_requests` makes the pool an HTTP/1.1 one.
//! The thresholds are per Envoy process and not coordinated across Envoys, so the state is kept
//! per client process, or per calling instance at a tier (see [`crate::control::Scope`]).

use super::{AttemptEnd, Control};
use crate::base::random::Stream;
use crate::base::time::Micros;

/// Envoy's default `max_requests`.
pub const DEFAULT_MAX_REQUESTS: u64 = 1024;

/// Envoy's default `max_connections` and `max_pending_requests`.
pub const DEFAULT_HTTP1_LIMIT: u64 = 1024;

/// The pool's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionPoolConfig {
    /// Attempts that may be in flight at once (`max_requests`).
    pub max_requests: u64,
    /// HTTP/1.1: connections, each carrying one attempt (`max_connections`); `None` for HTTP/2.
    pub max_connections: Option<u64>,
    /// HTTP/1.1: attempts that may wait for a connection (`max_pending_requests`); `None` for
    /// HTTP/2, where one more overflows at once.
    pub max_pending: Option<u64>,
}

impl Default for ConnectionPoolConfig {
    fn default() -> Self {
        ConnectionPoolConfig {
            max_requests: DEFAULT_MAX_REQUESTS,
            max_connections: None,
            max_pending: None,
        }
    }
}

impl ConnectionPoolConfig {
    /// The most attempts in flight: `max_requests`, and one per connection.
    pub fn in_flight(&self) -> u64 {
        self.max_connections
            .map_or(self.max_requests, |connections| {
                connections.min(self.max_requests)
            })
    }
}

/// One caller's pool: its attempts in flight.
#[derive(Debug)]
pub struct ConnectionPool {
    config: ConnectionPoolConfig,
    /// Attempts sent whose result the caller has not learned.
    active: u64,
    /// Attempts waiting for a connection.
    pending: u64,
}

impl ConnectionPool {
    /// A pool with nothing in flight.
    pub fn new(config: &ConnectionPoolConfig) -> Self {
        ConnectionPool {
            config: *config,
            active: 0,
            pending: 0,
        }
    }
}

impl Control for ConnectionPool {
    /// Checked when the attempt is about to go out and counted when it does: a send a later
    /// control refuses or holds never takes a slot it would not use.
    fn admit_send(&mut self, _now: Micros, _retry: bool, _random: &mut Stream) -> bool {
        self.active < self.config.in_flight()
    }

    fn waits(&mut self, _now: Micros) -> bool {
        let room = self
            .config
            .max_pending
            .is_some_and(|most| self.pending < most);
        self.pending += u64::from(room);
        room
    }

    fn has_room(&self) -> bool {
        self.active < self.config.in_flight()
    }

    fn wait_ended(&mut self) {
        self.pending -= 1;
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
        let mut pool = ConnectionPool::new(&ConnectionPoolConfig {
            max_requests: 3,
            max_connections: None,
            max_pending: None,
        });
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
        assert!(!pool.waits(10), "an HTTP/2 pool overflows at once");
    }

    /// An HTTP/1.1 pool (`max_pending_requests = 2`) lets two attempts wait when every
    /// connection is busy, and refuses the third; a wait that ends gives its place back.
    #[test]
    fn an_http1_pool_lets_max_pending_wait() {
        let mut pool = ConnectionPool::new(&ConnectionPoolConfig {
            max_requests: 1024,
            max_connections: Some(1),
            max_pending: Some(2),
        });
        let mut random = Stream::new(1, Purpose::ClientControl);
        assert!(pool.admit_send(0, false, &mut random));
        pool.sent(0);
        assert!(!pool.admit_send(0, false, &mut random) && !pool.has_room());
        assert!(pool.waits(0) && pool.waits(0) && !pool.waits(0));
        pool.wait_ended();
        assert!(pool.waits(0));
    }
}
