//! The report's JSON shape: field names are a contract with its readers.

use std::collections::BTreeSet;

use super::*;

/// The object keys of `value` at `path` (`*` for every entry of a map
/// or array whose own keys are data, not fields).
fn keys_at(value: &serde_json::Value, path: &[&str], out: &mut BTreeSet<String>) {
    match (path.split_first(), value) {
        (None, serde_json::Value::Object(map)) => out.extend(map.keys().cloned()),
        (Some((&"*", rest)), serde_json::Value::Object(map)) => {
            map.values().for_each(|value| keys_at(value, rest, out));
        }
        (Some((&"*", rest)), serde_json::Value::Array(items)) => {
            items.iter().for_each(|value| keys_at(value, rest, out));
        }
        (Some((key, rest)), serde_json::Value::Object(map)) => {
            if let Some(value) = map.get(*key) {
                keys_at(value, rest, out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_field_of_a_run_summary_is_documented_in_reports_readme() {
    let readme = include_str!("../../../reports/README.md");
    let loaded = crate::scenario::builtin::find(std::path::Path::new("smoke"))
        .expect("built in")
        .load()
        .expect("loads");
    let error = ErrorRecord::new(
        "smoke",
        3,
        &RunError::Unsupported("a store that cannot".into()),
        "crashsim replay smoke --seed 3".into(),
    );
    let mut scenario = ScenarioSummary::of(&loaded, "reference", &[], 1.0, &[], |_| String::new()).with_errors(
        vec![error],
        0,
        String::new(),
    );
    scenario.failing_seeds.push(FailingSeed {
        seed: 1,
        invariants: vec!["I1".into()],
        first: String::new(),
        replay: String::new(),
    });
    scenario.interrupted = Some("SIGINT".into());
    scenario.unreachable = vec!["writer.before_commit".into()];
    let run = RunSummary::new(&[scenario], 1.0, 2, "in-process", std::path::Path::new("/tmp"), "tmpfs");
    let value = serde_json::to_value(&run).expect("serialises");
    let mut keys = BTreeSet::new();
    for path in [
        &[][..],
        &["scenarios", "*"],
        &["scenarios", "*", "selection"],
        &["scenarios", "*", "coverage"],
        &["scenarios", "*", "coverage", "kill_points", "*"],
        &["scenarios", "*", "coverage", "faults", "*"],
        &["scenarios", "*", "coverage", "invariants", "*"],
        &["scenarios", "*", "failing_seeds", "*"],
        &["scenarios", "*", "errors", "*"],
        &["scenarios", "*", "errors", "*", "error"],
        &["scenarios", "*", "kills", "*"],
    ] {
        keys_at(&value, path, &mut keys);
    }
    assert!(keys.len() > 50, "{keys:?}");
    let missing: Vec<&String> = keys
        .iter()
        .filter(|key| !readme.contains(&format!("`{key}`")))
        .collect();
    assert!(missing.is_empty(), "reports/README.md does not document {missing:?}");
}
#[test]
fn seeds_read_as_ranges() {
    assert_eq!(super::ranges([0, 1, 2, 3, 5, 7, 8]), "0..=3, 5, 7..=8");
    assert_eq!(super::ranges([9]), "9");
    assert_eq!(super::ranges([]), "");
    assert_eq!(
        super::ranges([u64::MAX - 1, u64::MAX]),
        format!("{}..={}", u64::MAX - 1, u64::MAX)
    );
}
