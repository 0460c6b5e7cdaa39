//! The reference implementation: the protocol done right, in plain rusqlite.

use std::path::Path;

use rusqlite::Connection;

use super::receiver::ReferenceReceiver;
use super::{
    Clock, Implementation, Leased, Receiver, Result, Retried, RetryPolicy, Snapshot, SqliteSettings, Store, StoreError,
    System, SystemConfig, Timer, Who, connection, events, lease, outbox, retention, timers,
};
use crate::model::{Command, Head, OutboxRow, StoredEvent};

/// The event store and outbox over one connection.
pub struct ReferenceStore {
    conn: Connection,
    /// The run's time, for leases' expiry and retry timers.
    clock: Clock,
    /// Whether the outbox has retry timers (`timers`): then pending rows
    /// honour them. Known from the file itself, so every connection agrees.
    timers: bool,
}

impl ReferenceStore {
    pub fn open(path: &Path, settings: &SqliteSettings) -> Result<ReferenceStore> {
        ReferenceStore::from_connection(connection::open(path, settings)?)
    }

    /// A store over a connection opened by `connection::open` or `open_via`
    /// (which applied the settings), or elsewhere (a mutant's).
    ///
    /// A file without the timer columns has no timers. A probe that could
    /// not read the schema (busy, an I/O error) says nothing about timers:
    /// guessing "none" would run the store without honouring them, so it is
    /// an environment error (the run stops without a verdict, exit 2).
    pub fn from_connection(conn: Connection) -> Result<ReferenceStore> {
        let timers = timers::enabled(&conn)
            .map_err(|error| StoreError::Environment(format!("probing the outbox for retry timers failed: {error}")))?;
        Ok(ReferenceStore {
            conn,
            clock: Clock::default(),
            timers,
        })
    }

    /// The store reading the run's time from `clock` (leases expire by it);
    /// without one, time stands still at tick 0.
    pub fn with_clock(mut self, clock: Clock) -> ReferenceStore {
        self.clock = clock;
        self
    }

    /// Creates the event store and outbox tables if they do not exist.
    pub fn create_schema(path: &Path, settings: &SqliteSettings) -> Result<()> {
        Self::create_schema_in(&connection::open(path, settings)?)
    }

    /// `create_schema` on an open connection.
    pub fn create_schema_in(conn: &Connection) -> Result<()> {
        conn.execute_batch(include_str!("schema.sql"))?;
        Ok(())
    }

    /// The schema for `config`: with leases, the outbox's lease columns too.
    pub fn create_schema_for(config: &SystemConfig) -> Result<()> {
        let conn = connection::open(&config.store_path, &config.store_sqlite)?;
        Self::create_schema_in(&conn)?;
        if config.leases {
            lease::enable(&conn)?;
        }
        if config.retries {
            timers::enable(&conn)?;
        }
        Ok(())
    }

    /// The connection, for implementations built on this one.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The run's time as this store reads it, for implementations built on this one.
    pub fn now(&self) -> u64 {
        self.clock.now()
    }
}

impl Store for ReferenceStore {
    fn load(&mut self, workflow_id: &str) -> Result<Vec<StoredEvent>> {
        events::load(&self.conn, workflow_id)
    }

    fn heads(&mut self) -> Result<Vec<Head>> {
        events::heads(&self.conn)
    }

    fn commands(&mut self, workflow_id: &str, event_seq: u64) -> Result<Vec<OutboxRow>> {
        outbox::of_event(&self.conn, workflow_id, event_seq)
    }

    fn pending(&mut self, limit: usize) -> Result<Vec<OutboxRow>> {
        match self.timers {
            true => timers::pending(&self.conn, self.clock.now(), limit),
            false => outbox::pending(&self.conn, limit),
        }
    }

    fn begin(&mut self) -> Result<()> {
        // IMMEDIATE takes the write lock now: a deferred transaction that read
        // first could not be upgraded after another commit (SQLITE_BUSY_SNAPSHOT).
        connection::run(&self.conn, "BEGIN IMMEDIATE")?;
        Ok(())
    }

    fn insert_event(&mut self, workflow_id: &str, expected_seq: u64, kind: &str, payload: &str) -> Result<u64> {
        events::insert(&self.conn, workflow_id, expected_seq, kind, payload)
    }

    fn insert_command(&mut self, workflow_id: &str, event_seq: u64, index: usize, command: &Command) -> Result<String> {
        outbox::insert(&self.conn, workflow_id, event_seq, index, command)
    }

    fn commit(&mut self) -> Result<()> {
        connection::run(&self.conn, "COMMIT")?;
        Ok(())
    }

    fn rollback(&mut self) -> Result<()> {
        if !self.conn.is_autocommit() {
            connection::run(&self.conn, "ROLLBACK")?;
        }
        Ok(())
    }

    fn mark_done(&mut self, command_id: &str, result: Option<&str>) -> Result<bool> {
        match self.timers {
            true => timers::mark_done(&self.conn, command_id, None, result),
            false => outbox::mark_done(&self.conn, command_id, result),
        }
    }

    fn claim(&mut self, owner: &str, lease_ticks: u64, limit: usize) -> Result<Vec<Leased>> {
        match self.timers {
            true => timers::claim(&self.conn, owner, self.clock.now(), lease_ticks, limit),
            false => lease::claim(&self.conn, owner, self.clock.now(), lease_ticks, limit),
        }
    }

