//! `crashsim run --regressions [DIR]`: replays every capsule in the
//! regression corpus and checks each still gives the verdict it records
//! (a mutant's failure keeps failing with its invariant; a reference pass
//! keeps passing). Its report goes to `<report>/regressions/`: JUnit (a
//! test case per capsule), `summary.json`, and a folder per capsule that
//! no longer gives its verdict, named by the capsule's file stem.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

use super::output::replay_command_prefix;
use super::{Format, RunArgs};
use crate::adapter::shell_word;
use crate::capsule::Capsule;
use crate::exit::Exit;
use crate::report::junit::Regression;
use crate::report::{self, atomic, claim};
use crate::runner::{self, Options};

/// The report folder's name under the report root.
const FOLDER: &str = "regressions";

pub fn run(dir: &Path, args: &RunArgs) -> anyhow::Result<Exit> {
    let paths = match crate::scenario::files_in(dir) {
        Ok(paths) => paths,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound && args.allow_empty => Vec::new(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
            "{}: there is no regression corpus here, so this gate would check nothing; \
             save capsules there (`crashsim replay … --save-capsule`), name the folder, \
             or pass --allow-empty",
            dir.display()
        ),
        Err(error) => {
            return Err(error).with_context(|| format!("{}: cannot list the regression corpus", dir.display()));
        }
    };
    // A gate that replays nothing passes; say so where CI logs show it.
    if paths.is_empty() {
        eprintln!(
            "warning: the regression corpus {} holds no capsule (*.toml): nothing was replayed",
            dir.display()
        );
    }
    // Every capsule is read before any runs: a broken one is bad input.
    let capsules = paths
        .iter()
        .map(|path| Capsule::read(path).map(|capsule| (path, capsule)))
        .collect::<Result<Vec<_>, _>>()?;
    // The report folder is claimed before any capsule runs: a busy or
    // unwritable one stops the gate before it spends its time.
    let claimed = match args.reports.root() {
        Some(root) => Some(claim_folder(root)?),
        None => None,
    };
    let work = super::workdir::WorkDir::open(args.dir.as_deref())?;
    let options = Options {
        work_dir: work.path(),
        keep_failed: args.keep_failed,
        keep_traces: false,
        sut: Default::default(),
        check_determinism: false,
        files: Default::default(),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut replayed = Vec::new();
    for (path, capsule) in &capsules {
        let loaded = capsule.loaded(path);
        // A capsule of an outside store replays against the command it records.
        let options = match &capsule.sut {
            Some(sut) => {
                let args = super::SutArgs {
                    sut: Some(sut.command.clone()),
                    ..args.sut.clone()
                };
                let choice = super::sut::Choice::from_args(&args, super::ModeArg::InProcess, None)?;
                if let super::sut::Choice::Outside(adapter) = &choice {
                    for change in sut.changed_files(adapter.files()) {
                        eprintln!("warning: {}: {change}", path.display());
                    }
                }
                Options {
                    sut: choice.sut(&loaded, &args)?,
                    ..options.clone()
                }
            }
            None => options.clone(),
        };
        let result = runner::run_seed_with(&loaded, capsule.seed, &options, capsule.faults())?;
        let verdict = capsule.judge(&result);
        let replay = format!(
            "{} replay --capsule {}",
            replay_command_prefix(),
            shell_word(&path.display().to_string())
        );
        if verdict.is_err()
            && let Some(claim) = &claimed
        {
            let stem = path
                .file_stem()
                .map_or_else(|| "capsule".into(), |stem| stem.to_string_lossy());
            let dir = claim.dir.join(stem.as_ref());
            report::write_seed_to(&dir, &result, &replay)
                .with_context(|| format!("writing the report under {}", dir.display()))?;
        }
        let regression = Regression {
            capsule: path.display().to_string(),
            mismatch: verdict.err(),
            replay,
            trace_hash: result.trace_hash,
        };
        match args.format {
            Format::Human => match &regression.mismatch {
                None => writeln!(out, "regression {}: ok", regression.capsule)?,
                Some(why) => writeln!(out, "error: regression {}: {why}", regression.capsule)?,
            },
            Format::Json => {
                let line = serde_json::json!({
                    "regression": regression.capsule,
                    "ok": regression.mismatch.is_none(),
                    "message": regression.mismatch,
                    "trace_hash": regression.trace_hash,
                });
                writeln!(out, "{line}")?;
            }
        }
        replayed.push(regression);
    }
    let failed = replayed
        .iter()
        .filter(|regression| regression.mismatch.is_some())
        .count();
    if let Some(claim) = &claimed {
        write_report(&claim.dir, dir, &replayed)?;
    }
    if args.format == Format::Human {
        writeln!(
            out,
            "regressions: {} capsule(s), {failed} not as recorded",
            capsules.len()
        )?;
        if let Some(claim) = &claimed {
            writeln!(out, "  report: {}/", claim.dir.display())?;
        }
    }
    Ok(if failed == 0 { Exit::Pass } else { Exit::Violation })
}

/// Claims `<root>/regressions/` and clears the capsule folders an earlier
/// run left there (the whole folder is this command's).
fn claim_folder(root: &Path) -> anyhow::Result<claim::Claim> {
    let claimed = claim::claim(root, FOLDER)?;
    let clear = || -> std::io::Result<()> {
        for entry in std::fs::read_dir(&claimed.dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                std::fs::remove_dir_all(entry.path())?;
            }
        }
        Ok(())
    };
    clear().with_context(|| format!("{}: cannot clear the previous report", claimed.dir.display()))?;
    Ok(claimed)
}

/// `junit.xml` and `summary.json` of the corpus run.
fn write_report(dir: &Path, corpus: &Path, replayed: &[Regression]) -> anyhow::Result<()> {
    let corpus = corpus.display().to_string();
    atomic::write(
        &dir.join("junit.xml"),
        report::junit::regressions(&corpus, replayed).as_bytes(),
    )?;
    let summary = serde_json::json!({
        "corpus": corpus,
        "capsules": replayed.len(),
        "not_as_recorded": replayed.iter().filter(|regression| regression.mismatch.is_some()).count(),
        "results": replayed
            .iter()
            .map(|regression| serde_json::json!({
                "capsule": regression.capsule,
                "ok": regression.mismatch.is_none(),
                "message": regression.mismatch,
                "replay": regression.replay,
                "trace_hash": regression.trace_hash,
            }))
            .collect::<Vec<_>>(),
        "git_commit": crate::platform::git_commit(),
        "sqlite_version": crate::platform::sqlite_version(),
    });
    report::write_json(&dir.join("summary.json"), &summary)
        .with_context(|| format!("writing {}", dir.join("summary.json").display()))?;
    Ok(())
}
