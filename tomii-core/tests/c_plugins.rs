//! Both plugin ABIs from C, through the real loader: a C scheduler (tests/c/fifo_sched.c) runs the
//! checksum graph with the Rust synthetic kernels; C kernels (tests/c/kernels.c) run beside Rust
//! ones, hand back buffers the host frees exactly once, and fail with their own message; broken
//! C tables (tests/c/bad_sched.c, no_entry.c, kernels.c with `-D` macros) trip every loader check.
//!
//! The fixtures are compiled once per test binary, at first use, into a temporary directory with
//! `$CC` (default `cc`); a missing compiler fails the tests. Every run happens on a helper thread
//! under a watchdog, so a hang fails instead of blocking. Needs `cargo build --workspace` first
//! (the Rust plugins).

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::c_fixtures::{CFixtures, Fixture};
use common::sinks::chain as chain_sink;
use common::{checksum, fifo_lib, graph_text, synthetic_lib, within_timeout};
use tomii_core::engine::{self, Output, RunConfig, RunError, RunOutcome};
use tomii_core::graph::{self, CompiledGraph};
use tomii_core::plugin::{KernelSet, PluginError, SchedulerPlugin};
use tomii_types::abi::TomiiSchedulerVtable;

/// How long one run may take before the test fails as hung.
const TIMEOUT: Duration = Duration::from_secs(10);

// ---- C fixtures ----

/// Every library built from tests/c: (library stem, source file, extra compiler arguments).
const FIXTURES: &[Fixture] = &[
    ("c_fifo", "fifo_sched.c", &[]),
    ("c_serial", "serial_sched.c", &[]),
    ("c_hang_pop", "fifo_sched.c", &["-DHANG_POP_AFTER=50"]),
    ("c_huge_stats", "fifo_sched.c", &["-DHUGE_STATS"]),
    ("c_pop_handles", "fifo_sched.c", &["-DPOP_HANDLES"]),
    ("bad_control", "bad_sched.c", &[]),
    ("bad_major", "bad_sched.c", &["-DBAD_MAJOR"]),
    ("bad_size", "bad_sched.c", &["-DBAD_SIZE=40"]),
    ("bad_null_push", "bad_sched.c", &["-DNULL_PUSH"]),
    ("bad_null_name", "bad_sched.c", &["-DNULL_NAME"]),
    ("newer_minor", "bad_sched.c", &["-DNEWER_MINOR"]),
    ("v1_1_table", "bad_sched.c", &["-DV1_1_TABLE"]),
    ("bad_pop_handles_hooks", "bad_sched.c", &["-DPOP_HANDLES_WITH_HOOKS"]),
    ("bad_gate_without_push_keep", "bad_sched.c", &["-DGATE_WITHOUT_PUSH_KEEP"]),
    ("bad_misaligned_gate", "bad_sched.c", &["-DMISALIGNED_GATE"]),
    ("no_entry", "no_entry.c", &[]),
    ("c_kernels", "kernels.c", &[]),
    ("kernels_v2", "kernels.c", &["-DKERNEL_ABI_MAJOR=2"]),
    ("kernels_null_func", "kernels.c", &["-DNULL_FUNC"]),
    ("kernels_v1_0", "kernels.c", &["-DABI_V1_0"]),
];

/// The fixtures, compiled together by the first test that needs one.
static BUILT: CFixtures = CFixtures::new(FIXTURES);

/// The path of the compiled fixture `stem` (one of `FIXTURES`).
fn fixture(stem: &str) -> PathBuf {
    BUILT.path(stem)
}

/// A 64-bit counter exported by a loaded C library (an `atomic_ulong`). Opening the same path
/// again returns the loader's handle, so this reads the instance the engine called.
struct CCounter {
    value: *const AtomicU64,
    _library: libloading::Library,
}

impl CCounter {
    fn open(path: &Path, symbol: &str) -> CCounter {
        // SAFETY: the fixture's initialisers are trivial.
        let library = unsafe { libloading::Library::new(path) }.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = format!("{symbol}\0");
        // SAFETY: the symbol is an `atomic_ulong`, 8 bytes (asserted in the C source), whose layout
        // on every supported target is that of `AtomicU64`.
        let value = unsafe { library.get::<*const AtomicU64>(name.as_bytes()) }
            .map(|symbol| *symbol)
            .unwrap_or_else(|e| panic!("{}: {symbol}: {e}", path.display()));
        CCounter { value, _library: library }
    }

