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
            "report.html",
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

/// A scenario named `tuning-shards` would run into the folder that holds `tuning`'s shards,
/// and its next run would replace them (issue 23); one named `tuning-sweep` would share the
/// sweep's folder, and `tuning-map` or `tuning-risk` the folders of its map and merged
/// replications. Names with those endings are refused where the name is written, saying which
/// folders they would share; `tuning` itself and a name merely containing the word are fine.
#[test]
fn a_scenario_name_cannot_be_a_sweeps_folder() {
    let base = "duration = \"1s\"\n[clients]\ncount = 1\nrate = 1.0\n[upstream]\nworkers = 1\nservice_time = \"1ms\"\n";
    for name in ["tuning-shards", "tuning-sweep", "tuning-map", "tuning-risk"] {
        let text = format!("name = \"{name}\"\n{base}");
        let error = retrystorm::import::load_str(&text, "s.toml", &[])
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("s.toml:1:8: ")
                && error.contains("tuning-sweep/, tuning-shards/, tuning-map/"),
            "{error}"
        );
    }
    for name in [
        "tuning",
        "shards-of-tuning",
        "sweeper",
        "map-of-tuning",
        "risky",
    ] {
        retrystorm::import::load_str(&format!("name = \"{name}\"\n{base}"), "s.toml", &[]).unwrap();
    }
}

/// A scenario of `points` capacity points over 100 s, one client: resolving writes each point
/// out in full, about three times its bytes here.
fn capacity_scenario(points: usize) -> String {
    let curve: Vec<String> = (0..points)
        .map(|at| format!("[\"{}ms\",{}]", at, if at % 2 == 0 { "1.0" } else { "0.5" }))
        .collect();
    format!(
        "name = \"near-cap\"\nduration = \"100s\"\n[clients]\ncount = 1\nrate = 1.0\n[upstream]\nworkers = 1\nservice_time = \"1ms\"\ncapacity = [{}]\n",
        curve.join(",")
    )
}

/// Whatever is accepted reloads from its resolved form (issue 23: a 3.1 MB scenario resolved
/// to 5.0 MB, which `check` refused). A scenario under the 4 MiB cap whose resolution is over
/// it is refused by `check` and `run`, saying so; one whose resolution is just under it runs,
/// its resolved `scenario.toml` passes `check` and runs to the same bytes in every file.
#[test]
fn every_accepted_scenario_reloads_from_its_resolved_form() {
    let root = fresh("resolved-round-trip");
    let too_big = root.join("too-big.toml");
    fs::write(&too_big, capacity_scenario(100_000)).unwrap();
    assert!(fs::metadata(&too_big).unwrap().len() < 4 * 1024 * 1024);
    for command in ["check", "run"] {
        let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .args([command, too_big.to_str().unwrap()])
            .current_dir(&root)
            .output()
            .expect("retrystorm runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("too-big.toml: its resolved form")
                && stderr.contains("larger than the 4 MiB"),
            "{stderr}"
        );
    }
    let near = root.join("near.toml");
    fs::write(&near, capacity_scenario(80_000)).unwrap();
    let first = root.join("first");
    let output = retrystorm(&["run", near.to_str().unwrap(), "--no-charts"], &first);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let resolved = first.join("near-cap").join("scenario.toml");
    let size = fs::metadata(&resolved).unwrap().len();
    assert!(size > 4_000_000 && size <= 4 * 1024 * 1024, "{size}");
    let again = root.join("again");
    let output = retrystorm(&["run", resolved.to_str().unwrap(), "--no-charts"], &again);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let folder = |out: &Path| out.join("near-cap");
    assert_eq!(names(&folder(&first)), names(&folder(&again)));
    // report.html shows the resolved file's own header comment as the scenario's notes, the
    // one difference a reload makes; every result file is the same.
    for name in names(&folder(&first))
        .into_iter()
        .filter(|name| name != "report.html")
    {
        assert!(
            fs::read(folder(&first).join(&name)).unwrap()
                == fs::read(folder(&again).join(&name)).unwrap(),
            "{name} differs"
        );
    }
    fs::remove_dir_all(root).unwrap();
}
