//! The run's plan: what the engine works from, built once before the first frame (kernels bound,
//! conditions, computed initializations, the per-instance records) and never written afterwards,
//! so every thread reads it without synchronisation. Nothing here runs on the hot path; it must
//! never hold state that changes while the run runs (that is `shared.rs`'s).

use std::ffi::CString;

use tomii_types::abi::{TOMII_KERNEL_VARIADIC, TomiiValue};
use tomii_types::kernel::Value;

use super::body::{BoundCondition, NodeRun, usize_value};
use super::records::Records;
use super::setup::{bind_conditions, templates};
use super::task::Continuation;
use crate::engine::affinity::Placement;
use crate::engine::source::FrameSource;
use crate::engine::{RunConfig, RunError};
use crate::graph::{ArgSource, CompiledGraph, Literal, PendingInits, quote_name};
use crate::plugin::{Kernel, KernelCaller, KernelSet, NEVER_CALLED, SchedulerPlugin};

/// Bytes of the buffer a failing initialization or post-node kernel writes its message into.
pub(super) const CALL_ONCE_ERROR_CAPACITY: usize = 1024;

/// What the run was set up with.
pub(super) struct Plan<'a> {
    pub(super) graph: &'a CompiledGraph,
    pub(super) config: &'a RunConfig,
    /// Per node: its kernel and how its tasks run.
    pub(super) runs: Vec<NodeRun>,
    /// Whether the source may abandon a frame (README.md, "Inputs delivered one by one"): every
    /// body then looks at its slot's `abandoned` flag first.
    pub(super) abandonable: bool,
    /// Per node: its condition, bound to the condition's function.
    pub(super) conditions: Vec<Option<BoundCondition>>,
    /// The values of the computed initializations, element by element (README, "Computed
    /// initializations"), made before the first frame.
    pub(super) computed: Vec<Vec<Value>>,
    /// Per post-node: its kernel and whether it is variadic.
    pub(super) post_kernels: Vec<Kernel>,
    /// Whether the source takes each frame's outputs.
    pub(super) wants_outputs: bool,
    pub(super) consts: Vec<Value>,
    /// Instances without successors: their results are a frame's outputs, and a frame is complete
    /// when they all are.
    pub(super) sinks: Vec<u32>,
    /// Per instance: what the hot path reads about it (README.md, "The per-task record").
    pub(super) records: Records<'a>,
    /// Whether a trace is kept (in memory, in a file or by a tap).
    pub(super) tracing: bool,
    /// Measure kernel durations and ready times.
    pub(super) timing: bool,
    /// Measure each task's dependency resolution and log frame starts and deliveries, for the
    /// scheduler record (`RunConfig::record_taps`).
    pub(super) recording: bool,
    /// Whether the scheduler has a task hook (set once the scheduler is created).
    pub(super) task_hooks: bool,
    /// How a completing worker may go on without popping (set once the scheduler is created).
    pub(super) continuation: Continuation,
    /// Whether a kept task may run before the rest of its worker's last pop
    /// (`TOMII_SCHED_KEEP_BEFORE_BATCH`).
    pub(super) keep_before_batch: bool,
    /// The CPUs the workers are pinned to (`RunConfig::pin_workers`), read on the host thread.
    pub(super) placement: Option<Placement>,
    /// The room of each pop (`RunConfig::pop_room`).
    pub(super) pop_room: u32,
}

