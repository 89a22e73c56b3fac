//! A distribution known by points of its CDF, as dashboards know latencies: quantiles
//! (p50, p99, p99.9) or the cumulative buckets of a Prometheus histogram.
//!
//! Between the points the inverse CDF is linear, from `x = 0` at `F = 0` (or the given
//! minimum), so every point is reproduced exactly and, for buckets, `histogram_quantile` of the
//! draws gives back the input's quantiles (it interpolates linearly inside a bucket the same
//! way). Above the highest point the points say nothing; clamping there would cut the tail that
//! decides timeouts, so a Pareto tail continues it: `P(X > x) = (1 - q2) (x / x2)^-a` with `a`
//! matching the slope between the two highest points, `a = ln((1 - q1) / (1 - q2)) / ln(x2 /
//! x1)` (p99 and p99.9: `ln 10 / ln(p99.9 / p99)`). When the point below the highest is at
//! zero (a single quantile, or a single finite bucket) that slope is not defined, and `a`
//! continues the density of the segment below instead, `a = q2 / (1 - q2)` (p50 alone:
//! `a = 1`; p99 alone: `a = 99`).
//!
//! The tail is truncated at `max` (drawn from the Pareto conditioned on `X <= max`), which
//! defaults to [`DEFAULT_TAIL_FACTOR`] times the highest point: beyond that nothing is known,
//! and a Pareto of `a <= 1` has no mean, while capacity (`workers / mean`) and cost bounds need
//! a finite one. The mean is the closed form of the truncated tail.

use crate::base::time::Duration;

/// The default `max` of a tail, as a multiple of the highest point.
pub const DEFAULT_TAIL_FACTOR: u64 = 10;

/// A Pareto tail above the highest point, truncated at `max`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tail {
    /// Where it starts (the highest point), in µs.
    pub start: f64,
    /// `P(X > start)`.
    pub exceedance: f64,
    /// The Pareto index `a`.
    pub alpha: f64,
    /// Where it is cut, in µs.
    pub max: f64,
}

impl Tail {
    /// `1 - (start / max)^a`: the untruncated Pareto's probability below `max`.
    fn kept(&self) -> f64 {
        1.0 - libm::pow(self.start / self.max, self.alpha)
    }

    /// The value at `v` in `[0, 1)` of the tail's own CDF (inverse transform).
    #[inline]
    pub fn inverse(&self, v: f64) -> f64 {
        self.start * libm::pow(1.0 - v * self.kept(), -1.0 / self.alpha)
    }

    /// The mean of a draw from the tail: the truncated Pareto's,
    /// `a L^a / (1 - (L/H)^a) * (H^(1-a) - L^(1-a)) / (1 - a)`, or `L ln(H/L) / (1 - L/H)` at
    /// `a = 1`.
    pub fn mean(&self) -> f64 {
        let (low, high, a) = (self.start, self.max, self.alpha);
        if (a - 1.0).abs() < 1e-9 {
            return low * libm::log(high / low) / (1.0 - low / high);
        }
        a * libm::pow(low, a) / self.kept() * (libm::pow(high, 1.0 - a) - libm::pow(low, 1.0 - a))
            / (1.0 - a)
    }

    /// `P(X > x)` for `x` in `[start, max]`.
    pub fn exceedance_at(&self, x: f64) -> f64 {
        let cut = libm::pow(self.start / self.max, self.alpha);
        self.exceedance * (libm::pow(x / self.start, -self.alpha) - cut) / (1.0 - cut)
    }
}

/// A piecewise-linear inverse CDF through points, with a Pareto tail above the highest.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// `F` at each point: from 0, non-decreasing.
    probabilities: Vec<f64>,
    /// The value at each point, in µs: non-decreasing.
    values: Vec<f64>,
    /// Above the highest point, if it is below `F = 1`.
    tail: Option<Tail>,
}

