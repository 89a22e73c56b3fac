//! The crate's layers depend one way (issue 24). `src/lib.rs` declares the layers bottom first
//! (`base`, `retry`, `vocabulary`, ..., `sweep`); that order is the one place it is written.
//! Every file of the library is read as text, its paths through `crate::`, `super::` and
//! `self::` are resolved to the file that defines them, and two rules are checked:
//!
//! - **Down only.** A file may use its own layer and the layers declared before it, never one
//!   declared after it.
//! - **No cycles.** No two modules under one parent use each other, directly or through
//!   others, where a module's use is that of any file in it: `output::charts::svg_text` using
//!   `output::report` is `output::charts` using `output::report`. A module and the modules
//!   inside it are exempt from each other (its root file declares and re-exports its children,
//!   the children use the types the root defines).
//!
//! Comments and `#[cfg(test)]` modules are left out: a doc link is not a dependency, and a unit
//! test may build its fixtures with a higher layer (a control's test loading a scenario). The
//! binary (`main.rs` and `cli/`) is the layer above all and reaches the library only through
//! its public paths.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path from the crate root: `["engine", "service", "queue"]`.
type ModulePath = Vec<String>;

/// Every module file of the library under `src/`, by module path, with its text.
fn library_files(src: &Path) -> BTreeMap<ModulePath, String> {
    let mut files = BTreeMap::new();
    let mut folders = vec![src.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).unwrap().with_extension("");
            let mut module: ModulePath = relative
                .components()
                .map(|part| part.as_os_str().to_string_lossy().into_owned())
                .collect();
            match module.last().map(String::as_str) {
                Some("lib") => module.clear(),
                Some("mod") => {
                    module.pop();
                }
                _ => {}
            }
            // The binary: the layer above all, not part of the library.
            if module
                .first()
                .is_some_and(|first| first == "main" || first == "cli")
            {
                continue;
            }
            files.insert(module, std::fs::read_to_string(&path).unwrap());
        }
    }
    files
}

/// The layers in the order `lib.rs` declares them.
fn declared_layers(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("mod "))?;
            rest.strip_suffix(';').map(str::to_string)
        })
        .collect()
}

/// `text` without its `#[cfg(test)]` module and comments. The test module must be the file's
/// last item (the line that closes it the last line), so that nothing after it is left out.
fn code(text: &str) -> String {
    let mut parts = text.splitn(2, "\n#[cfg(test)]\n");
    let before_tests = parts.next().unwrap();
    if let Some(tests) = parts.next() {
        let after = tests.split_once("\n}\n").map_or("", |(_, after)| after);
        assert!(
            tests.starts_with("mod tests {") && after.trim().is_empty(),
            "a #[cfg(test)] item that is not the file's last, `mod tests`: {}",
            tests.lines().next().unwrap_or("")
        );
    }
    before_tests
        .lines()
        .map(|line| line.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths `text` (the code of module `module`) names through `crate::`, `super::`
/// and `self::`, as written (not yet resolved to files).
fn named_paths(module: &[String], text: &str) -> Vec<ModulePath> {
    let mut paths = Vec::new();
    let bytes = text.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        let at_word_start = i == 0 || !ident(bytes[i - 1]);
        let head = ["crate", "super", "self"]
            .into_iter()
            .find(|head| at_word_start && bytes[i..].starts_with(format!("{head}::").as_bytes()));
        let Some(head) = head else {
            i += 1;
            continue;
        };
        let mut j = i + head.len();
        let mut segments = Vec::new();
        while bytes[j..].starts_with(b"::") {
            let start = j + 2;
            let mut end = start;
            while end < bytes.len() && ident(bytes[end]) {
                end += 1;
            }
            if end == start {
                break;
            }
            segments.push(text[start..end].to_string());
            j = end;
        }
        // `self::` names the module's own items or its children, `super::` its parent.
        let mut base: ModulePath = match head {
            "crate" => Vec::new(),
            "self" => module.to_vec(),
            _ => module[..module.len().saturating_sub(1)].to_vec(),
        };
        while segments.first().is_some_and(|segment| segment == "super") {
            base.pop();
            segments.remove(0);
        }
        base.extend(segments);
        paths.push(base);
        i = j.max(i + 1);
    }
    paths
}

/// The longest prefix of `path` that is a module file.
fn resolve<'a>(path: &[String], files: &'a BTreeMap<ModulePath, String>) -> Option<&'a ModulePath> {
    (1..=path.len())
        .rev()
        .find_map(|length| files.get_key_value(&path[..length]).map(|(key, _)| key))
}

