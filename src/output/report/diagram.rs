//! The topology diagram of `report.html`: the clients and the services as boxes, the calls as
//! arrows labelled with how many times the caller sends at most, its timeout and deadline,
//! and the controls that bound its retries.
//!
//! Services are placed in columns by the length of the longest chain of calls that reaches
//! them from the clients, so every arrow points right; within a column they keep the
//! scenario's order. Every label is measured with the embedded font it is drawn in
//! ([`text_width`]): a box is as wide as its longest line (a line longer than
//! [`MAX_BOX_TEXT`] wraps), and the gap between two columns as wide as the longest line of the
//! arrows' labels in it (which wrap at [`MAX_LABEL_TEXT`]), so no text is cut or runs over a
//! box. The SVG is written by hand (boxes, lines and text), so it is small, and it is
//! deterministic: the same topology gives the same bytes.

use std::fmt::Write as _;

use super::escape;
use crate::base::time::Duration;
use crate::model::{CallerPolicy, Deadline, Model};
use crate::output::charts::{outline_text, text_width};

/// Font sizes, in pixels: a box's title (bold), its lines, and an arrow's label.
const TITLE_SIZE: f64 = 14.0;
const LINE_SIZE: f64 = 12.0;
const LABEL_SIZE: f64 = 11.0;
/// Baseline to baseline of a box's lines and of a label's.
const LINE_STEP: u32 = 16;
const LABEL_STEP: u32 = 13;
/// A line of a box wraps beyond this many pixels, a line of a label beyond this many.
const MAX_BOX_TEXT: f64 = 240.0;
const MAX_LABEL_TEXT: f64 = 250.0;
/// The narrowest box, and the room between a box's text and its sides.
const MIN_BOX_WIDTH: u32 = 140;
const BOX_PADDING: u32 = 12;
/// The narrowest gap between two columns, and the room between a label and the boxes.
const MIN_COLUMN_GAP: u32 = 60;
const LABEL_PADDING: u32 = 12;
const ROW_GAP: u32 = 34;
const MARGIN: u32 = 16;

/// The diagram of `model`'s topology as an SVG element, its text drawn as outlines of the
/// embedded font as the charts' is. `policies` are the policies compared, each with its model
/// (its overrides applied): where they call a service differently, the arrow says how each
/// does.
pub fn topology_svg(model: &Model, policies: &[(&str, &Model)]) -> String {
    outline_text(&diagram_with_text(model, policies), "topology")
}

/// A box: its title and lines, wrapped.
struct Box {
    title: String,
    lines: Vec<String>,
}

impl Box {
    fn new(title: &str, lines: &[String]) -> Box {
        Box {
            title: title.to_string(),
            lines: lines
                .iter()
                .filter(|line| !line.is_empty())
                .flat_map(|line| wrap(line, LINE_SIZE, MAX_BOX_TEXT))
                .collect(),
        }
    }

    /// The width its text needs.
    fn width(&self) -> u32 {
        let widest = self
            .lines
            .iter()
            .map(|line| text_width(line, LINE_SIZE, false))
            .fold(text_width(&self.title, TITLE_SIZE, true), f64::max);
        (widest.ceil() as u32 + 2 * BOX_PADDING).max(MIN_BOX_WIDTH)
    }

    /// The height its text needs: the title's line, then one step per line, and room below.
    fn height(&self) -> u32 {
        30 + LINE_STEP * self.lines.len() as u32
    }
}

/// An arrow: from which service (`None`: the clients) to which, and its label's lines.
struct Arrow {
    from: Option<usize>,
    to: usize,
    label: Vec<String>,
}

