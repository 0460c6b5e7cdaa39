//! Reports: what a run leaves under `reports/` (or `--report DIR`).
//!
//! ```text
//! reports/<scenario>/summary.json        the scenario's last run, machine-readable
//! reports/<scenario>/<seed>/result.json  a failing seed: verdict, violations, replay command
//! reports/<scenario>/<seed>/trace.jsonl  its full trace (hash = sha256 of this file)
//! reports/<scenario>/<seed>/trace.txt    the same, for people
//! reports/<scenario>/<seed>/report.html  a self-contained page: timeline, command lifecycles,
//!                                        expected vs found (`html`)
//! ```
//!
//! Folders are named by scenario and seed, never by time, so a rerun lands
//! in the same place. Every file is written atomically (`atomic`).

pub mod atomic;
pub mod html;
pub mod json;

use std::path::{Path, PathBuf};

use crate::runner::SeedResult;
use crate::trace::{recorder, render};

/// The folder of one seed's report.
pub fn seed_dir(root: &Path, scenario: &str, seed: u64) -> PathBuf {
    root.join(scenario).join(seed.to_string())
}

/// Writes a seed's verdict, trace and page; returns its folder.
pub fn write_seed(root: &Path, result: &SeedResult, replay: &str) -> std::io::Result<PathBuf> {
    let dir = seed_dir(root, &result.scenario, result.seed);
    let record = json::SeedRecord::new(result, Some(replay.to_string()));
    let mut text = serde_json::to_string_pretty(&record).expect("records serialise");
    text.push('\n');
    atomic::write(&dir.join("result.json"), text.as_bytes())?;
    if let Some(events) = &result.events {
        atomic::write(&dir.join("trace.jsonl"), recorder::jsonl(events).as_bytes())?;
        let mut human = String::new();
        for event in events {
            human.push_str(&render::line(event));
            human.push('\n');
        }
        atomic::write(&dir.join("trace.txt"), human.as_bytes())?;
    }
    atomic::write(&dir.join("report.html"), html::seed_page(result, replay).as_bytes())?;
    Ok(dir)
}

/// Writes a scenario's `summary.json`; returns its path.
pub fn write_summary(root: &Path, scenario: &str, summary: &json::RunSummary) -> std::io::Result<PathBuf> {
    let path = root.join(scenario).join("summary.json");
    let mut text = serde_json::to_string_pretty(summary).expect("summaries serialise");
    text.push('\n');
    atomic::write(&path, text.as_bytes())?;
    Ok(path)
}
