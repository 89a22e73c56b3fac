//! What one caller (one Envoy, one client process) knows of the instances of one service:
//! Envoy's passive outlier detection by consecutive failures, and its panic threshold.
//!
//! The caller tells the detector the result of each attempt it sends ([`OutlierDetector::record`])
//! and asks it, when choosing an instance, which are ejected and whether it is in panic
//! ([`OutlierDetector::usable`]). Envoy runs a timer every `interval` (the *sweep*) that returns
//! ejected instances to service and decays their multipliers; here no event is scheduled for it:
//! every call first applies, in order, the sweeps due at or before its `now` (at `interval`,
//! `2 interval`, ... from time 0, the caller's start), so the state is the same whether it is
//! asked at every sweep or once in a while. A sweep costs O(instances), and sweeps that can
//! change nothing (no instance ejected, every multiplier 0) are skipped at once; memory is
//! O(instances). A call at the very instant of a sweep sees the sweep done: the sweep comes
//! first.
//!
//! # Envoy's rules, as modelled exactly
//!
//! From `source/common/upstream/outlier_detection_impl.cc` (envoyproxy/envoy, as of commit
//! `00c7146d95ff67fc55c78f036d6236689b66e72f`; functions named below), with the default
//! `split_external_local_origin_errors: false`:
//!
//! - **Counting** (`DetectorHostMonitorImpl::putHttpResponseCode`,
//!   `putResultNoLocalExternalSplit`, `resultToHttpCode`). A 5xx response and a local-origin
//!   failure (a timeout is mapped to 504, a connect failure or reset to 503) increment one
//!   consecutive counter; any other response, 4xx and 429 included, sets it to 0. When the
//!   incremented count *equals* `consecutive_5xx` the instance is reported; a count past it
//!   reports nothing more.
//! - **A report** (`DetectorImpl::onConsecutiveErrorWorker`). An instance already ejected is
//!   left as it is, its counter too. Otherwise the ejection is tried, and the counter set to 0
//!   whether or not the ejection was allowed, so a refused instance needs `consecutive_5xx`
//!   more failures to be tried again. (Envoy posts the report from the worker thread to the main
//!   thread; here it is handled at once.)
//! - **Ejection** (`DetectorImpl::ejectHost`). Allowed when `100.0 * (ejected + 1) / hosts <=
//!   max_ejection_percent`, `ejected` the instances ejected before this one, or, with
//!   `always_eject_one_host`, when none is ejected. So at most `floor(max_ejection_percent *
//!   hosts / 100)` instances are ejected at once: 1 of 10 and 2 of 20 at 10 %, none of 3 (1
//!   with `always_eject_one_host`). This is Envoy since PR #27909 (2023); before it the test was
//!   `100.0 * ejected / hosts < max_ejection_percent`, which always allowed one and rounded up
//!   (2 of 15 at 10 %). Computed here in integers, `100 (ejected + 1) <= max_ejection_percent *
//!   hosts`, which decides the same. `enforcing_consecutive_5xx` is taken as its default 100 %:
//!   an allowed ejection happens. On ejection the multiplier (`eject_time_backoff`, 0 at the
//!   start) grows by one if `multiplier * base_ejection_time < max_ejection_time +
//!   base_ejection_time`; so it stops at the first value with `multiplier * base_ejection_time >=
//!   max_ejection_time + base_ejection_time` (11 with the defaults, one past the 10 that reach
//!   the maximum), and that extra step is felt when it decays.
//! - **Un-ejection** (`DetectorImpl::checkHostForUneject`, `unejectHost`), only at a sweep: an
//!   instance ejected at `t` returns at the first sweep `s` with `min(base_ejection_time *
//!   multiplier, max_ejection_time) <= s - t` (`max_ejection_time_jitter` taken as its default
//!   0). Its consecutive counter is set to 0 and the sweep's time kept as its last un-ejection.
//! - **Decay** (`DetectorImpl::onIntervalTimer`): at each sweep, after the un-ejections, an
//!   instance not ejected whose last un-ejection is at least `interval` old has its multiplier
//!   lowered by one (not below 0). An instance never ejected has no multiplier to lower.
//! - **Sweeps** (`DetectorImpl::initialize`, `armIntervalTimer`): the timer is armed when the
//!   detector is created and again after each sweep, so sweeps fall every `interval` from the
//!   start (Envoy drifts by the sweep's own processing time; not here).
//! - **Panic** (`LoadBalancerBase::isHostSetInPanic`, in
//!   `source/extensions/load_balancing_policies/common/load_balancer_impl.cc`, formerly
//!   `source/common/upstream/load_balancer_impl.cc`): in panic when `100.0 * healthy / hosts <
//!   threshold`, `healthy` the instances not ejected and `threshold` `healthy_panic_threshold`
//!   as an integer: `ProtobufPercentHelper::convertPercent` computes `100 * (percent / 100.0)`
//!   and truncates it (so 29 % is 28: `0.29 * 100 = 28.999...`), at most 100. In panic the load
//!   balancer picks among all instances, ejected or not. Computed here as `100 healthy <
//!   threshold * hosts`.
//!
//! # Left out
//!
//! Success-rate and failure-percentage detection (the statistical ejections at each sweep; off
//! or needing volume by default), `consecutive_gateway_failure` (its enforcement is 0 % by
//! default), `split_external_local_origin_errors` and the local-origin detectors,
//! `enforcing_consecutive_5xx` below 100 % (a random draw), `max_ejection_time_jitter` (0 by
//! default), active health checks and `successful_active_health_check_uneject_host`, runtime
//! overrides, hosts added or removed, priority levels and their spill-over (one priority: panic
//! is of that one host set), degraded hosts, `fail_traffic_on_panic` and zone-aware routing, the
//! delay of the worker-to-main-thread post, and a phase of the sweep timer other than the
//! caller's start. When every instance is ejected and the panic threshold is 0, none is usable:
//! what the caller does then (Envoy answers 503, no healthy upstream) is the caller's business.

