//! Simulated time advances (issue 23, case 2). A closed loop starts a client's next operation
//! when the previous one ends plus a think time; with a think time of zero and operations
//! that take no time it looped at one instant forever (681 MB after 10 s for one client, an
//! abort at 5.9 GB for a hundred) while `check` said "500 operations, under a second". Loading
//! refuses every such combination at its `think_time`, naming the zeros; the engine stops a
//! loop that only draws make, with an error; and the estimate announces what a think time of
//! 1 µs costs.

use retrystorm::engine::{MAX_INSTANT_OPERATIONS, Quiet, simulate};
use retrystorm::model::{Arrivals, Model};
use retrystorm::run::run_scenario;

use crate::support::{Collector, fresh_folder, retrystorm, scenario};

/// One client thinking `think`, over a network and upstream given as the rest of the file.
/// `think_time` is at line 7, column 14.
fn closed_loop(think: &str, rest: &str) -> String {
    format!(
        "name = \"loop\"\nduration = \"10s\"\nbucket = \"1s\"\n[clients]\ncount = 1\nworkload = \"closed\"\nthink_time = \"{think}\"\n{rest}"
    )
}

/// The cases: answers that take no time over a network of no latency (a success
/// without work, a rejecting outage, a rate limit, a cache hit of no time), and a breaker that
/// refuses locally over the default 1 ms latency, and a success without work over a link of
/// no latency, each with what names it in the error.
const INSTANT_CASES: [(&str, &str, &str); 6] = [
    (
        "zero-time success",
        "[network]\nlatency = \"0s\"\n[upstream]\nworkers = 10\nservice_time = \"0s\"\n",
        "network.latency = 0s and upstream.service_time = 0s: a success takes no time",
    ),
    (
        "rejecting outage",
        "[network]\nlatency = \"0s\"\n[upstream]\nworkers = 10\nservice_time = \"10ms\"\ncapacity = [{ at = \"2s\", factor = 1 }, { at = \"2s\", factor = 0 }]\noutage = \"reject\"\n[[policy]]\nname = \"no retries\"\nmax_attempts = 0\n",
        "upstream.outage = \"reject\" while capacity is zero: answered 503 at once, and policy \"no retries\" has max_attempts = 0",
    ),
    (
        "rate limit",
        "[network]\nlatency = \"0s\"\n[upstream]\nworkers = 10\nservice_time = \"10ms\"\nrate_limit = { rate = 10 }\n[[policy]]\nname = \"no retries\"\nmax_attempts = 0\n",
        "upstream.rate_limit: answered 429 at once",
    ),
    (
        "cache hit of no time",
        "[network]\nlatency = \"0s\"\n[upstream]\nworkers = 10\nservice_time = \"10ms\"\ncache = { hit_ratio = 1.0, hit_time = \"0s\", fills = 100 }\n",
        "upstream.cache hit_time = 0s: a success takes no time",
    ),
    (
        "open breaker",
        "[upstream]\nworkers = 10\nservice_time = \"10ms\"\nerrors = { rate = 1.0 }\n[[policy]]\nname = \"breaker\"\ncontrols = [{ kind = \"circuit-breaker\" }]\n",
        "the circuit-breaker control refuses a call locally, at once",
    ),
    (
        "zero-time link",
        "[[link]]\nfrom = \"clients\"\nto = \"upstream\"\nlatency = \"0s\"\n[upstream]\nworkers = 10\nservice_time = \"0s\"\n",
        "the [[link]] from \"clients\" to \"upstream\" has latency = 0s and upstream.service_time = 0s: a success takes no time",
    ),
];

/// Each of the endless loops is refused by `check` and by `run` at its `think_time`
/// (file:line:col), naming the zeros that make it and what would be valid, and `run` writes
/// nothing. On main `check` accepted all five and `run` looped until killed (1.1 to 1.4 GB
/// within 20 s for one client; see the issue).
#[test]
fn a_zero_think_time_with_operations_of_no_time_is_refused_at_its_line() {
    let folder = fresh_folder("time-advances-refused");
    for (name, rest, cause) in INSTANT_CASES {
        let path = folder.join(format!("{}.toml", name.replace(' ', "-")));
        std::fs::write(&path, closed_loop("0us", rest)).unwrap();
        let path = path.to_str().unwrap();
        let out = folder.join("out");
        for args in [
            vec!["check", path],
            vec!["run", path, "--out", out.to_str().unwrap()],
        ] {
            let output = retrystorm(&args);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(
                output.status.code(),
                Some(1),
                "{name}, {}: {stderr}",
                args[0]
            );
            assert!(
                stderr.starts_with(&format!(
                    "retrystorm: {path}:7:14: think_time = 0s with operations of policy"
                )),
                "{name}, {}: {stderr}",
                args[0]
            );
            for part in [
                cause,
                "never lets simulated time advance",
                "give think_time a mean above zero (as \"1ms\")",
            ] {
                assert!(
                    stderr.contains(part),
                    "{name}, {}: lacks {part:?}: {stderr}",
                    args[0]
                );
            }
        }
        assert!(!out.join("loop").exists(), "{name}: nothing is written");
    }
}

/// An override that makes the loop is named as the place to fix: `--set
/// clients.think_time=0us` on a breaker's scenario that thinks 10 ms.
#[test]
fn a_zero_think_time_set_on_the_command_line_is_refused_at_the_override() {
    let folder = fresh_folder("time-advances-override");
    let path = folder.join("breaker.toml");
    std::fs::write(&path, closed_loop("10ms", INSTANT_CASES[4].1)).unwrap();
    let path = path.to_str().unwrap();
    assert_eq!(retrystorm(&["check", path]).status.code(), Some(0));
    let output = retrystorm(&["check", path, "--set", "clients.think_time=0us"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "retrystorm: {path}: --set clients.think_time=0us: think_time = 0s"
        )),
        "{stderr}"
    );
}

