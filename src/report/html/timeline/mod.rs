//! The timeline: one swimlane per actor, x = simulated tick, as inline SVG.
//!
//! Legibility at ~10k trace lines and ~15 actors comes from three choices:
//! - steps of one kind by one actor within a few ticks are drawn as one thin
//!   mark whose `<title>` (the tooltip) counts them and shows the first few;
//! - only steps that matter are marked (commits, sends, replies, timeouts,
//!   applies, duplicates, mark-done, conflicts, lost messages, probes,
//!   failures, opens/restarts, faint busy); lookups, loads and nudges are not;
//! - stretches longer than `GAP_TICKS` where nothing changes state (no
//!   commit, delivery, apply, mark-done, kill, restart, lost message: only
//!   polling, loads, busy retries or failures that repeat) are folded into a
//!   narrow grey band whose tooltip counts what it hides, so a run that
//!   idles or spins until `ticks_max` keeps its eventful part readable;
//! - busy steps and failures, which come in long runs, are drawn as bars
//!   over adjacent bins.
//!
//! Pauses, leases and retry backoffs are spans on their actor's lane
//! (`span.rs`): a pause covers the lane for its ticks, a lease claim runs as
//! a strip from the claim to its expiry with the claimed rows and their
//! fencing tokens in the tooltip, a backoff as a strip along the floor from
//! the failure to its timer's due tick, a call suspended inside SQLite
//! (`[preempt]`) as a strip along the top from the suspension to the
//! actor's next step, the point in its label; all ends stay unfolded. A late
//! acknowledgement the store rejected, a dead letter, a receiver's de-dup
//! purge and a clock step have marks of their own; a skewed clock's offset
//! is a badge on its lane label (`clock.rs`). Marks and spans of optional
//! features are in the legend only when the run has them.
//!
//! Kills are drawn one by one, in red with their kill point, over the
//! hatched span the actor stayed down; kills that interrupted something a
//! violation is about are outlined. Violation ticks are yellow lines under
//! the marks with a flag on top linked to the violation; the quiet phase and settling are
//! dashed lines. Lane labels sit in a second SVG outside the scrolling one,
//! so they stay in view.
//!
//! Files: this one (the lanes and marks of a page), `mark.rs` (what a step
//! is drawn as), `span.rs` (what lasts: pauses, leases, backoffs, suspensions),
//! `clock.rs` (clock offsets), `axis.rs` (ticks
//! to x, folds), `draw.rs` (the parts).

mod axis;
mod clock;
mod draw;
mod mark;
mod span;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use axis::Axis;
use draw::{Run, bar, folds, kills, legend, phases, ticks_axis, violation_lines};
use mark::{Mark, classify, eventful};

use super::Page;
use super::text::{Esc, clip};
use crate::actors::{ActorId, Role};

/// Idle stretches longer than this are folded.
const GAP_TICKS: u64 = 300;
/// Ticks kept visible on each side of a fold.
const MARGIN_TICKS: u64 = 20;
/// Extra label width when lanes carry clock badges.
const CLOCK_LABEL_PX: f64 = 100.0;
/// The width of a fold.
const FOLD_PX: f64 = 36.0;
/// The width the unfolded ticks aim at, and the bounds of the scale.
const TARGET_PX: f64 = 4000.0;
const PX_PER_TICK_MAX: f64 = 2.0;
const PX_PER_TICK_MIN: f64 = 0.05;
/// Steps closer than this are drawn as one mark.
const BIN_PX: f64 = 3.0;
const LANE_PX: f64 = 18.0;
const LANE_PITCH_PX: f64 = 22.0;
/// Room above the lanes for the axis and the violation labels.
const TOP_PX: f64 = 34.0;
const LABEL_PX: f64 = 120.0;
/// Steps listed in one mark's tooltip.
const TITLE_LINES_MAX: usize = 3;
/// Characters of a step shown in a tooltip.
const TITLE_CHARS_MAX: usize = 100;
/// Above this many distinct violation ticks, flags carry no text label.
const VIOLATION_LABELS_MAX: usize = 80;
/// Above this many, violation ticks are hairlines rather than bands.
const VIOLATION_BANDS_MAX: usize = 20;

/// A bin: (segment, index within it).
type Bin = (usize, u64);

