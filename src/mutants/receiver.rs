//! Mutants of the idempotent receiver (mistakes 7, 8, 12 and 14).

use rusqlite::OptionalExtension;
use sha2::{Digest, Sha256};

use super::forward::forward_receiver;
use crate::store::receiver::{ReferenceReceiver, find, judge, perform_effect, record};
use crate::store::service::{core_digest, hex16};
use crate::store::{Applied, Lookup, Receiver, Request, Result};

/// Records the de-dup entry of `request` under `key` (which a mutant may
/// derive wrongly), with the digest of the request's core parameters.
fn record_as(conn: &rusqlite::Connection, key: &str, request: &Request, applied: &Applied) -> Result<()> {
    record(conn, key, &core_digest(&request.kind, &request.payload), applied)
}

/// Mistake 7: the idempotency key is a hash of the request body, not the
/// identity of the business intent: a retry with a new attempt number and
/// timestamp looks like a new operation.
pub struct BodyHashKey {
    pub inner: ReferenceReceiver,
}

fn body_key(request: &Request) -> String {
    let body = serde_json::to_string(request).expect("requests serialise");
    hex16(&Sha256::digest(body.as_bytes()))
}

impl Receiver for BodyHashKey {
    forward_receiver!(begin, commit, rollback, connection, purge_dedup);

    fn lookup(&mut self, request: &Request) -> Result<Lookup> {
        let (conn, _) = self.inner.parts();
        Ok(judge(
            find(conn, &body_key(request))?,
            &core_digest(&request.kind, &request.payload),
        ))
    }

    fn apply(&mut self, request: &Request) -> Result<Applied> {
        let (conn, hotel_failure) = self.inner.parts();
        let applied = perform_effect(conn, request, hotel_failure)?;
        record_as(conn, &body_key(request), request, &applied)?;
        Ok(applied)
    }
}

/// Mistake 8, first form: no de-duplication at all.
pub struct NoDedup {
    pub inner: ReferenceReceiver,
}

impl Receiver for NoDedup {
    forward_receiver!(begin, commit, rollback, connection, purge_dedup);

    fn lookup(&mut self, _request: &Request) -> Result<Lookup> {
        Ok(Lookup::New)
    }

    fn apply(&mut self, request: &Request) -> Result<Applied> {
        let (conn, hotel_failure) = self.inner.parts();
        perform_effect(conn, request, hotel_failure)
    }
}

/// Mistake 8, second form: the de-duplication record is committed apart
/// from the effect, so a crash between the two leaves an effect that a
/// retry performs again. Driven a step at a time (`dedup_apart`), a kill
/// at `receiver.before_effect_commit` falls between them; driven as one
/// `handle` call (`dedup_after_effect`, call granularity, as outside stores
/// often are), both commits happen inside one step, no kill point falls
/// between them, and only a power cut between the two commits shows it.
pub struct DedupApart {
    pub inner: ReferenceReceiver,
}

impl Receiver for DedupApart {
    forward_receiver!(begin, lookup, commit, rollback, connection, purge_dedup);

    fn apply(&mut self, request: &Request) -> Result<Applied> {
        let (conn, hotel_failure) = self.inner.parts();
        let applied = perform_effect(conn, request, hotel_failure)?;
        self.inner.commit()?;
        self.inner.begin()?;
        let (conn, _) = self.inner.parts();
        record_as(conn, &request.key, request, &applied)?;
        Ok(applied)
    }
}

/// Mistake 8, third form: the de-dup lookup reads outside the transaction
/// that applies ("a read needs no lock"), and the record is written with
/// `INSERT OR IGNORE` ("the key is unique anyway"). Two receivers handling
/// one duplicated delivery at the same moment both find nothing and both
/// apply it. Driven as one `handle` call per request (call granularity),
/// nothing comes between the lookup and the apply unless the call is
/// suspended inside SQLite (`[preempt]`, scenarios/interleave.toml).
pub struct LookupOutsideTxn {
    pub inner: ReferenceReceiver,
}

impl Receiver for LookupOutsideTxn {
    forward_receiver!(lookup, commit, rollback, connection, purge_dedup);

    fn begin(&mut self) -> Result<()> {
        Ok(())
    }

    fn apply(&mut self, request: &Request) -> Result<Applied> {
        self.inner.begin()?;
        let (conn, hotel_failure) = self.inner.parts();
        let applied = perform_effect(conn, request, hotel_failure)?;
        conn.prepare_cached("INSERT OR IGNORE INTO dedup (key, digest, result, effect_id) VALUES (?1, ?2, ?3, ?4)")?
            .execute(rusqlite::params![
                request.key,
                core_digest(&request.kind, &request.payload),
                applied.result,
                applied.effect_id
            ])?;
        Ok(applied)
    }
}

/// Mistake 12: de-duplication records purged before producers stop
/// retrying. The receiver keeps its records for a hundredth of the
/// configured retention (a TTL read in the wrong unit), far below the retry
/// horizon: a retry that comes after its backoff, for a command whose reply
/// was lost after the effect committed, finds no record and applies the
/// command a second time (I2).
pub struct EarlyDedupPurge {
    pub inner: ReferenceReceiver,
}

impl Receiver for EarlyDedupPurge {
    forward_receiver!(begin, lookup, apply, commit, rollback, connection);

    fn purge_dedup(&mut self, now: u64, retention_ticks: u64) -> Result<u64> {
        let (conn, _) = self.inner.parts();
        crate::store::retention::purge(conn, now.saturating_sub(retention_ticks / 100))
    }
}

/// Mistake 14, first form: keys compared case-insensitively. The de-dup
/// lookup matches `COLLATE NOCASE` ("ids are case-insensitive anyway"), so
/// `Trip-Ab:1:0` finds the record of `trip-ab:1:0`: a different command is
/// answered as a conflict (or with another command's result), and a
/// near-miss key in another case as a repeat (I7).
pub struct KeyCaseFold {
    pub inner: ReferenceReceiver,
}

impl Receiver for KeyCaseFold {
    forward_receiver!(begin, apply, commit, rollback, connection, purge_dedup);

    fn lookup(&mut self, request: &Request) -> Result<Lookup> {
        let (conn, _) = self.inner.parts();
        let found = conn
            .prepare_cached("SELECT digest, result FROM dedup WHERE key = ?1 COLLATE NOCASE ORDER BY key LIMIT 1")?
            .query_row([&request.key], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        Ok(judge(found, &core_digest(&request.kind, &request.payload)))
    }
}

/// Mistake 14, second form: keys trimmed before use ("stray whitespace from
/// the client"). The lookup and the record both use the key with the
/// whitespace at either end removed, so ` trip-s1:1:0` and `trip-s1:1:0`
/// are one key: a different command is answered as a conflict, and a
/// near-miss key with a space at either end as a repeat (I7).
pub struct KeyTrim {
    pub inner: ReferenceReceiver,
}

impl Receiver for KeyTrim {
    forward_receiver!(begin, commit, rollback, connection, purge_dedup);

    fn lookup(&mut self, request: &Request) -> Result<Lookup> {
        let (conn, _) = self.inner.parts();
        Ok(judge(
            find(conn, request.key.trim())?,
            &core_digest(&request.kind, &request.payload),
        ))
    }

    fn apply(&mut self, request: &Request) -> Result<Applied> {
        let (conn, hotel_failure) = self.inner.parts();
        let applied = perform_effect(conn, request, hotel_failure)?;
        record_as(conn, request.key.trim(), request, &applied)?;
        Ok(applied)
    }
}
