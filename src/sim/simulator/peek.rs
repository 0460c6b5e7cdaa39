//! Copies of the run's databases taken between two steps, for the store
//! to dump (`System::peek`) when the checker asks (`check::certain`).
//!
//! A connection of crashsim's own that read the live files would change
//! what the store's connections do next (a WAL reader takes and moves a
//! read mark in the shared index, so the next reader locks another slot,
//! and the trace names other scheduling points). A copy is seen by no
//! connection of the run: each database with its WAL or rollback journal,
//! never its WAL index, written beside the run's files and removed after.
//! Opened there, SQLite recovers it as after a crash, so what it reads is
//! what was committed when the copy was taken (one runs at a time, so
//! between two steps is a moment).
//!
//! A copy that cannot be made (a full disk) or a dump of it that fails
//! stops the run without a verdict (`Fatal`), as the final dump's failure
//! does: the early end is part of the trace, so it must not depend on
//! whether the machine could copy a file.

use std::path::{Path, PathBuf};

use super::ending::Fatal;
use crate::store::{Snapshot, System};
use crate::vfs::ClockVfs;
use crate::vfs::clock::read_if_there;

/// The files of one database: the file, its WAL and its rollback journal.
const SUFFIXES: [&str; 3] = ["", "-wal", "-journal"];

/// `system`'s dump of a copy of the databases at `store` and `receiver` as
/// they are now (through `clock`'s images, where the run keeps its files in
/// memory); `None` if the store offers none (then the dump after the run
/// judges, as always).
pub(super) fn peek(
    system: &mut dyn System,
    clock: Option<&ClockVfs>,
    store: &Path,
    receiver: &Path,
) -> Result<Option<Snapshot>, Fatal> {
    if !system.offers_peek() {
        return Ok(None);
    }
    let dir = store.with_file_name("peek");
    let copies = (dir.join("store.db"), dir.join("receiver.db"));
    let copied = std::fs::create_dir_all(&dir)
        .and_then(|()| copy(clock, store, &copies.0))
        .and_then(|()| copy(clock, receiver, &copies.1));
    let snapshot = match copied {
        Ok(()) => system
            .peek(&copies.0, &copies.1)
            .map_err(|error| Fatal::of("dumping a copy of the databases", &error)),
        Err(error) => Err(Fatal::Environment(format!(
            "copying the databases to {}: {error}",
            dir.display()
        ))),
    };
    // Left behind, the copies go with the run's temporary folder.
    let _ = std::fs::remove_dir_all(&dir);
    snapshot
}

/// Copies the files of the database at `from` to `to`, as the run's
/// connections see them.
fn copy(clock: Option<&ClockVfs>, from: &Path, to: &Path) -> std::io::Result<()> {
    for suffix in SUFFIXES {
        let (from, to) = (with_suffix(from, suffix), with_suffix(to, suffix));
        let bytes = match clock {
            Some(vfs) => vfs.bytes(&from)?,
            None => read_if_there(&from)?,
        };
        match bytes {
            // An empty journal or WAL is none at all.
            Some(bytes) if !bytes.is_empty() || suffix.is_empty() => std::fs::write(to, bytes)?,
            Some(_) => {}
            None if suffix.is_empty() => {
                let message = format!("{} is missing", from.display());
                return Err(std::io::Error::new(std::io::ErrorKind::NotFound, message));
            }
            None => {}
        }
    }
    Ok(())
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}
