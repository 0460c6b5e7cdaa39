//! The mutant zoo: the protocol's classic mistakes (PROTOCOL.md §7), each a
//! small implementation that differs from the reference in exactly one way.
//!
//! A mutant is the reference plus one override: a store that gets one
//! method wrong (`store.rs`), a receiver that gets one method wrong
//! (`receiver.rs`), an engine that makes one wrong choice around the store
//! (`engine.rs`), or connections opened without their settings. Nothing in
//! the reference knows about them. A harness that lets a mutant pass is a
//! harness with a blind spot: `crashsim mutants` measures how fast each one
//! is caught.
//!
//! | name | mistake | the one difference |
//! |---|---|---|
//! | `max_seq_plus_one` | 1 | `insert_event` takes `MAX(seq)+1`, ignoring `expected_seq` |
//! | `renumber_on_conflict` | 2 | `insert_event` retries a stale append at the next free `seq` |
//! | `split_transactions` | 3 | `insert_event` commits before the commands are inserted |
//! | `autocommit` | 3 | no `BEGIN`: every statement of an append commits on its own |
//! | `deliver_before_commit` | 4 | the writer sends commands itself before committing |
//! | `random_key_per_attempt` | 5 | a fresh idempotency key on every delivery attempt |
//! | `mark_done_before_confirm` | 6 | the worker marks the row done before delivering it |
//! | `body_hash_key` | 7 | the receiver de-duplicates by a hash of the request body |
//! | `no_dedup` | 8 | the receiver does not de-duplicate |
//! | `dedup_apart` | 8 | the receiver commits its de-dup record apart from the effect |
//! | `dedup_after_effect` | 8 | a receiver of `call` granularity commits the effect, then the de-dup record, in one call |
//! | `lookup_outside_txn` | 8 | a receiver of `call` granularity looks the key up outside the transaction that applies (caught with `[preempt]`) |
//! | `replay_dispatches` | 9 | replay sends the commands of the events it folds |
//! | `pragmas_once` | 10 | only the first connection gets the per-connection PRAGMAs |
//! | `unfenced_mark_done` | 11 | `mark_done_leased` ignores the fencing token: a late acknowledgement counts |
//! | `early_dedup_purge` | 12 | the receiver purges de-dup records at a hundredth of their retention |
//! | `sync_off` | 13 | the store runs `synchronous=OFF` and acknowledges commits as durable |
//! | `key_case_fold` | 14 | the receiver's de-dup lookup ignores case (`COLLATE NOCASE`) |
//! | `key_trim` | 14 | the receiver trims whitespace off keys before using them |
//! | `mark_done_like` | 14 | `mark_done` matches the command id with `LIKE ?` instead of `=` |
//! | `dedup_first` | 8 | the receiver commits its de-dup record, then performs the effect apart |
//! | `pending_offset_drift` | 15 | `pending` pages with an `OFFSET` kept across calls, skipping rows |
//! | `load_by_timestamp` | 15 | `load` orders events by `created_at` (`CURRENT_TIMESTAMP`) instead of `seq` |
//! | `heads_done_unscoped` | 15 | `heads` counts the workflow's done commands over all its events, not the head's |
//! | `claim_unleased_only` | 15 | `claim` takes only rows never leased, never an expired lease |
//! | `backup_db_file_only` | 16 | the backup copies the main `.db` file alone, with no lock, leaving `-wal` behind |
//! | `backup_file_set_unlocked` | 16 | the backup copies `-wal`, then checkpoints and copies the `.db` file, with no read transaction across them |
//!
//! Mistake 10 shows where the connections left on the default run weaker
//! than asked: where the SQLite build's default is weaker
//! (`scenarios/power_loss.toml`, `default_synchronous = "normal"`: they
//! lose acknowledged commits in a cut), or where a rollback journal is asked
//! for more than SQLite's default FULL (EXTRA, `tests/fixtures/sync_extra.toml`).
//! In WAL mode EXTRA makes FULL's syncs, so a connection left on FULL there
//! is as durable as asked, no finding.
//! Mistake 11 shows only where workers hold leases (`scenarios/leases.toml`);
//! mistake 12 only where receivers purge de-dup records and producers retry
//! late (`scenarios/retries.toml`); `dedup_after_effect` only where the
//! power can go out inside a call (`scenarios/power_loss.toml`);
//! `lookup_outside_txn` only where calls are suspended inside SQLite while
//! others run (`scenarios/interleave.toml`); mistake 14
//! (crashsim's addition to PROTOCOL.md §7: idempotency keys compared
//! inexactly) where ids are hostile or near-miss keys are probed; mistake
//! 15 (crashsim's too: a store whose reads answer wrongly) wherever the
//! answers are judged, `load_by_timestamp` only where clocks step back by
//! seconds (`scenarios/clocks.toml`), `claim_unleased_only` only where
//! workers hold leases (`scenarios/leases.toml`); mistake 16 (crashsim's
//! addition, from PROTOCOL.md §6: a backup of the main file alone) only
//! where backups are taken (`scenarios/backups.toml`).

