//! Mutants whose mistake shows only under one hazard: hostile ids
//! (`mark_done_like`) or a kill between a receiver's effect and its commit
//! (`dedup_first`). Both were written into scratch copies of the reference
//! as a user's bugs would be (issue 25 §4), and each slipped past the
//! shipped scenarios that lacked its hazard; they are kept here so that
//! `crashsim mutants` shows which scenarios carry it.

use super::forward::{forward_receiver, forward_store};
use crate::store::receiver::{ReferenceReceiver, perform_effect, record};
use crate::store::reference::ReferenceStore;
use crate::store::service::core_digest;
use crate::store::{Applied, Receiver, Request, Result, Store, timers};

/// Mistake 14, in the store: `mark_done` matches the command id with
/// `LIKE ?` where it means `=`. LIKE folds ASCII case and reads `%` and `_`
/// as wildcards, so acknowledging `Trip-Ab1:1:0` or `50%_off-3:1:0` also
/// marks `trip-ab1:1:0` or `50x_off-3:1:0` done, a command no receiver
/// performed (I1). Polite ids (`trip-007`) never tell the two apart.
pub struct MarkDoneLike {
    pub inner: ReferenceStore,
}

impl Store for MarkDoneLike {
    forward_store!(
        load,
        heads,
        commands,
        pending,
        begin,
        insert_event,
        insert_command,
        commit,
        rollback,
        connection,
        claim,
        mark_done_leased,
        schedule_retry,
        timers
    );

    fn mark_done(&mut self, command_id: &str, result: Option<&str>) -> Result<bool> {
        let conn = self.inner.conn();
        // With retry timers a dead-lettered row stays as it is (as in the reference).
        let alive = match timers::enabled(conn)? {
            true => " AND dead_lettered_at IS NULL",
            false => "",
        };
        let sql = format!(
            "UPDATE outbox SET processed_at = COALESCE(processed_at, CURRENT_TIMESTAMP), result = ?2
              WHERE command_id LIKE ?1{alive} AND (processed_at IS NULL OR (result IS NULL AND ?2 IS NOT NULL))"
        );
        let changed = conn
            .prepare_cached(&sql)?
            .execute(rusqlite::params![command_id, result])?;
        Ok(changed > 0)
    }
}

/// Mistake 8, third form: the receiver commits its de-dup record first,
/// then performs the effect in a transaction of its own. A kill between the
/// two (`receiver.before_effect_commit`) leaves a record for an effect that
/// never happened: the retry is answered as a repeat, the row is marked
/// done, and the command is never performed (I1).
pub struct DedupFirst {
    pub inner: ReferenceReceiver,
}

impl Receiver for DedupFirst {
    forward_receiver!(begin, lookup, commit, rollback, connection, purge_dedup);

    fn apply(&mut self, request: &Request) -> Result<Applied> {
        // The effect's outcome is what the record stores, so compute it in
        // a transaction that is rolled back, record it, then redo it.
        let (conn, hotel_failure) = self.inner.parts();
        let applied = perform_effect(conn, request, hotel_failure)?;
        self.inner.rollback()?;
        self.inner.begin()?;
        let (conn, hotel_failure) = self.inner.parts();
        record(
            conn,
            &request.key,
            &core_digest(&request.kind, &request.payload),
            &applied,
        )?;
        self.inner.commit()?;
        self.inner.begin()?;
        let (conn, _) = self.inner.parts();
        perform_effect(conn, request, hotel_failure)
    }
}
