//! `retrystorm run` and `retrystorm check` end to end.

use std::process::Command;

use crate::support::{fresh_folder, retrystorm};

/// Whether `folder` holds nothing.
fn is_empty(folder: &std::path::Path) -> bool {
    std::fs::read_dir(folder).unwrap().next().is_none()
}

/// A sweep of two points and one seed of the contention scenario, without charts.
const SMALL_SWEEP: [&str; 9] = [
    "sweep",
    "scenarios/contention.toml",
    "--policy",
    "full jitter",
    "--grid",
    "policy.base=5ms,10ms",
    "--seeds",
    "1",
    "--no-charts",
];

#[test]
fn the_bundled_scenario_runs_and_writes_every_file() {
    let out = fresh_folder("run-thundering-herd");
    let output = retrystorm(&[
        "run",
        "scenarios/thundering-herd.toml",
        "--out",
        out.to_str().unwrap(),
        "--stats",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    for expected in [
        "no jitter",
        "full jitter",
        "held: full jitter beats no jitter on recovery_s",
        "stats: total:",
        "million events/s",
        "peak memory",
    ] {
        assert!(stdout.contains(expected), "{expected:?} not in {stdout}");
    }
    let folder = out.join("thundering-herd");
    let timeseries = std::fs::read_to_string(folder.join("timeseries.csv")).unwrap();
    let header = timeseries.lines().next().unwrap();
    for column in [
        "policy",
        "t_s",
        "attempts",
        "first_attempts",
        "retries",
        "ok",
        "rejected_429",
        "rejected_503",
        "timeouts",
        "succeeded",
        "failed",
        "duplicate_writes",
        "queue_len",
        "capacity_rps",
        "p50_ms",
        "p99_ms",
    ] {
        assert!(
            header.split(',').any(|name| name == column),
            "timeseries lacks {column}"
        );
    }
    // 30 s in 50 ms buckets, plus the drain, for each of two policies.
    assert!(timeseries.lines().count() > 2 * 600);
    let summary = std::fs::read_to_string(folder.join("summary.csv")).unwrap();
    assert_eq!(summary.lines().count(), 3);
    for column in [
        "policy",
        "operations",
        "succeeded",
        "success_rate",
        "attempts",
        "amplification",
        "duplicate_writes",
        "unknown_results",
        "p50_ms",
        "p99_ms",
        "max_ms",
        "goodput_rps",
        "peak_incident_rps",
        "peak_after_rps",
        "incident_goodput_rps",
        "incident_failed",
        "wasted_work_s",
        "recovery_s",
    ] {
        assert!(
            summary
                .lines()
                .next()
                .unwrap()
                .split(',')
                .any(|name| name == column),
            "summary lacks {column}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(folder.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 2);
    // The report is one self-contained page: charts inline, nothing fetched.
    let report = std::fs::read_to_string(folder.join("report.html")).unwrap();
    assert!(report.starts_with("<!DOCTYPE html>") && report.trim_end().ends_with("</html>"));
    assert_eq!(
        report.matches("<svg").count(),
        4,
        "the overview and three charts: every operation is a GET, so duplicates has nothing to show"
    );
    assert!(report.contains("<p class=\"meta\">No duplicates chart: nothing can be duplicated: every operation is a GET, which is idempotent, so no retry can write twice.</p>"));
    for policy in [
        "no jitter",
        "full jitter",
        "What the numbers mean",
        "Lesson",
    ] {
        assert!(report.contains(policy), "report lacks {policy}");
    }
    for external in ["<script", "<link", "src=\"http", "url(http", "@import"] {
        assert!(
            !report.contains(external),
            "report loads something: {external}"
        );
    }
    // The resolved scenario is itself a valid scenario.
    let check = retrystorm(&["check", folder.join("scenario.toml").to_str().unwrap()]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    // One service: no per-service file.
    assert!(!folder.join("services.csv").exists());
}

#[test]
fn a_topology_writes_its_services_and_the_table_shows_each_tiers_load() {
    let out = fresh_folder("run-retry-layers");
    let output = retrystorm(&[
        "run",
        "scenarios/retry-layers.toml",
        "--out",
        out.to_str().unwrap(),
        "--no-charts",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("api amplif.") && stdout.contains("db amplif."),
        "{stdout}"
    );
    let folder = out.join("retry-layers");
    let services = std::fs::read_to_string(folder.join("services.csv")).unwrap();
    let header: Vec<&str> = services.lines().next().unwrap().split(',').collect();
    for column in [
        "policy",
        "service",
        "t_s",
        "requests",
        "first_attempts",
        "retries",
        "timeouts",
        "received",
        "served",
        "rejected_overload",
        "downstream_failures",
        "queue_len",
        "busy",
        "capacity_rps",
        "wasted_work_s",
    ] {
        assert!(header.contains(&column), "services.csv lacks {column}");
    }
    let timeseries = std::fs::read_to_string(folder.join("timeseries.csv")).unwrap();
    // Every policy and service has the users' buckets: three services, two policies.
    assert_eq!(
        services.lines().count() - 1,
        3 * (timeseries.lines().count() - 1)
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(folder.join("summary.json")).unwrap()).unwrap();
    for policy in json.as_array().unwrap() {
        let blocks = policy["services"].as_array().unwrap();
        let names: Vec<&str> = blocks
            .iter()
            .map(|b| b["service"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["edge", "api", "db"]);
        // The entry's amplification is the users'.
        assert_eq!(blocks[0]["amplification"], policy["amplification"]);
        assert!(policy.get("upstream").is_none());
    }
    let summary = std::fs::read_to_string(folder.join("summary.csv")).unwrap();
    assert!(
        summary
            .lines()
            .next()
            .unwrap()
            .ends_with("events,amplification_edge,amplification_api,amplification_db")
    );
    let report = std::fs::read_to_string(folder.join("report.html")).unwrap();
    for part in [
        "<h2>What to look at</h2>\n<div class=\"header\">\n<p>retry-layers: ",
        "<h2>Glossary</h2>",
        "The overview: the charts below on one sheet",
        "<h2>Topology</h2>",
        "<h2>Services</h2>",
        ">db<",
        "only the clients retry",
    ] {
        assert!(report.contains(part), "report lacks {part}");
    }
    let check = retrystorm(&["check", "scenarios/retry-layers.toml"]);
    let stdout = String::from_utf8_lossy(&check.stdout);
    let mut lines = stdout.lines();
    assert_eq!(
        lines.next(),
        Some(
            "ok: scenarios/retry-layers.toml (retry-layers, 3 policies; clients -> edge; edge -> api; api -> db)"
        )
    );
    // 90,000 operations a policy; at least 2 events each (its start, and its request's
    // arrival at the edge, which may refuse it at once while the user learns the refusal as it
    // is sent) for the fewest arrivals (10 standard deviations, 3,001, fewer), 522,174 in all; with every send allowed, 2 client sends of
    // 1 + 4 * (1 + 4) requests where the tiers retry (two policies) and 2 of 3 where they do
    // not, 10 events a request at most, for the most arrivals: 84.0 million.
    assert!(
        lines
            .next()
            .is_some_and(|line| line
                .starts_with("  cost: 270,000 operations, 522,174 to 84.0 million events")),
        "{stdout}"
    );
}

#[test]
fn trace_has_one_row_per_attempt() {
    let out = fresh_folder("run-trace");
    let output = retrystorm(&[
        "run",
        "scenarios/thundering-herd.toml",
        "--out",
        out.to_str().unwrap(),
        "--trace",
        "--set",
        "duration=3s",
        "--set",
        "incident.start=1s",
        "--set",
        "clients.count=50",
        "--no-fail-on-claims",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let folder = out.join("thundering-herd");
    let trace = std::fs::read_to_string(folder.join("trace.csv")).unwrap();
    assert!(trace.starts_with(
        "policy,client,operation,attempt,send_ms,end_ms,outcome,status,retry_after_ms,next_delay_ms,reason\n"
    ));
    let summary = std::fs::read_to_string(folder.join("summary.csv")).unwrap();
    let column = summary
        .lines()
        .next()
        .unwrap()
        .split(',')
        .position(|name| name == "attempts")
        .unwrap();
    let attempts: u64 = summary
        .lines()
        .skip(1)
        .map(|line| line.split(',').nth(column).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(trace.lines().count() as u64 - 1, attempts);
    // No partial files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn seed_and_set_change_the_run() {
    let out = fresh_folder("run-seed");
    let run_with = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "scenarios/thundering-herd.toml",
            "--out",
            out.to_str().unwrap(),
            "--set",
            "duration=2s",
            "--set",
            "incident.start=1s",
            "--no-fail-on-claims",
        ];
        args.extend_from_slice(extra);
        assert!(retrystorm(&args).status.success());
        std::fs::read_to_string(out.join("thundering-herd/summary.csv")).unwrap()
    };
    let default = run_with(&[]);
    assert_eq!(run_with(&[]), default);
    assert_ne!(run_with(&["--seed", "7"]), default);
    let resolved = std::fs::read_to_string(out.join("thundering-herd/scenario.toml")).unwrap();
    assert!(resolved.contains("seed = 7"));
}

#[test]
fn check_reports_every_invalid_scenario_with_its_position() {
    let folder = fresh_folder("check");
    std::fs::create_dir_all(&folder).unwrap();
    let bad = folder.join("bad.toml");
    std::fs::write(&bad, "name = \"bad\"\nduration = \"1s\"\n[clients]\ncount = 0\nrate = 1.0\n[upstream]\nworkers = 1\nservice_time = \"1ms\"\n").unwrap();
    let output = retrystorm(&[
        "check",
        "scenarios/thundering-herd.toml",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stdout).contains("ok: scenarios/thundering-herd.toml"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bad.toml:4:9: 0 is out of range"),
        "{stderr}"
    );

    let missing = retrystorm(&["run", "no/such/file.toml"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("no/such/file.toml: cannot read the scenario")
    );
}

/// A reader that has gone (`| head -1` closes the pipe) ends the command quietly: exit 0, no
/// panic, and the results are written before anything is printed. The pipe is closed before
/// the first line, so the first write fails for certain.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    let out = fresh_folder("run-closed-stdout");
    for args in [
        vec!["run", "scenarios/contention.toml", "--no-charts", "--out"],
        [&SMALL_SWEEP[..], &["--out"]].concat(),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .args(&args)
            .arg(&out)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("retrystorm starts");
        drop(child.stdout.take());
        let output = child.wait_with_output().expect("retrystorm ends");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    assert!(out.join("contention/summary.json").exists());
}

/// A full disk on standard output (`/dev/full`) is an error that says so and exits 1, never a
/// panic, for every command that prints: run, check, sweep, merge, decide and import.
#[test]
fn a_full_stdout_is_an_error_not_a_panic() {
    let out = fresh_folder("run-full-stdout");
    let shards = out.join("shards");
    for shard in ["0/2", "1/2"] {
        let output = retrystorm(
            &[
                &SMALL_SWEEP[..],
                &["--shard", shard, "--out", shards.to_str().unwrap()],
            ]
            .concat(),
        );
        assert!(output.status.success());
    }
    let part = |k: &str| {
        shards
            .join(format!("contention-shards/shard-{k}-of-2"))
            .to_str()
            .unwrap()
            .to_string()
    };
    let (first, second) = (part("0"), part("1"));
    let out_str = out.to_str().unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec![
            "run",
            "scenarios/contention.toml",
            "--no-charts",
            "--out",
            out_str,
        ],
        vec!["check", "scenarios/contention.toml"],
        [&SMALL_SWEEP[..], &["--out", out_str]].concat(),
        vec!["merge", &first, &second, "--out", out_str],
        vec![
            "decide",
            "--method",
            "GET",
            "--attempt",
            "0",
            "--now-ms",
            "0",
            "--deadline-ms",
            "9",
            "--status",
            "503",
        ],
        vec!["import", "scenarios/configs/grpc-service-config.json"],
    ];
    for args in commands {
        let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(std::fs::File::create("/dev/full").expect("/dev/full opens"))
            .output()
            .expect("retrystorm runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("No space left on device"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// Two scenarios of one name in one `run` would write one folder; the run refuses before
/// anything is written, naming both files.
#[test]
fn two_scenarios_of_one_name_are_refused() {
    let out = fresh_folder("run-same-name");
    let copy = out.with_extension("toml");
    std::fs::copy("scenarios/tuning.toml", &copy).unwrap();
    let output = retrystorm(&[
        "run",
        "scenarios/tuning.toml",
        copy.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("are both named \"tuning\""), "{stderr}");
    assert!(is_empty(&out), "nothing is written");
}

/// Cost is announced before it is spent: `check` prints the estimate, and `run` refuses a
/// scenario over the limits (a hundred million clients at one operation a second, which ran
/// past 10.8 GB and 400 s before) at once, writing nothing, and names the flag that overrides
/// it; a sweep too. The estimate brackets real runs (see the examples test).
#[test]
fn an_unaffordable_run_is_refused_with_its_estimate() {
    let out = fresh_folder("run-cost");
    let huge = [
        "--set",
        "clients.count=100000000",
        "--set",
        "clients.rate=1.0",
    ];
    let mut check = vec!["check", "scenarios/bench/large.toml"];
    check.extend(huge);
    let output = retrystorm(&check);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("cost: 18.0 billion operations, 18.0 billion to 738.1 billion events"),
        "{stdout}"
    );

    let mut run = vec![
        "run",
        "scenarios/bench/large.toml",
        "--out",
        out.to_str().unwrap(),
    ];
    run.extend(huge);
    let output = retrystorm(&run);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        "scenarios/bench/large.toml: this would take at least 18.0 billion events, more than the limit of 10.0 billion",
        "estimate: 18.0 billion operations",
        "--no-cost-limit",
    ] {
        assert!(stderr.contains(expected), "{expected:?} not in {stderr}");
    }
    assert!(is_empty(&out), "nothing is written");

    let output = retrystorm(&[
        "sweep",
        "scenarios/bench/large.toml",
        "--policy",
        "full jitter",
        "--grid",
        "policy.max_attempts=0..100",
        "--seeds",
        "10",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("at least 12.1 billion events"), "{stderr}");
    assert!(is_empty(&out), "nothing is written");
}

/// A long job is forecast before it runs, on stderr after its bounds, from a pilot; a short
/// one prints neither, unless asked with `--forecast`. "Long" is the bounds' (what is shown
/// before the run): ten seeds of the tuning scenario allowed 100 retries each are bounded at
/// 631.4 million events, over a minute on two cores, though none of the retries happens.
/// No figure of the forecast is checked: it is this machine's wall time.
#[test]
fn a_long_job_is_forecast_and_a_short_one_is_not() {
    let out = fresh_folder("run-forecast");
    let out = out.to_str().unwrap();
    let long = retrystorm(&[
        "sweep",
        "scenarios/tuning.toml",
        "--grid",
        "policy.max_attempts=100",
        "--seeds",
        "10",
        "--no-charts",
        "--out",
        out,
    ]);
    assert!(long.status.success());
    let stderr = String::from_utf8_lossy(&long.stderr);
    let forecast = "scenarios/tuning.toml: forecast: about ";
    assert!(stderr.contains("631.4 million events"), "{stderr}");
    assert!(stderr.contains(forecast), "{stderr}");
    assert!(
        stderr.contains("from the command's start to its end; a pilot of 1 simulation took "),
        "{stderr}"
    );

    let mut short = SMALL_SWEEP.to_vec();
    short.extend(["--out", out]);
    let quiet = retrystorm(&short);
    assert!(quiet.status.success());
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("forecast"));
    short.push("--forecast");
    let asked = retrystorm(&short);
    assert!(
        String::from_utf8_lossy(&asked.stderr)
            .contains("scenarios/contention.toml: forecast: about "),
        "{}",
        String::from_utf8_lossy(&asked.stderr)
    );
    // The forecast changes no result.
    assert_eq!(quiet.stdout, asked.stdout);

    let run = retrystorm(&[
        "run",
        "scenarios/tuning.toml",
        "--no-charts",
        "--forecast",
        "--out",
        out,
    ]);
    assert!(run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains(forecast), "{stderr}");
}

/// The reference's example of a refused scenario is what `check` prints today: the file shown
/// and the error line are taken from docs/reference.md, so neither can drift from the code.
#[test]
fn the_references_check_example_is_current() {
    let reference =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reference.md")).unwrap();
    let file = reference
        .split_once("```toml bad.toml\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(file, _)| file)
        .expect("the reference shows bad.toml");
    let expected = reference
        .split_once("$ retrystorm check bad.toml\n")
        .and_then(|(_, rest)| rest.lines().next())
        .expect("the reference shows check's answer");
    let folder = fresh_folder("reference-check");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("bad.toml"), file).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(["check", "bad.toml"])
        .current_dir(&folder)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&output.stderr).trim_end(), expected);
}

/// `--set` selects a policy by its name as docs/reference.md says, as it selects a service: the
/// named policy changes and the other does not.
#[test]
fn set_selects_a_policy_by_name() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/thundering-herd.toml"
    ))
    .unwrap();
    let overrides = [retrystorm::scenario::Override::set(
        "policy.full jitter.base",
        "50ms",
    )];
    let scenario = retrystorm::import::load_str(&text, "thundering-herd.toml", &overrides).unwrap();
    let base = |name: &str| {
        scenario
            .policy
            .iter()
            .find(|policy| policy.name.get_ref() == name)
            .unwrap()
            .base
    };
    assert_eq!(base("full jitter").to_string(), "50ms");
    assert_ne!(base("no jitter").to_string(), "50ms");
}

/// The README's first command prints what the README shows, byte for byte but for the
/// output folder: the table, the lesson's claims, and where the report and charts are.
#[test]
fn the_readmes_first_run_prints_what_it_shows() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let shown = readme
        .split_once("```console\n$ cargo run --release -- run scenarios/thundering-herd.toml\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(block, _)| block.to_string())
        .expect("the README shows the first run's output");
    let out = fresh_folder("readme-first-run");
    let output = retrystorm(&[
        "run",
        "scenarios/thundering-herd.toml",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success());
    let printed = String::from_utf8(output.stdout)
        .unwrap()
        .replace(out.to_str().unwrap(), "output");
    assert_eq!(printed, shown);
}

/// A run changed with `--set` says so: the terminal lists the changes and marks the policies
/// they touched (by name, by index, or all of them through `policy.<field>`), and the report
/// labels those policies as changed.
#[test]
fn policies_changed_by_set_are_labelled() {
    let out = fresh_folder("run-set-label");
    let run = |set: &str| {
        let output = retrystorm(&[
            "run",
            "scenarios/thundering-herd.toml",
            "--set",
            set,
            "--set",
            "duration=2s",
            "--set",
            "incident.start=1s",
            "--no-charts",
            "--no-fail-on-claims",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(output.status.success());
        let report = std::fs::read_to_string(out.join("thundering-herd/report.html")).unwrap();
        (String::from_utf8(output.stdout).unwrap(), report)
    };
    for (set, marked) in [
        ("policy.full jitter.base=50ms", [false, true]),
        ("policy.0.base=50ms", [true, false]),
        ("policy.cap=5s", [true, true]),
        ("clients.count=100", [false, false]),
    ] {
        let (stdout, report) = run(set);
        assert!(
            stdout.contains(&format!(
                "changed on the command line (policies marked *): --set {set}, --set duration=2s, --set incident.start=1s"
            )),
            "{stdout}"
        );
        for (name, marked) in ["no jitter", "full jitter"].into_iter().zip(marked) {
            assert_eq!(
                stdout.contains(&format!("  {name} * ")),
                marked,
                "{set}: {stdout}"
            );
            assert_eq!(
                report.contains(&format!("<td>{name} (changed by --set)</td>")),
                marked,
                "{set}"
            );
        }
    }
}

/// `scenarios/bench/standard.toml` is the load its comment states: 10,000 clients at 0.2/s for
/// 60 s start a Poisson number of operations with mean 120,000 and standard deviation
/// sqrt(120,000) = 346, so every policy's count (the same arrivals) lies within 4 deviations.
/// `--stats` reports each policy's events per operation, which is its events over its
/// operations.
#[test]
fn the_standard_benchmark_offers_its_stated_load_and_reports_events_per_operation() {
    let out = fresh_folder("run-standard-benchmark");
    let output = retrystorm(&[
        "run",
        "scenarios/bench/standard.toml",
        "--no-charts",
        "--stats",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let summary = std::fs::read_to_string(out.join("bench-standard/summary.csv")).unwrap();
    let mut header = summary.lines().next().unwrap().split(',');
    let column = header.position(|name| name == "operations").unwrap();
    let counts: Vec<f64> = summary
        .lines()
        .skip(1)
        .map(|row| row.split(',').nth(column).unwrap().parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 3, "{summary}");
    for operations in &counts {
        assert!(
            (operations - 120_000.0).abs() <= 4.0 * 120_000f64.sqrt(),
            "{operations} operations"
        );
    }
    let stats: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("stats: ") && !line.starts_with("stats: total"))
        .collect();
    assert_eq!(stats.len(), 3, "{stdout}");
    for (line, operations) in stats.iter().zip(&counts) {
        let events: f64 = line
            .split(" events in ")
            .next()
            .and_then(|head| head.rsplit(' ').next())
            .unwrap()
            .parse()
            .unwrap();
        let reported = format!("{:.2} events per operation", events / operations);
        assert!(line.contains(&reported), "{reported:?} not in {line}");
    }
}

/// A claim that does not hold fails the run as a failed threshold fails a load test's CI step
/// (k6 exits 99): `run` writes every result, prints the claim, and exits 3, a code distinct
/// from bad input (1) and a wrong command line (2); `--no-fail-on-claims` exits 0 with the
/// same files. The scenario is `tuning` with a claim no policy meets (every operation
/// succeeds although the API is down for 2 s and its deadline is 5 s).
#[test]
fn a_claim_that_does_not_hold_exits_three_unless_told_not_to() {
    let out = fresh_folder("run-failing-claim");
    let scenario = out.with_extension("toml");
    let text = std::fs::read_to_string("scenarios/tuning.toml")
        .unwrap()
        .replace("name = \"tuning\"", "name = \"failing-claim\"")
        .replace("count = 2000", "count = 200");
    std::fs::write(
        &scenario,
        format!(
            "{text}\n[[expect]]\npolicy = \"tuned\"\nmetric = \"success_rate\"\nat_least = 1.0\n"
        ),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            scenario.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--no-charts",
        ];
        args.extend_from_slice(extra);
        retrystorm(&args)
    };
    let failed = run(&[]);
    let stdout = String::from_utf8_lossy(&failed.stdout);
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(3), "{stdout}{stderr}");
    assert!(stdout.contains("lesson: 0 of 1 claims held"), "{stdout}");
    assert!(
        stderr.contains("1 claim did not hold: exit 3 (--no-fail-on-claims exits 0)"),
        "{stderr}"
    );
    let summary = out.join("failing-claim/summary.json");
    let written = std::fs::read(&summary).expect("the results are written");

    let allowed = run(&["--no-fail-on-claims"]);
    assert_eq!(
        allowed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&allowed.stderr)
    );
    assert_eq!(std::fs::read(&summary).unwrap(), written);
}

/// Not on a terminal, `run` prints a progress line on stderr every interval
/// (`RETRYSTORM_PROGRESS_SECONDS`, here a hundredth of a second): how much of the scenario's
/// duration is simulated, the time elapsed and an estimate; stdout is what it is without.
#[test]
fn a_run_off_a_terminal_prints_progress_lines_on_stderr() {
    let out = fresh_folder("run-progress");
    let run = |interval: &str| {
        Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .args(["run", "scenarios/tuning.toml", "--no-charts", "--out"])
            .arg(&out)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("RETRYSTORM_PROGRESS_SECONDS", interval)
            .output()
            .expect("retrystorm runs")
    };
    let slow = run("1000");
    let told = run("0.01");
    assert!(told.status.success());
    assert_eq!(told.stdout, slow.stdout);
    assert!(slow.stderr.is_empty());
    let stderr = String::from_utf8(told.stderr).unwrap();
    assert!(!stderr.is_empty() && !stderr.contains('\r'), "{stderr:?}");
    for line in stderr.lines() {
        assert!(
            line.starts_with("tuning: ")
                && line.contains("% of 30.0s simulated (1 policy)")
                && line.contains("s elapsed, "),
            "{line}"
        );
    }
}
