//! What a sweep's recommendation explains itself with, computed from the points' means and
//! rows: the Pareto front, each grid key's effect, the grid's edges, and the points that give
//! identical results.
//!
//! Everything here is a pure function of numbers and of the grid, so that each has a closed
//! form to test, and the same rows give the same answer in any process (a sharded sweep merged
//! writes the same text as one run).

use std::hash::{DefaultHasher, Hash, Hasher};

use super::{ResultRow, SweepSpec, number};
use crate::scenario::{Scenario, switch};
use crate::vocabulary::metric::Better;

/// `value` oriented so that lower is always better; undefined (NaN) is worse than anything,
/// as bad as a recovery that never came.
fn oriented(value: f64, better: Better) -> f64 {
    match better {
        _ if value.is_nan() => f64::INFINITY,
        Better::Higher => -value,
        Better::Lower | Better::Neither => value,
    }
}

/// Whether `a` dominates `b`: no worse in every metric and better in one (both oriented).
fn dominates(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(a, b)| a <= b) && a.iter().zip(b).any(|(a, b)| a < b)
}

/// The Pareto front of `candidates`: those that no other candidate dominates. `value(point,
/// metric)` is the point's mean of the `metric`-th of `directions`. Points with equal values
/// do not dominate one another, so all of them are on the front or none is.
///
/// Returned in lexicographic order of the oriented values (the first metric's best first),
/// ties by point. That order is also how it is found: a point can only be dominated by one
/// before it, and if by any, then by one already on the front (dominance is transitive), so
/// each candidate is compared with the front's distinct values alone, and a candidate equal
/// to the one before it (next to it in that order) shares its verdict without a comparison:
/// a grid of a million identical points costs a sort.
pub fn pareto_front(
    candidates: &[usize],
    directions: &[Better],
    value: impl Fn(usize, usize) -> f64,
) -> Vec<usize> {
    let mut keyed: Vec<(Vec<f64>, usize)> = candidates
        .iter()
        .map(|&point| {
            let values = directions
                .iter()
                .enumerate()
                .map(|(metric, &better)| oriented(value(point, metric), better))
                .collect();
            (values, point)
        })
        .collect();
    keyed.sort_by(|(a, pa), (b, pb)| {
        a.iter()
            .zip(b)
            .map(|(a, b)| a.total_cmp(b))
            .find(|order| order.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(pa.cmp(pb))
    });
    // The front's distinct values, and its points.
    let mut distinct: Vec<Vec<f64>> = Vec::new();
    let mut front = Vec::new();
    let mut previous: Option<(Vec<f64>, bool)> = None;
    for (values, point) in keyed {
        let on_front = match &previous {
            Some((last, on_front)) if *last == values => *on_front,
            _ => {
                let on_front = !distinct.iter().any(|best| dominates(best, &values));
                if on_front {
                    distinct.push(values.clone());
                }
                on_front
            }
        };
        if on_front {
            front.push(point);
        }
        previous = Some((values, on_front));
    }
    front
}

/// Groups of two or more points whose rows are identical: the same seeds, and every metric
/// written the same for each. `rows` are ordered by point and seed. Groups are in order of
/// their first point, each in point order.
///
/// Each point's rows are hashed, the points sorted by hash, and only points of one hash
/// compared, so a million points cost a sort, not a million comparisons each.
pub fn identical_points(rows: &[ResultRow]) -> Vec<Vec<usize>> {
    let points: Vec<&[ResultRow]> = rows.chunk_by(|a, b| a.point == b.point).collect();
    let same = |a: &[ResultRow], b: &[ResultRow]| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(a, b)| a.seed_index == b.seed_index && a.metrics == b.metrics)
    };
    let mut hashed: Vec<(u64, usize)> = points
        .iter()
        .enumerate()
        .map(|(index, rows)| {
            let mut hasher = DefaultHasher::new();
            for row in *rows {
                row.seed_index.hash(&mut hasher);
                row.metrics.hash(&mut hasher);
            }
            (hasher.finish(), index)
        })
        .collect();
    hashed.sort_unstable();
    let mut groups = Vec::new();
    for collided in hashed.chunk_by(|a, b| a.0 == b.0).filter(|c| c.len() > 1) {
        let mut rest: Vec<usize> = collided.iter().map(|&(_, index)| index).collect();
        while let Some(&first) = rest.first() {
            let (group, other): (Vec<usize>, Vec<usize>) = rest
                .iter()
                .partition(|&&index| same(points[index], points[first]));
            if group.len() > 1 {
                groups.push(group.iter().map(|&index| points[index][0].point).collect());
            }
            rest = other;
        }
    }
    groups.sort();
    groups
}

