//! The capacity curve: how many workers the upstream has at each moment.
//!
//! The scenario gives the fraction of workers available as points `{ at, factor }`, linear in
//! between; a time given twice makes a step (an outage that starts at once). The simulation
//! needs whole workers, so the curve is turned into a step function: `available(t) =
//! floor(workers * factor(t))`, and [`CapacityCurve::next_change`] finds the exact microsecond
//! at which that integer next changes, so the engine schedules one event per change and never
//! samples.

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::base::time::{Duration, Micros};
use crate::base::values::Factor;

/// `{ at = "20s", factor = 0.0 }`: a point of a piecewise-linear curve over time, as a scenario
/// writes it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityPoint {
    /// When.
    pub at: Spanned<Duration>,
    /// Fraction of `workers` available, 0 to 100.
    pub factor: Factor,
}

/// A tolerance for `workers * factor`, so that 0.29 * 100 counts as 29 workers, not 28.
const EPSILON: f64 = 1e-9;

/// `floor(workers * factor(t))` over time.
#[derive(Debug, Clone)]
pub struct CapacityCurve {
    workers: f64,
    /// (time, factor), sorted; empty means factor 1 forever.
    points: Vec<(Micros, f64)>,
}

impl CapacityCurve {
    /// The curve for `workers` workers scaled by `points` (sorted, as validation ensures).
    pub fn new(workers: u64, points: &[CapacityPoint]) -> CapacityCurve {
        CapacityCurve {
            workers: workers as f64,
            points: points
                .iter()
                .map(|point| (point.at.get_ref().micros(), point.factor.get()))
                .collect(),
        }
    }

    /// The factor at `t`. At a step (a time given twice) the later point holds from `t` on.
    pub fn factor(&self, t: Micros) -> f64 {
        let Some(&(first_at, first_factor)) = self.points.first() else {
            return 1.0;
        };
        if t < first_at {
            return first_factor;
        }
        // The last point at or before t.
        let index = self.points.partition_point(|&(at, _)| at <= t) - 1;
        let (at, factor) = self.points[index];
        match self.points.get(index + 1) {
            Some(&(next_at, next_factor)) if next_at > at => {
                factor + (next_factor - factor) * (t - at) as f64 / (next_at - at) as f64
            }
            _ => factor,
        }
    }

    /// The factor before anything happens: the first point's, or 1.
    pub fn initial_factor(&self) -> f64 {
        self.points.first().map_or(1.0, |&(_, factor)| factor)
    }

    /// The highest factor the curve reaches (1 without points): a load curve's peak.
    pub fn peak_factor(&self) -> f64 {
        self.points
            .iter()
            .map(|&(_, factor)| factor)
            .reduce(f64::max)
            .unwrap_or(1.0)
    }

    /// The time after `t` by which the factor, integrated from `t`, reaches `area` (in factor
    /// times microseconds): the inverse of the curve's integral, for arrivals spaced evenly in
    /// the load rather than in time. `None` if the curve never gathers that much (it ends at
    /// zero).
    pub fn time_after_area(&self, t: f64, area: f64) -> Option<f64> {
        let mut start = t;
        let mut left = area;
        // The segments from `t` on: (end, factor at start, factor at end), linear in between;
        // before the first point and after the last the factor is constant.
        let index = self.points.partition_point(|&(at, _)| at as f64 <= t);
        for &(end, _) in &self.points[index..] {
            let end = end as f64;
            let (from, to) = (self.factor_at(start), self.factor_before(end));
            let whole = (from + to) / 2.0 * (end - start);
            if whole >= left && whole > 0.0 {
                return Some(start + Self::solve(from, (to - from) / (end - start), left));
            }
            left -= whole;
            start = end;
        }
        let last = self.points.last().map_or(1.0, |&(_, factor)| factor);
        (last > 0.0).then(|| start + left / last)
    }

