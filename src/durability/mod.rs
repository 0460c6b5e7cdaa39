//! Durability across power loss, measured: the table of journal modes,
//! `synchronous` levels and disk models (`table`), and the enumeration of
//! every cut point of a scenario's run (`exhaustive`). Both go through the
//! crash VFS of `vfs::crash`.

pub mod exhaustive;
pub mod table;
