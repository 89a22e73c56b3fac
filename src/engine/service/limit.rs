//! Adaptive concurrency limits: how many requests a service lets in at once, learnt from the
//! latency of those it served. Above the limit a request is rejected at once.
//!
//! Why a limit at all: a service that admits everything turns overload into queueing, and
//! queueing into timeouts. Every request then costs its caller the full timeout, holds a worker
//! or a queue slot for nothing, and (under a retry policy) comes back as more load. A
//! concurrency limit turns the same overload into fast rejections: the caller learns at once,
//! and the requests that are let in are served at close to the unloaded latency. An *adaptive*
//! limit learns where that point is from the latencies it observes, as TCP congestion control
//! learns a window: latency close to the unloaded latency means there is room, latency well
//! above it means requests are queueing.
//!
//! That is also their weakness under a retry storm. The storm keeps the service saturated, so
//! latency stays high for as long as the storm lasts, and a gradient limit reads sustained high
//! latency as "shrink": Netflix's Gradient2 falls to its `min_limit` and stays there until its
//! long-run average RTT (hundreds of samples long) has caught up with the new latency, and
//! Envoy's gradient controller falls to its `min_concurrency` and, after five updates there,
//! re-measures its minimum RTT at that same floor. Meanwhile most of the retries are rejected
//! at once, and the clients retry again.
//!
//! The algorithms, each followed as its source code (not its prose) has it:
//!
//! - [`LimitAlgorithm::Fixed`]: a constant limit.
//! - [`LimitAlgorithm::Vegas`]: Netflix concurrency-limits `VegasLimit.java` at commit
//!   `78a74b9` (TCP Vegas: estimate the queue from the ratio of the no-load RTT to the RTT).
//! - [`LimitAlgorithm::Gradient2`]: Netflix concurrency-limits `Gradient2Limit.java` and
//!   `ExpAvgMeasurement.java` at commit `78a74b9` (compare each RTT with a long exponential
//!   average of RTTs).
//! - [`LimitAlgorithm::EnvoyGradient`]: Envoy's adaptive concurrency filter, gradient
//!   controller (`source/extensions/filters/http/adaptive_concurrency/controller/
//!   gradient_controller.cc`, configured by `adaptive_concurrency.proto`): periodically measure
//!   a minimum RTT at a pinned low limit, and between measurements scale the limit by
//!   `minRTT × (1 + buffer) / sampleRTT` once per update interval.
//!
//! Everything is deterministic: the only randomness comes from the [`Stream`] passed to
//! [`ConcurrencyLimit::sample`], and the only clock is its `now`. Envoy's timers are evaluated
//! lazily: a timer that falls due between two samples takes effect, at its own time, when the
//! next sample arrives, which is exact because nothing else observes the controller between
//! samples.
//!
//! Two conventions apply to all algorithms. A sample with an RTT of zero is taken as 1 µs
//! (Netflix throws on an RTT that is not positive and Envoy asserts against a zero sample
//! RTT). The adaptive algorithms never report a limit below 1, so a service is never left
//! rejecting everything with no samples to recover from.

use crate::base::random::{Random, Stream};
use crate::base::time::Micros;
use crate::model::overload::{EnvoyGradientConfig, Gradient2Config, LimitAlgorithm, VegasConfig};

/// A running concurrency limit.
#[derive(Debug, Clone)]
pub struct ConcurrencyLimit {
    state: State,
}

/// The running state of each algorithm.
#[derive(Debug, Clone)]
enum State {
    Fixed(u64),
    Vegas(Vegas),
    Gradient2(Gradient2),
    EnvoyGradient(EnvoyGradient),
}

impl ConcurrencyLimit {
    /// The limit `algorithm` starts with.
    pub fn new(algorithm: &LimitAlgorithm) -> ConcurrencyLimit {
        let state = match algorithm {
            LimitAlgorithm::Fixed(limit) => State::Fixed(*limit),
            LimitAlgorithm::Vegas(config) => State::Vegas(Vegas::new(config)),
            LimitAlgorithm::Gradient2(config) => State::Gradient2(Gradient2::new(config)),
            LimitAlgorithm::EnvoyGradient(config) => {
                State::EnvoyGradient(EnvoyGradient::new(config))
            }
        };
        ConcurrencyLimit { state }
    }

    /// Requests that may be in the service at once now.
    #[inline]
    pub fn limit(&self) -> u64 {
        match &self.state {
            State::Fixed(limit) => *limit,
            State::Vegas(vegas) => whole_limit(vegas.limit),
            State::Gradient2(gradient) => whole_limit(gradient.limit),
            State::EnvoyGradient(envoy) => envoy.limit.max(1),
        }
    }

    /// A request that was admitted when `inflight` requests were in the service (itself
    /// included) ended at `now` after `rtt` in the service; `dropped` if it timed out or was
    /// dropped rather than served. `random` is the limit's own stream, for algorithms that
    /// jitter: Vegas draws one unit from it per sample, Envoy one per completed minRTT
    /// window, the others none.
    pub fn sample(
        &mut self,
        now: Micros,
        rtt: Micros,
        inflight: u64,
        dropped: bool,
        random: &mut Stream,
    ) {
        let rtt = rtt.max(1);
        match &mut self.state {
            State::Fixed(_) => {}
            State::Vegas(vegas) => vegas.sample(rtt, inflight, dropped, random),
            State::Gradient2(gradient) => gradient.sample(rtt, inflight),
            State::EnvoyGradient(envoy) => envoy.sample(now, rtt, random),
        }
    }
}

/// A fractional limit as the whole number of requests it admits: Java's `(int)` cast (floor
/// for positive values), at least 1.
#[inline]
fn whole_limit(limit: f64) -> u64 {
    (limit as u64).max(1)
}

