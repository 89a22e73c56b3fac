//! Hedged calls (gRPC's hedging policy, gRFC A6): the schedule, the first success winning, the
//! others cancelled, non-fatal and fatal statuses, and the tail latency hedging is for.

use retrystorm::engine::AttemptRecord;
use retrystorm::retry::decision::StopReason;
use retrystorm::run::PolicyRun;
use retrystorm::vocabulary::outcome::{AttemptOutcome, FailureReason, NextStep};

use crate::support::{run, run_traced, scenario};

/// One client a second against a service of `upstream` settings, with `policy` lines.
fn hedged(upstream: &str, policy: &str, rate: f64) -> String {
    format!(
        r#"
name = "hedging"
seed = 9
duration = "20s"
[clients]
count = 100
rate = {per_client}
[network]
latency = "1ms"
[upstream]
workers = 1000
{upstream}
[[policy]]
name = "hedged"
{policy}
"#,
        per_client = rate / 100.0
    )
}

fn operation(records: &[AttemptRecord], id: u64) -> Vec<&AttemptRecord> {
    records.iter().filter(|r| r.operation == id).collect()
}

/// With a constant 200 ms of work, `max_attempts = 3` and a 50 ms delay, every call sends its
/// attempts at exactly 0, 50 and 100 ms; the first answers at 202 ms (1 ms each way) and wins,
/// and the two still in flight are cancelled: three attempts per operation, and the service
/// stops their work.
#[test]
fn hedges_go_out_on_schedule_and_the_first_success_wins() {
    let text = hedged(
        "service_time = \"200ms\"\ncancellation = true",
        "hedging = { max_attempts = 3, delay = \"50ms\" }",
        10.0,
    );
    let (result, traces) = run_traced(&scenario(&text));
    let policy = &result.policies[0];
    let operations = policy.measurements.operations;
    let attempts: u64 = policy.measurements.buckets.iter().map(|b| b.attempts).sum();
    assert_eq!(attempts, 3 * operations);
    let succeeded: u64 = policy
        .measurements
        .buckets
        .iter()
        .map(|b| b.succeeded)
        .sum();
    assert_eq!(succeeded, operations);
    let first = operation(&traces[0], 0);
    let start = first.iter().map(|r| r.send).min().unwrap();
    let sends: Vec<u64> = first.iter().map(|r| r.send - start).collect();
    let mut sorted = sends.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [0, 50_000, 100_000]);
    let winner = first
        .iter()
        .find(|r| r.outcome == AttemptOutcome::Ok)
        .unwrap();
    assert_eq!((winner.send - start, winner.end - start), (0, 202_000));
    assert_eq!(winner.next, NextStep::Success);
    let cancelled: Vec<_> = first
        .iter()
        .filter(|r| r.outcome == AttemptOutcome::Cancelled)
        .collect();
    assert_eq!(cancelled.len(), 2);
    assert!(
        cancelled
            .iter()
            .all(|r| r.end - start == 202_000 && r.next == NextStep::CallEnded)
    );
    let cancelled_at_service: u64 = policy.measurements.services[0]
        .buckets
        .iter()
        .map(|b| b.cancelled)
        .sum();
    assert_eq!(cancelled_at_service, 2 * operations);
}

