//! `retrystorm decide`: the retry decision once, or a batch of JSON lines.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{ArgGroup, Args};
use retrystorm::retry::backoff::Jitter;
use retrystorm::retry::decide::{Case, run_batch};
use retrystorm::retry::decision::{
    DEFAULT_BASE_MS, DEFAULT_CAP_MS, DEFAULT_MAX_ATTEMPTS, DEFAULT_MULTIPLIER, DEFAULT_RANDOM,
    RetryInput, known_method,
};
use retrystorm::retry::retry_after::RetryAfterMode;

/// The decision's inputs. Numbers follow the article's JavaScript semantics: fractions are
/// allowed, and NaN or inf are answered with the reason the procedure gives.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("case").multiple(true)), args_override_self = true)]
pub struct DecideArgs {
    /// HTTP method of the operation, case-sensitive: GET, HEAD, POST, PUT, DELETE, CONNECT,
    /// OPTIONS, TRACE or PATCH (GET, HEAD, PUT, DELETE, OPTIONS and TRACE are idempotent).
    #[arg(long, required_unless_present = "batch", group = "case", value_parser = method)]
    method: Option<String>,
    /// HTTP status of the failed attempt; without a response, --transport-error instead (one
    /// of the two is needed).
    #[arg(long, allow_hyphen_values = true, group = "case")]
    status: Option<f64>,
    /// The attempt failed without a response (timeout, reset).
    #[arg(long, group = "case")]
    transport_error: bool,
    /// 0-based index of the attempt that failed.
    #[arg(
        long,
        required_unless_present = "batch",
        allow_hyphen_values = true,
        group = "case"
    )]
    attempt: Option<f64>,
    /// Current time in milliseconds (Unix time when an HTTP-date Retry-After is given).
    #[arg(
        long,
        required_unless_present = "batch",
        allow_hyphen_values = true,
        group = "case"
    )]
    now_ms: Option<f64>,
    /// The operation's deadline in milliseconds, on the clock of --now-ms.
    #[arg(
        long,
        required_unless_present = "batch",
        allow_hyphen_values = true,
        group = "case"
    )]
    deadline_ms: Option<f64>,
    /// Base delay in milliseconds.
    #[arg(long, default_value_t = DEFAULT_BASE_MS, allow_hyphen_values = true, group = "case")]
    base_ms: f64,
    /// Cap of the exponential backoff in milliseconds.
    #[arg(long, default_value_t = DEFAULT_CAP_MS, allow_hyphen_values = true, group = "case")]
    cap_ms: f64,
    /// Retry budget, compared with --attempt.
    #[arg(long, default_value_t = DEFAULT_MAX_ATTEMPTS, allow_hyphen_values = true, group = "case")]
    max_attempts: f64,
    /// Random unit for the jitter, clamped to [0, 1].
    #[arg(long, default_value_t = DEFAULT_RANDOM, allow_hyphen_values = true, group = "case")]
    random: f64,
    /// Growth of the backoff per retry: min(cap, base * multiplier^attempt).
    #[arg(long, default_value_t = DEFAULT_MULTIPLIER, allow_hyphen_values = true, group = "case")]
    multiplier: f64,
    /// Retry-After of the failed attempt, in milliseconds.
    #[arg(long, allow_hyphen_values = true, group = "case")]
    retry_after_ms: Option<f64>,
    /// Retry-After as the header carried it: delay-seconds ("120") or an HTTP-date, measured
    /// from --now-ms as Unix time.
    #[arg(long, conflicts_with = "retry_after_ms", group = "case")]
    retry_after_header: Option<String>,
    /// The operation carries an idempotency key that the server honours.
    #[arg(long, group = "case")]
    idempotency_key: bool,
    /// The client can ask a status endpoint what happened to the operation.
    #[arg(long, group = "case")]
    status_endpoint: bool,
    /// The delay chosen before the previous retry (decorrelated jitter grows from it).
    #[arg(long, allow_hyphen_values = true, group = "case")]
    previous_delay_ms: Option<f64>,
    /// Random unit for honor-jittered's spread above Retry-After, clamped to [0, 1].
    #[arg(long, default_value_t = DEFAULT_RANDOM, allow_hyphen_values = true, group = "case")]
    retry_after_random: f64,
    /// Jitter strategy: none, full, equal, decorrelated, grpc, linkerd or resilience4j.
    #[arg(long, default_value_t = Jitter::Full, group = "case")]
    jitter: Jitter,
    /// Retry-After handling: honor, ignore, honor-jittered or pushback.
    #[arg(long, default_value_t = RetryAfterMode::Honor, group = "case")]
    retry_after_mode: RetryAfterMode,
    /// Read one JSON object per line from stdin (fields named as the flags, in snake_case) and
    /// write one result line per input line.
    #[arg(long, conflicts_with = "case")]
    batch: bool,
}

/// `--method`'s value: a method of [`retrystorm::retry::decision::HTTP_METHODS`] spelled exactly, else clap's usage error
/// (exit 2) with the valid list.
fn method(text: &str) -> Result<String, String> {
    known_method(text).map(str::to_string)
}

impl DecideArgs {
    /// The case the flags describe; `None` in batch mode.
    fn case(&self) -> Option<Case> {
        let input = RetryInput {
            status: self.status,
            transport_error: self.transport_error,
            base_ms: self.base_ms,
            cap_ms: self.cap_ms,
            max_attempts: self.max_attempts,
            random: self.random,
            multiplier: self.multiplier,
            retry_after_ms: self.retry_after_ms,
            idempotency_key: self.idempotency_key,
            status_endpoint: self.status_endpoint,
            previous_delay_ms: self.previous_delay_ms,
            retry_after_random: self.retry_after_random,
            ..RetryInput::new(
                self.method.as_deref()?,
                self.attempt?,
                self.now_ms?,
                self.deadline_ms?,
            )
        };
        Some(Case {
            input,
            retry_after_header: self.retry_after_header.clone(),
            jitter: self.jitter,
            retry_after_mode: self.retry_after_mode,
        })
    }
}

/// Runs `decide`.
pub fn decide(args: &DecideArgs) -> io::Result<ExitCode> {
    let stdout = io::stdout().lock();
    match args.case() {
        // The article's procedure would answer `not-transient`: a failure that is neither a
        // status nor a transport error is a question left out, not a signal.
        Some(_) if args.status.is_none() && !args.transport_error => {
            super::report(format_args!(
                "decide needs what the failed attempt got: --status N (the HTTP status of its response) or --transport-error (no response: a timeout or a reset)"
            ));
            Ok(ExitCode::from(2))
        }
        Some(case) => {
            let mut stdout = stdout;
            writeln!(stdout, "{}", case.decide().to_json())?;
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let summary = run_batch(io::stdin().lock(), io::BufWriter::new(stdout))?;
            if summary.errors > 0 {
                super::report(format_args!(
                    "{} of {} lines could not be read (see their \"error\" lines)",
                    summary.errors,
                    summary.errors + summary.decided
                ));
                return Ok(ExitCode::FAILURE);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
