//! Renders trace events as aligned lines for people:
//! `   812  writer-3   insert_event trip-007 expected_seq=2 seq=3`.

use crate::model::Shown;
use std::fmt::Write;

use super::event::{Loaded, Op, TraceEvent};
use crate::store::{Lookup, Outcome};

/// One event as a human line.
pub fn line(event: &TraceEvent) -> String {
    format!(
        "{:>8}  {:<12} {}",
        event.tick,
        event.actor.to_string(),
        describe(&event.op)
    )
}

/// A `load` answer as `seq:kind` in the store's order, an event of
/// another workflow as `workflow#seq:kind`.
pub fn loaded(events: &[Loaded]) -> String {
    let mut out = String::new();
    for (index, event) in events.iter().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        if let Some(other) = &event.workflow_id {
            let _ = write!(out, "{}#", Shown(other));
        }
        let _ = write!(out, "{}:{}", event.seq, event.kind);
    }
    out
}

fn outcome(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Applied { result } => format!("applied {result}"),
        Outcome::Duplicate { result } => format!("duplicate {result}"),
        Outcome::Conflict => "CONFLICT".to_string(),
        Outcome::Retryable { error } => format!("RETRYABLE ({error})"),
    }
}

/// The op part of a line.
pub fn describe(op: &Op) -> String {
    match op {
        Op::Open {
            incarnation,
            synchronous,
        } => match synchronous {
            Some(level) => format!("open (life {incarnation}, synchronous={level})"),
            None => format!("open (life {incarnation})"),
        },
        Op::Kill { point } => format!("** KILL at {point} **"),
        Op::Restart { incarnation } => format!("restart (life {incarnation})"),
        Op::Quiet => "== quiet phase: faults off, everyone restarts ==".to_string(),
        Op::Settled => "== settled: all workflows terminal or waiting on a dead letter, outbox drained ==".to_string(),
        Op::Stalled { since, window } => format!(
            "== stalled: nothing durable changed since tick {since} for {window} ticks (the stall window): the run ends unsettled =="
        ),
        Op::FaultsEnded { since, window } => format!(
            "== stuck with faults on: nothing durable changed since tick {since} for {window} ticks (the stall window): faults stop now =="
        ),
        Op::Certain { invariant, until } => {
            format!("== {invariant} is certain: no later event can undo it; the run ends after tick {until} ==")
        }
        Op::Heads { candidates, heads } => format!("heads: {} workflow(s), {candidates} candidate(s)", heads.len()),
        Op::Load {
            workflow_id,
            last_seq,
            phase,
            events,
        } => format!(
            "load {workflow_id_shown} last_seq={last_seq} phase={phase} [{}]",
            loaded(events),
            workflow_id_shown = Shown(workflow_id)
        ),
        Op::Awaiting { command_id, done } => {
            format!(
                "awaiting {command_id_shown}: {}",
                if *done { "done" } else { "pending" },
                command_id_shown = Shown(command_id)
            )
        }
        Op::Decide {
            workflow_id,
            expected_seq,
            kind,
            ..
        } => format!(
            "decide {workflow_id_shown} {kind} from seq {expected_seq}",
            workflow_id_shown = Shown(workflow_id)
        ),
        Op::Begin => "begin".to_string(),
        Op::InsertEvent {
            workflow_id,
            expected_seq,
            seq,
        } => format!(
            "insert_event {workflow_id_shown} expected_seq={expected_seq} seq={seq}",
            workflow_id_shown = Shown(workflow_id)
        ),
        Op::Conflict {
            workflow_id,
            expected_seq,
        } => format!(
            "STALE {workflow_id_shown}: head moved past {expected_seq}",
            workflow_id_shown = Shown(workflow_id)
        ),
        Op::InsertCommand { command_id } => format!(
            "insert_command {command_id_shown}",
            command_id_shown = Shown(command_id)
        ),
        Op::Commit { appended } => {
            let mut text = "commit".to_string();
            for append in appended {
                let _ = write!(text, " {}#{} {}", append.workflow_id, append.seq, append.kind);
            }
            text
        }
        Op::Rollback => "rollback".to_string(),
        Op::Pending { limit, command_ids } => format!("pending (limit {limit}) [{}]", command_ids.join(", ")),
        Op::Send {
            command_id,
            key,
            to,
            attempt,
        } => {
            if command_id == key {
                format!(
                    "send {command_id_shown} -> {to} (attempt {attempt})",
                    command_id_shown = Shown(command_id)
                )
            } else {
                format!(
                    "send {command_id_shown} as key {key_shown} -> {to} (attempt {attempt})",
                    command_id_shown = Shown(command_id),
                    key_shown = Shown(key)
                )
            }
        }
        Op::Reply { key, outcome: o } => format!("reply {key_shown}: {}", outcome(o), key_shown = Shown(key)),
        Op::Timeout { key, attempt } => format!(
            "timeout {key_shown} (attempt {attempt}): outcome unknown",
            key_shown = Shown(key)
        ),
        Op::MarkDone {
            command_id,
            changed,
            token: None,
        } => {
            format!(
                "mark_done {command_id_shown}{}",
                if *changed { "" } else { " (already done)" },
                command_id_shown = Shown(command_id)
            )
        }
        Op::MarkDone {
            command_id,
            changed,
            token: Some(token),
        } => {
            format!(
                "mark_done {command_id_shown} token={token}{}",
                if *changed {
                    ""
                } else {
                    " REJECTED (lease passed to another holder, or done already)"
                },
                command_id_shown = Shown(command_id)
            )
        }
        Op::Claim {
            owner,
            expires,
            claimed,
        } => {
            let rows: Vec<String> = claimed
                .iter()
                .map(|claim| format!("{} token={}", claim.command_id, claim.token))
                .collect();
            format!("claim [{}] as {owner} until tick {expires}", rows.join(", "))
        }
        Op::LeaseLost { command_id, token } => {
            format!(
                "lease on {command_id_shown} (token={token}) expired before sending: left to the next claim",
                command_id_shown = Shown(command_id)
            )
        }
        Op::Pause { ticks } => format!("== PAUSED for {ticks} ticks (connection and memory kept) =="),
        Op::Skew { offset } => format!("== CLOCK SKEWED: reads the true tick {offset:+} =="),
        Op::ClockStep { by, offset } => {
            format!("== CLOCK STEPPED by {by:+} ticks: reads the true tick {offset:+} ==")
        }
        Op::Receive { key, from } => format!("receive {key_shown} from {from}", key_shown = Shown(key)),
        Op::Lookup { key, found } => {
            let found = match found {
                Lookup::New => "new".to_string(),
                Lookup::Seen { result } => format!("seen {result}"),
                Lookup::Conflict => "CONFLICT".to_string(),
            };
            format!("lookup {key_shown}: {found}", key_shown = Shown(key))
        }
        Op::Apply { key, effect_id, result } => {
            format!("apply {key_shown} effect #{effect_id} {result}", key_shown = Shown(key))
        }
        Op::Respond { key, to, outcome: o } => {
            format!("respond {key_shown} -> {to}: {}", outcome(o), key_shown = Shown(key))
        }
        Op::Lost { key, to, reason } => format!("lost {key_shown} -> {to} ({reason})", key_shown = Shown(key)),
        Op::Duplicated { key, to } => format!("duplicated {key_shown} -> {to}", key_shown = Shown(key)),
        Op::Probe { key, to, payload } => format!("probe {key_shown} -> {to} with {payload}", key_shown = Shown(key)),
        Op::NearMiss { key, of, form, to } => format!(
            "near-miss probe {key_shown} ({of_shown} {}) -> {to}",
            form.describe(),
            key_shown = Shown(key),
            of_shown = Shown(of)
        ),
        Op::ProbeReply { key, outcome: o } => {
            format!("probe reply {key_shown}: {}", outcome(o), key_shown = Shown(key))
        }
        Op::Dispatch { command_id, to, replay } => format!(
            "DISPATCH {command_id_shown} -> {to} ({})",
            if *replay { "during replay" } else { "before commit" },
            command_id_shown = Shown(command_id)
        ),
        Op::Backup { n } => format!("backup #{n} begins, on a connection of its own"),
        Op::BackupPart { n, part } => format!("backup #{n}: part {part} copied, the rest later"),
        Op::BackupAbandoned { n, restored } => match restored {
            true => format!("backup #{n} abandoned: the store was restored between its parts"),
            false => format!("backup #{n} abandoned: the power went out between its parts"),
        },
        Op::BackedUp { n } => format!("backup #{n} complete (judged after the run, I11)"),
        Op::BackupFailed { n, error } => format!("backup #{n} failed: {error}"),
        Op::BackupKilled { n } => format!("** backup #{n}: its process killed inside it **"),
        Op::Restore { n, backup } => {
            format!("== RESTORE #{n} from backup #{backup}: every actor stopped, the store's database replaced ==")
        }
        Op::RestoreSkipped { n } => format!("restore #{n} skipped: no backup completed in the fault phase"),
        Op::RestoreFailed { n, backup, error } => {
            format!("restore #{n} from backup #{backup} failed: {error}; the store is left as it was")
        }
        Op::RolledBack {
            n,
            events: Some(events),
        } => {
            format!("restore #{n} done: {events} event(s) the store held before it rolled back (no finding)")
        }
        Op::RolledBack { n, events: None } => {
            format!("restore #{n} done: the store was unreadable before it, so what it rolled back is unknown")
        }
        Op::PowerCut { point, model } => format!("== POWER CUT at persistence point {point} ({model}) =="),
        Op::Restored { kept, lost, torn } => {
            format!("disk after the cut: {kept} unsynced operation(s) kept, {lost} lost, {torn} torn")
        }
        Op::Recovered {
            events,
            outbox,
            effects,
            store_integrity,
            receiver_integrity,
        } => format!(
            "recovered: {events} events, {outbox} outbox rows, {effects} effects; integrity {store_integrity} / {receiver_integrity}"
        ),
        Op::Nudge { workflow_id, to } => format!(
            "nudge {to} about {workflow_id_shown}",
            workflow_id_shown = Shown(workflow_id)
        ),
        Op::Busy { step } => format!("{step}: busy, retry later"),
        Op::Queued { step } => format!("{step}: queued for a group commit, ask again"),
        Op::Preempted {
            step,
            point,
            sql,
            meanwhile,
        } => {
            let at = match sql {
                Some(sql) => format!("{point} in `{sql}`"),
                None => point.clone(),
            };
            match meanwhile.is_empty() {
                true => format!("{step}: preempted at {at}, other actors run"),
                false => format!("{step}: preempted at {at}, meanwhile {}", joined(meanwhile)),
            }
        }
        Op::Failed { step, error } => format!("{step} FAILED: {error}"),
        Op::Died { step, cause } => format!("{step} STORE DIED: {cause}"),
        Op::RetryScheduled {
            command_id,
            attempt,
            next_at,
            error,
            token,
        } => {
            let token = token.map(|token| format!(" token={token}")).unwrap_or_default();
            format!(
                "retry timer {command_id_shown}{token}: attempt {attempt} failed ({error}), due again at tick {next_at}",
                command_id_shown = Shown(command_id)
            )
        }
        Op::DeadLettered {
            command_id,
            attempts,
            error,
        } => {
            format!(
                "** DEAD LETTER {command_id_shown} after {attempts} attempt(s) ({error}): manual handling, never done **",
                command_id_shown = Shown(command_id)
            )
        }
        Op::RetryUnchanged {
            command_id,
            error,
            token,
        } => {
            let token = token.map(|token| format!(" token={token}")).unwrap_or_default();
            format!(
                "retry timer {command_id_shown}{token} ({error}): unchanged (done, dead-lettered, or lease passed on)",
                command_id_shown = Shown(command_id)
            )
        }
        Op::Refuse {
            key,
            from,
            error,
            poison,
        } => format!(
            "REFUSE {key_shown} from {from}: {error}{}",
            if *poison { " [poisoned: every time]" } else { "" },
            key_shown = Shown(key)
        ),
        Op::ReplyReplaced { key, to, error } => {
            format!(
                "reply {key_shown} -> {to} replaced by the network: {error} (the effect is committed)",
                key_shown = Shown(key)
            )
        }
        Op::DedupPurged { before, removed } => {
            format!("purge de-dup records applied before tick {before}: {removed} deleted")
        }
        Op::Unsynced {
            database,
            directory: false,
        } => {
            format!("that commit to the {database} was acknowledged with no sync reaching the disk")
        }
        Op::Unsynced {
            database,
            directory: true,
        } => {
            format!(
                "that commit to the {database} deleted its journal without syncing the directory: the \
                 deletion may not survive a power cut"
            )
        }
    }
}

/// Statements run meanwhile, in one clause.
pub fn joined(ran: &[crate::trace::Ran]) -> String {
    ran.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}
