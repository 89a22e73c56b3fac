//! Latency distributions as dashboards and logs have them, in scenarios: quantiles, a
//! Prometheus histogram (inline or from a CSV file), measured samples from a file, mixtures
//! and the Pareto; files read relative to the scenario, `--set` reaching them, the resolved
//! scenario reloading without the files, and errors that name the field and the file's line.

use retrystorm::base::distribution::Distribution;
use retrystorm::import::{load, load_str};
use retrystorm::scenario::Override;

use crate::support::{self, assert_contains};

/// A scenario in `scenarios/` (so that `data/` is its data folder) with this service time.
fn with_service_time(service_time: &str) -> String {
    format!(
        "name = \"d\"\nduration = \"10s\"\n\n[clients]\ncount = 100\nrate = 1.0\n\n[upstream]\nworkers = 10\nservice_time = {service_time}\n"
    )
}

/// The service time the scenario `text`, read as `scenarios/d.toml`, resolves to.
fn service_time(text: &str, overrides: &[Override]) -> Distribution {
    let scenario =
        load_str(text, "scenarios/d.toml", overrides).unwrap_or_else(|error| panic!("{error}"));
    scenario.upstream.unwrap().service_time
}

/// The error for the scenario `text` read as `scenarios/bad.toml`.
fn error_of(text: &str) -> String {
    match load_str(text, "scenarios/bad.toml", &[]) {
        Ok(_) => panic!("accepted: {text}"),
        Err(error) => error.to_string(),
    }
}

/// The resolved form of a scenario reads back, without its data files, as the same
/// distribution: it writes the file's data inline.
fn assert_resolved_reloads(text: &str) {
    let scenario = load_str(text, "scenarios/d.toml", &[]).unwrap();
    let resolved = scenario.to_resolved_toml();
    let again = load_str(&resolved, "/nonexistent/resolved.toml", &[])
        .unwrap_or_else(|error| panic!("{error}\n{resolved}"));
    assert_eq!(
        again.upstream.unwrap().service_time,
        scenario.upstream.unwrap().service_time
    );
}

/// `scenarios/data/api-latency-buckets.csv`, a Prometheus export in seconds, is read relative
/// to the scenario and is the same distribution as its buckets written inline; its tail's `a`
/// is `ln((1 - 0.99996) / (1 - 0.99999)) / ln(10s / 5s) = 2` exactly, cut at 10 times 10s;
/// and the resolved scenario reloads.
#[test]
fn a_histogram_file_is_read_relative_to_the_scenario() {
    let from_file = with_service_time("{ histogram = \"data/api-latency-buckets.csv\" }");
    let inline = with_service_time(
        "{ histogram = [{ le = \"5ms\", count = 4120 }, { le = \"10ms\", count = 18950 }, { le = \"25ms\", count = 61200 }, { le = \"50ms\", count = 84300 }, { le = \"100ms\", count = 93100 }, { le = \"250ms\", count = 98420 }, { le = \"500ms\", count = 99610 }, { le = \"1s\", count = 99902 }, { le = \"2.5s\", count = 99981 }, { le = \"5s\", count = 99996 }, { le = \"10s\", count = 99999 }, { le = \"+Inf\", count = 100000 }] }",
    );
    let distribution = service_time(&from_file, &[]);
    assert_eq!(distribution, service_time(&inline, &[]));
    assert_eq!(
        distribution.to_string(),
        "histogram of 12 buckets to 10s, 100000 observations, Pareto tail a = 2 to 100s (mean 42.186ms)"
    );
    assert_resolved_reloads(&from_file);
}

/// A samples file of bare milliseconds (`unit = "ms"`) is its empirical distribution: the
/// mean is the file's own mean (computed here from the file), and the resolved scenario
/// reloads with the samples inline.
#[test]
fn a_samples_file_is_its_empirical_distribution() {
    let text = with_service_time("{ samples = \"data/api-latencies.txt\", unit = \"ms\" }");
    let distribution = service_time(&text, &[]);
    let file = std::fs::read_to_string("scenarios/data/api-latencies.txt").unwrap();
    let values: Vec<f64> = file
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| (line.parse::<f64>().unwrap() * 1000.0).round())
        .collect();
    assert_eq!(values.len(), 2000);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    assert!((distribution.mean_micros() - mean).abs() < 1e-6);
    assert!(distribution.to_string().starts_with("2000 samples from "));
    assert_resolved_reloads(&text);
}

