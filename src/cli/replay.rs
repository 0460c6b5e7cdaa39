//! `crashsim replay`: one seed again, its full trace, hash and verdict.

use std::io::Write;

use anyhow::anyhow;

use super::output::{failure_lines, replay_command};
use super::{Format, ReplayArgs};
use crate::exit::Exit;
use crate::report::json::SeedRecord;
use crate::runner::{self, Options};
use crate::scenario;
use crate::trace::{recorder, render};

pub fn replay(args: &ReplayArgs) -> anyhow::Result<Exit> {
    let mut loaded = scenario::load(&args.scenario)?;
    if let Some(mutant) = &args.mutant {
        loaded = loaded.with_mutant(mutant).map_err(anyhow::Error::msg)?;
    }
    let seed = args.seed.or(loaded.scenario.seed).ok_or_else(|| {
        anyhow!(
            "{}: no --seed given and the scenario sets no `seed`",
            args.scenario.display()
        )
    })?;
    let work_dir = args.dir.clone().unwrap_or_else(runner::default_work_dir);
    let options = Options {
        work_dir,
        keep_failed: false,
        keep_traces: true,
    };
    let result = runner::run_seed(&loaded, seed, &options)?;
    let events = result.events.as_deref().unwrap_or_default();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match args.format {
        Format::Human => {
            writeln!(
                out,
                "seed={seed} scenario={} store={}",
                loaded.name, loaded.scenario.store
            )?;
            writeln!(out, "faults: {}", result.faults)?;
            if !args.quiet {
                for event in events {
                    writeln!(out, "{}", render::line(event))?;
                }
            }
            writeln!(
                out,
                "trace hash {} ({} events, {} steps, {} ticks, {})",
                result.trace_hash,
                events.len(),
                result.steps,
                result.ticks,
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
                    failure_lines(seed, &result.violations, None, &replay_command(&loaded, seed), None)
                )?;
            }
        }
        Format::Json => {
            if !args.quiet {
                write!(out, "{}", recorder::jsonl(events))?;
            }
            let record = SeedRecord::new(&result, (!result.ok).then(|| replay_command(&loaded, seed)));
            writeln!(out, "{}", serde_json::to_string(&record).expect("records serialise"))?;
        }
    }
    if let Some(expected) = &args.expect_hash
        && !result.trace_hash.eq_ignore_ascii_case(expected)
    {
        eprintln!(
            "error: non-determinism: seed {seed} gave trace hash {}, expected {expected}",
            result.trace_hash
        );
        return Ok(Exit::Violation);
    }
    Ok(if result.ok { Exit::Pass } else { Exit::Violation })
}
