//! Fleets: a service run as several instances, each attempt sent to the one its caller's load
//! balancer picks (Envoy's `lb_policy`).

use retrystorm::engine::counters::InstanceTotals;
use retrystorm::output::{summary_csv, timeseries_csv};
use retrystorm::run::ScenarioRun;

use crate::support::{self, assert_contains, run, scenario};

/// 2,000 clients at 1,000 operations a second against an upstream fleet (the `fleet` table
/// and any other upstream keys are appended), answered in 2 ms; one policy, no retries unless
/// the text says otherwise.
fn fleet(upstream: &str, policy: &str) -> String {
    format!(
        r#"name = "fleet"
duration = "10s"
[clients]
count = 2000
rate = 0.5
deadline = "3s"
attempt_timeout = "500ms"
[upstream]
workers = 50
service_time = "2ms"
{upstream}
[[policy]]
name = "p"
{policy}
"#
    )
}

/// Every instance's totals in the only policy of `run`.
fn instances(run: &ScenarioRun) -> &[InstanceTotals] {
    &run.policies[0].measurements.services[0].instances
}

/// Round robin gives each of N instances every N-th attempt of a caller: with one client
/// process, their requests differ by at most one, whatever the start.
#[test]
fn round_robin_gives_each_instance_exactly_its_share() {
    let run = run(&scenario(&fleet(
        "fleet = { instances = 7 }",
        "max_attempts = 0",
    )));
    let counts: Vec<u64> = instances(&run)
        .iter()
        .map(|instance| instance.counts.requests())
        .collect();
    assert_eq!(counts.len(), 7);
    let (low, high) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    assert!(*low > 1000 && high - low <= 1, "{counts:?}");
    assert_eq!(
        counts.iter().sum::<u64>(),
        run.policies[0].measurements.operations
    );
}

/// A dead host of ten behind round robin, without retries, fails exactly its share of first
/// attempts: every operation it was sent, and no other (Envoy's load-balancer docs: round
/// robin and random keep sending an unhealthy host its share until it is ejected).
#[test]
fn a_dead_host_behind_round_robin_fails_exactly_its_share() {
    let run = run(&scenario(&fleet(
        "fleet = { instances = 10, capacity_instances = 1 }\noutage = \"reject\"\ncapacity = [{ at = \"0s\", factor = 0 }]",
        "max_attempts = 0",
    )));
    let counts = instances(&run);
    let dead = counts[0].counts.requests();
    assert_eq!(counts[0].counts.served, 0);
    assert_eq!(counts[0].counts.rejected(), dead);
    let summary = &run.policies[0].summary;
    let operations = run.policies[0].measurements.operations;
    assert_eq!(operations - summary.succeeded, dead);
    assert!(
        (dead as f64 - operations as f64 / 10.0).abs() <= 1.0,
        "{dead} of {operations}"
    );
}

/// Envoy's `previous_hosts`: with every instance refusing and four attempts an operation, a
/// random balancer that draws again a host already tried (up to 100 times: a miss has
/// probability (3/4)^100 per pick) sends each operation to each of the four instances once,
/// so each instance sees exactly as many requests as there are operations. Without it the
/// draws repeat hosts and the counts scatter.
#[test]
fn previous_hosts_never_pick_a_host_twice_while_others_remain() {
    let upstream = "fleet = { instances = 4, load_balancer = \"random\" }\noutage = \"reject\"\ncapacity = [{ at = \"0s\", factor = 0 }]";
    let avoiding = run(&scenario(&fleet(
        upstream,
        "max_attempts = 3\nbase = \"1ms\"\nprevious_hosts = 100",
    )));
    let operations = avoiding.policies[0].measurements.operations;
    for instance in instances(&avoiding) {
        assert_eq!(instance.counts.requests(), operations);
    }
    let repeating = run(&scenario(&fleet(
        upstream,
        "max_attempts = 3\nbase = \"1ms\"",
    )));
    assert!(
        instances(&repeating)
            .iter()
            .any(|instance| instance.counts.requests() != operations)
    );
}

