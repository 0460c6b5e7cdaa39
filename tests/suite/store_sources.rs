//! An outside store is more than the script its command names: the module
//! that script imports is the store. The SDK's hello lists the files of the
//! modules it loaded from the working directory (`sources`), crashsim
//! hashes them, and a capsule replayed after that module changed warns.

use crate::common;

use std::process::{Command, Output};

use common::{python, root};

/// crashsim run in `dir` with the SDK on the path.
fn crashsim_in(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crashsim"))
        .args(args)
        .current_dir(dir)
        .env("CI", "true")
        .env("PYTHONPATH", root().join("adapters/python"))
        .output()
        .expect("crashsim runs")
}

/// `list --sut CMD` run in `dir`, which must succeed: what it printed.
fn listed(dir: &std::path::Path, sut: &str) -> String {
    let listed = crashsim_in(dir, &["list", "--sut", sut]);
    assert_eq!(
        listed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    String::from_utf8_lossy(&listed.stdout).into_owned()
}

#[test]
fn a_capsule_warns_when_a_module_the_adapter_imports_changed() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    // The user's store as a module of its own, and a thin adapter script.
    let store = std::fs::read_to_string(root().join("adapters/python/example_store.py")).expect("example");
    std::fs::write(dir.path().join("my_store.py"), &store).expect("store written");
    std::fs::write(
        dir.path().join("my_adapter.py"),
        "import sys\nimport my_store\n\nmy_store.main(sys.argv[1:])\n",
    )
    .expect("adapter written");
    let sut = format!("{python} my_adapter.py");

    let text = listed(dir.path(), &sut);
    assert!(
        text.contains("  my_store.py  sha256 "),
        "list --sut names the imported module:\n{text}"
    );

    let saved = crashsim_in(
        dir.path(),
        &[
            "replay",
            "smoke",
            "--seed",
            "0",
            "--sut",
            &sut,
            "--quiet",
            "--save-capsule",
            "pass.toml",
        ],
    );
    assert_eq!(
        saved.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&saved.stderr)
    );
    let capsule = std::fs::read_to_string(dir.path().join("pass.toml")).expect("capsule");
    assert!(
        capsule.contains("my_store.py"),
        "the capsule records the module:\n{capsule}"
    );

    let unchanged = crashsim_in(dir.path(), &["replay", "--capsule", "pass.toml", "--quiet"]);
    assert_eq!(unchanged.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&unchanged.stderr).contains("changed since"));

    std::fs::write(dir.path().join("my_store.py"), store + "\n# changed\n").expect("store changed");
    let changed = crashsim_in(dir.path(), &["replay", "--capsule", "pass.toml", "--quiet"]);
    let warned = String::from_utf8_lossy(&changed.stderr).into_owned();
    assert!(
        warned.contains("warning: my_store.py changed since the capsule was made"),
        "no warning about the changed module:\n{warned}"
    );
}

/// Run from the adapter's folder with the script named by its absolute
/// path, the command names it and the SDK's `sources` lists it again,
/// relative to that folder: `list --sut` shows it once, by the name on the
/// command line (issue 37 §6).
#[test]
fn a_file_named_both_by_the_command_and_by_the_sdk_is_listed_once() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let store = std::fs::read_to_string(root().join("adapters/python/example_store.py")).expect("example");
    std::fs::write(dir.path().join("my_adapter.py"), &store).expect("adapter written");
    let adapter = dir.path().join("my_adapter.py");
    let sut = format!("{python} {}", adapter.display());

    let text = listed(dir.path(), &sut);
    let files: Vec<&str> = text.lines().filter(|line| line.contains("  sha256 ")).collect();
    let named: Vec<&&str> = files.iter().filter(|line| line.contains("my_adapter.py")).collect();
    assert_eq!(named.len(), 1, "the adapter once:\n{text}");
    assert!(
        named[0].starts_with(&format!("  {}  sha256 ", adapter.display())),
        "by the command's name:\n{text}"
    );
}
