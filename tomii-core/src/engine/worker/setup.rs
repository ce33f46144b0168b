//! Before a run: checking the configuration against the graph, binding conditions, and building
//! what the scheduler and the hot path are given once (the init block, the task templates). Runs
//! once per run; nothing here is on the hot path.

use tomii_types::abi::{TOMII_NO_WORKER, TomiiTask};

use super::MAX_CELLS;
use super::body::{self, BoundCondition};
use super::records::Record;
use crate::engine::slots::SlotTable;
use crate::engine::{RunConfig, RunError};
use crate::graph::{CompiledGraph, quote_name};
use crate::plugin::{KernelSet, SchedulerSetup};

/// Rejects configurations the engine cannot run, with a message naming the option.
pub(super) fn check_config(graph: &CompiledGraph, config: &RunConfig) -> Result<(), RunError> {
    let bad = |message: String| Err(RunError::Config(message));
    config.check_ranges()?;
    if config.frames > 0 && config.warmup_frames >= config.frames {
        return bad(format!(
            "warm-up frames is {} of {} frames: no frame would be left to measure; run more frames or fewer warm-up ones",
            config.warmup_frames, config.frames
        ));
    }
    let cells = u64::from(config.slots) * graph.instance_count() as u64;
    if cells > MAX_CELLS {
        return bad(format!(
            "{} slots × {} instances = {cells} task cells ({} GiB), more than the {MAX_CELLS} a run may hold; use fewer slots",
            config.slots,
            graph.instance_count(),
            (cells * SlotTable::CELL_BYTES as u64) >> 30
        ));
    }
    let tracing = config.trace || config.trace_file.is_some() || !config.trace_taps.is_empty();
    let needed = task_state_bytes(graph.instance_count() as u64, cells, tracing);
    // Reading the system's figures costs ≈ 16 µs, a third of a small run's start: only a large
    // run asks.
    if needed > CHECKED_FROM
        && let Some(message) = available_memory().and_then(|available| too_big(config.slots, graph, needed, available))
    {
        return bad(message);
    }
    for node in &graph.nodes {
        if let Some((lo, hi)) = node.use_workers
            && hi > config.workers
        {
            return bad(format!(
                "{}: node {:?} has use_workers {lo}-{}, but the run has {} worker(s) (0-{}); add workers or narrow the range",
                graph.source,
                node.name,
                hi - 1,
                config.workers,
                config.workers - 1
            ));
        }
    }
    Ok(())
}

/// The least memory a run's per-instance and per-cell state takes, all of it written before the
/// first frame: a record and a task template per instance, then the counters and result of every
/// (slot, instance) cell, and its ready time with a trace. The scheduler's own state comes on top.
fn task_state_bytes(instances: u64, cells: u64, tracing: bool) -> u64 {
    let per_instance = (size_of::<Record>() + size_of::<TomiiTask>()) as u64;
    let per_cell = (SlotTable::CELL_BYTES + if tracing { size_of::<u64>() } else { 0 }) as u64;
    instances.saturating_mul(per_instance).saturating_add(cells.saturating_mul(per_cell))
}

/// Task state from which a run checks that the memory is there (below, any machine has it).
const CHECKED_FROM: u64 = 256 << 20;

/// Why a run whose task state takes `needed` bytes cannot start with `available` bytes of memory,
/// if it cannot: refused at once rather than killed by the system part way through (or, worse,
/// making it kill another process).
fn too_big(slots: u32, graph: &CompiledGraph, needed: u64, available: u64) -> Option<String> {
    (needed > available).then(|| {
        format!(
            "{slots} slot(s) × {} instances need at least {} of task state, more than the {} of memory available; \
             use fewer slots or fewer instances",
            graph.instance_count(),
            bytes(needed),
            bytes(available)
        )
    })
}

/// `bytes` for a person: MiB below 10 GiB, GiB above.
fn bytes(bytes: u64) -> String {
    if bytes < 10 << 30 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{:.1} GiB", bytes as f64 / f64::from(1 << 30))
    }
}

/// The memory this process may still take without the system killing it or it thrashing: the
/// kernel's estimate of what is available without swapping, plus free swap, and no more than its
/// cgroup's limit if it has one. Only the limit, not the limit less the cgroup's usage: that usage
/// counts page cache the kernel would reclaim, and a refused run that fits would be worse than an
/// unrefused one that does not. `None` when it cannot be read (not Linux): no check then.
fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = meminfo.lines().find(|line| line.starts_with(name))?;
        let kib = line[name.len()..].trim().trim_end_matches("kB").trim().parse::<u64>().ok()?;
        Some(kib << 10)
    };
    let system = field("MemAvailable:")?.saturating_add(field("SwapFree:").unwrap_or(0));
    Some(cgroup_memory_limit().map_or(system, |limit| limit.min(system)))
}

/// This process's cgroup memory limit, v2 (`memory.max`, "max" when there is none) or v1
/// (`memory.limit_in_bytes`, a huge number when there is none).
fn cgroup_memory_limit() -> Option<u64> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    limit_of(&membership, |file| std::fs::read_to_string(file).ok())
}

