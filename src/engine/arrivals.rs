//! Open-loop arrivals, drawn ahead in batches.
//!
//! An open loop's arrivals depend on nothing the simulation does: the arrival stream is drawn
//! by arrivals alone, in the same order (the gap to the next arrival, with the draws that thin
//! it to the load curve, then which client it is). So they can be drawn a batch at a time,
//! where the logarithms of the gaps overlap one another, instead of one per event with the
//! event waiting for it: the same draws, in the same order, giving the same arrivals.
//!
//! The processes other than Poisson ([`ArrivalProcess`]) draw from the same stream in an order
//! of their own, and an MMPP's changes of state from a stream of their own, so that adding them
//! moved no Poisson draw. A batch process and an MMPP follow the load curve by thinning as
//! Poisson does (a thinned batch process is one whose batches come at `rate * factor(t)`, a
//! thinned MMPP one whose rates are scaled by the factor); evenly spaced arrivals cannot be
//! thinned (the kept ones would not be even), so they are spaced evenly in the integral of the
//! load instead ([`CapacityCurve::time_after_area`]). Recorded arrivals are at their times and
//! draw only their clients, as a Poisson arrival draws its own.

use crate::base::capacity::CapacityCurve;
use crate::base::random::{Random, Stream};
use crate::base::time::{MICROS_PER_SECOND, Micros};
use crate::scenario::arrivals::{ArrivalProcess, Mmpp};

/// Arrivals drawn per batch.
const BATCH: usize = 64;

/// What shapes the arrivals: their rate over time and how they bunch.
#[derive(Debug)]
pub(super) struct Shape<'m> {
    /// Mean time between arrivals at a load factor of 1, in microseconds.
    pub mean_gap_us: f64,
    pub load: Option<&'m CapacityCurve>,
    /// The load curve's highest factor (1 without a curve).
    pub load_peak: f64,
    pub process: &'m ArrivalProcess,
    /// The stream of an MMPP's changes of state.
    pub phases: Stream,
}

/// Where an MMPP is: its state, when it leaves it, and the mean gap at the load's peak in
/// each state.
#[derive(Debug)]
struct Phase {
    burst: bool,
    leave_us: f64,
    peak_gaps_us: [f64; 2],
    stays_us: [f64; 2],
}

/// The arrivals of an open loop, in order.
#[derive(Debug)]
pub(super) struct OpenArrivals<'m> {
    stream: Stream,
    /// Mean time between arrivals at the load curve's peak, in microseconds.
    mean_gap_us: f64,
    shape: Shape<'m>,
    /// An MMPP's state.
    phase: Option<Phase>,
    /// The next recorded arrival's index.
    recorded: usize,
    clients: u64,
    duration: f64,
    /// When the last arrival drawn arrives, exactly as the gaps add up.
    last_us: f64,
    /// Drawn and not yet taken: when, and which client; the next is at `next`.
    ahead: Vec<(Micros, u32)>,
    next: usize,
    /// No arrival is left before the end.
    done: bool,
}

