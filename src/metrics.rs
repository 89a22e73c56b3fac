//! What a run adds up to: a policy's [`Summary`] from its [`Measurements`] (success, load,
//! latency, the incident's peaks and goodput, recovery) and each service's
//! [`ServiceSummary`], and with two operations or more each operation's [`OperationSummary`]:
//! the layer above the engine, which only counts.
//!
//! The incident matters to several of them: the trigger (a capacity drop, a declared load
//! spike: see [`crate::scenario::incident`]) is the [`Incident`] window; `recovery_s` counts from
//! its end to lasting health by the scenario's health rule, on the health series of 10 ms steps
//! rather than the buckets, so that its resolution is not the bucket's; the peak of attempts,
//! goodput and failures are reported during it and after it, because a synchronised herd shows
//! in the peak after the incident and a collapse in the goodput during it. The metrics' names,
//! units and directions are [`crate::vocabulary::metric`]'s.

use crate::base::histogram::Histogram;
use crate::base::time::{MICROS_PER_MS, MICROS_PER_SECOND, Micros};
use crate::engine::counters::{Measurements, OperationCounts};
use crate::vocabulary::counts::{BucketCounts, HealthCounts, IntentCounts};
use crate::vocabulary::metric::baseline::Baseline;
use crate::vocabulary::metric::{
    Incident, OperationSummary, Recovery, ServiceSummary, Summary, Window,
};

impl Measurements {
    /// The summary of these measurements.
    pub fn summary(&self, incident: Incident) -> Summary {
        let total = |field: fn(&BucketCounts) -> u64| self.buckets.iter().map(field).sum::<u64>();
        let operations = self.operations;
        let succeeded = total(|b| b.succeeded);
        let attempts = total(|b| b.attempts);
        let status_checks = total(|b| b.status_checks);
        let ratio = |numerator: u64| {
            if operations == 0 {
                0.0
            } else {
                numerator as f64 / operations as f64
            }
        };
        let seconds = |micros: Micros| micros as f64 / MICROS_PER_SECOND as f64;
        let [mean_ms, p50_ms, p99_ms, max_ms] = latencies(
            &self.total_latency,
            self.latency_sum_us,
            self.latency_max_us,
            succeeded,
        );
        let (start, end) = incident.window.unwrap_or((0, Some(0)));
        let end = end.unwrap_or(Micros::MAX);
        let during = self.window(start, end);
        let after = self.window(end, Micros::MAX);
        let baseline = self.baseline(incident);
        Summary {
            operations,
            succeeded,
            success_rate: ratio(succeeded),
            goodput_rps: succeeded as f64 / seconds(incident.duration).max(1e-9),
            attempts,
            status_checks,
            amplification: ratio(attempts + status_checks),
            duplicate_writes: total(|b| b.duplicate_writes),
            unknown_results: total(|b| b.unknown_results),
            timeouts: total(|b| b.timeouts),
            mean_ms,
            p50_ms,
            p99_ms,
            max_ms,
            // A peak over no bucket is 0: nothing was sent.
            peak_incident_rps: if incident.window.is_some() {
                during.peak_attempts_rps.max(0.0)
            } else {
                f64::NAN
            },
            peak_after_rps: after.peak_attempts_rps.max(0.0),
            incident_goodput_rps: if incident.window.is_some() {
                during.per_second(during.succeeded)
            } else {
                f64::NAN
            },
            incident_failed: during.failed,
            wasted_work_s: self
                .services
                .iter()
                .flat_map(|service| &service.buckets)
                .map(|b| b.wasted_work_us)
                .sum::<u64>() as f64
                / MICROS_PER_SECOND as f64,
            recovery_s: self.recovery_s(incident, baseline.as_ref()),
            baseline,
            // Without presses by hand, each operation is an intent.
            intents: self.intents.unwrap_or(IntentCounts {
                started: operations,
                succeeded,
                manual_retries: 0,
            }),
            by_operation: self
                .by_operation
                .iter()
                .map(|counts| counts.summary(incident.duration))
                .collect(),
        }
    }

