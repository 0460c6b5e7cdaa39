//! The writer: the workflow engine's decision loop.
//!
//! 1. find a workflow that can take a step (requested but not started, or
//!    whose awaited command is done): one a worker's nudge named, else one
//!    picked at random from `heads`;
//! 2. `load` + replay: rebuild its state and `last_seq`;
//! 3. `commands` of the head event: is the awaited result there?
//! 4. decide the next event, then `begin`, `insert_event` at
//!    `expected_seq = last_seq`, `insert_command` for each command, `commit`
//!    (or, with a store of `call` granularity, all of it in one
//!    `append_with_commands`).
//!
//! A stale writer (`Conflict`, from `insert_event` or, with a store that
//! checks heads at commit, from `commit`) rolls back, reloads and decides
//! again: it never renumbers its event. Several writers pick the same workflow on
//! purpose: that is where optimistic concurrency is tested.
//!
//! `heads` reads every workflow's head, the most expensive read a writer
//! makes, so a writer scans only when a scan is likely to find work: when
//! it starts (it knows nothing), right after a scan that found more than
//! the one workflow it took, and when a wait for a nudge ends without one
//! (the poll that finds what lost nudges and dead writers left). Otherwise
//! a writer with nothing known to do waits for a nudge, and so does one
//! whose awaited command it found done without a result (a store that
//! marks rows so would have it pick the same workflow again and again).

use std::collections::{BTreeSet, VecDeque};

use super::{KillPoint, Message, Next, Role, retry_or_crash};
use crate::actors::Ctx;
use crate::model::{Command, Event};
use crate::store::{Granularity, Request, Store, StoreError};
use crate::trace::{Appended, HeadSeen, Loaded, Op};
use crate::workflow::trip::{event_for_result, is_terminal_kind, request};
use crate::workflow::{Replayed, decide};

pub struct Writer {
    store: Box<dyn Store>,
    state: State,
    /// Workflows workers said may be ready (in memory only, lost on a kill).
    hints: VecDeque<String>,
    /// Whether the next look for work without a hint scans `heads` (true)
    /// or first waits for a nudge until the poll deadline (false).
    scan: bool,
    /// Its last `heads` call is suspended inside the store (`[preempt]`).
    heads_parked: bool,
}

enum State {
    Idle,
    Load { workflow_id: String },
    Awaiting { workflow_id: String, replayed: Replayed },
    Append(Append),
}

/// An append in progress: the decision and how far its transaction got.
struct Append {
    workflow_id: String,
    expected_seq: u64,
    event: Event,
    commands: Vec<Command>,
    /// The state decided from, recorded for the replay checker (I6).
    state: String,
    stage: Stage,
    seq: u64,
    command_ids: Vec<String>,
}

#[derive(Clone, Copy)]
enum Stage {
    Begin,
    InsertEvent,
    InsertCommand(usize),
    /// Only for an engine that sends commands before committing.
    Dispatch,
    Commit,
    /// Roll back after a conflict, then reload and decide again.
    Rollback,
}

impl Writer {
    pub fn new(store: Box<dyn Store>) -> Writer {
        Writer {
            store,
            state: State::Idle,
            hints: VecDeque::new(),
            scan: true,
            heads_parked: false,
        }
    }

    pub fn deliver(&mut self, message: Message) {
        if let Message::Nudge { workflow_id } = message
            && !self.hints.contains(&workflow_id)
        {
            self.hints.push_back(workflow_id);
        }
    }

    pub fn synchronous(&self) -> Option<u8> {
        self.store.synchronous()
    }

    pub fn is_idle(&self) -> bool {
        matches!(self.state, State::Idle)
    }

    pub fn step(&mut self, ctx: &mut Ctx<'_>) -> Next {
        let state = std::mem::replace(&mut self.state, State::Idle);
        let result = match state {
            State::Idle => self.find_work(ctx),
            State::Load { workflow_id } => self.load(ctx, workflow_id),
            State::Awaiting { workflow_id, replayed } => self.check_result(ctx, workflow_id, replayed),
            State::Append(append) => self.append_step(ctx, append),
        };
        let next = result.unwrap_or_else(|next| next);
        // Done, nothing hinted, and the last scan found nothing more: wait
        // for a nudge; if none comes by the deadline, scan then.
        if next == Next::Continue && matches!(self.state, State::Idle) && self.hints.is_empty() && !self.scan {
            self.scan = true;
            return Next::Wait {
                deadline: Some(ctx.now + ctx.world.poll_ticks),
            };
        }
        next
    }

