//! `retrystorm map`: the probability of recovering over a plane of two settings, one panel per
//! policy, and where the boundary between "recovers" and "stays down" lies.
//!
//! This is the picture the metastability papers draw by hand (Bronson et al., HotOS '21; Huang
//! et al., OSDI '22): for each base load and trigger size, does the system come back once the
//! trigger is gone? A cell's outcome is a probability, since near the edge the same trigger tips
//! the system on some seeds and not on others; a run recovers when its `recovery_s` is a time
//! (healthy for good before the run ends). A run unhealthy before its incident (load above
//! what the system serves before the trigger: [`crate::vocabulary::metric::baseline`]) has no
//! health to return to: the probability counts it as not recovering, and `map.csv` counts it
//! apart from the runs that never recovered (`recovered`, `never_recovered` and
//! `unhealthy_before` add up to `runs`).
//!
//! Most cells are far from the edge, where every run agrees. So every cell first runs
//! `min_replications`, and a cell gets more, doubling up to `replications`, only while some
//! policy's probability of recovering is not known to be on one side of one half: while its
//! 95% Wilson interval contains 1/2 ([`settled`]). With four runs that agree, the interval is
//! [0.51, 1] or [0, 0.49], so a cell where all four agree stops at four; the runs go to the
//! cells on the boundary, where they decide where the edge is.

use crate::base::stats::wilson;
use crate::claims::number;
use crate::output::charts::phase_map::{
    MapAxis as ChartAxis, PhaseCell, PhaseMap, PhasePanel, render_phase_map,
};
use crate::output::charts::{ChartError, DrawnChart, Format, drawn_in_formats};
use crate::output::csv_bytes;
use crate::scenario::risk::{MAP_METRICS, MapExpect};
use crate::vocabulary::metric::UNHEALTHY_BEFORE;

use std::fmt::Write;

use super::page::{heading, table};
use super::{OutputFile, PreparedStudy, StudyRow, manifest_bytes, rows_csv};
use crate::base::escape::html;
use crate::base::spread::Spread;

/// The confidence of the intervals a map reports and refines by.
const CONFIDENCE: f64 = 0.95;

/// Whether a run recovered: its `recovery_s` is a time (not `never`, not `unhealthy before`,
/// not undefined).
fn recovered(prepared_recovery: usize, row: &StudyRow) -> bool {
    row.metrics[prepared_recovery]
        .parse::<f64>()
        .is_ok_and(f64::is_finite)
}

/// The index of `recovery_s` among a study's metrics, in every study's columns.
fn recovery_column(columns: &[crate::vocabulary::metric::NamedMetric]) -> usize {
    columns
        .iter()
        .position(|metric| metric.name == "recovery_s")
        .expect("recovery_s is a metric of every run")
}

/// Whether a cell whose runs so far are `rows` (every policy of each replication) needs no
/// more: for every policy, the 95% Wilson interval of its probability of recovering lies on one
/// side of 1/2.
pub fn settled(rows: &[StudyRow], policies: usize) -> bool {
    let columns = crate::vocabulary::metric::METRICS;
    let recovery = columns
        .iter()
        .position(|metric| metric.name == "recovery_s")
        .expect("recovery_s is a metric of every run");
    (0..policies).all(|policy| {
        let runs: Vec<&StudyRow> = rows.iter().filter(|row| row.policy == policy).collect();
        let up = runs.iter().filter(|row| recovered(recovery, row)).count();
        let (low, high) = wilson(up as u64, runs.len() as u64, CONFIDENCE);
        low > 0.5 || high < 0.5
    })
}

