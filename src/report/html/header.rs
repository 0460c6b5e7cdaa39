//! The page header: what ran, the verdict, the faults in force and the kills
//! that fired, and the one command that replays the seed.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::Page;
use super::text::Esc;
use crate::check::Invariant;
use crate::sim::faults::KillPoint;

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
    let _ = writeln!(
        out,
        "<tr><th>replay</th><td><pre class=\"cmd\" id=\"replay\">{}</pre>\
         <button type=\"button\" class=\"copy\" \
         onclick=\"navigator.clipboard.writeText(document.getElementById('replay').textContent)\">copy</button></td></tr>",
        Esc(page.replay)
    );
    out.push_str("</table>\n</header>\n");
    let _ = writeln!(
        out,
        "<nav><a href=\"#violations\">Violations ({})</a><a href=\"#timeline\">Timeline</a>\
         <a href=\"#commands\">Commands ({})</a></nav>",
        result.violations.len(),
        page.facts.listed_commands().len()
    );
}
