//! A service's health: crashing under overload, being down, coming back cold, and a cache that
//! must warm up again.
//!
//! Real servers do not only slow down under overload: they run out of memory or threads and
//! crash, and they come back with cold caches, cold JIT and empty connection pools, slower
//! than before, while the load that crashed them is still there (Google SRE book, ch. 22,
//! "crash loops" and "cold start"). A look-aside cache makes it worse: it is filled only by
//! answers that reach their caller in time, so a restarted service that is too slow to answer
//! in time never refills it and stays slow (Bronson et al., HotOS '21). These are the
//! sustaining effects that turn a short trigger into a lasting outage.
//!
//! The state here is updated from timestamps when the service acts, so nothing costs an event
//! but the crash check itself (scheduled when the overload begins) and the restart.

use crate::base::time::Micros;
use crate::engine::downtime::Downtime;
use crate::model::{CacheModel, ColdStartModel, CrashModel, CrashThreshold, Decay, ServiceModel};

/// Crash, restart, cold start and cache warmth of one service.
#[derive(Debug)]
pub struct Health {
    crash: Option<CrashModel>,
    cold: Option<ColdStartModel>,
    cache: Option<CacheModel>,
    /// Since when the crash condition has held, if it holds.
    overloaded_since: Option<Micros>,
    /// Down (crashed) until then.
    down_until: Option<Micros>,
    /// The last restart, if there was one.
    restarted_at: Option<Micros>,
    served_since_restart: u64,
    hit_ratio: f64,
    /// When it was down after crashing under overload.
    downtime: Downtime,
}

impl Health {
    /// The health of a service that starts up and warm.
    pub fn new(model: &ServiceModel) -> Health {
        Health {
            crash: model.crash,
            cold: model.cold_start,
            cache: model.cache,
            overloaded_since: None,
            down_until: None,
            restarted_at: None,
            served_since_restart: 0,
            hit_ratio: model.cache.map_or(0.0, |cache| cache.hit_ratio),
            downtime: Downtime::default(),
        }
    }

    /// Whether it crashed under overload and has not come back yet.
    #[inline]
    pub fn is_down(&self) -> bool {
        self.down_until.is_some()
    }

    /// Notes the load at `now`; returns when to check for a crash, if the crash condition has
    /// just begun to hold.
    #[inline]
    pub fn observe_load(&mut self, now: Micros, queue_len: u64, in_flight: u64) -> Option<Micros> {
        let crash = self.crash?;
        let overloaded = match crash.threshold {
            CrashThreshold::Queue(threshold) => queue_len > threshold,
            CrashThreshold::InFlight(threshold) => in_flight > threshold,
        };
        match (overloaded, self.overloaded_since) {
            (true, None) if !self.is_down() => {
                self.overloaded_since = Some(now);
                Some(now + crash.hold)
            }
            (false, Some(_)) => {
                self.overloaded_since = None;
                None
            }
            _ => None,
        }
    }

    /// Whether the crash condition has held for its whole `hold` at `now`.
    pub fn crash_due(&self, now: Micros) -> bool {
        match (self.crash, self.overloaded_since) {
            (Some(crash), Some(since)) => !self.is_down() && now >= since + crash.hold,
            _ => false,
        }
    }

    /// It crashes at `now`; returns when it comes back.
    pub fn go_down(&mut self, now: Micros) -> Micros {
        let back = now
            + self
                .crash
                .expect("only a service that can crash goes down")
                .restart_after;
        self.down_until = Some(back);
        self.overloaded_since = None;
        self.downtime.record(now, back);
        back
    }

    /// It comes back at `now`, cold: after a crash under overload, or when capacity returns
    /// after an `outage = "crash"`.
    pub fn come_back(&mut self, now: Micros) {
        self.down_until = None;
        self.restarted_at = Some(now);
        self.served_since_restart = 0;
        if self.cache.is_some() {
            self.hit_ratio = 0.0;
        }
    }

    /// How much longer than usual work takes at `now`, cold after a restart:
    /// `1 + (factor - 1) * exp(-x / scale)`, `x` the requests served or the time since it.
    #[inline]
    pub fn cold_multiplier(&self, now: Micros) -> f64 {
        let (Some(cold), Some(restarted)) = (self.cold, self.restarted_at) else {
            return 1.0;
        };
        let decayed = match cold.decay {
            Decay::Requests(scale) => self.served_since_restart as f64 / scale,
            Decay::Time(scale) => (now - restarted) as f64 / scale,
        };
        1.0 + (cold.factor - 1.0) * libm::exp(-decayed)
    }

    /// The cache's hit ratio now, if there is a cache.
    #[inline]
    pub fn hit_ratio(&self) -> Option<f64> {
        self.cache.map(|_| self.hit_ratio)
    }

    /// A request was served.
    #[inline]
    pub fn served(&mut self) {
        self.served_since_restart += 1;
    }

    /// A miss was answered; it fills the cache if the cache is read-through, or if its caller
    /// still waits (look-aside: the caller writes the cache when the answer arrives).
    #[inline]
    pub fn miss_answered(&mut self, caller_waiting: bool) {
        if let Some(cache) = self.cache
            && (caller_waiting || !cache.look_aside)
        {
            self.hit_ratio += (cache.hit_ratio - self.hit_ratio) / cache.fills;
        }
    }

