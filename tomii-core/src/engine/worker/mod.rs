//! The engine proper: shared run state, the worker loop, task execution and frame lifecycle.
//!
//! Hot path (per task): pop → verify the handle → build arguments → call the kernel → store the
//! result → count arrivals on successors → push the newly ready batch → count the completion. It
//! allocates nothing, takes no lock and formats nothing; every buffer is sized before the run.
//! README.md beside this file describes each protocol this code follows.

use std::ffi::CString;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use tomii_types::abi::{TOMII_KERNEL_VARIADIC, TOMII_NO_WORKER, TomiiTask, TomiiValue};
use tomii_types::kernel::Value;

mod body;

mod fault;
mod records;
mod setup;

use body::{BoundCondition, NodeRun};
use setup::{bind_conditions, check_config};
pub(crate) use setup::{scheduler_setup, templates};

use fault::Containment;
use records::{GROUPED, Inst, KEEPS_RESULT, Record, Records, SINK};

use super::clock::{Clock, Ticks};
use super::door::{Door, Opened, Request};
use super::durations::Durations;
use super::pool;
use super::report::{self, NodeCounters, WorkerCounters};
use super::sleep::{Sleep, Wake};
use super::slots::{ClaimError, SlotTable, decode_handle, encode_handle};
use super::source::{FrameDone, FrameSource, NextFrame};
use super::trace::{TracePool, TraceRecord, TraceSink, WorkerTrace};
use super::{FaultPolicy, FrameOutputs, Output, Report, RunConfig, RunError, RunFailure, RunOutcome};
use crate::graph::{ArgSource, CompiledGraph, quote_name};
use crate::plugin::{
    Call, Kernel, KernelCaller, KernelSet, NEVER_CALLED, PopBuffer, SchedulerCaller, SchedulerInstance,
    SchedulerPlugin, Watchdog,
};

/// Ready tasks pushed to the scheduler in one call, at most.
const PUSH_CHUNK: usize = 256;
/// Pop attempts while spinning before a worker parks.
const SPIN_ROUNDS: u32 = 64;
/// The most (slot, instance) cells a run may hold.
const MAX_CELLS: u64 = 1 << 28;
/// Bytes of the buffer a failing kernel writes its message into.
const ERROR_CAPACITY: usize = 4096;
/// After an ejection, stall timeouts without progress before the run stops as an engine bug.
const STUCK_TIMEOUTS: u32 = 3;
/// A worker publishes its mean duration of a node every this many executions of it.
const COST_PUBLISH_EVERY: u64 = 16;
/// How often the host thread looks at the run (stop requests, the trace, progress) when nothing
/// wakes it sooner.
const WATCH_EVERY: Duration = Duration::from_millis(20);
/// How often progress is reported.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);
/// The most trace records kept in memory (48 bytes each); beyond it the oldest are released, and
/// the report counts them.
const TRACE_MEMORY_LIMIT: usize = 1 << 22;
/// The longest frame latency the histogram records (an hour, in ns); longer ones count as it.
const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

/// Run state shared by every worker.
pub(super) struct Engine<'a> {
    graph: &'a CompiledGraph,
    config: &'a RunConfig,
    scheduler: SchedulerInstance<'a>,
    /// Per node: its kernel and how its tasks run.
    runs: Vec<NodeRun>,
    /// Whether the source may abandon a frame (README.md, "Inputs delivered one by one"): every
    /// body then looks at its slot's `abandoned` flag first.
    abandonable: bool,
    /// Per node: its condition, bound to the condition's function.
    conditions: Vec<Option<BoundCondition>>,
    /// The values of the computed initializations, element by element (README, "Computed
    /// initializations"), made before the first frame.
    computed: Vec<Vec<Value>>,
    /// Per post-node: its kernel and whether it is variadic.
    post_kernels: Vec<Kernel>,
    /// Where frames come from and where their outputs go.
    source: &'a dyn FrameSource,
    /// How threads outside the pool start frames; the run's frame accounting.
    door: Arc<Door>,
    /// Whether the source takes each frame's outputs.
    wants_outputs: bool,
    /// With post-nodes, per slot: its completed frame, held back from the source until the slot
    /// is reused or the post-nodes have read the last frame (README.md, "Frames and their source").
    held: Box<[Mutex<Option<FrameDone>>]>,
    consts: Vec<Value>,
    /// Instances without successors: their results are a frame's outputs, and a frame is complete
    /// when they all are.
    sinks: Vec<u32>,
    /// Per instance: what the hot path reads about it (README.md, "The per-task record").
    records: Records<'a>,
    table: SlotTable,
    sleep: Arc<Sleep>,
    clock: Clock,
    /// Measure kernel durations and ready times.
    timing: bool,
    /// Frames started: the next frame's number.
    frames_started: AtomicU64,
    /// Frames that completed with every input (the others were abandoned by their source).
    frames_done: AtomicU64,
    frames_abandoned: AtomicU64,
    /// Warm-up frames completed (`RunConfig::warmup_frames`): in `frames_done`, not in the report.
    frames_excluded: AtomicU64,
    /// When the first frame after the warm-up started: the start of the report's wall time.
    measured_from: OnceLock<Instant>,
    /// Set when a stop was requested (`RunConfig::stop`) before the source ended.
    interrupted: AtomicBool,
    /// Set when the run finished or failed; workers exit when they see it.
    stop: AtomicBool,
    /// When `stop` was first set: the end of the run's wall time.
    stopped_at: OnceLock<Instant>,
    failure: Mutex<Option<RunError>>,
    /// Per worker: what it counted and traced, put there when it exits.
    finished: Box<[Mutex<Option<WorkerResult>>]>,
    /// Workers that exited (the host is woken for each).
    exited: AtomicU32,
    /// Per node: the latest published mean kernel duration in nanoseconds.
    costs: Box<[AtomicU64]>,
    /// Per (slot, instance) cell: when the task became ready (ticks), kept only with a trace.
    ready_at: Box<[AtomicU64]>,
    trace_pool: Option<TracePool>,
    /// The host thread, woken when the run stops so that progress reporting ends at once.
    host: std::thread::Thread,
    containment: Containment,
    /// Marks every call into the scheduler, for the host to find one that does not return.
    watchdog: Watchdog,
    /// Whether the scheduler has a task hook.
    task_hooks: bool,
}

/// Ready tasks waiting to be pushed, and who pushes them.
struct Pusher<'e> {
    worker: u32,
    /// `worker`'s calls into the scheduler, each marked for the watchdog.
    scheduler: SchedulerCaller<'e>,
    ready: Vec<TomiiTask>,
    /// Whether the pushing worker will still take one of its pushed tasks itself.
    self_take: bool,
}

/// Stops the run when the host thread unwinds, so that the workers return and `Crew::run`'s wait
/// for them ends.
struct StopOnUnwind<'e, 'a>(&'e Engine<'a>);

impl Drop for StopOnUnwind<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop_run();
        }
    }
}

/// A claimed task: where it runs, in which generation of its slot, for which frame.
#[derive(Clone, Copy)]
struct Claimed {
    slot: u32,
    inst: Inst,
    generation: u32,
    frame: u64,
}

