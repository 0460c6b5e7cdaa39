//! Power loss for stores in other processes: crashsim's crash VFS as a
//! loadable extension inside the store's own SQLite (`crashsim_vfs`).
//!
//! - `crashsim serve` (`--mode process`) and the Python example run
//!   `power_loss`-style scenarios, with real cuts, and pass;
//! - the Python example's `sync_normal` loses acknowledged commits after a
//!   cut (I9's loss clause), and `sync_normal_hidden`, which reports FULL
//!   while running NORMAL, is caught from the syncs its SQLite did;
//! - the same seed leaves the same bytes and the same trace in two
//!   directories with the Python example;
//! - an adapter whose SQLite does not load the extension is an error
//!   (exit code 2) for a scenario with power loss, never a finding;
//! - the Python SDK loads the extension with every interpreter on the
//!   machine, with or without `enable_load_extension`.
//!
//! The Python tests need Python 3; without it they print a note and pass,
//! except in CI (`CI` set).

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{crashsim, load, python, root, stderr, stdout, work_dir};
use crashsim::adapter::Adapter;
use crashsim::check::Invariant;
use crashsim::faults::FaultSource;
use crashsim::runner::{Options, SeedResult, Sut, run_seed};
use crashsim::sim::Simulator;

const TIMEOUT: Duration = Duration::from_secs(30);

fn example(python: &str, bug: &str) -> String {
    let script = root().join("adapters/python/example_store.py");
    let bug = if bug.is_empty() {
        String::new()
    } else {
        format!(" --bug {bug}")
    };
    format!("{python} -S {}{bug}", script.display())
}

fn serve() -> String {
    format!("{} serve reference", env!("CARGO_BIN_EXE_crashsim"))
}

fn options(dir: &Path, command: &str) -> Options {
    let adapter = Adapter::probe(command, TIMEOUT, true).expect("the adapter answers its handshake");
    Options {
        work_dir: dir.to_path_buf(),
        keep_failed: false,
        keep_traces: true,
        sut: Sut::Adapter(Arc::new(adapter)),
        check_determinism: false,
        files: Default::default(),
    }
}

fn seed(command: &str, scenario: &str, seed: u64) -> SeedResult {
    let dir = work_dir();
    run_seed(&load(scenario), seed, &options(dir.path(), command)).expect("the seed runs")
}

fn cuts(result: &SeedResult) -> usize {
    result
        .events
        .iter()
        .flatten()
        .filter(|event| matches!(event.op, crashsim::trace::Op::PowerCut { .. }))
        .count()
}

#[test]
fn process_mode_cuts_the_power_inside_crashsim_serve_and_passes() {
    let mut total = 0;
    for number in 0..3 {
        let result = seed(&serve(), "tests/fixtures/power_bytes.toml", number);
        assert!(result.ok, "seed {number}: {:#?}", result.violations);
        total += cuts(&result);
    }
    assert!(total >= 3, "every seed has a scripted cut, and more are drawn: {total}");
}

#[test]
fn the_python_example_survives_power_loss_and_its_sync_bugs_do_not() {
    let Some(python) = python() else { return };
    let clean = seed(&example(&python, ""), "tests/fixtures/power_bytes.toml", 0);
    assert!(clean.ok, "{:#?}", clean.violations);
    assert!(cuts(&clean) >= 1);

    // NORMAL in WAL never syncs a commit: acknowledged commits are gone after the cut.
    let normal = seed(&example(&python, "sync_normal"), "tests/fixtures/power_bytes.toml", 0);
    let lost: Vec<_> = normal
        .violations
        .iter()
        .filter(|violation| violation.invariant == Invariant::I9 && violation.message.contains("was acknowledged"))
        .collect();
    assert!(!lost.is_empty(), "acknowledged commits lost: {:#?}", normal.violations);

    // The same, reporting FULL: only what its SQLite did can show it.
    let hidden = seed(
        &example(&python, "sync_normal_hidden"),
        "tests/fixtures/power_bytes.toml",
        0,
    );
    assert!(
        !hidden
            .violations
            .iter()
            .any(|violation| violation.message.contains("opened a store connection running")),
        "it reports FULL: {:#?}",
        hidden.violations
    );
    let unsynced = hidden
        .violations
        .iter()
        .find(|violation| violation.message.contains("without a single sync"))
        .expect("a commit acknowledged without a sync");
    assert_eq!(unsynced.invariant, Invariant::I9);

    // Ending rule 7: the commit of tick 13 lost in the cut at tick 30 is
    // judged at the settle check after the cut and stops the faults; the
    // run leads with it, as a run to its budget does, in fewer steps.
    let dir = work_dir();
    let mut full = load("tests/fixtures/power_bytes.toml");
    full.scenario.run.end_when_certain = false;
    let full = run_seed(&full, 0, &options(dir.path(), &example(&python, "sync_normal_hidden"))).unwrap();
    assert!(
        hidden.violations[0].message.contains("lost in the power cut"),
        "{:#?}",
        hidden.violations
    );
    assert_eq!(hidden.violations[0], full.violations[0]);
    assert!(hidden.steps < full.steps, "{} and {}", hidden.steps, full.steps);
}

