//! The simulator's bookkeeping: its phase, the events of its queue, and
//! each actor's slot, which outlives the actor's lives.

use super::super::net::{Address, Message};
use crate::actors::{Actor, ActorId};
use crate::faults::KILL_POINTS;
use crate::prng::Prng;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Faults,
    Quiet,
}

pub(super) enum Event {
    Step {
        slot: usize,
        token: u64,
    },
    Deliver {
        to: Address,
        message: Message,
    },
    Restart {
        slot: usize,
        incarnation: u32,
    },
    Quiet,
    SettleCheck,
    Script {
        index: usize,
    },
    /// The `n`-th backup (`backup.rs`), its `part`-th part (from 0), tried
    /// for the `attempt`-th time.
    Backup {
        n: u32,
        part: u32,
        attempt: u32,
    },
    /// The `n`-th restore (`restore.rs`).
    Restore {
        n: u32,
    },
}

pub(super) enum Life {
    /// Alive but not yet connected: the next step opens the connection.
    Booting,
    Up(Box<Actor>),
    Down,
}

/// One actor's place in the simulation, which outlives its lives.
pub(super) struct Slot {
    pub(super) id: ActorId,
    pub(super) life: Life,
    pub(super) incarnation: u32,
    pub(super) token: u64,
    /// Waiting for a message: an arrival wakes it.
    pub(super) waiting: bool,
    /// Busy answers in a row, for the backoff.
    pub(super) busy_streak: u32,
    /// How often the actor reached each kill point, across its lives.
    pub(super) reaches: [u64; KILL_POINTS],
    /// Messages it sent, across its lives.
    pub(super) sent: u64,
    /// The actor's decisions.
    pub(super) prng: Prng,
    /// Its step durations and restart delays.
    pub(super) sched: Prng,
    /// Its kill draws.
    pub(super) faults: Prng,
    /// Steps it was about to take in the fault phase, across its lives
    /// (the occurrences a pause is decided at).
    pub(super) pause_steps: u64,
    /// Its pause draws.
    pub(super) pauses: Prng,
    /// Its clock: the true tick plus this (`skew.rs`).
    pub(super) offset: i64,
    /// Steps it was about to take in the fault phase, across its lives
    /// (the occurrences a clock step is decided at), with skew on.
    pub(super) skew_steps: u64,
    /// Its skew and clock-step draws.
    pub(super) skews: Prng,
    /// Where its calls are suspended, and for how long (`[preempt]`).
    pub(super) preempts: Prng,
    /// Steps it took in the fault phase with suspensions on, across its
    /// lives (the occurrences `Fault::Preempt` names).
    pub(super) preempt_steps: u64,
    /// How long it waits after its call parked waiting for a lock (a
    /// stream of its own, so a forced schedule waits as the drawn run did).
    pub(super) waits: Prng,
    /// Its last step's call is parked inside the store's SQLite.
    pub(super) parked: bool,
    /// Statements the store's connections had started when it parked (the
    /// position in the control region's ring).
    pub(super) parked_sql: u64,
    /// Where its suspension's event is in the trace.
    pub(super) parked_event: Option<usize>,
}

impl Slot {
    /// Actor `id` before its first boot: its streams derived from `seed`.
    pub(super) fn new(id: ActorId, seed: u64) -> Slot {
        Slot {
            id,
            life: Life::Booting,
            incarnation: 0,
            token: 0,
            waiting: false,
            busy_streak: 0,
            reaches: [0; KILL_POINTS],
            sent: 0,
            prng: Prng::derive(seed, &format!("{id}/decide")),
            sched: Prng::derive(seed, &format!("{id}/sched")),
            faults: Prng::derive(seed, &format!("{id}/faults")),
            pause_steps: 0,
            pauses: Prng::derive(seed, &format!("{id}/pause")),
            offset: 0,
            skew_steps: 0,
            skews: Prng::derive(seed, &format!("{id}/skew")),
            preempts: Prng::derive(seed, &format!("{id}/preempt")),
            preempt_steps: 0,
            waits: Prng::derive(seed, &format!("{id}/preempt-wait")),
            parked: false,
            parked_sql: 0,
            parked_event: None,
        }
    }
}
