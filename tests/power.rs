//! Power loss: the durability table shows what SQLite documents, the
//! power-loss scenario holds every invariant, mixed durability leaves ghost
//! effects, NORMAL on both databases is blamed only for what it allows,
//! forced cuts replay exactly, mutant 13 is caught, and every cut point of
//! a small run can be enumerated.

mod common;

use std::collections::BTreeSet;

use common::{crashsim, load, options, stdout, work_dir};
use crashsim::check::Invariant;
use crashsim::durability::exhaustive::enumerate;
use crashsim::durability::table::{Config, measure};
use crashsim::faults::{Fault, FaultSource};
use crashsim::runner::{run_seed, run_seed_with};
use crashsim::store::{JournalMode, Synchronous};
use crashsim::trace::Op;
use crashsim::vfs::Model;

const CUTS: u64 = 40;

fn row(journal_mode: JournalMode, synchronous: Synchronous, model: Model) -> crashsim::durability::table::Row {
    let dir = work_dir();
    let config = Config {
        journal_mode,
        synchronous,
        model,
    };
    measure(&config, CUTS, 7, dir.path()).unwrap()
}

#[test]
fn wal_full_loses_no_acknowledged_commit_and_stays_consistent() {
    for model in [Model::DropUnsynced, Model::Random] {
        let row = row(JournalMode::Wal, Synchronous::Full, model);
        assert_eq!(row.runs_losing_acked, 0, "{row:?}");
        assert_eq!(row.inconsistent_runs, 0, "{row:?}");
    }
}

#[test]
fn wal_normal_loses_only_a_tail() {
    let row = row(JournalMode::Wal, Synchronous::Normal, Model::Random);
    assert!(row.runs_losing_acked > 0, "the model bites: {row:?}");
    assert!(row.tail_only, "{row:?}");
    assert_eq!(row.inconsistent_runs, 0, "{row:?}");
}

#[test]
fn wal_off_loses_or_corrupts() {
    let row = row(JournalMode::Wal, Synchronous::Off, Model::Random);
    assert!(row.runs_losing_acked + row.inconsistent_runs > 0, "{row:?}");
}

#[test]
fn rollback_journal_full_may_lose_the_last_commit_and_extra_never() {
    let full = row(JournalMode::Delete, Synchronous::Full, Model::DropUnsynced);
    assert!(full.runs_losing_acked > 0 && full.max_acked_lost == 1, "{full:?}");
    let extra = row(JournalMode::Delete, Synchronous::Extra, Model::DropUnsynced);
    assert_eq!(extra.runs_losing_acked, 0, "{extra:?}");
}

#[test]
fn the_power_loss_scenario_cuts_and_holds() {
    let dir = work_dir();
    let loaded = load("scenarios/power_loss.toml");
    let mut cuts = 0;
    for seed in 0..12 {
        let result = run_seed(&loaded, seed, &options(dir.path())).unwrap();
        assert!(result.ok, "seed {seed}: {:#?}", result.violations);
        cuts += result
            .events
            .unwrap()
            .iter()
            .filter(|event| matches!(event.op, Op::PowerCut { .. }))
            .count();
    }
    assert!(cuts >= 12, "too few cuts to mean anything: {cuts}");
}

#[test]
fn mixed_durability_leaves_ghost_effects_and_full_on_both_prevents_them() {
    let dir = work_dir();
    let mixed = load("scenarios/demonstrations/ghost_effect.toml");
    let mut full = mixed.clone();
    full.scenario.sqlite.synchronous = Synchronous::Full;
    full.scenario.sqlite.receiver_synchronous = Some(Synchronous::Full);
    let mut ghost_seed = None;
    for seed in 0..5 {
        let result = run_seed(&mixed, seed, &options(dir.path())).unwrap();
        let ghost = result
            .violations
            .iter()
            .any(|v| v.invariant == Invariant::I4 && v.message.contains("ghost"));
        if ghost {
            ghost_seed = Some(seed);
            break;
        }
    }
    let seed = ghost_seed.expect("store on NORMAL, receiver on FULL: a cut must leave a ghost effect");
    // The control: the same seeds with FULL on both databases hold everything.
    for seed in 0..=seed {
        let result = run_seed(&full, seed, &options(dir.path())).unwrap();
        assert!(result.ok, "FULL on both, seed {seed}: {:#?}", result.violations);
    }
}

