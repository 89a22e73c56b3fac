//! Open workloads' arrival processes (`clients.arrivals`) and replayed rate curves
//! (`clients.replay`) end to end: through `--set`, a sweep, the cost `check` announces, the
//! resolved scenario, and the errors a bad rate file gives.

use std::path::{Path, PathBuf};

use retrystorm::import::{load, load_str};
use retrystorm::scenario::Override;

use crate::support::{assert_contains, fresh_folder, retrystorm, run};

/// Ten clients at 100 operations a second each for 10 s, against an upstream that never fails.
const FLAT: &str = r#"
name = "flat"
duration = "10s"
[clients]
count = 10
rate = 100.0
[upstream]
workers = 100
service_time = "1ms"
"#;

/// The bundled day of rates: 1,440 samples a minute apart, 3,000 a second on average.
const DAY: &str = "scenarios/data/day-rates.csv";

/// The rates of the bundled day, in file order.
fn day_rates() -> Vec<f64> {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(DAY))
        .unwrap()
        .lines()
        .filter(|line| line.starts_with(|c: char| c.is_ascii_digit()))
        .map(|line| line.split(',').nth(1).unwrap().parse().unwrap())
        .collect()
}

/// A folder `name` holding `scenario.toml` with `text`, and the bundled day beside it as
/// `data/day-rates.csv` (what the scenario's `replay` names, relative to it).
fn replay_folder(name: &str, text: &str) -> PathBuf {
    let folder = fresh_folder(name);
    std::fs::create_dir_all(folder.join("data")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(DAY),
        folder.join("data/day-rates.csv"),
    )
    .unwrap();
    std::fs::write(folder.join("scenario.toml"), text).unwrap();
    folder
}

/// A scenario replaying the bundled day with `replay` (the inline table's fields after
/// `rates`) for `duration`.
fn replaying(replay: &str, duration: &str) -> String {
    format!(
        r#"name = "day"
duration = "{duration}"
[clients]
count = 1000
replay = {{ rates = "data/day-rates.csv"{replay} }}
[upstream]
workers = 1000
service_time = "1ms"
"#
    )
}

