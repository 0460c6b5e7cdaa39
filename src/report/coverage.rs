//! A run's coverage in its summary: for every kill point, fault kind and
//! invariant, whether the scenario declared it and how often the run
//! reached, fired or exercised it (`check::coverage` says what each
//! means). Sums of partitions merge into the coverage of their whole run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::suspensions::{self, SuspensionCoverage};
use crate::check::Invariant;
use crate::check::coverage;
use crate::faults::{KillCounters, KillPoint};
use crate::ratio::Ratio;
use crate::runner::SeedResult;
use crate::scenario::Scenario;

/// One kill point across a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointCoverage {
    /// The scenario turns it on, and the store under test can reach it.
    pub declared: bool,
    pub reached: u64,
    pub fired: u64,
    /// The reaches that could have fired (faults on), by the rate the
    /// seed's plan gave the point (`"1/40": 120`; swarm seeds draw their
    /// own). Absent from summaries written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub armed: Option<BTreeMap<Ratio, u64>>,
}

impl PointCoverage {
    /// The chance that the point fires at none of its armed reaches:
    /// the product of `(1 - rate)` over them; `None` when unknown.
    fn silence(&self) -> Option<f64> {
        let armed = self.armed.as_ref()?;
        let log: f64 = armed
            .iter()
            .map(|(rate, reaches)| {
                let rate = f64::from(rate.numerator) / f64::from(rate.denominator);
                *reaches as f64 * (-rate).ln_1p()
            })
            .sum();
        Some(log.exp())
    }
}

/// One kind of fault across a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultCoverage {
    pub declared: bool,
    /// Times it fired.
    pub fired: u64,
    /// Seeds in which it fired at least once.
    pub seeds: u64,
}

/// One invariant across a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvariantCoverage {
    /// The scenario's faults and workload make its situation (`check::coverage::required`).
    pub required: bool,
    /// Seeds with a verdict in which its situation arose.
    pub exercised: u64,
}

/// What a run covered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    pub kill_points: BTreeMap<String, PointCoverage>,
    /// With `[preempt]`, per kind of scheduling point (absent without, and
    /// from summaries written before it was recorded).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub suspensions: BTreeMap<String, SuspensionCoverage>,
    pub faults: BTreeMap<String, FaultCoverage>,
    pub invariants: BTreeMap<Invariant, InvariantCoverage>,
    /// With `[backup]`: what became of the backups (absent without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backups: Option<coverage::Backups>,
    /// Everything declared or required that the run never fired or
    /// exercised, in words; `--require-fired` fails the run on any.
    pub gaps: Vec<String>,
}

impl Coverage {
    /// One line for people: the faults besides kills that fired, with how
    /// often and in how many seeds ("faults fired: 11 power cuts (in 7
    /// seeds), …"); `None` if none did.
    pub fn faults_line(&self) -> Option<String> {
        let parts: Vec<String> = self
            .faults
            .iter()
            .filter(|(_, fault)| fault.fired > 0)
            .map(|(kind, fault)| {
                let seeds = match fault.seeds {
                    1 => "1 seed".to_string(),
                    seeds => format!("{seeds} seeds"),
                };
                format!("{} {} (in {seeds})", fault.fired, fault_words(kind))
            })
            .collect();
        (!parts.is_empty()).then(|| format!("faults fired: {}", parts.join(", ")))
    }

