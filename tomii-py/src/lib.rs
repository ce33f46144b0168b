//! `tomii._tomii`: the compiled half of the Python package. It wires Python calls to tomii-core and
//! holds no logic: parse, load, run (with the GIL released), and turn the outcome and errors into
//! Python values and exceptions. The curated API lives in `python/tomii/`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::Sender;

mod options;
mod py_value;
mod python_kernels;
mod python_scheduler;
mod runner;
mod send;
mod session;
mod simulate;

use pyo3::import_exception;
use pyo3::prelude::*;
use runner::{Finished, GaveUp};
use tomii_core::engine::{self, ChromeLayout, ChromeTrace, CsvTrace, Output, RunError, RunFailure, TaskRecord};
use tomii_core::graph;
use tomii_core::knobs::Entry;
use tomii_core::launch::{GraphInput, Hooks, Launch, LibraryStamps, Settings};
use tomii_core::plugin::{KernelSet, PluginError as LoadError};

use python_kernels::PythonKernels;
use python_scheduler::PythonPolicy;

// The exception family is Python's (python/tomii/errors.py): the binding raises those very classes,
// so the builder and the runtime raise one `tomii.GraphError`.
import_exception!(tomii.errors, TomiiError);
import_exception!(tomii.errors, GraphError);
import_exception!(tomii.errors, PluginError);
import_exception!(tomii.errors, KernelError);
import_exception!(tomii.errors, SchedulerFault);
import_exception!(tomii.errors, ConfigError);
import_exception!(tomii.errors, HangError);
import_exception!(tomii.errors, NetworkIdleError);
import_exception!(tomii.errors, SessionBusy);
import_exception!(tomii.errors, SessionClosed);

/// The Python exception for `error`; a Python kernel's failure is raised from its own exception.
fn run_error(py: Python<'_>, error: RunError, python: &PythonKernels) -> PyErr {
    let text = error.to_string();
    match error {
        RunError::Kernel { kernel, .. } | RunError::Init { kernel, .. } => {
            let raised = KernelError::new_err(text);
            raised.set_cause(py, python.exception(&kernel));
            raised
        }
        RunError::SchedulerFault { .. } | RunError::Stall { .. } => SchedulerFault::new_err(text),
        RunError::SchedulerHang { .. } | RunError::KernelHang { .. } | RunError::StopCutShort { .. } => {
            HangError::new_err(text)
        }
        RunError::NetworkIdle { .. } => NetworkIdleError::new_err(text),
        RunError::Plugin(_) => PluginError::new_err(text),
        RunError::Config(_) => ConfigError::new_err(text),
        RunError::Io { .. } | RunError::Internal(_) => TomiiError::new_err(text),
    }
}

fn plugin_error(error: LoadError) -> PyErr {
    PluginError::new_err(error.to_string())
}

fn output(py: Python<'_>, value: Output) -> PyResult<Py<PyAny>> {
    Ok(match value {
        Output::None => py.None(),
        Output::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        Output::Int(v) => v.into_pyobject(py)?.into_any().unbind(),
        Output::UInt(v) => v.into_pyobject(py)?.into_any().unbind(),
        Output::Float(v) => v.into_pyobject(py)?.into_any().unbind(),
        Output::Text(s) => s.into_pyobject(py)?.into_any().unbind(),
        Output::Bytes(b) => pyo3::types::PyBytes::new(py, &b).into_any().unbind(),
        Output::Value(value) => python_kernels::into_python(py, value)?,
    })
}

/// What `PreparedRun.run` returns to Python.
type RunReturn = (RunReport, Py<PyAny>, Py<PyAny>, Option<Py<PyAny>>, Option<Py<PyAny>>);

/// A run's report, kept as the runtime made it until Python reads it: made into the dict of its
/// JSON only then (`to_dict`), so that a run whose report is never read (a graph run again and
/// again for its outputs) does not pay for the ~100 Python objects. Its graph warnings, which
/// every run raises, are read without the rest.
#[pyclass(module = "tomii._tomii", frozen)]
struct RunReport(engine::Report);