/// `--set clients.arrivals=...` chooses the process: evenly spaced arrivals at 1,000 a second
/// for 10 s are exactly 10,000 (the `k`-th at `(k + 1/2)` ms), and batches of 4 come whole,
/// so their count is a multiple of 4 (SYSTEMS §5, k6's constant-arrival-rate).
#[test]
fn the_process_is_set_from_the_command_line() {
    let set = |value: &str| {
        let scenario = load_str(
            FLAT,
            "flat.toml",
            &[Override::set("clients.arrivals", value)],
        )
        .unwrap_or_else(|error| panic!("{error}"));
        run(&scenario).policies[0].summary.operations
    };
    assert_eq!(set(r#"{ process = "deterministic" }"#), 10_000);
    assert_eq!(
        set("deterministic"),
        10_000,
        "a process without settings by name"
    );
    let batched = set(r#"{ process = "batch", size = 4 }"#);
    assert_eq!(batched % 4, 0, "{batched}");
    // Ten standard deviations of a batch count: sqrt(4 * 10,000) each.
    assert!(batched.abs_diff(10_000) <= 2_000, "{batched}");
    let poisson = set(r#"{ process = "poisson" }"#);
    assert_eq!(
        poisson,
        run(&load_str(FLAT, "flat.toml", &[]).unwrap()).policies[0]
            .summary
            .operations,
        "the default is Poisson, drawn as before"
    );
}

/// A closed workload has no arrival process, an MMPP state shorter than 1 ms would make
/// millions of steps, and an unknown process names the valid ones.
#[test]
fn bad_processes_are_refused_at_their_field() {
    let closed = FLAT.replace(
        "rate = 100.0",
        "workload = \"closed\"\nthink_time = \"1s\"\narrivals = { process = \"deterministic\" }",
    );
    let error = load_str(&closed, "closed.toml", &[])
        .unwrap_err()
        .to_string();
    assert_contains(
        &error,
        &["closed.toml:8:", "`arrivals` is for open workloads"],
    );
    let short = FLAT.replace(
        "rate = 100.0",
        "rate = 100.0\narrivals = { process = \"mmpp\", burst = 5, burst_time = \"500us\", calm_time = \"1s\" }",
    );
    let error = load_str(&short, "short.toml", &[]).unwrap_err().to_string();
    assert_contains(&error, &["short.toml:7:", "at least 1ms"]);
    let unknown = FLAT.replace(
        "rate = 100.0",
        "rate = 100.0\narrivals = { process = \"bursty\" }",
    );
    let error = load_str(&unknown, "unknown.toml", &[])
        .unwrap_err()
        .to_string();
    assert_contains(
        &error,
        &["unknown.toml:7:", "bursty", "deterministic", "mmpp"],
    );
    let named = FLAT.replace("rate = 100.0", "rate = 100.0\narrivals = \"batch\"");
    let error = load_str(&named, "named.toml", &[]).unwrap_err().to_string();
    assert_contains(
        &error,
        &["named.toml:7:", "\"batch\" has settings", "size = 4"],
    );
}

/// A sweep over the batch size runs one point per size.
#[test]
fn a_sweep_varies_the_batch_size() {
    let out = fresh_folder("arrivals-sweep");
    let output = retrystorm(&[
        "sweep",
        "scenarios/tuning.toml",
        "--grid",
        "clients.arrivals.size=1,8",
        "--set",
        "clients.arrivals={ process = \"batch\", size = 1 }",
        "--set",
        "duration=12s",
        "--set",
        "clients.count=200",
        "--seeds",
        "1",
        "--no-charts",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = std::fs::read_to_string(out.join("tuning-sweep/results.csv")).unwrap();
    assert!(
        results.starts_with("point,seed,clients.arrivals.size,"),
        "{results}"
    );
    assert_eq!(results.lines().count(), 3, "{results}");
}

/// `check` announces the operations the replay generates: the window 13:20 to 15:00 of the
/// bundled day (13:30 to 15:00 after a 10-minute warm-up), one sample a minute, played 60
/// times as fast and scaled by 0.5, is the sum of its 100 samples' rates times 60 s, over 60,
/// halved; the resolved scenario holds the curve and reloads the same, without the file.
#[test]
fn a_replayed_window_costs_its_operations_and_reloads() {
    let folder = replay_folder(
        "arrivals-replay",
        &replaying(
            r#", from = "13.5h", to = "15h", warmup = "10m", speedup = 60, scale = 0.5"#,
            "100s",
        ),
    );
    let expected: f64 = day_rates()[800..900].iter().sum::<f64>() * 60.0 / 60.0 * 0.5;
    let path = folder.join("scenario.toml");
    let check = retrystorm(&["check", path.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&check.stdout);
    let announced = format!("  cost: {} operations", thousands(expected.round() as u64));
    assert!(stdout.contains(&announced), "{stdout} lacks {announced}");
    let scenario = load(&path, &[]).unwrap();
    assert!(scenario.clients.replay.is_none());
    let resolved = scenario.to_resolved_toml();
    assert!(!resolved.contains("replay"), "{resolved}");
    // Elsewhere, where no data/ folder is: the curve is in the text.
    let reloaded = load_str(&resolved, "/nowhere/scenario.toml", &[]).unwrap();
    assert_eq!(reloaded.to_resolved_toml(), resolved);
    // A Poisson count of that mean, within five standard deviations.
    let operations = run(&reloaded).policies[0].summary.operations as f64;
    assert!(
        (operations - expected).abs() <= 5.0 * expected.sqrt(),
        "{operations} operations, expected {expected}"
    );
}

/// `n` with commas between thousands, as `check` prints counts.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Prometheus' `query_range` JSON gives the same curve as the CSV of the same samples.
#[test]
fn a_query_range_answer_replays_as_its_csv() {
    let rates = day_rates();
    let values: Vec<String> = rates
        .iter()
        .enumerate()
        .map(|(minute, rate)| format!("[{}, \"{rate}\"]", 1_772_496_000 + 60 * minute))
        .collect();
    let json = format!(
        r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{}},"values":[{}]}}]}}}}"#,
        values.join(",")
    );
    let text = replaying(r#", from = "2h", to = "3h""#, "1h");
    let csv = replay_folder("arrivals-csv", &text);
    let from_json = replay_folder(
        "arrivals-json",
        &text.replace("data/day-rates.csv", "data/day.json"),
    );
    std::fs::write(from_json.join("data/day.json"), json).unwrap();
    let resolved = |folder: &Path| {
        load(&folder.join("scenario.toml"), &[])
            .unwrap_or_else(|error| panic!("{error}"))
            .to_resolved_toml()
    };
    assert_eq!(resolved(&csv), resolved(&from_json));
}

