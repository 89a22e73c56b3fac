//! Client-side overload controls end to end: each one's effect on a run, against the rule of
//! its source worked out for the run.

use retrystorm::base::time::MICROS_PER_SECOND;
use retrystorm::control::ControlKind;
use retrystorm::engine::AttemptRecord;
use retrystorm::model::Model;
use retrystorm::run::PolicyRun;
use retrystorm::scenario::Override;
use retrystorm::vocabulary::outcome::{AttemptOutcome, FailureReason, NextStep};

use crate::support::{assert_contains, error_with, run, run_traced, scenario};

/// An upstream that answers every request with 503 at once (capacity zero, `outage =
/// "reject"`), open arrivals of `rate` per second for `duration_s`, three immediate retries and
/// `controls`.
fn always_failing(rate: f64, duration_s: u32, controls: &str) -> String {
    format!(
        r#"
name = "controls"
seed = 5
duration = "{duration_s}s"
[clients]
count = 100
rate = {per_client}
[network]
latency = "1ms"
[upstream]
workers = 10
service_time = "1ms"
outage = "reject"
capacity = [{{ at = "0s", factor = 0.0 }}]
[[policy]]
name = "controlled"
base = "1ms"
cap = "1ms"
jitter = "none"
max_attempts = 3
controls = [{controls}]
"#,
        per_client = rate / 100.0,
    )
}

/// One client calling one operation at a time (10 ms apart) an upstream that refuses every
/// request with 503 while its `capacity` curve is at zero, with the `policy` lines.
fn one_call_at_a_time(duration_s: u32, capacity: &str, policy: &str) -> String {
    format!(
        r#"
name = "one-at-a-time"
duration = "{duration_s}s"
[clients]
count = 1
workload = "closed"
think_time = "10ms"
[network]
latency = "1ms"
[upstream]
workers = 10
service_time = "1ms"
outage = "reject"
capacity = [{capacity}]
[[policy]]
name = "controlled"
base = "1ms"
cap = "1ms"
jitter = "none"
{policy}
"#
    )
}

fn retries(policy: &PolicyRun, from_s: usize, to_s: usize) -> u64 {
    policy.measurements.buckets[from_s..to_s]
        .iter()
        .map(|bucket| bucket.retries)
        .sum()
}

fn failed(policy: &PolicyRun, reason: FailureReason) -> u64 {
    policy
        .measurements
        .failures()
        .get(&reason)
        .copied()
        .unwrap_or(0)
}

/// Finagle's budget (`RetryBudget.scala`): every call deposits 1000, every retry withdraws
/// `1000 / 0.2 = 5000`, on top of a reserve of `10/s * 10 s * 5000`; both leave the window
/// after the ttl, which ten slices make 9.5 s on average. With every attempt failing the
/// budget is the only limit, and in steady state it allows `min_per_s * ttl / 9.5 s +
/// 0.2 * calls` = 10.5 + 20 = 30.5 retries a second at 100 calls a second, against the 300 the
/// decision asks for. The bound [29, 32] covers the slices (30 to 31.1) and the Poisson noise of
/// 4,000 calls (±0.3/s at one sigma).
#[test]
fn a_retry_budget_caps_retries_at_its_ratio_plus_its_minimum() {
    let text = always_failing(
        100.0,
        60,
        r#"{ kind = "retry-budget", percent = 20, min_per_s = 10, ttl = "10s", scope = "global" }"#,
    );
    let result = run(&scenario(&text));
    let policy = &result.policies[0];
    let per_second = retries(policy, 20, 60) as f64 / 40.0;
    assert!(
        (29.0..=32.0).contains(&per_second),
        "{per_second} retries a second"
    );
    assert!(failed(policy, FailureReason::Control(ControlKind::RetryBudget)) > 2000);
}

