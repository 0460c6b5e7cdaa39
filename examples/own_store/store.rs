//! `MyStore`: an event store with a transactional outbox, and an idempotent
//! receiver, in plain rusqlite, as a crate of its own would write them.
//!
//! It uses only crashsim's public API: the traits it implements, the
//! records they exchange (`crashsim::model`), the business effect every
//! receiver performs (`crashsim::store::service`), and the canonical
//! `Snapshot` its `dump` returns. Its schema is its own (`history`,
//! `messages`, `bookings`, `seen_keys`), nothing like crashsim's reference.
//!
//! What the harness relies on, and where this file does it:
//!
//! - every connection applies the run's settings (`open`): `journal_mode`,
//!   `synchronous` and the busy timeout belong to the connection, and the VFS
//!   is how power loss reaches the files;
//! - an append is one transaction, cut into calls (`begin`, `insert_event`,
//!   `insert_command`…, `commit`); a stale `expected_seq` is `Conflict`;
//! - every query whose rows are returned has an `ORDER BY`; time is the
//!   run's simulated `Clock`, never the wall clock;
//! - the receiver records the key in the same transaction as the effect,
//!   and answers a repeat with the first result (`lookup`);
//! - `dump` reads the tables straight, once, after the run.

use std::path::Path;
use std::time::Duration;

use crashsim::model::{Command, Head, OutboxRow, StoredEvent, command_id};
use crashsim::ratio::Ratio;
use crashsim::store::dump::{Dedup, Effect};
use crashsim::store::service::{core_digest, perform};
use crashsim::store::{
    Applied, Clock, Implementation, Lookup, Receiver, Request, Result, Snapshot, SqliteSettings, Store, StoreError,
    System, SystemConfig, Who,
};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};

