//! The command line: `run`, `replay`, `list`, `show`, `bench`.
//!
//! Wall-clock time appears here and in `bench` only (seeds per second,
//! progress, throughput): it reports on a run, it never steers one.

// First, so its `outln!` and `out!` are in scope in every module below.
#[macro_use]
mod stdout;

mod bench;
pub mod ci;
mod clean;
mod durability;
mod durability_backups;
mod explore;
mod list;
mod merge;
mod mutants;
mod output;
mod parallel;
mod regressions;
mod replay;
mod run;
mod scenarios;
pub mod sdk;
mod seeds;
mod serve;
mod show;
mod shrink;
mod sut;
mod workdir;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use clean::CleanArgs;

use crate::exit::Exit;

#[derive(Parser, Debug)]
#[command(
    name = "crashsim",
    version,
    about = "Deterministic fault injection for durable-workflow storage on SQLite"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run scenarios over many seeds and check every invariant.
    Run(RunArgs),
    /// Re-run one seed and print its full trace, trace hash and verdict.
    Replay(ReplayArgs),
    /// Measure how fast each known mistake is caught (the detection table).
    Mutants(MutantsArgs),
    /// What power cuts do under each journal mode, synchronous level and
    /// disk model; or, with --exhaustive, every cut point of one run; for
    /// crashsim's store, or yours with --sut
    Durability(DurabilityArgs),
    /// Minimise a failing seed while the same invariant keeps failing, and
    /// write a replay capsule.
    Shrink(ShrinkArgs),
    /// Every schedule of suspensions inside the store's calls up to a
    /// bound, for one seed of a scenario with [preempt] (a small one).
    Explore(explore::ExploreArgs),
    /// List scenarios, implementations, mutants, kill points and invariants.
    List(ListArgs),
    /// Print a built-in scenario's TOML, or write it to a file to start your own.
    Show(ShowArgs),
    /// Measure append throughput and commit latency against the disk's fsync
    /// limit: crashsim's own store, or yours with --sut.
    Bench(BenchArgs),
    /// Serve one of crashsim's own implementations over the adapter
    /// protocol on stdin/stdout (what `--mode process` runs; an example of
    /// the protocol's server side).
    Serve(ServeArgs),
    /// Remove the work directories of runs that were killed (their lock is
    /// free), and list (with --legacy, remove) older unlocked ones.
    Clean(CleanArgs),
    /// Work on report folders: `merge` the summaries of a run's partitions.
    Report(ReportCommand),
    /// Write the adapter SDK this binary speaks to (Python) into a folder,
    /// to `pip install` or put on the path.
    Sdk(sdk::SdkArgs),
    /// Write a CI file that gates your own store (`ci init github|gitlab --sut CMD`).
    Ci(ci::CiCommand),
}

#[derive(Args, Debug)]
pub struct ReportCommand {
    #[command(subcommand)]
    pub command: ReportSubcommand,
}

#[derive(Subcommand, Debug)]
pub enum ReportSubcommand {
    /// Merge the reports of several jobs of one run (the partitions of a
    /// seed range) into one summary.json, junit.xml, summary.md and
    /// index.html, with every failing seed's folder.
    Merge(MergeArgs),
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The jobs' report folders (each holding <scenario>/summary.json), or
    /// their summary.json files.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Where the merged reports go.
    #[arg(long, default_value = "reports/merged", value_name = "DIR")]
    pub out: PathBuf,
    /// Fail (exit 1) on a coverage gap of the merged run (see `run --require-fired`).
    #[arg(long)]
    pub require_fired: bool,
    /// Merge even when partitions are missing (by default an error, exit 2).
    #[arg(long)]
    pub allow_missing: bool,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The implementation to serve (`reference`, a mutant: `crashsim list`).
    pub implementation: String,
}

/// The store under test, when it is not one of crashsim's own.
#[derive(Args, Debug, Clone, Default)]
pub struct SutArgs {
    /// An outside store: a shell command that speaks the adapter protocol
    /// (docs/adapter-protocol.md), started once per connection (or once per
    /// seed, as a fork server, if it declares `fork`).
    #[arg(long, value_name = "CMD")]
    pub sut: Option<String>,
    /// Seconds an adapter may take to answer one request (wall clock);
    /// longer is a finding (A1) in a run, an error in a bench.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub sut_timeout: f64,
    /// Whether an adapter that declares the `fork` capability is started
    /// once per seed as a fork server (`auto`), or once per connection
    /// (`off`). Traces are the same either way; `off` is slower.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ForkArg::Auto)]
    pub sut_fork: ForkArg,
}

