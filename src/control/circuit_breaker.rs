//! A circuit breaker with resilience4j's semantics and defaults (`CircuitBreakerConfig`,
//! `CircuitBreakerStateMachine`, `CircuitBreakerMetrics`).
//!
//! It guards every attempt. **Closed**, it records each attempt's outcome in a sliding window
//! (the last `window_calls` calls, or the calls of the last `window` seconds in one-second
//! buckets) and opens when, with at least `minimum_calls` recorded (capped at the window's size
//! for a count window), the failure rate reaches `failure_rate` or the rate of calls slower than
//! `slow_call_duration` reaches `slow_call_rate` (rates in percent, `>=`; slow means strictly
//! longer). **Open**, it refuses every attempt; the call ends with `circuit-open`. After
//! `wait_open` the next attempt finds it **half-open** (resilience4j's lazy transition): it
//! admits `half_open_calls` attempts, refuses the rest, and records them in a fresh window of
//! that size; once `min(minimum_calls, half_open_calls)` are recorded it opens again if a rate
//! is reached and closes (with a fresh window) if not. Every failed attempt counts as a
//! failure, as resilience4j records every exception by default. Attempts that end after a
//! transition are recorded in the new state's window, as resilience4j does.
//!
//! Defaults: failure rate 50%, slow-call rate 100%, slow calls over 60 s, a count window of
//! 100 calls, 100 calls at least, 60 s open, 10 calls half-open.

use super::{AttemptEnd, Control, SlidingWindow};
use crate::random::Stream;
use crate::time::{MICROS_PER_SECOND, Micros};

/// Settings of the breaker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CircuitBreakerConfig {
    /// Failure rate, percent, at which it opens (50).
    pub failure_rate: f32,
    /// Slow-call rate, percent, at which it opens (100).
    pub slow_call_rate: f32,
    /// A call longer than this is slow (60 s).
    pub slow_call_duration: Micros,
    /// The sliding window (the last 100 calls).
    pub window: BreakerWindow,
    /// Calls recorded before a rate counts (100).
    pub minimum_calls: u32,
    /// How long it stays open (60 s).
    pub wait_open: Micros,
    /// Calls let through half-open (10).
    pub half_open_calls: u32,
}

impl Default for CircuitBreakerConfig {
    fn default() -> Self {
        CircuitBreakerConfig {
            failure_rate: 50.0,
            slow_call_rate: 100.0,
            slow_call_duration: 60 * MICROS_PER_SECOND,
            window: BreakerWindow::Calls(100),
            minimum_calls: 100,
            wait_open: 60 * MICROS_PER_SECOND,
            half_open_calls: 10,
        }
    }
}

/// What the breaker's rates are computed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerWindow {
    /// The last this many calls (resilience4j's `COUNT_BASED`).
    Calls(u32),
    /// The calls of the last this many seconds (`TIME_BASED`).
    Seconds(u32),
}

/// Where the breaker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls go through and are recorded.
    Closed,
    /// Calls are refused until the given time.
    Open {
        /// When the next attempt finds it half-open.
        until: Micros,
    },
    /// A few trial calls go through.
    HalfOpen {
        /// Trial calls still to let through.
        permits: u32,
    },
}

/// Calls, failed calls and slow calls over the window.
#[derive(Debug)]
enum Metrics {
    /// A ring of the last calls: bit 0 failed, bit 1 slow.
    Count {
        ring: Vec<u8>,
        next: usize,
        calls: u32,
        failed: u32,
        slow: u32,
    },
    /// Calls, failed and slow per one-second bucket.
    Time(SlidingWindow<3>),
}

impl Metrics {
    fn new(window: BreakerWindow) -> Metrics {
        match window {
            BreakerWindow::Calls(size) => Metrics::Count {
                ring: Vec::with_capacity(size as usize),
                next: 0,
                calls: 0,
                failed: 0,
                slow: 0,
            },
            BreakerWindow::Seconds(seconds) => {
                Metrics::Time(SlidingWindow::new(seconds as usize, MICROS_PER_SECOND))
            }
        }
    }