/// One cell of one policy's panel. Its runs fall in three cases, counted apart:
/// [`recovered`](CellOutcome::recovered), [`never_recovered`](CellOutcome::never_recovered)
/// and [`unhealthy_before`](CellOutcome::unhealthy_before), which add up to its runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CellOutcome {
    /// Runs.
    pub runs: u32,
    /// Runs that recovered: healthy for good before the run ended (`recovery_s` a time).
    pub recovered: u32,
    /// Runs that were unhealthy before the incident (not recovered, and not a storm that
    /// stayed down either).
    pub unhealthy_before: u32,
    /// The median recovery over the runs (`None` if at least half never recovered).
    pub median_recovery_s: Option<f64>,
}

impl CellOutcome {
    /// Runs that were healthy before the incident and did not recover: `recovery_s` `never`
    /// (not healthy for good by the end of arrivals, or the incident had not ended by then),
    /// or undefined: every run neither recovered nor unhealthy before, so that the three cases
    /// add up to the runs.
    pub fn never_recovered(&self) -> u32 {
        self.runs - self.recovered - self.unhealthy_before
    }

    /// The probability of recovering: the runs that recovered, of all the cell's runs, those
    /// unhealthy before the incident included (they count as not recovering).
    pub fn probability(&self) -> f64 {
        f64::from(self.recovered) / f64::from(self.runs.max(1))
    }

    /// Whether the cell recovers in at least half its runs.
    pub fn stable(&self) -> bool {
        self.runs > 0 && 2 * self.recovered >= self.runs
    }
}

/// Every policy's cells, `outcomes[policy][cell]`.
pub fn outcomes(prepared: &PreparedStudy, rows: &[StudyRow]) -> Vec<Vec<CellOutcome>> {
    let recovery = recovery_column(&prepared.columns);
    (0..prepared.policies.len())
        .map(|policy| {
            (0..prepared.spec.cell_count())
                .map(|cell| {
                    let runs_of_cell = || {
                        rows.iter()
                            .filter(|row| row.cell == cell && row.policy == policy)
                    };
                    let unhealthy_before = runs_of_cell()
                        .filter(|row| row.metrics[recovery] == UNHEALTHY_BEFORE)
                        .count() as u32;
                    let mut times: Vec<f64> = runs_of_cell()
                        .map(|row| match row.metrics[recovery].as_str() {
                            "never" | "" => f64::INFINITY,
                            text => text.parse().unwrap_or(f64::INFINITY),
                        })
                        .collect();
                    times.sort_by(f64::total_cmp);
                    let runs = times.len() as u32;
                    let recovered = times.iter().filter(|time| time.is_finite()).count() as u32;
                    let median = times.get(times.len().saturating_sub(1) / 2).copied();
                    CellOutcome {
                        runs,
                        recovered,
                        unhealthy_before,
                        median_recovery_s: median.filter(|time| time.is_finite()),
                    }
                })
                .collect()
        })
        .collect()
}

/// A map metric ([`MAP_METRICS`]) of one policy's cells.
pub fn metric(name: &str, cells: &[CellOutcome]) -> f64 {
    let count = cells.len().max(1) as f64;
    match name {
        "stable_share" => cells.iter().filter(|cell| cell.stable()).count() as f64 / count,
        "recovery_probability" => cells.iter().map(CellOutcome::probability).sum::<f64>() / count,
        _ => unreachable!("validated: map claims name map metrics"),
    }
}

/// A map claim's verdict: the claim in words, the values compared, and whether it held.
#[derive(Debug, Clone, PartialEq)]
pub struct MapVerdict {
    /// In words.
    pub claim: String,
    /// The policy's value.
    pub value: f64,
    /// What it was compared with.
    pub against: f64,
    /// Whether it held.
    pub held: bool,
    /// Why the lesson says so.
    pub why: Option<String>,
}

