//! The outside store's configurations (`crashsim bench --sut CMD`): its
//! append path, and its no-op request, measured in the same interleaved run
//! as the limit and crashsim's own store.
//!
//! Each configuration has a session of its own (`Adapter::bench_session`):
//! its own database files in its own directory, the adapter's `setup`, then
//! one store process that lives for the whole bench, as a long-running
//! service's connection would. Every append is one `append` request
//! (whatever granularity the adapter serves, so a step store pays one round
//! trip per append, not five), on one workflow whose head the session
//! follows, so appends never conflict; the latency of each is the whole
//! round trip as crashsim sees it: encoding, the pipe, the adapter's own
//! code, its commit, the answer. `sut_ping` times a request that does
//! nothing: the protocol's cost per call, to set against an append's.
//!
//! Steady state, like crashsim's own configurations (`sqlite`): before the
//! first round, a connection of this process grows the session's database's
//! WAL once to the size at which SQLite checkpoints it, through a table it
//! creates and drops, and checkpoints it; the adapter then rewrites the WAL
//! in place. If the file the hello named is not a WAL database (the adapter
//! keeps its data elsewhere, or in another journal mode), the WAL is left
//! as it is and the configuration's record carries a note.
//!
//! `sut_suspend` runs its session through crashsim's VFS extension with
//! suspensions on (as `[preempt]` does): each append is armed to park at
//! its first scheduling point inside the store's SQLite, answered
//! `Preempted`, asked again, resumed and answered; its latency is the
//! append's plus the rendezvous (the FIFO byte, the futex, the extension's
//! own counting), so its p50 less `sut_append_full`'s is what a suspension
//! adds to a call.
//!
//! Syncs cannot be counted here: the counting VFS sees this process's
//! connections, never another process's, so the outside store's fsyncs per
//! commit are unknown (`null`), never 0. An adapter that fails during the
//! bench stops it with an error naming the configuration, the cause and
//! the tail of the adapter's stderr: a bench is not a verdict.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::measure::{Budget, Sample, timed_loop};
use super::sqlite::{KIND, PAYLOAD, command};
use crate::adapter::{Adapter, BenchSession};
use crate::model::Command;
use crate::scenario::PreemptPoint;
use crate::store::{Store as _, StoreError, SystemConfig};
use crate::vfs::CrashVfs;

/// The one workflow a session appends to.
const WORKFLOW: &str = "bench-sut";

/// Bytes written once to grow the WAL to its steady-state size (as `sqlite`).
const WAL_BYTES: usize = 1050 * 4096;

/// One configuration's outside store: its process, and the head of the
/// workflow it appends to.
pub struct Session {
    session: BenchSession,
    dir: PathBuf,
    head: u64,
    /// With suspensions on (`sut_suspend`): the VFS whose control region
    /// arms them, shared with the store's process.
    suspends: Option<CrashVfs>,
    /// Why the WAL was not brought to steady state, if it was not.
    pub note: Option<String>,
}

/// The session's files: `dir/store.db` and `dir/receiver.db`, with a
/// scenario's default settings.
pub fn system_config(dir: &Path) -> SystemConfig {
    crate::adapter::default_config(dir)
}

impl Session {
    /// Sets up the adapter's schemas in `dir`, starts its store process,
    /// and brings the WAL to steady state. `Err` is the cause, with the
    /// adapter's stderr.
    /// With `suspends`, through crashsim's VFS extension with suspensions
    /// on; `Err` if the store's SQLite did not load it.
    pub fn start(adapter: &Adapter, dir: &Path, fork: bool, suspends: bool) -> Result<Session, String> {
        let mut config = system_config(dir);
        let suspends = match suspends {
            true => Some(suspending(&mut config, dir)?),
            false => None,
        };
        let session = adapter
            .bench_session(&config, fork)
            .map_err(|error| cause(dir, &error))?;
        if let Some(vfs) = &suspends
            && vfs.control().loads.load(std::sync::atomic::Ordering::Acquire) == 0
        {
            let message = "the adapter's SQLite did not load crashsim's VFS extension, so none of its \
                           calls can be suspended (docs/adapter-protocol.md, \"Power loss\")";
            return Err(crate::adapter::with_stderr_tails(dir, message));
        }
        let mut note = steady_state(&config.store_path).err();
        if fork && !adapter.forks() {
            note.get_or_insert_with(|| "the adapter declares no fork server: connections are started".to_string());
        }
        Ok(Session {
            session,
            dir: dir.to_path_buf(),
            head: 0,
            suspends,
            note,
        })
    }

