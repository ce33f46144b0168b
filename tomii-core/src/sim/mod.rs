//! Simulation: a graph on virtual workers, driving the real scheduler dylib through the same
//! vtable and host checks as a real run, with task durations drawn from a cost model. README.md
//! beside this file is the protocol: time, events, one task, checks, frames, cost models.
//!
//! Single-threaded and deterministic: a run is a pure function of the graph, the scheduler, the
//! configuration and the seed. The outcome is the engine's `RunOutcome`, so the report, the trace
//! and every writer of them take it unchanged.

mod cost;

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use serde_json::json;
use tomii_types::abi::{TOMII_NO_WORKER, TomiiTask};

pub use cost::{CostModel, CostSpec, Dist};

use crate::engine::{
    self, Clock, Durations, NodeCounters, Progress, ReportParts, RunConfig, RunError, RunFailure, RunOutcome,
    TraceRecord, TraceSink, WorkerCounters,
};
use crate::graph::{CompiledGraph, quote_name};
use crate::plugin::{PopBuffer, SchedulerInstance, SchedulerPlugin};

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

/// The most slots a simulation has (each is a row of per-instance state).
const MAX_SLOTS: u32 = 1 << 16;
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
        .map_err(|error| {
            let path = run.trace_file.clone().unwrap_or_default();
            RunError::Io { reason: format!("cannot write the trace: {error}"), path }
        })?;
    let mut sim = Sim::new(graph, &instance, (run, config), costs, sink);
    let failure = sim.run().err();
    Ok(sim.outcome(failure.as_ref())).and_then(|outcome| match failure {
        None => Ok(outcome),
        Some(error) => Err(RunFailure { error, partial: Some(Box::new(outcome)) }),
    })
}

fn check(graph: &CompiledGraph, run: &RunConfig) -> Result<(), RunError> {
    let refuse = |message: String| Err(RunError::Config(message));
    if run.workers == 0 || run.workers > engine::MAX_WORKERS {
        return refuse(format!("workers {}: give 1 to {}", run.workers, engine::MAX_WORKERS));
    }
    if run.slots == 0 || run.slots > MAX_SLOTS {
        return refuse(format!("slots {}: give 1 to {MAX_SLOTS}", run.slots));
    }
    if run.pop_batch == 0 || run.pop_batch > engine::MAX_POP_BATCH {
        return refuse(format!("pop_batch {}: give 1 to {}", run.pop_batch, engine::MAX_POP_BATCH));
    }
    if run.frames == 0 {
        return refuse("frames 0: a simulation runs a given number of frames; give at least 1".to_owned());
    }
    if run.warmup_frames >= run.frames {
        return refuse(format!("warmup_frames {} must be below frames {}", run.warmup_frames, run.frames));
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
    // What `Sim::new` makes before the first event: a task template per instance, and an arrival
    // count, a state and a ready time per slot and instance.
    let (instances, cells) = (graph.instance_count() as u64, u64::from(run.slots) * graph.instance_count() as u64);
    let per_cell = (size_of::<u32>() + size_of::<State>() + size_of::<u64>()) as u64;
    let needed = instances.saturating_mul(size_of::<TomiiTask>() as u64).saturating_add(cells.saturating_mul(per_cell));
    engine::memory::refuse_beyond_available(needed, || format!("{} slot(s) × {instances} instances", run.slots))
        .map_err(RunError::Config)?;
    for node in &graph.nodes {
        if let Some((_, hi)) = node.use_workers.filter(|&(_, hi)| hi > run.workers) {
            return refuse(format!(
                "node {}: use_workers reaches worker {} but there are {} workers",
                quote_name(&node.name),
                hi - 1,
                run.workers
            ));
        }
    }
    Ok(())
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
    /// When it starts (after the pop's and the task's overheads) and ends (the sum of its
    /// members' draws later).
    start: u64,
    end: u64,
}

/// A virtual worker.
struct Worker {
    /// Tasks popped and claimed, not started yet, in the order they were popped.
    batch: VecDeque<TomiiTask>,
    running: Option<Running>,
    counters: WorkerCounters,
}

/// A slot: the frame in it.
#[derive(Clone, Copy, Default)]
struct Slot {
    generation: u32,
    frame: u64,
    start_ns: u64,
    /// Tasks of the frame not done yet; 0 when the slot is free.
    remaining: u64,
}

/// Where a task is in its frame.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Ready,
    Claimed,
}

