//! Bad topologies: every error names the place to fix and what would be valid.

use retrystorm::import::load_str;
use retrystorm::model::Model;
use retrystorm::scenario::Override;

use crate::support::{self, assert_contains};

/// Lines are numbered in the comments, for the expected positions below.
const TOPOLOGY: &str = r#"name = "layers"
duration = "10s"
[clients]
count = 100
rate = 1.0
calls = "edge"
[[service]]
name = "edge"
workers = 10
service_time = "1ms"
calls = ["api"]
[[service]]
name = "api"
workers = 10
service_time = "1ms"
calls = ["db"]
retry = { max_attempts = 2, deadline = "2s" }
[[service]]
name = "db"
workers = 10
service_time = "5ms"
[[policy]]
name = "a"
"#;

/// The error for `TOPOLOGY` with `from` replaced by `to`.
fn error_with(from: &str, to: &str) -> String {
    support::error_with(TOPOLOGY, from, to)
}

#[test]
fn the_base_topology_is_valid_and_its_defaults_are_written_out() {
    let scenario = load_str(TOPOLOGY, "ok.toml", &[]).unwrap();
    let resolved = scenario.to_resolved_toml();
    // The edge's retry policy and failure status were not written: the resolved file has them.
    assert!(resolved.contains("failure_status = 503"), "{resolved}");
    assert!(resolved.contains("deadline = \"propagate\""), "{resolved}");
    assert!(resolved.contains("deadline = \"2s\""), "{resolved}");
    let again = load_str(&resolved, "resolved.toml", &[]).unwrap();
    assert_eq!(again.to_resolved_toml(), resolved);
    let model = Model::new(&scenario, &scenario.policy[0]);
    assert_eq!(model.entry, 0);
    assert_eq!(model.services[1].calls, [2]);
    assert_eq!(
        model.services[1].downstream.as_ref().unwrap().max_attempts,
        2
    );
}

#[test]
fn calls_name_services_that_exist() {
    assert_contains(
        &error_with("calls = [\"db\"]", "calls = [\"dbb\"]"),
        &[
            "bad.toml:16:10:",
            "no service named \"dbb\"",
            "did you mean \"db\"?",
            "edge, api, db",
        ],
    );
    assert_contains(
        &error_with("calls = \"edge\"", "calls = \"egde\""),
        &["bad.toml:6:9:", "no service named \"egde\""],
    );
}

#[test]
fn a_cycle_is_named_in_full_where_it_closes() {
    let message = error_with(
        "service_time = \"5ms\"",
        "service_time = \"5ms\"\ncalls = [\"edge\"]",
    );
    assert_contains(
        &message,
        &[
            "bad.toml:22:10:",
            "calls make a cycle: edge -> api -> db -> edge",
        ],
    );
    let itself = error_with("calls = [\"db\"]", "calls = [\"api\"]");
    assert_contains(&itself, &["cycle: api -> api"]);
}

#[test]
fn a_service_nothing_calls_is_an_error() {
    let message = error_with("calls = [\"api\"]\n", "");
    assert_contains(
        &message,
        &[
            "bad.toml:12:8:",
            "service \"api\" is never called",
            "entry point \"edge\"",
        ],
    );
}

#[test]
fn names_are_required_unique_and_usable_in_keys() {
    assert_contains(
        &error_with("name = \"db\"", "name = \"api\""),
        &["bad.toml:19:8:", "\"api\" is used twice"],
    );
    assert_contains(
        &error_with("name = \"db\"", "name = \"d.b\""),
        &["bad.toml:19:8:", "not a valid service name"],
    );
    assert_contains(
        &error_with("[[service]]\nname = \"db\"\n", "[[service]]\n"),
        &["bad.toml:18:1:", "a [[service]] needs a `name`"],
    );
}

#[test]
fn the_entry_point_is_named_when_there_are_several_services() {
    assert_contains(
        &error_with("calls = \"edge\"\n", ""),
        &["with several [[service]] tables", "calls = \"edge\""],
    );
}

#[test]
fn topology_keys_belong_to_services_that_call_others() {
    assert_contains(
        &error_with(
            "service_time = \"5ms\"",
            "service_time = \"5ms\"\nretry = { max_attempts = 1 }",
        ),
        &["bad.toml:22:9:", "service \"db\" calls no other service"],
    );
    assert_contains(
        &error_with(
            "service_time = \"5ms\"",
            "service_time = \"5ms\"\nfailure_status = 500",
        ),
        &["bad.toml:22:18:", "no downstream call can fail"],
    );
    assert_contains(
        &error_with("deadline = \"2s\"", "deadline = \"later\""),
        &["bad.toml:17:", "neither \"propagate\"", "fresh budget"],
    );
    assert_contains(
        &error_with("max_attempts = 2", "max_attempts = 101"),
        &["bad.toml:17:", "expected an integer from 0 to 100"],
    );
}

