//! Each bundled scenario teaches a lesson; each test here fails if its lesson is not there.

use std::path::Path;

use retrystorm::run::{PolicyRun, ScenarioRun};
use retrystorm::scenario::load;
use retrystorm::time::MICROS_PER_SECOND;

use crate::support::run;

fn bundled(name: &str) -> ScenarioRun {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{name}.toml"));
    run(&load(&path, &[]).unwrap_or_else(|error| panic!("{error}")))
}

fn policy<'a>(run: &'a ScenarioRun, name: &str) -> &'a PolicyRun {
    run.policies
        .iter()
        .find(|policy| policy.name == name)
        .unwrap_or_else(|| panic!("no policy {name:?}"))
}

/// The highest attempts per second of any bucket starting at or after `from_s`.
fn peak_attempts_rps_from(policy: &PolicyRun, from_s: f64) -> f64 {
    let bucket_s = policy.measurements.bucket as f64 / MICROS_PER_SECOND as f64;
    policy
        .measurements
        .buckets
        .iter()
        .enumerate()
        .filter(|(index, _)| *index as f64 * bucket_s >= from_s)
        .map(|(_, counts)| counts.attempts as f64 / bucket_s)
        .fold(0.0, f64::max)
}

#[test]
fn thundering_herd_without_jitter_the_recovery_is_a_second_wave() {
    let run = bundled("thundering-herd");
    // Capacity starts coming back at t = 14 s.
    let lock_step = peak_attempts_rps_from(policy(&run, "no jitter"), 14.0);
    let jittered = peak_attempts_rps_from(policy(&run, "full jitter"), 14.0);
    assert!(
        lock_step >= 2.0 * jittered,
        "no jitter {lock_step}/s against full jitter {jittered}/s"
    );
}

#[test]
fn rate_limited_api_honouring_retry_after_costs_less_but_exactly_is_lock_step() {
    let run = bundled("rate-limited-api");
    let (ignore, exact, spread) = (
        &policy(&run, "ignore Retry-After").summary,
        &policy(&run, "honor exactly").summary,
        &policy(&run, "honor with jitter").summary,
    );
    assert!(
        exact.amplification <= 0.85 * ignore.amplification,
        "{} vs {}",
        exact.amplification,
        ignore.amplification
    );
    assert!(
        spread.amplification <= 0.7 * ignore.amplification,
        "{} vs {}",
        spread.amplification,
        ignore.amplification
    );
    assert!(
        exact.success_rate >= ignore.success_rate && spread.success_rate >= ignore.success_rate
    );
    // After the burst (10 s to 10.3 s), clients that honour the same whole-second Retry-After
    // come back together every second; spreading above the floor flattens those waves.
    let exact_peak = peak_attempts_rps_from(policy(&run, "honor exactly"), 10.5);
    let spread_peak = peak_attempts_rps_from(policy(&run, "honor with jitter"), 10.5);
    assert!(
        exact_peak >= 1.5 * spread_peak,
        "exact {exact_peak}/s against spread {spread_peak}/s"
    );
    // And the spread clients are through the limiter sooner.
    let last_429 = |name: &str| {
        let measurements = &policy(&run, name).measurements;
        measurements
            .buckets
            .iter()
            .rposition(|counts| counts.rejected_429 > 0)
            .unwrap() as u64
            * measurements.bucket
    };
    assert!(
        last_429("honor with jitter") + 3 * MICROS_PER_SECOND <= last_429("honor exactly"),
        "last 429 at {} µs (spread) and {} µs (exact)",
        last_429("honor with jitter"),
        last_429("honor exactly")
    );
}

#[test]
fn payments_duplicates_come_from_unprotected_retries_and_short_lived_keys() {
    let run = bundled("payments");
    let summary = |name: &str| policy(&run, name).summary.clone();
    assert!(
        summary("naive").duplicate_writes > 1000,
        "naive: {}",
        summary("naive").duplicate_writes
    );
    assert_eq!(summary("article").duplicate_writes, 0);
    assert!(
        summary("article").unknown_results > 1000,
        "the article reports unknown outcomes instead"
    );
    assert!(
        summary("key, 1 s TTL").duplicate_writes > 500,
        "{}",
        summary("key, 1 s TTL").duplicate_writes
    );
    for protected in ["key, 24 h TTL", "status endpoint"] {
        let summary = summary(protected);
        assert_eq!(summary.duplicate_writes, 0, "{protected}");
        assert_eq!(summary.unknown_results, 0, "{protected}");
        assert!(
            summary.success_rate >= 0.999,
            "{protected}: {}",
            summary.success_rate
        );
    }
}

