//! The run report against its schema (`tomii schema --report`) and Tomii 1.2's keys against what
//! the run did: real reports of completed, untimed, failed and interrupted runs validate (the
//! network one is checked in network.rs); throughput is frames over wall time; per-node entries
//! carry both key sets, sorted by kernel time; every suggested knob is one a tuner can set.
//!
//! Asserts what the figures are made of, never how large a time is. Needs `cargo build
//! --workspace` first (plugins).

mod common;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use common::report_schema::{check, complaints};
use common::{fifo_lib, graph_text, synthetic_lib, within_timeout};
use tomii_core::engine::{self, Report, RunConfig, report_schema};
use tomii_core::graph::{self, CompiledGraph};
use tomii_core::knobs;
use tomii_core::plugin::{KernelSet, SchedulerPlugin};

const TIMEOUT: Duration = Duration::from_secs(60);

/// 64 noop instances a stage, two stages and a sink: small tasks a tuner could group.
const WIDE: &str = r#"{"name": "wide", "nodes": [
    {"name": "src", "function": "noop", "factor": 64, "args": [{"type": "u64", "value": 1}]},
    {"name": "mid", "function": "noop", "factor": 64, "args": [{"type": "$res", "predecessor": {"name": "src"}}]},
    {"name": "sink", "function": "noop", "args": [{"type": "$barrier", "predecessor": {"name": "mid"}}]}
]}"#;

fn compile(name: &str, text: &str) -> CompiledGraph {
    graph::parse_str(name, text).unwrap_or_else(|e| panic!("{e}"))
}

fn config(workers: u32, slots: u32, frames: u64) -> RunConfig {
    RunConfig { workers, slots, frames, ..RunConfig::default() }
}

/// The report of a run of the test graph `file` (failed or not), validated by [`check`] as `what`.
fn checked_report(file: &str, what: &str, config: RunConfig) -> Report {
    let report = report(&compile(file, &graph_text(file)), config);
    check(what, &report);
    report
}

