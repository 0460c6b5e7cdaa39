//! The x axis: ticks to pixels, with uneventful stretches folded into
//! narrow bands and steps binned.

use std::collections::BTreeSet;

use super::{BIN_PX, Bin, FOLD_PX, GAP_TICKS, MARGIN_TICKS, PX_PER_TICK_MAX, PX_PER_TICK_MIN, TARGET_PX};

/// Ticks → x, with uneventful stretches folded.
pub(super) struct Axis {
    /// Unfolded stretches as (first tick, last tick, x of the first tick).
    pub(super) segments: Vec<(u64, u64, f64)>,
    pub(super) px_per_tick: f64,
    pub(super) bin_ticks: u64,
    pub(super) width: f64,
}

impl Axis {
    pub(super) fn new(ticks: &BTreeSet<u64>) -> Axis {
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
    pub(super) fn segment(&self, tick: u64) -> usize {
        self.segments
            .partition_point(|(first, _, _)| *first <= tick)
            .saturating_sub(1)
    }

    pub(super) fn x(&self, tick: u64) -> f64 {
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
    pub(super) fn shows(&self, tick: u64) -> bool {
        let (first, last, _) = self.segments[self.segment(tick)];
        tick >= first && tick <= last
    }

    /// The bin holding `tick`.
    pub(super) fn bin(&self, tick: u64) -> Bin {
        let segment = self.segment(tick);
        let first = self.segments[segment].0;
        (segment, tick.saturating_sub(first) / self.bin_ticks)
    }

    pub(super) fn bin_x(&self, (segment, bin): Bin) -> f64 {
        let (_, _, x) = self.segments[segment];
        x + (bin * self.bin_ticks) as f64 * self.px_per_tick
    }
}
