//! The storage protocol under test, as traits, and its reference
//! implementation in plain rusqlite.
//!
//! Nothing in this module knows it is being simulated. The traits are the
//! API a durable-workflow library would offer anyway, cut at the points
//! where a real process can stop: a write transaction is `begin`, one
//! `insert_event`, some `insert_command`s and `commit`, each a separate call,
//! so the simulator can interleave other connections (and kill this one)
//! between any two of them. The one-call conveniences (`append`,
//! `append_with_commands`, `Receiver::handle`) are built from the same steps.
//!
//! - `Store`: one connection to the event store and outbox (`events`, `outbox`).
//! - `Receiver`: one connection to an idempotent receiver's database.
//! - `System`: opens those connections for one run (one set of files), and
//!   dumps the files' final state in canonical form for the checkers.
//! - `Implementation`: a named way of building a `System`, plus the `Engine`
//!   (the application-side choices: keys, when to mark done, replay): the
//!   reference, the group-commit store, the mutants (`crate::mutants`), an
//!   outside store behind an adapter (`crate::adapter`), or a library user's.
//!
//! Modules: `connection` (open + PRAGMAs), `error`, `events` and `outbox`
//! (the reference's SQL), `reference` (the reference `Store` and `System`),
//! `group_commit` (appends of many writers in one transaction),
//! `receiver` (the reference `Receiver`), `service` (what the receiver's
//! business effect computes), `dump` (the canonical state the checkers
//! read), `clock` (simulated time as a store may read it), `lease`
//! (claims with fencing tokens, an optional capability), `timers` (durable
//! retry timers and the dead letter, an optional capability), `retention`
//! (the receiver's de-dup retention), `registry` (implementations by name).

pub mod artifact;
pub mod backup;
pub mod clock;
pub mod connection;
pub mod dump;
pub mod engine;
pub mod error;
pub mod events;
pub mod group_commit;
pub mod lease;
pub mod outbox;
pub mod receiver;
pub mod reference;
pub mod registry;
pub mod restore;
pub mod retention;
pub mod service;
pub mod timers;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use artifact::Artifact;
pub use clock::Clock;
pub use connection::{JournalMode, SqliteSettings, Synchronous};
pub use dump::Snapshot;
pub use engine::{Engine, ReferenceEngine};
pub use error::StoreError;
pub use lease::Leased;
pub use timers::{Retried, RetryPolicy, Timer};

use crate::model::{Command, Head, OutboxRow, StoredEvent};
use crate::ratio::Ratio;

pub type Result<T> = std::result::Result<T, StoreError>;

/// One connection's view of the event store and the outbox.
///
/// Reads run outside any explicit transaction (each is one statement, one
/// snapshot). Writes run inside `begin` .. `commit`/`rollback`, except
/// `mark_done`, which is a single autocommitted statement.
pub trait Store {
    /// The events of one workflow, ordered by `seq`.
    fn load(&mut self, workflow_id: &str) -> Result<Vec<StoredEvent>>;
    /// The head event of every workflow that has one, ordered by id.
    fn heads(&mut self) -> Result<Vec<Head>>;
    /// The commands emitted by event `event_seq` of `workflow_id`, by index.
    fn commands(&mut self, workflow_id: &str, event_seq: u64) -> Result<Vec<OutboxRow>>;
    /// Up to `limit` pending outbox rows, oldest first.
    fn pending(&mut self, limit: usize) -> Result<Vec<OutboxRow>>;

    /// Starts a write transaction. `Busy` if another connection writes.
    fn begin(&mut self) -> Result<()>;
    /// Inserts the event at `expected_seq + 1`; `Conflict` if the workflow's
    /// head is not `expected_seq`. Returns the `seq` it was stored at.
    fn insert_event(&mut self, workflow_id: &str, expected_seq: u64, kind: &str, payload: &str) -> Result<u64>;
    /// Enqueues the `index`-th command of event `event_seq`; returns its id.
    fn insert_command(&mut self, workflow_id: &str, event_seq: u64, index: usize, command: &Command) -> Result<String>;
    /// Commits the open transaction. A store that checks heads at commit
    /// (group commit) answers `Conflict` here for a stale append, and may
    /// answer `Pending`: the transaction is queued, ask again.
    fn commit(&mut self) -> Result<()>;
    /// Rolls the open transaction back; a no-op without one.
    fn rollback(&mut self) -> Result<()>;