    /// The buckets that overlap `[from, to)`, added up.
    pub fn window(&self, from: Micros, to: Micros) -> Window {
        Window::of(&self.buckets[self.buckets_between(from, to)], self.bucket)
    }

    /// The buckets that overlap `[from, to)`.
    fn buckets_between(&self, from: Micros, to: Micros) -> std::ops::Range<usize> {
        if to <= from {
            return 0..0;
        }
        let first = (from / self.bucket) as usize;
        let last = to.div_ceil(self.bucket).min(self.buckets.len() as Micros) as usize;
        first.min(last)..last
    }

    /// The health before the incident (see [`crate::vocabulary::metric::baseline`]): the steps from the
    /// end of the first health window (the warm-up) to the last that ends by the incident's
    /// start; `None` without an incident or under the absolute rule.
    fn baseline(&self, incident: Incident) -> Option<Baseline> {
        let (start, _) = incident.window?;
        if !incident.health.baseline {
            return None;
        }
        let step = self.health_step;
        let warm_up = (incident.health.window.div_ceil(step) as usize).max(1);
        let end = ((start / step) as usize).min(self.health.len());
        let first = warm_up.min(end);
        Some(Baseline::of(
            &self.health[first..end],
            first,
            step as f64 / MICROS_PER_SECOND as f64,
            &incident.health,
        ))
    }

    /// Seconds from the incident's end to the start of the first step of the health series
    /// from which every health window (whole windows sliding by one step, up to the end of
    /// arrivals) is healthy (by the absolute rule, or within the `baseline`'s noise); never if
    /// the last one is not, or if the incident has not ended before the end of arrivals;
    /// unhealthy before if the baseline was.
    fn recovery_s(&self, incident: Incident, baseline: Option<&Baseline>) -> Recovery {
        let Some((_, end)) = incident.window else {
            return Recovery::NoIncident;
        };
        if baseline.is_some_and(|baseline| baseline.unhealthy) {
            return Recovery::UnhealthyBefore;
        }
        let Some(end) = end.filter(|&end| end < incident.duration) else {
            return Recovery::Never;
        };
        let step = self.health_step;
        let first = (end / step) as usize;
        let last = (incident.duration.div_ceil(step) as usize).min(self.health.len());
        if first >= last {
            return Recovery::Never;
        }
        // Whole windows only: a window cut short by the end of arrivals could hold nothing but
        // the instants of an outage in which nothing ended and nothing was retried yet, and call
        // that healthy. With less than one window left after the incident, the rest is one.
        let width = (incident.health.window.div_ceil(step) as usize)
            .max(1)
            .min(last - first);
        let alpha = Baseline::alpha(last - width + 1 - first);
        let healthy = |window: &HealthCounts| match baseline {
            Some(baseline) => baseline.is_healthy(&incident.health, window, alpha),
            None => incident.health.is_healthy(window),
        };
        let mut window = HealthCounts::default();
        for counts in &self.health[last - width..last] {
            window.add(counts);
        }
        let mut recovered = None;
        for index in (first..=last - width).rev() {
            if index < last - width {
                // Slide back one step: the step before comes in, the last one goes out.
                window.add(&self.health[index]);
                window.subtract(&self.health[index + width]);
            }
            if !healthy(&window) {
                break;
            }
            recovered = Some(index);
        }
        recovered.map_or(Recovery::Never, |index| {
            let start = (index as Micros * step).max(end);
            Recovery::After((start - end) as f64 / MICROS_PER_SECOND as f64)
        })
    }
}

