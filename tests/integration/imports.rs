//! Importing gRPC service configs and Envoy retry policies: each shipped config imports to the
//! settings its client runs with, and whatever the simulator cannot model is refused by name.

use std::path::Path;

use retrystorm::control::aws_retry_quota::AwsRetryQuotaConfig;
use retrystorm::control::circuit_breaker::{BreakerWindow, CircuitBreakerConfig};
use retrystorm::control::connection_pool::ConnectionPoolConfig;
use retrystorm::control::grpc_throttling::GrpcThrottlingConfig;
use retrystorm::control::retry_budget::{ConcurrencyBudgetConfig, WindowedBudgetConfig};
use retrystorm::control::{ControlConfig, ControlKind};
use retrystorm::import::load;
use retrystorm::import::{import_file, import_str, yaml_limits};
use retrystorm::model::{Deadline, Model};
use retrystorm::retry::backoff::Jitter;
use retrystorm::retry::retry_after::RetryAfterMode;
use retrystorm::scenario::ImportPart;

use crate::support::{assert_contains, model_importing};

/// The part of a shipped config its examples read, where it has several: the `retrystorm
/// import` flag and the scenario field that choose it.
const SHIPPED_PARTS: [(&str, &str, &str, &str); 2] = [
    (
        "istio-reviews-virtualservice.yaml",
        "--route",
        "import_route",
        "default",
    ),
    (
        "resilience4j-application.yml",
        "--instance",
        "import_instance",
        "payment",
    ),
];

/// The shipped configs a service's fleet imports (`fleet.import`), not a policy.
const SHIPPED_FLEET_CONFIGS: [&str; 1] = ["istio-reviews-fleet-destinationrule.yaml"];

/// Every config in `scenarios/configs/` imports, and `retrystorm import`'s table for it reads
/// back as a valid policy with exactly the imported settings: the printed `[[policy]]`, loaded,
/// resolves to the same table as the scenario that imports the config.
#[test]
fn every_shipped_config_imports() {
    let mut count = 0;
    for entry in std::fs::read_dir("scenarios/configs").unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_str().unwrap().to_string();
        if SHIPPED_FLEET_CONFIGS.contains(&file.as_str()) {
            continue;
        }
        let part = SHIPPED_PARTS.iter().find(|(name, ..)| *name == file);
        let imported = import_file(
            &path,
            part.map(|(_, _, field, name)| ImportPart {
                field,
                name: name.to_string(),
            })
            .as_ref(),
        )
        .unwrap_or_else(|error| panic!("{error}"));
        assert!(
            !imported.notes.is_empty(),
            "{}: notes say how it was mapped",
            path.display()
        );
        let mut args = vec![path.to_str().unwrap(), "--name", "p"];
        if let Some((_, flag, _, name)) = part {
            args.extend([*flag, *name]);
        }
        let output = retrystorm_import(&args);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let table = String::from_utf8(output.stdout).unwrap();
        let head = "name = \"x\"\nduration = \"1s\"\n[clients]\ncount = 1\nrate = 1.0\n[upstream]\nworkers = 1\nservice_time = \"1ms\"\n";
        let printed =
            retrystorm::import::load_str(&format!("{head}{table}"), "roundtrip.toml", &[])
                .unwrap_or_else(|error| panic!("{}: {error}\n{table}", path.display()));
        let choose = part
            .map(|(_, _, field, name)| format!("{field} = \"{name}\"\n"))
            .unwrap_or_default();
        let importing = retrystorm::import::load_str(
            &format!("{head}[[policy]]\nname = \"p\"\nimport = \"{file}\"\n{choose}"),
            "scenarios/configs/importing.toml",
            &[],
        )
        .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(
            toml::to_string(&printed.policy[0]).unwrap(),
            toml::to_string(&importing.policy[0]).unwrap(),
            "{}",
            path.display()
        );
        count += 1;
    }
    assert!(count >= 10);
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
    assert_eq!(policy.attempt_timeout, retrystorm::base::time::Micros::MAX);
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
    // Envoy's previous_hosts predicate with host_selection_retry_max_attempts: the policy's
    // previous_hosts; without the attempts, Envoy's default of 1.
    let avoiding = |attempts: &str| {
        model_importing(
            "hosts.yaml",
            &format!(
                "retry_policy:\n  retry_on: 5xx\n  retry_host_predicate:\n    - name: envoy.retry_host_predicates.previous_hosts\n{attempts}"
            ),
        )
        .users
        .policy
        .previous_hosts
    };
    assert_eq!(avoiding("  host_selection_retry_max_attempts: 3\n"), 3);
    assert_eq!(avoiding(""), 1);
    assert_eq!(policy.previous_hosts, 0);
    // Envoy's default max_requests: 1024 requests in flight per Envoy; a written one wins.
    assert_eq!(
        policy.controls[1].config,
        ControlConfig::ConnectionPool(ConnectionPoolConfig {
            max_requests: 1024,
            ..ConnectionPoolConfig::default()
        })
    );
    // The pool an Envoy config with these circuit-breaker `thresholds` imports to.
    let pool_of = |thresholds: &str| {
        model_importing(
            "pool.yaml",
            &format!(
                "retry_policy:\n  retry_on: 5xx\ncircuit_breakers:\n  thresholds:\n    - {thresholds}\n"
            ),
        )
        .users
        .policy
        .controls[1]
            .config
            .clone()
    };
    assert_eq!(
        pool_of("max_requests: 512"),
        ControlConfig::ConnectionPool(ConnectionPoolConfig {
            max_requests: 512,
            ..ConnectionPoolConfig::default()
        })
    );
    // max_connections or max_pending_requests make the pool HTTP/1.1, the other at 1024.
    assert_eq!(
        pool_of("max_connections: 100"),
        ControlConfig::ConnectionPool(ConnectionPoolConfig {
            max_requests: 1024,
            max_connections: Some(100),
            max_pending: Some(1024),
        })
    );
    // Without circuit_breakers, Envoy's default max_retries = 3 caps concurrent retries, and
    // its default max_requests = 1024 the requests in flight.
    let defaults = model_of("envoy-default-retries.json");
    assert_eq!(
        defaults.users.policy.controls[1].config,
        ControlConfig::ConnectionPool(ConnectionPoolConfig {
            max_requests: 1024,
            ..ConnectionPoolConfig::default()
        })
    );
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
        &envoy(
            "retry_policy:\n  retry_on: 5xx\n  retry_host_predicate:\n    - name: envoy.retry_host_predicates.omit_canary_hosts\n",
        ),
        &[
            "retry_policy.retry_host_predicate[0].name",
            "not simulated",
            "previous_hosts",
        ],
    );
    assert_contains(
        &envoy(
            "retry_policy:\n  retry_on: 5xx\ncircuit_breakers:\n  thresholds:\n    - max_connection_pools: 10\n",
        ),
        &[
            "circuit_breakers.thresholds[0].max_connection_pools",
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
        &[
            "not a config read here",
            "gRPC service config",
            "Istio VirtualService",
            "Linkerd ServiceProfile",
            "resilience4j",
            "AWS shared config file",
        ],
    );
}

/// The anchored list of the fan-out below, and `aliases` aliases of it under `x`.
fn fan_out(aliases: usize) -> String {
    let strings: Vec<String> = (0..1000).map(|i| format!("s{i}")).collect();
    format!(
        "retry_policy:\n  retry_on: 5xx\nlist: &a [{}]\nx: [\n{}]\n",
        strings.join(","),
        vec!["*a"; aliases].join(",\n")
    )
}

