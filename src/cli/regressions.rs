//! `crashsim run --regressions [DIR]`: replays every capsule in the
//! regression corpus and checks each still gives the verdict it records
//! (a mutant's failure keeps failing with its invariant; a reference pass
//! keeps passing).

use std::io::Write;
use std::path::Path;

use anyhow::Context;

use super::{Format, RunArgs};
use crate::capsule::Capsule;
use crate::exit::Exit;
use crate::runner::{self, Options};

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
    let mut failed = 0;
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
                Options {
                    sut: choice.sut(&loaded, &args)?,
                    ..options.clone()
                }
            }
            None => options.clone(),
        };
        let result = runner::run_seed_with(&loaded, capsule.seed, &options, capsule.faults())?;
        let verdict = capsule.judge(&result);
        if verdict.is_err() {
            failed += 1;
        }
        match args.format {
            Format::Human => match &verdict {
                Ok(()) => writeln!(out, "regression {}: ok", path.display())?,
                Err(why) => writeln!(out, "error: regression {}: {why}", path.display())?,
            },
            Format::Json => {
                let line = serde_json::json!({
                    "regression": path.display().to_string(),
                    "ok": verdict.is_ok(),
                    "message": verdict.err(),
                    "trace_hash": result.trace_hash,
                });
                writeln!(out, "{line}")?;
            }
        }
    }
    if args.format == Format::Human {
        writeln!(
            out,
            "regressions: {} capsule(s), {failed} not as recorded",
            capsules.len()
        )?;
    }
    Ok(if failed == 0 { Exit::Pass } else { Exit::Violation })
}
