//! Users who retry by hand (a policy's `manual_retry`): how many presses an intent makes, that
//! they stack on the client's retries, that an operation the user gave up on goes on, and
//! which presses charge twice: every one that reaches the server with a new key, none with the
//! key reused.

use retrystorm::import::load_str;
use retrystorm::run::PolicyRun;
use retrystorm::scenario::Override;

use crate::support::{assert_contains, error_with, run, scenario};

/// `count` clients at `rate` operations a second each for 20 s, against an upstream of
/// `upstream` settings, with the network lines `network`, the operation lines `operation` and
/// the policy lines `policy`.
fn users(upstream: &str, network: &str, operation: &str, policy: &str) -> String {
    format!(
        r#"
name = "by-hand"
seed = 5
duration = "20s"
[clients]
count = 1000
rate = 1.0
deadline = "10s"
attempt_timeout = "1s"
[[clients.operations]]
name = "op"
{operation}
[network]
latency = "1ms"
{network}
[upstream]
workers = 100000
{upstream}
[[policy]]
name = "users"
{policy}
"#
    )
}

/// The one policy's run of `text`.
fn only(text: &str) -> PolicyRun {
    run(&scenario(text)).policies.remove(0)
}

/// A metric of `policy`'s summary, by name.
fn metric(policy: &PolicyRun, name: &str) -> f64 {
    policy.summary.metric(name).expect("a metric")
}

/// With every call failing at once and no retries by the client, a user presses again with
/// probability p after each failure, at most m times: presses per intent K has
/// P(K >= k) = p^k for k <= m, so E[K] = sum_{k=1..m} p^k and
/// E[K^2] = sum_{k=1..m} (2k - 1) p^k. For p = 0.5, m = 3: E[K] = 0.875, Var[K] = 1.875 -
/// 0.875^2 = 1.109. Over n intents the presses are within 5 standard deviations of
/// n E[K] (sqrt(n Var[K]) each). Every operation fails, each sends one attempt, and each
/// press is an operation: operations = intents + presses, attempts = operations, and no
/// intent succeeds.
#[test]
fn presses_per_intent_follow_the_probability_and_the_most() {
    let text = users(
        "service_time = \"1ms\"\nerrors = { rate = 1.0, status = 500 }",
        "",
        "method = \"GET\"",
        "max_attempts = 0\nmanual_retry = { on = [\"failure\"], probability = 0.5, delay = \"10ms\", max = 3, key = \"new\" }",
    );
    let policy = only(&text);
    let intents = metric(&policy, "intents");
    let presses = metric(&policy, "manual_retries");
    assert!(intents > 15_000.0, "{intents} intents");
    let (mean, variance) = (0.875, 1.875 - 0.875 * 0.875);
    let bound = 5.0 * (intents * variance).sqrt();
    assert!(
        (presses - intents * mean).abs() <= bound,
        "{presses} presses for {intents} intents: expected {} within {bound}",
        intents * mean
    );
    assert_eq!(metric(&policy, "operations"), intents + presses);
    assert_eq!(metric(&policy, "attempts"), metric(&policy, "operations"));
    assert_eq!(metric(&policy, "intents_succeeded"), 0.0);
    assert_eq!(metric(&policy, "intent_success_rate"), 0.0);
}

/// Presses stack on the client's retries: with every attempt answered 503 at once, a client
/// that retries twice sends each operation exactly three times, and a user who always presses
/// again, twice, starts three operations per intent: nine requests per intent, exactly.
#[test]
fn presses_multiply_the_clients_retries() {
    let text = users(
        "service_time = \"1ms\"\nerrors = { rate = 1.0, status = 503 }",
        "",
        "method = \"GET\"",
        "max_attempts = 2\nbase = \"1ms\"\ncap = \"1ms\"\nmanual_retry = { on = [\"failure\"], probability = 1.0, delay = \"10ms\", max = 2, key = \"new\" }",
    );
    let policy = only(&text);
    let intents = metric(&policy, "intents");
    assert_eq!(metric(&policy, "manual_retries"), 2.0 * intents);
    assert_eq!(metric(&policy, "operations"), 3.0 * intents);
    assert_eq!(metric(&policy, "attempts"), 9.0 * intents);
    assert_eq!(metric(&policy, "requests_per_intent"), 9.0);
    assert_eq!(metric(&policy, "amplification"), 3.0);
}

