//! Simulation: a graph on virtual workers, driving the real scheduler dylib through the same
//! port (`plugin::SchedulerInstance`, its SERIAL lock, status handling and watchdog) and the same
//! host core (`host/`: handles, claim checks, readiness, frame completion, option checks) as a
//! real run, with task durations drawn from a cost model. README.md beside this file is the
//! protocol: time, events, one task, checks, frames, cost models.
//!
//! What is the simulator's own, and only that, lives here: the event queue, the virtual workers
//! and the cost model (`cost.rs`), the plain slot table the host core runs over (`table.rs`) and
//! the watchdog's thread (`watch.rs`). It must never check a decision or count readiness itself.
//! Deterministic: a run is a pure function of the graph, the scheduler, the configuration and the
//! seed. The outcome is the engine's `RunOutcome`, so the report, the trace and every writer of
//! them take it unchanged.

mod cost;
mod table;
mod watch;

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use serde_json::json;
use tomii_types::abi::{TOMII_NO_WORKER, TomiiTask};

use table::Table;

pub use cost::{CostModel, CostSpec, Dist};

use crate::engine::{
    self, Clock, Durations, Latencies, NodeCounters, Progress, ReportParts, RunConfig, RunError, RunFailure,
    RunOutcome, TraceRecord, TraceSink, WorkerCounters,
};
use crate::graph::{CompiledGraph, quote_name};
use crate::host::{self, Claim, Need, encode_handle};
use crate::plugin::{PopBuffer, SchedulerCaller, SchedulerInstance, SchedulerPlugin};

/// What a simulated run is told besides the graph, the scheduler and the run's own options
/// (`RunConfig`: workers, slots, frames, warm-up, pop batch, the scheduler's options, the trace,
/// the stop request and progress, read as a real run reads them).
#[derive(Clone, Debug, Default)]
pub struct SimConfig {
    /// The seed of every draw.
    pub seed: u64,
    pub cost: CostSpec,
    /// Frame k arrives at k × this; `None`: a frame starts whenever a slot is free.
    pub arrival_interval_ns: Option<u64>,
    /// The host's cost of one pop and of one task, added to virtual time.
    pub overhead_pop_ns: u64,
    pub overhead_task_ns: u64,
}

/// Records per trace chunk handed to the sink.
const TRACE_CHUNK: usize = 4096;
/// Events between two looks at the stop request and the progress clock (a few µs of work apart).
const POLL_EVERY: u64 = 1024;
/// How often progress is reported, in real time.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Simulates `graph` with `scheduler` (README.md); a failure keeps what ran until then.
pub fn simulate(
    graph: &CompiledGraph,
    scheduler: &SchedulerPlugin,
    run: &RunConfig,
    config: &SimConfig,
) -> Result<RunOutcome, RunFailure> {
    check(graph, run)?;
    let costs = CostModel::new(graph, &config.cost).map_err(RunError::Config)?;
    let setup = engine::scheduler_setup(graph, (run.workers, run.slots), &run.scheduler_options, run.frames);
    let instance = SchedulerInstance::create(scheduler, &setup).map_err(RunError::from)?;
    let names: Vec<String> = graph.nodes.iter().map(|n| n.name.clone()).collect();
    let sink = TraceSink::new(run.trace_file.as_deref(), run.trace.then_some(4 << 20), &names, run.trace_taps.clone())
        .map(|sink| sink.with_record_taps(run.record_taps.clone()))
        .map_err(|error| {
            let path = run.trace_file.clone().unwrap_or_default();
            RunError::Io { reason: format!("cannot write the trace: {error}"), path }
        })?;
    let mut sim = Sim::new(graph, &instance, (run, config), costs, sink);
    let (result, found) = watch::watched(&instance, run, |hung| sim.run(hung))?;
    if found.handed {
        let error =
            RunError::Internal("the run's outcome was handed to on_hang, the call it was stuck in returned".into());
        return Err(RunFailure { error, partial: None });
    }
    let failure = found.hang.or(result.err());
    let outcome = sim.outcome(failure.as_ref());
    match failure {
        None => Ok(outcome),
        Some(error) => Err(RunFailure { error, partial: Some(Box::new(outcome)) }),
    }
}

