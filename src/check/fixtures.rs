//! A hand-built, correct run for the checkers' tests: two trips, one booked
//! and one whose hotel failed (so compensation ran), with the database
//! snapshot and the trace a clean implementation would leave. Each test
//! breaks one thing and expects exactly the invariant that covers it.

use std::collections::BTreeSet;

use super::snapshot::{Dedup, Effect, Snapshot};
use super::{Input, Invariant, Retention, Violation, check_with};
use crate::actors::TripRequest;
use crate::actors::{ActorId, Role};
use crate::model::{OutboxRow, StoredEvent, command_id};
use crate::ratio::Ratio;
use crate::store::Outcome;
use crate::store::service::{core_digest, perform};
use crate::trace::{Appended, Op, TraceEvent};
use crate::workflow::trip::{event_for_result, request};
use crate::workflow::{Trip, decide};

pub struct Fixture {
    pub snapshot: Snapshot,
    pub events: Vec<TraceEvent>,
    pub trips: Vec<TripRequest>,
    pub settled: bool,
    /// The run's `[retries] max_attempts`, if it had timers.
    pub max_attempts: Option<u32>,
    /// The scenario's `leases.margin_ticks` (0 unless a test sets it).
    pub lease_margin_ticks: u64,
    /// The scenario's de-dup retention and horizon (none unless a test sets it).
    pub retention: Option<Retention>,
    /// What recovery found after each power cut of `events`.
    pub recoveries: Vec<crate::sim::Recovery>,
    /// Backups that completed, as their files held them.
    pub backups: Vec<crate::sim::BackupFile>,
    /// What the store held after each restore, in order.
    pub restores: Vec<crate::sim::Recovery>,
}

fn at(tick: &mut u64, actor: ActorId, op: Op) -> TraceEvent {
    *tick += 1;
    TraceEvent { tick: *tick, actor, op }
}

pub fn clean() -> Fixture {
    let writer = ActorId::new(Role::Writer, 0);
    let worker = ActorId::new(Role::Worker, 0);
    let receiver = ActorId::new(Role::Receiver, 0);
    let mut snapshot = Snapshot {
        store_integrity: "ok".into(),
        receiver_integrity: "ok".into(),
        ..Snapshot::default()
    };
    let mut events = Vec::new();
    let mut tick = 0;
    let trips = vec![
        TripRequest {
            trip_id: "trip-000".into(),
            city: "Oslo".into(),
        },
        TripRequest {
            trip_id: "trip-001".into(),
            city: "Lima".into(),
        },
    ];
    for (trip_request, failure) in trips.iter().zip([Ratio::ZERO, Ratio::ONE]) {
        let workflow_id = trip_request.trip_id.as_str();
        let mut trip = Trip::new(workflow_id);
        let mut next_event = Some(request(&trip_request.city));
        let mut seq = 0;
        while let Some(event) = next_event.take() {
            let (after, commands) = decide(&trip, &event).unwrap();
            seq += 1;
            snapshot.events.push(StoredEvent {
                workflow_id: workflow_id.into(),
                seq,
                kind: event.kind.clone(),
                payload: event.payload.clone(),
            });
            let ids: Vec<String> = (0..commands.len()).map(|i| command_id(workflow_id, seq, i)).collect();
            events.push(at(
                &mut tick,
                writer,
                Op::Commit {
                    appended: vec![Appended {
                        workflow_id: workflow_id.into(),
                        expected_seq: seq - 1,
                        seq,
                        kind: event.kind.clone(),
                        state: trip.digest(),
                        command_ids: ids.clone(),
                    }],
                },
            ));
            let mut first_result = None;
            for (command, id) in commands.iter().zip(&ids) {
                let effect_id = snapshot.effects.len() as i64 + 1;
                let result = perform(&command.kind, &command.payload, effect_id, failure).unwrap();
                events.push(at(
                    &mut tick,
                    worker,
                    Op::Send {
                        command_id: id.clone(),
                        key: id.clone(),
                        to: receiver,
                        attempt: 1,
                    },
                ));
                events.push(at(
                    &mut tick,
                    receiver,
                    Op::Receive {
                        key: id.clone(),
                        from: worker,
                    },
                ));
                events.push(at(
                    &mut tick,
                    receiver,
                    Op::Apply {
                        key: id.clone(),
                        effect_id,
                        result: result.clone(),
                    },
                ));
                events.push(at(&mut tick, receiver, Op::Commit { appended: Vec::new() }));
                snapshot.effects.push(Effect {
                    effect_id,
                    key: id.clone(),
                    kind: command.kind.clone(),
                    payload: command.payload.clone(),
                    result: result.clone(),
                });
                snapshot.dedup.push(Dedup {
                    key: id.clone(),
                    digest: core_digest(&command.kind, &command.payload),
                    result: result.clone(),
                    effect_id,
                });
                snapshot.outbox.push(OutboxRow {
                    command_id: id.clone(),
                    workflow_id: workflow_id.into(),
                    event_seq: seq,
                    kind: command.kind.clone(),
                    payload: command.payload.clone(),
                    done: true,
                    result: Some(result.clone()),
                });
                first_result.get_or_insert(result);
            }
            if after.awaiting().is_some() {
                next_event = Some(event_for_result(&after, &first_result.unwrap()).unwrap());
            }
            trip = after;
        }
    }
    Fixture {
        snapshot,
        events,
        trips,
        settled: true,
        max_attempts: None,
        lease_margin_ticks: 0,
        retention: None,
        recoveries: Vec::new(),
        backups: Vec::new(),
        restores: Vec::new(),
    }
}

