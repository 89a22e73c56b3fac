//! How the key of an override (`--set`, a grid key, a policy's `overrides`) selects one entry of
//! an array of tables: by index, by `name`, or for a client control by `kind`. Setting a value
//! ([`super::load`]) and switching a feature off ([`super::switch`]) read keys the same way,
//! so the rule lives here, apart from both.

use toml_edit::TableLike;

/// An optional leading selector of `path` in an array whose entries have the given names: a
/// 0-based index (`policy.1.base`) or, before a further key, an entry's `name`
/// (`service.api.workers`). Without one the rest of the path applies to every entry. Entries
/// that are `controls` (`kinds`) can only be selected: a control has no nested tables, so a
/// part that names no control is a kind the policy lacks.
pub(super) fn split_index<'p, 'k>(
    path: &'p [&'k str],
    names: &[Option<String>],
    kinds: bool,
) -> Result<(Option<usize>, &'p [&'k str]), String> {
    let len = names.len();
    match path.split_first() {
        Some((first, rest)) => match first.parse::<usize>() {
            Ok(_) if rest.is_empty() => Err(
                "the key names a whole table, not a value; add a key inside it (for a policy: policy.0.base=250ms)".into(),
            ),
            Ok(index) if index < len => Ok((Some(index), rest)),
            Ok(index) => Err(format!(
                "index {index} is out of range: the array has {len} entries (0 to {})",
                len.saturating_sub(1)
            )),
            Err(_) => {
                let named = names
                    .iter()
                    .position(|name| name.as_deref() == Some(*first));
                match named {
                    Some(index) if !rest.is_empty() => Ok((Some(index), rest)),
                    None if !rest.is_empty() && kinds => Err(format!(
                        "no control here is of kind `{first}`; the controls are {} (select one by kind or by 0-based index)",
                        names.iter().flatten().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", ")
                    )),
                    _ => Ok((None, path)),
                }
            }
        },
        None => Err("cannot replace a whole array; set a key inside it".into()),
    }
}

/// What selects a table of an array by name: its `name`, or for a control its `kind`
/// (`policy.0.controls.retry-budget.percent`).
pub(super) fn name_of(table: &dyn TableLike) -> Option<String> {
    table
        .get("name")
        .or_else(|| table.get("kind"))?
        .as_str()
        .map(str::to_string)
}

/// Whether `table` is a client control: selected by its `kind`, as it has no `name`.
pub(super) fn is_control(table: &dyn TableLike) -> bool {
    table.get("name").is_none() && table.get("kind").is_some()
}
