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
//! Kills are drawn one by one, in red with their kill point, over the
//! hatched span the actor stayed down; kills that interrupted something a
//! violation is about are outlined. Violation ticks are yellow lines under
//! the marks with a flag on top linked to the violation; the quiet phase and settling are
//! dashed lines. Lane labels sit in a second SVG outside the scrolling one,
//! so they stay in view.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::Page;
use super::text::{Esc, clip, command_anchor, tick_anchor, violation_anchor};
use crate::actors::{ActorId, Role};
use crate::store::Lookup;
use crate::trace::{Op, TraceEvent, render};

/// Idle stretches longer than this are folded.
const GAP_TICKS: u64 = 300;
/// Ticks kept visible on each side of a fold.
const MARGIN_TICKS: u64 = 20;
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

/// What a mark stands for; also its draw order (later on top) and CSS class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Mark {
    Busy,
    Send,
    Dispatch,
    Probe,
    Reply,
    Timeout,
    Duplicate,
    Lost,
    Conflict,
    KeyConflict,
    Failed,
    Commit,
    Apply,
    Done,
    Open,
}

impl Mark {
    const ALL: [Mark; 15] = [
        Mark::Commit,
        Mark::Conflict,
        Mark::Send,
        Mark::Dispatch,
        Mark::Reply,
        Mark::Timeout,
        Mark::Lost,
        Mark::Apply,
        Mark::Duplicate,
        Mark::KeyConflict,
        Mark::Done,
        Mark::Probe,
        Mark::Failed,
        Mark::Open,
        Mark::Busy,
    ];

    /// Kinds that come in long runs (retries), drawn as bars over adjacent bins.
    fn in_runs(self) -> bool {
        matches!(self, Mark::Busy | Mark::Failed)
    }

    fn class(self) -> &'static str {
        match self {
            Mark::Busy => "busy",
            Mark::Send => "send",
            Mark::Dispatch => "dispatch",
            Mark::Probe => "probe",
            Mark::Reply => "reply",
            Mark::Timeout => "timeout",
            Mark::Duplicate => "dup",
            Mark::Lost => "lost",
            Mark::Conflict => "conflict",
            Mark::KeyConflict => "keyconflict",
            Mark::Failed => "failed",
            Mark::Commit => "commit",
            Mark::Apply => "apply",
            Mark::Done => "mark",
            Mark::Open => "open",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mark::Busy => "busy (lock held elsewhere, retried)",
            Mark::Send => "send to a receiver",
            Mark::Dispatch => "writer sends itself (outside the outbox)",
            Mark::Probe => "key-conflict probe",
            Mark::Reply => "reply received",
            Mark::Timeout => "reply timed out",
            Mark::Duplicate => "duplicate (folded by the receiver, or by the network)",
            Mark::Lost => "message lost",
            Mark::Conflict => "stale writer rejected (conflict)",
            Mark::KeyConflict => "key conflict at the receiver",
            Mark::Failed => "step failed",
            Mark::Commit => "commit (event + commands)",
            Mark::Apply => "effect applied",
            Mark::Done => "outbox row marked done",
            Mark::Open => "open / restart",
        }
    }

    /// Vertical placement in the lane, as (offset, height): sends on top,
    /// answers below, state changes over the full lane, busy a faint floor.
    fn band(self) -> (f64, f64) {
        match self {
            Mark::Busy => (LANE_PX - 3.0, 3.0),
            Mark::Failed => (LANE_PX - 4.0, 4.0),
            Mark::Send | Mark::Dispatch | Mark::Probe => (1.0, 7.0),
            Mark::Reply | Mark::Timeout | Mark::Duplicate | Mark::Lost => (10.0, 7.0),
            _ => (0.0, LANE_PX),
        }
    }
}

