//! Bad scenarios: every error names the file, line and column, and says what is valid.

use retrystorm::import::load_str;
use retrystorm::scenario::Override;

use crate::support::{self, assert_contains};

const VALID: &str = r#"name = "ok"
duration = "10s"

[clients]
count = 100
rate = 1.0

[upstream]
workers = 10
service_time = "5ms"

[[policy]]
name = "a"
"#;

/// The error for `VALID` with `from` replaced by `to`.
fn error_with(from: &str, to: &str) -> String {
    support::error_with(VALID, from, to)
}

#[test]
fn the_base_scenario_is_valid() {
    load_str(VALID, "ok.toml", &[]).unwrap();
}

#[test]
fn unknown_keys_suggest_the_nearest_name() {
    let message = error_with("rate = 1.0", "rate = 1.0\natempt_timeout = \"1s\"");
    assert_contains(
        &message,
        &[
            "bad.toml:7:1:",
            "unknown field `atempt_timeout`",
            "did you mean `attempt_timeout`?",
        ],
    );
    let message = error_with("name = \"a\"", "name = \"a\"\njiter = \"full\"");
    assert_contains(&message, &["bad.toml:14:1:", "did you mean `jitter`?"]);
}

#[test]
fn wrong_types_and_ranges_point_at_the_value() {
    let cases: [(&str, &str, &[&str]); 9] = [
        (
            "count = 100",
            "count = \"many\"",
            &["bad.toml:5:9:", "expected an integer from 1 to 100000000"],
        ),
        (
            "count = 100",
            "count = 0",
            &["bad.toml:5:9:", "0 is out of range"],
        ),
        (
            "count = 100",
            "count = 1000000000",
            &["bad.toml:5:9:", "out of range"],
        ),
        (
            "duration = \"10s\"",
            "duration = \"-10s\"",
            &["bad.toml:2:12:", "invalid duration \"-10s\""],
        ),
        (
            "service_time = \"5ms\"",
            "service_time = \"5 ms\"",
            &["bad.toml:10:16:", "invalid duration"],
        ),
        (
            "rate = 1.0",
            "rate = 1.0\n[network]\nresponse_loss = 1.5",
            &[
                "bad.toml:8:17:",
                "1.5 is out of range; expected a number from 0 to 1",
            ],
        ),
        (
            "name = \"a\"",
            "name = \"a\"\njitter = \"ful\"",
            &[
                "bad.toml:14:10:",
                "unknown jitter `ful` (did you mean `full`?)",
            ],
        ),
        (
            "service_time = \"5ms\"",
            "service_time = \"5ms\"\noutage = \"crahs\"",
            &["bad.toml:11:10:", "did you mean `crash`?"],
        ),
        (
            "workers = 10",
            "workers = 10.5",
            &["bad.toml:9:11:", "expected an integer"],
        ),
    ];
    for (from, to, parts) in cases {
        assert_contains(&error_with(from, to), parts);
    }
}

#[test]
fn relations_between_values_are_checked() {
    let cases: [(&str, &str, &[&str]); 7] = [
        (
            "name = \"a\"",
            "name = \"a\"\nbase = \"5s\"\ncap = \"1s\"",
            &["bad.toml:15:7:", "cap 1s is below base 5s"],
        ),
        (
            "service_time = \"5ms\"",
            "service_time = \"5ms\"\ncapacity = [ { at = \"5s\", factor = 1.0 }, { at = \"2s\", factor = 0.5 } ]",
            &["bad.toml:11:50:", "capacity points must be sorted"],
        ),
        (
            "rate = 1.0",
            "rate = 1.0\n[[clients.operations]]\nname = \"x\"\nweight = 0.0",
            &["bad.toml:9:10:", "weights sum to zero"],
        ),
        (
            "rate = 1.0",
            "workload = \"closed\"",
            &["bad.toml:6:12:", "a closed workload needs `think_time`"],
        ),
        ("rate = 1.0", "", &["an open workload needs `rate`"]),
        (
            "[[policy]]\nname = \"a\"\n",
            "[[policy]]\nname = \"a\"\n[[policy]]\nname = \"a\"\n",
            &["bad.toml:15:8:", "used twice"],
        ),
        (
            "duration = \"10s\"",
            "duration = \"10s\"\nbucket = \"1us\"",
            &["bad.toml:3:10:", "too many"],
        ),
    ];
    for (from, to, parts) in cases {
        assert_contains(&error_with(from, to), parts);
    }
}

