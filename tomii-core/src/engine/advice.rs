//! The report's `bottleneck_hints` and `optimization_suggestions`, each from a stated rule over
//! what the run measured (`analysis.rs`). A suggestion's `knob` is always a knob a tuner can set:
//! a runtime knob of the catalog (`knobs.rs`) or a graph knob `NODE.group_size` as the Python
//! package's `knob_space` offers it; its `rule` says how the estimate was made.
//!
//! The throughput model behind the worker and slot suggestions: with W the kernel time a frame
//! needs and C its critical path's, a run completes at most min(workers / W, slots / C) frames per
//! unit of time. Nothing here is measured again; with task timing off there is nothing to say.

use serde::Serialize;
use serde_json::{Value as Json, json};

use super::analysis::{Measured, NodeTimes, Summary};
use crate::graph::CompiledGraph;

/// A node's share of kernel time (percent) from which a hint names it.
const DOMINANT_PCT: f64 = 30.0;
/// Mean worker busy percentage below which the workers are called underused.
const UNDERUSED_BUSY_PCT: f64 = 50.0;
/// Mean worker busy percentage from which more workers may help.
const SATURATED_BUSY_PCT: f64 = 70.0;
/// Spread of worker busy percentages (points) from which the load is called unbalanced.
const IMBALANCE_POINTS: f64 = 25.0;
/// Mean execution time (µs) below which a task is small next to the runtime's cost per task.
const SMALL_TASK_US: f64 = 2.0;
/// Overhead share of the latency (percent) from which a hint names it.
const HIGH_OVERHEAD_PCT: f64 = 50.0;
/// Inline continuation is suggested from this share of tasks that could run inline and this
/// share of worker time outside kernels.
const INLINE_MIN_LINKS: f64 = 0.25;
const INLINE_MIN_OUTSIDE: f64 = 0.2;
/// Group sizes are suggested for at most this many nodes (the heaviest).
const MAX_GROUP_SUGGESTIONS: usize = 3;

/// What the rules read.
pub struct Facts<'a> {
    pub run: &'a Measured<'a>,
    /// Per graph node, by node id.
    pub nodes: &'a [NodeTimes],
    /// The critical path's execution time (µs), with task timing.
    pub path_us: Option<f64>,
    /// Per worker busy percentage, with task timing.
    pub busy: Option<&'a [f64]>,
    pub summary: &'a Summary,
}

#[derive(Clone, Debug, Serialize)]
pub struct Suggestion {
    /// "high" (estimated speedup at least 1.5), "medium" (at least 1.1) or "low".
    pub priority: &'static str,
    /// "parallelism", "pipelining", "scheduling_overhead" or "granularity".
    pub category: &'static str,
    pub description: String,
    pub action: String,
    /// A runtime knob of the catalog (`tomii knobs --json`) or a graph knob of `knob_space`.
    pub knob: String,
    pub suggested_value: Json,
    /// Throughput at the suggested value over today's, by `rule`.
    pub estimated_speedup: f64,
    /// "medium" when the run came within half of the model's bound, else "low".
    pub confidence: &'static str,
    /// How `estimated_speedup` was computed.
    pub rule: &'static str,
}

/// Work and time figures of one frame (µs), with task timing and at least one frame.
struct Model {
    /// Kernel time a frame needs (W).
    work: f64,
    /// The critical path's execution time (C).
    path: f64,
    /// Worker time outside kernels, as a share of all worker time.
    outside: f64,
    /// Worker time outside kernels per executed instance.
    outside_per_task: f64,
    /// Worker time a frame took (workers × wall time / frames).
    per_frame: f64,
}

