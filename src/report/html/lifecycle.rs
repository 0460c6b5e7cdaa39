//! The lifecycle table: one row per command_id, from commit to mark-done.
//!
//! Rows are every outbox row, every command a stored event should have
//! (a missing one shows as "missing"), and every key that took effect or was
//! sent without an outbox row (a "ghost"). Rows a violation names come first
//! and are highlighted; a checkbox hides the others (pure CSS, no script).
//! In runs with leases a "leases" column lists each row's claims (owner,
//! token, expiry), the leases its holders lost, and its acknowledgements
//! with a fencing token: accepted, rejected as late, or (the I8 mistake)
//! counted although stale. One match arm per `LeaseStep`.
//! In runs with retry timers a "retries" column lists each row's refusals,
//! replies the network replaced with an error, its failed attempts with
//! their backoff (stored at a tick, due at another) and its dead letter,
//! which is drawn as waiting for a person, never as done. One match arm per
//! `RetryStep`.

use std::fmt::Write;

use super::Page;
use super::facts::{AckFate, CommandFacts, LeaseStep, RetryStep, TxEnd};
use super::text::{Esc, Id, command_anchor, violation_anchor};

/// Violations linked per row before "+n".
const VIOLATION_LINKS_MAX: usize = 6;
/// Lease steps listed per row before "+n more".
const LEASE_STEPS_MAX: usize = 8;
/// Retry steps listed per row before "+n more" (the dead letter always shows).
const RETRY_STEPS_MAX: usize = 8;

