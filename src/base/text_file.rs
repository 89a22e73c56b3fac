//! Reading a file the user names (a scenario, an imported config): a regular file of bounded
//! size, in UTF-8, or an error saying which of the three it is not.
//!
//! Every input file goes through [`read_text`], so none can make the program read without end:
//! `/dev/zero`, `/dev/urandom` or a 1 GB file would otherwise be read whole into memory, and a
//! FIFO would block forever. The file is opened without blocking (`O_NONBLOCK`: opening a FIFO
//! for reading would otherwise wait for a writer), and its kind is taken from the open handle,
//! so that the file checked is the file read; the read itself stops one byte past the limit
//! (`take(limit + 1)`), so a file that grows after the check costs at most the limit too.
//! Files that are not text (a sweep's shard files are read as bytes, then parsed) go through
//! [`read_bytes`], under the same rules.

use std::fmt;
use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a file could not be read as text.
#[derive(Debug)]
pub enum TextFileError {
    /// Not a regular file: a directory, a FIFO, a socket or a device such as `/dev/zero`.
    NotRegular(&'static str),
    /// Longer than the limit, in bytes.
    TooLarge(u64),
    /// Not UTF-8, from the first invalid byte (line and column count from 1).
    NotUtf8 { line: usize, column: usize },
    /// The file could not be opened or read.
    Io(std::io::Error),
}

impl fmt::Display for TextFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TextFileError::NotRegular(kind) => {
                write!(f, "{kind}, not a regular file; give the path of a file")
            }
            TextFileError::TooLarge(limit) => {
                write!(f, "larger than {}", byte_size(*limit))
            }
            TextFileError::NotUtf8 { line, column } => {
                write!(f, "not UTF-8 text at line {line}, column {column}")
            }
            TextFileError::Io(error) => error.fmt(f),
        }
    }
}

/// A size in bytes, in words: `4 MiB` for a whole number of MiB, else `1234 bytes`.
pub fn byte_size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// Reads the regular file at `path`, of at most `limit` bytes, whole.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, TextFileError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(TextFileError::Io)?;
    let kind = file.metadata().map_err(TextFileError::Io)?.file_type();
    if !kind.is_file() {
        return Err(TextFileError::NotRegular(describe(kind)));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(TextFileError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(TextFileError::TooLarge(limit));
    }
    Ok(bytes)
}

/// Reads the regular file at `path`, of at most `limit` bytes, as UTF-8 text.
pub fn read_text(path: &Path, limit: u64) -> Result<String, TextFileError> {
    String::from_utf8(read_bytes(path, limit)?).map_err(|error| {
        let valid = &error.as_bytes()[..error.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|byte| **byte == b'\n').count() + 1;
        let line_start = valid
            .iter()
            .rposition(|byte| *byte == b'\n')
            .map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&valid[line_start..])
            .chars()
            .count()
            + 1;
        TextFileError::NotUtf8 { line, column }
    })
}

/// What a file that is not a regular file is.
fn describe(kind: std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device, a directory and a FIFO are refused before a byte is read (the FIFO without
    /// blocking, though nobody writes to it); a file over the limit is refused after reading one
    /// byte past it, one at the limit is read whole.
    #[test]
    fn only_bounded_regular_files_are_read() {
        assert!(matches!(
            read_text(Path::new("/dev/zero"), 10),
            Err(TextFileError::NotRegular("a device"))
        ));
        assert!(matches!(
            read_text(Path::new("/"), 10),
            Err(TextFileError::NotRegular("a directory"))
        ));
        let path = std::env::temp_dir().join("retrystorm-text-file-limit.txt");
        std::fs::write(&path, "0123456789").unwrap();
        assert_eq!(read_text(&path, 10).unwrap(), "0123456789");
        assert!(matches!(
            read_text(&path, 9),
            Err(TextFileError::TooLarge(9))
        ));
        assert_eq!(read_bytes(&path, 10).unwrap(), b"0123456789");
        let fifo = std::env::temp_dir().join(format!("retrystorm-fifo-{}", std::process::id()));
        let _ = std::fs::remove_file(&fifo);
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            read_text(&fifo, 10),
            Err(TextFileError::NotRegular("a FIFO (named pipe)"))
        ));
        std::fs::remove_file(&fifo).unwrap();
        std::fs::write(&path, b"a\nb\xffc").unwrap();
        assert!(matches!(
            read_text(&path, 10),
            Err(TextFileError::NotUtf8 { line: 2, column: 2 })
        ));
    }
}
