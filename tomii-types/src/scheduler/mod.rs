//! The safe Rust side of the scheduler ABI: implement [`Scheduler`], then call
//! [`export_scheduler!`](crate::export_scheduler) once in the plugin crate.
//!
//! The shims here are the only code between the host and a Rust scheduler. Each one checks its
//! pointers, catches panics and turns results into status codes; none allocates on the push/pop
//! path unless the scheduler reports an error. The submodules hold safe building blocks that
//! several schedulers share: [`RangeClasses`], [`ClassHeaps`], [`HandleRing`], [`HandleDeque`], [`fill`] and, behind the cargo
//! feature `testing`, the `testing` harness. They never touch the ABI.

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::atomic::AtomicUsize;

use crate::abi::{
    TOMII_ERR, TOMII_ERR_INVALID, TOMII_ERR_PANIC, TOMII_KEEP_NONE, TOMII_OK, TOMII_SCHED_ABI_MAJOR,
    TOMII_SCHED_ABI_MINOR, TOMII_SCHED_POP_HANDLES, TomiiAbiHeader, TomiiErrorBuf, TomiiKeepGate, TomiiKnobDesc,
    TomiiSchedInit, TomiiSchedulerVtable, TomiiTask,
};
use crate::errbuf::{catch_panic, catch_panic_marked, write_error};

pub use crate::abi::{TOMII_NO_WORKER as NO_WORKER, TomiiTask as Task};
pub use deque::{HandleDeque, Owner as DequeOwner};
pub use fill::{fair_share, fill, fill_handles};
pub use heaps::ClassHeaps;
pub use ranges::RangeClasses;
pub use ring::HandleRing;

mod deque;
mod fill;
mod heaps;
mod ranges;
mod ring;
// Test helpers for scheduler crates, behind the cargo feature `testing`: enable it in the
// `[dev-dependencies]` entry of `tomii-types`. Never part of a plugin.
#[cfg(any(test, feature = "testing"))]
pub mod testing;

/// One node of the graph, as the scheduler sees it at create time.
#[derive(Clone, Debug)]
pub struct NodeSummary {
    pub name: String,
    pub factor: u32,
    pub priority: i32,
    /// Workers allowed to run this node's tasks: `worker_lo .. worker_hi`.
    pub worker_lo: u32,
    pub worker_hi: u32,
}

/// What a scheduler learns at create time, copied out of the host's [`TomiiSchedInit`].
#[derive(Clone, Debug)]
pub struct InitInfo {
    pub workers: u32,
    pub slots: u32,
    pub tasks_per_frame: u64,
    /// A safe queue capacity: the most tasks that can be ready and not yet popped at once.
    pub max_ready: u64,
    /// Frames the run executes, 0 when unbounded.
    pub frames: u64,
    pub nodes: Vec<NodeSummary>,
    /// The user's `key=value` parameters for this scheduler, in the order given.
    pub knobs: Vec<(String, String)>,
}

