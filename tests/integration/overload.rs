//! Servers under overload: each behaviour against a bound from theory or from its source.

use retrystorm::base::time::MICROS_PER_SECOND;
use retrystorm::run::PolicyRun;

use crate::support::{erlang_b, relative_error, run, scenario};

/// One upstream of `workers` workers and `service`, Poisson arrivals at `rate` per second,
/// answers that nobody retries (overload status 500, deadline = attempt timeout), 1 ms network.
/// `upstream` adds lines to the `[upstream]` table.
fn upstream(rate: f64, workers: u32, service: &str, upstream: &str, duration_s: u32) -> String {
    format!(
        r#"
name = "overload"
seed = 4
duration = "{duration_s}s"
bucket = "1s"
[clients]
count = 1000
rate = {per_client}
deadline = "{timeout}"
attempt_timeout = "{timeout}"
[network]
latency = "1ms"
[upstream]
workers = {workers}
service_time = {service}
overload_status = 500
{upstream}
[[policy]]
name = "once"
max_attempts = 1
"#,
        per_client = rate / 1000.0,
        timeout = "100s",
    )
}

fn only(result: &retrystorm::run::ScenarioRun) -> &PolicyRun {
    &result.policies[0]
}

/// Requests the upstream served per second over buckets `from..to`.
fn served_rps(policy: &PolicyRun, from: usize, to: usize) -> f64 {
    let service = &policy.measurements.services[0];
    let served: u64 = service.buckets[from..to].iter().map(|b| b.served).sum();
    served as f64 / (to - from) as f64
}

/// Rejecting costs work (Google SRE book, ch. 21: rejecting a cheap request costs about as
/// much as serving it). A rejection holding a worker for `r` of a service time `S` leaves, in
/// saturation, `a` served per second where `a S + (λ - a) r S = c`, so the goodput is
/// `(μ - r λ) / (1 - r)` with `μ = c / S`, zero at `λ = μ / r`. With c = 10, S = 10 ms
/// (μ = 1000/s), λ = 2000/s: 750/s at r = 0.2 and 333/s at r = 0.4, against 1000/s when
/// rejections are free; at r = 0.5 the rejections take every worker-second. The queue (20) is always full, so every worker-second is accounted
/// for; the 2% bound covers the Poisson noise of 60,000 requests a second over 50 s.
#[test]
fn rejections_that_cost_work_cut_goodput_as_the_closed_form_says() {
    for (cost, expected) in [(0.0, 1000.0), (0.2, 750.0), (0.4, 1000.0 / 3.0)] {
        let text = upstream(
            2000.0,
            10,
            "\"10ms\"",
            &format!("queue_limit = 20\nrejection_cost = {{ queue_full = {cost} }}"),
            60,
        );
        let result = run(&scenario(&text));
        let served = served_rps(only(&result), 5, 55);
        eprintln!("rejection cost {cost}: {served:.1} served/s (closed form {expected})");
        assert!(
            relative_error(served, expected) < 0.02,
            "cost {cost}: {served} vs {expected}"
        );
    }
    let text = upstream(
        2000.0,
        10,
        "\"10ms\"",
        "queue_limit = 20\nrejection_cost = { queue_full = 0.5 }",
        60,
    );
    let collapsed = served_rps(only(&run(&scenario(&text))), 5, 55);
    assert!(
        collapsed < 0.02 * 1000.0,
        "at lambda = mu / r: {collapsed}/s"
    );
}

