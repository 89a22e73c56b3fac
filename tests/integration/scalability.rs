//! Servers that slow down when busy (`contention`): the engine against the Universal
//! Scalability Law it implements, and the feature off when its terms are zero.

use retrystorm::run::PolicyRun;

use crate::support::{relative_error, run, scenario};

/// `N` closed-loop clients without think time or network delay, each waiting as long as it
/// takes (its policy could retry a refusal after a backoff, but none comes), against an upstream of 100 workers whose exponential service time (mean 10 ms) is
/// slowed by `contention`, for `duration_s` seconds in buckets of 10 s.
fn closed_loop(clients: u64, contention: &str, duration_s: u32) -> String {
    format!(
        r#"
name = "scalability"
seed = 11
duration = "{duration_s}s"
bucket = "10s"
[clients]
count = {clients}
workload = "closed"
think_time = "0ms"
deadline = "100s"
attempt_timeout = "100s"
[network]
latency = "0ms"
[upstream]
workers = 100
service_time = {{ distribution = "exponential", mean = "10ms" }}
{contention}
[[policy]]
name = "nothing to retry"
"#
    )
}

/// Requests the upstream served per second over buckets `from..to` (of 10 s).
fn served_rps(policy: &PolicyRun, from: usize, to: usize) -> f64 {
    let service = &policy.measurements.services[0];
    let served: u64 = service.buckets[from..to].iter().map(|b| b.served).sum();
    served as f64 / (10 * (to - from)) as f64
}

/// The Universal Scalability Law: N requests in service, each slowed by
/// `m(N) = 1 + sigma (N - 1) + kappa N (N - 1)`, complete `X(N) = N / (S m(N))` a second
/// (N. J. Gunther, "Guerrilla Capacity Planning", Springer 2007, where the law is the
/// throughput of a machine-repairman queue with a state-dependent service rate; the `usl` R
/// package fits the same `X(N) = gamma N / (1 + alpha (N - 1) + beta N (N - 1))`).
///
/// Derivation for this scenario: each of N closed-loop clients, with no think time and no
/// network delay, always has exactly one request at the upstream; with 100 workers for at most
/// 80 requests none waits for a worker, so every request starts its work with the other N - 1
/// at work, N in service counting itself, and its work is its exponential draw (mean S = 10 ms)
/// times m(N). A client's requests follow one another with a mean of S m(N), so by Little's law
/// (N = X R, R = S m(N)) the upstream serves X(N) = N / (S m(N)). With sigma = 0.05 and
/// kappa = 0.002 the peak is at N* = sqrt((1 - sigma) / kappa) = 21.8, and beyond it
/// throughput falls: X(80) = 454.8/s against X(22) = 739.7/s.
///
/// Noise: a client's exponential works make its completions a Poisson process, so the count
/// over T seconds is Poisson with mean X T, a relative standard deviation of 1 / sqrt(X T): 0.4%
/// at N = 1 (X = 100/s) over the 580 s measured, so the 2% bound is five standard deviations.
/// The first 10 s (every client starts at time zero, so the first requests start with fewer
/// in service) and the drain after the arrivals end are left out.
#[test]
fn throughput_follows_the_universal_scalability_law_past_its_peak() {
    let (sigma, kappa, service_s) = (0.05, 0.002, 0.010);
    let contention = format!("contention = {{ sigma = {sigma}, kappa = {kappa} }}");
    let mut measured = Vec::new();
    for n in [1u64, 5, 10, 22, 40, 80] {
        let result = run(&scenario(&closed_loop(n, &contention, 590)));
        let policy = &result.policies[0];
        assert_eq!(policy.summary.succeeded, policy.summary.operations);
        assert_eq!(policy.summary.attempts, policy.summary.operations);
        let x = served_rps(policy, 1, 59);
        let clients = n as f64;
        let usl = clients
            / (service_s * (1.0 + sigma * (clients - 1.0) + kappa * clients * (clients - 1.0)));
        let error = relative_error(x, usl);
        eprintln!(
            "N = {n}: measured {x:.1}/s, USL {usl:.1}/s ({:+.2}%)",
            100.0 * (x - usl) / usl
        );
        assert!(error < 0.02, "N = {n}: {x}/s against the USL's {usl}/s");
        measured.push((n, x));
    }
    let at = |n: u64| {
        measured
            .iter()
            .find(|(m, _)| *m == n)
            .map(|&(_, x)| x)
            .unwrap()
    };
    assert!(
        at(80) < at(22),
        "retrograde: X(80) = {} >= X(22) = {}",
        at(80),
        at(22)
    );
    assert!(
        at(40) < at(22),
        "retrograde: X(40) = {} >= X(22) = {}",
        at(40),
        at(22)
    );
}

/// A service that retries, queues, times out and crashes and comes back cold, with and without
/// `contention = { sigma = 0, kappa = 0 }`: the multiplier is exactly 1 and draws nothing, so
/// every count, latency and event is the same.
#[test]
fn contention_with_zero_terms_changes_nothing() {
    let text = |contention: &str| {
        format!(
            r#"
name = "zero-contention"
seed = 5
duration = "20s"
[clients]
count = 1000
rate = 0.9
[upstream]
workers = 10
service_time = {{ distribution = "exponential", mean = "10ms" }}
queue_limit = 200
crash = {{ queue_above = 150, hold = "500ms", restart_after = "1s" }}
cold_start = {{ factor = 2, requests = 500 }}
capacity = [{{ at = "5s", factor = 1.0 }}, {{ at = "5s", factor = 0.5 }}, {{ at = "8s", factor = 0.5 }}, {{ at = "8s", factor = 1.0 }}]
{contention}
[[policy]]
name = "article"
[[policy]]
name = "no jitter"
jitter = "none"
"#
        )
    };
    let without = run(&scenario(&text("")));
    let with = run(&scenario(&text("contention = { sigma = 0, kappa = 0 }")));
    for (without, with) in without.policies.iter().zip(&with.policies) {
        assert!(without.summary.operations > 10_000);
        assert!(without.summary.attempts > without.summary.operations);
        assert!(without.summary.succeeded < without.summary.operations);
        assert_eq!(with.summary, without.summary);
        assert_eq!(with.services, without.services);
        assert_eq!(with.measurements.events, without.measurements.events);
        let served = |policy: &PolicyRun| -> Vec<u64> {
            policy.measurements.services[0]
                .buckets
                .iter()
                .map(|b| b.served)
                .collect()
        };
        assert_eq!(served(with), served(without));
    }
}

/// A coherency term large enough to overflow the clock (10^300 for each pair in service) makes
/// the work of every request that starts beside another last past any run's end instead: the
/// run ends, those requests time out, and only requests that start alone are served.
#[test]
fn a_slowdown_beyond_the_clock_ends_the_run_without_overflow() {
    let text = r#"
name = "endless-work"
duration = "2s"
[clients]
count = 100
rate = 1.0
[upstream]
workers = 10
service_time = "10ms"
contention = { sigma = 0.5, kappa = 1e300 }
[[policy]]
name = "once"
max_attempts = 0
"#;
    let result = run(&scenario(text));
    let summary = &result.policies[0].summary;
    assert!(summary.operations > 100, "{summary:?}");
    assert!(summary.timeouts > 0, "{summary:?}");
    assert!(summary.succeeded < summary.operations, "{summary:?}");
}
