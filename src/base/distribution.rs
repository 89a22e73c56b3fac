//! Distributions of latencies and service times.
//!
//! In a scenario file a distribution is either a duration, meaning a constant (`"10ms"`), or a
//! table naming one: `{ distribution = "exponential", mean = "10ms" }`,
//! `{ distribution = "lognormal", mean = "10ms", sigma = 0.5 }`,
//! `{ distribution = "uniform", min = "5ms", max = "15ms" }`,
//! `{ distribution = "constant", value = "10ms" }`.
//!
//! The lognormal is parameterised by its mean (so that capacity, `workers / mean`, reads
//! directly off the file) and by `sigma`, the standard deviation of its logarithm, which sets
//! the tail: p99 / median is `e^(2.326 sigma)`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::base::random::Random;
use crate::base::time::{Duration, Micros};

/// A distribution of non-negative durations.
#[derive(Debug, Clone, Copy, PartialEq)]
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
}

impl Distribution {
    /// The mean in microseconds.
    pub fn mean_micros(&self) -> f64 {
        match *self {
            Distribution::Constant(value) => value.0 as f64,
            Distribution::Exponential { mean } | Distribution::Lognormal { mean, .. } => {
                mean.0 as f64
            }
            Distribution::LognormalQuantiles { median, p99 } => {
                let sigma = quantile_sigma(median, p99);
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
        }
    }

    /// The least the mean of many draws is likely to come to, in microseconds, for a bound on
    /// how many draws fit in a time: the mean, but the median of a lognormal, whose mean rests
    /// on rare large draws that a run may never make (with sigma 5 the median is 4 millionths
    /// of the mean: a run of a million draws averages far below it).
    pub fn least_mean_micros(&self) -> f64 {
        match *self {
            Distribution::Lognormal { mean, sigma } => {
                mean.0 as f64 * libm::exp(-sigma * sigma / 2.0)
            }
            Distribution::LognormalQuantiles { median, .. } => median.0 as f64,
            _ => self.mean_micros(),
        }
    }

    /// Every draw is zero: a distribution of non-negative values whose mean is zero (a constant
    /// `"0s"`, an exponential of mean 0, a uniform on 0..0). One that is only sometimes zero
    /// after rounding (an exponential of mean 1 µs) is not.
    pub fn is_certainly_zero(&self) -> bool {
        self.mean_micros() == 0.0
    }

    /// One draw, rounded to whole microseconds. A constant draws nothing.
    #[inline]
    pub fn sample(&self, stream: &mut impl Random) -> Micros {
        let value = match *self {
            Distribution::Constant(value) => return value.0,
            Distribution::Exponential { mean } => stream.exponential(mean.0 as f64),
            Distribution::Lognormal { mean, sigma } => {
                let mu = libm::log(mean.0 as f64) - sigma * sigma / 2.0;
                libm::exp(mu + sigma * stream.standard_normal())
            }
            Distribution::LognormalQuantiles { median, p99 } => {
                let sigma = quantile_sigma(median, p99);
                libm::exp(libm::log(median.0 as f64) + sigma * stream.standard_normal())
            }
            Distribution::Uniform { min, max } => {
                min.0 as f64 + (max.0 - min.0) as f64 * stream.unit()
            }
            Distribution::Normal { mean, sd } => {
                (mean.0 as f64 + sd.0 as f64 * stream.standard_normal()).abs()
            }
        };
        // Round half up (values are never negative); `as` saturates, so a sample beyond u64
        // (impossible for sane parameters) stays finite.
        (value + 0.5) as Micros
    }
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
        }
    }
}

/// The table form, as written in a scenario file.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Table {
    distribution: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mean: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sigma: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sd: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    median: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p99: Option<Duration>,
}

/// The 99th percentile of the standard normal distribution.
const Z_99: f64 = 2.326_347_874_040_841;

/// The log-standard-deviation of the lognormal with this median and 99th percentile.
fn quantile_sigma(median: Duration, p99: Duration) -> f64 {
    (libm::log(p99.0 as f64) - libm::log(median.0 as f64)) / Z_99
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Constant,
    Exponential,
    Lognormal,
    Uniform,
    Normal,
}

