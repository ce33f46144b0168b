//! `tomii._tomii.Session` and `Ticket`: the programmatic source (`tomii_core::engine::Session`)
//! for Python. Wiring only: inputs become kernel values as Python kernels' results do (NumPy
//! arrays without a copy), outputs come back as `PreparedRun.run`'s do, and the GIL is released while
//! the session starts, while `submit` waits for a slot, while a ticket waits, and while `close`
//! drains.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyList;
use tomii_core::engine::{Session, SubmitError, Ticket};
use tomii_core::graph::CompiledGraph;
use tomii_core::knobs::Entry;
use tomii_core::launch::Launch;

use super::python_kernels::{PythonKernels, value_from_python};
use super::python_scheduler::{self, PythonPolicy};
use super::{ConfigError, TomiiError, output, plugin_error, run_error};

/// How long a wait Python may interrupt blocks between looks at pending signals: Ctrl-C while a
/// program waits for a slot, a frame or the close raises KeyboardInterrupt within this.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// Waits until `ready(slice)` says so, calling it with slices of at most [`SIGNAL_CHECK`] without
/// the GIL, and checking for signals between them (a Ctrl-C raises KeyboardInterrupt); false when
/// `timeout` (`None`: without limit) passed first.
fn wait_interruptibly(
    py: Python<'_>,
    timeout: Option<Duration>,
    ready: impl Fn(Duration) -> bool + Sync,
) -> PyResult<bool> {
    let deadline = timeout.map(|timeout| Instant::now() + timeout);
    loop {
        let slice = deadline
            .map_or(SIGNAL_CHECK, |deadline| deadline.saturating_duration_since(Instant::now()).min(SIGNAL_CHECK));
        if py.detach(|| ready(slice)) {
            return Ok(true);
        }
        py.check_signals()?;
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            return Ok(false);
        }
    }
}

/// A Python timeout in seconds: None waits without limit; negative is an error.
fn timeout(seconds: Option<f64>) -> PyResult<Option<Duration>> {
    match seconds {
        None => Ok(None),
        Some(s) if s.is_finite() && s >= 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(ConfigError::new_err(format!("timeout {s}: give a number of seconds ≥ 0, or None"))),
    }
}

/// A run kept open: started once, fed frame by frame.
#[pyclass(module = "tomii._tomii")]
pub struct NativeSession {
    /// None once closed.
    session: Option<Session>,
    graph: Arc<CompiledGraph>,
    /// The Python kernels the graph calls; kept alive while the session runs.
    python: Arc<PythonKernels>,
    /// The Python policy that schedules it, if one does; registered while the session lives.
    _policy: Option<PythonPolicy>,
}

