//! `crashsim durability`: the durability table (settings × disk models ×
//! seeded cuts), or with `--exhaustive SCENARIO` every cut point of a run;
//! of crashsim's reference store, or with `--sut CMD` of an outside store
//! (whose SQLite must load crashsim's VFS extension, or nothing is measured:
//! exit code 2).

use std::io::Write;

use anyhow::{Context, bail};

use super::output::replay_command;
use super::sut::Choice;
use super::{DurabilityArgs, Format, ModeArg};
use crate::adapter::Adapter;
use crate::check::Invariant;
use crate::durability::exhaustive::{self, Enumeration};
use crate::durability::table::{self, Row, TableError, Target, as_documented, share};
use crate::exit::Exit;
use crate::report::number::thousands;
use crate::report::{self, atomic};
use crate::runner::Options;
use crate::scenario;

pub fn durability(args: &DurabilityArgs) -> anyhow::Result<Exit> {
    // A scenario that is not there is bad input before any adapter starts.
    let loaded = args.exhaustive.as_deref().map(scenario::resolve).transpose()?;
    if args.backups {
        return super::durability_backups::backups(args);
    }
    let choice = Choice::from_args(&args.sut, ModeArg::InProcess, args.mutant.as_deref())?;
    if let Choice::Outside(adapter) = &choice {
        measurable(adapter)?;
    }
    let work = super::workdir::WorkDir::open(args.dir.as_deref())?;
    let work_dir = work.path();
    match loaded {
        Some(loaded) => enumerate(args, loaded, &choice, &work_dir),
        None => table(args, &choice, &work_dir),
    }
}

/// Seeded cuts per row: `--cuts`, or a default that keeps an outside
/// store's table (whose every cut starts its processes) to a few minutes.
fn cuts(args: &DurabilityArgs, choice: &Choice) -> u64 {
    args.cuts.unwrap_or(match choice {
        Choice::Outside(_) => CUTS_OUTSIDE,
        _ => CUTS_IN_PROCESS,
    })
}

const CUTS_IN_PROCESS: u64 = 300;
const CUTS_OUTSIDE: u64 = 40;

fn table(args: &DurabilityArgs, choice: &Choice, work_dir: &std::path::Path) -> anyhow::Result<Exit> {
    let cuts = cuts(args, choice);
    if cuts == 0 {
        bail!("--cuts must be at least 1");
    }
    let target = match choice {
        Choice::Outside(adapter) => Target::Outside(adapter),
        _ => Target::InProcess,
    };
    let store = match choice {
        Choice::Outside(_) => choice.describe(),
        _ => "crashsim's reference store, in-process".to_string(),
    };
    let configs = table::default_configs();
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    #[expect(
        clippy::disallowed_methods,
        reason = "wall time reports speed; it never steers a run"
    )]
    let started = std::time::Instant::now();
    let rows: Vec<Row> = super::parallel::each(&configs, jobs, |config| {
        table::measure_on(config, target, cuts, args.seed, work_dir)
    })
    .into_iter()
    .collect::<Result<_, TableError>>()
    .context("running the durability workload")?;
    let seconds = started.elapsed().as_secs_f64();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match args.format {
        Format::Human => {
            writeln!(out, "store: {store}")?;
            writeln!(out, "{}", render(&rows))?;
            writeln!(
                out,
                "{cuts} cuts per row, {} rows, {seconds:.1} s; a row is as documented when settings that promise \
                 durability lose nothing and stay consistent",
                rows.len()
            )?;
        }
        Format::Json => {
            for row in &rows {
                writeln!(out, "{}", serde_json::to_string(row).expect("rows serialise"))?;
            }
        }
    }
    if let Some(root) = args.reports.root() {
        // An outside store's table lands beside crashsim's, never over it.
        let dir = match choice {
            Choice::Outside(adapter) => root.join("durability").join(folder_name(&adapter.identity().name)),
            _ => root.join("durability"),
        };
        let summary = serde_json::json!({
            "schema_version": crate::report::json::SCHEMA_VERSION,
            "store": store,
            "cuts": cuts,
            "seed": args.seed,
            "seconds": seconds,
            "git_commit": crate::platform::git_commit(),
            "sqlite_version": crate::platform::sqlite_version(),
            "rows": rows,
        });
        report::write_json(&dir.join("summary.json"), &summary)?;
        let markdown = format!(
            "# crashsim durability\n\nstore: {store}\n\n```text\n{}\n```\n",
            render(&rows)
        );
        atomic::write(&dir.join("summary.md"), markdown.as_bytes())?;
    }
    let surprising: Vec<&Row> = rows.iter().filter(|row| !as_documented(row)).collect();
    Ok(if surprising.is_empty() {
        Exit::Pass
    } else {
        Exit::Violation
    })
}

/// `name` as one folder name (`sut-NAME`): letters, digits, `-` and `_` kept.
fn folder_name(name: &str) -> String {
    let kept: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("sut-{kept}")
}

