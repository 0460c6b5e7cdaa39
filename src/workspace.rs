//! One directory per `crashsim` invocation, holding every seed's directory,
//! and the sweep of those that a killed run left behind.
//!
//! A workspace is `<parent>/crashsim-run-<pid>-XXXXXX/` with a file `lock`
//! that its process holds locked (`flock(LOCK_EX)`) for the workspace's
//! whole life. The kernel releases the lock when the process dies, however
//! it dies (SIGKILL and the OOM killer included), so "the lock can be taken"
//! proves the owner is gone, whatever process now has its pid. The workspace
//! is created under a dot-name and renamed into place with its lock already
//! held: a `crashsim-run-*` directory never exists unlocked while its owner
//! lives.
//!
//! Dropping a [`Workspace`] removes it; a second SIGINT or SIGTERM removes it
//! too (it is registered with [`crate::interrupt::guard_dir`]);
//! [`sweep_stale`] removes those left by processes that could do neither.
//! Directories of the older naming (`crashsim-<label>-<seed>-XXXXXX`, made
//! directly in the work directory, without a lock) cannot be proven stale:
//! [`legacy`] lists them. [`Workspace::keep`] moves a seed's directory out of
//! the workspace (`--keep-failed`), so that it survives the workspace.

use std::fs::{self, File};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::interrupt::{self, DirGuard};

/// The prefix of a workspace's name.
pub const RUN_PREFIX: &str = "crashsim-run-";
/// The prefix of a seed directory kept by [`Workspace::keep`].
pub const KEPT_PREFIX: &str = "crashsim-kept-";
/// The prefix every directory crashsim makes in a work directory shares.
const PREFIX: &str = "crashsim-";
/// The lock file inside a workspace.
const LOCK: &str = "lock";

/// A run's directory under the work directory; removed when dropped.
#[derive(Debug)]
pub struct Workspace {
    path: PathBuf,
    parent: PathBuf,
    /// Holds the `flock` for as long as the workspace lives.
    _lock: File,
    /// Unregistered after the directory is removed (fields drop after `drop`).
    _guard: DirGuard,
}

impl Workspace {
    /// Creates `parent/crashsim-run-<pid>-XXXXXX/` with its lock held, and
    /// registers it for removal at a second signal. `parent` must exist.
    pub fn create(parent: &Path) -> io::Result<Workspace> {
        let parent = std::path::absolute(parent)?;
        let pid = std::process::id();
        // A name is taken only by a leftover of a process with our pid and
        // the same random part: another name is drawn.
        for _ in 0..16 {
            let staging = tempfile::Builder::new()
                .prefix(&format!(".{RUN_PREFIX}{pid}-"))
                .rand_bytes(6)
                .tempdir_in(&parent)?;
            let lock = File::options()
                .read(true)
                .write(true)
                .create_new(true)
                .open(staging.path().join(LOCK))?;
            if !try_lock(&lock)? {
                return Err(io::Error::other("a lock file no one else can know of is locked"));
            }
            let name = staging.path().file_name().and_then(|name| name.to_str()).unwrap_or("");
            let path = parent.join(name.trim_start_matches('.'));
            match fs::rename(staging.path(), &path) {
                Ok(()) => {
                    // The directory is ours under its new name now.
                    let _ = staging.keep();
                    let guard = interrupt::guard_dir(path.clone());
                    return Ok(Workspace {
                        path,
                        parent,
                        _lock: lock,
                        _guard: guard,
                    });
                }
                Err(error)
                    if matches!(
                        error.kind(),
                        io::ErrorKind::AlreadyExists | io::ErrorKind::DirectoryNotEmpty
                    ) => {}
                Err(error) => return Err(error),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("no free workspace name in {}", parent.display()),
        ))
    }

