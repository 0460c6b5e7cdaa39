//! The adapter protocol's messages (docs/adapter-protocol.md), shared by
//! the client (`process`, `client`) and crashsim's own server (`serve`).
//!
//! A request is a JSON object with `id`, `op`, `tick` and the op's fields
//! beside them; an answer has the request's `id` and either `ok` (the op's
//! result) or `error` (`kind` and `message`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::store::{Granularity, JournalMode, SqliteSettings, StoreError, Synchronous};

/// The version this crashsim speaks.
pub const VERSION: u32 = 1;

/// The capability an adapter declares (`capabilities` in its handshake)
/// when its store serves leases: the ops `claim` and `mark_done_leased`.
pub const LEASES: &str = "leases";
/// The capability an adapter declares when it serves retry timers, the dead
/// letter and de-dup retention (`[retries]`, `[receivers]`): the store ops
/// `schedule_retry` and `timers`, the receiver op `purge_dedup`, and the
/// dump's `timers`. A scenario with `[retries]` refuses an adapter store
/// that does not declare it, naming it.
pub const RETRIES: &str = "retries";
/// The capability an adapter declares when its store takes online backups
/// (`[backup]`): the op `backup` with a `path`, on a process of its own,
/// and `dump` with a `path`, which reads the store's part of that backup.
pub const BACKUP: &str = "backup";

/// Why a process was started (the hello's `purpose`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Purpose {
    /// An actor's connection: `open` follows.
    Actor,
    /// Creates the schemas.
    Setup,
    /// The run's own read-only connection.
    Observer,
    /// Reads the final state (or a backup's).
    Dump,
    /// Takes an online backup (`backup`) while the actors' processes work.
    Backup,
    /// crashsim asks what the adapter is, before any seed runs.
    Probe,
    /// `crashsim bench`.
    Bench,
}

/// One database's file and settings, as the hello states them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Database {
    pub path: String,
    pub journal_mode: JournalMode,
    pub synchronous: Synchronous,
    pub busy_timeout_ms: u32,
}

impl Database {
    pub fn new(path: &std::path::Path, settings: &SqliteSettings) -> Database {
        Database {
            path: path.display().to_string(),
            journal_mode: settings.journal_mode,
            synchronous: settings.synchronous,
            busy_timeout_ms: settings.busy_timeout_ms,
        }
    }

    /// The settings to open with (crashsim's server side).
    pub fn settings(&self) -> SqliteSettings {
        SqliteSettings {
            journal_mode: self.journal_mode,
            synchronous: self.synchronous,
            busy_timeout_ms: self.busy_timeout_ms,
            vfs: None,
        }
    }
}

/// The hello's fields (beside `id`, `op` and `tick`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u32,
    pub crashsim: String,
    pub purpose: Purpose,
    pub actor: String,
    pub incarnation: u32,
    pub seed: u64,
    pub store: Database,
    pub receiver: Database,
    pub hotel_failure: Fraction,
    /// Whether the run's workers claim rows with leases (only sent when
    /// true): a store with the `leases` capability prepares what they need
    /// at `setup`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub leases: bool,
    /// Whether the run retries with durable timers (only sent when true):
    /// a store with the `retries` capability adds its timer columns at `setup`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retries: bool,
    /// Whether the run's receivers purge de-dup records by age (only sent
    /// when true): a receiver with the `retries` capability then stamps
    /// each record with the tick it was applied at, for `purge_dedup`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dedup_retention: bool,
}

/// A ratio as two integers (the hello's `hotel_failure`), easier for an
/// adapter to read than the scenario files' `"1/4"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fraction {
    pub numerator: u32,
    pub denominator: u32,
}

impl From<crate::ratio::Ratio> for Fraction {
    fn from(ratio: crate::ratio::Ratio) -> Fraction {
        Fraction {
            numerator: ratio.numerator,
            denominator: ratio.denominator,
        }
    }
}

impl Fraction {
    pub fn ratio(self) -> crate::ratio::Ratio {
        crate::ratio::Ratio::new(self.numerator, self.denominator.max(1))
    }
}

/// What the adapter says it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub protocol: u32,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub roles: Served,
    /// Optional capabilities beyond version 1's ops: `leases`, `retries`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    /// Optional: the files the store is made of beyond those its command
    /// names (modules the adapter imports), relative to crashsim's working
    /// directory or absolute. crashsim hashes them with the command's own,
    /// so a capsule can tell when the store changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// Optional: the version of the SQLite library the store runs on
    /// (`sqlite3.sqlite_version` in Python), named beside crashsim's own in
    /// reports and capsules. Where crashsim's VFS extension loaded into it,
    /// the version the extension read wins over this word.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqlite_version: Option<String>,
    /// Optional: the crashsim SDK the adapter is written with. An SDK is
    /// versioned with crashsim itself (one commit, one wheel), so one of
    /// another version is refused at `hello`, both versions named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk: Option<Sdk>,
}