/// gRPC throttling (gRFC A6) with `max_tokens = 10`: tokens start at 10 and every failed
/// attempt takes one; a retry needs more than 5. With no success to refill it and one call at a
/// time, the first call fails four times (10 -> 6) after three retries, the second fails once
/// (-> 5) and is throttled, and no retry is ever sent again: exactly three in the whole run.
/// When the upstream comes back, every success gives back 0.1 token; the next outage starts
/// with a full bucket again and allows exactly three retries again.
#[test]
fn grpc_throttling_stops_retries_below_half_its_tokens() {
    let text = one_call_at_a_time(
        40,
        r#"{ at = "0s", factor = 0.0 }, { at = "10s", factor = 0.0 }, { at = "10s", factor = 1.0 },
  { at = "20s", factor = 1.0 }, { at = "20s", factor = 0.0 }, { at = "30s", factor = 0.0 },
  { at = "30s", factor = 1.0 }"#,
        r#"max_attempts = 3
controls = [{ kind = "grpc-throttling", max_tokens = 10, token_ratio = 0.1 }]"#,
    );
    let result = run(&scenario(&text));
    let policy = &result.policies[0];
    assert_eq!(retries(policy, 0, 10), 3);
    assert_eq!(retries(policy, 10, 20), 0);
    assert_eq!(retries(policy, 20, 30), 3);
    assert_eq!(retries(policy, 30, 40), 0);
    let throttled = failed(policy, FailureReason::Control(ControlKind::GrpcThrottling));
    let outage_calls: u64 = [0..10, 20..30]
        .into_iter()
        .flat_map(|range| policy.measurements.buckets[range].iter())
        .map(|bucket| bucket.first_attempts)
        .sum();
    // Every call of an outage but the first is throttled after its first attempt.
    assert_eq!(throttled, outage_calls - 2);
}

/// The AWS SDKs' quota: 500 tokens, 5 per retry, nothing back without a success: exactly 100
/// retries in a run where nothing succeeds, then `retry-quota-exhausted`.
#[test]
fn the_aws_quota_pays_for_exactly_a_hundred_retries() {
    let text = always_failing(
        100.0,
        20,
        r#"{ kind = "aws-retry-quota", scope = "global" }"#,
    );
    let result = run(&scenario(&text));
    let policy = &result.policies[0];
    assert_eq!(retries(policy, 0, policy.measurements.buckets.len()), 100);
    let operations = policy.measurements.operations;
    // 100 retries are three each for 33 calls and one for the 34th, which is refused its
    // second; every call after the 33rd ends refused.
    assert_eq!(
        failed(policy, FailureReason::Control(ControlKind::AwsRetryQuota)),
        operations - 33
    );
}

/// Adaptive throttling (SRE book, ch. 21): in equilibrium a client sends about `K` times the
/// requests the backend accepts, since `P = (requests - K accepts) / (requests + 1)` makes the
/// sent share `1 - P` about `K accepts / requests`. A rate limiter that accepts up to 100 a
/// second of 1,000 offered makes the client send about twice what it accepts with `K = 2`, and
/// about 1.1 times with `K = 1.1`; without the throttle it would send all 1,000. Bounds: ±10%,
/// far above the Poisson noise of a 100 s steady state.
#[test]
fn adaptive_throttling_sends_k_times_what_the_backend_accepts() {
    for k in [2.0, 1.1] {
        let text = format!(
            r#"
name = "adaptive"
seed = 3
duration = "130s"
[clients]
count = 100
rate = 10.0
[network]
latency = "1ms"
[upstream]
workers = 100
service_time = "1ms"
rate_limit = {{ rate = 100, burst = 50 }}
[[policy]]
name = "throttled"
max_attempts = 1
retry_after = "ignore"
controls = [{{ kind = "sre-throttling", k = {k}, scope = "global" }}]
"#
        );
        let result = run(&scenario(&text));
        let policy = &result.policies[0];
        let buckets = &policy.measurements.buckets[30..130];
        let sent = buckets.iter().map(|b| b.attempts).sum::<u64>() as f64 / 100.0;
        let accepted = buckets.iter().map(|b| b.ok).sum::<u64>() as f64 / 100.0;
        assert!(
            (80.0..=100.5).contains(&accepted),
            "K = {k}: {accepted} accepted a second"
        );
        let ratio = sent / accepted;
        assert!(
            (ratio - k).abs() < 0.1 * k,
            "K = {k}: {sent} sent a second for {accepted} accepted"
        );
    }
}

