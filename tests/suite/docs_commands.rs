//! The README and docs/ show only commands that work: every `crashsim …`
//! line (and `cargo run --release -- …`, which is the same from a
//! checkout) in a fenced code block parses with the CLI's own parser, and
//! every scenario it names is a built-in one, so it runs with an installed
//! binary from an empty directory. The README stays a guide: under 400
//! lines.

use crate::common;

use std::path::{Path, PathBuf};

use clap::Parser;
use common::shell::{strip_comment, words};
use crashsim::cli::{Cli, Command};

/// Values for the shell variables the docs use; any other variable
/// becomes `x`.
const VARIABLES: [(&str, &str); 4] = [
    ("K", "1"),
    ("ADAPTER", "python3 my_adapter.py"),
    ("CRASHSIM_GIT", "https://example.com/crashsim.git"),
    ("CRASHSIM_REV", "v1"),
];

/// Words that end a command: what follows is the shell's, not crashsim's.
const ENDS: [&str; 7] = [">", ">>", "|", "||", "&&", ";", "&"];

/// One command found in a document.
struct Found {
    file: String,
    line: usize,
    text: String,
}

/// README.md and every docs/*.md, relative to the repository root.
fn documents() -> Vec<String> {
    let mut files = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(common::root().join("docs"))
        .expect("docs/ lists")
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The info strings of fenced blocks that hold commands (or their output).
const SHELL_FENCES: [&str; 6] = ["", "sh", "bash", "shell", "console", "text"];

/// The lines inside fenced code blocks of shell commands, with their line
/// numbers, backslash continuations joined (numbered by their first line).
fn fenced_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    // The open fence's marker, and whether its block holds commands.
    let mut fence: Option<(String, bool)> = None;
    // A line continued with a backslash: its number and its text so far.
    let mut pending: Option<(usize, String)> = None;
    for (index, raw) in text.lines().enumerate() {
        let trimmed = raw.trim_start();
        let marker: String = trimmed.chars().take_while(|&c| c == '`' || c == '~').collect();
        match &fence {
            None if marker.len() >= 3 => {
                let info = trimmed[marker.len()..].split_whitespace().next().unwrap_or("");
                fence = Some((marker, SHELL_FENCES.contains(&info)));
            }
            Some((open, _)) if marker.len() >= open.len() && trimmed.trim_end() == marker => fence = None,
            Some((_, false)) => {}
            Some((_, true)) => {
                let (number, mut joined) = pending.take().unwrap_or((index + 1, String::new()));
                joined.push_str(trimmed);
                match joined.strip_suffix('\\') {
                    Some(rest) => pending = Some((number, format!("{rest} "))),
                    None => lines.push((number, joined)),
                }
            }
            None => {}
        }
    }
    lines
}