/// `--sut-fork`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ForkArg {
    #[default]
    Auto,
    Off,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

/// How actors run (`--mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// In the simulator's thread: a kill drops the connection.
    #[default]
    InProcess,
    /// Every connection a process of `crashsim serve`, spoken to over the
    /// adapter protocol and killed for real (SIGKILL) at kill points.
    Process,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Scenario files (TOML) or built-in names (`crashsim list`).
    #[arg(required_unless_present = "regressions")]
    pub scenarios: Vec<PathBuf>,
    /// Replay every capsule in this folder (default scenarios/regressions)
    /// and check each still gives the verdict it records.
    #[arg(long, num_args = 0..=1, default_missing_value = "scenarios/regressions", value_name = "DIR")]
    pub regressions: Option<PathBuf>,
    /// With --regressions: a corpus folder that does not exist replays
    /// nothing, with a warning, instead of being an error (exit code 2).
    #[arg(long, requires = "regressions")]
    pub allow_empty: bool,
    /// Skip, with a line saying why, each scenario the store cannot run (one
    /// with [leases], [retries] or [backup] when the adapter does not declare
    /// that capability) instead of stopping the run with exit code 2. A run
    /// that skips every scenario is still an error.
    #[arg(long)]
    pub skip_unsupported: bool,
    /// How many seeds to run, from --start-seed (default 100; with
    /// --time-budget, as many as the budget allows).
    #[arg(long)]
    pub seeds: Option<u64>,
    /// Run only this seed (decimal, 0x-hex, or a 40-digit commit hash).
    #[arg(long, value_parser = parse_seed_arg, conflicts_with_all = ["seeds", "start_seed"])]
    pub seed: Option<u64>,
    /// The first seed of the range.
    #[arg(long, value_parser = parse_seed_arg, default_value = "0")]
    pub start_seed: u64,
    /// Run only job K's share of the range, of N jobs (`count:K/N`, K from
    /// 1): N jobs together run every seed once. Default: from the
    /// environment of a CI system's parallel jobs (docs/reports.md, "CI at scale").
    #[arg(long, value_name = "count:K/N")]
    pub partition: Option<String>,
    /// Start seeds, in order, until this much wall time is spent (`90s`,
    /// `10m`, `1h30m`); the seeds that ended are a prefix, stated in the
    /// summary. Without --seeds the range is open-ended. Shared evenly by
    /// the scenarios not yet run.
    #[arg(long, value_name = "DURATION", value_parser = seeds::parse_duration)]
    pub time_budget: Option<std::time::Duration>,
    /// Start no seed once one has failed, and no scenario after it: the
    /// seeds running then finish, so the seeds that ended are a prefix,
    /// stated in the summary (a failing store's red build sooner; a failing
    /// seed often runs to its budget).
    #[arg(long, conflicts_with = "regressions")]
    pub fail_fast: bool,
    /// Fail (exit 1) when a declared kill point or fault never fired, or an
    /// invariant the scenario's faults make was never exercised, across the
    /// run (also `[faults] require_fired = true` in a scenario).
    #[arg(long)]
    pub require_fired: bool,
    /// Seeds run in parallel (default: all cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Where each seed's databases are created (default: /dev/shm if it exists, else the temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Keep the databases of failing seeds (their path is printed).
    #[arg(long)]
    pub keep_failed: bool,
    /// Connections in-process (fast) or each in a process killed for real.
    #[arg(long, value_enum, default_value_t = ModeArg::InProcess)]
    pub mode: ModeArg,
    /// Run this mutant (or any implementation) instead of each scenario's `store`.
    #[arg(long)]
    pub mutant: Option<String>,
    #[command(flatten)]
    pub sut: SutArgs,
    /// Run every seed twice; a seed whose two runs differ is a finding (D1)
    /// that names the first answer that differed.
    #[arg(long)]
    pub check_determinism: bool,
    /// Keep the databases' bytes in the real files. By default an in-process
    /// run without power loss keeps them in memory (no read, write or sync
    /// reaches the kernel; locks stay real) and writes them out when the seed
    /// ends. The traces are the same either way; this is slower, and meets
    /// the disk (a full one, say) the way a deployment would.
    #[arg(long)]
    pub files_on_disk: bool,
    #[command(flatten)]
    pub reports: ReportArgs,
}

/// Where report files go.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Where reports go.
    #[arg(long, default_value = "reports")]
    pub report: PathBuf,
    /// Write no report files.
    #[arg(long)]
    pub no_report: bool,
}

