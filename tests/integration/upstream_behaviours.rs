//! The upstream's idempotency-key store, in-flight repeats and wasted work, end to end.

use retrystorm::retry::decision::StopReason;
use retrystorm::vocabulary::outcome::FailureReason;

use crate::support::{run, scenario};

/// POSTs with idempotency keys whose responses are often lost.
fn keyed_posts(upstream_extra: &str, policy_extra: &str) -> String {
    format!(
        r#"
name = "keys"
duration = "20s"
[clients]
count = 500
rate = 1.0
deadline = "10s"
attempt_timeout = "300ms"
[[clients.operations]]
name = "charge"
method = "POST"
idempotency_key = true
[network]
response_loss = 0.3
[upstream]
workers = 100
service_time = "5ms"
{upstream_extra}
[[policy]]
name = "keys"
base = "500ms"
max_attempts = 5
{policy_extra}
"#
    )
}

#[test]
fn a_key_forgotten_before_the_retry_lets_it_write_again() {
    // Retries come at least 300 ms (the timeout) after the first request completed.
    let short = run(&scenario(&keyed_posts("idempotency_ttl = \"100ms\"", "")));
    let long = run(&scenario(&keyed_posts("idempotency_ttl = \"24h\"", "")));
    let (short, long) = (&short.policies[0], &long.policies[0]);
    assert!(
        short.summary.duplicate_writes > 500,
        "short TTL: {}",
        short.summary.duplicate_writes
    );
    assert_eq!(long.summary.duplicate_writes, 0);
    assert!(
        long.measurements.upstream().replayed > 500,
        "stored results are replayed"
    );
    // With the key remembered each operation writes at most once, and every success wrote.
    let writes = long.measurements.upstream().writes;
    assert!(long.summary.succeeded <= writes && writes <= long.measurements.operations);
}

#[test]
fn a_repeat_while_the_first_is_in_flight_gets_409_or_waits() {
    // Service takes 1 s, the client gives up after 300 ms and retries while the first request
    // is still being served.
    let slow = |mode: &str| {
        keyed_posts(&format!("idempotency_in_flight = \"{mode}\""), "")
            .replace("service_time = \"5ms\"", "service_time = \"1s\"")
            .replace("response_loss = 0.3", "response_loss = 0.0")
            .replace("workers = 100", "workers = 1000")
    };
    let rejected = run(&scenario(&slow("reject")));
    let rejected = &rejected.policies[0];
    let conflicts: u64 = rejected
        .measurements
        .buckets
        .iter()
        .map(|b| b.conflicts_409)
        .sum();
    assert!(conflicts > 1000, "409s: {conflicts}");
    assert_eq!(
        rejected
            .measurements
            .failures()
            .get(&FailureReason::Decision(StopReason::NotTransient))
            .copied(),
        Some(conflicts)
    );
    assert_eq!(rejected.summary.duplicate_writes, 0);

    let waited = run(&scenario(&slow("wait")));
    let waited = &waited.policies[0];
    let conflicts: u64 = waited
        .measurements
        .buckets
        .iter()
        .map(|b| b.conflicts_409)
        .sum();
    assert_eq!(conflicts, 0);
    assert_eq!(waited.summary.duplicate_writes, 0);
    assert!(
        waited.summary.success_rate > 0.999,
        "{}",
        waited.summary.success_rate
    );
}

#[test]
fn work_for_clients_that_gave_up_is_wasted_unless_dropped() {
    // The upstream stops for 3 s but keeps queueing (outage = "queue"): the backlog expires long
    // before capacity returns. Without drop_expired the workers then serve that stale backlog
    // first; with it they drop it and serve requests whose clients still wait.
    let text = |drop_expired: bool| {
        format!(
            r#"
name = "waste"
duration = "10s"
[clients]
count = 3000
rate = 1.0
deadline = "2s"
attempt_timeout = "500ms"
[upstream]
workers = 100
service_time = "10ms"
queue_limit = 20000
outage = "queue"
capacity = [ {{ at = "2s", factor = 1.0 }}, {{ at = "2s", factor = 0.0 }}, {{ at = "5s", factor = 0.0 }}, {{ at = "5s", factor = 1.0 }} ]
drop_expired = {drop_expired}
[[policy]]
name = "article"
"#
        )
    };
    let kept = run(&scenario(&text(false)));
    let dropped = run(&scenario(&text(true)));
    let (kept, dropped) = (&kept.policies[0], &dropped.policies[0]);
    // At least the ~9,000 first attempts queued during the outage are served for nobody.
    assert!(
        kept.summary.wasted_work_s > 90.0,
        "wasted {}",
        kept.summary.wasted_work_s
    );
    assert_eq!(kept.measurements.upstream().dropped_expired, 0);
    assert!(dropped.measurements.upstream().dropped_expired > 9000);
    assert!(
        dropped.summary.wasted_work_s < kept.summary.wasted_work_s / 10.0,
        "dropping expired work wastes {} s against {} s",
        dropped.summary.wasted_work_s,
        kept.summary.wasted_work_s
    );
    assert!(dropped.summary.success_rate > kept.summary.success_rate);
}

