//! Cross-field validation: what types alone cannot express.
//!
//! Two kinds of rule. The shape rules bound every number and check that
//! scripted faults name real actors. The budget rules reject a scenario whose
//! own budgets leave a correct store no room to settle: without them the
//! reference "fails" liveness (I10) and the gate raises a false alarm. Each
//! rejection names the key to change and the number to change it to, from
//! the quantities in `budget.rs`.

use std::collections::BTreeMap;

use super::Scenario;
use super::budget::Budget;

/// A rejected scenario: the key to change, the message, and keys whose line
/// to point at when `key` itself is not written in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    pub key: String,
    pub message: String,
    pub related: Vec<&'static str>,
}

impl Rejection {
    pub(super) fn new(key: &str, message: String) -> Rejection {
        Rejection {
            key: key.to_string(),
            message,
            related: Vec::new(),
        }
    }

    pub(super) fn near(mut self, related: &[&'static str]) -> Rejection {
        self.related = related.to_vec();
        self
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "key `{}`: {}", self.key, self.message)
    }
}

impl Scenario {
    /// The smallest quiet phase after which liveness may be judged:
    /// `run.quiet_ticks_min`, or the floor the timing derives (module docs).
    pub fn quiet_ticks_min(&self) -> u64 {
        Budget::of(self).quiet
    }

    /// Every rule, shape first: `Err` names the key to change.
    pub fn validate(&self) -> Result<(), Rejection> {
        self.validate_shape()?;
        self.validate_budget()?;
        self.validate_retention()
    }

    /// Bounds of every number, and scripted faults that name real actors.
    pub fn validate_shape(&self) -> Result<(), Rejection> {
        let fail = |key: &str, message: String| Err(Rejection::new(key, message));
        if crate::mutants::resolve(&self.store).is_none() {
            let known = crate::mutants::names().join(", ");
            return fail(
                "store",
                format!("unknown implementation {:?}; known: {known}", self.store),
            );
        }
        if self.leases.is_some()
            && let Some(implementation) = crate::mutants::resolve(&self.store)
            && !implementation.leases()
        {
            return fail(
                "leases",
                format!(
                    "{} has no leases (claims with fencing tokens): leave [leases] out, or use a store that has them",
                    self.store
                ),
            );
        }
        self.validate_retries_shape()?;
        self.validate_backup()?;
        self.validate_restore()?;
        if self.faults.skew.is_some()
            && let Some(implementation) = crate::mutants::resolve(&self.store)
            && !implementation.clock_per_actor()
        {
            return fail(
                "faults.skew",
                format!(
                    "{} cannot give each actor a clock of its own (its actors share one committer, which \
                     stamps a group with whichever clock flushes it): leave [faults.skew] out, or use \
                     another store",
                    self.store
                ),
            );
        }
        let workload = &self.workload;
        for (key, value, max) in [
            ("workload.trips_count", workload.trips_count, 100_000),
            ("workload.writers_count", workload.writers_count, 1_000),
            ("workload.workers_count", workload.workers_count, 1_000),
            ("workload.receivers_count", workload.receivers_count, 1_000),
            ("workload.pending_batch", workload.pending_batch, 10_000),
        ] {
            if value == 0 || value > max {
                return fail(key, format!("must be between 1 and {max}, got {value}"));
            }
        }
        if let Some(kept) = &workload.trips_kept {
            let ascending = kept.windows(2).all(|pair| pair[0] < pair[1]);
            let inside = kept.iter().all(|position| *position < workload.trips_count);
            if kept.is_empty() || !ascending || !inside {
                return fail(
                    "workload.trips_kept",
                    format!(
                        "must list positions of drawn trips, ascending, each below workload.trips_count ({}): got \
                         {kept:?}",
                        workload.trips_count
                    ),
                );
            }
        }
        let timing = &self.timing;
        for (key, value) in [
            ("timing.step_ticks_max", timing.step_ticks_max),
            ("timing.poll_ticks", timing.poll_ticks),
            ("timing.latency_ticks_max", timing.latency_ticks_max),
            ("timing.reply_timeout_ticks", timing.reply_timeout_ticks),
            ("timing.busy_backoff_ticks_max", timing.busy_backoff_ticks_max),
            ("run.settle_check_ticks", self.run.settle_check_ticks),
        ] {
            if value == 0 || value > 1_000_000 {
                return fail(key, format!("must be between 1 and 1000000, got {value}"));
            }
        }
        if timing.restart_ticks_min > timing.restart_ticks_max {
            return fail(
                "timing.restart_ticks_min",
                format!(
                    "must not exceed timing.restart_ticks_max ({} > {})",
                    timing.restart_ticks_min, timing.restart_ticks_max
                ),
            );
        }
        if self.run.ticks_max == 0 || self.run.ticks_max > 100_000_000 {
            return fail(
                "run.ticks_max",
                format!("must be between 1 and 100000000, got {}", self.run.ticks_max),
            );
        }
        if self.run.steps_max == 0 {
            return fail("run.steps_max", "must be at least 1".to_string());
        }
        if let Some(quiet) = self.run.quiet_ticks_min
            && quiet > 100_000_000
        {
            return fail("run.quiet_ticks_min", format!("must be at most 100000000, got {quiet}"));
        }
        if self.run.ticks_fault > self.run.ticks_max {
            return fail(
                "run.ticks_fault",
                format!(
                    "must not exceed run.ticks_max ({} > {})",
                    self.run.ticks_fault, self.run.ticks_max
                ),
            );
        }
        if let Some(level) = self.sqlite.default_synchronous
            && !self.power_enabled()
        {
            return fail(
                "sqlite.default_synchronous",
                format!(
                    "\"{}\" is the level every new connection starts at, which only a power cut can tell from \
                     SQLite's own default: it needs power loss ([power] loss, or a scripted power_cut); \
                     leave it out, or turn power loss on",
                    level.as_str().to_ascii_lowercase()
                ),
            );
        }
        for (index, entry) in self.script.iter().enumerate() {
            if entry.tick > self.run.ticks_fault {
                return fail(
                    &format!("script[{index}].tick"),
                    format!(
                        "scripted kills belong to the fault phase (tick <= {})",
                        self.run.ticks_fault
                    ),
                );
            }
            match (&entry.kill, entry.power_cut) {
                (Some(kill), false) => {
                    if let Err(message) = self.kill_targets(kill) {
                        return fail(&format!("script[{index}].kill"), message);
                    }
                }
                (None, true) => {}
                _ => {
                    return fail(
                        &format!("script[{index}].tick"),
                        "a scripted fault is either `kill = \"…\"` or `power_cut = true`".to_string(),
                    );
                }
            }
        }
        Ok(())
    }

