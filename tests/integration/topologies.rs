//! Services that call services: retries multiply along a chain exactly as the closed forms
//! say, a worker is held for its downstream calls (Little's law), and every tier keeps its own
//! books.

use retrystorm::retry::decision::StopReason;
use retrystorm::run::PolicyRun;
use retrystorm::vocabulary::outcome::FailureReason;

use retrystorm::claims::evaluate;

use crate::support::{assert_contains, error_with, relative_error, run, scenario};

/// A chain `users -> t1 -> t2 -> ... -> leaf`: `sends[0]` is how many times the users send at
/// most (`max_attempts + 1`), `sends[i]` how many times tier `i` sends at most to the next. The
/// leaf fails a request with probability `leaf_failure` (a 503, so every caller retries), and
/// everything else is ample: workers, deadlines, timeouts, so that only the retry budgets end a
/// call. Backoff is 1 ms without jitter.
fn chain(sends: &[u32], leaf_failure: f64, ops_per_second: f64, duration_s: u32) -> String {
    let retry = |sends: u32| {
        format!(
            "retry = {{ base = \"1ms\", cap = \"1ms\", jitter = \"none\", max_attempts = {}, attempt_timeout = \"50s\" }}",
            sends - 1
        )
    };
    let mut text = format!(
        r#"
name = "chain"
seed = 5
duration = "{duration_s}s"
[clients]
count = 1000
rate = {rate}
deadline = "100s"
attempt_timeout = "60s"
calls = "t1"
[network]
latency = "1ms"
[[policy]]
name = "retries"
base = "1ms"
cap = "1ms"
jitter = "none"
max_attempts = {users}
"#,
        rate = ops_per_second / 1000.0,
        users = sends[0] - 1
    );
    for (tier, &tier_sends) in sends.iter().enumerate().skip(1) {
        text.push_str(&format!(
            "[[service]]\nname = \"t{tier}\"\nworkers = 100000\nservice_time = \"1ms\"\ncalls = [\"t{}\"]\n{}\n",
            tier + 1,
            retry(tier_sends)
        ));
    }
    text.push_str(&format!(
        "[[service]]\nname = \"t{}\"\nworkers = 100000\nservice_time = \"1ms\"\nerrors = {{ rate = {leaf_failure}, status = 503 }}\n",
        sends.len()
    ));
    text
}

/// Requests each service received per user operation, in chain order.
fn amplification(run: &PolicyRun) -> Vec<f64> {
    run.services
        .iter()
        .map(|service| service.amplification)
        .collect()
}

/// The SRE book's example (ch. 22): three layers that each send up to four times put
/// `4^3 = 64` attempts on the database for one user operation when it always fails. In
/// general, with `n` callers that send up to `k_1 ... k_n` times, the leaf sees exactly
/// `k_1 * ... * k_n` attempts per operation, and the tier below caller `i` the product of the
/// first `i`.
#[test]
fn a_leaf_that_always_fails_sees_the_product_of_the_sends_above_it() {
    for sends in [[4, 4, 4], [2, 3, 5]] {
        let result = run(&scenario(&chain(&sends, 1.0, 200.0, 2)));
        let policy = &result.policies[0];
        let operations = policy.measurements.operations;
        assert!(operations > 300, "{operations} operations");
        let mut expected = 1;
        for (service, &send) in policy.services.iter().zip(&sends) {
            expected *= u64::from(send);
            assert_eq!(
                service.totals.requests(),
                expected * operations,
                "{sends:?}: {} received {} for {operations} operations",
                service.name,
                service.totals.requests()
            );
            assert_eq!(service.totals.received, expected * operations);
        }
        assert_eq!(policy.summary.succeeded, 0);
        assert_eq!(
            policy
                .measurements
                .failures()
                .get(&FailureReason::Decision(StopReason::MaxAttempts)),
            Some(&operations)
        );
        // Each tier answered every failed request with its failure status, 503 by default.
        for (index, service) in policy.services.iter().enumerate().take(sends.len() - 1) {
            assert_eq!(
                service.totals.downstream_failures, service.totals.received,
                "{index}"
            );
        }
    }
}

