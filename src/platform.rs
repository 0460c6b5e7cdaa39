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
}
