//! The fork server's side, for `crashsim serve` (what `--mode process`
//! runs). The Python SDK's server keeps the same rules:
//!
//! - the server opens no database and starts no thread: a fork copies only
//!   the calling thread, and a child must not inherit a lock or a handle;
//! - a child sets its own process group (the server sets it too, so it
//!   exists before crashsim learns the pid), asks to die with the server,
//!   and takes the three descriptors it was handed as stdin, stdout and
//!   stderr: from there on it is a process started the ordinary way;
//! - the server reaps a child only when asked, so its pid stays reserved
//!   while crashsim may still signal its group;
//! - at end of file on the control channel (crashsim exited, or was killed)
//!   it kills every child's group, reaps them and exits.

use std::collections::BTreeSet;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use super::channel::{self, Received};
use super::{Answer, ENV_FORK_SERVER, Request};

/// Where `become_child` leaves the caller.
pub enum Role {
    /// Not asked to be a fork server: serve the protocol as usual.
    Plain,
    /// A forked child: serve the protocol on the stdin and stdout handed over.
    Child,
    /// The server, done (its control channel closed): exit with this code.
    ServerDone(u8),
}

/// Runs the fork server if crashsim asked for one; returns in each child,
/// and in the server once its channel closes.
pub fn become_child() -> Role {
    if std::env::var_os(ENV_FORK_SERVER).is_none_or(|value| value != "1") {
        return Role::Plain;
    }
    let threads = std::fs::read_dir("/proc/self/task").map_or(1, |tasks| tasks.count());
    let mut children = BTreeSet::new();
    let stdin = std::io::stdin();
    let control = stdin.as_fd();
    loop {
        let (bytes, fds) = match channel::receive(&control, None) {
            Ok(Received::Message(bytes, fds)) => (bytes, fds),
            Ok(Received::TimedOut) => continue,
            Ok(Received::Closed) | Err(_) => {
                end_all(&children);
                return Role::ServerDone(0);
            }
        };
        let answer = match serde_json::from_slice::<Request>(&bytes) {
            Ok(Request::Fork { .. }) if threads > 1 => Answer {
                error: Some(format!("the server runs {threads} threads: forking it is unsafe")),
                ..Answer::default()
            },
            Ok(Request::Fork { label }) => match fork(fds) {
                Forked::Child => return Role::Child,
                Forked::Parent(pid) => {
                    children.insert(pid);
                    Answer {
                        pid: Some(pid),
                        ..Answer::default()
                    }
                }
                Forked::Failed(error) => Answer {
                    error: Some(format!("{label}: {error}")),
                    ..Answer::default()
                },
            },
            Ok(Request::Reap { pid }) => {
                children.remove(&pid);
                reap(pid)
            }
            Err(error) => Answer {
                error: Some(format!("not a fork-server request ({error})")),
                ..Answer::default()
            },
        };
        let message = serde_json::to_vec(&answer).expect("answers serialise");
        if channel::send(&control, &message, &[]).is_err() {
            end_all(&children);
            return Role::ServerDone(0);
        }
    }
}

enum Forked {
    Child,
    Parent(i32),
    Failed(String),
}

/// Forks a child that takes `fds` as its stdin, stdout and stderr.
fn fork(fds: Vec<OwnedFd>) -> Forked {
    if fds.len() != 3 {
        return Forked::Failed(format!("a fork request carries 3 descriptors, this one {}", fds.len()));
    }
    // SAFETY: getpid has no preconditions.
    let server = unsafe { libc::getpid() };
    // SAFETY: a single-threaded process (checked at start), so the child's
    // copy of every lock and buffer is consistent.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Forked::Failed(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: plain calls on this (new) process and its descriptors;
        // dup2 onto 0 also closes the control channel in the child.
        unsafe {
            libc::setpgid(0, 0);
            // Linux kills the child with its server; elsewhere the
            // watchdog's group kill is all there is.
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // A server that died before the request took effect sends
            // nothing: its child goes now.
            if libc::getppid() != server {
                libc::_exit(1);
            }
            for (target, fd) in fds.iter().enumerate() {
                libc::dup2(fd.as_raw_fd(), target as libc::c_int);
            }
        }
        drop(fds);
        return Forked::Child;
    }
    // SAFETY: sets the child's group (as the child does itself; whichever
    // runs first wins, and the group exists before the pid is answered).
    unsafe {
        libc::setpgid(pid, pid);
    }
    drop(fds);
    Forked::Parent(pid)
}

/// Waits for child `pid`: how it ended.
fn reap(pid: i32) -> Answer {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waits for this server's child; `status` is valid.
        let done = unsafe { libc::waitpid(pid, &mut status, 0) };
        if done == pid {
            return match super::Ended::from_status(status) {
                Some(super::Ended::Exit(code)) => Answer {
                    exit: Some(code),
                    ..Answer::default()
                },
                Some(super::Ended::Signal(signal)) => Answer {
                    signal: Some(signal),
                    ..Answer::default()
                },
                None => Answer {
                    error: Some(format!("wait status {status}")),
                    ..Answer::default()
                },
            };
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Answer {
                error: Some(format!("waitpid({pid}): {error}")),
                ..Answer::default()
            };
        }
    }
}

/// Kills every child's group and reaps them (the channel closed).
fn end_all(children: &BTreeSet<i32>) {
    for &pid in children {
        // SAFETY: signals and waits for this server's own children.
        unsafe {
            libc::killpg(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
}