/// The database files of a seed run in `dir` (not its logs).
fn files_after(command: &str, dir: &Path) -> (String, Vec<(String, Vec<u8>)>) {
    let loaded = load("tests/fixtures/power_bytes.toml");
    let adapter = Adapter::probe(command, TIMEOUT, true).expect("the adapter answers its handshake");
    let output = Simulator::new(&loaded.scenario, &adapter, 3, dir, FaultSource::Drawn)
        .expect("the run starts")
        .run()
        .expect("the run ends");
    assert!(!output.recoveries.is_empty(), "the seed cuts the power");
    let hash = crashsim::trace::trace_hash(&output.events);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("the run's folder")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.is_file())
        .map(|path| {
            let name = path.file_name().expect("a name").to_string_lossy().into_owned();
            (name, std::fs::read(&path).expect("readable"))
        })
        .filter(|(name, _)| name.contains(".db"))
        .collect();
    files.sort();
    (hash, files)
}

#[test]
fn the_same_seed_leaves_the_same_bytes_with_the_python_example() {
    let Some(python) = python() else { return };
    let command = example(&python, "");
    let (a, b) = (work_dir(), work_dir());
    let (first_hash, first) = files_after(&command, a.path());
    let (second_hash, second) = files_after(&command, b.path());
    assert_eq!(first_hash, second_hash, "the same trace in any directory");
    let names = |files: &[(String, Vec<u8>)]| files.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&first), names(&second));
    assert!(first.iter().any(|(name, _)| name == "store.db"), "{:?}", names(&first));
    for ((name, one), (_, two)) in first.iter().zip(&second) {
        assert!(one == two, "{name} differs between two runs of the same seed");
    }
}

#[test]
fn a_store_that_does_not_load_the_extension_cannot_run_power_loss() {
    let Some(python) = python() else { return };
    let command = format!("env -u CRASHSIM_VFS_EXTENSION {}", example(&python, ""));
    let output = crashsim(&[
        "run",
        "tests/fixtures/power_bytes.toml",
        "--seeds",
        "1",
        "--no-report",
        "--sut",
        &command,
    ]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}{}", stdout(&output));
    assert!(message.contains("loaded crashsim's VFS extension"), "{message}");
    assert!(!message.contains("panicked"), "{message}");
    // `list --sut` says so before any run.
    let listed = crashsim(&["list", "--sut", &command]);
    assert!(
        stdout(&listed).contains("crash VFS extension: NOT loaded"),
        "{}",
        stdout(&listed)
    );
}

