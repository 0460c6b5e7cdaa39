//! The simulator's own speed: one whole seed of a shipped scenario per
//! iteration (setup, simulation, snapshot, checks), with the steps it took
//! as the throughput unit, so criterion reports simulated steps per second
//! (and its time per iteration is the inverse of seeds per second).
//! Fixed seeds; the machine is noisy, so compare runs side by side:
//! `smoke/disk` (the files' bytes in the real files, `--files-on-disk`)
//! runs next to `smoke` (in memory, the default) in the same run, and their
//! ratio is the figure to read, not either time alone.
//! It runs with the binary's allocator (mimalloc).

use crashsim::runner::{Options, default_work_dir, run_seed};
use crashsim::scenario;
use crashsim::sim::Files;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// The allocator the `crashsim` binary runs with, so the figures are the CLI's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn seeds(c: &mut Criterion) {
    let options = |files| Options {
        work_dir: default_work_dir(),
        keep_failed: false,
        keep_traces: false,
        sut: Default::default(),
        check_determinism: false,
        files,
    };
    let mut group = c.benchmark_group("seed");
    group.sample_size(10);
    let runs = [
        ("smoke", "smoke", Files::Memory),
        ("smoke", "smoke/disk", Files::Disk),
        ("contention", "contention", Files::Memory),
        ("group_commit", "group_commit", Files::Memory),
    ];
    for (scenario, id, files) in runs {
        let loaded = scenario::load(format!("scenarios/{scenario}.toml").as_ref()).expect("scenario loads");
        let options = options(files);
        let steps = run_seed(&loaded, 1, &options).expect("seed runs").steps;
        group.throughput(Throughput::Elements(steps));
        group.bench_function(id, |b| b.iter(|| run_seed(&loaded, 1, &options).expect("seed runs")));
    }
    group.finish();
}

criterion_group!(benches, seeds);
criterion_main!(benches);
