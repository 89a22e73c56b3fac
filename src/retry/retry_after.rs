//! Retry-After: reading the header, and what a client does with it.
//!
//! The article treats Retry-After as a **minimum** wait: the delay is
//! `max(jittered backoff, retry_after)`. That is [`RetryAfterMode::Honor`]. It has a cost the
//! article does not dwell on: clients that all receive the same fixed Retry-After and honour it
//! exactly come back in lock-step, whatever their jitter. Envoy therefore spreads the wait above
//! the floor, `U(retry_after, 1.5 * retry_after)`; that is [`RetryAfterMode::HonorJittered`].
//! [`RetryAfterMode::Ignore`] is the client that never looks at the header, so that the damage
//! can be measured.
//!
//! [`parse_retry_after`] reads a header value per RFC 9110 §10.2.3: delay-seconds or an
//! HTTP-date. A malformed value is an error the caller sees; it never becomes a wait of forever.

use std::fmt;
use std::str::FromStr;

use crate::base::http_date::{HttpDateError, parse_http_date};
use crate::base::suggest::did_you_mean;

/// How a client treats a Retry-After it received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum RetryAfterMode {
    /// Wait `max(jittered, retry_after)`: the article's rule.
    #[default]
    Honor,
    /// Do not look at Retry-After at all, not even to reject an invalid one.
    Ignore,
    /// Wait `max(jittered, retry_after + floor(u * retry_after / 2))`: Retry-After is a floor and
    /// the wait is spread uniformly over the half above it, as Envoy's rate-limited backoff does.
    HonorJittered,
    /// Wait exactly `retry_after`, and count the backoff's retries from zero again after it:
    /// gRPC's server pushback.
    Pushback,
}

crate::base::values::serde_via_str!(
    RetryAfterMode,
    "a Retry-After mode: honor, ignore, honor-jittered or pushback"
);

impl RetryAfterMode {
    /// Every mode, in the order the documentation lists them.
    pub const ALL: [RetryAfterMode; 4] = [
        RetryAfterMode::Honor,
        RetryAfterMode::Ignore,
        RetryAfterMode::HonorJittered,
        RetryAfterMode::Pushback,
    ];

    /// The name used in scenario files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            RetryAfterMode::Honor => "honor",
            RetryAfterMode::Ignore => "ignore",
            RetryAfterMode::HonorJittered => "honor-jittered",
            RetryAfterMode::Pushback => "pushback",
        }
    }

    /// Whether this mode reads Retry-After at all; a mode that does not also cannot be stopped by
    /// an invalid one.
    pub fn reads_header(self) -> bool {
        self != RetryAfterMode::Ignore
    }

    /// The delay once Retry-After is taken into account. `retry_after_ms` must be finite and
    /// non-negative (the decision procedure checks), `unit` is a random unit in `[0, 1]` used
    /// only by [`RetryAfterMode::HonorJittered`].
    pub fn apply(self, jittered_ms: f64, retry_after_ms: Option<f64>, unit: f64) -> f64 {
        match (self, retry_after_ms) {
            (RetryAfterMode::Ignore, _) | (_, None) => jittered_ms,
            (RetryAfterMode::Honor, Some(floor)) => jittered_ms.max(floor),
            (RetryAfterMode::HonorJittered, Some(floor)) => {
                jittered_ms.max(floor + (unit * floor / 2.0).floor())
            }
            (RetryAfterMode::Pushback, Some(pushback)) => pushback,
        }
    }
}

