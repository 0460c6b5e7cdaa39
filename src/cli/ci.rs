//! `crashsim ci init github|gitlab --sut CMD`: the CI file that gates the
//! user's own store, written into their repository. The templates are
//! `ci/templates/*.yml` (a user may copy them by hand); this fills in their
//! `env`/`variables` block: the adapter command, and crashsim pinned to this
//! binary's own version (the wheel `pip install crashsim==VERSION` installs,
//! binary and SDK) and, for the `cargo install` alternative, to the commit it
//! was built from (and the repository `cargo install` recorded it came from,
//! when it did), so the gate runs the crashsim the user tried.
//!
//! crashsim's own `.github/workflows/crashsim.yml` and `.gitlab-ci.yml` gate
//! crashsim itself (its reference against its scenario files): these are
//! not those.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};

use crate::exit::Exit;
use crate::report::atomic;

#[derive(Args, Debug)]
pub struct CiCommand {
    #[command(subcommand)]
    pub command: CiSubcommand,
}

#[derive(Subcommand, Debug)]
pub enum CiSubcommand {
    /// Write a CI file that gates your store (--sut) on every push and pull
    /// request: the built-in scenarios in four partitions, your regression
    /// corpus, one merged report with JUnit, nightly swarm.
    Init(InitArgs),
}

#[derive(Args, Debug)]
pub struct InitArgs {
    /// The CI system.
    pub system: System,
    /// The command that serves your store over the adapter protocol, as
    /// your CI job will run it from the repository's root.
    #[arg(long, value_name = "CMD")]
    pub sut: String,
    /// Where to write it (default .github/workflows/crashsim.yml for
    /// github, .gitlab-ci.yml for gitlab).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace the file if it exists.
    #[arg(long)]
    pub force: bool,
    /// The crashsim repository for the file's `cargo install` alternative
    /// (default: the one `cargo install` recorded for this binary, if any).
    #[arg(long, value_name = "URL")]
    pub git: Option<String>,
    /// The crashsim commit or tag the `cargo install` alternative pins
    /// (default: this binary's commit). The wheel is pinned to this
    /// binary's version.
    #[arg(long, value_name = "REV")]
    pub rev: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum System {
    Github,
    Gitlab,
}

impl System {
    pub fn template(self) -> &'static str {
        match self {
            System::Github => include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/ci/templates/github.yml")),
            System::Gitlab => include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/ci/templates/gitlab.yml")),
        }
    }

    fn default_out(self) -> &'static str {
        match self {
            System::Github => ".github/workflows/crashsim.yml",
            System::Gitlab => ".gitlab-ci.yml",
        }
    }
}

pub fn ci(command: &CiCommand) -> anyhow::Result<Exit> {
    let CiSubcommand::Init(args) = &command.command;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(args.system.default_out()));
    if !args.force && out.symlink_metadata().is_ok() {
        bail!("{}: already exists; pass --force to replace it", out.display());
    }
    let mut notes = Vec::new();
    let git = match &args.git {
        Some(git) => Some(git.clone()),
        None => installed_from(&cargo_home()),
    };
    if git.is_none() {
        notes.push(
            "for the `cargo install` alternative, set CRASHSIM_GIT to the crashsim repository's URL (or pass --git)"
                .to_string(),
        );
    }
    let rev = match &args.rev {
        Some(rev) => Some(rev.clone()),
        None => match crate::platform::git_commit() {
            "unknown" => None,
            commit => {
                if let Some(clean) = commit.strip_suffix("-dirty") {
                    notes.push(format!(
                        "this crashsim was built with uncommitted changes: CRASHSIM_REV pins {clean}, without them"
                    ));
                }
                Some(commit.trim_end_matches("-dirty").to_string())
            }
        },
    };
    if rev.is_none() {
        notes.push(
            "for the `cargo install` alternative, set CRASHSIM_REV to a crashsim commit or tag (or pass --rev)"
                .to_string(),
        );
    }
    let text = fill(
        args.system.template(),
        &[
            ("ADAPTER", Some(args.sut.as_str())),
            ("CRASHSIM_VERSION", Some(env!("CARGO_PKG_VERSION"))),
            ("CRASHSIM_GIT", git.as_deref()),
            ("CRASHSIM_REV", rev.as_deref()),
        ],
    )?;
    atomic::write(&out, text.as_bytes()).with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "note: {} written; it runs `{}` on the built-in scenarios, and your corpus in scenarios/regressions/",
        out.display(),
        args.sut
    );
    for note in notes {
        eprintln!("note: {note}");
    }
    Ok(Exit::Pass)
}