impl<'m> OpenArrivals<'m> {
    /// Arrivals of `clients` clients, shaped by `shape`, until `duration`.
    pub(super) fn new(
        stream: Stream,
        mut shape: Shape<'m>,
        clients: u64,
        duration: Micros,
    ) -> OpenArrivals<'m> {
        let mean_rate = MICROS_PER_SECOND as f64 / shape.mean_gap_us;
        let phase = Mmpp::of(shape.process, mean_rate).map(|mmpp| {
            let micros = MICROS_PER_SECOND as f64;
            let stays_us = mmpp.stays.map(|stay| stay * micros);
            let burst = shape.phases.unit() < stays_us[1] / (stays_us[0] + stays_us[1]);
            let state = usize::from(burst);
            Phase {
                burst,
                leave_us: shape.phases.exponential(stays_us[state]),
                peak_gaps_us: mmpp.rates.map(|rate| micros / (rate * shape.load_peak)),
                stays_us,
            }
        });
        OpenArrivals {
            stream,
            mean_gap_us: shape.mean_gap_us / shape.load_peak,
            shape,
            phase,
            recorded: 0,
            clients,
            duration: duration as f64,
            last_us: 0.0,
            ahead: Vec::with_capacity(BATCH),
            next: 0,
            done: false,
        }
    }

    /// The next arrival before the end, and its client. With a load curve, arrivals are drawn
    /// at the curve's peak rate and thinned (kept with probability `factor(t) / peak`), which
    /// gives a Poisson process of rate `rate * factor(t)` from the arrival stream alone.
    #[inline]
    pub(super) fn next(&mut self) -> Option<(Micros, u32)> {
        if self.next == self.ahead.len() {
            self.draw_batch();
        }
        let arrival = self.ahead.get(self.next).copied();
        self.next += 1;
        arrival
    }

    fn draw_batch(&mut self) {
        self.ahead.clear();
        self.next = 0;
        while !self.done && self.ahead.len() < BATCH {
            let size = match *self.shape.process {
                ArrivalProcess::Poisson => {
                    self.next_thinned(|arrivals| arrivals.mean_gap_us);
                    1
                }
                ArrivalProcess::Deterministic => {
                    self.next_even();
                    1
                }
                ArrivalProcess::Batch { size } => {
                    self.next_thinned(|arrivals| arrivals.mean_gap_us * size.get() as f64);
                    size.get()
                }
                ArrivalProcess::Mmpp { .. } => {
                    self.next_modulated();
                    1
                }
                ArrivalProcess::Recorded { ref at_us } => {
                    self.last_us = at_us
                        .get(self.recorded)
                        .map_or(f64::INFINITY, |&at| at as f64);
                    self.recorded += 1;
                    1
                }
            };
            if self.last_us >= self.duration {
                self.done = true;
            } else {
                for _ in 0..size {
                    let client = self.stream.index(self.clients) as u32;
                    self.ahead.push((self.last_us as Micros, client));
                }
            }
        }
    }

    /// Moves to the next arrival of a Poisson process of mean gap `gap` at the load's peak,
    /// thinned to the load curve, or past the end.
    #[inline]
    fn next_thinned(&mut self, gap: impl Fn(&Self) -> f64) {
        loop {
            self.last_us += self.stream.exponential(gap(self));
            if self.kept() {
                break;
            }
        }
    }

    /// Whether the arrival drawn at `last_us` is kept: it is past the end (which ends the
    /// arrivals), or there is no load curve, or a draw falls under `factor / peak`.
    #[inline]
    fn kept(&mut self) -> bool {
        let Some(load) = self.shape.load else {
            return true;
        };
        let keep = load.factor(self.last_us as Micros) / self.shape.load_peak;
        self.last_us >= self.duration || self.stream.unit() < keep
    }

    /// Moves to the next evenly spaced arrival: the `k`-th (from 0) where the load's integral
    /// from zero reaches `k + 1/2` mean gaps at a factor of 1.
    fn next_even(&mut self) {
        let gap = self.mean_gap_us * self.shape.load_peak;
        // Only the first arrival is at zero before it is drawn: the others are after it.
        let area = if self.last_us == 0.0 { gap / 2.0 } else { gap };
        self.last_us = match self.shape.load {
            None => self.last_us + area,
            Some(load) => load
                .time_after_area(self.last_us, area)
                .unwrap_or(f64::INFINITY),
        };
    }

    /// Moves to the next arrival of the MMPP, thinned to the load curve: within a state, a
    /// Poisson process at that state's rate; a gap that would reach past the change of state
    /// is drawn again from the change (the exponential forgets how long it waited).
    fn next_modulated(&mut self) {
        loop {
            let phase = self.phase.as_mut().expect("an MMPP has a phase");
            let state = usize::from(phase.burst);
            let arrival = self.last_us + self.stream.exponential(phase.peak_gaps_us[state]);
            if arrival >= phase.leave_us {
                self.last_us = phase.leave_us;
                phase.burst = !phase.burst;
                phase.leave_us += self
                    .shape
                    .phases
                    .exponential(phase.stays_us[usize::from(phase.burst)]);
                if self.last_us >= self.duration {
                    return;
                }
                continue;
            }
            self.last_us = arrival;
            if self.kept() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::capacity::CapacityPoint;
    use crate::base::random::Purpose;
    use crate::base::time::Duration;
    use crate::base::values::{AtLeastOne, Bounded, Factor};
    use toml::Spanned;

    const SECOND: f64 = MICROS_PER_SECOND as f64;

    /// Every arrival of `process` at `rate` per second over `seconds`, shaped by `load`.
    fn arrival_times(
        process: ArrivalProcess,
        rate: f64,
        seconds: f64,
        load: Option<&CapacityCurve>,
        seed: u64,
    ) -> Vec<Micros> {
        let mut arrivals = OpenArrivals::new(
            Stream::new(seed, Purpose::Arrivals),
            Shape {
                mean_gap_us: SECOND / rate,
                load,
                load_peak: load.map_or(1.0, CapacityCurve::peak_factor),
                process: &process,
                phases: Stream::new(seed, Purpose::ArrivalPhases),
            },
            1000,
            (seconds * SECOND) as Micros,
        );
        std::iter::from_fn(|| arrivals.next().map(|(time, _)| time)).collect()
    }

    /// Counts of `times` in the windows `[k * every, k * every + window)` that end by `end`.
    fn window_counts(times: &[Micros], window: f64, every: f64, end: f64) -> Vec<f64> {
        let windows = ((end - window) / every) as usize + 1;
        let mut counts = vec![0.0; windows];
        for &time in times {
            let k = (time as f64 / (every * SECOND)) as usize;
            if k < windows && (time as f64) < (k as f64 * every + window) * SECOND {
                counts[k] += 1.0;
            }
        }
        counts
    }

    /// The index of dispersion of `counts` (independent windows), with its standard error by
    /// the delta method: for `I = S^2 / m`, `Var I ≈ (Var S^2 + I^2 Var m - 2 I Cov(S^2, m)) /
    /// m^2`, with `Var S^2 ≈ (mu4 - S^4) / n`, `Var m = S^2 / n` and `Cov(S^2, m) ≈ mu3 / n`,
    /// the central moments estimated from the sample (Kendall & Stuart, sampling moments).
    fn dispersion(counts: &[f64]) -> (f64, f64) {
        let n = counts.len() as f64;
        let mean = counts.iter().sum::<f64>() / n;
        let moment = |k: i32| counts.iter().map(|c| (c - mean).powi(k)).sum::<f64>() / n;
        let variance = moment(2) * n / (n - 1.0);
        let idc = variance / mean;
        let var_s2 = (moment(4) - variance * variance) / n;
        let var_idc =
            (var_s2 + idc * idc * variance / n - 2.0 * idc * moment(3) / n) / (mean * mean);
        (idc, var_idc.max(0.0).sqrt())
    }

    /// Asserts `measured` within five standard errors of `expected`: a chance of about 6 in
    /// 10 million of failing by chance, for a normal estimate.
    fn assert_near(what: &str, (measured, error): (f64, f64), expected: f64) {
        assert!(
            (measured - expected).abs() <= 5.0 * error,
            "{what}: {measured} ± {error}, expected {expected}"
        );
    }

    fn step_curve() -> CapacityCurve {
        let points: Vec<CapacityPoint> = [(0, 0.5), (300_000, 0.5), (300_000, 2.0), (600_000, 1.0)]
            .iter()
            .map(|&(ms, factor)| CapacityPoint {
                at: Spanned::new(0..0, Duration::from_ms(ms)),
                factor: Factor(factor),
            })
            .collect();
        CapacityCurve::new(1, &points)
    }

    /// Poisson counts: IDC = 1 (SYSTEMS §5), over 10,000 windows of 0.1 s at 1,000/s.
    #[test]
    fn poisson_counts_disperse_as_their_mean() {
        let times = arrival_times(ArrivalProcess::Poisson, 1000.0, 1000.0, None, 3);
        assert_near(
            "poisson IDC",
            dispersion(&window_counts(&times, 0.1, 0.1, 1000.0)),
            1.0,
        );
    }

    /// Evenly spaced arrivals: every 0.1 s window holds exactly 100 at 1,000/s (IDC = 0, k6's
    /// constant-arrival-rate), and under a load curve the `k`-th arrival is where the load's
    /// integral reaches `k + 1/2` gaps, so the count before `t` is `floor(Λ(t) / gap + 1/2)`.
    #[test]
    fn deterministic_arrivals_are_even_in_the_load() {
        let times = arrival_times(ArrivalProcess::Deterministic, 1000.0, 100.0, None, 3);
        let counts = window_counts(&times, 0.1, 0.1, 100.0);
        assert!(counts.iter().all(|&count| count == 100.0), "{counts:?}");
        assert_eq!(dispersion(&counts).0, 0.0);
        // 0.5 for 300 s, 2 for the instant after, falling linearly to 1 at 600 s, then 1.
        let curve = step_curve();
        let times = arrival_times(ArrivalProcess::Deterministic, 10.0, 900.0, Some(&curve), 3);
        let integral = |t: f64| match t {
            t if t <= 300.0 => 0.5 * t,
            t if t <= 600.0 => 150.0 + (t - 300.0) * (2.0 - (t - 300.0) / 600.0),
            t => 600.0 + (t - 600.0),
        };
        for t in [1.0, 100.0, 299.9, 300.05, 450.0, 599.0, 750.0, 899.99] {
            let before = times
                .iter()
                .filter(|&&time| (time as f64) < t * SECOND)
                .count();
            let expected = (integral(t) * 10.0 + 0.5).floor() as usize;
            assert!(
                before.abs_diff(expected) <= 1,
                "{before} arrivals before {t}s, expected {expected}"
            );
        }
        assert_eq!(times.len(), (integral(900.0) * 10.0 + 0.5).floor() as usize);
    }

    /// Batches of 4 at a batch rate of 1000/4 per second: the count is 4 times a Poisson
    /// count, so IDC = E[B^2] / E[B] = 4 (SYSTEMS §5), and every instant holds 4 arrivals.
    #[test]
    fn batches_disperse_as_their_size() {
        let batch = ArrivalProcess::Batch { size: Bounded(4) };
        let times = arrival_times(batch, 1000.0, 1000.0, None, 3);
        assert!(
            times
                .chunks(4)
                .all(|chunk| chunk.iter().all(|&t| t == chunk[0]))
        );
        assert_near(
            "batch IDC",
            dispersion(&window_counts(&times, 0.1, 0.1, 1000.0)),
            4.0,
        );
    }

    /// A two-state MMPP (burst 5 times the calm rate, 0.2 s in burst, 0.8 s calm, 200/s on
    /// average): IDC(t) as [`Mmpp::idc`] gives it (8.14 at 0.05 s, 36.09 at 0.5 s, 47.52 at
    /// 2 s, against a plateau of 51.57), measured on windows 20 mean switching times apart (correlation
    /// e^-20), so that they are independent.
    #[test]
    fn mmpp_counts_disperse_as_the_closed_form() {
        let process = ArrivalProcess::Mmpp {
            burst: AtLeastOne(5.0),
            burst_time: Duration::from_ms(200),
            calm_time: Duration::from_ms(800),
        };
        let mmpp = Mmpp::of(&process, 200.0).unwrap();
        let apart = 20.0 / (1.0 / 0.2 + 1.0 / 0.8);
        let seconds = 20_000.0;
        let times = arrival_times(process, 200.0, seconds, None, 3);
        for window in [0.05, 0.5, 2.0] {
            let counts = window_counts(&times, window, window + apart, seconds);
            assert_near(
                &format!("MMPP IDC over {window}s"),
                dispersion(&counts),
                mmpp.idc(window),
            );
        }
        // The closed form by hand: calm 111.1/s, burst 555.6/s, r = 6.25/s.
        for (window, by_hand) in [(0.05, 8.1387), (0.5, 36.0971), (2.0, 47.5226)] {
            assert!(
                (mmpp.idc(window) - by_hand).abs() < 1e-3,
                "{}",
                mmpp.idc(window)
            );
        }
        // The mean rate: Var N(T) = IDC(T) E N(T) over the whole run.
        let expected = 200.0 * seconds;
        let error = (mmpp.idc(seconds) * expected).sqrt();
        assert_near("MMPP count", (times.len() as f64, error), expected);
    }

    /// Under a load curve every process keeps the mean count `rate * ∫ load`: the step curve
    /// integrates to 150 + 450 + 300 = 900 over 900 s, so 9,000 a seed at 10/s, 180,000 over
    /// 20 seeds, within 5 standard deviations of `sqrt(IDC * mean)` (the MMPP's plateau IDC
    /// bounds its variance).
    #[test]
    fn every_process_follows_the_load_curve() {
        let curve = step_curve();
        let integral = 150.0 + 300.0 * 1.5 + 300.0;
        let processes = [
            (ArrivalProcess::Poisson, 1.0),
            (ArrivalProcess::Batch { size: Bounded(3) }, 3.0),
            (
                ArrivalProcess::Mmpp {
                    burst: AtLeastOne(4.0),
                    burst_time: Duration::from_ms(1000),
                    calm_time: Duration::from_ms(3000),
                },
                Mmpp::of(
                    &ArrivalProcess::Mmpp {
                        burst: AtLeastOne(4.0),
                        burst_time: Duration::from_ms(1000),
                        calm_time: Duration::from_ms(3000),
                    },
                    20.0,
                )
                .unwrap()
                .idc(f64::INFINITY),
            ),
        ];
        for (process, idc) in processes {
            let total: usize = (0..20)
                .map(|seed| arrival_times(process.clone(), 10.0, 900.0, Some(&curve), seed).len())
                .sum();
            let expected = 20.0 * 10.0 * integral;
            assert_near(
                &format!("{process:?}"),
                (total as f64, (idc * expected).sqrt()),
                expected,
            );
        }
    }
}
