//! crashsim: a deterministic fault-injection harness for durable-workflow
//! storage built on SQLite.
//!
//! Architecture, one line per module:
//!
//! - `scenario`  scenario files (TOML) → validated `Scenario`; errors name file, line, key.
//! - `sim`       the simulator: one seed, one thread, simulated time, event queue; it injects the faults.
//! - `faults`    the fault plan: kill points, network faults and probes, their rates, the seeded draws and a forced schedule.
//! - `prng`      the seeded PRNG (ChaCha8) and its per-component streams, derived by name from the seed.
//! - `actors`    writers, workers and receivers: step machines over their own connections.
//! - `store`     the code under test: traits, the reference and group-commit implementations; unaware of the sim.
//! - `adapter`   outside stores in any language: the adapter protocol's client, and `crashsim serve`.
//! - `vfs`       SQLite VFS shims through `rusqlite::ffi`: the forwarding shim, a counting VFS, the crash VFS (power loss).
//! - `workflow`  the pure trip-booking saga: `decide`, replay, canonical payloads.
//! - `model`     the protocol's records (events, commands, outbox rows).
//! - `workload`  the workload's text: workflow ids and payload strings, polite or hostile; near-miss keys.
//! - `mutants`   the protocol's classic mistakes, each an implementation one override away from the reference.
//! - `check`     read-only checkers of invariants I1–I11 over the trace and the final files.
//! - `invariant` the invariants' names (I1–I11, A1, D1): what checkers judge and mutants are caught by.
//! - `trace`     recorded steps, JSON Lines, trace hash, human rendering.
//! - `runner`    one seed end to end; many seeds in parallel; D1 (`runner::determinism`): a seed run
//!   twice, and the first answer that differed.
//! - `harness`   the library API: your own Rust store under a scenario and seeds, verdicts, replays, reports.
//! - `detect`    detection power: seeds-to-detection of each mutant, the reference kept clean.
//! - `shrink`    greedy delta debugging of a failing run over its forced fault schedule.
//! - `capsule`   replay capsules: a run as a small TOML file that replays it exactly.
//! - `report`    files under `reports/`: JSON, JUnit, Markdown, failing seeds' traces and HTML pages, written atomically.
//! - `durability` what power cuts do under each setting (the table), and every cut point of a run enumerated.
//! - `bench`     append throughput and commit latency next to the disk's fsync limit (`crashsim bench`).
//! - `cli`       the command line (clap): run, replay, shrink, mutants, durability, bench, list, show, clean.
//! - `workspace` one locked directory per invocation for the seeds' directories; the sweep of those a killed run left.
//! - `interrupt` SIGINT/SIGTERM: stop at the first, quit cleaned up at the second; directories and process groups to clean.
//! - `watchdog`  a `/bin/sh` loop that kills the adapters' process groups if crashsim itself is `SIGKILL`ed.
//! - `ratio`, `seed`, `exit`, `platform`: small shared values and facts.

pub mod actors;
pub mod adapter;
pub mod bench;
pub mod capsule;
pub mod check;
pub mod cli;
pub mod detect;
pub mod durability;
pub mod exit;
pub mod explore;
pub mod faults;
pub mod harness;
pub mod interrupt;
pub mod invariant;
pub mod model;
pub mod mutants;
pub mod platform;
pub mod prng;
pub mod ratio;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod seed;
pub mod shrink;
pub mod sim;
pub mod store;
pub mod trace;
pub mod vfs;
mod watchdog;
pub mod workflow;
pub mod workload;
pub mod workspace;

/// D1 lives with the runner that runs a seed twice; its old path still names it.
pub use runner::determinism;
