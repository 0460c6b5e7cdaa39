//! The canary: every known mistake is caught, and the reference is clean,
//! at a size that fits CI. (`crashsim mutants` runs the full-size table.)

use crate::common;

use common::{crashsim, load, stdout, work_dir};
use crashsim::detect::{Settings, Subject, measure};
use crashsim::mutants::MUTANTS;
use crashsim::runner::Options;

/// The detection table at CI size: 3 ranges of up to 30 seeds, one job.
fn settings(work_dir: &std::path::Path, reference_seeds: u64) -> Settings {
    Settings {
        seeds_max: 30,
        ranges: 3,
        reference_seeds,
        jobs: 1,
        options: Options {
            work_dir: work_dir.to_path_buf(),
            keep_failed: false,
            keep_traces: false,
            sut: Default::default(),
            check_determinism: false,
            files: Default::default(),
        },
    }
}

#[test]
fn every_mutant_is_caught_and_the_reference_is_clean() {
    let dir = work_dir();
    let scenarios = vec![load("tests/fixtures/detect.toml")];
    let settings = settings(dir.path(), 30);
    // Mistake 10 needs a scenario asking for more than SQLite's default
    // FULL (detect.toml asks NORMAL: the default is stricter, no finding),
    // 11 leases, 12 a de-dup retention, a de-dup record committed after the
    // effect inside one call a power cut between the two, and ordering by a
    // timestamp clocks that step back by seconds, `LIKE` for `=` hostile
    // ids, and a lookup outside its transaction calls suspended inside
    // SQLite, a claim that skips expired leases workers holding them, and
    // a backup of the main file alone backups: each is in the table below,
    // on its own scenario.
    let lease_free: Vec<_> = MUTANTS
        .iter()
        .filter(|mutant| {
            ![10, 11, 12].contains(&mutant.mistake)
                && mutant.name != "dedup_after_effect"
                && mutant.name != "load_by_timestamp"
                && mutant.name != "mark_done_like"
                && mutant.name != "lookup_outside_txn"
                && mutant.name != "claim_unleased_only"
                && mutant.name != "backup_db_file_only"
                && mutant.name != "backup_file_set_unlocked"
        })
        .collect();
    let mutants: Vec<_> = lease_free.iter().copied().map(Subject::Mutant).collect();
    let rows = measure(&scenarios, &mutants, &settings, &|_, _| {}).unwrap();
    assert_eq!(rows.len(), lease_free.len() + 1);
    let (reference, mutant_rows) = rows.split_last().unwrap();
    assert_eq!(reference.mutant, "reference");
    assert!(!reference.caught, "the reference failed: {reference:#?}");
    for row in mutant_rows {
        assert!(row.caught, "{} escaped: {row:#?}", row.mutant);
        assert!(!row.invariants.is_empty());
        assert_eq!(row.documented_fired, Some(true), "{}: {row:#?}", row.mutant);
        let median = row.median_seeds_to_detection.expect("caught in most ranges");
        assert!(median <= 20, "{}: median {median}", row.mutant);
    }
}

/// Leases without fencing are caught by I8 in the shipped `leases.toml`,
/// which the reference passes.
#[test]
fn leases_without_fencing_are_caught_and_the_reference_with_fencing_is_clean() {
    let dir = work_dir();
    let scenarios = vec![load("scenarios/leases.toml")];
    let settings = settings(dir.path(), 10);
    let mutant = MUTANTS.iter().find(|mutant| mutant.mistake == 11).expect("mistake 11");
    let rows = measure(&scenarios, &[Subject::Mutant(mutant)], &settings, &|_, _| {}).unwrap();
    let (reference, row) = (&rows[1], &rows[0]);
    assert!(!reference.caught, "the reference failed: {reference:#?}");
    assert!(row.caught, "{} escaped: {row:#?}", row.mutant);
    assert_eq!(row.invariants, [crashsim::check::Invariant::I8], "{row:#?}");
    let median = row.median_seeds_to_detection.expect("caught in most ranges");
    assert!(median <= 5, "median {median}");
}

/// De-dup records purged before the retry horizon are caught by I2 in the
/// shipped `retries.toml`, which the reference (retention above the horizon) passes.
#[test]
fn early_dedup_purge_is_caught_and_the_reference_with_retention_is_clean() {
    let dir = work_dir();
    let scenarios = vec![load("scenarios/retries.toml")];
    let settings = settings(dir.path(), 10);
    let mutant = MUTANTS.iter().find(|mutant| mutant.mistake == 12).expect("mistake 12");
    let rows = measure(&scenarios, &[Subject::Mutant(mutant)], &settings, &|_, _| {}).unwrap();
    let (reference, row) = (&rows[1], &rows[0]);
    assert!(!reference.caught, "the reference failed: {reference:#?}");
    assert!(row.caught, "{} escaped: {row:#?}", row.mutant);
    assert!(row.invariants.contains(&crashsim::check::Invariant::I2), "{row:#?}");
    let median = row.median_seeds_to_detection.expect("caught in most ranges");
    assert!(median <= 5, "median {median}");
}

