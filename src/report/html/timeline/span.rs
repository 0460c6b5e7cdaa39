//! Spans: intervals drawn on an actor's lane, from the trace line that
//! starts them to the tick they end at. A pause covers the paused actor's
//! lane for its `ticks`; a lease claim covers the claiming worker's lane
//! from the claim to its expiry, with the command ids and fencing tokens in
//! its tooltip; a retry's backoff covers the worker's lane from the failure
//! it stored a timer for to the tick the timer is due (`next_at`, by the
//! clock the store read), with the command, attempt and error in its tooltip.
//!
//! Each kind of span is one trace op: `span` has one match arm per op, and
//! `Span::class` and `Span::name` one per kind, so an op that lasts (a
//! timer, say) is a small change here and nowhere else but the CSS.

use std::fmt::Write;

use super::super::text::{Esc, clip};
use super::axis::Axis;
use super::{LANE_PX, TITLE_CHARS_MAX};
use crate::actors::ActorId;
use crate::trace::{Op, TraceEvent};

/// Command ids listed in a claim's tooltip before "… n more".
const CLAIMED_LISTED_MAX: usize = 8;

/// What a span stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    /// The simulator paused the actor (`Op::Pause`).
    Pause,
    /// A worker holds a lease on the rows it claimed (`Op::Claim`).
    Lease,
    /// A failed delivery waits for its retry timer (`Op::RetryScheduled`).
    Backoff,
    /// The actor's call is suspended inside the store's SQLite while
    /// others run (`Op::Preempted`), until the actor asks it again.
    Suspended,
}

impl Kind {
    pub(super) const ALL: [Kind; 4] = [Kind::Pause, Kind::Lease, Kind::Backoff, Kind::Suspended];

    pub(super) fn class(self) -> &'static str {
        match self {
            Kind::Pause => "pause",
            Kind::Lease => "lease",
            Kind::Backoff => "backoff",
            Kind::Suspended => "suspended",
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Pause => "paused (connection and memory kept)",
            Kind::Lease => "lease held (claim → expiry)",
            Kind::Backoff => "retry backoff (failure → timer due)",
            Kind::Suspended => "call suspended inside SQLite (others run)",
        }
    }

    /// The legend's swatch.
    pub(super) fn color(self) -> &'static str {
        match self {
            Kind::Pause => "rgba(251,188,4,.45)",
            Kind::Lease => "rgba(26,115,232,.25)",
            Kind::Backoff => "rgba(227,116,0,.35)",
            Kind::Suspended => "rgba(142,36,170,.4)",
        }
    }

    /// Vertical placement in the lane, as (offset, height): a pause over
    /// the whole lane, a lease as a strip along its middle, a backoff as a
    /// strip along its floor, a suspension as a strip along its top, so a
    /// pause inside a lease or a backoff shows both.
    fn band(self) -> (f64, f64) {
        match self {
            Kind::Pause => (0.0, LANE_PX),
            Kind::Lease => (LANE_PX / 2.0 - 3.0, 6.0),
            Kind::Backoff => (LANE_PX - 5.0, 5.0),
            Kind::Suspended => (0.0, 5.0),
        }
    }
}

/// One interval on one lane.
pub(super) struct Span {
    pub(super) kind: Kind,
    pub(super) actor: ActorId,
    pub(super) from: u64,
    pub(super) to: u64,
    /// The label drawn in the span (if it fits) and leading its tooltip.
    label: String,
    /// The rest of the tooltip, unescaped.
    detail: String,
}

