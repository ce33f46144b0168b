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
use crate::engine::clock::Ticks;
use crate::engine::sleep::Wake;
use crate::engine::{FaultPolicy, IdleSpin, RunError};
use crate::plugin::PopBuffer;

/// Pop attempts while spinning before a worker parks, at most and at first ...
pub(super) const SPIN_ROUNDS: u32 = 64;
/// ... and at least: a worker whose idle times outlast a full spin halves its next spin down to
/// this, and doubles it back when a spin finds work or a full spin would have (README.md, "Idle
/// workers").
const MIN_SPIN_ROUNDS: u32 = 8;
/// After an ejection, stall timeouts without progress before the run stops as an engine bug.
const STUCK_TIMEOUTS: u32 = 3;

/// The `spin_loop` hints before a spin's pop number `round`: 1, 2, 4 … 64, then 64.
fn spin_pause(round: u32) -> u32 {
    1 << round.min(6)
}

/// The `spin_loop` hints of a spin of `rounds` pops: what its length is estimated by.
fn spin_pauses(rounds: u32) -> u64 {
    (0..rounds).map(|round| u64::from(spin_pause(round))).sum::<u64>().max(1)
}

/// The pops of a worker's next spin, after an idle time of `idle` ticks that its spin of
/// `rounds` pops did not end, where a full spin lasts `full_spin` ticks: twice as many (up to
/// SPIN_ROUNDS) when a full spin would have ended it, else half as many (down to
/// MIN_SPIN_ROUNDS): the work comes after longer gaps than any spin. `IdleSpin::Full` keeps
/// `rounds`.
fn next_spin_rounds(rounds: u32, idle: Ticks, full_spin: Ticks, mode: IdleSpin) -> u32 {
    match mode {
        IdleSpin::Full => rounds,
        IdleSpin::Adaptive if idle < full_spin => (rounds * 2).min(SPIN_ROUNDS),
        IdleSpin::Adaptive => (rounds / 2).max(MIN_SPIN_ROUNDS),
    }
}

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
            let tasks = popped.get(..count).unwrap_or_default();
            for (index, task) in tasks.iter().enumerate() {
                local.pusher.keep_barred = index + 1 < tasks.len() && !self.plan.keep_before_batch;
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
        if let found @ (None | Some(1..)) = self.pop(local, popped) {
            return found;
        }
        let worker = local.pusher.worker;
        let idle_since = self.shared.clock.now();
        // How long a full spin would have lasted, estimated from the first spin of this idle time.
        let mut full_spin = 0;
        loop {
            let rounds = local.spin_rounds;
            self.shared.sleep.start_spinning();
            let found = self.spin(local, popped, rounds);
            self.shared.sleep.stop_spinning();
            if let found @ (None | Some(1..)) = found {
                local.spin_rounds = (rounds * 2).min(SPIN_ROUNDS);
                return found;
            }
            if full_spin == 0 {
                let spun = self.shared.clock.now().saturating_sub(idle_since).max(1);
                full_spin = spun.saturating_mul(spin_pauses(SPIN_ROUNDS)) / spin_pauses(rounds);
            }
            // Idle workers, step 1: announce, then re-check (README.md, "Idle workers").
            self.shared.sleep.prepare(worker);
            match self.pop(local, popped) {
                Some(0) => {}
                found => {
                    self.shared.sleep.cancel(worker);
                    self.adapt_spin(local, idle_since, full_spin);
                    return found;
                }
            }
            let wake = self.shared.sleep.park(worker, self.plan.config.stall_timeout);
            let everyone_idle = wake == Wake::TimedOut && self.shared.sleep.all_asleep();
            self.shared.sleep.finish(worker);
            if everyone_idle {
                return self.check_stall(local, popped);
            }
            if let found @ (None | Some(1..)) = self.pop(local, popped) {
                self.adapt_spin(local, idle_since, full_spin);
                return found;
            }
        }
    }

    /// After an idle time that a spin did not end, from `idle_since`: see [`next_spin_rounds`].
    fn adapt_spin(&self, local: &mut Local, idle_since: Ticks, full_spin: Ticks) {
        let idle = self.shared.clock.now().saturating_sub(idle_since);
        local.spin_rounds = next_spin_rounds(local.spin_rounds, idle, full_spin, self.plan.config.idle_spin);
    }

    /// Tries the scheduler `rounds` times with growing pauses. `Some(0)` if it had nothing.
    pub(super) fn spin(&self, local: &mut Local, popped: &mut PopBuffer, rounds: u32) -> Option<usize> {
        for round in 0..rounds {
            for _ in 0..spin_pause(round) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spin_shrinks_after_long_idle_times_and_grows_back_after_short_ones() {
        let full = 1_000;
        let mut rounds = SPIN_ROUNDS;
        let mut seen = Vec::new();
        for _ in 0..5 {
            rounds = next_spin_rounds(rounds, 5 * full, full, IdleSpin::Adaptive);
            seen.push(rounds);
        }
        assert_eq!(seen, [32, 16, 8, 8, 8]);
        for expected in [16, 32, 64, 64] {
            rounds = next_spin_rounds(rounds, full / 2, full, IdleSpin::Adaptive);
            assert_eq!(rounds, expected);
        }
        assert_eq!(next_spin_rounds(SPIN_ROUNDS, 5 * full, full, IdleSpin::Full), SPIN_ROUNDS);
    }

    #[test]
    fn a_spin_is_estimated_by_its_pauses() {
        assert_eq!(spin_pauses(1), 1);
        assert_eq!(spin_pauses(7), 127);
        assert_eq!(spin_pauses(SPIN_ROUNDS), 127 + 57 * 64);
        assert_eq!(spin_pauses(0), 1); // never a division by zero
    }
}
