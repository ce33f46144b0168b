//! The host side of a run: hiring the worker threads and handing them the run, watching it while
//! they work (the trace, stop requests, progress, calls that do not return), and ending it, on
//! success or on failure (README.md, "The run", "Stuck callbacks", "Shutdown"). All of it runs on
//! the host thread except `fail` and `stop_run`, which any thread may call; none of it may run on
//! a worker's per-task path.
//!
//! # Memory ordering
//! `stop_run` stores `stop` Release after the failure is recorded (behind its mutex) or the last
//! frame is accounted for; the Acquire loads in `watch` and in the worker loop's `pop` pair with
//! it. `watch` loads `exited` Acquire, pairing with the Release increment a worker makes after it
//! left its results in its `finished` cell (`worker_loop.rs`).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tomii_types::abi::TOMII_NO_WORKER;

use super::Engine;
use crate::engine::trace::TraceSink;
use crate::engine::{Latencies, Progress, RunError, RunFailure, RunOutcome, pool};
use crate::graph::quote_name;
use crate::plugin::Call;

/// How often the host thread looks at the run (stop requests, the trace, progress) when nothing
/// wakes it sooner.
const WATCH_EVERY: Duration = Duration::from_millis(20);
/// How often progress is reported.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);
/// The most trace records kept in memory (48 bytes each); beyond it the oldest are released, and
/// the report counts them.
const TRACE_MEMORY_LIMIT: usize = 1 << 22;

/// The host leaving its watch: stops the run when the host thread unwinds, so that the workers
/// return and `Crew::run`'s wait for them ends; and, however it leaves, closes the trace pool, so
/// that a worker still running (stuck in a call, or the host unwinding) no longer waits for the
/// trace.
struct LeaveWatch<'e, 'a>(&'e Engine<'a>);

impl Drop for LeaveWatch<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop_run();
        }
        if let Some(pool) = &self.0.shared.trace_pool {
            pool.close();
        }
    }
}

