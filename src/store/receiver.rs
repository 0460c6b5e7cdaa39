//! The reference idempotent receiver (PROTOCOL.md §4).
//!
//! The de-duplication record (key, digest of core parameters, result) and the
//! business effect are written in one transaction. A repeated key with the
//! same digest gets the first result back and changes nothing; with another
//! digest it is a conflict.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};

use super::service::{core_digest, perform};
use super::{Applied, Lookup, Receiver, Request, Result, SqliteSettings, connection};
use crate::ratio::Ratio;

pub struct ReferenceReceiver {
    conn: Connection,
    hotel_failure: Ratio,
}

impl ReferenceReceiver {
    pub fn open(path: &Path, settings: &SqliteSettings, hotel_failure: Ratio) -> Result<ReferenceReceiver> {
        Ok(ReferenceReceiver {
            conn: connection::open(path, settings)?,
            hotel_failure,
        })
    }

    pub fn create_schema(path: &Path, settings: &SqliteSettings) -> Result<()> {
        let conn = connection::open(path, settings)?;
        conn.execute_batch(include_str!("receiver.sql"))?;
        Ok(())
    }
}

impl Receiver for ReferenceReceiver {
    fn begin(&mut self) -> Result<()> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        Ok(())
    }

    fn lookup(&mut self, request: &Request) -> Result<Lookup> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT digest, result FROM dedup WHERE key = ?1")?;
        let found: Option<(String, String)> = statement
            .query_row([&request.key], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        Ok(match found {
            None => Lookup::New,
            Some((digest, result)) if digest == core_digest(&request.kind, &request.payload) => Lookup::Seen { result },
            Some(_) => Lookup::Conflict,
        })
    }

    fn apply(&mut self, request: &Request) -> Result<Applied> {
        let effect_id: i64 = self
            .conn
            .prepare_cached("SELECT COALESCE(MAX(effect_id), 0) + 1 FROM effects")?
            .query_row([], |row| row.get(0))?;
        let result = perform(&request.kind, &request.payload, effect_id, self.hotel_failure)?;
        self.conn
            .prepare_cached("INSERT INTO effects (effect_id, key, kind, payload, result) VALUES (?1, ?2, ?3, ?4, ?5)")?
            .execute(params![effect_id, request.key, request.kind, request.payload, result])?;
        self.conn
            .prepare_cached("INSERT INTO dedup (key, digest, result, effect_id) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![
                request.key,
                core_digest(&request.kind, &request.payload),
                result,
                effect_id
            ])?;
        Ok(Applied { effect_id, result })
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
}
