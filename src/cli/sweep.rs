//! `retrystorm sweep` and `retrystorm merge`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Args;

use super::progress::{Mode, Painter, timing};
use super::run::{ForecastAsk, announce_forecast, commit, within_cost_limit};
use retrystorm::import::load_str;
use retrystorm::output::charts::Format;
use retrystorm::output::staging::StagedFolder;
use retrystorm::run::forecast::{Files, Sample};
use retrystorm::scenario::{Override, check_resolved_fits, read_scenario};
use retrystorm::sweep::report::{OutputFile, finalize, merge, shard_files};
use retrystorm::sweep::{Axis, PreparedSweep, Shard, SweepSpec, choose_policy};

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The scenario file (TOML).
    #[arg(value_name = "SCENARIO")]
    scenario: PathBuf,
    /// A grid key and its values: KEY=V1,V2,... or an inclusive integer range KEY=2..6;
    /// repeatable. Keys are the dotted paths of --set (policy.base, policy.max_attempts, ...).
    #[arg(long = "grid", value_name = "KEY=VALUES", required = true)]
    grid: Vec<Axis>,
    /// Seeds per point, derived from the scenario's seed.
    #[arg(long, default_value_t = 3)]
    seeds: u32,
    /// The policy to tune (required when the scenario has several).
    #[arg(long)]
    policy: Option<String>,
    /// A requirement on a point's mean over seeds, METRIC OP VALUE (>=, <=, >, <, ==, !=);
    /// repeatable. METRIC is a summary metric, METRIC@SERVICE for one service of a topology,
    /// busiest_share@SERVICE for a fleet, METRIC@SERVICE#K for its instance K, or
    /// METRIC:OPERATION for one operation of several. A point whose value is undefined on some seed (no incident, nothing
    /// succeeded) or never (a recovery that never came) meets it only if it ends in
    /// `or undefined` or `or never`. Example: --require 'success_rate>=0.995' --require
    /// 'recovery_s<=5 or never' --require 'amplification@db<=2'
    #[arg(long = "require", value_name = "REQUIREMENT")]
    require: Vec<String>,
    /// The metric to minimise among the points that meet the requirements (one better lower,
    /// or without a direction), e.g. p99_ms or amplification@db.
    #[arg(long, value_name = "METRIC")]
    minimize: Option<String>,
    /// The metric to maximise among the points that meet the requirements (one better higher,
    /// or without a direction), e.g. success_rate; not with --minimize.
    #[arg(long, value_name = "METRIC")]
    maximize: Option<String>,
    /// Override a value for every point, as for `run`; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<Override>,
    /// Folder for results: the sweep writes to OUT/<name>-sweep/ (a shard to
    /// OUT/<name>-shards/shard-K-of-N/).
    #[arg(long, value_name = "OUT", default_value = "output")]
    out: PathBuf,
    /// Run only shard K of N (K from 0): the points p with p % N == K.
    #[arg(long, value_name = "K/N")]
    shard: Option<Shard>,
    /// Chart formats (heatmaps, Pareto front, map, ECDFs), comma-separated: png, svg.
    #[arg(long, value_delimiter = ',', default_value = "png,svg")]
    format: Vec<Format>,
    /// Do not draw the charts (the HTML reports still embed theirs).
    #[arg(long)]
    no_charts: bool,
    /// Report wall time and simulations per second.
    #[arg(long)]
    stats: bool,
    /// Run even a sweep whose estimated cost is over the limits, as for `run`.
    #[arg(long)]
    no_cost_limit: bool,
    /// Print a forecast of the wall time and peak memory before the sweep, from a short
    /// pilot, even for a short one (a long one, whose estimate is printed, is forecast anyway).
    #[arg(long)]
    forecast: bool,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' output folders: a sweep's (results.csv, sweep.json, shard.json), a map's (map-runs.csv, study.json, shard.json) or replications' (replications.csv, study.json, shard.json).
    #[arg(required = true, value_name = "DIR")]
    folders: Vec<PathBuf>,
    /// Folder for results: a merged sweep writes to OUT/<name>-sweep/, a map to OUT/<name>-map/, replications to OUT/<name>-risk/.
    #[arg(long, value_name = "OUT", default_value = "output")]
    out: PathBuf,
    /// Chart formats (heatmaps, Pareto front, map, ECDFs), comma-separated: png, svg.
    #[arg(long, value_delimiter = ',', default_value = "png,svg")]
    format: Vec<Format>,
    /// Do not draw the charts (the HTML reports still embed theirs).
    #[arg(long)]
    no_charts: bool,
}

