//! Fault containment: what the host does when the scheduler breaks its contract (README.md,
//! "Faults"). Under `FaultPolicy::Stop` the run ends with an error naming the scheduler, the
//! violation and the task. Under `FaultPolicy::Fallback` the scheduler is ejected: every task that
//! is ready and unclaimed is found from the slot counters (never from the scheduler, whose state is
//! not trusted any more) and the run finishes on the host's own FIFO.
//!
//! Nothing here runs on the hot path except the `ejected` check, one load per push and pop.
//!
//! # Memory ordering
//! Arrivals are SeqCst read-modify-writes and the `ejected` flag is read and written SeqCst, so in
//! the single total order either a worker's mode check (before pushing to the scheduler) sees the
//! ejection, and it pushes to the host FIFO instead, or the ejecting thread's scan, which follows
//! the flag's store, sees the arrivals that made those tasks ready. No ready task is lost; a task
//! may be queued twice, and the second claim of it is skipped.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tomii_types::abi::{TOMII_NO_WORKER, TomiiTask};

use super::Engine;
use crate::engine::{Ejection, FaultPolicy, RunError};

/// The containment state of one run.
pub(super) struct Containment {
    pub(super) policy: FaultPolicy,
    /// Set once, when the scheduler is ejected; from then on only the host FIFO is used.
    pub(super) ejected: AtomicBool,
    fifo: HostFifo,
    record: Mutex<Option<Ejection>>,
    /// After the ejection: the progress (frames done, tasks taken from the host FIFO) when every
    /// worker was first seen idle with the host FIFO empty, and when.
    idle_since: Mutex<Option<((u64, u64), Instant)>>,
}

impl Containment {
    pub(super) fn new(policy: FaultPolicy) -> Self {
        Containment {
            policy,
            ejected: AtomicBool::new(false),
            fifo: HostFifo::default(),
            record: Mutex::new(None),
            idle_since: Mutex::new(None),
        }
    }

    #[inline]
    pub(super) fn is_ejected(&self) -> bool {
        self.ejected.load(Ordering::SeqCst)
    }

    pub(super) fn fifo(&self) -> &HostFifo {
        &self.fifo
    }

    /// Every worker idle with the host FIFO empty and `frames_done` frames done: whether nothing
    /// progressed (no frame completed, no task taken from the host FIFO) for `patience` since such
    /// a moment was first seen.
    pub(super) fn stuck(&self, frames_done: u64, patience: Duration) -> bool {
        let progress = (frames_done, self.fifo.taken.load(Ordering::SeqCst));
        let mut since = self.idle_since.lock().unwrap_or_else(|p| p.into_inner());
        match *since {
            Some((seen, at)) if seen == progress => at.elapsed() >= patience,
            _ => {
                *since = Some((progress, Instant::now()));
                false
            }
        }
    }

    /// The ejection, if the scheduler was ejected.
    pub(super) fn ejection(&self) -> Option<Ejection> {
        self.record.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The host's minimal FIFO: used only after an ejection, so a lock is acceptable.
#[derive(Default)]
pub(super) struct HostFifo {
    queue: Mutex<VecDeque<TomiiTask>>,
    /// Tasks popped from it so far.
    taken: AtomicU64,
}

impl HostFifo {
    pub(super) fn push(&self, tasks: &[TomiiTask]) {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).extend(tasks.iter().copied());
    }

    /// Moves up to `out.len()` tasks that `worker` may run into `out`, oldest first.
    pub(super) fn pop(&self, worker: u32, out: &mut [TomiiTask]) -> usize {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let mut count = 0;
        let mut index = 0;
        while count < out.len() && index < queue.len() {
            if (queue[index].worker_lo..queue[index].worker_hi).contains(&worker) {
                out[count] = queue.remove(index).unwrap_or_default();
                count += 1;
            } else {
                index += 1;
            }
        }
        self.taken.fetch_add(count as u64, Ordering::SeqCst);
        count
    }
}

impl Engine<'_> {
    /// The scheduler broke its contract: under `Stop`, the error to end the run with; under
    /// `Fallback`, the scheduler is ejected (once) and the caller carries on.
    #[cold]
    pub(super) fn contract_violation(&self, violation: String) -> Result<(), RunError> {
        match self.shared.containment.policy {
            FaultPolicy::Stop => Err(self.fault(violation)),
            FaultPolicy::Fallback => {
                self.eject(violation);
                Ok(())
            }
        }
    }

    /// Ejects the scheduler: later pushes and pops go to the host FIFO, which receives every task
    /// that is ready and not yet claimed.
    #[cold]
    fn eject(&self, violation: String) {
        if self.shared.containment.ejected.swap(true, Ordering::SeqCst) {
            return;
        }
        self.scheduler.abandon();
        // Before the requeue: afterwards other workers may already complete the recovered tasks.
        let frames_done = self.shared.frames_done.load(Ordering::Acquire);
        let requeued = self.requeue_pending();
        *self.shared.containment.record.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(Ejection { violation, frames_done, requeued_tasks: requeued });
        self.shared.sleep.wake_all();
    }

    /// Queues on the host FIFO every task of every active slot that is ready and unclaimed.
    fn requeue_pending(&self) -> u64 {
        let mut batch = Vec::new();
        let now = self.shared.clock.now();
        self.ready_unclaimed(|slot, instance, generation, frame| {
            batch.push(self.describe(self.inst(instance), slot, generation, frame, now, TOMII_NO_WORKER));
            true
        });
        self.shared.containment.fifo().push(&batch);
        batch.len() as u64
    }

    /// Whether some task of a frame in flight is ready and unclaimed: with every worker idle, the
    /// scheduler then holds work it does not hand out. (Without one, idle workers only wait for
    /// the source: frames waiting for their inputs, or none in flight.)
    pub(super) fn holds_ready_task(&self) -> bool {
        let mut any = false;
        self.ready_unclaimed(|_, _, _, _| {
            any = true;
            false
        });
        any
    }

    /// Calls `found(slot, instance, generation, frame)` for every task of an active slot that is
    /// ready and unclaimed, reading only the host's counters, until it returns false.
    fn ready_unclaimed(&self, mut found: impl FnMut(u32, u32, u32, u64) -> bool) {
        for slot in 0..self.plan.config.slots {
            let state = self.shared.table.slot(slot);
            let generation = state.generation.load(Ordering::SeqCst);
            if generation == u32::MAX {
                continue; // never used
            }
            let frame = state.frame.load(Ordering::Relaxed);
            for instance in 0..self.plan.graph.instance_count() as u32 {
                if !self.plan.graph.is_task(instance) || self.plan.graph.is_input(instance) {
                    continue;
                }
                let deps = self.plan.graph.dep_count[instance as usize];
                if self.shared.table.is_ready(slot, instance, generation, deps)
                    && self.shared.table.is_unclaimed(slot, instance, generation)
                    && !found(slot, instance, generation, frame)
                {
                    return;
                }
            }
        }
    }
}