/// A service crashes when its queue has stayed above `queue_above` for `hold`, is down for
/// `restart_after`, and comes back to the same load: a crash loop (SRE book, ch. 22). At
/// λ = 1000/s against μ = 100/s the queue grows by 900 a second and passes 500 after 0.556 s;
/// the arrivals' noise moves that by √556 / 900 ≈ 0.026 s, so the first crash comes at
/// 1.556 ± 0.13 s (five standard deviations). Each restart finds an empty queue and the same
/// load, so the next crash follows 1.556 s after it, and the service is down exactly
/// `restart_after` each time.
#[test]
fn a_service_crashes_when_overloaded_long_enough_and_loops() {
    let text = upstream(
        1000.0,
        10,
        "\"100ms\"",
        "queue_limit = 100000\ncrash = { queue_above = 500, hold = \"1s\", restart_after = \"5s\" }",
        20,
    );
    let result = run(&scenario(&text));
    let restarts = only(&result).measurements.services[0].downtime.periods();
    let seconds = |micros: u64| micros as f64 / MICROS_PER_SECOND as f64;
    eprintln!("crashes: {restarts:?}");
    assert!(restarts.len() >= 3, "{restarts:?}");
    let (down, up) = restarts[0];
    assert!(
        (seconds(down) - 1.556).abs() < 0.13,
        "first crash at {down}"
    );
    for &(down, up) in restarts {
        assert_eq!(up - down, 5 * MICROS_PER_SECOND);
    }
    let (next, _) = restarts[1];
    assert!(
        (seconds(next - up) - 1.556).abs() < 0.13,
        "next crash {next}"
    );
    let crashes: u64 = only(&result).measurements.services[0]
        .buckets
        .iter()
        .map(|b| b.crashes)
        .sum();
    assert_eq!(crashes, restarts.len() as u64);
}

/// After a restart, work takes `1 + (factor - 1) exp(-n / requests)` times longer, `n` the
/// requests served since the restart. With one worker, a constant 10 ms service and
/// `factor = 3, requests = 100`, the `k`-th request after the restart holds the worker exactly
/// `round(10 ms * (1 + 2 exp(-k / 100)))`: the worker time after the restart is that sum over
/// the requests it served, to the microsecond.
#[test]
fn a_restarted_service_is_cold_exactly_as_configured() {
    let text = upstream(
        20.0,
        1,
        "\"10ms\"",
        r#"queue_limit = 100000
outage = "crash"
capacity = [ { at = "1s", factor = 1 }, { at = "1s", factor = 0 }, { at = "2s", factor = 0 }, { at = "2s", factor = 1 } ]
cold_start = { factor = 3.0, requests = 100 }"#,
        30,
    );
    let result = run(&scenario(&text));
    let service = &only(&result).measurements.services[0];
    let after: Vec<_> = service.buckets[2..].iter().collect();
    let released: u64 = after.iter().map(|b| b.released).sum();
    let held: u64 = after.iter().map(|b| b.held_us).sum();
    let expected: u64 = (0..released)
        .map(|k| (10_000.0 * (1.0 + 2.0 * (-(k as f64) / 100.0).exp())).round() as u64)
        .sum();
    assert!(released > 400, "{released}");
    assert_eq!(held, expected);
    // Before the crash, every request took its plain 10 ms.
    let before = &service.buckets[0];
    assert_eq!(before.held_us, 10_000 * before.released);
}