#[pymethods]
impl RunReport {
    /// The dict `json.loads` makes of the report's JSON.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(py_value::to_python(py, &self.0)?.unbind())
    }

    /// The graph's warnings (`graph_warnings` of the report).
    #[getter]
    fn graph_warnings(&self) -> Vec<String> {
        self.0.graph_warnings.clone()
    }
}

/// A run of a graph made ready (`prepare_run`), to be launched once or again and again
/// (`run_graph` of the same graph with the same options): its settings, its kernels loaded (and
/// the libraries they came from, as they were on disk) and its graph compiled. Each `run` is a
/// whole run of its own, through the launcher: its own scheduler instance, files, frames and
/// report.
#[pyclass(module = "tomii._tomii", frozen)]
struct PreparedRun {
    input: GraphInput,
    settings: Settings,
    kernels: Arc<KernelSet>,
    python: Arc<PythonKernels>,
    libraries: LibraryStamps,
    /// The Python policy that schedules it, instead of the scheduler its options name.
    policy: Option<Arc<PythonPolicy>>,
}

/// The run of a graph given as JSON text (named `source`) with `options`, `[(knob, value), ...]`
/// by the knob catalog's names (`tomii knobs`), made ready: ConfigError for a bad option,
/// PluginError for a library that does not load, GraphError for a graph that does not compile.
/// `python_kernels` are `(name, function, variadic)`: Python functions the graph calls by name,
/// next to the kernels of the `dylib` option; `collect_outputs` keeps every frame's outputs,
/// `keep_trace` the trace in memory; `scheduler_policy`, a Python policy's spec
/// (`tomii.scheduler._Spec`), schedules the run instead of the scheduler the options name.
#[pyfunction]
#[pyo3(signature = (graph_json, *, source, options, python_kernels, collect_outputs, keep_trace, scheduler_policy=None))]
fn prepare_run(
    graph_json: &str,
    source: &str,
    options: Vec<(String, Bound<'_, PyAny>)>,
    python_kernels: Vec<(String, Py<PyAny>, bool)>,
    collect_outputs: bool,
    keep_trace: bool,
    scheduler_policy: Option<Bound<'_, PyAny>>,
) -> PyResult<PreparedRun> {
    let mut settings = options::settings(Entry::Run, options)?;
    let policy = scheduler_policy.map(|spec| PythonPolicy::register(&spec)).transpose()?.map(Arc::new);
    if let Some(policy) = &policy {
        policy.select(&mut settings);
    }
    settings.run.collect_outputs = collect_outputs;
    settings.run.trace = keep_trace || settings.files.trace.is_some();
    let python = Arc::new(PythonKernels::new(python_kernels));
    let libraries = LibraryStamps::of(&settings.dylibs);
    // Loaded before the graph compiles: a count may name a computed initialization, computed
    // then, once, and handed to the run (graph README, "Computed counts").
    let kernels = Arc::new(settings.kernels(Some(python.library())).map_err(plugin_error)?);
    let input = options::graph_input(source, graph_json, settings.run.workers, &mut engine::evaluator(&kernels))?;
    Ok(PreparedRun { input, settings, kernels, python, libraries, policy })
}

#[pymethods]
impl PreparedRun {
    /// Whether every kernel library is still the file it was when the run was made ready: a
    /// rebuilt one needs `prepare_run` again.
    fn is_current(&self) -> bool {
        self.libraries.unchanged()
    }

    /// Launches the run, which writes every file its options name, and returns `(report,
    /// outputs, post_outputs, trace, signal)`: `report` is a `RunReport`, whose `to_dict()` is the
    /// dict `json.loads` makes of the report's JSON; `trace` is `(records, node names)` when
    /// `keep_trace` or a trace file was set (the bytes of `TaskRecord`s, whose fields
    /// `trace_fields` lists; a record's node indexes the names), else None; `outputs` is one list
    /// per frame of `(node, instance, value)` (when `collect_outputs`), `post_outputs` a list of
    /// `(post_node, instance, value)`; `signal` the exception a Ctrl-C raised meanwhile. The
    /// scheduler is loaded for each launch (a look-up once its file was checked), on the runner.
    fn run(&self, py: Python<'_>) -> PyResult<RunReturn> {
        let launch =
            Launch::new(self.input.clone(), self.settings.clone()).map_err(|e| ConfigError::new_err(e.to_string()))?;
        launch_run(py, Arc::new(launch), Arc::clone(&self.kernels), &self.python, self.policy.clone())
    }
}

/// Runs `launch` with `kernels` on the runner (the GIL released), scheduled by `policy` when one
/// is given, ends its files and returns what `PreparedRun.run` returns, or raises its error.
fn launch_run(
    py: Python<'_>,
    launch: Arc<Launch>,
    kernels: Arc<KernelSet>,
    python: &PythonKernels,
    policy: Option<Arc<PythonPolicy>>,
) -> PyResult<RunReturn> {
    let graph = Arc::clone(launch.graph());
    let traced = launch.settings().run.trace;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let job = {
        let (launch, stop, policy) = (Arc::clone(&launch), Arc::clone(&stop), policy.clone());
        move |hung: Sender<Finished<RunDone, Handed>>| -> RunDone {
            let on_hang = engine::HangFn(Arc::new(move |result| {
                let _ = hung.send(Finished::Hung(Handed(Box::new(result))));
            }));
            let settings = launch.settings();
            let scheduler = python_scheduler::scheduler_of(settings, policy.as_deref()).map_err(Err)?;
            let hooks = Hooks { stop: Some(stop), on_hang: Some(on_hang), ..Hooks::default() };
            launch.run(&kernels, &scheduler, hooks).map_err(Ok)
        }
    };
    // Ctrl-C stops the run: `stop` is set (the frames in flight complete, the report says
    // interrupted) and Python's KeyboardInterrupt is raised once the run has returned, carrying the
    // result. A second Ctrl-C stops waiting for a run that does not end.
    let mut interrupts = runner::Interrupts::new(stop);
    let finished = runner::run(py, job, &mut interrupts);
    let written = launch.finish(match &finished {
        Ok(Ok(outcome)) => Some(&outcome.report),
        Ok(Err(Ok(failure))) => failure.partial.as_ref().map(|partial| &partial.report),
        Err(GaveUp::Hung(Handed(handed))) => match &**handed {
            Ok(outcome) => Some(&outcome.report),
            Err(failure) => failure.partial.as_ref().map(|partial| &partial.report),
        },
        _ => None,
    });
    let written = written.result().map_err(TomiiError::new_err);
    let signal = interrupts.raised();
    match finished {
        // A run that succeeded fails on its files; a failed run's own error matters more.
        Ok(Ok(_)) if written.is_err() => Err(written.unwrap_err()),
        Ok(Ok(outcome)) => match policy.as_deref().and_then(PythonPolicy::hook_fault) {
            Some(error) => {
                Err(failed(py, RunFailure { error, partial: Some(Box::new(outcome)) }, &graph, python, traced))
            }
            None => run_return(py, outcome, &graph, traced, signal),
        },
        Ok(Err(Ok(failure))) => Err(failed(py, failure, &graph, python, traced)),
        Ok(Err(Err(error))) => Err(plugin_error(error)),
        // The run's outcome without its stuck worker: a failure, or a run finished after the
        // scheduler was ejected (fallback).
        Err(GaveUp::Hung(Handed(handed))) => match *handed {
            Ok(outcome) => run_return(py, outcome, &graph, traced, signal),
            Err(failure) => Err(failed(py, failure, &graph, python, traced)),
        },
        Err(GaveUp::Interrupted) => Err(signal.unwrap_or_else(|| {
            pyo3::exceptions::PyKeyboardInterrupt::new_err(
                "the run did not stop; it was left running in the background",
            )
        })),
        Err(GaveUp::Lost) => Err(TomiiError::new_err("internal error (please report it): the run's thread ended")),
    }
}

/// What a run on the runner gives back: its outcome, its failure, or why it could not start.
type RunDone = Result<engine::RunOutcome, Result<RunFailure, LoadError>>;

/// What `PreparedRun.run` returns for an outcome (`signal`: the exception a Ctrl-C raised meanwhile).
fn run_return(
    py: Python<'_>,
    mut outcome: engine::RunOutcome,
    graph: &graph::CompiledGraph,
    traced: bool,
    signal: Option<PyErr>,
) -> PyResult<RunReturn> {
    let outputs = pyo3::types::PyList::empty(py);
    for frame in std::mem::take(&mut outcome.outputs) {
        let rows = pyo3::types::PyList::empty(py);
        for (node, instance, value) in frame {
            let name = &graph.nodes[node as usize].name;
            rows.append((name, instance, output(py, value)?))?;
        }
        outputs.append(rows)?;
    }
    let post = pyo3::types::PyList::empty(py);
    for (name, instance, value) in std::mem::take(&mut outcome.post_outputs) {
        post.append((name, instance, output(py, value)?))?;
    }
    let trace = traced.then(|| trace_return(py, &outcome, graph)).transpose()?;
    let signal = signal.map(|raised| raised.into_value(py).into_any());
    let report = RunReport(outcome.report);
    Ok((report, outputs.into_any().unbind(), post.into_any().unbind(), trace, signal))
}

/// `(records, node names)`, as Python reads a trace: the bytes of the run's `TaskRecord`s.
fn trace_return(py: Python<'_>, outcome: &engine::RunOutcome, graph: &graph::CompiledGraph) -> PyResult<Py<PyAny>> {
    let records = pyo3::types::PyBytes::new(py, TaskRecord::as_bytes(&outcome.task_records()));
    let names: Vec<&str> = graph.nodes.iter().map(|n| n.name.as_str()).collect();
    Ok((records.into_any().unbind(), names).into_pyobject(py)?.into_any().unbind())
}

/// The exception for a failed run, carrying what ran before it as `partial` (what `PreparedRun.run`
/// returns) when it ran at all.
fn failed(
    py: Python<'_>,
    failure: RunFailure,
    graph: &graph::CompiledGraph,
    python: &PythonKernels,
    traced: bool,
) -> PyErr {
    let raised = run_error(py, failure.error, python);
    if let Some(partial) = failure.partial {
        match run_return(py, *partial, graph, traced, None) {
            Ok(partial) => {
                let _ = raised.value(py).setattr("partial", partial);
            }
            Err(error) => return error,
        }
    }
    raised
}

/// What the engine handed over when a call was stuck, sent from the runner.
struct Handed(Box<Result<engine::RunOutcome, RunFailure>>);

/// Provides the Python kernels a graph run from the command line names ("module.function"),
/// imported and found through `tomii.export.find_exported`.
struct PythonKernelProvider {
    /// Kept alive until the command ends: the libraries point into them.
    kept: std::sync::Mutex<Vec<PythonKernels>>,
}

impl tomii_core::cli::app::KernelProvider for PythonKernelProvider {
    fn provide(
        &self,
        wanted: &[String],
        beside: &std::path::Path,
    ) -> anyhow::Result<Option<tomii_core::plugin::KernelLibrary>> {
        let python: Vec<&String> = wanted.iter().filter(|name| name.contains('.')).collect();
        if python.is_empty() {
            return Ok(None);
        }
        let functions = Python::attach(|py| -> PyResult<Vec<(String, Py<PyAny>, bool)>> {
            // Modules beside the graph are found, as a script's are beside it.
            let path = py.import("sys")?.getattr("path")?;
            let dir = beside.canonicalize().unwrap_or_else(|_| beside.to_owned()).display().to_string();
            if !path.contains(&dir)? {
                path.call_method1("append", (dir,))?;
            }
            let find = py.import("tomii.export")?.getattr("find_exported")?;
            python
                .iter()
                .map(|name| {
                    let found = find.call1((name.as_str(),))?;
                    Ok(((*name).clone(), found.getattr("function")?.unbind(), found.getattr("variadic")?.extract()?))
                })
                .collect()
        })
        .map_err(|error| anyhow::anyhow!("{error}"))?;
        let kernels = PythonKernels::new(functions);
        let library = kernels.library();
        self.kept.lock().unwrap_or_else(|p| p.into_inner()).push(kernels);
        Ok(Some(library))
    }
}

/// The `tomii` command (`argv` with the program name first), with Python kernels found by name;
/// returns the exit status. The GIL is released while it runs.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> u8 {
    let provider = PythonKernelProvider { kept: std::sync::Mutex::new(Vec::new()) };
    py.detach(|| tomii_core::cli::app::main(argv.into_iter().map(Into::into), Some(&provider)))
}

