//! Shrinking and replay capsules: a shrunk failure is no larger than the
//! original and fails the same way; a capsule round-trips through its file
//! and replays to the same trace; the regression corpus keeps its verdicts.

use crate::common;

use common::{crashsim, load, options, root, stderr, stdout, work_dir};
use crashsim::capsule::{Capsule, Verdict};
use crashsim::runner::{run_seed, run_seed_with};
use crashsim::shrink::shrink;

#[test]
fn a_shrunk_failure_is_smaller_and_fails_the_same_way() {
    let dir = work_dir();
    let loaded = load("scenarios/smoke.toml").with_mutant("dedup_apart").unwrap();
    let original = run_seed(&loaded, 0, &options(dir.path())).unwrap();
    assert!(!original.ok);
    let target = original.violations[0].invariant;
    let shrunk = shrink(&loaded, 0, &options(dir.path()), 500, &mut |_| {}).unwrap();
    assert_eq!(shrunk.target, target);
    assert!(shrunk.result.violations.iter().any(|v| v.invariant == target));
    let (before, after) = (shrunk.original, shrunk.shrunk);
    assert!(
        after.steps <= before.steps && after.faults <= before.faults,
        "{before:?} -> {after:?}"
    );
    assert!(
        after.workflows <= before.workflows && after.actors <= before.actors,
        "{before:?} -> {after:?}"
    );
    assert!(after.steps < before.steps, "shrinking made no progress: {before:?}");

    // The capsule of the shrunk run replays to the same run.
    let capsule = Capsule::of_run(&shrunk.loaded, &shrunk.result);
    let path = dir.path().join("capsule.toml");
    std::fs::write(&path, capsule.to_toml()).unwrap();
    let read = Capsule::read(&path).unwrap();
    assert_eq!(read.expect.verdict, Verdict::Fail);
    assert_eq!(read.expect.invariant, Some(target));
    assert_eq!(read.schedule, capsule.schedule);
    let replayed = run_seed_with(&read.loaded(&path), read.seed, &options(dir.path()), read.faults()).unwrap();
    assert_eq!(replayed.trace_hash, shrunk.result.trace_hash);
    assert_eq!(read.judge(&replayed), Ok(()));
}

/// The workflows of a run: those its writers committed events of.
fn workflows(result: &crashsim::runner::SeedResult) -> std::collections::BTreeSet<String> {
    let events = result.events.as_ref().expect("traces kept");
    events
        .iter()
        .filter_map(|event| match &event.op {
            crashsim::trace::Op::Commit { appended } => Some(appended.iter().map(|a| a.workflow_id.clone())),
            _ => None,
        })
        .flatten()
        .collect()
}

/// `workload.trips_kept` (what `shrink` writes when it drops trips one by
/// one): only the kept trips of those drawn run, with the ids they have in
/// the run of them all.
#[test]
fn kept_trips_are_the_only_workflows_a_run_has() {
    let dir = work_dir();
    let mut loaded = load("scenarios/smoke.toml");
    loaded.scenario.workload.trips_count = 6;
    let all = workflows(&run_seed(&loaded, 0, &options(dir.path())).unwrap());
    assert_eq!(all.len(), 6, "{all:?}");
    loaded.scenario.workload.trips_kept = Some(vec![1, 4]);
    let kept = workflows(&run_seed(&loaded, 0, &options(dir.path())).unwrap());
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(kept.is_subset(&all), "{kept:?} of {all:?}");
}

