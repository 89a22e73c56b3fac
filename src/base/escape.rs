//! User text in what the program prints: control characters never sent raw to a terminal, long
//! text cut to a length a terminal shows, and markup characters escaped in HTML and SVG
//! ([`html`]).
//!
//! Errors echo what the user wrote (a field path of an imported config, a key, a file name), and
//! a key containing `ESC[2J` would clear the terminal, one containing a newline would print a
//! line of its own that looks like the program's. Two functions, one rule (a control character
//! is written as Rust writes it in a string literal: `\u{1b}`, `\n`, `\t`):
//!
//! - [`terminal`] is applied once, where the command line prints an error or a warning
//!   (`cli::report`), to the whole message: it covers every error, whoever wrote it, and keeps
//!   the newlines that are the message's own line breaks.
//! - [`user_text`] is applied where user text is quoted into a message, and escapes newlines
//!   too, so that quoted text can never start a line of its own.
//!
//! A message may also quote a field of a file the user gave (a value of a shard's
//! `results.csv`, a path of a manifest); a field of 20 MB quoted whole floods the terminal and
//! hides the message. Such quotes go through [`excerpt`] or [`quoted`], which keep the first
//! [`EXCERPT_CHARS`] characters and say how long the whole was.

use std::borrow::Cow;

/// `message` with every control character but the newline escaped.
pub fn terminal(message: &str) -> Cow<'_, str> {
    escape(message, |c| c.is_control() && c != '\n')
}

/// `text` with every control character escaped, the newline included.
pub fn user_text(text: &str) -> Cow<'_, str> {
    escape(text, char::is_control)
}

fn escape(text: &str, escaped: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escaped(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` safe inside HTML or SVG text and attribute values.
pub fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// At most this many characters of a user's text in a message.
pub const EXCERPT_CHARS: usize = 80;

/// `text` cut after [`EXCERPT_CHARS`] characters, and its length in bytes if it was cut.
fn cut(text: &str) -> (&str, Option<usize>) {
    match text.char_indices().nth(EXCERPT_CHARS) {
        None => (text, None),
        Some((end, _)) => (&text[..end], Some(text.len())),
    }
}

/// `text` as it is (control characters escaped, as [`user_text`]) if it has at most
/// [`EXCERPT_CHARS`] characters, else its first [`EXCERPT_CHARS`] followed by `… (N bytes)`,
/// N the length of the whole.
pub fn excerpt(text: &str) -> String {
    match cut(text) {
        (kept, None) => user_text(kept).into_owned(),
        (kept, Some(length)) => format!("{}… ({length} bytes)", user_text(kept)),
    }
}

/// [`excerpt`] in quotes, as `{:?}` quotes a string (control characters escaped); the length
/// of a text that was cut follows the closing quote: `"xxx…"… (20000000 bytes)`.
pub fn quoted(text: &str) -> String {
    match cut(text) {
        (kept, None) => format!("{kept:?}"),
        (kept, Some(length)) => format!("{kept:?}… ({length} bytes)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An escape sequence is shown, not obeyed; the message's own newlines stay; quoted text
    /// cannot break a line; text without control characters is not copied.
    #[test]
    fn control_characters_are_shown_not_sent() {
        assert_eq!(terminal("a\u{1b}[2Jb\nc\td"), "a\\u{1b}[2Jb\nc\\td");
        assert_eq!(user_text("x\nretrystorm: ok\r"), "x\\nretrystorm: ok\\r");
        assert_eq!(user_text("émoji ✓"), "émoji ✓");
        assert!(matches!(terminal("plain"), Cow::Borrowed(_)));
    }

    /// A 20 MB text is cut to 80 characters and its length said; a text of 80 characters,
    /// multi-byte ones included, is kept whole; an excerpt shows control characters escaped.
    #[test]
    fn long_text_is_cut_and_its_length_given() {
        assert_eq!(excerpt("short"), "short");
        assert_eq!(excerpt("a\u{1b}[2J"), "a\\u{1b}[2J");
        assert_eq!(quoted("a\"b"), r#""a\"b""#);
        let exact = "é".repeat(EXCERPT_CHARS);
        assert_eq!(excerpt(&exact), exact);
        let long = "x".repeat(20_000_000);
        let kept = "x".repeat(EXCERPT_CHARS);
        assert_eq!(excerpt(&long), format!("{kept}… (20000000 bytes)"));
        assert_eq!(quoted(&long), format!("\"{kept}\"… (20000000 bytes)"));
    }
}
