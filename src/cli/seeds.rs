//! Which seeds `crashsim run` takes: `--seed`, or `--seeds` from
//! `--start-seed`, or open-ended under `--time-budget`; and this job's share
//! of them, from `--partition` or from the environment a CI or batch system
//! gives its parallel jobs.
//!
//! | system | job index (base) | number of jobs |
//! |--------|------------------|----------------|
//! | crashsim itself | `CRASHSIM_PARTITION=count:K/N` | (in the value) |
//! | GitLab CI `parallel:` | `CI_NODE_INDEX` (1) | `CI_NODE_TOTAL` |
//! | CircleCI `parallelism:` | `CIRCLE_NODE_INDEX` (0) | `CIRCLE_NODE_TOTAL` |
//! | Buildkite `parallelism:` | `BUILDKITE_PARALLEL_JOB` (0) | `BUILDKITE_PARALLEL_JOB_COUNT` |
//! | Semaphore `parallelism:` | `SEMAPHORE_JOB_INDEX` (1) | `SEMAPHORE_JOB_COUNT` |
//! | Kubernetes Indexed Job | `JOB_COMPLETION_INDEX` (0) | `CRASHSIM_PARTITIONS` |
//! | AWS Batch array job | `AWS_BATCH_JOB_ARRAY_INDEX` (0) | `CRASHSIM_PARTITIONS` |
//! | Slurm job array | `SLURM_ARRAY_TASK_ID` − `SLURM_ARRAY_TASK_MIN` (0) | `SLURM_ARRAY_TASK_COUNT` |
//!
//! The flag wins over the environment, and the rows are tried in this
//! order. Kubernetes and AWS Batch say which job this is but not how many
//! there are: `CRASHSIM_PARTITIONS` says. A total of 1 is the whole range.
//! docs/reports.md carries the same table.

use std::time::Duration;

use anyhow::{Context, bail};

use super::RunArgs;
use crate::runner::{Partition, Selection};

/// The seeds of a run of `--seeds` when neither it nor a time budget is given.
pub const DEFAULT_SEEDS: u64 = 100;

/// A partition, and where it came from (for the run's first lines).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chosen {
    pub selection: Selection,
    /// "--partition", or the environment variables it was read from.
    pub from: Option<String>,
}

/// The seeds `args` ask for, reading the partition from `env` (a lookup,
/// so tests need not touch the process's environment) when no flag gives it.
pub fn choose(args: &RunArgs, env: impl Fn(&str) -> Option<String>) -> anyhow::Result<Chosen> {
    if let Some(seed) = args.seed {
        if args.partition.is_some() || args.time_budget.is_some() {
            bail!("--seed runs one seed: it takes no --partition or --time-budget");
        }
        return Ok(Chosen {
            selection: Selection::one(seed),
            from: None,
        });
    }
    let count = match (args.seeds, args.time_budget) {
        (Some(0), _) => bail!("--seeds must be at least 1"),
        (Some(seeds), _) => Some(seeds),
        (None, Some(_)) => None,
        (None, None) => Some(DEFAULT_SEEDS),
    };
    if let Some(count) = count
        && args.start_seed.checked_add(count - 1).is_none()
    {
        bail!(
            "--start-seed {} + --seeds {count} runs past the largest seed",
            args.start_seed
        );
    }
    let (partition, from) = match &args.partition {
        Some(text) => (
            Some(Partition::parse(text).map_err(|error| anyhow::anyhow!("--partition {error}"))?),
            Some("--partition".to_string()),
        ),
        None => match from_env(&env)? {
            Some((partition, from)) => (Some(partition), Some(from)),
            None => (None, None),
        },
    };
    Ok(Chosen {
        selection: Selection {
            start: args.start_seed,
            count,
            partition: partition.filter(|partition| partition.total > 1),
        },
        from,
    })
}

/// The partition the environment gives, with the variables it came from.
pub fn from_env(env: &impl Fn(&str) -> Option<String>) -> anyhow::Result<Option<(Partition, String)>> {
    if let Some(text) = env("CRASHSIM_PARTITION") {
        let partition = Partition::parse(text.trim()).map_err(|error| anyhow::anyhow!("CRASHSIM_PARTITION {error}"))?;
        return Ok(Some((partition, "CRASHSIM_PARTITION".to_string())));
    }
    // (index variable, its base, total variable)
    const SYSTEMS: [(&str, u64, &str); 6] = [
        ("CI_NODE_INDEX", 1, "CI_NODE_TOTAL"),
        ("CIRCLE_NODE_INDEX", 0, "CIRCLE_NODE_TOTAL"),
        ("BUILDKITE_PARALLEL_JOB", 0, "BUILDKITE_PARALLEL_JOB_COUNT"),
        ("SEMAPHORE_JOB_INDEX", 1, "SEMAPHORE_JOB_COUNT"),
        ("JOB_COMPLETION_INDEX", 0, "CRASHSIM_PARTITIONS"),
        ("AWS_BATCH_JOB_ARRAY_INDEX", 0, "CRASHSIM_PARTITIONS"),
    ];
    let number = |name: &str| -> anyhow::Result<Option<u64>> {
        env(name)
            .map(|text| {
                text.trim()
                    .parse::<u64>()
                    .with_context(|| format!("the environment variable {name}={text:?} is not a whole number"))
            })
            .transpose()
    };
    for (index_var, base, total_var) in SYSTEMS {
        let Some(index) = number(index_var)? else {
            continue;
        };
        let Some(total) = number(total_var)? else {
            bail!(
                "{index_var} is set, so this is job {index} of a parallel run: set {total_var} to the number of jobs"
            );
        };
        return partition_of(index, base, total, &format!("{index_var}/{total_var}")).map(Some);
    }
    if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
        let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        let Some(total) = number("SLURM_ARRAY_TASK_COUNT")? else {
            bail!("SLURM_ARRAY_TASK_ID is set without SLURM_ARRAY_TASK_COUNT");
        };
        let Some(index) = id.checked_sub(min) else {
            bail!("SLURM_ARRAY_TASK_ID {id} is below SLURM_ARRAY_TASK_MIN {min}");
        };
        let from = "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_MIN/SLURM_ARRAY_TASK_COUNT";
        return partition_of(index, 0, total, from).map(Some);
    }
    Ok(None)
}

