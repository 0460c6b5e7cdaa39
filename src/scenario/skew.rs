//! The scenario key of clock faults: `[faults.skew]`.
//!
//! Off unless written, and absent from a scenario (or a capsule) that does
//! not use it. Validates itself as it is read, so an error names the key's
//! file, line and path like any other.
//!
//! ```toml
//! [faults.skew]        # each actor's clock is off by a bounded offset
//! max_ticks = 10       # offsets are drawn in [-max_ticks, +max_ticks]
//! step_rate = "1/200"  # per actor step in the fault phase: the clock steps
//!                      # to a new offset in the same bounds (an NTP correction)
//! ```
//!
//! What an offset means and where it is read: `sim::simulator::skew`.

use serde::{Deserialize, Serialize};

use crate::ratio::Ratio;

/// Clock skew: every actor's clock reads the true tick plus an offset drawn
/// in `[-max_ticks, max_ticks]` at the start of the run; at each of its steps
/// in the fault phase, with chance `step_rate`, the clock steps (forward or
/// backward) to a new offset drawn in the same bounds. Offsets stay after
/// the fault phase: a machine's clock does not heal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "SkewToml")]
pub struct SkewFaults {
    /// The bound `S` on every offset, in ticks.
    pub max_ticks: u64,
    /// Chance per actor step in the fault phase that its clock steps. Default "0/1".
    #[serde(skip_serializing_if = "zero")]
    pub step_rate: Ratio,
}

impl SkewFaults {
    /// The bound `S` of a scenario's skew, 0 without skew. Kept out of line
    /// on purpose: inlined, the optimiser may do arithmetic on a `None`'s
    /// undefined payload before testing the discriminant (harmless, but
    /// valgrind's memcheck in `.ci/valgrind` rightly flags the jump).
    #[inline(never)]
    pub fn bound(skew: Option<SkewFaults>) -> u64 {
        match skew {
            Some(skew) => skew.max_ticks,
            None => 0,
        }
    }
}

fn zero(ratio: &Ratio) -> bool {
    ratio.is_zero()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkewToml {
    max_ticks: u64,
    #[serde(default)]
    step_rate: Ratio,
}

impl TryFrom<SkewToml> for SkewFaults {
    type Error = String;

    fn try_from(toml: SkewToml) -> Result<SkewFaults, String> {
        if toml.max_ticks == 0 || toml.max_ticks > 1_000_000 {
            return Err(format!(
                "faults.skew.max_ticks must be between 1 and 1000000, got {}",
                toml.max_ticks
            ));
        }
        Ok(SkewFaults {
            max_ticks: toml.max_ticks,
            step_rate: toml.step_rate,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::scenario::parse;

    fn parse_text(text: &str) -> Result<crate::scenario::Scenario, String> {
        parse(text, Path::new("scenarios/test.toml")).map_err(|error| error.to_string())
    }

    #[test]
    fn off_unless_written_and_absent_from_what_is_written_back() {
        let scenario = parse_text("[leases]\nticks = 80\n").unwrap();
        assert!(scenario.faults.skew.is_none());
        assert_eq!(scenario.leases.unwrap().margin_ticks, 0);
        let text = toml::to_string(&scenario).unwrap();
        assert!(!text.contains("skew") && !text.contains("margin"), "{text}");
    }

    #[test]
    fn parses_and_round_trips() {
        let scenario = parse_text(
            "[leases]\nticks = 80\nmargin_ticks = 20\n[faults.skew]\nmax_ticks = 10\nstep_rate = \"1/50\"\n",
        )
        .unwrap();
        let skew = scenario.faults.skew.unwrap();
        assert_eq!((skew.max_ticks, skew.step_rate), (10, Ratio::new(1, 50)));
        assert_eq!(scenario.leases.unwrap().margin_ticks, 20);
        let again = parse_text(&toml::to_string(&scenario).unwrap()).unwrap();
        assert_eq!(again.faults.skew, scenario.faults.skew);
        assert_eq!(again.leases, scenario.leases);
        // The step rate may be left out: offsets drawn once, never stepped.
        let fixed = parse_text("[faults.skew]\nmax_ticks = 3\n").unwrap();
        assert!(fixed.faults.skew.unwrap().step_rate.is_zero());
    }

    #[test]
    fn bad_values_name_their_key_and_line() {
        let message = parse_text("description = \"x\"\n[faults.skew]\nmax_ticks = 0\n").unwrap_err();
        assert!(message.starts_with("scenarios/test.toml:"), "{message}");
        assert!(message.contains("faults.skew"), "{message}");
        let message = parse_text("[faults.skew]\nmax_ticks = 5\nstep_rate = \"3/2\"\n").unwrap_err();
        assert!(message.contains("step_rate"), "{message}");
        let message = parse_text("[faults.skew]\nmax_tick = 5\n").unwrap_err();
        assert!(message.contains("max_tick"), "{message}");
        let message = parse_text("[leases]\nticks = 80\nmargin_ticks = 80\n").unwrap_err();
        assert!(message.contains("margin_ticks"), "{message}");
        let message = parse_text("store = \"group_commit\"\n[faults.skew]\nmax_ticks = 5\n").unwrap_err();
        assert!(
            message.contains("faults.skew") && message.contains("group_commit"),
            "{message}"
        );
    }
}
