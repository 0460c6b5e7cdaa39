//! The runner: one seed end to end (set up files, simulate, snapshot, check),
//! and many seeds in parallel.
//!
//! Each seed runs on one thread in its own temporary directory; parallelism
//! is across seeds only, so a seed's run is the same whatever `--jobs` is.
//! Results are handed back in seed order (`sweep.rs`). A seed ends with a
//! verdict (pass or fail, `result.rs`) or an error that is never a verdict
//! (`error.rs`). With `check_determinism` each seed runs twice and D1 judges
//! the pair (`determinism.rs`).

pub mod determinism;
mod error;
mod pin;
mod result;
pub mod selection;
mod sweep;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use error::{ErrorKind, RunError};
pub use result::SeedResult;
pub use selection::{Partition, Selection};
pub use sweep::{Ended, Sweep, in_parallel, run_seeds, sweep};

use crate::adapter::Adapter;
use crate::check;
use crate::faults::FaultSource;
use crate::scenario::Loaded;
use crate::sim::{SimError, Simulator};
use crate::store::Implementation;
use crate::trace::trace_hash;

/// How to run seeds.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where each seed's temporary directory is created.
    pub work_dir: PathBuf,
    /// Keep the directory of a failing seed.
    pub keep_failed: bool,
    /// Keep every seed's trace, not only failing ones.
    pub keep_traces: bool,
    /// What is under test instead of each scenario's `store`.
    pub sut: Sut,
    /// Run every seed twice and report a difference as a finding (D1).
    pub check_determinism: bool,
    /// Where in-process runs without power loss keep their files' bytes.
    pub files: crate::sim::Files,
}

/// The implementation under test.
#[derive(Clone, Debug, Default)]
pub enum Sut {
    /// The built-in implementation the scenario's `store` key names.
    #[default]
    Scenario,
    /// An outside store behind an adapter (`--sut CMD`), or crashsim's own
    /// served as one (`--mode process`).
    Adapter(Arc<Adapter>),
}

impl Options {
    /// Whether a seed's connections are processes (an adapter's), spoken
    /// to over pipes: then each job keeps to a CPU (`pin.rs`).
    pub fn starts_processes(&self) -> bool {
        matches!(self.sut, Sut::Adapter(_))
    }
}

/// Runs one seed of one scenario, its faults drawn from the seed.
pub fn run_seed(loaded: &Loaded, seed: u64, options: &Options) -> Result<SeedResult, RunError> {
    run_seed_with(loaded, seed, options, FaultSource::Drawn)
}

/// Runs one seed of one scenario with its faults drawn or forced by `source`
/// (twice, with `check_determinism`).
pub fn run_seed_with(
    loaded: &Loaded,
    seed: u64,
    options: &Options,
    faults: FaultSource,
) -> Result<SeedResult, RunError> {
    if !options.check_determinism {
        return run_seed_once(loaded, seed, options, faults);
    }
    let keep = Options {
        keep_traces: true,
        check_determinism: false,
        ..options.clone()
    };
    let first = run_seed_once(loaded, seed, &keep, faults.clone())?;
    let second = run_seed_once(loaded, seed, &keep, faults)?;
    let mut first = determinism::judge(first, &second)?;
    if first.ok && !options.keep_traces {
        first.events = None;
        first.snapshot = None;
        first.artifacts = Vec::new();
    }
    Ok(first)
}

fn run_seed_once(loaded: &Loaded, seed: u64, options: &Options, faults: FaultSource) -> Result<SeedResult, RunError> {
    match &options.sut {
        Sut::Scenario => {
            let store = &loaded.scenario.store;
            let implementation = crate::mutants::resolve(store).ok_or_else(|| RunError::UnknownStore(store.clone()))?;
            run_seed_on(loaded, implementation, seed, options, faults)
        }
        Sut::Adapter(adapter) => run_seed_on(loaded, &**adapter, seed, options, faults),
    }
}

/// Why `implementation` cannot run `loaded`, if it cannot: the scenario has
/// `[leases]` or `[retries]` and the store lacks them (an adapter, by its
/// handshake's capabilities). Known before any seed runs, so `run
/// --skip-unsupported` can skip the scenario with this line.
pub fn unsupported(loaded: &Loaded, implementation: &dyn Implementation) -> Option<String> {
    let scenario = &loaded.scenario;
    // (section, needed, has it, what an in-process store lacks, the
    // capability an adapter declares, and the ops that come with it)
    let needs = [
        (
            "[leases]",
            scenario.leases.is_some(),
            implementation.leases(),
            "does not implement leases (Store::claim and Store::mark_done_leased)",
            "leases",
            "the store ops `claim` and `mark_done_leased`",
        ),
        (
            "[retries]",
            scenario.retries.is_some(),
            implementation.retries(),
            "does not implement retry timers (Store::schedule_retry and Store::timers)",
            "retries",
            "the store ops `schedule_retry` and `timers`",
        ),
        (
            "[backup]",
            scenario.backup.is_some(),
            implementation.backups(),
            "takes no online backups (System::backup and System::dump_backup)",
            "backup",
            "the ops `backup` and `dump` of a backup's path",
        ),
    ];
    let (section, _, _, lacks, capability, ops) = needs.into_iter().find(|need| need.1 && !need.2)?;
    let missing = match implementation.in_process() {
        true => format!("{} {lacks}", implementation.name()),
        false => format!(
            "the adapter `{}` ({}) does not declare the `{capability}` capability in its handshake \
             (\"capabilities\": [\"{capability}\"], with {ops})",
            implementation.description(),
            implementation.name()
        ),
    };
    Some(format!("{missing}: scenario {} has {section}", loaded.label()))
}

