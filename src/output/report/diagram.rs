//! The topology diagram of `report.html`: the clients and the services as boxes, the calls as
//! arrows labelled with how many times the caller sends at most.
//!
//! Services are placed in columns by the length of the longest chain of calls that reaches
//! them from the clients, so every arrow points right; within a column they keep the
//! scenario's order. The SVG is written by hand (boxes, lines and text), so it is small, and it
//! is deterministic: the same topology gives the same bytes.

use std::fmt::Write as _;

use super::escape;
use crate::base::time::Duration;
use crate::model::{CallerPolicy, Deadline, Model};
use crate::output::charts::outline_text;

const BOX_WIDTH: u32 = 200;
const BOX_HEIGHT: u32 = 62;
const COLUMN_GAP: u32 = 190;
const ROW_GAP: u32 = 34;
const MARGIN: u32 = 16;

/// The diagram of `model`'s topology as an SVG element, its text drawn as outlines of the
/// embedded font as the charts' is.
pub fn topology_svg(model: &Model) -> String {
    outline_text(&diagram_with_text(model), "topology")
}

/// The diagram with its labels as `<text>` elements.
fn diagram_with_text(model: &Model) -> String {
    let services = &model.services;
    // Column of each service: 1 + the longest chain of calls from the entry (clients are 0).
    let mut column = vec![0usize; services.len()];
    column[usize::from(model.entry)] = 1;
    // Calls form a DAG of at most a hundred services: relaxing every edge once per service
    // settles the longest paths.
    for _ in 0..services.len() {
        for (caller, service) in services.iter().enumerate() {
            if column[caller] == 0 {
                continue;
            }
            for &callee in &service.calls {
                let callee = usize::from(callee);
                column[callee] = column[callee].max(column[caller] + 1);
            }
        }
    }
    let columns = column.iter().copied().max().unwrap_or(1) + 1;
    let mut rows = vec![0usize; columns];
    let mut position = vec![(0u32, 0u32); services.len()];
    for (index, &at) in column.iter().enumerate() {
        position[index] = place(at, rows[at]);
        rows[at] += 1;
    }
    let clients = place(0, 0);
    let tallest = rows.iter().copied().max().unwrap_or(1).max(1) as u32;
    let width = 2 * MARGIN + columns as u32 * BOX_WIDTH + (columns as u32 - 1) * COLUMN_GAP;
    let height = 2 * MARGIN + tallest * BOX_HEIGHT + (tallest - 1) * ROW_GAP;

    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="topology: the clients and the services they call" font-family="DejaVu Sans, Verdana, sans-serif" font-size="12">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>
"##
    );
    let entry = position[usize::from(model.entry)];
    arrow(&mut svg, clients, entry, "each policy's retries");
    for (caller, service) in services.iter().enumerate() {
        if let Some(policy) = &service.downstream {
            for &callee in &service.calls {
                arrow(
                    &mut svg,
                    position[caller],
                    position[usize::from(callee)],
                    &sends(policy),
                );
            }
        }
    }
    draw_box(
        &mut svg,
        clients,
        "clients",
        &format!("{} clients", model.users.count),
        "",
    );
    for (index, service) in services.iter().enumerate() {
        let details = match service.calls.is_empty() {
            true => format!("queue ≤ {}, holds the data", service.queue_limit),
            false => format!("queue ≤ {}", service.queue_limit),
        };
        draw_box(
            &mut svg,
            position[index],
            &service.name,
            &format!(
                "{} workers, {}",
                service.workers,
                short_distribution(&service.service_time.to_string())
            ),
            &details,
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The top-left corner of the box in `column`, `row`.
fn place(column: usize, row: usize) -> (u32, u32) {
    (
        MARGIN + column as u32 * (BOX_WIDTH + COLUMN_GAP),
        MARGIN + row as u32 * (BOX_HEIGHT + ROW_GAP),
    )
}

/// How a calling service sends: at most how many times, with which timeout and deadline.
fn sends(policy: &CallerPolicy) -> String {
    let tries = policy.max_attempts + 1;
    let deadline = match policy.deadline {
        Deadline::Propagate => "deadline passed on".to_string(),
        Deadline::PropagateAtMost(budget) => format!("deadline passed on, ≤ {}", Duration(budget)),
        Deadline::Budget(budget) => format!("{} budget", Duration(budget)),
        Deadline::Unbounded => "no deadline".to_string(),
    };
    let timeout = match crate::model::attempt_timeout_text(policy.attempt_timeout).as_str() {
        "none" => "no attempt timeout".to_string(),
        timeout => format!("{timeout} timeout"),
    };
    format!(
        "≤ {tries} send{}, {timeout}, {deadline}",
        if tries == 1 { "" } else { "s" },
    )
}

/// "exponential, mean 10ms" as "exp. 10ms": short enough for a box.
fn short_distribution(text: &str) -> String {
    text.replace("exponential, mean ", "exp. ")
        .replace("lognormal, mean ", "lognormal ")
}

fn draw_box(svg: &mut String, (x, y): (u32, u32), title: &str, line: &str, details: &str) {
    let _ = writeln!(
        svg,
        r##"<rect x="{x}" y="{y}" width="{BOX_WIDTH}" height="{BOX_HEIGHT}" rx="6" fill="#f4f7fb" stroke="#0072b2" stroke-width="1.5"/>"##
    );
    let centre = x + BOX_WIDTH / 2;
    let _ = writeln!(
        svg,
        r##"<text x="{centre}" y="{}" text-anchor="middle" font-weight="bold" font-size="14">{}</text>"##,
        y + 20,
        escape(title)
    );
    for (offset, text) in [(38, line), (54, details)] {
        if !text.is_empty() {
            let _ = writeln!(
                svg,
                r##"<text x="{centre}" y="{}" text-anchor="middle" fill="#333">{}</text>"##,
                y + offset,
                escape(text)
            );
        }
    }
}

/// An arrow from the right side of the box at `from` to the left side of the box at `to`,
/// labelled above its middle.
fn arrow(svg: &mut String, from: (u32, u32), to: (u32, u32), label: &str) {
    let (x1, y1) = (from.0 + BOX_WIDTH, from.1 + BOX_HEIGHT / 2);
    let (x2, y2) = (to.0, to.1 + BOX_HEIGHT / 2);
    let _ = writeln!(
        svg,
        r##"<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#555" stroke-width="1.5" marker-end="url(#arrow)"/>"##
    );
    let (mx, my) = ((x1 + x2) / 2, (y1 + y2) / 2);
    // Long labels wrap at the comma after the number of sends.
    let (first, rest) = label.split_once(", ").unwrap_or((label, ""));
    let _ = writeln!(
        svg,
        r##"<text x="{mx}" y="{}" text-anchor="middle" font-size="11" fill="#333">{}</text>"##,
        my.saturating_sub(20),
        escape(first)
    );
    if !rest.is_empty() {
        let _ = writeln!(
            svg,
            r##"<text x="{mx}" y="{}" text-anchor="middle" font-size="10" fill="#555">{}</text>"##,
            my.saturating_sub(7),
            escape(rest)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::load_str;

    #[test]
    fn every_service_is_a_box_and_every_call_an_arrow() {
        let text = r#"
name = "t"
duration = "1s"
[clients]
count = 10
rate = 1.0
calls = "edge"
[[service]]
name = "edge"
workers = 4
service_time = "1ms"
calls = ["api", "cache"]
retry = { max_attempts = 0 }
[[service]]
name = "api"
workers = 4
service_time = "1ms"
calls = ["db"]
retry = { deadline = "2s" }
[[service]]
name = "cache"
workers = 4
service_time = "1ms"
calls = ["db"]
[[service]]
name = "db"
workers = 4
service_time = "1ms"
"#;
        let scenario = load_str(text, "t.toml", &[]).unwrap();
        let model = Model::new(&scenario, &scenario.policy[0]);
        assert!(topology_svg(&model).contains(r#"aria-label="≤ 4 sends""#));
        let svg = diagram_with_text(&model);
        assert_eq!(svg.matches("<rect").count(), 5, "clients and four services");
        assert_eq!(
            svg.matches("<line").count(),
            5,
            "clients->edge and four calls"
        );
        assert!(svg.contains(">≤ 1 send<"), "edge makes each call once");
        assert!(svg.contains(">1s timeout, deadline passed on<"));
        assert!(svg.contains(">≤ 4 sends<") && svg.contains(">1s timeout, 2s budget<"));
        // db is two calls below edge: the fourth column.
        let db = svg.find(">db<").unwrap();
        let x = |at: usize| -> u32 {
            let before = &svg[..at];
            let start = before.rfind("x=\"").unwrap() + 3;
            before[start..].split('"').next().unwrap().parse().unwrap()
        };
        assert_eq!(x(db), MARGIN + 3 * (BOX_WIDTH + COLUMN_GAP) + BOX_WIDTH / 2);
    }
}
