//! I8 lease safety, judged from the trace.
//!
//! With leases, a worker claims rows (`Op::Claim`: owner, expiry, a fencing
//! token per row) and acknowledges each with its token (`Op::MarkDone` with
//! `token`, and whether the store counted it). What must hold:
//!
//! - **A late acknowledgement never wins.** A `mark_done` that counted
//!   (`changed`) carries the token of the row's latest claim: a holder whose
//!   lease had passed to another (a greater token) was rejected. This is
//!   the fencing clause; it holds whatever the clocks do.
//! - **A claim takes only an expired lease, with a greater token.** The
//!   store judges expiry by the claimer's clock: the claim's tick plus the
//!   claimer's offset (`Op::Skew`, `Op::ClockStep`; 0 without skew) is at or
//!   past the previous expiry, and the token grew.
//! - **One live lease per row by the true clock,** when the clocks allow it:
//!   no holder uses its lease (sends the row) after another worker claimed
//!   the row. The arithmetic, with `o` an actor's offset (within `[-S, S]`
//!   at every moment, steps included) and `m` the lease margin: holder A
//!   stored expiry `E` (its clock at the claim plus the lease) and sends at
//!   true tick `t` only while its clock reads `t + o_A < E - m`; B claims at
//!   true tick `t_B` only once `t_B + o_B >= E`. So `t < E - m - o_A` and
//!   `t_B >= E - o_B`, and `t < t_B` whenever `o_B - o_A <= m`, which
//!   `S_A + S_B <= m` guarantees, `S_X` being the largest offset actor X's
//!   clock shows in the run's trace. The check and the send happen in one
//!   step, so a pause between them cannot break this. Beyond that margin
//!   two holders can overlap, and only the fencing clause keeps the outcome
//!   right: the clause is then not applied to that pair. Judged per pair,
//!   it is applied always when `2·max_ticks <= margin_ticks`, and to the
//!   pairs of closer clocks when the scenario skews beyond the margin
//!   (`scenarios/leases.toml`).
//!
//! A lease ends at its expiry, or earlier when its holder hands the row
//! back: with retry timers, a retryable failure stored under the row's
//! current token (`Op::RetryScheduled` with that token) releases the lease
//! (docs/protocol.md, retry timers), and the holder drops the row. A claim
//! after that takes no live lease, whoever makes it and however soon the
//! timer is due; the token must still grow. A timer stored under an older
//! token changed nothing (the fencing clause) and releases nothing.
//!
//! A power cut kills every holder and may take the latest claims with it
//! (on weak settings): what was claimed before it is forgotten.

use crate::model::Shown;
use std::collections::BTreeMap;

use super::{Input, Invariant, Violation};
use crate::actors::ActorId;
use crate::trace::{Op, TraceEvent};

/// A claim of a row.
#[derive(Clone, Copy)]
struct Lease<'a> {
    tick: u64,
    /// The claimer.
    actor: ActorId,
    owner: &'a str,
    token: u64,
    expires: u64,
    /// What the claimer's clock read at the claim.
    clock: u64,
    /// The holder handed the row back before expiry (`schedule_retry`).
    released: bool,
}

pub fn check(input: &Input<'_>) -> Vec<Violation> {
    judge(input.events, Some(input.lease_margin_ticks))
}

