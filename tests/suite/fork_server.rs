//! The fork server (docs/adapter-protocol.md, "Fork server"): an adapter
//! that declares `fork` is started once per seed and forks a child per
//! connection. The child must be indistinguishable from a started process:
//! the same trace for every seed, kills that are real `SIGKILL`s whose WAL
//! the next opener recovers, and no process left behind when crashsim itself
//! is killed, even of an adapter that ignores end of file on stdin.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{load, python, root, work_dir};
use crashsim::adapter::{Adapter, DEFAULT_TIMEOUT};
use crashsim::runner::{Options, Sut, run_seed};
use crashsim::scenario::Loaded;
use crashsim::store::{Implementation, Who};

fn options(dir: &Path, adapter: &Arc<Adapter>) -> Options {
    Options {
        work_dir: dir.to_path_buf(),
        keep_failed: false,
        keep_traces: false,
        sut: Sut::Adapter(Arc::clone(adapter)),
        check_determinism: false,
        files: Default::default(),
    }
}

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_crashsim"))
}

/// The Python example's command line, or `None` without Python.
fn example() -> Option<String> {
    let script = root().join("adapters/python/example_store.py");
    Some(format!("{} -S {}", python()?, script.display()))
}

/// The trace hash and verdict of `seed` with the store served forked and
/// started, which must agree; and that the forked one did fork.
fn assert_same_both_ways(loaded: &Loaded, seed: u64, forked: &Arc<Adapter>, started: &Arc<Adapter>) {
    assert!(forked.forks() && !started.forks());
    let dir = work_dir();
    let with = run_seed(loaded, seed, &options(dir.path(), forked)).expect("the seed runs forked");
    let without = run_seed(loaded, seed, &options(dir.path(), started)).expect("the seed runs started");
    assert_eq!(with.trace_hash, without.trace_hash, "{} seed {seed}", loaded.name);
    assert_eq!(with.violations, without.violations, "{} seed {seed}", loaded.name);
    assert!(with.ok, "{} seed {seed}: {:#?}", loaded.name, with.violations);
}

#[test]
fn crashsim_serve_gives_the_same_traces_forked_over_every_shipped_scenario() {
    let mut scenarios: Vec<_> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    scenarios.sort();
    assert!(scenarios.len() >= 9, "{scenarios:?}");
    for path in scenarios {
        let loaded = crashsim::scenario::load(&path).unwrap();
        let store = &loaded.scenario.store;
        if store == "group_commit" {
            continue; // shares one committer between connections: never served per process
        }
        let forked = Arc::new(Adapter::serve(exe(), store, DEFAULT_TIMEOUT, true).unwrap());
        let started = Arc::new(Adapter::serve(exe(), store, DEFAULT_TIMEOUT, false).unwrap());
        assert_same_both_ways(&loaded, 0, &forked, &started);
    }
}

#[test]
fn the_python_example_gives_the_same_traces_forked() {
    let Some(command) = example() else { return };
    let forked = Arc::new(Adapter::probe(&command, Duration::from_secs(30), true).unwrap());
    let started = Arc::new(Adapter::probe(&command, Duration::from_secs(30), false).unwrap());
    // The default scenario, power loss through the VFS extension each
    // child loads, and clocks that step back (CURRENT_TIMESTAMP from it).
    for scenario in [
        "scenarios/smoke.toml",
        "tests/fixtures/power_small.toml",
        "tests/fixtures/clocks_small.toml",
    ] {
        assert_same_both_ways(&load(scenario), 0, &forked, &started);
    }
}

