//! `History`: the facts the checkers need from a trace, indexed once.

use std::collections::BTreeMap;

use crate::actors::ActorId;
use crate::store::Outcome;
use crate::trace::{Appended, Op, TraceEvent};

/// A committed append, with who committed it and when.
pub struct Commit<'a> {
    pub tick: u64,
    pub actor: ActorId,
    pub appended: &'a Appended,
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
    /// Key-conflict probes answered, as (tick, key, outcome).
    pub probe_replies: Vec<(u64, &'a str, &'a Outcome)>,
    /// The first tick each command was sent.
    pub first_send: BTreeMap<&'a str, u64>,
    /// Kills, as (tick, actor, point).
    pub kills: Vec<(u64, ActorId, &'a str)>,
}

impl<'a> History<'a> {
    pub fn from_events(events: &'a [TraceEvent]) -> History<'a> {
        let mut history = History::default();
        for event in events {
            match &event.op {
                Op::Commit { appended } => {
                    history.commits.extend(appended.iter().map(|appended| Commit {
                        tick: event.tick,
                        actor: event.actor,
                        appended,
                    }));
                }
                Op::Send { command_id, key, .. } => {
                    history.key_to_command.entry(key).or_insert(command_id);
                    history.first_send.entry(command_id).or_insert(event.tick);
                }
                Op::Dispatch { command_id, replay, .. } => {
                    history.key_to_command.entry(command_id).or_insert(command_id);
                    history.first_send.entry(command_id).or_insert(event.tick);
                    history.dispatches.push((event.tick, event.actor, command_id, *replay));
                }
                Op::Open {
                    synchronous: Some(level),
                    ..
                } => history.opens.push((event.tick, event.actor, *level)),
                Op::Apply { effect_id, .. } => {
                    history.apply_ticks.insert(*effect_id, event.tick);
                }
                Op::ProbeReply { key, outcome } => history.probe_replies.push((event.tick, key, outcome)),
                Op::Kill { point } => history.kills.push((event.tick, event.actor, point)),
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

    /// The tick at which `workflow_id`'s event `seq` was committed, if known.
    pub fn commit_tick(&self, workflow_id: &str, seq: u64) -> Option<u64> {
        self.commits
            .iter()
            .find(|commit| commit.appended.workflow_id == workflow_id && commit.appended.seq == seq)
            .map(|commit| commit.tick)
    }
}