fn partition_of(index: u64, base: u64, total: u64, from: &str) -> anyhow::Result<(Partition, String)> {
    let job = index.checked_sub(base).map(|index| index + 1);
    match job {
        Some(job) if total >= 1 && job <= total => Ok((Partition { index: job, total }, from.to_string())),
        _ => bail!("{from}: job index {index} (counted from {base}) is not one of {total} jobs"),
    }
}

/// Reads a duration: `90s`, `10m`, `1h30m`, `250ms`, or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?}: a duration is a number with a unit, like 90s, 10m, 1h30m or 500ms");
    let text = text.trim();
    if let Ok(seconds) = text.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).map_err(|_| bad());
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit() && c != '.').ok_or_else(bad)?;
        let (number, tail) = rest.split_at(digits);
        let number: f64 = number.parse().map_err(|_| bad())?;
        let unit_len = tail.find(|c: char| c.is_ascii_digit()).unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let seconds = match unit {
            "ms" => number / 1000.0,
            "s" => number,
            "m" | "min" => number * 60.0,
            "h" => number * 3600.0,
            _ => return Err(bad()),
        };
        total += Duration::try_from_secs_f64(seconds).map_err(|_| bad())?;
        rest = tail;
    }
    if total.is_zero() {
        return Err(format!("{text:?}: a time budget must be longer than zero"));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    fn job(index: u64, total: u64) -> Partition {
        Partition { index, total }
    }

    #[test]
    fn each_ci_system_names_its_job_in_its_own_base() {
        let cases: [(&[(&str, &str)], Partition); 7] = [
            (&[("CRASHSIM_PARTITION", "count:2/3")], job(2, 3)),
            (&[("CI_NODE_INDEX", "1"), ("CI_NODE_TOTAL", "4")], job(1, 4)),
            (&[("CIRCLE_NODE_INDEX", "0"), ("CIRCLE_NODE_TOTAL", "2")], job(1, 2)),
            (
                &[("BUILDKITE_PARALLEL_JOB", "3"), ("BUILDKITE_PARALLEL_JOB_COUNT", "4")],
                job(4, 4),
            ),
            (&[("SEMAPHORE_JOB_INDEX", "2"), ("SEMAPHORE_JOB_COUNT", "2")], job(2, 2)),
            (
                &[("JOB_COMPLETION_INDEX", "5"), ("CRASHSIM_PARTITIONS", "8")],
                job(6, 8),
            ),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "11"),
                    ("SLURM_ARRAY_TASK_MIN", "10"),
                    ("SLURM_ARRAY_TASK_COUNT", "3"),
                ],
                job(2, 3),
            ),
        ];
        for (pairs, expected) in cases {
            let (partition, _) = from_env(&env_of(pairs)).unwrap().expect("a partition");
            assert_eq!(partition, expected, "{pairs:?}");
        }
        assert_eq!(from_env(&env_of(&[])).unwrap(), None);
    }

    #[test]
    fn a_bad_or_half_given_environment_is_an_error_naming_the_variable() {
        let half = from_env(&env_of(&[("JOB_COMPLETION_INDEX", "0")]))
            .unwrap_err()
            .to_string();
        assert!(half.contains("CRASHSIM_PARTITIONS"), "{half}");
        let past = from_env(&env_of(&[("CI_NODE_INDEX", "5"), ("CI_NODE_TOTAL", "4")])).unwrap_err();
        assert!(past.to_string().contains("CI_NODE_INDEX"), "{past}");
        let word = from_env(&env_of(&[("CIRCLE_NODE_INDEX", "x"), ("CIRCLE_NODE_TOTAL", "2")])).unwrap_err();
        assert!(word.to_string().contains("CIRCLE_NODE_INDEX"), "{word}");
    }

    #[test]
    fn the_flag_wins_over_the_environment_and_one_job_is_the_whole_range() {
        use clap::Parser;
        let parse = |line: &[&str]| match crate::cli::Cli::parse_from(line).command {
            crate::cli::Command::Run(args) => args,
            _ => unreachable!(),
        };
        let env = env_of(&[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "4")]);
        let flagged = choose(&parse(&["crashsim", "run", "smoke", "--partition", "count:3/4"]), &env).unwrap();
        assert_eq!(flagged.selection.partition, Some(job(3, 4)));
        let from_env = choose(&parse(&["crashsim", "run", "smoke"]), &env).unwrap();
        assert_eq!(from_env.selection.partition, Some(job(2, 4)));
        assert_eq!(from_env.selection.count, Some(DEFAULT_SEEDS));
        let alone = choose(&parse(&["crashsim", "run", "smoke", "--partition", "count:1/1"]), &env).unwrap();
        assert_eq!(alone.selection.partition, None);
        let budget = choose(&parse(&["crashsim", "run", "smoke", "--time-budget", "1m"]), &env).unwrap();
        assert_eq!(budget.selection.count, None, "a budget without --seeds is open-ended");
    }

    #[test]
    fn durations_read_in_the_usual_units() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2.5"), Ok(Duration::from_millis(2500)));
        for bad in ["", "10x", "m", "0s", "-1", "1h 30m"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }
}