/// `Log10RootIntFunction` with baseline 0: `max(1, floor(log10 n))`, computed on integers so
/// that powers of ten are exact; 1 for 0, as Java's `max(1, (int) log10(0))` is.
fn log10_root(n: u64) -> u64 {
    u64::from(n.checked_ilog10().unwrap_or(0)).max(1)
}

/// Netflix's `VegasLimit`.
#[derive(Debug, Clone)]
struct Vegas {
    config: VegasConfig,
    /// `estimatedLimit`.
    limit: f64,
    /// `rtt_noload`; 0 before the first sample.
    rtt_noload: Micros,
    /// `probeCount`: samples since the last probe.
    probe_count: u64,
    /// `probeJitter`, from `[0.5, 1)`; drawn at the first sample (Netflix draws it at
    /// construction) and redrawn at each probe.
    probe_jitter: Option<f64>,
}

impl Vegas {
    fn new(config: &VegasConfig) -> Vegas {
        Vegas {
            config: config.clone(),
            limit: config.initial_limit as f64,
            rtt_noload: 0,
            probe_count: 0,
            probe_jitter: None,
        }
    }

    /// `VegasLimit._update` and `updateEstimatedLimit`.
    fn sample(&mut self, rtt: Micros, inflight: u64, dropped: bool, random: &mut Stream) {
        // One draw per sample, whatever happens, so that the stream's use depends only on the
        // number of samples. Netflix holds the jitter between probes and draws a fresh one
        // (`ThreadLocalRandom.nextDouble(0.5, 1)`) after each; this draw is that fresh one
        // when the sample probes, and the initial one at the first sample.
        let draw = 0.5 + 0.5 * random.unit();
        let jitter = *self.probe_jitter.get_or_insert(draw);

        self.probe_count += 1;
        // shouldProbe: probeJitter * probeMultiplier * estimatedLimit <= probeCount.
        if jitter * self.config.probe_multiplier as f64 * self.limit <= self.probe_count as f64 {
            self.probe_jitter = Some(draw);
            self.probe_count = 0;
            self.rtt_noload = rtt;
            return;
        }

        if self.rtt_noload == 0 || rtt < self.rtt_noload {
            self.rtt_noload = rtt;
            return;
        }

        let limit = self.limit;
        let queue_size = (limit * (1.0 - self.rtt_noload as f64 / rtt as f64)).ceil();
        let f = log10_root(limit as u64) as f64;
        let new_limit = if dropped {
            // Treat any drop (a timeout) as needing to reduce the limit: decreaseFunc.
            limit - f
        } else if (inflight.saturating_mul(2) as f64) < limit {
            // App-limited: not close to the limit, so no upward drift.
            return;
        } else if queue_size <= f {
            // No queueing: the aggressive step, L + beta (beta = 6 f(L)).
            limit + 6.0 * f
        } else if queue_size < 3.0 * f {
            // Queue below alpha: increaseFunc, L + f(L).
            limit + f
        } else if queue_size > 6.0 * f {
            // Queue above beta: decreaseFunc, L - f(L).
            limit - f
        } else {
            // Between alpha and beta: the sweet spot.
            return;
        };
        let bounded = new_limit.clamp(1.0, self.config.max_concurrency.max(1) as f64);
        let smoothing = self.config.smoothing;
        self.limit = (1.0 - smoothing) * limit + smoothing * bounded;
    }
}

/// Netflix's `Gradient2Limit`, with its `ExpAvgMeasurement` of the long-run RTT.
#[derive(Debug, Clone)]
struct Gradient2 {
    config: Gradient2Config,
    /// `estimatedLimit`.
    limit: f64,
    /// The long-run RTT (`ExpAvgMeasurement.value`).
    long_rtt: f64,
    /// Sum of the warm-up samples (`ExpAvgMeasurement.sum`).
    warmup_sum: f64,
    /// Warm-up samples taken so far (`ExpAvgMeasurement.count`).
    warmup_count: u64,
}

/// The warm-up window `Gradient2Limit` gives its `ExpAvgMeasurement`: a plain mean over the
/// first 10 samples.
const GRADIENT2_WARMUP: u64 = 10;

impl Gradient2 {
    fn new(config: &Gradient2Config) -> Gradient2 {
        Gradient2 {
            config: config.clone(),
            limit: config.initial_limit as f64,
            long_rtt: 0.0,
            warmup_sum: 0.0,
            warmup_count: 0,
        }
    }

    /// `ExpAvgMeasurement.add`: the new long-run RTT.
    fn add_long_rtt(&mut self, rtt: f64) -> f64 {
        if self.warmup_count < GRADIENT2_WARMUP {
            self.warmup_count += 1;
            self.warmup_sum += rtt;
            // The mean is recomputed from the sum, so a decay applied during the warm-up is
            // forgotten at the next sample, as in the source.
            self.long_rtt = self.warmup_sum / self.warmup_count as f64;
        } else {
            let factor = 2.0 / (self.config.long_window as f64 + 1.0);
            self.long_rtt = self.long_rtt * (1.0 - factor) + rtt * factor;
        }
        self.long_rtt
    }

    /// `Gradient2Limit._update`. The source ignores `didDrop`, so this takes no `dropped`:
    /// timeouts do not cut a Gradient2 limit (only their latency does, when measured).
    fn sample(&mut self, rtt: Micros, inflight: u64) {
        let limit = self.limit;
        let short_rtt = rtt as f64;
        let long_rtt = self.add_long_rtt(short_rtt);

        // The long RTT well above the short one (latency back to normal after a long
        // overload): pull the stored average down without waiting for the smoothing. The
        // gradient below still uses the value before this decay, as the source does.
        if long_rtt / short_rtt > 2.0 {
            self.long_rtt *= 0.95;
        }

        // App-limited: don't grow.
        if (inflight as f64) < limit / 2.0 {
            return;
        }

        let gradient = (self.config.rtt_tolerance * long_rtt / short_rtt).clamp(0.5, 1.0);
        let estimate = limit * gradient + self.config.queue_size as f64;
        let smoothing = self.config.smoothing;
        let new_limit = limit * (1.0 - smoothing) + estimate * smoothing;
        // Math.max(minLimit, Math.min(maxLimit, newLimit)): the minimum wins a conflict.
        self.limit = new_limit
            .min(self.config.max_concurrency as f64)
            .max(self.config.min_limit as f64);
    }
}