    /// The budget rules: a correct store must be able to settle within the
    /// run's own budgets (module docs, and docs/scenarios.md, "Budgets the
    /// loader checks").
    pub fn validate_budget(&self) -> Result<(), Rejection> {
        let budget = Budget::of(self);
        let (run, timing) = (&self.run, &self.timing);
        if let Some(quiet) = run.quiet_ticks_min
            && quiet < budget.quiet_floor
        {
            return Err(Rejection::new(
                "run.quiet_ticks_min",
                format!(
                    "{quiet} is below the floor the timing needs before liveness can be judged: {} ticks \
                     (an idle poller's wake-up, a reply timeout and a resend's round trip, a busy backoff, \
                     a restart and a settle check); raise it to at least {} or leave it out",
                    budget.quiet_floor, budget.quiet_floor
                ),
            ));
        }
        if timing.reply_timeout_ticks <= budget.round_trip {
            return Err(Rejection::new(
                "timing.reply_timeout_ticks",
                format!(
                    "{} is not longer than the largest reply round trip, {} ticks (2 × latency_ticks_max {} \
                     + {} worker(s) × 4 receiver steps × step_ticks_max {}: all receivers share one database \
                     lock): replies would arrive after the worker resent, and resends pile up faster than \
                     they are answered; raise it to at least {}",
                    timing.reply_timeout_ticks,
                    budget.round_trip,
                    timing.latency_ticks_max,
                    self.workload.workers_count,
                    timing.step_ticks_max,
                    budget.round_trip + 1
                ),
            )
            .near(&[
                "timing.latency_ticks_max",
                "timing.step_ticks_max",
                "workload.workers_count",
            ]));
        }
        if let Some(leases) = self.leases
            && leases.ticks <= Budget::delivery(timing).saturating_add(leases.margin_ticks)
        {
            let delivery = Budget::delivery(timing);
            return Err(Rejection::new(
                "leases.ticks",
                format!(
                    "{} is not longer than the shortest delivery, {delivery} ticks (2 × latency_ticks_max {} + \
                     8 steps × step_ticks_max {}), plus leases.margin_ticks {}: every lease would expire \
                     before its holder could acknowledge, and no row would ever be done; raise it to at \
                     least {}",
                    leases.ticks,
                    timing.latency_ticks_max,
                    timing.step_ticks_max,
                    leases.margin_ticks,
                    delivery + leases.margin_ticks + 1
                ),
            )
            .near(&["timing.latency_ticks_max", "timing.step_ticks_max"]));
        }
        if self.power_enabled() {
            self.validate_power()?;
        }
        let quiet_budget = run.ticks_max - run.ticks_fault;
        for (key, value, what) in [
            (
                "timing.poll_ticks",
                timing.poll_ticks,
                "an idle writer or worker would not look for work again",
            ),
            (
                "timing.busy_backoff_ticks_max",
                timing.busy_backoff_ticks_max.saturating_mul(2),
                "one busy backoff (with its jitter) would outlast it",
            ),
            (
                "run.settle_check_ticks",
                run.settle_check_ticks,
                "no settle check would see the run settle",
            ),
        ] {
            if value >= quiet_budget {
                return Err(Rejection::new(
                    key,
                    format!(
                        "{what} within the quiet phase (run.ticks_max − run.ticks_fault = {quiet_budget} ticks); \
                         lower it, or raise run.ticks_max to at least {}",
                        budget.ticks_needed(run.ticks_fault)
                    ),
                )
                .near(&["run.ticks_max", "run.ticks_fault"]));
            }
        }
        let ticks_needed = budget.ticks_needed(run.ticks_fault);
        if run.ticks_max < ticks_needed {
            return Err(Rejection::new(
                "run.ticks_max",
                format!(
                    "{} leaves the quiet phase {quiet_budget} ticks, but liveness can be judged only after \
                     {} (run.quiet_ticks_min) and the workload may need {} more ({} trips, {} writers, \
                     {} workers, {} receivers at this timing): raise it to at least {ticks_needed} \
                     (= run.ticks_fault {} + {} + {}), or shrink the workload",
                    run.ticks_max,
                    budget.quiet,
                    budget.workload,
                    self.workload.trips_count,
                    self.workload.writers_count,
                    self.workload.workers_count,
                    self.workload.receivers_count,
                    run.ticks_fault,
                    budget.quiet,
                    budget.workload
                ),
            )
            .near(&[
                "run.ticks_fault",
                "workload.trips_count",
                "run.quiet_ticks_min",
                "workload.workers_count",
                "workload.writers_count",
                "timing.step_ticks_max",
                "timing.latency_ticks_max",
                "timing.busy_backoff_ticks_max",
                "timing.reply_timeout_ticks",
            ]));
        }
        let steps_needed = budget.steps_needed(run.ticks_fault);
        if run.steps_max < steps_needed {
            return Err(Rejection::new(
                "run.steps_max",
                format!(
                    "{} could run out before the run can settle: an actor takes at most one step per tick, \
                     so {} actors may take {steps_needed} steps in the {} ticks of the fault phase, the quiet \
                     minimum and the workload (run.ticks_fault {} + 1 + {} + {}); raise it to at least \
                     {steps_needed}, or leave it out (the default is derived)",
                    run.steps_max,
                    budget.actors,
                    ticks_needed + 1,
                    run.ticks_fault,
                    budget.quiet,
                    budget.workload
                ),
            )
            .near(&[
                "run.ticks_fault",
                "workload.writers_count",
                "workload.workers_count",
                "workload.receivers_count",
                "run.ticks_max",
            ]));
        }
        Ok(())
    }

