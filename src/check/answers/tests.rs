//! Each answer judged against a small hand-built trace.

use crate::actors::{ActorId, Role};
use crate::check::snapshot::Snapshot;
use crate::check::{Durable, Expected, Input, Invariant, Violation};
use crate::sim::Recovery;
use crate::trace::{Appended, Loaded, Op, TraceEvent};

const W: &str = "trip-1";

struct Run {
    events: Vec<TraceEvent>,
    recoveries: Vec<Recovery>,
    claims: Option<crate::check::Claims>,
}

impl Run {
    fn new() -> Run {
        Run {
            events: Vec::new(),
            recoveries: Vec::new(),
            claims: None,
        }
    }

    fn push(&mut self, actor: ActorId, op: Op) -> &mut Run {
        let tick = self.events.len() as u64 + 1;
        self.events.push(TraceEvent { tick, actor, op });
        self
    }

    fn violations(&self) -> Vec<Violation> {
        let snapshot = Snapshot::default();
        super::check(&Input {
            events: &self.events,
            snapshot: &snapshot,
            trips: &[],
            settled: true,
            ticks_max: 1_000,
            steps_max: 10_000,
            ended: (1_000, 500),
            synchronous: Expected {
                store: 2,
                receiver: 2,
                journal_mode: crate::store::JournalMode::Wal,
            },
            recoveries: &self.recoveries,
            restores: &[],
            backups: &[],
            artifacts: &[],
            durable: Durable::default(),
            max_attempts: None,
            lease_margin_ticks: 0,
            claims: self.claims,
        })
    }

    fn only(&self, invariant: Invariant, needle: &str) -> Violation {
        let violations = self.violations();
        assert_eq!(violations.len(), 1, "{violations:#?}");
        let violation = violations.into_iter().next().unwrap();
        assert_eq!(violation.invariant, invariant, "{violation:#?}");
        assert!(violation.message.contains(needle), "{}", violation.message);
        violation
    }

    fn clean(&self) {
        let violations = self.violations();
        assert!(violations.is_empty(), "{violations:#?}");
    }
}

fn writer(n: u32) -> ActorId {
    ActorId::new(Role::Writer, n)
}

fn worker(n: u32) -> ActorId {
    ActorId::new(Role::Worker, n)
}

fn decide(run: &mut Run, actor: ActorId, seq: u64, kind: &str) {
    run.push(
        actor,
        Op::Decide {
            workflow_id: W.into(),
            expected_seq: seq - 1,
            kind: kind.into(),
            state: String::new(),
        },
    );
}

fn insert(run: &mut Run, actor: ActorId, seq: u64) {
    run.push(actor, Op::Begin);
    run.push(
        actor,
        Op::InsertEvent {
            workflow_id: W.into(),
            expected_seq: seq - 1,
            seq,
        },
    );
}

/// Writer `actor` appends `W#seq` of `kind`, with one command, and commits.
fn commit(run: &mut Run, actor: ActorId, seq: u64, kind: &str) {
    decide(run, actor, seq, kind);
    insert(run, actor, seq);
    run.push(
        actor,
        Op::Commit {
            appended: vec![Appended {
                workflow_id: W.into(),
                expected_seq: seq - 1,
                seq,
                kind: kind.into(),
                state: String::new(),
                command_ids: vec![format!("{W}:{seq}:0")],
            }],
        },
    );
}

fn load(run: &mut Run, answer: &[(u64, &str)]) {
    let events = answer
        .iter()
        .map(|(seq, kind)| Loaded {
            seq: *seq,
            kind: (*kind).into(),
            workflow_id: None,
        })
        .collect();
    run.push(
        writer(9),
        Op::Load {
            workflow_id: W.into(),
            last_seq: answer.last().map_or(0, |(seq, _)| *seq),
            phase: "p".into(),
            events,
        },
    );
}

fn two_committed() -> Run {
    let mut run = Run::new();
    commit(&mut run, writer(0), 1, "a");
    commit(&mut run, writer(1), 2, "b");
    run
}

#[test]
fn a_load_that_answers_the_committed_history_is_clean() {
    let mut run = two_committed();
    load(&mut run, &[(1, "a"), (2, "b")]);
    run.clean();
}

#[test]
fn a_load_out_of_seq_order_is_i6_naming_the_first_wrong_event() {
    let mut run = two_committed();
    load(&mut run, &[(2, "b"), (1, "a")]);
    let violation = run.only(
        Invariant::I6,
        "event 1 has seq 2 where seq 1 belongs (out of seq order)",
    );
    assert!(violation.message.contains("[2:b 1:a]"), "{}", violation.message);
    assert_eq!(violation.ticks, vec![run.events.len() as u64]);
}

