//! `crashsim clean [--dir DIR] [--dry-run] [--legacy]`: what killed runs
//! left in the work directory.
//!
//! Workspaces (`crashsim-run-*`) whose process is gone (their lock can be
//! taken) are removed; live ones are left alone. Directories of the older
//! naming (`crashsim-<label>-<seed>-XXXXXX`), which no lock can prove
//! abandoned, are listed with their sizes, and removed with `--legacy`.
//! Kept seeds (`crashsim-kept-*`, from `--keep-failed`) are never touched.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::exit::Exit;
use crate::report::number;
use crate::workspace;

#[derive(Args, Debug)]
pub struct CleanArgs {
    /// The work directory to clean (default: where `run` puts seeds:
    /// /dev/shm if it exists, else the temp dir).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Say what would be removed, and remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also remove the `crashsim-*` directories that no lock proves
    /// abandoned (made by crashsim versions before workspaces): only while
    /// no such older crashsim runs there.
    #[arg(long)]
    pub legacy: bool,
}

pub fn clean(args: &CleanArgs) -> anyhow::Result<Exit> {
    let dir = args.dir.clone().unwrap_or_else(crate::runner::default_work_dir);
    let stale = if args.dry_run {
        workspace::stale(&dir)
    } else {
        workspace::sweep_stale(&dir)
    }
    .with_context(|| format!("cleaning {}", dir.display()))?;
    let legacy = workspace::legacy(&dir).with_context(|| format!("reading {}", dir.display()))?;

    let verb = if args.dry_run { "would remove" } else { "removed" };
    for swept in &stale {
        outln!(
            "{verb} {} ({}; its run is gone)",
            swept.path.display(),
            number::bytes(swept.bytes)
        );
    }
    let mut legacy_bytes = 0;
    for path in &legacy {
        let bytes = workspace::disk_usage(path);
        legacy_bytes += bytes;
        if args.legacy {
            if !args.dry_run {
                remove(path)?;
            }
            outln!("{verb} {} ({}; legacy)", path.display(), number::bytes(bytes));
        } else {
            outln!("legacy {} ({})", path.display(), number::bytes(bytes));
        }
    }

    let stale_bytes: u64 = stale.iter().map(|swept| swept.bytes).sum();
    let mut summary = Vec::new();
    if !stale.is_empty() {
        let workspaces = count(stale.len(), "stale workspace", "stale workspaces");
        summary.push(format!("{verb} {workspaces} ({})", number::bytes(stale_bytes)));
    }
    if !legacy.is_empty() {
        let legacies = count(legacy.len(), "legacy directory", "legacy directories");
        summary.push(if args.legacy {
            format!("{verb} {legacies} ({})", number::bytes(legacy_bytes))
        } else {
            format!(
                "{legacies} ({}) left: no lock proves them abandoned; `crashsim clean --legacy` removes them \
                 once no older crashsim runs here",
                number::bytes(legacy_bytes)
            )
        });
    }
    if summary.is_empty() {
        summary.push("nothing to clean".to_string());
    }
    outln!("{}: {}", dir.display(), summary.join("; "));
    Ok(Exit::Pass)
}

fn remove(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(error).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
