//! I2's one exception: a command applied again after the scenario's de-dup
//! retention let its record go (docs/protocol.md, "Retention").
//!
//! A receiver with a retention (`[receivers] dedup_retention_ticks`) purges
//! a de-dup record once it is that old; a delivery of the command after
//! that finds no record and applies it again. The loader accepts only a
//! retention at or above the retry horizon (`scenario::horizon`), which
//! bounds re-deliveries under the waits the protocol counts: per failed
//! attempt its timer, one lost reply and a restart. Re-sends themselves
//! have no bound: a worker re-sends for as long as its replies are lost,
//! with or without `[retries]`. So a correct receiver can still apply a
//! command twice, later than the horizon. That follows from the retention
//! the scenario chose, not from a mistake of the store, and I2 does not
//! blame the second application when both hold:
//!
//! - the scenario's retention is at or above its horizon (a demonstration
//!   may set it shorter, and is then blamed: that is what it shows);
//! - between the two applications a purge ran (`Op::DedupPurged`) whose
//!   cut-off (`before`: its tick less the retention) let it delete the
//!   earlier application's record: applied before the cut-off, give or
//!   take `2·S`, where `S` is the largest clock offset the trace records
//!   (receivers stamp and purge by their own clocks).
//!
//! A receiver that deletes a record sooner (mistake 12, the
//! `early_dedup_purge` mutant) is still blamed: no purge the retention
//! permits explains its second application.

use crate::trace::{Op, TraceEvent};

/// The scenario's de-dup retention and the retry horizon the loader
/// derived for it (`scenario::horizon`), both in ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    pub ticks: u64,
    pub horizon: u64,
}

impl Retention {
    /// The scenario's de-dup retention, if its receivers purge.
    pub fn of(scenario: &crate::scenario::Scenario) -> Option<Retention> {
        let ticks = scenario.receivers?.dedup_retention_ticks?;
        Some(Retention {
            ticks,
            horizon: crate::scenario::horizon(scenario).ticks,
        })
    }

    /// At or above the horizon: purges it permits excuse an application
    /// again (below it, a demonstration's, they do not).
    pub fn accepted(self) -> bool {
        self.ticks >= self.horizon
    }
}

/// The purges the scenario's retention permits, read from the trace.
#[derive(Debug, Default)]
pub struct Purges {
    /// Each purge's (tick, cut-off).
    cuts: Vec<(u64, u64)>,
    /// How far apart two actors' clocks may read: `2·S`.
    slack: u64,
}

impl Purges {
    /// None unless the retention is one the protocol's rule accepts.
    pub fn of(events: &[TraceEvent], retention: Option<Retention>) -> Purges {
        if !retention.is_some_and(Retention::accepted) {
            return Purges::default();
        }
        let mut bound = 0u64;
        let mut cuts = Vec::new();
        for event in events {
            match event.op {
                Op::Skew { offset } | Op::ClockStep { offset, .. } => bound = bound.max(offset.unsigned_abs()),
                Op::DedupPurged { before, .. } => cuts.push((event.tick, before)),
                _ => {}
            }
        }
        Purges {
            cuts,
            slack: bound.saturating_mul(2),
        }
    }

