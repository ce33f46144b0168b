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

/// [`run_ok`], its trace checked against the graph ([`check_trace`]).
fn run_checked(graph: &CompiledGraph, config: &RunConfig) -> RunOutcome {
    let outcome = run_ok(graph, config.clone());
    check_trace(graph, config, &outcome.trace);
    outcome
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
    let outcome = run_checked(&graph, &config);
    assert_sink_values(&outcome, 2, 50, chain_sink);
}

#[test]
fn trace_has_every_task_once_in_dependency_order() {
    let graph = compile("checksum_chain.json");
    let config = RunConfig { pop_batch: 4, ..config(3, 4, 200) };
    let outcome = run_checked(&graph, &config);
    assert_eq!(outcome.report.tasks, 200 * 9);
}

#[test]
fn many_slots_reused_over_many_frames() {
    let graph = compile("diamond.json");
    let config = config(2, 1024, 3000);
    let outcome = run_checked(&graph, &config);
    assert_sink_values(&outcome, 1, 3000, diamond_sink);
}

#[test]
fn more_slots_than_frames() {
    let graph = compile("checksum_chain.json");
    let config = config(2, 64, 10);
    let outcome = run_checked(&graph, &config);
    assert_sink_values(&outcome, 2, 10, chain_sink);
}

#[test]
fn use_workers_keeps_a_node_on_its_worker() {
    let graph = compile("use_workers.json");
    let config = config(2, 2, 100);
    let outcome = run_checked(&graph, &config);
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
            let sink = outputs.iter().find(|(node, _, _)| *node == 1).map(|(_, _, v)| v);
            assert_eq!(
                sink,
                Some(&Output::UInt(expected("sink", 0, frame, &each))),
                "workers {workers}, frame {frame}"
            );
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
        let sink = outputs.iter().find(|(node, _, _)| *node == 1).map(|(_, _, v)| v);
        assert_eq!(sink, Some(&Output::UInt(expected("sink", 0, frame, &[9, list]))), "frame {frame}");
    }
}

/// The sink output of each frame of `outcome` (the graph's last node).
/// The report's entry of the node called `name` (entries are sorted by kernel time).
fn node_report<'a>(outcome: &'a RunOutcome, name: &str) -> &'a tomii_core::engine::NodeReport {
    outcome.report.per_node.iter().find(|n| n.name == name).unwrap_or_else(|| panic!("no report of node {name}"))
}

fn sink_outputs<'a>(graph: &CompiledGraph, outcome: &'a RunOutcome) -> Vec<Option<&'a Output>> {
    let sink = graph.nodes.len() as u32 - 1;
    outcome.outputs.iter().map(|outputs| outputs.iter().find(|(n, _, _)| *n == sink).map(|(_, _, v)| v)).collect()
}

#[test]
fn a_condition_skips_instances_and_their_successors_see_none() {
    use common::checksum::expected;
    let graph = compile("condition.json");
    let outcome = run_ok(&graph, config(2, 3, 10));
    for (frame, sink) in sink_outputs(&graph, &outcome).into_iter().enumerate() {
        let frame = frame as u64;
        // Even instances run (index mod 2 == 0); odd ones are skipped and pass NONE (word 0).
        let each: Vec<u64> = (0..6).map(|i| if i % 2 == 0 { expected("each", i, frame, &[3]) } else { 0 }).collect();
        assert_eq!(sink, Some(&Output::UInt(expected("sink", 0, frame, &each))), "frame {frame}");
    }
    let each = node_report(&outcome, "each");
    assert_eq!((each.count, each.skipped), (60, 30), "every instance is a task; odd ones are skipped");
}