/// A receiver that commits its effect and then its de-dup record in two
/// transactions inside one call is caught by `run` on the shipped
/// `power_loss.toml`: a drawn power cut may land between the two commits.
#[test]
fn a_dedup_record_committed_after_its_effect_in_one_call_is_caught_by_a_power_cut() {
    let dir = work_dir();
    let scenarios = vec![load("scenarios/power_loss.toml")];
    let settings = settings(dir.path(), 10);
    let mutant = crashsim::mutants::by_name("dedup_after_effect").expect("known mutant");
    let rows = measure(&scenarios, &[Subject::Mutant(mutant)], &settings, &|_, _| {}).unwrap();
    let (reference, row) = (&rows[1], &rows[0]);
    assert!(!reference.caught, "the reference failed: {reference:#?}");
    assert!(row.caught, "{} escaped: {row:#?}", row.mutant);
    assert_eq!(row.documented_fired, Some(true), "{row:#?}");
    assert!(
        row.first_invariants.contains(&crashsim::check::Invariant::I2),
        "{row:#?}"
    );
}

/// The invariant each mistake is meant to trip, so a checker that stops
/// catching its own mistake (while another checker still flags the run)
/// does not go unnoticed.
#[test]
fn each_mutant_trips_its_own_invariant() {
    const DETECT: &str = "tests/fixtures/detect.toml";
    // (mutant, the invariant it must trip, a scenario that shows its mistake)
    let expected = [
        ("max_seq_plus_one", "I3", DETECT),
        ("renumber_on_conflict", "I3", DETECT),
        ("split_transactions", "I5", DETECT),
        ("deliver_before_commit", "I4", DETECT),
        ("random_key_per_attempt", "I2", DETECT),
        ("mark_done_before_confirm", "I1", DETECT),
        ("body_hash_key", "I2", DETECT),
        ("no_dedup", "I2", DETECT),
        ("dedup_apart", "I2", DETECT),
        ("dedup_after_effect", "I2", "scenarios/power_loss.toml"),
        ("replay_dispatches", "I6", DETECT),
        ("pragmas_once", "I9", "tests/fixtures/sync_extra.toml"),
        ("unfenced_mark_done", "I8", "scenarios/leases.toml"),
        ("early_dedup_purge", "I2", "scenarios/retries.toml"),
        ("sync_off", "I9", DETECT),
        ("key_case_fold", "I7", DETECT),
        ("key_trim", "I7", DETECT),
        ("autocommit", "I5", DETECT),
        ("pending_offset_drift", "I1", DETECT),
        ("load_by_timestamp", "I6", "scenarios/clocks.toml"),
        ("heads_done_unscoped", "I6", DETECT),
        // Needs workers that die holding leases.
        ("claim_unleased_only", "I1", "scenarios/leases.toml"),
        // Needs hostile ids (LIKE folds case, reads % and _), which detect.toml lacks.
        ("mark_done_like", "I1", "scenarios/smoke.toml"),
        ("dedup_first", "I1", DETECT),
        // Needs calls suspended inside SQLite: nothing else comes inside a call.
        ("lookup_outside_txn", "I2", "scenarios/interleave.toml"),
        // Needs backups taken while commits still live in the WAL.
        ("backup_db_file_only", "I11", "scenarios/backups.toml"),
        // Needs backups copied in parts while the store grows between them.
        ("backup_file_set_unlocked", "I11", "scenarios/backups.toml"),
    ];
    assert_eq!(expected.len(), MUTANTS.len());
    let mut scenarios: Vec<&str> = expected.iter().map(|(_, _, scenario)| *scenario).collect();
    scenarios.sort_unstable();
    scenarios.dedup();
    // One table per scenario, with only the mutants it is meant to show.
    for scenario in scenarios {
        let mine: Vec<(&str, &str)> = expected
            .iter()
            .filter(|(_, _, of)| *of == scenario)
            .map(|(name, invariant, _)| (*name, *invariant))
            .collect();
        let mut args = vec![
            "mutants",
            "--scenario",
            scenario,
            "--seeds",
            "30",
            "--ranges",
            "1",
            "--reference-seeds",
            "3",
            "--format",
            "json",
            "--no-report",
        ];
        for (name, _) in &mine {
            args.extend(["--mutant", name]);
        }
        let output = crashsim(&args);
        assert_eq!(output.status.code(), Some(0), "{scenario}: {}", stdout(&output));
        let rows: Vec<serde_json::Value> = stdout(&output)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), mine.len() + 1);
        for (row, (name, invariant)) in rows.iter().zip(mine) {
            assert_eq!(row["mutant"], name);
            for key in [
                "caught",
                "invariants",
                "first_invariants",
                "first_seed",
                "median_seeds_to_detection",
                "wall_ms",
            ] {
                assert!(row.get(key).is_some(), "{name}: no {key} in {row}");
            }
            assert_eq!(row["caught"], true, "{row}");
            let invariants: Vec<&str> = row["invariants"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert!(
                invariants.contains(&invariant),
                "{name}: {invariants:?}, expected {invariant}"
            );
            // Not only some invariant: the one the mistake breaks fired.
            assert_eq!(row["documented_fired"], true, "{row}");
            assert!(
                row["caught_by"].as_array().unwrap().iter().any(|v| v == invariant),
                "{name}: documents {invariant}: {row}"
            );
        }
        let reference = rows.last().unwrap();
        assert_eq!(reference["mutant"], "reference");
        assert_eq!(reference["caught"], false);
    }
}

