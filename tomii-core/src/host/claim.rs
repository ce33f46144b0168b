//! The verification of a popped task (engine/README.md, "Faults"; PLUGIN_SCHEDULER_API.md): a
//! handle the host issued, for a task of its slot's current generation that is ready and not
//! claimed, on a worker inside the task's range; then the claim itself. The violations and their
//! messages are written here once; the engine and the simulator both verify through [`verify`].
//! It formats nothing unless a check fails, and never decides what a violation does (stop, eject,
//! skip): that is the executor's.

use super::counters::ClaimError;
use super::handle::{TaskRef, decode_handle};
use crate::graph::{CompiledGraph, quote_name};

/// What a slot table shows the verification: the executor's table, atomic or plain.
pub(crate) trait SlotView {
    /// One slot's state.
    type Slot;
    /// The slot a decoded handle names, if the table has its slot and its instance.
    fn slot(&self, task: TaskRef) -> Option<&Self::Slot>;
    /// The slot's current generation (an atomic table loads it Acquire, pairing with its
    /// frame's begin, so that the frame number read after it is that generation's).
    fn generation(slot: &Self::Slot) -> u32;
    /// The frame in the slot.
    fn frame(slot: &Self::Slot) -> u64;
    /// Claims the task in `generation` if it is ready and unclaimed (`Counters::claim`).
    fn claim(&self, slot: u32, instance: u32, generation: u32, deps: u32) -> Result<(), ClaimError>;
}

/// What the host knows of an instance that the verification needs: the arrivals that make it
/// ready, and the workers that may run it (`worker_lo..worker_hi`).
#[derive(Clone, Copy)]
pub(crate) struct Need {
    pub(crate) deps: u32,
    pub(crate) worker_lo: u32,
    pub(crate) worker_hi: u32,
}

/// A verified, claimed task: where it runs, in which generation of its slot, for which frame.
#[derive(Clone, Copy)]
pub(crate) struct Claim {
    pub(crate) slot: u32,
    pub(crate) instance: u32,
    pub(crate) generation: u32,
    pub(crate) frame: u64,
}

/// A popped task the host refuses, with what it knows about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Violation {
    /// A handle that names no slot or instance the host has.
    NeverIssued { handle: u64 },
    /// A task that is not ready in its slot's current generation.
    NeverPushed { instance: u32, frame: u64 },
    /// A task claimed already in its frame.
    Twice { instance: u32, frame: u64 },
    /// A task handed to a worker outside its allowed range.
    OutsideRange { worker: u32, worker_lo: u32, worker_hi: u32, instance: u32, frame: u64 },
}

impl Violation {
    /// The violation as the run's error says it (after `scheduler "x" broke its contract: `).
    #[cold]
    #[inline(never)]
    pub(crate) fn message(&self, graph: &CompiledGraph) -> String {
        let task = |what: &str, instance: u32, frame: u64| {
            let node = &graph.node_of(instance).name;
            let index = graph.inst_index[instance as usize];
            format!("{what}: node {} instance {index}, frame {frame}", quote_name(node))
        };
        match *self {
            Violation::NeverIssued { handle } => {
                format!("pop returned handle {handle:#x}, which the host never issued")
            }
            Violation::NeverPushed { instance, frame } => {
                task("returned a task that was never pushed (or belongs to an earlier frame)", instance, frame)
            }
            Violation::Twice { instance, frame } => task("returned the same task twice", instance, frame),
            Violation::OutsideRange { worker, worker_lo, worker_hi, instance, frame } => task(
                &format!("handed a task to worker {worker}, outside its allowed workers {worker_lo}..{worker_hi}"),
                instance,
                frame,
            ),
        }
    }
}

/// Verifies the task `handle` popped for `worker` and claims it. `need` looks the decoded instance
/// up (`None`: the host has no such instance) and returns the executor's own name for it with
/// what the checks need. One compare-and-swap both checks that the task is ready and unclaimed
/// and claims it.
#[inline(always)]
pub(crate) fn verify<T: SlotView, I>(
    table: &T,
    worker: u32,
    handle: u64,
    need: impl FnOnce(u32) -> Option<(I, Need)>,
) -> Result<(I, Claim), Violation> {
    let found = decode_handle(handle);
    let Some((id, need)) = need(found.instance) else { return Err(Violation::NeverIssued { handle }) };
    let Some(state) = table.slot(found) else { return Err(Violation::NeverIssued { handle }) };
    let (slot, instance) = (found.slot, found.instance);
    let generation = T::generation(state);
    if found.tag != generation & 0xFF {
        return Err(Violation::NeverPushed { instance, frame: T::frame(state) });
    }
    if !(need.worker_lo..need.worker_hi).contains(&worker) {
        let (worker_lo, worker_hi) = (need.worker_lo, need.worker_hi);
        return Err(Violation::OutsideRange { worker, worker_lo, worker_hi, instance, frame: T::frame(state) });
    }
    match table.claim(slot, instance, generation, need.deps) {
        Ok(()) => Ok((id, Claim { slot, instance, generation, frame: T::frame(state) })),
        Err(ClaimError::Twice) => Err(Violation::Twice { instance, frame: T::frame(state) }),
        Err(ClaimError::NotReady) => Err(Violation::NeverPushed { instance, frame: T::frame(state) }),
    }
}
