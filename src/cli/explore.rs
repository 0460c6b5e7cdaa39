//! `crashsim explore`: every schedule of suspensions up to a bound
//! (`crate::explore`), its verdict, and a capsule for the first schedule
//! that failed.

use std::path::PathBuf;

use anyhow::{Context, anyhow, bail};
use clap::Args;

use super::output::failure_lines;
use super::sut::{Choice, Traced, traced};
use super::{Format, ReportArgs, SutArgs, parse_seed_arg};
use crate::capsule::Capsule;
use crate::exit::Exit;
use crate::explore::{Bounds, Exploration, explore as explore_run};
use crate::report::atomic;
use crate::scenario;

#[derive(Args, Debug)]
pub struct ExploreArgs {
    /// A scenario file (TOML) or a built-in name, with a [preempt] section.
    pub scenario: PathBuf,
    /// The seed whose other faults (kills, duplicates, …) every schedule keeps.
    #[arg(long, value_parser = parse_seed_arg, default_value = "0")]
    pub seed: u64,
    /// Suspensions per schedule, at most.
    #[arg(long, default_value_t = 1)]
    pub bound: usize,
    /// Holds (ticks) to try each suspension at, comma-separated (default:
    /// the scenario's preempt.hold_ticks_max).
    #[arg(long, value_delimiter = ',')]
    pub holds: Vec<u64>,
    /// Stop after this many schedules (the verdict then says the search was cut).
    #[arg(long, default_value_t = 5_000)]
    pub max_runs: u64,
    /// Run this mutant instead of the scenario's `store`.
    #[arg(long)]
    pub mutant: Option<String>,
    #[command(flatten)]
    pub sut: SutArgs,
    /// Where to write the first failing schedule's capsule (default: under
    /// the report folder, explore/<scenario>-<seed>/capsule.toml).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where each run's databases are created.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    #[command(flatten)]
    pub reports: ReportArgs,
}

pub fn explore(args: &ExploreArgs) -> anyhow::Result<Exit> {
    let loaded = scenario::resolve(&args.scenario)?;
    let Some(preempt) = loaded.scenario.preempt.clone() else {
        bail!(
            "{}: explore enumerates suspensions inside the store's calls: the scenario needs a [preempt] section",
            args.scenario.display()
        );
    };
    if args.bound == 0 {
        bail!("--bound must be at least 1");
    }
    let holds = match args.holds.as_slice() {
        [] => vec![preempt.hold_ticks_max],
        holds => holds.to_vec(),
    };
    if let Some(hold) = holds.iter().find(|hold| !(1..=1_000_000).contains(*hold)) {
        bail!("--holds: {hold} is not 1..=1000000 ticks");
    }
    let Traced {
        loaded,
        choice,
        options,
        work: _work,
    } = traced(loaded, args.mutant.as_deref(), &args.sut, args.dir.as_deref())?;
    let human = args.format == Format::Human;
    let bar = super::output::progress_bar(human, 0, &loaded.label(), "schedules");
    let mut progress = |schedules: u64| bar.set_position(schedules);
    let bounds = Bounds {
        bound: args.bound,
        holds,
        max_runs: args.max_runs,
    };
    let found: Exploration = explore_run(&loaded, args.seed, &bounds, &options, &mut progress)?;
    bar.finish_and_clear();
    let capsule = match &found.first_failure {
        None => None,
        Some(failure) => {
            let mut capsule = Capsule::of_run(&loaded, failure);
            if let Choice::Outside(adapter) = &choice {
                capsule = capsule.with_sut(adapter);
            }
            let out = args.out.clone().or_else(|| {
                let root = args.reports.root()?;
                Some(
                    root.join("explore")
                        .join(format!("{}-{}", loaded.label(), args.seed))
                        .join("capsule.toml"),
                )
            });
            if let Some(out) = &out {
                atomic::write(out, capsule.to_toml().as_bytes())
                    .with_context(|| format!("writing {}", out.display()))?;
            }
            out
        }
    };
    let replay = capsule.as_ref().map(|out| {
        format!(
            "{} replay --capsule {}",
            super::output::replay_command_prefix(),
            out.display()
        )
    });
    if human {
        print_human(&found, replay.as_deref());
    } else {
        let mut json = serde_json::to_value(&found).map_err(|error| anyhow!("{error}"))?;
        json["schema_version"] = crate::report::json::SCHEMA_VERSION.into();
        json["capsule"] = capsule.map(|out| out.display().to_string()).into();
        json["replay"] = replay.into();
        outln!("{json}");
    }
    Ok(match found.failing {
        0 => Exit::Pass,
        _ => Exit::Violation,
    })
}

fn print_human(found: &Exploration, replay: Option<&str>) {
    let holds: Vec<String> = found.holds.iter().map(ToString::to_string).collect();
    outln!(
        "explore: {} seed {}, up to {} suspension(s) per schedule, held {} tick(s); {} scheduling points without one",
        found.scenario,
        found.seed,
        found.bound,
        holds.join(" or "),
        found.points
    );
    let scope = match found.complete {
        true => "every such schedule".to_string(),
        false => format!("cut short by --max-runs at {}", found.schedules),
    };
    let verdict = match found.failing {
        0 => "every one held".to_string(),
        failing => format!("{failing} failed"),
    };
    outln!(
        "  {} schedules run ({scope}), {} distinct traces: {verdict}",
        found.schedules,
        found.distinct
    );
    for (invariant, schedules) in &found.by_invariant {
        outln!("  {invariant} {}: {schedules} schedule(s)", invariant.title());
    }
    match (&found.first_failure, replay) {
        (Some(failure), Some(replay)) => {
            out!("{}", failure_lines(found.seed, &failure.violations, None, replay, None));
        }
        (Some(failure), None) => {
            if let Some(first) = failure.violations.first() {
                outln!("fail: seed={} {first}", found.seed);
            }
            outln!("note: no capsule written (--no-report and no --out): the failing schedule cannot be replayed");
        }
        (None, _) => {}
    }
}