/// Least request prefers the host with fewer requests outstanding, and a host that refuses at
/// once has none: of two draws with replacement it wins whenever it is drawn and the other
/// host has one outstanding, so it receives up to 1 - (9/10)^2 = 19% of the attempts of ten,
/// almost twice its share (Envoy's least request: "active requests" of a host that fails
/// fast stay near zero). Round robin gives
/// it exactly 10%.
#[test]
fn least_request_sends_a_fast_failing_host_more_than_its_share() {
    let dead =
        "outage = \"reject\"\ncapacity = [{ at = \"0s\", factor = 0 }]\nservice_time = \"20ms\"";
    let share = |balancer: &str| {
        let run = run(&scenario(&fleet(
            &format!(
                "fleet = {{ instances = 10, capacity_instances = 1, load_balancer = \"{balancer}\" }}\n{dead}"
            ),
            "max_attempts = 0",
        )
        .replace("service_time = \"2ms\"\n", "")));
        let counts = instances(&run);
        let total: u64 = counts
            .iter()
            .map(|instance| instance.counts.requests())
            .sum();
        counts[0].counts.requests() as f64 / total as f64
    };
    let least = share("least-request");
    assert!((0.15..=0.19 + 0.01).contains(&least), "{least}");
    assert!((share("round-robin") - 0.1).abs() < 0.001);
}

/// A fleet of one instance is the service: the same numbers, byte for byte.
#[test]
fn a_fleet_of_one_is_the_service() {
    let plain = fleet(
        "queue_limit = 20\ncapacity = [{ at = \"3s\", factor = 1 }, { at = \"3s\", factor = 0.02 }, { at = \"5s\", factor = 1 }]",
        "",
    );
    let one = plain.replace(
        "queue_limit = 20",
        "queue_limit = 20\nfleet = { instances = 1 }",
    );
    let (plain, one) = (run(&scenario(&plain)), run(&scenario(&one)));
    assert!(plain.policies[0].summary.amplification > 1.0);
    assert_eq!(timeseries_csv(&plain), timeseries_csv(&one));
    assert_eq!(summary_csv(&plain), summary_csv(&one));
}

/// Every bad fleet names its place and what would be valid. The fleet is on line 11.
#[test]
fn a_bad_fleet_is_refused_at_its_place() {
    let error = |upstream: &str| {
        support::error_with(
            &fleet("", ""),
            "service_time = \"2ms\"\n",
            &format!("service_time = \"2ms\"\n{upstream}\n"),
        )
    };
    assert_contains(
        &error("fleet = { instances = 3, choice_count = 3 }"),
        &[
            "bad.toml:11:",
            "choice_count is the number of hosts `least-request` compares",
        ],
    );
    assert_contains(
        &error("fleet = { instances = 3, capacity_instances = 4 }"),
        &[
            "bad.toml:11:",
            "capacity_instances = 4 is more than the fleet's 3 instances",
        ],
    );
    assert_contains(
        &error("fleet = { instances = 3, load_balancer = \"maglev\" }"),
        &[
            "bad.toml:11:",
            "maglev",
            "round-robin",
            "least-request",
            "ring-hash",
        ],
    );
    assert_contains(
        &error("fleet = { instances = 1001 }"),
        &["bad.toml:11:", "1001"],
    );
    assert_contains(
        &error("fleet = { instances = 2 }\noptimistic_row = {}"),
        &["bad.toml:11:", "`optimistic_row`", "is not modelled yet"],
    );
}

/// Envoy's outlier detection, end to end: one host of ten refuses at once from t = 10 s to
/// 40 s. The only caller (one client process, round robin) sees five failures from it in a
/// row and ejects it at once (10% of ten hosts allows one), so it refuses exactly five
/// requests. The ejection lasts `base_ejection_time` (30 s) from about 10.05 s and ends at the
/// first sweep (every 10 s from 0) at or after its end, the one at 50 s: ejected for 40 s less
/// the time to its fifth request, while without detection it refuses its share, 1/10, for
/// 30 s. Envoy rules: `outlier_detection_impl.cc` (`onConsecutiveErrorWorker`,
/// `checkHostForUneject`).
#[test]
fn an_outlier_is_ejected_after_five_failures_until_the_sweep() {
    let upstream = "fleet = { instances = 10, capacity_instances = 1, outlier_detection = {} }\noutage = \"reject\"\ncapacity = [{ at = \"10s\", factor = 1 }, { at = \"10s\", factor = 0 }, { at = \"40s\", factor = 0 }, { at = \"40s\", factor = 1 }]";
    let text =
        fleet(upstream, "max_attempts = 0").replace("duration = \"10s\"", "duration = \"60s\"");
    let ejecting = run(&scenario(&text));
    let dead = &instances(&ejecting)[0];
    assert_eq!(dead.counts.rejected(), 5);
    let ejected_s = dead.ejected_us as f64 / 1e6;
    // Five requests to it at 1,000 a second over ten hosts take about 50 ms.
    assert!((39.8..40.0).contains(&ejected_s), "{ejected_s}");
    assert!(
        instances(&ejecting)[1..]
            .iter()
            .all(|other| other.ejected_us == 0)
    );
    let plain = run(&scenario(&text.replace(", outlier_detection = {}", "")));
    let refused = instances(&plain)[0].counts.rejected() as f64;
    assert!((refused - 3000.0).abs() < 4.0 * 3000f64.sqrt(), "{refused}");
}

