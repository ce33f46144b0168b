//! Criterion benchmarks of the engine's own overhead: `noop` graphs run through the real plugin
//! loader. The workload benchmarks (chain, fan-out, pipeline, trace cost) use the fifo scheduler on
//! `WORKERS` (2) workers and time whole `engine::run` calls (setup, threads, report); the part
//! benchmarks (dispatch per scheduler, successor release, slot recycle) run on `PART_WORKERS` (1)
//! and time the engine's own wall time, so that per-run setup does not blur a per-unit figure.
//! Graphs and plugins are loaded once, outside the timing. After each benchmark one line gives ns
//! per unit or frames/s, from the whole call and from the engine's own `report.wall_time_s`.
//! Quick tables: the `engine_figures` binary.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use tomii_bench::{
    CHAIN_LEN, FAN_COUNTS, FAN_WIDTH, PIPELINE, PIPELINE_FRAMES, PIPELINE_SLOTS, Plugins, RECYCLE_FRAMES,
    RECYCLE_SLOTS, TRACE_COST_SLOTS, TRACE_COST_VARIANTS, chain, config, fan_frames, fan_out, gather, independent,
    median, part_config, pipeline, plugins, scatter, schedulers,
};
use tomii_core::engine::RunConfig;
use tomii_core::graph::CompiledGraph;
use tomii_core::plugin::SchedulerPlugin;

/// A graph, the plugins to run it with, how to express its time per run, and which time to time.
struct Workload<'a> {
    plugins: &'a Plugins,
    scheduler: &'a SchedulerPlugin,
    graph: &'a CompiledGraph,
    unit: Unit,
    clock: Clock,
}

impl<'a> Workload<'a> {
    /// `graph` with the fifo scheduler, criterion timing the whole call.
    fn fifo(plugins: &'a Plugins, graph: &'a CompiledGraph, unit: Unit) -> Self {
        Workload { plugins, scheduler: &plugins.scheduler, graph, unit, clock: Clock::WholeCall }
    }

    /// `graph` with `scheduler`, criterion timing the engine wall time (the part benchmarks).
    fn part(plugins: &'a Plugins, scheduler: &'a SchedulerPlugin, graph: &'a CompiledGraph, unit: Unit) -> Self {
        Workload { plugins, scheduler, graph, unit, clock: Clock::EngineWall }
    }
}

#[derive(Clone, Copy)]
enum Unit {
    /// Nanoseconds per unit (task, successor, frame…), for a run of this many units.
    NsPer(u64, &'static str),
    /// Frames per second, for a run of this many frames.
    FramesPerS(u64),
}

impl Unit {
    fn show(self, seconds: f64) -> String {
        match self {
            Unit::NsPer(count, what) => format!("{:.1} ns/{what}", seconds * 1e9 / count as f64),
            Unit::FramesPerS(frames) => format!("{:.0} frames/s", frames as f64 / seconds),
        }
    }
}

/// Which time of a run criterion is given.
#[derive(Clone, Copy)]
enum Clock {
    /// The whole `engine::run` call.
    WholeCall,
    /// The run's `report.wall_time_s`: first frame started to last worker joined.
    EngineWall,
}

/// A group with the suite's modest budget: the whole suite stays under ~3 minutes on 2 cores.
fn group<'a>(c: &'a mut Criterion, name: &str, throughput: Throughput) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    group.throughput(throughput);
    group
}

/// A group of part benchmarks, which are many: about 2.5 s each, so the 23 take about a minute
/// (`parts` runs them without plots, which would cost about 5 s each on this VM).
fn part_group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_millis(1500));
    group
}

/// Benchmarks `engine::run` of `work` with `config` as `id`, criterion timing `work.clock`, then
/// prints under `label` the median over every run criterion made (warm-up included) of the whole
/// call and of the engine wall time.
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
                let outcome = work.plugins.run_with(work.scheduler, work.graph, config);
                let call = start.elapsed();
                let wall = outcome.report.wall_time_s;
                total += match work.clock {
                    Clock::WholeCall => call,
                    Clock::EngineWall => Duration::from_secs_f64(wall),
                };
                calls.borrow_mut().push(call.as_secs_f64());
                walls.borrow_mut().push(wall);
            }
            total
        })
    });
    let (calls, walls) = (calls.into_inner(), walls.into_inner());
    if !calls.is_empty() {
        let (call, wall) = (work.unit.show(median(&calls)), work.unit.show(median(&walls)));
        let timed = match work.clock {
            Clock::WholeCall => "whole call",
            Clock::EngineWall => "engine wall time",
        };
        println!(
            "{label}: {call} whole run() call, {wall} engine wall time (medians of {} runs; criterion timed the {timed})\n",
            calls.len()
        );
    }
}

fn named(group: &str, parameter: impl std::fmt::Display) -> (BenchmarkId, String) {
    (BenchmarkId::from_parameter(&parameter), format!("{group}/{parameter}"))
}

/// One frame of a 10,000-node chain: the per-task cost of the engine when no two tasks can
/// overlap, i.e. the full hand-off (complete, push, pop, start) on the critical path.
fn chain_10k(c: &mut Criterion) {
    one_frame(c, "chain_10k", &chain(CHAIN_LEN), CHAIN_LEN);
}

/// One frame of a(1) → b(10,000) → c(1): the per-task cost when one completion makes 10,000 tasks
/// ready at once and 10,000 completions feed one join, with both workers busy.
fn fanout_10k(c: &mut Criterion) {
    one_frame(c, "fanout_10k", &fan_out(FAN_WIDTH), FAN_WIDTH);
}