/// Refuses what a simulation cannot model, then checks the options as a real run does (the host
/// core's `check_config`, its messages), with the memory the simulation's own state takes.
fn check(graph: &CompiledGraph, run: &RunConfig) -> Result<(), RunError> {
    let refuse = |message: String| Err(RunError::Config(message));
    if run.frames == 0 {
        return refuse("frames 0: a simulation runs a given number of frames; give at least 1".to_owned());
    }
    if graph.network.is_some() {
        return refuse(format!(
            "graph {}: has a network source; simulate its pacing with an arrival interval instead",
            quote_name(&graph.name)
        ));
    }
    if !graph.inputs.is_empty() {
        return refuse(format!(
            "graph {}: its inputs are given by a program (a session), which a simulation does not model",
            quote_name(&graph.name)
        ));
    }
    // What `Sim::new` makes before the first event: a task template per instance, and the
    // counters and a ready time per slot and instance.
    host::check_config(graph, run, |cells| {
        let per_cell = (Table::CELL_BYTES + size_of::<u64>()) as u64;
        let instances = graph.instance_count() as u64;
        Ok(instances.saturating_mul(size_of::<TomiiTask>() as u64).saturating_add(cells.saturating_mul(per_cell)))
    })
}

/// What happens at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// The next frame of a paced source arrives.
    Arrive,
    /// The worker's current task ends.
    Done(u32),
}

/// A task a worker has taken, and when it runs.
#[derive(Clone, Copy)]
struct Running {
    task: TomiiTask,
    /// Where it runs, as its verification found it.
    claim: Claim,
    /// When it starts (after the pop's and the task's overheads) and ends (the sum of its
    /// members' draws later).
    start: u64,
    end: u64,
}

/// A virtual worker.
struct Worker<'a> {
    /// Tasks popped and claimed, not started yet, in the order they were popped.
    batch: VecDeque<(TomiiTask, Claim)>,
    /// How it calls the scheduler: each call marked for the watchdog.
    caller: SchedulerCaller<'a>,
    running: Option<Running>,
    counters: WorkerCounters,
}

struct Sim<'a> {
    graph: &'a CompiledGraph,
    scheduler: &'a SchedulerInstance<'a>,
    run: &'a RunConfig,
    config: &'a SimConfig,
    costs: CostModel,
    rng: Pcg64Mcg,
    templates: Vec<TomiiTask>,
    /// Per instance: whether it is a sink (its completion counts towards its frame's).
    sink: Vec<bool>,
    events: BinaryHeap<Reverse<(u64, u64, Event)>>,
    sequence: u64,
    now: u64,
    workers: Vec<Worker<'a>>,
    /// How the host calls the scheduler (the first frames, paced arrivals).
    host: SchedulerCaller<'a>,
    table: Table,
    /// Per slot × instance: when the task became ready.
    ready_at: Vec<u64>,
    /// Per node: durations drawn and their sum, for `cost_ns`.
    drawn: Vec<(u64, u64)>,
    /// Frames started and completed; frames of a paced source that arrived and wait for a slot
    /// (they start in arrival order, numbered as they start); frames arrived.
    started: u64,
    done: u64,
    waiting: u64,
    arrived: u64,
    /// The frames to run: the configuration's, until a stop request cuts them to those started.
    frames: u64,
    /// A stop request ended the simulation early; events handled, and when progress was said.
    interrupted: bool,
    events_handled: u64,
    reported: Option<Instant>,
    begun: Instant,
    staged: Vec<TomiiTask>,
    /// Workers with nothing to run, and those a push woke, to ask for work after the event.
    idle: BTreeSet<u32>,
    woken: Vec<u32>,
    pop: PopBuffer,
    latency: Latencies,
    /// When the first measured frame started, and the last frame ended.
    measured_from: Option<u64>,
    last_end: u64,
    trace: TraceSink,
    chunk: Vec<TraceRecord>,
    clock: Clock,
}