    fn find_work(&mut self, ctx: &mut Ctx<'_>) -> Result<Next, Next> {
        // A `heads` suspended inside the store is asked again before any
        // hint that came meanwhile: the same call goes on.
        if !self.heads_parked
            && let Some(workflow_id) = self.hints.pop_front()
        {
            self.scan = false;
            return self.load(ctx, workflow_id);
        }
        let heads = retry_or_crash(ctx, "heads", self.store.heads());
        self.heads_parked = matches!(heads, Err(Next::Preempted));
        let heads = heads?;
        let started: BTreeSet<&str> = heads.iter().map(|head| head.workflow_id.as_str()).collect();
        let mut candidates: Vec<&str> = ctx
            .world
            .trips
            .iter()
            .map(|trip| trip.trip_id.as_str())
            .filter(|id| !started.contains(id))
            .collect();
        candidates.extend(
            heads
                .iter()
                .filter(|head| !is_terminal_kind(&head.kind) && head.commands_done > 0)
                .map(|head| head.workflow_id.as_str()),
        );
        candidates.sort_unstable();
        let count = candidates.len();
        let picked = ctx.prng.pick(&candidates).map(|id| id.to_string());
        drop((candidates, started));
        // The answer moves into the trace whole (judged, `check::answers`).
        ctx.record(Op::Heads {
            candidates: count,
            heads: heads
                .into_iter()
                .map(|head| HeadSeen {
                    workflow_id: head.workflow_id,
                    seq: head.last_seq,
                    kind: head.kind,
                    done: head.commands_done,
                })
                .collect(),
        });
        // More than the one taken: probably more to do right after it.
        // None: the wait below ends in a scan anyway.
        self.scan = count != 1;
        Ok(match picked {
            // Nothing to do: a nudge wakes the writer early, else it polls again.
            None => Next::Wait {
                deadline: Some(ctx.now + ctx.world.poll_ticks),
            },
            Some(workflow_id) => {
                self.state = State::Load { workflow_id };
                Next::Continue
            }
        })
    }

    fn load(&mut self, ctx: &mut Ctx<'_>, workflow_id: String) -> Result<Next, Next> {
        let loaded = self.store.load(&workflow_id);
        let events = retry_or_crash(ctx, "load", loaded).inspect_err(|_| {
            self.state = State::Load {
                workflow_id: workflow_id.clone(),
            }
        })?;
        let engine = ctx.world.engine;
        let replayed = engine.replay(&workflow_id, &events, &mut |command_id, command| {
            dispatch(ctx, command_id, command, true);
        });
        // The answer as it came, for the checkers to judge (`check::answers`).
        let answer: Vec<Loaded> = events
            .iter()
            .map(|event| Loaded {
                seq: event.seq,
                kind: event.kind.clone(),
                workflow_id: (event.workflow_id != workflow_id).then(|| event.workflow_id.clone()),
            })
            .collect();
        let replayed = match replayed {
            Ok(replayed) => replayed,
            Err(error) => {
                // A history that does not fold was written by a stale or
                // broken writer, or the store answered wrongly; the checkers
                // report it. Nothing to decide.
                ctx.record(Op::Load {
                    workflow_id: workflow_id.clone(),
                    last_seq: 0,
                    phase: "unreplayable".to_string(),
                    events: answer,
                });
                ctx.record(Op::Failed {
                    step: "replay".to_string(),
                    error: error.to_string(),
                });
                return Ok(Next::Continue);
            }
        };
        ctx.record(Op::Load {
            workflow_id: workflow_id.clone(),
            last_seq: replayed.last_seq,
            phase: replayed.trip.phase_name().to_string(),
            events: answer,
        });
        if replayed.last_seq == 0 {
            let city = ctx
                .world
                .trips
                .iter()
                .find(|trip| trip.trip_id == workflow_id)
                .map(|trip| trip.city.clone());
            return Ok(match city {
                Some(city) => self.decide(ctx, workflow_id, &replayed, request(&city)),
                None => Next::Continue,
            });
        }
        if !replayed.trip.is_terminal() {
            self.state = State::Awaiting { workflow_id, replayed };
        }
        Ok(Next::Continue)
    }

