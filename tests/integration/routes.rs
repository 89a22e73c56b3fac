//! Each operation takes its own path (`path`), a service may make its calls at once
//! (`fan_out = "parallel"`), and each call may have its own policy (`call_retry`): the counts
//! each service sees, the latency of a fan-out, and every refused input at its place.

use retrystorm::import::load_str;
use retrystorm::model::Model;
use retrystorm::run::PolicyRun;
use retrystorm::scenario::Override;

use crate::support::{assert_contains, error_with, run, run_traced, scenario};

/// A payments platform: the gateway calls payments, which calls the ledger and the card
/// network for a payment, the ledger alone for a balance check, and nothing for a note it
/// keeps itself. Everything is ample and nothing fails, so no call is retried or lost.
const PAYMENTS: &str = r#"name = "payments"
seed = 3
duration = "20s"
[clients]
count = 100
rate = 10.0
calls = "gateway"
[[clients.operations]]
name = "pay"
method = "POST"
weight = 0.25
path = { gateway = ["payments"], payments = { calls = ["ledger", "card-network"], fan_out = "parallel" } }
[[clients.operations]]
name = "balance"
weight = 0.5
path = { payments = ["ledger"] }
[[clients.operations]]
name = "note"
method = "POST"
weight = 0.25
path = { payments = [] }
[[service]]
name = "gateway"
workers = 10000
service_time = "1ms"
calls = ["payments"]
[[service]]
name = "payments"
workers = 10000
service_time = "1ms"
calls = ["ledger", "card-network"]
retry = { max_attempts = 2, attempt_timeout = "300ms" }
call_retry = { "card-network" = { max_attempts = 0, attempt_timeout = "3s" } }
[[service]]
name = "ledger"
workers = 10000
service_time = "2ms"
[[service]]
name = "card-network"
workers = 10000
service_time = "5ms"
"#;

/// Requests that reached each service, over the run, in the model's order.
fn received(run: &PolicyRun) -> Vec<u64> {
    run.measurements
        .services
        .iter()
        .map(|service| service.buckets.iter().map(|bucket| bucket.received).sum())
        .collect()
}

/// Writes committed at each service, over the run, in the model's order.
fn writes(run: &PolicyRun) -> Vec<u64> {
    run.measurements
        .services
        .iter()
        .map(|service| service.buckets.iter().map(|bucket| bucket.writes).sum())
        .collect()
}

/// With no retry and no loss, the requests reaching a service are exactly the operations
/// whose path includes it, each sent once: every operation reaches the gateway and payments;
/// the ledger is on the paths of `pay` and `balance`, the card network on `pay`'s alone; a
/// `note` is written at payments, where its path ends (`payments = []`), and a `pay` at both
/// the ledger and the card network, its leaves. So, with `p` payments, `b` balance checks and
/// `n` notes: ledger = p + b, card network = p, writes at payments = n, at the ledger and at
/// the card network = p. The split itself is binomial (weights 1/4, 1/2, 1/4).
#[test]
fn requests_reach_exactly_the_services_on_their_operations_path() {
    let result = run(&scenario(PAYMENTS));
    let policy = &result.policies[0];
    let operations = policy.measurements.operations;
    assert_eq!(policy.summary.success_rate, 1.0);
    let [gateway, payments, ledger, card] = received(policy)[..] else {
        panic!("four services")
    };
    let [_, notes, ledger_writes, card_writes] = writes(policy)[..] else {
        panic!("four services")
    };
    let pays = card;
    assert_eq!(gateway, operations);
    assert_eq!(payments, operations);
    assert_eq!(card_writes, pays);
    assert_eq!(ledger_writes, pays);
    let balances = ledger - pays;
    assert_eq!(pays + balances + notes, operations);
    // The split follows the weights: within 5 standard deviations of a binomial.
    for (count, share) in [(pays, 0.25), (balances, 0.5), (notes, 0.25)] {
        let n = operations as f64;
        let sd = (n * share * (1.0 - share)).sqrt();
        assert!(
            (count as f64 - n * share).abs() < 5.0 * sd,
            "{count} of {operations} for a share of {share}"
        );
    }
}

