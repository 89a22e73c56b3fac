//! Backoff and jitter strategies: *how long* to wait before the next attempt.
//!
//! The source article computes an exponential backoff, `min(cap, base * 2^attempt)`, and then
//! spreads the wait with full jitter, `floor(backoff * u)`. Other systems spread it differently
//! (AWS's "Exponential Backoff and Jitter", gRFC A6), and comparing them on the same arrivals is what retrystorm is for, so the
//! spreading step is a small open set of strategies behind one trait, [`JitterStrategy`].
//!
//! Every strategy is a pure function of a [`JitterInput`]: the retry index, base, cap, the
//! exponential backoff, the previous delay and a random unit drawn by the caller. Nothing here
//! draws a random number, so a decision can be replayed exactly and a new strategy can be added
//! (implement the trait) without touching the decision procedure or the simulation engine.
//!
//! Randomised delays are floored to whole milliseconds, as the article floors full jitter.

use std::fmt;
use std::str::FromStr;

use crate::base::suggest::did_you_mean;

/// The article's exponential backoff, `min(cap, base * 2^retry_index)`, with the multiplier
/// other clients use in place of 2 (gRPC's `backoffMultiplier`, 1.6 for its connection backoff).
///
/// `retry_index` must be a non-negative integer (the decision procedure checks that before it
/// calls this), `multiplier` finite and above zero. JavaScript, in which the article's procedure
/// is written, overflows `2^1024` to infinity and so turns `0 * 2^1024` into NaN; here a zero
/// base gives a zero backoff for every index, which is the value the formula means.
pub fn exponential_backoff_ms(retry_index: f64, base_ms: f64, cap_ms: f64, multiplier: f64) -> f64 {
    if base_ms == 0.0 {
        return cap_ms.min(0.0);
    }
    // Powers overflow to infinity, as `2 ** 1024` does in JavaScript; the cast saturates.
    let growth = multiplier.powi(retry_index.min(f64::from(i32::MAX)) as i32);
    cap_ms.min(base_ms * growth)
}

/// Everything a jitter strategy may look at. Built by the decision procedure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JitterInput {
    /// 0-based index of the attempt that failed (the article's `attempt`).
    pub retry_index: f64,
    /// Base delay in milliseconds, `>= 0`.
    pub base_ms: f64,
    /// Upper bound of the exponential backoff in milliseconds, `>= base_ms`.
    pub cap_ms: f64,
    /// `min(cap, base * multiplier^retry_index)`, see [`exponential_backoff_ms`].
    pub backoff_ms: f64,
    /// The delay chosen before the previous attempt, if there was one (decorrelated jitter
    /// grows from it).
    pub previous_delay_ms: Option<f64>,
    /// The random unit, already clamped to `[0, 1]`.
    pub unit: f64,
}

/// A way to turn the exponential backoff and a random unit into a delay.
///
/// Implementations must be pure: the same input gives the same delay, and the delay lies in
/// [`JitterStrategy::range_ms`] for every unit in `[0, 1]`.
pub trait JitterStrategy: fmt::Debug + Send + Sync {
    /// The name used in scenario files and on the command line.
    fn name(&self) -> &'static str;
    /// The delay in milliseconds.
    fn delay_ms(&self, input: &JitterInput) -> f64;
    /// The closed interval `(low, high)` that [`JitterStrategy::delay_ms`] lies in, over all
    /// units, for this input. Documentation and tests rely on it.
    fn range_ms(&self, input: &JitterInput) -> (f64, f64);
}

/// The strategies retrystorm ships; each variant's documentation says where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Jitter {
    /// `min(cap, base * 2^n)`: plain exponential backoff, every client waits the same.
    None,
    /// `floor(backoff * u)`: the article's full jitter, uniform in `[0, backoff]`.
    Full,
    /// `floor(backoff / 2 + u * backoff / 2)`: half the backoff plus a uniform share of the rest.
    Equal,
    /// `floor(min(cap, U(base, 3 * previous)))`, previous starting at base: AWS's decorrelated
    /// jitter. It ignores the exponential backoff and grows from the previous delay instead.
    Decorrelated,
    /// `floor(backoff * U(0.8, 1.2))`: gRPC's current formula (gRFC A6, 2024). It can fall up to
    /// 20% below base and rise up to 20% above cap.
    Grpc,
    /// `floor(min(cap, backoff * U(1, 2)))`: Linkerd's proxy with its jitter ratio of 1
    /// (`linkerd-exp-backoff`: `backoff + min(U(0, 1) * backoff, cap - backoff)`). It never falls
    /// below the backoff.
    Linkerd,
    /// `floor(backoff * U(0.5, 1.5))`: resilience4j's randomized wait with its default
    /// `randomizedWaitFactor` 0.5 (`IntervalFunction.randomize`, uniform over
    /// `[d (1 - f), d (1 + f)]`; its extra millisecond at the top is left out). It can rise up to
    /// 50% above cap.
    Resilience4j,
}

