//! `retrystorm map`, the replications of `run --replications N`, and merging their shards.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Args;

use super::progress::{Mode, Painter, timing};
use super::run::{CLAIMS_FAILED, ForecastAsk, announce_forecast, commit, within_cost_limit};
use retrystorm::base::spread::Spread;
use retrystorm::import::load_str;
use retrystorm::output::charts::Format;
use retrystorm::output::staging::StagedFolder;
use retrystorm::risk::{
    OutputFile, PreparedStudy, StudyKind, StudyRow, StudySpec, map, replications, shard_files,
};
use retrystorm::run::forecast::{Files, Sample};
use retrystorm::scenario::risk::MapAxis;
use retrystorm::scenario::{Override, check_resolved_fits, read_scenario};
use retrystorm::sweep::Shard;

#[derive(Debug, Args)]
pub struct MapArgs {
    /// The scenario file (TOML); it must have an incident to recover from.
    #[arg(value_name = "SCENARIO")]
    scenario: PathBuf,
    /// The horizontal axis: KEY=LOW..HIGH/N (N values from LOW to HIGH) or KEY=V1,V2,...;
    /// KEY1+KEY2=... sets two keys to each value (the two points of a step in a curve).
    /// Default: the scenario's [map] x.
    #[arg(long, value_name = "KEY=RANGE")]
    x: Option<MapAxis>,
    /// The vertical axis, as --x. Default: the scenario's [map] y.
    #[arg(long, value_name = "KEY=RANGE")]
    y: Option<MapAxis>,
    /// The most replications of a cell (default: [map] replications, else 16).
    #[arg(long, value_name = "N")]
    replications: Option<u32>,
    /// The replications every cell runs first; cells whose probability of recovering is not
    /// yet known to be on one side of 1/2 get more, doubling up to --replications (default:
    /// [map] min_replications, else 4; equal to --replications for a full grid).
    #[arg(long, value_name = "N")]
    min_replications: Option<u32>,
    /// Override a value for every run, as for `run`; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<Override>,
    /// Folder for results: the map writes to OUT/<name>-map/ (a shard to
    /// OUT/<name>-map-shards/shard-K-of-N/).
    #[arg(long, value_name = "OUT", default_value = "output")]
    out: PathBuf,
    /// Run only shard K of N (K from 0): the cells c with c % N == K.
    #[arg(long, value_name = "K/N")]
    shard: Option<Shard>,
    /// Chart formats, comma-separated: png, svg.
    #[arg(long, value_delimiter = ',', default_value = "png,svg")]
    format: Vec<Format>,
    /// Do not draw the map (map.html still shows it).
    #[arg(long)]
    no_charts: bool,
    /// Report wall time and runs per second.
    #[arg(long)]
    stats: bool,
    /// Run even a map whose estimated cost is over the limits, as for `run`.
    #[arg(long)]
    no_cost_limit: bool,
    /// Exit 0 even when a claim of the map does not hold.
    #[arg(long)]
    no_fail_on_claims: bool,
    /// Print a forecast of the wall time and peak memory before the map, from a short pilot,
    /// even for a short one (a long one, whose estimate is printed, is forecast anyway).
    #[arg(long)]
    forecast: bool,
}

fn fail(message: impl std::fmt::Display) -> io::Result<ExitCode> {
    super::report(format_args!("{message}"));
    Ok(ExitCode::FAILURE)
}

/// Builds and checks the map, runs it (or one shard of it) and writes its files.
pub fn map(args: &MapArgs) -> io::Result<ExitCode> {
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
    let table = base.map.as_ref().map(|map| map.get_ref());
    let axis = |flag: &Option<MapAxis>, written: Option<&str>, name: &str| match (flag, written) {
        (Some(axis), _) => Ok(axis.clone()),
        (None, Some(text)) => text
            .parse::<MapAxis>()
            .map_err(|error| format!("{path}: [map] {name}: {error}")),
        (None, None) => Err(format!(
            "{path}: give --{name} KEY=LOW..HIGH/N (the scenario has no [map] {name})"
        )),
    };
    let axes = match (
        axis(&args.x, table.map(|map| map.x.get_ref().as_str()), "x"),
        axis(&args.y, table.map(|map| map.y.get_ref().as_str()), "y"),
    ) {
        (Ok(x), Ok(y)) => vec![x, y],
        (Err(error), _) | (_, Err(error)) => return fail(error),
    };
    let replications = args
        .replications
        .or(table.map(|map| map.replications.get() as u32))
        .unwrap_or(16);
    let min_replications = args
        .min_replications
        .or(table.and_then(|map| map.min_replications.map(|least| least.get() as u32)))
        .unwrap_or(4)
        .min(replications);
    let spec = StudySpec {
        kind: StudyKind::Map,
        scenario_path: path.clone(),
        scenario_text: text,
        fixed: pairs(&args.set),
        axes,
        replications,
        min_replications,
        configs: Default::default(),
    };
    let prepared = match spec.prepare_reading_configs() {
        Ok(prepared) if !prepared.has_incident => {
            return fail(format!(
                "{path}: a map measures whether the system recovers from the incident, and the scenario has none; declare one in [incident] (a load spike: from = \"clients.load\")"
            ));
        }
        Ok(prepared) => prepared,
        Err(error) => return fail(error),
    };
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let (least, most) = prepared.runs_bounds(shard);
    // A full grid (min_replications = replications) has one number of each.
    let per_cell = Spread::of(min_replications.to_string(), replications.to_string());
    writeln!(
        io::stdout(),
        "{}: {} cells x {} policies, {} replications {}: {} runs{}",
        prepared.name,
        prepared.spec.cell_count(),
        prepared.policies.len(),
        per_cell.words(""),
        match per_cell {
            Spread::One(_) => "in every cell",
            Spread::Between(..) => "a cell",
        },
        Spread::of(least.to_string(), most.to_string()).words(""),
        shard_words(shard)
    )?;
    let ask = ForecastAsk {
        asked: args.forecast,
        files: Files::with_charts(formats(&args.format, args.no_charts).len()),
    };
    let Some(rows) = run_study(&prepared, shard, most, args.stats, args.no_cost_limit, ask)? else {
        return Ok(ExitCode::FAILURE);
    };
    if shard != Shard::WHOLE {
        return write_shard(
            &args.out,
            &format!("{}-map-shards", prepared.name),
            &prepared,
            shard,
            &rows,
        );
    }
    finish(
        &prepared,
        &rows,
        &formats(&args.format, args.no_charts),
        &args.out,
        args.no_fail_on_claims,
    )
}