    /// The coverage of `results`, seeds of `scenario` whose kill counters
    /// add up to `kills`, run against a store that cannot reach `unreachable`.
    pub fn of(
        scenario: &Scenario,
        results: &[SeedResult],
        kills: &KillCounters,
        unreachable: &[KillPoint],
    ) -> Coverage {
        let declared_points = scenario.faults.declared();
        let declared_faults = coverage::declared_faults(scenario);
        let required = coverage::required(scenario, unreachable);
        let mut coverage = Coverage::default();
        for kind in coverage::FAULTS {
            let declared = declared_faults.contains(kind);
            coverage.faults.insert(
                kind.to_string(),
                FaultCoverage {
                    declared,
                    ..Default::default()
                },
            );
        }
        for invariant in coverage::invariants() {
            let required = required.contains(&invariant);
            let entry = InvariantCoverage { required, exercised: 0 };
            coverage.invariants.insert(invariant, entry);
        }
        if scenario.backup.is_some() {
            let mut backups = coverage::Backups::default();
            for result in results {
                backups.add(&result.backups);
            }
            coverage.backups = Some(backups);
        }
        for result in results {
            for (kind, fired) in coverage::fired(&result.injected) {
                let entry = coverage.faults.entry(kind.to_string()).or_default();
                entry.fired += fired;
                entry.seeds += 1;
            }
            // A seed that broke an invariant exercised it, whatever the
            // store's own trace says it arose (or the gap would say "never
            // exercised" under "I10 in N seeds").
            let broken = result.violations.iter().map(|violation| &violation.invariant);
            let exercised: std::collections::BTreeSet<_> = result.exercised.iter().chain(broken).collect();
            for invariant in exercised {
                coverage.invariants.entry(*invariant).or_default().exercised += 1;
            }
        }
        for point in KillPoint::ALL {
            let declared = declared_points.contains(&point) && !unreachable.contains(&point);
            let entry = PointCoverage {
                declared,
                reached: kills.reached[point.index()],
                fired: kills.fired[point.index()],
                armed: Some(kills.armed[point.index()].clone()),
            };
            coverage.kill_points.insert(point.name().to_string(), entry);
        }
        coverage.suspensions = suspensions::of(scenario, kills);
        coverage.gaps = coverage.find_gaps(results.len() as u64);
        coverage
    }

    /// The coverage of two runs of one scenario together (partitions).
    pub fn merge(&mut self, other: &Coverage, seeds: u64) {
        for (name, point) in &other.kill_points {
            let Some(entry) = self.kill_points.get_mut(name) else {
                self.kill_points.insert(name.clone(), point.clone());
                continue;
            };
            entry.declared |= point.declared;
            entry.reached += point.reached;
            entry.fired += point.fired;
            // A part that did not record its armed reaches leaves the sum unknown.
            entry.armed = match (entry.armed.take(), &point.armed) {
                (Some(mut sum), Some(armed)) => {
                    for (rate, reaches) in armed {
                        *sum.entry(*rate).or_default() += reaches;
                    }
                    Some(sum)
                }
                _ => None,
            };
        }
        suspensions::merge(&mut self.suspensions, &other.suspensions);
        if let Some(other) = &other.backups {
            self.backups.get_or_insert_with(Default::default).add(other);
        }
        for (name, fault) in &other.faults {
            let entry = self.faults.entry(name.clone()).or_default();
            entry.declared |= fault.declared;
            entry.fired += fault.fired;
            entry.seeds += fault.seeds;
        }
        for (name, invariant) in &other.invariants {
            let entry = self.invariants.entry(*name).or_default();
            entry.required |= invariant.required;
            entry.exercised += invariant.exercised;
        }
        self.gaps = self.find_gaps(seeds);
    }

