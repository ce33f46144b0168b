//! Schedulers written in Python (`tomii.Scheduler`): a scheduler table of this process whose
//! callbacks take the GIL and call the policy's methods. A run gets it as it gets any plugin
//! (`SchedulerPlugin::in_process`), so the host's checks of every decision, its SERIAL lock and its
//! call watchdog apply unchanged; nothing here checks a decision.
//!
//! Protocol (PLUGIN_SCHEDULER_API.md, "Schedulers in Python"):
//! 1. The binding registers the policy's spec (`tomii.scheduler._Spec`) for a run and gives the
//!    run the scheduler option [`POLICY_OPTION`] with its registration's number.
//! 2. `create` finds the spec by that number and calls its `start`, which makes the policy (a
//!    class is instantiated per run) and calls its `create` with the run's `SchedulerInit`; the
//!    state holds the policy.
//! 3. Every later call takes the GIL (`Python::attach`, on a thread that keeps its Python thread
//!    state), calls the policy's method, and releases the GIL. A Python exception or a panic fails
//!    the call with its traceback (`last_error`); the ABI's hooks have no status, so an exception
//!    in one fails the policy's next `push` or `pop`, or, when none follows, the run once it ended
//!    ([`PythonPolicy::hook_fault`]).
//!
//! Never write past the `max` descriptors a pop may write: a policy that returns more is reported
//! with its count, and the host refuses it.

use std::collections::HashMap;
use std::ffi::{CString, c_char, c_void};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyList;
use tomii_core::engine::RunError;
use tomii_core::launch::Settings;
use tomii_core::plugin::{PluginError, SchedulerPlugin};
use tomii_types::abi::*;
use tomii_types::{catch_panic_marked, write_error};

use super::python_kernels::{describe, keep_thread_state};

/// The scheduler option that tells `create` which registered policy a run uses.
pub const POLICY_OPTION: &str = "python_policy";

/// One task descriptor as a Python policy sees it: the host's `TomiiTask`, held by value, read
/// through getters (`tomii.Task`). A policy hands it back from `pop` as it got it.
#[pyclass(module = "tomii._tomii", name = "Task", frozen)]
pub struct PyTask(pub TomiiTask);

#[pymethods]
impl PyTask {
    /// Opaque identity of the task in its frame.
    #[getter]
    fn handle(&self) -> u64 {
        self.0.handle
    }
    /// Frame number from 0; older frames have smaller numbers.
    #[getter]
    fn frame(&self) -> u64 {
        self.0.frame
    }
    /// When the task became ready, ns since the run started (0 without task timing).
    #[getter]
    fn ready_ns(&self) -> u64 {
        self.0.ready_ns
    }
    /// Running mean of the node's kernel durations, ns (0 until known).
    #[getter]
    fn cost_ns(&self) -> u64 {
        self.0.cost_ns
    }
    /// Tasks on the longest path from this task to the end of its frame, itself included.
    #[getter]
    fn rank(&self) -> u64 {
        self.0.rank
    }
    /// The node's index in the graph.
    #[getter]
    fn node(&self) -> u32 {
        self.0.node
    }
    /// The instance's index in its node.
    #[getter]
    fn instance(&self) -> u32 {
        self.0.instance
    }
    /// The slot the frame occupies.
    #[getter]
    fn slot(&self) -> u32 {
        self.0.slot
    }
    /// The node's priority: larger runs first.
    #[getter]
    fn priority(&self) -> i32 {
        self.0.priority
    }
    /// First worker allowed to run the task.
    #[getter]
    fn worker_lo(&self) -> u32 {
        self.0.worker_lo
    }
    /// One past the last worker allowed to run the task.
    #[getter]
    fn worker_hi(&self) -> u32 {
        self.0.worker_hi
    }
    /// The worker that produced the input that made the task ready; None when the host did.
    #[getter]
    fn locality(&self) -> Option<u32> {
        worker_or_none(self.0.locality)
    }

    /// Whether `worker` may run the task: `worker_lo <= worker < worker_hi`.
    fn allows(&self, worker: u32) -> bool {
        (self.0.worker_lo..self.0.worker_hi).contains(&worker)
    }