fn render(rows: &[Row]) -> String {
    let mut text = format!(
        "{:<8} {:<12} {:<14} {:>6} {:>7}  {:<22} {:>8}  {:<9} {:>12}  {}\n",
        "journal",
        "synchronous",
        "model",
        "cuts",
        "points",
        "runs losing acked",
        "max lost",
        "tail only",
        "inconsistent",
        "verdict"
    );
    for row in rows {
        text.push_str(&format!(
            "{:<8} {:<12} {:<14} {:>6} {:>7}  {:<22} {:>8}  {:<9} {:>12}  {}\n",
            format!("{:?}", row.journal_mode).to_lowercase(),
            format!("{:?}", row.synchronous).to_lowercase(),
            row.model.name(),
            row.cuts,
            thousands(row.points),
            share(row.runs_losing_acked, row.cuts),
            row.max_acked_lost,
            if row.tail_only { "yes" } else { "no" },
            row.inconsistent_runs,
            if as_documented(row) {
                "as documented"
            } else {
                "NOT AS DOCUMENTED"
            }
        ));
    }
    text.trim_end().to_string()
}

/// An outside store whose SQLite does not load crashsim's VFS extension
/// (its probe said so) cannot be measured: its writes would reach the disk
/// unseen, and every row would look durable.
fn measurable(adapter: &Adapter) -> anyhow::Result<()> {
    let vfs = adapter.vfs();
    if vfs.loaded() {
        return Ok(());
    }
    let why = match &vfs.unavailable {
        Some(why) => format!("crashsim could not offer its VFS extension: {why}"),
        None => format!(
            "its SQLite did not load crashsim's VFS extension (the file ${} names, entry point {}), so no \
             power cut can reach its writes; the Python SDK loads it itself, any other adapter must load it \
             before opening a database (docs/adapter-protocol.md, \"Power loss\"); its stderr says why it could \
             not (`crashsim list --sut CMD` shows it)",
            crate::vfs::extension::ENV_EXTENSION,
            crate::vfs::extension::ENTRY_POINT
        ),
    };
    bail!("the adapter `{}` cannot be measured: {why}", adapter.command())
}

fn enumerate(
    args: &DurabilityArgs,
    mut loaded: scenario::Loaded,
    choice: &Choice,
    work_dir: &std::path::Path,
) -> anyhow::Result<Exit> {
    if let Some(mutant) = &args.mutant {
        loaded = loaded.with_mutant(mutant).map_err(anyhow::Error::msg)?;
    }
    if let Choice::Outside(adapter) = choice {
        loaded = loaded.with_sut(&adapter.identity().name);
    }
    let options = Options {
        work_dir: work_dir.to_path_buf(),
        keep_failed: false,
        keep_traces: false,
        sut: choice.sut(&loaded, &args.sut)?,
        check_determinism: false,
        files: Default::default(),
    };
    let human = args.format == Format::Human;
    let bar = super::output::progress_bar(human, 0, &loaded.label(), "cuts");
    let mut progress = |tried: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(tried);
    };
    let found: Enumeration =
        exhaustive::enumerate(&loaded, args.seed, args.every, args.max_points, &options, &mut progress)?;
    bar.finish_and_clear();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if human {
        let store = match choice {
            Choice::Outside(_) => choice.describe(),
            _ => format!(
                "{}, in-process",
                loaded.mutant.as_deref().unwrap_or(&loaded.scenario.store)
            ),
        };
        writeln!(out, "store: {store}")?;
        writeln!(
            out,
            "{} seed {}: {} persistence points in the fault phase; power cut at {} of them (every {})",
            found.scenario,
            found.seed,
            thousands(found.points),
            thousands(found.tried),
            args.every.max(1)
        )?;
        writeln!(
            out,
            "crash states judged: {} (each by every checker), failing: {}",
            thousands(found.tried),
            thousands(found.failing)
        )?;
        for invariant in Invariant::ALL.into_iter().filter(|invariant| invariant.checked()) {
            let failing = found.by_invariant.get(&invariant).copied().unwrap_or(0);
            writeln!(
                out,
                "  {:<4} {:<32} {} judged, {} failing",
                invariant.to_string(),
                invariant.title(),
                thousands(found.tried),
                thousands(failing)
            )?;
        }
        for failure in &found.failures {
            let first = failure.violations.first().map(String::as_str).unwrap_or_default();
            let more = match failure.violations.len() {
                0 | 1 => String::new(),
                count => format!(" (+{} more)", count - 1),
            };
            writeln!(out, "error: cut at point {}: {first}{more}", failure.point)?;
            let replay = replay_command(&loaded, found.seed, &choice.replay_flags());
            writeln!(out, "note: replay with `{replay} --cut {}`", failure.point)?;
        }
    } else {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&found).expect("enumerations serialise")
        )?;
    }
    if let Some(root) = args.reports.root() {
        let dir = root
            .join("durability")
            .join(format!("exhaustive-{}-{}", found.scenario, found.seed));
        let mut record = serde_json::to_value(&found).expect("enumerations serialise");
        record["schema_version"] = crate::report::json::SCHEMA_VERSION.into();
        report::write_json(&dir.join("summary.json"), &record)?;
    }
    Ok(if found.failing == 0 {
        Exit::Pass
    } else {
        Exit::Violation
    })
}