pub mod backup;
mod engine;
mod forward;
mod hazards;
mod reads;
mod receiver;
mod store;

use std::path::Path;

use rusqlite::Connection;

use crate::invariant::Invariant;
use crate::store::receiver::ReferenceReceiver;
use crate::store::reference::{ReferenceStore, ReferenceSystem};
use crate::store::{
    Engine, Granularity, Implementation, Receiver, ReferenceEngine, Result, Roles, Snapshot, SqliteSettings, Store,
    System, SystemConfig, Who, connection, registry,
};

/// How a mutant's connections get their settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Settings {
    /// Through `store::connection::open`, on every open (the reference).
    EveryOpen,
    /// Only the schema set-up's connection got them; later opens are plain.
    FirstOpenOnly,
    /// The store's connections run with `synchronous=OFF`, whatever the
    /// configuration says, and still acknowledge commits.
    StoreSyncOff,
}

/// The calls a mutant's one difference lives in, where only some scenarios
/// make them (`detect` reads which scenarios never do).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LivesIn {
    /// Calls every scenario makes.
    Anywhere,
    /// `claim` and `mark_done_leased`: workers make them only under `[leases]`.
    Leases,
    /// `purge_dedup`: receivers purge only with `[receivers]
    /// dedup_retention_ticks`.
    Purges,
    /// `System::backup`: taken only under `[backup]`.
    Backups,
}

/// One known mistake, as an implementation.
pub struct Mutant {
    pub name: &'static str,
    /// Its number in PROTOCOL.md §7.
    pub mistake: u8,
    pub description: &'static str,
    store: fn(ReferenceStore) -> Box<dyn Store>,
    receiver: fn(ReferenceReceiver) -> Box<dyn Receiver>,
    engine: &'static dyn Engine,
    settings: Settings,
    roles: Roles,
    /// How its `System` takes an online backup.
    backup: backup::Method,
    /// Where its one difference lives, when only some scenarios make that
    /// call: on a scenario that never does, it runs as the reference.
    pub lives_in: LivesIn,
    /// The invariants its mistake breaks (docs/mutants.md, the "documented"
    /// column): the detection table records whether the first failing seed
    /// broke one.
    pub caught_by: &'static [Invariant],
}

fn reference_store(inner: ReferenceStore) -> Box<dyn Store> {
    Box::new(inner)
}

fn reference_receiver(inner: ReferenceReceiver) -> Box<dyn Receiver> {
    Box::new(inner)
}

const BASE: Mutant = Mutant {
    name: "",
    mistake: 0,
    description: "",
    store: reference_store,
    receiver: reference_receiver,
    engine: &ReferenceEngine,
    settings: Settings::EveryOpen,
    roles: Roles {
        store: Granularity::Step,
        receiver: Granularity::Step,
    },
    backup: backup::online,
    lives_in: LivesIn::Anywhere,
    caught_by: &[],
};

