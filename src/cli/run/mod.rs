//! `crashsim run`: scenarios × seeds, a summary, reports, an exit code.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use anyhow::{Context, bail};

mod human;

use super::output::{progress, replay_command, shrink_command};
use super::seeds::{self, Chosen};
use super::sut::Choice;
use super::workdir::WorkDir;
use super::{Format, RunArgs};
use crate::exit::Exit;
use crate::faults::KillPoint;
use crate::report::json::{ErrorRecord, RunSummary, ScenarioSummary, SeedRecord, SelectionSummary, SutSummary};
use crate::report::number::{self, thousands};
use crate::runner::{self, Options, Selection};
use crate::scenario::{self, Loaded};
use crate::sim::Files;
use crate::{platform, report};

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
    if args.skip_unsupported {
        scenarios = skip_unsupported(scenarios, &choice, args.format == Format::Human)?;
    }
    let chosen = seeds::choose(args, |name| std::env::var(name).ok())?;
    let selection = chosen.selection;
    if selection.is_empty() {
        bail!(
            "--partition {}: the range {} has no seed for this job",
            selection
                .partition
                .map(|partition| partition.to_string())
                .unwrap_or_default(),
            selection.range()
        );
    }
    let jobs = match args.jobs {
        Some(0) => bail!("--jobs must be at least 1"),
        Some(jobs) => jobs,
        None => std::thread::available_parallelism().map_or(1, usize::from),
    };
    // The first SIGINT or SIGTERM abandons the seeds running and starts no
    // more; the partial summary and reports are still written (`exit_of`).
    crate::interrupt::install().context("installing the SIGINT and SIGTERM handlers")?;
    // A report folder that cannot be written fails now, not after the seeds.
    if let Some(root) = args.reports.root() {
        writable(root).with_context(|| format!("--report {}: reports cannot be written there", root.display()))?;
    }
    // Each scenario's report folder, held until the run ends: a second run
    // writing the same folder stops here (exit 2), and no earlier run's
    // failing seeds stay beside this run's summary.
    let mut claims = Vec::new();
    if let Some(root) = args.reports.root() {
        let labels: std::collections::BTreeSet<String> = scenarios.iter().map(Loaded::label).collect();
        for label in labels {
            claims.push(report::claim::claim(root, &label)?);
        }
    }
    let work = WorkDir::open(args.dir.as_deref())?;
    for note in work.notes() {
        eprintln!("{note}");
    }
    let work_dir = work.parent.clone();
    let filesystem = platform::filesystem_of(&work_dir);
    let options = Options {
        work_dir: work.path(),
        keep_failed: args.keep_failed,
        keep_traces: false,
        sut: Default::default(),
        check_determinism: args.check_determinism,
        files: if args.files_on_disk { Files::Disk } else { Files::Memory },
    };
    let human = args.format == Format::Human;
    if human {
        outln!(
            "crashsim {} ({}), SQLite {}{}",
            env!("CARGO_PKG_VERSION"),
            platform::short_commit(platform::git_commit()),
            platform::sqlite_version(),
            store_sqlite_version(&choice)
                .map(|version| format!(" (crashsim's); the store's SQLite {version}"))
                .unwrap_or_default()
        );
        outln!(
            "seeds {} on {jobs} job(s); databases in {} ({filesystem}); store: {}{}",
            describe_seeds(&chosen, args.time_budget),
            work_dir.display(),
            describe_store(&choice, &scenarios),
            if args.check_determinism {
                "; every seed run twice (--check-determinism)"
            } else {
                ""
            }
        );
    }

    let mut exit = Exit::Pass;
    let mut summaries: Vec<ScenarioSummary> = Vec::new();
    #[expect(
        clippy::disallowed_methods,
        reason = "wall time reports speed; it never steers a run"
    )]
    let started = Instant::now();
    for (index, loaded) in scenarios.iter().enumerate() {
        if runner::abandoning() || (args.fail_fast && summaries.iter().any(|summary| summary.failed > 0)) {
            break;
        }
        let options = Options {
            sut: choice.sut(loaded, &args.sut)?,
            ..options.clone()
        };
        // What is left of the budget, shared by the scenarios not yet run.
        let deadline = args.time_budget.map(|budget| {
            let left = budget.saturating_sub(started.elapsed());
            started + started.elapsed() + left / (scenarios.len() - index) as u32
        });
        let run = Sweeping {
            selection: &selection,
            deadline,
            jobs,
        };
        let summary = run_scenario(args, loaded, &run, &options, &choice, &work)?;
        exit = exit.worst(exit_of(&summary)).worst(gate(args, loaded, &summary, human));
        if let Some(root) = args.reports.root() {
            let mut own = RunSummary::new(
                std::slice::from_ref(&summary),
                started.elapsed().as_secs_f64(),
                jobs,
                mode_name(&choice),
                &work_dir,
                &filesystem,
            );
            own.store_sqlite_version = store_sqlite_version(&choice);
            let dir = report::write_summary(root, &loaded.label(), &own)
                .with_context(|| format!("writing the summary under {}", root.display()))?;
            if human {
                let (bytes, seeds) = report::folder_size(&dir);
                outln!(
                    "  report: {}/ ({} failing seed folder{}, {})",
                    dir.display(),
                    seeds,
                    if seeds == 1 { "" } else { "s" },
                    number::bytes(bytes)
                );
            }
        }
        summaries.push(summary);
    }
    // Stopped before a scenario could say so (a signal, or a reader gone
    // before the first seed): an interrupted run, never a pass.
    if runner::abandoning() {
        exit = exit.worst(Exit::Interrupted(
            crate::interrupt::requested().map_or(2, |signal| signal.number()),
        ));
    }
    let mut total = RunSummary::new(
        &summaries,
        started.elapsed().as_secs_f64(),
        jobs,
        mode_name(&choice),
        &work_dir,
        &filesystem,
    );
    total.store_sqlite_version = store_sqlite_version(&choice);
    if human {
        if scenarios.len() > 1 {
            outln!(
                "all: {} seeds, {} failed, {} errors, {}",
                thousands(total.seeds),
                thousands(total.failed),
                thousands(total.errored),
                number::seed_rate(total.seeds_per_s)
            );
        }
        if summaries.len() < scenarios.len() {
            let skipped: Vec<String> = scenarios[summaries.len()..].iter().map(Loaded::label).collect();
            let why = if runner::abandoning() {
                "interrupted"
            } else {
                "stopped at the first failure (--fail-fast)"
            };
            outln!("{why}: not started: {}", skipped.join(", "));
        }
    } else {
        // A reader that stopped early (`| head`) closed the pipe: nothing to tell it.
        let _ = writeln!(
            std::io::stdout(),
            "{}",
            serde_json::to_string(&total).expect("summaries serialise")
        );
    }
    Ok(exit)
}