/// `--set` reaches the new forms, as every setting: quantiles given on the command line (the
/// tail's `a = ln(0.5 / 0.01) / ln(250 / 20) = 1.549`; the mean 5ms + 66.15ms of the two
/// segments plus 0.01 times the truncated tail's 520.8ms), and a histogram file named on it
/// (read relative to the scenario file).
#[test]
fn set_reaches_quantiles_and_data_files() {
    let text = with_service_time("\"5ms\"");
    let quantiles = service_time(
        &text,
        &[Override::set(
            "upstream.service_time",
            "{ quantiles = { p50 = \"20ms\", p99 = \"250ms\" } }",
        )],
    );
    assert_eq!(
        quantiles.to_string(),
        "quantiles p50 20ms, p99 250ms, Pareto tail a = 1.549 to 2500ms (mean 76.358ms)"
    );
    let histogram = service_time(
        &text,
        &[Override::set(
            "upstream.service_time",
            "{ histogram = \"data/api-latency-buckets.csv\" }",
        )],
    );
    assert!(matches!(histogram, Distribution::Histogram(_)));
    let output = support::retrystorm(&[
        "check",
        "scenarios/retry-budget.toml",
        "--set",
        "upstream.service_time={ quantiles = { p50 = \"20ms\", p99 = \"250ms\" }, max = \"1s\" }",
    ]);
    assert!(output.status.success(), "{output:?}");
}

/// A mixture of a cache hit and a miss from a histogram file, in a `[[link]]`-free scenario's
/// service time: the mean is the weighted mean of the components' (0.8 * 1ms + 0.2 * the
/// file's), and it reloads.
#[test]
fn a_mixture_mixes_any_forms() {
    let text = with_service_time(
        "{ mixture = [{ weight = 0.8, value = \"1ms\" }, { weight = 0.2, histogram = \"data/api-latency-buckets.csv\" }] }",
    );
    let mixture = service_time(&text, &[]);
    let histogram = service_time(
        &with_service_time("{ histogram = \"data/api-latency-buckets.csv\" }"),
        &[],
    );
    let expected = 0.8 * 1000.0 + 0.2 * histogram.mean_micros();
    assert!((mixture.mean_micros() - expected).abs() < 1e-6);
    assert_resolved_reloads(&text);
}

/// Bad quantiles, buckets and files are refused with the scenario's line and column, and for a
/// file its own line.
#[test]
fn bad_distributions_name_the_field_and_the_file_line() {
    let folder = support::fresh_folder("distribution-errors");
    std::fs::write(folder.join("no-inf.csv"), "le,count\n0.005,10\n0.01,20\n").unwrap();
    std::fs::write(
        folder.join("decreasing.csv"),
        "le,count\n0.005,10\n\n0.01,4\n+Inf,20\n",
    )
    .unwrap();
    std::fs::write(folder.join("bad-line.txt"), "12ms\n13ms\nslow\n").unwrap();
    std::fs::write(folder.join("huge.txt"), "1ms\n".repeat(600_000)).unwrap();
    let in_folder = |service_time: &str| {
        let path = folder.join("bad.toml");
        std::fs::write(&path, with_service_time(service_time)).unwrap();
        load(&path, &[]).unwrap_err().to_string()
    };
    let cases: [(String, &[&str]); 6] = [
        (
            error_of(&with_service_time(
                "{ quantiles = { p50 = \"20ms\", p90 = \"80ms\", p99 = \"50ms\" } }",
            )),
            &[
                "scenarios/bad.toml:10:16:",
                "p99 = 50ms must be above p90 = 80ms",
            ],
        ),
        (
            in_folder("{ histogram = \"no-inf.csv\" }"),
            &[
                "bad.toml:10:30:",
                "histogram \"no-inf.csv\":",
                "no-inf.csv: no `+Inf` bucket",
            ],
        ),
        (
            in_folder("{ histogram = \"decreasing.csv\" }"),
            &[
                "bad.toml:10:30:",
                "decreasing.csv:4: le = 10ms counts 4, fewer than the 10 of le = 5ms",
            ],
        ),
        (
            in_folder("{ samples = \"bad-line.txt\" }"),
            &[
                "bad.toml:10:28:",
                "bad-line.txt:3: invalid duration \"slow\"",
            ],
        ),
        (
            in_folder("{ samples = \"huge.txt\" }"),
            &["bad.toml:10:28:", "huge.txt: larger than 2 MiB"],
        ),
        (
            in_folder("{ samples = \"missing.txt\" }"),
            &["bad.toml:10:28:", "missing.txt: cannot read the data file"],
        ),
    ];
    for (message, parts) in &cases {
        assert_contains(message, parts);
    }
}