    fn __repr__(&self) -> String {
        let t = &self.0;
        format!(
            "Task(handle={}, frame={}, node={}, instance={}, slot={}, priority={}, rank={}, workers={}..{})",
            t.handle, t.frame, t.node, t.instance, t.slot, t.priority, t.rank, t.worker_lo, t.worker_hi
        )
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyTask>().is_ok_and(|other| other.get().0 == self.0)
    }

    fn __hash__(&self) -> u64 {
        self.0.handle
    }
}

fn worker_or_none(worker: u32) -> Option<u32> {
    (worker != TOMII_NO_WORKER).then_some(worker)
}

/// What a policy's hooks raised first, shared by its registration and the states of its runs.
#[derive(Default)]
struct HookFailure {
    raised: AtomicBool,
    message: Mutex<Option<String>>,
}

impl HookFailure {
    fn record(&self, message: String) {
        self.message.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(message);
        self.raised.store(true, Ordering::Release);
    }

    fn message(&self) -> Option<String> {
        if !self.raised.load(Ordering::Acquire) {
            return None;
        }
        self.message.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A registered policy, as `create` finds it.
struct Registered {
    spec: Py<PyAny>,
    hooks: Arc<HookFailure>,
}

/// The policies registered for runs, by number.
fn registry() -> &'static Mutex<HashMap<u64, Registered>> {
    static REGISTRY: OnceLock<Mutex<HashMap<u64, Registered>>> = OnceLock::new();
    REGISTRY.get_or_init(Mutex::default)
}

/// A Python policy registered for the runs of one prepared run, simulation or session; it stays
/// findable by `create` until dropped.
pub struct PythonPolicy {
    id: u64,
    name: &'static str,
    origin: PathBuf,
    table: &'static TomiiSchedulerVtable,
    hooks: Arc<HookFailure>,
}

impl PythonPolicy {
    /// Registers `spec` (a `tomii.scheduler._Spec`: the policy, its `name`, its `origin`, the
    /// optional methods it `overrides` and whether it `needs_timing`).
    pub fn register(spec: &Bound<'_, PyAny>) -> PyResult<PythonPolicy> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let name: String = spec.getattr("name")?.extract()?;
        let origin: String = spec.getattr("origin")?.extract()?;
        let overrides: Vec<String> = spec.getattr("overrides")?.extract()?;
        let needs_timing: bool = spec.getattr("needs_timing")?.extract()?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let hooks = Arc::new(HookFailure::default());
        let registered = Registered { spec: spec.clone().unbind(), hooks: Arc::clone(&hooks) };
        registry().lock().unwrap_or_else(|p| p.into_inner()).insert(id, registered);
        let capabilities = Capabilities::of(&overrides, needs_timing);
        Ok(PythonPolicy { id, name: interned(&name), origin: PathBuf::from(origin), table: table(capabilities), hooks })
    }

    /// The scheduler plugin its runs use: the bridge's table, named after the policy.
    pub fn plugin(&self) -> Result<SchedulerPlugin, PluginError> {
        SchedulerPlugin::in_process(self.name, self.origin.clone(), self.table)
    }

    /// Makes `settings` run this policy: the option that tells `create` which one.
    pub fn select(&self, settings: &mut Settings) {
        settings.run.scheduler_options.push((POLICY_OPTION.to_owned(), self.id.to_string()));
    }

