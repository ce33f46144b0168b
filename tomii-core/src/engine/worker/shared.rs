//! The run's shared state: what the workers and the host thread read and write while the run runs
//! (the slot table, the door, the frame counts, the stop flag, the failure, what each worker hands
//! back). Per-worker state is `local.rs`'s and never lives here; nothing here is written on the
//! hot path except the slot table's cells, the cost estimates and the ready times.
//!
//! # Memory ordering
//! - `stop` is stored Release (`Engine::stop_run`, after the failure or the last frame's
//!   accounting) and loaded Acquire before every pop and at each of the host's looks: a thread
//!   that sees the run stopped sees why.
//! - `exited` is incremented Release by a worker after it left its counters in its `finished`
//!   cell, and loaded Acquire by the host, which then takes every cell (each behind its mutex).
//! - `frames_done` is incremented AcqRel at a frame's end and loaded Acquire where progress is
//!   judged (the stall check, an ejection, the report): a thread that sees a count sees the
//!   completions it counts. The other frame counts are statistics, Relaxed, read after the run.
//! - A slot's `generation` is loaded Acquire where a task is claimed or a door request is matched
//!   to its frame; it pairs with the Release increment of `SlotTable::begin_frame`, so the frame's
//!   number, tag and serial written before it are seen with it (slots.rs, "Memory ordering").
//! - A slot's `abandoned` flag is stored Release before its missing inputs get NONE; the arrivals
//!   that follow (SeqCst read-modify-writes) carry it to whoever claims the tasks they make ready,
//!   so the Relaxed load in a task's body sees it.
//! - `costs`, `ready_at` and the interrupt flag are Relaxed: estimates and trace times, never a
//!   condition of correctness.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use super::fault::Containment;
use super::local::WorkerResult;
use super::plan::Plan;
use crate::engine::RunError;
use crate::engine::clock::Clock;
use crate::engine::door::Door;
use crate::engine::memory;
use crate::engine::sleep::Sleep;
use crate::engine::slots::SlotTable;
use crate::engine::source::FrameDone;
use crate::engine::trace::{SystemLog, TracePool};

/// Run state shared by every worker and the host thread.
pub(super) struct Shared {
    /// How threads outside the pool start frames; the run's frame accounting.
    pub(super) door: Arc<Door>,
    /// With post-nodes, per slot: its completed frame, held back from the source until the slot
    /// is reused or the post-nodes have read the last frame (README.md, "Frames and their source").
    pub(super) held: Box<[Mutex<Option<FrameDone>>]>,
    pub(super) table: SlotTable,
    pub(super) sleep: Arc<Sleep>,
    pub(super) clock: Clock,
    /// Frames started: the next frame's number.
    pub(super) frames_started: AtomicU64,
    /// Frames that completed with every input (the others were abandoned by their source).
    pub(super) frames_done: AtomicU64,
    pub(super) frames_abandoned: AtomicU64,
    /// Warm-up frames completed (`RunConfig::warmup_frames`): in `frames_done`, not in the report.
    pub(super) frames_excluded: AtomicU64,
    /// When the first frame after the warm-up started: the start of the report's wall time.
    pub(super) measured_from: OnceLock<Instant>,
    /// Set when a stop was requested (`RunConfig::stop`) before the source ended.
    pub(super) interrupted: AtomicBool,
    /// Set when the run finished or failed; workers exit when they see it.
    pub(super) stop: AtomicBool,
    /// When `stop` was first set: the end of the run's wall time.
    pub(super) stopped_at: OnceLock<Instant>,
    pub(super) failure: Mutex<Option<RunError>>,
    /// Per worker: what it counted and traced, put there when it exits.
    pub(super) finished: Box<[Mutex<Option<WorkerResult>>]>,
    /// Workers that exited (the host is woken for each).
    pub(super) exited: AtomicU32,
    /// Per node: the latest published mean kernel duration in nanoseconds.
    pub(super) costs: Box<[AtomicU64]>,
    /// Per (slot, instance) cell: when the task became ready (ticks), kept only with a trace.
    pub(super) ready_at: Box<[AtomicU64]>,
    pub(super) trace_pool: Option<TracePool>,
    /// Frame starts and deliveries, for the scheduler record (`Plan::recording`).
    pub(super) system_log: Option<SystemLog>,
    /// The host thread, woken when the run stops so that progress reporting ends at once.
    pub(super) host: std::thread::Thread,
    pub(super) containment: Containment,
}

impl Shared {
    /// The state of a run of `plan`, on the calling thread (the host's). Its clock starts here (and again once the scheduler is
    /// created: `Engine::new`).
    /// The per-slot and per-cell arrays are the run's largest: memory the system refuses them is
    /// an error naming them (`RunError::Config`), not an abort.
    pub(super) fn new(plan: &Plan<'_>) -> Result<Self, RunError> {
        let (graph, config) = (plan.graph, plan.config);
        let instances = graph.instance_count();
        let cells = if plan.tracing { config.slots as usize * instances } else { 0 };
        let sleep = Arc::new(Sleep::new(config.workers, config.wake_all_on_push));
        let host = std::thread::current();
        // Only a source that delivers inputs one by one queues them at the door.
        let door_inputs = if plan.abandonable { graph.inputs.len() } else { 0 };
        let held = if graph.post.is_empty() { 0 } else { config.slots as usize };
        let shape = || format!("{} slot(s) × {instances} instances", config.slots);
        Ok(Shared {
            door: Arc::new(
                Door::new(config.slots, door_inputs, config.workers, Arc::clone(&sleep), host.clone())
                    .map_err(RunError::Config)?,
            ),
            held: memory::try_boxed(held, || format!("the frames {held} slot(s) hold"), |_| Mutex::new(None))
                .map_err(RunError::Config)?,
            table: SlotTable::new(config.slots, instances, plan.sinks.len()).map_err(RunError::Config)?,
            sleep,
            clock: Clock::new(),
            frames_started: AtomicU64::new(0),
            frames_done: AtomicU64::new(0),
            frames_abandoned: AtomicU64::new(0),
            frames_excluded: AtomicU64::new(0),
            measured_from: OnceLock::new(),
            interrupted: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            stopped_at: OnceLock::new(),
            failure: Mutex::new(None),
            finished: (0..config.workers).map(|_| Mutex::new(None)).collect(),
            exited: AtomicU32::new(0),
            costs: graph.nodes.iter().map(|_| AtomicU64::new(0)).collect(),
            ready_at: memory::try_boxed(cells, || format!("the ready times of {}", shape()), |_| AtomicU64::new(0))
                .map_err(RunError::Config)?,
            trace_pool: plan.tracing.then(|| TracePool::new(config.workers, host.clone())),
            system_log: plan.recording.then(|| SystemLog::new(host.clone())),
            host,
            containment: Containment::new(config.on_fault),
        })
    }
}
