//! Replications, probabilities and maps (issue 28): `run --replications`, `[uncertain]`,
//! `retrystorm map`, and their shards.

use std::fs;
use std::path::Path;

use retrystorm::risk::{StudyKind, StudySpec, map, replications};
use retrystorm::sweep::Shard;
use std::sync::atomic::AtomicUsize;

use crate::support::{assert_contains, fresh_folder, retrystorm};

/// An M/M/1 upstream (one worker, exponential 10 ms: mu = 100 a second) behind clients whose
/// attempts time out after 200 ms and who retry twice at once: three sends per operation. A
/// 3 s outage fills the queue past the timeout, so after it every attempt times out and is
/// retried while the server still serves it.
const MM1: &str = r#"
name = "mm1-edge"
seed = 5
duration = "60s"

[clients]
count = 100
rate = 0.3
deadline = "30s"
attempt_timeout = "200ms"

[upstream]
workers = 1
service_time = { distribution = "exponential", mean = "10ms" }
queue_limit = 100000
capacity = [
  { at = "5s", factor = 1.0 },
  { at = "5s", factor = 0.0 },
  { at = "8s", factor = 0.0 },
  { at = "8s", factor = 1.0 },
]

[[policy]]
name = "two immediate retries"
base = "1ms"
cap = "1ms"
jitter = "none"
max_attempts = 2
"#;

fn map_spec(text: &str, x: &str, y: &str, replications: u32, least: u32) -> StudySpec {
    StudySpec {
        kind: StudyKind::Map,
        scenario_path: "test.toml".into(),
        scenario_text: text.into(),
        fixed: vec![],
        axes: vec![x.parse().unwrap(), y.parse().unwrap()],
        replications,
        min_replications: least,
        configs: Default::default(),
    }
}

/// Where a map puts the edge of an M/M/1 with immediate retries: once collapsed, every
/// operation sends its 3 attempts and the server serves them all, so the collapse sustains
/// itself exactly when the offered load times 3 exceeds mu = 100 a second (Bronson et al.,
/// "Metastable failures in distributed systems", HotOS '21: the sustaining effect is the
/// retries' amplification; the edge is lambda = mu / sends = 33.3 operations a second). Below
/// 0.8 of it the queue left by the outage drains and every run recovers; above 1.2 of it none
/// does.
#[test]
fn the_map_puts_the_mm1_edge_where_load_times_sends_crosses_capacity() {
    // lambda = 100 clients x rate: 20, 24, ..., 48 a second.
    let spec = map_spec(
        MM1,
        "clients.rate=0.2..0.48/8",
        "upstream.capacity.2.at+upstream.capacity.3.at=7s,8s",
        8,
        4,
    );
    let prepared = spec.prepare().unwrap();
    let rows = prepared.run(Shard::WHOLE, &AtomicUsize::new(0)).unwrap();
    let outcomes = map::outcomes(&prepared, &rows);
    let edge = 100.0 / 3.0;
    for (cell, outcome) in outcomes[0].iter().enumerate() {
        let lambda = 100.0 * prepared.spec.cell_values(cell)[0].parse::<f64>().unwrap();
        if lambda <= 0.8 * edge {
            assert_eq!(
                outcome.recovered, outcome.runs,
                "lambda {lambda}: {outcome:?}"
            );
        } else if lambda >= 1.2 * edge {
            assert_eq!(outcome.recovered, 0, "lambda {lambda}: {outcome:?}");
        }
    }
}

