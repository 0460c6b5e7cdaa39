//! The CI templates a user copies (`ci/templates/`, `crashsim ci init`)
//! work: every crashsim command in them parses with the CLI's own parser
//! and names built-in scenarios, and their jobs, run by bash in a fresh
//! "user repository" holding the Python example as `my_adapter.py`, go from
//! nothing to a green merged report: the SDK of this crashsim installed
//! into a fresh virtual environment, every built-in scenario run in four
//! partitions, the user's regression corpus replayed, the partitions
//! merged with `--require-fired`, and the JUnit file written. crashsim is
//! installed by the templates' own `pip install crashsim==VERSION`, from
//! the wheel the user repository offers pip (`common::user_repo`: the real
//! one under `.ci/wheel`, a stand-in otherwise); the steps that are actions
//! (checkout, setup-python, artifacts) are left to the test, which makes
//! their moves itself.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use clap::Parser;
use common::shell::words;
use crashsim::cli::Cli;
use yaml_rust2::{Yaml, YamlLoader};

const PARTITIONS: u32 = 4;

fn load(relative: &str) -> Yaml {
    let text = std::fs::read_to_string(common::root().join(relative)).expect("the template exists");
    let mut documents = YamlLoader::load_from_str(&text).unwrap_or_else(|error| panic!("{relative}: {error}"));
    assert_eq!(documents.len(), 1, "{relative}: one YAML document");
    documents.remove(0)
}

fn strings(yaml: &Yaml) -> Vec<String> {
    match yaml {
        Yaml::Array(items) => items
            .iter()
            .filter_map(|item| item.as_str().map(String::from))
            .collect(),
        Yaml::String(text) => vec![text.clone()],
        _ => Vec::new(),
    }
}

/// The template's variables (`env:` or `variables:`).
fn variables(yaml: &Yaml, key: &str) -> BTreeMap<String, String> {
    let hash = yaml[key]
        .as_hash()
        .unwrap_or_else(|| panic!("the template has `{key}:`"));
    hash.iter()
        .map(|(name, value)| {
            let value = match value {
                Yaml::String(text) => text.clone(),
                Yaml::Integer(number) => number.to_string(),
                other => panic!("{name:?}: {other:?}"),
            };
            (name.as_str().expect("a variable's name").to_string(), value)
        })
        .collect()
}

/// Each job's shell scripts, in order: a GitHub job's `run` steps (a shell
/// each); a GitLab job's `before_script` (its own or the default) then its
/// `script`, in one shell.
fn jobs(yaml: &Yaml, github: bool) -> BTreeMap<String, Vec<String>> {
    let mut found = BTreeMap::new();
    let (jobs, reserved) = match github {
        true => (&yaml["jobs"], &[][..]),
        false => (yaml, &["stages", "variables", "default"][..]),
    };
    for (name, job) in jobs.as_hash().expect("jobs") {
        let name = name.as_str().expect("a job's name");
        if reserved.contains(&name) {
            continue;
        }
        let scripts = match github {
            true => job["steps"]
                .as_vec()
                .expect("steps")
                .iter()
                .filter_map(|step| step["run"].as_str().map(String::from))
                .collect(),
            false => {
                let before = match &job["before_script"] {
                    Yaml::BadValue => &yaml["default"]["before_script"],
                    own => own,
                };
                // One shell runs them all: an activated venv stays active.
                vec![[strings(before), strings(&job["script"])].concat().join("\n")]
            }
        };
        found.insert(name.to_string(), scripts);
    }
    found
}

/// `script` with the CI system's expressions and `$NAME`s replaced.
fn expand(script: &str, values: &BTreeMap<String, String>) -> String {
    let mut text = script.replace("\\\n", " ");
    let mut names: Vec<&String> = values.keys().collect();
    names.sort_by_key(|name| std::cmp::Reverse(name.len()));
    for name in names {
        let value = &values[name];
        text = text
            .replace(&format!("${{{{ matrix.{} }}}}", name.to_lowercase()), value)
            .replace(&format!("${{{{ env.{name} }}}}"), value)
            .replace(&format!("${{{name}}}"), value)
            .replace(&format!("${name}"), value);
    }
    text
}

