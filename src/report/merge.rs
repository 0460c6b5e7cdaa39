//! Merging the summaries of several jobs of one run (`crashsim report
//! merge`): partitions of one seed range, each job's `summary.json`.
//!
//! Only parts of one run merge: the same scenario (by its hash as loaded),
//! store, crashsim commit, SQLite and range, and shares that do not overlap.
//! Anything else is refused, naming the two files. A merged summary is the
//! one a single job over the whole range would have written, but for wall
//! time (the longest part's) and `parts`, which says what each job ran;
//! `missing_partitions` names the shares no input had.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

pub use super::json::PartSummary;
use super::json::{self, RunSummary, ScenarioSummary};
use crate::runner::Partition;

/// One job's summary of one scenario, and the file it came from.
#[derive(Clone, Debug)]
pub struct Part {
    pub file: PathBuf,
    /// The folder that holds its failing seeds' folders.
    pub seed_root: PathBuf,
    pub run: RunSummary,
    pub scenario: ScenarioSummary,
}

/// Why parts do not merge.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// The merged summaries of every scenario the parts ran, in name order,
/// or why they do not merge.
pub fn merge(parts: Vec<Part>) -> Result<Merged, Refused> {
    let Some(first) = parts.first() else {
        return Err(Refused("no summary.json to merge".to_string()));
    };
    for part in &parts {
        for (what, mine, theirs) in [
            ("crashsim commits", &first.run.git_commit, &part.run.git_commit),
            ("SQLite versions", &first.run.sqlite_version, &part.run.sqlite_version),
            ("modes", &first.run.mode, &part.run.mode),
        ] {
            if mine != theirs {
                return Err(refuse(
                    first,
                    part,
                    &format!("were made by different {what} ({mine} and {theirs})"),
                ));
            }
        }
    }
    let mut by_scenario: BTreeMap<String, Vec<Part>> = BTreeMap::new();
    for part in parts {
        by_scenario
            .entry(part.scenario.scenario.clone())
            .or_default()
            .push(part);
    }
    let mut merged = Merged::default();
    for (name, mut parts) in by_scenario {
        parts.sort_by_key(|part| part.scenario.selection.partition);
        let (summary, missing) = merge_scenario(&parts)?;
        if !missing.is_empty() {
            merged.missing.insert(name.clone(), missing);
        }
        merged
            .sources
            .extend(parts.iter().map(|part| part.file.display().to_string()));
        merged.parts.push(parts);
        merged.scenarios.push(summary);
    }
    Ok(merged)
}

/// Every scenario merged.
#[derive(Debug, Default)]
pub struct Merged {
    pub scenarios: Vec<ScenarioSummary>,
    /// The parts of each scenario, in the order of `scenarios`.
    pub parts: Vec<Vec<Part>>,
    /// Shares of a partitioned range that no input had, by scenario.
    pub missing: BTreeMap<String, Vec<Partition>>,
    pub sources: Vec<String>,
}

fn refuse(one: &Part, other: &Part, why: &str) -> Refused {
    Refused(format!(
        "{} and {} do not merge: they {why}",
        one.file.display(),
        other.file.display()
    ))
}

fn merge_scenario(parts: &[Part]) -> Result<(ScenarioSummary, Vec<Partition>), Refused> {
    let first = &parts[0];
    let mine = &first.scenario;
    for part in &parts[1..] {
        let theirs = &part.scenario;
        if mine.scenario_hash != theirs.scenario_hash {
            let why = format!(
                "ran different scenarios under the name {} (hashes {} and {})",
                mine.scenario, mine.scenario_hash, theirs.scenario_hash
            );
            return Err(refuse(first, part, &why));
        }
        if mine.store != theirs.store || mine.sut != theirs.sut {
            return Err(refuse(
                first,
                part,
                &format!("tested different stores ({} and {})", mine.store, theirs.store),
            ));
        }
        let (a, b) = (&mine.selection, &theirs.selection);
        if (a.start_seed, a.seeds) != (b.start_seed, b.seeds) {
            let why = format!(
                "are shares of different ranges ({} and {})",
                a.selection().range(),
                b.selection().range()
            );
            return Err(refuse(first, part, &why));
        }
    }
    // The shares: all of one N, each once; or a single unpartitioned run.
    let mut seen: BTreeMap<Partition, &Part> = BTreeMap::new();
    for part in parts {
        let Some(partition) = part.scenario.selection.partition else {
            if parts.len() > 1 {
                let other = parts
                    .iter()
                    .find(|other| !std::ptr::eq(*other, part))
                    .expect("two parts");
                return Err(refuse(part, other, "overlap: the first ran the whole range"));
            }
            continue;
        };
        if let Some((other, _)) = seen.iter().find(|(other, _)| other.total != partition.total) {
            let why = format!("split the range differently ({other} and {partition})");
            return Err(refuse(seen[other], part, &why));
        }
        if let Some(other) = seen.insert(partition, part) {
            return Err(refuse(other, part, &format!("overlap: both ran the share {partition}")));
        }
    }
    let missing: Vec<Partition> = match seen.keys().next() {
        Some(any) => (1..=any.total)
            .map(|index| Partition {
                index,
                total: any.total,
            })
            .filter(|partition| !seen.contains_key(partition))
            .collect(),
        None => Vec::new(),
    };
    Ok((sum(parts, &missing), missing))
}

