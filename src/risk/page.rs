//! What the pages of a study share: `risk.html` ([`super::replications`]) and `map.html`
//! ([`super::map`]) are each one self-contained file (the charts inline as SVG, the style in the
//! page), as `report.html` is.

use std::fmt::Write;

use crate::base::escape::html;
use crate::output::report::page_head;

use super::PreparedStudy;

/// A table of `header` and `rows`, every cell escaped.
pub(super) fn table(page: &mut String, header: &[&str], rows: &[Vec<String>]) {
    page.push_str("<div class=\"table\"><table>\n<tr>");
    for name in header {
        let _ = write!(page, "<th>{}</th>", html(name));
    }
    page.push_str("</tr>\n");
    for row in rows {
        page.push_str("<tr>");
        for cell in row {
            let _ = write!(page, "<td>{}</td>", html(cell));
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table></div>\n");
}

/// The page's heading: the scenario's name and description, and what the study varied.
pub(super) fn heading(page: &mut String, prepared: &PreparedStudy, what: &str) {
    page_head(page, &html(&format!("{}: {what}", prepared.name)));
    let _ = write!(
        page,
        "<h1>{}: {}</h1>\n<p class=\"description\">{}</p>\n",
        html(&prepared.name),
        html(what),
        html(&prepared.description)
    );
    if !prepared.uncertain.inputs.is_empty() {
        page.push_str("<h2>Uncertain inputs</h2>\n<p>Each replication draws one value of each, by Latin hypercube sampling: every input's range is cut into as many slices of equal probability as there are replications, and each slice is drawn once.</p>\n");
        let rows: Vec<Vec<String>> = prepared
            .uncertain
            .inputs
            .iter()
            .map(|input| vec![input.key.clone(), input.input.to_string()])
            .collect();
        table(page, &["key", "distribution"], &rows);
    }
}
