//! The fork server: an optional capability of the adapter protocol
//! (`fork` in the handshake; docs/adapter-protocol.md, "Fork server").
//!
//! An interpreter's start-up (Python's, with its imports) costs more than
//! most of what a connection then does, and a seed opens dozens of
//! connections. An adapter that declares `fork` is started once per seed as
//! a server instead: it imports and prepares what it can, opens no
//! database, and on crashsim's request forks one child per connection. The
//! child is then what a started process is today: its own process group,
//! the protocol on its stdin and stdout (pipes crashsim made and handed
//! over), stderr to its own file, and a kill is a real `SIGKILL` of its
//! group.
//!
//! - `channel`: the control channel, one datagram per message, with file
//!   descriptors attached (`SCM_RIGHTS`).
//! - `client`: crashsim's side: start the server, ask for a child, reap it.
//! - `server`: the server's side for `crashsim serve` (the Python SDK has
//!   its own, in `adapters/python/crashsim_adapter/forkserver.py`).

pub(crate) mod channel;
pub mod client;
pub mod server;

pub use channel::readable;

use serde::{Deserialize, Serialize};

/// The variable that tells an adapter to be a fork server (value `1`); its
/// stdin is then the control channel, a `SOCK_SEQPACKET` socket.
pub const ENV_FORK_SERVER: &str = "CRASHSIM_FORK_SERVER";

/// The capability an adapter declares in its handshake when it can be
/// started as a fork server.
pub const CAPABILITY: &str = "fork";

/// A request on the control channel.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request {
    /// Fork a child for connection `label`; the message carries its stdin,
    /// stdout and stderr, in that order.
    Fork { label: String },
    /// Wait for child `pid` (crashsim has killed its group, or it exited)
    /// and say how it ended.
    Reap { pid: i32 },
}

/// An answer on the control channel: exactly one field is set.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Answer {
    /// The forked child's pid (also its process group's id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// A reaped child exited with this code...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    /// ...or was killed by this signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// The server could not do what was asked (an environment error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What went wrong with the fork server, as the caller sorts it: `Died` is
/// a finding about the store (A1), `Broken` stops the run (exit code 2).
#[derive(Debug)]
pub enum ForkError {
    Died(String),
    Broken(String),
}

/// How a process ended, from a wait status (crashsim's own `waitpid`, or
/// the server's answer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    Exit(i32),
    Signal(i32),
}

impl Ended {
    /// From a raw `waitpid` status.
    pub fn from_status(status: libc::c_int) -> Option<Ended> {
        if libc::WIFEXITED(status) {
            Some(Ended::Exit(libc::WEXITSTATUS(status)))
        } else if libc::WIFSIGNALED(status) {
            Some(Ended::Signal(libc::WTERMSIG(status)))
        } else {
            None
        }
    }

    pub fn describe(self) -> String {
        match self {
            Ended::Exit(code) => format!("exit code {code}"),
            Ended::Signal(signal) => format!("killed by signal {signal}"),
        }
    }
}
