//! Criterion benchmarks of the engine's own overhead: `noop` graphs run through the real plugin
//! loader with the fifo scheduler on `WORKERS` (2) workers. Each sample times whole `engine::run`
//! calls (setup, threads, report); the graph and plugins are loaded once, outside the timing.
//! After each benchmark one line gives ns/task or frames/s, from the whole call and from the
//! engine's own `report.wall_time_s`. Quick tables for issue notes: the `engine_figures` binary.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tomii_bench::{
    CHAIN_LEN, FAN_WIDTH, PIPELINE, PIPELINE_FRAMES, PIPELINE_SLOTS, Plugins, TRACE_COST_SLOTS, TRACE_COST_VARIANTS,
    chain, config, fan_out, median, pipeline, plugins,
};
use tomii_core::engine::RunConfig;
use tomii_core::graph::CompiledGraph;

/// A graph to run, and how to express its time per run.
struct Workload<'a> {
    plugins: &'a Plugins,
    graph: &'a CompiledGraph,
    unit: Unit,
}

#[derive(Clone, Copy)]
enum Unit {
    /// Nanoseconds per task, for a run of this many tasks.
    NsPerTask(u64),
    /// Frames per second, for a run of this many frames.
    FramesPerS(u64),
}

impl Unit {
    fn show(self, seconds: f64) -> String {
        match self {
            Unit::NsPerTask(tasks) => format!("{:.1} ns/task", seconds * 1e9 / tasks as f64),
            Unit::FramesPerS(frames) => format!("{:.0} frames/s", frames as f64 / seconds),
        }
    }
}

/// A group with the suite's modest budget: the whole suite stays under ~3 minutes on 2 cores.
fn group<'a>(c: &'a mut Criterion, name: &str, throughput: Throughput) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    group.throughput(throughput);
    group
}

/// Benchmarks `engine::run` of `work` with `config` as `id`, then prints under `label` the median
/// over every run criterion made (warm-up included) of the whole call and of the engine wall time.
fn bench_run(
    group: &mut BenchmarkGroup<'_, WallTime>,
    (id, label): (BenchmarkId, String),
    work: &Workload<'_>,
    config: &RunConfig,
) {
    let (calls, walls) = (RefCell::new(Vec::new()), RefCell::new(Vec::new()));
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let outcome = work.plugins.run(work.graph, config);
                let call = start.elapsed();
                total += call;
                calls.borrow_mut().push(call.as_secs_f64());
                walls.borrow_mut().push(outcome.report.wall_time_s);
            }
            total
        })
    });
    let (calls, walls) = (calls.into_inner(), walls.into_inner());
    if !calls.is_empty() {
        let (call, wall) = (work.unit.show(median(&calls)), work.unit.show(median(&walls)));
        println!("{label}: {call} whole run() call, {wall} engine wall time (medians of {} runs)\n", calls.len());
    }
}

fn named(group: &str, parameter: impl std::fmt::Display) -> (BenchmarkId, String) {
    (BenchmarkId::from_parameter(&parameter), format!("{group}/{parameter}"))
}

/// One frame of a 10,000-node chain: the per-task cost of the engine when no two tasks can
/// overlap, i.e. the full hand-off (complete, push, pop, start) on the critical path.
fn chain_10k(c: &mut Criterion) {
    let (plugins, graph) = (plugins(), chain(CHAIN_LEN));
    let work = Workload { plugins: &plugins, graph: &graph, unit: Unit::NsPerTask(graph.instance_count() as u64) };
    let mut group = group(c, "chain_10k", Throughput::Elements(u64::from(CHAIN_LEN)));
    bench_run(&mut group, named("chain_10k", "slots=1"), &work, &config(1, 1));
    group.finish();
}

/// One frame of a(1) → b(10,000) → c(1): the per-task cost when one completion makes 10,000 tasks
/// ready at once and 10,000 completions feed one join, with both workers busy.
fn fanout_10k(c: &mut Criterion) {
    let (plugins, graph) = (plugins(), fan_out(FAN_WIDTH));
    let work = Workload { plugins: &plugins, graph: &graph, unit: Unit::NsPerTask(graph.instance_count() as u64) };
    let mut group = group(c, "fanout_10k", Throughput::Elements(u64::from(FAN_WIDTH)));
    bench_run(&mut group, named("fanout_10k", "slots=1"), &work, &config(1, 1));
    group.finish();
}

/// 1,000 frames of a 4-stage, 16-wide pipeline at 1, 4 and 16 slots: frame throughput, and how
/// much keeping several frames in flight buys over running them one at a time.
fn pipeline_4x16(c: &mut Criterion) {
    let (plugins, graph) = (plugins(), pipeline(PIPELINE.0, PIPELINE.1));
    let work = Workload { plugins: &plugins, graph: &graph, unit: Unit::FramesPerS(PIPELINE_FRAMES) };
    let mut group = group(c, "pipeline_4x16", Throughput::Elements(PIPELINE_FRAMES));
    for slots in PIPELINE_SLOTS {
        let id = (BenchmarkId::new("slots", slots), format!("pipeline_4x16/slots/{slots}"));
        bench_run(&mut group, id, &work, &config(slots, PIPELINE_FRAMES));
    }
    group.finish();
}

/// The pipeline at 4 slots with the trace and task timing each off and on: the cost of recording
/// a trace and of reading the clock around every kernel, as ratios within one run of the suite.
fn trace_cost(c: &mut Criterion) {
    let (plugins, graph) = (plugins(), pipeline(PIPELINE.0, PIPELINE.1));
    let work = Workload { plugins: &plugins, graph: &graph, unit: Unit::FramesPerS(PIPELINE_FRAMES) };
    let mut group = group(c, "trace_cost", Throughput::Elements(PIPELINE_FRAMES));
    for (label, trace, task_timing) in TRACE_COST_VARIANTS {
        let config = RunConfig { trace, task_timing, ..config(TRACE_COST_SLOTS, PIPELINE_FRAMES) };
        bench_run(&mut group, named("trace_cost", label), &work, &config);
    }
    group.finish();
}

criterion_group!(benches, chain_10k, fanout_10k, pipeline_4x16, trace_cost);
criterion_main!(benches);
