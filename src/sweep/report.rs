//! A sweep's files, all computed from the rows of `results.csv`, and merging shards.
//!
//! | file | content |
//! |---|---|
//! | `results.csv` | one row per point and seed: grid values, the seed's draw of each `[uncertain]` input drawn, every summary metric, and in a topology every service's (`amplification@db`) |
//! | `aggregate.csv` | one row per point: mean and 95% interval of each metric, by [`super::interval`] |
//! | `recommendation.txt` | the best point and why: see [`super::recommendation`] |
//! | `sweep.json` | the sweep's definition, the scenario's text and every config it imports included, so shards can be merged without reading anything else |
//! | `pareto.png/svg` | the Pareto front on two of its metrics: see [`crate::sweep::pareto`] |
//! | `heatmap-<metric>.png/svg` | see [`crate::sweep::heatmap`]; `<metric>` as [`heatmap::file_stem`] writes it in a file name (`heatmap-success_rate.op-pay.png` for `success_rate:pay`) |
//! | `report.html` | all of it on one page: see [`crate::output::report::sweep_report_html`] |
//!
//! A shard writes `results.csv` with its own rows, `sweep.json` and `shard.json`; [`merge`]
//! checks that the shards belong together and cover the sweep once, and hands the combined rows
//! to [`finalize`], as a single run does.

use std::path::Path;

use serde::Serialize;

use super::aggregate::{Aggregate, aggregate_text, meets};
use super::check::{check_metrics, manifest_differences};
use super::recommendation::{Section, Verdict, recommendation, short};
use super::{MAX_MANIFEST_BYTES, PreparedSweep, ResultRow, Shard, SweepError, SweepSpec};
use crate::base::escape::quoted;
use crate::base::text_file::{TextFileError, read_bytes};
use crate::output::charts::{ChartError, Format};
use crate::output::csv_bytes;
use crate::output::report::{PointTable, SweepPage, SweepSection, sweep_report_html};
use crate::scenario::uncertain::UncertainDraws;
use crate::sweep::heatmap::{self, HeatmapData};
use crate::sweep::pareto::{self, ParetoData};
use crate::vocabulary::metric::NamedMetric;

/// A file to write: its name in the sweep's folder and its bytes.
pub type OutputFile = (String, Vec<u8>);

/// The header of `results.csv`: point, seed, the grid keys, the `[uncertain]` keys drawn
/// (none without) and the metrics (`columns`).
fn results_header(
    spec: &SweepSpec,
    uncertain: &UncertainDraws,
    columns: &[NamedMetric],
) -> Vec<String> {
    let mut header = vec!["point".to_string(), "seed".to_string()];
    header.extend(spec.axes.iter().map(|axis| axis.key.clone()));
    header.extend(uncertain.inputs.iter().map(|input| input.key.clone()));
    header.extend(columns.iter().map(|metric| metric.name.clone()));
    header
}

/// `results.csv` for `rows`, which are ordered by point and seed: each says what it ran (its
/// point's grid values, its seed's draws) and what that gave.
pub fn results_csv(prepared: &PreparedSweep, rows: &[ResultRow]) -> Vec<u8> {
    let (spec, uncertain) = (&prepared.spec, &prepared.uncertain);
    let lines = rows.iter().map(|row| {
        let mut line = vec![
            row.point.to_string(),
            prepared.seeds[row.seed_index].to_string(),
        ];
        line.extend(spec.point_values(row.point).into_iter().map(str::to_string));
        line.extend(uncertain.draws[row.seed_index].iter().cloned());
        line.extend(row.metrics.iter().cloned());
        line
    });
    csv_bytes(&results_header(spec, uncertain, &prepared.columns), lines)
}

/// The longest a metric's value is written in `results.csv`, in bytes: a count has at most 20
/// digits, and a time, rate or share, with its six decimals, stays below 10^32 (a rate of every
/// count a `u64` holds, per microsecond, is below 2 x 10^25).
const MAX_METRIC_TEXT: u64 = 40;

/// The most bytes a shard's `shard.json` has: `{"index": K, "count": N}` is a few dozen.
const MAX_SHARD_JSON_BYTES: u64 = 1024;

