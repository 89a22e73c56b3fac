//! How an open workload's operations arrive: `clients.arrivals`, the process (Poisson, evenly
//! spaced, in batches, or a two-state Markov-modulated Poisson process), and `clients.replay`,
//! a recorded rate curve (a Prometheus `rate()` export) replayed as the load, or a recorded
//! list of request times (an access log's) replayed arrival for arrival.
//!
//! Every process keeps the mean rate at `count * rate * load(t)`, so that changing the process
//! changes how arrivals bunch, not how many there are: a retry storm's trigger can then be told
//! apart from its size. A replay is read when the scenario is loaded, relative to the scenario
//! file as an `import` is, and becomes `rate` and a piecewise-constant `load`: the resolved
//! scenario a run writes holds the curve itself, so it reloads and runs the same without the
//! file, and a sweep reads the file once. A file of timestamps becomes the `recorded` process,
//! the arrival times themselves, for the same reason: they are bounded
//! ([`MAX_REPLAY_TIMESTAMPS`]) so that the resolved scenario holding them stays readable.

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::base::capacity::CapacityPoint;
use crate::base::time::{Duration, MICROS_PER_SECOND, Micros};
use crate::base::values::{AtLeastOne, Bounded, Factor, Positive};

/// `clients.arrivals`: the process an open workload's operations arrive by, a table naming its
/// `process`, or for a process without settings just its name (`"poisson"`,
/// `"deterministic"`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(
    remote = "Self",
    tag = "process",
    rename_all = "kebab-case",
    deny_unknown_fields
)]
pub enum ArrivalProcess {
    /// Exponential gaps (the default): counts in a window have variance equal to their mean.
    #[default]
    Poisson,
    /// Evenly spaced, as k6's `constant-arrival-rate` starts iterations: the `k`-th operation
    /// (from 0) starts when the load integrated from time zero reaches `k + 1/2` mean gaps,
    /// so a constant load spaces them exactly `1 / (count * rate)` apart.
    Deterministic,
    /// Bursts of `size` operations at one instant, the bursts a Poisson process of
    /// `count * rate / size` per second.
    Batch {
        /// Operations per burst, 1 to 10 000.
        size: Bounded<1, 10_000>,
    },
    /// A two-state Markov-modulated Poisson process: calm and burst states, each left after an
    /// exponential time of mean `calm_time` and `burst_time`; in the burst state the rate is
    /// `burst` times the calm one. The calm rate is set so that the mean rate over both states
    /// is `count * rate`.
    Mmpp {
        /// The burst state's rate over the calm state's, 1 to 1e9.
        burst: AtLeastOne,
        /// Mean time in the burst state, at least 1 ms.
        burst_time: Duration,
        /// Mean time in the calm state, at least 1 ms.
        calm_time: Duration,
    },
    /// Exactly the operations at these times, in microseconds from the run's start, not
    /// decreasing, the client of each drawn as a Poisson arrival's is: what `clients.replay`'s
    /// `timestamps` resolves to. No `rate` or `load`.
    Recorded {
        /// The arrival times, at most [`MAX_REPLAY_TIMESTAMPS`].
        at_us: Vec<Micros>,
    },
}

impl Serialize for ArrivalProcess {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ArrivalProcess::serialize(self, serializer)
    }
}

impl<'de> Deserialize<'de> for ArrivalProcess {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ProcessVisitor)
    }
}

/// Reads a process from its name or from its table.
struct ProcessVisitor;

