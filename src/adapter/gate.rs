//! Starting an adapter's shell command so that it cannot outrun its guard.
//!
//! An adapter's process group is guarded ([`crate::interrupt::guard_group`],
//! and through it the [`crate::watchdog`]) once crashsim knows its id, that
//! is once `spawn` has returned. A crashsim killed in between (a CI runner's
//! `SIGKILL` right after start-up) would leave a group nobody guards: one
//! that ignores end of file on stdin (a shell that goes on once the store
//! has exited) would live on. CI saw it happen: a `sleep` left by such a
//! shell, from a crashsim killed while its fork server was starting.
//!
//! So the command runs behind a gate: `/bin/sh` first waits for one line on
//! descriptor 3 (a pipe whose only writer is crashsim, close-on-exec), and
//! only then `exec`s `/bin/sh -c COMMAND` in the same process, with that
//! descriptor closed. crashsim writes the line once the group is guarded;
//! if crashsim is gone first, the read meets end of file and the gate exits
//! without running anything. The process, its group and its command line
//! are those of a plain `sh -c COMMAND`, one `exec` later.

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

use super::fork::channel;
use crate::interrupt::{self, GroupGuard};

/// The gate: wait for the go-ahead on descriptor 3, then become the command.
const GATE: &str = r#"IFS= read -r go <&3 || exit 125; exec /bin/sh -c "$1" 3<&-"#;

/// The descriptor the gate reads.
const GO_FD: i32 = 3;

/// A command that will run `sh -c COMMAND` in a process group of its own,
/// behind the gate. Set its stdio and environment, then [`Gated::spawn`].
pub struct Gated {
    command: Command,
    go: OwnedFd,
    _read: OwnedFd,
}

impl Gated {
    /// `/bin/sh -c COMMAND`, gated, in a new process group.
    pub fn shell(shell_command: &str) -> std::io::Result<Gated> {
        let (read, go) = channel::pipe()?;
        let raw = read.as_raw_fd();
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(GATE)
            .arg("sh")
            .arg(shell_command)
            .process_group(0);
        // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork
        // and exec, on a descriptor this process owns.
        unsafe {
            command.pre_exec(move || {
                if raw == GO_FD {
                    // dup2 onto itself would keep close-on-exec.
                    let flags = libc::fcntl(raw, libc::F_GETFD);
                    if flags < 0 || libc::fcntl(raw, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(raw, GO_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(Gated {
            command,
            go,
            _read: read,
        })
    }

    /// The command, to set its stdio and environment.
    pub fn command(&mut self) -> &mut Command {
        &mut self.command
    }

    /// Starts it, guards its group, then lets it run the command.
    pub fn spawn(self) -> std::io::Result<(Child, GroupGuard)> {
        let Gated {
            mut command,
            go,
            _read: read,
        } = self;
        let child = command.spawn()?;
        drop(read);
        let guard = interrupt::guard_group(child.id() as i32);
        // A gate that already ended (killed by someone else) cannot read
        // it: the child's end is then reported by whoever waits for it.
        let _ = std::fs::File::from(go).write_all(b"go\n");
        Ok((child, guard))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::process::Stdio;

    /// What `child` printed, and how it ended.
    fn ended(mut child: Child) -> (String, std::process::ExitStatus) {
        let mut out = String::new();
        child
            .stdout
            .take()
            .expect("piped")
            .read_to_string(&mut out)
            .expect("read");
        (out, child.wait().expect("waited"))
    }

    fn output(mut gated: Gated) -> (String, std::process::ExitStatus) {
        gated.command().stdout(Stdio::piped());
        let (child, _guard) = gated.spawn().expect("spawns");
        ended(child)
    }

    /// Past the gate the command runs as `sh -c` would run it: its own
    /// arguments, its exit status, and no descriptor 3 left open.
    #[test]
    fn the_command_runs_as_sh_c_runs_it_once_let_through() {
        let gated = Gated::shell(r#"set -- a "b c"; echo "$# $2"; if (: <&3) 2>/dev/null; then echo open; fi; exit 7"#)
            .expect("a pipe");
        let (out, status) = output(gated);
        assert_eq!(out, "2 b c\n");
        assert_eq!(status.code(), Some(7));
    }

    /// A gate whose go-ahead never comes (crashsim gone before it guarded
    /// the group) runs nothing.
    #[test]
    fn a_gate_never_let_through_runs_nothing() {
        let mut gated = Gated::shell("echo ran").expect("a pipe");
        gated.command().stdout(Stdio::piped());
        let Gated {
            mut command,
            go,
            _read: read,
        } = gated;
        let child = command.spawn().expect("spawns");
        drop((read, go));
        let (out, status) = ended(child);
        assert_eq!(out, "");
        assert_eq!(status.code(), Some(125));
    }
}
