//! The concurrent configurations: real OS threads, each appending to its own
//! workflow with its own `expected_seq`, one event per transaction (FULL).
//!
//! - `writers`: each thread has its own connection and its own transactions;
//!   SQLite serialises them with its write lock and busy handler.
//! - `group_commit`: each thread appends through a `GroupCommitClient`; one
//!   `GroupCommitter` thread commits whatever is waiting as one group, with
//!   its default tuning (it checkpoints between groups, so its WAL, too, is
//!   rewritten in place: see `sqlite`).
//!
//! Every thread warms up, then all start together at a barrier; the sample
//! runs from that start until the last thread finished its last transaction
//! after the budget, so a transaction stalled in a busy wait still counts.

use std::path::Path;
use std::sync::Barrier;
use std::time::Instant;

use super::measure::{Budget, Sample, nanos, now};
use super::sqlite::{KIND, PAYLOAD, database, open};
use crate::store::group_commit::threaded::{GroupCommitter, Tuning};
use crate::store::{Result, Store, StoreError, Synchronous, connection, events};
use crate::vfs::CountingVfs;

/// What one thread did in the timed part.
#[derive(Default)]
struct Lane {
    appends: u64,
    latencies_ns: Vec<u64>,
    errors: u64,
}

/// Appends `workflow_id`'s next events (its head is `head`) through `store`
/// until `budget` is spent after `go`. A busy timeout is counted and
/// retried, not fatal.
fn lane(
    store: &mut dyn Store,
    workflow_id: &str,
    head: Result<u64>,
    budget: Budget,
    ready: &Barrier,
    go: &Barrier,
) -> Result<Lane> {
    let setup = (|| -> Result<u64> {
        let mut head = head?;
        for _ in 0..budget.warmup_ops {
            head = append_one(store, workflow_id, head)?;
        }
        Ok(head)
    })();
    // Every thread reaches both barriers, even one whose setup failed.
    ready.wait();
    go.wait();
    let mut head = setup?;
    let mut lane = Lane::default();
    let start = now();
    loop {
        let before = now();
        match append_one(store, workflow_id, head) {
            Ok(seq) => {
                head = seq;
                lane.appends += 1;
                lane.latencies_ns.push(nanos(now() - before));
            }
            Err(StoreError::Busy) => lane.errors += 1,
            Err(error) => return Err(error),
        }
        if now() - start >= budget.sample {
            return Ok(lane);
        }
    }
}

fn append_one(store: &mut dyn Store, workflow_id: &str, head: u64) -> Result<u64> {
    store.append(workflow_id, head, KIND, PAYLOAD)
}

/// The timed window, from the main thread's side: counters read while every
/// thread waits between `ready` and `go`, and again after all have finished.
struct Window {
    start: Instant,
    fsyncs_before: u64,
}

/// `threads` threads, a connection each.
pub fn writers(dir: &Path, vfs: &CountingVfs, budget: Budget, threads: usize) -> Result<Sample> {
    let path = database(dir, vfs)?;
    let (ready, go) = (Barrier::new(threads + 1), Barrier::new(threads + 1));
    let (window, lanes) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|index| {
                let (path, ready, go) = (&path, &ready, &go);
                scope.spawn(move || {
                    let store = open(path, Synchronous::Full, vfs);
                    let workflow_id = format!("bench-writer-{index}");
                    match store {
                        Ok(mut store) => {
                            let head = events::last_seq(store.conn(), &workflow_id);
                            lane(&mut store, &workflow_id, head, budget, ready, go)
                        }
                        Err(error) => {
                            ready.wait();
                            go.wait();
                            Err(error)
                        }
                    }
                })
            })
            .collect();
        let window = start_window(vfs, &ready, &go);
        (window, join(handles))
    });
    let mut sample = finish(window, vfs, lanes?);
    sample.commits = sample.appends;
    Ok(sample)
}

