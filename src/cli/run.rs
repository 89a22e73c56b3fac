//! `retrystorm run` and `retrystorm check`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;

use super::progress::{Mode, Painter, timing};
use rayon::prelude::*;
use retrystorm::base::time::Micros;
use retrystorm::claims::evaluate;
use retrystorm::engine::{AttemptRecord, Observer};
use retrystorm::import::load;
use retrystorm::model::{effective_policies, service_failures};
use retrystorm::output::charts::{Chart, Charts, Format};
use retrystorm::output::report::report_html;
use retrystorm::output::staging::StagedFolder;
use retrystorm::output::{
    ARTIFACTS, OPERATION_COLUMNS, OperationColumn, TraceWriter, finish_trace,
};
use retrystorm::run::cost::{Estimate, memory_limit};
use retrystorm::run::forecast::{
    Files, Forecast, PILOT_SECONDS, PilotMemory, PilotRun, Sample, about, peak_resident_bytes,
    pilot,
};
use retrystorm::run::{ScenarioRun, run_scenario};
use retrystorm::scenario::routes::calls_anywhere;
use retrystorm::scenario::{Override, Scenario, longest_operation};
use retrystorm::sweep::Shard;

use super::study::replications_of;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario files (TOML).
    #[arg(required = true, value_name = "SCENARIO")]
    scenarios: Vec<PathBuf>,
    /// Folder for results: each scenario writes to OUT/<name>/.
    #[arg(long, value_name = "OUT", default_value = "output")]
    out: PathBuf,
    /// Seed of every random stream, instead of the scenario's.
    #[arg(long)]
    seed: Option<u64>,
    /// Override a scenario value, validated as if written in the file; repeatable.
    /// Examples: clients.count=50000, upstream.outage=crash, policy.1.base=50ms, policy.cap=5s
    /// (every policy).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<Override>,
    /// Also write trace.csv, one row per attempt.
    #[arg(long)]
    trace: bool,
    /// Report events processed, wall time, events per second and peak memory.
    #[arg(long)]
    stats: bool,
    /// Chart formats, comma-separated: png, svg.
    #[arg(long, value_delimiter = ',', default_value = "png,svg")]
    format: Vec<Format>,
    /// Do not draw charts.
    #[arg(long)]
    no_charts: bool,
    /// Run even a scenario whose estimated cost is over the limits (10 billion events, or
    /// 80% of this machine's memory); `check` prints the estimate.
    #[arg(long)]
    no_cost_limit: bool,
    /// Exit 0 even when a claim of a scenario's lesson does not hold (by default such a run
    /// exits 3, after writing every result).
    #[arg(long)]
    no_fail_on_claims: bool,
    /// Also run every policy on N seeds (the scenario's [risk] replications, set): the
    /// probabilities of never recovering, of a duplicate write and of each claim, with exact
    /// intervals, and policies compared paired by seed (risk.html, risk.csv).
    #[arg(long, value_name = "N")]
    replications: Option<u32>,
    /// Print a forecast of the wall time and peak memory before the run, from a short pilot,
    /// even for a short run (a long run, whose estimate is printed, is forecast anyway).
    #[arg(long)]
    forecast: bool,
    /// With replications: run only shard K of N of them (the replications r with r % N == K),
    /// and write only their rows, for `retrystorm merge`.
    #[arg(long, value_name = "K/N")]
    shard: Option<Shard>,
}

/// The exit code of a run whose results are all written but where a claim of some scenario's
/// `[[expect]]` did not hold, as a load test's failed threshold fails its CI step (k6 exits
/// 99 then). Distinct from 1 (bad input, output failed) and clap's 2 (a wrong command line).
pub const CLAIMS_FAILED: u8 = 3;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Scenario files (TOML).
    #[arg(required = true, value_name = "SCENARIO")]
    scenarios: Vec<PathBuf>,
    /// Overrides to validate with the files, as for `run`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<Override>,
}

