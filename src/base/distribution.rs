//! Distributions of latencies and service times.
//!
//! In a scenario file a distribution is either a duration, meaning a constant (`"10ms"`), or a
//! table naming one: `{ distribution = "exponential", mean = "10ms" }`,
//! `{ distribution = "lognormal", mean = "10ms", sigma = 0.5 }`,
//! `{ distribution = "uniform", min = "5ms", max = "15ms" }`,
//! `{ distribution = "constant", value = "10ms" }`,
//! `{ distribution = "pareto", scale = "10ms", alpha = 2.5 }`; or one as dashboards and logs
//! have it: quantiles ([`quantiles`]), Prometheus histogram buckets ([`buckets`]), measured
//! samples ([`samples`]), or a mixture of any of these (`{ mixture = [{ weight = 0.9, value =
//! "2ms" }, { weight = 0.1, distribution = "exponential", mean = "40ms" }] }`). Any table may
//! add `scale_by = 1.3`, which multiplies every draw ([`Scaled`]). The serde form, and its
//! checks, are in [`table`].
//!
//! The lognormal is parameterised by its mean (so that capacity, `workers / mean`, reads
//! directly off the file) and by `sigma`, the standard deviation of its logarithm, which sets
//! the tail: p99 / median is `e^(2.326 sigma)`.
//!
//! The parametric forms are plain values, sampled with no indirection; the forms that hold a
//! table (points, buckets, samples, components) hold it behind an [`Arc`], so that a
//! distribution stays cheap to clone (a model clones its services' distributions) and the
//! enum stays three words.
//!
//! Every Pareto, named or the tail of quantiles and buckets, is truncated at a `max`
//! ([`curve`]): a Pareto of `alpha <= 1` has no mean, and one just above 1 a mean that no run
//! of draws comes near, while capacity (`workers / mean`) and cost bounds need a finite mean
//! that draws average to. The named Pareto's `max` defaults to [`PARETO_DEFAULT_FACTOR`] times
//! its scale.

pub mod buckets;
pub mod curve;
pub mod quantiles;
pub mod samples;
mod table;

use std::fmt;
use std::sync::Arc;

use crate::base::random::Random;
use crate::base::time::{Duration, Micros};

use buckets::Histogram;
use curve::Tail;
use quantiles::Quantiles;
use samples::Samples;

/// The default `max` of a named Pareto, as a multiple of its scale: it keeps all but
/// `1000^-alpha` of the untruncated Pareto (0.1% at `alpha = 1`, 0.003% at 1.5).
pub const PARETO_DEFAULT_FACTOR: u64 = 1000;

/// A distribution of non-negative durations.
#[derive(Debug, Clone, PartialEq)]
pub enum Distribution {
    /// Always `value`.
    Constant(Duration),
    /// Exponential with the given mean: `-ln(1 - u) * mean`.
    Exponential { mean: Duration },
    /// Lognormal with the given mean and log-standard-deviation.
    Lognormal { mean: Duration, sigma: f64 },
    /// Lognormal with the given median and 99th percentile, as latencies are usually known:
    /// `mu = ln(median)`, `sigma = ln(p99 / median) / z(0.99)`.
    LognormalQuantiles { median: Duration, p99: Duration },
    /// Uniform on `[min, max]`.
    Uniform { min: Duration, max: Duration },
    /// `|N(mean, sd)|`: a normal draw folded at zero, as AWS's backoff simulator delays its
    /// network messages (`abs(normalvariate(10, 2))` ms).
    Normal { mean: Duration, sd: Duration },
    /// Pareto from `scale` (its least value, `P(X > x) = (x / scale)^-alpha`), truncated at
    /// `max`: a [`Tail`] whose exceedance is 1.
    Pareto(Arc<Tail>),
    /// Through declared quantiles, with a Pareto tail.
    Quantiles(Arc<Quantiles>),
    /// Through Prometheus histogram buckets, with a Pareto tail.
    Histogram(Arc<Histogram>),
    /// The empirical distribution of measured samples.
    Samples(Arc<Samples>),
    /// One of several distributions, chosen by weight.
    Mixture(Arc<Mixture>),
    /// Another distribution's draws times a factor (`scale_by` on any table form).
    Scaled(Arc<Scaled>),
}

/// `scale_by`: every draw of `inner` multiplied by `factor`, so that a service time can be
/// uncertain as a whole (`[uncertain]` draws the factor) whatever its form: a histogram or
/// quantiles, whose tables have no one parameter to vary, included.
#[derive(Debug, Clone, PartialEq)]
pub struct Scaled {
    /// The factor, above 0 and at most [`MAX_SCALE_BY`].
    pub factor: f64,
    /// The distribution scaled.
    pub inner: Distribution,
}

/// The largest `scale_by`: a service time a thousand times the one measured is a different
/// system, not an uncertain one.
pub const MAX_SCALE_BY: f64 = 1000.0;