/// The `--set` overrides as pairs.
pub fn pairs(set: &[Override]) -> Vec<(String, String)> {
    set.iter()
        .map(|item| (item.key.clone(), item.value.clone()))
        .collect()
}

fn shard_words(shard: Shard) -> String {
    if shard == Shard::WHOLE {
        String::new()
    } else {
        format!(" (shard {shard})")
    }
}

/// The chart formats to write.
pub fn formats(asked: &[Format], no_charts: bool) -> Vec<Format> {
    if no_charts {
        return vec![];
    }
    let mut formats = asked.to_vec();
    formats.sort();
    formats.dedup();
    formats
}

/// Runs the study's runs of `shard` (at most `most`) after announcing their cost; `None` if
/// the cost is over the limits or a run failed (reported).
pub fn run_study(
    prepared: &PreparedStudy,
    shard: Shard,
    most: usize,
    stats: bool,
    no_cost_limit: bool,
    ask: ForecastAsk,
) -> io::Result<Option<Vec<StudyRow>>> {
    let threads = rayon::current_num_threads();
    let estimate = prepared.estimate(shard, threads);
    if !within_cost_limit(&estimate, &prepared.spec.scenario_path, no_cost_limit) {
        return Ok(None);
    }
    // A map runs its least replications in every cell, and more where a cell is unsettled.
    let spec = &prepared.spec;
    let mut estimates = vec![estimate];
    if spec.min_replications < spec.replications {
        estimates.insert(
            0,
            prepared.estimate_at(shard, threads, spec.min_replications),
        );
    }
    let policies = prepared.policies.len();
    announce_forecast(
        &spec.scenario_path,
        &estimates,
        || {
            // The first run of the shard: its cell's first replication it owns.
            let (cell, replication) = (0..spec.cell_count())
                .flat_map(|cell| (0..spec.replications as usize).map(move |r| (cell, r)))
                .find(|&(cell, r)| spec.owns(shard, cell, r))?;
            let scenario = prepared.scenario_of_run(cell, replication).ok()?;
            Some(Sample::every_policy(&scenario))
        },
        |index| index % policies.max(1),
        ask,
    );
    let mode = match Mode::of_stderr() {
        Ok(mode) => mode,
        Err(error) => {
            super::report(format_args!("{error}"));
            return Ok(None);
        }
    };
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let painter = progress(mode, most, Arc::clone(&done));
    let rows = prepared.run(shard, &done);
    painter.stop();
    let rows = match rows {
        Ok(rows) => rows,
        Err(error) => {
            super::report(format_args!("{error}"));
            return Ok(None);
        }
    };
    if stats {
        let wall = started.elapsed().as_secs_f64();
        writeln!(
            io::stdout(),
            "stats: {} runs of a policy in {wall:.3} s wall ({} threads), {:.2} runs/s",
            rows.len(),
            rayon::current_num_threads(),
            rows.len() as f64 / wall.max(1e-9)
        )?;
    }
    Ok(Some(rows))
}

