//! SQLite VFS shims: VFSes registered in crashsim's own SQLite that forward
//! every call to another VFS (the platform's default, `unix` on Linux) and
//! observe or alter what passes through. The forwarding layer, the disk
//! model and the loadable extension are the `crashsim_vfs` crate; here is
//! what crashsim builds on them.
//!
//! - `shim`: the forwarding layer bound to the SQLite crashsim links.
//! - `counting`: counts syncs, directory syncs, writes and opens, so the
//!   bench reports fsyncs per commit as counted, not as assumed.
//! - `crash`: a run's disk under power loss, in this process or shared with
//!   an outside store's processes through the extension.
//! - `clock`: answers SQLite's clock with the simulated one (runs without
//!   power loss; the crash VFS does the same) and, for in-process stores,
//!   keeps the files' bytes in memory (`memory`).
//! - `extension`: the loadable extension's file, built into this binary.
//!
//! A connection uses a VFS by name (`store::connection::open_via`).

pub mod clock;
pub mod counting;
pub mod crash;
pub mod extension;
pub mod shim;

pub use crashsim_vfs::memory;

pub use clock::ClockVfs;
pub use counting::{CountingVfs, Counts};
pub use crash::{CrashVfs, Model};
pub use shim::VfsError;
