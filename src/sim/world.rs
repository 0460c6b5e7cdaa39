//! The `World` of a seed: the fixed facts actors need (its trips, counts,
//! timings, leases, retries), built from the scenario and the seed's plan.

use crate::actors::{TripRequest, World};
use crate::faults::FaultPlan;
use crate::prng::Prng;

// `World` is the actors' type (`actors::ctx`); the simulator builds it.
impl<'a> World<'a> {
    /// The world of seed `seed` of `scenario`, with the plan's (maybe
    /// swarm-drawn) styles of ids and payload strings.
    pub fn new(
        scenario: &crate::scenario::Scenario,
        plan: &FaultPlan,
        seed: u64,
        engine: &'a dyn crate::store::Engine,
        roles: crate::store::Roles,
    ) -> World<'a> {
        let count = scenario.workload.trips_count;
        let ids = crate::workload::ids::trip_ids(count, &plan.ids, &mut Prng::derive(seed, "workload/ids"));
        let cities = crate::workload::cities::cities(&plan.payloads);
        let mut prng = Prng::derive(seed, "workload/trips");
        let mut trips: Vec<TripRequest> = ids
            .into_iter()
            .map(|trip_id| TripRequest {
                trip_id,
                city: prng.pick(&cities).expect("cities").clone(),
            })
            .collect();
        // Every trip is drawn first, so the kept ones are those a run of
        // them all has (`workload.trips_kept`, positions checked on load).
        if let Some(kept) = &scenario.workload.trips_kept {
            let mut position = 0;
            trips.retain(|_| {
                position += 1;
                kept.binary_search(&(position - 1)).is_ok()
            });
        }
        trips.sort_by(|a, b| a.trip_id.cmp(&b.trip_id));
        World {
            engine,
            roles,
            trips,
            poll_ticks: scenario.timing.poll_ticks,
            reply_timeout_ticks: scenario.timing.reply_timeout_ticks,
            writers_count: scenario.workload.writers_count,
            workers_count: scenario.workload.workers_count,
            receivers_count: scenario.workload.receivers_count,
            pending_batch: scenario.workload.pending_batch as usize,
            lease_ticks: scenario.leases.map(|leases| leases.ticks),
            retries: scenario.retries.map(|retries| retries.policy()),
            dedup_retention_ticks: scenario.receivers.and_then(|receivers| receivers.dedup_retention_ticks),
            lease_margin_ticks: scenario.leases.map_or(0, |leases| leases.margin_ticks),
            wait_on_resultless: scenario.run.ending_rule >= 4,
        }
    }
}