/// The scenarios the store can run; a line for each one it cannot, on
/// stdout beside the run's other lines (stderr with `--format json`, whose
/// stdout is one JSON document). Skipping them all is an error: a gate
/// that runs nothing must not pass.
fn skip_unsupported(scenarios: Vec<Loaded>, choice: &Choice, human: bool) -> anyhow::Result<Vec<Loaded>> {
    let total = scenarios.len();
    let mut kept = Vec::new();
    for loaded in scenarios {
        let why = match choice {
            Choice::Outside(adapter) => runner::unsupported(&loaded, &**adapter),
            Choice::Process if loaded.scenario.store == "group_commit" => {
                Some("--mode process cannot run group_commit: its writers share one in-process committer".into())
            }
            Choice::Builtin | Choice::Process => None,
        };
        match why {
            None => kept.push(loaded),
            Some(why) if human => outln!("skipped {}: {why}", loaded.label()),
            Some(why) => eprintln!("skipped {}: {why}", loaded.label()),
        }
    }
    if kept.is_empty() {
        bail!(
            "--skip-unsupported: the store can run none of the {total} scenario(s) named, so this run would check nothing"
        );
    }
    Ok(kept)
}

/// What one scenario's seeds say about the process's exit code: a finding
/// outranks an interrupt, which outranks an error.
fn exit_of(summary: &ScenarioSummary) -> Exit {
    if summary.failed > 0 {
        Exit::Violation
    } else if summary.interrupted.is_some() {
        Exit::Interrupted(crate::interrupt::requested().map_or(2, |signal| signal.number()))
    } else if summary.errored > 0 {
        Exit::BadInput
    } else {
        Exit::Pass
    }
}

