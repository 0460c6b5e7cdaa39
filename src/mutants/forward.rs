//! Forwarding for mutants: `forward_store!(load, heads, …)` writes the
//! methods a mutant does not change as calls to its `inner` reference, so
//! each mutant's file shows only the one method it gets wrong.

/// Forwards the named `Store` methods to `self.inner`.
macro_rules! forward_store {
    ($($method:ident),* $(,)?) => { $(forward_store!(@ $method);)* };
    (@load) => {
        fn load(&mut self, workflow_id: &str) -> crate::store::Result<Vec<crate::model::StoredEvent>> {
            self.inner.load(workflow_id)
        }
    };
    (@heads) => {
        fn heads(&mut self) -> crate::store::Result<Vec<crate::model::Head>> {
            self.inner.heads()
        }
    };
    (@commands) => {
        fn commands(&mut self, workflow_id: &str, event_seq: u64) -> crate::store::Result<Vec<crate::model::OutboxRow>> {
            self.inner.commands(workflow_id, event_seq)
        }
    };
    (@pending) => {
        fn pending(&mut self, limit: usize) -> crate::store::Result<Vec<crate::model::OutboxRow>> {
            self.inner.pending(limit)
        }
    };
    (@begin) => {
        fn begin(&mut self) -> crate::store::Result<()> {
            self.inner.begin()
        }
    };
    (@insert_event) => {
        fn insert_event(&mut self, workflow_id: &str, expected_seq: u64, kind: &str, payload: &str) -> crate::store::Result<u64> {
            self.inner.insert_event(workflow_id, expected_seq, kind, payload)
        }
    };
    (@insert_command) => {
        fn insert_command(
            &mut self,
            workflow_id: &str,
            event_seq: u64,
            index: usize,
            command: &crate::model::Command,
        ) -> crate::store::Result<String> {
            self.inner.insert_command(workflow_id, event_seq, index, command)
        }
    };
    (@commit) => {
        fn commit(&mut self) -> crate::store::Result<()> {
            self.inner.commit()
        }
    };
    (@rollback) => {
        fn rollback(&mut self) -> crate::store::Result<()> {
            self.inner.rollback()
        }
    };
    (@mark_done) => {
        fn mark_done(&mut self, command_id: &str, result: Option<&str>) -> crate::store::Result<bool> {
            self.inner.mark_done(command_id, result)
        }
    };
    (@connection) => {
        fn connection(&self) -> Option<&rusqlite::Connection> {
            self.inner.connection()
        }
    };
    (@claim) => {
        fn claim(&mut self, owner: &str, lease_ticks: u64, limit: usize) -> crate::store::Result<Vec<crate::store::Leased>> {
            self.inner.claim(owner, lease_ticks, limit)
        }
    };
    (@mark_done_leased) => {
        fn mark_done_leased(&mut self, command_id: &str, token: u64, result: Option<&str>) -> crate::store::Result<bool> {
            self.inner.mark_done_leased(command_id, token, result)
        }
    };
    (@schedule_retry) => {
        fn schedule_retry(
            &mut self,
            command_id: &str,
            token: Option<u64>,
            error: &str,
            policy: &crate::store::RetryPolicy,
            jitter_permille: u64,
        ) -> crate::store::Result<Option<crate::store::Retried>> {
            self.inner.schedule_retry(command_id, token, error, policy, jitter_permille)
        }
    };
    (@timers) => {
        fn timers(&mut self) -> crate::store::Result<Vec<crate::store::Timer>> {
            self.inner.timers()
        }
    };
}

/// Forwards the named `Receiver` methods to `self.inner`.
macro_rules! forward_receiver {
    ($($method:ident),* $(,)?) => { $(forward_receiver!(@ $method);)* };
    (@begin) => {
        fn begin(&mut self) -> crate::store::Result<()> {
            self.inner.begin()
        }
    };
    (@lookup) => {
        fn lookup(&mut self, request: &crate::store::Request) -> crate::store::Result<crate::store::Lookup> {
            self.inner.lookup(request)
        }
    };
    (@apply) => {
        fn apply(&mut self, request: &crate::store::Request) -> crate::store::Result<crate::store::Applied> {
            self.inner.apply(request)
        }
    };
    (@commit) => {
        fn commit(&mut self) -> crate::store::Result<()> {
            self.inner.commit()
        }
    };
    (@rollback) => {
        fn rollback(&mut self) -> crate::store::Result<()> {
            self.inner.rollback()
        }
    };
    (@connection) => {
        fn connection(&self) -> Option<&rusqlite::Connection> {
            self.inner.connection()
        }
    };
    (@purge_dedup) => {
        fn purge_dedup(&mut self, now: u64, retention_ticks: u64) -> crate::store::Result<u64> {
            self.inner.purge_dedup(now, retention_ticks)
        }
    };
}

pub(crate) use {forward_receiver, forward_store};
