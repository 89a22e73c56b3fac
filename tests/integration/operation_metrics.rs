//! Per-operation metrics (`success_rate:pay`): mixed traffic takes different paths, and a
//! failure on one path must show in its operation's numbers, not only as a share of the run's.
//! Each operation's counts add up to the run's; a failure on a service one operation never
//! reaches leaves that operation's success whole; claims and sweeps name them; a misspelt
//! operation gets the nearest, and a scenario of one operation says why it has none.

use retrystorm::run::PolicyRun;
use retrystorm::vocabulary::metric::OperationSummary;

use crate::support::{assert_contains, error_with, run, scenario};

/// A gateway that calls the ledger and the card network for a payment, the ledger alone for a
/// balance check. Everything is ample and fast against the 1 s attempt timeout; the card
/// network fails `CARD_ERRORS` of its requests with a 503, which the gateway does not retry
/// and answers as its own failure, and which the clients retry up to 3 attempts.
const MIXED: &str = r#"name = "mixed"
seed = 7
duration = "10s"
[clients]
count = 50
rate = 4.0
calls = "gateway"
[[clients.operations]]
name = "pay"
method = "POST"
idempotency_key = true
path = { gateway = ["ledger", "card-network"] }
[[clients.operations]]
name = "balance"
path = { gateway = ["ledger"] }
[[service]]
name = "gateway"
workers = 10000
service_time = "1ms"
calls = ["ledger", "card-network"]
retry = { max_attempts = 0 }
[[service]]
name = "ledger"
workers = 10000
service_time = "2ms"
[[service]]
name = "card-network"
workers = 10000
service_time = "3ms"
errors = { rate = CARD_ERRORS }
[[policy]]
name = "p"
max_attempts = 3
base = "10ms"
"#;

/// [`MIXED`] with the card network failing `rate` of its requests, and `extra` appended.
fn mixed(rate: &str, extra: &str) -> String {
    format!("{}{extra}", MIXED.replace("CARD_ERRORS", rate))
}

/// The operation called `name` of a policy's run.
fn operation<'a>(policy: &'a PolicyRun, name: &str) -> &'a OperationSummary {
    policy
        .summary
        .by_operation
        .iter()
        .find(|operation| operation.name == name)
        .unwrap_or_else(|| panic!("no operation {name}"))
}

/// With nothing failing, every operation of either kind succeeds at its first attempt: a
/// success rate of exactly 1 and an amplification of exactly 1 (attempts / operations, no
/// status check) for each. The operations are listed in the scenario's order, and each count
/// adds up over them to the run's, as each operation counts exactly one of the run's
/// operations and the requests its clients sent; the run's slowest success is the slowest of
/// the operations' slowest.
#[test]
fn without_failures_each_operation_succeeds_once_per_attempt_and_adds_up_to_the_run() {
    let result = run(&scenario(&mixed("0.0", "")));
    let policy = &result.policies[0];
    let names: Vec<&str> = policy
        .summary
        .by_operation
        .iter()
        .map(|operation| operation.name.as_str())
        .collect();
    assert_eq!(names, ["pay", "balance"]);
    for operation in &policy.summary.by_operation {
        assert!(operation.operations > 0, "{operation:?}");
        assert_eq!(operation.success_rate, 1.0, "{operation:?}");
        assert_eq!(operation.amplification, 1.0, "{operation:?}");
        assert_eq!(operation.attempts, operation.operations, "{operation:?}");
    }
    let summary = &policy.summary;
    let sum =
        |field: fn(&OperationSummary) -> u64| summary.by_operation.iter().map(field).sum::<u64>();
    assert_eq!(sum(|o| o.operations), summary.operations);
    assert_eq!(sum(|o| o.succeeded), summary.succeeded);
    assert_eq!(sum(|o| o.attempts), summary.attempts);
    let slowest = summary
        .by_operation
        .iter()
        .filter_map(|o| o.max_ms)
        .fold(0.0, f64::max);
    assert_eq!(Some(slowest), summary.max_ms);
}