/// Least request as the power of two choices, against the supermarket model (Vvedenskaya,
/// Dobrushin and Karpelevich 1996; Mitzenmacher, "The Power of Two Choices in Randomized Load
/// Balancing", IEEE TPDS 2001): Poisson arrivals at rate 0.9 per server to N single-worker
/// FIFO servers with exponential work, each sent to the shorter of two queues drawn at random.
/// As N grows, the share of servers with at least i requests is 0.9^(2^i - 1), and the mean
/// time in the system is the sum over i >= 1 of 0.9^(2^i - 2) service times: 2.614, so
/// 26.14 ms for 10 ms of work, against 100 ms for a uniform draw (M/M/1 at 0.9). With 100
/// servers, draws with replacement (Envoy's) and no network delay, the simulation gives
/// 26.8 ms and 97.7 ms over 540,000 operations; the bound, 5% either side, leaves room for the
/// finite N and the draws with replacement, which the limit has neither of. Were least
/// request a uniform draw, its mean would be the M/M/1's, 100 ms.
#[test]
fn least_request_is_the_power_of_two_choices() {
    let text = r#"name = "p2c"
seed = 2
duration = "60s"
[clients]
count = 90000
rate = 0.1
deadline = "100s"
attempt_timeout = "100s"
[network]
latency = "0ms"
[upstream]
workers = 1
service_time = { distribution = "exponential", mean = "10ms" }
queue_limit = 100000
fleet = { instances = 100, load_balancer = "least-request" }
[[policy]]
name = "p2c"
max_attempts = 0
[[policy]]
name = "random"
max_attempts = 0
overrides = { "upstream.fleet.load_balancer" = "random" }
"#;
    let run = run(&scenario(text));
    let mean_ms = |policy: usize| run.policies[policy].summary.metric("mean_ms").unwrap();
    let supermarket: f64 = (1..12).map(|i| 0.9f64.powi((1 << i) - 2)).sum::<f64>() * 10.0;
    assert!((supermarket - 26.14).abs() < 0.01, "{supermarket}");
    assert!(
        support::relative_error(mean_ms(0), supermarket) < 0.05,
        "{}",
        mean_ms(0)
    );
    assert!(
        support::relative_error(mean_ms(1), 100.0) < 0.05,
        "{}",
        mean_ms(1)
    );
}

/// Keyed POSTs to a fleet of two, every response lost: each operation's retry avoids the host
/// its first attempt wrote on (`previous_hosts`), so it lands on the other. With the fleet's
/// shared key store the retry is recognised and replayed, and no write is repeated; with a key
/// store per instance the other instance has never seen the key and writes again: exactly one
/// duplicate write per operation.
#[test]
fn a_key_store_per_instance_misses_a_retry_that_changes_instance() {
    let duplicates = |key_store: &str| {
        let run = run(&scenario(&fleet(
            &format!(
                "fleet = {{ instances = 2, key_store = \"{key_store}\" }}
[network]
response_loss = 1.0
[[clients.operations]]
name = \"pay\"
method = \"POST\"
idempotency_key = true"
            ),
            "max_attempts = 1\nprevious_hosts = 1",
        )));
        let policy = &run.policies[0];
        (
            policy.summary.duplicate_writes,
            policy.measurements.operations,
        )
    };
    assert_eq!(duplicates("shared").0, 0);
    let (duplicated, operations) = duplicates("per-instance");
    assert!(operations > 1000);
    assert_eq!(duplicated, operations);
}

