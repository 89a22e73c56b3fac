//! A point's 95% interval of each metric over its seeds, by a method that fits what the metric
//! counts, so that no interval claims a certainty the seeds do not give.
//!
//! Student's t over the seeds' values treats each seed's value as a draw from a continuous,
//! roughly normal distribution. That is fair for latencies, rates and amplification, but it
//! says [0, 0] for a count that is zero on every seed (no variance, no width) and [1, 1] for a
//! success rate of 100%: certainty that three runs cannot give. So:
//!
//! | metric | interval ([`Method`]) |
//! |---|---|
//! | a share of the operations (`success_rate`) | Wilson score on the counts pooled over the seeds (`succeeded` of `operations`), widened to the seeds' t-interval where that is wider |
//! | a count of events, lower is better (`duplicate_writes`, `unknown_results`, `timeouts`, ...) | exact Poisson (Garwood) on the events pooled over the seeds, per run, widened to the seeds' t-interval where that is wider |
//! | `recovery_s` | the seeds' range, smallest to largest (`never` if one never recovered) |
//! | anything else | Student's t over the seeds' values |
//!
//! All are two-sided 95%: for zero events the upper bound is the 97.5% one-sided one,
//! `-ln(0.025)` = 3.689 events in all the runs (the rule of three, 2.996, is the 95% one-sided
//! bound: a two-sided interval's upper end is the stricter one, and every interval of a sweep
//! is two-sided, so a count is compared with a share or a latency on one footing).
//!
//! Pooling counts treats every operation as an independent trial. The seeds are independent
//! runs, but the operations inside a run are not: in a storm one outage fails thousands at
//! once, and a duplicate write comes with the retries of one burst. The effective sample is
//! nearer the number of seeds than the number of operations, so the pooled interval is a floor
//! on the uncertainty, not its measure, and each is widened to the seeds' own spread (the
//! t-interval, which is what a cluster-robust interval over independent runs comes to) where
//! that is wider. What the floor adds is the case the spread cannot see: every seed agreeing,
//! most often on zero.
//!
//! Recovery is measured in whole buckets: a t-interval around 1.33 s from recoveries of 1, 1
//! and 2 s reads as a continuous measurement it is not. The range of the seeds uses only values
//! that were measured, keeps `never` as it is, and has a distribution-free meaning: it covers
//! the median recovery with probability 1 - 2^(1-k) for k seeds (75% for 3, 93.8% for 5).
//!
//! Whatever the method, the seeds vary the randomness of one scenario and, each seed its draw,
//! the `[uncertain]` inputs the sweep does not set, never its other assumptions: see the
//! recommendation's statement on seeds.

use crate::base::stats;
use crate::vocabulary::metric::{Better, Domain, NamedMetric, OPERATION, Unit};

/// How a metric's interval is made; see the module's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Student's t over the seeds' values.
    StudentT,
    /// Wilson score on `count` of `operations` pooled over the seeds, or the t-interval where
    /// wider.
    Wilson {
        /// The count metric whose share of the operations this metric is.
        count: &'static str,
    },
    /// Exact Poisson (Garwood) on the events pooled over the seeds, per run, or the
    /// t-interval where wider.
    Poisson,
    /// The seeds' smallest to largest value.
    Range,
}

impl Method {
    /// The method for `metric`.
    pub fn of(metric: &NamedMetric) -> Method {
        match (metric.domain, metric.unit, metric.better) {
            (Domain::Recovery, _, _) => Method::Range,
            (Domain::Share, _, _) if share_count(&metric.name).is_some() => Method::Wilson {
                count: share_count(&metric.name).expect("just checked"),
            },
            (_, Unit::Count, Better::Lower) => Method::Poisson,
            _ => Method::StudentT,
        }
    }
}

