//! `crashsim report merge DIR…`: the jobs of one partitioned run, read back
//! and written as one report (`report::merge` says what merges).
//!
//! Exit codes as `run`'s: 1 when a merged scenario has a failing seed (or,
//! under `--require-fired`, a coverage gap), 2 when the inputs do not merge,
//! a partition is missing (unless `--allow-missing`) or a seed ended in an
//! error, 0 otherwise.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::{Format, MergeArgs};
use crate::exit::Exit;
use crate::report::json::{RunSummary, SCHEMA_VERSION};
use crate::report::merge::{self, Part};
use crate::report::number::thousands;
use crate::report::{self, atomic, index, junit, markdown};

pub fn merge(args: &MergeArgs) -> anyhow::Result<Exit> {
    let mut parts = Vec::new();
    let mut skipped = Vec::new();
    for dir in &args.dirs {
        for file in summaries_in(dir)? {
            match read(&file)? {
                Some(run) => parts.extend(parts_of(&file, dir, run)),
                None => skipped.push(file),
            }
        }
    }
    let human = args.format == Format::Human;
    if human {
        for file in &skipped {
            outln!("note: skipped {}: not the summary of a run", file.display());
        }
    }
    let merged = merge::merge(parts).map_err(|refused| anyhow::anyhow!("{refused}"))?;
    let first = &merged.parts[0][0].run;
    let seconds = merged
        .parts
        .iter()
        .flatten()
        .map(|part| part.run.seconds)
        .fold(0.0, f64::max);
    let jobs = merged.parts.iter().flatten().map(|part| part.run.jobs).sum();
    let mut total = RunSummary::new(
        &merged.scenarios,
        seconds,
        jobs,
        &first.mode,
        Path::new(&first.work_dir),
        &first.filesystem,
    );
    total.git_commit = first.git_commit.clone();
    total.sqlite_version = first.sqlite_version.clone();
    total.merged_from = merged.sources.clone();
    for scenario in &mut total.scenarios {
        scenario.require_fired |= args.require_fired;
    }
    let gaps = total
        .scenarios
        .iter()
        .any(|scenario| scenario.require_fired && !scenario.coverage.gaps.is_empty());
    let missing = !merged.missing.is_empty() && !args.allow_missing;
    if total.outcome == "pass" && gaps {
        total.outcome = "fail".to_string();
    } else if total.outcome == "pass" && missing {
        total.outcome = "error".to_string();
    }

    let out = &args.out;
    let mut copied = Vec::new();
    for parts in &merged.parts {
        for part in parts {
            for failing in &part.scenario.failing_seeds {
                let from = part.seed_root.join(failing.seed.to_string());
                let to = report::seed_dir(out, &part.scenario.scenario, failing.seed);
                if from.is_dir() && !same_dir(&from, &to) {
                    copy_dir(&from, &to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
                }
                if to.join("report.html").is_file() {
                    copied.push((part.scenario.scenario.clone(), failing.seed));
                }
            }
        }
    }
    report::write_json(&out.join("summary.json"), &total)
        .with_context(|| format!("writing {}", out.join("summary.json").display()))?;
    atomic::write(&out.join("junit.xml"), junit::run(&total.scenarios).as_bytes())?;
    atomic::write(&out.join("summary.md"), markdown::run(&total).as_bytes())?;
    let page = index::page(&total, |scenario, seed| {
        copied.iter().any(|(name, copied)| name == scenario && *copied == seed)
    });
    atomic::write(&out.join("index.html"), page.as_bytes())?;

    if human {
        print_human(&total, &merged.missing, out);
    } else {
        let _ = writeln!(
            std::io::stdout(),
            "{}",
            serde_json::to_string(&total).expect("summaries serialise")
        );
    }
    for (scenario, partitions) in &merged.missing {
        let names: Vec<String> = partitions.iter().map(ToString::to_string).collect();
        let what = if args.allow_missing { "note" } else { "error" };
        eprintln!(
            "{what}: {scenario}: no summary of partition(s) {} was given: their seeds were not judged",
            names.join(", ")
        );
    }
    let mut exit = match total.outcome.as_str() {
        "pass" => Exit::Pass,
        "fail" => Exit::Violation,
        _ => Exit::BadInput,
    };
    if missing {
        exit = exit.worst(Exit::BadInput);
    }
    Ok(exit)
}

/// The summary files under `dir`: `dir` itself if it is one, `dir/summary.json`
/// (a merged report, or one scenario's folder), else `dir/*/summary.json`.
fn summaries_in(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if dir.is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    if !dir.is_dir() {
        bail!("{}: no such report folder or summary.json", dir.display());
    }
    let own = dir.join("summary.json");
    if own.is_file() {
        return Ok(vec![own]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("summary.json"))
        .filter(|file| file.is_file())
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("{}: no summary.json in it or in its folders", dir.display());
    }
    Ok(files)
}

/// A run's summary; `None` for another command's (`mutants`, `durability`).
fn read(file: &Path) -> anyhow::Result<Option<RunSummary>> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", file.display()))?;
    if value.get("summary") != Some(&serde_json::Value::Bool(true)) {
        return Ok(None);
    }
    match value.get("schema_version").and_then(serde_json::Value::as_u64) {
        None => bail!(
            "{}: no schema_version: it was written by a crashsim older than `report merge`; rerun that job",
            file.display()
        ),
        Some(version) if version > u64::from(SCHEMA_VERSION) => bail!(
            "{}: schema_version {version} is newer than this crashsim's ({SCHEMA_VERSION}): merge with the crashsim that wrote it",
            file.display()
        ),
        Some(_) => {}
    }
    let run = serde_json::from_value(value).with_context(|| format!("{}: not a run's summary", file.display()))?;
    Ok(Some(run))
}

