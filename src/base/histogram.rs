//! A log-linear histogram of latencies: fixed memory, bounded relative error, exact merges.
//!
//! Values below `2 * S` microseconds are counted exactly; above, each power of two is split
//! into `S` equal bins, so a bin is at most `1/S` of its value wide and a percentile read at the
//! bin's midpoint is within `1/(2S)` of the true sample. With `S = 2^precision`, precision 7
//! gives 0.4% and costs about 4 000 bins for values up to a day. Counting is an index
//! computation and an increment, so recording every successful operation is cheap, and the
//! result does not depend on the order of recording.

use crate::base::time::Micros;

/// Counts of values in log-linear bins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    precision: u32,
    counts: Vec<u64>,
    total: u64,
}

impl Histogram {
    /// An empty histogram with `2^precision` bins per power of two.
    pub fn new(precision: u32) -> Histogram {
        Histogram {
            precision,
            counts: Vec::new(),
            total: 0,
        }
    }

    fn index(&self, value: Micros) -> usize {
        let highest_bit = 63 - value.max(1).leading_zeros();
        if highest_bit <= self.precision {
            return value as usize;
        }
        let shift = highest_bit - self.precision;
        ((shift as usize) << self.precision) + (value >> shift) as usize
    }

    /// The midpoint of bin `index`.
    fn value_of(&self, index: usize) -> f64 {
        let sub_buckets = 1usize << self.precision;
        if index < 2 * sub_buckets {
            return index as f64;
        }
        let shift = (index >> self.precision) - 1;
        let mantissa = (index & (sub_buckets - 1)) + sub_buckets;
        let low = (mantissa as f64) * (1u64 << shift) as f64;
        low + ((1u64 << shift) as f64 - 1.0) / 2.0
    }

    /// Counts one value.
    #[inline]
    pub fn record(&mut self, value: Micros) {
        let index = self.index(value);
        if index >= self.counts.len() {
            self.counts.resize(index + 1, 0);
        }
        self.counts[index] += 1;
        self.total += 1;
    }

    /// Values counted.
    pub fn len(&self) -> u64 {
        self.total
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Adds another histogram of the same precision.
    pub fn merge(&mut self, other: &Histogram) {
        assert_eq!(
            self.precision, other.precision,
            "merging different precisions"
        );
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.total += other.total;
    }

    /// The `q`-quantile (0 < q <= 1) by nearest rank, in microseconds; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (index, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Some(self.value_of(index));
            }
        }
        unreachable!("the counts sum to the total")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact() {
        let mut histogram = Histogram::new(7);
        for value in [0, 1, 5, 200, 255] {
            histogram.record(value);
        }
        assert_eq!(histogram.quantile(0.2), Some(0.0));
        assert_eq!(histogram.quantile(0.6), Some(5.0));
        assert_eq!(histogram.quantile(1.0), Some(255.0));
    }

    #[test]
    fn large_values_are_within_the_promised_relative_error() {
        let mut value: u64 = 256;
        while value < 1 << 40 {
            let mut histogram = Histogram::new(7);
            histogram.record(value);
            let read = histogram.quantile(0.5).unwrap();
            let error = (read - value as f64).abs() / value as f64;
            assert!(error <= 1.0 / 256.0, "{value} read as {read}");
            value = value * 9 / 7 + 1;
        }
    }

    #[test]
    fn quantiles_by_nearest_rank_and_merges() {
        let mut a = Histogram::new(7);
        let mut b = Histogram::new(7);
        for value in 1..=100 {
            if value % 2 == 0 {
                a.record(value)
            } else {
                b.record(value)
            }
        }
        a.merge(&b);
        assert_eq!(a.len(), 100);
        assert_eq!(a.quantile(0.5), Some(50.0));
        assert_eq!(a.quantile(0.99), Some(99.0));
        assert_eq!(Histogram::new(7).quantile(0.5), None);
    }
}