    /// Records a call and returns (calls, failed, slow) over the window.
    fn record(&mut self, now: Micros, failed: bool, slow: bool, size: u32) -> [u32; 3] {
        match self {
            Metrics::Count {
                ring,
                next,
                calls,
                failed: failures,
                slow: slows,
            } => {
                let entry = u8::from(failed) | u8::from(slow) << 1;
                if ring.len() < size as usize {
                    ring.push(entry);
                    *calls += 1;
                } else {
                    let old = std::mem::replace(&mut ring[*next], entry);
                    *failures -= u32::from(old & 1);
                    *slows -= u32::from(old >> 1);
                }
                *next = (*next + 1) % size as usize;
                *failures += u32::from(failed);
                *slows += u32::from(slow);
                [*calls, *failures, *slows]
            }
            Metrics::Time(window) => {
                window.add(now, [1, i64::from(failed), i64::from(slow)]);
                window.sums(now).map(|sum| sum as u32)
            }
        }
    }
}

/// One breaker.
#[derive(Debug)]
pub struct CircuitBreaker {
    config: CircuitBreakerConfig,
    state: BreakerState,
    metrics: Metrics,
}

impl CircuitBreaker {
    /// A closed breaker with an empty window.
    pub fn new(config: &CircuitBreakerConfig) -> Self {
        CircuitBreaker {
            config: *config,
            state: BreakerState::Closed,
            metrics: Metrics::new(config.window),
        }
    }

    /// Its state as of the last call it saw.
    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// The window's size and the calls it needs before a rate counts, in the current state.
    fn window_rule(&self) -> (u32, u32) {
        match (self.state, self.config.window) {
            (BreakerState::HalfOpen { .. }, _) => {
                let size = self.config.half_open_calls;
                (size, self.config.minimum_calls.min(size))
            }
            (_, BreakerWindow::Calls(size)) => (size, self.config.minimum_calls.min(size)),
            (_, BreakerWindow::Seconds(_)) => (0, self.config.minimum_calls),
        }
    }

    fn exceeded(&self, [calls, failed, slow]: [u32; 3]) -> bool {
        let rate = |count: u32| count as f32 * 100.0 / calls as f32;
        rate(failed) >= self.config.failure_rate || rate(slow) >= self.config.slow_call_rate
    }
}

impl Control for CircuitBreaker {
    fn admit_send(&mut self, now: Micros, _retry: bool, _random: &mut Stream) -> bool {
        if let BreakerState::Open { until } = self.state {
            if now < until {
                return false;
            }
            self.state = BreakerState::HalfOpen {
                permits: self.config.half_open_calls,
            };
            self.metrics = Metrics::new(BreakerWindow::Calls(self.config.half_open_calls));
        }
        match &mut self.state {
            BreakerState::HalfOpen { permits } if *permits == 0 => false,
            BreakerState::HalfOpen { permits } => {
                *permits -= 1;
                true
            }
            _ => true,
        }
    }

    fn send_cancelled(&mut self, _now: Micros) {
        if let BreakerState::HalfOpen { permits } = &mut self.state {
            *permits += 1;
        }
    }