impl fmt::Display for RetryAfterMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Retry-After mode name that is not one of [`RetryAfterMode::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRetryAfterMode(pub String);

impl fmt::Display for UnknownRetryAfterMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = RetryAfterMode::ALL.map(RetryAfterMode::name);
        write!(f, "unknown Retry-After mode `{}`", self.0)?;
        if let Some(near) = did_you_mean(&self.0, names) {
            write!(f, " (did you mean `{near}`?)")?;
        }
        write!(f, "; valid: {}", names.join(", "))
    }
}

impl std::error::Error for UnknownRetryAfterMode {}

impl FromStr for RetryAfterMode {
    type Err = UnknownRetryAfterMode;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        RetryAfterMode::ALL
            .into_iter()
            .find(|mode| mode.name() == name)
            .ok_or_else(|| UnknownRetryAfterMode(name.to_string()))
    }
}

/// Why a Retry-After header value could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryAfterError {
    /// delay-seconds with more digits than any real wait (it does not fit in 64 bits).
    TooLarge(String),
    /// Neither delay-seconds nor an HTTP-date.
    Malformed {
        /// The value as received.
        value: String,
        /// What the HTTP-date parser objected to.
        reason: HttpDateError,
    },
}

impl fmt::Display for RetryAfterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryAfterError::TooLarge(value) => write!(
                f,
                "Retry-After `{value}` is too large to be a delay in seconds"
            ),
            RetryAfterError::Malformed { value, reason } => write!(
                f,
                "Retry-After `{value}` is neither delay-seconds (digits, e.g. `120`) nor an HTTP-date: {reason}"
            ),
        }
    }
}

impl std::error::Error for RetryAfterError {}

/// Reads a Retry-After header value and returns the wait in milliseconds from `now_unix_ms`.
///
/// - delay-seconds (`1*DIGIT`) is counted from receipt of the response: `120` is 120 000 ms.
/// - an HTTP-date is measured from `now_unix_ms`; a date in the past means no wait (0 ms).
///
/// Surrounding spaces and tabs (optional whitespace around a field value) are ignored. Signs,
/// fractions and anything else are errors.
pub fn parse_retry_after(value: &str, now_unix_ms: f64) -> Result<f64, RetryAfterError> {
    let value = value.trim_matches([' ', '\t']);
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return value
            .parse::<u64>()
            .map(|seconds| seconds as f64 * 1000.0)
            .map_err(|_| RetryAfterError::TooLarge(value.to_string()));
    }
    let now_unix_s = (now_unix_ms / 1000.0).floor() as i64;
    parse_http_date(value, now_unix_s)
        .map(|date_s| (date_s as f64 * 1000.0 - now_unix_ms).max(0.0))
        .map_err(|reason| RetryAfterError::Malformed {
            value: value.to_string(),
            reason,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_apply_retry_after_as_documented() {
        let honor = RetryAfterMode::Honor;
        assert_eq!(honor.apply(200.0, None, 0.9), 200.0);
        assert_eq!(honor.apply(200.0, Some(1000.0), 0.9), 1000.0);
        assert_eq!(honor.apply(1500.0, Some(1000.0), 0.9), 1500.0);
        assert_eq!(
            RetryAfterMode::Ignore.apply(200.0, Some(1000.0), 0.9),
            200.0
        );
        let spread = RetryAfterMode::HonorJittered;
        assert_eq!(spread.apply(200.0, Some(1000.0), 0.0), 1000.0);
        assert_eq!(spread.apply(200.0, Some(1000.0), 0.5), 1250.0);
        assert_eq!(spread.apply(200.0, Some(1000.0), 1.0), 1500.0);
        assert_eq!(spread.apply(1800.0, Some(1000.0), 0.5), 1800.0);
        // A fractional floor is never undercut by the whole-millisecond spread.
        assert_eq!(spread.apply(0.0, Some(0.5), 1.0), 0.5);
    }

    #[test]
    fn mode_names_round_trip() {
        for mode in RetryAfterMode::ALL {
            assert_eq!(mode.name().parse::<RetryAfterMode>(), Ok(mode));
        }
        assert_eq!(
            "honour".parse::<RetryAfterMode>().unwrap_err().to_string(),
            "unknown Retry-After mode `honour` (did you mean `honor`?); valid: honor, ignore, honor-jittered, pushback"
        );
    }

    #[test]
    fn delay_seconds() {
        assert_eq!(parse_retry_after("120", 0.0), Ok(120_000.0));
        assert_eq!(parse_retry_after(" 0\t", 5.0), Ok(0.0));
        assert_eq!(
            parse_retry_after("18446744073709551615", 0.0),
            Ok(u64::MAX as f64 * 1000.0)
        );
        assert_eq!(
            parse_retry_after("18446744073709551616", 0.0),
            Err(RetryAfterError::TooLarge("18446744073709551616".into()))
        );
    }

    #[test]
    fn http_dates_are_measured_from_now() {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"; // 784111777 s
        assert_eq!(
            parse_retry_after(date, 784_111_777_000.0 - 2500.0),
            Ok(2500.0)
        );
        assert_eq!(parse_retry_after(date, 784_111_777_000.0 + 1.0), Ok(0.0));
    }

    #[test]
    fn malformed_values_are_errors_never_waits() {
        for value in [
            "-5",
            "1.5",
            "",
            "  ",
            "+3",
            "soon",
            "120s",
            "Sun, 06 Nov 1994",
        ] {
            let outcome = parse_retry_after(value, 0.0);
            assert!(
                matches!(outcome, Err(RetryAfterError::Malformed { .. })),
                "{value:?} gave {outcome:?}"
            );
        }
    }
}
