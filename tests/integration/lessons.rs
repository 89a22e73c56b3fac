//! Every bundled scenario states its lesson as `[[expect]]` claims, and a lesson counts only if
//! the headline numbers agree with it. These tests run every bundled scenario and fail if one
//! of its claims does not hold, on its own seed and on five others (a lesson is not one lucky
//! draw), or if a policy claimed better on a headline metric loses on another headline metric.
//! The few lessons a claim cannot state (a service's load in a topology) have tests of their
//! own below.

use std::path::Path;

use retrystorm::claims::evaluate;
use retrystorm::import::load;
use retrystorm::run::{PolicyRun, ScenarioRun};
use retrystorm::scenario::{Override, Scenario};

use crate::support::{bundled_scenario_paths, run};

/// The metrics a lesson must not contradict: success, goodput, amplification, recovery.
const HEADLINE: [&str; 4] = ["success_rate", "goodput_rps", "amplification", "recovery_s"];

fn bundled(path: &Path, seed: Option<u64>) -> Scenario {
    let overrides: Vec<Override> = seed
        .map(|seed| Override::set("seed", &seed.to_string()))
        .into_iter()
        .collect();
    load(path, &overrides).unwrap_or_else(|error| panic!("{error}"))
}

fn policy<'a>(run: &'a ScenarioRun, name: &str) -> &'a PolicyRun {
    run.policies
        .iter()
        .find(|policy| policy.name == name)
        .unwrap_or_else(|| panic!("no policy {name:?}"))
}

/// The claims of `run` that did not hold, in words.
fn broken_claims(run: &ScenarioRun) -> Vec<String> {
    evaluate(run)
        .into_iter()
        .filter(|result| !result.held)
        .map(|result| format!("{}: {result}", run.scenario.name))
        .collect()
}

/// A scenario that compares policies states what it teaches; every claim holds on the seed it
/// ships with.
#[test]
fn every_bundled_lesson_is_stated_and_holds() {
    let mut broken = Vec::new();
    for path in bundled_scenario_paths() {
        let scenario = bundled(&path, None);
        if scenario.policy.len() > 1 {
            // A map's lesson is about its maps: `[[map.expect]]`, judged by `retrystorm map`.
            let map_claims = scenario
                .map
                .as_ref()
                .is_some_and(|map| !map.get_ref().expect.is_empty());
            assert!(
                !scenario.expect.is_empty() || map_claims,
                "{} compares policies but states no lesson ([[expect]])",
                path.display()
            );
        }
        broken.extend(broken_claims(&run(&scenario)));
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

/// The same claims on five other seeds: the mechanism of each lesson, not a lucky draw of
/// arrivals and service times, makes it hold.
#[test]
fn bundled_lessons_hold_on_other_seeds() {
    let mut broken = Vec::new();
    for path in bundled_scenario_paths() {
        for seed in 1..=5 {
            let run = run(&bundled(&path, Some(seed)));
            broken.extend(
                broken_claims(&run)
                    .into_iter()
                    .map(|claim| format!("seed {seed}: {claim}")),
            );
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

/// A policy a lesson calls better on a headline metric is not worse on another headline
/// metric: at most 2% on success, goodput and amplification, at most one second on recovery
/// (a recovery that never came is infinitely long; a scenario without an incident has none).
#[test]
fn headline_metrics_never_contradict_a_lesson() {
    let mut contradictions = Vec::new();
    for path in bundled_scenario_paths() {
        let scenario = bundled(&path, None);
        let run = run(&scenario);
        for claim in scenario.expect.iter().map(|claim| claim.get_ref()) {
            let Some(other) = &claim.better_than else {
                continue;
            };
            if claim.window.is_some() || !HEADLINE.contains(&claim.metric.as_str()) {
                continue;
            }
            let (better, worse) = (
                &policy(&run, &claim.policy).summary,
                &policy(&run, other).summary,
            );
            for metric in HEADLINE {
                let (ours, theirs) = (
                    better.metric(metric).expect("a metric"),
                    worse.metric(metric).expect("a metric"),
                );
                let contradicts = match metric {
                    "recovery_s" => ours > theirs + 1.0,
                    "amplification" => ours > theirs * 1.02,
                    _ => ours < theirs * 0.98,
                };
                if contradicts {
                    contradictions.push(format!(
                        "{}: {} beats {} on {}, but {metric} is {ours} against {theirs}",
                        scenario.name, claim.policy, other, claim.metric
                    ));
                }
            }
        }
    }
    assert!(contradictions.is_empty(), "{contradictions:#?}");
}

/// Retrying at every layer multiplies on the database: the clients send an operation at most
/// twice, which bounds the db's load per operation when no tier retries; with the edge and the
/// api retrying three times each, one operation may put 2 x 4 x 4 = 32 attempts on the db
/// (SRE book, ch. 22: "4 attempts at each of 3 layers gives 64"). The run shows more than five
/// times the load of client-only retries.
#[test]
fn retry_layers_multiply_on_the_database() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/retry-layers.toml");
    let run = run(&bundled(&path, None));
    let db = |name: &str| {
        policy(&run, name)
            .services
            .iter()
            .find(|service| service.name == "db")
            .expect("a db")
            .amplification
    };
    let (every, clients) = (db("every layer retries"), db("only the clients retry"));
    assert!(clients <= 2.0, "only the clients: {clients}");
    assert!(
        every >= 5.0 * clients,
        "db amplification {every} against {clients}"
    );
}

/// double-charge: the provider drops nothing (its queue holds every payment), so every
/// payment sent is charged once it is served. With a key made per press, every press is a new
/// payment: the duplicates are the presses, exactly. With the key made per page, the provider
/// commits one payment per intent, exactly, however many presses.
#[test]
fn every_press_with_a_new_key_is_a_second_charge() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/double-charge.toml");
    let run = run(&bundled(&path, None));
    let count =
        |name: &str, metric: &str| policy(&run, name).summary.metric(metric).expect("a metric");
    let writes = |name: &str| policy(&run, name).services[0].totals.writes as f64;
    for name in ["no presses", "new key per press", "key per page"] {
        assert_eq!(policy(&run, name).services[0].totals.rejected_overload, 0);
    }
    let presses = count("new key per press", "manual_retries");
    assert!(presses > 0.0);
    assert_eq!(count("new key per press", "duplicate_writes"), presses);
    assert_eq!(
        writes("new key per press"),
        count("new key per press", "intents") + presses
    );
    assert!(count("key per page", "manual_retries") > 0.0);
    assert_eq!(writes("key per page"), count("key per page", "intents"));
}
