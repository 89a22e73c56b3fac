//! Result folders are written as a whole: a rerun replaces every file, an interrupt or a kill
//! leaves the earlier result whole, and links are never written through.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The benchmark scenario, a few thousand clients for one second (its outage, at 20 s, would
/// lie outside the run: the incident is declared inside it): a quick result.
const QUICK: [&str; 9] = [
    "run",
    "scenarios/bench/large.toml",
    "--set",
    "duration=1s",
    "--set",
    "incident.start=500ms",
    "--set",
    "clients.count=1000",
    "--no-charts",
];

fn retrystorm(args: &[&str], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(args)
        .args(["--out", out.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("retrystorm runs")
}

/// The full benchmark: a million clients, several seconds of work per policy.
fn start_long_run(out: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(["run", "scenarios/bench/large.toml", "--no-charts", "--out"])
        .arg(out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("retrystorm starts")
}

fn fresh(name: &str) -> PathBuf {
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&folder);
    fs::create_dir_all(&folder).unwrap();
    folder
}

fn names(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn staging_folders(out: &Path) -> Vec<String> {
    names(out)
        .into_iter()
        .filter(|name| name.contains(".partial-"))
        .collect()
}

/// Waits until the run has made its staging folder (it runs, and has not written anything).
fn wait_for_staging(out: &Path, child: &mut Child) {
    let started = Instant::now();
    while staging_folders(out).is_empty() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it staged"
        );
        assert!(started.elapsed() < Duration::from_secs(60), "no staging");
        thread::sleep(Duration::from_millis(20));
    }
    thread::sleep(Duration::from_millis(200));
}

fn success(output: &Output) {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A rerun leaves exactly its own files: the trace and charts of the earlier run are gone, and
/// no staging folder remains.
#[test]
fn a_rerun_replaces_every_file_of_the_earlier_result() {
    let out = fresh("folders-rerun");
    let mut first = QUICK.to_vec();
    first.pop();
    first.extend(["--trace", "--format", "svg"]);
    success(&retrystorm(&first, &out));
    let folder = out.join("bench-large");
    assert!(names(&folder).contains(&"trace.csv".to_string()));
    assert!(names(&folder).contains(&"overview.svg".to_string()));

    success(&retrystorm(&QUICK, &out));
    assert_eq!(
        names(&folder),
        [
            "report.html",
            "scenario.toml",
            "summary.csv",
            "summary.json",
            "timeseries.csv"
        ]
    );
    assert_eq!(names(&out), ["bench-large"]);
}

/// SIGINT and SIGTERM in the middle of a run: the process exits with 128 plus the signal, the
/// earlier result is byte for byte what it was, and the staging folder is gone.
#[test]
fn an_interrupt_leaves_the_earlier_result_whole() {
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let out = fresh(&format!("folders-signal-{signal}"));
        success(&retrystorm(&QUICK, &out));
        let summary = out.join("bench-large").join("summary.json");
        let before = fs::read(&summary).unwrap();

        let mut child = start_long_run(&out);
        wait_for_staging(&out, &mut child);
        // SAFETY: signalling a child process this test started and has not reaped.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "signal {signal}");
        assert_eq!(fs::read(&summary).unwrap(), before);
        assert_eq!(names(&out), ["bench-large"]);
    }
}

/// A SIGKILL cannot be caught: the staging folder stays, beside the intact earlier result, and
/// the next run of the same result removes it.
#[test]
fn a_killed_runs_staging_is_removed_by_the_next_run() {
    let out = fresh("folders-kill");
    success(&retrystorm(&QUICK, &out));
    let mut child = start_long_run(&out);
    wait_for_staging(&out, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(staging_folders(&out).len(), 1);
    assert!(out.join("bench-large").join("summary.json").exists());

    success(&retrystorm(&QUICK, &out));
    assert_eq!(names(&out), ["bench-large"]);
}

/// A link at the result's name is refused and what it points to is untouched; so is a folder
/// of other files, which a result would otherwise replace.
#[test]
fn links_and_foreign_folders_are_never_replaced() {
    let out = fresh("folders-links");
    let elsewhere = out.join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    fs::write(elsewhere.join("summary.json"), "not ours").unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("bench-large")).unwrap();
    let output = retrystorm(&QUICK, &out);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is a symbolic link"), "{stderr}");
    assert_eq!(names(&elsewhere), ["summary.json"]);
    assert_eq!(
        fs::read(elsewhere.join("summary.json")).unwrap(),
        b"not ours"
    );

    fs::remove_file(out.join("bench-large")).unwrap();
    fs::rename(&elsewhere, out.join("bench-large")).unwrap();
    fs::remove_file(out.join("bench-large").join("summary.json")).unwrap();
    fs::write(out.join("bench-large").join("notes.txt"), "mine").unwrap();
    let output = retrystorm(&QUICK, &out);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no summary.json"), "{stderr}");
    assert_eq!(names(&out.join("bench-large")), ["notes.txt"]);
    assert_eq!(names(&out), ["bench-large"]);
}

/// A sweep's folder is replaced as a whole too: the heatmaps of an earlier sweep do not sit
/// beside results without charts, and shards write beside it, not into it.
#[test]
fn a_sweep_replaces_its_folder_and_shards_write_beside_it() {
    let out = fresh("folders-sweep");
    let sweep = |extra: &[&str]| {
        let mut args = vec![
            "sweep",
            "scenarios/contention.toml",
            "--policy",
            "full jitter",
            "--grid",
            "policy.base=5ms,10ms",
            "--grid",
            "policy.max_attempts=1,2",
            "--seeds",
            "1",
        ];
        args.extend(extra);
        success(&retrystorm(&args, &out));
    };
    sweep(&["--format", "svg"]);
    let folder = out.join("contention-sweep");
    assert!(
        names(&folder)
            .iter()
            .any(|name| name.starts_with("heatmap-"))
    );
    sweep(&["--no-charts", "--shard", "0/2"]);
    sweep(&["--no-charts"]);
    assert_eq!(
        names(&folder),
        [
            "aggregate.csv",
            "recommendation.txt",
            "results.csv",
            "sweep.json"
        ]
    );
    assert_eq!(
        names(&out.join("contention-shards").join("shard-0-of-2")),
        ["results.csv", "shard.json", "sweep.json"]
    );
    assert_eq!(names(&out), ["contention-shards", "contention-sweep"]);
}
