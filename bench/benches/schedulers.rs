//! Criterion benchmarks of what one push plus one pop costs through the scheduler vtable, for every
//! shipped scheduler (and any other built), loaded from target/release by the real loader and
//! driven directly through `SchedulerInstance`, as the engine's workers drive it. Each instance
//! holds `PREFILL` (16) tasks before timing, and push-one/pop-one keeps that depth. Throughput is
//! in pairs, so `thrpt` is push+pop pairs/s (per thread). Quick tables: `scheduler_figures`.

use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tomii_bench::{PushPop, schedulers};

/// A group with the suite's modest budget: the 16 benchmarks take about 1.5 minutes on 2 cores.
fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(1));
    group
}

/// One thread (worker 0) pushes one task and pops one (a buffer of 1): ns per push+pop pair.
fn push_pop_uncontended(c: &mut Criterion) {
    let schedulers = schedulers();
    let mut group = group(c, "push_pop_uncontended");
    for (name, plugin) in &schedulers {
        let mut drive = PushPop::new(name, plugin);
        group.bench_function(BenchmarkId::from_parameter(name), |b| b.iter_custom(|pairs| drive.uncontended(pairs)));
    }
    group.finish();
}

/// Two threads (workers 0 and 1) each push one task and pop one on the same instance at once:
/// ns per pair per thread, from the first thread's start to the last one's end.
fn push_pop_2_threads(c: &mut Criterion) {
    let schedulers = schedulers();
    let mut group = group(c, "push_pop_2_threads");
    for (name, plugin) in &schedulers {
        let (mut drive, mut empty) = (PushPop::new(name, plugin), 0);
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_custom(|pairs| {
                let run = drive.two_threads(pairs);
                empty += run.empty;
                run.elapsed
            })
        });
        if empty > 0 {
            println!("push_pop_2_threads/{name}: {empty} pops found nothing (each left one more task queued)\n");
        }
    }
    group.finish();
}

criterion_group!(benches, push_pop_uncontended, push_pop_2_threads);
criterion_main!(benches);
