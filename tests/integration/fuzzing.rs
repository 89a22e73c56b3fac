//! Fuzzing: the scenario loader with `--set`, `decide --batch`, `merge` and the config
//! importers, fed mutated and adversarial inputs; controls with random settings, run; and
//! random scenarios, run against the cost estimate's bounds. Every input comes from a ChaCha
//! stream with a fixed seed and every loop runs a fixed number of times, so a run does the same
//! on every machine, and a failure prints the input that caused it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::BufReader;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::Command;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use retrystorm::import::load_str;
use retrystorm::retry::decide::{FIELDS, MAX_LINE_BYTES, parse_case, run_batch};
use retrystorm::run::cost::Estimate;
use retrystorm::scenario::{Override, Scenario, ScenarioError};
use retrystorm::sweep::report::{finalize, merge};
use serde_json::{Map, Value, json};

use crate::support::{bundled_scenario_paths, run};

/// Mutated scenarios loaded by `scenario_loader_survives_mutated_scenarios_and_overrides`.
const SCENARIO_ITERATIONS: usize = 5_000;
/// Batches of lines answered by `decide_batch_answers_every_line_once`.
const BATCH_ITERATIONS: usize = 6_000;
/// Damaged sets of shard folders merged by `merge_survives_damaged_shards`.
const MERGE_ITERATIONS: usize = 1_000;
/// Scenarios with random controls loaded, and run where accepted, by
/// `controls_with_random_settings_run_to_the_end`.
const CONTROL_ITERATIONS: usize = 150;
/// The most events a run of that test may be estimated at (every send allowed), so that each
/// run is small by construction.
const CONTROL_MOST_EVENTS: f64 = 1_000_000.0;

/// Numbers at the edges of every numeric type, and text that only looks like a number.
const EXTREMES: [&str; 16] = [
    "0",
    "-1",
    "-0",
    "1e308",
    "-1e308",
    "1e-320",
    "18446744073709551616",
    "18446744073709551615",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967296",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "0x10",
];

/// A deterministic source of choices.
struct Fuzz(ChaCha8Rng);

impl Fuzz {
    fn new(seed: u64) -> Fuzz {
        Fuzz(ChaCha8Rng::seed_from_u64(seed))
    }

    /// A number in `0..n`; `n` is at least 1.
    fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n as u64) as usize
    }

    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut bytes = vec![0; len];
        self.0.fill_bytes(&mut bytes);
        bytes
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// Runs `f`; a panic fails the test with the panic's message and `input`, which reproduces it.
fn no_panic<T>(input: impl FnOnce() -> String, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("a panic without a message");
            panic!("panicked ({message}) on {}", input())
        }
    }
}

/// A folder under the system's temporary folder, unique to this process and test, removed
/// when dropped (also when the test fails).
struct TempFolder(PathBuf);

impl TempFolder {
    fn new(test: &str) -> TempFolder {
        let path =
            std::env::temp_dir().join(format!("retrystorm-fuzzing-{}-{test}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        TempFolder(path)
    }
}

impl Drop for TempFolder {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------------------------
// The scenario loader
// ---------------------------------------------------------------------------------------------

/// A bundled scenario: its path (the label errors must start with, and the folder its
/// imports are read from) and its text.
struct Bundled {
    label: String,
    text: String,
}

/// Every `scenarios/*.toml`, in name order.
fn bundled_scenarios() -> Vec<Bundled> {
    bundled_scenario_paths()
        .into_iter()
        .map(|path| Bundled {
            text: fs::read_to_string(&path).unwrap(),
            label: path.display().to_string(),
        })
        .collect()
}

/// How to reproduce a load: the label, the text and the overrides.
fn load_input(label: &str, text: &str, overrides: &[Override]) -> String {
    let sets: Vec<String> = overrides
        .iter()
        .map(|item| format!("Override::set({:?}, {:?})", item.key, item.value))
        .collect();
    format!("load_str({text:?}, {label:?}, &[{}])", sets.join(", "))
}

/// Loads `text` and checks what every load must satisfy: no panic; an error that starts with
/// the label and a location (`label:line:column: ` inside the text, or `label: --set ...: `
/// for an override) followed by a non-empty message; a scenario that loads the same twice,
/// and loads as the same scenario from its own resolved form (which `retrystorm run` writes
/// next to the results, so that a run can be repeated from it).
fn check_load(label: &str, text: &str, overrides: &[Override]) -> Result<Scenario, ScenarioError> {
    let input = || load_input(label, text, overrides);
    let loaded = no_panic(input, || load_str(text, label, overrides));
    match &loaded {
        Err(error) => check_error(error, label, text, overrides),
        Ok(scenario) => {
            let (again, resolved, reloaded) = no_panic(input, || {
                let resolved = scenario.to_resolved_toml();
                let reloaded = load_str(&resolved, label, &[]);
                (load_str(text, label, overrides), resolved, reloaded)
            });
            let again =
                again.unwrap_or_else(|error| panic!("loaded, then refused ({error}): {}", input()));
            assert_eq!(
                format!("{scenario:?}"),
                format!("{again:?}"),
                "two loads differ: {}",
                input()
            );
            let mut reloaded = reloaded.unwrap_or_else(|error| {
                panic!(
                    "the resolved form is refused ({error}):\n{resolved}\nfrom {}",
                    input()
                )
            });
            // The header comment and the `--set` list describe how the scenario was given, not
            // a setting: the resolved form has its own.
            reloaded.header.clone_from(&scenario.header);
            reloaded
                .command_line_changes
                .clone_from(&scenario.command_line_changes);
            assert_eq!(
                without_spans(&format!("{reloaded:?}")),
                without_spans(&format!("{scenario:?}")),
                "the resolved form loads as another scenario:\n{resolved}\nfrom {}",
                input()
            );
            // What `check` prints and `run` decides on: finite, ordered, never a panic.
            let estimate = no_panic(input, || Estimate::of(scenario, 2));
            let (fewest, most, memory) = (
                estimate.fewest_events(),
                estimate.most_events(),
                estimate.memory_bytes(),
            );
            assert!(
                fewest.is_finite() && fewest >= 0.0 && most >= fewest && memory.is_finite(),
                "estimate {estimate}: {}",
                input()
            );
        }
    }
    loaded
}

/// `Debug` text without the byte ranges (`span: 12..34`) where values were written, which
/// differ between a file and its resolved form.
fn without_spans(debug: &str) -> String {
    let mut kept = String::with_capacity(debug.len());
    let mut rest = debug;
    while let Some(at) = rest.find("span: ") {
        let (before, after) = rest.split_at(at + "span: ".len());
        kept.push_str(before);
        rest = after.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    }
    kept.push_str(rest);
    kept
}

fn check_error(error: &ScenarioError, label: &str, text: &str, overrides: &[Override]) {
    let input = || load_input(label, text, overrides);
    let shown = error.to_string();
    assert!(
        !error.message.trim().is_empty() && shown.ends_with(&error.message),
        "an empty message, {shown:?}: {}",
        input()
    );
    let location = shown
        .strip_prefix(label)
        .and_then(|rest| rest.strip_suffix(&error.message))
        .unwrap_or_else(|| panic!("{shown:?} does not start with the label: {}", input()));
    if let Some(set) = location.strip_prefix(": --set ") {
        assert!(
            !overrides.is_empty() && set.ends_with(": "),
            "{shown:?} blames an override: {}",
            input()
        );
        return;
    }
    let numbers: Vec<usize> = location
        .strip_prefix(':')
        .and_then(|rest| rest.strip_suffix(": "))
        .map(|place| {
            place
                .split(':')
                .map(|part| part.parse().unwrap_or(0))
                .collect()
        })
        .unwrap_or_default();
    let &[line, column] = numbers.as_slice() else {
        panic!("{shown:?} has no line:column: {}", input());
    };
    assert!(line >= 1 && column >= 1, "{shown:?}: {}", input());
    if overrides.is_empty() {
        // Without overrides the text read is the file: the place is in it, or just past its end.
        let lines: Vec<&str> = text.split('\n').collect();
        assert!(
            line <= lines.len() && column <= lines[line - 1].chars().count() + 1,
            "{shown:?} points outside the text: {}",
            input()
        );
    }
}

/// `text` with the first `from` replaced by `to`; `from` must be in it.
fn replaced(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} is not in the scenario");
    text.replacen(from, to, 1)
}

/// The inputs the loader must refuse or accept quickly, without a panic, with a good error:
/// huge names and keys, policy keys on a scenario without `[[policy]]`, values past every
/// bound, control characters in names, binary garbage, nesting deeper than any scenario, and
/// durations that would need millions of buckets (refused before anything runs). Each also
/// passes [`check_load`], and where the outcome is plain it is asserted: a 9,000-part key, a
/// whole array entry, a negative budget, garbage, a NUL in the scenario's name and a 1000 h run
/// in 1 ms buckets are refused; `policy.base` on a scenario without policies sets the default
/// policy's base; 100,000,000 clients load. Each load, checks included, takes under 2 s
/// (milliseconds in fact), which it could not if loading simulated anything.
#[test]
fn scenario_loader_survives_adversarial_inputs() {
    let bundled = bundled_scenarios();
    for scenario in &bundled {
        let loaded = check_load(&scenario.label, &scenario.text, &[]);
        assert!(loaded.is_ok(), "{}: {:?}", scenario.label, loaded.err());
    }
    let tuning = &bundled
        .iter()
        .find(|scenario| scenario.label.ends_with("tuning.toml"))
        .unwrap()
        .text;
    let label = "adversarial.toml";
    let long_name = "x".repeat(65_536);
    let deep_key = vec!["a"; 9_000].join(".");
    let no_policy = tuning.split("[[policy]]").next().unwrap().to_string();
    let garbage = String::from_utf8_lossy(&Fuzz::new(11).bytes(4096)).into_owned();
    let set = Override::set;
    // (text, overrides, expected: Some(true) loads, Some(false) is refused, None either).
    let cases: Vec<(String, Vec<Override>, Option<bool>)> = vec![
        (
            replaced(
                tuning,
                "name = \"tuned\"",
                &format!("name = \"{long_name}\""),
            ),
            vec![],
            None,
        ),
        (
            replaced(
                tuning,
                "name = \"tuning\"",
                &format!("name = \"{long_name}\""),
            ),
            vec![],
            None,
        ),
        (tuning.clone(), vec![set(&deep_key, "1")], Some(false)),
        (format!("{tuning}\n{deep_key} = 1\n"), vec![], Some(false)),
        (
            tuning.clone(),
            vec![set(&"k".repeat(1025), "1")],
            Some(false),
        ),
        (tuning.clone(), vec![set("policy.0", "5")], Some(false)),
        (
            tuning.clone(),
            vec![set("policy..base", "5ms")],
            Some(false),
        ),
        (tuning.clone(), vec![set("", "1")], Some(false)),
        (
            tuning.clone(),
            vec![set("policy.0.controls.0.percent", "10")],
            Some(false),
        ),
        (
            no_policy.clone(),
            vec![set("policy.base", "250ms")],
            Some(true),
        ),
        (
            no_policy.clone(),
            vec![set("policy.1.base", "250ms")],
            Some(false),
        ),
        (
            tuning.clone(),
            vec![set("policy.max_attempts", "-9000000000000000000")],
            Some(false),
        ),
        (
            replaced(tuning, "name = \"tuning\"", "name = \"tun\\u0000ing\""),
            vec![],
            Some(false),
        ),
        (
            replaced(
                tuning,
                "name = \"tuned\"",
                "name = \"a\\u0000b\\u001fc\\u007f\"",
            ),
            vec![],
            None,
        ),
        (
            replaced(tuning, "name = \"tuned\"", "name = \"a\u{1}b\""),
            vec![],
            Some(false),
        ),
        (tuning.clone(), vec![set("policy.name", "a\0b\n[x]")], None),
        (
            tuning.clone(),
            vec![set("name", "\u{7f}\u{202e}")],
            Some(false),
        ),
        (garbage, vec![], Some(false)),
        (
            replaced(tuning, "count = 2000", "count = 100000000"),
            vec![],
            Some(true),
        ),
        (
            tuning.clone(),
            vec![set("clients.count", "100000001")],
            None,
        ),
        (
            tuning.clone(),
            vec![set("clients.count", "18446744073709551616")],
            Some(false),
        ),
        (
            replaced(
                &replaced(tuning, "duration = \"30s\"", "duration = \"1000h\""),
                "bucket = \"1s\"",
                "bucket = \"1ms\"",
            ),
            vec![],
            Some(false),
        ),
        (
            tuning.clone(),
            vec![set("duration", "1000h"), set("bucket", "1ms")],
            Some(false),
        ),
        (
            format!("{}{}", "[".repeat(20_000), "]".repeat(20_000)),
            vec![],
            Some(false),
        ),
        (
            format!("x = {}1{}", "[".repeat(20_000), "]".repeat(20_000)),
            vec![],
            Some(false),
        ),
        (
            format!("x = {}1{}", "{a = ".repeat(20_000), "}".repeat(20_000)),
            vec![],
            Some(false),
        ),
        (String::new(), vec![], Some(false)),
        (String::new(), vec![set("name", "x")], Some(false)),
    ];
    for (text, overrides, expected) in &cases {
        let loaded = check_load(label, text, overrides);
        if let Some(expected) = expected {
            assert_eq!(
                loaded.is_ok(),
                *expected,
                "{:?}: {}",
                loaded.as_ref().err(),
                load_input(label, text, overrides)
            );
        }
    }
    let default_policy = check_load(label, &no_policy, &[set("policy.base", "250ms")]).unwrap();
    assert_eq!(default_policy.policy.len(), 1);
    assert_eq!(default_policy.policy[0].base.to_string(), "250ms");
}

/// Every key of a TOML value as `--set` writes it, with its value: `clients.count`, array
/// entries by index (`policy.1.base`), by name (`service.api.workers`) and all at once
/// (`policy.base`).
fn keys_of(prefix: &str, value: &toml::Value, keys: &mut Vec<(String, String)>) {
    let join = |key: &str| {
        if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}.{key}")
        }
    };
    match value {
        toml::Value::Table(table) => {
            for (key, value) in table {
                keys_of(&join(key), value, keys);
            }
        }
        toml::Value::Array(items)
            if !items.is_empty() && items.iter().all(toml::Value::is_table) =>
        {
            for (index, item) in items.iter().enumerate() {
                keys_of(&join(&index.to_string()), item, keys);
                if let Some(name) = item.get("name").and_then(toml::Value::as_str) {
                    keys_of(&join(name), item, keys);
                }
            }
            keys_of(prefix, &items[0], keys);
        }
        other => keys.push((prefix.to_string(), other.to_string())),
    }
}

