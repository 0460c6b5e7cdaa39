//! The page on hand-made results: escaping, self-containment, kill
//! attribution, and the sections a reader relies on.

use super::facts::{Facts, TxEnd};
use super::seed_page;
use crate::actors::{ActorId, Role};
use crate::check::snapshot::Effect;
use crate::check::{Invariant, Snapshot, Violation};
use crate::model::{OutboxRow, StoredEvent};
use crate::runner::SeedResult;
use crate::store::Outcome;
use crate::trace::{Appended, Op, TraceEvent};

pub(super) fn writer(index: u32) -> ActorId {
    ActorId::new(Role::Writer, index)
}

pub(super) fn worker(index: u32) -> ActorId {
    ActorId::new(Role::Worker, index)
}

pub(super) fn receiver(index: u32) -> ActorId {
    ActorId::new(Role::Receiver, index)
}

pub(super) fn at(tick: u64, actor: ActorId, op: Op) -> TraceEvent {
    TraceEvent { tick, actor, op }
}

/// A small run of workflow `w` whose first event committed with its command
/// `w:1:0`, which was delivered and applied; then a writer killed before
/// commit while holding `w:2:0`. Ids and payloads carry markup and quotes.
pub(super) fn hostile_result() -> SeedResult {
    let workflow = "t<\"x\">";
    let command = format!("{workflow}:1:0");
    let second = format!("{workflow}:2:0");
    let payload = r#"{"city":"<script>alert('x')</script>&"}"#;
    let events = vec![
        at(
            0,
            writer(0),
            Op::Open {
                incarnation: 0,
                synchronous: Some(2),
            },
        ),
        at(1, writer(0), Op::Begin),
        at(
            2,
            writer(0),
            Op::InsertEvent {
                workflow_id: workflow.into(),
                expected_seq: 0,
                seq: 1,
            },
        ),
        at(
            3,
            writer(0),
            Op::InsertCommand {
                command_id: command.clone(),
            },
        ),
        at(
            4,
            writer(0),
            Op::Commit {
                appended: vec![Appended {
                    workflow_id: workflow.into(),
                    expected_seq: 0,
                    seq: 1,
                    kind: "trip_requested".into(),
                    state: "{}".into(),
                    command_ids: vec![command.clone()],
                }],
            },
        ),
        at(
            5,
            worker(0),
            Op::Send {
                command_id: command.clone(),
                key: command.clone(),
                to: receiver(0),
                attempt: 1,
            },
        ),
        at(
            6,
            receiver(0),
            Op::Receive {
                key: command.clone(),
                from: worker(0),
            },
        ),
        at(
            7,
            receiver(0),
            Op::Apply {
                key: command.clone(),
                effect_id: 1,
                result: r#"{"token":"</title><b>"}"#.into(),
            },
        ),
        at(
            8,
            worker(0),
            Op::Reply {
                key: command.clone(),
                outcome: Outcome::Applied {
                    result: r#"{"token":"</title><b>"}"#.into(),
                },
            },
        ),
        at(
            9,
            worker(0),
            Op::Kill {
                point: "worker.after_deliver".into(),
            },
        ),
        at(10, writer(1), Op::Begin),
        at(
            11,
            writer(1),
            Op::InsertEvent {
                workflow_id: workflow.into(),
                expected_seq: 1,
                seq: 2,
            },
        ),
        at(
            12,
            writer(1),
            Op::InsertCommand {
                command_id: second.clone(),
            },
        ),
        at(
            13,
            writer(1),
            Op::Kill {
                point: "writer.before_commit".into(),
            },
        ),
        at(40, writer(1), Op::Restart { incarnation: 1 }),
    ];
    let snapshot = Snapshot {
        events: vec![StoredEvent {
            workflow_id: workflow.into(),
            seq: 1,
            kind: "trip_requested".into(),
            payload: payload.into(),
        }],
        outbox: vec![OutboxRow {
            command_id: command.clone(),
            workflow_id: workflow.into(),
            event_seq: 1,
            kind: "lock_budget".into(),
            payload: r#"{"trip_id":"t<\"x\">"}"#.into(),
            done: false,
            result: None,
        }],
        effects: vec![Effect {
            effect_id: 1,
            key: command.clone(),
            kind: "lock_budget".into(),
            payload: r#"{"trip_id":"t<\"x\">"}"#.into(),
            result: r#"{"token":"</title><b>"}"#.into(),
        }],
        dedup: Vec::new(),
        timers: Vec::new(),
        store_integrity: "ok".into(),
        receiver_integrity: "ok".into(),
        unreadable: None,
    };
    SeedResult {
        scenario: "hostile<&>".into(),
        seed: 7,
        ok: false,
        violations: vec![
            Violation::new(
                Invariant::I1,
                format!("{command} was never marked done <script>\"{{}}\""),
            )
            .command(&command),
        ],
        trace_hash: "0123456789abcdef".into(),
        steps: 15,
        ticks: 40,
        settled: false,
        faults: "writer.before_commit=1/30 net.drop=1/50".into(),
        kills: Default::default(),
        exercised: Default::default(),
        backups: Default::default(),
        injected: Vec::new(),
        fault_points: None,
        suspension_steps: Vec::new(),
        events: Some(events),
        snapshot: Some(snapshot),
        artifacts: Vec::new(),
        kept_dir: None,
    }
}

