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
        // A run's folder; a map's (`tipping-point-map/`) has no time charts.
        if !folder.join("summary.json").is_file() {
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

mod replications {
    //! The charts of replicated runs, drawn from hand-made data: the phase map and the ECDF.

    use retrystorm::output::charts::Format;
    use retrystorm::output::charts::ecdf::{EcdfChart, EcdfSeries, render_ecdf};
    use retrystorm::output::charts::phase_map::{
        MapAxis, PhaseCell, PhaseMap, PhasePanel, phase_map_size, render_phase_map,
    };

    /// Width and height of a PNG.
    fn png_size(bytes: &[u8]) -> (u32, u32) {
        let reader = png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .expect("a valid PNG");
        (reader.info().width, reader.info().height)
    }

    /// Draws in both formats, twice each: the same bytes both times, a PNG of `size`, an SVG
    /// whose text is all outlines (no `<text>`, every label an `aria-label`) holding each of
    /// `labels`.
    fn check(render: impl Fn(Format) -> Vec<u8>, size: (u32, u32), labels: &[String]) {
        for format in [Format::Png, Format::Svg] {
            let bytes = render(format);
            assert!(bytes == render(format), "{format} differs between renders");
            if format == Format::Png {
                assert_eq!(png_size(&bytes), size);
                continue;
            }
            let svg = String::from_utf8(bytes).unwrap();
            assert!(svg.starts_with("<svg") && !svg.contains("<text"));
            for label in labels {
                let escaped = label.replace('&', "&amp;").replace('"', "&quot;");
                assert!(
                    svg.contains(&format!(r#"aria-label="{escaped}""#)),
                    "no {label:?}"
                );
            }
        }
    }

    fn axis(key: &str, count: usize) -> MapAxis {
        MapAxis {
            key: key.into(),
            labels: (1..=count).map(|value| format!("{}", value * 50)).collect(),
        }
    }

    /// A map of `x` by `y` cells per policy; cell (x, y) of panel `panel` has `runs(x, y)`
    /// runs, of which `recovered(panel, x, y, runs)` recovered.
    fn map(
        (x, y): (usize, usize),
        policies: &[&str],
        cell: impl Fn(usize, usize, usize) -> (u32, u32),
    ) -> PhaseMap {
        PhaseMap {
            title: "thundering-herd: where the service recovers".into(),
            subtitle: "share of replications recovered by the end, per cell".into(),
            x: axis("clients.count", x),
            y: axis("incident.duration_ms", y),
            panels: policies
                .iter()
                .enumerate()
                .map(|(index, policy)| PhasePanel {
                    policy: policy.to_string(),
                    cells: (0..x * y)
                        .map(|at| {
                            let (runs, recovered) = cell(index, at % x, at / x);
                            PhaseCell {
                                runs,
                                recovered,
                                unhealthy_before: 0,
                                median_recovery_s: None,
                            }
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// A 20 x 20 map of three policies, each recovering below a diagonal that moves out with
    /// the policy, more runs near it (as adaptive refinement gives); a 1 x 1 map; a map with
    /// cells without runs. Each names its policies, its keys and the colour bar, and says what
    /// grey means where some cell has no runs.
    #[test]
    fn phase_maps_are_drawn() {
        let policies = ["no jitter", "full jitter", "retry budget"];
        let diagonal = map((20, 20), &policies, |panel, x, y| {
            let distance = (x + y) as i64 - 16 - 6 * panel as i64;
            let runs = if distance.abs() <= 2 { 40 } else { 10 };
            let recovered = (runs as i64 / 2 - distance * runs as i64 / 6).clamp(0, runs as i64);
            (runs, recovered as u32)
        });
        let one = map((1, 1), &["only"], |_, _, _| (7, 3));
        let holes = map((4, 3), &policies[..2], |panel, x, y| {
            if (x + y + panel) % 3 == 0 {
                (0, 0)
            } else {
                (8, (x * 2 + panel) as u32)
            }
        });
        for (map, grey) in [(diagonal, false), (one, false), (holes, true)] {
            let mut labels: Vec<String> = map.panels.iter().map(|p| p.policy.clone()).collect();
            labels.extend([
                map.title.clone(),
                map.subtitle.clone(),
                map.x.key.clone(),
                map.y.key.clone(),
                "probability of recovering".into(),
            ]);
            if grey {
                labels.push("n/a: no runs".into());
            }
            check(
                |format| render_phase_map(&map, format).unwrap(),
                phase_map_size(map.panels.len()),
                &labels,
            );
        }
        assert_eq!(phase_map_size(3).0, 1600);
        assert!(
            phase_map_size(4).1 > phase_map_size(3).1,
            "four panels wrap to two rows"
        );
    }

    /// A cell whose runs were unhealthy before the incident is hatched and says how many
    /// (`n=4, 3 u.b.`: 4 runs, 1 recovered, 3 unhealthy before), and the key explains the hatch;
    /// the other cells read `n=4` as before. A map without such runs prints no `u.b.` at all.
    #[test]
    fn cells_unhealthy_before_the_incident_are_labelled_apart() {
        let mut unhealthy = map((3, 2), &["three retries"], |_, _, _| (4, 1));
        unhealthy.panels[0].cells[0].unhealthy_before = 3;
        check(
            |format| render_phase_map(&unhealthy, format).unwrap(),
            phase_map_size(1),
            &[
                "n=4, 3 u.b.".into(),
                "n=4".into(),
                "hatched, u.b.: runs".into(),
                "unhealthy before the".into(),
            ],
        );
        let healthy = map((3, 2), &["three retries"], |_, _, _| (4, 1));
        let svg = String::from_utf8(render_phase_map(&healthy, Format::Svg).unwrap()).unwrap();
        assert!(!svg.contains("u.b."));
    }

    /// Cells that do not fill the axes, or an axis without values, are an error naming the
    /// policy and the axes, not a panic.
    #[test]
    fn a_phase_map_that_does_not_fit_its_axes_is_an_error() {
        let mut short = map((3, 2), &["jitter"], |_, _, _| (4, 2));
        short.panels[0].cells.pop();
        let error = render_phase_map(&short, Format::Png)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(r#"of "jitter" has 5 cells, not 6 (3 values of clients.count by 2 of incident.duration_ms)"#),
            "{error}"
        );
        let empty = map((0, 2), &["jitter"], |_, _, _| (4, 2));
        let error = render_phase_map(&empty, Format::Svg)
            .unwrap_err()
            .to_string();
        assert!(error.contains("needs values on both axes"), "{error}");
    }

    fn series(policy: &str, values: Vec<f64>, never: usize) -> EcdfSeries {
        // The DKW half-width at 95% for these runs: sqrt(ln(2 / 0.05) / (2 n)).
        let runs = (values.len() + never).max(1) as f64;
        EcdfSeries {
            policy: policy.into(),
            values,
            never,
            band: ((2.0f64 / 0.05).ln() / (2.0 * runs)).sqrt(),
        }
    }

    /// Several policies (one with runs that never recovered), one that never recovered at
    /// all, one of a single run, and one of equal values each draw, with the legend saying
    /// how many runs and how many never; a chart of only all-equal values, and one of only
    /// "never", draw too.
    #[test]
    fn ecdfs_are_drawn() {
        let spread = |n: usize, scale: f64| {
            (0..n)
                .map(|i| scale * (1.0 + (i * i % 37) as f64))
                .collect()
        };
        let chart = EcdfChart {
            title: "thundering-herd: time to recover over 100 replications".into(),
            x_label: "recovery (s)".into(),
            series: vec![
                series("no jitter", spread(88, 0.3), 12),
                series("full jitter", spread(100, 0.1), 0),
                series("retry budget", vec![], 100),
                series("one run", vec![2.5], 0),
                series("equal", vec![4.0; 20], 0),
            ],
            note: "bands: 95% DKW confidence bands of each curve".into(),
        };
        check(
            |format| render_ecdf(&chart, format).unwrap(),
            retrystorm::output::charts::CHART_SIZE,
            &[
                chart.title.clone(),
                chart.note.clone(),
                "recovery (s)".into(),
                "share of runs at or below".into(),
                "no jitter (n = 100; 12 of 100 never)".into(),
                "full jitter (n = 100)".into(),
                "retry budget: never recovered in all 100 runs".into(),
                "one run (n = 1)".into(),
                "equal (n = 20)".into(),
            ],
        );
        for only in [
            vec![series("equal", vec![0.0; 5], 0)],
            vec![series("down", vec![], 3)],
            vec![series("none", vec![], 0)],
            vec![],
        ] {
            let chart = EcdfChart {
                series: only,
                ..chart.clone()
            };
            check(
                |format| render_ecdf(&chart, format).unwrap(),
                retrystorm::output::charts::CHART_SIZE,
                &[],
            );
        }
        let infinite = EcdfChart {
            series: vec![series("bad", vec![1.0, f64::INFINITY], 0)],
            ..chart
        };
        let error = render_ecdf(&infinite, Format::Png).unwrap_err().to_string();
        assert!(
            error.contains(r#"the outcomes of "bad" hold inf"#),
            "{error}"
        );
    }
}