/// Independent failures with probability `f` at the leaf, and callers that send up to
/// `k_0` (the users), `k_1`, ..., `k_{n-1}` times along `users -> T_1 -> ... -> T_n`.
///
/// A request at `T_n` fails with probability `p_n = f`; a request at `T_i` (`i < n`) fails when
/// all `k_i` of its sends to `T_{i+1}` fail, `p_i = p_{i+1}^{k_i}`. A caller that sends until
/// one succeeds, at most `k` times, to a callee failing with probability `p` sends on average
/// `1 + p + ... + p^{k-1} = (1 - p^k) / (1 - p)` times. So `T_{i+1}` sees
/// `m_i = (1 - p_{i+1}^{k_i}) / (1 - p_{i+1})` requests per request at `T_i`, and, since
/// `p_{i+1}^{k_i} = p_i`, the product telescopes: the requests at `T_j` per user operation are
///
/// `A_j = m_0 m_1 ... m_{j-1} = (1 - f^K) / (1 - f^{K_j})`,
///
/// with `K = k_0 k_1 ... k_{n-1}` and `K_j = k_j ... k_{n-1}` the sends from `T_j` down
/// (`K_n = 1`). With `f = 0.8` and four sends everywhere: 1.0290 at T_1, 1.6938 at T_2 and
/// `(1 - 0.8^64) / 0.2 = 5.000` at the leaf. (With `f = 1` the limit is `k_0 ... k_{j-1}`, the
/// exact test above.)
///
/// The leaf's count per operation is nearly geometric, variance `f / (1 - f)^2 = 20`; over the
/// 240,000 operations of this run its mean has a standard error of `√(20 / 240000) ≈ 0.009`,
/// 0.18% of 5, so the 1% bound is more than five standard errors wide (the tiers above vary
/// less), while a model that dropped or doubled a retry at any tier misses it by far.
#[test]
fn attempts_at_each_tier_match_the_closed_form() {
    let f: f64 = 0.8;
    let sends = [4u32, 4, 4];
    let result = run(&scenario(&chain(&sends, f, 2000.0, 120)));
    let policy = &result.policies[0];
    let measured = amplification(policy);
    let total: u32 = sends.iter().product();
    for (j, measured) in measured.iter().enumerate() {
        let below: u32 = sends[j + 1..].iter().product();
        let expected = (1.0 - f.powi(total as i32)) / (1.0 - f.powi(below as i32));
        eprintln!(
            "T{}: {measured:.5} attempts per operation (theory {expected:.5})",
            j + 1
        );
        assert!(
            relative_error(*measured, expected) < 0.01,
            "T{}: {measured} vs {expected}",
            j + 1
        );
    }
    // Nothing but the retry budgets may end a call: the success rate is 1 - f^K.
    let success = 1.0 - f.powi(total as i32);
    assert!((policy.summary.success_rate - success).abs() < 1e-3);
}

/// `users -> api -> db` with Poisson arrivals at `rate` per second; the api works `api_ms` per
/// request and then calls the db, which works a constant `db_ms` with ample workers; every
/// message takes 1 ms. Nothing fails and nothing times out.
fn held_workers(rate: f64, api_workers: u32, db_ms: u32, duration_s: u32) -> String {
    format!(
        r#"
name = "held"
seed = 3
duration = "{duration_s}s"
bucket = "100ms"
[clients]
count = 1000
rate = {per_client}
deadline = "300s"
attempt_timeout = "300s"
calls = "api"
[network]
latency = "1ms"
[[service]]
name = "api"
workers = {api_workers}
service_time = "2ms"
queue_limit = 100000000
calls = ["db"]
retry = {{ attempt_timeout = "300s" }}
[[service]]
name = "db"
workers = 100000
service_time = "{db_ms}ms"
"#,
        per_client = rate / 1000.0
    )
}

/// Mean of the api's end-of-bucket samples of `field`, over the buckets of `range`.
fn mean_state(run: &PolicyRun, range: std::ops::Range<usize>, field: fn(u64, u64) -> u64) -> f64 {
    let api = &run.measurements.services[0];
    let samples: Vec<f64> = api.buckets[range]
        .iter()
        .map(|bucket| field(bucket.busy, bucket.queue_len) as f64)
        .collect();
    samples.iter().sum::<f64>() / samples.len() as f64
}

/// A worker that calls downstream is held for its own work plus the whole call, as a
/// thread-per-request server is. With ample workers nothing queues, so by Little's law the
/// api's busy workers average `L = λ W` with `W = 2 ms + 1 ms + db time + 1 ms`: at
/// λ = 1000/s, 9 workers when the db answers in 5 ms and 54 in a brownout at 50 ms. The
/// end-of-bucket samples of an M/G/∞ occupancy are Poisson with mean `L` (standard deviation
/// `√54 ≈ 7.3`) and nearly independent 100 ms apart, so 2,000 of them put the mean within about
/// 0.17 of `L`: the 3% bound is nine standard errors wide, and a worker released at the end of
/// its own work (`L = 2`) fails it by far.
#[test]
fn workers_are_held_for_the_downstream_call_as_littles_law_says() {
    for (db_ms, expected) in [(5u32, 9.0), (50, 54.0)] {
        let result = run(&scenario(&held_workers(1000.0, 1000, db_ms, 201)));
        let busy = mean_state(&result.policies[0], 5..2005, |busy, _| busy);
        eprintln!("db {db_ms} ms: {busy:.3} api workers busy (Little's law {expected})");
        assert!(
            relative_error(busy, expected) < 0.03,
            "db {db_ms} ms: {busy} busy vs {expected}"
        );
        assert_eq!(result.policies[0].summary.success_rate, 1.0);
    }
}