/// resilience4j's breaker with a window of the last 10 calls, 10 calls at least, 50%, 3 s open
/// and 2 trial calls, on one client calling one at a time, with one retry per call. The
/// upstream refuses everything from 10 s to 20 s. The breaker opens on the fifth failure (five
/// of the last ten); then no attempt is sent for 3 s; then exactly two trial attempts go out,
/// fail, and reopen it for 3 s, until the upstream is back; then two trials succeed and it
/// closes, and nothing is refused again.
#[test]
fn the_breaker_opens_probes_and_closes_at_the_configured_points() {
    let text = one_call_at_a_time(
        30,
        r#"{ at = "10s", factor = 1.0 }, { at = "10s", factor = 0.0 },
  { at = "20s", factor = 0.0 }, { at = "20s", factor = 1.0 }"#,
        r#"max_attempts = 1
controls = [{ kind = "circuit-breaker", window_calls = 10, minimum_calls = 10, failure_rate = 50, wait_open = "3s", half_open_calls = 2 }]"#,
    );
    let (_, traces) = run_traced(&scenario(&text));
    let records: &[AttemptRecord] = &traces[0];
    let outage = 10 * MICROS_PER_SECOND..20 * MICROS_PER_SECOND;
    let refused = |record: &&AttemptRecord| record.outcome == AttemptOutcome::NotSent;
    assert!(
        records
            .iter()
            .filter(refused)
            .all(|record| record.send >= outage.start),
        "nothing is refused before the outage"
    );
    let after = |record: &&AttemptRecord| record.send >= outage.start;
    let sent: Vec<&AttemptRecord> = records
        .iter()
        .filter(after)
        .filter(|record| record.outcome != AttemptOutcome::NotSent)
        .collect();
    // Five failures open it, at the end of the fifth.
    assert!(
        sent[..5]
            .iter()
            .all(|r| r.outcome == AttemptOutcome::Rejected)
    );
    let first_refusal = records.iter().find(refused).expect("refusals");
    assert!(first_refusal.send >= sent[4].end && first_refusal.send < sent[5].send);
    // Then pairs of trials, each at least 3 s after the opening before it, with refusals
    // between: pairs at about 13, 16 and 19 s fail, the pair after 20 s succeeds.
    let trials = &sent[5..];
    let mut opened = sent[4].end;
    for (pair, trial) in trials.chunks(2).enumerate().take(4) {
        assert!(
            trial[0].send >= opened + 3 * MICROS_PER_SECOND,
            "pair {pair} at {} only {} us after opening",
            trial[0].send,
            trial[0].send - opened
        );
        assert!(
            records.iter().any(|r| r.outcome == AttemptOutcome::NotSent
                && r.send >= opened
                && r.send < trial[0].send),
            "pair {pair}: refusals while open"
        );
        let expected = if pair < 3 {
            AttemptOutcome::Rejected
        } else {
            AttemptOutcome::Ok
        };
        assert!(
            trial.iter().all(|t| t.outcome == expected),
            "pair {pair}: {trial:?}"
        );
        opened = trial[1].end;
    }
    let trials: Vec<&AttemptRecord> = trials.iter().copied().take(8).collect();
    assert!(trials[6].send >= outage.end);
    let last_refusal = records.iter().rfind(refused).expect("refusals");
    assert!(last_refusal.send < trials[6].send);
    assert!(records.iter().filter(refused).all(|r| matches!(
        r.next,
        NextStep::Stop(FailureReason::Control(ControlKind::CircuitBreaker))
    )));
}

/// Controls work at a tier: an api calling a db that refuses everything, the api with the AWS
/// quota, the users without retries. The db sees exactly the 100 retries 500 tokens pay for.
#[test]
fn a_tier_spends_its_own_quota() {
    let text = r#"
name = "tier"
duration = "20s"
[clients]
count = 100
rate = 1.0
calls = "api"
[network]
latency = "1ms"
[[service]]
name = "api"
workers = 100
service_time = "1ms"
calls = ["db"]
retry = { base = "1ms", cap = "1ms", jitter = "none", max_attempts = 3, controls = [{ kind = "aws-retry-quota" }] }
[[service]]
name = "db"
workers = 10
service_time = "1ms"
outage = "reject"
capacity = [{ at = "0s", factor = 0.0 }]
[[policy]]
name = "edge"
max_attempts = 1
retry_after = "ignore"
overrides = { "service.api.failure_status" = 500 }
"#;
    let result = run(&scenario(text));
    let policy = &result.policies[0];
    let db = &policy.measurements.services[1];
    let db_retries: u64 = db.buckets.iter().map(|b| b.retries).sum();
    assert_eq!(db_retries, 100);
    // The api answers 500 (not retryable) for every call, so the users never retry.
    assert_eq!(retries(policy, 0, policy.measurements.buckets.len()), 0);
}

