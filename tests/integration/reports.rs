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

/// The cells of each row of the first table in `html`, header row first, each cell's text
/// with the page's escapes undone (`escape::html`: `&amp;`, `&lt;`, `&gt;`, `&quot;`).
fn table_cells(html: &str) -> Vec<Vec<String>> {
    let table = &html[..html.find("</table>").expect("a table")];
    table
        .split("<tr>")
        .skip(1)
        .map(|row| {
            let mut cells = Vec::new();
            let mut rest = row;
            while let Some(start) = rest.find("<t") {
                let open = start + rest[start..].find('>').unwrap() + 1;
                let close = open + rest[open..].find("</t").unwrap();
                cells.push(
                    rest[open..close]
                        .replace("&quot;", "\"")
                        .replace("&lt;", "<")
                        .replace("&gt;", ">")
                        .replace("&amp;", "&"),
                );
                rest = &rest[close + 3..];
            }
            cells
        })
        .collect()
}

/// The committed `summary.json` of the bundled scenario `name`.
fn summary_json(name: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("output/{name}/summary.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The Operations table of a scenario of two operations (mixed-traffic: pay and balance;
/// checkout: GetCart and PlaceOrder) has one row per policy and operation, in the order of
/// `summary.json`'s `per_operation` blocks, and each cell is that block's value as the summary
/// table writes the run's: a count exactly; a share as a percentage to 2 decimals, goodput and
/// latencies to 1, amplification to 3, so within half a unit of the last decimal shown of the
/// JSON value (itself rounded to 6 decimals); a latency undefined in JSON (`null`, no
/// success) as `–`.
#[test]
fn the_operations_table_shows_each_operations_summary_json_values() {
    // (header, summary.json key, decimals shown, a share shown as a percentage)
    let columns = [
        ("operations", "operations", 0_i32, false),
        ("success", "success_rate", 2, true),
        ("goodput/s", "goodput_rps", 1, false),
        ("amplification", "amplification", 3, false),
        ("status checks", "status_checks", 0, false),
        ("duplicate writes", "duplicate_writes", 0, false),
        ("unknown results", "unknown_results", 0, false),
        ("mean ms", "mean_ms", 1, false),
        ("p50 ms", "p50_ms", 1, false),
        ("p99 ms", "p99_ms", 1, false),
    ];
    for name in ["mixed-traffic", "checkout"] {
        let page = report(name);
        let operations = section(&page, "Operations");
        let rows =
            table_cells(&operations[operations.find("<table id=\"operations\">").unwrap()..]);
        let header: Vec<&str> = ["policy", "operation"]
            .into_iter()
            .chain(columns.iter().map(|(header, ..)| *header))
            .collect();
        assert_eq!(rows[0], header, "{name}");
        let json = summary_json(name);
        let expected: Vec<(&str, &serde_json::Value)> = json
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|policy| {
                let blocks = policy["per_operation"].as_array().unwrap();
                assert_eq!(blocks.len(), 2, "{name}");
                blocks
                    .iter()
                    .map(move |block| (policy["policy"].as_str().unwrap(), block))
            })
            .collect();
        assert_eq!(rows.len() - 1, expected.len(), "{name}: {rows:?}");
        for (row, (policy, block)) in rows[1..].iter().zip(&expected) {
            assert_eq!(row[0], *policy, "{name}");
            assert_eq!(row[1], block["operation"].as_str().unwrap(), "{name}");
            for ((header, key, decimals, share), cell) in columns.iter().zip(&row[2..]) {
                let value = &block[*key];
                let at = format!("{name}: {policy}, {}, {header}", row[1]);
                if value.is_null() {
                    assert_eq!(cell, "–", "{at}");
                } else if let Some(count) = value.as_u64().filter(|_| *decimals == 0) {
                    assert_eq!(cell, &count.to_string(), "{at}");
                } else {
                    let (shown, scale) = match cell.strip_suffix('%') {
                        Some(percent) if *share => (percent, 100.0),
                        _ => (cell.as_str(), 1.0),
                    };
                    assert_eq!(
                        shown.split('.').nth(1).map_or(0, str::len),
                        *decimals as usize,
                        "{at}: {cell}"
                    );
                    let shown: f64 = shown.parse().unwrap();
                    let exact = value.as_f64().unwrap() * scale;
                    let half = 0.5 * 10f64.powi(-*decimals) + 1e-9;
                    assert!((shown - exact).abs() <= half, "{at}: {cell} for {exact}");
                }
            }
        }
    }
    // The lesson of mixed-traffic, in the table: payments succeed 61.48% under Envoy as
    // deployed and 83.91% under the article's rule, balance checks 100% under both.
    let page = report("mixed-traffic");
    let operations = section(&page, "Operations");
    let success: Vec<String> = table_cells(&operations[operations.find("<table").unwrap()..])[1..]
        .iter()
        .map(|row| format!("{} {}", row[1], row[3]))
        .collect();
    assert_eq!(
        success,
        [
            "pay 61.48%",
            "balance 100.00%",
            "pay 83.91%",
            "balance 100.00%"
        ]
    );
}

/// Every bundled scenario's report has an Operations table exactly when its `summary.json`
/// has `per_operation` blocks (two operations or more): with one operation, whose numbers are
/// the run's own, the page has no such section (thundering-herd, payments, ...), and at least
/// one bundled scenario of each kind exists.
#[test]
fn only_a_scenario_of_two_operations_or_more_has_an_operations_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("output");
    let (mut with, mut without) = (0, 0);
    for entry in std::fs::read_dir(&root).unwrap() {
        let folder = entry.unwrap().path();
        if !folder.join("report.html").exists() || !folder.join("summary.json").exists() {
            continue;
        }
        let name = folder.file_name().unwrap().to_string_lossy().to_string();
        let json = summary_json(&name);
        let per_operation = json[0].get("per_operation").is_some();
        let page = report(&name);
        assert_eq!(
            page.contains("<h2>Operations</h2>"),
            per_operation,
            "{name}"
        );
        assert_eq!(page.contains("id=\"operations\""), per_operation, "{name}");
        if per_operation {
            with += 1;
        } else {
            without += 1;
        }
    }
    assert!(with >= 2 && without >= 10, "{with} with, {without} without");
    assert!(!report("thundering-herd").contains("<h2>Operations</h2>"));
}
