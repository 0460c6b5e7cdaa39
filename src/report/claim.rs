//! A scenario's report folder, held by one run at a time.
//!
//! Folders are named by scenario, never by time, so a rerun lands in the
//! same place. That is what a CI job wants, and it has two ways to lie: a
//! passing summary beside the failing seed folders of an earlier run, and
//! two runs writing one folder at once (one run's summary beside the other's
//! seeds). So a run claims each scenario's folder before its first seed: an
//! exclusive `flock` on `<folder>/.lock` (the kernel drops it when the run
//! ends, however it ends), then the previous run's seed folders go. The
//! run removes `.lock` as it ends, while it still holds it, so no empty file
//! is left among the reports; a run killed outright leaves one, unlocked,
//! which the next run takes. A claim checks that the file it locked is
//! still the one at the path (another run may have removed it between the
//! open and the lock), and tries again if not.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A claimed folder; the claim ends when this is dropped.
#[derive(Debug)]
pub struct Claim {
    _lock: File,
    pub dir: PathBuf,
}

impl Drop for Claim {
    /// Removes `.lock` while still holding it (the file closes after this).
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.dir.join(".lock"));
    }
}

/// Why a folder could not be claimed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error(
        "{}: another crashsim run is writing reports there; wait for it to end, or give this run its own --report DIR",
        .0.display()
    )]
    Busy(PathBuf),
    #[error("{}: {error}", .dir.display())]
    Io { dir: PathBuf, error: std::io::Error },
}

/// Claims `root/<scenario>/` for this run and removes the seed folders an
/// earlier run left in it (folders named by a number); its other files are
/// rewritten by this run.
pub fn claim(root: &Path, scenario: &str) -> Result<Claim, ClaimError> {
    let dir = root.join(scenario);
    let io = |error| ClaimError::Io {
        dir: dir.clone(),
        error,
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let path = dir.join(".lock");
    let mut attempts = 0;
    let lock = loop {
        let lock = File::create(&path).map_err(io)?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let error = std::io::Error::last_os_error();
            return Err(match error.raw_os_error() {
                Some(libc::EWOULDBLOCK) => ClaimError::Busy(dir),
                _ => io(error),
            });
        }
        // The run that held it may have removed the file in between: then
        // this lock is on a file no one else can find, so take the new one.
        let same = match (std::fs::metadata(&path), lock.metadata()) {
            (Ok(at_path), Ok(held)) => at_path.dev() == held.dev() && at_path.ino() == held.ino(),
            _ => false,
        };
        attempts += 1;
        if same {
            break lock;
        }
        if attempts >= 8 {
            return Err(ClaimError::Busy(dir));
        }
    };
    for entry in std::fs::read_dir(&dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let seed_folder = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.parse::<u64>().is_ok());
        if seed_folder && entry.file_type().map_err(io)?.is_dir() {
            std::fs::remove_dir_all(entry.path()).map_err(io)?;
        }
    }
    Ok(Claim { _lock: lock, dir })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_clears_old_seed_folders_and_a_second_claim_is_refused_until_the_first_ends() {
        let root = tempfile::tempdir().unwrap();
        let old = root.path().join("smoke/7");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(old.join("result.json"), "{}").unwrap();
        std::fs::create_dir_all(root.path().join("smoke/notes")).unwrap();
        let first = claim(root.path(), "smoke").unwrap();
        assert!(!old.exists(), "the earlier run's failing seed is gone");
        assert!(root.path().join("smoke/notes").exists(), "only seed folders go");
        let second = claim(root.path(), "smoke").unwrap_err();
        assert!(matches!(second, ClaimError::Busy(_)), "{second}");
        assert!(second.to_string().contains("--report"), "{second}");
        assert!(claim(root.path(), "swarm").is_ok(), "another scenario's folder is free");
        drop(first);
        assert!(
            !root.path().join("smoke/.lock").exists(),
            "no lock file outlives its run"
        );
        assert!(claim(root.path(), "smoke").is_ok());
    }
}