#[test]
fn upstream_and_services_do_not_mix() {
    let upstream = "[upstream]\nworkers = 1\nservice_time = \"1ms\"\n";
    assert_contains(
        &error_with("[[policy]]", &format!("{upstream}[[policy]]")),
        &["bad.toml:7:1:", "cannot be mixed"],
    );
    let single = r#"name = "one"
duration = "1s"
[clients]
count = 1
rate = 1.0
[upstream]
workers = 1
service_time = "1ms"
calls = ["db"]
"#;
    let message = load_str(single, "one.toml", &[]).unwrap_err().to_string();
    assert_contains(
        &message,
        &["one.toml:9:10:", "`calls` belongs to a [[service]] table"],
    );
    let neither = "name = \"none\"\nduration = \"1s\"\n[clients]\ncount = 1\nrate = 1.0\n";
    let message = load_str(neither, "none.toml", &[]).unwrap_err().to_string();
    assert_contains(
        &message,
        &["an [upstream] table (one service) or [[service]] tables"],
    );
}

#[test]
fn worst_case_amplification_is_bounded() {
    // Clients up to 4, edge up to 4 (its default), api up to 101: 1,616 at the db is fine...
    let wide = TOPOLOGY.replace(
        "retry = { max_attempts = 2, deadline = \"2s\" }",
        "retry = { max_attempts = 100 }",
    );
    load_str(&wide, "wide.toml", &[]).unwrap();
    // ... and 101 sends at every layer, 1,030,301, is too many.
    let deep = TOPOLOGY
        .replace(
            "calls = [\"api\"]",
            "calls = [\"api\"]\nretry = { max_attempts = 100 }",
        )
        .replace(
            "retry = { max_attempts = 2, deadline = \"2s\" }",
            "retry = { max_attempts = 100 }",
        )
        .replace("name = \"a\"", "name = \"a\"\nmax_attempts = 100");
    let message = load_str(&deep, "deep.toml", &[]).unwrap_err().to_string();
    assert_contains(
        &message,
        &[
            "deep.toml:20:8:",
            "1.030301e6 attempts to service \"db\"",
            "at most 1e6",
        ],
    );
}

#[test]
fn set_reaches_services_by_name_and_policies_override_the_topology() {
    let set = |text: &str| text.parse::<Override>().unwrap();
    let scenario = load_str(
        TOPOLOGY,
        "ok.toml",
        &[
            set("service.api.retry.max_attempts=0"),
            set("service.db.workers=3"),
        ],
    )
    .unwrap();
    let model = Model::new(&scenario, &scenario.policy[0]);
    assert_eq!(
        model.services[1].downstream.as_ref().unwrap().max_attempts,
        0
    );
    assert_eq!(model.services[2].workers, 3);
    let message = load_str(
        TOPOLOGY,
        "ok.toml",
        &[set("service.db.retry.max_attempts=1")],
    )
    .unwrap_err()
    .to_string();
    assert_contains(&message, &["calls no other service"]);

    let with_override = |overrides: &str| {
        TOPOLOGY.replace(
            "name = \"a\"\n",
            &format!("name = \"a\"\n[[policy]]\nname = \"b\"\noverrides = {overrides}\n"),
        )
    };
    let text = with_override(r#"{ "service.api.retry.max_attempts" = 0, service.db.workers = 5 }"#);
    let scenario = load_str(&text, "ok.toml", &[]).unwrap();
    let (a, b) = (
        Model::new(&scenario, &scenario.policy[0]),
        Model::new(&scenario, &scenario.policy[1]),
    );
    assert_eq!(a.services[1].downstream.as_ref().unwrap().max_attempts, 2);
    assert_eq!(b.services[1].downstream.as_ref().unwrap().max_attempts, 0);
    assert_eq!((a.services[2].workers, b.services[2].workers), (10, 5));
    // The resolved scenario keeps the overrides and reads back the same.
    let resolved = scenario.to_resolved_toml();
    assert!(
        resolved.contains("\"service.db.workers\" = 5"),
        "{resolved}"
    );
    load_str(&resolved, "resolved.toml", &[]).unwrap();

    for (overrides, parts) in [
        (
            r#"{ "service.apii.workers" = 1 }"#,
            &[
                "bad.toml:26:13:",
                "policy \"b\": overrides:",
                "no service named \"apii\"",
            ][..],
        ),
        (
            r#"{ "clients.count" = 1 }"#,
            &[
                "may override only the topology",
                "service.edge.retry.max_attempts",
            ][..],
        ),
        (
            r#"{ "service.api.workers" = 0 }"#,
            &["service.api.workers=0", "0 is out of range"][..],
        ),
        (
            r#"{ "service.db.calls" = ["edge"] }"#,
            &["calls make a cycle"][..],
        ),
    ] {
        let message = load_str(&with_override(overrides), "bad.toml", &[])
            .unwrap_err()
            .to_string();
        assert_contains(&message, parts);
    }
}
