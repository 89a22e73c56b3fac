//! Reading a file a user names, in bounded memory and time.
//!
//! Every file the program reads because a user named it (a scenario, a sweep's shard files) is
//! read through [`read_bounded_file`]: it refuses anything but a regular file before reading a
//! byte (a FIFO would block forever, `/dev/zero` and `/dev/urandom` never end), and reads at most
//! `limit` bytes, so a file linked to something huge costs `limit` and a clear error, never an
//! allocation as large as the file. The FIFO is opened without blocking (`O_NONBLOCK`), and the
//! kind is taken from the open handle, so that the file checked is the file read.

use std::fmt;
use std::fs::OpenOptions;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a file could not be read whole.
#[derive(Debug)]
pub enum BoundedReadError {
    /// It could not be opened or read.
    Io(io::Error),
    /// It is not a regular file: what it is instead ("a folder", "a FIFO", ...).
    NotRegular(&'static str),
    /// It has more than `limit` bytes.
    TooLarge {
        /// The most bytes that were to be read.
        limit: u64,
    },
}

impl fmt::Display for BoundedReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BoundedReadError::Io(error) => error.fmt(f),
            BoundedReadError::NotRegular(kind) => write!(
                f,
                "it is {kind}, not a regular file; only regular files are read (a device or a pipe may never end)"
            ),
            BoundedReadError::TooLarge { limit } => {
                write!(f, "it is larger than {}", byte_size(*limit))
            }
        }
    }
}

impl std::error::Error for BoundedReadError {}

/// `bytes` as a message says it: `4 MiB` for a whole number of MiB, else `1234 bytes`.
pub fn byte_size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// The whole content of the regular file at `path`, if it has at most `limit` bytes.
pub fn read_bounded_file(path: &Path, limit: u64) -> Result<Vec<u8>, BoundedReadError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(BoundedReadError::Io)?;
    let kind = file.metadata().map_err(BoundedReadError::Io)?.file_type();
    if !kind.is_file() {
        return Err(BoundedReadError::NotRegular(if kind.is_dir() {
            "a folder"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else {
            "not a file"
        }));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(BoundedReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(BoundedReadError::TooLarge { limit });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device, a folder and a FIFO are refused before a byte is read (the FIFO without
    /// blocking: nobody writes to it); a file one byte over the limit is refused, one at the
    /// limit is read whole.
    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let folder =
            std::env::temp_dir().join(format!("retrystorm-bounded-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        let message = |path: &Path| read_bounded_file(path, 10).unwrap_err().to_string();
        assert!(message(Path::new("/dev/zero")).contains("a device"));
        assert!(message(&folder).contains("a folder"));
        let fifo = folder.join("fifo");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        assert!(message(&fifo).contains("a FIFO"));
        let file = folder.join("file");
        std::fs::write(&file, b"0123456789").unwrap();
        assert_eq!(read_bounded_file(&file, 10).unwrap(), b"0123456789");
        let error = read_bounded_file(&file, 9).unwrap_err().to_string();
        assert_eq!(error, "it is larger than 9 bytes");
        std::fs::remove_dir_all(folder).unwrap();
    }
}
