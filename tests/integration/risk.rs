//! Replications, probabilities and maps (issue 28): `run --replications`, `[uncertain]`,
//! `retrystorm map`, and their shards.

use std::fs;
use std::path::Path;

use retrystorm::risk::{StudyKind, StudySpec, map, replications};
use retrystorm::sweep::Shard;
use std::sync::atomic::AtomicUsize;

use crate::support::{fresh_folder, retrystorm};

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
/// shown at all; an uncertain input is checked where it is
/// written; a sweep refuses a scenario with uncertain inputs it would not draw.
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
    let sweep = retrystorm(&[
        "sweep",
        &write("risky.toml", RISKY),
        "--grid",
        "policy.base=50ms,100ms",
        "--policy",
        "no jitter",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&sweep.stderr);
    assert!(stderr.contains("[uncertain]"), "{stderr}");
}