#[test]
fn the_shrink_command_writes_a_capsule_that_replays() {
    let dir = work_dir();
    let capsule = dir.path().join("c.toml");
    let report = dir.path().join("reports");
    let output = crashsim(&[
        "shrink",
        "scenarios/smoke.toml",
        "--mutant",
        "no_dedup",
        "--seed",
        "3",
        "--out",
        capsule.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}{}", stdout(&output), stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("original") && text.contains("shrunk"), "{text}");
    let folder = report.join("shrink").join("smoke+no_dedup-3");
    for file in [
        "summary.json",
        "junit.xml",
        "summary.md",
        "capsule.toml",
        "trace.jsonl",
        "result.json",
    ] {
        assert!(folder.join(file).exists(), "{file} missing in {}", folder.display());
    }
    let replay = crashsim(&["replay", "--capsule", capsule.to_str().unwrap(), "--quiet"]);
    assert_eq!(replay.status.code(), Some(1), "the capsule still fails");
    assert!(stderr(&replay).contains("verdict is reproduced"), "{}", stderr(&replay));
    assert!(stdout(&replay).contains("I2"), "{}", stdout(&replay));
}

#[test]
fn a_passing_run_saved_as_a_capsule_keeps_passing() {
    let dir = work_dir();
    let capsule = dir.path().join("pass.toml");
    let output = crashsim(&[
        "replay",
        "scenarios/crash_storm.toml",
        "--seed",
        "2",
        "--quiet",
        "--save-capsule",
        capsule.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let read = Capsule::read(&capsule).unwrap();
    assert_eq!(read.expect.verdict, Verdict::Pass);
    assert!(!read.schedule.is_empty());
    let replay = crashsim(&["replay", "--capsule", capsule.to_str().unwrap(), "--quiet"]);
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
}

/// Capsules recorded under an older ending rule replay with that rule, to
/// the very trace they recorded, and are saved again in their format; the
/// same seeds under today's rule end sooner. Rule 2 (format 2, at e4d0446:
/// faults on to the end of their phase, only stale appends judged early,
/// the whole retry chain in the stall window); rule 3 (format 3, at
/// 1a18c7e: runs with power loss or restores never judged early); rule 4
/// (format 4, at c976043: an effect applied twice judged after the run);
/// rule 5 (format 5, at 0ab088f: I9 by the connections' settings judged
/// after the run, faults of a run with power loss to the end of their
/// phase); rule 6 (format 6, at 58156f6: what recovery found after a cut,
/// here a ghost effect, judged after the fault phase); rule 7 (format 7,
/// at e64dbf9: I8's late acknowledgement judged after the run).
#[test]
fn capsules_of_an_older_ending_rule_replay_to_the_trace_they_recorded() {
    let dir = work_dir();
    let fixtures = [
        (2, "clocks+load_by_timestamp-0"),
        (2, "retries+mark_done_before_confirm-0"),
        (3, "power_loss+max_seq_plus_one-0"),
        (3, "restores+max_seq_plus_one-0"),
        (4, "smoke+no_dedup-0"),
        (4, "interleave+lookup_outside_txn-0"),
        (5, "power_loss+sync_off-0"),
        (5, "power_loss+pragmas_once-0"),
        (6, "ghost_effect-0"),
        (7, "leases+unfenced_mark_done-0"),
    ];
    for (rule, name) in fixtures {
        let path = root().join(format!("tests/fixtures/capsules_rule{rule}/{name}.toml"));
        let format = format!("crashsim-capsule/{rule}");
        let capsule = Capsule::read(&path).unwrap();
        assert_eq!(capsule.format, format);
        assert_eq!(capsule.scenario.run.ending_rule, rule, "{name}");
        let loaded = capsule.loaded(&path);
        let replayed = run_seed_with(&loaded, capsule.seed, &options(dir.path()), capsule.faults()).unwrap();
        assert_eq!(capsule.judge(&replayed), Ok(()), "{name}");
        assert_eq!(
            (replayed.trace_hash.as_str(), replayed.steps),
            (capsule.trace_hash.as_str(), capsule.steps),
            "{name}"
        );
        assert_eq!(Capsule::of_run(&loaded, &replayed).format, format);
        let mut today = loaded.clone();
        today.scenario.run.ending_rule = crashsim::scenario::ENDING_RULE;
        let today = run_seed_with(&today, capsule.seed, &options(dir.path()), capsule.faults()).unwrap();
        assert!(
            !today.ok && today.steps < replayed.steps,
            "{name}: {} steps",
            today.steps
        );
        assert_eq!(
            today.violations[0].invariant, replayed.violations[0].invariant,
            "{name}"
        );
    }
}

#[test]
fn the_regression_corpus_keeps_its_verdicts() {
    let corpus = root().join("scenarios/regressions");
    let count = std::fs::read_dir(&corpus)
        .unwrap()
        .filter(|entry| entry.as_ref().unwrap().path().extension().is_some_and(|e| e == "toml"))
        .count();
    assert!(count > 0, "the corpus is empty");
    let reports = work_dir();
    let output = crashsim(&["run", "--regressions", "--report", reports.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(
        stdout(&output).contains(&format!("regressions: {count} capsule(s), 0 not as recorded")),
        "{}",
        stdout(&output)
    );
    // A test case per capsule for CI systems, and the same as JSON.
    let junit = std::fs::read_to_string(reports.path().join("regressions/junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase ").count(), count, "{junit}");
    assert!(!junit.contains("<failure"), "{junit}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reports.path().join("regressions/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["capsules"], count);
    assert_eq!(summary["not_as_recorded"], 0);
}

#[test]
fn a_capsule_that_no_longer_gives_its_verdict_is_a_failing_test_case_with_its_report() {
    // A capsule recording a mutant's failure, replayed as if the bug were
    // fixed: it passes, which is not what it records.
    let dir = work_dir();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    let recorded = std::fs::read_to_string(root().join("scenarios/regressions/smoke+key_trim-0.toml")).unwrap();
    let fixed = recorded
        .replace("mutant = \"key_trim\"\n", "")
        .replace("store = \"key_trim\"\n", "store = \"reference\"\n");
    assert_ne!(fixed, recorded, "the capsule names its mutant");
    std::fs::write(corpus.join("fixed.toml"), fixed).unwrap();
    let reports = dir.path().join("reports");
    // An earlier run's folder for a capsule is cleared.
    std::fs::create_dir_all(reports.join("regressions/stale")).unwrap();
    let output = crashsim(&[
        "run",
        "--regressions",
        corpus.to_str().unwrap(),
        "--report",
        reports.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}{}", stdout(&output), stderr(&output));
    let junit = std::fs::read_to_string(reports.join("regressions/junit.xml")).unwrap();
    assert!(junit.contains("fixed.toml") && junit.contains("<failure"), "{junit}");
    assert!(junit.contains("replay --capsule"), "{junit}");
    assert!(reports.join("regressions/fixed/result.json").is_file());
    assert!(!reports.join("regressions/stale").exists());
}

#[test]
fn a_broken_capsule_is_bad_input() {
    let dir = work_dir();
    let path = dir.path().join("broken.toml");
    std::fs::write(&path, "format = \"crashsim-capsule/1\"\nseed = \"x\"\n").unwrap();
    let output = crashsim(&["replay", "--capsule", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("broken.toml"), "{}", stderr(&output));
}

#[test]
fn an_empty_or_missing_regression_corpus_is_visible() {
    let dir = work_dir();
    let missing = dir.path().join("no-such-corpus");
    let output = crashsim(&["run", "--regressions", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("no-such-corpus") && stderr(&output).contains("--allow-empty"),
        "{}",
        stderr(&output)
    );
    let allowed = crashsim(&["run", "--regressions", missing.to_str().unwrap(), "--allow-empty"]);
    assert_eq!(allowed.status.code(), Some(0), "{}", stderr(&allowed));
    assert!(
        stderr(&allowed).contains("nothing was replayed"),
        "{}",
        stderr(&allowed)
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let reports = dir.path().join("reports");
    let output = crashsim(&[
        "run",
        "--regressions",
        empty.to_str().unwrap(),
        "--report",
        reports.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // The CI system shows it too: one skipped case that says so.
    let junit = std::fs::read_to_string(reports.join("regressions/junit.xml")).unwrap();
    assert!(
        junit.contains("<skipped") && junit.contains("holds no capsule: nothing was replayed"),
        "{junit}"
    );
    assert!(
        stderr(&output).contains("holds no capsule") && stdout(&output).contains("0 capsule(s)"),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
}
