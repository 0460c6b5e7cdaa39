//! A fresh user repository for tests that play a new user: the Python
//! example store as `my_adapter.py`, beside the two modules it imports,
//! and a fresh virtual environment whose `python` comes first on `PATH`
//! (what `actions/setup-python` gives a CI job). crashsim is **not** on
//! `PATH`, and neither is any Rust toolchain: the user installs crashsim
//! as the README and the CI templates say, `pip install crashsim==VERSION`,
//! and pip finds the wheel in `wheel` (`PIP_FIND_LINKS`, no index): the
//! one `.ci/wheel` built when `CRASHSIM_WHEEL_DIR` names its folder, else a
//! stand-in of the same layout made from this build (`common::wheel`).

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct UserRepository {
    _temp: tempfile::TempDir,
    /// The repository's folder.
    pub dir: PathBuf,
    /// `PATH` for its commands: the venv, then the inherited one without
    /// crashsim's build folder and without any folder holding `cargo`.
    pub path: String,
    /// The folder pip installs `crashsim` from.
    pub wheel: PathBuf,
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
        let wheel = super::wheel::dir(python, &temp.path().join("wheel"));
        let path = format!("{}:{}", venv.join("bin").display(), user_path());
        UserRepository {
            dir,
            path,
            wheel,
            _temp: temp,
        }
    }

    /// The environment pip reads for `pip install crashsim==VERSION` to
    /// find the wheel here, offline.
    pub fn pip_env(&self) -> [(&'static str, String); 3] {
        [
            ("PIP_NO_INDEX", "1".into()),
            ("PIP_FIND_LINKS", self.wheel.display().to_string()),
            ("PIP_DISABLE_PIP_VERSION_CHECK", "1".into()),
        ]
    }
}

/// The inherited `PATH` as a machine with no Rust toolchain and no crashsim
/// would have it: every folder holding `cargo`, `rustc` or a `crashsim`
/// left out.
fn user_path() -> String {
    let inherited = std::env::var("PATH").unwrap_or_default();
    inherited
        .split(':')
        .filter(|folder| {
            !folder.is_empty()
                && ["cargo", "rustc", "crashsim"]
                    .iter()
                    .all(|tool| !Path::new(folder).join(tool).exists())
        })
        .collect::<Vec<_>>()
        .join(":")
}
