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
//! is reached and closes (with a fresh window of the configured kind) if not. Every failed
//! attempt counts as a failure, as resilience4j records every exception by default. Attempts
//! that end after a transition are recorded in the new state's window, as resilience4j does;
//! open, that is the window of the state that opened it (closed, or half-open: a count window
//! of `half_open_calls` even when the closed one is time-based), and what it records there
//! changes nothing. Each window knows its own size and minimum, so no call is ever recorded
//! against another state's rule.
//!
//! Defaults: failure rate 50%, slow-call rate 100%, slow calls over 60 s, a count window of
//! 100 calls, 100 calls at least, 60 s open, 10 calls half-open.

use super::{AttemptEnd, Control, SlidingWindow};
use crate::base::random::Stream;
use crate::base::time::{MICROS_PER_SECOND, Micros};

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

/// The window a state records calls in, with the rule for when its rates count.
#[derive(Debug)]
struct Window {
    /// Calls recorded before a rate counts: `minimum_calls`, capped at the size of a count
    /// window (resilience4j's `CircuitBreakerMetrics` does the same).
    minimum: u32,
    calls: Calls,
}

/// Calls, failed calls and slow calls over a window.
#[derive(Debug)]
enum Calls {
    /// The last `size` calls.
    Count(CallRing),
    /// Calls, failed and slow per one-second bucket.
    Time(SlidingWindow<3>),
}

/// A ring of the last `size` calls, one byte each (bit 0 failed, bit 1 slow), grown as calls
/// come so that a large window that sees few calls costs few bytes.
#[derive(Debug)]
struct CallRing {
    ring: Vec<u8>,
    size: usize,
    next: usize,
    failed: u32,
    slow: u32,
}

impl Window {
    /// The closed state's window: the configured one.
    fn closed(config: &CircuitBreakerConfig) -> Window {
        match config.window {
            BreakerWindow::Calls(size) => Window::of_calls(size, config.minimum_calls),
            BreakerWindow::Seconds(seconds) => Window {
                minimum: config.minimum_calls,
                calls: Calls::Time(SlidingWindow::new(seconds as usize, MICROS_PER_SECOND)),
            },
        }
    }

    /// The half-open state's window: a fresh count window of the trial calls, whatever the
    /// closed state's is (resilience4j's `CircuitBreakerMetrics.forHalfOpen`).
    fn half_open(config: &CircuitBreakerConfig) -> Window {
        Window::of_calls(config.half_open_calls, config.minimum_calls)
    }

    fn of_calls(size: u32, minimum: u32) -> Window {
        Window {
            minimum: minimum.min(size),
            calls: Calls::Count(CallRing {
                ring: Vec::new(),
                size: size.max(1) as usize,
                next: 0,
                failed: 0,
                slow: 0,
            }),
        }
    }

    /// Records a call; returns (calls, failed, slow) over the window once at least `minimum`
    /// calls are in it.
    fn record(&mut self, now: Micros, failed: bool, slow: bool) -> Option<[u32; 3]> {
        let counts = match &mut self.calls {
            Calls::Count(ring) => ring.record(failed, slow),
            Calls::Time(window) => {
                window.add(now, [1, i64::from(failed), i64::from(slow)]);
                window.sums(now).map(|sum| sum as u32)
            }
        };
        (counts[0] >= self.minimum).then_some(counts)
    }
}

impl CallRing {
    fn record(&mut self, failed: bool, slow: bool) -> [u32; 3] {
        let entry = u8::from(failed) | u8::from(slow) << 1;
        if self.ring.len() < self.size {
            if self.ring.len() == self.ring.capacity() {
                // Doubling, but never past the window's size.
                let more = self.ring.len().max(8).min(self.size - self.ring.len());
                self.ring.reserve_exact(more);
            }
            self.ring.push(entry);
        } else {
            let old = std::mem::replace(&mut self.ring[self.next], entry);
            self.failed -= u32::from(old & 1);
            self.slow -= u32::from(old >> 1);
        }
        self.next = (self.next + 1) % self.size;
        self.failed += u32::from(failed);
        self.slow += u32::from(slow);
        [self.ring.len() as u32, self.failed, self.slow]
    }
}