/// A forked child killed between two requests of an open transaction: the
/// WAL it leaves holds the commit before, which the next opener recovers,
/// and nothing of the transaction cut short.
#[test]
fn a_forked_child_killed_inside_a_transaction_leaves_the_wal_for_the_next_opener() {
    let Some(command) = example() else { return };
    let adapter = Adapter::probe(&command, Duration::from_secs(30), true).unwrap();
    assert!(adapter.forks(), "the SDK declares the fork server");
    let dir = tempfile::tempdir().unwrap();
    let config = crashsim::adapter::default_config(dir.path());
    let mut system = adapter.system(&config).unwrap();
    let who = Who {
        actor: "writer-0",
        incarnation: 0,
    };
    let mut store = system.open_store(&who).unwrap();
    store.begin().unwrap();
    assert_eq!(store.insert_event("trip-1", 0, "trip_requested", "{}").unwrap(), 1);
    store.commit().unwrap();
    store.begin().unwrap();
    assert_eq!(store.insert_event("trip-1", 1, "budget_locked", "{}").unwrap(), 2);
    drop(store); // SIGKILL of the child's group, inside the transaction
    let processes = system.artifacts();
    let records = processes
        .iter()
        .find(|artifact| artifact.name == "adapter/processes.json")
        .unwrap();
    let records: Vec<crashsim::adapter::ProcessRecord> = serde_json::from_slice(&records.content()).unwrap();
    let writer = records.iter().find(|record| record.label == "writer-0.0").unwrap();
    assert_eq!(writer.end.as_deref(), Some("killed"));
    let wal = std::fs::metadata(dir.path().join("store.db-wal")).expect("the killed child left its WAL");
    assert!(wal.len() > 0, "the WAL holds the committed event");
    let conn = rusqlite::Connection::open(&config.store_path).unwrap();
    let kinds: Vec<String> = conn
        .prepare("SELECT kind FROM events WHERE workflow_id = 'trip-1' ORDER BY seq")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(
        kinds,
        ["trip_requested"],
        "the commit recovered, the cut transaction gone"
    );
    let integrity: String = conn.query_row("PRAGMA integrity_check", [], |row| row.get(0)).unwrap();
    assert_eq!(integrity, "ok");
}

/// The processes (not zombies) whose environment holds `mark`.
fn marked(mark: &str) -> Vec<i32> {
    let needle = format!("CRASHSIM_TEST_MARK={mark}");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .map(|stat| stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
            .unwrap_or(true);
        if !zombie && environ.split(|byte| *byte == 0).any(|var| var == needle.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

/// What a failure needs to name a process left behind: its state, parent,
/// group and command line, where it waits, and what its descriptors are.
fn described(pids: &[i32]) -> String {
    let read = |pid: i32, what: &str| std::fs::read(format!("/proc/{pid}/{what}")).unwrap_or_default();
    pids.iter()
        .map(|pid| {
            let stat = String::from_utf8_lossy(&read(*pid, "stat")).trim().to_string();
            let cmdline = String::from_utf8_lossy(&read(*pid, "cmdline")).replace('\0', " ");
            let wchan = String::from_utf8_lossy(&read(*pid, "wchan")).to_string();
            let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
                .map(|entries| {
                    let mut fds: Vec<String> = entries
                        .flatten()
                        .map(|entry| {
                            let target = std::fs::read_link(entry.path()).unwrap_or_default();
                            format!("{}->{}", entry.file_name().to_string_lossy(), target.display())
                        })
                        .collect();
                    fds.sort();
                    fds.join(" ")
                })
                .unwrap_or_default();
            format!("  {pid}: stat `{stat}`\n    cmdline `{cmdline}` wchan `{wchan}`\n    fds {fds}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Polls `done` every 50 ms for at most `limit`.
fn within(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let steps = limit.as_millis() / 50;
    for _ in 0..steps {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

#[test]
#[cfg(target_os = "linux")]
fn no_adapter_process_outlives_a_crashsim_killed_with_sigkill() {
    let Some(example) = example() else { return };
    // The example as it is, and one that goes on after end of file on stdin
    // (a shell that sleeps once the store has exited): only crashsim's
    // watchdog can kill that one once crashsim is gone.
    let sleeping = format!("{example}; exec sleep 600");
    for (fork, command) in [
        ("auto", &example),
        ("off", &example),
        ("auto", &sleeping),
        ("off", &sleeping),
    ] {
        let mark = format!("{}-{fork}-{}", std::process::id(), command.len());
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new(exe())
            .args([
                "run",
                "smoke",
                "--seeds",
                "1000",
                "--jobs",
                "1",
                "--no-report",
                "--sut-fork",
                fork,
            ])
            .args(["--sut", command, "--dir"])
            .arg(dir.path())
            .env("CRASHSIM_TEST_MARK", &mark)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let crashsim = child.id() as i32;
        // The store itself runs (crashsim and its watchdog carry the mark
        // too, and crashsim's command line names the script).
        let serving = || {
            marked(&mark).into_iter().filter(|pid| *pid != crashsim).any(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|line| String::from_utf8_lossy(&line).contains("example_store.py"))
            })
        };
        let running = within(Duration::from_secs(60), serving);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        assert!(running, "{fork}: the adapter's processes never showed up");
        let left = || {
            marked(&mark)
                .into_iter()
                .filter(|pid| *pid != crashsim)
                .collect::<Vec<_>>()
        };
        assert!(
            within(Duration::from_secs(20), || left().is_empty()),
            "{fork}, `{command}`: adapter processes outlived crashsim (pid {crashsim}):\n{}",
            described(&left())
        );
    }
}