/// The lane and mark of a trace line, if it is drawn as an ordinary mark.
fn classify(event: &TraceEvent) -> Option<(ActorId, Mark)> {
    let actor = event.actor;
    let mark = match &event.op {
        Op::Open { .. } | Op::Restart { .. } => Mark::Open,
        Op::Commit { appended } if !appended.is_empty() => Mark::Commit,
        Op::Conflict { .. } => Mark::Conflict,
        Op::Send { .. } => Mark::Send,
        Op::Dispatch { .. } => Mark::Dispatch,
        Op::Reply { .. } => Mark::Reply,
        Op::Timeout { .. } => Mark::Timeout,
        Op::MarkDone { .. } => Mark::Done,
        Op::Apply { .. } => Mark::Apply,
        Op::Lookup { found, .. } => match found {
            Lookup::New => return None,
            Lookup::Seen { .. } => Mark::Duplicate,
            Lookup::Conflict => Mark::KeyConflict,
        },
        // Network events belong to the actor that missed or got the message.
        Op::Lost { to, .. } => return Some((*to, Mark::Lost)),
        Op::Duplicated { to, .. } => return Some((*to, Mark::Duplicate)),
        Op::Probe { .. } | Op::ProbeReply { .. } => Mark::Probe,
        Op::Busy { .. } => Mark::Busy,
        Op::Failed { .. } | Op::Died { .. } => Mark::Failed,
        _ => return None,
    };
    Some((actor, mark))
}

/// Whether a step changes state (or tells of a change): stretches without
/// one are folded.
fn eventful(op: &Op) -> bool {
    match op {
        Op::Open { .. }
        | Op::Kill { .. }
        | Op::Restart { .. }
        | Op::Quiet
        | Op::Settled
        | Op::InsertEvent { .. }
        | Op::Conflict { .. }
        | Op::Send { .. }
        | Op::Reply { .. }
        | Op::Timeout { .. }
        | Op::MarkDone { .. }
        | Op::Apply { .. }
        | Op::Lost { .. }
        | Op::Duplicated { .. }
        | Op::Probe { .. }
        | Op::ProbeReply { .. }
        | Op::Dispatch { .. } => true,
        Op::Commit { appended } => !appended.is_empty(),
        Op::Lookup { found, .. } => !matches!(found, Lookup::New),
        _ => false,
    }
}

/// Ticks → x, with uneventful stretches folded.
struct Axis {
    /// Unfolded stretches as (first tick, last tick, x of the first tick).
    segments: Vec<(u64, u64, f64)>,
    px_per_tick: f64,
    bin_ticks: u64,
    width: f64,
}

impl Axis {
    fn new(ticks: &BTreeSet<u64>) -> Axis {
        let mut stretches: Vec<(u64, u64)> = Vec::new();
        for &tick in ticks {
            match stretches.last_mut() {
                Some((_, last)) if tick <= *last + GAP_TICKS => *last = tick,
                _ => stretches.push((tick, tick)),
            }
        }
        if stretches.is_empty() {
            stretches.push((0, 0));
        }
        // Keep a margin around each stretch, without overlapping the next.
        let count = stretches.len();
        let mut padded = Vec::with_capacity(count);
        for (index, (first, last)) in stretches.iter().enumerate() {
            let first = if index == 0 {
                *first
            } else {
                first.saturating_sub(MARGIN_TICKS)
            };
            let last = if index + 1 == count {
                last + 5
            } else {
                last + MARGIN_TICKS
            };
            padded.push((first, last));
        }
        let active: u64 = padded.iter().map(|(first, last)| last - first + 1).sum();
        let px_per_tick = (TARGET_PX / active as f64).clamp(PX_PER_TICK_MIN, PX_PER_TICK_MAX);
        let bin_ticks = ((BIN_PX / px_per_tick).ceil() as u64).max(1);
        let mut x = 8.0;
        let mut segments = Vec::with_capacity(count);
        for (first, last) in padded {
            segments.push((first, last, x));
            x += (last - first + 1) as f64 * px_per_tick + FOLD_PX;
        }
        Axis {
            segments,
            px_per_tick,
            bin_ticks,
            width: x - FOLD_PX + 8.0,
        }
    }

    /// The segment holding `tick`, or the one before the fold holding it.
    fn segment(&self, tick: u64) -> usize {
        self.segments
            .partition_point(|(first, _, _)| *first <= tick)
            .saturating_sub(1)
    }

    fn x(&self, tick: u64) -> f64 {
        let (first, last, x) = self.segments[self.segment(tick)];
        if tick < first {
            x
        } else if tick <= last {
            x + (tick - first) as f64 * self.px_per_tick
        } else {
            // Inside a fold.
            x + (last - first + 1) as f64 * self.px_per_tick + FOLD_PX / 2.0
        }
    }

    /// Whether `tick` is drawn (not folded away).
    fn shows(&self, tick: u64) -> bool {
        let (first, last, _) = self.segments[self.segment(tick)];
        tick >= first && tick <= last
    }

