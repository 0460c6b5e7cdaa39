//! `Budget`: what a scenario's budget rules compare (`validate.rs`), from
//! its numbers alone. Public, so tools and tests can show and probe them.
//!
//! Notation: `L` latency_ticks_max, `S` step_ticks_max, `P` poll_ticks, `T`
//! reply_timeout_ticks, `B` busy_backoff_ticks_max, `C` settle_check_ticks;
//! `N` trips, `Wr`/`Wk`/`Rc` writers/workers/receivers, `A` all actors.
//!
//! - Round trip `RT = 2·L + 4·S·Wk`: a request and its reply each take up to
//!   `L`; a receiver answers after 4 steps of up to `S` (begin, lookup, apply,
//!   commit), and since every receiver takes the same database lock
//!   (`BEGIN IMMEDIATE`), a request may wait behind one request of every
//!   other worker. `T` must exceed it, or replies arrive after the worker
//!   resent and the resends pile up faster than receivers answer.
//! - Quiet minimum `Q = (P + S) + (T + RT) + 2·B + (1 + S) + C`: an idle
//!   poller wakes, a reply times out and its resend comes back, a busy step
//!   backs off (up to `B` plus as much jitter), a dead actor restarts (1
//!   tick into the quiet phase) and opens its connection, and a settle check
//!   sees the result. `run.quiet_ticks_min` may raise it, never lower it.
//! - With `[retries]`, `Q` also holds a poisoned command's whole chain,
//!   `max_attempts × (cap + cap/2 + P + T + RT)`: a timer set at the fault
//!   phase's end, and every attempt of a command that fails every time,
//!   until it is dead-lettered.
//! - Workload `W`: see `workload_ticks`.
//! - Steps: an actor has one wake-up at a time, each at least a tick later,
//!   so a run of `t` ticks takes at most `A·(t + 1)` steps.

use super::{RunLimits, Scenario, SkewFaults, Timing, Workload};

/// The quantities the budget rules compare, from a scenario's numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Every actor: writers, workers and receivers (`A`).
    pub actors: u64,
    /// The largest reply round trip (`RT`).
    pub round_trip: u64,
    /// The smallest quiet phase after which liveness may be judged, derived
    /// from the timing (`Q`).
    pub quiet_floor: u64,
    /// The quiet phase liveness is judged after: `run.quiet_ticks_min` if
    /// written (and not below the floor), else `quiet_floor`.
    pub quiet: u64,
    /// A conservative estimate of the ticks the whole workload needs from
    /// scratch without faults (`W`, `workload_ticks`).
    pub workload: u64,
    /// The longest legitimate wait between two durable facts (`G`,
    /// `stall_window`): `quiet`, with one attempt of a retry chain in place
    /// of the whole chain, since each failed attempt stores a timer.
    pub quiet_gap: u64,
}

impl Budget {
    pub fn of(scenario: &Scenario) -> Budget {
        let mut budget = Budget::from_parts(&scenario.run, &scenario.workload, &scenario.timing);
        // A pause drawn at the fault phase's last step runs on into the
        // quiet phase, and a row claimed by a worker that died is free again
        // only when its lease expires: the quiet phase waits for both.
        let pause = scenario.faults.pause.map_or(0, |pause| pause.ticks_max);
        // With skewed clocks a claimer may see a dead holder's expiry up to
        // 2·max_ticks late (the holder's clock ahead, the claimer's behind).
        let skew = SkewFaults::bound(scenario.faults.skew).saturating_mul(2);
        let lease = scenario.leases.map_or(0, |leases| leases.ticks.saturating_add(skew));
        // A timer set at the fault phase's end waits its longest delay, and
        // a poisoned command first tried then fails all its attempts before
        // it is dead-lettered (settled): each one a timer, a poll, a reply
        // timeout and a round trip.
        let attempt = scenario.retries.map_or(0, |retries| {
            sum(&[
                retries.longest_delay(),
                scenario.timing.poll_ticks,
                scenario.timing.reply_timeout_ticks,
                budget.round_trip,
            ])
        });
        let chain = scenario
            .retries
            .map_or(0, |retries| u64::from(retries.max_attempts).saturating_mul(attempt));
        let written = scenario.run.quiet_ticks_min.unwrap_or(0);
        let gap_floor = sum(&[budget.quiet_floor, pause, lease, attempt]);
        budget.quiet_floor = sum(&[budget.quiet_floor, pause, lease, chain]);
        budget.quiet = written.max(budget.quiet_floor);
        budget.quiet_gap = written.max(gap_floor);
        budget
    }

    /// The shortest claim-to-acknowledgement a delivery can take: 2 messages
    /// and 8 steps (`D` in `workload_ticks`). A lease no longer than this
    /// always expires before its holder can acknowledge.
    pub fn delivery(timing: &Timing) -> u64 {
        sum(&[
            timing.latency_ticks_max.saturating_mul(2),
            timing.step_ticks_max.saturating_mul(8),
        ])
    }

