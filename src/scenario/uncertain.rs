//! Drawing the `[uncertain]` inputs: one value of each per run (a replication of a study, a
//! seed of a sweep), by Latin hypercube sampling (McKay, Beckman & Conover 1979).
//!
//! With N runs, each input's range is cut into N slices of equal probability and every slice
//! is drawn exactly once, each input's slices in an independent random order. Ten runs then
//! cover the whole range of every input, where independent draws would leave gaps and
//! clusters: the tails the user is unsure of are always tried. The draws depend on the
//! scenario's seed, the keys drawn and the number of runs only, and are the same in every cell
//! of a map, at every point of a sweep and for every policy (common random numbers).
//!
//! It sits with the scenario, below the engine, because two layers draw the inputs the same
//! way: the sweeps (`crate::sweep`) and the replicated studies above them (`crate::risk`).

use super::risk::{Amount, Uncertain, UncertainInput, Written};
use crate::base::stats::{latin_hypercube, normal_quantile};

/// An uncertain input, checked, and its key.
#[derive(Debug, Clone, PartialEq)]
pub struct UncertainKey {
    /// The `--set` key.
    pub key: String,
    /// Its distribution.
    pub input: UncertainInput,
    /// How its draws are written (`None`: choices, as written).
    pub written: Option<Written>,
}

/// A scenario's `[uncertain]` inputs as the runs of a study or a sweep draw them: those drawn,
/// each run's values of them, and those the study or sweep sets itself.
#[derive(Debug, Clone, PartialEq)]
pub struct UncertainDraws {
    /// The inputs drawn, in the order of their keys.
    pub inputs: Vec<UncertainKey>,
    /// Each run's value of each input drawn (`draws[run][input]`), as `--set` takes it.
    pub draws: Vec<Vec<String>>,
    /// The `[uncertain]` keys the study or sweep sets itself (an axis, a grid key, `--set`),
    /// which are therefore not drawn.
    pub not_drawn: Vec<String>,
}

impl UncertainDraws {
    /// The inputs of `uncertain` (validated with their scenario) but those `set` says the
    /// caller sets itself, drawn for `runs` runs from a Latin hypercube seeded by `seed`, the
    /// scenario's.
    pub fn new(uncertain: &Uncertain, set: impl Fn(&str) -> bool, runs: usize, seed: u64) -> Self {
        let not_drawn: Vec<String> = uncertain.keys().filter(|key| set(key)).cloned().collect();
        let inputs: Vec<UncertainKey> = uncertain
            .iter()
            .filter(|(key, _)| !set(key))
            .map(|(key, input)| UncertainKey {
                key: key.clone(),
                input: input.get_ref().clone(),
                written: input
                    .get_ref()
                    .check()
                    .expect("validated with the scenario"),
            })
            .collect();
        let cube = latin_hypercube(runs, inputs.len(), seed);
        let draws = cube
            .iter()
            .map(|point| {
                inputs
                    .iter()
                    .zip(point)
                    .map(|(input, &u)| value_at(&input.input, input.written, u))
                    .collect()
            })
            .collect();
        UncertainDraws {
            inputs,
            draws,
            not_drawn,
        }
    }

    /// Run `run`'s draws, as `(key, value)` overrides.
    pub fn of_run(&self, run: usize) -> Vec<(String, String)> {
        self.inputs
            .iter()
            .zip(&self.draws[run])
            .map(|(input, value)| (input.key.clone(), value.clone()))
            .collect()
    }

    /// The sets of draws that reach every input's lowest and highest value (all inputs low,
    /// then all high; a choice's first and last), which a study or a sweep checks before it
    /// runs; one empty set without inputs.
    pub fn extremes(&self) -> Vec<Vec<(String, String)>> {
        if self.inputs.is_empty() {
            return vec![vec![]];
        }
        // Just inside the ends: a normal's quantile at 0 or 1 is infinite.
        [1e-9, 1.0 - 1e-9]
            .iter()
            .map(|&u| {
                self.inputs
                    .iter()
                    .map(|input| (input.key.clone(), value_at(&input.input, input.written, u)))
                    .collect()
            })
            .collect()
    }