#[test]
fn deadline_belongs_to_the_operation() {
    let run = bundled("deadline");
    let aware = policy(&run, "deadline-aware");
    let fresh = policy(&run, "fresh timeout per attempt");
    // Nothing the deadline-aware client reports as a success took longer than its 2 s; the
    // other "succeeds" long after its caller gave up.
    let slowest_ms =
        |policy: &PolicyRun| policy.measurements.total_latency.quantile(1.0).unwrap() / 1000.0;
    assert!(slowest_ms(aware) <= 2000.0 * 1.001, "{}", slowest_ms(aware));
    assert!(
        fresh.summary.p99_ms.unwrap() > 4000.0,
        "{:?}",
        fresh.summary.p99_ms
    );
    assert!(fresh.summary.amplification >= 1.5 * aware.summary.amplification);
    assert!(fresh.summary.wasted_work_s >= 2.0 * aware.summary.wasted_work_s);
}

#[test]
fn brownout_times_out_and_wastes_work_and_eager_retries_buy_nothing() {
    let run = bundled("brownout");
    let (eager, article) = (
        &policy(&run, "eager").summary,
        &policy(&run, "article").summary,
    );
    for summary in [eager, article] {
        assert!(summary.timeouts > 1000, "{}", summary.timeouts);
        assert!(summary.wasted_work_s > 60.0, "{}", summary.wasted_work_s);
    }
    assert!(
        eager.amplification >= 1.3 * article.amplification,
        "{} vs {}",
        eager.amplification,
        article.amplification
    );
    assert!((eager.success_rate - article.success_rate).abs() < 0.02);
}

#[test]
fn metastable_immediate_retries_sustain_an_overload_that_no_longer_has_a_cause() {
    let run = bundled("metastable");
    let (immediate, backoff) = (
        &policy(&run, "immediate retries").summary,
        &policy(&run, "backoff + jitter").summary,
    );
    assert_eq!(
        immediate.recovery_s, None,
        "immediate retries stay collapsed after the spike"
    );
    assert!(immediate.success_rate < 0.5, "{}", immediate.success_rate);
    let recovery = backoff.recovery_s.expect("backoff with jitter recovers");
    assert!(recovery <= 10.0, "{recovery}");
    assert!(backoff.success_rate > 0.8, "{}", backoff.success_rate);
}

/// Operations that succeeded per second over the buckets starting at or after `from_s`, up to
/// the end of arrivals.
fn goodput_from(policy: &PolicyRun, from_s: f64, until_s: f64) -> f64 {
    let bucket_s = policy.measurements.bucket as f64 / MICROS_PER_SECOND as f64;
    let buckets: Vec<u64> = policy
        .measurements
        .buckets
        .iter()
        .enumerate()
        .filter(|(index, _)| {
            let start = *index as f64 * bucket_s;
            start >= from_s && start < until_s
        })
        .map(|(_, counts)| counts.succeeded)
        .collect();
    buckets.iter().sum::<u64>() as f64 / (buckets.len() as f64 * bucket_s)
}

#[test]
fn retry_layers_retrying_at_every_layer_multiplies_on_the_database_and_keeps_it_down() {
    let run = bundled("retry-layers");
    let every = policy(&run, "every layer retries");
    let clients = policy(&run, "only the clients retry");
    let db = |policy: &PolicyRun| {
        policy
            .services
            .iter()
            .find(|service| service.name == "db")
            .expect("a db")
            .amplification
    };
    // The clients send an operation at most twice: that bounds the db's load per operation when
    // no tier retries; three retrying layers multiply it.
    assert!(db(clients) <= 2.0, "only the clients: {}", db(clients));
    assert!(
        db(every) >= 5.0 * db(clients),
        "db amplification {} against {}",
        db(every),
        db(clients)
    );
    // The headline numbers agree: success, recovery, and goodput after the brownout (from
    // t = 35 s, 3 s after capacity is back, to the end of arrivals).
    assert!(
        every.summary.success_rate + 0.3 < clients.summary.success_rate,
        "success {} against {}",
        every.summary.success_rate,
        clients.summary.success_rate
    );
    assert_eq!(
        every.summary.recovery_s, None,
        "every layer stays collapsed"
    );
    let recovered = clients
        .summary
        .recovery_s
        .expect("only the clients recovers");
    assert!(recovered <= 5.0, "recovery {recovered} s");
    let (after_every, after_clients) = (
        goodput_from(every, 35.0, 60.0),
        goodput_from(clients, 35.0, 60.0),
    );
    assert!(
        after_every < 0.1 * after_clients && after_clients > 1400.0,
        "goodput after the brownout: {after_every}/s against {after_clients}/s"
    );
}
