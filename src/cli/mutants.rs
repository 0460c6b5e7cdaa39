//! `crashsim mutants`: the detection table. Every mutant against the
//! scenarios, seeds-to-detection from several start points, and the
//! reference's row, which must be clean. Exits 1 if a mutant escapes or the
//! reference fails. With `--sut CMD --variant NAME=CMD…`, the same table for
//! an outside store: its variants with known bugs as rows, the store itself
//! as the reference.

use std::io::Write;
use std::sync::Arc;

use anyhow::{Context, bail};

use super::output::{replay_command, shrink_command};
use super::sut::Choice;
use super::{Format, MutantsArgs};
use crate::detect::{self, Row, Settings, Subject};
use crate::exit::Exit;
use crate::mutants;
use crate::report::{self, atomic, junit, markdown};
use crate::runner::{self, Options};
use crate::scenario::{self, Loaded};

pub fn mutants(args: &MutantsArgs) -> anyhow::Result<Exit> {
    let explicit = !args.scenario.is_empty();
    let mut scenarios: Vec<Loaded> = if explicit {
        args.scenario
            .iter()
            .map(|arg| scenario::resolve(arg))
            .collect::<Result<_, _>>()?
    } else {
        super::scenarios::default_set()?
    };
    // The mutants replace the reference, so the table needs reference scenarios;
    // shipped scenarios of another implementation are skipped, named ones refused.
    if let Some(other) = scenarios.iter().find(|loaded| loaded.scenario.store != "reference")
        && explicit
    {
        bail!(
            "{}: `store = {:?}`: the detection table runs the mutants against reference scenarios",
            other.path.display(),
            other.scenario.store
        );
    }
    scenarios.retain(|loaded| loaded.scenario.store == "reference");
    let (selected, reference) = subjects(args)?;
    if args.seeds == 0 || args.ranges == 0 {
        bail!("--seeds and --ranges must be at least 1");
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let work = super::workdir::WorkDir::open(args.dir.as_deref())?;
    let settings = Settings {
        seeds_max: args.seeds,
        ranges: args.ranges,
        reference_seeds: args.reference_seeds.unwrap_or(args.seeds),
        jobs,
        options: Options {
            work_dir: work.path(),
            keep_failed: false,
            keep_traces: false,
            sut: match &reference {
                Choice::Outside(adapter) => runner::Sut::Adapter(Arc::clone(adapter)),
                _ => runner::Sut::Scenario,
            },
            check_determinism: false,
            files: Default::default(),
        },
    };
    let human = args.format == Format::Human;
    if human {
        if let Choice::Outside(_) = &reference {
            outln!("reference: {}", reference.describe());
        }
        outln!(
            "{} mutant(s) × {} scenario(s), {} range(s) of up to {} seeds each; reference: {} seeds per scenario; {jobs} job(s)",
            selected.len(),
            scenarios.len(),
            settings.ranges,
            settings.seeds_max,
            settings.reference_seeds
        );
    }
    let progress = |mutant: &str, pair: &detect::Pair| {
        if human && std::env::var_os("CI").is_none() {
            let found = match pair.median_seeds_to_detection {
                Some(median) => format!("caught, median {median} seed(s)"),
                None if pair.first_seed.is_some() => "caught in some ranges".to_string(),
                None if pair.not_searched.is_some() => "not searched (identical to the reference here)".to_string(),
                None => "not caught".to_string(),
            };
            eprintln!("  {mutant} on {}: {found}", pair.scenario);
        }
    };
    let rows = detect::measure(&scenarios, &selected, &settings, &progress)?;

    match args.format {
        Format::Human => print_table(&rows),
        Format::Json => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            for row in &rows {
                writeln!(out, "{}", serde_json::to_string(row).expect("rows serialise"))?;
            }
        }
    }
    if let Some(root) = args.reports.root() {
        let dir = root.join("mutants");
        write_reports(&dir, &rows, &selected, &scenarios, &settings, &reference)
            .with_context(|| format!("writing the reports under {}", dir.display()))?;
        if human {
            outln!("note: reports written to {}/", dir.display());
        }
    }
    let escaped: Vec<String> = rows
        .iter()
        .filter(|row| !row.ok())
        .map(|row| match row.untested() {
            true => format!(
                "{} (untested: no scenario given makes the calls its mistake lives in)",
                row.mutant
            ),
            false => row.mutant.clone(),
        })
        .collect();
    if escaped.is_empty() {
        Ok(Exit::Pass)
    } else {
        if human {
            outln!("error: not as expected: {}", escaped.join(", "));
        }
        Ok(Exit::Violation)
    }
}