impl<'a> Sim<'a> {
    fn new(
        graph: &'a CompiledGraph,
        scheduler: &'a SchedulerInstance<'a>,
        (run, config): (&'a RunConfig, &'a SimConfig),
        costs: CostModel,
        trace: TraceSink,
    ) -> Self {
        let cells = run.slots as usize * graph.instance_count();
        let counters = || WorkerCounters {
            per_node: vec![NodeCounters::default(); graph.nodes.len()],
            durations: Durations::new(graph.nodes.len(), run.workers as usize, true),
            ..WorkerCounters::default()
        };
        let sinks = host::sinks(graph);
        let mut sink = vec![false; graph.instance_count()];
        sinks.iter().for_each(|&i| sink[i as usize] = true);
        Sim {
            graph,
            scheduler,
            run,
            config,
            costs,
            rng: Pcg64Mcg::seed_from_u64(config.seed),
            templates: engine::templates(graph, run.workers),
            sink,
            events: BinaryHeap::new(),
            sequence: 0,
            now: 0,
            workers: (0..run.workers)
                .map(|w| Worker {
                    batch: VecDeque::new(),
                    caller: scheduler.caller(w),
                    running: None,
                    counters: counters(),
                })
                .collect(),
            host: scheduler.caller(TOMII_NO_WORKER),
            table: Table::new(run.slots, graph.instance_count(), sinks.len()),
            ready_at: vec![0; cells],
            drawn: vec![(0, 0); graph.nodes.len()],
            started: 0,
            done: 0,
            waiting: 0,
            arrived: 0,
            frames: run.frames,
            interrupted: false,
            events_handled: 0,
            reported: None,
            begun: Instant::now(),
            staged: Vec::new(),
            idle: (0..run.workers).collect(),
            woken: Vec::new(),
            pop: PopBuffer::new(run.pop_room(scheduler.plugin()) as usize),
            latency: Latencies::new(),
            measured_from: None,
            last_end: 0,
            trace,
            chunk: Vec::with_capacity(TRACE_CHUNK),
            clock: Clock::simulated(),
        }
    }

    fn schedule(&mut self, at: u64, event: Event) {
        self.sequence += 1;
        self.events.push(Reverse((at, self.sequence, event)));
    }

    /// Runs the simulation to its last frame, or until it fails or the watchdog finds a call
    /// stuck (`hung`: the watchdog's error is the simulation's then).
    fn run(&mut self, hung: &AtomicBool) -> Result<(), RunError> {
        match self.config.arrival_interval_ns {
            Some(_) => self.schedule(0, Event::Arrive),
            None => {
                for slot in 0..self.run.slots.min(u32::try_from(self.frames).unwrap_or(u32::MAX)) {
                    self.start_frame(slot, TOMII_NO_WORKER)?;
                }
            }
        }
        self.wake()?;
        while self.done < self.frames {
            if hung.load(Ordering::Relaxed) {
                return Err(RunError::Internal("the watchdog found a stuck call".into()));
            }
            self.events_handled += 1;
            if self.events_handled.is_multiple_of(POLL_EVERY) {
                self.poll();
            }
            let Some(Reverse((at, _, event))) = self.events.pop() else {
                // As a real run's parked workers look again when their stall timeout passes,
                // every idle worker asks once more before the run is declared stalled.
                self.woken.extend(std::mem::take(&mut self.idle));
                self.wake()?;
                if self.events.is_empty() {
                    // The scheduler holds work it will not hand out: a stall, as a real run says it.
                    self.scheduler.abandon();
                    return Err(RunError::Stall {
                        scheduler: self.scheduler.plugin().name.to_owned(),
                        timeout_ms: self.run.stall_timeout.as_millis(),
                        incomplete: self.table.slots.iter().filter(|s| s.busy).count() as u64,
                    });
                }
                continue;
            };
            self.now = at;
            match event {
                Event::Arrive => self.arrive()?,
                Event::Done(worker) => self.complete(worker)?,
            }
            self.wake()?;
        }
        self.report_progress();
        Ok(())
    }