fn fail(message: impl std::fmt::Display) -> io::Result<ExitCode> {
    super::report(format_args!("{message}"));
    Ok(ExitCode::FAILURE)
}

/// Validates the whole grid, runs it (or one shard of it) and writes the results.
pub fn sweep(args: &SweepArgs) -> io::Result<ExitCode> {
    let path = args.scenario.display().to_string();
    let text = match read_scenario(&args.scenario) {
        Ok(text) => text,
        Err(error) => return fail(error),
    };
    let base = match load_str(&text, &path, &args.set)
        .and_then(|base| check_resolved_fits(&base, &path).map(|()| base))
    {
        Ok(base) => base,
        Err(error) => return fail(error),
    };
    let policy = match choose_policy(&base, args.policy.as_deref()) {
        Ok(policy) => policy,
        Err(error) => return fail(error),
    };
    let spec = SweepSpec {
        scenario_path: path,
        scenario_text: text,
        fixed: args
            .set
            .iter()
            .map(|item| (item.key.clone(), item.value.clone()))
            .collect(),
        axes: args.grid.clone(),
        seeds: args.seeds,
        policy,
        requirements: args.require.clone(),
        minimize: args.minimize.clone(),
        maximize: args.maximize.clone(),
        configs: Default::default(),
    };
    let prepared = match spec.prepare_reading_configs() {
        Ok(prepared) => prepared,
        Err(error) => return fail(error),
    };
    let mode = match Mode::of_stderr() {
        Ok(mode) => mode,
        Err(error) => return fail(error),
    };
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let estimate = prepared.estimate(shard, rayon::current_num_threads());
    if !within_cost_limit(&estimate, &prepared.spec.scenario_path, args.no_cost_limit) {
        return Ok(ExitCode::FAILURE);
    }
    let charts = if args.no_charts { 0 } else { args.format.len() };
    // The pilot: the first seed of as many of the shard's points as run at once, spread from
    // its first to its last, since the grid's corners differ most; each simulation stands
    // for the nearest sampled point's.
    let owned: Vec<usize> = (0..prepared.spec.point_count())
        .filter(|&point| shard.owns(point))
        .collect();
    let sampled = spread(owned.len(), rayon::current_num_threads());
    let seeds = prepared.seeds.len().max(1);
    announce_forecast(
        &prepared.spec.scenario_path,
        &[estimate],
        || {
            sampled
                .iter()
                .map(|&position| {
                    Some(Sample {
                        scenario: prepared.scenario_of_run(*owned.get(position)?, 0).ok()?,
                        policy: 0,
                        seed: *prepared.seeds.first()?,
                        job_index: position * seeds,
                    })
                })
                .collect()
        },
        |index| nearest(&sampled, index / seeds),
        ForecastAsk {
            asked: args.forecast,
            files: Files::with_charts(charts),
        },
    );
    let simulations = prepared.simulations(shard);
    let started = Instant::now();
    let done = Arc::new(AtomicUsize::new(0));
    let progress = progress(mode, simulations, Arc::clone(&done));
    let rows = prepared.run(shard, &done);
    progress.stop();
    let rows = match rows {
        Ok(rows) => rows,
        Err(error) => return fail(error),
    };
    let wall = started.elapsed();
    writeln!(
        io::stdout(),
        "{}: {} points x {} seed{}; ran {simulations} simulations{}",
        prepared.name,
        prepared.spec.point_count(),
        prepared.seeds.len(),
        if prepared.seeds.len() == 1 { "" } else { "s" },
        if shard == Shard::WHOLE {
            String::new()
        } else {
            format!(" (shard {shard})")
        }
    )?;
    if shard != Shard::WHOLE {
        let folder = args
            .out
            .join(format!("{}-shards", prepared.name))
            .join(format!("shard-{}-of-{}", shard.index, shard.count));
        write_all(&folder, "shard.json", &shard_files(&prepared, shard, &rows))?;
        writeln!(
            io::stdout(),
            "results in {}; combine the shards with `retrystorm merge`",
            folder.display()
        )?;
    } else {
        let formats = if args.no_charts {
            vec![]
        } else {
            args.format.clone()
        };
        match finalize(&prepared, &rows, &formats) {
            Ok((files, recommendation)) => {
                let sweep_folder = args.out.join(format!("{}-sweep", prepared.name));
                write_all(&sweep_folder, "sweep.json", &files)?;
                writeln!(
                    io::stdout(),
                    "results in {}\n\n{recommendation}",
                    sweep_folder.display()
                )?;
            }
            Err(error) => return fail(error),
        }
    }
    if args.stats {
        writeln!(
            io::stdout(),
            "stats: {simulations} simulations in {:.3} s wall ({} threads), {:.2} simulations/s",
            wall.as_secs_f64(),
            rayon::current_num_threads(),
            simulations as f64 / wall.as_secs_f64().max(1e-9)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `count` positions of `0..length` spread evenly from the first to the last (all of them
/// when `count` is at least `length`): 0, 5 and 11 of 12 for three.
fn spread(length: usize, count: usize) -> Vec<usize> {
    let count = count.clamp(1, length.max(1));
    let mut positions: Vec<usize> = (0..count)
        .map(|i| {
            if count == 1 {
                0
            } else {
                i * (length.max(1) - 1) / (count - 1)
            }
        })
        .collect();
    positions.dedup();
    positions
}

/// The index in `positions` (sorted) of the one nearest `position`, the earlier on a tie.
fn nearest(positions: &[usize], position: usize) -> usize {
    (0..positions.len())
        .min_by_key(|&index| positions[index].abs_diff(position))
        .unwrap_or(0)
}

/// Combines shard folders into the files of a whole sweep.
pub fn merge_shards(args: &MergeArgs) -> io::Result<ExitCode> {
    let folders: Vec<&Path> = args.folders.iter().map(PathBuf::as_path).collect();
    // A map's or replications' shards hold study.json where a sweep's hold sweep.json.
    if folders
        .first()
        .is_some_and(|folder| folder.join("study.json").is_file())
    {
        return super::study::merge_study(
            &folders,
            &args.out,
            &super::study::formats(&args.format, args.no_charts),
        );
    }
    let (spec, rows) = match merge(&folders) {
        Ok(merged) => merged,
        Err(error) => return fail(error),
    };
    let prepared: PreparedSweep = match spec.prepare() {
        Ok(prepared) => prepared,
        Err(error) => return fail(error),
    };
    let formats = if args.no_charts {
        vec![]
    } else {
        args.format.clone()
    };
    let (files, recommendation) = match finalize(&prepared, &rows, &formats) {
        Ok(finished) => finished,
        Err(error) => return fail(error),
    };
    let folder = args.out.join(format!("{}-sweep", prepared.name));
    write_all(&folder, "sweep.json", &files)?;
    writeln!(
        io::stdout(),
        "merged {} shards into {}\n\n{recommendation}",
        folders.len(),
        folder.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `files` as the whole content of `folder`, replacing an earlier result there as one
/// change; `mark` is the file that shows a folder is such a result.
fn write_all(folder: &Path, mark: &'static str, files: &[OutputFile]) -> io::Result<()> {
    let staged = StagedFolder::create(folder, mark)?;
    for (name, bytes) in files {
        staged.write(name, bytes)?;
    }
    commit(staged)
}

/// Progress on stderr: a bar with an estimate on a terminal, a line every few seconds
/// elsewhere.
fn progress(mode: Mode, total: usize, finished: Arc<AtomicUsize>) -> Painter {
    Painter::start(mode, Duration::from_millis(250), 80, move |elapsed| {
        let count = finished.load(Ordering::Relaxed);
        let fraction = count as f64 / total.max(1) as f64;
        match mode {
            Mode::Bar => {
                let filled = (fraction * 30.0) as usize;
                let eta = if count > 0 {
                    let left = elapsed.as_secs_f64() * (total - count) as f64 / count as f64;
                    format!("ETA {left:.0}s")
                } else {
                    "ETA ?".to_string()
                };
                format!(
                    "sweep [{}{}] {count}/{total} simulations, {eta}",
                    "=".repeat(filled),
                    " ".repeat(30 - filled)
                )
            }
            Mode::Lines(_) => format!(
                "sweep: {count} of {total} simulations done ({:.0}%); {}",
                fraction * 100.0,
                timing(elapsed, fraction)
            ),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{nearest, spread};

    /// The pilot's points run from the grid's first to its last; every point takes the
    /// nearest's measure.
    #[test]
    fn the_pilot_spreads_over_the_grid() {
        assert_eq!(spread(12, 2), vec![0, 11]);
        assert_eq!(spread(12, 3), vec![0, 5, 11]);
        assert_eq!(spread(2, 4), vec![0, 1]);
        assert_eq!(spread(1, 2), vec![0]);
        assert_eq!(spread(0, 2), vec![0]);
        assert_eq!(nearest(&[0, 11], 5), 0);
        assert_eq!(nearest(&[0, 11], 6), 1);
        assert_eq!(nearest(&[0, 5, 11], 8), 1);
    }
}
