//! Messages between actors: the vocabulary lives with the actors
//! (`actors::message`); the network itself (latency, loss, duplication) is
//! in the simulator's event queue. Re-exported here under its old path.

pub use crate::actors::{Address, Message};
