//! `tomii._tomii`: the compiled half of the Python package. It wires Python calls to tomii-core and
//! holds no logic: parse, load, run (with the GIL released), and turn the outcome and errors into
//! Python values and exceptions. The curated API lives in `python/tomii/`.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use tomii_core::engine::{self, FaultPolicy, Output, RunConfig, RunError};
use tomii_core::graph;
use tomii_core::plugin::{KernelSet, PluginError, SchedulerPlugin};

create_exception!(_tomii, TomiiError, PyException, "Every error raised by Tomii.");
create_exception!(_tomii, GraphError, TomiiError, "The graph is invalid (names the node, argument or field).");
create_exception!(_tomii, PluginError_, TomiiError, "A kernel library or scheduler could not be loaded or started.");
create_exception!(_tomii, KernelError, TomiiError, "A kernel failed; the message names the node, instance and frame.");
create_exception!(_tomii, SchedulerFault, TomiiError, "The scheduler broke its contract or stalled.");
create_exception!(_tomii, ConfigError, TomiiError, "A run option is invalid.");

fn run_error(error: RunError) -> PyErr {
    let text = error.to_string();
    match error {
        RunError::Kernel { .. } | RunError::Init { .. } => KernelError::new_err(text),
        RunError::SchedulerFault { .. } | RunError::Stall { .. } => SchedulerFault::new_err(text),
        RunError::Plugin(_) => PluginError_::new_err(text),
        RunError::Config(_) => ConfigError::new_err(text),
        RunError::Io { .. } | RunError::Internal(_) => TomiiError::new_err(text),
    }
}

fn plugin_error(error: PluginError) -> PyErr {
    PluginError_::new_err(error.to_string())
}

fn output(py: Python<'_>, value: &Output) -> PyResult<Py<PyAny>> {
    Ok(match value {
        Output::None => py.None(),
        Output::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        Output::Int(v) => v.into_pyobject(py)?.into_any().unbind(),
        Output::UInt(v) => v.into_pyobject(py)?.into_any().unbind(),
        Output::Float(v) => v.into_pyobject(py)?.into_any().unbind(),
        Output::Text(s) | Output::Other(s) => s.into_pyobject(py)?.into_any().unbind(),
        Output::Bytes(b) => pyo3::types::PyBytes::new(py, b).into_any().unbind(),
    })
}

/// Runs a graph given as JSON text. Returns `(report_json, outputs, post_outputs)`: `outputs` is
/// one list per frame of `(node, instance, value)` (when `collect_outputs`), `post_outputs` a list
/// of `(post_node, instance, value)`.
#[pyfunction]
#[pyo3(signature = (graph_json, *, source, dylibs, scheduler_plugin, workers, slots, frames, pop_batch,
                    task_timing, trace, trace_path, collect_outputs, stall_timeout_ms, on_scheduler_fault,
                    sched_opts))]
#[allow(clippy::too_many_arguments)]
fn run_json(
    py: Python<'_>,
    graph_json: &str,
    source: &str,
    dylibs: Vec<PathBuf>,
    scheduler_plugin: PathBuf,
    workers: u32,
    slots: u32,
    frames: u64,
    pop_batch: u32,
    task_timing: bool,
    trace: bool,
    trace_path: Option<PathBuf>,
    collect_outputs: bool,
    stall_timeout_ms: u64,
    on_scheduler_fault: &str,
    sched_opts: Vec<(String, String)>,
) -> PyResult<(String, Py<PyAny>, Py<PyAny>)> {
    let graph = graph::parse_str(source, graph_json).map_err(|e| GraphError::new_err(e.to_string()))?;
    let on_fault = match on_scheduler_fault {
        "stop" => FaultPolicy::Stop,
        "fallback" => FaultPolicy::Fallback,
        other => {
            return Err(ConfigError::new_err(format!("on_scheduler_fault {other:?}: use \"stop\" or \"fallback\"")));
        }
    };
    let config = RunConfig {
        workers,
        slots,
        frames,
        pop_batch,
        trace: trace || trace_path.is_some(),
        task_timing,
        collect_outputs,
        stall_timeout: Duration::from_millis(stall_timeout_ms),
        scheduler_options: sched_opts,
        on_fault,
        progress: None,
    };
    let outcome = py.detach(|| -> Result<_, PyErr> {
        let kernels = KernelSet::load(&dylibs).map_err(plugin_error)?;
        let scheduler = SchedulerPlugin::load(&scheduler_plugin).map_err(plugin_error)?;
        engine::run(&graph, &kernels, &scheduler, &config).map_err(run_error)
    })?;
    if let Some(path) = &trace_path {
        outcome.write_trace_csv(path).map_err(run_error)?;
    }
    let report = serde_json::to_string(&outcome.report).map_err(|e| TomiiError::new_err(e.to_string()))?;
    let outputs = pyo3::types::PyList::empty(py);
    for frame in &outcome.outputs {
        let rows = pyo3::types::PyList::empty(py);
        for (node, instance, value) in frame {
            let name = &graph.nodes[*node as usize].name;
            rows.append((name, instance, output(py, value)?))?;
        }
        outputs.append(rows)?;
    }
    let post = pyo3::types::PyList::empty(py);
    for (name, instance, value) in &outcome.post_outputs {
        post.append((name, instance, output(py, value)?))?;
    }
    Ok((report, outputs.into_any().unbind(), post.into_any().unbind()))
}

/// The runtime knob catalog (`tomii knobs --json`), as JSON text.
#[pyfunction]
fn knobs_json() -> PyResult<String> {
    serde_json::to_string(&tomii_core::knobs::LISTING).map_err(|e| TomiiError::new_err(e.to_string()))
}

/// The runtime knob catalog as an aligned table (`tomii knobs`).
#[pyfunction]
fn knobs_table() -> String {
    tomii_core::knobs::to_table()
}

#[pymodule]
fn _tomii(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(knobs_json, m)?)?;
    m.add_function(wrap_pyfunction!(knobs_table, m)?)?;
    m.add("TomiiError", py.get_type::<TomiiError>())?;
    m.add("GraphError", py.get_type::<GraphError>())?;
    m.add("PluginError", py.get_type::<PluginError_>())?;
    m.add("KernelError", py.get_type::<KernelError>())?;
    m.add("SchedulerFault", py.get_type::<SchedulerFault>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    Ok(())
}