    /// The failure of a run that ended while a hook's exception had not yet failed a push or a
    /// pop: the hooks have no status of their own.
    pub fn hook_fault(&self) -> Option<RunError> {
        let violation = self.hooks.message()?;
        Some(RunError::SchedulerFault { scheduler: self.name.to_owned(), violation })
    }
}

impl Drop for PythonPolicy {
    fn drop(&mut self) {
        let removed = registry().lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
        drop(removed); // the spec's reference, released outside the registry's lock
    }
}

/// The scheduler a run of `settings` uses: `policy`'s bridge when one is given, else the one the
/// options name.
pub fn scheduler_of(settings: &Settings, policy: Option<&PythonPolicy>) -> Result<SchedulerPlugin, PluginError> {
    match policy {
        Some(policy) => policy.plugin(),
        None => settings.scheduler(),
    }
}

/// `name` as a string that lives for the process, each distinct name allocated once (a plugin's
/// name is static).
fn interned(name: &str) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(known) = names.iter().find(|known| **known == name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.push(leaked);
    leaked
}

/// Which optional callbacks a policy's table has: those of the methods it overrides, so that a
/// policy pays for no hook it does not use.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Capabilities {
    task_started: bool,
    task_completed: bool,
    frame_started: bool,
    frame_completed: bool,
    push_keep: bool,
    set_knob: bool,
    stats: bool,
    needs_timing: bool,
}

impl Capabilities {
    fn of(overrides: &[String], needs_timing: bool) -> Capabilities {
        let has = |method: &str| overrides.iter().any(|name| name == method);
        Capabilities {
            task_started: has("task_started"),
            task_completed: has("task_completed"),
            frame_started: has("frame_started"),
            frame_completed: has("frame_completed"),
            push_keep: has("push_keep"),
            set_knob: has("set_knob"),
            stats: has("stats"),
            needs_timing,
        }
    }
}

/// The bridge's table for `capabilities`, made once per distinct set and kept for the process
/// (the host keeps `&'static` tables).
fn table(capabilities: Capabilities) -> &'static TomiiSchedulerVtable {
    static TABLES: Mutex<Vec<(Capabilities, &'static TomiiSchedulerVtable)>> = Mutex::new(Vec::new());
    let mut tables = TABLES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, table)) = tables.iter().find(|(known, _)| *known == capabilities) {
        return table;
    }
    let c = capabilities;
    let flags = TOMII_SCHED_SERIAL | if c.needs_timing { TOMII_SCHED_NEEDS_TIMING } else { 0 };
    let made: &'static TomiiSchedulerVtable = Box::leak(Box::new(TomiiSchedulerVtable {
        header: TomiiAbiHeader {
            abi_major: TOMII_SCHED_ABI_MAJOR,
            abi_minor: TOMII_SCHED_ABI_MINOR,
            struct_size: size_of::<TomiiSchedulerVtable>() as u32,
            flags,
            name: c"python".as_ptr(),
        },
        create: Some(create),
        destroy: Some(destroy),
        push: Some(push),
        pop: Some(pop),
        task_started: c.task_started.then_some(task_started as _),
        task_completed: c.task_completed.then_some(task_completed as _),
        frame_started: c.frame_started.then_some(frame_started as _),
        frame_completed: c.frame_completed.then_some(frame_completed as _),
        set_knob: c.set_knob.then_some(set_knob as _),
        describe_knobs: None,
        stats: c.stats.then_some(stats as _),
        last_error: Some(last_error),
        push_keep: c.push_keep.then_some(push_keep as _),
        keep_gate: None,
    }));
    tables.push((capabilities, made));
    made
}

/// One run's policy: the object whose methods the callbacks call.
struct PolicyState {
    policy: Py<PyAny>,
    /// The message of the last failed call, for `last_error`.
    last_error: Mutex<CString>,
    hooks: Arc<HookFailure>,
}

impl PolicyState {
    /// Runs `body` with the GIL and the policy. A Python exception or a panic is the call's
    /// failure, as its traceback.
    fn call<T>(&self, body: impl FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<T>) -> Result<T, String> {
        keep_thread_state();
        catch_panic_marked(|| Python::attach(|py| body(py, self.policy.bind(py)).map_err(|error| describe(py, &error))))
            .and_then(|result| result)
    }

    /// A push or pop: fails with an earlier hook's exception first, then as `call` does; the
    /// status, with the message kept for `last_error`.
    fn decide<T>(
        &self,
        body: impl FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<T>,
        deliver: impl FnOnce(T),
    ) -> i32 {
        let outcome = match self.hooks.message() {
            Some(message) => Err(message),
            None => self.call(body),
        };
        match outcome {
            Ok(value) => {
                deliver(value);
                TOMII_OK
            }
            Err(message) => {
                let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
                *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = text;
                TOMII_ERR
            }
        }
    }

