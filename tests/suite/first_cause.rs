//! The first line names the cause: when one mistake trips several
//! invariants, every report leads with the violation whose evidence comes
//! first in the trace (`check::order`).
//!
//! A replay that skips one kind of event decides from a state the log does
//! not give (I6, at the writer's load); the event it decides then does not
//! follow from the true state (I3, at its commit). The run leads with I6.
//! And where the evidence shows the cause, the first line says it.

use crate::common;

use common::{load, options, work_dir};
use crashsim::check::Invariant;
use crashsim::faults::FaultSource;
use crashsim::model::StoredEvent;
use crashsim::runner::run_seed_on;
use crashsim::store::engine::Dispatch;
use crashsim::store::reference::ReferenceSystem;
use crashsim::store::{self, Engine, Implementation, System, SystemConfig};
use crashsim::workflow::replay::ReplayError;
use crashsim::workflow::trip::FLIGHT_BOOKED;
use crashsim::workflow::{Replayed, Trip, decide};

/// The reference whose replay forgets `flight_booked` events.
struct SkipsFlights;

struct SkipFlightsEngine;

impl Engine for SkipFlightsEngine {
    fn replay(
        &self,
        workflow_id: &str,
        events: &[StoredEvent],
        _dispatch: &mut Dispatch<'_>,
    ) -> Result<Replayed, ReplayError> {
        let mut trip = Trip::new(workflow_id);
        let mut last_seq = 0;
        for event in events {
            last_seq = event.seq;
            if event.kind == FLIGHT_BOOKED {
                continue;
            }
            trip = decide(&trip, &event.event())
                .map_err(|source| ReplayError::Decide { seq: event.seq, source })?
                .0;
        }
        Ok(Replayed { trip, last_seq })
    }
}

impl Implementation for SkipsFlights {
    fn name(&self) -> &str {
        "skips_flights"
    }

    fn description(&self) -> &str {
        "the reference whose replay skips flight_booked events"
    }

    fn system(&self, config: &SystemConfig) -> store::Result<Box<dyn System>> {
        Ok(Box::new(ReferenceSystem::create(config)?))
    }

    fn engine(&self) -> &dyn Engine {
        &SkipFlightsEngine
    }
}

#[test]
fn a_replay_that_skips_an_event_kind_leads_with_i6_not_i3() {
    let dir = work_dir();
    let loaded = load("scenarios/smoke.toml");
    let result = run_seed_on(&loaded, &SkipsFlights, 0, &options(dir.path()), FaultSource::Drawn).expect("seed runs");
    let invariants: Vec<Invariant> = result.violations.iter().map(|v| v.invariant).collect();
    assert!(
        invariants.contains(&Invariant::I3),
        "the consequence is reported too: {invariants:?}"
    );
    let first = &result.violations[0];
    assert_eq!(
        first.invariant,
        Invariant::I6,
        "{:#?}",
        &result.violations[..3.min(result.violations.len())]
    );
    assert!(first.message.contains("but replaying the log"), "{first}");
}

/// A receiver that commits its effect apart from its de-dup record, killed
/// between the two: the page shows the kill and two effects, and the first
/// line draws the inference (`check::apart`).
#[test]
fn an_effect_that_outlived_its_receivers_kill_is_named_committed_apart() {
    let dir = work_dir();
    let loaded = load("scenarios/smoke.toml").with_mutant("dedup_apart").unwrap();
    let result = crashsim::runner::run_seed(&loaded, 0, &options(dir.path())).unwrap();
    let first = &result.violations[0];
    assert_eq!(first.invariant, Invariant::I2, "{first}");
    for words in [
        "survived its transaction",
        "killed at receiver.before_effect_commit",
        "committed apart from the record of its key",
    ] {
        assert!(first.message.contains(words), "{first}");
    }
}