/// The card network failing half its requests fails only payments, the one operation whose
/// path reaches it: a balance check never fails and is never retried, so its success rate
/// and amplification are exactly 1, while a payment is retried (amplification above 1) and
/// fails when all its 3 attempts fail, which some do (its success rate is below 1).
/// The operations' counts still add up to the run's: operations, successes, attempts and
/// unknown results.
#[test]
fn a_failure_on_one_path_shows_in_its_operation_alone() {
    let result = run(&scenario(&mixed("0.5", "")));
    let policy = &result.policies[0];
    let (pay, balance) = (operation(policy, "pay"), operation(policy, "balance"));
    assert_eq!(balance.success_rate, 1.0, "{balance:?}");
    assert_eq!(balance.amplification, 1.0, "{balance:?}");
    assert!(pay.success_rate < 1.0, "{pay:?}");
    assert!(pay.amplification > 1.0, "{pay:?}");
    let summary = &policy.summary;
    assert!(summary.success_rate < 1.0);
    assert_eq!(pay.operations + balance.operations, summary.operations);
    assert_eq!(pay.succeeded + balance.succeeded, summary.succeeded);
    assert_eq!(pay.attempts + balance.attempts, summary.attempts);
    assert_eq!(
        pay.unknown_results + balance.unknown_results,
        summary.unknown_results
    );
}

/// A claim names an operation's metric: its value is the operation's in the summary; the
/// balance checks' success rate is exactly 1 (the previous test's reason), so `at_least = 1`
/// holds on it and fails on the payments'.
#[test]
fn claims_name_an_operations_metric() {
    let claims = "[[expect]]\npolicy = \"p\"\nmetric = \"success_rate:balance\"\nat_least = 1.0\n\
                  [[expect]]\npolicy = \"p\"\nmetric = \"success_rate:pay\"\nat_least = 1.0\n";
    let result = run(&scenario(&mixed("0.5", claims)));
    let results = retrystorm::claims::evaluate(&result);
    let policy = &result.policies[0];
    assert_eq!(results[0].value, 1.0, "{}", results[0]);
    assert!(results[0].held, "{}", results[0]);
    assert_eq!(
        results[1].value,
        operation(policy, "pay").success_rate,
        "{}",
        results[1]
    );
    assert!(!results[1].held, "{}", results[1]);
}

/// An operation the scenario lacks is refused at the claim with the nearest operation and the
/// list of them; a service's metric written with `:` for `@` gets `METRIC@SERVICE`; an
/// operation's metric that does not exist gets the nearest; and a scenario of one operation
/// says its numbers are the run's own. A window on an operation's metric is refused with the
/// reason: its counts are kept over the whole run.
#[test]
fn operation_names_are_checked_with_did_you_mean() {
    let valid = mixed(
        "0.0",
        "[[expect]]\npolicy = \"p\"\nmetric = \"success_rate:pay\"\nat_least = 0.5\n",
    );
    assert_contains(
        &error_with(&valid, "success_rate:pay", "success_rate:paay"),
        &[
            "bad.toml:35:",
            "`success_rate:paay`: the scenario has no operation `paay` (did you mean `success_rate:pay`?); its operations: pay, balance",
        ],
    );
    assert_contains(
        &error_with(&valid, "success_rate:pay", "amplification:ledger"),
        &["the scenario has no operation `ledger` (did you mean `amplification@ledger`?)"],
    );
    assert_contains(
        &error_with(&valid, "success_rate:pay", "sucess_rate:pay"),
        &[
            "unknown operation metric `sucess_rate` in `sucess_rate:pay` (did you mean `success_rate:pay`?)",
        ],
    );
    assert_contains(
        &error_with(
            &valid,
            "at_least = 0.5\n",
            "at_least = 0.5\nwindow = { from = \"1s\", to = \"2s\" }\n",
        ),
        &[
            "bad.toml:35:1:",
            "`success_rate:pay` cannot be taken over a window (counts per service, instance and operation are kept over the whole run: drop `window`, or claim the run's metric); valid: goodput_rps",
        ],
    );
    let single = valid.replace(
        "[[clients.operations]]\nname = \"balance\"\npath = { gateway = [\"ledger\"] }\n",
        "",
    );
    assert_contains(
        &error_with(&single, "success_rate:pay", "success_rate:payment"),
        &[
            "`success_rate:payment`: an operation's metrics (METRIC:OPERATION) are those of a scenario of two [[clients.operations]] or more; this scenario has one (pay), whose numbers are the run's own metrics (`success_rate` and the others in summary.csv)",
        ],
    );
}

