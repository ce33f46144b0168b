//! Tomii 1.2's report keys, computed from what a run measured: `summary` with the scheduling
//! overhead diagnostic, the per-node execution figures, the `critical_path` block and
//! `resource_utilization`; `advice.rs` adds the hints and suggestions.
//!
//! The critical path is taken over the instance graph (every instance of every node, with its
//! real edges), each task weighted by its node's measured mean duration times the instances its
//! group runs. Throughput is frames over wall time, never the inverse of a latency. Runs after
//! the run, off the hot path; never touches the engine's state.

use serde::Serialize;

use super::advice::{self, Suggestion};
use super::clock::Clock;
use super::durations::Durations;
use super::report::{Latency, WorkerCounters};
use crate::graph::CompiledGraph;

/// Instances named in `critical_path.nodes_sample`: the path's first and last this many.
const SAMPLE_END: usize = 5;
/// Overhead shares (percent of the frame latency) at which the interpretation changes.
const LOW_OVERHEAD_PCT: f64 = 10.0;
const HIGH_OVERHEAD_PCT: f64 = 50.0;

/// What the run measured, as the analysis reads it.
pub struct Measured<'a> {
    pub graph: &'a CompiledGraph,
    pub counters: &'a [WorkerCounters],
    pub clock: &'a Clock,
    pub timing: bool,
    pub frames: u64,
    pub wall_s: f64,
    pub latency: Latency,
    pub workers: u32,
    pub slots: u32,
    pub inline_continuation: bool,
}

/// The 1.2 keys of one `per_node` entry, beside the entry's own keys (null without task timing).
#[derive(Clone, Debug, Default, Serialize)]
pub struct NodeTimes {
    pub factor: u32,
    /// Executions of the node's instances (group members each counted), over the run.
    pub invocations: u64,
    pub mean_exec_us: Option<f64>,
    /// 99th percentile of one execution, to within 6.25% (null when the histograms were not kept).
    pub p99_exec_us: Option<f64>,
    pub total_exec_us: Option<f64>,
    /// `total_exec_us` as a percentage of all nodes' kernel time.
    pub pct_of_total: Option<f64>,
    /// Whether one of the node's instances lies on the critical path.
    pub on_critical_path: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Frames completed (1.2 called frames streams).
    pub total_streams: u64,
    pub avg_latency_us: f64,
    pub p50_latency_us: f64,
    pub p99_latency_us: f64,
    /// Frames completed over the wall time.
    pub throughput_frames_per_sec: f64,
    /// The same value under 1.2's older name.
    pub throughput_streams_per_sec: f64,
    /// Instances a frame runs (group members each counted; inputs are not tasks).
    pub total_tasks_per_stream: u64,
    pub scheduling_overhead_diagnostic: OverheadDiagnostic,
}

