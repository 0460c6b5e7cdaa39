//! The page of a run with retry timers and clock faults, on a hand-made
//! result: a worker whose clock is skewed (+7) and later stepped (−12 → −5)
//! is refused once by the receiver and stores a retry timer; its second
//! attempt's confirmed reply is replaced by the network with an error, and
//! the command is dead-lettered; the receiver purges de-dup records. The
//! timeline shows the skew as a lane badge, the step, the backoff span, the
//! dead letter and the purge; the commands table each step and a dead letter
//! that waits for a person. Errors carry markup, which must arrive escaped;
//! a page without these ops shows none of it.

use super::facts::{Facts, RetryStep};
use super::seed_page;
use super::tests::{at, hostile_result, receiver, worker, writer};
use crate::check::{Invariant, Snapshot, Violation};
use crate::model::{OutboxRow, StoredEvent};
use crate::runner::SeedResult;
use crate::store::Outcome;
use crate::trace::{Appended, Op};

const CMD: &str = "w:1:0";
/// A hostile error: it reaches the page through refusals, timers and the dead letter.
const REFUSED: &str = "<b>503</b> \"busy\"";
const REPLACED: &str = "gateway <timeout> & 'lost'";

fn send() -> Op {
    Op::Send {
        command_id: CMD.into(),
        key: CMD.into(),
        to: receiver(0),
        attempt: 1,
    }
}

fn retryable(error: &str) -> Op {
    Op::Reply {
        key: CMD.into(),
        outcome: Outcome::Retryable { error: error.into() },
    }
}

fn timed_result() -> SeedResult {
    let events = vec![
        at(0, worker(0), Op::Skew { offset: 7 }),
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
                    command_ids: vec![CMD.into()],
                }],
            },
        ),
        at(5, worker(0), send()),
        at(
            6,
            receiver(0),
            Op::Refuse {
                key: CMD.into(),
                from: worker(0),
                error: REFUSED.into(),
                poison: false,
            },
        ),
        at(8, worker(0), retryable(REFUSED)),
        at(
            9,
            worker(0),
            Op::RetryScheduled {
                command_id: CMD.into(),
                attempt: 1,
                next_at: 40,
                error: REFUSED.into(),
                token: None,
            },
        ),
        at(30, worker(0), Op::ClockStep { by: -12, offset: -5 }),
        at(41, worker(0), send()),
        at(
            43,
            receiver(0),
            Op::ReplyReplaced {
                key: CMD.into(),
                to: worker(0),
                error: REPLACED.into(),
            },
        ),
        at(45, worker(0), retryable(REPLACED)),
        at(
            46,
            worker(0),
            Op::DeadLettered {
                command_id: CMD.into(),
                attempts: 2,
                error: REPLACED.into(),
            },
        ),
        at(60, receiver(0), Op::DedupPurged { before: 10, removed: 3 }),
    ];
    let snapshot = Snapshot {
        events: vec![StoredEvent {
            workflow_id: "w".into(),
            seq: 1,
            kind: "trip_requested".into(),
            payload: "{}".into(),
        }],
        outbox: vec![OutboxRow {
            command_id: CMD.into(),
            workflow_id: "w".into(),
            event_seq: 1,
            kind: "lock_budget".into(),
            payload: "{}".into(),
            done: false,
            result: None,
        }],
        ..hostile_result().snapshot.expect("a snapshot")
    };
    SeedResult {
        scenario: "retries".into(),
        violations: vec![Violation::new(Invariant::I1, format!("{CMD}: dead-lettered early")).command(CMD)],
        ticks: 70,
        events: Some(events),
        snapshot: Some(snapshot),
        ..hostile_result()
    }
}

fn page() -> String {
    seed_page(&timed_result(), "crashsim replay retries --seed 0")
}

#[test]
fn facts_list_each_commands_retry_steps_in_trace_order() {
    let result = timed_result();
    let snapshot = result.snapshot.as_ref().unwrap();
    let facts = Facts::new(result.events.as_deref().unwrap(), snapshot, &result.violations);
    assert!(facts.retried);
    let command = &facts.commands[CMD];
    let steps = &command.retries;
    assert_eq!(steps.len(), 4, "{steps:?}");
    assert!(matches!(
        steps[0],
        RetryStep::Refused {
            tick: 6,
            poison: false,
            ..
        }
    ));
    assert!(matches!(
        steps[1],
        RetryStep::Scheduled {
            tick: 9,
            attempt: 1,
            next_at: 40,
            ..
        }
    ));
    assert!(matches!(steps[2], RetryStep::Replaced { tick: 43, .. }));
    assert_eq!(command.dead_letter(), Some((46, 2, REPLACED)));
    assert_eq!(command.status(), ("dead-lettered", "manual"));
}

