//! The upstream's idempotency-key store, in-flight repeats and wasted work, end to end.

use retrystorm::decision::StopReason;
use retrystorm::outcome::FailureReason;

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