#[pymethods]
impl NativeSession {
    /// Starts the run of `graph_json` with `options`, `[(knob, value), ...]` by the knob catalog's
    /// names (those a session takes; see `prepare_run`); returns once the workers wait for frames.
    /// `scheduler_policy`, a Python policy's spec, schedules it instead of the options' scheduler.
    #[new]
    #[pyo3(signature = (graph_json, *, source, options, python_kernels, scheduler_policy=None))]
    fn new(
        py: Python<'_>,
        graph_json: &str,
        source: &str,
        options: Vec<(String, Bound<'_, PyAny>)>,
        python_kernels: Vec<(String, Py<PyAny>, bool)>,
        scheduler_policy: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut settings = super::options::settings(Entry::Session, options)?;
        let policy = scheduler_policy.map(|spec| PythonPolicy::register(&spec)).transpose()?;
        if let Some(policy) = &policy {
            policy.select(&mut settings);
        }
        let python = Arc::new(PythonKernels::new(python_kernels));
        // Loaded before the graph compiles: a count may name a computed initialization, computed
        // then, once, and taken by the session (graph README, "Computed counts").
        let kernels = Arc::new(settings.kernels(Some(python.library())).map_err(plugin_error)?);
        let mut evaluate = tomii_core::engine::evaluator(&kernels);
        let input = super::options::graph_input(source, graph_json, settings.run.workers, &mut evaluate)?;
        let graph = Arc::clone(&input.graph);
        let launch = Launch::new(input, settings).map_err(|e| ConfigError::new_err(e.to_string()))?;
        let started = py.detach(|| {
            let settings = launch.settings();
            let scheduler = python_scheduler::scheduler_of(settings, policy.as_ref()).map_err(Err)?;
            launch.session(Arc::clone(&kernels), Arc::new(scheduler)).map_err(Ok)
        });
        match started {
            Ok(session) => Ok(NativeSession { session: Some(session), graph, python, _policy: policy }),
            Err(Ok(error)) => Err(run_error(py, error, &python)),
            Err(Err(error)) => Err(plugin_error(error)),
        }
    }

    /// The graph's inputs, in the order `submit` takes their values: `(name, factor)`.
    fn inputs(&self) -> Vec<(String, u32)> {
        self.graph.nodes.iter().filter(|node| node.input).map(|node| (node.name.clone(), node.factor)).collect()
    }

    /// Hands in one frame: one value per input instance, in `inputs()` order. Waits up to
    /// `timeout` seconds for a free slot (None: without limit; 0: not at all); raises
    /// `SessionBusy` when none freed in time, `SessionClosed` when the session has ended.
    #[pyo3(signature = (values, timeout=None))]
    fn submit(&self, py: Python<'_>, values: Vec<Bound<'_, PyAny>>, timeout: Option<f64>) -> PyResult<NativeTicket> {
        let session = self.open()?;
        let values = values.iter().map(value_from_python).collect::<PyResult<Vec<_>>>()?;
        let wait = self::timeout(timeout)?;
        // A free slot first, waited for so that Ctrl-C interrupts the wait; `submit` then rarely
        // waits (another thread may take the slot meanwhile, and it waits for the next).
        let started = Instant::now();
        wait_interruptibly(py, wait, |slice| session.wait_for_slot(slice))?;
        let wait = wait.map(|wait| wait.saturating_sub(started.elapsed()));
        // Dropping refused values releases Python references: that needs the GIL back.
        let submitted = py.detach(|| session.submit(values, wait).map_err(|e| (e.to_string(), e)));
        match submitted {
            Ok(ticket) => Ok(NativeTicket { ticket, graph: Arc::clone(&self.graph) }),
            Err((text, SubmitError::Busy { .. })) => Err(super::SessionBusy::new_err(text)),
            Err((text, SubmitError::Ended(_))) => Err(super::SessionClosed::new_err(text)),
            Err((text, SubmitError::Inputs(_))) => Err(ConfigError::new_err(text)),
        }
    }

    /// Frames handed in and not yet done.
    fn in_flight(&self) -> u64 {
        self.session.as_ref().map_or(0, Session::in_flight)
    }

    /// Changes one of the scheduler's options while the session runs; raises ConfigError with the
    /// scheduler's message when it refuses. The GIL is released while a worker makes the change.
    fn set_scheduler_option(&self, py: Python<'_>, key: &str, value: &str) -> PyResult<()> {
        let session = self.session.as_ref().ok_or_else(|| super::SessionClosed::new_err("the session is closed"))?;
        py.detach(|| session.set_scheduler_option(key, value)).map_err(super::ConfigError::new_err)
    }

    /// Whether the session still takes frames.
    fn is_open(&self) -> bool {
        self.session.as_ref().is_some_and(Session::is_open)
    }

    /// Takes no more frames and leaves the frames in flight and the run's threads to the
    /// process's exit: for an interpreter that exits while a frame of an unclosed session is
    /// stuck. The session is closed afterwards (no report).
    fn abandon(&mut self) {
        if let Some(session) = self.session.take() {
            session.stop_taking_frames();
            std::mem::forget(session);
        }
    }

    /// Takes no more frames, waits for those in flight, and returns the report as JSON text;
    /// raises the run's error if it failed.
    fn close(&mut self, py: Python<'_>) -> PyResult<String> {
        let open = self.open()?;
        open.stop_taking_frames();
        // The frames in flight drain while Ctrl-C can interrupt the wait (the session then stays
        // open, taking no frames; closing again goes on waiting).
        let drained = || open.in_flight() == 0 || open.ended_because().is_some();
        wait_interruptibly(py, None, |slice| {
            let until = Instant::now() + slice;
            while !drained() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            drained()
        })?;
        let session = self.session.take().ok_or_else(|| super::SessionClosed::new_err("the session is closed"))?;
        let outcome = py.detach(|| session.close()).map_err(|error| run_error(py, error, &self.python))?;
        serde_json::to_string(&outcome.report).map_err(|e| TomiiError::new_err(e.to_string()))
    }
}

impl NativeSession {
    fn open(&self) -> PyResult<&Session> {
        self.session.as_ref().ok_or_else(|| super::SessionClosed::new_err("the session is closed"))
    }
}

impl Drop for NativeSession {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            // Draining may run Python kernels: without the GIL held here.
            Python::attach(|py| py.detach(|| drop(session)));
        }
    }
}

/// One frame handed in.
#[pyclass(module = "tomii._tomii")]
pub struct NativeTicket {
    ticket: Ticket,
    graph: Arc<CompiledGraph>,
}

#[pymethods]
impl NativeTicket {
    /// Waits up to `timeout` seconds (None: without limit) for the frame; returns `(frame number,
    /// latency in µs, [(sink node, instance, value), ...])`, or None when it has not come in time.
    /// Raises the run's error when the frame was lost. The result is handed out once.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<(u64, f64, Py<PyAny>)>> {
        let wait = self::timeout(timeout)?;
        let result = std::sync::Mutex::new(None);
        wait_interruptibly(py, wait, |slice| {
            let got = self.ticket.wait(Some(slice));
            let came = got.is_some();
            *result.lock().unwrap_or_else(|p| p.into_inner()) = got;
            came
        })?;
        let Some(result) = result.into_inner().unwrap_or_else(|p| p.into_inner()) else { return Ok(None) };
        let outputs =
            result.outputs.map_err(|why| TomiiError::new_err(format!("the frame did not complete: {why}")))?;
        let rows = PyList::empty(py);
        for (node, instance, value) in outputs {
            rows.append((&self.graph.nodes[node as usize].name, instance, output(py, value)?))?;
        }
        Ok(Some((result.frame, result.latency_ns as f64 / 1e3, rows.into_any().unbind())))
    }

    /// Whether the frame's result has come (and not been taken).
    fn done(&self) -> bool {
        self.ticket.is_done()
    }
}