    /// One `append` of the next event (and `commands`), checked against the head.
    fn append(&mut self, commands: &[Command]) -> Result<u64, StoreError> {
        let (seq, command_ids) = self
            .session
            .store()
            .append_with_commands(WORKFLOW, self.head, KIND, PAYLOAD, commands)?;
        if seq != self.head + 1 || command_ids.len() != commands.len() {
            return Err(StoreError::Broken(format!(
                "an append at expected_seq {} with {} command(s) was answered with seq {seq} and {} command id(s)",
                self.head,
                commands.len(),
                command_ids.len()
            )));
        }
        self.head = seq;
        Ok(1)
    }
}

/// Appends one event (and `commands` commands) per request until the budget
/// is spent. `fsyncs` stays 0: unknown, which the report says.
pub fn append(session: &mut Session, budget: Budget, commands: usize) -> Result<Sample, String> {
    let commands: Vec<Command> = (0..commands).map(command).collect();
    measure(session, budget, |session| session.append(&commands))
}

/// Appends one event per request until the budget is spent, each
/// suspended at its first scheduling point and resumed (`sut_suspend`).
pub fn suspended_append(session: &mut Session, budget: Budget) -> Result<Sample, String> {
    measure(session, budget, |session| {
        let Some(control) = session.suspends.as_ref().map(CrashVfs::control) else {
            return Err(StoreError::Invalid("the session does not suspend calls".to_string()));
        };
        control.arm_preempt(Some(1));
        let parked = session.append(&[]);
        // The call goes on where it stopped; nothing else parks it.
        control.arm_preempt(None);
        let answered = match parked {
            Err(StoreError::Preempted { .. }) => session.append(&[]),
            Ok(_) => Err(StoreError::Broken(
                "an append armed to park at its first scheduling point answered without parking".to_string(),
            )),
            Err(error) => Err(error),
        };
        control.disarm_preempt();
        answered
    })
}

/// Lays out a clock-only crash VFS in `dir/vfs` with suspensions on at
/// every kind of point, and names it in `config` (what the simulator does
/// for an outside store with `[preempt]`).
fn suspending(config: &mut SystemConfig, dir: &Path) -> Result<CrashVfs, String> {
    let vfs = CrashVfs::clock_only(&crate::vfs::crash::unique_name("bench-suspend"), &dir.join("vfs"), 0)
        .map_err(|error| format!("laying out crashsim's VFS state: {error}"))?;
    let kinds = [
        PreemptPoint::Lock,
        PreemptPoint::Unlock,
        PreemptPoint::ShmLock,
        PreemptPoint::Sync,
    ];
    vfs.enable_preempt(&kinds)
        .map_err(|error| format!("laying out the preemption FIFO: {error}"))?;
    config.vfs_state = vfs.shared_dir();
    config.store_sqlite.vfs = Some(vfs.name());
    config.receiver_sqlite.vfs = Some(vfs.name());
    Ok(vfs)
}

/// Pings until the budget is spent: the protocol's own cost per request.
pub fn ping(session: &mut Session, budget: Budget) -> Result<Sample, String> {
    measure(session, budget, |session| session.session.ping().map(|()| 1))
}