/// One part per scenario of `run`, read from `file` under the folder `dir`.
fn parts_of(file: &Path, dir: &Path, run: RunSummary) -> Vec<Part> {
    let folder = file.parent().unwrap_or(dir).to_path_buf();
    run.scenarios
        .iter()
        .map(|scenario| {
            // A merged report keeps seeds under <scenario>/; a scenario's
            // own folder has them beside its summary.
            let nested = folder.join(&scenario.scenario);
            let seed_root = if nested.is_dir() { nested } else { folder.clone() };
            Part {
                file: file.to_path_buf(),
                seed_root,
                run: run.clone(),
                scenario: scenario.clone(),
            }
        })
        .collect()
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Copies a seed's report folder, each file written atomically.
fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            atomic::write(&target, &std::fs::read(entry.path())?)?;
        }
    }
    Ok(())
}

fn print_human(
    total: &RunSummary,
    missing: &std::collections::BTreeMap<String, Vec<crate::runner::Partition>>,
    out: &Path,
) {
    for scenario in &total.scenarios {
        let jobs: Vec<String> = scenario
            .parts
            .iter()
            .map(|part| part.partition.map_or("whole range".to_string(), |p| p.to_string()))
            .collect();
        outln!(
            "{}: {} seeds from {} ({}): {} passed, {} failed, {} errors; digest {}",
            scenario.scenario,
            thousands(scenario.seeds),
            match jobs.len() {
                1 => "1 job".to_string(),
                n => format!("{n} jobs"),
            },
            jobs.join(", "),
            thousands(scenario.passed),
            thousands(scenario.failed),
            thousands(scenario.errored),
            scenario.digest
        );
        outln!("  seeds {}", scenario.covered);
        if let Some(partitions) = missing.get(&scenario.scenario) {
            let names: Vec<String> = partitions.iter().map(ToString::to_string).collect();
            outln!("  missing partitions: {}", names.join(", "));
        }
        for failing in scenario.failing_seeds.iter().take(10) {
            outln!(
                "  seed={} {}: {}",
                failing.seed,
                failing.invariants.join(","),
                failing.first
            );
            outln!("    note: replay with `{}`", failing.replay);
        }
        for gap in &scenario.coverage.gaps {
            let what = if scenario.require_fired {
                "error: coverage gate"
            } else {
                "warning"
            };
            outln!("  {what}: {gap}");
        }
    }
    outln!(
        "{}: merged into {}/ (summary.json, junit.xml, summary.md, index.html)",
        total.outcome,
        out.display()
    );
}
