//! crashsim outside its checkout: the built-in scenarios run by name from an
//! empty directory, `list` works there, a local file still wins over a
//! built-in name, an unknown name is bad input that lists the built-ins and
//! names its cause once, and `show` writes a built-in out unchanged.

use crate::common;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use common::{root, stderr, stdout};
use crashsim::scenario::builtin::BUILTINS;

/// Runs the crashsim binary in `dir` (not the checkout: no `scenarios/`).
fn crashsim_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crashsim"))
        .args(args)
        .current_dir(dir)
        .env("CI", "true")
        .output()
        .expect("crashsim runs")
}

fn empty_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

#[test]
fn list_works_from_an_empty_directory() {
    let dir = empty_dir();
    let output = crashsim_in(dir.path(), &["list"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("built-in scenarios"), "{text}");
    for builtin in &BUILTINS {
        assert!(text.contains(builtin.name), "missing {}: {text}", builtin.name);
    }
    assert!(!text.contains("scenarios in "), "no local folder here: {text}");
}

#[test]
fn list_with_a_missing_folder_given_is_bad_input_named_once() {
    let dir = empty_dir();
    let output = crashsim_in(dir.path(), &["list", "--scenarios", "mine"]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.starts_with("error: mine: "), "{message}");
    assert_eq!(message.matches("No such file").count(), 1, "{message}");
    assert!(stdout(&output).is_empty(), "nothing printed before the error");
}

#[test]
fn list_shows_a_local_folder_besides_the_builtins() {
    let dir = empty_dir();
    fs::create_dir(dir.path().join("scenarios")).unwrap();
    fs::write(
        dir.path().join("scenarios/mine.toml"),
        "description = \"my own scenario\"\n",
    )
    .unwrap();
    let output = crashsim_in(dir.path(), &["list"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("scenarios in scenarios"), "{text}");
    assert!(text.contains("my own scenario"), "{text}");
    assert!(text.contains("built-in scenarios"), "{text}");
}

#[test]
fn a_builtin_runs_by_name_from_an_empty_directory() {
    let dir = empty_dir();
    let output = crashsim_in(dir.path(), &["run", "smoke", "--seeds", "2", "--no-report"]);
    assert_eq!(output.status.code(), Some(0), "{}{}", stdout(&output), stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("scenario smoke (built-in)"), "{text}");
    assert!(text.contains("2 passed, 0 failed"), "{text}");

    // A failing seed's replay hint names what resolves back: the built-in name.
    let output = crashsim_in(
        dir.path(),
        &["run", "smoke", "--seeds", "1", "--mutant", "no_dedup", "--no-report"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let text = stdout(&output);
    assert!(text.contains(" replay smoke --seed 0 --mutant no_dedup`"), "{text}");
    assert!(fs::read_dir(dir.path()).unwrap().next().is_none(), "nothing written");
}

#[test]
fn replay_takes_a_builtin_name_too() {
    let dir = empty_dir();
    let output = crashsim_in(dir.path(), &["replay", "smoke", "--seed", "3", "--quiet"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("seed=3 scenario=smoke"), "{}", stdout(&output));
    assert!(stdout(&output).contains("verdict: PASS"), "{}", stdout(&output));
}

#[test]
fn a_path_wins_over_a_builtin_name() {
    let dir = empty_dir();
    fs::write(
        dir.path().join("smoke.toml"),
        "description = \"a local smoke\"\n[workload]\ntrips_count = 3\n",
    )
    .unwrap();
    let output = crashsim_in(dir.path(), &["run", "smoke.toml", "--seeds", "1", "--no-report"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("scenario smoke (smoke.toml)"), "{text}");
    assert!(text.contains(" 3 trips"), "{text}");
}

#[test]
fn an_unknown_name_is_bad_input_that_lists_the_builtins_once() {
    let dir = empty_dir();
    for args in [
        &["run", "nope", "--seeds", "1"][..],
        &["replay", "nope", "--seed", "1"],
        &["shrink", "nope", "--seed", "1"],
        &["mutants", "--scenario", "nope"],
        &["durability", "--exhaustive", "nope"],
    ] {
        let output = crashsim_in(dir.path(), args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let message = stderr(&output);
        assert!(message.starts_with("error: nope: "), "{args:?}: {message}");
        assert_eq!(message.matches("no such file").count(), 1, "{args:?}: {message}");
        assert_eq!(message.matches("smoke").count(), 1, "{args:?}: {message}");
        assert!(message.contains("demonstrations/ghost_effect"), "{args:?}: {message}");
        assert!(!message.contains("panicked"), "{args:?}: {message}");
    }
}

#[test]
fn a_missing_capsule_names_its_cause_once() {
    let dir = empty_dir();
    let output = crashsim_in(dir.path(), &["replay", "--capsule", "gone.toml"]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("gone.toml"), "{message}");
    assert_eq!(message.matches("No such file").count(), 1, "{message}");
}

#[test]
fn show_prints_the_shipped_file() {
    let dir = empty_dir();
    for (arg, file) in [
        ("smoke", "scenarios/smoke.toml"),
        ("ghost_effect", "scenarios/demonstrations/ghost_effect.toml"),
    ] {
        let output = crashsim_in(dir.path(), &["show", arg]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let text = stdout(&output);
        assert_eq!(text, fs::read_to_string(root().join(file)).unwrap());
        crashsim::scenario::parse(&text, Path::new(file)).expect("the shown TOML parses");
    }
    let output = crashsim_in(dir.path(), &["show", "nope"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("smoke, contention"), "{}", stderr(&output));
}

#[test]
fn show_out_writes_a_file_and_refuses_to_overwrite_one() {
    let dir = empty_dir();
    let shipped = fs::read_to_string(root().join("scenarios/smoke.toml")).unwrap();
    let output = crashsim_in(dir.path(), &["show", "smoke", "--out", "mine/start.toml"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(fs::read_to_string(dir.path().join("mine/start.toml")).unwrap(), shipped);

    let path = dir.path().join("taken.toml");
    fs::write(&path, "description = \"mine\"\n").unwrap();
    let output = crashsim_in(dir.path(), &["show", "smoke", "--out", "taken.toml"]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert_eq!(message.matches("already exists").count(), 1, "{message}");
    assert!(message.contains("--force"), "{message}");
    assert_eq!(fs::read_to_string(&path).unwrap(), "description = \"mine\"\n");

    let output = crashsim_in(dir.path(), &["show", "smoke", "--out", "taken.toml", "--force"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(fs::read_to_string(&path).unwrap(), shipped);
}

#[test]
fn every_builtin_loads_and_matches_its_file() {
    for builtin in &BUILTINS {
        let loaded = builtin
            .load()
            .unwrap_or_else(|error| panic!("{}: {error}", builtin.name));
        assert!(!loaded.scenario.description.is_empty(), "{}", builtin.name);
        let file = root().join("scenarios").join(format!("{}.toml", builtin.name));
        assert_eq!(builtin.text, fs::read_to_string(file).unwrap(), "{}", builtin.name);
    }
}

#[test]
fn mutants_without_a_folder_run_against_the_builtin_scenarios() {
    let dir = empty_dir();
    let output = crashsim_in(
        dir.path(),
        &[
            "mutants",
            "--mutant",
            "no_dedup",
            "--seeds",
            "1",
            "--ranges",
            "1",
            "--reference-seeds",
            "1",
            "--no-report",
        ],
    );
    assert_ne!(output.status.code(), Some(2), "{}", stderr(&output));
    // The built-in scenarios of the reference: all but group_commit (its own store).
    let text = stdout(&output);
    assert!(text.contains("1 mutant(s) × 12 scenario(s)"), "{text}");
}
