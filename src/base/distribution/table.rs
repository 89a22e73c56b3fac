//! The table form of a distribution, as a scenario file writes it, and its checks.
//!
//! A table takes one form, chosen by its key: `distribution` (a named, parametric one),
//! `quantiles`, `histogram`, `samples`, `mixture`, or `value` alone (a constant, as a
//! mixture's component most naturally writes one); every other key must belong to that form,
//! and an error says which key does not and what to write. A mixture's components are tables
//! of the same form with a `weight`. Every form may add `scale_by`, a factor on every draw.
//!
//! `histogram` and `samples` may name a file (`histogram = "latency-buckets.csv"`): the
//! scenario loader reads it, relative to the scenario file, and writes its contents inline
//! before the scenario is read (`crate::scenario::data_files`), so a table naming a file is
//! refused here, where no scenario is being loaded. The resolved form is always inline: a
//! resolved scenario reloads without the files.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::base::time::Duration;

use super::buckets::{Bucket, Histogram, bound, parse_bound};
use super::curve::Tail;
use super::quantiles::Quantiles;
use super::samples::{Samples, Unit};
use super::{Distribution, MAX_SCALE_BY, Mixture, PARETO_DEFAULT_FACTOR, Scaled, quantile_sigma};

/// The most components of a mixture.
pub const MAX_COMPONENTS: usize = 100;

/// The table form, as written in a scenario file.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Table {
    #[serde(skip_serializing_if = "Option::is_none")]
    weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    distribution: Option<Kind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    quantiles: Option<QuantileTable>,
    #[serde(skip_serializing_if = "Option::is_none")]
    histogram: Option<Data<BucketRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    samples: Option<Data<SampleValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unit: Option<Unit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mixture: Option<Vec<Table>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scale: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    alpha: Option<f64>,
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
    /// Any form: every draw times this.
    #[serde(skip_serializing_if = "Option::is_none")]
    scale_by: Option<f64>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Constant,
    Exponential,
    Lognormal,
    Uniform,
    Normal,
    Pareto,
}

/// `quantiles = { p50 = "20ms", "p99.9" = "900ms" }`, kept in the order written (and written
/// back by rising probability).
#[derive(Debug, Default)]
struct QuantileTable(Vec<(String, Duration)>);

impl<'de> Deserialize<'de> for QuantileTable {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = QuantileTable;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table of quantiles such as { p50 = \"20ms\", p99 = \"250ms\" }")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<QuantileTable, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, Duration>()? {
                    entries.push(entry);
                }
                Ok(QuantileTable(entries))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

impl Serialize for QuantileTable {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A `histogram` or `samples` value: a file's name (read by the scenario loader), or the data
/// inline.
#[derive(Debug)]
enum Data<T> {
    File(String),
    Inline(Vec<T>),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Data<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visitor<T> {
            type Value = Data<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the name of a file, or an array")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Data<T>, E> {
                Ok(Data::File(text.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Data<T>, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Data::Inline(items))
            }
        }
        deserializer.deserialize_any(Visitor(std::marker::PhantomData))
    }
}

impl<T: Serialize> Serialize for Data<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Data::File(name) => name.serialize(serializer),
            Data::Inline(items) => items.serialize(serializer),
        }
    }
}

/// `{ le = "5ms", count = 120 }`: `le` a duration, a bare number of seconds, or `"+Inf"`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BucketRow {
    le: Bound,
    count: f64,
}

impl Serialize for BucketRow {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut row = serializer.serialize_struct("BucketRow", 2)?;
        row.serialize_field("le", &bound(self.le.0))?;
        // A whole count is written as an integer, as it was most likely given.
        if self.count.fract() == 0.0 && self.count < 9e15 {
            row.serialize_field("count", &(self.count as u64))?;
        } else {
            row.serialize_field("count", &self.count)?;
        }
        row.end()
    }
}

/// A bucket's bound, `None` for `+Inf`.
#[derive(Debug)]
struct Bound(Option<Duration>);