impl<'de> serde::de::Visitor<'de> for ProcessVisitor {
    type Value = ArrivalProcess;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str(
            "\"poisson\", \"deterministic\" or a table such as { process = \"batch\", size = 4 }",
        )
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<ArrivalProcess, E> {
        match name {
            "poisson" => Ok(ArrivalProcess::Poisson),
            "deterministic" => Ok(ArrivalProcess::Deterministic),
            "batch" | "mmpp" | "recorded" => Err(E::custom(format!(
                "{name:?} has settings: write it as a table, {}",
                match name {
                    "batch" => "{ process = \"batch\", size = 4 }",
                    "mmpp" => {
                        "{ process = \"mmpp\", burst = 5, burst_time = \"2s\", calm_time = \"20s\" }"
                    }
                    _ => "{ process = \"recorded\", at_us = [0, 250000] }",
                }
            ))),
            _ => Err(E::unknown_variant(
                name,
                &["poisson", "deterministic", "batch", "mmpp", "recorded"],
            )),
        }
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> Result<ArrivalProcess, M::Error> {
        ArrivalProcess::deserialize(serde::de::value::MapAccessDeserializer::new(map))
    }
}

impl ArrivalProcess {
    /// The default process, which a resolved scenario leaves out.
    pub fn is_poisson(&self) -> bool {
        *self == ArrivalProcess::Poisson
    }

    /// The largest index of dispersion of counts (variance over mean) the process reaches over
    /// any window, at a mean rate of at most `peak_rate` per second: what a count's margin
    /// scales with. 1 for Poisson and (at most, with thinning to a load curve) deterministic
    /// arrivals, `size` for batches, and the MMPP's plateau (see [`Mmpp::idc`]).
    pub fn dispersion_bound(&self, peak_rate: f64) -> f64 {
        match *self {
            ArrivalProcess::Poisson | ArrivalProcess::Deterministic => 1.0,
            ArrivalProcess::Batch { size } => size.get() as f64,
            ArrivalProcess::Mmpp { .. } => {
                Mmpp::of(self, peak_rate).map_or(1.0, |mmpp| mmpp.idc(f64::INFINITY))
            }
            ArrivalProcess::Recorded { .. } => 0.0,
        }
    }

    /// The recorded arrival times, if the process is `recorded`.
    pub fn recorded(&self) -> Option<&[Micros]> {
        match self {
            ArrivalProcess::Recorded { at_us } => Some(at_us),
            _ => None,
        }
    }
}

/// The most recorded arrivals in any window of `window` microseconds starting before
/// `duration`: a sliding window over the sorted times.
pub fn most_within(at_us: &[Micros], window: Micros, duration: Micros) -> usize {
    let mut first = 0;
    let mut most = 0;
    for (last, &at) in at_us
        .iter()
        .enumerate()
        .take_while(|&(_, &at)| at < duration)
    {
        while at - at_us[first] >= window.max(1) {
            first += 1;
        }
        most = most.max(last + 1 - first);
    }
    most
}

/// A two-state MMPP's rates, as the engine runs it and the tests check it: the calm state
/// (index 0) and the burst state (index 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mmpp {
    /// Rate in each state, per second.
    pub rates: [f64; 2],
    /// Mean time in each state, in seconds.
    pub stays: [f64; 2],
}

impl Mmpp {
    /// The MMPP of `process` (if it is one) whose mean rate is `mean_rate` per second: with
    /// `p` the burst state's share of time, `burst_time / (burst_time + calm_time)`, the calm
    /// rate is `mean_rate / (1 - p + p * burst)`.
    pub fn of(process: &ArrivalProcess, mean_rate: f64) -> Option<Mmpp> {
        let ArrivalProcess::Mmpp {
            burst,
            burst_time,
            calm_time,
        } = *process
        else {
            return None;
        };
        let stays = [calm_time.as_secs_f64(), burst_time.as_secs_f64()];
        let p = stays[1] / (stays[0] + stays[1]);
        let calm = mean_rate / (1.0 - p + p * burst.get());
        Some(Mmpp {
            rates: [calm, calm * burst.get()],
            stays,
        })
    }

