//! `retrystorm sweep` and `retrystorm merge` end to end: validation before running,
//! recommendations, and the same bytes for any thread count and any sharding.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn retrystorm(args: &[&str], threads: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .expect("retrystorm runs")
}

fn fresh(name: &str) -> PathBuf {
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&folder);
    folder
}

/// A small sweep of the bundled tuning scenario: 3 x 2 x 2 = 12 points, 2 seeds.
const GRID: [&str; 12] = [
    "--grid",
    "policy.base=50ms,200ms,400ms",
    "--grid",
    "policy.max_attempts=3..4",
    "--grid",
    "policy.jitter=none,full",
    "--seeds",
    "2",
    "--set",
    "duration=16s",
    "--set",
    "clients.count=500",
];

fn sweep(out: &Path, extra: &[&str], threads: &str) -> Output {
    let mut args = vec![
        "sweep",
        "scenarios/tuning.toml",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(&GRID);
    args.extend_from_slice(&["--require", "success_rate>=0.95", "--minimize", "p99_ms"]);
    args.extend_from_slice(extra);
    let output = retrystorm(&args, threads);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn files(folder: &Path) -> Vec<(String, Vec<u8>)> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| (name.clone(), std::fs::read(folder.join(&name)).unwrap()))
        .collect()
}

#[test]
fn a_sweep_writes_results_aggregate_recommendation_and_heatmaps() {
    let out = fresh("sweep-basic");
    let output = sweep(&out, &[], "2");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("12 points x 2 seeds; ran 24 simulations"),
        "{stdout}"
    );
    assert!(stdout.contains("points meet the requirements"), "{stdout}");
    let folder = out.join("tuning-sweep");
    let results = std::fs::read_to_string(folder.join("results.csv")).unwrap();
    assert_eq!(results.lines().count(), 1 + 24);
    assert!(
        results.starts_with("point,seed,policy.base,policy.max_attempts,policy.jitter,operations,")
    );
    let aggregate = std::fs::read_to_string(folder.join("aggregate.csv")).unwrap();
    assert_eq!(aggregate.lines().count(), 1 + 12);
    let header = aggregate.lines().next().unwrap();
    for column in [
        "success_rate_mean",
        "success_rate_ci_low",
        "success_rate_ci_high",
        "p99_ms_mean",
        "meets_requirements",
    ] {
        assert!(
            header.split(',').any(|name| name == column),
            "aggregate lacks {column}"
        );
    }
    let recommendation = std::fs::read_to_string(folder.join("recommendation.txt")).unwrap();
    assert!(stdout.contains(&recommendation));
    if recommendation.contains("recommended:") {
        // The snippet is a valid policy table.
        let snippet = recommendation
            .split("# Paste into a scenario:\n")
            .nth(1)
            .unwrap();
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tuning.toml"),
        )
        .unwrap();
        let base = text.split("[[policy]]").next().unwrap();
        retrystorm::scenario::load_str(&format!("{base}{snippet}"), "snippet.toml", &[]).unwrap();
    } else {
        assert!(recommendation.contains("closest:"), "{recommendation}");
    }
    for metric in [
        "success_rate",
        "p99_ms",
        "amplification",
        "duplicate_writes",
    ] {
        for extension in ["png", "svg"] {
            let path = folder.join(format!("heatmap-{metric}.{extension}"));
            assert!(
                std::fs::metadata(&path).unwrap().len() > 10_000,
                "{}",
                path.display()
            );
        }
    }
}

#[test]
fn unmeetable_requirements_name_the_closest_point() {
    let out = fresh("sweep-unmeetable");
    let output = sweep(
        &out,
        &["--require", "duplicate_writes>=1000000", "--no-charts"],
        "2",
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("0 of 12 points meet the requirements"),
        "{stdout}"
    );
    assert!(
        stdout.contains("no point meets every requirement; closest: point"),
        "{stdout}"
    );
    assert!(
        stdout.contains("misses duplicate_writes >= 1000000"),
        "{stdout}"
    );
}

