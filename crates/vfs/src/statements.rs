//! The SQL a store's connections start while preemption is live, kept in
//! the control region so that crashsim can name the statements around a
//! suspension: the one the suspended connection was running, and those the
//! others ran while it waited.
//!
//! Every connection a store's process opens through a crash VFS that may
//! park gets a statement trace (`sqlite3_trace_v2`, `SQLITE_TRACE_STMT`,
//! installed by the auto-extension in `shim::default_level`). Each statement
//! started while an actor's step runs is written into a ring of the last
//! [`SLOTS`], with the actor crashsim said runs (`Ring::set_running`). Only
//! one process works at a time, so the ring needs no lock, and what it holds
//! is as deterministic as the statements themselves: the store's own SQL
//! text, unexpanded (parameters as `?`), cut at [`BYTES`] bytes.

use std::sync::atomic::{AtomicU64, Ordering};

/// Statements the ring keeps.
pub const SLOTS: usize = 128;
/// Words of text per statement.
const WORDS: usize = 24;
/// Bytes of text per statement, at most.
pub const BYTES: usize = WORDS * 8;

/// One statement: who ran it, its length, its text (packed little-endian).
#[repr(C)]
#[derive(Debug, Default)]
struct Slot {
    actor: AtomicU64,
    tick: AtomicU64,
    len: AtomicU64,
    text: [AtomicU64; WORDS],
}

/// The ring, as the control region holds it.
#[repr(C)]
#[derive(Debug)]
pub struct Ring {
    /// Statements recorded so far.
    seq: AtomicU64,
    /// The actor whose step runs now, as crashsim numbers it (0: none),
    /// and the tick it runs at.
    running: AtomicU64,
    tick: AtomicU64,
    slots: [Slot; SLOTS],
}

/// A statement read back: the actor that ran it (crashsim's number), the
/// tick, and its text, its runs of white space made one space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    pub actor: u64,
    pub tick: u64,
    pub sql: String,
}

impl Default for Ring {
    fn default() -> Ring {
        Ring {
            seq: AtomicU64::new(0),
            running: AtomicU64::new(0),
            tick: AtomicU64::new(0),
            slots: std::array::from_fn(|_| Slot::default()),
        }
    }
}

impl Ring {
    /// crashsim's side: the steps from now on are `actor`'s (0: nobody's),
    /// at `tick`.
    pub fn set_running(&self, actor: u64, tick: u64) {
        self.tick.store(tick, Ordering::Release);
        self.running.store(actor, Ordering::Release);
    }