#[test]
fn a_load_with_a_gap_or_a_missing_event_is_i6() {
    let mut run = two_committed();
    load(&mut run, &[(2, "b")]);
    run.only(Invariant::I6, "(a gap)");
    let mut run = two_committed();
    load(&mut run, &[(1, "a")]);
    run.only(Invariant::I6, "it leaves out seq 2 (b)");
}

#[test]
fn a_load_with_another_workflows_event_is_i6() {
    let mut run = two_committed();
    let mut events = vec![Loaded {
        seq: 1,
        kind: "a".into(),
        workflow_id: None,
    }];
    events.push(Loaded {
        seq: 2,
        kind: "b".into(),
        workflow_id: Some("trip-2".into()),
    });
    run.push(
        writer(9),
        Op::Load {
            workflow_id: W.into(),
            last_seq: 2,
            phase: "p".into(),
            events,
        },
    );
    run.only(Invariant::I6, "event 2 is trip-2#2 of another workflow");
}

#[test]
fn a_load_with_a_different_kind_than_committed_is_i6() {
    let mut run = two_committed();
    load(&mut run, &[(1, "a"), (2, "x")]);
    run.only(Invariant::I6, "seq 2 is x, but the event committed at seq 2");
}

#[test]
fn an_event_whose_transaction_never_committed_is_i5() {
    // Autocommit: the writer died before its COMMIT, and its event stayed.
    let mut run = Run::new();
    commit(&mut run, writer(0), 1, "a");
    decide(&mut run, writer(1), 2, "b");
    insert(&mut run, writer(1), 2);
    run.push(
        writer(1),
        Op::Kill {
            point: "writer.before_commit".into(),
        },
    );
    load(&mut run, &[(1, "a"), (2, "b")]);
    run.only(
        Invariant::I5,
        "is stored although the transaction that wrote it never committed",
    );
    // A rolled-back transaction is the same.
    let mut run = Run::new();
    commit(&mut run, writer(0), 1, "a");
    decide(&mut run, writer(1), 2, "b");
    insert(&mut run, writer(1), 2);
    run.push(writer(1), Op::Rollback);
    load(&mut run, &[(1, "a"), (2, "b")]);
    run.only(Invariant::I5, "never committed");
}

#[test]
fn an_event_of_an_open_transaction_seen_by_another_connection_is_i5() {
    let mut run = Run::new();
    commit(&mut run, writer(0), 1, "a");
    decide(&mut run, writer(1), 2, "b");
    insert(&mut run, writer(1), 2);
    load(&mut run, &[(1, "a"), (2, "b")]);
    run.only(
        Invariant::I5,
        "visible to another connection before the transaction of writer-1",
    );
}

#[test]
fn an_append_whose_outcome_no_one_learned_may_be_there_or_not() {
    // Killed inside a call that holds the whole append (no statement seen).
    for present in [true, false] {
        let mut run = Run::new();
        commit(&mut run, writer(0), 1, "a");
        decide(&mut run, writer(1), 2, "b");
        run.push(
            writer(1),
            Op::Kill {
                point: "writer.before_commit".into(),
            },
        );
        match present {
            true => load(&mut run, &[(1, "a"), (2, "b")]),
            false => load(&mut run, &[(1, "a")]),
        }
        run.clean();
    }
    // A commit call that failed.
    let mut run = Run::new();
    commit(&mut run, writer(0), 1, "a");
    decide(&mut run, writer(1), 2, "b");
    insert(&mut run, writer(1), 2);
    run.push(
        writer(1),
        Op::Failed {
            step: "commit".into(),
            error: "disk I/O error".into(),
        },
    );
    load(&mut run, &[(1, "a"), (2, "b")]);
    run.clean();
}

#[test]
fn an_event_no_one_appended_is_i6() {
    let mut run = two_committed();
    load(&mut run, &[(1, "a"), (2, "b"), (3, "c")]);
    run.only(Invariant::I6, "seq 3 (c) is an event no writer committed");
}

#[test]
fn after_a_power_cut_the_recovered_files_are_the_history() {
    let mut run = two_committed();
    run.push(
        ActorId::SIM,
        Op::PowerCut {
            point: 7,
            model: "drop_unsynced".into(),
        },
    );
    let mut snapshot = Snapshot::default();
    snapshot.events.push(crate::model::StoredEvent {
        workflow_id: W.into(),
        seq: 1,
        kind: "a".into(),
        payload: "{}".into(),
    });
    run.recoveries.push(Recovery {
        tick: 7,
        point: 7,
        snapshot,
    });
    // The cut lost seq 2 (a durability question, I9's): the answer is right.
    load(&mut run, &[(1, "a")]);
    run.clean();
}