    /// Power loss cuts at the fault phase's writes, so the fault phase must
    /// write: a run whose fault phase wrote nothing through the crash VFS is
    /// refused by the runner (it cannot tell it from a store that bypasses
    /// the VFS). A writer's first commit takes 7 steps; one killed before
    /// its commit tries again after a restart. The fault phase must hold
    /// enough tries that every writer failing every one of them has a
    /// chance below one in a billion.
    fn validate_power(&self) -> Result<(), Rejection> {
        let (s, restart) = (self.timing.step_ticks_max, self.timing.restart_ticks_max);
        let first_commit = s.saturating_mul(6).saturating_add(1);
        let mut rate = self.faults.writer.before_commit;
        if self.faults.swarm {
            // A swarm draws each kill point's rate from 1/4 … 1/256, or off.
            rate = rate.max(crate::ratio::Ratio::new(1, 4));
        }
        if !rate.is_zero() && rate.numerator == rate.denominator {
            return Err(Rejection::new(
                "faults.writer.before_commit",
                format!(
                    "{rate} kills every writer before every commit, so with power loss on the fault phase \
                     writes nothing a cut could hit; lower it below 1/1"
                ),
            ));
        }
        let tries = if rate.is_zero() {
            1
        } else {
            let per_try = f64::from(rate.numerator).ln() - f64::from(rate.denominator).ln();
            let writers = f64::from(self.workload.writers_count);
            ((1e-9f64).ln() / (writers * per_try)).ceil().clamp(1.0, 1e9) as u64
        };
        let retry = restart.saturating_add(s.saturating_mul(7)).saturating_add(1);
        let needed = first_commit.saturating_add((tries - 1).saturating_mul(retry));
        if self.run.ticks_fault < needed {
            let why = if tries == 1 {
                String::new()
            } else {
                format!(
                    ", and with {} writer(s) killed before commit at {rate}{} it takes {tries} tries of up to \
                     timing.restart_ticks_max {restart} + 7 steps each for a commit to be all but certain",
                    self.workload.writers_count,
                    if self.faults.swarm {
                        " (a swarm may draw 1/4)"
                    } else {
                        ""
                    }
                )
            };
            return Err(Rejection::new(
                "run.ticks_fault",
                format!(
                    "{} ticks of fault phase with power loss on: the fault phase must write something a cut can \
                     hit; a writer's first commit takes 7 steps of up to timing.step_ticks_max {s} ticks{why}; \
                     raise it to at least {needed}",
                    self.run.ticks_fault
                ),
            )
            .near(&["power.loss", "faults.writer.before_commit", "timing.step_ticks_max"]));
        }
        Ok(())
    }