impl<'de> Deserialize<'de> for Bound {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Bound;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a bound such as \"5ms\", 0.005 (seconds) or \"+Inf\"")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Bound, E> {
                parse_bound(text).map(Bound).map_err(E::custom)
            }
            fn visit_f64<E: serde::de::Error>(self, number: f64) -> Result<Bound, E> {
                self.visit_str(&number.to_string())
            }
            fn visit_i64<E: serde::de::Error>(self, number: i64) -> Result<Bound, E> {
                self.visit_str(&number.to_string())
            }
            fn visit_u64<E: serde::de::Error>(self, number: u64) -> Result<Bound, E> {
                self.visit_str(&number.to_string())
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// One sample inline: a duration (`"12.5ms"`), or a number in the table's `unit`.
#[derive(Debug)]
enum SampleValue {
    Duration(Duration),
    Number(f64),
}

impl<'de> Deserialize<'de> for SampleValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = SampleValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as \"12.5ms\", or a number in the table's `unit`")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<SampleValue, E> {
                text.parse().map(SampleValue::Duration).map_err(E::custom)
            }
            fn visit_f64<E: serde::de::Error>(self, number: f64) -> Result<SampleValue, E> {
                Ok(SampleValue::Number(number))
            }
            fn visit_i64<E: serde::de::Error>(self, number: i64) -> Result<SampleValue, E> {
                Ok(SampleValue::Number(number as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, number: u64) -> Result<SampleValue, E> {
                Ok(SampleValue::Number(number as f64))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl Serialize for SampleValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SampleValue::Duration(value) => value.serialize(serializer),
            SampleValue::Number(number) => number.serialize(serializer),
        }
    }
}

/// What a file form says where no scenario reads it.
fn file_refused(key: &str, name: &str) -> String {
    format!(
        "{key} = {name:?} names a file, which is read only in a scenario file (relative to it); give the {key} inline here"
    )
}