/// Errors name the file and line of a bad sample, the window that does not fit, and the
/// fields a replay replaces.
#[test]
fn bad_rate_files_are_named_with_their_line() {
    let text = replaying("", "1h");
    let folder = replay_folder("arrivals-errors", &text);
    let error_of = |csv: &str, scenario: &str| {
        std::fs::write(folder.join("data/day-rates.csv"), csv).unwrap();
        std::fs::write(folder.join("scenario.toml"), scenario).unwrap();
        load(&folder.join("scenario.toml"), &[])
            .unwrap_err()
            .to_string()
    };
    let good = "time,value\n1772496000,10\n1772496060,20\n1772496120,30\n";
    assert_contains(
        &error_of(
            "time,value\n1772496000,10\n1772496060,NaN\n",
            &text.replace("\"1h\"", "\"1m\""),
        ),
        &["scenario.toml:5:", "day-rates.csv:3:", "rate \"NaN\""],
    );
    assert_contains(
        &error_of(
            "time,value\n1772496000,10\n1772496000,20\n",
            &text.replace("\"1h\"", "\"1m\""),
        ),
        &["day-rates.csv:3:", "times must increase"],
    );
    assert_contains(
        &error_of(good, &text),
        &[
            "scenario.toml:2:",
            "the replay lasts",
            "duration must be at most",
        ],
    );
    assert_contains(
        &error_of(
            good,
            &text.replace("count = 1000", "count = 1000\nrate = 1.0"),
        ),
        &["scenario.toml:6:", "remove them"],
    );
    assert_contains(
        &error_of(good, &text.replace("day-rates.csv", "missing.csv")),
        &["scenario.toml:5:", "missing.csv", "cannot read"],
    );
    assert_contains(
        &error_of(
            good,
            &text
                .replace("\"1h\"", "\"1m\"")
                .replace(".csv\"", ".csv\", from = \"1m\", warmup = \"2m\""),
        ),
        &["scenario.toml:5:", "reaches before the file's first sample"],
    );
}

/// A folder `name` holding `scenario.toml` with `text` and `times.txt` with `times`.
fn timestamps_folder(name: &str, text: &str, times: &str) -> PathBuf {
    let folder = fresh_folder(name);
    std::fs::write(folder.join("times.txt"), times).unwrap();
    std::fs::write(folder.join("scenario.toml"), text).unwrap();
    folder
}

/// Three clients replaying `times.txt` (with `replay`, the inline table's fields after
/// `timestamps`) for `duration`, against an upstream that never fails.
fn replaying_times(replay: &str, duration: &str) -> String {
    format!(
        r#"name = "times"
duration = "{duration}"
[clients]
count = 3
replay = {{ timestamps = "times.txt"{replay} }}
[upstream]
workers = 20
service_time = "1ms"
"#
    )
}

/// Five requests of an access log, unix seconds: two at once, one with a seventh decimal
/// (103.0000005 s, which rounds half up to 3,000,001 µs after the first).
const FIVE_TIMES: &str = "# an access log's times\n100.0\n100.25\n\n100.25\n101.5\n103.0000005\n";

/// The send times of the first attempts in `trace.csv`, in milliseconds as written.
fn first_sends(trace: &str) -> Vec<String> {
    let mut sends: Vec<(u64, String)> = trace
        .lines()
        .skip(1)
        .map(|line| line.split(',').collect::<Vec<_>>())
        .filter(|fields| fields[3] == "0")
        .map(|fields| (fields[2].parse().unwrap(), fields[4].to_string()))
        .collect();
    sends.sort();
    sends.into_iter().map(|(_, send)| send).collect()
}

/// Each timestamp is one operation at exactly its time after the first line's, in `--trace`
/// (a first attempt is sent as its operation starts); the one at 3,000,001 µs is past the 3 s
/// run. `--set clients.replay.speedup=2` halves every gap exactly: 125 ms, 750 ms, and the
/// last at 3,000,001 / 2 = 1,500,000.5 µs, rounded half up to 1,500,001 µs, inside a run of
/// 1,500,002 µs, the longest the replay allows.
#[test]
fn recorded_timestamps_arrive_exactly_at_their_times() {
    let folder = timestamps_folder(
        "arrivals-timestamps",
        &replaying_times("", "3s"),
        FIVE_TIMES,
    );
    let sends = |sets: &[&str]| {
        let out = folder.join(format!("out{}", sets.len()));
        let path = folder.join("scenario.toml");
        let mut args = vec![
            "run",
            path.to_str().unwrap(),
            "--trace",
            "--no-charts",
            "--out",
            out.to_str().unwrap(),
        ];
        for set in sets {
            args.extend(["--set", set]);
        }
        let output = retrystorm(&args);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        first_sends(&std::fs::read_to_string(out.join("times/trace.csv")).unwrap())
    };
    assert_eq!(sends(&[]), ["0.000", "250.000", "250.000", "1500.000"]);
    assert_eq!(
        sends(&["clients.replay.speedup=2", "duration=\"1500002us\""]),
        ["0.000", "125.000", "125.000", "750.000", "1500.001"]
    );
}

