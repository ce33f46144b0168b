//! The checks of a run's options against its graph, before anything is made: the same for a real
//! run and a simulated one, with the same messages (engine/README.md, "The run"). An executor
//! adds only what is its own (how much memory its per-slot state takes, the sources it can
//! model). Runs once per run; it must never allocate what it checks.

use tomii_types::abi::{TOMII_AUTO_POP_BATCH, TOMII_SCHED_BATCH_POPS};

use crate::engine::{RunConfig, RunError, memory};
use crate::graph::CompiledGraph;
use crate::plugin::SchedulerPlugin;

/// Rejects options the host cannot run, with a message naming the option: an integer outside the
/// knob catalog's domain, no frame left to measure after the warm-up, per-slot state beyond the
/// memory available, a `use_workers` beyond the workers. `state_bytes` is the executor's: given
/// the (slot, instance) cells, the least memory its task state takes, or its refusal.
pub(crate) fn check_config(
    graph: &CompiledGraph,
    config: &RunConfig,
    state_bytes: impl FnOnce(u64) -> Result<u64, RunError>,
) -> Result<(), RunError> {
    let bad = |message: String| Err(RunError::Config(message));
    config.check_ranges()?;
    if config.frames > 0 && config.warmup_frames >= config.frames {
        return bad(format!(
            "warm-up frames is {} of {} frames: no frame would be left to measure; run more frames or fewer warm-up ones",
            config.warmup_frames, config.frames
        ));
    }
    let cells = u64::from(config.slots) * graph.instance_count() as u64;
    let needed = state_bytes(cells)?;
    memory::refuse_beyond_available(needed, config.slots, || {
        format!("{} slot(s) × {} instances", config.slots, graph.instance_count())
    })
    .map_err(RunError::Config)?;
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

impl RunConfig {
    /// The room a pop of `scheduler` has in this run, the same in a real run and a simulated one:
    /// `pop_batch` when the run sets it; when it leaves it unset (0), `TOMII_AUTO_POP_BATCH` for a
    /// scheduler that bounds its own batches (`TOMII_SCHED_BATCH_POPS`, ABI v1.3) and 1 for any other.
    pub fn pop_room(&self, scheduler: &SchedulerPlugin) -> u32 {
        match self.pop_batch {
            0 if scheduler.flags() & TOMII_SCHED_BATCH_POPS != 0 => TOMII_AUTO_POP_BATCH,
            0 => 1,
            asked => asked,
        }
    }
}