/// Every mutant, in the order of PROTOCOL.md §7 (then crashsim's mistakes 14 to 16).
pub static MUTANTS: [Mutant; 27] = [
    Mutant {
        name: "max_seq_plus_one",
        mistake: 1,
        description: "sequence computed as MAX(seq)+1 and inserted unconditionally",
        store: |inner| Box::new(store::MaxSeqPlusOne { inner }),
        caught_by: &[Invariant::I3],
        ..BASE
    },
    Mutant {
        name: "renumber_on_conflict",
        mistake: 2,
        description: "on conflict the event is renumbered to the next free seq instead of re-deciding",
        store: |inner| Box::new(store::RenumberOnConflict { inner }),
        caught_by: &[Invariant::I3],
        ..BASE
    },
    Mutant {
        name: "split_transactions",
        mistake: 3,
        description: "event and outbox rows committed in separate transactions",
        store: |inner| Box::new(store::SplitTransactions { inner }),
        caught_by: &[Invariant::I5, Invariant::I1],
        ..BASE
    },
    Mutant {
        name: "autocommit",
        mistake: 3,
        description: "append in autocommit mode: no BEGIN, each statement commits on its own",
        store: |inner| Box::new(store::Autocommit { inner }),
        caught_by: &[Invariant::I5],
        ..BASE
    },
    Mutant {
        name: "deliver_before_commit",
        mistake: 4,
        description: "commands delivered before the event's transaction commits",
        engine: &engine::DeliverBeforeCommit,
        caught_by: &[Invariant::I4],
        ..BASE
    },
    Mutant {
        name: "random_key_per_attempt",
        mistake: 5,
        description: "a new random idempotency key on every delivery attempt",
        engine: &engine::RandomKeyPerAttempt,
        caught_by: &[Invariant::I2],
        ..BASE
    },
    Mutant {
        name: "mark_done_before_confirm",
        mistake: 6,
        description: "outbox row marked done before the receiver confirmed",
        engine: &engine::MarkDoneBeforeConfirm,
        caught_by: &[Invariant::I1],
        ..BASE
    },
    Mutant {
        name: "body_hash_key",
        mistake: 7,
        description: "request-body hash used as the idempotency key",
        receiver: |inner| Box::new(receiver::BodyHashKey { inner }),
        caught_by: &[Invariant::I2, Invariant::I7],
        ..BASE
    },
    Mutant {
        name: "no_dedup",
        mistake: 8,
        description: "receiver without de-duplication",
        receiver: |inner| Box::new(receiver::NoDedup { inner }),
        caught_by: &[Invariant::I2],
        ..BASE
    },
    Mutant {
        name: "dedup_apart",
        mistake: 8,
        description: "receiver commits its de-duplication record apart from its effect",
        receiver: |inner| Box::new(receiver::DedupApart { inner }),
        caught_by: &[Invariant::I2],
        ..BASE
    },
    Mutant {
        name: "dedup_after_effect",
        mistake: 8,
        description: "receiver of call granularity commits its effect, then its de-duplication record, in two transactions of one call",
        // `dedup_apart`'s receiver driven as one `handle` call per request.
        receiver: |inner| Box::new(receiver::DedupApart { inner }),
        roles: Roles {
            store: Granularity::Step,
            receiver: Granularity::Call,
        },
        caught_by: &[Invariant::I2],
        ..BASE
    },
    Mutant {
        name: "lookup_outside_txn",
        mistake: 8,
        description: "receiver of call granularity looks the key up outside the transaction that applies and records it (INSERT OR IGNORE)",
        receiver: |inner| Box::new(receiver::LookupOutsideTxn { inner }),
        roles: Roles {
            store: Granularity::Step,
            receiver: Granularity::Call,
        },
        caught_by: &[Invariant::I2],
        ..BASE
    },
    Mutant {
        name: "replay_dispatches",
        mistake: 9,
        description: "replay dispatches the commands of the events it folds",
        engine: &engine::ReplayDispatches,
        caught_by: &[Invariant::I6],
        ..BASE
    },
    Mutant {
        name: "pragmas_once",
        mistake: 10,
        description: "per-connection PRAGMAs set only once, on the first connection",
        settings: Settings::FirstOpenOnly,
        caught_by: &[Invariant::I9],
        ..BASE
    },
    Mutant {
        name: "unfenced_mark_done",
        mistake: 11,
        description: "leases without fencing: mark_done by command_id alone, a late acknowledgement from an expired holder counts",
        store: |inner| Box::new(store::UnfencedMarkDone { inner }),
        caught_by: &[Invariant::I8],
        lives_in: LivesIn::Leases,
        ..BASE
    },
    Mutant {
        name: "early_dedup_purge",
        mistake: 12,
        description: "de-dup records purged before producers stop retrying: a late retry applies twice",
        receiver: |inner| Box::new(receiver::EarlyDedupPurge { inner }),
        caught_by: &[Invariant::I2],
        lives_in: LivesIn::Purges,
        ..BASE
    },
    Mutant {
        name: "sync_off",
        mistake: 13,
        description: "store commits acknowledged as durable while running synchronous=OFF",
        settings: Settings::StoreSyncOff,
        caught_by: &[Invariant::I9],
        ..BASE
    },
    Mutant {
        name: "key_case_fold",
        mistake: 14,
        description: "idempotency keys compared case-insensitively: the de-dup lookup ignores case",
        receiver: |inner| Box::new(receiver::KeyCaseFold { inner }),
        caught_by: &[Invariant::I7],
        ..BASE
    },
    Mutant {
        name: "key_trim",
        mistake: 14,
        description: "idempotency keys trimmed of whitespace before the de-dup lookup and record",
        receiver: |inner| Box::new(receiver::KeyTrim { inner }),
        caught_by: &[Invariant::I7],
        ..BASE
    },
    Mutant {
        name: "mark_done_like",
        mistake: 14,
        description: "command ids matched with LIKE in mark_done: acknowledging one row marks its case or wildcard twins done",
        store: |inner| Box::new(hazards::MarkDoneLike { inner }),
        caught_by: &[Invariant::I1],
        ..BASE
    },
    Mutant {
        name: "dedup_first",
        mistake: 8,
        description: "receiver commits its de-duplication record before its effect: a kill between them loses the effect",
        receiver: |inner| Box::new(hazards::DedupFirst { inner }),
        caught_by: &[Invariant::I1],
        ..BASE
    },
    Mutant {
        name: "pending_offset_drift",
        mistake: 15,
        description: "pending pages through the outbox with an OFFSET kept across calls: rows done meanwhile make it skip others",
        store: |inner| Box::new(reads::PendingOffsetDrift { inner, offset: 0 }),
        caught_by: &[Invariant::I1],
        ..BASE
    },
    Mutant {
        name: "load_by_timestamp",
        mistake: 15,
        description: "load orders a workflow's events by created_at (CURRENT_TIMESTAMP) instead of seq",
        store: |inner| Box::new(reads::LoadByTimestamp { inner }),
        caught_by: &[Invariant::I6],
        ..BASE
    },
    Mutant {
        name: "heads_done_unscoped",
        mistake: 15,
        description: "heads counts a workflow's done commands over all its events, not the head event's",
        store: |inner| Box::new(reads::HeadsDoneUnscoped { inner }),
        caught_by: &[Invariant::I6],
        ..BASE
    },
    Mutant {
        name: "claim_unleased_only",
        mistake: 15,
        description: "claim takes only rows nobody ever leased: a row whose holder died is never claimed again",
        store: |inner| Box::new(reads::ClaimUnleasedOnly { inner }),
        caught_by: &[Invariant::I1],
        lives_in: LivesIn::Leases,
        ..BASE
    },
    Mutant {
        name: "backup_db_file_only",
        mistake: 16,
        description: "the backup copies the main .db file alone, with no lock: commits still in -wal are left out",
        backup: backup::db_file_only,
        caught_by: &[Invariant::I11],
        lives_in: LivesIn::Backups,
        ..BASE
    },
    Mutant {
        name: "backup_file_set_unlocked",
        mistake: 16,
        description: "the backup copies -wal, then checkpoints and copies the .db file, with no read transaction across them: a torn file set",
        backup: backup::file_set_unlocked,
        caught_by: &[Invariant::I11],
        lives_in: LivesIn::Backups,
        ..BASE
    },
];