    /// The bin holding `tick`.
    fn bin(&self, tick: u64) -> Bin {
        let segment = self.segment(tick);
        let first = self.segments[segment].0;
        (segment, tick.saturating_sub(first) / self.bin_ticks)
    }

    fn bin_x(&self, (segment, bin): Bin) -> f64 {
        let (_, _, x) = self.segments[segment];
        x + (bin * self.bin_ticks) as f64 * self.px_per_tick
    }
}

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

    legend(out, &axis);

    // Kills per lane, for the labels.
    let mut kills_per_lane: BTreeMap<ActorId, usize> = BTreeMap::new();
    for kill in &page.facts.kills {
        *kills_per_lane.entry(kill.actor).or_default() += 1;
    }
    out.push_str("<div class=\"tl\">\n");
    let _ = writeln!(
        out,
        "<svg class=\"lanes\" width=\"{LABEL_PX}\" height=\"{height}\" role=\"img\" aria-label=\"actors\">"
    );
    let _ = writeln!(out, "<text class=\"axistext\" x=\"6\" y=\"12\">tick →</text>");
    for (index, actor) in lanes.iter().enumerate() {
        let y = TOP_PX + index as f64 * LANE_PITCH_PX;
        let kills = kills_per_lane.get(actor).copied().unwrap_or_default();
        let _ = writeln!(
            out,
            "<text class=\"lanelabel\" x=\"6\" y=\"{:.0}\">{actor}{}</text>",
            y + 13.0,
            if kills > 0 {
                format!(" <tspan class=\"killtext\">✕{kills}</tspan>")
            } else {
                String::new()
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
                Esc(&clip(&render::describe(&event.op), TITLE_CHARS_MAX))
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
                    Esc(&clip(&render::describe(&event.op), TITLE_CHARS_MAX))
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

/// Steps of one kind by one actor over adjacent bins, drawn as one bar.
struct Run {
    mark: Mark,
    actor: ActorId,
    start: Bin,
    end: Bin,
    first_tick: u64,
    last_tick: u64,
    count: usize,
    /// The first step, as a trace index.
    sample: usize,
}

fn bar(out: &mut String, events: &[TraceEvent], axis: &Axis, lane_y: &dyn Fn(ActorId) -> f64, run: &Run) {
    let (offset, band) = run.mark.band();
    let x = axis.bin_x(run.start);
    let width = (axis.bin_x(run.end) - x + axis.bin_ticks as f64 * axis.px_per_tick).max(1.0);
    let sample = &events[run.sample];
    let _ = writeln!(
        out,
        "<rect class=\"{}\" x=\"{x:.1}\" y=\"{:.0}\" width=\"{width:.1}\" height=\"{band:.0}\">\
         <title>{} ticks {}–{}: {} × {}\nfirst: {} {}</title></rect>",
        run.mark.class(),
        lane_y(run.actor) + offset,
        run.actor,
        run.first_tick,
        run.last_tick,
        run.count,
        run.mark.name(),
        sample.tick,
        Esc(&clip(&render::describe(&sample.op), TITLE_CHARS_MAX))
    );
}

fn legend(out: &mut String, axis: &Axis) {
    out.push_str("<div class=\"legend\">");
    let swatch = |out: &mut String, color: &str, text: &str| {
        let _ = write!(out, "<span><i style=\"background:{color}\"></i>{text}</span>");
    };
    swatch(out, "#d93025", "<b>kill</b> (with its kill point)");
    swatch(
        out,
        "repeating-linear-gradient(45deg,#fce8e6 0 3px,#f28b82 3px 5px)",
        "actor down",
    );
    for mark in Mark::ALL {
        let color = match mark {
            Mark::Busy => "#c4c7c5",
            Mark::Send => "#7b1fa2",
            Mark::Dispatch => "#d81b60",
            Mark::Probe => "#a142f4",
            Mark::Reply => "#00897b",
            Mark::Timeout => "#f9ab00",
            Mark::Duplicate => "#81c995",
            Mark::Lost => "#9aa0a6",
            Mark::Conflict | Mark::KeyConflict => "#e8710a",
            Mark::Failed => "#ee675c",
            Mark::Commit => "#1a57c4",
            Mark::Apply => "#188038",
            Mark::Done => "#202124",
            Mark::Open => "#34a853",
        };
        swatch(out, color, mark.name());
    }
    swatch(out, "rgba(249,171,0,.5)", "violation tick");
    out.push_str("</div>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">x = simulated tick ({:.2} px per tick; steps within {} tick{} are drawn as one mark, \
         hover for the steps). Stretches of more than {GAP_TICKS} ticks where nothing is committed, delivered, \
         applied, killed or restarted are folded into grey bands (hover for what they hide). Sends are drawn in the upper half of a lane, answers in the lower half.</p>",
        axis.px_per_tick,
        axis.bin_ticks,
        if axis.bin_ticks == 1 { "" } else { "s" }
    );
}

/// The folded stretches, as grey bands whose tooltip counts what they hide.
fn folds(out: &mut String, page: &Page<'_>, axis: &Axis, bottom: f64) {
    let events = page.events;
    for pair in axis.segments.windows(2) {
        let (first, last, x) = pair[0];
        let next = pair[1].0;
        let x = x + (last - first + 1) as f64 * axis.px_per_tick;
        let hidden = &events
            [events.partition_point(|event| event.tick <= last)..events.partition_point(|event| event.tick < next)];
        let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
        for event in hidden {
            let kind = match classify(event) {
                Some((_, mark)) => mark.name(),
                None => "other (polling, loads, decisions)",
            };
            *kinds.entry(kind).or_default() += 1;
        }
        let _ = write!(
            out,
            "<g><rect class=\"gap\" x=\"{:.1}\" y=\"{TOP_PX}\" width=\"{:.1}\" height=\"{:.0}\"/>\
             <text class=\"gaptext\" x=\"{:.1}\" y=\"{:.0}\" text-anchor=\"middle\">⋯</text>\
             <title>ticks {}–{} folded: nothing committed, delivered, applied, killed or restarted; {} step(s)",
            x + 4.0,
            FOLD_PX - 8.0,
            bottom - TOP_PX,
            x + FOLD_PX / 2.0,
            TOP_PX - 4.0,
            last + 1,
            next.saturating_sub(1),
            hidden.len()
        );
        for (kind, count) in &kinds {
            let _ = write!(out, "\n{count} × {kind}");
        }
        if let Some(failure) = hidden.iter().find(|event| matches!(event.op, Op::Failed { .. })) {
            let _ = write!(
                out,
                "\ne.g. {} {} {}",
                failure.tick,
                failure.actor,
                Esc(&clip(&render::describe(&failure.op), TITLE_CHARS_MAX))
            );
        }
        out.push_str("</title></g>\n");
    }
}

/// Tick labels along the top, at a round step.
fn ticks_axis(out: &mut String, axis: &Axis, bottom: f64) {
    let mut step = 1u64;
    'search: for exponent in 0..12 {
        for factor in [1u64, 2, 5] {
            step = factor * 10u64.pow(exponent);
            if step as f64 * axis.px_per_tick >= 70.0 {
                break 'search;
            }
        }
    }
    for (first, last, _) in &axis.segments {
        let mut tick = first.div_ceil(step) * step;
        while tick <= *last {
            let x = axis.x(tick);
            let _ = writeln!(
                out,
                "<line class=\"axis\" x1=\"{x:.1}\" y1=\"14\" x2=\"{x:.1}\" y2=\"{bottom:.0}\" stroke-opacity=\".35\"/>\
                 <text class=\"axistext\" x=\"{:.1}\" y=\"11\">{tick}</text>",
                x + 2.0
            );
            tick += step;
        }
    }
}

/// The quiet phase and settling, as dashed lines over every lane.
fn phases(out: &mut String, events: &[TraceEvent], axis: &Axis, bottom: f64) {
    for event in events {
        let label = match event.op {
            Op::Quiet => "quiet: faults off",
            Op::Settled => "settled",
            _ => continue,
        };
        let x = axis.x(event.tick);
        let _ = writeln!(
            out,
            "<g><line class=\"phase\" x1=\"{x:.1}\" y1=\"14\" x2=\"{x:.1}\" y2=\"{bottom:.0}\"/>\
             <text class=\"phasetext\" x=\"{:.1}\" y=\"{:.0}\">{label}</text><title>tick {}: {label}</title></g>",
            x + 3.0,
            TOP_PX - 4.0,
            event.tick
        );
    }
}

/// Every kill, with its point, linked to the first command it interrupted.
fn kills(out: &mut String, page: &Page<'_>, axis: &Axis, lane_y: &dyn Fn(ActorId) -> f64, end_tick: u64) {
    let facts = &page.facts;
    for (index, kill) in facts.kills.iter().enumerate() {
        let culprit = kill.commands.iter().any(|id| {
            facts
                .commands
                .get(id)
                .is_some_and(|command| !command.violations.is_empty())
        }) || kill.events.iter().any(|(workflow, _)| {
            facts
                .workflows
                .get(workflow)
                .is_some_and(|workflow| !workflow.violations.is_empty())
        });
        let x = axis.x(kill.tick);
        let y = lane_y(kill.actor);
        let short = kill.point.split_once('.').map_or(kill.point, |(_, point)| point);
        let link = kill.commands.first().map(|id| command_anchor(id));
        if let Some(anchor) = &link {
            let _ = write!(out, "<a href=\"#{anchor}\">");
        }
        let _ = writeln!(
            out,
            "<g id=\"kill-{index}\"><rect class=\"killmark{}\" x=\"{:.1}\" y=\"{:.0}\" width=\"3\" height=\"{:.0}\"/>\
             <text class=\"killtext\" x=\"{:.1}\" y=\"{:.0}\">✕ {}</text>\
             <title>tick {}: {} killed at {}; it {}; {}</title></g>",
            if culprit { " culprit" } else { "" },
            x - 1.0,
            y - 2.0,
            LANE_PX + 4.0,
            x + 4.0,
            y + 13.0,
            Esc(short),
            kill.tick,
            kill.actor,
            Esc(kill.point),
            Esc(&kill.doing),
            match kill.back {
                Some(tick) => format!("restarted at tick {tick}"),
                None => format!("still down at tick {end_tick}"),
            }
        );
        if link.is_some() {
            out.push_str("</a>\n");
        }
    }
}

/// One band per distinct violation tick, linked to the first violation there.
/// Violation ticks: a faint line over every lane, under the marks, and a
/// flag in the top strip linked to the first violation at that tick. A band
/// is wide only while there are few, so a run with hundreds stays legible.
/// `marked` holds each violation's ticks (see `violations::marked_ticks`).
fn violation_lines(out: &mut String, page: &Page<'_>, marked: &[Vec<u64>], axis: &Axis, bottom: f64) {
    let mut by_tick: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (index, ticks) in marked.iter().enumerate() {
        for tick in ticks {
            by_tick.entry(*tick).or_default().push(index);
        }
    }
    let labelled = by_tick.len() <= VIOLATION_LABELS_MAX;
    let width = if by_tick.len() <= VIOLATION_BANDS_MAX { 4.0 } else { 1.0 };
    for (tick, indexes) in &by_tick {
        let x = axis.x(*tick);
        let _ = writeln!(
            out,
            "<rect class=\"vband\" x=\"{:.1}\" y=\"{TOP_PX}\" width=\"{width}\" height=\"{:.0}\"/>",
            x - width / 2.0,
            bottom - TOP_PX
        );
        let mut invariants: Vec<String> = indexes
            .iter()
            .map(|index| page.result.violations[*index].invariant.to_string())
            .collect();
        invariants.dedup();
        let _ = write!(
            out,
            "<a href=\"#{}\"><g id=\"{}\"><rect class=\"vflag\" x=\"{:.1}\" y=\"16\" width=\"3\" height=\"{:.0}\"/>",
            violation_anchor(indexes[0]),
            tick_anchor(*tick),
            x - 1.5,
            TOP_PX - 16.0
        );
        if labelled {
            let _ = write!(
                out,
                "<text class=\"vtext\" x=\"{:.1}\" y=\"26\">{}</text>",
                x + 3.0,
                invariants.join(" ")
            );
        }
        let _ = write!(out, "<title>tick {tick}:");
        for index in indexes.iter().take(2) {
            let violation = &page.result.violations[*index];
            let _ = write!(
                out,
                "\n#{} {}: {}",
                index + 1,
                violation.invariant,
                Esc(&clip(&violation.message, TITLE_CHARS_MAX))
            );
        }
        if indexes.len() > 2 {
            let _ = write!(out, "\n… {} more", indexes.len() - 2);
        }
        out.push_str("</title></g></a>\n");
    }
}