impl Fixture {
    pub fn violations(&self) -> Vec<Violation> {
        check_with(
            &Input {
                events: &self.events,
                snapshot: &self.snapshot,
                trips: &self.trips,
                settled: self.settled,
                ticks_max: 1_000,
                steps_max: 10_000,
                ended: (1_000, 500),
                synchronous: super::Expected {
                    store: 2,
                    receiver: 2,
                    journal_mode: crate::store::JournalMode::Wal,
                },
                recoveries: &self.recoveries,
                restores: &self.restores,
                backups: &self.backups,
                artifacts: &[],
                durable: super::Durable::default(),
                max_attempts: self.max_attempts,
                lease_margin_ticks: self.lease_margin_ticks,
                claims: None,
            },
            self.retention,
        )
    }

    pub fn invariants(&self) -> BTreeSet<Invariant> {
        self.violations().iter().map(|violation| violation.invariant).collect()
    }

    /// Appends a trace event after the last one.
    pub fn push(&mut self, actor: ActorId, op: Op) {
        let tick = self.events.last().map_or(0, |event| event.tick) + 1;
        self.events.push(TraceEvent { tick, actor, op });
    }

    pub fn row(&mut self, command_id: &str) -> &mut OutboxRow {
        self.snapshot
            .outbox
            .iter_mut()
            .find(|row| row.command_id == command_id)
            .unwrap()
    }

    /// Cuts `workflow_id`'s history back to before event `seq`: its events
    /// and outbox rows from `seq` on, and the effects of those rows, are
    /// gone from the snapshot (the trace keeps what happened).
    pub fn truncate(&mut self, workflow_id: &str, seq: u64) {
        let snapshot = &mut self.snapshot;
        snapshot
            .events
            .retain(|event| !(event.workflow_id == workflow_id && event.seq >= seq));
        snapshot
            .outbox
            .retain(|row| !(row.workflow_id == workflow_id && row.event_seq >= seq));
        let kept: BTreeSet<String> = snapshot.outbox.iter().map(|row| row.command_id.clone()).collect();
        snapshot
            .effects
            .retain(|effect| crate::model::workflow_of(&effect.key) != workflow_id || kept.contains(&effect.key));
    }

    /// Makes `command_id`'s row pending again, as if never marked done.
    pub fn unmark(&mut self, command_id: &str) {
        let row = self.row(command_id);
        row.done = false;
        row.result = None;
    }

    pub fn probe_reply(&mut self, key: &str, outcome: Outcome) {
        self.push(
            ActorId::PROBER,
            Op::ProbeReply {
                key: key.into(),
                outcome,
            },
        );
    }
}
