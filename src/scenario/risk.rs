//! `[risk]`, `[uncertain]` and `[map]`: how likely an outcome is, over seeds and over what the
//! user does not know, and where in a plane of two settings a system stops recovering.
//!
//! One run answers "what happens on this seed". A metastable collapse is a matter of chance
//! (the same trigger tips a system over on some days and not on others), and an SRE is rarely
//! sure of the inputs (40 or 60 database connections? p99 250 or 400 ms?). So:
//!
//! - `[risk] replications = N` runs every policy on N seeds, the same N for every policy
//!   (common random numbers), and reports probabilities with exact intervals. A claim with a
//!   `probability` needs it.
//! - `[uncertain]` names `--set` keys with a distribution of values, drawn once per
//!   replication by Latin hypercube sampling, so that the probabilities cover the inputs as well
//!   as chance.
//! - `[map]` names two axes (`KEY=LOW..HIGH/N` or `KEY=V1,V2,...`) for `retrystorm map`, and
//!   claims about the maps of the policies (`[[map.expect]]`).
//!
//! This module reads and checks them; the sampling is in [`super::uncertain`], which sweeps
//! use too, and the studies are in `crate::risk`, above the engine.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::base::time::Duration;
use crate::base::values::{Bounded, Probability};

/// The most replications of one study: [`crate::sweep::MAX_SIMULATIONS`] runs of one policy.
pub const MAX_REPLICATIONS: u64 = 100_000;

/// `[risk]`: replicate every policy over seeds.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RiskSpec {
    /// Runs of every policy, on seeds derived from the scenario's (the first is its own).
    pub replications: Bounded<2, MAX_REPLICATIONS>,
}

/// What the user is unsure of, by `--set` key, in the order of the keys.
pub type Uncertain = BTreeMap<String, Spanned<UncertainInput>>;

/// One uncertain input's distribution. Numbers and durations (`"250ms"`) are accepted wherever
/// a value is; the two ends of a range are of one kind.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum UncertainInput {
    /// `{ uniform = [LOW, HIGH] }`: every value between equally likely; two integers draw
    /// integers (both ends included).
    Uniform(Vec<toml::Value>),
    /// `{ normal = { mean, sd, min?, max? } }`, clipped to `[min, max]` (a duration to at
    /// least 0).
    Normal {
        /// The mean.
        mean: toml::Value,
        /// The standard deviation, above 0.
        sd: toml::Value,
        /// Draws below are raised to it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<toml::Value>,
        /// Draws above are lowered to it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<toml::Value>,
    },
    /// `{ lognormal = { median, p95 } }`: positive, skewed to the right, as latencies and
    /// sizes are; the log's standard deviation is `ln(p95 / median) / 1.6449`.
    Lognormal {
        /// The median, above 0.
        median: toml::Value,
        /// The 95th percentile, above the median.
        p95: toml::Value,
    },
    /// `{ choices = [A, B, ...] }`: one of the values, each equally likely.
    Choices(Vec<toml::Value>),
}

/// A number or a duration of an uncertain input, read from its TOML value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Amount {
    /// A TOML integer.
    Integer(i64),
    /// A TOML float.
    Number(f64),
    /// A duration string.
    Duration(Duration),
}

impl Amount {
    /// Reads `value` (named `what` in the error).
    pub fn read(value: &toml::Value, what: &str) -> Result<Amount, String> {
        match value {
            toml::Value::Integer(integer) => Ok(Amount::Integer(*integer)),
            toml::Value::Float(number) if number.is_finite() => Ok(Amount::Number(*number)),
            toml::Value::String(text) => {
                text.parse::<Duration>().map(Amount::Duration).map_err(|_| {
                    format!("{what} {text:?} is neither a number nor a duration such as \"250ms\"")
                })
            }
            other => Err(format!(
                "{what} {other} is neither a number nor a duration such as \"250ms\""
            )),
        }
    }

    /// The amount as a number: a duration in microseconds.
    pub fn value(self) -> f64 {
        match self {
            Amount::Integer(integer) => integer as f64,
            Amount::Number(number) => number,
            Amount::Duration(duration) => duration.micros() as f64,
        }
    }

    /// Whether `self` and `other` are of one kind (integers and floats are both numbers).
    fn same_kind(self, other: Amount) -> bool {
        matches!(
            (self, other),
            (Amount::Duration(_), Amount::Duration(_))
                | (
                    Amount::Integer(_) | Amount::Number(_),
                    Amount::Integer(_) | Amount::Number(_)
                )
        )
    }
}

/// How an uncertain input's draws are written as `--set` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Whole numbers.
    Integer,
    /// Numbers.
    Number,
    /// Durations, in whole microseconds.
    Duration,
}

