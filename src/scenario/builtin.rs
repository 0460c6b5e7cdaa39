//! Built-in scenarios: the shipped `scenarios/*.toml`,
//! `scenarios/demonstrations/*.toml` and `scenarios/explore/*.toml`,
//! compiled into the binary.
//!
//! crashsim is often run from another repository (after `cargo install`),
//! with no `scenarios/` folder beside it; the shipped scenarios still run by
//! name (`crashsim run smoke`) and can be written out as a starting point
//! (`crashsim show smoke --out my.toml`). The regression capsules in
//! `scenarios/regressions/` are not built in: they pin runs of this
//! checkout's code and belong to its test suite. A test fails when a file in
//! `scenarios/` is missing from the table, so the table cannot drift.

use std::path::{Path, PathBuf};

use super::{Loaded, ScenarioError, Source};

/// What a built-in scenario is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Expected to pass against the reference (`scenarios/`).
    Scenario,
    /// Shows a hazard and is expected to fail (`scenarios/demonstrations/`).
    Demonstration,
    /// A tiny scope whose schedules `crashsim explore` runs every one of
    /// (`scenarios/explore/`).
    Scope,
}

/// One scenario compiled into the binary.
#[derive(Debug)]
pub struct Builtin {
    /// What `resolve` takes: the path under `scenarios/` without `.toml`
    /// (`smoke`, `demonstrations/ghost_effect`).
    pub name: &'static str,
    pub kind: Kind,
    /// The file's text, byte for byte.
    pub text: &'static str,
}

impl Builtin {
    /// The file stem, as `Loaded::name` has it for a file: `ghost_effect`.
    pub fn stem(&self) -> &'static str {
        self.name.rsplit('/').next().unwrap_or(self.name)
    }

    /// The scenario, validated; its `path` is the built-in name, which is
    /// what `resolve` takes back. (A test parses every built-in, so the
    /// error is for completeness, not a case a user meets.)
    pub fn load(&self) -> Result<Loaded, ScenarioError> {
        let path = PathBuf::from(self.name);
        Ok(Loaded {
            name: self.stem().to_string(),
            scenario: super::parse(self.text, &path)?,
            path,
            mutant: None,
            sut: None,
            source: Source::Builtin,
        })
    }
}

macro_rules! builtin {
    ($name:literal, $kind:expr) => {
        Builtin {
            name: $name,
            kind: $kind,
            text: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/", $name, ".toml")),
        }
    };
}

/// Every built-in scenario: the scenarios first, then the demonstrations,
/// then the scopes.
pub const BUILTINS: [Builtin; 16] = [
    builtin!("smoke", Kind::Scenario),
    builtin!("contention", Kind::Scenario),
    builtin!("crash_storm", Kind::Scenario),
    builtin!("swarm", Kind::Scenario),
    builtin!("sync_normal", Kind::Scenario),
    builtin!("group_commit", Kind::Scenario),
    builtin!("power_loss", Kind::Scenario),
    builtin!("leases", Kind::Scenario),
    builtin!("retries", Kind::Scenario),
    builtin!("clocks", Kind::Scenario),
    builtin!("interleave", Kind::Scenario),
    builtin!("backups", Kind::Scenario),
    builtin!("restores", Kind::Scenario),
    builtin!("demonstrations/ghost_effect", Kind::Demonstration),
    builtin!("demonstrations/short_retention", Kind::Demonstration),
    builtin!("explore/two_receivers", Kind::Scope),
];

/// The built-in scenario `arg` names: its name with or without `.toml`
/// (`smoke`, `smoke.toml`, `demonstrations/ghost_effect`), or a
/// demonstration or a scope by its stem alone (`ghost_effect`).
pub fn find(arg: &Path) -> Option<&'static Builtin> {
    let text = arg.to_str()?;
    let name = text.strip_suffix(".toml").unwrap_or(text);
    if let Some(exact) = BUILTINS.iter().find(|builtin| builtin.name == name) {
        return Some(exact);
    }
    if name.contains('/') {
        return None;
    }
    let mut by_stem = BUILTINS.iter().filter(|builtin| builtin.stem() == name);
    match (by_stem.next(), by_stem.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    }
}

/// The names, comma-separated, for messages.
pub fn names() -> String {
    BUILTINS
        .iter()
        .map(|builtin| builtin.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The `*.toml` files of a folder under `scenarios/`, as built-in names.
    fn shipped_in(folder: &str) -> BTreeSet<String> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let dir = root.join(folder);
        let paths = crate::scenario::files_in(&dir).expect("the folder lists");
        paths
            .iter()
            .map(|path| {
                let relative = path.strip_prefix(&root).expect("under scenarios/");
                let name = relative.with_extension("");
                name.to_str().expect("UTF-8 names").replace('\\', "/")
            })
            .collect()
    }

    #[test]
    fn every_shipped_file_is_built_in_and_nothing_else() {
        let mut shipped = shipped_in("");
        shipped.extend(shipped_in("demonstrations"));
        shipped.extend(shipped_in("explore"));
        let table: BTreeSet<String> = BUILTINS.iter().map(|builtin| builtin.name.to_string()).collect();
        assert_eq!(
            shipped, table,
            "scenarios/ and the BUILTINS table in src/scenario/builtin.rs differ"
        );
        for builtin in &BUILTINS {
            let expected = match builtin.kind {
                Kind::Scenario => !builtin.name.contains('/'),
                Kind::Demonstration => builtin.name.starts_with("demonstrations/"),
                Kind::Scope => builtin.name.starts_with("explore/"),
            };
            assert!(expected, "{} has the wrong kind", builtin.name);
        }
    }

    #[test]
    fn every_builtin_loads_and_describes_itself() {
        for builtin in &BUILTINS {
            let loaded = builtin
                .load()
                .unwrap_or_else(|error| panic!("built-in {}: {error}", builtin.name));
            assert!(
                !loaded.scenario.description.is_empty(),
                "{} has no description",
                builtin.name
            );
            assert_eq!(loaded.source, Source::Builtin);
            assert_eq!(loaded.argument(), builtin.name);
        }
    }

    #[test]
    fn stems_are_unique_so_a_stem_names_one_scenario() {
        let stems: BTreeSet<&str> = BUILTINS.iter().map(Builtin::stem).collect();
        assert_eq!(stems.len(), BUILTINS.len());
    }

    #[test]
    fn names_resolve_with_or_without_extension_and_folder() {
        let name_of = |arg: &str| find(Path::new(arg)).map(|builtin| builtin.name);
        assert_eq!(name_of("smoke"), Some("smoke"));
        assert_eq!(name_of("smoke.toml"), Some("smoke"));
        assert_eq!(
            name_of("demonstrations/ghost_effect"),
            Some("demonstrations/ghost_effect")
        );
        assert_eq!(
            name_of("demonstrations/ghost_effect.toml"),
            Some("demonstrations/ghost_effect")
        );
        assert_eq!(name_of("ghost_effect"), Some("demonstrations/ghost_effect"));
        assert_eq!(name_of("scenarios/smoke.toml"), None);
        assert_eq!(name_of("other/smoke"), None);
        assert_eq!(name_of("nope"), None);
        assert_eq!(name_of(""), None);
    }
}