    /// Marks a command done with the receiver's confirmed `result`. Returns
    /// false if nothing changed (another worker got there first). `None`
    /// marks it done without a result, which only an engine that marks before
    /// confirmation does; a later call with the result then fills it in.
    fn mark_done(&mut self, command_id: &str, result: Option<&str>) -> Result<bool>;

    /// Leases (an optional capability, see `lease` and
    /// `Implementation::leases`): claims up to `limit` pending rows whose
    /// lease is free (never claimed, or expired by the run's `Clock`) for
    /// `owner` until `now + lease_ticks`, each with a fencing token greater
    /// than every earlier claim's of that row, in one statement or
    /// transaction; oldest commit first. A store without leases answers
    /// `Unsupported`.
    fn claim(&mut self, owner: &str, lease_ticks: u64, limit: usize) -> Result<Vec<Leased>> {
        let _ = (owner, lease_ticks, limit);
        Err(StoreError::Unsupported("claim (leases)".to_string()))
    }

    /// Leases: `mark_done`, counted only while `token` is the row's current
    /// fencing token; false if nothing changed (the lease passed to another
    /// holder, or the row is done). A store without leases answers `Unsupported`.
    fn mark_done_leased(&mut self, command_id: &str, token: u64, result: Option<&str>) -> Result<bool> {
        let _ = (command_id, token, result);
        Err(StoreError::Unsupported(
            "mark_done with a fencing token (leases)".to_string(),
        ))
    }

    /// Retry timers (an optional capability, see `timers` and
    /// `Implementation::retries`): records that a delivery of `command_id`
    /// failed with the retryable `error`, in one statement or transaction:
    /// one more attempt, and the row due again at the run's `Clock` plus the
    /// policy's delay for that attempt (with `jitter_permille` thousandths
    /// of it added, 0..=500), or dead-lettered once `max_attempts` failed.
    /// With a lease `token`, fenced like `mark_done_leased` (and the lease
    /// released). `None` if nothing changed (done, dead-lettered, or the
    /// lease passed on). With timers, `pending` and `claim` skip rows whose
    /// timer is in the future and dead-lettered rows, and `mark_done` never
    /// marks a dead-lettered row done. A store without timers answers `Unsupported`.
    fn schedule_retry(
        &mut self,
        command_id: &str,
        token: Option<u64>,
        error: &str,
        policy: &RetryPolicy,
        jitter_permille: u64,
    ) -> Result<Option<Retried>> {
        let _ = (command_id, token, error, policy, jitter_permille);
        Err(StoreError::Unsupported("schedule_retry (retries)".to_string()))
    }

    /// Retry timers: every row that failed at least once, oldest commit
    /// first (the settle check reads it: a row waiting for its timer is not
    /// settled, a dead-lettered one is). A store without timers answers `Unsupported`.
    fn timers(&mut self) -> Result<Vec<Timer>> {
        Err(StoreError::Unsupported("timers (retries)".to_string()))
    }

    /// The connection, for read-only probes of the settings in force
    /// (`PRAGMA synchronous`). The harness never writes through it.
    fn connection(&self) -> Option<&rusqlite::Connection> {
        None
    }

    /// The `synchronous` level this connection runs with (0 OFF … 3 EXTRA),
    /// as SQLite reads it back; by default through `connection`.
    fn synchronous(&self) -> Option<u8> {
        synchronous_of(self.connection())
    }

    /// `append` without commands.
    fn append(&mut self, workflow_id: &str, expected_seq: u64, kind: &str, payload: &str) -> Result<u64> {
        self.append_with_commands(workflow_id, expected_seq, kind, payload, &[])
            .map(|(seq, _)| seq)
    }

    /// An event and all its commands in one transaction: both or neither.
    fn append_with_commands(
        &mut self,
        workflow_id: &str,
        expected_seq: u64,
        kind: &str,
        payload: &str,
        commands: &[Command],
    ) -> Result<(u64, Vec<String>)> {
        self.begin()?;
        let attempt = (|| {
            let seq = self.insert_event(workflow_id, expected_seq, kind, payload)?;
            let ids = commands
                .iter()
                .enumerate()
                .map(|(index, command)| self.insert_command(workflow_id, seq, index, command))
                .collect::<Result<Vec<_>>>()?;
            // A store that commits in groups answers `Pending` until the
            // group has committed; asking again is what flushes it.
            let mut committed = self.commit();
            while let Err(StoreError::Pending) = committed {
                committed = self.commit();
            }
            committed?;
            Ok((seq, ids))
        })();
        if attempt.is_err() {
            // The transaction may still be open; the original error is the one to report.
            let _ = self.rollback();
        }
        attempt
    }
}

