//! The command line: `run`, `replay`, `list`.
//!
//! Wall-clock time appears here and only here (seeds per second, progress):
//! it reports on a run, it never steers one.

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
    /// Run this mutant (or any implementation) instead of each scenario's `store`.
    #[arg(long)]
    pub mutant: Option<String>,
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
    /// Run this mutant (or any implementation) instead of the scenario's `store`.
    #[arg(long)]
    pub mutant: Option<String>,
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

fn parse_seed_arg(text: &str) -> Result<u64, String> {
    crate::seed::parse_seed(text)
}

/// Runs a parsed command line; errors are printed here.
pub fn main(cli: Cli) -> Exit {
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Replay(args) => replay::replay(&args),
        Command::List(args) => list::list(&args),
    };
    match result {
        Ok(exit) => exit,
        Err(error) => {
            eprintln!("error: {error:#}");
            Exit::BadInput
        }
    }
}