/// The diagram with its labels as `<text>` elements.
fn diagram_with_text(model: &Model, policies: &[(&str, &Model)]) -> String {
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
    let mut row = vec![0usize; services.len()];
    let mut rows = vec![0usize; columns];
    for (index, &at) in column.iter().enumerate() {
        row[index] = rows[at];
        rows[at] += 1;
    }

    let clients = Box::new("clients", &[format!("{} clients", model.users.count)]);
    let boxes: Vec<Box> = services
        .iter()
        .map(|service| {
            let details = match service.calls.is_empty() {
                true => format!("queue ≤ {}, holds the data", service.queue_limit),
                false => format!("queue ≤ {}", service.queue_limit),
            };
            let workers = match service.fleet.instances {
                1 => format!("{} workers", service.workers),
                instances => format!("{instances} instances of {} workers", service.workers),
            };
            Box::new(
                &service.name,
                &[
                    format!(
                        "{workers}, {}",
                        short_distribution(&service.service_time.to_string())
                    ),
                    details,
                ],
            )
        })
        .collect();
    let mut arrows = vec![Arrow {
        from: None,
        to: usize::from(model.entry),
        label: vec!["each policy's retries".to_string()],
    }];
    for (caller, service) in services.iter().enumerate() {
        if service.downstream.is_none() {
            continue;
        }
        let label: Vec<String> = call_label(model, policies, caller)
            .iter()
            .flat_map(|line| wrap(line, LABEL_SIZE, MAX_LABEL_TEXT))
            .collect();
        // Every call of a service is made under the same policy: one label, on the arrow to
        // the callee highest in the picture, where the calls fan out.
        let mut callees: Vec<usize> = service.calls.iter().copied().map(usize::from).collect();
        callees.sort_by_key(|&callee| (row[callee], column[callee]));
        callees.dedup();
        for (index, to) in callees.into_iter().enumerate() {
            arrows.push(Arrow {
                from: Some(caller),
                to,
                label: if index == 0 {
                    label.clone()
                } else {
                    Vec::new()
                },
            });
        }
    }

    // Widths of the columns, and of the gaps after them, which hold the arrows' labels.
    let mut widths = vec![clients.width(); columns];
    for (index, shown) in boxes.iter().enumerate() {
        widths[column[index]] = widths[column[index]].max(shown.width());
    }
    let mut gaps = vec![MIN_COLUMN_GAP; columns];
    for arrow in &arrows {
        let from = arrow.from.map_or(0, |caller| column[caller]);
        let widest = arrow
            .label
            .iter()
            .map(|line| text_width(line, LABEL_SIZE, false).ceil() as u32)
            .max()
            .unwrap_or(0);
        gaps[from] = gaps[from].max(widest + 2 * LABEL_PADDING);
    }
    let box_height = boxes
        .iter()
        .map(Box::height)
        .fold(clients.height(), u32::max);
    // A label stands above its arrow's middle: the top row's may rise above the boxes, and
    // two arrows from one box to two rows must leave room for both labels.
    let label_height = arrows
        .iter()
        .map(|arrow| LABEL_STEP * arrow.label.len() as u32)
        .max()
        .unwrap_or(0);
    let top = MARGIN + (label_height + 8).saturating_sub(box_height / 2);
    let pitch = (box_height + ROW_GAP).max(2 * label_height + 12);
    let left = |at: usize| -> u32 {
        MARGIN + widths[..at].iter().sum::<u32>() + gaps[..at].iter().sum::<u32>()
    };
    let place = |at: usize, row: usize| (left(at), top + row as u32 * pitch);
    let tallest = rows.iter().copied().max().unwrap_or(1).max(1) as u32;
    let width = left(columns - 1) + widths[columns - 1] + MARGIN;
    let height = top + (tallest - 1) * pitch + box_height + MARGIN;

    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="topology: the clients and the services they call" font-family="DejaVu Sans, Verdana, sans-serif" font-size="12">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>
"##
    );
    // Where each box is (its top-left corner) and how wide.
    let frame = |service: Option<usize>| -> ((u32, u32), u32) {
        match service {
            None => (place(0, 0), widths[0]),
            Some(index) => (place(column[index], row[index]), widths[column[index]]),
        }
    };
    for arrow in &arrows {
        let ((x, y), from_width) = frame(arrow.from);
        let (to, _) = frame(Some(arrow.to));
        draw_arrow(
            &mut svg,
            (x + from_width, y + box_height / 2),
            (to.0, to.1 + box_height / 2),
            &arrow.label,
        );
    }
    let (at, box_width) = frame(None);
    draw_box(&mut svg, at, (box_width, box_height), &clients);
    for (index, shown) in boxes.iter().enumerate() {
        let (at, box_width) = frame(Some(index));
        draw_box(&mut svg, at, (box_width, box_height), shown);
    }
    svg.push_str("</svg>");
    svg
}