use crate::base::time::Micros;
use crate::model::outlier::OutlierModel;

/// What one caller knows of each instance of one service: consecutive failures, ejection,
/// multiplier, time ejected. See the module for the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlierDetector {
    consecutive_failures: u32,
    interval: Micros,
    base_ejection_time: Micros,
    max_ejection_time: Micros,
    max_ejection_percent: u64,
    always_eject_one_host: bool,
    /// `healthy_panic_threshold` as Envoy uses it: an integer percent, at most 100.
    panic_threshold: u64,
    hosts: Vec<Host>,
    /// How many of `hosts` are ejected.
    ejected: usize,
    /// The sweeps at `k * interval` for `k <= swept` have been applied.
    swept: u64,
    /// True when sweeps can change nothing: no instance ejected, every multiplier 0.
    quiet: bool,
}

/// The memory a detector takes per instance, for the cost announced before a run.
pub const BYTES_PER_HOST: usize = std::mem::size_of::<Host>();

/// One instance, as one caller's detector sees it (Envoy's `DetectorHostMonitorImpl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Host {
    /// Failures in a row (`consecutive_5xx_`).
    consecutive: u32,
    /// When it was ejected, while it is.
    ejected_at: Option<Micros>,
    /// The ejection multiplier (`eject_time_backoff_`).
    multiplier: u32,
    /// The sweep that last returned it to service (`last_unejection_time_`).
    unejected_at: Option<Micros>,
    /// How many times it was ejected (`num_ejections_`).
    ejections: u32,
    /// Time ejected in ejections that have ended.
    ejected_before: Micros,
}