/// A worker's own buffers and counters.
struct Local<'e> {
    pusher: Pusher<'e>,
    args: Vec<TomiiValue>,
    /// The elements of a variadic kernel's LIST argument.
    list: Vec<TomiiValue>,
    /// `worker`'s kernel calls: their context, error buffer and watchdog mark.
    kernels: KernelCaller<'e>,
    counters: WorkerCounters,
    /// What the tasks of warm-up frames counted: left out of the report.
    warmup: WorkerCounters,
    trace: WorkerTrace,
    /// Latencies of the frames this worker completed.
    latency: Histogram<u64>,
}

/// What a worker hands back when it stops.
type WorkerResult = (WorkerCounters, Vec<TraceRecord>, Histogram<u64>);

/// A histogram of frame latencies in nanoseconds, 3 significant digits, up to an hour. It starts
/// small and grows to the largest latency recorded (at most a few times a run, at a frame's end,
/// never per task): one sized for an hour from the start is 256 KiB zeroed, merged and freed per
/// worker per run, most of a short run's cost.
pub(crate) fn latency_histogram() -> Histogram<u64> {
    let mut histogram = Histogram::new_with_bounds(1, 2, 3).expect("valid histogram bounds");
    histogram.auto(true);
    histogram
}

impl<'a> Engine<'a> {
    pub(super) fn run(
        graph: &'a CompiledGraph,
        kernels: &KernelSet,
        plugin: &'a SchedulerPlugin,
        config: &'a RunConfig,
        source: &'a dyn FrameSource,
    ) -> Result<RunOutcome, RunFailure> {
        if !source.capabilities().gives_inputs
            && let Some(input) = graph.nodes.iter().find(|node| node.input)
        {
            return Err(RunError::Config(format!(
                "{}: input {:?} needs a source that gives it values: feed the graph's inputs through a session \
                 (tomii_core::engine::Session, tomii.Session in Python)",
                graph.source, input.name
            ))
            .into());
        }
        check_config(graph, config)?;
        let engine = Engine::new(graph, kernels, plugin, config, source)?;
        let mut sink = engine.trace_sink()?;
        engine.run_workers(&mut sink)
    }