    /// When it was down after crashing under overload.
    pub fn into_downtime(self) -> Downtime {
        self.downtime
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::capacity::CapacityCurve;
    use crate::base::distribution::Distribution;
    use crate::base::time::Duration;
    use crate::model::RejectionCosts;
    use crate::model::overload::Discipline;
    use crate::scenario::{InFlightRepeat, Outage};

    fn model(
        crash: Option<CrashModel>,
        cold: Option<ColdStartModel>,
        cache: Option<CacheModel>,
    ) -> ServiceModel {
        ServiceModel {
            name: "s".into(),
            workers: 1,
            service_time: Distribution::Constant(Duration::from_ms(10)),
            queue_limit: 10,
            queue_discipline: Discipline::Fifo,
            overload_status: 503,
            retry_after: None,
            rate_limit: None,
            errors: None,
            capacity: CapacityCurve::new(1, &[]),
            full_capacity: CapacityCurve::new(1, &[]),
            outage: Outage::Queue,
            drop_expired: false,
            deadline_check: None,
            idempotency_store: crate::scenario::IdempotencyStore::Durable,
            idempotency_ttl: 0,
            idempotency_in_flight: InFlightRepeat::Reject,
            calls: Vec::new(),
            routes: Vec::new(),
            endpoint_routes: Vec::new(),
            downstream: None,
            call_policies: Vec::new(),
            failure_status: 503,
            holds_worker_on_calls: true,
            keeps_keys: true,
            rejection_cost: RejectionCosts::default(),
            cancellation: false,
            concurrency_limit: None,
            crash,
            cold_start: cold,
            contention: None,
            cache,
            optimistic_row: None,
            fleet: crate::model::FleetModel::SINGLE,
        }
    }

    /// The crash condition must hold for the whole `hold`: a dip below the threshold starts
    /// the clock again.
    #[test]
    fn a_crash_needs_the_overload_to_hold() {
        let crash = CrashModel {
            threshold: CrashThreshold::Queue(5),
            hold: 100,
            restart_after: 1000,
        };
        let mut health = Health::new(&model(Some(crash), None, None));
        assert_eq!(health.observe_load(10, 5, 6), None, "not above 5");
        assert_eq!(health.observe_load(20, 6, 7), Some(120));
        assert_eq!(health.observe_load(50, 7, 8), None, "already counting");
        assert!(!health.crash_due(119));
        assert_eq!(health.observe_load(60, 2, 3), None, "the dip resets");
        assert!(!health.crash_due(120));
        assert_eq!(health.observe_load(70, 9, 9), Some(170));
        assert!(health.crash_due(170));
        assert_eq!(health.go_down(170), 1170);
        assert!(health.is_down());
        assert_eq!(
            health.observe_load(200, 50, 50),
            None,
            "down: nothing to count"
        );
        health.come_back(1170);
        assert!(!health.is_down());
        assert_eq!(health.into_downtime().periods(), [(170, 1170)]);
    }

    /// `1 + (factor - 1) * exp(-n / requests)`: 3 right after the restart, `1 + 2/e` after
    /// `requests`, and 1 before any restart.
    #[test]
    fn a_restarted_service_is_cold_and_warms_up() {
        let cold = ColdStartModel {
            factor: 3.0,
            decay: Decay::Requests(1000.0),
        };
        let mut health = Health::new(&model(None, Some(cold), None));
        assert_eq!(health.cold_multiplier(0), 1.0);
        health.come_back(5);
        assert_eq!(health.cold_multiplier(5), 3.0);
        for _ in 0..1000 {
            health.served();
        }
        let expected = 1.0 + 2.0 / std::f64::consts::E;
        assert!((health.cold_multiplier(9) - expected).abs() < 1e-12);
        let timed = ColdStartModel {
            factor: 2.0,
            decay: Decay::Time(1_000_000.0),
        };
        let mut health = Health::new(&model(None, Some(timed), None));
        health.come_back(1_000_000);
        let expected = 1.0 + libm::exp(-2.0);
        assert!((health.cold_multiplier(3_000_000) - expected).abs() < 1e-12);
    }

    /// After a restart the hit ratio starts at 0 and each fill moves it `1/fills` of the way
    /// to the steady ratio; a look-aside cache is not filled by answers nobody waited for.
    #[test]
    fn a_cache_refills_only_from_answers_in_time_when_look_aside() {
        let cache = CacheModel {
            hit_ratio: 0.9,
            hit_time: 1000,
            look_aside: true,
            fills: 10.0,
        };
        let mut health = Health::new(&model(None, None, Some(cache)));
        assert_eq!(health.hit_ratio(), Some(0.9));
        health.come_back(0);
        assert_eq!(health.hit_ratio(), Some(0.0));
        health.miss_answered(false);
        assert_eq!(health.hit_ratio(), Some(0.0), "the caller had gone");
        health.miss_answered(true);
        assert!((health.hit_ratio().unwrap() - 0.09).abs() < 1e-12);
        let read_through = CacheModel {
            look_aside: false,
            ..cache
        };
        let mut health = Health::new(&model(None, None, Some(read_through)));
        health.come_back(0);
        health.miss_answered(false);
        assert!((health.hit_ratio().unwrap() - 0.09).abs() < 1e-12);
    }
}
