//! The bench's baseline file (`--save-baseline FILE`, read by `--baseline
//! FILE`): each configuration's ratio to the limit, its noise and the
//! per-round ratios they came from, with the context they were measured in.
//!
//! Ratios, not rates: appends/s move with the machine (another runner, a
//! neighbour on a shared disk), while appends/s ÷ the same disk's raw sync
//! rate, measured in the same interleaved rounds, cancels the disk and most
//! of its noise. The per-round ratios are kept so a baseline can be audited
//! (and its median and noise recomputed) without rerunning it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::figures::{ConfigRecord, Context};
use super::plan::LIMIT;
use crate::report::atomic;

/// The version of the baseline's layout this crashsim writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// What `--save-baseline` writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub schema_version: u32,
    #[serde(flatten)]
    pub context: Context,
    /// The configuration every ratio is to (`raw_overwrite_fsync_4k`).
    pub limit: String,
    /// The limit's own rate (median appends/s): never compared, only a
    /// warning when it differs a lot, since a configuration's fixed CPU cost
    /// per append weighs more next to a faster disk.
    #[serde(default)]
    pub limit_appends_per_s: f64,
    pub configs: Vec<BaselineConfig>,
}

/// One configuration's ratio to the limit, as `bench.json` names its fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineConfig {
    pub name: String,
    /// The median of `ratios_to_limit`.
    pub ratio_to_limit: f64,
    /// Median absolute deviation ÷ median of `ratios_to_limit`.
    pub ratio_noise: f64,
    /// appends/s ÷ the limit's appends/s, round by round.
    pub ratios_to_limit: Vec<f64>,
}

/// A baseline that cannot be used; the message names the file.
#[derive(Debug, thiserror::Error)]
#[error("--baseline {path}: {message}")]
pub struct LoadError {
    pub path: String,
    pub message: String,
}

impl Baseline {
    /// The ratios a bench run measured (a record's context and
    /// configurations), as a baseline.
    pub fn from_figures(context: &Context, configs: &[ConfigRecord]) -> Baseline {
        Baseline {
            schema_version: SCHEMA_VERSION,
            context: context.clone(),
            limit: LIMIT.to_string(),
            limit_appends_per_s: configs
                .iter()
                .find(|config| config.name == LIMIT)
                .map_or(0.0, |limit| limit.appends_per_s),
            configs: configs
                .iter()
                .map(|config| BaselineConfig {
                    name: config.name.clone(),
                    ratio_to_limit: config.ratio_to_limit,
                    ratio_noise: config.ratio_noise,
                    ratios_to_limit: config.ratios_to_limit.clone(),
                })
                .collect(),
        }
    }

    pub fn config(&self, name: &str) -> Option<&BaselineConfig> {
        self.configs.iter().find(|config| config.name == name)
    }

    /// Pretty JSON, one trailing newline.
    pub fn to_json(&self) -> String {
        let mut json = serde_json::to_string_pretty(self).expect("baselines serialise");
        json.push('\n');
        json
    }

