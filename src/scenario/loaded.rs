//! `Loaded`: a validated scenario and where it came from, and the two ways
//! to get one: `load` reads a file; `resolve` takes what a user types, a
//! path if that file exists, else the name of a built-in scenario.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::{Scenario, ScenarioError, builtin, parse};

/// Where a scenario came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A file; `Loaded::path` is its path.
    File,
    /// Compiled into the binary; `Loaded::path` is its built-in name (`smoke`).
    Builtin,
}

/// A scenario with the name and path it was loaded from.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The file stem: `smoke` for `scenarios/smoke.toml` and for the built-in `smoke`.
    pub name: String,
    /// The file, or for a built-in scenario its name (`smoke`,
    /// `demonstrations/ghost_effect`): either way what `resolve` takes back.
    pub path: PathBuf,
    pub scenario: Scenario,
    /// The mutant run instead of the scenario's `store`, if any (`--mutant`).
    pub mutant: Option<String>,
    /// The name of the outside store run instead (`--sut`), for labels.
    pub sut: Option<String>,
    pub source: Source,
}

impl Loaded {
    /// Runs `mutant` (any implementation name) instead of the scenario's store.
    pub fn with_mutant(mut self, mutant: &str) -> Result<Loaded, String> {
        if crate::mutants::resolve(mutant).is_none() {
            return Err(format!(
                "unknown mutant {mutant:?}; known: {}",
                crate::mutants::names().join(", ")
            ));
        }
        self.scenario.store = mutant.to_string();
        self.mutant = Some(mutant.to_string());
        Ok(self)
    }

    /// Labels the scenario with the outside store run instead of its own.
    pub fn with_sut(mut self, name: &str) -> Loaded {
        self.sut = Some(name.to_string());
        self
    }

    /// The name reports and results use: `smoke`, or `smoke+no_dedup` with
    /// a mutant, or `smoke+example_store` with an outside store. An outside
    /// store named like one of crashsim's own implementations gets
    /// `-outside` after its name (`smoke+no_dedup-outside`), so its report
    /// folder is never the built-in's.
    pub fn label(&self) -> String {
        match (&self.mutant, &self.sut) {
            (Some(mutant), _) => format!("{}+{mutant}", self.name),
            (None, Some(sut)) => {
                let sut = sanitize(sut);
                let own = crate::mutants::resolve(&sut).is_some();
                format!("{}+{sut}{}", self.name, if own { "-outside" } else { "" })
            }
            (None, None) => self.name.clone(),
        }
    }

    /// What to pass back on a command line (`replay`, `shrink`) to get this
    /// scenario again: the file's path, or the built-in name.
    pub fn argument(&self) -> String {
        self.path.display().to_string()
    }

    /// Where the scenario came from, for messages: its path, or `built-in`.
    pub fn origin(&self) -> String {
        match self.source {
            Source::File => self.path.display().to_string(),
            Source::Builtin => "built-in".to_string(),
        }
    }
}

/// `name` with anything but letters, digits, `-`, `_` and `.` replaced, for
/// a folder name.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The `*.toml` files directly in `dir`, sorted: scenarios, or capsules.
pub fn files_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.is_file() && path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    paths.sort();
    Ok(paths)
}

/// Reads and validates a scenario file.
pub fn load(path: &Path) -> Result<Loaded, ScenarioError> {
    let text = fs::read_to_string(path).map_err(|source| ScenarioError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    from_file(path, &text)
}

/// The scenario a command-line argument names: the file at `arg` if there
/// is one, else the built-in scenario of that name (`smoke`, `smoke.toml`,
/// `demonstrations/ghost_effect`, `ghost_effect`), else an error that says
/// there is no such file and lists the built-in names.
pub fn resolve(arg: &Path) -> Result<Loaded, ScenarioError> {
    let source = match fs::read_to_string(arg) {
        Ok(text) => return from_file(arg, &text),
        Err(source) => source,
    };
    let missing = source.kind() == ErrorKind::NotFound;
    match builtin::find(arg) {
        Some(builtin) if missing || arg.is_dir() => builtin.load(),
        _ if missing => Err(ScenarioError::NotFound {
            path: arg.to_path_buf(),
        }),
        _ => Err(ScenarioError::Read {
            path: arg.to_path_buf(),
            source,
        }),
    }
}

fn from_file(path: &Path, text: &str) -> Result<Loaded, ScenarioError> {
    let scenario = parse(text, path)?;
    let name = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario".to_string());
    Ok(Loaded {
        name,
        path: path.to_path_buf(),
        scenario,
        mutant: None,
        sut: None,
        source: Source::File,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name)
    }

    #[test]
    fn a_file_wins_over_a_builtin_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smoke.toml");
        fs::write(&path, "description = \"mine\"\n").unwrap();
        let loaded = resolve(&path).unwrap();
        assert_eq!(loaded.source, Source::File);
        assert_eq!(loaded.scenario.description, "mine");
        assert_eq!(loaded.name, "smoke");
        assert_eq!(loaded.origin(), path.display().to_string());
    }

    #[test]
    fn a_builtin_loads_by_name_and_names_itself_for_replay() {
        let loaded = resolve(Path::new("ghost_effect.toml")).unwrap();
        assert_eq!(loaded.source, Source::Builtin);
        assert_eq!(loaded.name, "ghost_effect");
        assert_eq!(loaded.argument(), "demonstrations/ghost_effect");
        assert_eq!(loaded.origin(), "built-in");
        let file = load(&shipped("demonstrations/ghost_effect.toml")).unwrap();
        assert_eq!(loaded.scenario.description, file.scenario.description);
    }

    #[test]
    fn neither_file_nor_builtin_names_the_cause_once_and_the_builtins() {
        let error = resolve(Path::new("no/such/smoke-ish.toml")).unwrap_err();
        assert!(matches!(error, ScenarioError::NotFound { .. }), "{error:?}");
        let message = error.to_string();
        assert!(message.starts_with("no/such/smoke-ish.toml: "), "{message}");
        assert_eq!(message.matches("no such file").count(), 1, "{message}");
        assert!(message.contains("smoke, contention"), "{message}");
        assert!(std::error::Error::source(&error).is_none());
    }

    #[test]
    fn a_directory_is_not_a_scenario() {
        let dir = tempfile::tempdir().unwrap();
        let error = resolve(dir.path()).unwrap_err();
        assert!(matches!(error, ScenarioError::Read { .. }), "{error:?}");
    }

    #[test]
    fn an_outside_store_named_like_a_builtin_never_shares_its_folder() {
        let smoke = resolve(&shipped("smoke.toml")).unwrap();
        assert_eq!(smoke.clone().with_mutant("no_dedup").unwrap().label(), "smoke+no_dedup");
        assert_eq!(smoke.clone().with_sut("no_dedup").label(), "smoke+no_dedup-outside");
        assert_eq!(smoke.clone().with_sut("example store").label(), "smoke+example_store");
    }
}
