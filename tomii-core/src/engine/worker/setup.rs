//! Before a run: checking the configuration against the graph, binding conditions, and building
//! what the scheduler and the hot path are given once (the init block, the task templates). Runs
//! once per run; nothing here is on the hot path.

use std::sync::Mutex;

use tomii_types::abi::{TOMII_NO_WORKER, TomiiTask};

use super::body::{self, BoundCondition};
use super::records::Record;
use crate::engine::door::Door;
use crate::engine::slots::SlotTable;
use crate::engine::source::FrameDone;
use crate::engine::{RunConfig, RunError};
use crate::graph::{CompiledGraph, quote_name};
use crate::host;
use crate::plugin::{KernelSet, SchedulerSetup};

/// The most (slot, instance) cells a run may hold.
const MAX_CELLS: u64 = 1 << 28;

/// The least the scheduler's own state takes per task that can be ready at once (`max_ready`:
/// every task of a frame, in every slot): the shipped schedulers' queues (the SDK's `HandleRing`)
/// hold a task in a 16-byte cell, room they make in `create` for all of them. A scheduler that
/// keeps whole descriptors (64 bytes, as the C test schedulers do) takes more: the estimate is a
/// lower bound.
const SCHEDULER_BYTES_PER_READY_TASK: u64 = 16;

/// Rejects configurations the engine cannot run, with a message naming the option: the host
/// core's checks (`host::check_config`, which a simulation makes too), with the engine's own
/// limit on task cells and the memory its state takes, for a source that delivers `deliveries`
/// values per frame one by one (0 for one that gives a frame's inputs at its start).
pub(super) fn check_config(graph: &CompiledGraph, config: &RunConfig, deliveries: usize) -> Result<(), RunError> {
    host::check_config(graph, config, |cells| {
        if cells > MAX_CELLS {
            return Err(RunError::Config(format!(
                "{} slots × {} instances = {cells} task cells ({} GiB), more than the {MAX_CELLS} a run may hold; use fewer slots",
                config.slots,
                graph.instance_count(),
                (cells * SlotTable::CELL_BYTES as u64) >> 30
            )));
        }
        let tracing = config.tracing();
        let tasks = task_state_bytes(graph.instance_count() as u64, cells, tracing);
        let slots = u64::from(config.slots).saturating_mul(slot_state_bytes(graph));
        Ok(tasks.saturating_add(slots).saturating_add(Door::state_bytes(config.slots, deliveries)))
    })
}

/// The least memory a run's per-instance and per-cell state takes, all of it written before the
/// first frame: a record and a task template per instance, then the counters and result of every
/// (slot, instance) cell, and its ready time with a trace. The per-slot state comes on top
/// ([`slot_state_bytes`]).
fn task_state_bytes(instances: u64, cells: u64, tracing: bool) -> u64 {
    let per_instance = (size_of::<Record>() + size_of::<TomiiTask>()) as u64;
    let per_cell = (SlotTable::CELL_BYTES + if tracing { size_of::<u64>() } else { 0 }) as u64;
    instances.saturating_mul(per_instance).saturating_add(cells.saturating_mul(per_cell))
}

/// The least memory each slot takes besides its cells and the door's room for its requests
/// (`Door::state_bytes`), all of it made before the first frame: its bookkeeping in the slot
/// table, its held frame with post-nodes, and the scheduler's room for every task of a frame
/// ([`SCHEDULER_BYTES_PER_READY_TASK`]).
fn slot_state_bytes(graph: &CompiledGraph) -> u64 {
    let held = if graph.post.is_empty() { 0 } else { size_of::<Mutex<Option<FrameDone>>>() as u64 };
    let tasks_per_frame = (graph.instance_count() - graph.inputs.len()) as u64;
    (SlotTable::SLOT_BYTES as u64)
        .saturating_add(held)
        .saturating_add(tasks_per_frame.saturating_mul(SCHEDULER_BYTES_PER_READY_TASK))
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
    fn task_state_is_a_record_and_template_per_instance_and_a_cell_per_slot_and_instance() {
        let needed = task_state_bytes(1000, 4 * 1000, false);
        let per_cell = SlotTable::CELL_BYTES as u64;
        assert_eq!(needed, 1000 * (size_of::<Record>() + size_of::<TomiiTask>()) as u64 + 4000 * per_cell);
        assert_eq!(task_state_bytes(1000, 4000, true), needed + 4000 * 8, "a trace adds a ready time per cell");
    }
}
