//! `report.html`: one self-contained page per run, for reading without a terminal.
//!
//! The page holds the scenario's description, what was simulated, the summary table, the four
//! charts inline as SVG, and what each metric means; for a topology also its diagram
//! ([`diagram`]) and a table per service; for a scenario of two operations or more, a table per
//! operation. It loads nothing from anywhere (no scripts, no fonts,
//! no stylesheets), so it opens from a file in any browser and can be mailed or attached to a
//! postmortem as it is.

mod diagram;
mod sweep;

use std::fmt::Write as _;

use crate::base::escape::html as escape;
use crate::claims::evaluate;
use crate::output::OPERATION_COLUMNS;
use crate::output::charts::{Chart, ChartError, Charts, Format, MAX_INSTANCE_LINES};
use crate::run::ScenarioRun;
use crate::scenario::Service;
use crate::vocabulary::metric::{Domain, INTENT_METRICS, METRICS, Unit};

pub use diagram::topology_svg;
pub use sweep::{PointTable, SweepPage, SweepSection, sweep_report_html};

/// What the report's failures column means (the summary metrics explain themselves:
/// [`METRICS`]).
const FAILURES_MEANING: &str = "Why operations ended without success: the retry decision's reasons (max-attempts, deadline-exhausted, not-transient, unknown-result, ...).";

fn optional(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "–".to_string(), |value| format!("{value:.digits$}"))
}

