//! Requirements a sweep's points must meet (`success_rate>=0.995`), and metric names.

use std::fmt;
use std::str::FromStr;

use crate::metrics::check_name;

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// `>=`
    AtLeast,
    /// `<=`
    AtMost,
    /// `>`
    Above,
    /// `<`
    Below,
    /// `==`
    Equal,
    /// `!=`
    NotEqual,
}

impl Comparison {
    /// Longest spellings first, so that `>=` is not read as `>`.
    const SPELLINGS: [(&'static str, Comparison); 6] = [
        (">=", Comparison::AtLeast),
        ("<=", Comparison::AtMost),
        ("==", Comparison::Equal),
        ("!=", Comparison::NotEqual),
        (">", Comparison::Above),
        ("<", Comparison::Below),
    ];

    fn symbol(self) -> &'static str {
        Self::SPELLINGS
            .iter()
            .find(|(_, comparison)| *comparison == self)
            .map(|(symbol, _)| *symbol)
            .expect("every comparison has a spelling")
    }

    fn holds(self, value: f64, bound: f64) -> bool {
        match self {
            Comparison::AtLeast => value >= bound,
            Comparison::AtMost => value <= bound,
            Comparison::Above => value > bound,
            Comparison::Below => value < bound,
            Comparison::Equal => value == bound,
            Comparison::NotEqual => value != bound,
        }
    }
}

/// A metric name checked as far as it can be without the scenario: a run's metric, or a
/// service's as `METRIC@SERVICE`, whose service the sweep checks against the scenario.
pub fn metric_name(name: &str) -> Result<String, String> {
    check_name(name).map(|()| name.to_string())
}

/// `METRIC OP VALUE`, evaluated on the mean over a point's seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    /// The metric's name (`success_rate`, `amplification@db`).
    pub metric: String,
    /// How it is compared.
    pub comparison: Comparison,
    /// With what.
    pub bound: f64,
}

impl Requirement {
    /// Whether `value` meets the requirement. An undefined value (NaN) meets nothing.
    pub fn holds(&self, value: f64) -> bool {
        self.comparison.holds(value, self.bound)
    }

    /// How far `value` is from meeting the requirement, relative to the bound (0 when met).
    pub fn shortfall(&self, value: f64) -> f64 {
        if self.holds(value) {
            return 0.0;
        }
        if value.is_nan() {
            return f64::INFINITY;
        }
        (value - self.bound).abs() / self.bound.abs().max(1e-9)
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}",
            self.metric,
            self.comparison.symbol(),
            self.bound
        )
    }
}

impl FromStr for Requirement {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let shape = || {
            format!(
                "{text:?} is not METRIC OP VALUE, such as success_rate>=0.995 (OP: >=, <=, >, <, ==, !=)"
            )
        };
        let (position, symbol, comparison) = Comparison::SPELLINGS
            .iter()
            .filter_map(|(symbol, comparison)| {
                text.find(symbol).map(|at| (at, *symbol, *comparison))
            })
            .min_by_key(|(at, symbol, _)| (*at, std::cmp::Reverse(symbol.len())))
            .ok_or_else(shape)?;
        let metric = metric_name(text[..position].trim())?;
        let bound_text = text[position + symbol.len()..].trim();
        let bound: f64 = bound_text.parse().map_err(|_| shape())?;
        if !bound.is_finite() {
            return Err(shape());
        }
        Ok(Requirement {
            metric,
            comparison,
            bound,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_parse_with_or_without_spaces() {
        let requirement: Requirement = "success_rate>=0.995".parse().unwrap();
        assert_eq!(requirement.metric, "success_rate");
        assert_eq!(requirement.comparison, Comparison::AtLeast);
        assert_eq!(requirement.bound, 0.995);
        let spaced: Requirement = " duplicate_writes == 0 ".parse().unwrap();
        assert_eq!(spaced.comparison, Comparison::Equal);
        assert_eq!(spaced.to_string(), "duplicate_writes == 0");
        assert_eq!(
            "p99_ms<250".parse::<Requirement>().unwrap().comparison,
            Comparison::Below
        );
    }

    #[test]
    fn bad_requirements_say_why() {
        assert!(
            "sucess_rate>=1"
                .parse::<Requirement>()
                .unwrap_err()
                .contains("did you mean `success_rate`?")
        );
        assert!(
            "success_rate>=high"
                .parse::<Requirement>()
                .unwrap_err()
                .contains("METRIC OP VALUE")
        );
        assert!(
            "success_rate"
                .parse::<Requirement>()
                .unwrap_err()
                .contains("METRIC OP VALUE")
        );
    }

    #[test]
    fn holding_and_falling_short() {
        let requirement: Requirement = "success_rate>=0.99".parse().unwrap();
        assert!(requirement.holds(0.995));
        assert!(!requirement.holds(f64::NAN));
        assert_eq!(requirement.shortfall(0.995), 0.0);
        assert!((requirement.shortfall(0.9801) - 0.01).abs() < 1e-12);
    }
}
