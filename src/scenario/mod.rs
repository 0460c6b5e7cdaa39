//! Scenario files: TOML in, a validated `Scenario` out.
//!
//! Every key has a default, so a scenario names only what it changes. Unknown
//! keys are errors (a typo must not silently leave a fault off), and every
//! error names the file, the line and the key (`error.rs`). Units are in the
//! key names: `_ticks` is simulated time, `_count` a number of things.
//! A scenario comes from a file or is built into the binary (`builtin.rs`);
//! `resolve` takes either, a path first (`loaded.rs`).

mod backup;
mod budget;
pub mod builtin;
mod error;
mod faults;
mod leases;
mod loaded;
mod locate;
mod preempt;
mod restore;
mod retries;
mod skew;
mod validate;

use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};

pub use backup::Backup;
pub use budget::{Budget, workload_ticks};
pub use error::ScenarioError;
pub use faults::{Faults, NetFaults, ReceiverFaults, WorkerFaults, WriterFaults};
pub use leases::{Leases, PauseFaults};
pub use loaded::{Loaded, Source, files_in, load, resolve};
pub use preempt::{POINT_NAMES, Preempt, PreemptPoint};
pub use restore::Restore;
pub use retries::{Horizon, Receivers, Retries, horizon};
pub use skew::SkewFaults;
pub use validate::Rejection;

use crate::faults::FaultPlan;
use crate::ratio::Ratio;
use crate::store::{JournalMode, SqliteSettings, Synchronous};
use crate::workload::Style;

/// A scenario as written, after validation.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Scenario {
    /// One line for `crashsim list` and the reports.
    pub description: String,
    /// The implementation under test, by name: `"reference"` (the default),
    /// another registered implementation, or a mutant (`crashsim list`).
    pub store: String,
    /// The seed `replay` uses when the command line gives none.
    #[serde(deserialize_with = "deserialize_seed", skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    pub run: RunLimits,
    pub workload: Workload,
    pub timing: Timing,
    pub sqlite: SqliteConfig,
    pub faults: Faults,
    /// Power loss through the crash VFS (off unless `loss` or a scripted cut).
    pub power: Power,
    /// Kills and power cuts at fixed ticks, in addition to the seeded ones.
    pub script: Vec<Scripted>,
    /// Workers claim rows with leases and fencing tokens (off unless written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leases: Option<Leases>,
    /// Retryable failures are retried by durable timers with backoff, then
    /// dead-lettered (off unless written; `retries.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retries: Option<Retries>,
    /// The receivers' de-duplication retention (kept forever unless written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receivers: Option<Receivers>,
    /// Suspensions inside the store's own calls, at SQLite's locks, syncs
    /// and busy waits (off unless written; `preempt.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preempt: Option<Preempt>,
    /// Online backups taken while the store works, each judged (I11; off
    /// unless written; `backup.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<Backup>,
    /// Restores of the store from its latest completed backup, with every
    /// actor stopped first (off unless written; `restore.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore: Option<Restore>,
}

/// Power loss: every actor at once loses its connection and each file keeps
/// only what the disk model lets through (`vfs::crash`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Power {
    /// Chance, per actor step in the fault phase, that power goes out at one
    /// of the next few writes, syncs, truncations or deletions (drawn from
    /// the seed: it may fall inside a step, between two commits of one
    /// store call). Default "0/1" (off).
    pub loss: Ratio,
    /// What a cut does to unsynced writes: "drop_unsynced" (default),
    /// "random" (kept, lost, torn or garbled) or "keep_all" (process death only).
    #[serde(with = "crate::vfs::crash::model_name")]
    pub model: crate::vfs::crash::Model,
}

impl Scenario {
    /// Every fault rate of the scenario, before any swarm draw.
    pub fn fault_plan(&self) -> FaultPlan {
        let mut plan = self.faults.plan();
        plan.power_loss = self.power.loss;
        plan.pause = self.faults.pause.map_or(Ratio::ZERO, |pause| pause.rate);
        plan.ids = self.workload.ids.clone();
        plan.payloads = self.workload.payloads.clone();
        plan.default_synchronous = self.sqlite.default_synchronous;
        if let Some(skew) = self.faults.skew {
            plan.skew_ticks = skew.max_ticks;
            plan.clock_step = skew.step_rate;
        }
        plan
    }

    /// Whether runs of this scenario go through the crash VFS.
    pub fn power_enabled(&self) -> bool {
        !self.power.loss.is_zero() || self.script.iter().any(|entry| entry.power_cut)
    }
}