/// The points with identical results, grouped, and each point's group, so that asking
/// whether two points agree costs nothing however large their group.
#[derive(Debug, Clone)]
pub struct Identical {
    /// The groups, as [`identical_points`] lists them.
    pub groups: Vec<Vec<usize>>,
    group_of: Vec<Option<usize>>,
}

impl Identical {
    /// The groups of `points` points from their `rows` (ordered by point and seed).
    pub fn of(rows: &[ResultRow], points: usize) -> Identical {
        let groups = identical_points(rows);
        let mut group_of = vec![None; points];
        for (index, group) in groups.iter().enumerate() {
            for &point in group {
                group_of[point] = Some(index);
            }
        }
        Identical { groups, group_of }
    }

    /// Whether `a` and `b` give identical results (a point does as itself).
    pub fn same(&self, a: usize, b: usize) -> bool {
        a == b || (self.group_of[a].is_some() && self.group_of[a] == self.group_of[b])
    }

    /// The group of `point`, itself included, in order; `None` if no other point gives its
    /// results.
    pub fn group(&self, point: usize) -> Option<&[usize]> {
        self.group_of[point].map(|index| self.groups[index].as_slice())
    }
}

/// How much one grid key moves a metric: over every combination of the other keys' values,
/// the range (largest minus smallest mean) across this key's values, averaged. Combinations
/// with a mean that is undefined or infinite (a recovery that never came) have no range and are
/// left out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Effect {
    /// The mean range; NaN if no combination had a range.
    pub mean_range: f64,
    /// Combinations that had one.
    pub combinations: usize,
    /// Combinations in all.
    pub of: usize,
}

/// The [`Effect`] of grid key `axis` on a metric whose mean at each point is `mean(point)`.
/// A key of one value has none: every combination's range is 0.
pub fn effect(spec: &SweepSpec, axis: usize, mean: impl Fn(usize) -> f64) -> Effect {
    let values = spec.axes[axis].values.len();
    // Points vary fastest in the last key: this key's stride is the product of the later keys'
    // sizes, and a point's other keys are its index without this key's digit.
    let stride: usize = spec.axes[axis + 1..]
        .iter()
        .map(|axis| axis.values.len())
        .product();
    let of = spec.point_count() / values;
    // (smallest, largest, all finite) per combination.
    let mut ranges = vec![(f64::INFINITY, f64::NEG_INFINITY, true); of];
    for point in 0..spec.point_count() {
        let combination = point / (stride * values) * stride + point % stride;
        let value = mean(point);
        let range = &mut ranges[combination];
        range.0 = range.0.min(value);
        range.1 = range.1.max(value);
        range.2 &= value.is_finite();
    }
    let finite: Vec<f64> = ranges
        .iter()
        .filter(|range| range.2)
        .map(|range| range.1 - range.0)
        .collect();
    Effect {
        mean_range: if finite.is_empty() {
            f64::NAN
        } else {
            finite.iter().sum::<f64>() / finite.len() as f64
        },
        combinations: finite.len(),
        of,
    }
}

/// Which end of its grid key's values a point sits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// The smallest value tried.
    Smallest,
    /// The largest value tried.
    Largest,
}