/// Policies beyond the article's defaults, on an upstream that answers every request 500: the
/// article's client does not retry a 500 (not transient); a client that lists 500 among its
/// retryable statuses retries it twice, after exactly `10 ms * 3^0` and `10 ms * 3^1` with a
/// multiplier of 3 and no jitter; a client with `max_attempts = 0` is the no-retry baseline,
/// with an amplification of exactly 1.
#[test]
fn retryable_statuses_multiplier_and_the_no_retry_baseline() {
    let text = r#"
name = "beyond"
duration = "5s"
[clients]
count = 10
rate = 2.0
[network]
latency = "1ms"
[upstream]
workers = 10
service_time = "1ms"
errors = { rate = 1.0, status = 500 }
[[policy]]
name = "article"
[[policy]]
name = "gateway errors"
base = "10ms"
cap = "1s"
jitter = "none"
multiplier = 3
max_attempts = 2
retryable_statuses = [500, 502, 503, 504]
[[policy]]
name = "baseline"
max_attempts = 0
retryable_statuses = [500]
"#;
    let (result, traces) = crate::support::run_traced(&scenario(text));
    let [article, gateway, baseline] = &result.policies[..] else {
        panic!("three policies");
    };
    let operations = article.measurements.operations;
    assert!(operations > 50);
    let reason = |policy: &retrystorm::run::PolicyRun, reason: StopReason| {
        policy.measurements.failures()[&FailureReason::Decision(reason)]
    };
    assert_eq!(reason(article, StopReason::NotTransient), operations);
    assert_eq!(reason(gateway, StopReason::MaxAttempts), operations);
    assert_eq!(reason(baseline, StopReason::MaxAttempts), operations);
    let attempts = |policy: &retrystorm::run::PolicyRun| -> u64 {
        policy.measurements.buckets.iter().map(|b| b.attempts).sum()
    };
    assert_eq!(attempts(article), operations);
    assert_eq!(attempts(gateway), 3 * operations);
    assert_eq!(attempts(baseline), operations);
    // One operation's attempts (the trace interleaves operations in the order attempts end).
    let first = traces[1][0].operation;
    let delays: Vec<Option<u64>> = traces[1]
        .iter()
        .filter(|r| r.operation == first)
        .map(|r| r.next_delay)
        .collect();
    assert_eq!(delays, [Some(10_000), Some(30_000), None]);
}

/// gRPC server pushback read from Retry-After (gRFC A6): an upstream that refuses every
/// request with 503 and `Retry-After: 300 ms`; a client with a 1 s base and no jitter honours
/// it as a minimum (waits 1 s, then 2 s: the backoff is longer), a client in pushback mode waits
/// exactly 300 ms every time.
#[test]
fn pushback_retries_after_exactly_the_servers_delay() {
    let text = r#"
name = "pushback"
duration = "2s"
[clients]
count = 1
rate = 1.0
deadline = "10s"
[network]
latency = "1ms"
[upstream]
workers = 1
service_time = "1ms"
outage = "reject"
retry_after = "300ms"
capacity = [{ at = "0s", factor = 0.0 }]
[[policy]]
name = "honor"
base = "1s"
cap = "4s"
jitter = "none"
max_attempts = 2
[[policy]]
name = "pushback"
base = "1s"
cap = "4s"
jitter = "none"
max_attempts = 2
retry_after = "pushback"
"#;
    let (_, traces) = crate::support::run_traced(&scenario(text));
    let delays = |records: &[retrystorm::engine::AttemptRecord]| -> Vec<Option<u64>> {
        records
            .iter()
            .filter(|r| r.operation == 0)
            .map(|r| r.next_delay)
            .collect()
    };
    assert_eq!(delays(&traces[0]), [Some(1_000_000), Some(2_000_000), None]);
    assert_eq!(delays(&traces[1]), [Some(300_000), Some(300_000), None]);
}

/// The run stops when the last operation ends, but the writes its workers are still doing are
/// committed then, so no duplicate is lost. One POST retried without protection: attempts at
/// about 0, 1 and 2 s each hold a worker for 3 s, and the deadline ends the operation at
/// 2.5 s, before any finishes. All three commit: 2 duplicates. An optimistic row lets only the
/// first of three concurrent reads write: none is a duplicate, two collide.
#[test]
fn writes_still_in_service_when_the_run_stops_are_committed() {
    let text = |row: &str| {
        format!(
            r#"
name = "late-writes"
duration = "1s"
[clients]
count = 1
workload = "closed"
think_time = "1000h"
start = "together"
deadline = "2500ms"
attempt_timeout = "1s"
[[clients.operations]]
name = "charge"
method = "POST"
[network]
latency = "1ms"
[upstream]
workers = 10
service_time = "3s"
{row}
[[policy]]
name = "unsafe"
base = "1ms"
cap = "1ms"
jitter = "none"
unsafe_retries = true
"#
        )
    };
    let plain = run(&scenario(&text("")));
    let summary = &plain.policies[0].summary;
    assert_eq!(summary.attempts, 3);
    assert_eq!(summary.duplicate_writes, 2);

    let row = run(&scenario(&text(
        "optimistic_row = { collision_status = 409 }",
    )));
    assert_eq!(row.policies[0].summary.attempts, 3);
    assert_eq!(row.policies[0].summary.duplicate_writes, 0);
}