    /// A hook, which has no status: its exception is recorded, to fail the next push or pop.
    fn hook(&self, name: &str, body: impl FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<()>) {
        if let Err(message) = self.call(body) {
            self.hooks.record(format!("{name} failed: {message}"));
        }
    }
}

/// The state behind a callback's pointer.
///
/// # Safety
/// `state` must come from `create` and not yet be destroyed.
unsafe fn state<'a>(state: *mut c_void) -> &'a PolicyState {
    // SAFETY: per the caller.
    unsafe { &*state.cast::<PolicyState>() }
}

/// The `n` descriptors at `tasks` as a list of `tomii.Task`.
///
/// # Safety
/// `tasks` must point at `n` descriptors valid for the call.
unsafe fn task_list<'py>(py: Python<'py>, tasks: *const TomiiTask, n: usize) -> PyResult<Bound<'py, PyList>> {
    let tasks = if n == 0 {
        &[][..]
    } else {
        // SAFETY: per the caller.
        unsafe { std::slice::from_raw_parts(tasks, n) }
    };
    PyList::new(py, tasks.iter().map(|task| PyTask(*task)))
}

/// The text of the scheduler options at `knobs` (`count` of them): the policy's registration
/// number and the user's options.
///
/// # Safety
/// `knobs` must point at `count` options with NUL-terminated keys and values.
unsafe fn read_options(knobs: *const TomiiKnob, count: usize) -> (Option<u64>, Vec<(String, String)>) {
    let text = |ptr: *const c_char| {
        // SAFETY: NUL-terminated, per the caller.
        unsafe { std::ffi::CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
    };
    let mut id = None;
    let mut options = Vec::new();
    for index in 0..count {
        // SAFETY: `count` options, per the caller.
        let knob = unsafe { &*knobs.add(index) };
        let (key, value) = (text(knob.key), text(knob.value));
        if key == POLICY_OPTION {
            id = value.parse().ok();
        } else {
            options.push((key, value));
        }
    }
    (id, options)
}

/// The nodes of a create's init: `(name, factor, priority, worker_lo, worker_hi)`.
///
/// # Safety
/// `init.nodes` must point at `init.node_count` summaries with NUL-terminated names.
unsafe fn read_nodes(init: &TomiiSchedInit) -> Vec<(String, u32, i32, u32, u32)> {
    (0..init.node_count as usize)
        .map(|index| {
            // SAFETY: per the caller.
            let node = unsafe { &*init.nodes.add(index) };
            // SAFETY: per the caller.
            let name = unsafe { std::ffi::CStr::from_ptr(node.name) }.to_string_lossy().into_owned();
            (name, node.factor, node.priority, node.worker_lo, node.worker_hi)
        })
        .collect()
}

unsafe extern "C" fn create(init: *const TomiiSchedInit, state: *mut *mut c_void, err: TomiiErrorBuf) -> i32 {
    // SAFETY: the host's init block, valid for the call.
    let init = unsafe { &*init };
    // SAFETY: the init block's arrays, valid for the call.
    let ((id, options), nodes) = unsafe { (read_options(init.knobs, init.knob_count), read_nodes(init)) };
    keep_thread_state();
    let made = catch_panic_marked(|| {
        Python::attach(|py| -> Result<PolicyState, String> {
            let registered = id.and_then(|id| {
                let registry = registry().lock().unwrap_or_else(|p| p.into_inner());
                registry.get(&id).map(|found| (found.spec.clone_ref(py), Arc::clone(&found.hooks)))
            });
            let Some((spec, hooks)) = registered else {
                return Err(format!(
                    "no Python policy is registered as {POLICY_OPTION}={}: the bridge runs policies given \
                     to run_graph, simulate or Session, not by name",
                    id.map_or_else(|| "(none)".to_owned(), |id| id.to_string())
                ));
            };
            let run = (init.workers, init.slots, init.frames, init.tasks_per_frame, init.max_ready);
            let policy = spec
                .call_method1(py, intern!(py, "start"), (run, nodes, options))
                .map_err(|error| describe(py, &error))?;
            Ok(PolicyState { policy, last_error: Mutex::new(CString::default()), hooks })
        })
    })
    .and_then(|made| made);
    match made {
        Ok(made) => {
            // SAFETY: `state` is the host's out-pointer.
            unsafe { *state = Box::into_raw(Box::new(made)).cast() };
            TOMII_OK
        }
        Err(message) => {
            // SAFETY: the host's error buffer, valid for the call.
            unsafe { write_error(err, &message) };
            TOMII_ERR
        }
    }
}

unsafe extern "C" fn destroy(state: *mut c_void) {
    keep_thread_state();
    // SAFETY: the state `create` made; every other call has returned.
    let state = unsafe { Box::from_raw(state.cast::<PolicyState>()) };
    // The policy's reference is released with the GIL held.
    let _ = catch_panic_marked(|| Python::attach(|_py| drop(state)));
}

unsafe extern "C" fn push(state: *mut c_void, worker: u32, tasks: *const TomiiTask, n: usize) -> i32 {
    // SAFETY: a live state.
    let state = unsafe { self::state(state) };
    let worker = worker_or_none(worker);
    state.decide(
        |py, policy| {
            // SAFETY: `n` descriptors, valid for the call.
            let tasks = unsafe { task_list(py, tasks, n)? };
            policy.call_method1(intern!(py, "push"), (worker, tasks)).map(drop)
        },
        drop,
    )
}

unsafe extern "C" fn push_keep(
    state: *mut c_void,
    worker: u32,
    tasks: *const TomiiTask,
    n: usize,
    kept: *mut usize,
) -> i32 {
    // SAFETY: a live state.
    let state = unsafe { self::state(state) };
    state.decide(
        |py, policy| {
            // SAFETY: `n` descriptors, valid for the call.
            let tasks = unsafe { task_list(py, tasks, n)? };
            let chosen = policy.call_method1(intern!(py, "push_keep"), (worker, tasks))?;
            if chosen.is_none() {
                return Ok(TOMII_KEEP_NONE);
            }
            chosen.extract::<usize>().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "push_keep returned {chosen}: return the index of the task kept, or None"
                ))
            })
        },
        // SAFETY: the host's out-pointer.
        |index| unsafe { *kept = index },
    )
}

