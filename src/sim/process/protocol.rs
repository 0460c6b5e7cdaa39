//! What the parent and a child say to each other: one JSON object per line
//! over the child's stdin and stdout.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::actors::{ActorId, Next};
use crate::sim::faults::KillPoint;
use crate::sim::net::{Address, Message};
use crate::trace::TraceEvent;

/// The child's first message: who it is and where its files are.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Init {
    /// The scenario, as TOML (the child validates it again).
    pub scenario: String,
    pub seed: u64,
    pub actor: ActorId,
    pub store_path: PathBuf,
    pub receiver_path: PathBuf,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "to_child", rename_all = "snake_case")]
pub enum ToChild {
    /// Take one step at `now`; the decision stream is at `prng` (a
    /// `Prng::position`, as text: JSON has no 128-bit integers).
    Step {
        now: u64,
        incarnation: u32,
        prng: String,
    },
    /// The answer to `Reach`: die (abort) or go on.
    Fire {
        fire: bool,
    },
    Deliver {
        message: Message,
    },
    Idle,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "from_child", rename_all = "snake_case")]
pub enum FromChild {
    /// The connection is open; its `synchronous` level as read back.
    Opened {
        synchronous: Option<u8>,
    },
    /// The connection could not be opened (`busy`: a lock, try again).
    OpenFailed {
        busy: bool,
        error: String,
    },
    /// The actor reached a kill point; what it did so far comes first.
    Reach {
        point: KillPoint,
        events: Vec<TraceEvent>,
        outgoing: Vec<(Address, Message)>,
    },
    /// The step is over.
    Done {
        next: Next,
        prng: String,
        events: Vec<TraceEvent>,
        outgoing: Vec<(Address, Message)>,
    },
    Idle {
        idle: bool,
    },
    /// The child cannot go on (a bad message, an unusable scenario): a bug
    /// in crashsim, not a finding; the run stops.
    Error {
        message: String,
    },
}

/// Writes one message as a line.
pub fn send(out: &mut impl Write, message: &impl Serialize) -> std::io::Result<()> {
    let mut line = serde_json::to_string(message).map_err(std::io::Error::other)?;
    line.push('\n');
    out.write_all(line.as_bytes())?;
    out.flush()
}

/// Reads one message; `None` at the end of the stream.
pub fn receive<T: for<'de> Deserialize<'de>>(input: &mut impl BufRead) -> std::io::Result<Option<T>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    serde_json::from_str(&line).map(Some).map_err(std::io::Error::other)
}
