//! The library API: run crashsim against your own Rust store, from your own
//! crate's tests, with the same verdicts, reports and seeds as `crashsim run`.
//!
//! Why: the command line can only run the implementations compiled into it
//! (and outside stores behind the adapter protocol). A store written in
//! Rust can skip the protocol: implement the traits of [`crate::store`] for
//! your type, hand it to a [`Harness`] with a scenario and seeds, and get a
//! [`RunOutcome`]: one [`SeedResult`] per seed,
//! the replay call of each failing seed, and (with
//! [`report_dir`](Harness::report_dir)) the files `crashsim run --report`
//! writes. Nothing is registered in crashsim, and nothing `'static` is asked
//! of your type: the harness borrows it for the run.
//!
//! What to implement (each trait's docs say what every method must do):
//!
//! - [`Store`](crate::store::Store): one connection to your event store and
//!   outbox, a write transaction cut into `begin`, `insert_event`,
//!   `insert_command`…, `commit` so the simulator can interleave and kill
//!   between any two calls;
//! - [`Receiver`](crate::store::Receiver): one connection to your idempotent
//!   receiver (`begin`, `lookup`, `apply`, `commit`); its business effect is
//!   [`store::service::perform`](crate::store::service::perform);
//! - [`System`](crate::store::System): opens those connections for one run
//!   (one set of files) and `dump`s the final state as a
//!   [`Snapshot`](crate::store::Snapshot), read straight from your tables;
//! - [`Implementation`]: your type; its
//!   `system` creates the schemas and returns the run's `System`. Override
//!   `engine` only to model an engine that differs from the reference's.
//!
//! A seed must replay: read time from
//! [`SystemConfig::clock`](crate::store::SystemConfig::clock) (simulated
//! ticks), never the wall clock; draw no randomness; put an `ORDER BY` on
//! every query whose rows you return. [`Harness::check_determinism`] runs
//! every seed twice and names the first difference.
//!
//! A replay "command" here is a Rust call, not a shell line: the `crashsim`
//! binary cannot load your type. A failing seed's replay reads
//! `Harness::new(&<my_store>).scenario("smoke")?.replay(17)? // trace hash …`,
//! where `<my_store>` is your implementation value (named by its `name()`);
//! [`Harness::replay`] returns the seed's full trace.
//!
//! ```
//! use crashsim::harness::Harness;
//! use crashsim::store::reference::ReferenceSystem;
//! use crashsim::store::{self, Implementation, System, SystemConfig};
//!
//! /// A user's type. Here it reuses crashsim's reference files to stay
//! /// short; `examples/own_store/` writes a store and receiver from scratch.
//! struct MyStore;
//!
//! impl Implementation for MyStore {
//!     fn name(&self) -> &str {
//!         "my_store"
//!     }
//!     fn description(&self) -> &str {
//!         "the reference, under another name"
//!     }
//!     fn system(&self, config: &SystemConfig) -> store::Result<Box<dyn System>> {
//!         Ok(Box::new(ReferenceSystem::create(config)?))
//!     }
//! }
//!
//! # fn main() -> Result<(), crashsim::harness::HarnessError> {
//! let reports = tempfile::tempdir().expect("a temporary directory");
//! let harness = Harness::new(&MyStore)
//!     // a built-in name or a path; or `.scenario_text(name, toml)`
//!     .scenario_text("tiny", "[workload]\ntrips_count = 3\nwriters_count = 2\n")?
//!     .seeds(0..4)
//!     .jobs(2)
//!     .report_dir(reports.path()); // summary.json, junit.xml, summary.md, failing seeds
//! let outcome = harness.run()?;
//! assert!(outcome.passed(), "{outcome}"); // lists failing seeds, first violation, replay
//! assert_eq!(outcome.results().len(), 4);
//! assert!(reports.path().join("tiny+my_store/summary.json").is_file());
//!
//! let replay = harness.replay(2)?; // one seed again, its trace kept
//! assert_eq!(replay.result().trace_hash, outcome.results()[2].trace_hash);
//! assert!(replay.trace().contains("commit"));
//! # Ok(())
//! # }
//! ```
//!
//! Files: this one (the builder, the seed loop), `outcome.rs` (what a run
//! and a replay give back, and the reports), `error.rs`.

