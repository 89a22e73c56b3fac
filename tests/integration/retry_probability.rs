//! Probabilistic retries (`retry_probability`): a caller that retries only with a chance each
//! time the decision allows it, against the closed forms of independent failures.

use retrystorm::model::Model;
use retrystorm::output::{failure_columns, timeseries_header};
use retrystorm::retry::decision::StopReason;
use retrystorm::scenario::Override;
use retrystorm::vocabulary::outcome::FailureReason;

use crate::support::{assert_contains, error_with, run, scenario};

/// 100 clients of 10 operations a second for 60 s against an upstream that fails each request
/// with 503 at once with probability `f`, retried up to three times after 1 ms.
fn independent_failures(f: f64) -> String {
    format!(
        r#"
name = "coin"
seed = 11
duration = "60s"
[clients]
count = 100
rate = 10.0
[network]
latency = "1ms"
[upstream]
workers = 1000
service_time = "1ms"
errors = {{ rate = {f}, status = 503 }}
[[policy]]
name = "sometimes"
base = "1ms"
cap = "1ms"
jitter = "none"
max_attempts = 3
[[policy]]
name = "always"
base = "1ms"
cap = "1ms"
jitter = "none"
max_attempts = 3
"#
    )
}

/// Failures independent with probability `f`, at most `N` retries each made with probability
/// `p`: attempt `k + 1` is sent only if the `k` before it failed and each retry was drawn, so
/// `P(S > k) = (f p)^k` for `k <= N`, and the sends per operation are
/// `E[S] = sum_{k=0..N} (f p)^k`, `E[S^2] = sum_{k=0..N} (2k + 1)(f p)^k`. An operation ends
/// `retry-declined` when attempt `k + 1` (k < N) fails and its retry is not drawn,
/// `sum_{k=0..N-1} (f p)^k f (1 - p)`, and `max-attempts` when all `N + 1` fail,
/// `(f p)^N f`. With f = p = 0.5 and N = 3: 1.328125 sends, 32.8125% declined, 0.78125%
/// out of attempts. The operations are independent (no control, no queueing: 1,000 workers
/// for about 1,300 requests a second of 1 ms), so each figure is a mean of ~60,000 of them;
/// the bounds are 4.5 standard errors. The same scenario at `retry_probability = 1` (the other
/// policy) sends `1 + f + f^2 + f^3 = 1.875` times. The probability is set with `--set`.
#[test]
fn sends_per_operation_follow_the_geometric_sum_of_f_times_p() {
    let (f, p, n_retries) = (0.5_f64, 0.5_f64, 3);
    let loaded = retrystorm::import::load_str(
        &independent_failures(f),
        "coin.toml",
        &[Override::set("policy.0.retry_probability", &p.to_string())],
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let result = run(&loaded);
    for (policy, p) in result.policies.iter().zip([p, 1.0]) {
        let q = f * p;
        let sends: f64 = (0..=n_retries).map(|k| q.powi(k)).sum();
        let squares: f64 = (0..=n_retries)
            .map(|k| f64::from(2 * k + 1) * q.powi(k))
            .sum();
        let declined: f64 = (0..n_retries).map(|k| q.powi(k) * f * (1.0 - p)).sum();
        let exhausted = q.powi(n_retries) * f;
        let operations = policy.measurements.operations as f64;
        let summary = &policy.summary;
        let bound = 4.5 * ((squares - sends * sends) / operations).sqrt();
        assert!(
            (summary.amplification - sends).abs() < bound,
            "p = {p}: {} sends per operation, expected {sends} within {bound}",
            summary.amplification
        );
        let failures = policy.measurements.failures();
        let share =
            |reason: FailureReason| failures.get(&reason).copied().unwrap_or(0) as f64 / operations;
        for (reason, expected) in [
            (FailureReason::RetryDeclined, declined),
            (FailureReason::Decision(StopReason::MaxAttempts), exhausted),
        ] {
            let bound = 4.5 * (expected * (1.0 - expected) / operations).sqrt();
            assert!(
                (share(reason) - expected).abs() <= bound,
                "p = {p}: {reason} {}, expected {expected} within {bound}",
                share(reason)
            );
        }
        assert!(
            (summary.success_rate - (1.0 - declined - exhausted)).abs() < 0.01,
            "p = {p}: success {}",
            summary.success_rate
        );
    }
    assert_eq!(
        result.policies[1]
            .measurements
            .failures()
            .get(&FailureReason::RetryDeclined),
        None
    );
    // The column of the reason is there because a policy retries with a probability, and only
    // then.
    let header = timeseries_header(&failure_columns(&result));
    assert!(
        header
            .iter()
            .any(|column| column == "failed_retry_declined")
    );
    let always = run(&scenario(&independent_failures(f)));
    assert!(
        !timeseries_header(&failure_columns(&always))
            .iter()
            .any(|column| column == "failed_retry_declined")
    );
}

/// A tier retries with a probability too, set with `--set`; the policy's description says so,
/// the resolved scenario writes it, and a probability above 1 is refused at its place with
/// what is valid.
#[test]
fn a_tier_retries_with_a_probability_and_says_so() {
    let text = r#"
name = "tier"
duration = "1s"
[clients]
count = 1
rate = 1.0
calls = "api"
[[service]]
name = "api"
workers = 1
service_time = "1ms"
calls = ["db"]
retry = { max_attempts = 2 }
[[service]]
name = "db"
workers = 1
service_time = "1ms"
[[policy]]
name = "coin"
max_attempts = 3
retry_probability = 0.25
"#;
    let loaded = retrystorm::import::load_str(
        text,
        "tier.toml",
        &[Override::set("service.api.retry.retry_probability", "0.5")],
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let model = Model::new(&loaded, &loaded.policy[0]);
    assert_eq!(
        model.users.policy.text().retries,
        "3 (up to 4 sends), each made with probability 0.25"
    );
    let api = model.services[0].downstream.as_ref().expect("api retries");
    assert_eq!(
        api.text().retries,
        "2 (up to 3 sends), each made with probability 0.5"
    );
    let resolved = loaded.to_resolved_toml();
    assert_contains(
        &resolved,
        &["retry_probability = 0.25", "retry_probability = 0.5"],
    );
    let error = error_with(text, "retry_probability = 0.25", "retry_probability = 1.5");
    // At the line and column of the value.
    assert_contains(
        &error,
        &["bad.toml:21:21:", "1.5 is out of range", "from 0 to 1"],
    );
}