    /// Whether a record applied at tick `first` may have been purged, as
    /// the retention permits, before the same command applied at `again`.
    pub fn excuse(&self, first: u64, again: u64) -> bool {
        self.cuts
            .iter()
            .any(|&(tick, before)| first < tick && tick <= again && first < before.saturating_add(self.slack))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::Invariant::{self, I2};
    use super::super::fixtures::{Fixture, clean};
    use super::Retention;
    use crate::actors::{ActorId, Role};
    use crate::trace::Op;

    const ACCEPTED: Retention = Retention {
        ticks: 500,
        horizon: 500,
    };

    /// The clean run, then `purges` (as (tick, cut-off)) and a second
    /// application of its second command at `again`, ticks counted from
    /// the end of the trace. Cut-offs count from the first application.
    fn applied_again(retention: Option<Retention>, purges: &[(u64, u64)], again: u64) -> Fixture {
        let mut fixture = clean();
        fixture.retention = retention;
        let mut effect = fixture.snapshot.effects[1].clone();
        let first = fixture
            .events
            .iter()
            .find_map(|event| match &event.op {
                Op::Apply { effect_id, .. } if *effect_id == effect.effect_id => Some(event.tick),
                _ => None,
            })
            .unwrap();
        let base = fixture.events.last().unwrap().tick;
        let receiver = ActorId::new(Role::Receiver, 0);
        let mut events: Vec<(u64, Op)> = purges
            .iter()
            .map(|&(tick, before)| {
                let op = Op::DedupPurged {
                    before: before + first,
                    removed: 1,
                };
                (tick, op)
            })
            .collect();
        effect.effect_id = 100;
        events.push((
            again,
            Op::Apply {
                key: effect.key.clone(),
                effect_id: 100,
                result: effect.result.clone(),
            },
        ));
        events.sort_by_key(|(tick, _)| *tick);
        for (tick, op) in events {
            fixture.events.push(crate::trace::TraceEvent {
                tick: base + tick,
                actor: receiver,
                op,
            });
        }
        fixture.snapshot.effects.push(effect);
        fixture
    }

    fn invariants(fixture: &Fixture) -> BTreeSet<Invariant> {
        fixture.invariants()
    }

    #[test]
    fn an_application_after_a_purge_the_retention_permitted_is_not_blamed() {
        // The record was applied before the purge's cut-off (+1), so a
        // correct receiver deleted it; the late delivery applied it again.
        let fixture = applied_again(Some(ACCEPTED), &[(10, 1)], 20);
        assert_eq!(invariants(&fixture), BTreeSet::new(), "{:#?}", fixture.violations());
    }

    #[test]
    fn a_purge_of_a_record_younger_than_the_retention_is_blamed() {
        // The cut-off is at the first application: its record was not old
        // enough to go (mistake 12).
        let fixture = applied_again(Some(ACCEPTED), &[(10, 0)], 20);
        assert_eq!(invariants(&fixture), BTreeSet::from([I2]));
    }

    #[test]
    fn a_purge_after_the_second_application_explains_nothing() {
        let fixture = applied_again(Some(ACCEPTED), &[(30, 1)], 20);
        assert_eq!(invariants(&fixture), BTreeSet::from([I2]));
        let none = applied_again(Some(ACCEPTED), &[], 20);
        assert_eq!(invariants(&none), BTreeSet::from([I2]));
    }

    #[test]
    fn a_retention_below_the_horizon_is_blamed_as_a_demonstration_shows() {
        let short = Retention {
            ticks: 60,
            horizon: 4_248,
        };
        let fixture = applied_again(Some(short), &[(10, 1)], 20);
        assert_eq!(invariants(&fixture), BTreeSet::from([I2]));
        let without = applied_again(None, &[(10, 1)], 20);
        assert_eq!(invariants(&without), BTreeSet::from([I2]));
    }

    /// A probe reusing a key whose record a permitted purge deleted finds
    /// no record: applying it as a new operation is right (no I7), as it is
    /// wrong while the record lives.
    #[test]
    fn a_probe_reusing_a_purged_key_may_be_applied() {
        let probed = |purges: &[(u64, u64)]| {
            let mut fixture = applied_again(Some(ACCEPTED), purges, 20);
            let rogue = fixture.snapshot.effects.last_mut().unwrap();
            rogue.payload = r#"{"probe":"1","trip_id":"trip-000"}"#.into();
            let key = rogue.key.clone();
            fixture.probe_reply(&key, crate::store::Outcome::Applied { result: "{}".into() });
            fixture
        };
        let purged = probed(&[(10, 1)]);
        assert_eq!(invariants(&purged), BTreeSet::new(), "{:#?}", purged.violations());
        let held = probed(&[]);
        assert_eq!(
            invariants(&held),
            BTreeSet::from([Invariant::I7]),
            "{:#?}",
            held.violations()
        );
    }

    #[test]
    fn clock_offsets_widen_the_cut_off_by_twice_the_largest() {
        // The cut-off is 3 ticks before the first application; a receiver
        // whose clock ran 2 behind stamped it 2 earlier, and the purger's
        // clock may run 2 ahead: deleting it was allowed.
        let mut fixture = applied_again(Some(ACCEPTED), &[(10, 0)], 20);
        for event in &mut fixture.events {
            if let Op::DedupPurged { before, .. } = &mut event.op {
                *before -= 3;
            }
        }
        let receiver = ActorId::new(Role::Receiver, 0);
        fixture.events.insert(
            0,
            crate::trace::TraceEvent {
                tick: 0,
                actor: receiver,
                op: Op::Skew { offset: -2 },
            },
        );
        assert_eq!(invariants(&fixture), BTreeSet::new(), "{:#?}", fixture.violations());
    }
}
