//! Clock faults on the timeline: each actor's clock offset as a badge on
//! its lane label ("clock +7", or "clock +7 → −5" once it stepped), so a
//! reader sees at once whose clock lies and by how much; the steps
//! themselves are marks (`mark.rs`, "clock stepped −12 → offset −5").
//!
//! An actor's clock reads the true tick plus its offset: `Op::Skew` sets the
//! offset from the start, `Op::ClockStep` moves it. Actors without either
//! have no badge, and a run without clock faults shows none of this.

use std::collections::BTreeMap;

use super::super::text::signed;
use crate::actors::ActorId;
use crate::trace::{Op, TraceEvent};

/// One actor's clock over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Clock {
    /// The offset from the start (`Op::Skew`; 0 if it only stepped).
    pub(super) start: i64,
    /// The offset at the end of the trace.
    pub(super) end: i64,
    pub(super) steps: usize,
}

impl Clock {
    /// The badge text: "clock +7", or "clock +7 → −5" after steps.
    pub(super) fn badge(&self) -> String {
        if self.steps == 0 {
            format!("clock {}", signed(self.start))
        } else {
            format!("clock {} → {}", signed(self.start), signed(self.end))
        }
    }

    /// The badge's tooltip.
    pub(super) fn title(&self, actor: ActorId) -> String {
        let mut title = format!(
            "{actor}'s clock reads the true tick {} from the start",
            signed(self.start)
        );
        if self.steps > 0 {
            title.push_str(&format!(
                "; stepped {} time{}, it ends at {}",
                self.steps,
                if self.steps == 1 { "" } else { "s" },
                signed(self.end)
            ));
        }
        title
    }
}

/// The clock of every actor that had a clock fault.
pub(super) fn clocks(events: &[TraceEvent]) -> BTreeMap<ActorId, Clock> {
    let mut clocks: BTreeMap<ActorId, Clock> = BTreeMap::new();
    for event in events {
        match event.op {
            Op::Skew { offset } => {
                let clock = clocks.entry(event.actor).or_default();
                clock.start = offset;
                clock.end = offset;
            }
            Op::ClockStep { offset, .. } => {
                let clock = clocks.entry(event.actor).or_default();
                clock.end = offset;
                clock.steps += 1;
            }
            _ => {}
        }
    }
    clocks
}
