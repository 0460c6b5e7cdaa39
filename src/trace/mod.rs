//! The trace: every step of a run, recorded (`recorder`), typed (`event`)
//! and rendered for people (`render`), each step by whom (`actor`). Replay
//! compares traces; checkers read them as the run's history.

mod actor;
pub mod event;
pub mod recorder;
pub mod render;

pub use actor::{ActorId, Role};
pub use event::{Appended, Claimed, HeadSeen, Loaded, Op, Ran, TraceEvent};
pub use recorder::{Recorder, trace_hash};
