//! The process exit codes, in one place.
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | every seed passed: every invariant held |
//! | 1    | a finding: an invariant of the store was violated (or a replay did not reproduce, or under `--require-fired` a declared fault never fired, or under `bench --baseline` a ratio regressed); errors may have happened too |
//! | 2    | an error and no finding: bad input (unknown scenario key, bad ratio, missing file, bad flag), or a seed that could not be judged (a full disk, an I/O error, a budget that ended before liveness could be judged, a broken adapter, crashsim's own failure) |
//! | 130  | interrupted by SIGINT (128 + 2) and no finding: the partial summary and reports were written |
//! | 143  | interrupted by SIGTERM (128 + 15), likewise |
//!
//! A finding outranks an error: a run with both exits 1 and lists both.

use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Pass,
    /// An invariant was violated.
    Violation,
    /// Bad input, or a seed that could not be judged.
    BadInput,
    /// Interrupted by this signal.
    Interrupted(i32),
}

impl Exit {
    /// The process's exit code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Pass => 0,
            Exit::Violation => 1,
            Exit::BadInput => 2,
            Exit::Interrupted(signal) => u8::try_from(128 + signal).unwrap_or(2),
        }
    }

    /// How much an outcome says: a finding outranks an interrupt, which
    /// outranks an error, which outranks a pass.
    fn rank(self) -> u8 {
        match self {
            Exit::Pass => 0,
            Exit::BadInput => 1,
            Exit::Interrupted(_) => 2,
            Exit::Violation => 3,
        }
    }

    /// The outcome of two parts of one run together.
    pub fn worst(self, other: Exit) -> Exit {
        if other.rank() > self.rank() { other } else { self }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

#[cfg(test)]
mod tests {
    use super::Exit;

    #[test]
    fn a_finding_outranks_every_error() {
        assert_eq!(Exit::BadInput.worst(Exit::Violation).code(), 1);
        assert_eq!(Exit::Violation.worst(Exit::Interrupted(2)).code(), 1);
        assert_eq!(Exit::BadInput.worst(Exit::Interrupted(15)).code(), 143);
        assert_eq!(Exit::Pass.worst(Exit::BadInput).code(), 2);
        assert_eq!(Exit::Interrupted(2).code(), 130);
    }
}
