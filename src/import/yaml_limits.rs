//! The limits a YAML config must keep before it is built into values: how deeply it nests and
//! how many values its aliases expand to.
//!
//! Both are checked on libyaml's stream of events, which is the parser serde_norway uses, so
//! what is counted is exactly what would be built; nothing is expanded to count it.
//!
//! - **Aliases.** An alias repeats its anchor's whole node. Nested anchors (billion laughs) are
//!   stopped by serde_norway's own limit on jumps, but a flat fan-out is not: one anchored list
//!   of 1,000 strings aliased 100,000 times is a 319 KB file that builds 10^8 values (4 GB).
//!   Each anchor's size is known when its node ends (an alias can only name an anchor before
//!   it), so an alias adds that size to the document's count, and the alias that takes the
//!   count past [`MAX_VALUES`] is named.
//! - **Depth.** serde_norway refuses nesting deeper than 128 only while building values, after
//!   libyaml has scanned the whole text, and libyaml's scanner checks every open flow level at
//!   every token: 64 K `[` took 10.5 s, and `{a: ` repeated took longer. Stopping at the first
//!   node deeper than [`MAX_DEPTH`] keeps that work linear, and the later parse by serde_norway
//!   never sees more than [`MAX_DEPTH`] levels. An alias counts its anchor's depth too.
//!
//! A syntax error ends the check without a verdict; serde_norway reports it with its message.

use std::collections::HashMap;
use std::ffi::CStr;
use std::marker::PhantomData;
use std::mem::MaybeUninit;

use unsafe_libyaml_norway as unsafe_yaml;

/// The deepest nesting of sequences and mappings read: serde_norway's own recursion limit.
pub const MAX_DEPTH: usize = 128;
/// The most values (scalars, sequences and mappings, aliases expanded) a config may build. A
/// config is a few hundred; a 4 MiB file without aliases builds at most about two million.
pub const MAX_VALUES: u64 = 1 << 20;

/// Where a YAML document breaks a limit, and which (line and column count from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub line: u64,
    pub column: u64,
    pub message: String,
    /// The parser's events read, the refused one included: the work done before refusing.
    pub events: u64,
}

/// Checks `text` against [`MAX_DEPTH`] and [`MAX_VALUES`].
pub fn check(text: &str) -> Result<(), Refusal> {
    let Some(mut parser) = Parser::new(text.as_bytes()) else {
        return Ok(());
    };
    let mut counter = Counter::default();
    let mut events = 0;
    while let Some(event) = parser.next() {
        events += 1;
        counter
            .take(event)
            .map_err(|(line, column, message)| Refusal {
                line,
                column,
                message,
                events,
            })?;
    }
    Ok(())
}

/// One event, as the check needs it.
enum Event {
    /// A scalar, or the start of a sequence or mapping (`collection`), with its anchor.
    Node {
        anchor: Option<Vec<u8>>,
        collection: bool,
    },
    /// The end of a sequence or mapping.
    End,
    /// An alias to the anchor named.
    Alias(Vec<u8>),
    /// Anything else (stream and document boundaries).
    Other,
}

/// A node whose size is known: the values it builds and the sequences and mappings nested in
/// it, itself included.
#[derive(Debug, Clone, Copy, Default)]
struct Size {
    values: u64,
    depth: usize,
}

/// A sequence or mapping still open.
struct Open {
    anchor: Option<Vec<u8>>,
    size: Size,
}

#[derive(Default)]
struct Counter {
    /// The open sequences and mappings, outermost first.
    open: Vec<Open>,
    /// The size of each anchor's node, by name (a later anchor of the same name replaces it).
    anchors: HashMap<Vec<u8>, Size>,
    /// The values built so far.
    values: u64,
}

impl Counter {
    /// Takes one event and its line and column; a refusal is the line, column and why.
    fn take(&mut self, (event, line, column): (Event, u64, u64)) -> Result<(), (u64, u64, String)> {
        let refuse = |message: String| (line, column, message);
        match event {
            Event::Node { anchor, collection } => {
                self.count(1).map_err(refuse)?;
                if collection {
                    if self.open.len() >= MAX_DEPTH {
                        return Err(refuse(format!(
                            "nested more than {MAX_DEPTH} sequences or mappings deep; a config needs a few"
                        )));
                    }
                    self.open.push(Open {
                        anchor,
                        size: Size {
                            values: 1,
                            depth: 1,
                        },
                    });
                } else {
                    self.close(
                        anchor,
                        Size {
                            values: 1,
                            depth: 0,
                        },
                    );
                }
            }
            Event::End => {
                if let Some(done) = self.open.pop() {
                    self.close(done.anchor, done.size);
                }
            }
            Event::Alias(name) => {
                let shown = String::from_utf8_lossy(&name).into_owned();
                if self.open.iter().any(|o| o.anchor.as_ref() == Some(&name)) {
                    return Err(refuse(format!(
                        "the alias *{} is inside the node it names: it would repeat without end",
                        crate::base::escape::user_text(&shown)
                    )));
                }
                // An unknown anchor is the parser's error to report.
                let Some(size) = self.anchors.get(&name).copied() else {
                    return Ok(());
                };
                if self.open.len() + size.depth > MAX_DEPTH {
                    return Err(refuse(format!(
                        "the alias *{} nests its anchor's {} levels more than {MAX_DEPTH} sequences or mappings deep",
                        crate::base::escape::user_text(&shown),
                        size.depth
                    )));
                }
                self.count(size.values).map_err(|message| {
                    refuse(format!(
                        "the alias *{} repeats {} values: {message}",
                        crate::base::escape::user_text(&shown),
                        size.values
                    ))
                })?;
                self.close(None, size);
            }
            Event::Other => {}
        }
        Ok(())
    }