/// Ring hash sends each user to one instance, retries included (Envoy's `RING_HASH` on a
/// header naming the user): behind a dead host of ten, the users it holds fail whether they
/// retry three times or not at all, on the same arrivals, exactly as many; about a tenth of them
/// (the host's arc of a ring of 1,030 entries). A retry that avoids the hosts tried
/// (`previous_hosts = 3`) moves along the ring to the next host and almost never fails.
#[test]
fn ring_hash_keeps_a_user_on_its_host() {
    let run = run(&scenario(&fleet(
        "capacity = [{ at = \"0s\", factor = 0.0 }]
outage = \"reject\"
fleet = { instances = 10, load_balancer = \"ring-hash\", capacity_instances = 1 }
[[policy]]
name = \"three retries\"
max_attempts = 3
base = \"10ms\"
[[policy]]
name = \"three retries elsewhere\"
max_attempts = 3
base = \"10ms\"
previous_hosts = 3",
        "max_attempts = 0",
    )));
    // The helper's own policy, without retries, comes last.
    let failed = |policy: usize| {
        run.policies[policy]
            .measurements
            .failures()
            .values()
            .sum::<u64>()
    };
    let (three, elsewhere, none) = (failed(0), failed(1), failed(2));
    let operations = run.policies[2].measurements.operations;
    let share = none as f64 / operations as f64;
    assert!((0.05..0.15).contains(&share), "{share}");
    assert_eq!(three, none);
    assert!(elsewhere * 20 < none, "{elsewhere} of {none}");
    eprintln!(
        "ring hash, dead host of 10: {none} of {operations} failed without retries and with three; {elsewhere} with previous_hosts"
    );
}

/// A fleet of four whose instance 0 refuses everything, behind one client process, no
/// retries: `p` balances by round robin, `least` by least request (service time 20 ms, so that
/// healthy hosts have requests outstanding and the one that refuses at once wins their
/// comparisons); then `claims`.
fn dead_host_of_four(claims: &str) -> String {
    let upstream = "fleet = { instances = 4, capacity_instances = 1 }\noutage = \"reject\"\ncapacity = [{ at = \"0s\", factor = 0 }]";
    let text = fleet(upstream, "max_attempts = 0")
        .replace("service_time = \"2ms\"", "service_time = \"20ms\"");
    format!(
        "{text}[[policy]]\nname = \"least\"\nmax_attempts = 0\noverrides = {{ \"upstream.fleet.load_balancer\" = \"least-request\" }}\n{claims}"
    )
}

/// A claim `[[expect]]` on a fleet's instance.
fn claim(policy: &str, metric: &str, comparison: &str) -> String {
    format!("[[expect]]\npolicy = \"{policy}\"\nmetric = \"{metric}\"\n{comparison}\n")
}

/// Claims name an instance, `refused@upstream#0`, and a fleet's balance,
/// `busiest_share@upstream`, in a scenario of one service, and evaluate to the instances'
/// totals. Round robin from one client process sends each of the four instances every fourth
/// of the N operations (one request each, no retries), so the busiest is sent exactly
/// ceil(N/4) of them: busiest_share is ceil(N/4)/N. The dead instance refuses every request it
/// is sent, and no other request fails, so `refused@upstream#0` is exactly the operations that
/// failed. Least request sends the host that refuses at once more than its quarter, so round
/// robin beats it on both (lower is better for both). On main neither name was a metric.
#[test]
fn claims_name_an_instance_and_a_fleets_balance() {
    let claims = [
        claim("p", "refused@upstream#0", "at_most = 1e9"),
        claim("p", "busiest_share@upstream", "at_most = 0.25"),
        claim("p", "busiest_share@upstream", "better_than = \"least\""),
        claim("p", "refused@upstream#0", "better_than = \"least\""),
    ];
    let run = run(&scenario(&dead_host_of_four(&claims.concat())));
    let results = retrystorm::claims::evaluate(&run);
    let round_robin = &run.policies[0];
    let operations = round_robin.measurements.operations;
    let failed = operations - round_robin.summary.succeeded;
    assert_eq!(results[0].value, failed as f64, "{}", results[0]);
    assert_eq!(
        results[0].value,
        instances(&run)[0].counts.rejected() as f64
    );
    assert!(results[0].held);
    let busiest = operations.div_ceil(4) as f64 / operations as f64;
    assert_eq!(results[1].value, busiest, "{}", results[1]);
    // ceil(N/4)/N is above a quarter unless N is a multiple of 4.
    assert_eq!(
        results[1].held,
        operations.is_multiple_of(4),
        "{}",
        results[1]
    );
    for result in &results[2..] {
        assert!(result.held, "{result}");
    }
    assert!(results[2].against > 0.3, "{}", results[2]);
}

/// A claim on an instance the fleet does not have, on an instance of a service that is not a
/// fleet, or on a fleet's balance at such a service, is refused at the claim's line, saying
/// what would be valid; so is one a policy's overrides make invalid, saying so.
#[test]
fn claims_on_instances_a_fleet_lacks_are_refused_at_the_claim() {
    let valid = dead_host_of_four(&claim("p", "refused@upstream#3", "at_most = 10"));
    assert_contains(
        &support::error_with(&valid, "refused@upstream#3", "refused@upstream#4"),
        &[
            "bad.toml:21:",
            "`refused@upstream#4`: upstream has 4 instances, #0 to #3; write refused@upstream#K with K from 0 to 3",
        ],
    );
    let plain = valid.replace("fleet = { instances = 4, capacity_instances = 1 }\n", "");
    assert_contains(
        &support::error_with(
            &plain,
            "overrides = { \"upstream.fleet.load_balancer\" = \"least-request\" }\n",
            "",
        ),
        &[
            "bad.toml:19:",
            "`refused@upstream#3`: upstream is not a fleet (it runs as one instance), so it has no instances to name; the scenario has no fleet (a service with fleet = { instances = N })",
        ],
    );
    assert_contains(
        &support::error_with(
            &plain,
            "overrides = { \"upstream.fleet.load_balancer\" = \"least-request\" }\n[[expect]]\npolicy = \"p\"\nmetric = \"refused@upstream#3\"",
            "[[expect]]\npolicy = \"p\"\nmetric = \"busiest_share@upstream\"",
        ),
        &[
            "bad.toml:19:",
            "`busiest_share@upstream`: upstream is not a fleet (it runs as one instance, which is sent every request), and `busiest_share` is a fleet's metric",
        ],
    );
    assert_contains(
        &support::error_with(
            &valid.replace("policy = \"p\"\nmetric", "policy = \"least\"\nmetric"),
            "\"upstream.fleet.load_balancer\" = \"least-request\"",
            "\"upstream.fleet\" = { instances = 3 }",
        ),
        &[
            "bad.toml:21:",
            "policy \"least\" runs other fleets (its overrides), and there `refused@upstream#3`: upstream has 3 instances, #0 to #2",
        ],
    );
}

/// A sweep records the fleet's and instances' metrics its requirements and objective name,
/// after the run's, minimises one, and merges its shards into the same rows; a grid that
/// shrinks the fleet below the instance named is refused at the point, before anything runs.
/// Round robin sends the dead host a quarter of the operations, least request more: round
/// robin is recommended.
#[test]
fn a_sweep_records_and_minimises_an_instances_metric() {
    let folder = support::fresh_folder("fleet-sweep");
    let path = folder.join("dead.toml");
    std::fs::write(&path, dead_host_of_four("")).unwrap();
    let sweep = |extra: &[&str], out: &str| {
        let mut args = vec![
            "sweep",
            path.to_str().unwrap(),
            "--policy",
            "p",
            "--seeds",
            "2",
            "--set",
            "duration=4s",
            "--no-charts",
            "--out",
        ];
        let out = folder.join(out);
        args.push(out.to_str().unwrap());
        args.extend_from_slice(extra);
        let output = support::retrystorm(&args);
        (output, out)
    };
    let asked = [
        "--grid",
        "upstream.fleet.load_balancer=least-request,round-robin",
        "--require",
        "busiest_share@upstream<=0.9",
        "--minimize",
        "refused@upstream#0",
    ];
    let (output, out) = sweep(&asked, "whole");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = std::fs::read_to_string(out.join("fleet-sweep/results.csv")).unwrap();
    assert!(
        results
            .lines()
            .next()
            .unwrap()
            .ends_with(",recovery_s,busiest_share@upstream,refused@upstream#0"),
        "{results}"
    );
    assert_contains(
        &String::from_utf8_lossy(&output.stdout),
        &[
            "minimise: refused@upstream#0\n",
            "recommended: point 1: upstream.fleet.load_balancer=round-robin",
        ],
    );
    for shard in ["0/2", "1/2"] {
        let mut args = asked.to_vec();
        args.extend(["--shard", shard]);
        assert!(sweep(&args, "shards").0.status.success());
    }
    let shards = folder.join("shards/fleet-shards");
    let merged = folder.join("merged");
    let output = support::retrystorm(&[
        "merge",
        shards.join("shard-0-of-2").to_str().unwrap(),
        shards.join("shard-1-of-2").to_str().unwrap(),
        "--no-charts",
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(merged.join("fleet-sweep/results.csv")).unwrap(),
        results
    );
    let (output, _) = sweep(
        &[
            "--grid",
            "upstream.fleet.instances=4,2",
            "--minimize",
            "refused@upstream#3",
        ],
        "shrunk",
    );
    assert!(!output.status.success());
    assert_contains(
        &String::from_utf8_lossy(&output.stderr),
        &[
            "point 1 (upstream.fleet.instances=2): `refused@upstream#3`: upstream has 2 instances, #0 to #1",
        ],
    );
}

/// A fleet's capacity during a partial outage is its instances', each with its own workers
/// and its own contention curve, summed over those up: 3 instances of 13 workers of 10 ms, the
/// first 2 following a curve that takes them down from 2 s to 4 s (`capacity_instances = 2`).
/// Under the USL (docs/reference.md, "contention") an instance of `N` workers serves at best
/// `N / (S (1 + sigma (N - 1) + kappa N (N - 1)))` a second, at `N = 13` here, below the peak
/// concurrency `sqrt((1 - sigma) / kappa) = 44.3`: 986.34 a second, so 2,959.0 for the fleet
/// and 986.34 while two are down; without contention 1,300 an instance. `capacity_rps` (the
/// measured series of services.csv and timeseries.csv) and the model's curve (load.png's
/// dashed line) both give it. On main the fleet's 13 available workers were spread over its
/// 3 instances, each at the concurrency of 4.
#[test]
fn a_fleets_capacity_in_a_partial_outage_is_the_sum_over_the_instances_up() {
    let text = |contention: &str| {
        format!(
            r#"name = "ledger"
duration = "6s"
bucket = "500ms"
[clients]
count = 100
rate = 1.0
deadline = "3s"
attempt_timeout = "500ms"
[upstream]
workers = 13
service_time = "10ms"
outage = "reject"
capacity = [{{ at = "2s", factor = 1.0 }}, {{ at = "2s", factor = 0.0 }}, {{ at = "4s", factor = 0.0 }}, {{ at = "4s", factor = 1.0 }}]
fleet = {{ instances = 3, capacity_instances = 2 }}
{contention}
[[policy]]
name = "p"
"#
        )
    };
    let (sigma, kappa): (f64, f64) = (0.02, 0.0005);
    let usl = 13.0 / (0.010 * (1.0 + sigma * 12.0 + kappa * 13.0 * 12.0));
    for (contention, instance) in [
        (String::new(), 1300.0),
        (
            format!("contention = {{ sigma = {sigma}, kappa = {kappa} }}"),
            usl,
        ),
    ] {
        let run = run(&scenario(&text(&contention)));
        let policy = &run.policies[0];
        let capacity = &policy.measurements.services[0].capacity_rps;
        let model = &policy.model.services[0];
        let close = |value: Option<f64>, expected: f64| {
            let value = value.expect("a finite capacity");
            assert!(
                (value - expected).abs() <= 1e-9 * expected,
                "{value} against {expected} ({contention})"
            );
        };
        // Buckets of 500 ms: [1 s, 1.5 s) ends healthy, [3 s, 3.5 s) inside the outage.
        close(capacity[2], 3.0 * instance);
        close(capacity[6], instance);
        close(capacity[10], 3.0 * instance);
        close(model.capacity_rps(13), 3.0 * instance);
        close(model.capacity_rps(0), instance);
    }
}
