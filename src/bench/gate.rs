//! The bench's regression gate (`--baseline FILE --max-regression PCT`):
//! each configuration's ratio to the limit now, next to a stored baseline's;
//! the run fails (exit 1) when one fell by more than the threshold beyond
//! the noise the two runs measured.
//!
//! `compare` is a pure function of two sets of recorded ratios and a
//! threshold, so it is tested on recorded numbers, never on timings; the
//! CLI feeds it the run it just measured.
//!
//! - delta = (ratio now − ratio in the baseline) ÷ ratio in the baseline;
//! - noise = √(baseline's noise² + this run's noise²), each the median
//!   absolute deviation ÷ median of its per-round ratios
//!   (`measure::relative_mad`). Root of the sum of squares because the two
//!   runs' noise is independent: spreads of independent errors add in
//!   quadrature (two equal ones make √2 × one, where a plain sum would say
//!   2 × and wave through more of a regression than the noise explains);
//! - allowed = threshold + noise; a configuration REGRESSED when delta <
//!   −allowed, is `faster` when delta > +allowed, `ok` otherwise.
//!
//! The noise is one round's spread, not the (√rounds smaller) uncertainty of
//! the median, on purpose: two runs minutes apart differ by more than one
//! run's sampling error suggests (the disk's state, a neighbour, the page
//! cache drift), and a gate that fails an unchanged tree gets ignored. The
//! price is that on a noisy machine a regression must be larger to be
//! caught; the table shows how large (`allowed`).

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::baseline::Baseline;
use super::columns::aligned;
use super::plan::LIMIT;
use crate::report::number::short;

/// `10%` or `10` → 0.10. At least 0, below 100%: a fall of 100% or more
/// cannot happen, so such a gate could never fail.
pub fn parse_threshold(text: &str) -> Result<f64, String> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim()).trim();
    let percent: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a percentage: write it as `10%` or `10`"))?;
    if !(0.0..100.0).contains(&percent) {
        return Err(format!(
            "`{text}`: a regression threshold is at least 0% and below 100%"
        ));
    }
    Ok(percent / 100.0)
}

/// How a configuration's ratio moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// It fell by more than the threshold and the noise.
    Regressed,
    /// Within the threshold and the noise, either way.
    Ok,
    /// It rose by more than the threshold and the noise: not a failure.
    Faster,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regressed => "REGRESSED",
            Verdict::Ok => "ok",
            Verdict::Faster => "faster",
        }
    }
}

/// One configuration measured in both runs. Fractions, not percentages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub name: String,
    pub baseline_ratio: f64,
    pub ratio: f64,
    /// (ratio − baseline_ratio) ÷ baseline_ratio: −0.25 is a 25% fall.
    pub delta: f64,
    pub baseline_noise: f64,
    pub noise: f64,
    /// The threshold + √(baseline_noise² + noise²): the fall tolerated.
    pub allowed: f64,
    pub verdict: Verdict,
}

/// The comparison with a baseline: `bench.json`'s `gate` object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    /// The `--baseline` file, as given.
    pub baseline_file: String,
    /// The commit the baseline was measured at.
    pub baseline_commit: String,
    /// `--max-regression`, as a fraction.
    pub threshold: f64,
    /// In this run's order; the limit is not among them (its ratio is 1 by definition).
    pub rows: Vec<Row>,
    /// The configurations whose verdict is `regressed`.
    pub regressed: Vec<String>,
    /// Measured in one of the two runs only: reported, never a failure.
    pub only_in_baseline: Vec<String>,
    pub only_in_run: Vec<String>,
    /// How the two runs' contexts differ (filesystem, quick or full, …):
    /// the comparison is made anyway, but may compare unlike with unlike.
    pub warnings: Vec<String>,
    pub passed: bool,
}

/// Compares `now` (this run, as a baseline) with `baseline` under `threshold`.
pub fn compare(baseline_file: &str, baseline: &Baseline, now: &Baseline, threshold: f64) -> Gate {
    let rows: Vec<Row> = now
        .configs
        .iter()
        .filter(|config| config.name != LIMIT)
        .filter_map(|config| {
            let base = baseline.config(&config.name)?;
            let delta = (config.ratio_to_limit - base.ratio_to_limit) / base.ratio_to_limit;
            let allowed = threshold + base.ratio_noise.hypot(config.ratio_noise);
            let verdict = if delta < -allowed {
                Verdict::Regressed
            } else if delta > allowed {
                Verdict::Faster
            } else {
                Verdict::Ok
            };
            Some(Row {
                name: config.name.clone(),
                baseline_ratio: base.ratio_to_limit,
                ratio: config.ratio_to_limit,
                delta,
                baseline_noise: base.ratio_noise,
                noise: config.ratio_noise,
                allowed,
                verdict,
            })
        })
        .collect();
    let regressed: Vec<String> = rows
        .iter()
        .filter(|row| row.verdict == Verdict::Regressed)
        .map(|row| row.name.clone())
        .collect();
    let missing_from = |from: &Baseline, of: &Baseline| -> Vec<String> {
        of.configs
            .iter()
            .filter(|config| config.name != LIMIT && from.config(&config.name).is_none())
            .map(|config| config.name.clone())
            .collect()
    };
    let mut warnings = warnings(baseline, now);
    // Noise of more than twice the threshold (and 5%) swamps it: say so.
    let noisy: Vec<String> = rows
        .iter()
        .filter(|row| row.allowed - threshold > (2.0 * threshold).max(0.05))
        .map(|row| format!("{} (±{:.0}%)", row.name, row.allowed * 100.0))
        .collect();
    if !noisy.is_empty() {
        warnings.push(format!(
            "noisy, so only a larger fall fails: {}; more rounds or a quieter disk narrow it",
            noisy.join(", ")
        ));
    }
    Gate {
        baseline_file: baseline_file.to_string(),
        baseline_commit: baseline.context.git_commit.clone(),
        threshold,
        passed: regressed.is_empty(),
        rows,
        regressed,
        only_in_baseline: missing_from(now, baseline),
        only_in_run: missing_from(baseline, now),
        warnings,
    }
}

