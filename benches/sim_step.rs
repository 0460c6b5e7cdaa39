//! The simulator's own speed: one whole seed of a shipped scenario per
//! iteration (setup, simulation, snapshot, checks), with the steps it took
//! as the throughput unit, so criterion reports simulated steps per second
//! (and its time per iteration is the inverse of seeds per second).
//! Fixed seeds; the machine is noisy, so compare runs side by side.

use crashsim::runner::{Options, default_work_dir, run_seed};
use crashsim::scenario;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn seeds(c: &mut Criterion) {
    let options = Options {
        work_dir: default_work_dir(),
        keep_failed: false,
        keep_traces: false,
        sut: Default::default(),
        check_determinism: false,
    };
    let mut group = c.benchmark_group("seed");
    group.sample_size(10);
    for name in ["smoke", "contention", "group_commit"] {
        let loaded = scenario::load(format!("scenarios/{name}.toml").as_ref()).expect("scenario loads");
        let steps = run_seed(&loaded, 1, &options).expect("seed runs").steps;
        group.throughput(Throughput::Elements(steps));
        group.bench_function(name, |b| b.iter(|| run_seed(&loaded, 1, &options).expect("seed runs")));
    }
    group.finish();
}

criterion_group!(benches, seeds);
criterion_main!(benches);