/// `map.csv` counts a cell's runs in three cases that add up to its runs, on the M/M/1 edge
/// above (mu = 100 a second, collapse sustained above 33.3 operations a second) at three base
/// loads:
///
/// - 20 a second (0.6 of the edge): the outage's queue drains and every run recovers, as in
///   the test above.
/// - 48 a second (1.44 of the edge, below mu): healthy before the outage, which tips it into
///   a collapse the retries sustain: every run never recovers.
/// - 150 a second, above mu before the outage: the queue grows 50 a second, its wait passes
///   the 200 ms timeout within the first second, and from then every attempt times out and is
///   retried, so the later half of the baseline fails far above twice the 1% limit: every run
///   is unhealthy before the incident (issue 39), counted apart from those that never
///   recovered.
///
/// Every row has `recovered + never_recovered + unhealthy_before == runs`, and its probability
/// is `recovered / runs` (a run unhealthy before counts as not recovering).
#[test]
fn map_csv_counts_recovered_never_and_unhealthy_before_apart() {
    let spec = map_spec(
        MM1,
        "clients.rate=0.2,0.48,1.5",
        "upstream.capacity.2.at+upstream.capacity.3.at=7s,8s",
        4,
        4,
    );
    let prepared = spec.prepare().unwrap();
    let rows = prepared.run(Shard::WHOLE, &AtomicUsize::new(0)).unwrap();
    let (files, _, _) = map::finalize(&prepared, &rows, &[]).unwrap();
    let csv = &files.iter().find(|(name, _)| name == "map.csv").unwrap().1;
    let csv = String::from_utf8(csv.clone()).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        header[3..],
        [
            "policy",
            "runs",
            "recovered",
            "never_recovered",
            "unhealthy_before",
            "probability",
            "low",
            "high",
            "median_recovery_s"
        ]
    );
    let mut by_rate: Vec<(String, [u32; 4])> = Vec::new();
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        let count = |index: usize| fields[index].parse::<u32>().unwrap();
        let [runs, recovered, never, unhealthy] = [4, 5, 6, 7].map(count);
        assert_eq!(recovered + never + unhealthy, runs, "{line}");
        assert_eq!(
            fields[8],
            format!("{:.6}", f64::from(recovered) / f64::from(runs)),
            "{line}"
        );
        by_rate.push((fields[1].to_string(), [runs, recovered, never, unhealthy]));
    }
    assert_eq!(
        by_rate,
        [
            ("0.2".to_string(), [4, 4, 0, 0]),
            ("0.48".to_string(), [4, 0, 4, 0]),
            ("1.5".to_string(), [4, 0, 0, 4]),
            ("0.2".to_string(), [4, 4, 0, 0]),
            ("0.48".to_string(), [4, 0, 4, 0]),
            ("1.5".to_string(), [4, 0, 0, 4]),
        ]
    );
}

/// A cell whose first runs all agree is settled at once (the Wilson interval of 4 of 4 is
/// [0.51, 1], of 0 of 4 [0, 0.49]); a cell that splits gets more replications, doubling up to
/// the most. The map above ran fewer runs than the full grid.
#[test]
fn only_cells_near_the_edge_get_more_replications() {
    let spec = map_spec(
        MM1,
        "clients.rate=0.2..0.48/8",
        "upstream.capacity.2.at+upstream.capacity.3.at=7s,8s",
        16,
        4,
    );
    let prepared = spec.prepare().unwrap();
    let rows = prepared.run(Shard::WHOLE, &AtomicUsize::new(0)).unwrap();
    let outcomes = map::outcomes(&prepared, &rows);
    for cell in &outcomes[0] {
        let split = cell.recovered > 0 && cell.recovered < cell.runs;
        if cell.runs == 4 {
            assert!(!split, "{cell:?}");
        } else {
            assert!([8, 16].contains(&cell.runs), "{cell:?}");
        }
    }
    let runs: u32 = outcomes[0].iter().map(|cell| cell.runs).sum();
    assert!(runs < 16 * 16, "{runs}");
}

fn read(folder: &Path, name: &str) -> Vec<u8> {
    fs::read(folder.join(name))
        .unwrap_or_else(|error| panic!("{}: {error}", folder.join(name).display()))
}

