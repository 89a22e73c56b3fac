//! The four behaviours the source article says a test suite must show, end to end through the
//! engine: 429 waits at least Retry-After, 503 does not synchronise clients, a timed-out POST
//! creates no duplicate unless protected, and running out of deadline stops the retry loop
//! (`src/retry/decision.rs` documents the decision itself).

use std::collections::BTreeMap;

use retrystorm::engine::AttemptRecord;
use retrystorm::retry::decision::StopReason;
use retrystorm::vocabulary::outcome::FailureReason;

use crate::support::{run, run_traced, scenario};

#[test]
fn a_429_is_followed_by_a_wait_of_at_least_its_retry_after() {
    // 2000 ops/s against a 500/s token bucket whose Retry-After is in whole seconds.
    let text = r#"
name = "rate-limited"
duration = "20s"
[clients]
count = 2000
rate = 1.0
deadline = "10s"
[upstream]
workers = 200
service_time = "5ms"
rate_limit = { rate = 500, burst = 50, retry_after_granularity = "1s" }
[[policy]]
name = "honor"
max_attempts = 5
[[policy]]
name = "honor-jittered"
max_attempts = 5
retry_after = "honor-jittered"
"#;
    let (_, traces) = run_traced(&scenario(text));
    for records in &traces {
        let mut checked = 0;
        for record in records.iter().filter(|r| r.status == Some(429)) {
            let retry_after = record.retry_after.expect("a 429 carries Retry-After");
            assert!(retry_after >= 1_000_000, "whole seconds: {retry_after}");
            if let Some(delay) = record.next_delay {
                assert!(delay >= retry_after, "{record:?}");
                checked += 1;
            }
        }
        assert!(checked > 1000, "only {checked} retries after a 429");
        // And the next attempt of the same operation is really sent that late.
        let sends = sends_by_operation(records);
        for record in records
            .iter()
            .filter(|r| r.status == Some(429) && r.next_delay.is_some())
        {
            let next = sends[&record.operation][record.attempt as usize + 1];
            assert!(
                next - record.end >= record.retry_after.unwrap(),
                "{record:?}"
            );
        }
    }
}

fn sends_by_operation(records: &[AttemptRecord]) -> BTreeMap<u64, Vec<u64>> {
    let mut sends: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for record in records {
        sends.entry(record.operation).or_default().push(record.send);
    }
    sends
}

#[test]
fn jitter_keeps_clients_that_failed_together_from_retrying_together() {
    // A crash at t = 2 s resets ~400 requests in service at the same instant; capacity is back
    // 1 ms later. Without jitter each of them retries exactly 100 ms after its reset; with full
    // jitter the retries spread uniformly over [0, 100 ms], about 4 per millisecond.
    let text = r#"
name = "synchronised"
duration = "4s"
[clients]
count = 20000
rate = 0.1
[network]
latency = "1ms"
[upstream]
workers = 1000
service_time = "200ms"
outage = "crash"
capacity = [ { at = "2s", factor = 1.0 }, { at = "2s", factor = 0.0 }, { at = "2001ms", factor = 1.0 } ]
[[policy]]
name = "no jitter"
jitter = "none"
[[policy]]
name = "full jitter"
jitter = "full"
"#;
    let (_, traces) = run_traced(&scenario(text));
    let busiest_millisecond = |records: &[AttemptRecord]| {
        let mut per_ms: BTreeMap<u64, u64> = BTreeMap::new();
        for record in records.iter().filter(|r| r.attempt == 1) {
            *per_ms.entry(record.send / 1000).or_default() += 1;
        }
        per_ms.values().copied().max().unwrap_or(0)
    };
    let lock_step = busiest_millisecond(&traces[0]);
    let spread = busiest_millisecond(&traces[1]);
    assert!(
        lock_step >= 300,
        "no jitter: {lock_step} retries in the busiest ms"
    );
    // Poisson-like counts around 4 per ms rarely pass 15; a factor of 10 is far from noise.
    assert!(
        lock_step >= 10 * spread,
        "no jitter {lock_step} vs full jitter {spread}"
    );
}

#[test]
fn a_timed_out_post_writes_twice_only_without_protection() {
    // 20% of responses are lost after the work is done; every loss is a timeout for the client.
    let text = r#"
name = "payments"
duration = "30s"
[clients]
count = 1000
rate = 1.0
deadline = "10s"
attempt_timeout = "500ms"
[[clients.operations]]
name = "charge"
method = "POST"
[network]
response_loss = 0.2
[upstream]
workers = 100
service_time = "5ms"
[[policy]]
name = "article"
[[policy]]
name = "naive"
unsafe_retries = true
"#;
    let run_for = |operation: &str| {
        let text = text.replace(
            "[[clients.operations]]\nname = \"charge\"\nmethod = \"POST\"",
            &format!("[[clients.operations]]\nname = \"charge\"\nmethod = \"POST\"\n{operation}"),
        );
        run(&scenario(&text))
    };
    let unprotected = run_for("");
    let (article, naive) = (
        &unprotected.policies[0].summary,
        &unprotected.policies[1].summary,
    );
    assert_eq!(
        article.duplicate_writes, 0,
        "the article's client never repeats an unknown POST"
    );
    assert!(
        article.unknown_results > 0,
        "it reports the outcome unknown instead"
    );
    assert!(
        naive.duplicate_writes > 1000,
        "the naive client writes twice: {}",
        naive.duplicate_writes
    );

    for protection in ["idempotency_key = true", "status_endpoint = true"] {
        let protected = run_for(protection);
        for policy in &protected.policies {
            let summary = &policy.summary;
            assert_eq!(summary.duplicate_writes, 0, "{protection}, {}", policy.name);
            assert!(
                summary.success_rate > 0.99,
                "{protection}, {}: {}",
                policy.name,
                summary.success_rate
            );
        }
    }
}

#[test]
fn running_out_of_deadline_stops_the_retry_loop() {
    // The upstream never answers; a generous retry budget meets a 2 s deadline.
    let text = r#"
name = "deadline"
duration = "10s"
[clients]
count = 100
rate = 1.0
deadline = "2s"
attempt_timeout = "1s"
[upstream]
workers = 10
service_time = "1ms"
outage = "blackhole"
capacity = [ { at = "0s", factor = 0.0 } ]
[[policy]]
name = "many retries"
base = "10ms"
cap = "100ms"
max_attempts = 100
"#;
    let (run, traces) = run_traced(&scenario(text));
    let measurements = &run.policies[0].measurements;
    assert_eq!(
        measurements.failures().len(),
        1,
        "{:?}",
        measurements.failures()
    );
    assert_eq!(
        measurements
            .failures()
            .get(&FailureReason::Decision(StopReason::DeadlineExhausted))
            .copied(),
        Some(measurements.operations)
    );
    for sends in sends_by_operation(&traces[0]).values() {
        let start = sends[0];
        assert!(
            sends.iter().all(|&send| send < start + 2_000_000),
            "{sends:?}"
        );
    }
}
