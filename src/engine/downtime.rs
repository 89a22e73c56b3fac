//! When a service was down after crashing under overload, kept in bounded memory.
//!
//! The charts draw each crash as a block along the bottom of the plot, so a run keeps when
//! each one went down and came back. A crash loop can crash a service millions of times (one
//! crash per request admitted, restarting within microseconds): a list of every crash grew
//! with them (16 bytes each) and drew one SVG rectangle each, hundreds of megabytes of
//! `report.html` for a picture no wider than the screen. What a chart can show of them is
//! bounded by its width in pixels, so the record is too: periods down that touch are one
//! period, and when more than [`MAX_PERIODS`] are kept the shortest gaps are closed (the gap
//! merged doubles) until half as many are left. Periods apart by more than the gap merged are
//! kept exactly; the gap merged stays below `4 * run / MAX_PERIODS`, under half a pixel of the
//! widest chart, so the picture is the same. The counts of crashes (`crashes`, `resets`) are
//! counted apart, in the service's buckets, and stay exact.
//!
//! [`merge_close`] is the one merge, used here and by the charts at their own resolution.

use crate::base::time::Micros;

/// The most periods down kept per service: [`Downtime::bytes`] at most.
pub const MAX_PERIODS: usize = 8192;

/// The periods a service was down (went down, came back), in time order, bounded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Downtime {
    periods: Vec<(Micros, Micros)>,
    /// Periods closer than this (or touching) have been merged into one.
    gap: Micros,
}

impl Downtime {
    /// The most memory a record takes: its periods and the spare capacity of its list, which
    /// grows to at most twice [`MAX_PERIODS`].
    pub const fn bytes() -> usize {
        2 * (MAX_PERIODS + 1) * std::mem::size_of::<(Micros, Micros)>()
    }

    /// A record of the periods in `periods` (in time order), as a run would have kept them.
    #[cfg(test)]
    pub fn of(periods: &[(Micros, Micros)]) -> Downtime {
        let mut downtime = Downtime::default();
        for &(down, up) in periods {
            downtime.record(down, up);
        }
        downtime
    }

    /// It went down at `down` (no earlier than the last period began) and came back at `up`.
    pub fn record(&mut self, down: Micros, up: Micros) {
        if let Some(last) = self.periods.last_mut()
            && down <= last.1.saturating_add(self.gap)
        {
            last.1 = last.1.max(up);
            return;
        }
        self.periods.push((down, up));
        if self.periods.len() > MAX_PERIODS {
            // Down to half, so that the next merge is as many crashes away.
            while self.periods.len() > MAX_PERIODS / 2 {
                self.gap = (2 * self.gap).max(1);
                let gap = self.gap;
                let periods = std::mem::take(&mut self.periods);
                self.periods = merge_close(periods, |end, start| start <= end.saturating_add(gap));
            }
        }
    }

    /// The periods down, in time order: every crash's, with those closer than the gap merged.
    pub fn periods(&self) -> &[(Micros, Micros)] {
        &self.periods
    }
}

/// Merges `periods`, sorted by start, where `close(end of the one before, start)` says they
/// are one: each period kept runs from the first start to the last end of those it merged.
pub fn merge_close<T: Copy + PartialOrd>(
    periods: impl IntoIterator<Item = (T, T)>,
    close: impl Fn(T, T) -> bool,
) -> Vec<(T, T)> {
    let mut merged: Vec<(T, T)> = Vec::new();
    for (start, end) in periods {
        match merged.last_mut() {
            Some(last) if close(last.1, start) => {
                if end > last.1 {
                    last.1 = end;
                }
            }
            _ => merged.push((start, end)),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Crashes apart are kept exactly; one that starts as the last ends is the same period.
    #[test]
    fn periods_apart_are_kept_and_touching_ones_merge() {
        let downtime = Downtime::of(&[(10, 20), (30, 40), (40, 50), (45, 60)]);
        assert_eq!(downtime.periods(), [(10, 20), (30, 60)]);
    }

    /// A crash loop of a million crashes, each 1 µs down and 1 to 4 µs apart (as issue 23's
    /// `restart_after = "1us"` loop), then one more crash a second later: the record stays
    /// within [`MAX_PERIODS`] (and its memory within [`Downtime::bytes`]), covers the same
    /// span, closed only gaps under `4 * span / MAX_PERIODS` (finer than any chart draws), and
    /// keeps the crash a second away apart. Without the bound it kept a million periods.
    #[test]
    fn a_million_crashes_keep_a_bounded_record() {
        let mut downtime = Downtime::default();
        let crashes: Micros = 1_000_000;
        let mut at = 0;
        for i in 0..crashes {
            downtime.record(at, at + 1);
            at += 2 + i % 4;
        }
        let loop_end = at;
        downtime.record(at + 1_000_000, at + 1_000_001);
        let periods = downtime.periods();
        assert!(periods.len() <= MAX_PERIODS, "{}", periods.len());
        assert!(periods.len() > 1);
        assert_eq!(periods.first().unwrap().0, 0);
        assert_eq!(*periods.last().unwrap(), (at + 1_000_000, at + 1_000_001));
        assert!(periods[periods.len() - 2].1 <= loop_end);
        let span = loop_end;
        assert!(
            downtime.gap < 4 * span / MAX_PERIODS as Micros,
            "{}",
            downtime.gap
        );
        assert!(periods.windows(2).all(|w| w[1].0 > w[0].1 + downtime.gap));
        assert!(downtime.periods.capacity() * 16 <= Downtime::bytes());
    }
}
