//! The simulator: one thread, one seed, real SQLite files.
//!
//! `Simulator` (simulator.rs) owns simulated time, the event queue
//! (queue.rs), every random stream (prng.rs), the network (net.rs), the
//! fault plan (faults.rs) and the trace. Actors see all of it only through
//! `Ctx` (ctx.rs), one step at a time.
//!
//! Every connection is opened with a busy timeout of zero: in one thread, a
//! connection that waits for a lock held by another connection of the same
//! thread waits for nothing but the clock. A busy answer is a scheduling
//! outcome instead: the actor retries the same step later.

pub mod ctx;
pub mod faults;
pub mod net;
pub mod power;
pub mod prng;
pub mod queue;
pub mod simulator;

pub use ctx::{Ctx, TripRequest, World};
pub use power::Recovery;
pub use simulator::{Files, RunOutput, SimError, Simulator};
