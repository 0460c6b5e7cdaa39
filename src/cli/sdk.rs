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
pub const PYTHON: [(&str, &str); 18] = [
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
    file!("crashsim_adapter/version.py"),
    file!("crashsim_adapter/vfs.py"),
    file!("examples/example_store.py", "example_store.py"),
    file!("examples/example_schema.py", "example_schema.py"),
    file!("examples/example_options.py", "example_options.py"),
];

pub fn sdk(args: &SdkArgs) -> anyhow::Result<Exit> {
    let Language::Python = args.language;
    let readme = vendored_readme(PYTHON_README);
    let files: Vec<(&str, &str)> = PYTHON
        .iter()
        .map(|&(path, text)| match path {
            "README.md" => (path, readme.as_str()),
            _ => (path, text),
        })
        .collect();
    write_all(&args.out, &files, args.force)?;
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

/// The repository's `adapters/python/README.md`.
const PYTHON_README: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/adapters/python/README.md"));

/// The SDK's README as the vendored folder needs it: its file table lists
/// only what the folder holds (the example under `examples/`), the
/// example's commands name it there, and a note says that the paths left
/// (`docs/`, the tests, `.ci/`) are crashsim's repository's.
fn vendored_readme(source: &str) -> String {
    let mut text = String::new();
    let mut noted = false;
    // Inside the file table: from its header to the first line not a row.
    let mut files = false;
    for line in source.lines() {
        files = (files && line.starts_with('|')) || line == "| file | what |";
        if let Some(rest) = line.strip_prefix("| `").filter(|_| files) {
            let name = rest.split('`').next().unwrap_or_default();
            let vendored = PYTHON
                .iter()
                .map(|(path, _)| *path)
                .find(|path| *path == name || path.strip_prefix("examples/") == Some(name))
                .or_else(|| (name == "crashsim_adapter/").then_some(name));
            match vendored {
                Some(path) => text.push_str(&line.replacen(&format!("`{name}`"), &format!("`{path}`"), 1)),
                None => continue,
            }
            text.push('\n');
            continue;
        }
        if files && line == "|---|---|" {
            text.push_str(line);
            text.push_str("\n| `pyproject.toml`, `sdk_build.py` | the package (standard-library build backend): `python3 -m pip install .` |\n");
            continue;
        }
        text.push_str(&line.replace("adapters/python/example_store.py", "examples/example_store.py"));
        text.push('\n');
        if !noted && line.starts_with("# ") {
            noted = true;
            text.push_str(&format!(
                "\n> Written by `crashsim sdk python` (crashsim {}, adapter protocol {}): the SDK and its example \
                 store, from crashsim's repository (`adapters/python/`). Paths below under `docs/`, \
                 `adapters/python/`, `tests/` or `.ci/` are in that repository, not in this folder.\n",
                env!("CARGO_PKG_VERSION"),
                crate::adapter::protocol::VERSION
            ));
        }
    }
    text
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

    /// The vendored README's file table names only files the folder has.
    #[test]
    fn the_vendored_readme_lists_what_the_folder_holds() {
        let readme = vendored_readme(PYTHON_README);
        let listed: Vec<&str> = readme
            .lines()
            .skip_while(|line| *line != "| file | what |")
            .take_while(|line| line.starts_with('|'))
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|rest| rest.split('`').next())
            .collect();
        assert!(listed.contains(&"examples/example_store.py"), "{listed:?}");
        for name in listed {
            let held = PYTHON.iter().any(|(path, _)| *path == name || path.starts_with(name));
            assert!(held, "{name} is listed but not written");
        }
        assert!(!readme.contains("python3 adapters/python/example_store.py"), "{readme}");
        assert!(readme.contains("Written by `crashsim sdk python`"));
        // The rest of the README is all there: the table of `--bug`s too.
        assert!(readme.contains("| `dict_dedup` |"), "{readme}");
        // The note (a blank line and itself) in, the rows of three files the
        // folder lacks out, the package's row in.
        assert_eq!(readme.lines().count(), PYTHON_README.lines().count() + 2 - 3 + 1);
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