#[test]
fn every_comparison_operation_selects_the_right_instances() {
    let text = graph_text("condition.json");
    // modulo($index, 2) is 0 or 1; compared with 1.
    for (op, runs) in [
        ("Eq", [false, true]),
        ("Neq", [true, false]),
        ("Gt", [false, false]),
        ("Ge", [false, true]),
        ("Lt", [true, false]),
        ("Le", [true, true]),
    ] {
        let edited = text.replace(r#""operation": "Eq", "value": 0"#, &format!(r#""operation": "{op}", "value": 1"#));
        let graph = graph::parse_str("condition.json", &edited).unwrap_or_else(|e| panic!("{e}"));
        let outcome = run_ok(&graph, config(2, 2, 2));
        let skipped = node_report(&outcome, "each").skipped;
        let ran_per_frame = (0..6).filter(|i| runs[i % 2]).count() as u64;
        assert_eq!(skipped, 2 * (6 - ran_per_frame), "operation {op}");
    }
}

#[test]
fn a_condition_whose_result_cannot_be_compared_fails_the_run_naming_it() {
    let text = graph_text("condition.json").replace(r#""value": 0, "value_type": "u64""#, r#""value": "zero""#);
    let graph = graph::parse_str("condition.json", &text).unwrap_or_else(|e| panic!("{e}"));
    let error = run(&graph, config(2, 2, 3)).expect_err("the run must fail").to_string();
    assert!(error.contains("modulo") && error.contains("cannot be compared with String"), "{error}");
}

#[test]
fn a_loop_feeds_each_iteration_the_previous_result() {
    use common::checksum::expected;
    let graph = compile("loop.json");
    assert_eq!(graph.nodes[0].iterations, 3);
    let outcome = run_ok(&graph, config(2, 2, 6));
    for (frame, sink) in sink_outputs(&graph, &outcome).into_iter().enumerate() {
        let frame = frame as u64;
        let iterate: Vec<u64> = (0..2)
            .map(|i| {
                let first = expected("iterate", i, frame, &[5, 7]);
                let second = expected("iterate", i, frame, &[5, first]);
                expected("iterate", i, frame, &[5, second])
            })
            .collect();
        assert_eq!(sink, Some(&Output::UInt(expected("sink", 0, frame, &iterate))), "frame {frame}");
    }
}

#[test]
fn computed_initializations_are_made_once_and_read_per_instance() {
    use common::checksum::expected;
    let graph = compile("computed_init.json");
    let table: Vec<u64> = (0..3).map(|i| expected("table", i, 0, &[4, u64::from(i)])).collect();
    // `summary` has one element and reads `table` as a whole: its only element, element 0.
    let summary = expected("summary", 0, 0, &[table[0]]);
    let outcome = run_ok(&graph, config(2, 2, 5));
    for (frame, sink) in sink_outputs(&graph, &outcome).into_iter().enumerate() {
        let frame = frame as u64;
        let uses: Vec<u64> = (0..3).map(|i| expected("use", i, frame, &[table[i as usize], summary])).collect();
        assert_eq!(sink, Some(&Output::UInt(expected("sink", 0, frame, &uses))), "frame {frame}");
    }
}

#[test]
fn a_failing_initialization_kernel_fails_the_run_before_any_frame() {
    let text = graph_text("computed_init.json").replacen(
        r#""function": "checksum", "factor": 3"#,
        r#""function": "fail", "factor": 3"#,
        1,
    );
    let graph = graph::parse_str("computed_init.json", &text).unwrap_or_else(|e| panic!("{e}"));
    let error = run(&graph, config(1, 1, 1)).expect_err("the run must fail");
    assert!(matches!(error, RunError::Init { ref init, element: 0, .. } if init == "table"), "{error}");
}

#[test]
fn post_nodes_run_once_after_the_last_frame_on_its_results() {
    use common::checksum::{expected, fnv1a, mix};
    let graph = compile("post_node.json");
    for (slots, frames) in [(1u32, 1u64), (3, 7)] {
        let outcome = run_ok(&graph, config(2, slots, frames));
        let last = frames - 1;
        let each: Vec<u64> = (0..3).map(|i| expected("each", i, last, &[u64::from(i)])).collect();
        let list = each.iter().fold(fnv1a(b""), |h, &w| mix(h, w));
        let want: Vec<(String, u32, Output)> = (0..2)
            .map(|i| ("summary".to_owned(), i, Output::UInt(expected("summary", i, last, &[u64::from(i), list]))))
            .collect();
        assert_eq!(outcome.post_outputs, want, "slots {slots}, frames {frames}");
    }
}

#[test]
fn group_by_reads_whole_groups_and_wrap_reads_around_the_ring() {
    use common::checksum::expected;
    let graph = compile("group_wrap.json");
    let outcome = run_ok(&graph, config(2, 2, 4));
    for (frame, sink) in sink_outputs(&graph, &outcome).into_iter().enumerate() {
        let frame = frame as u64;
        let a: Vec<u64> = (0..6).map(|i| expected("a", i, frame, &[u64::from(i)])).collect();
        // pairs[i] reads a[2i], a[2i + 1]; ring[i] reads pairs[(i − 1) mod 3].
        let pairs: Vec<u64> =
            (0..3).map(|i| expected("pairs", i, frame, &[a[2 * i as usize], a[2 * i as usize + 1]])).collect();
        let ring: Vec<u64> = (0..3).map(|i| expected("ring", i, frame, &[pairs[((i + 2) % 3) as usize]])).collect();
        assert_eq!(sink, Some(&Output::UInt(expected("sink", 0, frame, &ring))), "frame {frame}");
    }
}

#[test]
fn group_size_runs_several_instances_per_task_with_every_value_intact() {
    use common::checksum::expected;
    let graph = compile("group_size.json");
    // 7 instances in groups of 3: tasks work[0] (0..3), work[3] (3..6), work[6] (6..7).
    let tasks: Vec<u32> = (0..graph.instance_count() as u32).filter(|&i| graph.is_task(i)).collect();
    assert_eq!(tasks.iter().filter(|&&i| graph.inst_node[i as usize] == 1).count(), 3);
    let outcome = run_ok(&graph, config(2, 2, 4));
    for (frame, sink) in sink_outputs(&graph, &outcome).into_iter().enumerate() {
        let frame = frame as u64;
        let src: Vec<u64> = (0..4).map(|i| expected("src", i, frame, &[u64::from(i)])).collect();
        let work: Vec<u64> = (0..7)
            .map(|i| {
                let mut words = vec![u64::from(i)];
                words.extend_from_slice(&src);
                expected("work", i, frame, &words)
            })
            .collect();
        assert_eq!(sink, Some(&Output::UInt(expected("sink", 0, frame, &work))), "frame {frame}");
    }
    assert_eq!(node_report(&outcome, "work").count, 7 * 4, "every instance is counted");
}

#[test]
fn a_group_reading_a_later_member_of_itself_is_rejected() {
    let text = r#"{"nodes": [{"name": "w", "function": "noop", "factor": 4, "group_size": 2,
        "args": [{"type": "$dep", "predecessor": {"name": "w", "index": [1], "wrap": true}}]}]}"#;
    let error = graph::parse_str("g.json", text).unwrap_err().to_string();
    assert!(error.contains("w[0] reads w[1], which its group (group_size 2) runs after it"), "{error}");
}

