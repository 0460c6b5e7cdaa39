//! `AdapterStore` and `AdapterReceiver`: the `Store` and `Receiver` traits,
//! each call one request to the connection's own adapter process.
//!
//! Dropping one kills its process (`SIGKILL`): that is how a kill at a kill
//! point, or the end of a run, reaches the code under test.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::process::{AdapterProcess, CallError};
use super::protocol::ErrorKind;
use crate::model::{Command, Head, OutboxRow, StoredEvent};
use crate::store::{
    Applied, Clock, Handled, Leased, Lookup, Outcome, Receiver, Request, Result, Retried, RetryPolicy, Store,
    StoreError, Timer,
};

/// One connection: its process, the run's clock, and what `open` said.
pub struct Connection {
    process: AdapterProcess,
    clock: Clock,
    synchronous: Option<u8>,
}

impl Connection {
    pub fn new(process: AdapterProcess, clock: Clock, synchronous: Option<u8>) -> Connection {
        Connection {
            process,
            clock,
            synchronous,
        }
    }

    /// One request, its `ok` answer parsed as `T`.
    fn call<T: DeserializeOwned>(&mut self, op: &str, fields: Value) -> std::result::Result<T, CallError> {
        let fields = match fields {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let ok = self.process.call(op, self.clock.now(), fields)?;
        T::deserialize(&ok).map_err(|error| {
            CallError::Broken(format!(
                "the adapter ({}) answered `{op}` with {ok} ({error})",
                self.process.label()
            ))
        })
    }

    /// `call`, with every error answer mapped the usual way.
    fn request<T: DeserializeOwned>(&mut self, op: &str, fields: Value) -> Result<T> {
        self.call(op, fields).map_err(CallError::into_store_error)
    }

    /// A request that carries no answer but `{}`.
    fn request_unit(&mut self, op: &str) -> Result<()> {
        self.request::<Value>(op, json!({})).map(|_| ())
    }
}

/// A conflict answer becomes `StoreError::Conflict` for this append.
fn or_conflict(error: CallError, workflow_id: &str, expected_seq: u64) -> StoreError {
    match error {
        CallError::Answered(answer) if answer.kind == ErrorKind::Conflict => StoreError::Conflict {
            workflow_id: workflow_id.to_string(),
            expected_seq,
        },
        other => other.into_store_error(),
    }
}

#[derive(Deserialize)]
struct Events {
    events: Vec<StoredEvent>,
}

#[derive(Deserialize)]
struct Heads {
    heads: Vec<Head>,
}

#[derive(Deserialize)]
struct Rows {
    rows: Vec<OutboxRow>,
}

#[derive(Deserialize)]
struct Seq {
    seq: u64,
}

#[derive(Deserialize)]
struct CommandId {
    command_id: String,
}

#[derive(Deserialize)]
struct Changed {
    changed: bool,
}

#[derive(Deserialize)]
struct Claim {
    claimed: Vec<Leased>,
}

#[derive(Deserialize)]
struct Rescheduled {
    retried: Option<Retried>,
}

#[derive(Deserialize)]
struct Timers {
    timers: Vec<Timer>,
}

#[derive(Deserialize)]
struct Purged {
    removed: u64,
}

#[derive(Deserialize)]
struct AppendAnswer {
    seq: u64,
    command_ids: Vec<String>,
}

/// A store connection served by an adapter.
pub struct AdapterStore {
    connection: Connection,
    /// The append of the open transaction, to name a conflict at `commit`.
    appending: Option<(String, u64)>,
}

impl AdapterStore {
    pub fn new(connection: Connection) -> AdapterStore {
        AdapterStore {
            connection,
            appending: None,
        }
    }

    /// A request that does nothing: the protocol's own cost.
    pub fn ping(&mut self) -> Result<()> {
        self.connection.request_unit("ping")
    }
}

impl Store for AdapterStore {
    fn load(&mut self, workflow_id: &str) -> Result<Vec<StoredEvent>> {
        let answer: Events = self.connection.request("load", json!({ "workflow_id": workflow_id }))?;
        Ok(answer.events)
    }

    fn heads(&mut self) -> Result<Vec<Head>> {
        let answer: Heads = self.connection.request("heads", json!({}))?;
        Ok(answer.heads)
    }

    fn commands(&mut self, workflow_id: &str, event_seq: u64) -> Result<Vec<OutboxRow>> {
        let fields = json!({ "workflow_id": workflow_id, "event_seq": event_seq });
        let answer: Rows = self.connection.request("commands", fields)?;
        Ok(answer.rows)
    }

    fn pending(&mut self, limit: usize) -> Result<Vec<OutboxRow>> {
        let answer: Rows = self.connection.request("pending", json!({ "limit": limit }))?;
        Ok(answer.rows)
    }

    fn begin(&mut self) -> Result<()> {
        self.appending = None;
        self.connection.request_unit("begin")
    }

    fn insert_event(&mut self, workflow_id: &str, expected_seq: u64, kind: &str, payload: &str) -> Result<u64> {
        self.appending = Some((workflow_id.to_string(), expected_seq));
        let fields = json!({
            "workflow_id": workflow_id, "expected_seq": expected_seq, "kind": kind, "payload": payload,
        });
        let answer: Seq = self
            .connection
            .call("insert_event", fields)
            .map_err(|error| or_conflict(error, workflow_id, expected_seq))?;
        Ok(answer.seq)
    }

