//! `ScenarioError`: what is wrong with a scenario file, and where.
//!
//! Every message starts `path:line:column:` (as compilers do, so editors and
//! CI annotations can jump there) and names the key. Each message names its
//! cause once: `Read` prints the I/O error itself and so reports no
//! `source()`, or `{:#}` (anyhow's chain) would print it twice.

use std::fmt;
use std::path::{Path, PathBuf};

use super::locate;

/// A scenario file that cannot be used.
#[derive(Debug)]
pub enum ScenarioError {
    /// The file could not be read.
    Read { path: PathBuf, source: std::io::Error },
    /// No such file, and no built-in scenario of that name.
    NotFound { path: PathBuf },
    /// The file was read but is not a valid scenario.
    Invalid {
        path: PathBuf,
        /// 1-based line and column, if the key or token could be located.
        position: Option<(usize, usize)>,
        /// The dotted key path (`faults.writer.before_commit`); empty for syntax errors.
        key: String,
        message: String,
    },
}

impl ScenarioError {
    /// Wraps an error from the TOML deserializer, using its span if it has one.
    pub(super) fn from_toml(path: &Path, text: &str, key: &str, error: toml::de::Error) -> ScenarioError {
        let position = error
            .span()
            .map(|span| locate::position(text, span.start))
            .or_else(|| locate::key(text, key));
        ScenarioError::Invalid {
            path: path.to_path_buf(),
            position,
            key: key.to_string(),
            message: error.message().trim().to_string(),
        }
    }

    /// A validation error, located by searching the text for its key, else
    /// for the first related key the text writes (a budget rule's key may be
    /// left at its default while another key made the scenario infeasible).
    pub(super) fn invalid(path: &Path, text: &str, rejection: &super::Rejection) -> ScenarioError {
        let position = std::iter::once(rejection.key.as_str())
            .chain(rejection.related.iter().copied())
            .find_map(|key| locate::key(text, key));
        ScenarioError::Invalid {
            path: path.to_path_buf(),
            position,
            key: rejection.key.clone(),
            message: rejection.message.clone(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioError::Read { path, source } => write!(f, "{}: cannot read the scenario: {source}", path.display()),
            ScenarioError::NotFound { path } => write!(
                f,
                "{}: no such file, nor a built-in scenario (built-in: {}; `crashsim list` describes them)",
                path.display(),
                super::builtin::names()
            ),
            ScenarioError::Invalid {
                path,
                position,
                key,
                message,
            } => {
                write!(f, "{}", path.display())?;
                if let Some((line, column)) = position {
                    write!(f, ":{line}:{column}")?;
                }
                if key.is_empty() || key == "." {
                    write!(f, ": {message}")
                } else {
                    write!(f, ": key `{key}`: {message}")
                }
            }
        }
    }
}

/// No `source()`: every message already includes its cause (module docs).
impl std::error::Error for ScenarioError {}