    /// The index of dispersion of counts over a window of `t` seconds in the stationary
    /// process (`f64::INFINITY`: its limit):
    ///
    /// `IDC(t) = 1 + 2 p0 p1 (l0 - l1)^2 / (l r) * (1 - (1 - e^(-r t)) / (r t))`
    ///
    /// with `r0 = 1 / stay0` and `r1 = 1 / stay1` the rates of leaving each state,
    /// `r = r0 + r1`, `p0 = r1 / r`, `p1 = r0 / r` the shares of time and `l = p0 l0 + p1 l1`
    /// the mean rate. Derived as for any doubly stochastic Poisson process:
    /// `Var N(t) = E N(t) + Var ∫_0^t L(s) ds`, where the rate `L` has covariance
    /// `p0 p1 (l0 - l1)^2 e^(-r |u|)`, so `Var ∫ = 2 ∫_0^t (t - u) cov(u) du`; this is the
    /// 2-state case of Heffes & Lucantoni (1986), "A Markov modulated characterization of
    /// packetized voice and data traffic", IEEE JSAC 4(6), eq. (9), and of Fischer &
    /// Meier-Hellstern (1993), "The Markov-modulated Poisson process (MMPP) cookbook".
    pub fn idc(&self, t: f64) -> f64 {
        let [r0, r1] = [1.0 / self.stays[0], 1.0 / self.stays[1]];
        let r = r0 + r1;
        let [p0, p1] = [r1 / r, r0 / r];
        let mean = p0 * self.rates[0] + p1 * self.rates[1];
        let plateau = 2.0 * p0 * p1 * (self.rates[0] - self.rates[1]).powi(2) / (mean * r);
        let shape = if t.is_infinite() {
            1.0
        } else {
            1.0 - (-(-r * t).exp_m1()) / (r * t)
        };
        1.0 + plateau * shape
    }
}

/// The shortest mean time in an MMPP state: a switch is a step of the arrival generator, so
/// this bounds their number (an hour at 1 ms: 3.6 million).
const SHORTEST_STAY: Micros = 1_000;

/// The problem with `process`, if any, for an open workload.
pub(super) fn check_process(process: &ArrivalProcess) -> Result<(), String> {
    if let ArrivalProcess::Recorded { at_us } = process {
        if at_us.len() > MAX_REPLAY_TIMESTAMPS {
            return Err(format!(
                "{} recorded arrivals; at most {MAX_REPLAY_TIMESTAMPS}",
                at_us.len()
            ));
        }
        if let Some(index) = at_us.windows(2).position(|pair| pair[1] < pair[0]) {
            return Err(format!(
                "recorded arrival at_us[{}] = {} is before the one before it; times must not decrease",
                index + 1,
                at_us[index + 1]
            ));
        }
    }
    if let ArrivalProcess::Mmpp {
        burst_time,
        calm_time,
        ..
    } = process
        && (burst_time.micros() < SHORTEST_STAY || calm_time.micros() < SHORTEST_STAY)
    {
        return Err(format!(
            "an MMPP's burst_time and calm_time must be at least 1ms (they are {burst_time} and {calm_time}): each switch of state is a step of the simulation"
        ));
    }
    Ok(())
}

/// `clients.replay`: the load as a recorded rate curve, replacing `rate` and `load`, or the
/// arrivals as a recorded list of request times.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Replay {
    /// The file of `(unix time, requests per second)` samples, relative to the scenario file: a
    /// CSV of `time,value` lines (a header line and `#` comments are skipped), or Prometheus'
    /// `query_range` JSON (its `data.result[0].values`, or the bare `[[time, "value"], ...]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rates: Option<Spanned<String>>,
    /// The file of request times, one a line in decimal seconds (see [`parse_timestamps`]),
    /// relative to the scenario file; instead of `rates`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<Spanned<String>>,
    /// Multiplies every rate (default 1; rates only).
    #[serde(default = "one")]
    pub scale: Positive,
    /// Plays the file's time this many times as fast (default 1; 24 plays a day in an hour),
    /// rates unchanged: the run has `1 / speedup` of the operations.
    #[serde(default = "one")]
    pub speedup: Positive,
    /// Where the replayed window starts, after the file's first sample (default: at it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Spanned<Duration>>,
    /// Where the replayed window ends, after the file's first sample (default: one step after
    /// the last sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Spanned<Duration>>,
    /// A lead-in replayed before `from` (default none), so that the state at `from` is the
    /// one the earlier load left; the run's time zero is `from - warmup`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Spanned<Duration>>,
}

