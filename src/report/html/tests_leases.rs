//! The page of a run with leases and pauses, on a hand-made result: a
//! worker claims two rows, pauses past its lease, and comes back to a row
//! another worker has claimed and acknowledged since (its late
//! acknowledgement is rejected) and to a row whose lease it lost. The
//! timeline shows the pause and both claims as spans, the commands table
//! each row's claims, lost lease and acknowledgements; the owner carries
//! markup, which must arrive escaped.

use super::facts::{AckFate, Facts, LeaseStep};
use super::seed_page;
use super::tests::{at, hostile_result, receiver, worker, writer};
use crate::check::{Invariant, Snapshot, Violation};
use crate::model::{OutboxRow, StoredEvent};
use crate::runner::SeedResult;
use crate::store::Outcome;
use crate::trace::{Appended, Claimed, Op};

const FIRST: &str = "w:1:0";
const SECOND: &str = "w:1:1";
/// A hostile owner label: it reaches the page through claims.
const OWNER: &str = "worker-0.0<i>\"";

fn claim(owner: &str, expires: u64, rows: &[(&str, u64)]) -> Op {
    Op::Claim {
        owner: owner.into(),
        expires,
        claimed: rows
            .iter()
            .map(|(command_id, token)| Claimed {
                command_id: (*command_id).into(),
                token: *token,
            })
            .collect(),
    }
}

fn mark_done(command_id: &str, changed: bool, token: u64) -> Op {
    Op::MarkDone {
        command_id: command_id.into(),
        changed,
        token: Some(token),
    }
}

fn send(command_id: &str) -> Op {
    Op::Send {
        command_id: command_id.into(),
        key: command_id.into(),
        to: receiver(0),
        attempt: 1,
    }
}

fn row(command_id: &str, done: bool) -> OutboxRow {
    OutboxRow {
        command_id: command_id.into(),
        workflow_id: "w".into(),
        event_seq: 1,
        kind: "lock_budget".into(),
        payload: "{}".into(),
        done,
        result: done.then(|| "{}".to_string()),
    }
}

fn leased_result() -> SeedResult {
    let events = vec![
        at(1, writer(0), Op::Begin),
        at(
            4,
            writer(0),
            Op::Commit {
                appended: vec![Appended {
                    workflow_id: "w".into(),
                    expected_seq: 0,
                    seq: 1,
                    kind: "trip_requested".into(),
                    state: "{}".into(),
                    command_ids: vec![FIRST.into(), SECOND.into()],
                }],
            },
        ),
        at(5, worker(0), claim(OWNER, 105, &[(FIRST, 1), (SECOND, 1)])),
        at(6, worker(0), send(FIRST)),
        at(7, worker(0), Op::Pause { ticks: 200 }),
        at(150, worker(1), claim("worker-1.0", 250, &[(FIRST, 2), (SECOND, 2)])),
        at(151, worker(1), send(FIRST)),
        at(
            155,
            worker(1),
            Op::Reply {
                key: FIRST.into(),
                outcome: Outcome::Applied { result: "{}".into() },
            },
        ),
        at(160, worker(1), mark_done(FIRST, true, 2)),
        at(
            207,
            worker(0),
            Op::Reply {
                key: FIRST.into(),
                outcome: Outcome::Duplicate { result: "{}".into() },
            },
        ),
        at(208, worker(0), mark_done(FIRST, false, 1)),
        at(
            209,
            worker(0),
            Op::LeaseLost {
                command_id: SECOND.into(),
                token: 1,
            },
        ),
    ];
    let snapshot = Snapshot {
        events: vec![StoredEvent {
            workflow_id: "w".into(),
            seq: 1,
            kind: "trip_requested".into(),
            payload: "{}".into(),
        }],
        outbox: vec![row(FIRST, true), row(SECOND, false)],
        ..hostile_result().snapshot.expect("a snapshot")
    };
    SeedResult {
        scenario: "leases".into(),
        violations: vec![Violation::new(Invariant::I8, format!("{FIRST}: a late acknowledgement")).command(FIRST)],
        ticks: 260,
        events: Some(events),
        snapshot: Some(snapshot),
        ..hostile_result()
    }
}

#[test]
fn facts_list_each_rows_lease_steps_in_trace_order() {
    let result = leased_result();
    let snapshot = result.snapshot.as_ref().unwrap();
    let facts = Facts::new(result.events.as_deref().unwrap(), snapshot, &result.violations);
    assert!(facts.leased);
    let steps = &facts.commands[FIRST].leases;
    assert_eq!(steps.len(), 4, "{steps:?}");
    assert!(matches!(
        steps[0],
        LeaseStep::Claimed {
            tick: 5,
            owner: OWNER,
            token: 1,
            expires: 105,
            ..
        }
    ));
    assert!(matches!(steps[1], LeaseStep::Claimed { token: 2, .. }));
    assert!(matches!(
        steps[2],
        LeaseStep::Acked {
            token: 2,
            changed: true,
            ..
        }
    ));
    assert!(matches!(
        steps[3],
        LeaseStep::Acked {
            tick: 208,
            token: 1,
            changed: false,
            ..
        }
    ));
    assert!(matches!(
        facts.commands[SECOND].leases.last(),
        Some(LeaseStep::Lost {
            tick: 209,
            token: 1,
            ..
        })
    ));
}

