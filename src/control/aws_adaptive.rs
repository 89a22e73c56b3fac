//! The AWS SDKs' adaptive retry mode: a client-side rate limiter that learns the rate the
//! service accepts, with CUBIC (botocore `retries/adaptive.py`, `retries/bucket.py`; the same
//! constants in smithy-typescript's `DefaultRateLimiter`).
//!
//! It never refuses: it delays. Until the first throttling response it does nothing. From then
//! on every attempt, first attempts included, takes a token from a bucket that fills at the
//! learnt rate; without a token the send waits until one is due. After every response the rate
//! is recomputed:
//!
//! - the measured send rate: responses per 0.5 s bucket, smoothed `0.8 * new + 0.2 * old`;
//! - on a throttling response: `w_max` = the measured rate (or the bucket's rate, if lower,
//!   once enabled), `K = cbrt(w_max * (1 - beta) / C)`, new rate `w_max * beta`;
//! - otherwise: `C * (t - t_last_throttle - K)^3 + w_max`;
//! - the bucket's rate is `max(min(new, 2 * measured), 0.5)` tokens a second, its capacity
//!   `max(new, 1)`;
//!
//! with `beta = 0.7`, `C = 0.4`. A throttling response is a 429 (AWS's `TooManyRequests` and
//! the other throttling error codes are what a 429 means over HTTP). Waiting sends take their
//! tokens in the order they asked (botocore's blocked threads retry in no fixed order; FIFO is
//! the deterministic choice): each is promised the next token due at the rate of the moment,
//! and a change of rate applies to the tokens not yet promised. A send
//! whose token would come after its call's deadline does not wait and reserves nothing: the
//! call ends `deadline-exhausted`, as a caller's own timeout would end it (botocore itself
//! would block without limit).

use super::{AttemptEnd, Control};
use crate::base::time::{MICROS_PER_SECOND, Micros};

/// CUBIC's multiplicative decrease.
const BETA: f64 = 0.7;
/// CUBIC's scale constant.
const SCALE: f64 = 0.4;
/// Weight of the newest bucket in the measured rate.
const SMOOTHING: f64 = 0.8;
/// Width of a measurement bucket, seconds.
const BUCKET_S: f64 = 0.5;
/// The bucket's lowest fill rate, tokens a second.
const MIN_RATE: f64 = 0.5;
/// The bucket's rate is at most this multiple of the measured rate.
const MAX_RATE_ADJUST: f64 = 2.0;
/// The status of a throttling response.
const THROTTLING_STATUS: u16 = 429;

/// One SDK client's rate limiter.
#[derive(Debug, Default)]
pub struct AwsAdaptive {
    /// Set at the first call: the time the SDK client was created.
    started: bool,
    /// A throttling response has been seen: sends take tokens.
    enabled: bool,
    w_max: f64,
    k: f64,
    last_throttle: f64,
    measured: f64,
    last_bucket: f64,
    count: f64,
    fill_rate: f64,
    max_capacity: f64,
    capacity: f64,
    last_refill: f64,
}

impl AwsAdaptive {
    /// A limiter that has seen nothing.
    pub fn new() -> Self {
        AwsAdaptive::default()
    }

    /// The rate the bucket fills at, tokens a second.
    pub fn fill_rate(&self) -> f64 {
        self.fill_rate
    }

    /// botocore's state when the SDK client is created at `t` (seconds): CUBIC from a rate of
    /// 0.5, a bucket of rate 1, empty.
    fn start(&mut self, t: f64) {
        if self.started {
            return;
        }
        self.started = true;
        self.w_max = MIN_RATE;
        self.k = zero_point(self.w_max);
        self.last_throttle = t;
        self.last_bucket = t.floor();
        self.last_refill = t;
        self.set_rate(t, 1.0);
    }

    /// Adds the tokens due since the last refill. While sends wait for tokens already promised
    /// (`last_refill` is then the time the last of them is due) nothing accrues.
    fn refill(&mut self, t: f64) {
        if t <= self.last_refill {
            return;
        }
        let filled = self.capacity + (t - self.last_refill) * self.fill_rate;
        self.capacity = filled.min(self.max_capacity);
        self.last_refill = t;
    }

    /// The bucket's `max_rate` setter.
    fn set_rate(&mut self, t: f64, rate: f64) {
        self.refill(t);
        self.fill_rate = rate.max(MIN_RATE);
        self.max_capacity = rate.max(1.0);
        self.capacity = self.capacity.min(self.max_capacity);
    }

    /// The rate clocker: counts a response and returns the smoothed rate.
    fn record(&mut self, t: f64) -> f64 {
        let bucket = (t / BUCKET_S).floor() * BUCKET_S;
        self.count += 1.0;
        if bucket > self.last_bucket {
            let rate = self.count / (bucket - self.last_bucket);
            self.measured = rate * SMOOTHING + self.measured * (1.0 - SMOOTHING);
            self.count = 0.0;
            self.last_bucket = bucket;
        }
        self.measured
    }
}

/// CUBIC's `K`: when the curve is back at `w_max`.
fn zero_point(w_max: f64) -> f64 {
    libm::cbrt(w_max * (1.0 - BETA) / SCALE)
}

