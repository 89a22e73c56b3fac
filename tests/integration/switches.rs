//! `off` at a `--set` or `--grid` key switches a control, a limit or outlier ejection off: the
//! run is exactly the scenario without that table.

use retrystorm::import::load_str;
use retrystorm::output::summary_json;
use retrystorm::scenario::Override;

use crate::support::run;

/// A small topology with each feature `off` removes: a retry budget and a circuit breaker in
/// the policy, a rate and a concurrency limit on the api, outlier ejection on its fleet.
/// `{budget}` and the others are replaced by the table or by nothing.
const SCENARIO: &str = r#"
name = "switches"
seed = 3
duration = "5s"

[clients]
count = 2000
rate = 1.0

[[service]]
name = "api"
workers = 4
service_time = "5ms"
{rate_limit}
{concurrency_limit}
capacity = [{ at = "1s", factor = 1.0 }, { at = "1s", factor = 0.2 }, { at = "3s", factor = 0.2 }, { at = "3s", factor = 1.0 }]
fleet = { instances = 4 {outlier_detection} }

[[policy]]
name = "tuned"
max_attempts = 3
controls = [{budget}{breaker}]
"#;

const BUDGET: &str = r#"{ kind = "retry-budget", percent = 20 }"#;
const BREAKER: &str = r#"{ kind = "circuit-breaker" }"#;
const RATE_LIMIT: &str = "rate_limit = { rate = 1500, burst = 100 }";
const CONCURRENCY_LIMIT: &str = r#"concurrency_limit = { algorithm = "fixed", limit = 12 }"#;
const OUTLIER: &str = ", outlier_detection = { consecutive_5xx = 3 }";

/// The scenario with every feature but those `without` names.
fn scenario_text(without: &[&str]) -> String {
    let keep = |name: &str, text: &str| {
        if without.contains(&name) {
            String::new()
        } else {
            text.to_string()
        }
    };
    let budget = keep("budget", BUDGET);
    let breaker = keep("breaker", BREAKER);
    let separator = if budget.is_empty() || breaker.is_empty() {
        ""
    } else {
        ", "
    };
    SCENARIO
        .replace("{budget}", &format!("{budget}{separator}"))
        .replace("{breaker}", &breaker)
        .replace("{rate_limit}", &keep("rate_limit", RATE_LIMIT))
        .replace(
            "{concurrency_limit}",
            &keep("concurrency_limit", CONCURRENCY_LIMIT),
        )
        .replace("{outlier_detection}", &keep("outlier", OUTLIER))
}

/// Each `off` (at the table's key, or at a key inside it, as a grid varies it) gives, byte for
/// byte, the `summary.json` and the resolved scenario of the file without the table.
#[test]
fn off_is_the_scenario_without_the_table() {
    let cases: [(&str, &str, &[&str]); 6] = [
        ("policy.controls.retry-budget.percent", "off", &["budget"]),
        ("policy.0.controls.1", "none", &["breaker"]),
        ("service.api.rate_limit", "off", &["rate_limit"]),
        (
            "service.api.concurrency_limit.limit",
            "off",
            &["concurrency_limit"],
        ),
        (
            "service.api.fleet.outlier_detection.consecutive_5xx",
            "off",
            &["outlier"],
        ),
        ("policy.controls.retry-budget", "off", &["budget"]),
    ];
    let full = scenario_text(&[]);
    for (key, value, without) in cases {
        let switched = load_str(&full, "switches.toml", &[Override::set(key, value)])
            .unwrap_or_else(|error| panic!("{key}={value}: {error}"));
        let expected = load_str(&scenario_text(without), "switches.toml", &[]).unwrap();
        assert_eq!(
            switched.to_resolved_toml(),
            expected.to_resolved_toml(),
            "{key}={value}"
        );
        assert_eq!(
            summary_json(&run(&switched)),
            summary_json(&run(&expected)),
            "{key}={value}"
        );
    }
    // Both controls off: the policy has no `controls` at all.
    let both = load_str(
        &full,
        "switches.toml",
        &[
            Override::set("policy.controls.retry-budget", "off"),
            Override::set("policy.controls.circuit-breaker", "off"),
        ],
    )
    .unwrap();
    let none = load_str(&scenario_text(&["budget", "breaker"]), "switches.toml", &[]).unwrap();
    assert_eq!(both.to_resolved_toml(), none.to_resolved_toml());
}

/// `off` at a key that is no control, limit or ejection is refused with the key named and
/// the keys that take it; `off` for a table the scenario lacks is refused as changing
/// nothing; `none` elsewhere is the value it was (`policy.jitter=none`).
#[test]
fn off_where_nothing_can_be_switched_off_is_refused() {
    let full = scenario_text(&[]);
    let error = |key: &str| {
        load_str(&full, "switches.toml", &[Override::set(key, "off")])
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        error("service.api.workers"),
        "switches.toml: --set service.api.workers=off: `service.api.workers` cannot be switched off: `off` (or `none`) removes a control (policy.controls.retry-budget, service.NAME.retry.controls.KIND, or by index: policy.0.controls.0), service.NAME.rate_limit, service.NAME.concurrency_limit, service.NAME.fleet.outlier_detection (upstream.… alike), or any key inside one (policy.controls.retry-budget.percent)"
    );
    assert!(
        error("policy.controls.token-bucket").ends_with(
            "--set policy.controls.token-bucket=off: `policy.controls.token-bucket=off` removes nothing: the scenario has no such table here; off removes a control (policy.controls.retry-budget, service.NAME.retry.controls.KIND, or by index: policy.0.controls.0), service.NAME.rate_limit, service.NAME.concurrency_limit, service.NAME.fleet.outlier_detection (upstream.… alike), or any key inside one (policy.controls.retry-budget.percent)"
        ),
        "{}",
        error("policy.controls.token-bucket")
    );
    let jitter = load_str(
        &full,
        "switches.toml",
        &[Override::set("policy.jitter", "none")],
    );
    assert!(jitter.is_ok(), "{jitter:?}");
}

/// The reference's sweep of a retry budget against none, `--grid
/// policy.controls.retry-budget.percent=off,10,20`: the `off` point runs (no stand-in), and
/// neither `off` nor 20, the largest number next to it, is warned about as an edge of the
/// grid: `off` is the end where the budget does least, beyond any percent.
#[test]
fn a_grid_compares_a_budget_with_none_and_off_is_no_edge() {
    let out = crate::support::fresh_folder("switches-sweep");
    let output = crate::support::retrystorm(&[
        "sweep",
        "scenarios/retry-budget.toml",
        "--policy",
        "retry budget",
        "--grid",
        "policy.controls.retry-budget.percent=off,10,20",
        "--seeds",
        "2",
        "--minimize",
        "amplification",
        "--no-charts",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("3 points x 2 seeds"), "{stdout}");
    for edge in [
        "warning: policy.controls.retry-budget.percent = off",
        "warning: policy.controls.retry-budget.percent = 20",
    ] {
        assert!(!stdout.contains(edge), "{stdout}");
    }
    let results = std::fs::read_to_string(out.join("retry-budget-sweep/results.csv")).unwrap();
    let first = results.lines().nth(1).unwrap();
    assert_eq!(first.split(',').nth(2), Some("off"), "{results}");
}