/// Bronson et al. (HotOS '21): a look-aside cache is filled only by answers that reach their
/// caller in time. After a restart the hit ratio is 0; a miss costs 20 ms (10 workers: 500/s)
/// against 2000/s offered, so the queue (1000, 2 s of work) outgrows the callers' 200 ms at
/// once, no answer is in time, nothing fills the cache, and goodput stays near zero: a
/// metastable failure. A read-through cache is filled by every completed miss, warms towards
/// 90% hits (2.9 ms a request: 3,448/s), and the service recovers to the full 2000/s.
#[test]
fn a_look_aside_cache_never_refills_under_load_and_a_read_through_one_does() {
    let text = |fill: &str| {
        upstream(
            2000.0,
            10,
            "\"20ms\"",
            &format!(
                r#"queue_limit = 1000
outage = "crash"
capacity = [ {{ at = "5s", factor = 1 }}, {{ at = "5s", factor = 0 }}, {{ at = "6s", factor = 0 }}, {{ at = "6s", factor = 1 }} ]
cache = {{ hit_ratio = 0.9, hit_time = "1ms", fill = "{fill}", fills = 1000 }}"#
            ),
            40,
        )
        .replace("\"100s\"", "\"200ms\"")
    };
    let goodput = |policy: &PolicyRun, from: usize| {
        let succeeded: u64 = policy.measurements.buckets[from..40]
            .iter()
            .map(|b| b.succeeded)
            .sum();
        succeeded as f64 / (40 - from) as f64
    };
    let look_aside = run(&scenario(&text("look-aside")));
    let read_through = run(&scenario(&text("read-through")));
    let (stuck, recovered) = (
        goodput(only(&look_aside), 20),
        goodput(only(&read_through), 20),
    );
    eprintln!("after the restart: look-aside {stuck:.0}/s, read-through {recovered:.0}/s");
    // Before the restart both serve everything.
    assert!(goodput(only(&look_aside), 1).min(2000.0) > 0.0);
    assert!(stuck < 0.05 * 2000.0, "look-aside: {stuck}/s");
    assert!(
        relative_error(recovered, 2000.0) < 0.03,
        "read-through: {recovered}/s"
    );
}

/// Under a standing queue, FIFO serves only requests whose callers have given up, and LIFO
/// serves fresh ones (joemag1/queueingsimulator; Maurer, "Fail at Scale"). λ = 1200/s against
/// μ = 1000/s (10 workers of 10 ms) keeps a queue of 5000 full, 5 s of work against a 500 ms
/// timeout: once it is full, FIFO completes nothing in time; LIFO's newest request waits at
/// most a few service times, so nearly all it serves (μ) succeeds. CoDel sheds at dequeue by
/// its control law and keeps the sojourn below the timeout (not near its 5 ms target: these
/// clients do not slow down when dropped, as TCP does), so all it serves succeeds too.
/// Adaptive LIFO serves the newest and sheds anything older than M = 5 ms while the queue
/// stands: nearly μ in time, and a median latency of a few service times.
#[test]
fn queue_disciplines_decide_who_is_served_under_a_standing_queue() {
    let text = |discipline: &str| {
        upstream(
            1200.0,
            10,
            "\"10ms\"",
            &format!("queue_limit = 5000\n{discipline}"),
            60,
        )
        .replace("\"100s\"", "\"500ms\"")
    };
    let succeeded_rps = |policy: &PolicyRun| {
        let succeeded: u64 = policy.measurements.buckets[20..60]
            .iter()
            .map(|b| b.succeeded)
            .sum();
        succeeded as f64 / 40.0
    };
    let fifo = run(&scenario(&text("")));
    let fifo_rps = succeeded_rps(only(&fifo));
    eprintln!("FIFO: {fifo_rps:.0}/s in time");
    assert!(fifo_rps < 20.0, "FIFO: {fifo_rps}/s");
    for discipline in ["lifo", "codel", "adaptive-lifo"] {
        let result = run(&scenario(&text(&format!(
            "queue_discipline = {{ kind = \"{discipline}\" }}"
        ))));
        let policy = only(&result);
        let rps = succeeded_rps(policy);
        let (p50, p99) = (
            policy.summary.p50_ms.unwrap(),
            policy.summary.p99_ms.unwrap(),
        );
        eprintln!("{discipline}: {rps:.0}/s in time, p50 {p50:.1} ms, p99 {p99:.1} ms");
        assert!(rps > 0.9 * 1000.0, "{discipline}: {rps}/s");
        assert!(p99 < 500.0, "{discipline}: p99 {p99} ms");
        if discipline == "adaptive-lifo" {
            // M plus the service and the network: a few service times.
            assert!(p50 < 30.0, "{discipline}: p50 {p50} ms");
        }
    }
}