#[test]
fn run_text_is_escaped_everywhere() {
    let page = seed_page(&hostile_result(), "crashsim replay 'a b' --seed 7");
    for raw in ["<script>alert", "</title><b>", "t<\"x\">", "hostile<&>", "alert('x')"] {
        assert!(!page.contains(raw), "{raw:?} reached the page unescaped");
    }
    assert!(
        page.contains("t&lt;&quot;x&quot;&gt;:1:0"),
        "the command id is shown, escaped"
    );
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;"));
    assert!(page.contains("crashsim replay &#39;a b&#39; --seed 7"));
    // The only script is the page's own one-liner and copy button.
    assert_eq!(page.matches("<script>").count(), 1);
}

#[test]
fn page_is_self_contained() {
    let page = seed_page(&hostile_result(), "crashsim replay x --seed 7");
    for external in [
        "http://", "https://", "<link", "@import", " src=", "url(http", "//fonts.",
    ] {
        assert!(
            !page.contains(external),
            "page refers to something outside: {external:?}"
        );
    }
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.trim_end().ends_with("</html>"));
}

#[test]
fn page_has_every_section_and_is_deterministic() {
    let result = hostile_result();
    let page = seed_page(&result, "crashsim replay x --seed 7");
    for section in [
        "id=\"violations\"",
        "id=\"v1\"",
        "id=\"timeline\"",
        "id=\"commands\"",
        "<svg",
        "Expected vs found",
        "writer.before_commit",
        "worker.after_deliver",
        "0123456789abcdef",
    ] {
        assert!(page.contains(section), "missing {section:?}");
    }
    assert_eq!(page, seed_page(&result, "crashsim replay x --seed 7"));
}

#[test]
fn a_result_without_trace_or_snapshot_still_renders() {
    let mut result = hostile_result();
    result.events = None;
    result.snapshot = None;
    let page = seed_page(&result, "crashsim replay x --seed 7");
    assert!(page.contains("No trace was kept"));
    assert!(page.contains("id=\"v1\""));
}

#[test]
fn kills_are_attributed_to_what_the_actor_had_in_hand() {
    let result = hostile_result();
    let events = result.events.as_deref().unwrap();
    let snapshot = result.snapshot.as_ref().unwrap();
    let facts = Facts::new(events, snapshot, &result.violations);
    assert_eq!(facts.kills.len(), 2);

    // The worker had the reply in hand: the kill is its delivery's.
    let worker_kill = &facts.kills[0];
    assert_eq!(worker_kill.point, "worker.after_deliver");
    assert_eq!(worker_kill.commands, vec!["t<\"x\">:1:0".to_string()]);
    assert_eq!(worker_kill.back, None);

    // The writer's open transaction held event #2 and its command.
    let writer_kill = &facts.kills[1];
    assert_eq!(writer_kill.point, "writer.before_commit");
    assert_eq!(writer_kill.commands, vec!["t<\"x\">:2:0".to_string()]);
    assert_eq!(writer_kill.events, vec![("t<\"x\">".to_string(), 2)]);
    assert_eq!(writer_kill.back, Some(40));
    let second = &facts.commands["t<\"x\">:2:0"];
    assert!(matches!(
        second.inserts[0].end,
        TxEnd::Killed {
            tick: 13,
            point: "writer.before_commit"
        }
    ));
    // It never reached a database, so it is not listed; the first command is,
    // with its violation, delivery, effect and kill.
    assert!(!second.shown());
    let first = &facts.commands["t<\"x\">:1:0"];
    assert!(first.shown());
    assert_eq!(first.violations, vec![0]);
    assert_eq!(
        (first.deliveries.len(), first.effects.len(), first.kills.len()),
        (1, 1, 1)
    );
    assert_eq!(first.commits.len(), 1);
    assert_eq!(first.status().0, "pending");
}