/// A non-fatal status sends the next hedge at once: three 503s back to back, then the call
/// fails `max-attempts`. A fatal one ends the call at the first answer (`not-transient`),
/// before any hedge is due.
#[test]
fn non_fatal_statuses_hedge_at_once_and_fatal_ones_end_the_call() {
    let non_fatal = hedged(
        "service_time = \"1ms\"\nerrors = { rate = 1.0, status = 503 }",
        "hedging = { max_attempts = 3, delay = \"1s\", non_fatal_statuses = [503] }",
        10.0,
    );
    let (result, traces) = run_traced(&scenario(&non_fatal));
    let policy = &result.policies[0];
    let operations = policy.measurements.operations;
    let failures = policy.measurements.failures();
    assert_eq!(
        failures[&FailureReason::Decision(StopReason::MaxAttempts)],
        operations
    );
    let first = operation(&traces[0], 0);
    assert_eq!(first.len(), 3);
    assert!(first.windows(2).all(|pair| pair[1].send == pair[0].end));
    assert_eq!(first[0].next, NextStep::Hedge);
    let fatal = non_fatal.replace("non_fatal_statuses = [503]", "non_fatal_statuses = [429]");
    let result = run(&scenario(&fatal));
    let policy = &result.policies[0];
    let failures = policy.measurements.failures();
    assert_eq!(
        failures[&FailureReason::Decision(StopReason::NotTransient)],
        policy.measurements.operations
    );
    let attempts: u64 = policy.measurements.buckets.iter().map(|b| b.attempts).sum();
    assert_eq!(attempts, policy.measurements.operations);
}

/// The tail at scale (Dean and Barroso, CACM 2013): a service whose latency is lognormal with
/// a 10 ms median and a 200 ms p99 (sigma = ln 20 / 2.326 = 1.288). Hedging once after 30 ms
/// sends the second attempt only when the first has not answered, with probability
/// `P(X > 28 ms) = 1 - Phi(ln 2.8 / 1.288) = 0.212`; the call then takes `min(X1, 30 + X2)`,
/// whose 99th percentile solves `P(X > t) P(X > t - 30) = 0.01`: about 70 ms against 200 ms.
/// Bounds: amplification 1.212 ± 0.02 (30,000 calls: ±0.007 at 3 sigma, plus the queueing of
/// 1,000 workers); p99 below 90 ms with hedging, above 180 ms without.
#[test]
fn hedging_cuts_the_tail_for_a_fifth_more_load() {
    let service =
        "service_time = { distribution = \"lognormal\", median = \"10ms\", p99 = \"200ms\" }";
    let with = run(&scenario(&hedged(
        service,
        "hedging = { max_attempts = 2, delay = \"30ms\" }",
        1500.0,
    )));
    let without = run(&scenario(&hedged(service, "max_attempts = 0", 1500.0)));
    let summary = |result: &retrystorm::run::ScenarioRun| {
        let policy: &PolicyRun = &result.policies[0];
        let attempts: u64 = policy.measurements.buckets.iter().map(|b| b.attempts).sum();
        (
            attempts as f64 / policy.measurements.operations as f64,
            policy.measurements.total_latency.quantile(0.99).unwrap() / 1000.0,
        )
    };
    let (amplification, p99) = summary(&with);
    let (_, p99_without) = summary(&without);
    assert!(
        (amplification - 1.212).abs() < 0.02,
        "amplification {amplification}"
    );
    assert!(p99 < 90.0, "p99 {p99} ms");
    assert!(p99_without > 180.0, "p99 without hedging {p99_without} ms");
}

/// Hedging under the AWS adaptive rate limiter: a hedge held for a token may find its call
/// already won by another hedge when the token comes; it is dropped (this used to panic), and
/// every call still ends exactly once.
#[test]
fn a_held_hedge_of_a_call_that_ended_is_dropped() {
    let text = r#"
name = "hedged-adaptive"
seed = 3
duration = "20s"
[clients]
count = 50
workload = "closed"
think_time = "10ms"
[network]
latency = "1ms"
[upstream]
workers = 100
service_time = { distribution = "lognormal", median = "10ms", p99 = "200ms" }
rate_limit = { rate = 100 }
[[policy]]
name = "hedged adaptive"
hedging = { max_attempts = 3, delay = "20ms", non_fatal_statuses = [429] }
controls = [{ kind = "aws-adaptive", scope = "global" }]
"#;
    let result = run(&scenario(text));
    let measurements = &result.policies[0].measurements;
    let ended: u64 = measurements
        .buckets
        .iter()
        .map(|b| b.succeeded + b.failed)
        .sum();
    assert_eq!(ended, measurements.operations);
    assert!(ended > 100);
}