impl InitInfo {
    /// The value given for `key`, if any (the last one wins).
    pub fn knob(&self, key: &str) -> Option<&str> {
        self.knobs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Parses the value given for `key`, or returns `default` when it was not given.
    pub fn knob_or<T: std::str::FromStr>(&self, key: &str, default: T) -> Result<T, String> {
        match self.knob(key) {
            None => Ok(default),
            Some(text) => text.parse().map_err(|_| format!("invalid value {text:?} for scheduler option {key:?}")),
        }
    }

    /// Fails, naming the valid options, if an option was given that `known` does not describe.
    /// The export shim calls it before `Scheduler::create`, with the scheduler's `KNOBS`.
    pub fn check_knobs(&self, known: &[TomiiKnobDesc]) -> Result<(), String> {
        // SAFETY: knob descriptions hold static NUL-terminated strings (see `knob`).
        let names: Vec<String> = known.iter().map(|k| unsafe { text(k.name) }).collect();
        match self.knobs.iter().find(|(key, _)| !names.contains(key)) {
            None => Ok(()),
            Some((key, _)) if names.is_empty() => Err(format!("it takes no options, but {key:?} was given")),
            Some((key, _)) => Err(format!("unknown option {key:?}; its options are: {}", names.join(", "))),
        }
    }

    /// # Safety
    /// `raw` and every pointer in it must be valid as the ABI describes.
    unsafe fn from_raw(raw: &TomiiSchedInit) -> InitInfo {
        // SAFETY: the caller guarantees the arrays have the stated lengths and NUL-terminated strings.
        let nodes = unsafe { slice_or_empty(raw.nodes, raw.node_count as usize) }
            .iter()
            .map(|n| NodeSummary {
                name: unsafe { text(n.name) },
                factor: n.factor,
                priority: n.priority,
                worker_lo: n.worker_lo,
                worker_hi: n.worker_hi,
            })
            .collect();
        // SAFETY: as above.
        let knobs = unsafe { slice_or_empty(raw.knobs, raw.knob_count) }
            .iter()
            .map(|k| unsafe { (text(k.key), text(k.value)) })
            .collect();
        InitInfo {
            workers: raw.workers,
            slots: raw.slots,
            tasks_per_frame: raw.tasks_per_frame,
            max_ready: raw.max_ready,
            frames: raw.frames,
            nodes,
            knobs,
        }
    }
}

/// A scheduler written in safe Rust.
///
/// Every method may be called concurrently from several workers unless `FLAGS` contains
/// [`SERIAL`](crate::abi::TOMII_SCHED_SERIAL). The host verifies every task handed out by `pop`:
/// returning a task that was not pushed, or returning one twice, stops the run.
pub trait Scheduler: Send + Sync + Sized + 'static {
    /// Name shown in reports and errors.
    const NAME: &'static CStr;
    /// `TOMII_SCHED_*` capability flags.
    const FLAGS: u32 = 0;
    /// Descriptions of this scheduler's own parameters (see [`knob`]).
    const KNOBS: &'static [TomiiKnobDesc] = &[];
    /// Set to have `task_started` and `task_completed` called; off by default, since they cost a
    /// call per task.
    const TASK_HOOKS: bool = false;
    /// Set to have the host call [`push_keep`](Self::push_keep) instead of `push` when a worker
    /// pushes what its completion made ready (ABI v1.2).
    const KEEPS: bool = false;
    /// Set to have `frame_started` and `frame_completed` called.
    const FRAME_HOOKS: bool = false;

    /// Builds the state for one run.
    fn create(init: &InitInfo) -> Result<Self, String>;
    /// Takes ownership of ready tasks; `worker` is `None` when the host itself pushes.
    fn push(&self, worker: Option<u32>, tasks: &[Task]) -> Result<(), String>;
    /// Moves at most `out.len()` tasks for `worker` into `out` and returns how many. With
    /// [`TOMII_SCHED_POP_HANDLES`] in `FLAGS`, writing each task's `handle` is enough
    /// ([`fill_handles`]).
    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String>;
    /// With [`KEEPS`](Self::KEEPS): takes ownership of ready tasks pushed by `worker`, which asks
    /// for work right after, and may keep one for `worker` to run next instead of queueing it:
    /// returns its index in `tasks`. The host then runs it on `worker` as if `pop` had handed it
    /// out (it is verified the same way, and the task hooks hear of it). `None` queues them all,
    /// as `push` does.
    fn push_keep(&self, worker: u32, tasks: &[Task]) -> Result<Option<usize>, String> {
        self.push(Some(worker), tasks).map(|()| None)
    }
    /// With [`KEEPS`](Self::KEEPS), when `push_keep`'s rule for `worker` is "keep the first task
    /// `worker` may run when nothing waits in a queue it serves": the counters of that queue,
    /// through which the host applies the rule itself, without a call (ABI v1.4, [`KeepGate`]).
    /// Asked once per worker, before any push. `None` (the default): `push_keep` decides.
    fn keep_gate(&self, _worker: u32) -> Option<KeepGate<'_>> {
        None
    }

    fn task_started(&self, _worker: u32, _task: &Task) {}
    fn task_completed(&self, _worker: u32, _task: &Task, _duration_ns: u64) {}
    fn frame_started(&self, _frame: u64, _slot: u32) {}
    fn frame_completed(&self, _frame: u64, _slot: u32, _latency_ns: u64) {}
    /// Changes a parameter while running.
    fn set_knob(&self, key: &str, _value: &str) -> Result<(), String> {
        Err(format!("scheduler {:?} has no option {key:?}", Self::NAME))
    }
    /// Statistics as a JSON object.
    fn stats(&self) -> String {
        "{}".to_owned()
    }
}

