//! The simulator: one thread, one seed, real SQLite files.
//!
//! `Simulator` (simulator.rs) owns simulated time, the event queue
//! (queue.rs), every random stream (`crate::prng`), the network (net.rs),
//! the fault plan (`crate::faults`) and the trace. Actors see all of it only
//! through `Ctx` (`actors::ctx`), one step at a time: the simulator fills it
//! in, with the kill decisions of `gate` and the `World` of `world`.
//!
//! Every connection is opened with a busy timeout of zero: in one thread, a
//! connection that waits for a lock held by another connection of the same
//! thread waits for nothing but the clock. A busy answer is a scheduling
//! outcome instead: the actor retries the same step later.

pub mod baton;
pub mod gate;
pub mod net;
pub mod power;
pub mod queue;
pub mod simulator;
pub mod world;

pub use crate::actors::{Ctx, TripRequest, World};
pub use power::Recovery;
pub use simulator::{BackupFile, Files, RunOutput, SimError, Simulator};