/// The parts' figures added up.
fn sum(parts: &[Part], missing: &[Partition]) -> ScenarioSummary {
    let mut total = parts[0].scenario.clone();
    let mut digest = json::digest_of(&total.digest);
    let mut never_fired: BTreeSet<String> = total.never_fired.iter().cloned().collect();
    for part in &parts[1..] {
        let next = &part.scenario;
        total.seeds += next.seeds;
        total.passed += next.passed;
        total.failed += next.failed;
        total.steps += next.steps;
        total.errored += next.errored;
        total.not_run += next.not_run;
        total.seconds = total.seconds.max(next.seconds);
        total.require_fired |= next.require_fired;
        total.selection.budget_spent |= next.selection.budget_spent;
        total.selection.stopped_at_failure |= next.selection.stopped_at_failure;
        for (invariant, seeds) in &next.violations_by_invariant {
            *total.violations_by_invariant.entry(invariant.clone()).or_default() += seeds;
        }
        for (point, count) in &next.kills {
            let entry = total.kills.entry(point.clone()).or_default();
            entry.reached += count.reached;
            entry.fired += count.fired;
            entry.armed = match (entry.armed, count.armed) {
                (None, None) => None,
                (sum, armed) => Some(sum.unwrap_or(0) + armed.unwrap_or(0)),
            };
        }
        let theirs: BTreeSet<String> = next.never_fired.iter().cloned().collect();
        never_fired = never_fired.intersection(&theirs).cloned().collect();
        total.failing_seeds.extend(next.failing_seeds.iter().cloned());
        total.errors.extend(next.errors.iter().cloned());
        digest ^= json::digest_of(&next.digest);
        total.interrupted = total.interrupted.or_else(|| next.interrupted.clone());
    }
    let seeds = total.seeds + total.errored;
    for part in &parts[1..] {
        total.coverage.merge(&part.scenario.coverage, seeds);
    }
    total.failing_seeds.sort_by_key(|failing| failing.seed);
    total.errors.sort_by_key(|error| error.seed);
    total.never_fired.retain(|point| never_fired.contains(point));
    total.digest = json::digest_hex(digest);
    total.seeds_per_s = total.seeds as f64 / total.seconds.max(1e-9);
    total.steps_per_s = total.steps as f64 / total.seconds.max(1e-9);
    total.steps_per_seed = total.steps as f64 / total.seeds.max(1) as f64;
    let whole = parts.iter().all(|part| {
        let selection = &part.scenario.selection;
        !selection.budget_spent && !selection.stopped_at_failure && part.scenario.not_run == 0
    }) && missing.is_empty()
        && total.interrupted.is_none();
    let range = total.selection.selection();
    total.covered = match (whole, parts.len()) {
        (true, _) => range.range(),
        (false, 1) => total.covered,
        (false, _) => parts
            .iter()
            .map(|part| {
                let share = part
                    .scenario
                    .selection
                    .partition
                    .map_or("all".to_string(), |p| p.to_string());
                format!("{share}: {}", part.scenario.covered)
            })
            .collect::<Vec<_>>()
            .join("; "),
    };
    total.selection.partition = None;
    total.parts = parts
        .iter()
        .map(|part| PartSummary {
            file: part.file.display().to_string(),
            partition: part.scenario.selection.partition,
            seeds: part.scenario.seeds,
            failed: part.scenario.failed,
            errored: part.scenario.errored,
            covered: part.scenario.covered.clone(),
            seconds: part.scenario.seconds,
            budget_spent: part.scenario.selection.budget_spent,
            stopped_at_failure: part.scenario.selection.stopped_at_failure,
        })
        .collect();
    total.missing_partitions = missing.to_vec();
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::json::SelectionSummary;
    use crate::runner::Selection;

    fn part(k: u64, n: u64, commit: &str) -> Part {
        let loaded = crate::scenario::builtin::find(std::path::Path::new("contention"))
            .expect("built in")
            .load()
            .expect("loads");
        let mut scenario = ScenarioSummary::of(&loaded, "reference", &[], 1.0, &[], |_| String::new());
        let partition = (n > 1).then_some(Partition { index: k, total: n });
        let selection = Selection {
            start: 0,
            count: Some(8),
            partition,
        };
        scenario.selection = SelectionSummary::new(&selection, None);
        let mut run = RunSummary::new(
            std::slice::from_ref(&scenario),
            1.0,
            1,
            "in-process",
            "/tmp".as_ref(),
            "tmpfs",
        );
        run.git_commit = commit.to_string();
        Part {
            file: PathBuf::from(format!("part{k}/contention/summary.json")),
            seed_root: PathBuf::from(format!("part{k}/contention")),
            run,
            scenario,
        }
    }

    #[test]
    fn shares_of_one_run_merge_and_the_missing_ones_are_named() {
        let merged = merge(vec![part(1, 3, "abc"), part(3, 3, "abc")]).expect("merges");
        assert_eq!(merged.missing["contention"], [Partition { index: 2, total: 3 }]);
        assert_eq!(merged.scenarios[0].parts.len(), 2);
        assert_eq!(merged.scenarios[0].missing_partitions.len(), 1);
    }

    #[test]
    fn other_commits_other_splits_and_overlaps_are_refused() {
        let refused = |parts: Vec<Part>| merge(parts).expect_err("refused").to_string();
        assert!(refused(vec![part(1, 2, "abc"), part(2, 2, "def")]).contains("different crashsim commits"));
        assert!(refused(vec![part(1, 2, "abc"), part(2, 3, "abc")]).contains("split the range differently"));
        assert!(refused(vec![part(1, 2, "abc"), part(1, 2, "abc")]).contains("overlap"));
        assert!(refused(vec![part(1, 1, "abc"), part(2, 2, "abc")]).contains("overlap"));
        let mut other = part(2, 2, "abc");
        other.scenario.scenario_hash = "0000000000000000".into();
        assert!(refused(vec![part(1, 2, "abc"), other]).contains("different scenarios"));
        let mut range = part(2, 2, "abc");
        range.scenario.selection.seeds = Some(9);
        assert!(refused(vec![part(1, 2, "abc"), range]).contains("different ranges"));
    }
}
