//! I9, the part that needs no power loss: every connection runs with a
//! `synchronous` level that makes at least the syncs the scenario's level
//! makes. Durability across power loss is only as strong as the weakest
//! connection that acknowledged a commit, and `synchronous` belongs to the
//! connection, not the file: an implementation that applies it once
//! (mistake 10), or a library that never applies it, leaves connections on
//! the SQLite build's default.
//!
//! Levels are judged by their effect, not their letter (`same_syncs`): in
//! WAL mode EXTRA makes exactly the syncs FULL makes (it only adds a
//! directory sync after a rollback journal is deleted, and WAL deletes
//! none), so a connection on FULL where EXTRA is asked is no finding; in
//! rollback-journal mode it is. A stricter level than asked is more durable
//! than required, a correct choice, and no finding either.
//!
//! Two kinds of evidence: the level each connection reports when it opens
//! (an outside store may not know it: `null`, no evidence), and, for an
//! outside store whose SQLite loaded crashsim's VFS extension, what that
//! SQLite did: a commit acknowledged with no sync at all (`Op::Unsynced`)
//! ran below FULL, whatever the adapter reported. Findings are grouped by
//! cause and role: one per (database, role, level observed), not one per
//! connection.

use std::collections::BTreeMap;

use super::{Expected, History, Invariant, Violation};
use crate::actors::{ActorId, Role};
use crate::store::JournalMode;

/// The connections (or commits) of one cause, as (tick, actor).
type Group = Vec<(u64, ActorId)>;

/// At most this many ticks of a grouped finding are kept as its evidence
/// (the message counts them all).
const TICKS_SHOWN: usize = 8;

fn name(level: u8) -> &'static str {
    match level {
        0 => "OFF",
        1 => "NORMAL",
        2 => "FULL",
        3 => "EXTRA",
        _ => "unknown",
    }
}

/// The level whose syncs `level` makes in `mode`: in WAL, EXTRA's are FULL's.
pub fn same_syncs(level: u8, mode: JournalMode) -> u8 {
    match mode {
        JournalMode::Wal => level.min(2),
        JournalMode::Delete => level,
    }
}

/// Whether a connection on `level` makes at least the syncs `asked` makes.
pub fn satisfies(level: u8, asked: u8, mode: JournalMode) -> bool {
    same_syncs(level, mode) >= same_syncs(asked, mode)
}

/// Which database an actor's connections open, and the level asked of it.
fn asked_of(expected: &Expected, role: Role) -> (&'static str, u8) {
    match role {
        Role::Receiver => ("receiver", expected.receiver),
        _ => ("store", expected.store),
    }
}

fn plural(role: Role) -> &'static str {
    match role {
        Role::Writer => "writers",
        Role::Worker => "workers",
        Role::Receiver => "receivers",
        Role::Prober => "probers",
        Role::Sim => "the simulator",
    }
}

fn shown_ticks(ticks: &[u64]) -> impl Iterator<Item = u64> + '_ {
    ticks.iter().copied().take(TICKS_SHOWN)
}