/// Cancellation stops work whose caller has gone. With a 1 ms network, a 100 ms service, ample
/// workers and a 50 ms timeout, every attempt reaches a free worker 1 ms after it is sent and
/// its caller gives up 49 ms later: with cancellation the worker stops then, without it
/// finishes: exactly 49 ms or 100 ms of wasted work per attempt. (The caller's cancellation
/// reaches the service at once; a real one crosses the network.)
#[test]
fn cancellation_stops_work_whose_caller_has_gone() {
    for (cancellation, per_attempt) in [(true, 49_000u64), (false, 100_000)] {
        let text = upstream(
            100.0,
            1000,
            "\"100ms\"",
            &format!("cancellation = {cancellation}"),
            10,
        )
        .replace("\"100s\"", "\"50ms\"");
        let result = run(&scenario(&text));
        let service = &only(&result).measurements.services[0];
        let totals = service.totals();
        // The run ends with the last operation; an attempt still in service then is not
        // counted as let go of.
        assert!(totals.received > 800 && totals.received - totals.released <= 10);
        assert_eq!(totals.wasted_work_us, per_attempt * totals.released);
        let cancelled = if cancellation { totals.released } else { 0 };
        assert_eq!(totals.cancelled, cancelled);
    }
}

/// A fixed concurrency limit equal to the workers admits no queue: M/M/c/c, whose refused share
/// is Erlang B (c = 10, a = 8: 12.17%), however long the queue may be. The 3% bound covers
/// 300 s of 800 requests a second.
#[test]
fn a_fixed_concurrency_limit_at_the_workers_is_erlang_b() {
    let text = upstream(
        800.0,
        10,
        "{ distribution = \"exponential\", mean = \"10ms\" }",
        "queue_limit = 100000\nconcurrency_limit = { algorithm = \"fixed\", limit = 10, status = 500 }",
        300,
    );
    let result = run(&scenario(&text));
    let totals = only(&result).measurements.services[0].totals();
    let refused = totals.concurrency_limited as f64 / totals.received as f64;
    let expected = erlang_b(10, 8.0);
    eprintln!("limit 10: refused {refused:.5} (Erlang B {expected:.5})");
    assert!(relative_error(refused, expected) < 0.03);
    assert_eq!(totals.queued, 0);
}

/// The adaptive limits under twice the load a service can serve (20 workers of a constant
/// 10 ms, 4000/s offered, an unbounded queue). Without a limit the queue grows by 2000 a second
/// and a request waits seconds. Vegas (Netflix `VegasLimit`) estimates the queue as
/// `L (1 - rtt_noload / rtt)`, grows while it is at most `3 f(L)` and shrinks above `6 f(L)`,
/// `f(L) = 1` below 100: about 3 to 6 requests wait, 1.15 to 1.3 service times in the service;
/// its probes, which reset the no-load RTT to a loaded one every 15 L to 30 L samples, let
/// more wait now and then, so the bound is 2 service times at the median and 80% of the
/// workers' throughput. Envoy's gradient controller settles where
/// `minRTT (1 + buffer) / sampleRTT = 1 - 1/sqrt(L)`: with minRTT = 10 ms (measured at 3 in
/// flight), buffer 25% and L at least the 20 workers, a median of at most
/// `10 ms * 1.25 / (1 - 1/sqrt(20)) = 16.1 ms`. Gradient2 (`Gradient2Limit`) ignores drops and
/// stays between its floor of 20 and its ceiling of 200: the requests in the service stay at
/// most 200, where the unlimited queue holds tens of thousands.
#[test]
fn adaptive_limits_hold_latency_where_their_algorithms_settle() {
    let text = |limit: &str| {
        upstream(
            4000.0,
            20,
            "\"10ms\"",
            &format!("queue_limit = 100000000\n{limit}"),
            30,
        )
        .replace("\"100s\"", "\"60s\"")
    };
    // The median time in the service, from the per-second medians of the users' latency
    // less the two 1 ms network hops, over the steady buckets.
    let median_in_service = |policy: &PolicyRun| {
        let medians: Vec<f64> = policy.measurements.latency[5..28]
            .iter()
            .map(|histogram| histogram.quantile(0.5).unwrap() / 1000.0 - 2.0)
            .collect();
        medians.iter().sum::<f64>() / medians.len() as f64
    };
    let unlimited = run(&scenario(&text("")));
    let waited = median_in_service(only(&unlimited));
    eprintln!("no limit: {waited:.0} ms in the service");
    assert!(waited > 1000.0);
    for (algorithm, bound_ms, throughput) in [("vegas", 20.0, 0.8), ("envoy-gradient", 16.1, 0.9)] {
        let result = run(&scenario(&text(&format!(
            "concurrency_limit = {{ algorithm = \"{algorithm}\", status = 500 }}"
        ))));
        let policy = only(&result);
        let in_service = median_in_service(policy);
        let served = served_rps(policy, 5, 28);
        eprintln!("{algorithm}: {in_service:.2} ms in the service, {served:.0} served/s");
        assert!(in_service < bound_ms, "{algorithm}: {in_service} ms");
        assert!(
            served > throughput * 2000.0,
            "{algorithm}: {served} served/s"
        );
    }
    let gradient = run(&scenario(&text(
        "concurrency_limit = { algorithm = \"gradient2\", status = 500 }",
    )));
    let service = &only(&gradient).measurements.services[0];
    let most = service
        .buckets
        .iter()
        .map(|b| b.queue_len + b.busy)
        .max()
        .unwrap();
    assert!(
        (20..=200).contains(&most),
        "gradient2: {most} in the service"
    );
    assert!(service.totals().concurrency_limited > 0);
}