unsafe extern "C" fn pop(state: *mut c_void, worker: u32, out: *mut TomiiTask, max: usize, n_out: *mut usize) -> i32 {
    // SAFETY: a live state.
    let state = unsafe { self::state(state) };
    state.decide(
        |py, policy| {
            let popped = policy.call_method1(intern!(py, "pop"), (worker, max))?;
            let out = if max == 0 {
                &mut [][..]
            } else {
                // SAFETY: the host lends `max` descriptors.
                unsafe { std::slice::from_raw_parts_mut(out, max) }
            };
            write_popped(&popped, out)
        },
        // SAFETY: the host's out-pointer.
        |count| unsafe { *n_out = count },
    )
}

/// Writes what a policy's `pop` returned (None, a `Task`, or an iterable of them) into `out`, as
/// many as fit, and returns how many it returned: more than fit is the host's to refuse.
fn write_popped(popped: &Bound<'_, PyAny>, out: &mut [TomiiTask]) -> PyResult<usize> {
    if popped.is_none() {
        return Ok(0);
    }
    if let Ok(task) = popped.cast::<PyTask>() {
        if let Some(first) = out.first_mut() {
            *first = task.get().0;
        }
        return Ok(1);
    }
    let not_tasks = |what: &Bound<'_, PyAny>| {
        let kind = what.get_type().name().map_or_else(|_| "?".to_owned(), |name| name.to_string());
        pyo3::exceptions::PyTypeError::new_err(format!(
            "pop returned a {kind}: return a tomii.Task the policy was pushed, a list of them, or None"
        ))
    };
    let items = popped.try_iter().map_err(|_| not_tasks(popped))?;
    let mut count = 0;
    for item in items {
        let item = item?;
        let task = item.cast::<PyTask>().map_err(|_| not_tasks(&item))?;
        if let Some(slot) = out.get_mut(count) {
            *slot = task.get().0;
        }
        count += 1;
    }
    Ok(count)
}

