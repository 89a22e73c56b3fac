//! A result folder written as a whole, so that no interrupt, full disk or error leaves a folder
//! that mixes two runs.
//!
//! Every file of a run goes into a fresh staging folder beside the result, `.NAME.partial-…`,
//! whose name holds the host, the process and 64 random bits: nobody can plant anything at it
//! in advance, and [`StagedFolder::create`] makes it with `mkdir`, which fails rather than
//! follow a link. Files inside are created with `create_new`. When everything is written and
//! flushed, [`StagedFolder::commit`] swaps the staging folder with the result in one
//! `renameat2(RENAME_EXCHANGE)`, so that at every instant `NAME` is either the earlier result,
//! whole, or the new one; the earlier one, now at the staging name, is then removed. A
//! filesystem without that call (some network filesystems) gets two renames instead, with a
//! moment in between when `NAME` is absent but never mixed.
//!
//! A staging folder is removed when its [`StagedFolder`] is dropped without a commit (an
//! error), by the handler [`remove_on_signals`] installs (SIGINT, SIGTERM, SIGHUP), and, after a
//! SIGKILL or a power cut, by the next run that writes the same result on the same host, once
//! the process that made it is gone. One that cannot be removed (the earlier result after a
//! commit, a leftover of a dead process: files someone made undeletable) is never left in
//! silence: [`StagedFolder::commit`] returns it as a [`Leftover`], with its path and what to do,
//! for the caller to warn about, and the next run tries again.
//!
//! Because a commit replaces the whole folder, an existing `NAME` is replaced only if it is a
//! result (it holds the file the caller names as the mark of one, or nothing at all): pointing
//! `--out` at a folder of other files is an error, not a deletion.

use std::collections::hash_map::RandomState;
use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Staging folders of this process not yet committed or removed, for the signal handler.
static UNCOMMITTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// What marks the staging folders of a result named `name`.
fn staging_prefix(name: &str) -> String {
    format!(".{name}.partial-")
}

/// A staging folder for the result at `target`; see the [module documentation](self).
#[derive(Debug)]
pub struct StagedFolder {
    staging: PathBuf,
    target: PathBuf,
    /// The file whose presence shows that an existing `target` is a result this may replace.
    mark: &'static str,
    committed: bool,
    /// Leftovers of dead processes that could not be removed when this was created.
    leftovers: Vec<Leftover>,
}

/// A hidden staging folder that could not be removed, and why: it stays beside the result until
/// someone removes it.
#[derive(Debug)]
pub struct Leftover {
    /// The folder.
    pub path: PathBuf,
    /// Why it could not be removed.
    pub error: io::Error,
}

impl std::fmt::Display for Leftover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "could not remove {}, an earlier result or an interrupted one ({}); it is hidden and takes space until removed: make it writable and remove it (`rm -rf {}`), and the next run will try again",
            self.path.display(),
            self.error,
            self.path.display()
        )
    }
}

/// Removes a folder and everything in it.
type Remover = fn(&Path) -> io::Result<()>;

/// The remover of every staging folder outside tests.
fn remove_folder(path: &Path) -> io::Result<()> {
    fs::remove_dir_all(path)
}

impl StagedFolder {
    /// Makes an empty staging folder beside `target`, creating `target`'s parent if needed, and
    /// removes staging folders that dead processes of this host left for the same target.
    /// Refuses a `target` that cannot be replaced as a whole: a link, a file, or a folder that
    /// holds other things but not `mark`.
    pub fn create(target: &Path, mark: &'static str) -> io::Result<StagedFolder> {
        Self::create_removing(target, mark, remove_folder)
    }

    fn create_removing(
        target: &Path,
        mark: &'static str,
        remove: Remover,
    ) -> io::Result<StagedFolder> {
        let (parent, name) = split(target)?;
        fs::create_dir_all(parent).map_err(|error| with_path(error, parent))?;
        check_replaceable(target, mark)?;
        let leftovers = remove_leftovers(parent, &name, remove);
        let prefix = format!(
            "{}{}-{}-",
            staging_prefix(&name),
            host(),
            std::process::id()
        );
        let mut registry = uncommitted();
        loop {
            let staging = parent.join(format!("{prefix}{:016x}", random_u64()));
            match fs::create_dir(&staging) {
                Ok(()) => {
                    registry.push(staging.clone());
                    return Ok(StagedFolder {
                        staging,
                        target: target.to_path_buf(),
                        mark,
                        committed: false,
                        leftovers,
                    });
                }
                // Something is already there (never followed): draw another name.
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(with_path(error, &staging)),
            }
        }
    }