/// The most bytes `results.csv` with `rows` rows of the first shard's sweep can have, as
/// [`results_csv`] writes it: the header, and in each row the point and the seed (20 digits
/// each), the point's grid values and the seed's draws (each at most its axis's or its
/// input's longest, every one quoted, its quotes doubled) and every metric at
/// [`MAX_METRIC_TEXT`], with the commas and a line end. A legitimate file is far smaller; this
/// bounds what `merge` reads of one.
fn results_limit(first: &FirstShard, rows: usize) -> u64 {
    let quoted = |text: &str| 2 * text.len() as u64 + 3;
    let header: u64 = first.header().iter().map(|name| quoted(name)).sum();
    let longest = |values: &mut dyn Iterator<Item = &String>| {
        values.map(|value| quoted(value)).max().unwrap_or(0)
    };
    let grid: u64 = first
        .spec
        .axes
        .iter()
        .map(|axis| longest(&mut axis.values.iter()))
        .sum();
    let drawn: u64 = (0..first.uncertain.inputs.len())
        .map(|input| longest(&mut first.uncertain.draws.iter().map(|draws| &draws[input])))
        .sum();
    let row = 2 * 21 + grid + drawn + first.columns.len() as u64 * (MAX_METRIC_TEXT + 1) + 2;
    (rows as u64).saturating_mul(row).saturating_add(header + 2)
}

/// The bytes of the file `name` in `folder`, at most `limit` of them (`what` says why that
/// many, for the error), read only if it is a regular file.
fn read_shard_file(folder: &Path, name: &str, limit: u64, what: &str) -> Result<Vec<u8>, String> {
    let path = folder.join(name);
    read_bytes(&path, limit).map_err(|error| match error {
        TextFileError::TooLarge(_) => format!(
            "{}: {error}, {what}; the file was edited or is damaged",
            path.display()
        ),
        error => format!("{}: cannot read it: {error}", path.display()),
    })
}

/// Reads `results.csv` of `folder`, shard `shard` of the first shard's sweep, back into rows,
/// checking them against the sweep: a point and a seed it has, the point's grid values, the
/// seed's draws of the `[uncertain]` inputs, and values of its metrics a run can produce
/// ([`check_metrics`]). The file is read only up to the size its rows can have
/// ([`results_limit`]), `rows` of them.
fn read_results(
    folder: &Path,
    first: &FirstShard,
    (shard, rows): (Shard, usize),
) -> Result<Vec<ResultRow>, String> {
    let FirstShard {
        spec,
        seeds,
        columns,
        uncertain,
        ..
    } = first;
    let path = folder.join("results.csv");
    let where_ = path.display();
    let limit = results_limit(first, rows);
    let bytes = read_shard_file(
        folder,
        "results.csv",
        limit,
        &format!(
            "the most that shard {shard}'s {rows} rows of {} values can take (a metric is written in at most {MAX_METRIC_TEXT} bytes)",
            first.header().len()
        ),
    )?;
    let mut reader = csv::Reader::from_reader(&bytes[..]);
    let header: Vec<String> = reader
        .headers()
        .map_err(|error| format!("{where_}: {error}"))?
        .iter()
        .map(str::to_string)
        .collect();
    if header != first.header() {
        return Err(format!("{where_}: the columns are not those of this sweep"));
    }
    let fixed = 2 + spec.axes.len() + uncertain.inputs.len();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|error| match error.kind() {
            csv::ErrorKind::UnequalLengths {
                pos: Some(pos),
                expected_len,
                len,
            } => format!(
                "{where_}:{}: {len} fields; the header has {expected_len}",
                pos.line()
            ),
            _ => format!("{where_}: {error}"),
        })?;
        let line = record.position().map_or(0, csv::Position::line);
        let bad = |what: &str| format!("{where_}:{line}: {what}");
        let point: usize = record[0].parse().map_err(|_| bad("bad point"))?;
        let seed: u64 = record[1].parse().map_err(|_| bad("bad seed"))?;
        let seed_index = seeds
            .iter()
            .position(|known| *known == seed)
            .ok_or_else(|| bad("a seed this sweep does not have"))?;
        if point >= spec.point_count() {
            return Err(bad("a point this sweep does not have"));
        }
        let grid = record.iter().skip(2).zip(spec.point_values(point));
        for (axis, (value, expected)) in spec.axes.iter().zip(grid) {
            if value != expected {
                return Err(bad(&format!(
                    "{} is {}, but point {point} of this sweep has {}",
                    axis.key,
                    quoted(value),
                    quoted(expected)
                )));
            }
        }
        let drawn = record
            .iter()
            .skip(2 + spec.axes.len())
            .zip(&uncertain.draws[seed_index]);
        for (input, (value, expected)) in uncertain.inputs.iter().zip(drawn) {
            if value != expected {
                return Err(bad(&format!(
                    "{} is {}, but seed {seed} of this sweep draws {}",
                    input.key,
                    quoted(value),
                    quoted(expected)
                )));
            }
        }
        let metrics: Vec<String> = record.iter().skip(fixed).map(str::to_string).collect();
        check_metrics(&metrics, columns).map_err(|error| bad(&error))?;
        rows.push(ResultRow {
            point,
            seed_index,
            metrics,
        });
    }
    Ok(rows)
}

