//! `heads` answers judged against a small hand-built trace.

use super::{Run, decide, insert, two_committed, worker, writer};
use crate::check::Invariant;
use crate::trace::{HeadSeen, Op};

fn heads(run: &mut Run, answer: &[(&str, u64, &str, u64)]) {
    let heads = answer
        .iter()
        .map(|(workflow_id, seq, kind, done)| HeadSeen {
            workflow_id: (*workflow_id).into(),
            seq: *seq,
            kind: (*kind).into(),
            done: *done,
        })
        .collect();
    run.push(writer(9), Op::Heads { candidates: 0, heads });
}

#[test]
fn heads_at_the_latest_committed_event_are_clean() {
    let mut run = two_committed();
    heads(&mut run, &[(super::W, 2, "b", 0)]);
    run.clean();
    let mut run = Run::new();
    heads(&mut run, &[]);
    run.clean();
}

#[test]
fn a_stale_head_is_i6() {
    let mut run = two_committed();
    heads(&mut run, &[(super::W, 1, "a", 0)]);
    run.only(Invariant::I6, "but seq 2 (b) committed at tick");
}

#[test]
fn a_head_of_another_kind_or_never_committed_is_i6() {
    let mut run = two_committed();
    heads(&mut run, &[(super::W, 2, "x", 0)]);
    run.only(Invariant::I6, "the event committed at seq 2 (tick");
    let mut run = two_committed();
    heads(&mut run, &[(super::W, 3, "c", 0)]);
    run.only(Invariant::I6, "an event no writer committed");
}

#[test]
fn a_workflow_left_out_or_given_two_heads_is_i6() {
    let mut run = two_committed();
    heads(&mut run, &[]);
    run.only(Invariant::I6, "it leaves out trip-1, whose seq 2 (b) committed");
    let mut run = two_committed();
    heads(&mut run, &[(super::W, 2, "b", 0), (super::W, 2, "b", 0)]);
    run.only(Invariant::I6, "has two heads");
}

#[test]
fn a_head_of_an_append_that_never_committed_is_i5() {
    let mut run = two_committed();
    decide(&mut run, writer(2), 3, "c");
    insert(&mut run, writer(2), 3);
    run.push(writer(2), Op::Rollback);
    heads(&mut run, &[(super::W, 3, "c", 0)]);
    run.only(
        Invariant::I5,
        "is stored although the transaction that wrote it never committed",
    );
}

#[test]
fn done_commands_no_worker_marked_are_i6() {
    let mut run = two_committed();
    heads(&mut run, &[(super::W, 2, "b", 1)]);
    run.only(Invariant::I6, "but no worker marked any of them");
    let mut run = two_committed();
    run.push(
        worker(0),
        Op::MarkDone {
            command_id: format!("{}:2:0", super::W),
            changed: true,
            token: None,
        },
    );
    heads(&mut run, &[(super::W, 2, "b", 1)]);
    run.clean();
    heads(&mut run, &[(super::W, 2, "b", 2)]);
    run.only(Invariant::I6, "but its event has 1");
}

#[test]
fn an_append_of_unknown_outcome_may_be_the_head() {
    let mut run = two_committed();
    decide(&mut run, writer(2), 3, "c");
    insert(&mut run, writer(2), 3);
    run.push(
        writer(2),
        Op::Died {
            step: "commit".into(),
            cause: "killed".into(),
        },
    );
    heads(&mut run, &[(super::W, 3, "c", 0)]);
    run.clean();
}