/// A request to a receiver: the idempotency key, the command's core
/// parameters (`kind` and `payload`), and delivery metadata that is *not*
/// part of the operation's identity (a retry carries a new `attempt` and
/// `sent_tick` but is the same operation).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub key: String,
    pub kind: String,
    pub payload: String,
    pub attempt: u32,
    pub sent_tick: u64,
}

/// What a receiver found for a request's key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "found", rename_all = "snake_case")]
pub enum Lookup {
    /// Never seen: apply it.
    New,
    /// Seen with the same core parameters: return the first result again.
    Seen { result: String },
    /// Seen with other core parameters: an error, never a silent reuse.
    Conflict,
}

/// A receiver's answer to a request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    Applied {
        result: String,
    },
    Duplicate {
        result: String,
    },
    Conflict,
    /// Not done now, try again later (a receiver that sheds load, a
    /// gateway's error): says nothing about whether an earlier delivery was
    /// applied. Retried by a durable timer (`Store::schedule_retry`).
    Retryable {
        error: String,
    },
}

impl Outcome {
    /// The confirmed result, if the request was applied now or before.
    pub fn result(&self) -> Option<&str> {
        match self {
            Outcome::Applied { result } | Outcome::Duplicate { result } => Some(result),
            Outcome::Conflict | Outcome::Retryable { .. } => None,
        }
    }
}

/// What `Receiver::handle` did: the outcome, and the id of the effect it
/// performed when it applied the request now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handled {
    pub outcome: Outcome,
    pub effect_id: Option<i64>,
}

/// What applying a new request did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub effect_id: i64,
    pub result: String,
}

/// One connection to an idempotent receiver's database. A request is handled
/// as `begin`, `lookup`, then `apply` + `commit` for a new key, or `rollback`
/// for a repeat or a conflict.
pub trait Receiver {
    fn begin(&mut self) -> Result<()>;
    fn lookup(&mut self, request: &Request) -> Result<Lookup>;
    /// Performs the business effect and records the key, its digest and the
    /// result, in the open transaction.
    fn apply(&mut self, request: &Request) -> Result<Applied>;
    fn commit(&mut self) -> Result<()>;
    fn rollback(&mut self) -> Result<()>;

    /// The connection, for read-only probes of the settings in force.
    fn connection(&self) -> Option<&rusqlite::Connection> {
        None
    }

    /// The `synchronous` level this connection runs with, if known.
    fn synchronous(&self) -> Option<u8> {
        synchronous_of(self.connection())
    }

    /// De-dup retention (`[receivers] dedup_retention_ticks`): deletes the
    /// de-duplication records applied more than `retention_ticks` before
    /// tick `now`, in one statement; returns how many. Called only in runs
    /// with a retention, whose records carry their tick (`retention`). By
    /// default a no-op: a receiver that keeps records forever.
    fn purge_dedup(&mut self, now: u64, retention_ticks: u64) -> Result<u64> {
        let _ = (now, retention_ticks);
        Ok(0)
    }

    /// The whole request in one call (what a receiver of `call`
    /// granularity is driven through).
    fn handle(&mut self, request: &Request) -> Result<Handled> {
        self.begin()?;
        let attempt = (|| {
            Ok(match self.lookup(request)? {
                Lookup::New => {
                    let applied = self.apply(request)?;
                    self.commit()?;
                    Handled {
                        outcome: Outcome::Applied { result: applied.result },
                        effect_id: Some(applied.effect_id),
                    }
                }
                Lookup::Seen { result } => {
                    self.rollback()?;
                    Handled {
                        outcome: Outcome::Duplicate { result },
                        effect_id: None,
                    }
                }
                Lookup::Conflict => {
                    self.rollback()?;
                    Handled {
                        outcome: Outcome::Conflict,
                        effect_id: None,
                    }
                }
            })
        })();
        if attempt.is_err() {
            let _ = self.rollback();
        }
        attempt
    }
}

