//! Durability across power loss, measured: the table of journal modes,
//! `synchronous` levels and disk models (`table`, over `workload`, whose
//! appends go through crashsim's reference or, with `outside`, through a
//! store in another process), and the enumeration of
//! every cut point of a scenario's run (`exhaustive`), and what becomes
//! of backups taken mid-workload, by method (`backups`). All go through the
//! crash VFS of `vfs::crash`.

pub mod backups;
pub mod exhaustive;
mod outside;
pub mod table;
mod workload;