    fn get(&self) -> u64 {
        // SAFETY: the library stays loaded while `_library` lives (and the loader never unloads).
        unsafe { &*self.value }.load(Ordering::SeqCst)
    }
}

// ---- running ----

fn compile_graph(name: &str, text: &str) -> CompiledGraph {
    graph::parse_str(name, text).unwrap_or_else(|e| panic!("{e}"))
}

/// A configuration that keeps outputs and the trace.
fn config(workers: u32, slots: u32, frames: u64) -> RunConfig {
    RunConfig { workers, slots, frames, trace: true, collect_outputs: true, ..RunConfig::default() }
}

/// Loads `kernels` and `scheduler` and runs `graph` once; a plugin that fails to load fails the test.
fn run(
    graph: &CompiledGraph,
    kernels: &[PathBuf],
    scheduler: &Path,
    config: RunConfig,
) -> Result<RunOutcome, RunError> {
    let (graph, kernels, scheduler) = (graph.clone(), kernels.to_vec(), scheduler.to_owned());
    let what = format!("a run of {} with {} and {config:?}", graph.name, scheduler.display());
    within_timeout(TIMEOUT, &what, move || {
        let kernels = KernelSet::load(&kernels).unwrap_or_else(|e| panic!("{e}"));
        let scheduler = SchedulerPlugin::load(&scheduler).unwrap_or_else(|e| panic!("{e}"));
        engine::run(&graph, &kernels, &scheduler, &config)
    })
}

fn run_ok(graph: &CompiledGraph, kernels: &[PathBuf], scheduler: &Path, config: RunConfig) -> RunOutcome {
    run(graph, kernels, scheduler, config).unwrap_or_else(|e| panic!("the run failed: {e}"))
}

/// The error loading `path` as a scheduler must produce.
fn scheduler_load_error(path: &Path) -> PluginError {
    match SchedulerPlugin::load(path) {
        Ok(plugin) => panic!("{} loaded as scheduler {:?} although it is broken", path.display(), plugin.name),
        Err(error) => error,
    }
}

/// The message of the invalid-table error loading the C fixture `name` as a scheduler must produce.
fn invalid_table_error(name: &str) -> String {
    let error = scheduler_load_error(&fixture(name));
    let text = error.to_string();
    assert!(matches!(error, PluginError::Invalid { .. }), "expected an invalid-table error, got {text}");
    text
}

/// The error loading `path` as a kernel library must produce.
fn kernels_load_error(path: &Path) -> PluginError {
    match KernelSet::load(&[path.to_owned()]) {
        Ok(_) => panic!("{} loaded as a kernel library although it is broken", path.display()),
        Err(error) => error,
    }
}

// ---- the C scheduler ----

/// A scheduler whose pop never returns: the command stops within the limit, with one line naming
/// the scheduler, the call and the worker.
#[test]
fn a_scheduler_stuck_in_pop_ends_the_command_with_a_line_naming_it() {
    let graph = std::env::temp_dir().join(format!("tomii-hang-{}.json", std::process::id()));
    std::fs::write(&graph, r#"{"nodes": [{"name": "a", "function": "noop", "factor": 8}]}"#).unwrap();
    let mut command = common::cli::tomii();
    command.arg("run").arg(&graph).arg("--dylib").arg(synthetic_lib());
    command.arg("--scheduler-plugin").arg(fixture("c_hang_pop"));
    command.args(["--frames", "1000", "--workers", "2", "--scheduler-call-timeout-ms", "300"]);
    let report = graph.with_extension("report.json");
    command.arg("--report").arg(&report);
    let started = std::time::Instant::now();
    let run = common::cli::finish(command);
    let _ = std::fs::remove_file(&graph);
    let line = common::cli::assert_error(&run, &["\"c-fifo\"", "did not return from pop", "worker", "300 ms"]);
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}: {line}", started.elapsed());
    // The report was written first, saying how the run ended and how far it got.
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(&report);
    assert_eq!(written["status"], "failed");
    assert!(written["error"].as_str().unwrap().contains("did not return from pop"), "{written}");
    assert!(written["frames"].as_u64().unwrap() < 1000, "{written}");
    assert!(run.stderr.contains("the run stopped after"), "{}", run.stderr);
}