    fn attempt_ended(&mut self, now: Micros, end: &AttemptEnd) {
        let (size, minimum) = self.window_rule();
        let slow = end.latency > self.config.slow_call_duration;
        let counts = self.metrics.record(now, !end.succeeded(), slow, size);
        if counts[0] < minimum {
            return;
        }
        let exceeded = self.exceeded(counts);
        match self.state {
            BreakerState::Closed if exceeded => {
                self.state = BreakerState::Open {
                    until: now + self.config.wait_open,
                };
            }
            BreakerState::HalfOpen { .. } if exceeded => {
                self.state = BreakerState::Open {
                    until: now + self.config.wait_open,
                };
            }
            BreakerState::HalfOpen { .. } => {
                self.state = BreakerState::Closed;
                self.metrics = Metrics::new(self.config.window);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::AttemptOutcome;
    use crate::random::Purpose;

    fn ended(ok: bool, latency: Micros) -> AttemptEnd {
        AttemptEnd {
            status: None,
            retry: false,
            outcome: if ok {
                AttemptOutcome::Ok
            } else {
                AttemptOutcome::Rejected
            },
            transient: !ok,
            latency,
        }
    }

    /// resilience4j's state machine with a count window of 10, minimum 10 calls, 50%: five
    /// failures among ten calls open it (50 >= 50); it refuses until `wait_open`, then lets
    /// `half_open_calls` = 3 through and refuses the fourth; three successes close it, and a
    /// fresh window needs ten calls again.
    #[test]
    fn opens_probes_and_closes_at_the_configured_points() {
        let config = CircuitBreakerConfig {
            window: BreakerWindow::Calls(10),
            minimum_calls: 10,
            wait_open: 5 * MICROS_PER_SECOND,
            half_open_calls: 3,
            ..CircuitBreakerConfig::default()
        };
        let mut breaker = CircuitBreaker::new(&config);
        let mut random = Stream::new(1, Purpose::Jitter);
        for call in 0..9 {
            assert!(breaker.admit_send(call, false, &mut random));
            breaker.attempt_ended(call, &ended(call >= 5, 1000));
        }
        // Nine calls: below the minimum, however many failed.
        assert_eq!(breaker.state(), BreakerState::Closed);
        breaker.attempt_ended(9, &ended(true, 1000));
        assert_eq!(breaker.state(), BreakerState::Open { until: 5_000_009 });
        assert!(!breaker.admit_send(5_000_008, false, &mut random));
        for _ in 0..3 {
            assert!(breaker.admit_send(5_000_009, true, &mut random));
        }
        assert!(!breaker.admit_send(5_000_010, true, &mut random));
        // A permit given back by a later control's refusal can be used again.
        breaker.send_cancelled(5_000_010);
        assert!(breaker.admit_send(5_000_011, true, &mut random));
        for _ in 0..3 {
            breaker.attempt_ended(5_000_020, &ended(true, 1000));
        }
        assert_eq!(breaker.state(), BreakerState::Closed);
        for call in 0..9 {
            breaker.attempt_ended(5_000_030 + call, &ended(false, 1000));
        }
        assert_eq!(breaker.state(), BreakerState::Closed);
        breaker.attempt_ended(5_000_040, &ended(true, 1000));
        assert!(matches!(breaker.state(), BreakerState::Open { .. }));
    }

    /// Half-open trials that fail at the threshold reopen it for another `wait_open`; slow
    /// calls count only when strictly longer than `slow_call_duration`.
    #[test]
    fn failed_trials_reopen_and_slow_calls_count() {
        let config = CircuitBreakerConfig {
            window: BreakerWindow::Seconds(10),
            minimum_calls: 4,
            slow_call_rate: 50.0,
            slow_call_duration: 1000,
            wait_open: 100,
            half_open_calls: 2,
            ..CircuitBreakerConfig::default()
        };
        let mut breaker = CircuitBreaker::new(&config);
        let mut random = Stream::new(1, Purpose::Jitter);
        for _ in 0..3 {
            breaker.attempt_ended(0, &ended(true, 1000));
        }
        assert_eq!(breaker.state(), BreakerState::Closed);
        breaker.attempt_ended(0, &ended(true, 1001));
        assert_eq!(breaker.state(), BreakerState::Closed, "1 slow of 4 is 25%");
        breaker.attempt_ended(0, &ended(true, 1001));
        assert_eq!(breaker.state(), BreakerState::Closed, "2 slow of 5 is 40%");
        breaker.attempt_ended(0, &ended(true, 5000));
        assert_eq!(
            breaker.state(),
            BreakerState::Open { until: 100 },
            "3 of 6 is 50%"
        );
        assert!(breaker.admit_send(100, true, &mut random));
        assert!(breaker.admit_send(100, true, &mut random));
        breaker.attempt_ended(150, &ended(false, 10));
        assert!(matches!(breaker.state(), BreakerState::HalfOpen { .. }));
        breaker.attempt_ended(160, &ended(false, 10));
        assert_eq!(breaker.state(), BreakerState::Open { until: 260 });
    }
}
