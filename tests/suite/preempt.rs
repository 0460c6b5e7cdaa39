//! Suspensions inside the store's own calls (`[preempt]`, docs/preemption.md):
//!
//! - the Python example at both granularities and the reference (in this
//!   process, each connection's calls on a coroutine, and served one
//!   process per connection) pass `interleave`, and their calls were
//!   really suspended (the trace says where);
//! - the Python example's `lookup_outside_txn` and `head_outside_txn`, and
//!   the `lookup_outside_txn` mutant, are caught at `call` granularity on
//!   `interleave`, with their invariant, and not without suspensions;
//! - the same seed gives the same trace hash twice, in every mode;
//! - a seed of the shipped `swarm` draws its own suspensions (or none),
//!   printed in its mix;
//! - `--require-fired` fails a run that suspended nothing at its declared
//!   points, and passes one that did;
//! - a `[preempt]` that names no such point, a store that cannot be
//!   suspended, and an adapter whose SQLite does not load crashsim's VFS
//!   extension are errors (exit code 2), never findings.
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
use crashsim::runner::{Options, SeedResult, Sut, run_seed};
use crashsim::trace::Op;

const TIMEOUT: Duration = Duration::from_secs(30);

fn example(python: &str, granularity: &str, bug: &str) -> String {
    let script = root().join("adapters/python/example_store.py");
    let bug = match bug {
        "" => String::new(),
        bug => format!(" --bug {bug}"),
    };
    format!("{python} -S {} --granularity {granularity}{bug}", script.display())
}

/// The scenario's own store, in this process (`sim::baton`).
const IN_PROCESS: &str = "";

fn serve(store: &str) -> String {
    format!("{} serve {store}", env!("CARGO_BIN_EXE_crashsim"))
}

/// `IN_PROCESS`, or an adapter's command.
fn options(dir: &Path, command: &str) -> Options {
    let sut = match command {
        IN_PROCESS => Sut::Scenario,
        command => Sut::Adapter(Arc::new(
            Adapter::probe(command, TIMEOUT, true).expect("the adapter answers its handshake"),
        )),
    };
    Options {
        work_dir: dir.to_path_buf(),
        keep_failed: false,
        keep_traces: true,
        sut,
        check_determinism: false,
        files: Default::default(),
    }
}

fn seed(command: &str, scenario: &str, number: u64) -> SeedResult {
    let dir = work_dir();
    run_seed(&load(scenario), number, &options(dir.path(), command)).expect("the seed runs")
}

fn suspensions(result: &SeedResult) -> usize {
    result
        .events
        .iter()
        .flatten()
        .filter(|event| matches!(event.op, Op::Preempted { .. }))
        .count()
}

/// Seeds 0..`seeds` all pass, and calls were suspended in them.
fn passes(command: &str, seeds: u64) {
    let mut suspended = 0;
    for number in 0..seeds {
        let result = seed(command, "scenarios/interleave.toml", number);
        assert!(result.ok, "{command}, seed {number}: {:#?}", result.violations);
        suspended += suspensions(&result);
    }
    assert!(suspended > seeds as usize, "{command}: only {suspended} suspensions");
}

/// The first of seeds 0..20 that fails names `invariant`: its violations.
fn caught(command: &str, invariant: Invariant) -> Vec<crashsim::check::Violation> {
    for number in 0..20 {
        let result = seed(command, "scenarios/interleave.toml", number);
        if !result.ok {
            assert!(
                result
                    .violations
                    .iter()
                    .any(|violation| violation.invariant == invariant),
                "{command}, seed {number}: {:#?}",
                result.violations
            );
            return result.violations;
        }
    }
    panic!("{command}: not caught in 20 seeds of interleave");
}

#[test]
fn the_python_example_passes_with_its_calls_suspended_at_both_granularities() {
    let Some(python) = python() else { return };
    passes(&example(&python, "call", ""), 4);
    passes(&example(&python, "step", ""), 4);
}