/// `from` and `to` keep exactly the lines in `[from - warmup, to)` of the file's time, the
/// run starting at `from - warmup`; the resolved scenario holds the times and reloads the
/// same without the file, and `check` announces exactly the arrivals before the end.
#[test]
fn a_timestamps_window_keeps_its_lines_and_reloads() {
    let folder = timestamps_folder(
        "arrivals-timestamps-window",
        &replaying_times(r#", from = "250ms", to = "1500ms""#, "1250ms"),
        FIVE_TIMES,
    );
    let at_us = |scenario: &retrystorm::scenario::Scenario| {
        scenario
            .clients
            .arrivals
            .get_ref()
            .recorded()
            .unwrap()
            .to_vec()
    };
    let path = folder.join("scenario.toml");
    assert_eq!(at_us(&load(&path, &[]).unwrap()), [0, 0]);
    let warmed = load(
        &path,
        &[Override::set("clients.replay.warmup", "\"250ms\"")],
    )
    .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(at_us(&warmed), [0, 250_000, 250_000]);
    let resolved = warmed.to_resolved_toml();
    assert!(!resolved.contains("replay"), "{resolved}");
    assert!(
        resolved.contains("at_us = [0, 250000, 250000]"),
        "{resolved}"
    );
    let reloaded = load_str(&resolved, "/nowhere/scenario.toml", &[]).unwrap();
    assert_eq!(reloaded.to_resolved_toml(), resolved);
    assert_eq!(run(&reloaded).policies[0].summary.operations, 3);
    let check = retrystorm(&["check", path.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(stdout.contains("  cost: 2 operations"), "{stdout}");
}

/// The bundled access log's times: `check` announces exactly its lines less than 119 s after
/// the first (4,031, counted here from the file), and a run starts exactly that many.
#[test]
fn the_bundled_timestamps_cost_and_run_exactly_their_lines() {
    let log = "scenarios/data/burst-timestamps.txt";
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(log)).unwrap();
    let times: Vec<f64> = text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| line.parse().unwrap())
        .collect();
    let expected = times.iter().filter(|&&t| t - times[0] < 119.0).count() as u64;
    let folder = timestamps_folder(
        "arrivals-timestamps-bundled",
        &replaying_times("", "119s").replace("count = 3", "count = 100"),
        &text,
    );
    let path = folder.join("scenario.toml");
    let check = retrystorm(&["check", path.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&check.stdout);
    let announced = format!("  cost: {} operations,", thousands(expected));
    assert!(stdout.contains(&announced), "{stdout} lacks {announced}");
    let scenario = load(&path, &[]).unwrap();
    assert_eq!(run(&scenario).policies[0].summary.operations, expected);
}

/// Errors name the file and line of an unsorted or unreadable time, and of the line past the
/// most a file may have; and the replay's field where `scale`, both files, `rate` or
/// `arrivals` ask for what exact arrivals cannot be.
#[test]
fn bad_timestamps_files_are_named_with_their_line() {
    let text = replaying_times("", "1s");
    let folder = timestamps_folder("arrivals-timestamps-errors", &text, FIVE_TIMES);
    let error_of = |times: &str, scenario: &str| {
        std::fs::write(folder.join("times.txt"), times).unwrap();
        std::fs::write(folder.join("scenario.toml"), scenario).unwrap();
        load(&folder.join("scenario.toml"), &[])
            .unwrap_err()
            .to_string()
    };
    assert_contains(
        &error_of("# log\n10.5\n12\n11.9\n", &text),
        &[
            "scenario.toml:5:",
            "times.txt:4:",
            "before the line before it",
            "sort -n",
        ],
    );
    assert_contains(
        &error_of("10.5\n12\n[02/Dec/2026:13:00:00 +0000]\n", &text),
        &["times.txt:3:", "not a time in seconds"],
    );
    let too_many = "# one line more than the most\n".to_string() + &"1\n".repeat(100_001);
    assert_contains(
        &error_of(&too_many, &text),
        &["times.txt:100002:", "more than 100000 timestamps"],
    );
    let refused = [
        (", scale = 2", "`scale` multiplies a rate curve"),
        (
            r#", rates = "times.txt""#,
            "exactly one file: `rates` (requests per second over time) or `timestamps`",
        ),
        (", from = \"4s\"", "is not within the file"),
    ];
    for (replay, message) in refused {
        assert_contains(
            &error_of(FIVE_TIMES, &replaying_times(replay, "1s")),
            &["scenario.toml:5:", message],
        );
    }
    assert_contains(
        &error_of(
            FIVE_TIMES,
            &text.replace(
                "count = 3",
                "count = 3\narrivals = { process = \"batch\", size = 2 }",
            ),
        ),
        &["scenario.toml:5:", "remove `arrivals`"],
    );
    assert_contains(
        &error_of(FIVE_TIMES, &text.replace("\"1s\"", "\"4s\"")),
        &[
            "scenario.toml:2:",
            "the replay lasts 3000002us",
            "1us after the file's last line",
        ],
    );
}
