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

use std::path::{Path, PathBuf};

use crate::store::{Snapshot, System};
use crate::vfs::ClockVfs;

/// The files of one database: the file, its WAL and its rollback journal.
const SUFFIXES: [&str; 3] = ["", "-wal", "-journal"];

/// `system`'s dump of a copy of the databases at `store` and `receiver` as
/// they are now (through `clock`'s images, where the run keeps its files in
/// memory); `None` if the store offers none or the copy could not be made
/// or read (then the dump after the run judges, as always).
pub(super) fn peek(
    system: &mut dyn System,
    clock: Option<&ClockVfs>,
    store: &Path,
    receiver: &Path,
) -> Option<Snapshot> {
    let dir = store.with_file_name("peek");
    let copies = (dir.join("store.db"), dir.join("receiver.db"));
    let copied =
        std::fs::create_dir_all(&dir).is_ok() && copy(clock, store, &copies.0) && copy(clock, receiver, &copies.1);
    let snapshot = match copied {
        true => system.peek(&copies.0, &copies.1).ok().flatten(),
        false => None,
    };
    let _ = std::fs::remove_dir_all(&dir);
    snapshot
}

/// Copies the files of the database at `from` to `to`, as the run's
/// connections see them.
fn copy(clock: Option<&ClockVfs>, from: &Path, to: &Path) -> bool {
    SUFFIXES.iter().all(|suffix| {
        let (from, to) = (with_suffix(from, suffix), with_suffix(to, suffix));
        let bytes = match clock {
            Some(vfs) => vfs.bytes(&from),
            None => std::fs::read(&from).ok(),
        };
        match bytes {
            // An empty journal or WAL is none at all.
            Some(bytes) if !bytes.is_empty() || suffix.is_empty() => std::fs::write(to, bytes).is_ok(),
            _ => !suffix.is_empty(),
        }
    })
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}