#[test]
fn the_reference_passes_with_its_calls_suspended() {
    passes(IN_PROCESS, 20);
    passes(&serve("reference"), 3);
}

#[test]
fn a_lookup_outside_the_transaction_is_caught_only_when_calls_are_suspended() {
    let Some(python) = python() else { return };
    let command = example(&python, "call", "lookup_outside_txn");
    let violations = caught(&command, Invariant::I2);
    // The first line names the cause, and the statements around the point
    // (from the store's own SQLite, through crashsim's extension): the
    // other receiver's transaction that applied it meanwhile.
    assert!(
        violations.iter().any(|violation| {
            let line = &violation.message;
            line.contains("an interleaving inside the call")
                && line.contains(", in `")
                && line.contains("(running `BEGIN IMMEDIATE`; `INSERT INTO effects")
                && line.contains("`COMMIT`)")
        }),
        "{violations:#?}"
    );
    // Without suspensions nothing comes between its lookup and its apply.
    let dir = work_dir();
    let mut quiet = load("scenarios/interleave.toml");
    quiet.scenario.preempt = None;
    for number in 0..3 {
        let result = run_seed(&quiet, number, &options(dir.path(), &command)).expect("the seed runs");
        assert!(result.ok, "seed {number}: {:#?}", result.violations);
    }
}

#[test]
fn a_head_read_before_begin_is_caught_at_call_granularity() {
    let Some(python) = python() else { return };
    let violations = caught(&example(&python, "call", "head_outside_txn"), Invariant::I3);
    // The first line names the cause: the overtaken writer's suspended
    // append, in its read of the head, and the other writer's commit.
    assert!(
        violations.iter().any(|violation| violation.invariant == Invariant::I3
            && violation.message.contains("an interleaving inside the call")
            && violation.message.contains("`append` was suspended inside SQLite")
            && violation
                .message
                .contains(", in `SELECT COALESCE(MAX(seq), 0) FROM events WHERE workflow_id = ?`)")
            && violation
                .message
                .contains("(running `BEGIN IMMEDIATE`; `INSERT OR IGNORE INTO events")),
        "{violations:#?}"
    );
}

#[test]
fn the_in_process_mutant_of_the_same_kind_is_caught() {
    let output = crashsim(&[
        "run",
        "interleave",
        "--mutant",
        "lookup_outside_txn",
        "--seeds",
        "20",
        "--fail-fast",
        "--no-report",
    ]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}{}", stderr(&output));
    assert!(text.contains("I2 one side effect per command_id"), "{text}");
    // crashsim runs the built-in store on its own SQLite: the statements
    // around the point come from there (the other receiver's from its first
    // after the suspension, `BEGIN` included if it began later). The call
    // is overtaken between its lookup and its transaction: suspended in the
    // lookup, or waiting for the lock at its `BEGIN IMMEDIATE`.
    let suspended_in = [
        ", in `SELECT digest, result FROM dedup WHERE key = ?1`)",
        ", in `BEGIN IMMEDIATE`)",
    ];
    assert!(
        text.contains("`handle` of it was suspended inside SQLite")
            && suspended_in.iter().any(|statement| text.contains(statement))
            && text.contains("`INSERT INTO effects (effect_id, key, kind, payload, result)"),
        "{text}"
    );
}

