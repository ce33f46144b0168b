//! Criterion benchmarks of what a run costs before and after its tasks (bench/README.md,
//! "Start-up"): checking a scheduler plugin (`plugin_check`), parsing a graph through each path
//! (`graph_parse`, time per node), and a whole 1-task run as `tomii.run_graph` asks for it
//! (`run_graph_1_task`). Instruction counts of the same operations: `startup_probe` under callgrind.

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tomii_bench::{
    StartupParse, chain_json, plugin_dir, run_graph_1_task, run_graph_1_task_as_before, run_graph_config,
    synthetic_file,
};
use tomii_core::engine;
use tomii_core::graph;
use tomii_core::plugin::{KernelSet, SchedulerPlugin, scheduler_file_name};

/// The node counts `graph_parse` is measured at.
const PARSE_NODES: [u32; 2] = [100, 10_000];

fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    group
}

/// The fifo scheduler loaded past the process's record of checked files (`uncached`: every check,
/// as every load made before) and through it (`cached`: the look-up a later load makes).
fn plugin_check(c: &mut Criterion) {
    let path = plugin_dir().join(scheduler_file_name("fifo"));
    let load = |plugin: Result<SchedulerPlugin, _>| black_box(plugin.unwrap_or_else(|e| panic!("{e}")));
    let mut group = group(c, "plugin_check");
    group.bench_function("uncached", |b| b.iter(|| load(SchedulerPlugin::load_and_check(&path))));
    group.bench_function("cached", |b| b.iter(|| load(SchedulerPlugin::load(&path))));
    group.finish();
}

/// `chain(n)`'s text parsed and compiled through `parse_str` (`auto`), the typed path alone
/// (`fast`) and the JSON-value path alone (`fallback`); throughput in nodes, so `thrpt` is nodes/s.
fn graph_parse(c: &mut Criterion) {
    let mut group = group(c, "graph_parse");
    for nodes in PARSE_NODES {
        let text = chain_json(nodes);
        group.throughput(Throughput::Elements(u64::from(nodes)));
        for how in StartupParse::ALL {
            group.bench_function(BenchmarkId::new(how.name(), nodes), |b| b.iter(|| how.parse("chain.json", &text)));
        }
    }
    group.finish();
}

/// A 1-task graph run once on 1 worker with `tomii.run_graph`'s defaults: `whole` parses the graph,
/// loads the kernels and the scheduler and runs it, as the Python binding's `prepare_run` and
/// `PreparedRun.run` do the first time; `whole_as_before` the same through the JSON-value path
/// with every scheduler check (what `whole` cost before); `engine_run` is `engine::run` alone, the
/// graph and the plugins made before.
fn run_graph(c: &mut Criterion) {
    let dir = plugin_dir();
    let mut group = group(c, "run_graph_1_task");
    group.bench_function("whole", |b| b.iter(|| black_box(run_graph_1_task(&dir))));
    group.bench_function("whole_as_before", |b| b.iter(|| black_box(run_graph_1_task_as_before(&dir))));
    let graph = graph::parse_str("one.json", &chain_json(1)).unwrap_or_else(|e| panic!("{e}"));
    let kernels = KernelSet::load(&[dir.join(synthetic_file())]).unwrap_or_else(|e| panic!("{e}"));
    let scheduler = SchedulerPlugin::load(&dir.join(scheduler_file_name("fifo"))).unwrap_or_else(|e| panic!("{e}"));
    let config = run_graph_config();
    group.bench_function("engine_run", |b| {
        b.iter(|| black_box(engine::run(&graph, &kernels, &scheduler, &config).unwrap_or_else(|e| panic!("{e}"))))
    });
    group.finish();
}

// Without plots, which would cost about 5 s per benchmark on this VM.
criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = plugin_check, graph_parse, run_graph
}
criterion_main!(benches);