mod error;
mod outcome;

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

pub use error::HarnessError;
pub use outcome::{Replay, RunOutcome};

use crate::faults::FaultSource;
use crate::runner::{self, Options, SeedResult};
use crate::scenario::{self, Loaded, Source};
use crate::store::Implementation;

/// The seeds a run takes when `seeds` is not called: those of `crashsim run`.
const DEFAULT_SEEDS: std::ops::Range<u64> = 0..100;
/// More seeds than anyone runs in one call: a guard against `0..u64::MAX`.
const MAX_SEEDS: usize = 1 << 24;

/// A run of one scenario over many seeds against one implementation.
///
/// Built with [`Harness::new`] and the setters (each has a default), then
/// [`run`](Harness::run) and [`replay`](Harness::replay), as often as you
/// like: they take `&self`.
pub struct Harness<'a> {
    implementation: &'a dyn Implementation,
    /// The scenario and how to name it again in a replay call; `None`: the
    /// built-in `smoke`.
    scenario: Option<(Loaded, String)>,
    seeds: Vec<u64>,
    too_many_seeds: bool,
    jobs: Option<usize>,
    work_dir: Option<PathBuf>,
    report_dir: Option<PathBuf>,
    keep_failed: bool,
    check_determinism: bool,
    /// Scenarios with `[preempt]` run each connection in this program,
    /// started again to serve it (`serve_from_this_program`).
    serve_self: bool,
}

impl<'a> Harness<'a> {
    /// A harness for `implementation`, with the defaults: the built-in
    /// scenario `smoke`, seeds `0..100`, one job per core, seeds' databases
    /// under `/dev/shm` (or the system's temporary directory), no reports.
    pub fn new(implementation: &'a dyn Implementation) -> Harness<'a> {
        Harness {
            implementation,
            scenario: None,
            seeds: DEFAULT_SEEDS.collect(),
            too_many_seeds: false,
            jobs: None,
            work_dir: None,
            report_dir: None,
            keep_failed: false,
            check_determinism: false,
            serve_self: false,
        }
    }

    /// The scenario: a TOML file if `name_or_path` is one, else a built-in
    /// scenario by name (`smoke`, `contention`, `crash_storm`, …), as
    /// `crashsim run` takes it. The scenario's `store` key is ignored: your
    /// implementation is the one under test.
    pub fn scenario(mut self, name_or_path: impl AsRef<Path>) -> Result<Harness<'a>, HarnessError> {
        let loaded = scenario::resolve(name_or_path.as_ref())?;
        let call = format!(".scenario({:?})", loaded.argument());
        self.scenario = Some((loaded, call));
        Ok(self)
    }

