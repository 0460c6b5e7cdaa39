//! The one pass over the trace (and the snapshot) that gathers `Facts`,
//! recovering what each killed actor had in hand from its previous steps.

use std::collections::BTreeMap;

use super::*;

/// A writer's open transaction: what it inserted, with ticks.
#[derive(Default)]
struct OpenTx<'a> {
    /// (workflow, seq, tick).
    events: Vec<(&'a str, u64, u64)>,
    /// (command id, tick).
    commands: Vec<(&'a str, u64)>,
}

/// Per-actor state of the trace pass.
#[derive(Default)]
struct ActorState<'a> {
    /// A writer's open transaction.
    tx: Option<OpenTx<'a>>,
    /// The append a writer committed last (cleared when it begins again).
    last_commit: Option<&'a [Appended]>,
    /// A worker's delivery in hand and whether it is finished (marked done).
    delivering: Option<(&'a str, bool)>,
    /// A receiver's request in hand, by key.
    handling: Option<&'a str>,
    /// The last kill not yet followed by a restart, as an index into kills.
    down: Option<usize>,
}

impl<'a> Facts<'a> {
    pub fn new(events: &'a [TraceEvent], snapshot: &'a Snapshot, violations: &[Violation]) -> Facts<'a> {
        let mut facts = Facts {
            history: History::from_events(events),
            commands: BTreeMap::new(),
            workflows: BTreeMap::new(),
            kills: Vec::new(),
            leased: false,
            retried: false,
        };
        facts.fold_workflows(snapshot);
        facts.add_snapshot(snapshot);
        facts.walk(events);
        facts.add_violations(violations, snapshot);
        facts
    }

    fn command(&mut self, id: &str) -> &mut CommandFacts<'a> {
        self.commands
            .entry(id.to_string())
            .or_insert_with(|| CommandFacts::new(id))
    }

    fn workflow(&mut self, id: &str) -> &mut WorkflowFacts<'a> {
        self.workflows.entry(id.to_string()).or_insert_with(|| WorkflowFacts {
            id: id.to_string(),
            phase: "new",
            ..WorkflowFacts::default()
        })
    }

    /// The command a key was sent for (the key itself if never sent).
    pub fn command_of<'k>(&self, key: &'k str) -> &'k str
    where
        'a: 'k,
    {
        self.history.command_of(key)
    }

    /// Folds every stored history through the reference `decide`, and
    /// records the commands each event should have in the outbox.
    fn fold_workflows(&mut self, snapshot: &'a Snapshot) {
        let mut by_workflow: BTreeMap<&str, Vec<&'a StoredEvent>> = BTreeMap::new();
        for event in &snapshot.events {
            by_workflow.entry(&event.workflow_id).or_default().push(event);
        }
        for (workflow_id, events) in by_workflow {
            let mut trip = Trip::new(workflow_id);
            let mut folds = Vec::with_capacity(events.len());
            let mut broken = false;
            for (position, event) in events.iter().enumerate() {
                let expected_seq = position as u64 + 1;
                if broken {
                    folds.push(Fold::Unreached);
                    continue;
                }
                if event.seq != expected_seq {
                    folds.push(Fold::Gap { expected: expected_seq });
                    broken = true;
                    continue;
                }
                match decide(&trip, &event.event()) {
                    Ok((next, commands)) => {
                        let commands: Vec<(String, Command)> = commands
                            .into_iter()
                            .enumerate()
                            .map(|(index, command)| (command_id(workflow_id, event.seq, index), command))
                            .collect();
                        for (id, command) in &commands {
                            let facts = self.command(id);
                            facts.expected = Some(command.clone());
                            facts.event = Some(event);
                        }
                        folds.push(Fold::Fits(commands));
                        trip = next;
                    }
                    Err(error) => {
                        folds.push(Fold::Misfit {
                            phase: error.phase,
                            reason: error.reason,
                        });
                        broken = true;
                    }
                }
            }
            let workflow = self.workflow(workflow_id);
            workflow.events = events;
            workflow.folds = folds;
            workflow.phase = trip.phase_name();
            workflow.terminal = trip.is_terminal();
        }
    }

    fn add_snapshot(&mut self, snapshot: &'a Snapshot) {
        let mut stored: BTreeMap<(&str, u64), &'a StoredEvent> = BTreeMap::new();
        for event in &snapshot.events {
            stored.insert((&event.workflow_id, event.seq), event);
        }
        for row in &snapshot.outbox {
            let event = stored.get(&(row.workflow_id.as_str(), row.event_seq)).copied();
            let facts = self.command(&row.command_id);
            facts.row = Some(row);
            facts.workflow_id = row.workflow_id.clone();
            facts.event_seq = Some(row.event_seq);
            facts.event = event;
        }
        for effect in &snapshot.effects {
            let tick = self.history.apply_ticks.get(&effect.effect_id).copied();
            let command = self.command_of(&effect.key).to_string();
            self.command(&command).effects.push((effect, tick));
        }
        for record in &snapshot.dedup {
            let command = self.command_of(&record.key).to_string();
            if let Some(facts) = self.commands.get_mut(&command) {
                facts.dedup.push(record);
            }
        }
    }

    /// The trace pass: transactions, deliveries, applies, kills.
    fn walk(&mut self, events: &'a [TraceEvent]) {
        let mut actors: BTreeMap<ActorId, ActorState<'a>> = BTreeMap::new();
        for (position, event) in events.iter().enumerate() {
            let (tick, actor) = (event.tick, event.actor);
            let state = actors.entry(actor).or_default();
            match &event.op {
                Op::Open { .. } | Op::Restart { .. } => {
                    if let Some(index) = state.down.take() {
                        self.kills[index].back = Some(tick);
                    }
                    if matches!(event.op, Op::Open { .. })
                        && let Some(tx) = state.tx.take()
                    {
                        self.close(actor, tx, TxEnd::Unknown);
                    }
                }
                Op::Kill { point } => {
                    let state = std::mem::take(state);
                    let index = self.kill(position, tick, actor, point, state);
                    actors.entry(actor).or_default().down = Some(index);
                }
                Op::Begin if actor.role == Role::Writer => {
                    state.tx = Some(OpenTx::default());
                    state.last_commit = None;
                }
                Op::InsertEvent { workflow_id, seq, .. } => {
                    if let Some(tx) = &mut state.tx {
                        tx.events.push((workflow_id, *seq, tick));
                    }
                }
                Op::InsertCommand { command_id } => {
                    if let Some(tx) = &mut state.tx {
                        tx.commands.push((command_id, tick));
                    }
                }
                Op::Commit { appended } if actor.role == Role::Writer => {
                    state.last_commit = Some(appended);
                    if let Some(tx) = state.tx.take() {
                        self.close(actor, tx, TxEnd::Committed(tick));
                    }
                    for append in appended {
                        for id in &append.command_ids {
                            self.command(id).commits.push((tick, actor));
                        }
                        self.workflow(&append.workflow_id).commits.push((tick, actor, append));
                    }
                }
                Op::Rollback if actor.role == Role::Writer => {
                    if let Some(tx) = state.tx.take() {
                        self.close(actor, tx, TxEnd::RolledBack(tick));
                    }
                }
                Op::Conflict {
                    workflow_id,
                    expected_seq,
                } => self.workflow(workflow_id).conflicts.push((tick, actor, *expected_seq)),
                Op::Send {
                    command_id, key, to, ..
                } => {
                    state.delivering = Some((command_id, false));
                    self.command(command_id).deliveries.push(Delivery {
                        tick,
                        actor,
                        key,
                        to: *to,
                        dispatch: None,
                    });
                }
                Op::Dispatch { command_id, to, replay } => self.command(command_id).deliveries.push(Delivery {
                    tick,
                    actor,
                    key: command_id,
                    to: *to,
                    dispatch: Some(*replay),
                }),
                Op::Timeout { key, .. } => {
                    let command = self.history.command_of(key);
                    state.delivering = Some((command, false));
                    self.command(command).timeouts.push(tick);
                }
                Op::Reply { key, outcome } => {
                    let command = self.history.command_of(key);
                    state.delivering = Some((command, false));
                    self.command(command).replies.push((tick, actor, outcome));
                }
                Op::MarkDone {
                    command_id,
                    changed,
                    token,
                } => {
                    state.delivering = Some((command_id, true));
                    let facts = self.command(command_id);
                    facts.marks.push((tick, actor, *changed));
                    if let Some(token) = *token {
                        facts.leases.push(LeaseStep::Acked {
                            tick,
                            actor,
                            token,
                            changed: *changed,
                        });
                    }
                }
                Op::Claim {
                    owner,
                    expires,
                    claimed,
                } => {
                    state.delivering = None;
                    self.leased = true;
                    for claim in claimed {
                        self.command(&claim.command_id).leases.push(LeaseStep::Claimed {
                            tick,
                            actor,
                            owner,
                            token: claim.token,
                            expires: *expires,
                        });
                    }
                }
                Op::LeaseLost { command_id, token } => {
                    self.command(command_id).leases.push(LeaseStep::Lost {
                        tick,
                        actor,
                        token: *token,
                    });
                }
                Op::Refuse { key, error, poison, .. } => {
                    let step = RetryStep::Refused {
                        tick,
                        actor,
                        error,
                        poison: *poison,
                    };
                    self.retry(key, step);
                }
                Op::ReplyReplaced { key, to, error } => {
                    let step = RetryStep::Replaced {
                        tick,
                        actor,
                        to: *to,
                        error,
                    };
                    self.retry(key, step);
                }
                Op::RetryScheduled {
                    command_id,
                    attempt,
                    next_at,
                    error,
                    ..
                } => {
                    let step = RetryStep::Scheduled {
                        tick,
                        actor,
                        attempt: *attempt,
                        next_at: *next_at,
                        error,
                    };
                    self.retry(command_id, step);
                }
                Op::RetryUnchanged { command_id, error, .. } => {
                    self.retry(command_id, RetryStep::Unchanged { tick, actor, error });
                }
                Op::DeadLettered {
                    command_id,
                    attempts,
                    error,
                } => {
                    let step = RetryStep::DeadLettered {
                        tick,
                        actor,
                        attempts: *attempts,
                        error,
                    };
                    self.retry(command_id, step);
                }
                Op::Pending { .. } => state.delivering = None,
                Op::Receive { key, .. } => state.handling = Some(key),
                Op::Respond { .. } => state.handling = None,
                Op::Apply { key, effect_id, .. } => {
                    let command = self.history.command_of(key);
                    self.command(command).applies.push((tick, actor, *effect_id));
                }
                Op::Lost { key, .. } => {
                    // Nudges travel under a workflow id: only commands count here.
                    let command = self.history.command_of(key);
                    if let Some(facts) = self.commands.get_mut(command) {
                        facts.lost.push(tick);
                    }
                }
                Op::Probe { key, .. } => {
                    let command = self.history.command_of(key);
                    self.command(command).probes.push(tick);
                }
                _ => {}
            }
        }
    }

    /// Records a retry step of the command `key` was sent for.
    fn retry(&mut self, key: &str, step: RetryStep<'a>) {
        self.retried = true;
        let command = self.history.command_of(key).to_string();
        self.command(&command).retries.push(step);
    }

    /// Records how a writer's transaction ended for each row it inserted.
    fn close(&mut self, actor: ActorId, tx: OpenTx<'_>, end: TxEnd<'a>) {
        for (workflow_id, seq, tick) in tx.events {
            self.workflow(workflow_id)
                .inserts
                .push((seq, Insert { tick, actor, end }));
        }
        for (id, tick) in tx.commands {
            self.command(id).inserts.push(Insert { tick, actor, end });
        }
    }

    /// Records a kill and what it interrupted; returns its index.
    fn kill(&mut self, event: usize, tick: u64, actor: ActorId, point: &'a str, state: ActorState<'a>) -> usize {
        let index = self.kills.len();
        let mut commands: Vec<String> = Vec::new();
        let mut events: Vec<(String, u64)> = Vec::new();
        let doing = match actor.role {
            Role::Writer => {
                if point.ends_with("after_commit")
                    && let Some(appended) = state.last_commit
                {
                    for append in appended {
                        events.push((append.workflow_id.clone(), append.seq));
                        commands.extend(append.command_ids.iter().cloned());
                    }
                    format!("had just committed {}", listing(&events, &commands))
                } else if let Some(tx) = state.tx {
                    events.extend(tx.events.iter().map(|(workflow, seq, _)| (workflow.to_string(), *seq)));
                    commands.extend(tx.commands.iter().map(|(id, _)| id.to_string()));
                    self.close(actor, tx, TxEnd::Killed { tick, point });
                    if events.is_empty() && commands.is_empty() {
                        "had an empty transaction open".to_string()
                    } else {
                        format!(
                            "had inserted {} in a transaction not yet committed",
                            listing(&events, &commands)
                        )
                    }
                } else {
                    "had no transaction open".to_string()
                }
            }
            Role::Worker => match state.delivering {
                // Before the next delivery, the finished one is no longer in hand.
                Some((command, finished)) if !finished || point.ends_with("after_mark_done") => {
                    commands.push(command.to_string());
                    if finished {
                        format!("had just marked {command} done")
                    } else {
                        format!("was delivering {command}")
                    }
                }
                _ if point.ends_with("after_read_pending") => "had just read its pending rows".to_string(),
                _ if point.ends_with("before_deliver") => "was about to send the next row of its batch".to_string(),
                _ => "had no delivery in hand".to_string(),
            },
            Role::Receiver => match state.handling {
                Some(key) => {
                    let command = self.history.command_of(key);
                    commands.push(command.to_string());
                    if key == command {
                        format!("was handling {command}")
                    } else {
                        format!("was handling key {key} of {command}")
                    }
                }
                None => "was idle".to_string(),
            },
            Role::Prober | Role::Sim => String::new(),
        };
        for command in &commands {
            self.command(command).kills.push(index);
        }
        let mut workflows: Vec<&str> = events.iter().map(|(workflow, _)| workflow.as_str()).collect();
        workflows.extend(commands.iter().filter_map(|id| parse_command_id(id).map(|(w, _, _)| w)));
        workflows.sort_unstable();
        workflows.dedup();
        let workflows: Vec<String> = workflows.into_iter().map(str::to_string).collect();
        for workflow in workflows {
            self.workflow(&workflow).kills.push(index);
        }
        self.kills.push(Kill {
            event,
            tick,
            actor,
            point,
            back: None,
            commands,
            events,
            doing,
        });
        index
    }

    /// Links each violation to the commands and workflows it is about.
    fn add_violations(&mut self, violations: &[Violation], snapshot: &Snapshot) {
        for (index, violation) in violations.iter().enumerate() {
            if let Some(command) = &violation.command_id {
                let facts = self.command(command);
                facts.violations.push(index);
                if let Some(workflow) = &violation.workflow_id
                    && facts.workflow_id.is_empty()
                {
                    facts.workflow_id = workflow.clone();
                }
            } else if let Some(workflow) = &violation.workflow_id {
                self.workflow(workflow).violations.push(index);
                // The rows of the event in question share the blame.
                if let Some(seq) = violation.seq {
                    for facts in self.commands.values_mut() {
                        if &facts.workflow_id == workflow && facts.event_seq == Some(seq) {
                            facts.violations.push(index);
                        }
                    }
                }
            } else if violation.invariant == Invariant::I10 {
                for id in self.stuck_commands(snapshot) {
                    self.command(&id).violations.push(index);
                }
            }
        }
    }

    /// Why a run did not settle: rows pending or done without a result, and
    /// commands unfinished workflows wait for that have no row.
    pub fn stuck_commands(&self, snapshot: &Snapshot) -> Vec<String> {
        let mut ids: Vec<String> = snapshot
            .outbox
            .iter()
            .filter(|row| !row.done || row.result.is_none())
            .map(|row| row.command_id.clone())
            .collect();
        for workflow in self.workflows.values().filter(|workflow| !workflow.terminal) {
            if let Some(Fold::Fits(commands)) = workflow.folds.last() {
                ids.extend(
                    commands
                        .iter()
                        .filter(|(id, _)| self.commands.get(id).is_none_or(|facts| facts.row.is_none()))
                        .map(|(id, _)| id.clone()),
                );
            }
        }
        ids.sort_by_key(|id| command_order(id));
        ids.dedup();
        ids
    }

    /// The commands to list, those named by violations first (by their
    /// first violation), then the rest in id order.
    pub fn listed_commands(&self) -> Vec<&CommandFacts<'a>> {
        let mut listed: Vec<&CommandFacts<'a>> = self.commands.values().filter(|facts| facts.shown()).collect();
        listed.sort_by_cached_key(|facts| {
            (
                facts.violations.first().copied().unwrap_or(usize::MAX),
                command_order(&facts.id),
            )
        });
        listed
    }
}

/// "trip-006#3, trip-006:3:0".
fn listing(events: &[(String, u64)], commands: &[String]) -> String {
    let mut parts: Vec<String> = events
        .iter()
        .map(|(workflow, seq)| format!("{workflow}#{seq}"))
        .collect();
    parts.extend(commands.iter().cloned());
    if parts.is_empty() {
        "nothing".to_string()
    } else {
        parts.join(", ")
    }
}
