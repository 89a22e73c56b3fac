//! A range or an interval in words, never one of a single value.
//!
//! `0 to 0` (or `[1, 1]`, `+0 ± 0`) reads as a measurement with its uncertainty, and says the
//! uncertainty is none. Where every seed or replication gave the same value, there is no
//! interval to give: the value is written once, with what it was in (`0 on every seed`), and
//! the reader knows the runs agreed, which is not that more runs would. Every range the program
//! writes of its runs, of their seeds and of its own counts goes through [`Spread`] (its two
//! ends) or [`no_width`] (a half width), which compare them as they are written, so that two
//! values that differ past the digits shown (`3.31 to 3.31`) are one value too.

/// A range's two ends as written, or its one value where they read the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spread {
    /// Both ends read the same: one value.
    One(String),
    /// The smaller end and the larger, which read differently.
    Between(String, String),
}

impl Spread {
    /// The range from `low` to `high`, each as it is written.
    pub fn of(low: String, high: String) -> Spread {
        if low == high {
            Spread::One(low)
        } else {
            Spread::Between(low, high)
        }
    }

    /// `low to high`, or the one value with `same` after it (`0 on every seed`; the value
    /// alone for an empty `same`).
    pub fn words(&self, same: &str) -> String {
        match self {
            Spread::Between(low, high) => format!("{low} to {high}"),
            Spread::One(value) if same.is_empty() => value.clone(),
            Spread::One(value) => format!("{value} {same}"),
        }
    }
}

/// Whether a half width written `half` is none (`0`, `0.000000`, `-0`): an interval `± half`
/// is one value then, to be written as one.
pub fn no_width(half: &str) -> bool {
    let digits = half.trim_start_matches(['+', '-']);
    digits.starts_with('0') && digits.chars().all(|c| c == '0' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ends that read the same are one value, whatever the numbers behind them: the words
    /// give it once, with what it was in; ends that differ are a range.
    #[test]
    fn one_value_is_no_range() {
        let one = Spread::of("0".into(), "0".into());
        assert_eq!(one, Spread::One("0".into()));
        assert_eq!(one.words("on every seed"), "0 on every seed");
        assert_eq!(one.words(""), "0");
        let two = Spread::of("3.25".into(), "3.78".into());
        assert_eq!(two.words("on every seed"), "3.25 to 3.78");
    }

    /// A half width of zero in any writing has no width; any digit but 0 has.
    #[test]
    fn a_zero_half_width_is_none() {
        for none in ["0", "0.000000", "-0", "+0.0"] {
            assert!(no_width(none), "{none}");
        }
        for some in ["0.000001", "1", "0.5", "10", "", "never"] {
            assert!(!no_width(some), "{some}");
        }
    }
}
