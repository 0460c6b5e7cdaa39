//! Detection power: how fast the checkers catch each mutant, and proof that
//! the reference stays clean on the same scenarios.
//!
//! For each (mutant, scenario) pair, seeds are searched in order from
//! several disjoint start points (range `r` starts at `r << 32`) until the
//! first failure; the number of seeds that took is the seeds-to-detection of
//! that range. The median over the ranges is the figure reported, so one
//! lucky seed does not pass for detection power. If the first range finds
//! nothing within `seeds_max`, the scenario is taken to be blind to that
//! mutant and its other ranges are not searched. A pair whose mutant runs
//! as the reference does, seed for seed (its one difference lives in calls
//! the scenario never makes: `mutants::LivesIn`, `never_made_by`), is not searched at all,
//! and says why.
//!
//! Being caught is not enough: each mutant documents the invariants its
//! mistake breaks (`Mutant::caught_by`). The first range's search goes on
//! past a first failure that broke only other invariants (a liveness
//! failure, say) until a seed breaks a documented one, and a mutant whose
//! documented invariants never fire is not as expected: its checker has a
//! blind spot that another invariant happened to cover.
//!
//! Wall time is measured here (it reports; it steers nothing).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;

use crate::adapter::Adapter;
use crate::check::Invariant;
use crate::mutants::{LivesIn, Mutant};
use crate::runner::{Options, RunError, Sut, run_seed, run_seeds};
use crate::scenario::Loaded;

/// What one row of the table runs instead of the reference: one of
/// crashsim's mutants, or a variant of an outside store (a command whose
/// store has a known bug, `crashsim mutants --sut CMD --variant NAME=CMD`).
#[derive(Clone)]
pub enum Subject {
    Mutant(&'static Mutant),
    Outside { name: String, adapter: Arc<Adapter> },
}

impl Subject {
    pub fn name(&self) -> &str {
        match self {
            Subject::Mutant(mutant) => mutant.name,
            Subject::Outside { name, .. } => name,
        }
    }

    fn mistake(&self) -> Option<u8> {
        match self {
            Subject::Mutant(mutant) => Some(mutant.mistake),
            Subject::Outside { .. } => None,
        }
    }

    /// The invariants its mistake breaks, as documented (none known for
    /// an outside store's variant).
    pub fn caught_by(&self) -> &'static [Invariant] {
        match self {
            Subject::Mutant(mutant) => mutant.caught_by,
            Subject::Outside { .. } => &[],
        }
    }

    /// Why this subject runs as the reference does on `loaded`, seed for
    /// seed, if it does: a mutant whose one difference lives in calls the
    /// scenario never makes. Such a pair is not searched.
    pub fn identical_on(&self, loaded: &Loaded) -> Option<String> {
        match self {
            Subject::Mutant(mutant) => never_made_by(mutant.lives_in, &loaded.scenario)
                .map(|why| format!("identical to the reference here: {why}")),
            Subject::Outside { .. } => None,
        }
    }

    /// The scenario and options that run this subject instead of the reference.
    pub fn prepare(&self, loaded: &Loaded, options: &Options) -> (Loaded, Options) {
        match self {
            Subject::Mutant(mutant) => (
                loaded.clone().with_mutant(mutant.name).expect("mutants resolve"),
                options.clone(),
            ),
            Subject::Outside { name, adapter } => (
                loaded.clone().with_sut(name),
                Options {
                    sut: Sut::Adapter(Arc::clone(adapter)),
                    ..options.clone()
                },
            ),
        }
    }
}

/// Why `scenario` never makes the calls a mistake `lives_in`, if it does
/// not (on the keys the simulator's world reads): then the mutant's runs
/// there are the reference's, seed for seed.
fn never_made_by(lives_in: LivesIn, scenario: &crate::scenario::Scenario) -> Option<&'static str> {
    match lives_in {
        LivesIn::Anywhere => None,
        LivesIn::Leases => scenario
            .leases
            .is_none()
            .then_some("its workers hold no leases (no [leases]): claim and mark_done_leased are never called"),
        LivesIn::Purges => scenario
            .receivers
            .and_then(|receivers| receivers.dedup_retention_ticks)
            .is_none()
            .then_some(
                "its receivers keep their de-dup records (no dedup_retention_ticks): purge_dedup is never called",
            ),
        LivesIn::Backups => scenario
            .backup
            .is_none()
            .then_some("it takes no backups (no [backup]): the store's backup is never called"),
    }
}

/// Range `r` of a search starts at seed `r << RANGE_SHIFT`.
pub const RANGE_SHIFT: u32 = 32;