    /// Adds `values` to the document's count.
    fn count(&mut self, values: u64) -> Result<(), String> {
        self.values = self.values.saturating_add(values);
        if self.values > MAX_VALUES {
            return Err(format!(
                "the document builds more than {MAX_VALUES} values (aliases expanded); a config has a few hundred"
            ));
        }
        Ok(())
    }

    /// A node of `size` is complete: it joins the node that holds it, and its anchor is known.
    fn close(&mut self, anchor: Option<Vec<u8>>, size: Size) {
        if let Some(parent) = self.open.last_mut() {
            parent.size.values = parent.size.values.saturating_add(size.values);
            parent.size.depth = parent.size.depth.max(size.depth + 1);
        }
        if let Some(anchor) = anchor {
            self.anchors.insert(anchor, size);
        }
    }
}

/// libyaml's parser over borrowed text.
struct Parser<'input> {
    /// Boxed so that it never moves: libyaml keeps pointers into it.
    raw: Box<MaybeUninit<unsafe_yaml::yaml_parser_t>>,
    input: PhantomData<&'input [u8]>,
    done: bool,
}

impl<'input> Parser<'input> {
    fn new(input: &'input [u8]) -> Option<Parser<'input>> {
        let mut raw = Box::new(MaybeUninit::<unsafe_yaml::yaml_parser_t>::uninit());
        // SAFETY: `raw` is valid for writes and initialised by `yaml_parser_initialize`; the
        // input outlives the parser (`'input`), which only reads it.
        unsafe {
            if unsafe_yaml::yaml_parser_initialize(raw.as_mut_ptr()).fail {
                return None;
            }
            unsafe_yaml::yaml_parser_set_encoding(
                raw.as_mut_ptr(),
                unsafe_yaml::YAML_UTF8_ENCODING,
            );
            unsafe_yaml::yaml_parser_set_input_string(
                raw.as_mut_ptr(),
                input.as_ptr(),
                input.len() as u64,
            );
        }
        Some(Parser {
            raw,
            input: PhantomData,
            done: false,
        })
    }

    /// The next event and its line and column (from 1), or `None` at the end or an error.
    fn next(&mut self) -> Option<(Event, u64, u64)> {
        if self.done {
            return None;
        }
        let mut event = MaybeUninit::<unsafe_yaml::yaml_event_t>::uninit();
        // SAFETY: the parser was initialised in `new`; a successful `yaml_parser_parse`
        // initialises `event`, whose union field is read as its `type_` says, and which is
        // deleted once its anchor is copied out.
        unsafe {
            if unsafe_yaml::yaml_parser_parse(self.raw.as_mut_ptr(), event.as_mut_ptr()).fail {
                self.done = true;
                return None;
            }
            let event = event.as_mut_ptr();
            let anchor = |pointer: *mut u8| {
                (!pointer.is_null()).then(|| CStr::from_ptr(pointer.cast()).to_bytes().to_vec())
            };
            let data = (*event).data;
            let kind = match (*event).type_ {
                unsafe_yaml::YAML_SCALAR_EVENT => Event::Node {
                    anchor: anchor(data.scalar.anchor),
                    collection: false,
                },
                unsafe_yaml::YAML_SEQUENCE_START_EVENT => Event::Node {
                    anchor: anchor(data.sequence_start.anchor),
                    collection: true,
                },
                unsafe_yaml::YAML_MAPPING_START_EVENT => Event::Node {
                    anchor: anchor(data.mapping_start.anchor),
                    collection: true,
                },
                unsafe_yaml::YAML_SEQUENCE_END_EVENT | unsafe_yaml::YAML_MAPPING_END_EVENT => {
                    Event::End
                }
                unsafe_yaml::YAML_ALIAS_EVENT => {
                    Event::Alias(anchor(data.alias.anchor).unwrap_or_default())
                }
                unsafe_yaml::YAML_STREAM_END_EVENT => {
                    self.done = true;
                    Event::Other
                }
                _ => Event::Other,
            };
            let mark = (*event).start_mark;
            unsafe_yaml::yaml_event_delete(event);
            Some((kind, mark.line + 1, mark.column + 1))
        }
    }
}

impl Drop for Parser<'_> {
    fn drop(&mut self) {
        // SAFETY: the parser was initialised in `new` and is deleted once.
        unsafe { unsafe_yaml::yaml_parser_delete(self.raw.as_mut_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values of a document: every scalar, sequence and mapping, aliases expanded.
    #[test]
    fn aliases_count_their_anchors_values() {
        let mut counter = Counter::default();
        let text = "a: &x [1, 2, 3]\nb: [*x, *x]\n";
        let mut parser = Parser::new(text.as_bytes()).unwrap();
        while let Some(event) = parser.next() {
            counter.take(event).unwrap();
        }
        // The mapping, 2 keys, the anchored list and its 3 values, the list of two aliases
        // and the 4 values each alias repeats.
        assert_eq!(counter.values, 1 + 2 + 4 + 1 + 8);
    }

    /// Depth counts what an alias repeats; an alias inside its own anchor is refused.
    #[test]
    fn aliases_count_their_anchors_depth() {
        let nested = |levels: usize| format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
        // 2 levels (the mapping and b's list) + 127 repeated: 129.
        let text = format!("a: &x {}\nb: [*x]\n", nested(127));
        let refusal = check(&text).unwrap_err();
        assert_eq!((refusal.line, refusal.column), (2, 5), "{refusal:?}");
        assert!(check(&format!("a: &x {}\nb: *x\n", nested(127))).is_ok());
        let refusal = check("a: &x [1, *x]\n").unwrap_err();
        assert!(
            refusal.message.contains("inside the node it names"),
            "{refusal:?}"
        );
    }
}
