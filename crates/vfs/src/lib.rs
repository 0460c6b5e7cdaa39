//! crashsim's crash VFS and the disk model behind it, in one dependency-free
//! crate compiled twice: into crashsim (in-process stores, and the model an
//! outside store's cuts are restored with) and, by crashsim's build script,
//! into a SQLite loadable extension that an outside store's own SQLite loads
//! (`extension`). One implementation of the disk model serves both.
//!
//! - `ffi`: the SQLite C types and codes a VFS needs.
//! - `shim`: the forwarding VFS and its `Hooks`; the unsafe code, with its
//!   invariants written down once.
//! - `memory`: file bytes held in memory (in-process runs without power loss).
//! - `disk`: the durable images, the unsynced changes, the models, `restore`.
//! - `control`: the numbers crashsim and a crash VFS share (points, the armed
//!   cut, the clock), in memory or mapped from a file across processes.
//! - `log`: the change log a crash VFS in another process writes.
//! - `crash`: the crash VFS's hooks over those.
//! - `preempt`: scheduling points inside SQLite, and parking a store's
//!   process at one until crashsim lets it go on.
//! - `local`: the same suspensions for a store in crashsim's own process,
//!   whose connections crashsim runs on coroutines.
//! - `statements`: the SQL a store's connections started while preemption
//!   was live, so a suspension names the statements around it.
//! - `extension`: the loadable extension's entry point.

pub mod control;
pub mod crash;
pub mod disk;
pub mod extension;
pub mod ffi;
pub mod local;
pub mod log;
pub mod memory;
pub mod preempt;
pub mod shim;
pub mod statements;
