//! Many seeds on a few threads, parallel across seeds only.
//!
//! `in_parallel` stops at the first error (the library's and the tools'
//! way). `sweep` is the gate's: every seed ends as a verdict or an error,
//! each is handed on in seed order as soon as it and every seed before it
//! have ended (so a log streams, and an interrupted run's output holds
//! every seed it finished), an error that would meet every later seed stops
//! the seeds not yet started, and so does `super::abandon`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use super::{Options, RunError, SeedResult, run_seed};
use crate::scenario::Loaded;

/// Runs `seeds` on `jobs` threads. `on_result` is called on the calling
/// thread as each seed finishes (in completion order, for progress); the
/// returned results are in seed order. The first setup error stops the run.
pub fn run_seeds(
    loaded: &Loaded,
    seeds: &[u64],
    jobs: usize,
    options: &Options,
    on_result: impl FnMut(&SeedResult),
) -> Result<Vec<SeedResult>, RunError> {
    in_parallel(seeds, jobs, |seed| run_seed(loaded, seed, options), on_result)
}

/// Runs `run` for each of `seeds` on `jobs` threads, parallel across seeds
/// only; results in seed order, `on_result` called as each finishes. The
/// first error stops the seeds not yet started and is returned.
pub fn in_parallel<E: Send>(
    seeds: &[u64],
    jobs: usize,
    run: impl Fn(u64) -> Result<SeedResult, E> + Sync,
    mut on_result: impl FnMut(&SeedResult),
) -> Result<Vec<SeedResult>, E> {
    let mut results: Vec<Option<SeedResult>> = vec![None; seeds.len()];
    let mut first_error = None;
    on_threads(
        seeds,
        jobs,
        &run,
        |result| result.is_err(),
        |index, result| match result {
            Ok(result) => {
                on_result(&result);
                results[index] = Some(result);
            }
            Err(error) => {
                first_error.get_or_insert(error);
            }
        },
    );
    match first_error {
        Some(error) => Err(error),
        None => Ok(results
            .into_iter()
            .map(|result| result.expect("every seed ran"))
            .collect()),
    }
}

/// One seed's end: a verdict, or an error that is not one.
pub type Ended = Result<SeedResult, RunError>;

/// What a sweep over seeds gave.
#[derive(Debug, Default)]
pub struct Sweep {
    /// Every seed that ended (a verdict or an error), in seed order.
    pub ended: Vec<(u64, Ended)>,
    /// Seeds abandoned at a signal, and seeds never started.
    pub not_run: Vec<u64>,
}

/// Runs every seed of `seeds` on `jobs` threads until an error that stops
/// the run (`RunError::stops_run`) or `super::abandon`. `on_ended` is
/// called on the calling thread in seed order, for each seed as soon as it
/// and every earlier seed have ended; seeds abandoned or never started are
/// skipped.
pub fn sweep(
    loaded: &Loaded,
    seeds: &[u64],
    jobs: usize,
    options: &Options,
    mut on_ended: impl FnMut(u64, &Ended),
) -> Sweep {
    let mut slots: Vec<Option<Ended>> = (0..seeds.len()).map(|_| None).collect();
    let mut done = vec![false; seeds.len()];
    // Seeds before this one have been handed on (or were abandoned).
    let mut emitted = 0;
    on_threads(
        seeds,
        jobs,
        &|seed| run_seed(loaded, seed, options),
        |ended| ended.as_ref().is_err_and(RunError::stops_run) || super::abandoning(),
        |index, ended| {
            done[index] = true;
            let abandoned = matches!(&ended, Err(error) if error.kind() == super::ErrorKind::Interrupted);
            if !abandoned {
                slots[index] = Some(ended);
            }
            while emitted < seeds.len() && done[emitted] {
                if let Some(ended) = &slots[emitted] {
                    on_ended(seeds[emitted], ended);
                }
                emitted += 1;
            }
        },
    );
    // The seeds after a gap (one never started) end in order too.
    for index in emitted..seeds.len() {
        if let Some(ended) = &slots[index] {
            on_ended(seeds[index], ended);
        }
    }
    let mut sweep = Sweep::default();
    for (seed, slot) in seeds.iter().zip(slots) {
        match slot {
            Some(ended) => sweep.ended.push((*seed, ended)),
            None => sweep.not_run.push(*seed),
        }
    }
    sweep
}

/// The thread pool both share: `run` on every seed not yet started until
/// `stop` says so (after a seed ends), `take` on the calling thread with
/// each seed's index and outcome, in completion order.
fn on_threads<T: Send>(
    seeds: &[u64],
    jobs: usize,
    run: &(impl Fn(u64) -> T + Sync),
    stop: impl Fn(&T) -> bool + Sync,
    mut take: impl FnMut(usize, T),
) {
    let next = AtomicUsize::new(0);
    let stopped = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel::<(usize, T)>();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, seeds.len().max(1)) {
            let sender = sender.clone();
            let (next, stopped, stop) = (&next, &stopped, &stop);
            scope.spawn(move || {
                loop {
                    if stopped.load(Ordering::Relaxed) || super::abandoning() {
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= seeds.len() {
                        break;
                    }
                    let outcome = run(seeds[index]);
                    if stop(&outcome) {
                        stopped.store(true, Ordering::Relaxed);
                    }
                    if sender.send((index, outcome)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        for (index, outcome) in receiver {
            take(index, outcome);
        }
    });
}