/// The mutant called `name`.
pub fn by_name(name: &str) -> Option<&'static Mutant> {
    MUTANTS.iter().find(|mutant| mutant.name == name)
}

/// Any implementation by name: the registered ones first, then the mutants.
pub fn resolve(name: &str) -> Option<&'static dyn Implementation> {
    registry::by_name(name).or_else(|| by_name(name).map(|mutant| mutant as &'static dyn Implementation))
}

/// Every name `resolve` accepts, for error messages.
pub fn names() -> Vec<&'static str> {
    let mut names = registry::names();
    names.extend(MUTANTS.iter().map(|mutant| mutant.name));
    names
}

impl Implementation for Mutant {
    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn system(&self, config: &SystemConfig) -> Result<Box<dyn System>> {
        let inner = ReferenceSystem::create(config)?;
        Ok(Box::new(MutantSystem {
            config: inner.config,
            store: self.store,
            receiver: self.receiver,
            settings: self.settings,
            backup: self.backup,
        }))
    }

    fn engine(&self) -> &'static dyn Engine {
        self.engine
    }

    fn roles(&self) -> Roles {
        self.roles
    }

    fn leases(&self) -> bool {
        true
    }

    fn retries(&self) -> bool {
        true
    }

    fn backups(&self) -> bool {
        true
    }
}

