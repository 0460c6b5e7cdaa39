//! `[backup]`: online backups taken while the store works (issue 40).
//!
//! ```toml
//! [backup]
//! count = 3           # backups in the fault phase, each at a tick drawn from the seed
//! power_cut = "1/4"   # with [power] loss: the chance the power goes out inside one
//! kill = "1/4"        # an outside store's backup process killed inside one
//! ```
//!
//! Each backup is taken on a connection of its own (`System::backup`),
//! between two actor steps, while writers, workers and receivers have
//! transactions open; a power cut may fall inside it. Every backup that
//! completed is judged after the run (I11, `check::backups`).

use serde::{Deserialize, Serialize};

use super::{Rejection, Scenario};
use crate::prng::Prng;
use crate::ratio::Ratio;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backup {
    /// How many backups the fault phase takes.
    pub count: u32,
    /// With power loss on: the chance, per backup, that the power goes out
    /// at one of the next persistence points from its start (most of them
    /// the backup's own writes). Default "0/1".
    #[serde(default, skip_serializing_if = "no_cut")]
    pub power_cut: Ratio,
    /// For a store in processes of its own whose SQLite loads crashsim's
    /// VFS extension: the chance, per backup, that its process is killed
    /// (`SIGKILL`, from inside the VFS) at one of the first persistence
    /// points of the backup. In-process stores have no process to kill.
    /// Default "0/1".
    #[serde(default, skip_serializing_if = "no_cut")]
    pub kill: Ratio,
}

fn no_cut(ratio: &Ratio) -> bool {
    ratio.is_zero()
}

impl Backup {
    /// At most this many backups per seed (each is read and judged).
    pub const MAX: u32 = 64;

    /// The ticks the seed's backups begin at: `count` distinct ticks in
    /// `1..ticks_fault`, ascending, from a stream of their own (so turning
    /// backups on changes no other draw of the seed).
    pub fn ticks(&self, seed: u64, ticks_fault: u64) -> Vec<u64> {
        let mut prng = Prng::derive(seed, "backup/ticks");
        let span = ticks_fault.saturating_sub(1);
        let wanted = u64::from(self.count).min(span) as usize;
        let mut ticks = std::collections::BTreeSet::new();
        while ticks.len() < wanted {
            ticks.insert(1 + prng.below(span));
        }
        ticks.into_iter().collect()
    }
}

impl Scenario {
    /// `backup.count` within bounds, and a store that can take backups.
    pub(super) fn validate_backup(&self) -> Result<(), Rejection> {
        let Some(backup) = self.backup else {
            return Ok(());
        };
        if backup.count == 0 || backup.count > Backup::MAX {
            return Err(Rejection::new(
                "backup.count",
                format!("must be between 1 and {}, got {}", Backup::MAX, backup.count),
            ));
        }
        if !backup.power_cut.is_zero() && !self.power_enabled() {
            return Err(Rejection::new(
                "backup.power_cut",
                "a power cut inside a backup needs power loss: set [power] loss, or leave backup.power_cut out"
                    .to_string(),
            ));
        }
        if self.preempt.is_some() {
            return Err(Rejection::new(
                "backup",
                "[backup] and [preempt] cannot be combined yet: a backup is taken between actor \
                 steps and cannot be suspended; leave one of them out"
                    .to_string(),
            ));
        }
        if let Some(implementation) = crate::mutants::resolve(&self.store)
            && !implementation.backups()
        {
            return Err(Rejection::new(
                "backup",
                format!(
                    "{} cannot take an online backup: leave [backup] out, or use a store that can",
                    self.store
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_distinct_ascending_and_inside_the_fault_phase() {
        let backups = |count| Backup {
            count,
            ..Backup::default()
        };
        let ticks = backups(5).ticks(7, 100);
        assert_eq!(ticks.len(), 5);
        assert!(ticks.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(ticks.iter().all(|tick| (1..100).contains(tick)));
        assert_eq!(ticks, backups(5).ticks(7, 100), "same seed, same ticks");
        assert_ne!(ticks, backups(5).ticks(8, 100));
        // More backups than ticks: one per tick.
        assert_eq!(backups(9).ticks(0, 4), vec![1, 2, 3]);
    }
}
