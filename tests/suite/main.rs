//! The integration tests, one module per file, in one test binary: linking
//! crashsim into each of 38 binaries took minutes of every CI run
//! (docs/development.md). Apart, with binaries of their own: `gate` (its
//! long run is `--test gate`), `power` and `power_bytes` (`.ci/valgrind`
//! runs them under valgrind), `readme_walkthrough` and `ci_templates`
//! (`.ci/wheel` runs them on the wheel), `library_preempt` (its own
//! `main`). `cargo test --test suite preempt::` runs one module.

#[path = "../common/mod.rs"]
mod common;

mod adapter;
mod adapter_python;
mod adapter_python_backups;
mod adapter_sqlalchemy;
mod backups;
mod bench;
mod builtin;
mod capsules;
mod ci_at_scale;
mod clean;
mod cli;
mod cli_docs;
mod default_synchronous;
mod determinism;
mod docs_commands;
mod durability_outside;
mod explore;
mod faults;
mod first_cause;
mod fork_server;
mod interrupt;
mod interrupted_runs;
mod library;
mod mutants;
mod payload_json;
mod power_outside;
mod preempt;
mod process;
mod release_workflow;
mod replay;
mod report_hostile;
mod report_html;
mod scenarios;
mod schedule;
mod sdk_version;
mod store_model;
mod store_sources;
mod verdicts;