/// A scheduler's claim that its stats need 2^40 bytes is not allocated: the report holds the text
/// the first buffer got, and says what was claimed.
#[test]
fn a_scheduler_claiming_huge_stats_gets_a_bounded_read() {
    let graph = compile_graph("one.json", r#"{"nodes": [{"name": "a", "function": "noop"}]}"#);
    let outcome = run_ok(&graph, &[synthetic_lib()], &fixture("c_huge_stats"), config(1, 1, 3));
    let stats = match &outcome.report.scheduler.stats {
        Some(serde_json::Value::String(text)) => text.clone(),
        other => panic!("expected the stats text with a note, got {other:?}"),
    };
    assert!(stats.contains(r#""pushed":3"#) && stats.contains("claim 1099511627776 bytes"), "{stats}");
}

/// A SERIAL scheduler with every hook: the host never lets two of its callbacks run at once,
/// hooks included, and calls each hook once per task or frame.
#[test]
fn a_serial_scheduler_is_never_entered_twice_at_once_hooks_included() {
    let graph = compile_graph(
        "wide.json",
        r#"{"nodes": [{"name": "a", "function": "checksum", "factor": 16, "args": [{"type": "$index"}]},
                      {"name": "b", "function": "checksum", "factor": 16,
                       "args": [{"type": "$res", "predecessor": {"name": "a", "index": "all"}}]}]}"#,
    );
    let path = fixture("c_serial");
    let (overlaps, task_hooks, frame_hooks) = (
        CCounter::open(&path, "tomii_test_overlaps"),
        CCounter::open(&path, "tomii_test_task_hooks"),
        CCounter::open(&path, "tomii_test_frame_hooks"),
    );
    let frames = 300;
    let outcome = run_ok(&graph, &[synthetic_lib()], &path, config(2, 4, frames));
    assert_eq!(outcome.report.frames, frames);
    assert_eq!(overlaps.get(), 0, "two callbacks of a SERIAL scheduler ran at once");
    assert_eq!(task_hooks.get(), 2 * outcome.report.tasks, "task_started and task_completed, once per task");
    assert_eq!(frame_hooks.get(), 2 * frames, "frame_started and frame_completed, once per frame");
}

#[test]
fn c_scheduler_runs_the_checksum_chain() {
    let graph = compile_graph("checksum_chain.json", &graph_text("checksum_chain.json"));
    let outcome = run_ok(&graph, &[synthetic_lib()], &fixture("c_fifo"), config(2, 3, 40));
    assert_eq!(outcome.outputs.len(), 40, "one output list per frame");
    for (frame, outputs) in outcome.outputs.iter().enumerate() {
        assert_eq!(outputs, &[(2, 0, Output::UInt(chain_sink(frame as u64)))], "outputs of frame {frame}");
    }
    let report = &outcome.report;
    assert_eq!(report.tasks, 40 * 9);
    assert_eq!(report.scheduler.name, "c-fifo");
    assert!(!report.scheduler.layout_checked, "a C scheduler has no abi_stable module to check");
    let stats = serde_json::json!({"pushed": 360, "popped": 360, "held": 0});
    assert_eq!(report.scheduler.stats, Some(stats), "the C scheduler's own counts");
}

/// ABI v1.1: a scheduler that sets `TOMII_SCHED_POP_HANDLES` writes only handles (this one fills
/// the rest of each popped descriptor with 0xA5 bytes), and runs to the reference values, worker
/// ranges honoured: the host reads nothing else of a popped descriptor.
#[test]
fn a_scheduler_popping_handles_only_runs_to_the_reference_values() {
    let graph = compile_graph("checksum_chain.json", &graph_text("checksum_chain.json"));
    let outcome = run_ok(&graph, &[synthetic_lib()], &fixture("c_pop_handles"), config(2, 3, 40));
    for (frame, outputs) in outcome.outputs.iter().enumerate() {
        assert_eq!(outputs, &[(2, 0, Output::UInt(chain_sink(frame as u64)))], "outputs of frame {frame}");
    }
    let graph = compile_graph("use_workers.json", &graph_text("use_workers.json"));
    let config = RunConfig { pop_batch: 4, ..config(2, 2, 60) };
    let outcome = run_ok(&graph, &[synthetic_lib()], &fixture("c_pop_handles"), config);
    let pinned = graph.node_id("pinned").unwrap() as u32;
    let on_pinned: Vec<u32> = outcome.trace.iter().filter(|r| r.node == pinned).map(|r| r.worker).collect();
    assert_eq!(on_pinned.len(), 120);
    assert!(on_pinned.iter().all(|&w| w == 1), "a pinned task ran on another worker: {on_pinned:?}");
}

#[test]
fn pop_handles_with_a_task_hook_is_rejected() {
    let text = invalid_table_error("bad_pop_handles_hooks");
    assert!(text.contains("TOMII_SCHED_POP_HANDLES") && text.contains("task hook"), "{text}");
}

/// ABI v1.4: a keep gate needs `push_keep`, which the host calls while the gate is closed; and a
/// gate's counters must be aligned `uint64_t`, or the run stops at the scheduler's creation.
#[test]
fn a_keep_gate_without_push_keep_or_with_a_misaligned_counter_is_refused() {
    let text = invalid_table_error("bad_gate_without_push_keep");
    assert!(text.contains("`keep_gate` but no `push_keep`"), "{text}");
    let graph = compile_graph("diamond.json", &graph_text("diamond.json"));
    match run(&graph, &[synthetic_lib()], &fixture("bad_misaligned_gate"), config(1, 1, 1)) {
        Err(RunError::Plugin(PluginError::Create { message, .. })) => {
            assert!(message.contains("keep_gate gave worker 0 a NULL or misaligned counter"), "{message}");
        }
        Err(other) => panic!("expected PluginError::Create, got {other}"),
        Ok(_) => panic!("a scheduler with a misaligned keep gate ran"),
    }
}

#[test]
fn rust_scheduler_reports_its_layout_checked() {
    let graph = compile_graph("diamond.json", &graph_text("diamond.json"));
    let outcome = run_ok(&graph, &[synthetic_lib()], &fifo_lib(), config(2, 2, 5));
    assert!(outcome.report.scheduler.layout_checked, "the Rust fifo carries an abi_stable module");
}

#[test]
fn c_scheduler_honours_worker_ranges() {
    // The host verifies every pop: a pinned task handed to worker 0 would fail the run.
    let graph = compile_graph("use_workers.json", &graph_text("use_workers.json"));
    let outcome =
        run_ok(&graph, &[synthetic_lib()], &fixture("c_fifo"), RunConfig { pop_batch: 4, ..config(2, 2, 60) });
    let pinned = graph.node_id("pinned").unwrap() as u32;
    let on_pinned: Vec<u32> = outcome.trace.iter().filter(|r| r.node == pinned).map(|r| r.worker).collect();
    assert_eq!(on_pinned.len(), 120);
    assert!(on_pinned.iter().all(|&w| w == 1), "a pinned task ran on another worker: {on_pinned:?}");
    assert_eq!(outcome.trace.len(), 60 * 5);
}

#[test]
fn c_scheduler_create_failure_stops_the_run_before_any_frame() {
    // If any frame ran, its only task would fail the run with a kernel error instead.
    let graph = compile_graph("boom.json", r#"{"nodes": [{"name": "boom", "function": "fail", "args": ["ran"]}]}"#);
    let config = RunConfig { scheduler_options: vec![("x".into(), "1".into())], ..config(2, 2, 5) };
    match run(&graph, &[synthetic_lib()], &fixture("c_fifo"), config) {
        Err(RunError::Plugin(PluginError::Create { name, path, message })) => {
            assert_eq!((name.as_str(), message.as_str()), ("c-fifo", "bad option x"));
            assert_eq!(path, fixture("c_fifo"));
        }
        Err(other) => panic!("expected PluginError::Create, got {other}"),
        Ok(_) => panic!("the run succeeded although the scheduler's create fails"),
    }
}

// ---- broken scheduler tables ----

#[test]
fn unbroken_control_table_loads() {
    let plugin = SchedulerPlugin::load(&fixture("bad_control")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plugin.name, "bad");
    assert!(!plugin.layout_checked);
}

/// Versioning rules (PLUGIN_SCHEDULER_API.md): a table of a later minor, larger and with a higher
/// minor, must load, its extra fields ignored (an older minor's: below).
#[test]
fn scheduler_of_a_newer_minor_version_loads() {
    let plugin = SchedulerPlugin::load(&fixture("newer_minor")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plugin.name, "bad");
}

/// A table of minor 1 ends before v1.2's `push_keep`: whatever follows it is not read.
#[test]
fn scheduler_of_an_older_minor_version_loads_without_its_later_fields() {
    let plugin = SchedulerPlugin::load(&fixture("v1_1_table")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plugin.name, "bad");
    assert!(!plugin.keeps(), "push_keep lies past the table's struct_size");
    assert!(SchedulerPlugin::load(&fixture("bad_control")).is_ok_and(|control| !control.keeps()));
    let c_fifo = SchedulerPlugin::find("c-fifo").unwrap_or_else(|e| panic!("{e}"));
    assert!(c_fifo.keeps(), "c-fifo has push_keep");
}

#[test]
fn scheduler_of_another_major_version_is_rejected() {
    let error = scheduler_load_error(&fixture("bad_major"));
    let text = error.to_string();
    assert!(
        matches!(error, PluginError::Version { abi: "scheduler", found: 2, expected: 1, .. }),
        "expected a version error, got {text}"
    );
    assert!(text.contains("scheduler ABI v2") && text.contains("speaks v1"), "{text}");
    assert!(text.contains("rebuild"), "{text}");
}

#[test]
fn scheduler_table_smaller_than_v1_is_rejected() {
    let text = invalid_table_error("bad_size");
    let v1 = std::mem::offset_of!(TomiiSchedulerVtable, push_keep);
    assert!(text.contains("40 bytes") && text.contains(&format!("{v1} bytes")), "{text}");
}

#[test]
fn scheduler_without_push_is_rejected() {
    let text = invalid_table_error("bad_null_push");
    assert!(text.contains("`push`") && text.contains("NULL"), "{text}");
}

#[test]
fn scheduler_without_name_is_rejected() {
    let text = invalid_table_error("bad_null_name");
    assert!(text.contains("name is NULL"), "{text}");
}

#[test]
fn library_without_the_entry_symbol_is_rejected() {
    let path = fixture("no_entry");
    let error = scheduler_load_error(&path);
    let text = error.to_string();
    assert!(
        matches!(error, PluginError::MissingSymbol { symbol: "tomii_scheduler_v1", .. }),
        "expected a missing-symbol error, got {text}"
    );
    assert!(text.contains("tomii_scheduler_v1") && text.contains(&path.display().to_string()), "{text}");
    let error = kernels_load_error(&path);
    assert!(matches!(error, PluginError::MissingSymbol { symbol: "tomii_kernels_v1", .. }), "{error}");
}

// ---- C kernels ----

#[test]
fn c_kernel_results_feed_rust_kernels() {
    let graph = compile_graph(
        "adders.json",
        r#"{"nodes": [
            {"name": "pair", "function": "add_u64", "factor": 2,
             "args": [1, {"type": "u64", "value": 2}, {"type": "u8", "value": 3}]},
            {"name": "total", "function": "add_u64",
             "args": [{"type": "$res", "predecessor": {"name": "pair", "index": "0-2"}}, {"type": "u32", "value": 100}]},
            {"name": "check", "function": "checksum",
             "args": [{"type": "$res", "predecessor": {"name": "total"}}, "end"]}
        ]}"#,
    );
    let kernels = [fixture("c_kernels"), synthetic_lib()];
    let outcome = run_ok(&graph, &kernels, &fifo_lib(), config(2, 2, 12));
    assert_eq!(outcome.outputs.len(), 12);
    for (frame, outputs) in outcome.outputs.iter().enumerate() {
        let expected = checksum::expected("check", 0, frame as u64, &[112, checksum::text("end")]);
        assert_eq!(outputs, &[(2, 0, Output::UInt(expected))], "outputs of frame {frame}");
    }
}

