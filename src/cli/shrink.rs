//! `crashsim shrink`: a failing seed made small, and its replay capsule.

use std::path::PathBuf;

use anyhow::{Context, anyhow};

use super::output::failure_lines;
use super::sut::{Choice, Traced, traced};
use super::{Format, ShrinkArgs};
use crate::capsule::Capsule;
use crate::exit::Exit;
use crate::report::number::thousands;
use crate::report::{self, atomic, junit, markdown};
use crate::scenario;
use crate::shrink::{ShrinkError, Size, shrink as shrink_run};

pub fn shrink(args: &ShrinkArgs) -> anyhow::Result<Exit> {
    let resolved = scenario::resolve(&args.scenario)?;
    let seed = args.seed.or(resolved.scenario.seed).ok_or_else(|| {
        anyhow!(
            "{}: no --seed given and the scenario sets no `seed`",
            args.scenario.display()
        )
    })?;
    let Traced {
        loaded,
        choice,
        options,
        work: _work,
    } = traced(resolved, args.mutant.as_deref(), &args.sut, args.dir.as_deref())?;
    let human = args.format == Format::Human;
    #[expect(
        clippy::disallowed_methods,
        reason = "wall time reports speed; it never steers a run"
    )]
    let started = std::time::Instant::now();
    let mut progress = |line: &str| {
        if human {
            eprintln!("  {line}");
        }
    };
    let shrunk = match shrink_run(&loaded, seed, &options, args.max_runs, &mut progress) {
        Err(ShrinkError::Passes { seed }) => {
            outln!("seed {seed} of {} passes: nothing to shrink", loaded.label());
            return Ok(Exit::Pass);
        }
        other => other?,
    };
    let seconds = started.elapsed().as_secs_f64();
    let mut capsule = Capsule::of_run(&shrunk.loaded, &shrunk.result);
    if let Choice::Outside(adapter) = &choice {
        capsule = capsule.with_sut(adapter);
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("scenarios/regressions").join(format!("{}-{seed}.toml", loaded.label())));
    atomic::write(&out, capsule.to_toml().as_bytes()).with_context(|| format!("writing {}", out.display()))?;
    let replay = format!("{} --capsule {}", replay_prefix(), out.display());

    let first = shrunk
        .result
        .violations
        .first()
        .map(ToString::to_string)
        .unwrap_or_default();
    let summary = serde_json::json!({
        "schema_version": crate::report::json::SCHEMA_VERSION,
        "scenario": loaded.label(),
        "seed": seed,
        "invariant": shrunk.target,
        "original": shrunk.original,
        "shrunk": shrunk.shrunk,
        "runs": shrunk.runs,
        "seconds": seconds,
        "capsule": out.display().to_string(),
        "replay": replay,
        "violations": shrunk.result.violations,
        "git_commit": crate::platform::git_commit(),
        "sqlite_version": crate::platform::sqlite_version(),
    });
    let report_dir = match args.reports.root() {
        None => None,
        Some(root) => {
            let dir = root.join("shrink").join(format!("{}-{seed}", loaded.label()));
            report::write_seed_to(&dir, &shrunk.result, &replay)
                .with_context(|| format!("writing the report under {}", dir.display()))?;
            atomic::write(&dir.join("capsule.toml"), capsule.to_toml().as_bytes())?;
            report::write_json(&dir.join("summary.json"), &summary)?;
            let junit = junit::shrink(&loaded.label(), seed, &first, &replay);
            atomic::write(&dir.join("junit.xml"), junit.as_bytes())?;
            let target = shrunk.target.to_string();
            let markdown = markdown::shrink(
                &loaded.label(),
                seed,
                &target,
                &shrunk.original,
                &shrunk.shrunk,
                &replay,
            );
            atomic::write(&dir.join("summary.md"), markdown.as_bytes())?;
            Some(dir)
        }
    };

    if human {
        outln!(
            "shrunk seed={seed} of {}: {} still fails",
            loaded.label(),
            shrunk.target
        );
        print_size("original", &shrunk.original);
        print_size("shrunk", &shrunk.shrunk);
        outln!("  ({} candidate runs in {seconds:.1} s)", shrunk.runs);
        out!(
            "{}",
            failure_lines(seed, &shrunk.result.violations, None, &replay, report_dir.as_deref())
        );
        outln!("note: capsule written to {}", out.display());
    } else {
        outln!("{summary}");
    }
    Ok(Exit::Violation)
}

fn print_size(label: &str, size: &Size) {
    outln!(
        "  {label:<9} {:>9} steps, {:>4} faults, {:>4} workflows, {:>3} actors",
        thousands(size.steps),
        size.faults,
        size.workflows,
        size.actors
    );
}

/// `cargo run --release -- replay` or `crashsim replay`, like the seed replay command.
fn replay_prefix() -> String {
    let command = super::output::replay_command_prefix();
    format!("{command} replay")
}