pub(super) fn write(out: &mut String, page: &Page<'_>) {
    let listed = page.facts.listed_commands();
    let involved = listed.iter().filter(|facts| !facts.violations.is_empty()).count();
    let _ = writeln!(
        out,
        "<section id=\"commands\">\n<h2>Commands</h2>\n<p>{} command{} ({} named by violations, listed first). \
         Committed: the writer commits that acknowledged it. Delivered: sends by workers (and by writers \
         themselves, which only broken engines do). Applied: effect rows in the receiver's database, mapped \
         to commands through the keys they were sent under. Done: the outbox row in the final database.{}{}</p>",
        listed.len(),
        if listed.len() == 1 { "" } else { "s" },
        involved,
        if page.facts.leased {
            " Leases: each claim of the row (owner, fencing token, expiry), leases that expired before their \
             holder sent the row, and acknowledgements with a token: accepted, rejected as late (the row had \
             been claimed since with a greater token), counted although stale (a lease-safety violation), or \
             changing nothing (the row was done already)."
        } else {
            ""
        },
        if page.facts.retried {
            " Retries: refusals by the receiver, confirmed replies the network replaced with an error, each \
             failed attempt with its backoff (the timer stored at a tick, due again at another, by the clock \
             the store read), and the dead letter: the row then waits for a person and is never done."
        } else {
            ""
        }
    );
    let _ = write!(
        out,
        "<input type=\"checkbox\" id=\"only-involved\"> <label for=\"only-involved\">show only commands \
         named by violations</label>\n<table class=\"life\">\n<thead><tr><th>command_id</th><th>kind</th>\
         <th>event</th><th>committed</th><th>delivered</th><th>applied</th><th>marked done</th>{}{}\
         <th>final row</th><th>kills</th></tr></thead>\n<tbody>\n",
        if page.facts.leased { "<th>leases</th>" } else { "" },
        if page.facts.retried { "<th>retries</th>" } else { "" }
    );
    for facts in listed {
        row(out, page, facts);
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}

fn row(out: &mut String, page: &Page<'_>, facts: &CommandFacts<'_>) {
    let (status, class) = facts.status();
    let involved = !facts.violations.is_empty();
    let anchor = command_anchor(&facts.id);
    let _ = write!(
        out,
        "<tr id=\"{anchor}\" class=\"{}\"><td class=\"id\"><a class=\"mono\" href=\"#{anchor}\">{}</a> \
         <span class=\"badge {class}\">{status}</span>",
        if involved { "involved" } else { "quiet" },
        Id(&facts.id)
    );
    if involved {
        let links: Vec<String> = facts
            .violations
            .iter()
            .take(VIOLATION_LINKS_MAX)
            .map(|index| {
                format!(
                    "<a href=\"#{}\">#{} {}</a>",
                    violation_anchor(*index),
                    index + 1,
                    page.result.violations[*index].invariant
                )
            })
            .collect();
        let more = facts.violations.len().saturating_sub(VIOLATION_LINKS_MAX);
        let _ = write!(
            out,
            "<span class=\"sub\">{}{}</span>",
            links.join(" "),
            if more > 0 { format!(" +{more}") } else { String::new() }
        );
    }
    out.push_str("</td>");

    let _ = write!(out, "<td>{}</td>", Esc(facts.kind()));

    // Event.
    match (facts.event, facts.event_seq) {
        (Some(event), _) => {
            let _ = write!(out, "<td>#{} {}</td>", event.seq, Esc(&event.kind));
        }
        (None, Some(seq)) => {
            let _ = write!(out, "<td><span class=\"bad\">#{seq} not stored</span></td>");
        }
        (None, None) => out.push_str("<td><span class=\"bad\">none</span></td>"),
    }

    // Committed.
    out.push_str("<td>");
    match facts.commits.as_slice() {
        [] => out.push_str("<span class=\"note\">no commit</span>"),
        [(tick, actor)] => {
            let _ = write!(out, "tick {tick}<span class=\"sub\">{actor}</span>");
        }
        commits => {
            let ticks: Vec<String> = commits
                .iter()
                .map(|(tick, actor)| format!("{tick} ({actor})"))
                .collect();
            let _ = write!(
                out,
                "<span class=\"bad\">{} commits</span><span class=\"sub\">{}</span>",
                commits.len(),
                ticks.join(", ")
            );
        }
    }
    let cut: Vec<String> = facts
        .inserts
        .iter()
        .filter_map(|insert| match insert.end {
            TxEnd::Killed { tick, point } => Some(format!(
                "inserted by {} at {}, <span class=\"kill\">killed at {}</span> ({tick})",
                insert.actor,
                insert.tick,
                Esc(point)
            )),
            _ => None,
        })
        .collect();
    if !cut.is_empty() {
        let _ = write!(out, "<span class=\"sub\">{}</span>", cut.join("<br>"));
    }
    out.push_str("</td>");

    // Delivered.
    let sends = facts.deliveries.len();
    let _ = write!(out, "<td>{sends}×");
    let mut notes = Vec::new();
    let dispatches = facts
        .deliveries
        .iter()
        .filter(|delivery| delivery.dispatch.is_some())
        .count();
    if dispatches > 0 {
        notes.push(format!("<span class=\"bad\">{dispatches} by writers</span>"));
    }
    if !facts.timeouts.is_empty() {
        notes.push(format!("{} timeout(s)", facts.timeouts.len()));
    }
    if !facts.lost.is_empty() {
        notes.push(format!("{} lost", facts.lost.len()));
    }
    let mut keys: Vec<&str> = facts.deliveries.iter().map(|delivery| delivery.key).collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.len() > 1 {
        notes.push(format!("<span class=\"bad\">{} keys</span>", keys.len()));
    }
    if let Some(first) = facts.deliveries.first() {
        notes.push(format!("first at {}", first.tick));
    }
    if !notes.is_empty() {
        let _ = write!(out, "<span class=\"sub\">{}</span>", notes.join(" · "));
    }
    out.push_str("</td>");

    // Applied.
    let genuine = facts.genuine_effects();
    let count = facts.effects.len();
    let count_class = if count == 1 && genuine.len() == 1 {
        ""
    } else {
        " class=\"bad\""
    };
    let effects: Vec<String> = facts
        .effects
        .iter()
        .map(|(effect, tick)| match tick {
            Some(tick) => format!("#{} at {tick}", effect.effect_id),
            None => format!("#{}", effect.effect_id),
        })
        .collect();
    let _ = write!(out, "<td><span{count_class}>{count}×</span>");
    let rolled_back = facts.applies.len().saturating_sub(count);
    let mut notes = effects;
    if genuine.len() < count {
        notes.push(format!(
            "<span class=\"bad\">{} with other parameters</span>",
            count - genuine.len()
        ));
    }
    if rolled_back > 0 {
        notes.push(format!("{rolled_back} rolled back"));
    }
    if !notes.is_empty() {
        let _ = write!(out, "<span class=\"sub\">{}</span>", notes.join(", "));
    }
    out.push_str("</td>");

    // Marked done.
    out.push_str("<td>");
    match facts.marks.iter().find(|(_, _, changed)| *changed) {
        Some((tick, actor, _)) => {
            let _ = write!(out, "tick {tick}<span class=\"sub\">{actor}");
            if facts.marks.len() > 1 {
                let _ = write!(out, " · {} calls", facts.marks.len());
            }
            out.push_str("</span>");
        }
        None => out.push_str("<span class=\"note\">never</span>"),
    }
    let fates = facts.ack_fates();
    let count = |fate: AckFate| fates.iter().filter(|each| **each == Some(fate)).count();
    let (late, stale) = (count(AckFate::LateRejected), count(AckFate::StaleCounted));
    if late > 0 {
        let _ = write!(out, "<span class=\"sub warn\">{late} late ack(s) rejected</span>");
    }
    if stale > 0 {
        let _ = write!(out, "<span class=\"sub bad\">{stale} stale ack(s) counted</span>");
    }
    out.push_str("</td>");

    if page.facts.leased {
        leases(out, facts);
    }
    if page.facts.retried {
        retries(out, facts);
    }

    // Final row.
    match facts.row {
        None => match facts
            .expected
            .as_ref()
            .and_then(|command| crate::check::stuck::under_another_id(page.snapshot, &facts.id, &command.kind))
        {
            Some(stray) => {
                let _ = write!(
                    out,
                    "<td><span class=\"bad\">no row under this id</span>\
                     <span class=\"sub\">a row under an id no decided command has: <code>{}</code></span></td>",
                    Id(&stray.command_id)
                );
            }
            None => out.push_str("<td><span class=\"bad\">no row</span></td>"),
        },
        Some(row) if !row.done && facts.dead_letter().is_some() => {
            out.push_str("<td><span class=\"manual\">dead-lettered: waiting for a person</span></td>");
        }
        Some(row) if !row.done => out.push_str("<td><span class=\"warn\">pending</span></td>"),
        Some(row) => {
            let _ = write!(
                out,
                "<td>done<span class=\"sub mono\">{}</span></td>",
                match &row.result {
                    Some(result) => Esc(result).to_string(),
                    None => "<span class=\"bad\">no result</span>".to_string(),
                }
            );
        }
    }

    // Kills.
    out.push_str("<td>");
    for index in &facts.kills {
        let kill = &page.facts.kills[*index];
        let _ = write!(
            out,
            "<a class=\"kill\" href=\"#kill-{index}\">✕ {}</a><span class=\"sub\">{} at {}</span>",
            Esc(kill.point),
            kill.actor,
            kill.tick
        );
    }
    out.push_str("</td></tr>\n");
}

/// The "leases" cell: one line per lease step, in trace order.
fn leases(out: &mut String, facts: &CommandFacts<'_>) {
    out.push_str("<td class=\"leases\">");
    if facts.leases.is_empty() {
        out.push_str("<span class=\"note\">never claimed</span>");
    }
    for (step, fate) in facts.leases.iter().zip(facts.ack_fates()).take(LEASE_STEPS_MAX) {
        match *step {
            LeaseStep::Claimed {
                tick,
                actor,
                owner,
                token,
                expires,
            } => {
                let _ = write!(
                    out,
                    "<span class=\"sub lease-claim\" title=\"{actor} claimed the row as {}\">tick {tick}: \
                     claimed by {}, token {token}, until {expires}</span>",
                    Esc(owner),
                    Esc(owner)
                );
            }
            LeaseStep::Lost { tick, actor, token } => {
                let _ = write!(
                    out,
                    "<span class=\"sub lease-lost warn\">tick {tick}: {actor} lost the lease (token {token}) \
                     before sending</span>"
                );
            }
            LeaseStep::Acked { tick, actor, token, .. } => {
                let (class, verdict) = match fate {
                    Some(AckFate::StaleCounted) => (
                        "ack-stale-counted bad",
                        "counted although stale (the row was claimed since)",
                    ),
                    Some(AckFate::LateRejected) => ("ack-rejected warn", "rejected as late"),
                    Some(AckFate::Unchanged) => ("ack-unchanged", "changed nothing (done already)"),
                    Some(AckFate::Accepted) | None => ("ack-accepted ok", "accepted"),
                };
                let _ = write!(
                    out,
                    "<span class=\"sub {class}\">tick {tick}: ack by {actor} with token {token} {verdict}</span>"
                );
            }
        }
    }
    let more = facts.leases.len().saturating_sub(LEASE_STEPS_MAX);
    if more > 0 {
        let _ = write!(out, "<span class=\"sub\">+{more} more</span>");
    }
    out.push_str("</td>");
}

/// The "retries" cell: one line per retry step, in trace order; the dead
/// letter last and always, even past `RETRY_STEPS_MAX`.
fn retries(out: &mut String, facts: &CommandFacts<'_>) {
    out.push_str("<td class=\"retries\">");
    if facts.retries.is_empty() {
        out.push_str("<span class=\"note\">no retry</span>");
    }
    let listed = facts
        .retries
        .iter()
        .filter(|step| !matches!(step, RetryStep::DeadLettered { .. }))
        .collect::<Vec<_>>();
    for step in listed.iter().take(RETRY_STEPS_MAX) {
        match **step {
            RetryStep::Refused {
                tick,
                actor,
                error,
                poison,
            } => {
                let _ = write!(
                    out,
                    "<span class=\"sub retry-refused warn\">tick {tick}: refused by {actor}: {}{}</span>",
                    Esc(error),
                    if poison { " (poisoned: refused every time)" } else { "" }
                );
            }
            RetryStep::Replaced { tick, actor, to, error } => {
                let _ = write!(
                    out,
                    "<span class=\"sub retry-replaced warn\">tick {tick}: {actor}&#39;s confirmed reply to {to} \
                     replaced by the network: {} (the effect is committed)</span>",
                    Esc(error)
                );
            }
            RetryStep::Scheduled {
                tick,
                actor,
                attempt,
                next_at,
                error,
            } => {
                let _ = write!(
                    out,
                    "<span class=\"sub retry-scheduled\">attempt {attempt} failed at tick {tick}: {}; \
                     backoff → due at tick {next_at} ({actor})</span>",
                    Esc(error)
                );
            }
            RetryStep::Unchanged { tick, actor, error } => {
                let _ = write!(
                    out,
                    "<span class=\"sub retry-unchanged\">tick {tick}: {actor}&#39;s failure ({}) changed \
                     nothing (done, dead-lettered, or lease passed on)</span>",
                    Esc(error)
                );
            }
            RetryStep::DeadLettered { .. } => {}
        }
    }
    let more = listed.len().saturating_sub(RETRY_STEPS_MAX);
    if more > 0 {
        let _ = write!(out, "<span class=\"sub\">+{more} more</span>");
    }
    if let Some((tick, attempts, error)) = facts.dead_letter() {
        let _ = write!(
            out,
            "<span class=\"sub dead-letter manual\">tick {tick}: dead-lettered after {attempts} attempt{}: {} \
             (waiting for a person; never done)</span>",
            if attempts == 1 { "" } else { "s" },
            Esc(error)
        );
    }
    out.push_str("</td>");
}
