//! Coverage of suspensions inside the store's own calls (`[preempt]`):
//! per kind of scheduling point, whether the scenario names it, how often
//! an actor's step in the fault phase reached it (where a suspension could
//! land), and how many calls were suspended there. A declared point that
//! was reached there and never suspended, or a run in which nothing was
//! suspended at all, is a gap (`--require-fired` fails on it).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::faults::KillCounters;
use crate::scenario::{PreemptPoint, Scenario};

/// One kind of scheduling point inside the store's SQLite across a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuspensionCoverage {
    /// The scenario's `[preempt] points` names it.
    pub declared: bool,
    /// Reached inside an actor's step in the fault phase, where a
    /// suspension could land.
    pub armed: u64,
    /// Calls suspended there.
    pub suspended: u64,
}

/// The suspensions of a run of `scenario` whose counters add up to
/// `kills`; empty when the scenario suspends nothing.
pub fn of(scenario: &Scenario, kills: &KillCounters) -> BTreeMap<String, SuspensionCoverage> {
    let Some(preempt) = scenario.preempt.as_ref().filter(|preempt| !preempt.rate.is_zero()) else {
        return BTreeMap::new();
    };
    PreemptPoint::ALL
        .into_iter()
        .map(|kind| {
            let count = kills.suspended.get(kind.name()).copied().unwrap_or_default();
            let entry = SuspensionCoverage {
                declared: preempt.points.contains(&kind),
                armed: count.armed,
                suspended: count.fired,
            };
            (kind.name().to_string(), entry)
        })
        .collect()
}

/// Adds a partition's suspensions to the whole run's.
pub fn merge(total: &mut BTreeMap<String, SuspensionCoverage>, part: &BTreeMap<String, SuspensionCoverage>) {
    for (name, kind) in part {
        let entry = total.entry(name.clone()).or_default();
        entry.declared |= kind.declared;
        entry.armed += kind.armed;
        entry.suspended += kind.suspended;
    }
}

/// Declared points reached inside actors' steps with no call ever
/// suspended there; or, if nothing was suspended anywhere, that. A
/// declared point never reached is no gap by itself: which points a
/// transaction passes depends on the store's journal mode.
pub fn gaps(suspensions: &BTreeMap<String, SuspensionCoverage>, seeds: &str) -> Vec<String> {
    let declared: Vec<(&String, &SuspensionCoverage)> = suspensions.iter().filter(|(_, kind)| kind.declared).collect();
    if declared.is_empty() {
        return Vec::new();
    }
    if declared.iter().all(|(_, kind)| kind.suspended == 0 && kind.armed == 0) {
        let names: Vec<&str> = declared.iter().map(|(name, _)| name.as_str()).collect();
        return vec![format!(
            "no call was suspended inside the store's SQLite in {seeds}: no actor's step in the fault \
             phase reached a declared point ({}); in WAL mode a transaction passes shm_lock, in a \
             rollback journal lock and unlock, and sync needs synchronous above OFF",
            names.join(", ")
        )];
    }
    declared
        .into_iter()
        .filter(|(_, kind)| kind.suspended == 0 && kind.armed > 0)
        .map(|(name, kind)| {
            format!(
                "suspension point {name} is declared but no call was suspended there in {seeds} \
                 (reached {} times inside actors' steps in the fault phase)",
                kind.armed
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::SuspensionCount;

    fn interleave() -> Scenario {
        crate::scenario::builtin::find(std::path::Path::new("interleave"))
            .expect("built in")
            .load()
            .expect("loads")
            .scenario
    }

    fn counted(counts: &[(&str, u64, u64)]) -> KillCounters {
        let mut kills = KillCounters::default();
        for (kind, armed, fired) in counts {
            let count = SuspensionCount {
                reached: armed + 3,
                armed: *armed,
                fired: *fired,
            };
            kills.suspended.insert(kind.to_string(), count);
        }
        kills
    }

    #[test]
    fn a_declared_point_reached_in_steps_and_never_suspended_is_a_gap() {
        let scenario = interleave();
        // WAL: lock and unlock only at open and close, never in a step.
        let wal = of(
            &scenario,
            &counted(&[("shm_lock", 900, 140), ("sync", 60, 0), ("busy", 4, 4)]),
        );
        assert!(wal["shm_lock"].declared && !wal["busy"].declared);
        let found = gaps(&wal, "3 seeds");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].starts_with("suspension point sync is declared but no call was suspended there in 3 seeds")
                && found[0].contains("reached 60 times"),
            "{}",
            found[0]
        );
        let fired = of(&scenario, &counted(&[("shm_lock", 900, 140), ("sync", 60, 9)]));
        assert!(gaps(&fired, "3 seeds").is_empty());
    }

    #[test]
    fn a_run_that_suspended_nothing_says_so_and_names_the_points() {
        let scenario = interleave();
        let found = gaps(&of(&scenario, &KillCounters::default()), "1 seed");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].starts_with("no call was suspended inside the store's SQLite in 1 seed"));
        assert!(found[0].contains("lock, shm_lock, sync, unlock"), "{}", found[0]);
    }

    #[test]
    fn partitions_add_up_and_a_scenario_without_preempt_has_none() {
        let scenario = interleave();
        let mut total = of(&scenario, &counted(&[("sync", 60, 0)]));
        merge(&mut total, &of(&scenario, &counted(&[("sync", 40, 2)])));
        assert_eq!((total["sync"].armed, total["sync"].suspended), (100, 2));
        let smoke = crate::scenario::builtin::find(std::path::Path::new("smoke"))
            .expect("built in")
            .load()
            .expect("loads")
            .scenario;
        assert!(of(&smoke, &counted(&[("sync", 60, 0)])).is_empty());
    }
}
