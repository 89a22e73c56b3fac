//! Charts end to end: every chart in every format, decodable, of the promised size, not blank,
//! naming every policy, and the same bytes on every run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use retrystorm::output::charts::{CHART_SIZE, Chart, Format, OVERVIEW_SIZE};

const POLICIES: [&str; 2] = ["no jitter", "full jitter"];

fn run(out: &Path, extra: &[&str]) {
    run_scenario("scenarios/thundering-herd.toml", out, extra);
}

/// Runs `scenario` (a path from the repository's root) into `out`.
fn run_scenario(scenario: &str, out: &Path, extra: &[&str]) {
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", scenario, "--out"])
        .arg(out)
        .args(extra)
        .output()
        .expect("retrystorm runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn fresh(name: &str) -> PathBuf {
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&folder);
    folder
}

/// Width, height and RGB pixels of a PNG file.
fn decode(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().expect("a valid PNG");
    let mut pixels = vec![0; reader.output_buffer_size().expect("a sane size")];
    let info = reader.next_frame(&mut pixels).expect("a decodable frame");
    assert_eq!(info.color_type, png::ColorType::Rgb);
    pixels.truncate(info.buffer_size());
    (info.width, info.height, pixels)
}

#[test]
fn every_chart_is_drawn_in_both_formats() {
    let out = fresh("charts-all");
    run(&out, &[]);
    let folder = out.join("thundering-herd");
    for chart in Chart::ALL {
        let png = folder.join(format!("{}.png", chart.name()));
        let (width, height, pixels) = decode(&png);
        let expected = if chart == Chart::Overview {
            OVERVIEW_SIZE
        } else {
            CHART_SIZE
        };
        assert_eq!((width, height), expected, "{}", png.display());
        assert!(width >= 1600 || chart != Chart::Overview);
        // Not blank: many colours (lines, text, shading), and a fair share of ink.
        let colours: BTreeSet<&[u8]> = pixels.chunks(3).collect();
        assert!(
            colours.len() > 20,
            "{}: only {} colours",
            png.display(),
            colours.len()
        );
        let ink = pixels
            .chunks(3)
            .filter(|rgb| *rgb != [255, 255, 255])
            .count();
        // The duplicates chart of a scenario without writes is a sentence, not a plot.
        assert!(
            ink * 50 > pixels.len() / 3 || chart == Chart::Duplicates,
            "{}: {ink} non-white pixels",
            png.display()
        );
        // Every policy's colour is on the load chart.
        if chart == Chart::Load {
            for index in 0..POLICIES.len() {
                let colour = retrystorm::output::charts::policy_colour(index);
                let wanted = [colour.0, colour.1, colour.2];
                assert!(
                    pixels.chunks(3).any(|rgb| rgb == wanted),
                    "policy {index} not drawn"
                );
            }
        }

        let svg = std::fs::read_to_string(folder.join(format!("{}.svg", chart.name()))).unwrap();
        assert!(svg.starts_with("<svg"), "{}", chart.name());
        if chart == Chart::Duplicates {
            // Every operation is a GET: the chart says why it is empty instead of empty axes.
            assert!(
                svg.contains(r#"aria-label="nothing can be duplicated: every operation is a GET, which is idempotent, so no retry can write twice""#),
                "{svg}"
            );
            assert!(!svg.contains("time (s)"));
            continue;
        }
        let escaped = |name: &str| name.replace('&', "&amp;").replace('<', "&lt;");
        for policy in POLICIES {
            assert!(
                svg.contains(&escaped(policy)),
                "{}.svg does not name {policy}",
                chart.name()
            );
        }
        assert!(
            svg.contains("time (s)"),
            "{}.svg has no time axis",
            chart.name()
        );
    }
    // The load chart the README shows is the one this code draws.
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("output/thundering-herd/load.png");
    assert!(
        std::fs::read(&committed).unwrap() == std::fs::read(folder.join("load.png")).unwrap(),
        "output/thundering-herd/load.png is stale: regenerate it with `cargo run --release -- run scenarios/thundering-herd.toml`"
    );
}

#[test]
fn formats_can_be_chosen_or_charts_skipped() {
    let out = fresh("charts-formats");
    // A shortened run need not teach the lesson: its claims do not decide the exit code here.
    run(
        &out,
        &[
            "--format",
            "svg",
            "--set",
            "duration=2s",
            "--set",
            "incident.start=1s",
            "--no-fail-on-claims",
        ],
    );
    let folder = out.join("thundering-herd");
    assert!(folder.join("load.svg").exists());
    assert!(!folder.join("load.png").exists());

    let out = fresh("charts-none");
    run(
        &out,
        &[
            "--no-charts",
            "--set",
            "duration=2s",
            "--set",
            "incident.start=1s",
            "--no-fail-on-claims",
        ],
    );
    let folder = out.join("thundering-herd");
    assert!(folder.join("summary.csv").exists());
    assert!(!folder.join("load.svg").exists() && !folder.join("load.png").exists());
}

#[test]
fn charts_are_the_same_bytes_on_every_run_and_thread_count() {
    let (one, two) = (fresh("charts-one"), fresh("charts-two"));
    let with_threads = |out: &Path, threads: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args([
                "run",
                "scenarios/thundering-herd.toml",
                "--set",
                "duration=5s",
                "--set",
                "incident.start=1s",
                "--no-fail-on-claims",
                "--out",
            ])
            .arg(out)
            .env("RAYON_NUM_THREADS", threads)
            .output()
            .unwrap();
        assert!(output.status.success());
    };
    with_threads(&one, "1");
    with_threads(&two, "2");
    for chart in Chart::ALL {
        for extension in ["png", "svg"] {
            let file = format!("thundering-herd/{}.{extension}", chart.name());
            let (a, b) = (
                std::fs::read(one.join(&file)).unwrap(),
                std::fs::read(two.join(&file)).unwrap(),
            );
            assert!(a == b, "{file} differs between runs");
        }
    }
}

