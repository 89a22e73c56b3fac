//! `run --replications N`: how likely each outcome is, per policy, with exact intervals.
//!
//! From the rows of the replications ([`super::StudyRow`]) this computes, per policy:
//! - the probability of never recovering from the incident, and of any duplicate write, each
//!   with its 95% Clopper-Pearson interval (exact: it never claims more certainty than the
//!   runs give, and 0 of 100 reads 0% to 3.6%, not [0, 0]);
//! - for every claim, the share of the runs in which it held, with the same interval; a claim
//!   with a `probability` holds when the interval's lower end is above it;
//! - the distributions of recovery time, success and peak load, as ECDF charts with 95% DKW
//!   bands (Massart 1990), which cover the whole true distribution at once;
//! - comparisons of every two policies paired by seed: the mean of the per-seed differences
//!   with its t-interval, against the unpaired (Welch) interval of the same difference. Both
//!   policies of a replication see the same arrivals, so most of the noise cancels in the
//!   difference, and `(unpaired / paired)^2` is how many times more runs an unpaired
//!   comparison would need for the same precision;
//! - with `[uncertain]` inputs, each input's Spearman rank correlation with each outcome: the
//!   input that moves the risk most is the one whose measurement would most narrow it.

use crate::base::stats::{clopper_pearson, dkw_half_width, mean_interval, spearman, t_quantile};
use crate::claims::number;
use crate::output::charts::ecdf::{EcdfChart, EcdfSeries, render_ecdf};
use crate::output::charts::{ChartError, DrawnChart, Format, drawn_in_formats};
use crate::output::csv_bytes;
use crate::scenario::risk::UncertainInput;
use crate::vocabulary::metric::UNHEALTHY_BEFORE;

use std::fmt::Write;

use super::page::{heading, table};
use super::{OutputFile, PreparedStudy, StudyRow, manifest_bytes, rows_csv};
use crate::base::escape::html;
use crate::base::spread::{Spread, no_width};

/// The confidence of every interval.
const CONFIDENCE: f64 = 0.95;

/// A count of runs out of the runs, with its exact interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share {
    /// Runs in which it happened.
    pub count: u64,
    /// Runs.
    pub runs: u64,
    /// The 95% Clopper-Pearson interval.
    pub low: f64,
    /// Its upper end.
    pub high: f64,
}

impl Share {
    /// `count` of `runs`.
    pub fn of(count: u64, runs: u64) -> Share {
        let (low, high) = clopper_pearson(count, runs, CONFIDENCE);
        Share {
            count,
            runs,
            low,
            high,
        }
    }

    /// `12 of 100 (6.4-20.0%)`.
    pub fn words(&self) -> String {
        format!(
            "{} of {} ({}-{}%)",
            self.count,
            self.runs,
            percent(self.low),
            percent(self.high)
        )
    }
}

/// A share as a percentage with one decimal (no decimal at 0 and 100).
fn percent(share: f64) -> String {
    let value = share * 100.0;
    if value == 0.0 || value == 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

/// The values of metric `name` of policy `policy`, by replication (`never` is infinite, an
/// undefined value NaN).
fn values(prepared: &PreparedStudy, rows: &[StudyRow], policy: usize, name: &str) -> Vec<f64> {
    let column = prepared
        .columns
        .iter()
        .position(|metric| metric.name == name)
        .expect("a metric of every run");
    rows.iter()
        .filter(|row| row.policy == policy)
        .map(|row| crate::sweep::parse_metric(&row.metrics[column]).unwrap_or(f64::NAN))
        .collect()
}

/// One claim over the replications.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimOdds {
    /// The claim in words.
    pub text: String,
    /// The runs in which it held.
    pub held: Share,
    /// The probability it must hold with, if it states one.
    pub probability: Option<f64>,
    /// Why the lesson says so.
    pub why: Option<String>,
}

impl ClaimOdds {
    /// Whether a claim with a probability holds: the lower end of its interval is above it.
    /// `None` for a claim without one (judged on the scenario's own run).
    pub fn verdict(&self) -> Option<bool> {
        self.probability
            .map(|probability| self.held.low > probability)
    }

