//! Shared pieces of human output: the replay command, numbers, the kill table.

use std::fmt::Write;
use std::io::IsTerminal;
use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::check::Violation;
use crate::report::json::KillCount;
use crate::report::number::thousands;
use crate::scenario::Loaded;

/// The one command that replays a seed; `flags` name the store under test
/// when it is not the scenario's own (`--sut '…'`, `--mode process`, see
/// `sut::Choice::replay_flags`). When crashsim runs from a cargo target
/// directory, the command goes through cargo so it can be pasted as is.
pub fn replay_command(loaded: &Loaded, seed: u64, flags: &str) -> String {
    seed_command("replay", loaded, seed, flags)
}

/// The command that shrinks `seed` of `loaded` to a small trace and a
/// regression capsule. Process mode gives in-process traces, so a shrink
/// runs in-process (it has no `--mode`).
pub fn shrink_command(loaded: &Loaded, seed: u64, flags: &str) -> String {
    seed_command("shrink", loaded, seed, &flags.replace(" --mode process", ""))
}

/// `crashsim VERB SCENARIO --seed N`, the mutant, then `flags`.
fn seed_command(verb: &str, loaded: &Loaded, seed: u64, flags: &str) -> String {
    let prefix = replay_command_prefix();
    let scenario = crate::adapter::shell_word(&loaded.argument());
    let mut command = format!("{prefix} {verb} {scenario} --seed {seed}");
    if let Some(mutant) = &loaded.mutant {
        command.push_str(&format!(" --mutant {mutant}"));
    }
    command.push_str(flags);
    command
}

/// What to do next with a failing seed, after its replay command: shrink
/// it, and where its first invariant is explained.
pub fn next_steps(violations: &[Violation], shrink: &str) -> String {
    let mut text = format!("note: shrink it to a small trace and a regression capsule with `{shrink}`\n");
    if let Some(first) = violations.first() {
        let _ = writeln!(
            text,
            "note: {} ({}) is explained by `crashsim list` and in docs/protocol.md, \"Invariants\"",
            first.invariant,
            first.invariant.title()
        );
    }
    text
}

/// How to invoke crashsim: as installed (`crashsim`), through cargo when a
/// build runs in its own checkout, else by the built executable's path.
pub fn replay_command_prefix() -> String {
    let Ok(exe) = std::env::current_exe() else {
        return "crashsim".to_string();
    };
    if !exe.components().any(|part| part.as_os_str() == "target") {
        return "crashsim".to_string();
    }
    // Built, not installed: through cargo where cargo finds this crate (the
    // current directory is its checkout), else by the executable's path.
    let here = std::env::current_dir().and_then(|dir| dir.canonicalize()).ok();
    let checkout = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).canonicalize().ok();
    if here.is_some() && here == checkout {
        if exe.components().any(|part| part.as_os_str() == "release") {
            "cargo run --release --".to_string()
        } else {
            "cargo run --".to_string()
        }
    } else {
        crate::adapter::shell_word(&exe.display().to_string())
    }
}

/// The kill-point table of a summary; points the store under test cannot
/// reach say so instead of showing zeros.
pub fn kill_table(
    kills: &std::collections::BTreeMap<String, KillCount>,
    unreachable: &[crate::faults::KillPoint],
) -> String {
    let mut text = format!("  {:<32}{:>14}{:>12}\n", "kill point", "reached", "fired");
    for point in crate::faults::KillPoint::ALL {
        if unreachable.contains(&point) {
            let _ = writeln!(text, "  {:<32}{:>26}", point.name(), "unreachable (call granularity)");
            continue;
        }
        let count = kills.get(point.name()).copied().unwrap_or_default();
        let _ = writeln!(
            text,
            "  {:<32}{:>14}{:>12}",
            point.name(),
            thousands(count.reached),
            thousands(count.fired)
        );
    }
    let prefix = crate::report::json::SUSPENDED_PREFIX;
    let suspended: Vec<_> = kills.iter().filter(|(name, _)| name.starts_with(prefix)).collect();
    if !suspended.is_empty() {
        // "in steps": reached inside an actor's step in the fault phase,
        // where a suspension could land (boots and the quiet phase cannot).
        let _ = writeln!(
            text,
            "  {:<32}{:>14}{:>12}{:>12}",
            "suspension point", "reached", "in steps", "suspended"
        );
        for (name, count) in suspended {
            let armed = count.armed.map_or_else(|| "–".to_string(), thousands);
            let _ = writeln!(
                text,
                "  {:<32}{:>14}{:>12}{:>12}",
                &name[prefix.len()..],
                thousands(count.reached),
                armed,
                thousands(count.fired)
            );
        }
    }
    text
}

/// The lines that describe a failing seed. `faults` is the seed's drawn
/// fault mix, printed when it differs per seed (swarm mode).
pub fn failure_lines(
    seed: u64,
    violations: &[Violation],
    faults: Option<&str>,
    replay: &str,
    report: Option<&Path>,
) -> String {
    let mut text = String::new();
    if let Some(first) = violations.first() {
        let more = match violations.len() {
            1 => String::new(),
            n => format!(" (+{} more)", n - 1),
        };
        let _ = writeln!(text, "fail: seed={seed} {first}{more}");
    }
    if let Some(faults) = faults {
        let _ = writeln!(text, "note: faults drawn for this seed: {faults}");
    }
    let _ = writeln!(text, "note: replay with `{replay}`");
    if let Some(dir) = report {
        let _ = writeln!(text, "note: report written to {}/", dir.display());
    }
    text
}

/// A progress bar of `len` steps on a terminal; hidden in CI (`CI` set), in
/// JSON mode, or when stderr is not a TTY. `unit` names what is counted.
pub fn progress_bar(human: bool, len: u64, prefix: &str, unit: &str) -> ProgressBar {
    progress(human, Some(len), prefix, unit)
}

/// A progress line for `len` units, or an open-ended count of them (a
/// time budget has no length to fill a bar to); hidden like `progress_bar`.
pub fn progress(human: bool, len: Option<u64>, prefix: &str, unit: &str) -> ProgressBar {
    let visible = human && std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
    if !visible {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(len, ProgressDrawTarget::stderr());
    let template = match len {
        Some(_) => format!("{{prefix}} [{{bar:40}}] {{pos}}/{{len}} {unit}, {{per_sec}}, eta {{eta}} {{msg}}"),
        None => format!("{{prefix}} {{spinner}} {{pos}} {unit}, {{per_sec}}, {{elapsed}} {{msg}}"),
    };
    let style = ProgressStyle::with_template(&template)
        .expect("valid template")
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(prefix.to_string());
    bar
}