/// In the brownout with too few workers (50 where λW = 54 are needed) the api serves at most
/// `c / W = 50 / 54 ms ≈ 926` requests per second, so at λ = 1000/s its queue grows by
/// `λ - c/W ≈ 74` per second: after 60 s it holds about 4,440 requests, while every worker is
/// busy. The bound allows 15% for the randomness of 60,000 arrivals and the service times.
#[test]
fn a_caller_with_too_few_workers_queues_at_the_rate_littles_law_gives() {
    let result = run(&scenario(&held_workers(1000.0, 50, 50, 60)));
    let policy = &result.policies[0];
    let api = &policy.measurements.services[0];
    let at_60s = &api.buckets[599];
    let expected = (1000.0 - 50.0 / 0.054) * 60.0;
    eprintln!(
        "queue after 60 s: {} (fluid limit {expected:.0}), busy {}",
        at_60s.queue_len, at_60s.busy
    );
    assert_eq!(at_60s.busy, 50);
    assert!(
        relative_error(at_60s.queue_len as f64, expected) < 0.15,
        "queue {} vs {expected}",
        at_60s.queue_len
    );
    let busy = mean_state(policy, 10..600, |busy, _| busy);
    assert!(busy > 49.9, "{busy}");
}

/// A three-tier topology whose middle tier crashes: its in-service requests are reset while
/// their calls to the db are still out. Those calls run on and their answers find nobody; every
/// user operation still ends, and the db's books balance. The edge retries with the article's
/// settings (`retry = {}`), so the operations outlive the crash.
#[test]
fn a_crashed_tier_orphans_its_downstream_calls_harmlessly() {
    let text = r#"
name = "crash"
duration = "10s"
[clients]
count = 2000
rate = 1.0
calls = "edge"
[[service]]
name = "edge"
workers = 400
service_time = "1ms"
calls = ["api"]
retry = {}
[[service]]
name = "api"
workers = 400
service_time = "1ms"
calls = ["db"]
outage = "crash"
capacity = [
  { at = "4s", factor = 1.0 },
  { at = "4s", factor = 0.0 },
  { at = "5s", factor = 0.0 },
  { at = "5s", factor = 1.0 },
]
[[service]]
name = "db"
workers = 400
service_time = "50ms"
[[policy]]
name = "article"
"#;
    let result = run(&scenario(text));
    let policy = &result.policies[0];
    let api = &policy.services[1];
    let db = &policy.services[2];
    assert!(api.totals.resets > 50, "{:?}", api.totals);
    assert!(api.totals.rejected_outage > 100, "{:?}", api.totals);
    // Every db request was served (none of them failed), orphans included.
    assert_eq!(db.totals.served, db.totals.received);
    let ended: u64 = policy
        .measurements
        .buckets
        .iter()
        .map(|bucket| bucket.succeeded + bucket.failed)
        .sum();
    assert_eq!(ended, policy.measurements.operations);
    assert!(policy.summary.success_rate > 0.95);
}

/// POSTs with idempotency keys through `edge -> api -> db`, with lost responses on every hop:
/// each tier forwards the key and keeps its own store, so retries at any layer never write
/// twice at the db, where the data lives; without keys a tier that retries anyway
/// (`unsafe_retries`) writes twice.
#[test]
fn keys_protect_writes_at_every_tier() {
    let text = |keyed: bool, unsafe_retries: bool| {
        format!(
            r#"
name = "keyed"
duration = "20s"
[clients]
count = 500
rate = 1.0
deadline = "20s"
attempt_timeout = "2s"
calls = "edge"
[[clients.operations]]
name = "charge"
method = "POST"
idempotency_key = {keyed}
[network]
response_loss = 0.1
[[service]]
name = "edge"
workers = 200
service_time = "1ms"
calls = ["api"]
retry = {{ attempt_timeout = "500ms", unsafe_retries = {unsafe_retries} }}
[[service]]
name = "api"
workers = 200
service_time = "1ms"
calls = ["db"]
retry = {{ attempt_timeout = "200ms", unsafe_retries = {unsafe_retries} }}
[[service]]
name = "db"
workers = 200
service_time = "5ms"
[[policy]]
name = "keys"
max_attempts = 5
"#
        )
    };
    let keyed = run(&scenario(&text(true, false)));
    let keyed = &keyed.policies[0];
    assert_eq!(keyed.summary.duplicate_writes, 0);
    let db = &keyed.services[2];
    assert!(db.totals.replayed > 100, "{:?}", db.totals);
    assert!(keyed.services[0].totals.replayed > 100);
    assert!(
        keyed.summary.success_rate > 0.99,
        "{}",
        keyed.summary.success_rate
    );
    let naive = run(&scenario(&text(false, true)));
    let naive = &naive.policies[0];
    assert!(
        naive.summary.duplicate_writes > 500,
        "{}",
        naive.summary.duplicate_writes
    );
}

