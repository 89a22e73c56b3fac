//! Command-line interface: flags in, a validated [`retrystorm`] call, an exit code out.
//!
//! Exit codes: 0 success; 1 the command ran but some input was bad (a batch line that could not
//! be read, a scenario that is not valid) or output failed; 2 the command line itself was wrong
//! (clap's usage errors); 3 `run` wrote every result but a claim of a scenario's lesson did not
//! hold (not with `--no-fail-on-claims`); 128 plus the signal's number after SIGINT, SIGTERM
//! or SIGHUP.
//!
//! Every error and warning reaches the terminal through [`report`] (and clap's usage errors
//! through the same escaping), which escapes control characters: a message echoing user text
//! cannot move the cursor, clear the screen or recolour the terminal.

mod decide;
mod import;
mod progress;
mod run;
mod study;
mod sweep;

use std::fmt;
use std::io;
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Instant;

use clap::{Parser, Subcommand};
use retrystorm::base::escape;
use retrystorm::output::staging::remove_on_signals;

/// A deterministic retry-storm simulator.
#[derive(Debug, Parser)]
#[command(
    name = "retrystorm",
    version,
    after_help = "Exit codes: 0 success; 1 invalid input (a scenario, a batch line) or an output error; 2 a wrong command line; 3 a claim of a scenario's lesson did not hold (`run`, with replications too, and `map`, unless --no-fail-on-claims); 128 + N after signal N (SIGINT, SIGTERM, SIGHUP)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Simulate scenarios and write their results (CSV, JSON, the resolved scenario).
    ///
    /// Example: retrystorm run scenarios/thundering-herd.toml
    Run(run::RunArgs),
    /// Validate scenarios without running them.
    Check(run::CheckArgs),
    /// Sweep a grid of parameters with several seeds per point; recommend settings.
    ///
    /// Example: retrystorm sweep scenarios/tuning.toml --grid policy.base=50ms,100ms,200ms
    /// --grid policy.max_attempts=2..5 --require 'success_rate>=0.99' --minimize p99_ms
    Sweep(sweep::SweepArgs),
    /// Map where a system stops recovering: the probability of recovering from the incident
    /// over two settings, one panel per policy, with adaptive replications.
    ///
    /// Example: retrystorm map scenarios/tipping-point.toml
    Map(study::MapArgs),
    /// Combine the output folders of a sharded sweep, map or replications into the files of
    /// a whole one.
    Merge(sweep::MergeArgs),
    /// Run the source article's retry decision once and print one JSON object.
    ///
    /// Example (the article's worked example): retrystorm decide --method POST --status 503
    /// --attempt 2 --now-ms 1000 --deadline-ms 3000 --idempotency-key
    Decide(decide::DecideArgs),
    /// Read a client config (gRPC, Envoy, Istio, Linkerd, resilience4j, AWS SDK) and print the
    /// equivalent [[policy]] table, with notes on how it was mapped.
    ///
    /// Example: retrystorm import scenarios/configs/grpc-service-config.json
    Import(import::ImportArgs),
}

/// When the command started: a forecast counts its wall time from there.
static STARTED: OnceLock<Instant> = OnceLock::new();

/// Seconds since the command started.
pub(crate) fn since_start() -> f64 {
    STARTED.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// Parses the command line and runs the command.
pub fn run() -> ExitCode {
    STARTED.get_or_init(Instant::now);
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go to stdout as clap writes them; a usage error echoes the command
        // line, so it is escaped as every other error is.
        Err(error) if error.use_stderr() => {
            eprint!("{}", escape::terminal(&error.render().to_string()));
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
        }
        Err(error) => error.exit(),
    };
    let writes_folders = matches!(
        cli.command,
        Command::Run(_) | Command::Sweep(_) | Command::Map(_) | Command::Merge(_)
    );
    if writes_folders && let Err(error) = remove_on_signals() {
        report(format_args!("cannot watch for interrupts: {error}"));
        return ExitCode::FAILURE;
    }
    let outcome = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Check(args) => run::check(&args),
        Command::Sweep(args) => sweep::sweep(&args),
        Command::Map(args) => study::map(&args),
        Command::Merge(args) => sweep::merge_shards(&args),
        Command::Decide(args) => decide::decide(&args),
        Command::Import(args) => import::import(&args),
    };
    match outcome {
        Ok(code) => code,
        // A reader that closed the pipe early (`| head`) is not an error worth a message.
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(error) => {
            report(format_args!("{error}"));
            ExitCode::FAILURE
        }
    }
}

/// Prints `message` to stderr as the program's error or warning, after `retrystorm: `, with its
/// control characters escaped ([`escape::terminal`]).
pub(crate) fn report(message: impl fmt::Display) {
    eprintln!("retrystorm: {}", escape::terminal(&message.to_string()));
}