fn aggregate_csv(prepared: &PreparedSweep, aggregate: &Aggregate) -> Vec<u8> {
    let spec = &prepared.spec;
    let mut header = vec!["point".to_string()];
    header.extend(spec.axes.iter().map(|axis| axis.key.clone()));
    header.push("seeds".into());
    for name in prepared.columns.iter().map(|metric| &metric.name) {
        header.extend([
            format!("{name}_mean"),
            format!("{name}_ci_low"),
            format!("{name}_ci_high"),
        ]);
    }
    header.push("meets_requirements".into());
    let rows = (0..spec.point_count()).map(|point| {
        let mut row = vec![point.to_string()];
        row.extend(spec.point_values(point).into_iter().map(str::to_string));
        row.push(prepared.seeds.len().to_string());
        for interval in aggregate.of_point(point) {
            row.extend([
                aggregate_text(interval.mean),
                aggregate_text(interval.low),
                aggregate_text(interval.high),
            ]);
        }
        row.push(meets(prepared, aggregate, point).to_string());
        row
    });
    csv_bytes(&header, rows)
}

/// `sweep.json`: the sweep's definition (configs included), its seeds and its points.
pub fn manifest_bytes(prepared: &PreparedSweep) -> Vec<u8> {
    #[derive(Serialize)]
    struct Manifest<'a> {
        #[serde(flatten)]
        spec: &'a SweepSpec,
        seed_values: &'a [u64],
        points: usize,
    }
    let mut bytes = serde_json::to_vec_pretty(&Manifest {
        spec: &prepared.spec,
        seed_values: &prepared.seeds,
        points: prepared.spec.point_count(),
    })
    .expect("the manifest serializes");
    bytes.push(b'\n');
    bytes
}

/// The files a shard writes: its rows, the manifest, and which shard it is.
pub fn shard_files(
    prepared: &PreparedSweep,
    shard: Shard,
    rows: &[ResultRow],
) -> Vec<(String, Vec<u8>)> {
    let mut shard_json = serde_json::to_vec_pretty(&shard).expect("a shard serializes");
    shard_json.push(b'\n');
    vec![
        ("results.csv".into(), results_csv(prepared, rows)),
        ("sweep.json".into(), manifest_bytes(prepared)),
        ("shard.json".into(), shard_json),
    ]
}

