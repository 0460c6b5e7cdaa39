//! The workflow under test, as pure logic: the trip-booking saga of
//! PROTOCOL.md §1 (`trip`), its replay (`replay`) and its payloads (`payload`).
//!
//! Nothing here reads the clock, randomness or a database: the same history
//! always folds to the same state, which is what makes replay (I6) checkable.

pub mod payload;
pub mod replay;
pub mod trip;

pub use replay::{Replayed, replay};
pub use trip::{DecideError, Phase, Trip, decide};
