//! Wall-clock measurement: one sample of a configuration, and the summary of
//! its samples over all rounds.
//!
//! The bench reports speed; it never steers a simulation, so it is the one
//! place outside the CLI that reads the wall clock (`now`).

use std::time::{Duration, Instant};

/// The wall clock, for measuring only.
#[expect(
    clippy::disallowed_methods,
    reason = "the bench reports wall-clock speed; it never steers a simulation"
)]
pub fn now() -> Instant {
    Instant::now()
}

/// How long each sample runs and how much it warms up first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The timed part of one sample.
    pub sample: Duration,
    /// Untimed operations before it (per thread), so files exist and caches are warm.
    pub warmup_ops: u32,
}

/// One run of one configuration in one round.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Events appended (or raw writes).
    pub appends: u64,
    /// Transactions SQLite committed (groups, for group commit; raw writes).
    pub commits: u64,
    /// Syncs the disk was asked for: counted by the VFS, or by the raw loop.
    pub fsyncs: u64,
    pub elapsed: Duration,
    /// One per acknowledged transaction, from its caller's point of view.
    pub latencies_ns: Vec<u64>,
    /// Transactions that failed (a busy timeout, say); not counted above.
    pub errors: u64,
}

/// Runs `op` (one transaction, returning the appends it carried) until
/// `budget` is spent, timing each call. Fills everything but `fsyncs`.
pub fn timed_loop<E>(budget: Duration, mut op: impl FnMut() -> Result<u64, E>) -> Result<Sample, E> {
    let mut sample = Sample::default();
    let start = now();
    loop {
        let before = now();
        sample.appends += op()?;
        let after = now();
        sample.commits += 1;
        sample.latencies_ns.push(nanos(after - before));
        if after - start >= budget {
            sample.elapsed = after - start;
            return Ok(sample);
        }
    }
}

pub fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// A median with the range it came from.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// Of a non-empty list; zeros for an empty one.
    pub fn of(values: &[f64]) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let middle = sorted.len() / 2;
        let median = if sorted.len() % 2 == 1 {
            sorted[middle]
        } else {
            (sorted[middle - 1] + sorted[middle]) / 2.0
        };
        Spread {
            median,
            min: sorted[0],
            max: sorted[sorted.len() - 1],
        }
    }
}

/// The median absolute deviation of `values` divided by their median: a
/// relative spread (0.05 = half the values lie within ±5% of the median,
/// for a symmetric spread). 0 for no values or a median of 0.
///
/// Why this and not a standard deviation or half the interquartile range:
/// a round that a neighbour's burst of I/O slowed tenfold moves it no more
/// than any other outlier (half the rounds would have to be hit before it
/// breaks down, a quarter for the IQR), and it needs no quartile
/// convention, which with 5–20 rounds would move the result.
pub fn relative_mad(values: &[f64]) -> f64 {
    let median = Spread::of(values).median;
    if median == 0.0 || !median.is_finite() {
        return 0.0;
    }
    let deviations: Vec<f64> = values.iter().map(|value| (value - median).abs()).collect();
    Spread::of(&deviations).median / median.abs()
}