/// Whether one of the two modules contains the other.
fn nested(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// What breaks the two rules in `files`, whose layers `lib.rs` declares as `layers`: one line a
/// use against the order, one line a cycle (its files and the uses that close it).
fn violations(files: &BTreeMap<ModulePath, String>, layers: &[String]) -> Vec<String> {
    let layer_of = |module: &[String]| {
        module
            .first()
            .and_then(|first| layers.iter().position(|layer| layer == first))
    };
    let mut problems = Vec::new();
    let mut uses: BTreeMap<ModulePath, BTreeSet<ModulePath>> = BTreeMap::new();
    // For each use between two modules, the first file that makes it.
    let mut examples: BTreeMap<(ModulePath, ModulePath), String> = BTreeMap::new();
    for (module, text) in files {
        if module.is_empty() {
            continue;
        }
        let Some(layer) = layer_of(module) else {
            problems.push(format!(
                "{} is in no layer: declare its top module in lib.rs",
                module.join("::")
            ));
            continue;
        };
        for path in named_paths(module, &code(text)) {
            let Some(target) = resolve(&path, files) else {
                continue;
            };
            if target.is_empty() || target == module {
                continue;
            }
            if let Some(target_layer) = layer_of(target)
                && target_layer > layer
            {
                problems.push(format!(
                    "{} (layer {}) uses {} (layer {}, above it)",
                    module.join("::"),
                    layers[layer],
                    path.join("::"),
                    layers[target_layer]
                ));
            }
            if !nested(module, target) {
                // Between the two modules under their closest common parent.
                let common = module
                    .iter()
                    .zip(target.iter())
                    .take_while(|(a, b)| a == b)
                    .count();
                let from = module[..=common].to_vec();
                let to = target[..=common].to_vec();
                examples
                    .entry((from.clone(), to.clone()))
                    .or_insert_with(|| format!("{} uses {}", module.join("::"), path.join("::")));
                uses.entry(from).or_default().insert(to);
            }
        }
    }
    for component in cycles(&uses) {
        let cycle = shortest_cycle(&uses, &component);
        let edges: Vec<String> = cycle
            .iter()
            .zip(cycle.iter().cycle().skip(1))
            .map(|(&from, &to)| {
                format!(
                    "{} -> {} ({})",
                    from.join("::"),
                    to.join("::"),
                    examples[&(from.clone(), to.clone())]
                )
            })
            .collect();
        problems.push(format!("a cycle: {}", edges.join(", ")));
    }
    problems
}

/// The shortest cycle within `component` (a strongly connected one), from its first member: a
/// breadth-first search back to it, so that the message names the few uses to undo rather than
/// every use among the members.
fn shortest_cycle<'a>(
    uses: &'a BTreeMap<ModulePath, BTreeSet<ModulePath>>,
    component: &[&'a ModulePath],
) -> Vec<&'a ModulePath> {
    let members: BTreeSet<&ModulePath> = component.iter().copied().collect();
    let start = component[0];
    let mut came_from: BTreeMap<&ModulePath, &ModulePath> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for next in uses.get(node).into_iter().flatten() {
            if next == start {
                let mut path = vec![node];
                while let Some(&before) = came_from.get(path.last().unwrap()) {
                    path.push(before);
                }
                path.reverse();
                return path;
            }
            if members.contains(next) && next != start && !came_from.contains_key(next) {
                came_from.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    unreachable!("a strongly connected component has a cycle through each member")
}

/// The strongly connected components of more than one file (Tarjan's algorithm).
fn cycles(uses: &BTreeMap<ModulePath, BTreeSet<ModulePath>>) -> Vec<Vec<&ModulePath>> {
    struct Search<'a> {
        uses: &'a BTreeMap<ModulePath, BTreeSet<ModulePath>>,
        index: BTreeMap<&'a ModulePath, usize>,
        low: BTreeMap<&'a ModulePath, usize>,
        stack: Vec<&'a ModulePath>,
        on_stack: BTreeSet<&'a ModulePath>,
        found: Vec<Vec<&'a ModulePath>>,
    }
    impl<'a> Search<'a> {
        fn visit(&mut self, node: &'a ModulePath) {
            let next = self.index.len();
            self.index.insert(node, next);
            self.low.insert(node, next);
            self.stack.push(node);
            self.on_stack.insert(node);
            for target in self.uses.get(node).into_iter().flatten() {
                if !self.index.contains_key(target) {
                    self.visit(target);
                    let low = self.low[node].min(self.low[target]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(target) {
                    let low = self.low[node].min(self.index[target]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                loop {
                    let member = self.stack.pop().unwrap();
                    self.on_stack.remove(member);
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut search = Search {
        uses,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in uses.keys() {
        if !search.index.contains_key(node) {
            search.visit(node);
        }
    }
    search.found
}

/// The library keeps both rules.
#[test]
fn the_layers_depend_one_way_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = library_files(&src);
    let layers = declared_layers(&files[&Vec::new()]);
    assert!(layers.len() >= 10, "lib.rs declares {layers:?}");
    let problems = violations(&files, &layers);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The checker finds what it looks for: in a made-up crate of three layers, a use from the
/// lowest to the highest is reported, and so is the cycle it closes between the layers; two
/// siblings that use each other are a cycle; a root file and its child that use each other, a
/// use downwards, and uses in a comment or a test module are not reported.
#[test]
fn the_checker_reports_a_use_upwards_and_a_cycle() {
    let module = |path: &str| -> ModulePath {
        path.split("::")
            .filter(|part| !part.is_empty())
            .map(str::to_string)
            .collect()
    };
    let files: BTreeMap<ModulePath, String> = [
        ("", "pub mod low;\npub mod mid;\npub mod high;\n"),
        ("low", "use crate::high::Thing; // a use upwards\n"),
        (
            "mid",
            "pub mod a;\npub mod b;\nuse crate::low::X;\nuse self::a::Y;\n",
        ),
        ("mid::a", "use super::b::Z;\nuse super::Root;\n"),
        (
            "mid::b",
            "use crate::mid::a::Y;\n#[cfg(test)]\nmod tests {\n    use crate::high::T;\n}\n",
        ),
        ("high", "use crate::mid::b::Z; // crate::low in a comment\n"),
    ]
    .into_iter()
    .map(|(path, text)| (module(path), text.to_string()))
    .collect();
    let layers = declared_layers(&files[&Vec::new()]);
    assert_eq!(layers, ["low", "mid", "high"]);
    let problems = violations(&files, &layers);
    assert_eq!(
        problems,
        [
            "low (layer low) uses high::Thing (layer high, above it)",
            "a cycle: high -> mid (high uses mid::b::Z), mid -> low (mid uses low::X), low -> high (low uses high::Thing)",
            "a cycle: mid::a -> mid::b (mid::a uses mid::b::Z), mid::b -> mid::a (mid::b uses mid::a::Y)",
        ],
        "{problems:#?}"
    );
}
