//! The bench's record and its renderings: the JSON record (also what
//! `--format json` prints), the terminal table, the Markdown table, and the
//! files under `reports/bench/`.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::chart;
use super::gate::{self, Gate};
use super::measure::{Spread, relative_mad};
use super::plan::LIMIT;
use super::run::Measured;
use super::sut_record::{SutIdentity, SutRecord};
use crate::report::atomic;
use crate::report::number::short;

/// Where the run happened and with what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Context {
    pub git_commit: String,
    pub sqlite_version: String,
    /// The filesystem of `dir` (`ext4`, `xfs`, `tmpfs`…).
    pub filesystem: String,
    pub dir: String,
    /// The VFS the counting shim forwards to.
    pub vfs: String,
    pub quick: bool,
    pub rounds: u32,
    pub sample_ms: u64,
    pub cores: usize,
}

/// One configuration's figures: medians over the rounds, with ranges.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigRecord {
    pub name: String,
    pub description: String,
    /// Whether this measured the outside store (`--sut`), not crashsim's own code.
    #[serde(default)]
    pub sut: bool,
    /// Threads appending concurrently.
    pub writers: usize,
    pub appends_per_s: f64,
    pub appends_per_s_min: f64,
    pub appends_per_s_max: f64,
    /// SQLite transactions committed per second (groups, for group commit).
    pub commits_per_s: f64,
    pub commits_per_s_min: f64,
    pub commits_per_s_max: f64,
    /// Appends per SQLite commit: the batch or mean group size.
    pub appends_per_commit: f64,
    /// Counted file and directory syncs per SQLite commit; `null` when they
    /// cannot be counted (an outside store syncs in its own process).
    pub fsyncs_per_commit: Option<f64>,
    /// Commit latency per acknowledged transaction, from its caller's side.
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// The median over the rounds of this round's appends/s ÷ the limit's
    /// (`raw_overwrite_fsync_4k`) in the same round: each configuration is
    /// paired with the disk as it was while it ran.
    pub ratio_to_limit: f64,
    /// The per-round ratios `ratio_to_limit` is the median of, in round order.
    #[serde(default)]
    pub ratios_to_limit: Vec<f64>,
    /// Their relative spread: median absolute deviation ÷ median
    /// (`measure::relative_mad`); the noise `--baseline` allows for.
    #[serde(default)]
    pub ratio_noise: f64,
    pub commits: u64,
    /// Transactions that failed (busy timeouts); excluded from the rates.
    pub errors: u64,
    /// Something to know about how it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

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

const HEADERS: [&str; 9] = [
    "configuration",
    "appends/s",
    "min–max",
    "commits/s",
    "fsyncs/commit",
    "p50 µs",
    "p99 µs",
    "max µs",
    "× limit",
];

fn row(config: &ConfigRecord) -> [String; 9] {
    [
        config.name.clone(),
        short(config.appends_per_s),
        format!(
            "{}–{}",
            short(config.appends_per_s_min),
            short(config.appends_per_s_max)
        ),
        short(config.commits_per_s),
        config
            .fsyncs_per_commit
            .map_or_else(|| "-".to_string(), |fsyncs| format!("{fsyncs:.3}")),
        short(config.p50_us),
        short(config.p99_us),
        short(config.max_us),
        format!("{:.2}", config.ratio_to_limit),
    ]
}

fn target_lines(record: &BenchRecord) -> String {
    let mut text = String::new();
    for target in &record.targets {
        let value = if target.name.ends_with("p99") {
            format!("{:.0} µs", target.value)
        } else {
            format!("{:.2}", target.value)
        };
        let verdict = if target.met { "met" } else { "MISSED" };
        let _ = writeln!(text, "{verdict:<6} {}: {value}", target.goal);
    }
    text
}

fn context_line(record: &BenchRecord) -> String {
    let c = &record.context;
    format!(
        "crashsim {} · SQLite {} · {} on {} (VFS {}) · {} round(s) of {} ms{} · {} core(s)",
        crate::platform::short_commit(&c.git_commit),
        c.sqlite_version,
        c.dir,
        c.filesystem,
        c.vfs,
        c.rounds,
        c.sample_ms,
        if c.quick { " (quick)" } else { "" },
        c.cores
    )
}

/// Rows of cells as aligned text lines: the first column left-aligned, the
/// others right-aligned, two spaces apart.
pub(super) fn aligned(rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        widths.resize(widths.len().max(row.len()), 0);
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for row in rows {
        let mut line = String::new();
        for (index, (cell, width)) in row.iter().zip(&widths).enumerate() {
            let pad = " ".repeat(width - cell.chars().count());
            if index == 0 {
                let _ = write!(line, "{cell}{pad}");
            } else {
                let _ = write!(line, "  {pad}{cell}");
            }
        }
        let _ = writeln!(text, "{}", line.trim_end());
    }
    text
}