/// `PRAGMA synchronous` as `conn` reads it back.
fn synchronous_of(conn: Option<&rusqlite::Connection>) -> Option<u8> {
    conn?
        .pragma_query_value(None, "synchronous", |row| row.get::<_, u8>(0))
        .ok()
}

/// Where one run's databases live and how they are configured.
#[derive(Clone, Debug)]
pub struct SystemConfig {
    pub store_path: PathBuf,
    pub receiver_path: PathBuf,
    pub store_sqlite: SqliteSettings,
    pub receiver_sqlite: SqliteSettings,
    /// The share of hotel bookings that fail terminally (decided from the
    /// request, see `service`).
    pub hotel_failure: Ratio,
    /// The run's seed, for implementations that pass it on (an adapter's
    /// handshake); nothing in a store should need it.
    pub seed: u64,
    /// The run's time, for a store that needs one (a timestamp, a lease's
    /// expiry): never the wall clock, so that a run replays.
    pub clock: Clock,
    /// Whether the run's workers claim rows with leases (`Store::claim`):
    /// a store that supports them prepares what they need at set-up.
    pub leases: bool,
    /// Whether the run retries with durable timers (`Store::schedule_retry`):
    /// a store that has them prepares what they need at set-up.
    pub retries: bool,
    /// Whether the run's receivers purge de-dup records by age
    /// (`Receiver::purge_dedup`): they then stamp each record's tick.
    pub dedup_retention: bool,
    /// For a store whose connections live in other processes: the directory
    /// of the crash VFS's shared state, which each process's SQLite reaches
    /// through crashsim's loadable extension (`vfs::extension`); `None`
    /// when the run has no power loss.
    pub vfs_state: Option<PathBuf>,
}

/// Whose connection is being opened: the actor (`writer-3`) and which of
/// its lives, or the run itself (`observer`). For logs and adapters; a
/// store must behave the same whoever opens it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Who<'a> {
    pub actor: &'a str,
    pub incarnation: u32,
}

impl Who<'static> {
    /// The run's own read-only store connection (settle checks).
    pub const OBSERVER: Who<'static> = Who {
        actor: "observer",
        incarnation: 0,
    };
}

/// The databases of one run; opens as many connections as the run needs.
pub trait System {
    fn open_store(&mut self, who: &Who<'_>) -> Result<Box<dyn Store>>;
    /// The run's own store connection, which only reads (settle checks); by
    /// default an ordinary one, opened for `Who::OBSERVER`.
    fn open_observer(&mut self) -> Result<Box<dyn Store>> {
        self.open_store(&Who::OBSERVER)
    }
    fn open_receiver(&mut self, who: &Who<'_>) -> Result<Box<dyn Receiver>>;
    /// The state of the run's databases, in canonical form, read straight
    /// from the tables (never through a cache the store keeps). Called at the
    /// end of a run, after every connection it opened is closed, and right
    /// after every power cut on a fresh `System`: open the files with
    /// `dump::open(path, settings.vfs)`, which goes through the crash VFS
    /// when there is one.
    fn dump(&mut self) -> Result<Snapshot>;
    /// The dump of a copy of the run's databases taken while it goes:
    /// `store` and `receiver` are copies of the files as they were between
    /// two steps (each with its WAL or rollback journal, never its WAL
    /// index), which no connection of the run sees. Read them as `dump`
    /// reads the run's files, each opened with `dump::open_copy` (which
    /// lets SQLite recover it, so what it reads is what was committed);
    /// the outbox, effects and de-dup records are what is judged. Called
    /// only when the trace shows a command applied twice
    /// (`check::certain`), to judge I2 when it happens. `Ok(None)`, the
    /// default: not offered, and an effect applied twice is judged after
    /// the run, as every other finding of the dump is. An error stops the
    /// run without a verdict, as an error of `dump` does. Called only where
    /// `offers_peek` says so (the files are copied only then).
    fn peek(&mut self, _store: &std::path::Path, _receiver: &std::path::Path) -> Result<Option<Snapshot>> {
        Ok(None)
    }
    /// Whether `peek` reads copies (`false`, the default: no copy is made
    /// and the dump after the run judges).
    fn offers_peek(&self) -> bool {
        false
    }
    /// Files about the run for a failing seed's report (an adapter's stderr
    /// and transcript). Read once, after `dump`, when the run is over: what
    /// is costly to render may be handed over deferred (`Artifact::deferred`).
    fn artifacts(&mut self) -> Vec<Artifact> {
        Vec::new()
    }
    /// Takes an online backup of the store's database into `dest` (a file
    /// that does not exist yet, beside the store's), on a connection of its
    /// own while other connections may have transactions open: SQLite's
    /// backup API (`backup::backup`), `VACUUM INTO`, or a copy of the whole
    /// file set after a checkpoint. `part` counts the calls for this
    /// backup from 0: a backup in one call returns `Backed::Complete` at
    /// once; one copied in parts (an operator's script that copies a file
    /// set one file at a time) returns `Backed::More`, and the simulator
    /// lets the actors move, then calls again with `part + 1`.
    /// `StoreError::Busy` asks to be tried again later (the same part).
    /// Only called when `Implementation::backups` says so.
    fn backup(&mut self, _dest: &std::path::Path, _part: u32) -> Result<Backed> {
        Err(StoreError::Unsupported("this store takes no backups".to_string()))
    }
    /// The store's part of the canonical dump (events, outbox, timers and
    /// `store_integrity`) as the backup at `dest` holds it, read on a
    /// connection of its own through the run's VFS (`backup::dump_backup`
    /// for the reference schema). Called after the run, for every backup
    /// that completed.
    fn dump_backup(&mut self, _dest: &std::path::Path) -> Result<Snapshot> {
        Err(StoreError::Unsupported("this store takes no backups".to_string()))
    }
}

/// Where a backup stands after one of its calls (`System::backup`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backed {
    /// The backup is complete: its file is judged after the run (I11).
    Complete,
    /// Another part is to be copied later, after the actors moved.
    More,
}

/// How a role's transaction is driven (see docs/adapter-protocol.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    /// One call per operation (`begin`, `insert_event`, …, `commit`): the
    /// simulator interleaves and kills inside an open transaction.
    #[default]
    Step,
    /// One call per append (`append_with_commands`) and per delivery
    /// (`Receiver::handle`): the kill points inside a transaction are unreachable.
    Call,
}