/// The count whose share of the operations the [`Domain::Share`] metric `name` is; `None` for
/// a share without one, which gets Student's t. An operation's share (`success_rate:pay`) is
/// its count of its operations (`succeeded:pay` of `operations:pay`: [`pooled_names`]).
fn share_count(name: &str) -> Option<&'static str> {
    let run_metric = name
        .split_once(OPERATION)
        .map_or(name, |(metric, _)| metric);
    match run_metric {
        "success_rate" => Some("succeeded"),
        _ => None,
    }
}

/// The metrics a pooled interval of the share `name` sums over the seeds: its count's and the
/// operations', of the same operation as `name` where it names one (`success_rate:pay` pools
/// `succeeded:pay` of `operations:pay`); empty for a metric that pools nothing.
pub fn pooled_names(name: &str) -> Vec<String> {
    let Some(count) = share_count(name) else {
        return Vec::new();
    };
    vec![
        format!("{count}{}", operation_suffix(name)),
        operations_of(name),
    ]
}

/// The count of the operations `name` is a metric of: `operations` for the run's,
/// `operations:pay` for an operation's (`p99_ms:pay`), which a count's rate per operation
/// divides by.
pub fn operations_of(name: &str) -> String {
    format!("operations{}", operation_suffix(name))
}

/// `:pay` of an operation's metric `success_rate:pay`; empty for any other.
fn operation_suffix(name: &str) -> &str {
    name.find(OPERATION).map_or("", |at| &name[at..])
}

/// A mean and its 95% interval. Bounds are NaN where there is no interval (one seed for a
/// t-interval or a range, no defined value); the mean is infinite when a recovery never came.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// The mean of the seeds' defined values.
    pub mean: f64,
    /// The lower bound.
    pub low: f64,
    /// The upper bound.
    pub high: f64,
}

impl Interval {
    /// No value at all.
    const UNDEFINED: Interval = Interval {
        mean: f64::NAN,
        low: f64::NAN,
        high: f64::NAN,
    };

    /// The smallest interval that holds both (a NaN bound of either is ignored: `clamp` keeps
    /// a NaN where `max` would not).
    fn widened_to(self, other: Interval) -> Interval {
        Interval {
            low: self.low.min(other.low),
            high: self.high.max(other.high),
            ..self
        }
    }
}

/// Two-sided 95% quantiles of Student's t for 1 to 30 degrees of freedom, as the standard
/// tables print them, to three decimals.
///
/// They are pinned, not computed by [`stats::t_quantile`] (which is exact), because every
/// sweep's intervals were made with them: the exact quantiles differ in the fourth decimal
/// (12.7062 for 12.706) and would change the bytes of every sweep's output. The tests check
/// that each is the exact quantile rounded, and the normal quantile below likewise.
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The 97.5% quantile of the standard normal distribution, to six decimals (pinned like
/// [`T_975`]).
const Z_975: f64 = 1.959_964;

/// The 97.5% quantile of Student's t with `df` degrees of freedom; beyond the table, the
/// Cornish-Fisher expansion around the normal quantile (within 0.01% for df > 30).
pub(super) fn t_quantile(df: usize) -> f64 {
    match df {
        0 => f64::NAN,
        1..=30 => T_975[df - 1],
        _ => {
            let (z, df) = (Z_975, df as f64);
            z + (z.powi(3) + z) / (4.0 * df)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * df * df)
        }
    }
}

/// Mean and half-width of the 95% t-interval of the values; a value undefined on some seed (a
/// latency where nothing succeeded) makes the mean undefined, and infinity (a recovery that
/// never came) makes it infinite, so that a point is not judged by its lucky seeds alone.
pub fn mean_and_interval(values: &[f64]) -> (f64, f64) {
    if values.iter().any(|value| value.is_nan()) {
        return (f64::NAN, f64::NAN);
    }
    if values.iter().any(|value| value.is_infinite()) {
        return (f64::INFINITY, f64::NAN);
    }
    let (mean, standard_error) = stats::mean_and_standard_error(values);
    (
        mean,
        t_quantile(values.len().saturating_sub(1)) * standard_error,
    )
}

