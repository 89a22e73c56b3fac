//! Servers that fail as real ones do: errors answered after the work, deadlines checked at
//! the service, idempotency keys lost in a crash.

use retrystorm::import::load_str;
use retrystorm::run::ScenarioRun;
use retrystorm::scenario::Override;

use crate::support::{assert_contains, error_with, run, scenario};

/// The users' retries over a run.
fn retries(run: &ScenarioRun) -> u64 {
    run.policies[0]
        .measurements
        .buckets
        .iter()
        .map(|bucket| bucket.retries)
        .sum()
}

/// An open workload of 1,000 GETs a second for 20 s on 20 workers of exactly 10 ms (half
/// busy), with `errors` injected and no retries: every request is answered, none times out.
fn errors_scenario(errors: &str) -> String {
    format!(
        r#"
name = "errors"
duration = "20s"
[clients]
count = 1000
rate = 1.0
attempt_timeout = "5s"
[upstream]
workers = 20
service_time = "10ms"
queue_limit = 100000
errors = {errors}
[[policy]]
name = "no retries"
max_attempts = 0
"#
    )
}

/// Errors at arrival hold no worker; errors after the work hold one for its service time. A
/// request's error is its own draw, so the same requests fail either way: with `n` requests
/// received and `k` errors, workers are held exactly `(n - k) * S` at arrival and `n * S`
/// after the work. So the busy fraction is `λ(1 - e)S` against `λS` (closed form), here with
/// λ = 1000/s, S = 10 ms and e = 0.2: 8 against 10 workers busy on average. The error share
/// `k / n` is binomial: n ≈ 20,000 gives σ = sqrt(0.2 * 0.8 / 20000) ≈ 0.0028, so it is within
/// 0.012 (4σ) of 0.2; the busy workers, `held / duration`, within 3% of the closed form (the
/// Poisson count n has a relative σ of 1/sqrt(20000) = 0.7%).
#[test]
fn errors_after_the_work_hold_a_worker_for_it() {
    let service_us = 10_000;
    let at_arrival = run(&scenario(&errors_scenario("{ rate = 0.2, status = 500 }")));
    let after = run(&scenario(&errors_scenario(
        "{ rate = 0.2, status = 500, at = \"after-service\" }",
    )));
    let (arrival, after) = (
        at_arrival.policies[0].measurements.upstream(),
        after.policies[0].measurements.upstream(),
    );
    assert_eq!(arrival.received, after.received);
    assert_eq!(arrival.errors, after.errors, "the same requests fail");
    assert_eq!(
        arrival.held_us,
        (arrival.received - arrival.errors) * service_us
    );
    assert_eq!(after.held_us, after.received * service_us);
    assert_eq!(after.served + after.errors, after.received);
    let share = after.errors as f64 / after.received as f64;
    assert!((share - 0.2).abs() < 0.012, "error share {share}");
    let busy = |held_us: u64| held_us as f64 / 20e6;
    let (expected_arrival, expected_after) = (1000.0 * 0.8 * 0.01, 1000.0 * 0.01);
    assert!(
        (busy(arrival.held_us) / expected_arrival - 1.0).abs() < 0.03,
        "busy at arrival {}",
        busy(arrival.held_us)
    );
    assert!(
        (busy(after.held_us) / expected_after - 1.0).abs() < 0.03,
        "busy after the work {}",
        busy(after.held_us)
    );
}

/// POSTs retried on 500 (unsafely, without a key) at an upstream that answers 30% of them
/// 500 after the work, with nothing lost and nothing timing out.
fn charges(errors: &str, key: bool, unsafe_retries: bool) -> String {
    format!(
        r#"
name = "charges"
duration = "10s"
[clients]
count = 100
rate = 1.0
attempt_timeout = "5s"
[[clients.operations]]
name = "charge"
method = "POST"
idempotency_key = {key}
[upstream]
workers = 50
service_time = "10ms"
errors = {errors}
[[policy]]
name = "retry 500"
base = "10ms"
max_attempts = 3
retryable_statuses = [500]
unsafe_retries = {unsafe_retries}
"#
    )
}