impl OutlierDetector {
    /// A detector for `hosts` instances, none ejected, at time 0.
    ///
    /// # Panics
    ///
    /// If `model.interval` is 0 (the scenario's checks refuse it, as Envoy does).
    pub fn new(model: &OutlierModel, hosts: usize) -> Self {
        assert!(model.interval > 0, "outlier detection needs an interval");
        debug_assert!(model.max_ejection_time >= model.base_ejection_time);
        debug_assert!(model.max_ejection_percent <= 100);
        debug_assert!((0.0..=100.0).contains(&model.panic_threshold));
        // `ProtobufPercentHelper::convertPercent(percent, 100)`: `100 * (percent / 100.0)`,
        // truncated to an integer; then `std::min<uint64_t>(100, ...)`.
        let panic_threshold = ((100.0 * (model.panic_threshold / 100.0)) as u64).min(100);
        OutlierDetector {
            consecutive_failures: model.consecutive_failures,
            interval: model.interval,
            base_ejection_time: model.base_ejection_time,
            max_ejection_time: model.max_ejection_time,
            max_ejection_percent: u64::from(model.max_ejection_percent.min(100)),
            always_eject_one_host: model.always_eject_one_host,
            panic_threshold,
            hosts: vec![Host::default(); hosts],
            ejected: 0,
            swept: 0,
            quiet: true,
        }
    }

    /// The result of an attempt this caller sent to `host`, seen at `now`: `failed` for a 5xx
    /// response or a local-origin failure (the attempt timed out, was reset, or could not
    /// connect), not for any other response (4xx and 429 included). May eject `host` at `now`.
    /// `now` never goes back from one call to the next.
    pub fn record(&mut self, host: usize, failed: bool, now: Micros) {
        self.catch_up(now);
        let threshold = self.consecutive_failures;
        let state = &mut self.hosts[host];
        if !failed {
            state.consecutive = 0;
            return;
        }
        state.consecutive = state.consecutive.saturating_add(1);
        if state.consecutive != threshold || state.ejected_at.is_some() {
            return;
        }
        if self.may_eject() {
            self.eject(host, now);
        }
        self.hosts[host].consecutive = 0;
    }

    /// Whether `host` is ejected at `now`.
    pub fn is_ejected(&mut self, host: usize, now: Micros) -> bool {
        self.catch_up(now);
        self.hosts[host].ejected_at.is_some()
    }

    /// How many instances are ejected at `now`.
    #[cfg(test)]
    pub fn ejected_count(&mut self, now: Micros) -> usize {
        self.catch_up(now);
        self.ejected
    }

    /// Whether the caller is in panic at `now`: fewer instances left than the panic threshold,
    /// so it balances over all of them, ejected or not.
    pub fn panic(&mut self, now: Micros) -> bool {
        self.catch_up(now);
        let hosts = self.hosts.len() as u64;
        let healthy = hosts - self.ejected as u64;
        100 * healthy < self.panic_threshold * hosts
    }

    /// Whether the caller's load balancer may pick `host` at `now`: it is not ejected, or the
    /// caller is in panic.
    pub fn usable(&mut self, host: usize, now: Micros) -> bool {
        !self.is_ejected(host, now) || self.panic(now)
    }

    /// The time `host` has spent ejected from time 0 up to `now`, as this caller saw it.
    pub fn ejected_time(&mut self, host: usize, now: Micros) -> Micros {
        self.catch_up(now);
        let state = &self.hosts[host];
        let current = state.ejected_at.map_or(0, |at| now.saturating_sub(at));
        state.ejected_before + current
    }

    /// How many times `host` has been ejected (Envoy's `num_ejections`).
    #[cfg(test)]
    pub fn ejections(&self, host: usize) -> u32 {
        self.hosts[host].ejections
    }

    /// Whether one more ejection is allowed (Envoy's `ejectHost`), in integers:
    /// `100.0 * (ejected + 1) / hosts <= max_ejection_percent`.
    fn may_eject(&self) -> bool {
        let ejected = self.ejected as u64;
        let hosts = self.hosts.len() as u64;
        100 * (ejected + 1) <= self.max_ejection_percent * hosts
            || (self.always_eject_one_host && ejected == 0)
    }

    fn eject(&mut self, host: usize, now: Micros) {
        let base = self.base_ejection_time;
        let limit = self.max_ejection_time.saturating_add(base);
        let state = &mut self.hosts[host];
        state.ejected_at = Some(now);
        state.ejections = state.ejections.saturating_add(1);
        if base.saturating_mul(u64::from(state.multiplier)) < limit {
            state.multiplier += 1;
        }
        self.ejected += 1;
        self.quiet = false;
    }

