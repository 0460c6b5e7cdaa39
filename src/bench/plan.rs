//! What `crashsim bench` measures: the configurations, by name, in the order
//! each round runs them. With `--sut`, the outside store's own (`sut_*`)
//! join them, next to the limit and the reference's matching paths.

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
    /// The outside store (`--sut`): one `append` request per event, with
    /// `commands` outbox commands, on its own database (FULL).
    SutAppend { commands: usize },
    /// The outside store's no-op request (`ping`): the protocol's own cost per call.
    SutPing,
    /// One `append` suspended inside the store's SQLite at its first
    /// scheduling point, then asked again and resumed to its answer: what
    /// a suspension's rendezvous adds to a call (`[preempt]`).
    SutSuspend,
    /// A new store connection of the outside store (a process: started, or
    /// forked by its fork server with `fork`) to its `open` answer, then
    /// killed: what every actor's restart costs a run.
    SutConnect { fork: bool },
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

    /// Whether this measures the outside store (`--sut`) rather than crashsim's own code.
    pub fn is_sut(self) -> bool {
        matches!(
            self,
            Kind::SutAppend { .. } | Kind::SutPing | Kind::SutSuspend | Kind::SutConnect { .. }
        )
    }

    /// Whether its syncs are counted: not for an outside process, which the
    /// counting VFS (in this process) never sees.
    pub fn counts_fsyncs(self) -> bool {
        !self.is_sut()
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

/// The outside store's configurations (`--sut`): its append path with and
/// without an outbox command, mirroring `append_full` and
/// `append_outbox1_full`, and its no-op request.
pub fn sut() -> Vec<Config> {
    vec![
        config(
            "sut_append_full",
            Kind::SutAppend { commands: 0 },
            "the outside store: one event per `append` request, synchronous=full",
        ),
        config(
            "sut_append_outbox1_full",
            Kind::SutAppend { commands: 1 },
            "the outside store: one event + 1 command per `append` request",
        ),
        config(
            "sut_ping",
            Kind::SutPing,
            "the outside store's no-op request (`ping`): the protocol's own cost per call",
        ),
        config(
            SUSPEND,
            Kind::SutSuspend,
            "an `append` suspended inside the store's SQLite at its first point, then resumed: the rendezvous",
        ),
        config(
            "sut_connect_fork",
            Kind::SutConnect { fork: true },
            "a new connection of the outside store, forked by its fork server (started if it has none), to `open`",
        ),
        config(
            "sut_connect_spawn",
            Kind::SutConnect { fork: false },
            "a new connection of the outside store, a process started from its command, to `open`",
        ),
    ]
}

/// The configuration that suspends the outside store's calls: it needs
/// crashsim's VFS extension in the store's SQLite.
pub const SUSPEND: &str = "sut_suspend";

/// crashsim's own configurations a `--sut` run keeps by default besides the
/// raw ones: the paths the outside store's mirror, as the reference.
pub const SUT_REFERENCES: [&str; 2] = ["append_full", "append_outbox1_full"];

/// The configurations whose name contains one of `only` (all if empty);
/// the limit is always kept, since every ratio needs it. With `sut` (an
/// outside store was given), its configurations are candidates too, and
/// the default is the raw ones, `SUT_REFERENCES` and the outside store's.
/// `Err` names the filters that matched nothing.
pub fn select(only: &[String], sut: bool) -> Result<Vec<Config>, String> {
    let mut configs = all();
    if sut {
        configs.extend(self::sut());
    }
    if only.is_empty() {
        if !sut {
            return Ok(configs);
        }
        return Ok(configs
            .into_iter()
            .filter(|config| {
                config.name.starts_with("raw_")
                    || SUT_REFERENCES.contains(&config.name.as_str())
                    || config.kind.is_sut()
            })
            .collect());
    }
    let unmatched: Vec<&str> = only
        .iter()
        .filter(|filter| !configs.iter().any(|config| config.name.contains(filter.as_str())))
        .map(String::as_str)
        .collect();
    if !unmatched.is_empty() {
        if !sut
            && unmatched
                .iter()
                .any(|filter| self::sut().iter().any(|config| config.name.contains(filter)))
        {
            return Err(format!(
                "--only {}: the sut_* configurations measure an outside store: name it with --sut CMD",
                unmatched.join(",")
            ));
        }
        let names: Vec<String> = configs.iter().map(|config| config.name.clone()).collect();
        return Err(format!(
            "--only {}: no configuration matches; they are: {}",
            unmatched.join(","),
            names.join(", ")
        ));
    }
    let selected: Vec<Config> = configs
        .into_iter()
        .filter(|config| config.name == LIMIT || only.iter().any(|filter| config.name.contains(filter.as_str())))
        .collect();
    if sut && !selected.iter().any(|config| config.kind.is_sut()) {
        return Err(format!(
            "--only {} keeps none of the outside store's configurations ({}): with --sut, keep one, or drop --sut",
            only.join(","),
            self::sut()
                .iter()
                .map(|config| config.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(selected)
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
        let picked: Vec<String> = select(&["group_commit1".to_string()], false)
            .unwrap()
            .into_iter()
            .map(|config| config.name)
            .collect();
        assert_eq!(picked, [LIMIT, "group_commit1_full", "group_commit16_full"]);
        let error = select(&["nope".to_string()], false).unwrap_err();
        assert!(error.contains("nope") && error.contains("append_full"), "{error}");
        assert_eq!(select(&[], false).unwrap().len(), all().len());
    }

    #[test]
    fn a_sut_run_keeps_the_raw_limits_the_reference_and_its_own_configurations() {
        let names = |configs: Vec<Config>| -> Vec<String> { configs.into_iter().map(|config| config.name).collect() };
        let picked = names(select(&[], true).unwrap());
        assert_eq!(
            picked,
            [
                LIMIT,
                "raw_overwrite_fdatasync_4k",
                "raw_wal_frames2_fsync",
                "raw_append_fdatasync_4k",
                "raw_append_fdatasync_200b",
                "append_full",
                "append_outbox1_full",
                "sut_append_full",
                "sut_append_outbox1_full",
                "sut_ping",
                "sut_suspend",
                "sut_connect_fork",
                "sut_connect_spawn",
            ]
        );
        assert!(select(&[], false).unwrap().iter().all(|config| !config.kind.is_sut()));
        assert_eq!(
            names(select(&["sut_ping".to_string()], true).unwrap()),
            [LIMIT, "sut_ping"]
        );
        let error = select(&["sut_ping".to_string()], false).unwrap_err();
        assert!(error.contains("--sut"), "{error}");
        let error = select(&["batch".to_string()], true).unwrap_err();
        assert!(error.contains("sut_append_full"), "{error}");
        for config in self::sut() {
            assert!(config.kind.is_sut() && !config.kind.counts_fsyncs(), "{}", config.name);
            assert!(config.name.starts_with("sut_"));
        }
    }
}
