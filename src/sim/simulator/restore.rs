//! Restores (`[restore]`, issue 40 §2): at ticks drawn from the seed, in
//! the fault phase, the store is restored from its latest backup, as an
//! operator restores one: every actor stops (their processes killed, their
//! connections closed), the store's database is replaced with the backup's
//! content (`store::restore`, crashsim's act through SQLite, never the
//! store's), and the actors start again from it. Receivers keep their own
//! databases.
//!
//! The latest completed backup is restored; on settings that promise no
//! durability, the latest that completed since the last power cut (one a
//! later cut reached may have lost what it held; I11 judges the backups
//! themselves). The run does not settle while a restore is to come. A restore due before any such backup
//! waits for one; with none by the end of the fault phase it is skipped
//! and says so.
//!
//! What the restored store holds is recorded for the checkers (as recovery
//! is after a cut), with how many of the events the store held just before
//! it rolled back (read from the store's dumps on both sides).

use std::collections::BTreeSet;

use super::ending::Fatal;
use super::state::{Event, Life, Phase};
use super::{Simulator, backup};
use crate::actors::ActorId;
use crate::sim::power::Recovery;
use crate::store::restore::Unrestorable;
use crate::trace::Op;

impl Simulator<'_> {
    /// Queues the seed's restores (none without `[restore]`), each after
    /// the seed's first backup.
    pub(super) fn schedule_restores(&mut self) {
        let (Some(restore), Some(backup)) = (self.scenario.restore, self.scenario.backup) else {
            return;
        };
        let ticks_fault = self.scenario.run.ticks_fault;
        let first = backup
            .ticks(self.seed, ticks_fault)
            .first()
            .copied()
            .unwrap_or(ticks_fault);
        let mut ticks = restore.ticks(self.seed, first, ticks_fault);
        // No room left after the first backup: the rest come when the
        // faults stop, and are skipped, saying so.
        ticks.resize(restore.count as usize, ticks_fault);
        for (index, tick) in ticks.into_iter().enumerate() {
            let n = u32::try_from(index + 1).unwrap_or(u32::MAX);
            self.queue.push(tick, Event::Restore { n });
            self.restores_pending += 1;
        }
    }

    /// The `n`-th restore, now, or later if no backup can be restored yet.
    pub(super) fn restore(&mut self, n: u32) {
        if self.phase != Phase::Faults {
            self.restores_pending -= 1;
            self.record(ActorId::SIM, Op::RestoreSkipped { n });
            return;
        }
        // On settings that promise durability a completed backup is synced;
        // on weaker ones, a cut since it completed may have torn it.
        let durable = crate::check::Durable::of(self.scenario).store;
        let cuts = self.recoveries.len();
        let Some(&(from, _)) = self
            .backups_taken
            .iter()
            .rev()
            .find(|(_, before)| durable || *before == cuts)
        else {
            let delay = self.scenario.timing.poll_ticks.max(1);
            self.queue.push(self.now + delay, Event::Restore { n });
            return;
        };
        self.restores_pending -= 1;
        self.record(ActorId::SIM, Op::Restore { n, backup: from });
        // No cut lands from here until the actors start again: the restore
        // is the operator's, and its reads and writes are not the store's
        // (closing the last connection checkpoints, a persistence point).
        if let Some(power) = &self.power {
            power.hold();
        }
        // The operator stops the service: every process, every connection.
        self.observer = None;
        for slot in 0..self.slots.len() {
            if !matches!(self.slots[slot].life, Life::Down) {
                self.kill(slot, "restore");
            }
        }
        // What the store held just before: what the restore rolls back is
        // counted against it (unknown if a cut left it unreadable).
        let before = match self.system.as_deref_mut().map(|system| system.dump()) {
            Some(Ok(snapshot)) => Some(snapshot),
            Some(Err(error)) if !error.is_corruption() => {
                self.fatal = Some(Fatal::of(&format!("reading the store before restore #{n}"), &error));
                return;
            }
            Some(Err(_)) | None => None,
        };
        self.system = None;
        let source = backup::path(&self.store_path, from);
        let restored = match crate::store::restore::restore(&self.config, &source) {
            Ok(()) => true,
            Err(Unrestorable::Backup(error)) => {
                let error = error.to_string();
                self.record(ActorId::SIM, Op::RestoreFailed { n, backup: from, error });
                false
            }
            Err(Unrestorable::Environment(error)) => {
                self.fatal = Some(Fatal::of(&format!("restore #{n} from backup #{from}"), &error));
                return;
            }
        };
        let snapshot = match self.start_again() {
            Ok(snapshot) => snapshot,
            Err(error) => {
                self.fatal = Some(Fatal::of(&format!("starting again after restore #{n}"), &error));
                return;
            }
        };
        if let Some(power) = self.power.as_mut() {
            power.resume();
        }
        if !restored {
            // The store is as it was: no reset for the checkers.
            if let Some(system) = self.system.as_deref_mut() {
                self.observer = system.open_observer().ok();
            }
            return;
        }
        let held: BTreeSet<(&str, u64, &str)> = snapshot
            .events
            .iter()
            .map(|event| (event.workflow_id.as_str(), event.seq, event.kind.as_str()))
            .collect();
        let rolled_back = before.map(|before| {
            let gone = before
                .events
                .iter()
                .filter(|event| !held.contains(&(event.workflow_id.as_str(), event.seq, event.kind.as_str())))
                .count();
            u64::try_from(gone).unwrap_or(u64::MAX)
        });
        self.record(ActorId::SIM, Op::RolledBack { n, events: rolled_back });
        self.record_recovered(&snapshot);
        self.restores.push(Recovery {
            tick: self.now,
            point: 0,
            snapshot,
        });
        if let Some(system) = self.system.as_deref_mut() {
            self.observer = system.open_observer().ok();
        }
    }
}
