//! The gate on recorded numbers: no bench runs here, no timing is asserted.

use super::*;
use crate::bench::baseline::tests::{config, recorded};
use crate::bench::record::tests::record;

/// This run: the baseline's per-round ratios with `append_full`'s scaled by
/// `factor`, as if the code had changed by that much and nothing else.
fn run_with_append_full_at(factor: f64) -> Baseline {
    let mut now = recorded();
    let append = now.configs.iter_mut().find(|c| c.name == "append_full").unwrap();
    let ratios: Vec<f64> = append.ratios_to_limit.iter().map(|ratio| ratio * factor).collect();
    *append = config("append_full", &ratios);
    now
}

fn row<'a>(gate: &'a Gate, name: &str) -> &'a Row {
    gate.rows.iter().find(|row| row.name == name).unwrap()
}

#[test]
fn a_five_percent_drop_within_a_ten_percent_threshold_passes() {
    let gate = compare("base.json", &recorded(), &run_with_append_full_at(0.95), 0.10);
    let append = row(&gate, "append_full");
    assert!((append.delta + 0.05).abs() < 1e-9, "{append:?}");
    assert_eq!(append.verdict, Verdict::Ok);
    assert!(gate.passed && gate.regressed.is_empty(), "{gate:?}");
}

#[test]
fn a_twenty_five_percent_drop_fails() {
    let gate = compare("base.json", &recorded(), &run_with_append_full_at(0.75), 0.10);
    assert_eq!(row(&gate, "append_full").verdict, Verdict::Regressed);
    assert_eq!(
        row(&gate, "conn_per_append_full").verdict,
        Verdict::Ok,
        "the others did not move"
    );
    assert!(!gate.passed);
    assert_eq!(gate.regressed, ["append_full"]);
}

#[test]
fn a_drop_past_the_threshold_but_within_the_noise_passes() {
    // append_full's recorded rounds spread by 4.6% (MAD ÷ median), in both
    // runs: √2 × 4.6% ≈ 6.6% of noise on top of the 10%.
    let gate = compare("base.json", &recorded(), &run_with_append_full_at(0.88), 0.10);
    let append = row(&gate, "append_full");
    assert!(append.delta < -0.10, "{append:?}");
    assert!((append.allowed - 0.10 - append.noise.hypot(append.baseline_noise)).abs() < 1e-12);
    assert!(append.allowed > 0.12, "{append:?}");
    assert_eq!(append.verdict, Verdict::Ok);
    assert!(gate.passed);
    // Without the noise the same numbers fail.
    let mut quiet = run_with_append_full_at(0.88);
    let mut base = recorded();
    for baseline in [&mut quiet, &mut base] {
        for config in &mut baseline.configs {
            config.ratio_noise = 0.0;
        }
    }
    assert!(!compare("base.json", &base, &quiet, 0.10).passed);
}

#[test]
fn a_noise_that_swamps_the_threshold_is_a_warning() {
    let mut now = recorded();
    now.configs[1] = config("append_full", &[0.9, 0.3, 0.8, 1.6, 0.2, 0.77, 2.1, 0.7]);
    let gate = compare("base.json", &recorded(), &now, 0.10);
    assert!(gate.passed, "{gate:?}");
    assert_eq!(gate.warnings.len(), 1, "{:?}", gate.warnings);
    assert!(gate.warnings[0].starts_with("noisy, so only a larger fall fails: append_full (±"));
    assert!(compare("base.json", &recorded(), &recorded(), 0.10).warnings.is_empty());
}

#[test]
fn a_faster_configuration_passes() {
    let gate = compare("base.json", &recorded(), &run_with_append_full_at(1.3), 0.10);
    assert_eq!(row(&gate, "append_full").verdict, Verdict::Faster);
    assert!(gate.passed);
    assert!(table(&gate).contains("faster"));
}

