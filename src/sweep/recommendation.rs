//! `recommendation.txt`: what the sweep recommends, and why.
//!
//! In order: the requirements and how many points met them; the recommended point (or, if none
//! met them, the closest and what it missed) and the runner-up or, when the seeds cannot tell
//! the best mean from other points (paired seed by seed, [`tie`]), every point tied with it and
//! why the recommended one was chosen among them; warnings (the choice on the grid's edge, a
//! tie and the seeds that would separate it); the chosen point's 95%
//! intervals, each with its method, and what the seeds vary and what they do not; the Pareto
//! front; each grid
//! key's effect; the points that give identical results; which heatmaps were drawn and which
//! metrics were constant; and a `[[policy]]` table to paste. Each is a [`Section`], which the
//! sweep's `report.html` shows under its own heading.

use std::fmt::Write as _;

use serde::Serialize;

use super::aggregate::{Aggregate, aggregate_text, meets};
use super::analysis::{
    Assumption, Edge, Effect, Identical, assumption, disables, edges, effect, pareto_front,
};
use super::interval::{Interval, Method, intervals_overlap, operations_of, pooled_names};
use super::tie::{self, Difference};
use super::{PreparedSweep, ResultRow, SweepError, topology_keys};
use crate::base::distribution::Distribution;
use crate::base::spread::{Spread, no_width};
use crate::scenario::Policy;
use crate::sweep::heatmap::{self, Layout};
use crate::vocabulary::metric::{Better, Domain, NamedMetric, domain, parse_metric};

/// Metrics that have a heatmap in every sweep whose grid can be drawn, besides those the
/// requirements and `--minimize` (or `--maximize`) name: the peak load during and after the incident (a
/// synchronised herd shows in the second) and the recovery.
pub const ALWAYS_DRAWN: [&str; 3] = ["peak_incident_rps", "peak_after_rps", "recovery_s"];

/// The most rows a table of the recommendation lists (the front, the identical groups); a
/// larger grid's are counted, and its files hold every value.
const MAX_LISTED: usize = 30;

/// A part of the recommendation, in the order they are written (each but the first only
/// when there is something to say in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// The requirements, how many points met them, the recommended point (or the closest),
    /// the runner-up and the warnings.
    Decision,
    /// The chosen point's 95% intervals and what the seeds vary.
    Intervals,
    /// The Pareto front.
    Front,
    /// Each grid key's effect on each metric of the front.
    Sensitivity,
    /// Points with identical results.
    Identical,
    /// Which heatmaps were drawn.
    Heatmaps,
    /// The command that runs the recommended point.
    Reproduce,
    /// The recommended `[[policy]]` table, to paste.
    Policy,
}

impl Section {
    /// The heading of the section on a page.
    pub fn title(self) -> &'static str {
        match self {
            Section::Decision => "Recommendation",
            Section::Intervals => "How sure: 95% intervals",
            Section::Front => "Pareto front",
            Section::Sensitivity => "Sensitivity",
            Section::Identical => "Identical results",
            Section::Heatmaps => "Heatmaps",
            Section::Reproduce => "Reproduce",
            Section::Policy => "The policy to paste",
        }
    }
}

/// What the recommendation decided, for the charts that show it.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// The points that meet every requirement.
    pub meeting: Vec<usize>,
    /// The recommended point or, if none meets the requirements, the closest.
    pub chosen: Option<usize>,
    /// The metrics of the front: the optimised one first (better the way it is optimised),
    /// then the requirements', each once; not those with no better direction.
    pub front_metrics: Vec<NamedMetric>,
    /// The Pareto front, among the meeting points (all points if none meets them), in order of
    /// the first of `front_metrics`, best first.
    pub front: Vec<usize>,
    /// The metrics drawn as heatmaps (none if the grid cannot be drawn).
    pub heatmaps: Vec<NamedMetric>,
    /// The recommendation's text by section, in order; `recommendation.txt` is their texts
    /// one after the other, a blank line between two.
    pub sections: Vec<(Section, String)>,
}

/// Decimals that write `value` in six significant digits: none from 100,000 up, six below 1.
fn decimals(value: f64) -> usize {
    [1e5, 1e4, 1e3, 1e2, 1e1, 1.0]
        .iter()
        .position(|&power| value.abs() >= power)
        .unwrap_or(6)
}

/// `value` as text with `decimals`: `never` for infinity, `n/a` undefined.
fn fixed(value: f64, decimals: usize) -> String {
    if value.is_nan() {
        "n/a".into()
    } else if value.is_infinite() {
        "never".into()
    } else {
        format!("{value:.decimals$}")
    }
}

