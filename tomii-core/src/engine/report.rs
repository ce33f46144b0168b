//! The run report: what a run measured, as a serialisable value (written as JSON by the CLI).
//!
//! Throughput is frames completed over the wall time of the whole run, not the inverse of a
//! latency. Everything here is computed after the run from per-worker counters and the frame
//! latencies (`latencies.rs`: hdrhistogram's figures, 3 significant digits, constant memory however
//! many frames ran); nothing here runs on the hot path.

use hdrhistogram::Histogram;
use serde::Serialize;

use super::advice::Suggestion;
use super::analysis::{CriticalPathReport, NodeTimes, ResourceUtilization, Summary};
use super::clock::{Clock, Ticks};
use super::durations::Durations;
use super::latencies::Latencies;
use super::{RunError, analysis};
use crate::graph::CompiledGraph;
use crate::plugin::SchedulerPlugin;

/// Per-node counters kept by one worker.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeCounters {
    pub count: u64,
    /// Executions whose condition did not hold (the kernel was not called).
    pub skipped: u64,
    pub ticks: Ticks,
    pub max_ticks: Ticks,
}

/// Counters kept by one worker during the run.
#[derive(Clone, Debug, Default)]
pub struct WorkerCounters {
    pub tasks: u64,
    /// Instances run as (members of) an inline continuation, counted in `tasks` too.
    pub inlined: u64,
    /// Tasks the scheduler kept for the worker whose completion made them ready (`push_keep`).
    pub kept: u64,
    /// Ticks spent inside kernels.
    pub busy: Ticks,
    pub per_node: Vec<NodeCounters>,
    /// Per node: its kernel durations (kept only with task timing).
    pub durations: Durations,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub tomii_version: &'static str,
    pub graph: String,
    /// The dialect the graph file was written in: "tomii" or "tomii-1.2" (graph/README.md).
    pub graph_dialect: &'static str,
    /// What the graph file's Tomii 1.2 meaning needed said (`CompiledGraph::warnings`), one line
    /// per node; empty for the current format.
    pub graph_warnings: Vec<String>,
    pub scheduler: SchedulerReport,
    pub workers: u32,
    pub slots: u32,
    /// Frames completed (warm-up frames excluded).
    pub frames: u64,
    /// Frames their source abandoned (a network frame whose packets did not all arrive in time):
    /// not in `frames`, throughput or latencies.
    pub frames_abandoned: u64,
    /// Warm-up frames completed (`RunConfig::warmup_frames`, `--exclude-streams`): left out of
    /// every figure of this report (frames, tasks, wall time, throughput, latencies, per-node and
    /// per-worker figures).
    pub frames_excluded: u64,
    pub tasks: u64,
    /// Tasks a worker ran as the continuation of the task that made them ready, without the
    /// scheduler (only with `inline_continuation`).
    pub tasks_inlined: u64,
    /// Tasks the scheduler kept for the worker whose completion made them ready, to run next
    /// without a pop (`push_keep`, ABI v1.2), counted in `tasks` too.
    pub tasks_kept: u64,
    pub inline_continuation: bool,
    /// The most tasks one pop could hand a worker: the run's `pop_batch`, or when it left that
    /// unset, the scheduler's choice (`TOMII_SCHED_BATCH_POPS`, ABI v1.3).
    pub pop_batch: u32,
    /// From the first frames' start, every worker thread up, to the run's end (thread start-up and
    /// join excluded); with warm-up frames, from the start of the first frame after them.
    pub wall_time_s: f64,
    /// Frames completed per second of wall time over the whole run.
    pub throughput_frames_per_s: f64,
    pub tasks_per_s: f64,
    /// Frame latency: from a frame's start (its roots pushed) to its last task's completion.
    pub latency_us: Latency,
    /// Where the frames came from: `counted`, `session`, `network`, `simulated`.
    pub source: &'static str,
    /// Whether a stop was requested (Ctrl-C, `RunConfig::stop`) before the source ended: the frames
    /// in flight then completed, and no other started.
    pub interrupted: bool,
    /// How the run ended: "completed" (its source ended and every frame completed),
    /// "interrupted" (a stop was requested: the frames in flight completed, no other started) or
    /// "failed" (`error` says why; every figure covers what ran until then).
    pub status: &'static str,
    /// Why the run failed (`status` "failed").
    pub error: Option<String>,
    /// Workers stuck in a call when the run failed: their counters and trace are missing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workers_unreported: Vec<u32>,
    /// Whether kernel times were measured (per-node times and busy fractions need it).
    pub task_timing: bool,
    pub trace: bool,
    /// Trace records taken from the workers (written to the trace file, if any).
    pub trace_records: u64,
    /// Trace records lost: none, since a worker waits for the host when the trace's chunks run out
    /// (`trace_wait_s`); only records made after the host left the run (a worker stuck in a call
    /// that returned late) could be.
    pub trace_lost: u64,
    /// Seconds the workers waited, summed over them, for the host to take the trace (the trace
    /// could not keep up with them and set the run's pace); 0 without a trace.
    pub trace_wait_s: f64,
    /// Trace records released from memory (the in-memory trace keeps the newest 4 Mi).
    pub trace_released: u64,
    /// Sorted by `total_exec_us`, largest first (as Tomii 1.2 sorted it); in graph order among
    /// equal times and without task timing. `node` is the node's id, as trace records name it.
    pub per_node: Vec<NodeReport>,
    pub per_worker: Vec<WorkerReport>,
    /// Tomii 1.2's keys (`analysis.rs`, `advice.rs`), computed from the figures above.
    pub summary: Summary,
    pub critical_path: CriticalPathReport,
    pub resource_utilization: ResourceUtilization,
    pub bottleneck_hints: Vec<String>,
    pub optimization_suggestions: Vec<Suggestion>,
    /// The source's own section, under its kind (`network`: sockets, packets, drops by cause).
    #[serde(flatten)]
    pub source_section: std::collections::BTreeMap<&'static str, serde_json::Value>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SchedulerReport {
    pub name: String,
    pub path: String,
    /// Whether the full type layout was verified (Rust plugins carry an `abi_stable` module).
    pub layout_checked: bool,
    /// What the scheduler's `stats` hook reported, if anything.
    pub stats: Option<serde_json::Value>,
    /// Set when the scheduler broke its contract and the run finished on the host's FIFO.
    pub ejected: Option<super::Ejection>,
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    /// The standard deviation.
    pub stdev: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct NodeReport {
    /// The node's id: its position among the graph's nodes.
    pub node: u32,
    pub name: String,
    pub function: String,
    pub count: u64,
    /// Instances skipped because their condition did not hold (included in `count`).
    pub skipped: u64,
    /// Kernel time summed over the run (null without task timing).
    pub total_us: Option<f64>,
    pub mean_us: Option<f64>,
    pub max_us: Option<f64>,
    /// Tomii 1.2's keys of the entry.
    #[serde(flatten)]
    pub times: NodeTimes,
}

#[derive(Clone, Debug, Serialize)]
pub struct WorkerReport {
    pub worker: u32,
    pub tasks: u64,
    /// Seconds spent inside kernels (null without task timing).
    pub busy_s: Option<f64>,
    /// `busy_s` over the wall time.
    pub busy_fraction: Option<f64>,
}

/// Latency statistics of a histogram of nanoseconds, in microseconds (percentiles by nearest
/// rank, to the histogram's 3 significant digits).
pub fn latency(histogram: &Histogram<u64>) -> Latency {
    if histogram.is_empty() {
        return Latency::default();
    }
    let us = |ns: u64| ns as f64 / 1e3;
    if histogram.equivalent(histogram.min(), histogram.max()) {
        return one_bucket(histogram);
    }
    Latency {
        mean: histogram.mean() / 1e3,
        p50: us(histogram.value_at_quantile(0.50)),
        p95: us(histogram.value_at_quantile(0.95)),
        p99: us(histogram.value_at_quantile(0.99)),
        min: us(histogram.min()),
        max: us(histogram.max()),
        stdev: histogram.stdev() / 1e3,
    }
}

/// [`latency`] of a histogram whose values all fall in one bucket, as a run of one frame's does:
/// the figures hdrhistogram's `mean` and `value_at_quantile` give, by the same arithmetic, without
/// their scans of the histogram's buckets (32,768 of them for the engine's, several µs a run).
fn one_bucket(histogram: &Histogram<u64>) -> Latency {
    let us = |ns: u64| ns as f64 / 1e3;
    let (count, total) = (histogram.len() as f64, histogram.len() as f64);
    let percentile = us(histogram.max());
    Latency {
        mean: (0.0 + histogram.median_equivalent(histogram.max()) as f64 * count / total) / 1e3,
        p50: percentile,
        p95: percentile,
        p99: percentile,
        min: us(histogram.min()),
        max: us(histogram.max()),
        // Every value reads as the bucket's one equivalent: no spread.
        stdev: 0.0,
    }
}

/// Per-node figures, summed over workers.
pub fn per_node(
    names: &[(String, String)],
    workers: &[WorkerCounters],
    clock: &Clock,
    timing: bool,
) -> Vec<NodeReport> {
    names
        .iter()
        .enumerate()
        .map(|(node, (name, function))| {
            let counters = workers.iter().map(|w| w.per_node[node]);
            let count: u64 = counters.clone().map(|c| c.count).sum();
            let skipped: u64 = counters.clone().map(|c| c.skipped).sum();
            let ticks: Ticks = counters.clone().map(|c| c.ticks).sum();
            let max_ticks = counters.map(|c| c.max_ticks).max().unwrap_or(0);
            let total_us = clock.ticks_to_ns(ticks) as f64 / 1e3;
            NodeReport {
                node: node as u32,
                name: name.clone(),
                function: function.clone(),
                count,
                skipped,
                total_us: timing.then_some(total_us),
                mean_us: timing.then(|| if count == 0 { 0.0 } else { total_us / count as f64 }),
                max_us: timing.then(|| clock.ticks_to_ns(max_ticks) as f64 / 1e3),
                times: NodeTimes::default(),
            }
        })
        .collect()
}

/// `nodes` sorted by kernel time, largest first; stable, so graph order stays among equal times
/// and without task timing.
pub fn by_total_time(mut nodes: Vec<NodeReport>) -> Vec<NodeReport> {
    nodes.sort_by(|a, b| b.times.total_exec_us.unwrap_or(0.0).total_cmp(&a.times.total_exec_us.unwrap_or(0.0)));
    nodes
}

/// Per-worker figures.
pub fn per_worker(workers: &[WorkerCounters], clock: &Clock, wall_s: f64, timing: bool) -> Vec<WorkerReport> {
    workers
        .iter()
        .enumerate()
        .map(|(worker, w)| {
            let busy_s = clock.ticks_to_ns(w.busy) as f64 / 1e9;
            WorkerReport {
                worker: worker as u32,
                tasks: w.tasks,
                busy_s: timing.then_some(busy_s),
                busy_fraction: timing.then(|| if wall_s > 0.0 { busy_s / wall_s } else { 0.0 }),
            }
        })
        .collect()
}

/// What a run's report is made of: the counters and figures a real run's host gathered, or a
/// simulated run's (`sim/`).
pub(crate) struct Parts<'a> {
    pub graph: &'a CompiledGraph,
    pub plugin: &'a SchedulerPlugin,
    /// What the scheduler's `stats` hook said (none once it was ejected).
    pub stats: Option<String>,
    pub ejected: Option<super::Ejection>,
    pub workers: u32,
    pub slots: u32,
    pub inline_continuation: bool,
    pub pop_batch: u32,
    pub counters: &'a [WorkerCounters],
    pub clock: &'a Clock,
    pub timing: bool,
    pub latency: &'a Latencies,
    /// Frames completed after the warm-up.
    pub frames: u64,
    pub frames_excluded: u64,
    pub frames_abandoned: u64,
    pub wall_s: f64,
    pub interrupted: bool,
    pub failure: Option<&'a RunError>,
    pub workers_unreported: Vec<u32>,
    pub source: &'static str,
    pub trace: bool,
    pub trace_records: u64,
    pub trace_lost: u64,
    pub trace_wait_s: f64,
    pub trace_released: u64,
}