/// Envoy's gradient controller.
#[derive(Debug, Clone)]
struct EnvoyGradient {
    config: EnvoyGradientConfig,
    /// `concurrency_limit_`.
    limit: u64,
    /// Whether a minRTT window is active (Envoy: `deferred_limit_value_ > 0`).
    in_window: bool,
    /// The limit to restore when the minRTT window ends (`deferred_limit_value_`).
    deferred_limit: u64,
    /// `min_rtt_`: the percentile of the last minRTT window's samples; 0 before the first.
    min_rtt: Micros,
    /// `min_rtt_epoch_`: when the last minRTT window started. Requests admitted before it are
    /// not sampled.
    epoch: Micros,
    /// The latency histogram: samples since the last update, or of the minRTT window. Kept
    /// exact (Envoy keeps an approximate log-linear histogram); reused, never shrunk.
    samples: Vec<Micros>,
    /// When the sample-reset timer fires next (meaningless during a minRTT window).
    next_update: Micros,
    /// When the minRTT timer fires next (meaningless during a minRTT window).
    next_window: Micros,
    /// `consecutive_min_concurrency_set_`.
    at_floor: u32,
}

/// Consecutive updates at the floor that force a new minRTT window (Envoy's literal 5).
const ENVOY_FLOOR_UPDATES: u32 = 5;

impl EnvoyGradient {
    /// The controller as Envoy constructs it: in the first minRTT window, started at time 0,
    /// with the limit at `min_concurrency`, which it restores when that window ends.
    fn new(config: &EnvoyGradientConfig) -> EnvoyGradient {
        EnvoyGradient {
            config: config.clone(),
            limit: config.min_concurrency,
            in_window: true,
            deferred_limit: config.min_concurrency,
            min_rtt: 0,
            epoch: 0,
            samples: Vec::with_capacity(config.min_rtt_request_count.min(1 << 16) as usize),
            next_update: 0,
            next_window: 0,
            at_floor: 0,
        }
    }

    /// Fires the timers due at or before `now`, in time order (an update before a window
    /// start due at the same instant), then records the sample (`recordLatencySample`).
    fn sample(&mut self, now: Micros, rtt: Micros, random: &mut Stream) {
        // No timer acts during a minRTT window: the sample-reset timer's callback returns at
        // once (and is re-armed when the window ends), and the minRTT timer is not armed.
        while !self.in_window {
            let update_due = self.next_update <= now;
            let window_due = self.next_window <= now;
            if update_due && (!window_due || self.next_update <= self.next_window) {
                let at = self.next_update;
                self.reset_sample_window(at);
                // Ticks due after this one until `now` find no samples and do nothing.
                let interval = self.update_interval();
                let ticks = (now - at) / interval + 1;
                self.next_update = at.saturating_add(ticks.saturating_mul(interval));
                if self.next_update <= now {
                    // Only at the end of time, where the clock saturates.
                    break;
                }
            } else if window_due {
                self.enter_min_rtt_window(self.next_window);
            } else {
                break;
            }
        }

        // Requests admitted before the current minRTT window started are disregarded.
        if now.saturating_sub(rtt) < self.epoch {
            return;
        }
        self.samples.push(rtt);
        if self.in_window && self.samples.len() as u64 >= self.config.min_rtt_request_count {
            self.update_min_rtt(now, random);
        }
    }

    /// The update interval, at least 1 µs.
    fn update_interval(&self) -> Micros {
        self.config.concurrency_update_interval.max(1)
    }

    /// `enterMinRTTSamplingWindow` at `at`.
    fn enter_min_rtt_window(&mut self, at: Micros) {
        self.deferred_limit = self.limit;
        self.in_window = true;
        self.set_limit(self.config.min_concurrency, at);
        self.samples.clear();
        self.epoch = at;
    }

    /// `updateMinRTT` at `now`: the window's percentile is the new minRTT, the limit from
    /// before the window is restored, and both timers are re-armed from `now`.
    fn update_min_rtt(&mut self, now: Micros, random: &mut Stream) {
        if let Some(min_rtt) = self.take_percentile() {
            self.min_rtt = min_rtt;
        }
        // Restored while still in the window, so it resets the count of updates at the floor.
        self.set_limit(self.deferred_limit, now);
        self.in_window = false;
        self.next_window = now.saturating_add(self.jittered_interval(random));
        self.next_update = now.saturating_add(self.update_interval());
    }

    /// `applyJitter`: the minRTT interval plus a uniform draw from `[0, interval × jitter)`,
    /// in microseconds (Envoy draws whole milliseconds, `random() % ceil(interval × jitter)`).
    /// Always one draw, even with no jitter.
    fn jittered_interval(&self, random: &mut Stream) -> Micros {
        let interval = self.config.min_rtt_calc_interval;
        let fraction = self.config.jitter.clamp(0.0, 100.0) / 100.0;
        let span = interval as f64 * fraction;
        // `unit() < 1`, so the product is below `span`; flooring keeps it below.
        let jitter = (random.unit() * span) as Micros;
        interval.saturating_add(jitter)
    }

    /// `resetSampleWindow` at the tick `at`: nothing without samples; otherwise the sample
    /// RTT is their percentile and the limit is recalculated (`calculateNewLimit`).
    fn reset_sample_window(&mut self, at: Micros) {
        let Some(sample_rtt) = self.take_percentile() else {
            return;
        };
        let min_rtt = self.min_rtt as f64;
        let buffered_min_rtt = min_rtt + min_rtt * self.buffer_fraction();
        let gradient = (buffered_min_rtt / sample_rtt as f64).clamp(0.5, 2.0);
        let limit = self.limit as f64 * gradient;
        let burst_headroom = limit.sqrt();
        // `uint32_t new_limit = limit + burst_headroom`: truncated.
        let new_limit = (limit + burst_headroom) as u64;
        let bounded = new_limit
            .min(self.config.max_concurrency_limit)
            .max(self.config.min_concurrency);
        self.set_limit(bounded, at);
    }

