//! Facts about the build and the machine that reports print: the git commit,
//! SQLite's version, and which filesystem a directory lives on.

use std::path::Path;

/// The git commit crashsim was built from (`-dirty` if it had local changes).
pub fn git_commit() -> &'static str {
    env!("CRASHSIM_GIT_COMMIT")
}

/// A commit as people read it: 12 hex digits, keeping the `-dirty` mark
/// (a dirty build's seeds may not replay against the commit alone).
pub fn short_commit(commit: &str) -> String {
    let (hash, dirty) = match commit.strip_suffix("-dirty") {
        Some(hash) => (hash, "-dirty"),
        None => (commit, ""),
    };
    format!("{}{dirty}", hash.get(..12).unwrap_or(hash))
}

/// The version of the bundled SQLite.
pub fn sqlite_version() -> &'static str {
    rusqlite::version()
}

/// The filesystem type of the mount holding `path` (`tmpfs`, `ext4`, …),
/// from `/proc/self/mounts`; `"unknown"` where that cannot be read.
pub fn filesystem_of(path: &Path) -> String {
    let Ok(path) = path.canonicalize() else {
        return "unknown".to_string();
    };
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return "unknown".to_string();
    };
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let _device = fields.next()?;
            let mount_point = fields.next()?.replace("\\040", " ");
            let fs_type = fields.next()?;
            path.starts_with(&mount_point)
                .then(|| (mount_point.len(), fs_type.to_string()))
        })
        .max_by_key(|(length, _)| *length)
        .map(|(_, fs_type)| fs_type)
        .unwrap_or_else(|| "unknown".to_string())
}

/// Free and total bytes of the filesystem holding `path` (`statvfs`), for
/// telling a full work directory apart; `None` where it cannot be read.
pub fn space_of(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a NUL-terminated string and `stats` a valid out-pointer.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stats) } != 0 {
        return None;
    }
    let block = stats.f_frsize as u64;
    Some((stats.f_bavail as u64 * block, stats.f_blocks as u64 * block))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_commit_keeps_the_dirty_mark() {
        let hash = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(short_commit(hash), "0123456789ab");
        assert_eq!(short_commit(&format!("{hash}-dirty")), "0123456789ab-dirty");
        assert_eq!(short_commit("unknown"), "unknown");
    }

    #[test]
    fn the_space_of_a_directory_is_read() {
        let (free, total) = space_of(Path::new(".")).expect("statvfs works here");
        assert!(free <= total && total > 0);
        assert_eq!(space_of(Path::new("/no/such/dir")), None);
    }
}