/// The mean frame latency against the critical path's measured execution time.
#[derive(Clone, Debug, Serialize)]
pub struct OverheadDiagnostic {
    pub critical_path_exec_us: Option<f64>,
    /// `avg_latency_us - critical_path_exec_us`: scheduling, waiting for a worker, and frames
    /// competing for workers.
    pub overhead_us: Option<f64>,
    /// `overhead_us` as a percentage of `avg_latency_us`.
    pub overhead_pct: Option<f64>,
    pub interpretation: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct CriticalPathReport {
    /// Instances on the path (group members each counted; inputs not).
    pub length_nodes: u64,
    /// The largest factor of a node on the path.
    pub max_node_factor: u32,
    /// The path's execution time from measured mean durations: the latency of one frame with
    /// unlimited workers and no scheduling cost (null without task timing).
    pub estimated_latency_us: Option<f64>,
    /// The path's first and last instances, `name[index]`, in path order.
    pub nodes_sample: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ResourceUtilization {
    /// Per worker, by worker index: time inside kernels as a percentage of the wall time (null
    /// without task timing).
    pub worker_busy_pct: Option<Vec<f64>>,
}

/// Everything this module adds to the report.
pub struct Analysis {
    /// Per graph node, by node id.
    pub nodes: Vec<NodeTimes>,
    pub summary: Summary,
    pub critical_path: CriticalPathReport,
    pub resource_utilization: ResourceUtilization,
    pub bottleneck_hints: Vec<String>,
    pub optimization_suggestions: Vec<Suggestion>,
}

/// The longest path of the instance graph.
pub struct Path {
    /// Task instances along it, first to last.
    pub tasks: Vec<u32>,
    /// Its weight: microseconds with measured durations, else instances.
    pub weight: f64,
}

pub fn analyse(run: &Measured) -> Analysis {
    let graph = run.graph;
    let mean_us = node_means_us(run);
    let path = critical_path(graph, mean_us.as_deref());
    let mut nodes = node_times(run, mean_us.as_deref());
    for &task in &path.tasks {
        nodes[graph.inst_node[task as usize] as usize].on_critical_path = true;
    }
    let path_us = mean_us.as_ref().map(|_| path.weight);
    let summary = summary(run, path_us);
    let busy = busy_pct(run);
    let critical_path = critical_path_report(graph, &path, path_us);
    let facts = advice::Facts { run, nodes: &nodes, path_us, busy: busy.as_deref(), summary: &summary };
    Analysis {
        bottleneck_hints: advice::hints(&facts),
        optimization_suggestions: advice::suggestions(&facts),
        nodes,
        summary,
        critical_path,
        resource_utilization: ResourceUtilization { worker_busy_pct: busy },
    }
}

/// Per node: the mean duration of one execution in microseconds (0 for a node that never ran),
/// or `None` without task timing.
fn node_means_us(run: &Measured) -> Option<Vec<f64>> {
    let totals = node_totals_us(run)?;
    let means = totals.iter().enumerate().map(|(node, total)| match invocations(run, node) {
        0 => 0.0,
        count => total / count as f64,
    });
    Some(means.collect())
}

/// Per node: kernel time summed over the run in microseconds, or `None` without task timing.
fn node_totals_us(run: &Measured) -> Option<Vec<f64>> {
    run.timing.then(|| {
        (0..run.graph.nodes.len())
            .map(|node| {
                let ticks = run.counters.iter().map(|w| w.per_node[node].ticks).sum();
                run.clock.ticks_to_ns(ticks) as f64 / 1e3
            })
            .collect()
    })
}

/// The 1.2 figures of every node; `on_critical_path` is left for the caller.
fn node_times(run: &Measured, mean_us: Option<&[f64]>) -> Vec<NodeTimes> {
    let durations = merged_durations(run.counters);
    let node_totals = node_totals_us(run);
    let totals: Vec<Option<f64>> =
        (0..run.graph.nodes.len()).map(|node| node_totals.as_ref().map(|totals| totals[node])).collect();
    let all: f64 = totals.iter().flatten().sum();
    run.graph
        .nodes
        .iter()
        .enumerate()
        .map(|(id, node)| {
            let max_ticks = run.counters.iter().map(|w| w.per_node[id].max_ticks).max().unwrap_or(0);
            let p99 = durations.as_ref().and_then(|d| d.quantile(id, 0.99)).map(|ticks| ticks.min(max_ticks));
            NodeTimes {
                factor: node.factor,
                invocations: invocations(run, id),
                mean_exec_us: mean_us.map(|means| means[id]),
                p99_exec_us: p99.filter(|_| run.timing).map(|ticks| run.clock.ticks_to_ns(ticks) as f64 / 1e3),
                total_exec_us: totals[id],
                pct_of_total: totals[id].map(|total| if all > 0.0 { 100.0 * total / all } else { 0.0 }),
                on_critical_path: false,
            }
        })
        .collect()
}

fn invocations(run: &Measured, node: usize) -> u64 {
    run.counters.iter().map(|w| w.per_node[node].count).sum()
}

/// Every worker's duration histograms added up, if every reporting worker kept them.
fn merged_durations(counters: &[WorkerCounters]) -> Option<Durations> {
    let mut kept = counters.iter().map(|w| &w.durations).filter(|d| d.is_kept());
    let mut merged = kept.next()?.clone();
    kept.for_each(|d| merged.add(d));
    Some(merged)
}

/// The heaviest path from a root to a sink of the instance graph: each task weighs its node's
/// mean duration times the instances its group runs (`mean_us`), or those instances alone
/// without it. Inputs and the non-leading members of a group weigh nothing. O(instances + edges).
pub fn critical_path(graph: &CompiledGraph, mean_us: Option<&[f64]>) -> Path {
    let count = graph.instance_count();
    let weight = |inst: u32| -> f64 {
        if graph.is_input(inst) || !graph.is_task(inst) {
            return 0.0;
        }
        let members = graph.group_of(inst).len() as f64;
        mean_us.map_or(members, |means| members * means[graph.inst_node[inst as usize] as usize])
    };
    // Kahn's order, first in first out: an instance is finished once all its predecessors are,
    // and of equally heavy predecessors the first finished (the lowest instance) is kept.
    let mut waiting: Vec<usize> = (0..count as u32).map(|i| graph.predecessors(i).len()).collect();
    let mut ready: Vec<u32> = (0..count as u32).filter(|&i| waiting[i as usize] == 0).collect();
    let mut finish = vec![0.0f64; count];
    let mut via = vec![u32::MAX; count];
    let mut next_ready = 0;
    while let Some(&inst) = ready.get(next_ready) {
        next_ready += 1;
        let i = inst as usize;
        finish[i] += weight(inst);
        for &next in graph.successors(inst) {
            let n = next as usize;
            if via[n] == u32::MAX || finish[i] > finish[n] {
                (finish[n], via[n]) = (finish[i], inst);
            }
            waiting[n] -= 1;
            if waiting[n] == 0 {
                ready.push(next);
            }
        }
    }
    let Some(mut at) = (0..count).max_by(|&a, &b| finish[a].total_cmp(&finish[b]).then(b.cmp(&a))) else {
        return Path { tasks: Vec::new(), weight: 0.0 };
    };
    let weight = finish[at];
    let mut tasks = Vec::new();
    loop {
        if graph.is_task(at as u32) && !graph.is_input(at as u32) {
            tasks.push(at as u32);
        }
        match via[at] {
            u32::MAX => break,
            previous => at = previous as usize,
        }
    }
    tasks.reverse();
    Path { tasks, weight }
}

fn critical_path_report(graph: &CompiledGraph, path: &Path, path_us: Option<f64>) -> CriticalPathReport {
    let names: Vec<String> = path.tasks.iter().map(|&task| graph.instance_name(task)).collect();
    let nodes_sample = if names.len() <= 2 * SAMPLE_END {
        names
    } else {
        [&names[..SAMPLE_END], &names[names.len() - SAMPLE_END..]].concat()
    };
    CriticalPathReport {
        length_nodes: path.tasks.iter().map(|&task| graph.group_of(task).len() as u64).sum(),
        max_node_factor: path.tasks.iter().map(|&task| graph.node_of(task).factor).max().unwrap_or(0),
        estimated_latency_us: path_us,
        nodes_sample,
    }
}

fn summary(run: &Measured, path_us: Option<f64>) -> Summary {
    let throughput = if run.wall_s > 0.0 { run.frames as f64 / run.wall_s } else { 0.0 };
    let tasks_per_frame = run.graph.nodes.iter().filter(|node| !node.input).map(|node| u64::from(node.factor)).sum();
    Summary {
        total_streams: run.frames,
        avg_latency_us: run.latency.mean,
        p50_latency_us: run.latency.p50,
        p99_latency_us: run.latency.p99,
        throughput_frames_per_sec: throughput,
        throughput_streams_per_sec: throughput,
        total_tasks_per_stream: tasks_per_frame,
        scheduling_overhead_diagnostic: overhead(run.frames, run.latency.mean, path_us),
    }
}

/// The overhead diagnostic; its interpretation is chosen by the overhead's share of the latency:
/// below [`LOW_OVERHEAD_PCT`], up to [`HIGH_OVERHEAD_PCT`], or above.
fn overhead(frames: u64, latency_us: f64, path_us: Option<f64>) -> OverheadDiagnostic {
    let Some(path_us) = path_us else {
        return OverheadDiagnostic {
            critical_path_exec_us: None,
            overhead_us: None,
            overhead_pct: None,
            interpretation: "Task timing was off: the critical path's execution time was not measured.".into(),
        };
    };
    if frames == 0 {
        return OverheadDiagnostic {
            critical_path_exec_us: Some(path_us),
            overhead_us: None,
            overhead_pct: None,
            interpretation: "No frame completed: there is no frame latency to compare.".into(),
        };
    }
    let overhead_us = latency_us - path_us;
    let pct = if latency_us > 0.0 { 100.0 * overhead_us / latency_us } else { 0.0 };
    let interpretation = if pct < LOW_OVERHEAD_PCT {
        "Frame latency is within 10% of the critical path's execution time: scheduling and waiting add \
         little; only shorter kernels on the critical path lower the latency further."
    } else if pct < HIGH_OVERHEAD_PCT {
        "Scheduling and waiting take 10-50% of the frame latency: frames wait for workers or for the \
         scheduler beside the critical path's kernels; see bottleneck_hints."
    } else {
        "Over half of the frame latency is spent outside the critical path's kernels (waiting for a \
         worker, behind other frames' tasks, or in the scheduler); see bottleneck_hints and \
         optimization_suggestions."
    };
    OverheadDiagnostic {
        critical_path_exec_us: Some(path_us),
        overhead_us: Some(overhead_us),
        overhead_pct: Some(pct),
        interpretation: interpretation.into(),
    }
}

fn busy_pct(run: &Measured) -> Option<Vec<f64>> {
    run.timing.then(|| {
        run.counters
            .iter()
            .map(|w| {
                let busy_s = run.clock.ticks_to_ns(w.busy) as f64 / 1e9;
                if run.wall_s > 0.0 { 100.0 * busy_s / run.wall_s } else { 0.0 }
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph;

    fn compiled(text: &str) -> CompiledGraph {
        graph::parse_str("test.json", text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_critical_path_weighs_a_group_by_its_members() {
        // A task of `work` runs 2 instances in turn: 1.2's path over names weighed it once.
        let graph = compiled(
            r#"{"nodes": [
                {"name": "src", "function": "noop", "args": [{"type": "u64", "value": 1}]},
                {"name": "work", "function": "noop", "factor": 4, "group_size": 2,
                 "args": [{"type": "$res", "predecessor": {"name": "src", "index": "all"}}]},
                {"name": "sink", "function": "noop",
                 "args": [{"type": "$res", "predecessor": {"name": "work", "index": "all"}}]}
            ]}"#,
        );
        let path = critical_path(&graph, Some(&[1.0, 3.0, 1.0]));
        let names: Vec<String> = path.tasks.iter().map(|&t| graph.instance_name(t)).collect();
        assert_eq!(names, ["src[0]", "work[0]", "sink[0]"]);
        assert_eq!(path.weight, 8.0);
        assert_eq!(critical_path(&graph, None).weight, 4.0);
        assert_eq!(critical_path_report(&graph, &path, Some(8.0)).length_nodes, 4);
    }

    #[test]
    fn the_critical_path_follows_the_heavier_branch() {
        let graph = compiled(
            r#"{"nodes": [
                {"name": "src", "function": "noop", "args": [{"type": "u64", "value": 1}]},
                {"name": "light", "function": "noop", "args": [{"type": "$res", "predecessor": {"name": "src"}}]},
                {"name": "heavy", "function": "noop", "args": [{"type": "$res", "predecessor": {"name": "src"}}]},
                {"name": "sink", "function": "noop", "args": [
                    {"type": "$res", "predecessor": {"name": "light"}},
                    {"type": "$res", "predecessor": {"name": "heavy"}}]}
            ]}"#,
        );
        let path = critical_path(&graph, Some(&[1.0, 1.0, 10.0, 1.0]));
        let names: Vec<String> = path.tasks.iter().map(|&t| graph.instance_name(t)).collect();
        assert_eq!(names, ["src[0]", "heavy[0]", "sink[0]"]);
        assert_eq!(path.weight, 12.0);
    }

    #[test]
    fn the_interpretation_follows_the_stated_thresholds() {
        let says = |latency: f64, path: f64| overhead(10, latency, Some(path)).interpretation;
        assert!(says(100.0, 95.0).starts_with("Frame latency is within 10%"));
        assert!(says(100.0, 70.0).starts_with("Scheduling and waiting take 10-50%"));
        assert!(says(100.0, 20.0).starts_with("Over half"));
        assert_eq!(overhead(10, 100.0, Some(20.0)).overhead_pct, Some(80.0));
        assert!(overhead(10, 100.0, None).overhead_us.is_none());
    }
}