/// The SDK an adapter says it is written with (`crashsim_adapter 0.1.0`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sdk {
    pub name: String,
    pub version: String,
}

impl Identity {
    /// Whether the adapter declared `capability`.
    pub fn can(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|declared| declared == capability)
    }
}

/// The roles an adapter serves, each with its granularity; a role left out
/// is served by crashsim's reference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Served {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<Granularity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<Granularity>,
}

impl Served {
    pub fn describe(&self) -> String {
        let part = |role: &str, granularity: Option<Granularity>| match granularity {
            Some(Granularity::Step) => format!("{role} (step)"),
            Some(Granularity::Call) => format!("{role} (call)"),
            None => format!("{role} (crashsim's reference)"),
        };
        format!("{}, {}", part("store", self.store), part("receiver", self.receiver))
    }
}

/// An error answer's `kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    Busy,
    Conflict,
    Invalid,
    Failed,
    /// The environment failed under the store (a full disk, an I/O error):
    /// no verdict, the run stops with an error.
    Environment,
    Unsupported,
}

/// An error answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorAnswer {
    pub kind: ErrorKind,
    #[serde(default)]
    pub message: String,
}

impl ErrorAnswer {
    /// How crashsim's own server reports a store error.
    pub fn of(error: &StoreError) -> ErrorAnswer {
        let kind = match error {
            StoreError::Busy | StoreError::Pending => ErrorKind::Busy,
            StoreError::Conflict { .. } => ErrorKind::Conflict,
            StoreError::Invalid(_) => ErrorKind::Invalid,
            other if other.environment().is_some() => ErrorKind::Environment,
            _ => ErrorKind::Failed,
        };
        let message = match error {
            StoreError::Invalid(message) => message.clone(),
            other => other.to_string(),
        };
        ErrorAnswer { kind, message }
    }
}

/// An answer line, as parsed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorAnswer>,
}

/// A request line: `id`, `op` and `tick`, then the op's fields.
pub fn request_line(id: u64, op: &str, tick: u64, fields: Map<String, Value>) -> String {
    let mut object = fields;
    object.insert("id".to_string(), Value::from(id));
    object.insert("op".to_string(), Value::from(op));
    object.insert("tick".to_string(), Value::from(tick));
    let mut line = serde_json::to_string(&Value::Object(object)).expect("JSON values serialise");
    line.push('\n');
    line
}

/// The fields of a serialisable value, for a request.
pub fn fields<T: Serialize>(value: &T) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(retries: bool, dedup_retention: bool) -> Map<String, Value> {
        let database = Database {
            path: "store.db".to_string(),
            journal_mode: JournalMode::Wal,
            synchronous: Synchronous::Full,
            busy_timeout_ms: 0,
        };
        fields(&Hello {
            protocol: VERSION,
            crashsim: "0".to_string(),
            purpose: Purpose::Actor,
            actor: "worker-0".to_string(),
            incarnation: 0,
            seed: 1,
            store: database.clone(),
            receiver: database,
            hotel_failure: Fraction {
                numerator: 1,
                denominator: 4,
            },
            leases: false,
            retries,
            dedup_retention,
        })
    }

    #[test]
    fn the_hello_names_timers_and_retention_only_when_the_run_has_them() {
        let plain = hello(false, false);
        assert!(!plain.contains_key("retries") && !plain.contains_key("dedup_retention"));
        assert!(!plain.contains_key("leases"));
        let both = hello(true, true);
        assert_eq!(both["retries"], Value::Bool(true));
        assert_eq!(both["dedup_retention"], Value::Bool(true));
        let parsed: Hello = serde_json::from_value(Value::Object(plain)).unwrap();
        assert!(!parsed.retries && !parsed.dedup_retention);
    }

    #[test]
    fn a_timer_answer_with_nulls_parses() {
        let timer: crate::store::Timer = serde_json::from_str(
            r#"{"command_id":"w:1:0","workflow_id":"w","attempts":4,"next_attempt_at":null,
                "dead_lettered_at":9,"last_error":null,"done":false}"#,
        )
        .unwrap();
        assert_eq!(timer.dead_lettered_at, Some(9));
        assert!(timer.next_attempt_at.is_none() && !timer.waiting());
    }
}