    /// `held in 97 of 100 runs (91.5-99.4%)`, and the verdict against its probability.
    pub fn words(&self) -> String {
        let odds = format!(
            "held in {} of {} runs ({}-{}%)",
            self.held.count,
            self.held.runs,
            percent(self.held.low),
            percent(self.held.high)
        );
        match (self.verdict(), self.probability) {
            (Some(verdict), Some(probability)) => format!(
                "{}: {}: {odds}; {} {}% required",
                if verdict { "held" } else { "did not hold" },
                self.text,
                if verdict {
                    "lower bound above the"
                } else {
                    "lower bound not above the"
                },
                percent(probability)
            ),
            _ => format!("{}: {odds}", self.text),
        }
    }
}

/// Two policies compared on one metric, paired by seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Paired {
    /// The policy whose value is subtracted from.
    pub policy: usize,
    /// The policy subtracted.
    pub against: usize,
    /// The metric.
    pub metric: &'static str,
    /// Replications where both values are finite.
    pub runs: usize,
    /// The mean of `policy - against` over them.
    pub mean: f64,
    /// The half-width of its 95% t-interval, paired by seed.
    pub paired: f64,
    /// The half-width of the 95% Welch interval of the same difference, unpaired.
    pub unpaired: f64,
}

impl Paired {
    /// How many times more runs an unpaired comparison needs for the precision of the paired
    /// one: the ratio of the squared half-widths (the half-width shrinks as 1/sqrt(runs)).
    pub fn runs_saved(&self) -> f64 {
        (self.unpaired / self.paired).powi(2)
    }
}

/// The metrics compared between policies.
const COMPARED: [&str; 5] = [
    "success_rate",
    "goodput_rps",
    "amplification",
    "p99_ms",
    "recovery_s",
];

/// The half-width of the two-sided Welch interval of `mean(b) - mean(a)`.
fn welch_half_width(a: &[f64], b: &[f64]) -> f64 {
    let variance = |values: &[f64]| {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    };
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (sa, sb) = (variance(a) / na, variance(b) / nb);
    let se = (sa + sb).sqrt();
    if se == 0.0 {
        return 0.0;
    }
    // Welch-Satterthwaite degrees of freedom, rounded down (conservative).
    let df = (sa + sb).powi(2) / (sa.powi(2) / (na - 1.0) + sb.powi(2) / (nb - 1.0));
    t_quantile(df.floor().max(1.0) as u64, CONFIDENCE) * se
}

/// Every two policies on every compared metric where both are finite in at least two
/// replications.
pub fn paired(prepared: &PreparedStudy, rows: &[StudyRow]) -> Vec<Paired> {
    let mut comparisons = Vec::new();
    let count = prepared.policies.len();
    for against in 0..count {
        for policy in against + 1..count {
            for metric in COMPARED {
                let (a, b) = (
                    values(prepared, rows, against, metric),
                    values(prepared, rows, policy, metric),
                );
                let both: Vec<(f64, f64)> = a
                    .into_iter()
                    .zip(b)
                    .filter(|(a, b)| a.is_finite() && b.is_finite())
                    .collect();
                if both.len() < 2 {
                    continue;
                }
                let differences: Vec<f64> = both.iter().map(|(a, b)| b - a).collect();
                let (mean, paired) = mean_interval(&differences, CONFIDENCE);
                let (a, b): (Vec<f64>, Vec<f64>) = both.into_iter().unzip();
                comparisons.push(Paired {
                    policy,
                    against,
                    metric,
                    runs: differences.len(),
                    mean,
                    paired,
                    unpaired: welch_half_width(&a, &b),
                });
            }
        }
    }
    comparisons
}

/// One policy's risks.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyRisk {
    /// Runs that never recovered (`None` without an incident).
    pub never_recovered: Option<Share>,
    /// Runs that were unhealthy before the incident, neither recovered nor never recovered
    /// (`None` without an incident).
    pub unhealthy_before: Option<Share>,
    /// Runs with at least one duplicate write.
    pub duplicate_write: Share,
    /// Success rate: median, 10th and 90th percentile over the runs.
    pub success: (f64, f64, f64),
    /// The runs whose success rate reads as the median does ([`number`]), of the runs with
    /// one: where the 10th and 90th percentiles read the same, what `[1, 1]` would hide.
    pub success_at_median: (u64, u64),
}