/// `text` in lines of at most `max` pixels at `size`, broken at spaces (a single word longer
/// than that is a line of its own).
fn wrap(text: &str, size: f64, max: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if text_width(&format!("{line} {word}"), size, false) <= max => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// How a caller sends a call, in the words of its arrow.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CallWords {
    /// `≤ 4 sends`, or `1 send`.
    sends: String,
    /// `900ms timeout, deadline passed on`.
    timing: String,
    /// The controls that bound its retries, if it has any (`retry budget 20% of calls ...`).
    controls: Option<String>,
}

impl CallWords {
    fn of(policy: &CallerPolicy) -> CallWords {
        let tries = policy.max_attempts + 1;
        let deadline = match policy.deadline {
            Deadline::Propagate => "deadline passed on".to_string(),
            Deadline::PropagateAtMost(budget) => {
                format!("deadline passed on, ≤ {}", Duration(budget))
            }
            Deadline::Budget(budget) => format!("{} budget", Duration(budget)),
            Deadline::Unbounded => "no deadline".to_string(),
        };
        let timeout = match crate::model::attempt_timeout_text(policy.attempt_timeout).as_str() {
            "none" => "no attempt timeout".to_string(),
            timeout => format!("{timeout} timeout"),
        };
        let controls: Vec<String> = policy.controls.iter().map(ToString::to_string).collect();
        CallWords {
            sends: format!("≤ {tries} send{}", if tries == 1 { "" } else { "s" }),
            timing: format!("{timeout}, {deadline}"),
            controls: (!controls.is_empty()).then(|| controls.join("; ")),
        }
    }

    /// The sends, and the controls if there are any.
    fn bounded(&self) -> String {
        match &self.controls {
            Some(controls) => format!("{}, within {controls}", self.sends),
            None => self.sends.clone(),
        }
    }
}

/// The label of the calls of service `caller`: how many times it sends each at most and the
/// controls that bound its retries, then its timeout and deadline. If the policies compared
/// call it differently (their overrides), one line per way, naming the policies that call so.
fn call_label(model: &Model, policies: &[(&str, &Model)], caller: usize) -> Vec<String> {
    let words = |model: &Model| {
        model.services[caller]
            .downstream
            .as_ref()
            .map(CallWords::of)
    };
    // The ways the policies call, in order, each with the policies that call so.
    let mut ways: Vec<(CallWords, Vec<&str>)> = Vec::new();
    for (name, policy_model) in policies {
        let Some(called) = words(policy_model) else {
            continue;
        };
        match ways.iter_mut().find(|(way, _)| *way == called) {
            Some((_, names)) => names.push(name),
            None => ways.push((called, vec![name])),
        }
    }
    if ways.len() <= 1 {
        let called = ways
            .pop()
            .map(|(way, _)| way)
            .or_else(|| words(model))
            .expect("a calling service has a policy");
        return [called.sends.clone()]
            .into_iter()
            .chain(called.controls.clone())
            .chain([called.timing])
            .collect();
    }
    let same_timing = ways.iter().all(|(way, _)| way.timing == ways[0].0.timing);
    let mut lines: Vec<String> = ways
        .iter()
        .map(|(way, names)| {
            let how = if same_timing {
                way.bounded()
            } else {
                format!("{}, {}", way.bounded(), way.timing)
            };
            format!("{}: {how}", names.join(", "))
        })
        .collect();
    if same_timing {
        lines.push(ways[0].0.timing.clone());
    }
    lines
}

/// "exponential, mean 10ms" as "exp. 10ms": short enough for a box.
fn short_distribution(text: &str) -> String {
    text.replace("exponential, mean ", "exp. ")
        .replace("lognormal, mean ", "lognormal ")
}

fn draw_box(svg: &mut String, (x, y): (u32, u32), (width, height): (u32, u32), shown: &Box) {
    let _ = writeln!(
        svg,
        r##"<rect x="{x}" y="{y}" width="{width}" height="{height}" rx="6" fill="#f4f7fb" stroke="#0072b2" stroke-width="1.5"/>"##
    );
    let centre = x + width / 2;
    let _ = writeln!(
        svg,
        r##"<text x="{centre}" y="{}" text-anchor="middle" font-weight="bold" font-size="{TITLE_SIZE}">{}</text>"##,
        y + 20,
        escape(&shown.title)
    );
    for (index, line) in shown.lines.iter().enumerate() {
        let _ = writeln!(
            svg,
            r##"<text x="{centre}" y="{}" text-anchor="middle" font-size="{LINE_SIZE}" fill="#333">{}</text>"##,
            y + 38 + LINE_STEP * index as u32,
            escape(line)
        );
    }
}

