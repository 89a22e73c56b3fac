//! Requirements a sweep's points must meet (`success_rate>=0.995`), and metric names.
//!
//! A point whose metric has no value meets no requirement on it: a recovery without an
//! incident or a latency without a success is undefined, and a recovery that never came is
//! `never`; neither is "at most 5 s". A requirement that accepts them says so:
//! `recovery_s<=5 or never`, `p99_ms<250 or undefined` (both: `or never or undefined`).

use std::fmt;
use std::str::FromStr;

use crate::vocabulary::metric::{Domain, check_name, domain};

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

/// `METRIC OP VALUE`, optionally `or never` and `or undefined`, evaluated on the mean over a
/// point's seeds (undefined if it is undefined on some seed, `never` if it is on some seed).
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    /// The metric's name (`success_rate`, `amplification@db`).
    pub metric: String,
    /// How it is compared.
    pub comparison: Comparison,
    /// With what.
    pub bound: f64,
    /// Whether a recovery that never came (infinity) meets it: `or never`.
    pub or_never: bool,
    /// Whether an undefined value (NaN) meets it: `or undefined`.
    pub or_undefined: bool,
}

/// The suffixes that accept a value that is not a number, and the domains that have it.
const SUFFIXES: [(&str, &[Domain]); 2] = [
    ("never", &[Domain::Recovery]),
    (
        "undefined",
        &[Domain::NonNegativeOrUndefined, Domain::Recovery],
    ),
];

impl Requirement {
    /// Whether `value` meets the requirement. An undefined value (NaN) meets it only with
    /// `or undefined`, a recovery that never came (infinity) only with `or never`.
    pub fn holds(&self, value: f64) -> bool {
        if value.is_nan() {
            self.or_undefined
        } else if value.is_infinite() {
            self.or_never
        } else {
            self.comparison.holds(value, self.bound)
        }
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
        )?;
        if self.or_never {
            f.write_str(" or never")?;
        }
        if self.or_undefined {
            f.write_str(" or undefined")?;
        }
        Ok(())
    }
}

impl FromStr for Requirement {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let shape = || {
            format!(
                "{text:?} is not METRIC OP VALUE, such as success_rate>=0.995 (OP: >=, <=, >, <, ==, !=), optionally followed by `or never` and `or undefined`"
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
        let mut words = text[position + symbol.len()..].split_whitespace();
        let bound: f64 = words
            .next()
            .and_then(|bound| bound.parse().ok())
            .filter(|bound: &f64| bound.is_finite())
            .ok_or_else(shape)?;
        let mut requirement = Requirement {
            metric,
            comparison,
            bound,
            or_never: false,
            or_undefined: false,
        };
        while let Some(word) = words.next() {
            let accepted = words.next().filter(|_| word == "or");
            let Some((name, domains)) =
                accepted.and_then(|accepted| SUFFIXES.iter().find(|(name, _)| *name == accepted))
            else {
                let rest = std::iter::once(word).chain(accepted).collect::<Vec<_>>();
                return Err(format!(
                    "{text:?}: unknown suffix `{}`; after METRIC OP VALUE a requirement may say `or never` (a recovery that never came meets it) and `or undefined` (a value that is undefined, such as a recovery without an incident or a latency without a success, meets it)",
                    rest.join(" ")
                ));
            };
            if !domain(&requirement.metric).is_some_and(|domain| domains.contains(&domain)) {
                return Err(format!(
                    "{text:?}: `{}` cannot be {name}, so `or {name}` accepts nothing; {}",
                    requirement.metric,
                    if *name == "never" {
                        "only recovery_s can be never"
                    } else {
                        "only latencies, the incident's rates and recovery_s can be undefined"
                    }
                ));
            }
            match *name {
                "never" => requirement.or_never = true,
                _ => requirement.or_undefined = true,
            }
        }
        Ok(requirement)
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

    /// Undefined and never meet no requirement unless it says so (issue 22): a point without
    /// an incident has no recovery, and `recovery_s<=5` is not met by it, nor `recovery_s>=1`
    /// by a recovery that never came; `or undefined` and `or never` accept them, and nothing
    /// else after the bound is accepted.
    #[test]
    fn undefined_and_never_meet_a_requirement_only_when_it_says_so() {
        let strict: Requirement = "recovery_s<=5".parse().unwrap();
        assert!(strict.holds(4.5));
        assert!(!strict.holds(f64::NAN));
        assert!(!strict.holds(f64::INFINITY));
        assert!(
            !"recovery_s>=1"
                .parse::<Requirement>()
                .unwrap()
                .holds(f64::INFINITY)
        );
        let or_never: Requirement = "recovery_s<=5 or never".parse().unwrap();
        assert!(or_never.holds(f64::INFINITY));
        assert!(!or_never.holds(f64::NAN));
        assert!(!or_never.holds(6.0));
        assert_eq!(or_never.to_string(), "recovery_s <= 5 or never");
        let either: Requirement = "recovery_s <= 5 or never or undefined".parse().unwrap();
        assert!(either.holds(f64::NAN) && either.holds(f64::INFINITY));
        let latency: Requirement = "p99_ms<250 or undefined".parse().unwrap();
        assert!(latency.holds(f64::NAN));
        assert_eq!(latency.to_string(), "p99_ms < 250 or undefined");
        for (bad, says) in [
            ("recovery_s<=5 or nan", "unknown suffix `or nan`"),
            ("recovery_s<=5 never", "unknown suffix `never`"),
            ("recovery_s<=5 or", "unknown suffix `or`"),
            (
                "success_rate>=0.9 or undefined",
                "`success_rate` cannot be undefined",
            ),
            ("p99_ms<250 or never", "only recovery_s can be never"),
        ] {
            let error = bad.parse::<Requirement>().unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}