/// Every crashsim command of the template parses, runs built-in scenarios
/// only, and runs the adapter its variables name.
fn check_commands(file: &str, github: bool) {
    let yaml = load(file);
    let mut values = variables(&yaml, if github { "env" } else { "variables" });
    let adapter = values["ADAPTER"].clone();
    for (name, value) in [("PARTITION", "1"), ("CI_NODE_INDEX", "1"), ("RUNNER_TEMP", "/tmp")] {
        values.insert(name.to_string(), value.to_string());
    }
    let mut seen = 0;
    for (job, scripts) in jobs(&yaml, github) {
        for script in scripts {
            for command in expand(&script, &values).lines().flat_map(|line| line.split("&&")) {
                let command = command.rsplit("||").next().unwrap_or(command);
                let words = words(command);
                if words.first().map(String::as_str) != Some("crashsim") {
                    continue;
                }
                seen += 1;
                let cli = Cli::try_parse_from(&words)
                    .unwrap_or_else(|error| panic!("{file}, job {job}: `{}`: {error}", words.join(" ")));
                if let crashsim::cli::Command::Run(run) = &cli.command {
                    for scenario in &run.scenarios {
                        assert!(
                            crashsim::scenario::builtin::find(scenario).is_some(),
                            "{file}, job {job}: {} is not a built-in scenario",
                            scenario.display()
                        );
                    }
                    if !run.scenarios.is_empty() {
                        assert_eq!(run.sut.sut.as_deref(), Some(adapter.as_str()), "{file}, job {job}");
                        assert!(run.skip_unsupported, "{file}, job {job}: without --skip-unsupported");
                    }
                }
            }
        }
    }
    assert!(seen >= 4, "{file}: only {seen} crashsim commands found");
    // The commented-out alternative (crashsim from source) parses too.
    let text = std::fs::read_to_string(common::root().join(file)).expect("the template");
    let mut alternative = 0;
    for line in text.lines() {
        // Indented: inside a job (the file's own notes start at column 0).
        let Some(comment) = line
            .strip_prefix("  ")
            .and_then(|line| line.trim_start().strip_prefix('#'))
        else {
            continue;
        };
        let comment = comment.trim_start().trim_start_matches("- ");
        for command in expand(comment, &values).split("&&") {
            if command.trim_start().starts_with("crashsim ") {
                let words = words(command);
                alternative += 1;
                Cli::try_parse_from(&words)
                    .unwrap_or_else(|error| panic!("{file}, the alternative: `{}`: {error}", words.join(" ")));
            }
        }
    }
    assert!(alternative >= 1, "{file}: the from-source alternative writes the SDK");
}

#[test]
fn the_github_template_runs_only_commands_the_cli_accepts() {
    check_commands("ci/templates/github.yml", true);
}

#[test]
fn the_gitlab_template_runs_only_commands_the_cli_accepts() {
    check_commands("ci/templates/gitlab.yml", false);
}

/// The user repository of `common::user_repo`, with the jobs' moves.
struct UserRepository(common::user_repo::UserRepository);

impl std::ops::Deref for UserRepository {
    type Target = common::user_repo::UserRepository;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl UserRepository {
    fn new(python: &str) -> UserRepository {
        UserRepository(common::user_repo::UserRepository::new(python))
    }

    /// Runs one job's scripts with bash -e, as the CI system would; panics
    /// with the output on failure.
    fn job(&self, name: &str, scripts: &[String], values: &BTreeMap<String, String>) {
        for script in scripts {
            let mut expanded = script.clone();
            for (key, value) in values {
                expanded = expanded
                    .replace(&format!("${{{{ matrix.{} }}}}", key.to_lowercase()), value)
                    .replace(&format!("${{{{ env.{key} }}}}"), value);
            }
            let output = Command::new("bash")
                .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &expanded])
                .current_dir(&self.dir)
                .env("PATH", &self.path)
                .env_remove("PYTHONPATH")
                .envs(self.pip_env())
                .envs(values)
                .output()
                .expect("bash runs");
            assert!(
                output.status.success(),
                "job {name}: `{expanded}` exited with {:?}\n{}{}",
                output.status.code(),
                common::stdout(&output),
                common::stderr(&output)
            );
        }
    }

    fn moved(&self, from: &str, to: &str) {
        let to = self.dir.join(to);
        std::fs::create_dir_all(to.parent().expect("a parent")).expect("a folder");
        std::fs::rename(self.dir.join(from), to).expect("moving a job's reports");
    }

    /// A passing seed of smoke saved as a capsule in the user's corpus,
    /// with the SDK a gate job installed (GitLab's in the job's `.venv`).
    fn corpus(&self, adapter: &str) {
        let path = format!("{}:{}", self.dir.join(".venv/bin").display(), self.path);
        let output = Command::new(env!("CARGO_BIN_EXE_crashsim"))
            .args(["replay", "smoke", "--seed", "3", "--sut", adapter, "--save-capsule"])
            .arg("scenarios/regressions/smoke-3.toml")
            .current_dir(&self.dir)
            .env("PATH", path)
            .output()
            .expect("crashsim runs");
        assert!(output.status.success(), "{}", common::stderr(&output));
    }

    /// The corpus job's JUnit file, which the template publishes: a
    /// passing test case for the capsule.
    fn regressions_reported(&self) {
        let junit = std::fs::read_to_string(self.dir.join("reports/regressions/junit.xml"))
            .expect("the regression corpus's JUnit file");
        assert!(junit.contains("smoke-3.toml") && !junit.contains("<failure"), "{junit}");
    }

    fn merged(&self) {
        let junit = std::fs::read_to_string(self.dir.join("reports/merged/junit.xml")).expect("the merged JUnit file");
        assert!(junit.contains("<testsuite"), "{junit}");
        assert!(self.dir.join("reports/merged/index.html").exists());
    }
}

