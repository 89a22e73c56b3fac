//! Criterion benchmark of a sweep's report: `finalize` (aggregate, recommendation with its
//! front, sensitivities and identical points, and files; no charts) for 10,000 points of the
//! tuning scenario x 3 seeds of synthetic rows (seven distinct results, so large groups of
//! identical points). Its aggregate once filtered every row for every point, quadratic in the
//! points: 0.50 s here then, 0.28 s with one pass over the rows, which writing the CSV files
//! now dominates (100,000 points x 3 seeds: the aggregate alone took 26.5 s, and takes
//! 0.39 s). The recommendation's analysis added 12% (149 ms against 133, medians of five
//! alternating pairs).

use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use retrystorm::sweep::report::finalize;
use retrystorm::sweep::{ResultRow, SweepSpec};
use retrystorm::vocabulary::metric::{METRICS, format_metric};

fn finalize_sweep(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tuning.toml");
    let bases: Vec<String> = (1..=100).map(|ms| format!("{ms}ms")).collect();
    let spec = SweepSpec {
        scenario_path: path.display().to_string(),
        scenario_text: std::fs::read_to_string(&path).expect("the bundled scenario"),
        fixed: vec![],
        axes: vec![
            format!("policy.base={}", bases.join(",")).parse().unwrap(),
            "policy.max_attempts=1..100".parse().unwrap(),
        ],
        seeds: 3,
        policy: "tuned".into(),
        requirements: vec!["success_rate>=0.5".into()],
        minimize: Some("p99_ms".into()),
        maximize: None,
        configs: Default::default(),
    };
    let prepared = spec.prepare().expect("a valid sweep");
    let rows: Vec<ResultRow> = (0..prepared.costs.len())
        .flat_map(|point| {
            (0..prepared.seeds.len()).map(move |seed_index| ResultRow {
                point,
                seed_index,
                metrics: METRICS
                    .iter()
                    .map(|metric| format_metric(metric, ((point + seed_index) % 7) as f64 / 7.0))
                    .collect(),
            })
        })
        .collect();
    let mut group = c.benchmark_group("sweep");
    group.sample_size(10);
    group.throughput(Throughput::Elements(rows.len() as u64));
    group.bench_function("finalize 10,000 points x 3 seeds", |bench| {
        bench.iter(|| finalize(&prepared, &rows, &[]).expect("finalizes"))
    });
    group.finish();
}

// No plots: criterion's plotting backend needs a system font, and nothing here may.
criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = finalize_sweep
}
criterion_main!(benches);
