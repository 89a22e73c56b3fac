//! Envoy's passive outlier detection (consecutive 5xx) and panic threshold, as configured, for a
//! caller choosing among the instances (hosts) of a service. The running state is the engine's
//! (`crate::engine::outlier`); what is configured is the model's.
//!
//! **Why a retry-storm simulator needs it.** With more than one instance behind a service, which
//! instance an attempt reaches decides whether a fault stays local. A dead or fast-failing
//! instance behind round robin (or random) keeps getting its 1/N share of attempts, each one
//! failing and each failure a retry, until something takes it out of the rotation; under least
//! request (P2C) it is worse, since fast failures keep its count of active requests near zero, so
//! it wins the comparisons and attracts load (a "black hole"). Envoy's outlier detection is what
//! takes it out: after `consecutive_5xx` failures in a row the caller ejects the instance for a
//! while, growing with each ejection. It also cuts the other way: a service shedding load with
//! 503 looks like a broken instance, and ejecting it moves its share onto the others, already
//! loaded. `max_ejection_percent` bounds that, and the panic threshold stops it when too few
//! instances are left: below it, Envoy ignores health and spreads over all of them again.
//!
//! Defaults are Envoy's: the `envoy.config.cluster.v3.OutlierDetection` proto
//! (`api/envoy/config/cluster/v3/outlier_detection.proto`) and the `DEFAULT_*` constants of
//! `DetectorConfig` (`source/common/upstream/outlier_detection_impl.h`); the panic threshold is
//! `healthy_panic_threshold` of the cluster's `common_lb_config`, 50 % when unset
//! (`PROTOBUF_PERCENT_TO_ROUNDED_INTEGER_OR_DEFAULT(common_config, healthy_panic_threshold, 100,
//! 50)` in the load balancers). See the engine's module (`crate::engine::outlier`) for the exact rules and
//! what is left out.

use crate::base::time::Micros;

pub use crate::scenario::fleet::{
    DEFAULT_BASE_EJECTION_TIME, DEFAULT_CONSECUTIVE_FAILURES, DEFAULT_INTERVAL,
    DEFAULT_MAX_EJECTION_PERCENT, DEFAULT_MAX_EJECTION_TIME, DEFAULT_PANIC_THRESHOLD,
};

/// One caller's outlier detection and panic threshold for the instances of one service, as
/// configured. The types are Envoy's: a count, durations, an integer percent
/// (`max_ejection_percent` is a `UInt32Value` up to 100) and a `Percent` (a double from 0 to 100).
///
/// Valid values, which the scenario's checks must ensure (Envoy refuses the others):
/// `interval > 0`, `base_ejection_time > 0`, `max_ejection_time >= base_ejection_time`,
/// `max_ejection_percent <= 100`, `0 <= panic_threshold <= 100`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutlierModel {
    /// `consecutive_5xx`: failures in a row (5xx responses and local-origin failures alike)
    /// that eject an instance. 0 never ejects (Envoy compares the incremented count with it for
    /// equality). Default 5.
    pub consecutive_failures: u32,
    /// `interval`: the time between sweeps, which return ejected instances to service and decay
    /// the ejection multiplier. Default 10 s.
    pub interval: Micros,
    /// `base_ejection_time`: an ejection lasts this times the instance's multiplier (about the
    /// times it was ejected in a row). Default 30 s.
    pub base_ejection_time: Micros,
    /// `max_ejection_time`: the longest an ejection lasts. Default 300 s, or
    /// `base_ejection_time` if longer ([`default_max_ejection_time`]).
    pub max_ejection_time: Micros,
    /// `max_ejection_percent`: an ejection is refused if the instances ejected would then be
    /// more than this percent of all. Default 10.
    pub max_ejection_percent: u32,
    /// `always_eject_one_host`: an ejection is allowed whatever `max_ejection_percent` says when
    /// no instance is ejected. Default false (Envoy 1.31, PR #34796), so that with the default
    /// 10 % fewer than 10 instances are never ejected; before Envoy PR #27909 (2023) one
    /// instance could always be ejected, as this setting does.
    pub always_eject_one_host: bool,
    /// `healthy_panic_threshold`, in percent: when the instances not ejected are fewer than
    /// this share of all, the caller ignores ejections and balances over every instance. 0
    /// turns panic off. Envoy truncates it to an integer percent. Default 50.
    pub panic_threshold: f64,
}

impl Default for OutlierModel {
    /// Envoy's defaults: `envoy.config.cluster.v3.OutlierDetection` with no field set
    /// (`consecutive_5xx` 5, `interval` 10 s, `base_ejection_time` 30 s, `max_ejection_time`
    /// 300 s, `max_ejection_percent` 10, `always_eject_one_host` false), and
    /// `healthy_panic_threshold` 50 %.
    fn default() -> Self {
        OutlierModel {
            consecutive_failures: DEFAULT_CONSECUTIVE_FAILURES,
            interval: DEFAULT_INTERVAL,
            base_ejection_time: DEFAULT_BASE_EJECTION_TIME,
            max_ejection_time: DEFAULT_MAX_EJECTION_TIME,
            max_ejection_percent: DEFAULT_MAX_EJECTION_PERCENT,
            always_eject_one_host: false,
            panic_threshold: DEFAULT_PANIC_THRESHOLD,
        }
    }
}

/// `max_ejection_time` when it is not configured: 300 s, or `base_ejection_time` if longer
/// (Envoy's `DetectorConfig`: `std::max(DEFAULT_MAX_EJECTION_TIME_MS, base_ejection_time_ms_)`).
pub fn default_max_ejection_time(base_ejection_time: Micros) -> Micros {
    DEFAULT_MAX_EJECTION_TIME.max(base_ejection_time)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults are Envoy's (`outlier_detection_impl.h`'s `DEFAULT_*`, 50 % panic).
    #[test]
    fn defaults_are_envoys() {
        let model = OutlierModel::default();
        assert_eq!(model.consecutive_failures, 5);
        assert_eq!(model.interval, 10_000_000);
        assert_eq!(model.base_ejection_time, 30_000_000);
        assert_eq!(model.max_ejection_time, 300_000_000);
        assert_eq!(model.max_ejection_percent, 10);
        assert!(!model.always_eject_one_host);
        assert_eq!(model.panic_threshold, 50.0);
        assert_eq!(default_max_ejection_time(30_000_000), 300_000_000);
        assert_eq!(default_max_ejection_time(400_000_000), 400_000_000);
    }
}