/// A gateway that calls two services at once, their service times exponential with means
/// 10 ms and 20 ms (rates a = 0.1/ms, b = 0.05/ms), over a network of no latency, with ample
/// workers: an operation takes the gateway's 1 ms plus the longer of the two. For independent
/// exponentials, E[max] = 1/a + 1/b - 1/(a + b) = 10 + 20 - 6.667 = 23.333 ms, and
/// E[max^2] = 2/a^2 + 2/b^2 - 2/(a + b)^2 = 911.1 ms^2, so the standard deviation is
/// sqrt(911.1 - 23.333^2) = 19.15 ms; the mean of n operations is within 5 sd/sqrt(n) of it.
/// One after another, the same calls take 10 + 20 = 30 ms on average.
#[test]
fn a_parallel_fan_out_takes_the_longest_of_its_branches() {
    let text = |fan_out: &str| {
        format!(
            r#"name = "fan-out"
seed = 11
duration = "20s"
[clients]
count = 100
rate = 10.0
deadline = "100s"
attempt_timeout = "100s"
calls = "front"
[network]
latency = "0ms"
[[service]]
name = "front"
workers = 100000
service_time = "1ms"
calls = ["fast", "slow"]
fan_out = "{fan_out}"
[[service]]
name = "fast"
workers = 100000
service_time = {{ distribution = "exponential", mean = "10ms" }}
[[service]]
name = "slow"
workers = 100000
service_time = {{ distribution = "exponential", mean = "20ms" }}
"#
        )
    };
    let mean_ms = |fan_out: &str| {
        let result = run(&scenario(&text(fan_out)));
        let measurements = &result.policies[0].measurements;
        let successes = measurements.total_latency.len();
        assert_eq!(successes, measurements.operations);
        (
            measurements.latency_sum_us as f64 / successes as f64 / 1000.0 - 1.0,
            successes as f64,
        )
    };
    let (parallel, n) = mean_ms("parallel");
    let expected = 10.0 + 20.0 - 1.0 / (0.1 + 0.05);
    let sd = (2.0f64 / 0.01 + 2.0 / 0.0025 - 2.0 / 0.0225 - expected * expected).sqrt();
    assert!(
        (parallel - expected).abs() < 5.0 * sd / n.sqrt(),
        "parallel: mean {parallel} ms, expected {expected} ms (sd {sd})"
    );
    let (sequential, n) = mean_ms("sequential");
    let sd_sum = (100.0f64 + 400.0).sqrt();
    assert!(
        (sequential - 30.0).abs() < 5.0 * sd_sum / n.sqrt(),
        "sequential: mean {sequential} ms"
    );
}

/// A parallel fan-out answers its failure status as soon as one call fails for good: one
/// branch answers 500 (not retried) after 1 ms, the other takes 1 s. Every operation fails
/// with the gateway's 502 after the 1 ms branch and the network's 4 x 1 ms, never waiting
/// for the slow branch, which is made all the same and runs on (its answers reach nobody).
#[test]
fn a_parallel_fan_out_fails_as_soon_as_one_call_fails_for_good() {
    let text = r#"name = "fail-fast"
duration = "5s"
[clients]
count = 10
rate = 1.0
calls = "front"
[network]
latency = "1ms"
[[policy]]
name = "once"
max_attempts = 0
[[service]]
name = "front"
workers = 1000
service_time = "0ms"
calls = ["broken", "slow"]
fan_out = "parallel"
failure_status = 502
[[service]]
name = "broken"
workers = 1000
service_time = "1ms"
errors = { rate = 1.0, status = 500 }
[[service]]
name = "slow"
workers = 1000
service_time = "1s"
"#;
    let (result, traces) = run_traced(&scenario(text));
    let policy = &result.policies[0];
    assert_eq!(policy.summary.success_rate, 0.0);
    assert!(!traces[0].is_empty());
    for record in &traces[0] {
        assert_eq!(record.status, Some(502));
        let took = record.end - record.send;
        // Errors at arrival are answered at once: two network round trips, 4 ms.
        assert!(took <= 5_000, "{record:?}");
    }
    // Every slow branch was made all the same (those still out when the run ends are
    // abandoned with it).
    assert_eq!(received(policy)[2], policy.measurements.operations);
}

/// Each call keeps its own policy: payments calls the ledger and the card network at once,
/// both always answering 503 (retryable); its `retry` sends up to 3 times, the card
/// network's own policy (`call_retry`) up to 5. With no loss and ample deadlines every call
/// is sent to its limit: the ledger receives exactly 3 requests per operation, the card
/// network exactly 5.
#[test]
fn each_call_retries_by_its_own_policy() {
    let text = r#"name = "per-call"
duration = "5s"
[clients]
count = 10
rate = 2.0
deadline = "100s"
attempt_timeout = "100s"
calls = "payments"
[[policy]]
name = "once"
max_attempts = 0
[[service]]
name = "payments"
workers = 1000
service_time = "1ms"
calls = ["ledger", "card-network"]
fan_out = "parallel"
retry = { max_attempts = 2, base = "1ms", cap = "1ms", attempt_timeout = "10s", deadline = "50s" }
call_retry = { "card-network" = { max_attempts = 4, base = "1ms", cap = "1ms", attempt_timeout = "10s", deadline = "50s" } }
[[service]]
name = "ledger"
workers = 1000
service_time = "1ms"
errors = { rate = 1.0, status = 503 }
[[service]]
name = "card-network"
workers = 1000
service_time = "1ms"
errors = { rate = 1.0, status = 503 }
"#;
    let result = run(&scenario(text));
    let policy = &result.policies[0];
    let operations = policy.measurements.operations;
    assert!(operations > 50);
    assert_eq!(
        received(policy),
        [operations, 3 * operations, 5 * operations]
    );
}

