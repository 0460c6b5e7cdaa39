//! The process exit codes, in one place.
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | every invariant held |
//! | 1    | an invariant was violated (or a replay did not reproduce) |
//! | 2    | bad input: unknown scenario key, bad ratio, missing file, bad flag |

use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    Pass = 0,
    Violation = 1,
    BadInput = 2,
}

impl Exit {
    /// The worse of two outcomes (bad input beats a violation beats a pass).
    pub fn worst(self, other: Exit) -> Exit {
        self.max(other)
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit as u8)
    }
}