impl Written {
    /// The text of `value` (a duration in microseconds) as a `--set` value.
    pub fn text(self, value: f64) -> String {
        match self {
            Written::Integer => format!("{}", value.round() as i64),
            Written::Number => format!("{value}"),
            Written::Duration => format!("{}us", value.round().max(0.0) as u64),
        }
    }
}

impl UncertainInput {
    /// Checks the distribution's parameters, and says how its draws are written (`None` for
    /// choices, written as they are).
    pub fn check(&self) -> Result<Option<Written>, String> {
        match self {
            UncertainInput::Uniform(ends) => {
                let [low, high] = ends.as_slice() else {
                    return Err(format!(
                        "uniform takes two values, [LOW, HIGH]; it has {}",
                        ends.len()
                    ));
                };
                let (low, high) = (Amount::read(low, "LOW")?, Amount::read(high, "HIGH")?);
                if !low.same_kind(high) {
                    return Err("LOW and HIGH must both be numbers or both durations".to_string());
                }
                if low.value() >= high.value() {
                    return Err(format!(
                        "LOW must be below HIGH ({} is not below {}); a value you are sure of goes in the scenario, not in [uncertain]",
                        low.value(),
                        high.value()
                    ));
                }
                Ok(Some(written(&[low, high])))
            }
            UncertainInput::Normal { mean, sd, min, max } => {
                let (mean, sd) = (Amount::read(mean, "mean")?, Amount::read(sd, "sd")?);
                let bounds = [
                    min.as_ref().map(|v| Amount::read(v, "min")).transpose()?,
                    max.as_ref().map(|v| Amount::read(v, "max")).transpose()?,
                ];
                let all: Vec<Amount> = [mean, sd]
                    .into_iter()
                    .chain(bounds.into_iter().flatten())
                    .collect();
                if all.iter().any(|amount| !amount.same_kind(mean)) {
                    return Err("mean, sd, min and max must all be numbers or all durations".into());
                }
                if sd.value() <= 0.0 {
                    return Err("sd must be above 0".into());
                }
                if let [Some(min), Some(max)] = bounds
                    && min.value() >= max.value()
                {
                    return Err("min must be below max".into());
                }
                Ok(Some(written(&[mean, sd])))
            }
            UncertainInput::Lognormal { median, p95 } => {
                let (median, p95) = (Amount::read(median, "median")?, Amount::read(p95, "p95")?);
                if !median.same_kind(p95) {
                    return Err("median and p95 must both be numbers or both durations".into());
                }
                if median.value() <= 0.0 || p95.value() <= median.value() {
                    return Err("a lognormal needs 0 < median < p95".into());
                }
                Ok(Some(written(&[median, p95])))
            }
            UncertainInput::Choices(choices) => {
                if choices.len() < 2 {
                    return Err("choices needs at least two values".into());
                }
                Ok(None)
            }
        }
    }
}

/// How draws of a distribution with the parameters `amounts` are written: durations as
/// durations; whole numbers if every parameter is an integer, else numbers.
fn written(amounts: &[Amount]) -> Written {
    if amounts.iter().any(|a| matches!(a, Amount::Duration(_))) {
        Written::Duration
    } else if amounts.iter().all(|a| matches!(a, Amount::Integer(_))) {
        Written::Integer
    } else {
        Written::Number
    }
}

impl fmt::Display for UncertainInput {
    /// As the report shows it: `uniform 16 to 24`, `lognormal median 250ms, p95 400ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = |value: &toml::Value| match value {
            toml::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        match self {
            UncertainInput::Uniform(ends) => {
                let ends: Vec<String> = ends.iter().map(text).collect();
                write!(f, "uniform {}", ends.join(" to "))
            }
            UncertainInput::Normal { mean, sd, min, max } => {
                write!(f, "normal mean {}, sd {}", text(mean), text(sd))?;
                if let Some(min) = min {
                    write!(f, ", min {}", text(min))?;
                }
                if let Some(max) = max {
                    write!(f, ", max {}", text(max))?;
                }
                Ok(())
            }
            UncertainInput::Lognormal { median, p95 } => {
                write!(f, "lognormal median {}, p95 {}", text(median), text(p95))
            }
            UncertainInput::Choices(choices) => {
                let choices: Vec<String> = choices.iter().map(text).collect();
                write!(f, "one of {}", choices.join(", "))
            }
        }
    }
}

/// `[map]`: the plane `retrystorm map` draws, and what it claims.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MapSpec {
    /// The horizontal axis, `KEY=LOW..HIGH/N` or `KEY=V1,V2,...`.
    pub x: Spanned<String>,
    /// The vertical axis, as `x`.
    pub y: Spanned<String>,
    /// The most replications of a cell (default 16).
    #[serde(default = "default_map_replications")]
    pub replications: Bounded<1, 10_000>,
    /// The replications every cell gets first; a cell gets more, up to `replications`, while
    /// its probability of recovering is not known to be on one side of 1/2 (default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replications: Option<Bounded<1, 10_000>>,
    /// Claims about the policies' maps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<Spanned<MapExpect>>,
}