crate::base::values::serde_via_str!(
    Jitter,
    "a jitter name: none, full, equal, decorrelated, grpc, linkerd or resilience4j"
);

impl Jitter {
    /// Every built-in strategy, in the order the documentation lists them.
    pub const ALL: [Jitter; 7] = [
        Jitter::None,
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::Grpc,
        Jitter::Linkerd,
        Jitter::Resilience4j,
    ];

    /// The names accepted by [`Jitter::from_str`].
    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::ALL.iter().map(|jitter| jitter.name())
    }

    /// Lower and upper end of decorrelated jitter's uniform draw: `U(base, 3 * previous)`.
    /// A previous delay below `base / 3` (possible only when a caller supplies one) would make
    /// the interval empty; it then collapses to `base`.
    fn decorrelated_bounds(input: &JitterInput) -> (f64, f64) {
        let previous = input.previous_delay_ms.unwrap_or(input.base_ms);
        (input.base_ms, (3.0 * previous).max(input.base_ms))
    }
}

impl JitterStrategy for Jitter {
    fn name(&self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
            Jitter::Grpc => "grpc",
            Jitter::Linkerd => "linkerd",
            Jitter::Resilience4j => "resilience4j",
        }
    }

    fn delay_ms(&self, input: &JitterInput) -> f64 {
        let backoff = input.backoff_ms;
        let u = input.unit;
        match self {
            Jitter::None => backoff,
            Jitter::Full => (backoff * u).floor(),
            Jitter::Equal => (backoff / 2.0 + u * backoff / 2.0).floor(),
            Jitter::Decorrelated => {
                let (low, high) = Self::decorrelated_bounds(input);
                input.cap_ms.min(low + (high - low) * u).floor()
            }
            Jitter::Grpc => (backoff * (0.8 + 0.4 * u)).floor(),
            Jitter::Linkerd => input.cap_ms.min(backoff * (1.0 + u)).floor(),
            Jitter::Resilience4j => (backoff * (0.5 + u)).floor(),
        }
    }

    fn range_ms(&self, input: &JitterInput) -> (f64, f64) {
        let backoff = input.backoff_ms;
        match self {
            Jitter::None => (backoff, backoff),
            Jitter::Full => (0.0, backoff.floor()),
            Jitter::Equal => ((backoff / 2.0).floor(), backoff.floor()),
            Jitter::Decorrelated => {
                let (low, high) = Self::decorrelated_bounds(input);
                (
                    input.cap_ms.min(low).floor(),
                    input.cap_ms.min(high).floor(),
                )
            }
            Jitter::Grpc => ((backoff * 0.8).floor(), (backoff * 1.2).floor()),
            Jitter::Linkerd => (
                input.cap_ms.min(backoff).floor(),
                input.cap_ms.min(2.0 * backoff).floor(),
            ),
            Jitter::Resilience4j => ((backoff * 0.5).floor(), (backoff * 1.5).floor()),
        }
    }
}

