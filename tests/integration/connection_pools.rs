//! Envoy's `max_requests` as a caller's `connection-pool` control: a bound on the attempts in
//! flight, kept per client process or per calling instance, whose overflow ends the call.

use retrystorm::control::ControlKind;
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

/// The HTTP/1.1 pool's wait is not modelled: `max_connections` and `max_pending_requests` are
/// refused at the control, with what would be valid.
#[test]
fn an_http1_pool_is_refused_with_the_reason() {
    let text = pooled(8, 8, 1).replace("max_requests = 8", "max_pending_requests = 8");
    let error = retrystorm::import::load_str(&text, "pool.toml", &[])
        .unwrap_err()
        .to_string();
    assert_contains(
        &error,
        &[
            "pool.toml:",
            "not modelled",
            "max_pending_requests",
            "max_requests (1 to 10^9, Envoy's default 1024)",
        ],
    );
}
