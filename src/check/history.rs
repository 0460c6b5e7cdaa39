//! `History`: the facts the checkers need from a trace, indexed once.

use std::collections::BTreeMap;

use crate::actors::ActorId;
use crate::store::Outcome;
use crate::trace::{Appended, Op, TraceEvent};
use crate::workload::NearMiss;

/// A committed append, with who committed it and when.
pub struct Commit<'a> {
    /// Position of the commit in the trace.
    pub index: usize,
    pub tick: u64,
    /// For a transaction a group-commit store queued first (`Queued`), the
    /// tick it was queued: its group may have committed any time from then
    /// on, before the writer asked again and learned it (late, if paused).
    pub queued: Option<u64>,
    pub actor: ActorId,
    pub appended: &'a Appended,
}

/// An effect a receiver committed and acknowledged.
pub struct AckedEffect<'a> {
    pub index: usize,
    pub tick: u64,
    pub key: &'a str,
    pub effect_id: i64,
}

#[derive(Default)]
pub struct History<'a> {
    /// Every append a writer's commit acknowledged, in commit order.
    pub commits: Vec<Commit<'a>>,
    /// Idempotency key to the command it was sent for (keys are the
    /// `command_id` in a correct implementation, but need not be).
    pub key_to_command: BTreeMap<&'a str, &'a str>,
    /// The ticks at which receivers applied an effect, by effect id.
    pub apply_ticks: BTreeMap<i64, u64>,
    /// Commands writers sent themselves, as (tick, writer, command_id, during replay).
    pub dispatches: Vec<(u64, ActorId, &'a str, bool)>,
    /// The `synchronous` level each connection reported when it opened, as
    /// (tick, actor, level).
    pub opens: Vec<(u64, ActorId, u8)>,
    /// Commits acknowledged with no sync under a `synchronous` that demands
    /// one, as (tick, actor, database, whether only the directory sync of
    /// EXTRA was missing).
    pub unsynced: Vec<(u64, ActorId, &'a str, bool)>,
    /// Probes answered (key-conflict and near-miss ones), as (tick, key, outcome).
    pub probe_replies: Vec<(u64, &'a str, &'a Outcome)>,
    /// Near-miss probes: each near-miss key, with the key it is near and how
    /// it differs (`workload::near_miss`).
    pub near_misses: BTreeMap<&'a str, (&'a str, NearMiss)>,
    /// Replies workers received, by the key they were sent under, as
    /// (tick, outcome), in order.
    pub replies: BTreeMap<&'a str, Vec<(u64, &'a Outcome)>>,
    /// The ticks each command was sent at (by workers and by writers
    /// dispatching it themselves), in order.
    pub sends: BTreeMap<&'a str, Vec<u64>>,
    /// The first tick each command was sent.
    pub first_send: BTreeMap<&'a str, u64>,
    /// Kills, as (tick, actor, point).
    pub kills: Vec<(u64, ActorId, &'a str)>,
    /// Rows marked done (acknowledged), as (trace position, command_id).
    pub marked: Vec<(usize, &'a str)>,
    /// The tick of each row's first acknowledgement that changed it.
    pub first_mark: BTreeMap<&'a str, u64>,
    /// Effects receivers committed, in order.
    pub effects_acked: Vec<AckedEffect<'a>>,
    /// Power cuts, as (trace position, tick, persistence point).
    pub cuts: Vec<(usize, u64, u64)>,
    /// Commits (indices into `commits`) whose event a power cut lost: the
    /// head they extended may be extended again, which is no stale writer.
    pub lost: std::collections::BTreeSet<usize>,
}

impl<'a> History<'a> {
    pub fn from_events(events: &'a [TraceEvent]) -> History<'a> {
        let mut history = History::default();
        // The last effect each receiver applied, acknowledged by its commit.
        let mut applying: BTreeMap<ActorId, (&'a str, i64)> = BTreeMap::new();
        // The tick each writer's open transaction was first queued at.
        let mut queued: BTreeMap<ActorId, u64> = BTreeMap::new();
        for (index, event) in events.iter().enumerate() {
            match &event.op {
                Op::Queued { .. } => {
                    queued.entry(event.actor).or_insert(event.tick);
                }
                Op::Busy { .. } | Op::Pause { .. } | Op::Commit { .. } => {}
                _ => {
                    queued.remove(&event.actor);
                }
            }
            match &event.op {
                Op::Commit { appended } => {
                    let since = queued.remove(&event.actor);
                    history.commits.extend(appended.iter().map(|appended| Commit {
                        index,
                        tick: event.tick,
                        queued: since,
                        actor: event.actor,
                        appended,
                    }));
                    if let Some((key, effect_id)) = applying.remove(&event.actor) {
                        history.effects_acked.push(AckedEffect {
                            index,
                            tick: event.tick,
                            key,
                            effect_id,
                        });
                    }
                }
                Op::MarkDone {
                    command_id,
                    changed: true,
                    ..
                } => {
                    history.marked.push((index, command_id));
                    history.first_mark.entry(command_id).or_insert(event.tick);
                }
                Op::PowerCut { point, .. } => history.cuts.push((index, event.tick, *point)),
                Op::Kill { .. } => {
                    applying.remove(&event.actor);
                    if let Op::Kill { point } = &event.op {
                        history.kills.push((event.tick, event.actor, point));
                    }
                }
                Op::Send { command_id, key, .. } => {
                    history.key_to_command.entry(key).or_insert(command_id);
                    history.first_send.entry(command_id).or_insert(event.tick);
                    history.sends.entry(command_id).or_default().push(event.tick);
                }
                Op::Reply { key, outcome } => history.replies.entry(key).or_default().push((event.tick, outcome)),
                Op::NearMiss { key, of, form, .. } => {
                    history.near_misses.insert(key, (of, *form));
                }
                Op::Dispatch { command_id, replay, .. } => {
                    history.key_to_command.entry(command_id).or_insert(command_id);
                    history.first_send.entry(command_id).or_insert(event.tick);
                    history.sends.entry(command_id).or_default().push(event.tick);
                    history.dispatches.push((event.tick, event.actor, command_id, *replay));
                }
                Op::Open {
                    synchronous: Some(level),
                    ..
                } => history.opens.push((event.tick, event.actor, *level)),
                Op::Unsynced { database, directory } => {
                    history.unsynced.push((event.tick, event.actor, database, *directory))
                }
                Op::Apply { key, effect_id, .. } => {
                    history.apply_ticks.insert(*effect_id, event.tick);
                    applying.insert(event.actor, (key, *effect_id));
                }
                Op::ProbeReply { key, outcome } => history.probe_replies.push((event.tick, key, outcome)),
                _ => {}
            }
        }
        history
    }

    /// The command an idempotency key stands for.
    pub fn command_of<'k>(&self, key: &'k str) -> &'k str
    where
        'a: 'k,
    {
        self.key_to_command.get(key).copied().unwrap_or(key)
    }

    /// The tick `command_id` was first marked done (an acknowledgement that changed the row).
    pub fn mark_tick(&self, command_id: &str) -> Option<u64> {
        self.first_mark.get(command_id).copied()
    }

    /// The earliest tick at which `workflow_id`'s event `seq` may have
    /// committed, if known: when its writer learned it, or, for a
    /// transaction a group-commit store queued, when it was queued.
    pub fn commit_tick(&self, workflow_id: &str, seq: u64) -> Option<u64> {
        self.commits
            .iter()
            .find(|commit| commit.appended.workflow_id == workflow_id && commit.appended.seq == seq)
            .map(|commit| commit.queued.unwrap_or(commit.tick))
    }
}