/// How long a run lasts.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunLimits {
    /// Length of the fault phase, in ticks; then the quiet phase. Default 4000.
    pub ticks_fault: u64,
    /// The whole run's budget, in ticks: a run that has not settled by then
    /// violates liveness (I10). Default 100000.
    pub ticks_max: u64,
    /// The whole run's budget in actor steps, like `ticks_max`: a broken
    /// implementation can keep actors busy forever without settling. Default:
    /// derived, the smallest the budget rules accept (`validate.rs`), rounded
    /// up to a thousand.
    pub steps_max: u64,
    /// How often the simulator checks whether the run has settled, in ticks. Default 50.
    pub settle_check_ticks: u64,
    /// The quiet phase a run must have had before it may be judged not to
    /// settle (I10), in ticks. Default: derived from the timing
    /// (`Scenario::quiet_ticks_min`); a written value may raise it, not lower it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quiet_ticks_min: Option<u64>,
    /// End the run once its verdict is certain (`sim::simulator::stall`):
    /// when nothing durable has changed for longer than every legitimate
    /// wait of the scenario (`Budget::stall_window`), faults stop, and a
    /// window into the quiet phase the run ends; a finding no later event
    /// can undo ends it after a grace. Default true; capsules recorded
    /// before the rule replay with it off.
    pub end_when_certain: bool,
    /// Which version of that rule a run follows: a capsule replays with the
    /// one it was recorded with (`capsule::FORMAT`). Not a key of the
    /// scenario file: always the latest, `ENDING_RULE`.
    #[serde(skip)]
    pub ending_rule: u32,
}

/// The ending rule runs follow today (`RunLimits::ending_rule`): 2 judged
/// I3's stale appends early and ended stuck runs a window into the quiet
/// phase; 3 also judges the store's wrong answers and a replay's
/// dispatches early (`check::certain`), waits one attempt of a retry chain
/// between durable facts (`Budget::stall_window`) and stops faults once a
/// run is stuck with them on; 4 also judges runs with power loss or
/// restores early, once their fault phase is over, and a writer that
/// finds its awaited command done without a result (no correct store
/// leaves one so) waits for its poll instead of scanning again at once;
/// 5 also judges an effect applied twice (I2) as soon as the trace shows a
/// command's effect committed twice, on the databases as they are then
/// (`System::peek`); 6 also judges I9 by the connections' settings (a
/// connection that opened or committed below the asked level), in any
/// run, and in the fault phase of one with power loss stops the faults at
/// it, so the run is judged from there as after its fault phase; 7 also
/// judges what recovery found after each cut (an acknowledged commit lost,
/// a ghost effect) at the settle check after the cut, and stops the faults
/// at a finding no commit since the last cut precedes; 8 also judges I8's
/// lease safety while the run goes (a late acknowledgement that counted),
/// and a run stuck with its faults on skips the scripted faults still to
/// come when it stops them (`Op::FaultsEnded`).
pub const ENDING_RULE: u32 = 8;

/// What the system does and with how many actors.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Workload {
    /// Trips (workflows) requested. Default 50.
    pub trips_count: u32,
    /// Writer actors, each with its own connection to the store. Default 8.
    pub writers_count: u32,
    /// Worker actors delivering the outbox. Default 4.
    pub workers_count: u32,
    /// Receiver actors, each with its own connection to the receiver's database. Default 2.
    pub receivers_count: u32,
    /// Share of hotel bookings that fail terminally (then compensation runs). Default "1/4".
    pub hotel_failure: Ratio,
    /// Pending rows a worker reads at a time. Default 4.
    pub pending_batch: u32,
    /// The workflow ids: `"plain"` (`trip-007`, the default), `"hostile"`
    /// (every class of `workload::Class`) or a list of classes. With
    /// `faults.swarm`, each seed keeps a random subset of them.
    #[serde(skip_serializing_if = "Style::is_plain")]
    pub ids: Style,
    /// The payload strings (the cities trips go to), like `ids`.
    #[serde(skip_serializing_if = "Style::is_plain")]
    pub payloads: Style,
    /// Of the `trips_count` trips drawn, only these run: their positions in
    /// the order drawn, from 0, ascending. `shrink` writes it when it keeps
    /// the workflows a failure needs and drops the rest; absent, all run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trips_kept: Option<Vec<u32>>,
}