/// A usage synopsis rather than a command: `<SCENARIO>`, `[--seeds N]`.
fn is_synopsis(line: &str) -> bool {
    let placeholder = line.split('<').skip(1).any(|rest| {
        rest.split_once('>')
            .is_some_and(|(inside, _)| !inside.is_empty() && inside.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
    });
    placeholder || line.contains(" [")
}

/// `$NAME` and `${NAME}` replaced by their values.
fn substitute(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, tail) = match after.strip_prefix('{') {
            Some(braced) => match braced.split_once('}') {
                Some((name, tail)) => (name, tail),
                None => (braced, ""),
            },
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], &after[end..])
            }
        };
        if name.is_empty() {
            out.push('$');
        } else {
            let value = VARIABLES
                .iter()
                .find(|(known, _)| *known == name)
                .map_or("x", |(_, value)| value);
            out.push_str(value);
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// Every crashsim command in the README and docs/.
fn commands() -> Vec<Found> {
    let mut found = Vec::new();
    for file in documents() {
        let text =
            std::fs::read_to_string(common::root().join(&file)).unwrap_or_else(|error| panic!("{file}: {error}"));
        for (line, raw) in fenced_lines(&text) {
            let text = strip_comment(raw.strip_prefix("$ ").unwrap_or(&raw)).trim().to_string();
            let is_command = text.starts_with("crashsim ") || text.starts_with("cargo run --release -- ");
            if is_command && !is_synopsis(&text) {
                found.push(Found {
                    file: file.clone(),
                    line,
                    text,
                });
            }
        }
    }
    found
}

/// The argv crashsim would see.
fn argv(text: &str) -> Vec<String> {
    let words = words(&substitute(text));
    let skip = if words[0] == "crashsim" { 1 } else { 4 };
    let mut argv = vec!["crashsim".to_string()];
    argv.extend(
        words[skip..]
            .iter()
            .take_while(|word| !ENDS.contains(&word.as_str()) && !word.starts_with('>'))
            .cloned(),
    );
    argv
}

/// The scenario arguments of a parsed command.
fn scenarios(cli: &Cli) -> Vec<PathBuf> {
    match &cli.command {
        Command::Run(run) => run.scenarios.clone(),
        Command::Replay(replay) => replay.scenario.iter().cloned().collect(),
        Command::Shrink(shrink) => vec![shrink.scenario.clone()],
        Command::Mutants(mutants) => mutants.scenario.clone(),
        Command::Durability(durability) => durability.exhaustive.iter().cloned().collect(),
        Command::Show(show) => vec![PathBuf::from(&show.name)],
        _ => Vec::new(),
    }
}

/// A built-in scenario, or a file of the reader's own (`my.toml`), never a
/// path into this checkout (`scenarios/…`, `tests/…`), which an installed
/// binary run elsewhere does not have.
fn scenario_problem(scenario: &Path) -> Option<String> {
    if crashsim::scenario::builtin::find(scenario).is_some() {
        return None;
    }
    let text = scenario.to_string_lossy();
    let own_file = text.ends_with(".toml") && !text.starts_with("scenarios/") && !text.starts_with("tests/");
    (!own_file).then(|| {
        format!(
            "scenario {text} is neither built in ({}) nor a file of the reader's own",
            crashsim::scenario::builtin::names()
        )
    })
}

#[test]
fn every_command_in_the_readme_and_docs_parses() {
    let found = commands();
    assert!(
        found.len() >= 20,
        "only {} commands found: is the extraction broken?",
        found.len()
    );
    let mut problems = Vec::new();
    for command in &found {
        let where_ = format!("{}:{}: `{}`", command.file, command.line, command.text);
        match Cli::try_parse_from(argv(&command.text)) {
            Ok(cli) => problems.extend(
                scenarios(&cli)
                    .iter()
                    .filter_map(|scenario| scenario_problem(scenario))
                    .map(|problem| format!("{where_}: {problem}")),
            ),
            Err(error) => problems.push(format!("{where_}: {}", error.to_string().trim_end())),
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} commands fail:\n\n{}",
        problems.len(),
        found.len(),
        problems.join("\n\n")
    );
}

#[test]
fn the_readme_is_a_guide_under_400_lines() {
    let text = std::fs::read_to_string(common::root().join("README.md")).expect("README.md");
    let lines = text.lines().count();
    assert!(
        lines < 400,
        "README.md has {lines} lines: move reference material to docs/"
    );
}

#[test]
fn the_extraction_reads_commands_as_a_shell_would() {
    let text = "text\n```sh\n$ crashsim run smoke \\\n  --seeds 2   # two\ncrashsim run <SCENARIO> [--seeds N]\n```\ncrashsim list\n```toml\ncrashsim = \"1\"\n```\n";
    let lines = fenced_lines(text);
    assert_eq!(lines[0], (3, "$ crashsim run smoke  --seeds 2   # two".to_string()));
    assert!(is_synopsis(&lines[1].1));
    assert_eq!(lines.len(), 2, "prose and TOML are not commands");
    assert_eq!(strip_comment(r#"crashsim run "a # b""#), r#"crashsim run "a # b""#);
    assert_eq!(scenario_problem(Path::new("smoke")), None);
    assert_eq!(scenario_problem(Path::new("ghost_effect")), None);
    assert_eq!(scenario_problem(Path::new("my.toml")), None);
    assert!(scenario_problem(Path::new("scenarios/smoke.toml")).is_some());
    assert!(scenario_problem(Path::new("smok")).is_some());
    assert_eq!(
        argv(r#"cargo run --release -- run "part$K" --sut "$ADAPTER" > out.json"#),
        ["crashsim", "run", "part1", "--sut", "python3 my_adapter.py"]
    );
}
