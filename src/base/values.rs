//! Checked value types for scenario files: a value that reads is a value that is valid.
//!
//! Each type checks its own range while it is deserialized, so the TOML reader attaches the
//! error to the exact line and column of the bad value, and the message says what is valid.
//! Relations between values (cap below base, unsorted points) are checked later, in
//! `scenario::validate`.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// An integer in `MIN..=MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bounded<const MIN: u64, const MAX: u64>(pub u64);

impl<const MIN: u64, const MAX: u64> Bounded<MIN, MAX> {
    /// The value.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl<const MIN: u64, const MAX: u64> Serialize for Bounded<MIN, MAX> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Bounded<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IntegerVisitor<const MIN: u64, const MAX: u64>;
        impl<const MIN: u64, const MAX: u64> Visitor<'_> for IntegerVisitor<MIN, MAX> {
            type Value = Bounded<MIN, MAX>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "an integer from {MIN} to {MAX}")
            }
            fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
                match u64::try_from(value) {
                    Ok(value) => self.visit_u64(value),
                    Err(_) => Err(E::custom(format!(
                        "{value} is out of range; expected an integer from {MIN} to {MAX}"
                    ))),
                }
            }
            fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
                if (MIN..=MAX).contains(&value) {
                    Ok(Bounded(value))
                } else {
                    Err(E::custom(format!(
                        "{value} is out of range; expected an integer from {MIN} to {MAX}"
                    )))
                }
            }
        }
        deserializer.deserialize_u64(IntegerVisitor::<MIN, MAX>)
    }
}

/// Reads a number, integer or float, as `f64` and checks it with `check`, which returns the
/// description of the valid range when the value is outside it.
fn deserialize_number<'de, D: Deserializer<'de>>(
    deserializer: D,
    valid: &'static str,
    check: fn(f64) -> bool,
) -> Result<f64, D::Error> {
    struct NumberVisitor {
        valid: &'static str,
        check: fn(f64) -> bool,
    }
    impl Visitor<'_> for NumberVisitor {
        type Value = f64;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a number {}", self.valid)
        }
        fn visit_f64<E: de::Error>(self, value: f64) -> Result<f64, E> {
            if (self.check)(value) {
                Ok(value)
            } else {
                Err(E::custom(format!(
                    "{value} is out of range; expected a number {}",
                    self.valid
                )))
            }
        }
        fn visit_i64<E: de::Error>(self, value: i64) -> Result<f64, E> {
            self.visit_f64(value as f64)
        }
        fn visit_u64<E: de::Error>(self, value: u64) -> Result<f64, E> {
            self.visit_f64(value as f64)
        }
    }
    deserializer.deserialize_f64(NumberVisitor { valid, check })
}