    /// Where the files go until the commit.
    pub fn path(&self) -> &Path {
        &self.staging
    }

    /// Where the result will be.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Writes a new file `name` in the staging folder and flushes it to disk.
    pub fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self.staging.join(name);
        (|| {
            let mut file = create_new(&path)?;
            file.write_all(bytes)?;
            file.sync_all()
        })()
        .map_err(|error| with_path(error, &self.target.join(name)))
    }

    /// Puts the staged files in place of the result as one change and removes the earlier
    /// result. The result is in place when this returns `Ok`; what could not be removed, the
    /// earlier result or a dead process's leftovers, comes back for the caller to warn about.
    pub fn commit(self) -> io::Result<Vec<Leftover>> {
        self.commit_removing(remove_folder)
    }

    fn commit_removing(mut self, remove: Remover) -> io::Result<Vec<Leftover>> {
        File::open(&self.staging)
            .and_then(|folder| folder.sync_all())
            .map_err(|error| with_path(error, &self.staging))?;
        // Held across the swap so that a signal cannot remove a folder half-way through it.
        let mut registry = uncommitted();
        // Checked again: the target may have changed while the run was writing.
        check_replaceable(&self.target, self.mark)?;
        swap_in(&self.staging, &self.target).map_err(|error| with_path(error, &self.target))?;
        // The staging name now holds the earlier result, or nothing.
        let mut leftovers = std::mem::take(&mut self.leftovers);
        if fs::symlink_metadata(&self.staging).is_ok()
            && let Err(error) = remove(&self.staging)
        {
            leftovers.push(Leftover {
                path: self.staging.clone(),
                error,
            });
        }
        registry.retain(|path| *path != self.staging);
        drop(registry);
        self.committed = true;
        if let Some(parent) = self.target.parent() {
            let _ = File::open(parent).and_then(|folder| folder.sync_all());
        }
        Ok(leftovers)
    }
}

impl Drop for StagedFolder {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        let mut registry = uncommitted();
        let _ = fs::remove_dir_all(&self.staging);
        registry.retain(|path| *path != self.staging);
    }
}

/// Creates `path`, failing if anything, a link included, is already there.
pub fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).open(path)
}

/// Removes every uncommitted staging folder of this process when it gets SIGINT, SIGTERM or
/// SIGHUP, then exits with 128 plus the signal's number, as a shell reports a process the
/// signal killed.
pub fn remove_on_signals() -> io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let registry = uncommitted();
            for staging in registry.iter() {
                // A writer may add a file while the folder is emptied: try again.
                for _ in 0..3 {
                    if fs::remove_dir_all(staging).is_ok() || !staging.exists() {
                        break;
                    }
                }
            }
            std::process::exit(128 + signal);
        }
    });
    Ok(())
}

fn uncommitted() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    UNCOMMITTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn split(target: &Path) -> io::Result<(&Path, String)> {
    let parent = target
        .parent()
        .map(|parent| {
            if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            }
        })
        .ok_or_else(|| invalid(target, "is not a folder a result can be written to"))?;
    let name = target
        .file_name()
        .ok_or_else(|| invalid(target, "is not a folder a result can be written to"))?
        .to_string_lossy()
        .into_owned();
    Ok((parent, name))
}

/// Whether `target` may be replaced: absent, or a real folder that is empty or holds `mark`.
fn check_replaceable(target: &Path, mark: &str) -> io::Result<()> {
    let metadata = match fs::symlink_metadata(target) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(with_path(error, target)),
    };
    if metadata.file_type().is_symlink() {
        return Err(invalid(
            target,
            "is a symbolic link; results are written as a real folder and never through a link: remove the link or choose another --out",
        ));
    }
    if !metadata.is_dir() {
        return Err(invalid(
            target,
            "exists and is not a folder: remove it or choose another --out",
        ));
    }
    let is_result = fs::symlink_metadata(target.join(mark)).is_ok()
        || fs::read_dir(target)
            .map_err(|error| with_path(error, target))?
            .next()
            .is_none();
    if is_result {
        Ok(())
    } else {
        Err(invalid(
            target,
            &format!(
                "holds files but no {mark}, so it is not an earlier result; a result replaces its folder as a whole, so choose another --out or move the folder"
            ),
        ))
    }
}