impl Engine<'_> {
    /// The trace's destination: the trace file, streamed, and memory, when asked for.
    pub(super) fn trace_sink(&self) -> Result<TraceSink, RunError> {
        let names: Vec<String> = self.plan.graph.nodes.iter().map(|n| n.name.clone()).collect();
        let file = self.plan.config.trace_file.as_deref();
        let memory = self.plan.config.trace.then_some(TRACE_MEMORY_LIMIT);
        TraceSink::new(file, memory, &names, self.plan.config.trace_taps.clone())
            .map(|sink| sink.with_record_taps(self.plan.config.record_taps.clone()))
            .map_err(|error| {
                let path = file.map(|p| p.to_owned()).unwrap_or_default();
                RunError::Io { path, reason: format!("cannot write the trace: {error}") }
            })
    }

    /// Runs the workers to the end of the run (README.md, "The run") and returns its outcome.
    /// The workers are threads of the pool ("The worker pool"), handed the run once its first
    /// frames started; meanwhile the host thread watches the run (`watch`). Wall time runs from the
    /// first frames' start to the run's stop.
    ///
    /// A worker stuck in a call cannot be waited for: with `on_hang`, the outcome is made of what
    /// the other workers did once they exited and handed to it first.
    pub(super) fn run_workers(&self, sink: &mut TraceSink) -> Result<RunOutcome, RunFailure> {
        let mut host_latency = Latencies::new();
        let crew = pool::hire(self.plan.config.workers);
        let wall = Instant::now();
        let crew = match crew {
            Ok(crew) => {
                if let Err(error) = self.start_first_frames(&mut host_latency) {
                    self.fail(error);
                }
                crew
            }
            Err(error) => {
                // No frame starts, and no worker runs: the report lists them all as unreported.
                self.fail(RunError::Internal(format!("cannot start a worker thread: {error}")));
                pool::Crew::none()
            }
        };
        let hired = crew.len();
        // With warm-up frames, the wall time starts with the first frame after them (none
        // started: no wall time).
        let measured_from = || match self.plan.config.warmup_frames {
            0 => Some(wall),
            _ => self.shared.measured_from.get().copied(),
        };
        let wall_s = || {
            let stopped = self.shared.stopped_at.get().copied().unwrap_or_else(Instant::now);
            measured_from().map_or(0.0, |from| stopped.saturating_duration_since(from).as_secs_f64())
        };
        let handed = crew.run(&|worker| self.work(worker), |crew| {
            let stop = LeaveWatch(self);
            let stuck = self.watch(wall, sink, hired);
            drop(stop);
            stuck.iter().for_each(|&worker| crew.retire(worker));
            match &self.plan.config.on_hang {
                Some(on_hang) if !stuck.is_empty() => {
                    // The run will not return to its caller, who would add the source's outputs.
                    let outputs = self.source.take_outputs();
                    (on_hang.0)(super::super::with_outputs(self.outcome(&host_latency, sink, wall_s()), outputs));
                    true
                }
                _ => false,
            }
        });
        if handed {
            let error =
                RunError::Internal("the run's outcome was handed to on_hang, the call it was stuck in returned".into());
            return Err(RunFailure { error, partial: None });
        }
        self.outcome(&host_latency, sink, wall_s())
    }

    /// The host thread's part while the workers run: takes the trace chunks workers hand over,
    /// turns a stop request into the end of the source (the frames in flight then complete), ends
    /// the run when the door ended with nothing in flight, and reports progress; until the run
    /// stops and each of the `spawned` workers exited or was found stuck in a call (one that does
    /// not return keeps its worker from exiting, even after the run's last frame). Returns those
    /// found stuck.
    pub(super) fn watch(&self, wall: Instant, sink: &mut TraceSink, spawned: u32) -> Vec<u32> {
        let mut reported: Option<Instant> = None;
        let limit_ms = u64::try_from(self.plan.config.scheduler_call_timeout.as_millis()).unwrap_or(u64::MAX);
        let kernel_limit_ms =
            self.plan.config.kernel_timeout.map_or(u64::MAX, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
        // Per worker, then the host: whether it was found stuck in a call.
        let mut stuck = vec![false; self.plan.config.workers as usize + 1];
        // Since when the run is stopping (asked to, or stopped), and whether its end was cut short
        // (README.md, "A run that cannot stop").
        let (mut stopping_since, mut cut_short) = (None::<Instant>, false);
        loop {
            let now_ms = u64::try_from(wall.elapsed().as_millis()).unwrap_or(u64::MAX);
            while let Some((worker, call)) = self.scheduler.watchdog().look(now_ms, limit_ms, kernel_limit_ms, &stuck) {
                stuck[(worker as usize).min(self.plan.config.workers as usize)] = true;
                let left = stuck[..self.plan.config.workers as usize].iter().filter(|s| !**s).count();
                self.stuck(worker, call, left);
            }
            let stopped = self.shared.stop.load(Ordering::Acquire);
            // A bounded share of the trace's backlog: the host looks at the run (the watchdog's
            // tick, stop requests, progress) at least once per period however far behind it is.
            let behind = match &self.shared.trace_pool {
                Some(pool) => sink.drain_for(pool, &self.shared.clock, WATCH_EVERY),
                None => false,
            };
            if let Some(log) = &self.shared.system_log {
                sink.drain_system(log, &self.shared.clock);
            }
            if let Some(request) = &self.plan.config.stop
                && request.load(Ordering::Relaxed)
                && !self.shared.door.is_ended()
            {
                self.shared.interrupted.store(true, Ordering::Relaxed);
                self.shared.door.end();
            }
            if !stopped && self.shared.door.is_finished() {
                self.stop_run();
            }
            // Asked to stop, even after the source ended by itself (its last frames in flight).
            let asked = self.plan.config.stop.as_ref().is_some_and(|request| request.load(Ordering::Relaxed));
            if stopping_since.is_none() && (stopped || asked) {
                stopping_since = Some(Instant::now());
            }
            let now = self.plan.config.stop_now.as_ref().is_some_and(|now| now.load(Ordering::Relaxed));
            let overdue =
                stopping_since.zip(self.plan.config.stop_grace).is_some_and(|(at, grace)| at.elapsed() >= grace);
            if !cut_short && (now || overdue) {
                cut_short = true;
                self.cut_short(now, stopped, now_ms, &stuck);
            }
            if cut_short {
                self.leave_calls(now_ms, &mut stuck);
            }
            if let Some(progress) = &self.plan.config.progress
                && (stopped || reported.is_none_or(|at| at.elapsed() >= PROGRESS_EVERY))
            {
                let frames = self.source.planned().unwrap_or(0);
                let frames_done = self.shared.frames_done.load(Ordering::Relaxed);
                (progress.0)(Progress { frames_done, frames, elapsed: wall.elapsed() });
                reported = Some(Instant::now());
            }
            let found = stuck[..self.plan.config.workers as usize].iter().filter(|s| **s).count();
            if stopped && self.shared.exited.load(Ordering::Acquire) as usize + found >= spawned as usize {
                return (0..self.plan.config.workers).filter(|&worker| stuck[worker as usize]).collect();
            }
            if !behind {
                std::thread::park_timeout(WATCH_EVERY);
            }
        }
    }

    /// A call did not return in time (README.md, "Stuck callbacks"): the run fails, or, for a
    /// worker's call into the scheduler under `FaultPolicy::Fallback` with `left` workers not
    /// stuck, the scheduler is ejected and the run goes on without that worker.
    #[cold]
    pub(super) fn stuck(&self, worker: u32, call: Call, left: usize) {
        let error = if call == Call::Kernel {
            self.kernel_hang(worker)
        } else {
            RunError::SchedulerHang {
                scheduler: self.scheduler.plugin().name.to_owned(),
                call: call.name(),
                worker: if worker == TOMII_NO_WORKER { "the host thread".into() } else { format!("worker {worker}") },
                timeout_ms: self.plan.config.scheduler_call_timeout.as_millis(),
            }
        };
        let ejectable = call != Call::Kernel && worker != TOMII_NO_WORKER && left > 0;
        if ejectable && self.contract_violation(error.to_string()).is_ok() {
            return;
        }
        self.fail(error);
    }

    /// The kernel call `worker` is stuck in, named.
    #[cold]
    pub(super) fn kernel_hang(&self, worker: u32) -> RunError {
        let (kernel, node, instance, frame) = self.kernel_call(worker);
        RunError::KernelHang {
            kernel,
            node,
            instance,
            frame,
            worker,
            timeout_ms: self.plan.config.kernel_timeout.unwrap_or_default().as_millis(),
        }
    }

    /// The kernel call `worker` is in (or made last): its kernel, node, instance and frame.
    fn kernel_call(&self, worker: u32) -> (String, String, u32, u64) {
        let call = self.scheduler.watchdog().subject(worker);
        let (slot, instance) = ((call >> 32) as u32, call as u32);
        let node = self.plan.graph.node_of(instance);
        let frame = self.shared.table.slot(slot).frame.load(Ordering::Relaxed);
        (node.function.clone(), node.name.clone(), self.plan.graph.inst_index[instance as usize], frame)
    }

    /// Gives up on the end of a run asked to stop (README.md, "A run that cannot stop"): its
    /// grace ran out, or (`now`) it was asked to end at once. Unless it had stopped already (it
    /// finished or failed: that outcome stands), the run fails, naming the calls workers are in
    /// ([`leave_calls`](Self::leave_calls) then leaves those workers behind).
    #[cold]
    fn cut_short(&self, now: bool, stopped: bool, now_ms: u64, stuck: &[bool]) {
        if stopped {
            return;
        }
        let calls = (0..self.plan.config.workers)
            .filter(|&worker| !stuck[worker as usize])
            .filter_map(|worker| self.call_in_progress(worker, now_ms))
            .collect();
        let grace_ms = (!now).then(|| self.plan.config.stop_grace.unwrap_or_default().as_millis());
        self.fail(RunError::StopCutShort { grace_ms, calls });
    }

    /// After the run's end was cut short, the workers in a call ([`call_in_progress`]) are left
    /// behind as stuck: the host no longer waits for them.
    ///
    /// [`call_in_progress`]: Self::call_in_progress
    #[cold]
    fn leave_calls(&self, now_ms: u64, stuck: &mut [bool]) {
        for worker in 0..self.plan.config.workers {
            if !stuck[worker as usize] && self.call_in_progress(worker, now_ms).is_some() {
                stuck[worker as usize] = true;
            }
        }
    }

    /// The call `worker` is in, named ("worker 0 in kernel ..."): a kernel call, or a call into
    /// the scheduler that began a couple of the host's looks ago or more (a worker that only
    /// passes through one, asking for work, returns from it at once).
    fn call_in_progress(&self, worker: u32, now_ms: u64) -> Option<String> {
        let (call, since_ms) = self.scheduler.watchdog().in_call(worker)?;
        if call == Call::Kernel {
            let (kernel, node, instance, frame) = self.kernel_call(worker);
            return Some(format!(
                "worker {worker} in kernel {} (node {} instance {instance}, frame {frame})",
                quote_name(&kernel),
                quote_name(&node)
            ));
        }
        let settled = u64::try_from(2 * WATCH_EVERY.as_millis()).unwrap_or(u64::MAX);
        (now_ms.saturating_sub(since_ms.unwrap_or(now_ms)) >= settled)
            .then(|| format!("worker {worker} in {} of scheduler {:?}", call.name(), self.scheduler.plugin().name))
    }

    /// Records the first failure and stops the run.
    #[cold]
    pub(super) fn fail(&self, error: RunError) {
        let mut failure = self.shared.failure.lock().unwrap_or_else(|p| p.into_inner());
        if failure.is_none() {
            *failure = Some(error);
        }
        drop(failure);
        self.stop_run();
    }

    /// Ends the run (README.md, "Shutdown"): every worker and the host thread wake and see `stop`.
    pub(super) fn stop_run(&self) {
        let _ = self.shared.stopped_at.set(Instant::now());
        self.shared.stop.store(true, Ordering::Release);
        self.shared.sleep.wake_all();
        self.shared.host.unpark();
    }

    /// The error that ends a run whose scheduler broke its contract. The scheduler's state is not
    /// destroyed afterwards: it may be corrupt, and destroying it could crash the process.
    #[cold]
    pub(super) fn fault(&self, violation: String) -> RunError {
        self.scheduler.abandon();
        RunError::SchedulerFault { scheduler: self.scheduler.plugin().name.to_owned(), violation }
    }
}
