//! `crashsim run`: scenarios × seeds, a summary, reports, an exit code.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use anyhow::{Context, bail};

use super::output::{failure_lines, kill_table, progress_bar, replay_command};
use super::sut::Choice;
use super::{Format, RunArgs};
use crate::exit::Exit;
use crate::report::json::{RunSummary, ScenarioSummary, SeedRecord, SutSummary};
use crate::report::number::{self, thousands};
use crate::runner::{self, Options, SeedResult};
use crate::scenario::{self, Loaded};
use crate::sim::faults::KillPoint;
use crate::{platform, report};

/// Failing seeds printed in full; the rest are in the report.
const FAILURES_SHOWN: usize = 10;

pub fn run(args: &RunArgs) -> anyhow::Result<Exit> {
    let regressions = match &args.regressions {
        Some(dir) => super::regressions::run(dir, args)?,
        None => Exit::Pass,
    };
    if args.scenarios.is_empty() {
        return Ok(regressions);
    }
    let exit = run_scenarios(args)?;
    Ok(exit.worst(regressions))
}

fn run_scenarios(args: &RunArgs) -> anyhow::Result<Exit> {
    // Every scenario is validated before any seed runs: bad input exits 2 at once.
    let mut scenarios = args
        .scenarios
        .iter()
        .map(|path| scenario::resolve(path))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(mutant) = &args.mutant {
        scenarios = scenarios
            .into_iter()
            .map(|loaded| loaded.with_mutant(mutant))
            .collect::<Result<_, _>>()
            .map_err(anyhow::Error::msg)?;
    }
    let choice = Choice::from_args(&args.sut, args.mode, args.mutant.as_deref())?;
    if let Choice::Outside(adapter) = &choice {
        let name = &adapter.identity().name;
        scenarios = scenarios.into_iter().map(|loaded| loaded.with_sut(name)).collect();
    }
    let seeds: Vec<u64> = match args.seed {
        Some(seed) => vec![seed],
        None => {
            if args.seeds == 0 {
                bail!("--seeds must be at least 1");
            }
            let Some(end) = args.start_seed.checked_add(args.seeds - 1) else {
                bail!(
                    "--start-seed {} + --seeds {} runs past the largest seed",
                    args.start_seed,
                    args.seeds
                );
            };
            (args.start_seed..=end).collect()
        }
    };
    let jobs = match args.jobs {
        Some(0) => bail!("--jobs must be at least 1"),
        Some(jobs) => jobs,
        None => std::thread::available_parallelism().map_or(1, usize::from),
    };
    let work_dir = args.dir.clone().unwrap_or_else(runner::default_work_dir);
    if !work_dir.is_dir() {
        bail!("--dir {}: not a directory", work_dir.display());
    }
    let filesystem = platform::filesystem_of(&work_dir);
    let options = Options {
        work_dir: work_dir.clone(),
        keep_failed: args.keep_failed,
        keep_traces: false,
        sut: Default::default(),
        check_determinism: args.check_determinism,
    };
    let human = args.format == Format::Human;
    if human {
        println!(
            "crashsim {} ({}), SQLite {}",
            env!("CARGO_PKG_VERSION"),
            platform::short_commit(platform::git_commit()),
            platform::sqlite_version()
        );
        println!(
            "seeds {} on {jobs} job(s); databases in {} ({filesystem}); store: {}{}",
            describe_seeds(&seeds),
            work_dir.display(),
            choice.describe(),
            if args.check_determinism {
                "; every seed run twice (--check-determinism)"
            } else {
                ""
            }
        );
    }

    let mut exit = Exit::Pass;
    let mut summaries = Vec::new();
    #[expect(
        clippy::disallowed_methods,
        reason = "wall time reports speed; it never steers a run"
    )]
    let started = Instant::now();
    for loaded in &scenarios {
        let options = Options {
            sut: choice.sut(loaded, &args.sut)?,
            ..options.clone()
        };
        let summary = run_scenario(args, loaded, &seeds, jobs, &options, &choice)?;
        if summary.failed > 0 {
            exit = Exit::Violation;
        }
        if let Some(root) = args.reports.root() {
            let own = run_summary(
                std::slice::from_ref(&summary),
                started.elapsed().as_secs_f64(),
                jobs,
                &work_dir,
                &filesystem,
            );
            let mut own = own;
            own.mode = mode_name(&choice).to_string();
            report::write_summary(root, &loaded.label(), &own)
                .with_context(|| format!("writing the summary under {}", root.display()))?;
        }
        summaries.push(summary);
    }
    let mut total = run_summary(
        &summaries,
        started.elapsed().as_secs_f64(),
        jobs,
        &work_dir,
        &filesystem,
    );
    total.mode = mode_name(&choice).to_string();
    if human {
        if scenarios.len() > 1 {
            println!(
                "all: {} seeds, {} failed, {} seeds/s",
                thousands(total.seeds),
                thousands(total.failed),
                number::short(total.seeds_per_s)
            );
        }
    } else {
        println!("{}", serde_json::to_string(&total).expect("summaries serialise"));
    }
    Ok(exit)
}