/// The call a Python kernel serves, from inside it: `(node, instance, frame, slot, worker)`;
/// None outside a kernel call.
#[pyfunction]
fn call_context() -> Option<(String, u32, u64, u32, Option<u32>)> {
    python_kernels::current_call()
}

/// The runtime knob catalog (`tomii knobs --json`), as JSON text.
#[pyfunction]
fn knobs_json() -> PyResult<String> {
    serde_json::to_string(&tomii_core::knobs::LISTING).map_err(|e| TomiiError::new_err(e.to_string()))
}

/// The knobs `entry` ("run", "session" or "simulate") takes, in the catalog's order: `(name,
/// default as JSON text)`, the default being the entry's.
#[pyfunction]
fn knobs_taken(entry: &str) -> PyResult<Vec<(&'static str, String)>> {
    let entry = match entry {
        "run" => Entry::Run,
        "session" => Entry::Session,
        "simulate" => Entry::Simulate,
        other => {
            return Err(ConfigError::new_err(format!("entry {other:?}: give \"run\", \"session\" or \"simulate\"")));
        }
    };
    let default = |knob: &tomii_core::knobs::Knob| serde_json::to_string(&knob.default_for(entry));
    tomii_core::knobs::taken_by(entry)
        .map(|knob| Ok((knob.name, default(knob).map_err(|e| TomiiError::new_err(e.to_string()))?)))
        .collect()
}