    /// `updateConcurrencyLimit` at `at`: counts consecutive updates outside a minRTT window
    /// that found and left the limit at `min_concurrency`; at the fifth, a minRTT window
    /// starts at once.
    fn set_limit(&mut self, new_limit: u64, at: Micros) {
        let floor = self.config.min_concurrency;
        let old_limit = self.limit;
        self.limit = new_limit;
        if !self.in_window && old_limit == floor && new_limit == floor {
            self.at_floor += 1;
        } else {
            self.at_floor = 0;
        }
        if self.at_floor >= ENVOY_FLOOR_UPDATES {
            // `min_rtt_calc_timer_->enableTimer(0)`: replaces the scheduled start.
            self.next_window = at;
        }
    }

    /// The buffer as a fraction.
    fn buffer_fraction(&self) -> f64 {
        self.config.buffer.clamp(0.0, 100.0) / 100.0
    }

    /// `processLatencySamplesAndClear`: the configured percentile of the samples by nearest
    /// rank (the sample of rank `ceil(p × n)`, at least 1, in ascending order), or `None`
    /// without samples. Envoy estimates the quantile from an approximate histogram; nearest
    /// rank on the exact samples is our deterministic stand-in, and always one of the
    /// samples.
    fn take_percentile(&mut self) -> Option<Micros> {
        let n = self.samples.len();
        if n == 0 {
            return None;
        }
        let fraction = self.config.sample_aggregate_percentile.clamp(0.0, 100.0) / 100.0;
        let rank = ((fraction * n as f64).ceil() as usize).clamp(1, n);
        let (_, value, _) = self.samples.select_nth_unstable(rank - 1);
        let value = *value;
        self.samples.clear();
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::random::Purpose;

    /// The limit's own stream in these tests.
    fn stream() -> Stream {
        Stream::new(7, Purpose::Limit)
    }

    fn vegas(limit: &ConcurrencyLimit) -> &Vegas {
        match &limit.state {
            State::Vegas(vegas) => vegas,
            _ => panic!("not Vegas"),
        }
    }

    fn gradient2(limit: &ConcurrencyLimit) -> &Gradient2 {
        match &limit.state {
            State::Gradient2(gradient) => gradient,
            _ => panic!("not Gradient2"),
        }
    }

    fn envoy(limit: &ConcurrencyLimit) -> &EnvoyGradient {
        match &limit.state {
            State::EnvoyGradient(envoy) => envoy,
            _ => panic!("not Envoy"),
        }
    }

    fn assert_close(actual: f64, expected: f64) {
        assert!(
            (actual - expected).abs() < 1e-9,
            "{actual} is not {expected}"
        );
    }

    /// `Fixed(n)`: the limit is n whatever the samples say.
    #[test]
    fn fixed_ignores_samples() {
        let mut random = stream();
        let mut limit = ConcurrencyLimit::new(&LimitAlgorithm::Fixed(7));
        assert_eq!(limit.limit(), 7);
        limit.sample(10, 1_000_000, 7, true, &mut random);
        limit.sample(20, 1, 1, false, &mut random);
        assert_eq!(limit.limit(), 7);
    }

    /// `Log10RootIntFunction`: `max(1, (int) log10(n))`, exact at powers of ten.
    #[test]
    fn log10_root_matches_the_lookup_table() {
        let cases = [(0, 1), (1, 1), (9, 1), (10, 1), (99, 1), (100, 2), (999, 2)];
        for (n, f) in cases.into_iter().chain([(1000, 3), (9999, 3), (10_000, 4)]) {
            assert_eq!(log10_root(n), f, "f({n})");
        }
    }

    fn new_vegas(config: VegasConfig) -> ConcurrencyLimit {
        ConcurrencyLimit::new(&LimitAlgorithm::Vegas(config))
    }

    /// Vegas `_update`: the first sample only sets `rtt_noload` (it was 0); then with
    /// `rtt == rtt_noload` the queue estimate is `ceil(20 × 0) = 0 <= f(20) = 1`, and with 20
    /// in flight (not app-limited) the limit takes the big step `L + beta = 20 + 6 f(20) = 26`.
    /// At 26 the same holds (f(26) = 1): 32.
    #[test]
    fn vegas_first_sample_sets_rtt_noload_and_no_queue_grows_by_beta() {
        let mut random = stream();
        let mut limit = new_vegas(VegasConfig::default());
        assert_eq!(limit.limit(), 20);
        limit.sample(0, 100, 20, false, &mut random);
        assert_eq!(vegas(&limit).rtt_noload, 100);
        assert_eq!(limit.limit(), 20);
        limit.sample(0, 100, 20, false, &mut random);
        assert_eq!(limit.limit(), 26);
        limit.sample(0, 100, 26, false, &mut random);
        assert_eq!(limit.limit(), 32);
    }

    /// Vegas: f(L) = 2 from L = 100, so the no-queue step is `6 × 2 = 12`: 100 -> 112.
    #[test]
    fn vegas_steps_scale_with_log10_of_the_limit() {
        let mut random = stream();
        let mut limit = new_vegas(VegasConfig {
            initial_limit: 100,
            ..VegasConfig::default()
        });
        limit.sample(0, 100, 100, false, &mut random);
        limit.sample(0, 100, 100, false, &mut random);
        assert_eq!(limit.limit(), 112);
    }

    /// Vegas: a lower RTT replaces `rtt_noload` and leaves the limit.
    #[test]
    fn vegas_lower_rtt_resets_rtt_noload() {
        let mut random = stream();
        let mut limit = new_vegas(VegasConfig::default());
        limit.sample(0, 100, 20, false, &mut random);
        limit.sample(0, 80, 20, false, &mut random);
        assert_eq!(vegas(&limit).rtt_noload, 80);
        assert_eq!(limit.limit(), 20);
    }

    /// Vegas queue bands at L = 20 (f = 1, alpha 3, beta 6), `rtt_noload` 100:
    /// rtt 200 -> queue `ceil(20 × 0.5) = 10 > 6`: decrease, 20 - 1 = 19;
    /// rtt 110 -> queue `ceil(20 × (1 - 100/110)) = ceil(1.82) = 2`, `1 < 2 < 3`: increase,
    /// 20 + 1 = 21;
    /// rtt 125 -> queue `ceil(20 × 0.2) = 4`, within `[3, 6]`: unchanged.
    #[test]
    fn vegas_queue_estimate_bands() {
        let cases = [(200, 19), (110, 21), (125, 20)];
        for (rtt, expected) in cases {
            let mut random = stream();
            let mut limit = new_vegas(VegasConfig::default());
            limit.sample(0, 100, 20, false, &mut random);
            limit.sample(0, rtt, 20, false, &mut random);
            assert_eq!(limit.limit(), expected, "rtt {rtt}");
        }
    }

    /// Vegas: a drop decreases (`L - f(L)` = 19) before the app-limited check, so even with
    /// one in flight and no queue.
    #[test]
    fn vegas_drop_shrinks() {
        let mut random = stream();
        let mut limit = new_vegas(VegasConfig::default());
        limit.sample(0, 100, 20, false, &mut random);
        limit.sample(0, 100, 1, true, &mut random);
        assert_eq!(limit.limit(), 19);
    }

    /// Vegas: `inflight * 2 < L` is app-limited and leaves the limit (9 × 2 = 18 < 20), even
    /// with a large queue estimate; `10 × 2 = 20` is not, and no queue grows it to 26.
    #[test]
    fn vegas_app_limited_leaves_the_limit() {
        let mut random = stream();
        let mut limit = new_vegas(VegasConfig::default());
        limit.sample(0, 100, 20, false, &mut random);
        limit.sample(0, 100, 9, false, &mut random);
        limit.sample(0, 1000, 9, false, &mut random);
        assert_eq!(limit.limit(), 20);
        limit.sample(0, 100, 10, false, &mut random);
        assert_eq!(limit.limit(), 26);
    }

    /// Vegas smoothing: `(1 - s) L + s new`; with s = 0.5, 20 -> 0.5 × 20 + 0.5 × 26 = 23.
    #[test]
    fn vegas_smoothing_blends() {
        let mut random = stream();
        let mut limit = new_vegas(VegasConfig {
            smoothing: 0.5,
            ..VegasConfig::default()
        });
        limit.sample(0, 100, 20, false, &mut random);
        limit.sample(0, 100, 20, false, &mut random);
        assert_close(vegas(&limit).limit, 23.0);
    }

    /// Vegas bounds: the new limit is clamped to `[1, maxConcurrency]` before smoothing. With
    /// max 25, 20 + 6 = 26 becomes 25 and stays; from 3, drops give 2, 1, then
    /// `1 - f(1) = 0` clamps to 1.
    #[test]
    fn vegas_stays_within_bounds() {
        let mut random = stream();
        let mut limit = new_vegas(VegasConfig {
            max_concurrency: 25,
            ..VegasConfig::default()
        });
        limit.sample(0, 100, 20, false, &mut random);
        limit.sample(0, 100, 20, false, &mut random);
        assert_eq!(limit.limit(), 25);
        limit.sample(0, 100, 25, false, &mut random);
        assert_eq!(limit.limit(), 25);

        let mut limit = new_vegas(VegasConfig {
            initial_limit: 3,
            ..VegasConfig::default()
        });
        limit.sample(0, 100, 3, false, &mut random);
        let mut seen = Vec::new();
        for _ in 0..4 {
            limit.sample(0, 100, 3, true, &mut random);
            seen.push(limit.limit());
        }
        assert_eq!(seen, [2, 1, 1, 1]);
        assert_close(vegas(&limit).limit, 1.0);
    }

    /// Vegas probe: `probeJitter × 30 × L <= probeCount` replaces `rtt_noload` with the
    /// sample's RTT, whatever it is. The jitter is `0.5 + 0.5 u` from the first sample's draw,
    /// so at L = 20 the probe fires at count `c = ceil(600 J)`, in `[300, 600]`. The first
    /// sample (count 1) sets `rtt_noload` = 100; app-limited samples of RTT 200 (one in
    /// flight) leave L at 20 and `rtt_noload` at 100 until count c, where it becomes 200.
    /// After that, a sample at RTT 200 with 20 in flight sees no queue and grows L to 26
    /// (with `rtt_noload` 100 it would have shrunk it to 19).
    #[test]
    fn vegas_probe_resets_rtt_noload() {
        let mut random = stream();
        let jitter = 0.5 + 0.5 * random.clone().unit();
        let fires_at = (600.0 * jitter).ceil() as u64;
        assert!((300..=600).contains(&fires_at));

        let mut limit = new_vegas(VegasConfig::default());
        limit.sample(0, 100, 20, false, &mut random);
        for count in 2..fires_at {
            limit.sample(0, 200, 1, false, &mut random);
            assert_eq!(vegas(&limit).rtt_noload, 100, "count {count}");
        }
        limit.sample(0, 200, 1, false, &mut random);
        assert_eq!(vegas(&limit).rtt_noload, 200);
        assert_eq!(vegas(&limit).probe_count, 0);
        assert_eq!(limit.limit(), 20);
        limit.sample(0, 200, 20, false, &mut random);
        assert_eq!(limit.limit(), 26);
    }

    fn new_gradient2(config: Gradient2Config) -> ConcurrencyLimit {
        ConcurrencyLimit::new(&LimitAlgorithm::Gradient2(config))
    }

    /// Gradient2 long RTT (`ExpAvgMeasurement(600, 10)`): a plain mean over the first 10
    /// samples (100, 200, 300 -> 100, 150, 200; ten samples of 100 -> 100), then the EMA with
    /// factor 2/601: `100 × 599/601 + 701 × 2/601 = 61302/601 = 102`. One in flight is
    /// app-limited, so the limit stays 20.
    #[test]
    fn gradient2_warm_up_is_a_plain_mean_then_an_ema() {
        let mut random = stream();
        let mut limit = new_gradient2(Gradient2Config::default());
        let mut seen = Vec::new();
        for rtt in [100, 200, 300] {
            limit.sample(0, rtt, 1, false, &mut random);
            seen.push(gradient2(&limit).long_rtt);
        }
        assert_eq!(seen, [100.0, 150.0, 200.0]);

        let mut limit = new_gradient2(Gradient2Config::default());
        for _ in 0..10 {
            limit.sample(0, 100, 1, false, &mut random);
        }
        assert_close(gradient2(&limit).long_rtt, 100.0);
        limit.sample(0, 701, 1, false, &mut random);
        assert_close(gradient2(&limit).long_rtt, 102.0);
        assert_eq!(limit.limit(), 20);
    }

    /// Gradient2 drift: `longRtt / rtt > 2` multiplies the stored long RTT by 0.95. During the
    /// warm-up the mean is recomputed from the sum, so the decay is forgotten at the next
    /// sample: 1000, 100 -> mean 550, decayed to 522.5; then 100 -> mean 1200/3 = 400 (not
    /// from 522.5), decayed to 380.
    #[test]
    fn gradient2_long_rtt_decays_when_far_above_the_rtt() {
        let mut random = stream();
        let mut limit = new_gradient2(Gradient2Config::default());
        limit.sample(0, 1000, 1, false, &mut random);
        limit.sample(0, 100, 1, false, &mut random);
        assert_close(gradient2(&limit).long_rtt, 522.5);
        limit.sample(0, 100, 1, false, &mut random);
        assert_close(gradient2(&limit).long_rtt, 380.0);
    }

    /// Gradient2 growth: with `rtt == longRtt` the gradient is `clamp(1.5, 0.5, 1) = 1`, so
    /// `L' = 0.8 L + 0.2 (L + 4) = L + 0.8`: 20.8, 21.6, 22.4, 23.2, 24.0.
    #[test]
    fn gradient2_grows_by_the_queue_size_step_at_steady_rtt() {
        let mut random = stream();
        let mut limit = new_gradient2(Gradient2Config::default());
        for step in 1..=5 {
            limit.sample(0, 100, 30, false, &mut random);
            assert_close(gradient2(&limit).limit, 20.0 + 0.8 * f64::from(step));
        }
        assert_eq!(limit.limit(), 24);
    }

    /// Gradient2 shrink: from 100 with a long RTT of 100, an RTT of 1000 gives the long RTT
    /// `100 + 900 × 2/601 ≈ 103`, gradient `clamp(1.5 × 103 / 1000, 0.5, 1) = 0.5`, and
    /// `L' = 0.8 × 100 + 0.2 × (50 + 4) = 90.8`. Repeated, `L' = 0.9 L + 0.8` heads for 8 but
    /// is floored at `minLimit` 20 (after 20 samples; the long RTT is still below 334, so the
    /// gradient stays 0.5 for all 30).
    #[test]
    fn gradient2_shrinks_under_high_rtt_to_its_floor() {
        let mut random = stream();
        let mut limit = new_gradient2(Gradient2Config {
            initial_limit: 100,
            ..Gradient2Config::default()
        });
        for _ in 0..10 {
            limit.sample(0, 100, 1, false, &mut random);
        }
        assert_eq!(limit.limit(), 100);
        limit.sample(0, 1000, 100, false, &mut random);
        assert_close(gradient2(&limit).limit, 90.8);
        assert_eq!(limit.limit(), 90);
        for _ in 0..29 {
            limit.sample(0, 1000, 100, false, &mut random);
        }
        assert!(gradient2(&limit).long_rtt < 1000.0 / 3.0);
        assert_eq!(gradient2(&limit).limit, 20.0);
        assert_eq!(limit.limit(), 20);
    }

    /// Gradient2 ignores `didDrop`: the same samples dropped or not give bit-identical state.
    #[test]
    fn gradient2_ignores_dropped() {
        let mut random = stream();
        let mut kept = new_gradient2(Gradient2Config::default());
        let mut dropped = new_gradient2(Gradient2Config::default());
        for (i, rtt) in [100, 100, 300, 900, 90, 100, 5000, 100]
            .into_iter()
            .enumerate()
        {
            kept.sample(0, rtt, 20 + i as u64, false, &mut random);
            dropped.sample(0, rtt, 20 + i as u64, true, &mut random);
            assert_eq!(
                gradient2(&kept).limit.to_bits(),
                gradient2(&dropped).limit.to_bits()
            );
            assert_eq!(
                gradient2(&kept).long_rtt.to_bits(),
                gradient2(&dropped).long_rtt.to_bits()
            );
        }
    }

    fn new_envoy() -> ConcurrencyLimit {
        ConcurrencyLimit::new(&LimitAlgorithm::EnvoyGradient(
            EnvoyGradientConfig::default(),
        ))
    }

    /// Ends the first minRTT window with 50 samples of `rtt`, ending at 100 049 µs.
    fn end_first_window(limit: &mut ConcurrencyLimit, random: &mut Stream, rtt: Micros) {
        for i in 0..50 {
            limit.sample(100_000 + i, rtt, 3, false, random);
        }
    }

    /// A sample of `rtt` at the next update time: the pending update runs on the samples
    /// collected since the last one, and this sample starts the next collection.
    fn at_next_update(limit: &mut ConcurrencyLimit, random: &mut Stream, rtt: Micros) {
        let now = envoy(limit).next_update;
        limit.sample(now, rtt, 3, false, random);
    }

    /// Envoy: the controller starts in a minRTT window at time 0 with the limit pinned to
    /// `min_concurrency` 3; the window takes 50 samples (49 leave it open) and the minRTT is
    /// their p50, by nearest rank the 25th smallest: of 1..=50 ms, 25 ms. The limit is then
    /// restored to its value before the window, here also 3, and the updates start one
    /// interval (100 ms) after the window's end.
    #[test]
    fn envoy_first_window_pins_the_limit_and_takes_the_p50() {
        let mut random = stream();
        let mut limit = new_envoy();
        assert_eq!(limit.limit(), 3);
        let end = 1_000_049;
        for i in 0..50u64 {
            assert!(envoy(&limit).in_window);
            assert_eq!(limit.limit(), 3);
            let rtt = ((i * 7) % 50 + 1) * 1000;
            limit.sample(1_000_000 + i, rtt, 3, false, &mut random);
        }
        let state = envoy(&limit);
        assert!(!state.in_window);
        assert_eq!(state.min_rtt, 25_000);
        assert_eq!(limit.limit(), 3);
        assert_eq!(state.next_update, end + 100_000);
        assert!(state.samples.is_empty());
    }

    /// Envoy update with `sampleRTT = minRTT × 1.25`: gradient `(20 + 20 × 0.25) / 25 = 1`,
    /// so each update sets `floor(L + sqrt(L))`: 3 -> 4 -> 6 -> 8 -> 10 -> 13 -> 16 -> 20
    /// -> 24 -> 28. The first sample after the window finds nothing to update on.
    #[test]
    fn envoy_gradient_one_adds_the_square_root() {
        let mut random = stream();
        let mut limit = new_envoy();
        end_first_window(&mut limit, &mut random, 20_000);
        assert_eq!(envoy(&limit).min_rtt, 20_000);
        at_next_update(&mut limit, &mut random, 25_000);
        assert_eq!(limit.limit(), 3);
        let mut seen = Vec::new();
        for _ in 0..9 {
            at_next_update(&mut limit, &mut random, 25_000);
            seen.push(limit.limit());
        }
        assert_eq!(seen, [4, 6, 8, 10, 13, 16, 20, 24, 28]);
    }

    /// Envoy updates are lazy: samples at +10 ms and +350 ms after the window's end; the
    /// second fires the update due at +100 ms on the first alone (3 -> 4), the ticks at +200
    /// and +300 ms find nothing, and the next update is due at +400 ms, where the +350 ms
    /// sample gives 4 -> 6.
    #[test]
    fn envoy_updates_are_lazy_and_skip_empty_intervals() {
        let mut random = stream();
        let mut limit = new_envoy();
        end_first_window(&mut limit, &mut random, 20_000);
        let end = 100_049;
        limit.sample(end + 10_000, 25_000, 3, false, &mut random);
        assert_eq!(limit.limit(), 3);
        limit.sample(end + 350_000, 25_000, 3, false, &mut random);
        assert_eq!(limit.limit(), 4);
        assert_eq!(envoy(&limit).next_update, end + 400_000);
        limit.sample(end + 400_000, 25_000, 3, false, &mut random);
        assert_eq!(limit.limit(), 6);
    }

    /// Envoy gradient clamps, minRTT 20 ms. Fast samples (1 ms: raw gradient 25) clamp to 2:
    /// 3 -> floor(6 + sqrt 6) = 8 -> floor(16 + 4) = 20 -> floor(40 + 6.32) = 46
    /// -> floor(92 + 9.59) = 101 (unclamped, the first would have been floor(75 + 8.66) = 83).
    /// Slow samples (1 s: raw 0.025) clamp to 0.5: 101 -> floor(50.5 + 7.11) = 57 -> 33 -> 20
    /// -> 13 -> 9 -> 6 -> 4 -> 3 -> 3 (`floor(1.5 + 1.22) = 2`, raised to `min_concurrency`).
    /// The count of updates at the floor counts only those that found the limit there: 0
    /// after 4 -> 3, 1 after 3 -> 3.
    #[test]
    fn envoy_gradient_is_clamped_to_half_and_double() {
        let mut random = stream();
        let mut limit = new_envoy();
        end_first_window(&mut limit, &mut random, 20_000);
        at_next_update(&mut limit, &mut random, 1_000);
        let mut seen = Vec::new();
        for _ in 0..3 {
            at_next_update(&mut limit, &mut random, 1_000);
            seen.push(limit.limit());
        }
        // The update due with the first slow sample is on the last fast one.
        at_next_update(&mut limit, &mut random, 1_000_000);
        seen.push(limit.limit());
        assert_eq!(seen, [8, 20, 46, 101]);
        let mut seen = Vec::new();
        let mut counts = Vec::new();
        for _ in 0..8 {
            at_next_update(&mut limit, &mut random, 1_000_000);
            seen.push(limit.limit());
            counts.push(envoy(&limit).at_floor);
        }
        assert_eq!(seen, [57, 33, 20, 13, 9, 6, 4, 3]);
        assert_eq!(counts, [0; 8]);
        at_next_update(&mut limit, &mut random, 1_000_000);
        assert_eq!(limit.limit(), 3);
        assert_eq!(envoy(&limit).at_floor, 1);
    }

    /// Envoy restart at the floor: once the limit is at `min_concurrency`, an update that
    /// finds it there and leaves it there counts; the fifth in a row starts a minRTT window at
    /// once (`enableTimer(0)`), long before the scheduled one, at that update's time. The
    /// sample that brought the update was admitted before that window started, so it is
    /// disregarded; one admitted after it counts, and 50 end the window with their p50.
    #[test]
    fn envoy_restarts_the_min_rtt_window_after_five_updates_at_the_floor() {
        let mut random = stream();
        let mut limit = new_envoy();
        end_first_window(&mut limit, &mut random, 20_000);
        let scheduled = envoy(&limit).next_window;
        at_next_update(&mut limit, &mut random, 1_000_000);
        for count in 1..=4 {
            at_next_update(&mut limit, &mut random, 1_000_000);
            assert_eq!(limit.limit(), 3);
            assert_eq!(envoy(&limit).at_floor, count);
            assert!(!envoy(&limit).in_window);
        }
        let at = envoy(&limit).next_update;
        at_next_update(&mut limit, &mut random, 1_000_000);
        let state = envoy(&limit);
        assert!(state.in_window);
        assert!(at < scheduled);
        assert_eq!(state.epoch, at);
        assert_eq!(state.at_floor, 0);
        assert!(state.samples.is_empty());
        assert_eq!(limit.limit(), 3);

        limit.sample(at + 15_000, 15_000, 3, false, &mut random);
        assert_eq!(envoy(&limit).samples.len(), 1);
        for i in 1..50 {
            limit.sample(at + 15_000 + i, 15_000, 3, false, &mut random);
        }
        assert!(!envoy(&limit).in_window);
        assert_eq!(envoy(&limit).min_rtt, 15_000);
        assert_eq!(limit.limit(), 3);
    }

    /// Envoy `applyJitter`: the next window starts `interval + r` after the last one ended,
    /// r uniform in `[0, interval × 15%)`, here `floor(u × 9 s)` from the window's one draw;
    /// so in `[60 s, 69 s)` for every seed.
    #[test]
    fn envoy_next_window_starts_after_the_jittered_interval() {
        let end = 100_049;
        for seed in 0..20 {
            let mut random = Stream::new(seed, Purpose::Limit);
            let jitter = (random.clone().unit() * 9_000_000.0) as Micros;
            let mut limit = new_envoy();
            end_first_window(&mut limit, &mut random, 20_000);
            let delay = envoy(&limit).next_window - end;
            assert_eq!(delay, 60_000_000 + jitter);
            assert!((60_000_000..69_000_000).contains(&delay), "seed {seed}");
        }
    }

    /// Envoy scheduled window: the limit grown to 28 (as in
    /// `envoy_gradient_one_adds_the_square_root`), a sample just before the window's start
    /// fires the pending update (28 -> floor(28 + 5.29) = 33) and leaves the window closed;
    /// at the start the limit is pinned to 3, the collected samples are thrown away, and a
    /// request admitted before the start is disregarded; 50 samples of 10 ms admitted after
    /// it set minRTT to 10 ms and restore 33.
    #[test]
    fn envoy_scheduled_window_pins_and_restores_the_limit() {
        let mut random = stream();
        let mut limit = new_envoy();
        end_first_window(&mut limit, &mut random, 20_000);
        let start = envoy(&limit).next_window;
        for _ in 0..10 {
            at_next_update(&mut limit, &mut random, 25_000);
        }
        assert_eq!(limit.limit(), 28);
        limit.sample(start - 1, 25_000, 3, false, &mut random);
        assert!(!envoy(&limit).in_window);
        assert_eq!(limit.limit(), 33);
        assert_eq!(envoy(&limit).samples.len(), 1);

        limit.sample(start, 10_000, 3, false, &mut random);
        let state = envoy(&limit);
        assert!(state.in_window);
        assert_eq!(state.epoch, start);
        assert_eq!(state.deferred_limit, 33);
        assert!(state.samples.is_empty());
        assert_eq!(limit.limit(), 3);

        for i in 0..50 {
            assert_eq!(limit.limit(), 3);
            limit.sample(start + 10_000 + i, 10_000, 3, false, &mut random);
        }
        assert!(!envoy(&limit).in_window);
        assert_eq!(envoy(&limit).min_rtt, 10_000);
        assert_eq!(limit.limit(), 33);
    }

    /// The limits after each of a run of samples, from the limit's stream seeded with `seed`,
    /// and that stream afterwards.
    fn run(algorithm: &LimitAlgorithm, seed: u64) -> (Vec<u64>, Stream) {
        let mut inputs = Stream::new(3, Purpose::Arrivals);
        let mut random = Stream::new(seed, Purpose::Limit);
        let mut limit = ConcurrencyLimit::new(algorithm);
        let mut now = 0;
        let mut seen = Vec::new();
        for _ in 0..5000 {
            now += inputs.exponential(2_000.0) as Micros;
            let rtt = 1_000 + inputs.exponential(20_000.0) as Micros;
            let inflight = 1 + inputs.index(60);
            let dropped = inputs.chance(0.05);
            limit.sample(now, rtt, inflight, dropped, &mut random);
            seen.push(limit.limit());
        }
        (seen, random)
    }

    /// Determinism: the same samples and seed give the same limits, for every algorithm; and
    /// Vegas draws exactly one unit per sample.
    #[test]
    fn same_samples_and_seed_give_the_same_limits() {
        let algorithms = [
            LimitAlgorithm::Fixed(10),
            LimitAlgorithm::Vegas(VegasConfig::default()),
            LimitAlgorithm::Gradient2(Gradient2Config::default()),
            LimitAlgorithm::EnvoyGradient(EnvoyGradientConfig::default()),
        ];
        for algorithm in &algorithms {
            let (first, _) = run(algorithm, 11);
            let (second, _) = run(algorithm, 11);
            assert_eq!(first, second, "{algorithm:?}");
            if !matches!(algorithm, LimitAlgorithm::Fixed(_)) {
                assert!(
                    first.iter().any(|&limit| limit != first[0]),
                    "{algorithm:?} never moved"
                );
            }
        }

        let (_, mut after) = run(&LimitAlgorithm::Vegas(VegasConfig::default()), 11);
        let mut fresh = Stream::new(11, Purpose::Limit);
        for _ in 0..5000 {
            fresh.unit();
        }
        assert_eq!(after.unit().to_bits(), fresh.unit().to_bits());
    }
}