/// The template's variables as a small run sets them: eight seeds per
/// scenario (two per partition: with fewer, a rare kill point of
/// `contention` never fires and `--require-fired` rightly fails the merge),
/// a budget that never binds.
fn small(file: &str, key: &str) -> BTreeMap<String, String> {
    let mut values = variables(&load(file), key);
    values.insert("SEEDS".into(), (2 * PARTITIONS).to_string());
    values.insert("TIME_BUDGET".into(), "10m".into());
    values.insert("CI".into(), "true".into());
    values
}

#[test]
fn the_github_template_gates_the_python_example_end_to_end() {
    let Some(python) = common::python() else { return };
    let file = "ci/templates/github.yml";
    let jobs = jobs(&load(file), true);
    let repo = UserRepository::new(&python);
    let mut values = small(file, "env");
    values.insert("RUNNER_TEMP".into(), repo.dir.join("../runner").display().to_string());
    for partition in 1..=PARTITIONS {
        values.insert("PARTITION".into(), partition.to_string());
        repo.job("gate", &jobs["gate"], &values);
        repo.moved("reports/part", &format!("parts/reports-{partition}"));
    }
    repo.corpus(&values["ADAPTER"]);
    repo.job("regressions", &jobs["regressions"], &values);
    repo.regressions_reported();
    repo.job("merge", &jobs["merge"], &values);
    repo.merged();
}

#[test]
fn the_gitlab_template_gates_the_python_example_end_to_end() {
    let Some(python) = common::python() else { return };
    let file = "ci/templates/gitlab.yml";
    let jobs = jobs(&load(file), false);
    let repo = UserRepository::new(&python);
    let mut values = small(file, "variables");
    // Its gate mechanics, on two scenarios: the GitHub test runs them all.
    values.insert("SCENARIOS".into(), "smoke leases".into());
    values.insert("CI_PROJECT_DIR".into(), repo.dir.display().to_string());
    values.insert("CI_NODE_TOTAL".into(), PARTITIONS.to_string());
    for partition in 1..=PARTITIONS {
        values.insert("CI_NODE_INDEX".into(), partition.to_string());
        repo.job("gate", &jobs["gate"], &values);
    }
    repo.corpus(&values["ADAPTER"]);
    repo.job("regressions", &jobs["regressions"], &values);
    repo.regressions_reported();
    repo.job("merge", &jobs["merge"], &values);
    repo.merged();
}

/// The merge job requires every declared fault to fire on pushes and
/// nightly runs, not on a pull (merge) request's short run, where a rare
/// kill point reached and never fired is expected: its step runs here with
/// a `crashsim` that only prints its arguments.
#[test]
fn a_pull_request_merges_without_requiring_every_fault_to_fire() {
    let temp = tempfile::tempdir().expect("a temp dir");
    let stub = temp.path().join("crashsim");
    std::fs::write(&stub, "#!/bin/sh\necho \"crashsim $*\"\n").expect("the stub");
    std::fs::set_permissions(&stub, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let path = format!("{}:/usr/bin:/bin", temp.path().display());
    for (file, github, event, pull) in [
        ("ci/templates/github.yml", true, "GITHUB_EVENT_NAME", "pull_request"),
        (
            "ci/templates/gitlab.yml",
            false,
            "CI_PIPELINE_SOURCE",
            "merge_request_event",
        ),
    ] {
        let jobs = jobs(&load(file), github);
        let merge = jobs["merge"]
            .iter()
            .find(|script| script.contains("crashsim report merge"))
            .expect("the merge step");
        let merge = merge
            .lines()
            .skip_while(|line| !line.trim_start().starts_with("if "))
            .collect::<Vec<_>>()
            .join("\n");
        for (source, required) in [(pull, false), ("push", true), ("schedule", true)] {
            let output = Command::new("bash")
                .args(["-eo", "pipefail", "-c", &merge])
                .env("PATH", &path)
                .env(event, source)
                .output()
                .expect("bash runs");
            let said = common::stdout(&output);
            assert!(output.status.success(), "{file}: {said}{}", common::stderr(&output));
            assert!(said.starts_with("crashsim report merge"), "{file}: {said}");
            assert_eq!(
                said.contains("--require-fired"),
                required,
                "{file}, {event}={source}: {said}"
            );
        }
    }
}
