//! `RunError`: a seed that ended without a verdict, and what kind of error
//! that was.
//!
//! A seed ends as a pass, a fail (an invariant of the store was violated),
//! or an error. An error is never a finding: the machine failed (a full
//! disk, an I/O error), the scenario's budget ended before liveness could be
//! judged, the run was interrupted, the store broke its contract with the
//! harness, or crashsim itself went wrong. Each kind says whether the seeds
//! after it are still worth running.

use std::path::PathBuf;

use serde::Serialize;

use crate::sim::SimError;

/// A seed that could not be judged: not a verdict.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("seed {seed}: creating a work directory under {dir}")]
    WorkDir {
        seed: u64,
        dir: PathBuf,
        source: std::io::Error,
    },
    /// The cause is in the message, not a `source`: printed as a chain it
    /// would be named twice.
    #[error("seed {seed}: {error}")]
    Sim { seed: u64, error: SimError },
    #[error("unknown implementation {0:?}")]
    UnknownStore(String),
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Nondeterministic(#[from] super::determinism::OwnNondeterminism),
}

/// What kind of error ended a seed without a verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The machine under the store: a full disk, an I/O error, no memory,
    /// a permission. The next seeds would meet it too.
    Environment,
    /// The seed's budget ended before its quiet phase had the minimum the
    /// scenario gives it: liveness could not be judged.
    Inconclusive,
    /// A signal abandoned the seed.
    Interrupted,
    /// The store cannot run this (an adapter broke the protocol, an
    /// unsupported scenario, a failed set-up).
    Contract,
    /// crashsim itself: its own nondeterminism, its crash VFS.
    Internal,
}

impl ErrorKind {
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Environment => "environment",
            ErrorKind::Inconclusive => "inconclusive",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::Contract => "contract",
            ErrorKind::Internal => "internal",
        }
    }
}

impl RunError {
    /// The seed it happened to, if it belongs to one.
    pub fn seed(&self) -> Option<u64> {
        match self {
            RunError::WorkDir { seed, .. } | RunError::Sim { seed, .. } => Some(*seed),
            RunError::Nondeterministic(error) => Some(error.seed),
            RunError::UnknownStore(_) | RunError::Unsupported(_) => None,
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            RunError::WorkDir { .. } => ErrorKind::Environment,
            RunError::Sim { error, .. } => match error {
                _ if error.environment().is_some() => ErrorKind::Environment,
                SimError::Inconclusive(_) => ErrorKind::Inconclusive,
                SimError::Interrupted => ErrorKind::Interrupted,
                SimError::Vfs(_) => ErrorKind::Internal,
                _ => ErrorKind::Contract,
            },
            RunError::UnknownStore(_) | RunError::Unsupported(_) => ErrorKind::Contract,
            RunError::Nondeterministic(_) => ErrorKind::Internal,
        }
    }

    /// Whether the seeds not yet started should still run: only after an
    /// inconclusive seed (another seed's faults may leave its quiet phase
    /// enough time); any other error would meet every seed after it.
    pub fn stops_run(&self) -> bool {
        self.kind() != ErrorKind::Inconclusive
    }

    /// The cause in one line, for people: what failed, without the seed.
    pub fn cause(&self) -> String {
        match self {
            RunError::WorkDir { dir, source, .. } => {
                format!("creating a work directory under {}: {source}", dir.display())
            }
            RunError::Sim { error, .. } => error.to_string(),
            other => other.to_string(),
        }
    }
}