fn one() -> Positive {
    Positive(1.0)
}

/// The most lines a timestamps file may have: 100,000 unix times to the microsecond
/// (`1700000000.123456`, 18 bytes a line) fill 1.8 MB, inside a data file's 2 MiB, and their
/// offsets written in a resolved scenario (at most 12 bytes each for a day) 1.2 MB, inside a
/// scenario's 4 MiB.
pub const MAX_REPLAY_TIMESTAMPS: usize = 100_000;

/// A timestamps file's times, in whole microseconds after its first line's, in file order:
/// one time a line, decimal seconds (unix or relative), rounded to the nearest microsecond
/// (a half up), exactly as written (no binary fraction); blank lines and `#` comments are
/// skipped. A time before the line before it is refused with its line: a log written out of
/// order is sorted by its writer, who knows which order is right (`sort -n`).
pub(super) fn parse_timestamps(text: &str) -> Result<Vec<Micros>, FileProblem> {
    let mut times: Vec<Micros> = Vec::new();
    let mut origin = None;
    for (index, line) in text.lines().enumerate() {
        let line_number = index + 1;
        let content = line.trim();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if times.len() == MAX_REPLAY_TIMESTAMPS {
            return Err((
                line_number,
                format!("more than {MAX_REPLAY_TIMESTAMPS} timestamps, the most a file may have"),
            ));
        }
        let micros = decimal_micros(content).ok_or_else(|| {
            (
                line_number,
                format!(
                    "{content:?} is not a time in seconds (a decimal such as 1700000000.123456 or 12.5)"
                ),
            )
        })?;
        let origin = *origin.get_or_insert(micros);
        let at = micros.checked_sub(origin).ok_or_else(|| {
            (
                line_number,
                format!("time {content} is before the first line's; times must not decrease (sort the file: `sort -n`)"),
            )
        })?;
        if let Some(&previous) = times.last()
            && at < previous
        {
            return Err((
                line_number,
                format!(
                    "time {content} is before the line before it; times must not decrease (sort the file: `sort -n`)"
                ),
            ));
        }
        times.push(at);
    }
    if times.is_empty() {
        return Err((0, "no timestamps: nothing to replay".into()));
    }
    Ok(times)
}

/// Decimal seconds `text` (digits, an optional `.` and digits) in microseconds, the seventh
/// decimal rounding half up; at most 1e11 seconds.
fn decimal_micros(text: &str) -> Option<Micros> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty() || !digits(whole) || !digits(fraction) {
        return None;
    }
    let seconds: Micros = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    if seconds >= 100_000_000_000 {
        return None;
    }
    let mut micros: Micros = 0;
    for position in 0..6 {
        micros = micros * 10
            + fraction
                .as_bytes()
                .get(position)
                .map_or(0, |b| Micros::from(b - b'0'));
    }
    let round_up = fraction.as_bytes().get(6).is_some_and(|&b| b >= b'5');
    Some(seconds * MICROS_PER_SECOND + micros + Micros::from(round_up))
}

