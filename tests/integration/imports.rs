//! Importing gRPC service configs and Envoy retry policies: each shipped config imports to the
//! settings its client runs with, and whatever the simulator cannot model is refused by name.

use std::path::Path;

use retrystorm::control::connection_pool::ConnectionPoolConfig;
use retrystorm::control::grpc_throttling::GrpcThrottlingConfig;
use retrystorm::control::retry_budget::ConcurrencyBudgetConfig;
use retrystorm::control::{ControlConfig, ControlKind};
use retrystorm::import::load;
use retrystorm::import::{import_file, import_str, yaml_limits};
use retrystorm::model::{Deadline, Model};
use retrystorm::retry::backoff::Jitter;
use retrystorm::retry::retry_after::RetryAfterMode;

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
        retrystorm::import::load_str(&scenario, "roundtrip.toml", &[])
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
        &["neither a gRPC service config", "nor an Envoy retry policy"],
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
        let imported = import_str(&config, false, Some(method)).unwrap();
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
        &import_str(&no_default, false, Some("other.Svc/Get"))
            .unwrap_err()
            .to_string(),
        &[
            "no entry applies to \"other.Svc/Get\"",
            "x, pkg.Svc, pkg.Svc/Get",
        ],
    );
}