    fn from_parts(run: &RunLimits, workload: &Workload, timing: &Timing) -> Budget {
        let actors = u64::from(workload.writers_count)
            .saturating_add(u64::from(workload.workers_count))
            .saturating_add(u64::from(workload.receivers_count));
        let (s, l, b) = (
            timing.step_ticks_max,
            timing.latency_ticks_max,
            timing.busy_backoff_ticks_max,
        );
        let round_trip = l
            .saturating_mul(2)
            .saturating_add(s.saturating_mul(4).saturating_mul(u64::from(workload.workers_count)));
        let quiet_floor = sum(&[
            timing.poll_ticks.saturating_add(s),
            timing.reply_timeout_ticks.saturating_add(round_trip),
            b.saturating_mul(2),
            s.saturating_add(1),
            run.settle_check_ticks,
        ]);
        let quiet = run.quiet_ticks_min.unwrap_or(quiet_floor).max(quiet_floor);
        Budget {
            actors,
            round_trip,
            quiet_floor,
            quiet,
            workload: workload_ticks(workload, timing),
            quiet_gap: quiet,
        }
    }

    /// How long nothing durable may change before the run is judged stuck
    /// (`run.end_when_certain`): `2·(G + A·S) + H`. The gap `G` holds every
    /// legitimate wait of the scenario between two durable facts (a poll, a
    /// reply timeout and its resend, busy backoffs, a restart, a pause run
    /// on, a dead holder's lease under skewed clocks, one attempt of a retry
    /// chain, whose every failed attempt stores a timer); `A·S` is a step
    /// of every other actor, each of which may take a database's lock first
    /// (a thousand writers keep a worker's `mark_done` waiting for long);
    /// `H` is the longest hold of a suspended call
    /// (`preempt.hold_ticks_max`). Twice the sum: the study in
    /// `docs/performance.md` found no healthy gap past half of it. Under
    /// ending rule 2 (`capsule::FORMAT_2`) `G` was the quiet minimum `Q`,
    /// with the whole retry chain.
    pub fn stall_window(scenario: &Scenario) -> u64 {
        let budget = Budget::of(scenario);
        let gap = match scenario.run.ending_rule {
            ..=2 => budget.quiet,
            _ => budget.quiet_gap,
        };
        let contention = budget.actors.saturating_mul(scenario.timing.step_ticks_max);
        let hold = scenario.preempt.as_ref().map_or(0, |preempt| preempt.hold_ticks_max);
        sum(&[gap, contention]).saturating_mul(2).saturating_add(hold)
    }

    /// The smallest `run.ticks_max`: the fault phase, then the quiet minimum
    /// and the workload.
    pub fn ticks_needed(&self, ticks_fault: u64) -> u64 {
        sum(&[ticks_fault, self.quiet, self.workload])
    }

    /// The smallest `run.steps_max`: every actor stepping on every tick until
    /// `ticks_needed` (the most it can), so the step budget never ends a run
    /// before the tick budget could have let it settle.
    pub fn steps_needed(&self, ticks_fault: u64) -> u64 {
        self.actors
            .saturating_mul(self.ticks_needed(ticks_fault).saturating_add(1))
    }
}

fn sum(values: &[u64]) -> u64 {
    values.iter().fold(0u64, |total, value| total.saturating_add(*value))
}

