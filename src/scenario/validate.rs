//! Cross-field validation: what types alone cannot express (bounds of
//! every number, scripted faults that name real actors).

use std::collections::BTreeMap;

use super::Scenario;

impl Scenario {
    /// Cross-field checks that types alone cannot express: (key, message).
    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        let fail = |key: &str, message: String| Err((key.to_string(), message));
        if crate::mutants::resolve(&self.store).is_none() {
            let known = crate::mutants::names().join(", ");
            return fail(
                "store",
                format!("unknown implementation {:?}; known: {known}", self.store),
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
        if self.run.ticks_fault > self.run.ticks_max {
            return fail(
                "run.ticks_fault",
                format!(
                    "must not exceed run.ticks_max ({} > {})",
                    self.run.ticks_fault, self.run.ticks_max
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
