//! Runs the configurations interleaved round by round (A B C … A B C …), so
//! that every configuration sees the same noise, and summarises each.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::measure::{Budget, Sample, Summary};
use super::plan::{Config, Kind};
use super::{plant, raw, sqlite, sut, threads};
use crate::adapter::Adapter;
use crate::store::StoreError;
use crate::vfs::{CountingVfs, VfsError};

/// What to measure, where, for how long.
#[derive(Clone, Debug)]
pub struct Options {
    /// A directory on the disk to measure; the bench works in a temporary
    /// directory inside it and removes it afterwards.
    pub dir: PathBuf,
    pub configs: Vec<Config>,
    pub rounds: u32,
    pub budget: Budget,
    /// The outside store (`--sut`) the `sut_*` configurations measure.
    pub sut: Option<Arc<Adapter>>,
    /// The configuration that gets one extra sync per append
    /// (`--plant-slowdown`, checked by `plant::check`): a demonstration aid.
    pub plant_slowdown: Option<String>,
}

/// The default rounds of a full run. Many short samples rather than a few
/// long ones: a shared or rate-limited disk changes speed from one second
/// to the next (a cloud disk's IOPS budget runs out and refills), and each
/// configuration's median should sample as many of those states as the
/// limit's does, so that their ratio compares like with like.
pub const ROUNDS: u32 = 20;

/// The rounds of `--quick`: still enough for a median and a range.
pub const QUICK_ROUNDS: u32 = 5;

impl Budget {
    /// A full run: 250 ms per sample, about two minutes in all.
    pub const FULL: Budget = Budget {
        sample: Duration::from_millis(250),
        warmup_ops: 20,
    };
    /// `--quick`: seconds in all; checks that everything runs, numbers are rough.
    pub const QUICK: Budget = Budget {
        sample: Duration::from_millis(20),
        warmup_ops: 3,
    };
}

/// A bench that could not finish. Each cause is in the message, not a
/// `source`, so an error chain names it once.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("creating a work directory under {dir}: {error}")]
    WorkDir { dir: PathBuf, error: std::io::Error },
    #[error("registering the counting VFS: {0}")]
    Vfs(VfsError),
    #[error("{config}: {error}")]
    Io { config: String, error: std::io::Error },
    #[error("{config}: {error}")]
    Store { config: String, error: StoreError },
    /// The outside store failed: the cause, with its stderr.
    #[error("{config}: the outside store failed: {message}")]
    Sut { config: String, message: String },
}

impl From<VfsError> for BenchError {
    fn from(error: VfsError) -> BenchError {
        BenchError::Vfs(error)
    }
}

/// One configuration's result.
#[derive(Clone, Debug)]
pub struct Measured {
    pub config: Config,
    pub summary: Summary,
    /// Something the reader should know about how it was measured.
    pub note: Option<String>,
}

/// What a configuration keeps from one round to the next.
enum Fixture {
    None,
    /// Keeps the WAL at steady state until the bench ends (`sqlite::steady_state`).
    Keeper {
        _connection: rusqlite::Connection,
    },
    /// The outside store's process and database.
    Sut(Box<sut::Session>),
}

