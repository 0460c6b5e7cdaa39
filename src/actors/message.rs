//! Messages between actors. The network itself (latency, loss,
//! duplication) is in the simulator's event queue (`sim::simulator`); this
//! module is the vocabulary, below the simulator so that actors never import it.

use serde::{Deserialize, Serialize};

use super::ActorId;
use crate::store::{Outcome, Request};

/// Where a message goes. A request goes to whichever life of the receiver is
/// up when it arrives; a reply goes only to the life that asked, so a
/// restarted worker never sees answers meant for its previous life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Address {
    pub actor: ActorId,
    pub incarnation: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Message {
    Request {
        request: Request,
        reply_to: Address,
    },
    Reply {
        key: String,
        outcome: Outcome,
    },
    /// A hint that there may be work: a worker tells a writer that a
    /// workflow's command is done, a writer tells a worker that it enqueued
    /// commands. Hints live only in memory; polling remains the fallback.
    Nudge {
        workflow_id: String,
    },
}

impl Message {
    /// The idempotency key the message is about.
    pub fn key(&self) -> &str {
        match self {
            Message::Request { request, .. } => &request.key,
            Message::Reply { key, .. } => key,
            Message::Nudge { workflow_id } => workflow_id,
        }
    }
}