    /// `each RUN draws the [uncertain] inputs by Latin hypercube: KEY (DISTRIBUTION), ...`,
    /// for the summaries that say what the seeds vary (`run` is what draws: `replication`,
    /// `seed`); `None` when no input is drawn.
    pub fn drawn_in_words(&self, run: &str) -> Option<String> {
        if self.inputs.is_empty() {
            return None;
        }
        let inputs: Vec<String> = self
            .inputs
            .iter()
            .map(|input| format!("{} ({})", input.key, input.input))
            .collect();
        Some(format!(
            "each {run} draws the [uncertain] inputs by Latin hypercube: {}",
            inputs.join(", ")
        ))
    }

    /// `not drawn, because SETTER sets them: KEY, ...`; `None` when every input is drawn.
    pub fn not_drawn_in_words(&self, setter: &str) -> Option<String> {
        (!self.not_drawn.is_empty()).then(|| {
            format!(
                "not drawn, because {setter} sets them: {}",
                self.not_drawn.join(", ")
            )
        })
    }
}

/// The value of `input` at the probability `u` (0 < u < 1) of its distribution, as `--set`
/// takes it.
pub fn value_at(input: &UncertainInput, written: Option<Written>, u: f64) -> String {
    let amount = |value: &toml::Value| {
        Amount::read(value, "")
            .expect("validated with the scenario")
            .value()
    };
    let text = |value: f64| written.expect("a distribution of amounts").text(value);
    match input {
        UncertainInput::Uniform(ends) => {
            let (low, high) = (amount(&ends[0]), amount(&ends[1]));
            if written == Some(Written::Integer) {
                // Each of the high - low + 1 integers equally likely.
                let count = high - low + 1.0;
                text(low + (u * count).floor().min(count - 1.0))
            } else {
                text(low + u * (high - low))
            }
        }
        UncertainInput::Normal { mean, sd, min, max } => {
            let mut value = amount(mean) + amount(sd) * normal_quantile(u);
            if let Some(min) = min {
                value = value.max(amount(min));
            }
            if let Some(max) = max {
                value = value.min(amount(max));
            }
            text(value)
        }
        UncertainInput::Lognormal { median, p95 } => {
            let (median, p95) = (amount(median), amount(p95));
            let sigma = (p95 / median).ln() / normal_quantile(0.95);
            text(median * (sigma * normal_quantile(u)).exp())
        }
        UncertainInput::Choices(choices) => {
            let index = ((u * choices.len() as f64) as usize).min(choices.len() - 1);
            match &choices[index] {
                toml::Value::String(text) => text.clone(),
                other => other.to_string(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(text: &str) -> (UncertainInput, Option<Written>) {
        let table: toml::Table = toml::from_str(&format!("x = {text}")).unwrap();
        let input: UncertainInput = table["x"].clone().try_into().unwrap();
        let written = input.check().unwrap();
        (input, written)
    }

    /// The integers of a uniform range are equally likely: the N equal slices of a Latin
    /// hypercube of N = 9 points over 16..=24 hit each of the 9 integers once.
    #[test]
    fn integer_ranges_give_each_integer_its_slice() {
        let (uniform, written) = input("{ uniform = [16, 24] }");
        let mut values: Vec<String> = (0..9)
            .map(|i| value_at(&uniform, written, (i as f64 + 0.5) / 9.0))
            .collect();
        values.sort();
        assert_eq!(
            values,
            ["16", "17", "18", "19", "20", "21", "22", "23", "24"]
        );
    }

    /// A lognormal's median and p95 are where the user put them: exp(sigma z) at z = 0 and at
    /// z = 1.6449 (the normal's 95th percentile).
    #[test]
    fn a_lognormal_keeps_its_median_and_p95() {
        let (lognormal, written) = input("{ lognormal = { median = \"250ms\", p95 = \"400ms\" } }");
        assert_eq!(value_at(&lognormal, written, 0.5), "250000us");
        assert_eq!(value_at(&lognormal, written, 0.95), "400000us");
        let (normal, written) = input("{ normal = { mean = 1.0, sd = 0.1, max = 1.1 } }");
        assert_eq!(value_at(&normal, written, 0.5), "1");
        assert_eq!(value_at(&normal, written, 0.999), "1.1");
        let (choices, written) = input("{ choices = [\"fifo\", \"lifo\", 3] }");
        assert_eq!(value_at(&choices, written, 0.1), "fifo");
        assert_eq!(value_at(&choices, written, 0.99), "3");
    }
}