/// Writes a shard's files to `OUT/<group>/shard-K-of-N/`.
fn write_shard(
    out: &Path,
    group: &str,
    prepared: &PreparedStudy,
    shard: Shard,
    rows: &[StudyRow],
) -> io::Result<ExitCode> {
    let folder = out
        .join(group)
        .join(format!("shard-{}-of-{}", shard.index, shard.count));
    write_all(&folder, &shard_files(prepared, shard, rows))?;
    writeln!(
        io::stdout(),
        "results in {}; combine the shards with `retrystorm merge`",
        folder.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `files` as the whole content of `folder`, as one change.
fn write_all(folder: &Path, files: &[OutputFile]) -> io::Result<()> {
    let staged = StagedFolder::create(folder, "study.json")?;
    for (name, bytes) in files {
        staged.write(name, bytes)?;
    }
    commit(staged)
}

/// The files of a whole study, written to `OUT/<name>-map/` (a map) or `OUT/<name>-risk/`
/// (merged replications), and its summary printed.
fn finish(
    prepared: &PreparedStudy,
    rows: &[StudyRow],
    formats: &[Format],
    out: &Path,
    no_fail_on_claims: bool,
) -> io::Result<ExitCode> {
    let (files, text, failed, folder) = match prepared.spec.kind {
        StudyKind::Map => match map::finalize(prepared, rows, formats) {
            Ok((files, text, failed)) => (
                files,
                text,
                failed,
                out.join(format!("{}-map", prepared.name)),
            ),
            Err(error) => return fail(error),
        },
        StudyKind::Replications => match replications::finalize(prepared, rows, formats) {
            Ok((files, text, failed)) => (
                files,
                text,
                failed,
                out.join(format!("{}-risk", prepared.name)),
            ),
            Err(error) => return fail(error),
        },
    };
    write_all(&folder, &files)?;
    writeln!(io::stdout(), "{text}  results in {}", folder.display())?;
    if failed > 0 && !no_fail_on_claims {
        super::report(format_args!(
            "{failed} claim{} did not hold: exit {CLAIMS_FAILED} (--no-fail-on-claims exits 0)",
            if failed == 1 { "" } else { "s" }
        ));
        return Ok(ExitCode::from(CLAIMS_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// Merges the shards of a study (`study.json` in each folder).
pub fn merge_study(folders: &[&Path], out: &Path, formats: &[Format]) -> io::Result<ExitCode> {
    let (prepared, rows) = match retrystorm::risk::merge(folders) {
        Ok(merged) => merged,
        Err(error) => return fail(error),
    };
    writeln!(io::stdout(), "merged {} shards", folders.len())?;
    finish(&prepared, &rows, formats, out, true)
}

/// Runs the replications of `scenario`'s `[risk]` (or one shard of them): the study a run with
/// `--replications` makes besides its own files. Returns the files and the text to print, and
/// how many claims with a probability did not hold; `None` when it did not run (reported).
pub fn replications_of(
    path: &Path,
    overrides: &[Override],
    replications: u32,
    shard: Shard,
    no_cost_limit: bool,
    ask: ForecastAsk,
) -> io::Result<Option<Replicated>> {
    let text = match read_scenario(path) {
        Ok(text) => text,
        Err(error) => {
            super::report(format_args!("{error}"));
            return Ok(None);
        }
    };
    let spec = StudySpec {
        kind: StudyKind::Replications,
        scenario_path: path.display().to_string(),
        scenario_text: text,
        fixed: pairs(overrides),
        axes: vec![],
        replications,
        min_replications: replications,
        configs: Default::default(),
    };
    let prepared = match spec.prepare_reading_configs() {
        Ok(prepared) => prepared,
        Err(error) => {
            super::report(format_args!("{error}"));
            return Ok(None);
        }
    };
    let (_, most) = prepared.runs_bounds(shard);
    let Some(rows) = run_study(&prepared, shard, most, false, no_cost_limit, ask)? else {
        return Ok(None);
    };
    Ok(Some(Replicated {
        prepared,
        rows,
        shard,
    }))
}

/// Replications that ran.
pub struct Replicated {
    prepared: PreparedStudy,
    rows: Vec<StudyRow>,
    shard: Shard,
}

impl Replicated {
    /// A shard's files, in `OUT/<name>-risk-shards/shard-K-of-N/`.
    pub fn write_shard(&self, out: &Path) -> io::Result<ExitCode> {
        write_shard(
            out,
            &format!("{}-risk-shards", self.prepared.name),
            &self.prepared,
            self.shard,
            &self.rows,
        )
    }

    /// The files of the replications for the run's folder, the text to print, and the claims
    /// with a probability that did not hold.
    pub fn files(&self, formats: &[Format]) -> io::Result<(Vec<OutputFile>, String, usize)> {
        replications::finalize(&self.prepared, &self.rows, formats)
            .map_err(|error| io::Error::other(error.to_string()))
    }
}

/// Progress on stderr.
fn progress(mode: Mode, total: usize, finished: Arc<AtomicUsize>) -> Painter {
    Painter::start(mode, Duration::from_millis(250), 80, move |elapsed| {
        let count = finished.load(Ordering::Relaxed);
        let fraction = count as f64 / total.max(1) as f64;
        match mode {
            Mode::Bar => {
                let filled = ((fraction * 30.0) as usize).min(30);
                format!(
                    "runs [{}{}] {count} of at most {total}",
                    "=".repeat(filled),
                    " ".repeat(30 - filled)
                )
            }
            Mode::Lines(_) => format!(
                "{count} of at most {total} runs done; {}",
                timing(elapsed, fraction)
            ),
        }
    })
}