/// Swaps `staging` into `target`: one exchange where the filesystem has it, else two renames.
fn swap_in(staging: &Path, target: &Path) -> io::Result<()> {
    if fs::symlink_metadata(target).is_err() {
        return fs::rename(staging, target);
    }
    match exchange(staging, target) {
        Ok(()) => Ok(()),
        Err(error) if matches!(error.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {
            // The old result moves to a staging name of ours, so a crash right here leaves it
            // for the next run to clean, and the new one takes its place.
            let old = staging.with_file_name(format!(
                "{}-old",
                staging.file_name().unwrap_or_default().to_string_lossy()
            ));
            fs::rename(target, &old)?;
            fs::rename(staging, target)?;
            fs::rename(&old, staging)
        }
        Err(error) => Err(error),
    }
}

/// `renameat2(RENAME_EXCHANGE)`: both paths exist before and after, their contents swapped.
fn exchange(first: &Path, second: &Path) -> io::Result<()> {
    let c_path = |path: &Path| {
        CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
    };
    let (first, second) = (c_path(first)?, c_path(second)?);
    // SAFETY: both pointers are valid NUL-terminated strings that outlive the call.
    let result = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            first.as_ptr(),
            libc::AT_FDCWD,
            second.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Removes the staging folders for `name` in `parent` that this host's processes left and that
/// are no longer running, and returns those that could not be removed. Another host's are left
/// alone: their process may still be writing.
fn remove_leftovers(parent: &Path, name: &str, remove: Remover) -> Vec<Leftover> {
    let mut leftovers = Vec::new();
    let Ok(entries) = fs::read_dir(parent) else {
        return leftovers;
    };
    let prefix = format!("{}{}-", staging_prefix(name), host());
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(rest) = file_name
            .to_str()
            .and_then(|text| text.strip_prefix(&prefix))
        else {
            continue;
        };
        let Some(pid) = rest
            .split('-')
            .next()
            .and_then(|pid| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        if pid != std::process::id() as libc::pid_t
            && !alive(pid)
            && let Err(error) = remove(&entry.path())
        {
            leftovers.push(Leftover {
                path: entry.path(),
                error,
            });
        }
    }
    leftovers
}

/// Whether a process `pid` runs on this host (one that exists but is not ours counts).
fn alive(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// This host's name, reduced to characters safe in a file name.
fn host() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length.
    let result = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    let raw = if result == 0 {
        let end = buffer.iter().position(|&byte| byte == 0).unwrap_or(0);
        String::from_utf8_lossy(&buffer[..end]).into_owned()
    } else {
        String::new()
    };
    let safe: String = raw
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '.')
        .take(64)
        .collect();
    if safe.is_empty() {
        "host".to_string()
    } else {
        safe
    }
}

/// 64 bits nobody can predict: the standard library keys its hash maps from the operating
/// system's random source; the clock and process id are mixed in for good measure.
fn random_u64() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos()),
    );
    hasher.finish()
}

fn invalid(path: &Path, message: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{} {message}", path.display()),
    )
}