/// `template` with each `KEY: "…"` line of its variables set to the value
/// given (None keeps the template's), YAML-quoted.
pub fn fill(template: &str, values: &[(&str, Option<&str>)]) -> anyhow::Result<String> {
    let mut text = String::with_capacity(template.len());
    let mut found = Vec::new();
    for line in template.split_inclusive('\n') {
        let key = line.trim_start().split(':').next().unwrap_or_default();
        match values.iter().find(|(name, _)| *name == key) {
            Some((name, Some(value))) if line.starts_with("  ") && !found.contains(name) => {
                found.push(*name);
                let indent = &line[..line.len() - line.trim_start().len()];
                let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
                text.push_str(&format!("{indent}{name}: \"{escaped}\"\n"));
            }
            _ => text.push_str(line),
        }
    }
    for (name, value) in values {
        if value.is_some() && !found.contains(name) {
            bail!("crashsim bug: the CI template has no `{name}:` line to fill");
        }
    }
    Ok(text)
}

fn cargo_home() -> PathBuf {
    match std::env::var_os("CARGO_HOME") {
        Some(home) => PathBuf::from(home),
        None => Path::new(&std::env::var_os("HOME").unwrap_or_default()).join(".cargo"),
    }
}

/// The git repository `cargo install --git` recorded for crashsim in
/// `<cargo home>/.crates2.json` (keys such as `crashsim 0.1.0
/// (git+https://host/crashsim.git?rev=abc#<commit>)`), if there is one.
fn installed_from(cargo_home: &Path) -> Option<String> {
    let text = std::fs::read_to_string(cargo_home.join(".crates2.json")).ok()?;
    let installs: serde_json::Value = serde_json::from_str(&text).ok()?;
    installs
        .get("installs")?
        .as_object()?
        .keys()
        .find_map(|key| git_source(key))
}

fn git_source(key: &str) -> Option<String> {
    let source = key.strip_prefix("crashsim ")?.split_once("(git+")?.1;
    let end = source.find(['?', '#', ')']).unwrap_or(source.len());
    Some(source[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_cargo_install_recorded_is_found() {
        assert_eq!(
            git_source("crashsim 0.1.0 (git+https://example.com/org/crashsim.git?rev=abc123#abc1234567)").as_deref(),
            Some("https://example.com/org/crashsim.git")
        );
        assert_eq!(
            git_source("crashsim 0.1.0 (git+ssh://git@example.com/crashsim#0123)").as_deref(),
            Some("ssh://git@example.com/crashsim")
        );
        assert_eq!(git_source("crashsim 0.1.0 (path+file:///src/crashsim)"), None);
        assert_eq!(git_source("ripgrep 14.1.0 (git+https://x/y#1)"), None);
    }

    #[test]
    fn filling_sets_only_the_named_variables_quoted() {
        for system in [System::Github, System::Gitlab] {
            let text = fill(
                system.template(),
                &[("ADAPTER", Some(r#"python3 "my store.py" \x"#)), ("CRASHSIM_REV", None)],
            )
            .expect("filled");
            assert!(text.contains(r#"  ADAPTER: "python3 \"my store.py\" \\x""#), "{text}");
            assert!(text.contains("CRASHSIM_REV: \"main\""), "{text}");
            assert_eq!(text.lines().count(), system.template().lines().count());
        }
    }
}