/// The trace hash `replay` prints for seed 3 of `interleave` with `flags`.
fn hash(flags: &[&str]) -> String {
    let mut args = vec!["replay", "interleave", "--seed", "3", "--quiet"];
    args.extend_from_slice(flags);
    let output = crashsim(&args);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}{}", stderr(&output));
    text.lines()
        .find_map(|line| line.split("trace hash ").nth(1))
        .unwrap_or_else(|| panic!("no trace hash in {text}"))
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn the_same_seed_gives_the_same_trace_in_every_mode() {
    // In-process, each connection's calls on a coroutine (`sim::baton`).
    let built_in = hash(&[]);
    assert_eq!(built_in, hash(&[]), "twice in a row");
    assert_eq!(built_in, hash(&["--mode", "in-process"]), "the default");
    // Each connection in a `crashsim serve` process of its own: another
    // SQLite in each, so points fall elsewhere, but one trace per seed.
    let served = hash(&["--mode", "process"]);
    assert_eq!(served, hash(&["--mode", "process"]), "--mode process, twice");
    assert_eq!(served, hash(&["--mode", "process", "--sut-fork", "off"]));
    let Some(python) = python() else { return };
    let command = example(&python, "call", "");
    let outside = hash(&["--sut", &command]);
    assert_eq!(outside, hash(&["--sut", &command]), "the Python example, twice");
    assert_eq!(outside, hash(&["--sut", &command, "--sut-fork", "off"]));
}