/// The coverage gate (`--require-fired`, `[faults] require_fired`): a gap
/// in a run that was not interrupted fails it.
fn gate(args: &RunArgs, loaded: &Loaded, summary: &ScenarioSummary, human: bool) -> Exit {
    if !summary.require_fired || summary.interrupted.is_some() || summary.coverage.gaps.is_empty() {
        return Exit::Pass;
    }
    let from = match args.require_fired {
        true => "--require-fired",
        false => "its [faults] require_fired",
    };
    for gap in &summary.coverage.gaps {
        eprintln!("error: coverage gate ({from}): {}: {gap}", loaded.label());
    }
    if human {
        outln!(
            "  coverage gate failed: {} gap(s); more seeds, or higher rates, make them fire",
            summary.coverage.gaps.len()
        );
    }
    Exit::Violation
}

/// How one scenario's seeds are swept.
struct Sweeping<'a> {
    selection: &'a Selection,
    /// Start no seed after this (`--time-budget`).
    deadline: Option<Instant>,
    jobs: usize,
}

fn before(deadline: Option<Instant>) -> bool {
    #[expect(
        clippy::disallowed_methods,
        reason = "a time budget chooses how many seeds run, never what one does"
    )]
    deadline.is_none_or(|deadline| Instant::now() < deadline)
}

fn run_scenario(
    args: &RunArgs,
    loaded: &Loaded,
    run: &Sweeping<'_>,
    options: &Options,
    choice: &Choice,
    work: &WorkDir,
) -> anyhow::Result<ScenarioSummary> {
    let (selection, jobs) = (run.selection, run.jobs);
    let human = args.format == Format::Human;
    let flags = choice.replay_flags();
    let store = match &options.sut {
        runner::Sut::Adapter(adapter) => crate::store::Implementation::name(&**adapter).to_string(),
        runner::Sut::Scenario => loaded.scenario.store.clone(),
    };
    let unreachable = match &options.sut {
        runner::Sut::Adapter(adapter) => KillPoint::unreachable_by(&**adapter),
        runner::Sut::Scenario => Vec::new(),
    };
    if human && !unreachable.is_empty() {
        let names: Vec<&str> = unreachable.iter().map(|point| point.name()).collect();
        outln!(
            "note: this store's transactions are single calls: {} cannot be reached",
            names.join(", ")
        );
    }
    let workload = &loaded.scenario.workload;
    if human {
        outln!(
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
    let bar = progress(human, selection.len(), &loaded.label(), "seeds");
    let (mut failed_so_far, mut errors_so_far) = (0u64, 0u64);
    let mut report_dirs = BTreeMap::new();
    let mut report_error = None;
    #[expect(
        clippy::disallowed_methods,
        reason = "wall time reports speed; it never steers a run"
    )]
    let started = Instant::now();
    let stdout = std::io::stdout();
    // Each seed is handed on as soon as it and every seed before it ended:
    // a JSON line, and a failing seed's report, are written then, so a log
    // streams and an interrupted run keeps what it found.
    let deadline = run.deadline;
    let sweep = runner::sweep(
        loaded,
        selection,
        jobs,
        options,
        args.fail_fast,
        || before(deadline),
        |seed, ended| {
            let replay = replay_command(loaded, seed, &flags);
            let line = match ended {
                Ok(result) => {
                    if !result.ok {
                        failed_so_far += 1;
                        if let Some(root) = args.reports.root()
                            && report_error.is_none()
                        {
                            let shrink = shrink_command(loaded, seed, &flags);
                            let steps = report::NextSteps {
                                replay: &replay,
                                shrink: Some(&shrink),
                            };
                            match report::write_seed(root, result, steps) {
                                Ok(dir) => {
                                    report_dirs.insert(seed, dir);
                                }
                                Err(error) => report_error = Some((seed, error)),
                            }
                        }
                    }
                    let replay = (!result.ok).then_some(replay);
                    serde_json::to_string(&SeedRecord::new(result, replay))
                }
                Err(error) => {
                    errors_so_far += 1;
                    serde_json::to_string(&ErrorRecord::new(&loaded.label(), seed, error, replay))
                }
            };
            if !human {
                let mut out = stdout.lock();
                let _ = writeln!(out, "{}", line.expect("records serialise"));
                let _ = out.flush();
            }
            bar.set_message(match (failed_so_far, errors_so_far) {
                (0, 0) => String::new(),
                (failed, 0) => format!("{failed} failed"),
                (failed, errors) => format!("{failed} failed, {errors} errors"),
            });
            bar.inc(1);
        },
    );
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    if let Some((seed, error)) = report_error {
        return Err(anyhow::Error::new(error).context(format!("writing the report of seed {seed}")));
    }

    let covered = selection.ranges(sweep.ended.iter().map(|(seed, _)| *seed));
    let mut results = Vec::new();
    let mut errors = Vec::new();
    for (seed, ended) in sweep.ended {
        match ended {
            Ok(mut result) => {
                // Out of the workspace, which goes when the run ends.
                if let Some(dir) = result.kept_dir.take() {
                    let kept = work.workspace.keep(&dir);
                    result.kept_dir = Some(kept.with_context(|| format!("keeping {}", dir.display()))?);
                }
                results.push(result);
            }
            Err(error) => errors.push((seed, error)),
        }
    }
    let records = errors
        .iter()
        .map(|(seed, error)| ErrorRecord::new(&loaded.label(), *seed, error, replay_command(loaded, *seed, &flags)))
        .collect();
    let mut summary = ScenarioSummary::of(loaded, &store, &results, seconds, &unreachable, |seed| {
        replay_command(loaded, seed, &flags)
    })
    .with_errors(records, sweep.not_run.len() as u64, covered);
    summary.selection = SelectionSummary {
        budget_spent: sweep.budget_spent,
        stopped_at_failure: sweep.stopped_at_failure,
        ..SelectionSummary::new(selection, args.time_budget.map(|budget| budget.as_secs_f64()))
    };
    summary.require_fired = args.require_fired || loaded.scenario.faults.require_fired;
    if runner::abandoning() {
        summary.interrupted = Some(
            crate::interrupt::requested()
                .map_or("a signal", |signal| signal.name())
                .to_string(),
        );
    }
    if let Choice::Outside(adapter) = choice {
        summary.sut = Some(SutSummary::of(adapter));
    }
    if human {
        human::print(
            &summary,
            loaded,
            &results,
            &report_dirs,
            &flags,
            &unreachable,
            &work.parent,
        );
    }
    Ok(summary)
}