/// `--set` and a policy's `overrides` reach a call's own policy as they reach `retry`.
#[test]
fn a_calls_own_policy_can_be_set_and_overridden() {
    let overridden = PAYMENTS.replace(
        "[[service]]\nname = \"gateway\"",
        "[[policy]]\nname = \"plain\"\n[[policy]]\nname = \"card-retries\"\noverrides = { \"service.payments.call_retry.card-network.max_attempts\" = 3 }\n[[service]]\nname = \"gateway\"",
    );
    let scenario = load_str(
        &overridden,
        "set.toml",
        &[Override::set(
            "service.payments.call_retry.card-network.attempt_timeout",
            "2s",
        )],
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let card = |policy: usize| {
        let model = Model::new(&scenario, &scenario.policy[policy]);
        let payments = &model.services[1];
        assert_eq!(payments.downstream.as_ref().unwrap().max_attempts, 2);
        let own = &payments.call_policies[0];
        (own.max_attempts, own.attempt_timeout)
    };
    assert_eq!(card(0), (0, 2_000_000));
    assert_eq!(card(1), (3, 2_000_000));
}

/// `check` describes each call's policy on its own line.
#[test]
fn each_calls_policy_is_described() {
    let scenario = scenario(PAYMENTS);
    let model = Model::new(&scenario, &scenario.policy[0]);
    let lines: Vec<String> = model.callers().iter().map(|caller| caller.line()).collect();
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("payments -> ledger:") && line.contains("300ms")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("payments -> card-network:") && line.contains("3s")),
        "{lines:#?}"
    );
}

#[test]
fn a_path_names_services_the_operation_reaches() {
    assert_contains(
        &error_with(
            PAYMENTS,
            "payments = [\"ledger\"]",
            "paymnts = [\"ledger\"]",
        ),
        &[
            "bad.toml:16:10:",
            "no service named \"paymnts\"",
            "did you mean \"payments\"?",
        ],
    );
    assert_contains(
        &error_with(
            PAYMENTS,
            "payments = [\"ledger\"]",
            "payments = [\"ledgr\"]",
        ),
        &["bad.toml:16:22:", "did you mean \"ledger\"?"],
    );
    assert_contains(
        &error_with(
            PAYMENTS,
            "path = { payments = [] }",
            "path = { payments = [], ledger = [] }",
        ),
        &[
            "bad.toml:21:25:",
            "operation \"note\" never reaches service \"ledger\"",
            "reaches \"gateway\", \"payments\"",
        ],
    );
}

#[test]
fn a_cycle_on_an_operations_path_is_refused_in_full() {
    assert_contains(
        &error_with(
            PAYMENTS,
            "path = { payments = [\"ledger\"] }",
            "path = { payments = [\"ledger\"], ledger = [\"gateway\"] }",
        ),
        &[
            "bad.toml:16:43:",
            "the path of operation \"balance\" makes a cycle: gateway -> payments -> ledger -> gateway",
        ],
    );
}

#[test]
fn a_calls_own_policy_names_a_service_it_calls() {
    assert_contains(
        &error_with(
            PAYMENTS,
            "call_retry = { \"card-network\"",
            "call_retry = { \"card-netwrk\"",
        ),
        &[
            "bad.toml:33:16:",
            "did you mean \"card-network\"?",
            "never calls it",
        ],
    );
    assert_contains(
        &error_with(
            PAYMENTS,
            "max_attempts = 0, attempt_timeout = \"3s\"",
            "max_attempts = 0, attempt_timeout = \"3s\", base = \"1s\", cap = \"10ms\"",
        ),
        &["bad.toml:33:", "cap 10ms is below base 1s"],
    );
}

/// A service that calls nothing on its own `calls` may call something on an operation's
/// path: its `retry` is then its policy for those calls, not an error.
#[test]
fn a_tier_policy_is_allowed_where_some_path_calls() {
    let text = PAYMENTS
        .replace(
            "path = { payments = [\"ledger\"] }",
            "path = { payments = [\"ledger\"], ledger = [\"card-network\"] }",
        )
        .replace(
            "service_time = \"2ms\"",
            "service_time = \"2ms\"\nretry = { max_attempts = 1 }",
        );
    let scenario = scenario(&text);
    let model = Model::new(&scenario, &scenario.policy[0]);
    assert_eq!(
        model.services[2].downstream.as_ref().unwrap().max_attempts,
        1
    );
    assert!(model.services[2].calls.is_empty());
}