/// The `q`-quantile of sorted `values` (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Each policy's risks.
pub fn risks(prepared: &PreparedStudy, rows: &[StudyRow]) -> Vec<PolicyRisk> {
    (0..prepared.policies.len())
        .map(|policy| {
            let recovery = values(prepared, rows, policy, "recovery_s");
            let runs = recovery.len() as u64;
            let column = prepared
                .columns
                .iter()
                .position(|metric| metric.name == "recovery_s")
                .expect("a metric of every run");
            let unhealthy = rows
                .iter()
                .filter(|row| row.policy == policy && row.metrics[column] == UNHEALTHY_BEFORE)
                .count() as u64;
            let duplicates = values(prepared, rows, policy, "duplicate_writes");
            let mut success: Vec<f64> = values(prepared, rows, policy, "success_rate")
                .into_iter()
                .filter(|value| value.is_finite())
                .collect();
            success.sort_by(f64::total_cmp);
            let median = quantile(&success, 0.5);
            let at_median = success
                .iter()
                .filter(|value| number(**value) == number(median))
                .count() as u64;
            PolicyRisk {
                never_recovered: prepared.has_incident.then(|| {
                    Share::of(
                        recovery.iter().filter(|time| time.is_infinite()).count() as u64,
                        runs,
                    )
                }),
                unhealthy_before: prepared.has_incident.then(|| Share::of(unhealthy, runs)),
                duplicate_write: Share::of(
                    duplicates.iter().filter(|count| **count > 0.0).count() as u64,
                    runs,
                ),
                success: (median, quantile(&success, 0.1), quantile(&success, 0.9)),
                success_at_median: (at_median, success.len() as u64),
            }
        })
        .collect()
}

/// Every claim over the replications.
pub fn claim_odds(prepared: &PreparedStudy, rows: &[StudyRow]) -> Vec<ClaimOdds> {
    prepared
        .claims
        .iter()
        .enumerate()
        .map(|(index, claim)| {
            let verdicts: Vec<bool> = rows.iter().filter_map(|row| row.claims[index]).collect();
            ClaimOdds {
                text: claim.text.clone(),
                held: Share::of(
                    verdicts.iter().filter(|held| **held).count() as u64,
                    verdicts.len() as u64,
                ),
                probability: claim.probability,
                why: claim.why.clone(),
            }
        })
        .collect()
}

/// An uncertain input's rank correlation with one outcome of one policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Influence {
    /// The input's key.
    pub input: String,
    /// The policy.
    pub policy: usize,
    /// The outcome: `never recovered` or a metric.
    pub outcome: &'static str,
    /// Spearman's rho (`None`: the outcome did not vary).
    pub rho: Option<f64>,
}

/// The value of a draw as a number: a number, a duration in microseconds, or a choice's
/// position in its list.
fn draw_number(input: &UncertainInput, text: &str) -> f64 {
    if let UncertainInput::Choices(choices) = input {
        let position = choices.iter().position(|choice| match choice {
            toml::Value::String(choice) => choice == text,
            other => other.to_string() == text,
        });
        return position.map_or(f64::NAN, |position| position as f64);
    }
    text.strip_suffix("us")
        .unwrap_or(text)
        .parse()
        .unwrap_or(f64::NAN)
}

