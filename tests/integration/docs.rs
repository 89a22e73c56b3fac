//! The README and `docs/*.md` are tested, so that they cannot drift from the code.
//!
//! Each document is read block by block, in order, in a workspace of its own (a fresh folder
//! under the test target with copies of `scenarios/` and `docs/examples/`, where `retrystorm`
//! on `PATH` is the binary under test):
//!
//! - A ```` ```console ```` block is commands and their output. A line `$ COMMAND` is run with
//!   `sh -c` in the workspace (a line ending in `\` continues on the next); the lines up to the
//!   next `$ ` are what it prints, stdout then stderr, compared line by line (blank lines at
//!   the end aside). In the output shown, `[..]` matches any text within a line and a line
//!   `...` any number of lines, as trycmd reads them: the places where a run differs from the
//!   next (wall times, memory, the machine's cores). A command must exit 0, unless the next
//!   command is `echo $?`, whose output shown is the exit code.
//! - A ```` ```sh ```` block is commands without output: each is run and must exit 0, or is one
//!   of [`NOT_RUN`], the commands a test cannot run (installing, the test suite itself, a
//!   browser, a Slurm job), each with its reason.
//! - `cargo run --release --` and `target/release/retrystorm` in a command are `retrystorm`.
//! - A block whose info string names a file after its language (```` ```toml bad.toml ````) is
//!   that file: if the repository has it, the block must be the file, byte for byte (and a
//!   scenario must load); if not, it is written into the workspace for the commands after it,
//!   which must use it.
//! - Any other ```` ```toml ```` block must load as a scenario: a whole one (it has `name`) as
//!   it is, a snippet merged into [`BASE`], a small scenario with an incident (its tables
//!   added to the base's; with `[[service]]` it replaces the base's `[upstream]`). Imports are
//!   read from `scenarios/`.
//! - A ```` ```json ```` or ```` ```yaml ```` block must parse, and import if it is a retry
//!   config.
//! - No other block: an output shown must be a console block with its command.
//!
//! Progress lines (timing-dependent, on stderr) are turned off with
//! `RETRYSTORM_PROGRESS_SECONDS`. Besides: every relative link of the documents points at a
//! file that exists, and at a heading of it; the reference's metric tables are the code's
//! tables, rendered here; every column of every file its commands write, every key of a
//! resolved scenario and every failure reason is named in the reference; and its block of
//! every default resolves to what the smallest scenario resolves to.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use retrystorm::vocabulary::metric::{
    Better, Domain, FLEET_METRICS, INSTANCE_METRICS, INTENT_METRICS, METRICS, Metric,
    SERVICE_METRICS, Unit,
};
use retrystorm::vocabulary::outcome::FailureReason;

use crate::support::fresh_folder;

/// The documents tested.
const DOCUMENTS: [&str; 5] = [
    "README.md",
    "docs/guide.md",
    "docs/reference.md",
    "docs/model.md",
    "docs/internals.md",
];

/// Where the imports of the documents' TOML snippets are read from.
const IMPORTS_FROM: &str = "scenarios";

/// The commands the documents show that a test does not run, and why. Each must be shown
/// somewhere (checked), so the list cannot keep a command the documents dropped. An entry
/// ending in `*` is a prefix (a script).
const NOT_RUN: [(&str, &str); 10] = [
    (
        "cargo test --profile bench",
        "the test suite, which this test is part of",
    ),
    ("cargo install --path .", "installs into ~/.cargo/bin"),
    (
        "cargo build --release",
        "builds what the tests already built",
    ),
    (
        "cargo bench --profile release --bench engine",
        "minutes of criterion runs",
    ),
    (
        "cargo bench --profile release --bench sweep",
        "criterion runs",
    ),
    (
        "xdg-open output/thundering-herd/report.html",
        "opens a browser",
    ),
    (
        "open output/thundering-herd/report.html",
        "opens a browser (macOS)",
    ),
    (
        "apt-get update && apt-get install -y chromium",
        "installs Debian packages, as root",
    ),
    (
        "RETRYSTORM_BROWSER_TESTS=1 cargo test --profile bench --test integration browser",
        "the browser test, part of the test suite",
    ),
    (
        "#!/bin/bash\n#SBATCH*",
        "a Slurm job script: ci/slurm-sweep.sh submits it to a real Slurm",
    ),
];

