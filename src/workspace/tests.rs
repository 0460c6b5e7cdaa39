use std::fs::{self, File};
use std::path::{Path, PathBuf};

use super::*;

fn name(path: &Path) -> &str {
    path.file_name().and_then(|name| name.to_str()).unwrap()
}

/// What a run killed with SIGKILL leaves: a workspace whose lock nobody holds.
fn fake_stale(parent: &Path, name: &str) -> PathBuf {
    let path = parent.join(name);
    fs::create_dir_all(path.join("crashsim-smoke-3-AbC123")).unwrap();
    fs::write(path.join(LOCK), b"").unwrap();
    fs::write(path.join("crashsim-smoke-3-AbC123/store.db"), vec![7u8; 20_000]).unwrap();
    path
}

#[test]
fn a_workspace_is_named_for_its_process_locked_and_removed_when_dropped() {
    let parent = tempfile::tempdir().unwrap();
    let workspace = Workspace::create(parent.path()).unwrap();
    let path = workspace.path().to_path_buf();
    assert!(path.is_absolute());
    assert_eq!(
        path.parent(),
        Some(std::path::absolute(parent.path()).unwrap().as_path())
    );
    let prefix = format!("crashsim-run-{}-", std::process::id());
    assert!(name(&path).starts_with(&prefix), "{}", path.display());
    assert_eq!(name(&path).len(), prefix.len() + 6);
    let lock = File::open(path.join(LOCK)).unwrap();
    assert!(!try_lock(&lock).unwrap(), "the workspace holds its lock");
    assert!(
        crate::interrupt::guarded_dirs().contains(&path),
        "a second signal removes it"
    );
    let other = Workspace::create(parent.path()).unwrap();
    assert_ne!(other.path(), path);
    fs::create_dir(path.join("crashsim-smoke-1-xYz789")).unwrap();
    drop(workspace);
    assert!(!path.exists());
    assert!(!crate::interrupt::guarded_dirs().contains(&path));
    assert!(other.path().exists());
    // Nothing is left of the creation (no staging dot-directory).
    drop(other);
    assert_eq!(fs::read_dir(parent.path()).unwrap().count(), 0);
}

#[test]
fn a_held_lock_is_not_swept_a_released_one_is() {
    let parent = tempfile::tempdir().unwrap();
    let live = Workspace::create(parent.path()).unwrap();
    let stale_path = fake_stale(parent.path(), "crashsim-run-999999-qWe123");
    // Another process holding the lock: another open file holding it.
    let owner = File::open(stale_path.join(LOCK)).unwrap();
    assert!(try_lock(&owner).unwrap());
    assert_eq!(stale(parent.path()).unwrap(), []);
    assert_eq!(sweep_stale(parent.path()).unwrap(), []);
    assert!(stale_path.exists());

    drop(owner);
    let listed = stale(parent.path()).unwrap();
    assert_eq!(listed.len(), 1);
    assert!(stale_path.exists(), "listing removes nothing");
    let swept = sweep_stale(parent.path()).unwrap();
    assert_eq!(swept, listed);
    assert_eq!(swept[0].path, stale_path);
    assert!(swept[0].bytes >= 20_000, "{swept:?}");
    assert!(!stale_path.exists());
    assert!(live.path().exists(), "this process's own workspace is live");
    assert_eq!(sweep_stale(parent.path()).unwrap(), []);
}

#[test]
fn keep_moves_a_seed_directory_out_of_the_workspace() {
    let parent = tempfile::tempdir().unwrap();
    let workspace = Workspace::create(parent.path()).unwrap();
    let seed_dir = workspace.path().join("crashsim-lost-update-17-AbC123");
    fs::create_dir(&seed_dir).unwrap();
    fs::write(seed_dir.join("store.db"), b"failing").unwrap();
    let kept = workspace.keep(&seed_dir).unwrap();
    assert!(!seed_dir.exists());
    assert_eq!(kept.parent(), workspace.path().parent());
    let kept_name = name(&kept);
    assert!(kept_name.starts_with("crashsim-kept-lost-update-17-"), "{kept_name}");
    assert_eq!(kept_name.len(), "crashsim-kept-lost-update-17-".len() + 4);
    drop(workspace);
    assert_eq!(fs::read(kept.join("store.db")).unwrap(), b"failing");
    assert_eq!(sweep_stale(parent.path()).unwrap(), [], "kept is not a workspace");
    assert_eq!(
        legacy(parent.path()).unwrap(),
        Vec::<PathBuf>::new(),
        "kept is kept on purpose"
    );
}

#[test]
fn kept_names_keep_label_and_seed() {
    assert_eq!(kept_stem("crashsim-smoke-17-AbC123"), "smoke-17");
    assert_eq!(kept_stem("crashsim-lost-update-0-zzzzzz"), "lost-update-0");
    assert_eq!(kept_stem("crashsim-smoke-17"), "smoke-17");
    assert_eq!(kept_stem("mine"), "mine");
}

#[test]
fn legacy_lists_unlocked_crashsim_directories_only() {
    let parent = tempfile::tempdir().unwrap();
    let _live = Workspace::create(parent.path()).unwrap();
    let stale_path = fake_stale(parent.path(), "crashsim-run-999998-aSd456");
    let old = parent.path().join("crashsim-smoke-3-AbC123");
    let lockless = parent.path().join("crashsim-run-999997-zXc789");
    for dir in [&old, &lockless, &parent.path().join("crashsim-kept-smoke-3-AbCd")] {
        fs::create_dir(dir).unwrap();
    }
    fs::create_dir(parent.path().join("other")).unwrap();
    fs::write(parent.path().join("crashsim-a-file"), b"").unwrap();
    assert_eq!(legacy(parent.path()).unwrap(), [lockless.clone(), old.clone()]);
    // Without a lock file, nothing proves its owner gone.
    assert_eq!(sweep_stale(parent.path()).unwrap().len(), 1);
    assert!(!stale_path.exists());
    assert!(lockless.exists() && old.exists());
}

#[test]
fn an_unreadable_parent_is_an_error() {
    let parent = tempfile::tempdir().unwrap();
    let missing = parent.path().join("missing");
    assert!(sweep_stale(&missing).is_err());
    assert!(legacy(&missing).is_err());
    assert!(Workspace::create(&missing).is_err());
}

#[test]
fn disk_usage_counts_what_is_allocated() {
    let parent = tempfile::tempdir().unwrap();
    fs::create_dir(parent.path().join("a")).unwrap();
    fs::write(parent.path().join("a/data"), vec![1u8; 64 * 1024]).unwrap();
    assert!(disk_usage(parent.path()) >= 64 * 1024);
    assert_eq!(disk_usage(&parent.path().join("missing")), 0);
}