/// A committed error wrote before it failed: every attempt of an operation writes, so its
/// duplicates are its retries, exactly (every attempt is served: no loss, no timeout). An
/// error that committed nothing leaves one write per success and no duplicate. With a key, the
/// committed error completes the key: the retry is answered from the store, so every error
/// is retried once, replayed once, and nothing is written twice.
#[test]
fn only_committed_errors_without_a_key_write_twice() {
    let committed = "{ rate = 0.3, status = 500, at = \"after-service\", committed = true }";
    let nothing = "{ rate = 0.3, status = 500, at = \"after-service\" }";

    let twice = run(&scenario(&charges(committed, false, true)));
    let summary = &twice.policies[0].summary;
    assert!(retries(&twice) > 100, "retries {}", retries(&twice));
    assert_eq!(summary.duplicate_writes, retries(&twice));

    let once = run(&scenario(&charges(nothing, false, true)));
    assert!(retries(&once) > 100);
    assert_eq!(once.policies[0].summary.duplicate_writes, 0);
    let upstream = once.policies[0].measurements.upstream();
    assert_eq!(upstream.writes, upstream.served);

    let keyed = run(&scenario(&charges(committed, true, false)));
    let upstream = keyed.policies[0].measurements.upstream();
    assert_eq!(keyed.policies[0].summary.duplicate_writes, 0);
    assert!(upstream.errors > 100, "errors {}", upstream.errors);
    assert_eq!(retries(&keyed), upstream.errors);
    assert_eq!(upstream.replayed, upstream.errors);
    assert!(keyed.policies[0].summary.success_rate == 1.0);
}

/// One worker, ten requests arriving together at time zero (a constant 1 ms network), each
/// with 350 ms (its attempt timeout) to live and 100 ms of work, never retried: `check`
/// decides what happens to the six that would start past their deadline.
fn burst(deadline: &str) -> String {
    format!(
        r#"
name = "burst"
duration = "1s"
[clients]
count = 10
workload = "closed"
think_time = "1h"
start = "together"
attempt_timeout = "350ms"
[upstream]
workers = 1
service_time = "100ms"
{deadline}
[[policy]]
name = "once"
max_attempts = 0
"#
    )
}

/// The exact small case. Every request reaches the worker at 1 ms, so each one's deadline at
/// the service is 1 ms + 350 ms = 351 ms, while its caller gives up at 350 ms. Served in order,
/// the first four start at 1, 101, 201 and 301 ms; the fifth is taken at 401 ms, past its
/// deadline. Checked at dequeue, the last six are refused, each holding the worker half a
/// service time (50 ms): rejection work of exactly 6 * 50 ms, and 4 * 100 ms of work, of which
/// the fourth request's is wasted (its answer leaves at 401 ms): 3 successes. Checked only at
/// arrival (no request arrives expired), all ten are served, the last seven for callers that
/// gave up: 700 ms wasted, the same 3 successes.
#[test]
fn a_deadline_checked_at_dequeue_refuses_what_would_start_late() {
    let dequeue = run(&scenario(&burst(
        "deadline = { check = \"dequeue\", reject_cost = 0.5 }",
    )));
    let upstream = dequeue.policies[0].measurements.upstream();
    assert_eq!(upstream.dropped_expired, 6);
    assert_eq!(upstream.served, 4);
    assert_eq!(upstream.rejection_work_us, 6 * 50_000);
    assert_eq!(upstream.held_us, 4 * 100_000);
    assert_eq!(upstream.wasted_work_us, 100_000);
    assert_eq!(dequeue.policies[0].summary.succeeded, 3);

    let arrival = run(&scenario(&burst("deadline = { check = \"arrival\" }")));
    let upstream = arrival.policies[0].measurements.upstream();
    assert_eq!(upstream.dropped_expired, 0);
    assert_eq!(upstream.served, 10);
    assert_eq!(upstream.wasted_work_us, 7 * 100_000);
    assert_eq!(arrival.policies[0].summary.succeeded, 3);
}