/// I8 on `events`. Every clause but one is judged by what the trace fixed
/// when it happened, so a run's prefix gives the same findings as the run
/// (`check::certain`). The clause of one live lease by the true clock reads
/// each actor's largest offset over the run, which a later clock step can
/// widen: it is judged only with the lease margin given (`margin_ticks`),
/// once no clock can step again (after the fault phase, or the run).
pub fn judge(events: &[TraceEvent], margin_ticks: Option<u64>) -> Vec<Violation> {
    // Each actor's largest clock offset over the run (`S` per actor).
    let mut bounds: BTreeMap<ActorId, u64> = BTreeMap::new();
    for event in events {
        if let Op::Skew { offset } | Op::ClockStep { offset, .. } = event.op {
            let bound = bounds.entry(event.actor).or_default();
            *bound = (*bound).max(offset.unsigned_abs());
        }
    }
    let bound_of = |actor: &ActorId| bounds.get(actor).copied().unwrap_or(0);
    let mut offsets: BTreeMap<ActorId, i64> = BTreeMap::new();
    let mut latest: BTreeMap<&str, Lease<'_>> = BTreeMap::new();
    // Each holder's own claims, to name a late acknowledgement's lease.
    let mut held: BTreeMap<(&str, u64), Lease<'_>> = BTreeMap::new();
    // The token of each worker's latest claim of a row: what it sends under.
    let mut mine: BTreeMap<(ActorId, &str), Lease<'_>> = BTreeMap::new();
    let mut violations = Vec::new();
    // Where each actor's call suspended inside the store (`[preempt]`)
    // began, with the actor's clock offset then: the call ran from there to
    // its answer, and asked with the clock of its start.
    let mut suspended: BTreeMap<ActorId, (u64, i64)> = BTreeMap::new();
    for event in events {
        if let Op::Preempted { .. } = event.op {
            let offset = offsets.get(&event.actor).copied().unwrap_or(0);
            suspended.entry(event.actor).or_insert((event.tick, offset));
            continue;
        }
        // A pause or clock event is recorded before the call is asked again.
        let began = if event.op.at_step_start() {
            None
        } else {
            suspended.remove(&event.actor)
        };
        match &event.op {
            Op::Skew { offset } | Op::ClockStep { offset, .. } => {
                offsets.insert(event.actor, *offset);
            }
            Op::Claim {
                owner,
                expires,
                claimed,
            } => {
                let offset = offsets.get(&event.actor).copied().unwrap_or(0);
                let (tick, offset) = began.unwrap_or((event.tick, offset));
                for claim in claimed {
                    let lease = Lease {
                        tick,
                        actor: event.actor,
                        owner,
                        token: claim.token,
                        expires: *expires,
                        clock: tick.saturating_add_signed(offset),
                        released: false,
                    };
                    held.insert((claim.command_id.as_str(), claim.token), lease);
                    mine.insert((event.actor, claim.command_id.as_str()), lease);
                    if let Some(before) = latest.get(claim.command_id.as_str()) {
                        // A suspended claim answered after one it may have
                        // preceded: the tokens say which came first.
                        if began.is_some() && lease.token < before.token && lease.tick <= before.tick {
                            continue;
                        }
                        violations.extend(overlap(&claim.command_id, before, &lease));
                    }
                    latest.insert(&claim.command_id, lease);
                }
            }
            Op::Send { command_id, .. } => {
                let (Some(used), Some(current), Some(margin_ticks)) = (
                    mine.get(&(event.actor, command_id.as_str())),
                    latest.get(command_id.as_str()),
                    margin_ticks,
                ) else {
                    continue;
                };
                // The clause holds for this pair of clocks when their
                // largest offsets sum to no more than the margin.
                let (holder, claimer) = (bound_of(&event.actor), bound_of(&current.actor));
                let strict = holder.saturating_add(claimer) <= margin_ticks;
                if strict && current.token > used.token {
                    let message = format!(
                        "{command_id_shown}: two live leases by the true clock: {} sent the row at tick {} under its \
                         lease from tick {} (token {}, until tick {} by its clock), after {} had claimed it at \
                         tick {} with token {}; their clocks are off by at most {holder} and {claimer} ticks and \
                         the lease margin is {} ticks, so the holder must have stopped first",
                        used.owner,
                        event.tick,
                        used.tick,
                        used.token,
                        used.expires,
                        current.owner,
                        current.tick,
                        current.token,
                        margin_ticks,
                        command_id_shown = Shown(command_id)
                    );
                    violations.push(Violation::new(Invariant::I8, message).command(command_id).ticks([
                        used.tick,
                        current.tick,
                        event.tick,
                    ]));
                }
            }
            Op::MarkDone {
                command_id,
                changed: true,
                token: Some(token),
            } => {
                let current = latest.get(command_id.as_str());
                if current.is_some_and(|lease| lease.token == *token) {
                    continue;
                }
                let mine = held.get(&(command_id.as_str(), *token));
                let message = match (mine, current) {
                    (Some(mine), Some(current)) => format!(
                        "{command_id_shown}: a late acknowledgement counted: {} marked the row done at tick {} \
                         with token {token} (its lease from tick {} expired at tick {}), after {} had \
                         claimed it at tick {} with token {}",
                        mine.owner,
                        event.tick,
                        mine.tick,
                        mine.expires,
                        current.owner,
                        current.tick,
                        current.token,
                        command_id_shown = Shown(command_id)
                    ),
                    _ => format!(
                        "{command_id_shown}: {} marked the row done at tick {} with token {token}, which no claim \
                         of the row gave{}",
                        event.actor,
                        event.tick,
                        current.map_or(String::new(), |current| format!(
                            " (its current token is {}, {}'s)",
                            current.token, current.owner
                        )),
                        command_id_shown = Shown(command_id)
                    ),
                };
                let ticks = [mine.map(|lease| lease.tick), current.map(|lease| lease.tick)];
                violations.push(
                    Violation::new(Invariant::I8, message)
                        .command(command_id)
                        .ticks(ticks.into_iter().flatten().chain([event.tick])),
                );
            }
            Op::RetryScheduled {
                command_id,
                token: Some(token),
                ..
            } => {
                if let Some(lease) = latest.get_mut(command_id.as_str())
                    && lease.token == *token
                {
                    lease.released = true;
                }
            }
            // A restore takes the lease table back as a cut may.
            Op::PowerCut { .. } | Op::RolledBack { .. } => {
                latest.clear();
                held.clear();
                mine.clear();
            }
            _ => {}
        }
    }
    violations
}