impl OperationCounts {
    /// The operation's summary, for arrivals that lasted `duration`: its ratios as the run's.
    fn summary(&self, duration: Micros) -> OperationSummary {
        let ratio = |numerator: u64| {
            if self.operations == 0 {
                0.0
            } else {
                numerator as f64 / self.operations as f64
            }
        };
        let [mean_ms, p50_ms, p99_ms, max_ms] = latencies(
            &self.latency,
            self.latency_sum_us,
            self.latency_max_us,
            self.succeeded,
        );
        OperationSummary {
            name: self.name.clone(),
            operations: self.operations,
            succeeded: self.succeeded,
            success_rate: ratio(self.succeeded),
            goodput_rps: self.succeeded as f64
                / (duration as f64 / MICROS_PER_SECOND as f64).max(1e-9),
            attempts: self.attempts,
            status_checks: self.status_checks,
            amplification: ratio(self.attempts + self.status_checks),
            duplicate_writes: self.duplicate_writes,
            unknown_results: self.unknown_results,
            mean_ms,
            p50_ms,
            p99_ms,
            max_ms,
        }
    }
}

/// The mean, median, 99th percentile and slowest of `succeeded` latencies, in ms, from their
/// `histogram`, `sum_us` and `max_us`: all undefined without a success.
fn latencies(
    histogram: &Histogram,
    sum_us: u128,
    max_us: Micros,
    succeeded: u64,
) -> [Option<f64>; 4] {
    let to_ms = |micros: f64| micros / MICROS_PER_MS as f64;
    [
        (succeeded > 0).then(|| to_ms(sum_us as f64 / succeeded as f64)),
        histogram.quantile(0.5).map(to_ms),
        histogram.quantile(0.99).map(to_ms),
        (succeeded > 0).then(|| to_ms(max_us as f64)),
    ]
}

