//! The protocol's records, shared by the store, the workflow, the actors and
//! the checkers: an event, a command, and the rows they are stored as.
//!
//! Kinds and payloads are plain strings (payloads are canonical JSON, see
//! `workflow::payload`) because that is what the protocol stores; typed views
//! live in `workflow`.

use serde::{Deserialize, Serialize};

/// A fact in a workflow's history, before it is stored.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Event {
    pub kind: String,
    pub payload: String,
}

/// A command that an event emits, before it is enqueued in the outbox.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Command {
    pub kind: String,
    pub payload: String,
}

/// An event as stored: its place in its workflow plus the event itself.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StoredEvent {
    pub workflow_id: String,
    pub seq: u64,
    pub kind: String,
    pub payload: String,
}

impl StoredEvent {
    pub fn event(&self) -> Event {
        Event {
            kind: self.kind.clone(),
            payload: self.payload.clone(),
        }
    }
}

/// An outbox row. `result` is the receiver's confirmed answer, written by
/// `mark_done` together with `processed_at`; it is how the workflow learns the
/// outcome of its command (a refinement of PROTOCOL.md §3, which leaves the
/// result's transport open).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct OutboxRow {
    pub command_id: String,
    pub workflow_id: String,
    pub event_seq: u64,
    pub kind: String,
    pub payload: String,
    pub done: bool,
    pub result: Option<String>,
}

/// The head of one workflow's history, as a writer looking for work sees it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Head {
    pub workflow_id: String,
    pub last_seq: u64,
    pub kind: String,
    /// How many of the head event's commands are marked done.
    pub commands_done: u64,
}

/// The command id of the `index`-th command emitted by event `seq` of
/// `workflow_id`: the identity of the business intent, stable across retries.
pub fn command_id(workflow_id: &str, seq: u64, index: usize) -> String {
    format!("{workflow_id}:{seq}:{index}")
}

/// `wf:seq:index` → (wf, seq, index), if the id has that shape; read from
/// the right, since a workflow id may itself hold `:`.
pub fn parse_command_id(id: &str) -> Option<(&str, u64, u64)> {
    let mut parts = id.rsplitn(3, ':');
    let index = parts.next()?.parse().ok()?;
    let seq = parts.next()?.parse().ok()?;
    let workflow_id = parts.next()?;
    Some((workflow_id, seq, index))
}

/// An id as messages show it: as it is when it is tame (ASCII letters,
/// digits and `-_.:#`), else in double quotes with every character a
/// reader could not see or tell apart escaped (`\t`, `\u{a0}`, combining
/// marks such as `\u{301}`, zero-width and other format characters), so
/// that `"trip-1 "` and `trip-1`, or NFC and NFD of one name, never look alike.
/// An id longer than [`SHOWN_MAX`] characters keeps both ends and says, in
/// the middle, its length and the start of its SHA-256
/// (`trip-xxxxxxxxxxxxxxxxxxx…[300 chars #1a2b3c]…xxxxxxxxxxxxxxxxxxxxx:1:0`),
/// so a first line stays one line, the command's `:seq:index` stays in
/// view, and two ids that differ only in the middle still look different.
/// (trace.jsonl keeps every id whole.)
pub struct Shown<'a>(pub &'a str);

/// The longest id shown whole; a longer one keeps [`SHOWN_END`] characters
/// at each end.
pub const SHOWN_MAX: usize = 64;
const SHOWN_END: usize = 24;

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use sha2::Digest;
        use std::fmt::Write;
        let tame = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '#');
        let quoted = self.0.is_empty() || !self.0.chars().all(tame);
        let length = self.0.chars().count();
        if quoted {
            f.write_char('"')?;
        }
        if length <= SHOWN_MAX {
            escaped(f, self.0.chars())?;
        } else {
            escaped(f, self.0.chars().take(SHOWN_END))?;
            // The digest tells apart two long ids that share both ends.
            let digest = sha2::Sha256::digest(self.0.as_bytes());
            write!(
                f,
                "…[{length} chars #{:02x}{:02x}{:02x}]…",
                digest[0], digest[1], digest[2]
            )?;
            escaped(f, self.0.chars().skip(length - SHOWN_END))?;
        }
        if quoted {
            f.write_char('"')?;
        }
        Ok(())
    }
}

fn escaped(f: &mut std::fmt::Formatter<'_>, chars: impl Iterator<Item = char>) -> std::fmt::Result {
    use std::fmt::Write;
    for c in chars {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\t' => f.write_str("\\t")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            ' ' => f.write_char(' ')?,
            c if c.is_control()
                || c.is_whitespace()
                || unicode_normalization::char::is_combining_mark(c)
                || unicode_normalization::UnicodeNormalization::nfc(std::iter::once(c)).ne(std::iter::once(c))
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{fe00}'..='\u{fe0f}') =>
            {
                write!(f, "\\u{{{:x}}}", u32::from(c))?
            }
            c => f.write_char(c)?,
        }
    }
    Ok(())
}

/// The workflow id a `command_id` was derived from: everything before its
/// last two `:`-separated parts (a workflow id may itself hold `:`). A key
/// that is not of that shape is returned whole.
pub fn workflow_of(command_id: &str) -> &str {
    let mut parts = command_id.rsplitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(_), Some(_), Some(workflow)) => workflow,
        _ => command_id,
    }
}