impl fmt::Display for Jitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A jitter name that is not one of [`Jitter::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownJitter(pub String);

impl fmt::Display for UnknownJitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown jitter `{}`", self.0)?;
        if let Some(near) = did_you_mean(&self.0, Jitter::names()) {
            write!(f, " (did you mean `{near}`?)")?;
        }
        let valid: Vec<_> = Jitter::names().collect();
        write!(f, "; valid: {}", valid.join(", "))
    }
}

impl std::error::Error for UnknownJitter {}

impl FromStr for Jitter {
    type Err = UnknownJitter;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Jitter::ALL
            .into_iter()
            .find(|jitter| jitter.name() == name)
            .ok_or_else(|| UnknownJitter(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(retry_index: f64, previous: Option<f64>, unit: f64) -> JitterInput {
        let (base_ms, cap_ms) = (100.0, 2000.0);
        JitterInput {
            retry_index,
            base_ms,
            cap_ms,
            backoff_ms: exponential_backoff_ms(retry_index, base_ms, cap_ms, 2.0),
            previous_delay_ms: previous,
            unit,
        }
    }

    #[test]
    fn exponential_backoff_doubles_until_cap() {
        let seen: Vec<f64> = (0..7)
            .map(|n| exponential_backoff_ms(n as f64, 100.0, 2000.0, 2.0))
            .collect();
        assert_eq!(seen, [100.0, 200.0, 400.0, 800.0, 1600.0, 2000.0, 2000.0]);
    }

    #[test]
    fn exponential_backoff_survives_huge_indices() {
        assert_eq!(exponential_backoff_ms(1e6, 100.0, 2000.0, 2.0), 2000.0);
        assert_eq!(exponential_backoff_ms(1e6, 0.0, 2000.0, 2.0), 0.0);
        assert_eq!(
            exponential_backoff_ms(1023.0, 1.0, f64::MAX, 2.0),
            2f64.powi(1023)
        );
    }

    #[test]
    fn each_strategy_at_known_units() {
        // retry index 2: backoff 400.
        let cases = [
            (Jitter::None, 0.5, 400.0),
            (Jitter::Full, 0.5, 200.0),
            (Jitter::Full, 0.0, 0.0),
            (Jitter::Full, 1.0, 400.0),
            (Jitter::Equal, 0.0, 200.0),
            (Jitter::Equal, 0.5, 300.0),
            (Jitter::Equal, 1.0, 400.0),
            (Jitter::Grpc, 0.0, 320.0),
            (Jitter::Grpc, 0.5, 400.0),
            (Jitter::Grpc, 1.0, 480.0),
            // Linkerd: 400 * (1 + u), at most the cap of 2000.
            (Jitter::Linkerd, 0.0, 400.0),
            (Jitter::Linkerd, 0.5, 600.0),
            (Jitter::Linkerd, 1.0, 800.0),
            // resilience4j, factor 0.5: 400 * (0.5 + u).
            (Jitter::Resilience4j, 0.0, 200.0),
            (Jitter::Resilience4j, 0.5, 400.0),
            (Jitter::Resilience4j, 1.0, 600.0),
        ];
        for (jitter, unit, expected) in cases {
            assert_eq!(
                jitter.delay_ms(&input(2.0, None, unit)),
                expected,
                "{jitter} at unit {unit}"
            );
        }
    }

    #[test]
    fn decorrelated_grows_from_previous_delay_and_stops_at_cap() {
        // No previous delay: U(base, 3 * base) = U(100, 300).
        assert_eq!(Jitter::Decorrelated.delay_ms(&input(0.0, None, 0.0)), 100.0);
        assert_eq!(Jitter::Decorrelated.delay_ms(&input(0.0, None, 0.5)), 200.0);
        assert_eq!(Jitter::Decorrelated.delay_ms(&input(0.0, None, 1.0)), 300.0);
        // Previous 500: U(100, 1500).
        assert_eq!(
            Jitter::Decorrelated.delay_ms(&input(3.0, Some(500.0), 0.5)),
            800.0
        );
        // Previous 1500: U(100, 4500), capped at 2000.
        assert_eq!(
            Jitter::Decorrelated.delay_ms(&input(3.0, Some(1500.0), 1.0)),
            2000.0
        );
        // A previous delay below base/3 collapses the interval to base.
        assert_eq!(
            Jitter::Decorrelated.delay_ms(&input(1.0, Some(10.0), 0.7)),
            100.0
        );
    }

    #[test]
    fn names_round_trip_and_unknown_names_suggest() {
        for jitter in Jitter::ALL {
            assert_eq!(jitter.name().parse::<Jitter>(), Ok(jitter));
        }
        let error = "ful".parse::<Jitter>().unwrap_err().to_string();
        assert_eq!(
            error,
            "unknown jitter `ful` (did you mean `full`?); valid: none, full, equal, decorrelated, grpc, linkerd, resilience4j"
        );
    }
}