    /// Looks at the stop request, and says how far the simulation got when it is time to.
    fn poll(&mut self) {
        if !self.interrupted && self.run.stop.as_ref().is_some_and(|stop| stop.load(Ordering::Relaxed)) {
            // As a real run stops: the frames in flight complete, no other starts.
            self.interrupted = true;
            self.frames = self.started;
            self.waiting = 0;
        }
        if self.reported.is_none_or(|at| at.elapsed() >= PROGRESS_EVERY) {
            self.report_progress();
        }
    }

    fn report_progress(&mut self) {
        if let Some(progress) = &self.run.progress {
            (progress.0)(Progress { frames_done: self.done, frames: self.frames, elapsed: self.begun.elapsed() });
            self.reported = Some(Instant::now());
        }
    }

    fn arrive(&mut self) -> Result<(), RunError> {
        if self.interrupted {
            return Ok(()); // an arrival already scheduled when the stop came
        }
        self.arrived += 1;
        if self.arrived < self.frames {
            let interval = self.config.arrival_interval_ns.unwrap_or(0);
            self.schedule(self.arrived.saturating_mul(interval), Event::Arrive);
        }
        match self.table.slots.iter().position(|s| !s.busy) {
            Some(slot) => self.start_frame(slot as u32, TOMII_NO_WORKER),
            None => {
                self.waiting += 1;
                Ok(())
            }
        }
    }

    /// Starts the next frame in the free `slot`, its roots pushed by `pusher`: the host for the
    /// first frames and for paced arrivals, and, as in a real run, the worker whose completion
    /// freed the slot for the frames after them. A new generation of the slot: nothing is reset.
    fn start_frame(&mut self, slot: u32, pusher: u32) -> Result<(), RunError> {
        let frame = self.started;
        self.started += 1;
        let generation = self.table.begin_frame(slot, frame, self.now);
        if frame == self.run.warmup_frames {
            self.measured_from = Some(self.now);
        }
        self.scheduler.frame_started_by(self.caller(pusher), frame, slot);
        for &root in &self.graph.roots {
            self.make_ready(slot, root, generation, TOMII_NO_WORKER);
        }
        self.push(pusher)
    }