/// An M/M/1 queue (λ arrivals a second, exponential service of mean 1/μ, FIFO, no retries)
/// whose requests carry a deadline τ after they arrive (the attempt timeout) and are dropped,
/// free, if a worker takes them after it. A dropped request costs nothing, so a request waits
/// exactly the work of those ahead that will be served: the virtual waiting time V of an
/// M/M/1 queue whose arrivals join only while V < τ (M/M/1+D). Level crossing gives its
/// density: `π0 λ e^{-(μ-λ)v}` below τ and `π0 λ e^{λτ} e^{-μv}` above, so the share dropped
/// is `P(V ≥ τ) = π0 ρ e^{-(μ-λ)τ}` with `1/π0 = 1 + ρ(1 - a)/(1 - ρ) + ρa`,
/// `a = e^{-(μ-λ)τ}`, ρ = λ/μ. With μ = 100/s, λ = 90/s, τ = 50 ms: a = e^{-0.5}, π0 = 0.19656,
/// 10.73% dropped. About 90,000 requests in 1,000 s; consecutive requests are correlated
/// through the queue (a busy period lasts 1/(μ-λ) = 100 ms, about 9 requests), which inflates
/// the binomial σ of 0.001 about threefold: within 0.006 (6 σ of the binomial) of 10.73%.
#[test]
fn the_share_dropped_at_dequeue_is_that_of_an_m_m_1_queue_with_deadlines() {
    let text = r#"
name = "mm1d"
duration = "1000s"
[clients]
count = 90
rate = 1.0
attempt_timeout = "50ms"
[upstream]
workers = 1
service_time = { distribution = "exponential", mean = "10ms" }
queue_limit = 100000
deadline = { check = "dequeue" }
[[policy]]
name = "once"
max_attempts = 0
"#;
    let run = run(&scenario(text));
    let upstream = run.policies[0].measurements.upstream();
    let (lambda, mu, tau) = (90.0_f64, 100.0_f64, 0.05_f64);
    let rho = lambda / mu;
    let a = (-(mu - lambda) * tau).exp();
    let pi0 = 1.0 / (1.0 + rho * (1.0 - a) / (1.0 - rho) + rho * a);
    let expected = pi0 * rho * a;
    assert!((expected - 0.1073).abs() < 0.0001, "{expected}");
    let dropped = upstream.dropped_expired as f64 / upstream.received as f64;
    assert!(
        (dropped - expected).abs() < 0.006,
        "dropped {dropped}, expected {expected}"
    );
    // The run ends with the last operation: a few requests are still queued then.
    assert!(upstream.served + upstream.dropped_expired <= upstream.received);
    assert!(upstream.served + upstream.dropped_expired + 10 > upstream.received);
}

/// Twice the load a worker can serve (λ = 200/s, μ = 100/s, FIFO) on a queue of 1,000,
/// requests living 100 ms (a 1 ms network each way), never retried. Without a check the queue
/// is soon full (10 s of work): every request served has waited far past its caller's timeout,
/// and goodput collapses to what was served in the first second or so. Checked at dequeue,
/// the queue holds only live work, an M/M/1+D queue as above with ρ = 2, a = e^{10},
/// π0 = 1/(1 + 2(a - 1) + 2a) = 1.135e-5: the worker is busy nearly all the time, but a request
/// taken just before its deadline still finishes after it. A request waiting `v` succeeds if
/// `v + S < c = 98 ms` (its answer is back within the 100 ms its caller waits), so goodput is
/// `λ π0 [P(S < c) + λ ∫_0^c e^{(λ-μ)v} P(S < c - v) dv]`
/// `= λ π0 [1 - e^{-μc} + λ((e^{kc} - 1)/k - e^{-μc}(e^{(k+μ)c} - 1)/(k + μ))]`, k = λ - μ:
/// 40.9 a second, not μ: the check at `now ≥ deadline` does not foresee the work still to do.
/// About 8,000 successes in 200 s: the binomial σ is about 1%, within 5% (4σ and some
/// correlation through the queue).
#[test]
fn dropping_expired_work_keeps_goodput_from_collapsing() {
    let text = |deadline: &str| {
        format!(
            r#"
name = "overload"
duration = "200s"
[clients]
count = 200
rate = 1.0
attempt_timeout = "100ms"
[upstream]
workers = 1
service_time = {{ distribution = "exponential", mean = "10ms" }}
queue_limit = 1000
{deadline}
[[policy]]
name = "once"
max_attempts = 0
"#
        )
    };
    let plain = run(&scenario(&text("")));
    let checked = run(&scenario(&text("deadline = { check = \"dequeue\" }")));
    let goodput = |run: &ScenarioRun| run.policies[0].summary.succeeded as f64 / 200.0;
    assert!(
        plain.policies[0].summary.succeeded < 200,
        "unchecked successes {}",
        plain.policies[0].summary.succeeded
    );
    let (lambda, mu, c) = (200.0_f64, 100.0_f64, 0.098_f64);
    let k = lambda - mu;
    let a = (-(mu - lambda) * 0.1_f64).exp();
    let pi0 = 1.0 / (1.0 + (lambda / mu) * (1.0 - a) / (1.0 - lambda / mu) + (lambda / mu) * a);
    let integral =
        ((k * c).exp() - 1.0) / k - (-mu * c).exp() * (((k + mu) * c).exp() - 1.0) / (k + mu);
    let expected = lambda * pi0 * (1.0 - (-mu * c).exp() + lambda * integral);
    assert!((expected - 40.9).abs() < 0.1, "{expected}");
    assert!(
        (goodput(&checked) / expected - 1.0).abs() < 0.05,
        "checked goodput {}, expected {expected}",
        goodput(&checked)
    );
}

