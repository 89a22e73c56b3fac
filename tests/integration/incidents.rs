//! The incident recovery is measured from: declared in `[incident]`, or inferred from the
//! services' capacity curves and never from the load curve; refused outside the run; and
//! recovery measured finer than a bucket.

use retrystorm::base::time::MICROS_PER_SECOND;
use retrystorm::vocabulary::metric::Recovery;

use crate::support::{assert_contains, error_with, run, scenario};

/// A slow diurnal ramp (load 0.9 to 1.0 over 140 s, the issue's) with a 10 s outage of the
/// upstream inside it, from 60 s to 70 s, refusing requests with 503.
const RAMP_WITH_OUTAGE: &str = r#"
name = "ramp-with-outage"
duration = "140s"
bucket = "1s"

[clients]
count = 200
workload = "open"
rate = 1.0
load = [{ at = "0s", factor = 0.9 }, { at = "140s", factor = 1.0 }]
deadline = "5s"
attempt_timeout = "1s"

[[clients.operations]]
name = "read"
method = "GET"

[upstream]
workers = 10
service_time = "10ms"
outage = "reject"
capacity = [
  { at = "60s", factor = 1.0 },
  { at = "60s", factor = 0.0 },
  { at = "70s", factor = 0.0 },
  { at = "70s", factor = 1.0 },
]

[[policy]]
name = "retry twice"
max_attempts = 2
"#;

/// The ramp is the workload, not the incident: the outage is (issue 22). Before, the ramp
/// made the whole run the incident, so the peak after it was taken over the drain alone and
/// the goodput "during the incident" was the whole run's. Now the incident is the outage's
/// 60-70 s: nothing succeeds in it (every request is refused), what comes after it is the
/// ramp's full load (at least the 0.9 x 200 = 180 operations a second it starts from), and
/// recovery counts from 70 s.
#[test]
fn a_slow_load_ramp_is_the_workload_and_the_outage_inside_it_is_the_incident() {
    let scenario = scenario(RAMP_WITH_OUTAGE);
    let run = run(&scenario);
    assert_eq!(
        run.model.incident,
        Some((60 * MICROS_PER_SECOND, Some(70 * MICROS_PER_SECOND)))
    );
    let summary = &run.policies[0].summary;
    assert!(summary.peak_after_rps >= 180.0, "{summary:?}");
    assert!(summary.incident_goodput_rps < 1.0, "{summary:?}");
    assert!(summary.incident_failed > 1000, "{summary:?}");
    match summary.recovery_s {
        Recovery::After(seconds) => assert!(seconds < 5.0, "{summary:?}"),
        other => panic!("{other:?}"),
    }
    // The resolved scenario says which window it used.
    assert!(
        scenario
            .to_resolved_toml()
            .contains("[incident]\nstart = \"1m\"\nend = \"70s\"\n"),
        "{}",
        scenario.to_resolved_toml()
    );
}

/// A load spike is the incident when the scenario says so, `from = "clients.load"`, as the
/// bundled load-spike scenarios do; or a window given as `start` and `end`, which wins over
/// the capacity curve.
#[test]
fn a_declared_incident_is_the_one_measured() {
    let spike = RAMP_WITH_OUTAGE
        .replace(
            r#"load = [{ at = "0s", factor = 0.9 }, { at = "140s", factor = 1.0 }]"#,
            r#"load = [{ at = "20s", factor = 1.0 }, { at = "20s", factor = 3.0 }, { at = "22s", factor = 3.0 }, { at = "22s", factor = 1.0 }]"#,
        )
        .replace(
            "[clients]",
            "[incident]\nfrom = \"clients.load\"\n\n[clients]",
        );
    let run_of_spike = run(&scenario(&spike));
    assert_eq!(
        run_of_spike.model.incident,
        Some((20 * MICROS_PER_SECOND, Some(22 * MICROS_PER_SECOND)))
    );
    let window = RAMP_WITH_OUTAGE.replace(
        "[clients]",
        "[incident]\nstart = \"65s\"\nend = \"70s\"\n\n[clients]",
    );
    let declared = run(&scenario(&window));
    assert_eq!(
        declared.model.incident,
        Some((65 * MICROS_PER_SECOND, Some(70 * MICROS_PER_SECOND)))
    );
    // Half the outage is the incident: the same failures per second in half the time.
    let inferred = run(&scenario(RAMP_WITH_OUTAGE));
    let (half, whole) = (
        declared.policies[0].summary.incident_failed,
        inferred.policies[0].summary.incident_failed,
    );
    assert!(half < whole && half * 3 > whole, "{half} of {whole}");
}