/// The arrival times `replay` gives from a timestamps file's `times`: those in the window
/// `[from - warmup, to)` of the file's time (`to` by default just after the last line), in the
/// run's time (`from - warmup` is zero) divided by `speedup` and rounded to the microsecond,
/// with how long the window lasts in the run (to one microsecond past its last).
pub(super) fn replay_times(
    replay: &Replay,
    times: &[Micros],
) -> Result<(Vec<Micros>, Micros), String> {
    if replay.scale.get() != 1.0 {
        return Err(
            "`scale` multiplies a rate curve; recorded arrivals cannot be scaled without inventing some: replay `rates`, or compress time with `speedup`".into(),
        );
    }
    let last = times[times.len() - 1];
    let window = Window::of(replay, last + 1, last, "line")?;
    let kept: Vec<Micros> = times
        .iter()
        .filter(|&&at| window.holds(at))
        .map(|&at| window.run_time(at))
        .collect();
    if kept.is_empty() {
        return Err("no timestamp is in the window: no operation would start".into());
    }
    // One microsecond past the window's last, so that every kept arrival is inside the run.
    Ok((kept, window.run_time(window.to - 1) + 1))
}

/// The part of a replayed file a run covers: file times `[start, to)`, where `start` is `from -
/// warmup`, the run's time zero, and run time is file time divided by `speedup`.
struct Window {
    start: Micros,
    to: Micros,
    speedup: f64,
}

impl Window {
    /// The window `replay` asks of a file that ends at `end_of_file` (what `to` defaults to),
    /// whose last `entry` ("line", "sample") is at `last`; the error says why it does not fit.
    fn of(
        replay: &Replay,
        end_of_file: Micros,
        last: Micros,
        entry: &str,
    ) -> Result<Window, String> {
        let micros =
            |value: &Option<Spanned<Duration>>| value.as_ref().map(|d| d.get_ref().micros());
        let from = micros(&replay.from).unwrap_or(0);
        let to = micros(&replay.to).unwrap_or(end_of_file);
        let warmup = micros(&replay.warmup).unwrap_or(0);
        if to > end_of_file || from >= to {
            return Err(format!(
                "the window from {} to {} is not within the file, which covers 0s to {} after its first {entry}",
                Duration(from),
                Duration(to),
                Duration(last)
            ));
        }
        let Some(start) = from.checked_sub(warmup) else {
            return Err(format!(
                "a warmup of {} before {} reaches before the file's first {entry}",
                Duration(warmup),
                Duration(from)
            ));
        };
        Ok(Window {
            start,
            to,
            speedup: replay.speedup.get(),
        })
    }

    /// Whether file time `at` is in the window.
    fn holds(&self, at: Micros) -> bool {
        at >= self.start && at < self.to
    }

    /// File time `at` (not before the window) in the run's time.
    fn run_time(&self, at: Micros) -> Micros {
        ((at - self.start) as f64 / self.speedup).round() as Micros
    }
}

/// The most samples a rate file may have: a day at one sample a second.
pub const MAX_REPLAY_SAMPLES: usize = 86_400;

/// A rate file's samples, in whole microseconds after the first, with their rates.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RateSamples {
    /// `(time after the first sample, requests per second)`, times increasing.
    pub samples: Vec<(Micros, f64)>,
    /// The step of the last sample: the gap before it.
    pub last_step: Micros,
}

/// An error in a rate file: the line (from 1; 0 for the file as a whole) and what is wrong.
pub(super) type FileProblem = (usize, String);

/// Parses a rate file's `text`: CSV, or Prometheus `query_range` JSON.
pub(super) fn parse_rates(text: &str) -> Result<RateSamples, FileProblem> {
    let trimmed = text.trim_start();
    let rows = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        json_rows(text)?
    } else {
        csv_rows(text)?
    };
    if rows.len() < 2 {
        return Err((
            0,
            format!(
                "{} samples; a rate curve needs at least two, a step apart",
                rows.len()
            ),
        ));
    }
    if rows.len() > MAX_REPLAY_SAMPLES {
        return Err((
            0,
            format!(
                "{} samples; at most {MAX_REPLAY_SAMPLES} (a day at one a second)",
                rows.len()
            ),
        ));
    }
    let origin = rows[0].1;
    let mut samples: Vec<(Micros, f64)> = Vec::with_capacity(rows.len());
    for &(line, time, value) in &rows {
        let at = ((time - origin) * MICROS_PER_SECOND as f64).round();
        if let Some(&(previous, _)) = samples.last()
            && at <= previous as f64
        {
            return Err((
                line,
                format!("time {time} is not after the sample before it; times must increase"),
            ));
        }
        samples.push((at as Micros, value));
    }
    let last_step = samples[samples.len() - 1].0 - samples[samples.len() - 2].0;
    Ok(RateSamples { samples, last_step })
}