/// The memory limit of the cgroups listed in `membership` (the text of /proc/self/cgroup), each
/// limit file read by `read`.
fn limit_of(membership: &str, read: impl Fn(&str) -> Option<String>) -> Option<u64> {
    let number = |file: String| read(&file)?.trim().parse::<u64>().ok();
    membership.lines().find_map(|line| {
        if let Some(path) = line.strip_prefix("0::") {
            number(format!("/sys/fs/cgroup{}/memory.max", path.trim_end_matches('/')))
        } else {
            let path = line.split_once(":memory:")?.1;
            number(format!("/sys/fs/cgroup/memory{}/memory.limit_in_bytes", path.trim_end_matches('/')))
        }
    })
}

/// Binds every node's condition to its function; a value no result can be compared with is an
/// error before the run.
pub(super) fn bind_conditions(
    graph: &CompiledGraph,
    kernels: &KernelSet,
) -> Result<Vec<Option<BoundCondition>>, RunError> {
    graph
        .nodes
        .iter()
        .map(|node| {
            let Some(spec) = &node.condition else { return Ok(None) };
            if !body::comparable(&spec.value) {
                return Err(RunError::Config(format!(
                    "{}: node {:?}: a condition value of type {} cannot be compared; use a number, a string, a bool or a char",
                    graph.source,
                    node.name,
                    spec.value.type_name()
                )));
            }
            let function = kernels.resolve(|| format!("the condition of node {}", quote_name(&node.name)), &spec.function)?;
            Ok(Some(BoundCondition { function, spec: spec.clone() }))
        })
        .collect()
}

/// What the scheduler's `create` is told on `workers` workers and `slots` slots with its options
/// `knobs`; `frames` is 0 when the source does not know how many.
pub(crate) fn scheduler_setup<'g>(
    graph: &'g CompiledGraph,
    (workers, slots): (u32, u32),
    knobs: &'g [(String, String)],
    frames: u64,
) -> SchedulerSetup<'g> {
    SchedulerSetup {
        workers,
        slots,
        frames,
        tasks_per_frame: (graph.instance_count() - graph.inputs.len()) as u64,
        nodes: graph
            .nodes
            .iter()
            .map(|n| {
                let (lo, hi) = n.use_workers.unwrap_or((0, workers));
                (n.name.as_str(), n.factor, n.priority, lo, hi)
            })
            .collect(),
        knobs,
    }
}

/// The per-instance descriptors with the fields that never change between frames.
pub(crate) fn templates(graph: &CompiledGraph, workers: u32) -> Vec<TomiiTask> {
    (0..graph.instance_count())
        .map(|instance| {
            let node_id = graph.inst_node[instance];
            let node = &graph.nodes[node_id as usize];
            let (worker_lo, worker_hi) = node.use_workers.unwrap_or((0, workers));
            TomiiTask {
                node: node_id,
                instance: graph.inst_index[instance],
                priority: node.priority,
                worker_lo,
                worker_hi,
                rank: u64::from(graph.rank[instance]),
                locality: TOMII_NO_WORKER,
                ..TomiiTask::default()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_bigger_than_the_memory_available_is_refused_naming_both() {
        let text = r#"{"nodes": [{"name": "a", "function": "noop", "factor": 1000}]}"#;
        let graph = crate::graph::parse_str("big.json", text).unwrap_or_else(|e| panic!("{e}"));
        let needed = task_state_bytes(1000, 4 * 1000, false);
        let per_cell = SlotTable::CELL_BYTES as u64;
        assert_eq!(needed, 1000 * (size_of::<Record>() + size_of::<TomiiTask>()) as u64 + 4000 * per_cell);
        assert_eq!(task_state_bytes(1000, 4000, true), needed + 4000 * 8, "a trace adds a ready time per cell");
        assert_eq!(too_big(4, &graph, needed, needed), None, "a run that just fits starts");
        let message = too_big(4, &graph, 40 << 30, 12 << 30).expect("refused");
        assert_eq!(
            message,
            "4 slot(s) × 1000 instances need at least 40.0 GiB of task state, more than the 12.0 GiB of memory \
             available; use fewer slots or fewer instances"
        );
        assert!(
            too_big(1, &graph, 600 << 20, 500 << 20).is_some_and(|m| m.contains("600 MiB") && m.contains("500 MiB"))
        );
    }

    #[test]
    fn the_memory_available_is_read_from_the_system_and_capped_by_the_cgroup() {
        let available = available_memory().expect("/proc/meminfo is readable on Linux");
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let total_kib: u64 = ["MemTotal:", "SwapTotal:"]
            .iter()
            .filter_map(|name| meminfo.lines().find(|l| l.starts_with(name)))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum();
        assert!(available > 0 && available <= total_kib << 10, "{available} of {total_kib} KiB");
        let files = |file: &str| match file {
            "/sys/fs/cgroup/user.slice/memory.max" => Some("1073741824\n".to_owned()),
            "/sys/fs/cgroup/memory/job/7/memory.limit_in_bytes" => Some("2147483648\n".to_owned()),
            "/sys/fs/cgroup/unlimited/memory.max" => Some("max\n".to_owned()),
            _ => None,
        };
        assert_eq!(limit_of("0::/user.slice\n", files), Some(1 << 30), "cgroup v2");
        assert_eq!(limit_of("4:memory:/job/7\n0::/\n", files), Some(2 << 30), "cgroup v1");
        assert_eq!(limit_of("0::/unlimited\n", files), None, "no v2 limit");
        assert_eq!(limit_of("1:cpu:/\n", files), None, "no memory controller");
    }
}