/// A tier whose deadline has run out still calls the next one (its handler runs to the end):
/// the call carries a timeout of zero, and a service that checks deadlines at arrival refuses
/// it without work. The front's one worker takes 300 ms and the users wait 200 ms, so every
/// call to the back leaves after its deadline: every one is refused at arrival.
#[test]
fn a_call_whose_deadline_has_passed_is_refused_at_arrival() {
    let text = r#"
name = "tiers"
duration = "10s"
[clients]
count = 1
rate = 1.0
attempt_timeout = "200ms"
calls = "front"
[[service]]
name = "front"
workers = 100
service_time = "300ms"
calls = ["back"]
[[service]]
name = "back"
workers = 100
service_time = "10ms"
deadline = { check = "arrival", reject_cost = 0.1 }
[[policy]]
name = "once"
max_attempts = 0
"#;
    let run = run(&scenario(text));
    let back = run.policies[0].measurements.services[1].totals();
    assert!(back.received > 0);
    assert_eq!(back.dropped_expired, back.received);
    assert_eq!(back.served, 0);
    assert_eq!(back.rejection_work_us, back.received * 1_000);
}

/// Five clients each sending one keyed POST at time zero, every response lost, on an upstream
/// that crashes from `crash_at` to 200 ms and keeps its keys in `store`.
fn crash_with_keys(store: &str, crash_at: &str) -> String {
    format!(
        r#"
name = "keys"
duration = "1s"
[clients]
count = 5
workload = "closed"
think_time = "1h"
start = "together"
attempt_timeout = "50ms"
deadline = "10s"
[[clients.operations]]
name = "charge"
method = "POST"
idempotency_key = true
[network]
response_loss = 1.0
[upstream]
workers = 10
service_time = "10ms"
outage = "crash"
capacity = [ {{ at = "{crash_at}", factor = 1.0 }}, {{ at = "{crash_at}", factor = 0.0 }}, {{ at = "200ms", factor = 0.0 }}, {{ at = "200ms", factor = 1.0 }} ]
idempotency_store = "{store}"
[[policy]]
name = "retry"
base = "100ms"
cap = "100ms"
multiplier = 1
jitter = "none"
max_attempts = 4
"#
    )
}

/// Every response is lost (a refusal's too), so each client retries after its 50 ms timeout
/// and 100 ms of backoff (no jitter), up to 4 retries: at 150 ms, during the crash (refused),
/// then at 300, 450 and 600 ms, after it (as the trace shows). Each first request reached the
/// upstream at 1 ms and committed its write at 11 ms, completing its key; the crash comes at
/// 100 ms. With keys in memory the five completed keys are lost with it, so each retry at
/// 300 ms writes again and the later ones are replayed: exactly 5 duplicates, 10 writes (the
/// count of keys completed before the crash and retried after it); with a durable store, none,
/// 5 writes. A crash at 5 ms, while
/// the first requests are in service, resets them before they commit: no key completed before
/// it, so none writes twice either way, and each operation writes exactly once.
#[test]
fn keys_in_memory_are_lost_with_the_crash() {
    let lost = run(&scenario(&crash_with_keys("in-memory", "100ms")));
    let kept = run(&scenario(&crash_with_keys("durable", "100ms")));
    assert_eq!(lost.policies[0].summary.duplicate_writes, 5);
    assert_eq!(lost.policies[0].measurements.upstream().writes, 10);
    assert_eq!(kept.policies[0].summary.duplicate_writes, 0);
    assert_eq!(kept.policies[0].measurements.upstream().writes, 5);
    for store in ["in-memory", "durable"] {
        let early = run(&scenario(&crash_with_keys(store, "5ms")));
        let upstream = early.policies[0].measurements.upstream();
        assert_eq!(upstream.resets, 5, "{store}");
        assert_eq!(upstream.writes, 5, "{store}");
        assert_eq!(early.policies[0].summary.duplicate_writes, 0, "{store}");
    }
}