/// The AWS SDKs' adaptive mode against a rate limit of 100 a second, 50 closed-loop clients
/// (threads) with three retries each. Without it the clients send about 3,900 attempts a
/// second, of which 3,800 are throttled. With it (botocore's CUBIC limiter, shared by the
/// process), sends wait for tokens at the learnt rate: over the steady state the client never
/// sends more than the limit allows (each throttle cuts the rate to 0.7 of the measured one),
/// so the throttled attempts fall by more than a hundred times, and calls wait instead of
/// failing (the bucket fills at 0.5 tokens a second at least, botocore's `MIN_FILL_RATE`). The price, visible here as in botocore, is throughput: every throttled response
/// in a burst cuts the rate again.
#[test]
fn aws_adaptive_mode_sends_at_the_rate_the_service_accepts() {
    let text = r#"
name = "adaptive"
seed = 3
duration = "60s"
[clients]
count = 50
workload = "closed"
think_time = "10ms"
[network]
latency = "1ms"
[upstream]
workers = 100
service_time = "1ms"
rate_limit = { rate = 100 }
[[policy]]
name = "plain"
base = "10ms"
cap = "1s"
retry_after = "ignore"
[[policy]]
name = "adaptive"
base = "10ms"
cap = "1s"
retry_after = "ignore"
controls = [{ kind = "aws-adaptive", scope = "global" }]
"#;
    let result = run(&scenario(text));
    let per_second =
        |policy: &PolicyRun, count: fn(&retrystorm::vocabulary::counts::BucketCounts) -> u64| {
            policy.measurements.buckets[20..60]
                .iter()
                .map(count)
                .sum::<u64>() as f64
                / 40.0
        };
    let [plain, adaptive] = &result.policies[..] else {
        panic!("two policies");
    };
    let throttled = |policy: &PolicyRun| per_second(policy, |b| b.rejected_429);
    assert!(throttled(plain) > 3000.0, "{}", throttled(plain));
    assert!(
        throttled(adaptive) * 100.0 < throttled(plain),
        "{} against {}",
        throttled(adaptive),
        throttled(plain)
    );
    let sent = per_second(adaptive, |b| b.attempts);
    assert!(sent <= 110.0, "{sent} sent a second");
    // The bucket never fills slower than botocore's 0.5 tokens a second, so calls keep going
    // out: a cut to the floor can leave one second without a send, never two in a row.
    assert!(
        adaptive.measurements.buckets[20..60]
            .windows(2)
            .all(|pair| pair[0].attempts + pair[1].attempts > 0)
    );
    // Waiting instead of failing: most calls succeed.
    let success = |policy: &PolicyRun| {
        let buckets = &policy.measurements.buckets[20..60];
        let ended: u64 = buckets.iter().map(|b| b.succeeded + b.failed).sum();
        buckets.iter().map(|b| b.succeeded).sum::<u64>() as f64 / ended as f64
    };
    assert!(success(adaptive) > 0.7 && success(plain) < 0.2);
}

/// Envoy's retry budget (`circuit_breaker.proto`): retries outstanding at most
/// `max(20% of active requests, 3)`. Against an upstream that never answers, every attempt is
/// outstanding for its 1 s timeout, so with first attempts at 100 a second and retries at `r`,
/// `r * 1 s <= 0.2 * (100 + r) * 1 s`: at most 25 retries a second, against the 300 the
/// decision asks for. Bound [22, 26]: Envoy truncates the limit to an integer, and the
/// arrivals are Poisson.
#[test]
fn envoys_budget_caps_retries_outstanding_at_its_share_of_requests() {
    let text = always_failing(
        100.0,
        60,
        r#"{ kind = "retry-budget", percent = 20, min_concurrency = 3, scope = "global" }"#,
    )
    .replace("outage = \"reject\"", "outage = \"blackhole\"")
    .replace("count = 100\n", "count = 100\ndeadline = \"10s\"\n");
    let result = run(&scenario(&text));
    let policy = &result.policies[0];
    let per_second = retries(policy, 20, 60) as f64 / 40.0;
    assert!(
        (22.0..=26.0).contains(&per_second),
        "{per_second} retries a second"
    );
}

