//! `--plant-slowdown CONFIG`: a demonstration aid for the regression gate,
//! hidden from `--help`. It makes one `append_*_full` configuration commit
//! once more after every append, so the gate can be shown failing on a real
//! slowdown (and passing on a rerun without it), on a real disk, with
//! nothing else changed.
//!
//! The extra commit bumps `PRAGMA user_version` (which nothing reads): one
//! WAL frame and, under `synchronous=FULL`, one more sync of the WAL per
//! append, as a store that committed its bookkeeping separately would pay.
//! The counting VFS sees it, so the report shows 2 fsyncs per commit, and
//! the configuration carries a `note` saying what was planted. Bench-only:
//! it runs in the bench's own loop on the bench's connection; the store's
//! code, which `crashsim run` uses, is untouched.
//!
//! Why not an `fsync` of the database file: in WAL mode that file is clean
//! between checkpoints, so its sync only flushes the disk's cache, which
//! costs a fifth of an append on the development machine's disk, within the
//! noise of a shared one: too faint a signal to demonstrate anything.

use rusqlite::Connection;

use super::plan::{Config, Kind};
use crate::store::Synchronous;

/// The note the planted configuration carries in the report.
pub const NOTE: &str = "planted slowdown (--plant-slowdown): one extra commit, so one extra WAL sync, per append";

/// `Err` unless `name` is one of the selected configurations that can carry
/// the plant: one event per transaction on one connection, under FULL
/// (where a commit syncs).
pub fn check(name: &str, configs: &[Config]) -> Result<(), String> {
    let plantable: Vec<&str> = configs
        .iter()
        .filter(|config| {
            matches!(
                config.kind,
                Kind::Append {
                    synchronous: Synchronous::Full,
                    ..
                }
            )
        })
        .map(|config| config.name.as_str())
        .collect();
    if plantable.contains(&name) {
        return Ok(());
    }
    Err(format!(
        "--plant-slowdown {name}: not a selected configuration that can carry it (one of: {})",
        if plantable.is_empty() {
            "none selected; add an append_*_full to --only".to_string()
        } else {
            plantable.join(", ")
        }
    ))
}

/// The extra commit, its own transaction: `user_version` set to `count`
/// (a new value each time, so SQLite writes it).
pub fn extra_commit(conn: &Connection, count: u64) -> rusqlite::Result<()> {
    conn.pragma_update(None, "user_version", count as i64 % i64::from(i32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::plan;

    #[test]
    fn only_a_selected_full_append_configuration_can_carry_it() {
        let all = plan::all();
        assert!(check("append_full", &all).is_ok());
        assert!(check("append_outbox1_full", &all).is_ok());
        let error = check("append_normal", &all).unwrap_err();
        assert!(
            error.contains("append_normal") && error.contains("append_full"),
            "{error}"
        );
        assert!(check("batch100_full", &all).is_err());
        let error = check("append_full", &plan::select(&["batch".to_string()], false).unwrap()).unwrap_err();
        assert!(error.contains("--only"), "{error}");
    }
}
