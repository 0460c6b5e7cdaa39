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
//! A seed's file over [`COMPRESS_ABOVE`] bytes is written gzip-compressed
//! as `NAME.gz` (`zcat` reads it): a store that fails by looping until the
//! step budget can leave a trace and a transcript of hundreds of megabytes,
//! which JSON lines shrink some 40-fold.
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
pub mod suspensions;

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
        write_kept(dir, "trace.jsonl", recorder::jsonl(events).as_bytes())?;
        let mut human = String::new();
        for event in events {
            human.push_str(&render::line(event));
            human.push('\n');
        }
        write_kept(dir, "trace.txt", human.as_bytes())?;
    }
    atomic::write(&dir.join("report.html"), html::seed_page(result, steps).as_bytes())?;
    for artifact in &result.artifacts {
        write_kept(dir, &artifact.name, &artifact.content())?;
    }
    Ok(())
}

/// Files larger than this are kept gzip-compressed.
pub const COMPRESS_ABOVE: usize = 8 << 20;

/// Writes `name` under `dir`, or `name.gz` when `content` is larger than
/// [`COMPRESS_ABOVE`]; the other form, left by an earlier run, is removed
/// so a folder never holds two versions of one file.
fn write_kept(dir: &Path, name: &str, content: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let plain = dir.join(name);
    let packed = dir.join(format!("{name}.gz"));
    let stale = if content.len() > COMPRESS_ABOVE {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(content)?;
        atomic::write(&packed, &encoder.finish()?)?;
        plain
    } else {
        atomic::write(&plain, content)?;
        packed
    };
    match std::fs::remove_file(&stale) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// The bytes of every file under `dir`, and how many seed folders it
/// holds (its subfolders named by a number): what a run left behind.
pub fn folder_size(dir: &Path) -> (u64, usize) {
    fn bytes(path: &Path) -> u64 {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => std::fs::read_dir(path)
                .map(|entries| entries.flatten().map(|entry| bytes(&entry.path())).sum())
                .unwrap_or(0),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        }
    }
    let seeds = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| entry.path().is_dir() && entry.file_name().to_string_lossy().parse::<u64>().is_ok())
                .count()
        })
        .unwrap_or(0);
    (bytes(dir), seeds)
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

#[cfg(test)]
mod tests {
    use super::{COMPRESS_ABOVE, write_kept};

    #[test]
    fn a_large_file_is_kept_compressed_and_a_rerun_leaves_one_form() {
        use std::io::Read;
        let dir = tempfile::tempdir().unwrap();
        let large: Vec<u8> = b"{\"tick\":1}\n"
            .iter()
            .copied()
            .cycle()
            .take(COMPRESS_ABOVE + 1)
            .collect();
        write_kept(dir.path(), "adapter/transcript.jsonl", &large).unwrap();
        let packed = dir.path().join("adapter/transcript.jsonl.gz");
        let mut unpacked = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&packed).unwrap())
            .read_to_end(&mut unpacked)
            .unwrap();
        assert_eq!(unpacked, large, "zcat gives the file back");
        assert!(std::fs::metadata(&packed).unwrap().len() < (COMPRESS_ABOVE / 10) as u64);
        assert!(!dir.path().join("adapter/transcript.jsonl").exists());

        write_kept(dir.path(), "adapter/transcript.jsonl", b"small\n").unwrap();
        assert!(dir.path().join("adapter/transcript.jsonl").exists());
        assert!(!packed.exists(), "the earlier run's compressed form is gone");
    }

    #[test]
    fn folder_size_counts_bytes_and_seed_folders() {
        let dir = tempfile::tempdir().unwrap();
        super::atomic::write(&dir.path().join("3/result.json"), b"12345").unwrap();
        super::atomic::write(&dir.path().join("17/adapter/x"), b"123").unwrap();
        super::atomic::write(&dir.path().join("summary.json"), b"12").unwrap();
        std::fs::create_dir_all(dir.path().join("not-a-seed")).unwrap();
        assert_eq!(super::folder_size(dir.path()), (10, 2));
    }
}
