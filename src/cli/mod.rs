//! The command line: `run`, `replay`, `list`, `bench`.
//!
//! Wall-clock time appears here and in `bench` only (seeds per second,
//! progress, throughput): it reports on a run, it never steers one.

mod bench;
mod list;
mod output;
mod replay;
mod run;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// List scenarios, implementations, kill points and invariants.
    List(ListArgs),
    /// Measure append throughput and commit latency against the disk's fsync limit.
    Bench(BenchArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Scenario files (TOML).
    #[arg(required = true)]
    pub scenarios: Vec<PathBuf>,
    /// How many seeds to run, from --start-seed.
    #[arg(long, default_value_t = 100)]
    pub seeds: u64,
    /// Run only this seed (decimal, 0x-hex, or a 40-digit commit hash).
    #[arg(long, value_parser = parse_seed_arg, conflicts_with_all = ["seeds", "start_seed"])]
    pub seed: Option<u64>,
    /// The first seed of the range.
    #[arg(long, value_parser = parse_seed_arg, default_value = "0")]
    pub start_seed: u64,
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
    /// Where reports go.
    #[arg(long, default_value = "reports")]
    pub report: PathBuf,
    /// Write no report files.
    #[arg(long)]
    pub no_report: bool,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    /// The seed to replay (default: the scenario's `seed`).
    #[arg(long, value_parser = parse_seed_arg)]
    pub seed: Option<u64>,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Fail (exit 1) unless the trace hash is this one: catches non-determinism.
    #[arg(long)]
    pub expect_hash: Option<String>,
    /// Where the seed's databases are created.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Print only the verdict, not the trace.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// The folder to look for scenarios in.
    #[arg(long, default_value = "scenarios")]
    pub scenarios: PathBuf,
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
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Where reports go: the bench's land in DIR/bench/.
    #[arg(long, default_value = "reports")]
    pub report: PathBuf,
    /// Write no report files.
    #[arg(long)]
    pub no_report: bool,
}

fn parse_seed_arg(text: &str) -> Result<u64, String> {
    crate::seed::parse_seed(text)
}

/// Runs a parsed command line; errors are printed here.
pub fn main(cli: Cli) -> Exit {
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Replay(args) => replay::replay(&args),
        Command::List(args) => list::list(&args),
        Command::Bench(args) => bench::bench(&args),
    };
    match result {
        Ok(exit) => exit,
        Err(error) => {
            eprintln!("error: {error:#}");
            Exit::BadInput
        }
    }
}