/// A mixture: a categorical draw chooses a component, which then draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Mixture {
    /// The components and their weights, as written.
    components: Vec<(f64, Distribution)>,
    /// The cumulative normalised weights, the last 1.
    cumulative: Vec<f64>,
}

impl Mixture {
    /// The mixture of `components` (weight, distribution), weights positive and finite.
    fn new(components: Vec<(f64, Distribution)>) -> Mixture {
        let total: f64 = components.iter().map(|(weight, _)| weight).sum();
        let mut sum = 0.0;
        let mut cumulative: Vec<f64> = components
            .iter()
            .map(|(weight, _)| {
                sum += weight;
                sum / total
            })
            .collect();
        *cumulative.last_mut().expect("at least one component") = 1.0;
        Mixture {
            components,
            cumulative,
        }
    }

    /// The components with their normalised weights.
    fn normalised(&self) -> impl Iterator<Item = (f64, &Distribution)> {
        let mut below = 0.0;
        self.cumulative
            .iter()
            .zip(&self.components)
            .map(move |(&up_to, (_, distribution))| {
                let weight = up_to - below;
                below = up_to;
                (weight, distribution)
            })
    }

    /// One draw: a uniform draw picks the component, which draws next.
    fn sample(&self, stream: &mut impl Random) -> Micros {
        let u = stream.unit();
        let index = self
            .cumulative
            .partition_point(|&up_to| up_to <= u)
            .min(self.components.len() - 1);
        self.components[index].1.sample(stream)
    }
}

impl Distribution {
    /// The mean in microseconds.
    pub fn mean_micros(&self) -> f64 {
        match self {
            Distribution::Constant(value) => value.0 as f64,
            Distribution::Exponential { mean } | Distribution::Lognormal { mean, .. } => {
                mean.0 as f64
            }
            Distribution::LognormalQuantiles { median, p99 } => {
                let sigma = quantile_sigma(*median, *p99);
                median.0 as f64 * libm::exp(sigma * sigma / 2.0)
            }
            Distribution::Uniform { min, max } => (min.0 as f64 + max.0 as f64) / 2.0,
            // The folded normal's mean: sd sqrt(2/pi) exp(-m^2/2sd^2) + m (1 - 2 Phi(-m/sd)).
            Distribution::Normal { mean, sd } => {
                let (m, s) = (mean.0 as f64, sd.0 as f64);
                if s == 0.0 {
                    return m;
                }
                let phi = |x: f64| 0.5 * (1.0 + libm::erf(x / std::f64::consts::SQRT_2));
                s * (2.0 / std::f64::consts::PI).sqrt() * libm::exp(-m * m / (2.0 * s * s))
                    + m * (1.0 - 2.0 * phi(-m / s))
            }
            Distribution::Pareto(tail) => tail.mean(),
            Distribution::Quantiles(quantiles) => quantiles.curve().mean(),
            Distribution::Histogram(histogram) => histogram.curve().mean(),
            Distribution::Samples(samples) => samples.mean(),
            Distribution::Mixture(mixture) => mixture
                .normalised()
                .map(|(weight, component)| weight * component.mean_micros())
                .sum(),
            Distribution::Scaled(scaled) => scaled.factor * scaled.inner.mean_micros(),
        }
    }

    /// The least the mean of many draws is likely to come to, in microseconds, for a bound on
    /// how many draws fit in a time: the mean, but the median of a lognormal, whose mean rests
    /// on rare large draws that a run may never make (with sigma 5 the median is 4 millionths
    /// of the mean: a run of a million draws averages far below it). Likewise for a Pareto
    /// tail: a Pareto's scale (every draw is at least that), and for quantiles and buckets the
    /// mean of the draws cut at the highest point, `E[min(X, x_top)]`.
    pub fn least_mean_micros(&self) -> f64 {
        match self {
            Distribution::Lognormal { mean, sigma } => {
                mean.0 as f64 * libm::exp(-sigma * sigma / 2.0)
            }
            Distribution::LognormalQuantiles { median, .. } => median.0 as f64,
            Distribution::Pareto(tail) => tail.start,
            Distribution::Quantiles(quantiles) => quantiles.curve().body_bound_mean(),
            Distribution::Histogram(histogram) => histogram.curve().body_bound_mean(),
            Distribution::Mixture(mixture) => mixture
                .normalised()
                .map(|(weight, component)| weight * component.least_mean_micros())
                .sum(),
            Distribution::Scaled(scaled) => scaled.factor * scaled.inner.least_mean_micros(),
            _ => self.mean_micros(),
        }
    }

    /// Every draw is zero: a distribution of non-negative values whose mean is zero (a constant
    /// `"0s"`, an exponential of mean 0, a uniform on 0..0). One that is only sometimes zero
    /// after rounding (an exponential of mean 1 µs) is not.
    pub fn is_certainly_zero(&self) -> bool {
        self.mean_micros() == 0.0
    }

