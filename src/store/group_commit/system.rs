//! `GroupCommit`: the group-commit store as a named implementation, and the
//! `System` of one simulated run.
//!
//! One `Committer` per run, shared by every store handle the run opens. The
//! model: the writers are tasks of one process that share a committer, as
//! an application would; killing a writer kills its task (its handle is
//! dropped, withdrawing a transaction still waiting for its group), never
//! the committer, whose transaction never outlives one simulated step.

use super::stepped::{Committer, GroupCommitStore, SharedCommitter};
use crate::store::reference::ReferenceSystem;
use crate::store::{Implementation, Receiver, Result, Snapshot, Store, System, SystemConfig, Who};

/// The group-commit implementation, by name.
pub struct GroupCommit;

impl Implementation for GroupCommit {
    fn name(&self) -> &'static str {
        "group_commit"
    }

    fn description(&self) -> &'static str {
        "appends of many writers coalesced into one transaction, one savepoint each, acknowledged after COMMIT"
    }

    /// The writers are tasks of one process sharing its committer, which
    /// stamps a group (`CURRENT_TIMESTAMP`) with the clock of whichever
    /// writer's step flushes it: one clock, not one per actor.
    fn clock_per_actor(&self) -> bool {
        false
    }

    /// Its writers share one committer: a call suspended inside it would
    /// hold it for all of them.
    fn suspendable_in_process(&self) -> bool {
        false
    }

    fn system(&self, config: &SystemConfig) -> Result<Box<dyn System>> {
        // The same files and receivers as the reference; only appends differ.
        let reference = ReferenceSystem::create(config)?;
        Ok(Box::new(GroupCommitSystem {
            committer: Committer::open(&config.store_path, &config.store_sqlite)?,
            reference,
        }))
    }
}

/// One run's databases and its shared committer.
pub struct GroupCommitSystem {
    reference: ReferenceSystem,
    committer: SharedCommitter,
}

impl System for GroupCommitSystem {
    fn open_store(&mut self, _who: &Who<'_>) -> Result<Box<dyn Store>> {
        let config = &self.reference.config;
        Ok(Box::new(GroupCommitStore::open(
            &config.store_path,
            &config.store_sqlite,
            &self.committer,
        )?))
    }

    fn open_receiver(&mut self, who: &Who<'_>) -> Result<Box<dyn Receiver>> {
        self.reference.open_receiver(who)
    }

    fn dump(&mut self) -> Result<Snapshot> {
        self.reference.dump()
    }

    fn offers_peek(&self) -> bool {
        self.reference.offers_peek()
    }

    fn peek(&mut self, store: &std::path::Path, receiver: &std::path::Path) -> Result<Option<Snapshot>> {
        self.reference.peek(store, receiver)
    }
}