unsafe extern "C" fn task_started(state: *mut c_void, worker: u32, task: *const TomiiTask) {
    // SAFETY: a live state; the host's descriptor, valid for the call.
    let (state, task) = unsafe { (self::state(state), *task) };
    state.hook("task_started", |py, policy| {
        policy.call_method1(intern!(py, "task_started"), (worker, PyTask(task))).map(drop)
    });
}

unsafe extern "C" fn task_completed(state: *mut c_void, worker: u32, task: *const TomiiTask, duration_ns: u64) {
    // SAFETY: a live state; the host's descriptor, valid for the call.
    let (state, task) = unsafe { (self::state(state), *task) };
    state.hook("task_completed", |py, policy| {
        policy.call_method1(intern!(py, "task_completed"), (worker, PyTask(task), duration_ns)).map(drop)
    });
}

unsafe extern "C" fn frame_started(state: *mut c_void, frame: u64, slot: u32) {
    // SAFETY: a live state.
    let state = unsafe { self::state(state) };
    state
        .hook("frame_started", |py, policy| policy.call_method1(intern!(py, "frame_started"), (frame, slot)).map(drop));
}

unsafe extern "C" fn frame_completed(state: *mut c_void, frame: u64, slot: u32, latency_ns: u64) {
    // SAFETY: a live state.
    let state = unsafe { self::state(state) };
    state.hook("frame_completed", |py, policy| {
        policy.call_method1(intern!(py, "frame_completed"), (frame, slot, latency_ns)).map(drop)
    });
}

unsafe extern "C" fn set_knob(state: *mut c_void, key: *const c_char, value: *const c_char, err: TomiiErrorBuf) -> i32 {
    // SAFETY: a live state; NUL-terminated strings valid for the call.
    let (state, key, value) = unsafe {
        (
            self::state(state),
            std::ffi::CStr::from_ptr(key).to_string_lossy(),
            std::ffi::CStr::from_ptr(value).to_string_lossy(),
        )
    };
    keep_thread_state();
    // A refusal is the policy's answer, not a crash: its exception's text, without the traceback.
    let outcome = catch_panic_marked(|| {
        Python::attach(|py| {
            let policy = state.policy.bind(py);
            policy.call_method1(intern!(py, "set_knob"), (&*key, &*value)).map(drop).map_err(|error| error.to_string())
        })
    })
    .and_then(|outcome| outcome);
    match outcome {
        Ok(()) => TOMII_OK,
        Err(message) => {
            // SAFETY: the host's error buffer, valid for the call.
            unsafe { write_error(err, &message) };
            TOMII_ERR
        }
    }
}

unsafe extern "C" fn stats(state: *mut c_void, buf: *mut c_char, cap: usize) -> usize {
    // SAFETY: a live state.
    let state = unsafe { self::state(state) };
    let text = state
        .call(|py, policy| {
            let figures = policy.call_method0(intern!(py, "stats"))?;
            let text = py.import(intern!(py, "json"))?.call_method1(intern!(py, "dumps"), (figures,))?;
            text.extract::<String>()
        })
        .unwrap_or_else(|message| serde_json::json!({ "error": format!("stats failed: {message}") }).to_string());
    // SAFETY: the host's buffer of `cap` bytes.
    unsafe { write_error(TomiiErrorBuf { ptr: buf, cap }, &text) };
    text.len()
}

unsafe extern "C" fn last_error(state: *mut c_void) -> *const c_char {
    // SAFETY: a live state.
    let state = unsafe { self::state(state) };
    // The text stays where it is until the next failing call replaces it (the ABI's promise).
    state.last_error.lock().unwrap_or_else(|p| p.into_inner()).as_ptr()
}
