//! What a run returns: its output for the checkers and the reports, or the
//! error that kept it from a verdict.

use std::path::PathBuf;

use crate::actors::TripRequest;
use crate::faults::{FaultPlan, Injected, KillCounters};
use crate::sim::power::Recovery;
use crate::store::{Artifact, Snapshot, StoreError};
use crate::trace::TraceEvent;

/// A run that could not be set up or finished (not an invariant violation).
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("setting up the databases: {0}")]
    Setup(StoreError),
    #[error("registering the crash VFS: {0}")]
    Vfs(crate::vfs::VfsError),
    #[error("{0} cannot run {1}")]
    Unsupported(String, String),
    /// The implementation broke its contract with the harness (an adapter's
    /// malformed answer): no verdict.
    #[error("{0}")]
    Broken(String),
    #[error("reading the final state of the databases: {0}")]
    Dump(StoreError),
    /// The machine failed under the store (a full disk, an I/O error)
    /// without crashsim injecting it.
    #[error("the environment failed: {0}")]
    Environment(String),
    /// The run's budget ended before liveness could be judged.
    #[error("{0}")]
    Inconclusive(String),
    /// The run was abandoned at a signal.
    #[error("interrupted")]
    Interrupted,
}

impl SimError {
    /// The cause, if the machine failed under the store (whatever stage
    /// of the run met it).
    pub fn environment(&self) -> Option<String> {
        match self {
            SimError::Environment(cause) => Some(cause.clone()),
            SimError::Setup(error) | SimError::Dump(error) => error.environment(),
            _ => None,
        }
    }
}

impl From<crate::vfs::VfsError> for SimError {
    /// The cause goes into the message only (no `source`), so a chain of
    /// errors names it once.
    fn from(error: crate::vfs::VfsError) -> SimError {
        SimError::Vfs(error)
    }
}

/// What a run produced, for the checkers and the reports.
pub struct RunOutput {
    pub seed: u64,
    pub events: Vec<TraceEvent>,
    pub plan: FaultPlan,
    /// Every fault that fired, in order: a forced replay of this list
    /// reproduces the run.
    pub injected: Vec<Injected>,
    pub kills: KillCounters,
    pub trips: Vec<TripRequest>,
    /// Actor steps taken.
    pub steps: u64,
    /// The tick the run ended at.
    pub ticks: u64,
    pub settled: bool,
    pub store_path: PathBuf,
    pub receiver_path: PathBuf,
    /// The final state, as the implementation dumped it.
    pub snapshot: Snapshot,
    /// Files the implementation keeps about the run (an adapter's stderr).
    pub artifacts: Vec<Artifact>,
    /// What recovery found after each power cut.
    pub recoveries: Vec<Recovery>,
    /// What the store held after each restore (`[restore]`), in order.
    pub restores: Vec<Recovery>,
    /// Every backup that completed, as its file held it after the run.
    pub backups: Vec<super::BackupFile>,
    /// Persistence points the crash VFS saw during the fault phase (the
    /// points a cut could hit), for power-loss runs that reached the quiet phase.
    pub fault_points: Option<u64>,
    /// With `[preempt]`: the scheduling points each armed step passed, in
    /// the order the steps were taken.
    pub suspension_steps: Vec<crate::faults::StepPoints>,
    /// Persistence points the crash VFS saw in the whole run, for power-loss
    /// runs: none means the store wrote around it.
    pub vfs_points: Option<u64>,
    /// Scheduling points the in-process store's calls reached in the whole
    /// run, when they could be suspended (`sim::baton`): none means its
    /// connections open around crashsim's VFS.
    pub local_sched_points: Option<u64>,
    /// Why liveness cannot be judged, if it cannot: the budget ended before
    /// the quiet phase had its minimum. Safety is judged all the same.
    pub inconclusive: Option<String>,
}
