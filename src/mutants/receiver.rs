//! Mutants of the idempotent receiver (mistakes 7 and 8).

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
    forward_receiver!(begin, commit, rollback, connection);

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
    forward_receiver!(begin, commit, rollback, connection);

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
    forward_receiver!(begin, lookup, commit, rollback, connection);

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
