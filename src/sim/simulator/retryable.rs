//! Retryable failures (the settle rule of runs with timers is in `settle.rs`).
//!
//! Two fault-phase faults, drawn from streams of their own (so runs without
//! them draw nothing new, and a forced schedule replays them): a receiver
//! refuses a worker's request with a retryable error before doing anything
//! (`Fault::Refuse`), and a confirmed reply becomes a retryable error on its
//! way back (`Fault::ReplyRetryable`), after the effect committed. And one
//! property of the world, like a sold-out hotel: a poisoned key
//! (`[faults.receiver] poison`, decided from the seed and the key alone) is
//! refused every time, in every phase, so its command ends dead-lettered.
//!
//! A run with timers settles when no row waits for its timer and every
//! workflow is terminal or waits on a dead-lettered command (manual
//! handling: neither done nor failed, and nothing more will happen).

use std::collections::BTreeMap;

use super::{Phase, Simulator};
use crate::actors::{ActorId, Role};
use crate::faults::{Fault, FaultSource, Injected};
use crate::prng::Prng;
use crate::ratio::Ratio;
use crate::sim::net::{Address, Message};
use crate::store::Outcome;
use crate::trace::Op;

/// The error a refusing receiver answers.
const REFUSED: &str = "receiver unavailable (503), retry later";
/// The error a poisoned command gets, every time.
const POISONED: &str = "receiver rejects this command (poison), retry later";
/// The error a replaced reply carries.
const REPLACED: &str = "gateway timeout (504) after the receiver answered, retry later";

/// The retryable-fault state of one run.
pub(super) struct RetryFaults {
    seed: u64,
    poison: Ratio,
    refuse_prng: Prng,
    reply_prng: Prng,
    /// Worker requests that reached each receiver, across its lives.
    requests: BTreeMap<ActorId, u64>,
}

impl RetryFaults {
    pub(super) fn new(seed: u64, poison: Ratio) -> RetryFaults {
        RetryFaults {
            seed,
            poison,
            refuse_prng: Prng::derive(seed, "retry/refuse"),
            reply_prng: Prng::derive(seed, "retry/reply"),
            requests: BTreeMap::new(),
        }
    }

    /// Whether `key` is poisoned: a fixed function of the seed and the key
    /// (FNV-1a, whose definition cannot change under us).
    pub(super) fn poisoned(&self, key: &str) -> bool {
        if self.poison.is_zero() {
            return false;
        }
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in self.seed.to_le_bytes().into_iter().chain(key.bytes()) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        hash % u64::from(self.poison.denominator) < u64::from(self.poison.numerator)
    }
}

/// Whether a fault of `rate` may fire: drawn only when the rate is on, so a
/// run without it draws nothing; forced schedules decide by themselves.
fn fires(source: &FaultSource, prng: &mut Prng, rate: Ratio, fault: &Fault) -> bool {
    match source {
        FaultSource::Drawn if rate.is_zero() => false,
        source => source.fires(prng, rate, fault),
    }
}

impl Simulator<'_> {
    /// A worker's request reached receiver `to`: true if the receiver
    /// refuses it (and the refusal was answered).
    pub(super) fn refuse(&mut self, to: ActorId, message: &Message) -> bool {
        let Message::Request { request, reply_to } = message else {
            return false;
        };
        if to.role != Role::Receiver || reply_to.actor.role != Role::Worker {
            return false;
        }
        let count = self.retryable.requests.entry(to).or_default();
        *count += 1;
        let fault = Fault::Refuse { to, request: *count };
        let poison = self.retryable.poisoned(&request.key);
        let refused = poison
            || (self.phase == Phase::Faults
                && fires(
                    &self.source,
                    &mut self.retryable.refuse_prng,
                    self.plan.receiver_retryable,
                    &fault,
                ));
        if !refused {
            return false;
        }
        if !poison {
            self.injected.push(Injected { tick: self.now, fault });
        }
        let error = if poison { POISONED } else { REFUSED }.to_string();
        self.record(
            to,
            Op::Refuse {
                key: request.key.clone(),
                from: reply_to.actor,
                error: error.clone(),
                poison,
            },
        );
        let reply = Message::Reply {
            key: request.key.clone(),
            outcome: Outcome::Retryable { error },
        };
        self.send(to, *reply_to, reply);
        true
    }

    /// A receiver sends `message` as its `send`-th: a confirmed reply may be
    /// replaced by a retryable error (returned in its place).
    pub(super) fn replace_reply(&mut self, from: ActorId, to: Address, send: u64, message: Message) -> Message {
        let confirmed = matches!(&message, Message::Reply { outcome, .. } if outcome.result().is_some());
        let worker = to.actor.role == Role::Worker;
        if !confirmed || !worker || from.role != Role::Receiver || self.phase != Phase::Faults {
            return message;
        }
        let fault = Fault::ReplyRetryable { from, send };
        if !fires(
            &self.source,
            &mut self.retryable.reply_prng,
            self.plan.net_retryable,
            &fault,
        ) {
            return message;
        }
        self.injected.push(Injected { tick: self.now, fault });
        let key = message.key().to_string();
        self.record(
            from,
            Op::ReplyReplaced {
                key: key.clone(),
                to: to.actor,
                error: REPLACED.to_string(),
            },
        );
        Message::Reply {
            key,
            outcome: Outcome::Retryable {
                error: REPLACED.to_string(),
            },
        }
    }
}