/// The scenario a TOML snippet is merged into.
const BASE: &str = r#"
name = "example"
duration = "60s"
[clients]
count = 10
rate = 1.0
[upstream]
workers = 1
service_time = "1ms"
capacity = [
  { at = "20s", factor = 1.0 }, { at = "20s", factor = 0.5 },
  { at = "25s", factor = 0.5 }, { at = "25s", factor = 1.0 },
]
"#;

#[test]
fn readme() {
    check_document("README.md");
}

#[test]
fn guide() {
    check_document("docs/guide.md");
}

#[test]
fn reference() {
    let workspace = check_document("docs/reference.md");
    every_column_written_is_documented(&workspace);
}

#[test]
fn model() {
    check_document("docs/model.md");
}

#[test]
fn internals() {
    check_document("docs/internals.md");
}

/// A fenced block of a document.
#[derive(Debug)]
struct Block {
    /// The document's path from the repository's root.
    doc: &'static str,
    /// The line of its opening fence, from 1.
    line: usize,
    /// The first word of its info string.
    lang: String,
    /// The file it is, named after the language.
    path: Option<String>,
    /// Its lines, joined with newlines, with a final newline.
    text: String,
}

impl Block {
    fn at(&self) -> String {
        format!("{}:{}", self.doc, self.line)
    }
}

/// One command of a block, and the output shown for it (console blocks).
#[derive(Debug)]
struct Step {
    line: usize,
    command: String,
    shown: Option<Vec<String>>,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(doc: &str) -> String {
    std::fs::read_to_string(root().join(doc)).unwrap_or_else(|error| panic!("{doc}: {error}"))
}

/// Every fenced block of `doc`, in order. A fence may be indented (in a list); its lines lose
/// that indentation.
fn blocks(doc: &'static str) -> Vec<Block> {
    let text = read(doc);
    let mut blocks = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let indent = line.len() - line.trim_start().len();
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        let mut words = info.split_whitespace();
        let lang = words.next().unwrap_or("").to_string();
        let path = words.next().map(str::to_string);
        let mut body = String::new();
        let mut closed = false;
        for (_, inner) in lines.by_ref() {
            if inner.trim_start() == "```" {
                closed = true;
                break;
            }
            let strip = inner.len() - inner.trim_start().len();
            body.push_str(&inner[strip.min(indent)..]);
            body.push('\n');
        }
        assert!(closed, "{doc}:{}: a block that never ends", index + 1);
        blocks.push(Block {
            doc,
            line: index + 1,
            lang,
            path,
            text: body,
        });
    }
    blocks
}

/// The commands of a console or sh block.
fn steps(block: &Block) -> Vec<Step> {
    if block.text.starts_with("#!") {
        return vec![Step {
            line: block.line + 1,
            command: block.text.trim_end().to_string(),
            shown: None,
        }];
    }
    let console = block.lang == "console";
    let mut steps: Vec<Step> = Vec::new();
    let mut continued = false;
    for (offset, line) in block.text.lines().enumerate() {
        let number = block.line + 1 + offset;
        if continued {
            let step = steps.last_mut().unwrap();
            step.command.push('\n');
            step.command.push_str(line);
            continued = line.ends_with('\\');
            continue;
        }
        let command = if console {
            line.strip_prefix("$ ")
        } else if line.trim().is_empty() || line.trim_start().starts_with('#') {
            None
        } else {
            Some(line)
        };
        match command {
            Some(command) => {
                steps.push(Step {
                    line: number,
                    command: command.to_string(),
                    shown: console.then(Vec::new),
                });
                continued = command.ends_with('\\');
            }
            None if console => match steps.last_mut() {
                Some(step) => step.shown.as_mut().unwrap().push(line.to_string()),
                None => panic!("{}:{number}: output before any command", block.doc),
            },
            None => {}
        }
    }
    steps
}

