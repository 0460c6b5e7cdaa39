//! Why a VFS could not be registered (written out by hand: this crate has
//! no dependencies, `thiserror` included).

use std::ffi::c_int;

/// Why a VFS could not be registered.
#[derive(Debug)]
pub enum VfsError {
    BadName(String),
    NameTaken(String),
    NoDefault,
    Register(c_int),
    /// The state a VFS needs could not be laid out or reached.
    Io(String),
}

impl std::fmt::Display for VfsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VfsError::BadName(name) => write!(f, "VFS name {name:?} contains a NUL byte"),
            VfsError::NameTaken(name) => write!(f, "a VFS called {name:?} is already registered"),
            VfsError::NoDefault => write!(f, "SQLite has no default VFS to forward to"),
            VfsError::Register(code) => write!(f, "sqlite3_vfs_register failed with code {code}"),
            VfsError::Io(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for VfsError {}