/// How much to measure. `options.sut` is what the reference row runs (the
/// scenario's own store, or an outside store).
#[derive(Clone, Debug)]
pub struct Settings {
    /// Seeds searched per range before giving up.
    pub seeds_max: u64,
    /// Disjoint start points per (mutant, scenario).
    pub ranges: u32,
    /// Seeds of each scenario the reference must pass.
    pub reference_seeds: u64,
    pub jobs: usize,
    pub options: Options,
}

/// One mutant on one scenario.
#[derive(Clone, Debug, Serialize)]
pub struct Pair {
    pub scenario: String,
    /// Per range: how many seeds until the first failure, if any.
    pub seeds_to_detection: Vec<Option<u64>>,
    /// The median over ranges (a range that found nothing counts as worse
    /// than any that did); `None` if the median range found nothing.
    pub median_seeds_to_detection: Option<u64>,
    /// The first failing seed of the first range.
    pub first_seed: Option<u64>,
    /// The invariants that seed violated.
    pub invariants: BTreeSet<Invariant>,
    /// The first seed of the first range that violated one of the
    /// mutant's documented invariants (the search goes on past a first
    /// failure that broke only others, up to the range's end).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documented_seed: Option<u64>,
    /// Wall time of the first range's search until its first failure.
    pub wall_ms: Option<u64>,
    /// Seeds run for this pair, all ranges together.
    pub seeds_run: u64,
    /// Why the pair was not searched: the subject runs as the reference
    /// there (`Subject::identical_on`), so no seed could catch it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_searched: Option<String>,
}

/// One row of the detection table.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The mutant's name, or `"reference"`.
    pub mutant: String,
    /// The mistake's number in PROTOCOL.md §7 (none for the reference).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mistake: Option<u8>,
    /// For a mutant: caught in some scenario. For the reference: it failed somewhere (bad).
    pub caught: bool,
    /// Invariants violated by the first failing seeds, over all scenarios.
    pub invariants: Vec<Invariant>,
    /// The invariants the first failing seed of the best scenario violated:
    /// what catches the mutant first.
    pub first_invariants: Vec<Invariant>,
    /// The invariants the mutant's mistake breaks, as documented (empty for
    /// the reference and for an outside store's variants).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub caught_by: Vec<Invariant>,
    /// Whether some scenario saw one of `caught_by` fire (a seed of its
    /// first range), not only some other invariant; none without `caught_by`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documented_fired: Option<bool>,
    /// Where a documented invariant fired first: (scenario, seed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documented_at: Option<(String, u64)>,
    /// The scenario that caught it fastest (median), or that failed the reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    pub first_seed: Option<u64>,
    pub median_seeds_to_detection: Option<u64>,
    pub wall_ms: Option<u64>,
    /// Seeds run for this row.
    pub seeds_run: u64,
    /// Every scenario's figures.
    pub scenarios: Vec<Pair>,
}

impl Row {
    /// A mutant no scenario of the table could run apart from the
    /// reference: every pair was not searched (`Pair::not_searched`). Not
    /// as expected either, since nothing showed it is caught, but for want
    /// of a scenario, not of a checker.
    pub fn untested(&self) -> bool {
        !self.scenarios.is_empty() && self.scenarios.iter().all(|pair| pair.not_searched.is_some())
    }

    /// True if the row is as it should be: a mutant caught, by one of its
    /// documented invariants when it has some; the reference clean.
    pub fn ok(&self) -> bool {
        if self.mutant == "reference" {
            !self.caught
        } else {
            self.caught && self.documented_fired != Some(false)
        }
    }
}

/// "yes", "ESCAPED", "UNTESTED", "clean" or "FAILED", for tables.
pub fn verdict(row: &Row) -> &'static str {
    match (row.mutant.as_str(), row.caught) {
        ("reference", false) => "clean",
        ("reference", true) => "FAILED",
        (_, true) if row.documented_fired == Some(false) => "OTHER",
        (_, true) => "yes",
        (_, false) if row.untested() => "UNTESTED",
        (_, false) => "ESCAPED",
    }
}

/// "I1,I5", or "-".
pub fn listed(invariants: &[Invariant]) -> String {
    match invariants.is_empty() {
        true => "-".to_string(),
        false => invariants.iter().map(ToString::to_string).collect::<Vec<_>>().join(","),
    }
}

/// The documented invariants and whether one fired: "I1 fired", "I7 NOT",
/// or "-" when none is documented.
pub fn documented(row: &Row) -> String {
    match row.documented_fired {
        None => "-".to_string(),
        Some(true) => format!("{} fired", listed(&row.caught_by)),
        Some(false) => format!("{} NOT", listed(&row.caught_by)),
    }
}

fn median(values: &[Option<u64>], seeds_max: u64) -> Option<u64> {
    let mut sorted: Vec<u64> = values.iter().map(|value| value.unwrap_or(seeds_max + 1)).collect();
    sorted.sort_unstable();
    let middle = *sorted.get(sorted.len().saturating_sub(1) / 2)?;
    (middle <= seeds_max).then_some(middle)
}