/// `value` in six significant digits without trailing zeros: `4163.24`, `0.977165`, `3`.
pub(super) fn short(value: f64) -> String {
    let text = fixed(value, decimals(value));
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A column of a table: its header and cells, and whether they align right (numbers).
struct Column {
    header: String,
    cells: Vec<String>,
    right: bool,
}

impl Column {
    fn text(header: &str, cells: Vec<String>) -> Column {
        Column {
            header: header.to_string(),
            cells,
            right: false,
        }
    }

    /// Numbers, all with the decimals that give the largest six significant digits, so that
    /// their points line up.
    fn numbers(header: &str, values: &[f64]) -> Column {
        let largest = values
            .iter()
            .copied()
            .filter(|value| value.is_finite())
            .fold(0.0, |largest: f64, value| largest.max(value.abs()));
        Column {
            header: header.to_string(),
            cells: values
                .iter()
                .map(|&value| fixed(value, decimals(largest)))
                .collect(),
            right: true,
        }
    }
}

/// `columns` side by side, each padded to its widest cell, two spaces apart.
fn table(columns: &[Column]) -> String {
    let widths: Vec<usize> = columns
        .iter()
        .map(|column| {
            column
                .cells
                .iter()
                .chain([&column.header])
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let rows = columns.first().map_or(0, |column| column.cells.len());
    let mut text = String::new();
    for row in 0..=rows {
        let line: Vec<String> = columns
            .iter()
            .zip(&widths)
            .map(|(column, &width)| {
                let cell = if row == 0 {
                    &column.header
                } else {
                    &column.cells[row - 1]
                };
                if column.right {
                    format!("{cell:>width$}")
                } else {
                    format!("{cell:<width$}")
                }
            })
            .collect();
        text.push_str(line.join("  ").trim_end());
        text.push('\n');
    }
    text
}

/// The most points a list of points names; a longer one says how many more.
const MAX_NAMED: usize = 12;

/// `3, 5, 7`: `points` but `except`, at most [`MAX_NAMED`] of them, then `and 40 more`.
fn listed_points(points: &[usize], except: Option<usize>) -> String {
    let mut kept = points.iter().filter(|&&point| Some(point) != except);
    let count = kept.clone().count();
    let mut named: Vec<String> = kept
        .by_ref()
        .take(MAX_NAMED)
        .map(ToString::to_string)
        .collect();
    if count > MAX_NAMED {
        named.push(format!("and {} more", count - MAX_NAMED));
    }
    named.join(", ")
}

/// `1, 2 and 3`.
fn listed(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [only] => only.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn direction(better: Better) -> &'static str {
    match better {
        Better::Higher => "higher is better",
        Better::Lower => "lower is better",
        Better::Neither => "no better direction",
    }
}

#[derive(Serialize)]
struct PolicySnippet<'a> {
    policy: [&'a Policy; 1],
}

/// For each metric the requirements and `--minimize` name that can lack a value, how many
/// points have none: undefined (on some seed) or, for a recovery, never. Such a point meets a
/// requirement only if it says `or undefined` or `or never`, and is not ranked when undefined.
fn without_values(prepared: &PreparedSweep, aggregate: &Aggregate, text: &mut String) {
    let names = prepared
        .requirements
        .iter()
        .map(|requirement| requirement.metric.as_str())
        .chain(prepared.objective.iter().map(|metric| metric.name.as_str()));
    let points = prepared.spec.point_count();
    let mut seen = Vec::new();
    let mut lines = Vec::new();
    for name in names {
        let Some(domain) = domain(name).filter(|_| !seen.contains(&name)) else {
            continue;
        };
        seen.push(name);
        let count = |test: fn(f64) -> bool| {
            (0..points)
                .filter(|&point| test(aggregate.mean(point, name)))
                .count()
        };
        let undefined = count(f64::is_nan);
        match domain {
            Domain::Recovery => lines.push(format!(
                "  {name}: {undefined} of {points} undefined (no incident), {} never",
                count(f64::is_infinite)
            )),
            Domain::NonNegativeOrUndefined => lines.push(format!(
                "  {name}: {undefined} of {points} undefined (on some seed)"
            )),
            Domain::NonNegative | Domain::Share => {}
        }
    }
    if !lines.is_empty() {
        let _ = writeln!(
            text,
            "points without a value (they meet a requirement only if it says `or undefined` or `or never`, and an undefined one is not ranked):\n{}",
            lines.join("\n")
        );
    }
}

/// The recommendation's text, and what it decided. `rows` are ordered by point and seed.
pub(super) fn recommendation(
    prepared: &PreparedSweep,
    aggregate: &Aggregate,
    rows: &[ResultRow],
) -> Result<(String, Verdict), SweepError> {
    let spec = &prepared.spec;
    let mut text = String::new();
    let requirements: Vec<String> = prepared
        .requirements
        .iter()
        .map(ToString::to_string)
        .collect();
    let _ = writeln!(
        text,
        "requirements: {}",
        if requirements.is_empty() {
            "none".to_string()
        } else {
            requirements.join(", ")
        }
    );
    let _ = match &prepared.objective {
        Some(metric) if metric.better == Better::Higher => {
            writeln!(text, "maximise: {}", metric.name)
        }
        Some(metric) => writeln!(text, "minimise: {}", metric.name),
        None => writeln!(
            text,
            "minimise: nothing (first point that meets the requirements)"
        ),
    };
    let points = spec.point_count();
    let seeds = prepared.seeds.len();
    let meeting: Vec<usize> = (0..points)
        .filter(|&point| meets(prepared, aggregate, point))
        .collect();
    let _ = writeln!(
        text,
        "{} of {points} points meet the requirements (means over {seeds} seed{})",
        meeting.len(),
        if seeds == 1 { "" } else { "s" }
    );
    without_values(prepared, aggregate, &mut text);
    // Meeting points by the metric to optimise, best first, ties in grid order.
    let ranked: Vec<usize> = match &prepared.objective {
        Some(metric) => {
            let mean = |point: usize| aggregate.mean(point, &metric.name);
            let mut ranked: Vec<usize> = meeting
                .iter()
                .copied()
                .filter(|&point| !mean(point).is_nan())
                .collect();
            ranked.sort_by(|&a, &b| match metric.better {
                Better::Higher => mean(b).total_cmp(&mean(a)),
                Better::Lower | Better::Neither => mean(a).total_cmp(&mean(b)),
            });
            ranked
        }
        None => meeting.clone(),
    };
    let identical = Identical::of(rows, points);
    let mut warnings = Vec::new();
    let best = ranked.first().copied();
    let mut recommended = best;
    if let (Some(best), Some(metric)) = (best, &prepared.objective) {
        let column = column_index(prepared, &metric.name);
        let values = |point: usize| tie::seed_values(rows, column, point);
        // Points with identical results are one result, listed as such; they are not a tie.
        let tied: Vec<(usize, Option<Difference>)> = if seeds < 2 {
            Vec::new()
        } else {
            tie::tied(best, &ranked, values)
                .into_iter()
                .filter(|&(point, _)| point == best || !identical.same(point, best))
                .collect()
        };
        if tied.len() > 1 {
            recommended = Some(explain_tie(
                prepared,
                (aggregate, rows),
                metric,
                &tied,
                (&mut text, &mut warnings),
            )?);
        } else {
            let _ = writeln!(
                text,
                "recommended: point {best}: {}{}",
                spec.describe_point(best),
                objective_text(prepared, aggregate, best)
            );
            match ranked.iter().find(|&&point| !identical.same(point, best)) {
                Some(&runner_up) => {
                    let _ = writeln!(
                        text,
                        "runner-up: point {runner_up}: {}{}",
                        spec.describe_point(runner_up),
                        objective_text(prepared, aggregate, runner_up)
                    );
                    let difference = Difference::paired(&values(runner_up), &values(best));
                    compare(
                        aggregate,
                        metric,
                        (best, runner_up, difference),
                        seeds,
                        &mut text,
                        &mut warnings,
                    );
                }
                None => {
                    let _ = writeln!(
                        text,
                        "runner-up: none (no other point meets the requirements with other results)"
                    );
                }
            }
        }
    } else if let Some(best) = best {
        let _ = writeln!(
            text,
            "recommended: point {best}: {}{}",
            spec.describe_point(best),
            objective_text(prepared, aggregate, best)
        );
    }
    let chosen = recommended.or_else(|| closest(prepared, aggregate, &mut text));
    if let Some(point) = chosen {
        let values = spec.point_values(point);
        let alone = [point];
        let group = identical.group(point).unwrap_or(&alone);
        // The point's scenario says whether an ejection percent ejects anything.
        let scenario = spec.scenario_for(point).ok();
        let disables = |axis: usize, value: &str| disables(spec, scenario.as_ref(), axis, value);
        for (axis, edge) in edges(spec, point, group, disables) {
            let (end, beyond) = match edge {
                Edge::Smallest => ("smallest", "below"),
                Edge::Largest => ("largest", "above"),
            };
            let key = &spec.axes[axis].key;
            // Beyond an assumption's edge lies another world, not a better setting.
            let (what, instead) = match assumption(key, &prepared.uncertain.not_drawn) {
                None => {
                    warnings.push(format!(
                        "{key} = {} is the {end} value tried: the best may lie {beyond} it; extend the grid",
                        values[axis]
                    ));
                    continue;
                }
                Some(Assumption::Uncertain) => (
                    "an [uncertain] input, which the grid sets instead of drawing",
                    "leave it out of the grid for the seeds to draw",
                ),
                Some(Assumption::ScaleBy) => (
                    "a scale_by, a factor on a measured distribution",
                    "draw it under [uncertain]",
                ),
                Some(Assumption::Load) => {
                    ("the load the clients offer", "draw it under [uncertain]")
                }
            };
            warnings.push(format!(
                "{key} is an assumption ({what}), not a setting to tune: the recommended point takes its {end} value tried, {}, so its settings are the best only where that holds; compare the settings at each of its values, or {instead}, rather than extend the grid",
                values[axis]
            ));
        }
    }
    for warning in &warnings {
        let _ = writeln!(text, "warning: {warning}");
    }
    let mut sections = vec![(Section::Decision, std::mem::take(&mut text))];
    if let Some(point) = chosen {
        intervals_section(prepared, (aggregate, rows), point, &mut text)?;
        sections.push((Section::Intervals, std::mem::take(&mut text)));
    }
    let front_metrics = front_metrics(prepared);
    let candidates: Vec<usize> = if meeting.is_empty() {
        (0..points).collect()
    } else {
        meeting.clone()
    };
    let front = pareto_front(
        &candidates,
        &front_metrics
            .iter()
            .map(|metric| metric.better)
            .collect::<Vec<_>>(),
        |point, index| aggregate.mean(point, &front_metrics[index].name),
    );
    front_section(
        prepared,
        aggregate,
        (&front_metrics, &front),
        (meeting.len(), chosen, &identical),
        &mut text,
    );
    sections.push((Section::Front, std::mem::take(&mut text)));
    sensitivity_section(prepared, aggregate, &front_metrics, &mut text);
    sections.push((Section::Sensitivity, std::mem::take(&mut text)));
    identical_section(prepared, &identical.groups, &mut text);
    sections.push((Section::Identical, std::mem::take(&mut text)));
    let heatmaps = heatmap_section(prepared, aggregate, &front_metrics, &mut text);
    sections.push((Section::Heatmaps, std::mem::take(&mut text)));
    if let Some(best) = recommended {
        reproduce_section(prepared, best, &mut text);
        sections.push((Section::Reproduce, std::mem::take(&mut text)));
        snippet(prepared, best, &mut text)?;
        sections.push((Section::Policy, std::mem::take(&mut text)));
    }
    let texts: Vec<&str> = sections.iter().map(|(_, text)| text.as_str()).collect();
    Ok((
        texts.join("\n"),
        Verdict {
            meeting,
            chosen,
            front_metrics,
            front,
            heatmaps,
            sections,
        },
    ))
}

/// ` (p99_ms 4163.242167 ± 56.044208)`: the point's mean of the metric to optimise and the
/// half width of its 95% t-interval, or ` (duplicate_writes 0.000000, 95% 0 to 1.22963)` for
/// an interval of another [`Method`], or ` (recovery_s never on every seed)`, ` (recovery_s
/// 0.000000 on every seed)` where every seed gave one value (an interval of no width is no
/// interval); no interval without one.
fn objective_text(prepared: &PreparedSweep, aggregate: &Aggregate, point: usize) -> String {
    let Some(metric) = &prepared.objective else {
        return String::new();
    };
    let interval = aggregate.interval(point, &metric.name);
    let mut text = format!(" ({} {}", metric.name, aggregate_text(interval.mean));
    if interval.low.is_infinite() {
        text.push_str(" on every seed");
    } else if !interval.low.is_nan() && !interval.high.is_nan() {
        if Method::of(metric) == Method::StudentT {
            let half_width = aggregate_text((interval.high - interval.low) / 2.0);
            if no_width(&half_width) {
                text.push_str(" on every seed");
            } else {
                let _ = write!(text, " ± {half_width}");
            }
        } else {
            match Spread::of(short(interval.low), short(interval.high)) {
                Spread::One(_) => text.push_str(" on every seed"),
                range => {
                    let _ = write!(text, ", 95% {}", range.words(""));
                }
            }
        }
    }
    text.push(')');
    text
}

/// `4107.2 to 4219.29`: an interval's bounds in six significant digits; `0 on every seed`
/// where they read the same, as the seeds' range (or a t-interval) is where every seed gave
/// one value: an interval of no width would claim a certainty the seeds do not give.
fn range_text(interval: Interval) -> String {
    Spread::of(short(interval.low), short(interval.high)).words("on every seed")
}

/// Metrics whose interval at the chosen point is always listed, besides those of the
/// requirements and `--minimize`: success, the two costs a retry can add that no later
/// success undoes, and the recovery.
const ALWAYS_INTERVALS: [&str; 4] = [
    "success_rate",
    "duplicate_writes",
    "unknown_results",
    "recovery_s",
];

/// The chosen point's 95% interval of the metrics to minimise, required and
/// [`ALWAYS_INTERVALS`], each with how it was made; what pooling assumes; and what the seeds
/// vary and what they leave to the model, with a grid key that sweeps an assumption.
fn intervals_section(
    prepared: &PreparedSweep,
    (aggregate, rows): (&Aggregate, &[ResultRow]),
    point: usize,
    text: &mut String,
) -> Result<(), SweepError> {
    let seeds = prepared.seeds.len();
    let mut names: Vec<&str> = Vec::new();
    for name in prepared
        .objective
        .iter()
        .map(|metric| metric.name.as_str())
        .chain(prepared.requirements.iter().map(|r| r.metric.as_str()))
        .chain(ALWAYS_INTERVALS)
    {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let _ = writeln!(
        text,
        "95% intervals at point {point} over its {seeds} seed{}:",
        if seeds == 1 { "" } else { "s" }
    );
    for name in names {
        let index = column_index(prepared, name);
        let metric = &prepared.columns[index];
        // An operation's metric is of its operations: `p99_ms:pay` of `operations:pay`.
        let operations = aggregate.mean(point, &operations_of(name)) * seeds as f64;
        let interval = aggregate.interval(point, name);
        let bounded = !interval.low.is_nan() && !interval.high.is_nan();
        let mut bounds = if bounded {
            range_text(interval)
        } else {
            "no interval".to_string()
        };
        let how = match Method::of(metric) {
            _ if interval.mean.is_nan() => {
                bounds = "undefined on every seed".to_string();
                match metric.domain {
                    Domain::Recovery => "the scenario has no incident to recover from".to_string(),
                    _ => "nothing to measure: a latency without a success, a rate during the incident without one".to_string(),
                }
            }
            // Every seed gave one value (`0 on every seed`): the seeds agree, and a range or a
            // t-interval of them has no width, which is no certainty.
            _ if bounded
                && matches!(
                    Spread::of(short(interval.low), short(interval.high)),
                    Spread::One(_)
                ) =>
            {
                "no spread between the seeds to make an interval of: they agree, which is not to say that more seeds would".to_string()
            }
            Method::StudentT => "Student's t over the seeds' values".to_string(),
            Method::Range if seeds < 2 => "a range needs two seeds".to_string(),
            Method::Wilson { .. } => format!(
                "Wilson score on {} of {} operations pooled over the seeds, or the seeds' t-interval where wider",
                short(aggregate.mean(point, &pooled_names(name)[0]) * seeds as f64),
                short(operations)
            ),
            Method::Poisson => {
                let _ = write!(
                    bounds,
                    " a run, at most {} per operation",
                    per_operation(interval.high * seeds as f64 / operations)
                );
                format!(
                    "exact Poisson on the {} events of the {seeds} run{} pooled, or the seeds' t-interval where wider",
                    short(interval.mean * seeds as f64),
                    if seeds == 1 { "" } else { "s" }
                )
            }
            Method::Range => {
                let never = rows
                    .iter()
                    .filter(|row| row.point == point)
                    .filter(|row| parse_metric(&row.metrics[index]) == Ok(f64::INFINITY))
                    .count();
                format!(
                    "the seeds' range, which covers the median recovery with probability {}%{}",
                    short(100.0 * (1.0 - 0.5f64.powi(seeds as i32 - 1)).max(0.0)),
                    if never > 0 {
                        format!("; {never} of {seeds} seeds never recovered")
                    } else {
                        String::new()
                    }
                )
            }
        };
        let _ = writeln!(text, "  {name} {}: {bounds} ({how})", short(interval.mean));
    }
    text.push_str(
        "pooled counts treat the operations as independent; in a storm they are not (one outage fails many at once), so a pooled interval is a floor on the uncertainty, and a count of 0 on every seed says none happened in these runs, not that none can\n",
    );
    if seeds < 2 {
        text.push_str(
            "with one seed the spread between runs is unknown: the pooled intervals are all there is, and they are too narrow wherever the operations fail together; add seeds\n",
        );
    }
    let _ = writeln!(
        text,
        "{}: {}",
        what_seeds_vary(prepared),
        assumption_to_sweep(prepared, point)?
    );
    Ok(())
}

/// What the seeds vary (the randomness and, each seed its draw, the `[uncertain]` inputs the
/// sweep does not set itself) and what they do not (the model's other assumptions), in the
/// words a replicated study uses for its inputs ([`UncertainDraws::drawn_in_words`]).
///
/// [`UncertainDraws::drawn_in_words`]: crate::scenario::uncertain::UncertainDraws::drawn_in_words
fn what_seeds_vary(prepared: &PreparedSweep) -> String {
    const RANDOMNESS: &str =
        "arrivals, service and network times drawn from their distributions, jitter, errors";
    const ASSUMPTIONS: &str = "workers, capacities and their curves, service-time and latency distributions, the clients and their deadlines";
    let not_drawn = prepared
        .uncertain
        .not_drawn_in_words("a --grid key or --set");
    match prepared.uncertain.drawn_in_words("seed") {
        Some(drawn) => format!(
            "seeds vary the randomness ({RANDOMNESS}), and {drawn}, so the intervals cover what you are unsure of in those inputs as well as chance{}; they do not vary the model's other assumptions ({ASSUMPTIONS}), which no interval covers",
            not_drawn
                .map(|words| format!("; {words}"))
                .unwrap_or_default()
        ),
        None => format!(
            "seeds vary the randomness only ({RANDOMNESS}){}; they do not vary the model's assumptions ({ASSUMPTIONS}), which no interval covers",
            not_drawn
                .map(|words| format!("; the [uncertain] inputs are {words}"))
                .unwrap_or_default()
        ),
    }
}

/// A rate per operation: six significant digits from 0.001 up, else as `2.46e-5`.
fn per_operation(rate: f64) -> String {
    if rate.is_finite() && rate != 0.0 && rate.abs() < 1e-3 {
        format!("{rate:.2e}")
    } else {
        short(rate)
    }
}

/// How to see what an assumption does: `sweep it: add --grid
/// service.db.service_time.scale_by=0.8,1,1.25 to this command`, for the service time of the
/// last service that calls no other (the deepest tier, or the `[upstream]`) at the point, then
/// the clients' count, whichever the grid does not vary already, at 80%, 100% and 125% of the
/// point's value. Both are keys the edge warnings know as assumptions
/// ([`crate::sweep::analysis::assumption`]): a grid on them asks "what if", never "extend".
fn assumption_to_sweep(prepared: &PreparedSweep, point: usize) -> Result<String, SweepError> {
    let spec = &prepared.spec;
    let scenario = spec.scenario_for(point)?;
    let services = scenario.services();
    let deepest = services
        .iter()
        .rev()
        .find(|service| service.calls.is_empty())
        .unwrap_or(&services[0]);
    let service_time_key = match &scenario.upstream {
        Some(_) => "upstream.service_time.scale_by".to_string(),
        None => format!("service.{}.service_time.scale_by", deepest.name()),
    };
    let factor = match &deepest.service_time {
        Distribution::Scaled(scaled) => scaled.factor,
        _ => 1.0,
    };
    let clients = scenario.clients.count.get_ref().get() as f64;
    let around = |value: f64, whole: bool| {
        let mut values: Vec<String> = [0.8, 1.0, 1.25]
            .iter()
            .map(|share| {
                if whole {
                    ((value * share).round().max(1.0) as u64).to_string()
                } else {
                    short(value * share)
                }
            })
            .collect();
        values.dedup();
        values
    };
    let candidates = [
        (service_time_key, around(factor, false)),
        ("clients.count".to_string(), around(clients, true)),
    ];
    // A key the grid sets or the seeds draw is varied already.
    let varied = spec.axes.iter().map(|axis| axis.key.as_str()).chain(
        prepared
            .uncertain
            .inputs
            .iter()
            .map(|input| input.key.as_str()),
    );
    let swept = |key: &str| {
        varied.clone().any(|varied| {
            varied == key
                || topology_keys(&scenario, varied)
                    .is_some_and(|keys| keys.iter().any(|swept| swept == key))
        })
    };
    Ok(match candidates.iter().find(|(key, _)| !swept(key)) {
        Some((key, values)) => format!(
            "to see how far one moves the answer, sweep it: add --grid {key}={} to this command",
            values.join(",")
        ),
        None => format!(
            "this sweep varies {} and {}; the others stay as the scenario states them",
            candidates[0].0, candidates[1].0
        ),
    })
}

/// Whether the seeds tell the recommended point from the runner-up (a point not tied with it):
/// a line with the paired 95% interval of their difference seed by seed
/// ([`Difference::paired`]), which excludes 0; without one (a value that is not finite), whether
/// their own 95% intervals of the metric to optimise are apart, a warning when they overlap or
/// are missing.
fn compare(
    aggregate: &Aggregate,
    objective: &NamedMetric,
    (best, runner_up, difference): (usize, usize, Option<Difference>),
    seeds: usize,
    text: &mut String,
    warnings: &mut Vec<String>,
) {
    let metric = objective.name.as_str();
    let (a, b) = (
        aggregate.interval(best, metric),
        aggregate.interval(runner_up, metric),
    );
    let range = range_text;
    let seeds_text = format!("{seeds} seed{}", if seeds == 1 { "" } else { "s" });
    let better = if objective.better == Better::Higher {
        "higher"
    } else {
        "lower"
    };
    if let Some(difference) = difference.filter(|_| seeds >= 2) {
        let _ = writeln!(
            text,
            "confidence: point {best} has the {better} {metric} with {seeds_text}: the paired 95% interval of point {runner_up}'s difference from it, seed by seed, excludes 0 ({}; their own intervals: {} and {})",
            difference_text(difference),
            range(a),
            range(b)
        );
        return;
    }
    // One seed has no spread between runs: a pooled interval alone would overstate the
    // certainty.
    let overlap = if seeds < 2 {
        None
    } else {
        intervals_overlap(a, b)
    };
    match overlap {
        Some(true) => warnings.push(format!(
            "{metric} cannot tell point {best} from point {runner_up} with {seeds_text}: their 95% intervals overlap ({} and {}); add seeds",
            range(a),
            range(b)
        )),
        Some(false) if a.mean.is_finite() && b.mean.is_finite() => {
            let _ = writeln!(
                text,
                "confidence: point {best} has the {better} {metric} with {seeds_text}: the 95% intervals do not overlap ({} and {})",
                range(a),
                range(b)
            );
        }
        Some(false) => {}
        None if seeds < 2 => warnings.push(format!(
            "{metric} cannot tell point {best} from point {runner_up} with one seed: there is no spread between runs to compare them by; add seeds"
        )),
        None => warnings.push(format!(
            "{metric} cannot tell point {best} from point {runner_up}: one of them has no 95% interval (it needs two seeds or more, each with a finite value); add seeds"
        )),
    }
}

/// `+15`, `-0.02`: a difference with its sign.
fn signed(value: f64) -> String {
    format!("{}{}", if value >= 0.0 { "+" } else { "" }, short(value))
}

/// `+15 ± 63.53`: a paired difference and the half width of its 95% interval; `+15 on every
/// seed` where the half width is none (the same difference on every seed).
fn difference_text(difference: Difference) -> String {
    let half_width = short(difference.half_width);
    if no_width(&half_width) {
        format!("{} on every seed", signed(difference.mean))
    } else {
        format!("{} ± {half_width}", signed(difference.mean))
    }
}

/// The position of metric `name` among the sweep's columns (and the rows' metrics).
fn column_index(prepared: &PreparedSweep, name: &str) -> usize {
    prepared
        .columns
        .iter()
        .position(|metric| metric.name == name)
        .expect("a metric of the sweep's columns")
}

/// The points the seeds cannot tell apart on the metric to optimise (`tied`, the best mean
/// first, each other with its paired difference from it; [`tie::tied`]): the recommended point
/// chosen among them ([`tie::choose`]) and why, the tie, and a warning with the seeds that would
/// separate them. Returns the recommended point.
fn explain_tie(
    prepared: &PreparedSweep,
    (aggregate, rows): (&Aggregate, &[ResultRow]),
    objective: &NamedMetric,
    tied: &[(usize, Option<Difference>)],
    (text, warnings): (&mut String, &mut Vec<String>),
) -> Result<usize, SweepError> {
    let spec = &prepared.spec;
    let seeds = prepared.seeds.len();
    let metric = objective.name.as_str();
    let best = tied[0].0;
    let points: Vec<usize> = tied.iter().map(|&(point, _)| point).collect();
    let secondary: Vec<NamedMetric> = front_metrics(prepared)
        .into_iter()
        .filter(|other| other.name != metric)
        .collect();
    let columns: Vec<usize> = secondary
        .iter()
        .map(|other| column_index(prepared, &other.name))
        .collect();
    let values: Vec<Box<dyn Fn(usize) -> Vec<f64> + '_>> = columns
        .iter()
        .map(|&column| {
            Box::new(move |point| tie::seed_values(rows, column, point))
                as Box<dyn Fn(usize) -> Vec<f64>>
        })
        .collect();
    let by: Vec<(Better, tie::SeedValues<'_>)> = secondary
        .iter()
        .zip(&values)
        .map(|(other, values)| (other.better, values.as_ref()))
        .collect();
    // The base scenario loaded when the sweep was prepared: a point whose keys cannot be
    // compared with it counts every key as changed.
    let changes = |point: usize| {
        spec.changed_keys(point)
            .map_or(spec.axes.len(), |keys| keys.len())
    };
    let (chosen, steps) = tie::choose(&points, &by, changes);
    let _ = writeln!(
        text,
        "recommended: point {chosen}: {}{}",
        spec.describe_point(chosen),
        objective_text(prepared, aggregate, chosen)
    );
    let differences: Vec<String> = tied[1..]
        .iter()
        .take(MAX_NAMED)
        .map(|&(point, difference)| match difference {
            Some(difference) => format!("point {point} {}", difference_text(difference)),
            None => format!("point {point} the same on every seed"),
        })
        .chain(
            (tied.len() > MAX_NAMED + 1)
                .then(|| format!("and {} more", tied.len() - 1 - MAX_NAMED)),
        )
        .collect();
    let _ = writeln!(
        text,
        "tied: {} has the best mean, but with {seeds} seeds {metric} cannot tell it from point{} {}: the paired 95% interval of each one's difference from point {best}, seed by seed, contains 0 ({})",
        if chosen == best {
            "it".to_string()
        } else {
            format!(
                "point {best}: {}{}",
                spec.describe_point(best),
                objective_text(prepared, aggregate, best)
            )
        },
        if tied.len() > 2 { "s" } else { "" },
        listed_points(&points, Some(best)),
        differences.join(", ")
    );
    let mut why = Vec::new();
    let mut left = points.clone();
    for step in &steps {
        match step {
            tie::Step::Metric {
                metric: index,
                best: first,
                kept,
            } => {
                let name = &secondary[*index].name;
                let dropped: Vec<usize> = left
                    .iter()
                    .copied()
                    .filter(|point| !kept.contains(point))
                    .collect();
                why.push(if dropped.is_empty() {
                    format!("{name} cannot tell them apart either")
                } else if kept.len() == 1 {
                    format!(
                        "{name} is better at point {first} than at every other, by differences the seeds confirm"
                    )
                } else {
                    format!(
                        "{name} is best at point {first}, better than at point{} {} by differences the seeds confirm, but not than at point{} {}",
                        if dropped.len() > 1 { "s" } else { "" },
                        listed_points(&dropped, None),
                        if kept.len() > 2 { "s" } else { "" },
                        listed_points(kept, Some(*first))
                    )
                });
                left.clone_from(kept);
            }
            tie::Step::Changes { counts } => {
                let keys: Vec<String> = spec
                    .changed_keys(chosen)?
                    .iter()
                    .map(|&axis| spec.axes[axis].key.clone())
                    .collect();
                let fewest = keys.len();
                let others: Vec<String> = counts
                    .iter()
                    .filter(|&&(point, _)| point != chosen)
                    .take(MAX_NAMED)
                    .map(|(point, count)| format!("point {point} changes {count}"))
                    .collect();
                let shared = counts.iter().filter(|&&(_, count)| count == fewest).count();
                why.push(format!(
                    "point {chosen} changes the fewest grid keys from the scenario as it is: {fewest}{} ({}){}",
                    if keys.is_empty() {
                        String::new()
                    } else {
                        format!(", {}", listed(&keys))
                    },
                    others.join(", "),
                    if shared > 1 {
                        format!(", and has the best mean {metric} of the {shared} that change as few")
                    } else {
                        String::new()
                    }
                ));
            }
        }
    }
    let _ = writeln!(
        text,
        "chosen among the {} tied: point {chosen}, not by a difference the seeds cannot confirm: {}",
        points.len(),
        why.join("; ")
    );
    // How many seeds would separate each tied point from the best, if the differences stayed.
    let needed: Vec<(usize, Difference, Option<usize>)> = tied[1..]
        .iter()
        .filter_map(|&(point, difference)| {
            let difference = difference.filter(|difference| difference.mean != 0.0)?;
            Some((point, difference, difference.seeds_to_separate()))
        })
        .collect();
    let inseparable: Vec<usize> = tied[1..]
        .iter()
        .map(|&(point, _)| point)
        .filter(|point| !needed.iter().any(|(other, _, _)| other == point))
        .collect();
    let most = needed
        .iter()
        .max_by_key(|(_, _, seeds)| seeds.unwrap_or(usize::MAX));
    let mut warning = format!(
        "{metric} cannot tell the {} tied points apart with {seeds} seeds",
        points.len()
    );
    if let Some((point, difference, needed)) = most {
        let _ = write!(
            warning,
            "; {} seeds would tell each from point {best} if the differences stayed as measured (point {point} needs the most: {} with a standard deviation of {} between seeds); add seeds",
            match needed {
                Some(needed) => format!("about {needed}"),
                None => format!("more than {}", tie::MAX_SEEDS),
            },
            signed(difference.mean),
            short(difference.sd)
        );
    }
    if !inseparable.is_empty() {
        let _ = write!(
            warning,
            "; point{} {} differ{} from point {best} by 0 on average: no number of seeds separates them on {metric}",
            if inseparable.len() > 1 { "s" } else { "" },
            listed_points(&inseparable, None),
            if inseparable.len() > 1 { "" } else { "s" }
        );
    }
    warnings.push(warning);
    Ok(chosen)
}

/// The metrics of the front: the optimised one first (better the way it is optimised, which
/// a metric without a direction takes from the flag), then each requirement's, once each, but
/// not one without a better direction (nothing dominates in it).
fn front_metrics(prepared: &PreparedSweep) -> Vec<NamedMetric> {
    let mut metrics: Vec<NamedMetric> = Vec::new();
    let named = prepared.objective.iter().chain(
        prepared
            .requirements
            .iter()
            .map(|requirement| prepared.column(&requirement.metric)),
    );
    for metric in named {
        if metric.better != Better::Neither && !metrics.iter().any(|m| m.name == metric.name) {
            metrics.push(metric.clone());
        }
    }
    metrics
}

/// The front as a table: each point's grid values and means; points with identical results
/// share a row, under the first.
fn front_section(
    prepared: &PreparedSweep,
    aggregate: &Aggregate,
    (metrics, front): (&[NamedMetric], &[usize]),
    (meeting, chosen, identical): (usize, Option<usize>, &Identical),
    text: &mut String,
) {
    let spec = &prepared.spec;
    if metrics.is_empty() {
        let _ = writeln!(
            text,
            "Pareto front: none, as no --require or --minimize names a metric with a better direction"
        );
        return;
    }
    let among = if meeting == 0 {
        format!(
            "all {} points (none meets the requirements)",
            spec.point_count()
        )
    } else {
        format!("the {meeting} points that meet the requirements")
    };
    let over: Vec<String> = metrics
        .iter()
        .map(|metric| format!("{} ({})", metric.name, direction(metric.better)))
        .collect();
    // Points with identical results share the row of the first of them on the front.
    // A group is known by its first point.
    let mut groups_shown = std::collections::BTreeSet::new();
    let mut shown: Vec<usize> = Vec::new();
    for &point in front {
        if identical
            .group(point)
            .is_none_or(|group| groups_shown.insert(group[0]))
        {
            shown.push(point);
        }
    }
    let distinct = shown.len();
    let _ = writeln!(
        text,
        "Pareto front of {among}, over {}: {} point{} that no other point beats in every metric{}, best {} first{}:",
        listed(&over),
        front.len(),
        if front.len() == 1 { "" } else { "s" },
        if distinct < front.len() {
            format!(
                " ({distinct} distinct result{})",
                if distinct == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        },
        metrics[0].name,
        match chosen {
            Some(point) if front.contains(&point) && meeting > 0 => " (* the recommended point)",
            Some(point) if front.contains(&point) => " (* the closest point)",
            Some(point)
                if meeting > 0 && !shown.iter().any(|&other| identical.same(point, other)) =>
            {
                " (the recommended point is not on it: a point on it beats its means by differences the seeds cannot confirm)"
            }
            _ => "",
        }
    );
    shown.truncate(MAX_LISTED);
    let mut columns = vec![Column::text(
        "point",
        shown
            .iter()
            .map(|&point| {
                let marked = chosen.is_some_and(|chosen| identical.same(chosen, point));
                format!("{point}{}", if marked { "*" } else { "" })
            })
            .collect(),
    )];
    for (index, axis) in spec.axes.iter().enumerate() {
        columns.push(Column::text(
            &axis.key,
            shown
                .iter()
                .map(|&point| spec.point_values(point)[index].to_string())
                .collect(),
        ));
    }
    for metric in metrics {
        let means: Vec<f64> = shown
            .iter()
            .map(|&point| aggregate.mean(point, &metric.name))
            .collect();
        columns.push(Column::numbers(&metric.name, &means));
    }
    columns.push(Column::text(
        "identical",
        shown
            .iter()
            .map(|&point| listed_points(identical.group(point).unwrap_or_default(), Some(point)))
            .collect(),
    ));
    text.push_str(&table(&columns));
    if distinct > shown.len() {
        let _ = writeln!(text, "... and {} more rows", distinct - shown.len());
    }
}

/// Each grid key of two values or more, with its [`effect`] on each metric of the front,
/// ordered by the effect on the first (the objective), largest first.
fn sensitivity_section(
    prepared: &PreparedSweep,
    aggregate: &Aggregate,
    metrics: &[NamedMetric],
    text: &mut String,
) {
    let spec = &prepared.spec;
    let axes: Vec<usize> = (0..spec.axes.len())
        .filter(|&axis| spec.axes[axis].values.len() > 1)
        .collect();
    if metrics.is_empty() || axes.is_empty() {
        let _ = writeln!(
            text,
            "sensitivity: none, as {}",
            if axes.is_empty() {
                "no grid key has two values"
            } else {
                "no --require or --minimize names a metric with a better direction"
            }
        );
        return;
    }
    let effects: Vec<Vec<Effect>> = axes
        .iter()
        .map(|&axis| {
            metrics
                .iter()
                .map(|metric| effect(spec, axis, |point| aggregate.mean(point, &metric.name)))
                .collect()
        })
        .collect();
    let mut order: Vec<usize> = (0..axes.len()).collect();
    // Largest effect first; a key with none (NaN) last; ties in grid order.
    order.sort_by(|&a, &b| {
        let key = |index: usize| {
            let range = effects[index][0].mean_range;
            if range.is_nan() {
                f64::NEG_INFINITY
            } else {
                range
            }
        };
        key(b).total_cmp(&key(a))
    });
    let _ = writeln!(
        text,
        "sensitivity: how far each mean moves when one key changes and the others do not (the range over the key's values, averaged over every combination of the other keys' values), largest effect on {} first:",
        metrics[0].name
    );
    let mut columns = vec![
        Column::text(
            "key",
            order
                .iter()
                .map(|&index| spec.axes[axes[index]].key.clone())
                .collect(),
        ),
        Column {
            right: true,
            ..Column::text(
                "values",
                order
                    .iter()
                    .map(|&index| spec.axes[axes[index]].values.len().to_string())
                    .collect(),
            )
        },
    ];
    let mut partial = false;
    for (metric_index, metric) in metrics.iter().enumerate() {
        let of_metric: Vec<Effect> = order
            .iter()
            .map(|&index| effects[index][metric_index])
            .collect();
        let ranges: Vec<f64> = of_metric.iter().map(|effect| effect.mean_range).collect();
        let mut column = Column::numbers(&metric.name, &ranges);
        for (cell, effect) in column.cells.iter_mut().zip(&of_metric) {
            if effect.combinations < effect.of && effect.combinations > 0 {
                let _ = write!(cell, " ({} of {})", effect.combinations, effect.of);
                partial = true;
            }
        }
        columns.push(column);
    }
    text.push_str(&table(&columns));
    if partial {
        let _ = writeln!(
            text,
            "(k of n): over the k combinations of n where every mean is defined and finite (a recovery that never came has no range)"
        );
    }
}

/// The groups of points with identical results, each with its points' values of every key.
fn identical_section(prepared: &PreparedSweep, identical: &[Vec<usize>], text: &mut String) {
    let spec = &prepared.spec;
    if identical.is_empty() {
        let _ = writeln!(
            text,
            "identical results: none (no two points agree on every metric of every seed)"
        );
        return;
    }
    let _ = writeln!(
        text,
        "identical results (every metric of every seed): the keys that differ within a group change nothing there (for example more attempts than the deadline leaves room for, or a backoff when nothing is retried):"
    );
    for group in identical.iter().take(MAX_LISTED) {
        // Which values of each key the group has, in the key's order.
        let mut seen: Vec<Vec<bool>> = spec
            .axes
            .iter()
            .map(|axis| vec![false; axis.values.len()])
            .collect();
        for &point in group {
            for (axis, index) in spec.value_indices(point).into_iter().enumerate() {
                seen[axis][index] = true;
            }
        }
        let values: Vec<String> = spec
            .axes
            .iter()
            .zip(&seen)
            .map(|(axis, seen)| {
                let values: Vec<&str> = axis
                    .values
                    .iter()
                    .zip(seen)
                    .filter(|(_, seen)| **seen)
                    .map(|(value, _)| value.as_str())
                    .collect();
                format!("{}={}", axis.key, values.join(","))
            })
            .collect();
        let _ = writeln!(
            text,
            "  points {}: {}",
            listed_points(group, None),
            values.join(" ")
        );
    }
    if identical.len() > MAX_LISTED {
        let _ = writeln!(
            text,
            "  ... and {} more groups",
            identical.len() - MAX_LISTED
        );
    }
}

/// Which metrics have a heatmap: those of the front, then [`ALWAYS_DRAWN`], each once, except
/// those with the same mean at every point, which are named instead. None if the grid has no
/// two numeric keys to draw.
fn heatmap_section(
    prepared: &PreparedSweep,
    aggregate: &Aggregate,
    front_metrics: &[NamedMetric],
    text: &mut String,
) -> Vec<NamedMetric> {
    if Layout::of(&prepared.spec).is_none() {
        let _ = writeln!(
            text,
            "heatmaps: none, as they need two numeric grid keys (numbers or durations) that vary, and at most one other key that varies"
        );
        return Vec::new();
    }
    let mut wanted: Vec<NamedMetric> = front_metrics.to_vec();
    for name in prepared
        .requirements
        .iter()
        .map(|requirement| requirement.metric.as_str())
        .chain(ALWAYS_DRAWN)
    {
        if !wanted.iter().any(|metric| metric.name == name) {
            wanted.push(prepared.column(name).clone());
        }
    }
    let points = prepared.spec.point_count();
    let (drawn, constant): (Vec<NamedMetric>, Vec<NamedMetric>) =
        wanted.into_iter().partition(|metric| {
            let first = aggregate.mean(0, &metric.name);
            (1..points).any(|point| {
                aggregate
                    .mean(point, &metric.name)
                    .total_cmp(&first)
                    .is_ne()
            })
        });
    // A metric whose name is not its file's (`success_rate:pay`) names the file too.
    let names: Vec<String> = drawn
        .iter()
        .map(|metric| {
            let stem = heatmap::file_stem(metric);
            if stem == format!("heatmap-{}", metric.name) {
                metric.name.clone()
            } else {
                format!("{} (in {stem})", metric.name)
            }
        })
        .collect();
    let _ = writeln!(
        text,
        "heatmaps (yellow is the better end of each): {}",
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    );
    for metric in constant {
        let _ = writeln!(
            text,
            "  {} is {} at every point: no heatmap",
            metric.name,
            short(aggregate.mean(0, &metric.name))
        );
    }
    drawn
}

/// The command that runs the recommended point itself, on the scenario file as it is, and
/// which of its runs and seeds is the point.
fn reproduce_section(prepared: &PreparedSweep, point: usize, text: &mut String) {
    let others: Vec<String> = prepared.seeds[1..]
        .iter()
        .map(|seed| format!("--seed {seed}"))
        .collect();
    // With [uncertain] inputs drawn, the command sets the first seed's draws, which another
    // seed replaces with its own.
    let (drawn, instead) = if prepared.uncertain.inputs.is_empty() {
        ("", "")
    } else {
        (
            " and its draws of the [uncertain] inputs",
            ", with that seed's draws (its rows of results.csv) in place of these",
        )
    };
    let _ = writeln!(
        text,
        "reproduce: point {point} is policy {:?} of this run, on the sweep's first seed ({}){drawn}{}:\n  {}",
        prepared.spec.policy,
        prepared.seeds[0],
        match others.as_slice() {
            [] => String::new(),
            [other] => format!("; {other} runs its other seed{instead}"),
            _ => format!(
                "; {} runs another of its seeds{instead}",
                listed(&others).replace(" and ", " or ")
            ),
        },
        prepared
            .spec
            .run_command(point, &prepared.uncertain.of_run(0))
    );
}

/// The recommended point's `[[policy]]` table. Keys of the topology, of the grid and of
/// `--set`, go into its `overrides`, so that the pasted policy runs against the topology the
/// point ran against (a `--set` the policy overrides itself did not change its run, and stays
/// out); keys of neither the policy nor the topology (`clients.count`) are named in a comment,
/// as a policy cannot carry them.
fn snippet(prepared: &PreparedSweep, point: usize, text: &mut String) -> Result<(), SweepError> {
    let spec = &prepared.spec;
    let scenario = spec.scenario_for(point)?;
    let mut policy = scenario.policy[0].clone();
    let mut elsewhere = Vec::new();
    // `--set` first, so that a grid value of the same key replaces it, as in the sweep.
    let fixed = spec
        .fixed
        .iter()
        .map(|(key, value)| (key.as_str(), value.as_str(), false));
    let grid = spec
        .axes
        .iter()
        .zip(spec.point_values(point))
        .map(|(axis, value)| (axis.key.as_str(), value, true));
    for (key, value, from_grid) in fixed.chain(grid) {
        match topology_keys(&scenario, key) {
            Some(keys) => {
                for key in keys {
                    let entry = policy.overrides.entries.entry(key);
                    if from_grid {
                        entry.insert_entry(toml_value(value));
                    } else {
                        entry.or_insert_with(|| toml_value(value));
                    }
                }
            }
            None if !key.starts_with("policy.") => {
                elsewhere.retain(|set: &String| !set.starts_with(&format!("{key} = ")));
                elsewhere.push(format!("{key} = {value}"));
            }
            None => {}
        }
    }
    text.push_str("# Paste into a scenario:\n");
    if !elsewhere.is_empty() {
        let _ = writeln!(
            text,
            "# (and set there too, as a policy cannot carry them: {})",
            elsewhere.join(", ")
        );
    }
    let snippet =
        toml::to_string(&PolicySnippet { policy: [&policy] }).expect("a policy serializes");
    text.push_str(&snippet);
    Ok(())
}

/// A grid value as TOML: itself if it is a TOML value, else a string (as `--set` reads it).
fn toml_value(text: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("value = {text}"))
        .ok()
        .and_then(|mut table| table.remove("value"))
        .unwrap_or_else(|| toml::Value::String(text.to_string()))
}

/// When no point meets every requirement: the point with the fewest misses, ties broken by the
/// smallest total relative shortfall, and each requirement it misses.
fn closest(prepared: &PreparedSweep, aggregate: &Aggregate, text: &mut String) -> Option<usize> {
    let misses = |point: usize| -> Vec<(String, f64, f64)> {
        prepared
            .requirements
            .iter()
            .filter_map(|requirement| {
                let value = aggregate.mean(point, &requirement.metric);
                let shortfall = requirement.shortfall(value);
                (shortfall > 0.0).then(|| (requirement.to_string(), value, shortfall))
            })
            .collect()
    };
    let score = |point: usize| {
        let missed = misses(point);
        let total: f64 = missed.iter().map(|(_, _, shortfall)| shortfall).sum();
        (missed.len(), total)
    };
    let point = (0..prepared.spec.point_count()).min_by(|&a, &b| {
        let (a, b) = (score(a), score(b));
        a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))
    })?;
    let _ = writeln!(
        text,
        "no point meets every requirement; closest: point {point}: {}",
        prepared.spec.describe_point(point)
    );
    for (requirement, value, shortfall) in misses(point) {
        let _ = writeln!(
            text,
            "  misses {requirement}: measured {} ({})",
            aggregate_text(value),
            if shortfall.is_finite() {
                format!("{:.2}% short", shortfall * 100.0)
            } else {
                "undefined".to_string()
            }
        );
    }
    Some(point)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::SweepSpec;
    use crate::sweep::report::finalize;
    use crate::vocabulary::metric::{METRICS, format_metric};
    use std::path::Path;

    /// The bundled tuning scenario over `policy.base=50ms,100ms,200ms` x
    /// `policy.max_attempts=1,2` (point = 2 * base index + attempts index), two seeds.
    fn prepared(requirement: &str) -> PreparedSweep {
        prepared_to(requirement, Some("p99_ms"), None)
    }

    /// As [`prepared`], minimising or maximising the metrics given.
    fn prepared_to(
        requirement: &str,
        minimize: Option<&str>,
        maximize: Option<&str>,
    ) -> PreparedSweep {
        prepared_with(
            "policy.max_attempts=1,2",
            "",
            requirement,
            minimize,
            maximize,
        )
    }

    /// As [`prepared_to`], with `second` as the grid's second key (of two values) in place of
    /// the attempts, and `extra` appended to the scenario.
    fn prepared_with(
        second: &str,
        extra: &str,
        requirement: &str,
        minimize: Option<&str>,
        maximize: Option<&str>,
    ) -> PreparedSweep {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tuning.toml");
        SweepSpec {
            scenario_path: path.display().to_string(),
            scenario_text: std::fs::read_to_string(&path).unwrap() + extra,
            fixed: vec![],
            axes: vec![
                "policy.base=50ms,100ms,200ms".parse().unwrap(),
                second.parse().unwrap(),
            ],
            seeds: 2,
            policy: "tuned".into(),
            requirements: vec![requirement.into()],
            minimize: minimize.map(String::from),
            maximize: maximize.map(String::from),
            configs: Default::default(),
        }
        .prepare()
        .unwrap()
    }

    /// Synthetic rows with means known in closed form. Per seed:
    ///
    /// | point | base | attempts | success_rate | p99_ms | recovery_s |
    /// |---|---|---|---|---|---|
    /// | 0 | 50ms | 1 | 0.85, 0.85 | 100, 100 | never |
    /// | 1 | 50ms | 2 | 0.92, 0.94 | 300, 310 | 1 |
    /// | 2 | 100ms | 1 | 0.95, 0.95 | 200, 220 | 2 |
    /// | 3 | 100ms | 2 | 0.99, 0.99 | 400, 400 | 3 |
    /// | 4 | 200ms | 1 | 0.96, 0.98 | 190, 200 | 4 |
    /// | 5 | 200ms | 2 | as point 3, every metric (the deadline binds) | | |
    ///
    /// `peak_incident_rps` is 1000 + 100 x point (point 5 as 3), `operations` 1000,
    /// `succeeded` 1000 x `success_rate`, and every other metric 0.
    fn rows() -> Vec<ResultRow> {
        let value = |metric: &str, point: usize, seed: usize| -> f64 {
            let twin = if point == 5 { 3 } else { point };
            let success = [
                [0.85, 0.85],
                [0.92, 0.94],
                [0.95, 0.95],
                [0.99, 0.99],
                [0.96, 0.98],
            ][twin][seed];
            match metric {
                "success_rate" => success,
                "succeeded" => (1000.0 * success).round(),
                "p99_ms" => [
                    [100.0, 100.0],
                    [300.0, 310.0],
                    [200.0, 220.0],
                    [400.0, 400.0],
                    [190.0, 200.0],
                ][twin][seed],
                "recovery_s" if twin == 0 => f64::INFINITY,
                "recovery_s" => twin as f64,
                "peak_incident_rps" => 1000.0 + 100.0 * twin as f64,
                "operations" => 1000.0,
                _ => 0.0,
            }
        };
        (0..6)
            .flat_map(|point| {
                (0..2).map(move |seed_index| ResultRow {
                    point,
                    seed_index,
                    metrics: METRICS
                        .iter()
                        .map(|metric| format_metric(metric, value(metric.name, point, seed_index)))
                        .collect(),
                })
            })
            .collect()
    }

    /// Point 4 has the lowest mean p99 (195) of the five that meet the requirement, point 2 the
    /// next (210). Seed by seed point 2 is 10 and 20 above point 4: a paired difference of 15,
    /// standard deviation sqrt(50) = 7.07107, half width t(0.975; 1) x 7.07107 / sqrt(2) =
    /// 12.706 x 5 = 63.53, so 15 ± 63.53 contains 0 and the two are tied; points 1 (110 ± 0)
    /// and 3 and 5 (205 ± 63.53) are not. On success, the other requirement's metric, point 2
    /// is 0.01 and 0.03 below point 4: -0.02 ± 12.706 x 0.01 = 0.12706, tied too. Point 2
    /// changes one grid key from the scenario (max_attempts 1 for 3; its 100ms base is the
    /// scenario's), point 4 two: point 2 is recommended. (Before the paired comparison point
    /// 4 was, for 15 ms of p99 the seeds cannot confirm, with a warning that named only
    /// point 2.) Seeds to separate them: the fewest n with t(0.975; n - 1) x 7.07107 / sqrt(n)
    /// < 15: 3 seeds give 4.303 x 4.08248 = 17.567, 4 give 3.182 x 3.53553 = 11.25, so 4.
    /// Point 2 has the smallest attempts tried (1): an edge warning; its base is inside the
    /// grid. Point 2 is not on the front (point 4 beats its means). On the front (p99 down,
    /// success up) point 4 beats points 1 and 2, and points 3 and 5 (the best success) share a
    /// row. Each key's effect is the mean of its ranges: attempts moves p99 by (205 + 190 +
    /// 205) / 3 = 200 and base by (110 + 95) / 2 = 102.5; success by (0.08 + 0.04 + 0.02) / 3
    /// and (0.12 + 0.06) / 2. The peak after the incident is 0 everywhere, so it has no
    /// heatmap. The intervals at point 2: p99 210 ± 12.706 x 10 = 127.06; success 0.95 on
    /// both seeds, Wilson's on 1900 of 2000 (center (0.95 + z²/4000) / (1 + z²/2000) =
    /// 0.949137, half width z sqrt(0.95 x 0.05 / 2000 + z²/16e6) / (1 + z²/2000) = 0.009582,
    /// z = 1.959964); no duplicate write or unknown result on either seed gives -ln(0.025) /
    /// 2 = 1.84444 a run, 3.68888 / 2000 operations; the recovery is 2 on both seeds, a range
    /// of one value, so it is written as that value on every seed, not as the interval `2 to
    /// 2`. The upstream's 30 workers give 24, 30, 36 to sweep.
    #[test]
    fn the_recommendation_explains_itself_with_values_known_in_closed_form() {
        let (_, text) = finalize(&prepared("success_rate>=0.9"), &rows(), &[]).unwrap();
        let (explained, reproduce) = text.split_once("reproduce: ").unwrap();
        let (reproduce, snippet) = reproduce.split_once("# Paste into a scenario:\n").unwrap();
        assert_eq!(
            explained,
            "\
requirements: success_rate >= 0.9
minimise: p99_ms
5 of 6 points meet the requirements (means over 2 seeds)
points without a value (they meet a requirement only if it says `or undefined` or `or never`, and an undefined one is not ranked):
  p99_ms: 0 of 6 undefined (on some seed)
recommended: point 2: policy.base=100ms policy.max_attempts=1 (p99_ms 210.000000 ± 127.060000)
tied: point 4: policy.base=200ms policy.max_attempts=1 (p99_ms 195.000000 ± 63.530000) has the best mean, but with 2 seeds p99_ms cannot tell it from point 2: the paired 95% interval of each one's difference from point 4, seed by seed, contains 0 (point 2 +15 ± 63.53)
chosen among the 2 tied: point 2, not by a difference the seeds cannot confirm: success_rate cannot tell them apart either; point 2 changes the fewest grid keys from the scenario as it is: 1, policy.max_attempts (point 4 changes 2)
warning: p99_ms cannot tell the 2 tied points apart with 2 seeds; about 4 seeds would tell each from point 4 if the differences stayed as measured (point 2 needs the most: +15 with a standard deviation of 7.07107 between seeds); add seeds
warning: policy.max_attempts = 1 is the smallest value tried: the best may lie below it; extend the grid

95% intervals at point 2 over its 2 seeds:
  p99_ms 210: 82.94 to 337.06 (Student's t over the seeds' values)
  success_rate 0.95: 0.939556 to 0.958719 (Wilson score on 1900 of 2000 operations pooled over the seeds, or the seeds' t-interval where wider)
  duplicate_writes 0: 0 to 1.84444 a run, at most 0.001844 per operation (exact Poisson on the 0 events of the 2 runs pooled, or the seeds' t-interval where wider)
  unknown_results 0: 0 to 1.84444 a run, at most 0.001844 per operation (exact Poisson on the 0 events of the 2 runs pooled, or the seeds' t-interval where wider)
  recovery_s 2: 2 on every seed (no spread between the seeds to make an interval of: they agree, which is not to say that more seeds would)
pooled counts treat the operations as independent; in a storm they are not (one outage fails many at once), so a pooled interval is a floor on the uncertainty, and a count of 0 on every seed says none happened in these runs, not that none can
seeds vary the randomness only (arrivals, service and network times drawn from their distributions, jitter, errors); they do not vary the model's assumptions (workers, capacities and their curves, service-time and latency distributions, the clients and their deadlines), which no interval covers: to see how far one moves the answer, sweep it: add --grid upstream.service_time.scale_by=0.8,1,1.25 to this command

Pareto front of the 5 points that meet the requirements, over p99_ms (lower is better) and success_rate (higher is better): 3 points that no other point beats in every metric (2 distinct results), best p99_ms first (the recommended point is not on it: a point on it beats its means by differences the seeds cannot confirm):
point  policy.base  policy.max_attempts   p99_ms  success_rate  identical
4      200ms        1                    195.000      0.970000
3      100ms        2                    400.000      0.990000  5

sensitivity: how far each mean moves when one key changes and the others do not (the range over the key's values, averaged over every combination of the other keys' values), largest effect on p99_ms first:
key                  values   p99_ms  success_rate
policy.max_attempts       2  200.000      0.046667
policy.base               3  102.500      0.090000

identical results (every metric of every seed): the keys that differ within a group change nothing there (for example more attempts than the deadline leaves room for, or a backoff when nothing is retried):
  points 3, 5: policy.base=100ms,200ms policy.max_attempts=2

heatmaps (yellow is the better end of each): p99_ms, success_rate, peak_incident_rps, recovery_s
  peak_after_rps is 0 at every point: no heatmap

"
        );
        // The command runs the point on the scenario's own seed, the first of the sweep's.
        assert_eq!(
            reproduce,
            format!(
                "point 2 is policy \"tuned\" of this run, on the sweep's first seed (7); --seed 7191089600892374487 runs its other seed:\n  retrystorm run {} --set policy.base=100ms --set policy.max_attempts=1\n\n",
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("scenarios/tuning.toml")
                    .display()
            )
        );
        // The snippet carries the point's values, where the scenario has 100ms and 3.
        assert!(snippet.contains("base = \"100ms\"\n"), "{snippet}");
        assert!(snippet.contains("max_attempts = 1\n"), "{snippet}");
    }

    /// When no point meets the requirements the front is over every point, and the closest
    /// point (3, at 0.99 the smallest shortfall; point 5 is its twin) gets the edge warnings:
    /// attempts 2 is the largest tried, while base is not warned about although point 3's
    /// 100ms is inside the grid, nor would it be at an edge: its twin has another base, so the
    /// base changes nothing there. Its p99 (400) and recovery (3) are the same on both seeds:
    /// each is that value on every seed, never `400 to 400`. Without a recommendation there
    /// is no runner-up and no snippet.
    #[test]
    fn without_a_point_that_meets_the_requirements_the_front_is_over_all_points() {
        let (_, text) = finalize(&prepared("success_rate>=0.999"), &rows(), &[]).unwrap();
        let expected_start = "\
requirements: success_rate >= 0.999
minimise: p99_ms
0 of 6 points meet the requirements (means over 2 seeds)
points without a value (they meet a requirement only if it says `or undefined` or `or never`, and an undefined one is not ranked):
  p99_ms: 0 of 6 undefined (on some seed)
no point meets every requirement; closest: point 3: policy.base=100ms policy.max_attempts=2
  misses success_rate >= 0.999: measured 0.990000 (0.90% short)
warning: policy.max_attempts = 2 is the largest value tried: the best may lie above it; extend the grid

95% intervals at point 3 over its 2 seeds:
  p99_ms 400: 400 on every seed (no spread between the seeds to make an interval of: they agree, which is not to say that more seeds would)
  success_rate 0.99: 0.984604 to 0.993517 (Wilson score on 1980 of 2000 operations pooled over the seeds, or the seeds' t-interval where wider)
  duplicate_writes 0: 0 to 1.84444 a run, at most 0.001844 per operation (exact Poisson on the 0 events of the 2 runs pooled, or the seeds' t-interval where wider)
  unknown_results 0: 0 to 1.84444 a run, at most 0.001844 per operation (exact Poisson on the 0 events of the 2 runs pooled, or the seeds' t-interval where wider)
  recovery_s 3: 3 on every seed (no spread between the seeds to make an interval of: they agree, which is not to say that more seeds would)
pooled counts treat the operations as independent; in a storm they are not (one outage fails many at once), so a pooled interval is a floor on the uncertainty, and a count of 0 on every seed says none happened in these runs, not that none can
seeds vary the randomness only (arrivals, service and network times drawn from their distributions, jitter, errors); they do not vary the model's assumptions (workers, capacities and their curves, service-time and latency distributions, the clients and their deadlines), which no interval covers: to see how far one moves the answer, sweep it: add --grid upstream.service_time.scale_by=0.8,1,1.25 to this command

Pareto front of all 6 points (none meets the requirements), over p99_ms (lower is better) and success_rate (higher is better): 4 points that no other point beats in every metric (3 distinct results), best p99_ms first (* the closest point):
point  policy.base  policy.max_attempts   p99_ms  success_rate  identical
0      50ms         1                    100.000      0.850000
4      200ms        1                    195.000      0.970000
3*     100ms        2                    400.000      0.990000  5
";
        assert!(text.starts_with(expected_start), "{text}");
        assert!(!text.contains("runner-up"), "{text}");
        assert!(!text.contains("[[policy]]"), "{text}");
    }

    /// Minimising the recovery, of the points that meet `success_rate>=0.9` (points 1 to 5)
    /// point 1's is the least: 1 s on both seeds, a range of one value, so its mean is given
    /// as on every seed, not with the range `1 to 1`. Point 2's is 2 s on both seeds, so
    /// their difference is +1 on every seed, not `+1 ± 0`, and it excludes 0: point 2 is the
    /// runner-up, each with its value on every seed.
    #[test]
    fn a_value_on_every_seed_is_no_interval() {
        let prepared = prepared_to("success_rate>=0.9", Some("recovery_s"), None);
        let (_, text) = finalize(&prepared, &rows(), &[]).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[5..8],
            [
                "recommended: point 1: policy.base=50ms policy.max_attempts=2 (recovery_s 1.000000 on every seed)",
                "runner-up: point 2: policy.base=100ms policy.max_attempts=1 (recovery_s 2.000000 on every seed)",
                "confidence: point 1 has the lower recovery_s with 2 seeds: the paired 95% interval of point 2's difference from it, seed by seed, excludes 0 (+1 on every seed; their own intervals: 1 on every seed and 2 on every seed)",
            ],
            "{text}"
        );
        assert!(
            !text.contains(" 1 to 1") && !text.contains("± 0 "),
            "{text}"
        );
    }

    /// The edge warning advises extending the grid of a setting only: with the grid's second
    /// key a model assumption in place of the attempts, and the same rows, point 2 is
    /// recommended again (the first test's reasons) at that key's smallest value, and the
    /// warning says that its settings are the best where the assumption holds, and to compare
    /// them at the assumption's other value, never to extend the grid: for a `scale_by` of the
    /// upstream's service time (1 and 2), and for the upstream's workers (20 and 40) where the
    /// scenario's `[uncertain]` draws them, which the grid then sets instead. Without
    /// `[uncertain]` the workers are a setting like the attempts, and their edge is one to go
    /// beyond. The clients' count is the load the world offers, an assumption without
    /// `[uncertain]`: the recommendation's own advice sweeps it (or a `scale_by`), and must not
    /// then be told to extend it.
    #[test]
    fn an_assumption_on_the_grids_edge_is_no_grid_to_extend() {
        let warnings = |second: &str, extra: &str| -> Vec<String> {
            let prepared = prepared_with(second, extra, "success_rate>=0.9", Some("p99_ms"), None);
            let (_, text) = finalize(&prepared, &rows(), &[]).unwrap();
            assert!(text.contains("\nrecommended: point 2: "), "{text}");
            text.lines()
                .filter(|line| line.starts_with("warning: ") && !line.contains("tied points"))
                .map(String::from)
                .collect()
        };
        assert_eq!(
            warnings("upstream.service_time.scale_by=1,2", ""),
            [
                "warning: upstream.service_time.scale_by is an assumption (a scale_by, a factor on a measured distribution), not a setting to tune: the recommended point takes its smallest value tried, 1, so its settings are the best only where that holds; compare the settings at each of its values, or draw it under [uncertain], rather than extend the grid"
            ]
        );
        let uncertain = "\n[uncertain]\n\"upstream.workers\" = { uniform = [20, 40] }\n";
        assert_eq!(
            warnings("upstream.workers=20,40", uncertain),
            [
                "warning: upstream.workers is an assumption (an [uncertain] input, which the grid sets instead of drawing), not a setting to tune: the recommended point takes its smallest value tried, 20, so its settings are the best only where that holds; compare the settings at each of its values, or leave it out of the grid for the seeds to draw, rather than extend the grid"
            ]
        );
        assert_eq!(
            warnings("upstream.workers=20,40", ""),
            [
                "warning: upstream.workers = 20 is the smallest value tried: the best may lie below it; extend the grid"
            ]
        );
        assert_eq!(
            warnings("clients.count=20,40", ""),
            [
                "warning: clients.count is an assumption (the load the clients offer), not a setting to tune: the recommended point takes its smallest value tried, 20, so its settings are the best only where that holds; compare the settings at each of its values, or draw it under [uncertain], rather than extend the grid"
            ]
        );
    }

    /// `--maximize success_rate` recommends the point with the highest mean success: points 3
    /// and 5 (identical) at 0.99, the first of them, tied on two seeds with points 4 (0.97)
    /// and 1 (0.93), as the front's first metric, better higher. `--minimize success_rate` is refused with the flag
    /// to use, as `--maximize p99_ms` is: on main `--minimize success_rate` recommended the
    /// point of the lowest success, and `--maximize` did not exist.
    #[test]
    fn maximise_recommends_the_highest_mean_and_a_direction_against_the_metric_is_refused() {
        let maximised = prepared_to("success_rate>=0.9", None, Some("success_rate"));
        let (_, text) = finalize(&maximised, &rows(), &[]).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "maximise: success_rate");
        assert!(
            lines[3].starts_with(
                "recommended: point 3: policy.base=100ms policy.max_attempts=2 (success_rate 0.990000"
            ),
            "{text}"
        );
        // Points 4 (0.97) and 1 (0.93) are tied with it on two seeds; point 3 changes one grid
        // key, each of them two.
        assert!(
            lines[4].starts_with(
                "tied: it has the best mean, but with 2 seeds success_rate cannot tell it from points 4, 1: "
            ),
            "{text}"
        );
        assert!(
            text.contains("over success_rate (higher is better): "),
            "{text}"
        );
        let refuse = |minimize: Option<&str>, maximize: Option<&str>| {
            let spec = SweepSpec {
                minimize: minimize.map(String::from),
                maximize: maximize.map(String::from),
                ..maximised.spec.clone()
            };
            spec.prepare().unwrap_err().to_string()
        };
        assert_eq!(
            refuse(Some("success_rate"), None),
            "--minimize success_rate: higher is better for success_rate (Operations that succeeded, as a share of those started), so --minimize would recommend the worst point; use --maximize success_rate"
        );
        assert!(refuse(None, Some("p99_ms")).ends_with("use --minimize p99_ms"));
        assert!(
            refuse(Some("p99_ms"), Some("success_rate"))
                .starts_with("--minimize and --maximize are exclusive")
        );
        // A metric without a direction takes the flag's.
        assert!(refuse(Some("operations"), Some("operations")).contains("exclusive"));
        let count = prepared_to("success_rate>=0.9", None, Some("operations"));
        assert_eq!(count.objective.unwrap().better, Better::Higher);
    }

    /// Numbers in the text keep six significant digits and drop trailing zeros; in a table's
    /// column all take the decimals of the largest, so that their points line up.
    #[test]
    fn numbers_keep_six_significant_digits() {
        assert_eq!(short(4163.242167), "4163.24");
        assert_eq!(short(0.977165), "0.977165");
        assert_eq!(short(3.0), "3");
        assert_eq!(short(123456.7), "123457");
        assert_eq!(short(f64::INFINITY), "never");
        assert_eq!(short(f64::NAN), "n/a");
        let column = Column::numbers("x", &[1.5, 200.0, f64::INFINITY]);
        assert_eq!(column.cells, ["1.500", "200.000", "never"]);
    }
}
