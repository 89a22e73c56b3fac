//! Simulated time: integer microseconds, and the duration strings scenario files use.
//!
//! Time is an integer so that event order never depends on floating-point rounding: two runs
//! of a scenario pop the same events in the same order on any machine. A microsecond is fine
//! enough for network latencies and service times, and a `u64` of them lasts 584 000 years.
//!
//! Durations are written as a number and a unit: `"250ms"`, `"2s"`, `"1.5s"`, `"500us"`,
//! `"2m"`, `"1h"`. They are parsed exactly (decimal, not through floating point) and must be a
//! whole number of microseconds.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Microseconds of simulated time, or a span of it.
pub type Micros = u64;

/// Microseconds per millisecond.
pub const MICROS_PER_MS: u64 = 1_000;
/// Microseconds per second.
pub const MICROS_PER_SECOND: u64 = 1_000_000;

const UNITS: [(&str, u64); 5] = [
    ("us", 1),
    ("ms", MICROS_PER_MS),
    ("s", MICROS_PER_SECOND),
    ("m", 60 * MICROS_PER_SECOND),
    ("h", 3600 * MICROS_PER_SECOND),
];

/// A non-negative span of simulated time, written `"250ms"` in scenario files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub Micros);

impl Duration {
    /// The span in microseconds.
    pub fn micros(self) -> Micros {
        self.0
    }

    /// The span in milliseconds, as the retry decision takes it.
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 / MICROS_PER_MS as f64
    }

    /// The span in seconds.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / MICROS_PER_SECOND as f64
    }

    /// Builds a span from milliseconds.
    pub const fn from_ms(ms: u64) -> Duration {
        Duration(ms * MICROS_PER_MS)
    }
}

/// Why a duration string was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    text: String,
    finer_than_a_microsecond: bool,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.finer_than_a_microsecond {
            return write!(
                f,
                "invalid duration {:?}: finer than a microsecond, the simulation's resolution",
                self.text
            );
        }
        write!(
            f,
            "invalid duration {:?}: expected a non-negative number and a unit (us, ms, s, m, h), such as \"250ms\", \"2s\" or \"1.5h\"",
            self.text
        )
    }
}

impl std::error::Error for DurationError {}

impl FromStr for Duration {
    type Err = DurationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || DurationError {
            text: text.to_string(),
            finer_than_a_microsecond: false,
        };
        let split = text
            .find(|c: char| c.is_ascii_alphabetic())
            .ok_or_else(error)?;
        let (number, unit) = text.split_at(split);
        let &(_, scale) = UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .ok_or_else(error)?;
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) {
            return Err(error());
        }
        if number.ends_with('.') {
            return Err(error());
        }
        // whole * scale + fraction * scale / 10^len, exactly, or an error if not whole µs.
        let whole: u64 = whole.parse().map_err(|_| error())?;
        let mut micros = whole.checked_mul(scale).ok_or_else(error)?;
        let mut place = scale;
        for digit in fraction.bytes() {
            let digit = u64::from(digit - b'0');
            if place % 10 != 0 {
                if digit != 0 {
                    return Err(DurationError {
                        finer_than_a_microsecond: true,
                        ..error()
                    });
                }
                continue;
            }
            place /= 10;
            micros = micros.checked_add(digit * place).ok_or_else(error)?;
        }
        Ok(Duration(micros))
    }
}

impl fmt::Display for Duration {
    /// The shortest exact spelling: `250ms`, `2s`, `1500us`, `90s`, `1h`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("0s");
        }
        let (name, scale) = UNITS
            .iter()
            .rev()
            .find(|(_, scale)| self.0.is_multiple_of(*scale))
            .expect("every duration is a whole number of microseconds");
        write!(f, "{}{name}", self.0 / scale)
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration string such as \"250ms\" or \"2s\"")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Duration, E> {
                text.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_exactly() {
        let cases = [
            ("250ms", 250_000),
            ("2s", 2_000_000),
            ("1.5s", 1_500_000),
            ("0.001ms", 1),
            ("500us", 500),
            ("2m", 120_000_000),
            ("1h", 3_600_000_000),
            ("0s", 0),
            ("1.250s", 1_250_000),
        ];
        for (text, micros) in cases {
            assert_eq!(text.parse(), Ok(Duration(micros)), "{text}");
        }
    }

    #[test]
    fn rejects_what_is_not_a_duration() {
        for text in [
            "", "5", "-1s", "1.s", ".5s", "1 s", "1sec", "1e3ms", "0.0001ms", "ms",
        ] {
            assert!(text.parse::<Duration>().is_err(), "{text:?} was accepted");
        }
        assert!(
            "99999999999999h".parse::<Duration>().is_err(),
            "overflow is an error"
        );
    }

    #[test]
    fn displays_the_shortest_exact_spelling_and_round_trips() {
        for (micros, text) in [
            (250_000, "250ms"),
            (2_000_000, "2s"),
            (1_500_000, "1500ms"),
            (7, "7us"),
            (0, "0s"),
            (3_600_000_000, "1h"),
        ] {
            assert_eq!(Duration(micros).to_string(), text);
            assert_eq!(text.parse(), Ok(Duration(micros)));
        }
    }
}
