//! A worker's own state: the buffers it builds arguments and batches in, its callers of the
//! scheduler and the kernels, its counters, trace chunk and frame latencies. Made once when the
//! worker takes its part of the run, sized so that the hot path never allocates; never shared with
//! another thread (what it hands back at the end goes through `Shared::finished`).

use tomii_types::abi::{TOMII_NO_WORKER, TomiiTask, TomiiValue};

use super::Engine;
use crate::engine::durations::Durations;
use crate::engine::latencies::Latencies;
use crate::engine::report::{NodeCounters, WorkerCounters};
use crate::engine::trace::{TraceRecord, WorkerTrace};
use crate::plugin::{KernelCaller, SchedulerCaller};

/// Ready tasks pushed to the scheduler in one call, at most.
pub(super) const PUSH_CHUNK: usize = 256;
/// Bytes of the buffer a failing kernel writes its message into.
const ERROR_CAPACITY: usize = 4096;

/// Ready tasks waiting to be pushed, and who pushes them.
pub(super) struct Pusher<'e> {
    pub(super) worker: u32,
    /// How `worker` calls the scheduler: each call marked for the watchdog.
    pub(super) scheduler: SchedulerCaller<'e>,
    pub(super) ready: Vec<TomiiTask>,
    /// Whether the pushing worker will still take one of its pushed tasks itself.
    pub(super) self_take: bool,
    /// The handle of the task the scheduler kept for this worker at its last `push_keep`: all the
    /// host needs of it to claim it, and to verify it when the claim fails.
    pub(super) kept_handle: u64,
    /// That task's whole descriptor, copied only for a scheduler with a task hook, which hears of
    /// it (`Plan::task_hooks`): the per-task path copies no descriptor otherwise.
    pub(super) kept: TomiiTask,
    /// Whether no pushed task may be kept for the worker now: it still holds tasks of its last
    /// pop, and a kept task, which runs next, would run before tasks the scheduler handed out
    /// earlier (unless its order puts it first: `TOMII_SCHED_KEEP_BEFORE_BATCH`).
    pub(super) keep_barred: bool,
}

/// A worker's own buffers and counters.
pub(super) struct Local<'e> {
    pub(super) pusher: Pusher<'e>,
    pub(super) args: Vec<TomiiValue>,
    /// The elements of a variadic kernel's LIST argument.
    pub(super) list: Vec<TomiiValue>,
    /// `worker`'s kernel calls: their context, error buffer and watchdog mark.
    pub(super) kernels: KernelCaller<'e>,
    pub(super) counters: WorkerCounters,
    /// What the tasks of warm-up frames counted: left out of the report.
    pub(super) warmup: WorkerCounters,
    pub(super) trace: WorkerTrace,
    /// Latencies of the frames this worker completed.
    pub(super) latency: Latencies,
    /// How many pops the worker's next spin tries before it parks (README.md, "Idle workers").
    pub(super) spin_rounds: u32,
}

/// What a worker hands back when it stops.
pub(super) type WorkerResult = (WorkerCounters, Vec<TraceRecord>, Latencies);

impl Engine<'_> {
    /// The pusher of the host thread, which starts the first frames.
    pub(super) fn host_pusher(&self) -> Pusher<'_> {
        Pusher {
            worker: TOMII_NO_WORKER,
            scheduler: self.scheduler.caller(TOMII_NO_WORKER),
            ready: Vec::with_capacity(PUSH_CHUNK),
            self_take: false,
            kept_handle: 0,
            kept: TomiiTask::default(),
            keep_barred: false,
        }
    }

    /// The state of `worker`, every buffer sized for the run.
    pub(super) fn local(&self, worker: u32) -> Local<'_> {
        let (graph, config) = (self.plan.graph, self.plan.config);
        let nodes = graph.nodes.len();
        let watchdog = self.scheduler.watchdog();
        Local {
            pusher: Pusher {
                worker,
                scheduler: self.scheduler.caller(worker),
                ready: Vec::with_capacity(PUSH_CHUNK),
                self_take: true,
                kept_handle: 0,
                kept: TomiiTask::default(),
                keep_barred: false,
            },
            args: Vec::with_capacity(graph.max_args() + 1),
            list: Vec::with_capacity(graph.max_args()),
            kernels: KernelCaller::new(
                worker,
                ERROR_CAPACITY,
                Some(watchdog.mark(worker)),
                config.kernel_timeout.is_some(),
            ),
            counters: WorkerCounters {
                per_node: vec![NodeCounters::default(); nodes],
                durations: Durations::new(nodes, config.workers as usize, self.plan.timing),
                ..WorkerCounters::default()
            },
            warmup: WorkerCounters { per_node: vec![NodeCounters::default(); nodes], ..WorkerCounters::default() },
            trace: WorkerTrace::new(self.shared.trace_pool.as_ref()),
            latency: Latencies::new(),
            spin_rounds: super::worker_loop::SPIN_ROUNDS,
        }
    }
}