/// Issue 37 §5: on synchronous=NORMAL a cut may take a receiver's unsynced
/// tail, and with it the effect that made an earlier answer right. The
/// reference is blamed only for what NORMAL allows (I4 ghost effects), never
/// with I7 or I1. Each seed loses an acknowledged effect to a cut; before
/// answers were judged at their tick, the near-miss seeds failed I7 (a
/// probe's duplicate answered as a repeat of the probe's own effect) and
/// the power_loss seeds I1 (rows marked done while their effect stood).
#[test]
fn on_normal_the_reference_is_blamed_only_for_what_normal_allows() {
    let dir = work_dir();
    let near = load("tests/fixtures/near_miss_normal.toml");
    let mut power = load("scenarios/power_loss.toml");
    power.scenario.sqlite.synchronous = Synchronous::Normal;
    power.scenario.sqlite.receiver_synchronous = Some(Synchronous::Normal);
    for (loaded, seed) in [(&near, 0), (&near, 3), (&power, 68), (&power, 92)] {
        let result = run_seed(loaded, seed, &options(dir.path())).unwrap();
        let label = format!("{} seed {seed}", loaded.label());
        assert!(
            lost_an_acknowledged_effect(&result),
            "{label}: a cut must take a receiver's tail"
        );
        let blamed: Vec<_> = result
            .violations
            .iter()
            .filter(|violation| !(violation.invariant == Invariant::I4 && violation.message.contains("ghost")))
            .collect();
        assert!(blamed.is_empty(), "{label}: only ghost effects (I4): {blamed:#?}");
    }
}

/// Whether an effect a receiver committed is missing from the final dump
/// (only a power cut takes one back).
fn lost_an_acknowledged_effect(result: &crashsim::runner::SeedResult) -> bool {
    let events = result.events.as_ref().expect("traces kept");
    let snapshot = result.snapshot.as_ref().expect("dump kept");
    let mut applying = std::collections::BTreeMap::new();
    let mut acknowledged = Vec::new();
    for event in events {
        match &event.op {
            Op::Apply { key, effect_id, .. } => {
                applying.insert(event.actor, (key, *effect_id));
            }
            Op::Commit { .. } => acknowledged.extend(applying.remove(&event.actor)),
            Op::Kill { .. } => {
                applying.remove(&event.actor);
            }
            _ => {}
        }
    }
    acknowledged.iter().any(|(key, effect_id)| {
        !snapshot
            .effects
            .iter()
            .any(|effect| effect.effect_id == *effect_id && &effect.key == *key)
    })
}

#[test]
fn a_forced_power_cut_replays_exactly() {
    let dir = work_dir();
    let loaded = load("scenarios/power_loss.toml");
    let drawn = run_seed(&loaded, 2, &options(dir.path())).unwrap();
    assert!(drawn.injected.iter().any(|i| matches!(i.fault, Fault::PowerCut { .. })));
    let schedule = FaultSource::Forced(drawn.injected.iter().map(|i| i.fault.clone()).collect());
    let forced = run_seed_with(&loaded, 2, &options(dir.path()), schedule).unwrap();
    assert_eq!(drawn.trace_hash, forced.trace_hash);
    // The forced run records its forced cuts again: its schedule is the
    // drawn one, so a capsule of a forced (shrunk) run keeps its cuts.
    assert_eq!(drawn.injected, forced.injected);
}

/// Ending rule 7: what recovery found after a cut is judged at the settle
/// check after it, and a ghost effect stops the faults there; the run ends
/// a grace later and leads with the finding a run to its budget leads with.
/// (Seeds 0 and 2 once led with the effect's own tick instead: their
/// outbox row, lost in the cut, was not committed again yet. A cut that
/// left an effect a ghost is its cause, named at the cut.)
#[test]
fn a_ghost_effect_is_judged_at_its_cut_and_leads_as_in_a_run_to_the_budget() {
    let dir = work_dir();
    let today = load("scenarios/demonstrations/ghost_effect.toml");
    let mut full = today.clone();
    full.scenario.run.end_when_certain = false;
    for seed in [0, 2] {
        let early = run_seed(&today, seed, &options(dir.path())).unwrap();
        let late = run_seed(&full, seed, &options(dir.path())).unwrap();
        assert!(!early.ok && !late.ok, "seed {seed}");
        assert_eq!(early.violations[0], late.violations[0], "seed {seed}");
        assert!(
            early.steps * 3 < late.steps,
            "seed {seed}: {} and {}",
            early.steps,
            late.steps
        );
    }
}

#[test]
fn mutant_13_loses_acknowledged_commits_in_the_power_loss_scenario() {
    let dir = work_dir();
    let mut loaded = load("scenarios/power_loss.toml").with_mutant("sync_off").unwrap();
    // Faults to the end of their phase: today its connections' settings,
    // certain at tick 0, stop them at the first settle check (rule 6).
    loaded.scenario.run.end_when_certain = false;
    let lost = (0..10).any(|seed| {
        let result = run_seed(&loaded, seed, &options(dir.path())).unwrap();
        result
            .violations
            .iter()
            .any(|v| v.invariant == Invariant::I9 && v.message.contains("lost in the power cut"))
    });
    assert!(lost, "synchronous=OFF must lose an acknowledged commit to some cut");
}

