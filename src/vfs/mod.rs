//! SQLite VFS shims: VFSes registered through `rusqlite::ffi` that forward
//! every call to another VFS (the platform's default, `unix` on Linux) and
//! observe or alter what passes through.
//!
//! - `shim`: the forwarding layer and its `Hooks` trait; the only `unsafe`
//!   code in crashsim, with its invariants documented there.
//! - `counting`: counts syncs, directory syncs, writes and opens, so the
//!   bench reports fsyncs per commit as counted, not as assumed.
//! - `crash`: keeps each file's durable image and the writes since, and at a
//!   power cut rewrites the files as a chosen model of the disk would leave
//!   them.
//! - `clock`: answers SQLite's clock with the simulated one (runs without
//!   power loss; the crash VFS does the same) and, for in-process stores,
//!   keeps the files' bytes in memory (`memory`).
//! - `memory`: the in-memory file images a shim can serve reads, writes,
//!   truncations, sizes and syncs from, while locks stay real.
//!
//! A connection uses a VFS by name (`store::connection::open_via`).

pub mod clock;
pub mod counting;
pub mod crash;
pub mod memory;
pub mod shim;

pub use clock::ClockVfs;
pub use counting::{CountingVfs, Counts};
pub use crash::{CrashVfs, Model};
pub use shim::VfsError;