impl Table {
    fn into_distribution(self) -> Result<Distribution, String> {
        let fields = [
            ("value", self.value.is_some()),
            ("mean", self.mean.is_some()),
            ("sigma", self.sigma.is_some()),
            ("min", self.min.is_some()),
            ("max", self.max.is_some()),
            ("sd", self.sd.is_some()),
            ("median", self.median.is_some()),
            ("p99", self.p99.is_some()),
        ];
        let by_quantiles = self.median.is_some() || self.p99.is_some();
        let (needs, shape): (&[&str], &str) = match self.distribution {
            Kind::Constant => (
                &["value"],
                "{ distribution = \"constant\", value = \"10ms\" }",
            ),
            Kind::Exponential => (
                &["mean"],
                "{ distribution = \"exponential\", mean = \"10ms\" }",
            ),
            Kind::Lognormal if by_quantiles => (
                &["median", "p99"],
                "{ distribution = \"lognormal\", median = \"10ms\", p99 = \"80ms\" } (or mean and sigma)",
            ),
            Kind::Lognormal => (
                &["mean", "sigma"],
                "{ distribution = \"lognormal\", mean = \"10ms\", sigma = 0.5 } (or median and p99)",
            ),
            Kind::Uniform => (
                &["min", "max"],
                "{ distribution = \"uniform\", min = \"5ms\", max = \"15ms\" }",
            ),
            Kind::Normal => (
                &["mean", "sd"],
                "{ distribution = \"normal\", mean = \"10ms\", sd = \"2ms\" }",
            ),
        };
        if let Some((name, _)) = fields
            .iter()
            .find(|(name, present)| *present != needs.contains(name))
        {
            let problem = if needs.contains(name) {
                "needs"
            } else {
                "does not take"
            };
            return Err(format!(
                "this distribution {problem} `{name}`; write {shape}"
            ));
        }
        Ok(match self.distribution {
            Kind::Constant => Distribution::Constant(self.value.expect("checked above")),
            Kind::Exponential => Distribution::Exponential {
                mean: self.mean.expect("checked above"),
            },
            Kind::Lognormal if by_quantiles => {
                let (median, p99) = (
                    self.median.expect("checked above"),
                    self.p99.expect("checked above"),
                );
                if median.0 == 0 || p99 <= median {
                    return Err(format!(
                        "median {median} and p99 {p99}: the median must be above zero and the p99 above the median"
                    ));
                }
                let sigma = quantile_sigma(median, p99);
                if sigma > 5.0 {
                    return Err(format!(
                        "p99 {p99} is more than e^(5 z) = 10^5 times the median {median}; a sigma above 5 is out of range"
                    ));
                }
                Distribution::LognormalQuantiles { median, p99 }
            }
            Kind::Lognormal => {
                let sigma = self.sigma.expect("checked above");
                let mean = self.mean.expect("checked above");
                if !(sigma.is_finite() && (0.0..=5.0).contains(&sigma)) {
                    return Err(format!("sigma {sigma} is out of range; valid: 0 to 5"));
                }
                if mean.0 == 0 {
                    return Err("a lognormal mean must be above zero".into());
                }
                Distribution::Lognormal { mean, sigma }
            }
            Kind::Uniform => {
                let (min, max) = (
                    self.min.expect("checked above"),
                    self.max.expect("checked above"),
                );
                if min > max {
                    return Err(format!("min {min} is above max {max}"));
                }
                Distribution::Uniform { min, max }
            }
            Kind::Normal => Distribution::Normal {
                mean: self.mean.expect("checked above"),
                sd: self.sd.expect("checked above"),
            },
        })
    }
}

impl<'de> Deserialize<'de> for Distribution {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Distribution;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a duration such as \"10ms\" or a table such as { distribution = \"exponential\", mean = \"10ms\" }",
                )
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Distribution, E> {
                text.parse().map(Distribution::Constant).map_err(E::custom)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Distribution, A::Error> {
                let table = Table::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                table.into_distribution().map_err(serde::de::Error::custom)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl Serialize for Distribution {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let empty = Table {
            distribution: Kind::Constant,
            value: None,
            mean: None,
            sigma: None,
            min: None,
            max: None,
            sd: None,
            median: None,
            p99: None,
        };
        let table = match *self {
            Distribution::Constant(value) => return value.serialize(serializer),
            Distribution::Exponential { mean } => Table {
                distribution: Kind::Exponential,
                mean: Some(mean),
                ..empty
            },
            Distribution::Lognormal { mean, sigma } => Table {
                distribution: Kind::Lognormal,
                mean: Some(mean),
                sigma: Some(sigma),
                ..empty
            },
            Distribution::LognormalQuantiles { median, p99 } => Table {
                distribution: Kind::Lognormal,
                median: Some(median),
                p99: Some(p99),
                ..empty
            },
            Distribution::Uniform { min, max } => Table {
                distribution: Kind::Uniform,
                min: Some(min),
                max: Some(max),
                ..empty
            },
            Distribution::Normal { mean, sd } => Table {
                distribution: Kind::Normal,
                mean: Some(mean),
                sd: Some(sd),
                ..empty
            },
        };
        table.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::random::{Purpose, Stream};

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
            assert_eq!(parse(text), Ok(expected), "{text}");
            let written = toml::to_string(&Holder { d: expected }).unwrap();
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
}