/// One configuration over all its rounds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub rounds: usize,
    /// Appends per second of each round, in round order: paired with the
    /// limit's of the same round, they give the per-round ratios.
    pub appends_per_s_rounds: Vec<f64>,
    /// Per round, then median / min / max.
    pub appends_per_s: Spread,
    pub commits_per_s: Spread,
    /// Totals over all rounds.
    pub appends: u64,
    pub commits: u64,
    pub fsyncs: u64,
    pub errors: u64,
    /// Commit latency over every transaction of every round, in µs.
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl Summary {
    pub fn of(samples: &[Sample]) -> Summary {
        let rate = |count: u64, sample: &Sample| count as f64 / sample.elapsed.as_secs_f64().max(1e-9);
        let appends_per_s: Vec<f64> = samples.iter().map(|s| rate(s.appends, s)).collect();
        let commits_per_s: Vec<f64> = samples.iter().map(|s| rate(s.commits, s)).collect();
        let mut latencies: Vec<u64> = samples.iter().flat_map(|s| s.latencies_ns.iter().copied()).collect();
        latencies.sort_unstable();
        let us = |ns: u64| ns as f64 / 1000.0;
        Summary {
            rounds: samples.len(),
            appends_per_s: Spread::of(&appends_per_s),
            appends_per_s_rounds: appends_per_s,
            commits_per_s: Spread::of(&commits_per_s),
            appends: samples.iter().map(|s| s.appends).sum(),
            commits: samples.iter().map(|s| s.commits).sum(),
            fsyncs: samples.iter().map(|s| s.fsyncs).sum(),
            errors: samples.iter().map(|s| s.errors).sum(),
            p50_us: us(percentile(&latencies, 0.50)),
            p99_us: us(percentile(&latencies, 0.99)),
            max_us: us(latencies.last().copied().unwrap_or(0)),
        }
    }

    /// Syncs per committed transaction, over all rounds.
    pub fn fsyncs_per_commit(&self) -> f64 {
        self.fsyncs as f64 / self.commits.max(1) as f64
    }

    /// Appends per committed transaction (the mean group size for group commit).
    pub fn appends_per_commit(&self) -> f64 {
        self.appends as f64 / self.commits.max(1) as f64
    }
}

/// The nearest-rank percentile of sorted values (0 for none).
pub fn percentile(sorted: &[u64], fraction: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (fraction * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_and_percentiles() {
        assert_eq!(
            Spread::of(&[3.0, 1.0, 2.0]),
            Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0
            }
        );
        assert_eq!(Spread::of(&[4.0, 1.0, 2.0, 3.0]).median, 2.5);
        assert_eq!(Spread::of(&[]), Spread::default());
        // Deviations from 2.0: 1, 0, 0, 8 → median 0.5.
        assert_eq!(relative_mad(&[1.0, 2.0, 2.0, 10.0]), 0.25);
        assert_eq!(relative_mad(&[0.8, 0.8, 0.8]), 0.0);
        assert_eq!(relative_mad(&[]), 0.0);
        let values: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&values, 0.50), 50);
        assert_eq!(percentile(&values, 0.99), 99);
        assert_eq!(percentile(&values, 1.0), 100);
        assert_eq!(percentile(&[7], 0.99), 7);
        assert_eq!(percentile(&[], 0.5), 0);
    }

    #[test]
    fn a_summary_pools_latencies_and_takes_medians_of_rates() {
        let sample = |appends: u64, commits: u64, millis: u64, latency_us: u64| Sample {
            appends,
            commits,
            fsyncs: commits,
            elapsed: Duration::from_millis(millis),
            latencies_ns: vec![latency_us * 1000; commits as usize],
            errors: 0,
        };
        let summary = Summary::of(&[
            sample(100, 10, 1000, 5),
            sample(300, 30, 1000, 1),
            sample(200, 20, 1000, 9),
        ]);
        assert_eq!(summary.rounds, 3);
        assert_eq!(summary.appends_per_s_rounds, [100.0, 300.0, 200.0], "in round order");
        assert_eq!(summary.appends_per_s.median, 200.0);
        assert_eq!(summary.commits_per_s.min, 10.0);
        assert_eq!(summary.appends_per_commit(), 10.0);
        assert_eq!(summary.fsyncs_per_commit(), 1.0);
        assert_eq!(summary.max_us, 9.0);
        assert_eq!(summary.p50_us, 1.0, "30 of 60 latencies are 1 µs");
        assert_eq!(summary.p99_us, 9.0);
    }

    #[test]
    fn a_timed_loop_runs_at_least_once_and_counts_what_it_timed() {
        let mut calls = 0;
        let sample = timed_loop::<()>(Duration::ZERO, || {
            calls += 1;
            Ok(3)
        })
        .unwrap();
        assert_eq!((calls, sample.commits, sample.appends), (1, 1, 3));
        assert_eq!(sample.latencies_ns.len(), 1);
    }
}