/// One breaker.
#[derive(Debug)]
pub struct CircuitBreaker {
    config: CircuitBreakerConfig,
    state: BreakerState,
    /// The window of the state that set it: closed, or the last half-open. Opening keeps it
    /// (calls that end while open are recorded in it and change nothing, as resilience4j's
    /// `OpenState` records them); half-open and closed each start a fresh one.
    window: Window,
}

impl CircuitBreaker {
    /// A closed breaker with an empty window.
    pub fn new(config: &CircuitBreakerConfig) -> Self {
        CircuitBreaker {
            config: *config,
            state: BreakerState::Closed,
            window: Window::closed(config),
        }
    }

    /// Its state as of the last call it saw.
    pub fn state(&self) -> BreakerState {
        self.state
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
            self.window = Window::half_open(&self.config);
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
        let slow = end.latency > self.config.slow_call_duration;
        let Some(counts) = self.window.record(now, !end.succeeded(), slow) else {
            return;
        };
        let exceeded = self.exceeded(counts);
        match self.state {
            BreakerState::Closed | BreakerState::HalfOpen { .. } if exceeded => {
                self.state = BreakerState::Open {
                    until: now + self.config.wait_open,
                };
            }
            BreakerState::HalfOpen { .. } => {
                self.state = BreakerState::Closed;
                self.window = Window::closed(&self.config);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::random::Purpose;
    use crate::vocabulary::outcome::AttemptOutcome;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngSeed};

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
        let mut random = Stream::new(1, Purpose::ClientControl);
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
        let mut random = Stream::new(1, Purpose::ClientControl);
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

    /// resilience4j's state machine written as plainly as it can be, for the property below:
    /// every call the current window recorded is kept, and the counts are a scan over them.
    struct Reference {
        config: CircuitBreakerConfig,
        state: BreakerState,
        /// The current window's kind and size: the configured one, or a count window of the
        /// trial calls from half-open on (until the breaker closes).
        window: BreakerWindow,
        /// Every call recorded in the current window: (time, failed, slow).
        recorded: Vec<(Micros, bool, bool)>,
    }

    impl Reference {
        fn new(config: CircuitBreakerConfig) -> Reference {
            Reference {
                config,
                state: BreakerState::Closed,
                window: config.window,
                recorded: Vec::new(),
            }
        }

        fn admit(&mut self, now: Micros) -> bool {
            if let BreakerState::Open { until } = self.state {
                if now < until {
                    return false;
                }
                self.state = BreakerState::HalfOpen {
                    permits: self.config.half_open_calls,
                };
                self.window = BreakerWindow::Calls(self.config.half_open_calls);
                self.recorded.clear();
            }
            match self.state {
                BreakerState::HalfOpen { permits: 0 } => false,
                BreakerState::HalfOpen { permits } => {
                    self.state = BreakerState::HalfOpen {
                        permits: permits - 1,
                    };
                    true
                }
                _ => true,
            }
        }

        fn cancel(&mut self) {
            if let BreakerState::HalfOpen { permits } = self.state {
                self.state = BreakerState::HalfOpen {
                    permits: permits + 1,
                };
            }
        }

        fn end(&mut self, now: Micros, ok: bool, latency: Micros) {
            self.recorded
                .push((now, !ok, latency > self.config.slow_call_duration));
            let (counted, minimum): (Vec<_>, u32) = match self.window {
                BreakerWindow::Calls(size) => (
                    self.recorded.iter().rev().take(size as usize).collect(),
                    self.config.minimum_calls.min(size),
                ),
                BreakerWindow::Seconds(seconds) => (
                    self.recorded
                        .iter()
                        .filter(|(at, _, _)| {
                            now / MICROS_PER_SECOND - at / MICROS_PER_SECOND < u64::from(seconds)
                        })
                        .collect(),
                    self.config.minimum_calls,
                ),
            };
            let calls = counted.len() as u32;
            if calls < minimum || matches!(self.state, BreakerState::Open { .. }) {
                return;
            }
            let failed = counted.iter().filter(|call| call.1).count() as f32;
            let slow = counted.iter().filter(|call| call.2).count() as f32;
            let calls = calls as f32;
            if failed * 100.0 >= self.config.failure_rate * calls
                || slow * 100.0 >= self.config.slow_call_rate * calls
            {
                self.state = BreakerState::Open {
                    until: now + self.config.wait_open,
                };
            } else if matches!(self.state, BreakerState::HalfOpen { .. }) {
                self.state = BreakerState::Closed;
                self.window = self.config.window;
                self.recorded.clear();
            }
        }
    }

    fn config() -> impl Strategy<Value = CircuitBreakerConfig> {
        let window = prop_oneof![
            (1..20u32).prop_map(BreakerWindow::Calls),
            (1..10u32).prop_map(BreakerWindow::Seconds),
        ];
        (
            window,
            1..25u32,
            1..=100u32,
            1..=100u32,
            0..2_000u64,
            1..3_000_000u64,
            1..12u32,
        )
            .prop_map(
                |(window, minimum_calls, failure, slow, slow_call_duration, wait_open, trials)| {
                    CircuitBreakerConfig {
                        failure_rate: failure as f32,
                        slow_call_rate: slow as f32,
                        slow_call_duration,
                        window,
                        minimum_calls,
                        wait_open,
                        half_open_calls: trials,
                    }
                },
            )
    }

    /// What happens next: 0-4 an attempt asks to go out, 5 a later control refuses the oldest
    /// admitted one, 6-9 the oldest admitted one ends; after `advance` microseconds, with its
    /// success and latency.
    fn steps() -> impl Strategy<Value = Vec<(u8, Micros, bool, Micros)>> {
        let advance = prop_oneof![Just(0u64), 0..2_000u64, 0..1_500_000u64];
        prop::collection::vec((0..10u8, advance, any::<bool>(), 0..4_000u64), 1..400)
    }

    proptest! {
        #![proptest_config(Config {
            cases: 2_000,
            rng_seed: RngSeed::Fixed(0x0b4e_a7e4),
            failure_persistence: None,
            ..Config::default()
        })]

