//! I11 backups: every backup that completed (`[backup]`) is a state the
//! store was in, holding everything acknowledged before it began.
//!
//! Judged on the backup's own file, read after the run (`sim::BackupFile`),
//! against the trace, never on the store's word that it backed up:
//!
//! - its `integrity_check` passes;
//! - every append acknowledged to a writer before the backup began, and
//!   every row acknowledged as marked done, is in it (unless a power cut
//!   between the acknowledgement and the backup took it from the store
//!   itself: I9's finding, not the backup's);
//! - it is a state the store was in: each workflow's events run 1..n with
//!   no gap, each one a commit the trace or a dump of the store shows, with
//!   every command its append emitted, and every outbox row has its event.
//!
//! A backup a later power cut reached on settings that promise no
//! durability may have lost what it held: it is not judged.

use std::collections::{BTreeMap, BTreeSet};

use super::{History, Input, Invariant, Violation};
use crate::model::Shown;
use crate::sim::BackupFile;
use crate::trace::Op;

/// Where a backup sits in the trace: its `Op::Backup` and `Op::BackedUp`.
struct Span {
    began: usize,
    began_tick: u64,
    done: usize,
}

fn span(input: &Input<'_>, n: u32) -> Option<Span> {
    let mut began = None;
    for (index, event) in input.events.iter().enumerate() {
        match event.op {
            Op::Backup { n: m } if m == n => began = Some((index, event.tick)),
            Op::BackedUp { n: m } if m == n => {
                let (began, began_tick) = began?;
                return Some(Span {
                    began,
                    began_tick,
                    done: index,
                });
            }
            _ => {}
        }
    }
    None
}

pub fn check(input: &Input<'_>, history: &History<'_>) -> Vec<Violation> {
    input
        .backups
        .iter()
        .flat_map(|backup| judge(input, history, backup))
        .collect()
}

fn judge(input: &Input<'_>, history: &History<'_>, backup: &BackupFile) -> Vec<Violation> {
    let Some(span) = span(input, backup.n) else {
        return Vec::new();
    };
    let cut_after = |from: usize, to: usize| history.cuts.iter().any(|(at, _, _)| *at > from && *at < to);
    if !input.durable.store && cut_after(span.done, usize::MAX) {
        return Vec::new();
    }
    let name = format!("backup #{} (begun at tick {})", backup.n, span.began_tick);
    let at = |violation: Violation| violation.ticks([span.began_tick]);
    let snapshot = &backup.snapshot;
    if snapshot.store_integrity != "ok" {
        let message = format!("{name}: integrity_check of the backup: {}", snapshot.store_integrity);
        return vec![at(Violation::new(Invariant::I11, message))];
    }
    let mut violations = Vec::new();
    let held: BTreeSet<(&str, u64, &str)> = snapshot
        .events
        .iter()
        .map(|event| (event.workflow_id.as_str(), event.seq, event.kind.as_str()))
        .collect();
    let lacking: Vec<_> = history
        .commits
        .iter()
        .filter(|commit| commit.index < span.began && !cut_after(commit.index, span.began))
        .filter(|commit| {
            let append = commit.appended;
            let key = (append.workflow_id.as_str(), append.seq, append.kind.as_str());
            // A restore in between rolled it back: not the backup's to hold.
            let restored_away = history.restores_between(commit.index, span.began).any(|restored| {
                !restored
                    .events
                    .iter()
                    .any(|event| (event.workflow_id.as_str(), event.seq, event.kind.as_str()) == key)
            });
            !held.contains(&key) && !restored_away
        })
        .collect();
    if let Some(first) = lacking.first() {
        let append = first.appended;
        let message = format!(
            "{name} lacks {} append(s) acknowledged before it began, {}#{} ({}) first, acknowledged to {} at tick {}",
            lacking.len(),
            Shown(&append.workflow_id),
            append.seq,
            append.kind,
            first.actor,
            first.tick
        );
        let violation = Violation::new(Invariant::I11, message)
            .workflow(&append.workflow_id)
            .seq(append.seq)
            .ticks([first.tick]);
        violations.push(at(violation));
    }
    let rows = snapshot.rows_by_id();
    let undone: Vec<_> = history
        .marked
        .iter()
        .filter(|(index, _)| *index < span.began && !cut_after(*index, span.began))
        .filter(|(index, command_id)| {
            !history.restores_between(*index, span.began).any(|restored| {
                !restored
                    .outbox
                    .iter()
                    .any(|row| row.command_id == *command_id && row.done)
            })
        })
        .filter(|(_, command_id)| !rows.get(command_id).is_some_and(|row| row.done))
        .collect();
    if let Some((index, command_id)) = undone.first() {
        let tick = input.events[*index].tick;
        let message = format!(
            "{name} holds {} row(s) acknowledged as marked done before it began as not done, {} first ({}, marked done at tick {tick})",
            undone.len(),
            Shown(command_id),
            match rows.contains_key(command_id) {
                true => "pending",
                false => "missing",
            }
        );
        violations.push(at(Violation::new(Invariant::I11, message)
            .command(command_id)
            .ticks([tick])));
    }
    violations.extend(state_of_the_store(input, history, &name, backup).into_iter().map(at));
    violations
}