/// Runs one seed of one scenario against `implementation` (any, a library
/// user's own included), its faults drawn or forced by `source`.
pub fn run_seed_on(
    loaded: &Loaded,
    implementation: &dyn Implementation,
    seed: u64,
    options: &Options,
    faults: FaultSource,
) -> Result<SeedResult, RunError> {
    if let Some(missing) = unsupported(loaded, implementation) {
        return Err(RunError::Unsupported(missing));
    }
    let dir = tempfile::Builder::new()
        .prefix(&format!("crashsim-{}-{seed}-", loaded.label()))
        .tempdir_in(&options.work_dir)
        .map_err(|source| RunError::WorkDir {
            seed,
            dir: options.work_dir.clone(),
            source,
        })?;
    let simulator = Simulator::with_files(
        &loaded.scenario,
        implementation,
        seed,
        dir.path(),
        faults,
        options.files,
    )
    .map_err(|error| RunError::Sim { seed, error })?
    .cancel_on(abandoning);
    let output = simulator.run().map_err(|error| RunError::Sim { seed, error })?;
    // No persistence point in the whole run: the store's writes went around
    // the crash VFS. (None in the fault phase alone can be the scenario's
    // doing: a short phase, every actor paused.)
    if output.vfs_points == Some(0) && !output.events.is_empty() {
        return Err(RunError::Unsupported(format!(
            "scenario {} cuts the power, but no write of {} went through the crash VFS: its connections \
             must open through the VFS their settings name (SqliteSettings::vfs)",
            loaded.label(),
            implementation.name()
        )));
    }
    // The same for suspensions: no scheduling point reached at all means
    // the store's SQLite calls never came through crashsim's VFS.
    if output.local_sched_points == Some(0) && !output.events.is_empty() {
        return Err(RunError::Unsupported(format!(
            "scenario {} suspends calls ([preempt]), but no call of {} reached crashsim's VFS: its \
             connections must open through the VFS their settings name (SqliteSettings::vfs)",
            loaded.label(),
            implementation.name()
        )));
    }
    let snapshot = output.snapshot;
    let retention = check::Retention::of(&loaded.scenario);
    let mut violations = check::check_with(
        &check::Input {
            events: &output.events,
            snapshot: &snapshot,
            trips: &output.trips,
            settled: output.settled,
            ticks_max: loaded.scenario.run.ticks_max,
            steps_max: loaded.scenario.run.steps_max,
            ended: (output.ticks, output.steps),
            recoveries: &output.recoveries,
            restores: &output.restores,
            backups: &output.backups,
            artifacts: &output.artifacts,
            lease_margin_ticks: loaded.scenario.leases.map_or(0, |leases| leases.margin_ticks),
            claims: check::Claims::of(&loaded.scenario),
            durable: check::Durable::of(&loaded.scenario),
            synchronous: check::Expected::of(&loaded.scenario),
            max_attempts: loaded.scenario.retries.map(|retries| retries.max_attempts),
        },
        retention,
    );
    if let Some(reason) = output.inconclusive {
        // Liveness cannot be judged: what is left is safety, and a run
        // with no safety violation has no verdict.
        violations.retain(|violation| violation.invariant != check::Invariant::I10);
        if violations.is_empty() {
            return Err(RunError::Sim {
                seed,
                error: SimError::Inconclusive(reason),
            });
        }
    }
    let ok = violations.is_empty();
    let kept_dir = if !ok && options.keep_failed {
        Some(dir.keep())
    } else {
        None
    };
    let keep = !ok || options.keep_traces;
    Ok(SeedResult {
        scenario: loaded.label(),
        seed,
        ok,
        violations,
        trace_hash: trace_hash(&output.events),
        steps: output.steps,
        ticks: output.ticks,
        settled: output.settled,
        faults: output.plan.describe(),
        kills: output.kills,
        exercised: check::coverage::exercised(&output.events),
        backups: check::coverage::Backups::of(&output.events),
        injected: output.injected,
        fault_points: output.fault_points,
        suspension_steps: output.suspension_steps,
        events: keep.then_some(output.events),
        snapshot: keep.then_some(snapshot),
        artifacts: if keep { output.artifacts } else { Vec::new() },
        kept_dir,
    })
}

/// Whether every running seed is to be abandoned at its next event, and no
/// seed started: a signal asked the process to stop (`crate::interrupt`).
pub fn abandoning() -> bool {
    crate::interrupt::requested().is_some()
}

/// The default place for seed directories: a tmpfs such as `/dev/shm` where
/// one exists (in-process kills do not depend on the disk's durability, and
/// fsync is free there), else the system temporary directory.
pub fn default_work_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() && tempfile::tempdir_in(shm).is_ok() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}
