//! The engine against queueing theory, without retries: long runs, bounds from the formulas.
//!
//! Each scenario is a single seed run long enough that the sampling error is well inside the
//! bound (the runs here stay within about a third of it); a model error of a few percent, such
//! as a service time drawn wrong or a queue served out of order, fails them.

use crate::support::{erlang_b, relative_error, run, scenario};

/// An upstream with `workers` workers of exponential service (mean `service_ms`), Poisson
/// arrivals at `rate` per second, no network delay and no deadline pressure.
fn markovian(
    workers: u32,
    service_ms: u32,
    rate: f64,
    queue_limit: u64,
    duration_s: u32,
) -> String {
    format!(
        r#"
name = "markovian"
seed = 7
duration = "{duration_s}s"
bucket = "10s"
[clients]
count = 1
rate = {rate}
deadline = "60s"
attempt_timeout = "30s"
[network]
latency = "0s"
[upstream]
workers = {workers}
service_time = {{ distribution = "exponential", mean = "{service_ms}ms" }}
queue_limit = {queue_limit}
overload_status = 500
[[policy]]
name = "no retries needed"
"#
    )
}

#[test]
fn mm1_mean_and_p99_response_time() {
    // λ = 800/s, μ = 1000/s: sojourn time is exponential with rate μ - λ = 200/s.
    let run = run(&scenario(&markovian(1, 1, 800.0, 100_000_000, 10_000)));
    let summary = &run.policies[0].summary;
    assert_eq!(summary.succeeded, summary.operations, "nothing may fail");
    let mean_ms = 1000.0 / 200.0;
    let p99_ms = 100f64.ln() * 1000.0 / 200.0;
    let measured_mean = summary.mean_ms.unwrap();
    let measured_p99 = summary.p99_ms.unwrap();
    eprintln!(
        "M/M/1: mean {measured_mean:.4} ms (theory {mean_ms}), p99 {measured_p99:.4} ms (theory {p99_ms:.4})"
    );
    assert!(
        relative_error(measured_mean, mean_ms) < 0.03,
        "mean {measured_mean} ms vs {mean_ms} ms"
    );
    assert!(
        relative_error(measured_p99, p99_ms) < 0.03,
        "p99 {measured_p99} ms vs {p99_ms} ms"
    );
}

/// Erlang C: the probability of waiting in M/M/c with offered load `a` (< c).
fn erlang_c(c: u32, a: f64) -> f64 {
    let b = erlang_b(c, a);
    let rho = a / f64::from(c);
    b / (1.0 - rho + rho * b)
}

#[test]
fn erlang_formulas_match_known_values() {
    assert!((erlang_b(10, 8.0) - 0.121_661).abs() < 1e-5);
    assert!((erlang_c(10, 8.0) - 0.409_180).abs() < 1e-5);
}

#[test]
fn mmc_wait_probability_is_erlang_c() {
    // c = 10 workers of 10 ms, λ = 800/s: a = 8 Erlangs.
    let run = run(&scenario(&markovian(10, 10, 800.0, 100_000_000, 1500)));
    let upstream = run.policies[0].measurements.upstream();
    let waited = upstream.queued as f64 / upstream.received as f64;
    let expected = erlang_c(10, 8.0);
    eprintln!("M/M/10: P(wait) {waited:.5} (Erlang C {expected:.5})");
    assert!(
        relative_error(waited, expected) < 0.03,
        "P(wait) {waited} vs Erlang C {expected}"
    );
}

#[test]
fn without_a_queue_the_refused_fraction_is_erlang_b() {
    // Overload answers 500, which is not transient: no retries.
    let run = run(&scenario(&markovian(10, 10, 800.0, 0, 1500)));
    let measurements = &run.policies[0].measurements;
    let upstream = measurements.upstream();
    let refused = upstream.rejected_overload as f64 / upstream.received as f64;
    let expected = erlang_b(10, 8.0);
    eprintln!("M/M/10/10: refused {refused:.5} (Erlang B {expected:.5})");
    assert!(
        relative_error(refused, expected) < 0.03,
        "refused {refused} vs Erlang B {expected}"
    );
    assert_eq!(upstream.received, measurements.operations, "no retries");
}

#[test]
fn load_independent_failures_multiply_attempts_geometrically() {
    // Failure rate f, up to k retries (max_attempts = k allows retries after attempts 0..k-1):
    // attempts per operation = 1 + f + ... + f^k.
    for (f, k) in [(0.5f64, 3u32), (0.2, 2)] {
        let text = format!(
            r#"
name = "flaky"
seed = 11
duration = "200s"
bucket = "10s"
[clients]
count = 1000
rate = 1.0
deadline = "60s"
[upstream]
workers = 1000
service_time = "1ms"
errors = {{ rate = {f}, status = 503 }}
[[policy]]
name = "retries"
max_attempts = {k}
"#
        );
        let run = run(&scenario(&text));
        let summary = &run.policies[0].summary;
        let expected: f64 = (0..=k).map(|j| f.powi(j as i32)).sum();
        eprintln!(
            "f = {f}, k = {k}: {:.5} attempts per operation (theory {expected:.5})",
            summary.amplification
        );
        assert!(
            relative_error(summary.amplification, expected) < 0.01,
            "f = {f}, k = {k}: {} attempts per operation vs {expected}",
            summary.amplification
        );
        let failure = f.powi(k as i32 + 1);
        assert!(
            relative_error(1.0 - summary.success_rate, failure) < 0.1,
            "f = {f}, k = {k}: failure rate {} vs {failure}",
            1.0 - summary.success_rate
        );
    }
}