impl ReportArgs {
    /// The report root, unless reports are off.
    pub fn root(&self) -> Option<&std::path::Path> {
        (!self.no_report).then_some(self.report.as_path())
    }
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// A scenario file (TOML) or a built-in name.
    #[arg(required_unless_present = "capsule")]
    pub scenario: Option<PathBuf>,
    /// Replay a capsule (written by `shrink`) instead of a scenario and seed.
    #[arg(long, conflicts_with_all = ["scenario", "seed", "mutant"])]
    pub capsule: Option<PathBuf>,
    /// The seed to replay (default: the scenario's `seed`).
    #[arg(long, value_parser = parse_seed_arg)]
    pub seed: Option<u64>,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Run this mutant (or any implementation) instead of the scenario's `store`.
    #[arg(long)]
    pub mutant: Option<String>,
    /// Fail (exit 1) unless the trace hash is this one: catches non-determinism.
    #[arg(long)]
    pub expect_hash: Option<String>,
    /// Where the seed's databases are created.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Connections in-process (fast) or each in a process killed for real.
    #[arg(long, value_enum, default_value_t = ModeArg::InProcess)]
    pub mode: ModeArg,
    #[command(flatten)]
    pub sut: SutArgs,
    /// Print only the verdict, not the trace.
    #[arg(long)]
    pub quiet: bool,
    /// Instead of the seed's drawn faults, only a power cut at this
    /// persistence point (a crash state of `durability --exhaustive`).
    #[arg(long, value_name = "POINT", conflicts_with = "capsule")]
    pub cut: Option<u64>,
    /// Write the run as a replay capsule (its faults forced, its verdict
    /// expected), e.g. to pin a run in scenarios/regressions/.
    #[arg(long, value_name = "FILE")]
    pub save_capsule: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct MutantsArgs {
    /// Scenarios (files or built-in names) to run the mutants against
    /// (default: every scenario in scenarios/, or the built-in ones without it).
    #[arg(long)]
    pub scenario: Vec<PathBuf>,
    /// Only these mutants (default: all).
    #[arg(long)]
    pub mutant: Vec<String>,
    /// With --sut: a variant of your store with a known bug, as NAME=CMD
    /// (repeatable). Each is a row of the table, and --sut is the reference
    /// row, which must pass.
    #[arg(long, value_name = "NAME=CMD")]
    pub variant: Vec<String>,
    #[command(flatten)]
    pub sut: SutArgs,
    /// Seeds searched per range before a mutant counts as not caught.
    #[arg(long, default_value_t = 200)]
    pub seeds: u64,
    /// Disjoint start points per mutant and scenario; the median is reported.
    #[arg(long, default_value_t = 10)]
    pub ranges: u32,
    /// Seeds of each scenario the reference must pass (default: --seeds).
    #[arg(long)]
    pub reference_seeds: Option<u64>,
    /// Parallel searches (default: all cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Where each seed's databases are created.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    #[command(flatten)]
    pub reports: ReportArgs,
}

#[derive(Args, Debug)]
pub struct DurabilityArgs {
    /// Seeded power cuts per row of the table (default: 300; 40 with
    /// --sut, whose every cut starts the adapter's processes again).
    #[arg(long)]
    pub cuts: Option<u64>,
    /// The seed the cut points (and, with --exhaustive, the run) derive from.
    #[arg(long, value_parser = parse_seed_arg, default_value = "0")]
    pub seed: u64,
    /// Cut the power at every persistence point of this scenario's run
    /// instead (a file or a built-in name).
    #[arg(long, value_name = "SCENARIO")]
    pub exhaustive: Option<PathBuf>,
    /// With --exhaustive: only every n-th point.
    #[arg(long, default_value_t = 1)]
    pub every: u64,
    /// With --exhaustive: at most this many cuts.
    #[arg(long)]
    pub max_points: Option<u64>,
    /// With --exhaustive: run this mutant instead of the scenario's `store`.
    #[arg(long)]
    pub mutant: Option<String>,
    /// Measure backups instead: per journal mode, `synchronous` and backup
    /// method (online, or a copy of the main file alone), how many backups
    /// taken mid-workload were gone, inconsistent or lacked acknowledged
    /// appends, without and with a power cut after them (--cuts: runs per
    /// row, default 100; crashsim's reference store only).
    #[arg(long, conflicts_with = "exhaustive")]
    pub backups: bool,
    // --sut CMD: measure that store (the table's appends, or the
    // enumerated run) instead of crashsim's reference; its SQLite must
    // load crashsim's VFS extension.
    #[command(flatten)]
    pub sut: SutArgs,
    /// Rows measured in parallel (default: all cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Where the databases are created.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    #[command(flatten)]
    pub reports: ReportArgs,
}

#[derive(Args, Debug)]
pub struct ShrinkArgs {
    /// A scenario file (TOML) or a built-in name.
    pub scenario: PathBuf,
    /// The failing seed.
    #[arg(long, value_parser = parse_seed_arg)]
    pub seed: Option<u64>,
    /// Run this mutant instead of the scenario's `store`.
    #[arg(long)]
    pub mutant: Option<String>,
    #[command(flatten)]
    pub sut: SutArgs,
    /// Give up after this many candidate runs.
    #[arg(long, default_value_t = 2_000)]
    pub max_runs: u64,
    /// Where to write the capsule (default scenarios/regressions/<scenario>-<seed>.toml).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where each run's databases are created.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Reports (the capsule is written even with --no-report).
    #[command(flatten)]
    pub reports: ReportArgs,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// A folder of scenarios to list besides the built-in ones (default:
    /// scenarios, if it exists).
    #[arg(long, value_name = "DIR")]
    pub scenarios: Option<PathBuf>,
    /// Also describe this outside store: what its handshake says, and which
    /// kill points it lets the simulator reach.
    #[command(flatten)]
    pub sut: SutArgs,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// A built-in scenario (`crashsim list` names them).
    pub name: String,
    /// Write it to this file instead of printing it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// With --out: replace the file if it exists.
    #[arg(long, requires = "out")]
    pub force: bool,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// A directory on the disk to measure (default: the current directory,
    /// refused if it is on tmpfs). The bench works in a temporary directory inside it.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// A short run (seconds): checks that every path works; the numbers are rough.
    #[arg(long)]
    pub quick: bool,
    /// Rounds: every configuration runs once per round, interleaved; medians
    /// over rounds (default: 20, or 5 with --quick).
    #[arg(long)]
    pub rounds: Option<u32>,
    /// The timed part of each sample, in milliseconds (default: 250, or 20 with --quick).
    #[arg(long)]
    pub sample_ms: Option<u64>,
    /// Only configurations whose name contains one of these (comma-separated); the limit always runs.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    // --sut CMD: that store's append path (`sut_*`) and the protocol's cost
    // per call (`sut_ping`), next to the raw limits and crashsim's
    // `append_full`, in the same run.
    #[command(flatten)]
    pub sut: SutArgs,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Where reports go: the bench's land in DIR/bench/.
    #[arg(long, default_value = "reports")]
    pub report: PathBuf,
    /// Write no report files.
    #[arg(long)]
    pub no_report: bool,
    /// Write a baseline of this run to FILE: each configuration's ratio to
    /// the limit, its per-round ratios and their noise (for --baseline).
    #[arg(long, value_name = "FILE")]
    pub save_baseline: Option<PathBuf>,
    /// Compare each configuration's ratio to the limit with the baseline in
    /// FILE (from --save-baseline): exit 1 when one fell by more than
    /// --max-regression beyond the noise the two runs measured.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// How far a ratio may fall below the baseline's, beyond the noise,
    /// before the run fails: `10%` or `10`.
    #[arg(
        long,
        value_name = "PCT",
        default_value = "10%",
        value_parser = crate::bench::gate::parse_threshold,
        requires = "baseline"
    )]
    pub max_regression: f64,
    /// A demonstration aid for the gate: CONFIG (an `append_*_full`
    /// configuration) commits once more, so syncs once more, per append, in
    /// the bench's own loop only (`bench::plant`). Never saved as a baseline.
    #[arg(long, hide = true, value_name = "CONFIG", conflicts_with = "save_baseline")]
    pub plant_slowdown: Option<String>,
}

fn parse_seed_arg(text: &str) -> Result<u64, String> {
    crate::seed::parse_seed(text)
}

/// Runs a parsed command line; errors are printed here.
pub fn main(cli: Cli) -> Exit {
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Replay(args) => replay::replay(&args),
        Command::Shrink(args) => shrink::shrink(&args),
        Command::Explore(args) => explore::explore(&args),
        Command::Mutants(args) => mutants::mutants(&args),
        Command::Durability(args) => durability::durability(&args),
        Command::List(args) => list::list(&args),
        Command::Show(args) => show::show(&args),
        Command::Bench(args) => bench::bench(&args),
        Command::Clean(args) => clean::clean(&args),
        Command::Report(ReportCommand {
            command: ReportSubcommand::Merge(args),
        }) => merge::merge(&args),
        Command::Serve(args) => return serve::serve(&args),
        Command::Sdk(args) => sdk::sdk(&args),
        Command::Ci(args) => ci::ci(&args),
    };
    match result {
        Ok(exit) => exit,
        Err(error) => {
            eprintln!("error: {error:#}");
            Exit::BadInput
        }
    }
}
