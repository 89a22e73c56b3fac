//! A distribution given by a Prometheus classic histogram: cumulative `le` buckets, each
//! counting the observations at or below its bound, ending in `+Inf`.
//!
//! The buckets are read by the rules of Prometheus's `histogram_quantile` (promql/quantile.go):
//! sorted by bound, a `+Inf` bucket required, at least two buckets and some observations, the
//! lower edge of the first bucket 0 (if its bound is above 0). Prometheus also forces counts
//! monotonic, which hides the float noise of `rate()`; here a decrease of at most a billionth
//! of the count is forced up likewise, and a larger one is an error: it means counts that are
//! not cumulative (OpenTelemetry's per-bucket counts), which forcing would turn into a
//! different distribution. Equal bounds are an error too (Prometheus merges the series of one
//! bound; a list that repeats one is a typo).
//!
//! Draws invert `F(le_i) = count_i / count(+Inf)` linearly from `F(0) = 0`, so that
//! `histogram_quantile(q)` of the draws, bucketed the same way, gives back the input's for
//! every q up to the last finite bucket; above it a Pareto tail fitted to the two highest
//! finite buckets ([`Curve`]) stands for what Prometheus only counts in `+Inf`.

use crate::base::time::Duration;

use super::curve::Curve;

/// The most buckets a histogram may have (Prometheus's default buckets are 11; native
/// histograms at their finest resolution keep up to 160 per sign).
pub const MAX_BUCKETS: usize = 1000;

/// A cumulative bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    /// The bound, `None` for `+Inf`.
    pub le: Option<Duration>,
    /// Observations at or below it.
    pub count: f64,
}

/// A histogram that cannot be used: which bucket (its place in the list given, from 0), if
/// one, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct BucketError {
    pub bucket: Option<usize>,
    pub message: String,
}

/// A distribution through histogram buckets.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// The buckets, sorted, counts made monotonic.
    buckets: Vec<Bucket>,
    /// The curve through them.
    curve: Curve,
}

impl Histogram {
    /// The distribution of `buckets` (in any order), its tail cut at `max`.
    pub fn new(buckets: Vec<Bucket>, max: Option<Duration>) -> Result<Histogram, BucketError> {
        let whole = |message: String| BucketError {
            bucket: None,
            message,
        };
        if buckets.len() < 2 || buckets.len() > MAX_BUCKETS {
            return Err(whole(format!(
                "{} buckets: a histogram has 2 to {MAX_BUCKETS}, the last `+Inf` (histogram_quantile needs two)",
                buckets.len()
            )));
        }
        if let Some(bad) = buckets
            .iter()
            .position(|bucket| !(bucket.count.is_finite() && bucket.count >= 0.0))
        {
            return Err(BucketError {
                bucket: Some(bad),
                message: format!(
                    "count {} is not a number of observations (finite, at least 0)",
                    buckets[bad].count
                ),
            });
        }
        let mut order: Vec<usize> = (0..buckets.len()).collect();
        // `None` (+Inf) sorts after every bound.
        order.sort_by_key(|&i| (buckets[i].le.is_none(), buckets[i].le));
        let mut sorted: Vec<Bucket> = Vec::with_capacity(buckets.len());
        for &i in &order {
            let mut bucket = buckets[i];
            if let Some(previous) = sorted.last() {
                if previous.le == bucket.le {
                    return Err(BucketError {
                        bucket: Some(i),
                        message: format!("le = {} appears twice", bound(bucket.le)),
                    });
                }
                if bucket.count < previous.count {
                    if previous.count - bucket.count > 1e-9 * previous.count {
                        return Err(BucketError {
                            bucket: Some(i),
                            message: format!(
                                "le = {} counts {}, fewer than the {} of le = {}: buckets are cumulative (each counts every observation at or below its bound); add up per-bucket counts (as OpenTelemetry exports them) first",
                                bound(bucket.le),
                                bucket.count,
                                previous.count,
                                bound(previous.le)
                            ),
                        });
                    }
                    bucket.count = previous.count;
                }
            }
            sorted.push(bucket);
        }
        let last = *sorted.last().expect("at least two");
        if last.le.is_some() {
            return Err(whole(
                "no `+Inf` bucket: the last bucket of a Prometheus histogram is le = \"+Inf\", counting every observation (histogram_quantile gives NaN without it)".into(),
            ));
        }
        let total = last.count;
        if total <= 0.0 {
            return Err(whole("no observations: the `+Inf` bucket counts 0".into()));
        }
        let finite = &sorted[..sorted.len() - 1];
        let highest = finite.last().expect("at least two buckets");
        if highest.count <= 0.0 {
            return Err(whole(format!(
                "every observation is above the last finite bucket, le = {}: nothing is known of the distribution; add buckets above it",
                bound(highest.le)
            )));
        }
        let points: Vec<(f64, f64)> = std::iter::once((0.0, 0.0))
            .chain(finite.iter().map(|bucket| {
                let le = bucket.le.expect("finite");
                (bucket.count / total, le.0 as f64)
            }))
            .collect();
        let curve = Curve::new(&points, max).map_err(whole)?;
        Ok(Histogram {
            buckets: sorted,
            curve,
        })
    }