/// `writers` threads through one threaded group committer.
pub fn group_commit(dir: &Path, vfs: &CountingVfs, budget: Budget, writers: usize) -> Result<Sample> {
    let path = database(dir, vfs)?;
    let settings = super::sqlite::settings(Synchronous::Full);
    let committer = GroupCommitter::start_with(
        connection::open_via(&path, &settings, Some(vfs.name()))?,
        Tuning::default(),
    );
    let clients = (0..writers)
        .map(|index| {
            let local = open(&path, Synchronous::Full, vfs)?;
            let workflow_id = format!("bench-group-{index}");
            let head = events::last_seq(local.conn(), &workflow_id)?;
            Ok((committer.client(local), workflow_id, head))
        })
        .collect::<Result<Vec<_>>>()?;
    let (ready, go) = (Barrier::new(writers + 1), Barrier::new(writers + 1));
    let (window, groups_before, lanes) = std::thread::scope(|scope| {
        let handles: Vec<_> = clients
            .into_iter()
            .map(|(mut client, workflow_id, head)| {
                let (ready, go) = (&ready, &go);
                scope.spawn(move || lane(&mut client, &workflow_id, Ok(head), budget, ready, go))
            })
            .collect();
        ready.wait();
        let groups_before = committer.stats().groups;
        let window = Window {
            start: now(),
            fsyncs_before: vfs.counts().fsyncs(),
        };
        go.wait();
        (window, groups_before, join(handles))
    });
    let mut sample = finish(window, vfs, lanes?);
    // Every client is gone (each thread dropped its own): stop waits for none.
    let stats = committer.stop();
    sample.commits = stats.groups - groups_before;
    Ok(sample)
}

fn start_window(vfs: &CountingVfs, ready: &Barrier, go: &Barrier) -> Window {
    ready.wait();
    let window = Window {
        start: now(),
        fsyncs_before: vfs.counts().fsyncs(),
    };
    go.wait();
    window
}

fn join(handles: Vec<std::thread::ScopedJoinHandle<'_, Result<Lane>>>) -> Result<Vec<Lane>> {
    handles
        .into_iter()
        .map(|handle| handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        .collect()
}

fn finish(window: Window, vfs: &CountingVfs, lanes: Vec<Lane>) -> Sample {
    let elapsed = now() - window.start;
    Sample {
        appends: lanes.iter().map(|lane| lane.appends).sum(),
        commits: 0,
        fsyncs: vfs.counts().fsyncs() - window.fsyncs_before,
        elapsed,
        latencies_ns: lanes
            .iter()
            .flat_map(|lane| lane.latencies_ns.iter().copied())
            .collect(),
        errors: lanes.iter().map(|lane| lane.errors).sum(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const BUDGET: Budget = Budget {
        sample: Duration::from_millis(20),
        warmup_ops: 2,
    };

    fn head(path: &Path, workflow_id: &str) -> u64 {
        let conn = connection::open(path, &crate::store::SqliteSettings::default()).unwrap();
        events::last_seq(&conn, workflow_id).unwrap()
    }

    fn vfs(label: &str) -> CountingVfs {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        CountingVfs::register(&format!(
            "bench-threads-{label}-{}",
            NEXT.fetch_add(1, Ordering::Relaxed)
        ))
        .unwrap()
    }

    #[test]
    fn writers_each_extend_their_own_workflow() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = vfs("writers");
        let sample = writers(dir.path(), &vfs, BUDGET, 3).unwrap();
        assert_eq!(sample.commits, sample.appends);
        assert_eq!(sample.latencies_ns.len() as u64, sample.appends);
        let path = dir.path().join("store.db");
        let total: u64 = (0..3).map(|index| head(&path, &format!("bench-writer-{index}"))).sum();
        assert_eq!(total, sample.appends + 3 * 2, "timed and warm-up appends");
        assert!(sample.fsyncs >= sample.commits, "{sample:?}");
    }

    #[test]
    fn group_commit_counts_groups_as_commits_and_every_append_lands() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = vfs("group");
        let sample = group_commit(dir.path(), &vfs, BUDGET, 4).unwrap();
        assert!(sample.commits >= 1 && sample.commits <= sample.appends, "{sample:?}");
        assert_eq!(sample.errors, 0);
        let path = dir.path().join("store.db");
        let total: u64 = (0..4).map(|index| head(&path, &format!("bench-group-{index}"))).sum();
        assert_eq!(total, sample.appends + 4 * 2);
        assert!(
            sample.fsyncs >= sample.commits,
            "one sync per group at least: {sample:?}"
        );
    }
}