#[test]
fn bad_preempt_sections_and_stores_that_cannot_be_suspended_are_errors() {
    let dir = work_dir();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let unknown = write("unknown.toml", "[preempt]\nrate = \"1/4\"\npoints = [\"lok\"]\n");
    let output = crashsim(&["run", &unknown, "--seeds", "1", "--no-report"]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(
        message.contains("unknown.toml") && message.contains("\"lok\""),
        "{message}"
    );
    let rate = write("rate.toml", "[preempt]\nrate = \"5/4\"\n");
    let output = crashsim(&["run", &rate, "--seeds", "1", "--no-report"]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains("rate"), "{message}");
    let grouped = write("grouped.toml", "store = \"group_commit\"\n[preempt]\nrate = \"1/4\"\n");
    let output = crashsim(&["run", &grouped, "--seeds", "1", "--no-report"]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}{}", stdout(&output));
    assert!(
        message.contains("[preempt]") && !message.contains("panicked"),
        "{message}"
    );
    let Some(python) = python() else { return };
    let command = format!("env -u CRASHSIM_VFS_EXTENSION {}", example(&python, "call", ""));
    let output = crashsim(&["run", "interleave", "--seeds", "1", "--no-report", "--sut", &command]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}{}", stdout(&output));
    assert!(
        message.contains("[preempt]") && message.contains("VFS extension"),
        "{message}"
    );
}

/// `swarm.toml` with suspensions: each seed draws its own rate and points,
/// or none, and says which in its fault mix; the same seed draws the same.
#[test]
fn a_swarm_seed_draws_its_own_suspensions() {
    let dir = work_dir();
    let loaded = load("scenarios/swarm.toml");
    let command = IN_PROCESS;
    let mut mixes = std::collections::BTreeSet::new();
    let mut suspended = 0;
    for number in 0..8 {
        let result = run_seed(&loaded, number, &options(dir.path(), command)).expect("the seed runs");
        assert!(result.ok, "seed {number}: {:#?}", result.violations);
        let mix = result
            .faults
            .split(' ')
            .find(|part| part.starts_with("preempt="))
            .unwrap_or_default();
        assert!(
            !mix.is_empty(),
            "seed {number}: no suspensions in its mix: {}",
            result.faults
        );
        if mix == "preempt=off" {
            assert_eq!(suspensions(&result), 0, "seed {number} drew none");
        }
        suspended += suspensions(&result);
        mixes.insert(mix.to_string());
    }
    assert!(mixes.len() > 1 && suspended > 0, "{mixes:?}, {suspended} suspensions");
    let again = |number| run_seed(&loaded, number, &options(dir.path(), command)).expect("the seed runs");
    let (first, second) = (again(1), again(1));
    assert_eq!((&first.faults, &first.trace_hash), (&second.faults, &second.trace_hash));
}

/// The coverage gate covers suspension points: a run whose steps never
/// reach a declared point (in WAL mode a transaction takes no `lock`)
/// fails `--require-fired` saying so; one that suspends at `shm_lock`
/// passes, and its summary counts the suspensions.
#[test]
fn the_coverage_gate_covers_suspension_points() {
    let dir = work_dir();
    let scenario = |points: &str| {
        let path = dir.path().join("gate.toml");
        let text = format!(
            "[run]\nticks_fault = 1_000\nticks_max = 40_000\n[workload]\ntrips_count = 6\n\
             [preempt]\nrate = \"1/4\"\npoints = [{points}]\n"
        );
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let reports = dir.path().join("reports");
    let run = |file: &str| {
        let report = reports.display().to_string();
        crashsim(&["run", file, "--seeds", "2", "--require-fired", "--report", &report])
    };
    let output = run(&scenario("\"lock\", \"unlock\""));
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{message}{}", stdout(&output));
    assert!(
        message.contains("no call was suspended inside the store's SQLite in 2 seeds")
            && message.contains("(lock, unlock)"),
        "{message}"
    );
    let output = run(&scenario("\"shm_lock\""));
    assert_eq!(output.status.code(), Some(0), "{}{}", stderr(&output), stdout(&output));
    let text = std::fs::read_to_string(reports.join("gate/summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    let scenario = &summary["scenarios"][0];
    let shm_lock = &scenario["coverage"]["suspensions"]["shm_lock"];
    assert_eq!(shm_lock["declared"], true, "{scenario:#}");
    assert!(shm_lock["suspended"].as_u64().unwrap() > 0, "{scenario:#}");
    assert!(scenario["kills"]["suspended.shm_lock"]["armed"].as_u64().unwrap() > 0);
}

/// Suspensions are faults a shrink can drop: the mutant's first failing
/// seed of `interleave` (hundreds of suspensions, kills and duplicates)
/// shrinks to a capsule that keeps a suspension and a tenth of the faults
/// at most, and that replays to the same finding.
#[test]
fn shrinking_keeps_the_suspensions_that_matter_and_drops_the_rest() {
    let mutant = ["--mutant", "lookup_outside_txn"];
    let mut args = vec![
        "run",
        "interleave",
        "--seeds",
        "20",
        "--fail-fast",
        "--format",
        "json",
        "--no-report",
    ];
    args.extend(mutant);
    let output = crashsim(&args);
    let seed = stdout(&output)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|line| line["outcome"] == "fail" && line["seed"].is_u64())
        .and_then(|line| line["seed"].as_u64())
        .unwrap_or_else(|| panic!("not caught in 20 seeds: {}", stderr(&output)));
    let dir = work_dir();
    let capsule = dir.path().join("capsule.toml");
    let (seed, out) = (seed.to_string(), capsule.display().to_string());
    let mut args = vec!["shrink", "interleave", "--seed", &seed, "--out", &out, "--no-report"];
    args.extend(mutant);
    let output = crashsim(&args);
    let shrunk = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{shrunk}{}", stderr(&output));
    // `original      3,153 steps,  753 faults, …`
    let original: usize = shrunk
        .lines()
        .find(|line| line.trim_start().starts_with("original"))
        .and_then(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let at = words.iter().position(|word| word.starts_with("faults"))?;
            Some(words.get(at.checked_sub(1)?)?.replace(',', ""))
        })
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no original size in {shrunk}"));
    let text = std::fs::read_to_string(&capsule).unwrap();
    let faults = text.matches("\nfault = ").count();
    let suspensions = text.matches("\nfault = \"preempt\"").count();
    // The duplicated deliveries that bring two receivers to one command
    // stay; the rest go.
    assert!(
        suspensions >= 1 && faults * 10 <= original,
        "{suspensions} of {faults} faults kept of {original}:\n{text}"
    );
    assert!(text.contains("invariant = \"I2\""), "{text}");
    let output = crashsim(&["replay", "--capsule", &out]);
    let replayed = stdout(&output) + &stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{replayed}");
    assert!(
        replayed.contains("the capsule's recorded verdict is reproduced"),
        "{replayed}"
    );
}