/// Every response is lost after the write committed, and the client does not retry: each
/// operation commits one write and fails. With a key of its own each press that reaches the
/// server commits again: the intent's duplicates are its presses, exactly (nothing is lost on
/// the way there). With the first press's key the server answers every press from its store:
/// one write per intent, no duplicate, however many presses.
#[test]
fn a_new_key_charges_once_per_press_and_a_reused_key_never_does() {
    let text = |key: &str| {
        users(
            "service_time = \"1ms\"",
            "response_loss = 1.0",
            "method = \"POST\"\nidempotency_key = true",
            &format!(
                "max_attempts = 0\nmanual_retry = {{ on = [\"failure\"], probability = 0.5, delay = {{ distribution = \"exponential\", mean = \"2s\" }}, max = 2, key = \"{key}\" }}"
            ),
        )
    };
    let new = only(&text("new"));
    let presses = metric(&new, "manual_retries");
    assert!(presses > 10_000.0, "{presses} presses");
    assert_eq!(metric(&new, "duplicate_writes"), presses);
    assert_eq!(
        new.services[0].totals.writes as f64,
        metric(&new, "intents") + presses
    );
    let reused = only(&text("reused"));
    assert_eq!(metric(&reused, "manual_retries"), presses, "the same draws");
    assert_eq!(metric(&reused, "duplicate_writes"), 0.0);
    assert_eq!(
        reused.services[0].totals.writes as f64,
        metric(&reused, "intents")
    );
}

/// A user who gives up on an operation while its write is on its way is charged by it anyway:
/// with a 3 s service time, a 1 s patience and one press 500 ms later, the user gives up on
/// the press too (its 3 s of work exceed their patience), so no intent sees a success though
/// every operation succeeds. With a new key both operations commit: one duplicate per intent.
/// With the key reused the press reaches the server while the first holds the key, is refused
/// 409 (the client does not retry it), and only the first commits. The server finishes all it
/// was sent: the user's leaving stops nothing.
#[test]
fn an_operation_the_user_gave_up_on_goes_on_and_still_charges() {
    let text = |key: &str| {
        users(
            "service_time = \"3s\"",
            "",
            "method = \"POST\"\nidempotency_key = true",
            &format!(
                "max_attempts = 0\nattempt_timeout = \"5s\"\nmanual_retry = {{ on = [\"impatience\"], patience = \"1s\", probability = 1.0, delay = \"500ms\", max = 1, key = \"{key}\" }}"
            ),
        )
    };
    let new = only(&text("new"));
    let intents = metric(&new, "intents");
    assert_eq!(metric(&new, "manual_retries"), intents);
    assert_eq!(metric(&new, "operations"), 2.0 * intents);
    assert_eq!(metric(&new, "duplicate_writes"), intents);
    assert_eq!(metric(&new, "succeeded"), 2.0 * intents);
    assert_eq!(metric(&new, "intents_succeeded"), 0.0);
    let reused = only(&text("reused"));
    assert_eq!(metric(&reused, "duplicate_writes"), 0.0);
    assert_eq!(reused.services[0].totals.writes as f64, intents);
    assert_eq!(reused.services[0].totals.conflicts, intents as u64);
}

