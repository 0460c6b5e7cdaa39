//! `GroupCommit`: the group-commit store as a named implementation, and the
//! `System` of one simulated run.
//!
//! One `Committer` per run, shared by every store handle the run opens. The
//! model: the writers are tasks of one process that share a committer, as
//! an application would; killing a writer kills its task (its handle is
//! dropped, withdrawing a transaction still waiting for its group), never
//! the committer, whose transaction never outlives one simulated step.

use super::stepped::{Committer, GroupCommitStore, SharedCommitter};
use crate::store::receiver::ReferenceReceiver;
use crate::store::reference::ReferenceStore;
use crate::store::{Implementation, Receiver, Result, Store, System, SystemConfig};

/// The group-commit implementation, by name.
pub struct GroupCommit;

impl Implementation for GroupCommit {
    fn name(&self) -> &'static str {
        "group_commit"
    }

    fn description(&self) -> &'static str {
        "appends of many writers coalesced into one transaction, one savepoint each, acknowledged after COMMIT"
    }

    fn system(&self, config: &SystemConfig) -> Result<Box<dyn System>> {
        ReferenceStore::create_schema(&config.store_path, &config.store_sqlite)?;
        ReferenceReceiver::create_schema(&config.receiver_path, &config.receiver_sqlite)?;
        Ok(Box::new(GroupCommitSystem {
            committer: Committer::open(&config.store_path, &config.store_sqlite)?,
            config: config.clone(),
        }))
    }
}

/// One run's databases and its shared committer.
pub struct GroupCommitSystem {
    config: SystemConfig,
    committer: SharedCommitter,
}

impl System for GroupCommitSystem {
    fn open_store(&mut self) -> Result<Box<dyn Store>> {
        Ok(Box::new(GroupCommitStore::open(
            &self.config.store_path,
            &self.config.store_sqlite,
            &self.committer,
        )?))
    }

    fn open_receiver(&mut self) -> Result<Box<dyn Receiver>> {
        Ok(Box::new(ReferenceReceiver::open(
            &self.config.receiver_path,
            &self.config.receiver_sqlite,
            self.config.hotel_failure,
        )?))
    }
}
