//! Criterion benchmark of the engine: events per second on the large scenario, shortened.
//!
//! `scenarios/bench/large.toml` (a million open-loop clients, 200,000 operations/s, a 10 s crash)
//! is run for 25 s of simulated time instead of 60, one policy at a time on one thread, so that
//! criterion can repeat it. Throughput is reported in events per second. The full run, with peak
//! memory, is `retrystorm run scenarios/bench/large.toml --stats`. A second benchmark starts a
//! million closed-loop clients together at time zero (`scenarios/bench/together.toml`), which
//! the event queue once handled in quadratic time.

use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use retrystorm::engine::{Quiet, simulate};
use retrystorm::model::Model;
use retrystorm::scenario::{Override, load};

fn large_scenario(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/bench/large.toml");
    let shortened = Override::set("duration", "25s");
    let scenario = load(&path, &[shortened]).expect("the bundled benchmark scenario is valid");
    let mut group = c.benchmark_group("engine");
    group.sample_size(10);
    for policy in &scenario.policy {
        let model = Model::new(&scenario, policy);
        let events = simulate(&model, &mut Quiet).events;
        group.throughput(Throughput::Elements(events));
        group.bench_function(policy.name.get_ref(), |bench| {
            bench.iter(|| simulate(&model, &mut Quiet))
        });
    }
    group.finish();
}

fn together_scenario(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/bench/together.toml");
    let scenario = load(&path, &[]).expect("the bundled benchmark scenario is valid");
    let model = Model::new(&scenario, &scenario.policy[0]);
    let events = simulate(&model, &mut Quiet).events;
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
    targets = large_scenario, together_scenario
}
criterion_main!(benches);
