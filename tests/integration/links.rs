//! Links: the latency and loss of one edge of a topology, overriding `[network]` there.

use retrystorm::output::{summary_csv, timeseries_csv};
use retrystorm::vocabulary::outcome::AttemptOutcome;

use crate::support::{self, assert_contains, run, run_traced, scenario};

/// Clients -> edge -> api, with constant service times and no overload: every user attempt's
/// time is a sum of fixed hops, so each link's latency shows exactly.
const CHAIN: &str = r#"name = "chain"
duration = "5s"
[clients]
count = 100
rate = 2.0
deadline = "2s"
attempt_timeout = "1s"
calls = "edge"
[network]
latency = "1ms"
[[service]]
name = "edge"
workers = 100
service_time = "2ms"
calls = ["api"]
[[service]]
name = "api"
workers = 100
service_time = "3ms"
[[policy]]
name = "article"
"#;

/// The time from send to answer of every user attempt of `text`'s only policy, in µs.
fn round_trips(text: &str) -> Vec<u64> {
    let (run, records) = run_traced(&scenario(text));
    assert!(run.policies[0].measurements.operations > 500);
    records[0]
        .iter()
        .map(|record| {
            assert_eq!(record.outcome, AttemptOutcome::Ok, "{record:?}");
            record.end - record.send
        })
        .collect()
}

/// `[network]` covers every hop no link overrides: clients to edge, edge to api, and back,
/// 1 ms each, plus 2 ms of work at the edge and 3 ms at the api: 9 ms. A link to the edge of
/// 40 ms and one from the edge to the api of 7 ms make it 2 x 40 + 2 + 2 x 7 + 3 = 99 ms, for
/// every attempt.
#[test]
fn each_hop_takes_its_links_latency_both_ways() {
    assert!(round_trips(CHAIN).iter().all(|&micros| micros == 9_000));
    let links = CHAIN.replace(
        "[[service]]\nname = \"edge\"",
        "[[link]]\nfrom = \"clients\"\nto = \"edge\"\nlatency = \"40ms\"\n\
         [[link]]\nfrom = \"edge\"\nto = \"api\"\nlatency = \"7ms\"\n\
         [[service]]\nname = \"edge\"",
    );
    let trips = round_trips(&links);
    assert!(trips.iter().all(|&micros| micros == 99_000), "{trips:?}");
}

/// A link's random latency is drawn from its own distribution, each way. With an exponential
/// latency of mean m on the clients' link and 1 ms of constant work, a round trip less the work
/// is the sum of two independent exponentials: a gamma of shape 2, whose mean is 2m and whose
/// median is 1.67835 m (the root of 1 - e^-x (1 + x) = 1/2). Over n round trips the sample
/// mean lies within 4 standard errors (sd sqrt(2) m / sqrt(n)) and the share below the median
/// within 4 sd of 1/2 (sqrt(1/4n)), except with probability below 10^-4 each.
#[test]
fn a_links_latency_follows_its_distribution() {
    let text = r#"name = "exponential-link"
duration = "20s"
[clients]
count = 1000
rate = 1.0
deadline = "5s"
attempt_timeout = "5s"
[network]
latency = "1ms"
[[link]]
from = "clients"
to = "upstream"
latency = { distribution = "exponential", mean = "10ms" }
[upstream]
workers = 1000
service_time = "1ms"
[[policy]]
name = "article"
"#;
    let hops: Vec<f64> = round_trips(text)
        .iter()
        .map(|&micros| (micros - 1_000) as f64)
        .collect();
    let n = hops.len() as f64;
    assert!(n > 15_000.0, "{n}");
    let mean = hops.iter().sum::<f64>() / n;
    let standard_error = 2f64.sqrt() * 10_000.0 / n.sqrt();
    assert!(
        (mean - 20_000.0).abs() < 4.0 * standard_error,
        "mean {mean} µs"
    );
    let below = hops.iter().filter(|&&hop| hop < 16_783.5).count() as f64 / n;
    assert!((below - 0.5).abs() < 4.0 * (0.25 / n).sqrt(), "{below}");
}

/// A link's losses are its own: a request loss of 0.2 on the clients' link, over a network that
/// loses nothing, times out a fifth of the attempts (within 4 binomial sd), and nothing else
/// fails.
#[test]
fn a_links_loss_is_its_own() {
    let text = CHAIN.replace(
        "[[service]]\nname = \"edge\"",
        "[[link]]\nfrom = \"clients\"\nto = \"edge\"\nrequest_loss = 0.2\n\
         [[service]]\nname = \"edge\"",
    );
    let (_, records) = run_traced(&scenario(&text));
    let n = records[0].len() as f64;
    let lost = records[0]
        .iter()
        .filter(|record| record.outcome == AttemptOutcome::Timeout)
        .count() as f64;
    let others = records[0]
        .iter()
        .filter(|record| !matches!(record.outcome, AttemptOutcome::Timeout | AttemptOutcome::Ok))
        .count();
    assert_eq!(others, 0);
    let share = lost / n;
    assert!(
        (share - 0.2).abs() < 4.0 * (0.2 * 0.8 / n).sqrt(),
        "{share} of {n}"
    );
}

