//! The empirical distribution of measured latencies: `{ samples = "latencies.txt" }` or
//! `{ samples = ["12ms", "15ms", ...] }`.
//!
//! A draw is one of the samples, each equally likely, without interpolation: the draws are
//! values that were measured, their mean is the samples' mean exactly, and nothing is invented
//! beyond the largest (a file of a few thousand latencies says little of its p99.99; use
//! quantiles or a histogram, which have a tail, for that).
//!
//! A file has one value per line: a duration with a unit (`12.5ms`), or a bare number in the
//! table's `unit` (rounded to the microsecond); blank lines and lines starting with `#` are
//! skipped. It is at most [`MAX_DATA_BYTES`] and [`MAX_SAMPLES`] values.

use crate::base::random::Random;
use crate::base::time::{Duration, Micros};

use super::buckets::bare_or_duration;

/// The most samples: enough for a p99.9 of a hundred values above it, and a resolved scenario
/// (which writes them out, about ten bytes each) well inside its 4 MiB.
pub const MAX_SAMPLES: usize = 100_000;

/// The largest data file (samples or histogram) read.
pub const MAX_DATA_BYTES: u64 = 2 * 1024 * 1024;

/// An empirical distribution.
#[derive(Debug, Clone, PartialEq)]
pub struct Samples {
    /// The samples, sorted.
    sorted: Vec<Micros>,
    /// Their mean, in µs.
    mean: f64,
}

impl Samples {
    /// The distribution of `values`: 1 to [`MAX_SAMPLES`] of them.
    pub fn new(mut values: Vec<Micros>) -> Result<Samples, String> {
        if values.is_empty() || values.len() > MAX_SAMPLES {
            return Err(format!("{} samples: give 1 to {MAX_SAMPLES}", values.len()));
        }
        values.sort_unstable();
        let mean = values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64;
        Ok(Samples {
            sorted: values,
            mean,
        })
    }

    /// The samples, sorted.
    pub fn sorted(&self) -> &[Micros] {
        &self.sorted
    }

    /// Their mean, in µs.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// One of them, uniformly.
    #[inline]
    pub fn sample(&self, stream: &mut impl Random) -> Micros {
        self.sorted[stream.index(self.sorted.len() as u64) as usize]
    }
}

/// The unit of bare numbers in a samples file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Us,
    Ms,
    S,
}

impl Unit {
    /// Microseconds per unit.
    pub fn micros(self) -> f64 {
        match self {
            Unit::Us => 1.0,
            Unit::Ms => 1e3,
            Unit::S => 1e6,
        }
    }
}

/// The values of a samples file's text, bare numbers in `unit`; the error gives the line
/// (from 1) and why.
pub fn parse_samples(text: &str, unit: Option<Unit>) -> Result<Vec<Duration>, (usize, String)> {
    let mut values = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if values.len() == MAX_SAMPLES {
            return Err((
                index + 1,
                format!("more than {MAX_SAMPLES} samples; keep a random subset"),
            ));
        }
        let bare = !line.ends_with(|c: char| c.is_ascii_alphabetic());
        let value = match (bare, unit) {
            (true, None) => Err(format!(
                "{line:?} has no unit: write it with one (\"12.5ms\"), or give the table a `unit` (\"us\", \"ms\" or \"s\") for bare numbers"
            )),
            (_, unit) => bare_or_duration(line, unit.map_or(1.0, Unit::micros)),
        };
        values.push(value.map_err(|message| (index + 1, message))?);
    }
    if values.is_empty() {
        return Err((0, "no samples: the file has no values".into()));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::random::{Purpose, Stream};

    /// Draws are the samples, each equally likely: over 300,000 draws from three samples each
    /// one's share is within 4.5 binomial standard errors (`sqrt(p (1-p) / n)` = 0.00086 at
    /// p = 1/3) of 1/3, and the mean is the samples' mean (20ms) exactly.
    #[test]
    fn draws_are_the_samples_equally_often() {
        let samples = Samples::new(vec![30_000, 10_000, 20_000]).unwrap();
        assert_eq!(samples.mean(), 20_000.0);
        let mut stream = Stream::new(4, Purpose::Limit);
        let n = 300_000;
        let mut counts = [0usize; 3];
        for _ in 0..n {
            counts[(samples.sample(&mut stream) / 10_000 - 1) as usize] += 1;
        }
        let bound = 4.5 * (2.0 / 9.0 / n as f64).sqrt();
        for count in counts {
            assert!(
                (count as f64 / n as f64 - 1.0 / 3.0).abs() < bound,
                "{counts:?}"
            );
        }
    }

    #[test]
    fn files_are_read_line_by_line() {
        assert_eq!(
            parse_samples("# ms\n12.5\n\n3\n", Some(Unit::Ms)),
            Ok(vec![Duration(12_500), Duration(3_000)])
        );
        assert_eq!(
            parse_samples("1ms\n2s\n", None),
            Ok(vec![Duration(1_000), Duration(2_000_000)])
        );
        let (line, message) = parse_samples("1ms\n\nfast\n", None).unwrap_err();
        assert_eq!(line, 3);
        assert!(message.contains("\"fast\""), "{message}");
        assert_eq!(parse_samples("12\n", None).unwrap_err().0, 1);
    }
}
