//! The reference idempotent receiver (PROTOCOL.md §4).
//!
//! The de-duplication record (key, digest of core parameters, result) and the
//! business effect are written in one transaction. A repeated key with the
//! same digest gets the first result back and changes nothing; with another
//! digest it is a conflict.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};

use super::service::{core_digest, perform};
use super::{Applied, Clock, Lookup, Receiver, Request, Result, SqliteSettings, SystemConfig, connection, retention};
use crate::ratio::Ratio;

pub struct ReferenceReceiver {
    conn: Connection,
    hotel_failure: Ratio,
    /// With a de-dup retention: the run's time, to stamp each record with.
    retention: Option<Clock>,
}

impl ReferenceReceiver {
    pub fn open(path: &Path, settings: &SqliteSettings, hotel_failure: Ratio) -> Result<ReferenceReceiver> {
        Ok(ReferenceReceiver::from_connection(
            connection::open(path, settings)?,
            hotel_failure,
        ))
    }

    /// Wraps a connection opened elsewhere (it must already be configured).
    pub fn from_connection(conn: Connection, hotel_failure: Ratio) -> ReferenceReceiver {
        ReferenceReceiver {
            conn,
            hotel_failure,
            retention: None,
        }
    }

    /// The receiver of a run with a de-dup retention stamps each record
    /// with the run's tick (`retention`), so that `purge_dedup` can age it.
    pub fn with_retention(mut self, config: &SystemConfig) -> ReferenceReceiver {
        if config.dedup_retention {
            self.retention = Some(config.clock.clone());
        }
        self
    }

    pub fn create_schema(path: &Path, settings: &SqliteSettings) -> Result<()> {
        let conn = connection::open(path, settings)?;
        conn.execute_batch(include_str!("receiver.sql"))?;
        Ok(())
    }
}

/// The de-duplication record of `key`, as (digest, result).
pub fn find(conn: &Connection, key: &str) -> Result<Option<(String, String)>> {
    let mut statement = conn.prepare_cached("SELECT digest, result FROM dedup WHERE key = ?1")?;
    Ok(statement
        .query_row([key], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?)
}

/// Performs the business effect of `request` and records it in `effects`.
pub fn perform_effect(conn: &Connection, request: &Request, hotel_failure: Ratio) -> Result<Applied> {
    let effect_id: i64 = conn
        .prepare_cached("SELECT COALESCE(MAX(effect_id), 0) + 1 FROM effects")?
        .query_row([], |row| row.get(0))?;
    let result = perform(&request.kind, &request.payload, effect_id, hotel_failure)?;
    conn.prepare_cached("INSERT INTO effects (effect_id, key, kind, payload, result) VALUES (?1, ?2, ?3, ?4, ?5)")?
        .execute(params![effect_id, request.key, request.kind, request.payload, result])?;
    Ok(Applied { effect_id, result })
}

/// Records the de-duplication entry for an applied request under `key`.
pub fn record(conn: &Connection, key: &str, digest: &str, applied: &Applied) -> Result<()> {
    conn.prepare_cached("INSERT INTO dedup (key, digest, result, effect_id) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![key, digest, applied.result, applied.effect_id])?;
    Ok(())
}

/// What a de-duplication record says about a request with `digest`.
pub fn judge(found: Option<(String, String)>, digest: &str) -> Lookup {
    match found {
        None => Lookup::New,
        Some((stored, result)) if stored == digest => Lookup::Seen { result },
        Some(_) => Lookup::Conflict,
    }
}

impl ReferenceReceiver {
    /// The connection and the failure rule, for implementations built on this one.
    pub fn parts(&self) -> (&Connection, Ratio) {
        (&self.conn, self.hotel_failure)
    }
}

impl Receiver for ReferenceReceiver {
    fn begin(&mut self) -> Result<()> {
        connection::run(&self.conn, "BEGIN IMMEDIATE")?;
        Ok(())
    }

    fn lookup(&mut self, request: &Request) -> Result<Lookup> {
        let found = find(&self.conn, &request.key)?;
        Ok(judge(found, &core_digest(&request.kind, &request.payload)))
    }

    fn apply(&mut self, request: &Request) -> Result<Applied> {
        let applied = perform_effect(&self.conn, request, self.hotel_failure)?;
        record(
            &self.conn,
            &request.key,
            &core_digest(&request.kind, &request.payload),
            &applied,
        )?;
        if let Some(clock) = &self.retention {
            retention::stamp(&self.conn, &request.key, clock.now())?;
        }
        Ok(applied)
    }

    fn purge_dedup(&mut self, now: u64, retention_ticks: u64) -> Result<u64> {
        match self.retention {
            Some(_) => retention::purge(&self.conn, now.saturating_sub(retention_ticks)),
            None => Ok(0),
        }
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

    fn connection(&self) -> Option<&Connection> {
        Some(&self.conn)
    }
}
