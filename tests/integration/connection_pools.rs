//! Envoy's `max_requests` as a caller's `connection-pool` control: a bound on the attempts in
//! flight, kept per client process or per calling instance, whose overflow ends the call.

use retrystorm::control::ControlKind;
use retrystorm::retry::decision::StopReason;
use retrystorm::vocabulary::outcome::FailureReason;

use crate::support::{assert_contains, erlang_b, relative_error, run, scenario};

/// One client process sending 200 operations a second for `seconds` to an upstream with
/// `workers` and no queue, each request served in exactly 50 ms over a network without
/// latency, through a pool of `max_requests`; no retries.
fn pooled(workers: u32, max_requests: u32, seconds: u32) -> String {
    format!(
        r#"name = "pool"
seed = 3
duration = "{seconds}s"
[clients]
count = 200
rate = 1.0
[network]
latency = "0s"
[upstream]
workers = {workers}
service_time = "50ms"
queue_limit = 0
[[policy]]
name = "pooled"
max_attempts = 0
controls = [{{ kind = "connection-pool", max_requests = {max_requests} }}]
"#
    )
}

/// A pool in front of ample workers is an M/D/c/c loss system: an attempt holds a slot for
/// exactly its 50 ms, arrivals are Poisson, so the share refused is Erlang B, which depends on
/// the holding time only through its mean (Erlang's insensitivity): c = 8 slots at 200/s x
/// 50 ms = 10 Erlangs refuse 33.83%. 200 s give 40,000 operations, a standard error of 0.7%
/// of the share; the bound is 3%.
#[test]
fn a_pool_refuses_its_erlang_b_share() {
    let run = run(&scenario(&pooled(100, 8, 200)));
    let policy = &run.policies[0];
    let operations = policy.measurements.operations;
    let overflowed = policy
        .measurements
        .failures()
        .get(&FailureReason::Control(ControlKind::ConnectionPool))
        .copied()
        .unwrap_or(0);
    let share = overflowed as f64 / operations as f64;
    let expected = erlang_b(8, 10.0);
    eprintln!("pool of 8 at 10 Erlangs: refused {share:.5} (Erlang B {expected:.5})");
    assert!(
        relative_error(share, expected) < 0.03,
        "{share} vs {expected}"
    );
    // The refused never left the client: the upstream received the rest, and served them all.
    let upstream = policy.measurements.upstream();
    assert_eq!(upstream.received, operations - overflowed);
    assert_eq!(upstream.rejected_overload, 0);
}

/// The client counts an attempt until it learns the result, which is never before the server
/// lets it go: a pool of `max_requests` equal to the upstream's workers never overloads it,
/// and one more slot does (the same arrivals, at 10 Erlangs against 8 workers).
#[test]
fn a_pool_the_size_of_the_workers_never_overloads_them() {
    let rejected = |max_requests| {
        let run = run(&scenario(&pooled(8, max_requests, 60)));
        run.policies[0].measurements.upstream().rejected_overload
    };
    assert_eq!(rejected(8), 0);
    assert!(rejected(9) > 0);
}

/// 400 operations a second to an edge of 4 instances behind round robin, each holding a worker
/// for its call to an api that answers in exactly 50 ms (20 calls in flight wanted); each edge
/// instance's pool (`max_requests = 3`) is its own, as each Envoy's circuit breakers are its
/// own, so the api sees at most 4 x 3 = 12 calls at once: with 12 workers and no queue it never
/// refuses, with 11 it does. An overflow at the edge is answered with the edge's failure
/// status, never retried there.
#[test]
fn a_tiers_pool_is_per_calling_instance() {
    let topology = |api_workers: u32| {
        format!(
            r#"name = "edge-pools"
seed = 5
duration = "60s"
[clients]
count = 400
rate = 1.0
calls = "edge"
[network]
latency = "0s"
[[service]]
name = "edge"
workers = 1000
service_time = "0s"
calls = ["api"]
fleet = {{ instances = 4 }}
retry = {{ max_attempts = 3, controls = [{{ kind = "connection-pool", max_requests = 3 }}] }}
[[service]]
name = "api"
workers = {api_workers}
service_time = "50ms"
queue_limit = 0
[[policy]]
name = "no client retries"
max_attempts = 0
"#
        )
    };
    let at_twelve = run(&scenario(&topology(12)));
    let policy = &at_twelve.policies[0];
    let (edge, api) = (&policy.services[0].totals, &policy.services[1].totals);
    assert_eq!(api.rejected_overload, 0);
    assert!(edge.downstream_failures > 0);
    // Every call the edge made reached the api once: an overflow is not retried, and nothing
    // else failed.
    assert_eq!(api.received, edge.received - edge.downstream_failures);
    assert_eq!(
        policy.measurements.failures().values().sum::<u64>(),
        edge.downstream_failures
    );
    let at_eleven = run(&scenario(&topology(11)));
    assert!(at_eleven.policies[0].services[1].totals.rejected_overload > 0);
}

/// One client process sending `rate` operations a second for `seconds` through an HTTP/1.1
/// pool of `connections` with `pending` places to wait, to an upstream of ample workers
/// serving `service_time`, over a network without latency; no retries.
fn http1(
    rate: f64,
    service_time: &str,
    (connections, pending): (u32, u32),
    timeouts: &str,
) -> String {
    format!(
        r#"name = "http1"
seed = 9
duration = "300s"
[clients]
count = 1
rate = {rate}
{timeouts}
[network]
latency = "0s"
[upstream]
workers = 1000
service_time = {service_time}
[[policy]]
name = "pooled"
max_attempts = 0
controls = [{{ kind = "connection-pool", max_connections = {connections}, max_pending_requests = {pending} }}]
"#
    )
}