fn with_path(error: io::Error, path: &Path) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(test: &str) -> PathBuf {
        let folder =
            std::env::temp_dir().join(format!("retrystorm-staging-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&folder);
        fs::create_dir_all(&folder).unwrap();
        folder
    }

    fn names(folder: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(folder)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A commit replaces the whole folder: a file of the earlier result that the new one does
    /// not write is gone, and nothing of the staging remains.
    #[test]
    fn a_commit_replaces_the_earlier_result_as_a_whole() {
        let root = scratch("replace");
        let target = root.join("result");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("summary.json"), "old").unwrap();
        fs::write(target.join("trace.csv"), "old").unwrap();
        let staged = StagedFolder::create(&target, "summary.json").unwrap();
        staged.write("summary.json", b"new").unwrap();
        staged.commit().unwrap();
        assert_eq!(names(&target), ["summary.json"]);
        assert_eq!(fs::read(target.join("summary.json")).unwrap(), b"new");
        assert_eq!(names(&root), ["result"]);
        fs::remove_dir_all(root).unwrap();
    }

    /// An error before the commit (the folder is dropped) leaves the earlier result untouched
    /// and no staging folder behind.
    #[test]
    fn a_drop_without_commit_keeps_the_earlier_result() {
        let root = scratch("drop");
        let target = root.join("result");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("summary.json"), "old").unwrap();
        {
            let staged = StagedFolder::create(&target, "summary.json").unwrap();
            staged.write("summary.json", b"new").unwrap();
        }
        assert_eq!(names(&root), ["result"]);
        assert_eq!(fs::read(target.join("summary.json")).unwrap(), b"old");
        fs::remove_dir_all(root).unwrap();
    }

    /// A link planted inside the staging folder at a file's name is not written through:
    /// `create_new` refuses it, and the link's target keeps its bytes.
    #[test]
    fn a_planted_link_is_never_written_through() {
        let root = scratch("link");
        let victim = root.join("victim");
        fs::write(&victim, "precious").unwrap();
        let staged = StagedFolder::create(&root.join("result"), "summary.json").unwrap();
        std::os::unix::fs::symlink(&victim, staged.path().join("summary.json")).unwrap();
        let error = staged.write("summary.json", b"new").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        drop(staged);
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        fs::remove_dir_all(root).unwrap();
    }

    /// A result folder that is a link, or a folder of other files, is refused, not replaced.
    #[test]
    fn links_and_foreign_folders_are_refused() {
        let root = scratch("refuse");
        let elsewhere = root.join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::write(elsewhere.join("notes.txt"), "mine").unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("linked")).unwrap();
        let error = StagedFolder::create(&root.join("linked"), "summary.json").unwrap_err();
        assert!(error.to_string().contains("is a symbolic link"), "{error}");
        let error = StagedFolder::create(&elsewhere, "summary.json").unwrap_err();
        assert!(error.to_string().contains("no summary.json"), "{error}");
        assert_eq!(names(&elsewhere), ["notes.txt"]);
        fs::remove_dir_all(root).unwrap();
    }

    /// An earlier result that cannot be removed after the commit (a file someone made
    /// undeletable; a remover that fails stands for it, as root may remove anything) is not
    /// left in silence: the commit still puts the new result in place and returns the hidden
    /// folder's path with what to do, and the next staging of the same result, once this
    /// process is gone, tries again and reports it again (issue 23: it stayed forever, exit 0).
    #[test]
    fn an_earlier_result_that_cannot_be_removed_is_reported() {
        let root = scratch("stuck");
        let target = root.join("result");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("summary.json"), "old").unwrap();
        let refuse: Remover = |_| {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "Operation not permitted",
            ))
        };
        let staged = StagedFolder::create_removing(&target, "summary.json", refuse).unwrap();
        staged.write("summary.json", b"new").unwrap();
        let leftovers = staged.commit_removing(refuse).unwrap();
        assert_eq!(fs::read(target.join("summary.json")).unwrap(), b"new");
        let [leftover] = &leftovers[..] else {
            panic!("{leftovers:?}")
        };
        let hidden = names(&root)
            .into_iter()
            .find(|name| name.starts_with(".result.partial-"))
            .expect("the earlier result, hidden");
        assert_eq!(leftover.path, root.join(&hidden));
        let message = leftover.to_string();
        assert!(
            message.contains(&format!(
                "could not remove {}",
                root.join(&hidden).display()
            )),
            "{message}"
        );
        assert!(
            message.contains("Operation not permitted") && message.contains("rm -rf"),
            "{message}"
        );
        // The next run of a process that is gone finds it (the pid in its name is ours, so it
        // is renamed to one of a dead process first).
        let dead = hidden.replace(&format!("-{}-", std::process::id()), "-99999999-");
        fs::rename(root.join(&hidden), root.join(&dead)).unwrap();
        let staged = StagedFolder::create_removing(&target, "summary.json", refuse).unwrap();
        let leftovers = staged.commit_removing(remove_folder).unwrap();
        assert_eq!(leftovers.len(), 1, "{leftovers:?}");
        assert_eq!(leftovers[0].path, root.join(&dead));
        fs::remove_dir_all(root).unwrap();
    }

    /// A staging folder left by a process of this host that is gone (a SIGKILL) is removed by
    /// the next staging of the same result; one of a live process, or of another result, stays.
    #[test]
    fn leftovers_of_dead_processes_are_removed() {
        let root = scratch("leftovers");
        let prefix = format!("{}{}-", staging_prefix("result"), host());
        // Process ids above the kernel's pid_max (at most 2^22) cannot be running.
        let dead = root.join(format!("{prefix}99999999-0123456789abcdef"));
        let live = root.join(format!("{prefix}1-0123456789abcdef"));
        let other = root.join(format!("{}{}-99999999-00", staging_prefix("other"), host()));
        for folder in [&dead, &live, &other] {
            fs::create_dir(folder).unwrap();
        }
        let staged = StagedFolder::create(&root.join("result"), "summary.json").unwrap();
        assert!(!dead.exists());
        assert!(live.exists() && other.exists());
        staged.commit().unwrap();
        fs::remove_dir_all(root).unwrap();
    }
}
