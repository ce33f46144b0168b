//! Simulation (`sim/`, `tomii simulate`): every shipped scheduler, C included, driven through its
//! dylib on virtual workers; the makespan and latency of graphs whose answer is known by hand;
//! the trace's invariants; one seed, one run; cost models from files and traces; the command line.
//! The contract checks, a broken scheduler's violations included, run in both modes in
//! tests/conformance.rs (`<scheduler>::simulated::*`, `broken::*`).

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::cli::{assert_error, finish, tomii};
use common::{graph_path, plugin};
use tomii_core::engine::{Progress, ProgressFn, RunConfig, RunOutcome};
use tomii_core::graph::{self, CompiledGraph};
use tomii_core::plugin::SchedulerPlugin;
use tomii_core::sim::{self, CostSpec, Dist, SimConfig};

const SHIPPED: [&str; 8] =
    ["fifo", "c-fifo", "random", "priority", "critical-path", "locality", "work-stealing", "multi-slot-batch"];

fn scheduler(name: &str) -> SchedulerPlugin {
    SchedulerPlugin::load(&plugin(&format!("libtomii_sched_{}.so", name.replace('-', "_"))))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn parse(text: &str) -> CompiledGraph {
    graph::parse_str("sim.json", text).unwrap_or_else(|e| panic!("{e}"))
}

/// A node of `factor` instances lasting `us` µs each (a `spin` node), reading `args`.
fn spin(name: &str, factor: u32, us: u64, args: &str) -> String {
    format!(r#"{{"name": "{name}", "function": "spin", "factor": {factor}, "args": [{us}{args}]}}"#)
}

/// A simulation's settings: the run's options and the simulation's own.
type Setup = (RunConfig, SimConfig);

fn simulate(graph: &CompiledGraph, name: &str, (run, own): &Setup) -> RunOutcome {
    sim::simulate(graph, &scheduler(name), run, own).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The run's options of a simulation whose own settings are the defaults.
fn plain(run: RunConfig) -> Setup {
    (run, SimConfig::default())
}

/// Whether `figure` is `want` to the latency histogram's 3 significant digits.
fn near(figure: f64, want: f64) -> bool {
    (figure - want).abs() <= want * 1e-3
}

fn traced(workers: u32, slots: u32, frames: u64) -> Setup {
    plain(RunConfig { workers, slots, frames, trace: true, ..RunConfig::default() })
}

#[test]
fn known_makespans_and_latencies() {
    // A chain of three 10 µs tasks: 30 µs a frame, whatever the workers.
    let chain = parse(&format!(
        r#"{{"nodes": [{}, {}, {}]}}"#,
        spin("a", 1, 10, ""),
        spin("b", 1, 10, r#", {"type": "$dep", "predecessor": {"name": "a"}}"#),
        spin("c", 1, 10, r#", {"type": "$dep", "predecessor": {"name": "b"}}"#)
    ));
    let outcome = simulate(&chain, "fifo", &traced(2, 1, 10));
    assert!(near(outcome.report.latency_us.p50, 30.0), "{}", outcome.report.latency_us.p50);
    assert_eq!(outcome.report.wall_time_s, 300e-6);
    assert_eq!(outcome.report.source, "simulated");
    // Eight 10 µs tasks then a join of 5 µs on 2 workers: 4 × 10 + 5 = 45 µs a frame; with 2
    // slots the next frame's tasks fill the join's idle worker.
    let fan = parse(&format!(
        r#"{{"nodes": [{}, {}]}}"#,
        spin("work", 8, 10, ""),
        spin("join", 1, 5, r#", {"type": "$dep", "predecessor": {"name": "work", "index": "all"}}"#)
    ));
    let one = simulate(&fan, "fifo", &traced(2, 1, 4));
    assert!(near(one.report.latency_us.p50, 45.0), "{}", one.report.latency_us.p50);
    assert_eq!(one.report.wall_time_s, 4.0 * 45e-6);
    assert_eq!(one.report.tasks, 36);
    let busy: Vec<f64> = one.report.per_worker.iter().map(|w| w.busy_s.expect("timed")).collect();
    assert!((busy.iter().sum::<f64>() - 4.0 * 85e-6).abs() < 1e-12, "{busy:?}");
    let two = simulate(&fan, "fifo", &traced(2, 2, 4));
    assert!(two.report.wall_time_s < one.report.wall_time_s, "two slots overlap frames");
}

#[test]
fn every_shipped_scheduler_runs_every_task_once_in_order() {
    let graph = graph::load_file(&graph_path("diamond.json")).expect("diamond");
    let spec = CostSpec { default: Some(Dist::Uniform { lo_ns: 1_000, hi_ns: 5_000 }), ..CostSpec::default() };
    for name in SHIPPED {
        let config = (
            RunConfig { workers: 3, slots: 2, frames: 20, trace: true, ..RunConfig::default() },
            SimConfig { cost: spec.clone(), ..SimConfig::default() },
        );
        let outcome = simulate(&graph, name, &config);
        assert_eq!(outcome.report.frames, 20, "{name}");
        assert_eq!(outcome.report.tasks, 60, "{name}");
        assert_eq!(outcome.report.scheduler.name, name);
        let run = RunConfig { workers: 3, slots: 2, frames: 20, ..RunConfig::default() };
        common::trace::check(&graph, &run, &outcome.trace);
        common::report_schema::check(name, &outcome.report);
    }
}

#[test]
fn one_seed_one_run() {
    let graph = parse(&format!(r#"{{"nodes": [{}]}}"#, spin("n", 16, 0, "")));
    let spec = CostSpec { default: Some(Dist::Lognormal { median_ns: 10_000.0, sigma: 0.8 }), ..CostSpec::default() };
    let config = |seed| {
        let run = RunConfig { workers: 4, slots: 2, frames: 30, trace: true, ..RunConfig::default() };
        (run, SimConfig { seed, cost: spec.clone(), ..SimConfig::default() })
    };
    let first = simulate(&graph, "work-stealing", &config(7));
    let again = simulate(&graph, "work-stealing", &config(7));
    let other = simulate(&graph, "work-stealing", &config(8));
    assert_eq!(first.trace, again.trace);
    assert_ne!(first.trace, other.trace);
    assert_eq!(first.report.latency_us.p99, again.report.latency_us.p99);
}

#[test]
fn cost_models_from_files_and_traces() {
    let graph = parse(&format!(
        r#"{{"nodes": [{}, {}]}}"#,
        r#"{"name": "a", "function": "checksum", "factor": 2}"#,
        r#"{"name": "b", "function": "checksum", "args": [{"type": "$res", "predecessor": {"name": "a", "index": "all"}}]}"#
    ));
    let refused = sim::simulate(&graph, &scheduler("fifo"), &RunConfig::default(), &SimConfig::default())
        .expect_err("no cost for checksum");
    assert!(refused.error.to_string().contains(r#"node "a": its kernel "checksum" has no cost"#), "{}", refused.error);
    let trace = "node,instance,frame,slot,worker,ready_ns,start_ns,end_ns\na,0,0,0,0,0,0,4000\na,1,0,0,0,0,0,4000\nb,0,0,0,0,0,4000,5000\n";
    let spec = CostSpec::from_trace(trace).expect("a trace");
    let run = RunConfig { workers: 2, frames: 3, ..RunConfig::default() };
    let outcome = simulate(&graph, "fifo", &(run, SimConfig { cost: spec, ..SimConfig::default() }));
    assert!(near(outcome.report.latency_us.p50, 5.0), "{}", outcome.report.latency_us.p50);
    let unknown = CostSpec { nodes: [("zz".to_owned(), Dist::Fixed { ns: 1 })].into(), ..CostSpec::default() };
    let own = SimConfig { cost: unknown, ..SimConfig::default() };
    let error = sim::simulate(&graph, &scheduler("fifo"), &RunConfig::default(), &own).expect_err("an unknown node");
    assert!(error.error.to_string().contains(r#"names node "zz""#), "{}", error.error);
}

#[test]
fn many_virtual_workers() {
    let graph = parse(&format!(r#"{{"nodes": [{}]}}"#, spin("wide", 1024, 100, "")));
    let outcome = simulate(&graph, "fifo", &plain(RunConfig { workers: 256, frames: 4, ..RunConfig::default() }));
    // 1,024 tasks of 100 µs on 256 workers: four rounds, 400 µs a frame.
    assert!(near(outcome.report.latency_us.p50, 400.0), "{}", outcome.report.latency_us.p50);
    assert_eq!(outcome.report.per_worker.len(), 256);
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("a file");
    path
}

#[test]
fn tomii_simulate_writes_the_report_and_the_trace() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let graph = write(dir.path(), "g.json", &format!(r#"{{"nodes": [{}]}}"#, spin("n", 4, 20, "")));
    let (report, trace) = (dir.path().join("r.json"), dir.path().join("t.json"));
    let mut command = tomii();
    command.arg("simulate").arg(&graph).args(["--workers", "64", "--frames", "5", "--scheduler-plugin"]);
    command.arg(plugin("libtomii_sched_c_fifo.so")).arg("--report").arg(&report);
    command.arg("--trace").arg(&trace).args(["--trace-format", "chrome"]);
    let done = finish(command);
    assert!(done.status.success(), "{}", done.stderr);
    assert!(done.stdout.starts_with("simulated: c-fifo on g: 5 frames (20 tasks)"), "{}", done.stdout);
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).expect("r")).expect("JSON");
    assert_eq!(report["source"], "simulated");
    assert_eq!(report["simulation"]["virtual_workers"], 64);
    assert!(near(report["latency_us"]["p50"].as_f64().expect("p50"), 20.0), "{}", report["latency_us"]);
    let chrome: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).expect("t")).expect("JSON");
    let tasks = chrome["traceEvents"].as_array().expect("events").iter().filter(|e| e["cat"] == "task").count();
    assert_eq!(tasks, 20);
    // Errors are one line naming what to change.
    let network = graph_path("../../../examples/graphs/packets.json");
    let mut refused = tomii();
    refused.arg("simulate").arg(network);
    assert_error(&finish(refused), &["has a network source"]);
    let model = write(dir.path(), "m.json", r#"{"nodes": {"n": {"fixed": {"ns": "ten"}}}}"#);
    let mut bad = tomii();
    bad.arg("simulate").arg(&graph).arg("--cost-model").arg(&model);
    assert_error(&finish(bad), &["m.json: not a cost model"]);
}

#[test]
fn paced_arrivals_start_frames_on_time_or_when_a_slot_frees() {
    let graph = parse(&format!(r#"{{"nodes": [{}]}}"#, spin("n", 1, 10, "")));
    let paced = |interval_ns| {
        let run = RunConfig { frames: 5, ..RunConfig::default() };
        (run, SimConfig { arrival_interval_ns: Some(interval_ns), ..SimConfig::default() })
    };
    // A frame every 100 µs, each 10 µs long: the last ends at 4 × 100 + 10.
    let sparse = simulate(&graph, "fifo", &paced(100_000));
    assert_eq!(sparse.report.wall_time_s, 410e-6);
    assert!(near(sparse.report.latency_us.p50, 10.0), "{}", sparse.report.latency_us.p50);
    // A frame every 5 µs into one slot: each waits for the one before, back to back.
    let dense = simulate(&graph, "fifo", &paced(5_000));
    assert_eq!(dense.report.wall_time_s, 50e-6);
    assert_eq!(dense.report.frames, 5);
}

/// A stop request ends a simulation as it ends a real run: no frame starts after it, those in
/// flight complete, and the report says interrupted with every frame done; progress is heard on
/// the way and once at the end.
#[test]
fn a_stop_request_ends_the_simulation_with_what_it_did() {
    let graph = parse(&format!(
        r#"{{"nodes": [{}, {}]}}"#,
        spin("a", 4, 10, ""),
        spin("b", 1, 5, r#", {"type": "$res", "predecessor": {"name": "a"}}"#)
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let heard = Arc::new(Mutex::new(Vec::new()));
    let progress = {
        let (stop, heard) = (Arc::clone(&stop), Arc::clone(&heard));
        ProgressFn(Arc::new(move |p: Progress| {
            heard.lock().unwrap().push((p.frames_done, p.frames));
            if p.frames_done > 1000 {
                stop.store(true, Ordering::Relaxed);
            }
        }))
    };
    let asked = u64::MAX / 2;
    let config = plain(RunConfig {
        workers: 2,
        slots: 4,
        frames: asked,
        stop: Some(stop),
        progress: Some(progress),
        ..RunConfig::default()
    });
    let outcome = simulate(&graph, "fifo", &config);
    let report = &outcome.report;
    assert!(report.interrupted, "the report says interrupted");
    assert!(report.frames > 1000 && report.frames < asked, "{} frames", report.frames);
    assert_eq!(report.tasks, report.frames * 5, "every frame started completed: none is half done");
    let heard = heard.lock().unwrap();
    assert!(heard.len() >= 2, "progress on the way and at the end: {heard:?}");
    assert_eq!(heard[0].1, asked, "progress counts against the frames asked for until the stop");
    assert_eq!(*heard.last().unwrap(), (report.frames, report.frames), "the last word is the frames done");
}

/// Per-slot state beyond any machine's memory (4 million instances × 65,536 slots, terabytes) is
/// refused before anything is made, naming both figures, instead of aborting on the allocation.
#[test]
fn a_simulation_beyond_the_memory_available_is_refused() {
    let graph = parse(r#"{"nodes": [{"name": "wide", "function": "noop", "factor": 4000000}]}"#);
    let run = RunConfig { slots: 65536, ..RunConfig::default() };
    let error = sim::simulate(&graph, &scheduler("fifo"), &run, &SimConfig::default()).expect_err("refused").error;
    let message = error.to_string();
    assert!(message.contains("65536 slot(s) × 4000000 instances need at least"), "{message}");
    assert!(message.contains("of memory available; use fewer slots or fewer instances"), "{message}");
}

/// `TOMII_SCHED_KEEP_BEFORE_BATCH` (ABI v1.4): work-stealing's kept task, the newest ready one, runs
/// before the rest of the worker's last pop, in a real run and in a simulated one alike. One
/// worker: `a`'s three instances are pushed at `root`'s completion, the last kept and the others
/// popped together later (newest first); each one's `b` is kept and runs before the next `a`.
/// Without the flag `b`'s second instance would wait until the pop's last task had run.
#[test]
fn work_stealing_runs_a_kept_task_before_the_rest_of_its_pop() {
    let graph = parse(
        r#"{"nodes": [
            {"name": "root", "function": "noop"},
            {"name": "a", "function": "noop", "factor": 3, "args": [{"type": "$res", "predecessor": {"name": "root", "index": "all"}}]},
            {"name": "b", "function": "noop", "factor": 3, "args": [{"type": "$res", "predecessor": {"name": "a"}}]}
        ]}"#,
    );
    let config = RunConfig { workers: 1, slots: 1, frames: 1, trace: true, ..RunConfig::default() };
    let order = |outcome: &RunOutcome| -> Vec<(String, u32)> {
        let mut trace = outcome.trace.clone();
        trace.sort_by_key(|record| record.start);
        trace.iter().map(|r| (graph.nodes[r.node as usize].name.clone(), r.instance)).collect()
    };
    let expected: Vec<(String, u32)> =
        [("root", 0), ("a", 2), ("b", 2), ("a", 1), ("b", 1), ("a", 0), ("b", 0)].map(|(n, i)| (n.into(), i)).into();
    let kernels = tomii_core::plugin::KernelSet::load(&[common::synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
    let real = tomii_core::engine::run(&graph, &kernels, &scheduler("work-stealing"), &config)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(order(&real), expected, "a real run");
    let simulated = simulate(&graph, "work-stealing", &plain(config));
    assert_eq!(order(&simulated), expected, "a simulated run");
}