/// Every file of a whole sweep, from all its rows (ordered by point and seed), and the text of
/// the recommendation.
pub fn finalize(
    prepared: &PreparedSweep,
    rows: &[ResultRow],
    formats: &[Format],
) -> Result<(Vec<OutputFile>, String), SweepError> {
    let points = prepared.spec.point_count();
    let aggregate = Aggregate::new(&prepared.columns, points, rows);
    let (recommendation, verdict) = recommendation(prepared, &aggregate, rows)?;
    let mut files = vec![
        ("results.csv".to_string(), results_csv(prepared, rows)),
        (
            "aggregate.csv".to_string(),
            aggregate_csv(prepared, &aggregate),
        ),
        (
            "recommendation.txt".to_string(),
            recommendation.clone().into_bytes(),
        ),
        ("sweep.json".to_string(), manifest_bytes(prepared)),
    ];
    let chart_error = |error: ChartError| SweepError::Definition(error.to_string());
    let meets: Vec<bool> = (0..points)
        .map(|point| verdict.meeting.binary_search(&point).is_ok())
        .collect();
    // Each chart in every format asked for; its SVG also goes into the page.
    let mut pareto_svg = Vec::new();
    let mut heatmap_svgs = Vec::new();
    if !formats.is_empty() {
        if let Some(pareto) = pareto_data(prepared, &aggregate, &verdict, &meets) {
            let svg = pareto::render(&pareto, Format::Svg).map_err(chart_error)?;
            for &format in formats {
                let bytes = match format {
                    Format::Svg => svg.clone(),
                    Format::Png => pareto::render(&pareto, format).map_err(chart_error)?,
                };
                files.push((format!("pareto.{}", format.extension()), bytes));
            }
            pareto_svg.push(String::from_utf8_lossy(&svg).into_owned());
        }
        if let Some(layout) = heatmap::Layout::of(&prepared.spec) {
            for metric in &verdict.heatmaps {
                let data = HeatmapData {
                    scenario: prepared.name.clone(),
                    policy: prepared.spec.policy.clone(),
                    metric: metric.clone(),
                    layout: layout.clone(),
                    means: (0..points)
                        .map(|point| aggregate.mean(point, &metric.name))
                        .collect(),
                    meets: meets.clone(),
                    chosen: verdict.chosen,
                };
                let svg = heatmap::render(&data, Format::Svg).map_err(chart_error)?;
                for &format in formats {
                    let bytes = match format {
                        Format::Svg => svg.clone(),
                        Format::Png => heatmap::render(&data, format).map_err(chart_error)?,
                    };
                    files.push((
                        format!("{}.{}", heatmap::file_stem(metric), format.extension()),
                        bytes,
                    ));
                }
                heatmap_svgs.push(String::from_utf8_lossy(&svg).into_owned());
            }
        }
    }
    let page = SweepPage {
        scenario: prepared.name.clone(),
        description: prepared.spec.scenario_for(0)?.description,
        policy: prepared.spec.policy.clone(),
        swept: swept_text(prepared),
        sections: verdict
            .sections
            .iter()
            .map(|(section, text)| SweepSection {
                title: section.title(),
                text: text.clone(),
                charts: match section {
                    Section::Front => std::mem::take(&mut pareto_svg),
                    Section::Heatmaps => std::mem::take(&mut heatmap_svgs),
                    _ => Vec::new(),
                },
            })
            .collect(),
        points: point_table(prepared, &aggregate, &verdict, &meets),
        no_charts: formats
            .is_empty()
            .then(|| "Charts were not drawn (--no-charts): the Pareto front and the heatmaps are in the text only.".to_string()),
    };
    files.push(("report.html".to_string(), sweep_report_html(&page)));
    Ok((files, recommendation))
}

/// What was swept, in a line: the points and the grid, the seeds, each point's simulations.
fn swept_text(prepared: &PreparedSweep) -> String {
    let spec = &prepared.spec;
    let grid: Vec<String> = spec
        .axes
        .iter()
        .map(|axis| format!("{} = {}", axis.key, axis.values.join(", ")))
        .collect();
    let seeds: Vec<String> = prepared.seeds.iter().map(ToString::to_string).collect();
    format!(
        "{} points ({}), each run with {} seed{} ({}).",
        spec.point_count(),
        grid.join("; "),
        seeds.len(),
        if seeds.len() == 1 { "" } else { "s" },
        seeds.join(", ")
    )
}

/// The most points the page's table lists: a larger sweep's are in `aggregate.csv`.
const MAX_TABLE_POINTS: usize = 1000;

/// Every point (up to [`MAX_TABLE_POINTS`]): its grid values and its means of the metrics the
/// recommendation weighs (the front's and the requirements'), then of success, amplification,
/// p99 latency and recovery, each once, whether it meets the requirements and is on the front.
fn point_table(
    prepared: &PreparedSweep,
    aggregate: &Aggregate,
    verdict: &Verdict,
    meets: &[bool],
) -> PointTable {
    let spec = &prepared.spec;
    let mut metrics: Vec<&str> = Vec::new();
    let weighed = verdict
        .front_metrics
        .iter()
        .map(|metric| metric.name.as_str())
        .chain(prepared.requirements.iter().map(|r| r.metric.as_str()))
        .chain(["success_rate", "amplification", "p99_ms", "recovery_s"]);
    for name in weighed {
        if !metrics.contains(&name) {
            metrics.push(name);
        }
    }
    let mut header = vec!["point".to_string()];
    header.extend(spec.axes.iter().map(|axis| axis.key.clone()));
    header.extend(metrics.iter().map(|name| name.to_string()));
    header.extend(["meets".to_string(), "front".to_string()]);
    let on_front = |point: usize| verdict.front.contains(&point);
    let rows = (0..spec.point_count().min(MAX_TABLE_POINTS))
        .map(|point| {
            let chosen = verdict.chosen == Some(point);
            let mut cells = vec![format!("{point}{}", if chosen { "*" } else { "" })];
            cells.extend(spec.point_values(point).into_iter().map(str::to_string));
            cells.extend(
                metrics
                    .iter()
                    .map(|name| short(aggregate.mean(point, name))),
            );
            cells.push(if meets[point] { "yes" } else { "no" }.to_string());
            cells.push(if on_front(point) { "yes" } else { "" }.to_string());
            (cells, meets[point], chosen)
        })
        .collect();
    PointTable {
        header,
        rows,
        total: spec.point_count(),
    }
}