#[test]
fn a_worker_between_deliveries_has_nothing_in_hand() {
    let command = "w:1:0".to_string();
    let events = vec![
        at(
            1,
            worker(0),
            Op::MarkDone {
                command_id: command.clone(),
                changed: true,
                token: None,
            },
        ),
        at(
            2,
            worker(0),
            Op::Kill {
                point: "worker.before_deliver".into(),
            },
        ),
        at(
            3,
            worker(1),
            Op::Timeout {
                key: command.clone(),
                attempt: 1,
            },
        ),
        at(
            4,
            worker(1),
            Op::Kill {
                point: "worker.before_deliver".into(),
            },
        ),
    ];
    let snapshot = Snapshot::default();
    let facts = Facts::new(&events, &snapshot, &[]);
    assert!(
        facts.kills[0].commands.is_empty(),
        "the finished delivery is not in hand"
    );
    assert_eq!(facts.kills[1].commands, vec![command], "a resend after a timeout is");
}

#[test]
fn a_kill_after_both_effects_is_not_blamed_for_a_duplicate() {
    // The worker is killed at tick 9, after the effect at tick 7.
    let mut result = hostile_result();
    let command = "t<\"x\">:1:0";
    let blamed = |result: &SeedResult| seed_page(result, "crashsim replay x --seed 7").contains("that interrupted it");
    assert!(blamed(&result), "the I1 of the fixture names the kill after its send");
    result.violations = vec![
        Violation::new(Invariant::I2, format!("{command} took effect 2 times"))
            .command(command)
            .ticks([5, 7]),
    ];
    assert!(!blamed(&result), "a kill after the effects is no cause of them");
    result.violations[0].ticks = vec![5, 9];
    assert!(blamed(&result), "a kill up to the last effect may be");
}

#[test]
fn a_duplicate_shows_the_lookups_that_raced() {
    let mut result = hostile_result();
    let command = "t<\"x\">:1:0";
    let events = result.events.as_mut().unwrap();
    for (position, index) in [(6, 0), (7, 1)] {
        events.insert(
            position,
            at(
                6,
                receiver(index),
                Op::Lookup {
                    key: command.into(),
                    found: crate::store::Lookup::New,
                },
            ),
        );
    }
    result.violations = vec![
        Violation::new(Invariant::I2, format!("{command} took effect 2 times"))
            .command(command)
            .ticks([7]),
    ];
    let page = seed_page(&result, "crashsim replay x --seed 7");
    assert_eq!(
        page.matches("lookup &quot;t&lt;\\&quot;x\\&quot;&gt;:1:0&quot;: new")
            .count(),
        2,
        "both lookups are among the violation's trace lines"
    );
}

#[test]
fn a_failing_page_says_the_next_steps_and_what_each_broken_invariant_requires() {
    let result = hostile_result();
    let steps = crate::report::NextSteps {
        replay: "crashsim replay x --seed 7",
        shrink: Some("crashsim shrink x --seed 7"),
    };
    let page = seed_page(&result, steps);
    assert!(
        page.contains("id=\"shrink\">crashsim shrink x --seed 7</pre>"),
        "no shrink command"
    );
    for invariant in result.violations.iter().map(|violation| violation.invariant) {
        let rule = super::header::rule(invariant).expect("docs/protocol.md states the rule");
        let first_words: String = rule.chars().take(12).collect();
        assert!(
            page.contains(&format!("<th>{invariant} requires</th>")),
            "{invariant} not explained"
        );
        assert!(
            page.contains(&*super::text::esc(&first_words)),
            "{invariant}'s rule not quoted"
        );
    }
    // Without a shrink command (a shrunk seed's page) the row is left out.
    assert!(!seed_page(&result, "crashsim replay x --seed 7").contains("id=\"shrink\""));
}

#[test]
fn docs_protocol_states_the_rule_of_every_invariant_the_checkers_judge() {
    for invariant in Invariant::ALL {
        let rule = super::header::rule(invariant);
        match invariant {
            Invariant::A1 | Invariant::D1 => assert!(rule.is_none()),
            _ => assert!(rule.is_some_and(|rule| rule.len() > 20), "{invariant} has no row"),
        }
    }
}