/// A command with `cargo run --release --` and `target/release/retrystorm` as `retrystorm`.
fn normalized(command: &str) -> String {
    command
        .replace("cargo run --release -- ", "retrystorm ")
        .replace("target/release/retrystorm", "retrystorm")
}

/// The reason `command` is not run, if it is one of [`NOT_RUN`].
fn not_run(command: &str) -> Option<&'static str> {
    NOT_RUN.iter().find_map(|(pattern, reason)| {
        let matches = match pattern.strip_suffix('*') {
            Some(prefix) => command.starts_with(prefix),
            None => command == *pattern,
        };
        matches.then_some(*reason)
    })
}

/// Copies the folder `from` into `to`, recursively.
fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_folder(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A fresh workspace for `doc`: copies of `scenarios/` and `docs/examples/`, and `bin/` with
/// `retrystorm`, the binary under test.
fn workspace(doc: &str) -> PathBuf {
    let stem = Path::new(doc).file_stem().unwrap().to_string_lossy();
    let folder = fresh_folder(&format!("docs-{stem}"));
    copy_folder(&root().join("scenarios"), &folder.join("scenarios"));
    copy_folder(
        &root().join("docs/examples"),
        &folder.join("docs").join("examples"),
    );
    std::fs::create_dir_all(folder.join("bin")).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_retrystorm"),
        folder.join("bin").join("retrystorm"),
    )
    .unwrap();
    folder
}

/// Runs `command` with `sh` in `workspace`: its exit code, and stdout then stderr.
fn run(command: &str, workspace: &Path) -> (i32, String) {
    let path = format!(
        "{}:{}",
        workspace.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(workspace)
        .env("PATH", path)
        .env("RETRYSTORM_PROGRESS_SECONDS", "100000000")
        .output()
        .expect("sh runs");
    let mut printed = String::from_utf8_lossy(&output.stdout).into_owned();
    printed.push_str(&String::from_utf8_lossy(&output.stderr));
    (output.status.code().unwrap_or(-1), printed)
}

/// Whether `line` matches `pattern`, where `[..]` in the pattern matches any text.
fn line_matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == line;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !line.starts_with(first) || line.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &line[first.len()..];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// Whether `lines` match `patterns`, where a pattern `...` matches any number of lines.
fn lines_match(patterns: &[String], lines: &[String]) -> bool {
    match patterns.split_first() {
        None => lines.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=lines.len()).any(|skip| lines_match(rest, &lines[skip..]))
        }
        Some((first, rest)) => {
            !lines.is_empty() && line_matches(first, &lines[0]) && lines_match(rest, &lines[1..])
        }
    }
}

/// `lines` without the blank lines at their end, which a document's block cannot show.
fn without_trailing_blanks<S: AsRef<str>>(lines: &[S]) -> Vec<String> {
    let end = lines
        .iter()
        .rposition(|line| !line.as_ref().trim().is_empty())
        .map_or(0, |last| last + 1);
    lines[..end]
        .iter()
        .map(|line| line.as_ref().to_string())
        .collect()
}

/// What a document's check counted.
#[derive(Debug, Default)]
struct Counts {
    run: usize,
    compared: usize,
    not_run: usize,
    toml: usize,
    files: usize,
    configs: usize,
}