/// The Pareto chart: the first requirement's metric across and the optimised one up (with
/// neither `--minimize` nor `--maximize`, the front's second metric up); none if the front has
/// fewer than two metrics.
fn pareto_data(
    prepared: &PreparedSweep,
    aggregate: &Aggregate,
    verdict: &Verdict,
    meets: &[bool],
) -> Option<ParetoData> {
    let metrics = &verdict.front_metrics;
    let (x, y) = match prepared.objective {
        Some(_) => (metrics.get(1)?, &metrics[0]),
        None => (metrics.first()?, metrics.get(1)?),
    };
    let bounds = prepared
        .requirements
        .iter()
        .filter_map(|requirement| {
            let axis = if requirement.metric == x.name {
                pareto::Axis::X
            } else if requirement.metric == y.name {
                pareto::Axis::Y
            } else {
                return None;
            };
            Some((axis, requirement.bound, requirement.to_string()))
        })
        .collect();
    let points = (0..prepared.spec.point_count())
        .map(|point| {
            (
                aggregate.mean(point, &x.name),
                aggregate.mean(point, &y.name),
            )
        })
        .collect();
    Some(ParetoData {
        scenario: prepared.name.clone(),
        policy: prepared.spec.policy.clone(),
        x: x.clone(),
        y: y.clone(),
        points,
        meets: meets.to_vec(),
        front: verdict.front.clone(),
        chosen: verdict.chosen,
        bounds,
    })
}

/// The first shard's manifest as read, and what the sweep derives from it: every other shard's
/// `sweep.json` must be these bytes, and every row of `results.csv` one of its runs.
struct FirstShard {
    /// The bytes of its `sweep.json`.
    bytes: Vec<u8>,
    /// The sweep.
    spec: SweepSpec,
    /// Its seeds.
    seeds: Vec<u64>,
    /// Its metrics, in the order of `results.csv`.
    columns: Vec<NamedMetric>,
    /// Each seed's draws of the `[uncertain]` inputs.
    uncertain: UncertainDraws,
}

impl FirstShard {
    /// The header of its `results.csv`.
    fn header(&self) -> Vec<String> {
        results_header(&self.spec, &self.uncertain, &self.columns)
    }
}

