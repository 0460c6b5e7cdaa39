//! docs/cli.md says it holds "every command and option": this keeps it so
//! against the CLI's own definition. Every command and subcommand appears
//! as `crashsim <path>` in its synopsis, and every long option of each
//! appears in the page (`--name`).

use clap::CommandFactory;

use crate::common;

/// `(command path, long options)` for every command under `command`.
fn walk(command: &clap::Command, path: &str, out: &mut Vec<(String, Vec<String>)>) {
    let longs = command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set())
        .filter_map(|arg| arg.get_long().map(|long| format!("--{long}")))
        .filter(|long| long != "--help" && long != "--version")
        .collect();
    out.push((path.to_string(), longs));
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        walk(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

/// The synopsis lines of `path` in the page's first `text` block: each
/// line that starts with it, and the indented lines that continue one.
fn synopsis(page: &str, path: &str) -> String {
    let block = page
        .split("```text\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_default();
    let mut text = String::new();
    let mut inside = false;
    for line in block.lines() {
        let starts = line.starts_with(&format!("{path} ")) || line == path;
        // A deeper command's lines are its own (`crashsim ci init` is not `crashsim ci`'s).
        inside = starts || (inside && line.starts_with(' '));
        if inside {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

#[test]
fn every_command_and_option_is_in_docs_cli_md() {
    let page = std::fs::read_to_string(common::root().join("docs/cli.md")).unwrap();
    let mut commands = Vec::new();
    walk(&crashsim::cli::Cli::command(), "crashsim", &mut commands);
    let mut missing = Vec::new();
    for (path, longs) in &commands[1..] {
        let lines = synopsis(&page, path);
        if lines.is_empty() {
            missing.push(format!("the command `{path}`"));
            continue;
        }
        for long in longs {
            let named = [" ", "]", "\n", "=", ","]
                .iter()
                .any(|end| lines.contains(&format!("{long}{end}")));
            if !named {
                missing.push(format!("`{long}` of `{path}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/cli.md's synopsis lacks:\n{}",
        missing.join("\n")
    );
}