/// Searches one range from `start`: until its first failure, or, with
/// `documented` given, on until a seed breaks one of those invariants.
fn search(
    loaded: &Loaded,
    options: &Options,
    start: u64,
    settings: &Settings,
    documented: &[Invariant],
) -> Result<Search, RunError> {
    #[expect(clippy::disallowed_methods, reason = "detection wall time is a report, not an input")]
    let started = Instant::now();
    let mut search = Search {
        found: None,
        documented: None,
        wall_ms: 0,
        seeds_run: 0,
    };
    for index in 0..settings.seeds_max {
        let seed = start + index;
        let result = run_seed(loaded, seed, options)?;
        search.seeds_run = index + 1;
        if result.ok {
            continue;
        }
        let invariants: BTreeSet<Invariant> = result.violations.iter().map(|v| v.invariant).collect();
        if search.found.is_none() {
            search.wall_ms = started.elapsed().as_millis() as u64;
            search.found = Some((index + 1, seed, invariants.clone()));
        }
        if documented.iter().any(|invariant| invariants.contains(invariant)) {
            search.documented = Some(seed);
        }
        if documented.is_empty() || search.documented.is_some() {
            break;
        }
    }
    if search.found.is_none() {
        search.wall_ms = started.elapsed().as_millis() as u64;
    }
    Ok(search)
}

struct Search {
    found: Option<(u64, u64, BTreeSet<Invariant>)>,
    /// The first seed that broke a documented invariant.
    documented: Option<u64>,
    wall_ms: u64,
    seeds_run: u64,
}

fn measure_pair(
    loaded: &Loaded,
    options: &Options,
    settings: &Settings,
    documented: &[Invariant],
) -> Result<Pair, RunError> {
    let first = search(loaded, options, 0, settings, documented)?;
    let mut seeds_run = first.seeds_run;
    let mut seeds_to_detection = vec![first.found.as_ref().map(|found| found.0)];
    if first.found.is_some() {
        for range in 1..settings.ranges {
            let next = search(loaded, options, u64::from(range) << RANGE_SHIFT, settings, &[])?;
            seeds_run += next.seeds_run;
            seeds_to_detection.push(next.found.map(|found| found.0));
        }
    } else {
        seeds_to_detection.resize(settings.ranges as usize, None);
    }
    Ok(Pair {
        scenario: loaded.name.clone(),
        median_seeds_to_detection: median(&seeds_to_detection, settings.seeds_max),
        first_seed: first.found.as_ref().map(|found| found.1),
        invariants: first.found.map(|found| found.2).unwrap_or_default(),
        documented_seed: first.documented,
        wall_ms: seeds_to_detection[0].map(|_| first.wall_ms),
        seeds_to_detection,
        seeds_run,
        not_searched: None,
    })
}

/// A pair whose subject runs as the reference does: nothing to search.
fn unsearched(loaded: &Loaded, settings: &Settings, why: String) -> Pair {
    Pair {
        scenario: loaded.name.clone(),
        seeds_to_detection: vec![None; settings.ranges as usize],
        median_seeds_to_detection: None,
        first_seed: None,
        invariants: BTreeSet::new(),
        documented_seed: None,
        wall_ms: None,
        seeds_run: 0,
        not_searched: Some(why),
    }
}

fn mutant_row(subject: &Subject, pairs: Vec<Pair>) -> Row {
    let best = pairs
        .iter()
        .filter(|pair| pair.first_seed.is_some())
        .min_by_key(|pair| pair.median_seeds_to_detection.unwrap_or(u64::MAX));
    let invariants: BTreeSet<Invariant> = pairs.iter().flat_map(|pair| pair.invariants.iter().copied()).collect();
    let caught_by = subject.caught_by().to_vec();
    // Where a documented invariant fired: the best scenario if it did there.
    let documented_at = best
        .into_iter()
        .chain(pairs.iter())
        .find_map(|pair| pair.documented_seed.map(|seed| (pair.scenario.clone(), seed)));
    Row {
        mutant: subject.name().to_string(),
        mistake: subject.mistake(),
        caught: best.is_some(),
        invariants: invariants.into_iter().collect(),
        first_invariants: best
            .map(|pair| pair.invariants.iter().copied().collect())
            .unwrap_or_default(),
        documented_fired: (!caught_by.is_empty()).then_some(documented_at.is_some()),
        documented_at,
        caught_by,
        scenario: best.map(|pair| pair.scenario.clone()),
        first_seed: best.and_then(|pair| pair.first_seed),
        median_seeds_to_detection: best.and_then(|pair| pair.median_seeds_to_detection),
        wall_ms: best.and_then(|pair| pair.wall_ms),
        seeds_run: pairs.iter().map(|pair| pair.seeds_run).sum(),
        scenarios: pairs,
    }
}