/// The report of one run, failed or not.
fn report(graph: &CompiledGraph, config: RunConfig) -> Report {
    let graph = graph.clone();
    within_timeout(TIMEOUT, "a run", move || {
        let kernels = KernelSet::load(&[synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
        let scheduler = SchedulerPlugin::load(&fifo_lib()).unwrap_or_else(|e| panic!("{e}"));
        match engine::run_keeping_partial(&graph, &kernels, &scheduler, &config) {
            Ok(outcome) => outcome.report,
            Err(failure) => failure.partial.unwrap_or_else(|| panic!("no partial outcome: {}", failure.error)).report,
        }
    })
}

#[test]
fn the_report_schema_is_a_valid_draft_2020_12_schema() {
    let schema = report_schema();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    if let Err(error) = jsonschema::meta::validate(&schema) {
        panic!("the report schema is not a valid JSON Schema: {error} at {}", error.instance_path());
    }
}

#[test]
fn a_completed_run_validates_and_carries_the_1_2_keys() {
    let report = checked_report("diamond.json", "completed", config(2, 3, 50));
    assert_eq!(report.status, "completed");
    let summary = &report.summary;
    assert_eq!(summary.total_streams, 50);
    assert_eq!(summary.throughput_frames_per_sec, 50.0 / report.wall_time_s, "frames over wall time");
    assert_eq!(summary.throughput_streams_per_sec, summary.throughput_frames_per_sec);
    assert_eq!(summary.total_tasks_per_stream * 50, report.tasks);
    assert_eq!(summary.avg_latency_us, report.latency_us.mean);
    let diagnostic = &summary.scheduling_overhead_diagnostic;
    let path_us = diagnostic.critical_path_exec_us.expect("timed");
    assert_eq!(report.critical_path.estimated_latency_us, Some(path_us));
    assert_eq!(diagnostic.overhead_us, Some(summary.avg_latency_us - path_us));
    // diamond: src (2 instances) into sink.
    assert_eq!(report.critical_path.length_nodes, 2);
    assert_eq!(report.critical_path.max_node_factor, 2);
    for node in &report.per_node {
        assert_eq!(node.times.invocations, node.count);
        assert_eq!(node.times.invocations, 50 * u64::from(node.times.factor), "{}", node.name);
        assert_eq!(node.times.total_exec_us, node.total_us);
        assert!(node.times.on_critical_path, "every node of the diamond is on its path");
    }
    let pct: f64 = report.per_node.iter().filter_map(|n| n.times.pct_of_total).sum();
    assert!((pct - 100.0).abs() < 1e-6, "shares add up to {pct}");
    let totals: Vec<f64> = report.per_node.iter().map(|n| n.times.total_exec_us.unwrap()).collect();
    assert!(totals.windows(2).all(|pair| pair[0] >= pair[1]), "sorted by total time: {totals:?}");
    let busy = report.resource_utilization.worker_busy_pct.as_ref().expect("timed");
    assert_eq!(busy.len(), 2, "one per worker");
    for (pct, worker) in busy.iter().zip(&report.per_worker) {
        assert!((pct - 100.0 * worker.busy_fraction.unwrap()).abs() < 1e-9);
    }
}

#[test]
fn an_untimed_run_validates_with_nulls_where_nothing_was_measured() {
    let report = checked_report("diamond.json", "untimed", RunConfig { task_timing: false, ..config(1, 1, 10) });
    assert!(report.per_node.iter().all(|n| n.times.mean_exec_us.is_none() && n.times.p99_exec_us.is_none()));
    assert!(report.summary.scheduling_overhead_diagnostic.overhead_us.is_none());
    assert!(report.resource_utilization.worker_busy_pct.is_none());
    assert_eq!(report.critical_path.length_nodes, 2, "the path's shape needs no timing");
    assert!(report.optimization_suggestions.is_empty());
    assert_eq!(report.bottleneck_hints.len(), 1, "one hint: timing was off");
    let names: Vec<&str> = report.per_node.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["src", "sink"], "graph order without timing");
}

#[test]
fn a_failed_run_validates_with_status_failed() {
    let report = checked_report("fail.json", "failed", config(2, 2, 5));
    assert_eq!(report.status, "failed");
}

#[test]
fn an_interrupted_run_validates() {
    let stop = Some(Arc::new(AtomicBool::new(true)));
    let report = checked_report("diamond.json", "interrupted", RunConfig { stop, ..config(2, 2, 0) });
    assert_eq!(report.status, "interrupted");
}

#[test]
fn the_schema_rejects_a_report_missing_a_1_2_key() {
    let graph = compile("diamond.json", &graph_text("diamond.json"));
    let report = report(&graph, config(1, 1, 3));
    let mut json = serde_json::to_value(&report).unwrap();
    json["summary"].as_object_mut().unwrap().remove("p99_latency_us");
    let validator = jsonschema::validator_for(&report_schema()).unwrap();
    assert!(!validator.is_valid(&json), "a summary without p99_latency_us validates");
    assert!(complaints(&report).is_empty());
}

#[test]
fn every_suggested_knob_is_a_runtime_or_graph_knob() {
    let graph = compile("wide.json", WIDE);
    let mut suggested = 0;
    for (workers, slots, inline) in [(1, 1, false), (2, 1, false), (2, 8, true)] {
        let report = report(&graph, RunConfig { inline_continuation: inline, ..config(workers, slots, 200) });
        check("wide", &report);
        for suggestion in &report.optimization_suggestions {
            suggested += 1;
            let knob = suggestion.knob.as_str();
            let valid = match knob.strip_suffix(".group_size") {
                Some(node) => graph.nodes.iter().any(|n| n.name == node && n.factor > 1),
                None => knobs::find(knob).is_some_and(|k| k.role == knobs::Role::Perf),
            };
            assert!(valid, "suggested knob {knob:?} is neither a perf knob of the catalog nor a graph knob");
            assert!(suggestion.estimated_speedup >= 1.0 && !suggestion.rule.is_empty(), "{suggestion:?}");
        }
    }
    assert!(suggested > 0, "no run of 128 noop tasks a frame got a suggestion");
}

#[test]
fn tomii_schema_report_prints_the_report_schema_and_a_cli_report_validates() {
    let run = common::cli::finish({
        let mut command = common::cli::tomii();
        command.args(["schema", "--report"]);
        command
    });
    assert!(run.status.success(), "tomii schema --report failed:\n{}", run.stderr);
    let printed: serde_json::Value = serde_json::from_str(&run.stdout).expect("tomii schema --report prints JSON");
    assert_eq!(printed, report_schema());

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.json");
    let run = common::cli::finish({
        let mut command = common::cli::tomii();
        command.arg("run").arg(common::graph_path("diamond.json")).arg("--dylib").arg(synthetic_lib());
        command.args(["--workers", "2", "--frames", "20", "--quiet", "--report"]).arg(&file);
        command
    });
    assert!(run.status.success(), "tomii run failed:\n{}", run.stderr);
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&report_schema()).unwrap();
    let complaints: Vec<String> = validator.iter_errors(&written).map(|e| e.to_string()).collect();
    assert!(complaints.is_empty(), "the CLI's report: {complaints:?}");
}

#[test]
fn the_latency_figures_are_the_frames_latencies() {
    // Spins of 200 µs, one after another: every frame lasts at least 600 µs, whatever the load.
    let chain = compile(
        "chain",
        r#"{"nodes": [{"name": "a", "function": "spin", "args": [200]},
                      {"name": "b", "function": "spin", "args": [200, {"type": "$dep", "predecessor": {"name": "a"}}]},
                      {"name": "c", "function": "spin", "args": [200, {"type": "$dep", "predecessor": {"name": "b"}}]}]}"#,
    );
    let report = report(&chain, config(1, 1, 5));
    let l = &report.latency_us;
    assert!(l.min >= 600.0 && l.p50 >= l.min && l.p99 >= l.p50 && l.max >= l.p99, "{l:?}");
    assert!(l.mean >= l.min && l.mean <= l.max, "{l:?}");
    assert_eq!(report.summary.avg_latency_us, l.mean);
}