/// Patience alone: every answer takes 1.5 to 1.6 s and users wait 1 s for each, so they give
/// up on every operation, press twice (200 ms after giving up), and leave without a success,
/// although the server serves all three operations and each succeeds: the success of an
/// operation nobody waits for any more counts for no intent.
#[test]
fn a_user_hears_only_the_operation_they_wait_for() {
    let text = users(
        "service_time = { distribution = \"uniform\", min = \"1500ms\", max = \"1600ms\" }",
        "",
        "method = \"GET\"",
        "max_attempts = 0\nattempt_timeout = \"5s\"\nmanual_retry = { on = [\"impatience\"], patience = \"1s\", probability = 1.0, delay = \"200ms\", max = 2, key = \"reused\" }",
    );
    let policy = only(&text);
    let intents = metric(&policy, "intents");
    assert_eq!(metric(&policy, "manual_retries"), 2.0 * intents);
    assert_eq!(metric(&policy, "succeeded"), 3.0 * intents);
    assert_eq!(metric(&policy, "intents_succeeded"), 0.0);
    assert_eq!(policy.services[0].totals.served as f64, 3.0 * intents);
}

/// A policy without `manual_retry`: each operation is an intent, and the intents' metrics are
/// the operations'.
#[test]
fn without_presses_an_intent_is_an_operation() {
    let text = users("service_time = \"1ms\"", "", "method = \"GET\"", "");
    let policy = only(&text);
    assert_eq!(metric(&policy, "intents"), metric(&policy, "operations"));
    assert_eq!(metric(&policy, "manual_retries"), 0.0);
    assert_eq!(
        metric(&policy, "intent_success_rate"),
        metric(&policy, "success_rate")
    );
}

/// `--set` reaches every field of `manual_retry`, as the file does.
#[test]
fn set_changes_the_users() {
    let text = users(
        "service_time = \"1ms\"\nerrors = { rate = 1.0, status = 500 }",
        "",
        "method = \"GET\"",
        "max_attempts = 0\nmanual_retry = { on = [\"failure\"], probability = 0.0, delay = \"10ms\", key = \"new\" }",
    );
    let set = [
        Override::set("policy.manual_retry.probability", "1.0"),
        Override::set("policy.manual_retry.max", "3"),
    ];
    let scenario = load_str(&text, "set.toml", &set).unwrap_or_else(|error| panic!("{error}"));
    let policy = run(&scenario).policies.remove(0);
    assert_eq!(
        metric(&policy, "manual_retries"),
        3.0 * metric(&policy, "intents")
    );
}

/// Bad `manual_retry` fields are refused at their line and column, with what would be valid.
#[test]
fn bad_fields_are_refused_where_they_are_written() {
    let base = users(
        "service_time = \"1ms\"",
        "",
        "method = \"GET\"",
        "manual_retry = { on = [\"failure\"], probability = 0.5, delay = \"1s\", key = \"new\" }",
    );
    scenario(&base);
    // `manual_retry` is on line 21 of the text (which starts with an empty line).
    let cases: [(&str, &str, &[&str]); 6] = [
        (
            "probability = 0.5",
            "probability = 1.5",
            &["bad.toml:21:", "expected a number from 0 to 1"],
        ),
        (
            "key = \"new\"",
            "key = \"fresh\"",
            &["bad.toml:21:", "expected `reused` or `new`"],
        ),
        (
            "on = [\"failure\"]",
            "on = []",
            &["bad.toml:21:23:", "manual_retry.on is empty"],
        ),
        (
            "on = [\"failure\"]",
            "on = [\"impatience\"]",
            &["bad.toml:21:16:", "no patience", "7 to 10 s"],
        ),
        (
            "on = [\"failure\"]",
            "on = [\"failure\"], patience = \"8s\"",
            &["bad.toml:21:", "patience is used only with"],
        ),
        (
            "delay = \"1s\"",
            "delay = \"1s\", max = 11",
            &["bad.toml:21:", "from 1 to 10"],
        ),
    ];
    for (from, to, parts) in cases {
        assert_contains(&error_with(&base, from, to), parts);
    }
    assert_contains(
        &error_with(&base, "key = \"new\"", "key = \"new\", tries = 2"),
        &["bad.toml:21:", "tries"],
    );
}