const STORE_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS history (
  stream  TEXT NOT NULL,
  version INTEGER NOT NULL,
  type    TEXT NOT NULL,
  data    TEXT NOT NULL,
  PRIMARY KEY (stream, version)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS messages (
  position     INTEGER PRIMARY KEY,   -- commit order: appends are serialised
  id           TEXT NOT NULL UNIQUE,
  stream       TEXT NOT NULL,
  version      INTEGER NOT NULL,
  type         TEXT NOT NULL,
  data         TEXT NOT NULL,
  delivered_at INTEGER,               -- simulated tick; NULL while pending
  reply        TEXT
);
CREATE INDEX IF NOT EXISTS messages_by_event ON messages (stream, version);
CREATE INDEX IF NOT EXISTS messages_pending ON messages (position) WHERE delivered_at IS NULL;
";

const RECEIVER_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS bookings (
  id              INTEGER PRIMARY KEY,
  idempotency_key TEXT NOT NULL,
  kind            TEXT NOT NULL,
  params          TEXT NOT NULL,
  outcome         TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS seen_keys (
  idempotency_key TEXT PRIMARY KEY,
  fingerprint     TEXT NOT NULL,
  outcome         TEXT NOT NULL,
  booking_id      INTEGER NOT NULL
);
";

/// Opens `path` with every setting the run asks for, on every open.
fn open(path: &Path, settings: &SqliteSettings) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = match settings.vfs {
        Some(vfs) => Connection::open_with_flags_and_vfs(path, flags, vfs)?,
        None => Connection::open_with_flags(path, flags)?,
    };
    conn.busy_timeout(Duration::from_millis(u64::from(settings.busy_timeout_ms)))?;
    conn.pragma_update(None, "journal_mode", settings.journal_mode.as_str())?;
    conn.pragma_update(None, "synchronous", settings.synchronous.as_str())?;
    Ok(conn)
}

fn is_unique_violation(error: &rusqlite::Error) -> bool {
    error.sqlite_error_code() == Some(ErrorCode::ConstraintViolation)
}

/// The implementation: what the harness is handed.
#[derive(Default)]
pub struct MyStore;

impl Implementation for MyStore {
    fn name(&self) -> &str {
        "my_store"
    }

    fn description(&self) -> &str {
        "an event store with an outbox and an idempotent receiver, in plain rusqlite"
    }

    fn system(&self, config: &SystemConfig) -> Result<Box<dyn System>> {
        Ok(Box::new(MySystem::create(config)?))
    }
}

/// One run's files.
pub struct MySystem {
    config: SystemConfig,
}

impl MySystem {
    pub fn create(config: &SystemConfig) -> Result<MySystem> {
        open(&config.store_path, &config.store_sqlite)?.execute_batch(STORE_SCHEMA)?;
        open(&config.receiver_path, &config.receiver_sqlite)?.execute_batch(RECEIVER_SCHEMA)?;
        Ok(MySystem { config: config.clone() })
    }

    /// A store connection of this type (for wrappers that change one method).
    pub fn store(&self) -> Result<MyConnection> {
        Ok(MyConnection {
            conn: open(&self.config.store_path, &self.config.store_sqlite)?,
            clock: self.config.clock.clone(),
        })
    }

    /// A receiver connection of this type.
    pub fn receiver(&self) -> Result<MyReceiver> {
        Ok(MyReceiver {
            conn: open(&self.config.receiver_path, &self.config.receiver_sqlite)?,
            hotel_failure: self.config.hotel_failure,
        })
    }
}

impl System for MySystem {
    fn open_store(&mut self, _who: &Who<'_>) -> Result<Box<dyn Store>> {
        Ok(Box::new(self.store()?))
    }

    fn open_receiver(&mut self, _who: &Who<'_>) -> Result<Box<dyn Receiver>> {
        Ok(Box::new(self.receiver()?))
    }

    fn dump(&mut self) -> Result<Snapshot> {
        let mut snapshot = dump_store(&self.config.store_path, &self.config.store_sqlite)?;
        let receiver = dump_receiver(&self.config.receiver_path, &self.config.receiver_sqlite)?;
        snapshot.effects = receiver.effects;
        snapshot.dedup = receiver.dedup;
        snapshot.receiver_integrity = receiver.receiver_integrity;
        Ok(snapshot)
    }
}

/// A connection to dump `path` with: read-only, or through the run's VFS
/// in a power-loss run (after a cut the WAL index is rebuilt, which writes).
fn read_only(path: &Path, settings: &SqliteSettings) -> Result<Connection> {
    Ok(crashsim::store::dump::open(path, settings.vfs)?)
}

fn integrity(conn: &Connection) -> Result<String> {
    let mut statement = conn.prepare("PRAGMA integrity_check")?;
    let lines = statement.query_map([], |row| row.get::<_, String>(0))?;
    Ok(lines.collect::<rusqlite::Result<Vec<_>>>()?.join("; "))
}

/// `events` by workflow and seq, `outbox` in commit order.
fn dump_store(path: &Path, settings: &SqliteSettings) -> Result<Snapshot> {
    let conn = read_only(path, settings)?;
    let events = conn
        .prepare("SELECT stream, version, type, data FROM history ORDER BY stream, version")?
        .query_map([], |row| {
            Ok(StoredEvent {
                workflow_id: row.get(0)?,
                seq: row.get(1)?,
                kind: row.get(2)?,
                payload: row.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let outbox = conn
        .prepare(&format!("SELECT {MESSAGE} FROM messages ORDER BY position"))?
        .query_map([], message)?
        .collect::<rusqlite::Result<_>>()?;
    Ok(Snapshot {
        events,
        outbox,
        store_integrity: integrity(&conn)?,
        ..Snapshot::default()
    })
}

/// `effects` by id, `dedup` by key.
fn dump_receiver(path: &Path, settings: &SqliteSettings) -> Result<Snapshot> {
    let conn = read_only(path, settings)?;
    let effects = conn
        .prepare("SELECT id, idempotency_key, kind, params, outcome FROM bookings ORDER BY id")?
        .query_map([], |row| {
            Ok(Effect {
                effect_id: row.get(0)?,
                key: row.get(1)?,
                kind: row.get(2)?,
                payload: row.get(3)?,
                result: row.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let dedup = conn
        .prepare("SELECT idempotency_key, fingerprint, outcome, booking_id FROM seen_keys ORDER BY idempotency_key")?
        .query_map([], |row| {
            Ok(Dedup {
                key: row.get(0)?,
                digest: row.get(1)?,
                result: row.get(2)?,
                effect_id: row.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(Snapshot {
        effects,
        dedup,
        receiver_integrity: integrity(&conn)?,
        ..Snapshot::default()
    })
}

const MESSAGE: &str = "id, stream, version, type, data, delivered_at IS NOT NULL, reply";

fn message(row: &rusqlite::Row<'_>) -> rusqlite::Result<OutboxRow> {
    Ok(OutboxRow {
        command_id: row.get(0)?,
        workflow_id: row.get(1)?,
        event_seq: row.get(2)?,
        kind: row.get(3)?,
        payload: row.get(4)?,
        done: row.get(5)?,
        result: row.get(6)?,
    })
}

/// One connection to the event store and outbox.
pub struct MyConnection {
    conn: Connection,
    clock: Clock,
}

impl Store for MyConnection {
    fn load(&mut self, workflow_id: &str) -> Result<Vec<StoredEvent>> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT version, type, data FROM history WHERE stream = ?1 ORDER BY version")?;
        let rows = statement.query_map([workflow_id], |row| {
            Ok(StoredEvent {
                workflow_id: workflow_id.to_string(),
                seq: row.get(0)?,
                kind: row.get(1)?,
                payload: row.get(2)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn heads(&mut self) -> Result<Vec<Head>> {
        let mut statement = self.conn.prepare_cached(
            "SELECT h.stream, h.version, h.type,
                    (SELECT COUNT(*) FROM messages m
                      WHERE m.stream = h.stream AND m.version = h.version AND m.delivered_at IS NOT NULL)
               FROM history h
              WHERE h.version = (SELECT MAX(version) FROM history WHERE stream = h.stream)
              ORDER BY h.stream",
        )?;
        let rows = statement.query_map([], |row| {
            Ok(Head {
                workflow_id: row.get(0)?,
                last_seq: row.get(1)?,
                kind: row.get(2)?,
                commands_done: row.get(3)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn commands(&mut self, workflow_id: &str, event_seq: u64) -> Result<Vec<OutboxRow>> {
        let sql = format!("SELECT {MESSAGE} FROM messages WHERE stream = ?1 AND version = ?2 ORDER BY position");
        let mut statement = self.conn.prepare_cached(&sql)?;
        let rows = statement.query_map(params![workflow_id, event_seq], message)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn pending(&mut self, limit: usize) -> Result<Vec<OutboxRow>> {
        let sql = format!("SELECT {MESSAGE} FROM messages WHERE delivered_at IS NULL ORDER BY position LIMIT ?1");
        let mut statement = self.conn.prepare_cached(&sql)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = statement.query_map([limit], message)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn begin(&mut self) -> Result<()> {
        // IMMEDIATE: take the write lock now (`Busy` if another writer has it).
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        Ok(())
    }

    fn insert_event(&mut self, workflow_id: &str, expected_seq: u64, kind: &str, payload: &str) -> Result<u64> {
        let conflict = || StoreError::Conflict {
            workflow_id: workflow_id.to_string(),
            expected_seq,
        };
        let head: u64 = self
            .conn
            .prepare_cached("SELECT COALESCE(MAX(version), 0) FROM history WHERE stream = ?1")?
            .query_row([workflow_id], |row| row.get(0))?;
        if head != expected_seq {
            return Err(conflict());
        }
        let inserted = self
            .conn
            .prepare_cached("INSERT INTO history (stream, version, type, data) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![workflow_id, expected_seq + 1, kind, payload]);
        match inserted {
            Ok(_) => Ok(expected_seq + 1),
            Err(error) if is_unique_violation(&error) => Err(conflict()),
            Err(error) => Err(error.into()),
        }
    }

    fn insert_command(&mut self, workflow_id: &str, event_seq: u64, index: usize, command: &Command) -> Result<String> {
        // The id names the business intent, the same on every retry.
        let id = command_id(workflow_id, event_seq, index);
        self.conn
            .prepare_cached("INSERT INTO messages (id, stream, version, type, data) VALUES (?1, ?2, ?3, ?4, ?5)")?
            .execute(params![id, workflow_id, event_seq, command.kind, command.payload])?;
        Ok(id)
    }

    fn commit(&mut self) -> Result<()> {
        self.conn.execute_batch("COMMIT")?;
        Ok(())
    }

    fn rollback(&mut self) -> Result<()> {
        if !self.conn.is_autocommit() {
            self.conn.execute_batch("ROLLBACK")?;
        }
        Ok(())
    }

    fn mark_done(&mut self, command_id: &str, result: Option<&str>) -> Result<bool> {
        // Done once; a row marked done without a result gets it when it comes.
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE messages SET delivered_at = COALESCE(delivered_at, ?3), reply = ?2
                  WHERE id = ?1 AND (delivered_at IS NULL OR (reply IS NULL AND ?2 IS NOT NULL))",
            )?
            .execute(params![command_id, result, self.clock.now()])?;
        Ok(changed == 1)
    }

    fn connection(&self) -> Option<&Connection> {
        Some(&self.conn)
    }
}

/// One connection to the idempotent receiver.
pub struct MyReceiver {
    conn: Connection,
    hotel_failure: Ratio,
}

impl MyReceiver {
    /// Performs the business effect, in the open transaction: the booking
    /// numbered after the last one, with the result the service gives.
    pub fn book(&self, request: &Request) -> Result<Applied> {
        let effect_id: i64 = self
            .conn
            .prepare_cached("SELECT COALESCE(MAX(id), 0) + 1 FROM bookings")?
            .query_row([], |row| row.get(0))?;
        let result = perform(&request.kind, &request.payload, effect_id, self.hotel_failure)?;
        self.conn
            .prepare_cached(
                "INSERT INTO bookings (id, idempotency_key, kind, params, outcome) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![effect_id, request.key, request.kind, request.payload, result])?;
        Ok(Applied { effect_id, result })
    }

    /// Remembers the key, its core parameters' fingerprint and the result.
    pub fn remember(&self, request: &Request, applied: &Applied) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO seen_keys (idempotency_key, fingerprint, outcome, booking_id) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![
                request.key,
                core_digest(&request.kind, &request.payload),
                applied.result,
                applied.effect_id
            ])?;
        Ok(())
    }
}

impl Receiver for MyReceiver {
    fn begin(&mut self) -> Result<()> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        Ok(())
    }

    fn lookup(&mut self, request: &Request) -> Result<Lookup> {
        let seen: Option<(String, String)> = self
            .conn
            .prepare_cached("SELECT fingerprint, outcome FROM seen_keys WHERE idempotency_key = ?1")?
            .query_row([&request.key], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        Ok(match seen {
            None => Lookup::New,
            Some((fingerprint, result)) if fingerprint == core_digest(&request.kind, &request.payload) => {
                Lookup::Seen { result }
            }
            Some(_) => Lookup::Conflict,
        })
    }

    fn apply(&mut self, request: &Request) -> Result<Applied> {
        let applied = self.book(request)?;
        self.remember(request, &applied)?;
        Ok(applied)
    }

    fn commit(&mut self) -> Result<()> {
        self.conn.execute_batch("COMMIT")?;
        Ok(())
    }

    fn rollback(&mut self) -> Result<()> {
        if !self.conn.is_autocommit() {
            self.conn.execute_batch("ROLLBACK")?;
        }
        Ok(())
    }

    fn connection(&self) -> Option<&Connection> {
        Some(&self.conn)
    }
}