/// The runtime knob catalog as an aligned table (`tomii knobs`).
#[pyfunction]
fn knobs_table() -> String {
    tomii_core::knobs::to_table()
}

/// A graph given as JSON text of either dialect, parsed and compiled as a run would, in the
/// current format: `(dialect, text, warnings)`; `workers` is what a Tomii 1.2 factor of
/// `"$workers"` becomes. A count naming a computed initialization is computed with the kernels of
/// `dylibs` and `python_kernels` (as in `prepare_run`), loaded only then, and written as its value.
/// Raises GraphError naming the source and the node, argument or field at fault.
#[pyfunction]
#[pyo3(signature = (graph_json, source, workers=None, dylibs=Vec::new(), python_kernels=Vec::new()))]
fn convert_json(
    graph_json: &str,
    source: &str,
    workers: Option<u32>,
    dylibs: Vec<PathBuf>,
    python_kernels: Vec<(String, Py<PyAny>, bool)>,
) -> PyResult<(&'static str, String, Vec<String>)> {
    let python = (!python_kernels.is_empty()).then(|| PythonKernels::new(python_kernels));
    let load = || {
        let mut kernels = tomii_core::plugin::KernelSet::load(&dylibs)?;
        if let Some(python) = &python {
            kernels.add(python.library())?;
        }
        Ok(kernels)
    };
    let mut kernels = None;
    let mut evaluate = tomii_core::launch::lazy_evaluator(load, &mut kernels);
    let converted = graph::convert_str_evaluating(source, graph_json, workers, &mut evaluate)
        .map_err(|e| GraphError::new_err(e.to_string()))?;
    Ok((converted.dialect.name(), converted.text, converted.warnings))
}