/// Issue 23, case 1, through `run`: a time-based breaker (`window = "10s", minimum_calls = 5,
/// wait_open = "1s"`, ten trial calls) against an upstream that refuses everything. Half-open,
/// the fifth failed trial reopens it while another trial is in flight, which ends while it is
/// open. That panicked (`index out of bounds: the len is 5 but the index is 5`: it was recorded
/// in the half-open ring by the time window's rule). Now the run finishes, and the breaker does
/// what resilience4j's does: five failures open it, then in each of the nine seconds after
/// that five to ten trials go out, and every other call is refused locally.
#[test]
fn a_time_window_breaker_survives_trials_that_end_after_it_reopens() {
    let text = always_failing(
        50.0,
        10,
        r#"{ kind = "circuit-breaker", window = "10s", minimum_calls = 5, wait_open = "1s" }"#,
    );
    let result = run(&scenario(&text));
    let policy = &result.policies[0];
    let sent: u64 = policy.measurements.buckets.iter().map(|b| b.attempts).sum();
    let refused = failed(policy, FailureReason::Control(ControlKind::CircuitBreaker));
    let operations = policy.measurements.operations;
    assert!(
        (5 + 5 * 9..=5 + 10 * 9).contains(&sent),
        "{sent} attempts sent: five, then five to ten trials a second"
    );
    assert!(
        refused + 5 + 10 * 9 >= operations && refused > 0,
        "{refused} of {operations} calls refused by the breaker"
    );
}

/// Brooker's figures for his four strategies ("Fixing retries with token buckets and circuit
/// breakers", 2022): his simulator (`mbrooker/simulator_example@bbfe3946f0459a69f6012737c68fc63b973471be`,
/// `retry_sim/`) run unchanged, its `run_sims` setup (100 clients of 10 calls a second, each
/// network leg exponential of 10 ms, independent failures, no backoff) for 300 s with
/// `random.seed(1)`: per failure rate, (no retries, three retries, token bucket, breaker) as
/// total calls / first calls.
const BROOKER_300S: [(f64, [f64; 4]); 7] = [
    (0.0, [1.0, 1.0, 1.0, 1.0]),
    (
        0.01,
        [
            1.0,
            303_995.0 / 300_954.0,
            302_974.0 / 299_919.0,
            302_432.0 / 299_363.0,
        ],
    ),
    (
        0.05,
        [
            1.0,
            315_814.0 / 299_970.0,
            316_014.0 / 300_374.0,
            314_973.0 / 299_226.0,
        ],
    ),
    (
        0.1,
        [
            1.0,
            334_697.0 / 300_846.0,
            327_496.0 / 299_488.0,
            BREAKER_AT_TENTH,
        ],
    ),
    (
        0.2,
        [
            1.0,
            374_626.0 / 300_313.0,
            329_790.0 / 299_499.0,
            301_010.0 / 300_976.0,
        ],
    ),
    (
        0.3,
        [
            1.0,
            425_327.0 / 300_362.0,
            330_662.0 / 300_241.0,
            300_070.0 / 300_064.0,
        ],
    ),
    (
        0.5,
        [
            1.0,
            564_477.0 / 299_883.0,
            331_020.0 / 300_541.0,
            1.0, // 300,879 calls, not one retried
        ],
    ),
];

/// His breaker at f = 0.1 sits on its threshold: the mean of his simulator's figures over
/// seeds 1 to 5 (1.02644, 1.02699, 1.03043, 1.02798, 1.02561), against ours over seeds 1 to 5.
const BREAKER_AT_TENTH: f64 = (307_194.0 / 299_281.0
    + 307_803.0 / 299_714.0
    + 308_630.0 / 299_516.0
    + 308_945.0 / 300_536.0
    + 307_574.0 / 299_894.0)
    / 5.0;

/// From run to run the breaker's figure at f = 0.1 has a standard deviation of 0.0032 here
/// (seeds 1 to 5: 1.02425, 1.03173, 1.02439, 1.02721, 1.02485) and 0.0019 in his simulator;
/// two means of five runs may differ by 4.5 standard errors of their difference,
/// `4.5 * sqrt((0.0032^2 + 0.0019^2) / 5)`.
const BREAKER_SPREAD: f64 = 0.0075;

