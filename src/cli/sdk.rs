//! `crashsim sdk python --out DIR`: the Python adapter SDK this binary
//! speaks to, written from the binary itself, for users who installed
//! crashsim alone (`cargo install`) and have no checkout. DIR is a package
//! source folder: `pip install DIR` installs `crashsim-adapter` (its build
//! backend is standard-library Python, so nothing is downloaded), or DIR
//! goes on `PYTHONPATH`. The example store comes along under `examples/`.
//!
//! The SDK and the binary come from one commit, so the protocol version they
//! speak always matches; that is why the CI templates install the SDK this
//! way rather than from the repository a second time.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

use crate::exit::Exit;
use crate::report::atomic;

#[derive(Args, Debug)]
pub struct SdkArgs {
    /// The SDK's language (Python is the one crashsim ships).
    pub language: Language,
    /// The folder to write it into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Replace files that exist there with other contents (an older SDK).
    #[arg(long)]
    pub force: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Language {
    Python,
}

macro_rules! file {
    ($out:literal, $source:literal) => {
        (
            $out,
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/adapters/python/", $source)),
        )
    };
    ($path:literal) => {
        file!($path, $path)
    };
}

/// Every file written, by its path under DIR. A test checks the package's
/// modules are all here.
pub const PYTHON: [(&str, &str); 17] = [
    file!("pyproject.toml"),
    file!("sdk_build.py"),
    file!("README.md"),
    file!("crashsim_adapter/__init__.py"),
    file!("crashsim_adapter/dump.py"),
    file!("crashsim_adapter/effect.py"),
    file!("crashsim_adapter/errors.py"),
    file!("crashsim_adapter/forkserver.py"),
    file!("crashsim_adapter/integrity.py"),
    file!("crashsim_adapter/protocol.py"),
    file!("crashsim_adapter/rows.py"),
    file!("crashsim_adapter/settings.py"),
    file!("crashsim_adapter/sources.py"),
    file!("crashsim_adapter/vfs.py"),
    file!("examples/example_store.py", "example_store.py"),
    file!("examples/example_schema.py", "example_schema.py"),
    file!("examples/example_options.py", "example_options.py"),
];

pub fn sdk(args: &SdkArgs) -> anyhow::Result<Exit> {
    let Language::Python = args.language;
    write_all(&args.out, &PYTHON, args.force)?;
    eprintln!(
        "note: the Python adapter SDK (crashsim-adapter {}, protocol {}) written to {dir}\n\
         install it with `python3 -m pip install {dir}`, or put {dir} on PYTHONPATH;\n\
         {dir}/examples/example_store.py is a complete store to start from",
        env!("CARGO_PKG_VERSION"),
        crate::adapter::protocol::VERSION,
        dir = crate::adapter::shell_word(&args.out.to_string_lossy()),
    );
    Ok(Exit::Pass)
}

/// Writes `files` under `out`; without `force`, refuses (before writing any)
/// when a file there holds something else.
fn write_all(out: &Path, files: &[(&str, &str)], force: bool) -> anyhow::Result<()> {
    if !force {
        let differing: Vec<String> = files
            .iter()
            .filter(|(path, text)| {
                let target = out.join(path);
                target.symlink_metadata().is_ok() && std::fs::read(&target).ok().as_deref() != Some(text.as_bytes())
            })
            .map(|(path, _)| out.join(path).display().to_string())
            .collect();
        if !differing.is_empty() {
            bail!(
                "{} already exist(s) with other contents; pass --force to replace them",
                differing.join(", ")
            );
        }
    }
    for (path, text) in files {
        let target = out.join(path);
        atomic::write(&target, text.as_bytes()).with_context(|| format!("writing {}", target.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module added to the package is written too (or this fails).
    #[test]
    fn every_module_of_the_package_is_written() {
        let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("adapters/python/crashsim_adapter");
        let mut modules: Vec<String> = std::fs::read_dir(package)
            .expect("the package folder")
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".py"))
            .map(|name| format!("crashsim_adapter/{name}"))
            .collect();
        modules.sort();
        let written: Vec<&str> = PYTHON
            .iter()
            .map(|(path, _)| *path)
            .filter(|path| path.starts_with("crashsim_adapter/"))
            .collect();
        assert_eq!(written, modules);
    }

    #[test]
    fn an_older_sdk_is_replaced_only_with_force() {
        let dir = tempfile::tempdir().expect("a temp dir");
        write_all(dir.path(), &PYTHON, false).expect("a first write");
        write_all(dir.path(), &PYTHON, false).expect("the same files again");
        std::fs::write(dir.path().join("crashsim_adapter/vfs.py"), "# older\n").expect("an edit");
        let error = write_all(dir.path(), &PYTHON, false).expect_err("refused").to_string();
        assert!(error.contains("vfs.py") && error.contains("--force"), "{error}");
        write_all(dir.path(), &PYTHON, true).expect("replaced");
        let vfs = std::fs::read_to_string(dir.path().join("crashsim_adapter/vfs.py")).expect("vfs.py");
        let packed = PYTHON
            .iter()
            .find(|(path, _)| *path == "crashsim_adapter/vfs.py")
            .expect("vfs.py is written");
        assert_eq!(vfs, packed.1);
    }
}