/// Limits are drawn where they bind, labelled: the rate limit on the load chart of the
/// rate-limited API (whose load reaches it), the 2 s deadline on the latency chart of the
/// deadline scenario (whose p99 reaches it); none where there is none. The committed reports
/// are what the code draws today (the examples test checks them byte for byte).
#[test]
fn limits_are_drawn_where_they_bind() {
    let report = |name: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("output/{name}/report.html")),
        )
        .unwrap()
    };
    assert!(report("rate-limited-api").contains(r#"aria-label="rate limit (1000/s)""#));
    assert!(report("deadline").contains(r#"aria-label="deadline (2s)""#));
    let herd = report("thundering-herd");
    assert!(!herd.contains("rate limit (") && herd.contains(r#"aria-label="deadline (10s)""#));
}

/// The time axis of a 60 s run (retry-layers) reads whole seconds as `20`, never `20.0`.
#[test]
fn whole_seconds_have_no_decimals() {
    let report = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("output/retry-layers/report.html"),
    )
    .unwrap();
    assert!(report.contains(r#"aria-label="20""#));
    assert!(!report.contains(r#"aria-label="20.0""#));
}

/// The drain after `duration` (operations started before the end finishing, only the slow
/// ones left) is hatched and named in every chart with a time axis, of every bundled scenario
/// whose run went on after its arrivals, so that it is not read as an incident.
#[test]
fn the_drain_is_marked_in_every_time_chart() {
    let output = Path::new(env!("CARGO_MANIFEST_DIR")).join("output");
    let mut marked = 0;
    for scenario in std::fs::read_dir(&output).unwrap() {
        let folder = scenario.unwrap().path();
        if !folder.is_dir() {
            continue;
        }
        for chart in Chart::ALL {
            let svg =
                std::fs::read_to_string(folder.join(format!("{}.svg", chart.name()))).unwrap();
            if svg.contains("time (s)") {
                assert!(
                    svg.contains(
                        r#"aria-label="drain: operations started before the end finishing""#
                    ),
                    "{}/{}.svg does not mark the drain",
                    folder.display(),
                    chart.name()
                );
                marked += 1;
            }
        }
    }
    assert!(marked >= 40, "only {marked} charts have a time axis");
}

/// payments' duplicates chart: one legend entry per policy drawn and a key to solid
/// (duplicate writes) and dashed (unknown results), not ten entries of which solid and dashed
/// looked alike; the six lines that stay at zero all run long are named in a note rather than
/// drawn on top of each other along the axis, and a policy with nothing drawn has no entry.
#[test]
fn duplicates_name_each_policy_once_key_the_dashes_and_note_the_lines_at_zero() {
    let svg = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("output/payments/duplicates.svg"),
    )
    .unwrap();
    let label = |text: &str| format!(r#"aria-label="{text}""#);
    for entry in [
        "naive",
        "article",
        "key, 1 s TTL",
        "solid: duplicate writes",
        "dashed: unknown results",
    ] {
        assert!(svg.contains(&label(entry)), "no legend entry {entry}");
    }
    for absent in ["naive duplicate writes", "key, 24 h TTL", "status endpoint"] {
        assert!(!svg.contains(&label(absent)), "a legend entry {absent}");
    }
    assert!(
        svg.contains("at zero all run long, not drawn: duplicate writes of &quot;article&quot;, &quot;key, 24 h TTL&quot;, &quot;status endpoint&quot;; unknown results of &quot;naive&quot;, &quot;key, 1 s TTL&quot;"),
        "no note of the lines at zero"
    );
}

/// The overview leaves out a chart with nothing to show and names it in a line, rather than
/// give a quarter of the sheet to a sentence: contention's operations are conditional PUTs,
/// which are idempotent, so its duplicates chart is left out (and says so truly: they are
/// writes, but none can be duplicated); payments keeps all four.
#[test]
fn the_overview_has_no_empty_panel() {
    let chart = |name: &str, chart: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("output/{name}/{chart}.svg")),
        )
        .unwrap()
    };
    let duplicates =
        r#"aria-label="Duplicate writes (solid) and unknown results (dashed), cumulative""#;
    let overview = chart("contention", "overview");
    assert!(!overview.contains(duplicates));
    assert!(overview.contains(r#"aria-label="Not drawn, with nothing to show: duplicates (nothing can be duplicated: every operation is a PUT, which is idempotent, so no retry can write twice).""#));
    for title in [
        "Attempts reaching the upstream",
        "Latency of successful operations (p50 dashed, p99 solid)",
        "Goodput and failures",
    ] {
        assert!(
            overview.contains(&format!(r#"aria-label="{title}""#)),
            "{title}"
        );
    }
    // Nothing failed in contention: its goodput takes the whole panel and says so.
    assert!(!overview.contains(r#"aria-label="failed per second""#));
    assert!(overview.contains(r#"aria-label="no operation failed in any policy""#));
    let overview = chart("payments", "overview");
    assert!(overview.contains(duplicates) && !overview.contains("Not drawn"));
}

/// one-bad-host's load chart has, below the load, a section for its fleet of ten: titled with
/// the fleet and how it is drawn, a legend entry per instance (`#0` to `#9`, as
/// `refused@upstream#0` names them), and a plot per policy under the policy's name, each with
/// its y axis in requests/s; the PNG is taller by the section (a title, a legend and two rows
/// of plots for five policies: 44 + 30 + 2 x 250 pixels) and is the committed one, which the
/// README shows. A fleet of twelve draws, per policy, the band from its least to its most
/// loaded instance (a polygon) and the median instance, and says so. thundering-herd, without
/// a fleet, keeps its size and bytes (`every_chart_is_drawn_in_both_formats`).
#[test]
fn a_fleet_gets_a_section_of_the_load_chart() {
    let out = fresh("charts-fleet");
    run_scenario("scenarios/one-bad-host.toml", &out, &[]);
    let folder = out.join("one-bad-host");
    let (width, height, _) = decode(&folder.join("load.png"));
    assert_eq!(
        (width, height),
        (CHART_SIZE.0, CHART_SIZE.1 + 44 + 30 + 2 * 250)
    );
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("output/one-bad-host/load.png");
    assert!(
        std::fs::read(&committed).unwrap() == std::fs::read(folder.join("load.png")).unwrap(),
        "output/one-bad-host/load.png is stale: regenerate it with `cargo run --release -- run scenarios/one-bad-host.toml`"
    );
    let svg = std::fs::read_to_string(folder.join("load.svg")).unwrap();
    let label = |text: &str| format!(r#"aria-label="{text}""#);
    let count = |text: &str| svg.matches(&label(text)).count();
    assert_eq!(
        count(
            "Fleet upstream: requests/s sent to each of its 10 instances, a line per instance, per policy"
        ),
        1
    );
    for instance in 0..10 {
        assert_eq!(count(&format!("#{instance}")), 1, "#{instance}");
    }
    // Each policy named twice: in the load's legend and over its fleet plot.
    for policy in [
        "random",
        "random, previous hosts",
        "round robin",
        "least request",
        "least request, outlier detection",
    ] {
        assert_eq!(count(policy), 2, "{policy}");
    }
    assert_eq!(count("requests/s"), 5);
    // Polygons of more than three corners: bands (a marker's triangle has three).
    let bands = |svg: &str| {
        svg.split("<polygon")
            .skip(1)
            .filter(|polygon| {
                let points = polygon.split("points=\"").nth(1).unwrap();
                points[..points.find('"').unwrap()]
                    .split_whitespace()
                    .count()
                    > 3
            })
            .count()
    };
    assert_eq!(bands(&svg), 0);

    let twelve = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/one-bad-host.toml"),
    )
    .unwrap()
    .replace("instances = 10,", "instances = 12,")
    .replace("duration = \"60s\"", "duration = \"12s\"");
    let run = crate::support::run(&crate::support::scenario(&twelve));
    let svg = String::from_utf8(
        retrystorm::output::charts::render(&run, Chart::Load, Format::Svg).unwrap(),
    )
    .unwrap();
    for text in [
        "Fleet upstream: requests/s sent to each of its 12 instances, min to max over the instances (band) and the median (line), per policy",
        "shaded in the policy's colour: from the least to the most loaded instance",
        "line: the median instance",
    ] {
        assert!(svg.contains(&format!(r#"aria-label="{text}""#)), "{text}");
    }
    assert!(!svg.contains(r##"aria-label="#0""##));
    assert_eq!(bands(&svg), 5);
}