impl Model {
    fn of(facts: &Facts) -> Option<Model> {
        let run = facts.run;
        let (path, busy) = (facts.path_us?, facts.busy?);
        if run.frames == 0 || run.wall_s <= 0.0 {
            return None;
        }
        let kernel_us: f64 = facts.nodes.iter().filter_map(|n| n.total_exec_us).sum();
        let worker_us = run.workers as f64 * run.wall_s * 1e6;
        let busy_us = busy.iter().sum::<f64>() / 100.0 * run.wall_s * 1e6;
        let tasks: u64 = facts.nodes.iter().map(|n| n.invocations).sum();
        let outside_us = (worker_us - busy_us).max(0.0);
        Some(Model {
            work: kernel_us / run.frames as f64,
            path,
            outside: if worker_us > 0.0 { outside_us / worker_us } else { 0.0 },
            outside_per_task: if tasks > 0 { outside_us / tasks as f64 } else { 0.0 },
            per_frame: worker_us / run.frames as f64,
        })
        .filter(|m| m.work > 0.0 && m.path > 0.0)
    }

    /// The most frames per µs `workers` and `slots` allow.
    fn bound(&self, workers: f64, slots: f64) -> f64 {
        (workers / self.work).min(slots / self.path)
    }
}

pub fn hints(facts: &Facts) -> Vec<String> {
    let Some(busy) = facts.busy else {
        return vec![
            "Task timing was off: per-node times, the critical path's weights and busy percentages were not \
                     measured, so no bottleneck can be named (leave task_timing on)."
                .into(),
        ];
    };
    let mut hints = Vec::new();
    let mut dominant: Vec<(usize, &NodeTimes)> =
        facts.nodes.iter().enumerate().filter(|(_, n)| n.pct_of_total.is_some_and(|p| p >= DOMINANT_PCT)).collect();
    dominant.sort_by(|a, b| or_zero(b.1.pct_of_total).total_cmp(&or_zero(a.1.pct_of_total)));
    for (id, node) in dominant {
        hints.push(format!(
            "Node {:?} takes {:.0}% of all kernel time ({} instances, {:.2} us per execution): it dominates the work.",
            facts.run.graph.nodes[id].name,
            node.pct_of_total.unwrap_or(0.0),
            node.factor,
            node.mean_exec_us.unwrap_or(0.0)
        ));
    }
    let mean_busy = busy.iter().sum::<f64>() / busy.len().max(1) as f64;
    if mean_busy < UNDERUSED_BUSY_PCT {
        hints.push(format!(
            "Workers spent {mean_busy:.0}% of the wall time in kernels on average: the rest went to waiting for \
             ready tasks and to the scheduler."
        ));
    }
    let (low, high) = busy.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &b| (lo.min(b), hi.max(b)));
    if busy.len() > 1 && high - low >= IMBALANCE_POINTS {
        hints.push(format!(
            "Worker busy percentages range from {low:.0}% to {high:.0}%: the load is unbalanced (use_workers \
             ranges, or a scheduler that keeps work on few workers)."
        ));
    }
    if let Some(model) = Model::of(facts) {
        let parallelism = model.work / model.path;
        let slots = facts.run.slots as f64;
        if parallelism * slots < facts.run.workers as f64 {
            hints.push(format!(
                "The graph's parallelism (kernel time {:.1} us over critical path {:.1} us = {parallelism:.2}) times \
                 {} slot(s) is below the {} workers: some workers cannot have work.",
                model.work, model.path, facts.run.slots, facts.run.workers
            ));
        }
        let tasks = facts.summary.total_tasks_per_stream.max(1) as f64;
        if model.work / tasks < SMALL_TASK_US {
            hints.push(format!(
                "Tasks take {:.2} us on average: the runtime's cost per task is a large share of it (group \
                 instances with group_size, or inline_continuation).",
                model.work / tasks
            ));
        }
    }
    if let Some(pct) = facts.summary.scheduling_overhead_diagnostic.overhead_pct.filter(|&p| p >= HIGH_OVERHEAD_PCT) {
        hints.push(format!(
            "{pct:.0}% of the mean frame latency is spent outside the critical path's kernels: frames wait for \
             workers, behind other frames' tasks, or in the scheduler."
        ));
    }
    hints
}

pub fn suggestions(facts: &Facts) -> Vec<Suggestion> {
    let Some(model) = Model::of(facts) else {
        return Vec::new();
    };
    let mut found: Vec<Suggestion> = [workers(facts, &model), slots(facts, &model), inline(facts, &model)]
        .into_iter()
        .flatten()
        .chain(group_sizes(facts, &model))
        .collect();
    found.sort_by(|a, b| b.estimated_speedup.total_cmp(&a.estimated_speedup));
    found
}