/// A sweep reads a data file once and keeps its text in `sweep.json` beside the configs it
/// imports, so that its points, shards and `merge` see the same bytes; the grid reaches a
/// distribution's key (`upstream.service_time.max`).
#[test]
fn a_sweep_pins_its_data_files() {
    let folder = support::fresh_folder("distribution-sweep");
    std::fs::write(folder.join("lat.txt"), "4\n5\n6\n").unwrap();
    let scenario = folder.join("s.toml");
    std::fs::write(
        &scenario,
        "name = \"pinned-data\"\nduration = \"2s\"\n[clients]\ncount = 10\nrate = 1.0\n[upstream]\nworkers = 2\nservice_time = { mixture = [{ weight = 1, samples = \"lat.txt\", unit = \"ms\" }, { weight = 1, quantiles = { p50 = \"5ms\" } }] }\n",
    )
    .unwrap();
    let out = folder.join("out");
    let output = support::retrystorm(&[
        "sweep",
        scenario.to_str().unwrap(),
        "--grid",
        "upstream.service_time.mixture.1.max=20ms,40ms",
        "--seeds",
        "1",
        "--no-charts",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let manifest = std::fs::read_to_string(out.join("pinned-data-sweep/sweep.json")).unwrap();
    assert_contains(&manifest, &["\"configs\"", "lat.txt", "4\\n5\\n6\\n"]);
}

/// `scale_by` on a histogram service time, drawn by `[uncertain]`: each replication draws its
/// own factor (a Latin hypercube over 4 runs puts one in each quarter of 0.8 to 1.3, so all
/// differ), and the service time of that run is the histogram's with its mean times the
/// factor, exactly. No file of copies of the histogram is needed.
#[test]
fn an_uncertain_scale_by_varies_a_histograms_service_time_across_replications() {
    let histogram = r#"{ histogram = [{ le = "5ms", count = 50 }, { le = "20ms", count = 95 }, { le = "+Inf", count = 100 }], max = "100ms" }"#;
    let text = format!(
        "{}\n[risk]\nreplications = 4\n\n[uncertain]\n\"upstream.service_time.scale_by\" = {{ uniform = [0.8, 1.3] }}\n",
        with_service_time(histogram)
    );
    let scenario = load_str(&text, "scenarios/d.toml", &[]).unwrap();
    let unscaled = service_time(&with_service_time(histogram), &[]).mean_micros();
    let draws = retrystorm::scenario::uncertain::UncertainDraws::new(
        &scenario.uncertain,
        |_| false,
        4,
        scenario.seed,
    );
    let mut factors: Vec<f64> = (0..4)
        .map(|run| {
            let [(key, value)] = draws.of_run(run).try_into().unwrap();
            let factor: f64 = value.parse().unwrap();
            let drawn = service_time(&text, &[Override::set(&key, &value)]);
            assert_eq!(drawn.mean_micros(), factor * unscaled, "{value}");
            factor
        })
        .collect();
    // The reference's `--set upstream.service_time.scale_by=1.3`.
    let set = service_time(
        &with_service_time(histogram),
        &[Override::set("upstream.service_time.scale_by", "1.3")],
    );
    assert_eq!(set.mean_micros(), 1.3 * unscaled);
    factors.sort_by(f64::total_cmp);
    for (quarter, factor) in factors.iter().enumerate() {
        let low = 0.8 + 0.125 * quarter as f64;
        assert!((low..=low + 0.125).contains(factor), "{factors:?}");
    }
}
