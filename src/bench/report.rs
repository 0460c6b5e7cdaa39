//! The bench record's renderings: the terminal table, the Markdown table,
//! and the files under `reports/bench/` (`bench.json`, `bench.md`,
//! `bench.svg`). The record itself is `record`.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::chart;
use super::columns::aligned;
use super::figures::ConfigRecord;
use super::gate;
use super::record::BenchRecord;
use crate::report::atomic;
use crate::report::number::short;

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
mod tests {
    use super::*;
    use crate::bench::record::tests::{record, record_with_sut};

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
