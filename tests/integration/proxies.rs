//! `server = "event-driven"` and `server = "proxy"`: a calling service whose worker lets go
//! after its own work, so that what bounds its waiting requests is its connection pool, and
//! a proxy keeps no idempotency keys (it forwards them to the service that owns the data).

use crate::support::{assert_contains, erlang_b, error_with, relative_error, run, scenario};

/// 200 operations a second through a `gateway` of 2 workers (1 ms of its own work each)
/// to an `app` with ample workers serving each request in exactly 50 ms, over a network
/// without latency; the gateway's pool allows 8 requests in flight to the app; nobody retries.
fn gateway(server: &str, key: bool) -> String {
    format!(
        r#"name = "gateway"
seed = 11
duration = "200s"
[clients]
count = 200
rate = 1.0
calls = "gateway"
[[clients.operations]]
name = "pay"
method = "POST"
idempotency_key = {key}
[network]
latency = "0s"
[[service]]
name = "gateway"
workers = 2
service_time = "1ms"
queue_limit = 1000
calls = ["app"]
server = "{server}"
retry = {{ max_attempts = 0, attempt_timeout = "none", controls = [{{ kind = "connection-pool", max_requests = 8 }}] }}
[[service]]
name = "app"
workers = 100
service_time = "50ms"
queue_limit = 0
[[policy]]
name = "no retries"
max_attempts = 0
"#
    )
}

/// Envoy holds no thread while a request waits on its upstream (SYSTEMS.md 11.2: concurrency
/// is bounded by connection pools and circuit breakers): the gateway's two workers are busy
/// 1 ms per request, 20% of the time, and its pool of 8 slots in front of an app that holds
/// each request exactly 50 ms is an M/D/8/8 loss system at 200/s x 50 ms = 10 Erlangs, which
/// refuses Erlang B(8, 10) = 33.83% of the calls (insensitive to the holding time's law).
/// 40,000 operations give a standard error of 0.7% of that share; the bound is 3%. Each
/// worker holds a request exactly its 1 ms, so the held time is exact. A thread-per-request
/// gateway holds each worker 51 ms: 2 workers serve at most 39 operations a second
/// (and a queue of 1,000).
#[test]
fn a_proxy_holds_no_worker_and_its_pool_bounds_it() {
    let proxy = run(&scenario(&gateway("proxy", false)));
    let policy = &proxy.policies[0];
    let (edge, app) = (&policy.services[0].totals, &policy.services[1].totals);
    assert_eq!(edge.held_us, edge.released * 1_000);
    assert_eq!(edge.rejected_overload, 0);
    let operations = policy.measurements.operations;
    let refused = edge.downstream_failures as f64 / operations as f64;
    let expected = erlang_b(8, 10.0);
    eprintln!("proxy: pool refused {refused:.5} (Erlang B {expected:.5})");
    assert!(relative_error(refused, expected) < 0.03, "{refused}");
    assert_eq!(app.received, operations - edge.downstream_failures);
    assert_eq!(app.rejected_overload, 0);

    let threads = run(&scenario(&gateway("thread-per-request", false)));
    let served = threads.policies[0].services[0].totals.served as f64;
    let most = 2.0 / 0.051 * 200.0 + 1000.0;
    assert!(served < most, "{served} > {most}");
    assert_eq!(edge.served, operations - edge.downstream_failures);
}

/// A proxy forwards the idempotency key rather than judging it (SYSTEMS.md 11.2: dedupe
/// happens at the service that owns the data). Clients give up on an attempt after 100 ms and
/// retry with the same key while the app still works 300 ms on the first (the gateway's call
/// has a fresh budget of 10 s, so it is still out): an event-driven
/// gateway with a key store of its own finds the key in flight and answers the retry 409
/// itself, so the app never sees it; a proxy forwards every retry to the app, whose store
/// answers the 409.
#[test]
fn a_proxy_forwards_keys_to_the_service_that_owns_the_data() {
    let text = |server: &str| {
        gateway(server, true)
            .replace("service_time = \"50ms\"", "service_time = \"300ms\"")
            .replace("max_requests = 8", "max_requests = 1000")
            .replace(
                "attempt_timeout = \"none\",",
                "attempt_timeout = \"none\", deadline = \"10s\",",
            )
            .replace(
                "name = \"no retries\"\nmax_attempts = 0",
                "name = \"one retry\"\nmax_attempts = 1\nbase = \"1ms\"\nattempt_timeout = \"100ms\"",
            )
            .replace("count = 200", "count = 20")
    };
    let proxy = run(&scenario(&text("proxy")));
    let own_store = run(&scenario(&text("event-driven")));
    let (proxy, own_store) = (&proxy.policies[0], &own_store.policies[0]);
    let conflicts = |policy: &retrystorm::run::PolicyRun, service: usize| {
        policy.services[service].totals.conflicts
    };
    eprintln!(
        "proxy: gateway {} app {}; event-driven: gateway {} app {}",
        conflicts(proxy, 0),
        conflicts(proxy, 1),
        conflicts(own_store, 0),
        conflicts(own_store, 1)
    );
    assert_eq!(conflicts(proxy, 0), 0);
    assert!(conflicts(proxy, 1) > 1000);
    assert_eq!(conflicts(own_store, 1), 0);
    assert_eq!(conflicts(own_store, 0), conflicts(proxy, 1));
}

/// A proxy forwards every request: an operation whose `path` gives it no calls would make it
/// the service that holds the data, which a proxy never is. Refused at the path's entry (a
/// second operation keeps the app reached).
#[test]
fn a_proxy_cannot_hold_an_operations_data() {
    assert_contains(
        &error_with(
            &gateway("proxy", false),
            "name = \"pay\"\n",
            "name = \"pay\"\npath = { gateway = [] }\n[[clients.operations]]\nname = \"get\"\n",
        ),
        &[
            "bad.toml:10:20:",
            "service \"gateway\" is a proxy",
            "operation \"pay\" cannot make it the service that holds its data",
        ],
    );
}
