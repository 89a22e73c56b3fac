//! No silent defaults the real system does not have: a tier retries only if its `retry` table
//! (or the config it imports) says so, `check` shows every caller's effective policy, a gRPC
//! import invents no per-attempt timeout and no retries, and an Envoy config that retries only
//! listed statuses retries no timeout, reset or refused connection.

use std::process::Command;

use retrystorm::base::time::Micros;
use retrystorm::import::import_str;
use retrystorm::import::load;
use retrystorm::model::{Deadline, Model};
use retrystorm::scenario::{AttemptTimeout, TransportError};

use crate::support::{assert_contains, error_with, fresh_folder, model_importing, run, scenario};

/// clients -> api -> db, where the db answers every request 503 and the clients never retry;
/// `api_retry` is the api's `retry` line, if any. Timeouts and deadlines are ample, so only
/// the retry settings decide how many calls reach the db.
fn api_over_failing_db(api_retry: &str) -> String {
    format!(
        r#"
name = "tiers"
seed = 3
duration = "2s"
[clients]
count = 100
rate = 1.0
deadline = "100s"
attempt_timeout = "60s"
calls = "api"
[[service]]
name = "api"
workers = 1000
service_time = "1ms"
calls = ["db"]
{api_retry}
[[service]]
name = "db"
workers = 1000
service_time = "1ms"
errors = {{ rate = 1.0, status = 503 }}
[[policy]]
name = "clients send once"
max_attempts = 0
"#
    )
}

/// A service without a `retry` table sends each call once, as Envoy and gRPC do without a
/// retry policy (POLICIES.md §1.1, §2.1): the db, which fails everything, sees exactly one
/// request per user operation. With `retry = {}` it takes the article's three retries, so four
/// requests per operation. (Before, a tier retried three times by default.)
#[test]
fn a_tier_without_a_retry_table_sends_each_call_once() {
    let at_db = |api_retry: &str| {
        let result = run(&scenario(&api_over_failing_db(api_retry)));
        let policy = &result.policies[0];
        assert!(policy.measurements.operations > 100);
        policy.services[1].amplification
    };
    assert_eq!(at_db(""), 1.0);
    assert_eq!(at_db("retry = {}"), 4.0);
}

