//! The figures of one bench run that everything else is made from: where
//! the run happened (`Context`) and each configuration's numbers
//! (`ConfigRecord`). The record (`record`), the outside store's ratios
//! (`sut_record`), the baseline (`baseline`) and the chart read them.

use serde::{Deserialize, Serialize};

/// Where the run happened and with what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Context {
    pub git_commit: String,
    pub sqlite_version: String,
    /// The filesystem of `dir` (`ext4`, `xfs`, `tmpfs`…).
    pub filesystem: String,
    pub dir: String,
    /// The VFS the counting shim forwards to.
    pub vfs: String,
    pub quick: bool,
    pub rounds: u32,
    pub sample_ms: u64,
    pub cores: usize,
}

/// One configuration's figures: medians over the rounds, with ranges.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigRecord {
    pub name: String,
    pub description: String,
    /// Whether this measured the outside store (`--sut`), not crashsim's own code.
    #[serde(default)]
    pub sut: bool,
    /// Threads appending concurrently.
    pub writers: usize,
    pub appends_per_s: f64,
    pub appends_per_s_min: f64,
    pub appends_per_s_max: f64,
    /// SQLite transactions committed per second (groups, for group commit).
    pub commits_per_s: f64,
    pub commits_per_s_min: f64,
    pub commits_per_s_max: f64,
    /// Appends per SQLite commit: the batch or mean group size.
    pub appends_per_commit: f64,
    /// Counted file and directory syncs per SQLite commit; `null` when they
    /// cannot be counted (an outside store syncs in its own process).
    pub fsyncs_per_commit: Option<f64>,
    /// Commit latency per acknowledged transaction, from its caller's side.
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// The median over the rounds of this round's appends/s ÷ the limit's
    /// (`raw_overwrite_fsync_4k`) in the same round: each configuration is
    /// paired with the disk as it was while it ran.
    pub ratio_to_limit: f64,
    /// The per-round ratios `ratio_to_limit` is the median of, in round order.
    #[serde(default)]
    pub ratios_to_limit: Vec<f64>,
    /// Their relative spread: median absolute deviation ÷ median
    /// (`measure::relative_mad`); the noise `--baseline` allows for.
    #[serde(default)]
    pub ratio_noise: f64,
    pub commits: u64,
    /// Transactions that failed (busy timeouts); excluded from the rates.
    pub errors: u64,
    /// Something to know about how it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