/// Steps of one kind by one actor in one bin.
struct Group {
    count: usize,
    first_tick: u64,
    last_tick: u64,
    /// The first few, as trace indexes.
    lines: Vec<usize>,
}

pub(super) fn write(out: &mut String, page: &Page<'_>) {
    out.push_str("<section id=\"timeline\">\n<h2>Timeline</h2>\n");
    let events = page.events;
    if events.is_empty() {
        out.push_str("<p class=\"note\">No trace was kept for this seed.</p>\n</section>\n");
        return;
    }
    let violations = &page.result.violations;
    let end_tick = events.last().map_or(0, |event| event.tick).max(page.result.ticks);

    // The actors, in role order; the simulator's own lane only if it has marks.
    let mut lanes: BTreeSet<ActorId> = BTreeSet::new();
    let mut groups: BTreeMap<(ActorId, Bin, Mark), Group> = BTreeMap::new();
    let mut notable: BTreeSet<u64> = BTreeSet::new();
    notable.insert(0);
    notable.insert(end_tick);
    let marked: Vec<Vec<u64>> = violations
        .iter()
        .map(|violation| super::violations::marked_ticks(page, violation))
        .collect();
    notable.extend(marked.iter().flatten().copied());
    let spans = span::spans(events);
    for span in &spans {
        notable.insert(span.from);
        notable.insert(span.to);
    }
    for event in events {
        if eventful(&event.op) {
            notable.insert(event.tick);
        }
        if event.actor.role != Role::Sim {
            lanes.insert(event.actor);
        }
    }
    let axis = Axis::new(&notable);
    for (index, event) in events.iter().enumerate() {
        let Some((actor, mark)) = classify(event) else {
            continue;
        };
        if !axis.shows(event.tick) {
            continue;
        }
        lanes.insert(actor);
        let group = groups.entry((actor, axis.bin(event.tick), mark)).or_insert(Group {
            count: 0,
            first_tick: event.tick,
            last_tick: event.tick,
            lines: Vec::new(),
        });
        group.count += 1;
        group.last_tick = event.tick;
        if group.lines.len() < TITLE_LINES_MAX {
            group.lines.push(index);
        }
    }
    let lanes: Vec<ActorId> = lanes.into_iter().collect();
    let lane_y = |actor: ActorId| -> f64 {
        let index = lanes.binary_search(&actor).unwrap_or_default();
        TOP_PX + index as f64 * LANE_PITCH_PX
    };
    let height = TOP_PX + lanes.len() as f64 * LANE_PITCH_PX + 6.0;
    let lanes_bottom = height - 6.0;

    let span_kinds: Vec<span::Kind> = span::Kind::ALL
        .into_iter()
        .filter(|kind| spans.iter().any(|span| span.kind == *kind))
        .collect();
    let present: BTreeSet<Mark> = events.iter().filter_map(classify).map(|(_, mark)| mark).collect();
    legend(out, &axis, &span_kinds, &present);
    let clocks = clock::clocks(events);
    let label_px = if clocks.is_empty() {
        LABEL_PX
    } else {
        LABEL_PX + CLOCK_LABEL_PX
    };

    // Kills per lane, for the labels.
    let mut kills_per_lane: BTreeMap<ActorId, usize> = BTreeMap::new();
    for kill in &page.facts.kills {
        *kills_per_lane.entry(kill.actor).or_default() += 1;
    }
    out.push_str("<div class=\"tl\">\n");
    let _ = writeln!(
        out,
        "<svg class=\"lanes\" width=\"{label_px}\" height=\"{height}\" role=\"img\" aria-label=\"actors\">"
    );
    let _ = writeln!(out, "<text class=\"axistext\" x=\"6\" y=\"12\">tick →</text>");
    for (index, actor) in lanes.iter().enumerate() {
        let y = TOP_PX + index as f64 * LANE_PITCH_PX;
        let kills = kills_per_lane.get(actor).copied().unwrap_or_default();
        let _ = writeln!(
            out,
            "<text class=\"lanelabel\" x=\"6\" y=\"{:.0}\">{actor}{}{}</text>",
            y + 13.0,
            if kills > 0 {
                format!(" <tspan class=\"killtext\">✕{kills}</tspan>")
            } else {
                String::new()
            },
            match clocks.get(actor) {
                Some(clock) => format!(
                    " <tspan class=\"clocktext\">{}<title>{}</title></tspan>",
                    Esc(&clock.badge()),
                    Esc(&clock.title(*actor))
                ),
                None => String::new(),
            }
        );
    }
    out.push_str("</svg>\n<div class=\"scroll\">\n");
    let _ = writeln!(
        out,
        "<svg width=\"{:.0}\" height=\"{height:.0}\" role=\"img\" aria-label=\"timeline of the run\">\n\
         <defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" \
         patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fce8e6\"/>\
         <rect width=\"2\" height=\"6\" fill=\"#f28b82\"/></pattern></defs>",
        axis.width
    );

    // Lane backgrounds.
    for index in 0..lanes.len() {
        let _ = writeln!(
            out,
            "<rect class=\"{}\" x=\"0\" y=\"{:.0}\" width=\"{:.0}\" height=\"{LANE_PX}\"/>",
            if index % 2 == 0 { "lane-bg" } else { "lane-alt" },
            TOP_PX + index as f64 * LANE_PITCH_PX,
            axis.width
        );
    }
    folds(out, page, &axis, lanes_bottom);
    ticks_axis(out, &axis, lanes_bottom);
    violation_lines(out, page, &marked, &axis, lanes_bottom);

    // Down spans, under the marks.
    for kill in &page.facts.kills {
        let from = axis.x(kill.tick);
        let to = axis.x(kill.back.unwrap_or(end_tick));
        let _ = writeln!(
            out,
            "<rect class=\"down\" x=\"{from:.1}\" y=\"{:.0}\" width=\"{:.1}\" height=\"{LANE_PX}\">\
             <title>{} down from tick {} to {}</title></rect>",
            lane_y(kill.actor),
            (to - from).max(1.0),
            kill.actor,
            kill.tick,
            kill.back.map_or("the end".to_string(), |tick| tick.to_string())
        );
    }

    span::draw(out, &spans, &axis, &lane_y);

    // Ordinary marks, grouped; draw order by mark kind so state changes sit on top.
    let mut ordered: Vec<_> = groups.iter().collect();
    ordered.sort_by_key(|((actor, bin, mark), _)| (*mark, *actor, *bin));
    let mut run: Option<Run> = None;
    for ((actor, bin, mark), group) in ordered {
        if mark.in_runs() {
            match &mut run {
                Some(open)
                    if open.mark == *mark && open.actor == *actor && open.end.0 == bin.0 && open.end.1 + 1 == bin.1 =>
                {
                    open.end = *bin;
                    open.last_tick = group.last_tick;
                    open.count += group.count;
                }
                _ => {
                    if let Some(done) = run.take() {
                        bar(out, events, &axis, &lane_y, &done);
                    }
                    run = Some(Run {
                        mark: *mark,
                        actor: *actor,
                        start: *bin,
                        end: *bin,
                        first_tick: group.first_tick,
                        last_tick: group.last_tick,
                        count: group.count,
                        sample: group.lines[0],
                    });
                }
            }
            continue;
        }
        let (offset, band) = mark.band();
        let _ = write!(
            out,
            "<rect class=\"{}\" x=\"{:.1}\" y=\"{:.0}\" width=\"2\" height=\"{band:.0}\"><title>{actor} ",
            mark.class(),
            axis.bin_x(*bin),
            lane_y(*actor) + offset
        );
        if group.count == 1 {
            let event = &events[group.lines[0]];
            let _ = write!(
                out,
                "· {} {}",
                event.tick,
                Esc(&clip(&mark::describe(&event.op), TITLE_CHARS_MAX))
            );
        } else {
            let _ = write!(
                out,
                "ticks {}–{}: {} × {}",
                group.first_tick,
                group.last_tick,
                group.count,
                mark.name()
            );
            for line in &group.lines {
                let event = &events[*line];
                let _ = write!(
                    out,
                    "\n{} {}",
                    event.tick,
                    Esc(&clip(&mark::describe(&event.op), TITLE_CHARS_MAX))
                );
            }
            if group.count > group.lines.len() {
                out.push_str("\n…");
            }
        }
        out.push_str("</title></rect>\n");
    }
    if let Some(done) = run {
        bar(out, events, &axis, &lane_y, &done);
    }

    phases(out, events, &axis, lanes_bottom);
    kills(out, page, &axis, &lane_y, end_tick);
    out.push_str("</svg>\n</div>\n</div>\n</section>\n");
}