/// Two counters of a queue, through which the host sees whether anything waits in it without a
/// call ([`Scheduler::keep_gate`]): of the tasks queued and of those taken, both only ever
/// increased, and equal exactly when the queue is empty. [`HandleRing::keep_gate`] gives a ring's.
#[derive(Clone, Copy)]
pub struct KeepGate<'s> {
    pub queued: &'s AtomicUsize,
    pub taken: &'s AtomicUsize,
}

// The ABI's counters are `uint64_t`: a `usize` is one on every target the runtime supports.
const _: () = assert!(size_of::<AtomicUsize>() == size_of::<u64>() && align_of::<AtomicUsize>() == align_of::<u64>());

/// Describes one scheduler parameter, for [`Scheduler::KNOBS`].
pub const fn knob(
    name: &'static CStr,
    kind: &'static CStr,
    default_value: &'static CStr,
    domain: &'static CStr,
    description: &'static CStr,
) -> TomiiKnobDesc {
    TomiiKnobDesc {
        name: name.as_ptr(),
        kind: kind.as_ptr(),
        default_value: default_value.as_ptr(),
        domain: domain.as_ptr(),
        description: description.as_ptr(),
    }
}

/// The vtable for `S`. Used by [`export_scheduler!`](crate::export_scheduler).
///
/// A scheduler that sets [`TOMII_SCHED_POP_HANDLES`] and `TASK_HOOKS` does not compile: the hooks
/// receive the popped descriptor, which such a pop leaves unwritten but for its handle.
pub const fn vtable<S: Scheduler>() -> TomiiSchedulerVtable {
    assert!(
        !(S::TASK_HOOKS && S::FLAGS & TOMII_SCHED_POP_HANDLES != 0),
        "TOMII_SCHED_POP_HANDLES and TASK_HOOKS exclude each other: the hooks receive the popped descriptor"
    );
    TomiiSchedulerVtable {
        header: TomiiAbiHeader {
            abi_major: TOMII_SCHED_ABI_MAJOR,
            abi_minor: TOMII_SCHED_ABI_MINOR,
            struct_size: size_of::<TomiiSchedulerVtable>() as u32,
            flags: S::FLAGS,
            name: S::NAME.as_ptr(),
        },
        create: Some(create::<S>),
        destroy: Some(destroy::<S>),
        push: Some(push::<S>),
        pop: Some(pop::<S>),
        task_started: if S::TASK_HOOKS { Some(task_started::<S>) } else { None },
        task_completed: if S::TASK_HOOKS { Some(task_completed::<S>) } else { None },
        frame_started: if S::FRAME_HOOKS { Some(frame_started::<S>) } else { None },
        frame_completed: if S::FRAME_HOOKS { Some(frame_completed::<S>) } else { None },
        set_knob: Some(set_knob::<S>),
        describe_knobs: Some(describe_knobs::<S>),
        stats: Some(stats::<S>),
        last_error: Some(last_error),
        push_keep: if S::KEEPS { Some(push_keep::<S>) } else { None },
        keep_gate: if S::KEEPS { Some(keep_gate::<S>) } else { None },
    }
}