/// An arrow from `from` to `to`, its label's lines stacked above its middle, the first darker.
fn draw_arrow(svg: &mut String, (x1, y1): (u32, u32), (x2, y2): (u32, u32), label: &[String]) {
    let _ = writeln!(
        svg,
        r##"<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#555" stroke-width="1.5" marker-end="url(#arrow)"/>"##
    );
    let (mx, my) = ((x1 + x2) / 2, (y1 + y2) / 2);
    let lines = label.len() as u32;
    for (index, line) in label.iter().enumerate() {
        let above = LABEL_STEP * (lines - 1 - index as u32) + 6;
        let _ = writeln!(
            svg,
            r##"<text x="{mx}" y="{}" text-anchor="middle" font-size="{LABEL_SIZE}" fill="{}">{}</text>"##,
            my.saturating_sub(above),
            if index == 0 { "#333" } else { "#555" },
            escape(line)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::load_str;

    fn models(text: &str) -> (Model, Vec<(String, Model)>) {
        let scenario = load_str(text, "t.toml", &[]).unwrap();
        let mut plain = scenario.policy[0].clone();
        plain.overrides = crate::scenario::Overrides::default();
        let policies = scenario
            .policy
            .iter()
            .map(|policy| (policy.name.get_ref().clone(), Model::new(&scenario, policy)))
            .collect();
        (Model::new(&scenario, &plain), policies)
    }

    fn diagram(model: &Model, policies: &[(String, Model)]) -> String {
        let policies: Vec<(&str, &Model)> = policies
            .iter()
            .map(|(name, model)| (name.as_str(), model))
            .collect();
        diagram_with_text(model, &policies)
    }

    /// The value of the attribute `name` in the element `element`.
    fn attribute<'a>(element: &'a str, name: &str) -> &'a str {
        let key = format!(" {name}=\"");
        let start = element.find(&key).unwrap() + key.len();
        element[start..].split('"').next().unwrap()
    }

    /// Every arrow of a diagram, as its ends (x1, y1, x2, y2).
    fn lines(svg: &str) -> Vec<[f64; 4]> {
        let number = |element: &str, name: &str| attribute(element, name).parse::<f64>().unwrap();
        svg.lines()
            .filter(|line| line.starts_with("<line"))
            .map(|line| ["x1", "y1", "x2", "y2"].map(|name| number(line, name)))
            .collect()
    }

    /// Every rectangle (x, y, width, height) and every text (its box on the page: left, top,
    /// right, bottom; and its content) of a diagram, the texts measured as they are drawn.
    #[allow(clippy::type_complexity)]
    fn shapes(svg: &str) -> (Vec<[f64; 4]>, Vec<([f64; 4], String)>) {
        let number = |element: &str, name: &str| attribute(element, name).parse::<f64>().unwrap();
        let rects = svg
            .lines()
            .filter(|line| line.starts_with("<rect"))
            .map(|rect| {
                [
                    number(rect, "x"),
                    number(rect, "y"),
                    number(rect, "width"),
                    number(rect, "height"),
                ]
            })
            .collect();
        let texts = svg
            .lines()
            .filter(|line| line.starts_with("<text"))
            .map(|text| {
                let content = &text[text.find('>').unwrap() + 1..text.find("</text>").unwrap()];
                let content = content.replace("&amp;", "&");
                let size = number(text, "font-size");
                let width = text_width(&content, size, text.contains("font-weight=\"bold\""));
                let (x, y) = (number(text, "x"), number(text, "y"));
                ([x - width / 2.0, y - size, x + width / 2.0, y], content)
            })
            .collect();
        (rects, texts)
    }

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
        let (model, policies) = models(text);
        let policies_ref: Vec<(&str, &Model)> = policies
            .iter()
            .map(|(name, model)| (name.as_str(), model))
            .collect();
        assert!(topology_svg(&model, &policies_ref).contains(r#"aria-label="≤ 4 sends""#));
        let svg = diagram(&model, &policies);
        assert_eq!(svg.matches("<rect").count(), 5, "clients and four services");
        assert_eq!(
            svg.matches("<line").count(),
            5,
            "clients->edge and four calls"
        );
        assert!(svg.contains(">≤ 1 send<"), "edge makes each call once");
        assert!(svg.contains(">1s timeout, deadline passed on<"));
        assert!(svg.contains(">≤ 4 sends<") && svg.contains(">1s timeout, 2s budget<"));
        // db is two calls below edge: the fourth column, right of every other box.
        let (rects, _) = shapes(&svg);
        let db = rects.last().unwrap();
        assert!(rects[..4].iter().all(|rect| rect[0] + rect[2] < db[0]));
    }

    /// Long lines (a lognormal by its median and p99, a large queue), a service that calls two,
    /// and a call bounded by a retry budget in one policy and not retried in another: every
    /// text lies inside its box or, for a label, clear of every box, arrow and other label, so
    /// nothing is cut or hidden; the arrow names the control and the policies that call each
    /// way, once for the service's two calls.
    #[test]
    fn nothing_is_cut_and_the_controls_are_named() {
        let text = r#"
name = "t"
duration = "1s"
[clients]
count = 10
rate = 1.0
calls = "api"
[[service]]
name = "api"
workers = 200
service_time = { distribution = "lognormal", median = "20ms", p99 = "250ms" }
calls = ["db", "search"]
retry = { max_attempts = 3, attempt_timeout = "300ms" }
[[service]]
name = "db"
workers = 40
service_time = { distribution = "lognormal", median = "4ms", p99 = "40ms" }
queue_limit = 100000
[[service]]
name = "search"
workers = 40
service_time = "5ms"
[[policy]]
name = "every layer retries"
[[policy]]
name = "budgeted"
overrides = { "service.api.retry.controls" = [{ kind = "retry-budget" }] }
[[policy]]
name = "only the clients retry"
overrides = { "service.api.retry.max_attempts" = 0 }
"#;
        let (model, policies) = models(text);
        let svg = diagram(&model, &policies);
        // The longest line wraps rather than widen the box past its limit.
        assert!(
            svg.contains(">200 workers, lognormal, median 20ms,<") && svg.contains(">p99 250ms<"),
            "{svg}"
        );
        assert!(svg.contains(">queue ≤ 100000, holds the data<"), "{svg}");
        assert!(svg.contains(">every layer retries: ≤ 4 sends<"), "{svg}");
        assert!(svg.contains(">only the clients retry: ≤ 1 send<"), "{svg}");
        assert!(
            svg.contains(">budgeted: ≤ 4 sends, within retry budget"),
            "{svg}"
        );
        assert_eq!(svg.matches(">only the clients retry: ≤ 1 send<").count(), 1);
        let (rects, texts) = shapes(&svg);
        let inside = |text: &[f64; 4], rect: &[f64; 4]| {
            text[0] >= rect[0] + 4.0
                && text[2] <= rect[0] + rect[2] - 4.0
                && text[1] >= rect[1]
                && text[3] <= rect[1] + rect[3]
        };
        let overlap =
            |a: &[f64; 4], b: &[f64; 4]| a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
        let width = attribute(&svg, "width").parse::<f64>().unwrap();
        for (index, (text, content)) in texts.iter().enumerate() {
            assert!(
                text[0] >= 0.0 && text[2] <= width && text[1] >= 0.0,
                "{content}"
            );
            match rects.iter().find(|rect| overlap(text, rect)) {
                // A box's own line: wholly inside it.
                Some(rect) => assert!(inside(text, rect), "{content} is cut by its box"),
                // A label: clear of every arrow (a point every pixel along it) and of every
                // other label.
                None => {
                    for [x1, y1, x2, y2] in lines(&svg) {
                        let steps = (x2 - x1).abs().max((y2 - y1).abs()).ceil() as usize;
                        let crosses = (0..=steps).any(|step| {
                            let share = step as f64 / steps.max(1) as f64;
                            let (x, y) = (x1 + (x2 - x1) * share, y1 + (y2 - y1) * share);
                            x > text[0] && x < text[2] && y > text[1] && y < text[3]
                        });
                        assert!(!crosses, "an arrow crosses {content}");
                    }
                    for (other, other_content) in &texts[index + 1..] {
                        let boxed = rects.iter().any(|rect| overlap(other, rect));
                        assert!(
                            boxed || !overlap(text, other),
                            "{content} overlaps {other_content}"
                        );
                    }
                }
            }
        }
    }
}
