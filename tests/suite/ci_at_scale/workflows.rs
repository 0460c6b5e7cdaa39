//! The shipped CI files are valid: `.github/workflows/crashsim.yml` and
//! `.gitlab-ci.yml` parse as YAML, every crashsim command in their scripts
//! is accepted by the CLI's own argument parser, their scenario globs match
//! shipped scenarios, and each matrix of partitions runs every share.

use std::collections::BTreeSet;
use std::path::Path;

use clap::Parser;
use crashsim::cli::{Cli, Command};
use yaml_rust2::{Yaml, YamlLoader};

fn load(relative: &str) -> Yaml {
    let text = std::fs::read_to_string(super::common::root().join(relative)).expect("the CI file exists");
    let mut documents = YamlLoader::load_from_str(&text).unwrap_or_else(|error| panic!("{relative}: {error}"));
    assert_eq!(documents.len(), 1, "{relative}: one YAML document");
    documents.remove(0)
}

/// The words of each command in a shell script: continuations joined,
/// one command per line or `&&`, CI expressions replaced by job 1's values.
fn commands(script: &str) -> Vec<Vec<String>> {
    let script = script.replace("\\\n", " ");
    let script = script
        .replace("${{ matrix.partition }}", "1")
        .replace("$CI_NODE_INDEX", "1");
    script
        .lines()
        .flat_map(|line| line.split("&&"))
        .map(super::common::shell::words)
        .filter(|words| !words.is_empty())
        .collect()
}

/// Checks one crashsim command; returns its partition's N, if it has one.
fn check(file: &str, words: &[String]) -> Option<u64> {
    let root = super::common::root();
    let mut argv = vec!["crashsim".to_string()];
    for word in &words[1..] {
        match word.strip_prefix("scenarios/").and_then(|rest| rest.split_once('*')) {
            Some((prefix, suffix)) => {
                let mut matched: Vec<String> = std::fs::read_dir(root.join("scenarios"))
                    .expect("scenarios/")
                    .filter_map(Result::ok)
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.starts_with(prefix) && name.ends_with(suffix))
                    .map(|name| format!("scenarios/{name}"))
                    .collect();
                assert!(!matched.is_empty(), "{file}: {word} matches no shipped scenario");
                matched.sort();
                argv.extend(matched);
            }
            None => argv.push(word.clone()),
        }
    }
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|error| panic!("{file}: `{}`: {error}", words.join(" ")));
    if let Command::Run(run) = &cli.command {
        for scenario in &run.scenarios {
            assert!(
                root.join(scenario).is_file(),
                "{file}: {} is not a shipped file",
                scenario.display()
            );
        }
        if let Some(dir) = &run.regressions {
            assert!(root.join(dir).is_dir(), "{file}: {}", dir.display());
        }
        if let Some(text) = &run.partition {
            let partition = crashsim::runner::Partition::parse(text).unwrap_or_else(|error| panic!("{file}: {error}"));
            return Some(partition.total);
        }
    }
    None
}

fn is_crashsim(words: &[String]) -> bool {
    words
        .first()
        .is_some_and(|first| Path::new(first).file_name().is_some_and(|name| name == "crashsim"))
}

#[test]
fn the_github_workflow_runs_only_commands_the_cli_accepts() {
    let file = ".github/workflows/crashsim.yml";
    let workflow = load(file);
    let jobs = workflow["jobs"].as_hash().expect("jobs");
    let mut seen = BTreeSet::new();
    for (name, job) in jobs {
        let name = name.as_str().expect("a job name");
        let matrix: Option<Vec<i64>> = job["strategy"]["matrix"]["partition"].as_vec().map(|values| {
            values
                .iter()
                .map(|value| value.as_i64().expect("a job number"))
                .collect()
        });
        let steps = job["steps"]
            .as_vec()
            .unwrap_or_else(|| panic!("{file}: job {name} has steps"));
        for step in steps {
            let Some(script) = step["run"].as_str() else {
                assert!(step["uses"].as_str().is_some(), "{file}: {name}: a step runs or uses");
                continue;
            };
            for command in commands(script).into_iter().filter(|words| is_crashsim(words)) {
                if let Some(total) = check(file, &command) {
                    let matrix = matrix
                        .clone()
                        .unwrap_or_else(|| panic!("{file}: {name} partitions without a matrix"));
                    assert_eq!(
                        matrix,
                        (1..=total as i64).collect::<Vec<_>>(),
                        "{file}: {name} runs every share"
                    );
                }
                seen.insert(format!("{name}: {}", command[1..3.min(command.len())].join(" ")));
            }
        }
    }
    for expected in [
        "gate: run scenarios/*.toml",
        "regressions: run --regressions",
        "merge: report merge",
        "nightly: run scenarios/swarm.toml",
        "nightly-merge: report merge",
    ] {
        assert!(seen.contains(expected), "{file}: no `{expected}` in {seen:?}");
    }
}

#[test]
fn the_gitlab_pipeline_runs_only_commands_the_cli_accepts() {
    let file = ".gitlab-ci.yml";
    let pipeline = load(file);
    let mut seen = BTreeSet::new();
    for (name, job) in pipeline.as_hash().expect("a mapping") {
        let name = name.as_str().expect("a key");
        let Some(script) = job["script"].as_vec() else {
            continue;
        };
        for line in script {
            let line = line
                .as_str()
                .unwrap_or_else(|| panic!("{file}: {name}: script lines are strings"));
            for command in commands(line).into_iter().filter(|words| is_crashsim(words)) {
                // GitLab's `parallel:` gives the share through CI_NODE_INDEX/TOTAL.
                assert!(
                    check(file, &command).is_none(),
                    "{file}: {name}: the share comes from the environment"
                );
                seen.insert(format!("{name}: {}", command[1..3.min(command.len())].join(" ")));
            }
        }
        if name == "gate" || name == "nightly" {
            assert_eq!(job["parallel"].as_i64(), Some(4), "{file}: {name} runs 4 partitions");
        }
    }
    for expected in [
        "gate: run scenarios/*.toml",
        "nightly: run scenarios/swarm.toml",
        "regressions: run --regressions",
        "merge: report merge",
    ] {
        assert!(seen.contains(expected), "{file}: no `{expected}` in {seen:?}");
    }
}

#[test]
fn shell_words_split_like_a_shell() {
    assert_eq!(super::common::shell::words(r#"a "b c" 'd' e"#), ["a", "b c", "d", "e"]);
    assert_eq!(commands("x \\\n  y && z"), [vec!["x", "y"], vec!["z"]]);
}