/// Runs every round; `progress` hears of each sample before it starts.
pub fn run(options: &Options, mut progress: impl FnMut(u32, &Config)) -> Result<Vec<Measured>, BenchError> {
    let work = tempfile::Builder::new()
        .prefix("crashsim-bench-")
        .tempdir_in(&options.dir)
        .map_err(|error| BenchError::WorkDir {
            dir: options.dir.clone(),
            error,
        })?;
    let vfs = CountingVfs::register(&vfs_name())?;
    // Each configuration's directory, and what it keeps across rounds.
    let mut fixtures = Vec::new();
    for config in &options.configs {
        let dir = work.path().join(&config.name);
        std::fs::create_dir_all(&dir).map_err(|error| BenchError::Io {
            config: config.name.clone(),
            error,
        })?;
        let fixture = match config.kind {
            Kind::RawOverwriteFsync { .. }
            | Kind::RawOverwriteFdatasync { .. }
            | Kind::RawWalFrames { .. }
            | Kind::RawAppendFdatasync { .. }
            | Kind::ConnPerAppend => Fixture::None,
            Kind::SutAppend { .. } | Kind::SutPing | Kind::SutSuspend | Kind::SutConnect { .. } => {
                let sut_error = |message: String| BenchError::Sut {
                    config: config.name.clone(),
                    message,
                };
                let adapter = options
                    .sut
                    .as_ref()
                    .ok_or_else(|| sut_error("no outside store was given (--sut CMD)".to_string()))?;
                let fork = !matches!(config.kind, Kind::SutConnect { fork: false });
                let suspends = config.kind == Kind::SutSuspend;
                Fixture::Sut(Box::new(
                    sut::Session::start(adapter, &dir, fork, suspends).map_err(sut_error)?,
                ))
            }
            _ => Fixture::Keeper {
                _connection: sqlite::steady_state(&dir, &vfs).map_err(|error| BenchError::Store {
                    config: config.name.clone(),
                    error,
                })?,
            },
        };
        fixtures.push((dir, fixture));
    }
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); options.configs.len()];
    let planted = |config: &Config| options.plant_slowdown.as_deref() == Some(config.name.as_str());
    for round in 0..options.rounds {
        for ((config, (dir, fixture)), samples) in options.configs.iter().zip(&mut fixtures).zip(&mut samples) {
            progress(round, config);
            samples.push(sample(config, dir, fixture, &vfs, options.budget, planted(config))?);
        }
    }
    let notes: Vec<Option<String>> = options
        .configs
        .iter()
        .zip(&fixtures)
        .map(|(config, (_, fixture))| match fixture {
            Fixture::Sut(session) => session.note.clone(),
            _ if planted(config) => Some(plant::NOTE.to_string()),
            _ => None,
        })
        .collect();
    drop(fixtures);
    Ok(options
        .configs
        .iter()
        .zip(samples)
        .zip(notes)
        .map(|((config, samples), note)| Measured {
            config: config.clone(),
            summary: Summary::of(&samples),
            note,
        })
        .collect())
}

/// A name no other bench in this process has taken (VFS names are global).
fn vfs_name() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "crashsim-bench-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn sample(
    config: &Config,
    dir: &std::path::Path,
    fixture: &mut Fixture,
    vfs: &CountingVfs,
    budget: Budget,
    planted: bool,
) -> Result<Sample, BenchError> {
    let io = |error| BenchError::Io {
        config: config.name.clone(),
        error,
    };
    let store = |error| BenchError::Store {
        config: config.name.clone(),
        error,
    };
    let outside = |message| BenchError::Sut {
        config: config.name.clone(),
        message,
    };
    match config.kind {
        Kind::RawOverwriteFsync { bytes } => raw::overwrite_fsync(dir, bytes, budget, false).map_err(io),
        Kind::RawOverwriteFdatasync { bytes } => raw::overwrite_fsync(dir, bytes, budget, true).map_err(io),
        Kind::RawWalFrames { frames } => raw::wal_frames_fsync(dir, frames, budget).map_err(io),
        Kind::RawAppendFdatasync { bytes } => raw::append_fdatasync(dir, bytes, budget).map_err(io),
        Kind::Append { synchronous, commands } => {
            sqlite::append(dir, vfs, budget, synchronous, commands, planted).map_err(store)
        }
        Kind::Batch { appends } => sqlite::batch(dir, vfs, budget, appends).map_err(store),
        Kind::Groups { members } => sqlite::groups(dir, vfs, budget, members).map_err(store),
        Kind::ConnPerAppend => sqlite::conn_per_append(dir, vfs, budget).map_err(store),
        Kind::Writers { threads } => threads::writers(dir, vfs, budget, threads).map_err(store),
        Kind::GroupCommit { writers } => threads::group_commit(dir, vfs, budget, writers).map_err(store),
        Kind::SutAppend { commands } => sut::append(session(fixture, config)?, budget, commands).map_err(outside),
        Kind::SutPing => sut::ping(session(fixture, config)?, budget).map_err(outside),
        Kind::SutSuspend => sut::suspended_append(session(fixture, config)?, budget).map_err(outside),
        Kind::SutConnect { .. } => sut::connect(session(fixture, config)?, budget).map_err(outside),
    }
}

/// The outside store's session of a `sut_*` configuration.
fn session<'a>(fixture: &'a mut Fixture, config: &Config) -> Result<&'a mut sut::Session, BenchError> {
    match fixture {
        Fixture::Sut(session) => Ok(session),
        _ => Err(BenchError::Sut {
            config: config.name.clone(),
            message: "no session of the outside store was started".to_string(),
        }),
    }
}
