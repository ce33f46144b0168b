//! The engine through the library API, with the real loader, the fifo scheduler and the synthetic
//! kernels: sink values against a reference checksum (inputs, exactly-once, slot isolation), the
//! trace's ordering invariants, many slots, worker ranges, kernel failures and repeated runs.
//!
//! Every run happens on a helper thread under a 60 s watchdog, so a hang fails instead of
//! blocking. Needs `cargo build --workspace` first (plugins).

mod common;

use std::time::Duration;

use common::sinks::{chain as chain_sink, diamond as diamond_sink};
use common::trace::check as check_trace;
use common::{fifo_lib, graph_text, synthetic_lib};
use tomii_core::engine::{self, Output, RunConfig, RunError, RunOutcome, TraceRecord};
use tomii_core::graph::{self, CompiledGraph};
use tomii_core::plugin::{KernelSet, SchedulerPlugin};

/// How long one test's runs may take before the test fails as hung.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Compiles a fixture graph.
fn compile(name: &str) -> CompiledGraph {
    graph::parse_str(name, &graph_text(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// A configuration that keeps outputs and the trace.
fn config(workers: u32, slots: u32, frames: u64) -> RunConfig {
    RunConfig { workers, slots, frames, trace: true, collect_outputs: true, ..RunConfig::default() }
}

/// Loads the plugins and runs `graph` once.
fn run(graph: &CompiledGraph, config: RunConfig) -> Result<RunOutcome, RunError> {
    let graph = graph.clone();
    let what = format!("a run of {} with {config:?}", graph.name);
    common::within_timeout(TIMEOUT, &what, move || {
        let kernels = KernelSet::load(&[synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
        let scheduler = SchedulerPlugin::load(&fifo_lib()).unwrap_or_else(|e| panic!("{e}"));
        engine::run(&graph, &kernels, &scheduler, &config)
    })
}

fn run_ok(graph: &CompiledGraph, config: RunConfig) -> RunOutcome {
    run(graph, config).unwrap_or_else(|e| panic!("the run failed: {e}"))
}

// ---- checks ----

/// Asserts every frame's outputs are exactly `[(sink node, 0, UInt(reference(frame)))]`.
fn assert_sink_values(outcome: &RunOutcome, sink_node: u32, frames: u64, reference: fn(u64) -> u64) {
    assert_eq!(outcome.outputs.len() as u64, frames, "one output list per frame");
    for (frame, outputs) in outcome.outputs.iter().enumerate() {
        let expected = vec![(sink_node, 0, Output::UInt(reference(frame as u64)))];
        assert_eq!(outputs, &expected, "outputs of frame {frame}");
    }
}

// ---- tests ----

#[test]
fn checksums_match_the_reference_for_every_frame() {
    let graph = compile("checksum_chain.json");
    let config = config(2, 3, 50);
    let outcome = run_ok(&graph, config.clone());
    assert_sink_values(&outcome, 2, 50, chain_sink);
    check_trace(&graph, &config, &outcome.trace);
}

#[test]
fn trace_has_every_task_once_in_dependency_order() {
    let graph = compile("checksum_chain.json");
    let config = RunConfig { pop_batch: 4, ..config(3, 4, 200) };
    let outcome = run_ok(&graph, config.clone());
    check_trace(&graph, &config, &outcome.trace);
    assert_eq!(outcome.report.tasks, 200 * 9);
}

#[test]
fn many_slots_reused_over_many_frames() {
    let graph = compile("diamond.json");
    let config = config(2, 1024, 3000);
    let outcome = run_ok(&graph, config.clone());
    assert_sink_values(&outcome, 1, 3000, diamond_sink);
    check_trace(&graph, &config, &outcome.trace);
}

#[test]
fn more_slots_than_frames() {
    let graph = compile("checksum_chain.json");
    let config = config(2, 64, 10);
    let outcome = run_ok(&graph, config.clone());
    assert_sink_values(&outcome, 2, 10, chain_sink);
    check_trace(&graph, &config, &outcome.trace);
}

#[test]
fn use_workers_keeps_a_node_on_its_worker() {
    let graph = compile("use_workers.json");
    let config = config(2, 2, 100);
    let outcome = run_ok(&graph, config.clone());
    check_trace(&graph, &config, &outcome.trace);
    let pinned = graph.node_id("pinned").unwrap() as u32;
    let records: Vec<&TraceRecord> = outcome.trace.iter().filter(|r| r.node == pinned).collect();
    assert_eq!(records.len(), 200);
    assert!(records.iter().all(|r| r.worker == 1), "a pinned task ran elsewhere: {records:?}");
}

#[test]
fn kernel_error_fails_the_run_naming_node_instance_and_frame() {
    let graph = compile("fail.json");
    match run(&graph, config(2, 4, 100)) {
        Err(RunError::Kernel { node, kernel, instance, frame, message }) => {
            assert_eq!((node.as_str(), kernel.as_str(), message.as_str()), ("breaker", "fail", "disk on fire"));
            assert!(instance < 2, "instance {instance}");
            // No frame can complete, so only the first `slots` frames ever start.
            assert!(frame < 4, "frame {frame}");
        }
        Err(other) => panic!("expected RunError::Kernel, got {other}"),
        Ok(_) => panic!("the run succeeded although a kernel fails"),
    }
}

#[test]
fn kernel_panic_fails_the_run_as_a_kernel_error() {
    let graph = compile("panic.json");
    match run(&graph, config(2, 4, 10)) {
        Err(RunError::Kernel { node, kernel, instance, frame, message }) => {
            assert_eq!((node.as_str(), kernel.as_str(), instance), ("bomb", "panic", 0));
            assert!(frame < 4, "frame {frame}");
            assert!(message.contains("panic kernel called"), "message {message:?}");
        }
        Err(other) => panic!("expected RunError::Kernel, got {other}"),
        Ok(_) => panic!("the run succeeded although a kernel panics"),
    }
}

#[test]
fn two_runs_in_one_process_with_the_same_plugins() {
    let graph = compile("checksum_chain.json");
    let config = config(2, 3, 30);
    let outcomes = common::within_timeout(TIMEOUT, "two runs", move || {
        // The same files loaded twice, each set used for one run.
        let kernels = [KernelSet::load(&[synthetic_lib()]), KernelSet::load(&[synthetic_lib()])];
        let schedulers = [SchedulerPlugin::load(&fifo_lib()), SchedulerPlugin::load(&fifo_lib())];
        let mut outcomes = Vec::new();
        for (kernels, scheduler) in kernels.into_iter().zip(schedulers) {
            let (kernels, scheduler) = (kernels.unwrap(), scheduler.unwrap());
            outcomes.push(engine::run(&graph, &kernels, &scheduler, &config).map_err(|e| e.to_string()));
            outcomes.push(engine::run(&graph, &kernels, &scheduler, &config).map_err(|e| e.to_string()));
        }
        outcomes
    });
    for outcome in outcomes {
        let outcome = outcome.unwrap_or_else(|e| panic!("a repeated run failed: {e}"));
        assert_sink_values(&outcome, 2, 30, chain_sink);
    }
}

#[test]
fn progress_is_reported_until_the_last_frame() {
    use std::sync::{Arc, Mutex};
    use tomii_core::engine::{Progress, ProgressFn};

    let graph = compile("checksum_chain.json");
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let config =
        RunConfig { progress: Some(ProgressFn(Arc::new(move |p| sink.lock().unwrap().push(p)))), ..config(2, 2, 200) };
    run_ok(&graph, config);
    let seen = seen.lock().unwrap();
    let last = seen.last().expect("at least one progress report");
    assert_eq!((last.frames_done, last.frames), (200, 200));
    assert!(seen.windows(2).all(|w| w[0].frames_done <= w[1].frames_done), "progress went backwards: {seen:?}");
}

#[test]
fn index_and_workers_arguments_carry_the_instance_and_the_worker_count() {
    use common::checksum::expected;
    let graph = compile("context_args.json");
    for workers in [1u32, 3] {
        let outcome = run_ok(&graph, config(workers, 2, 5));
        for (frame, outputs) in outcome.outputs.iter().enumerate() {
            let frame = frame as u64;
            let each: Vec<u64> =
                (0..3).map(|i| expected("each", i, frame, &[u64::from(i), u64::from(workers)])).collect();
            let sink = outputs.iter().find(|(node, _, _)| *node == 1).map(|(_, _, v)| v.clone());
            assert_eq!(sink, Some(Output::UInt(expected("sink", 0, frame, &each))), "workers {workers}, frame {frame}");
        }
    }
}

#[test]
fn a_variadic_kernel_receives_the_trailing_results_as_one_list() {
    use common::checksum::{expected, fnv1a, mix};
    let graph = compile("variadic.json");
    let outcome = run_ok(&graph, config(2, 3, 12));
    for (frame, outputs) in outcome.outputs.iter().enumerate() {
        let frame = frame as u64;
        let each: Vec<u64> = (0..5).map(|i| expected("each", i, frame, &[u64::from(i)])).collect();
        let list = each.iter().fold(fnv1a(b""), |h, &w| mix(h, w));
        let sink = outputs.iter().find(|(node, _, _)| *node == 1).map(|(_, _, v)| v.clone());
        assert_eq!(sink, Some(Output::UInt(expected("sink", 0, frame, &[9, list]))), "frame {frame}");
    }
}