/// Runs the reference over `reference_seeds` seeds of each scenario.
fn reference_row(scenarios: &[Loaded], settings: &Settings) -> Result<Row, RunError> {
    let seeds: Vec<u64> = (0..settings.reference_seeds).collect();
    let mut pairs = Vec::new();
    let mut failed: Option<(String, u64, BTreeSet<Invariant>)> = None;
    #[expect(clippy::disallowed_methods, reason = "detection wall time is a report, not an input")]
    let started = Instant::now();
    for loaded in scenarios {
        let results = run_seeds(loaded, &seeds, settings.jobs, &settings.options, |_| {})?;
        let first_failure = results.iter().find(|result| !result.ok);
        if let Some(result) = first_failure
            && failed.is_none()
        {
            let invariants = result.violations.iter().map(|v| v.invariant).collect();
            failed = Some((loaded.name.clone(), result.seed, invariants));
        }
        pairs.push(Pair {
            scenario: loaded.name.clone(),
            seeds_to_detection: vec![first_failure.map(|result| result.seed + 1)],
            median_seeds_to_detection: None,
            first_seed: first_failure.map(|result| result.seed),
            invariants: first_failure
                .map(|result| result.violations.iter().map(|v| v.invariant).collect())
                .unwrap_or_default(),
            documented_seed: None,
            wall_ms: None,
            seeds_run: results.len() as u64,
            not_searched: None,
        });
    }
    Ok(Row {
        mutant: "reference".to_string(),
        mistake: None,
        caught: failed.is_some(),
        invariants: failed
            .as_ref()
            .map(|f| f.2.iter().copied().collect())
            .unwrap_or_default(),
        first_invariants: failed
            .as_ref()
            .map(|f| f.2.iter().copied().collect())
            .unwrap_or_default(),
        caught_by: Vec::new(),
        documented_fired: None,
        documented_at: None,
        scenario: failed.as_ref().map(|f| f.0.clone()),
        first_seed: failed.as_ref().map(|f| f.1),
        median_seeds_to_detection: None,
        wall_ms: Some(started.elapsed().as_millis() as u64),
        seeds_run: pairs.iter().map(|pair| pair.seeds_run).sum(),
        scenarios: pairs,
    })
}

/// Measures every mutant on every scenario, then the reference. Rows come
/// back in the order of `mutants`, the reference last. `progress` is called
/// as each (mutant, scenario) pair finishes.
pub fn measure(
    scenarios: &[Loaded],
    mutants: &[Subject],
    settings: &Settings,
    progress: &(dyn Fn(&str, &Pair) + Sync),
) -> Result<Vec<Row>, RunError> {
    let tasks: Vec<(usize, Loaded, Options)> = mutants
        .iter()
        .enumerate()
        .flat_map(|(index, subject)| {
            scenarios.iter().map(move |loaded| {
                let (loaded, options) = subject.prepare(loaded, &settings.options);
                (index, loaded, options)
            })
        })
        .collect();
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Result<Pair, RunError>)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..settings.jobs.clamp(1, tasks.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let task = next.fetch_add(1, Ordering::Relaxed);
                    let Some((mutant, loaded, options)) = tasks.get(task) else {
                        break;
                    };
                    let subject = &mutants[*mutant];
                    let pair = match subject.identical_on(loaded) {
                        Some(why) => Ok(unsearched(loaded, settings, why)),
                        None => measure_pair(loaded, options, settings, subject.caught_by()),
                    };
                    if let Ok(pair) = &pair {
                        progress(mutants[*mutant].name(), pair);
                    }
                    done.lock().expect("no panics while locked").push((task, pair));
                }
            });
        }
    });
    let mut done = done.into_inner().expect("no panics while locked");
    done.sort_by_key(|(task, _)| *task);
    let mut pairs: Vec<Vec<Pair>> = vec![Vec::new(); mutants.len()];
    for (task, pair) in done {
        pairs[tasks[task].0].push(pair?);
    }
    let mut rows: Vec<Row> = mutants
        .iter()
        .zip(pairs)
        .map(|(mutant, pairs)| mutant_row(mutant, pairs))
        .collect();
    rows.push(reference_row(scenarios, settings)?);
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_counts_misses_as_worse_than_any_hit() {
        assert_eq!(median(&[Some(3), Some(1), Some(2)], 10), Some(2));
        assert_eq!(median(&[Some(3), None, None], 10), None);
        assert_eq!(median(&[Some(3), Some(5), None], 10), Some(5));
        assert_eq!(median(&[Some(1), Some(9)], 10), Some(1));
        assert_eq!(median(&[], 10), None);
    }
}