#[test]
fn the_timeline_shows_pauses_and_leases_as_spans() {
    let page = seed_page(&leased_result(), "crashsim replay leases --seed 7");
    assert_eq!(page.matches("<g class=\"span pause\">").count(), 1, "one pause");
    assert_eq!(page.matches("<g class=\"span lease\">").count(), 2, "two claims");
    assert!(page.contains("ticks 7–207: paused (connection and memory kept)"));
    assert!(page.contains("paused for 200 ticks, to tick 207"));
    // A claim runs to its expiry, its rows and tokens in the tooltip.
    assert!(page.contains("ticks 5–105: lease held (claim → expiry)"));
    assert!(page.contains("worker-0.0&lt;i&gt;&quot; claimed until tick 105:\nw:1:0 token=1\nw:1:1 token=1"));
    assert!(page.contains("ticks 150–250: lease held"));
    // The rejected acknowledgement has a mark of its own, and the legend says so.
    assert!(page.contains("<rect class=\"lateack\""));
    assert!(page.contains("acknowledgement with a token rejected (late, or done already)"));
    assert!(page.contains("</i>paused (connection and memory kept)</span>"));
    assert!(!page.contains(OWNER), "the owner reaches the page escaped");
}

#[test]
fn each_command_row_lists_claims_lost_leases_and_acknowledgements() {
    let page = seed_page(&leased_result(), "crashsim replay leases --seed 7");
    assert!(page.contains("<th>leases</th>"));
    assert!(page.contains("tick 5: claimed by worker-0.0&lt;i&gt;&quot;, token 1, until 105</span>"));
    assert!(page.contains("tick 150: claimed by worker-1.0, token 2, until 250</span>"));
    assert!(
        page.contains("<span class=\"sub ack-accepted ok\">tick 160: ack by worker-1 with token 2 accepted</span>")
    );
    assert!(page.contains(
        "<span class=\"sub ack-rejected warn\">tick 208: ack by worker-0 with token 1 rejected as late</span>"
    ));
    assert!(page.contains("<span class=\"sub lease-lost warn\">tick 209: worker-0 lost the lease (token 1)"));
    assert!(page.contains("1 late ack(s) rejected"));
    assert!(!page.contains("stale ack(s) counted"));
    assert_eq!(page, seed_page(&leased_result(), "crashsim replay leases --seed 7"));
}

#[test]
fn a_run_without_leases_shows_no_lease_column_or_spans() {
    let page = seed_page(&hostile_result(), "crashsim replay x --seed 7");
    assert!(!page.contains("<th>leases</th>"));
    assert!(!page.contains("class=\"span "));
    assert!(!page.contains("lease held"));
}

/// Without fencing (the `unfenced_mark_done` mistake) the stale holder's
/// acknowledgement counts and the current holder's changes nothing: the row
/// says so, rather than calling the current holder late.
#[test]
fn a_stale_acknowledgement_that_counted_is_called_out() {
    let mut result = leased_result();
    let events = result.events.as_mut().unwrap();
    for event in events.iter_mut() {
        if let Op::MarkDone { changed, token, .. } = &mut event.op {
            *changed = *token == Some(1);
        }
    }
    let snapshot = result.snapshot.as_ref().unwrap();
    let facts = Facts::new(result.events.as_deref().unwrap(), snapshot, &result.violations);
    assert_eq!(
        facts.commands[FIRST].ack_fates(),
        [None, None, Some(AckFate::Unchanged), Some(AckFate::StaleCounted)]
    );
    let page = seed_page(&result, "crashsim replay leases --seed 7");
    assert!(page.contains(
        "<span class=\"sub ack-stale-counted bad\">tick 208: ack by worker-0 with token 1 counted although stale"
    ));
    assert!(page.contains("tick 160: ack by worker-1 with token 2 changed nothing (done already)"));
    assert!(page.contains("1 stale ack(s) counted"));
}

/// A call suspended inside SQLite (`[preempt]`) is a strip on its actor's
/// lane from the suspension to the actor's next line, its point in the
/// label and what came next in the tooltip; the legend names it.
#[test]
fn the_timeline_shows_a_suspended_call_as_a_span() {
    let mut result = leased_result();
    let events = result.events.as_mut().unwrap();
    let suspended = Op::Preempted {
        step: "mark_done".into(),
        point: "xShmLock WRITE<".into(),
        sql: Some("UPDATE outbox SET processed_at = ? WHERE command_id = ?".into()),
        meanwhile: vec![crate::trace::Ran {
            actor: worker(0),
            tick: 158,
            sql: "DELETE FROM leases WHERE k = '<'".into(),
        }],
    };
    events.insert(8, at(156, worker(1), suspended));
    let page = seed_page(&result, "crashsim replay leases --seed 7");
    assert_eq!(page.matches("<g class=\"span suspended\">").count(), 1);
    assert!(
        page.contains("ticks 156–160: call suspended inside SQLite (others run)"),
        "{page}"
    );
    assert!(
        page.contains(
            "its mark_done suspended at xShmLock WRITE&lt; in `UPDATE outbox SET processed_at = ? WHERE \
             command_id = ?` while other actors ran (meanwhile worker-0 at tick 158: `DELETE FROM leases \
             WHERE k = &#39;&lt;&#39;`); then: "
        ),
        "{page}"
    );
    assert!(page.contains("</i>call suspended inside SQLite (others run)</span>"));
    assert!(!page.contains("WRITE<"), "the point reaches the page escaped");
}
