//! AWS's backoff simulation, reproduced: clients racing to update one row with optimistic
//! concurrency control.

use std::path::Path;

use retrystorm::engine::{Quiet, simulate};
use retrystorm::import::load;
use retrystorm::model::Model;

/// What M. Brooker's simulator (`aws-samples/aws-arch-backoff-simulator` @66cb169, ported to
/// Python 3 and checked bit for bit against Python 2) gives for 100 clients: the mean over 100
/// runs of the writes per run and of the time until the last client is done (ms), averaged over
/// 10 seeds, with the standard deviation of a 100-run mean across those seeds. The post's own
/// figures (one 100-run mean each) are within these: None 2419 / 2023, Exponential 1860 /
/// 63594, Decorrelated 1003 / 4581, EqualJitter 812 / 6656, FullJitter 796 / 4996 (the last
/// 2.1 standard deviations above the mean of 60 seeds, 4896).
///
/// One figure differs by design. retrystorm floors every delay to whole milliseconds, as the
/// article does, and decorrelated jitter grows from the previous delay, so the floor also
/// enters its state. The same simulator with that one change (`sleep = floor(min(cap,
/// uniform(base, 3 * sleep)))`) gives 1027.8 ± 3.2 writes and 4542 ± 78 ms for decorrelated
/// jitter (10 seeds) instead of 1000.3 and 4590: that is the row compared below. Flooring the
/// other strategies' delays moves their writes by less than 1 and their time within its noise.
const AWS: [(&str, f64, f64, f64, f64); 5] = [
    ("no backoff", 2422.1, 3.1, 2026.3, 3.8),
    ("exponential", 1856.0, 6.1, 63454.0, 457.0),
    ("decorrelated jitter", 1027.8, 3.2, 4542.0, 78.0),
    ("equal jitter", 812.2, 0.6, 6613.0, 57.0),
    ("full jitter", 795.8, 0.4, 4878.0, 47.0),
];

/// The bundled `contention` scenario is AWS's model: network `|N(10, 2)|` ms per message,
/// instantaneous reads and conditional writes, base 5 ms (10 ms in the article's count from
/// 0), cap 2 s, 100 clients starting together, each updating once. Over 100 runs per strategy
/// (seeds 1 to 100, as AWS averages 100 runs), the mean writes and the mean time until the last
/// client is done must agree with AWS's within four standard errors of the difference of two
/// independent 100-run means, `4 * sqrt(2) * sd`: the noise measured above. And the published
/// ranking holds: work full ~ equal < decorrelated, far below exponential and none; none
/// finishes first, exponential last.
#[test]
fn the_aws_backoff_simulation_is_reproduced() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/contention.toml");
    let scenario = load(&path, &[]).unwrap_or_else(|error| panic!("{error}"));
    let mut measured = Vec::new();
    for &(name, writes, writes_sd, time, time_sd) in &AWS {
        let policy = scenario
            .policy
            .iter()
            .find(|policy| policy.name.get_ref() == name)
            .unwrap();
        let runs = 100;
        let (mut total_writes, mut total_time) = (0.0, 0.0);
        for seed in 1..=runs {
            let mut model = Model::new(&scenario, policy);
            model.seed = seed;
            let measurements = simulate(&model, &mut Quiet).expect("time advances");
            assert_eq!(measurements.operations, 100);
            let attempts: u64 = measurements.buckets.iter().map(|b| b.attempts).sum();
            let succeeded: u64 = measurements.buckets.iter().map(|b| b.succeeded).sum();
            assert_eq!(succeeded, 100, "{name}: every client gets its write in");
            total_writes += attempts as f64;
            total_time += measurements.latency_max_us as f64 / 1000.0;
        }
        let (mean_writes, mean_time) = (total_writes / runs as f64, total_time / runs as f64);
        eprintln!("{name}: {mean_writes:.1} writes (AWS {writes}), {mean_time:.0} ms (AWS {time})");
        let bound = |sd: f64| 4.0 * 2f64.sqrt() * sd;
        assert!(
            (mean_writes - writes).abs() <= bound(writes_sd),
            "{name}: {mean_writes} writes against AWS's {writes} ± {}",
            bound(writes_sd)
        );
        assert!(
            (mean_time - time).abs() <= bound(time_sd),
            "{name}: {mean_time} ms against AWS's {time} ± {}",
            bound(time_sd)
        );
        measured.push((name, mean_writes, mean_time));
    }
    let writes = |name: &str| measured.iter().find(|m| m.0 == name).unwrap().1;
    let time = |name: &str| measured.iter().find(|m| m.0 == name).unwrap().2;
    assert!((writes("full jitter") - writes("equal jitter")).abs() < 0.03 * writes("full jitter"));
    assert!(writes("equal jitter") < writes("decorrelated jitter"));
    assert!(writes("decorrelated jitter") < 0.6 * writes("exponential"));
    assert!(writes("exponential") < writes("no backoff"));
    for name in [
        "exponential",
        "decorrelated jitter",
        "equal jitter",
        "full jitter",
    ] {
        assert!(time("no backoff") < time(name), "{name}");
        assert!(time(name) <= time("exponential"), "{name}");
    }
}