/// The report of a run from its parts.
pub(crate) fn assemble(parts: Parts<'_>) -> Report {
    let Parts { graph, counters, clock, timing, frames, wall_s, failure, interrupted, .. } = parts;
    let tasks: u64 = counters.iter().map(|c| c.tasks).sum();
    let names: Vec<(String, String)> = graph.nodes.iter().map(|n| (n.name.clone(), n.function.clone())).collect();
    let stats = parts.stats.filter(|s| !s.trim().is_empty() && s.trim() != "{}");
    let latency = parts.latency.summary();
    let analysis = analysis::analyse(&analysis::Measured {
        graph,
        counters,
        clock,
        timing,
        frames,
        wall_s,
        latency,
        workers: parts.workers,
        slots: parts.slots,
        inline_continuation: parts.inline_continuation,
    });
    Report {
        tomii_version: env!("CARGO_PKG_VERSION"),
        graph: graph.name.clone(),
        graph_dialect: graph.dialect.name(),
        graph_warnings: graph.warnings.clone(),
        scheduler: SchedulerReport {
            name: parts.plugin.name.to_owned(),
            path: parts.plugin.path.display().to_string(),
            layout_checked: parts.plugin.layout_checked,
            stats: stats.map(|text| serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))),
            ejected: parts.ejected,
        },
        workers: parts.workers,
        slots: parts.slots,
        frames,
        frames_abandoned: parts.frames_abandoned,
        frames_excluded: parts.frames_excluded,
        tasks,
        tasks_inlined: counters.iter().map(|c| c.inlined).sum(),
        tasks_kept: counters.iter().map(|c| c.kept).sum(),
        inline_continuation: parts.inline_continuation,
        pop_batch: parts.pop_batch,
        wall_time_s: wall_s,
        throughput_frames_per_s: if wall_s > 0.0 { frames as f64 / wall_s } else { 0.0 },
        tasks_per_s: if wall_s > 0.0 { tasks as f64 / wall_s } else { 0.0 },
        latency_us: latency,
        source: parts.source,
        interrupted,
        status: match (failure, interrupted) {
            (Some(_), _) => "failed",
            (None, true) => "interrupted",
            (None, false) => "completed",
        },
        error: failure.map(RunError::to_string),
        workers_unreported: parts.workers_unreported,
        task_timing: timing,
        trace: parts.trace,
        trace_records: parts.trace_records,
        trace_lost: parts.trace_lost,
        trace_wait_s: parts.trace_wait_s,
        trace_released: parts.trace_released,
        per_node: by_total_time(
            per_node(&names, counters, clock, timing)
                .into_iter()
                .zip(analysis.nodes)
                .zip(&graph.nodes)
                .filter(|(_, node)| !node.input)
                .map(|((figures, times), _)| NodeReport { times, ..figures })
                .collect(),
        ),
        per_worker: per_worker(counters, clock, wall_s, timing),
        summary: analysis.summary,
        critical_path: analysis.critical_path,
        resource_utilization: analysis.resource_utilization,
        bottleneck_hints: analysis.bottleneck_hints,
        optimization_suggestions: analysis.optimization_suggestions,
        source_section: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank_to_three_digits() {
        let mut histogram = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for i in 1..=100 {
            histogram.record(i * 1000).unwrap();
        }
        let l = latency(&histogram);
        let close = |got: f64, want: f64| (got - want).abs() <= want * 1e-3;
        for (got, want) in [(l.p50, 50.0), (l.p95, 95.0), (l.p99, 99.0), (l.min, 1.0), (l.max, 100.0), (l.mean, 50.5)] {
            assert!(close(got, want), "{got} is not {want} to 3 digits ({l:?})");
        }
    }

    /// Values all in one bucket take the short way, which must give exactly what hdrhistogram's
    /// scans give.
    #[test]
    fn one_bucket_gives_the_figures_of_the_scans() {
        let scanned = |h: &Histogram<u64>| Latency {
            mean: h.mean() / 1e3,
            p50: h.value_at_quantile(0.50) as f64 / 1e3,
            p95: h.value_at_quantile(0.95) as f64 / 1e3,
            p99: h.value_at_quantile(0.99) as f64 / 1e3,
            min: h.min() as f64 / 1e3,
            max: h.max() as f64 / 1e3,
            stdev: h.stdev() / 1e3,
        };
        let values: [&[u64]; 6] =
            [&[1], &[7_777], &[123_456_789; 3], &[3_599_999_999_999], &[1_000_000, 1_000_100, 1_000_400], &[5; 1000]];
        for values in values {
            let mut histogram = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
            values.iter().for_each(|&v| histogram.record(v).unwrap());
            assert!(histogram.equivalent(histogram.min(), histogram.max()), "{values:?} are not in one bucket");
            let (short, long) = (latency(&histogram), scanned(&histogram));
            assert_eq!(format!("{short:?}"), format!("{long:?}"), "{values:?}");
        }
    }
}
