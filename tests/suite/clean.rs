//! `crashsim clean`: stale workspaces go, live ones and kept seeds stay,
//! legacy directories are listed and go only with --legacy.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{crashsim, stderr, stdout};
use crashsim::workspace::Workspace;

/// What a SIGKILLed run leaves: a workspace whose lock nobody holds.
fn fake_stale(parent: &Path) -> PathBuf {
    let path = parent.join("crashsim-run-999999-AbC123");
    fs::create_dir_all(path.join("crashsim-smoke-3-xYz789")).unwrap();
    fs::write(path.join("lock"), b"").unwrap();
    fs::write(path.join("crashsim-smoke-3-xYz789/store.db"), vec![1u8; 8192]).unwrap();
    path
}

fn clean(dir: &Path, flags: &[&str]) -> std::process::Output {
    let mut args = vec!["clean", "--dir", dir.to_str().unwrap()];
    args.extend_from_slice(flags);
    let output = crashsim(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    output
}

#[test]
fn clean_removes_stale_workspaces_and_lists_legacy_ones() {
    let dir = tempfile::tempdir().unwrap();
    let stale = fake_stale(dir.path());
    // Live: this test process holds its lock while crashsim runs.
    let live = Workspace::create(dir.path()).unwrap();
    let legacy = dir.path().join("crashsim-smoke-17-qWe456");
    let kept = dir.path().join("crashsim-kept-smoke-4-AbCd");
    let unrelated = dir.path().join("someone-else");
    for path in [&legacy, &kept, &unrelated] {
        fs::create_dir(path).unwrap();
    }

    let output = clean(dir.path(), &["--dry-run"]);
    let text = stdout(&output);
    assert!(text.contains(&format!("would remove {}", stale.display())), "{text}");
    assert!(text.contains(&format!("legacy {}", legacy.display())), "{text}");
    assert!(text.contains("--legacy"), "{text}");
    assert!(!text.contains(&live.path().display().to_string()), "{text}");
    assert!(stale.exists(), "a dry run removes nothing");

    let text = stdout(&clean(dir.path(), &[]));
    assert!(text.contains(&format!("removed {}", stale.display())), "{text}");
    assert!(text.contains("1 stale workspace"), "{text}");
    assert!(!stale.exists());
    assert!(live.path().exists(), "a workspace whose lock is held is live");
    assert!(legacy.exists(), "no lock proves a legacy directory abandoned");
    assert!(kept.exists() && unrelated.exists());

    let text = stdout(&clean(dir.path(), &["--legacy"]));
    assert!(text.contains(&format!("removed {}", legacy.display())), "{text}");
    assert!(!legacy.exists());
    assert!(live.path().exists() && kept.exists() && unrelated.exists());

    let text = stdout(&clean(dir.path(), &[]));
    assert!(text.contains("nothing to clean"), "{text}");
}

#[test]
fn an_unreadable_dir_is_exit_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let output = crashsim(&["clean", "--dir", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(&missing.display().to_string()),
        "{}",
        stderr(&output)
    );
}