    fn new(
        graph: &'a CompiledGraph,
        kernels: &KernelSet,
        plugin: &'a SchedulerPlugin,
        config: &'a RunConfig,
        source: &'a dyn FrameSource,
    ) -> Result<Self, RunError> {
        let bound = graph
            .nodes
            .iter()
            .map(|node| match node.input {
                true => Ok(NEVER_CALLED),
                false => kernels.resolve(|| format!("node {}", quote_name(&node.name)), &node.function),
            })
            .collect::<Result<Vec<_>, _>>()?;

        let conditions = bind_conditions(graph, kernels)?;
        // A source that may abandon frames makes every body look at its frame's flag.
        let abandonable = source.capabilities().delivers_inputs;
        let computed = body::compute_initializations(graph, kernels, config.workers)?;
        let post_kernels = body::bind_post_nodes(graph, kernels)?;
        let runs = graph
            .nodes
            .iter()
            .zip(bound)
            .map(|(node, kernel)| {
                let variadic = kernel.flags & TOMII_KERNEL_VARIADIC != 0;
                // A loop of one iteration still appends its loop arguments: not simple.
                let looped = node.iterations > 1 || !graph.loop_args_of(node.first).is_empty();
                let simple = !variadic && node.condition.is_none() && !looped && !abandonable;
                NodeRun { kernel, variadic, simple, grouped: node.group_size > 1 }
            })
            .collect::<Vec<_>>();
        let node_names = graph
            .nodes
            .iter()
            .map(|n| CString::new(n.name.as_str()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| RunError::Config(format!("{}: a node name contains a NUL character", graph.source)))?;
        let instances = graph.instance_count();
        let scheduler = SchedulerInstance::create(
            plugin,
            &scheduler_setup(
                graph,
                (config.workers, config.slots),
                &config.scheduler_options,
                source.planned().unwrap_or(0),
            ),
        )?;
        let tracing = config.trace || config.trace_file.is_some() || !config.trace_taps.is_empty();
        let timing = config.task_timing || tracing || plugin.needs_timing();
        let cells = if tracing { config.slots as usize * instances } else { 0 };
        let sleep = Arc::new(Sleep::new(config.workers, config.wake_all_on_push));
        let host = std::thread::current();
        let sinks: Vec<u32> =
            (0..instances as u32).filter(|&i| graph.is_task(i) && graph.successors(i).is_empty()).collect();
        let mut keeps_result = vec![false; instances];
        for member in sinks.iter().flat_map(|&sink| graph.group_of(sink)) {
            keeps_result[member as usize] = true;
        }
        for source in graph.args.iter().chain(graph.post.iter().flat_map(|post| &post.args)) {
            if let ArgSource::Result(pred) = *source {
                keeps_result[pred as usize] = true;
            }
        }
        let mut is_sink = vec![false; instances];
        for &sink in &sinks {
            is_sink[sink as usize] = true;
        }
        let records = Records::new(
            graph,
            config.workers,
            &runs,
            node_names,
            &keeps_result,
            &is_sink,
            templates(graph, config.workers),
        );
        let task_hooks = scheduler.has_task_hooks();
        Ok(Engine {
            graph,
            config,
            scheduler,
            runs,
            abandonable,
            conditions,
            computed,
            post_kernels,
            source,
            door: Arc::new(Door::new(
                config.slots,
                if abandonable { graph.inputs.len() } else { 0 },
                config.workers,
                Arc::clone(&sleep),
                host.clone(),
            )),
            wants_outputs: source.wants_outputs(),
            held: (0..if graph.post.is_empty() { 0 } else { config.slots }).map(|_| Mutex::new(None)).collect(),
            consts: graph.consts.iter().map(|literal| literal.to_value()).collect(),
            table: SlotTable::new(config.slots, instances, sinks.len()),
            sinks,
            records,
            sleep,
            clock: Clock::new(),
            timing,
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
            ready_at: (0..cells).map(|_| AtomicU64::new(0)).collect(),
            trace_pool: tracing.then(|| TracePool::new(config.workers, host.clone())),
            host,
            containment: Containment::new(config.on_fault),
            watchdog: Watchdog::new(config.workers),
            task_hooks,
        })
    }

    /// The trace's destination: the trace file, streamed, and memory, when asked for.
    fn trace_sink(&self) -> Result<TraceSink, RunError> {
        let names: Vec<String> = self.graph.nodes.iter().map(|n| n.name.clone()).collect();
        let file = self.config.trace_file.as_deref();
        let memory = self.config.trace.then_some(TRACE_MEMORY_LIMIT);
        TraceSink::new(file, memory, &names, self.config.trace_taps.clone()).map_err(|error| {
            let path = file.map(|p| p.to_owned()).unwrap_or_default();
            RunError::Io { path, reason: format!("cannot write the trace: {error}") }
        })
    }

    /// Asks the source for a frame for every slot, then gives it the door (so that the slots it
    /// does not take are free before its threads use the door), from the host thread.
    fn start_first_frames(&self, latency: &mut Histogram<u64>) -> Result<(), RunError> {
        let mut pusher = Pusher {
            worker: TOMII_NO_WORKER,
            scheduler: self.scheduler.caller(TOMII_NO_WORKER, &self.watchdog),
            ready: Vec::with_capacity(PUSH_CHUNK),
            self_take: false,
        };
        for slot in 0..self.config.slots {
            match self.next_frame() {
                NextFrame::Start { tag, inputs } => {
                    self.door.count_start();
                    self.start_frame(&mut pusher, slot, (tag, 0), Some(inputs), latency)?;
                }
                NextFrame::NotYet => self.door.release_slot(slot),
                NextFrame::Done => break,
            }
        }
        self.source.attach(&self.door)?;
        if self.door.is_finished() {
            self.stop_run(); // a source without frames
        }
        Ok(())
    }

    /// What a free slot does next: what the source says, or nothing once the door has ended.
    fn next_frame(&self) -> NextFrame {
        if self.door.is_ended() {
            return NextFrame::Done;
        }
        let next = self.source.next_frame();
        if matches!(next, NextFrame::Done) {
            self.door.end();
        }
        next
    }

    /// Runs the workers to the end of the run (README.md, "The run") and returns its outcome.
    /// The workers are threads of the pool ("The worker pool"), handed the run once its first
    /// frames started; meanwhile the host thread watches the run (`watch`). Wall time runs from the
    /// first frames' start to the run's stop.
    ///
    /// A worker stuck in a call cannot be waited for: with `on_hang`, the outcome is made of what
    /// the other workers did once they exited and handed to it first.
    fn run_workers(&self, sink: &mut TraceSink) -> Result<RunOutcome, RunFailure> {
        let mut host_latency = latency_histogram();
        let crew = pool::hire(self.config.workers);
        let wall = Instant::now();
        let crew = match crew {
            Ok(crew) => {
                if let Err(error) = self.start_first_frames(&mut host_latency) {
                    self.fail(error);
                }
                crew
            }
            Err(error) => {
                // No frame starts, and no worker runs: the report lists them all as unreported.
                self.fail(RunError::Internal(format!("cannot start a worker thread: {error}")));
                pool::Crew::none()
            }
        };
        let hired = crew.len();
        // With warm-up frames, the wall time starts with the first frame after them (none
        // started: no wall time).
        let measured_from = || match self.config.warmup_frames {
            0 => Some(wall),
            _ => self.measured_from.get().copied(),
        };
        let wall_s = || {
            let stopped = self.stopped_at.get().copied().unwrap_or_else(Instant::now);
            measured_from().map_or(0.0, |from| stopped.saturating_duration_since(from).as_secs_f64())
        };
        let handed = crew.run(&|worker| self.work(worker), |crew| {
            let _stop = StopOnUnwind(self);
            let stuck = self.watch(wall, sink, hired);
            stuck.iter().for_each(|&worker| crew.retire(worker));
            match &self.config.on_hang {
                Some(on_hang) if !stuck.is_empty() => {
                    (on_hang.0)(self.outcome(&host_latency, sink, wall_s()));
                    true
                }
                _ => false,
            }
        });
        if handed {
            let error =
                RunError::Internal("the run's outcome was handed to on_hang, the call it was stuck in returned".into());
            return Err(RunFailure { error, partial: None });
        }
        self.outcome(&host_latency, sink, wall_s())
    }

    /// A worker's part of the run, on a pooled thread: the worker loop, whose counters and trace go
    /// to its `finished` cell (a panic fails the run instead), then the host is told it exited.
    fn work(&self, worker: u32) {
        let result = catch_unwind(AssertUnwindSafe(|| self.worker_main(worker)));
        self.sleep.leave(worker);
        match result {
            Ok(result) => *self.finished[worker as usize].lock().unwrap_or_else(|p| p.into_inner()) = Some(result),
            Err(payload) => {
                self.fail(RunError::Internal(format!("a worker panicked: {}", tomii_types::panic_message(&*payload))))
            }
        }
        self.exited.fetch_add(1, Ordering::Release);
        self.host.unpark();
    }

    /// The host thread's part while the workers run: takes the trace chunks workers hand over,
    /// turns a stop request into the end of the source (the frames in flight then complete), ends
    /// the run when the door ended with nothing in flight, and reports progress; until the run
    /// stops and each of the `spawned` workers exited or was found stuck in a call (one that does
    /// not return keeps its worker from exiting, even after the run's last frame). Returns those
    /// found stuck.
    fn watch(&self, wall: Instant, sink: &mut TraceSink, spawned: u32) -> Vec<u32> {
        let mut reported: Option<Instant> = None;
        let limit_ms = u64::try_from(self.config.scheduler_call_timeout.as_millis()).unwrap_or(u64::MAX);
        let kernel_limit_ms =
            self.config.kernel_timeout.map_or(u64::MAX, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
        // Per worker, then the host: whether it was found stuck in a call.
        let mut stuck = vec![false; self.config.workers as usize + 1];
        loop {
            let now_ms = u64::try_from(wall.elapsed().as_millis()).unwrap_or(u64::MAX);
            while let Some((worker, call)) = self.watchdog.look(now_ms, limit_ms, kernel_limit_ms, &stuck) {
                stuck[(worker as usize).min(self.config.workers as usize)] = true;
                let left = stuck[..self.config.workers as usize].iter().filter(|s| !**s).count();
                self.stuck(worker, call, left);
            }
            let stopped = self.stop.load(Ordering::Acquire);
            if let Some(pool) = &self.trace_pool {
                sink.drain(pool, &self.clock);
            }
            if let Some(request) = &self.config.stop
                && request.load(Ordering::Relaxed)
                && !self.door.is_ended()
            {
                self.interrupted.store(true, Ordering::Relaxed);
                self.door.end();
            }
            if !stopped && self.door.is_finished() {
                self.stop_run();
            }
            if let Some(progress) = &self.config.progress
                && (stopped || reported.is_none_or(|at| at.elapsed() >= PROGRESS_EVERY))
            {
                let frames = self.source.planned().unwrap_or(0);
                let frames_done = self.frames_done.load(Ordering::Relaxed);
                (progress.0)(super::Progress { frames_done, frames, elapsed: wall.elapsed() });
                reported = Some(Instant::now());
            }
            let found = stuck[..self.config.workers as usize].iter().filter(|s| **s).count();
            if stopped && self.exited.load(Ordering::Acquire) as usize + found >= spawned as usize {
                return (0..self.config.workers).filter(|&worker| stuck[worker as usize]).collect();
            }
            std::thread::park_timeout(WATCH_EVERY);
        }
    }

    fn worker_main(&self, worker: u32) -> WorkerResult {
        self.sleep.register(worker);
        let mut local = Local {
            pusher: Pusher {
                worker,
                scheduler: self.scheduler.caller(worker, &self.watchdog),
                ready: Vec::with_capacity(PUSH_CHUNK),
                self_take: true,
            },
            args: Vec::with_capacity(self.graph.max_args() + 1),
            list: Vec::with_capacity(self.graph.max_args()),
            kernels: KernelCaller::new(
                worker,
                ERROR_CAPACITY,
                self.config.kernel_timeout.is_some().then(|| self.watchdog.mark(worker)),
            ),
            counters: WorkerCounters {
                per_node: vec![NodeCounters::default(); self.graph.nodes.len()],
                durations: Durations::new(self.graph.nodes.len(), self.config.workers as usize, self.timing),
                ..WorkerCounters::default()
            },
            warmup: WorkerCounters {
                per_node: vec![NodeCounters::default(); self.graph.nodes.len()],
                ..WorkerCounters::default()
            },
            trace: WorkerTrace::new(self.trace_pool.as_ref()),
            latency: latency_histogram(),
        };
        // The buffer the scheduler pops into, apart from `local`: its descriptors are read in place.
        let mut popped = PopBuffer::new(self.config.pop_batch as usize);
        while let Some(count) = self.next_tasks(&mut local, &mut popped) {
            for task in popped.get(..count).unwrap_or_default() {
                if let Err(error) = self.execute(&mut local, task) {
                    self.fail(error);
                    break;
                }
            }
        }
        (local.counters, local.trace.into_chunk(), local.latency)
    }

    /// Pops the worker's next tasks, spinning and then parking while there are none. `None` when
    /// the run is over (finished or failed).
    fn next_tasks(&self, local: &mut Local, popped: &mut PopBuffer) -> Option<usize> {
        let worker = local.pusher.worker;
        loop {
            if let found @ (None | Some(1..)) = self.pop(local, popped) {
                return found;
            }
            self.sleep.start_spinning();
            let found = self.spin(local, popped);
            self.sleep.stop_spinning();
            if let found @ (None | Some(1..)) = found {
                return found;
            }
            // Idle workers, step 1: announce, then re-check (README.md, "Idle workers").
            self.sleep.prepare(worker);
            match self.pop(local, popped) {
                Some(0) => {}
                found => {
                    self.sleep.cancel(worker);
                    return found;
                }
            }
            let wake = self.sleep.park(worker, self.config.stall_timeout);
            let everyone_idle = wake == Wake::TimedOut && self.sleep.all_asleep();
            self.sleep.finish(worker);
            if everyone_idle {
                return self.check_stall(local, popped);
            }
        }
    }

    /// Tries the scheduler a few times with growing pauses. `Some(0)` if it had nothing.
    fn spin(&self, local: &mut Local, popped: &mut PopBuffer) -> Option<usize> {
        for round in 0..SPIN_ROUNDS {
            for _ in 0..(1u32 << round.min(6)) {
                std::hint::spin_loop();
            }
            if let found @ (None | Some(1..)) = self.pop(local, popped) {
                return found;
            }
        }
        Some(0)
    }

    /// One pop. `None` when the run is over or the scheduler failed (the failure is recorded).
    #[inline]
    fn pop(&self, local: &mut Local, popped: &mut PopBuffer) -> Option<usize> {
        if self.stop.load(Ordering::Acquire) {
            return None;
        }
        if self.door.has_requests()
            && let Err(error) = self.serve_door(local)
        {
            self.fail(error);
            return None;
        }
        if self.containment.is_ejected() {
            return Some(self.containment.fifo().pop(local.pusher.worker, popped));
        }
        match local.pusher.scheduler.pop(popped) {
            Ok(count) => Some(count),
            Err(violation) => match self.contract_violation(violation) {
                Ok(()) => Some(0),
                Err(error) => {
                    self.fail(error);
                    None
                }
            },
        }
    }

    /// Every worker was parked for the stall timeout: unless the scheduler now hands something
    /// out, the run cannot progress.
    #[cold]
    fn check_stall(&self, local: &mut Local, popped: &mut PopBuffer) -> Option<usize> {
        match self.pop(local, popped) {
            Some(0) if !self.holds_ready_task() => Some(0),
            Some(0) => {
                let incomplete = self.door.in_flight();
                let stall = RunError::Stall {
                    scheduler: self.scheduler.plugin().name.to_owned(),
                    timeout_ms: self.config.stall_timeout.as_millis(),
                    incomplete,
                };
                if self.containment.is_ejected() {
                    // Workers whose parks timed out together may all get here, after one of them
                    // ejected the scheduler and another took the recovered tasks: only no
                    // progress over several timeouts means the host's own FIFO lost a task, which
                    // would be an engine bug.
                    let done = self.frames_done.load(Ordering::Acquire);
                    if !self.containment.stuck(done, STUCK_TIMEOUTS * self.config.stall_timeout) {
                        return Some(0);
                    }
                    self.fail(RunError::Internal(stall.to_string()));
                    return None;
                }
                match self.containment.policy {
                    FaultPolicy::Stop => {
                        self.scheduler.abandon();
                        self.fail(stall);
                        None
                    }
                    FaultPolicy::Fallback => self.contract_violation(stall.to_string()).ok().map(|()| 0),
                }
            }
            found => found,
        }
    }

    /// Verifies a popped task and claims it; returns where it runs, or `None` for a task to skip
    /// (a violation under the fallback policy, or a task the host FIFO holds twice after an
    /// ejection).
    #[inline(always)]
    fn claim(&self, worker: u32, task: &TomiiTask) -> Result<Option<Claimed>, RunError> {
        let found = decode_handle(task.handle);
        let inst = match self.records.check(found.instance) {
            Some(inst) if self.table.contains(found) => inst,
            _ => return self.rejected(format!("pop returned handle {:#x}, which the host never issued", task.handle)),
        };
        let (slot, instance) = (found.slot, found.instance);
        let record = self.records.get(inst);
        let state = self.table.slot(slot);
        let generation = state.generation.load(Ordering::Acquire);
        let frame = || state.frame.load(Ordering::Relaxed);
        let never_pushed = "returned a task that was never pushed (or belongs to an earlier frame)";
        if found.tag != generation & 0xFF {
            return self.rejected(self.task_violation(never_pushed, instance, frame()));
        }
        if !Records::may_run(record, worker) {
            let what = format!(
                "handed a task to worker {worker}, outside its allowed workers {}..{}",
                record.worker_lo, record.worker_hi
            );
            return self.rejected(self.task_violation(&what, instance, frame()));
        }
        // One compare-and-swap checks that the task is ready and unclaimed, and claims it.
        match self.table.claim(slot, instance, generation, record.deps) {
            Ok(()) => Ok(Some(Claimed { slot, inst, generation, frame: frame() })),
            Err(ClaimError::Twice) => {
                self.rejected(self.task_violation("returned the same task twice", instance, frame()))
            }
            Err(ClaimError::NotReady) => self.rejected(self.task_violation(never_pushed, instance, frame())),
        }
    }

    /// A popped task the host will not run: a violation, unless the scheduler is already ejected
    /// (then it is a stale or duplicate entry, skipped).
    #[cold]
    fn rejected<T>(&self, violation: String) -> Result<Option<T>, RunError> {
        if self.containment.is_ejected() {
            return Ok(None);
        }
        self.contract_violation(violation).map(|()| None)
    }

    /// Runs one popped task and everything that follows its completion, then the continuations it
    /// kept for itself (README.md, "Inline continuation").
    #[inline]
    fn execute(&self, local: &mut Local, task: &TomiiTask) -> Result<(), RunError> {
        let Some(claimed) = self.claim(local.pusher.worker, task)? else {
            return Ok(());
        };
        let mut next = self.run_task(local, Some(task), claimed)?;
        while let Some(claimed) = next {
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            next = self.run_task(local, None, claimed)?;
        }
        Ok(())
    }

    /// Runs a claimed task: its body (each member's, under groups), its successors' release and its
    /// frame's completion. `popped`: the descriptor the scheduler handed out, which its hooks hear
    /// of (`None` for a continuation, which the scheduler never saw). Returns the continuation it
    /// kept, claimed, if any. Inlined with the rest of the per-task path (README.md, "The per-task
    /// record").
    #[inline(always)]
    fn run_task(
        &self,
        local: &mut Local,
        popped: Option<&TomiiTask>,
        claimed: Claimed,
    ) -> Result<Option<Claimed>, RunError> {
        let Claimed { slot, inst, generation, frame } = claimed;
        let instance = inst.get();
        let record = self.records.get(inst);
        if self.task_hooks
            && let Some(task) = popped
        {
            local.pusher.scheduler.task_started(task);
        }
        let first_start = if self.timing { self.clock.now_after_loads() } else { 0 };
        let inlined = popped.is_none();
        let end = if record.flags & GROUPED == 0 {
            self.run_member(local, record, slot, (instance, instance), frame, inlined, first_start)?
        } else {
            self.run_group(local, record, slot, instance, frame, inlined, first_start)?
        };
        if self.task_hooks
            && let Some(task) = popped
        {
            let ns = self.clock.ns_between(first_start, end);
            local.pusher.scheduler.task_completed(task, ns);
        }
        let continuation = self.release_successors(&mut local.pusher, claimed, end, self.config.inline_continuation)?;
        if record.flags & SINK != 0 && self.table.complete_sink(slot, generation) {
            self.finish_frame(&mut local.pusher, slot, frame, &mut local.latency)?;
        }
        Ok(continuation)
    }

    /// Runs one instance of the task (`member` of the task scheduled as `task`; both the same
    /// without groups), whose record is `record`, from `start`: its body, its result kept or
    /// dropped, its counters. Returns when it ended.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn run_member(
        &self,
        local: &mut Local,
        record: &Record,
        slot: u32,
        (member, task): (u32, u32),
        frame: u64,
        inlined: bool,
        start: Ticks,
    ) -> Result<Ticks, RunError> {
        let result = self.run_body(local, record, slot, member, frame);
        let end = if self.timing { self.clock.now() } else { 0 };
        let node = record.node;
        self.store(local, node, slot, member, frame, record.flags & KEEPS_RESULT != 0, result?);
        let counters = if frame < self.config.warmup_frames { &mut local.warmup } else { &mut local.counters };
        counters.inlined += u64::from(inlined);
        self.account(counters, &mut local.trace, local.pusher.worker, node, (slot, member, task, frame), (start, end));
        Ok(end)
    }

    /// Runs the instances of the group the task `leader` (whose record is `record`) runs, in order.
    /// Returns when the last ended.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn run_group(
        &self,
        local: &mut Local,
        record: &Record,
        slot: u32,
        leader: u32,
        frame: u64,
        inlined: bool,
        mut start: Ticks,
    ) -> Result<Ticks, RunError> {
        for member in self.graph.group_of(leader) {
            let member_record = if member == leader { record } else { self.records.get(self.inst(member)) };
            start = self.run_member(local, member_record, slot, (member, leader), frame, inlined, start)?;
        }
        Ok(start)
    }