    fn mark_done_leased(&mut self, command_id: &str, token: u64, result: Option<&str>) -> Result<bool> {
        match self.timers {
            true => timers::mark_done(&self.conn, command_id, Some(token), result),
            false => lease::mark_done(&self.conn, command_id, token, result),
        }
    }

    fn schedule_retry(
        &mut self,
        command_id: &str,
        token: Option<u64>,
        error: &str,
        policy: &RetryPolicy,
        jitter_permille: u64,
    ) -> Result<Option<Retried>> {
        let now = self.clock.now();
        timers::schedule(&self.conn, command_id, token, now, error, policy, jitter_permille)
    }

    fn timers(&mut self) -> Result<Vec<Timer>> {
        Ok(timers::timers(&self.conn)?)
    }

    fn connection(&self) -> Option<&Connection> {
        Some(&self.conn)
    }
}

/// The reference's databases for one run.
pub struct ReferenceSystem {
    pub config: SystemConfig,
}

impl ReferenceSystem {
    pub fn create(config: &SystemConfig) -> Result<ReferenceSystem> {
        ReferenceStore::create_schema_for(config)?;
        ReferenceReceiver::create_schema(&config.receiver_path, &config.receiver_sqlite)?;
        if config.dedup_retention {
            retention::enable(&connection::open(&config.receiver_path, &config.receiver_sqlite)?)?;
        }
        Ok(ReferenceSystem { config: config.clone() })
    }

    /// The canonical dump of files with the reference schema: every
    /// implementation built on the reference's files dumps this way, through
    /// the run's VFS when it has one (after a power cut, the crash VFS).
    pub fn dump_files(config: &SystemConfig) -> Result<Snapshot> {
        Ok(Snapshot::read_via(
            &config.store_path,
            &config.receiver_path,
            config.store_sqlite.vfs,
        )?)
    }
}

impl System for ReferenceSystem {
    fn open_store(&mut self, _who: &Who<'_>) -> Result<Box<dyn Store>> {
        let store = ReferenceStore::open(&self.config.store_path, &self.config.store_sqlite)?;
        Ok(Box::new(store.with_clock(self.config.clock.clone())))
    }

    fn open_receiver(&mut self, _who: &Who<'_>) -> Result<Box<dyn Receiver>> {
        let receiver = ReferenceReceiver::open(
            &self.config.receiver_path,
            &self.config.receiver_sqlite,
            self.config.hotel_failure,
        )?;
        Ok(Box::new(receiver.with_retention(&self.config)))
    }

    fn dump(&mut self) -> Result<Snapshot> {
        ReferenceSystem::dump_files(&self.config)
    }

    fn offers_peek(&self) -> bool {
        true
    }

    fn peek(&mut self, store: &Path, receiver: &Path) -> Result<Option<Snapshot>> {
        Ok(Some(Snapshot::read_copy(store, receiver)?))
    }

    fn backup(&mut self, dest: &Path, _part: u32) -> Result<super::Backed> {
        super::backup::backup(&self.config, dest).map(|()| super::Backed::Complete)
    }

    fn dump_backup(&mut self, dest: &Path) -> Result<Snapshot> {
        super::backup::dump_backup(&self.config, dest)
    }
}

/// The reference implementation, by name.
pub struct Reference;

impl Implementation for Reference {
    fn name(&self) -> &'static str {
        "reference"
    }

    fn description(&self) -> &'static str {
        "the protocol done right: optimistic append, event and commands in one transaction, idempotent receiver"
    }

    fn system(&self, config: &SystemConfig) -> Result<Box<dyn System>> {
        Ok(Box::new(ReferenceSystem::create(config)?))
    }

    fn leases(&self) -> bool {
        true
    }

    fn retries(&self) -> bool {
        true
    }

    fn backups(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rollback-journal file with an outbox, and a second connection
    /// holding its exclusive lock: no other connection can read the schema.
    fn locked(dir: &Path) -> (Connection, Connection) {
        let path = dir.join("store.db");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch(
                "PRAGMA journal_mode=DELETE;
                 CREATE TABLE outbox (command_id TEXT PRIMARY KEY);
                 BEGIN EXCLUSIVE;",
            )
            .unwrap();
        let conn = Connection::open(&path).unwrap();
        conn.busy_timeout(std::time::Duration::ZERO).unwrap();
        (holder, conn)
    }

    #[test]
    fn a_timer_probe_that_cannot_read_the_schema_is_an_environment_error() {
        let dir = tempfile::tempdir().unwrap();
        let (_holder, conn) = locked(dir.path());
        let error = ReferenceStore::from_connection(conn)
            .err()
            .expect("a busy probe is no answer about timers");
        assert!(matches!(error, StoreError::Environment(_)), "{error:?}");
        assert!(error.environment().is_some(), "the harness maps it to exit 2");
        assert!(error.to_string().contains("retry timers"), "{error}");
    }

    #[test]
    fn a_file_without_the_timer_columns_has_no_timers() {
        let dir = tempfile::tempdir().unwrap();
        let (holder, conn) = locked(dir.path());
        holder.execute_batch("COMMIT").unwrap();
        let store = ReferenceStore::from_connection(conn).expect("the probe answers");
        assert!(!store.timers);
    }
}