/// What the error offers is valid: a think time of 1 µs against the same instant answers, and
/// a zero think time over a network that takes time. `check` announces the cost of the first:
/// 10 s at 0.58 µs an operation (1 µs mean, cut to whole microseconds) is 17.2 million
/// operations, where main announced at most 133 k events for a run of 171 million (the issue)
/// and 13 to 706 million here for 68.7 million measured.
#[test]
fn a_positive_think_time_or_latency_is_accepted_and_announced() {
    let folder = fresh_folder("time-advances-accepted");
    let instant = folder.join("instant.toml");
    std::fs::write(&instant, closed_loop("1us", INSTANT_CASES[0].1)).unwrap();
    let output = retrystorm(&["check", instant.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("cost: 17.2 million operations, "),
        "{stdout}"
    );
    let slow = folder.join("slow.toml");
    let rest = INSTANT_CASES[0]
        .1
        .replace("latency = \"0s\"", "latency = \"1ms\"");
    std::fs::write(&slow, closed_loop("0us", &rest)).unwrap();
    let output = retrystorm(&["check", slow.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

/// A loop that only draws make, which no check can see: a zero think time over a lognormal
/// latency and service time of sigma 5, whose draws are 0 µs 99% of the time (mean 1 µs,
/// median 4 millionths of it). On main it ran, 2.3 million events in one simulated second,
/// each client stuck at instants for as long as its draws stayed zero; now the engine stops it
/// after [`MAX_INSTANT_OPERATIONS`] operations in a row at one instant, with an error that
/// names the loop, and `run` exits 1 writing nothing.
#[test]
fn the_engine_stops_a_loop_that_only_draws_make() {
    let rest = "[network]\nlatency = { distribution = \"lognormal\", mean = \"1us\", sigma = 5 }\n[upstream]\nworkers = 10\nservice_time = { distribution = \"lognormal\", mean = \"1us\", sigma = 5 }\n";
    let text = closed_loop("0us", rest).replace("duration = \"10s\"", "duration = \"1s\"");
    let loaded = scenario(&text);
    let stalled = run_scenario(&loaded, vec![Collector::default()]).unwrap_err();
    assert_eq!(stalled.policy, "article");
    assert_eq!(stalled.client, 0);
    assert_eq!(stalled.operations, MAX_INSTANT_OPERATIONS);
    assert!(stalled.at < 1_000_000, "{stalled}");

    let folder = fresh_folder("time-advances-draws");
    let path = folder.join("draws.toml");
    std::fs::write(&path, &text).unwrap();
    let out = folder.join("out");
    // The estimate allows for what such draws could do (128 operations a microsecond, each
    // leaving a timer), more than this machine's memory: `run` refuses it unless asked.
    let refused = retrystorm(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--no-cost-limit"), "{stderr}");
    let output = retrystorm(&[
        "run",
        path.to_str().unwrap(),
        "--no-cost-limit",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "\nretrystorm: loop: policy \"article\": simulated time stopped advancing at "
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("started 128 operations in a row at that instant"),
        "{stderr}"
    );
    assert!(!out.join("loop").exists(), "nothing is written");
}

/// The guard holds for a model that validation never saw: the accepted think time of 1 µs set
/// to zero in the model itself, against answers that take no time, loops at one instant with
/// certainty (on main this simulation never returns). The engine stops it at the first
/// instant, after 128 operations, instead of filling the memory with their timers.
#[test]
fn the_engine_stops_an_endless_loop_at_one_instant() {
    let loaded = scenario(&closed_loop("1us", INSTANT_CASES[0].1));
    let mut model = Model::new(&loaded, &loaded.policy[0]);
    let Arrivals::Closed { think_mean_us, .. } = &mut model.users.workload else {
        panic!("a closed loop");
    };
    *think_mean_us = 0.0;
    let stalled = simulate(&model, &mut Quiet).unwrap_err();
    assert_eq!(
        (stalled.client, stalled.operations),
        (0, MAX_INSTANT_OPERATIONS)
    );
    // The client's first operation starts after a think time of zero, at 0.
    assert_eq!(stalled.at, 0);
}

/// The memory announced bounds what a closed loop of instant answers takes: each of its 1.7
/// million operations a second leaves its attempt's 1 s timer in the event queue until it is
/// due, 38 MiB of timers that the estimate did not count (it announced 9 MiB for a run that
/// peaked at 47 MiB). `--stats` reads the peak from the kernel (`VmHWM`), the whole process.
#[test]
fn the_estimate_bounds_the_memory_of_a_closed_loop_of_instant_answers() {
    let folder = fresh_folder("time-advances-memory");
    let path = folder.join("instant.toml");
    let text = closed_loop("1us", INSTANT_CASES[0].1).replace("\"10s\"", "\"3s\"");
    std::fs::write(&path, &text).unwrap();
    let estimate = retrystorm::run::cost::Estimate::of(&scenario(&text), 1).memory_bytes();
    let out = folder.join("out");
    let output = retrystorm(&[
        "run",
        path.to_str().unwrap(),
        "--stats",
        "--no-charts",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let peak_mib: f64 = stdout
        .split("peak memory ")
        .nth(1)
        .and_then(|rest| rest.split(" MiB").next())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("no peak memory in {stdout}"));
    let timers_mib = 30.0;
    assert!(
        peak_mib > timers_mib,
        "{peak_mib} MiB: the timers no longer pile up, and this test no longer tests the bound"
    );
    assert!(
        peak_mib * 1024.0 * 1024.0 <= estimate,
        "peak {peak_mib} MiB, estimated at most {} MiB",
        estimate / 1024.0 / 1024.0
    );
}