    /// The factor integrated from time zero to `end` (in factor times microseconds): a load
    /// curve's operations, over the rate.
    pub fn integral(&self, end: f64) -> f64 {
        let mut total = 0.0;
        let mut start = 0.0;
        for &(at, _) in self.points.iter().filter(|&&(at, _)| at > 0) {
            let at = (at as f64).min(end);
            total += (self.factor_at(start) + self.factor_before(at)) / 2.0 * (at - start);
            start = at;
            if start >= end {
                return total;
            }
        }
        total + self.factor_at(start) * (end - start)
    }

    /// The factor at `t`, exact at fractional microseconds (the later point at a step).
    fn factor_at(&self, t: f64) -> f64 {
        self.interpolate(t, self.points.partition_point(|&(at, _)| at as f64 <= t))
    }

    /// The factor just before `t`, where a step at `t` has not yet happened.
    fn factor_before(&self, t: f64) -> f64 {
        self.interpolate(t, self.points.partition_point(|&(at, _)| (at as f64) < t))
    }

    /// The factor at `t` given the number of points at or before it.
    fn interpolate(&self, t: f64, after: usize) -> f64 {
        match (
            after.checked_sub(1).map(|i| self.points[i]),
            self.points.get(after),
        ) {
            (None, Some(&(_, factor))) => factor,
            (Some((_, factor)), None) => factor,
            (Some((at, factor)), Some(&(next_at, next_factor))) => {
                factor + (next_factor - factor) * (t - at as f64) / (next_at - at) as f64
            }
            (None, None) => 1.0,
        }
    }

    /// The `x >= 0` at which `from * x + slope * x^2 / 2` reaches `area`.
    fn solve(from: f64, slope: f64, area: f64) -> f64 {
        if slope.abs() < 1e-15 {
            area / from
        } else {
            // The root that is the stable form of (-from + sqrt(from^2 + 2 slope area)) / slope.
            2.0 * area / (from + (from * from + 2.0 * slope * area).max(0.0).sqrt())
        }
    }

    /// The incidents: time ranges in which the factor is away from its initial value (an
    /// outage, a load spike). Each starts at the point from which the curve leaves the initial
    /// value and ends at the point where it is back; `None` for one that never ends.
    pub fn incidents(&self) -> Vec<(Micros, Option<Micros>)> {
        let initial = self.initial_factor();
        let mut incidents = Vec::new();
        let mut start: Option<Micros> = None;
        let mut previous_at = 0;
        for &(at, factor) in &self.points {
            match (factor != initial, start) {
                (true, None) => start = Some(previous_at),
                (false, Some(began)) => {
                    incidents.push((began, Some(at)));
                    start = None;
                }
                _ => {}
            }
            previous_at = at;
        }
        if let Some(began) = start {
            incidents.push((began, None));
        }
        incidents
    }

    /// Workers available at `t`.
    pub fn available(&self, t: Micros) -> u64 {
        (self.workers * self.factor(t) + EPSILON).floor().max(0.0) as u64
    }

    /// The first time after `t` at which [`CapacityCurve::available`] differs from its value
    /// at `t`, if there is one.
    pub fn next_change(&self, t: Micros) -> Option<Micros> {
        let now = self.available(t);
        let mut start = t;
        for &(at, _) in self.points.iter().filter(|&&(at, _)| at > t) {
            // Between `start` and `at` the factor is linear, so availability is monotone there
            // and the first change can be found by bisection. At `at` itself a step may jump.
            if self.available(at - 1) != now {
                return Some(self.first_change_in(start, at - 1, now));
            }
            if self.available(at) != now {
                return Some(at);
            }
            start = at;
        }
        None
    }

