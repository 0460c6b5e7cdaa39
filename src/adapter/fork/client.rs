//! crashsim's side of the fork server: start it (once per seed), ask it for
//! one child per connection, reap each child after its group is killed.
//!
//! The server is one process group, each child another (`setpgid` by both
//! sides of the fork, so the group exists before crashsim learns its id). A
//! child's pipes are made here, so crashsim reads and writes them exactly
//! as it does a started process's. The server reaps a child only when asked,
//! so a child's pid and group id stay reserved until crashsim is done with
//! them, and a kill never reaches a stranger.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use super::channel::{self, Received};
use super::{Answer, ENV_FORK_SERVER, Ended, ForkError, Request};
use crate::adapter::gate::Gated;
use crate::interrupt::{self, GroupGuard};

/// A running fork server.
pub struct ForkServer {
    command: String,
    child: Child,
    control: OwnedFd,
    timeout: Duration,
    /// Set once the server is known to be gone.
    gone: Option<String>,
    _group: GroupGuard,
}

/// A forked child, as crashsim holds it.
pub struct Forked {
    pub pid: i32,
    /// The child's stdin (crashsim writes requests here).
    pub requests: File,
    /// The child's stdout (crashsim reads answers here).
    pub answers: File,
}

impl ForkServer {
    /// Starts `command` as a fork server, its output to `stderr_path`, with
    /// the run's environment `env` added.
    pub fn start(
        command: &str,
        timeout: Duration,
        stderr_path: &Path,
        env: &[(String, String)],
    ) -> Result<ForkServer, ForkError> {
        interrupt::become_subreaper();
        let broken = |what: &str, error: std::io::Error| ForkError::Broken(format!("the fork server: {what}: {error}"));
        let stderr = File::create(stderr_path).map_err(|error| broken("its stderr file", error))?;
        let stdout = stderr.try_clone().map_err(|error| broken("its stderr file", error))?;
        let (control, theirs) = channel::pair().map_err(|error| broken("a socket pair", error))?;
        let cannot =
            |error: std::io::Error| ForkError::Broken(format!("cannot start the adapter `{command}`: {error}"));
        let mut gated = Gated::shell(command).map_err(cannot)?;
        gated
            .command()
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::from(stdout))
            .stderr(Stdio::from(stderr))
            .env(
                "CRASHSIM_ADAPTER_PROTOCOL",
                crate::adapter::protocol::VERSION.to_string(),
            )
            .env(ENV_FORK_SERVER, "1")
            .envs(env.iter().map(|(key, value)| (key, value)));
        let (child, group) = gated.spawn().map_err(cannot)?;
        Ok(ForkServer {
            command: command.to_string(),
            child,
            control,
            timeout,
            gone: None,
            _group: group,
        })
    }

    /// Asks for a child for connection `label`, whose stderr goes to `stderr`.
    pub fn fork(&mut self, label: &str, stderr: File) -> Result<Forked, ForkError> {
        let broken = |error: std::io::Error| ForkError::Broken(format!("pipes for {label}: {error}"));
        let (child_stdin, requests) = channel::pipe().map_err(broken)?;
        let (answers, child_stdout) = channel::pipe().map_err(broken)?;
        let request = Request::Fork {
            label: label.to_string(),
        };
        let fds = [child_stdin.as_raw_fd(), child_stdout.as_raw_fd(), stderr.as_raw_fd()];
        let answer = self.ask(&request, &fds)?;
        // The child has its copies now; crashsim's must go, or the child's
        // death would never read as end of file.
        drop((child_stdin, child_stdout, stderr));
        match answer {
            Answer { pid: Some(pid), .. } if pid > 0 => Ok(Forked {
                pid,
                requests: File::from(requests),
                answers: File::from(answers),
            }),
            Answer { error: Some(error), .. } => Err(ForkError::Broken(format!(
                "the fork server of `{}` could not fork {label}: {error}",
                self.command
            ))),
            other => Err(self.nonsense(&other)),
        }
    }

    /// How child `pid` ended, once the server has waited for it; `None` if
    /// the server is gone (its children are then crashsim's to reap, as the
    /// subreaper of their orphaned group).
    pub fn reap(&mut self, pid: i32) -> Option<Ended> {
        match self.ask(&Request::Reap { pid }, &[]) {
            Ok(Answer { exit: Some(code), .. }) => Some(Ended::Exit(code)),
            Ok(Answer {
                signal: Some(signal), ..
            }) => Some(Ended::Signal(signal)),
            _ => None,
        }
    }

    fn ask(&mut self, request: &Request, fds: &[i32]) -> Result<Answer, ForkError> {
        if let Some(cause) = &self.gone {
            return Err(ForkError::Died(cause.clone()));
        }
        let message = serde_json::to_vec(request).expect("requests serialise");
        if channel::send(&self.control, &message, fds).is_err() {
            return Err(self.died());
        }
        match channel::receive(&self.control, Some(self.timeout)) {
            Ok(Received::Message(bytes, _)) => serde_json::from_slice(&bytes).map_err(|error| {
                ForkError::Broken(format!(
                    "the fork server of `{}` answered with something that is not a fork-server answer ({error}): {:?}",
                    self.command,
                    String::from_utf8_lossy(&bytes)
                ))
            }),
            Ok(Received::Closed) | Err(_) => Err(self.died()),
            Ok(Received::TimedOut) => {
                self.end();
                let cause = format!(
                    "the fork server of `{}` did not answer within {} s of wall-clock time and was killed",
                    self.command,
                    self.timeout.as_secs_f64()
                );
                self.gone = Some(cause.clone());
                Err(ForkError::Died(cause))
            }
        }
    }

    /// The server is gone without having been asked to go: a finding (A1).
    fn died(&mut self) -> ForkError {
        let status = self.end().map_or_else(|| "status unknown".to_string(), Ended::describe);
        let cause = format!("the fork server of `{}` exited unasked ({status})", self.command);
        self.gone = Some(cause.clone());
        ForkError::Died(cause)
    }

    fn nonsense(&self, answer: &Answer) -> ForkError {
        ForkError::Broken(format!(
            "the fork server of `{}` answered {answer:?}, which does not answer what was asked",
            self.command
        ))
    }

    /// Kills the server's group and waits for it: how it ended.
    fn end(&mut self) -> Option<Ended> {
        let group = self.child.id() as libc::pid_t;
        // SAFETY: killpg only sends a signal, to the server's own group.
        unsafe {
            libc::killpg(group, libc::SIGKILL);
        }
        let mut status: libc::c_int = 0;
        loop {
            // SAFETY: waits for the server (crashsim's child); `status` is valid.
            let pid = unsafe { libc::waitpid(group, &mut status, 0) };
            if pid == group {
                return Ended::from_status(status);
            }
            if pid < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return None;
            }
        }
    }
}

impl Drop for ForkServer {
    /// Every child holds the server (`Rc`) until it is killed and reaped, so
    /// none is left when this runs: the server's group is killed and reaped.
    fn drop(&mut self) {
        if self.gone.is_none() {
            self.end();
        }
    }
}