/// A flat alias fan-out (issue 23: one anchored list of 1,000 strings aliased 100,000 times,
/// a 319 KB file that built 10^8 values and aborted at 4 GB) is refused at the alias that takes
/// the document past 2^20 values, before any value is built; nested billion laughs were
/// already refused by serde_norway, a fan-out was not.
#[test]
fn a_yaml_alias_fan_out_is_refused_at_the_alias() {
    // 1,001 values per alias (the list and its strings) after the 1,008 of the rest: the
    // 1,047th alias, on line 4 + 1,047, crosses 1,048,576.
    let message = import_str(&fan_out(2_000), true, None)
        .unwrap_err()
        .to_string();
    assert_contains(
        &message,
        &[
            "line 1051, column 1",
            "the alias *a repeats 1001 values",
            "more than 1048576 values",
        ],
    );
    let message = import_str(&fan_out(100_000), true, None)
        .unwrap_err()
        .to_string();
    assert_contains(&message, &["line 1051, column 1", "*a repeats"]);
    // Under the limit the aliases are read (and `list` and `x` refused as unknown fields).
    let message = import_str(&fan_out(3), true, None).unwrap_err().to_string();
    assert_contains(&message, &["list: unknown field"]);
}

/// YAML nesting is refused at the first node deeper than 128 levels, before libyaml scans the
/// rest: its scanner checks every open flow level at every token, so 64 K `[` took 10.5 s and
/// 64 K `{a: ` more than 30 s before serde_norway's limit was reached. The work is counted as
/// the parser's events read, which stay at the 129 levels whatever follows.
#[test]
fn yaml_nesting_is_refused_before_the_rest_is_scanned() {
    for (opening, column_step) in [("[", 1), ("{a: ", 4), ("[a, ", 4)] {
        let text = format!("retry_policy:\n  x: {}", opening.repeat(65_536));
        let refusal = yaml_limits::check(&text).unwrap_err();
        assert_eq!(
            (refusal.line, refusal.column),
            (2, 6 + 126 * column_step),
            "{opening}"
        );
        assert!(refusal.events < 400, "{opening}: {refusal:?}");
        assert_contains(
            &import_str(&text, true, None).unwrap_err().to_string(),
            &[
                "line 2, column",
                "nested more than 128 sequences or mappings",
            ],
        );
    }
    let fine = format!(
        "retry_policy:\n  retry_on: 5xx\nx: {}1{}\n",
        "[".repeat(127),
        "]".repeat(127)
    );
    assert_contains(
        &import_str(&fine, true, None).unwrap_err().to_string(),
        &["x: unknown field"],
    );
}

/// A config is a regular file of at most 4 MiB, as a scenario is (issue 23: `/dev/zero`,
/// `/dev/urandom` and a 1 GB file were read whole, 1 GB of memory, and a FIFO blocked
/// forever), for `retrystorm import` and a policy's `import` alike. The kind of file is
/// checked before it is opened, as opening a FIFO for reading blocks.
#[test]
fn configs_are_bounded_regular_files() {
    let folder = std::env::temp_dir().join("retrystorm-import-files");
    std::fs::create_dir_all(&folder).unwrap();
    let fifo = folder.join("fifo.json");
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    assert_contains(
        &import_file(&fifo, None).unwrap_err().to_string(),
        &["fifo.json: cannot read the config: a FIFO (named pipe), not a regular file"],
    );
    assert_contains(
        &import_file(Path::new("/dev/zero"), None)
            .unwrap_err()
            .to_string(),
        &["/dev/zero: cannot read the config: a device, not a regular file"],
    );
    let large = folder.join("large.json");
    std::fs::write(&large, vec![b' '; 4 * 1024 * 1024 + 1]).unwrap();
    assert_contains(
        &import_file(&large, None).unwrap_err().to_string(),
        &["large.json: cannot read the config: larger than 4 MiB"],
    );
    let scenario = folder.join("s.toml");
    std::fs::write(&scenario, "name = \"x\"\nduration = \"1s\"\n[clients]\ncount = 1\nrate = 1.0\n[upstream]\nworkers = 1\nservice_time = \"1ms\"\n[[policy]]\nname = \"a\"\nimport = \"fifo.json\"\n").unwrap();
    assert_contains(
        &load(&scenario, &[]).unwrap_err().to_string(),
        &[
            "s.toml:11:10:",
            "import \"fifo.json\"",
            "a FIFO (named pipe)",
        ],
    );
}

/// A key written twice in one object is refused where it repeats, naming it, in JSON and YAML
/// (issue 23: both readers kept the last silently, so a reader of the file and the simulation
/// could see different values; TOML scenarios already refuse a duplicate).
#[test]
fn duplicate_keys_are_refused_where_they_repeat() {
    let json =
        "{\"retryThrottling\": {\"maxTokens\": 10,\n  \"tokenRatio\": 0.1,\n  \"maxTokens\": 5}}";
    assert_contains(
        &import_str(json, false, None).unwrap_err().to_string(),
        &["line 3, column 13", "duplicate key \"maxTokens\""],
    );
    let yaml = "retry_policy:\n  retry_on: 5xx\n  num_retries: 2\n  num_retries: 5\n";
    assert_contains(
        &import_str(yaml, true, None).unwrap_err().to_string(),
        &["line 4, column 3", "duplicate key \"num_retries\""],
    );
    // The same key in two objects is no duplicate.
    let two = "retry_policy: {retry_on: 5xx}\ncircuit_breakers: {thresholds: [{max_retries: 2}]}\n";
    assert!(import_str(two, true, None).is_ok());
}

/// The output of `retrystorm import` on `args`.
fn retrystorm_import(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .arg("import")
        .args(args)
        .output()
        .unwrap()
}

/// Control characters of a config's key are escaped in the error printed (issue 23: a key
/// containing `ESC[2J` cleared the terminal), and a newline in one cannot start a line that
/// looks like the program's; the program's own line breaks stay.
#[test]
fn control_characters_in_errors_are_escaped() {
    let folder = std::env::temp_dir().join("retrystorm-import-escapes");
    std::fs::create_dir_all(&folder).unwrap();
    let config = folder.join("keys.json");
    std::fs::write(
        &config,
        "{\"retryThrottling\": {\"maxTokens\": 10, \"tokenRatio\": 0.1, \"x\\u001b[2J\\nretrystorm: ok\": 1}}",
    )
    .unwrap();
    let output = retrystorm_import(&[config.to_str().unwrap()]);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(!output.status.success());
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    assert_contains(
        &stderr,
        &["retryThrottling.x\\u{1b}[2J\\nretrystorm: ok: unknown field"],
    );
}

/// `--name` is checked as the scenario loader checks a policy's name, at the flag, with what
/// is valid (issue 23: `--name ''` printed a policy the loader refused).
#[test]
fn an_import_name_is_checked_at_the_flag() {
    let config = "scenarios/configs/grpc-service-config.json";
    for name in ["", "a\tb", &"n".repeat(101)] {
        let output = retrystorm_import(&["--name", name, config]);
        assert_eq!(output.status.code(), Some(2), "{name:?}");
        assert_contains(
            &String::from_utf8(output.stderr).unwrap(),
            &[
                "--name",
                "use 1 to 100 characters, without control characters",
            ],
        );
    }
    let output = retrystorm_import(&["--name", "ours", config]);
    assert!(output.status.success());
    assert_contains(
        &String::from_utf8(output.stdout).unwrap(),
        &["name = \"ours\""],
    );
}

