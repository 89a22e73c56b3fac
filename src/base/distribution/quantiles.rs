//! A distribution given by its quantiles as a dashboard shows them:
//! `{ quantiles = { p50 = "20ms", p90 = "80ms", p99 = "250ms", "p99.9" = "900ms" } }`.
//!
//! A key is `p` and a percentage below 100 (`p50`, `p99.9`, `p99.99`); `p0` (or `min` beside
//! the table) is the least value, else the curve starts at 0. Values must rise with the
//! probability. Draws follow a [`Curve`] through the points, with its Pareto tail above the
//! highest, cut at `max`.

use crate::base::time::Duration;

use super::curve::Curve;

/// A distribution through declared quantiles.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantiles {
    /// The quantiles as written (key, probability, value), by rising probability; `p0` is
    /// kept as `min`.
    points: Vec<(String, f64, Duration)>,
    /// The least value (`p0`), if given.
    min: Option<Duration>,
    /// The curve through them.
    curve: Curve,
}

/// The probability a key such as `p99.9` names, for keys from `p0` to below `p100`.
fn probability(key: &str) -> Result<f64, String> {
    let bad = || {
        format!(
            "quantile key {key:?}: write `p` and a percentage below 100, such as p50, p99 or \"p99.9\" (quoted, as TOML needs for a dot)"
        )
    };
    let number = key.strip_prefix('p').ok_or_else(bad)?;
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || number.ends_with('.') {
        return Err(bad());
    }
    let percent: f64 = number.parse().map_err(|_| bad())?;
    if percent >= 100.0 {
        return Err(format!(
            "quantile key {key:?}: a quantile is below p100; to bound the values write `max`"
        ));
    }
    Ok(percent / 100.0)
}

impl Quantiles {
    /// The distribution through `written` (key and value), starting at `min` (or 0), its
    /// tail cut at `max`; the error says which quantile is wrong.
    pub fn new(
        written: Vec<(String, Duration)>,
        min: Option<Duration>,
        max: Option<Duration>,
    ) -> Result<Quantiles, String> {
        let mut min = min;
        let mut points = Vec::new();
        for (key, value) in written {
            let p = probability(&key)?;
            if p == 0.0 {
                if min.is_some() {
                    return Err("both `min` and p0 give the least value; write one of them".into());
                }
                min = Some(value);
            } else {
                points.push((key, p, value));
            }
        }
        if points.is_empty() {
            return Err(
                "needs at least one quantile above p0, such as { p50 = \"20ms\", p99 = \"250ms\" }"
                    .into(),
            );
        }
        points.sort_by(|a, b| a.1.total_cmp(&b.1));
        for pair in points.windows(2) {
            let ((low_key, low_p, low), (key, p, value)) = (&pair[0], &pair[1]);
            if p == low_p {
                return Err(format!("{low_key} and {key} are the same quantile"));
            }
            if value <= low {
                return Err(format!(
                    "{key} = {value} must be above {low_key} = {low}: quantiles rise with the probability"
                ));
            }
        }
        let start = min.unwrap_or(Duration(0));
        let (first_key, _, first) = &points[0];
        if *first <= start && min.is_some() {
            return Err(format!(
                "{first_key} = {first} must be above the least value, {start}"
            ));
        }
        if first.0 == 0 {
            return Err(format!(
                "{first_key} = 0s: quantiles above p0 must be above zero"
            ));
        }
        let curve_points: Vec<(f64, f64)> = std::iter::once((0.0, start.0 as f64))
            .chain(points.iter().map(|(_, p, value)| (*p, value.0 as f64)))
            .collect();
        let curve = Curve::new(&curve_points, max)?;
        Ok(Quantiles { points, min, curve })
    }

    /// The quantiles as written, by rising probability.
    pub fn written(&self) -> impl Iterator<Item = (&str, Duration)> {
        self.points
            .iter()
            .map(|(key, _, value)| (key.as_str(), *value))
    }

    /// The least value, if given.
    pub fn min(&self) -> Option<Duration> {
        self.min
    }

    /// The curve draws follow.
    pub fn curve(&self) -> &Curve {
        &self.curve
    }
}
