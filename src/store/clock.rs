//! `Clock`: the run's time as a store may read it.
//!
//! A store that stamps rows needs a time, and the wall clock would make two
//! runs of one seed differ. The simulator advances this clock (in ticks);
//! stores and adapters only read it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Shared simulated time, in ticks. Cloning shares it.
#[derive(Clone, Debug, Default)]
pub struct Clock(Arc<AtomicU64>);

impl Clock {
    pub fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Moves the clock to `tick` (the simulator's call).
    pub fn set(&self, tick: u64) {
        self.0.store(tick, Ordering::Relaxed);
    }
}
