//! The page header: what ran, the verdict, the faults in force and the kills
//! that fired, the one command that replays the seed and, for a failing
//! seed, the next steps: the command that shrinks it and what each broken
//! invariant requires (the rule itself, from docs/protocol.md, so the page
//! stays self-contained).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::Page;
use super::text::Esc;
use crate::check::Invariant;
use crate::faults::KillPoint;

/// "I1 ×4, I5 ×4, I10 ×1", in invariant order.
pub(super) fn counts_by_invariant(page: &Page<'_>) -> String {
    let mut counts: BTreeMap<Invariant, usize> = BTreeMap::new();
    for violation in &page.result.violations {
        *counts.entry(violation.invariant).or_default() += 1;
    }
    counts
        .iter()
        .map(|(invariant, count)| format!("{invariant} ×{count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn write(out: &mut String, page: &Page<'_>) {
    let result = page.result;
    let (class, verdict) = if result.ok { ("pass", "PASS") } else { ("fail", "FAIL") };
    let _ = writeln!(
        out,
        "<header>\n<h1>{} · seed {} <span class=\"verdict {class}\">{verdict}</span></h1>",
        Esc(&result.scenario),
        result.seed
    );
    out.push_str("<table class=\"facts\">\n");
    let _ = writeln!(
        out,
        "<tr><th>scenario</th><td><code>{}</code></td></tr>",
        Esc(&result.scenario)
    );
    let _ = writeln!(out, "<tr><th>seed</th><td><code>{}</code></td></tr>", result.seed);
    let verdict_text = if result.ok {
        "every invariant held".to_string()
    } else {
        format!(
            "<span class=\"bad\">{} violation{}</span>: {}",
            result.violations.len(),
            if result.violations.len() == 1 { "" } else { "s" },
            counts_by_invariant(page)
        )
    };
    let _ = writeln!(out, "<tr><th>verdict</th><td>{verdict_text}</td></tr>");
    let _ = writeln!(
        out,
        "<tr><th>trace hash</th><td><code>{}</code> <span class=\"note\">(the start of sha256 of trace.jsonl)</span></td></tr>",
        Esc(&result.trace_hash)
    );
    let _ = writeln!(
        out,
        "<tr><th>run</th><td>{} steps, {} trace lines, {} ticks; {}</td></tr>",
        result.steps,
        page.events.len(),
        result.ticks,
        if result.settled {
            "settled"
        } else {
            "<span class=\"bad\">did not settle</span>"
        }
    );
    out.push_str("<tr><th>fault mix</th><td>");
    for part in result.faults.split_whitespace() {
        let _ = write!(out, "<span class=\"chip\">{}</span>", Esc(part));
    }
    out.push_str("</td></tr>\n");

    // In the order of the protocol's kill points (writer, worker, receiver), then scripted ones.
    let mut kills: BTreeMap<(usize, &str), usize> = BTreeMap::new();
    for kill in &page.facts.kills {
        let order = KillPoint::from_name(kill.point).map_or(usize::MAX, KillPoint::index);
        *kills.entry((order, kill.point)).or_default() += 1;
    }
    out.push_str("<tr><th>kills fired</th><td>");
    if kills.is_empty() {
        out.push_str("none");
    }
    for ((_, point), count) in &kills {
        let _ = write!(out, "<span class=\"chip kill\">{} ×{count}</span>", Esc(point));
    }
    out.push_str("</td></tr>\n");
    copyable(out, "replay", "replay", page.steps.replay);
    if !result.ok {
        if let Some(shrink) = page.steps.shrink {
            copyable(out, "shrink", "then shrink it", shrink);
        }
        explained(out, page);
    }
    out.push_str("</table>\n</header>\n");
    let _ = writeln!(
        out,
        "<nav><a href=\"#violations\">Violations ({})</a><a href=\"#timeline\">Timeline</a>\
         <a href=\"#commands\">Commands ({})</a></nav>",
        result.violations.len(),
        page.facts.listed_commands().len()
    );
}

/// A row holding a command to paste, with a copy button.
fn copyable(out: &mut String, id: &str, label: &str, command: &str) {
    let _ = writeln!(
        out,
        "<tr><th>{label}</th><td><pre class=\"cmd\" id=\"{id}\">{}</pre>\
         <button type=\"button\" class=\"copy\" \
         onclick=\"navigator.clipboard.writeText(document.getElementById('{id}').textContent)\">copy</button></td></tr>",
        Esc(command)
    );
}

/// One row per invariant the seed broke: its rule as docs/protocol.md
/// states it, and where to read more.
fn explained(out: &mut String, page: &Page<'_>) {
    let broken: std::collections::BTreeSet<Invariant> = page
        .result
        .violations
        .iter()
        .map(|violation| violation.invariant)
        .collect();
    for invariant in broken {
        let _ = write!(out, "<tr><th>{invariant} requires</th><td>");
        match rule(invariant) {
            Some(rule) => out.push_str(&with_code(rule)),
            None => out.push_str(&Esc(invariant.title()).to_string()),
        }
        let _ = writeln!(
            out,
            " <span class=\"note\">(docs/protocol.md, \"Invariants\"; <code>crashsim list</code>)</span></td></tr>"
        );
    }
}

/// The invariants table of docs/protocol.md, built into the binary.
const PROTOCOL_DOC: &str = include_str!("../../../docs/protocol.md");

/// The rule of `invariant` as its row in docs/protocol.md's invariants
/// table states it (`| I2 | rule | checked by |`); none for A1 and D1,
/// which that table does not hold.
pub(super) fn rule(invariant: Invariant) -> Option<&'static str> {
    let start = format!("| {invariant} | ");
    PROTOCOL_DOC.lines().find_map(|line| {
        let rest = line.strip_prefix(&start)?;
        let (rule, _checked_by) = rest.rsplit_once(" | ")?;
        Some(rule.trim())
    })
}

/// Markdown's `code` spans as `<code>`, everything escaped.
fn with_code(text: &str) -> String {
    text.split('`')
        .enumerate()
        .map(|(index, part)| {
            if index % 2 == 1 {
                format!("<code>{}</code>", Esc(part))
            } else {
                Esc(part).to_string()
            }
        })
        .collect()
}
