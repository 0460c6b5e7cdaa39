//! `claim` answers judged against a small hand-built trace: rows 1:0
//! (committed at tick 4) and 2:0 (tick 8), claimed with batches of 2 and
//! leases of 10 ticks.

use super::{Run, W, decide, insert, two_committed, worker, writer};
use crate::check::{Claims, Invariant};
use crate::trace::{Appended, Claimed, Op, TraceEvent};

fn row(seq: u64) -> String {
    format!("{W}:{seq}:0")
}

fn run() -> Run {
    let mut run = two_committed();
    run.claims = Some(Claims {
        limit: 2,
        lease_ticks: 10,
    });
    run
}

/// Worker `n` at `tick` claims `rows` until `expires`.
fn claim(run: &mut Run, tick: u64, n: u32, expires: u64, rows: &[u64]) {
    let claimed = rows
        .iter()
        .map(|seq| Claimed {
            command_id: row(*seq),
            token: *seq,
        })
        .collect();
    at(
        run,
        tick,
        n,
        Op::Claim {
            owner: format!("worker-{n}#1"),
            expires,
            claimed,
        },
    );
}

fn at(run: &mut Run, tick: u64, n: u32, op: Op) {
    run.events.push(TraceEvent {
        tick,
        actor: worker(n),
        op,
    });
}

#[test]
fn a_claim_that_takes_every_free_row_is_clean() {
    let mut run = run();
    claim(&mut run, 10, 0, 20, &[1, 2]);
    // Both leases live: nothing is free.
    claim(&mut run, 15, 1, 25, &[]);
    run.clean();
    // A full batch says nothing about the rest.
    let mut run = run_with_limit(1);
    claim(&mut run, 10, 0, 20, &[2]);
    run.clean();
}

fn run_with_limit(limit: usize) -> Run {
    let mut run = run();
    run.claims = Some(Claims { limit, lease_ticks: 10 });
    run
}

#[test]
fn a_short_claim_that_leaves_out_a_row_nobody_claimed_is_i1() {
    let mut run = run();
    claim(&mut run, 10, 0, 20, &[2]);
    let violation = run.only(
        Invariant::I1,
        "claim(limit 2) at clock 10 answered 1 row(s) while 1 more were claimable",
    );
    assert!(
        violation
            .message
            .contains("left out trip-1:1:0 (never claimed, committed at tick 4)"),
        "{}",
        violation.message
    );
    assert_eq!(violation.command_id.as_deref(), Some(row(1).as_str()));
}

#[test]
fn a_claim_that_leaves_out_an_expired_lease_is_i1_naming_the_holder() {
    let mut run = run();
    claim(&mut run, 10, 0, 20, &[1, 2]);
    // At its expiry the row may still be held (one tick of slack).
    claim(&mut run, 20, 1, 30, &[]);
    run.clean();
    claim(&mut run, 21, 1, 31, &[]);
    run.only(
        Invariant::I1,
        "it left out trip-1:1:0 (lease of worker-0#1 expired at tick 20), trip-1:2:0 (lease of worker-0#1",
    );
}

#[test]
fn expiry_is_read_on_the_claimers_clock() {
    // Worker 1's clock is 5 behind: at true tick 24 it reads 19.
    let mut run = run();
    claim(&mut run, 10, 0, 20, &[1, 2]);
    at(&mut run, 12, 1, Op::Skew { offset: -5 });
    claim(&mut run, 24, 1, 29, &[]);
    run.clean();
    // And 5 ahead: at true tick 16 it reads 21.
    let mut run = run_with_limit(2);
    claim(&mut run, 10, 0, 20, &[1, 2]);
    at(&mut run, 12, 1, Op::Skew { offset: 5 });
    claim(&mut run, 16, 1, 31, &[]);
    run.only(
        Invariant::I1,
        "at clock 21 answered 0 row(s) while 2 more were claimable",
    );
}

#[test]
fn a_claim_whose_rows_no_one_learned_holds_every_row_until_its_lease_could_end() {
    let mut run = run();
    at(
        &mut run,
        10,
        0,
        Op::Failed {
            step: "claim".into(),
            error: "disk I/O error".into(),
        },
    );
    // It may have leased both rows until tick 20.
    claim(&mut run, 20, 1, 30, &[]);
    run.clean();
    claim(&mut run, 21, 1, 31, &[]);
    run.only(Invariant::I1, "never claimed");
}

#[test]
fn without_leases_claims_are_not_judged() {
    let mut run = two_committed();
    claim(&mut run, 10, 0, 20, &[]);
    run.clean();
}

fn suspended(step: &str) -> Op {
    Op::Preempted {
        step: step.into(),
        point: "xShmLock READ1 shared unlock".into(),
        sql: None,
        meanwhile: Vec::new(),
    }
}

/// Row 1:0 committed by writer 0: its commit suspended at tick 4 (it may
/// have landed then, `[preempt]`) when `suspended_commit`, answered at
/// tick 9; worker 0's claim suspended at tick 5, unanswered; worker 1's
/// claim at tick 10 answers nothing.
fn landed_early(suspended_commit: bool) -> Run {
    let mut run = Run::new();
    run.claims = Some(Claims {
        limit: 2,
        lease_ticks: 10,
    });
    decide(&mut run, writer(0), 1, "a");
    insert(&mut run, writer(0), 1);
    if suspended_commit {
        run.push(writer(0), suspended("commit"));
    }
    at(&mut run, 5, 0, suspended("claim"));
    let commit = Op::Commit {
        appended: vec![Appended {
            workflow_id: W.into(),
            expected_seq: 0,
            seq: 1,
            kind: "a".into(),
            state: String::new(),
            command_ids: vec![row(1)],
        }],
    };
    run.events.push(TraceEvent {
        tick: 9,
        actor: writer(0),
        op: commit,
    });
    claim(&mut run, 10, 1, 20, &[]);
    run
}

/// A commit suspended after it landed answers later: a claim suspended
/// in between may hold the row, unseen, and a claim that answers without
/// it is no finding. Had the commit not been suspended, that claim began
/// before the row existed, and the row was certainly claimable.
#[test]
fn a_row_whose_commit_was_suspended_may_be_held_by_a_claim_suspended_since() {
    landed_early(true).clean();
    landed_early(false).only(
        Invariant::I1,
        "left out trip-1:1:0 (never claimed, committed at tick 9)",
    );
}