    /// One draw, rounded to whole microseconds. A constant draws nothing; a mixture draws
    /// its choice of component, then the component's draws, from the same stream.
    #[inline]
    pub fn sample(&self, stream: &mut impl Random) -> Micros {
        let value = match self {
            Distribution::Constant(value) => return value.0,
            Distribution::Exponential { mean } => stream.exponential(mean.0 as f64),
            Distribution::Lognormal { mean, sigma } => {
                let mu = libm::log(mean.0 as f64) - sigma * sigma / 2.0;
                libm::exp(mu + sigma * stream.standard_normal())
            }
            Distribution::LognormalQuantiles { median, p99 } => {
                let sigma = quantile_sigma(*median, *p99);
                libm::exp(libm::log(median.0 as f64) + sigma * stream.standard_normal())
            }
            Distribution::Uniform { min, max } => {
                min.0 as f64 + (max.0 - min.0) as f64 * stream.unit()
            }
            Distribution::Normal { mean, sd } => {
                (mean.0 as f64 + sd.0 as f64 * stream.standard_normal()).abs()
            }
            Distribution::Pareto(tail) => tail.inverse(stream.unit()),
            Distribution::Quantiles(quantiles) => quantiles.curve().inverse(stream.unit()),
            Distribution::Histogram(histogram) => histogram.curve().inverse(stream.unit()),
            Distribution::Samples(samples) => return samples.sample(stream),
            Distribution::Mixture(mixture) => return mixture.sample(stream),
            // The inner draw, in whole microseconds, times the factor.
            Distribution::Scaled(scaled) => scaled.inner.sample(stream) as f64 * scaled.factor,
        };
        // Round half up (values are never negative); `as` saturates, so a sample beyond u64
        // (impossible for sane parameters) stays finite.
        (value + 0.5) as Micros
    }
}

/// A mean in words: `31.25ms`, `2.5s`, `800us`.
fn about(micros: f64) -> String {
    if micros >= 1e6 {
        format!("{}s", round3(micros / 1e6))
    } else if micros >= 1e3 {
        format!("{}ms", round3(micros / 1e3))
    } else {
        format!("{}us", round3(micros))
    }
}

/// `x` to at most 3 decimals, without trailing zeros.
fn round3(x: f64) -> String {
    let text = format!("{x:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A tail in words: ", Pareto tail a = 1.8 to 9s".
fn tail_words(tail: Option<&Tail>) -> String {
    tail.map_or_else(String::new, |tail| {
        format!(
            ", Pareto tail a = {} to {}",
            round3(tail.alpha),
            Duration(tail.max as u64)
        )
    })
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Distribution::Constant(value) => write!(f, "{value}"),
            Distribution::Exponential { mean } => write!(f, "exponential, mean {mean}"),
            Distribution::Lognormal { mean, sigma } => {
                write!(f, "lognormal, mean {mean}, sigma {sigma}")
            }
            Distribution::LognormalQuantiles { median, p99 } => {
                write!(f, "lognormal, median {median}, p99 {p99}")
            }
            Distribution::Uniform { min, max } => write!(f, "uniform {min}..{max}"),
            Distribution::Normal { mean, sd } => write!(f, "|normal|, mean {mean}, sd {sd}"),
            Distribution::Pareto(tail) => write!(
                f,
                "pareto, scale {}, alpha {}, max {} (mean {})",
                Duration(tail.start as u64),
                tail.alpha,
                Duration(tail.max as u64),
                about(tail.mean())
            ),
            Distribution::Quantiles(quantiles) => {
                let points: Vec<String> = quantiles
                    .min()
                    .map(|min| format!("p0 {min}"))
                    .into_iter()
                    .chain(
                        quantiles
                            .written()
                            .map(|(key, value)| format!("{key} {value}")),
                    )
                    .collect();
                write!(
                    f,
                    "quantiles {}{} (mean {})",
                    points.join(", "),
                    tail_words(quantiles.curve().tail()),
                    about(self.mean_micros())
                )
            }
            Distribution::Histogram(histogram) => {
                let buckets = histogram.buckets();
                write!(
                    f,
                    "histogram of {} buckets to {}, {} observations{} (mean {})",
                    buckets.len(),
                    buckets::bound(buckets[buckets.len() - 2].le),
                    round3(buckets[buckets.len() - 1].count),
                    tail_words(histogram.curve().tail()),
                    about(self.mean_micros())
                )
            }
            Distribution::Samples(samples) => {
                let sorted = samples.sorted();
                write!(
                    f,
                    "{} samples from {} to {} (mean {})",
                    sorted.len(),
                    Duration(sorted[0]),
                    Duration(sorted[sorted.len() - 1]),
                    about(samples.mean())
                )
            }
            Distribution::Mixture(mixture) => {
                let parts: Vec<String> = mixture
                    .normalised()
                    .map(|(weight, component)| format!("{}% [{component}]", round3(weight * 100.0)))
                    .collect();
                write!(
                    f,
                    "mixture of {} (mean {})",
                    parts.join(" and "),
                    about(self.mean_micros())
                )
            }
            Distribution::Scaled(scaled) => write!(
                f,
                "{} x {} (mean {})",
                scaled.inner,
                round3(scaled.factor),
                about(self.mean_micros())
            ),
        }
    }
}