/// A sample's time and value, checked: unix seconds (a decimal), and a rate that is a finite
/// number, at least zero.
fn sample(line: usize, time: &str, value: &str) -> Result<(usize, f64, f64), FileProblem> {
    let time_value = time
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t >= 0.0 && *t < 1e11)
        .ok_or_else(|| {
            (
                line,
                format!("time {time:?} is not unix seconds (a number such as 1700000000.5)"),
            )
        })?;
    let rate = value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0 && *v <= 1e9)
        .ok_or_else(|| {
            (
                line,
                format!(
                    "rate {value:?} is not requests per second (a number from 0 to 1e9; a gap in the metric, NaN, has no rate to replay)"
                ),
            )
        })?;
    Ok((line, time_value, rate))
}

/// The rows of a CSV of `time,value`: blank lines, `#` comments and a header line (a first
/// line whose time is not a number) are skipped.
fn csv_rows(text: &str) -> Result<Vec<(usize, f64, f64)>, FileProblem> {
    let mut rows = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_number = index + 1;
        let content = line.trim();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = content.split(',').collect();
        if rows.is_empty() && fields[0].trim().parse::<f64>().is_err() {
            continue; // the header
        }
        if fields.len() != 2 {
            return Err((
                line_number,
                format!(
                    "{} fields; a rate file's line is `time,value` (unix seconds, requests per second)",
                    fields.len()
                ),
            ));
        }
        rows.push(sample(line_number, fields[0], fields[1])?);
        if rows.len() > MAX_REPLAY_SAMPLES {
            break;
        }
    }
    Ok(rows)
}

/// The rows of Prometheus' `query_range` answer (`data.result[0].values`) or of its bare
/// `[[time, "value"], ...]`; the line is that of the JSON text.
fn json_rows(text: &str) -> Result<Vec<(usize, f64, f64)>, FileProblem> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|error| (error.line(), format!("not JSON: {error}")))?;
    let values = match &value {
        serde_json::Value::Array(_) => &value,
        _ => {
            let result = value
                .pointer("/data/result")
                .and_then(serde_json::Value::as_array)
                .ok_or((
                    0,
                    "no `data.result`: not a Prometheus query_range answer".to_string(),
                ))?;
            if result.len() != 1 {
                return Err((
                    0,
                    format!(
                        "`data.result` has {} series; replay one (sum the query, e.g. `sum(rate(http_requests_total[1m]))`)",
                        result.len()
                    ),
                ));
            }
            result[0]
                .get("values")
                .ok_or((0, "`data.result[0]` has no `values` (a matrix)".to_string()))?
        }
    };
    let pairs = values
        .as_array()
        .ok_or((0, "`values` is not an array".to_string()))?;
    pairs
        .iter()
        .enumerate()
        .map(|(index, pair)| {
            let text_of = |item: Option<&serde_json::Value>| match item {
                Some(serde_json::Value::String(text)) => text.clone(),
                Some(serde_json::Value::Number(number)) => number.to_string(),
                _ => String::new(),
            };
            match pair.as_array().map(Vec::as_slice) {
                Some([time, value]) => sample(0, &text_of(Some(time)), &text_of(Some(value)))
                    .map_err(|(_, message)| (0, format!("values[{index}]: {message}"))),
                _ => Err((
                    0,
                    format!("values[{index}] is not a pair [unix_time, \"value\"]"),
                )),
            }
        })
        .collect()
}

