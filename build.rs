//! Records the git commit crashsim is built from: a seed only replays
//! against the same code, so reports and replay capsules carry it.

use std::process::Command;

fn main() {
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
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
