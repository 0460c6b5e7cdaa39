//! Mutants of the idempotent receiver (mistakes 7, 8 and 12).

use sha2::{Digest, Sha256};

use super::forward::forward_receiver;
use crate::store::receiver::{ReferenceReceiver, find, judge, perform_effect, record};
use crate::store::service::{core_digest, hex16};
use crate::store::{Applied, Lookup, Receiver, Request, Result};

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
        record(
            conn,
            &body_key(request),
            &core_digest(&request.kind, &request.payload),
            &applied,
        )?;
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
/// retry performs again.
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
        record(
            conn,
            &request.key,
            &core_digest(&request.kind, &request.payload),
            &applied,
        )?;
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