impl Measurements {
    /// Each service's summary, in the model's order.
    pub fn service_summaries(&self) -> Vec<ServiceSummary> {
        let bucket_s = self.bucket as f64 / MICROS_PER_SECOND as f64;
        self.services
            .iter()
            .map(|service| {
                let totals = service.totals();
                ServiceSummary {
                    name: service.name.clone(),
                    amplification: if self.operations == 0 {
                        0.0
                    } else {
                        totals.requests() as f64 / self.operations as f64
                    },
                    peak_requests_rps: service
                        .buckets
                        .iter()
                        .map(|b| b.requests() as f64 / bucket_s)
                        .fold(0.0, f64::max),
                    peak_queue_len: service.peak_queue_len,
                    wasted_work_s: totals.wasted_work_us as f64 / MICROS_PER_SECOND as f64,
                    totals,
                    instances: service.instances.clone(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::counters::Recorder;
    use crate::vocabulary::metric::{HealthRule, METRICS, format_metric, metric};

    fn healthy() -> BucketCounts {
        BucketCounts {
            first_attempts: 100,
            attempts: 100,
            succeeded: 100,
            ..BucketCounts::default()
        }
    }

    fn storm() -> BucketCounts {
        BucketCounts {
            first_attempts: 100,
            retries: 300,
            attempts: 400,
            succeeded: 20,
            failed: 80,
            ..BucketCounts::default()
        }
    }

    /// The health counts of a bucket.
    fn health_of(bucket: &BucketCounts) -> HealthCounts {
        HealthCounts {
            succeeded: bucket.succeeded,
            failed: bucket.failed,
            first_attempts: bucket.first_attempts,
            retries: bucket.retries,
        }
    }

    /// Measurements of 1 s `buckets`, whose health series has one step per bucket.
    fn measurements(buckets: Vec<BucketCounts>) -> Measurements {
        let mut recorder = Recorder::new(MICROS_PER_SECOND, MICROS_PER_SECOND);
        recorder.operation_started(0);
        let mut measurements = recorder.finish(Vec::new(), &[], 0);
        measurements.health_step = MICROS_PER_SECOND;
        measurements.health = buckets.iter().map(health_of).collect();
        measurements.buckets = buckets;
        measurements
    }

    fn incident(start_s: u64, end_s: u64, duration_s: u64) -> Incident {
        Incident {
            window: Some((start_s * MICROS_PER_SECOND, Some(end_s * MICROS_PER_SECOND))),
            duration: duration_s * MICROS_PER_SECOND,
            health: HealthRule::default(),
        }
    }

    #[test]
    fn recovery_is_measured_from_the_incident_end_to_lasting_health() {
        let run = measurements(vec![
            healthy(),
            storm(),
            storm(),
            healthy(),
            storm(),
            healthy(),
            healthy(),
        ]);
        // Healthy for good from bucket 5.
        assert_eq!(
            run.recovery_s(incident(1, 2, 7), None),
            Recovery::After(3.0)
        );
        assert_eq!(
            run.recovery_s(incident(1, 6, 7), None),
            Recovery::After(0.0)
        );
        let never = measurements(vec![healthy(), storm()]);
        assert_eq!(never.recovery_s(incident(0, 0, 2), None), Recovery::Never);
        let calm = Incident {
            window: None,
            ..incident(0, 0, 2)
        };
        assert_eq!(never.recovery_s(calm, None), Recovery::NoIncident);
        // A looser rule forgives the storm's retries but not its failures...
        let loose = Incident {
            health: HealthRule {
                max_failed: 0.01,
                max_retries: 5.0,
                ..HealthRule::default()
            },
            ..incident(1, 2, 7)
        };
        assert_eq!(run.recovery_s(loose, None), Recovery::After(3.0));
        // ... and one that forgives both calls it healthy from the incident's end.
        let lax = Incident {
            health: HealthRule {
                max_failed: 0.9,
                max_retries: 5.0,
                ..HealthRule::default()
            },
            ..incident(1, 2, 7)
        };
        assert_eq!(run.recovery_s(lax, None), Recovery::After(0.0));
    }

    /// One unlucky failure among 50 operations is 2% of its bucket but 0.7% of the two
    /// buckets' 150: a two-bucket window calls the system healthy as soon as the storm ends.
    #[test]
    fn a_health_window_sums_buckets_so_noise_is_not_a_storm() {
        let mut unlucky = healthy();
        unlucky.first_attempts = 50;
        unlucky.attempts = 50;
        unlucky.succeeded = 49;
        unlucky.failed = 1;
        let run = measurements(vec![healthy(), storm(), unlucky, healthy(), healthy()]);
        let bucket_wide = incident(1, 1, 5);
        assert_eq!(run.recovery_s(bucket_wide, None), Recovery::After(2.0));
        let two_buckets = Incident {
            health: HealthRule {
                window: 2 * MICROS_PER_SECOND,
                ..HealthRule::default()
            },
            ..bucket_wide
        };
        assert_eq!(run.recovery_s(two_buckets, None), Recovery::After(1.0));
    }

    /// A crash in the last second: the buckets after it hold refused attempts that have not
    /// failed or been retried yet, so on their own they look healthy. Only whole windows count,
    /// and the one that holds the crash is not healthy: the run never recovered.
    #[test]
    fn a_window_cut_short_by_the_end_of_arrivals_does_not_count() {
        let silent = BucketCounts::default();
        let run = measurements(vec![healthy(), storm(), healthy(), storm(), silent]);
        let two_buckets = Incident {
            health: HealthRule {
                window: 2 * MICROS_PER_SECOND,
                ..HealthRule::default()
            },
            ..incident(0, 1, 5)
        };
        assert_eq!(run.recovery_s(two_buckets, None), Recovery::Never);
        // With less than a window left after the incident, what is left is the window.
        let late = Incident {
            health: HealthRule {
                window: 10 * MICROS_PER_SECOND,
                ..HealthRule::default()
            },
            ..incident(0, 2, 5)
        };
        assert_eq!(run.recovery_s(late, None), Recovery::Never);
        let calm_end = measurements(vec![storm(), healthy(), healthy()]);
        assert_eq!(
            calm_end.recovery_s(
                Incident {
                    health: late.health,
                    ..incident(0, 1, 3)
                },
                None
            ),
            Recovery::After(0.0)
        );
    }

    /// Recovery is measured on the health series, to its step, not to a bucket (issue 22).
    /// 10 ms steps: two operations fail in each step up to 2.37 s, one succeeds in each from then
    /// on (so that a window holding one failing step is 2% failed, unhealthy); the incident
    /// ended at 2 s, so with 1 s windows the first healthy one starts at 2.37 s and recovery
    /// is 0.37 s exactly. An incident that has not ended by the end of arrivals has no
    /// recovery: never.
    #[test]
    fn recovery_is_measured_to_a_step_of_the_health_series() {
        let mut run = measurements(vec![healthy(); 5]);
        run.health_step = 10 * crate::base::time::MICROS_PER_MS;
        run.health = (0..500)
            .map(|step| HealthCounts {
                succeeded: u64::from(step >= 237),
                failed: 2 * u64::from(step < 237),
                first_attempts: 1,
                retries: 0,
            })
            .collect();
        assert_eq!(
            run.recovery_s(incident(1, 2, 5), None),
            Recovery::After(0.37)
        );
        // From an end after the storm, recovery is immediate.
        assert_eq!(
            run.recovery_s(incident(1, 3, 5), None),
            Recovery::After(0.0)
        );
        let endless = Incident {
            window: Some((MICROS_PER_SECOND, None)),
            ..incident(1, 2, 5)
        };
        assert_eq!(run.recovery_s(endless, None), Recovery::Never);
        assert_eq!(run.recovery_s(incident(1, 5, 5), None), Recovery::Never);
    }

    #[test]
    fn peaks_goodput_and_failures_are_split_at_the_incident() {
        let mut spike = storm();
        spike.attempts = 900;
        let run = measurements(vec![healthy(), storm(), storm(), spike, healthy()]);
        let summary = run.summary(incident(1, 3, 5));
        assert_eq!(summary.peak_incident_rps, 400.0);
        assert_eq!(summary.peak_after_rps, 900.0);
        assert_eq!(summary.incident_goodput_rps, 20.0);
        assert_eq!(summary.incident_failed, 160);
        assert_eq!(summary.goodput_rps, 260.0 / 5.0);
        // Without an incident, nothing is "during" and everything is "after".
        let none = run.summary(incident(0, 0, 5));
        assert_eq!((none.peak_incident_rps, none.peak_after_rps), (0.0, 900.0));
        assert_eq!(none.incident_failed, 0);
    }

    #[test]
    fn every_summary_metric_has_a_value_and_one_entry() {
        let summary = measurements(vec![healthy()]).summary(incident(0, 0, 1));
        for metric in METRICS {
            assert!(summary.metric(metric.name).is_some(), "{}", metric.name);
            assert_eq!(
                METRICS.iter().filter(|m| m.name == metric.name).count(),
                1,
                "{}",
                metric.name
            );
        }
        assert_eq!(summary.metric("p99_ms").map(f64::is_nan), Some(true));
        assert_eq!(summary.metric("nonsense"), None);
        let count = metric("operations").unwrap();
        assert_eq!(format_metric(count, 12.0), "12");
        let number = metric("recovery_s").unwrap();
        assert_eq!(format_metric(number, f64::INFINITY), "never");
        assert_eq!(format_metric(number, 1.5), "1.500000");
    }

    #[test]
    fn health_thresholds() {
        let rule = HealthRule::default();
        assert!(rule.is_healthy(&health_of(&healthy())));
        assert!(!rule.is_healthy(&health_of(&storm())));
        let one_percent_failed = BucketCounts {
            succeeded: 99,
            failed: 1,
            ..healthy()
        };
        assert!(rule.is_healthy(&health_of(&one_percent_failed)));
        let too_many_retries = BucketCounts {
            retries: 11,
            ..healthy()
        };
        assert!(!rule.is_healthy(&health_of(&too_many_retries)));
    }
}
