//! The engine proper: one run of a graph over the frames of a source, on the pool's threads.
//! README.md beside this directory describes each protocol this code follows; the files follow
//! its concepts:
//!
//! | file | what |
//! |---|---|
//! | `plan.rs`, `setup.rs`, `records.rs` | set-up: what the run works from, built once, read-only |
//! | `shared.rs` | what the threads share while the run runs |
//! | `local.rs` | a worker's own buffers, counters and callers |
//! | `frames.rs` | a frame's start, its inputs, the door's requests, its end |
//! | `host.rs` | threads, the host's watch (trace, stop, progress, stuck calls), failure |
//! | `worker_loop.rs` | pop, spin, park, the stall check |
//! | `task.rs`, `body.rs` | a task's execution, the hot path, and its body (conditions, loops) |
//! | `fault.rs` | containment of a scheduler that broke its contract |
//! | `outcome.rs` | post-nodes, the frames handed back, the report |
//!
//! Hot path (per task): pop → verify the handle → build arguments → call the kernel → store the
//! result → count arrivals on successors → push the newly ready batch → count the completion. It
//! allocates nothing, takes no lock and formats nothing; every buffer is sized before the run.
//! Plugins are called only through their ports (`plugin::SchedulerCaller`, `plugin::KernelCaller`);
//! the engine's own `unsafe` is its result cells'.

mod body;
mod fault;
mod frames;
mod host;
mod local;
mod outcome;
mod plan;
mod records;
mod setup;
mod shared;
mod task;
mod worker_loop;

pub(crate) use plan::compute_into;
pub(crate) use setup::{scheduler_setup, templates};

use plan::Plan;
use records::Inst;
use setup::check_config;
use shared::Shared;
use task::Continuation;

use super::memory;
use super::source::FrameSource;
use super::{RunConfig, RunError, RunFailure, RunOutcome};
use crate::graph::CompiledGraph;
use crate::plugin::{KernelSet, SchedulerInstance, SchedulerPlugin};

/// One run: its plan, its shared state, its scheduler and its source.
pub(super) struct Engine<'a> {
    /// What the run was set up with, never written afterwards.
    plan: Plan<'a>,
    /// What the threads share while the run runs.
    shared: Shared,
    /// The scheduler; every thread calls it through its own `SchedulerCaller`.
    scheduler: SchedulerInstance<'a>,
    /// Where frames come from and where their outputs go.
    source: &'a dyn FrameSource,
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
        // Only a source that delivers inputs one by one queues them at the door (`Shared::new`).
        let deliveries = if source.capabilities().delivers_inputs { graph.inputs.len() } else { 0 };
        check_config(graph, config, deliveries)?;
        let engine = Engine::new(graph, kernels, plugin, config, source)?;
        let mut sink = engine.trace_sink()?;
        engine.run_workers(&mut sink)
    }

    /// Binds the plan, sets up the shared state, then creates the scheduler (its `create`, once).
    /// The host's state comes first: its arrays, the largest, are refused as errors when the
    /// memory is not there, before a scheduler's `create` could abort on its own allocation. An
    /// abort while the host makes its state is the host's, and a crash report says so
    /// (`memory::HostAllocating`).
    fn new(
        graph: &'a CompiledGraph,
        kernels: &KernelSet,
        plugin: &'a SchedulerPlugin,
        config: &'a RunConfig,
        source: &'a dyn FrameSource,
    ) -> Result<Self, RunError> {
        let mut plan = Plan::new(graph, kernels, plugin, config, source)?;
        let allocating = memory::HostAllocating::start();
        let mut shared = Shared::new(&plan)?;
        drop(allocating);
        let setup = scheduler_setup(
            graph,
            (config.workers, config.slots),
            &config.scheduler_options,
            source.planned().unwrap_or(0),
        );
        let scheduler = SchedulerInstance::create(plugin, &setup)?;
        plan.task_hooks = scheduler.has_task_hooks();
        plan.continuation = match (config.inline_continuation, scheduler.keeps(), scheduler.has_gates()) {
            (true, _, _) => Continuation::Inline,
            (false, true, true) => Continuation::Gate,
            (false, true, false) => Continuation::Keep,
            (false, false, _) => Continuation::None,
        };
        // The run's clock starts after the scheduler's `create`, as before the state came first.
        shared.clock = super::clock::Clock::new();
        Ok(Engine { plan, shared, scheduler, source })
    }

    /// `instance`, an id the engine took from the graph (an input, a root), as a checked id.
    fn inst(&self, instance: u32) -> Inst {
        self.plan.records.check(instance).expect("an instance id of the graph")
    }
}
