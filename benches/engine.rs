//! Criterion benchmark of the engine: events per second on the large scenario, shortened.
//!
//! `scenarios/bench/large.toml` (a million open-loop clients, 200,000 operations/s, a 10 s crash)
//! is run for 25 s of simulated time instead of 60, one policy at a time on one thread, so that
//! criterion can repeat it. Throughput is reported in events per second. The full run, with peak
//! memory, is `retrystorm run scenarios/bench/large.toml --stats`. A second benchmark starts a
//! million closed-loop clients together at time zero (`scenarios/bench/together.toml`), which
//! the event queue once handled in quadratic time. A third runs the standard single-tier outage
//! (`scenarios/bench/standard.toml`: 10,000 clients, 2,000 operations/s, 60 s) whole, per
//! policy: the size of most scenarios people write, where the per-bucket costs of the event
//! queue, not its per-event ones, used to dominate.

use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use retrystorm::engine::{Quiet, simulate};
use retrystorm::import::load;
use retrystorm::model::Model;
use retrystorm::scenario::Override;

/// Benchmarks every policy of the bundled scenario `name` with `overrides`, in group `group`.
fn every_policy(c: &mut Criterion, group: &str, name: &str, overrides: &[Override]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    let scenario = load(&path, overrides).expect("the bundled benchmark scenario is valid");
    let mut group = c.benchmark_group(group);
    group.sample_size(10);
    for policy in &scenario.policy {
        let model = Model::new(&scenario, policy);
        let events = simulate(&model, &mut Quiet).expect("time advances").events;
        group.throughput(Throughput::Elements(events));
        group.bench_function(policy.name.get_ref(), |bench| {
            bench.iter(|| simulate(&model, &mut Quiet))
        });
    }
    group.finish();
}

fn large_scenario(c: &mut Criterion) {
    let shortened = Override::set("duration", "25s");
    every_policy(c, "engine", "scenarios/bench/large.toml", &[shortened]);
}

fn standard_scenario(c: &mut Criterion) {
    every_policy(c, "standard", "scenarios/bench/standard.toml", &[]);
}

fn together_scenario(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/bench/together.toml");
    let scenario = load(&path, &[]).expect("the bundled benchmark scenario is valid");
    let model = Model::new(&scenario, &scenario.policy[0]);
    let events = simulate(&model, &mut Quiet).expect("time advances").events;
    let mut group = c.benchmark_group("together");
    group.sample_size(10);
    group.throughput(Throughput::Elements(events));
    group.bench_function("1M clients at t = 0", |bench| {
        bench.iter(|| simulate(&model, &mut Quiet))
    });
    group.finish();
}

// No plots: criterion's plotting backend needs a system font, and nothing here may.
criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = large_scenario, standard_scenario, together_scenario
}
criterion_main!(benches);