/// Simulated durations, all in ticks.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Timing {
    /// Each actor step takes 1..=this many ticks, drawn per step. Default 3.
    pub step_ticks_max: u64,
    /// An idle writer or worker looks for work again after this long (a
    /// nudge from another actor wakes it sooner, so this is the fallback for
    /// lost nudges). Default 250.
    pub poll_ticks: u64,
    /// A message takes 1..=this many ticks to arrive. Default 4.
    pub latency_ticks_max: u64,
    /// A worker gives up waiting for a reply after this long and retries. Default 60.
    pub reply_timeout_ticks: u64,
    /// A killed actor restarts after restart_ticks_min..=restart_ticks_max. Default 20.
    pub restart_ticks_min: u64,
    /// Default 200.
    pub restart_ticks_max: u64,
    /// A step that met a lock is retried after 1, 2, 4, … ticks (plus
    /// jitter), up to this many. Default 32.
    pub busy_backoff_ticks_max: u64,
}

/// SQLite settings of the two databases.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SqliteConfig {
    /// Default "wal".
    pub journal_mode: JournalMode,
    /// The store's `synchronous`: "off", "normal", "full" (default) or "extra".
    pub synchronous: Synchronous,
    /// The receiver's `synchronous`; defaults to the store's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receiver_synchronous: Option<Synchronous>,
    /// The SQLite build's default `synchronous`, a fault: every new
    /// connection, of both databases, starts at this level until the store
    /// sets its own (as on a SQLite built with `SQLITE_DEFAULT_SYNCHRONOUS`
    /// or `SQLITE_DEFAULT_WAL_SYNCHRONOUS`; `vfs::crash`). Needs power loss,
    /// where it shows. Unwritten: SQLite's own (FULL), or, in a swarm with
    /// power loss, drawn per seed (`FaultPlan::default_synchronous`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_synchronous: Option<Synchronous>,
}

/// A fault at a fixed tick: a kill or a power cut.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scripted {
    pub tick: u64,
    /// Kill an actor (`"worker-1"`), a role (`"writers"`, `"workers"`,
    /// `"receivers"`) or `"all"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill: Option<String>,
    /// Cut the power (at the next write, sync, truncation or deletion).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub power_cut: bool,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            description: String::new(),
            store: "reference".to_string(),
            seed: None,
            run: RunLimits::default(),
            workload: Workload::default(),
            timing: Timing::default(),
            sqlite: SqliteConfig::default(),
            faults: Faults::default(),
            power: Power::default(),
            script: Vec::new(),
            leases: None,
            retries: None,
            receivers: None,
            preempt: None,
            backup: None,
            restore: None,
        }
    }
}

impl Default for RunLimits {
    /// The step budget is the one derived for the default workload and timing.
    fn default() -> Self {
        let mut run = RunLimits {
            ticks_fault: 4_000,
            ticks_max: 100_000,
            steps_max: 0,
            settle_check_ticks: 50,
            quiet_ticks_min: None,
            end_when_certain: true,
            ending_rule: ENDING_RULE,
        };
        run.steps_max = budget::derived_steps_max(&run, &Workload::default(), &Timing::default());
        run
    }
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            trips_count: 50,
            writers_count: 8,
            workers_count: 4,
            receivers_count: 2,
            hotel_failure: Ratio::new(1, 4),
            pending_batch: 4,
            ids: Style::plain(),
            payloads: Style::plain(),
            trips_kept: None,
        }
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            step_ticks_max: 3,
            poll_ticks: 250,
            latency_ticks_max: 4,
            reply_timeout_ticks: 60,
            restart_ticks_min: 20,
            restart_ticks_max: 200,
            busy_backoff_ticks_max: 32,
        }
    }
}

impl Default for SqliteConfig {
    fn default() -> Self {
        SqliteConfig {
            journal_mode: JournalMode::Wal,
            synchronous: Synchronous::Full,
            receiver_synchronous: None,
            default_synchronous: None,
        }
    }
}

impl Default for Ratio {
    fn default() -> Self {
        Ratio::ZERO
    }
}