/// Opens and kills connections until the budget is spent: a process per
/// connection, from start (or fork) to its `open` answer, then its kill and
/// reaping, as an actor's restart in a run.
pub fn connect(session: &mut Session, budget: Budget) -> Result<Sample, String> {
    measure(session, budget, |session| session.session.reconnect().map(|()| 1))
}

/// `op` for the budget's warm-up, then timed until its sample is spent;
/// a failure is the cause with the adapter's stderr.
fn measure(
    session: &mut Session,
    budget: Budget,
    mut op: impl FnMut(&mut Session) -> Result<u64, StoreError>,
) -> Result<Sample, String> {
    let mut run = || -> Result<Sample, StoreError> {
        for _ in 0..budget.warmup_ops {
            op(session)?;
        }
        timed_loop(budget.sample, || op(session))
    };
    let outcome = run();
    outcome.map_err(|error| cause(&session.dir, &error))
}

/// Grows the WAL of the database at `path` to its steady-state size and
/// checkpoints it, through a table created and dropped again, so the
/// adapter's schema ends as it was. `Err` says why it could not.
fn steady_state(path: &Path) -> Result<(), String> {
    let not_steady = |why: String| format!("WAL not brought to steady state: {why}");
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    // Without SQLITE_OPEN_CREATE: a store that keeps its data elsewhere gets no stray file.
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|error| not_steady(format!("{} did not open as a database ({error})", path.display())))?;
    let grow = || -> rusqlite::Result<String> {
        conn.busy_timeout(Duration::from_secs(2))?;
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Ok(mode);
        }
        conn.execute_batch(&format!(
            "CREATE TABLE crashsim_bench_padding (bytes BLOB);
             INSERT INTO crashsim_bench_padding VALUES (zeroblob({WAL_BYTES}));
             DROP TABLE crashsim_bench_padding;"
        ))?;
        // Copied back: the adapter's next commit starts the WAL over, in place.
        conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))?;
        Ok(mode)
    };
    match grow() {
        Ok(mode) if mode.eq_ignore_ascii_case("wal") => Ok(()),
        Ok(mode) => Err(not_steady(format!(
            "{} is in journal_mode {mode}, not the wal the hello asked for",
            path.display()
        ))),
        Err(error) => Err(not_steady(format!("{}: {error}", path.display()))),
    }
}

/// What went wrong, with the tail of every non-empty stderr file the
/// session's processes left (in `dir/adapter/`).
fn cause(dir: &Path, error: &StoreError) -> String {
    crate::adapter::with_stderr_tails(dir, &error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steady_state_grows_a_wal_and_leaves_the_schema_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode=wal; CREATE TABLE events (seq INTEGER);")
            .unwrap();
        steady_state(&path).unwrap();
        let wal = std::fs::metadata(dir.path().join("store.db-wal")).unwrap().len();
        assert!(wal >= WAL_BYTES as u64, "{wal}");
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_schema ORDER BY name")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(tables, ["events"]);
    }

    #[test]
    fn a_missing_or_rollback_journal_database_is_a_note_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = steady_state(&dir.path().join("absent.db")).unwrap_err();
        assert!(missing.contains("absent.db"), "{missing}");
        assert!(!dir.path().join("absent.db").exists(), "no stray file");
        let path = dir.path().join("delete.db");
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE t (x)")
            .unwrap();
        let note = steady_state(&path).unwrap_err();
        assert!(note.contains("delete"), "{note}");
    }

    #[test]
    fn a_cause_carries_the_adapters_stderr() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("adapter")).unwrap();
        std::fs::write(
            dir.path().join("adapter/bench.2.stderr"),
            "Traceback\nKeyError: 'seq'\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("adapter/setup.1.stderr"), "").unwrap();
        let text = cause(dir.path(), &StoreError::Died("bench.2: gone".to_string()));
        assert!(text.starts_with("bench.2: gone"), "{text}");
        assert!(
            text.contains("KeyError: 'seq'") && text.contains("bench.2 process"),
            "{text}"
        );
        assert!(!text.contains("setup.1"), "{text}");
    }
}
