//! Process mode: every actor is a child process (the crashsim binary run
//! again with a hidden role), so a kill is a real process death.
//!
//! The parent stays the simulator: it owns time, the network, every random
//! stream and every decision, and asks one child at a time to take one step.
//! A child runs the same actor code as in-process mode over its own SQLite
//! connection. When the actor reaches a kill point the child first sends
//! what it has recorded so far, then asks the parent; if the answer is
//! death it calls `abort()`: no destructors, no rollback, its locks freed by
//! the kernel, and the next opener of the files runs SQLite's real crash
//! recovery. The parent waits for the exit before anything else happens.
//!
//! The actor's decision stream travels with each step (its position), so a
//! child continues exactly where the previous life left off, and the same
//! seed injects the same faults in both modes.
//!
//! Not supported here: power loss (the crash VFS is in the parent's memory)
//! and implementations whose connections share in-process state (the group
//! committer).

pub mod child;
pub mod parent;
pub mod protocol;

pub use parent::ChildActor;

/// How actors run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// In the simulator's thread; a kill drops the connection.
    #[default]
    InProcess,
    /// Each actor in a child process of this executable; a kill aborts it.
    Process { exe: std::path::PathBuf },
}

impl Mode {
    pub fn name(&self) -> &'static str {
        match self {
            Mode::InProcess => "in-process",
            Mode::Process { .. } => "process",
        }
    }
}