/// `summary.json` lists each operation's metrics under `per_operation`, in the scenario's
/// order, with two operations; a scenario of one has no such block (its `summary.json` stays
/// as it was).
#[test]
fn summary_json_lists_each_operation_with_two_or_more() {
    let result = run(&scenario(&mixed("0.0", "")));
    let json: serde_json::Value =
        serde_json::from_slice(&retrystorm::output::summary_json(&result)).unwrap();
    let blocks = json[0]["per_operation"].as_array().expect("a list");
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0]["operation"], "pay");
    assert_eq!(blocks[1]["operation"], "balance");
    assert_eq!(blocks[1]["success_rate"], 1.0);
    assert_eq!(blocks[1]["amplification"], 1.0);
    let single = mixed("0.0", "").replace(
        "[[clients.operations]]\nname = \"balance\"\npath = { gateway = [\"ledger\"] }\n",
        "",
    );
    let result = run(&scenario(&single));
    assert!(result.policies[0].summary.by_operation.is_empty());
    let json: serde_json::Value =
        serde_json::from_slice(&retrystorm::output::summary_json(&result)).unwrap();
    assert!(json[0].get("per_operation").is_none());
}

/// A sweep records the operation's metric its requirement names, after the run's (its other
/// columns unchanged), with the counts its interval pools (`succeeded:pay` of
/// `operations:pay`), and a point meets it as the operation's success does: with the card
/// network sound every payment succeeds (`1.000000`, the first test's reason), failing half
/// its requests some do not, so the first point alone meets `success_rate:pay>=0.99`. The
/// interval of a payment's success is Wilson's on the payments, not on every operation: a
/// share of 100% over N payments is [N/(N + 1.96²), 1] (Wilson 1927), never [1, 1].
#[test]
fn a_sweep_requires_an_operations_success_rate() {
    let folder = crate::support::fresh_folder("operation-sweep");
    let path = folder.join("mixed.toml");
    std::fs::write(&path, mixed("0.5", "")).unwrap();
    let out = folder.join("out");
    let output = crate::support::retrystorm(&[
        "sweep",
        path.to_str().unwrap(),
        "--seeds",
        "1",
        "--grid",
        "service.card-network.errors.rate=0,0.5",
        "--require",
        "success_rate:pay>=0.99",
        "--no-charts",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = std::fs::read_to_string(out.join("mixed-sweep/results.csv")).unwrap();
    let mut lines = results.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        header[header.len() - 3..],
        ["success_rate:pay", "succeeded:pay", "operations:pay"],
        "{results}"
    );
    let rows: Vec<Vec<&str>> = lines.map(|line| line.split(',').collect()).collect();
    let at = |row: usize, name: &str| {
        let column = header.iter().position(|column| *column == name).unwrap();
        rows[row][column]
    };
    assert_eq!(at(0, "success_rate:pay"), "1.000000", "{results}");
    assert!(
        at(1, "success_rate:pay").parse::<f64>().unwrap() < 0.99,
        "{results}"
    );
    let payments: f64 = at(0, "operations:pay").parse().unwrap();
    let operations: f64 = at(0, "operations").parse().unwrap();
    assert!(payments > 0.0 && payments < operations, "{results}");
    assert_eq!(at(0, "succeeded:pay"), at(0, "operations:pay"), "{results}");
    let z2 = 1.959963984540054f64.powi(2);
    assert_contains(
        &String::from_utf8_lossy(&output.stdout),
        &[
            "recommended: point 0: service.card-network.errors.rate=0",
            &format!(
                "  success_rate:pay 1: {:.6} to 1 (Wilson score on {payments} of {payments} operations pooled",
                payments / (payments + z2)
            ),
        ],
    );
    let output = crate::support::retrystorm(&[
        "sweep",
        path.to_str().unwrap(),
        "--seeds",
        "1",
        "--grid",
        "service.card-network.errors.rate=0,0.5",
        "--require",
        "success_rate:paye>=0.99",
        "--no-charts",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    assert_contains(
        &String::from_utf8_lossy(&output.stderr),
        &[
            "--require success_rate:paye>=0.99: `success_rate:paye`: the scenario has no operation `paye` (did you mean `success_rate:pay`?); its operations: pay, balance",
        ],
    );
}

/// A sweep that draws an operation's metric names its heatmap's file so that every file system
/// takes it and a browser reads it as a relative path: `success_rate:pay` would be
/// `heatmap-success_rate:pay.png`, which Windows refuses and which, as a link, is a URL of the
/// scheme `heatmap-success_rate`. It is `heatmap-success_rate.op-pay`, and an operation named
/// `Card:Pay/v1` (any text is an operation's name) `heatmap-success_rate.op-~card~~3a~pay~~2fv1`:
/// `~` and the lower-case letter for an upper-case one, `~~` and the hex digits of any other
/// byte (`:` 0x3a, `/` 0x2f), so no `/` makes a folder of it either. The recommendation names
/// the file beside the metric, and `report.html` shows that very file, inline, byte for byte
/// (it links no image: it is one self-contained page).
#[test]
fn an_operations_heatmap_has_a_file_name_without_a_colon_and_the_page_shows_it() {
    let folder = crate::support::fresh_folder("operation-heatmap");
    for (operation, stem) in [
        ("pay", "heatmap-success_rate.op-pay"),
        ("Card:Pay/v1", "heatmap-success_rate.op-~card~~3a~pay~~2fv1"),
    ] {
        let path = folder.join("mixed.toml");
        let text = mixed("0.5", "").replace("name = \"pay\"", &format!("name = {operation:?}"));
        std::fs::write(&path, text).unwrap();
        let out = folder.join("out");
        let output = crate::support::retrystorm(&[
            "sweep",
            path.to_str().unwrap(),
            "--seeds",
            "1",
            "--grid",
            "service.card-network.errors.rate=0,0.5",
            "--grid",
            "policy.max_attempts=1,3",
            "--require",
            &format!("success_rate:{operation}>=0.99"),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let sweep = out.join("mixed-sweep");
        let mut names: Vec<String> = std::fs::read_dir(&sweep)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        for name in &names {
            assert!(
                name.bytes().all(|byte| byte.is_ascii_lowercase()
                    || byte.is_ascii_digit()
                    || b"_-.~".contains(&byte)),
                "{name}"
            );
        }
        for extension in ["png", "svg"] {
            let file = format!("{stem}.{extension}");
            assert!(names.contains(&file), "{file} not in {names:?}");
        }
        let recommendation = std::fs::read_to_string(sweep.join("recommendation.txt")).unwrap();
        assert_contains(
            &recommendation,
            &[&format!(
                "heatmaps (yellow is the better end of each): success_rate:{operation} (in {stem}), "
            )],
        );
        let page = std::fs::read_to_string(sweep.join("report.html")).unwrap();
        let svg = std::fs::read_to_string(sweep.join(format!("{stem}.svg"))).unwrap();
        assert!(
            page.contains(&format!("<figure>\n{svg}\n</figure>")),
            "{stem}"
        );
        for link in ["<img", "src=", "heatmap-success_rate:"] {
            assert!(!page.contains(link), "{link} in the page");
        }
    }
}