/// Checks every block of `doc` (see the module documentation) and its links; the workspace.
fn check_document(doc: &'static str) -> PathBuf {
    assert!(DOCUMENTS.contains(&doc), "a document of DOCUMENTS");
    let workspace = workspace(doc);
    let mut failures: Vec<String> = Vec::new();
    let mut counts = Counts::default();
    let mut written: Vec<(String, String)> = Vec::new();
    let mut commands: Vec<String> = Vec::new();
    for block in blocks(doc) {
        if let Some(path) = &block.path {
            counts.files += 1;
            check_file_block(&block, path, &workspace, &mut written, &mut failures);
            continue;
        }
        match block.lang.as_str() {
            "console" | "sh" => {
                let mut last_code = 0;
                for step in steps(&block) {
                    let command = normalized(&step.command);
                    commands.push(command.clone());
                    let at = format!("{}:{}", doc, step.line);
                    if command == "echo $?" {
                        counts.compared += 1;
                        let shown = step.shown.clone().unwrap_or_default();
                        if shown != [last_code.to_string()] {
                            failures.push(format!(
                                "{at}: the exit code shown is {shown:?}, the command exited {last_code}"
                            ));
                        }
                        last_code = 0;
                        continue;
                    }
                    if let Some(previous) = failures_on_unchecked_code(last_code, &at) {
                        failures.push(previous);
                    }
                    last_code = 0;
                    if not_run(&command).is_some() {
                        counts.not_run += 1;
                        continue;
                    }
                    counts.run += 1;
                    let (code, printed) = run(&command, &workspace);
                    last_code = code;
                    if let Some(shown) = &step.shown {
                        counts.compared += 1;
                        if !lines_match(&without_trailing_blanks(shown), &without_trailing_blanks(&printed.lines().collect::<Vec<_>>())) {
                            failures.push(format!(
                                "{at}: `{command}` printed\n{printed}\n-- where the document shows --\n{}\n",
                                shown.join("\n")
                            ));
                        }
                    } else if code != 0 {
                        failures.push(format!(
                            "{at}: `{command}` exited {code}:\n{printed}"
                        ));
                        last_code = 0;
                    }
                }
                if let Some(unchecked) = failures_on_unchecked_code(
                    last_code,
                    &format!("{}:{}", doc, block.line),
                ) {
                    failures.push(unchecked);
                }
            }
            "toml" => {
                counts.toml += 1;
                if let Err(error) = check_toml(&block, IMPORTS_FROM) {
                    failures.push(format!("{}: {error}", block.at()));
                }
            }
            "json" | "yaml" => {
                counts.configs += 1;
                if let Err(error) = check_config(&block) {
                    failures.push(format!("{}: {error}", block.at()));
                }
            }
            other => failures.push(format!(
                "{}: a ```{other} block: show output in a console block with its command, examples as toml, json, yaml or sh",
                block.at()
            )),
        }
    }
    for (file, at) in &written {
        if !commands
            .iter()
            .any(|command| command.contains(file.as_str()))
        {
            failures.push(format!("{at}: {file} is shown but no command uses it"));
        }
    }
    failures.extend(broken_links(doc));
    eprintln!("{doc}: {counts:?}");
    assert!(
        failures.is_empty(),
        "{doc}: {} problems:\n\n{}",
        failures.len(),
        failures.join("\n")
    );
    workspace
}

/// A failure if a command exited `code`, other than 0, and no `echo $?` showed it.
fn failures_on_unchecked_code(code: i32, at: &str) -> Option<String> {
    (code != 0)
        .then(|| format!("before {at}: a command exited {code}; show it with `$ echo $?` after it"))
}

/// A block that is a file: the repository's, byte for byte, or written into the workspace.
fn check_file_block(
    block: &Block,
    path: &str,
    workspace: &Path,
    written: &mut Vec<(String, String)>,
    failures: &mut Vec<String>,
) {
    let in_repository = root().join(path);
    if in_repository.exists() {
        let text = std::fs::read_to_string(&in_repository).unwrap();
        if text != block.text {
            failures.push(format!(
                "{}: the block is not {path} as committed:\n{}",
                block.at(),
                first_difference(&block.text, &text)
            ));
        }
        if block.lang == "toml"
            && let Err(error) = retrystorm::import::load(&in_repository, &[])
        {
            failures.push(format!("{}: {path} does not load: {error}", block.at()));
        }
    } else {
        let target = workspace.join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(&target, &block.text).unwrap();
        written.push((path.to_string(), block.at()));
    }
}

/// The first line where `shown` and `file` differ.
fn first_difference(shown: &str, file: &str) -> String {
    let (shown, file): (Vec<&str>, Vec<&str>) = (shown.lines().collect(), file.lines().collect());
    let at = shown
        .iter()
        .zip(&file)
        .position(|(a, b)| a != b)
        .unwrap_or(shown.len().min(file.len()));
    format!(
        "line {}: shown {:?}, file {:?}",
        at + 1,
        shown.get(at),
        file.get(at)
    )
}