    /// The buckets, sorted, counts made monotonic.
    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    /// The curve draws follow.
    pub fn curve(&self) -> &Curve {
        &self.curve
    }
}

/// A bucket's bound as written: a duration or `+Inf`.
pub fn bound(le: Option<Duration>) -> String {
    le.map_or_else(|| "+Inf".to_string(), |le| le.to_string())
}

/// A bound as Prometheus or a person writes it: `+Inf` (or `Inf`), a duration with a unit
/// (`"5ms"`), or a bare number of seconds, as Prometheus exports them (`0.005`), rounded to the
/// microsecond.
pub fn parse_bound(text: &str) -> Result<Option<Duration>, String> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("+inf") || text.eq_ignore_ascii_case("inf") {
        return Ok(None);
    }
    bare_or_duration(text, 1e6).map(Some)
}

/// A duration with a unit (`"12.5ms"`), or a bare number in units of `micros_per_unit`
/// µs, rounded to the microsecond.
pub fn bare_or_duration(text: &str, micros_per_unit: f64) -> Result<Duration, String> {
    if text.ends_with(|c: char| c.is_ascii_alphabetic()) {
        return text.parse().map_err(|error| format!("{error}"));
    }
    match text.parse::<f64>() {
        Ok(number) if number.is_finite() && number >= 0.0 && number * micros_per_unit < 1e15 => {
            Ok(Duration((number * micros_per_unit).round() as u64))
        }
        _ => Err(format!(
            "{text:?} is not a duration: write a non-negative number, or one with a unit such as \"12.5ms\""
        )),
    }
}

/// The buckets of a CSV file's text, each with its line (from 1): columns `le,count`, an
/// optional header line `le,count`, blank lines and lines starting with `#` skipped. `le` is
/// as [`parse_bound`] reads it (bare numbers are seconds, as Prometheus exports them); the
/// error gives the line and why.
pub fn parse_csv(text: &str) -> Result<Vec<(usize, Bucket)>, (usize, String)> {
    let mut buckets = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line
            .split(',')
            .map(|field| field.trim().trim_matches('"'))
            .collect();
        if buckets.is_empty() && fields == ["le", "count"] {
            continue;
        }
        if buckets.len() == MAX_BUCKETS {
            return Err((index + 1, format!("more than {MAX_BUCKETS} buckets")));
        }
        let bucket = match fields[..] {
            [le, count] => parse_bound(le).and_then(|le| {
                count
                    .parse::<f64>()
                    .map(|count| Bucket { le, count })
                    .map_err(|_| format!("count {count:?} is not a number"))
            }),
            _ => Err(format!(
                "{} columns: a line is `le,count`, such as `0.005,120` (seconds, as Prometheus exports them) or `5ms,120`",
                fields.len()
            )),
        };
        buckets.push((index + 1, bucket.map_err(|message| (index + 1, message))?));
    }
    Ok(buckets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_rules_are_enforced() {
        let ms = |n: u64| Some(Duration::from_ms(n));
        let b = |le, count| Bucket { le, count };
        let error = |buckets: Vec<Bucket>| Histogram::new(buckets, None).unwrap_err();
        assert!(
            error(vec![b(ms(5), 1.0), b(ms(10), 2.0)])
                .message
                .contains("no `+Inf`")
        );
        assert_eq!(error(vec![b(None, 3.0)]).bucket, None);
        let decreasing = error(vec![b(ms(5), 10.0), b(ms(10), 4.0), b(None, 12.0)]);
        assert_eq!(decreasing.bucket, Some(1));
        assert!(
            decreasing.message.contains("cumulative"),
            "{}",
            decreasing.message
        );
        assert!(
            error(vec![b(ms(5), 0.0), b(None, 0.0)])
                .message
                .contains("no observations")
        );
        // Out of order is sorted; float noise is forced up, as Prometheus does.
        let histogram = Histogram::new(
            vec![b(None, 10.0), b(ms(10), 10.0 - 1e-12), b(ms(5), 10.0)],
            None,
        )
        .unwrap();
        assert_eq!(histogram.buckets()[1].count, 10.0);
        assert!(histogram.curve().tail().is_none());
        assert_eq!(parse_bound("0.005"), Ok(ms(5)));
        assert_eq!(parse_bound("+Inf"), Ok(None));
        assert_eq!(parse_bound("250ms"), Ok(ms(250)));
        assert!(parse_bound("-1").is_err());
        assert_eq!(
            parse_csv("le,count\n0.005,1\n\n+Inf,3\n"),
            Ok(vec![(2, b(ms(5), 1.0)), (4, b(None, 3.0))])
        );
        assert_eq!(parse_csv("0.005,1,2\n").unwrap_err().0, 1);
        assert!(
            parse_csv("le,count\n5ms,many\n")
                .unwrap_err()
                .1
                .contains("\"many\"")
        );
    }
}