/// The 95% Wilson score interval of `successes` of `trials` (Wilson 1927;
/// [`stats::wilson_score`] with the pinned [`Z_975`]): closed form, and never [p, p] at 0 or
/// at `trials` as the normal approximation is. For 0 of n it is [0, z² / (n + z²)], 3.84 / n
/// for large n, a little wider than Clopper-Pearson's exact 1 - 0.025^(1/n) (3.69 / n).
/// `None` without trials.
pub fn wilson(successes: f64, trials: f64) -> Option<(f64, f64)> {
    (trials > 0.0).then(|| stats::wilson_score(successes, trials, Z_975))
}

/// `ln(n!)`: summed below 20, Stirling's series from there (its error is below
/// 1 / (1680 n^7), 5e-13 at 20).
fn ln_factorial(n: u64) -> f64 {
    if n < 20 {
        return (2..=n).map(|i| (i as f64).ln()).sum();
    }
    let n = n as f64;
    n * n.ln() - n + 0.5 * (2.0 * std::f64::consts::PI * n).ln() + 1.0 / (12.0 * n)
        - 1.0 / (360.0 * n.powi(3))
        + 1.0 / (1260.0 * n.powi(5))
}

/// P(X <= `m`) for X Poisson with mean `mu`: the terms summed outward from the largest one
/// (at `min(m, floor(mu))`) until they no longer count, so the cost grows as the square root
/// of the mean, not the count, and nothing underflows before it is scaled.
fn poisson_cdf(m: u64, mu: f64) -> f64 {
    if mu <= 0.0 {
        return 1.0;
    }
    let peak = m.min(mu.floor() as u64);
    let ln_peak = -mu + peak as f64 * mu.ln() - ln_factorial(peak);
    let mut sum = 1.0;
    let mut term = 1.0;
    for i in (1..=peak).rev() {
        term *= i as f64 / mu;
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    term = 1.0;
    for i in peak + 1..=m {
        term *= mu / i as f64;
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    (ln_peak.exp() * sum).min(1.0)
}

/// The `mu` in `bracket` where P(X <= `m`) for X Poisson(`mu`), which decreases in `mu`,
/// equals `target`: Newton's method from `start` (its derivative is minus the probability of
/// exactly `m`), kept inside the bracket, which each step narrows, by a bisection whenever a
/// step would leave it. A few steps from a close start, where bisection alone took sixty.
fn solve(m: u64, target: f64, (mut low, mut high): (f64, f64), start: f64) -> f64 {
    let mut mu = start.clamp(low, high);
    for _ in 0..100 {
        let excess = poisson_cdf(m, mu) - target;
        if excess > 0.0 {
            low = mu;
        } else {
            high = mu;
        }
        let slope = (-mu + m as f64 * mu.ln() - ln_factorial(m)).exp();
        let newton = mu + excess / slope;
        let next = if slope > 0.0 && newton > low && newton < high {
            newton
        } else {
            0.5 * (low + high)
        };
        if (next - mu).abs() <= 1e-13 * mu.max(1.0) || high - low <= 1e-13 * high.max(1.0) {
            return next;
        }
        mu = next;
    }
    mu
}

/// The Wilson-Hilferty approximation of a Garwood bound for `events` (the start of
/// [`solve`]): `x (1 - 1/(9x) -/+ z/(3 sqrt x))^3`, with `x` the events (lower bound) or one
/// more (upper bound).
fn wilson_hilferty(x: f64, z: f64) -> f64 {
    x * (1.0 - 1.0 / (9.0 * x) + z / (3.0 * x.sqrt())).powi(3)
}

/// The exact (Garwood 1936) two-sided 95% interval of a Poisson mean from `events` observed:
/// the means under which seeing `events` or more, or `events` or fewer, has probability
/// 2.5%. For 0 events, [0, -ln 0.025] = [0, 3.689]. Remembered per thread, as the points of
/// a sweep mostly share their counts (zero duplicate writes everywhere).
pub fn poisson_exact(events: u64) -> (f64, f64) {
    thread_local! {
        static KNOWN: std::cell::RefCell<std::collections::HashMap<u64, (f64, f64)>> =
            std::cell::RefCell::default();
    }
    KNOWN.with_borrow_mut(|known| {
        if known.len() >= 65_536 {
            known.clear();
        }
        *known.entry(events).or_insert_with(|| garwood(events))
    })
}

/// Where Garwood's bounds for `events` can be: above `x - 2.5 sqrt(x) - 2` and below
/// `x + 2.5 sqrt(x) + 4` (they tend to `x -/+ 1.96 sqrt(x)` and a constant; the tests check
/// the margins).
fn garwood_reach(events: f64) -> (f64, f64) {
    let reach = 2.5 * events.sqrt();
    (events - reach - 2.0, events + reach + 4.0)
}

/// [`poisson_exact`], computed.
fn garwood(events: u64) -> (f64, f64) {
    let x = events as f64;
    // Garwood's bounds lie within x -/+ 2.5 sqrt(x) and a few events of x.
    let reach = 3.0 * (x + 1.0).sqrt() + 10.0;
    let high = solve(
        events,
        0.025,
        (x, x + reach),
        wilson_hilferty(x + 1.0, Z_975),
    );
    let low = if events == 0 {
        0.0
    } else {
        solve(
            events - 1,
            0.975,
            ((x - reach).max(0.0), x),
            wilson_hilferty(x, -Z_975),
        )
    };
    (low, high)
}

/// The interval of `metric` from its seeds' `values`, with, for a pooled method, `pooled`
/// giving the seeds' values of the metric called so (`operations`, a share's count).
pub fn interval(
    metric: &NamedMetric,
    values: &[f64],
    pooled: impl Fn(&str) -> Vec<f64>,
) -> Interval {
    let (mean, half) = mean_and_interval(values);
    let t = Interval {
        mean,
        low: mean - half,
        high: mean + half,
    };
    if mean.is_nan() {
        return Interval::UNDEFINED;
    }
    match Method::of(metric) {
        Method::StudentT => t,
        Method::Range => {
            let defined: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
            if defined.len() < 2 {
                return Interval {
                    low: f64::NAN,
                    high: f64::NAN,
                    ..t
                };
            }
            Interval {
                mean,
                low: defined.iter().copied().fold(f64::INFINITY, f64::min),
                high: defined.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            }
        }
        Method::Wilson { .. } => {
            let [count, operations] = &pooled_names(&metric.name)[..] else {
                unreachable!("a share with a count pools two metrics");
            };
            let successes: f64 = pooled(count).iter().sum();
            let trials: f64 = pooled(operations).iter().sum();
            match wilson(successes, trials) {
                Some((low, high)) => Interval { mean, low, high }.widened_to(Interval {
                    low: t.low.clamp(0.0, 1.0),
                    high: t.high.clamp(0.0, 1.0),
                    ..t
                }),
                None => t,
            }
        }
        Method::Poisson => {
            let runs = values.len() as f64;
            let events: f64 = values.iter().sum();
            let spread = Interval {
                low: t.low.clamp(0.0, f64::INFINITY),
                ..t
            };
            // Where the seeds' interval holds every place Garwood's bounds can be, it is the
            // wider, and they need not be computed (a large count costs a few hundred sums).
            let (below, above) = garwood_reach(events);
            if spread.low * runs <= below && spread.high * runs >= above {
                return spread;
            }
            let (low, high) = poisson_exact(events as u64);
            Interval {
                mean,
                low: low / runs,
                high: high / runs,
            }
            .widened_to(spread)
        }
    }
}

/// Whether two 95% intervals overlap. An infinite mean (a recovery that never came) lies beyond
/// every finite one; `None` when that does not decide and an interval is missing (one seed) or
/// both means are infinite.
pub fn intervals_overlap(a: Interval, b: Interval) -> Option<bool> {
    match (a.mean.is_infinite(), b.mean.is_infinite()) {
        (true, true) => None,
        (true, false) | (false, true) => Some(false),
        _ if [a.low, a.high, b.low, b.high].iter().any(|v| v.is_nan()) => None,
        _ => Some(a.low <= b.high && b.low <= a.high),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::metric::{METRICS, metric};

    /// The run's metric called `name`, as sweeps name it.
    fn named(name: &str) -> NamedMetric {
        NamedMetric::of_run(metric(name).unwrap())
    }

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[test]
    fn intervals_use_students_t() {
        let (mean, half) = mean_and_interval(&[1.0, 2.0, 3.0]);
        assert_eq!(mean, 2.0);
        // s = 1, n = 3: 4.303 / sqrt(3).
        assert!((half - 4.303 / 3f64.sqrt()).abs() < 1e-12);
        let (mean, half) = mean_and_interval(&[5.0]);
        assert_eq!(mean, 5.0);
        assert!(half.is_nan());
        assert!(mean_and_interval(&[1.0, f64::INFINITY]).0.is_infinite());
        assert!(mean_and_interval(&[f64::NAN]).0.is_nan());
        assert!(mean_and_interval(&[f64::NAN, 4.0]).0.is_nan());
        // Tabulated: t(0.975; 31) = 2.0395, t(0.975; 120) = 1.9799.
        assert!((t_quantile(31) - 2.0395).abs() < 0.0002);
        assert!((t_quantile(120) - 1.9799).abs() < 0.0002);
    }

    /// The pinned quantiles are the exact ones ([`stats::t_quantile`],
    /// [`stats::normal_quantile`]) rounded as printed: each table entry to three decimals,
    /// `Z_975` to six; and beyond the table the series stays within 0.01% of the exact.
    #[test]
    fn pinned_quantiles_are_the_exact_ones_rounded() {
        for (df, &pinned) in (1..).zip(T_975.iter()) {
            let exact = stats::t_quantile(df, 0.95);
            assert_eq!(pinned, (exact * 1e3).round() / 1e3, "df {df}: {exact}");
        }
        let z = stats::normal_quantile(0.975);
        assert_eq!(Z_975, (z * 1e6).round() / 1e6);
        for df in [31, 50, 100, 1_000, 100_000] {
            let exact = stats::t_quantile(df as u64, 0.95);
            assert!((t_quantile(df) / exact - 1.0).abs() < 1e-4, "df {df}");
        }
    }

    /// Each metric gets the method the module's table gives it, and every share of the run's
    /// names its count (a share without one would get Student's t).
    #[test]
    fn every_metric_has_its_method() {
        let method = |name: &str| Method::of(&named(name));
        assert_eq!(
            method("success_rate"),
            Method::Wilson { count: "succeeded" }
        );
        for name in [
            "duplicate_writes",
            "unknown_results",
            "timeouts",
            "incident_failed",
        ] {
            assert_eq!(method(name), Method::Poisson, "{name}");
        }
        assert_eq!(method("recovery_s"), Method::Range);
        for name in [
            "p99_ms",
            "amplification",
            "operations",
            "succeeded",
            "goodput_rps",
        ] {
            assert_eq!(method(name), Method::StudentT, "{name}");
        }
        for metric in METRICS
            .iter()
            .filter(|metric| metric.domain == Domain::Share)
        {
            assert!(
                matches!(
                    Method::of(&NamedMetric::of_run(metric)),
                    Method::Wilson { .. }
                ),
                "{}",
                metric.name
            );
        }
    }

    /// Wilson's closed form: 0 of n is [0, z²/(n + z²)], and a textbook case, 81 of 263
    /// (Newcombe 1998, Statistics in Medicine 17:857, table I: 0.2553 to 0.3662).
    #[test]
    fn wilson_matches_its_closed_form() {
        let z2 = Z_975 * Z_975;
        let (low, high) = wilson(0.0, 1000.0).unwrap();
        assert_eq!(low, 0.0);
        assert!(close(high, z2 / (1000.0 + z2), 1e-15), "{high}");
        let (low, high) = wilson(1000.0, 1000.0).unwrap();
        assert!(close(low, 1000.0 / (1000.0 + z2), 1e-15), "{low}");
        assert_eq!(high, 1.0);
        let (low, high) = wilson(81.0, 263.0).unwrap();
        assert!(
            close(low, 0.2553, 5e-5) && close(high, 0.3662, 5e-5),
            "{low} {high}"
        );
        assert_eq!(wilson(0.0, 0.0), None);
    }

    /// Garwood's exact bounds: for 0 events [0, -ln 0.025] = [0, 3.689] (two-sided 95%, so the
    /// one-sided 97.5% upper bound, not the rule of three's 2.996); for 1, 5, 10 and 100 the
    /// tabulated values (e.g. Ulm 1990, Am J Epidemiol 131:373: 1 gives 0.0253 to 5.5716, 10
    /// gives 4.7954 to 18.3904; 100 from the chi-square quantiles, 81.3640 to 121.6268), each
    /// checked against the definition too: the probability of seeing that many or fewer (or
    /// more) is 2.5% at the bound.
    #[test]
    fn poisson_bounds_are_garwoods() {
        let (low, high) = poisson_exact(0);
        assert_eq!(low, 0.0);
        assert!(close(high, -(0.025f64.ln()), 1e-9), "{high}");
        for (events, low_expected, high_expected) in [
            (1, 0.0253, 5.5716),
            (5, 1.6235, 11.6683),
            (10, 4.7954, 18.3904),
            (100, 81.3640, 121.6268),
        ] {
            let (low, high) = poisson_exact(events);
            assert!(close(low, low_expected, 5e-4), "{events}: {low}");
            assert!(close(high, high_expected, 5e-4), "{events}: {high}");
            assert!(close(poisson_cdf(events, high), 0.025, 1e-9));
            assert!(close(poisson_cdf(events - 1, low), 0.975, 1e-9));
        }
        // The margins that let a wide t-interval stand without computing them.
        for events in (0..300).chain([1_000, 10_000, 100_000, 10_000_000]) {
            let (low, high) = poisson_exact(events);
            let (below, above) = garwood_reach(events as f64);
            assert!(high < above && (events == 0 || low > below), "{events}");
        }
        // Large counts keep their definition and their cost: 10^7 events.
        let (low, high) = poisson_exact(10_000_000);
        assert!(close(poisson_cdf(10_000_000, high), 0.025, 1e-6));
        assert!(close(poisson_cdf(9_999_999, low), 0.975, 1e-6));
        assert!(close(high - 1e7, Z_975 * 1e7f64.sqrt(), 2.0), "{high}");
    }

    fn rows(values: &[(f64, f64, f64)]) -> impl Fn(&str) -> Vec<f64> + '_ {
        // (operations, succeeded, duplicate_writes) per seed.
        move |name: &str| {
            values
                .iter()
                .map(|&(operations, succeeded, duplicates)| match name {
                    "operations" => operations,
                    "succeeded" => succeeded,
                    "duplicate_writes" => duplicates,
                    other => panic!("{other} is not pooled"),
                })
                .collect()
        }
    }

    /// A count that is zero on every seed is not [0, 0]: with 3 seeds its upper bound is
    /// 3.689 / 3 per run; a share of 100% on every seed is not [1, 1] but Wilson's on the pooled
    /// operations; and where the seeds disagree by more than the pooled bound allows (a burst of
    /// duplicates on one seed), the seeds' t-interval is kept.
    #[test]
    fn agreeing_seeds_get_the_exact_interval_not_none() {
        let seeds = [(1000.0, 1000.0, 0.0); 3];
        let pooled = rows(&seeds);
        let zero = interval(&named("duplicate_writes"), &[0.0; 3], &pooled);
        assert_eq!((zero.mean, zero.low), (0.0, 0.0));
        assert!(close(zero.high, -(0.025f64.ln()) / 3.0, 1e-9), "{zero:?}");
        let share = interval(&named("success_rate"), &[1.0; 3], &pooled);
        let z2 = Z_975 * Z_975;
        assert!(close(share.low, 3000.0 / (3000.0 + z2), 1e-12), "{share:?}");
        assert_eq!((share.mean, share.high), (1.0, 1.0));
        // Seeds of 0.90, 0.95 and 1.00: t gives 0.95 -/+ 4.303 x 0.05 / sqrt(3), far wider
        // than Wilson on 2850 of 3000; the top is cut at 1.
        let spread = [
            (1000.0, 900.0, 0.0),
            (1000.0, 950.0, 0.0),
            (1000.0, 1000.0, 0.0),
        ];
        let share = interval(&named("success_rate"), &[0.9, 0.95, 1.0], rows(&spread));
        let half = 4.303 * 0.05 / 3f64.sqrt();
        assert!(close(share.low, 0.95 - half, 1e-12), "{share:?}");
        assert_eq!(share.high, 1.0);
        // Counts of 100, 5000 and 200 a run: the t-interval (cut at 0) stands, as it is wider
        // than Garwood's on 5300 events could be.
        let counts = [100.0, 5000.0, 200.0];
        let (mean, half) = mean_and_interval(&counts);
        let burst = interval(&named("duplicate_writes"), &counts, &pooled);
        assert_eq!(
            (burst.mean, burst.low, burst.high),
            (mean, 0.0, mean + half)
        );
    }

    /// Recovery's interval is the seeds' range, with `never` as its top when one seed never
    /// recovered; one seed has no range.
    #[test]
    fn recovery_gets_the_seeds_range() {
        let recovery = &named("recovery_s");
        let none = |_: &str| -> Vec<f64> { unreachable!() };
        let range = interval(recovery, &[1.0, 1.0, 2.0], none);
        assert_eq!((range.low, range.high), (1.0, 2.0));
        assert!(close(range.mean, 4.0 / 3.0, 1e-12));
        let never = interval(recovery, &[1.0, f64::INFINITY, 2.0], none);
        assert_eq!(
            (never.mean, never.low, never.high),
            (f64::INFINITY, 1.0, f64::INFINITY)
        );
        let one = interval(recovery, &[3.0], none);
        assert!(one.low.is_nan() && one.high.is_nan());
        let undefined = interval(recovery, &[f64::NAN, f64::NAN], none);
        assert!(undefined.mean.is_nan());
    }

    /// Two intervals overlap unless one lies wholly beyond the other, in either order; a
    /// recovery that never came lies beyond any finite interval, and an interval that is not
    /// there (one seed, or both never) decides nothing.
    #[test]
    fn intervals_overlap_when_neither_lies_wholly_beyond_the_other() {
        let of = |mean: f64, half: f64| Interval {
            mean,
            low: mean - half,
            high: mean + half,
        };
        assert_eq!(intervals_overlap(of(10.0, 2.0), of(13.0, 1.5)), Some(true));
        assert_eq!(intervals_overlap(of(10.0, 1.0), of(13.0, 1.5)), Some(false));
        assert_eq!(intervals_overlap(of(13.0, 1.5), of(10.0, 1.0)), Some(false));
        assert_eq!(intervals_overlap(of(10.0, f64::NAN), of(13.0, 1.5)), None);
        assert_eq!(
            intervals_overlap(of(f64::INFINITY, f64::NAN), of(13.0, f64::NAN)),
            Some(false)
        );
        assert_eq!(
            intervals_overlap(of(f64::INFINITY, f64::NAN), of(f64::INFINITY, f64::NAN)),
            None
        );
    }
}
