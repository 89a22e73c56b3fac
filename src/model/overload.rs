//! How an overloaded service behaves, as configured: its queue discipline ([`Discipline`]) and
//! its adaptive concurrency limit ([`LimitAlgorithm`]), with the defaults of their sources.
//! The running queue and limits are the engine's (`crate::engine::service::queue` and
//! `limit`); what is configured is the model's, so that the model is built without the engine.

use crate::base::time::{MICROS_PER_MS, MICROS_PER_SECOND, Micros};

/// The default target sojourn time: RFC 8289's 5 ms for CoDel, the article's M = 5 ms for
/// adaptive LIFO.
pub const DEFAULT_TARGET: Micros = 5 * MICROS_PER_MS;

/// The default interval: RFC 8289's 100 ms for CoDel, the article's N = 100 ms for adaptive
/// LIFO.
pub const DEFAULT_INTERVAL: Micros = 100 * MICROS_PER_MS;

/// How a queue orders and sheds its requests, as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Discipline {
    /// First in, first out.
    #[default]
    Fifo,
    /// Last in, first out.
    Lifo,
    /// CoDel (Nichols and Jacobson; RFC 8289), as Linux's `codel_impl.h` implements it: FIFO,
    /// shedding at dequeue by the control law once the sojourn time has stayed above `target`
    /// for an `interval`.
    CoDel {
        /// Acceptable standing sojourn time (RFC 8289: 5 ms).
        target: Micros,
        /// Window in which the sojourn time must dip below `target` (RFC 8289: 100 ms).
        interval: Micros,
    },
    /// Facebook's "Fail at Scale" adaptive LIFO with controlled delay: FIFO while the queue has
    /// been empty within the last `interval` (N), and then a request may wait up to `interval`;
    /// once it has not, LIFO, and a request may wait only `target` (M).
    AdaptiveLifo {
        /// M: the longest wait while the queue is standing (5 ms).
        target: Micros,
        /// N: the window, and the longest wait otherwise (100 ms).
        interval: Micros,
    },
}

impl Discipline {
    /// CoDel with RFC 8289's defaults: target 5 ms, interval 100 ms.
    pub const fn codel() -> Discipline {
        Discipline::CoDel {
            target: DEFAULT_TARGET,
            interval: DEFAULT_INTERVAL,
        }
    }

    /// Adaptive LIFO with the article's defaults: M = 5 ms, N = 100 ms.
    pub const fn adaptive_lifo() -> Discipline {
        Discipline::AdaptiveLifo {
            target: DEFAULT_TARGET,
            interval: DEFAULT_INTERVAL,
        }
    }

    /// The discipline's name, in the kebab case scenario files use: `fifo`, `lifo`, `codel` or
    /// `adaptive-lifo`.
    pub const fn name(self) -> &'static str {
        match self {
            Discipline::Fifo => "fifo",
            Discipline::Lifo => "lifo",
            Discipline::CoDel { .. } => "codel",
            Discipline::AdaptiveLifo { .. } => "adaptive-lifo",
        }
    }
}

/// A limit algorithm, as configured.
#[derive(Debug, Clone, PartialEq)]
pub enum LimitAlgorithm {
    /// A fixed limit; samples are ignored.
    Fixed(u64),
    /// Netflix's `VegasLimit` (concurrency-limits `78a74b9`). A dropped request decreases the
    /// limit.
    Vegas(VegasConfig),
    /// Netflix's `Gradient2Limit` (concurrency-limits `78a74b9`). Whether a request was
    /// dropped is ignored, as in the source: only its latency counts.
    Gradient2(Gradient2Config),
    /// Envoy's adaptive concurrency gradient controller. Whether a request was dropped is
    /// ignored: Envoy's filter samples the latency of every request it sends a response for,
    /// whatever its status (a timeout answered 504 included), and has no notion of a drop.
    EnvoyGradient(EnvoyGradientConfig),
}

/// Configuration of [`LimitAlgorithm::Vegas`]. The defaults are `VegasLimit.Builder`'s at
/// Netflix concurrency-limits `78a74b9`. The alpha, beta, threshold, increase and decrease
/// functions are fixed at that builder's defaults, all built on
/// `f(L) = max(1, floor(log10 L))` (`Log10RootIntFunction`): alpha `3 f(L)`, beta `6 f(L)`,
/// threshold `f(L)`, increase `L + f(L)`, decrease `L − f(L)`.
#[derive(Debug, Clone, PartialEq)]
pub struct VegasConfig {
    /// The limit before any sample (`initialLimit`, default 20).
    pub initial_limit: u64,
    /// The largest limit (`maxConcurrency`, default 1000).
    pub max_concurrency: u64,
    /// Weight of a new estimate against the current limit, in `(0, 1]` (`smoothing`, default
    /// 1.0: the new estimate replaces the limit).
    pub smoothing: f64,
    /// The no-load RTT is re-probed about every `probe_multiplier × limit` samples, jittered
    /// by a factor drawn from `[0.5, 1)` (`probeMultiplier`, default 30).
    pub probe_multiplier: u64,
}

