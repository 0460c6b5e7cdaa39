//! `summary.md`: the human summary of a run, a mutant table or a shrink, as
//! Markdown so CI systems and code hosts render it.

use std::fmt::Write;

use super::json::{RunSummary, ScenarioSummary};
use crate::detect::Row;
use crate::shrink::Size;

/// Text from a run (a checker's message, with whatever ids and payloads
/// it quotes) as a table cell: Markdown's punctuation backslash-escaped, so
/// that no id opens a code span, emphasis, a link or raw HTML, or splits
/// the cell at a `|`; line breaks become spaces.
pub fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' | '|' | '<' | '>' | '&' | '`' | '*' | '_' | '[' | ']' | '#' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn kill_rows(summary: &ScenarioSummary) -> String {
    let mut text = String::from("| kill point | reached | fired |\n|---|---:|---:|\n");
    let prefix = super::json::SUSPENDED_PREFIX;
    let (suspensions, kills): (Vec<_>, Vec<_>) = summary.kills.iter().partition(|(name, _)| name.starts_with(prefix));
    for (point, count) in kills {
        if summary.unreachable.iter().any(|name| name == point) {
            let _ = writeln!(text, "| `{point}` | unreachable (call granularity) | |");
        } else {
            let _ = writeln!(text, "| `{point}` | {} | {} |", count.reached, count.fired);
        }
    }
    if !suspensions.is_empty() {
        // "in steps": reached inside an actor's step in the fault phase,
        // where a suspension can land.
        text.push_str("\n| suspension point | reached | in steps | suspended |\n|---|---:|---:|---:|\n");
        for (name, count) in suspensions {
            let armed = count.armed.map_or_else(|| "–".to_string(), |armed| armed.to_string());
            let _ = writeln!(
                text,
                "| `{}` | {} | {armed} | {} |",
                &name[prefix.len()..],
                count.reached,
                count.fired
            );
        }
    }
    text
}

pub fn run(summary: &RunSummary) -> String {
    let mut text = String::from("# crashsim run\n\n");
    let store_sqlite = summary
        .store_sqlite_version
        .as_ref()
        .map(|version| format!(" (crashsim's; the store's: SQLite {version})"))
        .unwrap_or_default();
    let _ = writeln!(
        text,
        "crashsim `{}`, SQLite {}{store_sqlite}, {} job(s), databases on {} (`{}`).\n",
        summary.git_commit, summary.sqlite_version, summary.jobs, summary.filesystem, summary.work_dir
    );
    if let Some(signal) = &summary.interrupted {
        let _ = writeln!(
            text,
            "**Interrupted by {signal}**: the seeds that ended are reported; running seeds were abandoned.\n"
        );
    }
    text.push_str(
        "| scenario | store | seeds | passed | failed | errors | not run | seeds/s | steps/s | steps/seed |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for scenario in &summary.scenarios {
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} |",
            scenario.scenario,
            scenario.store,
            scenario.seeds,
            scenario.passed,
            scenario.failed,
            scenario.errored,
            scenario.not_run,
            seed_rate_cell(scenario.seeds_per_s),
            scenario.steps_per_s,
            scenario.steps_per_seed
        );
    }
    for scenario in &summary.scenarios {
        let _ = writeln!(text, "\n## {}\n", scenario.scenario);
        if let Some(sut) = &scenario.sut {
            let files: Vec<String> = sut
                .files
                .iter()
                .map(|(file, hash)| format!("`{file}` {hash}"))
                .collect();
            let _ = writeln!(
                text,
                "Store under test: {} {} via `{}`: {}{}\n",
                sut.name,
                sut.version.as_deref().unwrap_or(""),
                sut.command,
                sut.roles.describe(),
                if files.is_empty() {
                    String::new()
                } else {
                    format!("; files {}", files.join(", "))
                }
            );
        }
        if scenario.seeds == 0 {
            text.push_str("No seed ended with a verdict.\n\n");
        } else if scenario.violations_by_invariant.is_empty() {
            let _ = writeln!(text, "Every invariant held in the {} seeds judged.\n", scenario.seeds);
        } else {
            text.push_str("| invariant | failing seeds |\n|---|---:|\n");
            for (invariant, seeds) in &scenario.violations_by_invariant {
                let _ = writeln!(text, "| {invariant} | {seeds} |");
            }
            text.push('\n');
            text.push_str("| seed | invariants | first violation | replay |\n|---:|---|---|---|\n");
            for failing in scenario.failing_seeds.iter().take(50) {
                let _ = writeln!(
                    text,
                    "| {} | {} | {} | `{}` |",
                    failing.seed,
                    failing.invariants.join(", "),
                    cell(&failing.first),
                    failing.replay
                );
            }
            if scenario.failing_seeds.len() > 50 {
                let _ = writeln!(
                    text,
                    "\n… and {} more (see summary.json).",
                    scenario.failing_seeds.len() - 50
                );
            }
            text.push('\n');
        }
        if !scenario.errors.is_empty() {
            text.push_str(
                "Seeds that ended with an error (the machine, the budget or the harness; never a finding):\n\n\
                 | seed | kind | cause | replay |\n|---:|---|---|---|\n",
            );
            for errored in scenario.errors.iter().take(50) {
                let _ = writeln!(
                    text,
                    "| {} | {} | {} | `{}` |",
                    errored.seed,
                    errored.error.kind.name(),
                    cell(&errored.error.cause),
                    errored.replay
                );
            }
            text.push('\n');
        }
        if scenario.not_run > 0 {
            let _ = writeln!(
                text,
                "{} seeds did not run; the seeds that ended: {}.\n",
                scenario.not_run,
                if scenario.covered.is_empty() {
                    "none"
                } else {
                    &scenario.covered
                }
            );
        }
        let _ = writeln!(
            text,
            "Seeds {}; digest `{}`.\n",
            cell(&scenario.covered),
            scenario.digest
        );
        if !scenario.missing_partitions.is_empty() {
            let missing: Vec<String> = scenario.missing_partitions.iter().map(ToString::to_string).collect();
            let _ = writeln!(text, "**Missing partitions:** {}.\n", missing.join(", "));
        }
        if let Some(faults) = scenario.coverage.faults_line() {
            let _ = writeln!(text, "{}.\n", cell(&upper_first(&faults)));
        }
        if let Some(backups) = &scenario.coverage.backups {
            let _ = writeln!(text, "{}.\n", cell(&upper_first(&backups.describe())));
        }
        text.push_str(&kill_rows(scenario));
        let label = match scenario.require_fired {
            true => "Coverage gate failed",
            false => "Warning",
        };
        for gap in &scenario.coverage.gaps {
            let _ = writeln!(text, "\n**{label}:** {}.", cell(gap));
        }
    }
    text
}

fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn optional(value: Option<u64>) -> String {
    value.map_or_else(|| "–".to_string(), |value| value.to_string())
}

pub fn mutants(rows: &[Row], seeds_max: u64, ranges: u32) -> String {
    let mut text = String::from("# crashsim mutants\n\n");
    let _ = writeln!(
        text,
        "Each mutant is searched from {ranges} disjoint seed ranges, at most {seeds_max} seeds each; \
         the median seeds-to-detection of its best scenario is reported.\n"
    );
    text.push_str(
        "| mutant | mistake | caught | first caught by | documented | invariants | scenario | first seed | median seeds | wall ms |\n\
         |---|---:|---|---|---|---|---|---:|---:|---:|\n",
    );
    for row in rows {
        let caught = match crate::detect::verdict(row) {
            "FAILED" => "**FAILED**",
            "ESCAPED" => "**escaped**",
            "UNTESTED" => "**untested** (no scenario makes its calls)",
            "OTHER" => "**only by other invariants**",
            verdict => verdict,
        };
        let _ = writeln!(
            text,
            "| `{}` | {} | {caught} | {} | {} | {} | {} | {} | {} | {} |",
            row.mutant,
            row.mistake.map_or_else(String::new, |m| m.to_string()),
            crate::detect::listed(&row.first_invariants),
            crate::detect::documented(row),
            crate::detect::listed(&row.invariants),
            row.scenario.as_deref().unwrap_or("–"),
            optional(row.first_seed),
            optional(row.median_seeds_to_detection),
            optional(row.wall_ms)
        );
    }
    let unsearched: Vec<String> = rows
        .iter()
        .flat_map(|row| {
            row.scenarios
                .iter()
                .filter(|pair| pair.not_searched.is_some())
                .map(|pair| format!("`{}` on `{}`", row.mutant, pair.scenario))
        })
        .collect();
    if !unsearched.is_empty() {
        let _ = writeln!(
            text,
            "\nNot searched, since the mutant runs as the reference there (its one difference lives in calls \
             the scenario never makes; summary.json says which): {}.",
            unsearched.join(", ")
        );
    }
    text
}

pub fn shrink(scenario: &str, seed: u64, target: &str, original: &Size, shrunk: &Size, replay: &str) -> String {
    let mut text = format!("# crashsim shrink: {scenario}, seed {seed}\n\n{target} still fails after shrinking.\n\n");
    text.push_str("| | steps | faults | workflows | actors |\n|---|---:|---:|---:|---:|\n");
    for (label, size) in [("original", original), ("shrunk", shrunk)] {
        let _ = writeln!(
            text,
            "| {label} | {} | {} | {} | {} |",
            size.steps, size.faults, size.workflows, size.actors
        );
    }
    let _ = writeln!(text, "\nReplay with `{replay}`.");
    text
}

/// The seeds/s column: the rate, or the time per seed where the rate would
/// print as 0.0.
fn seed_rate_cell(seeds_per_s: f64) -> String {
    if seeds_per_s > 0.0 && seeds_per_s < 0.1 {
        crate::report::number::seed_rate(seeds_per_s)
    } else {
        format!("{seeds_per_s:.1}")
    }
}