fn pending(run: &mut Run, actor: ActorId, limit: usize, ids: &[String]) {
    run.push(
        actor,
        Op::Pending {
            limit,
            command_ids: ids.to_vec(),
        },
    );
}

#[test]
fn a_short_pending_answer_that_hides_a_due_row_is_i1() {
    let mut run = two_committed();
    pending(&mut run, worker(0), 4, &[format!("{W}:2:0")]);
    let violation = run.only(
        Invariant::I1,
        "pending(limit 4) answered 1 row(s) while 1 more were due",
    );
    assert!(
        violation.message.contains("left out trip-1:1:0 (committed at tick 4)"),
        "{}",
        violation.message
    );
    assert_eq!(violation.command_id.as_deref(), Some("trip-1:1:0"));
    // A full page says nothing about the rest.
    let mut run = two_committed();
    pending(&mut run, worker(0), 1, &[format!("{W}:2:0")]);
    run.clean();
}

#[test]
fn rows_marked_retried_or_maybe_marked_are_not_due() {
    let marked = Op::MarkDone {
        command_id: format!("{W}:1:0"),
        changed: true,
        token: None,
    };
    let retried = Op::RetryScheduled {
        command_id: format!("{W}:1:0"),
        attempt: 1,
        next_at: 100,
        error: "503".into(),
        token: None,
    };
    for op in [marked, retried] {
        let mut run = two_committed();
        run.push(worker(1), op);
        pending(&mut run, worker(0), 4, &[]);
        let violation = run.only(Invariant::I1, "left out trip-1:2:0");
        assert!(!violation.message.contains("trip-1:1:0"), "{}", violation.message);
    }
    // A mark whose outcome was lost (the store's process died in the call).
    let mut run = two_committed();
    pending(&mut run, worker(1), 4, &[format!("{W}:1:0"), format!("{W}:2:0")]);
    run.push(
        worker(1),
        Op::Died {
            step: "mark_done".into(),
            cause: "exit".into(),
        },
    );
    pending(&mut run, worker(0), 4, &[]);
    run.clean();
}

/// A worker whose `schedule_retry` is suspended inside the store
/// (`[preempt]`) may have stored the timer already: the row it last sent
/// is no longer judged due, the others still are.
#[test]
fn a_row_whose_timer_is_being_stored_by_a_suspended_call_is_not_due() {
    let mut run = two_committed();
    let send = Op::Send {
        command_id: format!("{W}:1:0"),
        key: format!("{W}:1:0"),
        to: ActorId::new(Role::Receiver, 0),
        attempt: 1,
    };
    run.push(worker(1), send);
    let suspended = Op::Preempted {
        step: "schedule_retry".into(),
        point: "xSync of the WAL".into(),
        sql: None,
        meanwhile: Vec::new(),
    };
    run.push(worker(1), suspended);
    pending(&mut run, worker(0), 4, &[]);
    let violation = run.only(Invariant::I1, "left out trip-1:2:0");
    assert!(!violation.message.contains("trip-1:1:0"), "{}", violation.message);
}

#[test]
fn a_commands_answer_that_contradicts_the_marks_is_i6() {
    let id = format!("{W}:1:0");
    let mut run = two_committed();
    run.push(
        worker(0),
        Op::MarkDone {
            command_id: id.clone(),
            changed: true,
            token: None,
        },
    );
    run.push(
        writer(3),
        Op::Awaiting {
            command_id: id.clone(),
            done: false,
        },
    );
    run.only(
        Invariant::I6,
        "commands answered trip-1:1:0 as pending, but it was marked done",
    );
    let mut run = two_committed();
    run.push(
        writer(3),
        Op::Awaiting {
            command_id: id,
            done: true,
        },
    );
    run.only(Invariant::I6, "as done, but no worker ever marked it done");
}

#[test]
fn each_family_is_reported_once_at_its_first_wrong_answer() {
    let mut run = two_committed();
    load(&mut run, &[(2, "b"), (1, "a")]);
    load(&mut run, &[(2, "b"), (1, "a")]);
    load(&mut run, &[(2, "b"), (1, "a")]);
    let violation = run.only(Invariant::I6, "out of seq order");
    assert!(!violation.message.contains("later answer"), "{}", violation.message);
    assert_eq!(violation.workflow_id.as_deref(), Some(W));
}

mod claims;
mod heads;
