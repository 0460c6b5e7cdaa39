//! `report.html`: one self-contained page per failing seed, so that people
//! can see the bug without reading the JSON.
//!
//! The page holds, top to bottom:
//!
//! | section | file | shows |
//! |---|---|---|
//! | header | `header.rs` | scenario, seed, verdict, trace hash, fault mix, kills, the replay command |
//! | violations | `violations.rs` | each violation, the kills that interrupted it, its trace lines |
//! | … expected vs found | `expected.rs` | in each violation: the recovered rows next to what the checker expected |
//! | timeline | `timeline/` | one swimlane per actor over simulated ticks (inline SVG), with pauses, leases and retry backoffs as spans; dead letters, de-dup purges and clock steps as marks; a skewed clock's offset on its lane label |
//! | commands | `lifecycle.rs` | one row per command_id: committed, delivered, applied, marked done; with leases, its claims and fenced acknowledgements; with retry timers, its refusals, replaced replies, attempts with their backoff and its dead letter |
//!
//! `facts.rs` gathers what they show in one pass over the trace and the
//! snapshot (including which kill interrupted which command); `text.rs`
//! escapes. The page needs no network and no script: CSS (`page.css`) and
//! SVG are inline, and the one line of script only adds a copy button.
//! Everything from the run is escaped. The output is a pure function of the
//! seed's result: the same seed gives the same bytes.

mod expected;
mod facts;
mod header;
mod lifecycle;
mod stuck;
mod text;
mod timeline;
mod violations;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_leases;
#[cfg(test)]
mod tests_timers;

use std::fmt::Write;

use super::NextSteps;
use crate::check::Snapshot;
use crate::runner::SeedResult;
use crate::trace::TraceEvent;
use facts::Facts;
use text::Esc;
pub use text::esc;

/// What every section reads.
struct Page<'a> {
    result: &'a SeedResult,
    steps: NextSteps<'a>,
    events: &'a [TraceEvent],
    snapshot: &'a Snapshot,
    facts: Facts<'a>,
}

/// The report page of one seed. `steps` are the commands that replay it
/// (and shrink it). A result without its trace or snapshot (a passing seed
/// run without `keep_traces`) still gives a page, with those sections empty.
pub fn seed_page<'a>(result: &'a SeedResult, steps: impl Into<NextSteps<'a>>) -> String {
    let empty = Snapshot::default();
    let events = result.events.as_deref().unwrap_or_default();
    let snapshot = result.snapshot.as_ref().unwrap_or(&empty);
    let page = Page {
        result,
        steps: steps.into(),
        events,
        snapshot,
        facts: Facts::new(events, snapshot, &result.violations),
    };
    let mut out = String::with_capacity(64 * 1024 + events.len() * 48);
    let verdict = if result.ok { "PASS" } else { "FAIL" };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{verdict} · {} · seed {} · crashsim</title>\n<style>\n{}</style>\n\
         <script>document.documentElement.className = 'js';</script>\n</head>\n<body>\n",
        Esc(&result.scenario),
        result.seed,
        include_str!("page.css")
    );
    header::write(&mut out, &page);
    violations::write(&mut out, &page);
    timeline::write(&mut out, &page);
    lifecycle::write(&mut out, &page);
    let _ = write!(
        out,
        "<footer>crashsim {} · this page is self-contained: no network, no external files; \
         the full trace is <code>trace.jsonl</code> (hash {}) and <code>trace.txt</code> beside it \
         (as <code>.gz</code> when large).</footer>\n\
         </body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        Esc(&result.trace_hash)
    );
    out
}