/// Validates every scenario, reporting each error; exit 1 if any is invalid.
pub fn check(args: &CheckArgs) -> io::Result<ExitCode> {
    let mut code = ExitCode::SUCCESS;
    for path in &args.scenarios {
        match load(path, &args.set) {
            Ok(scenario) => {
                writeln!(
                    io::stdout(),
                    "ok: {} ({}, {} polic{}{})\n  cost: {}",
                    path.display(),
                    scenario.name,
                    scenario.policy.len(),
                    if scenario.policy.len() == 1 {
                        "y"
                    } else {
                        "ies"
                    },
                    calls(&scenario),
                    Estimate::of(&scenario, rayon::current_num_threads())
                )?;
                // Every caller's effective policy: nothing a run assumes is silent.
                let policies = effective_policies(&scenario);
                for line in policies.clients.iter().chain(&policies.tiers) {
                    writeln!(io::stdout(), "  {line}")?;
                }
                for line in service_failures(&scenario) {
                    writeln!(io::stdout(), "  {line}")?;
                }
            }
            Err(error) => {
                super::report(format_args!("{error}"));
                code = ExitCode::FAILURE;
            }
        }
    }
    Ok(code)
}

/// A topology's calls, as `; clients -> edge; edge -> api, cache; api -> db`; nothing for a
/// single service.
fn calls(scenario: &Scenario) -> String {
    let services = scenario.services();
    if services.len() < 2 {
        return String::new();
    }
    let mut calls = vec![format!("clients -> {}", services[scenario.entry()].name())];
    calls.extend(
        services
            .iter()
            .map(|service| (service, calls_anywhere(scenario, service)))
            .filter(|(_, callees)| !callees.is_empty())
            .map(|(service, callees)| format!("{} -> {}", service.name(), callees.join(", "))),
    );
    format!("; {}", calls.join("; "))
}