fn default_map_replications() -> Bounded<1, 10_000> {
    Bounded(16)
}

/// The metrics of a map, for `[[map.expect]]`: each is higher for the better policy.
pub const MAP_METRICS: [(&str, &str); 2] = [
    (
        "stable_share",
        "the share of the map's cells where the system recovers in at least half the runs",
    ),
    (
        "recovery_probability",
        "the probability of recovering, averaged over the map's cells",
    ),
];

/// `[[map.expect]]`: a claim about one policy's map, against another's or a bound. Exactly one
/// of `better_than`, `at_least` and `at_most`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MapExpect {
    /// The policy the claim is about.
    pub policy: String,
    /// One of [`MAP_METRICS`].
    pub metric: String,
    /// The policy's map beats this one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub better_than: Option<String>,
    /// With `better_than`: by more than this much (an absolute difference of the shares).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin: Option<Probability>,
    /// The metric is at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_least: Option<Probability>,
    /// The metric is at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_most: Option<Probability>,
    /// Why the lesson says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// The most values of one map axis.
pub const MAX_MAP_VALUES: usize = 100;

/// One axis of a map: the keys it sets (one, or several set to the same value, as the two
/// points of a step in a curve) and its values, low to high as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapAxis {
    /// Dotted `--set` keys, set together.
    pub keys: Vec<String>,
    /// The values as `--set` takes them.
    pub values: Vec<String>,
    /// Each value as a number, for the charts (a duration in seconds); `None` for a list of
    /// values that are not all numbers.
    pub numbers: Option<Vec<f64>>,
}

impl MapAxis {
    /// The keys as written, joined by `+`.
    pub fn label(&self) -> String {
        self.keys.join("+")
    }
}

impl std::str::FromStr for MapAxis {
    type Err = String;

    /// `KEY=LOW..HIGH/N` (N evenly spaced values, both ends included), or `KEY=V1,V2,...`;
    /// several keys joined by `+` are set to the same value.
    fn from_str(text: &str) -> Result<MapAxis, String> {
        let Some((keys, values)) = text.split_once('=') else {
            return Err(format!(
                "{text:?} is not KEY=LOW..HIGH/N or KEY=V1,V2,...; write for example clients.rate=0.5..1.5/11"
            ));
        };
        let keys: Vec<String> = keys.split('+').map(|key| key.trim().to_string()).collect();
        if keys.iter().any(String::is_empty) {
            return Err(format!(
                "{text:?}: a key is empty; write KEY or KEY1+KEY2 before '='"
            ));
        }
        let values = values.trim();
        let (values, numbers) = match values.split_once("..") {
            Some((low, rest)) => {
                let (values, numbers) = linear_range(low.trim(), rest.trim())?;
                (values, Some(numbers))
            }
            None => {
                let values: Vec<String> = values
                    .split(',')
                    .map(|value| value.trim().to_string())
                    .collect();
                if values.iter().any(String::is_empty) {
                    return Err(format!("{text:?}: a value is empty"));
                }
                let numbers = values.iter().map(|value| number_of(value)).collect();
                (values, numbers)
            }
        };
        if values.len() > MAX_MAP_VALUES {
            return Err(format!(
                "{text:?} has {} values; at most {MAX_MAP_VALUES}",
                values.len()
            ));
        }
        Ok(MapAxis {
            keys,
            values,
            numbers,
        })
    }
}

/// A value as a number: a number, or a duration in seconds.
fn number_of(value: &str) -> Option<f64> {
    value
        .parse::<f64>()
        .ok()
        .filter(|number| number.is_finite())
        .or_else(|| value.parse::<Duration>().ok().map(Duration::as_secs_f64))
}