/// A random edit of scenario text: a character replaced or a bit flipped, a line deleted,
/// duplicated or taken from another scenario, the values of two lines swapped, a number
/// replaced by an extreme, or the text cut short.
fn mutate_scenario(fuzz: &mut Fuzz, text: &str, donors: &[Bundled]) -> String {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    let line = fuzz.below(lines.len());
    match fuzz.below(8) {
        0 => {
            let chars: Vec<char> = text.chars().collect();
            let at = fuzz.below(chars.len().max(1));
            let replacement = *fuzz.pick(&[
                '\0', '\u{1}', '\u{7f}', '"', '\'', '[', ']', '{', '}', '=', '.', ',', '#', '\\',
                '\n', '\r', ' ', 'é', '\u{feff}', '\u{202e}', 'x', '0', '9', '-',
            ]);
            chars
                .iter()
                .enumerate()
                .map(|(i, c)| if i == at { replacement } else { *c })
                .collect()
        }
        1 => {
            let mut bytes = text.as_bytes().to_vec();
            if !bytes.is_empty() {
                let at = fuzz.below(bytes.len());
                bytes[at] ^= 1 << fuzz.below(8);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
        2 => {
            lines.remove(line);
            lines.concat()
        }
        3 => {
            let copy = lines[line].clone();
            lines.insert(fuzz.below(lines.len() + 1), copy);
            lines.concat()
        }
        4 => {
            let donor: Vec<&str> = fuzz.pick(donors).text.split_inclusive('\n').collect();
            lines.insert(line, fuzz.pick(&donor).to_string());
            lines.concat()
        }
        5 => {
            let assignments: Vec<usize> = (0..lines.len())
                .filter(|&i| lines[i].contains('='))
                .collect();
            if assignments.len() >= 2 {
                let (a, b) = (*fuzz.pick(&assignments), *fuzz.pick(&assignments));
                let (key_a, value_a) = lines[a].split_once('=').unwrap();
                let (key_b, value_b) = lines[b].split_once('=').unwrap();
                let (new_a, new_b) = (format!("{key_a}={value_b}"), format!("{key_b}={value_a}"));
                lines[a] = new_a;
                lines[b] = new_b;
            }
            lines.concat()
        }
        6 => {
            let digits: Vec<usize> = text
                .bytes()
                .enumerate()
                .filter(|(i, byte)| {
                    byte.is_ascii_digit() && (*i == 0 || !text.as_bytes()[i - 1].is_ascii_digit())
                })
                .map(|(i, _)| i)
                .collect();
            if digits.is_empty() {
                return text.to_string();
            }
            let start = *fuzz.pick(&digits);
            let end = start + text[start..].bytes().take_while(u8::is_ascii_digit).count();
            format!("{}{}{}", &text[..start], fuzz.pick(&EXTREMES), &text[end..])
        }
        _ => text.chars().take(fuzz.below(text.len() + 1)).collect(),
    }
}

/// Every value of the bundled scenarios, by the last part of its key (`base`, `count`, ...).
type ValuesByField = BTreeMap<String, Vec<String>>;

/// One `--set`: a key of the file (sometimes bent: another index, an extra, empty or missing
/// part) and, most often, a value that some bundled scenario gives a key of that name, else
/// any of their values, an extreme, or text that is barely TOML.
fn random_override(fuzz: &mut Fuzz, keys: &[(String, String)], values: &ValuesByField) -> Override {
    let (key, _) = fuzz.pick(keys);
    let field = key.rsplit('.').next().unwrap_or(key);
    let bent = match fuzz.below(40) {
        0 => format!("{key}.x"),
        1 => key.replacen(".0.", ".99.", 1).replacen(".1.", ".", 1),
        2 => key.replacen('.', "..", 1),
        3 => key
            .rsplit_once('.')
            .map_or(key.clone(), |(head, _)| head.to_string()),
        _ => key.clone(),
    };
    let value = match fuzz.below(10) {
        0 => fuzz.pick(&EXTREMES).to_string(),
        1 => fuzz
            .pick(&[
                "",
                "[",
                "{a = 1}",
                "[1, 2]",
                "\"open",
                "true",
                "250ms",
                "0s",
                "-1s",
                "1000h",
                "1e308s",
                "crash",
                "\u{0}",
                "[[x]]\ny = 1",
            ])
            .to_string(),
        2 => {
            let all: Vec<&String> = values.values().flatten().collect();
            fuzz.pick(&all).to_string()
        }
        _ => fuzz.pick(&values[field]).clone(),
    };
    Override::set(&bent, &value)
}

/// Mutated bundled scenarios, some with random `--set` overrides drawn from the keys the file
/// has, never make the loader panic; every refusal names the file and the line and column
/// inside it (or the override) and says what is wrong; everything accepted loads the same a
/// second time, and loads as the same scenario from its resolved form, as `retrystorm run`
/// writes it next to the results. A loader that panics on a typo, points outside the file, or
/// writes a resolved scenario it cannot read back as it was fails here, with the input that
/// does it.
#[test]
fn scenario_loader_survives_mutated_scenarios_and_overrides() {
    let bundled = bundled_scenarios();
    let keys: Vec<Vec<(String, String)>> = bundled
        .iter()
        .map(|scenario| {
            let mut keys = Vec::new();
            keys_of("", &toml::from_str(&scenario.text).unwrap(), &mut keys);
            keys
        })
        .collect();
    let mut values = ValuesByField::new();
    for (key, value) in keys.iter().flatten() {
        let field = key.rsplit('.').next().unwrap_or(key);
        values
            .entry(field.to_string())
            .or_default()
            .push(value.clone());
    }
    let mut fuzz = Fuzz::new(0x5ce7_a710);
    // Loads accepted and refused, without and with overrides.
    let mut outcomes = [[0; 2]; 2];
    for _ in 0..SCENARIO_ITERATIONS {
        let index = fuzz.below(bundled.len());
        let scenario = &bundled[index];
        let mut text = scenario.text.clone();
        if !fuzz.one_in(4) {
            for _ in 0..1 + fuzz.below(3) {
                text = mutate_scenario(&mut fuzz, &text, &bundled);
            }
        }
        let overrides: Vec<Override> = if fuzz.one_in(2) {
            (0..*fuzz.pick(&[1, 1, 1, 2, 2, 3]))
                .map(|_| random_override(&mut fuzz, &keys[index], &values))
                .collect()
        } else {
            Vec::new()
        };
        let loaded = check_load(&scenario.label, &text, &overrides);
        outcomes[usize::from(!overrides.is_empty())][usize::from(loaded.is_ok())] += 1;
    }
    // Every outcome was common, so the properties of each were checked.
    assert!(
        outcomes
            .iter()
            .flatten()
            .all(|&count| count > SCENARIO_ITERATIONS / 20),
        "[[refused, accepted] without overrides, [refused, accepted] with]: {outcomes:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// decide --batch
// ---------------------------------------------------------------------------------------------

/// A value for `field`: usually of its type, at its edges, sometimes of another type.
fn field_value(fuzz: &mut Fuzz, field: &str) -> Value {
    if fuzz.one_in(12) {
        return fuzz
            .pick(&[json!([]), json!({}), json!("1"), json!(true), Value::Null])
            .clone();
    }
    match field {
        "method" => json!(fuzz.pick(&["GET", "POST", "PUT", "DELETE", "get", "", "\u{0}"])),
        "transport_error" | "idempotency_key" | "status_endpoint" => {
            fuzz.pick(&[json!(true), json!(false), Value::Null]).clone()
        }
        "jitter" => json!(fuzz.pick(&["none", "full", "equal", "decorrelated", "grpc", "ful"])),
        "retry_after_mode" => {
            json!(fuzz.pick(&["honor", "ignore", "honor-jittered", "pushback", "Honor"]))
        }
        "retry_after_header" => json!(fuzz.pick(&[
            "120",
            "0",
            "-3",
            "",
            "1e3",
            "99999999999999999999",
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Fri, 31 Dec 9999 23:59:59 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
        ])),
        _ => match fuzz.below(3) {
            0 => json!(fuzz.below(5000) as f64 / fuzz.pick(&[1.0, 7.0, 1000.0])),
            1 => fuzz
                .pick(&[
                    json!(0),
                    json!(1),
                    json!(2),
                    json!(3),
                    json!(-1),
                    json!(0.5),
                    json!(0.999_999),
                    json!(1e308),
                    json!(-1e308),
                    json!(5e-324),
                    json!(1e21),
                    json!(u64::MAX),
                    json!(i64::MIN),
                ])
                .clone(),
            _ => fuzz
                .pick(&[
                    json!("NaN"),
                    json!("inf"),
                    json!("-inf"),
                    json!("Infinity"),
                    json!("-Infinity"),
                    Value::Null,
                ])
                .clone(),
        },
    }
}

/// One batch line, without its end: a case of random fields, often mutated; an empty, blank
/// or `\r`-only line; bytes that are not UTF-8; a line at, just over or far over
/// `MAX_LINE_BYTES`.
fn batch_line(fuzz: &mut Fuzz) -> Vec<u8> {
    match fuzz.below(40) {
        0 => Vec::new(),
        1 => b"  \t ".to_vec(),
        2 => b"\r".to_vec(),
        3 => {
            let length = 1 + fuzz.below(40);
            let mut bytes = fuzz.bytes(length);
            bytes.retain(|byte| *byte != b'\n');
            bytes
        }
        4 => {
            // A valid case padded to exactly the limit, one byte over it, or far over it.
            let case = r#"{"method":"GET","attempt":0,"now_ms":0,"deadline_ms":1000,"status":503,"retry_after_header":""#;
            let tail = b"\"}";
            let length = MAX_LINE_BYTES + *fuzz.pick(&[0, 1, 5_000]);
            let mut bytes = case.as_bytes().to_vec();
            bytes.resize(length - tail.len(), b' ');
            bytes.extend_from_slice(tail);
            bytes
        }
        _ => {
            let mut object = Map::new();
            for field in FIELDS {
                let required = ["method", "attempt", "now_ms", "deadline_ms"].contains(&field);
                if fuzz.one_in(if required { 20 } else { 3 }) == required {
                    continue;
                }
                object.insert(field.to_string(), field_value(fuzz, field));
            }
            if fuzz.one_in(15) {
                object.insert(fuzz.pick(&["atempt", "extra", ""]).to_string(), json!(1));
            }
            let mut bytes = Value::Object(object).to_string().into_bytes();
            if fuzz.one_in(3) {
                mutate_bytes(fuzz, &mut bytes);
            }
            bytes
        }
    }
}

/// A random edit of a JSON line: a bit flipped, a byte of JSON syntax or of broken UTF-8
/// inserted, a range deleted or repeated, a number made 400 digits long, or the line cut.
fn mutate_bytes(fuzz: &mut Fuzz, bytes: &mut Vec<u8>) {
    if bytes.is_empty() {
        return;
    }
    let at = fuzz.below(bytes.len());
    let end = (at + fuzz.below(12)).min(bytes.len());
    match fuzz.below(6) {
        0 => bytes[at] ^= 1 << fuzz.below(8),
        1 => {
            let byte = *fuzz.pick(&[b'{', b'}', b'"', b',', b':', b'\\', b'\r', b'0', 0xff, 0xc3]);
            bytes.insert(at, byte);
        }
        2 => {
            bytes.drain(at..end);
        }
        3 => {
            let copy = bytes[at..end].to_vec();
            bytes.splice(at..at, copy);
        }
        4 => {
            if let Some(digit) = bytes.iter().position(u8::is_ascii_digit) {
                bytes.splice(digit..digit, std::iter::repeat_n(b'9', 400));
            }
        }
        _ => bytes.truncate(at),
    }
}

/// What `run_batch` must answer for one input line.
enum Answer {
    /// This decision line.
    Decision(String),
    /// An error line with this message.
    Error(String),
    /// An error line whose message contains this.
    Refused(&'static str),
}

/// The answer for one input line, as the docs of `run_batch` say: the line without its `\n`
/// or `\r\n` is too long past `MAX_LINE_BYTES`, else not UTF-8, else what `parse_case` makes
/// of it.
fn expected_answer(line: &[u8]) -> Answer {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() > MAX_LINE_BYTES {
        return Answer::Refused("longer than");
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Answer::Refused("not UTF-8");
    };
    match parse_case(text) {
        Ok(case) => Answer::Decision(case.decide().to_json()),
        Err(error) => Answer::Error(error.to_string()),
    }
}

/// `decide --batch` on random batches (valid, mutated and broken JSON lines, invalid UTF-8,
/// empty lines, `\r\n` ends, lines around and far past `MAX_LINE_BYTES`, a last line with or
/// without its `\n`, read through buffers of 1 byte to 8 KiB) never panics and answers each
/// input line with exactly one JSON line, in order: the line's decision when it is a valid
/// case, else `{"line":N,"error":...}` with its 1-based number; the summary's counts add up to
/// the number of lines. A team checks its table of cases line by line against this output, so
/// a lost, extra or misnumbered line would silently misreport their results.
#[test]
fn decide_batch_answers_every_line_once() {
    let mut fuzz = Fuzz::new(0xdec1de);
    let (mut decided_lines, mut error_lines) = (0, 0);
    for _ in 0..BATCH_ITERATIONS {
        let mut input = Vec::new();
        let count = fuzz.below(12);
        for index in 0..count {
            input.extend(batch_line(&mut fuzz));
            if index + 1 < count || fuzz.one_in(2) {
                input.extend_from_slice(if fuzz.one_in(3) { b"\r\n" } else { b"\n" });
            }
        }
        let capacity = *fuzz.pick(&[1, 2, 7, 64, 8192]);
        let shown = || {
            format!(
                "run_batch(BufReader::with_capacity({capacity}, &b\"{}\"[..]), output)",
                input.escape_ascii()
            )
        };
        let mut output = Vec::new();
        let summary = no_panic(shown, || {
            run_batch(BufReader::with_capacity(capacity, &input[..]), &mut output)
        })
        .unwrap_or_else(|error| panic!("{error}: {}", shown()));
        let mut lines: Vec<&[u8]> = input.split(|byte| *byte == b'\n').collect();
        if input.is_empty() || input.ends_with(b"\n") {
            lines.pop();
        }
        let output = String::from_utf8(output)
            .unwrap_or_else(|error| panic!("the output is not UTF-8 ({error}): {}", shown()));
        assert!(
            output.is_empty() || output.ends_with('\n'),
            "{output:?}: {}",
            shown()
        );
        let answers: Vec<&str> = output.split_terminator('\n').collect();
        assert_eq!(
            answers.len(),
            lines.len(),
            "{} input lines, {} answers {output:?}: {}",
            lines.len(),
            answers.len(),
            shown()
        );
        let mut errors = 0;
        for (index, (line, answer)) in lines.iter().zip(&answers).enumerate() {
            let value: Value = serde_json::from_str(answer)
                .unwrap_or_else(|error| panic!("{answer:?} is not JSON ({error}): {}", shown()));
            let number = index + 1;
            let expected = expected_answer(line);
            errors += usize::from(!matches!(expected, Answer::Decision(_)));
            let right = match expected {
                Answer::Decision(decision) => *answer == decision,
                Answer::Error(message) => value == json!({"line": number, "error": message}),
                Answer::Refused(part) => {
                    value["line"] == json!(number)
                        && value["error"]
                            .as_str()
                            .is_some_and(|error| error.contains(part))
                        && value.as_object().is_some_and(|object| object.len() == 2)
                }
            };
            assert!(right, "line {number} answered {answer}: {}", shown());
        }
        assert_eq!(
            (summary.decided, summary.errors),
            (lines.len() - errors, errors),
            "{}",
            shown()
        );
        decided_lines += summary.decided;
        error_lines += summary.errors;
    }
    assert!(
        decided_lines > 1_000 && error_lines > 1_000,
        "{decided_lines} decided, {error_lines} errors"
    );
}

// ---------------------------------------------------------------------------------------------
// merge
// ---------------------------------------------------------------------------------------------

/// The files of a shard folder that `merge` reads.
const SHARD_FILES: [&str; 3] = ["results.csv", "shard.json", "sweep.json"];

/// One shard folder's files, `None` for a file that is missing.
type ShardFiles = [Option<Vec<u8>>; 3];

/// A damage done to the files of a set of shard folders.
type Damage = fn(&mut [ShardFiles]);

/// Runs a small sweep of the bundled tuning scenario (4 points, 2 seeds, 3 shards, short and
/// with few clients) into `out` and returns the shards' files, found wherever the sweep put
/// its `shard.json` files.
fn real_shards(out: &Path) -> Vec<ShardFiles> {
    for shard in ["0/3", "1/3", "2/3"] {
        let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args([
                "sweep",
                "scenarios/tuning.toml",
                "--grid",
                "policy.base=50ms,200ms",
                "--grid",
                "policy.max_attempts=3..4",
                "--seeds",
                "2",
                "--set",
                "duration=16s",
                "--set",
                "clients.count=100",
                "--shard",
                shard,
                "--no-charts",
                "--out",
            ])
            .arg(out)
            .env("RAYON_NUM_THREADS", "1")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let mut folders = Vec::new();
    find_shard_folders(out, &mut folders);
    folders.sort();
    assert_eq!(folders.len(), 3, "{folders:?}");
    folders
        .iter()
        .map(|folder| SHARD_FILES.map(|name| Some(fs::read(folder.join(name)).unwrap())))
        .collect()
}

fn find_shard_folders(folder: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            find_shard_folders(&path, found);
        } else if path.file_name().is_some_and(|name| name == "shard.json") {
            found.push(folder.to_path_buf());
        }
    }
}

/// Real shard folders to damage, and where the damaged copies are merged.
struct MergeBench {
    pristine: Vec<ShardFiles>,
    work: PathBuf,
}

impl MergeBench {
    /// Writes `shards` to folders under `work` and merges them in the given order, as
    /// `retrystorm merge` does: `merge`, then `prepare` and `finalize` what it accepts. Checks
    /// that nothing panics, and that `merge` either refuses with a message that names one of
    /// the folders or returns rows that cover every (point, seed) of the sweep exactly once.
    /// True if merged.
    fn check(&self, shards: &[ShardFiles], order: &[usize]) -> bool {
        let folders: Vec<PathBuf> = (0..shards.len())
            .map(|index| self.work.join(format!("shard-{index}")))
            .collect();
        for (folder, files) in folders.iter().zip(shards) {
            fs::create_dir_all(folder).unwrap();
            for (name, bytes) in SHARD_FILES.iter().zip(files) {
                // Removed first: a file truncated and rewritten in place is flushed to disk
                // by ext4, a hundred times slower than a new one.
                let path = folder.join(name);
                let _ = fs::remove_file(&path);
                if let Some(bytes) = bytes {
                    fs::write(&path, bytes).unwrap();
                }
            }
        }
        let ordered: Vec<&Path> = order
            .iter()
            .map(|&index| folders[index].as_path())
            .collect();
        let shown = || self.show(shards, &folders, &ordered);
        match no_panic(shown, || merge(&ordered)) {
            Err(message) => {
                assert!(
                    folders
                        .iter()
                        .any(|folder| message.contains(&folder.display().to_string())),
                    "{message:?} names no shard folder: {}",
                    shown()
                );
                false
            }
            Ok((spec, rows)) => {
                let seeds = spec.seeds as usize;
                let covered: BTreeSet<(usize, usize)> = rows
                    .iter()
                    .filter(|row| row.point < spec.point_count() && row.seed_index < seeds)
                    .map(|row| (row.point, row.seed_index))
                    .collect();
                assert!(
                    rows.len() == spec.point_count().saturating_mul(seeds)
                        && covered.len() == rows.len(),
                    "{} rows, {} distinct, for {} points x {seeds} seeds: {}",
                    rows.len(),
                    covered.len(),
                    spec.point_count(),
                    shown()
                );
                // An error here is the command's to print; only a panic is wrong.
                let _ = no_panic(shown, || {
                    spec.prepare()
                        .map(|prepared| finalize(&prepared, &rows, &[]).map(|_| ()))
                });
                true
            }
        }
    }

    /// How to reproduce a merge: the order of the folders and every file that differs from
    /// the real shards'.
    fn show(&self, shards: &[ShardFiles], folders: &[PathBuf], ordered: &[&Path]) -> String {
        let mut shown = format!("merge({ordered:?}) of the real shards, except");
        for ((files, real), folder) in shards.iter().zip(&self.pristine).zip(folders) {
            for ((name, bytes), real) in SHARD_FILES.iter().zip(files).zip(real) {
                if bytes != real {
                    let text = bytes.as_deref().map(String::from_utf8_lossy);
                    shown.push_str(&format!("\n{}/{name}: {text:?}", folder.display()));
                }
            }
        }
        shown
    }
}

/// `text` with the number after the first `key` replaced by `number` (any text); `text` as it
/// is if it has no `key` (an earlier edit cut it off).
fn with_number(text: &str, key: &str, number: &str) -> String {
    let Some(start) = text.find(key).map(|at| at + key.len()) else {
        return text.to_string();
    };
    let digits = text[start..]
        .bytes()
        .take_while(|byte| byte.is_ascii_digit() || *byte == b'-')
        .count();
    format!("{}{number}{}", &text[..start], &text[start + digits..])
}

/// A file of `shard` edited as text by `edit`; a missing file stays missing.
fn edit_file(shard: &mut ShardFiles, file: usize, edit: impl FnOnce(&str) -> String) {
    if let Some(bytes) = &shard[file] {
        shard[file] = Some(edit(&String::from_utf8_lossy(bytes)).into_bytes());
    }
}

/// A random damage to the shards: rows of `results.csv` deleted, repeated, moved to another
/// shard or given a bad cell; `shard.json`'s index or count changed; `sweep.json`'s counts,
/// seeds or grid changed, in one shard or identically in all (as a consistent edit would be);
/// a bit flipped, a file cut short or removed.
fn damage(fuzz: &mut Fuzz, shards: &mut [ShardFiles]) {
    let target = fuzz.below(shards.len());
    let other = fuzz.below(shards.len());
    let file = fuzz.below(SHARD_FILES.len());
    match fuzz.below(10) {
        0 => {
            if let Some(bytes) = &mut shards[target][file]
                && !bytes.is_empty()
            {
                let at = fuzz.below(bytes.len());
                bytes[at] ^= 1 << fuzz.below(8);
            }
        }
        1 => {
            if let Some(bytes) = &mut shards[target][file] {
                let keep = fuzz.below(bytes.len() + 1);
                bytes.truncate(keep);
            }
        }
        2 => shards[target][file] = None,
        3 | 4 => {
            // A row of results.csv deleted, repeated, or moved to another shard.
            let rows = |shard: &ShardFiles| -> Vec<String> {
                shard[0].as_deref().map_or(Vec::new(), |bytes| {
                    String::from_utf8_lossy(bytes)
                        .split_inclusive('\n')
                        .map(str::to_string)
                        .collect()
                })
            };
            let mut lines = rows(&shards[target]);
            if lines.len() < 2 {
                return;
            }
            let row = 1 + fuzz.below(lines.len() - 1);
            match fuzz.below(3) {
                0 => {
                    lines.remove(row);
                }
                1 => {
                    let copy = lines[row].clone();
                    lines.insert(row, copy);
                }
                _ => {
                    let moved = lines.remove(row);
                    let mut into = rows(&shards[other]);
                    if into.is_empty() || target == other {
                        return;
                    }
                    into.push(moved);
                    shards[other][0] = Some(into.concat().into_bytes());
                }
            }
            shards[target][0] = Some(lines.concat().into_bytes());
        }
        5 => {
            // A cell of results.csv: point, seed, a grid value or a metric.
            let value = fuzz
                .pick(&[
                    "-1",
                    "0",
                    "1",
                    "3",
                    "4",
                    "1e308",
                    "-1e308",
                    "NaN",
                    "inf",
                    "never",
                    "",
                    "18446744073709551616",
                    "x",
                    "\"\"",
                    "4294967296",
                ])
                .to_string();
            let column = fuzz.below(8);
            let row = fuzz.below(3);
            edit_file(&mut shards[target], 0, |text| {
                let mut lines: Vec<String> =
                    text.split_inclusive('\n').map(str::to_string).collect();
                if let Some(line) = lines.get_mut(1 + row) {
                    let mut cells: Vec<&str> = line.trim_end_matches('\n').split(',').collect();
                    if column < cells.len() {
                        cells[column] = &value;
                    }
                    *line = format!("{}\n", cells.join(","));
                }
                lines.concat()
            });
        }
        6 => {
            let key = *fuzz.pick(&["\"index\": ", "\"count\": "]);
            let number = *fuzz.pick(&[
                "0",
                "1",
                "2",
                "3",
                "4",
                "-1",
                "10000",
                "10001",
                "18446744073709551615",
                "18446744073709551616",
                "1.5",
                "\"1\"",
                "null",
            ]);
            edit_file(&mut shards[target], 1, |text| {
                with_number(text, key, number)
            });
        }
        _ => {
            // sweep.json edited as JSON, in one shard or in all alike.
            let Some(mut manifest) = shards[target][2]
                .as_deref()
                .and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok())
            else {
                return;
            };
            edit_manifest(fuzz, &mut manifest);
            let mut bytes = serde_json::to_vec_pretty(&manifest).unwrap();
            bytes.push(b'\n');
            let all = !fuzz.one_in(3);
            for (index, shard) in shards.iter_mut().enumerate() {
                if all || index == target {
                    shard[2] = Some(bytes.clone());
                }
            }
        }
    }
}

/// A random edit of a sweep's manifest: its seed count, point count, seeds, grid values or
/// keys, or the text that describes it.
fn edit_manifest(fuzz: &mut Fuzz, manifest: &mut Value) {
    let number = fuzz
        .pick(&[
            json!(0),
            json!(1),
            json!(3),
            json!(u32::MAX),
            json!(u64::from(u32::MAX) + 1),
            json!(u64::MAX),
            json!(-1),
            json!(1.5),
            json!("2"),
        ])
        .clone();
    let axis = fuzz.below(2);
    match fuzz.below(10) {
        0 => manifest["seeds"] = number,
        1 => manifest["points"] = number,
        2 => manifest["seed_values"] = json!([]),
        3 => {
            if let Some(seeds) = manifest["seed_values"].as_array_mut() {
                match fuzz.below(4) {
                    0 => seeds.reverse(),
                    1 => seeds.truncate(1),
                    2 => seeds.push(number),
                    _ => seeds[0] = seeds[seeds.len() - 1].clone(),
                }
            }
        }
        4 => {
            if let Some(values) = manifest["axes"][axis]["values"].as_array_mut() {
                match fuzz.below(3) {
                    0 => values.reverse(),
                    1 => {
                        values.remove(0);
                    }
                    _ => values.push(json!(fuzz.pick(&["100ms", "5", ""]))),
                }
            }
        }
        5 => manifest["axes"][axis]["key"] = json!(fuzz.pick(&["policy.cap", "", "x"])),
        6 => {
            if let Some(axes) = manifest["axes"].as_array_mut() {
                match fuzz.below(2) {
                    0 => {
                        axes.remove(axis);
                    }
                    _ => axes.push(json!({"key": "policy.cap", "values": ["1s"]})),
                }
            }
        }
        7 => manifest["scenario_text"] = json!(""),
        8 => manifest["minimize"] = json!(fuzz.pick(&["p99_ms", "latency"])),
        _ => manifest["requirements"] = json!(["success_rate>=2", "x"]),
    }
}

/// The shards with `extra` more axes of the given values, in `sweep.json` and in the columns
/// of `results.csv` (every row at the first value): 64 axes of two values make a grid of more
/// points than a `usize` counts.
fn with_extra_axes(shards: &mut [ShardFiles], extra: usize, values: &[&str]) {
    for shard in shards.iter_mut() {
        let mut manifest: Value = serde_json::from_slice(shard[2].as_deref().unwrap()).unwrap();
        let axes = manifest["axes"].as_array_mut().unwrap();
        let first_metric = 2 + axes.len();
        axes.extend((0..extra).map(|axis| json!({"key": format!("k{axis}"), "values": values})));
        let mut bytes = serde_json::to_vec_pretty(&manifest).unwrap();
        bytes.push(b'\n');
        shard[2] = Some(bytes);
        edit_file(shard, 0, |text| {
            text.lines()
                .enumerate()
                .map(|(line, row)| {
                    let mut cells: Vec<String> = row.split(',').map(str::to_string).collect();
                    let added = (0..extra).map(|axis| {
                        if line == 0 {
                            format!("k{axis}")
                        } else {
                            values[0].to_string()
                        }
                    });
                    cells.splice(first_metric..first_metric, added);
                    cells.join(",") + "\n"
                })
                .collect()
        });
    }
}

/// `merge` reads shard folders that anyone may have copied, edited or cut short. On real
/// shards of a small sweep it must merge in any order with the same rows; on seeded damage
/// (a shard count of 0 or 2^64 - 1, `seeds` that disagrees with `seed_values`, an empty or
/// header-only `results.csv`, a grid whose point count overflows) and on random damage to the
/// three files it must never panic, and either refuse with a message that names a shard
/// folder, so the user knows which file to fix, or return rows that cover every (point, seed)
/// of the sweep exactly once, as the merged results claim to; what it returns must go through
/// `prepare` and `finalize` without a panic, as `retrystorm merge` takes it there.
#[test]
fn merge_survives_damaged_shards() {
    let temp = TempFolder::new("merge");
    let bench = MergeBench {
        pristine: real_shards(&temp.0.join("sweep")),
        work: temp.0.join("work"),
    };
    assert!(bench.check(&bench.pristine, &[0, 1, 2]));
    let folders: Vec<PathBuf> = (0..3)
        .map(|index| bench.work.join(format!("shard-{index}")))
        .collect();
    let forward: Vec<&Path> = folders.iter().map(PathBuf::as_path).collect();
    let backward: Vec<&Path> = folders.iter().rev().map(PathBuf::as_path).collect();
    assert_eq!(merge(&forward), merge(&backward));

    let seeded: [(&str, Damage); 7] = [
        ("count 0", |shards| {
            edit_file(&mut shards[0], 1, |text| {
                with_number(text, "\"count\": ", "0")
            })
        }),
        ("count 2^64 - 1", |shards| {
            edit_file(&mut shards[1], 1, |text| {
                with_number(text, "\"count\": ", "18446744073709551615")
            })
        }),
        ("seeds 3 for 2 seed_values", |shards| {
            for shard in shards.iter_mut() {
                edit_file(shard, 2, |text| with_number(text, "\"seeds\": ", "3"));
            }
        }),
        ("an empty results.csv", |shards| {
            shards[2][0] = Some(Vec::new())
        }),
        ("only headers", |shards| {
            for shard in shards.iter_mut() {
                edit_file(shard, 0, |text| text.lines().next().unwrap().to_string());
            }
        }),
        ("2^66 points", |shards| {
            with_extra_axes(shards, 64, &["a", "b"])
        }),
        ("an axis without values, and no rows", |shards| {
            for shard in shards.iter_mut() {
                edit_file(shard, 0, |text| text.lines().next().unwrap().to_string());
                edit_file(shard, 2, |text| {
                    let mut manifest: Value = serde_json::from_str(text).unwrap();
                    manifest["axes"][0]["values"] = json!([]);
                    serde_json::to_string_pretty(&manifest).unwrap()
                });
            }
        }),
    ];
    for (name, edit) in seeded {
        let mut shards = bench.pristine.clone();
        edit(&mut shards);
        assert!(!bench.check(&shards, &[0, 1, 2]), "{name} was merged");
    }
    // Axes of one value each leave the points as they were, and merge.
    let mut shards = bench.pristine.clone();
    with_extra_axes(&mut shards, 64, &["a"]);
    assert!(bench.check(&shards, &[0, 1, 2]));

    let mut fuzz = Fuzz::new(0x3e76e);
    let mut merged = 0;
    for _ in 0..MERGE_ITERATIONS {
        let mut shards = bench.pristine.clone();
        for _ in 0..1 + fuzz.below(3) {
            damage(&mut fuzz, &mut shards);
        }
        let mut order = vec![0, 1, 2];
        fuzz.shuffle(&mut order);
        merged += usize::from(bench.check(&shards, &order));
    }
    // Some damage leaves a valid set (a metric changed, or sweep.json's `points`, which merge
    // recomputes), so both outcomes were checked.
    assert!(
        merged > 0 && merged < MERGE_ITERATIONS,
        "{merged} of {MERGE_ITERATIONS} merged"
    );
}

// ---------------------------------------------------------------------------------------------
// Controls with random settings, run
// ---------------------------------------------------------------------------------------------

/// A duration in TOML: usually in `range` milliseconds, sometimes at an edge (zero, a fraction
/// of a second where whole seconds are asked for, microseconds).
fn duration_in(fuzz: &mut Fuzz, range: std::ops::Range<usize>) -> String {
    if fuzz.one_in(10) {
        return fuzz
            .pick(&["\"0s\"", "\"1us\"", "\"1500ms\"", "\"24us\"", "\"3601s\""])
            .to_string();
    }
    let ms = range.start + fuzz.below(range.end - range.start);
    if ms.is_multiple_of(1000) || fuzz.one_in(2) {
        format!("\"{}s\"", ms.div_ceil(1000).max(1))
    } else {
        format!("\"{ms}ms\"")
    }
}

/// A number usually in `range`, sometimes one of [`EXTREMES`].
fn number_in(fuzz: &mut Fuzz, range: std::ops::Range<usize>) -> String {
    if fuzz.one_in(15) {
        return fuzz.pick(&EXTREMES).to_string();
    }
    (range.start + fuzz.below(range.end - range.start)).to_string()
}

/// One control of a random kind (every kind of `ControlKind`, both retry budgets) with random
/// settings, some missing, some out of range, and a random scope.
fn random_control(fuzz: &mut Fuzz) -> String {
    let mut settings: Vec<String> = Vec::new();
    let maybe = |fuzz: &mut Fuzz, settings: &mut Vec<String>, name: &str, value: String| {
        if !fuzz.one_in(3) {
            settings.push(format!("{name} = {value}"));
        }
    };
    let kind = *fuzz.pick(&[
        "retry-budget",
        "envoy-budget",
        "grpc-throttling",
        "aws-retry-quota",
        "sre-throttling",
        "circuit-breaker",
        "aws-adaptive",
    ]);
    match kind {
        "retry-budget" => {
            let percent = number_in(fuzz, 0..101);
            maybe(fuzz, &mut settings, "percent", percent);
            let min = number_in(fuzz, 0..30);
            maybe(fuzz, &mut settings, "min_per_s", min);
            let ttl = duration_in(fuzz, 1000..60_000);
            maybe(fuzz, &mut settings, "ttl", ttl);
        }
        "envoy-budget" => {
            let percent = number_in(fuzz, 0..101);
            maybe(fuzz, &mut settings, "percent", percent);
            settings.push(format!("min_concurrency = {}", number_in(fuzz, 0..10)));
        }
        "grpc-throttling" => {
            let tokens = number_in(fuzz, 1..1001);
            maybe(fuzz, &mut settings, "max_tokens", tokens);
            let ratio = format!("{}", (1 + fuzz.below(5000)) as f64 / 1000.0);
            maybe(fuzz, &mut settings, "token_ratio", ratio);
        }
        "aws-retry-quota" => {
            for (name, range) in [
                ("capacity", 1..1000),
                ("retry_cost", 0..20),
                ("timeout_cost", 0..20),
                ("success_refund", 0..5),
            ] {
                let value = number_in(fuzz, range);
                maybe(fuzz, &mut settings, name, value);
            }
        }
        "sre-throttling" => {
            let k = format!("{}", (1 + fuzz.below(50)) as f64 / 10.0);
            maybe(fuzz, &mut settings, "k", k);
            let window = duration_in(fuzz, 1..300_000);
            maybe(fuzz, &mut settings, "window", window);
        }
        "circuit-breaker" => {
            if fuzz.one_in(2) {
                let calls = number_in(fuzz, 1..200);
                maybe(fuzz, &mut settings, "window_calls", calls);
            } else {
                let window = duration_in(fuzz, 1000..20_000);
                maybe(fuzz, &mut settings, "window", window);
            }
            for (name, range) in [
                ("minimum_calls", 1..50),
                ("failure_rate", 1..101),
                ("slow_call_rate", 1..101),
                ("half_open_calls", 1..20),
            ] {
                let value = number_in(fuzz, range);
                maybe(fuzz, &mut settings, name, value);
            }
            let slow = duration_in(fuzz, 1..100);
            maybe(fuzz, &mut settings, "slow_call_duration", slow);
            let wait = duration_in(fuzz, 1..2000);
            maybe(fuzz, &mut settings, "wait_open", wait);
        }
        _ => {}
    }
    let scope = *fuzz.pick(&["client", "process", "global"]);
    maybe(fuzz, &mut settings, "scope", format!("\"{scope}\""));
    let kind = if kind == "envoy-budget" {
        "retry-budget"
    } else {
        kind
    };
    let mut fields = vec![format!("kind = \"{kind}\"")];
    fields.extend(settings);
    format!("{{ {} }}", fields.join(", "))
}

/// A small scenario (a few clients for a few seconds, so that it is cheap by construction)
/// whose policy, and sometimes a tier calling another, has one to three random controls,
/// against an upstream that works, refuses everything, or rate-limits.
fn scenario_with_controls(fuzz: &mut Fuzz) -> String {
    let controls = |fuzz: &mut Fuzz| {
        let controls: Vec<String> = (0..1 + fuzz.below(3))
            .map(|_| random_control(fuzz))
            .collect();
        controls.join(", ")
    };
    let count = 1 + fuzz.below(20);
    let processes = 1 + fuzz.below(count);
    let workload = if fuzz.one_in(3) {
        format!(
            "workload = \"closed\"\nthink_time = \"{}ms\"",
            1 + fuzz.below(200)
        )
    } else {
        format!("rate = {}", (1 + fuzz.below(40)) as f64 / 4.0)
    };
    let trouble = *fuzz.pick(&[
        "",
        "outage = \"reject\"\ncapacity = [{ at = \"0s\", factor = 0.0 }, { at = \"1s\", factor = 1.0 }]",
        "outage = \"queue\"\ncapacity = [{ at = \"500ms\", factor = 0.0 }, { at = \"2s\", factor = 1.0 }]",
        "rate_limit = { rate = 20, burst = 5 }",
        "errors = { rate = 0.3, status = 503 }",
    ]);
    let policy = format!(
        "[[policy]]\nname = \"controlled\"\nmax_attempts = {}\nbase = \"{}ms\"\ncontrols = [{}]\n",
        fuzz.below(5),
        1 + fuzz.below(100),
        controls(fuzz)
    );
    let service_time = format!("\"{}ms\"", 1 + fuzz.below(20));
    let workers = 1 + fuzz.below(10);
    let head = format!(
        "name = \"controls\"\nseed = {}\nduration = \"{}s\"\n[clients]\ncount = {count}\nprocesses = {processes}\n{workload}\n",
        fuzz.below(1000),
        1 + fuzz.below(4),
    );
    if fuzz.one_in(4) {
        format!(
            "{head}calls = \"api\"\n[[service]]\nname = \"api\"\nworkers = {workers}\nservice_time = {service_time}\ncalls = [\"db\"]\nretry = {{ max_attempts = {}, controls = [{}] }}\n[[service]]\nname = \"db\"\nworkers = {workers}\nservice_time = {service_time}\n{trouble}\n{policy}",
            fuzz.below(4),
            controls(fuzz)
        )
    } else {
        format!(
            "{head}[upstream]\nworkers = {workers}\nservice_time = {service_time}\n{trouble}\n{policy}"
        )
    }
}

/// Every control kind with random settings, at the users and at a tier, with random scopes,
/// against upstreams that work, fail or throttle (issue 23: a breaker's settings panicked a
/// run that `check` accepted). A scenario is refused with an error at its place in the file
/// ([`check_load`]) or runs to its end without a panic, and its events stay within the cost
/// estimate's high end (every send allowed, for the most arrivals the draws can bring): the
/// estimate `run` decides on bounds what it runs. Each scenario is a few clients for a few
/// seconds, estimated at most [`CONTROL_MOST_EVENTS`] events, so the test is bounded by
/// construction.
#[test]
fn controls_with_random_settings_run_to_the_end() {
    let mut fuzz = Fuzz::new(0xc0_47_01);
    let (mut refused, mut ran, mut breakers_ran) = (0, 0, 0);
    for _ in 0..CONTROL_ITERATIONS {
        let text = scenario_with_controls(&mut fuzz);
        let Ok(scenario) = check_load("controls.toml", &text, &[]) else {
            refused += 1;
            continue;
        };
        let estimate = Estimate::of(&scenario, 1);
        assert!(
            estimate.most_events() <= CONTROL_MOST_EVENTS,
            "too large to be a quick case: {estimate}:\n{text}"
        );
        let result = no_panic(|| text.clone(), || run(&scenario));
        for (policy, cost) in result.policies.iter().zip(&estimate.policies) {
            let events = policy.measurements.events as f64;
            assert!(
                events <= cost.most_events,
                "{events} events, estimated at most {}:\n{text}",
                cost.most_events
            );
        }
        ran += 1;
        breakers_ran += usize::from(text.contains("circuit-breaker"));
    }
    assert!(
        refused > CONTROL_ITERATIONS / 10 && ran > CONTROL_ITERATIONS / 3 && breakers_ran > 10,
        "{refused} refused, {ran} ran ({breakers_ran} with a breaker)"
    );
}

// ---------------------------------------------------------------------------------------------
// The importers
// ---------------------------------------------------------------------------------------------

/// Documents read by `importers_survive_adversarial_documents`.
const IMPORT_ITERATIONS: usize = 1_500;

/// A generated document node, with what reading it must build.
enum Node {
    Scalar(String),
    List(Vec<Node>),
    Map(Vec<(String, Node)>),
    /// An alias to the anchor of this number (defined earlier in the document).
    Alias(usize),
}

/// What a node builds: values (aliases expanded) and sequences and mappings nested.
#[derive(Clone, Copy, Default)]
struct Built {
    values: u64,
    depth: usize,
}

/// Writes and measures generated documents; anchors are numbered in the order written.
#[derive(Default)]
struct Writer {
    anchors: Vec<Built>,
    duplicate: bool,
}

impl Writer {
    /// Writes `node` in flow style (YAML when `yaml`, where it may carry anchor `anchor`).
    fn write(&mut self, node: &Node, anchor: bool, out: &mut String) -> Built {
        if anchor {
            out.push_str(&format!("&a{} ", self.anchors.len()));
        }
        let built = match node {
            Node::Scalar(text) => {
                out.push_str(text);
                Built {
                    values: 1,
                    depth: 0,
                }
            }
            Node::List(items) => {
                out.push('[');
                let mut built = Built {
                    values: 1,
                    depth: 1,
                };
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    let inner = self.write(item, false, out);
                    built.values += inner.values;
                    built.depth = built.depth.max(inner.depth + 1);
                }
                out.push(']');
                built
            }
            Node::Map(entries) => {
                out.push('{');
                let mut built = Built {
                    values: 1,
                    depth: 1,
                };
                let mut keys = BTreeSet::new();
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.duplicate |= !keys.insert(key.as_str());
                    out.push_str(&serde_json::to_string(key).unwrap());
                    out.push_str(": ");
                    let inner = self.write(value, false, out);
                    built.values += 1 + inner.values;
                    built.depth = built.depth.max(inner.depth + 1);
                }
                out.push('}');
                built
            }
            Node::Alias(number) => {
                out.push_str(&format!("*a{number}"));
                self.anchors[*number]
            }
        };
        if anchor {
            self.anchors.push(built);
        }
        built
    }
}

/// Keys of both importers, near misses, and keys with control characters.
const KEYS: [&str; 14] = [
    "retry_policy",
    "retry_on",
    "num_retries",
    "per_try_timeout",
    "circuit_breakers",
    "thresholds",
    "methodConfig",
    "retryThrottling",
    "maxTokens",
    "tokenRatio",
    "name",
    "retryPolicy",
    "x\u{1b}[2J",
    "k\nretrystorm: ok",
];

/// Scalars the importers read, and extremes.
fn scalar(fuzz: &mut Fuzz) -> Node {
    let words = [
        "\"5xx,reset\"",
        "\"0.1s\"",
        "\"UNAVAILABLE\"",
        "true",
        "null",
        "\"s\\u001b[2J\"",
        "\"a\\nb\"",
        "3",
        "2.5",
    ];
    Node::Scalar(if fuzz.one_in(3) {
        fuzz.pick(&EXTREMES)
            .to_string()
            .replace("NaN", "0")
            .replace("nan", "1")
            .replace("-inf", "-2")
            .replace("inf", "2")
            .replace("0x10", "16")
            // Beyond u64 a YAML integer is no JSON number (as before); a JSON one is a float.
            .replace("18446744073709551616", "1.8446744073709552e19")
    } else {
        fuzz.pick(&words).to_string()
    })
}

/// A random node `levels` deep at most, aliasing anchors below `anchors`.
fn node(fuzz: &mut Fuzz, levels: usize, anchors: usize) -> Node {
    if levels == 0 || fuzz.one_in(4) {
        return if anchors > 0 && fuzz.one_in(4) {
            Node::Alias(fuzz.below(anchors))
        } else {
            scalar(fuzz)
        };
    }
    let len = fuzz.below(5);
    if fuzz.one_in(2) {
        Node::List((0..len).map(|_| node(fuzz, levels - 1, anchors)).collect())
    } else {
        Node::Map(
            (0..len)
                .map(|_| {
                    (
                        fuzz.pick(&KEYS).to_string(),
                        node(fuzz, levels - 1, anchors),
                    )
                })
                .collect(),
        )
    }
}

/// A document: a mapping of importer keys whose values may be deep chains, anchored nodes
/// and fan-outs of aliases to them. Returns its text and what it builds.
fn document(fuzz: &mut Fuzz, yaml: bool) -> (String, Built, bool) {
    let mut writer = Writer::default();
    let mut out = String::from("{");
    let mut built = Built {
        values: 1,
        depth: 1,
    };
    let mut keys = BTreeSet::new();
    for i in 0..1 + fuzz.below(4) {
        if i > 0 {
            out.push_str(", ");
        }
        let key = fuzz.pick(&KEYS[..10]).to_string();
        writer.duplicate |= !keys.insert(key.clone());
        out.push_str(&format!("{key:?}: "));
        let anchors = if yaml { writer.anchors.len() } else { 0 };
        let value = match fuzz.below(6) {
            // A chain of lists around 128 levels deep.
            0 => {
                let levels = 120 + fuzz.below(20);
                Node::Scalar(format!("{}1{}", "[".repeat(levels), "]".repeat(levels)))
            }
            // A wide anchored list and a fan-out of aliases to it, in one list.
            1 if yaml => {
                let wide = if fuzz.one_in(2) {
                    1_000
                } else {
                    1 + fuzz.below(20)
                };
                let aliases = if fuzz.one_in(2) {
                    2_000
                } else {
                    1 + fuzz.below(50)
                };
                let number = writer.anchors.len();
                let strings = vec!["s"; wide].join(", ");
                let repeats = vec![format!("*a{number}"); aliases].join(", ");
                writer.anchors.push(Built {
                    values: 1 + wide as u64,
                    depth: 1,
                });
                Node::Scalar(format!("[&a{number} [{strings}], {repeats}]"))
            }
            2 => {
                let most = if fuzz.one_in(4) { 1_000 } else { 10 };
                let len = fuzz.below(most);
                Node::List((0..len).map(|_| scalar(fuzz)).collect())
            }
            _ => {
                let levels = 1 + fuzz.below(5);
                node(fuzz, levels, anchors)
            }
        };
        let inner = if let Node::Scalar(text) = &value
            && text.starts_with("[&a")
        {
            out.push_str(text);
            let anchored = *writer.anchors.last().unwrap();
            let aliases = text.matches('*').count() as u64;
            Built {
                values: 1 + anchored.values * (1 + aliases),
                depth: 2,
            }
        } else if let Node::Scalar(text) = &value
            && text.starts_with('[')
        {
            out.push_str(text);
            let levels = text.len() / 2;
            Built {
                values: levels as u64 + 1,
                depth: levels,
            }
        } else {
            // YAML gives an alias no anchor of its own.
            let anchored = yaml && !matches!(value, Node::Alias(_)) && fuzz.one_in(2);
            writer.write(&value, anchored, &mut out)
        };
        built.values += 1 + inner.values;
        built.depth = built.depth.max(inner.depth + 1);
    }
    out.push('}');
    (out, built, writer.duplicate)
}

/// The values of `value` (scalars, lists, objects and keys) and its nesting.
fn measured(value: &Value) -> Built {
    match value {
        Value::Array(items) => items.iter().map(measured).fold(
            Built {
                values: 1,
                depth: 1,
            },
            |sum, item| Built {
                values: sum.values + item.values,
                depth: sum.depth.max(item.depth + 1),
            },
        ),
        Value::Object(object) => object.values().map(measured).fold(
            Built {
                values: 1,
                depth: 1,
            },
            |sum, item| Built {
                values: sum.values + 1 + item.values,
                depth: sum.depth.max(item.depth + 1),
            },
        ),
        _ => Built {
            values: 1,
            depth: 0,
        },
    }
}

/// JSON and YAML documents with deep chains, anchors and alias fan-outs, wide lists, repeated
/// keys and control characters in keys and strings, read into values and imported: never a
/// panic; a document that nests more than 128 levels, builds more than 2^20 values or repeats
/// a key is refused, and one that is read builds exactly what it says. The work is bounded by
/// what is built, not by the expansion asked for: YAML's limits are checked on the parser's
/// events, at most a few per byte, and a refused fan-out builds nothing. Every error is free
/// of control characters (they are escaped) and names a place.
#[test]
fn importers_survive_adversarial_documents() {
    use retrystorm::import::document::parse;
    use retrystorm::import::import_str;
    use retrystorm::import::yaml_limits::{MAX_DEPTH, MAX_VALUES, check};

    let mut fuzz = Fuzz::new(23);
    let mut refused = [0usize; 3];
    for iteration in 0..IMPORT_ITERATIONS {
        let yaml = fuzz.one_in(2);
        let (text, built, duplicate) = document(&mut fuzz, yaml);
        let input = || format!("iteration {iteration} (yaml: {yaml}): {text}");
        if yaml && let Err(refusal) = check(&text) {
            assert!(refusal.events <= 2 * text.len() as u64 + 8, "{}", input());
        }
        let read = no_panic(input, || parse(&text, yaml));
        // serde_json's own limit is one level less than serde_norway's.
        let too_deep = built.depth > if yaml { MAX_DEPTH } else { MAX_DEPTH - 1 };
        let too_large = yaml && built.values > MAX_VALUES;
        match read {
            Ok(value) => {
                assert!(!duplicate && !too_deep && !too_large, "{}", input());
                let read = measured(&value);
                assert_eq!(
                    (read.values, read.depth),
                    (built.values, built.depth),
                    "{}",
                    input()
                );
            }
            Err(error) => {
                assert!(duplicate || too_deep || too_large, "{error}: {}", input());
                let message = error.to_string();
                assert!(!message.chars().any(char::is_control), "{message:?}");
                assert!(message.contains("line "), "{message}");
                refused[if too_large {
                    1
                } else if too_deep {
                    2
                } else {
                    0
                }] += 1;
            }
        }
        let method = fuzz.one_in(3).then(|| retrystorm::scenario::ImportPart {
            field: "import_method",
            name: "pkg.Svc/Get".into(),
        });
        if let Err(error) = no_panic(input, || import_str(&text, yaml, method.as_ref())) {
            let message = error.to_string();
            assert!(!message.chars().any(char::is_control), "{message:?}");
        }
    }
    // Each kind of refusal was reached: duplicates (and the rest), depth, size.
    assert!(refused.iter().all(|&n| n > 10), "{refused:?}");
}

/// Random scenarios simulated by `estimate_brackets_the_events_of_random_scenarios`.
const ESTIMATE_ITERATIONS: usize = 40;

/// A small random scenario of the features that change how many events an operation makes:
/// open or closed loops, latencies of every distribution, losses, outages of every kind, rate
/// limits, errors, caches, crashes, a two-tier topology, writes with status endpoints, and
/// policies with retries, hedging and every control.
fn random_scenario(fuzz: &mut Fuzz) -> String {
    let duration = *fuzz.pick(&["1s", "2s", "500ms"]);
    let count = *fuzz.pick(&[1, 3, 20, 100]);
    let workload = if fuzz.one_in(2) {
        format!("rate = {}", fuzz.pick(&["0.5", "5", "40"]))
    } else {
        format!(
            "workload = \"closed\"\nthink_time = \"{}\"\nstart = \"{}\"",
            fuzz.pick(&["1us", "1ms", "50ms", "1s"]),
            fuzz.pick(&["staggered", "together"])
        )
    };
    let latency = *fuzz.pick(&[
        "\"0s\"",
        "\"1ms\"",
        "{ distribution = \"exponential\", mean = \"2ms\" }",
        "{ distribution = \"lognormal\", mean = \"1ms\", sigma = 1.5 }",
        "{ distribution = \"uniform\", min = \"0s\", max = \"3ms\" }",
        "{ distribution = \"normal\", mean = \"5ms\", sd = \"2ms\" }",
    ]);
    let loss = *fuzz.pick(&["", "request_loss = 0.1", "response_loss = 0.1"]);
    let method = *fuzz.pick(&[
        "",
        "[[clients.operations]]\nname = \"pay\"\nmethod = \"POST\"\nstatus_endpoint = true",
    ]);
    let service_time = *fuzz.pick(&[
        "\"0s\"",
        "\"5ms\"",
        "{ distribution = \"exponential\", mean = \"20ms\" }",
    ]);
    let mut upstream = vec![
        format!("workers = {}", fuzz.pick(&[1, 4, 50])),
        format!("service_time = {service_time}"),
        format!("queue_limit = {}", fuzz.pick(&[0, 5, 1000])),
    ];
    let capacities = [
        "",
        "capacity = [{ at = \"200ms\", factor = 1 }, { at = \"200ms\", factor = 0 }, { at = \"400ms\", factor = 0 }, { at = \"600ms\", factor = 1 }]\noutage = \"reject\"",
        "capacity = [{ at = \"200ms\", factor = 1 }, { at = \"200ms\", factor = 0 }, { at = \"400ms\", factor = 0 }, { at = \"600ms\", factor = 1 }]\noutage = \"crash\"",
        "capacity = [{ at = \"200ms\", factor = 1 }, { at = \"200ms\", factor = 0 }, { at = \"400ms\", factor = 0 }, { at = \"600ms\", factor = 1 }]\noutage = \"blackhole\"",
        "capacity = [{ at = \"100ms\", factor = 1 }, { at = \"500ms\", factor = 0.2 }, { at = \"900ms\", factor = 1 }]",
    ];
    upstream.push(fuzz.pick(&capacities).to_string());
    let mut extras = [
        "rate_limit = { rate = 50, burst = 5 }",
        "errors = { rate = 0.3 }",
        "cache = { hit_ratio = 0.8, hit_time = \"1ms\", fills = 10 }",
        "crash = { in_flight_above = 3, hold = \"10ms\", restart_after = \"50ms\" }",
        "retry_after = \"20ms\"",
    ];
    fuzz.shuffle(&mut extras);
    upstream.extend(
        extras
            .iter()
            .take(fuzz.below(3))
            .map(|extra| extra.to_string()),
    );
    let (calls, services) = if fuzz.one_in(4) {
        (
            "calls = \"edge\"",
            format!(
                "[[service]]\nname = \"edge\"\nworkers = 20\nservice_time = \"1ms\"\ncalls = [\"db\"]\nretry = {{ max_attempts = {} }}\n[[service]]\nname = \"db\"\n{}",
                fuzz.below(3),
                upstream.join("\n")
            ),
        )
    } else {
        ("", format!("[upstream]\n{}", upstream.join("\n")))
    };
    let mut policies = String::new();
    for index in 0..1 + fuzz.below(2) {
        let mut settings = vec![
            format!("name = \"p{index}\""),
            format!("max_attempts = {}", fuzz.pick(&[0, 1, 3, 6])),
            format!("base = \"{}\"", fuzz.pick(&["0s", "1ms", "50ms"])),
            format!(
                "jitter = \"{}\"",
                fuzz.pick(&["none", "full", "equal", "decorrelated"])
            ),
            format!(
                "retry_after = \"{}\"",
                fuzz.pick(&["honor", "ignore", "honor-jittered", "pushback"])
            ),
        ];
        if fuzz.one_in(3) {
            settings.push("attempt_timeout = \"30ms\"".into());
        }
        if fuzz.one_in(5) {
            settings.push("hedging = { max_attempts = 3, delay = \"5ms\" }".into());
        }
        let controls = [
            // A count window as large as the trial calls: the ring a re-opened breaker keeps
            // is the right size (a smaller one panics on main, issue 23 case 1).
            "{ kind = \"circuit-breaker\", window_calls = 5, minimum_calls = 5, half_open_calls = 5, wait_open = \"100ms\" }",
            "{ kind = \"sre-throttling\" }",
            "{ kind = \"retry-budget\" }",
            "{ kind = \"grpc-throttling\", max_tokens = 10, token_ratio = 0.1 }",
            "{ kind = \"aws-retry-quota\" }",
            "{ kind = \"aws-adaptive\" }",
        ];
        if fuzz.one_in(2) {
            settings.push(format!("controls = [{}]", fuzz.pick(&controls)));
        }
        policies.push_str(&format!("[[policy]]\n{}\n", settings.join("\n")));
    }
    format!(
        "name = \"random\"\nduration = \"{duration}\"\nbucket = \"100ms\"\n[clients]\ncount = {count}\n{workload}\ndeadline = \"300ms\"\nattempt_timeout = \"100ms\"\n{calls}\n{method}\n[network]\nlatency = {latency}\n{loss}\n{services}\n{policies}"
    )
}

/// Issue 23: the estimate's low end undershot the events of 16 of 40 random scenarios (it
/// counted every operation as sent once, where a control refuses some locally and an open
/// loop learns successes as it sends them). Over random scenarios, every policy's events, as
/// the engine counts them for `--stats`, lie within what `check` announces, from the fewest
/// to the most, whether or not an observer hears every attempt (without one, the engine
/// handles refusals and answers ahead of their time: issue 25). Scenarios the loader refuses (a combination that cannot run) are skipped;
/// most load.
#[test]
fn estimate_brackets_the_events_of_random_scenarios() {
    let mut fuzz = Fuzz::new(23);
    let mut simulated = 0;
    for _ in 0..ESTIMATE_ITERATIONS {
        let text = random_scenario(&mut fuzz);
        let Ok(scenario) = load_str(&text, "random.toml", &[]) else {
            continue;
        };
        let estimate = Estimate::of(&scenario, 1);
        // Heard attempt by attempt (every step an event), and quietly (answers and refusals
        // handled ahead of their time where they can be: the fewest events).
        let observers = vec![crate::support::Collector::default(); scenario.policy.len()];
        let (heard, _) = retrystorm::run::run_scenario(&scenario, observers)
            .unwrap_or_else(|stalled| panic!("{stalled}:\n{text}"));
        let quiet = vec![retrystorm::engine::Quiet; scenario.policy.len()];
        let (unheard, _) = retrystorm::run::run_scenario(&scenario, quiet)
            .unwrap_or_else(|stalled| panic!("{stalled}:\n{text}"));
        for run in [&heard, &unheard] {
            for (policy, cost) in run.policies.iter().zip(&estimate.policies) {
                let events = policy.measurements.events as f64;
                assert!(
                    cost.fewest_events <= events && events <= cost.most_events,
                    "policy {:?}: {events} events, estimated {} to {}:\n{text}",
                    policy.name,
                    cost.fewest_events,
                    cost.most_events
                );
            }
        }
        simulated += 1;
    }
    assert!(
        simulated >= ESTIMATE_ITERATIONS * 3 / 4,
        "{simulated} loaded"
    );
}
