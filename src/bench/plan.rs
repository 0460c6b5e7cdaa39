//! What `crashsim bench` measures: the configurations, by name, in the order
//! each round runs them.

use crate::store::Synchronous;

/// The limit every other configuration is compared with: what the disk
/// gives a WAL that is rewritten in place after its first checkpoint.
pub const LIMIT: &str = "raw_overwrite_fsync_4k";

/// The same limit for a SQLite that syncs with `fdatasync`.
pub const FDATASYNC_LIMIT: &str = "raw_overwrite_fdatasync_4k";

/// How a configuration writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `bytes` written over a preallocated region, then `fsync`.
    RawOverwriteFsync { bytes: usize },
    /// The same, then `fdatasync` (what a SQLite built with `HAVE_FDATASYNC` calls).
    RawOverwriteFdatasync { bytes: usize },
    /// `frames` WAL frames (24-byte header + 4 KiB page each, written as
    /// SQLite writes them, unaligned) over a preallocated region, then `fsync`.
    RawWalFrames { frames: usize },
    /// `bytes` appended to a file, then `fdatasync`.
    RawAppendFdatasync { bytes: usize },
    /// One event (and `commands` outbox rows) per transaction, one persistent connection.
    Append { synchronous: Synchronous, commands: usize },
    /// `appends` events per transaction, one persistent connection (FULL).
    Batch { appends: usize },
    /// `members` workflows' appends per transaction, each in its savepoint,
    /// committed by the group committer's own code on one thread (FULL).
    Groups { members: usize },
    /// A new connection per append, closed after it (FULL).
    ConnPerAppend,
    /// `threads` OS threads, each with its own connection, one event per transaction (FULL).
    Writers { threads: usize },
    /// `writers` OS threads appending through one threaded group committer (FULL).
    GroupCommit { writers: usize },
}

impl Kind {
    /// How many threads append concurrently.
    pub fn writers(self) -> usize {
        match self {
            Kind::Writers { threads } => threads,
            Kind::GroupCommit { writers } => writers,
            _ => 1,
        }
    }
}

/// One measured configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `snake_case`, the synchronous mode last: `append_full`, `batch100_full`.
    pub name: String,
    pub kind: Kind,
    /// One line for the report.
    pub description: String,
}

fn config(name: impl Into<String>, kind: Kind, description: impl Into<String>) -> Config {
    Config {
        name: name.into(),
        kind,
        description: description.into(),
    }
}

/// Every configuration, the limit first.
pub fn all() -> Vec<Config> {
    let mut configs = vec![
        config(
            LIMIT,
            Kind::RawOverwriteFsync { bytes: 4096 },
            "the limit: 4 KiB overwrite + fsync, as a WAL after its first checkpoint",
        ),
        config(
            FDATASYNC_LIMIT,
            Kind::RawOverwriteFdatasync { bytes: 4096 },
            "4 KiB overwrite + fdatasync: the limit of a SQLite built with HAVE_FDATASYNC (crashsim's calls fsync)",
        ),
        config(
            "raw_wal_frames2_fsync",
            Kind::RawWalFrames { frames: 2 },
            "what one append's COMMIT writes: 2 WAL frames (8 KiB over 3 blocks) + fsync",
        ),
        config(
            "raw_append_fdatasync_4k",
            Kind::RawAppendFdatasync { bytes: 4096 },
            "4 KiB append + fdatasync: a growing file",
        ),
        config(
            "raw_append_fdatasync_200b",
            Kind::RawAppendFdatasync { bytes: 200 },
            "200 B append + fdatasync: a small log record",
        ),
    ];
    for (synchronous, label) in [
        (Synchronous::Full, "full"),
        (Synchronous::Normal, "normal"),
        (Synchronous::Off, "off"),
    ] {
        configs.push(config(
            format!("append_{label}"),
            Kind::Append {
                synchronous,
                commands: 0,
            },
            format!("one event per transaction, synchronous={}", synchronous.as_str()),
        ));
    }
    for commands in [1, 3] {
        configs.push(config(
            format!("append_outbox{commands}_full"),
            Kind::Append {
                synchronous: Synchronous::Full,
                commands,
            },
            format!("one event + {commands} outbox row(s) per transaction"),
        ));
    }
    for appends in [10, 100] {
        configs.push(config(
            format!("batch{appends}_full"),
            Kind::Batch { appends },
            format!("{appends} events per transaction"),
        ));
    }
    configs.push(config(
        "groups16_full",
        Kind::Groups { members: 16 },
        "16 workflows' appends per transaction, a savepoint each, one thread: group_commit16's ceiling",
    ));
    for threads in [1, 2, 4, 8, 16] {
        configs.push(config(
            format!("writers{threads}_full"),
            Kind::Writers { threads },
            format!("{threads} thread(s), a connection each, SQLite's busy handler"),
        ));
    }
    configs.push(config(
        "conn_per_append_full",
        Kind::ConnPerAppend,
        "open a connection, append, close: the pattern most code starts with",
    ));
    for writers in [1, 4, 16, 64] {
        configs.push(config(
            format!("group_commit{writers}_full"),
            Kind::GroupCommit { writers },
            format!("{writers} thread(s) through one group committer"),
        ));
    }
    configs
}

/// The configurations whose name contains one of `only` (all if empty);
/// the limit is always kept, since every ratio needs it. `Err` names the
/// filters that matched nothing.
pub fn select(only: &[String]) -> Result<Vec<Config>, String> {
    let configs = all();
    if only.is_empty() {
        return Ok(configs);
    }
    let unmatched: Vec<&str> = only
        .iter()
        .filter(|filter| !configs.iter().any(|config| config.name.contains(filter.as_str())))
        .map(String::as_str)
        .collect();
    if !unmatched.is_empty() {
        let names: Vec<String> = configs.iter().map(|config| config.name.clone()).collect();
        return Err(format!(
            "--only {}: no configuration matches; they are: {}",
            unmatched.join(","),
            names.join(", ")
        ));
    }
    Ok(configs
        .into_iter()
        .filter(|config| config.name == LIMIT || only.iter().any(|filter| config.name.contains(filter.as_str())))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_include_the_ones_reports_rely_on() {
        let names: Vec<String> = all().into_iter().map(|config| config.name).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        assert_eq!(names[0], LIMIT);
        for name in [
            "append_full",
            "append_normal",
            "append_off",
            "append_outbox1_full",
            "append_outbox3_full",
            "batch10_full",
            "batch100_full",
            "groups16_full",
            "writers16_full",
            "conn_per_append_full",
            "group_commit16_full",
            "group_commit64_full",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} missing from {names:?}");
        }
    }

    #[test]
    fn selection_keeps_the_limit_and_rejects_filters_that_match_nothing() {
        let picked: Vec<String> = select(&["group_commit1".to_string()])
            .unwrap()
            .into_iter()
            .map(|config| config.name)
            .collect();
        assert_eq!(picked, [LIMIT, "group_commit1_full", "group_commit16_full"]);
        let error = select(&["nope".to_string()]).unwrap_err();
        assert!(error.contains("nope") && error.contains("append_full"), "{error}");
        assert_eq!(select(&[]).unwrap().len(), all().len());
    }
}