#[test]
fn the_same_bytes_for_any_thread_count_and_any_sharding() {
    let whole = fresh("sweep-whole");
    sweep(&whole, &[], "2");
    let single_thread = fresh("sweep-one-thread");
    sweep(&single_thread, &[], "1");
    assert_eq!(
        files(&whole.join("tuning-sweep")),
        files(&single_thread.join("tuning-sweep"))
    );

    let sharded = fresh("sweep-sharded");
    for shard in ["0/3", "1/3", "2/3"] {
        sweep(&sharded, &["--shard", shard], "2");
    }
    let parts = sharded.join("tuning-shards");
    let merged = fresh("sweep-merged");
    let output = retrystorm(
        &[
            "merge",
            parts.join("shard-2-of-3").to_str().unwrap(),
            parts.join("shard-0-of-3").to_str().unwrap(),
            parts.join("shard-1-of-3").to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ],
        "2",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (expected, actual) = (
        files(&whole.join("tuning-sweep")),
        files(&merged.join("tuning-sweep")),
    );
    assert_eq!(
        expected.iter().map(|(name, _)| name).collect::<Vec<_>>(),
        actual.iter().map(|(name, _)| name).collect::<Vec<_>>()
    );
    for ((name, a), (_, b)) in expected.iter().zip(&actual) {
        assert!(
            a == b,
            "{name} differs between the whole sweep and the merged shards"
        );
    }

    // A missing or repeated shard is refused.
    let missing = retrystorm(
        &[
            "merge",
            parts.join("shard-0-of-3").to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ],
        "1",
    );
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("shards missing: 1/3, 2/3"));
    let twice = retrystorm(
        &[
            "merge",
            parts.join("shard-0-of-3").to_str().unwrap(),
            parts.join("shard-0-of-3").to_str().unwrap(),
        ],
        "1",
    );
    assert!(String::from_utf8_lossy(&twice.stderr).contains("given twice"));

    // Edited files are refused with what is wrong, not a panic: a shard count of zero, and a
    // manifest whose seed count disagrees with its seeds.
    let edited = fresh("sweep-edited");
    for shard in ["shard-0-of-3", "shard-1-of-3", "shard-2-of-3"] {
        let target = edited.join(shard);
        std::fs::create_dir_all(&target).unwrap();
        for file in ["results.csv", "sweep.json", "shard.json"] {
            std::fs::copy(parts.join(shard).join(file), target.join(file)).unwrap();
        }
    }
    let merge_edited = || {
        let folders: Vec<String> = ["shard-0-of-3", "shard-1-of-3", "shard-2-of-3"]
            .iter()
            .map(|shard| edited.join(shard).to_str().unwrap().to_string())
            .collect();
        let mut args = vec!["merge"];
        args.extend(folders.iter().map(String::as_str));
        args.extend(["--out", merged.to_str().unwrap()]);
        let output = retrystorm(&args, "1");
        assert_eq!(output.status.code(), Some(1));
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let shard_json = edited.join("shard-0-of-3").join("shard.json");
    let original = std::fs::read_to_string(&shard_json).unwrap();
    std::fs::write(
        &shard_json,
        original.replace("\"count\": 3", "\"count\": 0"),
    )
    .unwrap();
    let message = merge_edited();
    assert!(
        message.contains("shard.json") && message.contains("1 <= N"),
        "{message}"
    );
    std::fs::write(&shard_json, original).unwrap();
    for shard in ["shard-0-of-3", "shard-1-of-3", "shard-2-of-3"] {
        let manifest = edited.join(shard).join("sweep.json");
        let text = std::fs::read_to_string(&manifest).unwrap();
        std::fs::write(&manifest, text.replacen("\"seeds\": 2", "\"seeds\": 5", 1)).unwrap();
    }
    let message = merge_edited();
    assert!(message.contains("seed_values"), "{message}");
}

#[test]
fn bad_grids_fail_before_anything_runs() {
    let out = fresh("sweep-bad");
    let cases: [(&[&str], &str); 9] = [
        (
            &[
                "--grid",
                "policy.max_attempts=-9000000000000000000..9000000000000000000",
            ],
            "longer than 10,000 values",
        ),
        (
            &[
                "--grid",
                "policy.base=50ms",
                "--shard",
                "0/18446744073709551615",
            ],
            "1 <= N <= 10000",
        ),
        (&["--grid", "policy.bse=50ms,100ms"], "did you mean `base`?"),
        (
            &["--grid", "policy.base=50ms,fast"],
            "--grid policy.base=fast",
        ),
        (
            &["--grid", "policy.max_attempts=2.5"],
            "--grid policy.max_attempts=2.5",
        ),
        (&["--grid", "policy.base="], "a value is empty"),
        (
            &["--grid", "policy.base=50ms", "--shard", "3/3"],
            "0 <= K < N",
        ),
        (
            &["--grid", "policy.base=50ms", "--require", "sucess_rate>=1"],
            "did you mean `success_rate`?",
        ),
        (
            &["--grid", "policy.base=50ms", "--minimize", "latency"],
            "unknown metric `latency`",
        ),
    ];
    for (flags, expected) in cases {
        let mut args = vec![
            "sweep",
            "scenarios/tuning.toml",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(flags);
        let output = retrystorm(&args, "2");
        assert!(!output.status.success(), "{flags:?} was accepted");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{flags:?}: {stderr}");
        assert!(
            !out.exists(),
            "{flags:?}: something ran and wrote {}",
            out.display()
        );
    }
    // A scenario with several policies needs --policy.
    let output = retrystorm(
        &[
            "sweep",
            "scenarios/thundering-herd.toml",
            "--grid",
            "policy.base=50ms,100ms",
        ],
        "2",
    );
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("choose the one to tune with --policy")
    );
}

/// A tier's retry budget is a grid key like any other, named by the service; the recommended
/// policy carries the point's topology as `overrides`, and a grid over a key the tuned policy
/// overrides (and so could never change) is refused before anything runs.
#[test]
fn a_sweep_tunes_a_tiers_retries() {
    let out = fresh("sweep-tiers");
    let output = retrystorm(
        &[
            "sweep",
            "scenarios/retry-layers.toml",
            "--policy",
            "every layer retries",
            "--grid",
            "service.api.retry.max_attempts=0,3",
            "--grid",
            "service.edge.retry.max_attempts=0,3",
            "--seeds",
            "1",
            "--require",
            "success_rate>=0.7",
            "--no-charts",
            "--out",
            out.to_str().unwrap(),
        ],
        "2",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let recommendation =
        std::fs::read_to_string(out.join("retry-layers-sweep/recommendation.txt")).unwrap();
    // Only retrying at no tier recovers from the brownout: point 0 (first key slowest).
    assert!(
        recommendation.contains("1 of 4 points meet the requirements"),
        "{recommendation}"
    );
    assert!(
        recommendation.contains(
            "[policy.overrides]\n\"service.api.retry.max_attempts\" = 0\n\"service.edge.retry.max_attempts\" = 0"
        ),
        "{recommendation}"
    );
    let refused = retrystorm(
        &[
            "sweep",
            "scenarios/retry-layers.toml",
            "--policy",
            "only the clients retry",
            "--grid",
            "service.api.retry.max_attempts=0,3",
            "--out",
            out.to_str().unwrap(),
        ],
        "2",
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("would change nothing"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

/// In a scenario with several policies, `policy.base` sets the tuned one only: in `contention`
/// the policy without backoff has `cap = "0s"`, below any base the grid tries, and must not
/// make every point invalid, since it never runs.
#[test]
fn a_grid_key_for_every_policy_sets_only_the_tuned_one() {
    let out = fresh("sweep-tuned-only");
    let output = retrystorm(
        &[
            "sweep",
            "scenarios/contention.toml",
            "--policy",
            "full jitter",
            "--grid",
            "policy.base=5ms,10ms",
            "--seeds",
            "1",
            "--no-charts",
            "--out",
            out.to_str().unwrap(),
        ],
        "2",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = std::fs::read_to_string(out.join("contention-sweep/results.csv")).unwrap();
    assert_eq!(results.lines().count(), 3, "{results}");
}