/// `--method` reads the entry gRPC applies to the method: "When determining which
/// MethodConfig to use for a given RPC, the most specific match wins"
/// (grpc-proto, `grpc/service_config/service_config.proto`, `MethodConfig.name`): a name with
/// the service and method, else one with the service alone ("the defaults for all methods for
/// the specified service"), else one with an empty service ("the default for all methods").
/// Issue 23: `--method pkg.Svc/Method` found only an exact name.
#[test]
fn a_method_falls_back_to_its_service_then_the_default_entry() {
    let retry = |attempts: u64| {
        format!(
            r#""retryPolicy": {{"maxAttempts": {attempts}, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}"#
        )
    };
    let config = format!(
        r#"{{"methodConfig": [
            {{"name": [{{}}], {}}},
            {{"name": [{{"service": "pkg.Svc"}}], {}}},
            {{"name": [{{"service": "pkg.Svc", "method": "Get"}}], {}}}
        ]}}"#,
        retry(2),
        retry(3),
        retry(4)
    );
    let chosen = |method: &str| {
        let imported = import_str(&config, false, Some(&method_part(method))).unwrap();
        (imported.max_attempts, imported.source)
    };
    let (attempts, source) = chosen("pkg.Svc/Get");
    assert_eq!(attempts, Some(3));
    assert_contains(
        &source,
        &["methodConfig[2]", "naming this service and method"],
    );
    let (attempts, source) = chosen("pkg.Svc/Put");
    assert_eq!(attempts, Some(2));
    assert_contains(&source, &["methodConfig[1] (pkg.Svc)", "the service alone"]);
    let (attempts, source) = chosen("other.Svc/Get");
    assert_eq!(attempts, Some(1));
    assert_contains(&source, &["methodConfig[0] ({})", "the default entry"]);
    let (attempts, _) = chosen("pkg.Svc");
    assert_eq!(attempts, Some(2));
    // Without a default entry, a method of another service is refused with the names.
    let no_default = config.replacen(r#"{"name": [{}],"#, r#"{"name": [{"service": "x"}],"#, 1);
    assert_contains(
        &import_str(&no_default, false, Some(&method_part("other.Svc/Get")))
            .unwrap_err()
            .to_string(),
        &[
            "no entry applies to \"other.Svc/Get\"",
            "x, pkg.Svc, pkg.Svc/Get",
        ],
    );
}

/// `import_method = method`.
fn method_part(method: &str) -> ImportPart {
    ImportPart {
        field: "import_method",
        name: method.to_string(),
    }
}

