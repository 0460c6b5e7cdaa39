//! `crashsim bench`: append throughput under `synchronous=FULL`, measured
//! next to the disk's own durable-write limit in the same run.
//!
//! Every configuration writes to its own files in one directory of the disk
//! under test. The limit is a raw loop (4 KiB overwrite + fsync); the rest
//! run crashsim's own store code, through a VFS that counts every sync, so
//! fsyncs per commit are counted, not assumed. Configurations run
//! interleaved, round by round, so slow drift and a neighbour's noise hit
//! all of them alike; each is reported as the median and range of its
//! per-round rates and the percentiles of all its commit latencies.
//!
//! - `plan`: the configurations, by name.
//! - `measure`: the wall clock, samples, medians and percentiles.
//! - `raw`: the limit (overwrite + fsync, append + fdatasync).
//! - `sqlite`: one connection: append per `synchronous`, outbox, batches,
//!   the group committer's transaction alone (`groups16`, the ceiling of
//!   `group_commit16`), a connection per append.
//! - `threads`: many threads: one connection each, or one group committer.
//! - `sut`: an outside store (`--sut CMD`) over the adapter protocol: its
//!   append path and its no-op request, each on a session of its own; its
//!   syncs happen in another process, so they are unknown, never 0.
//! - `run`: rounds × configurations; `figures`: the context and each
//!   configuration's numbers; `record`: the JSON record made of them;
//!   `sut_record`: the outside store's part of it; `report`: tables and
//!   files (`columns`: aligned text); `chart`: the SVG.
//! - `baseline`: each configuration's ratio to the limit and its noise, saved
//!   (`--save-baseline`) and read back (`--baseline`); `gate`: the pure
//!   comparison of a run with a baseline, the regression verdict and its
//!   table; `plant`: the extra sync `--plant-slowdown` adds, to show the
//!   gate failing for real.
//!
//! Wall-clock time is fine here: the bench reports, it never steers a
//! simulation. Timings are never asserted in tests.

pub mod baseline;
pub mod chart;
pub mod columns;
pub mod figures;
pub mod gate;
pub mod measure;
pub mod plan;
pub mod plant;
pub mod raw;
pub mod record;
pub mod report;
pub mod run;
pub mod sqlite;
pub mod sut;
pub mod sut_record;
pub mod threads;

pub use measure::Budget;
pub use record::BenchRecord;
pub use run::{BenchError, Options, run};