#[test]
fn every_cut_point_of_a_small_run_is_judged() {
    let dir = work_dir();
    let loaded = load("tests/fixtures/power_small.toml");
    let found = enumerate(&loaded, 1, 7, Some(40), &options(dir.path()), &mut |_, _| {}).unwrap();
    assert!(found.points > 40, "{found:?}");
    assert_eq!(found.tried, 40);
    assert_eq!(found.failing, 0, "WAL + FULL survives every cut: {found:?}");
    // Every 9th point, so the kept failures reach cuts late in the run.
    let broken = load("tests/fixtures/power_small.toml").with_mutant("sync_off").unwrap();
    let found = enumerate(&broken, 1, 9, Some(40), &options(dir.path()), &mut |_, _| {}).unwrap();
    let invariants: BTreeSet<Invariant> = found.by_invariant.keys().copied().collect();
    assert!(invariants.contains(&Invariant::I9), "{found:?}");
    // Not only the settings probe: some cut really took back an acknowledged commit.
    let lost = found
        .failures
        .iter()
        .flat_map(|failure| &failure.violations)
        .any(|violation| violation.contains("lost in the power cut"));
    assert!(lost, "{found:#?}");
}

#[test]
fn an_enumerated_crash_state_replays_from_its_printed_command() {
    let output = crashsim(&[
        "durability",
        "--exhaustive",
        "tests/fixtures/power_small.toml",
        "--mutant",
        "sync_off",
        "--every",
        "9",
        "--max-points",
        "12",
        "--no-report",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let text = stdout(&output);
    let last = text
        .lines()
        .filter_map(|line| line.strip_prefix("note: replay with `"))
        .next_back()
        .expect("a replay command per kept failing point");
    let words: Vec<&str> = last.trim_end_matches('`').split(' ').collect();
    let replay = &words[words.iter().position(|w| *w == "replay").unwrap()..];
    assert!(replay.contains(&"--cut"), "{last}");
    let mut args = replay.to_vec();
    args.push("--quiet");
    let again = crashsim(&args);
    assert_eq!(again.status.code(), Some(1), "{}", stdout(&again));
    assert!(stdout(&again).contains("lost in the power cut"), "{}", stdout(&again));
}

/// `durability --backups`: one row per journal mode, level, method and
/// cut; an online backup on WAL + FULL is whole, a copy of the main file
/// alone lacks appends the WAL held, and that copy is whole in
/// rollback-journal mode without a cut.
#[test]
fn the_backup_table_shows_a_main_file_copy_lacking_what_the_wal_held() {
    let output = crashsim(&[
        "durability",
        "--backups",
        "--cuts",
        "6",
        "--format",
        "json",
        "--no-report",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let rows: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 16);
    let row = |journal: &str, level: &str, method: &str, cut: bool| {
        rows.iter()
            .find(|row| {
                row["journal_mode"] == journal.to_lowercase().as_str()
                    && row["synchronous"] == level.to_lowercase().as_str()
                    && row["method"] == method
                    && row["cut"] == cut
            })
            .unwrap_or_else(|| panic!("no row {journal} {level} {method} {cut}"))
    };
    for cut in [false, true] {
        let online = row("WAL", "FULL", "online", cut);
        assert_eq!(
            (online["gone"].as_u64(), online["lacking"].as_u64()),
            (Some(0), Some(0)),
            "{online}"
        );
    }
    assert!(row("WAL", "FULL", "main_file", false)["lacking"].as_u64() > Some(0));
    assert_eq!(row("DELETE", "EXTRA", "main_file", false)["lacking"].as_u64(), Some(0));
    let output = crashsim(&["durability", "--backups", "--sut", "python3 x.py", "--no-report"]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
}

#[test]
fn the_durability_command_prints_one_row_per_setting() {
    let output = crashsim(&["durability", "--cuts", "10", "--format", "json", "--no-report"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let rows: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 10);
    for row in &rows {
        for key in [
            "journal_mode",
            "synchronous",
            "model",
            "cuts",
            "runs_losing_acked",
            "max_acked_lost",
            "inconsistent_runs",
        ] {
            assert!(row.get(key).is_some(), "no {key} in {row}");
        }
    }
}

/// The human summary and `summary.md` count the power cuts (and every
/// other fault besides kills), not only `summary.json`.
#[test]
fn the_summary_says_how_often_the_power_was_cut() {
    let dir = work_dir();
    let report = dir.path().join("reports");
    let report = report.to_str().unwrap();
    let output = crashsim(&["run", "power_loss", "--seeds", "6", "--report", report]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let line = stdout(&output)
        .lines()
        .find(|line| line.trim_start().starts_with("faults fired:"))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no faults line: {}", stdout(&output)));
    assert!(line.contains(" power cuts (in "), "{line}");
    let markdown = std::fs::read_to_string(dir.path().join("reports/power_loss/summary.md")).unwrap();
    assert!(markdown.contains("power cuts (in "), "{markdown}");
}