/// `check` lists every caller's effective policy: the clients' under each policy, each tier as
/// the file sets it (a tier without `retry` says it never retries and waits as long as its
/// caller), and each tier a policy's overrides change.
#[test]
fn check_lists_every_callers_effective_policy() {
    let folder = fresh_folder("tier-check");
    let path = folder.join("tiers.toml");
    let text = api_over_failing_db("").replace(
        "max_attempts = 0\n",
        "max_attempts = 0\n[[policy]]\nname = \"api retries\"\nmax_attempts = 0\noverrides = { \"service.api.retry.max_attempts\" = 2 }\n",
    );
    std::fs::write(&path, text).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(["check", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().skip(2).collect();
    assert_eq!(
        lines,
        [
            "  policy \"clients send once\": clients -> api: retries none; attempt timeout 1m, deadline 100s; controls none",
            "  policy \"api retries\": clients -> api: retries none; attempt timeout 1m, deadline 100s; controls none",
            "  api -> db: retries none; attempt timeout none, deadline propagated; controls none; answers 503 when a call fails for good",
            "  policy \"api retries\" overrides api -> db: retries 2 (up to 3 sends); backoff 100 ms to 2000 ms, x2, full jitter; Retry-After honor; retries on timeouts, resets, refused connections, 429, 503; attempt timeout none, deadline propagated; controls none; answers 503 when a call fails for good",
        ],
        "{stdout}"
    );
}

/// A gRPC service config without `timeout` sets no deadline and gRPC has no per-attempt
/// timeout (gRFC A6: the deadline covers every attempt): the import leaves the deadline to the
/// scenario, says so in its notes, and lets an attempt take all of it (`attempt_timeout =
/// "none"`), never the scenario's 1 s attempt timeout.
#[test]
fn a_grpc_config_without_timeout_invents_no_attempt_timeout() {
    let config = r#"{"methodConfig": [{"name": [{"service": "users.Users"}], "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;
    let imported = import_str(config, false, None).unwrap();
    assert_eq!(imported.attempt_timeout, Some(AttemptTimeout::None));
    assert_eq!(imported.deadline, None);
    let note = imported
        .notes
        .iter()
        .find(|note| note.starts_with("no timeout"))
        .expect("a note on the missing timeout");
    assert_contains(
        note,
        &[
            "the call's deadline is the scenario's",
            "5s unless set",
            "attempt_timeout = \"none\"",
        ],
    );
    let model = model_importing("users.json", config);
    assert_eq!(model.users.policy.attempt_timeout, Micros::MAX);
    assert_eq!(model.users.policy.deadline, Deadline::Budget(5_000_000));
}

/// Without a `retryPolicy` gRPC does not retry (gRFC A6: a policy has no defaults, and no
/// policy means no retries), also when the config has only `retryThrottling`, which limits the
/// retries a policy makes and makes none itself.
#[test]
fn a_grpc_config_without_retry_policy_does_not_retry() {
    let throttling_only = r#"{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}"#;
    let imported = import_str(throttling_only, false, None).unwrap();
    assert_eq!(imported.max_attempts, Some(0));
    assert!(
        imported
            .notes
            .iter()
            .any(|note| note.contains("gRPC does not retry"))
    );
    let model = model_importing("throttling.json", throttling_only);
    assert_eq!(model.users.policy.max_attempts, 0);
    assert_eq!(model.users.policy.attempt_timeout, Micros::MAX);
    let timeout_only = r#"{"methodConfig": [{"name": [{"service": "s"}], "timeout": "2s"}]}"#;
    let model = model_importing("timeout.json", timeout_only);
    assert_eq!(model.users.policy.max_attempts, 0);
    assert_eq!(model.users.policy.deadline, Deadline::Budget(2_000_000));
}

/// `waitForReady: false` is gRPC's default and what is simulated (a call fails at once when
/// the channel is not ready): accepted. `true` would queue calls until a connection is ready:
/// refused at its place in the file, with the reason.
#[test]
fn wait_for_ready_false_is_accepted_and_true_refused() {
    let config = |wait: &str| {
        format!(
            r#"{{"methodConfig": [{{"name": [{{"service": "s"}}], "waitForReady": {wait}, "timeout": "1s"}}]}}"#
        )
    };
    let accepted = import_str(&config("false"), false, None).unwrap();
    assert!(
        accepted
            .notes
            .iter()
            .any(|note| note.starts_with("waitForReady false"))
    );
    let refused = import_str(&config("true"), false, None)
        .unwrap_err()
        .to_string();
    assert_contains(
        &refused,
        &[
            "methodConfig[0].waitForReady",
            "true is not simulated",
            "waits for a ready connection",
        ],
    );
    let not_boolean = import_str(&config("\"yes\""), false, None)
        .unwrap_err()
        .to_string();
    assert_contains(&not_boolean, &["waitForReady", "not a boolean"]);
}

/// Envoy's `retry_on: retriable-status-codes` with `[503]` retries a 503 and nothing else: no
/// per-try timeout, reset or refused connection (router_filter.rst; retry_state_impl.cc
/// retries a reset only for `reset`, `5xx`, `gateway-error`, a connection failure also for
/// `connect-failure`). Against an upstream that answers 503 at random, the edge retries; against
/// one that loses requests (timeouts) or is down after a crash (refused connections), every
/// operation is sent once: amplification exactly 1. With `connect-failure` added, refused
/// connections are retried.
#[test]
fn envoy_retrying_only_503_retries_no_timeout_or_reset() {
    let only_503 = "retry_policy:\n  retry_on: retriable-status-codes\n  retriable_status_codes: [503]\n  num_retries: 2\n  per_try_timeout: 0.2s\n";
    let imported = import_str(only_503, true, None).unwrap();
    assert_eq!(imported.retryable_statuses, Some(vec![503]));
    assert_eq!(imported.retryable_transport_errors, Some(vec![]));
    let with_connect = only_503.replace(
        "retriable-status-codes\n",
        "retriable-status-codes,connect-failure\n",
    );
    assert_eq!(
        import_str(&with_connect, true, None)
            .unwrap()
            .retryable_transport_errors,
        Some(vec![TransportError::Refused])
    );
    for condition in ["5xx", "gateway-error", "reset"] {
        let text = only_503.replace(
            "retriable-status-codes\n",
            &format!("{condition},retriable-status-codes\n"),
        );
        assert_eq!(
            import_str(&text, true, None)
                .unwrap()
                .retryable_transport_errors,
            Some(TransportError::ALL.to_vec()),
            "{condition}"
        );
    }
    let amplification = |config: &str, upstream: &str, network: &str| {
        let folder = fresh_folder(&format!("envoy-503-{}", upstream.len() + network.len()));
        std::fs::write(folder.join("envoy.yaml"), config).unwrap();
        let path = folder.join("s.toml");
        std::fs::write(
            &path,
            format!(
                "name = \"x\"\nseed = 2\nduration = \"4s\"\n[clients]\ncount = 200\nrate = 1.0\ndeadline = \"3s\"\n[network]\nlatency = \"1ms\"\n{network}\n[upstream]\nworkers = 100\nservice_time = \"1ms\"\n{upstream}\n[[policy]]\nname = \"envoy\"\nimport = \"envoy.yaml\"\n"
            ),
        )
        .unwrap();
        let scenario = load(&path, &[]).unwrap_or_else(|error| panic!("{error}"));
        run(&scenario).policies[0].summary.amplification
    };
    assert!(amplification(only_503, "errors = { rate = 0.3, status = 503 }", "") > 1.2);
    assert_eq!(amplification(only_503, "", "request_loss = 0.3"), 1.0);
    let crash = "outage = \"crash\"\ncapacity = [{ at = \"1s\", factor = 1.0 }, { at = \"1s\", factor = 0.0 }, { at = \"3s\", factor = 0.0 }, { at = \"3s\", factor = 1.0 }]";
    assert_eq!(amplification(only_503, crash, ""), 1.0);
    assert!(amplification(&with_connect, crash, "") > 1.2);
}

/// A tier imports the config it runs: an edge proxy's Envoy `retry_policy` becomes the edge's
/// `retry` (two retries of 503 only, 250 ms per try, Envoy's backoff and its default cap of 3
/// concurrent retries), settings written next to `import` win, and an error names the imported
/// file, the field in it, and the `import` line.
#[test]
fn a_tier_imports_an_envoy_config() {
    let folder = fresh_folder("tier-import");
    std::fs::write(
        folder.join("edge.yaml"),
        "retry_policy:\n  retry_on: retriable-status-codes\n  retriable_status_codes: [503]\n  num_retries: 2\n  per_try_timeout: 0.25s\n",
    )
    .unwrap();
    let path = folder.join("s.toml");
    let write = |retry: &str| {
        std::fs::write(
            &path,
            format!(
                "name = \"x\"\nduration = \"1s\"\n[clients]\ncount = 1\nrate = 1.0\ncalls = \"edge\"\n[[service]]\nname = \"edge\"\nworkers = 10\nservice_time = \"1ms\"\ncalls = [\"api\"]\n{retry}\n[[service]]\nname = \"api\"\nworkers = 10\nservice_time = \"1ms\"\n"
            ),
        )
        .unwrap();
    };
    write("retry = { import = \"edge.yaml\" }");
    let scenario = load(&path, &[]).unwrap_or_else(|error| panic!("{error}"));
    let model = Model::new(&scenario, &scenario.policy[0]);
    let edge = model.services[0].downstream.as_ref().unwrap();
    assert_eq!(edge.max_attempts, 2);
    assert_eq!(edge.retryable.iter().collect::<Vec<_>>(), [503]);
    assert_eq!(edge.retryable_transport.iter().count(), 0);
    assert_eq!(edge.attempt_timeout, 250_000);
    assert_eq!((edge.base_ms, edge.cap_ms), (25.0, 250.0));
    assert_eq!(edge.deadline, Deadline::Propagate);
    assert_eq!(
        edge.controls[0].to_string(),
        "retry budget 0% of requests in flight, at least 3 (per calling instance)"
    );
    write("retry = { import = \"edge.yaml\", max_attempts = 1 }");
    let scenario = load(&path, &[]).unwrap();
    let model = Model::new(&scenario, &scenario.policy[0]);
    assert_eq!(
        model.services[0].downstream.as_ref().unwrap().max_attempts,
        1
    );
    std::fs::write(
        folder.join("bad.yaml"),
        "retry_policy:\n  retry_on: retriable-headers\n",
    )
    .unwrap();
    write("retry = { import = \"bad.yaml\" }");
    let message = load(&path, &[]).unwrap_err().to_string();
    assert_contains(
        &message,
        &[
            "s.toml:12:20:",
            "import \"bad.yaml\"",
            "bad.yaml: retry_policy.retry_on",
            "headers are not simulated",
        ],
    );
}

/// A tier that imports a gRPC service config takes its `timeout` as a bound on the deadline
/// it inherits (a gRPC server propagating deadlines uses the earlier of the two):
/// `deadline = "propagate, at most 2s"`. In the engine, a db that takes 1 s then times out
/// every call of an api whose calls may last at most 100 ms, and none when the api propagates
/// its caller's 60 s.
#[test]
fn a_tier_importing_grpc_bounds_the_deadline_it_inherits() {
    let folder = fresh_folder("tier-import-grpc");
    std::fs::write(
        folder.join("api.json"),
        r#"{"methodConfig": [{"name": [{"service": "db.Db"}], "timeout": "2s"}]}"#,
    )
    .unwrap();
    let path = folder.join("s.toml");
    std::fs::write(
        &path,
        api_over_failing_db("retry = { import = \"api.json\" }"),
    )
    .unwrap();
    let imported = load(&path, &[]).unwrap_or_else(|error| panic!("{error}"));
    let model = Model::new(&imported, &imported.policy[0]);
    let api = model.services[0].downstream.as_ref().unwrap();
    assert_eq!(api.deadline, Deadline::PropagateAtMost(2_000_000));
    assert_eq!((api.max_attempts, api.attempt_timeout), (0, Micros::MAX));
    assert!(
        imported
            .to_resolved_toml()
            .contains("deadline = \"propagate, at most 2s\"")
    );
    let timeouts_at_db = |deadline: &str| {
        let text = api_over_failing_db(&format!(
            "retry = {{ max_attempts = 0, attempt_timeout = \"none\", {deadline} }}"
        ))
        .replace("errors = { rate = 1.0, status = 503 }", "")
        .replace(
            "name = \"db\"\nworkers = 1000\nservice_time = \"1ms\"",
            "name = \"db\"\nworkers = 1000\nservice_time = \"1s\"",
        );
        let result = run(&scenario(&text));
        let db = &result.policies[0].services[1].totals;
        (db.timeouts, db.received)
    };
    let (timeouts, received) = timeouts_at_db("deadline = \"propagate, at most 100ms\"");
    assert!(received > 100);
    assert_eq!(timeouts, received);
    assert_eq!(timeouts_at_db("deadline = \"propagate\"").0, 0);
}

/// `attempt_timeout = "none"` and `retryable_transport_errors` are checked where they are
/// written: a misspelt kind gets the nearest one, a policy that ignores its deadline cannot
/// also have no attempt timeout (an unanswered attempt would wait forever), and a tier's
/// `attempt_timeout` is a duration or `"none"`.
#[test]
fn attempt_timeouts_and_transport_errors_are_checked_at_their_place() {
    let base = api_over_failing_db("retry = {}");
    assert_contains(
        &error_with(
            &base,
            "max_attempts = 0\n",
            "max_attempts = 0\nretryable_transport_errors = [\"timout\"]\n",
        ),
        &[
            "bad.toml:25:31:",
            "unknown variant `timout`",
            "did you mean `timeout`?",
        ],
    );
    assert_contains(
        &error_with(
            &base,
            "max_attempts = 0\n",
            "max_attempts = 0\nattempt_timeout = \"none\"\nignore_deadline = true\n",
        ),
        &[
            "bad.toml:23:8:",
            "leaves an attempt that gets no answer waiting forever",
        ],
    );
    assert_contains(
        &error_with(
            &base,
            "retry = {}",
            "retry = { attempt_timeout = \"never\" }",
        ),
        &["bad.toml:16:", "invalid duration \"never\"", "or \"none\""],
    );
}
