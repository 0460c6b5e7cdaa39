//! CI at scale (issue 14): partitions of a range in separate processes,
//! merged, give what one run of the range gives; a time budget stops
//! between seeds, at a prefix; the coverage gate fails a declared kill
//! point that never fired; and the shipped CI workflows only run commands
//! the CLI accepts (`ci_at_scale/workflows.rs`).

use crate::common;
#[path = "ci_at_scale/workflows.rs"]
mod workflows;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use common::{crashsim, stderr, stdout};
use serde_json::Value;

/// (seed, outcome, trace hash) of every seed line of `run --format json`.
fn seeds_of(json_lines: &str) -> BTreeSet<(u64, String, String)> {
    json_lines
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a JSON line"))
        .filter(|line| line.get("summary").is_none())
        .map(|line| {
            let seed = line["seed"].as_u64().expect("a seed");
            let outcome = line["outcome"].as_str().expect("an outcome").to_string();
            (seed, outcome, line["trace_hash"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

fn summary(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).expect("summary.json is JSON")
}

#[test]
fn four_partitions_in_four_processes_merge_into_the_run_of_the_whole_range() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let root = dir.path();
    let whole = root.join("whole");
    let range = ["--seeds", "8", "--start-seed", "3", "--format", "json", "--jobs", "1"];
    let single = crashsim(
        &[
            &["run", "scenarios/smoke.toml", "--report", whole.to_str().unwrap()],
            &range[..],
        ]
        .concat(),
    );
    assert_eq!(single.status.code(), Some(0), "{}", stderr(&single));

    // Four processes at once, each its own share, as four CI jobs would.
    let jobs: Vec<_> = (1..=4)
        .map(|k| {
            let report = root.join(format!("part{k}"));
            Command::new(env!("CARGO_BIN_EXE_crashsim"))
                .args(["run", "scenarios/smoke.toml", "--report", report.to_str().unwrap()])
                .args(range)
                .args(["--partition", &format!("count:{k}/4")])
                .current_dir(common::root())
                .env("CI", "true")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("crashsim starts")
        })
        .collect();
    let mut union = BTreeSet::new();
    for job in jobs {
        let output = job.wait_with_output().expect("crashsim ends");
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let share = seeds_of(&stdout(&output));
        assert_eq!(share.len(), 2, "a quarter of 8 seeds");
        let before = union.len();
        union.extend(share);
        assert_eq!(union.len(), before + 2, "shares are disjoint");
    }
    assert_eq!(
        union,
        seeds_of(&stdout(&single)),
        "same seeds, verdicts and trace hashes"
    );

    let merged = root.join("merged");
    let parts: Vec<String> = (1..=4)
        .map(|k| root.join(format!("part{k}")).display().to_string())
        .collect();
    let mut args = vec!["report", "merge", "--out", merged.to_str().unwrap()];
    args.extend(parts.iter().map(String::as_str));
    let merge = crashsim(&args);
    assert_eq!(merge.status.code(), Some(0), "{}{}", stdout(&merge), stderr(&merge));
    let one = summary(&whole.join("smoke/summary.json"));
    let all = summary(&merged.join("summary.json"));
    assert_eq!(all["schema_version"], 1);
    let (one, all) = (&one["scenarios"][0], &all["scenarios"][0]);
    for field in [
        "seeds",
        "passed",
        "failed",
        "digest",
        "covered",
        "scenario_hash",
        "violations_by_invariant",
    ] {
        assert_eq!(one[field], all[field], "{field}");
    }
    assert_eq!(one["kills"], all["kills"], "kill counters add up");
    assert_eq!(one["coverage"], all["coverage"], "coverage adds up");
    assert_eq!(all["parts"].as_array().map(Vec::len), Some(4));
    for file in ["junit.xml", "summary.md", "index.html"] {
        assert!(merged.join(file).is_file(), "{file}");
    }

    // Three of four: merged, but an error naming the missing share.
    let three = crashsim(&[
        "report",
        "merge",
        "--out",
        root.join("m3").to_str().unwrap(),
        &parts[0],
        &parts[1],
        &parts[3],
    ]);
    assert_eq!(three.status.code(), Some(2));
    assert!(stderr(&three).contains("count:3/4"), "{}", stderr(&three));
    // The same share twice, or a share with the whole range: refused.
    let twice = crashsim(&[
        "report",
        "merge",
        "--out",
        root.join("m4").to_str().unwrap(),
        &parts[0],
        &parts[0],
    ]);
    assert_eq!(twice.status.code(), Some(2));
    assert!(stderr(&twice).contains("overlap"), "{}", stderr(&twice));
    let mixed = crashsim(&[
        "report",
        "merge",
        "--out",
        root.join("m5").to_str().unwrap(),
        whole.to_str().unwrap(),
        &parts[1],
    ]);
    assert!(stderr(&mixed).contains("overlap"), "{}", stderr(&mixed));
}

#[test]
fn merging_refuses_other_scenarios_and_copies_failing_seeds() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let part = |k: u32, mutant: &str| {
        let report = dir.path().join(format!("{mutant}{k}"));
        let output = crashsim(&[
            "run",
            "scenarios/contention.toml",
            "--seeds",
            "2",
            "--mutant",
            mutant,
            "--partition",
            &format!("count:{k}/2"),
            "--report",
            report.to_str().unwrap(),
        ]);
        (report.display().to_string(), output)
    };
    let (one, failed) = part(1, "no_dedup");
    assert_eq!(failed.status.code(), Some(1), "{}", stdout(&failed));
    let (two, _) = part(2, "no_dedup");
    let merged = dir.path().join("merged");
    let merge = crashsim(&["report", "merge", "--out", merged.to_str().unwrap(), &one, &two]);
    assert_eq!(
        merge.status.code(),
        Some(1),
        "a finding in a part is a finding of the merge"
    );
    let total = summary(&merged.join("summary.json"));
    for failing in total["scenarios"][0]["failing_seeds"]
        .as_array()
        .expect("failing seeds")
    {
        let seed = failing["seed"].as_u64().unwrap();
        let page = merged.join(format!("contention+no_dedup/{seed}/report.html"));
        assert!(page.is_file(), "{}", page.display());
    }
    assert!(
        std::fs::read_to_string(merged.join("index.html"))
            .unwrap()
            .contains("report.html")
    );
    // Another store under the same scenario name is another run.
    let file = format!("{two}/contention+no_dedup/summary.json");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("\"store\": \"no_dedup\"", "\"store\": \"other\"")).unwrap();
    let refused = crashsim(&["report", "merge", "--out", merged.to_str().unwrap(), &one, &two]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("different stores"), "{}", stderr(&refused));
}

#[test]
fn a_time_budget_stops_at_a_prefix_and_says_which() {
    // The budget's clock is the CLI's: here a counter stands in for it, so
    // nothing depends on how fast this machine is.
    let loaded = common::load("scenarios/contention.toml");
    let work = common::work_dir();
    let options = common::options(work.path());
    let selection = crashsim::runner::Selection {
        start: 5,
        count: None,
        partition: None,
    };
    let started = AtomicU64::new(0);
    let sweep = crashsim::runner::sweep(
        &loaded,
        &selection,
        2,
        &options,
        false,
        || started.fetch_add(1, Ordering::SeqCst) < 3,
        |_, _| {},
    );
    assert!(sweep.budget_spent);
    let seeds: Vec<u64> = sweep.ended.iter().map(|(seed, _)| *seed).collect();
    assert_eq!(
        seeds,
        [5, 6, 7],
        "the seeds started before the budget ran out, all finished"
    );
    assert!(sweep.not_run.is_empty());

    let dir = tempfile::tempdir().expect("a temp dir");
    let output = crashsim(&[
        "run",
        "contention",
        "--time-budget",
        "1s",
        "--report",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("time budget spent: seeds 0..="),
        "{}",
        stdout(&output)
    );
    let scenario = &summary(&dir.path().join("contention/summary.json"))["scenarios"][0];
    let ran = scenario["seeds"].as_u64().unwrap();
    assert!(ran >= 1);
    assert_eq!(scenario["selection"]["budget_spent"], true);
    assert_eq!(scenario["selection"]["seeds"], Value::Null, "open-ended");
    assert_eq!(scenario["covered"], prefix(ran).as_str());
}

/// The seeds `0..ran` as a summary's `covered` writes them.
fn prefix(ran: u64) -> String {
    match ran {
        1 => "0".to_string(),
        _ => format!("0..={}", ran - 1),
    }
}

#[test]
fn fail_fast_starts_no_seed_after_a_failing_one_and_says_which_ended() {
    // `no_dedup` fails most seeds, each soon (a duplicate effect, I2).
    for jobs in ["1", "2"] {
        let dir = tempfile::tempdir().expect("a temp dir");
        let output = crashsim(&[
            "run",
            "smoke",
            "--mutant",
            "no_dedup",
            "--seeds",
            "40",
            "--jobs",
            jobs,
            "--fail-fast",
            "--report",
            dir.path().to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        assert!(
            stdout(&output).contains("stopped at the first failure (--fail-fast): seeds 0"),
            "{}",
            stdout(&output)
        );
        let scenario = &summary(&dir.path().join("smoke+no_dedup/summary.json"))["scenarios"][0];
        assert_eq!(scenario["selection"]["stopped_at_failure"], true);
        assert_eq!(scenario["selection"]["budget_spent"], false);
        let ran = scenario["seeds"].as_u64().unwrap();
        assert!((1..40).contains(&ran), "jobs {jobs}: {ran} seeds ran");
        // What ended is a prefix, every seed of it a verdict; the last
        // seed started after a failure is at most one per other job.
        assert_eq!(scenario["covered"], prefix(ran).as_str());
        let failing = scenario["failing_seeds"].as_array().unwrap();
        let first = failing.iter().map(|seed| seed["seed"].as_u64().unwrap()).min().unwrap();
        let jobs: u64 = jobs.parse().unwrap();
        assert!(
            ran <= first + jobs,
            "jobs {jobs}: {ran} seeds after the first failure at {first}"
        );
    }

    // A passing store runs the whole range.
    let output = crashsim(&["run", "smoke", "--seeds", "3", "--fail-fast", "--no-report"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!stdout(&output).contains("stopped at the first failure"));
}

#[test]
fn a_declared_kill_point_that_never_fires_fails_the_coverage_gate() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let scenario = dir.path().join("rare.toml");
    let text = std::fs::read_to_string(common::root().join("scenarios/contention.toml")).unwrap();
    // Its worker.after_read_pending made rare (contention reaches every kill point).
    let rare: String = text
        .lines()
        .map(|line| match line.trim_start().starts_with("after_read_pending") {
            true => "after_read_pending = \"1/100000000\"".to_string(),
            false => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(rare, text, "contention.toml declares worker.after_read_pending");
    std::fs::write(&scenario, rare).unwrap();
    let path = scenario.to_str().unwrap();
    let warned = crashsim(&["run", path, "--seeds", "6", "--no-report"]);
    assert_eq!(warned.status.code(), Some(0), "without the gate, a gap is a warning");
    assert!(
        stdout(&warned).contains("warning: rare: kill point worker.after_read_pending"),
        "{}",
        stdout(&warned)
    );
    let gated = crashsim(&["run", path, "--seeds", "6", "--require-fired", "--no-report"]);
    assert_eq!(gated.status.code(), Some(1), "{}", stdout(&gated));
    let message = stderr(&gated);
    assert!(
        message.contains(
            "coverage gate (--require-fired): rare: kill point worker.after_read_pending is declared but never fired"
        ),
        "{message}"
    );
}

#[test]
fn bad_partitions_and_budgets_are_bad_input() {
    for args in [
        &["run", "smoke", "--partition", "count:5/4"][..],
        &["run", "smoke", "--partition", "hash:1/2"],
        &["run", "smoke", "--time-budget", "10x"],
        &["run", "smoke", "--seed", "3", "--partition", "count:1/2"],
    ] {
        let output = crashsim(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(!stderr(&output).contains("panicked"), "{}", stderr(&output));
    }
    let output = Command::new(env!("CARGO_BIN_EXE_crashsim"))
        .args(["run", "smoke", "--seeds", "2", "--no-report"])
        .current_dir(common::root())
        .env("CI", "true")
        .env("JOB_COMPLETION_INDEX", "1")
        .output()
        .expect("crashsim runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("CRASHSIM_PARTITIONS"), "{}", stderr(&output));
}
