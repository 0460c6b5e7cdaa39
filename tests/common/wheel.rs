//! The crashsim wheel the tests install as a user would: the one
//! `.ci/wheel` built with maturin when `CRASHSIM_WHEEL_DIR` names its
//! folder, else a stand-in of the same layout made from this build's
//! binary and the SDK's sources (tests/fixtures/wheel/standin.py), so that
//! `cargo test` needs neither maturin nor a network.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The folder holding the wheel (a stand-in is made in `scratch`).
pub fn dir(python: &str, scratch: &Path) -> PathBuf {
    if let Some(built) = std::env::var_os("CRASHSIM_WHEEL_DIR") {
        let built = std::fs::canonicalize(&built).expect("CRASHSIM_WHEEL_DIR names a folder");
        let wheels = std::fs::read_dir(&built)
            .expect("CRASHSIM_WHEEL_DIR is readable")
            .filter_map(|entry| entry.ok())
            .filter(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                name.starts_with(&format!("crashsim-{}-", env!("CARGO_PKG_VERSION"))) && name.ends_with(".whl")
            })
            .count();
        assert_eq!(
            wheels,
            1,
            "{} holds one crashsim wheel of this version",
            built.display()
        );
        return built;
    }
    let root = super::root();
    let made = Command::new(python)
        .arg(root.join("tests/fixtures/wheel/standin.py"))
        .arg(env!("CARGO_BIN_EXE_crashsim"))
        .arg(root.join("adapters/python/crashsim_adapter"))
        .arg(env!("CARGO_PKG_VERSION"))
        .arg(scratch)
        .output()
        .expect("python runs");
    assert!(made.status.success(), "the stand-in wheel: {}", super::stderr(&made));
    scratch.to_path_buf()
}
