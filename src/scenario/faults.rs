//! A scenario's fault rates (`[faults]` and its tables): the kill points of
//! each role, the network's, the rogue and near-miss keys, and the plan
//! the simulator draws from them. Ratios like "1/50"; unlisted faults are
//! off.

use serde::{Deserialize, Serialize};

use super::{PauseFaults, SkewFaults};
use crate::faults::{FaultPlan, KILL_POINTS, KillPoint};
use crate::ratio::Ratio;

/// Fault rates, as ratios like "1/50". Unlisted faults are off.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    /// Draw, per seed, which kill points are on and at what rate (the listed
    /// rates are then ignored). Default false.
    pub swarm: bool,
    pub writer: WriterFaults,
    pub worker: WorkerFaults,
    pub receiver: ReceiverFaults,
    pub net: NetFaults,
    /// Chance that a confirmed command is followed by a rogue request reusing
    /// its key with other core parameters (the receiver must reject it: I7).
    pub key_conflict: Ratio,
    /// Chance that a confirmed command is followed by a request with its
    /// exact parameters under a near miss of its key (another case, a space
    /// at either end, the other Unicode normalization form): a different
    /// key, which the receiver must treat as a different operation (I7).
    /// Default: the `key_conflict` rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub near_miss_key: Option<Ratio>,
    /// Actors pause with their state intact (off unless written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause: Option<PauseFaults>,
    /// Actors' clocks are skewed and step (off unless written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skew: Option<SkewFaults>,
    /// A run of this scenario fails (exit 1) when a kill point or fault it
    /// declares never fires, or an invariant its faults make is never
    /// exercised (`crashsim run --require-fired`). Default false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub require_fired: bool,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WriterFaults {
    pub before_commit: Ratio,
    pub after_commit: Ratio,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerFaults {
    pub after_read_pending: Ratio,
    pub before_deliver: Ratio,
    pub after_deliver: Ratio,
    pub before_mark_done: Ratio,
    pub after_mark_done: Ratio,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReceiverFaults {
    pub before_effect_commit: Ratio,
    pub after_effect_commit: Ratio,
    /// Chance that a receiver answers a request with a retryable error
    /// before doing anything (fault phase only). Needs `[retries]`.
    #[serde(skip_serializing_if = "zero")]
    pub retryable: Ratio,
    /// Share of commands a receiver refuses retryably every time (decided
    /// per idempotency key from the seed, in every phase): they exhaust
    /// their attempts and are dead-lettered. Needs `[retries]`.
    #[serde(skip_serializing_if = "zero")]
    pub poison: Ratio,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetFaults {
    /// Chance that a message is lost.
    pub drop: Ratio,
    /// Chance that a message arrives twice.
    pub duplicate: Ratio,
    /// Chance that a receiver's confirmed reply (the effect committed) is
    /// replaced on the way by a retryable error (fault phase only): the
    /// retry must find the de-dup record. Needs `[retries]`.
    #[serde(skip_serializing_if = "zero")]
    pub retryable: Ratio,
}

fn zero(ratio: &Ratio) -> bool {
    ratio.is_zero()
}

impl Faults {
    /// The configured kill rates, indexed like `KillPoint::ALL`.
    pub fn kill_rates(&self) -> [Ratio; KILL_POINTS] {
        let mut rates = [Ratio::ZERO; KILL_POINTS];
        for point in KillPoint::ALL {
            rates[point.index()] = match point {
                KillPoint::WriterBeforeCommit => self.writer.before_commit,
                KillPoint::WriterAfterCommit => self.writer.after_commit,
                KillPoint::WorkerAfterReadPending => self.worker.after_read_pending,
                KillPoint::WorkerBeforeDeliver => self.worker.before_deliver,
                KillPoint::WorkerAfterDeliver => self.worker.after_deliver,
                KillPoint::WorkerBeforeMarkDone => self.worker.before_mark_done,
                KillPoint::WorkerAfterMarkDone => self.worker.after_mark_done,
                KillPoint::ReceiverBeforeEffectCommit => self.receiver.before_effect_commit,
                KillPoint::ReceiverAfterEffectCommit => self.receiver.after_effect_commit,
            };
        }
        rates
    }

    /// The plan as configured, before any swarm draw (without power loss,
    /// which the scenario's `[power]` adds).
    pub fn plan(&self) -> FaultPlan {
        let mut plan = FaultPlan::fixed(self.kill_rates(), self.net.drop, self.net.duplicate, self.key_conflict);
        plan.receiver_retryable = self.receiver.retryable;
        plan.net_retryable = self.net.retryable;
        plan.poison = self.receiver.poison;
        plan.near_miss = self.near_miss_key.unwrap_or(self.key_conflict);
        plan
    }

    /// The kill points this scenario declares: with swarm, any of them may be drawn.
    pub fn declared(&self) -> Vec<KillPoint> {
        if self.swarm {
            return KillPoint::ALL.to_vec();
        }
        let rates = self.kill_rates();
        KillPoint::ALL
            .into_iter()
            .filter(|point| !rates[point.index()].is_zero())
            .collect()
    }
}