/// `text` imported as YAML, `part` naming its part (`("import_route", "default")`).
fn import_yaml(
    text: &str,
    part: Option<(&'static str, &str)>,
) -> Result<retrystorm::import::Imported, String> {
    let part = part.map(|(field, name)| ImportPart {
        field,
        name: name.to_string(),
    });
    import_str(text, true, part.as_ref()).map_err(|error| error.to_string())
}

/// The model of a scenario whose one policy imports `config` from `scenarios/configs/`, with
/// `choose` (an `import_*` line) and the scenario's `extra` settings.
fn model_choosing(config: &str, choose: &str) -> Model {
    let scenario = retrystorm::import::load_str(
        &format!(
            "name = \"x\"\nduration = \"1s\"\n[clients]\ncount = 1\nrate = 1.0\n[upstream]\nworkers = 1\nservice_time = \"1ms\"\n[[policy]]\nname = \"p\"\nimport = \"{config}\"\n{choose}\n"
        ),
        "scenarios/configs/s.toml",
        &[],
    )
    .unwrap_or_else(|error| panic!("{error}"));
    Model::new(&scenario, &scenario.policy[0])
}

/// Bookinfo's reviews route (`default`): `attempts: 3` retries, the `perTryTimeout` of 2 s
/// each, the route `timeout` of 10 s as the deadline; `retryOn` `gateway-error` (502-504 and
/// every failure without a response) with the bare `503` added as a retriable status code
/// (istiod's `parseRetryOn`); Envoy's backoff of 25 ms to 250 ms fully jittered; Istio's
/// `previous_hosts` with 5 host selection attempts (`retryIgnorePreviousHosts` defaults to
/// true); Retry-After ignored; no retry limit, as istiod sets Envoy's circuit breakers to
/// 2^32 - 1 (`getDefaultCircuitBreakerThresholds`).
#[test]
fn an_istio_virtual_service_route_maps_to_its_envoy_retry_policy() {
    let model = model_choosing(
        "istio-reviews-virtualservice.yaml",
        "import_route = \"default\"",
    );
    let policy = &model.users.policy;
    assert_eq!(policy.max_attempts, 3);
    assert_eq!(policy.attempt_timeout, 2_000_000);
    assert_eq!(policy.deadline, Deadline::Budget(10_000_000));
    assert_eq!(policy.retryable.iter().collect::<Vec<_>>(), [502, 503, 504]);
    assert_eq!(policy.retryable_transport.iter().count(), 3);
    assert_eq!(
        (policy.base_ms, policy.cap_ms, policy.multiplier),
        (25.0, 250.0, 2.0)
    );
    assert_eq!(policy.jitter, Jitter::Full);
    assert_eq!(policy.previous_hosts, 5);
    assert_eq!(policy.retry_after, RetryAfterMode::Ignore);
    assert!(policy.controls.is_empty());
    // The other route has no retries block: Istio's default policy, 2 retries on
    // connect-failure (refused connections) and no status (503 excluded since 1.24); its gRPC
    // conditions match no HTTP response; no timeout, so the scenario's deadline (5 s).
    let default = model_choosing(
        "istio-reviews-virtualservice.yaml",
        "import_route = \"jason\"",
    );
    let policy = &default.users.policy;
    assert_eq!(policy.max_attempts, 2);
    assert_eq!(policy.retryable.iter().count(), 0);
    assert_eq!(
        policy.retryable_transport.iter().collect::<Vec<_>>(),
        [retrystorm::scenario::TransportError::Refused]
    );
    assert_eq!(policy.previous_hosts, 5);
    assert_eq!(policy.deadline, Deadline::Budget(5_000_000));
    let notes = import_yaml(
        &std::fs::read_to_string("scenarios/configs/istio-reviews-virtualservice.yaml").unwrap(),
        Some(("import_route", "jason")),
    )
    .unwrap()
    .notes
    .join("\n");
    assert_contains(
        &notes,
        &[
            "Istio's default policy",
            "503 is excluded since Istio 1.24",
            "unavailable, cancelled: gRPC conditions",
        ],
    );
    // attempts 0 (or unset) disables retries; retryIgnorePreviousHosts false drops the
    // predicate; backoff sets Envoy's base and a cap of 10 times it.
    let vs = |retries: &str| {
        import_yaml(
            &format!(
                "kind: VirtualService\nspec:\n  http:\n  - route: []\n    retries:\n{retries}"
            ),
            None,
        )
    };
    assert_eq!(vs("      attempts: 0\n").unwrap().max_attempts, Some(0));
    let custom = vs("      attempts: 1\n      retryIgnorePreviousHosts: false\n      backoff: 100ms\n      retryOn: 5xx\n").unwrap();
    assert_eq!(custom.previous_hosts, None);
    assert_eq!(
        (custom.base.unwrap().micros(), custom.cap.unwrap().micros()),
        (100_000, 1_000_000)
    );
    assert_eq!(
        custom.retryable_statuses.unwrap(),
        (500..=599).collect::<Vec<_>>()
    );
}

/// Istio's refusals name the VirtualService's field: a fault, an unknown condition (through
/// the Envoy mapping, named as Istio writes it), several routes without `import_route`, a
/// route that is not there.
#[test]
fn istio_refusals_name_the_field() {
    let route = |body: &str| {
        import_yaml(
            &format!("kind: VirtualService\nspec:\n  http:\n  - name: a\n{body}"),
            None,
        )
        .unwrap_err()
    };
    assert_contains(
        &route("    fault:\n      abort: {}\n"),
        &["spec.http[0].fault", "not simulated"],
    );
    assert_contains(
        &route("    retries:\n      attempts: 2\n      retryOn: 5xx,retriable-headers\n"),
        &[
            "spec.http[0].retries.retryOn",
            "response headers are not simulated",
        ],
    );
    assert_contains(
        &route("    retries:\n      attempts: 2\n      perTryTimeout: 2 seconds\n"),
        &["spec.http[0].retries.perTryTimeout", "not a duration"],
    );
    let text =
        std::fs::read_to_string("scenarios/configs/istio-reviews-virtualservice.yaml").unwrap();
    assert_contains(
        &import_yaml(&text, None).unwrap_err(),
        &["several routes (jason, default)", "import_route"],
    );
    assert_contains(
        &import_yaml(&text, Some(("import_route", "nope"))).unwrap_err(),
        &["no route named \"nope\"", "jason, default"],
    );
    assert_contains(
        &import_yaml(&text, Some(("import_instance", "default"))).unwrap_err(),
        &[
            "import_instance does not choose within an Istio VirtualService",
            "import_route",
        ],
    );
}

/// The DestinationRule's connection pool: `maxConnections` 100 and `http1MaxPendingRequests`
/// 10 make an HTTP/1.1 pool, `http2MaxRequests` unset is Istio's unlimited (read as the
/// simulator's most, 10^9); `maxRetries` 4 caps concurrent retries at 4 (a 0% Envoy budget);
/// a rule with the fleet's half alone is refused, pointing at the fleet's import.
#[test]
fn an_istio_destination_rule_maps_its_connection_pool() {
    let model = model_of("istio-reviews-destinationrule.yaml");
    assert_eq!(
        model.users.policy.controls[0].config,
        ControlConfig::ConnectionPool(ConnectionPoolConfig {
            max_requests: 1_000_000_000,
            max_connections: Some(100),
            max_pending: Some(10),
        })
    );
    let rule = |traffic: &str| {
        import_yaml(
            &format!("kind: DestinationRule\nspec:\n  host: r\n  trafficPolicy:\n{traffic}"),
            None,
        )
    };
    let retries = rule("    connectionPool:\n      http:\n        maxRetries: 4\n").unwrap();
    assert_eq!(retries.controls.len(), 1);
    assert_eq!(
        retries.controls[0].min_concurrency.map(|m| m.get()),
        Some(4)
    );
    assert_contains(
        &rule("    outlierDetection:\n      consecutive5xxErrors: 7\n").unwrap_err(),
        &[
            "spec.trafficPolicy.connectionPool: required",
            "this rule's outlierDetection are its service's fleet's",
        ],
    );
}

/// A scenario whose one upstream is a fleet written `fleet` (a TOML inline table), with the
/// `--set` `overrides`, loaded as `label` (its imports are read from that folder).
fn fleet_scenario_at(
    fleet: &str,
    overrides: &[&str],
    label: &str,
) -> Result<retrystorm::scenario::Scenario, String> {
    let overrides: Vec<retrystorm::scenario::Override> =
        overrides.iter().map(|set| set.parse().unwrap()).collect();
    retrystorm::import::load_str(
        &format!(
            "name = \"x\"\nduration = \"1s\"\n[clients]\ncount = 1\nrate = 1.0\n[upstream]\nworkers = 1\nservice_time = \"1ms\"\nfleet = {fleet}\n"
        ),
        label,
        &overrides,
    )
    .map_err(|error| error.to_string())
}

/// [`fleet_scenario_at`] as `scenarios/s.toml`, so that its imports are read from
/// `scenarios/configs/`.
fn fleet_scenario(
    fleet: &str,
    overrides: &[&str],
) -> Result<retrystorm::scenario::Scenario, String> {
    fleet_scenario_at(fleet, overrides, "scenarios/s.toml")
}

/// The resolved text of [`fleet_scenario`] with `fleet`.
fn resolved_fleet(fleet: &str) -> String {
    fleet_scenario(fleet, &[])
        .unwrap_or_else(|error| panic!("{error}"))
        .to_resolved_toml()
}

/// The scenario whose fleet of 6 imports `rule` (a DestinationRule's text, written next to it
/// in a fresh folder `folder`).
fn fleet_importing_rule(
    folder: &str,
    rule: &str,
) -> Result<retrystorm::scenario::Scenario, String> {
    let folder = crate::support::fresh_folder(folder);
    std::fs::write(folder.join("rule.yaml"), rule).unwrap();
    fleet_scenario_at(
        r#"{ instances = 6, import = "rule.yaml" }"#,
        &[],
        folder.join("s.toml").to_str().unwrap(),
    )
}

/// The shipped fleet DestinationRule gives the fleet exactly what it writes and Istio's
/// defaults for the rest (Istio's `OutlierDetection` reference: `maxEjectionPercent` 10,
/// `minHealthPercent` 0): round robin, 3 failures in a row, a 5 s interval, a 60 s base
/// ejection, at most 10 % ejected, no panic threshold; the resolved scenario writes these out,
/// has no `import`, and reloads where the config is not. An empty `outlierDetection` is
/// Istio's defaults (5 in a row, 10 s, 30 s, 10 %, 0 %), and no `loadBalancer` Istio's default
/// balancer, LEAST_REQUEST (a secondary reading of istiod's `cluster_traffic_policy.go`).
#[test]
fn an_istio_destination_rule_gives_a_fleet_its_balancer_and_ejections() {
    let resolved = resolved_fleet(
        r#"{ instances = 6, import = "configs/istio-reviews-fleet-destinationrule.yaml" }"#,
    );
    assert_eq!(
        resolved,
        resolved_fleet(
            r#"{ instances = 6, load_balancer = "round-robin", outlier_detection = { consecutive_5xx = 3, interval = "5s", base_ejection_time = "60s", max_ejection_percent = 10, panic_threshold = 0 } }"#
        )
    );
    assert!(!resolved.contains("import"), "{resolved}");
    let reloaded = retrystorm::import::load_str(&resolved, "/nowhere/scenario.toml", &[])
        .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(reloaded.to_resolved_toml(), resolved);
    let defaults = fleet_importing_rule(
        "fleet-import-defaults",
        "kind: DestinationRule\nspec:\n  host: r\n  trafficPolicy:\n    outlierDetection: {}\n",
    )
    .unwrap();
    assert_eq!(
        defaults.to_resolved_toml(),
        resolved_fleet(
            r#"{ instances = 6, load_balancer = "least-request", outlier_detection = { consecutive_5xx = 5, interval = "10s", base_ejection_time = "30s", max_ejection_percent = 10, panic_threshold = 0 } }"#
        )
    );
}

/// What the fleet table writes wins over the DestinationRule, key by key; `--set` reaches
/// `fleet.import` as it reaches every field.
#[test]
fn a_fleets_own_settings_win_over_its_import() {
    assert_eq!(
        resolved_fleet(
            r#"{ instances = 6, load_balancer = "random", import = "configs/istio-reviews-fleet-destinationrule.yaml" }"#
        ),
        resolved_fleet(
            r#"{ instances = 6, load_balancer = "random", outlier_detection = { consecutive_5xx = 3, interval = "5s", base_ejection_time = "60s", panic_threshold = 0 } }"#
        )
    );
    assert_eq!(
        resolved_fleet(
            r#"{ instances = 6, outlier_detection = { consecutive_5xx = 9 }, import = "configs/istio-reviews-fleet-destinationrule.yaml" }"#
        ),
        resolved_fleet(r#"{ instances = 6, outlier_detection = { consecutive_5xx = 9 } }"#)
    );
    let set = fleet_scenario(
        "{ instances = 6 }",
        &["upstream.fleet.import=configs/istio-reviews-fleet-destinationrule.yaml"],
    )
    .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(
        set.to_resolved_toml(),
        resolved_fleet(
            r#"{ instances = 6, import = "configs/istio-reviews-fleet-destinationrule.yaml" }"#
        )
    );
}

/// What a fleet cannot do is refused by the DestinationRule's file and field, at the
/// scenario's `import` line (line 9); a consistent hash on a header is the ring hash.
#[test]
fn fleet_import_refusals_name_the_field() {
    let rule = |traffic: &str| {
        fleet_importing_rule(
            "fleet-import-refusals",
            &format!("kind: DestinationRule\nspec:\n  host: r\n  trafficPolicy:\n{traffic}"),
        )
    };
    let cases: [(&str, &[&str]); 7] = [
        (
            "    outlierDetection:\n      splitExternalLocalOriginErrors: true\n",
            &[
                "s.toml:9:",
                "rule.yaml: spec.trafficPolicy.outlierDetection.splitExternalLocalOriginErrors: not simulated",
            ],
        ),
        (
            "    outlierDetection:\n      consecutiveGatewayErrors: 3\n",
            &["spec.trafficPolicy.outlierDetection.consecutiveGatewayErrors: not simulated"],
        ),
        (
            "    outlierDetection:\n      consecutive5xxErrors: 0\n",
            &[
                "spec.trafficPolicy.outlierDetection.consecutive5xxErrors: 0 turns ejection on 5xx off",
            ],
        ),
        (
            "    outlierDetection:\n      consecutiveLocalOriginFailures: 2\n",
            &["spec.trafficPolicy.outlierDetection.consecutiveLocalOriginFailures: not simulated"],
        ),
        (
            "    loadBalancer:\n      simple: PASSTHROUGH\n",
            &["spec.trafficPolicy.loadBalancer.simple: not simulated: PASSTHROUGH"],
        ),
        (
            "    loadBalancer:\n      consistentHash:\n        useSourceIp: true\n",
            &["spec.trafficPolicy.loadBalancer.consistentHash.useSourceIp: not simulated"],
        ),
        (
            "    loadBalancer:\n      simple: LEAST_REQEST\n",
            &[
                "spec.trafficPolicy.loadBalancer.simple",
                "ROUND_ROBIN, RANDOM, LEAST_REQUEST",
            ],
        ),
    ];
    for (traffic, parts) in cases {
        assert_contains(&rule(traffic).unwrap_err(), parts);
    }
    let hashed = rule("    loadBalancer:\n      consistentHash:\n        httpHeaderName: x-user\n")
        .unwrap_or_else(|error| panic!("{error}"));
    let resolved = hashed.to_resolved_toml();
    assert!(
        resolved.contains("load_balancer = \"ring-hash\""),
        "{resolved}"
    );
}

/// The books demo's ServiceProfile: `GET /books.json` is retryable, so a 5xx (Linkerd's
/// default failure class) is retried at once (no backoff: the legacy proxy's policy returns a
/// ready future), resets and refused connections are not (an error is not retryable there),
/// as many times as the budget allows (max_attempts the simulator's most, 100); the route
/// timeout of 300 ms is the whole request's deadline; the budget is Linkerd's defaults, 20%,
/// 10 per second, 10 s. The POST route is not retryable and gets Linkerd's default timeout,
/// 10 s.
#[test]
fn a_linkerd_service_profile_route_maps_to_its_budget() {
    let model = model_choosing(
        "linkerd-web-serviceprofile.yaml",
        "import_route = \"GET /books.json\"",
    );
    let policy = &model.users.policy;
    assert_eq!(policy.max_attempts, 100);
    assert_eq!((policy.base_ms, policy.cap_ms), (0.0, 0.0));
    assert_eq!(
        policy.retryable.iter().collect::<Vec<_>>(),
        (500..=599).collect::<Vec<_>>()
    );
    assert_eq!(policy.retryable_transport.iter().count(), 0);
    assert_eq!(policy.deadline, Deadline::Budget(300_000));
    assert_eq!(policy.attempt_timeout, u64::MAX);
    assert_eq!(
        policy.controls[0].config,
        ControlConfig::WindowedBudget(WindowedBudgetConfig {
            percent: 20.0,
            min_per_s: 10,
            ttl: 10_000_000
        })
    );
    let post = model_choosing(
        "linkerd-web-serviceprofile.yaml",
        "import_route = \"POST /books\"",
    );
    assert_eq!(post.users.policy.max_attempts, 0);
    assert_eq!(post.users.policy.deadline, Deadline::Budget(10_000_000));
    // A written budget: retryRatio 0.5 is 50%.
    let profile = import_yaml(
        "kind: ServiceProfile\nspec:\n  routes:\n  - name: r\n    isRetryable: true\n  retryBudget:\n    retryRatio: 0.5\n    minRetriesPerSecond: 3\n    ttl: 5s\n",
        None,
    )
    .unwrap();
    let budget = &profile.controls[0];
    assert_eq!(
        (
            budget.percent.map(|p| p.get()),
            budget.min_per_s.map(|m| m.get()),
            budget.ttl.as_ref().map(|t| t.get_ref().micros())
        ),
        (Some(50.0), Some(3), Some(5_000_000))
    );
    assert_contains(
        &import_yaml("kind: ServiceProfile\nspec:\n  routes:\n  - name: r\n    isRetryable: true\n  retryBudget:\n    ttl: 1500ms\n", None).unwrap_err(),
        &["spec.retryBudget.ttl", "whole seconds"],
    );
}

/// Linkerd 2.16+ annotations: `retry.linkerd.io/http: 5xx,429` retries 429 and 500-599,
/// `limit: "3"` three times, `timeout: 400ms` each attempt (and a timed-out attempt is
/// retried), `timeout.linkerd.io/request: 2s` the whole request; the backoff the policy
/// controller sends, 25 ms doubling to 250 ms with jitter ratio 1 (`jitter = "linkerd"`).
/// Without `limit` Linkerd's default is 1, and 0 means unset; `grpc: unavailable` is what a
/// gRPC client makes of 429, 502, 503 and 504.
#[test]
fn linkerd_retry_annotations_map_to_the_proxy_behaviour() {
    let model = model_of("linkerd-authors-httproute.yaml");
    let policy = &model.users.policy;
    assert_eq!(policy.max_attempts, 3);
    let mut expected = vec![429];
    expected.extend(500..=599);
    assert_eq!(policy.retryable.iter().collect::<Vec<_>>(), expected);
    assert_eq!(
        policy.retryable_transport.iter().collect::<Vec<_>>(),
        [retrystorm::scenario::TransportError::Timeout]
    );
    assert_eq!(policy.attempt_timeout, 400_000);
    assert_eq!(policy.deadline, Deadline::Budget(2_000_000));
    assert_eq!(
        (policy.base_ms, policy.cap_ms, policy.multiplier),
        (25.0, 250.0, 2.0)
    );
    assert_eq!(policy.jitter, Jitter::Linkerd);
    let annotated = |annotations: &str| {
        import_yaml(
            &format!("kind: Service\nmetadata:\n  name: s\n  annotations:\n{annotations}"),
            None,
        )
    };
    assert_eq!(
        annotated("    retry.linkerd.io/http: 5xx\n")
            .unwrap()
            .max_attempts,
        Some(1)
    );
    assert_eq!(
        annotated("    retry.linkerd.io/http: 5xx\n    retry.linkerd.io/limit: \"0\"\n")
            .unwrap()
            .max_attempts,
        Some(1)
    );
    assert_eq!(
        annotated("    retry.linkerd.io/grpc: unavailable\n")
            .unwrap()
            .retryable_statuses
            .unwrap(),
        [429, 502, 503, 504]
    );
    assert_eq!(
        annotated("    retry.linkerd.io/http: gateway-error,409-410\n")
            .unwrap()
            .retryable_statuses
            .unwrap(),
        [409, 410, 502, 503, 504]
    );
    assert_eq!(annotated("    other: x\n").unwrap().max_attempts, Some(0));
    assert_contains(
        &annotated("    retry.linkerd.io/http: 5xx,oops\n").unwrap_err(),
        &[
            "metadata.annotations.retry.linkerd.io/http",
            "\"oops\" is not 5xx",
        ],
    );
    assert_contains(
        &annotated("    retry.linkerd.io/limit: \"2\"\n").unwrap_err(),
        &["metadata.annotations.retry.linkerd.io/http", "required"],
    );
    assert_contains(
        &annotated("    balancer.linkerd.io/failure-accrual: consecutive\n").unwrap_err(),
        &["failure-accrual", "fleet.outlier_detection"],
    );
}

/// The payment instance: `maxAttempts: 4` counts the first call, so 3 retries; 200 ms doubling
/// (`exponentialBackoffMultiplier: 2`) to `exponentialMaxWaitDuration` 2 s, randomized by the
/// default factor 0.5 (`jitter = "resilience4j"`, U(0.5 d, 1.5 d)); every 4xx and 5xx and every
/// failure without a response retried (no retryExceptions); the circuit breaker of the default
/// config (count window 50, at least 20 calls, 50% failures, 30 s open, 5 half-open) with the
/// instance's own slow-call settings (80% over 2 s); the time limiter's 1 s per attempt.
#[test]
fn a_resilience4j_instance_maps_retry_breaker_and_time_limit() {
    let model = model_choosing(
        "resilience4j-application.yml",
        "import_instance = \"payment\"",
    );
    let policy = &model.users.policy;
    assert_eq!(policy.max_attempts, 3);
    assert_eq!(
        (policy.base_ms, policy.cap_ms, policy.multiplier),
        (200.0, 2000.0, 2.0)
    );
    assert_eq!(policy.jitter, Jitter::Resilience4j);
    assert_eq!(
        policy.retryable.iter().collect::<Vec<_>>(),
        (400..=599).collect::<Vec<_>>()
    );
    assert_eq!(policy.retryable_transport.iter().count(), 3);
    assert_eq!(policy.attempt_timeout, 1_000_000);
    assert_eq!(policy.retry_after, RetryAfterMode::Ignore);
    assert_eq!(
        policy.controls[0].config,
        ControlConfig::CircuitBreaker(CircuitBreakerConfig {
            failure_rate: 50.0,
            slow_call_rate: 80.0,
            slow_call_duration: 2_000_000,
            window: BreakerWindow::Calls(50),
            minimum_calls: 20,
            wait_open: 30_000_000,
            half_open_calls: 5,
        })
    );
    // inventory: the default config's 3 attempts of a constant 500 ms, no jitter, no breaker
    // of its own, no time limiter.
    let inventory = model_choosing(
        "resilience4j-application.yml",
        "import_instance = \"inventory\"",
    );
    let policy = &inventory.users.policy;
    assert_eq!(policy.max_attempts, 2);
    assert_eq!(
        (policy.base_ms, policy.cap_ms, policy.multiplier),
        (500.0, 500.0, 1.0)
    );
    assert_eq!(policy.jitter, Jitter::None);
    assert!(policy.controls.is_empty());
    assert_eq!(policy.attempt_timeout, u64::MAX);
}

/// resilience4j's defaults and Spring's spellings: `max-attempts` is `maxAttempts`; exponential
/// backoff without a maximum grows by the default 1.5 to the last retry's wait (100 ms x
/// 1.5^3 = 337.5 ms for 5 attempts); ISO-8601 and plain-millisecond durations; a TIME_BASED
/// window is whole seconds; and refusals name the field.
#[test]
fn resilience4j_defaults_spellings_and_refusals() {
    let retry = |settings: &str| {
        import_yaml(
            &format!("resilience4j:\n  retry:\n    instances:\n      a:\n{settings}"),
            None,
        )
    };
    let grown = retry("        max-attempts: 5\n        wait-duration: PT0.1S\n        enable-exponential-backoff: true\n").unwrap();
    assert_eq!(grown.max_attempts, Some(4));
    assert_eq!(grown.multiplier, Some(1.5));
    assert_eq!(
        (grown.base.unwrap().micros(), grown.cap.unwrap().micros()),
        (100_000, 337_500)
    );
    assert_eq!(
        retry("        waitDuration: 250\n")
            .unwrap()
            .base
            .unwrap()
            .micros(),
        250_000
    );
    let defaults =
        retry("        {}\n").unwrap_or_else(|_| retry("        maxAttempts: 3\n").unwrap());
    assert_eq!(defaults.max_attempts, Some(2));
    assert_eq!(defaults.base.unwrap().micros(), 500_000);
    assert_contains(
        &retry("        retryExceptions:\n        - java.io.IOException\n").unwrap_err(),
        &[
            "resilience4j.retry.instances.a.retryExceptions",
            "exception classes are not simulated",
        ],
    );
    assert_contains(
        &retry("        enableRandomizedWait: true\n        randomizedWaitFactor: 0.3\n")
            .unwrap_err(),
        &["randomizedWaitFactor", "only resilience4j's default, 0.5"],
    );
    assert_contains(
        &retry("        maxAtempts: 3\n").unwrap_err(),
        &["maxAtempts", "did you mean `maxAttempts`?"],
    );
    assert_contains(
        &retry("        baseConfig: missing\n").unwrap_err(),
        &["baseConfig", "no resilience4j.retry.configs.missing"],
    );
    let breaker = import_yaml(
        "resilience4j:\n  circuitbreaker:\n    instances:\n      b:\n        slidingWindowType: TIME_BASED\n        slidingWindowSize: 10\n",
        None,
    )
    .unwrap();
    assert_eq!(breaker.max_attempts, Some(0));
    assert_eq!(
        breaker.controls[0]
            .window
            .as_ref()
            .map(|w| w.get_ref().micros()),
        Some(10_000_000)
    );
    assert_eq!(
        breaker.controls[0].minimum_calls.map(|m| m.get()),
        Some(100)
    );
    assert_contains(
        &import_yaml(
            "resilience4j:\n  retry:\n    retryAspectOrder: 1\n    instances:\n      a: {}\n",
            None,
        )
        .unwrap_err(),
        &[
            "resilience4j.retry.retryAspectOrder",
            "Spring's default order",
        ],
    );
    let text = std::fs::read_to_string("scenarios/configs/resilience4j-application.yml").unwrap();
    assert_contains(
        &import_yaml(&text, None).unwrap_err(),
        &[
            "several instances (\"inventory\", \"payment\")",
            "import_instance",
        ],
    );
}

/// The AWS profiles: standard mode's 3 attempts (2 retries) unless written, full jitter over
/// `min(2^(n-1), 20)` s (base 1 s, doubling, cap 20 s), 429/500/502/503/504 and every failure
/// without a response retried, the retry quota (500, 5, 10, 1); adaptive adds the CUBIC
/// bucket; legacy is botocore's (5 attempts, uncapped `rand x 2^(n-1)`: cap 8 s, the 4th
/// retry's); no retry_mode is refused, as the default is each SDK's own.
#[test]
fn aws_profiles_map_to_the_sdk_retry_modes() {
    let model = model_of("aws-config");
    let policy = &model.users.policy;
    assert_eq!(policy.max_attempts, 2);
    assert_eq!(
        (policy.base_ms, policy.cap_ms, policy.multiplier),
        (1000.0, 20_000.0, 2.0)
    );
    assert_eq!(policy.jitter, Jitter::Full);
    assert_eq!(
        policy.retryable.iter().collect::<Vec<_>>(),
        [429, 500, 502, 503, 504]
    );
    assert_eq!(policy.retryable_transport.iter().count(), 3);
    assert_eq!(
        policy.controls[0].config,
        ControlConfig::AwsRetryQuota(AwsRetryQuotaConfig {
            capacity: 500,
            retry_cost: 5,
            timeout_cost: 10,
            success_refund: 1
        })
    );
    assert_eq!(policy.controls.len(), 1);
    let batch = model_choosing("aws-config", "import_profile = \"batch\"");
    assert_eq!(batch.users.policy.max_attempts, 4);
    let throttled = model_choosing("aws-config", "import_profile = \"throttled\"");
    assert_eq!(throttled.users.policy.max_attempts, 2);
    assert_eq!(
        throttled.users.policy.controls[1].config,
        ControlConfig::AwsAdaptive
    );
    let ini = |text: &str, profile: Option<&str>| {
        let part = profile.map(|name| ImportPart {
            field: "import_profile",
            name: name.into(),
        });
        import_str(text, false, part.as_ref()).map_err(|e| e.to_string())
    };
    let legacy = ini("[default]\nretry_mode = legacy\n", None).unwrap();
    assert_eq!(legacy.max_attempts, Some(4));
    assert_eq!(legacy.cap.unwrap().micros(), 8_000_000);
    assert!(legacy.controls.is_empty());
    assert_contains(
        &legacy.notes.join("\n"),
        &["botocore's", "Other SDKs' legacy modes differ"],
    );
    assert_contains(
        &ini("[default]\nregion = x\n", None).unwrap_err(),
        &["[default] retry_mode", "each SDK's own"],
    );
    assert_contains(
        &ini("[default]\nretry_mode = fast\n", None).unwrap_err(),
        &["line 2", "not legacy, standard or adaptive"],
    );
    assert_contains(
        &ini("[default]\nretry_mode = standard\nmax_attempts = 0\n", None).unwrap_err(),
        &["line 3", "from 1 to 101"],
    );
    assert_contains(
        &ini("[default]\nretry_mode\n", None).unwrap_err(),
        &["line 2", "key = value"],
    );
    assert_contains(
        &ini(
            "[default]\nretry_mode = standard\nretry_mode = legacy\n",
            None,
        )
        .unwrap_err(),
        &["line 3", "written twice"],
    );
    assert_contains(
        &ini("[profile a]\nretry_mode = standard\n", None).unwrap_err(),
        &["no profile \"default\"", "\"a\""],
    );
    // A secret in another setting is never echoed.
    let error = ini(
        "[default]\naws_secret_access_key = SECRET\nretry_mode = x\n",
        None,
    )
    .unwrap_err();
    assert!(!error.contains("SECRET"), "{error}");
}

/// `import_route` and the other choosers reach a scenario's policy through `--set` as any
/// field does, and two of them at once are refused at the `import`.
#[test]
fn import_parts_are_set_from_the_command_line() {
    let text = "name = \"x\"\nduration = \"1s\"\n[clients]\ncount = 1\nrate = 1.0\n[upstream]\nworkers = 1\nservice_time = \"1ms\"\n[[policy]]\nname = \"p\"\nimport = \"aws-config\"\n";
    let set = |value: &str| value.parse::<retrystorm::scenario::Override>().unwrap();
    let scenario = retrystorm::import::load_str(
        text,
        "scenarios/configs/s.toml",
        &[set("policy.import_profile=batch")],
    )
    .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(scenario.policy[0].max_attempts.get(), 4);
    let error = retrystorm::import::load_str(
        text,
        "scenarios/configs/s.toml",
        &[
            set("policy.import_profile=batch"),
            set("policy.0.import_route=r"),
        ],
    )
    .unwrap_err()
    .to_string();
    assert_contains(
        &error,
        &["import_route and import_profile choose within different kinds of config"],
    );
}

/// The charges scenario of `server_failures.rs`, its one policy importing `config` (written
/// beside it as `file`) with `extra` lines: 100 POSTs a second without idempotency key, 30% of
/// them answered 500 after the write committed.
fn unkeyed_posts_importing(
    folder: &str,
    file: &str,
    config: &str,
    extra: &str,
) -> retrystorm::run::ScenarioRun {
    let folder = crate::support::fresh_folder(folder);
    std::fs::write(folder.join(file), config).unwrap();
    let text = format!(
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
[upstream]
workers = 50
service_time = "10ms"
errors = {{ rate = 0.3, status = 500, at = "after-service", committed = true }}
[[policy]]
name = "imported"
import = "{file}"
{extra}
"#
    );
    let scenario =
        retrystorm::import::load_str(&text, folder.join("s.toml").to_str().unwrap(), &[])
            .unwrap_or_else(|error| panic!("{error}"));
    crate::support::run(&scenario)
}

/// The users' retries and duplicate writes over a run.
fn retries_and_duplicates(run: &retrystorm::run::ScenarioRun) -> (u64, u64) {
    let policy = &run.policies[0];
    let retries = policy.measurements.buckets.iter().map(|b| b.retries).sum();
    (retries, policy.summary.duplicate_writes)
}

/// An imported Envoy policy retries an unkeyed POST, as Envoy's router does: "HTTP headers
/// which must be present in the request for retries to be attempted" (Envoy's
/// `route_components.proto`, `RetryPolicy.retriable_request_headers`,
/// https://www.envoyproxy.io/docs/envoy/latest/api-v3/config/route/v3/route_components.proto)
/// is the only restriction on which requests are retried, and "If a retry policy is not
/// configured ... Envoy will not retry a failed request" the only other (router filter docs,
/// x-envoy-max-retries): no method rule. So every 500 after a committed write is retried and
/// writes again: the duplicates equal the retries, exactly (no loss, no timeout), where the
/// article's rule, `unsafe_retries = false` written beside the import, retries none and writes
/// nothing twice.
#[test]
fn an_imported_envoy_policy_retries_unkeyed_posts_and_writes_twice() {
    let envoy = "retry_policy:\n  retry_on: \"5xx\"\n  num_retries: 2\n";
    let (retries, duplicates) = retries_and_duplicates(&unkeyed_posts_importing(
        "envoy-posts",
        "envoy.yaml",
        envoy,
        "",
    ));
    assert!(retries > 100, "retries {retries}");
    assert_eq!(duplicates, retries);
    let (retries, duplicates) = retries_and_duplicates(&unkeyed_posts_importing(
        "envoy-posts-article",
        "envoy.yaml",
        envoy,
        "unsafe_retries = false",
    ));
    assert_eq!((retries, duplicates), (0, 0));
}

/// Every importer sets what its system retries, whatever the method (`unsafe_retries`), and
/// its notes say so; a DestinationRule's connection pool speaks of no retries and leaves the
/// scenario's rule. The systems' words:
/// - Envoy: only `retriable_request_headers`, "HTTP headers which must be present in the
///   request for retries to be attempted", restricts the retried requests
///   (https://www.envoyproxy.io/docs/envoy/latest/api-v3/config/route/v3/route_components.proto).
/// - Istio generates that Envoy `retry_policy` (`pilot/pkg/networking/core/route/retry/retry.go`,
///   `ConvertPolicy`), and `HTTPRetry` has no field for request headers
///   (https://istio.io/latest/docs/reference/config/networking/virtual-service/#HTTPRetry).
/// - Linkerd: "Retries are supported for all idempotent requests, whatever verb they use"
///   (https://linkerd.io/2.11/tasks/configuring-retries/), idempotent being what the user
///   marks retryable; "Client proxies will then retry failed requests to that Service or
///   route" and "If a request has a body larger than 64KiB then it will not be retried"
///   (https://linkerd.io/2/reference/retries/).
/// - gRPC: "gRPC retries do not provide a mechanism to specifically mark a method as
///   idempotent"; "An RPC becomes committed ... The client receives Response-Headers"; "If the
///   application code closes the stream with an error before sending headers or any response
///   messages, gRPC servers should send the error in Trailers-Only"
///   (https://github.com/grpc/proposal/blob/master/A6-client-retries.md).
/// - AWS SDKs: "When a request to an AWS service fails due to a transient error or throttling,
///   the SDK can automatically retry the request"
///   (https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html); "If you
///   don't specify a client token, the Amazon Web Services SDK automatically generates one"
///   (e.g. https://docs.aws.amazon.com/sdk-for-kotlin/api/latest/dsql/aws.sdk.kotlin.services.dsql.model/-update-cluster-request/client-token.html).
/// - resilience4j: `RetryConfig.DEFAULT_RECORD_FAILURE_PREDICATE = throwable -> true`
///   (resilience4j-retry, `RetryConfig.java`): every exception of the decorated call is
///   retried (https://resilience4j.readme.io/docs/retry).
#[test]
fn every_importer_retries_the_methods_its_system_retries() {
    /// The field that chooses a part of a config, and the part's name.
    type Choice = (&'static str, &'static str);
    let cases: [(&str, Option<Choice>, &str); 7] = [
        (
            "envoy-retry-policy.yaml",
            None,
            "Envoy's router retries any request",
        ),
        (
            "istio-reviews-virtualservice.yaml",
            Some(("import_route", "default")),
            "Envoy's router retries any request",
        ),
        (
            "linkerd-web-serviceprofile.yaml",
            Some(("import_route", "GET /books.json")),
            "Linkerd retries the requests of a route marked retryable, whatever their method",
        ),
        (
            "linkerd-authors-httproute.yaml",
            None,
            "Linkerd retries the requests of a route marked retryable, whatever their method",
        ),
        (
            "grpc-service-config.json",
            None,
            "gRPC retries an RPC whatever its method until it is committed",
        ),
        ("aws-config", None, "write idempotency_key = true"),
        (
            "resilience4j-application.yml",
            Some(("import_instance", "payment")),
            "resilience4j retries whatever call it decorates",
        ),
    ];
    for (file, part, note) in cases {
        let imported = import_file(
            &Path::new("scenarios/configs").join(file),
            part.map(|(field, name)| ImportPart {
                field,
                name: name.to_string(),
            })
            .as_ref(),
        )
        .unwrap_or_else(|error| panic!("{file}: {error}"));
        assert_eq!(imported.unsafe_retries, Some(true), "{file}");
        assert!(
            imported.notes.iter().any(|n| n.contains(note) && n.contains("unsafe_retries = false beside the import")),
            "{file}: {:?}",
            imported.notes
        );
    }
    let pool = import_file(
        Path::new("scenarios/configs/istio-reviews-destinationrule.yaml"),
        None,
    )
    .unwrap();
    assert_eq!(pool.unsafe_retries, None);
    assert!(
        !model_of("istio-reviews-destinationrule.yaml")
            .users
            .policy
            .unsafe_retries
    );
}

/// Istio's zeros are unset (SYSTEMS.md 11.3; istiod's `cluster_traffic_policy.go` writes
/// `maxConnections`, `http2MaxRequests`, `http1MaxPendingRequests` and `maxRetries` into Envoy
/// only when `> 0`, and `maxEjectionPercent` only when `> 0`, else Envoy's default of 10%):
/// a pool of zeros limits nothing (no control at all), a `maxRetries` of 0 no retry limit, a
/// `maxEjectionPercent` of 0 is 10%; the notes say which zeros were read as unset, and the
/// resolved scenario reloads.
#[test]
fn istios_zeros_are_unset() {
    let rule = "kind: DestinationRule\nspec:\n  host: r\n  trafficPolicy:\n    connectionPool:\n      tcp:\n        maxConnections: 0\n      http:\n        http2MaxRequests: 0\n        http1MaxPendingRequests: 0\n        maxRetries: 0\n    outlierDetection:\n      maxEjectionPercent: 0\n";
    let pool = import_yaml(rule, None).unwrap();
    assert!(pool.controls.is_empty(), "{:?}", pool.controls);
    assert!(
        pool.notes.iter().any(|n| n.contains(
            "http.maxRetries, http.http2MaxRequests, http.http1MaxPendingRequests, tcp.maxConnections 0: istiod applies these only when above 0"
        )),
        "{:?}",
        pool.notes
    );
    let mixed = import_yaml(
        "kind: DestinationRule\nspec:\n  host: r\n  trafficPolicy:\n    connectionPool:\n      tcp:\n        maxConnections: 0\n      http:\n        http2MaxRequests: 50\n",
        None,
    )
    .unwrap();
    assert_eq!(mixed.controls.len(), 1);
    assert_eq!(mixed.controls[0].max_requests.map(|m| m.get()), Some(50));
    assert_eq!(mixed.controls[0].max_connections, None);
    let fleet = fleet_importing_rule("istio-zero-ejection", rule).unwrap_or_else(|e| panic!("{e}"));
    let resolved = fleet.to_resolved_toml();
    assert_eq!(
        resolved,
        resolved_fleet(
            r#"{ instances = 6, load_balancer = "least-request", outlier_detection = { consecutive_5xx = 5, interval = "10s", base_ejection_time = "30s", max_ejection_percent = 10, panic_threshold = 0 } }"#
        )
    );
    retrystorm::import::load_str(&resolved, "/nowhere/scenario.toml", &[])
        .unwrap_or_else(|error| panic!("{error}"));
}

/// One DestinationRule serves both imports: a policy's reads `connectionPool` and leaves
/// `loadBalancer` and `outlierDetection` to the fleet with a note, the fleet's reads those and
/// leaves `connectionPool` to the callers; `retrystorm import` prints the policy and, commented
/// below it, the fleet line `fleet.import` gives.
#[test]
fn one_destination_rule_serves_a_policy_and_a_fleet() {
    let rule = "kind: DestinationRule\nmetadata:\n  name: ledger\nspec:\n  host: ledger\n  trafficPolicy:\n    connectionPool:\n      http:\n        http2MaxRequests: 64\n    loadBalancer:\n      simple: RANDOM\n    outlierDetection:\n      consecutive5xxErrors: 3\n";
    let policy = import_yaml(rule, None).unwrap();
    assert_eq!(policy.controls[0].max_requests.map(|m| m.get()), Some(64));
    assert!(policy.notes.iter().any(|n| n.starts_with("loadBalancer and outlierDetection left to the service's fleet")), "{:?}", policy.notes);
    let fleet =
        fleet_importing_rule("one-rule-both-halves", rule).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        fleet.to_resolved_toml(),
        resolved_fleet(
            r#"{ instances = 6, load_balancer = "random", outlier_detection = { consecutive_5xx = 3, interval = "10s", base_ejection_time = "30s", max_ejection_percent = 10, panic_threshold = 0 } }"#
        )
    );
    let folder = crate::support::fresh_folder("one-rule-cli");
    let path = folder.join("ledger.yaml");
    std::fs::write(&path, rule).unwrap();
    let output = retrystorm_import(&[path.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = String::from_utf8(output.stdout).unwrap();
    assert_contains(
        &printed,
        &[
            "[[policy]]",
            "# - connectionPool left to the callers",
            "# fleet = { load_balancer = \"random\", outlier_detection = { always_eject_one_host = false, base_ejection_time = \"30s\", consecutive_5xx = 3",
        ],
    );
    let fleet_only =
        retrystorm_import(&["scenarios/configs/istio-reviews-fleet-destinationrule.yaml"]);
    assert!(fleet_only.status.success());
    let printed = String::from_utf8(fleet_only.stdout).unwrap();
    assert!(
        printed.contains("\nfleet = { load_balancer = \"round-robin\""),
        "{printed}"
    );
    assert!(!printed.contains("[[policy]]"), "{printed}");
}
