//! Scheduler ABI v1: the vtable a scheduler plugin exports and the task descriptor it receives.
//!
//! This file is the source of `include/tomii/scheduler.h`; keep it to plain `#[repr(C)]` items.
//! The contract in prose is PLUGIN_SCHEDULER_API.md at the repository root. Fields are append-only:
//! never reorder or remove one; a breaking change bumps `TOMII_SCHED_ABI_MAJOR` and the entry
//! symbol's name.

use std::ffi::{c_char, c_void};

use abi_stable::StableAbi;

use super::common::{TomiiAbiHeader, TomiiErrorBuf};

/// Major version of the scheduler ABI described here.
pub const TOMII_SCHED_ABI_MAJOR: u32 = 1;
/// Minor version: the number of optional extensions appended since v1.0.
pub const TOMII_SCHED_ABI_MINOR: u32 = 0;

/// Capability flag: the host calls this scheduler from one thread at a time.
pub const TOMII_SCHED_SERIAL: u32 = 1;
/// Capability flag: the scheduler reads `ready_ns` and `cost_ns`, so the host must measure them.
pub const TOMII_SCHED_NEEDS_TIMING: u32 = 2;

/// "No worker": a `locality` with no producing worker, or a push made by the host itself.
pub const TOMII_NO_WORKER: u32 = 0xFFFF_FFFF;

/// One ready task, as the host describes it to the scheduler.
///
/// The host computes every field; a scheduler only reads them and hands the descriptor back from
/// `pop` unchanged (the host identifies the task by `handle` alone and verifies it).
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TomiiTask {
    /// Opaque identity of this task in this frame. Never interpret it.
    pub handle: u64,
    /// Frame number, counting from 0 over the run; older frames have smaller numbers.
    pub frame: u64,
    /// When the task became ready, in nanoseconds since the run started (0 unless
    /// `TOMII_SCHED_NEEDS_TIMING` is set or the trace is on).
    pub ready_ns: u64,
    /// Running mean of this node's past kernel durations in nanoseconds (0 until known, and 0
    /// unless `TOMII_SCHED_NEEDS_TIMING` is set or the trace is on).
    pub cost_ns: u64,
    /// Critical-path rank: the number of tasks on the longest path from this task to the end of
    /// its frame, itself included. Higher means more urgent.
    pub rank: u64,
    /// Node index in the graph (0-based, in file order).
    pub node: u32,
    /// Instance index within the node, `0 <= instance < factor`.
    pub instance: u32,
    /// Slot the frame occupies, `0 <= slot < slots`.
    pub slot: u32,
    /// Node priority: larger runs first. "high" = 1, "normal" = 0, "low" = -1.
    pub priority: i32,
    /// First worker allowed to run the task.
    pub worker_lo: u32,
    /// One past the last worker allowed to run the task.
    pub worker_hi: u32,
    /// The worker that produced the input that made the task ready, or `TOMII_NO_WORKER`.
    pub locality: u32,
    /// Reserved, always 0.
    pub reserved: u32,
}

/// A scheduler's own parameter, given at create time as text (`--sched-opt key=value`).
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct TomiiKnob {
    pub key: *const c_char,
    pub value: *const c_char,
}

/// Describes one of a scheduler's own parameters, so it enters the knob space.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct TomiiKnobDesc {
    /// Key accepted by `create` and `set_knob`.
    pub name: *const c_char,
    /// One of "int", "float", "bool", "choice", "string".
    pub kind: *const c_char,
    /// Default value as text.
    pub default_value: *const c_char,
    /// Domain as text: "1..64" for numbers, "a|b|c" for choices, "" when free.
    pub domain: *const c_char,
    /// One sentence for `tomii knobs`.
    pub description: *const c_char,
}

/// What the host tells the scheduler about one node of the graph at create time.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct TomiiNodeSummary {
    pub name: *const c_char,
    /// Instances per frame.
    pub factor: u32,
    /// As in `TomiiTask::priority`.
    pub priority: i32,
    /// Workers allowed to run this node's tasks: `worker_lo .. worker_hi`.
    pub worker_lo: u32,
    pub worker_hi: u32,
}