fn seconds(now: Micros) -> f64 {
    now as f64 / MICROS_PER_SECOND as f64
}

impl Control for AwsAdaptive {
    fn send_delay(&mut self, now: Micros, time_left: Micros) -> Option<Micros> {
        let t = seconds(now);
        self.start(t);
        if !self.enabled {
            return Some(0);
        }
        self.refill(t);
        if self.capacity >= 1.0 {
            self.capacity -= 1.0;
            return Some(0);
        }
        // The next token is due when the bucket, from the later of now and the last promised
        // token, has filled to one at the current rate.
        let from = self.last_refill.max(t);
        let due = from + (1.0 - self.capacity) / self.fill_rate;
        let wait = ((due - t) * MICROS_PER_SECOND as f64).ceil();
        if wait >= time_left as f64 {
            // The call would be over before its token is due: it never waits for one.
            return None;
        }
        self.capacity = 0.0;
        self.last_refill = due;
        Some(wait as Micros)
    }

    fn attempt_ended(&mut self, now: Micros, end: &AttemptEnd) {
        let t = seconds(now);
        self.start(t);
        let measured = self.record(t);
        let new_rate = if end.status == Some(THROTTLING_STATUS) {
            let rate = if self.enabled {
                measured.min(self.fill_rate)
            } else {
                measured
            };
            self.w_max = rate;
            self.k = zero_point(rate);
            self.last_throttle = t;
            self.enabled = true;
            rate * BETA
        } else {
            let dt = t - self.last_throttle - self.k;
            SCALE * dt * dt * dt + self.w_max
        };
        self.set_rate(t, new_rate.min(MAX_RATE_ADJUST * measured));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::outcome::AttemptOutcome;

    fn response(status: u16) -> AttemptEnd {
        AttemptEnd {
            retry: false,
            outcome: if status == 200 {
                AttemptOutcome::Ok
            } else {
                AttemptOutcome::Rejected
            },
            status: Some(status),
            transient: status != 200,
            latency: 1,
        }
    }

    /// botocore's CUBIC on known numbers: responses at 10 a second for 5 s measure 10/s; a
    /// throttle then sets `w_max = 10`, the rate to `7` and `K = cbrt(10 * 0.3 / 0.4) =
    /// cbrt(7.5)`; at `t_throttle + K` the curve is back at 10, capped at twice the measured
    /// rate. Before the throttle nothing is delayed; after it, sends are spaced by the rate.
    #[test]
    fn cubic_learns_the_rate_from_the_first_throttle() {
        let mut limiter = AwsAdaptive::new();
        for tick in 0..50 {
            let now = tick * 100_000;
            assert_eq!(
                limiter.send_delay(now, 1),
                Some(0),
                "disabled before a throttle"
            );
            limiter.attempt_ended(now, &response(200));
        }
        let measured = limiter.measured;
        assert!((measured - 10.0).abs() < 0.5, "measured {measured}");
        limiter.attempt_ended(5_000_000, &response(429));
        let measured = limiter.measured;
        assert!((limiter.fill_rate() - 0.7 * measured).abs() < 1e-9);
        let k = libm::cbrt(measured * 0.3 / 0.4);
        assert!((limiter.k - k).abs() < 1e-12);
        let at_k = 5.0 + k;
        limiter.attempt_ended((at_k * 1e6) as Micros, &response(200));
        // CUBIC is back at w_max, but no more than twice the (now lower) measured rate.
        let expected = measured.min(2.0 * limiter.measured);
        assert!(
            (limiter.fill_rate() - expected).abs() < 1e-3 * expected,
            "{} against {expected}",
            limiter.fill_rate()
        );
        // Now it delays: tokens at the learnt rate, in order.
        let now = (at_k * 1e6) as Micros;
        // The tokens saved up (at most the capacity, the rate) go at once; then one per 1/rate.
        let saved = limiter.max_capacity.floor() as usize;
        let delays: Vec<Micros> = (0..saved + 4)
            .map(|_| limiter.send_delay(now, u64::MAX).expect("no deadline"))
            .collect();
        // A send that could not get a token before its deadline reserves none.
        let promised = limiter.last_refill;
        assert_eq!(limiter.send_delay(now, 1), None);
        assert_eq!(limiter.last_refill, promised);
        assert!(
            delays[..saved].iter().all(|delay| *delay == 0),
            "{delays:?}"
        );
        assert!(delays[saved] > 0, "{delays:?}");
        let gap = 1e6 / limiter.fill_rate();
        for pair in delays[saved..].windows(2) {
            assert!(
                (pair[1] as f64 - pair[0] as f64 - gap).abs() <= 1.0,
                "{delays:?}"
            );
        }
    }

    /// The bucket never fills below 0.5 tokens a second or above twice the measured rate.
    #[test]
    fn the_rate_is_bounded_by_the_measurement() {
        let mut limiter = AwsAdaptive::new();
        limiter.attempt_ended(0, &response(429));
        assert_eq!(limiter.fill_rate(), MIN_RATE, "nothing measured yet");
        for tick in 1..=100 {
            limiter.attempt_ended(tick * 10_000, &response(200));
        }
        assert!(limiter.fill_rate() <= 2.0 * limiter.measured + 1e-9);
    }
}
