//! The scenario keys of leases and pauses: `[leases]` and `[faults.pause]`.
//!
//! Both are off unless written, and leave nothing behind in a scenario (or
//! a capsule) that does not use them. Each validates itself as it is read,
//! so an error names the key's file, line and path like any other.
//!
//! ```toml
//! [leases]            # workers claim rows with leases and fencing tokens
//! ticks = 80          # a lease's length, in ticks
//! margin_ticks = 20   # a holder sends only while its clock reads < expiry - margin
//!
//! [faults.pause]      # an actor stops taking steps for a while, then goes on
//! rate = "1/150"      # per actor step in the fault phase
//! ticks_min = 100     # the pause lasts ticks_min..=ticks_max ticks
//! ticks_max = 400
//! ```

use serde::{Deserialize, Serialize};

use crate::ratio::Ratio;

/// Leases: workers claim pending rows for `ticks` ticks, each claim with a
/// fencing token, and acknowledge with it (`store::lease`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "LeasesToml")]
pub struct Leases {
    /// A lease's length in ticks, from the claim.
    pub ticks: u64,
    /// The safety margin, in ticks: a holder uses its lease (sends) only
    /// while its own clock reads before `expires - margin_ticks`, so that
    /// clocks skewed by up to half the margin never let two holders use a
    /// row at once (`check::leases`). Default 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub margin_ticks: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LeasesToml {
    ticks: u64,
    #[serde(default)]
    margin_ticks: u64,
}

impl TryFrom<LeasesToml> for Leases {
    type Error = String;

    fn try_from(toml: LeasesToml) -> Result<Leases, String> {
        if toml.ticks == 0 || toml.ticks > 1_000_000 {
            return Err(format!(
                "leases.ticks must be between 1 and 1000000, got {}",
                toml.ticks
            ));
        }
        if toml.margin_ticks >= toml.ticks {
            return Err(format!(
                "leases.margin_ticks must be below leases.ticks ({}), got {}: no lease could ever be used",
                toml.ticks, toml.margin_ticks
            ));
        }
        Ok(Leases {
            ticks: toml.ticks,
            margin_ticks: toml.margin_ticks,
        })
    }
}

/// Pauses: at each step in the fault phase, with chance `rate`, an actor
/// stops for `ticks_min..=ticks_max` ticks with its connection and memory
/// intact, then takes the step it was about to take, as if nothing
/// happened (a GC pause, a stopped VM). A lease holder paused past its
/// lease's expiry comes back to acknowledge a row someone else may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PauseToml")]
pub struct PauseFaults {
    pub rate: Ratio,
    pub ticks_min: u64,
    pub ticks_max: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PauseToml {
    rate: Ratio,
    ticks_min: u64,
    ticks_max: u64,
}

impl TryFrom<PauseToml> for PauseFaults {
    type Error = String;

    fn try_from(toml: PauseToml) -> Result<PauseFaults, String> {
        if toml.ticks_min == 0 || toml.ticks_max > 1_000_000 || toml.ticks_min > toml.ticks_max {
            return Err(format!(
                "faults.pause needs 1 <= ticks_min <= ticks_max <= 1000000, got {}..={}",
                toml.ticks_min, toml.ticks_max
            ));
        }
        Ok(PauseFaults {
            rate: toml.rate,
            ticks_min: toml.ticks_min,
            ticks_max: toml.ticks_max,
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
        let scenario = parse_text("description = \"x\"\n").unwrap();
        assert!(scenario.leases.is_none());
        assert!(scenario.faults.pause.is_none());
        let text = toml::to_string(&scenario).unwrap();
        assert!(!text.contains("leases") && !text.contains("pause"), "{text}");
    }

    #[test]
    fn both_parse_and_round_trip() {
        let scenario =
            parse_text("[leases]\nticks = 80\n[faults.pause]\nrate = \"1/150\"\nticks_min = 100\nticks_max = 400\n")
                .unwrap();
        assert_eq!(
            scenario.leases,
            Some(Leases {
                ticks: 80,
                margin_ticks: 0
            })
        );
        let pause = scenario.faults.pause.unwrap();
        assert_eq!(pause.rate, Ratio::new(1, 150));
        assert_eq!((pause.ticks_min, pause.ticks_max), (100, 400));
        let again = parse_text(&toml::to_string(&scenario).unwrap()).unwrap();
        assert_eq!(again.leases, scenario.leases);
        assert_eq!(again.faults.pause, scenario.faults.pause);
    }

    #[test]
    fn bad_values_name_their_key_and_line() {
        let message = parse_text("description = \"x\"\n[leases]\nticks = 0\n").unwrap_err();
        assert!(message.starts_with("scenarios/test.toml:"), "{message}");
        assert!(message.contains("leases"), "{message}");
        let message = parse_text("[leases]\n").unwrap_err();
        assert!(message.contains("ticks"), "{message}");
        let message = parse_text("[faults.pause]\nrate = \"1/10\"\nticks_min = 9\nticks_max = 3\n").unwrap_err();
        assert!(message.contains("faults.pause"), "{message}");
        let message =
            parse_text("[faults.pause]\nrate = \"1/10\"\nticks_min = 1\nticks_max = 3\nroles = 1\n").unwrap_err();
        assert!(message.contains("roles"), "{message}");
    }
}