/// A map of as many replications as its least (`--replications 2`, below the default least
/// of 4, which it then lowers to 2) gives every cell 2: the command, the summary and the
/// picture's subtitle say so, never `2 to 2 replications a cell (more near the boundary)`,
/// a range of one number, nor what 2 in every cell would cost against itself. 2 x 2 cells
/// of 2 policies are 16 runs.
#[test]
fn a_map_of_one_number_of_replications_says_every_cell_has_it() {
    let out = fresh_folder("risk-map-full");
    let output = retrystorm(&[
        "map",
        "scenarios/tipping-point.toml",
        "--x",
        "clients.rate=0.4..0.7/2",
        "--y",
        "clients.load.2.at+clients.load.3.at=6s,9s",
        "--replications",
        "2",
        "--no-charts",
        "--no-fail-on-claims",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_contains(
        &stdout,
        &[
            "tipping-point: 4 cells x 2 policies, 2 replications in every cell: 16 runs\n",
            "  replications: 8 in all (16 runs of 2 policies), 2 in every cell\n",
        ],
    );
    let page = String::from_utf8(read(&out.join("tipping-point-map"), "map.html")).unwrap();
    assert!(page.contains("2 replications in every cell"), "{page}");
    for range in ["2 to 2", "a cell as needed", "more near the boundary"] {
        assert!(!stdout.contains(range) && !page.contains(range), "{range}");
    }
}

/// A map split in shards and merged writes the bytes one process writes, with one thread or
/// several.
#[test]
fn a_sharded_map_merges_to_the_same_bytes() {
    let out = fresh_folder("risk-map-shards");
    let out = out.to_str().unwrap();
    let args = [
        "map",
        "scenarios/tipping-point.toml",
        "--x",
        "clients.rate=0.4..0.7/4",
        "--y",
        "clients.load.2.at+clients.load.3.at=6s,9s",
        "--replications",
        "8",
        "--format",
        "svg",
        "--no-fail-on-claims",
    ];
    let whole = retrystorm(&[&args[..], &["--out", &format!("{out}/whole")]].concat());
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    for shard in ["0/3", "1/3", "2/3"] {
        let output = retrystorm(
            &[
                &args[..],
                &["--out", &format!("{out}/shards"), "--shard", shard],
            ]
            .concat(),
        );
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let shards = format!("{out}/shards/tipping-point-map-shards");
    let merged = retrystorm(&[
        "merge",
        &format!("{shards}/shard-0-of-3"),
        &format!("{shards}/shard-1-of-3"),
        &format!("{shards}/shard-2-of-3"),
        "--out",
        &format!("{out}/merged"),
        "--format",
        "svg",
    ]);
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let one_thread = std::process::Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args([&args[..], &["--out", &format!("{out}/one")]].concat())
        .env("RAYON_NUM_THREADS", "1")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(one_thread.status.success());
    let folder = |name: &str| Path::new(out).join(name).join("tipping-point-map");
    for file in [
        "map-runs.csv",
        "map.csv",
        "map.svg",
        "map.html",
        "study.json",
    ] {
        assert_eq!(
            read(&folder("whole"), file),
            read(&folder("merged"), file),
            "{file}"
        );
        assert_eq!(
            read(&folder("whole"), file),
            read(&folder("one"), file),
            "{file}"
        );
    }
    // A shard missing is refused by name.
    let missing = retrystorm(&[
        "merge",
        &format!("{shards}/shard-0-of-3"),
        "--out",
        &format!("{out}/bad"),
    ]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("shards 1/3, 2/3 are missing"));
}

/// A scenario with replications, a claim with a probability and an uncertain input.
const RISKY: &str = r#"
name = "risky"
seed = 3
duration = "10s"

[clients]
count = 200
rate = 1.0
deadline = "2s"
attempt_timeout = "300ms"

[upstream]
workers = 4
service_time = { distribution = "exponential", mean = "10ms" }
capacity = [
  { at = "3s", factor = 1.0 },
  { at = "3s", factor = 0.3 },
  { at = "5s", factor = 0.3 },
  { at = "5s", factor = 1.0 },
]

[risk]
replications = 12

[uncertain]
"upstream.workers" = { uniform = [5, 8] }
"clients.rate" = { lognormal = { median = 1.0, p95 = 1.3 } }

[[policy]]
name = "no jitter"
base = "100ms"
jitter = "none"

[[policy]]
name = "full jitter"
base = "100ms"
jitter = "full"

[[expect]]
policy = "full jitter"
metric = "success_rate"
at_least = 0.5
probability = 0.05
"#;

/// `run` with `[risk]` writes the replications beside the run's files: every policy on the
/// same 12 seeds, each replication with its Latin hypercube draw of the uncertain inputs (12
/// replications over the 4 integers 5 to 8: each exactly 3 times, the stratification of a
/// Latin hypercube), the claim's odds with its exact interval, and shards merged to the same
/// bytes.
#[test]
fn replications_give_probabilities_and_merge_from_shards() {
    let out = fresh_folder("risk-replications");
    let path = out.join("risky.toml");
    fs::write(&path, RISKY).unwrap();
    let (path, out) = (path.to_str().unwrap(), out.to_str().unwrap());
    let whole = retrystorm(&[
        "run",
        path,
        "--out",
        &format!("{out}/whole"),
        "--format",
        "svg",
    ]);
    let stdout = String::from_utf8_lossy(&whole.stdout);
    assert!(
        whole.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    assert!(stdout.contains("risk over 12 replications"), "{stdout}");
    assert!(
        stdout.contains("full jitter has success_rate at least 0.500: held in "),
        "{stdout}"
    );
    let folder = Path::new(out).join("whole/risky");
    let rows = String::from_utf8(read(&folder, "replications.csv")).unwrap();
    let mut workers: Vec<&str> = rows
        .lines()
        .skip(1)
        .filter(|line| line.contains(",no jitter,"))
        .map(|line| line.split(',').nth(5).unwrap())
        .collect();
    workers.sort();
    assert_eq!(
        workers,
        ["5", "5", "5", "6", "6", "6", "7", "7", "7", "8", "8", "8"]
    );
    assert!(folder.join("sensitivity.csv").is_file());
    for shard in ["0/2", "1/2"] {
        let output = retrystorm(&[
            "run",
            path,
            "--out",
            &format!("{out}/shards"),
            "--shard",
            shard,
        ]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let merged = retrystorm(&[
        "merge",
        &format!("{out}/shards/risky-risk-shards/shard-0-of-2"),
        &format!("{out}/shards/risky-risk-shards/shard-1-of-2"),
        "--out",
        &format!("{out}/merged"),
        "--format",
        "svg",
    ]);
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let merged = Path::new(out).join("merged/risky-risk");
    for file in [
        "replications.csv",
        "risk.csv",
        "paired.csv",
        "sensitivity.csv",
        "risk.html",
        "ecdf-recovery.svg",
        "study.json",
    ] {
        assert_eq!(read(&folder, file), read(&merged, file), "{file}");
    }
}

/// Common random numbers make paired comparisons cheaper: on the bundled thundering-herd, the
/// two policies of a replication see the same arrivals and the same crash, so the per-seed
/// difference in goodput varies far less than either policy's goodput does, and the unpaired
/// (Welch) interval of the difference needs several times the runs of the paired one for the
/// same width (Law & Kelton, Simulation Modeling and Analysis, section 11.2: common random
/// numbers reduce Var(A - B) = Var(A) + Var(B) - 2 Cov(A, B) when the outputs are positively
/// correlated).
#[test]
fn pairing_by_seed_needs_fewer_replications_than_unpaired() {
    let text = fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/thundering-herd.toml"),
    )
    .unwrap();
    let spec = StudySpec {
        kind: StudyKind::Replications,
        scenario_path: "scenarios/thundering-herd.toml".into(),
        scenario_text: text,
        fixed: vec![("duration".into(), "15s".into())],
        axes: vec![],
        replications: 8,
        min_replications: 8,
        configs: Default::default(),
    };
    let prepared = spec.prepare().unwrap();
    let rows = prepared.run(Shard::WHOLE, &AtomicUsize::new(0)).unwrap();
    let paired = replications::paired(&prepared, &rows);
    let goodput = paired
        .iter()
        .find(|pair| pair.metric == "goodput_rps")
        .unwrap();
    assert!(goodput.paired > 0.0);
    assert!(goodput.runs_saved() > 2.0, "{goodput:?}");
}

/// A claim with a probability needs replications, enough of them for the probability to be
/// shown at all; an uncertain input is checked where it is written.
#[test]
fn risk_inputs_are_refused_where_they_are_written() {
    let out = fresh_folder("risk-errors");
    let write = |name: &str, text: &str| {
        let path = out.join(name);
        fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let without = write("no-risk.toml", &RISKY.replace("[risk]\nreplications = 12\n", "").replace("[uncertain]\n\"upstream.workers\" = { uniform = [3, 6] }\n\"clients.rate\" = { lognormal = { median = 1.0, p95 = 1.3 } }\n", ""));
    let output = retrystorm(&["check", &without]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr
            .contains("no-risk.toml:37:1: a claim with a probability is judged over replications"),
        "{stderr}"
    );
    let bad = write(
        "bad.toml",
        &RISKY.replace("uniform = [5, 8]", "uniform = [8, 5]"),
    );
    let output = retrystorm(&["check", &bad]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bad.toml:26:")
            && stderr.contains("[uncertain] \"upstream.workers\": LOW must be below HIGH"),
        "{stderr}"
    );
    // 12 of 12 holding gives a 95% Clopper-Pearson lower bound of 0.025^(1/12) = 73.5%; a
    // claim of 90% needs 36 replications (0.025^(1/35) = 0.8999).
    let unprovable = write(
        "unprovable.toml",
        &RISKY.replace("probability = 0.05", "probability = 0.9"),
    );
    let output = retrystorm(&["check", &unprovable]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("unprovable.toml:39:1: probability 0.9 cannot be shown with 12 replications: even 12 of 12 holding gives a 95% lower bound of 73.5%, not above it; use at least 36"),
        "{stderr}"
    );
}

/// [`RISKY`] without `[risk]` and its claim: a scenario `run` runs once when `--set` gives every
/// uncertain input, as a sweep's reproducing command does.
fn risky_once() -> String {
    let text = RISKY.replace("[risk]\nreplications = 12\n", "");
    text[..text.find("[[expect]]").unwrap()].to_string()
}

/// Writes [`risky_once`] to `folder`; its path.
fn write_risky_once(folder: &Path) -> String {
    let path = folder.join("risky.toml");
    fs::write(&path, risky_once()).unwrap();
    path.to_str().unwrap().to_string()
}

/// Runs a sweep of `scenario`, its results in `folder`, with `args`, which must succeed; its
/// stdout.
fn sweep_of(folder: &Path, scenario: &str, args: &[&str]) -> String {
    let mut all = vec!["sweep", scenario, "--policy", "no jitter"];
    all.extend(args);
    all.extend(["--no-charts", "--out", folder.to_str().unwrap()]);
    let output = retrystorm(&all);
    assert!(
        output.status.success(),
        "{all:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The header and the rows of a CSV file.
fn csv_of(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header = reader.headers().unwrap().iter().map(String::from).collect();
    let rows = reader
        .records()
        .map(|record| record.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

/// A sweep draws the `[uncertain]` inputs as replications do: a Latin hypercube over its 8
/// seeds, from the scenario's seed (McKay, Beckman & Conover 1979: each input's range cut in 8
/// slices of equal probability, each slice drawn once). So at every point the 4 integers of
/// `uniform = [5, 8]` come exactly twice each, and exactly 4 draws of the lognormal of median
/// 1.0 fall below its median (the slices 0 to 3 of 8); and seed `s` draws the same values at
/// every point (common random numbers). `results.csv` says what each row drew, after the grid
/// values; the recommendation says what the seeds vary; and the command it prints runs the
/// recommended point on the first seed with that seed's draws, giving the row's operations
/// and successes exactly (the scenario's own `workers = 4` is never drawn, so a sweep that
/// left the draws out would differ).
#[test]
fn a_sweep_draws_the_uncertain_inputs_on_common_seeds() {
    let out = fresh_folder("risk-sweep-draws");
    let stdout = sweep_of(
        &out,
        &write_risky_once(&out),
        &["--grid", "policy.base=50ms,100ms,200ms", "--seeds", "8"],
    );
    assert!(
        stdout.contains("seeds vary the randomness (arrivals, service and network times drawn from their distributions, jitter, errors), and each seed draws the [uncertain] inputs by Latin hypercube: clients.rate (lognormal median 1.0, p95 1.3), upstream.workers (uniform 5 to 8), so the intervals cover what you are unsure of in those inputs as well as chance; they do not vary the model's other assumptions"),
        "{stdout}"
    );
    let folder = out.join("risky-sweep");
    let (header, rows) = csv_of(&folder.join("results.csv"));
    assert_eq!(
        header[..6],
        [
            "point",
            "seed",
            "policy.base",
            "clients.rate",
            "upstream.workers",
            "operations"
        ]
    );
    assert_eq!(rows.len(), 3 * 8);
    for point in 0..3 {
        let of_point: Vec<&Vec<String>> = rows
            .iter()
            .filter(|row| row[0] == point.to_string())
            .collect();
        let mut workers: Vec<&str> = of_point.iter().map(|row| row[4].as_str()).collect();
        workers.sort();
        assert_eq!(
            workers,
            ["5", "5", "6", "6", "7", "7", "8", "8"],
            "point {point}"
        );
        let below_median = of_point
            .iter()
            .filter(|row| row[3].parse::<f64>().unwrap() < 1.0)
            .count();
        assert_eq!(below_median, 4, "point {point}");
        // Seed s draws at this point what it draws at point 0.
        for (row, first) in of_point.iter().zip(&rows[..8]) {
            assert_eq!(row[1..2], first[1..2]);
            assert_eq!(row[3..5], first[3..5]);
        }
    }
    let recommendation = fs::read_to_string(folder.join("recommendation.txt")).unwrap();
    let command = recommendation
        .split("\n  retrystorm run ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .expect("the command that reproduces the point");
    let point = &recommendation[recommendation.find("recommended: point ").unwrap() + 19..]
        .split(':')
        .next()
        .unwrap()
        .to_string();
    let row = rows.iter().find(|row| row[0] == *point).unwrap();
    assert!(
        command.ends_with(&format!(
            " --set clients.rate={} --set upstream.workers={}",
            row[3], row[4]
        )),
        "{command}"
    );
    let mut args = vec!["run"];
    args.extend(command.split(' '));
    let run_out = out.join("reproduced");
    args.extend(["--no-charts", "--out", run_out.to_str().unwrap()]);
    let run = retrystorm(&args);
    assert!(
        run.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&read(&run_out.join("risky"), "summary.json")).unwrap();
    let policy = summary
        .as_array()
        .unwrap()
        .iter()
        .find(|policy| policy["policy"] == "no jitter")
        .unwrap();
    let column = |name: &str| header.iter().position(|column| column == name).unwrap();
    for metric in ["operations", "succeeded"] {
        assert_eq!(
            row[column(metric)].parse::<u64>().unwrap(),
            policy[metric].as_u64().unwrap(),
            "{metric}"
        );
    }
}

/// An `[uncertain]` key that the sweep sets itself, by `--grid` or `--set` (the exact key), is
/// not drawn, and the recommendation says so: with `upstream.workers` a grid key only
/// `clients.rate` is drawn and has a column; with `clients.rate` given by `--set` too, nothing
/// is drawn and `results.csv` has no column beyond the grid's, as without `[uncertain]`.
#[test]
fn a_sweep_does_not_draw_what_it_sets() {
    let out = fresh_folder("risk-sweep-not-drawn");
    let scenario = write_risky_once(&out);
    let stdout = sweep_of(
        &out.join("grid"),
        &scenario,
        &["--grid", "upstream.workers=5,8", "--seeds", "2"],
    );
    assert!(
        stdout.contains("each seed draws the [uncertain] inputs by Latin hypercube: clients.rate (lognormal median 1.0, p95 1.3), so the intervals cover what you are unsure of in those inputs as well as chance; not drawn, because a --grid key or --set sets them: upstream.workers; they do not vary"),
        "{stdout}"
    );
    let (header, _) = csv_of(&out.join("grid/risky-sweep/results.csv"));
    assert_eq!(
        header[..5],
        [
            "point",
            "seed",
            "upstream.workers",
            "clients.rate",
            "operations"
        ]
    );
    let stdout = sweep_of(
        &out.join("set"),
        &scenario,
        &[
            "--grid",
            "upstream.workers=5,8",
            "--set",
            "clients.rate=1.0",
            "--seeds",
            "2",
        ],
    );
    assert!(
        stdout.contains("seeds vary the randomness only (arrivals, service and network times drawn from their distributions, jitter, errors); the [uncertain] inputs are not drawn, because a --grid key or --set sets them: clients.rate, upstream.workers; they do not vary the model's assumptions"),
        "{stdout}"
    );
    let (header, _) = csv_of(&out.join("set/risky-sweep/results.csv"));
    assert_eq!(
        header[..4],
        ["point", "seed", "upstream.workers", "operations"]
    );
}

/// A sweep of drawn inputs split in shards merges to the bytes one process writes (the draws
/// depend on `sweep.json` alone), and `merge` refuses a row whose draw is not its seed's.
#[test]
fn a_sharded_sweep_of_drawn_inputs_merges_to_the_same_bytes() {
    let out = fresh_folder("risk-sweep-shards");
    let args = ["--grid", "policy.base=50ms,100ms,200ms", "--seeds", "4"];
    let scenario = write_risky_once(&out);
    sweep_of(&out.join("whole"), &scenario, &args);
    for shard in ["0/2", "1/2"] {
        sweep_of(
            &out.join("shards"),
            &scenario,
            &[&args[..], &["--shard", shard]].concat(),
        );
    }
    let shards = out.join("shards/risky-shards");
    let (zero, one) = (shards.join("shard-0-of-2"), shards.join("shard-1-of-2"));
    let merged = retrystorm(&[
        "merge",
        zero.to_str().unwrap(),
        one.to_str().unwrap(),
        "--no-charts",
        "--out",
        out.join("merged").to_str().unwrap(),
    ]);
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let (whole, merged) = (
        out.join("whole/risky-sweep"),
        out.join("merged/risky-sweep"),
    );
    for file in [
        "results.csv",
        "aggregate.csv",
        "recommendation.txt",
        "report.html",
        "sweep.json",
    ] {
        assert_eq!(read(&whole, file), read(&merged, file), "{file}");
    }
    // Shard 1 holds point 1; its first row's workers drawn one higher is not the seed's draw.
    let text = String::from_utf8(read(&one, "results.csv")).unwrap();
    let first = text.lines().nth(1).unwrap();
    let fields: Vec<&str> = first.split(',').collect();
    let other = (fields[4].parse::<u64>().unwrap() % 8 + 1).to_string();
    let damaged = [&fields[..4], &[other.as_str()], &fields[5..]]
        .concat()
        .join(",");
    fs::write(one.join("results.csv"), text.replace(first, &damaged)).unwrap();
    let refused = retrystorm(&[
        "merge",
        zero.to_str().unwrap(),
        one.to_str().unwrap(),
        "--no-charts",
        "--out",
        out.join("bad").to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(&format!(
            "results.csv:2: upstream.workers is \"{other}\", but seed {} of this sweep draws \"{}\"",
            fields[1], fields[4]
        )),
        "{stderr}"
    );
}

/// Every point is checked with every uncertain input at both ends of its range before anything
/// runs, and a point that fails is named with the draws: a `cap` drawn from 150 ms is below
/// the `base` of 200 ms at point 2 only.
#[test]
fn a_sweep_checks_every_point_at_both_ends_of_its_inputs() {
    let out = fresh_folder("risk-sweep-extremes");
    let path = out.join("scenario.toml");
    fs::write(
        &path,
        risky_once().replace(
            "\"upstream.workers\" = { uniform = [5, 8] }",
            "\"policy.cap\" = { uniform = [\"150ms\", \"3s\"] }",
        ),
    )
    .unwrap();
    let results = out.join("results");
    let output = retrystorm(&[
        "sweep",
        path.to_str().unwrap(),
        "--policy",
        "no jitter",
        "--grid",
        "policy.base=50ms,100ms,200ms",
        "--out",
        results.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && !results.exists(), "{stderr}");
    for part in [
        "[uncertain] policy.0.cap=150000us: cap 150ms is below base 200ms",
        "at point 2 (policy.base=200ms) with the [uncertain] inputs at their lowest (clients.rate=0.38",
        " policy.cap=150000us); every point of a grid must be a valid scenario with every [uncertain] input at either end of its range",
    ] {
        assert!(stderr.contains(part), "{part}\n{stderr}");
    }
}

/// The cost announced before a study runs bounds every draw of its uncertain inputs, not just
/// the lowest: with `clients.count` drawn from 100 to 400, the fewest events are those of 100
/// clients and the most (and the memory) those of 400, as `check` estimates each.
#[test]
fn a_studys_cost_bounds_both_ends_of_its_uncertain_inputs() {
    use retrystorm::import::load_str;
    use retrystorm::run::cost::Estimate;
    use retrystorm::scenario::Override;
    let text = RISKY.replace(
        "\"upstream.workers\" = { uniform = [5, 8] }\n\"clients.rate\" = { lognormal = { median = 1.0, p95 = 1.3 } }\n",
        "\"clients.count\" = { uniform = [100, 400] }\n",
    );
    let spec = StudySpec {
        kind: StudyKind::Replications,
        scenario_path: "risky.toml".into(),
        scenario_text: text.clone(),
        fixed: vec![],
        axes: vec![],
        replications: 12,
        min_replications: 12,
        configs: Default::default(),
    };
    let prepared = spec.prepare().unwrap();
    let at = |count: &str| {
        let scenario = load_str(
            &text,
            "risky.toml",
            &[Override::set("clients.count", count)],
        )
        .unwrap();
        Estimate::of(&scenario, 1).policies
    };
    let (low, high) = (at("100"), at("400"));
    for (policy, cost) in prepared.costs[0].iter().enumerate() {
        assert_eq!(cost.fewest_events, low[policy].fewest_events);
        assert_eq!(cost.most_events, high[policy].most_events);
        assert_eq!(cost.memory_bytes, high[policy].memory_bytes);
        assert!(high[policy].most_events > 3.0 * low[policy].most_events);
    }
}
