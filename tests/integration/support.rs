//! Helpers shared by the integration tests.

use retrystorm::engine::{AttemptRecord, Observer};
use retrystorm::import::{load, load_str};
use retrystorm::model::Model;
use retrystorm::run::{ScenarioRun, run_scenario};
use retrystorm::scenario::Scenario;

/// Every `scenarios/*.toml`, in name order.
pub fn bundled_scenario_paths() -> Vec<std::path::PathBuf> {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(&folder)
        .expect("scenarios/")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "toml")
        })
        .collect();
    paths.sort();
    assert!(paths.len() >= 10, "bundled scenarios: {paths:?}");
    paths
}

/// A scenario from TOML text, which must be valid.
pub fn scenario(text: &str) -> Scenario {
    load_str(text, "test.toml", &[]).unwrap_or_else(|error| panic!("{error}"))
}

/// Runs every policy without observers, as `run` does without `--trace`: the engine then
/// handles refusals and answers ahead of their time where it can.
pub fn run(scenario: &Scenario) -> ScenarioRun {
    let observers = vec![retrystorm::engine::Quiet; scenario.policy.len()];
    run_scenario(scenario, observers)
        .unwrap_or_else(|stalled| panic!("{stalled}"))
        .0
}

/// Runs every policy and keeps every attempt record.
pub fn run_traced(scenario: &Scenario) -> (ScenarioRun, Vec<Vec<AttemptRecord>>) {
    let observers = vec![Collector::default(); scenario.policy.len()];
    let (run, observers) =
        run_scenario(scenario, observers).unwrap_or_else(|stalled| panic!("{stalled}"));
    (
        run,
        observers
            .into_iter()
            .map(|collector| collector.records)
            .collect(),
    )
}

/// An observer that keeps every attempt.
#[derive(Debug, Default, Clone)]
pub struct Collector {
    pub records: Vec<AttemptRecord>,
}

impl Observer for Collector {
    fn attempt(&mut self, record: &AttemptRecord) {
        self.records.push(record.clone());
    }
}

/// The error `load_str` gives for `base` with `from` replaced by `to`, as the user sees it.
pub fn error_with(base: &str, from: &str, to: &str) -> String {
    assert!(base.contains(from), "{from:?} is not in the scenario");
    let text = base.replacen(from, to, 1);
    match load_str(&text, "bad.toml", &[]) {
        Ok(_) => panic!("accepted: {text}"),
        Err(error) => error.to_string(),
    }
}

/// Asserts that `message` contains every one of `parts`.
pub fn assert_contains(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "{message:?} lacks {part:?}");
    }
}

/// The relative difference of `measured` from `expected`.
pub fn relative_error(measured: f64, expected: f64) -> f64 {
    (measured - expected).abs() / expected
}

/// The model of a one-upstream scenario whose one policy imports `config` (the text of a
/// client config, written next to the scenario as `name`).
pub fn model_importing(name: &str, config: &str) -> Model {
    let folder = std::env::temp_dir().join(format!("retrystorm-import-{name}"));
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join(name), config).unwrap();
    let path = folder.join("s.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"x\"\nduration = \"1s\"\n[clients]\ncount = 1\nrate = 1.0\n[upstream]\nworkers = 1\nservice_time = \"1ms\"\n[[policy]]\nname = \"imported\"\nimport = \"{name}\"\n"
        ),
    )
    .unwrap();
    let scenario = load(&path, &[]).unwrap_or_else(|error| panic!("{error}"));
    Model::new(&scenario, &scenario.policy[0])
}

/// The `retrystorm` binary run with `args` from the repository's root.
pub fn retrystorm(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("retrystorm runs")
}

/// An empty folder `name` under the test target's temporary folder.
pub fn fresh_folder(name: &str) -> std::path::PathBuf {
    let folder = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    folder
}

/// Erlang B: the share of arrivals an M/G/c/c loss system refuses at offered load `a` (in
/// servers), by the recurrence `B(k) = a B(k-1) / (k + a B(k-1))`; insensitive to the
/// holding time's distribution beyond its mean.
pub fn erlang_b(c: u32, a: f64) -> f64 {
    (1..=c).fold(1.0, |b, k| a * b / (f64::from(k) + a * b))
}