    /// Statements recorded so far (a position to read from later).
    pub fn seq(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    /// A store's side: `sql` was started. Cut at [`BYTES`], on a character
    /// boundary.
    pub fn record(&self, sql: &[u8]) {
        let mut len = sql.len().min(BYTES);
        while len > 0 && len < sql.len() && (sql[len] & 0xc0) == 0x80 {
            len -= 1;
        }
        let seq = self.seq.load(Ordering::Acquire);
        let slot = &self.slots[(seq % SLOTS as u64) as usize];
        slot.actor
            .store(self.running.load(Ordering::Acquire), Ordering::Relaxed);
        slot.tick.store(self.tick.load(Ordering::Acquire), Ordering::Relaxed);
        for (index, word) in slot.text.iter().enumerate() {
            let mut bytes = [0u8; 8];
            let start = (index * 8).min(len);
            let end = (start + 8).min(len);
            bytes[..end - start].copy_from_slice(&sql[start..end]);
            word.store(u64::from_le_bytes(bytes), Ordering::Relaxed);
        }
        slot.len.store(len as u64, Ordering::Relaxed);
        self.seq.store(seq + 1, Ordering::Release);
    }

    /// crashsim's side: the statements recorded from position `from` on
    /// (those the ring still holds) whose actor `keep` accepts, oldest
    /// first, and how many the ring no longer holds. Only those kept are
    /// decoded.
    pub fn since(&self, from: u64, keep: impl Fn(u64) -> bool) -> (Vec<Statement>, u64) {
        let seq = self.seq();
        let oldest = seq.saturating_sub(SLOTS as u64).max(from);
        let statements = (oldest..seq)
            .filter(|at| keep(self.slot(*at).actor.load(Ordering::Relaxed)))
            .map(|at| self.read(at))
            .collect();
        (statements, oldest - from.min(oldest))
    }

    /// The last statement the actor that runs now recorded, if the ring
    /// still holds one (a resumed call's statement began before others ran
    /// theirs).
    pub fn last_of_running(&self) -> Option<Statement> {
        let running = self.running.load(Ordering::Acquire);
        let seq = self.seq();
        (seq.saturating_sub(SLOTS as u64)..seq)
            .rev()
            .find(|at| self.slot(*at).actor.load(Ordering::Relaxed) == running)
            .map(|at| self.read(at))
    }

    fn slot(&self, at: u64) -> &Slot {
        &self.slots[(at % SLOTS as u64) as usize]
    }

    /// crashsim's side: the last statement recorded, if any.
    pub fn last(&self) -> Option<Statement> {
        let seq = self.seq();
        (seq > 0).then(|| self.read(seq - 1))
    }

    fn read(&self, at: u64) -> Statement {
        let slot = self.slot(at);
        let len = (slot.len.load(Ordering::Relaxed) as usize).min(BYTES);
        let mut bytes = Vec::with_capacity(len + 8);
        for word in &slot.text {
            if bytes.len() >= len {
                break;
            }
            bytes.extend_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
        }
        bytes.truncate(len);
        let sql = match String::from_utf8(bytes) {
            Ok(text) => normalized(&text),
            Err(error) => normalized(&String::from_utf8_lossy(error.as_bytes())),
        };
        Statement {
            actor: slot.actor.load(Ordering::Relaxed),
            tick: slot.tick.load(Ordering::Relaxed),
            sql,
        }
    }
}

/// A statement as a trace holds it: on one line (a store's SQL is often
/// laid out over several), and with every quoted literal that holds a `/`
/// made `'…'`: a path (`ATTACH '/tmp/…/receiver.db'`) names the run's
/// temporary directory, and the trace must not.
pub fn normalized(sql: &str) -> String {
    let mut one_line = String::with_capacity(sql.len());
    for word in sql.split_whitespace() {
        if !one_line.is_empty() {
            one_line.push(' ');
        }
        one_line.push_str(word);
    }
    if !one_line.contains('\'') {
        return one_line;
    }
    let mut out = String::with_capacity(one_line.len());
    let mut rest = one_line.as_str();
    while let Some(open) = rest.find('\'') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('\'') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let literal = &after[..close];
        if literal.contains('/') {
            out.push_str("'…'");
        } else {
            out.push('\'');
            out.push_str(literal);
            out.push('\'');
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_come_back_with_their_actor_in_order_and_the_ring_forgets_the_oldest() {
        let ring = Ring::default();
        ring.set_running(3, 10);
        ring.record(b"SELECT 1 FROM processed WHERE command_id = ?");
        ring.set_running(1, 12);
        ring.record(b"BEGIN IMMEDIATE");
        let (read, lost) = ring.since(0, |_| true);
        assert_eq!(lost, 0);
        assert_eq!(
            read,
            [
                Statement {
                    actor: 3,
                    tick: 10,
                    sql: "SELECT 1 FROM processed WHERE command_id = ?".to_string()
                },
                Statement {
                    actor: 1,
                    tick: 12,
                    sql: "BEGIN IMMEDIATE".to_string()
                },
            ]
        );
        assert_eq!(ring.last().map(|last| last.sql), Some("BEGIN IMMEDIATE".to_string()));
        for index in 0..SLOTS + 5 {
            ring.record(format!("SELECT {index}").as_bytes());
        }
        let (read, lost) = ring.since(1, |_| true);
        assert_eq!(lost, 6, "six recorded since position 1 are gone");
        assert_eq!(read.len(), SLOTS);
        assert_eq!(read[0].sql, "SELECT 5");
    }

    #[test]
    fn statements_are_one_line_and_name_no_path() {
        assert_eq!(
            normalized("ATTACH '/tmp/.tmpX1/receiver.db'\n   AS r"),
            "ATTACH '…' AS r"
        );
        assert_eq!(
            normalized("SELECT 'a', x FROM t WHERE k = 'b/c' AND v = 'it''s'"),
            "SELECT 'a', x FROM t WHERE k = '…' AND v = 'it''s'"
        );
        assert_eq!(normalized("SELECT 'open"), "SELECT 'open");
    }

    #[test]
    fn a_long_statement_is_cut_on_a_character_boundary() {
        let ring = Ring::default();
        let long = format!("SELECT '{}'", "é".repeat(BYTES));
        ring.record(long.as_bytes());
        let sql = ring.last().expect("recorded").sql;
        assert!(sql.len() <= BYTES && sql.len() >= BYTES - 1, "{}", sql.len());
        assert!(long.starts_with(&sql));
    }
}
