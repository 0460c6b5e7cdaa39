//! `[preempt]`: suspensions inside the store's own calls, at the points
//! where SQLite itself can be overtaken (`crashsim_vfs::preempt`).
//!
//! ```toml
//! [preempt]
//! rate = "1/8"                        # chance per scheduling point
//! points = ["lock", "unlock", "shm_lock", "sync"] # where one may land
//! hold_ticks_max = 40                 # how long a suspended call waits, at most
//! ```
//!
//! A suspended call waits 1..=`hold_ticks_max` ticks while the other actors
//! run (their own calls, their own suspensions), then goes on where it
//! stopped. A wait for a lock (`busy`) always yields while suspensions are
//! on, whatever `points` says: that is what keeps a suspended lock holder
//! from starving the connection waiting for it (docs/preemption.md).

use serde::{Deserialize, Serialize};

pub use crashsim_vfs::preempt::Kind as PreemptPoint;

use crate::prng::Prng;
use crate::ratio::Ratio;

/// The rates a swarm seed draws its suspensions at (or none, in a quarter
/// of the seeds): from nearly every step suspended to a few per seed.
const SWARM_MENU: [Ratio; 4] = [Ratio::new(1, 3), Ratio::new(1, 6), Ratio::new(1, 12), Ratio::new(1, 48)];

/// The kinds of point a scenario may name.
pub const POINT_NAMES: [&str; 5] = ["lock", "unlock", "shm_lock", "sync", "busy"];

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PreemptToml", into = "PreemptToml")]
pub struct Preempt {
    /// The chance, at each scheduling point of the kinds in `points` inside
    /// an actor's step in the fault phase, that its call is suspended there.
    pub rate: Ratio,
    /// Sorted, without repeats.
    pub points: Vec<PreemptPoint>,
    pub hold_ticks_max: u64,
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PreemptToml {
    rate: Ratio,
    #[serde(default = "default_points")]
    points: Vec<String>,
    #[serde(default = "default_hold")]
    hold_ticks_max: u64,
}

fn default_points() -> Vec<String> {
    // In WAL mode every connection holds its SHARED lock on the database
    // for as long as it is open: the locks a transaction takes and drops
    // are WAL's own (`shm_lock`).
    ["lock", "unlock", "shm_lock", "sync"].map(String::from).to_vec()
}

fn default_hold() -> u64 {
    40
}

impl Preempt {
    /// A swarm seed's own mix (`[faults] swarm = true`): off in a quarter
    /// of the seeds, else a rate from the menu at a non-empty subset of the
    /// declared points; the hold stays as declared.
    pub fn swarm(&self, prng: &mut Prng) -> Preempt {
        if self.points.is_empty() || prng.chance(Ratio::new(1, 4)) {
            return Preempt {
                rate: Ratio::ZERO,
                ..self.clone()
            };
        }
        let rate = *prng.pick(&SWARM_MENU).expect("menu is not empty");
        loop {
            let points: Vec<PreemptPoint> = self
                .points
                .iter()
                .copied()
                .filter(|_| prng.chance(Ratio::new(1, 2)))
                .collect();
            if !points.is_empty() {
                return Preempt {
                    rate,
                    points,
                    hold_ticks_max: self.hold_ticks_max,
                };
            }
        }
    }

    /// How a failing seed's line names it: `preempt=1/6@shm_lock+sync`.
    pub fn describe(&self) -> String {
        if self.rate.is_zero() {
            return "preempt=off".to_string();
        }
        let points: Vec<&str> = self.points.iter().map(|point| point.name()).collect();
        format!("preempt={}@{}", self.rate, points.join("+"))
    }
}

impl TryFrom<PreemptToml> for Preempt {
    type Error = String;

    fn try_from(toml: PreemptToml) -> Result<Preempt, String> {
        if toml.hold_ticks_max == 0 || toml.hold_ticks_max > 1_000_000 {
            return Err(format!(
                "preempt.hold_ticks_max must be 1..=1000000, got {}",
                toml.hold_ticks_max
            ));
        }
        let mut points = Vec::new();
        for name in &toml.points {
            let point = PreemptPoint::from_name(name).ok_or_else(|| {
                format!(
                    "preempt.points: no point of kind {name:?} (the kinds: {})",
                    POINT_NAMES.join(", ")
                )
            })?;
            points.push(point);
        }
        points.sort();
        points.dedup();
        if points.is_empty() && !toml.rate.is_zero() {
            return Err("preempt.points is empty: name at least one kind of point".to_string());
        }
        Ok(Preempt {
            rate: toml.rate,
            points,
            hold_ticks_max: toml.hold_ticks_max,
        })
    }
}

impl From<Preempt> for PreemptToml {
    fn from(preempt: Preempt) -> PreemptToml {
        PreemptToml {
            rate: preempt.rate,
            points: preempt.points.iter().map(|point| point.name().to_string()).collect(),
            hold_ticks_max: preempt.hold_ticks_max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Preempt, String> {
        #[derive(Deserialize)]
        struct Wrapper {
            preempt: Preempt,
        }
        toml::from_str::<Wrapper>(text)
            .map(|wrapper| wrapper.preempt)
            .map_err(|error| error.to_string())
    }

    #[test]
    fn defaults_and_names() {
        let preempt = parse("[preempt]\nrate = \"1/8\"\n").unwrap();
        assert_eq!(
            preempt.points,
            vec![
                PreemptPoint::Lock,
                PreemptPoint::Unlock,
                PreemptPoint::ShmLock,
                PreemptPoint::Sync
            ]
        );
        assert_eq!(preempt.hold_ticks_max, 40);
        let error = parse("[preempt]\nrate = \"1/8\"\npoints = [\"lok\"]\n").unwrap_err();
        assert!(error.contains("\"lok\"") && error.contains("shm_lock"), "{error}");
        let error = parse("[preempt]\nrate = \"1/8\"\nhold_ticks_max = 0\n").unwrap_err();
        assert!(error.contains("hold_ticks_max"), "{error}");
        assert!(parse("[preempt]\nrate = \"1/8\"\nspeed = 2\n").is_err());
    }

    #[test]
    fn a_swarm_seed_draws_its_own_rate_and_points() {
        let declared = parse("[preempt]\nrate = \"1/8\"\nhold_ticks_max = 7\n").unwrap();
        let mut mixes = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let mix = declared.swarm(&mut Prng::derive(seed, "swarm/preempt"));
            assert_eq!(mix, declared.swarm(&mut Prng::derive(seed, "swarm/preempt")));
            assert_eq!(mix.hold_ticks_max, 7);
            assert!(mix.points.iter().all(|point| declared.points.contains(point)));
            assert!(mix.rate.is_zero() || (SWARM_MENU.contains(&mix.rate) && !mix.points.is_empty()));
            mixes.insert(mix.describe());
        }
        assert!(mixes.contains("preempt=off"), "{mixes:?}");
        assert!(mixes.len() > 10, "{mixes:?}");
        assert!(mixes.iter().any(|mix| mix.ends_with("@shm_lock")), "{mixes:?}");
    }
}