fn deserialize_seed<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum SeedValue {
        Number(u64),
        Text(String),
    }
    match SeedValue::deserialize(deserializer)? {
        SeedValue::Number(seed) => Ok(Some(seed)),
        SeedValue::Text(text) => crate::seed::parse_seed(&text)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

impl SqliteConfig {
    pub fn store_settings(&self) -> SqliteSettings {
        SqliteSettings {
            journal_mode: self.journal_mode,
            synchronous: self.synchronous,
            busy_timeout_ms: 0,
            vfs: None,
        }
    }

    pub fn receiver_settings(&self) -> SqliteSettings {
        SqliteSettings {
            synchronous: self.receiver_synchronous.unwrap_or(self.synchronous),
            ..self.store_settings()
        }
    }
}

/// Parses and validates scenario text; `path` only names the file in errors.
pub fn parse(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
    let deserializer =
        toml::Deserializer::parse(text).map_err(|error| ScenarioError::from_toml(path, text, "", error))?;
    let mut scenario: Scenario = serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let key = error.path().to_string();
        ScenarioError::from_toml(path, text, &key, error.into_inner())
    })?;
    let invalid = |rejection: Rejection| ScenarioError::invalid(path, text, &rejection);
    scenario.validate_shape().map_err(invalid)?;
    if !writes_steps_max(text) {
        scenario.run.steps_max = budget::derived_steps_max_of(&scenario);
    }
    scenario.validate_budget().map_err(invalid)?;
    // A demonstration (a file under `demonstrations/`) shows what a short
    // retention does, so it may break the rule it demonstrates.
    let demonstration = path.components().any(|part| part.as_os_str() == "demonstrations");
    if !demonstration {
        scenario.validate_retention().map_err(invalid)?;
    }
    Ok(scenario)
}

/// Whether the text sets `run.steps_max` (else its default is derived).
/// Called on text that deserialized, so it parses.
fn writes_steps_max(text: &str) -> bool {
    text.parse::<toml::Table>().is_ok_and(|table| {
        table
            .get("run")
            .and_then(toml::Value::as_table)
            .is_some_and(|run| run.contains_key("steps_max"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::KillPoint;

    fn parse_text(text: &str) -> Result<Scenario, ScenarioError> {
        parse(text, Path::new("scenarios/test.toml"))
    }

    #[test]
    fn defaults_fill_what_is_not_written() {
        let scenario = parse_text("description = \"x\"\n[workload]\ntrips_count = 3\n").unwrap();
        assert_eq!(scenario.workload.trips_count, 3);
        assert_eq!(scenario.workload.writers_count, 8);
        assert_eq!(scenario.store, "reference");
        assert!(scenario.faults.declared().is_empty());
    }

    #[test]
    fn faults_parse_as_ratios_under_their_role() {
        let scenario = parse_text(
            "[faults]\nkey_conflict = \"1/9\"\n[faults.writer]\nbefore_commit = \"1/40\"\n[faults.net]\ndrop = \"1/100\"\n",
        )
        .unwrap();
        assert_eq!(scenario.faults.declared(), vec![KillPoint::WriterBeforeCommit]);
        let plan = scenario.faults.plan();
        assert_eq!(plan.rate(KillPoint::WriterBeforeCommit), Ratio::new(1, 40));
        assert_eq!(plan.net_drop, Ratio::new(1, 100));
        assert_eq!(plan.key_conflict, Ratio::new(1, 9));
    }

    #[test]
    fn seeds_parse_in_every_form() {
        assert_eq!(parse_text("seed = 7").unwrap().seed, Some(7));
        assert_eq!(parse_text("seed = \"0x5eed\"").unwrap().seed, Some(0x5eed));
        assert!(parse_text("seed = \"soon\"").is_err());
    }

    fn error_of(text: &str) -> String {
        parse_text(text).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let message = error_of("description = \"x\"\n[faults.writer]\nbefore_commit = \"1/0\"\n");
        assert!(message.starts_with("scenarios/test.toml:3:"), "{message}");
        assert!(message.contains("faults.writer.before_commit"), "{message}");
        assert!(message.contains("denominator"), "{message}");

        let message = error_of("[workload]\ntrips_cont = 5\n");
        assert!(message.starts_with("scenarios/test.toml:2:"), "{message}");
        assert!(message.contains("trips_cont"), "{message}");

        let message = error_of("[workload]\nwriters_count = 0\n");
        assert!(message.starts_with("scenarios/test.toml:2:"), "{message}");
        assert!(message.contains("workload.writers_count"), "{message}");

        let message = error_of("store = \"sqlite-but-faster\"\n");
        assert!(message.contains("store") && message.contains("reference"), "{message}");

        let message = error_of("[[script]]\ntick = 10\nkill = \"writer-99\"\n");
        assert!(message.starts_with("scenarios/test.toml:3:"), "{message}");
        assert!(message.contains("script[0].kill"), "{message}");

        let message = error_of("[workload\n");
        assert!(message.starts_with("scenarios/test.toml:1:"), "{message}");

        let message = error_of("[timing]\nrestart_ticks_min = 9\nrestart_ticks_max = 3\n");
        assert!(message.contains("timing.restart_ticks_min"), "{message}");

        let message = error_of("[workload]\ntrips_count = -1\n");
        assert!(message.contains("workload.trips_count"), "{message}");
    }
}
