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

/// An effect a receiver applied (`Op::Apply`), and what became of its
/// transaction as far as the trace shows (`alive.rs` adds the power cuts).
pub struct Applied<'a> {
    /// Position of the `Apply` in the trace.
    pub index: usize,
    pub tick: u64,
    pub key: &'a str,
    pub effect_id: i64,
    pub result: &'a str,
    /// Whose request the receiver was handling (its last `Op::Receive`):
    /// a worker, a writer dispatching, or `ActorId::PROBER`.
    pub requester: Option<ActorId>,
    /// The receiver's commit that acknowledged it, as (trace position, tick).
    pub acked: Option<(usize, u64)>,
    /// Its receiver was killed before the commit: the transaction rolled back.
    pub rolled_back: bool,
}

/// A receiver's answer as its requester received it (`Op::Reply` to a
/// worker, `Op::ProbeReply` to the prober).
pub struct Answer<'a> {
    /// When the requester received it.
    pub tick: u64,
    /// Position in the trace of the receiver's `Respond` that gave it: the
    /// moment it is judged at (a cut may fall between the two). The
    /// reply's own position when no such `Respond` is in the trace.
    pub given: usize,
    pub to: ActorId,
    pub key: &'a str,
    pub outcome: &'a Outcome,
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
    /// Effects receivers applied, in order, committed or not.
    pub applied: Vec<Applied<'a>>,
    /// Answers requesters received (workers' replies and probe replies), in order.
    pub answers: Vec<Answer<'a>>,
    /// Power cuts, as (trace position, tick, persistence point).
    pub cuts: Vec<(usize, u64, u64)>,
    /// Restores (`[restore]`), as (trace position of `Op::RolledBack`, tick,
    /// restore number): from there the store holds `restored[i]`.
    pub restores: Vec<(usize, u64, u32)>,
    /// Appends whose commit no writer learned (queued by a group-commit
    /// store, then its writer died; a commit call that failed), as (tick
    /// from which it may have committed, workflow_id, seq).
    pub unacknowledged: Vec<(u64, &'a str, u64)>,
    /// Commits (indices into `commits`) whose event a power cut lost: the
    /// head they extended may be extended again, which is no stale writer.
    pub lost: std::collections::BTreeSet<usize>,
    /// Receivers killed inside a call that was handling a key, before it
    /// applied anything the trace saw (a `call` receiver's `handle`, killed
    /// through the VFS extension): its effect may have committed, unsynced,
    /// as (trace position of the kill, key).
    pub killed_handling: Vec<(usize, &'a str)>,
    /// What recovery found after each cut, in the order of `cuts`, when
    /// the checker has it (`with_recoveries`): which effects a cut took.
    pub recoveries: &'a [crate::sim::Recovery],
    /// What the store held after each restore, in the order of `restores`.
    pub restored: &'a [crate::sim::Recovery],
}

impl<'a> History<'a> {
    pub fn from_events(events: &'a [TraceEvent]) -> History<'a> {
        let mut history = History::default();
        // The last effect each receiver applied (into `applied`), until its commit.
        let mut applying: BTreeMap<ActorId, usize> = BTreeMap::new();
        // Whose request each receiver is handling.
        let mut receiving: BTreeMap<ActorId, ActorId> = BTreeMap::new();
        // Each receiver's answers, by (key, requester), as (trace position, outcome).
        let mut responds: BTreeMap<(&'a str, ActorId), Vec<(usize, &'a Outcome)>> = BTreeMap::new();
        // The tick each writer's open transaction was first queued at.
        let mut queued: BTreeMap<ActorId, u64> = BTreeMap::new();
        // The append each writer decided last, as (workflow, seq).
        let mut deciding: BTreeMap<ActorId, (&'a str, u64)> = BTreeMap::new();
        // The key each receiver is handling, until it answers.
        let mut handling: BTreeMap<ActorId, &'a str> = BTreeMap::new();
        for (index, event) in events.iter().enumerate() {
            match &event.op {
                Op::Queued { .. } => {
                    queued.entry(event.actor).or_insert(event.tick);
                }
                // An append suspended inside the store may commit any time
                // from the suspension on, as a queued one.
                Op::Preempted { step, .. } => {
                    if matches!(step.as_str(), "append" | "commit") {
                        queued.entry(event.actor).or_insert(event.tick);
                    }
                }
                // Neither a busy answer nor an event at its actor's step
                // start ends a suspended commit's wait: it may still land.
                op if op.at_step_start() => {}
                Op::Busy { .. } | Op::Commit { .. } => {}
                Op::Decide {
                    workflow_id,
                    expected_seq,
                    ..
                } => {
                    queued.remove(&event.actor);
                    deciding.insert(event.actor, (workflow_id, expected_seq + 1));
                }
                Op::InsertEvent { workflow_id, seq, .. } => {
                    queued.remove(&event.actor);
                    deciding.insert(event.actor, (workflow_id, *seq));
                }
                Op::Kill { .. } | Op::Died { .. } | Op::Failed { .. } => {
                    // A writer that never heard how its commit went: queued
                    // (its group may have committed it since), or a commit
                    // call that failed.
                    let unknown = match &event.op {
                        Op::Died { step, .. } | Op::Failed { step, .. } => {
                            matches!(step.as_str(), "commit" | "append").then_some(event.tick)
                        }
                        _ => None,
                    };
                    let since = queued.remove(&event.actor).or(unknown);
                    if let (Some(since), Some((workflow_id, seq))) = (since, deciding.get(&event.actor))
                        && event.actor.role == crate::actors::Role::Writer
                    {
                        history.unacknowledged.push((since, workflow_id, *seq));
                    }
                }
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
                    if let Some(applied) = applying.remove(&event.actor) {
                        history.applied[applied].acked = Some((index, event.tick));
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
                Op::PowerCut { point, .. } => {
                    // What became of open transactions, recovery tells (`alive.rs`).
                    applying.clear();
                    history.cuts.push((index, event.tick, *point));
                }
                Op::RolledBack { n, .. } => history.restores.push((index, event.tick, *n)),
                Op::Died { .. } => {
                    // Its commit's outcome is unknown.
                    applying.remove(&event.actor);
                }
                Op::Kill { point } => {
                    let key = handling.remove(&event.actor);
                    match applying.remove(&event.actor) {
                        Some(applied) => history.applied[applied].rolled_back = true,
                        None => history.killed_handling.extend(key.map(|key| (index, key))),
                    }
                    history.kills.push((event.tick, event.actor, point));
                }
                Op::Send { command_id, key, .. } => {
                    history.key_to_command.entry(key).or_insert(command_id);
                    history.first_send.entry(command_id).or_insert(event.tick);
                    history.sends.entry(command_id).or_default().push(event.tick);
                }
                Op::Reply { key, outcome } => {
                    history.replies.entry(key).or_default().push((event.tick, outcome));
                    history.answer(&responds, index, event, key, outcome);
                }
                Op::Receive { from, key } => {
                    receiving.insert(event.actor, *from);
                    handling.insert(event.actor, key);
                }
                Op::Respond { key, to, outcome } => {
                    handling.remove(&event.actor);
                    responds.entry((key, *to)).or_default().push((index, outcome));
                }
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
                Op::Apply { key, effect_id, result } => {
                    history.apply_ticks.insert(*effect_id, event.tick);
                    applying.insert(event.actor, history.applied.len());
                    history.applied.push(Applied {
                        index,
                        tick: event.tick,
                        key,
                        effect_id: *effect_id,
                        result,
                        requester: receiving.get(&event.actor).copied(),
                        acked: None,
                        rolled_back: false,
                    });
                }
                Op::ProbeReply { key, outcome } => {
                    history.probe_replies.push((event.tick, key, outcome));
                    history.answer(&responds, index, event, key, outcome);
                }
                _ => {}
            }
        }
        history
    }

    /// The same history, knowing what recovery found after each cut and
    /// what the store held after each restore.
    pub fn with_recoveries(
        mut self,
        recoveries: &'a [crate::sim::Recovery],
        restored: &'a [crate::sim::Recovery],
    ) -> History<'a> {
        self.recoveries = recoveries;
        self.restored = restored;
        self
    }

    /// The snapshots of the restores between trace positions `from` and
    /// `to` (exclusive), in order.
    pub fn restores_between(&self, from: usize, to: usize) -> impl Iterator<Item = &'a crate::store::Snapshot> + '_ {
        self.restores
            .iter()
            .zip(self.restored)
            .filter(move |((at, _, _), _)| *at > from && *at < to)
            .map(|(_, restored)| &restored.snapshot)
    }

    /// Notes the answer `outcome` under `key` that `event` (a reply, the
    /// trace's `index`-th) delivered, given by the latest `Respond` before it
    /// with that key, requester and outcome.
    fn answer(
        &mut self,
        responds: &BTreeMap<(&'a str, ActorId), Vec<(usize, &'a Outcome)>>,
        index: usize,
        event: &TraceEvent,
        key: &'a str,
        outcome: &'a Outcome,
    ) {
        let given = responds
            .get(&(key, event.actor))
            .and_then(|given| given.iter().rev().find(|(_, said)| *said == outcome))
            .map_or(index, |(at, _)| *at);
        self.answers.push(Answer {
            tick: event.tick,
            given,
            to: event.actor,
            key,
            outcome,
        });
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

    /// The earliest tick at which any version of `workflow_id`'s event
    /// `seq` may have committed: `commit_tick`, or an append whose commit
    /// no writer learned. Before a power cut took it back, an event may
    /// have been committed by a transaction no writer heard of, and
    /// committed again, acknowledged, after the cut.
    pub fn earliest_commit_tick(&self, workflow_id: &str, seq: u64) -> Option<u64> {
        let unacknowledged = self
            .unacknowledged
            .iter()
            .filter(|(_, workflow, at)| *workflow == workflow_id && *at == seq)
            .map(|(tick, _, _)| *tick);
        unacknowledged.chain(self.commit_tick(workflow_id, seq)).min()
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
