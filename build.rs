//! Records the git commit crashsim is built from (a seed only replays
//! against the same code, so reports and replay capsules carry it), and
//! builds the crash VFS as a SQLite loadable extension that the binary
//! carries (`vfs::extension`): outside stores load it into their own SQLite.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    commit();
    extension();
}

fn commit() {
    let commit = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .is_some_and(|output| !output.stdout.is_empty());
    let suffix = if dirty && commit != "unknown" { "-dirty" } else { "" };
    println!("cargo:rustc-env=CRASHSIM_GIT_COMMIT={commit}{suffix}");
    for path in [".git/HEAD", ".git/index", ".git/refs/heads"] {
        if Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// Compiles `crates/vfs` (no dependencies, on purpose) with the `rustc`
/// cargo runs, as a `cdylib`, into `OUT_DIR`. A bare `rustc` rather than a
/// nested `cargo`: no second lock on the build directory, nothing to fetch.
fn extension() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    let source = manifest.join("crates/vfs/src");
    println!("cargo:rerun-if-changed={}", source.display());
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let target = std::env::var("TARGET").expect("cargo sets it");
    let host = std::env::var("HOST").expect("cargo sets it");
    let library = out.join("libcrashsim_vfs.so");
    let mut command = Command::new(rustc);
    command
        .args([
            "--edition",
            "2024",
            "--crate-name",
            "crashsim_vfs",
            "--crate-type",
            "cdylib",
        ])
        .args([
            "-C",
            "opt-level=2",
            "-C",
            "debuginfo=0",
            "-C",
            "strip=debuginfo",
            "--cap-lints",
            "allow",
        ])
        .arg("-o")
        .arg(&library)
        .arg(source.join("lib.rs"));
    if target != host {
        command.args(["--target", &target]);
        // A cross build links with the linker cargo was told of for the target.
        let variable = format!("CARGO_TARGET_{}_LINKER", target.to_uppercase().replace(['-', '.'], "_"));
        println!("cargo:rerun-if-env-changed={variable}");
        if let Some(linker) = std::env::var_os(&variable) {
            command.arg("-C").arg(format!("linker={}", linker.to_string_lossy()));
        }
    }
    // Whatever wraps this build (clippy, coverage) is not for the extension.
    for variable in ["RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "CARGO_ENCODED_RUSTFLAGS"] {
        command.env_remove(variable);
    }
    let status = command.status().expect("running rustc for the VFS extension");
    assert!(status.success(), "rustc could not build the VFS extension ({status})");
    println!("cargo:rustc-env=CRASHSIM_VFS_EXTENSION={}", library.display());
}
