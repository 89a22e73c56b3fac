//! What `report.html` says, read from the committed reports of the bundled scenarios (which
//! `examples.rs` checks are what the code writes today).

use std::path::Path;

fn report(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("output/{name}/report.html")),
    )
    .unwrap()
}

/// The part of `page` from the heading `title` to the next heading.
fn section<'a>(page: &'a str, title: &str) -> &'a str {
    let start = page
        .find(&format!("<h2>{title}</h2>"))
        .unwrap_or_else(|| panic!("no section {title}"));
    let rest = &page[start + 4..];
    &rest[..rest.find("<h2>").unwrap_or(rest.len())]
}

/// In payments the five policies differ only in what protects a write: the Policies table has
/// a column for each of those settings and for nothing they share, which a line below gives.
#[test]
fn the_policies_table_shows_what_differs_and_a_line_what_is_shared() {
    let page = report("payments");
    let policies = section(&page, "Policies");
    let table = &policies[..policies.find("</table>").unwrap()];
    let header = &table[table.find("<tr>").unwrap()..table.find("</tr>").unwrap()];
    for setting in [
        "unsafe_retries",
        "idempotency_key",
        "idempotency_ttl",
        "status_endpoint",
    ] {
        assert!(
            header.contains(&format!("<th><code>{setting}</code></th>")),
            "{header}"
        );
    }
    for shared in ["backoff", "retries", "controls", "deadline"] {
        assert!(!header.contains(&format!("<th>{shared}</th>")), "{header}");
    }
    assert!(
        table.contains(
            "<tr><td>key, 1 s TTL</td><td>no</td><td>yes</td><td>1s</td><td>no</td></tr>"
        ),
        "{table}"
    );
    assert!(
        policies.contains(
            "Every policy: retries 5 (up to 6 sends); backoff 1000 ms to 4000 ms, x2, full jitter;"
        ),
        "{policies}"
    );
}

/// The scenario's header writes code between backticks (retry-layers: `retry`, `overrides`,
/// `db amplif.`): the report shows it as code, escaped, and no backtick is left; its `- `
/// items (payments) are a list.
#[test]
fn what_to_look_at_shows_code_as_code_and_lists_as_lists() {
    let page = report("retry-layers");
    let header = section(&page, "What to look at");
    for code in [
        "<code>retry</code>",
        "<code>overrides</code>",
        "<code>db amplif.</code>",
    ] {
        assert!(header.contains(code), "{header}");
    }
    assert!(!header.contains('`'), "{header}");
    let page = report("payments");
    let header = section(&page, "What to look at");
    assert_eq!(header.matches("<li>").count(), 5, "{header}");
    assert!(
        header.contains("<li>&quot;naive&quot;: retries the POST anyway (unsafe_retries): every lost response it retries is a second charge.</li>"),
        "{header}"
    );
}