    /// Writes it to `path` atomically.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        atomic::write(path, self.to_json().as_bytes())
    }

    /// Reads and checks the baseline at `path`.
    pub fn load(path: &Path) -> Result<Baseline, LoadError> {
        let error = |message: String| LoadError {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        Baseline::parse(&text).map_err(error)
    }

    /// Checks and parses a baseline's text: the schema version first, so a
    /// newer layout is refused as such rather than as a missing field.
    pub fn parse(text: &str) -> Result<Baseline, String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        match value.get("schema_version").and_then(serde_json::Value::as_u64) {
            Some(version) if version == u64::from(SCHEMA_VERSION) => {}
            Some(version) => {
                return Err(format!(
                    "schema_version {version}: this crashsim reads baselines of schema_version {SCHEMA_VERSION}; \
                     write a new one with --save-baseline"
                ));
            }
            None => {
                return Err(
                    "no schema_version: not a baseline written by `crashsim bench --save-baseline`".to_string(),
                );
            }
        }
        let baseline: Baseline = serde_json::from_value(value).map_err(|e| format!("not a bench baseline: {e}"))?;
        baseline.check()?;
        Ok(baseline)
    }

    /// What serde cannot check: the limit is this crashsim's, and every
    /// ratio and noise is a number a comparison can use.
    fn check(&self) -> Result<(), String> {
        if self.limit != LIMIT {
            return Err(format!(
                "its ratios are to `{}`, this crashsim's are to `{LIMIT}`: write a new baseline",
                self.limit
            ));
        }
        for config in &self.configs {
            if !(config.ratio_to_limit.is_finite() && config.ratio_to_limit > 0.0) {
                return Err(format!(
                    "{}: ratio_to_limit {} is not a positive number",
                    config.name, config.ratio_to_limit
                ));
            }
            if !(config.ratio_noise.is_finite() && config.ratio_noise >= 0.0) {
                return Err(format!(
                    "{}: ratio_noise {} is not a number ≥ 0",
                    config.name, config.ratio_noise
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bench::record::tests::record;

    /// A baseline of recorded numbers: `bench --only append_full`, 20
    /// rounds of 250 ms on the development machine (ext4 on a virtio disk,
    /// 2 cores, a quiet moment: limit 15.7k syncs/s), ratios to 3 digits.
    /// Medians 0.775 and 0.066; noise 4.6% and 7.6%.
    pub(crate) fn recorded() -> Baseline {
        let record = record();
        let mut baseline = Baseline::from_figures(&record.context, &record.configs);
        baseline.configs = vec![
            config(LIMIT, &[1.0; 20]),
            config(
                "append_full",
                &[
                    0.709, 0.738, 0.719, 0.919, 0.788, 0.778, 0.782, 0.773, 0.777, 0.684, 0.813, 0.72, 0.725, 0.766,
                    0.805, 0.81, 0.767, 0.825, 0.744, 0.874,
                ],
            ),
            config(
                "conn_per_append_full",
                &[
                    0.063, 0.061, 0.053, 0.079, 0.071, 0.067, 0.075, 0.068, 0.066, 0.063, 0.085, 0.066, 0.065, 0.065,
                    0.076, 0.073, 0.06, 0.073, 0.063, 0.058,
                ],
            ),
        ];
        baseline
    }

    /// A configuration's record from its per-round ratios, as a run makes it.
    pub(crate) fn config(name: &str, ratios: &[f64]) -> BaselineConfig {
        BaselineConfig {
            name: name.to_string(),
            ratio_to_limit: crate::bench::measure::Spread::of(ratios).median,
            ratio_noise: crate::bench::measure::relative_mad(ratios),
            ratios_to_limit: ratios.to_vec(),
        }
    }

    #[test]
    fn a_baseline_round_trips_through_save_and_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("baselines/base.json");
        let baseline = recorded();
        baseline.save(&path).unwrap();
        assert_eq!(Baseline::load(&path).unwrap(), baseline);
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for key in [
            "schema_version",
            "git_commit",
            "sqlite_version",
            "filesystem",
            "rounds",
            "sample_ms",
            "quick",
        ] {
            assert!(json.get(key).is_some(), "{key} missing: {json}");
        }
        let append = &json["configs"][1];
        assert_eq!(append["name"], "append_full");
        assert!(
            (append["ratio_to_limit"].as_f64().unwrap() - 0.775).abs() < 1e-12,
            "{append}"
        );
        assert_eq!(append["ratios_to_limit"].as_array().unwrap().len(), 20);
        assert!(
            (append["ratio_noise"].as_f64().unwrap() - 0.036 / 0.775).abs() < 1e-9,
            "{append}"
        );
    }

    #[test]
    fn a_run_becomes_a_baseline_of_its_ratios() {
        let record = record();
        let baseline = Baseline::from_figures(&record.context, &record.configs);
        assert_eq!(baseline.configs.len(), record.configs.len());
        let append = baseline.config("append_full").unwrap();
        let measured = record.config("append_full").unwrap();
        assert_eq!(append.ratio_to_limit, measured.ratio_to_limit);
        assert_eq!(append.ratios_to_limit, measured.ratios_to_limit);
        assert_eq!(baseline.config(LIMIT).unwrap().ratio_to_limit, 1.0);
    }

    #[test]
    fn unknown_versions_and_unusable_files_are_refused_by_name() {
        let version = |v: &str| recorded().to_json().replacen("\"schema_version\": 1", v, 1);
        let error = Baseline::parse(&version("\"schema_version\": 2")).unwrap_err();
        assert!(
            error.contains("schema_version 2") && error.contains("--save-baseline"),
            "{error}"
        );
        let error = Baseline::parse(&version("\"no_version\": 1")).unwrap_err();
        assert!(error.contains("no schema_version"), "{error}");
        assert!(Baseline::parse("{").unwrap_err().contains("not JSON"));
        let error = Baseline::parse(r#"{"schema_version": 1, "configs": []}"#).unwrap_err();
        assert!(error.contains("not a bench baseline"), "{error}");
        let mut bad = recorded();
        bad.configs[1].ratio_to_limit = 0.0;
        let error = Baseline::parse(&bad.to_json()).unwrap_err();
        assert!(error.contains("append_full") && error.contains("positive"), "{error}");
        let error = Baseline::load(Path::new("/nonexistent/base.json")).unwrap_err();
        assert!(
            error.to_string().starts_with("--baseline /nonexistent/base.json: "),
            "{error}"
        );
    }
}
