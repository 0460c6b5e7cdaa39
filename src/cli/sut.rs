//! The store under test, as the command line names it: a scenario's own
//! `store` (or `--mutant`), an outside store (`--sut CMD`), or crashsim's own
//! served one connection per process (`--mode process`). And how a replay
//! command names it back.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};

use super::{ForkArg, ModeArg, SutArgs};
use crate::adapter::Adapter;
use crate::runner::Sut;
use crate::scenario::Loaded;

/// How the command line chose the store under test, for every scenario of a run.
#[derive(Clone, Debug)]
pub enum Choice {
    /// Each scenario's `store` (or the `--mutant`), in this process.
    Builtin,
    /// Each scenario's `store`, served by this executable per connection.
    Process,
    /// One outside store for every scenario.
    Outside(Arc<Adapter>),
}

impl Choice {
    /// Checks the flags and, for `--sut`, starts the adapter once to read its
    /// handshake: a command that cannot be an adapter is bad input (exit 2).
    pub fn from_args(sut: &SutArgs, mode: ModeArg, mutant: Option<&str>) -> anyhow::Result<Choice> {
        let timeout = timeout(sut)?;
        let Some(command) = &sut.sut else {
            return Ok(match mode {
                ModeArg::InProcess => Choice::Builtin,
                ModeArg::Process => Choice::Process,
            });
        };
        if mutant.is_some() {
            bail!("--sut and --mutant both name the store under test: give one");
        }
        if mode == ModeArg::Process {
            bail!("--sut already runs every connection as a process: drop --mode process");
        }
        let adapter = Adapter::probe(command, timeout, sut.sut_fork == ForkArg::Auto)?;
        Ok(Choice::Outside(Arc::new(adapter)))
    }

    /// The store under test for `loaded`.
    pub fn sut(&self, loaded: &Loaded, sut: &SutArgs) -> anyhow::Result<Sut> {
        Ok(match self {
            Choice::Builtin => Sut::Scenario,
            Choice::Outside(adapter) => Sut::Adapter(Arc::clone(adapter)),
            Choice::Process => {
                let store = &loaded.scenario.store;
                if store == "group_commit" {
                    bail!("--mode process cannot run group_commit: its writers share one in-process committer");
                }
                let exe = std::env::current_exe().context("finding crashsim's own executable")?;
                let fork = sut.sut_fork == ForkArg::Auto;
                Sut::Adapter(Arc::new(Adapter::serve(&exe, store, timeout(sut)?, fork)?))
            }
        })
    }

    /// What a replay command adds to name this store again.
    pub fn replay_flags(&self) -> String {
        match self {
            Choice::Builtin => String::new(),
            Choice::Process => " --mode process".to_string(),
            Choice::Outside(adapter) => format!(" --sut {}", crate::adapter::shell_word(adapter.command())),
        }
    }

    /// One line for the run's header.
    pub fn describe(&self) -> String {
        match self {
            Choice::Builtin => "in-process".to_string(),
            Choice::Process => "one `crashsim serve` process per connection (--mode process)".to_string(),
            Choice::Outside(adapter) => {
                let identity = adapter.identity();
                format!(
                    "outside store {}{} via `{}`: {}",
                    identity.name,
                    identity.version.as_deref().map(|v| format!(" {v}")).unwrap_or_default(),
                    adapter.command(),
                    adapter.served().describe()
                )
            }
        }
    }
}

fn timeout(sut: &SutArgs) -> anyhow::Result<Duration> {
    if !(sut.sut_timeout.is_finite() && sut.sut_timeout > 0.0) {
        bail!(
            "--sut-timeout must be a positive number of seconds, got {}",
            sut.sut_timeout
        );
    }
    Ok(Duration::from_secs_f64(sut.sut_timeout))
}

/// The store one seed is run against by `shrink` and `explore`: `loaded`
/// with `mutant` or the outside store in its place, and options that keep
/// every run's trace, in a work directory held as long as this is.
pub struct Traced {
    pub loaded: Loaded,
    pub choice: Choice,
    pub options: crate::runner::Options,
    /// Held while the runs need it: dropping it removes the directory.
    pub work: super::workdir::WorkDir,
}

pub fn traced(
    mut loaded: Loaded,
    mutant: Option<&str>,
    sut: &SutArgs,
    dir: Option<&std::path::Path>,
) -> anyhow::Result<Traced> {
    if let Some(mutant) = mutant {
        loaded = loaded.with_mutant(mutant).map_err(anyhow::Error::msg)?;
    }
    let choice = Choice::from_args(sut, ModeArg::InProcess, mutant)?;
    if let Choice::Outside(adapter) = &choice {
        loaded = loaded.with_sut(&adapter.identity().name);
    }
    let work = super::workdir::WorkDir::open(dir)?;
    let options = crate::runner::Options {
        work_dir: work.path(),
        keep_failed: false,
        keep_traces: true,
        sut: choice.sut(&loaded, sut)?,
        check_determinism: false,
        files: Default::default(),
    };
    Ok(Traced {
        loaded,
        choice,
        options,
        work,
    })
}
