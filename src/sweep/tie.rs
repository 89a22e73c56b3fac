//! Which points the seeds cannot tell from the best, and how to choose among them.
//!
//! Every point of a sweep runs on the same seeds, with the same `[uncertain]` draws (common
//! random numbers), so seed `s` brings the same luck to every point: two points are best
//! compared seed by seed. The 95% Student's t-interval of the per-seed differences (a paired
//! interval) is much narrower than the two points' own intervals whenever the luck moves both
//! alike, and it is the one that says whether the seeds can tell them apart. A point is *tied*
//! with the best when the paired interval of its difference from the best contains 0.
//!
//! Ranking tied points by their means would pick noise: a recommendation that prefers a point
//! for a difference the seeds cannot confirm. Among tied points the recommendation chooses by
//! what else it knows instead ([`choose`]): the requirements' metrics, each judged the same way,
//! then the fewest grid keys changed from the scenario as it is (the smallest change to make),
//! and it says how many seeds would separate them ([`Difference::seeds_to_separate`]).

use super::ResultRow;
use super::interval::t_quantile;
use crate::base::stats;
use crate::vocabulary::metric::{Better, parse_metric};

/// The most seeds [`Difference::seeds_to_separate`] looks for.
pub const MAX_SEEDS: usize = 100_000;

/// One point's values minus another's, seed by seed: their mean, the half width of their 95%
/// t-interval and their standard deviation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    /// The mean difference.
    pub mean: f64,
    /// The half width of its 95% Student's t-interval.
    pub half_width: f64,
    /// The differences' sample standard deviation.
    pub sd: f64,
}

impl Difference {
    /// `of - from`, seed by seed; `None` without two seeds or with a value that is not finite
    /// (undefined, or a recovery that never came), whose difference has no interval.
    pub fn paired(of: &[f64], from: &[f64]) -> Option<Difference> {
        let finite = |values: &[f64]| values.iter().all(|value| value.is_finite());
        if of.len() != from.len() || of.len() < 2 || !finite(of) || !finite(from) {
            return None;
        }
        let differences: Vec<f64> = of.iter().zip(from).map(|(a, b)| a - b).collect();
        let (mean, standard_error) = stats::mean_and_standard_error(&differences);
        let seeds = differences.len();
        Some(Difference {
            mean,
            half_width: t_quantile(seeds - 1) * standard_error,
            sd: standard_error * (seeds as f64).sqrt(),
        })
    }

    /// Whether the 95% interval contains 0: the seeds cannot tell the two points apart.
    pub fn contains_zero(&self) -> bool {
        self.mean.abs() <= self.half_width
    }

    /// The fewest seeds `n` whose 95% interval, `t(0.975; n - 1) x sd / sqrt(n)` either side,
    /// would exclude 0 if the mean difference and the spread stayed as measured; `None` for a
    /// mean difference of 0 (no number of seeds separates it) or beyond [`MAX_SEEDS`]. It is
    /// `(z x sd / mean)^2` for many seeds, with z = 1.96, and more for a few, where t is larger.
    pub fn seeds_to_separate(&self) -> Option<usize> {
        if self.mean == 0.0 {
            return None;
        }
        (2..=MAX_SEEDS).find(|&seeds| {
            t_quantile(seeds - 1) * self.sd / (seeds as f64).sqrt() < self.mean.abs()
        })
    }
}

/// The `candidates` the seeds cannot tell from `best` on a metric whose per-seed values at a
/// point are `values(point)`: `best` itself, then every other whose paired difference from it
/// ([`Difference::paired`]) contains 0, in the candidates' order, each with that difference.
/// A point without a paired difference (a value not finite) is tied only when its values are
/// `best`'s, seed for seed.
pub fn tied(
    best: usize,
    candidates: &[usize],
    values: impl Fn(usize) -> Vec<f64>,
) -> Vec<(usize, Option<Difference>)> {
    let of_best = values(best);
    candidates
        .iter()
        .filter_map(|&point| {
            if point == best {
                return Some((point, None));
            }
            let of_point = values(point);
            match Difference::paired(&of_point, &of_best) {
                Some(difference) => difference
                    .contains_zero()
                    .then_some((point, Some(difference))),
                None => {
                    let same = of_point
                        .iter()
                        .zip(&of_best)
                        .all(|(a, b)| a == b || (a.is_nan() && b.is_nan()));
                    same.then_some((point, None))
                }
            }
        })
        .collect()
}