/// The load a replay gives: `rate` per client, the `load` points (a piecewise-constant curve,
/// each sample's rate held until the next sample) and how long the window lasts in the run.
#[derive(Debug)]
pub(super) struct ReplayedLoad {
    pub rate: Positive,
    pub points: Vec<CapacityPoint>,
    pub length: Micros,
}

/// The load `replay` gives from `samples` for `count` clients. The file time `from - warmup`
/// is the run's time zero; times are divided by `speedup`.
pub(super) fn replay_load(
    replay: &Replay,
    samples: &RateSamples,
    count: u64,
) -> Result<ReplayedLoad, String> {
    let end_of_file = samples.samples[samples.samples.len() - 1].0 + samples.last_step;
    let window = Window::of(replay, end_of_file, end_of_file, "sample")?;
    let (start, to) = (window.start, window.to);
    // The rate held over [start, to): each sample's from its time to the next one's.
    let mut steps: Vec<(Micros, f64)> = Vec::new();
    for (index, &(at, rate)) in samples.samples.iter().enumerate() {
        let until = samples
            .samples
            .get(index + 1)
            .map_or(end_of_file, |&(next, _)| next);
        if until <= start || at >= to {
            continue;
        }
        if steps.last().is_none_or(|&(_, previous)| previous != rate) {
            steps.push((window.run_time(at.max(start)), rate));
        }
    }
    let peak = steps.iter().map(|&(_, rate)| rate).fold(0.0, f64::max);
    if peak <= 0.0 {
        return Err("every rate in the window is zero: no operation would start".into());
    }
    let point = |at: Micros, rate: f64| CapacityPoint {
        at: Spanned::new(0..0, Duration(at)),
        factor: Factor(rate / peak),
    };
    let mut points = Vec::with_capacity(2 * steps.len());
    for (index, &(at, rate)) in steps.iter().enumerate() {
        if index > 0 {
            points.push(point(at, steps[index - 1].1));
        }
        points.push(point(at, rate));
    }
    let rate = replay.scale.get() * peak / count as f64;
    if !(rate > 0.0 && rate <= 1e9) {
        return Err(format!(
            "a peak of {peak} requests per second scaled by {} over {count} clients is {rate} per client; it must be above 0 and at most 1e9",
            replay.scale.get()
        ));
    }
    Ok(ReplayedLoad {
        rate: Positive(rate),
        points,
        length: window.run_time(to),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decimal seconds become microseconds exactly as written, the seventh decimal rounding
    /// half up; anything else is not a time.
    #[test]
    fn decimal_seconds_round_to_the_microsecond() {
        assert_eq!(
            decimal_micros("1700000000.123456"),
            Some(1_700_000_000_123_456)
        );
        assert_eq!(decimal_micros("0.0000005"), Some(1));
        assert_eq!(decimal_micros("0.0000004999"), Some(0));
        assert_eq!(decimal_micros("12"), Some(12_000_000));
        assert_eq!(decimal_micros(".5"), Some(500_000));
        for bad in ["", ".", "-1", "1e3", "1.2.3", "100000000000", "12:00"] {
            assert_eq!(decimal_micros(bad), None, "{bad}");
        }
    }

    /// The most arrivals within a window counts the densest stretch, a window's end excluded,
    /// and only arrivals before the end of the run.
    #[test]
    fn most_within_counts_the_densest_window() {
        let at_us = [0, 10, 10, 15, 30, 31, 32, 33];
        assert_eq!(most_within(&at_us, 10, 100), 4); // 30, 31, 32, 33
        assert_eq!(most_within(&at_us, 6, 100), 4); // 30 to 33, and 10, 10, 15
        assert_eq!(most_within(&at_us, 5, 100), 4);
        assert_eq!(most_within(&at_us, 6, 32), 3); // 10, 10, 15: 32 and 33 are past the end
        assert_eq!(most_within(&at_us, 5, 32), 2); // 15 - 10 is a whole window
        assert_eq!(most_within(&at_us, 1000, 31), 5);
    }
}