    fn check_result(&mut self, ctx: &mut Ctx<'_>, workflow_id: String, replayed: Replayed) -> Result<Next, Next> {
        let found = self.store.commands(&workflow_id, replayed.last_seq);
        let commands = match retry_or_crash(ctx, "commands", found) {
            Ok(commands) => commands,
            Err(next) => {
                self.state = State::Awaiting { workflow_id, replayed };
                return Err(next);
            }
        };
        // A forward step's event emits exactly one command: the one awaited.
        let Some(awaited) = commands.first() else {
            ctx.record(Op::Failed {
                step: "commands".to_string(),
                error: format!("{workflow_id} seq {} has no command in the outbox", replayed.last_seq),
            });
            return Ok(Next::Continue);
        };
        ctx.record(Op::Awaiting {
            command_id: awaited.command_id.clone(),
            done: awaited.done,
        });
        let Some(result) = awaited.result.as_deref().filter(|_| awaited.done) else {
            // Done without a result: no correct store leaves a row so, and
            // another scan at once would find the same head and pick it
            // again; look again at the poll, or at a nudge.
            if awaited.done && ctx.world.wait_on_resultless {
                self.scan = false;
            }
            return Ok(Next::Continue);
        };
        Ok(match event_for_result(&replayed.trip, result) {
            Ok(event) => self.decide(ctx, workflow_id, &replayed, event),
            Err(error) => {
                ctx.record(Op::Failed {
                    step: "result".to_string(),
                    error: error.to_string(),
                });
                Next::Continue
            }
        })
    }

    fn decide(&mut self, ctx: &mut Ctx<'_>, workflow_id: String, replayed: &Replayed, event: Event) -> Next {
        let commands = match decide(&replayed.trip, &event) {
            Ok((_, commands)) => commands,
            Err(error) => {
                ctx.record(Op::Failed {
                    step: "decide".to_string(),
                    error: error.to_string(),
                });
                return Next::Continue;
            }
        };
        let state = replayed.trip.digest();
        ctx.record(Op::Decide {
            workflow_id: workflow_id.clone(),
            expected_seq: replayed.last_seq,
            kind: event.kind.clone(),
            state: state.clone(),
        });
        self.state = State::Append(Append {
            workflow_id,
            expected_seq: replayed.last_seq,
            event,
            commands,
            state,
            stage: Stage::Begin,
            seq: 0,
            command_ids: Vec::new(),
        });
        Next::Continue
    }

    /// One step of the append's transaction. Unless the append is over, it
    /// stays as it is, so a busy step is retried where it stopped.
    fn append_step(&mut self, ctx: &mut Ctx<'_>, mut append: Append) -> Result<Next, Next> {
        match self.advance(ctx, &mut append) {
            // The append is over (committed, or rolled back for a reload).
            Ok(None) => Ok(Next::Continue),
            Ok(Some(next)) | Err(next) => {
                self.state = State::Append(append);
                Ok(next)
            }
        }
    }

