//! Standard output for people and pipes. A reader that goes away
//! (`crashsim run smoke | head`, `… | grep -m1 fail:`) is neither a crash
//! nor a finding: the first write that fails stops the run as the reader's
//! SIGPIPE would (no seed is started after it, the reports of the seeds
//! that ended are written, the exit code is 141), and nothing more is
//! printed. `println!` would panic there instead.
//!
//! The process keeps ignoring SIGPIPE itself: a store adapter that dies
//! must be an error on its pipe, never a signal that kills crashsim.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set at the first failed write: the reader is gone.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `args` to standard output, then a newline if `newline`.
pub fn write(args: std::fmt::Arguments<'_>, newline: bool) {
    if CLOSED.load(Ordering::SeqCst) {
        return;
    }
    let mut out = std::io::stdout().lock();
    let written = match newline {
        true => writeln!(out, "{args}"),
        false => write!(out, "{args}"),
    };
    if written
        .and_then(|()| if newline { out.flush() } else { Ok(()) })
        .is_err()
    {
        CLOSED.store(true, Ordering::SeqCst);
        crate::interrupt::output_closed();
    }
}

/// `println!` for the command line's standard output (module docs).
macro_rules! outln {
    () => {
        $crate::cli::stdout::write(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::cli::stdout::write(format_args!($($arg)*), true)
    };
}

/// `print!` for the command line's standard output (module docs).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::stdout::write(format_args!($($arg)*), false)
    };
}
