//! The scenarios the command line offers when none is named: the built-in
//! ones, which work from any directory, and a local `scenarios/` folder when
//! there is one (`list`, and `mutants` without `--scenario`).

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::scenario::builtin::{BUILTINS, Kind};
use crate::scenario::{self, Loaded};

/// The folder of local scenarios when none is given.
const DEFAULT_DIR: &str = "scenarios";

/// The scenarios `mutants` runs by default: every `*.toml` directly in
/// `scenarios/` when that folder holds any (so a checkout's edits count),
/// else the built-in scenarios. Demonstrations are expected to fail, so
/// neither includes them.
pub fn default_set() -> anyhow::Result<Vec<Loaded>> {
    let dir = Path::new(DEFAULT_DIR);
    let paths = if dir.is_dir() { files_in(dir)? } else { Vec::new() };
    if paths.is_empty() {
        let builtins = BUILTINS.iter().filter(|builtin| builtin.kind == Kind::Scenario);
        return Ok(builtins.map(|builtin| builtin.load()).collect::<Result<_, _>>()?);
    }
    Ok(paths
        .iter()
        .map(|path| scenario::load(path))
        .collect::<Result<_, _>>()?)
}

/// A folder of scenario files and its `demonstrations/` subfolder.
struct Folder {
    dir: PathBuf,
    scenarios: Vec<PathBuf>,
    demonstrations: Option<(PathBuf, Vec<PathBuf>)>,
}

/// Prints the built-in scenarios, then those in `dir`. An explicit `dir`
/// must exist; the default `scenarios` is listed only if it does. The
/// folder is read before anything is printed, so bad input prints only its error.
pub fn print_list(dir: Option<&Path>) -> anyhow::Result<()> {
    let folder = match dir {
        Some(dir) => Some(folder(dir)?),
        None => {
            let dir = Path::new(DEFAULT_DIR);
            if dir.is_dir() { Some(folder(dir)?) } else { None }
        }
    };
    for (kind, title) in [
        (
            Kind::Scenario,
            "built-in scenarios (run one by name, `crashsim run smoke`; `crashsim show NAME` prints its TOML):",
        ),
        (
            Kind::Demonstration,
            "\nbuilt-in demonstrations (hazards shown, expected to fail):",
        ),
        (
            Kind::Scope,
            "\nbuilt-in scopes (tiny; `crashsim explore NAME` runs every schedule up to a bound):",
        ),
    ] {
        outln!("{title}");
        let section: Vec<_> = BUILTINS.iter().filter(|builtin| builtin.kind == kind).collect();
        let width = section
            .iter()
            .map(|builtin| builtin.name.len())
            .max()
            .unwrap_or(0)
            .max(16);
        for builtin in section {
            match builtin.load() {
                Ok(loaded) => outln!("  {:<width$} {}", builtin.name, loaded.scenario.description),
                Err(error) => outln!("  {:<width$} INVALID: {error}", builtin.name),
            }
        }
    }
    let Some(folder) = folder else { return Ok(()) };
    outln!("\nscenarios in {} (run one by its path):", folder.dir.display());
    print_files(&folder.scenarios);
    if let Some((dir, paths)) = &folder.demonstrations {
        outln!(
            "\ndemonstrations in {} (hazards shown, expected to fail):",
            dir.display()
        );
        print_files(paths);
    }
    Ok(())
}

fn folder(dir: &Path) -> anyhow::Result<Folder> {
    let scenarios = files_in(dir)?;
    let demonstrations = dir.join("demonstrations");
    let demonstrations = if demonstrations.is_dir() {
        let paths = files_in(&demonstrations)?;
        Some((demonstrations, paths))
    } else {
        None
    };
    Ok(Folder {
        dir: dir.to_path_buf(),
        scenarios,
        demonstrations,
    })
}

fn files_in(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    scenario::files_in(dir).with_context(|| format!("{}: cannot list scenarios", dir.display()))
}

fn print_files(paths: &[PathBuf]) {
    if paths.is_empty() {
        outln!("  (none)");
    }
    for path in paths {
        match scenario::load(path) {
            Ok(loaded) => outln!("  {:<16} {}", loaded.name, loaded.scenario.description),
            Err(error) => outln!("  {:<16} INVALID: {error}", path.display()),
        }
    }
}
