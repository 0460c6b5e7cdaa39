//! How a run ends without a verdict, and when a run that did not settle may
//! be judged at all.
//!
//! A run that stops early is never blamed on the store: the store broke the
//! harness's contract (an adapter's malformed answer), the machine failed
//! under it (a full disk, an I/O error that crashsim did not inject), or
//! the run was interrupted. A run whose budget ended before the quiet phase
//! had the minimum the scenario gives it (`run.quiet_ticks_min`) is judged
//! on safety only: liveness (I10) is judged only after faults stopped that
//! long, and a run with nothing else to report is inconclusive (an error).

use super::{Phase, Simulator};
use crate::store::StoreError;

/// Why a run stopped without a verdict, as the step loop finds it.
#[derive(Clone, Debug)]
pub(super) enum Fatal {
    /// The store broke its contract with the harness.
    Broken(String),
    /// The machine failed under the store.
    Environment(String),
    /// The interrupt flag was raised (a signal): the run was abandoned.
    Interrupted,
}

impl Fatal {
    /// The failure of a store call made by the simulator itself (a settle
    /// check, a recovery, a dump): the environment's if it is one, else
    /// the store's broken contract.
    pub(super) fn of(what: &str, error: &StoreError) -> Fatal {
        match error.environment() {
            Some(cause) => Fatal::Environment(format!("{what}: {cause}")),
            None => Fatal::Broken(format!("{what}: {error}")),
        }
    }

    pub(super) fn into_error(self) -> super::SimError {
        match self {
            Fatal::Broken(message) => super::SimError::Broken(message),
            Fatal::Environment(message) => super::SimError::Environment(message),
            Fatal::Interrupted => super::SimError::Interrupted,
        }
    }
}

impl Simulator<'_> {
    /// Whether the power is out right now: an error the store met is then
    /// the cut crashsim injected, not the machine's.
    pub(super) fn cutting(&self) -> bool {
        self.power.as_ref().is_some_and(|power| power.cut().is_some())
    }

    /// The machine failed under actor `slot`: a crash if crashsim caused it
    /// (a power cut), else the run stops without a verdict.
    pub(super) fn environment_failed(&mut self, slot: usize, cause: String) {
        if self.cutting() {
            self.kill(slot, "crash");
        } else {
            let id = self.slots[slot].id;
            self.fatal = Some(Fatal::Environment(format!("{id}: {cause}")));
        }
    }

    /// For a run whose budget ended before it settled: why it cannot be
    /// judged, if it cannot. `ended` is the tick the budget ran out at.
    pub(super) fn inconclusive(&self, ended: u64) -> Option<String> {
        let run = &self.scenario.run;
        let minimum = self.scenario.quiet_ticks_min();
        let budget = if self.steps >= run.steps_max {
            format!("run.steps_max ({} steps)", run.steps_max)
        } else {
            format!("run.ticks_max ({} ticks)", run.ticks_max)
        };
        if self.phase == Phase::Faults {
            return Some(format!(
                "inconclusive: the budget {budget} ended in the fault phase, at tick {ended} of \
                 run.ticks_fault = {}; liveness is judged only after faults stop",
                run.ticks_fault
            ));
        }
        let quiet = ended.saturating_sub(self.stall.quiet_from);
        (quiet < minimum).then(|| {
            format!(
                "inconclusive: the budget {budget} ended {quiet} ticks into the quiet phase, less than \
                 run.quiet_ticks_min = {minimum}; liveness is judged only after faults stopped that long"
            )
        })
    }
}
