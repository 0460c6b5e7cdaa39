//! Many seeds on a few threads, parallel across seeds only.
//!
//! `in_parallel` stops at the first error (the library's and the tools'
//! way). `sweep` is the gate's: every seed ends as a verdict or an error,
//! each is handed on in seed order as soon as it and every seed before it
//! have ended (so a log streams, and an interrupted run's output holds
//! every seed it finished), an error that would meet every later seed stops
//! the seeds not yet started, and so do `super::abandon`, a spent time
//! budget and, with `fail_fast`, a failing seed (both let the running seeds
//! finish, so what ended is a prefix).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use super::{Options, RunError, SeedResult, Selection, run_seed};
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
    in_parallel(
        seeds,
        jobs,
        options.starts_processes(),
        |seed| run_seed(loaded, seed, options),
        on_result,
    )
}

/// Runs `run` for each of `seeds` on `jobs` threads, parallel across seeds
/// only; results in seed order, `on_result` called as each finishes. The
/// first error stops the seeds not yet started and is returned. `pin`:
/// the seeds start processes, so each job keeps to a CPU (`pin.rs`).
pub fn in_parallel<E: Send>(
    seeds: &[u64],
    jobs: usize,
    pin: bool,
    run: impl Fn(u64) -> Result<SeedResult, E> + Sync,
    mut on_result: impl FnMut(&SeedResult),
) -> Result<Vec<SeedResult>, E> {
    let mut results: Vec<Option<SeedResult>> = vec![None; seeds.len()];
    let mut first_error = None;
    on_threads(
        &|index| seeds.get(index).copied(),
        jobs.clamp(1, seeds.len().max(1)),
        pin,
        &|| true,
        &run,
        |result| result.is_err(),
        |index, _, result| match result {
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
    /// Seeds abandoned at a signal, and seeds of a bounded selection never
    /// started after an error or a signal stopped the run (not those a
    /// spent budget left: they were never asked for).
    pub not_run: Vec<u64>,
    /// `keep_starting` said no: the seeds that ended are a prefix of the
    /// selection, and the rest were not started.
    pub budget_spent: bool,
    /// As `budget_spent`, because a seed failed and `fail_fast` was asked.
    pub stopped_at_failure: bool,
}

/// Runs the seeds of `selection` in order on `jobs` threads until it has
/// none left, an error that stops the run (`RunError::stops_run`),
/// `super::abandon`, a seed fails with `fail_fast`, or `keep_starting` says
/// no (asked before each seed starts: a time budget; in these two cases the
/// seeds running then finish). `on_ended` is
/// called on the calling thread in seed order, for each seed as soon as it
/// and every earlier seed have ended; seeds abandoned or never started are
/// skipped.
pub fn sweep(
    loaded: &Loaded,
    selection: &Selection,
    jobs: usize,
    options: &Options,
    fail_fast: bool,
    keep_starting: impl Fn() -> bool + Sync,
    mut on_ended: impl FnMut(u64, &Ended),
) -> Sweep {
    let threads = match selection.len() {
        Some(len) => jobs.clamp(1, usize::try_from(len).unwrap_or(usize::MAX).max(1)),
        None => jobs.max(1),
    };
    // Seeds that ended out of order wait here for the ones before them;
    // `None`: abandoned.
    let mut waiting: BTreeMap<usize, (u64, Option<Ended>)> = BTreeMap::new();
    let mut sweep = Sweep::default();
    // Seeds before this index have been handed on (or were abandoned).
    let mut emitted = 0;
    let mut started = 0;
    // Set on the seed's own thread as it ends, so that no seed starts after it.
    let failed = AtomicBool::new(false);
    let spent = on_threads(
        &|index| selection.nth(index as u64),
        threads,
        options.starts_processes(),
        &|| !failed.load(Ordering::SeqCst) && keep_starting(),
        &|seed| {
            let ended = run_seed(loaded, seed, options);
            if fail_fast && ended.as_ref().is_ok_and(|result| !result.ok) {
                failed.store(true, Ordering::SeqCst);
            }
            ended
        },
        |ended| ended.as_ref().is_err_and(RunError::stops_run) || super::abandoning(),
        |index, seed, ended| {
            started = started.max(index + 1);
            let abandoned = matches!(&ended, Err(error) if error.kind() == super::ErrorKind::Interrupted);
            waiting.insert(index, (seed, (!abandoned).then_some(ended)));
            while let Some((seed, ended)) = waiting.remove(&emitted) {
                hand_on(&mut sweep, seed, ended, &mut on_ended);
                emitted += 1;
            }
        },
    );
    // The seeds after a gap (one never started) end in order too.
    for (_, (seed, ended)) in std::mem::take(&mut waiting) {
        hand_on(&mut sweep, seed, ended, &mut on_ended);
    }
    sweep.ended.sort_by_key(|(seed, _)| *seed);
    sweep.stopped_at_failure = spent && failed.load(Ordering::SeqCst);
    sweep.budget_spent = spent && !sweep.stopped_at_failure;
    // Seeds of a bounded selection that a stop left unstarted.
    if !spent && selection.len().is_some() {
        sweep
            .not_run
            .extend((started as u64..).map_while(|index| selection.nth(index)));
    }
    sweep.not_run.sort_unstable();
    sweep
}

fn hand_on(sweep: &mut Sweep, seed: u64, ended: Option<Ended>, on_ended: &mut impl FnMut(u64, &Ended)) {
    match ended {
        Some(ended) => {
            on_ended(seed, &ended);
            sweep.ended.push((seed, ended));
        }
        None => sweep.not_run.push(seed),
    }
}

/// The thread pool both share: `run` on each seed `seed_at` gives, in
/// order, until it gives none, `stop` says so (after a seed ends) or
/// `keep_starting` says no (before a seed starts); `take` on the calling
/// thread with each seed's index, seed and outcome, in completion order.
/// With `pin`, each thread keeps to a CPU of its own where that crowds no
/// one (`pin.rs`). True if `keep_starting` stopped it.
fn on_threads<T: Send>(
    seed_at: &(impl Fn(usize) -> Option<u64> + Sync),
    threads: usize,
    pin: bool,
    keep_starting: &(impl Fn() -> bool + Sync),
    run: &(impl Fn(u64) -> T + Sync),
    stop: impl Fn(&T) -> bool + Sync,
    mut take: impl FnMut(usize, u64, T),
) -> bool {
    let next = AtomicUsize::new(0);
    let stopped = AtomicBool::new(false);
    let spent = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel::<(usize, u64, T)>();
    let cpus = pin.then(|| super::pin::cpus_for(threads)).flatten();
    std::thread::scope(|scope| {
        for job in 0..threads {
            let sender = sender.clone();
            let (next, stopped, spent, stop) = (&next, &stopped, &spent, &stop);
            let cpu = cpus.as_ref().map(|cpus| cpus[job]);
            scope.spawn(move || {
                if let Some(cpu) = cpu {
                    super::pin::pin_this_thread(cpu);
                }
                loop {
                    if stopped.load(Ordering::Relaxed) || spent.load(Ordering::Relaxed) || super::abandoning() {
                        break;
                    }
                    if !keep_starting() {
                        spent.store(true, Ordering::Relaxed);
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(seed) = seed_at(index) else {
                        break;
                    };
                    let outcome = run(seed);
                    if stop(&outcome) {
                        stopped.store(true, Ordering::Relaxed);
                    }
                    if sender.send((index, seed, outcome)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        for (index, seed, outcome) in receiver {
            take(index, seed, outcome);
        }
    });
    spent.load(Ordering::Relaxed)
}