#[test]
fn a_kernel_reads_its_entry_data_and_a_v1_0_library_still_loads() {
    let graph = compile_graph(
        "data.json",
        r#"{"nodes": [
            {"name": "ten", "function": "times_ten", "args": [{"type": "u64", "value": 7}]},
            {"name": "hundred", "function": "times_hundred", "args": [{"type": "u64", "value": 7}]}
        ]}"#,
    );
    let sinks = |library: &str| -> Vec<Output> {
        let outcome = run_ok(&graph, &[fixture(library)], &fifo_lib(), config(1, 1, 1));
        outcome.outputs.into_iter().flatten().map(|(_, _, value)| value).collect()
    };
    assert_eq!(sinks("c_kernels"), [Output::UInt(70), Output::UInt(700)], "v1.1: data passed back");
    assert_eq!(sinks("kernels_v1_0"), [Output::UInt(7), Output::UInt(7)], "v1.0 entries: data NULL");
}

#[test]
fn c_buffers_are_released_exactly_once() {
    // text[0] and text[1] feed a Rust checksum; text[2] and text[3] are sinks, copied as outputs.
    let graph = compile_graph(
        "texts.json",
        r#"{"nodes": [
            {"name": "text", "function": "make_text", "factor": 4},
            {"name": "sum", "function": "checksum",
             "args": [{"type": "$res", "predecessor": {"name": "text", "index": "0-2"}}]}
        ]}"#,
    );
    let path = fixture("c_kernels");
    let (made, released) = (CCounter::open(&path, "tomii_test_made"), CCounter::open(&path, "tomii_test_released"));
    let before = (made.get(), released.get());
    let outcome = run_ok(&graph, &[path.clone(), synthetic_lib()], &fifo_lib(), config(2, 2, 10));
    for (frame, outputs) in outcome.outputs.iter().enumerate() {
        let text = |i: u32| format!("text:{i}:{frame}");
        let sum = checksum::expected("sum", 0, frame as u64, &[checksum::text(&text(0)), checksum::text(&text(1))]);
        let expected = vec![(0, 2, Output::Text(text(2))), (0, 3, Output::Text(text(3))), (1, 0, Output::UInt(sum))];
        assert_eq!(outputs, &expected, "outputs of frame {frame}");
    }
    drop(outcome);
    let delta = (made.get() - before.0, released.get() - before.1);
    assert_eq!(delta, (40, 40), "(texts made, texts released) over 10 frames of 4 texts");
}

