//! A command's work directory: one workspace of its own under `--dir`
//! (default: a tmpfs, see `runner::default_work_dir`), made after sweeping
//! the workspaces that killed runs left there.
//!
//! Every seed directory of the command lives inside its workspace, which is
//! removed when the command ends, however it ends short of SIGKILL (then
//! the next command sweeps it: its lock is free). Kept seeds
//! (`--keep-failed`) are moved out first.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::report::number;
use crate::workspace::{self, Swept, Workspace};

pub struct WorkDir {
    /// Where workspaces go (`--dir`).
    pub parent: PathBuf,
    pub workspace: Workspace,
    /// Stale workspaces removed before this one was made.
    pub swept: Vec<Swept>,
}

impl WorkDir {
    /// Sweeps `dir` (or the default) and makes this command's workspace there.
    pub fn open(dir: Option<&Path>) -> anyhow::Result<WorkDir> {
        let parent = dir.map_or_else(crate::runner::default_work_dir, Path::to_path_buf);
        if !parent.is_dir() {
            bail!("--dir {}: not a directory", parent.display());
        }
        // A sweep that cannot read the directory leaves it to `create` to say why.
        let swept = workspace::sweep_stale(&parent).unwrap_or_default();
        let workspace = Workspace::create(&parent)
            .with_context(|| format!("creating a work directory under {}", parent.display()))?;
        Ok(WorkDir {
            parent,
            workspace,
            swept,
        })
    }

    /// Where seed directories go.
    pub fn path(&self) -> PathBuf {
        self.workspace.path().to_path_buf()
    }

    /// What a person should know about the work directory: what the sweep
    /// removed, and what older versions left that no lock proves abandoned.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.swept.is_empty() {
            let bytes = self.swept.iter().map(|swept| swept.bytes).sum();
            notes.push(format!(
                "note: removed {} work {} ({}) that killed runs left in {}",
                self.swept.len(),
                if self.swept.len() == 1 {
                    "directory"
                } else {
                    "directories"
                },
                number::bytes(bytes),
                self.parent.display()
            ));
        }
        if let Ok(legacy) = workspace::legacy(&self.parent)
            && !legacy.is_empty()
        {
            let bytes: u64 = legacy.iter().map(|path| workspace::disk_usage(path)).sum();
            notes.push(format!(
                "note: {} directories of older crashsim runs ({}) are in {}: `crashsim clean --legacy --dir {}` removes them",
                legacy.len(),
                number::bytes(bytes),
                self.parent.display(),
                crate::adapter::shell_word(&self.parent.display().to_string())
            ));
        }
        notes
    }
}
