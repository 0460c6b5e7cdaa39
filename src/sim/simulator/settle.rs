//! When a run has settled: decided from the files, never from the store's word.
//!
//! A run settles when nothing is in flight, every live actor is idle, every
//! workflow is terminal (or, with retry timers, waits on a dead-lettered
//! command: manual handling), every outbox row is done or dead-lettered and
//! no timer waits. The cheap tests go first: in-memory ones, then the
//! store's own reads through the run's observer connection (`pending`,
//! `heads`, `timers`), as the actors read it. Those may only say "not
//! yet": a store whose `pending` hides rows would otherwise end the run
//! early, its outbox "drained", and the verdict would be a vague "never
//! marked done" instead of the answer that hid them (`check::answers`).
//! So when the store's reads say "settled", the canonical dump (what the
//! checkers read) decides.
//!
//! A store that keeps saying "settled" while its files disagree would cost
//! a dump at every check: after each disagreement the next confirming dump
//! waits twice as long (the store's reads still run at every check).

use std::collections::BTreeSet;

use super::ending::Fatal;
use super::{Event, Life, Simulator};
use crate::actors::ActorId;
use crate::model::Head;
use crate::store::{Snapshot, StoreError};
use crate::trace::Op;
use crate::workflow::trip::{HOTEL_BOOKED, HOTEL_FAILED};

fn terminal(kind: &str) -> bool {
    kind == HOTEL_BOOKED || kind == HOTEL_FAILED
}

/// When the next confirming dump may run.
#[derive(Default)]
pub(super) struct Confirm {
    /// No dump before this tick.
    not_before: u64,
    /// Ticks to wait after the next disagreement (0: one settle interval).
    backoff: u64,
}

impl Simulator<'_> {
    pub(super) fn settle_check(&mut self) {
        self.judge_so_far();
        if self.is_settled() {
            self.settled = true;
            self.record(ActorId::SIM, Op::Settled);
        } else if !self.stalled() {
            self.queue
                .push(self.now + self.scenario.run.settle_check_ticks, Event::SettleCheck);
        }
    }

    fn is_settled(&mut self) -> bool {
        // A restore still to come rolls finished work back: not settled yet.
        if self.in_flight > 0 || self.restores_pending > 0 {
            return false;
        }
        let busy = self.slots.iter().any(|slot| slot.parked)
            || self.slots.iter().any(|slot| match &slot.life {
                Life::Up(actor) => !actor.is_idle(),
                Life::Booting | Life::Down => false,
            });
        if busy {
            return false;
        }
        match self.store_says_settled() {
            Ok(true) => {}
            Ok(false) => return false,
            Err(error) => {
                // A failed read (a broken file, a store that is down) is not
                // settled; a failure of the machine ends the run without a verdict.
                if error.environment().is_some() {
                    self.fatal = Some(Fatal::of("checking whether the run settled", &error));
                }
                return false;
            }
        }
        if self.now < self.confirm.not_before {
            return false;
        }
        let Some(system) = self.system.as_deref_mut() else {
            return false;
        };
        let settled = match system.dump() {
            Ok(snapshot) => settled_in(&snapshot, self.world.trips.len(), self.scenario.retries.is_some()),
            Err(error) => {
                if error.environment().is_some() {
                    self.fatal = Some(Fatal::of("dumping the files to see whether the run settled", &error));
                }
                false
            }
        };
        if !settled {
            let interval = self.scenario.run.settle_check_ticks;
            self.confirm.backoff = (self.confirm.backoff * 2).max(interval);
            self.confirm.not_before = self.now + self.confirm.backoff;
        }
        settled
    }

    /// The store's own reads: the outbox drained of due rows and every
    /// workflow done, as its observer connection sees them.
    fn store_says_settled(&mut self) -> Result<bool, StoreError> {
        let Some(observer) = self.observer.as_deref_mut() else {
            return Ok(false);
        };
        if !observer.pending(1)?.is_empty() {
            return Ok(false);
        }
        let heads: Vec<Head> = observer.heads()?;
        if self.scenario.retries.is_none() {
            return Ok(heads.iter().filter(|head| terminal(&head.kind)).count() == self.world.trips.len());
        }
        let timers = observer.timers()?;
        if timers.iter().any(|timer| timer.waiting()) {
            return Ok(false);
        }
        let manual: BTreeSet<&str> = timers
            .iter()
            .filter(|timer| timer.dead_lettered_at.is_some())
            .map(|timer| timer.workflow_id.as_str())
            .collect();
        let settled = heads
            .iter()
            .filter(|head| terminal(&head.kind) || manual.contains(head.workflow_id.as_str()))
            .count();
        Ok(settled == self.world.trips.len())
    }
}

/// Whether the files show a settled run of `trips` workflows (module docs).
pub(super) fn settled_in(snapshot: &Snapshot, trips: usize, retries: bool) -> bool {
    if snapshot.unreadable.is_some() || snapshot.timers.iter().any(|timer| timer.waiting()) {
        return false;
    }
    let dead = snapshot.dead_lettered();
    if !snapshot
        .outbox
        .iter()
        .all(|row| row.done || dead.contains_key(row.command_id.as_str()))
    {
        return false;
    }
    let manual: BTreeSet<&str> = dead.values().map(|timer| timer.workflow_id.as_str()).collect();
    let settled = snapshot
        .events_by_workflow()
        .iter()
        .filter(|(workflow_id, events)| {
            events.last().is_some_and(|event| terminal(&event.kind)) || (retries && manual.contains(*workflow_id))
        })
        .count();
    settled == trips
}
