//! `tomii.simulate`: a graph on virtual workers with the same scheduler dylib (tomii-core's
//! `sim/`), returned as `PreparedRun.run` returns a run, so that Python's `RunResult` takes it unchanged.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Sender;

use pyo3::prelude::*;
use tomii_core::engine::RunFailure;
use tomii_core::knobs::Entry;
use tomii_core::launch::{Hooks, Launch};
use tomii_core::sim::{CostSpec, SimConfig};

use super::python_kernels::PythonKernels;
use super::python_scheduler::{self, PythonPolicy};
use super::runner::{self, Finished, GaveUp};
use super::{ConfigError, RunReturn, TomiiError, failed, plugin_error, run_return};

/// Simulates `graph_json` (README of tomii-core's `sim/`) with `options`, `[(knob, value), ...]`
/// by the knob catalog's names (those a simulation takes; see `prepare_run`), and the simulation's
/// own settings: `cost_json` is the cost model's JSON (None: what the graph says);
/// `scheduler_policy`, a Python policy's spec, schedules it instead of the options' scheduler.
#[pyfunction]
#[pyo3(signature = (graph_json, *, source, options, keep_trace, seed, cost_json, arrival_interval_ns, overhead_pop_ns,
                    overhead_task_ns, scheduler_policy=None))]
#[allow(clippy::too_many_arguments)]
pub fn simulate_json(
    py: Python<'_>,
    graph_json: &str,
    source: &str,
    options: Vec<(String, Bound<'_, PyAny>)>,
    keep_trace: bool,
    seed: u64,
    cost_json: Option<&str>,
    arrival_interval_ns: Option<u64>,
    overhead_pop_ns: u64,
    overhead_task_ns: u64,
    scheduler_policy: Option<Bound<'_, PyAny>>,
) -> PyResult<RunReturn> {
    let mut settings = super::options::settings(Entry::Simulate, options)?;
    let policy = scheduler_policy.map(|spec| PythonPolicy::register(&spec)).transpose()?;
    if let Some(policy) = &policy {
        policy.select(&mut settings);
    }
    settings.run.trace = keep_trace;
    // The options' kernels, loaded only if a count names a computed initialization (computed
    // before the graph compiles); kept until the simulation ends.
    let mut kernels = None;
    let input = {
        let mut evaluate = tomii_core::launch::lazy_evaluator(|| settings.kernels(None), &mut kernels);
        super::options::graph_input(source, graph_json, settings.run.workers, &mut evaluate)?
    };
    let graph = Arc::clone(&input.graph);
    let cost = match cost_json {
        Some(text) => serde_json::from_str::<CostSpec>(text)
            .map_err(|e| ConfigError::new_err(format!("cost_model: not a cost model ({e})")))?,
        None => CostSpec::default(),
    };
    let sim = SimConfig { seed, cost, arrival_interval_ns, overhead_pop_ns, overhead_task_ns };
    let scheduler = python_scheduler::scheduler_of(&settings, policy.as_ref()).map_err(plugin_error)?;
    let launch = Launch::new(input, settings).map_err(|e| ConfigError::new_err(e.to_string()))?;
    let stop = Arc::new(AtomicBool::new(false));
    let hooks = Hooks { stop: Some(Arc::clone(&stop)), ..Hooks::default() };
    // Ctrl-C stops the simulation as it stops a run: the frames in flight complete, and Python's
    // KeyboardInterrupt is raised once it has returned, carrying the result. A second Ctrl-C
    // stops waiting for a simulation that does not end (a scheduler stuck in a call).
    let launch = Arc::new(launch);
    let job = {
        let launch = Arc::clone(&launch);
        move |_: Sender<Finished<_, Infallible>>| launch.simulate(&scheduler, &sim, hooks)
    };
    let mut interrupts = runner::Interrupts::new(stop);
    let result = match runner::run(py, job, &mut interrupts) {
        Ok(result) => result,
        Err(GaveUp::Hung(never)) => match never {},
        Err(GaveUp::Interrupted) => {
            return Err(interrupts.raised().unwrap_or_else(|| {
                pyo3::exceptions::PyKeyboardInterrupt::new_err(
                    "the simulation did not stop; it was left running in the background",
                )
            }));
        }
        Err(GaveUp::Lost) => {
            return Err(TomiiError::new_err("internal error (please report it): the simulation's thread ended"));
        }
    };
    let signal = interrupts.raised();
    let report = match &result {
        Ok(outcome) => Some(&outcome.report),
        Err(failure) => failure.partial.as_ref().map(|partial| &partial.report),
    };
    launch.finish(report).result().map_err(TomiiError::new_err)?;
    let no_kernels = PythonKernels::new(Vec::new());
    match result {
        Ok(outcome) => match policy.as_ref().and_then(PythonPolicy::hook_fault) {
            Some(error) => {
                Err(failed(py, RunFailure { error, partial: Some(Box::new(outcome)) }, &graph, &no_kernels, keep_trace))
            }
            None => run_return(py, outcome, &graph, keep_trace, signal),
        },
        Err(failure) => Err(failed(py, failure, &graph, &no_kernels, keep_trace)),
    }
}