    /// How `worker` (or the host, `TOMII_NO_WORKER`) calls the scheduler.
    fn caller(&self, worker: u32) -> SchedulerCaller<'a> {
        self.workers.get(worker as usize).map_or(self.host, |w| w.caller)
    }

    fn cell(&self, slot: u32, instance: u32) -> usize {
        slot as usize * self.graph.instance_count() + instance as usize
    }

    /// Marks `instance` of `slot` (in `generation`) ready now and stages its descriptor.
    fn make_ready(&mut self, slot: u32, instance: u32, generation: u32, locality: u32) {
        let cell = self.cell(slot, instance);
        self.ready_at[cell] = self.now;
        let mut task = self.templates[instance as usize];
        task.handle = encode_handle(slot, instance, generation);
        task.frame = self.table.slots[slot as usize].frame;
        task.slot = slot;
        task.locality = locality;
        task.ready_ns = self.now;
        let (count, sum) = self.drawn[task.node as usize];
        task.cost_ns = sum.checked_div(count).unwrap_or(0);
        self.staged.push(task);
    }

    fn push(&mut self, worker: u32) -> Result<(), RunError> {
        if self.staged.is_empty() {
            return Ok(());
        }
        let pushed = self.scheduler.push_by(self.caller(worker), &self.staged);
        self.wake_for_pushed(worker, None);
        pushed.map_err(|violation| self.violation(violation))
    }

    /// What a completing worker made ready, pushed as a real run pushes it (`push_keep` when the
    /// scheduler has it, or the rule of the worker's keep gate while that is open): the task kept
    /// for `worker`, claimed, goes first in its batch, to run next without a pop (engine README,
    /// "Kept tasks"). A worker that still holds tasks of its last pop is offered no keep: those
    /// run first, unless the scheduler's order puts a kept task ahead of them
    /// (`TOMII_SCHED_KEEP_BEFORE_BATCH`).
    fn push_completed(&mut self, worker: u32) -> Result<(), RunError> {
        let holds_popped = self.workers.get(worker as usize).is_some_and(|state| !state.batch.is_empty());
        let barred = holds_popped && !self.scheduler.plugin().keeps_before_batch();
        if self.staged.is_empty() || !self.scheduler.keeps() || barred {
            return self.push(worker);
        }
        let pushed = if self.scheduler.gate_open(worker) {
            self.scheduler.keep_at_gate(self.caller(worker), &self.staged)
        } else {
            self.scheduler.push_keep_by(self.caller(worker), &self.staged)
        };
        let kept = pushed.map_err(|violation| self.violation(violation))?;
        let task = kept.and_then(|index| self.staged.get(index).copied());
        self.wake_for_pushed(worker, kept);
        if let Some(task) = task {
            let claim = self.claim(worker, &task)?;
            let state = &mut self.workers[worker as usize];
            state.counters.kept += u64::from(claim.frame >= self.run.warmup_frames);
            state.batch.push_front((task, claim));
        }
        Ok(())
    }

    /// After a push by `worker` (or the host) of the staged tasks but the one at `kept`, which
    /// `worker` runs next: wakes idle workers for them as a real run does, and empties the stage.
    fn wake_for_pushed(&mut self, worker: u32, kept: Option<usize>) {
        // As a real run wakes a parked worker for each pushed task no awake worker will take:
        // the pusher takes one in its range itself (it asks next), and for each other the lowest
        // idle worker inside the task's range is woken.
        if self.run.wake_all_on_push {
            // The pusher is not idle: it asks next.
            self.woken.extend(std::mem::take(&mut self.idle));
        }
        let mut pusher_takes = worker != TOMII_NO_WORKER && kept.is_none();
        for (index, task) in self.staged.iter().enumerate() {
            if Some(index) == kept {
                continue;
            }
            if pusher_takes && (task.worker_lo..task.worker_hi).contains(&worker) {
                pusher_takes = false;
                continue;
            }
            let found = self.idle.range(task.worker_lo..task.worker_hi).find(|&&w| w != worker).copied();
            if let Some(found) = found {
                self.idle.remove(&found);
                self.woken.push(found);
            }
        }
        self.staged.clear();
    }

    /// The workers a push woke ask for work, in the order they were woken.
    fn wake(&mut self) -> Result<(), RunError> {
        while !self.woken.is_empty() {
            for worker in std::mem::take(&mut self.woken) {
                self.next_task(worker)?;
            }
        }
        Ok(())
    }

    /// The worker starts its next popped task, or pops.
    fn next_task(&mut self, worker: u32) -> Result<(), RunError> {
        let mut start = self.now;
        if self.workers[worker as usize].batch.is_empty() {
            let caller = self.workers[worker as usize].caller;
            let count = self.scheduler.pop_by(caller, &mut self.pop).map_err(|v| self.violation(v))?;
            if count == 0 {
                self.idle.insert(worker);
                return Ok(());
            }
            self.idle.remove(&worker);
            for k in 0..count {
                let task = self.pop[k];
                let claim = self.claim(worker, &task)?;
                self.workers[worker as usize].batch.push_back((task, claim));
            }
            start += self.config.overhead_pop_ns;
        }
        let Some((task, claim)) = self.workers[worker as usize].batch.pop_front() else { return Ok(()) };
        let leader = claim.instance;
        let mut end = start + self.config.overhead_task_ns;
        for member in self.graph.group_of(leader) {
            let node = self.graph.inst_node[member as usize];
            let ns = self.costs.draw(node, &mut self.rng);
            let drawn = &mut self.drawn[node as usize];
            *drawn = (drawn.0 + 1, drawn.1 + ns);
            end += ns;
        }
        let caller = self.workers[worker as usize].caller;
        self.scheduler.task_started_by(caller, &task);
        self.workers[worker as usize].running = Some(Running { task, claim, start, end });
        self.schedule(end, Event::Done(worker));
        Ok(())
    }

    /// The real run's checks of a popped descriptor, the host core's (engine README, "Faults").
    fn claim(&mut self, worker: u32, task: &TomiiTask) -> Result<Claim, RunError> {
        let (graph, templates) = (self.graph, &self.templates);
        let need = |id: u32| {
            let template = templates.get(id as usize).filter(|_| graph.is_task(id))?;
            let (worker_lo, worker_hi) = (template.worker_lo, template.worker_hi);
            Some(((), Need { deps: graph.dep_count[id as usize], worker_lo, worker_hi }))
        };
        match host::verify(&self.table, worker, task.handle, need) {
            Ok(((), claim)) => Ok(claim),
            Err(violation) => Err(self.violation(violation.message(graph))),
        }
    }

    /// The worker's running task ends now.
    fn complete(&mut self, worker: u32) -> Result<(), RunError> {
        let Running { task, claim, start, end } = self.workers[worker as usize]
            .running
            .take()
            .ok_or_else(|| RunError::Internal("a worker ended no task".into()))?;
        let Claim { slot, instance: leader, generation, frame } = claim;
        let ready = self.ready_at[self.cell(slot, leader)];
        self.account(worker, claim, ready, (start, end));
        let caller = self.workers[worker as usize].caller;
        self.scheduler.task_completed_by(caller, &task, end - start);
        self.last_end = self.last_end.max(end);
        let graph = self.graph;
        for &successor in graph.successors(leader) {
            if self.table.counters.arrive(slot, successor, generation, graph.dep_count[successor as usize]) {
                self.make_ready(slot, successor, generation, worker);
            }
        }
        self.push_completed(worker)?;
        if self.sink[leader as usize] && self.table.complete_sink(slot, generation) {
            debug_assert_eq!(self.table.slots[slot as usize].frame, frame);
            self.finish_frame(slot, worker)?;
        }
        // The completing worker asks first, as a real one pops right after its push.
        self.next_task(worker)
    }

    /// Counters and trace records of the task's members, one after another within its time.
    fn account(&mut self, worker: u32, claim: Claim, ready: u64, (start, end): (u64, u64)) {
        // From the verified handle: a scheduler with TOMII_SCHED_POP_HANDLES writes nothing else.
        let Claim { slot, instance: leader, frame, .. } = claim;
        let members = self.graph.group_of(leader);
        let measured = frame >= self.run.warmup_frames;
        // The members' shares of the time, in order: the task's duration spread evenly (the draws
        // were summed when it started).
        let count = u64::from(members.end - members.start).max(1);
        let each = (end - start) / count;
        for (k, member) in members.enumerate() {
            let node = self.graph.inst_node[member as usize];
            let from = start + k as u64 * each;
            let to = if k as u64 + 1 == count { end } else { from + each };
            if measured {
                let counters = &mut self.workers[worker as usize].counters;
                counters.tasks += 1;
                counters.busy += to - from;
                let per_node = &mut counters.per_node[node as usize];
                per_node.count += 1;
                per_node.ticks += to - from;
                per_node.max_ticks = per_node.max_ticks.max(to - from);
                counters.durations.record(node, to - from);
            }
            if self.run.tracing() {
                self.chunk.push(TraceRecord {
                    frame,
                    ready,
                    start: from,
                    end: to,
                    node,
                    instance: self.graph.inst_index[member as usize],
                    slot,
                    worker,
                    // The model gives the resolution after a task no time.
                    resolved: to,
                });
                if self.chunk.len() == TRACE_CHUNK {
                    let full = std::mem::replace(&mut self.chunk, Vec::with_capacity(TRACE_CHUNK));
                    self.trace.take(full, None, &self.clock);
                }
            }
        }
    }

    fn finish_frame(&mut self, slot: u32, worker: u32) -> Result<(), RunError> {
        let state = &mut self.table.slots[slot as usize];
        state.busy = false;
        let (frame, latency) = (state.frame, self.now - state.start_ns);
        if frame >= self.run.warmup_frames {
            self.latency.record(latency);
        }
        self.done += 1;
        self.scheduler.frame_completed_by(self.caller(worker), frame, slot, latency);
        if self.waiting > 0 {
            self.waiting -= 1;
            self.start_frame(slot, worker)?;
        } else if self.config.arrival_interval_ns.is_none() && self.started < self.frames {
            self.start_frame(slot, worker)?;
        }
        Ok(())
    }

    /// The error that ends a simulation whose scheduler broke its contract; as in a real run,
    /// the scheduler's state is not destroyed afterwards (it may be corrupt).
    fn violation(&self, violation: String) -> RunError {
        self.scheduler.abandon();
        RunError::SchedulerFault { scheduler: self.scheduler.plugin().name.to_owned(), violation }
    }

    /// The outcome of what ran: the report, with the simulation's own section, and the trace.
    fn outcome(&mut self, failure: Option<&RunError>) -> RunOutcome {
        let rest = std::mem::take(&mut self.chunk);
        if !rest.is_empty() {
            self.trace.take(rest, None, &self.clock);
        }
        let trace_error = self.trace.finish().err();
        let counters: Vec<WorkerCounters> = self.workers.iter().map(|w| w.counters.clone()).collect();
        let frames_excluded = self.done.min(self.run.warmup_frames);
        let from = self.measured_from.unwrap_or(self.last_end);
        let wall_s = self.last_end.saturating_sub(from) as f64 / 1e9;
        let trace_on = self.run.trace || self.run.trace_file.is_some() || !self.run.trace_taps.is_empty();
        let records = self.trace.records;
        let mut report = engine::assemble_report(ReportParts {
            graph: self.graph,
            plugin: self.scheduler.plugin(),
            stats: self.scheduler.stats(),
            ejected: None,
            workers: self.run.workers,
            slots: self.run.slots,
            inline_continuation: false,
            pop_batch: self.run.pop_room(self.scheduler.plugin()),
            counters: &counters,
            clock: &self.clock,
            timing: true,
            latency: &self.latency,
            frames: self.done - frames_excluded,
            frames_excluded,
            frames_abandoned: 0,
            wall_s,
            interrupted: self.interrupted,
            failure,
            workers_unreported: Vec::new(),
            source: "simulated",
            trace: trace_on,
            trace_records: records,
            trace_lost: 0,
            trace_wait_s: 0.0,
            trace_released: self.trace.released,
        });
        let (run, config) = (self.run, self.config);
        report.source_section.insert(
            "simulation",
            json!({
                "virtual_workers": run.workers,
                "seed": config.seed,
                "arrival_interval_ns": config.arrival_interval_ns,
                "overhead_pop_ns": config.overhead_pop_ns,
                "overhead_task_ns": config.overhead_task_ns,
                "cost_model": self.costs.described,
                "virtual_time_s": self.last_end as f64 / 1e9,
                "trace_error": trace_error,
            }),
        );
        let trace = if self.run.trace { self.trace.take_records() } else { Vec::new() };
        RunOutcome::made(report, trace, self.clock.clone())
    }
}
