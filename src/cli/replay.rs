//! `crashsim replay`: one seed again (or one capsule), its full trace, hash
//! and verdict.

use std::io::Write;

use anyhow::anyhow;

use super::output::{failure_lines, replay_command, replay_command_prefix};
use super::sut::Choice;
use super::{Format, ReplayArgs};
use crate::capsule::Capsule;
use crate::durability::exhaustive;
use crate::exit::Exit;
use crate::faults::FaultSource;
use crate::report::json::SeedRecord;
use crate::runner::{self, Options, SeedResult};
use crate::scenario::{self, Loaded};
use crate::trace::{recorder, render};

/// What to replay: a scenario and seed, or a capsule.
struct Target {
    loaded: Loaded,
    seed: u64,
    faults: FaultSource,
    capsule: Option<Capsule>,
    command: String,
    choice: Choice,
}

fn target(args: &ReplayArgs) -> anyhow::Result<Target> {
    if let Some(path) = &args.capsule {
        let capsule = Capsule::read(path)?;
        let choice = capsule_choice(args, &capsule)?;
        let mut command = format!("{} replay --capsule {}", replay_command_prefix(), path.display());
        if args.sut.sut.is_some() || matches!(choice, Choice::Process) {
            command.push_str(&choice.replay_flags());
        }
        return Ok(Target {
            loaded: capsule.loaded(path),
            seed: capsule.seed,
            faults: capsule.faults(),
            command,
            capsule: Some(capsule),
            choice,
        });
    }
    let path = args
        .scenario
        .as_ref()
        .expect("clap requires a scenario without --capsule");
    let mut loaded = scenario::resolve(path)?;
    if let Some(mutant) = &args.mutant {
        loaded = loaded.with_mutant(mutant).map_err(anyhow::Error::msg)?;
    }
    let choice = Choice::from_args(&args.sut, args.mode, args.mutant.as_deref())?;
    if let Choice::Outside(adapter) = &choice {
        loaded = loaded.with_sut(&adapter.identity().name);
    }
    let seed = args
        .seed
        .or(loaded.scenario.seed)
        .ok_or_else(|| anyhow!("{}: no --seed given and the scenario sets no `seed`", path.display()))?;
    let mut command = replay_command(&loaded, seed, &choice.replay_flags());
    let faults = match args.cut {
        Some(point) => {
            command.push_str(&format!(" --cut {point}"));
            exhaustive::cut_at(point)
        }
        None => FaultSource::Drawn,
    };
    Ok(Target {
        command,
        loaded,
        seed,
        faults,
        capsule: None,
        choice,
    })
}

/// The store a capsule replays against: `--sut` if given, else the outside
/// store the capsule records (warning when its files changed), else its own.
fn capsule_choice(args: &ReplayArgs, capsule: &Capsule) -> anyhow::Result<Choice> {
    let (Some(recorded), None) = (&capsule.sut, &args.sut.sut) else {
        return Choice::from_args(&args.sut, args.mode, None);
    };
    let sut = super::SutArgs {
        sut: Some(recorded.command.clone()),
        ..args.sut.clone()
    };
    let choice = Choice::from_args(&sut, args.mode, None)?;
    if let Choice::Outside(adapter) = &choice {
        for change in recorded.changed_files(adapter.files()) {
            eprintln!("warning: {change}");
        }
    }
    Ok(choice)
}