/// Brooker's simulator's setup, here: 100 clients of 10 operations a second for 300 s, each
/// network leg exponential of 10 ms, an upstream that never queues and fails each request with
/// probability `f`, retries at once; his four strategies as four policies (his token bucket
/// has no retry limit of its own: `max_attempts = 100`, which its five tokens never reach;
/// his breaker wraps three retries), each control per client as his are.
fn brookers_setup(f: f64, seed: u64) -> String {
    format!(
        r#"
name = "brooker"
seed = {seed}
duration = "300s"
[clients]
count = 100
rate = 10.0
deadline = "60s"
attempt_timeout = "30s"
[network]
latency = {{ distribution = "exponential", mean = "10ms" }}
[upstream]
workers = 100000
service_time = "0ms"
queue_limit = 0
errors = {{ rate = {f}, status = 503 }}
[[policy]]
name = "no retries"
max_attempts = 0
[[policy]]
name = "three retries"
base = "0ms"
cap = "0ms"
jitter = "none"
max_attempts = 3
[[policy]]
name = "token bucket"
base = "0ms"
cap = "0ms"
jitter = "none"
max_attempts = 100
controls = [{{ kind = "token-bucket", scope = "client" }}]
[[policy]]
name = "retry breaker"
base = "0ms"
cap = "0ms"
jitter = "none"
max_attempts = 3
controls = [{{ kind = "retry-breaker", scope = "client" }}]
"#
    )
}

/// Brooker's two limiters resolve with his simulator's numbers (`AdaptiveRetryFactory(0.1, 5)`
/// with `bucket > 1.0`; `CircuitBreakerRetryFactory(..., 0.1)`, cumulative), say so in
/// `check`'s words and in the resolved scenario, take `--set` by kind, and refuse what they
/// cannot be at the control's place, listing their own settings.
#[test]
fn brookers_limiters_resolve_with_his_numbers() {
    let text = always_failing(
        10.0,
        1,
        r#"{ kind = "token-bucket", scope = "client" }, { kind = "retry-breaker" }, { kind = "retry-breaker", window = "10s", max_failures_per_call = 0.25 }"#,
    );
    let loaded = scenario(&text);
    let model = Model::new(&loaded, &loaded.policy[0]);
    let described: Vec<String> = model
        .users
        .policy
        .controls
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        described,
        [
            "retry token bucket of 5, 0.1 per call, 1 per retry, a retry needs more than 1 (per client)",
            "retry breaker: no retry above 0.1 failed attempts per call since the start (per process)",
            "retry breaker: no retry above 0.25 failed attempts per call over 10s (per process)",
        ]
    );
    assert_contains(
        &loaded.to_resolved_toml(),
        &[
            "capacity = 5",
            "credit = 0.1",
            "cost = 1.0",
            "threshold = 1.0",
            "max_failures_per_call = 0.1",
        ],
    );
    let set = retrystorm::import::load_str(
        &text,
        "set.toml",
        &[
            Override::set("policy.0.controls.token-bucket.capacity", "10"),
            Override::set("policy.0.controls.token-bucket.threshold", "2.5"),
            Override::set("policy.0.controls.1.max_failures_per_call", "0.5"),
        ],
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let model = Model::new(&set, &set.policy[0]);
    assert_eq!(
        model.users.policy.controls[0].to_string(),
        "retry token bucket of 10, 0.1 per call, 1 per retry, a retry needs more than 2.5 (per client)"
    );
    assert!(
        model.users.policy.controls[1]
            .to_string()
            .contains("above 0.5 failed")
    );
    let bucket = r#"{ kind = "token-bucket", scope = "client" }"#;
    for (to, message) in [
        (
            r#"{ kind = "token-bucket", window = "10s" }"#,
            "`window` is not a setting of a token-bucket control; its settings are capacity, credit, cost, threshold (and scope)",
        ),
        (
            r#"{ kind = "token-bucket", threshold = 5 }"#,
            "threshold 5 must be at least 0 and below capacity (5)",
        ),
        (
            r#"{ kind = "token-bucket", credit = 0.0001 }"#,
            "each must be at least 0.001",
        ),
        (
            r#"{ kind = "retry-breaker", capacity = 5 }"#,
            "`capacity` is not a setting of a retry-breaker control; its settings are max_failures_per_call, window (and scope)",
        ),
    ] {
        let error = error_with(&text, bucket, to);
        assert_contains(&error, &["bad.toml:", message]);
    }
}