    /// Runs the append's current stage; `Ok(None)` when the append is over.
    fn advance(&mut self, ctx: &mut Ctx<'_>, append: &mut Append) -> Result<Option<Next>, Next> {
        match append.stage {
            Stage::Begin if ctx.world.roles.store == Granularity::Call => return self.append_call(ctx, append),
            Stage::Begin => {
                retry_or_crash(ctx, "begin", self.store.begin())?;
                ctx.record(Op::Begin);
                append.stage = Stage::InsertEvent;
            }
            Stage::InsertEvent => {
                let inserted = self.store.insert_event(
                    &append.workflow_id,
                    append.expected_seq,
                    &append.event.kind,
                    &append.event.payload,
                );
                if let Err(StoreError::Conflict { .. }) = inserted {
                    ctx.record(Op::Conflict {
                        workflow_id: append.workflow_id.clone(),
                        expected_seq: append.expected_seq,
                    });
                    append.stage = Stage::Rollback;
                    return Ok(Some(Next::Continue));
                }
                append.seq = retry_or_crash(ctx, "insert_event", inserted)?;
                ctx.record(Op::InsertEvent {
                    workflow_id: append.workflow_id.clone(),
                    expected_seq: append.expected_seq,
                    seq: append.seq,
                });
                append.stage = if append.commands.is_empty() {
                    Stage::Commit
                } else {
                    Stage::InsertCommand(0)
                };
            }
            Stage::InsertCommand(index) => {
                let command = &append.commands[index];
                let inserted = self
                    .store
                    .insert_command(&append.workflow_id, append.seq, index, command);
                let command_id = retry_or_crash(ctx, "insert_command", inserted)?;
                ctx.record(Op::InsertCommand {
                    command_id: command_id.clone(),
                });
                append.command_ids.push(command_id);
                append.stage = if index + 1 < append.commands.len() {
                    Stage::InsertCommand(index + 1)
                } else if ctx.world.engine.deliver_before_commit() {
                    Stage::Dispatch
                } else {
                    Stage::Commit
                };
            }
            Stage::Dispatch => {
                for (command_id, command) in append.command_ids.iter().zip(&append.commands) {
                    dispatch(ctx, command_id, command, false);
                }
                append.stage = Stage::Commit;
            }
            Stage::Commit => {
                if ctx.kill_point(KillPoint::WriterBeforeCommit) {
                    return Err(Next::Killed(KillPoint::WriterBeforeCommit));
                }
                let committed = self.store.commit();
                // A store that checks heads when the group commits (group
                // commit) reports a stale append here: handled as above.
                if let Err(StoreError::Conflict { .. }) = committed {
                    ctx.record(Op::Conflict {
                        workflow_id: append.workflow_id.clone(),
                        expected_seq: append.expected_seq,
                    });
                    append.stage = Stage::Rollback;
                    return Ok(Some(Next::Continue));
                }
                retry_or_crash(ctx, "commit", committed)?;
                return self.committed(ctx, append);
            }
            Stage::Rollback => {
                retry_or_crash(ctx, "rollback", self.store.rollback())?;
                ctx.record(Op::Rollback);
                self.state = State::Load {
                    workflow_id: append.workflow_id.clone(),
                };
                return Ok(None);
            }
        }
        Ok(Some(Next::Continue))
    }
}

impl Writer {
    /// The whole append as one call, for a store of `call` granularity:
    /// nothing can come between its statements. `writer.before_commit` is
    /// reached only where the simulator can kill the store's process inside
    /// the call (at one of the persistence points it makes); the writer
    /// then dies with it, whatever the call answered.
    fn append_call(&mut self, ctx: &mut Ctx<'_>, append: &mut Append) -> Result<Option<Next>, Next> {
        let dies = ctx.kill_inside_call(KillPoint::WriterBeforeCommit);
        let appended = self.store.append_with_commands(
            &append.workflow_id,
            append.expected_seq,
            &append.event.kind,
            &append.event.payload,
            &append.commands,
        );
        if dies {
            ctx.call_over();
            return Err(Next::Killed(KillPoint::WriterBeforeCommit));
        }
        if let Err(StoreError::Conflict { .. }) = appended {
            ctx.record(Op::Conflict {
                workflow_id: append.workflow_id.clone(),
                expected_seq: append.expected_seq,
            });
            self.state = State::Load {
                workflow_id: append.workflow_id.clone(),
            };
            return Ok(None);
        }
        let (seq, command_ids) = retry_or_crash(ctx, "append", appended)?;
        append.seq = seq;
        append.command_ids = command_ids;
        self.committed(ctx, append)
    }

    /// The append committed: record it, maybe die, tell a worker.
    fn committed(&mut self, ctx: &mut Ctx<'_>, append: &Append) -> Result<Option<Next>, Next> {
        ctx.record(Op::Commit {
            appended: vec![Appended {
                workflow_id: append.workflow_id.clone(),
                expected_seq: append.expected_seq,
                seq: append.seq,
                kind: append.event.kind.clone(),
                state: append.state.clone(),
                command_ids: append.command_ids.clone(),
            }],
        });
        if ctx.kill_point(KillPoint::WriterAfterCommit) {
            return Err(Next::Killed(KillPoint::WriterAfterCommit));
        }
        if !append.commands.is_empty() {
            ctx.nudge(Role::Worker, &append.workflow_id);
        }
        Ok(None)
    }
}

/// Sends a command straight to a receiver, outside the outbox. Only broken
/// engines do this (the reference never does); it is recorded so the
/// checkers can see it.
fn dispatch(ctx: &mut Ctx<'_>, command_id: &str, command: &Command, replay: bool) {
    let to = ctx.pick_receiver();
    ctx.record(Op::Dispatch {
        command_id: command_id.to_string(),
        to,
        replay,
    });
    let request = Request {
        key: command_id.to_string(),
        kind: command.kind.clone(),
        payload: command.payload.clone(),
        attempt: 1,
        sent_tick: ctx.now,
    };
    ctx.request(to, request);
}
