//! Replay capsules: a failing (or passing) run as a small TOML file that
//! replays it exactly.
//!
//! A capsule holds what a replay needs and what it should find: crashsim's
//! version and git commit and SQLite's version (a seed only means the same
//! run against the same code), the whole scenario inline (shrunk, usually),
//! the seed, the mutant, the forced fault schedule, and the expected verdict.
//! `crashsim replay --capsule FILE` runs it; capsules under
//! `scenarios/regressions/` are replayed by the tests and by
//! `crashsim run --regressions`, each expected to keep failing against its
//! mutant (or keep passing against the reference) as it records.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::check::Invariant;
use crate::faults::{FaultSource, Injected};
use crate::platform;
use crate::runner::SeedResult;
use crate::scenario::{Loaded, Scenario};

/// The `format` key of every capsule written now: runs end by ending rule
/// `scenario::ENDING_RULE`.
pub const FORMAT: &str = "crashsim-capsule/8";

/// Capsules recorded under ending rule 7 (I8's lease safety judged after
/// the run only): each replays with that rule.
pub const FORMAT_7: &str = "crashsim-capsule/7";

/// Capsules recorded under ending rule 6 (what recovery found after a cut
/// judged after the fault phase only): each replays with that rule.
pub const FORMAT_6: &str = "crashsim-capsule/6";

/// Capsules recorded under ending rule 5 (I9 by the connections' settings
/// judged after the run only, faults of a run with power loss on to the
/// end of their phase): each replays with that rule.
pub const FORMAT_5: &str = "crashsim-capsule/5";

/// Capsules recorded under ending rule 4 (an effect applied twice judged
/// after the run only): each replays with that rule.
pub const FORMAT_4: &str = "crashsim-capsule/4";

/// Capsules recorded under ending rule 3 (runs with power loss or
/// restores never judged early, writers scanning again at once after a
/// command done without a result): each replays with that rule.
pub const FORMAT_3: &str = "crashsim-capsule/3";

/// Capsules recorded under ending rule 2 (stale appends judged early,
/// stuck runs ended a window into the quiet phase, faults to the end of
/// their phase): each replays with that rule.
pub const FORMAT_2: &str = "crashsim-capsule/2";

/// Capsules recorded before runs ended once their verdict was certain
/// (`run.end_when_certain`): each replays with the rule it was made with,
/// every run to its budget, so its verdict and trace hash stay as recorded.
pub const FORMAT_1: &str = "crashsim-capsule/1";

/// What a replay of the capsule must find.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// `"fail"` or `"pass"`.
    pub verdict: Verdict,
    /// For a failure: the invariant that must still fail (others may join it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invariant: Option<Invariant>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Fail,
    Pass,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capsule {
    /// `FORMAT`, or an older one (`FORMAT_7` to `FORMAT_1`) the capsule was recorded in.
    pub format: String,
    pub crashsim_version: String,
    pub git_commit: String,
    pub sqlite_version: String,
    /// The scenario's name when the capsule was made (`smoke`).
    pub scenario_name: String,
    #[serde(serialize_with = "seed_as_text", deserialize_with = "seed_from_text")]
    pub seed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutant: Option<String>,
    /// The outside store the run was against (`--sut`): its command, and
    /// hashes of the files the command names, so a replay can tell whether
    /// it runs against the same store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sut: Option<crate::report::json::SutSummary>,
    pub expect: Expect,
    /// The trace hash the capsule's own run had (comparable only at the same commit).
    pub trace_hash: String,
    /// Steps the capsule's run took.
    pub steps: u64,
    pub scenario: Scenario,
    /// The forced fault schedule, in the order the faults fired.
    #[serde(default)]
    pub schedule: Vec<Injected>,
}

/// A capsule that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CapsuleError {
    /// The message includes the I/O error, so it is not a `source()` (a
    /// field named `source` would be, and anyhow's chain would print it twice).
    #[error("{path}: cannot read the capsule: {error}")]
    Read { path: PathBuf, error: std::io::Error },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

fn seed_as_text<S: Serializer>(seed: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    // TOML integers are signed 64-bit; a seed may not fit.
    serializer.collect_str(seed)
}

fn seed_from_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let text = String::deserialize(deserializer)?;
    crate::seed::parse_seed(&text).map_err(serde::de::Error::custom)
}

impl Capsule {
    /// The capsule of a finished run of `loaded` (whose scenario may have
    /// been shrunk). A failing run expects its first violation's invariant.
    pub fn of_run(loaded: &Loaded, result: &SeedResult) -> Capsule {
        let expect = match result.violations.first() {
            Some(violation) => Expect {
                verdict: Verdict::Fail,
                invariant: Some(violation.invariant),
            },
            None => Expect {
                verdict: Verdict::Pass,
                invariant: None,
            },
        };
        let mut scenario = loaded.scenario.clone();
        scenario.seed = None;
        // A run under an older ending rule (a capsule replayed and saved
        // again) keeps it.
        let format = match scenario.run.ending_rule {
            2 if scenario.run.end_when_certain => FORMAT_2,
            3 if scenario.run.end_when_certain => FORMAT_3,
            4 if scenario.run.end_when_certain => FORMAT_4,
            5 if scenario.run.end_when_certain => FORMAT_5,
            6 if scenario.run.end_when_certain => FORMAT_6,
            7 if scenario.run.end_when_certain => FORMAT_7,
            _ => FORMAT,
        };
        Capsule {
            format: format.to_string(),
            crashsim_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: platform::git_commit().to_string(),
            sqlite_version: platform::sqlite_version().to_string(),
            scenario_name: loaded.name.clone(),
            seed: result.seed,
            mutant: loaded.mutant.clone(),
            sut: None,
            expect,
            trace_hash: result.trace_hash.clone(),
            steps: result.steps,
            scenario,
            schedule: result.injected.clone(),
        }
    }