/// What is wrong with claiming a row again as `after` when `before` was its
/// latest claim: a token that did not grow, or a lease still live by the
/// claimer's clock.
fn overlap(command_id: &str, before: &Lease<'_>, after: &Lease<'_>) -> Vec<Violation> {
    let mut found = Vec::new();
    if after.token <= before.token {
        found.push(format!(
            "{command_id_shown}: the fencing token did not grow: {} claimed the row at tick {} with token {}, \
             after {}'s claim at tick {} with token {}",
            after.owner,
            after.tick,
            after.token,
            before.owner,
            before.tick,
            before.token,
            command_id_shown = Shown(command_id)
        ));
    }
    if !before.released && after.clock < before.expires {
        let clock = match after.clock == after.tick {
            true => String::new(),
            false => format!(" (its clock read {})", after.clock),
        };
        found.push(format!(
            "{command_id_shown}: two live leases: {} claimed the row at tick {}{clock} while {}'s lease (tick {}, \
             token {}) ran until tick {}",
            after.owner,
            after.tick,
            before.owner,
            before.tick,
            before.token,
            before.expires,
            command_id_shown = Shown(command_id)
        ));
    }
    found
        .into_iter()
        .map(|message| {
            Violation::new(Invariant::I8, message)
                .command(command_id)
                .ticks([before.tick, after.tick])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::Invariant::{self, I8};
    use super::super::fixtures::{Fixture, clean};
    use crate::actors::{ActorId, Role};
    use crate::trace::{Claimed, Op, TraceEvent};

    const ROW: &str = "trip-000:1:0";

    /// The clean run, then claims and acknowledgements of one row at ticks
    /// counted from the end of its trace.
    struct Leases {
        fixture: Fixture,
        base: u64,
    }

    impl Leases {
        fn new() -> Leases {
            let fixture = clean();
            let base = fixture.events.last().map_or(0, |event| event.tick);
            Leases { fixture, base }
        }

        fn at(&mut self, tick: u64, worker: u32, op: Op) -> &mut Leases {
            self.fixture.events.push(TraceEvent {
                tick: self.base + tick,
                actor: ActorId::new(Role::Worker, worker),
                op,
            });
            self
        }

        /// Worker `worker` claims the row at `tick` for `ticks` with `token`.
        fn claim(&mut self, tick: u64, worker: u32, token: u64, ticks: u64) -> &mut Leases {
            let op = Op::Claim {
                owner: format!("worker-{worker}#0"),
                expires: self.base + tick + ticks,
                claimed: vec![Claimed {
                    command_id: ROW.to_string(),
                    token,
                }],
            };
            self.at(tick, worker, op)
        }

        fn mark(&mut self, tick: u64, worker: u32, token: u64, changed: bool) -> &mut Leases {
            let op = Op::MarkDone {
                command_id: ROW.to_string(),
                changed,
                token: Some(token),
            };
            self.at(tick, worker, op)
        }

        /// Worker `worker`'s clock reads `offset` off the true tick from `tick` on.
        fn skew(&mut self, tick: u64, worker: u32, offset: i64) -> &mut Leases {
            self.at(tick, worker, Op::Skew { offset })
        }

        /// Worker `worker` stores a retry timer for the row under `token`.
        fn retry(&mut self, tick: u64, worker: u32, token: u64) -> &mut Leases {
            let op = Op::RetryScheduled {
                command_id: ROW.to_string(),
                attempt: 1,
                next_at: self.base + tick + 1,
                error: "busy".to_string(),
                token: Some(token),
            };
            self.at(tick, worker, op)
        }

        fn send(&mut self, tick: u64, worker: u32) -> &mut Leases {
            let op = Op::Send {
                command_id: ROW.to_string(),
                key: ROW.to_string(),
                to: ActorId::new(Role::Receiver, 0),
                attempt: 1,
            };
            self.at(tick, worker, op)
        }

        fn invariants(&self) -> BTreeSet<Invariant> {
            self.fixture.invariants()
        }
    }

    fn only(leases: &Leases, expected: &[Invariant]) {
        let expected: BTreeSet<Invariant> = expected.iter().copied().collect();
        assert_eq!(
            leases.invariants(),
            expected,
            "violations: {:#?}",
            leases.fixture.violations()
        );
    }

    #[test]
    fn a_lease_taken_over_after_expiry_and_acknowledged_by_its_holder_passes() {
        let mut run = Leases::new();
        run.claim(1, 0, 1, 10).claim(11, 1, 2, 10).mark(15, 1, 2, true);
        // The first holder comes back late: rejected, as it must be.
        run.mark(16, 0, 1, false);
        only(&run, &[]);
    }

    #[test]
    fn an_expired_lease_nobody_took_over_still_acknowledges() {
        let mut run = Leases::new();
        run.claim(1, 0, 1, 10).mark(40, 0, 1, true);
        only(&run, &[]);
    }

    #[test]
    fn a_late_acknowledgement_that_counted_is_rejected() {
        let mut run = Leases::new();
        run.claim(1, 0, 1, 10).claim(11, 1, 2, 10).mark(12, 0, 1, true);
        only(&run, &[I8]);
        let violations = run.fixture.violations();
        let message = &violations[0].message;
        assert!(message.contains("late acknowledgement counted"), "{message}");
        assert!(
            message.contains("worker-0#0") && message.contains("worker-1#0"),
            "{message}"
        );
        assert_eq!(violations[0].command_id.as_deref(), Some(ROW));
        assert_eq!(violations[0].ticks, [run.base + 1, run.base + 11, run.base + 12]);
    }

    #[test]
    fn a_late_acknowledgement_after_the_current_holder_is_rejected_too() {
        let mut run = Leases::new();
        run.claim(1, 0, 1, 10)
            .claim(11, 1, 2, 10)
            .mark(12, 1, 2, true)
            .mark(13, 0, 1, true);
        only(&run, &[I8]);
    }

    #[test]
    fn a_claim_of_a_live_lease_is_rejected() {
        let mut run = Leases::new();
        run.claim(1, 0, 1, 10).claim(10, 1, 2, 10);
        only(&run, &[I8]);
        assert!(run.fixture.violations()[0].message.contains("two live leases"));
    }

    #[test]
    fn a_token_that_does_not_grow_is_rejected() {
        let mut run = Leases::new();
        run.claim(1, 0, 3, 10).claim(20, 1, 3, 10);
        only(&run, &[I8]);
        assert!(run.fixture.violations()[0].message.contains("did not grow"));
    }

    #[test]
    fn a_token_no_claim_gave_is_rejected() {
        let mut run = Leases::new();
        run.claim(1, 0, 1, 10).mark(5, 0, 7, true);
        only(&run, &[I8]);
        assert!(run.fixture.violations()[0].message.contains("no claim"));
    }

    #[test]
    fn a_power_cut_forgets_the_claims_before_it() {
        let mut run = Leases::new();
        run.claim(1, 0, 1, 100);
        run.at(
            2,
            0,
            Op::PowerCut {
                point: 9,
                model: "drop_unsynced".into(),
            },
        );
        // The claim was lost with the cut: the next one may repeat its token.
        run.claim(30, 1, 1, 100).mark(31, 1, 1, true);
        only(&run, &[]);
    }

    /// Worker 0's clock runs 10 behind, worker 1's 10 ahead: worker 1 takes
    /// the row at true tick 95, when its clock reads 105 and worker 0's lease
    /// (stored expiry 101 by worker 0's clock) has expired by worker 1's.
    fn skewed_takeover(margin: u64) -> Leases {
        let mut run = Leases::new();
        run.fixture.lease_margin_ticks = margin;
        run.skew(0, 0, -10).skew(0, 1, 10);
        run.claim(1, 0, 1, 100).claim(95, 1, 2, 10);
        run
    }

    #[test]
    fn a_claim_is_judged_by_the_claimers_clock() {
        let mut run = skewed_takeover(20);
        run.mark(97, 1, 2, true).mark(99, 0, 1, false);
        only(&run, &[]);
        // Without its skew, the same claim would take a live lease.
        let mut unskewed = Leases::new();
        unskewed.claim(1, 0, 1, 100).claim(95, 1, 2, 10);
        only(&unskewed, &[I8]);
    }

    #[test]
    fn within_the_margin_a_holder_that_sends_after_a_takeover_is_two_live_leases() {
        // 2 × 10 <= 20: worker 0 must stop sending by its clock's 81 (true
        // tick 91), before any clock could see its expiry. It sends at 96.
        let mut run = skewed_takeover(20);
        run.send(96, 0).mark(97, 1, 2, true).mark(99, 0, 1, false);
        only(&run, &[I8]);
        let violations = run.fixture.violations();
        assert!(
            violations[0].message.contains("two live leases by the true clock"),
            "{violations:#?}"
        );
        // A send before the takeover is the holder's right.
        let mut early = skewed_takeover(20);
        early
            .fixture
            .events
            .retain(|event| !matches!(event.op, Op::Claim { .. }));
        early.claim(1, 0, 1, 100).send(90, 0).claim(95, 1, 2, 10);
        only(&early, &[]);
    }

    #[test]
    fn the_clause_is_judged_per_pair_of_clocks() {
        // A third worker far off (±50 > the margin) leaves the pair of
        // workers 0 and 1 (10 + 10 <= 20) judged as before.
        let mut run = skewed_takeover(20);
        run.skew(0, 2, 50);
        run.send(96, 0).mark(97, 1, 2, true).mark(99, 0, 1, false);
        only(&run, &[I8]);
    }

    #[test]
    fn beyond_the_margin_only_fencing_is_judged() {
        // 2 × 10 > 5: two holders may overlap; the late acknowledgement is
        // rejected, so the outcome is right.
        let mut run = skewed_takeover(5);
        run.send(96, 0).mark(97, 1, 2, true).mark(99, 0, 1, false);
        only(&run, &[]);
        // But a late acknowledgement that counted is still caught.
        let mut unfenced = skewed_takeover(5);
        unfenced.send(96, 0).mark(97, 0, 1, true);
        only(&unfenced, &[I8]);
        assert!(
            unfenced.fixture.violations()[0]
                .message
                .contains("late acknowledgement")
        );
    }

    #[test]
    fn a_lease_released_by_a_retry_timer_is_claimed_again_before_its_expiry() {
        // The gate's false alarm (issue 25): the holder stores a timer, which
        // releases its lease; it (or another worker) claims the row again
        // once the timer is due, long before the old expiry.
        let mut run = Leases::new();
        run.claim(1, 0, 1, 100).send(2, 0).retry(5, 0, 1).claim(10, 0, 2, 100);
        run.send(11, 0).mark(15, 0, 2, true);
        only(&run, &[]);
        let mut other = Leases::new();
        other
            .claim(1, 0, 1, 100)
            .retry(5, 0, 1)
            .claim(10, 1, 2, 100)
            .mark(15, 1, 2, true);
        only(&other, &[]);
        // Without the timer, the same claim takes a live lease.
        let mut held = Leases::new();
        held.claim(1, 0, 1, 100).claim(10, 0, 2, 100);
        only(&held, &[I8]);
    }

    #[test]
    fn a_timer_under_an_older_token_releases_nothing() {
        // Worker 0's timer comes after worker 1 took the row over: it is
        // fenced out, so worker 1's lease is still live at tick 20.
        let mut run = Leases::new();
        run.claim(1, 0, 1, 10)
            .claim(11, 1, 2, 100)
            .retry(12, 0, 1)
            .claim(20, 0, 3, 100);
        only(&run, &[I8]);
        assert!(run.fixture.violations()[0].message.contains("two live leases"));
    }

    #[test]
    fn a_released_lease_still_needs_a_greater_token() {
        let mut run = Leases::new();
        run.claim(1, 0, 1, 100).retry(5, 0, 1).claim(10, 1, 1, 100);
        only(&run, &[I8]);
        let violations = run.fixture.violations();
        assert_eq!(violations.len(), 1, "{violations:#?}");
        assert!(violations[0].message.contains("did not grow"));
    }
}
