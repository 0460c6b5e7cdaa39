//! Drawing the timeline's parts: bars of repeated steps, the legend, folds,
//! the tick axis, the phases, kills and violation lines.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::super::Page;
use super::super::text::{Esc, clip, command_anchor, tick_anchor, violation_anchor};
use super::axis::Axis;
use super::mark::{Mark, classify};
use super::span::Kind;
use super::{Bin, FOLD_PX, GAP_TICKS, LANE_PX, TITLE_CHARS_MAX, TOP_PX, VIOLATION_BANDS_MAX, VIOLATION_LABELS_MAX};
use crate::actors::ActorId;
use crate::trace::{Op, TraceEvent, render};

/// Steps of one kind by one actor over adjacent bins, drawn as one bar.
pub(super) struct Run {
    pub(super) mark: Mark,
    pub(super) actor: ActorId,
    pub(super) start: Bin,
    pub(super) end: Bin,
    pub(super) first_tick: u64,
    pub(super) last_tick: u64,
    pub(super) count: usize,
    /// The first step, as a trace index.
    pub(super) sample: usize,
}

pub(super) fn bar(out: &mut String, events: &[TraceEvent], axis: &Axis, lane_y: &dyn Fn(ActorId) -> f64, run: &Run) {
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

/// The legend: kills, down spans, the span kinds the run has, every mark
/// but those of optional features the run does not have (`present`).
pub(super) fn legend(out: &mut String, axis: &Axis, spans: &[Kind], present: &BTreeSet<Mark>) {
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
    for kind in spans {
        swatch(out, kind.color(), kind.name());
    }
    for mark in Mark::ALL {
        if mark.optional() && !present.contains(&mark) {
            continue;
        }
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
            Mark::LateAck => "#b3261e",
            Mark::Purge => "#5f6368",
            Mark::ClockStep => "#0b8fa8",
            Mark::DeadLetter => "#6a1b9a",
            Mark::Backup => "#00695c",
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
pub(super) fn folds(out: &mut String, page: &Page<'_>, axis: &Axis, bottom: f64) {
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
pub(super) fn ticks_axis(out: &mut String, axis: &Axis, bottom: f64) {
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
pub(super) fn phases(out: &mut String, events: &[TraceEvent], axis: &Axis, bottom: f64) {
    for event in events {
        let label = match event.op {
            Op::Quiet => "quiet: faults off",
            Op::Settled => "settled",
            Op::Stalled { .. } => "stalled: ends unsettled",
            Op::Certain { .. } => "finding certain: ends after a grace",
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
pub(super) fn kills(out: &mut String, page: &Page<'_>, axis: &Axis, lane_y: &dyn Fn(ActorId) -> f64, end_tick: u64) {
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
        // To the first command it was handling that has a row (a receiver
        // handling a key that is no command's links nowhere).
        let link = kill
            .commands
            .iter()
            .find(|id| facts.commands.get(*id).is_some_and(|command| command.shown()))
            .map(|id| command_anchor(id));
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
pub(super) fn violation_lines(out: &mut String, page: &Page<'_>, marked: &[Vec<u64>], axis: &Axis, bottom: f64) {
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
        let mut invariants: Vec<String> = Vec::new();
        for index in indexes {
            let invariant = page.result.violations[*index].invariant.to_string();
            if !invariants.contains(&invariant) {
                invariants.push(invariant);
            }
        }
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
