//! Same scenario and seed, same bytes: across runs, thread counts and policies.

use std::path::{Path, PathBuf};
use std::process::Command;

use retrystorm::output::{summary_csv, timeseries_csv};

use crate::support::{run, scenario};

const SCENARIO: &str = r#"
name = "determinism"
duration = "5s"
bucket = "500ms"
[clients]
count = 3000
rate = 1.0
deadline = "3s"
attempt_timeout = "500ms"
[[clients.operations]]
name = "read"
weight = 3
[[clients.operations]]
name = "pay"
method = "POST"
idempotency_key = true
[network]
latency = { distribution = "lognormal", mean = "3ms", sigma = 0.6 }
response_loss = 0.02
[upstream]
workers = 20
service_time = { distribution = "exponential", mean = "8ms" }
queue_limit = 100
retry_after = "200ms"
errors = { rate = 0.01, status = 503 }
capacity = [ { at = "2s", factor = 1.0 }, { at = "2s", factor = 0.2 }, { at = "3s", factor = 1.0 } ]
[[policy]]
name = "none"
jitter = "none"
[[policy]]
name = "full"
[[policy]]
name = "decorrelated"
jitter = "decorrelated"
retry_after = "honor-jittered"
"#;

#[test]
fn two_runs_give_identical_bytes() {
    let scenario = scenario(SCENARIO);
    let (first, second) = (run(&scenario), run(&scenario));
    assert_eq!(timeseries_csv(&first), timeseries_csv(&second));
    assert_eq!(summary_csv(&first), summary_csv(&second));
}

#[test]
fn every_policy_sees_the_same_arrivals() {
    let run = run(&scenario(SCENARIO));
    let first_attempts = |index: usize| -> Vec<u64> {
        run.policies[index]
            .measurements
            .buckets
            .iter()
            .take(10)
            .map(|b| b.first_attempts)
            .collect()
    };
    assert!(first_attempts(0).iter().sum::<u64>() > 10_000);
    assert_eq!(first_attempts(0), first_attempts(1));
    assert_eq!(first_attempts(0), first_attempts(2));
    // ... while their retries differ.
    let retries = |index: usize| -> u64 {
        run.policies[index]
            .measurements
            .buckets
            .iter()
            .map(|b| b.retries)
            .sum()
    };
    assert_ne!(retries(0), retries(1));
}

#[test]
fn a_different_seed_gives_different_arrivals() {
    let run_a = run(&scenario(SCENARIO));
    let run_b = run(&scenario(
        &SCENARIO.replace("name = \"determinism\"", "name = \"determinism\"\nseed = 2"),
    ));
    assert_ne!(timeseries_csv(&run_a), timeseries_csv(&run_b));
}

fn run_binary(scenario: &Path, out: &Path, threads: &str) {
    let status = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(["run", "--trace", "--out"])
        .arg(out)
        .arg(scenario)
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .expect("retrystorm runs");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
}

#[test]
fn one_thread_and_two_threads_write_the_same_files() {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("determinism-threads");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let scenario_path = root.join("scenario.toml");
    std::fs::write(&scenario_path, SCENARIO).unwrap();
    // A topology too: several services, each with its own streams, and downstream calls.
    let topology = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/retry-layers.toml");
    for (scenario, name, per_service) in [
        (scenario_path.as_path(), "determinism", None),
        (topology.as_path(), "retry-layers", Some("services.csv")),
    ] {
        run_binary(scenario, &root.join("one"), "1");
        run_binary(scenario, &root.join("two"), "2");
        for file in [
            "timeseries.csv",
            "summary.csv",
            "summary.json",
            "scenario.toml",
            "trace.csv",
        ]
        .into_iter()
        .chain(per_service)
        {
            let one = std::fs::read(root.join("one").join(name).join(file)).unwrap();
            let two = std::fs::read(root.join("two").join(name).join(file)).unwrap();
            assert!(!one.is_empty(), "{name}/{file} is empty");
            assert!(one == two, "{name}/{file} differs between 1 and 2 threads");
        }
    }
}

/// Issue 25: every draw is addressed by its request and its purpose, so a feature that draws
/// for a purpose of its own moves no other draw. A request loss of 1e-15 draws a coin for every
/// request and (with about 10^5 requests here, a chance of 10^-10) loses none: every output is
/// the same as without it. When draws were taken from shared streams in event order, that coin
/// shifted every latency drawn after it, and with them every number of the run.
#[test]
fn a_purpose_that_draws_moves_no_other_draw() {
    let plain = run(&scenario(SCENARIO));
    let coin = run(&scenario(&SCENARIO.replace(
        "response_loss = 0.02",
        "response_loss = 0.02\nrequest_loss = 1e-15",
    )));
    assert!(plain.policies[0].measurements.operations > 10_000);
    assert_eq!(timeseries_csv(&plain), timeseries_csv(&coin));
    assert_eq!(summary_csv(&plain), summary_csv(&coin));
}

/// The engine handles refusals and answers ahead of their time when no observer hears attempts
/// one by one (an outage that refuses, with a constant latency whose messages share one lane of
/// the event queue): the results are those of handling every step as an event, as it does for
/// a trace, and only the events are fewer.
#[test]
fn handling_steps_ahead_changes_no_result() {
    let text = SCENARIO
        .replace(
            "latency = { distribution = \"lognormal\", mean = \"3ms\", sigma = 0.6 }",
            "latency = \"3ms\"",
        )
        .replace(
            "queue_limit = 100",
            "queue_limit = 100\noutage = \"reject\"",
        )
        .replace("factor = 0.2", "factor = 0.0");
    let scenario = scenario(&text);
    let quiet = run(&scenario);
    let (heard, _) = crate::support::run_traced(&scenario);
    for (quiet, heard) in quiet.policies.iter().zip(&heard.policies) {
        assert!(quiet.measurements.events < heard.measurements.events);
        let (mut quiet, mut heard) = (quiet.measurements.clone(), heard.measurements.clone());
        (quiet.events, heard.events) = (0, 0);
        (quiet.cancelled_timers, heard.cancelled_timers) = (0, 0);
        (
            quiet.peak_operations_in_flight,
            heard.peak_operations_in_flight,
        ) = (0, 0);
        (quiet.peak_attempts_in_flight, heard.peak_attempts_in_flight) = (0, 0);
        assert_eq!(format!("{quiet:?}"), format!("{heard:?}"));
    }
}