    /// What was declared and never seen in `seeds` seeds. Kill points
    /// whose silence is unsurprising (`Silence::Expected`) are said once,
    /// together; each suspicious one on its own.
    fn find_gaps(&self, count: u64) -> Vec<String> {
        let seeds = match count {
            1 => "1 seed".to_string(),
            n => format!("{n} seeds"),
        };
        let mut gaps = Vec::new();
        let mut expected: Vec<(&String, &PointCoverage, f64)> = Vec::new();
        for (name, point) in &self.kill_points {
            if !point.declared || point.fired > 0 {
                continue;
            }
            match silence(point, count) {
                Silence::Expected(chance) => expected.push((name, point, chance)),
                Silence::Suspicious(why) => {
                    gaps.push(format!(
                        "kill point {name} is declared but never fired in {seeds} ({why})"
                    ));
                }
            }
        }
        match expected.as_slice() {
            [] => {}
            [(name, point, chance)] => gaps.push(format!(
                "kill point {name} is declared but never fired in {seeds} ({}): expected with so few seeds",
                odds(point, *chance)
            )),
            several => {
                let names: Vec<&str> = several.iter().map(|(name, _, _)| name.as_str()).collect();
                let least = several.iter().map(|(_, _, chance)| *chance).fold(1.0, f64::min);
                let odds = match least < 1.0 {
                    true => format!(
                        "at its rate and reaches, each had a chance of at least {} of never firing",
                        percent(least)
                    ),
                    false => "none was reached while it could fire".to_string(),
                };
                gaps.push(format!(
                    "{} declared kill points never fired in {seeds} ({}): expected with so few seeds ({odds})",
                    several.len(),
                    names.join(", "),
                ));
            }
        }
        gaps.extend(suspensions::gaps(&self.suspensions, &seeds));
        for (name, fault) in &self.faults {
            if fault.declared && fault.fired == 0 {
                gaps.push(format!("fault {name} is declared but never fired in {seeds}"));
            }
        }
        for (invariant, entry) in &self.invariants {
            let invariant = *invariant;
            if entry.required && entry.exercised == 0 {
                gaps.push(format!(
                    "invariant {invariant} ({}) was never exercised in {seeds}: no seed in which {}",
                    invariant.title(),
                    coverage::situation(invariant)
                ));
            }
        }
        gaps
    }
}

/// Below this chance of never firing, a silent kill point is suspicious.
const SUSPICIOUS: f64 = 0.01;
/// A kill point never reached in this many seeds or more is suspicious.
const NEVER_REACHED_SEEDS: u64 = 10;

/// How surprising a declared kill point's silence is.
enum Silence {
    /// Likely enough at its rate and reaches (the chance of it), or never
    /// reached in a few seeds.
    Expected(f64),
    /// It should have fired, or it was never reached in many seeds, or
    /// the summary does not say how often it could have fired: why.
    Suspicious(String),
}

fn silence(point: &PointCoverage, seeds: u64) -> Silence {
    if point.reached == 0 {
        return match seeds >= NEVER_REACHED_SEEDS {
            true => Silence::Suspicious("never reached".to_string()),
            false => Silence::Expected(1.0),
        };
    }
    match point.silence() {
        Some(chance) if chance >= SUSPICIOUS => Silence::Expected(chance),
        Some(chance) => Silence::Suspicious(odds(point, chance)),
        None => Silence::Suspicious(format!("reached {} times", point.reached)),
    }
}

/// "reached 370 times, 300 while it could fire, at 1/20: a 2% chance of
/// never firing": the reaches, those that could have fired (faults on,
/// its rate above zero) by their rates, and the chance of its silence.
fn odds(point: &PointCoverage, chance: f64) -> String {
    if point.reached == 0 {
        return "never reached".to_string();
    }
    let armed = point.armed.clone().unwrap_or_default();
    let rates: Vec<String> = armed.keys().map(ToString::to_string).collect();
    match armed.values().sum::<u64>() {
        0 => format!("reached {} times, none while it could fire", point.reached),
        could => format!(
            "reached {} times, {could} while it could fire, at {}: {} of never firing",
            point.reached,
            rates.join(" or "),
            a_chance(chance)
        ),
    }
}

/// A chance as a percentage a reader can take in: "74%", "0.3%", "0.02%".
fn percent(chance: f64) -> String {
    let percent = chance * 100.0;
    if percent >= 10.0 {
        format!("{percent:.0}%")
    } else if percent >= 0.1 {
        format!("{percent:.1}%")
    } else {
        format!("{percent:.2}%")
    }
}

/// "a 74% chance", "a chance below 0.01%", "a chance over 99%".
fn a_chance(chance: f64) -> String {
    if chance < 0.0001 {
        "a chance below 0.01%".to_string()
    } else if chance > 0.99 && chance < 1.0 {
        "a chance over 99%".to_string()
    } else {
        format!("a {} chance", percent(chance))
    }
}