/// Every Python on the machine loads it: the one first on PATH (pyenv's
/// build here has no `enable_load_extension`) and the system's; in each,
/// SQLite's clock is then the simulated one.
#[test]
fn every_python_here_loads_the_extension() {
    let Some(python) = python() else { return };
    let mut interpreters = vec![python];
    if Path::new("/usr/bin/python3").exists() {
        interpreters.push("/usr/bin/python3".to_string());
    }
    let extension = crashsim::vfs::extension::path().expect("the extension is written out");
    for interpreter in interpreters {
        let listed = crashsim(&["list", "--sut", &example(&interpreter, "")]);
        let text = stdout(&listed);
        assert!(
            text.contains("crash VFS extension: loaded by its SQLite 3."),
            "{interpreter}: {text}"
        );
        // What the SDK loaded answers `datetime('now')` with the simulated clock.
        let dir = work_dir();
        let state = dir.path().join("vfs");
        std::fs::create_dir_all(&state).expect("a folder");
        let control = crashsim_vfs::control::Control::create(&state.join("control")).expect("a control region");
        control.clock.store(61_000, std::sync::atomic::Ordering::Release);
        let script = "import sqlite3, sys\n\
                      from crashsim_adapter import vfs\n\
                      assert vfs.load_from_environment()\n\
                      print(sqlite3.connect(sys.argv[1]).execute(\"SELECT datetime('now')\").fetchone()[0])";
        let output = std::process::Command::new(&interpreter)
            .args(["-S", "-c", script])
            .arg(dir.path().join("clock.db"))
            .env("PYTHONPATH", root().join("adapters/python"))
            .env(crashsim::vfs::extension::ENV_EXTENSION, &extension)
            .env(crashsim::vfs::extension::ENV_STATE, &state)
            .output()
            .expect("python runs");
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{interpreter}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(text.trim(), "2026-01-01 00:01:01", "{interpreter}: tick 61000");
    }
}

/// A host that is not Python: the `sqlite3` shell loads the extension with
/// `.load`, then opens its database through it (when the shell is here).
#[test]
fn the_sqlite3_shell_loads_the_extension() {
    let shell = Path::new("/usr/bin/sqlite3");
    if !shell.exists() {
        eprintln!("note: no sqlite3 shell here; skipped");
        return;
    }
    let dir = work_dir();
    let state = dir.path().join("vfs");
    std::fs::create_dir_all(&state).expect("a folder");
    let control = crashsim_vfs::control::Control::create(&state.join("control")).expect("a control region");
    control.clock.store(1_500, std::sync::atomic::Ordering::Release);
    control
        .flags
        .store(crashsim_vfs::control::RECORD, std::sync::atomic::Ordering::Release);
    let extension = crashsim::vfs::extension::path().expect("the extension is written out");
    let database = dir.path().join("shell.db");
    let output = std::process::Command::new(shell)
        .arg("-batch")
        .args(["-cmd", &format!(".load {}", extension.display())])
        .args(["-cmd", &format!(".open {}", database.display())])
        .arg(":memory:")
        .arg("CREATE TABLE t (x); INSERT INTO t VALUES (1); SELECT datetime('now');")
        .env(crashsim::vfs::extension::ENV_STATE, &state)
        .output()
        .expect("the shell runs");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(text.trim(), "2026-01-01 00:00:01", "the simulated clock at tick 1500");
    assert_eq!(control.loads.load(std::sync::atomic::Ordering::Acquire), 1);
    assert!(
        control.points.load(std::sync::atomic::Ordering::Acquire) > 0,
        "its writes were counted"
    );
    let log = std::fs::metadata(state.join("log")).expect("a change log").len();
    assert!(log > 0, "its changes were logged for the disk model");
}

/// A store served one call per append: crashsim kills its process inside
/// `append` (at a persistence point its SQLite makes, through the VFS), so
/// an event committed apart from its commands is caught on a shipped
/// scenario, where without the extension that kill point is unreachable.
#[test]
fn a_call_store_that_commits_twice_inside_one_append_is_caught() {
    let Some(python) = python() else { return };
    let command = example(&python, "two_transactions --granularity call");
    let result = seed(&command, "scenarios/smoke.toml", 0);
    let first = result.violations.first().expect("caught");
    assert!(
        matches!(first.invariant, Invariant::I1 | Invariant::I5),
        "{:#?}",
        result.violations
    );
    let inside = result.kills.fired[crashsim::faults::KillPoint::WriterBeforeCommit.index()];
    assert!(inside > 0, "killed inside append: {:?}", result.kills);
}