/// Judges the map's claims.
pub fn judge(prepared: &PreparedStudy, outcomes: &[Vec<CellOutcome>]) -> Vec<MapVerdict> {
    let cells_of = |name: &str| {
        let index = prepared
            .policies
            .iter()
            .position(|policy| policy == name)
            .expect("validated: map claims name policies");
        &outcomes[index]
    };
    prepared
        .map_claims
        .iter()
        .map(|claim: &MapExpect| {
            let value = metric(&claim.metric, cells_of(&claim.policy));
            let (text, against, held) = if let Some(other) = &claim.better_than {
                let against = metric(&claim.metric, cells_of(other));
                let margin = claim.margin.map_or(0.0, |margin| margin.get());
                let by = if margin > 0.0 {
                    format!(" by more than {}", number(margin))
                } else {
                    String::new()
                };
                (
                    format!("{} beats {} on {}{by}", claim.policy, other, claim.metric),
                    against,
                    value > against + margin,
                )
            } else if let Some(bound) = claim.at_least {
                (
                    format!(
                        "{} has {} at least {}",
                        claim.policy,
                        claim.metric,
                        number(bound.get())
                    ),
                    bound.get(),
                    value >= bound.get(),
                )
            } else {
                let bound = claim.at_most.expect("validated: one comparison").get();
                (
                    format!(
                        "{} has {} at most {}",
                        claim.policy,
                        claim.metric,
                        number(bound)
                    ),
                    bound,
                    value <= bound,
                )
            };
            MapVerdict {
                claim: text,
                value,
                against,
                held,
                why: claim.why.clone(),
            }
        })
        .collect()
}

/// `map.csv`: one row per cell and policy: its runs, counted apart as `recovered`,
/// `never_recovered` and `unhealthy_before` (which add up to `runs`), the probability of
/// recovering (`recovered / runs`: a run unhealthy before the incident counts as not
/// recovering, as in the map's colours and its claims), its 95% Wilson interval, and the
/// median recovery over all the runs (`never` when at least half did not recover).
fn map_csv(prepared: &PreparedStudy, outcomes: &[Vec<CellOutcome>]) -> Vec<u8> {
    let mut header: Vec<String> = vec!["cell".into()];
    header.extend(prepared.spec.axes.iter().map(|axis| axis.label()));
    header.extend(
        [
            "policy",
            "runs",
            "recovered",
            "never_recovered",
            "unhealthy_before",
            "probability",
            "low",
            "high",
            "median_recovery_s",
        ]
        .map(String::from),
    );
    let mut lines = Vec::new();
    for cell in 0..prepared.spec.cell_count() {
        for (policy, cells) in prepared.policies.iter().zip(outcomes) {
            let outcome = &cells[cell];
            let (low, high) = wilson(
                u64::from(outcome.recovered),
                u64::from(outcome.runs),
                CONFIDENCE,
            );
            let mut line = vec![cell.to_string()];
            line.extend(
                prepared
                    .spec
                    .cell_values(cell)
                    .into_iter()
                    .map(str::to_string),
            );
            line.extend([
                policy.clone(),
                outcome.runs.to_string(),
                outcome.recovered.to_string(),
                outcome.never_recovered().to_string(),
                outcome.unhealthy_before.to_string(),
                format!("{:.6}", outcome.probability()),
                format!("{low:.6}"),
                format!("{high:.6}"),
                outcome
                    .median_recovery_s
                    .map_or_else(|| "never".into(), |time| format!("{time:.6}")),
            ]);
            lines.push(line);
        }
    }
    csv_bytes(&header, lines)
}

/// The replications a cell gets: `min_replications` to `replications`, or one number where
/// they are equal (a full grid), with no cell getting more than another.
fn replications_a_cell(prepared: &PreparedStudy) -> Spread {
    Spread::of(
        prepared.spec.min_replications.to_string(),
        prepared.spec.replications.to_string(),
    )
}