/// A store whose reads answer wrongly is caught by a shipped scenario, and
/// the first line names the answer: `pending` hiding rows (I1) in
/// `smoke.toml`, `load` ordered by a timestamp (I6) in `clocks.toml`,
/// `claim` leaving out expired leases (I1) in `leases.toml`.
#[test]
fn wrong_answers_are_caught_by_shipped_scenarios_and_named_first() {
    for (scenario, mutant, invariant, words) in [
        ("smoke", "pending_offset_drift", "I1", "pending(limit"),
        ("clocks", "load_by_timestamp", "I6", "(out of seq order)"),
        ("leases", "claim_unleased_only", "I1", "more were claimable"),
    ] {
        let dir = work_dir();
        let report = dir.path().join("report");
        let output = crashsim(&[
            "run",
            scenario,
            "--mutant",
            mutant,
            "--seeds",
            "1",
            "--report",
            report.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(1), "{mutant}: {}", stdout(&output));
        let out = stdout(&output);
        let first = out
            .lines()
            .find(|line| line.starts_with("fail: seed=0"))
            .unwrap_or_default();
        assert!(
            first.contains(&format!("{invariant} ")) && first.contains(words),
            "{mutant}: the first line names the wrong answer: {out}"
        );
    }
}

#[test]
fn a_mutant_whose_difference_the_scenario_never_calls_runs_as_the_reference_and_is_not_searched() {
    // The table skips such a pair (zero seeds, and why); that is only true
    // if the mutant's runs there are the reference's, trace for trace.
    let dir = work_dir();
    let mut checked = 0;
    for name in ["smoke", "leases", "retries", "backups"] {
        let loaded = load(&format!("scenarios/{name}.toml"));
        let options = common::options(dir.path());
        let reference: Vec<_> = (0..2)
            .map(|seed| crashsim::runner::run_seed(&loaded, seed, &options).unwrap().trace_hash)
            .collect();
        for mutant in MUTANTS.iter() {
            let subject = Subject::Mutant(mutant);
            let Some(why) = subject.identical_on(&loaded) else {
                continue;
            };
            assert!(why.starts_with("identical to the reference here: "), "{why}");
            let (mutated, options) = subject.prepare(&loaded, &options);
            for (seed, hash) in reference.iter().enumerate() {
                let result = crashsim::runner::run_seed(&mutated, seed as u64, &options).unwrap();
                assert_eq!(&result.trace_hash, hash, "{} on {name}, seed {seed}", mutant.name);
            }
            checked += 1;
        }
    }
    // Five on smoke, three on leases (no retention, no backups), four on
    // retries (no leases, no backups), three on backups (no leases, no
    // retention).
    assert_eq!(
        checked,
        5 + 3 + 4 + 3,
        "the mutants that live in calls some scenarios never make"
    );
    let scenarios = vec![load("scenarios/smoke.toml")];
    let mutants: Vec<_> = ["claim_unleased_only", "no_dedup"]
        .map(|name| Subject::Mutant(crashsim::mutants::by_name(name).unwrap()))
        .to_vec();
    let rows = measure(&scenarios, &mutants, &settings(dir.path(), 1), &|_, _| {}).unwrap();
    let skipped = &rows[0].scenarios[0];
    assert_eq!(skipped.seeds_run, 0);
    assert!(skipped.not_searched.as_deref().unwrap().contains("no [leases]"));
    assert!(!rows[0].caught);
    assert!(rows[1].caught && rows[1].scenarios[0].not_searched.is_none());
}

#[test]
fn a_mutant_no_given_scenario_can_run_apart_from_the_reference_is_untested() {
    let dir = work_dir();
    let scenarios = vec![load("scenarios/smoke.toml")];
    let mutants = vec![Subject::Mutant(
        crashsim::mutants::by_name("backup_db_file_only").unwrap(),
    )];
    let rows = measure(&scenarios, &mutants, &settings(dir.path(), 1), &|_, _| {}).unwrap();
    assert!(rows[0].untested() && !rows[0].ok());
    assert_eq!(crashsim::detect::verdict(&rows[0]), "UNTESTED");
    assert_eq!(rows[0].seeds_run, 0);
}
