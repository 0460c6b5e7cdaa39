//! `BenchRecord`: everything one `crashsim bench` measured, as `bench.json`
//! holds it (and `--format json` prints): the context, each configuration's
//! figures with its ratio to the limit, the targets judged from them, the
//! outside store's part and the regression gate's comparison.

use serde::{Deserialize, Serialize};

use super::figures::{ConfigRecord, Context};
use super::gate::Gate;
use super::measure::{Spread, relative_mad};
use super::plan::LIMIT;
use super::run::Measured;
use super::sut_record::{SutIdentity, SutRecord};

/// A goal of issue 4, judged from this run's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub name: String,
    pub goal: String,
    pub value: f64,
    pub met: bool,
}

/// The version of `bench.json`'s layout; a change that would mislead an
/// old reader bumps it.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything one `crashsim bench` measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchRecord {
    pub schema_version: u32,
    #[serde(flatten)]
    pub context: Context,
    pub configs: Vec<ConfigRecord>,
    pub targets: Vec<Target>,
    /// The outside store measured (`--sut`), with its ratios; `null` without one.
    #[serde(default)]
    pub sut: Option<SutRecord>,
    /// The comparison with `--baseline`; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
}

impl BenchRecord {
    pub fn new(context: Context, measured: &[Measured], sut: Option<SutIdentity>) -> BenchRecord {
        let limit: &[f64] = measured
            .iter()
            .find(|m| m.config.name == LIMIT)
            .map_or(&[], |m| &m.summary.appends_per_s_rounds);
        let configs: Vec<ConfigRecord> = measured
            .iter()
            .map(|m| {
                let s = &m.summary;
                let ratios = ratios_to(&s.appends_per_s_rounds, limit);
                ConfigRecord {
                    name: m.config.name.clone(),
                    description: m.config.description.clone(),
                    sut: m.config.kind.is_sut(),
                    writers: m.config.kind.writers(),
                    appends_per_s: s.appends_per_s.median,
                    appends_per_s_min: s.appends_per_s.min,
                    appends_per_s_max: s.appends_per_s.max,
                    commits_per_s: s.commits_per_s.median,
                    commits_per_s_min: s.commits_per_s.min,
                    commits_per_s_max: s.commits_per_s.max,
                    appends_per_commit: s.appends_per_commit(),
                    fsyncs_per_commit: m.config.kind.counts_fsyncs().then(|| s.fsyncs_per_commit()),
                    p50_us: s.p50_us,
                    p99_us: s.p99_us,
                    max_us: s.max_us,
                    ratio_to_limit: Spread::of(&ratios).median,
                    ratio_noise: relative_mad(&ratios),
                    ratios_to_limit: ratios,
                    commits: s.commits,
                    errors: s.errors,
                    note: m.note.clone(),
                }
            })
            .collect();
        let targets = targets(&configs);
        let sut = sut.map(|identity| SutRecord::new(identity, &configs));
        BenchRecord {
            schema_version: SCHEMA_VERSION,
            context,
            configs,
            targets,
            sut,
            gate: None,
        }
    }

    pub fn config(&self, name: &str) -> Option<&ConfigRecord> {
        self.configs.iter().find(|config| config.name == name)
    }
}

/// Each round's rate ÷ the limit's in the same round (0 where the limit's
/// is 0); as many as both have.
fn ratios_to(rates: &[f64], limit: &[f64]) -> Vec<f64> {
    rates
        .iter()
        .zip(limit)
        .map(|(rate, limit)| if *limit > 0.0 { rate / limit } else { 0.0 })
        .collect()
}