/// The style of every page retrystorm writes: its own text asks for DejaVu Sans (the charts'
/// font) and falls back to the viewer's sans-serif; tables scroll inside their box rather than
/// widen the page; code and long preformatted lines wrap.
const STYLE: &str = r#"body { font-family: "DejaVu Sans", Verdana, sans-serif; margin: 2em auto; max-width: 1300px; padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; }
.description { font-size: 1.15em; margin-top: 0; }
.table { overflow-x: auto; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.35em 0.55em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f4f4f4; }
td { white-space: nowrap; }
td:first-child { white-space: normal; }
table.settings th, table.settings td { text-align: left; white-space: normal; }
tr.meets td { background: #f3f8fc; }
tr.chosen td { background: #fdf0e6; font-weight: bold; }
figure { margin: 1.5em 0; }
figure svg { max-width: 100%; height: auto; border: 1px solid #eee; }
dt { font-weight: bold; margin-top: 0.6em; }
dd { margin-left: 1.5em; }
.meta { color: #555; }
.claims .held b { color: #00734d; }
.claims .failed b { color: #b33c00; }
.header { max-width: 60em; }
.decision { border-left: 4px solid #0072b2; background: #f4f7fb; padding: 0.4em 1em; }
.decision p { margin: 0.3em 0; }
.decision .indent { margin-left: 2em; }
.warning { color: #b33c00; }
pre { background: #f6f6f6; padding: 0.5em 1em; white-space: pre-wrap; overflow-wrap: anywhere; }
"#;

/// The start of a page titled `title`, up to its `<body>`.
pub(crate) fn page_head(page: &mut String, title: &str) {
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n"
    );
}

/// The report's bytes.
pub fn report_html(run: &ScenarioRun) -> Result<Vec<u8>, ChartError> {
    let scenario = &run.scenario;
    let name = escape(scenario.name.as_str());
    let mut page = String::new();
    page_head(&mut page, &format!("{name}: retrystorm report"));
    let _ = writeln!(
        page,
        "<h1>{name}</h1>\n<p class=\"description\">{}</p>",
        escape(&scenario.description)
    );
    what_to_look_at(&mut page, &scenario.header);
    let clients = &scenario.clients;
    let upstream = run.model.entry_service();
    let services = if run.has_topology() {
        format!(
            "calling {} of {} services (below)",
            escape(&upstream.name),
            run.model.services.len()
        )
    } else {
        let fleet = &upstream.fleet;
        let instances = if fleet.instances > 1 {
            format!(
                "{} instances ({}) of {} workers each",
                fleet.instances,
                escape(&fleet.about()),
                upstream.workers
            )
        } else {
            format!("{} workers", upstream.workers)
        };
        format!(
            r#"upstream of {instances}, service time {}, queue limit {}, outage behaviour "{}""#,
            escape(&upstream.service_time.to_string()),
            upstream.queue_limit,
            escape(&format!("{:?}", upstream.outage).to_lowercase()),
        )
    };
    // The users' timeouts as the policies run them (an imported config or a policy may set
    // its own), not `[clients]`'s defaults.
    let timeouts: Vec<(String, String)> = run
        .policies
        .iter()
        .map(|policy| {
            let text = policy.model.users.policy.text();
            (text.deadline, text.attempt_timeout)
        })
        .collect();
    let timeouts = match timeouts.first() {
        Some((deadline, attempt)) if timeouts.iter().all(|other| other == &timeouts[0]) => {
            format!("deadline {deadline}, attempt timeout {attempt}")
        }
        _ => "deadline and attempt timeout per policy (below)".to_string(),
    };
    let _ = writeln!(
        page,
        r#"<p class="meta">{} clients ({} workload), {}; {services}; simulated for {} with seed {}, in buckets of {}.</p>"#,
        clients.count.get_ref().get(),
        escape(&format!("{:?}", clients.workload.get_ref()).to_lowercase()),
        escape(&timeouts),
        scenario.duration.get_ref(),
        scenario.seed,
        scenario.bucket.get_ref(),
    );
    let overload: Vec<String> = scenario
        .services()
        .into_iter()
        .filter_map(|service| {
            let settings = overload_settings(service);
            (!settings.is_empty()).then(|| {
                let who = if run.has_topology() {
                    format!("<b>{}</b>", escape(service.name()))
                } else {
                    "the upstream".to_string()
                };
                format!("under overload {who} has {}", settings.join(", "))
            })
        })
        .collect();
    if !overload.is_empty() {
        let _ = writeln!(
            page,
            r#"<p class="meta">{}.</p>"#,
            capitalised(&overload.join("; "))
        );
    }
    let overrides: String = scenario
        .policy
        .iter()
        .filter(|policy| !policy.overrides.is_empty())
        .map(|policy| {
            let changes: Vec<String> = policy
                .overrides
                .entries
                .iter()
                .map(|(key, value)| {
                    format!(
                        "<code>{}</code> = {}",
                        escape(key),
                        escape(&value.to_string())
                    )
                })
                .collect();
            format!(
                " Policy <b>{}</b> runs with {}.",
                escape(policy.name.get_ref()),
                changes.join(", ")
            )
        })
        .collect();
    if run.has_topology() {
        let _ = writeln!(
            page,
            "<h2>Topology</h2>\n<figure>\n{}\n<figcaption>Each box is a service: its workers and own service time, its queue. Each arrow is a call, made for every request the caller serves, labelled with how many times the caller sends it at most (and the controls that bound its retries), each attempt's timeout and the call's deadline; where the policies call differently, one line for each way. A service's calls share its label, on the topmost.{overrides}</figcaption>\n</figure>",
            topology_svg(
                &run.model,
                &run.policies
                    .iter()
                    .map(|policy| (policy.name.as_str(), &policy.model))
                    .collect::<Vec<_>>()
            )
        );
    } else if !overrides.is_empty() {
        let _ = writeln!(page, r#"<p class="meta">{}</p>"#, overrides.trim_start());
    }
    if !scenario.command_line_changes.is_empty() {
        let changes: Vec<String> = scenario
            .command_line_changes
            .iter()
            .map(|(key, value)| format!("<code>{}={}</code>", escape(key), escape(value)))
            .collect();
        let _ = writeln!(
            page,
            r#"<p class="meta">Run changed on the command line: --set {}. The file's lesson and text describe it as written.</p>"#,
            changes.join(", --set ")
        );
    }
    policy_table(&mut page, run);
    summary_table(&mut page, run);
    lesson(&mut page, run);
    operations_table(&mut page, run);
    if run.has_topology() {
        service_table(&mut page, run);
    }
    page.push_str("<h2>Charts</h2>\n");
    let charts = Charts::of(run);
    let overview = charts.render(Chart::Overview, Format::Svg)?;
    let _ = write!(
        page,
        "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
        String::from_utf8_lossy(&overview),
        escape(
            "The overview: the charts below on one sheet, as a teacher would show them (a chart with nothing to show is named above them instead). The hatched band at the end is the drain: after the arrivals stop, the operations started before finish, only the slow ones left."
        )
    );
    let load_caption = if run.has_topology() {
        "Requests per second reaching each service (its callers' first attempts, retries and status checks), per policy, with the service's capacity dashed: grey for a service that calls nothing (its workers / mean service time); in the policy's colour for a calling service, whose workers are also held for their calls, so its capacity was measured in that policy's run (workers / mean time a worker held a request), drawn where its workers were held at least half the time (elsewhere it says nothing of what the service could serve). A capacity far above the load is cut off at the top; a step in capacity is drawn at its instant. The shaded band is the incident (the scenario's [incident], or its services' capacity away from their starting level). Blocks along the bottom, one row per policy in its colour: a service down after crashing under overload in that policy's run."
    } else {
        "Attempts per second reaching the upstream, per policy, with the upstream's capacity (dashed grey). The shaded band is the incident (the scenario's [incident], or its capacity away from its starting level). Blocks along the bottom, one row per policy in its colour: the upstream down after crashing under overload in that policy's run."
    };
    let fleets = run.policies.iter().any(|policy| {
        policy
            .measurements
            .services
            .iter()
            .any(|service| !service.instances.is_empty())
    });
    let load_caption = if fleets {
        format!(
            "{load_caption} Below, for each service run as a fleet, the requests per second sent to each of its instances, one plot per policy on a common scale: a line per instance (#K, as refused@SERVICE#K names it) for a fleet of at most {MAX_INSTANCE_LINES}, or, for a larger one, the range from the least to the most loaded instance shaded in the policy's colour, with the median instance's line."
        )
    } else {
        load_caption.to_string()
    };
    let captions = [
        (Chart::Load, load_caption.as_str()),
        (
            Chart::Latency,
            "Latency of the operations that succeeded in each bucket: p99 solid, p50 dashed, log scale.",
        ),
        (
            Chart::Duplicates,
            "Duplicate writes (solid) and unknown results (dashed), added up over time.",
        ),
        (
            Chart::Goodput,
            "Operations succeeded per second (top) and failed per second by reason (bottom).",
        ),
    ];
    for (chart, caption) in captions {
        // A chart with nothing to show is its sentence, not a picture of it.
        if let Some(why) = charts.nothing_to_show(chart) {
            let _ = writeln!(
                page,
                "<p class=\"meta\">No {} chart: {}.</p>",
                chart.name(),
                escape(&why)
            );
            continue;
        }
        let svg = charts.render(chart, Format::Svg)?;
        let _ = write!(
            page,
            "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
            String::from_utf8_lossy(&svg),
            escape(caption)
        );
    }
    glossary(&mut page);
    page.push_str("<h2>What the numbers mean</h2>\n<dl>\n");
    let health = run.model.health;
    let _ = writeln!(
        page,
        "<dt>health</dt><dd>The system is healthy over a window of {} when at most {}% of the operations that ended in it failed and retries added at most {}% to its first attempts; recovery is measured from the end of the incident to the first step of {} from which every such window, sliding by one step up to the end of arrivals, is healthy.</dd>",
        crate::base::time::Duration(health.window),
        health.max_failed * 100.0,
        health.max_retries * 100.0,
        crate::base::time::Duration(crate::vocabulary::counts::health_step(
            run.model.bucket,
            run.model.duration
        ))
    );
    for metric in &METRICS {
        let _ = writeln!(
            page,
            "<dt>{}</dt><dd>{}</dd>",
            escape(metric.name),
            escape(metric.meaning)
        );
    }
    let intents = if run.has_manual_retries() {
        &INTENT_METRICS[..]
    } else {
        &[]
    };
    for metric in intents {
        let _ = writeln!(
            page,
            "<dt>{}</dt><dd>{}</dd>",
            escape(metric.name),
            escape(metric.meaning)
        );
    }
    let _ = writeln!(
        page,
        "<dt>failures by reason</dt><dd>{}</dd>",
        escape(FAILURES_MEANING)
    );
    page.push_str("</dl>\n<p class=\"meta\">Written by retrystorm. The same scenario and seed give the same page.</p>\n</body>\n</html>\n");
    Ok(page.into_bytes())
}

/// The scenario's claims and whether each held.
/// A service's overload behaviours as the scenario writes them (`crash = { ... }`), in the
/// order the scenario format lists them; empty if it has none.
fn overload_settings(service: &Service) -> Vec<String> {
    fn written<T: serde::Serialize>(name: &str, value: &T) -> String {
        let value =
            toml::Value::try_from(value).map_or_else(|_| "?".into(), |value| value.to_string());
        format!("<code>{name} = {}</code>", escape(&value))
    }
    let mut settings = Vec::new();
    if let Some(cost) = &service.rejection_cost {
        settings.push(written("rejection_cost", cost.get_ref()));
    }
    if let Some(discipline) = &service.queue_discipline {
        settings.push(written("queue_discipline", discipline.get_ref()));
    }
    if service.drop_expired {
        settings.push(written("drop_expired", &true));
    }
    if service.cancellation {
        settings.push(written("cancellation", &true));
    }
    if let Some(limit) = &service.concurrency_limit {
        settings.push(written("concurrency_limit", limit.get_ref()));
    }
    if let Some(crash) = &service.crash {
        settings.push(written("crash", crash.get_ref()));
    }
    if let Some(cold) = &service.cold_start {
        settings.push(written("cold_start", cold.get_ref()));
    }
    if let Some(contention) = &service.contention {
        settings.push(written("contention", contention));
    }
    if let Some(cache) = &service.cache {
        settings.push(written("cache", cache.get_ref()));
    }
    if let Some(row) = &service.optimistic_row {
        settings.push(written("optimistic_row", row.get_ref()));
    }
    settings
}

/// `text` with its first letter in upper case.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// The summary table, headline metrics first (success, goodput, amplification, recovery), then
/// the failures by reason in a table of their own, so that the whole table fits the page
/// without scrolling sideways.
fn summary_table(page: &mut String, run: &ScenarioRun) {
    let names: Vec<&str> = run
        .policies
        .iter()
        .map(|policy| policy.name.as_str())
        .collect();
    let _ = writeln!(
        page,
        "<h2>Summary</h2>\n<div class=\"table\"><table id=\"summary\">\n<tr><th style=\"width: {}ch\">policy</th><th>success</th><th>goodput/s</th><th>amplification</th><th>recovery</th><th>p99 ms</th><th>p50 ms</th><th>duplicate writes</th><th>unknown results</th><th>timeouts</th><th>peak attempts/s in incident</th><th>peak attempts/s after</th><th>wasted work s</th><th>operations</th></tr>",
        two_line_width(&names)
    );
    for policy in &run.policies {
        let summary = &policy.summary;
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td>{:.2}%</td><td>{:.1}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{:.1}</td><td>{}</td></tr>",
            escape(&policy.name),
            summary.success_rate * 100.0,
            summary.goodput_rps,
            summary.amplification,
            summary.recovery_s,
            optional(summary.p99_ms, 1),
            optional(summary.p50_ms, 1),
            summary.duplicate_writes,
            summary.unknown_results,
            summary.timeouts,
            if summary.peak_incident_rps.is_nan() {
                "-".to_string()
            } else {
                format!("{:.0}", summary.peak_incident_rps)
            },
            summary.peak_after_rps,
            summary.wasted_work_s,
            summary.operations,
        );
    }
    page.push_str("</table></div>\n");
    failures_table(page, run, &names);
    if run.has_manual_retries() {
        intents_table(page, run, &names);
    }
}

/// What the users set out to do and got, when some policy's users retry by hand.
fn intents_table(page: &mut String, run: &ScenarioRun, names: &[&str]) {
    let _ = write!(
        page,
        "<p>Users retry by hand: each arrival is an intent, and its user may start the operation again (an operation more), so duplicate writes are counted per intent: a second committed write of one intent, whichever keys the two carried, is one.</p>\n<div class=\"table\"><table id=\"intents\">\n<tr><th style=\"width: {}ch\">policy</th>",
        two_line_width(names)
    );
    for metric in &INTENT_METRICS {
        let _ = write!(page, "<th>{}</th>", escape(&metric.name.replace('_', " ")));
    }
    page.push_str("</tr>\n");
    for policy in &run.policies {
        let _ = write!(page, "<tr><td>{}</td>", escape(&policy.name));
        for metric in &INTENT_METRICS {
            let value = (metric.value)(&policy.summary);
            let cell = match metric.unit {
                Unit::Count => format!("{value:.0}"),
                Unit::Number if metric.domain == Domain::Share => {
                    format!("{:.2}%", value * 100.0)
                }
                Unit::Number => format!("{value:.3}"),
            };
            let _ = write!(page, "<td>{cell}</td>");
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table></div>\n");
}

/// Operations that ended without success, by reason (a column per reason that occurred in
/// some policy, in the order of the reasons' names, as in summary.json).
fn failures_table(page: &mut String, run: &ScenarioRun, names: &[&str]) {
    let failures: Vec<_> = run
        .policies
        .iter()
        .map(|policy| policy.measurements.failures())
        .collect();
    let mut reasons: Vec<String> = failures
        .iter()
        .flat_map(|failures| failures.keys().map(ToString::to_string))
        .collect();
    reasons.sort();
    reasons.dedup();
    if reasons.is_empty() {
        page.push_str("<p class=\"meta\">No operation failed in any policy.</p>\n");
        return;
    }
    let _ = write!(
        page,
        "<p>Operations that failed, by reason:</p>\n<div class=\"table\"><table id=\"failures\">\n<tr><th style=\"width: {}ch\">policy</th>",
        two_line_width(names)
    );
    for reason in &reasons {
        let _ = write!(page, "<th>{}</th>", escape(reason));
    }
    page.push_str("</tr>\n");
    for (name, failures) in names.iter().zip(&failures) {
        let _ = write!(page, "<tr><td>{}</td>", escape(name));
        for reason in &reasons {
            let count = failures
                .iter()
                .find(|(failed, _)| failed.to_string() == *reason)
                .map_or(0, |(_, count)| *count);
            let _ = write!(page, "<td>{count}</td>");
        }
        page.push_str("</tr>\n");
    }
    let _ = writeln!(
        page,
        "</table></div>\n<p class=\"meta\">{}</p>",
        escape(FAILURES_MEANING)
    );
}

/// The width, in `ch`, at which the longest of `names` wraps to at most two lines: the longer
/// line of its most even split at a space, plus a character of slack for fonts wider than
/// their `0`; at least 14, so that short names stay on one line, and at most 24 (a longer
/// name may take three lines rather than squeeze the numbers).
fn two_line_width(names: &[&str]) -> usize {
    let widest = names
        .iter()
        .map(|name| {
            let words: Vec<&str> = name.split_whitespace().collect();
            (1..words.len())
                .map(|split| {
                    let first = words[..split].join(" ").chars().count();
                    let second = words[split..].join(" ").chars().count();
                    first.max(second)
                })
                .min()
                .unwrap_or_else(|| name.chars().count())
        })
        .max()
        .unwrap_or(0);
    (widest + 1).clamp(14, 24)
}

/// One setting of a caller's policy as the Policies table shows it: its header (HTML: a field
/// of the scenario file is written as code) and its value in words.
type Setting = (&'static str, String);

/// What a caller (the user clients or a tier) does: its retries (or hedging), backoff,
/// Retry-After handling, what it retries, its timeouts, its controls and whether it repeats
/// what is not repeatable.
fn caller_settings(policy: &crate::model::CallerPolicy) -> Vec<Setting> {
    let text = policy.text();
    vec![
        ("retries", text.retries),
        ("backoff", text.backoff),
        ("Retry-After", text.retry_after),
        ("retries on", text.retries_on),
        ("attempt timeout", text.attempt_timeout),
        ("deadline", text.deadline),
        ("controls", text.controls),
        ("<code>unsafe_retries</code>", yes_no(policy.unsafe_retries)),
    ]
}

/// A user policy's settings: the caller's, then what protects its writes: whether its
/// operations carry idempotency keys, how long the services keep them, and whether it asks a
/// status endpoint.
fn user_settings(run: &ScenarioRun, model: &crate::model::Model) -> Vec<Setting> {
    let endpoints = &model.users.endpoints;
    let operations = &run.scenario.clients.operations;
    // `yes` or `no` if every operation agrees, else each operation's.
    let per_operation = |has: fn(&crate::model::Endpoint) -> bool| -> String {
        if endpoints.iter().all(has) || !endpoints.iter().any(has) {
            return yes_no(endpoints.first().is_some_and(has));
        }
        let each: Vec<String> = operations
            .iter()
            .zip(endpoints)
            .map(|(operation, endpoint)| {
                format!("{}: {}", operation.name.get_ref(), yes_no(has(endpoint)))
            })
            .collect();
        each.join(", ")
    };
    // Keys are kept only where some operation sends one.
    let key_ttl = if endpoints.iter().any(|endpoint| endpoint.idempotency_key) {
        let mut ttls: Vec<String> = Vec::new();
        for service in &model.services {
            let ttl = crate::base::time::Duration(service.idempotency_ttl).to_string();
            if !ttls.contains(&ttl) {
                ttls.push(ttl);
            }
        }
        if ttls.len() == 1 {
            ttls.remove(0)
        } else {
            let each: Vec<String> = model
                .services
                .iter()
                .map(|service| {
                    format!(
                        "{} {}",
                        service.name,
                        crate::base::time::Duration(service.idempotency_ttl)
                    )
                })
                .collect();
            each.join(", ")
        }
    } else {
        "-".to_string()
    };
    let mut settings = caller_settings(&model.users.policy);
    settings.extend([
        (
            "<code>idempotency_key</code>",
            per_operation(|endpoint| endpoint.idempotency_key),
        ),
        ("<code>idempotency_ttl</code>", key_ttl),
        (
            "<code>status_endpoint</code>",
            per_operation(|endpoint| endpoint.status_endpoint),
        ),
    ]);
    if run.has_manual_retries() {
        settings.push((
            "<code>manual_retry</code>",
            model
                .users
                .manual_retry
                .as_ref()
                .map_or_else(|| "none".to_string(), ToString::to_string),
        ));
    }
    settings
}

fn yes_no(value: bool) -> String {
    if value { "yes" } else { "no" }.to_string()
}

/// What each policy does; in a topology, then what each tier does under it. Each table has a
/// column for every setting that differs between its rows, and only those; a line below it
/// gives the settings they share, so that policies that differ in one setting show that
/// setting and nothing else.
fn policy_table(page: &mut String, run: &ScenarioRun) {
    page.push_str("<h2>Policies</h2>\n");
    let rows: Vec<(String, Vec<Setting>)> = run
        .policies
        .iter()
        .enumerate()
        .map(|(index, policy)| {
            let name = if run.scenario.changed_on_command_line(index) {
                format!("{} (changed by --set)", policy.name)
            } else {
                policy.name.clone()
            };
            (name, user_settings(run, &policy.model))
        })
        .collect();
    settings_table(page, "policy", "Every policy", &rows);
    if !run.has_topology() {
        return;
    }
    page.push_str("<p>The calls between services, under each policy (a tier without a <code>retry</code> table never retries):</p>\n");
    let tiers: Vec<(String, Vec<Setting>)> = run
        .policies
        .iter()
        .flat_map(|policy| {
            let callers = policy.model.callers();
            let tiers = policy
                .model
                .services
                .iter()
                .filter_map(|service| service.downstream.as_ref());
            callers
                .into_iter()
                .filter(|caller| caller.tier)
                .zip(tiers)
                .map(|(caller, tier)| {
                    (
                        format!("{}: {}", policy.name, caller.calls),
                        caller_settings(tier),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    settings_table(page, "policy: calls", "Every call", &tiers);
}

/// A table of `rows` (a name and its settings, the same settings in the same order in every
/// row) with a column for each setting whose value differs between rows, headed `first`,
/// and a line, opened by `shared`, with the settings every row has alike.
fn settings_table(page: &mut String, first: &str, shared: &str, rows: &[(String, Vec<Setting>)]) {
    let Some((_, settings)) = rows.first() else {
        return;
    };
    let differs: Vec<bool> = (0..settings.len())
        .map(|index| {
            rows.iter()
                .any(|(_, other)| other[index].1 != settings[index].1)
        })
        .collect();
    if differs.contains(&true) {
        let names: Vec<&str> = rows.iter().map(|(name, _)| name.as_str()).collect();
        let _ = write!(
            page,
            "<div class=\"table\"><table class=\"settings\">\n<tr><th style=\"width: {}ch\">{first}</th>",
            two_line_width(&names)
        );
        for ((header, _), _) in settings.iter().zip(&differs).filter(|(_, d)| **d) {
            let _ = write!(page, "<th>{header}</th>");
        }
        page.push_str("</tr>\n");
        for (name, settings) in rows {
            let _ = write!(page, "<tr><td>{}</td>", escape(name));
            for ((_, value), _) in settings.iter().zip(&differs).filter(|(_, d)| **d) {
                let _ = write!(page, "<td>{}</td>", escape(value));
            }
            page.push_str("</tr>\n");
        }
        page.push_str("</table></div>\n");
    }
    let alike: Vec<String> = settings
        .iter()
        .zip(&differs)
        .filter(|(_, differs)| !**differs)
        .map(|((header, value), _)| format!("{header} {}", escape(value)))
        .collect();
    if !alike.is_empty() {
        let who = match rows {
            [(name, _)] => format!("<b>{}</b>", escape(name)),
            _ => shared.to_string(),
        };
        let _ = writeln!(page, "<p class=\"meta\">{who}: {}.</p>", alike.join("; "));
    }
}

/// The comment at the top of the scenario file: what it sets up and what to look at. A
/// paragraph of indented lines (a command) is kept as it is written; lines that start with
/// `- ` are the items of a list (an item goes on over the indented lines below it); `code`
/// spans are shown as code.
fn what_to_look_at(page: &mut String, header: &str) {
    if header.is_empty() {
        return;
    }
    page.push_str("<h2>What to look at</h2>\n<div class=\"header\">\n");
    for paragraph in header.split("\n\n") {
        let lines: Vec<&str> = paragraph.lines().collect();
        if lines.iter().all(|line| line.starts_with("  ")) {
            let _ = writeln!(page, "<pre>{}</pre>", escape(paragraph));
            continue;
        }
        // Runs of text lines, and lists of items, each a run of lines.
        let mut text: Vec<&str> = Vec::new();
        let mut items: Vec<Vec<&str>> = Vec::new();
        let flush_text = |page: &mut String, text: &mut Vec<&str>| {
            if !text.is_empty() {
                let _ = writeln!(page, "<p>{}</p>", with_code(&text.join(" ")));
                text.clear();
            }
        };
        let flush_items = |page: &mut String, items: &mut Vec<Vec<&str>>| {
            if !items.is_empty() {
                page.push_str("<ul>\n");
                for item in items.drain(..) {
                    let _ = writeln!(page, "<li>{}</li>", with_code(&item.join(" ")));
                }
                page.push_str("</ul>\n");
            }
        };
        for line in lines {
            if let Some(item) = line.strip_prefix("- ") {
                flush_text(page, &mut text);
                items.push(vec![item.trim()]);
            } else if let Some(item) = items.last_mut().filter(|_| line.starts_with("  ")) {
                item.push(line.trim());
            } else {
                flush_items(page, &mut items);
                text.push(line);
            }
        }
        flush_text(page, &mut text);
        flush_items(page, &mut items);
    }
    page.push_str("</div>\n");
}

/// `text` escaped, with each `code` span between a pair of backticks as `<code>`; a backtick
/// without a partner is kept as it is.
fn with_code(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    let mut html = String::new();
    for (index, part) in parts.iter().enumerate() {
        let paired = index % 2 == 1 && index + 1 < parts.len();
        if paired {
            let _ = write!(html, "<code>{}</code>", escape(part));
        } else {
            if index % 2 == 1 {
                html.push('`');
            }
            html.push_str(&escape(part));
        }
    }
    html
}

/// The terms a reader new to retries meets in this page, each in a sentence.
const GLOSSARY: [(&str, &str); 10] = [
    (
        "attempt",
        "One request sent for an operation; the first attempt and each retry are attempts.",
    ),
    (
        "backoff",
        "The wait before a retry, growing with each attempt (base times multiplier to the attempt's power, up to the cap), so that a struggling service gets room to recover.",
    ),
    (
        "jitter",
        "Randomness in the backoff, so that clients that failed together do not retry together: full jitter draws the whole wait at random, equal jitter half of it.",
    ),
    (
        "Retry-After",
        "A header with which an overloaded or rate-limiting service says when to come back; a client may honour it exactly, as a floor, with jitter, or ignore it.",
    ),
    (
        "deadline",
        "The time budget of a whole operation, every attempt and wait included; attempt timeout is the budget of one attempt.",
    ),
    (
        "idempotent",
        "An operation that may be repeated without changing the result (GET, PUT, DELETE); a POST is not, unless it carries an idempotency key the service remembers.",
    ),
    (
        "duplicate write",
        "A write committed twice for one operation: a retried POST whose first attempt had in fact succeeded.",
    ),
    (
        "amplification",
        "Requests sent per operation: 1 without retries; every layer that retries multiplies it.",
    ),
    (
        "retry budget",
        "A client-side control that lets retries add at most a share (say 20%) to the requests sent, so that retries cannot multiply an overload.",
    ),
    (
        "metastable failure",
        "An overload that outlives its cause: the retries it provokes keep the service saturated after the trigger is gone.",
    ),
];

fn glossary(page: &mut String) {
    page.push_str("<h2>Glossary</h2>\n<dl>\n");
    for (term, meaning) in GLOSSARY {
        let _ = writeln!(
            page,
            "<dt>{}</dt><dd>{}</dd>",
            escape(term),
            escape(meaning)
        );
    }
    page.push_str("</dl>\n");
}

fn lesson(page: &mut String, run: &ScenarioRun) {
    let claims = evaluate(run);
    if claims.is_empty() {
        return;
    }
    page.push_str("<h2>Lesson</h2>\n<ul class=\"claims\">\n");
    for claim in claims {
        let _ = writeln!(
            page,
            "<li class=\"{}\"><b>{}</b>: {} ({} against {}){}</li>",
            if claim.held { "held" } else { "failed" },
            if claim.held { "held" } else { "did not hold" },
            escape(&claim.claim),
            escape(&claim.shown[0]),
            escape(&claim.shown[1]),
            claim
                .why
                .map_or_else(String::new, |why| format!(". {}", escape(&why)))
        );
    }
    page.push_str("</ul>\n");
}

/// With two operations or more, one row per policy and operation: what the users of each got
/// and the load each put on the system, as `summary.json`'s `per_operation` gives them
/// ([`OPERATION_COLUMNS`], the terminal's columns and more). With one operation its numbers
/// are the run's, in the summary table, and there is no such table.
fn operations_table(page: &mut String, run: &ScenarioRun) {
    if run
        .policies
        .iter()
        .all(|policy| policy.summary.by_operation.is_empty())
    {
        return;
    }
    let names: Vec<&str> = run
        .policies
        .iter()
        .map(|policy| policy.name.as_str())
        .collect();
    let _ = write!(
        page,
        "<h2>Operations</h2>\n<div class=\"table\"><table id=\"operations\">\n<tr><th style=\"width: {}ch\">policy</th><th>operation</th>",
        two_line_width(&names)
    );
    for column in &OPERATION_COLUMNS {
        let _ = write!(page, "<th>{}</th>", escape(column.report));
    }
    page.push_str("</tr>\n");
    for policy in &run.policies {
        for operation in &policy.summary.by_operation {
            let _ = write!(
                page,
                "<tr><td>{}</td><td>{}</td>",
                escape(&policy.name),
                escape(&operation.name)
            );
            for column in &OPERATION_COLUMNS {
                let _ = write!(page, "<td>{}</td>", column.cell(operation, "–"));
            }
            page.push_str("</tr>\n");
        }
    }
    page.push_str("</table></div>\n<p class=\"meta\">Each operation on its own (<code>summary.json</code>'s <code>per_operation</code>; claims and sweeps name its metrics <code>METRIC:OPERATION</code>, as <code>success_rate:pay</code>): its success, goodput and unknown results are of its operations, its amplification the requests its clients sent per operation of it (attempts and status checks), its duplicate writes those of its writes, its latencies those of its successes.</p>\n");
}

/// One row per policy and service: the load its callers put on it per user operation, and
/// what it did with it.
fn service_table(page: &mut String, run: &ScenarioRun) {
    let names: Vec<&str> = run
        .policies
        .iter()
        .map(|policy| policy.name.as_str())
        .collect();
    let _ = write!(
        page,
        "<h2>Services</h2>\n<div class=\"table\"><table id=\"services\">\n<tr><th style=\"width: {}ch\">policy</th>",
        two_line_width(&names)
    );
    page.push_str("<th>service</th><th>requests per operation</th><th>requests</th><th>retries</th><th>served</th><th>rejected</th><th>timeouts seen by callers</th><th>peak requests/s</th><th>peak queue</th><th>wasted work s</th></tr>\n");
    for policy in &run.policies {
        for service in &policy.services {
            let totals = &service.totals;
            let _ = writeln!(
                page,
                "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{}</td><td>{:.1}</td></tr>",
                escape(&policy.name),
                escape(&service.name),
                service.amplification,
                totals.requests(),
                totals.retries,
                totals.served,
                totals.rejected(),
                totals.timeouts,
                service.peak_requests_rps,
                service.peak_queue_len,
                service.wasted_work_s,
            );
        }
    }
    page.push_str("</table></div>\n<p class=\"meta\">Requests per operation is the load on the service per user operation: 1 without retries anywhere; in a chain where every layer retries, the product of the layers' sends.</p>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A service's overload settings are shown as TOML (keys sorted), contention among them.
    #[test]
    fn overload_settings_are_shown_as_toml() {
        let text = "name = \"t\"\nduration = \"1s\"\n[clients]\ncount = 1\nrate = 1.0\n[upstream]\nworkers = 4\nservice_time = \"10ms\"\ncancellation = true\ncontention = { sigma = 0.02, kappa = 0.0001 }\n";
        let scenario = crate::import::load_str(text, "t.toml", &[]).unwrap();
        assert_eq!(
            overload_settings(scenario.services()[0]),
            [
                "<code>cancellation = true</code>",
                "<code>contention = { kappa = 0.0001, sigma = 0.02 }</code>"
            ]
        );
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("a < b & \"c\""), "a &lt; b &amp; &quot;c&quot;");
    }

    /// Backticks mark code, escaped inside; an odd one out stays a backtick.
    #[test]
    fn code_spans_are_code() {
        assert_eq!(
            with_code("the `retry` table and `a<b` then ` alone"),
            "the <code>retry</code> table and <code>a&lt;b</code> then ` alone"
        );
        assert_eq!(with_code("no code"), "no code");
    }

    /// A header's list items become a list, their continuation lines joined, and its
    /// indented commands stay as written.
    #[test]
    fn a_header_keeps_its_lists_and_commands() {
        let mut page = String::new();
        what_to_look_at(
            &mut page,
            "Intro with `x`.\n\n- \"a\": one\n  more\n- \"b\": two\n\n  retrystorm run x.toml\n\nThe configs:\n- one;\n- two.\nThen text.",
        );
        assert!(page.contains("<p>Intro with <code>x</code>.</p>"), "{page}");
        assert!(
            page.contains(
                "<p>The configs:</p>\n<ul>\n<li>one;</li>\n<li>two.</li>\n</ul>\n<p>Then text.</p>"
            ),
            "{page}"
        );
        assert!(
            page.contains(
                "<ul>\n<li>&quot;a&quot;: one more</li>\n<li>&quot;b&quot;: two</li>\n</ul>"
            ),
            "{page}"
        );
        assert!(
            page.contains("<pre>  retrystorm run x.toml</pre>"),
            "{page}"
        );
    }
}
