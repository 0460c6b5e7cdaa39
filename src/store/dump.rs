//! `Snapshot`: the canonical dump of a run's databases, the one thing the
//! checkers read besides the trace.
//!
//! Every implementation produces it through `System::dump`: crashsim's own
//! read their files here, once, read-only, with plain SQL against the
//! protocol's schema (never through the implementation under test, which
//! could hide its own mistakes); an outside store's adapter answers the
//! protocol's `dump` request with the same shape (docs/adapter-protocol.md).

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde::{Deserialize, Serialize};

use crate::model::{OutboxRow, StoredEvent};

/// An effect row at the receiver.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Effect {
    pub effect_id: i64,
    pub key: String,
    pub kind: String,
    pub payload: String,
    pub result: String,
}

/// A de-duplication record at the receiver.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dedup {
    pub key: String,
    pub digest: String,
    pub result: String,
    pub effect_id: i64,
}

/// The final state of a run's databases. Each part defaults to empty, so a
/// dump of one role's database parses alone (see `merge`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Snapshot {
    /// Ordered by workflow, then seq.
    pub events: Vec<StoredEvent>,
    /// Ordered by commit (rowid).
    pub outbox: Vec<OutboxRow>,
    /// Ordered by effect id.
    pub effects: Vec<Effect>,
    pub dedup: Vec<Dedup>,
    /// With retry timers: the retry state of every outbox row that failed
    /// at least once (attempts, next due tick, dead letter, last error),
    /// ordered like `outbox`. Empty in runs without `[retries]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timers: Vec<super::Timer>,
    /// `PRAGMA integrity_check` of each file: "ok" or what it found.
    pub store_integrity: String,
    pub receiver_integrity: String,
    /// Set when the files could not be read at all (SQLite found them
    /// damaged): the rest is empty, and only integrity is judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

/// Opens a database to dump it: read-only, or, through the run's VFS when
/// there is one (a power-loss run), read-write, since after a power cut the
/// WAL index must be rebuilt. Every `System::dump` opens its files this way
/// (or as carefully): a dump that cannot read the files after a cut is
/// judged as a failed integrity check (I9).
pub fn open(path: &Path, vfs: Option<&str>) -> rusqlite::Result<Connection> {
    open_read_only(path, vfs)
}

/// Opens a copy of a run's database (`System::peek`) that no connection of
/// the run sees: read-write through the platform's own VFS, so that SQLite
/// may recover it as after a crash (a rollback journal beside it rolls
/// back, a WAL without its index is indexed again up to its last commit):
/// what it then reads is what was committed when the copy was taken.
pub fn open_copy(path: &Path) -> rusqlite::Result<Connection> {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

fn open_read_only(path: &Path, vfs: Option<&str>) -> rusqlite::Result<Connection> {
    match vfs {
        None => Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX),
        // After a power cut the WAL index is gone and must be rebuilt, which
        // needs a connection that may write: it reads only, through the
        // run's VFS so that recovery's own writes are part of the run's disk.
        Some(vfs) => Connection::open_with_flags_and_vfs(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            vfs,
        ),
    }
}

/// The receiver's `effects`, by id.
fn effects(receiver: &Connection) -> rusqlite::Result<Vec<Effect>> {
    receiver
        .prepare("SELECT effect_id, key, kind, payload, result FROM effects ORDER BY effect_id")?
        .query_map([], |row| {
            Ok(Effect {
                effect_id: row.get(0)?,
                key: row.get(1)?,
                kind: row.get(2)?,
                payload: row.get(3)?,
                result: row.get(4)?,
            })
        })?
        .collect()
}

/// The receiver's `dedup` records, by key.
fn dedup(receiver: &Connection) -> rusqlite::Result<Vec<Dedup>> {
    receiver
        .prepare("SELECT key, digest, result, effect_id FROM dedup ORDER BY key")?
        .query_map([], |row| {
            Ok(Dedup {
                key: row.get(0)?,
                digest: row.get(1)?,
                result: row.get(2)?,
                effect_id: row.get(3)?,
            })
        })?
        .collect()
}

fn integrity(conn: &Connection) -> rusqlite::Result<String> {
    let mut statement = conn.prepare("PRAGMA integrity_check")?;
    let lines = statement.query_map([], |row| row.get::<_, String>(0))?;
    Ok(lines.collect::<rusqlite::Result<Vec<_>>>()?.join("; "))
}

impl Snapshot {
    /// Each workflow's stored events, in `seq` order.
    pub fn events_by_workflow(&self) -> BTreeMap<&str, Vec<StoredEvent>> {
        let mut by_workflow: BTreeMap<&str, Vec<StoredEvent>> = BTreeMap::new();
        for event in &self.events {
            by_workflow.entry(&event.workflow_id).or_default().push(event.clone());
        }
        by_workflow
    }