#[test]
fn syntax_errors_have_a_position() {
    let message = error_with("count = 100", "count = = 100");
    assert_contains(&message, &["bad.toml:5:"]);
}

#[test]
fn overrides_are_validated_like_the_file_and_blamed_for_their_errors() {
    let set = |text: &str| text.parse::<Override>().unwrap();
    let scenario = load_str(
        VALID,
        "ok.toml",
        &[set("clients.count=5000"), set("policy.base=50ms")],
    )
    .unwrap();
    assert_eq!(scenario.clients.count.get_ref().get(), 5000);
    assert_eq!(scenario.policy[0].base.to_string(), "50ms");

    let message = load_str(VALID, "ok.toml", &[set("clients.count=0")])
        .unwrap_err()
        .to_string();
    assert_contains(
        &message,
        &["ok.toml: --set clients.count=0:", "0 is out of range"],
    );
    let message = load_str(VALID, "ok.toml", &[set("clients.cont=5")])
        .unwrap_err()
        .to_string();
    assert_contains(&message, &["--set clients.cont=5", "did you mean `count`?"]);
    let message = load_str(VALID, "ok.toml", &[set("upstream.rate_limit.rate=-1")])
        .unwrap_err()
        .to_string();
    assert_contains(
        &message,
        &["--set upstream.rate_limit.rate=-1", "out of range"],
    );
    let message = load_str(VALID, "ok.toml", &[set("policy.3.base=1s")])
        .unwrap_err()
        .to_string();
    assert_contains(
        &message,
        &["--set policy.3.base=1s", "index 3 is out of range"],
    );
    // Errors elsewhere in the file keep their own line numbers after an inserted key.
    let broken = VALID.replace("name = \"a\"", "name = \"a\"\ncap = \"1ms\"");
    let message = load_str(
        &broken,
        "bad.toml",
        &[
            set("clients.think_time=1s"),
            set("clients.workload=closed"),
            set("clients.rate="),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(message.starts_with("bad.toml"), "{message}");
    assert!("novalue".parse::<Override>().is_err());
}

/// A lesson's claims and the health rule are checked when the scenario is read: the policies
/// and metrics a claim names exist, it compares with exactly one thing, a window holds time and
/// takes a metric that can be counted in it, and a metric of the incident needs an incident.
#[test]
fn claims_and_the_health_rule_are_checked_before_anything_runs() {
    let claim = |body: &str| {
        error_with(
            "name = \"a\"\n",
            &format!("name = \"a\"\n\n[[expect]]\n{body}\n"),
        )
    };
    let cases: [(&str, &[&str]); 8] = [
        (
            "policy = \"b\"\nmetric = \"success_rate\"\nat_least = 0.9",
            &[
                "bad.toml:15:1:",
                "names policy \"b\"",
                "did you mean \"a\"?",
            ],
        ),
        (
            "policy = \"a\"\nmetric = \"sucess_rate\"\nat_least = 0.9",
            &["unknown metric `sucess_rate`", "success_rate"],
        ),
        (
            "policy = \"a\"\nmetric = \"success_rate\"",
            &["exactly one of better_than"],
        ),
        (
            "policy = \"a\"\nmetric = \"success_rate\"\nbetter_than = \"a\"",
            &["cannot beat itself"],
        ),
        (
            "policy = \"a\"\nmetric = \"p99_ms\"\nat_most = 100\nwindow = { from = \"1s\", to = \"2s\" }",
            &["`p99_ms` cannot be taken over a window", "goodput_rps"],
        ),
        (
            "policy = \"a\"\nmetric = \"goodput_rps\"\nat_least = 1\nwindow = { from = \"2s\", to = \"1s\" }",
            &["is empty"],
        ),
        (
            "policy = \"a\"\nmetric = \"success_rate\"\nat_least = 0.9\nmargin = 0.1",
            &["margin goes with better_than"],
        ),
        (
            "policy = \"a\"\nmetric = \"recovery_s\"\nat_most = 1",
            &[
                "`recovery_s` needs an incident",
                "no service's capacity curve leaves its starting level",
            ],
        ),
    ];
    for (body, parts) in cases {
        assert_contains(&claim(body), parts);
    }
    let window = error_with("[[policy]]", "[recovery]\nwindow = \"0s\"\n\n[[policy]]");
    assert_contains(
        &window,
        &["bad.toml:13:10:", "[recovery] window must be above zero"],
    );
}

/// Controls: a setting of another kind, gRPC's required settings, Finagle's whole-second ttl,
/// the two shapes of a retry budget, a breaker's two windows, and processes beyond the clients
/// are refused at the control's line, with what would be valid.
#[test]
fn controls_are_checked_against_their_kind() {
    let with = |control: &str| {
        error_with(
            "name = \"a\"",
            &format!("name = \"a\"\ncontrols = [{control}]"),
        )
    };
    let cases: [(&str, &[&str]); 6] = [
        (
            r#"{ kind = "grpc-throttling", max_tokens = 10, token_ratio = 0.1, ttl = "10s" }"#,
            &[
                "bad.toml:14:13:",
                "`ttl` is not a setting of a grpc-throttling control",
                "max_tokens, token_ratio",
            ],
        ),
        (
            r#"{ kind = "grpc-throttling" }"#,
            &[
                "bad.toml:14:13:",
                "no defaults",
                "max_tokens = 10, token_ratio = 0.1",
            ],
        ),
        (
            r#"{ kind = "retry-budget", ttl = "1500ms" }"#,
            &["bad.toml:14:13:", "whole seconds from 1s to 60s"],
        ),
        (
            r#"{ kind = "retry-budget", min_per_s = 10, min_concurrency = 3 }"#,
            &[
                "bad.toml:14:13:",
                "Envoy: percent, min_concurrency",
                "not both",
            ],
        ),
        (
            r#"{ kind = "circuit-breaker", window = "10s", window_calls = 10 }"#,
            &["bad.toml:14:13:", "not both"],
        ),
        (
            r#"{ kind = "circuit-braker" }"#,
            &[
                "bad.toml:14:22:",
                "unknown variant `circuit-braker`",
                "did you mean `circuit-breaker`?",
            ],
        ),
    ];
    for (control, parts) in cases {
        assert_contains(&with(control), parts);
    }
    let message = error_with("count = 100", "count = 100\nprocesses = 101");
    assert_contains(
        &message,
        &["bad.toml:6:13:", "processes must be at most count"],
    );
}

/// `--set` reaches a control by index or by kind, and says what is wrong when the key indexes
/// a list that some of the tables it reaches do not have, names a kind the policy has no
/// control of, or reaches a policy without controls (these used to read "invalid type: map,
/// expected a sequence", as the key made `controls` a table).
#[test]
fn overrides_reach_controls_by_index_or_kind() {
    let text = VALID.replace(
        "name = \"a\"",
        "name = \"a\"\ncontrols = [{ kind = \"retry-budget\" }]\n[[policy]]\nname = \"b\"",
    );
    let load = |key: &str, value: &str| load_str(&text, "c.toml", &[Override::set(key, value)]);
    let percent = |scenario: retrystorm::scenario::Scenario| {
        scenario.policy[0].controls[0]
            .get_ref()
            .percent
            .map(|p| p.get())
    };
    assert_eq!(
        percent(load("policy.0.controls.0.percent", "5").unwrap()),
        Some(5.0)
    );
    assert_eq!(
        percent(load("policy.a.controls.retry-budget.percent", "7").unwrap()),
        Some(7.0)
    );
    let message = load("policy.controls.0.percent", "5")
        .unwrap_err()
        .to_string();
    assert_contains(
        &message,
        &[
            "--set policy.controls.0.percent=5",
            "has no `controls`",
            "policy.1.controls.0",
        ],
    );
    let message = load("policy.b.controls.retry-budget.percent", "5")
        .unwrap_err()
        .to_string();
    assert_contains(
        &message,
        &["has no `controls`", "add the control in the file"],
    );
    let message = load("policy.a.controls.circuit-breaker.failure_threshold", "5")
        .unwrap_err()
        .to_string();
    assert_contains(
        &message,
        &[
            "no control here is of kind `circuit-breaker`",
            "the controls are `retry-budget`",
        ],
    );
}

/// Inputs that used to panic or read without limit are refused with a location: a 65,536-
/// character policy name (a table column cannot be that wide), a control character in one, a
/// 9,000-level `--set` key (it overflowed the stack), a file that is not UTF-8, a file that
/// never ends (`/dev/zero`, refused as a device before it is read, as every input file is by
/// `text_file::read_text`), and a file over 4 MiB.
#[test]
fn names_keys_and_files_have_limits() {
    let long = format!("name = \"{}\"", "a".repeat(65_536));
    assert_contains(
        &error_with("name = \"a\"", &long),
        &["bad.toml:13:8:", "1 to 100 characters"],
    );
    assert_contains(
        &error_with("name = \"a\"", "name = \"a\\u0007b\""),
        &["bad.toml:13:8:", "without control characters"],
    );
    let deep = vec!["a"; 9_000].join(".");
    let message = load_str(VALID, "ok.toml", &[Override::set(&deep, "1")])
        .unwrap_err()
        .to_string();
    assert_contains(&message, &["ok.toml: --set a.a.a", "at most 16 parts"]);
    let folder = std::env::temp_dir().join("retrystorm-limits");
    std::fs::create_dir_all(&folder).unwrap();
    let binary = folder.join("binary.toml");
    std::fs::write(&binary, b"name = \"x\"\nduration = \"1s\xff\"\n").unwrap();
    let message = retrystorm::import::load(&binary, &[])
        .unwrap_err()
        .to_string();
    assert_contains(&message, &["binary.toml:2:15:", "not UTF-8"]);
    let message = retrystorm::import::load(std::path::Path::new("/dev/zero"), &[])
        .unwrap_err()
        .to_string();
    assert_contains(
        &message,
        &["/dev/zero: cannot read the scenario: a device, not a regular file"],
    );
    let large = folder.join("large.toml");
    std::fs::write(&large, vec![b'#'; 4 * 1024 * 1024 + 1]).unwrap();
    let message = retrystorm::import::load(&large, &[])
        .unwrap_err()
        .to_string();
    assert_contains(&message, &["large.toml: larger than 4 MiB"]);
}

/// `--set policy.*` on a scenario without `[[policy]]` changes the default policy, as
/// docs/reference.md says; `--set policy.0=5` says that it names a whole table.
#[test]
fn overrides_reach_the_default_policy_and_name_whole_tables() {
    let without = VALID.replace("[[policy]]\nname = \"a\"\n", "");
    let scenario = load_str(&without, "d.toml", &[Override::set("policy.base", "250ms")]).unwrap();
    assert_eq!(scenario.policy.len(), 1);
    assert_eq!(scenario.policy[0].name.get_ref(), "article");
    assert_eq!(scenario.policy[0].base.micros(), 250_000);
    let message = load_str(VALID, "v.toml", &[Override::set("policy.0", "5")])
        .unwrap_err()
        .to_string();
    assert_contains(
        &message,
        &["--set policy.0=5", "names a whole table", "policy.0.base"],
    );
}

/// The drain after `duration` is bounded before anything runs: with a 1000 h deadline and
/// 1 ms buckets, an operation could keep the run going for 3.6 billion buckets (a 229-byte
/// scenario used to grow to gigabytes); the error says until when and what to change. No
/// bucket can hold 1000 h in 100,000 buckets of at most the 1 s duration, so it says so and
/// names the deadline that would work, instead of the "use a wider bucket" it used to suggest
/// (issue 23); where a wider bucket does work, it names the narrowest.
#[test]
fn a_drain_longer_than_the_series_allows_is_refused() {
    let text = VALID
        .replace("duration = \"10s\"", "duration = \"1s\"\nbucket = \"1ms\"")
        .replace("rate = 1.0", "rate = 1.0\ndeadline = \"1000h\"");
    let message = load_str(&text, "drain.toml", &[]).unwrap_err().to_string();
    assert_contains(
        &message,
        &[
            "drain.toml:3:10:",
            "plus 1000h",
            "at most 100000",
            "no bucket is wide enough",
            "a shorter deadline (at most 99999s for an operation at this duration)",
        ],
    );
    assert!(!message.contains("wider bucket"), "{message}");
    // 10 h in 100,000 buckets: 360 ms each, which a 1 h run allows.
    let text = VALID
        .replace(
            "duration = \"10s\"",
            "duration = \"1h\"\nbucket = \"100ms\"",
        )
        .replace("rate = 1.0", "rate = 1.0\ndeadline = \"9h\"");
    let message = load_str(&text, "drain.toml", &[]).unwrap_err().to_string();
    assert_contains(
        &message,
        &["use a bucket of at least 360ms, or a shorter deadline"],
    );
    load_str(&text.replace("\"100ms\"", "\"360ms\""), "drain.toml", &[]).unwrap();
    let message = load_str(&text.replace("\"100ms\"", "\"1ms\""), "d.toml", &[])
        .unwrap_err()
        .to_string();
    assert_contains(&message, &["3600000 buckets of 1ms in 1h", "at least 36ms"]);
    // A policy without a deadline is bounded by its attempts, timeouts and waits.
    let unbounded = VALID.replace("name = \"a\"", "name = \"a\"\nignore_deadline = true");
    load_str(&unbounded, "ok.toml", &[]).unwrap();
}

/// HTTP methods are case-sensitive (RFC 9110 §9.1), and the method decides whether an
/// operation may be repeated: `get` would have been simulated as a write that is never safe to
/// retry. A method the decision does not know is refused at its operation, with the upper-case
/// spelling or the nearest name and the valid list, as `decide --method` refuses it.
#[test]
fn an_operations_method_is_one_the_decision_knows() {
    let operation = "rate = 1.0\n[[clients.operations]]\nname = \"read\"\nmethod = ";
    let lower = error_with("rate = 1.0", &format!("{operation}\"get\""));
    assert_contains(
        &lower,
        &[
            "bad.toml:9:10:",
            "operation \"read\": unknown HTTP method \"get\"",
            "did you mean `GET`?",
            "valid methods: GET, HEAD",
        ],
    );
    let misspelt = error_with("rate = 1.0", &format!("{operation}\"PSOT\""));
    assert_contains(&misspelt, &["unknown HTTP method \"PSOT\""]);
    let valid = VALID.replace("rate = 1.0", &format!("{operation}\"PATCH\""));
    load_str(&valid, "ok.toml", &[]).unwrap();
}

/// `rejection_cost.outage` never cost anything: a service refuses during an outage only while
/// no worker is up (capacity zero, or crashed: OVERLOAD.md §3.3, "Down accepts nothing"), so
/// `outage = 0`, `1` and `50` gave identical runs (issue 23). A value other than 0 is refused
/// at its place, saying what costs work instead; `outage = 0`, which older resolved scenarios
/// write, still loads, and the resolved scenario no longer writes it.
#[test]
fn a_rejection_cost_for_outages_is_refused_at_its_place() {
    let message = error_with(
        "service_time = \"5ms\"",
        "service_time = \"5ms\"\nrejection_cost = { queue_full = 0.2, outage = 50 }",
    );
    assert_contains(
        &message,
        &[
            "bad.toml:11:47:",
            "rejection_cost.outage is no longer read",
            "no worker",
            "queue_full",
        ],
    );
    let old = VALID.replacen(
        "service_time = \"5ms\"",
        "service_time = \"5ms\"\nrejection_cost = { queue_full = 0.2, outage = 0.0 }",
        1,
    );
    let scenario = load_str(&old, "old.toml", &[]).unwrap();
    let resolved = scenario.to_resolved_toml();
    assert!(resolved.contains("queue_full = 0.2"), "{resolved}");
    assert!(!resolved.contains("outage = 0"), "{resolved}");
}

/// A rejection cost is a share of the mean service time; with a service time of zero it would
/// silently cost nothing, so it is refused at its table (issue 23, with `capacity_rps`).
#[test]
fn a_rejection_cost_on_a_service_that_takes_no_time_is_refused() {
    let message = error_with(
        "service_time = \"5ms\"",
        "service_time = \"0ms\"\nrejection_cost = { queue_full = 0.2 }",
    );
    assert_contains(
        &message,
        &["bad.toml:11:18:", "mean service time, which is zero here"],
    );
}

/// `in_flight_above = 0` with `hold = "0s"` crashes the service the instant it admits any
/// request, so it never serves one and crashes once per request (issue 23's 1.5 million
/// crashes): not an overload but a service that is always down, refused at its table with
/// what to write instead. A hold above zero or a queue threshold of 0 stays valid.
#[test]
fn a_crash_at_every_request_is_refused() {
    let message = error_with(
        "service_time = \"5ms\"",
        "service_time = \"5ms\"\ncrash = { in_flight_above = 0, hold = \"0s\", restart_after = \"1us\" }",
    );
    assert_contains(
        &message,
        &[
            "bad.toml:11:9:",
            "crashes the service the instant it admits any request",
            "outage = \"crash\"",
        ],
    );
    for crash in [
        "crash = { in_flight_above = 0, hold = \"1us\", restart_after = \"1us\" }",
        "crash = { queue_above = 0, hold = \"0s\", restart_after = \"1us\" }",
    ] {
        let text = VALID.replacen(
            "service_time = \"5ms\"",
            &format!("service_time = \"5ms\"\n{crash}"),
            1,
        );
        load_str(&text, "ok.toml", &[]).unwrap();
    }
}

/// `contention = { sigma, kappa }`: both required, nothing else, sigma from 0 up to (not
/// including) 1 (at 1 no two requests would ever work in parallel), kappa at least 0 and
/// finite. Each bad value is reported at its place, naming the key and what is valid; an
/// override is checked as the file is.
#[test]
fn contention_values_are_checked_at_their_place() {
    let sigma = "from 0 up to, but not including, 1 for contention.sigma";
    let kappa = "at least 0 and finite for contention.kappa";
    let cases: [(&str, &[&str]); 9] = [
        (
            "contention = { sigma = 1.0, kappa = 0.0 }",
            &["bad.toml:11:24:", "1 is out of range", sigma],
        ),
        (
            "contention = { sigma = -0.1, kappa = 0.0 }",
            &["bad.toml:11:24:", "-0.1 is out of range", sigma],
        ),
        (
            "contention = { sigma = \"0.1\", kappa = 0.0 }",
            &["bad.toml:11:24:", "invalid type: string", sigma],
        ),
        (
            "contention = { sigma = 0.1, kappa = -0.001 }",
            &["bad.toml:11:37:", "-0.001 is out of range", kappa],
        ),
        (
            "contention = { sigma = 0.1, kappa = inf }",
            &["bad.toml:11:37:", "inf is out of range", kappa],
        ),
        (
            "contention = { sigma = 0.1, kappa = nan }",
            &["bad.toml:11:37:", "NaN is out of range", kappa],
        ),
        (
            "contention = { sigma = 0.1 }",
            &["bad.toml:11:14:", "missing field `kappa`"],
        ),
        (
            "contention = { kappa = 0.001 }",
            &["bad.toml:11:14:", "missing field `sigma`"],
        ),
        (
            "contention = { sigma = 0.1, kappa = 0.001, kapa = 0.1 }",
            &[
                "bad.toml:11:44:",
                "unknown field `kapa`",
                "expected `sigma` or `kappa` (did you mean `kappa`?)",
            ],
        ),
    ];
    for (contention, parts) in cases {
        let message = error_with(
            "service_time = \"5ms\"",
            &format!("service_time = \"5ms\"\n{contention}"),
        );
        assert_contains(&message, parts);
    }
    let text = VALID.replacen(
        "service_time = \"5ms\"",
        "service_time = \"5ms\"\ncontention = { sigma = 0.02, kappa = 0.0001 }",
        1,
    );
    let scenario = load_str(&text, "ok.toml", &[]).unwrap();
    assert!(
        scenario
            .to_resolved_toml()
            .contains("[upstream.contention]\nsigma = 0.02\nkappa = 0.0001\n"),
        "{}",
        scenario.to_resolved_toml()
    );
    let message = load_str(
        &text,
        "bad.toml",
        &[Override::set("upstream.contention.sigma", "1.5")],
    )
    .unwrap_err()
    .to_string();
    assert_contains(
        &message,
        &[
            "bad.toml: --set upstream.contention.sigma=1.5:",
            "1.5 is out of range",
            sigma,
        ],
    );
}
