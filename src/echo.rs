//! User text echoed in a message, cut to a length a terminal shows.
//!
//! A message may quote what the user wrote (a field of a shard's `results.csv`, a value of a
//! manifest); a field of 20 MB quoted whole floods the terminal and hides the message. Every
//! such quote goes through [`excerpt`] or [`quoted`], which keep the first [`EXCERPT_CHARS`]
//! characters and say how long the whole was.

/// At most this many characters of a user's text in a message.
pub const EXCERPT_CHARS: usize = 80;

/// `text` cut after [`EXCERPT_CHARS`] characters, and its length in bytes if it was cut.
fn cut(text: &str) -> (&str, Option<usize>) {
    match text.char_indices().nth(EXCERPT_CHARS) {
        None => (text, None),
        Some((end, _)) => (&text[..end], Some(text.len())),
    }
}

/// `text` as it is if it has at most [`EXCERPT_CHARS`] characters, else its first
/// [`EXCERPT_CHARS`] followed by `… (N bytes)`, N the length of the whole.
pub fn excerpt(text: &str) -> String {
    match cut(text) {
        (kept, None) => kept.to_string(),
        (kept, Some(length)) => format!("{kept}… ({length} bytes)"),
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

    /// A 20 MB text is cut to 80 characters and its length said; a text of 80 characters,
    /// multi-byte ones included, is kept whole.
    #[test]
    fn long_text_is_cut_and_its_length_given() {
        assert_eq!(excerpt("short"), "short");
        assert_eq!(quoted("a\"b"), r#""a\"b""#);
        let exact = "é".repeat(EXCERPT_CHARS);
        assert_eq!(excerpt(&exact), exact);
        let long = "x".repeat(20_000_000);
        let kept = "x".repeat(EXCERPT_CHARS);
        assert_eq!(excerpt(&long), format!("{kept}… (20000000 bytes)"));
        assert_eq!(quoted(&long), format!("\"{kept}\"… (20000000 bytes)"));
    }
}