/// The values of the metric in column `column` at `point`, one per seed, from `rows` ordered by
/// point and seed.
pub fn seed_values(rows: &[ResultRow], column: usize, point: usize) -> Vec<f64> {
    let start = rows.partition_point(|row| row.point < point);
    rows[start..]
        .iter()
        .take_while(|row| row.point == point)
        .map(|row| parse_metric(&row.metrics[column]).expect("checked when read"))
        .collect()
}

/// A metric's values at a point, one per seed.
pub type SeedValues<'a> = &'a dyn Fn(usize) -> Vec<f64>;

/// A step of [`choose`]: how it narrowed the tied points.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// By the secondary metric `metric` (its index): the best mean among the points left is
    /// `best`'s, and `kept` are those the seeds cannot tell from it.
    Metric {
        metric: usize,
        best: usize,
        kept: Vec<usize>,
    },
    /// By the number of grid keys each point left changes from the scenario as it is.
    Changes { counts: Vec<(usize, usize)> },
}

/// The point to recommend among `tied` (best mean of the objective first, then the others in
/// its order) and how it was chosen: for each of the `secondary` metrics in turn (how it is
/// better, and its per-seed values at a point), while more than one point is left, keep those
/// the seeds cannot tell from the best of them on it ([`tied`]); then, if several are left,
/// those that change the fewest grid keys (`changes(point)`); then the first left, the best
/// mean of the objective among them.
pub fn choose(
    tied: &[usize],
    secondary: &[(Better, SeedValues<'_>)],
    changes: impl Fn(usize) -> usize,
) -> (usize, Vec<Step>) {
    let mut left = tied.to_vec();
    let mut steps = Vec::new();
    for (metric, (better, values)) in secondary.iter().enumerate() {
        if left.len() < 2 {
            break;
        }
        let mean = |point: usize| {
            let values = values(point);
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            // An undefined mean is the worst, either way.
            match better {
                Better::Higher => mean,
                Better::Lower | Better::Neither => -mean,
            }
        };
        let best = left
            .iter()
            .copied()
            .filter(|&point| !mean(point).is_nan())
            .reduce(|best, point| {
                if mean(point) > mean(best) {
                    point
                } else {
                    best
                }
            });
        let Some(best) = best else { continue };
        let kept: Vec<usize> = self::tied(best, &left, values)
            .into_iter()
            .map(|(point, _)| point)
            .collect();
        steps.push(Step::Metric {
            metric,
            best,
            kept: kept.clone(),
        });
        left = kept;
    }
    if left.len() > 1 {
        let counts: Vec<(usize, usize)> =
            left.iter().map(|&point| (point, changes(point))).collect();
        let fewest = counts.iter().map(|&(_, count)| count).min().unwrap_or(0);
        left.retain(|point| counts.contains(&(*point, fewest)));
        steps.push(Step::Changes { counts });
    }
    (left[0], steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Per seed, three seeds: point 0 (the best mean) 10, 12, 14; point 1 11, 14, 15; point 2
    /// 20, 22, 24.
    fn values(point: usize) -> Vec<f64> {
        [[10.0, 12.0, 14.0], [11.0, 14.0, 15.0], [20.0, 22.0, 24.0]][point].to_vec()
    }

    /// Point 1's differences from point 0 are 1, 2, 1: mean 4/3, standard deviation
    /// sqrt(((1/3)² + (2/3)² + (1/3)²) / 2) = sqrt(1/3) = 0.57735, half width t(0.975; 2) x
    /// sqrt(1/3) / sqrt(3) = 4.303 / 3 = 1.434333, so the interval 1.3333 ± 1.4343 contains 0:
    /// tied. Point 2's are 10, 10, 10: 10 ± 0, apart. Separately the intervals would be 12 ±
    /// 4.97 and 13.33 ± 5.18; paired, the shared luck cancels. To separate point 1: 3 seeds
    /// give 1.4343 > 4/3; 4 seeds give t(0.975; 3) x sqrt(1/3) / 2 = 3.182 x 0.288675 =
    /// 0.918564 < 4/3, so 4 (the normal approximation (1.96 x 0.57735 / (4/3))² = 0.72 is far
    /// below what so few seeds need).
    #[test]
    fn a_point_is_tied_when_its_paired_interval_contains_zero() {
        let tie = tied(0, &[0, 1, 2], values);
        let points: Vec<usize> = tie.iter().map(|(point, _)| *point).collect();
        assert_eq!(points, [0, 1]);
        let difference = tie[1].1.unwrap();
        assert!((difference.mean - 4.0 / 3.0).abs() < 1e-12);
        assert!((difference.sd - (1.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!((difference.half_width - 4.303 / 3.0).abs() < 1e-12);
        assert_eq!(difference.seeds_to_separate(), Some(4));
        let apart = Difference::paired(&values(2), &values(0)).unwrap();
        assert_eq!((apart.mean, apart.half_width), (10.0, 0.0));
        assert!(!apart.contains_zero());
        // Equal on every seed: no number of seeds separates them.
        let same = Difference::paired(&values(1), &values(1)).unwrap();
        assert!(same.contains_zero());
        assert_eq!(same.seeds_to_separate(), None);
        // A recovery that never came has no paired interval: tied only with the same values.
        let never = |point: usize| {
            [
                vec![1.0, f64::INFINITY],
                vec![1.0, f64::INFINITY],
                vec![1.0, 2.0],
            ][point]
                .clone()
        };
        let points: Vec<usize> = tied(0, &[0, 1, 2], never).iter().map(|(p, _)| *p).collect();
        assert_eq!(points, [0, 1]);
    }

    /// Points 0, 1 and 3 tied on the objective. A secondary metric, higher better: point 0
    /// 0.5, 0.6, 0.7; point 1 0.9, 0.9, 0.9; point 3 0.8, 0.85, 0.9. Point 1 has the best mean
    /// (0.9); point 0's differences from it are -0.4, -0.3, -0.2 (-0.3 ± 4.303 x 0.1 / sqrt(3)
    /// = ± 0.248433: apart), point 3's -0.1, -0.05, 0 (-0.05 ± 4.303 x 0.05 / sqrt(3) =
    /// ± 0.124217: tied). Points 1 and 3 are
    /// left; point 1 changes 2 grid keys, point 3 one: point 3 is chosen, though its mean of
    /// the objective ranks it last.
    #[test]
    fn among_tied_points_the_requirements_then_the_fewest_changes_choose() {
        let secondary = |point: usize| match point {
            0 => vec![0.5, 0.6, 0.7],
            1 => vec![0.9, 0.9, 0.9],
            _ => vec![0.8, 0.85, 0.9],
        };
        let changes = |point: usize| if point == 3 { 1 } else { 2 };
        let (chosen, steps) = choose(&[0, 1, 3], &[(Better::Higher, &secondary)], changes);
        assert_eq!(chosen, 3);
        assert_eq!(
            steps,
            [
                Step::Metric {
                    metric: 0,
                    best: 1,
                    kept: vec![1, 3]
                },
                Step::Changes {
                    counts: vec![(1, 2), (3, 1)]
                }
            ]
        );
        // Without a secondary metric, the fewest changes; equal changes keep the best mean.
        assert_eq!(choose(&[0, 1, 3], &[], changes).0, 3);
        assert_eq!(choose(&[0, 1, 3], &[], |_| 1).0, 0);
    }
}
