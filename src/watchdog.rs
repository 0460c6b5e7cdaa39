//! The watchdog: no adapter process outlives crashsim, however crashsim ends.
//!
//! A SIGINT or SIGTERM is handled ([`crate::interrupt`]): every adapter's
//! process group is killed before crashsim exits. A `SIGKILL` (a CI
//! runner's time limit, the out-of-memory killer) leaves crashsim no last
//! word: its adapters read end of file on stdin, and one that ignores it (or
//! a shell that goes on once it has exited) would live on, holding its
//! database files and their locks.
//!
//! So the first adapter process group crashsim registers starts a watchdog:
//! a `/bin/sh` loop in a process group of its own (a terminal's Ctrl-C does
//! not reach it) that ignores the signals meant for crashsim and reads a pipe
//! whose only writer is crashsim (the write end is close-on-exec: no adapter
//! holds it). Each group registered with [`crate::interrupt::guard_group`] is
//! announced (`+ PGID`) and withdrawn when its guard drops (`- PGID`: after
//! the group is killed and before its leader is reaped, so an id another
//! group may get is never left announced). End of file on the pipe means
//! crashsim is gone, however it went: the watchdog kills every group still
//! announced and exits. A crashsim that ends normally has withdrawn them
//! all, and the watchdog just exits.
//!
//! If the watchdog cannot start (or its pipe breaks), runs go on without it:
//! it only guards against the one ending crashsim cannot handle itself.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Mutex, PoisonError};

/// The loop: a set of groups kept as a space-separated string (one entry
/// per announcement, so two guards of one group are two entries), then a
/// `SIGKILL` to each group left when the pipe ends.
const SCRIPT: &str = r#"trap '' INT TERM HUP QUIT PIPE
groups=' '
while read -r op g; do
  case $op in
    +) groups="$groups$g " ;;
    -) case $groups in *" $g "*) groups="${groups%% "$g" *} ${groups#* "$g" }" ;; esac ;;
  esac
done
for g in $groups; do kill -s KILL -- "-$g" 2>/dev/null; done
"#;

enum State {
    NotStarted,
    Running(ChildStdin),
    /// It could not start, or its pipe broke: nothing more is sent.
    Unavailable,
}

static WATCHDOG: Mutex<State> = Mutex::new(State::NotStarted);

/// Announces process group `pgid` to the watchdog (started at the first
/// call): it is killed if crashsim ends without withdrawing it.
pub(crate) fn announce(pgid: i32) {
    send('+', pgid);
}

/// Withdraws one announcement of `pgid`.
pub(crate) fn withdraw(pgid: i32) {
    send('-', pgid);
}

fn send(op: char, pgid: i32) {
    // Group ids are positive, and 1 is init's: nothing else is a group
    // crashsim could have started (tests register impossible ids).
    if pgid <= 1 {
        return;
    }
    let mut state = WATCHDOG.lock().unwrap_or_else(PoisonError::into_inner);
    if matches!(*state, State::NotStarted) {
        *state = start().map_or(State::Unavailable, State::Running);
    }
    if let State::Running(pipe) = &mut *state
        && pipe.write_all(format!("{op} {pgid}\n").as_bytes()).is_err()
    {
        *state = State::Unavailable;
    }
}

/// The watchdog's command: the loop, in a process group of its own, read
/// from a pipe.
fn command() -> Command {
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(SCRIPT)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    command
}

/// Starts the watchdog; its pipe, or `None` if it cannot start.
fn start() -> Option<ChildStdin> {
    let mut child = command().spawn().ok()?;
    // The child is never waited for: it lives until crashsim is gone, and
    // then init reaps it.
    child.stdin.take()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Child;
    use std::time::Duration;

    fn alive(child: &mut Child) -> bool {
        matches!(child.try_wait(), Ok(None))
    }

    /// The script itself, fed by hand: an announced group is killed at end
    /// of file, a withdrawn one is not.
    #[test]
    fn the_groups_announced_at_end_of_file_are_killed() {
        let start = |seconds: &str| {
            Command::new("sleep")
                .arg(seconds)
                .process_group(0)
                .spawn()
                .expect("sleep starts")
        };
        let (mut kept, mut withdrawn) = (start("61"), start("62"));
        let mut watchdog = command().spawn().expect("the watchdog starts");
        let mut pipe = watchdog.stdin.take().expect("a pipe");
        let lines = format!(
            "+ {kept}\n+ {withdrawn}\n+ {withdrawn}\n- {withdrawn}\n- {withdrawn}\n",
            kept = kept.id(),
            withdrawn = withdrawn.id()
        );
        pipe.write_all(lines.as_bytes()).expect("written");
        drop(pipe);
        watchdog.wait().expect("the watchdog ends at end of file");
        // A bound on polls, not a timing: a hang fails after ten seconds.
        for _ in 0..500 {
            if !alive(&mut kept) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(&mut kept), "the announced group is killed");
        assert!(alive(&mut withdrawn), "a withdrawn group is left alone");
        let _ = withdrawn.kill();
        let _ = withdrawn.wait();
    }
}