/// The 99th percentile of the standard normal distribution.
const Z_99: f64 = 2.326_347_874_040_841;

/// The log-standard-deviation of the lognormal with this median and 99th percentile.
fn quantile_sigma(median: Duration, p99: Duration) -> f64 {
    (libm::log(p99.0 as f64) - libm::log(median.0 as f64)) / Z_99
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::random::{Purpose, Stream};
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Deserialize, Serialize, PartialEq)]
    struct Holder {
        d: Distribution,
    }

    fn parse(text: &str) -> Result<Distribution, String> {
        toml::from_str::<Holder>(&format!("d = {text}"))
            .map(|holder| holder.d)
            .map_err(|error| error.message().to_string())
    }

    #[test]
    fn every_form_parses_and_round_trips() {
        let cases = [
            ("\"10ms\"", Distribution::Constant(Duration::from_ms(10))),
            (
                "{ distribution = \"exponential\", mean = \"2ms\" }",
                Distribution::Exponential {
                    mean: Duration::from_ms(2),
                },
            ),
            (
                "{ distribution = \"lognormal\", mean = \"2ms\", sigma = 0.5 }",
                Distribution::Lognormal {
                    mean: Duration::from_ms(2),
                    sigma: 0.5,
                },
            ),
            (
                "{ distribution = \"lognormal\", median = \"10ms\", p99 = \"80ms\" }",
                Distribution::LognormalQuantiles {
                    median: Duration::from_ms(10),
                    p99: Duration::from_ms(80),
                },
            ),
            (
                "{ distribution = \"uniform\", min = \"1ms\", max = \"3ms\" }",
                Distribution::Uniform {
                    min: Duration::from_ms(1),
                    max: Duration::from_ms(3),
                },
            ),
            (
                "{ distribution = \"constant\", value = \"4ms\" }",
                Distribution::Constant(Duration::from_ms(4)),
            ),
            (
                "{ distribution = \"normal\", mean = \"10ms\", sd = \"2ms\" }",
                Distribution::Normal {
                    mean: Duration::from_ms(10),
                    sd: Duration::from_ms(2),
                },
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text), Ok(expected.clone()), "{text}");
            let written = toml::to_string(&Holder {
                d: expected.clone(),
            })
            .unwrap();
            assert_eq!(
                toml::from_str::<Holder>(&written).unwrap().d,
                expected,
                "{written}"
            );
        }
    }

    #[test]
    fn wrong_tables_say_what_to_write() {
        let cases = [
            ("{ distribution = \"exponential\" }", "needs `mean`"),
            (
                "{ distribution = \"exponential\", mean = \"1ms\", sigma = 1.0 }",
                "does not take `sigma`",
            ),
            (
                "{ distribution = \"uniform\", min = \"3ms\", max = \"1ms\" }",
                "above max",
            ),
            (
                "{ distribution = \"lognormal\", mean = \"1ms\", sigma = -1.0 }",
                "out of range",
            ),
            (
                "{ distribution = \"poisson\", mean = \"1ms\" }",
                "unknown variant `poisson`",
            ),
            ("\"-3ms\"", "invalid duration"),
            (
                "{ distribution = \"lognormal\", median = \"10ms\" }",
                "needs `p99`",
            ),
            (
                "{ distribution = \"lognormal\", median = \"10ms\", p99 = \"20ms\", sigma = 1.0 }",
                "does not take `sigma`",
            ),
            (
                "{ distribution = \"lognormal\", median = \"10ms\", p99 = \"5ms\" }",
                "p99 above the median",
            ),
        ];
        for (text, expected) in cases {
            let message = parse(text).unwrap_err();
            assert!(message.contains(expected), "{text}: {message}");
        }
    }

    /// `scale_by` multiplies every draw and the mean, on any form: an exponential of mean 10ms
    /// scaled by 1.3 has mean 13ms exactly (1.3 x 10,000 µs), quantiles scaled by 2 twice the
    /// unscaled mean, and each draw is the unscaled draw from the same stream, rounded to whole
    /// microseconds, times the factor, rounded. The scaled form writes back as it was read; a
    /// factor of 0 or above 1000 is refused.
    #[test]
    fn scale_by_multiplies_every_draw_and_the_mean() {
        let scaled =
            parse(r#"{ distribution = "exponential", mean = "10ms", scale_by = 1.3 }"#).unwrap();
        assert_eq!(scaled.mean_micros(), 13_000.0);
        let unscaled = parse(r#"{ quantiles = { p50 = "20ms", p99 = "250ms" } }"#).unwrap();
        let doubled =
            parse(r#"{ quantiles = { p50 = "20ms", p99 = "250ms" }, scale_by = 2.0 }"#).unwrap();
        assert_eq!(doubled.mean_micros(), 2.0 * unscaled.mean_micros());
        let (mut a, mut b) = (
            Stream::new(9, Purpose::Limit),
            Stream::new(9, Purpose::Limit),
        );
        for _ in 0..1000 {
            let draw = unscaled.sample(&mut a);
            assert_eq!(doubled.sample(&mut b), 2 * draw);
        }
        let written = toml::to_string(&Holder { d: doubled.clone() }).unwrap();
        assert!(written.contains("scale_by = 2.0"), "{written}");
        assert_eq!(toml::from_str::<Holder>(&written).unwrap().d, doubled);
        assert_eq!(
            parse(r#"{ value = "10ms", scale_by = 0 }"#).unwrap_err(),
            "scale_by = 0 is out of range; valid: above 0 and at most 1000, a factor every draw is multiplied by"
        );
    }

    #[test]
    fn sample_means_match_the_declared_mean() {
        let mut stream = Stream::new(3, Purpose::Limit);
        let distributions = [
            Distribution::Exponential {
                mean: Duration::from_ms(2),
            },
            Distribution::Lognormal {
                mean: Duration::from_ms(2),
                sigma: 0.8,
            },
            Distribution::Uniform {
                min: Duration::from_ms(1),
                max: Duration::from_ms(3),
            },
            // Folded where it matters: half its mass would be negative unfolded.
            Distribution::Normal {
                mean: Duration::from_ms(0),
                sd: Duration::from_ms(2),
            },
            Distribution::Normal {
                mean: Duration::from_ms(10),
                sd: Duration::from_ms(2),
            },
        ];
        for distribution in distributions {
            let n = 400_000;
            let mean = (0..n)
                .map(|_| distribution.sample(&mut stream) as f64)
                .sum::<f64>()
                / n as f64;
            // Standard errors are at most ~1.2 * mean / sqrt(n) here (lognormal sigma 0.8):
            // 0.2%; allow 1%.
            let expected = distribution.mean_micros();
            assert!(
                (mean / expected - 1.0).abs() < 0.01,
                "{distribution}: {mean} vs {expected}"
            );
        }
    }

    /// A lognormal given by median and p99 has them: over 400,000 draws the empirical median
    /// and 99th percentile fall within 1% of the declared ones (the standard error of a
    /// sample quantile q is sqrt(q (1 - q) / n) / f(x_q), about 0.2% of the median and 0.6% of
    /// the p99 here); its mean is the closed form `median * exp(sigma^2 / 2)`.
    #[test]
    fn quantiles_are_the_declared_ones() {
        let distribution = Distribution::LognormalQuantiles {
            median: Duration::from_ms(10),
            p99: Duration::from_ms(80),
        };
        let mut stream = Stream::new(5, Purpose::Limit);
        let n = 400_000;
        let mut samples: Vec<u64> = (0..n).map(|_| distribution.sample(&mut stream)).collect();
        samples.sort_unstable();
        let median = samples[n / 2] as f64;
        let p99 = samples[n * 99 / 100] as f64;
        assert!((median / 10_000.0 - 1.0).abs() < 0.01, "median {median}");
        assert!((p99 / 80_000.0 - 1.0).abs() < 0.01, "p99 {p99}");
        let mean = samples.iter().sum::<u64>() as f64 / n as f64;
        assert!(
            (mean / distribution.mean_micros() - 1.0).abs() < 0.01,
            "mean {mean}"
        );
    }

    /// Prometheus's `histogram_quantile` for classic buckets (promql/quantile.go,
    /// `BucketQuantile`), for buckets already sorted and monotonic with `+Inf` last: the rank
    /// `q * count(+Inf)`, the first bucket whose count reaches it, the upper bound of the
    /// second-highest bucket if that is `+Inf`, the first bucket's bound if it is at most 0,
    /// else linear interpolation from the previous bound (0 below the first).
    fn histogram_quantile(q: f64, buckets: &[(f64, f64)]) -> f64 {
        let total = buckets.last().unwrap().1;
        let rank = q * total;
        let b = buckets
            .iter()
            .position(|&(_, count)| count >= rank)
            .unwrap();
        if b == buckets.len() - 1 {
            return buckets[buckets.len() - 2].0;
        }
        if b == 0 && buckets[0].0 <= 0.0 {
            return buckets[0].0;
        }
        let (start, below) = if b == 0 {
            (0.0, 0.0)
        } else {
            (buckets[b - 1].0, buckets[b - 1].1)
        };
        let (end, count) = buckets[b];
        start + (end - start) * (rank - below) / (count - below)
    }

    /// The dashboard of the module docs: p50 20ms, p90 80ms, p99 250ms, p99.9 900ms.
    const DASHBOARD: &str = "{ quantiles = { p50 = \"20ms\", p90 = \"80ms\", p99 = \"250ms\", \"p99.9\" = \"900ms\" } }";

    /// The curve of a quantiles or histogram distribution.
    fn curve_of(distribution: &Distribution) -> &curve::Curve {
        match distribution {
            Distribution::Quantiles(quantiles) => quantiles.curve(),
            Distribution::Histogram(histogram) => histogram.curve(),
            other => panic!("{other} has no curve"),
        }
    }

    /// How far an estimate of the q-quantile from `n` draws may stray, relative to the
    /// quantile `x`: 4.5 standard errors of a sample quantile, `sqrt(q (1 - q) / n) / f(x)`
    /// (the binomial error of the count below `x`, turned into a value by the density), with
    /// the smaller of the densities on either side of `x` (read off the curve), or 1% if that
    /// is more. 4.5 standard errors: the chance of a false failure is below 1e-5.
    fn quantile_tolerance(curve: &curve::Curve, q: f64, n: usize) -> f64 {
        let h = 1e-5;
        let x = curve.inverse(q);
        let density = (h / (x - curve.inverse(q - h))).min(h / (curve.inverse(q + h) - x));
        (4.5 * (q * (1.0 - q) / n as f64).sqrt() / (x * density)).max(0.01)
    }

    /// Quantiles, histogram buckets, samples, mixtures and the Pareto parse, and their
    /// resolved form (the tail's `max` written out) reads back as the same distribution.
    #[test]
    fn table_forms_parse_and_round_trip() {
        let forms = [
            DASHBOARD,
            "{ quantiles = { p0 = \"2ms\", p50 = \"20ms\" }, max = \"1s\" }",
            "{ histogram = [{ le = \"5ms\", count = 10 }, { le = 0.01, count = 30.5 }, { le = \"+Inf\", count = 31 }] }",
            "{ samples = [\"3ms\", 1.5, \"2ms\"], unit = \"ms\" }",
            "{ mixture = [{ weight = 0.9, value = \"2ms\" }, { weight = 0.1, distribution = \"exponential\", mean = \"40ms\" }] }",
            "{ distribution = \"pareto\", scale = \"10ms\", alpha = 2.5 }",
        ];
        for text in forms {
            let parsed = parse(text).unwrap_or_else(|error| panic!("{text}: {error}"));
            let written = toml::to_string(&Holder { d: parsed.clone() }).unwrap();
            assert_eq!(
                toml::from_str::<Holder>(&written).unwrap().d,
                parsed,
                "{written}"
            );
        }
        assert_eq!(
            parse(DASHBOARD).unwrap().to_string(),
            "quantiles p50 20ms, p90 80ms, p99 250ms, p99.9 900ms, Pareto tail a = 1.798 to 9s (mean 46.758ms)"
        );
        let samples = parse("{ samples = [\"3ms\", 1.5, \"2ms\"], unit = \"ms\" }").unwrap();
        assert_eq!(samples.mean_micros(), 6_500.0 / 3.0);
        let pareto = parse("{ distribution = \"pareto\", scale = \"10ms\", alpha = 2.5 }").unwrap();
        assert_eq!(
            pareto.to_string(),
            "pareto, scale 10ms, alpha 2.5, max 10s (mean 16.666ms)"
        );
    }

    #[test]
    fn wrong_table_forms_say_what_is_wrong() {
        let cases = [
            (
                "{ quantiles = { p50 = \"20ms\", p90 = \"10ms\" } }",
                "p90 = 10ms must be above p50 = 20ms",
            ),
            ("{ quantiles = {} }", "at least one quantile"),
            ("{ quantiles = { p100 = \"1s\" } }", "below p100"),
            (
                "{ quantiles = { median = \"1s\" } }",
                "quantile key \"median\"",
            ),
            (
                "{ quantiles = { p50 = \"20ms\" }, max = \"10ms\" }",
                "max 10ms must be above the highest point, 20ms",
            ),
            (
                "{ histogram = [{ le = \"5ms\", count = 10 }, { le = \"10ms\", count = 12 }] }",
                "no `+Inf` bucket",
            ),
            (
                "{ histogram = [{ le = \"5ms\", count = 10 }, { le = \"10ms\", count = 4 }, { le = \"+Inf\", count = 12 }] }",
                "histogram bucket 2 (le = 10ms): le = 10ms counts 4, fewer than the 10 of le = 5ms",
            ),
            ("{ histogram = \"b.csv\" }", "names a file"),
            ("{ samples = [1.5] }", "has no unit"),
            (
                "{ mixture = [{ weight = 1, value = \"2ms\" }, { value = \"3ms\" }] }",
                "mixture component 2 needs a `weight`",
            ),
            (
                "{ mixture = [{ weight = 1, value = \"2ms\" }, { weight = -1, value = \"3ms\" }] }",
                "weight -1 must be a positive number",
            ),
            (
                "{ weight = 1, value = \"2ms\" }",
                "`weight` belongs to the components",
            ),
            (
                "{ quantiles = { p50 = \"20ms\" }, histogram = [] }",
                "does not take `histogram`",
            ),
            (
                "{ distribution = \"pareto\", scale = \"10ms\", alpha = 0.0 }",
                "alpha 0 is out of range",
            ),
            ("{ mean = \"2ms\" }", "takes one of `distribution`"),
        ];
        for (text, expected) in cases {
            let message = parse(text).unwrap_err();
            assert!(message.contains(expected), "{text}: {message}");
        }
    }

    /// The draws of quantiles and of histogram buckets have the declared quantiles: over
    /// 400,000 draws the empirical p50, p90, p99 and p99.9 are within [`quantile_tolerance`]
    /// (1%, or 4.5 standard errors where the density is too thin for 1% to be a bound) of the
    /// declared ones, and the fraction of draws at or below each declared value is within 4.5
    /// binomial standard errors, `sqrt(q (1 - q) / n)`, of its probability.
    #[test]
    fn draws_have_the_declared_quantiles() {
        let histogram = "{ histogram = [{ le = 0.005, count = 120 }, { le = 0.01, count = 410 }, { le = 0.025, count = 700 }, { le = 0.05, count = 850 }, { le = 0.1, count = 930 }, { le = 0.25, count = 975 }, { le = 0.5, count = 991 }, { le = 1, count = 998 }, { le = 2.5, count = 999.5 }, { le = \"+Inf\", count = 1000 }] }";
        let n = 400_000;
        for (seed, text) in [(21, DASHBOARD), (22, histogram)] {
            let distribution = parse(text).unwrap();
            let curve = curve_of(&distribution);
            let mut stream = Stream::new(seed, Purpose::Limit);
            let mut draws: Vec<u64> = (0..n).map(|_| distribution.sample(&mut stream)).collect();
            draws.sort_unstable();
            for q in [0.5, 0.9, 0.99, 0.999] {
                let declared = curve.inverse(q);
                let empirical = draws[(q * n as f64) as usize] as f64;
                let error = (empirical / declared - 1.0).abs();
                let tolerance = quantile_tolerance(curve, q, n);
                assert!(error < tolerance, "{text} q {q}: {empirical} vs {declared}");
                let below = draws.partition_point(|&x| x as f64 <= declared) as f64 / n as f64;
                let bound = 4.5 * (q * (1.0 - q) / n as f64).sqrt();
                assert!((below - q).abs() < bound, "{text} q {q}: F = {below}");
            }
        }
    }

    /// A histogram survives `histogram_quantile` (Prometheus's rule, [`histogram_quantile`]):
    /// the draws, counted into the histogram's own `le` buckets, give within
    /// [`quantile_tolerance`] the quantiles the input gives, at p50, p90, p99 and p99.9; a
    /// quantile in `+Inf` is the second-highest bound in both (p99.99 here), exactly.
    #[test]
    fn histogram_quantile_of_the_draws_gives_back_the_input() {
        let bounds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];
        let counts = [
            120.0, 410.0, 700.0, 850.0, 930.0, 975.0, 991.0, 998.0, 999.5,
        ];
        let rows: Vec<String> = bounds
            .iter()
            .zip(counts)
            .map(|(le, count)| format!("{{ le = {le}, count = {count} }}"))
            .chain(["{ le = \"+Inf\", count = 1000 }".to_string()])
            .collect();
        let distribution = parse(&format!("{{ histogram = [{}] }}", rows.join(", "))).unwrap();
        let mut stream = Stream::new(23, Purpose::Limit);
        let n = 400_000;
        let mut cumulative = vec![0.0; bounds.len() + 1];
        for _ in 0..n {
            let x = distribution.sample(&mut stream) as f64 / 1e6;
            let first = bounds
                .iter()
                .position(|&le| x <= le)
                .unwrap_or(bounds.len());
            for count in &mut cumulative[first..] {
                *count += 1.0;
            }
        }
        let with_inf = |counts: &[f64]| -> Vec<(f64, f64)> {
            bounds
                .iter()
                .copied()
                .chain([f64::INFINITY])
                .zip(counts.iter().copied())
                .collect()
        };
        let input = with_inf(&[&counts[..], &[1000.0]].concat());
        let drawn = with_inf(&cumulative);
        for q in [0.5, 0.9, 0.99, 0.999] {
            let want = histogram_quantile(q, &input);
            let got = histogram_quantile(q, &drawn);
            let tolerance = quantile_tolerance(curve_of(&distribution), q, n);
            assert!(
                (got / want - 1.0).abs() < tolerance,
                "q {q}: {got} vs {want}"
            );
        }
        assert_eq!(histogram_quantile(0.9999, &input), 2.5);
        assert_eq!(histogram_quantile(0.9999, &drawn), 2.5);
    }

    /// The Pareto tail above the highest quantile falls as declared: 400,000 draws from the
    /// dashboard's tail exceed 2 and 4 times its start as often as the truncated Pareto says,
    /// `((x / start)^-a - (start / max)^a) / (1 - (start / max)^a)`, within 4.5 binomial
    /// standard errors, and the slope between them, `log2` of their ratio, is `-a` within the
    /// errors' relative sum (0.02 each, at 2x with a share near 0.28 and at 4x near 0.075,
    /// over ln 2: under 0.05).
    #[test]
    fn the_pareto_tail_falls_with_the_declared_slope() {
        let distribution = parse(DASHBOARD).unwrap();
        let tail = curve_of(&distribution).tail().unwrap().clone();
        let mut stream = Stream::new(24, Purpose::Limit);
        let n = 400_000;
        let draws: Vec<f64> = (0..n).map(|_| tail.inverse(stream.unit())).collect();
        let mut shares = Vec::new();
        for k in [2.0, 4.0] {
            let expected = tail.exceedance_at(k * tail.start) / tail.exceedance;
            let share = draws.iter().filter(|&&x| x > k * tail.start).count() as f64 / n as f64;
            let bound = 4.5 * (expected * (1.0 - expected) / n as f64).sqrt();
            assert!(
                (share - expected).abs() < bound,
                "{k}: {share} vs {expected}"
            );
            shares.push(share);
        }
        let slope = libm::log2(shares[1] / shares[0]);
        let expected =
            libm::log2(tail.exceedance_at(4.0 * tail.start) / tail.exceedance_at(2.0 * tail.start));
        assert!(
            (slope - expected).abs() < 0.05,
            "slope {slope} vs {expected}"
        );
        assert!((tail.alpha - libm::log(10.0) / libm::log(3.6)).abs() < 1e-12);
    }

    /// A named Pareto's draws average to its truncated mean, within 4.5 standard errors of the
    /// mean (`sqrt(var / n)`, the variance from the truncated Pareto's second moment
    /// `a L^a / (1 - (L/H)^a) * (H^(2-a) - L^(2-a)) / (2 - a)`); every draw is at least the
    /// scale and at most max; alpha at or below 1 has a finite mean through the truncation.
    #[test]
    fn a_pareto_has_its_truncated_mean() {
        let distribution =
            parse("{ distribution = \"pareto\", scale = \"10ms\", alpha = 1.5, max = \"1s\" }")
                .unwrap();
        let Distribution::Pareto(tail) = &distribution else {
            panic!()
        };
        let (low, high, a) = (tail.start, tail.max, tail.alpha);
        let kept = 1.0 - libm::pow(low / high, a);
        let second = a * libm::pow(low, a) / kept
            * (libm::pow(high, 2.0 - a) - libm::pow(low, 2.0 - a))
            / (2.0 - a);
        let mean = distribution.mean_micros();
        let n = 400_000;
        let mut stream = Stream::new(25, Purpose::Limit);
        let draws: Vec<u64> = (0..n).map(|_| distribution.sample(&mut stream)).collect();
        assert!(draws.iter().all(|&x| (10_000..=1_000_000).contains(&x)));
        let average = draws.iter().sum::<u64>() as f64 / n as f64;
        let bound = 4.5 * ((second - mean * mean) / n as f64).sqrt();
        assert!((average - mean).abs() < bound, "{average} vs {mean}");
        assert_eq!(distribution.least_mean_micros(), 10_000.0);
        let heavy = parse("{ distribution = \"pareto\", scale = \"10ms\", alpha = 0.8 }").unwrap();
        // 10ms * 0.8 / 0.2 * (1000^0.2 - 1) / (1 - 1000^-0.8) = 119.7195ms.
        assert!(
            (heavy.mean_micros() - 119_719.5).abs() < 1.0,
            "{}",
            heavy.mean_micros()
        );
    }

    /// A mixture draws each component as often as its normalised weight says: weights 3 and 1
    /// over 400,000 draws give the constant 2ms in a share within 4.5 binomial standard
    /// errors (`sqrt(0.75 * 0.25 / n)`) of 0.75, the uniform 10..20ms in the rest; its mean is
    /// the weighted mean, 0.75 * 2ms + 0.25 * 15ms = 5.25ms.
    #[test]
    fn a_mixture_draws_its_components_by_weight() {
        let distribution = parse(
            "{ mixture = [{ weight = 3, value = \"2ms\" }, { weight = 1, distribution = \"uniform\", min = \"10ms\", max = \"20ms\" }] }",
        )
        .unwrap();
        assert_eq!(distribution.mean_micros(), 5_250.0);
        let n = 400_000;
        let mut stream = Stream::new(26, Purpose::Limit);
        let (mut constant, mut uniform) = (0, 0);
        for _ in 0..n {
            match distribution.sample(&mut stream) {
                2_000 => constant += 1,
                10_000..=20_000 => uniform += 1,
                other => panic!("{other} is from neither component"),
            }
        }
        assert_eq!(constant + uniform, n);
        let bound = 4.5 * (0.75 * 0.25 / n as f64).sqrt();
        assert!(
            (constant as f64 / n as f64 - 0.75).abs() < bound,
            "{constant}"
        );
    }
}
