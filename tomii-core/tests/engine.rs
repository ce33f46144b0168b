//! The engine through the library API, with the real loader, the fifo scheduler and the synthetic
//! kernels: sink values against a reference checksum (inputs, exactly-once, slot isolation), the
//! trace's ordering invariants, many slots, worker ranges, kernel failures and repeated runs.
//!
//! Every run happens on a helper thread under a 60 s watchdog, so a hang fails instead of
//! blocking. Needs `cargo build --workspace` first (plugins).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc;
use std::time::Duration;

use common::{checksum, fifo_lib, graph_text, synthetic_lib};
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

/// Runs `body` on its own thread; fails the test if it has not returned after `TIMEOUT`.
fn within_timeout<T: Send + 'static>(what: &str, body: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)));
    });
    match result.recv_timeout(TIMEOUT) {
        Ok(Ok(value)) => value,
        Ok(Err(payload)) => std::panic::resume_unwind(payload),
        Err(_) => panic!("{what} did not finish within {TIMEOUT:?}"),
    }
}

/// Loads the plugins and runs `graph` once.
fn run(graph: &CompiledGraph, config: RunConfig) -> Result<RunOutcome, RunError> {
    let graph = graph.clone();
    let what = format!("a run of {} with {config:?}", graph.name);
    within_timeout(&what, move || {
        let kernels = KernelSet::load(&[synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
        let scheduler = SchedulerPlugin::load(&fifo_lib()).unwrap_or_else(|e| panic!("{e}"));
        engine::run(&graph, &kernels, &scheduler, &config)
    })
}

fn run_ok(graph: &CompiledGraph, config: RunConfig) -> RunOutcome {
    run(graph, config).unwrap_or_else(|e| panic!("the run failed: {e}"))
}

// ---- references ----

/// checksum_chain.json's sink c[0] in `frame`, computed without the engine.
fn chain_sink(frame: u64) -> u64 {
    let a: Vec<u64> = (0..4).map(|i| checksum::expected("a", i, frame, &[7])).collect();
    let b: Vec<u64> = (0..4).map(|i| checksum::expected("b", i, frame, &[a[i as usize], checksum::int(-3)])).collect();
    let mut words = b;
    words.push(checksum::text("tag"));
    checksum::expected("c", 0, frame, &words)
}

/// diamond.json's sink in `frame`.
fn diamond_sink(frame: u64) -> u64 {
    let src: Vec<u64> = (0..2).map(|i| checksum::expected("src", i, frame, &[11])).collect();
    checksum::expected("sink", 0, frame, &src)
}

/// Asserts every frame's outputs are exactly `[(sink node, 0, UInt(reference(frame)))]`.
fn assert_sink_values(outcome: &RunOutcome, sink_node: u32, frames: u64, reference: fn(u64) -> u64) {
    assert_eq!(outcome.outputs.len() as u64, frames, "one output list per frame");
    for (frame, outputs) in outcome.outputs.iter().enumerate() {
        let expected = vec![(sink_node, 0, Output::UInt(reference(frame as u64)))];
        assert_eq!(outputs, &expected, "outputs of frame {frame}");
    }
}

// ---- trace invariants ----

/// Checks the trace of a successful run against the graph and configuration:
/// exactly once per (frame, node, instance); successors start after their predecessors end in the
/// same frame; one slot per frame, below `slots`; one frame at a time per slot; at most `slots`
/// frames in flight; every worker inside the node's range.
fn check_trace(graph: &CompiledGraph, config: &RunConfig, trace: &[TraceRecord]) {
    let tasks: HashMap<(u64, u32), &TraceRecord> = exactly_once(graph, config.frames, trace);
    for (&(frame, instance), record) in &tasks {
        for &pred in graph.predecessors(instance) {
            let before = tasks[&(frame, pred)];
            assert!(
                record.start >= before.end,
                "frame {frame}: {} started before its predecessor {} ended",
                graph.instance_name(instance),
                graph.instance_name(pred)
            );
        }
        let (lo, hi) = graph.node_of(instance).use_workers.unwrap_or((0, config.workers));
        assert!((lo..hi).contains(&record.worker), "{record:?} ran outside workers {lo}..{hi}");
    }
    let spans = frame_spans(trace, config.slots);
    check_slot_reuse(&spans);
    let in_flight = max_overlap(spans.values().map(|s| (s.begin, s.end)));
    assert!(in_flight <= config.slots as usize, "{in_flight} frames overlapped with {} slots", config.slots);
}

/// Every (frame, instance) once and nothing else; keyed by (frame, global instance id).
fn exactly_once<'t>(
    graph: &CompiledGraph,
    frames: u64,
    trace: &'t [TraceRecord],
) -> HashMap<(u64, u32), &'t TraceRecord> {
    let mut tasks = HashMap::new();
    for record in trace {
        let node = &graph.nodes[record.node as usize];
        assert!(record.instance < node.factor && record.frame < frames, "unexpected record {record:?}");
        let instance = node.first + record.instance;
        assert!(tasks.insert((record.frame, instance), record).is_none(), "ran twice: {record:?}");
    }
    assert_eq!(tasks.len() as u64, frames * graph.instance_count() as u64, "records in the trace");
    tasks
}

/// When a frame was in flight (first ready to last end), and in which slot.
struct Span {
    slot: u32,
    begin: u64,
    end: u64,
}

/// Per frame, its span; asserts each frame kept one slot below `slots`.
fn frame_spans(trace: &[TraceRecord], slots: u32) -> BTreeMap<u64, Span> {
    let mut spans: BTreeMap<u64, Span> = BTreeMap::new();
    for r in trace {
        assert!(r.slot < slots, "{r:?} uses a slot beyond {slots}");
        let span = spans.entry(r.frame).or_insert(Span { slot: r.slot, begin: r.ready, end: r.end });
        assert_eq!(span.slot, r.slot, "frame {} ran in two slots", r.frame);
        span.begin = span.begin.min(r.ready.min(r.start));
        span.end = span.end.max(r.end);
    }
    spans
}

/// Frames sharing a slot do not overlap: each starts after the previous one in its slot ended.
fn check_slot_reuse(spans: &BTreeMap<u64, Span>) {
    let mut last_in_slot: HashMap<u32, (u64, u64)> = HashMap::new();
    for (&frame, span) in spans {
        if let Some((previous, end)) = last_in_slot.insert(span.slot, (frame, span.end)) {
            assert!(span.begin >= end, "frame {frame} began in slot {} before frame {previous} ended", span.slot);
        }
    }
}

/// The most intervals `[begin, end)` that hold at one instant.
fn max_overlap(intervals: impl Iterator<Item = (u64, u64)>) -> usize {
    // At equal times an end (0) sorts before a begin (1): half-open intervals.
    let mut events: Vec<(u64, u8)> = intervals.flat_map(|(begin, end)| [(begin, 1), (end, 0)]).collect();
    events.sort_unstable();
    let (mut now, mut most) = (0usize, 0usize);
    for (_, kind) in events {
        if kind == 1 {
            now += 1;
            most = most.max(now);
        } else {
            now -= 1;
        }
    }
    most
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
    let outcomes = within_timeout("two runs", move || {
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