/// A link that says what `[network]` says changes nothing: every draw is addressed by its
/// request, not by the link it takes, and links of one constant latency share the event
/// queue's lane.
#[test]
fn a_link_that_repeats_the_network_changes_nothing() {
    for latency in [
        "\"1ms\"",
        "{ distribution = \"lognormal\", mean = \"3ms\", sigma = 0.6 }",
    ] {
        let plain = CHAIN
            .replace("latency = \"1ms\"", &format!("latency = {latency}"))
            .replace("rate = 2.0", "rate = 20.0")
            .replace(
                "workers = 100\nservice_time = \"3ms\"",
                "workers = 5\nservice_time = { distribution = \"exponential\", mean = \"3ms\" }",
            );
        let links = plain.replace(
            "[[service]]\nname = \"edge\"",
            &format!(
                "[[link]]\nfrom = \"edge\"\nto = \"api\"\nlatency = {latency}\nresponse_loss = 0.0\n\
                 [[service]]\nname = \"edge\""
            ),
        );
        let (plain, links) = (run(&scenario(&plain)), run(&scenario(&links)));
        assert!(plain.policies[0].summary.amplification > 1.0);
        assert_eq!(timeseries_csv(&plain), timeseries_csv(&links));
        assert_eq!(summary_csv(&plain), summary_csv(&links));
    }
}

/// The error for `CHAIN` with a `[[link]]` written before its first service.
fn link_error(link: &str) -> String {
    support::error_with(
        CHAIN,
        "[[service]]\nname = \"edge\"",
        &format!("{link}\n[[service]]\nname = \"edge\""),
    )
}

/// Every bad link names the place to fix and what would be valid. The link starts on line 11.
#[test]
fn a_link_joins_a_caller_to_a_service_it_calls() {
    assert_contains(
        &link_error("[[link]]\nfrom = \"clients\"\nto = \"egde\""),
        &[
            "bad.toml:13:6:",
            "to = \"egde\" names nothing",
            "did you mean \"edge\"?",
        ],
    );
    assert_contains(
        &link_error("[[link]]\nfrom = \"clinets\"\nto = \"edge\""),
        &[
            "bad.toml:12:8:",
            "from = \"clinets\" names nothing",
            "did you mean \"clients\"?",
            "\"clients\", \"edge\", \"api\"",
        ],
    );
    assert_contains(
        &link_error("[[link]]\nfrom = \"clients\"\nto = \"api\""),
        &["bad.toml:13:6:", "the clients call \"edge\", not \"api\""],
    );
    assert_contains(
        &link_error("[[link]]\nfrom = \"api\"\nto = \"edge\""),
        &[
            "bad.toml:13:6:",
            "service \"api\" does not call \"edge\" (it calls no service)",
        ],
    );
    assert_contains(
        &link_error(
            "[[link]]\nfrom = \"edge\"\nto = \"api\"\n[[link]]\nfrom = \"edge\"\nto = \"api\"\nlatency = \"2ms\"",
        ),
        &[
            "bad.toml:14:1:",
            "the link from \"edge\" to \"api\" is described twice",
        ],
    );
    assert_contains(
        &link_error("[[link]]\nfrom = \"clients\"\nto = \"edge\"\nlatency = \"fast\""),
        &["bad.toml:14:11:", "invalid duration \"fast\""],
    );
    assert_contains(
        &link_error("[[link]]\nfrom = \"clients\"\nto = \"edge\"\nrequest_loss = 1.5"),
        &["bad.toml:14:16:", "expected a number from 0 to 1"],
    );
    assert_contains(
        &link_error("[[link]]\nfrom = \"clients\"\nto = \"edge\"\nlatnecy = \"5ms\""),
        &["bad.toml:14:1:", "latnecy"],
    );
}

/// The latency that lets a closed loop's time advance is the clients' link's: over a network
/// of no latency, a link of 1 ms to the upstream makes a success without work take 2 ms, and
/// the scenario loads; a network of 1 ms with a link of none does not (see `time_advances`).
#[test]
fn the_clients_link_is_the_latency_a_closed_loop_waits() {
    let closed = |network: &str, link: &str| {
        format!(
            "name = \"loop\"\nduration = \"1s\"\n[clients]\ncount = 1\nworkload = \"closed\"\nthink_time = \"0us\"\n\
             [network]\nlatency = \"{network}\"\n[[link]]\nfrom = \"clients\"\nto = \"upstream\"\nlatency = \"{link}\"\n\
             [upstream]\nworkers = 1\nservice_time = \"0s\"\n"
        )
    };
    let run = run(&scenario(&closed("0s", "1ms")));
    assert_eq!(run.policies[0].measurements.operations, 500);
    let refused = retrystorm::import::load_str(&closed("1ms", "0s"), "loop.toml", &[]);
    assert_contains(
        &refused.expect_err("a loop at one instant").to_string(),
        &[
            "loop.toml:6:14:",
            "the [[link]] from \"clients\" to \"upstream\" has latency = 0s",
        ],
    );
}