/// A TOML example loads: a whole scenario as it is, a snippet merged into [`BASE`].
fn check_toml(block: &Block, imports_from: &str) -> Result<(), String> {
    let table: toml::Table = toml::from_str(&block.text).map_err(|error| error.to_string())?;
    let text = if table.contains_key("name") {
        block.text.clone()
    } else {
        let mut base: toml::Table = toml::from_str(BASE).unwrap();
        if table.contains_key("service") {
            base.remove("upstream");
        }
        merge(&mut base, table);
        toml::to_string(&base).unwrap()
    };
    let label = root().join(imports_from).join("example.toml");
    retrystorm::import::load_str(&text, &label.display().to_string(), &[])
        .map(|_| ())
        .map_err(|error| format!("does not load: {error}\n{text}"))
}

/// Adds `snippet`'s keys to `base`, tables merged key by key.
fn merge(base: &mut toml::Table, snippet: toml::Table) {
    for (key, value) in snippet {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(more)) => merge(inner, more),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// A JSON or YAML example parses, and imports if it is a retry config.
fn check_config(block: &Block) -> Result<(), String> {
    let value: serde_json::Value = if block.lang == "json" {
        serde_json::from_str(&block.text).map_err(|error| error.to_string())?
    } else {
        serde_norway::from_str(&block.text).map_err(|error| error.to_string())?
    };
    let is_config = ["methodConfig", "retryThrottling", "retry_policy"]
        .iter()
        .any(|key| value.get(key).is_some());
    if is_config {
        retrystorm::import::import_str(&block.text, block.lang == "yaml", None)
            .map_err(|error| error.to_string())?;
    }
    Ok(())
}

/// Relative links of `doc` whose file does not exist, or whose `#anchor` is no heading of the
/// markdown file it names (anchors as GitHub makes them).
fn broken_links(doc: &str) -> Vec<String> {
    let text = read(doc);
    let folder = root().join(doc).parent().unwrap().to_path_buf();
    let mut broken = Vec::new();
    for (index, line) in text.lines().enumerate() {
        for (at, _) in line.match_indices("](") {
            let rest = &line[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let link = &rest[..end];
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (target, anchor) = link.split_once('#').unwrap_or((link, ""));
            let path = if target.is_empty() {
                root().join(doc)
            } else {
                folder.join(target)
            };
            let at = format!("{doc}:{}", index + 1);
            if !path.exists() {
                broken.push(format!("{at}: a link to {target}, which does not exist"));
            } else if !anchor.is_empty()
                && path.extension().is_some_and(|ext| ext == "md")
                && !anchors(&std::fs::read_to_string(&path).unwrap()).contains(anchor)
            {
                broken.push(format!("{at}: a link to {link}, which has no such heading"));
            }
        }
    }
    broken
}

/// The anchors of a markdown file's headings, as GitHub makes them: lower case, punctuation
/// but `-` and `_` dropped, spaces as `-`, a repeated one numbered.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    let mut in_block = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        if in_block {
            continue;
        }
        let title = heading.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut count = 0;
        while anchors.contains(&unique) {
            count += 1;
            unique = format!("{slug}-{count}");
        }
        anchors.insert(unique);
    }
    anchors
}

/// Every command the documents show that is not run is one of [`NOT_RUN`], and every entry of
/// it is shown.
#[test]
fn every_command_not_run_is_shown() {
    let mut used = BTreeSet::new();
    for doc in DOCUMENTS {
        for block in blocks(doc) {
            if block.lang != "sh" && block.lang != "console" {
                continue;
            }
            for step in steps(&block) {
                if let Some(reason) = not_run(&normalized(&step.command)) {
                    used.insert(reason);
                }
            }
        }
    }
    for (pattern, reason) in NOT_RUN {
        assert!(
            used.contains(reason),
            "NOT_RUN has {pattern:?}, which no document shows"
        );
    }
}