impl Default for VegasConfig {
    /// `VegasLimit.Builder`'s defaults (concurrency-limits `78a74b9`): initial limit 20, max
    /// concurrency 1000, smoothing 1.0, probe multiplier 30.
    fn default() -> VegasConfig {
        VegasConfig {
            initial_limit: 20,
            max_concurrency: 1000,
            smoothing: 1.0,
            probe_multiplier: 30,
        }
    }
}

/// Configuration of [`LimitAlgorithm::Gradient2`]. The defaults are `Gradient2Limit.Builder`'s
/// at Netflix concurrency-limits `78a74b9`.
#[derive(Debug, Clone, PartialEq)]
pub struct Gradient2Config {
    /// The limit before any sample (`initialLimit`, default 20). Not clamped to
    /// `[min_limit, max_concurrency]` until the first update, as in the source.
    pub initial_limit: u64,
    /// The smallest limit an update may set (`minLimit`, default 20).
    pub min_limit: u64,
    /// The largest limit (`maxConcurrency`, default 200).
    pub max_concurrency: u64,
    /// Weight of a new estimate against the current limit (`smoothing`, default 0.2).
    pub smoothing: f64,
    /// Headroom added to the scaled limit at every update (`queueSize`, default 4).
    pub queue_size: u64,
    /// How far above the long-run RTT the RTT may rise before the limit shrinks
    /// (`rttTolerance`, default 1.5; the source requires at least 1.0).
    pub rtt_tolerance: f64,
    /// Samples in the long-run RTT's exponential average: factor `2 / (window + 1)`
    /// (`longWindow`, default 600). The average is a plain mean over its first 10 samples
    /// (the warm-up window `Gradient2Limit` hard-codes).
    pub long_window: u64,
}

impl Default for Gradient2Config {
    /// `Gradient2Limit.Builder`'s defaults (concurrency-limits `78a74b9`): initial 20, min 20,
    /// max 200, smoothing 0.2, queue size 4, RTT tolerance 1.5, long window 600.
    fn default() -> Gradient2Config {
        Gradient2Config {
            initial_limit: 20,
            min_limit: 20,
            max_concurrency: 200,
            smoothing: 0.2,
            queue_size: 4,
            rtt_tolerance: 1.5,
            long_window: 600,
        }
    }
}

/// Configuration of [`LimitAlgorithm::EnvoyGradient`], named after the fields of Envoy's
/// `GradientControllerConfig` (`adaptive_concurrency.proto`). Percentages are in percent
/// (`50.0` is p50), as Envoy's `type.v3.Percent` is. Envoy's intervals are whole milliseconds;
/// these are microseconds.
///
/// Not modelled: `min_rtt_calc_params.fixed_value` (a configured instead of measured minRTT)
/// and `concurrency_limit_params.min_concurrency_limit` (a floor separate from
/// `min_concurrency`); without them Envoy behaves as here.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvoyGradientConfig {
    /// Percentile of the collected latencies taken as the sample RTT and as the minRTT
    /// (`sample_aggregate_percentile`, Envoy's default 50).
    pub sample_aggregate_percentile: f64,
    /// The largest limit (`concurrency_limit_params.max_concurrency_limit`, Envoy's default
    /// 1000).
    pub max_concurrency_limit: u64,
    /// How often the limit is recalculated (`concurrency_limit_params.
    /// concurrency_update_interval`). Envoy requires it and has no default; ours is 100 ms.
    pub concurrency_update_interval: Micros,
    /// Time from the end of one minRTT window to the start of the next, before jitter
    /// (`min_rtt_calc_params.interval`). Envoy requires it and has no default; ours is 60 s.
    pub min_rtt_calc_interval: Micros,
    /// Latency samples a minRTT window collects (`min_rtt_calc_params.request_count`, Envoy's
    /// default 50).
    pub min_rtt_request_count: u64,
    /// The next minRTT window starts up to this percentage of the interval late, uniformly
    /// (`min_rtt_calc_params.jitter`, Envoy's default 15).
    pub jitter: f64,
    /// The limit during a minRTT window, and the smallest limit an update may set
    /// (`min_rtt_calc_params.min_concurrency`, Envoy's default 3).
    pub min_concurrency: u64,
    /// Percentage added to the minRTT before it is compared with the sample RTT
    /// (`min_rtt_calc_params.buffer`, Envoy's default 25).
    pub buffer: f64,
}

impl Default for EnvoyGradientConfig {
    /// Envoy's defaults (`gradient_controller.cc`, `adaptive_concurrency.proto`): p50, max
    /// limit 1000, 50 requests per minRTT window, 15% jitter, min concurrency 3, 25% buffer;
    /// and ours for the two intervals Envoy requires: updates every 100 ms, a minRTT window
    /// every 60 s.
    fn default() -> EnvoyGradientConfig {
        EnvoyGradientConfig {
            sample_aggregate_percentile: 50.0,
            max_concurrency_limit: 1000,
            concurrency_update_interval: 100 * MICROS_PER_MS,
            min_rtt_calc_interval: 60 * MICROS_PER_SECOND,
            min_rtt_request_count: 50,
            jitter: 15.0,
            min_concurrency: 3,
            buffer: 25.0,
        }
    }
}