macro_rules! checked_float {
    ($(#[$doc:meta])* $name:ident, $valid:literal, $check:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
        pub struct $name(pub f64);

        impl $name {
            /// The value.
            pub fn get(self) -> f64 {
                self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_f64(self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserialize_number(deserializer, $valid, $check).map($name)
            }
        }
    };
}

checked_float!(
    /// A probability, 0 to 1.
    Probability,
    "from 0 to 1",
    |p| (0.0..=1.0).contains(&p)
);
checked_float!(
    /// A finite number above zero, at most 10^9.
    Positive,
    "above 0 and at most 1e9",
    |x| x > 0.0 && x <= 1e9
);
checked_float!(
    /// A size of at least one, at most 10^9: a token bucket's burst.
    AtLeastOne,
    "from 1 to 1e9",
    |x| (1.0..=1e9).contains(&x)
);
checked_float!(
    /// A capacity factor: a fraction of the workers, 0 to 100.
    Factor,
    "from 0 to 100",
    |x| (0.0..=100.0).contains(&x)
);

checked_float!(
    /// A percentage, 0 to 100.
    Percent,
    "from 0 to 100",
    |x| (0.0..=100.0).contains(&x)
);
checked_float!(
    /// A retry budget's percentage of the load: 0 to 100 000 (Finagle's `percentCanRetry`
    /// goes to 1000, that is 100 000%).
    BudgetPercent,
    "from 0 to 100000",
    |x| (0.0..=100_000.0).contains(&x)
);

checked_float!(
    /// The Universal Scalability Law's sigma (contention): the share of a request's work that
    /// waits for the other requests in service, 0 up to (not including) 1.
    ContentionSigma,
    "from 0 up to, but not including, 1 for contention.sigma, the share of the work that waits for each other request in service (at 1 no two requests would ever work in parallel)",
    |x| (0.0..1.0).contains(&x)
);
checked_float!(
    /// The Universal Scalability Law's kappa (coherency): the crosstalk between the requests in
    /// service, paid `N (N - 1)` times with `N` of them; at least 0 and finite.
    CoherencyKappa,
    "at least 0 and finite for contention.kappa, the crosstalk between the requests in service, paid N (N - 1) times with N of them",
    |x| x >= 0.0 && x.is_finite()
);

/// The endings of the folders a sweep, a map or merged replications of a scenario write beside
/// the scenario's own (`tuning-sweep/`, `tuning-shards/`, `tuning-map/`, `tuning-risk/` for
/// `tuning`; their shards' folders end in `-shards` too), which a scenario's name may not
/// have: a scenario named `tuning-shards` would run into the folder of `tuning`'s shards, and
/// its next run would replace them.
pub const STUDY_FOLDER_SUFFIXES: [&str; 4] = ["-sweep", "-shards", "-map", "-risk"];

/// A name that can be a folder name: 1 to 100 letters, digits, `-`, `_` or `.`, not starting
/// with `.`, and not ending in one of [`STUDY_FOLDER_SUFFIXES`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Name(String);

impl Name {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Checks a name.
    pub fn new(text: &str) -> Result<Name, String> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
        if !text.is_empty()
            && text.len() <= 100
            && text.chars().all(allowed)
            && !text.starts_with('.')
        {
            Ok(Name(text.to_string()))
        } else {
            Err(format!(
                "{text:?} is not a valid name; use 1 to 100 letters, digits, '-', '_' or '.', not starting with '.' (it names the output folder)"
            ))
        }
        .and_then(|name| match STUDY_FOLDER_SUFFIXES
            .iter()
            .find(|suffix| text.ends_with(*suffix))
        {
            Some(suffix) => Err(format!(
                "{text:?} ends in {suffix:?}, which names the folders a sweep, a map and replications write (for {:?}: {0}-sweep/, {0}-shards/, {0}-map/, {0}-map-shards/, {0}-risk/ and {0}-risk-shards/ beside {0}/), so its results would share them; choose a name that does not end in -sweep, -shards, -map or -risk",
                &text[..text.len() - suffix.len()]
            )),
            None => Ok(name),
        })
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Name::new(&text).map_err(de::Error::custom)
    }
}

/// A service's name in a topology: 1 to 64 letters, digits, `-` or `_`, not only digits. It is
/// a part of dotted `--set` keys (`service.api.workers`), so it has no dots, and it is not a
/// number, which would read as an array index.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ServiceName(String);

impl ServiceName {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Checks a name.
    pub fn new(text: &str) -> Result<ServiceName, String> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-_".contains(c);
        if !text.is_empty()
            && text.len() <= 64
            && text.chars().all(allowed)
            && !text.chars().all(|c| c.is_ascii_digit())
        {
            Ok(ServiceName(text.to_string()))
        } else {
            Err(format!(
                "{text:?} is not a valid service name; use 1 to 64 letters, digits, '-' or '_', not only digits (it is part of keys such as service.NAME.workers)"
            ))
        }
    }
}

impl fmt::Display for ServiceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ServiceName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ServiceName::new(&text).map_err(de::Error::custom)
    }
}

/// Serde through `FromStr` and `Display`, so that the type's own error (with its "did you
/// mean") reaches the user: `serde_via_str!(Jitter, "a jitter name: ...")` where the type is
/// defined.
macro_rules! serde_via_str {
    ($type:ty, $expecting:literal) => {
        impl serde::Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct StrVisitor;
                impl serde::de::Visitor<'_> for StrVisitor {
                    type Value = $type;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<$type, E> {
                        text.parse().map_err(E::custom)
                    }
                }
                deserializer.deserialize_str(StrVisitor)
            }
        }
    };
}
pub(crate) use serde_via_str;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::backoff::Jitter;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Holder {
        count: Option<Bounded<1, 10>>,
        p: Option<Probability>,
        name: Option<Name>,
        jitter: Option<Jitter>,
    }

    fn error(text: &str) -> String {
        toml::from_str::<Holder>(text)
            .unwrap_err()
            .message()
            .to_string()
    }

    #[test]
    fn out_of_range_values_say_what_is_valid() {
        assert_eq!(
            error("count = 0"),
            "0 is out of range; expected an integer from 1 to 10"
        );
        assert_eq!(
            error("count = -3"),
            "-3 is out of range; expected an integer from 1 to 10"
        );
        assert!(error("count = 1.5").contains("expected an integer from 1 to 10"));
        assert_eq!(
            error("p = 1.5"),
            "1.5 is out of range; expected a number from 0 to 1"
        );
        assert!(error("p = nan").contains("out of range"));
        assert!(error("name = \"a b\"").contains("not a valid name"));
        for bad in ["a.b", "12", "", "a b"] {
            assert!(ServiceName::new(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            ServiceName::new("db-2").map(|n| n.to_string()),
            Ok("db-2".into())
        );
        assert!(error("jitter = \"ful\"").contains("did you mean `full`?"));
    }

    #[test]
    fn valid_values_read() {
        let holder: Holder =
            toml::from_str("count = 10\np = 1\nname = \"thundering-herd\"\njitter = \"grpc\"")
                .unwrap();
        assert_eq!(holder.count, Some(Bounded(10)));
        assert_eq!(holder.p, Some(Probability(1.0)));
        assert_eq!(holder.jitter, Some(Jitter::Grpc));
    }
}
