//! The append paths of `crashsim bench` at small sizes, under criterion:
//! one append (or one transaction) per iteration, on the build's own disk
//! (`CARGO_TARGET_TMPDIR`, never tmpfs), each database's WAL kept in steady
//! state as `crashsim bench` keeps it. No randomness; the disk is noisy, so
//! compare configurations measured in the same run, as ratios.
//!
//! `crashsim bench` is the reference measurement (interleaved rounds,
//! counted fsyncs, latency percentiles, the limit); this is for quick
//! before/after comparisons of one path with criterion's statistics.

use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use crashsim::bench::sqlite::{KIND, PAYLOAD, command, database, open, settings, steady_state};
use crashsim::model::Command;
use crashsim::store::group_commit::threaded::{GroupCommitter, MAX_GROUP};
use crashsim::store::{Store, Synchronous, connection};
use crashsim::vfs::CountingVfs;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

#[expect(clippy::disallowed_methods, reason = "a benchmark measures wall-clock time")]
fn now() -> Instant {
    Instant::now()
}

/// A configuration's own directory and database, its WAL in steady state.
fn fixture(root: &Path, name: &str, vfs: &CountingVfs) -> (PathBuf, rusqlite::Connection) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("fixture directory");
    let keeper = steady_state(&dir, vfs).expect("steady-state WAL");
    (database(&dir, vfs).expect("database"), keeper)
}

fn single_connection(c: &mut Criterion) {
    let vfs = CountingVfs::register("criterion-append-single").expect("register the VFS");
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let mut group = c.benchmark_group("append");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));

    group.throughput(Throughput::Elements(1));
    let configs: [(&str, Synchronous, usize); 5] = [
        ("append_full", Synchronous::Full, 0),
        ("append_normal", Synchronous::Normal, 0),
        ("append_off", Synchronous::Off, 0),
        ("append_outbox1_full", Synchronous::Full, 1),
        ("append_outbox3_full", Synchronous::Full, 3),
    ];
    for (name, synchronous, commands) in configs {
        let (path, _keeper) = fixture(root.path(), name, &vfs);
        let mut store = open(&path, synchronous, &vfs).expect("open");
        let commands: Vec<Command> = (0..commands).map(command).collect();
        let mut head = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                head = store
                    .append_with_commands("bench", head, KIND, PAYLOAD, &commands)
                    .expect("append")
                    .0;
            })
        });
    }

    for appends in [10u64, 100] {
        let name = format!("batch{appends}_full");
        let (path, _keeper) = fixture(root.path(), &name, &vfs);
        let mut store = open(&path, Synchronous::Full, &vfs).expect("open");
        let mut head = 0;
        group.throughput(Throughput::Elements(appends));
        group.bench_function(name, |b| {
            b.iter(|| {
                store.begin().expect("begin");
                for _ in 0..appends {
                    head = store.insert_event("bench", head, KIND, PAYLOAD).expect("insert");
                }
                store.commit().expect("commit");
            })
        });
    }

    // No keeper: creating and deleting the WAL is this pattern's cost.
    let dir = root.path().join("conn_per_append_full");
    std::fs::create_dir_all(&dir).expect("fixture directory");
    let path = database(&dir, &vfs).expect("database");
    let mut head = 0;
    group.throughput(Throughput::Elements(1));
    group.bench_function("conn_per_append_full", |b| {
        b.iter(|| {
            let mut store = open(&path, Synchronous::Full, &vfs).expect("open");
            head = store.append("bench", head, KIND, PAYLOAD).expect("append");
        })
    });
    group.finish();
}

/// `writers` threads each append `per_writer` events: through their own
/// connections, or through one group committer. Returns the time from a
/// common start to the last append.
fn concurrent(path: &Path, vfs: &CountingVfs, writers: usize, per_writer: u64, grouped: bool) -> Duration {
    let committer = grouped.then(|| {
        let conn = connection::open_via(path, &settings(Synchronous::Full), Some(vfs.name())).expect("open");
        GroupCommitter::start(conn, MAX_GROUP)
    });
    let mut stores: Vec<Box<dyn Store + Send>> = Vec::new();
    for _ in 0..writers {
        let local = open(path, Synchronous::Full, vfs).expect("open");
        stores.push(match &committer {
            Some(committer) => Box::new(committer.client(local)),
            None => Box::new(local),
        });
    }
    let barrier = Barrier::new(writers + 1);
    let elapsed = std::thread::scope(|scope| {
        for (index, mut store) in stores.into_iter().enumerate() {
            let barrier = &barrier;
            scope.spawn(move || {
                let workflow_id = format!("writer-{index}");
                let mut head = store.load(&workflow_id).expect("load").len() as u64;
                barrier.wait();
                for _ in 0..per_writer {
                    head = store.append(&workflow_id, head, KIND, PAYLOAD).expect("append");
                }
            });
        }
        barrier.wait();
        now()
    })
    .elapsed();
    if let Some(committer) = committer {
        committer.stop();
    }
    elapsed
}

fn many_threads(c: &mut Criterion) {
    let vfs = CountingVfs::register("criterion-append-threads").expect("register the VFS");
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let mut group = c.benchmark_group("concurrent");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(1));
    for (label, grouped, writers) in [
        ("writers", false, 4),
        ("group_commit", true, 4),
        ("group_commit", true, 16),
    ] {
        let name = format!("{label}{writers}_full");
        let (path, _keeper) = fixture(root.path(), &name, &vfs);
        group.bench_function(BenchmarkId::from_parameter(&name), |b| {
            b.iter_custom(|iters| {
                // At least one append per writer; scaled back to `iters` appends.
                let per_writer = iters.div_ceil(writers as u64).max(1);
                let elapsed = concurrent(&path, &vfs, writers, per_writer, grouped);
                elapsed.mul_f64(iters as f64 / (per_writer * writers as u64) as f64)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, single_connection, many_threads);
criterion_main!(benches);