/// An incident that starts at or after the end of arrivals lies outside the run: before, it
/// gave `recovery_s = 0.0`; now it is refused at the line that puts it there, inferred from
/// a capacity point or declared.
#[test]
fn an_incident_after_the_run_is_refused_at_its_line() {
    let late_outage = error_with(
        RAMP_WITH_OUTAGE,
        r#"duration = "140s""#,
        r#"duration = "60s""#,
    );
    assert_contains(
        &late_outage,
        &[
            "bad.toml:23:",
            "the incident starts at 1m, at or after the end of arrivals (duration = \"1m\")",
        ],
    );
    let late_declared = error_with(
        RAMP_WITH_OUTAGE,
        "[clients]",
        "[incident]\nstart = \"140s\"\nend = \"150s\"\n\n[clients]",
    );
    assert_contains(
        &late_declared,
        &["bad.toml:7:", "the incident starts at 140s"],
    );
    let unknown = error_with(
        RAMP_WITH_OUTAGE,
        "[clients]",
        "[incident]\nfrom = \"upstream.capacty\"\n\n[clients]",
    );
    assert_contains(
        &unknown,
        &[
            "bad.toml:7:",
            "did you mean \"upstream.capacity\"?",
            "valid: clients.load, upstream.capacity",
        ],
    );
    let both = error_with(
        RAMP_WITH_OUTAGE,
        "[clients]",
        "[incident]\nfrom = \"clients.load\"\nstart = \"1s\"\n\n[clients]",
    );
    assert_contains(&both, &["either `from`", "not both"]);
}

/// Recovery finer than a bucket: with 1 s buckets every recovery used to be a whole number
/// of seconds. Here it is exact to the 10 ms step of the health series. The upstream refuses
/// everything from 10 s to 12 s and nothing is retried; each way takes exactly 250 ms, so the
/// last refused request was sent just before 11.75 s and its failure arrives in
/// [12.24 s, 12.25 s); requests that reach the upstream from 12 s on succeed. With a health
/// rule that tolerates no failure, every window from 12.25 s on is healthy and the one from
/// 12.24 s is not: recovery is 0.25 s (it was 1.0 s, the next whole bucket).
#[test]
fn recovery_is_measured_finer_than_a_bucket() {
    let scenario = scenario(
        r#"
name = "sub-bucket-recovery"
duration = "20s"
bucket = "1s"

[recovery]
max_failed = 0.0
max_retries = 0.0

[clients]
count = 2000
workload = "open"
rate = 1.0
deadline = "5s"
attempt_timeout = "1s"

[[clients.operations]]
name = "read"
method = "GET"

[network]
latency = "250ms"

[upstream]
workers = 100
service_time = "1ms"
outage = "reject"
capacity = [
  { at = "10s", factor = 1.0 },
  { at = "10s", factor = 0.0 },
  { at = "12s", factor = 0.0 },
  { at = "12s", factor = 1.0 },
]

[[policy]]
name = "no retries"
max_attempts = 0
"#,
    );
    let summary = &run(&scenario).policies[0].summary;
    assert_eq!(summary.recovery_s, Recovery::After(0.25), "{summary:?}");
}