/// Everything a scheduler learns at create time. Valid only during `create`; copy what you keep.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct TomiiSchedInit {
    /// `sizeof(TomiiSchedInit)` as the host was compiled.
    pub struct_size: u32,
    /// Number of workers; worker ids are `0 .. workers`.
    pub workers: u32,
    /// Number of slots (frames in flight).
    pub slots: u32,
    /// Number of entries in `nodes`.
    pub node_count: u32,
    /// Tasks per frame (the sum of the nodes' factors).
    pub tasks_per_frame: u64,
    /// The most tasks that can be pushed and not yet popped at once: a safe queue capacity.
    pub max_ready: u64,
    /// Number of frames the run will execute (0 when unbounded).
    pub frames: u64,
    pub nodes: *const TomiiNodeSummary,
    /// Scheduler parameters given by the user, `knob_count` entries.
    pub knobs: *const TomiiKnob,
    pub knob_count: usize,
}

/// The table a scheduler plugin exports through `tomii_scheduler_v1()`.
///
/// `header.flags` holds `TOMII_SCHED_*` capability flags. `create`, `destroy`, `push` and `pop`
/// are required; the loader rejects a table where one is NULL. The rest are optional hooks.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct TomiiSchedulerVtable {
    pub header: TomiiAbiHeader,
    /// Creates the scheduler's state. On failure returns non-zero and writes a message to `err`.
    pub create:
        Option<unsafe extern "C" fn(init: *const TomiiSchedInit, state: *mut *mut c_void, err: TomiiErrorBuf) -> i32>,
    /// Frees the state made by `create`. Called once, after every other call has returned.
    pub destroy: Option<unsafe extern "C" fn(state: *mut c_void)>,
    /// Takes ownership of `n` ready tasks. `worker` is the pushing worker, or `TOMII_NO_WORKER`.
    pub push: Option<unsafe extern "C" fn(state: *mut c_void, worker: u32, tasks: *const TomiiTask, n: usize) -> i32>,
    /// Hands at most `max` tasks to `worker`, writing them to `out` and their number to `n_out`.
    /// Writing 0 tasks means "nothing for this worker now"; the host parks the worker.
    pub pop: Option<
        unsafe extern "C" fn(
            state: *mut c_void,
            worker: u32,
            out: *mut TomiiTask,
            max: usize,
            n_out: *mut usize,
        ) -> i32,
    >,
    /// Optional: a popped task is about to run on `worker`.
    pub task_started: Option<unsafe extern "C" fn(state: *mut c_void, worker: u32, task: *const TomiiTask)>,
    /// Optional: a task finished on `worker`; `duration_ns` is its measured kernel time.
    pub task_completed:
        Option<unsafe extern "C" fn(state: *mut c_void, worker: u32, task: *const TomiiTask, duration_ns: u64)>,
    /// Optional: frame `frame` started in `slot`, before its first tasks are pushed.
    pub frame_started: Option<unsafe extern "C" fn(state: *mut c_void, frame: u64, slot: u32)>,
    /// Optional: frame `frame` in `slot` completed after `latency_ns`.
    pub frame_completed: Option<unsafe extern "C" fn(state: *mut c_void, frame: u64, slot: u32, latency_ns: u64)>,
    /// Optional: changes one parameter while running. Non-zero and a message in `err` on failure.
    pub set_knob: Option<
        unsafe extern "C" fn(state: *mut c_void, key: *const c_char, value: *const c_char, err: TomiiErrorBuf) -> i32,
    >,
    /// Optional: the scheduler's parameters, a static array; writes its length to `n`.
    pub describe_knobs: Option<unsafe extern "C" fn(n: *mut usize) -> *const TomiiKnobDesc>,
    /// Optional: writes the scheduler's statistics as a JSON object (NUL-terminated, truncated to
    /// `cap`) and returns the length the full text needs, NUL excluded.
    pub stats: Option<unsafe extern "C" fn(state: *mut c_void, buf: *mut c_char, cap: usize) -> usize>,
    /// Optional: the message of the last failed `push` or `pop`, or NULL.
    pub last_error: Option<unsafe extern "C" fn(state: *mut c_void) -> *const c_char>,
}

/// The entry symbol's signature: `const TomiiSchedulerVtable *tomii_scheduler_v1(void)`.
pub type TomiiSchedulerEntryFn = unsafe extern "C" fn() -> *const TomiiSchedulerVtable;