/// The terminal table, the context line and the targets.
pub fn table(record: &BenchRecord) -> String {
    let mut lines = vec![HEADERS.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    lines.extend(record.configs.iter().map(|config| row(config).to_vec()));
    let mut text = format!("{}\n", context_line(record));
    text.push_str(&aligned(&lines));
    let errors: u64 = record.configs.iter().map(|config| config.errors).sum();
    if errors > 0 {
        let _ = writeln!(
            text,
            "note: {errors} transaction(s) failed with a busy timeout (see `errors`)"
        );
    }
    for line in notes(record) {
        let _ = writeln!(text, "note: {line}");
    }
    text.push_str(&target_lines(record));
    if let Some(sut) = &record.sut {
        for line in sut.lines() {
            let _ = writeln!(text, "{line}");
        }
    }
    if let Some(gate) = &record.gate {
        text.push_str(&gate::table(gate));
    }
    text
}

/// Each configuration's note, named.
fn notes(record: &BenchRecord) -> Vec<String> {
    record
        .configs
        .iter()
        .filter_map(|config| config.note.as_ref().map(|note| format!("{}: {note}", config.name)))
        .collect()
}

/// The Markdown report.
pub fn markdown(record: &BenchRecord) -> String {
    let mut text = format!("# crashsim bench\n\n{}\n\n", context_line(record));
    let _ = writeln!(text, "| {} |", HEADERS.join(" | "));
    let _ = writeln!(text, "|{}", "---|".repeat(HEADERS.len()));
    for config in &record.configs {
        let mut cells = row(config);
        cells[0] = format!("`{}`", cells[0]);
        let _ = writeln!(text, "| {} |", cells.join(" | "));
    }
    text.push_str("\nMedians over the rounds, min–max of the per-round rates; latencies pooled over every round. ");
    text.push_str("fsyncs are counted by the VFS (file and directory syncs); × limit is the median over the rounds of appends/s ÷ `raw_overwrite_fsync_4k`'s in the same round.\n");
    for line in notes(record) {
        let _ = writeln!(text, "\nNote: {line}");
    }
    text.push_str("\n## Targets\n\n");
    for line in target_lines(record).lines() {
        let _ = writeln!(text, "- {line}");
    }
    if let Some(sut) = &record.sut {
        text.push_str("\n## Outside store\n\n");
        text.push_str(
            "The `sut_*` rows: one `append` request per append (with 1 outbox command for `outbox1`), \
             and `sut_ping`, a request that does nothing (its rate is pings/s). \
             Their fsyncs are `-`: the counting VFS sees only crashsim's own process.\n\n",
        );
        for line in sut.lines() {
            let _ = writeln!(text, "- {line}");
        }
    }
    if let Some(gate) = &record.gate {
        text.push_str(&gate::markdown(gate));
    }
    text.push_str("\n![throughput and p99 by configuration](bench.svg)\n");
    text
}

/// Writes `bench.json`, `bench.md` and `bench.svg` under `root/bench/`,
/// each atomically; returns the folder.
pub fn write(root: &Path, record: &BenchRecord) -> std::io::Result<PathBuf> {
    let dir = root.join("bench");
    let mut json = serde_json::to_string_pretty(record).expect("records serialise");
    json.push('\n');
    atomic::write(&dir.join("bench.json"), json.as_bytes())?;
    atomic::write(&dir.join("bench.md"), markdown(record).as_bytes())?;
    atomic::write(&dir.join("bench.svg"), chart::svg(record).as_bytes())?;
    Ok(dir)
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

    #[test]
    fn the_outside_stores_fsyncs_are_unknown_never_zero() {
        let record = record_with_sut();
        let json = serde_json::to_value(&record).unwrap();
        for config in json["configs"].as_array().unwrap() {
            let name = config["name"].as_str().unwrap();
            let sut = name.starts_with("sut_");
            assert_eq!(config["sut"], sut, "{name}");
            assert_eq!(config["fsyncs_per_commit"].is_null(), sut, "{name}");
        }
        assert_eq!(json["sut"]["name"], "example_store");
        assert_eq!(json["sut"]["command"], "python3 example_store.py");
        let table = table(&record);
        let row = table.lines().find(|line| line.starts_with("sut_append_full ")).unwrap();
        assert!(row.split_whitespace().any(|cell| cell == "-"), "{row}");
        assert!(table.contains("note: sut_ping: WAL not brought"), "{table}");
        assert!(table.contains("outside store (sut_*): example_store 1.0"), "{table}");
        let markdown = markdown(&record);
        assert!(markdown.contains("## Outside store") && markdown.contains("sut_append_full ÷ append_full"));
    }

    #[test]
    fn the_table_and_markdown_name_every_configuration() {
        let record = record();
        let table = table(&record);
        let markdown = markdown(&record);
        for config in &record.configs {
            assert!(table.contains(&config.name), "{}", config.name);
            assert!(markdown.contains(&format!("`{}`", config.name)), "{}", config.name);
        }
        assert!(table.contains("ext4") && table.contains("0123456789ab"));
    }
}