/// For each numeric grid key (numbers or durations) of two values or more, whether `point`'s
/// value is the smallest or the largest tried: the best may lie beyond. Not when the value is
/// a smallest 0 (no setting goes below zero), nor when a point of `identical` (the points with
/// the same results as `point`, itself included) has another value of the key: there the key
/// changes nothing, so going further would not either. Nor when the value switches its
/// feature off (`disables(axis, value)`: `off`, a limit of a million): nothing lies beyond it;
/// an `off` among a key's numbers counts as its end where the feature does least
/// ([`switch::off_as_number`]), so the number next to it is no edge either.
pub fn edges(
    spec: &SweepSpec,
    point: usize,
    identical: &[usize],
    disables: impl Fn(usize, &str) -> bool,
) -> Vec<(usize, Edge)> {
    let values = spec.point_values(point);
    spec.axes
        .iter()
        .enumerate()
        .filter_map(|(index, axis)| {
            if disables(index, values[index]) {
                return None;
            }
            let numbers: Vec<f64> = axis
                .values
                .iter()
                .map(|value| {
                    if switch::off_at(&axis.key, value) {
                        Some(switch::off_as_number(&axis.key))
                    } else {
                        number(value)
                    }
                })
                .collect::<Option<_>>()?;
            let at = axis
                .values
                .iter()
                .position(|value| value == values[index])?;
            let smallest = numbers.iter().copied().fold(f64::INFINITY, f64::min);
            let largest = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let inert = identical
                .iter()
                .any(|&other| spec.point_values(other)[index] != values[index]);
            if smallest == largest || inert {
                None
            } else if numbers[at] == largest {
                Some((index, Edge::Largest))
            } else if numbers[at] == smallest && smallest != 0.0 {
                Some((index, Edge::Smallest))
            } else {
                None
            }
        })
        .collect()
}

/// Why a grid key is a model assumption, not a setting to tune ([`assumption`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assumption {
    /// A key of the scenario's `[uncertain]` table, which the grid sets instead of drawing.
    Uncertain,
    /// A `scale_by`: a factor on a measured distribution (a service time, a latency), which
    /// says how far the measurement may be off.
    ScaleBy,
    /// The load the users offer (`clients.count`, `clients.rate`, a `clients.load` step): the
    /// world's demand, which no team sets.
    Load,
}

/// Whether grid key `key` is a model assumption, and which kind: one of the `[uncertain]` keys
/// the sweep sets itself (`set_uncertain`, [`UncertainDraws::not_drawn`], the exact key as
/// written), a `scale_by`, or the clients' load. An edge of such a key is no setting to try
/// further: it is what the world may be, not what the user chooses. Any other key (a policy's,
/// a tier's retries, a limit, a workers' count) is taken as one to tune.
///
/// [`UncertainDraws::not_drawn`]: crate::scenario::uncertain::UncertainDraws::not_drawn
pub fn assumption(key: &str, set_uncertain: &[String]) -> Option<Assumption> {
    if set_uncertain.iter().any(|uncertain| uncertain == key) {
        Some(Assumption::Uncertain)
    } else if key.rsplit('.').next() == Some("scale_by") {
        Some(Assumption::ScaleBy)
    } else if key == "clients.count"
        || key == "clients.rate"
        || key.starts_with("clients.load.")
        || key.contains("+clients.load.")
    {
        Some(Assumption::Load)
    } else {
        None
    }
}

