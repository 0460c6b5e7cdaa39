//! `SeedResult`: what one seed gave, the verdict with the evidence kept
//! for reports and replays. The runner makes it; D1 (`determinism`), the
//! reports and the harness read it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::Serialize;

use crate::check::{self, Snapshot, Violation};
use crate::faults::{Injected, KillCounters};
use crate::store::Artifact;
use crate::trace::TraceEvent;

/// What one seed gave.
#[derive(Clone, Debug, Serialize)]
pub struct SeedResult {
    pub scenario: String,
    pub seed: u64,
    pub ok: bool,
    pub violations: Vec<Violation>,
    pub trace_hash: String,
    pub steps: u64,
    pub ticks: u64,
    pub settled: bool,
    /// The fault plan in force (swarm mode draws it per seed).
    pub faults: String,
    #[serde(skip)]
    pub kills: KillCounters,
    /// The invariants whose situation arose in the run (`check::coverage`).
    #[serde(skip)]
    pub exercised: BTreeSet<check::Invariant>,
    /// What became of its backups (`[backup]`).
    #[serde(skip)]
    pub backups: check::coverage::Backups,
    /// Every fault that fired, in order (a forced replay reproduces the run).
    #[serde(skip)]
    pub injected: Vec<Injected>,
    /// Persistence points of the fault phase, for power-loss runs.
    #[serde(skip)]
    pub fault_points: Option<u64>,
    /// With `[preempt]`: the scheduling points each armed step passed.
    #[serde(skip)]
    pub suspension_steps: Vec<crate::faults::StepPoints>,
    /// The trace, kept when asked for (replay) or when the seed failed.
    #[serde(skip)]
    pub events: Option<Vec<TraceEvent>>,
    /// The final databases as the checkers saw them, kept like the trace.
    #[serde(skip)]
    pub snapshot: Option<Snapshot>,
    /// Files the implementation kept about the run (an adapter's stderr and
    /// transcript), kept like the trace.
    #[serde(skip)]
    pub artifacts: Vec<Artifact>,
    /// The seed's directory, if it was kept (`--keep-failed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_dir: Option<PathBuf>,
}
