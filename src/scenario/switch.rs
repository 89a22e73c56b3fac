//! `off`: a `--set` or `--grid` value that switches a feature off.
//!
//! A sweep that asks whether a retry budget, a rate limit or outlier ejection helps must
//! compare it with the feature absent. Without a value for that, a grid stood one in by a
//! setting that does nothing (a rate limit of 1,000,000), which the recommendation then took
//! for a real value: an edge of the grid to extend. `off` (or `none`) at the key of a control,
//! of a `rate_limit` or `concurrency_limit`, or of `outlier_detection`, or at any key inside
//! one, removes that table from the scenario, so the point is exactly the scenario without it
//! (`--grid policy.controls.retry-budget.percent=off,10,20`).
//!
//! Other keys are left alone: `none` is a value of some (`jitter`, `attempt_timeout`,
//! `call_retry`), and `off` of none, so `off` elsewhere is refused with the keys that take it.

use toml_edit::{Item, TableLike, Value};

use super::Scenario;
use super::override_key::{is_control, name_of, split_index};

/// The tables `off` removes, besides a control: their key in a service (or the fleet's).
pub const SWITCHABLE_TABLES: [&str; 3] = ["rate_limit", "concurrency_limit", "outlier_detection"];

/// The keys that take `off`, for errors.
pub const TAKES_OFF: &str = "a control (policy.controls.retry-budget, service.NAME.retry.controls.KIND, or by index: policy.0.controls.0), service.NAME.rate_limit, service.NAME.concurrency_limit, service.NAME.fleet.outlier_detection (upstream.… alike), or any key inside one (policy.controls.retry-budget.percent)";

/// Whether `value` switches a feature off: `off` or `none`, bare or quoted.
pub fn is_off(value: &str) -> bool {
    matches!(
        value.trim().trim_matches('"').trim_matches('\''),
        "off" | "none"
    )
}

/// How many leading parts of `path` name the table `off` removes at it: through a control
/// (`controls` and its kind or index) or a [`SWITCHABLE_TABLES`] table; `None` if no part does.
pub fn switched_table(path: &[&str]) -> Option<usize> {
    path.iter().enumerate().find_map(|(index, part)| {
        if *part == "controls" {
            (index + 1 < path.len()).then_some(index + 2)
        } else {
            SWITCHABLE_TABLES.contains(part).then_some(index + 1)
        }
    })
}

/// What an override of `value` at `path` does: `Ok(Some(parts))` removes the table the first
/// `parts` of the path name ([`remove`]); `Ok(None)` sets the value as any other; an error for
/// `off` at a key that takes none.
pub fn switch_at(path: &[&str], value: &str) -> Result<Option<usize>, String> {
    if !is_off(value) {
        return Ok(None);
    }
    match switched_table(path) {
        Some(parts) => Ok(Some(parts)),
        None if value.trim().trim_matches('"').trim_matches('\'') == "off" => Err(format!(
            "`{}` cannot be switched off: `off` (or `none`) removes {TAKES_OFF}",
            path.join(".")
        )),
        None => Ok(None),
    }
}

/// Whether `value` at the dotted `key` switches a feature off: `off` or `none` at a key that
/// takes it ([`switched_table`]).
pub fn off_at(key: &str, value: &str) -> bool {
    is_off(value) && switched_table(&key.split('.').collect::<Vec<_>>()).is_some()
}

/// From this value up, a number inside a control or a [`SWITCHABLE_TABLES`] table stands for
/// none: a limit nothing reaches, failures in a row that never come (the stand-ins scenarios
/// wrote before `off`).
pub const STAND_IN: f64 = 1_000_000.0;

/// `off` among a key's numbers, at the end where the feature does least: a
/// `max_ejection_percent` of 0, which ejects nothing; for any other key beyond the largest (no
/// limit, no budget).
pub fn off_as_number(key: &str) -> f64 {
    if key.ends_with("max_ejection_percent") {
        0.0
    } else {
        f64::INFINITY
    }
}

/// Whether the number `value` at the dotted `key` switches its feature off in effect, in
/// `scenario` (the point's, if known): a [`STAND_IN`] or more inside a control or a
/// [`SWITCHABLE_TABLES`] table, or a `max_ejection_percent` that lets no instance be ejected
/// (below 100 / instances percent of the fleet, without `always_eject_one_host`, as Envoy
/// refuses an ejection that would eject more than the percent).
pub fn disables(key: &str, value: f64, scenario: Option<&Scenario>) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    if switched_table(&parts).is_none() {
        return false;
    }
    if value >= STAND_IN {
        return true;
    }
    if parts.last() != Some(&"max_ejection_percent") {
        return false;
    }
    let fleet = scenario.and_then(|scenario| {
        let service = match parts.as_slice() {
            ["upstream", ..] => scenario.upstream.as_ref(),
            ["service", name, ..] => scenario
                .services()
                .into_iter()
                .find(|service| service.name() == *name),
            _ => None,
        };
        service?.fleet.as_ref().map(|fleet| fleet.get_ref().clone())
    });
    match fleet {
        Some(fleet) => {
            let always_one = fleet
                .outlier_detection
                .as_ref()
                .is_some_and(|rules| rules.get_ref().always_eject_one_host);
            !always_one && value * (fleet.instances.get() as f64) < 100.0
        }
        None => value == 0.0,
    }
}