/// A graph's warnings as `tomii run` prints them: one line per kind, with a count and an example
/// node (graph/README.md, "Warnings").
#[pyfunction]
fn summarise_warnings(lines: Vec<String>) -> Vec<String> {
    graph::summarise_warnings(&lines)
}

/// Tomii 1.2's spellings of the run options, as JSON (`tomii_core::cli::legacy::spellings_json`):
/// the keywords that rename a knob, those with a meaning of their own, and those without effect.
#[pyfunction]
fn tomii_1_2_spellings() -> String {
    tomii_core::cli::legacy::spellings_json().to_string()
}

/// For a Tomii 1.2 run option without effect (`name`, Python's keyword), given `value` (None for a
/// flag): the warning it gets; None when `name` is not such an option. Raises ConfigError for a
/// value Tomii 1.2 refused.
#[pyfunction]
#[pyo3(signature = (name, value=None))]
fn tomii_1_2_without_effect(name: &str, value: Option<&str>) -> PyResult<Option<String>> {
    tomii_core::cli::legacy::without_effect(name, value).transpose().map_err(ConfigError::new_err)
}

/// What Tomii 1.2's `--inits` printed, for the graph `graph_json` compiled for `workers`
/// (`tomii_core::cli::inits::listing`). Raises GraphError as a run would.
#[pyfunction]
fn inits_listing(graph_json: &str, source: &str, workers: u32) -> PyResult<String> {
    // Listing before the run must not compute an initialization the run then computes again.
    let mut refuse = |pending: &graph::PendingInits<'_>, values: &mut Vec<Vec<tomii_types::kernel::Value>>| {
        Err(graph::InitFailure {
            init: pending.computed.get(values.len()).map(|init| init.name.clone()).unwrap_or_default(),
            message: "inits=True lists a graph before its run, and this graph's counts need its \
                      initializations computed: write the counts, or leave out inits"
                .to_owned(),
        })
    };
    let input = options::graph_input(source, graph_json, workers, &mut refuse)?;
    Ok(tomii_core::cli::inits::listing(&input.graph, workers))
}