#[test]
fn c_kernel_error_fails_the_run_with_its_message() {
    let graph =
        compile_graph("bad_add.json", r#"{"nodes": [{"name": "adder", "function": "add_u64", "args": [1, "two"]}]}"#);
    match run(&graph, &[fixture("c_kernels")], &fifo_lib(), config(2, 2, 10)) {
        Err(RunError::Kernel { node, kernel, instance, frame, message }) => {
            assert_eq!((node.as_str(), kernel.as_str(), instance), ("adder", "add_u64", 0));
            assert!(frame < 2, "frame {frame}");
            assert_eq!(message, "add_u64: argument 1 has tag 19, not an unsigned integer");
        }
        Err(other) => panic!("expected RunError::Kernel, got {other}"),
        Ok(_) => panic!("the run succeeded although add_u64 was given a string"),
    }
}

#[test]
fn kernel_registry_of_another_major_version_is_rejected() {
    let error = kernels_load_error(&fixture("kernels_v2"));
    let text = error.to_string();
    assert!(
        matches!(error, PluginError::Version { abi: "kernel", found: 2, expected: 1, .. }),
        "expected a version error, got {text}"
    );
    assert!(text.contains("kernel ABI v2") && text.contains("speaks v1") && text.contains("rebuild"), "{text}");
}

#[test]
fn kernel_entry_without_a_function_is_rejected() {
    let error = kernels_load_error(&fixture("kernels_null_func"));
    let text = error.to_string();
    assert!(matches!(error, PluginError::Invalid { .. }), "expected an invalid-registry error, got {text}");
    assert!(text.contains("\"hollow\"") && text.contains("NULL"), "{text}");
}