    /// The first time in `(start, end]` whose availability is not `now`, given that
    /// availability is monotone on `[start, end]`, equal to `now` at `start` and not at `end`.
    fn first_change_in(&self, mut start: Micros, mut end: Micros, now: u64) -> Micros {
        while end - start > 1 {
            let middle = start + (end - start) / 2;
            if self.available(middle) == now {
                start = middle;
            } else {
                end = middle;
            }
        }
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::Duration;
    use crate::base::values::Factor;
    use toml::Spanned;

    fn curve(workers: u64, points: &[(u64, f64)]) -> CapacityCurve {
        let points: Vec<CapacityPoint> = points
            .iter()
            .map(|&(ms, factor)| CapacityPoint {
                at: Spanned::new(0..0, Duration::from_ms(ms)),
                factor: Factor(factor),
            })
            .collect();
        CapacityCurve::new(workers, &points)
    }

    /// Every change found by `next_change`, by brute force over each microsecond.
    fn brute_force_changes(curve: &CapacityCurve, end: Micros) -> Vec<(Micros, u64)> {
        let mut changes = vec![];
        let mut previous = curve.available(0);
        for t in 1..=end {
            let now = curve.available(t);
            if now != previous {
                changes.push((t, now));
                previous = now;
            }
        }
        changes
    }

    fn scheduled_changes(curve: &CapacityCurve, end: Micros) -> Vec<(Micros, u64)> {
        let mut changes = vec![];
        let mut t = 0;
        while let Some(next) = curve.next_change(t) {
            if next > end {
                break;
            }
            assert!(next > t, "next_change must move forward");
            changes.push((next, curve.available(next)));
            t = next;
        }
        changes
    }

    #[test]
    fn a_flat_curve_never_changes() {
        let flat = curve(10, &[]);
        assert_eq!(flat.available(123), 10);
        assert_eq!(flat.next_change(0), None);
    }

    #[test]
    fn steps_and_ramps_change_exactly_where_the_integer_changes() {
        // Outage at 20 ms (a step to zero), linear recovery from 30 ms to 40 ms.
        let outage = curve(7, &[(0, 1.0), (20, 1.0), (20, 0.0), (30, 0.0), (40, 1.0)]);
        assert_eq!(outage.available(19_999), 7);
        assert_eq!(outage.available(20_000), 0);
        assert_eq!(outage.available(40_000), 7);
        let end = 50_000;
        assert_eq!(
            scheduled_changes(&outage, end),
            brute_force_changes(&outage, end)
        );
        // A slow sag and an awkward factor.
        let sag = curve(100, &[(0, 1.0), (10, 0.29), (17, 0.9), (25, 0.9)]);
        assert_eq!(sag.available(10_000), 29);
        assert_eq!(
            scheduled_changes(&sag, 30_000),
            brute_force_changes(&sag, 30_000)
        );
    }

    #[test]
    fn the_incident_ends_when_capacity_is_back() {
        let outage = curve(10, &[(0, 1.0), (20, 1.0), (20, 0.0), (30, 0.0), (40, 1.0)]);
        assert_eq!(outage.incidents(), [(20_000, Some(40_000))]);
        let never_back = curve(10, &[(0, 1.0), (20, 0.5)]);
        assert_eq!(never_back.incidents(), [(0, None)]);
        let spike = curve(1, &[(10, 1.0), (10, 4.0), (12, 4.0), (12, 1.0)]);
        assert_eq!(spike.incidents(), [(10_000, Some(12_000))]);
        assert_eq!(spike.peak_factor(), 4.0);
        assert_eq!(curve(10, &[]).peak_factor(), 1.0);
    }

    #[test]
    fn incidents_run_from_leaving_the_initial_factor_to_coming_back() {
        let sag = curve(
            10,
            &[
                (0, 1.0),
                (10, 1.0),
                (30, 0.5),
                (50, 1.0),
                (60, 1.0),
                (60, 0.0),
            ],
        );
        assert_eq!(sag.incidents(), [(10_000, Some(50_000)), (60_000, None)]);
        assert!(curve(10, &[]).incidents().is_empty());
    }

    #[test]
    fn before_the_first_point_its_factor_holds() {
        let late = curve(10, &[(5, 0.5), (10, 1.0)]);
        assert_eq!(late.available(0), 5);
        assert_eq!(late.initial_factor(), 0.5);
        assert_eq!(
            scheduled_changes(&late, 20_000),
            brute_force_changes(&late, 20_000)
        );
    }
}