/// Every uncertain input's influence on every outcome of every policy, strongest first.
pub fn influences(prepared: &PreparedStudy, rows: &[StudyRow]) -> Vec<Influence> {
    let mut found = Vec::new();
    for (index, input) in prepared.uncertain.inputs.iter().enumerate() {
        let draws: Vec<f64> = (0..prepared.seeds.len())
            .map(|replication| {
                draw_number(&input.input, &prepared.uncertain.draws[replication][index])
            })
            .collect();
        for policy in 0..prepared.policies.len() {
            let replications: Vec<usize> = rows
                .iter()
                .filter(|row| row.policy == policy)
                .map(|row| row.replication)
                .collect();
            let x: Vec<f64> = replications.iter().map(|&r| draws[r]).collect();
            let mut outcomes: Vec<(&'static str, Vec<f64>)> = vec![];
            if prepared.has_incident {
                let never = values(prepared, rows, policy, "recovery_s")
                    .iter()
                    .map(|time| if time.is_infinite() { 1.0 } else { 0.0 })
                    .collect();
                outcomes.push(("never recovered", never));
            }
            outcomes.push((
                "success_rate",
                values(prepared, rows, policy, "success_rate"),
            ));
            for (outcome, y) in outcomes {
                found.push(Influence {
                    input: input.key.clone(),
                    policy,
                    outcome,
                    rho: spearman(&x, &y),
                });
            }
        }
    }
    found.sort_by(|a, b| {
        let strength = |influence: &Influence| influence.rho.map_or(-1.0, f64::abs);
        strength(b).total_cmp(&strength(a))
    });
    found
}

/// The ECDF charts: recovery (with an incident), success and peak load.
fn ecdf_charts(prepared: &PreparedStudy, rows: &[StudyRow]) -> Vec<(&'static str, EcdfChart)> {
    let chart = |metric: &str, title: &str, x_label: &str| {
        let series = (0..prepared.policies.len())
            .map(|policy| {
                let all = values(prepared, rows, policy, metric);
                let finite: Vec<f64> = all.iter().copied().filter(|v| v.is_finite()).collect();
                EcdfSeries {
                    policy: prepared.policies[policy].clone(),
                    never: all.iter().filter(|v| v.is_infinite()).count(),
                    band: dkw_half_width(all.len(), CONFIDENCE),
                    values: finite,
                }
            })
            .collect();
        EcdfChart {
            title: format!(
                "{}: {title} over {} runs",
                prepared.name,
                prepared.seeds.len()
            ),
            x_label: x_label.to_string(),
            series,
            note: format!(
                "bands: 95% DKW (Massart), covering the whole distribution at once; seeds vary the randomness{}",
                if prepared.uncertain.inputs.is_empty() {
                    " only"
                } else {
                    " and the [uncertain] inputs"
                }
            ),
        }
    };
    let mut charts = vec![];
    if prepared.has_incident {
        charts.push((
            "ecdf-recovery",
            chart(
                "recovery_s",
                "recovery time",
                "recovery after the incident (s)",
            ),
        ));
        charts.push((
            "ecdf-peak",
            chart(
                "peak_incident_rps",
                "peak load during the incident",
                "highest attempts per second in the incident",
            ),
        ));
    } else {
        charts.push((
            "ecdf-peak",
            chart("peak_after_rps", "peak load", "highest attempts per second"),
        ));
    }
    charts.push((
        "ecdf-success",
        chart(
            "success_rate",
            "success rate",
            "share of operations that succeeded",
        ),
    ));
    charts
}

/// What the replications found, for the terminal and the page.
pub struct Findings {
    /// Per policy.
    pub risks: Vec<PolicyRisk>,
    /// Per claim.
    pub claims: Vec<ClaimOdds>,
    /// Per pair of policies and metric.
    pub paired: Vec<Paired>,
    /// Per uncertain input, policy and outcome, strongest first.
    pub influences: Vec<Influence>,
}

/// Every file of the replications (their folder's `risk.*`, `replications.csv`, `ecdf-*`),
/// the text for the terminal, and how many claims with a probability did not hold.
pub fn finalize(
    prepared: &PreparedStudy,
    rows: &[StudyRow],
    formats: &[Format],
) -> Result<(Vec<OutputFile>, String, usize), ChartError> {
    let findings = Findings {
        risks: risks(prepared, rows),
        claims: claim_odds(prepared, rows),
        paired: paired(prepared, rows),
        influences: influences(prepared, rows),
    };
    let mut files = vec![
        ("replications.csv".to_string(), rows_csv(prepared, rows)),
        ("risk.csv".to_string(), risk_csv(prepared, &findings)),
        ("paired.csv".to_string(), paired_csv(prepared, &findings)),
        ("study.json".to_string(), manifest_bytes(prepared)),
    ];
    if !findings.influences.is_empty() {
        files.push((
            "sensitivity.csv".to_string(),
            sensitivity_csv(prepared, &findings),
        ));
    }
    let mut svgs = Vec::new();
    for (name, chart) in ecdf_charts(prepared, rows) {
        let DrawnChart { files: drawn, svg } =
            drawn_in_formats(name, formats, |format| render_ecdf(&chart, format))?;
        files.extend(drawn);
        svgs.push(svg);
    }
    let text = summary(prepared, &findings);
    files.push((
        "risk.html".to_string(),
        risk_page(prepared, &findings, &text, &svgs),
    ));
    let failed = findings
        .claims
        .iter()
        .filter(|claim| claim.verdict() == Some(false))
        .count();
    Ok((files, text, failed))
}

/// `risk.csv`: per policy, each outcome's runs, count, probability and 95% Clopper-Pearson
/// interval; then each claim's.
fn risk_csv(prepared: &PreparedStudy, findings: &Findings) -> Vec<u8> {
    let line = |policy: &str, outcome: &str, share: &Share, required: String| {
        vec![
            policy.to_string(),
            outcome.to_string(),
            share.runs.to_string(),
            share.count.to_string(),
            format!("{:.6}", share.count as f64 / share.runs.max(1) as f64),
            format!("{:.6}", share.low),
            format!("{:.6}", share.high),
            required,
        ]
    };
    let mut lines = Vec::new();
    for (policy, risk) in prepared.policies.iter().zip(&findings.risks) {
        if let Some(never) = &risk.never_recovered {
            lines.push(line(policy, "never recovered", never, String::new()));
        }
        if let Some(unhealthy) = &risk.unhealthy_before {
            lines.push(line(policy, UNHEALTHY_BEFORE, unhealthy, String::new()));
        }
        lines.push(line(
            policy,
            "any duplicate write",
            &risk.duplicate_write,
            String::new(),
        ));
    }
    for (claim, odds) in prepared.claims.iter().zip(&findings.claims) {
        lines.push(line(
            &prepared.policies[claim.policy],
            &format!("claim: {}", odds.text),
            &odds.held,
            odds.probability.map_or_else(String::new, |p| p.to_string()),
        ));
    }
    csv_bytes(
        &[
            "policy",
            "outcome",
            "runs",
            "count",
            "probability",
            "low",
            "high",
            "required",
        ],
        lines,
    )
}

/// `paired.csv`: every comparison, paired and unpaired.
fn paired_csv(prepared: &PreparedStudy, findings: &Findings) -> Vec<u8> {
    let lines: Vec<Vec<String>> = findings
        .paired
        .iter()
        .map(|pair| {
            vec![
                prepared.policies[pair.policy].clone(),
                prepared.policies[pair.against].clone(),
                pair.metric.to_string(),
                pair.runs.to_string(),
                format!("{:.6}", pair.mean),
                format!("{:.6}", pair.paired),
                format!("{:.6}", pair.unpaired),
                if pair.paired > 0.0 {
                    format!("{:.3}", pair.runs_saved())
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    csv_bytes(
        &[
            "policy",
            "against",
            "metric",
            "runs",
            "mean_difference",
            "paired_half_width",
            "unpaired_half_width",
            "unpaired_runs_per_paired_run",
        ],
        lines,
    )
}

/// `sensitivity.csv`: every uncertain input's rank correlation with every outcome.
fn sensitivity_csv(prepared: &PreparedStudy, findings: &Findings) -> Vec<u8> {
    let lines: Vec<Vec<String>> = findings
        .influences
        .iter()
        .map(|influence| {
            vec![
                influence.input.clone(),
                prepared.policies[influence.policy].clone(),
                influence.outcome.to_string(),
                influence
                    .rho
                    .map_or_else(|| "constant".into(), |rho| format!("{rho:.6}")),
            ]
        })
        .collect();
    csv_bytes(&["input", "policy", "outcome", "spearman"], lines)
}

/// The text the terminal shows (and the page repeats).
fn summary(prepared: &PreparedStudy, findings: &Findings) -> String {
    let runs = prepared.seeds.len();
    let varies = prepared.what_seeds_vary();
    let mut text = format!(
        "  risk over {runs} replications of every policy on common seeds ({varies}); intervals are 95% Clopper-Pearson\n"
    );
    let width = prepared
        .policies
        .iter()
        .map(|name| name.chars().count())
        .max()
        .unwrap_or(6)
        .max(6);
    let never_header = if prepared.has_incident {
        format!("{:<28}", "never recovered")
    } else {
        String::new()
    };
    text += &format!(
        "    {:<width$}  {never_header}{:<28}success median [p10, p90]\n",
        "policy", "any duplicate write"
    );
    for (policy, risk) in prepared.policies.iter().zip(&findings.risks) {
        let never = risk
            .never_recovered
            .map_or_else(String::new, |share| format!("{:<28}", share.words()));
        text += &format!(
            "    {policy:<width$}  {never}{:<28}{}\n",
            risk.duplicate_write.words(),
            success_words(risk)
        );
    }
    for (policy, risk) in prepared.policies.iter().zip(&findings.risks) {
        if let Some(unhealthy) = risk.unhealthy_before.filter(|share| share.count > 0) {
            text += &format!(
                "    {policy}: unhealthy before the incident in {}, counted neither as recovered nor as never recovered\n",
                unhealthy.words()
            );
        }
    }
    if !findings.claims.is_empty() {
        let judged: Vec<&ClaimOdds> = findings
            .claims
            .iter()
            .filter(|claim| claim.probability.is_some())
            .collect();
        let held = judged
            .iter()
            .filter(|claim| claim.verdict() == Some(true))
            .count();
        text += &if judged.is_empty() {
            "  claims over the replications (how often each held):\n".to_string()
        } else {
            format!(
                "  claims over the replications: {held} of the {} that state a probability held\n",
                judged.len()
            )
        };
        for claim in &findings.claims {
            text += &format!("    {}\n", claim.words());
        }
    }
    text += &paired_summary(prepared, &findings.paired, runs);
    if let Some(top) = findings
        .influences
        .iter()
        .find(|influence| influence.rho.is_some())
    {
        text += &format!(
            "  the uncertain input that moves the outcome most: {} (Spearman {:+.2} with {} of {}); measuring it would narrow the risk most\n",
            top.input,
            top.rho.expect("found with one"),
            top.outcome,
            prepared.policies[top.policy]
        );
    }
    text
}

/// `0.365 [0.253, 1]`: the median success and its 10th and 90th percentiles; where those
/// read the same, `1 in 38 of 40 runs` (`1 in every run`), as `1 [1, 1]` would be a range of
/// one value.
fn success_words(risk: &PolicyRisk) -> String {
    let (median, p10, p90) = risk.success;
    match Spread::of(number(p10), number(p90)) {
        Spread::Between(p10, p90) => format!("{} [{p10}, {p90}]", number(median)),
        Spread::One(_) => match risk.success_at_median {
            (alike, runs) if alike == runs => format!("{} in every run", number(median)),
            (alike, runs) => format!("{} in {alike} of {runs} runs", number(median)),
        },
    }
}

/// The most pairs of policies the terminal compares; `paired.csv` has every pair.
const PAIRS_SHOWN: usize = 3;

/// The paired comparisons, pair by pair: each metric's mean difference with its paired and
/// unpaired half-widths, and how many times the runs an unpaired comparison would need.
fn paired_summary(prepared: &PreparedStudy, paired: &[Paired], runs: usize) -> String {
    let mut text = String::new();
    let mut pairs: Vec<(usize, usize)> = paired
        .iter()
        .map(|pair| (pair.against, pair.policy))
        .collect();
    pairs.dedup();
    for &(against, policy) in pairs.iter().take(PAIRS_SHOWN) {
        text += &format!(
            "  {} - {}, paired by seed (mean difference; 95% half-width paired | unpaired; the runs an unpaired comparison needs for the paired precision):\n",
            prepared.policies[policy], prepared.policies[against]
        );
        for pair in paired
            .iter()
            .filter(|pair| (pair.against, pair.policy) == (against, policy))
        {
            let defined = if pair.runs < runs {
                format!(" (the {} of {runs} runs where both are defined)", pair.runs)
            } else {
                String::new()
            };
            // A half width of none is the same difference in every run, not an interval.
            let (paired, unpaired) = (small(pair.paired), small(pair.unpaired));
            let needs = if pair.paired > 0.0 {
                format!("{:.1}x", pair.runs_saved())
            } else if pair.unpaired > 0.0 {
                "any number".to_string()
            } else {
                "-".to_string()
            };
            let line = match (no_width(&paired), no_width(&unpaired)) {
                (true, true) => format!(
                    "{:>12}  in every run, each policy's value the same in all: no spread to make an interval of",
                    signed(pair.mean)
                ),
                (true, false) => format!(
                    "{:>12}  {:<13} | +-{unpaired:<11} {needs}",
                    signed(pair.mean),
                    "in every run"
                ),
                _ => format!(
                    "{:>12}  +-{paired:<11} | +-{unpaired:<11} {needs}",
                    signed(pair.mean)
                ),
            };
            text += &format!("    {:<14} {line}{defined}\n", pair.metric);
        }
    }
    if pairs.len() > PAIRS_SHOWN {
        text += &format!(
            "  and {} more pairs of policies in paired.csv\n",
            pairs.len() - PAIRS_SHOWN
        );
    }
    text
}

/// A half width in the page's table: six decimals, or `none: the same in every run` where it
/// has no width, as `± 0.000000` would be an interval of one value.
fn half_width_cell(half: f64) -> String {
    let written = format!("{half:.6}");
    if no_width(&written) {
        "none: the same in every run".into()
    } else {
        written
    }
}

/// A difference with its sign, to four significant digits.
fn signed(value: f64) -> String {
    format!(
        "{}{}",
        if value >= 0.0 { "+" } else { "-" },
        small(value.abs())
    )
}

/// A small positive number to four significant digits.
fn small(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let digits = (3 - value.abs().log10().floor() as i32).max(0) as usize;
    format!("{value:.digits$}")
}

/// `risk.html`.
fn risk_page(
    prepared: &PreparedStudy,
    findings: &Findings,
    summary: &str,
    svgs: &[Vec<u8>],
) -> Vec<u8> {
    let mut page = String::new();
    heading(&mut page, prepared, "risk over replications");
    let _ = write!(page, "<h2>Summary</h2>\n<pre>{}</pre>\n", html(summary));
    page.push_str("<h2>Probabilities</h2>\n<p>Each with its exact 95% (Clopper-Pearson) interval over the replications. Every policy ran on the same seeds.</p>\n");
    let mut rows = Vec::new();
    for (policy, risk) in prepared.policies.iter().zip(&findings.risks) {
        if let Some(never) = &risk.never_recovered {
            rows.push(vec![
                policy.clone(),
                "never recovered".into(),
                never.words(),
            ]);
        }
        if let Some(unhealthy) = &risk.unhealthy_before {
            rows.push(vec![
                policy.clone(),
                UNHEALTHY_BEFORE.into(),
                unhealthy.words(),
            ]);
        }
        rows.push(vec![
            policy.clone(),
            "any duplicate write".into(),
            risk.duplicate_write.words(),
        ]);
    }
    table(
        &mut page,
        &["policy", "outcome", "runs (95% interval)"],
        &rows,
    );
    if !findings.claims.is_empty() {
        page.push_str("<h2>Claims</h2>\n<p>A claim with a probability holds when the lower end of its interval is above it.</p>\n<ul class=\"claims\">\n");
        for claim in &findings.claims {
            let class = match claim.verdict() {
                Some(false) => "failed",
                _ => "held",
            };
            let _ = write!(page, "<li class=\"{class}\">{}", html(&claim.words()));
            if let Some(why) = &claim.why {
                let _ = write!(page, " <span class=\"meta\">({})</span>", html(why));
            }
            page.push_str("</li>\n");
        }
        page.push_str("</ul>\n");
    }
    page.push_str("<h2>Distributions</h2>\n");
    for svg in svgs {
        let _ = writeln!(page, "<figure>{}</figure>", String::from_utf8_lossy(svg));
    }
    if !findings.paired.is_empty() {
        page.push_str("<h2>Policies compared, paired by seed</h2>\n<p>The mean difference over the replications with its 95% interval, paired (the per-seed differences) and unpaired (Welch). <i>x runs</i> is how many times more runs the unpaired comparison needs for the paired one's precision.</p>\n");
        let rows: Vec<Vec<String>> = findings
            .paired
            .iter()
            .map(|pair| {
                vec![
                    format!(
                        "{} - {}",
                        prepared.policies[pair.policy], prepared.policies[pair.against]
                    ),
                    pair.metric.to_string(),
                    pair.runs.to_string(),
                    format!("{:.6}", pair.mean),
                    half_width_cell(pair.paired),
                    half_width_cell(pair.unpaired),
                    if pair.paired > 0.0 {
                        format!("{:.1}", pair.runs_saved())
                    } else {
                        "-".into()
                    },
                ]
            })
            .collect();
        table(
            &mut page,
            &[
                "difference",
                "metric",
                "runs",
                "mean",
                "± paired",
                "± unpaired",
                "x runs",
            ],
            &rows,
        );
    }
    if !findings.influences.is_empty() {
        page.push_str("<h2>Which uncertain input matters</h2>\n<p>Spearman's rank correlation of each input with each outcome, strongest first: the input at the top moves the outcome most, and measuring it would narrow the risk most.</p>\n");
        let rows: Vec<Vec<String>> = findings
            .influences
            .iter()
            .map(|influence| {
                vec![
                    influence.input.clone(),
                    prepared.policies[influence.policy].clone(),
                    influence.outcome.to_string(),
                    influence
                        .rho
                        .map_or_else(|| "did not vary".into(), |rho| format!("{rho:+.3}")),
                ]
            })
            .collect();
        table(
            &mut page,
            &["input", "policy", "outcome", "Spearman"],
            &rows,
        );
    }
    page.push_str("</body>\n</html>\n");
    page.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact interval of 0 of 100 runs is 0 to 3.6% (the two-sided 95% Clopper-Pearson
    /// bound 1 - 0.025^(1/100) = 0.0362), never [0, 0].
    #[test]
    fn no_events_in_a_hundred_runs_is_not_certainty() {
        let share = Share::of(0, 100);
        assert_eq!(share.low, 0.0);
        assert!((share.high - (1.0 - 0.025f64.powf(0.01))).abs() < 1e-9);
        assert_eq!(share.words(), "0 of 100 (0-3.6%)");
    }

    /// A claim required with probability 0.95 held in 97 of 100 runs does not hold: the
    /// Clopper-Pearson lower bound of 97/100 is 0.9148, below 0.95. 100 of 100 (lower bound
    /// 0.9638) does.
    #[test]
    fn a_probability_claim_holds_on_the_lower_bound() {
        let odds = |held| ClaimOdds {
            text: "x".into(),
            held: Share::of(held, 100),
            probability: Some(0.95),
            why: None,
        };
        assert_eq!(odds(97).verdict(), Some(false));
        assert_eq!(odds(100).verdict(), Some(true));
        assert!(
            odds(97)
                .words()
                .contains("held in 97 of 100 runs (91.5-99.4%)"),
            "{}",
            odds(97).words()
        );
    }

    /// The success column: the median and its 10th and 90th percentiles where those differ
    /// (`0.365 [0.253, 1]`, the reference's risky scenario); where they read the same, the
    /// median and how many runs gave it, never `[1, 1]`. Nearest rank over 40 runs puts the
    /// 10th percentile at the 4th and the 90th at the 36th, so they are 1 with 38 of 40 at 1.
    /// A half width of none in the page is none, never `0.000000`.
    #[test]
    fn a_percentile_range_of_one_value_is_the_value_and_its_runs() {
        let risk = |success, at_median| PolicyRisk {
            never_recovered: None,
            unhealthy_before: None,
            duplicate_write: Share::of(0, 40),
            success,
            success_at_median: at_median,
        };
        assert_eq!(
            success_words(&risk((0.365, 0.253, 1.0), (1, 40))),
            "0.365 [0.253, 1]"
        );
        let mut values = vec![1.0; 38];
        values.extend([0.5, 0.25]);
        values.sort_by(f64::total_cmp);
        let (p10, p90) = (quantile(&values, 0.1), quantile(&values, 0.9));
        assert_eq!((p10, p90), (1.0, 1.0));
        assert_eq!(
            success_words(&risk((1.0, p10, p90), (38, 40))),
            "1 in 38 of 40 runs"
        );
        assert_eq!(
            success_words(&risk((1.0, 1.0, 1.0), (40, 40))),
            "1 in every run"
        );
        assert_eq!(half_width_cell(0.0), "none: the same in every run");
        assert_eq!(half_width_cell(0.0499), "0.049900");
    }

    #[test]
    fn small_numbers_keep_four_significant_digits() {
        assert_eq!(small(0.000123456), "0.0001235");
        assert_eq!(small(12.3456), "12.35");
        assert_eq!(signed(-0.5), "-0.5000");
    }
}