    fn insert_command(&mut self, workflow_id: &str, event_seq: u64, index: usize, command: &Command) -> Result<String> {
        let fields = json!({
            "workflow_id": workflow_id, "event_seq": event_seq, "index": index,
            "kind": command.kind, "payload": command.payload,
        });
        let answer: CommandId = self.connection.request("insert_command", fields)?;
        Ok(answer.command_id)
    }

    fn commit(&mut self) -> Result<()> {
        let appending = self.appending.take().unwrap_or_default();
        self.connection
            .call::<Value>("commit", json!({}))
            .map(|_| ())
            .map_err(|error| or_conflict(error, &appending.0, appending.1))
    }

    fn rollback(&mut self) -> Result<()> {
        self.appending = None;
        self.connection.request_unit("rollback")
    }

    fn mark_done(&mut self, command_id: &str, result: Option<&str>) -> Result<bool> {
        let answer: Changed = self
            .connection
            .request("mark_done", json!({ "command_id": command_id, "result": result }))?;
        Ok(answer.changed)
    }

    fn claim(&mut self, owner: &str, lease_ticks: u64, limit: usize) -> Result<Vec<Leased>> {
        let fields = json!({ "owner": owner, "lease_ticks": lease_ticks, "limit": limit });
        let answer: Claim = self.connection.request("claim", fields)?;
        Ok(answer.claimed)
    }

    fn mark_done_leased(&mut self, command_id: &str, token: u64, result: Option<&str>) -> Result<bool> {
        let fields = json!({ "command_id": command_id, "token": token, "result": result });
        let answer: Changed = self.connection.request("mark_done_leased", fields)?;
        Ok(answer.changed)
    }

    /// Retry timers: what to do is the store's (one more attempt, the
    /// delay, the dead letter at `max_attempts`); the worker only says what
    /// failed, with the policy and its jitter draw. `token` only under leases.
    fn schedule_retry(
        &mut self,
        command_id: &str,
        token: Option<u64>,
        error: &str,
        policy: &RetryPolicy,
        jitter_permille: u64,
    ) -> Result<Option<Retried>> {
        let mut fields = json!({
            "command_id": command_id, "error": error, "policy": policy, "jitter_permille": jitter_permille,
        });
        if let (Some(token), Value::Object(map)) = (token, &mut fields) {
            map.insert("token".to_string(), Value::from(token));
        }
        let answer: Rescheduled = self.connection.request("schedule_retry", fields)?;
        Ok(answer.retried)
    }

    fn timers(&mut self) -> Result<Vec<Timer>> {
        let answer: Timers = self.connection.request("timers", json!({}))?;
        Ok(answer.timers)
    }

    fn synchronous(&self) -> Option<u8> {
        self.connection.synchronous
    }

    /// One `append` request: the whole transaction (`call` granularity).
    fn append_with_commands(
        &mut self,
        workflow_id: &str,
        expected_seq: u64,
        kind: &str,
        payload: &str,
        commands: &[Command],
    ) -> Result<(u64, Vec<String>)> {
        let fields = json!({
            "workflow_id": workflow_id, "expected_seq": expected_seq, "kind": kind, "payload": payload,
            "commands": commands,
        });
        let answer: AppendAnswer = self
            .connection
            .call("append", fields)
            .map_err(|error| or_conflict(error, workflow_id, expected_seq))?;
        Ok((answer.seq, answer.command_ids))
    }
}

#[derive(Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
enum HandleAnswer {
    Applied { result: String, effect_id: Option<i64> },
    Duplicate { result: String },
    Conflict,
}

/// A receiver connection served by an adapter.
pub struct AdapterReceiver {
    connection: Connection,
    /// Whether the adapter declared `retries` (and so serves `purge_dedup`).
    purges: bool,
}

impl AdapterReceiver {
    pub fn new(connection: Connection, purges: bool) -> AdapterReceiver {
        AdapterReceiver { connection, purges }
    }
}

impl Receiver for AdapterReceiver {
    fn begin(&mut self) -> Result<()> {
        self.connection.request_unit("begin")
    }

    fn lookup(&mut self, request: &Request) -> Result<Lookup> {
        self.connection.request("lookup", json!({ "request": request }))
    }

    fn apply(&mut self, request: &Request) -> Result<Applied> {
        self.connection.request("apply", json!({ "request": request }))
    }

    fn commit(&mut self) -> Result<()> {
        self.connection.request_unit("commit")
    }

    fn rollback(&mut self) -> Result<()> {
        self.connection.request_unit("rollback")
    }

    fn synchronous(&self) -> Option<u8> {
        self.connection.synchronous
    }

    /// One `purge_dedup` request; a receiver without the `retries`
    /// capability keeps its records forever (the trait's default).
    fn purge_dedup(&mut self, now: u64, retention_ticks: u64) -> Result<u64> {
        if !self.purges {
            return Ok(0);
        }
        let fields = json!({ "now": now, "retention_ticks": retention_ticks });
        let answer: Purged = self.connection.request("purge_dedup", fields)?;
        Ok(answer.removed)
    }

    /// One `handle` request (`call` granularity).
    fn handle(&mut self, request: &Request) -> Result<Handled> {
        let answer: HandleAnswer = self.connection.request("handle", json!({ "request": request }))?;
        Ok(match answer {
            HandleAnswer::Applied { result, effect_id } => Handled {
                outcome: Outcome::Applied { result },
                effect_id,
            },
            HandleAnswer::Duplicate { result } => Handled {
                outcome: Outcome::Duplicate { result },
                effect_id: None,
            },
            HandleAnswer::Conflict => Handled {
                outcome: Outcome::Conflict,
                effect_id: None,
            },
        })
    }
}