        /// The breaker's whole state machine, with count and time windows, against the plain
        /// reference above (issue 23, case 1): after every admission, refusal and result the
        /// two agree on the answer and the state, and nothing panics. The breaker once kept
        /// the half-open ring after reopening and indexed past it with a time window
        /// (`index out of bounds: the len is 5 but the index is 5`).
        #[test]
        fn the_breaker_follows_the_reference_state_machine(config in config(), steps in steps()) {
            let mut breaker = CircuitBreaker::new(&config);
            let mut reference = Reference::new(config);
            let mut random = Stream::new(1, Purpose::ClientControl);
            let mut now = 0;
            let mut in_flight = 0u32;
            for (step, advance, ok, latency) in steps {
                now += advance;
                match step {
                    0..=4 => {
                        let admitted = breaker.admit_send(now, false, &mut random);
                        prop_assert_eq!(admitted, reference.admit(now));
                        in_flight += u32::from(admitted);
                    }
                    5 if in_flight > 0 => {
                        breaker.send_cancelled(now);
                        reference.cancel();
                        in_flight -= 1;
                    }
                    6..=9 if in_flight > 0 => {
                        breaker.attempt_ended(now, &ended(ok, latency));
                        reference.end(now, ok, latency);
                        in_flight -= 1;
                    }
                    _ => {}
                }
                prop_assert_eq!(breaker.state(), reference.state, "at {} with {:?}", now, config);
            }
        }
    }
}
