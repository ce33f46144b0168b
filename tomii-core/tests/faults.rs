//! Fault containment end to end: schedulers that break their contract at run time, through the
//! real loader, under both policies. The Rust `broken` test plugin (tests/plugins/broken-scheduler,
//! one misbehaviour per `fault` option) and the C fixture tests/c/broken_runtime.c (one per `-D`
//! macro) each misbehave after five correct hand-outs.
//!
//! - `stop::*`: the run ends with one error naming the scheduler, the violation and, where the host
//!   knows it, the task (node, instance, frame); a lost task ends it as a stall.
//! - `fallback::*`: the scheduler is ejected and the run still completes: every frame's sink equals
//!   the reference checksum, the trace has every (frame, node, instance) exactly once, and the
//!   report records the ejection.
//! - `cli_*`: the `tomii` command says either in one line.
//!
//! Every run happens on a helper thread under a watchdog, so a hang fails instead of blocking.
//! Needs `cargo build --workspace` first (the Rust plugins) and a C compiler (`$CC`, default `cc`).

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::c_fixtures::CFixtures;
use common::{broken_lib, cli, graph_path, graph_text, sinks, synthetic_lib, within_timeout};
use tomii_core::engine::{self, FaultPolicy, Output, RunConfig, RunError, RunOutcome};
use tomii_core::graph::{self, CompiledGraph};
use tomii_core::plugin::{KernelSet, SchedulerPlugin};

/// How long one run may take before the test fails as hung.
const TIMEOUT: Duration = Duration::from_secs(20);
/// Frames of every run; 2 workers and 3 slots run them.
const FRAMES: u64 = 30;
const WORKERS: u32 = 2;
const SLOTS: u32 = 3;
/// Short, so that a lost task ends the run quickly.
const STALL_TIMEOUT: Duration = Duration::from_millis(300);

/// The C fixture, built once per variant: (library stem, source, the macro choosing the fault).
static C_BROKEN: CFixtures = CFixtures::new(&[
    ("c_broken_none", "broken_runtime.c", &[]),
    ("c_broken_duplicate", "broken_runtime.c", &["-DFAULT_DUPLICATE"]),
    ("c_broken_drop", "broken_runtime.c", &["-DFAULT_DROP"]),
    ("c_broken_garbage", "broken_runtime.c", &["-DFAULT_GARBAGE"]),
    ("c_broken_overflow", "broken_runtime.c", &["-DFAULT_OVERFLOW"]),
    ("c_broken_error", "broken_runtime.c", &["-DFAULT_ERROR"]),
]);

// ---- cases ----

/// Which broken scheduler a case loads.
#[derive(Clone, Copy, Debug)]
enum Broken {
    /// The Rust plugin with `fault=<this>`.
    Rust(&'static str),
    /// The C fixture built with `-DFAULT_<THIS>` (`none`: no macro).
    C(&'static str),
}

impl Broken {
    fn path(self) -> PathBuf {
        match self {
            Broken::Rust(_) => broken_lib(),
            Broken::C(fault) => C_BROKEN.path(&format!("c_broken_{fault}")),
        }
    }

    fn options(self) -> Vec<(String, String)> {
        match self {
            Broken::Rust(fault) => vec![("fault".to_owned(), fault.to_owned())],
            Broken::C(_) => Vec::new(),
        }
    }

    /// The name errors and reports show.
    fn name(self) -> &'static str {
        match self {
            Broken::Rust(_) => "broken",
            Broken::C(_) => "c-broken",
        }
    }
}

/// A fixture graph, its sink node and the sink's reference value per frame.
#[derive(Clone, Copy, Debug)]
enum Graph {
    /// checksum_chain.json: a[4] → b[4] → c[1].
    Chain,
    /// pinned_checksum.json: src[4] → pinned[2] → sink[1], on workers 0, 1 and 0 of 2 only. Each
    /// worker pushes tasks only the other may run and pops at once, so a scheduler ignoring the
    /// ranges hands one of them to the wrong worker in every frame.
    Pinned,
}

impl Graph {
    fn file(self) -> &'static str {
        match self {
            Graph::Chain => "checksum_chain.json",
            Graph::Pinned => "pinned_checksum.json",
        }
    }

    fn compile(self) -> CompiledGraph {
        graph::parse_str(self.file(), &graph_text(self.file())).unwrap_or_else(|e| panic!("{e}"))
    }

    /// (sink node id, reference value of the sink in a frame).
    fn sink(self) -> (u32, fn(u64) -> u64) {
        match self {
            Graph::Chain => (2, sinks::chain),
            Graph::Pinned => (2, sinks::pinned),
        }
    }
}