/// The setup of Brooker's simulator, run here, gives his figures for his four strategies at
/// each failure rate `f` of his list. The tolerances:
///
/// - No retries: exactly 1 in both.
/// - Three retries: the closed form `1 + f + f^2 + f^3`, his figure and ours each within 4.5
///   standard errors of a mean of ~300,000 independent calls, the sends per call having
///   `P(S > k) = f^k`: at most 0.0087 (at f = 0.5).
/// - The token bucket once it runs dry (f >= 0.2, where retrying until success would ask
///   `f / (1 - f) >= 0.25` retries a call against 0.1 of credit): each client's retries are
///   `0.1 * calls + (5 - tokens left - credits lost at the cap)`, and both of those are between
///   0 and about 1.1 tokens, so the amplification is `1.1 + (between 290 and 500) / 300,000
///   calls` in any run of this setup: his and ours within 0.001.
/// - The breaker for f >= 0.2: a client's retries need `failures <= 0.1 * calls`, which a
///   failure rate of 0.2 or more leaves behind within its first few dozen calls (at 100 calls
///   a binomial at 0.2 is at or below 10 with probability under 1%), so both are within
///   100 clients * 3 retries / 300,000 calls = 0.001 of 1.
/// - Where the limiters seldom refuse (f = 0.01, 0.05) or ration a steady demand (the bucket
///   at f = 0.1: 0.111 retries asked a call, 0.1 given), his figure and ours are two means of
///   ~300,000 calls, each call's retries at most those of retrying until success (a
///   geometric count `G` with `E[G^2] = f (1 + f) / (1 - f)^2`, which bounds their variance):
///   within 4.5 standard errors of the difference of two such means, at most 0.0043 (f = 0.1).
/// - The cumulative breaker at f = 0.1 sits on its threshold (a tenth of the calls fail at the
///   first try alone): whether a client retries follows the random walk of its failures
///   against a tenth of its calls since the start, so one run's figure varies far more than
///   a mean of independent calls. Our mean over seeds 1 to 5 against his
///   ([`BREAKER_AT_TENTH`]), within [`BREAKER_SPREAD`].
///
/// All of these are well inside 0.016, the difference issue 27 measured between his token
/// bucket and our nearest control before (the Finagle budget).
#[test]
fn brookers_simulator_setup_gives_his_amplification() {
    let amplification = |f: f64, seed: u64| -> Vec<f64> {
        run(&scenario(&brookers_setup(f, seed)))
            .policies
            .iter()
            .map(|policy| policy.summary.amplification)
            .collect()
    };
    for (f, his) in BROOKER_300S {
        let result = run(&scenario(&brookers_setup(f, 1)));
        let mut ours: Vec<f64> = result
            .policies
            .iter()
            .map(|policy| policy.summary.amplification)
            .collect();
        if f == 0.1 {
            ours[3] = (ours[3] + (2..=5).map(|seed| amplification(f, seed)[3]).sum::<f64>()) / 5.0;
        }
        let calls = result.policies[0].measurements.operations as f64;
        assert_eq!(ours[0], 1.0);
        assert_eq!(his[0], 1.0);
        let closed: f64 = (0..=3).map(|k| f.powi(k)).sum();
        let squares: f64 = (0..=3).map(|k| f64::from(2 * k + 1) * f.powi(k)).sum();
        let bound = 4.5 * ((squares - closed * closed) / calls).sqrt() + 1e-12;
        assert!(
            (ours[1] - closed).abs() <= bound && (his[1] - closed).abs() <= bound,
            "f = {f}: three retries {} (his {}) against {closed} within {bound}",
            ours[1],
            his[1]
        );
        let independent = 4.5 * (2.0 * f * (1.0 + f) / (1.0 - f).powi(2) / calls).sqrt() + 1e-12;
        let (bucket, breaker) = if f >= 0.2 {
            (0.001, 0.001)
        } else if f == 0.1 {
            (independent, BREAKER_SPREAD)
        } else {
            (independent, independent)
        };
        for (index, tolerance) in [(2, bucket), (3, breaker)] {
            assert!(
                (ours[index] - his[index]).abs() <= tolerance,
                "f = {f}: {} {} against his {} within {tolerance}",
                result.policies[index].name,
                ours[index],
                his[index]
            );
        }
    }
}
