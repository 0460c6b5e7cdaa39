//! SIGINT and SIGTERM for real, in a child process: this test binary runs
//! itself again with one test selected, and that child installs the
//! handlers, registers a directory and a process group, and signals itself
//! twice.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crashsim::interrupt::{self, Signal};

/// Set in the child: the folder it works in.
const CHILD: &str = "CRASHSIM_INTERRUPT_TEST_CHILD";

/// Polls `done` until it holds; panics after a minute (a hang, not a timing).
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..6_000 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("gave up waiting until {what}");
}

/// The child's part; a no-op when run as an ordinary test.
#[test]
fn signalled_child() {
    let Some(root) = std::env::var_os(CHILD).map(PathBuf::from) else {
        return;
    };
    assert_eq!(interrupt::requested(), None);
    interrupt::install().expect("installs");
    interrupt::install().expect("installing twice is fine");

    let victim = root.join("victim");
    std::fs::create_dir_all(victim.join("nested")).unwrap();
    std::fs::write(victim.join("nested/store.db"), b"data").unwrap();
    let _victim = interrupt::guard_dir(victim);
    let released = root.join("released");
    std::fs::create_dir(&released).unwrap();
    drop(interrupt::guard_dir(released));

    #[expect(
        clippy::zombie_processes,
        reason = "the second signal kills it and ends this process; the parent test checks it died"
    )]
    let sleeper = Command::new("sleep")
        .arg("1000")
        .process_group(0)
        .stdin(Stdio::null())
        .spawn()
        .expect("sleep starts");
    let _group = interrupt::guard_group(sleeper.id() as i32);
    std::fs::write(root.join("pid"), sleeper.id().to_string()).unwrap();

    // SAFETY: sends a signal to this process, whose handler is installed.
    unsafe { libc::raise(libc::SIGINT) };
    wait_until("the first signal is recorded", || interrupt::requested().is_some());
    assert_eq!(interrupt::requested(), Some(Signal::Int));
    assert!(root.join("victim").exists(), "the first signal removes nothing");

    // SAFETY: as above; this one ends the process (exit code 143).
    unsafe { libc::raise(libc::SIGTERM) };
    wait_until("the second signal ends the process", || false);
}

/// Whether process `pid` is gone (or a zombie nobody has reaped yet).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// `signalled_child` as the harness names it: by its path in this binary,
/// wherever this file is a module of.
fn child_test() -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::signalled_child"),
        None => "signalled_child".to_string(),
    }
}

fn run_child(root: &Path) -> std::process::Output {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([&child_test(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the test binary starts");
    let mut finished = false;
    wait_until("the child exits", || {
        finished = child.try_wait().unwrap().is_some();
        finished
    });
    child.wait_with_output().unwrap()
}

#[test]
fn first_signal_stops_second_quits_with_everything_cleaned() {
    let root = tempfile::tempdir().unwrap();
    let output = run_child(root.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(143), "{stderr}");
    assert!(
        stderr.contains("crashsim: SIGINT: stopping (seeds running are abandoned; press Ctrl-C again"),
        "{stderr}"
    );
    assert!(stderr.contains("crashsim: SIGTERM again: quitting at once"), "{stderr}");
    assert!(
        !root.path().join("victim").exists(),
        "the registered directory is removed"
    );
    assert!(
        root.path().join("released").exists(),
        "an unregistered directory is kept"
    );
    let pid: u32 = std::fs::read_to_string(root.path().join("pid"))
        .unwrap()
        .parse()
        .unwrap();
    wait_until("the registered process group is dead", || dead(pid));
}