    /// Applies every sweep due at or before `now`, in order.
    fn catch_up(&mut self, now: Micros) {
        let due = now / self.interval;
        while self.swept < due {
            if self.quiet {
                self.swept = due;
                return;
            }
            self.swept += 1;
            self.sweep(self.swept * self.interval);
        }
    }

    /// Envoy's `onIntervalTimer` at `now`, for consecutive-failure ejections: un-ejections,
    /// then the multipliers' decay.
    fn sweep(&mut self, now: Micros) {
        let (base, max, interval) = (
            self.base_ejection_time,
            self.max_ejection_time,
            self.interval,
        );
        let mut quiet = true;
        for state in &mut self.hosts {
            if let Some(at) = state.ejected_at {
                let ejection = base.saturating_mul(u64::from(state.multiplier)).min(max);
                if ejection <= now - at {
                    state.ejected_at = None;
                    state.consecutive = 0;
                    state.unejected_at = Some(now);
                    state.ejected_before += now - at;
                    self.ejected -= 1;
                }
            }
            if state.ejected_at.is_none()
                && state.multiplier > 0
                && state
                    .unejected_at
                    .is_some_and(|unejected| now - unejected >= interval)
            {
                state.multiplier -= 1;
            }
            quiet &= state.ejected_at.is_none() && state.multiplier == 0;
        }
        self.quiet = quiet;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::MICROS_PER_SECOND;

    const S: Micros = MICROS_PER_SECOND;

    fn detector(hosts: usize) -> OutlierDetector {
        OutlierDetector::new(&OutlierModel::default(), hosts)
    }

    /// `failures` failed attempts to `host` at `now`.
    fn fail(detector: &mut OutlierDetector, host: usize, failures: u32, now: Micros) {
        for _ in 0..failures {
            detector.record(host, true, now);
        }
    }

    /// The first sweep after `from` at which `host` is no longer ejected.
    fn returns_at(detector: &mut OutlierDetector, host: usize, from: Micros) -> Micros {
        let interval = detector.interval;
        let mut sweep = (from / interval + 1) * interval;
        while detector.is_ejected(host, sweep) {
            sweep += interval;
        }
        sweep
    }

    /// Envoy's `putHttpResponseCode`: each 5xx (or local-origin failure) increments the
    /// consecutive counter, anything else sets it to 0, and the count reaching `consecutive_5xx`
    /// (5) ejects. Four failures, a success (a 429 is one), four failures: no ejection; the
    /// fifth in a row ejects.
    #[test]
    fn five_failures_in_a_row_eject() {
        let mut detector = detector(10);
        fail(&mut detector, 3, 4, S);
        assert!(!detector.is_ejected(3, S));
        detector.record(3, false, S);
        fail(&mut detector, 3, 4, S);
        assert!(!detector.is_ejected(3, S));
        assert_eq!(detector.ejected_count(S), 0);
        fail(&mut detector, 3, 1, 2 * S);
        assert!(detector.is_ejected(3, 2 * S));
        assert_eq!(detector.ejected_count(2 * S), 1);
        assert_eq!(detector.ejections(3), 1);
        assert!(!detector.usable(3, 2 * S));
        assert!(detector.usable(4, 2 * S));
    }

    /// Envoy's `checkHostForUneject`, at the interval timer only: an instance ejected at `t`
    /// returns at the first sweep `s` with `min(base * multiplier, max) <= s - t`. Ejected at
    /// 12 s for 30 s, it is still out at the 40 s sweep and back at the 50 s one; ejected at
    /// exactly 20 s (after that instant's sweep) it is back at 50 s, the boundary included;
    /// 1 us later, only at 60 s. `unejectHost` sets the counter to 0: four failures after the
    /// return do not eject again, and failures while ejected count for nothing.
    #[test]
    fn an_ejected_instance_returns_at_the_first_sweep_past_its_time() {
        let mut detector = detector(10);
        fail(&mut detector, 0, 5, 12 * S);
        assert!(detector.is_ejected(0, 12 * S));
        assert!(detector.is_ejected(0, 40 * S));
        assert!(detector.is_ejected(0, 50 * S - 1));
        // Failures while ejected reach the threshold again, and are ignored.
        fail(&mut detector, 0, 5, 45 * S);
        assert!(!detector.is_ejected(0, 50 * S));
        fail(&mut detector, 0, 4, 50 * S);
        assert!(!detector.is_ejected(0, 50 * S));

        let mut detector = self::detector(10);
        fail(&mut detector, 1, 5, 20 * S);
        assert!(detector.is_ejected(1, 50 * S - 1));
        assert!(!detector.is_ejected(1, 50 * S));

        let mut detector = self::detector(10);
        fail(&mut detector, 2, 5, 20 * S + 1);
        assert!(detector.is_ejected(2, 50 * S));
        assert!(detector.is_ejected(2, 60 * S - 1));
        assert!(!detector.is_ejected(2, 60 * S));
    }

    /// Envoy's `ejectHost` and `onIntervalTimer`: each ejection raises the multiplier by one
    /// while `multiplier * base < max + base`, an ejection lasts `min(base * multiplier, max)`,
    /// and each sweep at least `interval` after the last return lowers it by one. Ejected again
    /// at once each time it returns: 30 s, 60 s, 90 s, ... up to 300 s, where it stays (the
    /// multiplier stops at 11). Back at `u`, the multiplier is 11 at the sweep of `u` and
    /// `u + interval - 1`, 10 at `u + interval`, 9 at `u + 2 interval`; an ejection then lasts
    /// 300 s (multiplier 10); one more `interval` later, 270 s (9).
    #[test]
    fn ejections_grow_to_the_maximum_and_the_multiplier_decays() {
        let mut detector = detector(10);
        let mut now = 12 * S;
        let mut durations = Vec::new();
        for _ in 0..12 {
            fail(&mut detector, 0, 5, now);
            assert!(detector.is_ejected(0, now));
            let back = returns_at(&mut detector, 0, now);
            durations.push((back - now) / S);
            now = back;
        }
        // Ejected at 12 s, then at each return (a sweep): the first lasts 38 s up to the 50 s
        // sweep, the others exactly their length.
        assert_eq!(
            durations,
            [38, 60, 90, 120, 150, 180, 210, 240, 270, 300, 300, 300]
        );
        assert_eq!(detector.hosts[0].multiplier, 11);
        assert_eq!(detector.ejections(0), 12);
        let back = now;
        detector.catch_up(back + 10 * S - 1);
        assert_eq!(detector.hosts[0].multiplier, 11);
        detector.catch_up(back + 10 * S);
        assert_eq!(detector.hosts[0].multiplier, 10);
        detector.catch_up(back + 20 * S);
        assert_eq!(detector.hosts[0].multiplier, 9);
        fail(&mut detector, 0, 5, back + 20 * S);
        assert_eq!(returns_at(&mut detector, 0, back + 20 * S), back + 320 * S);

        let mut detector = self::detector(10);
        fail(&mut detector, 0, 5, 12 * S);
        for _ in 0..11 {
            let at = detector.hosts[0].ejected_at.unwrap();
            let back = returns_at(&mut detector, 0, at);
            fail(&mut detector, 0, 5, back);
        }
        let at = detector.hosts[0].ejected_at.unwrap();
        let back = returns_at(&mut detector, 0, at);
        fail(&mut detector, 0, 5, back + 30 * S);
        assert_eq!(detector.hosts[0].multiplier, 9);
        assert_eq!(returns_at(&mut detector, 0, back + 30 * S), back + 300 * S);

        // The boundary of the decay: back at 50 s with multiplier 1, lowered to 0 by the 60 s
        // sweep. Ejected 1 us before it, the multiplier goes to 2 (60 s, back at the 120 s
        // sweep); ejected at 60 s, after it, to 1 (30 s, back at 90 s).
        let mut detector = self::detector(10);
        fail(&mut detector, 0, 5, 12 * S);
        assert_eq!(returns_at(&mut detector, 0, 12 * S), 50 * S);
        fail(&mut detector, 0, 5, 60 * S - 1);
        assert_eq!(detector.hosts[0].multiplier, 2);
        assert_eq!(returns_at(&mut detector, 0, 60 * S - 1), 120 * S);
        let mut detector = self::detector(10);
        fail(&mut detector, 0, 5, 12 * S);
        fail(&mut detector, 0, 5, 60 * S);
        assert_eq!(detector.hosts[0].multiplier, 1);
        assert_eq!(returns_at(&mut detector, 0, 60 * S), 90 * S);
    }

    /// `max_ejection_time` caps an ejection below `base * multiplier`: base 30 s, max 45 s,
    /// the second ejection lasts 45 s, not 60 s. The multiplier grows while `multiplier * 30 <
    /// 45 + 30` (Envoy's `ejectHost`), so it stops at 3.
    #[test]
    fn the_maximum_caps_an_ejection() {
        let model = OutlierModel {
            max_ejection_time: 45 * S,
            ..OutlierModel::default()
        };
        let mut detector = OutlierDetector::new(&model, 10);
        fail(&mut detector, 0, 5, 10 * S);
        assert_eq!(returns_at(&mut detector, 0, 10 * S), 40 * S);
        fail(&mut detector, 0, 5, 40 * S);
        assert_eq!(returns_at(&mut detector, 0, 40 * S), 90 * S);
        fail(&mut detector, 0, 5, 90 * S);
        assert_eq!(detector.hosts[0].multiplier, 3);
        assert_eq!(returns_at(&mut detector, 0, 90 * S), 140 * S);
        fail(&mut detector, 0, 5, 140 * S);
        assert_eq!(detector.hosts[0].multiplier, 3);
    }

    /// Envoy's `ejectHost`: allowed when `100.0 * (ejected + 1) / hosts <=
    /// max_ejection_percent`. At 10 %: 1 of 10 hosts, 2 of 20, none of 3; with
    /// `always_eject_one_host`, 1 of 3. A refused ejection still sets the counter to 0
    /// (`onConsecutiveErrorWorker`): the refused instance needs 5 more failures once room is
    /// made.
    #[test]
    fn at_most_max_ejection_percent_are_ejected() {
        let ejectable = |hosts: usize, always_eject_one_host: bool| {
            let model = OutlierModel {
                always_eject_one_host,
                ..OutlierModel::default()
            };
            let mut detector = OutlierDetector::new(&model, hosts);
            for host in 0..hosts {
                fail(&mut detector, host, 5, S);
            }
            detector.ejected_count(S)
        };
        assert_eq!(ejectable(10, false), 1);
        assert_eq!(ejectable(20, false), 2);
        assert_eq!(ejectable(3, false), 0);
        assert_eq!(ejectable(9, false), 0);
        assert_eq!(ejectable(15, false), 1);
        assert_eq!(ejectable(3, true), 1);
        assert_eq!(ejectable(20, true), 2);

        let mut detector = detector(10);
        fail(&mut detector, 0, 5, S);
        fail(&mut detector, 1, 5, S);
        assert!(detector.is_ejected(0, S));
        assert!(!detector.is_ejected(1, S));
        assert_eq!(detector.hosts[1].consecutive, 0);
        assert!(!detector.is_ejected(0, 40 * S));
        fail(&mut detector, 1, 4, 40 * S);
        assert!(!detector.is_ejected(1, 40 * S));
        fail(&mut detector, 1, 1, 40 * S);
        assert!(detector.is_ejected(1, 40 * S));
    }

    /// Envoy's `isHostSetInPanic`: in panic when `100.0 * healthy / hosts < threshold`. Ten
    /// hosts, threshold 50 %, `max_ejection_percent` 100: five ejected leave 50 %, not panic;
    /// a sixth makes it panic, and every host is usable again. The threshold is truncated to
    /// an integer as `convertPercent` does: 29 % is 28, so 28 healthy of 100 is not panic.
    #[test]
    fn too_few_instances_left_is_panic() {
        let model = OutlierModel {
            max_ejection_percent: 100,
            ..OutlierModel::default()
        };
        let mut detector = OutlierDetector::new(&model, 10);
        for host in 0..5 {
            fail(&mut detector, host, 5, S);
        }
        assert_eq!(detector.ejected_count(S), 5);
        assert!(!detector.panic(S));
        assert!(!detector.usable(0, S));
        fail(&mut detector, 5, 5, S);
        assert_eq!(detector.ejected_count(S), 6);
        assert!(detector.panic(S));
        assert!((0..10).all(|host| detector.usable(host, S)));
        // Back at the 40 s sweep: no longer in panic.
        assert!(!detector.panic(40 * S));

        let model = OutlierModel {
            max_ejection_percent: 100,
            panic_threshold: 29.0,
            ..OutlierModel::default()
        };
        let mut detector = OutlierDetector::new(&model, 100);
        assert_eq!(detector.panic_threshold, 28);
        for host in 0..72 {
            fail(&mut detector, host, 5, S);
        }
        assert!(!detector.panic(S));
        fail(&mut detector, 72, 5, S);
        assert!(detector.panic(S));

        let model = OutlierModel {
            max_ejection_percent: 100,
            panic_threshold: 0.0,
            ..OutlierModel::default()
        };
        let mut detector = OutlierDetector::new(&model, 2);
        fail(&mut detector, 0, 5, S);
        fail(&mut detector, 1, 5, S);
        assert!(!detector.panic(S));
        assert!(!detector.usable(0, S) && !detector.usable(1, S));
    }

    /// The time ejected adds up the ejections that ended and the one under way: 12 s to 50 s,
    /// then 50 s to 110 s.
    #[test]
    fn ejected_time_adds_up() {
        let mut detector = detector(10);
        assert_eq!(detector.ejected_time(0, 5 * S), 0);
        fail(&mut detector, 0, 5, 12 * S);
        assert_eq!(detector.ejected_time(0, 30 * S), 18 * S);
        assert_eq!(detector.ejected_time(0, 50 * S), 38 * S);
        fail(&mut detector, 0, 5, 50 * S);
        assert_eq!(detector.ejected_time(0, 80 * S), 68 * S);
        assert_eq!(detector.ejected_time(0, 200 * S), 98 * S);
        assert_eq!(detector.ejected_time(1, 200 * S), 0);
    }

    /// Sweeps applied lazily are the sweeps Envoy's timer runs: a detector asked at every
    /// sweep and one asked only now and then end in the same state, whatever happened between.
    #[test]
    fn lazy_sweeps_are_the_timers_sweeps() {
        let interval = OutlierModel::default().interval;
        // (host, failures, at) in time order.
        let script: Vec<(usize, u32, Micros)> = vec![
            (0, 5, 3 * S),
            (1, 5, 3 * S),
            (2, 5, 17 * S),
            (0, 5, 41 * S),
            (3, 5, 41 * S),
            (0, 5, 95 * S),
            (4, 5, 95 * S + 7),
            (0, 5, 400 * S),
        ];
        let model = OutlierModel {
            max_ejection_percent: 30,
            ..OutlierModel::default()
        };
        let mut every = OutlierDetector::new(&model, 10);
        let mut lazy = OutlierDetector::new(&model, 10);
        let end = 700 * S;
        let mut next = 0;
        let mut sweep = interval;
        while sweep <= end {
            while next < script.len() && script[next].2 < sweep {
                let (host, failures, at) = script[next];
                fail(&mut every, host, failures, at);
                fail(&mut lazy, host, failures, at);
                next += 1;
            }
            every.catch_up(sweep);
            if sweep % (5 * interval) == 0 {
                lazy.catch_up(sweep);
                assert_eq!(every, lazy, "at {sweep}");
            }
            sweep += interval;
        }
        assert_eq!(next, script.len());
        assert_eq!(every, lazy);
        // Asked at t and t + 5 intervals: the same as asking at every sweep between.
        let mut a = OutlierDetector::new(&model, 10);
        let mut b = OutlierDetector::new(&model, 10);
        fail(&mut a, 0, 5, 12 * S);
        fail(&mut b, 0, 5, 12 * S);
        for k in 2..=7 {
            a.catch_up(k * interval);
        }
        b.catch_up(7 * interval);
        assert_eq!(a, b);
        assert!(!b.is_ejected(0, 7 * interval));
    }
}