/// A fault kind (`check::coverage::FAULTS`) in words, counted.
fn fault_words(kind: &str) -> &str {
    match kind {
        "drop" => "messages dropped",
        "duplicate" => "messages duplicated",
        "key_conflict" => "key-conflict probes",
        "near_miss" => "near-miss probes",
        "power_cut" => "power cuts",
        "pause" => "pauses",
        "receiver_retryable" => "retryable refusals",
        "net_retryable" => "replies turned retryable",
        "skew" => "skewed clocks",
        "clock_step" => "clock steps",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Violation;

    fn result(exercised: &[Invariant], broken: &[Invariant]) -> SeedResult {
        SeedResult {
            scenario: "smoke".into(),
            seed: 0,
            ok: broken.is_empty(),
            violations: broken
                .iter()
                .map(|invariant| Violation {
                    invariant: *invariant,
                    message: "broken".into(),
                    workflow_id: None,
                    command_id: None,
                    seq: None,
                    ticks: Vec::new(),
                })
                .collect(),
            trace_hash: String::new(),
            steps: 0,
            ticks: 0,
            settled: true,
            faults: String::new(),
            kills: KillCounters::default(),
            exercised: exercised.iter().copied().collect(),
            backups: Default::default(),
            injected: Vec::new(),
            fault_points: None,
            suspension_steps: Vec::new(),
            events: None,
            snapshot: None,
            artifacts: Vec::new(),
            kept_dir: None,
        }
    }

    #[test]
    fn a_broken_invariant_counts_as_exercised_so_no_gap_contradicts_the_finding() {
        let loaded = crate::scenario::builtin::find(std::path::Path::new("smoke"))
            .expect("built in")
            .load()
            .expect("loads");
        // The trace never marked I10's situation, but the seed broke I10.
        let results = [result(&[Invariant::I1], &[Invariant::I10])];
        let coverage = Coverage::of(&loaded.scenario, &results, &KillCounters::default(), &[]);
        assert!(coverage.invariants[&Invariant::I10].required);
        assert_eq!(coverage.invariants[&Invariant::I10].exercised, 1);
        assert!(
            !coverage.gaps.iter().any(|gap| gap.contains("I10")),
            "{:?}",
            coverage.gaps
        );
        let untouched = Coverage::of(&loaded.scenario, &results[..0], &KillCounters::default(), &[]);
        assert_eq!(untouched.invariants[&Invariant::I10].exercised, 0);
    }

    /// A declared kill point: name, reached, fired, armed reaches by rate
    /// (`None`: a summary that did not record them).
    type Point<'a> = (&'a str, u64, u64, Option<&'a [(Ratio, u64)]>);

    /// A coverage of declared kill points only.
    fn points(points: &[Point<'_>]) -> Coverage {
        let mut coverage = Coverage::default();
        for (name, reached, fired, armed) in points {
            let point = PointCoverage {
                declared: true,
                reached: *reached,
                fired: *fired,
                armed: armed.map(|armed| armed.iter().copied().collect()),
            };
            coverage.kill_points.insert(name.to_string(), point);
        }
        coverage
    }

    const ONE_IN_40: Ratio = Ratio::new(1, 40);

    #[test]
    fn kill_points_that_had_little_chance_are_said_once() {
        // 10 reaches at 1/40: silent with a chance of 78%; 30 at 1/40: 47%;
        // a swarm seed that turned the third off: never armed.
        let coverage = points(&[
            ("writer.before_commit", 10, 0, Some(&[(ONE_IN_40, 10)])),
            ("worker.after_deliver", 40, 0, Some(&[(ONE_IN_40, 30)])),
            ("receiver.after_effect_commit", 12, 0, Some(&[])),
            ("worker.before_deliver", 50, 3, Some(&[(ONE_IN_40, 50)])),
        ]);
        let gaps = coverage.find_gaps(1);
        assert_eq!(
            gaps,
            [
                "3 declared kill points never fired in 1 seed (receiver.after_effect_commit, worker.after_deliver, \
                 writer.before_commit): expected with so few seeds (at its rate and reaches, each had a chance of at \
                 least 47% of never firing)"
            ],
            "{gaps:#?}"
        );
        // One alone keeps the words of a single point.
        let single = points(&[("writer.before_commit", 10, 0, Some(&[(ONE_IN_40, 10)]))]);
        assert_eq!(
            single.find_gaps(2),
            [
                "kill point writer.before_commit is declared but never fired in 2 seeds (reached 10 times, 10 while \
              it could fire, at 1/40: a 78% chance of never firing): expected with so few seeds"
            ]
        );
    }

    #[test]
    fn a_kill_point_that_should_have_fired_is_said_on_its_own() {
        // 400 reaches at 1/40: silent with a chance of 0.004%.
        let coverage = points(&[
            ("writer.before_commit", 10, 0, Some(&[(ONE_IN_40, 10)])),
            (
                "worker.after_deliver",
                500,
                0,
                Some(&[(ONE_IN_40, 300), (Ratio::new(1, 4), 100)]),
            ),
        ]);
        let gaps = coverage.find_gaps(3);
        assert_eq!(gaps.len(), 2, "{gaps:#?}");
        assert_eq!(
            gaps[0],
            "kill point worker.after_deliver is declared but never fired in 3 seeds (reached 500 times, 400 while \
             it could fire, at 1/4 or 1/40: a chance below 0.01% of never firing)"
        );
        assert!(gaps[1].starts_with("kill point writer.before_commit is declared but never fired in 3 seeds"));
    }

    #[test]
    fn a_kill_point_never_reached_in_many_seeds_is_said_on_its_own() {
        let coverage = points(&[("worker.after_read_pending", 0, 0, Some(&[]))]);
        assert!(coverage.find_gaps(3)[0].contains("expected with so few seeds"));
        assert_eq!(
            coverage.find_gaps(NEVER_REACHED_SEEDS),
            ["kill point worker.after_read_pending is declared but never fired in 10 seeds (never reached)"]
        );
    }

    #[test]
    fn a_summary_without_armed_reaches_keeps_each_point_on_its_own() {
        // Merged with a part written before `armed` was recorded: unknown.
        let mut coverage = points(&[("writer.before_commit", 10, 0, Some(&[(ONE_IN_40, 10)]))]);
        let older = points(&[("writer.before_commit", 10, 0, None)]);
        coverage.merge(&older, 2);
        assert_eq!(coverage.kill_points["writer.before_commit"].armed, None);
        assert_eq!(
            coverage.gaps,
            ["kill point writer.before_commit is declared but never fired in 2 seeds (reached 20 times)"]
        );
        // Two parts that recorded them add up.
        let mut both = points(&[("writer.before_commit", 10, 0, Some(&[(ONE_IN_40, 10)]))]);
        both.merge(&points(&[("writer.before_commit", 5, 0, Some(&[(ONE_IN_40, 5)]))]), 2);
        assert_eq!(
            both.kill_points["writer.before_commit"].armed,
            Some(BTreeMap::from([(ONE_IN_40, 15)]))
        );
    }

    #[test]
    fn any_silent_kill_point_is_a_gap_whatever_its_chance() {
        // The coverage gate (`--require-fired`) fails on any gap: saying
        // unsurprising points together must not drop one.
        for (reached, armed) in [(10, 10), (500, 500)] {
            let coverage = points(&[("writer.before_commit", reached, 0, Some(&[(ONE_IN_40, armed)]))]);
            assert_eq!(coverage.find_gaps(1).len(), 1);
        }
        let fired = points(&[("writer.before_commit", 10, 1, Some(&[(ONE_IN_40, 10)]))]);
        assert!(fired.find_gaps(1).is_empty());
    }

    #[test]
    fn armed_reaches_are_written_by_their_rate_and_read_back() {
        let coverage = points(&[("writer.before_commit", 10, 0, Some(&[(ONE_IN_40, 10)]))]);
        let json = serde_json::to_string(&coverage).unwrap();
        assert!(json.contains(r#""armed":{"1/40":10}"#), "{json}");
        let back: Coverage = serde_json::from_str(&json).unwrap();
        assert_eq!(back, coverage);
        // A summary written before `armed` was recorded still reads.
        let old = json.replace(r#","armed":{"1/40":10}"#, "");
        let read: Coverage = serde_json::from_str(&old).unwrap();
        assert_eq!(read.kill_points["writer.before_commit"].armed, None);
    }
}