/// The span a trace line starts, if any.
pub(super) fn span(event: &TraceEvent) -> Option<Span> {
    let (tick, actor) = (event.tick, event.actor);
    match &event.op {
        Op::Pause { ticks } => Some(Span {
            kind: Kind::Pause,
            actor,
            from: tick,
            to: tick.saturating_add(*ticks),
            label: format!("⏸ {ticks}"),
            detail: format!("paused for {ticks} ticks, to tick {}", tick.saturating_add(*ticks)),
        }),
        Op::Claim {
            owner,
            expires,
            claimed,
        } if !claimed.is_empty() => {
            let mut detail = format!("{owner} claimed until tick {expires}:");
            for claim in claimed.iter().take(CLAIMED_LISTED_MAX) {
                let _ = write!(detail, "\n{} token={}", claim.command_id, claim.token);
            }
            if claimed.len() > CLAIMED_LISTED_MAX {
                let _ = write!(detail, "\n… {} more", claimed.len() - CLAIMED_LISTED_MAX);
            }
            let tokens: Vec<String> = claimed.iter().map(|claim| claim.token.to_string()).collect();
            Some(Span {
                kind: Kind::Lease,
                actor,
                from: tick,
                to: *expires,
                label: format!("⚿ {}", tokens.join(",")),
                detail,
            })
        }
        Op::RetryScheduled {
            command_id,
            attempt,
            next_at,
            error,
            token,
        } => {
            let token = token.map(|token| format!(" (token {token})")).unwrap_or_default();
            Some(Span {
                kind: Kind::Backoff,
                actor,
                from: tick,
                // A clock behind the true one can store a timer due "before" now.
                to: (*next_at).max(tick),
                label: format!("↻ {attempt}"),
                detail: format!("{command_id}{token}: attempt {attempt} failed ({error}); timer due at tick {next_at}"),
            })
        }
        _ => None,
    }
}

/// Every span of the trace, in trace order.
pub(super) fn spans(events: &[TraceEvent]) -> Vec<Span> {
    events
        .iter()
        .enumerate()
        .filter_map(|(index, event)| match &event.op {
            Op::Preempted {
                step,
                point,
                sql,
                meanwhile,
            } => Some(suspension(events, index, step, (point, sql.as_deref()), meanwhile)),
            _ => span(event),
        })
        .collect()
}

/// A call suspended at trace line `index`: it lasts until its actor's next
/// line (the call asked again, or the actor killed), or the trace's end.
fn suspension(
    events: &[TraceEvent],
    index: usize,
    step: &str,
    (point, sql): (&str, Option<&str>),
    meanwhile: &[crate::trace::Ran],
) -> Span {
    let event = &events[index];
    let next = events[index + 1..].iter().find(|next| next.actor == event.actor);
    let meanwhile = match meanwhile.is_empty() {
        true => String::new(),
        false => format!(" (meanwhile {})", crate::trace::render::joined(meanwhile)),
    };
    let last = events.last().map_or(event.tick, |last| last.tick);
    let to = next.map_or(last, |next| next.tick).max(event.tick);
    let at = match sql {
        Some(sql) => format!("{point} in `{sql}`"),
        None => point.to_string(),
    };
    let detail = match next {
        Some(next) => format!(
            "its {step} suspended at {at} while other actors ran{meanwhile}; then: {}",
            super::mark::describe(&next.op)
        ),
        None => format!("its {step} suspended at {at} while other actors ran{meanwhile}, to the end of the trace"),
    };
    Span {
        kind: Kind::Suspended,
        actor: event.actor,
        from: event.tick,
        to,
        label: format!("⏯ {point}"),
        detail,
    }
}

/// Draws the spans (under the marks), pauses last so they sit over leases.
pub(super) fn draw(out: &mut String, spans: &[Span], axis: &Axis, lane_y: &dyn Fn(ActorId) -> f64) {
    for kind in Kind::ALL.into_iter().rev() {
        for span in spans.iter().filter(|span| span.kind == kind) {
            let (offset, band) = kind.band();
            let from = axis.x(span.from);
            let width = (axis.x(span.to) - from).max(1.0);
            let y = lane_y(span.actor) + offset;
            let _ = write!(
                out,
                "<g class=\"span {}\"><rect x=\"{from:.1}\" y=\"{y:.0}\" width=\"{width:.1}\" height=\"{band:.0}\"/>",
                kind.class()
            );
            // A label only where it fits (about 6 px a character).
            if width >= span.label.chars().count() as f64 * 6.0 + 4.0 {
                let _ = write!(
                    out,
                    "<text class=\"spantext\" x=\"{:.1}\" y=\"{:.0}\">{}</text>",
                    from + 2.0,
                    lane_y(span.actor) + 12.0,
                    Esc(&span.label)
                );
            }
            let _ = writeln!(
                out,
                "<title>{} · ticks {}–{}: {}\n{}</title></g>",
                span.actor,
                span.from,
                span.to,
                Esc(kind.name()),
                Esc(&clip(&span.detail, TITLE_CHARS_MAX * (CLAIMED_LISTED_MAX + 2)))
            );
        }
    }
}