/// The fields of a trace record, in their order in its bytes: `(name, NumPy type, unit)`, the
/// unit None for a count or an index. Python's `TRACE_DTYPE` is made of them.
#[pyfunction]
fn trace_fields() -> Vec<(&'static str, &'static str, Option<&'static str>)> {
    TaskRecord::FIELDS.iter().map(|field| (field.name, field.ty.numpy(), field.unit)).collect()
}

/// The columns of a trace CSV file, in its order.
#[pyfunction]
fn trace_csv_columns() -> Vec<&'static str> {
    engine::CSV_COLUMNS.to_vec()
}

/// The records of a trace's bytes (`RunResult.trace`), or ConfigError.
fn trace_records(data: &[u8]) -> PyResult<Vec<TaskRecord>> {
    TaskRecord::from_bytes(data)
        .ok_or_else(|| ConfigError::new_err(format!("a trace is records of {} bytes", TaskRecord::SIZE)))
}

/// The error of a trace that cannot be written to `path`: "PATH: cannot write the trace: REASON",
/// the reason as the OS words it.
fn cannot_write(path: &std::path::Path, error: &std::io::Error) -> PyErr {
    let text = error.to_string();
    let reason =
        error.raw_os_error().and_then(|code| text.strip_suffix(&format!(" (os error {code})"))).unwrap_or(&text);
    TomiiError::new_err(format!("{}: cannot write the trace: {reason}", path.display()))
}

/// Writes a run's trace, kept in memory (`data`: the bytes of its records; `names`: the graph's
/// node names), as a CSV file at `path`, as `trace=FILE` writes it during a run.
#[pyfunction]
fn write_trace_csv(path: PathBuf, data: &[u8], names: Vec<String>) -> PyResult<()> {
    let records = trace_records(data)?;
    let failed = |error: std::io::Error| cannot_write(&path, &error);
    let file = std::fs::File::create(&path).map_err(failed)?;
    let mut trace = CsvTrace::begin(std::io::BufWriter::new(file), &names).map_err(failed)?;
    trace.records(&records).map_err(failed)?;
    trace.finish().map(drop).map_err(failed)
}