/// I9 by the connections' settings, as the trace shows them: certain as
/// soon as a connection opens (or commits) below the asked level, since no
/// later event undoes that, so judged while the run goes too (`certain`,
/// from ending rule 6). Each message names a group's first connection, not
/// how many there were: its first line is the same whenever the run ended.
pub fn check(expected: &Expected, history: &History<'_>) -> Vec<Violation> {
    let mode = expected.journal_mode;
    let mut violations = Vec::new();

    // Opens below the asked level, by (database, role, level).
    let mut weak: BTreeMap<(&str, Role, u8), Group> = BTreeMap::new();
    for (tick, actor, level) in &history.opens {
        let (database, asked) = asked_of(expected, actor.role);
        if !satisfies(*level, asked, mode) {
            weak.entry((database, actor.role, *level))
                .or_default()
                .push((*tick, *actor));
        }
    }
    for ((database, role, level), opened) in weak {
        let (_, asked) = asked_of(expected, role);
        let ticks: Vec<u64> = opened.iter().map(|(tick, _)| *tick).collect();
        let actors: Vec<ActorId> = opened.iter().map(|(_, actor)| *actor).collect();
        let of = match role {
            Role::Receiver => String::new(),
            role => format!(" of {}", plural(role)),
        };
        let why = if mode == JournalMode::Delete && asked == 3 && level == 2 {
            " (in rollback-journal mode only EXTRA syncs the directory after deleting the journal)".to_string()
        } else {
            String::new()
        };
        violations.push(
            Violation::new(
                Invariant::I9,
                format!(
                    "{database} connections{of} reported synchronous={} ({level}) when opened, first {} at \
                     tick {}: the scenario asks for {} ({asked}) in {} mode, and {} makes fewer syncs{why}: \
                     commits they acknowledge may not survive a power cut",
                    name(level),
                    actors[0],
                    ticks[0],
                    name(asked),
                    mode.as_str(),
                    name(level),
                ),
            )
            .ticks(shown_ticks(&ticks)),
        );
    }

    // What the store's SQLite did, whatever its `open` reported: a commit
    // under FULL syncs at least once (the WAL, or the journal and database);
    // under EXTRA with a rollback journal it also syncs the directory after
    // deleting the journal.
    let mut unsynced: BTreeMap<(&str, Role, bool), Group> = BTreeMap::new();
    for (tick, actor, database, directory) in &history.unsynced {
        unsynced
            .entry((database, actor.role, *directory))
            .or_default()
            .push((*tick, *actor));
    }
    for ((database, role, directory), commits) in unsynced {
        let asked = match database {
            "receiver" => expected.receiver,
            _ => expected.store,
        };
        let ticks: Vec<u64> = commits.iter().map(|(tick, _)| *tick).collect();
        let actors: Vec<ActorId> = commits.iter().map(|(_, actor)| *actor).collect();
        let observed = match directory {
            false => "were acknowledged without a single sync reaching the disk",
            true => "deleted the rollback journal without syncing its directory",
        };
        violations.push(
            Violation::new(
                Invariant::I9,
                format!(
                    "commits by {} to the {database}, first by {} at tick {}, {observed} (counted by crashsim's \
                     VFS under the store's SQLite): those connections ran below the synchronous={} ({asked}) \
                     the scenario asks for, whatever they reported",
                    plural(role),
                    actors[0],
                    ticks[0],
                    name(asked),
                ),
            )
            .ticks(shown_ticks(&ticks)),
        );
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actors::{ActorId, Role};
    use crate::check::Invariant;
    use crate::check::fixtures::clean;
    use crate::trace::Op;

    /// The clean run (which asks FULL of both databases, WAL) with more
    /// connections of `role` opened at `level`, one per actor index.
    fn opened(role: Role, level: u8, count: u32) -> Vec<crate::check::Violation> {
        let mut fixture = clean();
        for index in 0..count {
            fixture.push(
                ActorId::new(role, index),
                Op::Open {
                    incarnation: 2,
                    synchronous: Some(level),
                },
            );
        }
        fixture.violations()
    }

    #[test]
    fn a_stricter_synchronous_than_asked_is_no_finding() {
        assert_eq!(opened(Role::Writer, 3, 1), [], "EXTRA where FULL is asked");
        assert_eq!(opened(Role::Receiver, 3, 1), [], "EXTRA where FULL is asked");
    }

    #[test]
    fn a_weaker_synchronous_than_asked_is_i9() {
        for role in [Role::Worker, Role::Receiver] {
            let found = opened(role, 1, 1);
            assert_eq!(found.len(), 1, "{found:#?}");
            assert_eq!(found[0].invariant, Invariant::I9);
            assert!(
                found[0].message.contains("synchronous=NORMAL (1)"),
                "{}",
                found[0].message
            );
            assert!(found[0].message.contains("asks for FULL (2)"), "{}", found[0].message);
        }
    }

    #[test]
    fn weak_connections_are_one_finding_per_role_and_level() {
        let found = opened(Role::Writer, 1, 17);
        assert_eq!(found.len(), 1, "{found:#?}");
        let message = &found[0].message;
        assert!(
            message.starts_with(
                "store connections of writers reported synchronous=NORMAL (1) when opened, first writer-0 at tick"
            ),
            "{message}"
        );
        assert!(found[0].ticks.len() <= TICKS_SHOWN);
    }

    #[test]
    fn levels_are_judged_by_the_syncs_they_make_in_the_journal_mode() {
        // WAL: EXTRA's syncs are FULL's.
        assert!(satisfies(2, 3, JournalMode::Wal));
        assert!(satisfies(3, 2, JournalMode::Wal));
        assert!(!satisfies(1, 3, JournalMode::Wal));
        assert!(!satisfies(1, 2, JournalMode::Wal));
        assert!(!satisfies(0, 1, JournalMode::Wal));
        // A rollback journal: EXTRA also syncs the directory after deleting it.
        assert!(!satisfies(2, 3, JournalMode::Delete));
        assert!(satisfies(3, 3, JournalMode::Delete));
        assert!(satisfies(2, 2, JournalMode::Delete));
        assert!(!satisfies(1, 2, JournalMode::Delete));
    }
}