/// The phase map's picture.
fn picture(prepared: &PreparedStudy, outcomes: &[Vec<CellOutcome>]) -> PhaseMap {
    let axis = |index: usize| ChartAxis {
        key: prepared.spec.axes[index].label(),
        labels: prepared.spec.axes[index].values.clone(),
    };
    PhaseMap {
        title: format!(
            "{}: probability of recovering from the incident",
            prepared.name
        ),
        subtitle: format!(
            "{}; the line separates recovering in at least half the runs from staying down",
            match replications_a_cell(prepared) {
                Spread::One(every) => format!("{every} replications in every cell"),
                range => format!(
                    "{} replications a cell (more near the boundary)",
                    range.words("")
                ),
            }
        ),
        x: axis(0),
        y: axis(1),
        panels: prepared
            .policies
            .iter()
            .zip(outcomes)
            .map(|(policy, cells)| PhasePanel {
                policy: policy.clone(),
                cells: cells
                    .iter()
                    .map(|cell| PhaseCell {
                        runs: cell.runs,
                        recovered: cell.recovered,
                        unhealthy_before: cell.unhealthy_before,
                        median_recovery_s: cell.median_recovery_s,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Every file of a whole map, from all its rows, and the text the terminal shows; the number
/// of claims that did not hold.
pub fn finalize(
    prepared: &PreparedStudy,
    rows: &[StudyRow],
    formats: &[Format],
) -> Result<(Vec<OutputFile>, String, usize), ChartError> {
    let outcomes = outcomes(prepared, rows);
    let verdicts = judge(prepared, &outcomes);
    let mut files = vec![
        ("map-runs.csv".to_string(), rows_csv(prepared, rows)),
        ("map.csv".to_string(), map_csv(prepared, &outcomes)),
        ("study.json".to_string(), manifest_bytes(prepared)),
    ];
    let picture = picture(prepared, &outcomes);
    let DrawnChart { files: drawn, svg } =
        drawn_in_formats("map", formats, |format| render_phase_map(&picture, format))?;
    files.extend(drawn);
    let summary = summary(prepared, rows, &outcomes, &verdicts);
    files.push((
        "map.html".to_string(),
        map_page(prepared, &outcomes, &verdicts, &summary, &svg),
    ));
    let failed = verdicts.iter().filter(|verdict| !verdict.held).count();
    Ok((files, summary, failed))
}

/// What the terminal and the page say: each policy's share of stable cells, what the map cost
/// against a full grid, and the claims.
fn summary(
    prepared: &PreparedStudy,
    rows: &[StudyRow],
    outcomes: &[Vec<CellOutcome>],
    verdicts: &[MapVerdict],
) -> String {
    let cells = prepared.spec.cell_count();
    let replications = rows.len() / prepared.policies.len().max(1);
    let full = cells * prepared.spec.replications as usize;
    let mut text = format!(
        "{}: map of {} x {} cells ({} by {}), {} policies\n",
        prepared.name,
        prepared.spec.axes[0].values.len(),
        prepared.spec.axes[1].values.len(),
        prepared.spec.axes[0].label(),
        prepared.spec.axes[1].label(),
        prepared.policies.len()
    );
    text += &format!(
        "  replications: {replications} in all ({} runs of {} policies), {}\n",
        rows.len(),
        prepared.policies.len(),
        match replications_a_cell(prepared) {
            Spread::One(every) => format!("{every} in every cell"),
            range => format!(
                "{} a cell as needed; {} in every cell would be {full}: this map cost {:.0}% of that",
                range.words(""),
                prepared.spec.replications,
                100.0 * replications as f64 / full.max(1) as f64
            ),
        }
    );
    let width = prepared
        .policies
        .iter()
        .map(|name| name.chars().count())
        .max()
        .unwrap_or(6)
        .max(6);
    text += &format!("  {:<width$}  stable cells  mean P(recover)\n", "policy");
    for (policy, cells) in prepared.policies.iter().zip(outcomes) {
        let stable = cells.iter().filter(|cell| cell.stable()).count();
        text += &format!(
            "  {policy:<width$}  {:>5} of {:<4}  {:>15.3}\n",
            stable,
            cells.len(),
            metric("recovery_probability", cells)
        );
    }
    for (policy, cells) in prepared.policies.iter().zip(outcomes) {
        let unhealthy: u32 = cells.iter().map(|cell| cell.unhealthy_before).sum();
        if unhealthy > 0 {
            let affected = cells
                .iter()
                .filter(|cell| cell.unhealthy_before > 0)
                .count();
            text += &format!(
                "  {policy}: {unhealthy} runs in {affected} cells were unhealthy before the incident (load above what the system serves): they count as not recovering, but no retry storm kept them down\n"
            );
        }
    }
    if !verdicts.is_empty() {
        let held = verdicts.iter().filter(|verdict| verdict.held).count();
        text += &format!("  lesson: {held} of {} claims held\n", verdicts.len());
        for verdict in verdicts {
            text += &format!(
                "    {}: {} ({} against {})\n",
                if verdict.held { "held" } else { "did not hold" },
                verdict.claim,
                number(verdict.value),
                number(verdict.against)
            );
        }
    }
    let meanings: Vec<String> = MAP_METRICS
        .iter()
        .map(|(name, meaning)| format!("{name}: {meaning}"))
        .collect();
    text += &format!(
        "  a cell is stable when the system recovers in at least half its runs ({}); {}\n",
        meanings.join("; "),
        prepared.what_seeds_vary()
    );
    text
}
/// `map.html`.
fn map_page(
    prepared: &PreparedStudy,
    outcomes: &[Vec<CellOutcome>],
    verdicts: &[MapVerdict],
    summary: &str,
    svg: &[u8],
) -> Vec<u8> {
    let mut page = String::new();
    heading(&mut page, prepared, "where it tips");
    let _ = write!(page, "<h2>Summary</h2>\n<pre>{}</pre>\n", html(summary));
    let _ = write!(
        page,
        "<figure>{}</figure>\n<p>Each cell's colour is the probability that the system recovers from the incident (healthy for good before the run ends); the thick line separates the cells that recover in at least half their runs from those that stay down. n is the cell's runs: cells near the boundary get more.{}</p>\n",
        String::from_utf8_lossy(svg),
        if outcomes
            .iter()
            .flatten()
            .any(|cell| cell.unhealthy_before > 0)
        {
            " A hatched cell holds runs that were unhealthy before the incident (u.b., counted after n): they did not recover, but no storm kept them down; the load was above what the system serves before the incident started."
        } else {
            ""
        }
    );
    if !verdicts.is_empty() {
        page.push_str("<h2>Claims</h2>\n<ul class=\"claims\">\n");
        for verdict in verdicts {
            let _ = writeln!(
                page,
                "<li class=\"{}\"><b>{}</b>: {} ({} against {}){}</li>",
                if verdict.held { "held" } else { "failed" },
                if verdict.held { "held" } else { "did not hold" },
                html(&verdict.claim),
                number(verdict.value),
                number(verdict.against),
                verdict.why.as_ref().map_or_else(String::new, |why| format!(
                    " <span class=\"meta\">({})</span>",
                    html(why)
                ))
            );
        }
        page.push_str("</ul>\n");
    }
    let _ = write!(
        page,
        "<h2>Cells</h2>\n<p>Every cell's runs and probability of recovering, per policy; <code>map.csv</code> has the 95% Wilson intervals and the median recovery.</p>\n"
    );
    let mut header: Vec<String> = prepared.spec.axes.iter().map(|axis| axis.label()).collect();
    header.extend(prepared.policies.iter().cloned());
    let rows: Vec<Vec<String>> = (0..prepared.spec.cell_count())
        .map(|cell| {
            let mut row: Vec<String> = prepared
                .spec
                .cell_values(cell)
                .into_iter()
                .map(str::to_string)
                .collect();
            row.extend(outcomes.iter().map(|cells| {
                let outcome = &cells[cell];
                format!("{} of {}", outcome.recovered, outcome.runs)
            }));
            row
        })
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    table(&mut page, &header, &rows);
    page.push_str("</body>\n</html>\n");
    page.into_bytes()
}