    /// The workspace's directory (absolute): where seeds' directories go.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves `seed_dir` (a directory in this workspace) out of it into the
    /// work directory, as `crashsim-kept-<label>-<seed>-XXXX`, so that it
    /// outlives the workspace; returns its new path. `<label>-<seed>` is
    /// taken from the name `crashsim-<label>-<seed>-XXXXXX` of a seed's
    /// directory (any other name is kept whole).
    pub fn keep(&self, seed_dir: &Path) -> io::Result<PathBuf> {
        let name = seed_dir.file_name().and_then(|name| name.to_str()).unwrap_or("seed");
        // An empty directory reserves a free name; renaming a directory onto
        // an empty one replaces it, so no other process can take the name.
        let target = tempfile::Builder::new()
            .prefix(&format!("{KEPT_PREFIX}{}-", kept_stem(name)))
            .rand_bytes(4)
            .tempdir_in(&self.parent)?;
        fs::rename(seed_dir, target.path())?;
        Ok(target.keep())
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// `<label>-<seed>` of `crashsim-<label>-<seed>-XXXXXX`; other names whole.
fn kept_stem(name: &str) -> &str {
    let name = name.strip_prefix(PREFIX).unwrap_or(name);
    match name.rsplit_once('-') {
        Some((stem, random))
            if !stem.is_empty() && random.len() == 6 && random.bytes().all(|byte| byte.is_ascii_alphanumeric()) =>
        {
            stem
        }
        _ => name,
    }
}

/// A workspace whose process is gone, removed (or, from [`stale`], to be).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Swept {
    pub path: PathBuf,
    /// What it took on disk (or in RAM, on tmpfs): allocated blocks.
    pub bytes: u64,
}

/// Removes every workspace in `parent` whose lock can be taken (its process
/// is gone) and says which, in name order. Workspaces whose lock is held are
/// left alone, this process's own included. Errors: `parent` cannot be read,
/// or a stale workspace cannot be removed (the error names it).
pub fn sweep_stale(parent: &Path) -> io::Result<Vec<Swept>> {
    sweep(parent, true)
}

/// What [`sweep_stale`] would remove now, without removing it.
pub fn stale(parent: &Path) -> io::Result<Vec<Swept>> {
    sweep(parent, false)
}

fn sweep(parent: &Path, remove: bool) -> io::Result<Vec<Swept>> {
    let mut swept = Vec::new();
    for path in crashsim_dirs(parent)? {
        if !is_named(&path, RUN_PREFIX) {
            continue;
        }
        // No lock file: not a workspace, or one being removed right now.
        let Ok(lock) = File::open(path.join(LOCK)) else {
            continue;
        };
        // Held, or cannot be told (a file system without locks): leave it.
        if !try_lock(&lock).unwrap_or(false) {
            continue;
        }
        let bytes = disk_usage(&path);
        if remove {
            match fs::remove_dir_all(&path) {
                Ok(()) => {}
                // Another sweep removed it first.
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                Err(error) => {
                    return Err(io::Error::new(
                        error.kind(),
                        format!("removing {}: {error}", path.display()),
                    ));
                }
            }
        }
        swept.push(Swept { path, bytes });
    }
    Ok(swept)
}

/// The `crashsim-*` directories in `parent` that cannot be proven stale,
/// in name order: seed directories of the older naming (made without a
/// workspace, so without a lock) and anything else without a lock file.
/// Workspaces (see [`sweep_stale`]) and kept seed directories
/// (`crashsim-kept-*`, kept on purpose) are not listed.
pub fn legacy(parent: &Path) -> io::Result<Vec<PathBuf>> {
    Ok(crashsim_dirs(parent)?
        .into_iter()
        .filter(|path| !is_named(path, KEPT_PREFIX))
        .filter(|path| !(is_named(path, RUN_PREFIX) && path.join(LOCK).is_file()))
        .collect())
}

/// The space a directory tree takes: allocated blocks of everything in it,
/// symbolic links not followed, unreadable parts skipped (as `du` counts).
pub fn disk_usage(path: &Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![path.to_path_buf()];
    while let Some(path) = pending.pop() {
        let Ok(metadata) = fs::symlink_metadata(&path) else {
            continue;
        };
        total += metadata.blocks() * 512;
        if metadata.is_dir()
            && let Ok(entries) = fs::read_dir(&path)
        {
            pending.extend(entries.flatten().map(|entry| entry.path()));
        }
    }
    total
}

/// The directories (not symbolic links) in `parent` named `crashsim-*`,
/// sorted by name.
fn crashsim_dirs(parent: &Path) -> io::Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for entry in fs::read_dir(parent)? {
        let entry = entry?;
        if entry.file_name().to_str().is_some_and(|name| name.starts_with(PREFIX))
            && entry.file_type().is_ok_and(|kind| kind.is_dir())
        {
            dirs.push(entry.path());
        }
    }
    dirs.sort();
    Ok(dirs)
}

fn is_named(path: &Path, prefix: &str) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with(prefix))
}

/// Takes an exclusive `flock` on `file` without waiting: false if another
/// open file holds one (another process, or this one through another open).
fn try_lock(file: &File) -> io::Result<bool> {
    loop {
        // SAFETY: flock on a descriptor `file` keeps open; no memory passed.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let error = io::Error::last_os_error();
        match error.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(false),
            _ => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests;