#[test]
fn node_priorities_reach_the_scheduler_through_the_descriptor() {
    // One worker and the priority scheduler: once the root ran, every "high" task must start
    // before any "low" one, although "low" comes first in the file (and would under fifo).
    let graph = compile("priorities.json");
    let priority = common::plugin(&tomii_core::plugin::scheduler_file_name("priority"));
    let outcome = common::within_timeout(Duration::from_secs(60), "a priority run", move || {
        let kernels = KernelSet::load(&[synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
        let scheduler = SchedulerPlugin::load(&priority).unwrap_or_else(|e| panic!("{e}"));
        engine::run(&graph, &kernels, &scheduler, &config(1, 1, 3)).unwrap_or_else(|e| panic!("{e}"))
    });
    let graph = compile("priorities.json");
    for frame in 0..3 {
        let order: Vec<&str> = outcome
            .trace
            .iter()
            .filter(|r| r.frame == frame)
            .map(|r| graph.nodes[r.node as usize].name.as_str())
            .collect();
        assert_eq!(order, ["root", "high", "high", "high", "low", "low", "low"], "frame {frame}");
    }
}

/// A chain of `n` `checksum` nodes of factor 1, each reading the previous one.
fn chain_graph(n: usize) -> CompiledGraph {
    let nodes: Vec<String> = (0..n)
        .map(|i| match i {
            0 => r#"{"name": "n0", "function": "checksum", "args": [{"type": "u64", "value": 1}]}"#.to_owned(),
            _ => format!(
                r#"{{"name": "n{i}", "function": "checksum", "args": [{{"type": "$res", "predecessor": {{"name": "n{}"}}}}]}}"#,
                i - 1
            ),
        })
        .collect();
    graph::parse_str("chain.json", &format!(r#"{{"nodes": [{}]}}"#, nodes.join(","))).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `graph` with the scheduler `name` (a shipped one).
fn run_with(name: &str, graph: &CompiledGraph, config: RunConfig) -> RunOutcome {
    let plugin = common::plugin(&tomii_core::plugin::scheduler_file_name(name));
    let graph = graph.clone();
    common::within_timeout(TIMEOUT, "a run", move || {
        let kernels = KernelSet::load(&[synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
        let scheduler = SchedulerPlugin::load(&plugin).unwrap_or_else(|e| panic!("{e}"));
        engine::run(&graph, &kernels, &scheduler, &config).unwrap_or_else(|e| panic!("{e}"))
    })
}

/// The work-stealing scheduler's pops over the run, from its stats.
fn pops(outcome: &RunOutcome) -> u64 {
    let stats = outcome.report.scheduler.stats.as_ref().expect("work-stealing reports stats");
    ["local_pops", "injector_pops", "restricted_pops"].iter().map(|key| stats[*key].as_u64().unwrap()).sum()
}

#[test]
fn inline_continuation_runs_a_chain_past_the_scheduler_with_the_same_results() {
    // One worker, a chain of 5: every task but the root is its predecessor's continuation, so the
    // scheduler is handed the 20 roots only; the values are those of a run without it.
    let graph = chain_graph(5);
    let off = run_with("work-stealing", &graph, config(1, 2, 20));
    let on = run_with("work-stealing", &graph, RunConfig { inline_continuation: true, ..config(1, 2, 20) });
    assert_eq!(on.outputs, off.outputs);
    assert_eq!((off.report.tasks_inlined, pops(&off) + off.report.tasks_kept), (0, 100));
    assert_eq!((on.report.tasks_inlined, pops(&on), on.report.tasks_kept), (80, 20, 0));
    assert!(on.report.inline_continuation && !off.report.inline_continuation);
    check_trace(&graph, &config(1, 2, 20), &on.trace);
}

#[test]
fn a_scheduler_keeps_tasks_for_their_pushing_worker_with_the_same_results() {
    // fifo keeps a task a completion made ready when its queue is empty (`push_keep`): on one
    // worker and one slot, every task of a chain of 5 but each frame's root, which is pushed.
    let graph = chain_graph(5);
    let kept = run_with("fifo", &graph, config(1, 1, 20));
    let inline = run_with("fifo", &graph, RunConfig { inline_continuation: true, ..config(1, 1, 20) });
    assert_eq!(kept.outputs, inline.outputs);
    assert_eq!((kept.report.tasks_kept, kept.report.tasks_inlined), (80, 0));
    assert_eq!((inline.report.tasks_kept, inline.report.tasks_inlined), (0, 80), "inline continuation goes first");
    check_trace(&graph, &config(1, 1, 20), &kept.trace);
    // c-fifo's rule is fifo's, and its keep gate (ABI v1.4) lets the host apply it without a call:
    // it kept the same tasks, and its own count of keeps through push_keep stayed at 0.
    let gated = run_with("c-fifo", &graph, config(1, 1, 20));
    assert_eq!(gated.outputs, kept.outputs);
    assert_eq!(gated.report.tasks_kept, 80);
    let stats = gated.report.scheduler.stats.as_ref().expect("c-fifo reports stats");
    assert_eq!(
        (stats["pushes"].as_u64(), stats["pops"].as_u64(), stats["kept"].as_u64()),
        (Some(20), Some(20), Some(0))
    );
    // On several workers and slots every invariant holds too, whoever keeps what.
    for (name, workers, slots) in [("checksum_chain.json", 2, 3), ("diamond.json", 3, 8)] {
        let graph = compile(name);
        let config = RunConfig { pop_batch: 2, ..config(workers, slots, 200) };
        let outcome = run_checked(&graph, &config);
        let reference = run_ok(&graph, RunConfig { inline_continuation: true, ..config.clone() });
        assert_eq!(outcome.outputs, reference.outputs, "{name}");
    }
}

#[test]
fn inline_continuation_keeps_every_invariant_on_several_workers() {
    for (name, workers, slots) in [("checksum_chain.json", 2, 3), ("diamond.json", 3, 8), ("group_size.json", 2, 2)] {
        let graph = compile(name);
        let config = RunConfig { inline_continuation: true, pop_batch: 2, ..config(workers, slots, 200) };
        let outcome = run_checked(&graph, &config);
        let reference = run_ok(&graph, RunConfig { inline_continuation: false, ..config.clone() });
        assert_eq!(outcome.outputs, reference.outputs, "{name}");
        assert!(outcome.report.tasks_inlined > 0, "{name}: nothing ran inline");
    }
}

#[test]
fn inline_continuation_never_runs_a_task_outside_its_workers() {
    let graph = compile("use_workers.json");
    let config = RunConfig { inline_continuation: true, ..config(2, 2, 100) };
    let outcome = run_checked(&graph, &config);
    let pinned = graph.node_id("pinned").unwrap() as u32;
    assert!(outcome.trace.iter().filter(|r| r.node == pinned).all(|r| r.worker == 1));
}

/// A pipeline of noop tasks 32 wide: many tiny tasks, faster than a slow trace tap takes them.
fn wide_noop_pipeline() -> CompiledGraph {
    let stage = |i: usize| {
        let args = if i == 0 {
            String::new()
        } else {
            format!(r#"{{"type": "$res", "predecessor": {{"name": "s{}"}}}}"#, i - 1)
        };
        format!(r#"{{"name": "s{i}", "function": "noop", "factor": 32, "args": [{args}]}}"#)
    };
    let nodes: Vec<String> = (0..4).map(stage).collect();
    let text = format!(r#"{{"name": "wide", "nodes": [{}]}}"#, nodes.join(", "));
    graph::parse_str("wide", &text).unwrap_or_else(|e| panic!("{e}"))
}

/// A trace tap far slower than the workers (issue 30, item 7): the workers wait for it instead of
/// dropping records, so it sees every task once; a stop still takes effect at once (the host looks
/// at the run between chunks, however many wait), and the run ends once the host has written what
/// the workers handed over; a worker waiting for the trace is not taken for one stuck in a call
/// (the limits are 10 times the tap's time per chunk).
#[test]
fn a_trace_tap_that_cannot_keep_up_loses_nothing_and_the_run_still_stops() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::Instant;
    use tomii_core::engine::{TaskRecord, TraceTap};

    /// The tap's time per chunk of 4096 records (20,000 records a second), and the chunks it
    /// takes before the test asks for the stop.
    const SLOW: Duration = Duration::from_millis(200);
    const CHUNKS_BEFORE_STOP: u64 = 20;
    let graph = wide_noop_pipeline();
    let stop = Arc::new(AtomicBool::new(false));
    let (records, chunks) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let tap = {
        let (records, chunks) = (Arc::clone(&records), Arc::clone(&chunks));
        TraceTap(Arc::new(move |chunk: &[TaskRecord]| {
            records.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            chunks.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(SLOW);
        }))
    };
    let config = RunConfig {
        trace_taps: vec![tap],
        stop: Some(Arc::clone(&stop)),
        scheduler_call_timeout: 10 * SLOW,
        kernel_timeout: Some(10 * SLOW),
        ..RunConfig { trace: false, collect_outputs: false, ..config(2, 4, 0) }
    };
    let began = Instant::now();
    let asked = Arc::new(std::sync::OnceLock::new());
    let asker = {
        let (stop, chunks, asked) = (Arc::clone(&stop), Arc::clone(&chunks), Arc::clone(&asked));
        std::thread::spawn(move || {
            while chunks.load(Ordering::Relaxed) < CHUNKS_BEFORE_STOP {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = asked.set(Instant::now());
            stop.store(true, Ordering::Relaxed);
        })
    };
    let outcome = run_ok(&graph, config);
    let ended = Instant::now();
    asker.join().unwrap();
    let asked = *asked.get().expect("the stop was asked for");
    let report = &outcome.report;
    assert_eq!(report.status, "interrupted");
    // The run's wall time starts after `began` (the plugins load first): this overstates the delay.
    let stop_took = report.wall_time_s - asked.duration_since(began).as_secs_f64();
    assert!(stop_took < 3.0, "the run stopped {stop_took:.2} s after the stop was asked for");
    // What the workers handed over before they exited: at most the pool's 26 chunks, 5.2 s.
    let ended_after = ended.duration_since(asked);
    assert!(ended_after < Duration::from_secs(20), "the run returned {ended_after:?} after the stop was asked for");
    assert_eq!(report.trace_lost, 0, "records lost");
    assert_eq!(report.trace_records, report.tasks, "every task recorded once");
    assert_eq!(records.load(Ordering::Relaxed), report.tasks, "the tap saw every task's record");
    assert!(report.trace_wait_s > 0.0, "the workers never waited for the tap: {report:?}");
}
