//! A fresh user repository for tests that play a new user: the Python
//! example store as `my_adapter.py`, beside the two modules it imports,
//! and a fresh virtual environment whose `python` comes first on `PATH`,
//! then this build of crashsim (what `actions/setup-python` and an
//! installed crashsim give a CI job).

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct UserRepository {
    _temp: tempfile::TempDir,
    /// The repository's folder.
    pub dir: PathBuf,
    /// `PATH` for its commands: the venv, crashsim, then the inherited one.
    pub path: String,
}

impl UserRepository {
    pub fn new(python: &str) -> UserRepository {
        let temp = tempfile::tempdir().expect("a temp dir");
        let dir = temp.path().join("repo");
        std::fs::create_dir(&dir).expect("the repository");
        let adapters = super::root().join("adapters/python");
        for (from, to) in [
            ("example_store.py", "my_adapter.py"),
            ("example_schema.py", "example_schema.py"),
            ("example_options.py", "example_options.py"),
        ] {
            std::fs::copy(adapters.join(from), dir.join(to)).expect("copying the example");
        }
        let venv = temp.path().join("python");
        let made = Command::new(python)
            .args(["-m", "venv"])
            .arg(&venv)
            .output()
            .expect("venv");
        assert!(made.status.success(), "{}", super::stderr(&made));
        let crashsim = Path::new(env!("CARGO_BIN_EXE_crashsim"))
            .parent()
            .expect("the binary's folder");
        let path = format!(
            "{}:{}:{}",
            venv.join("bin").display(),
            crashsim.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        UserRepository { dir, path, _temp: temp }
    }
}