/// The header's store: a built-in store's calls run on coroutines where a
/// scenario suspends them (`sim::baton`).
fn describe_store(choice: &Choice, scenarios: &[Loaded]) -> String {
    let suspends = scenarios.iter().any(|loaded| loaded.scenario.preempt.is_some());
    match choice {
        Choice::Builtin if suspends => {
            "in-process, each connection's calls on a coroutine of its own where [preempt] suspends them".to_string()
        }
        choice => choice.describe(),
    }
}

/// The SQLite an outside store runs on, where it is known.
fn store_sqlite_version(choice: &Choice) -> Option<String> {
    match choice {
        Choice::Outside(adapter) => adapter.store_sqlite_version(),
        _ => None,
    }
}

fn mode_name(choice: &Choice) -> &'static str {
    match choice {
        Choice::Builtin => "in-process",
        Choice::Process => "process",
        Choice::Outside(_) => "adapter",
    }
}

fn describe_seeds(chosen: &Chosen, budget: Option<std::time::Duration>) -> String {
    let selection = &chosen.selection;
    let mut text = selection.range();
    if let (Some(partition), Some(from)) = (selection.partition, &chosen.from) {
        text = match selection.len() {
            Some(len) => format!("{text}, job {partition}'s share ({len} seeds; from {from})"),
            None => format!("{text}, job {partition}'s share (from {from})"),
        };
    }
    if let Some(budget) = budget {
        text.push_str(&format!(", until {} of wall time is spent", number::duration(budget)));
    }
    text
}

/// Creates `root` if need be and writes (and removes) a file in it.
fn writable(root: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(root)?;
    tempfile::NamedTempFile::new_in(root).map(drop)
}
