//! Importing gRPC service configs and Envoy retry policies: each shipped config imports to the
//! settings its client runs with, and whatever the simulator cannot model is refused by name.

use std::path::Path;

use retrystorm::backoff::Jitter;
use retrystorm::control::grpc_throttling::GrpcThrottlingConfig;
use retrystorm::control::retry_budget::ConcurrencyBudgetConfig;
use retrystorm::control::{ControlConfig, ControlKind};
use retrystorm::import::{import_file, import_str};
use retrystorm::model::{Deadline, Model};
use retrystorm::retry_after::RetryAfterMode;
use retrystorm::scenario::load;

use crate::support::{assert_contains, model_importing};

/// Every config in `scenarios/configs/` imports, and `retrystorm import`'s table for it reads
/// back as a valid policy.
#[test]
fn every_shipped_config_imports() {
    let mut count = 0;
    for entry in std::fs::read_dir("scenarios/configs").unwrap() {
        let path = entry.unwrap().path();
        let imported = import_file(&path, None).unwrap_or_else(|error| panic!("{error}"));
        assert!(
            !imported.notes.is_empty(),
            "{}: notes say how it was mapped",
            path.display()
        );
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .args(["import", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let table = String::from_utf8(output.stdout).unwrap();
        let scenario = format!(
            "name = \"x\"\nduration = \"1s\"\n[clients]\ncount = 1\nrate = 1.0\n[upstream]\nworkers = 1\nservice_time = \"1ms\"\n{table}"
        );
        retrystorm::scenario::load_str(&scenario, "roundtrip.toml", &[])
            .unwrap_or_else(|error| panic!("{}: {error}\n{scenario}", path.display()));
        count += 1;
    }
    assert!(count >= 4);
}

/// The gRPC example (gRFC A6's retry policy and throttling): `maxAttempts = 4` counts the
/// first call, so three retries; backoff 100 ms to 1 s, doubling, gRPC's ±20% jitter; the
/// retryable code UNAVAILABLE is what a client makes of 429, 502, 503 and 504; a service's
/// Retry-After is read as server pushback; the call's
/// 2 s timeout is its deadline and, without per-attempt timeouts, every attempt's; throttling
/// of 10 tokens, 0.1 back per success.
#[test]
fn a_grpc_service_config_maps_to_its_clients_behaviour() {
    let model = model_of("grpc-service-config.json");
    let policy = &model.users.policy;
    assert_eq!(policy.max_attempts, 3);
    assert_eq!(
        (policy.base_ms, policy.cap_ms, policy.multiplier),
        (100.0, 1000.0, 2.0)
    );
    assert_eq!(policy.jitter, Jitter::Grpc);
    assert_eq!(policy.retry_after, RetryAfterMode::Pushback);
    assert_eq!(
        policy.retryable.iter().collect::<Vec<_>>(),
        [429, 502, 503, 504]
    );
    assert_eq!(policy.deadline, Deadline::Budget(2_000_000));
    // gRPC has no per-attempt timeout: an attempt may last the whole deadline.
    assert_eq!(policy.attempt_timeout, retrystorm::time::Micros::MAX);
    assert_eq!(
        policy.controls[0].config,
        ControlConfig::GrpcThrottling(GrpcThrottlingConfig {
            max_tokens: 10,
            token_ratio_milli: 100
        })
    );
}

/// The Envoy example: three retries of 500 ms each, Envoy's fully jittered backoff from 25 ms
/// to 250 ms, `5xx` retries every 5xx status, Retry-After ignored (no rate-limited backoff),
/// and the cluster's budget of 20% of requests in flight, at least 3.
#[test]
fn an_envoy_retry_policy_maps_to_its_clients_behaviour() {
    let model = model_of("envoy-retry-policy.yaml");
    let policy = &model.users.policy;
    assert_eq!(policy.max_attempts, 3);
    assert_eq!((policy.base_ms, policy.cap_ms), (25.0, 250.0));
    assert_eq!(policy.jitter, Jitter::Full);
    assert_eq!(policy.retry_after, RetryAfterMode::Ignore);
    assert_eq!(
        policy.retryable.iter().collect::<Vec<_>>(),
        (500..=599).collect::<Vec<_>>()
    );
    assert_eq!(policy.attempt_timeout, 500_000);
    assert_eq!(
        policy.controls[0].config,
        ControlConfig::ConcurrencyBudget(ConcurrencyBudgetConfig {
            percent: 20.0,
            min_concurrency: 3
        })
    );
    // Without circuit_breakers, Envoy's default max_retries = 3 caps concurrent retries.
    let defaults = model_of("envoy-default-retries.json");
    assert_eq!(
        defaults.users.policy.retry_after,
        RetryAfterMode::HonorJittered
    );
    assert_eq!(
        defaults.users.policy.controls[0].config,
        ControlConfig::ConcurrencyBudget(ConcurrencyBudgetConfig {
            percent: 0.0,
            min_concurrency: 3
        })
    );
}

/// A gRPC hedging policy: three attempts 50 ms apart, UNAVAILABLE non-fatal (429, 502-504 over
/// HTTP), and no retries: hedges are never retried.
#[test]
fn a_grpc_hedging_policy_maps_to_hedging() {
    let model = model_of("grpc-hedging.json");
    let policy = &model.users.policy;
    let hedging = policy.hedging.expect("hedging");
    assert_eq!((hedging.max_attempts, hedging.delay), (3, 50_000));
    assert_eq!(
        hedging.non_fatal.iter().collect::<Vec<_>>(),
        [429, 502, 503, 504]
    );
    assert_eq!(policy.max_attempts, 0);
    assert_eq!(policy.retry_after, RetryAfterMode::Pushback);
}

/// The model of a scenario whose one policy imports `config`, from `scenarios/configs/`.
fn model_of(config: &str) -> Model {
    let text = std::fs::read_to_string(Path::new("scenarios/configs").join(config)).unwrap();
    model_importing(config, &text)
}

/// Settings written in the policy win over the imported ones: a team can ask "what would a
/// budget change?" of its own config.
#[test]
fn the_policys_own_settings_win() {
    let folder = std::env::temp_dir().join("retrystorm-import-override");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(
        "scenarios/configs/grpc-service-config.json",
        folder.join("g.json"),
    )
    .unwrap();
    let path = folder.join("s.toml");
    std::fs::write(
        &path,
        "name = \"x\"\nduration = \"1s\"\n[clients]\ncount = 1\nrate = 1.0\n[upstream]\nworkers = 1\nservice_time = \"1ms\"\n[[policy]]\nname = \"tweaked\"\nimport = \"g.json\"\nbase = \"50ms\"\ncontrols = [{ kind = \"retry-budget\" }]\n",
    )
    .unwrap();
    let scenario = load(&path, &[]).unwrap();
    let model = Model::new(&scenario, &scenario.policy[0]);
    assert_eq!(model.users.policy.base_ms, 50.0);
    assert_eq!(model.users.policy.cap_ms, 1000.0);
    assert_eq!(
        model.users.policy.controls[0].config.kind(),
        ControlKind::RetryBudget
    );
    // The resolved scenario is self-contained: no import left, every setting written.
    let resolved = scenario.to_resolved_toml();
    assert!(!resolved.contains("import"), "{resolved}");
    assert!(resolved.contains("jitter = \"grpc\""), "{resolved}");
    // A config that is not there is an error at the import line.
    std::fs::write(&path, "name = \"x\"\nduration = \"1s\"\n[clients]\ncount = 1\nrate = 1.0\n[upstream]\nworkers = 1\nservice_time = \"1ms\"\n[[policy]]\nname = \"a\"\nimport = \"missing.json\"\n").unwrap();
    let message = load(&path, &[]).unwrap_err().to_string();
    assert_contains(
        &message,
        &[
            "s.toml:11:10:",
            "import \"missing.json\"",
            "cannot read the config",
        ],
    );
}

/// What cannot be modelled is refused by name, never dropped.
#[test]
fn unmodelled_settings_are_refused_by_name() {
    let grpc = |method_config: &str| {
        import_str(
            &format!(r#"{{"methodConfig": [{{"name": [{{"service": "s"}}], {method_config}}}]}}"#),
            false,
            None,
        )
        .unwrap_err()
        .to_string()
    };
    let retry = r#""retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}"#;
    assert_contains(
        &grpc(&format!(
            r#"{retry}, "hedgingPolicy": {{"maxAttempts": 3}}"#
        )),
        &["methodConfig[0].hedgingPolicy", "not both"],
    );
    assert_contains(
        &grpc(r#""hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "50ms"}"#),
        &["hedgingPolicy.hedgingDelay", "decimal seconds"],
    );
    assert_contains(
        &grpc(&format!(r#"{retry}, "waitForReady": true"#)),
        &["methodConfig[0].waitForReady", "not simulated"],
    );
    assert_contains(
        &grpc(&retry.replace("\"maxAttempts\": 3", "\"maxAttempts\": 1")),
        &["retryPolicy.maxAttempts", "above 1"],
    );
    assert_contains(
        &grpc(&retry.replace("backoffMultiplier", "backofMultiplier")),
        &[
            "retryPolicy.backofMultiplier",
            "did you mean `backoffMultiplier`?",
        ],
    );
    assert_contains(
        &grpc(&retry.replace("\"0.1s\"", "\"100ms\"")),
        &["retryPolicy.initialBackoff", "decimal seconds"],
    );
    assert_contains(
        &grpc(&retry.replace("UNAVAILABLE", "UNAVAILBLE")),
        &["retryableStatusCodes", "not a gRPC status code"],
    );
    let clamped = import_str(
        &format!(
            r#"{{"methodConfig": [{{"name": [{{"service": "s"}}], {}}}]}}"#,
            retry.replace("\"maxAttempts\": 3", "\"maxAttempts\": 9")
        ),
        false,
        None,
    )
    .unwrap();
    assert_eq!(clamped.max_attempts, Some(4));
    assert!(
        clamped
            .notes
            .iter()
            .any(|note| note.contains("clamped to 5"))
    );
    let envoy = |policy: &str| import_str(policy, true, None).unwrap_err().to_string();
    assert_contains(
        &envoy("retry_policy:\n  retry_on: 5xx,retriable-headers\n"),
        &[
            "retry_policy.retry_on",
            "retriable-headers",
            "headers are not simulated",
        ],
    );
    assert_contains(
        &envoy("retry_policy:\n  retry_on: reset-before-request\n"),
        &[
            "retry_policy.retry_on",
            "reset-before-request",
            "not simulated",
        ],
    );
    assert_contains(
        &envoy("retry_policy:\n  num_retries: 2\n"),
        &["retry_policy.retry_on", "required"],
    );
    assert_contains(
        &envoy("retry_policy:\n  retry_on: 5xx\n  retry_host_predicate: []\n"),
        &["retry_policy.retry_host_predicate", "one host"],
    );
    assert_contains(
        &envoy(
            "retry_policy:\n  retry_on: 5xx\ncircuit_breakers:\n  thresholds:\n    - max_connections: 10\n",
        ),
        &[
            "circuit_breakers.thresholds[0].max_connections",
            "not simulated",
        ],
    );
    assert_contains(
        &envoy("retry_policy:\n  retry_on: [5xx\n"),
        &["line 2", "not valid YAML"],
    );
    assert_contains(
        &import_str("{\"retries\": 3}", false, None)
            .unwrap_err()
            .to_string(),
        &["neither a gRPC service config", "nor an Envoy retry policy"],
    );
}
