//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod example;
pub mod shell;
pub mod user_repo;
pub mod wheel;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crashsim::runner::{Options, SeedResult, run_seed};
use crashsim::scenario::{self, Loaded};

/// The repository root (tests run with it as the working directory).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn load(relative: &str) -> Loaded {
    scenario::load(&root().join(relative)).expect("scenario loads")
}

/// A fresh directory where the runner puts seeds by default (tmpfs if any).
pub fn work_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(crashsim::runner::default_work_dir()).expect("work dir")
}

pub fn options(work_dir: &Path) -> Options {
    Options {
        work_dir: work_dir.to_path_buf(),
        keep_failed: false,
        keep_traces: true,
        sut: Default::default(),
        check_determinism: false,
        files: Default::default(),
    }
}

pub fn run(loaded: &Loaded, seed: u64, work_dir: &Path) -> SeedResult {
    run_seed(loaded, seed, &options(work_dir)).expect("seed runs")
}

/// Runs the crashsim binary from the repository root.
pub fn crashsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crashsim"))
        .args(args)
        .current_dir(root())
        .env("CI", "true")
        .output()
        .expect("crashsim runs")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The Python interpreter itself (`sys.executable`: not a wrapper such as a
/// pyenv shim, which costs a tenth of a second per start), or `None`
/// without Python, with a note. In CI Python is part of the machine: its
/// absence fails. Asked once per test binary.
pub fn python() -> Option<String> {
    static FOUND: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let found = FOUND.get_or_init(|| {
        Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .ok()
            .filter(|output| output.status.success())
            .and_then(|output| String::from_utf8(output.stdout).ok())
            .map(|text| text.trim().to_string())
            .filter(|path| !path.is_empty())
    });
    match found {
        Some(path) => Some(path.clone()),
        None if std::env::var_os("CI").is_some() => panic!("CI has Python 3; python3 was not found"),
        None => {
            eprintln!("note: python3 not found; the Python tests here are skipped");
            None
        }
    }
}

/// A file of a seed's report folder as text, whether it was kept as is or,
/// past `report::COMPRESS_ABOVE`, gzip-compressed beside it as `NAME.gz`.
pub fn read_kept(path: &Path) -> String {
    use std::io::Read;
    if let Ok(text) = std::fs::read_to_string(path) {
        return text;
    }
    let mut packed = path.as_os_str().to_owned();
    packed.push(".gz");
    let file = std::fs::File::open(&packed).unwrap_or_else(|error| panic!("{} (nor .gz): {error}", path.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .unwrap_or_else(|error| panic!("{}.gz: {error}", path.display()));
    text
}