/// `LOW..HIGH/N`: the values as text and as numbers.
fn linear_range(low: &str, rest: &str) -> Result<(Vec<String>, Vec<f64>), String> {
    let form =
        "write LOW..HIGH/N, N values from LOW to HIGH, for example 0.5..1.5/11 or 1s..10s/10";
    let Some((high, count)) = rest.split_once('/') else {
        return Err(format!(
            "{low}..{rest}: the number of values is missing; {form}"
        ));
    };
    let (high, count) = (high.trim(), count.trim());
    let count: usize = count
        .parse()
        .ok()
        .filter(|count| (2..=MAX_MAP_VALUES).contains(count))
        .ok_or_else(|| {
            format!("{low}..{rest}: N must be an integer from 2 to {MAX_MAP_VALUES}; {form}")
        })?;
    let step = |a: f64, b: f64, i: usize| a + (b - a) * i as f64 / (count - 1) as f64;
    match (low.parse::<Duration>(), high.parse::<Duration>()) {
        (Ok(a), Ok(b)) if a < b => {
            let (a, b) = (a.micros() as f64, b.micros() as f64);
            let micros: Vec<u64> = (0..count).map(|i| step(a, b, i).round() as u64).collect();
            Ok((
                micros.iter().map(|us| Duration(*us).to_string()).collect(),
                micros.iter().map(|us| *us as f64 / 1e6).collect(),
            ))
        }
        _ => {
            let (Ok(a), Ok(b)) = (low.parse::<f64>(), high.parse::<f64>()) else {
                return Err(format!(
                    "{low}..{high}: the ends must be two numbers or two durations; {form}"
                ));
            };
            if !(a.is_finite() && b.is_finite() && a < b) {
                return Err(format!("{low}..{high}: LOW must be below HIGH; {form}"));
            }
            let integers = low.parse::<i64>().is_ok() && high.parse::<i64>().is_ok();
            if integers && (b - a) % (count - 1) as f64 != 0.0 {
                return Err(format!(
                    "{low}..{high}/{count}: the ends are integers, and {count} values from {low} to {high} are not all whole; choose N so that N - 1 divides {}",
                    b - a
                ));
            }
            let numbers: Vec<f64> = (0..count)
                .map(|i| {
                    let value = step(a, b, i);
                    // Twelve significant digits, so that 0.1 steps read 0.3 and not 0.30000000000000004.
                    format!("{value:.12e}").parse::<f64>().unwrap_or(value)
                })
                .collect();
            Ok((
                numbers.iter().map(|value| format!("{value}")).collect(),
                numbers,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_axes_take_ranges_lists_and_tied_keys() {
        let axis: MapAxis = "clients.rate=0.5..1.5/11".parse().unwrap();
        assert_eq!(axis.keys, ["clients.rate"]);
        assert_eq!(axis.values[0], "0.5");
        assert_eq!(axis.values[3], "0.8");
        assert_eq!(axis.values[10], "1.5");
        let axis: MapAxis = "clients.load.2.at+clients.load.3.at=11s..20s/10"
            .parse()
            .unwrap();
        assert_eq!(axis.keys, ["clients.load.2.at", "clients.load.3.at"]);
        assert_eq!(axis.values.first().unwrap(), "11s");
        assert_eq!(axis.numbers.as_ref().unwrap()[9], 20.0);
        let axis: MapAxis = "upstream.workers=10..20/6".parse().unwrap();
        assert_eq!(axis.values, ["10", "12", "14", "16", "18", "20"]);
        let axis: MapAxis = "policy.jitter=none,full".parse().unwrap();
        assert_eq!(axis.numbers, None);
        for (bad, says) in [
            ("upstream.workers=10..20/4", "not all whole"),
            ("clients.rate=1..0.5/3", "LOW must be below HIGH"),
            ("clients.rate=0.5..1.5", "number of values is missing"),
            ("clients.rate=0.5..1.5/1", "from 2 to 100"),
            ("clients.rate=a..b/3", "two numbers or two durations"),
            ("=1,2", "a key is empty"),
            ("clients.rate", "not KEY="),
        ] {
            let error = bad.parse::<MapAxis>().unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn uncertain_inputs_check_their_parameters() {
        let read = |text: &str| -> UncertainInput {
            let table: toml::Table = toml::from_str(&format!("x = {text}")).unwrap();
            table["x"].clone().try_into().unwrap()
        };
        assert_eq!(
            read("{ uniform = [16, 24] }").check(),
            Ok(Some(Written::Integer))
        );
        assert_eq!(
            read("{ uniform = [0.5, 2] }").check(),
            Ok(Some(Written::Number))
        );
        assert_eq!(
            read("{ lognormal = { median = \"250ms\", p95 = \"400ms\" } }").check(),
            Ok(Some(Written::Duration))
        );
        assert_eq!(read("{ choices = [\"fifo\", \"lifo\"] }").check(), Ok(None));
        for (bad, says) in [
            ("{ uniform = [3] }", "two values"),
            ("{ uniform = [3, 1] }", "below HIGH"),
            (
                "{ uniform = [1, \"2s\"] }",
                "both be numbers or both durations",
            ),
            ("{ normal = { mean = 1, sd = 0 } }", "sd must be above 0"),
            (
                "{ lognormal = { median = 2, p95 = 1 } }",
                "0 < median < p95",
            ),
            ("{ choices = [1] }", "at least two"),
            (
                "{ uniform = [\"fast\", \"slow\"] }",
                "neither a number nor a duration",
            ),
        ] {
            let error = read(bad).check().unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
        assert_eq!(Written::Duration.text(1500.4), "1500us");
        assert_eq!(Written::Integer.text(16.6), "17");
    }
}
