//! Reports: what a run leaves under `reports/` (or `--report DIR`).
//!
//! ```text
//! reports/<scenario>/summary.json        the scenario's last run, machine-readable
//! reports/<scenario>/junit.xml           the same for CI systems (a test case per failing seed)
//! reports/<scenario>/summary.md          the same for people
//! reports/mutants/…                      `crashsim mutants`: the detection table, same three files
//! reports/shrink/<scenario>-<seed>/…     `crashsim shrink`: the shrunk run, its capsule, same three files
//! reports/<scenario>/<seed>/result.json  a failing seed: verdict, violations, replay command
//! reports/<scenario>/<seed>/trace.jsonl  its full trace (hash = sha256 of this file)
//! reports/<scenario>/<seed>/trace.txt    the same, for people
//! reports/<scenario>/<seed>/report.html  a self-contained page: timeline, command lifecycles,
//!                                        expected vs found (`html`)
//! reports/<scenario>/<seed>/adapter/…    an outside store's run: every process's stderr,
//!                                        the transcript of requests and answers, the processes
//! ```
//!
//! Folders are named by scenario and seed, never by time, so a rerun lands
//! in the same place; a run claims each scenario's folder first (`claim`:
//! one run at a time, the earlier run's seed folders cleared). Every file
//! is written atomically (`atomic`).

pub mod atomic;
pub mod claim;
pub mod coverage;
pub mod html;
pub mod index;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod merge;
pub mod number;

use std::path::{Path, PathBuf};

use crate::runner::SeedResult;
use crate::trace::{recorder, render};

/// The folder of one seed's report.
pub fn seed_dir(root: &Path, scenario: &str, seed: u64) -> PathBuf {
    root.join(scenario).join(seed.to_string())
}

/// The commands a seed's report offers as next steps: the one that replays
/// it and, where the seed can still be shrunk, the one that shrinks it.
#[derive(Clone, Copy)]
pub struct NextSteps<'a> {
    pub replay: &'a str,
    pub shrink: Option<&'a str>,
}

impl<'a> From<&'a str> for NextSteps<'a> {
    /// A replay command alone (a shrunk seed, or a Rust harness's call).
    fn from(replay: &'a str) -> Self {
        NextSteps { replay, shrink: None }
    }
}

impl<'a> From<&'a String> for NextSteps<'a> {
    fn from(replay: &'a String) -> Self {
        NextSteps::from(replay.as_str())
    }
}

/// Writes a seed's verdict, trace and page under `root/<scenario>/<seed>/`;
/// returns that folder.
pub fn write_seed<'a>(root: &Path, result: &SeedResult, steps: impl Into<NextSteps<'a>>) -> std::io::Result<PathBuf> {
    let dir = seed_dir(root, &result.scenario, result.seed);
    write_seed_to(&dir, result, steps)?;
    Ok(dir)
}

/// Writes a seed's verdict, trace and page into `dir`.
pub fn write_seed_to<'a>(dir: &Path, result: &SeedResult, steps: impl Into<NextSteps<'a>>) -> std::io::Result<()> {
    let steps = steps.into();
    let record = json::SeedRecord::new(result, Some(steps.replay.to_string()));
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
    atomic::write(&dir.join("report.html"), html::seed_page(result, steps).as_bytes())?;
    for artifact in &result.artifacts {
        atomic::write(&dir.join(&artifact.name), &artifact.content)?;
    }
    Ok(())
}

/// Writes a scenario's `summary.json`, `junit.xml` and `summary.md` under
/// `root/<scenario>/`; returns that folder.
pub fn write_summary(root: &Path, scenario: &str, summary: &json::RunSummary) -> std::io::Result<PathBuf> {
    let dir = root.join(scenario);
    write_json(&dir.join("summary.json"), summary)?;
    atomic::write(&dir.join("junit.xml"), junit::run(&summary.scenarios).as_bytes())?;
    atomic::write(&dir.join("summary.md"), markdown::run(summary).as_bytes())?;
    Ok(dir)
}

/// Writes `value` as pretty JSON.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(value).expect("reports serialise");
    text.push('\n');
    atomic::write(path, text.as_bytes())
}