fn print_table(rows: &[Row]) {
    outln!(
        "{:<26} {:>3} {:<8} {:<12} {:<14} {:<14} {:>12} {:>8} {:>9}",
        "mutant",
        "#",
        "caught",
        "first by",
        "documented",
        "scenario",
        "first seed",
        "median",
        "wall ms"
    );
    for row in rows {
        let show = |value: Option<u64>| value.map_or_else(|| "-".to_string(), |v| v.to_string());
        outln!(
            "{:<26} {:>3} {:<8} {:<12} {:<14} {:<14} {:>12} {:>8} {:>9}",
            row.mutant,
            row.mistake.map_or_else(String::new, |m| m.to_string()),
            detect::verdict(row),
            detect::listed(&row.first_invariants),
            detect::documented(row),
            row.scenario.as_deref().unwrap_or("-"),
            show(row.first_seed),
            show(row.median_seeds_to_detection),
            show(row.wall_ms)
        );
    }
}

/// summary.json, junit.xml, summary.md, and each caught mutant's first
/// failing seed (trace and page) so the bug can be seen, not only counted.
fn write_reports(
    dir: &std::path::Path,
    rows: &[Row],
    subjects: &[Subject],
    scenarios: &[Loaded],
    settings: &Settings,
    reference: &Choice,
) -> anyhow::Result<()> {
    let summary = serde_json::json!({
        "schema_version": crate::report::json::SCHEMA_VERSION,
        "git_commit": crate::platform::git_commit(),
        "sqlite_version": crate::platform::sqlite_version(),
        "seeds_max": settings.seeds_max,
        "ranges": settings.ranges,
        "reference_seeds": settings.reference_seeds,
        "rows": rows,
    });
    report::write_json(&dir.join("summary.json"), &summary)?;
    atomic::write(
        &dir.join("junit.xml"),
        junit::mutants(rows, settings.seeds_max).as_bytes(),
    )?;
    atomic::write(
        &dir.join("summary.md"),
        markdown::mutants(rows, settings.seeds_max, settings.ranges).as_bytes(),
    )?;
    let keep = Options {
        keep_traces: true,
        check_determinism: false,
        files: Default::default(),
        ..settings.options.clone()
    };
    for row in rows.iter().filter(|row| row.caught) {
        let (Some(name), Some(seed)) = (&row.scenario, row.first_seed) else {
            continue;
        };
        let Some(loaded) = scenarios.iter().find(|loaded| &loaded.name == name) else {
            continue;
        };
        let subject = subjects.iter().find(|subject| subject.name() == row.mutant);
        let (loaded, options, flags) = match subject {
            Some(subject @ Subject::Outside { adapter, .. }) => {
                let (loaded, options) = subject.prepare(loaded, &keep);
                let flags = Choice::Outside(Arc::clone(adapter)).replay_flags();
                (loaded, options, flags)
            }
            Some(subject) => {
                let (loaded, options) = subject.prepare(loaded, &keep);
                (loaded, options, String::new())
            }
            None => (loaded.clone(), keep.clone(), reference.replay_flags()),
        };
        let result = runner::run_seed(&loaded, seed, &options)?;
        let seed_dir = dir.join(&row.mutant).join(format!("{name}-{seed}"));
        let replay = replay_command(&loaded, seed, &flags);
        let shrink = shrink_command(&loaded, seed, &flags);
        let steps = report::NextSteps {
            replay: &replay,
            shrink: Some(&shrink),
        };
        report::write_seed_to(&seed_dir, &result, steps)?;
    }
    Ok(())
}

/// The rows to measure and the store of the reference row: crashsim's
/// mutants against its reference, or an outside store's variants
/// (`--variant NAME=CMD`) against the store itself (`--sut CMD`).
fn subjects(args: &MutantsArgs) -> anyhow::Result<(Vec<Subject>, Choice)> {
    if args.sut.sut.is_none() {
        if !args.variant.is_empty() {
            bail!("--variant names variants of an outside store: give the store itself with --sut");
        }
        let selected = if args.mutant.is_empty() {
            mutants::MUTANTS.iter().map(Subject::Mutant).collect()
        } else {
            args.mutant
                .iter()
                .map(|name| {
                    mutants::by_name(name)
                        .map(Subject::Mutant)
                        .with_context(|| format!("unknown mutant {name:?}"))
                })
                .collect::<anyhow::Result<_>>()?
        };
        return Ok((selected, Choice::Builtin));
    }
    if !args.mutant.is_empty() {
        bail!("--mutant names crashsim's own mistakes; with --sut, give your store's as --variant NAME=CMD");
    }
    let reference = Choice::from_args(&args.sut, super::ModeArg::InProcess, None)?;
    let mut selected = Vec::new();
    for variant in &args.variant {
        let Some((name, command)) = variant
            .split_once('=')
            .filter(|(name, command)| !name.trim().is_empty() && !command.trim().is_empty())
        else {
            bail!("--variant {variant:?}: expected NAME=CMD");
        };
        let sut = super::SutArgs {
            sut: Some(command.trim().to_string()),
            ..args.sut.clone()
        };
        let Choice::Outside(adapter) = Choice::from_args(&sut, super::ModeArg::InProcess, None)? else {
            unreachable!("--sut was given");
        };
        selected.push(Subject::Outside {
            name: name.trim().to_string(),
            adapter,
        });
    }
    Ok((selected, reference))
}