impl<'a> Plan<'a> {
    /// Binds every kernel, condition and post-node of `graph` and makes the computed
    /// initializations, on the calling thread; an error names what could not be bound.
    pub(super) fn new(
        graph: &'a CompiledGraph,
        kernels: &KernelSet,
        plugin: &SchedulerPlugin,
        config: &'a RunConfig,
        source: &dyn FrameSource,
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
        // Made while the graph compiled, when a count named one (graph README, "Computed
        // counts"): taken, never computed twice; a later run computes them and checks the shape.
        let computed = match graph.precomputed.take(config.workers) {
            Some(values) => values,
            None => {
                let values = compute_initializations(graph, kernels, config.workers)?;
                graph.precomputed.check(&graph.computed, &values).map_err(RunError::Config)?;
                values
            }
        };
        let post_kernels = bind_post_nodes(graph, kernels)?;
        let runs = node_runs(graph, bound, abandonable);
        let node_names = graph
            .nodes
            .iter()
            .map(|n| CString::new(n.name.as_str()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| RunError::Config(format!("{}: a node name contains a NUL character", graph.source)))?;
        let sinks = crate::host::sinks(graph);
        let (keeps_result, is_sink) = result_flags(graph, &sinks);
        let templates = templates(graph, config.workers);
        let records = Records::new(graph, config.workers, &runs, node_names, &keeps_result, &is_sink, templates);
        let tracing = config.tracing();
        let placement = config.pin_workers.then(Placement::of_this_thread).transpose().map_err(RunError::Config)?;
        Ok(Plan {
            graph,
            config,
            runs,
            abandonable,
            conditions,
            computed,
            post_kernels,
            wants_outputs: source.wants_outputs(),
            consts: graph.consts.iter().map(|literal| literal.to_value()).collect(),
            sinks,
            records,
            tracing,
            timing: config.task_timing || tracing || plugin.needs_timing(),
            recording: !config.record_taps.is_empty(),
            task_hooks: false,
            continuation: Continuation::None,
            keep_before_batch: plugin.keeps_before_batch(),
            placement,
            pop_room: config.pop_room(plugin),
        })
    }
}

/// Per node: how its tasks run, with its bound kernel.
fn node_runs(graph: &CompiledGraph, bound: Vec<Kernel>, abandonable: bool) -> Vec<NodeRun> {
    graph
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
        .collect()
}

/// Per instance: whether its result is kept (a successor or a post-node reads it, or it is a
/// sink's member), and whether it is a sink.
fn result_flags(graph: &CompiledGraph, sinks: &[u32]) -> (Vec<bool>, Vec<bool>) {
    let instances = graph.instance_count();
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
    for &sink in sinks {
        is_sink[sink as usize] = true;
    }
    (keeps_result, is_sink)
}

/// Computes every computed initialization, in file order, on the calling thread: its kernel is
/// called once per element, with `$index` the element's index.
pub(super) fn compute_initializations(
    graph: &CompiledGraph,
    kernels: &KernelSet,
    workers: u32,
) -> Result<Vec<Vec<Value>>, RunError> {
    let mut computed = Vec::with_capacity(graph.computed.len());
    let pending = PendingInits { source: &graph.source, computed: &graph.computed, consts: &graph.consts, workers };
    compute_into(&pending, kernels, &mut computed)?;
    Ok(computed)
}

/// Computes the initializations of `pending` from `computed.len()` on, appending their values:
/// the work of [`compute_initializations`], also run before a graph compiles (`evaluator`).
pub(crate) fn compute_into(
    pending: &PendingInits<'_>,
    kernels: &KernelSet,
    computed: &mut Vec<Vec<Value>>,
) -> Result<(), RunError> {
    if computed.len() >= pending.computed.len() {
        return Ok(());
    }
    let consts: Vec<Value> = pending.consts.iter().map(Literal::to_value).collect();
    let mut caller = KernelCaller::outside_run(CALL_ONCE_ERROR_CAPACITY);
    for init in &pending.computed[computed.len()..] {
        let kernel = kernels.resolve(|| format!("initialization {}", quote_name(&init.name)), &init.function)?;
        let name = CString::new(init.name.as_str()).map_err(|_| {
            RunError::Config(format!("{}: an initialization name contains a NUL character", pending.source))
        })?;
        let values = (0..init.count)
            .map(|element| {
                let args: Vec<TomiiValue> = init
                    .args
                    .iter()
                    .map(|&source| init_arg(source, &consts, computed, element, pending.workers))
                    .collect();
                caller.call_from(kernel, &args, &name, element, 0).map_err(|message| RunError::Init {
                    init: init.name.clone(),
                    kernel: init.function.clone(),
                    element,
                    message,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        computed.push(values);
    }
    Ok(())
}

/// One argument of element `element` of a computed initialization, borrowed.
fn init_arg(source: ArgSource, consts: &[Value], computed: &[Vec<Value>], element: u32, workers: u32) -> TomiiValue {
    match source {
        ArgSource::Const(c) => *consts[c as usize].as_raw(),
        ArgSource::Computed(k) => {
            let values = &computed[k as usize];
            *values[if values.len() == 1 { 0 } else { element as usize }].as_raw()
        }
        ArgSource::Index => usize_value(u64::from(element)),
        ArgSource::Workers => usize_value(u64::from(workers)),
        // The parser refuses edges in an initialization's arguments.
        ArgSource::Result(_) => TomiiValue::NONE,
    }
}

/// Binds every post-node to its kernel.
pub(super) fn bind_post_nodes(graph: &CompiledGraph, kernels: &KernelSet) -> Result<Vec<Kernel>, RunError> {
    graph
        .post
        .iter()
        .map(|post| Ok(kernels.resolve(|| format!("post-node {}", quote_name(&post.node.name)), &post.node.function)?))
        .collect()
}