    /// The outbox rows by `command_id`.
    pub fn rows_by_id(&self) -> BTreeMap<&str, &OutboxRow> {
        self.outbox.iter().map(|row| (row.command_id.as_str(), row)).collect()
    }

    /// The dead-lettered rows' retry states, by `command_id`.
    pub fn dead_lettered(&self) -> BTreeMap<&str, &super::Timer> {
        self.timers
            .iter()
            .filter(|timer| timer.dead_lettered_at.is_some())
            .map(|timer| (timer.command_id.as_str(), timer))
            .collect()
    }

    pub fn read(store_path: &Path, receiver_path: &Path) -> rusqlite::Result<Snapshot> {
        Snapshot::read_via(store_path, receiver_path, None)
    }

    /// `read` through a named VFS (the crash VFS after a power cut).
    pub fn read_via(store_path: &Path, receiver_path: &Path, vfs: Option<&str>) -> rusqlite::Result<Snapshot> {
        let mut snapshot = Snapshot::read_store(store_path, vfs)?;
        snapshot.merge(Snapshot::read_receiver(receiver_path, vfs)?);
        Ok(snapshot)
    }

    /// What `System::peek` needs of a copy of the run's files, each
    /// opened with `open_copy`: the outbox, effects and de-dup records
    /// (no events, no integrity checks).
    pub fn read_copy(store_path: &Path, receiver_path: &Path) -> rusqlite::Result<Snapshot> {
        let mut snapshot = Snapshot::read_copy_store(store_path)?;
        snapshot.merge(Snapshot::read_copy_receiver(receiver_path)?);
        Ok(snapshot)
    }

    /// `read_copy`'s store part: the outbox.
    pub fn read_copy_store(store_path: &Path) -> rusqlite::Result<Snapshot> {
        let outbox = open_copy(store_path)?
            .prepare(&format!("SELECT {} FROM outbox ORDER BY rowid", super::outbox::COLUMNS))?
            .query_map([], super::outbox::row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(Snapshot {
            outbox,
            ..Snapshot::default()
        })
    }

    /// `read_copy`'s receiver part: effects and de-dup records.
    pub fn read_copy_receiver(receiver_path: &Path) -> rusqlite::Result<Snapshot> {
        let receiver = open_copy(receiver_path)?;
        Ok(Snapshot {
            effects: effects(&receiver)?,
            dedup: dedup(&receiver)?,
            ..Snapshot::default()
        })
    }

    /// The event store's part (`events`, `outbox`, `store_integrity`) of a
    /// database with the reference schema.
    pub fn read_store(store_path: &Path, vfs: Option<&str>) -> rusqlite::Result<Snapshot> {
        let store = open_read_only(store_path, vfs)?;
        let events = store
            .prepare("SELECT workflow_id, seq, kind, payload FROM events ORDER BY workflow_id, seq")?
            .query_map([], |row| {
                Ok(StoredEvent {
                    workflow_id: row.get(0)?,
                    seq: row.get(1)?,
                    kind: row.get(2)?,
                    payload: row.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let outbox = store
            .prepare(&format!("SELECT {} FROM outbox ORDER BY rowid", super::outbox::COLUMNS))?
            .query_map([], super::outbox::row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let timers = match super::timers::enabled(&store)? {
            true => super::timers::timers(&store)?,
            false => Vec::new(),
        };
        let store_integrity = integrity(&store)?;
        Ok(Snapshot {
            events,
            outbox,
            timers,
            store_integrity,
            ..Snapshot::default()
        })
    }

    /// The receiver's part (`effects`, `dedup`, `receiver_integrity`) of a
    /// database with the reference schema.
    pub fn read_receiver(receiver_path: &Path, vfs: Option<&str>) -> rusqlite::Result<Snapshot> {
        Snapshot::receiver_part(&open_read_only(receiver_path, vfs)?)
    }

    /// `read_receiver` on an open connection.
    fn receiver_part(receiver: &Connection) -> rusqlite::Result<Snapshot> {
        Ok(Snapshot {
            effects: effects(receiver)?,
            dedup: dedup(receiver)?,
            receiver_integrity: integrity(receiver)?,
            ..Snapshot::default()
        })
    }

    /// The dump of files SQLite found damaged beyond reading (`why`): empty,
    /// with both integrity checks failed.
    pub fn unreadable(why: String) -> Snapshot {
        Snapshot {
            store_integrity: why.clone(),
            receiver_integrity: why.clone(),
            unreadable: Some(why),
            ..Snapshot::default()
        }
    }

    /// Takes the receiver's part from `other` (a dump of the other role's
    /// database, when two implementations serve the two roles).
    pub fn merge(&mut self, other: Snapshot) {
        self.effects = other.effects;
        self.dedup = other.dedup;
        self.receiver_integrity = other.receiver_integrity;
    }
}