/// Exports a [`Scheduler`] implementation as a plugin: the C entry symbol `tomii_scheduler_v1`
/// and the `abi_stable` root module that lets the loader verify the full layout.
///
/// Call it once, at the root of a `cdylib` crate. Such a crate can use `#![deny(unsafe_code)]`:
/// the two exported symbols are the only `unsafe` attributes, and the macro allows them locally.
#[macro_export]
macro_rules! export_scheduler {
    ($ty:ty) => {
        /// The C entry point of this scheduler plugin.
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        pub extern "C" fn tomii_scheduler_v1() -> *const $crate::abi::TomiiSchedulerVtable {
            $crate::install_quiet_hook();
            &TOMII_SCHEDULER_VTABLE
        }

        static TOMII_SCHEDULER_VTABLE: $crate::abi::TomiiSchedulerVtable = $crate::scheduler::vtable::<$ty>();

        /// The `abi_stable` header through which the loader checks this plugin's layout.
        #[allow(unsafe_code)]
        #[unsafe(export_name = "_1as_0lib_1header_0root_bmodule_bloader")]
        pub static TOMII_SCHEDULER_LAYOUT: $crate::__private::abi_stable::library::LibHeader = {
            extern "C" fn root_module() -> $crate::__private::abi_stable::library::RootModuleResult {
                $crate::__private::abi_stable::library::__call_root_module_loader(|| {
                    use $crate::__private::abi_stable::prefix_type::PrefixTypeTrait;
                    $crate::stable::SchedulerModule { vtable: &TOMII_SCHEDULER_VTABLE }.leak_into_prefix()
                })
            }
            // SAFETY: `root_module` returns the module type named here, as `abi_stable` requires.
            unsafe {
                $crate::__private::abi_stable::library::LibHeader::from_constructor::<
                    $crate::stable::SchedulerModuleRef,
                >(root_module, $crate::__private::abi_stable::library::CheckTypeLayout::Yes)
            }
        };
    };
}

thread_local! {
    /// The message of the last failed push/pop on this thread, for `last_error`.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn remember_error(message: &str) {
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|slot| *slot.borrow_mut() = text);
}

/// Runs `body` (a hot-path call on a worker thread), turning an error or a panic into a status
/// code and a remembered message.
#[inline]
fn guarded(body: impl FnOnce() -> Result<(), String>) -> i32 {
    status(catch_panic(body))
}

/// Like `guarded`, for calls that may run on any thread.
fn guarded_marked(body: impl FnOnce() -> Result<(), String>) -> i32 {
    status(catch_panic_marked(body))
}

/// The status of a call's outcome: `TOMII_OK` inline, anything else out of line.
#[inline]
fn status(outcome: Result<Result<(), String>, String>) -> i32 {
    match outcome {
        Ok(Ok(())) => TOMII_OK,
        failed => failure_status(failed),
    }
}

/// The status of a call that failed or panicked; its message is remembered for `last_error`.
#[cold]
#[inline(never)]
fn failure_status(outcome: Result<Result<(), String>, String>) -> i32 {
    match outcome {
        Ok(Ok(())) => TOMII_OK,
        Ok(Err(message)) => {
            remember_error(&message);
            TOMII_ERR
        }
        Err(panic) => {
            remember_error(&format!("panicked: {panic}"));
            TOMII_ERR_PANIC
        }
    }
}

/// # Safety
/// `state` must come from `create::<S>` and not yet be destroyed.
unsafe fn state_ref<'a, S>(state: *mut c_void) -> &'a S {
    // SAFETY: guaranteed by the caller.
    unsafe { &*state.cast::<S>() }
}

unsafe fn slice_or_empty<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the caller guarantees `ptr` points at `len` initialised values.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

unsafe fn text(ptr: *const c_char) -> String {
    if ptr.is_null() {
        String::new()
    } else {
        // SAFETY: the caller guarantees a NUL-terminated string.
        unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
    }
}

unsafe extern "C" fn create<S: Scheduler>(
    init: *const TomiiSchedInit,
    state: *mut *mut c_void,
    err: TomiiErrorBuf,
) -> i32 {
    if init.is_null() || state.is_null() {
        return TOMII_ERR_INVALID;
    }
    let result = catch_panic_marked(|| {
        // SAFETY: the host passes a valid init block for the duration of this call.
        let info = unsafe { InitInfo::from_raw(&*init) };
        info.check_knobs(S::KNOBS)?;
        S::create(&info)
    });
    match result {
        Ok(Ok(scheduler)) => {
            // SAFETY: `state` was checked non-NULL above.
            unsafe { *state = Box::into_raw(Box::new(scheduler)).cast() };
            TOMII_OK
        }
        Ok(Err(message)) => {
            // SAFETY: the host's error buffer is valid for `cap` bytes.
            unsafe { write_error(err, &message) };
            TOMII_ERR
        }
        Err(panic) => {
            // SAFETY: as above.
            unsafe { write_error(err, &format!("create panicked: {panic}")) };
            TOMII_ERR_PANIC
        }
    }
}

