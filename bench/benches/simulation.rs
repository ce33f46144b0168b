//! Criterion benchmarks of the simulator (`tomii_core::sim`): simulated tasks per second of wall
//! time, on one core, for a 10,000-task graph (a layer of 5,000 `spin` tasks, each read by one of
//! a second layer of 5,000, then a join) over 10 frames at 4 slots, on 2, 64 and 1,024 virtual
//! workers, with fifo and c-fifo through their dylibs. `thrpt` is simulated tasks per second.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tomii_bench::{plugin_dir, schedulers};
use tomii_core::engine::RunConfig;
use tomii_core::graph;
use tomii_core::sim::{SimConfig, simulate};

const WIDTH: u32 = 5_000;
const FRAMES: u64 = 10;

fn graph_text() -> String {
    format!(
        r#"{{"name": "sim_10k", "nodes": [
            {{"name": "a", "function": "spin", "factor": {WIDTH}, "args": [10]}},
            {{"name": "b", "function": "spin", "factor": {WIDTH}, "args": [10, {{"type": "$res", "predecessor": {{"name": "a"}}}}]}},
            {{"name": "join", "function": "spin", "args": [1, {{"type": "$dep", "predecessor": {{"name": "b", "index": "all"}}}}]}}
        ]}}"#
    )
}

fn simulation(c: &mut Criterion) {
    let graph = graph::parse_str("sim_10k.json", &graph_text()).expect("the benchmark graph");
    let tasks = u64::from(2 * WIDTH + 1) * FRAMES;
    let chosen: Vec<_> = schedulers().into_iter().filter(|(name, _)| name == "fifo" || name == "c-fifo").collect();
    assert_eq!(chosen.len(), 2, "fifo and c-fifo are built in {}", plugin_dir().display());
    let mut group = c.benchmark_group("simulation");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Elements(tasks));
    for (name, scheduler) in &chosen {
        for workers in [2, 64, 1024] {
            let run = RunConfig { workers, slots: 4, frames: FRAMES, ..RunConfig::default() };
            group.bench_function(BenchmarkId::new(name.as_str(), workers), |b| {
                b.iter(|| simulate(&graph, scheduler, &run, &SimConfig::default()).expect("a simulation").report.tasks)
            });
        }
    }
    group.finish();
}

criterion_group!(benches, simulation);
criterion_main!(benches);
