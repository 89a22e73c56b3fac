//! Control characters in text the program prints: never sent raw to a terminal.
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
}
