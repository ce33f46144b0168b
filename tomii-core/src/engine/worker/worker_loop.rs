//! The worker loop (README.md, "Idle workers", "Stall watchdog"): a worker pops its next tasks,
//! spinning and then parking while there are none, serves the door's requests first when it has
//! any, runs what it popped, and hands back what it counted when the run stops. It must never
//! sleep while a task it could run is ready, nor run a task the host did not claim (`task.rs`).
//!
//! # Memory ordering
//! `pop` loads `stop` Acquire (pairing with `stop_run`'s Release, `host.rs`). `work` increments
//! `exited` Release after the worker left its results in its `finished` cell; the host's Acquire
//! load pairs with it. `check_stall` loads `frames_done` Acquire, pairing with the AcqRel
//! increment at each frame's end, to judge progress after an ejection.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;

use super::Engine;
use super::local::{Local, WorkerResult};
use crate::engine::sleep::Wake;
use crate::engine::{FaultPolicy, RunError};
use crate::plugin::PopBuffer;

/// Pop attempts while spinning before a worker parks.
const SPIN_ROUNDS: u32 = 64;
/// After an ejection, stall timeouts without progress before the run stops as an engine bug.
const STUCK_TIMEOUTS: u32 = 3;

impl Engine<'_> {
    /// A worker's part of the run, on a pooled thread: the worker loop, whose counters and trace go
    /// to its `finished` cell (a panic fails the run instead), then the host is told it exited.
    pub(super) fn work(&self, worker: u32) {
        let result = catch_unwind(AssertUnwindSafe(|| self.worker_main(worker)));
        self.shared.sleep.leave(worker);
        match result {
            Ok(result) => {
                *self.shared.finished[worker as usize].lock().unwrap_or_else(|p| p.into_inner()) = Some(result)
            }
            Err(payload) => {
                self.fail(RunError::Internal(format!("a worker panicked: {}", tomii_types::panic_message(&*payload))))
            }
        }
        self.shared.exited.fetch_add(1, Ordering::Release);
        self.shared.host.unpark();
    }

    pub(super) fn worker_main(&self, worker: u32) -> WorkerResult {
        self.shared.sleep.register(worker);
        let mut local = self.local(worker);
        // Pinned for this run only: the guard gives the pooled thread back its CPUs.
        let _pinned = match self.plan.placement.as_ref().map(|placement| placement.pin(worker)).transpose() {
            Ok(pinned) => pinned,
            Err(error) => {
                self.fail(RunError::Config(error));
                return (local.counters, local.trace.into_chunk(), local.latency);
            }
        };
        // The buffer the scheduler pops into, apart from `local`: its descriptors are read in place.
        let mut popped = PopBuffer::new(self.plan.pop_room as usize);
        while let Some(count) = self.next_tasks(&mut local, &mut popped) {
            for task in popped.get(..count).unwrap_or_default() {
                if let Err(error) = self.execute(&mut local, task) {
                    self.fail(error);
                    break;
                }
            }
        }
        (local.counters, local.trace.into_chunk(), local.latency)
    }

    /// Pops the worker's next tasks, spinning and then parking while there are none. `None` when
    /// the run is over (finished or failed).
    pub(super) fn next_tasks(&self, local: &mut Local, popped: &mut PopBuffer) -> Option<usize> {
        let worker = local.pusher.worker;
        loop {
            if let found @ (None | Some(1..)) = self.pop(local, popped) {
                return found;
            }
            self.shared.sleep.start_spinning();
            let found = self.spin(local, popped);
            self.shared.sleep.stop_spinning();
            if let found @ (None | Some(1..)) = found {
                return found;
            }
            // Idle workers, step 1: announce, then re-check (README.md, "Idle workers").
            self.shared.sleep.prepare(worker);
            match self.pop(local, popped) {
                Some(0) => {}
                found => {
                    self.shared.sleep.cancel(worker);
                    return found;
                }
            }
            let wake = self.shared.sleep.park(worker, self.plan.config.stall_timeout);
            let everyone_idle = wake == Wake::TimedOut && self.shared.sleep.all_asleep();
            self.shared.sleep.finish(worker);
            if everyone_idle {
                return self.check_stall(local, popped);
            }
        }
    }

    /// Tries the scheduler a few times with growing pauses. `Some(0)` if it had nothing.
    pub(super) fn spin(&self, local: &mut Local, popped: &mut PopBuffer) -> Option<usize> {
        for round in 0..SPIN_ROUNDS {
            for _ in 0..(1u32 << round.min(6)) {
                std::hint::spin_loop();
            }
            if let found @ (None | Some(1..)) = self.pop(local, popped) {
                return found;
            }
        }
        Some(0)
    }

    /// One pop. `None` when the run is over or the scheduler failed (the failure is recorded).
    #[inline(always)]
    pub(super) fn pop(&self, local: &mut Local, popped: &mut PopBuffer) -> Option<usize> {
        if self.shared.stop.load(Ordering::Acquire) {
            return None;
        }
        if self.shared.door.has_requests()
            && let Err(error) = self.serve_door(local)
        {
            self.fail(error);
            return None;
        }
        if self.shared.containment.is_ejected() {
            return Some(self.shared.containment.fifo().pop(local.pusher.worker, popped));
        }
        match self.scheduler.pop_by(local.pusher.scheduler, popped) {
            Ok(count) => Some(count),
            Err(violation) => match self.contract_violation(violation) {
                Ok(()) => Some(0),
                Err(error) => {
                    self.fail(error);
                    None
                }
            },
        }
    }

    /// Every worker was parked for the stall timeout: unless the scheduler now hands something
    /// out, the run cannot progress.
    #[cold]
    pub(super) fn check_stall(&self, local: &mut Local, popped: &mut PopBuffer) -> Option<usize> {
        match self.pop(local, popped) {
            Some(0) if !self.holds_ready_task() => Some(0),
            Some(0) => {
                let incomplete = self.shared.door.in_flight();
                let stall = RunError::Stall {
                    scheduler: self.scheduler.plugin().name.to_owned(),
                    timeout_ms: self.plan.config.stall_timeout.as_millis(),
                    incomplete,
                };
                if self.shared.containment.is_ejected() {
                    // Workers whose parks timed out together may all get here, after one of them
                    // ejected the scheduler and another took the recovered tasks: only no
                    // progress over several timeouts means the host's own FIFO lost a task, which
                    // would be an engine bug.
                    let done = self.shared.frames_done.load(Ordering::Acquire);
                    if !self.shared.containment.stuck(done, STUCK_TIMEOUTS * self.plan.config.stall_timeout) {
                        return Some(0);
                    }
                    self.fail(RunError::Internal(stall.to_string()));
                    return None;
                }
                match self.shared.containment.policy {
                    FaultPolicy::Stop => {
                        self.scheduler.abandon();
                        self.fail(stall);
                        None
                    }
                    FaultPolicy::Fallback => self.contract_violation(stall.to_string()).ok().map(|()| 0),
                }
            }
            found => found,
        }
    }
}