/// A metric's row in the reference: name, direction, values, meaning.
fn metric_row<S>(metric: &Metric<S>) -> String {
    let better = match metric.better {
        Better::Higher => "higher",
        Better::Lower => "lower",
        Better::Neither => "none",
    };
    let values = match (metric.domain, metric.unit) {
        (Domain::NonNegative, Unit::Count) => "a count",
        (Domain::NonNegative, Unit::Number) => "0 or more",
        (Domain::Share, _) => "0 to 1",
        (Domain::NonNegativeOrUndefined, _) => "0 or more, or undefined",
        (Domain::Recovery, _) => "seconds, `never`, or undefined",
    };
    format!(
        "| `{}` | {better} | {values} | {} |",
        metric.name,
        metric.meaning.replace('|', "\\|")
    )
}

/// The lines between `<!-- begin NAME -->` and `<!-- end NAME -->` of `text`.
fn marked<'a>(text: &'a str, name: &str) -> &'a str {
    let begin = format!("<!-- begin {name} -->\n");
    let end = format!("<!-- end {name} -->");
    text.split_once(&begin)
        .and_then(|(_, rest)| rest.split_once(&end))
        .map(|(inside, _)| inside)
        .unwrap_or_else(|| panic!("docs/reference.md has no {begin:?} ... {end:?}"))
}

/// The reference's metric tables are [`METRICS`], [`INTENT_METRICS`], [`SERVICE_METRICS`],
/// [`FLEET_METRICS`] and [`INSTANCE_METRICS`], rendered: each metric's name, its better direction, its values and its
/// meaning, in the code's order. On a difference the message holds the table to paste.
#[test]
fn the_metric_tables_are_the_codes() {
    let reference = read("docs/reference.md");
    let header = "| metric | better | values | meaning |\n|---|---|---|---|\n";
    for (name, rows) in [
        (
            "metrics",
            METRICS.iter().map(metric_row).collect::<Vec<_>>(),
        ),
        (
            "intent metrics",
            INTENT_METRICS.iter().map(metric_row).collect(),
        ),
        (
            "service metrics",
            SERVICE_METRICS.iter().map(metric_row).collect(),
        ),
        (
            "fleet metrics",
            FLEET_METRICS.iter().map(metric_row).collect(),
        ),
        (
            "instance metrics",
            INSTANCE_METRICS.iter().map(metric_row).collect(),
        ),
    ] {
        let expected = format!("{header}{}\n", rows.join("\n"));
        assert!(
            marked(&reference, name) == expected,
            "docs/reference.md's {name} table is not the code's; paste this between its markers:\n\n{expected}"
        );
    }
}

/// Every failure reason (the decision's, `status-unknown`, the controls') is named in the
/// reference, as `trace.csv`, `summary.json` and the `failed_<reason>` columns spell it.
#[test]
fn every_failure_reason_is_documented() {
    let reference = read("docs/reference.md");
    for reason in FailureReason::ALL {
        let name = format!("`{}`", reason.name());
        assert!(
            reference.contains(&name),
            "docs/reference.md does not name the failure reason {name}"
        );
    }
}

/// Every key of the committed examples' resolved `scenario.toml` files is named in the
/// reference, as `key`, `key =` or `[key]`.
#[test]
fn every_scenario_key_is_documented() {
    let reference = read("docs/reference.md");
    let mut keys = BTreeSet::new();
    for entry in std::fs::read_dir(root().join("output")).unwrap() {
        let resolved = entry.unwrap().path().join("scenario.toml");
        if let Ok(text) = std::fs::read_to_string(&resolved) {
            let value: toml::Value = toml::from_str(&text).unwrap();
            collect_keys(&value, &mut keys);
        }
    }
    assert!(keys.len() > 50, "{keys:?}");
    let undocumented: Vec<&String> = keys
        .iter()
        .filter(|key| {
            !reference.contains(&format!("`{key}`"))
                && !reference.contains(&format!("\n{key} ="))
                && !reference.contains(&format!("[{key}]"))
        })
        .collect();
    assert!(
        undocumented.is_empty(),
        "docs/reference.md does not document the scenario keys {undocumented:?}"
    );
}