#[test]
fn the_timeline_shows_clock_faults_backoffs_dead_letters_and_purges() {
    let page = page();
    // The skew and the step: a badge on the worker's lane label, a mark per step.
    assert_eq!(
        page.matches("<tspan class=\"clocktext\">").count(),
        1,
        "one skewed actor"
    );
    assert!(page.contains("<tspan class=\"clocktext\">clock +7 → −5<title>worker-0&#39;s clock reads"));
    assert!(page.contains("<rect class=\"clockstep\""));
    assert!(page.contains("· 30 clock stepped −12 → offset −5</title>"));
    // The backoff: a span from the failure to its timer, command and attempt in its tooltip.
    assert_eq!(page.matches("<g class=\"span backoff\">").count(), 1);
    assert!(page.contains("worker-0 · ticks 9–40: retry backoff (failure → timer due)"));
    assert!(page.contains("w:1:0: attempt 1 failed (&lt;b&gt;503&lt;/b&gt; &quot;busy&quot;); timer due at tick 40"));
    // The dead letter and the purge: marks of their own.
    assert!(page.contains("<rect class=\"deadletter\""));
    assert!(page.contains("<rect class=\"purge\""));
    assert!(page.contains("receiver-0 · 60 purge de-dup records applied before tick 10: 3 deleted</title>"));
    // The legend lists them because the run has them.
    for name in [
        "retry backoff (failure → timer due)</span>",
        "dead-lettered: waits for a person, never done</span>",
        "de-dup records purged by the receiver</span>",
        "clock stepped (NTP-like)</span>",
    ] {
        assert!(page.contains(&format!("</i>{name}")), "legend: {name}");
    }
}

#[test]
fn the_command_row_lists_attempts_replaced_replies_and_the_dead_letter() {
    let page = page();
    assert!(page.contains("<th>retries</th>"));
    assert!(page.contains("<span class=\"badge manual\">dead-lettered</span>"));
    assert!(page.contains(
        "<span class=\"sub retry-refused warn\">tick 6: refused by receiver-0: &lt;b&gt;503&lt;/b&gt; &quot;busy&quot;</span>"
    ));
    assert!(page.contains(
        "attempt 1 failed at tick 9: &lt;b&gt;503&lt;/b&gt; &quot;busy&quot;; backoff → due at tick 40 (worker-0)"
    ));
    assert!(page.contains(
        "tick 43: receiver-0&#39;s confirmed reply to worker-0 replaced by the network: \
         gateway &lt;timeout&gt; &amp; &#39;lost&#39; (the effect is committed)"
    ));
    assert!(page.contains(
        "<span class=\"sub dead-letter manual\">tick 46: dead-lettered after 2 attempts: \
         gateway &lt;timeout&gt; &amp; &#39;lost&#39; (waiting for a person; never done)</span>"
    ));
    assert!(page.contains("<td><span class=\"manual\">dead-lettered: waiting for a person</span></td>"));
    // Never drawn as done, nor as merely pending.
    assert!(!page.contains("<span class=\"badge ok\">ok</span>"));
    assert!(!page.contains("<span class=\"badge warn\">pending</span>"));
    assert!(
        !page.contains(REFUSED) && !page.contains(REPLACED),
        "errors reach the page escaped"
    );
    assert_eq!(page, self::page(), "the same result gives the same bytes");
}

#[test]
fn a_run_without_timers_or_clock_faults_shows_none_of_it() {
    let whole = seed_page(&hostile_result(), "crashsim replay x --seed 7");
    // The header quotes the broken invariants' rules, which name retries.
    let (_header, page) = whole.split_once("</header>").expect("a header");
    for absent in [
        "<th>retries</th>",
        "<tspan class=\"clocktext\">",
        "<rect class=\"clockstep\"",
        "<g class=\"span backoff\">",
        "<rect class=\"deadletter\"",
        "<rect class=\"purge\"",
        "retry backoff",
        "dead-lettered",
        "de-dup records purged",
        "clock stepped",
    ] {
        assert!(!page.contains(absent), "{absent}");
    }
}
