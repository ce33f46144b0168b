//! `tomii.simulate`: a graph on virtual workers with the same scheduler dylib (tomii-core's
//! `sim/`), returned as `run_json` returns a run, so that Python's `RunResult` takes it unchanged.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use pyo3::prelude::*;
use tomii_core::engine::{ChromeLayout, ChromeTraceFile};
use tomii_core::graph;
use tomii_core::plugin::SchedulerPlugin;
use tomii_core::sim::{self, CostSpec, SimConfig};

use super::python_kernels::PythonKernels;
use super::runner;
use super::{ConfigError, GraphError, RunReturn, TomiiError, failed, plugin_error, run_return};

/// Simulates `graph_json` (README of tomii-core's `sim/`): `cost_json` is the cost model's JSON
/// (None: what the graph says), `trace_path` a trace file written as `trace_format` says.
#[pyfunction]
#[pyo3(signature = (graph_json, *, source, scheduler_plugin, workers, slots, frames, warmup_frames, pop_batch,
                    seed, cost_json, arrival_interval_ns, overhead_pop_ns, overhead_task_ns, sched_opts, trace,
                    trace_path, trace_format))]
#[allow(clippy::too_many_arguments)]
pub fn simulate_json(
    py: Python<'_>,
    graph_json: &str,
    source: &str,
    scheduler_plugin: PathBuf,
    workers: u32,
    slots: u32,
    frames: u64,
    warmup_frames: u64,
    pop_batch: u32,
    seed: u64,
    cost_json: Option<&str>,
    arrival_interval_ns: Option<u64>,
    overhead_pop_ns: u64,
    overhead_task_ns: u64,
    sched_opts: Vec<(String, String)>,
    trace: bool,
    trace_path: Option<PathBuf>,
    trace_format: &str,
) -> PyResult<RunReturn> {
    let graph =
        graph::parse_str_for_run(source, graph_json, workers).map_err(|e| GraphError::new_err(e.to_string()))?;
    let cost = match cost_json {
        Some(text) => serde_json::from_str::<CostSpec>(text)
            .map_err(|e| ConfigError::new_err(format!("cost_model: not a cost model ({e})")))?,
        None => CostSpec::default(),
    };
    let chrome = match trace_format {
        "csv" => None,
        "chrome" => trace_path
            .as_deref()
            .map(|path| ChromeTraceFile::create(path, ChromeLayout::new(&graph, (workers, slots), warmup_frames)))
            .transpose()
            .map_err(TomiiError::new_err)?,
        other => return Err(ConfigError::new_err(format!("trace_format {other:?}: give \"csv\" or \"chrome\""))),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let config = SimConfig {
        workers,
        slots,
        frames,
        warmup_frames,
        pop_batch,
        seed,
        cost,
        arrival_interval_ns,
        overhead_pop_ns,
        overhead_task_ns,
        scheduler_options: sched_opts,
        trace,
        trace_file: trace_path.filter(|_| chrome.is_none()),
        trace_taps: chrome.iter().map(ChromeTraceFile::tap).collect(),
        wake_all_on_push: false,
        stop: Some(Arc::clone(&stop)),
        progress: None,
    };
    let scheduler = SchedulerPlugin::load(&scheduler_plugin).map_err(plugin_error)?;
    // Ctrl-C stops the simulation as it stops a run: the frames in flight complete, and Python's
    // KeyboardInterrupt is raised once it has returned, carrying the result.
    let interrupts = runner::Interrupts::install(stop);
    let result = py.detach(|| sim::simulate(&graph, &scheduler, &config));
    let pressed = interrupts.pressed();
    drop(interrupts);
    let signal = if pressed { py.check_signals().err() } else { None };
    if let Some(chrome) = &chrome {
        let report = match &result {
            Ok(outcome) => Some(&outcome.report),
            Err(failure) => failure.partial.as_ref().map(|partial| &partial.report),
        };
        chrome.finish(report).map_err(TomiiError::new_err)?;
    }
    match result {
        Ok(outcome) => run_return(py, outcome, &graph, trace, signal),
        Err(failure) => Err(failed(py, failure, &graph, &PythonKernels::new(Vec::new()), trace)),
    }
}