/// The keys of every table in `value`, recursively.
fn collect_keys(value: &toml::Value, keys: &mut BTreeSet<String>) {
    match value {
        toml::Value::Table(table) => {
            for (key, inner) in table {
                // A policy's overrides are keys of --set, not of the format.
                if key == "overrides" {
                    continue;
                }
                keys.insert(key.clone());
                match (key.as_str(), inner) {
                    // An operation's `path` and a service's `call_retry` are keyed by the
                    // services' names: their values' keys are the format's.
                    ("path" | "call_retry", toml::Value::Table(by_service)) => by_service
                        .values()
                        .for_each(|value| collect_keys(value, keys)),
                    _ => collect_keys(inner, keys),
                }
            }
        }
        toml::Value::Array(items) => items.iter().for_each(|item| collect_keys(item, keys)),
        _ => {}
    }
}

/// The reference's block of every default is the smallest scenario with its defaults written
/// out: both resolve to the same scenario. So is its tier whose `retry` has every field at its
/// default, against `retry = {}`.
#[test]
fn the_reference_defaults_are_the_codes() {
    let blocks = blocks("docs/reference.md");
    let starting = |first: &str| {
        blocks
            .iter()
            .find(|block| block.text.starts_with(first))
            .unwrap_or_else(|| panic!("docs/reference.md has no toml block starting {first:?}"))
    };
    for (written, smallest) in [
        ("# Every field at its default", "# The smallest scenario"),
        (
            "# A tier's retry, every field at its default",
            "# A tier that retries, at the defaults",
        ),
    ] {
        let resolve = |block: &Block| {
            retrystorm::import::load_str(&block.text, &block.at(), &[])
                .unwrap_or_else(|error| panic!("{error}"))
                .to_resolved_toml()
        };
        assert_eq!(
            resolve(starting(written)),
            resolve(starting(smallest)),
            "{written:?} is not {smallest:?} with its defaults"
        );
    }
}

/// Every column of every CSV file the reference's commands wrote is named in it, as `column`,
/// or by a pattern it documents: `failed_<reason>`, `amplification_<service>`,
/// `<metric>_mean`/`_ci_low`/`_ci_high`, `METRIC@SERVICE`, and grid keys (`policy.base`).
fn every_column_written_is_documented(workspace: &Path) {
    let reference = read("docs/reference.md");
    let documented = |name: &str| reference.contains(&format!("`{name}`"));
    let mut files = Vec::new();
    let mut folders = vec![workspace.join("output")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "csv") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut kinds = BTreeSet::new();
    let mut undocumented = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        kinds.insert(name.clone());
        let text = std::fs::read_to_string(file).unwrap();
        for column in text.lines().next().unwrap_or("").split(',') {
            let column = column.trim_matches('"');
            let base = column
                .strip_suffix("_mean")
                .or_else(|| column.strip_suffix("_ci_low"))
                .or_else(|| column.strip_suffix("_ci_high"))
                .unwrap_or(column);
            let metric = base.split_once('@').map_or(base, |(metric, _)| metric);
            let known = documented(column)
                || documented(metric)
                || column.contains('.')
                || column
                    .strip_prefix("failed_")
                    .is_some_and(|reason| documented(&reason.replace('_', "-")))
                || column.strip_prefix("amplification_").is_some()
                    && documented("amplification_<service>");
            if !known {
                undocumented.push(format!("{name}: {column}"));
            }
        }
    }
    for kind in [
        "timeseries.csv",
        "summary.csv",
        "services.csv",
        "trace.csv",
        "results.csv",
        "aggregate.csv",
        "replications.csv",
        "risk.csv",
        "paired.csv",
        "sensitivity.csv",
        "map.csv",
        "map-runs.csv",
    ] {
        assert!(
            kinds.contains(kind),
            "the reference's commands write no {kind}: {kinds:?}"
        );
    }
    assert!(
        undocumented.is_empty(),
        "columns docs/reference.md does not name: {undocumented:?}"
    );
}