/// A claim names a service's metric as `METRIC@SERVICE`: the SRE book's three layers of four
/// sends put exactly `4^3 = 64` requests per operation on a leaf that always fails, which the
/// claims `amplification@t3` at least 64 and at most 64 both find. A misspelt service is
/// refused at the claim, with the nearest name and the scenario's services. On main a claim
/// could name the run's metrics only.
#[test]
fn a_claim_names_a_services_metric() {
    let base = chain(&[4, 4, 4], 1.0, 200.0, 2);
    let claim = |bound: &str| {
        format!("[[expect]]\npolicy = \"retries\"\nmetric = \"amplification@t3\"\n{bound} = 64\n")
    };
    let text = format!("{base}{}{}", claim("at_least"), claim("at_most"));
    let claims = evaluate(&run(&scenario(&text)));
    assert_eq!(claims.len(), 2);
    for claim in &claims {
        assert!(claim.held, "{claim}");
        assert_eq!(claim.value, 64.0, "{claim}");
    }
    assert_contains(
        &error_with(&text, "amplification@t3", "amplification@t33"),
        &[
            "bad.toml:",
            "`amplification@t33`: the scenario has no service `t33` (did you mean `amplification@t3`?); its services: t1, t2, t3",
        ],
    );
}

/// `users -> pay -> [ledger, card-network]`: `pay` calls the ledger, then the card network,
/// which commits the charge and answers 503 (`errors.at = "after-service"`, `committed`), so
/// `pay` sends it 3 times (`max_attempts = 2`, `unsafe_retries`) and fails; the users send each
/// unkeyed POST twice (`max_attempts = 1`, `unsafe_retries`). Per operation, by hand: the
/// ledger commits 2 writes (1 duplicate), the card network 2 x 3 = 6 (5 duplicates), and the
/// run's 6 duplicates are their sum. The ledger is a fleet of 2 sharing its data: the
/// users' second press reaches the other instance (round robin), and is a duplicate there.
/// With the users retrying by hand (`manual_retry`, once, after the failure), each intent's
/// presses double every count: 4 ledger writes, 3 duplicates; 12 card writes, 11 duplicates.
#[test]
fn duplicate_writes_are_counted_at_the_service_that_commits_them_and_sum_to_the_runs() {
    let text = |manual: &str| {
        format!(
            r#"
name = "two-leaves"
duration = "5s"
[clients]
count = 10
rate = 2.0
deadline = "100s"
attempt_timeout = "50s"
calls = "pay"
[[clients.operations]]
name = "pay"
method = "POST"
[[service]]
name = "pay"
workers = 1000
service_time = "1ms"
calls = ["ledger", "card-network"]
retry = {{ base = "1ms", cap = "1ms", jitter = "none", max_attempts = 2, unsafe_retries = true, attempt_timeout = "50s" }}
[[service]]
name = "ledger"
workers = 1000
service_time = "1ms"
fleet = {{ instances = 2, load_balancer = "round-robin" }}
[[service]]
name = "card-network"
workers = 1000
service_time = "1ms"
errors = {{ rate = 1.0, status = 503, at = "after-service", committed = true }}
[[policy]]
name = "naive"
base = "10ms"
cap = "10ms"
jitter = "none"
max_attempts = 1
unsafe_retries = true
{manual}
"#
        )
    };
    for (manual, presses) in [
        ("", 1),
        (
            r#"manual_retry = { on = ["failure"], probability = 1.0, delay = "1s", max = 1, key = "new" }"#,
            2,
        ),
    ] {
        let result = run(&scenario(&text(manual)));
        let policy = &result.policies[0];
        let intents = policy.summary.intents.started;
        assert!(intents > 50, "{intents}");
        let [_, ledger, card] = &policy.services[..] else {
            panic!("three services")
        };
        assert_eq!(ledger.totals.writes, 2 * presses * intents);
        assert_eq!(ledger.totals.duplicate_writes, (2 * presses - 1) * intents);
        assert_eq!(card.totals.writes, 6 * presses * intents);
        assert_eq!(card.totals.duplicate_writes, (6 * presses - 1) * intents);
        let sum: u64 = policy
            .services
            .iter()
            .map(|service| service.totals.duplicate_writes)
            .sum();
        assert_eq!(sum, policy.summary.duplicate_writes);
        let instances: u64 = ledger
            .instances
            .iter()
            .map(|instance| instance.counts.duplicate_writes)
            .sum();
        assert_eq!(instances, ledger.totals.duplicate_writes);
    }
}
