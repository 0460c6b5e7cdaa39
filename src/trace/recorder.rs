//! `Recorder`: the trace of one run, its JSON Lines form and its digest.
//!
//! The digest is SHA-256 over the JSON Lines text, so anyone can recompute
//! it from a `trace.jsonl` with `sha256sum`; the first 16 hex digits are the
//! run's trace hash. (`DefaultHasher` would not do: its output may change
//! between Rust releases.)

use sha2::{Digest, Sha256};

use super::ActorId;
use super::event::{Op, TraceEvent};
use crate::store::service::hex16;

#[derive(Default)]
pub struct Recorder {
    events: Vec<TraceEvent>,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder::default()
    }

    pub fn record(&mut self, tick: u64, actor: ActorId, op: Op) {
        self.events.push(TraceEvent { tick, actor, op });
    }

    /// The event at `index`, to complete a fact that ends later (a
    /// suspension's `meanwhile`).
    pub fn event_mut(&mut self, index: usize) -> Option<&mut TraceEvent> {
        self.events.get_mut(index)
    }

    pub fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    pub fn into_events(self) -> Vec<TraceEvent> {
        self.events
    }
}

/// One event as its JSON line (without the newline).
pub fn line(event: &TraceEvent) -> String {
    serde_json::to_string(event).expect("trace events always serialise")
}

/// The whole trace as JSON Lines.
pub fn jsonl(events: &[TraceEvent]) -> String {
    let mut text = Vec::with_capacity(events.len() * 96);
    write_jsonl(events, &mut text).expect("writing to memory cannot fail");
    String::from_utf8(text).expect("JSON is UTF-8")
}

/// Writes the trace as JSON Lines, event by event.
fn write_jsonl(events: &[TraceEvent], out: &mut impl std::io::Write) -> std::io::Result<()> {
    for event in events {
        serde_json::to_writer(&mut *out, event)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// The trace hash: the first 16 hex digits of SHA-256 over the JSON Lines,
/// hashed as they are written (the text itself is never held).
pub fn trace_hash(events: &[TraceEvent]) -> String {
    /// The hasher as a writer, buffered so SHA-256 sees whole blocks.
    struct Hashing(Sha256);
    impl std::io::Write for Hashing {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.update(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = std::io::BufWriter::with_capacity(8192, Hashing(Sha256::new()));
    write_jsonl(events, &mut out).expect("hashing cannot fail");
    let Ok(Hashing(hasher)) = out.into_inner() else {
        unreachable!("flushing into the hasher cannot fail")
    };
    hex16(&hasher.finalize())
}

/// The trace hash of trace text already rendered as JSON Lines.
pub fn hash_jsonl(text: &str) -> String {
    hex16(&Sha256::digest(text.as_bytes()))
}

/// Parses JSON Lines back into events (for `replay --against`, reports and tests).
pub fn parse_jsonl(text: &str) -> Result<Vec<TraceEvent>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(number, line)| serde_json::from_str(line).map_err(|e| format!("trace line {}: {e}", number + 1)))
        .collect()
}
