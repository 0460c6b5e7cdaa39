//! SQLite VFS shims: wrappers registered through `rusqlite::ffi` that
//! forward every call to another VFS (the platform's default, `unix` on
//! Linux) and observe what passes through.
//!
//! - `counting`: counts syncs, directory syncs, writes and opens, so the
//!   bench reports fsyncs per commit as counted, not as assumed.
//!
//! A connection uses a shim by name (`store::connection::open_via`). The
//! simulator never does: its connections go straight to the default VFS.
//! The crash VFS of a later issue builds on the same forwarding pattern,
//! buffering writes until a sync instead of counting them.

pub mod counting;

pub use counting::{CountingVfs, Counts, VfsError};