unsafe extern "C" fn destroy<S: Scheduler>(state: *mut c_void) {
    if !state.is_null() {
        // SAFETY: `state` came from `Box::into_raw` in `create::<S>`; the host destroys it once.
        let boxed = unsafe { Box::from_raw(state.cast::<S>()) };
        let _ = catch_panic_marked(move || drop(boxed));
    }
}

unsafe extern "C" fn push<S: Scheduler>(state: *mut c_void, worker: u32, tasks: *const TomiiTask, n: usize) -> i32 {
    if state.is_null() || (tasks.is_null() && n > 0) {
        return TOMII_ERR_INVALID;
    }
    // SAFETY: the host passes the state from `create` and `n` valid descriptors.
    let (scheduler, tasks) = unsafe { (state_ref::<S>(state), slice_or_empty(tasks, n)) };
    let worker = (worker != NO_WORKER).then_some(worker);
    guarded(|| scheduler.push(worker, tasks))
}

unsafe extern "C" fn push_keep<S: Scheduler>(
    state: *mut c_void,
    worker: u32,
    tasks: *const TomiiTask,
    n: usize,
    kept: *mut usize,
) -> i32 {
    if state.is_null() || kept.is_null() || (tasks.is_null() && n > 0) {
        return TOMII_ERR_INVALID;
    }
    // SAFETY: the host passes the state from `create` and `n` valid descriptors.
    let (scheduler, tasks) = unsafe { (state_ref::<S>(state), slice_or_empty(tasks, n)) };
    let (status, index) = match catch_panic(|| scheduler.push_keep(worker, tasks)) {
        Ok(Ok(index)) => (TOMII_OK, index.unwrap_or(TOMII_KEEP_NONE)),
        failed => (failure_status(failed.map(|pushed| pushed.map(drop))), TOMII_KEEP_NONE),
    };
    // SAFETY: `kept` was checked non-NULL above.
    unsafe { *kept = index };
    status
}

unsafe extern "C" fn keep_gate<S: Scheduler>(state: *mut c_void, worker: u32, gate: *mut TomiiKeepGate) {
    if state.is_null() || gate.is_null() {
        return;
    }
    // SAFETY: the host passes the state from `create`.
    let scheduler = unsafe { state_ref::<S>(state) };
    if let Ok(Some(KeepGate { queued, taken })) = catch_panic(|| scheduler.keep_gate(worker)) {
        let counters =
            TomiiKeepGate { queued: queued.as_ptr().cast_const().cast(), taken: taken.as_ptr().cast_const().cast() };
        // SAFETY: `gate` was checked non-NULL above; the counters live as long as the state.
        unsafe { *gate = counters };
    }
}

unsafe extern "C" fn pop<S: Scheduler>(
    state: *mut c_void,
    worker: u32,
    out: *mut TomiiTask,
    max: usize,
    n_out: *mut usize,
) -> i32 {
    if state.is_null() || n_out.is_null() || (out.is_null() && max > 0) {
        return TOMII_ERR_INVALID;
    }
    // SAFETY: the host passes the state from `create` and room for `max` descriptors.
    let scheduler = unsafe { state_ref::<S>(state) };
    let out = if max == 0 { &mut [][..] } else { unsafe { std::slice::from_raw_parts_mut(out, max) } };
    let (status, count) = match catch_panic(|| scheduler.pop(worker, out)) {
        Ok(Ok(count)) if count <= max => (TOMII_OK, count),
        failed => (pop_failure(failed, max), 0),
    };
    // SAFETY: `n_out` was checked non-NULL above.
    unsafe { *n_out = count };
    status
}