/// The targets whose configurations were measured.
fn targets(configs: &[ConfigRecord]) -> Vec<Target> {
    let find = |name: &str| configs.iter().find(|config| config.name == name);
    let ratio = |a: &str, b: &str| match (find(a), find(b)) {
        (Some(a), Some(b)) if b.appends_per_s > 0.0 => Some(a.appends_per_s / b.appends_per_s),
        _ => None,
    };
    let mut targets = Vec::new();
    let mut at_least = |name: &str, goal: &str, value: Option<f64>, threshold: f64| {
        if let Some(value) = value {
            targets.push(Target {
                name: name.to_string(),
                goal: goal.to_string(),
                value,
                met: value >= threshold,
            });
        }
    };
    at_least(
        "append_full_vs_limit",
        "append_full ÷ raw_overwrite_fsync_4k ≥ 0.9",
        find("append_full").map(|config| config.ratio_to_limit),
        0.9,
    );
    at_least(
        "append_full_vs_conn_per_append",
        "append_full ÷ conn_per_append_full ≥ 8",
        ratio("append_full", "conn_per_append_full"),
        8.0,
    );
    at_least(
        "group_commit16_vs_append_full",
        "group_commit16_full ÷ append_full ≥ 10",
        ratio("group_commit16_full", "append_full"),
        10.0,
    );
    if let Some(group) = find("group_commit16_full") {
        targets.push(Target {
            name: "group_commit16_p99".to_string(),
            goal: "group_commit16_full p99 ≤ 5000 µs".to_string(),
            value: group.p99_us,
            met: group.p99_us <= 5000.0,
        });
    }
    targets
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use super::*;
    use crate::bench::measure::{Spread, Summary};
    use crate::bench::plan;

    pub(crate) fn record() -> BenchRecord {
        made_up(plan::all(), None)
    }

    /// Every configuration, the outside store's included.
    pub(crate) fn record_with_sut() -> BenchRecord {
        let identity = SutIdentity {
            command: "python3 example_store.py".to_string(),
            name: "example_store".to_string(),
            version: Some("1.0".to_string()),
            granularity: crate::store::Granularity::Step,
        };
        made_up(plan::all().into_iter().chain(plan::sut()).collect(), Some(identity))
    }

    fn made_up(configs: Vec<plan::Config>, sut: Option<SutIdentity>) -> BenchRecord {
        let spread = |median: f64| Spread {
            median,
            min: median * 0.9,
            max: median * 1.1,
        };
        let measured: Vec<Measured> = configs
            .into_iter()
            .enumerate()
            .map(|(index, config)| {
                let rate = 1000.0 * (index + 1) as f64;
                Measured {
                    summary: Summary {
                        rounds: 5,
                        // Every configuration moves with the limit, round by
                        // round (factors exact in binary, so ratios are too).
                        appends_per_s_rounds: [1.0, 0.5, 1.5, 0.75, 1.25].map(|k| rate * k).to_vec(),
                        appends_per_s: spread(rate),
                        commits_per_s: spread(rate / 2.0),
                        appends: 2 * 5 * index as u64 + 2,
                        commits: 5 * index as u64 + 1,
                        fsyncs: 5 * index as u64 + 1,
                        errors: 0,
                        p50_us: 100.0 + index as f64,
                        p99_us: 200.0 + index as f64,
                        max_us: 5000.0,
                    },
                    note: (config.name == "sut_ping").then(|| "WAL not brought to steady state".to_string()),
                    config,
                }
            })
            .collect();
        let context = Context {
            git_commit: "0123456789abcdef0123456789abcdef01234567".to_string(),
            sqlite_version: "3.0.0".to_string(),
            filesystem: "ext4".to_string(),
            dir: "/data".to_string(),
            vfs: "unix".to_string(),
            quick: false,
            rounds: 5,
            sample_ms: Duration::from_secs(1).as_millis() as u64,
            cores: 2,
        };
        BenchRecord::new(context, &measured, sut)
    }

    #[test]
    fn ratios_are_to_the_limit_and_targets_compare_medians() {
        let record = record();
        assert_eq!(record.config(LIMIT).unwrap().ratio_to_limit, 1.0);
        assert_eq!(record.config("raw_overwrite_fdatasync_4k").unwrap().ratio_to_limit, 2.0);
        let append = record.config("append_full").unwrap().appends_per_s;
        let target = record
            .targets
            .iter()
            .find(|t| t.name == "append_full_vs_limit")
            .unwrap();
        assert_eq!(target.value, append / 1000.0);
        assert!(target.met);
        assert_eq!(record.targets.len(), 4);
        let p99 = record.targets.iter().find(|t| t.name == "group_commit16_p99").unwrap();
        assert!(p99.met);
    }

    #[test]
    fn the_ratio_is_the_median_of_per_round_ratios_not_a_ratio_of_medians() {
        let measured = |config: plan::Config, rounds: Vec<f64>| Measured {
            config,
            summary: Summary {
                appends_per_s: Spread::of(&rounds),
                appends_per_s_rounds: rounds,
                ..Summary::default()
            },
            note: None,
        };
        let all = plan::all();
        let runs = [
            measured(all[0].clone(), vec![100.0, 200.0, 400.0]),
            // Slowed in round 2 only, while the limit was fast.
            measured(all[5].clone(), vec![80.0, 50.0, 320.0]),
        ];
        let record = BenchRecord::new(record().context, &runs, None);
        let config = &record.configs[1];
        assert_eq!(config.ratios_to_limit, [0.8, 0.25, 0.8]);
        assert_eq!(config.ratio_to_limit, 0.8, "the median of 0.8, 0.25, 0.8");
        assert_eq!(config.ratio_noise, 0.0, "two of three rounds agree exactly");
        assert_eq!(record.configs[0].ratios_to_limit, [1.0; 3]);
        assert_eq!(record.schema_version, SCHEMA_VERSION);
    }

    #[test]
    fn the_json_record_round_trips_with_the_documented_keys() {
        for record in [record(), record_with_sut()] {
            let json = serde_json::to_value(&record).unwrap();
            for key in [
                "schema_version",
                "git_commit",
                "sqlite_version",
                "filesystem",
                "configs",
                "targets",
                "sut",
            ] {
                assert!(json.get(key).is_some(), "{key} missing");
            }
            let back: BenchRecord = serde_json::from_value(json).unwrap();
            assert_eq!(back, record);
        }
        assert!(serde_json::to_value(record()).unwrap()["sut"].is_null());
    }
}