/// `peak_queue_len` is the longest the queue was at any instant, not at a bucket's end: 50
/// requests sent at the same instant to one worker of 10 ms make a queue of 49 at once; it has
/// drained (to 0) long before the one-second bucket ends. And `capacity_rps` follows a cold
/// start: a service restarted at factor 3 serves a third as fast right after the restart.
#[test]
fn the_queue_peak_is_instantaneous_and_capacity_follows_a_cold_start() {
    let together = scenario(
        r#"
name = "burst"
duration = "1s"
seed = 3
[clients]
count = 50
workload = "closed"
think_time = "100s"
start = "together"
deadline = "10s"
attempt_timeout = "10s"
[network]
latency = "1ms"
[upstream]
workers = 1
service_time = "10ms"
queue_limit = 100
"#,
    );
    let burst = run(&together);
    let upstream = &burst.policies[0].measurements.services[0];
    assert_eq!(upstream.peak_queue_len, 49);
    assert_eq!(upstream.buckets[0].queue_len, 0);

    let cold = scenario(
        r#"
name = "cold"
duration = "6s"
seed = 3
bucket = "500ms"
[clients]
count = 10
rate = 10.0
deadline = "10s"
attempt_timeout = "10s"
[network]
latency = "1ms"
[upstream]
workers = 10
service_time = "10ms"
queue_limit = 1000
outage = "crash"
capacity = [ { at = "1s", factor = 1.0 }, { at = "1s", factor = 0.0 }, { at = "2s", factor = 0.0 }, { at = "2s", factor = 1.0 } ]
cold_start = { factor = 3, time = "1h" }
"#,
    );
    let restarted = run(&cold);
    let capacity = |index: usize| {
        restarted.policies[0].measurements.services[0].capacity_rps[index]
            .expect("a leaf has a capacity")
    };
    // Warm before the outage: 10 workers of 10 ms. Right after the restart (decaying over an
    // hour, so still 3 times as slow a second later): a third of that.
    assert_eq!(capacity(0), 1000.0);
    let after = capacity(5);
    assert!((after - 1000.0 / 3.0).abs() < 1.0, "cold capacity {after}");
}