/// Whether `value` of grid key `axis` switches its feature off at a point whose scenario is
/// `scenario`: `off` where a key takes it, or a number that does nothing there
/// ([`switch::disables`]: a limit of a million, an ejection percent that ejects no instance).
pub fn disables(spec: &SweepSpec, scenario: Option<&Scenario>, axis: usize, value: &str) -> bool {
    let key = &spec.axes[axis].key;
    switch::off_at(key, value)
        || number(value).is_some_and(|number| switch::disables(key, number, scenario))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Axis;

    fn spec(axes: &[&str]) -> SweepSpec {
        SweepSpec {
            scenario_path: String::new(),
            scenario_text: String::new(),
            fixed: vec![],
            axes: axes
                .iter()
                .map(|axis| axis.parse::<Axis>().unwrap())
                .collect(),
            seeds: 1,
            policy: String::new(),
            requirements: vec![],
            minimize: None,
            maximize: None,
            configs: Default::default(),
        }
    }

    /// Two metrics, lower and higher better: a point worse in both than another is off the
    /// front, a trade-off stays on it, equal points stay together, and an undefined value counts
    /// as the worst. The front comes back best first in the first metric.
    #[test]
    fn the_front_keeps_every_trade_off_and_drops_the_dominated() {
        // (latency, success) per point: lower latency, higher success are better.
        let values = [
            (100.0, 0.90),   // 0: fastest
            (200.0, 0.95),   // 1: a trade-off
            (250.0, 0.94),   // 2: dominated by 1
            (300.0, 0.99),   // 3: most successful
            (200.0, 0.95),   // 4: equal to 1
            (f64::NAN, 1.0), // 5: undefined latency, the worst, yet nobody beats its success
            (400.0, 0.99),   // 6: dominated by 3 (same success, slower)
        ];
        let value = |point: usize, metric: usize| {
            let (latency, success) = values[point];
            if metric == 0 { latency } else { success }
        };
        let all: Vec<usize> = (0..values.len()).collect();
        assert_eq!(
            pareto_front(&all, &[Better::Lower, Better::Higher], value),
            [0, 1, 4, 3, 5]
        );
        // Among some points only.
        assert_eq!(
            pareto_front(&[2, 6], &[Better::Lower, Better::Higher], value),
            [2, 6]
        );
        // One metric: its best, with its equals.
        assert_eq!(pareto_front(&[1, 2, 4], &[Better::Lower], value), [1, 4]);
    }

    fn row(point: usize, seed_index: usize, metrics: &[&str]) -> ResultRow {
        ResultRow {
            point,
            seed_index,
            metrics: metrics.iter().map(|metric| metric.to_string()).collect(),
        }
    }

    /// Points are identical only when every seed's every metric is: equal on one seed and not
    /// on another is not enough, and groups are listed by their first point.
    #[test]
    fn identical_points_agree_on_every_seed() {
        let rows = [
            row(0, 0, &["1", "a"]),
            row(0, 1, &["2", "b"]),
            row(1, 0, &["1", "a"]),
            row(1, 1, &["2", "c"]), // differs from 0 on the second seed
            row(2, 0, &["1", "a"]),
            row(2, 1, &["2", "b"]), // as 0
            row(3, 0, &["5", "x"]),
            row(3, 1, &["5", "y"]),
            row(4, 0, &["5", "x"]),
            row(4, 1, &["5", "y"]), // as 3
            row(5, 0, &["1", "a"]),
            row(5, 1, &["2", "b"]), // as 0
        ];
        assert_eq!(identical_points(&rows), [vec![0, 2, 5], vec![3, 4]]);
        assert!(identical_points(&rows[..4]).is_empty());
    }

    /// On a 2 x 3 grid with mean = 10 a + b (a the first key's index, b the second's), the
    /// first key moves the mean by exactly 10 in every combination and the second by 2 (0 to
    /// 2); a mean that never came leaves its combination out.
    #[test]
    fn a_keys_effect_is_its_range_averaged_over_the_other_keys() {
        let grid = spec(&["a=1,2", "b=x,y,z"]);
        let mean = |point: usize| {
            let (a, b) = (point / 3, point % 3);
            10.0 * a as f64 + b as f64
        };
        assert_eq!(
            effect(&grid, 0, mean),
            Effect {
                mean_range: 10.0,
                combinations: 3,
                of: 3
            }
        );
        assert_eq!(
            effect(&grid, 1, mean),
            Effect {
                mean_range: 2.0,
                combinations: 2,
                of: 2
            }
        );
        // An interaction: b moves the mean by 1 when a = 1 and by 5 when a = 2: 3 on average.
        let interacting = |point: usize| [0.0, 1.0, 0.5, 0.0, 5.0, 2.0][point];
        assert_eq!(effect(&grid, 1, interacting).mean_range, 3.0);
        // Point 4 never recovered: combination b = y has no range for a; a = 2 none for b.
        let never = |point: usize| {
            if point == 4 {
                f64::INFINITY
            } else {
                mean(point)
            }
        };
        assert_eq!(
            effect(&grid, 0, never),
            Effect {
                mean_range: 10.0,
                combinations: 2,
                of: 3
            }
        );
        assert_eq!(
            effect(&grid, 1, never),
            Effect {
                mean_range: 2.0,
                combinations: 1,
                of: 2
            }
        );
        let only_never = |_| f64::INFINITY;
        assert!(effect(&grid, 1, only_never).mean_range.is_nan());
    }

    /// The edge of a numeric key is its smallest or largest value, whatever order the grid
    /// lists them in; a key of text values has none, a smallest 0 is no warning, and a key that
    /// changes nothing around the point (an identical point has another value) neither.
    #[test]
    fn edges_are_the_smallest_and_largest_values_of_numeric_keys() {
        let grid = spec(&[
            "policy.base=200ms,50ms,1s",
            "policy.max_attempts=0,3",
            "policy.jitter=none,full",
        ]);
        // Point 0: base 200ms (inside), max_attempts 0 (a smallest 0), jitter none.
        let never = |_: usize, _: &str| false;
        assert_eq!(edges(&grid, 0, &[0], never), []);
        // Point 4 + 2 + 1 = 7: base 50ms (smallest), max_attempts 3 (largest), full.
        assert_eq!(
            edges(&grid, 7, &[7], never),
            [(0, Edge::Smallest), (1, Edge::Largest)]
        );
        // Point 10: base 1s (largest), max_attempts 3 (largest), none; identical to point 8
        // (base 1s, max_attempts 0), so max_attempts changes nothing there.
        assert_eq!(grid.point_values(8), ["1s", "0", "none"]);
        assert_eq!(edges(&grid, 10, &[8, 10], never), [(0, Edge::Largest)]);
    }

    /// A value that switches its feature off is no edge: `off`, a rate limit of a million (the
    /// stand-in for none), or a `max_ejection_percent` that ejects nothing: with 4 instances an
    /// ejection needs 25%, so 20% ejects none (20 x 4 < 100) and 30% one. `off` among a key's
    /// values stands beyond the largest (no budget), so a budget's largest number, 20, is no
    /// edge, while its smallest, 10, is; for `max_ejection_percent` it stands at 0.
    #[test]
    fn a_value_that_switches_its_feature_off_is_no_edge() {
        let grid = spec(&[
            "service.api.rate_limit.rate=500,1000,1000000",
            "policy.controls.retry-budget.percent=off,10,20",
            "service.api.fleet.outlier_detection.max_ejection_percent=off,20,30",
        ]);
        let scenario = crate::import::load_str(
            "name = \"s\"\nduration = \"1s\"\n[clients]\ncount = 10\nrate = 1.0\n[[service]]\nname = \"api\"\nworkers = 1\nservice_time = \"1ms\"\nfleet = { instances = 4, outlier_detection = {} }\n",
            "test.toml",
            &[],
        )
        .unwrap();
        let disabled = |axis: usize, value: &str| disables(&grid, Some(&scenario), axis, value);
        // Point (2, 0, 1): a million, off, 20%: each switches its feature off.
        let point = 2 * 9 + 1;
        assert_eq!(grid.point_values(point), ["1000000", "off", "20"]);
        assert_eq!(edges(&grid, point, &[point], disabled), []);
        // Point (1, 2, 2): 1000 is inside, 20 next to off, 30% the largest.
        let point = 9 + 2 * 3 + 2;
        assert_eq!(grid.point_values(point), ["1000", "20", "30"]);
        assert_eq!(
            edges(&grid, point, &[point], disabled),
            [(2, Edge::Largest)]
        );
        // Point (0, 1, 2): 500 the smallest limit, 10 the smallest budget.
        let point = 3 + 2;
        assert_eq!(grid.point_values(point), ["500", "10", "30"]);
        assert_eq!(
            edges(&grid, point, &[point], disabled),
            [(0, Edge::Smallest), (1, Edge::Smallest), (2, Edge::Largest)]
        );
        // Without the scenario only a percent of 0 is known to eject nothing.
        assert!(!disables(&grid, None, 2, "20"));
        assert!(disables(&grid, None, 2, "0"));
    }
}
