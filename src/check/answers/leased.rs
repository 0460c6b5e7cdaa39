//! The leases a trace shows, updated event by event, for judging `claim`
//! answers (`claims.rs`): each row's latest claim, the claims whose rows no
//! one learned, and each actor's clock offset.

use std::collections::BTreeMap;

use crate::actors::{ActorId, Role};
use crate::trace::{Claimed, Op, TraceEvent};

/// The leases the trace shows, updated event by event.
#[derive(Clone, Default)]
pub struct Leases {
    /// Each row's latest claim seen: its expiry and holder.
    pub(super) latest: BTreeMap<String, Held>,
    /// Claims whose rows no one learned: (tick, the largest clock the
    /// claimer could have asked with).
    pub(super) unseen: Vec<(u64, u64)>,
    /// Each actor's clock offset now, and the largest magnitude so far.
    offsets: BTreeMap<ActorId, (i64, u64)>,
}

#[derive(Clone)]
pub(super) struct Held {
    pub(super) expires: u64,
    pub(super) owner: String,
}

impl Leases {
    pub fn observe(&mut self, event: &TraceEvent) {
        match &event.op {
            Op::Skew { offset } | Op::ClockStep { offset, .. } => {
                let entry = self.offsets.entry(event.actor).or_default();
                *entry = (*offset, entry.1.max(offset.unsigned_abs()));
            }
            Op::Claim {
                owner,
                expires,
                claimed,
            } => {
                for Claimed { command_id, .. } in claimed {
                    // A suspended claim may answer after a later one: the latest expiry holds.
                    if self.latest.get(command_id).is_none_or(|held| held.expires <= *expires) {
                        let held = Held {
                            expires: *expires,
                            owner: owner.clone(),
                        };
                        self.latest.insert(command_id.clone(), held);
                    }
                }
            }
            Op::Preempted { step, .. } | Op::Failed { step, .. } | Op::Died { step, .. }
                if event.actor.role == Role::Worker && step == "claim" =>
            {
                let bound = self.offsets.get(&event.actor).map_or(0, |(_, bound)| *bound);
                self.unseen.push((event.tick, event.tick.saturating_add(bound)));
            }
            _ => {}
        }
    }

    /// `actor`'s clock at `tick`, as the store reads it for a claim.
    pub fn clock(&self, actor: ActorId, tick: u64) -> u64 {
        tick.saturating_add_signed(self.offsets.get(&actor).map_or(0, |(offset, _)| *offset))
    }
}