/// `W`, a conservative estimate of the ticks a workload needs from scratch
/// without faults, every step and message at its longest. Each trip makes 4
/// appends and 3 commands (5 when hotels may fail: compensation). The lanes
/// below work in parallel; their sum is the estimate. Calibration: 322
/// faultless configurations (1–120 trips, 1–32 actors of each role, every
/// timing key over two orders of magnitude, both stores, both journal
/// modes), 6 seeds each, settled in a median 11% and at most 45% of `Q + W`:
///
/// - writers: an append is 7 steps (find work, load, check the result,
///   begin, insert the event, insert a command, commit) and, with more than
///   one writer, a busy backoff `2·B`; shared by `Wr` writers;
/// - workers: a delivery is 8 steps and 2 messages (`D = 2·L + 8·S`), a
///   busy backoff at `mark_done` and, with more than one receiver, one at
///   the receiver; shared by `Wk` workers. Workers compete for rows, so a
///   command is delivered by up to `min(Wk, 1 + ⌈Wk·RT/P⌉)` of them (the
///   nudged one, and those whose poll falls within its round trip);
/// - the receiver database's lock: 4 steps per delivery, one at a time;
/// - the store database's lock: 3 steps per append, 2 for each stale writer
///   that tried the same append, and one per `mark_done`. Stale writers per
///   append: `⌈Wr/N⌉` (writers that picked the same trip) plus `⌈7·S·Wr/P⌉`
///   (idle writers that polled while it was being appended), at most `Wr−1`;
/// - one trip's own chain: 3 hops of 3 messages, 16 steps and 3 backoffs,
///   then the last append.
pub fn workload_ticks(workload: &Workload, timing: &Timing) -> u64 {
    let n = u64::from(workload.trips_count);
    let writers = u64::from(workload.writers_count).max(1);
    let workers = u64::from(workload.workers_count).max(1);
    let (s, l, p) = (
        timing.step_ticks_max,
        timing.latency_ticks_max,
        timing.poll_ticks.max(1),
    );
    let backoff = timing.busy_backoff_ticks_max.saturating_mul(2);
    let commands: u64 = if workload.hotel_failure.is_zero() { 3 } else { 5 };
    // Workers compete for rows (no leases): every worker that reads the
    // pending rows while one is being delivered (up to a round trip) delivers
    // it too.
    let delivery = sum(&[l.saturating_mul(2), s.saturating_mul(8)]);
    let round_trip = l
        .saturating_mul(2)
        .saturating_add(s.saturating_mul(4).saturating_mul(workers));
    let copies = workers.min(1 + workers.saturating_mul(round_trip).div_ceil(p));
    let busy_writer = if writers > 1 { backoff } else { 0 };
    let busy_receiver = if workload.receivers_count > 1 { backoff } else { 0 };
    let stale = (writers - 1).min(
        writers
            .div_ceil(n.max(1))
            .saturating_add(s.saturating_mul(7 * writers).div_ceil(p)),
    );
    let appends = n.saturating_mul(4);
    let deliveries = n.saturating_mul(commands).saturating_mul(copies);
    let writer_lane = appends
        .saturating_mul(s.saturating_mul(7).saturating_add(busy_writer))
        .div_ceil(writers);
    let worker_lane = deliveries
        .saturating_mul(sum(&[delivery, busy_receiver, backoff]))
        .div_ceil(workers);
    let receiver_lock = deliveries.saturating_mul(s.saturating_mul(4));
    let store_lock = appends
        .saturating_mul(
            s.saturating_mul(3)
                .saturating_add(s.saturating_mul(2).saturating_mul(stale)),
        )
        .saturating_add(n.saturating_mul(commands).saturating_mul(s));
    let hop = sum(&[
        l.saturating_mul(3),
        s.saturating_mul(16),
        busy_writer,
        busy_receiver,
        backoff,
    ]);
    let chain = sum(&[hop.saturating_mul(3), s.saturating_mul(7), busy_writer]);
    sum(&[writer_lane, worker_lane, receiver_lock, store_lock, chain])
}

/// The `run.steps_max` a scenario gets when it writes none: the smallest the
/// rules accept (`Budget::steps_needed`), rounded up to a thousand.
pub(super) fn derived_steps_max(run: &RunLimits, workload: &Workload, timing: &Timing) -> u64 {
    let needed = Budget::from_parts(run, workload, timing).steps_needed(run.ticks_fault);
    round_steps(needed)
}

/// The derived `run.steps_max` of a whole scenario (its pauses and leases too).
pub(super) fn derived_steps_max_of(scenario: &Scenario) -> u64 {
    round_steps(Budget::of(scenario).steps_needed(scenario.run.ticks_fault))
}

fn round_steps(needed: u64) -> u64 {
    needed.div_ceil(1_000).saturating_mul(1_000).min(i64::MAX as u64)
}

#[cfg(test)]
mod tests {
    use super::Budget;
    use crate::scenario::Scenario;

    fn retries() -> Scenario {
        crate::scenario::builtin::find(std::path::Path::new("retries"))
            .expect("retries.toml is built in")
            .load()
            .expect("loads")
            .scenario
    }

    #[test]
    fn the_stall_window_waits_one_attempt_of_a_retry_chain_not_the_whole() {
        let scenario = retries();
        let policy = scenario.retries.expect("retries");
        let budget = Budget::of(&scenario);
        let attempts = u64::from(policy.max_attempts);
        assert!(attempts > 1);
        // The quiet minimum holds the whole chain; the gap one attempt of it.
        let chain = budget.quiet - budget.quiet_gap;
        assert_eq!(chain % (attempts - 1), 0, "{budget:?}");
        let attempt = chain / (attempts - 1);
        assert!(attempt >= policy.longest_delay(), "{budget:?}");
        let contention = budget.actors * scenario.timing.step_ticks_max;
        assert_eq!(Budget::stall_window(&scenario), 2 * (budget.quiet_gap + contention));
        // Rule 2 (capsules of format 2) waited for the whole chain.
        let mut old = scenario.clone();
        old.run.ending_rule = 2;
        assert_eq!(Budget::stall_window(&old), 2 * (budget.quiet + contention));
        // Without retries the two are one, and a written quiet minimum raises both.
        let mut plain = scenario;
        plain.retries = None;
        plain.run.quiet_ticks_min = Some(Budget::of(&plain).quiet + 500);
        let budget = Budget::of(&plain);
        assert_eq!(budget.quiet, budget.quiet_gap);
    }
}