    /// The scenario as TOML text (the format of `scenarios/*.toml`), called
    /// `name` in reports and error messages: letters, digits, `-`, `_`, `.`.
    pub fn scenario_text(mut self, name: &str, toml: &str) -> Result<Harness<'a>, HarnessError> {
        let plain = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
        if name.is_empty() || name.starts_with('.') || !name.chars().all(plain) {
            return Err(HarnessError::Invalid(format!(
                "scenario name {name:?}: use letters, digits, '-', '_' and '.' (not first): it names a report folder"
            )));
        }
        let path = PathBuf::from(format!("<{name}>"));
        let loaded = Loaded {
            name: name.to_string(),
            scenario: scenario::parse(toml, &path)?,
            path,
            mutant: None,
            sut: None,
            source: Source::File,
        };
        let call = format!(".scenario_text({name:?}, <the same TOML>)");
        self.scenario = Some((loaded, call));
        Ok(self)
    }

    /// The seeds to run (`0..50`, `[3, 17]`, a `Vec`); duplicates run once,
    /// and results come back in ascending seed order.
    pub fn seeds(mut self, seeds: impl IntoIterator<Item = u64>) -> Harness<'a> {
        let seeds: BTreeSet<u64> = seeds.into_iter().take(MAX_SEEDS + 1).collect();
        self.too_many_seeds = seeds.len() > MAX_SEEDS;
        self.seeds = seeds.into_iter().collect();
        self
    }

    /// How many seeds run at once, each on its own thread (at least 1).
    /// A seed's run is the same whatever this is.
    pub fn jobs(mut self, jobs: usize) -> Harness<'a> {
        self.jobs = Some(jobs);
        self
    }

    /// Where each seed's temporary directory is created.
    pub fn work_dir(mut self, dir: impl Into<PathBuf>) -> Harness<'a> {
        self.work_dir = Some(dir.into());
        self
    }

    /// Writes the reports `crashsim run --report DIR` writes, atomically:
    /// `DIR/<scenario>+<name>/summary.json`, `junit.xml`, `summary.md`, and
    /// for each failing seed `DIR/<scenario>+<name>/<seed>/` (`result.json`,
    /// `trace.jsonl`, `trace.txt`, `report.html`).
    pub fn report_dir(mut self, dir: impl Into<PathBuf>) -> Harness<'a> {
        self.report_dir = Some(dir.into());
        self
    }

    /// Keeps a failing seed's databases (`SeedResult::kept_dir` says where).
    pub fn keep_failed(mut self, keep: bool) -> Harness<'a> {
        self.keep_failed = keep;
        self
    }

    /// Runs every seed twice and reports two runs that differ as a D1
    /// violation, naming the first trace line that differed.
    pub fn check_determinism(mut self, check: bool) -> Harness<'a> {
        self.check_determinism = check;
        self
    }

    /// Runs scenarios that suspend calls inside the store's SQLite
    /// (`[preempt]`) with each connection in a process of its own, as
    /// `--mode process` serves crashsim's own stores: this program, started
    /// again with `CRASHSIM_SERVE` set, whose `main` must first call
    /// [`serve_if_asked`](crate::adapter::serve::serve_if_asked). Without
    /// it such scenarios run in this process, each connection's calls on a
    /// coroutine of its own (`sim::baton`), which is faster; a process also
    /// dies for real at a kill (docs/rust-library.md). Other scenarios run
    /// in this process as before.
    pub fn serve_from_this_program(mut self) -> Harness<'a> {
        self.serve_self = true;
        self
    }

    /// Runs every seed and judges it. `Ok` whatever the verdicts (see
    /// [`RunOutcome::passed`]); `Err` only when there is no verdict to give.
    pub fn run(&self) -> Result<RunOutcome, HarnessError> {
        let loaded = self.loaded()?;
        if self.too_many_seeds {
            return Err(HarnessError::Invalid(format!("more than {MAX_SEEDS} seeds in one run")));
        }
        if self.seeds.is_empty() {
            return Err(HarnessError::Invalid("no seeds to run".to_string()));
        }
        let jobs = match self.jobs {
            Some(0) => return Err(HarnessError::Invalid("jobs must be at least 1".to_string())),
            Some(jobs) => jobs,
            None => std::thread::available_parallelism().map_or(1, usize::from),
        };
        let options = self.options(&loaded, false)?;
        #[expect(
            clippy::disallowed_methods,
            reason = "wall time reports speed in the summary; it never steers a run"
        )]
        let started = std::time::Instant::now();
        let results = self.run_seeds(&loaded, jobs, &options)?;
        let seconds = started.elapsed().as_secs_f64();
        RunOutcome::new(self, &loaded, results, seconds, jobs, &options.work_dir)
    }

    /// Runs one seed again with its trace kept, to read or print it (twice,
    /// with `check_determinism`, so a difference is reported as D1).
    pub fn replay(&self, seed: u64) -> Result<Replay, HarnessError> {
        let loaded = self.loaded()?;
        let result = self.run_one(&loaded, seed, &self.options(&loaded, true)?)?;
        Ok(Replay::new(result, self.replay_call(seed)))
    }

    /// The Rust call that replays `seed`:
    /// `Harness::new(&<my_store>).scenario("smoke")?.replay(17)?`.
    pub fn replay_call(&self, seed: u64) -> String {
        let scenario = match &self.scenario {
            Some((_, call)) => call.as_str(),
            None => ".scenario(\"smoke\")",
        };
        format!(
            "Harness::new(&<{}>){scenario}?.replay({seed})?",
            self.implementation.name()
        )
    }

    /// The scenario, labelled with the implementation as `--sut` labels an
    /// outside store (`smoke+my_store`), so reports name what ran.
    fn loaded(&self) -> Result<Loaded, HarnessError> {
        let loaded = match &self.scenario {
            Some((loaded, _)) => loaded.clone(),
            None => scenario::resolve(Path::new("smoke"))?,
        };
        Ok(loaded.with_sut(self.implementation.name()))
    }

    fn options(&self, loaded: &Loaded, keep_traces: bool) -> Result<Options, HarnessError> {
        let work_dir = self.work_dir.clone().unwrap_or_else(runner::default_work_dir);
        if !work_dir.is_dir() {
            return Err(HarnessError::Invalid(format!(
                "work directory {}: not a directory",
                work_dir.display()
            )));
        }
        let sut = match self.serve_self && loaded.scenario.preempt.is_some() {
            true => runner::Sut::Adapter(std::sync::Arc::new(self.this_program()?)),
            false => runner::Sut::default(),
        };
        Ok(Options {
            work_dir,
            keep_failed: self.keep_failed,
            keep_traces,
            sut,
            check_determinism: self.check_determinism,
            files: Default::default(),
        })
    }

    /// Every seed on `jobs` threads; results in seed order. The error of the
    /// lowest seed that failed to run wins, so it does not depend on timing.
    fn run_seeds(&self, loaded: &Loaded, jobs: usize, options: &Options) -> Result<Vec<SeedResult>, HarnessError> {
        runner::in_parallel(
            &self.seeds,
            jobs,
            options.starts_processes(),
            |seed| self.run_one(loaded, seed, options),
            |_| {},
        )
    }

    /// This program, serving this implementation one connection per process.
    fn this_program(&self) -> Result<crate::adapter::Adapter, HarnessError> {
        use crate::adapter::serve::ENV_SERVE;
        if let Ok(asked) = std::env::var(ENV_SERVE) {
            return Err(HarnessError::Invalid(format!(
                "this program was started to serve {asked:?} (${ENV_SERVE} is set) but runs a harness: \
                 its main must call crashsim::adapter::serve::serve_if_asked first"
            )));
        }
        let exe = std::env::current_exe()
            .map_err(|error| HarnessError::Invalid(format!("the path of this program: {error}")))?;
        let name = self.implementation.name();
        let command = format!(
            "{ENV_SERVE}={} exec {}",
            crate::adapter::shell_word(name),
            crate::adapter::shell_word(&exe.display().to_string())
        );
        crate::adapter::Adapter::probe(&command, crate::adapter::DEFAULT_TIMEOUT, true)
            .map_err(|error| HarnessError::Invalid(format!("serving {name} from this program: {error}")))
    }

    /// One seed (twice with `check_determinism`), a panic caught as an error.
    fn run_one(&self, loaded: &Loaded, seed: u64, options: &Options) -> Result<SeedResult, HarnessError> {
        let once = |keep_traces: bool| {
            let options = Options {
                keep_traces,
                check_determinism: false,
                ..options.clone()
            };
            // Served one connection per process, or here.
            let implementation: &dyn Implementation = match &options.sut {
                runner::Sut::Adapter(adapter) => &**adapter,
                runner::Sut::Scenario => self.implementation,
            };
            let result = catch_unwind(AssertUnwindSafe(|| {
                runner::run_seed_on(loaded, implementation, seed, &options, FaultSource::Drawn)
            }))
            .map_err(|panic| HarnessError::Panicked {
                seed,
                message: panic_message(panic.as_ref()),
                replay: self.replay_call(seed),
            })??;
            Ok::<_, HarnessError>(result)
        };
        if !options.check_determinism {
            return once(options.keep_traces).map(|result| forget_if_passed(result, options.keep_traces));
        }
        let first = once(true)?;
        let second = once(true)?;
        let first = crate::runner::determinism::judge(first, &second).map_err(runner::RunError::from)?;
        Ok(forget_if_passed(first, options.keep_traces))
    }
}

/// Drops what a passing seed kept only for the harness's own checks.
fn forget_if_passed(mut result: SeedResult, keep_traces: bool) -> SeedResult {
    if result.ok && !keep_traces {
        result.events = None;
        result.snapshot = None;
        result.artifacts = Vec::new();
    }
    result
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        text.to_string()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "(a panic without a message)".to_string()
    }
}