#[test]
fn a_configuration_in_one_run_only_is_reported_and_does_not_fail() {
    let mut now = recorded();
    now.configs.retain(|config| config.name != "conn_per_append_full");
    now.configs.push(config("append_off", &[3.1, 3.0, 3.2]));
    let gate = compare("base.json", &recorded(), &now, 0.10);
    assert_eq!(gate.only_in_baseline, ["conn_per_append_full"]);
    assert_eq!(gate.only_in_run, ["append_off"]);
    assert_eq!(gate.rows.len(), 1);
    assert!(gate.passed);
    let text = table(&gate);
    assert!(
        text.contains("only in the baseline, not compared: conn_per_append_full"),
        "{text}"
    );
    assert!(text.contains("only in this run, not compared: append_off"), "{text}");
}

#[test]
fn the_limit_is_not_compared_even_when_its_ratio_is_off() {
    let mut now = recorded();
    now.configs[0] = config(LIMIT, &[0.5; 8]);
    let gate = compare("base.json", &recorded(), &now, 0.10);
    assert!(gate.rows.iter().all(|row| row.name != LIMIT), "{gate:?}");
    assert!(gate.passed && gate.only_in_run.is_empty() && gate.only_in_baseline.is_empty());
    assert!(table(&gate).contains("is the limit: its ratio is 1 by definition"));
}

#[test]
fn a_different_context_warns_but_still_compares() {
    let mut now = run_with_append_full_at(0.5);
    now.context.filesystem = "xfs".to_string();
    now.context.quick = true;
    now.limit_appends_per_s = 2.5 * recorded().limit_appends_per_s;
    let gate = compare("base.json", &recorded(), &now, 0.10);
    assert_eq!(gate.warnings.len(), 3, "{:?}", gate.warnings);
    assert!(gate.warnings[0].contains("ext4") && gate.warnings[0].contains("xfs"));
    assert!(gate.warnings[1].contains("--quick"));
    assert!(
        gate.warnings[2].contains("1.00k/s in the baseline, 2.50k/s now"),
        "{}",
        gate.warnings[2]
    );
    assert!(!gate.passed, "compared anyway");
    assert!(compare("base.json", &recorded(), &recorded(), 0.10).warnings.is_empty());
}

#[test]
fn thresholds_are_percentages_with_or_without_the_sign() {
    assert_eq!(parse_threshold("10%"), Ok(0.10));
    assert_eq!(parse_threshold("10"), Ok(0.10));
    assert_eq!(parse_threshold(" 2.5 %"), Ok(0.025));
    assert_eq!(parse_threshold("0"), Ok(0.0));
    for bad in ["", "%", "ten", "10%%", "-5%", "100", "150%", "NaN", "inf"] {
        let error = parse_threshold(bad).unwrap_err();
        assert!(error.contains(&format!("`{bad}`")), "{bad}: {error}");
    }
}

#[test]
fn the_table_markdown_and_json_carry_every_row() {
    let gate = compare("/tmp/base.json", &recorded(), &run_with_append_full_at(0.5), 0.10);
    let text = table(&gate);
    let line = text.lines().find(|line| line.starts_with("append_full ")).unwrap();
    assert!(
        line.contains("0.775") && line.contains("-50.0%") && line.ends_with("REGRESSED"),
        "{line}"
    );
    assert!(
        text.contains("/tmp/base.json") && text.ends_with("gate: REGRESSED: append_full\n"),
        "{text}"
    );
    let markdown = markdown(&gate);
    assert!(
        markdown.contains("## Regression gate") && markdown.contains("| `append_full` |"),
        "{markdown}"
    );

    let mut with_gate = record();
    with_gate.gate = Some(gate.clone());
    let json = serde_json::to_value(&with_gate).unwrap();
    assert_eq!(json["gate"]["threshold"], 0.10);
    assert_eq!(json["gate"]["regressed"][0], "append_full");
    assert_eq!(json["gate"]["rows"][0]["verdict"], "regressed");
    for key in ["baseline_ratio", "ratio", "delta", "allowed", "noise", "baseline_noise"] {
        assert!(json["gate"]["rows"][0][key].is_number(), "{key}");
    }
    let back: crate::bench::BenchRecord = serde_json::from_value(json).unwrap();
    assert_eq!(back.gate, Some(gate));
    assert!(serde_json::to_value(record()).unwrap().get("gate").is_none());
    assert!(crate::bench::report::markdown(&with_gate).contains("## Regression gate"));
    assert!(crate::bench::report::table(&with_gate).contains("gate: REGRESSED"));
}
