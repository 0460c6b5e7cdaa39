//! `claim` answers judged (I1), as `pending` answers are: a claim that
//! came back short while rows were certainly claimable hid them. A store
//! that only takes rows nobody ever leased is the classic case: a worker
//! dies holding a lease, the lease expires, and no claim ever takes the
//! row again. Without this the run only fails to settle, with no cause.
//!
//! A row is certainly claimable by a claim when it is due (`Known::due`:
//! committed, never marked or given a timer) and its lease is certainly
//! over by the claimer's clock (the claim's tick plus the claimer's offset,
//! as `leases.rs` reads it): never claimed, or its latest claim's expiry
//! strictly before that clock (one tick of slack over the protocol's
//! `lease_expires <= now`). A claim whose rows no one learned (a claim call
//! that failed, died, or was suspended inside the store) may have leased
//! any row committed by then, until at most its tick plus the claimer's
//! largest offset so far plus the lease: those rows are not judged before
//! that. A power cut may take claims back, which only shortens leases.

use super::known::Known;
use crate::check::{Invariant, Violation};
use crate::model::Shown;
use crate::trace::Claimed;

/// What a run's claims are asked with: the batch limit and the lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claims {
    pub limit: usize,
    pub lease_ticks: u64,
}

impl Claims {
    /// A scenario's claims: its batch and lease (none without leases).
    pub fn of(scenario: &crate::scenario::Scenario) -> Option<Claims> {
        scenario.leases.map(|leases| Claims {
            limit: scenario.workload.pending_batch as usize,
            lease_ticks: leases.ticks,
        })
    }
}

/// A claim asked with the claimer's `clock` that answered `answer` (its rows).
pub fn judge_claim(known: &Known, claims: Claims, clock: u64, answer: &[Claimed]) -> Option<Violation> {
    if answer.len() >= claims.limit {
        return None;
    }
    let leases = &known.leases;
    // The latest expiry an unseen claim may have stored on a row that may
    // have been seen from `landed` on.
    let unseen = |landed: u64| {
        leases
            .unseen
            .iter()
            .filter(|(tick, _)| *tick >= landed)
            .map(|(_, clock)| clock.saturating_add(claims.lease_ticks))
            .max()
    };
    let left_out: Vec<(&String, String)> = known
        .due()
        .filter(|(command_id, _)| !answer.iter().any(|claimed| &claimed.command_id == *command_id))
        // An unseen claim may have taken the row from the moment it may
        // have landed (a commit suspended after it landed answers later).
        .filter(|(command_id, committed)| {
            let landed = known.landed.get(*command_id).copied().unwrap_or(**committed);
            unseen(landed).is_none_or(|until| until < clock)
        })
        .filter_map(|(command_id, committed)| match leases.latest.get(command_id) {
            None => Some((command_id, format!("never claimed, committed at tick {committed}"))),
            Some(held) if held.expires < clock => Some((
                command_id,
                format!("lease of {} expired at tick {}", held.owner, held.expires),
            )),
            Some(_) => None,
        })
        .collect();
    let (first, _) = left_out.first()?;
    let named: Vec<String> = left_out
        .iter()
        .map(|(command_id, why)| format!("{} ({why})", Shown(command_id.as_str())))
        .collect();
    Some(
        Violation::new(
            Invariant::I1,
            format!(
                "claim(limit {}) at clock {clock} answered {} row(s) while {} more were claimable: it left out {}",
                claims.limit,
                answer.len(),
                left_out.len(),
                super::first_five(&named)
            ),
        )
        .command(first),
    )
}