    pub fn to_toml(&self) -> String {
        let body = toml::to_string(self).expect("capsules serialise");
        format!(
            "# crashsim replay capsule: `crashsim replay --capsule <this file>` replays it.\n\
             # Seed {} of {}{}, expected to {}.\n{body}",
            self.seed,
            self.scenario_name,
            self.mutant
                .as_ref()
                .map(|m| format!(" against mutant {m}"))
                .unwrap_or_default(),
            match (&self.expect.verdict, &self.expect.invariant) {
                (Verdict::Fail, Some(invariant)) => format!("fail {invariant}"),
                (Verdict::Fail, None) => "fail".to_string(),
                (Verdict::Pass, _) => "pass".to_string(),
            }
        )
    }

    pub fn read(path: &Path) -> Result<Capsule, CapsuleError> {
        let text = std::fs::read_to_string(path).map_err(|error| CapsuleError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        let mut capsule: Capsule = toml::from_str(&text).map_err(|error| CapsuleError::Invalid {
            path: path.to_path_buf(),
            message: error.to_string().trim().to_string(),
        })?;
        match capsule.format.as_str() {
            FORMAT => {}
            FORMAT_7 => capsule.scenario.run.ending_rule = 7,
            FORMAT_6 => capsule.scenario.run.ending_rule = 6,
            FORMAT_5 => capsule.scenario.run.ending_rule = 5,
            FORMAT_4 => capsule.scenario.run.ending_rule = 4,
            FORMAT_3 => capsule.scenario.run.ending_rule = 3,
            FORMAT_2 => capsule.scenario.run.ending_rule = 2,
            FORMAT_1 => capsule.scenario.run.end_when_certain = false,
            other => {
                return Err(CapsuleError::Invalid {
                    path: path.to_path_buf(),
                    message: format!(
                        "format {other:?} is none of {FORMAT:?}, {FORMAT_7:?}, {FORMAT_6:?}, {FORMAT_5:?}, {FORMAT_4:?}, {FORMAT_3:?}, {FORMAT_2:?}, {FORMAT_1:?}"
                    ),
                });
            }
        }
        if let Some(mutant) = &capsule.mutant
            && crate::mutants::resolve(mutant).is_none()
        {
            return Err(CapsuleError::Invalid {
                path: path.to_path_buf(),
                message: format!("unknown mutant {mutant:?}"),
            });
        }
        // The scenario is replayed as recorded, budgets included (a shrunk
        // run may have a step budget the loader would not accept), but its
        // numbers must be ones a run can take.
        if let Err(rejection) = capsule.scenario.validate_shape() {
            return Err(CapsuleError::Invalid {
                path: path.to_path_buf(),
                message: format!("scenario: {rejection}"),
            });
        }
        Ok(capsule)
    }

    /// The scenario to run, named and with the mutant in place.
    pub fn loaded(&self, path: &Path) -> Loaded {
        let mut scenario = self.scenario.clone();
        if let Some(mutant) = &self.mutant {
            scenario.store = mutant.clone();
        }
        Loaded {
            name: self.scenario_name.clone(),
            path: path.to_path_buf(),
            scenario,
            mutant: self.mutant.clone(),
            sut: self.sut.as_ref().map(|sut| sut.name.clone()),
            source: crate::scenario::Source::File,
        }
    }

    /// Records the outside store the run was against.
    pub fn with_sut(mut self, adapter: &crate::adapter::Adapter) -> Capsule {
        self.sut = Some(crate::report::json::SutSummary::of(adapter));
        self
    }

    /// The forced fault source.
    pub fn faults(&self) -> FaultSource {
        FaultSource::Forced(self.schedule.iter().map(|injected| injected.fault.clone()).collect())
    }

    /// Whether a run's result is what the capsule expects; `Err` says why not.
    pub fn judge(&self, result: &SeedResult) -> Result<(), String> {
        match (self.expect.verdict, self.expect.invariant) {
            (Verdict::Pass, _) if result.ok => Ok(()),
            (Verdict::Pass, _) => Err(format!("expected a pass, got {}", result.violations[0])),
            (Verdict::Fail, _) if result.ok => Err("expected a failure, every invariant held".to_string()),
            (Verdict::Fail, None) => Ok(()),
            (Verdict::Fail, Some(invariant)) => {
                if result
                    .violations
                    .iter()
                    .any(|violation| violation.invariant == invariant)
                {
                    Ok(())
                } else {
                    Err(format!("expected {invariant} to fail, got {}", result.violations[0]))
                }
            }
        }
    }

    /// Whether the trace hash is comparable: same crashsim commit.
    pub fn same_build(&self) -> bool {
        self.git_commit == platform::git_commit()
            && !self.git_commit.ends_with("-dirty")
            && self.git_commit != "unknown"
    }
}