/// Removes the table `path` names below `item`: every table an unselected array reaches
/// (`policy.controls.retry-budget` in every policy that has one). An error if none was there
/// to remove (a typo would otherwise change nothing).
pub fn remove(item: &mut Item, path: &[&str]) -> Result<(), String> {
    if remove_in(item, path)? {
        Ok(())
    } else {
        Err(format!(
            "`{}=off` removes nothing: the scenario has no such table here; off removes {TAKES_OFF}",
            path.join(".")
        ))
    }
}

/// [`remove`]: whether anything was removed.
fn remove_in(item: &mut Item, path: &[&str]) -> Result<bool, String> {
    match item {
        Item::Table(table) => remove_in_table(table, path),
        Item::Value(Value::InlineTable(table)) => remove_in_table(table, path),
        Item::ArrayOfTables(array) => {
            let names: Vec<Option<String>> = array.iter().map(|table| name_of(table)).collect();
            let (index, rest) = split_index(path, &names, false)?;
            let mut removed = false;
            for (at, table) in array.iter_mut().enumerate() {
                if index.is_none_or(|index| index == at) {
                    removed |= remove_in_table(table, rest)?;
                }
            }
            Ok(removed)
        }
        Item::Value(Value::Array(array)) => {
            let names: Vec<Option<String>> = array
                .iter()
                .map(|element| element.as_inline_table().and_then(|table| name_of(table)))
                .collect();
            let (index, rest) = split_index(path, &names, false)?;
            let mut removed = false;
            for (at, element) in array.iter_mut().enumerate() {
                if let (true, Value::InlineTable(table)) =
                    (index.is_none_or(|index| index == at), element)
                {
                    removed |= remove_in_table(table, rest)?;
                }
            }
            Ok(removed)
        }
        _ => Ok(false),
    }
}

fn remove_in_table(table: &mut dyn TableLike, path: &[&str]) -> Result<bool, String> {
    match path {
        [] => Err("the key is empty".into()),
        [key] => Ok(table.remove(key).is_some()),
        ["controls", selector] => {
            let Some(controls) = table.get_mut("controls") else {
                return Ok(false);
            };
            let removed = remove_control(controls, selector)?;
            let empty = match controls {
                Item::ArrayOfTables(array) => array.is_empty(),
                Item::Value(Value::Array(array)) => array.is_empty(),
                _ => false,
            };
            // No `controls` at all, as a scenario without them writes it.
            if empty {
                table.remove("controls");
            }
            Ok(removed)
        }
        [key, rest @ ..] => match table.get_mut(key) {
            Some(child) => remove_in(child, rest),
            None => Ok(false),
        },
    }
}

/// Removes the control `selector` (its kind, or its 0-based index) from `controls`.
fn remove_control(controls: &mut Item, selector: &str) -> Result<bool, String> {
    let kinds: Vec<Option<String>> = match controls {
        Item::ArrayOfTables(array) => array
            .iter()
            .map(|table| is_control(table).then(|| name_of(table)).flatten())
            .collect(),
        Item::Value(Value::Array(array)) => array
            .iter()
            .map(|element| {
                let table = element.as_inline_table()?;
                is_control(table).then(|| name_of(table)).flatten()
            })
            .collect(),
        _ => return Ok(false),
    };
    let at = match selector.parse::<usize>() {
        Ok(index) if index < kinds.len() => Some(index),
        Ok(index) => {
            return Err(format!(
                "index {index} is out of range: the controls are {} (0 to {})",
                kinds.len(),
                kinds.len().saturating_sub(1)
            ));
        }
        Err(_) => kinds
            .iter()
            .position(|kind| kind.as_deref() == Some(selector)),
    };
    let Some(at) = at else {
        return Ok(false);
    };
    match controls {
        Item::ArrayOfTables(array) => {
            array.remove(at);
        }
        Item::Value(Value::Array(array)) => {
            array.remove(at);
        }
        _ => {}
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `off` or `none` at a key through a control or a switchable table removes that table;
    /// `off` elsewhere is refused with the key named; `none` elsewhere is a value as before
    /// (`policy.jitter=none`).
    #[test]
    fn off_removes_the_table_its_key_reaches() {
        fn parts(key: &str) -> Vec<&str> {
            key.split('.').collect()
        }
        assert_eq!(
            switch_at(&parts("policy.controls.retry-budget"), "off"),
            Ok(Some(3))
        );
        assert_eq!(
            switch_at(&parts("policy.0.controls.retry-budget.percent"), "none"),
            Ok(Some(4))
        );
        assert_eq!(
            switch_at(&parts("service.api.rate_limit.rate"), "off"),
            Ok(Some(3))
        );
        assert_eq!(
            switch_at(
                &parts("service.db.fleet.outlier_detection.max_ejection_percent"),
                "off"
            ),
            Ok(Some(4))
        );
        assert_eq!(
            switch_at(&parts("service.api.rate_limit.rate"), "100"),
            Ok(None)
        );
        assert_eq!(switch_at(&parts("policy.jitter"), "none"), Ok(None));
        let refused = switch_at(&parts("service.api.workers"), "off").unwrap_err();
        assert!(
            refused.starts_with(
                "`service.api.workers` cannot be switched off: `off` (or `none`) removes a control"
            ),
            "{refused}"
        );
    }
}
