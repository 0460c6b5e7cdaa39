//! The adapter protocol, from crashsim's side, with `crashsim serve` (the
//! reference over the protocol) and deliberately broken adapters:
//!
//! - every request round-trips through the `Store` and `Receiver` traits,
//!   and the dump equals what the files hold;
//! - kills are real: a killed process is gone, and its open transaction is
//!   rolled back by SQLite's recovery when the next process opens the file;
//! - an adapter that is not there, exits at start-up, speaks another
//!   version, or later answers out of turn or with garbage is bad input
//!   (exit 2) named with the adapter, the request and the offending line.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{crashsim, stderr, stdout};
use crashsim::adapter::{Adapter, ProcessRecord};
use crashsim::model::Command;
use crashsim::store::{
    Clock, Implementation, JournalMode, Lookup, Outcome, Request, Snapshot, SqliteSettings, SystemConfig, Who,
};

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_crashsim"))
}

fn served() -> Adapter {
    Adapter::serve(exe(), "reference", Duration::from_secs(10), true).expect("crashsim serve answers")
}

fn config(dir: &Path, journal_mode: JournalMode) -> SystemConfig {
    let settings = SqliteSettings {
        journal_mode,
        busy_timeout_ms: 0,
        ..SqliteSettings::default()
    };
    SystemConfig {
        store_path: dir.join("store.db"),
        receiver_path: dir.join("receiver.db"),
        store_sqlite: settings,
        receiver_sqlite: settings,
        hotel_failure: crashsim::ratio::Ratio::new(1, 4),
        seed: 7,
        clock: Clock::default(),
        leases: false,
        retries: false,
        dedup_retention: false,
        vfs_state: None,
    }
}

fn who(actor: &str) -> Who<'_> {
    Who { actor, incarnation: 0 }
}

fn command(kind: &str, payload: &str) -> Command {
    Command {
        kind: kind.to_string(),
        payload: payload.to_string(),
    }
}