fn run_scenario(
    args: &RunArgs,
    loaded: &Loaded,
    seeds: &[u64],
    jobs: usize,
    options: &Options,
    choice: &Choice,
) -> anyhow::Result<ScenarioSummary> {
    let human = args.format == Format::Human;
    let flags = choice.replay_flags();
    let store = match &options.sut {
        runner::Sut::Adapter(adapter) => crate::store::Implementation::name(&**adapter).to_string(),
        runner::Sut::Scenario => loaded.scenario.store.clone(),
    };
    let roles = match &options.sut {
        runner::Sut::Adapter(adapter) => crate::store::Implementation::roles(&**adapter),
        runner::Sut::Scenario => Default::default(),
    };
    let unreachable = KillPoint::unreachable(roles);
    if human && !unreachable.is_empty() {
        let names: Vec<&str> = unreachable.iter().map(|point| point.name()).collect();
        println!(
            "note: this store's transactions are single calls: {} cannot be reached",
            names.join(", ")
        );
    }
    let workload = &loaded.scenario.workload;
    if human {
        println!(
            "scenario {} ({}): store={}, {} trips, {} writers, {} workers, {} receivers; faults: {}",
            loaded.label(),
            loaded.origin(),
            store,
            workload.trips_count,
            workload.writers_count,
            workload.workers_count,
            workload.receivers_count,
            if loaded.scenario.faults.swarm {
                "swarm (drawn per seed)".to_string()
            } else {
                loaded.scenario.fault_plan().describe()
            }
        );
    }
    let bar = progress_bar(human, seeds.len() as u64, &loaded.label(), "seeds");
    let mut failed_so_far = 0u64;
    #[expect(
        clippy::disallowed_methods,
        reason = "wall time reports speed; it never steers a run"
    )]
    let started = Instant::now();
    let results = runner::run_seeds(loaded, seeds, jobs, options, |result| {
        if !result.ok {
            failed_so_far += 1;
            bar.set_message(format!("{failed_so_far} failed"));
        }
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();

    let mut summary = ScenarioSummary::of(loaded, &store, &results, seconds, &unreachable, |seed| {
        replay_command(loaded, seed, &flags)
    });
    if let Choice::Outside(adapter) = choice {
        summary.sut = Some(SutSummary::of(adapter));
    }

    let mut report_dirs = BTreeMap::new();
    if let Some(root) = args.reports.root() {
        for result in results.iter().filter(|result| !result.ok) {
            let replay = replay_command(loaded, result.seed, &flags);
            let dir = report::write_seed(root, result, &replay)
                .with_context(|| format!("writing the report of seed {}", result.seed))?;
            report_dirs.insert(result.seed, dir);
        }
    }
    if human {
        print_human(&summary, loaded, &results, &report_dirs, &flags, &unreachable);
    } else {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        for result in &results {
            let replay = (!result.ok).then(|| replay_command(loaded, result.seed, &flags));
            let line = serde_json::to_string(&SeedRecord::new(result, replay)).expect("records serialise");
            writeln!(out, "{line}")?;
        }
    }
    Ok(summary)
}

fn print_human(
    summary: &ScenarioSummary,
    loaded: &Loaded,
    results: &[SeedResult],
    report_dirs: &BTreeMap<u64, std::path::PathBuf>,
    flags: &str,
    unreachable: &[KillPoint],
) {
    for result in results.iter().filter(|result| !result.ok).take(FAILURES_SHOWN) {
        let replay = replay_command(loaded, result.seed, flags);
        let swarm_mix = loaded.scenario.faults.swarm.then_some(result.faults.as_str());
        let report = report_dirs.get(&result.seed).map(|dir| dir.as_path());
        print!(
            "{}",
            failure_lines(result.seed, &result.violations, swarm_mix, &replay, report)
        );
        if let Some(dir) = &result.kept_dir {
            println!("note: databases kept in {}", dir.display());
        }
    }
    if summary.failed as usize > FAILURES_SHOWN {
        println!(
            "… and {} more failing seeds (see summary.json)",
            summary.failed as usize - FAILURES_SHOWN
        );
    }
    println!(
        "{}: {} seeds in {:.1} s ({} seeds/s, {} steps/s): {} passed, {} failed",
        summary.scenario,
        thousands(summary.seeds),
        summary.seconds,
        number::short(summary.seeds_per_s),
        number::short(summary.steps_per_s),
        thousands(summary.passed),
        thousands(summary.failed)
    );
    if summary.violations_by_invariant.is_empty() {
        println!("  invariants: all held (I1-I7, I9 integrity, I10)");
    } else {
        let parts: Vec<String> = summary
            .violations_by_invariant
            .iter()
            .map(|(invariant, seeds)| format!("{invariant} in {seeds} seed(s)"))
            .collect();
        println!("  violations: {}", parts.join(", "));
    }
    print!("{}", kill_table(&summary.kills, unreachable));
    for point in &summary.never_fired {
        println!(
            "warning: {} declares {point}, but it never fired in {} seeds",
            summary.scenario, summary.seeds
        );
    }
}

fn run_summary(
    scenarios: &[ScenarioSummary],
    seconds: f64,
    jobs: usize,
    work_dir: &std::path::Path,
    filesystem: &str,
) -> RunSummary {
    let seeds: u64 = scenarios.iter().map(|s| s.seeds).sum();
    let steps: u64 = scenarios.iter().map(|s| s.steps).sum();
    let busy: f64 = scenarios.iter().map(|s| s.seconds).sum::<f64>().min(seconds).max(1e-9);
    RunSummary {
        summary: true,
        seeds,
        failed: scenarios.iter().map(|s| s.failed).sum(),
        seconds,
        seeds_per_s: seeds as f64 / busy,
        steps_per_s: steps as f64 / busy,
        jobs,
        mode: "in-process".to_string(),
        work_dir: work_dir.display().to_string(),
        filesystem: filesystem.to_string(),
        git_commit: platform::git_commit().to_string(),
        sqlite_version: platform::sqlite_version().to_string(),
        scenarios: scenarios.to_vec(),
    }
}

fn mode_name(choice: &Choice) -> &'static str {
    match choice {
        Choice::Builtin => "in-process",
        Choice::Process => "process",
        Choice::Outside(_) => "adapter",
    }
}

fn describe_seeds(seeds: &[u64]) -> String {
    match seeds {
        [] => "none".to_string(),
        [one] => one.to_string(),
        [first, .., last] => format!("{first}..={last}"),
    }
}
