//! `crashsim durability --backups`: the backup table (`durability::backups`),
//! printed, and written under the report folder as JSON and Markdown.

use std::io::Write;

use anyhow::{Context, bail};

use super::{DurabilityArgs, Format};
use crate::durability::backups::{self, BackupRow, Method};
use crate::durability::table::TableError;
use crate::exit::Exit;
use crate::report::{self, atomic};

/// Runs per row unless `--cuts` says otherwise.
const RUNS: u64 = 100;

pub fn backups(args: &DurabilityArgs) -> anyhow::Result<Exit> {
    if args.sut.sut.is_some() || args.mutant.is_some() {
        bail!("--backups measures crashsim's reference store only: leave out --sut and --mutant");
    }
    let runs = args.cuts.unwrap_or(RUNS);
    if runs == 0 {
        bail!("--cuts must be at least 1");
    }
    let work = super::workdir::WorkDir::open(args.dir.as_deref())?;
    let work_dir = work.path();
    let specs = backups::default_rows();
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let rows: Vec<BackupRow> = super::parallel::each(&specs, jobs, |(config, method, cut)| {
        backups::measure(config, *method, *cut, runs, args.seed, &work_dir)
    })
    .into_iter()
    .collect::<Result<_, TableError>>()
    .context("running the backup workload")?;
    let text = render(&rows);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match args.format {
        Format::Human => {
            writeln!(
                out,
                "store: crashsim's reference store, in-process; disk model drop_unsynced"
            )?;
            writeln!(out, "{text}")?;
            writeln!(
                out,
                "{runs} runs per row, each one backup after a seeded append of {}; an online backup on \
                 settings that promise durability must be whole",
                40
            )?;
        }
        Format::Json => {
            for row in &rows {
                writeln!(out, "{}", serde_json::to_string(row).expect("rows serialise"))?;
            }
        }
    }
    if let Some(root) = args.reports.root() {
        let dir = root.join("durability");
        let summary = serde_json::json!({
            "schema_version": crate::report::json::SCHEMA_VERSION,
            "runs": runs,
            "seed": args.seed,
            "git_commit": crate::platform::git_commit(),
            "sqlite_version": crate::platform::sqlite_version(),
            "rows": rows,
        });
        report::write_json(&dir.join("backups.json"), &summary)?;
        let markdown = format!("# crashsim durability --backups\n\n```text\n{text}\n```\n");
        atomic::write(&dir.join("backups.md"), markdown.as_bytes())?;
    }
    Ok(match rows.iter().all(as_expected) {
        true => Exit::Pass,
        false => Exit::Violation,
    })
}

/// An online backup on settings that promise durability is whole; the
/// other rows are measured, not judged.
fn as_expected(row: &BackupRow) -> bool {
    let durable = crate::check::Durable::promised(&crate::store::SqliteSettings {
        journal_mode: row.journal_mode,
        synchronous: row.synchronous,
        busy_timeout_ms: 0,
        vfs: None,
    });
    row.method != Method::Online || !durable || row.whole()
}

fn render(rows: &[BackupRow]) -> String {
    let mut text = format!(
        "{:<8} {:<12} {:<10} {:<10} {:>5}  {:>5} {:>12} {:>8} {:>12}  {}\n",
        "journal",
        "synchronous",
        "method",
        "power cut",
        "runs",
        "gone",
        "inconsistent",
        "lacking",
        "max lacking",
        "verdict"
    );
    for row in rows {
        text.push_str(&format!(
            "{:<8} {:<12} {:<10} {:<10} {:>5}  {:>5} {:>12} {:>8} {:>12}  {}\n",
            format!("{:?}", row.journal_mode).to_lowercase(),
            format!("{:?}", row.synchronous).to_lowercase(),
            row.method.name(),
            if row.cut { "after it" } else { "none" },
            row.runs,
            row.gone,
            row.inconsistent,
            row.lacking,
            row.max_lacking,
            match (row.whole(), as_expected(row)) {
                (true, _) => "whole",
                (false, true) => "not whole (as the method and settings allow)",
                (false, false) => "NOT WHOLE",
            }
        ));
    }
    text.trim_end().to_string()
}