/// The group `name`: one frame of `graph` on one slot with fifo, per task, `elements` of them.
fn one_frame(c: &mut Criterion, name: &str, graph: &CompiledGraph, elements: u32) {
    let plugins = plugins();
    let work = Workload::fifo(&plugins, graph, Unit::NsPer(graph.instance_count() as u64, "task"));
    let mut group = group(c, name, Throughput::Elements(u64::from(elements)));
    bench_run(&mut group, named(name, "slots=1"), &work, &config(1, 1));
    group.finish();
}

/// 1,000 frames of a 4-stage, 16-wide pipeline at 1, 4 and 16 slots: frame throughput, and how
/// much keeping several frames in flight buys over running them one at a time.
fn pipeline_4x16(c: &mut Criterion) {
    let (plugins, graph) = (plugins(), pipeline(PIPELINE.0, PIPELINE.1));
    let work = Workload::fifo(&plugins, &graph, Unit::FramesPerS(PIPELINE_FRAMES));
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
    let work = Workload::fifo(&plugins, &graph, Unit::FramesPerS(PIPELINE_FRAMES));
    let mut group = group(c, "trace_cost", Throughput::Elements(PIPELINE_FRAMES));
    for (label, trace, task_timing) in TRACE_COST_VARIANTS {
        let config = RunConfig { trace, task_timing, ..config(TRACE_COST_SLOTS, PIPELINE_FRAMES) };
        bench_run(&mut group, named("trace_cost", label), &work, &config);
    }
    group.finish();
}

/// A 10,000-node chain (1 frame, slots 1, 1 worker) with every shipped scheduler: ns per task of
/// the engine and the scheduler together, each task's whole life (released by its predecessor's
/// completion, pushed, popped, called, completed) with nothing overlapping. One worker, because
/// on two the hand-off between workers dominates and moved 2–3× between runs on the 2-core VM
/// (fifo on two workers is `chain_10k`).
fn dispatch_chain_10k(c: &mut Criterion) {
    let (plugins, schedulers, graph) = (plugins(), schedulers(), chain(CHAIN_LEN));
    let mut group = part_group(c, "dispatch_chain_10k");
    // A run's whole call is 3–4× its engine wall time, and multi-slot-batch's takes ~0.1 s: flat
    // sampling keeps 20 samples within the budget (linear sampling needs 210 runs at least).
    group.sampling_mode(SamplingMode::Flat).throughput(Throughput::Elements(u64::from(CHAIN_LEN)));
    for (name, scheduler) in &schedulers {
        let work = Workload::part(&plugins, scheduler, &graph, Unit::NsPer(graph.instance_count() as u64, "task"));
        bench_run(&mut group, named("dispatch_chain_10k", name), &work, &part_config(1, 1));
    }
    // fifo again with inline continuation: every task but the first runs as its predecessor's
    // continuation, never pushed or popped; the difference to `fifo` is the hand-off it saves.
    let work = Workload::part(&plugins, &plugins.scheduler, &graph, Unit::NsPer(graph.instance_count() as u64, "task"));
    let inline = RunConfig { inline_continuation: true, ..part_config(1, 1) };
    bench_run(&mut group, named("dispatch_chain_10k", "fifo+inline"), &work, &inline);
    group.finish();
}

/// Successor resolution on 1 worker, n = 10 … 10,000, 10,000 units per run (10,000 ÷ n frames,
/// slots 1), ns per unit: `fan_out/n` (`scatter`: one completion releases n successors),
/// `fan_in/n` (`gather`: n completions each count one predecessor of a join) and `independent/n`
/// (n roots, no edge: the baseline both are compared with).
fn successors(c: &mut Criterion) {
    let plugins = plugins();
    let mut group = part_group(c, "successors");
    for n in FAN_COUNTS {
        let frames = fan_frames(n);
        let units = u64::from(n) * frames;
        group.throughput(Throughput::Elements(units));
        let cases = [
            ("fan_out", scatter(n), "successor"),
            ("fan_in", gather(n), "predecessor"),
            ("independent", independent(n), "task"),
        ];
        for (kind, graph, what) in &cases {
            let work = Workload::part(&plugins, &plugins.scheduler, graph, Unit::NsPer(units, what));
            let id = (BenchmarkId::new(*kind, n), format!("successors/{kind}/{n}"));
            bench_run(&mut group, id, &work, &part_config(1, frames));
        }
    }
    group.finish();
}

/// 10,000 frames of one `noop` task (`chain(1)`) on 1 worker at 1, 4 and 16 slots: ns per frame of
/// starting a frame in a slot, its one task, finishing the frame and recycling the slot.
fn slot_recycle(c: &mut Criterion) {
    let (plugins, graph) = (plugins(), chain(1));
    let work = Workload::part(&plugins, &plugins.scheduler, &graph, Unit::NsPer(RECYCLE_FRAMES, "frame"));
    let mut group = part_group(c, "slot_recycle");
    group.throughput(Throughput::Elements(RECYCLE_FRAMES));
    for slots in RECYCLE_SLOTS {
        let id = (BenchmarkId::new("slots", slots), format!("slot_recycle/slots/{slots}"));
        bench_run(&mut group, id, &work, &part_config(slots, RECYCLE_FRAMES));
    }
    group.finish();
}

criterion_group!(workloads, chain_10k, fanout_10k, pipeline_4x16, trace_cost);
criterion_group! {
    name = parts;
    config = Criterion::default().without_plots();
    targets = dispatch_chain_10k, successors, slot_recycle
}
criterion_main!(workloads, parts);
