//! `crashsim bench`: throughput and commit latency of the append paths next
//! to the disk's own limit, a table on the terminal, files under
//! `reports/bench/`. With `--sut CMD`, an outside store's append path and
//! the protocol's own cost, in the same run.
//!
//! With `--baseline FILE`, each configuration's ratio to the limit is
//! compared with a stored baseline (`--save-baseline` writes one): exit
//! code 1 when one fell by more than `--max-regression` beyond the noise,
//! the bench's one verdict (`bench::gate`).
//!
//! Every failure is exit code 2, an outside store's included (a command
//! that is no adapter, one that serves no store, one that fails during the
//! bench), and so is a baseline that cannot be used, before anything runs.

use std::sync::Arc;

use anyhow::{Context as _, bail};

use super::sut::Choice;
use super::{BenchArgs, Format, ModeArg};
use crate::adapter::Adapter;
use crate::bench::baseline::Baseline;
use crate::bench::figures::Context;
use crate::bench::record::BenchRecord;
use crate::bench::report;
use crate::bench::run::{QUICK_ROUNDS, ROUNDS};
use crate::bench::sut_record::SutIdentity;
use crate::bench::{Budget, Options, gate, plan, plant};
use crate::exit::Exit;
use crate::platform;
use crate::vfs::counting::default_vfs_name;

