//! The block for a run that did not settle (I10): each stuck workflow, the
//! command in its way and that command's state, as `check::stuck` explains
//! it for the I10 violations themselves.

use std::fmt::Write;

use super::Page;
use super::text::{Esc, Id, command_link};
use crate::check::History;
use crate::check::stuck::{self, Waits};

pub(super) fn block(out: &mut String, page: &Page<'_>) {
    out.push_str(
        "<p>Expected: once faults stop, every workflow reaches a terminal phase and every outbox row is \
         done with a result. Found:</p>\n",
    );
    out.push_str(
        "<table class=\"grid\"><tr><th>workflow</th><th>phase</th><th>head event</th>\
         <th>waits on</th><th>where it is stuck</th></tr>\n",
    );
    let history = History::from_events(page.events);
    let workflows: Vec<&str> = page.facts.workflows.keys().map(String::as_str).collect();
    let stuck = stuck::explain(page.snapshot, &history, &workflows);
    for workflow in &stuck {
        let head = page
            .facts
            .workflows
            .get(&workflow.workflow_id)
            .and_then(|facts| facts.events.last())
            .map_or_else(|| "none".to_string(), |event| super::expected::event_text(event));
        let (waits, state) = match &workflow.waits {
            Waits::Start => ("–".to_string(), "<span class=\"warn\">never started</span>".to_string()),
            Waits::Replay(why) => (
                "–".to_string(),
                format!("<span class=\"bad\">history does not replay: {}</span>", Esc(why)),
            ),
            Waits::Writer { seq } => (
                "a writer".to_string(),
                format!(
                    "<span class=\"warn\">every command of event #{seq} is done; no writer appended the next event</span>"
                ),
            ),
            Waits::Commands(blocked) => {
                let links: Vec<String> = blocked
                    .iter()
                    .map(|command| format!("{} {}", command_link(&command.command_id), Esc(&command.kind)))
                    .collect();
                let states: Vec<String> = blocked
                    .iter()
                    .map(|command| {
                        let class = if command.state.wrong_row() { "bad" } else { "warn" };
                        format!("<span class=\"{class}\">{}</span>", Esc(&command.state.to_string()))
                    })
                    .collect();
                (links.join("<br>"), states.join("<br>"))
            }
        };
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{head}</td><td>{waits}</td><td>{state}</td></tr>",
            Id(&workflow.workflow_id),
            Esc(&workflow.phase)
        );
    }
    if stuck.is_empty() {
        out.push_str("<tr><td colspan=\"5\">every stored workflow is done</td></tr>\n");
    }
    out.push_str("</table>\n");
}
