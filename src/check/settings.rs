//! I9, the part that needs no power loss: every connection runs with the
//! `synchronous` level the scenario configures. Durability across power loss
//! is only as strong as the weakest connection that acknowledged a commit,
//! and `synchronous` belongs to the connection, not the file: an
//! implementation that applies it once (mistake 10) leaves later
//! connections on the compiled-in default.
//!
//! Two kinds of evidence: the level each connection reports when it opens,
//! and, for an outside store whose SQLite loaded crashsim's VFS extension,
//! what that SQLite did: a commit acknowledged with no sync at all
//! (`Op::Unsynced`) ran below FULL, whatever the adapter reported.
//!
//! The scenario's level is a floor: a connection running a stricter one
//! (FULL where NORMAL is asked, EXTRA where FULL is) is more durable than
//! required, a correct choice, and no finding. Only a weaker one is.

use super::{History, Input, Invariant, Violation};
use crate::actors::Role;

fn name(level: u8) -> &'static str {
    match level {
        0 => "OFF",
        1 => "NORMAL",
        2 => "FULL",
        3 => "EXTRA",
        _ => "unknown",
    }
}

pub fn check(input: &Input<'_>, history: &History<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (tick, actor, level) in &history.opens {
        let (expected, database) = match actor.role {
            Role::Receiver => (input.synchronous.receiver, "receiver"),
            _ => (input.synchronous.store, "store"),
        };
        if *level < expected {
            violations.push(
                Violation::new(
                    Invariant::I9,
                    format!(
                        "{actor} opened a {database} connection running synchronous={} ({level}), but the \
                         scenario requires at least {} ({expected}): per-connection settings were not applied on this open",
                        name(*level),
                        name(expected)
                    ),
                )
                .ticks([*tick]),
            );
        }
    }
    // What the store's SQLite did, whatever its `open` reported: a commit
    // under FULL syncs at least once (the WAL, or the journal and database).
    for (tick, actor, database) in &history.unsynced {
        let expected = match *database {
            "receiver" => input.synchronous.receiver,
            _ => input.synchronous.store,
        };
        violations.push(
            Violation::new(
                Invariant::I9,
                format!(
                    "{actor} committed to the {database} at tick {tick} and the commit was acknowledged \
                     without a single sync reaching the disk (counted by crashsim's VFS under the store's \
                     SQLite): the connection does not run synchronous={} ({expected}), whatever it reported",
                    name(expected)
                ),
            )
            .ticks([*tick]),
        );
    }
    violations
}

#[cfg(test)]
mod tests {
    use crate::actors::{ActorId, Role};
    use crate::check::Invariant;
    use crate::check::fixtures::clean;
    use crate::trace::Op;

    /// The clean run (which asks FULL of both databases) with one more
    /// connection of `role` opened at `level`.
    fn opened(role: Role, level: u8) -> Vec<crate::check::Violation> {
        let mut fixture = clean();
        fixture.push(
            ActorId::new(role, 0),
            Op::Open {
                incarnation: 2,
                synchronous: Some(level),
            },
        );
        fixture.violations()
    }

    #[test]
    fn a_stricter_synchronous_than_asked_is_no_finding() {
        assert_eq!(opened(Role::Writer, 3), [], "EXTRA where FULL is asked");
        assert_eq!(opened(Role::Receiver, 3), [], "EXTRA where FULL is asked");
    }

    #[test]
    fn a_weaker_synchronous_than_asked_is_i9() {
        for role in [Role::Worker, Role::Receiver] {
            let found = opened(role, 1);
            assert_eq!(found.len(), 1, "{found:#?}");
            assert_eq!(found[0].invariant, Invariant::I9);
            assert!(found[0].message.contains("NORMAL (1)"), "{}", found[0].message);
            assert!(found[0].message.contains("at least FULL (2)"), "{}", found[0].message);
        }
    }
}