/// Loads every scenario first (so a typo in the last does not waste the first's run), then
/// runs them in order.
pub fn run(args: &RunArgs) -> io::Result<ExitCode> {
    let mut overrides = args.set.clone();
    if let Some(seed) = args.seed {
        overrides.push(Override {
            flag: "--seed",
            ..Override::set("seed", &seed.to_string())
        });
    }
    if let Some(replications) = args.replications {
        overrides.push(Override {
            flag: "--replications",
            ..Override::set("risk.replications", &replications.to_string())
        });
    }
    let mut scenarios: Vec<Scenario> = Vec::new();
    for path in &args.scenarios {
        match load(path, &overrides) {
            Ok(scenario) => {
                // Each result folder holds one scenario: two of one name would mix.
                if let Some(index) = scenarios.iter().position(|s| s.name == scenario.name) {
                    super::report(format_args!(
                        "{} and {} are both named {:?}; their results would share {}: rename one",
                        args.scenarios[index].display(),
                        path.display(),
                        scenario.name.as_str(),
                        args.out.join(scenario.name.as_str()).display()
                    ));
                    return Ok(ExitCode::FAILURE);
                }
                scenarios.push(scenario);
            }
            Err(error) => {
                super::report(format_args!("{error}"));
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    for (scenario, path) in scenarios.iter().zip(&args.scenarios) {
        let estimate = Estimate::of(scenario, rayon::current_num_threads());
        if !within_cost_limit(&estimate, &path.display().to_string(), args.no_cost_limit) {
            return Ok(ExitCode::FAILURE);
        }
    }
    let mode = match Mode::of_stderr() {
        Ok(mode) => mode,
        Err(error) => {
            super::report(format_args!("{error}"));
            return Ok(ExitCode::FAILURE);
        }
    };
    for (scenario, path) in scenarios.iter().zip(&args.scenarios) {
        // An [uncertain] input that --set gives (as a sweep's reproducing command does) is not
        // drawn, as in a replicated study.
        let drawn = scenario
            .uncertain
            .keys()
            .any(|key| !args.set.iter().any(|set| gives(&set.key, key)));
        let unreplicated = if drawn && scenario.risk.is_none() {
            Some(
                "its [uncertain] inputs are drawn once per replication (one run at fixed values needs --set for each of them)",
            )
        } else if args.shard.is_some() && scenario.risk.is_none() {
            Some("--shard splits the replications")
        } else {
            None
        };
        if let Some(why) = unreplicated {
            super::report(format_args!(
                "{}: {why}, and it has none: add [risk] replications = 100, or run it with --replications 100",
                path.display()
            ));
            return Ok(ExitCode::FAILURE);
        }
    }
    let mut failed_claims = 0;
    for (scenario, path) in scenarios.iter().zip(&args.scenarios) {
        if let (Some(shard), Some(risk)) = (args.shard, &scenario.risk) {
            let replications = risk.get_ref().replications.get() as u32;
            let ask = ForecastAsk {
                asked: args.forecast,
                files: Files::with_charts(0),
            };
            match replications_of(
                path,
                &overrides,
                replications,
                shard,
                args.no_cost_limit,
                ask,
            )? {
                Some(replicated) => replicated.write_shard(&args.out)?,
                None => return Ok(ExitCode::FAILURE),
            };
            continue;
        }
        match run_one(scenario, path, &overrides, args, mode)? {
            Some(failed) => failed_claims += failed,
            None => return Ok(ExitCode::FAILURE),
        }
    }
    if failed_claims > 0 && !args.no_fail_on_claims {
        super::report(format_args!(
            "{failed_claims} claim{} did not hold: exit {CLAIMS_FAILED} (--no-fail-on-claims exits 0)",
            if failed_claims == 1 { "" } else { "s" }
        ));
        return Ok(ExitCode::from(CLAIMS_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// Announces the cost of a long or large run (`label` names it) on stderr before it starts,
/// and refuses one over the limits unless `no_cost_limit`.
pub fn within_cost_limit(estimate: &Estimate, label: &str, no_cost_limit: bool) -> bool {
    let limit = memory_limit();
    match estimate.exceeds(limit) {
        Some(reason) if !no_cost_limit => {
            super::report(format_args!(
                "{label}: this would take {reason}.\n  estimate: {estimate}\n  Make it smaller (clients.count, clients.rate, duration, bucket; a sweep: fewer points or seeds), or run it anyway with --no-cost-limit."
            ));
            false
        }
        _ => {
            if shown(estimate, limit) {
                super::report(format_args!("{label}: estimate: {estimate}"));
            }
            true
        }
    }
}

/// Whether the bounds of `estimate` are shown before it runs: over a limit of `limit` bytes
/// or the events limit, or long (at least 10 s, or up to a minute or more), or large (a
/// quarter of the limit).
fn shown(estimate: &Estimate, limit: f64) -> bool {
    estimate.exceeds(limit).is_some()
        || estimate.fewest_seconds() >= 10.0
        || estimate.most_seconds() >= 60.0
        || estimate.memory_bytes() >= limit / 4.0
}

/// Whether a job is forecast before it runs, and what its files cost.
#[derive(Debug, Clone, Copy)]
pub struct ForecastAsk {
    /// `--forecast`: even a short job.
    pub asked: bool,
    /// The files and charts the job writes.
    pub files: Files,
}

/// Runs the pilot of `samples` and prints the forecast of the job on stderr after `label`,
/// if it is asked for or the job's bounds are shown (a long job: a short job's output does
/// not change). `estimates` is the job (a map's: at its least runs, then its most);
/// `sample_of` the pilot sample that stands for each of its simulations. A pilot that stalls
/// prints nothing: the job reports it.
pub fn announce_forecast(
    label: &str,
    estimates: &[Estimate],
    samples: impl FnOnce() -> Option<Vec<Sample>>,
    sample_of: impl Fn(usize) -> usize + Copy,
    ask: ForecastAsk,
) {
    let Some(last) = estimates.last() else {
        return;
    };
    if !ask.asked && !shown(last, memory_limit()) {
        return;
    }
    let Some(samples) = samples() else {
        return;
    };
    let before = peak_resident_bytes().unwrap_or(0.0);
    let started = Instant::now();
    let Ok(runs) = pilot(&samples, Duration::from_secs_f64(PILOT_SECONDS)) else {
        return;
    };
    let pilot_seconds = started.elapsed().as_secs_f64();
    let memory = PilotMemory {
        before,
        after: peak_resident_bytes().unwrap_or(before),
    };
    let measured: Vec<(usize, PilotRun)> = samples
        .iter()
        .map(|sample| sample.job_index)
        .zip(runs.iter().copied())
        .collect();
    let forecasts: Vec<Forecast> = estimates
        .iter()
        .map(|estimate| {
            Forecast::of(
                estimate,
                &measured,
                sample_of,
                memory,
                ask.files,
                super::since_start(),
            )
        })
        .collect();
    let least_share = runs.iter().map(|run| run.share).fold(1.0, f64::min);
    let pilot = format!(
        "a pilot of {} simulation{} took {pilot_seconds:.1} s{}",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
        if least_share < 1.0 {
            format!(
                ", cut at {:.0}% of the operations (a storm after that is not in it)",
                least_share * 100.0
            )
        } else {
            String::new()
        }
    );
    let text = match forecasts.as_slice() {
        [least, most, ..] => format!(
            "{} ({} if every cell settles at once, {} if none does)",
            about(&Forecast {
                seconds: (least.seconds * most.seconds).sqrt(),
                bytes: most.bytes,
            }),
            about(least),
            about(most)
        ),
        [one] => about(one),
        [] => return,
    };
    super::report(format_args!(
        "{label}: forecast: {text}, from the command's start to its end; {pilot}"
    ));
}

/// Runs one scenario (and its replications, with `[risk]`) and writes its folder as a whole:
/// into a staging folder, put in place of the earlier result only when every file is written.
/// Returns how many of its claims did not hold; `None` if its replications did not run
/// (reported).
fn run_one(
    scenario: &Scenario,
    path: &Path,
    overrides: &[Override],
    args: &RunArgs,
    mode: Mode,
) -> io::Result<Option<usize>> {
    let mut formats = if args.no_charts {
        vec![]
    } else {
        args.format.clone()
    };
    formats.sort();
    formats.dedup();
    let ask = ForecastAsk {
        asked: args.forecast,
        files: Files::with_charts(formats.len()),
    };
    announce_forecast(
        &path.display().to_string(),
        &[Estimate::of(scenario, rayon::current_num_threads())],
        || Some(Sample::every_policy(scenario)),
        |index| index,
        ask,
    );
    let staged = StagedFolder::create(&args.out.join(scenario.name.as_str()), "summary.json")?;
    let folder = staged.path();
    let progress = Progress::start(scenario, mode);
    let started = Instant::now();
    let make_observer = |index: usize| -> io::Result<RunObserver> {
        let trace = if args.trace {
            let name = scenario.policy[index].name.get_ref();
            Some(
                TraceWriter::create(folder, name, index)
                    .map_err(|error| with_path(error, staged.target()))?,
            )
        } else {
            None
        };
        Ok(RunObserver {
            trace,
            simulated: Arc::clone(&progress.simulated[index]),
        })
    };
    let observers: Vec<RunObserver> = (0..scenario.policy.len())
        .map(make_observer)
        .collect::<io::Result<_>>()?;
    let outcome = run_scenario(scenario, observers);
    let wall = started.elapsed();
    progress.stop();
    // Nothing is written of a run whose simulated time stopped: the staged folder goes.
    let (run, observers) =
        outcome.map_err(|stalled| io::Error::other(format!("{}: {stalled}", scenario.name)))?;

    for artifact in ARTIFACTS.iter().filter(|artifact| (artifact.written)(&run)) {
        staged.write(artifact.name, &(artifact.render)(&run))?;
    }
    if args.trace {
        let traces = observers
            .into_iter()
            .map(|observer| observer.trace.expect("--trace gives every policy a writer"))
            .collect();
        finish_trace(&folder.join("trace.csv"), traces)
            .map_err(|error| with_path(error, &staged.target().join("trace.csv")))?;
    }
    write_charts(&run, &staged, &formats)?;
    let page = report_html(&run).map_err(|error| {
        io::Error::other(format!(
            "{}: {error}",
            staged.target().join("report.html").display()
        ))
    })?;
    staged.write("report.html", &page)?;
    let replicated = match &scenario.risk {
        Some(risk) => {
            let replications = risk.get_ref().replications.get() as u32;
            match replications_of(
                path,
                overrides,
                replications,
                Shard::WHOLE,
                args.no_cost_limit,
                ask,
            )? {
                Some(replicated) => {
                    let (files, text, failed) = replicated.files(&formats)?;
                    for (name, bytes) in &files {
                        staged.write(name, bytes)?;
                    }
                    Some((text, failed))
                }
                None => return Ok(None),
            }
        }
        None => None,
    };
    let target = staged.target().to_path_buf();
    commit(staged)?;
    let mut failed_claims = print_table(&run, &target, &formats)?;
    if let Some((text, failed)) = replicated {
        write!(io::stdout(), "{text}")?;
        writeln!(
            io::stdout(),
            "  risk report: {}",
            target.join("risk.html").display()
        )?;
        failed_claims += failed;
    }
    if args.stats {
        print_stats(&run, wall)?;
    }
    Ok(Some(failed_claims))
}

/// Draws every chart in every format (each once; none for no formats), in parallel.
/// Commits a result folder, warning on stderr about every hidden folder that could not be
/// removed (the result is written all the same, so the exit code does not change).
pub(super) fn commit(staged: StagedFolder) -> io::Result<()> {
    for leftover in staged.commit()? {
        eprintln!("retrystorm: warning: {leftover}");
    }
    Ok(())
}

fn write_charts(run: &ScenarioRun, staged: &StagedFolder, formats: &[Format]) -> io::Result<()> {
    let jobs: Vec<(Chart, Format)> = Chart::ALL
        .iter()
        .flat_map(|&chart| formats.iter().map(move |&format| (chart, format)))
        .collect();
    let charts = Charts::of(run);
    jobs.par_iter().try_for_each(|&(chart, format)| {
        let name = format!("{}.{}", chart.name(), format.extension());
        let bytes = charts.render(chart, format).map_err(|error| {
            io::Error::other(format!(
                "{}: {error}",
                staged.target().join(&name).display()
            ))
        })?;
        staged.write(&name, &bytes)
    })
}

fn with_path(error: io::Error, path: &Path) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

/// Traces attempts (with `--trace`) and reports simulated time for the progress bar.
struct RunObserver {
    trace: Option<TraceWriter>,
    simulated: Arc<AtomicU64>,
}

impl Observer for RunObserver {
    fn hears_attempts(&self) -> bool {
        self.trace.is_some()
    }

    fn attempt(&mut self, record: &AttemptRecord) {
        if let Some(trace) = &mut self.trace {
            trace.attempt(record);
        }
    }

    fn progress(&mut self, now: Micros) {
        self.simulated.store(now, Ordering::Relaxed);
    }
}

/// Progress on stderr: a bar on a terminal, a line every few seconds elsewhere.
struct Progress {
    simulated: Vec<Arc<AtomicU64>>,
    painter: Painter,
}

impl Progress {
    fn start(scenario: &Scenario, mode: Mode) -> Progress {
        let simulated: Vec<Arc<AtomicU64>> = scenario
            .policy
            .iter()
            .map(|_| Arc::new(AtomicU64::new(0)))
            .collect();
        let times = simulated.clone();
        let name = scenario.name.to_string();
        let duration = scenario.duration.get_ref().micros().max(1);
        // After `duration` the run drains: it goes on until the last operation ends.
        let drain = scenario
            .policy
            .iter()
            .map(|policy| longest_operation(scenario, policy))
            .max()
            .unwrap_or(0);
        let width = name.len() + 80;
        let painter = Painter::start(mode, Duration::from_millis(200), width, move |elapsed| {
            let times: Vec<u64> = times
                .iter()
                .map(|time| time.load(Ordering::Relaxed))
                .collect();
            // Policies run a few at a time: the progress is their mean.
            let fraction = times
                .iter()
                .map(|&time| (time as f64 / duration as f64).min(1.0))
                .sum::<f64>()
                / times.len().max(1) as f64;
            let draining = times
                .iter()
                .max()
                .map_or(0, |&latest| latest.saturating_sub(duration));
            let phase = if draining > 0 {
                format!(
                    " draining: +{:.1}s of at most +{:.1}s",
                    draining as f64 / 1e6,
                    drain as f64 / 1e6
                )
            } else {
                String::new()
            };
            match mode {
                Mode::Bar => {
                    let filled = (fraction * 30.0) as usize;
                    format!(
                        "{name} [{}{}] {:>3.0}%{phase}",
                        "=".repeat(filled),
                        " ".repeat(30 - filled),
                        fraction * 100.0
                    )
                }
                Mode::Lines(_) => format!(
                    "{name}: {:.0}% of {:.1}s simulated ({} polic{}){phase}; {}",
                    fraction * 100.0,
                    duration as f64 / 1e6,
                    times.len(),
                    if times.len() == 1 { "y" } else { "ies" },
                    timing(elapsed, fraction)
                ),
            }
        });
        Progress { simulated, painter }
    }

    fn stop(self) {
        self.painter.stop();
    }
}

/// The summary table, the lesson's claims, and where the report and the charts are; returns
/// how many claims did not hold.
fn print_table(run: &ScenarioRun, folder: &Path, formats: &[Format]) -> io::Result<usize> {
    writeln!(
        io::stdout(),
        "{}: results in {}",
        run.scenario.name,
        folder.display()
    )?;
    let changes = &run.scenario.command_line_changes;
    if !changes.is_empty() {
        let changes: Vec<String> = changes
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        writeln!(
            io::stdout(),
            "  changed on the command line (policies marked *): --set {}",
            changes.join(", --set ")
        )?;
    }
    let mut header: Vec<String> = [
        "policy",
        "operations",
        "success",
        "goodput/s",
        "amplif.",
        "dup.writes",
        "unknown",
        "p99 ms",
        "peak in",
        "peak after",
        "recovery",
    ]
    .iter()
    .map(|name| name.to_string())
    .collect();
    // Users who retry by hand: an intent spans operations, and a duplicate is an intent's.
    let manual = run.has_manual_retries();
    if manual {
        header[5] = "dup.writes/intent".into();
        header.extend(["intents", "by hand", "intent ok"].map(String::from));
    }
    // In a topology, the load on every service below the entry, per user operation.
    let below_entry: Vec<usize> = (0..run.model.services.len())
        .filter(|&index| run.has_topology() && index != usize::from(run.model.entry))
        .collect();
    header.extend(
        below_entry
            .iter()
            .map(|&index| format!("{} amplif.", run.model.services[index].name)),
    );
    let rows: Vec<Vec<String>> = run
        .policies
        .iter()
        .enumerate()
        .map(|(index, policy)| {
            let summary = &policy.summary;
            let mut row = vec![
                if run.scenario.changed_on_command_line(index) {
                    format!("{} *", policy.name)
                } else {
                    policy.name.clone()
                },
                summary.operations.to_string(),
                format!("{:.2}%", summary.success_rate * 100.0),
                format!("{:.1}", summary.goodput_rps),
                format!("{:.3}", summary.amplification),
                summary.duplicate_writes.to_string(),
                summary.unknown_results.to_string(),
                summary
                    .p99_ms
                    .map_or_else(|| "-".into(), |p99| format!("{p99:.1}")),
                if summary.peak_incident_rps.is_nan() {
                    "-".into()
                } else {
                    format!("{:.0}", summary.peak_incident_rps)
                },
                format!("{:.0}", summary.peak_after_rps),
                summary.recovery_s.to_string(),
            ];
            if manual {
                let intents = &summary.intents;
                row.extend([
                    intents.started.to_string(),
                    intents.manual_retries.to_string(),
                    format!(
                        "{:.2}%",
                        summary.metric("intent_success_rate").unwrap_or(f64::NAN) * 100.0
                    ),
                ]);
            }
            row.extend(
                below_entry
                    .iter()
                    .map(|&index| format!("{:.3}", policy.services[index].amplification)),
            );
            row
        })
        .collect();
    print_columns(&header, &rows, 1)?;
    print_operations(run)?;
    // What each tier does: a tier retries only if its file (or an import) says so.
    let tiers = effective_policies(&run.scenario).tiers;
    if !tiers.is_empty() {
        writeln!(io::stdout(), "  tiers:")?;
        for line in &tiers {
            writeln!(io::stdout(), "    {line}")?;
        }
    }
    let claims = evaluate(run);
    let failed_claims = claims.iter().filter(|claim| !claim.held).count();
    if !claims.is_empty() {
        let held = claims.iter().filter(|claim| claim.held).count();
        writeln!(
            io::stdout(),
            "  lesson: {held} of {} claims held",
            claims.len()
        )?;
        for claim in claims {
            writeln!(io::stdout(), "    {claim}")?;
        }
    }
    writeln!(
        io::stdout(),
        "  report: {}",
        folder.join("report.html").display()
    )?;
    let charts = if formats.is_empty() {
        "none (--no-charts)".to_string()
    } else {
        let names: Vec<&str> = Chart::ALL.iter().map(|chart| chart.name()).collect();
        let extensions: Vec<String> = formats
            .iter()
            .map(|format| format!(".{}", format.extension()))
            .collect();
        format!("{} ({})", names.join(", "), extensions.join(", "))
    };
    writeln!(io::stdout(), "  charts: {charts}")?;
    Ok(failed_claims)
}

/// Prints `header` and `rows` as aligned columns, indented, the first `left` columns to the left
/// and the others (numbers) to the right.
fn print_columns(header: &[String], rows: &[Vec<String>], left: usize) -> io::Result<()> {
    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            rows.iter()
                .map(|row| row[column].chars().count())
                .chain([header[column].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(column, (cell, width))| {
                if column < left {
                    format!("{cell:<width$}")
                } else {
                    format!("{cell:>width$}")
                }
            })
            .collect();
        writeln!(io::stdout(), "  {}", padded.join("  "))
    };
    line(header)?;
    for row in rows {
        line(row)?;
    }
    Ok(())
}

/// With two operations or more, each policy's results per operation (`summary.json`'s
/// `per_operation`): what the users of each got, and the load each put on the system.
fn print_operations(run: &ScenarioRun) -> io::Result<()> {
    if run
        .policies
        .iter()
        .all(|policy| policy.summary.by_operation.is_empty())
    {
        return Ok(());
    }
    writeln!(io::stdout(), "  per operation:")?;
    let columns: Vec<(&str, &OperationColumn)> = OPERATION_COLUMNS
        .iter()
        .filter_map(|column| column.terminal.map(|header| (header, column)))
        .collect();
    let header: Vec<String> = ["policy", "operation"]
        .into_iter()
        .chain(columns.iter().map(|(header, _)| *header))
        .map(String::from)
        .collect();
    let rows: Vec<Vec<String>> = run
        .policies
        .iter()
        .flat_map(|policy| {
            policy.summary.by_operation.iter().map(|operation| {
                [policy.name.clone(), operation.name.clone()]
                    .into_iter()
                    .chain(
                        columns
                            .iter()
                            .map(|(_, column)| column.cell(operation, "-")),
                    )
                    .collect()
            })
        })
        .collect();
    print_columns(&header, &rows, 2)
}

fn print_stats(run: &ScenarioRun, wall: Duration) -> io::Result<()> {
    let mut events = 0;
    for policy in &run.policies {
        let seconds = policy.wall.as_secs_f64();
        let measurements = &policy.measurements;
        events += measurements.events;
        writeln!(
            io::stdout(),
            "stats: {}: {} events in {:.3} s, {:.2} million events/s on one core, {:.2} events per operation, {} timers cancelled; peak in flight: {} operations, {} attempts",
            policy.name,
            measurements.events,
            seconds,
            measurements.events as f64 / seconds.max(1e-9) / 1e6,
            measurements.events as f64 / (policy.summary.operations.max(1) as f64),
            measurements.cancelled_timers,
            measurements.peak_operations_in_flight,
            measurements.peak_attempts_in_flight,
        )?;
    }
    writeln!(
        io::stdout(),
        "stats: total: {events} events in {:.3} s wall ({} threads), {:.2} million events/s; peak memory {}",
        wall.as_secs_f64(),
        rayon::current_num_threads(),
        events as f64 / wall.as_secs_f64().max(1e-9) / 1e6,
        peak_memory().unwrap_or_else(|| "unavailable".into()),
    )
}

/// Peak resident memory of this process ([`peak_resident_bytes`]).
fn peak_memory() -> Option<String> {
    peak_resident_bytes().map(|bytes| format!("{:.1} MiB", bytes / 1024.0 / 1024.0))
}

/// Whether `--set SET=...` gives the `[uncertain]` input `key`: the same key, or, for a key of
/// every policy (`policy.cap`), the same field of one policy (`policy.0.cap`), as a sweep's
/// reproducing command sets the tuned policy's.
fn gives(set: &str, key: &str) -> bool {
    set == key
        || key.strip_prefix("policy.").is_some_and(|field| {
            set.strip_prefix("policy.")
                .and_then(|rest| rest.split_once('.'))
                .is_some_and(|(_, rest)| rest == field)
        })
}

#[cfg(test)]
mod tests {
    use super::gives;

    /// A sweep of a scenario of several policies sets the tuned policy's key (`policy.0.cap`)
    /// where `[uncertain]` names every policy's (`policy.cap`); its reproducing command must
    /// still count as giving the input. Other keys must match exactly.
    #[test]
    fn a_set_gives_the_same_key_or_one_policys_field() {
        assert!(gives("upstream.workers", "upstream.workers"));
        assert!(gives("policy.0.cap", "policy.cap"));
        assert!(gives("policy.full jitter.cap", "policy.cap"));
        assert!(gives(
            "policy.1.controls.retry-budget.percent",
            "policy.controls.retry-budget.percent"
        ));
        assert!(!gives("policy.0.base", "policy.cap"));
        assert!(!gives("upstream.workers", "service.api.workers"));
        assert!(!gives("policy.cap", "policy.0.cap"));
    }
}