/// One misbehaviour and what the host must say about it.
#[derive(Debug)]
struct Fault {
    scheduler: Broken,
    graph: Graph,
    /// Texts the violation must contain.
    says: &'static [&'static str],
    /// The nodes one of which the violation must name with an instance and a frame; empty when the
    /// host cannot know the task (a garbage handle, an error status, a stall).
    task_of: &'static [&'static str],
    /// Whether the fault shows as a stall (a lost task) rather than a contract violation.
    stalls: bool,
}

const fn case(scheduler: Broken, says: &'static [&'static str]) -> Fault {
    Fault { scheduler, graph: Graph::Chain, says, task_of: &[], stalls: false }
}

const DUPLICATE: &[&str] = &["returned the same task twice"];
/// What a duplicate is called when its copy is handed out only after its frame ended, its slot then
/// holding a later frame: the host cannot tell it from a task of an earlier frame (seen once on a
/// loaded 2-core machine).
const DUPLICATE_LATE: &[&str] = &["returned a task that was never pushed (or belongs to an earlier frame)"];
const STALLED: &[&str] = &["stalled", "300 ms", "was a pushed task lost?"];
const GARBAGE: &[&str] = &["pop returned handle 0xffffffffffffffff, which the host never issued"];

/// Defines `stop::NAME` and `fallback::NAME` for each fault.
macro_rules! fault_tests {
    ($($name:ident => $fault:expr;)*) => {
        mod stop {
            use super::*;
            $(#[test] fn $name() { stops_the_run(&$fault) })*
        }
        mod fallback {
            use super::*;
            $(#[test] fn $name() { falls_back(&$fault) })*
        }
    };
}

fault_tests! {
    rust_duplicate => Fault { task_of: &["a", "b"], ..case(Broken::Rust("duplicate"), DUPLICATE) };
    rust_drop => Fault { stalls: true, ..case(Broken::Rust("drop"), STALLED) };
    rust_garbage => case(Broken::Rust("garbage"), GARBAGE);
    rust_wrong_worker => Fault {
        graph: Graph::Pinned,
        task_of: &["src", "pinned", "sink"],
        ..case(Broken::Rust("wrong-worker"), &["handed a task to worker ", ", outside its allowed workers "])
    };
    rust_panic => case(Broken::Rust("panic"), &["pop failed: panicked: injected panic"]);
    // A worker pushes what its completion made ready through push_keep, which the broken plugin has.
    rust_error => case(Broken::Rust("error"), &["push_keep failed: injected error"]);
    rust_keep_out_of_range =>
        case(Broken::Rust("keep-out-of-range"), &["push_keep kept task index 1 of the 1 task pushed"]);
    rust_keep_wrong_worker => Fault {
        graph: Graph::Pinned,
        task_of: &["pinned", "sink"],
        ..case(Broken::Rust("keep-wrong-worker"), &["handed a task to worker ", ", outside its allowed workers "])
    };
    c_duplicate => Fault { task_of: &["a", "b"], ..case(Broken::C("duplicate"), DUPLICATE) };
    c_drop => Fault { stalls: true, ..case(Broken::C("drop"), STALLED) };
    c_garbage => case(Broken::C("garbage"), GARBAGE);
    c_overflow => case(Broken::C("overflow"), &["pop reported 2 tasks for a buffer of 1"]);
    c_error => case(Broken::C("error"), &["pop failed: injected C error"]);
}

// ---- running ----

fn config(fault: &Fault, on_fault: FaultPolicy) -> RunConfig {
    RunConfig {
        workers: WORKERS,
        slots: SLOTS,
        frames: FRAMES,
        trace: true,
        collect_outputs: true,
        stall_timeout: STALL_TIMEOUT,
        scheduler_options: fault.scheduler.options(),
        on_fault,
        ..RunConfig::default()
    }
}

/// Loads the synthetic kernels and the case's scheduler and runs its graph once.
fn run(fault: &Fault, config: &RunConfig) -> Result<RunOutcome, RunError> {
    let (graph, scheduler, config) = (fault.graph.compile(), fault.scheduler.path(), config.clone());
    let what = format!("a run of {} with {} ({:?})", graph.name, scheduler.display(), config.on_fault);
    within_timeout(TIMEOUT, &what, move || {
        let kernels = KernelSet::load(&[synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
        let scheduler = SchedulerPlugin::load(&scheduler).unwrap_or_else(|e| panic!("{e}"));
        engine::run(&graph, &kernels, &scheduler, &config)
    })
}

// ---- checks ----

/// Under `Stop`: one error naming the scheduler and the violation (and the task, where known).
fn stops_the_run(fault: &Fault) {
    let error = match run(fault, &config(fault, FaultPolicy::Stop)) {
        Ok(_) => panic!("the run of {fault:?} succeeded under the stop policy"),
        Err(error) => error,
    };
    let text = error.to_string();
    let name = fault.scheduler.name();
    match (&error, fault.stalls) {
        (RunError::SchedulerFault { scheduler, violation }, false) => {
            assert_eq!(scheduler, name, "{text}");
            check_violation(fault, violation);
        }
        (RunError::Stall { scheduler, timeout_ms, incomplete }, true) => {
            assert_eq!((scheduler.as_str(), *timeout_ms), (name, STALL_TIMEOUT.as_millis()), "{text}");
            assert!((1..=FRAMES).contains(incomplete), "{text}");
            check_violation(fault, &text);
        }
        _ => panic!("{fault:?}: expected a {} error, got: {text}", if fault.stalls { "stall" } else { "fault" }),
    }
    assert!(text.contains(&format!("scheduler {name:?}")), "the error does not name the scheduler: {text}");
    assert!(!text.contains('\n'), "the error is not one line: {text}");
}

/// Under `Fallback`: the run completes with the reference values, every task once, and the
/// ejection in the report.
fn falls_back(fault: &Fault) {
    let config = config(fault, FaultPolicy::Fallback);
    let outcome = run(fault, &config).unwrap_or_else(|e| panic!("{fault:?}: the run failed under fallback: {e}"));
    let graph = fault.graph.compile();
    check_outputs(fault.graph, &outcome);
    common::trace::check(&graph, &config, &outcome.trace);
    let report = &outcome.report;
    let tasks = FRAMES * graph.instance_count() as u64;
    assert_eq!(report.tasks, tasks, "tasks run, over every worker");
    assert_eq!(report.scheduler.name, fault.scheduler.name());
    let ejection = report.scheduler.ejected.as_ref().unwrap_or_else(|| panic!("{fault:?}: no ejection reported"));
    check_violation(fault, &ejection.violation);
    assert!(ejection.frames_done < FRAMES, "{ejection:?}");
    let most = u64::from(SLOTS) * graph.instance_count() as u64;
    assert!(ejection.requeued_tasks <= most, "{ejection:?}: more than the {most} tasks the slots hold");
    if fault.stalls {
        assert!(ejection.requeued_tasks >= 1, "{ejection:?}: the lost task was not recovered");
    }
    assert_eq!(report.scheduler.stats, None, "an ejected scheduler's stats are not asked for");
    let json = serde_json::to_value(report).expect("the report serialises");
    let recorded = &json["scheduler"]["ejected"];
    assert_eq!(recorded["requeued_tasks"].as_u64(), Some(ejection.requeued_tasks), "{json}");
    assert_eq!(recorded["violation"].as_str(), Some(ejection.violation.as_str()), "{json}");
}

/// The violation contains each expected text and, where the host knows the task, names it.
fn check_violation(fault: &Fault, violation: &str) {
    let late = fault.says == DUPLICATE && violation.contains(DUPLICATE_LATE[0]);
    for says in if late { DUPLICATE_LATE } else { fault.says } {
        assert!(violation.contains(says), "{fault:?}: the violation does not say {says:?}: {violation}");
    }
    if fault.task_of.is_empty() {
        return;
    }
    let (node, instance, frame) =
        named_task(violation).unwrap_or_else(|| panic!("the violation names no task: {violation}"));
    assert!(fault.task_of.contains(&node.as_str()), "{fault:?}: unexpected node {node:?}: {violation}");
    let graph = fault.graph.compile();
    let factor = graph.nodes[graph.node_id(&node).expect("a node of the graph")].factor;
    assert!(instance < factor && frame < FRAMES, "no such task: {violation}");
}

/// The task a message names as `node "NAME" instance I, frame F`.
fn named_task(text: &str) -> Option<(String, u32, u64)> {
    let rest = &text[text.find("node \"")? + "node \"".len()..];
    let (node, rest) = rest.split_once("\" instance ")?;
    let (instance, rest) = rest.split_once(", frame ")?;
    let frame: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((node.to_owned(), instance.parse().ok()?, frame.parse().ok()?))
}

/// Every frame's outputs are exactly the sink with its reference value.
fn check_outputs(graph: Graph, outcome: &RunOutcome) {
    let (sink, reference) = graph.sink();
    assert_eq!(outcome.outputs.len() as u64, FRAMES, "one output list per frame");
    for (frame, outputs) in outcome.outputs.iter().enumerate() {
        assert_eq!(outputs, &[(sink, 0, Output::UInt(reference(frame as u64)))], "outputs of frame {frame}");
    }
}

// ---- the ejection record ----

/// `Ejection::frames_done` counts the frames completed before the ejection. A lost task blocks its
/// frame, so a stall ejection happens with at least that frame incomplete.
///
/// Four workers and a short stall timeout make their parks time out together, which caught two
/// races (each in about 1 run in 400 to 1 in 25): `eject` reading `frames_done` after the requeue,
/// when another worker may already have completed the recovered frame; and a worker that timed out
/// with the others finding the host FIFO empty after the ejection (another took the recovered
/// task) and stopping the run as an engine bug (engine README.md, "Stall watchdog").
#[test]
fn stall_ejection_counts_only_frames_done_before_it() {
    const RUNS: usize = 100;
    let fault = Fault { stalls: true, ..case(Broken::Rust("drop"), STALLED) };
    let config =
        RunConfig { workers: 4, stall_timeout: Duration::from_millis(20), ..config(&fault, FaultPolicy::Fallback) };
    for attempt in 1..=RUNS {
        let outcome = run(&fault, &config).unwrap_or_else(|e| panic!("the run failed under fallback: {e}"));
        check_outputs(fault.graph, &outcome);
        let ejection = outcome.report.scheduler.ejected.expect("an ejection");
        assert!(
            ejection.frames_done < FRAMES,
            "run {attempt} of {RUNS}: the ejection claims all {FRAMES} frames were done before it: {ejection:?}"
        );
    }
}

// ---- the controls ----

/// The broken schedulers with no fault run cleanly under either policy: the faults come from the
/// option or macro, not from the plugins' plumbing.
#[test]
fn controls_run_cleanly() {
    for scheduler in [Broken::Rust("none"), Broken::C("none")] {
        for graph in [Graph::Chain, Graph::Pinned] {
            for policy in [FaultPolicy::Stop, FaultPolicy::Fallback] {
                let fault = Fault { graph, ..case(scheduler, &[]) };
                let config = config(&fault, policy);
                let outcome = run(&fault, &config).unwrap_or_else(|e| panic!("{fault:?} under {policy:?}: {e}"));
                check_outputs(graph, &outcome);
                common::trace::check(&graph.compile(), &config, &outcome.trace);
                assert_eq!(outcome.report.scheduler.ejected, None, "{fault:?} under {policy:?}");
            }
        }
    }
}

// ---- the command ----

/// `tomii run checksum_chain.json` on 2 workers, 3 slots, 30 frames with the Rust broken plugin.
fn tomii_run(extra: &[&str]) -> cli::Run {
    let mut command = cli::tomii();
    command.arg("run").arg(graph_path("checksum_chain.json")).arg("--dylib").arg(synthetic_lib());
    command.arg("--scheduler-plugin").arg(broken_lib());
    command.args(["--workers", "2", "--slots", "3", "--frames", "30", "--stall-timeout-ms", "300"]).args(extra);
    cli::finish(command)
}

#[test]
fn cli_stop_is_one_error_line_naming_the_scheduler() {
    let run = tomii_run(&["--sched-opt", "fault=duplicate"]);
    cli::assert_error(&run, &["scheduler \"broken\" broke its contract", DUPLICATE[0], ", frame "]);
    assert!(!run.stdout.contains("frames/s"), "a summary was printed:\n{}", run.stdout);
}

#[test]
fn cli_fallback_finishes_with_one_warning_line() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let report_arg = report.to_str().expect("UTF-8 path");
    let run =
        tomii_run(&["--sched-opt", "fault=duplicate", "--on-scheduler-fault", "fallback", "--report", report_arg]);
    let context = format!("status: {:?}\nstdout:\n{}\nstderr:\n{}", run.status, run.stdout, run.stderr);
    assert!(run.status.success(), "expected success\n{context}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected exactly one line on stderr\n{context}");
    for needle in ["warning:", "scheduler \"broken\" was ejected", DUPLICATE[0], "host's FIFO"] {
        assert!(lines[0].contains(needle), "the warning does not say {needle:?}\n{context}");
    }
    assert!(run.stdout.contains("30 frames (270 tasks)"), "no summary of the whole run\n{context}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let ejected = &json["scheduler"]["ejected"];
    assert!(ejected["violation"].as_str().is_some_and(|v| v.contains(DUPLICATE[0])), "{json}");
    assert!(ejected["requeued_tasks"].is_u64() && ejected["frames_done"].is_u64(), "{json}");
}

#[test]
fn cli_unknown_fault_is_one_error_line() {
    let run = tomii_run(&["--sched-opt", "fault=bogus"]);
    cli::assert_error(&run, &["scheduler \"broken\"", "\"bogus\"", "\"fault\"", "wrong-worker"]);
}