/// Writes a run's trace, kept in memory (`data`: the bytes of its records; `names`: the graph's
/// node names), as a Chrome trace-event JSON file at `path`, with the lanes and the run's events
/// of its report (`report_json`), as `trace_format="chrome"` writes it during a run.
#[pyfunction]
fn write_chrome_trace(path: PathBuf, data: &[u8], names: Vec<String>, report_json: &str) -> PyResult<()> {
    let report: serde_json::Value =
        serde_json::from_str(report_json).map_err(|e| ConfigError::new_err(format!("the report is not JSON: {e}")))?;
    let records = trace_records(data)?;
    let count = |key: &str| report[key].as_u64().unwrap_or_default();
    let layout = ChromeLayout {
        node_names: names,
        workers: u32::try_from(count("workers")).unwrap_or(u32::MAX),
        slots: u32::try_from(count("slots")).unwrap_or(u32::MAX),
        tasks_per_frame: report["summary"]["total_tasks_per_stream"].as_u64().unwrap_or(u64::MAX),
        warmup_frames: count("frames_excluded"),
    };
    let failed =
        |error: std::io::Error| TomiiError::new_err(format!("{}: cannot write the trace: {error}", path.display()));
    let file = std::fs::File::create(&path).map_err(failed)?;
    let mut trace = ChromeTrace::begin(std::io::BufWriter::new(file), layout).map_err(failed)?;
    trace.records(&records).map_err(failed)?;
    trace.finish(Some(&report)).map(drop).map_err(failed)
}

/// The JSON schema of graph files (`tomii schema [--dialect D]`), as JSON text: `dialect` "tomii"
/// (the current format) or "tomii-1.2".
#[pyfunction]
#[pyo3(signature = (dialect="tomii"))]
fn schema_json(dialect: &str) -> PyResult<String> {
    let dialect = match dialect {
        "tomii" => graph::Dialect::Tomii,
        "tomii-1.2" => graph::Dialect::Tomii12,
        other => return Err(ConfigError::new_err(format!("dialect {other:?}: give \"tomii\" or \"tomii-1.2\""))),
    };
    serde_json::to_string_pretty(&graph::schema_of(dialect)).map_err(|e| TomiiError::new_err(e.to_string()))
}

#[pymodule]
fn _tomii(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(prepare_run, m)?)?;
    m.add_class::<PreparedRun>()?;
    m.add_class::<RunReport>()?;
    m.add_class::<python_scheduler::PyTask>()?;
    m.add_function(wrap_pyfunction!(knobs_json, m)?)?;
    m.add_function(wrap_pyfunction!(summarise_warnings, m)?)?;
    m.add_function(wrap_pyfunction!(knobs_table, m)?)?;
    m.add_function(wrap_pyfunction!(knobs_taken, m)?)?;
    m.add_function(wrap_pyfunction!(schema_json, m)?)?;
    m.add_function(wrap_pyfunction!(convert_json, m)?)?;
    m.add_function(wrap_pyfunction!(tomii_1_2_spellings, m)?)?;
    m.add_function(wrap_pyfunction!(tomii_1_2_without_effect, m)?)?;
    m.add_function(wrap_pyfunction!(inits_listing, m)?)?;
    m.add_function(wrap_pyfunction!(write_chrome_trace, m)?)?;
    m.add_function(wrap_pyfunction!(write_trace_csv, m)?)?;
    m.add_function(wrap_pyfunction!(trace_fields, m)?)?;
    m.add_function(wrap_pyfunction!(trace_csv_columns, m)?)?;
    m.add_function(wrap_pyfunction!(simulate::simulate_json, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(call_context, m)?)?;
    m.add_function(wrap_pyfunction!(send::send_packets, m)?)?;
    m.add_class::<session::NativeSession>()?;
    m.add_class::<session::NativeTicket>()?;
    Ok(())
}
