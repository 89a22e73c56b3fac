//! The committed examples in output/ are what the code produces today, byte for byte, and the
//! cost estimate `check` prints brackets the events they take.

use std::path::{Path, PathBuf};
use std::process::Command;

use retrystorm::import::load;
use retrystorm::run::cost::Estimate;

use crate::support::bundled_scenario_paths;

#[test]
fn committed_examples_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scenarios = bundled_scenario_paths();
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("examples");
    let _ = std::fs::remove_dir_all(&out);
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .current_dir(root)
        .arg("run")
        .args(&scenarios)
        .args(["--no-charts", "--stats", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for scenario in &scenarios {
        let name = scenario.file_stem().unwrap().to_string_lossy();
        let topology = out.join(&*name).join("services.csv").exists();
        assert_eq!(
            topology,
            root.join("output")
                .join(&*name)
                .join("services.csv")
                .exists(),
            "output/{name}/services.csv is stale"
        );
        let per_service = topology.then_some("services.csv");
        for file in [
            "timeseries.csv",
            "summary.csv",
            "summary.json",
            "scenario.toml",
            "report.html",
        ]
        .into_iter()
        .chain(per_service)
        {
            let fresh = std::fs::read(out.join(&*name).join(file)).unwrap();
            let committed = std::fs::read(root.join("output").join(&*name).join(file))
                .unwrap_or_else(|_| panic!("output/{name}/{file} is not committed"));
            assert!(
                fresh == committed,
                "output/{name}/{file} is stale: regenerate the examples with `cargo run --release -- run scenarios/*.toml`"
            );
        }
    }
    let stdout = String::from_utf8(output.stdout).unwrap();
    for scenario in &scenarios {
        estimate_brackets_the_events(scenario, &stdout);
    }
}

/// A bundled scenario with a `[map]` keeps its map in `output/<name>-map/` (the gallery shows
/// it), and `retrystorm map` draws the same one today, byte for byte.
#[test]
fn committed_maps_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("example-maps");
    let _ = std::fs::remove_dir_all(&out);
    let mut maps = 0;
    for scenario in bundled_scenario_paths() {
        if load(&scenario, &[]).unwrap().map.is_none() {
            continue;
        }
        maps += 1;
        // study.json keeps the path as given: the one the regenerating command uses.
        let relative = Path::new("scenarios").join(scenario.file_name().unwrap());
        let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .current_dir(root)
            .arg("map")
            .arg(&relative)
            .args(["--no-charts", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let name = format!("{}-map", scenario.file_stem().unwrap().to_string_lossy());
        for file in ["map.csv", "map-runs.csv", "study.json", "map.html"] {
            let fresh = std::fs::read(out.join(&name).join(file)).unwrap();
            let committed = std::fs::read(root.join("output").join(&name).join(file))
                .unwrap_or_else(|_| panic!("output/{name}/{file} is not committed"));
            assert!(
                fresh == committed,
                "output/{name}/{file} is stale: regenerate it with `cargo run --release -- map {}`",
                relative.display()
            );
        }
    }
    assert!(maps > 0, "no bundled scenario has a [map]");
}

/// Each policy's events, as `--stats` counted them, lie between the estimate's fewest (every
/// operation ended as cheaply as it can be, for the fewest arrivals the draws can bring) and
/// most (every send allowed, each with every event a request can cause, for the most
/// arrivals): the range is a bound, with no slack.
fn estimate_brackets_the_events(scenario: &Path, stdout: &str) {
    let loaded = load(scenario, &[]).unwrap();
    let estimate = Estimate::of(&loaded, 1);
    let start = stdout
        .find(&format!("{}: results in", loaded.name))
        .unwrap_or_else(|| panic!("{} did not run", loaded.name));
    for (policy, cost) in loaded.policy.iter().zip(&estimate.policies) {
        let prefix = format!("stats: {}: ", policy.name.get_ref());
        let line = stdout[start..]
            .lines()
            .find(|line| line.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no stats for {prefix}"));
        let events: f64 = line[prefix.len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            events >= cost.fewest_events && events <= cost.most_events,
            "{} {:?}: {events} events, estimated {} to {}",
            loaded.name,
            policy.name.get_ref(),
            cost.fewest_events,
            cost.most_events
        );
    }
}