struct Sim<'a> {
    graph: &'a CompiledGraph,
    scheduler: &'a SchedulerInstance<'a>,
    run: &'a RunConfig,
    config: &'a SimConfig,
    costs: CostModel,
    rng: Pcg64Mcg,
    templates: Vec<TomiiTask>,
    /// Tasks (group leaders) per frame.
    tasks_per_frame: u64,
    events: BinaryHeap<Reverse<(u64, u64, Event)>>,
    sequence: u64,
    now: u64,
    workers: Vec<Worker>,
    slots: Vec<Slot>,
    /// Per slot × instance.
    arrivals: Vec<u32>,
    states: Vec<State>,
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
    latency: Histogram<u64>,
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
        let tasks_per_frame =
            (0..graph.instance_count() as u32).filter(|&i| graph.is_task(i) && !graph.is_input(i)).count() as u64;
        Sim {
            graph,
            scheduler,
            run,
            config,
            costs,
            rng: Pcg64Mcg::seed_from_u64(config.seed),
            templates: engine::templates(graph, run.workers),
            tasks_per_frame,
            events: BinaryHeap::new(),
            sequence: 0,
            now: 0,
            workers: (0..run.workers)
                .map(|_| Worker { batch: VecDeque::new(), running: None, counters: counters() })
                .collect(),
            slots: vec![Slot::default(); run.slots as usize],
            arrivals: vec![0; cells],
            states: vec![State::Waiting; cells],
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
            pop: PopBuffer::new(run.pop_batch as usize),
            latency: engine::latency_histogram(),
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

    fn run(&mut self) -> Result<(), RunError> {
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
                    let incomplete = self.slots.iter().filter(|s| s.remaining > 0).count();
                    return Err(self.violation(format!(
                        "every virtual worker is idle with {incomplete} frame(s) incomplete and nothing handed out \
                         (was a pushed task lost?)"
                    )));
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
        match self.slots.iter().position(|s| s.remaining == 0) {
            Some(slot) => self.start_frame(slot as u32, TOMII_NO_WORKER),
            None => {
                self.waiting += 1;
                Ok(())
            }
        }
    }

    /// Starts the next frame in the free `slot`, its roots pushed by `pusher`: the host for the
    /// first frames and for paced arrivals, and, as in a real run, the worker whose completion
    /// freed the slot for the frames after them.
    fn start_frame(&mut self, slot: u32, pusher: u32) -> Result<(), RunError> {
        let frame = self.started;
        self.started += 1;
        let state = &mut self.slots[slot as usize];
        state.generation = state.generation.wrapping_add(1);
        *state = Slot { generation: state.generation, frame, start_ns: self.now, remaining: self.tasks_per_frame };
        if frame == self.run.warmup_frames {
            self.measured_from = Some(self.now);
        }
        let cells = self.cells(slot);
        self.arrivals[cells.clone()].fill(0);
        self.states[cells].fill(State::Waiting);
        self.scheduler.frame_started(frame, slot);
        for &root in &self.graph.roots {
            self.make_ready(slot, root, TOMII_NO_WORKER);
        }
        self.push(pusher)
    }

    fn cells(&self, slot: u32) -> std::ops::Range<usize> {
        let count = self.graph.instance_count();
        slot as usize * count..(slot as usize + 1) * count
    }

    fn cell(&self, slot: u32, instance: u32) -> usize {
        slot as usize * self.graph.instance_count() + instance as usize
    }

    /// Marks `instance` of `slot` ready now and stages its descriptor.
    fn make_ready(&mut self, slot: u32, instance: u32, locality: u32) {
        let cell = self.cell(slot, instance);
        self.states[cell] = State::Ready;
        self.ready_at[cell] = self.now;
        let mut task = self.templates[instance as usize];
        let state = self.slots[slot as usize];
        task.handle = handle(state.generation, slot, instance);
        task.frame = state.frame;
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
        let pushed = self.scheduler.push(worker, &self.staged);
        // As a real run wakes a parked worker for each pushed task no awake worker will take:
        // the pusher takes one in its range itself (it asks next), and for each other the lowest
        // idle worker inside the task's range is woken.
        if self.run.wake_all_on_push {
            // The pusher is not idle: it asks next.
            self.woken.extend(std::mem::take(&mut self.idle));
        }
        let mut pusher_takes = worker != TOMII_NO_WORKER;
        for task in &self.staged {
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
        pushed.map_err(|violation| self.violation(violation))
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
            let count = self.scheduler.pop_guarded(worker, &mut self.pop).map_err(|v| self.violation(v))?;
            if count == 0 {
                self.idle.insert(worker);
                return Ok(());
            }
            self.idle.remove(&worker);
            for k in 0..count {
                let task = self.pop[k];
                self.claim(worker, &task)?;
                self.workers[worker as usize].batch.push_back(task);
            }
            start += self.config.overhead_pop_ns;
        }
        let Some(task) = self.workers[worker as usize].batch.pop_front() else { return Ok(()) };
        let leader = task.handle as u32;
        let mut end = start + self.config.overhead_task_ns;
        for member in self.graph.group_of(leader) {
            let node = self.graph.inst_node[member as usize];
            let ns = self.costs.draw(node, &mut self.rng);
            let drawn = &mut self.drawn[node as usize];
            *drawn = (drawn.0 + 1, drawn.1 + ns);
            end += ns;
        }
        self.scheduler.task_started(worker, &task);
        self.workers[worker as usize].running = Some(Running { task, start, end });
        self.schedule(end, Event::Done(worker));
        Ok(())
    }

    /// The real run's checks of a popped descriptor (engine README, "Handles and verification").
    fn claim(&mut self, worker: u32, task: &TomiiTask) -> Result<(), RunError> {
        let (tag, slot, instance) = unpack(task.handle);
        if slot >= self.run.slots || instance as usize >= self.graph.instance_count() || !self.graph.is_task(instance) {
            return Err(self.violation(format!("pop returned handle {:#x}, which the host never issued", task.handle)));
        }
        let state = self.slots[slot as usize];
        let cell = self.cell(slot, instance);
        let never_pushed = "returned a task that was never pushed (or belongs to an earlier frame)";
        if tag != state.generation & 0xFF || state.remaining == 0 {
            return Err(self.task_violation(never_pushed, instance, state.frame));
        }
        let template = &self.templates[instance as usize];
        if !(template.worker_lo..template.worker_hi).contains(&worker) {
            let what = format!(
                "handed a task to worker {worker}, outside its allowed workers {}..{}",
                template.worker_lo, template.worker_hi
            );
            return Err(self.task_violation(&what, instance, state.frame));
        }
        match self.states[cell] {
            State::Ready => {
                self.states[cell] = State::Claimed;
                Ok(())
            }
            State::Claimed => Err(self.task_violation("returned the same task twice", instance, state.frame)),
            State::Waiting => Err(self.task_violation(never_pushed, instance, state.frame)),
        }
    }

    /// The worker's running task ends now.
    fn complete(&mut self, worker: u32) -> Result<(), RunError> {
        let Running { task, start, end } = self.workers[worker as usize]
            .running
            .take()
            .ok_or_else(|| RunError::Internal("a worker ended no task".into()))?;
        let (_, slot, leader) = unpack(task.handle);
        let frame = self.slots[slot as usize].frame;
        let ready = self.ready_at[self.cell(slot, leader)];
        self.account(worker, &task, frame, ready, (start, end));
        self.scheduler.task_completed(worker, &task, end - start);
        self.last_end = self.last_end.max(end);
        for k in 0..self.graph.successors(leader).len() {
            let successor = self.graph.successors(leader)[k];
            let cell = self.cell(slot, successor);
            self.arrivals[cell] += 1;
            if self.arrivals[cell] == self.graph.dep_count[successor as usize] {
                self.make_ready(slot, successor, worker);
            }
        }
        self.push(worker)?;
        let state = &mut self.slots[slot as usize];
        state.remaining -= 1;
        if state.remaining == 0 {
            self.finish_frame(slot, worker)?;
        }
        // The completing worker asks first, as a real one pops right after its push.
        self.next_task(worker)
    }

    /// Counters and trace records of the task's members, one after another within its time.
    fn account(&mut self, worker: u32, task: &TomiiTask, frame: u64, ready: u64, (start, end): (u64, u64)) {
        // Only the handle: a scheduler with TOMII_SCHED_POP_HANDLES writes nothing else.
        let (_, slot, leader) = unpack(task.handle);
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
            if self.run.trace || self.run.trace_file.is_some() || !self.run.trace_taps.is_empty() {
                self.chunk.push(TraceRecord {
                    frame,
                    ready,
                    start: from,
                    end: to,
                    node,
                    instance: self.graph.inst_index[member as usize],
                    slot,
                    worker,
                });
                if self.chunk.len() == TRACE_CHUNK {
                    let full = std::mem::replace(&mut self.chunk, Vec::with_capacity(TRACE_CHUNK));
                    self.trace.take(full, None, &self.clock);
                }
            }
        }
    }

    fn finish_frame(&mut self, slot: u32, worker: u32) -> Result<(), RunError> {
        let state = self.slots[slot as usize];
        let latency = self.now - state.start_ns;
        if state.frame >= self.run.warmup_frames {
            // A zero-length frame (every task free) records the histogram's least value.
            let _ = self.latency.record(latency.max(1));
        }
        self.done += 1;
        self.scheduler.frame_completed(state.frame, slot, latency);
        if self.waiting > 0 {
            self.waiting -= 1;
            self.start_frame(slot, worker)?;
        } else if self.config.arrival_interval_ns.is_none() && self.started < self.frames {
            self.start_frame(slot, worker)?;
        }
        Ok(())
    }

    fn violation(&self, violation: String) -> RunError {
        RunError::SchedulerFault { scheduler: self.scheduler.plugin().name.to_owned(), violation }
    }

    fn task_violation(&self, what: &str, instance: u32, frame: u64) -> RunError {
        let node = &self.graph.node_of(instance).name;
        let index = self.graph.inst_index[instance as usize];
        self.violation(format!("{what}: node {} instance {index}, frame {frame}", quote_name(node)))
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

/// A handle: the generation's low 8 bits, the slot (24 bits) and the instance (32 bits).
fn handle(generation: u32, slot: u32, instance: u32) -> u64 {
    (u64::from(generation & 0xFF) << 56) | (u64::from(slot) << 32) | u64::from(instance)
}

/// (generation tag, slot, instance) of a handle.
fn unpack(handle: u64) -> (u32, u32, u32) {
    ((handle >> 56) as u32, ((handle >> 32) & 0xFF_FFFF) as u32, handle as u32)
}