/// A crash loop (issue 23): `in_flight_above = 0` with a 1 µs hold and restart crashes the
/// upstream at every request it admits, 20,000 times in 10 s. The report drew one block per
/// crash in every chart (an 810 MB `report.html` for 1.5 million crashes); a chart can show at
/// most a block per pixel of its width, so blocks less than a pixel apart are one, and the
/// report stays small however many crashes there are: here under 1 MB, with fewer rectangles in
/// the load chart than it is pixels wide. The count of crashes stays exact.
#[test]
fn a_crash_loop_keeps_the_report_small() {
    use retrystorm::output::charts::{CHART_SIZE, Chart, Format, render};
    let text = upstream(
        2000.0,
        10,
        "\"10ms\"",
        "crash = { in_flight_above = 0, hold = \"1us\", restart_after = \"1us\" }",
        10,
    );
    let result = run(&scenario(&text));
    let crashes: u64 = only(&result).measurements.services[0]
        .buckets
        .iter()
        .map(|b| b.crashes)
        .sum();
    let received: u64 = only(&result).measurements.services[0]
        .buckets
        .iter()
        .map(|b| b.received)
        .sum();
    assert!(crashes > 15_000, "{crashes} crashes");
    assert!(crashes <= received, "a crash needs a request admitted");
    let report = retrystorm::output::report::report_html(&result).unwrap();
    assert!(
        report.len() < 1_000_000,
        "report.html is {} bytes",
        report.len()
    );
    let load = String::from_utf8(render(&result, Chart::Load, Format::Svg).unwrap()).unwrap();
    let rects = load.matches("<rect").count();
    assert!(rects < CHART_SIZE.0 as usize, "{rects} rectangles");
}

/// A service time of zero is legitimate (a cache hit, an answer from memory): a worker then
/// serves any number of requests at one instant, so its capacity has no bound. `timeseries.csv`
/// wrote it as `inf`, which no CSV reader takes for a number (issue 23); it is now empty, as
/// where there is no measure, and every other cell of the column is a finite number. The load
/// chart draws no capacity line for it, and names none in its legend.
#[test]
fn a_service_that_takes_no_time_writes_no_infinite_capacity() {
    use retrystorm::output::charts::{Chart, Format, render};
    let text = upstream(100.0, 10, "\"0ms\"", "", 3);
    let result = run(&scenario(&text));
    let csv = String::from_utf8(retrystorm::output::timeseries_csv(&result)).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = header
        .iter()
        .position(|name| *name == "capacity_rps")
        .unwrap();
    let mut rows = 0;
    for line in lines {
        let cell = line.split(',').nth(column).unwrap();
        assert_eq!(cell, "", "{line}");
        rows += 1;
    }
    assert!(rows >= 3);
    assert!(!csv.contains("inf"), "{csv}");
    let load = String::from_utf8(render(&result, Chart::Load, Format::Svg).unwrap()).unwrap();
    assert!(!load.contains("capacity"), "a capacity in the legend");
    let timed = run(&scenario(&upstream(100.0, 10, "\"1ms\"", "", 3)));
    let load = String::from_utf8(render(&timed, Chart::Load, Format::Svg).unwrap()).unwrap();
    assert!(load.contains("upstream capacity"));
}

/// The estimate's high end bounds the events of a crash loop (issue 23): each crash adds a
/// crash check and a restart to the request that set it off, which the estimate did not count
/// (its high end was below what the loop ran).
#[test]
fn the_estimate_bounds_a_crash_loops_events() {
    let text = upstream(
        2000.0,
        10,
        "\"10ms\"",
        "crash = { in_flight_above = 0, hold = \"1us\", restart_after = \"1us\" }",
        5,
    );
    let scenario = scenario(&text);
    let estimate = retrystorm::run::cost::Estimate::of(&scenario, 1);
    let result = run(&scenario);
    let measured = &only(&result).measurements;
    // Per operation, as the estimate counts the mean arrivals and the run its Poisson draw.
    let per_operation = measured.events as f64 / measured.operations as f64;
    let estimated = estimate.most_events() / estimate.policies[0].operations;
    assert!(
        per_operation <= estimated,
        "{per_operation} events per operation, estimated at most {estimated}"
    );
}