impl Table {
    /// Whether each key is present, by name.
    fn present(&self) -> [(&'static str, bool); 16] {
        [
            ("distribution", self.distribution.is_some()),
            ("quantiles", self.quantiles.is_some()),
            ("histogram", self.histogram.is_some()),
            ("samples", self.samples.is_some()),
            ("unit", self.unit.is_some()),
            ("mixture", self.mixture.is_some()),
            ("scale", self.scale.is_some()),
            ("alpha", self.alpha.is_some()),
            ("value", self.value.is_some()),
            ("mean", self.mean.is_some()),
            ("sigma", self.sigma.is_some()),
            ("min", self.min.is_some()),
            ("max", self.max.is_some()),
            ("sd", self.sd.is_some()),
            ("median", self.median.is_some()),
            ("p99", self.p99.is_some()),
        ]
    }

    /// The keys this table's form needs and may take, and how to write it.
    fn form(
        &self,
    ) -> Result<
        (
            &'static [&'static str],
            &'static [&'static str],
            &'static str,
        ),
        String,
    > {
        let by_quantiles = self.median.is_some() || self.p99.is_some();
        Ok(match self.distribution {
            Some(Kind::Constant) => (
                &["distribution", "value"],
                &[],
                "{ distribution = \"constant\", value = \"10ms\" }",
            ),
            Some(Kind::Exponential) => (
                &["distribution", "mean"],
                &[],
                "{ distribution = \"exponential\", mean = \"10ms\" }",
            ),
            Some(Kind::Lognormal) if by_quantiles => (
                &["distribution", "median", "p99"],
                &[],
                "{ distribution = \"lognormal\", median = \"10ms\", p99 = \"80ms\" } (or mean and sigma)",
            ),
            Some(Kind::Lognormal) => (
                &["distribution", "mean", "sigma"],
                &[],
                "{ distribution = \"lognormal\", mean = \"10ms\", sigma = 0.5 } (or median and p99)",
            ),
            Some(Kind::Uniform) => (
                &["distribution", "min", "max"],
                &[],
                "{ distribution = \"uniform\", min = \"5ms\", max = \"15ms\" }",
            ),
            Some(Kind::Normal) => (
                &["distribution", "mean", "sd"],
                &[],
                "{ distribution = \"normal\", mean = \"10ms\", sd = \"2ms\" }",
            ),
            Some(Kind::Pareto) => (
                &["distribution", "scale", "alpha"],
                &["max"],
                "{ distribution = \"pareto\", scale = \"10ms\", alpha = 2.5 } (max optional)",
            ),
            None if self.quantiles.is_some() => (
                &["quantiles"],
                &["min", "max"],
                "{ quantiles = { p50 = \"20ms\", p99 = \"250ms\" } } (min and max optional)",
            ),
            None if self.histogram.is_some() => (
                &["histogram"],
                &["max"],
                "{ histogram = [{ le = \"5ms\", count = 10 }, { le = \"+Inf\", count = 12 }] } or { histogram = \"buckets.csv\" } (max optional)",
            ),
            None if self.samples.is_some() => (
                &["samples"],
                &["unit"],
                "{ samples = \"latencies.txt\" } or { samples = [\"12ms\", \"15ms\"] } (unit optional)",
            ),
            None if self.mixture.is_some() => (
                &["mixture"],
                &[],
                "{ mixture = [{ weight = 0.9, value = \"2ms\" }, { weight = 0.1, distribution = \"exponential\", mean = \"40ms\" }] }",
            ),
            None if self.value.is_some() => (&["value"], &[], "{ value = \"10ms\" }"),
            None => {
                return Err(
                    "a distribution table takes one of `distribution` (as { distribution = \"exponential\", mean = \"10ms\" }), `quantiles`, `histogram`, `samples`, `mixture` or `value`".into(),
                );
            }
        })
    }

    /// The distribution this table describes, with its `weight` if it has one.
    fn into_weighted(mut self) -> Result<(Option<f64>, Distribution), String> {
        let weight = self.weight.take();
        Ok((weight, self.into_distribution()?))
    }

    /// The distribution this table describes (without a `weight`).
    pub(super) fn into_distribution(mut self) -> Result<Distribution, String> {
        if self.weight.is_some() {
            return Err("`weight` belongs to the components of a `mixture`".into());
        }
        if let Some(factor) = self.scale_by.take() {
            if !(factor > 0.0 && factor <= MAX_SCALE_BY) {
                return Err(format!(
                    "scale_by = {factor} is out of range; valid: above 0 and at most {MAX_SCALE_BY}, a factor every draw is multiplied by"
                ));
            }
            let inner = self.into_distribution()?;
            return Ok(Distribution::Scaled(Arc::new(Scaled { factor, inner })));
        }
        let (needs, optional, shape) = self.form()?;
        if let Some((name, present)) = self
            .present()
            .into_iter()
            .find(|(name, present)| *present != needs.contains(name) && !optional.contains(name))
        {
            let problem = if present { "does not take" } else { "needs" };
            return Err(format!(
                "this distribution {problem} `{name}`; write {shape}"
            ));
        }
        let by_quantiles = self.median.is_some() || self.p99.is_some();
        Ok(match self.distribution {
            Some(Kind::Constant) => Distribution::Constant(self.value.expect("checked above")),
            Some(Kind::Exponential) => Distribution::Exponential {
                mean: self.mean.expect("checked above"),
            },
            Some(Kind::Lognormal) if by_quantiles => {
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
            Some(Kind::Lognormal) => {
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
            Some(Kind::Uniform) => {
                let (min, max) = (
                    self.min.expect("checked above"),
                    self.max.expect("checked above"),
                );
                if min > max {
                    return Err(format!("min {min} is above max {max}"));
                }
                Distribution::Uniform { min, max }
            }
            Some(Kind::Normal) => Distribution::Normal {
                mean: self.mean.expect("checked above"),
                sd: self.sd.expect("checked above"),
            },
            Some(Kind::Pareto) => pareto(
                self.scale.expect("checked above"),
                self.alpha.expect("checked above"),
                self.max,
            )?,
            None => {
                if let Some(QuantileTable(written)) = self.quantiles {
                    let quantiles = Quantiles::new(written, self.min, self.max)?;
                    Distribution::Quantiles(Arc::new(quantiles))
                } else if let Some(histogram) = self.histogram {
                    let rows = match histogram {
                        Data::File(name) => return Err(file_refused("histogram", &name)),
                        Data::Inline(rows) => rows,
                    };
                    let buckets = rows
                        .iter()
                        .map(|row| Bucket {
                            le: row.le.0,
                            count: row.count,
                        })
                        .collect();
                    let histogram =
                        Histogram::new(buckets, self.max).map_err(|error| match error.bucket {
                            Some(index) => format!(
                                "histogram bucket {} (le = {}): {}",
                                index + 1,
                                bound(rows[index].le.0),
                                error.message
                            ),
                            None => format!("histogram: {}", error.message),
                        })?;
                    Distribution::Histogram(Arc::new(histogram))
                } else if let Some(samples) = self.samples {
                    let values = match samples {
                        Data::File(name) => return Err(file_refused("samples", &name)),
                        Data::Inline(values) => values,
                    };
                    let micros = values
                        .into_iter()
                        .map(|value| match (value, self.unit) {
                            (SampleValue::Duration(value), _) => Ok(value.0),
                            (SampleValue::Number(number), Some(unit)) => {
                                super::buckets::bare_or_duration(
                                    &number.to_string(),
                                    unit.micros(),
                                )
                                .map(|value| value.0)
                            }
                            (SampleValue::Number(number), None) => Err(format!(
                                "sample {number} has no unit: write it as a duration (\"12.5ms\"), or give the table a `unit` (\"us\", \"ms\" or \"s\")"
                            )),
                        })
                        .collect::<Result<Vec<_>, String>>()?;
                    Distribution::Samples(Arc::new(Samples::new(micros)?))
                } else if let Some(components) = self.mixture {
                    mixture(components)?
                } else {
                    Distribution::Constant(self.value.expect("the form is `value`"))
                }
            }
        })
    }
}

/// A Pareto from `scale` with index `alpha`, cut at `max` (by default
/// [`PARETO_DEFAULT_FACTOR`] times the scale).
fn pareto(scale: Duration, alpha: f64, max: Option<Duration>) -> Result<Distribution, String> {
    if !(alpha.is_finite() && alpha > 0.0 && alpha <= 100.0) {
        return Err(format!(
            "alpha {alpha} is out of range; valid: above 0, at most 100"
        ));
    }
    if scale.0 == 0 {
        return Err("a Pareto's scale (its least value) must be above zero".into());
    }
    let max = max.unwrap_or(Duration(scale.0.saturating_mul(PARETO_DEFAULT_FACTOR)));
    if max <= scale {
        return Err(format!("max {max} must be above the scale, {scale}"));
    }
    Ok(Distribution::Pareto(Arc::new(Tail {
        start: scale.0 as f64,
        exceedance: 1.0,
        alpha,
        max: max.0 as f64,
    })))
}

/// A mixture of `components`, each a table with a positive `weight`.
fn mixture(components: Vec<Table>) -> Result<Distribution, String> {
    if components.len() < 2 || components.len() > MAX_COMPONENTS {
        return Err(format!(
            "a mixture has 2 to {MAX_COMPONENTS} components; this one has {}",
            components.len()
        ));
    }
    let mut weighted = Vec::with_capacity(components.len());
    for (index, component) in components.into_iter().enumerate() {
        let place = index + 1;
        let (weight, distribution) = component
            .into_weighted()
            .map_err(|message| format!("mixture component {place}: {message}"))?;
        let weight = weight.ok_or_else(|| {
            format!("mixture component {place} needs a `weight` (any positive number: weights are normalised)")
        })?;
        if !(weight.is_finite() && weight > 0.0) {
            return Err(format!(
                "mixture component {place}: weight {weight} must be a positive number"
            ));
        }
        weighted.push((weight, distribution));
    }
    Ok(Distribution::Mixture(Arc::new(Mixture::new(weighted))))
}

impl Distribution {
    /// This distribution as a table (a constant as `{ value = ... }`).
    fn table(&self) -> Table {
        match self {
            Distribution::Constant(value) => Table {
                value: Some(*value),
                ..Table::default()
            },
            Distribution::Exponential { mean } => Table {
                distribution: Some(Kind::Exponential),
                mean: Some(*mean),
                ..Table::default()
            },
            Distribution::Lognormal { mean, sigma } => Table {
                distribution: Some(Kind::Lognormal),
                mean: Some(*mean),
                sigma: Some(*sigma),
                ..Table::default()
            },
            Distribution::LognormalQuantiles { median, p99 } => Table {
                distribution: Some(Kind::Lognormal),
                median: Some(*median),
                p99: Some(*p99),
                ..Table::default()
            },
            Distribution::Uniform { min, max } => Table {
                distribution: Some(Kind::Uniform),
                min: Some(*min),
                max: Some(*max),
                ..Table::default()
            },
            Distribution::Normal { mean, sd } => Table {
                distribution: Some(Kind::Normal),
                mean: Some(*mean),
                sd: Some(*sd),
                ..Table::default()
            },
            Distribution::Pareto(tail) => Table {
                distribution: Some(Kind::Pareto),
                scale: Some(Duration(tail.start as u64)),
                alpha: Some(tail.alpha),
                max: Some(Duration(tail.max as u64)),
                ..Table::default()
            },
            Distribution::Quantiles(quantiles) => Table {
                quantiles: Some(QuantileTable(
                    quantiles
                        .written()
                        .map(|(key, value)| (key.to_string(), value))
                        .collect(),
                )),
                min: quantiles.min(),
                max: max_of(quantiles.curve().tail()),
                ..Table::default()
            },
            Distribution::Histogram(histogram) => Table {
                histogram: Some(Data::Inline(
                    histogram
                        .buckets()
                        .iter()
                        .map(|bucket| BucketRow {
                            le: Bound(bucket.le),
                            count: bucket.count,
                        })
                        .collect(),
                )),
                max: max_of(histogram.curve().tail()),
                ..Table::default()
            },
            Distribution::Samples(samples) => Table {
                samples: Some(Data::Inline(
                    samples
                        .sorted()
                        .iter()
                        .map(|&micros| SampleValue::Duration(Duration(micros)))
                        .collect(),
                )),
                ..Table::default()
            },
            Distribution::Mixture(mixture) => Table {
                mixture: Some(
                    mixture
                        .components
                        .iter()
                        .map(|(weight, component)| Table {
                            weight: Some(*weight),
                            ..component.table()
                        })
                        .collect(),
                ),
                ..Table::default()
            },
            Distribution::Scaled(scaled) => Table {
                scale_by: Some(scaled.factor),
                ..scaled.inner.table()
            },
        }
    }
}

/// The `max` of a tail, as written back.
fn max_of(tail: Option<&Tail>) -> Option<Duration> {
    tail.map(|tail| Duration(tail.max as u64))
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
        match self {
            Distribution::Constant(value) => value.serialize(serializer),
            distribution => distribution.table().serialize(serializer),
        }
    }
}
