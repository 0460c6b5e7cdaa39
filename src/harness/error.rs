//! `HarnessError`: why a run gave no verdict. A violated invariant is not
//! an error (it is a verdict, in `RunOutcome`); these are the cases where
//! there is nothing to judge: bad input to the builder, a scenario that does
//! not parse, a seed whose setup failed, a panic in the code under test, a
//! report that could not be written.

use std::path::PathBuf;

use crate::runner::RunError;
use crate::scenario::ScenarioError;

/// A run (or replay) that could not give a verdict.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// The scenario could not be found, read or validated; the message names
    /// the file (or the `scenario_text` name), line and key.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A builder value that cannot run: no seeds, zero jobs, a work
    /// directory that is not a directory, an unusable scenario name.
    #[error("{0}")]
    Invalid(String),
    /// A seed could not be set up or run to the end (the implementation's
    /// `system` failed, its `dump` failed, a work directory could not be
    /// created): no verdict for that seed, and the run stops.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The code under test (or crashsim) panicked during a seed. The panic
    /// message was also printed by the panic hook, with its location.
    #[error("seed {seed}: panicked: {message}; replay with `{replay}`")]
    Panicked {
        seed: u64,
        message: String,
        /// The Rust call that runs this seed again.
        replay: String,
    },
    /// A report file could not be written.
    #[error("writing the report under {}", path.display())]
    Report {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