impl Curve {
    /// The curve through `points` (`(F, µs)`, the first at `F = 0`, both coordinates
    /// non-decreasing, as the callers check), with a tail up to `max` (by default
    /// [`DEFAULT_TAIL_FACTOR`] times the highest point) if the highest is below `F = 1`.
    pub fn new(points: &[(f64, f64)], max: Option<Duration>) -> Result<Curve, String> {
        let (probabilities, values): (Vec<f64>, Vec<f64>) = points.iter().copied().unzip();
        let (top, highest) = *points.last().expect("callers give at least two points");
        let tail = if top < 1.0 {
            let max = max.map_or(highest * DEFAULT_TAIL_FACTOR as f64, |max| max.0 as f64);
            if max <= highest {
                return Err(format!(
                    "max {} must be above the highest point, {}",
                    Duration(max as u64),
                    Duration(highest as u64)
                ));
            }
            // The highest point below the top in probability.
            let (below, lower) = points
                .iter()
                .rev()
                .copied()
                .find(|&(p, _)| p < top)
                .expect("the first point is at F = 0 < top");
            let alpha = if lower > 0.0 {
                libm::log((1.0 - below) / (1.0 - top)) / libm::log(highest / lower)
            } else {
                (top - below) / (1.0 - top)
            };
            Some(Tail {
                start: highest,
                exceedance: 1.0 - top,
                alpha,
                max,
            })
        } else {
            None
        };
        Ok(Curve {
            probabilities,
            values,
            tail,
        })
    }

    /// The tail, if any.
    pub fn tail(&self) -> Option<&Tail> {
        self.tail.as_ref()
    }

    /// The value at `u` in `[0, 1)`, in µs.
    #[inline]
    pub fn inverse(&self, u: f64) -> f64 {
        let top = *self.probabilities.last().expect("never empty");
        if let Some(tail) = self.tail.as_ref().filter(|_| u >= top) {
            return tail.inverse((u - top) / (1.0 - top));
        }
        // The segment whose upper end is the first point above `u` (the first point is at 0).
        let upper = self
            .probabilities
            .partition_point(|&p| p <= u)
            .min(self.values.len() - 1);
        let (f0, f1) = (self.probabilities[upper - 1], self.probabilities[upper]);
        let (x0, x1) = (self.values[upper - 1], self.values[upper]);
        if f1 <= f0 {
            return x1;
        }
        x0 + (x1 - x0) * (u - f0) / (f1 - f0)
    }

    /// The mean of the part below the highest point, weighted by its probability: each
    /// segment's probability times its midpoint.
    fn body_mean(&self) -> f64 {
        let segments = self.probabilities.windows(2).zip(self.values.windows(2));
        segments
            .map(|(p, x)| (p[1] - p[0]) * (x[0] + x[1]) / 2.0)
            .sum()
    }

    /// The mean, in µs.
    pub fn mean(&self) -> f64 {
        self.body_mean()
            + self
                .tail
                .as_ref()
                .map_or(0.0, |tail| tail.exceedance * tail.mean())
    }

    /// The mean of `min(X, highest point)`, in µs: what many draws average at the least,
    /// whatever the tail does.
    pub fn body_bound_mean(&self) -> f64 {
        self.body_mean()
            + self
                .tail
                .as_ref()
                .map_or(0.0, |tail| tail.exceedance * tail.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tail's slope matches the two highest points: from p99 = 250ms and p99.9 = 900ms,
    /// `a = ln 10 / ln 3.6 = 1.7985`; a single point at p50 gets `a = 1`; the truncated mean at
    /// `a = 1` is `L ln(H/L) / (1 - L/H)` and agrees with the general formula near it.
    #[test]
    fn the_tail_continues_the_highest_slope() {
        let curve = Curve::new(&[(0.0, 0.0), (0.99, 250_000.0), (0.999, 900_000.0)], None).unwrap();
        let tail = curve.tail().unwrap();
        assert!((tail.alpha - libm::log(10.0) / libm::log(3.6)).abs() < 1e-12);
        assert_eq!(tail.max, 9_000_000.0);
        let single = Curve::new(&[(0.0, 0.0), (0.5, 20_000.0)], None).unwrap();
        assert_eq!(single.tail().unwrap().alpha, 1.0);
        let one = Tail {
            start: 1.0,
            exceedance: 1.0,
            alpha: 1.0,
            max: 10.0,
        };
        let near = Tail {
            alpha: 1.0 + 1e-6,
            ..one.clone()
        };
        assert!((one.mean() - 10.0 * libm::log(10.0) / 9.0).abs() < 1e-12);
        assert!((one.mean() - near.mean()).abs() < 1e-4);
    }
}