/// The granularity of each role.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roles {
    pub store: Granularity,
    pub receiver: Granularity,
}

/// A named implementation of the protocol.
pub trait Implementation: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// Creates the schemas (if needed) and returns the run's `System`.
    fn system(&self, config: &SystemConfig) -> Result<Box<dyn System>>;
    /// The application-side choices (see `engine`); the reference by default.
    fn engine(&self) -> &dyn Engine {
        &ReferenceEngine
    }
    /// How each role is driven; `Step` for both by default.
    fn roles(&self) -> Roles {
        Roles::default()
    }
    /// Whether the simulator can kill this store's processes inside a call
    /// (at a persistence point its SQLite makes): an outside store whose
    /// SQLite loads crashsim's VFS extension.
    fn kills_inside_calls(&self) -> bool {
        false
    }

    /// Whether every connection lives in this process and opens its files
    /// through the VFS its settings name. Power loss needs that (the crash
    /// VFS sees only this process's writes); an adapter's processes do not.
    fn in_process(&self) -> bool {
        true
    }
    /// Whether a call of one of its connections can be suspended inside
    /// its SQLite while other connections' calls run (`[preempt]`, in
    /// this process: `sim::baton`). True unless its connections share
    /// state, such as one committer for all of them.
    fn suspendable_in_process(&self) -> bool {
        true
    }
    /// Whether its stores implement leases (`Store::claim` and
    /// `Store::mark_done_leased`). A scenario with `[leases]` refuses an
    /// implementation without them (no verdict); false by default.
    fn leases(&self) -> bool {
        false
    }
    /// Whether its stores implement retry timers (`Store::schedule_retry`
    /// and `Store::timers`). A scenario with `[retries]` refuses an
    /// implementation without them (no verdict); false by default.
    fn retries(&self) -> bool {
        false
    }
    /// Whether its `System` takes online backups (`System::backup` and
    /// `System::dump_backup`). A scenario with `[backup]` refuses an
    /// implementation without them (no verdict); false by default.
    fn backups(&self) -> bool {
        false
    }
    /// Whether each actor's store handle reads time only within that
    /// actor's own steps, so the simulator can give every actor a skewed
    /// clock of its own (`[faults.skew]`). False for a store whose actors
    /// share a committer that stamps their work with one clock.
    fn clock_per_actor(&self) -> bool {
        true
    }
}
