//! The data files a scenario's distributions name: `histogram = "latency-buckets.csv"` (a
//! Prometheus histogram's `le,count` rows) and `samples = "latencies.txt"` (one latency a
//! line), read relative to the scenario file as an `import`'s config is.
//!
//! They are read before the scenario is: each file-naming value is replaced, in the text, by
//! the file's contents written inline (`histogram = [{ le = "5ms", count = 120 }, ...]`,
//! `samples = ["12.5ms", ...]`), on the same line, so that every later error still points at
//! the line it concerns. The distribution's own reader then sees only inline data, and the
//! resolved scenario, which writes it so, reloads without the files. Every table with a
//! `histogram` or `samples` string is such a distribution: no other setting has those names.
//!
//! Files come through [`ConfigSource::data_file`], as configs do, so that a sweep reads each
//! once and every point, shard and `merge` sees the same bytes. An error names the scenario's
//! field (by its place in the scenario) and the file's line.

use std::ops::Range;
use std::path::Path;

use toml_edit::{Item, TableLike, Value};

use super::ConfigSource;
use crate::base::distribution::buckets::{Bucket, Histogram, bound, parse_csv};
use crate::base::distribution::samples::{MAX_DATA_BYTES, Unit, parse_samples};
use crate::base::text_file::{TextFileError, read_text};

/// The text of the data file at `path`: a regular file of at most [`MAX_DATA_BYTES`], UTF-8.
pub fn read_data_file(path: &Path) -> Result<String, String> {
    read_text(path, MAX_DATA_BYTES).map_err(|error| match error {
        TextFileError::TooLarge(_) => format!(
            "{}: {error}, the most a data file may be (100,000 samples or 1,000 buckets fit well inside)",
            path.display()
        ),
        TextFileError::NotUtf8 { line, column } => format!(
            "{}:{line}:{column}: not UTF-8 text",
            path.display()
        ),
        error => format!("{}: cannot read the data file: {error}", path.display()),
    })
}

/// A value naming a file, found in the scenario's text.
struct Named {
    /// `histogram` or `samples`.
    key: &'static str,
    /// The file, as written.
    file: String,
    /// The span of the string naming it.
    span: Range<usize>,
    /// The table's `unit`, for bare numbers of samples.
    unit: Option<Unit>,
}

/// `text` with every data file a distribution names written inline, or `None` if it names
/// none; the error is the span to point at and the message.
pub(super) fn inline_data_files(
    text: &str,
    folder: &Path,
    files: &dyn ConfigSource,
) -> Result<Option<String>, (Range<usize>, String)> {
    if !text.contains("histogram") && !text.contains("samples") {
        return Ok(None);
    }
    // A text that does not parse is reported by the scenario's own reading.
    let Ok(document) = toml_edit::Document::parse(text) else {
        return Ok(None);
    };
    let mut named = Vec::new();
    find_in_table(document.as_table(), &mut named)?;
    if named.is_empty() {
        return Ok(None);
    }
    named.sort_by_key(|named| std::cmp::Reverse(named.span.start));
    let mut inlined = text.to_string();
    for item in named {
        let path = folder.join(&item.file);
        let context = |message: String| {
            (
                item.span.clone(),
                format!("{} {:?}: {message}", item.key, item.file),
            )
        };
        let contents = files.data_file(&path).map_err(context)?;
        let at_line = |line: usize, message: String| match line {
            0 => format!("{}: {message}", path.display()),
            line => format!("{}:{line}: {message}", path.display()),
        };
        let written = match item.key {
            "histogram" => histogram_inline(&contents, &at_line),
            _ => samples_inline(&contents, item.unit)
                .map_err(|(line, message)| at_line(line, message)),
        }
        .map_err(context)?;
        inlined.replace_range(item.span.clone(), &written);
    }
    Ok(Some(inlined))
}

/// A histogram file's buckets, checked by Prometheus's rules, as an inline TOML array; an
/// error about one bucket names its line.
fn histogram_inline(
    contents: &str,
    at_line: &dyn Fn(usize, String) -> String,
) -> Result<String, String> {
    let rows = parse_csv(contents).map_err(|(line, message)| at_line(line, message))?;
    let buckets: Vec<Bucket> = rows.iter().map(|(_, bucket)| *bucket).collect();
    if let Err(error) = Histogram::new(buckets.clone(), None) {
        let line = error.bucket.map_or(0, |index| rows[index].0);
        return Err(at_line(line, error.message));
    }
    let written: Vec<String> = buckets
        .iter()
        .map(|bucket| {
            let count = if bucket.count.fract() == 0.0 && bucket.count < 9e15 {
                format!("{}", bucket.count as u64)
            } else {
                format!("{:?}", bucket.count)
            };
            format!("{{ le = \"{}\", count = {count} }}", bound(bucket.le))
        })
        .collect();
    Ok(format!("[{}]", written.join(", ")))
}

/// A samples file's values as an inline TOML array of durations.
fn samples_inline(contents: &str, unit: Option<Unit>) -> Result<String, (usize, String)> {
    let values = parse_samples(contents, unit)?;
    let written: Vec<String> = values.iter().map(|value| format!("\"{value}\"")).collect();
    Ok(format!("[{}]", written.join(", ")))
}

/// Finds the file-naming distributions in `table` and below.
fn find_in_table(
    table: &dyn TableLike,
    named: &mut Vec<Named>,
) -> Result<(), (Range<usize>, String)> {
    for key in ["histogram", "samples"] {
        let Some(Value::String(file)) = table.get(key).and_then(Item::as_value) else {
            continue;
        };
        let unit = match table.get("unit").and_then(Item::as_value) {
            Some(Value::String(unit)) => Some(match unit.value().as_str() {
                "us" => Unit::Us,
                "ms" => Unit::Ms,
                "s" => Unit::S,
                other => {
                    return Err((
                        unit.span().unwrap_or(0..0),
                        format!("unit {other:?}: valid units are \"us\", \"ms\" and \"s\""),
                    ));
                }
            }),
            _ => None,
        };
        named.push(Named {
            key,
            file: file.value().clone(),
            span: file.span().unwrap_or(0..0),
            unit,
        });
    }
    for (_, item) in table.iter() {
        find_in_item(item, named)?;
    }
    Ok(())
}

fn find_in_item(item: &Item, named: &mut Vec<Named>) -> Result<(), (Range<usize>, String)> {
    match item {
        Item::Table(table) => find_in_table(table, named),
        Item::ArrayOfTables(tables) => tables
            .iter()
            .try_for_each(|table| find_in_table(table, named)),
        Item::Value(value) => find_in_value(value, named),
        Item::None => Ok(()),
    }
}

fn find_in_value(value: &Value, named: &mut Vec<Named>) -> Result<(), (Range<usize>, String)> {
    match value {
        Value::InlineTable(table) => find_in_table(table, named),
        Value::Array(array) => array
            .iter()
            .try_for_each(|value| find_in_value(value, named)),
        _ => Ok(()),
    }
}