/// The status of a pop that failed, panicked or claimed more than `max` tasks.
#[cold]
#[inline(never)]
fn pop_failure(outcome: Result<Result<usize, String>, String>, max: usize) -> i32 {
    failure_status(
        outcome.map(|popped| popped.and_then(|count| Err(format!("pop returned {count} tasks for a buffer of {max}")))),
    )
}

unsafe extern "C" fn task_started<S: Scheduler>(state: *mut c_void, worker: u32, task: *const TomiiTask) {
    if !state.is_null() && !task.is_null() {
        // SAFETY: valid state and descriptor for the call, as the ABI requires.
        let (scheduler, task) = unsafe { (state_ref::<S>(state), &*task) };
        guarded(|| {
            scheduler.task_started(worker, task);
            Ok(())
        });
    }
}

unsafe extern "C" fn task_completed<S: Scheduler>(
    state: *mut c_void,
    worker: u32,
    task: *const TomiiTask,
    duration_ns: u64,
) {
    if !state.is_null() && !task.is_null() {
        // SAFETY: valid state and descriptor for the call, as the ABI requires.
        let (scheduler, task) = unsafe { (state_ref::<S>(state), &*task) };
        guarded(|| {
            scheduler.task_completed(worker, task, duration_ns);
            Ok(())
        });
    }
}

unsafe extern "C" fn frame_started<S: Scheduler>(state: *mut c_void, frame: u64, slot: u32) {
    if !state.is_null() {
        // SAFETY: valid state, as the ABI requires.
        let scheduler = unsafe { state_ref::<S>(state) };
        guarded_marked(|| {
            scheduler.frame_started(frame, slot);
            Ok(())
        });
    }
}

unsafe extern "C" fn frame_completed<S: Scheduler>(state: *mut c_void, frame: u64, slot: u32, latency_ns: u64) {
    if !state.is_null() {
        // SAFETY: valid state, as the ABI requires.
        let scheduler = unsafe { state_ref::<S>(state) };
        guarded_marked(|| {
            scheduler.frame_completed(frame, slot, latency_ns);
            Ok(())
        });
    }
}

unsafe extern "C" fn set_knob<S: Scheduler>(
    state: *mut c_void,
    key: *const c_char,
    value: *const c_char,
    err: TomiiErrorBuf,
) -> i32 {
    if state.is_null() || key.is_null() || value.is_null() {
        return TOMII_ERR_INVALID;
    }
    // SAFETY: valid state and NUL-terminated strings, as the ABI requires.
    let (scheduler, key, value) = unsafe { (state_ref::<S>(state), text(key), text(value)) };
    let status = guarded_marked(|| scheduler.set_knob(&key, &value));
    if status != TOMII_OK {
        let message = LAST_ERROR.with(|slot| slot.borrow().to_string_lossy().into_owned());
        // SAFETY: the host's error buffer is valid for `cap` bytes.
        unsafe { write_error(err, &message) };
    }
    status
}

unsafe extern "C" fn describe_knobs<S: Scheduler>(n: *mut usize) -> *const TomiiKnobDesc {
    if !n.is_null() {
        // SAFETY: checked non-NULL.
        unsafe { *n = S::KNOBS.len() };
    }
    S::KNOBS.as_ptr()
}

unsafe extern "C" fn stats<S: Scheduler>(state: *mut c_void, buf: *mut c_char, cap: usize) -> usize {
    if state.is_null() {
        return 0;
    }
    // SAFETY: valid state, as the ABI requires.
    let scheduler = unsafe { state_ref::<S>(state) };
    let Ok(text) = catch_panic_marked(|| scheduler.stats()) else {
        return 0;
    };
    // SAFETY: the host's buffer is valid for `cap` bytes.
    unsafe { write_error(TomiiErrorBuf { ptr: buf, cap }, &text) };
    text.len()
}

unsafe extern "C" fn last_error(_state: *mut c_void) -> *const c_char {
    // The pointer stays valid until this thread's next failing call, as the ABI states.
    LAST_ERROR.with(|slot| slot.borrow().as_ptr())
}