    /// The counters a task of `frame` counts in: those of warm-up frames are left out of the
    /// report (README.md, "Warm-up frames").
    #[inline]
    fn counters<'l>(&self, local: &'l mut Local, frame: u64) -> &'l mut WorkerCounters {
        if frame < self.config.warmup_frames { &mut local.warmup } else { &mut local.counters }
    }

    /// Keeps or releases one instance's result; a skipped instance (its condition did not hold)
    /// leaves NONE as its result.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn store(
        &self,
        local: &mut Local,
        node: u32,
        slot: u32,
        instance: u32,
        frame: u64,
        keeps: bool,
        result: Option<TomiiValue>,
    ) {
        if result.is_none() {
            self.counters(local, frame).per_node[node as usize].skipped += 1;
        }
        let result = result.unwrap_or(TomiiValue::NONE);
        if keeps {
            // SAFETY: this task owns its cell in this generation; the value is owned.
            unsafe { self.table.store_result(slot, instance, result) };
        } else {
            // SAFETY: the kernel handed over ownership; nobody reads this result.
            drop(unsafe { Value::from_raw(result) });
        }
    }

    /// Counters, cost estimate and trace record of one execution of `instance` (in `slot`, of
    /// `frame`) on `worker`, a member of the task scheduled as `task` (itself without groups): the
    /// task's ready time is the member's. `counters` are those the frame counts in.
    #[inline(always)]
    fn account(
        &self,
        counters: &mut WorkerCounters,
        trace: &mut WorkerTrace,
        worker: u32,
        node: u32,
        (slot, instance, task, frame): (u32, u32, u32, u64),
        (start, end): (Ticks, Ticks),
    ) {
        counters.tasks += 1;
        let per_node = &mut counters.per_node[node as usize];
        per_node.count += 1;
        if self.timing {
            let ticks = end.saturating_sub(start);
            counters.busy += ticks;
            per_node.ticks += ticks;
            per_node.max_ticks = per_node.max_ticks.max(ticks);
            counters.durations.record(node, ticks);
            if per_node.count % COST_PUBLISH_EVERY == 1 {
                let mean = self.clock.ticks_to_ns(per_node.ticks / per_node.count);
                self.costs[node as usize].store(mean, Ordering::Relaxed);
            }
        }
        if let Some(pool) = &self.trace_pool {
            self.trace_task(pool, trace, worker, node, (slot, instance, task, frame), (start, end));
        }
    }

    /// The trace record of one execution (`account`'s arguments), apart from the per-task path.
    #[inline(never)]
    fn trace_task(
        &self,
        pool: &TracePool,
        trace: &mut WorkerTrace,
        worker: u32,
        node: u32,
        (slot, instance, task, frame): (u32, u32, u32, u64),
        (start, end): (Ticks, Ticks),
    ) {
        let cell = slot as usize * self.graph.instance_count() + task as usize;
        let record = TraceRecord {
            frame,
            ready: self.ready_at[cell].load(Ordering::Relaxed),
            start,
            end,
            node,
            instance: self.graph.inst_index[instance as usize],
            slot,
            worker,
        };
        trace.record(pool, record);
    }

    /// Counts this task's arrival on each successor and pushes those it made ready, except, with
    /// `inline` (`inline_continuation`), the first one this worker may run: that one is claimed at once and
    /// returned, for the worker to run next without the scheduler.
    #[inline(always)]
    fn release_successors(
        &self,
        pusher: &mut Pusher,
        claimed: Claimed,
        now: Ticks,
        inline: bool,
    ) -> Result<Option<Claimed>, RunError> {
        let Claimed { slot, inst, generation, frame } = claimed;
        let worker = pusher.worker;
        let mut continuation = None;
        pusher.self_take = true;
        for &next_inst in self.records.successors(self.records.get(inst)) {
            let (next, record) = (next_inst.get(), self.records.get(next_inst));
            if !self.table.arrive(slot, next, generation, record.deps) {
                continue;
            }
            // Only this worker saw `next` become ready, so the claim succeeds, unless a faulty
            // scheduler handed `next` out early and a worker claimed it already (or, after an
            // ejection, the scan queued it and another worker took it): then `next` is pushed
            // like any other, and a second claim of it is caught or skipped.
            if inline
                && continuation.is_none()
                && Records::may_run(record, worker)
                && self.table.claim(slot, next, generation, record.deps).is_ok()
            {
                self.mark_ready(next, slot, now);
                continuation = Some(Claimed { slot, inst: next_inst, generation, frame });
                // The worker runs its continuation next: it takes none of the pushed tasks itself.
                pusher.self_take = false;
                continue;
            }
            self.stage(pusher, next_inst, slot, generation, frame, now, worker)?;
        }
        self.flush(pusher)?;
        Ok(continuation)
    }

    /// Adds a ready task to the pusher's batch, pushing the batch when it is full.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn stage(
        &self,
        pusher: &mut Pusher,
        inst: Inst,
        slot: u32,
        generation: u32,
        frame: u64,
        now: Ticks,
        locality: u32,
    ) -> Result<(), RunError> {
        self.mark_ready(inst.get(), slot, now);
        // Described where it is pushed from: the 72-byte descriptor is copied once.
        pusher.ready.push(*self.records.template(inst));
        if let Some(task) = pusher.ready.last_mut() {
            self.fill_in(task, inst.get(), slot, generation, frame, now, locality);
        }
        if pusher.ready.len() == PUSH_CHUNK { self.flush(pusher) } else { Ok(()) }
    }

    /// Records when a task became ready, for its trace record (only with a trace).
    #[inline]
    fn mark_ready(&self, instance: u32, slot: u32, now: Ticks) {
        if !self.ready_at.is_empty() {
            self.ready_at[slot as usize * self.graph.instance_count() + instance as usize]
                .store(now, Ordering::Relaxed);
        }
    }

    /// The descriptor of a task that became ready at `now`.
    fn describe(&self, inst: Inst, slot: u32, generation: u32, frame: u64, now: Ticks, locality: u32) -> TomiiTask {
        let mut task = *self.records.template(inst);
        self.fill_in(&mut task, inst.get(), slot, generation, frame, now, locality);
        task
    }

    /// Fills in the per-frame fields of `task`, a copy of `instance`'s template.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn fill_in(
        &self,
        task: &mut TomiiTask,
        instance: u32,
        slot: u32,
        generation: u32,
        frame: u64,
        now: Ticks,
        locality: u32,
    ) {
        task.handle = encode_handle(slot, instance, generation);
        task.frame = frame;
        task.slot = slot;
        task.locality = locality;
        if self.timing {
            task.ready_ns = self.clock.ns_since_start(now);
            task.cost_ns = self.costs[task.node as usize].load(Ordering::Relaxed);
        }
    }

    /// Pushes the staged batch, if any (most completions of a chain or a pipeline stage none).
    #[inline(always)]
    fn flush(&self, pusher: &mut Pusher) -> Result<(), RunError> {
        if pusher.ready.is_empty() { Ok(()) } else { self.push_staged(pusher) }
    }

    /// Pushes the staged batch and wakes workers for what no awake worker will take.
    fn push_staged(&self, pusher: &mut Pusher) -> Result<(), RunError> {
        if self.containment.is_ejected() {
            self.containment.fifo().push(&pusher.ready);
        } else if let Err(violation) = pusher.scheduler.push(&pusher.ready) {
            // Under the fallback policy the ejection requeues these tasks from the counters.
            self.contract_violation(violation)?;
        }
        let taker = (pusher.self_take && pusher.worker != TOMII_NO_WORKER).then_some(pusher.worker);
        self.sleep.notify(taker, pusher.ready.iter().map(|t| (t.worker_lo, t.worker_hi)));
        pusher.self_take = false;
        pusher.ready.clear();
        Ok(())
    }

    /// Starts the frame the source tagged `tag` in `slot`, which the caller holds: a new
    /// generation, its root tasks, then its inputs, unless they come later, one by one (README.md,
    /// "Frames and their source").
    fn start_frame(
        &self,
        pusher: &mut Pusher,
        slot: u32,
        (tag, serial): (u64, u64),
        inputs: Option<Vec<Value>>,
        latency: &mut Histogram<u64>,
    ) -> Result<(), RunError> {
        if let Some(held) = self.held.get(slot as usize) {
            let done = held.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(done) = done {
                self.hand_over(slot, done);
            }
        }
        let now = self.clock.now();
        let frame = self.frames_started.fetch_add(1, Ordering::Relaxed);
        if frame == self.config.warmup_frames && frame > 0 {
            let _ = self.measured_from.set(Instant::now());
        }
        let generation = self.table.begin_frame(slot, frame, tag, serial, now);
        pusher.scheduler.frame_started(frame, slot);
        for &root in &self.graph.roots {
            self.stage(pusher, self.inst(root), slot, generation, frame, now, TOMII_NO_WORKER)?;
        }
        let mut completed = false;
        for (&instance, value) in self.graph.inputs.iter().zip(inputs.into_iter().flatten()) {
            let claimed = Claimed { slot, inst: self.inst(instance), generation, frame };
            completed |= self.give_input(pusher, claimed, value, now)?;
        }
        self.flush(pusher)?;
        if completed {
            self.finish_frame(pusher, slot, frame, latency)?;
        }
        Ok(())
    }

    /// Gives input instance `claimed.instance` of the frame its value: stored like a task's
    /// result, its arrival counted on its successors (pushing those it made ready). True when
    /// that completed the frame (the input is a sink). An input that already has its value (its
    /// frame was abandoned first) keeps it, and `value` is dropped.
    fn give_input(&self, pusher: &mut Pusher, claimed: Claimed, value: Value, now: Ticks) -> Result<bool, RunError> {
        let Claimed { slot, inst, generation, .. } = claimed;
        let (instance, record) = (inst.get(), self.records.get(inst));
        // The input's own claim: it is never run, and an ejection's scan must not queue it.
        if self.table.claim(slot, instance, generation, record.deps).is_err() {
            return Ok(false);
        }
        let raw = value.into_raw();
        if record.flags & KEEPS_RESULT != 0 {
            // SAFETY: the claim gives this call the input's cell in this generation.
            unsafe { self.table.store_result(slot, instance, raw) };
        } else {
            // SAFETY: an owned value nobody reads.
            drop(unsafe { Value::from_raw(raw) });
        }
        self.release_successors(pusher, claimed, now, false)?;
        Ok(record.flags & SINK != 0 && self.table.complete_sink(slot, generation))
    }

    /// Serves the door's requests in order, unless another worker is serving them (README.md,
    /// "Frames and their source").
    #[cold]
    fn serve_door(&self, local: &mut Local) -> Result<(), RunError> {
        // A request queued while this worker let go of the right is served at once, not left to
        // a worker that tried meanwhile and went to sleep.
        loop {
            let Some(serving) = self.door.serve() else { return Ok(()) };
            self.serve_requests(local, &serving)?;
            drop(serving);
            if !self.door.has_queued() {
                return Ok(());
            }
        }
    }

    /// Serves the door's requests while there are any.
    fn serve_requests(&self, local: &mut Local, serving: &super::door::Serving<'_>) -> Result<(), RunError> {
        while let Some(request) = self.door.take_request(serving) {
            let (pusher, latency) = (&mut local.pusher, &mut local.latency);
            match request {
                Request::Start { slot, serial, tag, inputs } => {
                    // This worker pops next: it takes one of the frame's first tasks itself.
                    pusher.self_take = true;
                    self.start_frame(pusher, slot, (tag, serial), inputs, latency)?;
                }
                Request::Deliver { frame, input, value } => {
                    let instance = self.graph.inputs[input as usize];
                    // A value for a frame no longer in its slot (abandoned, then completed) is
                    // dropped: it must not reach the slot's next frame.
                    let Some(claimed) = self.opened(frame, instance) else { continue };
                    if self.give_input(pusher, claimed, value, self.clock.now())? {
                        self.finish_frame(pusher, frame.slot, claimed.frame, latency)?;
                    }
                    self.flush(pusher)?;
                }
                Request::Abandon { frame } => self.abandon_frame(pusher, frame, latency)?,
                Request::SetOption { key, value, reply } => {
                    let outcome = if self.containment.is_ejected() {
                        Err("the scheduler was ejected; the run goes on on the host's FIFO".into())
                    } else {
                        self.scheduler.set_knob(&key, &value)
                    };
                    let _ = reply.send(outcome);
                }
            }
        }
        Ok(())
    }

    /// `instance` in the frame the door opened as `frame`, if that frame is still in its slot.
    fn opened(&self, frame: Opened, instance: u32) -> Option<Claimed> {
        let state = self.table.slot(frame.slot);
        let generation = state.generation.load(Ordering::Acquire);
        (state.busy.load(Ordering::Relaxed) && state.serial.load(Ordering::Relaxed) == frame.serial).then(|| Claimed {
            slot: frame.slot,
            inst: self.inst(instance),
            generation,
            frame: state.frame.load(Ordering::Relaxed),
        })
    }

    /// The source gave up on `frame`: its tasks not yet run are skipped from now on, and its inputs
    /// without a value get NONE, so that the frame completes (as abandoned).
    fn abandon_frame(&self, pusher: &mut Pusher, frame: Opened, latency: &mut Histogram<u64>) -> Result<(), RunError> {
        if self.opened(frame, 0).is_none() {
            return Ok(());
        }
        // Before any NONE is given: a task they make ready sees the flag.
        self.table.slot(frame.slot).abandoned.store(true, Ordering::Release);
        let now = self.clock.now();
        let mut completed = None;
        for &instance in &self.graph.inputs {
            let Some(claimed) = self.opened(frame, instance) else { break };
            if self.give_input(pusher, claimed, Value::none(), now)? {
                completed = Some(claimed.frame);
            }
        }
        self.flush(pusher)?;
        if let Some(number) = completed {
            self.finish_frame(pusher, frame.slot, number, latency)?;
        }
        Ok(())
    }

    /// The last task of `frame` completed: record it, hand its outputs to the source, and give the
    /// slot its next frame, or free it (README.md, "Frames and their source").
    fn finish_frame(
        &self,
        pusher: &mut Pusher,
        slot: u32,
        frame: u64,
        latency: &mut Histogram<u64>,
    ) -> Result<(), RunError> {
        let state = self.table.slot(slot);
        let latency_ns = self.clock.ns_between(state.started.load(Ordering::Relaxed), self.clock.now());
        let abandoned = state.abandoned.load(Ordering::Relaxed);
        if abandoned {
            self.frames_abandoned.fetch_add(1, Ordering::Relaxed);
        } else if frame < self.config.warmup_frames {
            self.frames_excluded.fetch_add(1, Ordering::Relaxed);
        } else {
            // `record` grows the histogram (auto-resize); it fails only beyond u64, never here.
            let _ = latency.record(latency_ns.clamp(1, MAX_LATENCY_NS));
        }
        pusher.scheduler.frame_completed(frame, slot, latency_ns);
        let tag = state.tag.load(Ordering::Relaxed);
        let next = self.next_frame();
        if matches!(next, NextFrame::Start { .. }) {
            self.door.count_start();
        }
        let last = self.door.count_done();
        if !abandoned {
            self.frames_done.fetch_add(1, Ordering::AcqRel);
        }
        state.busy.store(false, Ordering::Relaxed);
        let outputs = self.wants_outputs.then_some(Vec::new());
        let done = FrameDone { tag, frame, latency_ns, outputs, completed: true, abandoned };
        match self.held.get(slot as usize) {
            // The post-nodes may read this frame's results: they stay in the slot until it is
            // reused, or until the post-nodes ran.
            Some(held) => *held.lock().unwrap_or_else(|p| p.into_inner()) = Some(done),
            None => self.hand_over(slot, done),
        }
        match next {
            NextFrame::Start { tag, inputs } => self.start_frame(pusher, slot, (tag, 0), Some(inputs), latency)?,
            NextFrame::NotYet => self.door.release_slot(slot),
            NextFrame::Done => {}
        }
        if last {
            self.stop_run();
        }
        Ok(())
    }

    /// Hands a frame that left `slot` to the source, with its sink results moved out of the slot
    /// when the source wants them.
    fn hand_over(&self, slot: u32, mut done: FrameDone) {
        if let Some(outputs) = &mut done.outputs {
            *outputs = self.take_outputs(slot);
        }
        self.source.frame_done(done);
    }

    /// Moves the sink results of the frame in `slot` out of it.
    fn take_outputs(&self, slot: u32) -> FrameOutputs {
        self.sinks
            .iter()
            .flat_map(|&sink| self.graph.group_of(sink))
            .map(|instance| {
                // SAFETY: the frame completed, so every result of the slot is written; no task of
                // the slot runs until the next frame starts in it, which happens after this, and
                // sinks have no successor that could read the moved value.
                let value = unsafe { self.table.take_result(slot, instance) };
                (
                    self.graph.inst_node[instance as usize],
                    self.graph.inst_index[instance as usize],
                    Output::from_value(value),
                )
            })
            .collect()
    }

    /// A call did not return in time (README.md, "Stuck callbacks"): the run fails, or, for a
    /// worker's call into the scheduler under `FaultPolicy::Fallback` with `left` workers not
    /// stuck, the scheduler is ejected and the run goes on without that worker.
    #[cold]
    fn stuck(&self, worker: u32, call: Call, left: usize) {
        let error = if call == Call::Kernel {
            self.kernel_hang(worker)
        } else {
            RunError::SchedulerHang {
                scheduler: self.scheduler.plugin().name.to_owned(),
                call: call.name(),
                worker: if worker == TOMII_NO_WORKER { "the host thread".into() } else { format!("worker {worker}") },
                timeout_ms: self.config.scheduler_call_timeout.as_millis(),
            }
        };
        let ejectable = call != Call::Kernel && worker != TOMII_NO_WORKER && left > 0;
        if ejectable && self.contract_violation(error.to_string()).is_ok() {
            return;
        }
        self.fail(error);
    }

    /// The kernel call `worker` is stuck in, named.
    #[cold]
    fn kernel_hang(&self, worker: u32) -> RunError {
        let call = self.watchdog.subject(worker);
        let (slot, instance) = ((call >> 32) as u32, call as u32);
        let node = self.graph.node_of(instance);
        RunError::KernelHang {
            kernel: node.function.clone(),
            node: node.name.clone(),
            instance: self.graph.inst_index[instance as usize],
            frame: self.table.slot(slot).frame.load(Ordering::Relaxed),
            worker,
            timeout_ms: self.config.kernel_timeout.unwrap_or_default().as_millis(),
        }
    }

    /// `instance`, an id the engine took from the graph (an input, a root), as a checked id.
    fn inst(&self, instance: u32) -> Inst {
        self.records.check(instance).expect("an instance id of the graph")
    }

    /// Records the first failure and stops the run.
    #[cold]
    fn fail(&self, error: RunError) {
        let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        if failure.is_none() {
            *failure = Some(error);
        }
        drop(failure);
        self.stop_run();
    }

    /// Ends the run (README.md, "Shutdown"): every worker and the host thread wake and see `stop`.
    fn stop_run(&self) {
        let _ = self.stopped_at.set(Instant::now());
        self.stop.store(true, Ordering::Release);
        self.sleep.wake_all();
        self.host.unpark();
    }

    /// The error that ends a run whose scheduler broke its contract. The scheduler's state is not
    /// destroyed afterwards: it may be corrupt, and destroying it could crash the process.
    #[cold]
    fn fault(&self, violation: String) -> RunError {
        self.scheduler.abandon();
        RunError::SchedulerFault { scheduler: self.scheduler.plugin().name.to_owned(), violation }
    }

    #[cold]
    fn task_violation(&self, what: &str, instance: u32, frame: u64) -> String {
        let node = &self.graph.nodes[self.graph.inst_node[instance as usize] as usize].name;
        let index = self.graph.inst_index[instance as usize];
        format!("{what}: node {} instance {index}, frame {frame}", quote_name(node))
    }

    /// Builds the outcome once every worker has returned: runs the post-nodes, hands the source
    /// what it has not received yet, and reports.
    /// The run's outcome from what the workers put in `finished` (a worker that did not is
    /// reported as such): whole, or partial with the run's failure.
    fn outcome(
        &self,
        host_latency: &Histogram<u64>,
        sink: &mut TraceSink,
        wall_s: f64,
    ) -> Result<RunOutcome, RunFailure> {
        // The histograms merged: the first one taken whole, not added bucket by bucket into an
        // empty one (each has as many buckets as its longest latency needs: thousands).
        let mut latency = (!host_latency.is_empty()).then(|| host_latency.clone());
        let mut counters = Vec::with_capacity(self.finished.len());
        let mut unreported = Vec::new();
        for (worker, finished) in self.finished.iter().enumerate() {
            match finished.lock().unwrap_or_else(|p| p.into_inner()).take() {
                Some((worker_counters, chunk, worker_latency)) => {
                    sink.take(chunk, None, &self.clock);
                    match &mut latency {
                        Some(latency) => {
                            let _ = latency.add(&worker_latency);
                        }
                        None => latency = Some(worker_latency),
                    }
                    counters.push(worker_counters);
                }
                None => {
                    unreported.push(worker as u32);
                    let per_node = vec![NodeCounters::default(); self.graph.nodes.len()];
                    counters.push(WorkerCounters { per_node, ..WorkerCounters::default() });
                }
            }
        }
        let latency = latency.unwrap_or_else(|| host_latency.clone());
        let trace_error = sink.finish();
        let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner()).take();
        if failure.is_none() && !self.door.is_finished() {
            failure =
                Some(RunError::Internal(format!("the run ended with {} frame(s) in flight", self.door.in_flight())));
        }
        let mut post_outputs = Vec::new();
        if failure.is_none() {
            match self.run_post_nodes() {
                Ok(outputs) => post_outputs = outputs,
                Err(error) => failure = Some(error),
            }
        }
        for (slot, held) in self.held.iter().enumerate() {
            if let Some(done) = held.lock().unwrap_or_else(|p| p.into_inner()).take() {
                self.hand_over(slot as u32, done);
            }
        }
        self.hand_back_lost();
        let section = self.source.finish();
        if let (None, Err(reason)) = (&failure, trace_error) {
            failure = Some(RunError::Io { path: self.config.trace_file.clone().unwrap_or_default(), reason });
        }
        let mut report = self.report(&counters, &latency, sink, wall_s, failure.as_ref(), unreported);
        report.source_section.extend(section.map(|section| (self.source.kind(), section)));
        let trace = sink.take_records();
        let outcome = RunOutcome { report, trace, outputs: Vec::new(), post_outputs, clock: self.clock.clone() };
        match failure {
            None => Ok(outcome),
            Some(error) => Err(RunFailure { error, partial: Some(Box::new(outcome)) }),
        }
    }

    /// Tells the source of every frame that will not complete: handed in but never started, or in
    /// a slot when the run ended.
    fn hand_back_lost(&self) {
        let lost =
            |tag, frame, abandoned| FrameDone { tag, frame, latency_ns: 0, outputs: None, completed: false, abandoned };
        for tag in self.door.drain() {
            self.source.frame_done(lost(tag, u64::MAX, false));
        }
        for slot in 0..self.config.slots {
            let state = self.table.slot(slot);
            if state.busy.swap(false, Ordering::Relaxed) {
                let (tag, frame) = (state.tag.load(Ordering::Relaxed), state.frame.load(Ordering::Relaxed));
                self.source.frame_done(lost(tag, frame, state.abandoned.load(Ordering::Relaxed)));
            }
        }
    }

    fn report(
        &self,
        counters: &[WorkerCounters],
        latency: &Histogram<u64>,
        trace: &TraceSink,
        wall_s: f64,
        failure: Option<&RunError>,
        workers_unreported: Vec<u32>,
    ) -> Report {
        let stats = if self.containment.is_ejected() { None } else { self.scheduler.stats() };
        let frames_excluded = self.frames_excluded.load(Ordering::Relaxed);
        report::assemble(report::Parts {
            graph: self.graph,
            plugin: self.scheduler.plugin(),
            stats,
            ejected: self.containment.ejection(),
            workers: self.config.workers,
            slots: self.config.slots,
            inline_continuation: self.config.inline_continuation,
            counters,
            clock: &self.clock,
            timing: self.timing,
            latency,
            frames: self.frames_done.load(Ordering::Acquire).saturating_sub(frames_excluded),
            frames_excluded,
            frames_abandoned: self.frames_abandoned.load(Ordering::Relaxed),
            wall_s,
            interrupted: self.interrupted.load(Ordering::Relaxed),
            failure,
            workers_unreported,
            source: self.source.kind(),
            trace: self.trace_pool.is_some(),
            trace_records: trace.records,
            trace_lost: self.trace_pool.as_ref().map_or(0, TracePool::lost),
            trace_released: trace.released,
        })
    }
}