/// Reads shard folders, checks that they are the shards of one sweep, each exactly once, and
/// returns the sweep's definition and all rows ordered by point and seed. Each shard file is
/// read only if it is a regular file, up to what a shard can write, and no other file is read:
/// the configs the sweep imports are those its `sweep.json` pins, which the shards must agree
/// on as on the rest of it.
pub fn merge(folders: &[&Path]) -> Result<(SweepSpec, Vec<ResultRow>), String> {
    let mut manifest: Option<FirstShard> = None;
    let mut shards: Vec<Shard> = Vec::new();
    let mut rows = Vec::new();
    for folder in folders {
        let manifest_bytes = read_shard_file(
            folder,
            "sweep.json",
            MAX_MANIFEST_BYTES,
            "the most a sweep writes (the scenario, the configs it imports and the grid)",
        )?;
        let shard_json = read_shard_file(
            folder,
            "shard.json",
            MAX_SHARD_JSON_BYTES,
            "and a shard.json holds two numbers",
        )?;
        let shard: Shard = serde_json::from_slice(&shard_json)
            .map_err(|error| error.to_string())
            .and_then(|shard: Shard| Shard::new(shard.index, shard.count))
            .map_err(|error| format!("{}: {error}", folder.join("shard.json").display()))?;
        if manifest.is_none() {
            #[derive(serde::Deserialize)]
            struct Manifest {
                #[serde(flatten)]
                spec: SweepSpec,
                seed_values: Vec<u64>,
            }
            let parsed: Manifest = serde_json::from_slice(&manifest_bytes)
                .map_err(|error| format!("{}: {error}", folder.join("sweep.json").display()))?;
            if parsed.seed_values.len() != parsed.spec.seeds as usize {
                return Err(format!(
                    "{}: `seeds` is {} but `seed_values` lists {}; the file was edited or is damaged",
                    folder.join("sweep.json").display(),
                    parsed.spec.seeds,
                    parsed.seed_values.len()
                ));
            }
            if let Some(axis) = parsed.spec.axes.iter().find(|axis| axis.values.is_empty()) {
                return Err(format!(
                    "{}: the grid key `{}` has no values; the file was edited or is damaged",
                    folder.join("sweep.json").display(),
                    axis.key
                ));
            }
            let derived = parsed
                .spec
                .seed_values()
                .map_err(|error| format!("{}: {error}", folder.join("sweep.json").display()))?;
            if derived != parsed.seed_values {
                return Err(format!(
                    "{}: `seed_values` {:?} are not the seeds {:?} this sweep derives from its scenario; the file was edited or is damaged",
                    folder.join("sweep.json").display(),
                    parsed.seed_values,
                    derived
                ));
            }
            let in_manifest =
                |error: SweepError| format!("{}: {error}", folder.join("sweep.json").display());
            let columns = parsed.spec.columns().map_err(in_manifest)?;
            let uncertain = parsed.spec.uncertain().map_err(in_manifest)?;
            manifest = Some(FirstShard {
                bytes: manifest_bytes.clone(),
                spec: parsed.spec,
                seeds: parsed.seed_values,
                columns,
                uncertain,
            });
        }
        let first = manifest.as_ref().expect("set above");
        let (spec, seeds) = (&first.spec, &first.seeds);
        if first.bytes != manifest_bytes {
            let first_folder = folders[0].display().to_string();
            return Err(format!(
                "{}: this shard belongs to a different sweep than {first_folder}: {}",
                folder.display(),
                manifest_differences(&manifest_bytes, &first.bytes, &first_folder)
            ));
        }
        if shards.iter().any(|seen| seen.count != shard.count) {
            return Err(format!(
                "{}: shard {shard} does not match the others' count",
                folder.display()
            ));
        }
        if shards.contains(&shard) {
            return Err(format!(
                "{}: shard {shard} is given twice",
                folder.display()
            ));
        }
        let results = folder.join("results.csv");
        let points = spec
            .point_count()
            .saturating_sub(shard.index)
            .div_ceil(shard.count);
        let expected = points.saturating_mul(seeds.len());
        let mut shard_rows = read_results(folder, first, (shard, expected))?;
        if let Some(row) = shard_rows.iter().find(|row| !shard.owns(row.point)) {
            return Err(format!(
                "{}: point {} does not belong to shard {shard}",
                folder.display(),
                row.point
            ));
        }
        // Each (point, seed) of the shard once: rows are in range and the shard's own, so
        // without repeats the count tells whether one is missing.
        shard_rows.sort_by_key(|row| (row.point, row.seed_index));
        if let Some(pair) = shard_rows
            .windows(2)
            .find(|pair| (pair[0].point, pair[0].seed_index) == (pair[1].point, pair[1].seed_index))
        {
            return Err(format!(
                "{}: point {} seed {} is given twice",
                results.display(),
                pair[0].point,
                seeds[pair[0].seed_index]
            ));
        }
        if shard_rows.len() != expected {
            return Err(format!(
                "{}: {} rows; shard {shard} has {points} points x {} seeds = {expected} simulations, each once",
                results.display(),
                shard_rows.len(),
                seeds.len()
            ));
        }
        shards.push(shard);
        rows.extend(shard_rows);
    }
    let Some(FirstShard { spec, .. }) = manifest else {
        return Err("merge needs at least one shard folder".into());
    };
    let count = shards[0].count;
    let missing: Vec<String> = (0..count)
        .filter(|index| !shards.iter().any(|shard| shard.index == *index))
        .map(|index| format!("{index}/{count}"))
        .collect();
    if !missing.is_empty() {
        let given: Vec<String> = folders
            .iter()
            .map(|folder| folder.display().to_string())
            .collect();
        return Err(format!(
            "shards missing: {} (given: {})",
            missing.join(", "),
            given.join(", ")
        ));
    }
    rows.sort_by_key(|row| (row.point, row.seed_index));
    Ok((spec, rows))
}