/// A suggestion with its priority from its speedup.
#[allow(clippy::too_many_arguments)]
fn suggestion(
    category: &'static str,
    knob: String,
    value: Json,
    speedup: f64,
    confidence: &'static str,
    description: String,
    action: String,
    rule: &'static str,
) -> Suggestion {
    let priority = if speedup >= 1.5 {
        "high"
    } else if speedup >= 1.1 {
        "medium"
    } else {
        "low"
    };
    Suggestion {
        priority,
        category,
        description,
        action,
        knob,
        suggested_value: value,
        estimated_speedup: speedup,
        confidence,
        rule,
    }
}

/// "medium" when the run reached half of the model's bound at today's values, else "low".
fn confidence(facts: &Facts, model: &Model) -> &'static str {
    let bound_per_s = model.bound(facts.run.workers as f64, facts.run.slots as f64) * 1e6;
    if facts.summary.throughput_frames_per_sec >= 0.5 * bound_per_s { "medium" } else { "low" }
}

const BOUND_RULE: &str = "throughput <= min(workers / W, slots / C), W the kernel time of a frame and C its critical \
                          path's; speedup = that bound at the suggested value over it at today's";

/// Rule: the workers bound the model (workers / W <= slots / C) and are busy at least
/// [`SATURATED_BUSY_PCT`] on average: as many workers as the slots can feed (slots × W / C), at
/// most twice today's and the machine's cores.
fn workers(facts: &Facts, model: &Model) -> Option<Suggestion> {
    let run = facts.run;
    let (workers, slots) = (run.workers as f64, run.slots as f64);
    let busy = facts.busy?;
    let mean_busy = busy.iter().sum::<f64>() / busy.len().max(1) as f64;
    if workers / model.work > slots / model.path || mean_busy < SATURATED_BUSY_PCT {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let wanted = (slots * model.work / model.path).ceil().min(2.0 * workers).min(cores);
    if wanted <= workers {
        return None;
    }
    let speedup = model.bound(wanted, slots) / model.bound(workers, slots);
    Some(suggestion(
        "parallelism",
        "workers".into(),
        json!(wanted as u64),
        speedup,
        confidence(facts, model),
        format!("The {} workers are busy {mean_busy:.0}% of the time and bound the throughput.", run.workers),
        format!("Run with --workers {wanted}."),
        BOUND_RULE,
    ))
}

/// Rule: the slots bound the model (slots / C < workers / W): the power of two of slots that
/// lets the workers be the bound (workers × C / W).
fn slots(facts: &Facts, model: &Model) -> Option<Suggestion> {
    let run = facts.run;
    let (workers, slots) = (run.workers as f64, run.slots as f64);
    if slots / model.path >= workers / model.work {
        return None;
    }
    let wanted = ((workers * model.path / model.work).ceil() as u64).next_power_of_two().min(1 << 24);
    if wanted <= run.slots as u64 {
        return None;
    }
    let speedup = model.bound(workers, wanted as f64) / model.bound(workers, slots);
    Some(suggestion(
        "pipelining",
        "slots".into(),
        json!(wanted),
        speedup,
        confidence(facts, model),
        format!(
            "{} frame(s) in flight cannot keep {} workers busy: a frame's critical path ({:.1} us) is long next to \
             the work per worker ({:.1} us).",
            run.slots,
            run.workers,
            model.path,
            model.work / workers
        ),
        format!("Run with --slots {wanted}."),
        BOUND_RULE,
    ))
}

/// Rule: inline continuation is off, at least [`INLINE_MIN_LINKS`] of the tasks could run as a
/// continuation (one per completion that readies a successor) and at least
/// [`INLINE_MIN_OUTSIDE`] of worker time is outside kernels.
fn inline(facts: &Facts, model: &Model) -> Option<Suggestion> {
    if facts.run.inline_continuation {
        return None;
    }
    let links = continuation_share(facts.run.graph);
    if links < INLINE_MIN_LINKS || model.outside < INLINE_MIN_OUTSIDE {
        return None;
    }
    let speedup = 1.0 / (1.0 - model.outside * links);
    Some(suggestion(
        "scheduling_overhead",
        "inline_continuation".into(),
        json!(true),
        speedup,
        "low",
        format!(
            "{:.0}% of worker time is outside kernels and {:.0}% of the tasks could run as the continuation of the \
             task that readies them, without the scheduler.",
            100.0 * model.outside,
            100.0 * links
        ),
        "Run with --inline-continuation.".into(),
        "upper bound: the share of worker time outside kernels times the share of tasks that could continue inline \
         disappears; speedup = 1 / (1 - outside x links)",
    ))
}

/// The share of a frame's tasks that could run as an inline continuation: at most one per task
/// that has successors, and only tasks with predecessors.
fn continuation_share(graph: &CompiledGraph) -> f64 {
    let tasks: Vec<u32> =
        (0..graph.instance_count() as u32).filter(|&i| graph.is_task(i) && !graph.is_input(i)).collect();
    let with_succs = tasks.iter().filter(|&&i| !graph.successors(i).is_empty()).count();
    let with_preds = tasks.iter().filter(|&&i| graph.dep_count[i as usize] > 0).count();
    if tasks.is_empty() { 0.0 } else { with_succs.min(with_preds) as f64 / tasks.len() as f64 }
}

/// Rule: a node of small tasks (mean below [`SMALL_TASK_US`]) with several instances, no group
/// yet and no edge between its own instances (`knob_space` offers no group size then): groups of
/// the power of two that leaves about four tasks per worker. Estimate: its tasks' share of worker
/// time outside kernels shrinks by 1 - 1/g.
fn group_sizes(facts: &Facts, model: &Model) -> Vec<Suggestion> {
    let graph = facts.run.graph;
    let workers = facts.run.workers.max(1);
    let mut candidates: Vec<usize> = (0..graph.nodes.len())
        .filter(|&id| {
            let node = &graph.nodes[id];
            let small = facts.nodes[id].mean_exec_us.is_some_and(|m| m < SMALL_TASK_US);
            !node.input && node.factor > 1 && node.group_size == 1 && small && !reads_itself(graph, id)
        })
        .collect();
    candidates
        .sort_by(|&a, &b| or_zero(facts.nodes[b].total_exec_us).total_cmp(&or_zero(facts.nodes[a].total_exec_us)));
    candidates
        .into_iter()
        .take(MAX_GROUP_SUGGESTIONS)
        .filter_map(|id| {
            let node = &graph.nodes[id];
            let group = prev_power_of_two((node.factor / (4 * workers)).max(2)).min(node.factor);
            let saved = node.factor as f64 * (1.0 - 1.0 / group as f64) * model.outside_per_task;
            let speedup = model.per_frame / (model.per_frame - saved).max(f64::MIN_POSITIVE);
            (speedup > 1.0).then(|| {
                suggestion(
                    "granularity",
                    format!("{}.group_size", node.name),
                    json!(group),
                    speedup,
                    "low",
                    format!(
                        "Node {:?} runs {} instances of {:.2} us each: the runtime's cost per task is a large share.",
                        node.name,
                        node.factor,
                        facts.nodes[id].mean_exec_us.unwrap_or(0.0)
                    ),
                    format!("Set \"group_size\": {group} on node {:?} in the graph.", node.name),
                    "the worker time outside kernels per task (measured) disappears for 1 - 1/group_size of the \
                     node's tasks; speedup = worker time per frame over it less that",
                )
            })
        })
        .collect()
}

fn or_zero(value: Option<f64>) -> f64 {
    value.unwrap_or(0.0)
}

fn prev_power_of_two(n: u32) -> u32 {
    1 << (31 - n.max(1).leading_zeros())
}

/// Whether an instance of node `id` has another instance of it as a predecessor.
fn reads_itself(graph: &CompiledGraph, id: usize) -> bool {
    let node = &graph.nodes[id];
    (node.first..node.first + node.factor)
        .any(|inst| graph.predecessors(inst).iter().any(|&p| graph.inst_node[p as usize] as usize == id))
}