    /// Whether every scripted kill still names existing actors.
    pub fn kill_targets_valid(&self) -> bool {
        self.script
            .iter()
            .filter_map(|entry| entry.kill.as_deref())
            .all(|kill| self.kill_targets(kill).is_ok())
    }

    /// The actors a scripted kill names, as (role, index) pairs.
    pub fn kill_targets(&self, target: &str) -> Result<Vec<(crate::actors::Role, u32)>, String> {
        use crate::actors::Role;
        let counts: BTreeMap<Role, u32> = [
            (Role::Writer, self.workload.writers_count),
            (Role::Worker, self.workload.workers_count),
            (Role::Receiver, self.workload.receivers_count),
        ]
        .into_iter()
        .collect();
        let all_of = |role: Role| (0..counts[&role]).map(move |index| (role, index));
        Ok(match target {
            "all" => counts.keys().flat_map(|role| all_of(*role)).collect(),
            "writers" => all_of(Role::Writer).collect(),
            "workers" => all_of(Role::Worker).collect(),
            "receivers" => all_of(Role::Receiver).collect(),
            name => {
                let parsed = name
                    .rsplit_once('-')
                    .and_then(|(role, index)| Some((Role::from_name(role)?, index.parse::<u32>().ok()?)));
                match parsed {
                    Some((role, index)) if counts.get(&role).is_some_and(|count| index < *count) => vec![(role, index)],
                    _ => {
                        return Err(format!(
                            "{name:?} names no actor: use \"all\", \"writers\", \"workers\", \"receivers\" or an actor like \"worker-0\""
                        ));
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{Budget, Scenario, ScenarioError, parse};

    fn parse_text(text: &str) -> Result<Scenario, ScenarioError> {
        parse(text, Path::new("scenarios/test.toml"))
    }

    fn error_of(text: &str) -> String {
        parse_text(text).unwrap_err().to_string()
    }

    #[test]
    fn the_reported_false_alarms_are_rejected_with_the_number_to_reach() {
        let defaults = Scenario::default();
        let needed = Budget::of(&defaults).steps_needed(defaults.run.ticks_fault);
        for steps in [1, 2] {
            let message = error_of(&format!("[run]\nsteps_max = {steps}\n"));
            assert!(
                message.starts_with("scenarios/test.toml:2:1: key `run.steps_max`"),
                "{message}"
            );
            assert!(message.contains(&format!("at least {needed}")), "{message}");
        }
        let message = error_of("[timing]\nreply_timeout_ticks = 5\n");
        assert!(
            message.starts_with("scenarios/test.toml:2:1: key `timing.reply_timeout_ticks`"),
            "{message}"
        );
        // 2 × 4 latency + 4 workers × 4 steps × 3 ticks = 56.
        assert!(
            message.contains("round trip, 56 ticks") && message.contains("at least 57"),
            "{message}"
        );
        let polling = "[workload]\nwriters_count = 10\nworkers_count = 6\nreceivers_count = 4\n\
                       [timing]\npoll_ticks = 1\nreply_timeout_ticks = 120\n[run]\nsteps_max = 50_000\n";
        assert!(error_of(polling).contains("key `run.steps_max`"));
    }

    #[test]
    fn kept_trips_are_positions_of_drawn_trips_ascending() {
        assert!(parse_text("[workload]\ntrips_count = 4\ntrips_kept = [0, 3]\n").is_ok());
        for kept in ["[]", "[3, 1]", "[1, 1]", "[0, 4]"] {
            let message = error_of(&format!("[workload]\ntrips_count = 4\ntrips_kept = {kept}\n"));
            assert!(
                message.starts_with("scenarios/test.toml:3:1: key `workload.trips_kept`"),
                "{kept}: {message}"
            );
        }
    }

    #[test]
    fn a_budget_key_left_at_its_default_points_at_the_line_that_made_it_short() {
        let message = error_of("[run]\nticks_fault = 99_000\n");
        assert!(
            message.starts_with("scenarios/test.toml:2:1: key `run.ticks_max`"),
            "{message}"
        );
        let message = error_of("description = \"x\"\n[workload]\ntrips_count = 100_000\n");
        assert!(
            message.starts_with("scenarios/test.toml:3:1: key `run.ticks_max`"),
            "{message}"
        );
    }

    #[test]
    fn the_quiet_minimum_is_derived_and_may_only_be_raised() {
        let derived = parse_text("").unwrap();
        let floor = Budget::of(&derived).quiet_floor;
        assert_eq!(derived.quiet_ticks_min(), floor);
        // 250 + 3 poll, 60 + 56 timeout and round trip, 2 × 32 backoff, 1 + 3 restart, 50 settle check.
        assert_eq!(floor, 487);
        let raised = parse_text(&format!("[run]\nquiet_ticks_min = {}\n", floor + 100)).unwrap();
        assert_eq!(raised.quiet_ticks_min(), floor + 100);
        let message = error_of(&format!("[run]\nquiet_ticks_min = {}\n", floor - 1));
        assert!(message.contains("key `run.quiet_ticks_min`"), "{message}");
        assert!(message.contains(&format!("at least {floor}")), "{message}");
    }

    #[test]
    fn the_step_budget_is_derived_unless_written() {
        let scenario = parse_text("[workload]\nwriters_count = 30\n").unwrap();
        let needed = Budget::of(&scenario).steps_needed(scenario.run.ticks_fault);
        assert!(scenario.run.steps_max >= needed && scenario.run.steps_max < needed + 1_000);
        assert_eq!(scenario.run.steps_max % 1_000, 0);
        assert_eq!(Scenario::default().run.steps_max, parse_text("").unwrap().run.steps_max);
        let written = parse_text(&format!("[run]\nsteps_max = {}\n", needed * 2)).unwrap();
        assert_eq!(written.run.steps_max, needed * 2);
    }

    #[test]
    fn settling_needs_room_for_polls_backoffs_and_settle_checks() {
        for (text, key) in [
            (
                "[run]\nticks_fault = 0\nticks_max = 1000\n[timing]\npoll_ticks = 5000\n",
                "timing.poll_ticks",
            ),
            (
                "[run]\nticks_fault = 0\nticks_max = 1000\n[timing]\nbusy_backoff_ticks_max = 500\n",
                "timing.busy_backoff_ticks_max",
            ),
            (
                "[run]\nticks_fault = 0\nticks_max = 1000\nsettle_check_ticks = 1000\n",
                "run.settle_check_ticks",
            ),
            ("[workload]\ntrips_count = 20000\n", "run.ticks_max"),
        ] {
            let message = error_of(text);
            assert!(message.contains(&format!("key `{key}`")), "{text}: {message}");
        }
    }

    #[test]
    fn power_loss_needs_a_fault_phase_that_writes() {
        let message = error_of("[run]\nticks_fault = 0\n[[script]]\ntick = 0\npower_cut = true\n");
        assert!(
            message.contains("key `run.ticks_fault`") && message.contains("at least 19"),
            "{message}"
        );
        let message = error_of("[power]\nloss = \"1/100\"\n[faults.writer]\nbefore_commit = \"1/1\"\n");
        assert!(message.contains("key `faults.writer.before_commit`"), "{message}");
        let message =
            error_of("[run]\nticks_fault = 500\n[power]\nloss = \"1/100\"\n[faults.writer]\nbefore_commit = \"1/2\"\n");
        assert!(
            message.contains("key `run.ticks_fault`") && message.contains("tries"),
            "{message}"
        );
        assert!(parse_text("[run]\nticks_fault = 500\n[power]\nloss = \"1/100\"\n").is_ok());
    }
}