pub fn replay(args: &ReplayArgs) -> anyhow::Result<Exit> {
    let Target {
        loaded,
        seed,
        faults,
        capsule,
        command,
        choice,
    } = target(args)?;
    let work = super::workdir::WorkDir::open(args.dir.as_deref())?;
    let options = Options {
        work_dir: work.path(),
        keep_failed: false,
        keep_traces: true,
        sut: choice.sut(&loaded, &args.sut)?,
        check_determinism: false,
        files: Default::default(),
    };
    let result = runner::run_seed_with(&loaded, seed, &options, faults)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match args.format {
        Format::Human => print_human(&mut out, args, &loaded, &result, &command)?,
        Format::Json => {
            if !args.quiet {
                write!(out, "{}", recorder::jsonl(result.events.as_deref().unwrap_or_default()))?;
            }
            let record = SeedRecord::new(&result, (!result.ok).then(|| command.clone()));
            writeln!(out, "{}", serde_json::to_string(&record).expect("records serialise"))?;
        }
    }
    if let Some(path) = &args.save_capsule {
        let mut capsule = Capsule::of_run(&loaded, &result);
        if let Choice::Outside(adapter) = &choice {
            capsule = capsule.with_sut(adapter);
        }
        crate::report::atomic::write(path, capsule.to_toml().as_bytes())
            .map_err(|error| anyhow!("writing {}: {error}", path.display()))?;
        eprintln!("note: capsule written to {}", path.display());
    }
    let mut exit = if result.ok { Exit::Pass } else { Exit::Violation };
    // The store's files changed since the capsule was made (a fix, say):
    // another trace is what a changed store gives, not non-determinism.
    let store_changed = match (&capsule, &choice) {
        (Some(capsule), Choice::Outside(adapter)) => capsule
            .sut
            .as_ref()
            .is_some_and(|sut| !sut.changed_files(adapter.files()).is_empty()),
        _ => false,
    };
    if let Some(capsule) = &capsule {
        match capsule.judge(&result) {
            Ok(()) => eprintln!("note: the capsule's recorded verdict is reproduced"),
            // Re-pinning (`--save-capsule`): the new verdict is the point.
            Err(why) if args.save_capsule.is_some() => {
                eprintln!(
                    "note: the capsule's recorded verdict is not reproduced ({why}); the capsule saved pins this run"
                )
            }
            Err(why) => eprintln!("warning: the capsule's recorded verdict is not reproduced: {why}"),
        }
        if capsule.same_build() && capsule.trace_hash != result.trace_hash && store_changed {
            eprintln!(
                "note: trace hash {} instead of the capsule's {}: the store's files changed since the capsule was \
                 made, so its trace may differ{}",
                result.trace_hash,
                capsule.trace_hash,
                match &args.save_capsule {
                    Some(_) => "; the capsule saved pins this run",
                    None => "; pin this run with --save-capsule",
                }
            );
        } else if capsule.same_build() && capsule.trace_hash != result.trace_hash {
            eprintln!(
                "error: non-determinism: same build ({}), but trace hash {} instead of the capsule's {}",
                capsule.git_commit, result.trace_hash, capsule.trace_hash
            );
            exit = Exit::Violation;
        } else if !capsule.same_build() {
            eprintln!(
                "note: the capsule was made by crashsim {} at {}; trace hashes compare only within one build",
                capsule.crashsim_version, capsule.git_commit
            );
        }
    }
    if let Some(expected) = &args.expect_hash
        && !result.trace_hash.eq_ignore_ascii_case(expected)
    {
        eprintln!(
            "error: non-determinism: seed {seed} gave trace hash {}, expected {expected}",
            result.trace_hash
        );
        exit = Exit::Violation;
    }
    Ok(exit)
}

fn print_human(
    out: &mut impl Write,
    args: &ReplayArgs,
    loaded: &Loaded,
    result: &SeedResult,
    command: &str,
) -> std::io::Result<()> {
    let events = result.events.as_deref().unwrap_or_default();
    // An outside store is named as its handshake names it, not as the
    // scenario's own store it replaces.
    let store = match &loaded.sut {
        Some(sut) => format!("{sut} (outside store)"),
        None => loaded.scenario.store.clone(),
    };
    writeln!(out, "seed={} scenario={} store={store}", result.seed, loaded.label(),)?;
    writeln!(out, "faults: {}", result.faults)?;
    if !args.quiet {
        for event in events {
            writeln!(out, "{}", render::line(event))?;
        }
    }
    writeln!(
        out,
        "trace hash {} ({} events, {} steps, {} ticks, {} faults injected, {})",
        result.trace_hash,
        events.len(),
        result.steps,
        result.ticks,
        result.injected.len(),
        if result.settled { "settled" } else { "did not settle" }
    )?;
    if result.ok {
        writeln!(out, "verdict: PASS, every invariant held")?;
    } else {
        writeln!(out, "verdict: FAIL, {} violation(s)", result.violations.len())?;
        for violation in &result.violations {
            writeln!(out, "  {violation}")?;
        }
        write!(
            out,
            "{}",
            failure_lines(result.seed, &result.violations, None, command, None)
        )?;
    }
    Ok(())
}