pub fn bench(args: &BenchArgs) -> anyhow::Result<Exit> {
    let rounds = args.rounds.unwrap_or(if args.quick { QUICK_ROUNDS } else { ROUNDS });
    if rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    let configs = plan::select(&args.only, args.sut.sut.is_some()).map_err(anyhow::Error::msg)?;
    if let Some(name) = &args.plant_slowdown {
        plant::check(name, &configs).map_err(anyhow::Error::msg)?;
    }
    // Read before anything runs: a baseline that cannot be used is bad input.
    let baseline = args.baseline.as_deref().map(Baseline::load).transpose()?;
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    if !dir.is_dir() {
        bail!("--dir {}: not a directory", dir.display());
    }
    let dir = dir.canonicalize().unwrap_or(dir);
    let filesystem = platform::filesystem_of(&dir);
    let in_memory = matches!(filesystem.as_str(), "tmpfs" | "ramfs");
    if in_memory && args.dir.is_none() {
        bail!(
            "the current directory {} is on {filesystem}, where fsync costs nothing: \
             run from a directory on the disk to measure, or name one with --dir",
            dir.display()
        );
    }
    if in_memory {
        eprintln!(
            "warning: {} is on {filesystem}: fsync costs nothing there, so these numbers say nothing about a disk",
            dir.display()
        );
    }
    let mut budget = if args.quick { Budget::QUICK } else { Budget::FULL };
    match args.sample_ms {
        Some(0) => bail!("--sample-ms must be at least 1"),
        Some(millis) => budget.sample = std::time::Duration::from_millis(millis),
        None => {}
    }
    let sut = outside_store(args)?;
    // Suspensions need crashsim's VFS extension in the store's SQLite: a
    // default selection leaves `sut_suspend` out without it, `--only` asks.
    let mut configs = configs;
    if let Some(adapter) = &sut
        && !adapter.vfs().loaded()
        && configs.iter().any(|config| config.name == plan::SUSPEND)
    {
        // A filter that names it alone asks for it; a wider one (`sut`) does not.
        let asked = args.only.iter().any(|filter| {
            plan::SUSPEND.contains(filter.as_str())
                && !plan::sut()
                    .iter()
                    .any(|other| other.name != plan::SUSPEND && other.name.contains(filter.as_str()))
        });
        if asked {
            bail!(
                "--only {}: {} suspends the store's calls inside its SQLite, and the adapter's SQLite \
                 did not load crashsim's VFS extension (docs/adapter-protocol.md, \"Power loss\")",
                args.only.join(","),
                plan::SUSPEND
            );
        }
        configs.retain(|config| config.name != plan::SUSPEND);
        eprintln!(
            "note: {} left out: the adapter's SQLite did not load crashsim's VFS extension",
            plan::SUSPEND
        );
    }
    let options = Options {
        dir: dir.clone(),
        configs,
        rounds,
        budget,
        sut: sut.clone(),
        plant_slowdown: args.plant_slowdown.clone(),
    };
    let human = args.format == Format::Human;
    if human {
        let seconds = options.configs.len() as f64 * f64::from(options.rounds) * budget.sample.as_secs_f64();
        outln!(
            "bench: {} configurations × {} rounds of {} ms (≥ {:.0} s) in {} ({filesystem})",
            options.configs.len(),
            options.rounds,
            budget.sample.as_millis(),
            seconds,
            dir.display()
        );
        if let Some(adapter) = &sut {
            outln!(
                "bench: the sut_* configurations measure {}",
                identity(adapter).describe()
            );
        }
        if let Some(name) = &options.plant_slowdown {
            outln!("bench: {name}: {}", plant::NOTE);
        }
    }

    let bar = super::output::progress_bar(
        human,
        options.configs.len() as u64 * u64::from(options.rounds),
        "bench",
        "samples",
    );
    let measured = crate::bench::run(&options, |round, config| {
        bar.set_message(format!("round {}/{}: {}", round + 1, options.rounds, config.name));
        bar.inc(1);
    })?;
    bar.finish_and_clear();

    let mut record = BenchRecord::new(
        Context {
            git_commit: platform::git_commit().to_string(),
            sqlite_version: platform::sqlite_version().to_string(),
            filesystem,
            dir: dir.display().to_string(),
            vfs: default_vfs_name(),
            quick: args.quick,
            rounds: options.rounds,
            sample_ms: u64::try_from(budget.sample.as_millis()).unwrap_or(u64::MAX),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
        },
        &measured,
        sut.as_deref().map(identity),
    );
    if let (Some(baseline), Some(path)) = (&baseline, &args.baseline) {
        let now = Baseline::from_figures(&record.context, &record.configs);
        record.gate = Some(gate::compare(
            &path.display().to_string(),
            baseline,
            &now,
            args.max_regression,
        ));
    }
    let written = if args.no_report {
        None
    } else {
        Some(
            report::write(&args.report, &record)
                .with_context(|| format!("writing the bench report under {}", args.report.display()))?,
        )
    };
    if let Some(path) = &args.save_baseline {
        Baseline::from_figures(&record.context, &record.configs)
            .save(path)
            .with_context(|| format!("--save-baseline {}", path.display()))?;
    }
    if human {
        out!("{}", report::table(&record));
        if let Some(dir) = written {
            outln!(
                "note: report written to {}/ (bench.json, bench.md, bench.svg)",
                dir.display()
            );
        }
        if let Some(path) = &args.save_baseline {
            outln!("note: baseline written to {}", path.display());
        }
    } else {
        outln!("{}", serde_json::to_string(&record).expect("records serialise"));
    }
    Ok(match &record.gate {
        Some(gate) if !gate.passed => Exit::Violation,
        _ => Exit::Pass,
    })
}

/// The adapter `--sut` names, once its handshake says it serves a store.
fn outside_store(args: &BenchArgs) -> anyhow::Result<Option<Arc<Adapter>>> {
    let Choice::Outside(adapter) = Choice::from_args(&args.sut, ModeArg::InProcess, None)? else {
        return Ok(None);
    };
    if adapter.served().store.is_none() {
        bail!(
            "the adapter `{}` serves no store role (its handshake's `roles` has no `store`): \
             `bench --sut` measures a store's append path",
            adapter.command()
        );
    }
    Ok(Some(adapter))
}

fn identity(adapter: &Adapter) -> SutIdentity {
    let id = adapter.identity();
    SutIdentity {
        command: adapter.command().to_string(),
        name: id.name.clone(),
        version: id.version.clone(),
        granularity: adapter.served().store.unwrap_or_default(),
    }
}