/// How the baseline's context differs from this run's, where that moves
/// ratios.
fn warnings(baseline: &Baseline, now: &Baseline) -> Vec<String> {
    let (was, is) = (&baseline.context, &now.context);
    let mut warnings = Vec::new();
    if was.filesystem != is.filesystem {
        warnings.push(format!(
            "the baseline was measured on {}, this run on {}: a filesystem syncs differently",
            was.filesystem, is.filesystem
        ));
    }
    let kind = |quick: bool| if quick { "a --quick run" } else { "a full run" };
    if was.quick != is.quick {
        warnings.push(format!(
            "the baseline is {}, this run {}: quick samples are too short for stable ratios",
            kind(was.quick),
            kind(is.quick)
        ));
    }
    if was.sample_ms != is.sample_ms {
        warnings.push(format!(
            "the baseline's samples were {} ms, this run's {} ms",
            was.sample_ms, is.sample_ms
        ));
    }
    let (slow, fast) = (
        baseline.limit_appends_per_s.min(now.limit_appends_per_s),
        baseline.limit_appends_per_s.max(now.limit_appends_per_s),
    );
    if slow > 0.0 && fast / slow > 2.0 {
        warnings.push(format!(
            "the limit ran at {}/s in the baseline, {}/s now: next to a disk that much faster or slower, \
             a configuration's CPU cost per append weighs differently, so its ratio moves too",
            short(baseline.limit_appends_per_s),
            short(now.limit_appends_per_s)
        ));
    }
    if was.cores != is.cores {
        warnings.push(format!(
            "the baseline ran on {} core(s), this run on {}: the threaded configurations' ratios depend on it",
            was.cores, is.cores
        ));
    }
    if was.sqlite_version != is.sqlite_version {
        warnings.push(format!(
            "the baseline ran SQLite {}, this run SQLite {}: a delta may be SQLite's",
            was.sqlite_version, is.sqlite_version
        ));
    }
    warnings
}

fn percent(fraction: f64) -> String {
    format!("{:+.1}%", fraction * 100.0)
}

const HEADERS: [&str; 7] = [
    "configuration",
    "baseline",
    "now",
    "delta",
    "noise",
    "allowed",
    "verdict",
];

fn cells(row: &Row) -> Vec<String> {
    vec![
        row.name.clone(),
        format!("{:.3}", row.baseline_ratio),
        format!("{:.3}", row.ratio),
        percent(row.delta),
        format!("{:.1}%", row.baseline_noise.hypot(row.noise) * 100.0),
        format!("±{:.1}%", row.allowed * 100.0),
        row.verdict.label().to_string(),
    ]
}

fn heading(gate: &Gate) -> String {
    format!(
        "ratio to {LIMIT}, this run vs {} (crashsim {}); fails when one falls by more than {:.1}% + noise",
        gate.baseline_file,
        crate::platform::short_commit(&gate.baseline_commit),
        gate.threshold * 100.0
    )
}

/// The notes under the table: what was not compared, and why the
/// comparison may be off.
fn notes(gate: &Gate) -> Vec<String> {
    let mut notes = vec![format!("{LIMIT} is the limit: its ratio is 1 by definition")];
    if !gate.only_in_baseline.is_empty() {
        notes.push(format!(
            "only in the baseline, not compared: {}",
            gate.only_in_baseline.join(", ")
        ));
    }
    if !gate.only_in_run.is_empty() {
        notes.push(format!(
            "only in this run, not compared: {}",
            gate.only_in_run.join(", ")
        ));
    }
    notes
}

fn verdict_line(gate: &Gate) -> String {
    if gate.passed {
        format!(
            "passed: {} configuration(s) compared, none fell by more than {:.1}% + noise",
            gate.rows.len(),
            gate.threshold * 100.0
        )
    } else {
        format!("REGRESSED: {}", gate.regressed.join(", "))
    }
}

/// The terminal's gate section.
pub fn table(gate: &Gate) -> String {
    let mut text = format!("gate: {}\n", heading(gate));
    let mut lines = vec![HEADERS.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    lines.extend(gate.rows.iter().map(cells));
    text.push_str(&aligned(&lines));
    for note in notes(gate) {
        let _ = writeln!(text, "note: {note}");
    }
    for warning in &gate.warnings {
        let _ = writeln!(text, "warning: {warning}");
    }
    let _ = writeln!(text, "gate: {}", verdict_line(gate));
    text
}

/// `bench.md`'s gate section.
pub fn markdown(gate: &Gate) -> String {
    let mut text = format!("\n## Regression gate\n\n{}.\n\n", heading(gate));
    let _ = writeln!(text, "| {} |", HEADERS.join(" | "));
    let _ = writeln!(text, "|{}", "---|".repeat(HEADERS.len()));
    for row in &gate.rows {
        let mut cells = cells(row);
        cells[0] = format!("`{}`", cells[0]);
        let _ = writeln!(text, "| {} |", cells.join(" | "));
    }
    text.push_str("\nnoise = √(baseline's² + this run's²), each the median absolute deviation ÷ median of the per-round ratios; allowed = threshold + noise.\n\n");
    for note in notes(gate) {
        let _ = writeln!(text, "- {note}");
    }
    for warning in &gate.warnings {
        let _ = writeln!(text, "- **warning**: {warning}");
    }
    let _ = writeln!(text, "\n**{}**", verdict_line(gate));
    text
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