/// An HTTP/1.1 pool of c connections with p places to wait, in front of ample workers, is the
/// M/M/c/(c+p) queue when service times are exponential and arrivals Poisson: an arrival
/// finding all c busy and p waiting overflows, with the probability of that state,
/// `P(c+p) = a^c/c! (a/c)^p / sum_n P(n)` (Kleinrock, Queueing Systems I, 3.7). c = 8, p = 4 at
/// a = 10 Erlangs: 24.02%. 300 s at 200/s give 60,000 operations, a standard error of 0.7% of
/// the share; the bound is 3%.
#[test]
fn an_http1_pool_refuses_the_m_m_c_k_share() {
    let run = run(&scenario(&http1(
        200.0,
        r#"{ distribution = "exponential", mean = "50ms" }"#,
        (8, 4),
        "deadline = \"60s\"\nattempt_timeout = \"30s\"",
    )));
    let measurements = &run.policies[0].measurements;
    let overflowed = measurements
        .failures()
        .get(&FailureReason::Control(ControlKind::ConnectionPool))
        .copied()
        .unwrap_or(0);
    let share = overflowed as f64 / measurements.operations as f64;
    let (c, a) = (8, 10.0f64);
    let weights: Vec<f64> = (0..=12)
        .map(|n| {
            let factorial = |k: i32| (1..=k).map(f64::from).product::<f64>();
            if n <= c {
                a.powi(n) / factorial(n)
            } else {
                a.powi(c) / factorial(c) * (a / f64::from(c)).powi(n - c)
            }
        })
        .collect();
    let expected = weights[12] / weights.iter().sum::<f64>();
    eprintln!("HTTP/1.1 pool 8 + 4 at 10 Erlangs: overflowed {share:.5} (M/M/c/K {expected:.5})");
    assert!(
        relative_error(share, expected) < 0.03,
        "{share} vs {expected}"
    );
}

/// One connection and room to wait is the M/D/1 queue: at 15 a second of 50 ms each
/// (rho = 0.75) an operation waits `rho S / (2 (1 - rho))` = 75 ms on average
/// (Pollaczek-Khinchine), so it takes 125 ms from its start. Envoy starts a per-try timeout
/// when the request gets its connection: with 60 ms per try, shorter than most operations,
/// not one attempt times out, since each takes exactly 50 ms once sent.
#[test]
fn an_http1_pool_waits_and_the_try_starts_at_the_connection() {
    let run = run(&scenario(&http1(
        15.0,
        "\"50ms\"",
        (1, 1000),
        "deadline = \"60s\"\nattempt_timeout = \"60ms\"",
    )));
    let policy = &run.policies[0];
    assert_eq!(policy.measurements.failures().values().sum::<u64>(), 0);
    assert_eq!(policy.summary.timeouts, 0);
    let mean = policy.summary.mean_ms.expect("operations succeeded");
    eprintln!("M/D/1 at rho 0.75 through the pool: mean {mean:.2} ms (theory 125 ms)");
    assert!(relative_error(mean, 125.0) < 0.05, "{mean}");
}

/// A caller that gives up while it waits leaves the queue and gives its place back. With one
/// deadline for all, first come first served wakes every waiter before its deadline; a retry
/// joins the queue behind calls that started after it, and may give up there. Two
/// connections, 25 calls a second of 100 ms on average (exponential), 150 ms a try and
/// 600 ms a call: tries that time out are retried at the back of a queue that keeps growing,
/// and retries give up waiting (`deadline-exhausted`). The queue has 20 places; had a caller
/// that left kept its place, the queue would fill for good and every later call would
/// overflow: over the last 100 s, most do not.
#[test]
fn a_caller_that_gives_up_leaves_the_pools_queue() {
    let text = http1(
        25.0,
        "{ distribution = \"exponential\", mean = \"100ms\" }",
        (2, 20),
        "deadline = \"600ms\"\nattempt_timeout = \"150ms\"",
    )
    .replace(
        "max_attempts = 0",
        "max_attempts = 5\nbase = \"1ms\"\njitter = \"none\"",
    );
    let run = run(&scenario(&text));
    let measurements = &run.policies[0].measurements;
    let failures = measurements.failures();
    let late = &measurements.buckets[200..];
    let overflowed: u64 = late
        .iter()
        .map(|bucket| bucket.failures[FailureReason::Control(ControlKind::ConnectionPool).index()])
        .sum();
    let started: u64 = late.iter().map(|bucket| bucket.first_attempts).sum();
    eprintln!("last 100 s: {overflowed} of {started} calls overflowed; failures {failures:?}");
    assert!(
        failures.contains_key(&FailureReason::Decision(StopReason::DeadlineExhausted)),
        "{failures:?}"
    );
    assert!(overflowed * 2 < started, "{overflowed} of {started}");
}

/// An HTTP/1.1 pool is written with `max_connections` or `max_pending_requests`, the other
/// at Envoy's 1024; the resolved control says so, and a bad value is refused at its place.
#[test]
fn an_http1_pool_is_resolved_with_envoys_defaults() {
    let text = pooled(8, 8, 1).replace("max_requests = 8", "max_pending_requests = 8");
    let scenario = scenario(&text);
    let model = retrystorm::model::Model::new(&scenario, &scenario.policy[0]);
    assert_eq!(
        model.users.policy.controls[0].to_string(),
        "HTTP/1.1 connection pool of 1024 requests in flight, 8 more waiting (per process)"
    );
    let error = retrystorm::import::load_str(
        &pooled(8, 8, 1).replace("max_requests = 8", "max_connections = 0"),
        "pool.toml",
        &[],
    )
    .unwrap_err()
    .to_string();
    assert_contains(&error, &["pool.toml:", "0 is out of range", "from 1"]);
}