/// The new fields go through `--set` as every field does.
#[test]
fn the_fields_are_reachable_by_set() {
    let text = crash_with_keys("durable", "100ms");
    let set = load_str(
        &text,
        "keys.toml",
        &[Override::set("upstream.idempotency_store", "in-memory")],
    )
    .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(run(&set).policies[0].summary.duplicate_writes, 5);
    let text = burst("");
    let set = load_str(
        &text,
        "burst.toml",
        &[
            Override::set("upstream.deadline.check", "dequeue"),
            Override::set("upstream.deadline.reject_cost", "0.5"),
        ],
    )
    .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(
        run(&set).policies[0]
            .measurements
            .upstream()
            .dropped_expired,
        6
    );
    let text = errors_scenario("{ rate = 0.2, status = 500 }");
    let set = load_str(
        &text,
        "errors.toml",
        &[Override::set("upstream.errors.at", "after-service")],
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let upstream = run(&set).policies[0].measurements.upstream();
    assert_eq!(upstream.held_us, upstream.received * 10_000);
}

/// What cannot be simulated as written is refused at its place.
#[test]
fn contradictions_are_refused_at_their_place() {
    let base = errors_scenario("{ rate = 0.2, status = 500 }");
    let message = error_with(&base, "status = 500 }", "status = 500, committed = true }");
    assert_contains(
        &message,
        &[
            "bad.toml:12:",
            "errors.committed = true",
            "at = \"after-service\"",
        ],
    );
    let message = error_with(
        &base,
        "queue_limit = 100000",
        "queue_limit = 100000\ndrop_expired = true\ndeadline = { check = \"dequeue\" }",
    );
    assert_contains(&message, &["bad.toml:13:", "drop_expired", "keep one"]);
    let message = error_with(
        &base,
        "service_time = \"10ms\"",
        "service_time = \"0ms\"\ndeadline = { reject_cost = 0.1 }",
    );
    assert_contains(
        &message,
        &["bad.toml:11:", "reject_cost", "mean service time"],
    );
    let message = error_with(
        &base,
        "queue_limit = 100000",
        "queue_limit = 100000\nidempotency_store = \"in-memory\"\nfleet = { instances = 3 }",
    );
    assert_contains(&message, &["bad.toml:13:", "key_store = \"per-instance\""]);
    let message = error_with(
        &base,
        "queue_limit = 100000",
        "deadline = { check = \"exit\" }",
    );
    assert_contains(&message, &["bad.toml:11:", "`arrival`", "`dequeue`"]);
}

/// `check` says what each service does beyond answering every request it works on, and what a
/// policy's `overrides` change of it.
#[test]
fn check_describes_errors_deadlines_and_key_stores() {
    let folder = crate::support::fresh_folder("server-failures-check");
    let path = folder.join("payments.toml");
    let text = charges(
        "{ rate = 0.01, status = 500, at = \"after-service\", committed = true }",
        true,
        false,
    )
    .replace(
        "service_time = \"10ms\"",
        "service_time = \"10ms\"\ndeadline = { check = \"dequeue\", reject_cost = 0.05 }\nidempotency_store = \"in-memory\"",
    )
    .replace(
        "unsafe_retries = false",
        "unsafe_retries = false\noverrides = { \"upstream.idempotency_store\" = \"durable\" }",
    );
    std::fs::write(&path, text).unwrap();
    let output = crate::support::retrystorm(&["check", path.to_str().unwrap()]);
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_contains(
        &stdout,
        &[
            "  service upstream: 1% of requests answered 500 after the work (the write committed); work past its deadline refused as it arrives and as a worker takes it (holding a worker 500us each); idempotency keys in memory, lost when it crashes\n",
            "  policy \"retry 500\" overrides service upstream: 1% of requests answered 500 after the work (the write committed); work past its deadline refused as it arrives and as a worker takes it (holding a worker 500us each)\n",
        ],
    );
}
