//! `[restore]`: the store restored from one of its own backups (issue 40 §2).
//!
//! ```toml
//! [restore]
//! count = 1   # restores in the fault phase, each at a tick drawn from the seed
//! ```
//!
//! At its tick a restore stops every actor (as an operator stops the
//! service), replaces the store's database with the latest backup that
//! completed (`sqlite3 … ".restore"`: SQLite's backup API into the store's
//! file, through the run's VFS), and the actors start again from it.
//! Receivers keep their own databases. Commits acknowledged after the
//! backup are rolled back by the restore: counted, never a finding. What
//! must still hold: the commands writers derive again carry the same ids,
//! so receivers fold them into the effects they already applied (I2), and
//! every workflow completes (I10).

use serde::{Deserialize, Serialize};

use super::{Rejection, Scenario};
use crate::prng::Prng;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Restore {
    /// How many restores the fault phase makes.
    pub count: u32,
}

impl Restore {
    /// At most this many restores per seed.
    pub const MAX: u32 = 8;

    /// The ticks the seed's restores happen at: `count` distinct ticks after
    /// `first_backup` and before `ticks_fault`, ascending, from a stream of
    /// their own. A restore whose tick comes before any backup completed
    /// waits for one (`sim::simulator::restore`).
    pub fn ticks(&self, seed: u64, first_backup: u64, ticks_fault: u64) -> Vec<u64> {
        let mut prng = Prng::derive(seed, "restore/ticks");
        let span = ticks_fault.saturating_sub(first_backup + 1);
        let wanted = u64::from(self.count).min(span) as usize;
        let mut ticks = std::collections::BTreeSet::new();
        while ticks.len() < wanted {
            ticks.insert(first_backup + 1 + prng.below(span));
        }
        ticks.into_iter().collect()
    }
}

impl Scenario {
    /// `restore.count` within bounds, and backups to restore from.
    pub(super) fn validate_restore(&self) -> Result<(), Rejection> {
        let Some(restore) = self.restore else {
            return Ok(());
        };
        if restore.count == 0 || restore.count > Restore::MAX {
            return Err(Rejection::new(
                "restore.count",
                format!("must be between 1 and {}, got {}", Restore::MAX, restore.count),
            ));
        }
        if self.backup.is_none() {
            return Err(Rejection::new(
                "restore",
                "a restore needs backups to restore from: add a [backup] section, or leave [restore] out".to_string(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_fall_after_the_first_backup_and_inside_the_fault_phase() {
        let restore = Restore { count: 3 };
        let ticks = restore.ticks(7, 40, 100);
        assert_eq!(ticks.len(), 3);
        assert!(ticks.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(ticks.iter().all(|tick| (41..100).contains(tick)), "{ticks:?}");
        assert_eq!(ticks, restore.ticks(7, 40, 100), "same seed, same ticks");
        // No room after the first backup: no restore.
        assert!(restore.ticks(7, 99, 100).is_empty());
    }
}