/// The backup's rows against what the store ever held: no gap, no event
/// that never committed, no event without its commands, no row without
/// its event.
fn state_of_the_store(input: &Input<'_>, history: &History<'_>, name: &str, backup: &BackupFile) -> Vec<Violation> {
    let snapshot = &backup.snapshot;
    let mut violations = Vec::new();
    // Every (workflow, seq) the store is known to have committed, with its
    // kind where known, and the commands its append emitted.
    let mut committed: BTreeMap<(&str, u64), BTreeSet<&str>> = BTreeMap::new();
    let mut emitted: BTreeMap<(&str, u64), &[String]> = BTreeMap::new();
    for commit in &history.commits {
        let append = commit.appended;
        committed
            .entry((&append.workflow_id, append.seq))
            .or_default()
            .insert(&append.kind);
        emitted.insert((&append.workflow_id, append.seq), &append.command_ids);
    }
    let dumps = std::iter::once(input.snapshot).chain(
        input
            .recoveries
            .iter()
            .chain(input.restores)
            .map(|recovery| &recovery.snapshot),
    );
    for dump in dumps {
        for event in &dump.events {
            committed
                .entry((&event.workflow_id, event.seq))
                .or_default()
                .insert(&event.kind);
        }
    }
    let unknown: BTreeSet<(&str, u64)> = history.unacknowledged.iter().map(|(_, id, seq)| (*id, *seq)).collect();
    // On settings that promise no durability a commit the trace never
    // acknowledged may have been lost by a cut before any dump saw it.
    let lossy = !input.durable.store && !history.cuts.is_empty();
    let outbox: BTreeSet<&str> = snapshot.outbox.iter().map(|row| row.command_id.as_str()).collect();
    for (workflow_id, events) in snapshot.events_by_workflow() {
        for (expected, event) in (1..).zip(&events) {
            if event.seq != expected {
                let seqs: Vec<String> = events.iter().map(|event| event.seq.to_string()).collect();
                let message = format!(
                    "{name} holds {} with events {}: a gap at seq {expected}, never a state of its log",
                    Shown(workflow_id),
                    seqs.join(", ")
                );
                violations.push(Violation::new(Invariant::I11, message).workflow(workflow_id));
                break;
            }
        }
        for event in &events {
            let key = (workflow_id, event.seq);
            let known = committed
                .get(&key)
                .is_some_and(|kinds| kinds.contains(event.kind.as_str()));
            if !known && !unknown.contains(&key) && !lossy {
                let message = format!(
                    "{name} holds {}#{} ({}), which the store never committed",
                    Shown(workflow_id),
                    event.seq,
                    event.kind
                );
                violations.push(
                    Violation::new(Invariant::I11, message)
                        .workflow(workflow_id)
                        .seq(event.seq),
                );
                continue;
            }
            let missing: Vec<&String> = emitted
                .get(&key)
                .into_iter()
                .flat_map(|ids| ids.iter())
                .filter(|id| !outbox.contains(id.as_str()))
                .collect();
            if let Some(first) = missing.first() {
                let message = format!(
                    "{name} holds {}#{} ({}) without {} of its command(s), {} first: not a state the store was in",
                    Shown(workflow_id),
                    event.seq,
                    event.kind,
                    missing.len(),
                    Shown(first)
                );
                violations.push(Violation::new(Invariant::I11, message).command(first).seq(event.seq));
            }
        }
    }
    let events: BTreeSet<(&str, u64)> = snapshot
        .events
        .iter()
        .map(|event| (event.workflow_id.as_str(), event.seq))
        .collect();
    if let Some(row) = snapshot
        .outbox
        .iter()
        .find(|row| !events.contains(&(row.workflow_id.as_str(), row.event_seq)))
    {
        let message = format!(
            "{name} holds the outbox row {} without its event {}#{}: not a state the store was in",
            Shown(&row.command_id),
            Shown(&row.workflow_id),
            row.event_seq
        );
        violations.push(Violation::new(Invariant::I11, message).command(&row.command_id));
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{Fixture, clean};
    use super::*;
    use crate::actors::ActorId;
    use crate::model::StoredEvent;

    /// The clean run with one backup taken after its last commit, holding
    /// what `edit` leaves of the final state's store part.
    fn backed_up(edit: impl FnOnce(&mut crate::store::Snapshot)) -> Fixture {
        let mut fixture = clean();
        fixture.push(ActorId::SIM, Op::Backup { n: 1 });
        fixture.push(ActorId::SIM, Op::BackedUp { n: 1 });
        let mut snapshot = fixture.snapshot.clone();
        edit(&mut snapshot);
        fixture.backups.push(BackupFile { n: 1, snapshot });
        fixture
    }

    fn i11(fixture: &Fixture) -> Vec<String> {
        let violations = fixture.violations();
        assert!(
            violations.iter().all(|violation| violation.invariant == Invariant::I11),
            "{violations:#?}"
        );
        violations.into_iter().map(|violation| violation.message).collect()
    }

    #[test]
    fn a_copy_of_the_store_as_it_was_holds() {
        assert_eq!(i11(&backed_up(|_| {})), Vec::<String>::new());
    }

    #[test]
    fn a_backup_taken_before_any_commit_may_be_empty() {
        let mut fixture = clean();
        fixture.events.insert(
            0,
            crate::trace::TraceEvent {
                tick: 0,
                actor: ActorId::SIM,
                op: Op::Backup { n: 1 },
            },
        );
        fixture.events.insert(
            1,
            crate::trace::TraceEvent {
                tick: 0,
                actor: ActorId::SIM,
                op: Op::BackedUp { n: 1 },
            },
        );
        let snapshot = crate::store::Snapshot {
            store_integrity: "ok".into(),
            ..Default::default()
        };
        fixture.backups.push(BackupFile { n: 1, snapshot });
        assert_eq!(i11(&fixture), Vec::<String>::new());
    }

    #[test]
    fn an_acknowledged_append_missing_from_the_backup_is_named() {
        let messages = i11(&backed_up(|snapshot| {
            let last = snapshot.events.pop().expect("events");
            snapshot
                .outbox
                .retain(|row| (row.workflow_id.as_str(), row.event_seq) != (last.workflow_id.as_str(), last.seq));
        }));
        assert_eq!(messages.len(), 1, "{messages:#?}");
        assert!(
            messages[0].contains("lacks 1 append(s) acknowledged before it began"),
            "{}",
            messages[0]
        );
        assert!(messages[0].contains("acknowledged to writer-0"), "{}", messages[0]);
    }

    #[test]
    fn a_gap_an_event_that_never_committed_and_a_row_without_its_event_are_no_state_of_the_store() {
        let messages = i11(&backed_up(|snapshot| {
            let first = snapshot.events.remove(0);
            snapshot.events.push(StoredEvent {
                workflow_id: first.workflow_id.clone(),
                seq: 99,
                kind: "invented".into(),
                payload: "{}".into(),
            });
        }));
        let all = messages.join("\n");
        assert!(all.contains("a gap at seq 1"), "{all}");
        assert!(all.contains("#99 (invented), which the store never committed"), "{all}");
        assert!(all.contains("without its event"), "{all}");
    }

    #[test]
    fn an_event_without_its_commands_is_named() {
        let messages = i11(&backed_up(|snapshot| {
            let first = snapshot.events[0].clone();
            snapshot
                .outbox
                .retain(|row| (row.workflow_id.as_str(), row.event_seq) != (first.workflow_id.as_str(), first.seq));
        }));
        assert!(
            messages.iter().any(|message| message.contains("of its command(s)")),
            "{messages:#?}"
        );
    }

    #[test]
    fn a_damaged_backup_is_judged_by_its_integrity_alone() {
        let messages = i11(&backed_up(|snapshot| {
            snapshot.events.clear();
            snapshot.store_integrity = "*** in database main *** Page 3: btreeInitPage() returns error code 11".into();
        }));
        assert_eq!(messages.len(), 1, "{messages:#?}");
        assert!(messages[0].starts_with("backup #1 (begun at tick"), "{}", messages[0]);
        assert!(messages[0].contains("integrity_check of the backup"), "{}", messages[0]);
    }
}