#[test]
fn every_request_round_trips_through_the_traits() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = served();
    assert_eq!(adapter.identity().name, "reference");
    let config = config(dir.path(), JournalMode::Wal);
    let mut system = adapter.system(&config).unwrap();
    let mut store = system.open_store(&who("writer-0")).unwrap();
    assert_eq!(store.synchronous(), Some(2), "FULL, read back by the adapter");

    let lock = command("lock_budget", r#"{"trip_id":"t1"}"#);
    let (seq, ids) = store
        .append_with_commands("t1", 0, "trip_requested", r#"{"city":"Oslo"}"#, &[lock])
        .unwrap();
    assert_eq!((seq, ids), (1, vec!["t1:1:0".to_string()]));
    store.begin().unwrap();
    let stale = store.insert_event("t1", 0, "trip_requested", r#"{"city":"Oslo"}"#);
    assert!(
        matches!(stale, Err(crashsim::store::StoreError::Conflict { .. })),
        "{stale:?}"
    );
    store.rollback().unwrap();

    assert_eq!(store.load("t1").unwrap().len(), 1);
    let heads = store.heads().unwrap();
    assert_eq!((heads[0].last_seq, heads[0].commands_done), (1, 0));
    let pending = store.pending(10).unwrap();
    assert_eq!(pending[0].command_id, "t1:1:0");
    assert!(store.mark_done("t1:1:0", Some(r#"{"token":"tok-1"}"#)).unwrap());
    assert!(!store.mark_done("t1:1:0", Some(r#"{"token":"tok-1"}"#)).unwrap());
    let rows = store.commands("t1", 1).unwrap();
    assert!(rows[0].done && rows[0].result.as_deref() == Some(r#"{"token":"tok-1"}"#));

    let mut receiver = system.open_receiver(&who("receiver-0")).unwrap();
    let request = Request {
        key: "t1:1:0".to_string(),
        kind: "lock_budget".to_string(),
        payload: r#"{"trip_id":"t1"}"#.to_string(),
        attempt: 1,
        sent_tick: 3,
    };
    receiver.begin().unwrap();
    assert_eq!(receiver.lookup(&request).unwrap(), Lookup::New);
    let applied = receiver.apply(&request).unwrap();
    assert_eq!(
        (applied.effect_id, applied.result.as_str()),
        (1, r#"{"token":"tok-1"}"#)
    );
    receiver.commit().unwrap();
    let again = receiver.handle(&request).unwrap();
    assert_eq!(
        again.outcome,
        Outcome::Duplicate {
            result: r#"{"token":"tok-1"}"#.to_string()
        }
    );
    let rogue = Request {
        payload: r#"{"trip_id":"t2"}"#.to_string(),
        ..request.clone()
    };
    assert_eq!(receiver.handle(&rogue).unwrap().outcome, Outcome::Conflict);

    drop((store, receiver));
    let dumped = system.dump().unwrap();
    let read = Snapshot::read(&config.store_path, &config.receiver_path).unwrap();
    assert_eq!(
        serde_json::to_value(&dumped).unwrap(),
        serde_json::to_value(&read).unwrap(),
        "the adapter's dump is what the files hold"
    );
    assert_eq!(
        (dumped.events.len(), dumped.outbox.len(), dumped.effects.len()),
        (1, 1, 1)
    );
}

fn processes(system: &mut dyn crashsim::store::System) -> Vec<ProcessRecord> {
    let artifacts = system.artifacts();
    let listed = artifacts
        .iter()
        .find(|artifact| artifact.name == "adapter/processes.json")
        .expect("the run lists its processes");
    serde_json::from_slice(&listed.content()).unwrap()
}

fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only asks whether the process exists.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

#[test]
fn a_kill_is_real_and_recovery_rolls_its_transaction_back() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = served();
    // A rollback journal makes the open transaction visible on disk: the
    // journal the killed process leaves behind is hot.
    let config = config(dir.path(), JournalMode::Delete);
    let mut system = adapter.system(&config).unwrap();
    let mut store = system.open_store(&who("writer-0")).unwrap();
    let before = std::fs::metadata(&config.store_path).unwrap().len();
    // A transaction larger than SQLite's page cache spills into the
    // database file, after syncing the journal that can undo it.
    store.begin().unwrap();
    let payload = format!(r#"{{"pad":"{}"}}"#, "x".repeat(4000));
    for index in 0..1500 {
        store
            .insert_event(&format!("t{index}"), 0, "trip_requested", &payload)
            .unwrap();
    }
    let journal = PathBuf::from(format!("{}-journal", config.store_path.display()));
    let spilled = std::fs::metadata(&config.store_path).unwrap().len();
    assert!(
        spilled > before,
        "the open transaction reached the file ({before} -> {spilled})"
    );
    assert!(hot(&journal), "its journal is hot: it can undo what reached the file");

    drop(store); // SIGKILL between two requests: no rollback, no close
    let killed = processes(&mut *system);
    let writer = killed
        .iter()
        .find(|p| p.label == "writer-0.0")
        .expect("the writer's process");
    assert_eq!(writer.end.as_deref(), Some("killed"));
    assert!(!alive(writer.pid), "process {} is gone", writer.pid);

    assert!(hot(&journal), "nothing cleaned up after the kill");

    let mut next = system.open_store(&who("writer-1")).unwrap();
    assert!(next.heads().unwrap().is_empty(), "recovery rolled the transaction back");
    assert!(!hot(&journal), "the next opener played the hot journal back");
    drop(next);
    for process in processes(&mut *system) {
        assert!(!alive(process.pid), "{} ({}) is gone", process.label, process.pid);
    }
}

/// Whether a rollback journal is hot: there, and starting with the magic
/// SQLite writes only once the journal is synced and may be played back.
fn hot(journal: &Path) -> bool {
    const MAGIC: [u8; 8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];
    std::fs::read(journal).is_ok_and(|bytes| bytes.starts_with(&MAGIC))
}

fn run_with_sut(sut: &str) -> std::process::Output {
    crashsim(&["run", "smoke", "--seeds", "1", "--no-report", "--sut", sut])
}

fn rogue(mode: &str) -> String {
    format!("sh tests/fixtures/adapters/rogue.sh {mode}")
}

#[test]
fn an_adapter_that_cannot_start_is_bad_input_named_once() {
    let output = run_with_sut("no-such-adapter-anywhere --serve");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("`no-such-adapter-anywhere --serve` exited before answering `hello`"),
        "{message}"
    );
    assert!(message.contains("not found"), "the shell's own words: {message}");

    let output = run_with_sut("echo 'about to fail' >&2; exit 3");
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("exited before answering `hello`"), "{message}");
    assert!(message.contains("about to fail"), "its stderr: {message}");
    assert!(!message.contains("panicked"), "{message}");
}

#[test]
fn a_handshake_of_another_kind_is_bad_input() {
    let output = run_with_sut("echo hello");
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("request 0 (`hello`)"), "{message}");
    assert!(message.contains("\"hello\""), "the offending line: {message}");
    assert!(message.contains("stdout is the protocol's channel"), "{message}");

    let output = run_with_sut(&rogue("version2"));
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains("version 2") && message.contains("version 1"),
        "{message}"
    );

    let output = run_with_sut(&rogue("no_roles"));
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("serves no role"), "{}", stderr(&output));

    // An SDK of another crashsim (a stale vendored copy, a second install).
    let output = run_with_sut(&rogue("old_sdk"));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    let ours = env!("CARGO_PKG_VERSION");
    assert!(
        message.contains("written with crashsim_adapter 0.0.1")
            && message.contains(&format!("this crashsim is {ours}"))
            && message.contains(&format!("pip install crashsim=={ours}")),
        "{message}"
    );
}

#[test]
fn a_protocol_breach_during_a_run_is_bad_input_naming_request_and_line() {
    for (mode, expected) in [
        ("wrong_id", "answered request 7 when request 1 (`setup`) was asked"),
        ("garbage", "\"Traceback (most recent call last): oops\""),
        ("unknown", "request 1 (`setup`)"),
        ("unsupported", "does not support `setup`: no such op here"),
    ] {
        let output = run_with_sut(&rogue(mode));
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{mode}: {message}{}", stdout(&output));
        assert_eq!(message.matches(expected).count(), 1, "{mode}: named once: {message}");
        assert!(message.contains("rogue.sh"), "{mode} names the adapter: {message}");
        assert!(!message.contains("panicked"), "{mode}: {message}");
    }
}

#[test]
fn flags_that_contradict_are_bad_input() {
    let output = crashsim(&["run", "smoke", "--sut", "true", "--mutant", "no_dedup", "--no-report"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--sut and --mutant"), "{}", stderr(&output));
}

#[test]
fn the_detection_table_measures_an_outside_stores_own_variants() {
    let serve = |name: &str| format!("{} serve {name}", exe().display());
    let variant = format!("dedup-less={}", serve("no_dedup"));
    let output = crashsim(&[
        "mutants",
        "--scenario",
        "tests/fixtures/detect.toml",
        "--sut",
        &serve("reference"),
        "--variant",
        &variant,
        "--seeds",
        "5",
        "--ranges",
        "1",
        "--reference-seeds",
        "1",
        "--no-report",
    ]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}{}", stderr(&output));
    let row = text
        .lines()
        .find(|line| line.starts_with("dedup-less"))
        .unwrap_or_default();
    assert!(row.contains("yes") && row.contains("I2"), "{text}");
    assert!(text.contains("reference") && text.contains("clean"), "{text}");

    let output = crashsim(&["mutants", "--sut", &serve("reference"), "--variant", "no-equals-sign"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("expected NAME=CMD"), "{}", stderr(&output));
    let output = crashsim(&["mutants", "--variant", &variant]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--sut"), "{}", stderr(&output));
}
