//! Online backups (`[backup]`, issue 40): at ticks drawn from the seed, in
//! the fault phase, the store takes a backup on a connection of its own
//! (`System::backup`), between two actor steps, while the actors' own
//! transactions may be open. A power cut may fall inside it (the backup's
//! writes are persistence points like any other, and `backup.power_cut`
//! draws one at its start); then it never completed. An outside store's
//! backup process may be killed inside it (`backup.kill`), as an actor's
//! process is inside a call.
//! After the run, every backup that completed is read back
//! (`System::dump_backup`) for the checkers (I11, `check::backups`).

use std::path::PathBuf;

use super::ending::Fatal;
use super::state::{Event, Phase};
use super::{SimError, Simulator};
use crate::actors::ActorId;
use crate::prng::Prng;
use crate::store::{Backed, Snapshot, StoreError, System};
use crate::trace::Op;

/// A backup that completed, as read back after the run.
#[derive(Clone, Debug)]
pub struct BackupFile {
    /// Its number in the seed (`Op::Backup`), from 1.
    pub n: u32,
    pub snapshot: Snapshot,
}

/// The file the `n`-th backup of a run writes: beside the store's, named
/// for its number (the trace names the number only, never the path).
pub(super) fn path(store_path: &std::path::Path, n: u32) -> PathBuf {
    let mut name = store_path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".backup-{n}"));
    store_path.with_file_name(name)
}

impl Simulator<'_> {
    /// Queues the seed's backups (none without `[backup]`).
    pub(super) fn schedule_backups(&mut self) {
        let Some(backup) = self.scenario.backup else {
            return;
        };
        for (index, tick) in backup
            .ticks(self.seed, self.scenario.run.ticks_fault)
            .into_iter()
            .enumerate()
        {
            let n = u32::try_from(index + 1).unwrap_or(u32::MAX);
            self.queue.push(tick, Event::Backup { n, part: 0, attempt: 0 });
        }
    }

    /// The `n`-th backup's `part`-th part (from 0), now. A lock it cannot
    /// pass sends it back to the queue (at most a few times: an operator's
    /// backup job retries too). A store that copies in parts
    /// (`Backed::More`) gets its next part after the actors moved;
    /// a power cut or a restore in between ends it, as it ends the
    /// operator's script.
    pub(super) fn backup(&mut self, n: u32, part: u32, attempt: u32) {
        if self.phase != Phase::Faults {
            return;
        }
        if self.system.is_none() {
            return;
        }
        let dest = path(&self.store_path, n);
        if part > 0 && self.backups_in_parts.get(&n) != Some(&(self.recoveries.len(), self.restores.len())) {
            let restored = self
                .backups_in_parts
                .remove(&n)
                .is_some_and(|(_, restores)| restores != self.restores.len());
            self.record(ActorId::SIM, Op::BackupAbandoned { n, restored });
            return;
        }
        let inside = self.inside_calls();
        let mut armed = false;
        if part == 0 && attempt == 0 {
            self.record(ActorId::SIM, Op::Backup { n });
            let backup = self.scenario.backup.unwrap_or_default();
            if let Some(power) = &mut self.power {
                power.draw(backup.power_cut);
            }
            // A stream of each backup's own, so that a forced replay of the
            // seed kills it at the same persistence point.
            let mut prng = Prng::derive(self.seed, &format!("backup/kill/{n}"));
            if let Some(inside) = &inside
                && prng.chance(backup.kill)
            {
                inside.control.arm_kill(1 + prng.below(KILL_WINDOW));
                armed = true;
            }
        }
        let taken = match self.system.as_deref_mut() {
            Some(system) => system.backup(&dest, part),
            None => return,
        };
        let killed = armed && inside.is_some_and(|inside| inside.control.disarm_kill());
        if self.cutting() {
            // The power went out inside it: it never completed. The step
            // loop cuts the power next.
            return;
        }
        if killed {
            self.record(ActorId::SIM, Op::BackupKilled { n });
            return;
        }
        match taken {
            Ok(Backed::More) => {
                self.record(ActorId::SIM, Op::BackupPart { n, part: part + 1 });
                self.backups_in_parts
                    .insert(n, (self.recoveries.len(), self.restores.len()));
                let gap = 1 + Prng::derive(self.seed, &format!("backup/parts/{n}/{part}")).below(PART_GAP_TICKS);
                let next = Event::Backup {
                    n,
                    part: part + 1,
                    attempt: 0,
                };
                self.queue.push(self.now + gap, next);
            }
            Ok(Backed::Complete) => {
                self.backups_in_parts.remove(&n);
                self.record(ActorId::SIM, Op::BackedUp { n });
                self.backups_taken.push((n, self.recoveries.len()));
            }
            Err(StoreError::Busy) if attempt < BUSY_RETRIES => {
                let delay = self.scenario.timing.busy_backoff_ticks_max.max(1);
                self.queue.push(
                    self.now + delay,
                    Event::Backup {
                        n,
                        part,
                        attempt: attempt + 1,
                    },
                );
            }
            Err(error @ (StoreError::Broken(_) | StoreError::Unsupported(_))) => {
                self.fatal = Some(Fatal::Broken(format!("backup #{n}: {error}")));
            }
            // Its process died unasked: A1, as an actor's would.
            Err(StoreError::Died(cause)) => {
                let step = format!("backup #{n}");
                self.record(ActorId::SIM, Op::Died { step, cause });
            }
            Err(error) => match error.environment() {
                Some(cause) => self.fatal = Some(Fatal::Environment(format!("backup #{n}: {cause}"))),
                None => {
                    // The trace names no path: the run's directory is no part of a seed.
                    let run_dir = self.store_path.parent().map(|dir| dir.display().to_string());
                    let error = match run_dir {
                        Some(dir) if !dir.is_empty() => error.to_string().replace(&dir, "…"),
                        _ => error.to_string(),
                    };
                    self.record(ActorId::SIM, Op::BackupFailed { n, error });
                }
            },
        }
    }
}

/// After the run, with every connection closed: each completed backup (`taken`)
/// as its file holds it now, after any later cut.
pub(super) fn read(
    taken: &[u32],
    store_path: &std::path::Path,
    system: &mut dyn System,
) -> Result<Vec<BackupFile>, SimError> {
    taken
        .iter()
        .map(|&n| {
            let snapshot = system.dump_backup(&path(store_path, n)).map_err(SimError::Dump)?;
            Ok(BackupFile { n, snapshot })
        })
        .collect()
}

/// How often a backup that met a lock is tried again before it is given
/// up (`Op::BackupFailed`).
const BUSY_RETRIES: u32 = 8;

/// A killed backup dies at one of its first this many persistence points.
const KILL_WINDOW: u64 = 8;

/// A backup copied in parts copies its next part within this many ticks:
/// long enough for writers to commit, and a store to checkpoint, between.
const PART_GAP_TICKS: u64 = 200;