struct MutantSystem {
    config: SystemConfig,
    store: fn(ReferenceStore) -> Box<dyn Store>,
    receiver: fn(ReferenceReceiver) -> Box<dyn Receiver>,
    settings: Settings,
    backup: backup::Method,
}

impl MutantSystem {
    fn open(&self, path: &Path, settings: &SqliteSettings, store: bool) -> Result<Connection> {
        Ok(match self.settings {
            Settings::EveryOpen => connection::open(path, settings)?,
            // Mistake 13: "the log is fsynced elsewhere" / "OFF is faster".
            Settings::StoreSyncOff if store => connection::open(
                path,
                &SqliteSettings {
                    synchronous: crate::store::Synchronous::Off,
                    ..*settings
                },
            )?,
            Settings::StoreSyncOff => connection::open(path, settings)?,
            // Mistake 10: the set-up connection that created the schema got
            // every setting; the ones opened since get SQLite's defaults.
            // rusqlite installs a 5 s busy handler on open, which SQLite does
            // not; removing it models a plain sqlite3_open_v2 (and keeps the
            // simulation's one thread from sleeping on a lock).
            Settings::FirstOpenOnly => {
                // Plain, but through the run's VFS: the mistake is the
                // settings, not where the bytes go.
                let conn = match settings.vfs {
                    Some(vfs) => Connection::open_with_flags_and_vfs(path, rusqlite::OpenFlags::default(), vfs)?,
                    None => Connection::open(path)?,
                };
                conn.busy_timeout(std::time::Duration::ZERO)?;
                conn
            }
        })
    }
}

impl System for MutantSystem {
    fn open_store(&mut self, _who: &Who<'_>) -> Result<Box<dyn Store>> {
        let conn = self.open(&self.config.store_path, &self.config.store_sqlite, true)?;
        let store = ReferenceStore::from_connection(conn)?.with_clock(self.config.clock.clone());
        Ok((self.store)(store))
    }

    fn open_receiver(&mut self, _who: &Who<'_>) -> Result<Box<dyn Receiver>> {
        let conn = self.open(&self.config.receiver_path, &self.config.receiver_sqlite, false)?;
        let inner = ReferenceReceiver::from_connection(conn, self.config.hotel_failure).with_retention(&self.config);
        Ok((self.receiver)(inner))
    }

    fn dump(&mut self) -> Result<Snapshot> {
        ReferenceSystem::dump_files(&self.config)
    }

    fn offers_peek(&self) -> bool {
        true
    }

    fn peek(&mut self, store: &Path, receiver: &Path) -> Result<Option<Snapshot>> {
        Ok(Some(Snapshot::read_copy(store, receiver)?))
    }

    fn backup(&mut self, dest: &Path, part: u32) -> Result<crate::store::Backed> {
        (self.backup)(&self.config, dest, part)
    }

    fn dump_backup(&mut self, dest: &Path) -> Result<Snapshot> {
        crate::store::backup::dump_backup(&self.config, dest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_resolve() {
        let mut names: Vec<&str> = MUTANTS.iter().map(|mutant| mutant.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), MUTANTS.len());
        for mutant in &MUTANTS {
            assert_eq!(resolve(mutant.name).map(|i| i.name()), Some(mutant.name));
        }
        assert_eq!(resolve("reference").map(|i| i.name()), Some("reference"));
        assert!(resolve("nonsense").is_none());
        let mistakes: std::collections::BTreeSet<u8> = MUTANTS.iter().map(|mutant| mutant.mistake).collect();
        let covered: std::collections::BTreeSet<u8> = (1..=16).collect();
        assert_eq!(mistakes, covered, "mistakes 1-16 are covered");
        assert!(
            MUTANTS.iter().all(|mutant| !mutant.caught_by.is_empty()),
            "each names its invariant"
        );
    }
}
