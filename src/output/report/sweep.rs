//! A sweep's `report.html`: the recommendation and why, the Pareto front, the heatmaps and a
//! table of the points, on one self-contained page as a run's report is (the charts inline as
//! SVG with their glyphs outlined, no script, no font or image from elsewhere).
//!
//! The page is written from what the sweep computed and nothing else (no path, no clock, no
//! host), so `merge` writes the same bytes as one process does; the sweep hands it its
//! sections of text and its charts ready ([`SweepPage`]), so the page knows nothing of how
//! a sweep decides.

use std::fmt::Write as _;

use super::{escape, page_head, with_code};

/// What a sweep's page shows.
#[derive(Debug, Clone)]
pub struct SweepPage {
    /// The scenario's name.
    pub scenario: String,
    /// The scenario's description.
    pub description: String,
    /// The tuned policy.
    pub policy: String,
    /// One line on what was swept: the grid, the seeds.
    pub swept: String,
    /// The recommendation, part by part; the first is the decision itself.
    pub sections: Vec<SweepSection>,
    /// Every point's grid values and means (the first rows of a large sweep).
    pub points: PointTable,
    /// Why no chart is shown, if none is (`--no-charts`).
    pub no_charts: Option<String>,
}

/// A part of the recommendation: its heading, its text, and the charts that show it (SVG).
#[derive(Debug, Clone)]
pub struct SweepSection {
    /// The heading.
    pub title: &'static str,
    /// The text, as `recommendation.txt` has it.
    pub text: String,
    /// The charts of this part, as SVG.
    pub charts: Vec<String>,
}

/// A table of points: headers, rows of cells, and how each row stands.
#[derive(Debug, Clone, Default)]
pub struct PointTable {
    /// The columns' names.
    pub header: Vec<String>,
    /// Each row's cells, and whether it meets the requirements and is the chosen point.
    pub rows: Vec<(Vec<String>, bool, bool)>,
    /// How many points the sweep has (more than the rows when it is cut).
    pub total: usize,
}

/// The page's bytes.
pub fn sweep_report_html(sweep: &SweepPage) -> Vec<u8> {
    let mut page = String::new();
    let scenario = escape(&sweep.scenario);
    page_head(&mut page, &format!("{scenario}: retrystorm sweep"));
    let _ = writeln!(
        page,
        "<h1>{scenario}: sweep of policy &quot;{}&quot;</h1>\n<p class=\"description\">{}</p>\n<p class=\"meta\">{}</p>",
        escape(&sweep.policy),
        escape(&sweep.description),
        escape(&sweep.swept)
    );
    if let Some(why) = &sweep.no_charts {
        let _ = writeln!(page, "<p class=\"meta\">{}</p>", escape(why));
    }
    for (index, section) in sweep.sections.iter().enumerate() {
        let _ = writeln!(page, "<h2>{}</h2>", escape(section.title));
        if index == 0 {
            decision(&mut page, &section.text);
        } else {
            let _ = writeln!(page, "<pre>{}</pre>", escape(section.text.trim_end()));
        }
        for chart in &section.charts {
            let _ = writeln!(page, "<figure>\n{chart}\n</figure>");
        }
    }
    points_table(&mut page, &sweep.points);
    page.push_str("<p class=\"meta\">Written by retrystorm from the sweep's results; merged shards give the same page.</p>\n</body>\n</html>\n");
    page.into_bytes()
}

/// The decision: a line each, the chosen point's in bold, warnings marked, indented lines
/// (the counts of points without a value, what a closest point misses) indented, `code` as
/// code.
fn decision(page: &mut String, text: &str) {
    page.push_str("<div class=\"decision\">\n");
    for line in text.lines() {
        let class = if line.starts_with("  ") {
            " class=\"indent\""
        } else if line.starts_with("warning:") {
            " class=\"warning\""
        } else {
            ""
        };
        let chosen = ["recommended:", "no point meets every requirement"]
            .iter()
            .any(|start| line.starts_with(start));
        let line = with_code(line.trim_start());
        if chosen {
            let _ = writeln!(page, "<p{class}><strong>{line}</strong></p>");
        } else {
            let _ = writeln!(page, "<p{class}>{line}</p>");
        }
    }
    page.push_str("</div>\n");
}

fn points_table(page: &mut String, table: &PointTable) {
    page.push_str("<h2>Every point</h2>\n");
    let cut = if table.rows.len() < table.total {
        format!(
            " The first {} of {} points; aggregate.csv holds every one.",
            table.rows.len(),
            table.total
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        page,
        "<p class=\"meta\">Means over the seeds. Shaded: the points that meet the requirements; in bold: the recommended point (or the closest).{cut}</p>"
    );
    page.push_str("<div class=\"table\"><table id=\"points\">\n<tr>");
    for header in &table.header {
        let _ = write!(page, "<th>{}</th>", escape(header));
    }
    page.push_str("</tr>\n");
    for (cells, meets, chosen) in &table.rows {
        let class = match (chosen, meets) {
            (true, _) => " class=\"chosen\"",
            (false, true) => " class=\"meets\"",
            (false, false) => "",
        };
        let _ = write!(page, "<tr{class}>");
        for cell in cells {
            let _ = write!(page, "<td>{}</td>", escape(cell));
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table></div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The decision is lines, the chosen point's bold and warnings marked; other sections are
    /// preformatted, escaped, with their charts after them; a cut table says so.
    #[test]
    fn a_sweep_page_shows_its_parts() {
        let page = SweepPage {
            scenario: "tuning".into(),
            description: "a <test>".into(),
            policy: "tuned".into(),
            swept: "4 points".into(),
            sections: vec![
                SweepSection {
                    title: "Recommendation",
                    text: "requirements: none\nrecommended: point 1: a=1\nwarning: a = 1 is the largest value tried\nsays `or never`:\n  p99_ms: 0 of 4 undefined\n".into(),
                    charts: Vec::new(),
                },
                SweepSection {
                    title: "Pareto front",
                    text: "point  a\n1*     1\n".into(),
                    charts: vec!["<svg></svg>".into()],
                },
            ],
            points: PointTable {
                header: vec!["point".into(), "a".into()],
                rows: vec![
                    (vec!["0".into(), "0".into()], false, false),
                    (vec!["1".into(), "1".into()], true, true),
                ],
                total: 4,
            },
            no_charts: None,
        };
        let html = String::from_utf8(sweep_report_html(&page)).unwrap();
        assert!(html.contains("<p class=\"description\">a &lt;test&gt;</p>"));
        assert!(html.contains("<p><strong>recommended: point 1: a=1</strong></p>"));
        assert!(
            html.contains("<p class=\"warning\">warning: a = 1 is the largest value tried</p>")
        );
        assert!(html.contains("<p>says <code>or never</code>:</p>"));
        assert!(html.contains("<p class=\"indent\">p99_ms: 0 of 4 undefined</p>"));
        assert!(html.contains(
            "<h2>Pareto front</h2>\n<pre>point  a\n1*     1</pre>\n<figure>\n<svg></svg>\n</figure>"
        ));
        assert!(html.contains("<tr class=\"chosen\"><td>1</td><td>1</td></tr>"));
        assert!(html.contains("The first 2 of 4 points; aggregate.csv holds every one."));
    }
}
