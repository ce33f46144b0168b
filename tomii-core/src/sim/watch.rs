//! Where a simulation runs, and its call watchdog: the event loop runs on a thread of its own,
//! named as the engine names its workers (`tomii-worker-sim`: the plugins' panic hook then reports
//! a scheduler's panic as it does on a real worker, with its location and without printing), while
//! the calling thread watches the scheduler port's marks (`plugin/watchdog.rs`) as a real run's
//! host thread does (engine/README.md, "Stuck callbacks"). One thread per simulated run, never one
//! per call; the watching thread never calls the scheduler or touches the simulation's state.
//!
//! # Memory ordering
//! `done` is stored Release by the simulation's thread after its last event and loaded Acquire
//! by the watcher, which then joins it (the join orders everything else). `hung` is Relaxed: it
//! only stops the loop early; the watchdog's error is handed over through the join.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tomii_types::abi::TOMII_NO_WORKER;

use crate::engine::{RunConfig, RunError, RunFailure};
use crate::plugin::SchedulerInstance;

/// How often the watchdog looks.
const WATCH_EVERY: Duration = Duration::from_millis(20);
/// The name of the thread a simulation runs on: a worker's, to the plugins.
const THREAD_NAME: &str = "tomii-worker-sim";

/// What the watchdog found: the hang, and whether its failure was handed to `on_hang`.
#[derive(Default)]
pub(super) struct Found {
    pub(super) hang: Option<RunError>,
    pub(super) handed: bool,
}

/// Runs `body` (the simulation) on its own thread while this one watches `scheduler`'s calls;
/// returns what `body` returned and what the watchdog found. `body` is given the flag the
/// watchdog sets when it finds a call stuck, and stops at its next event. A stuck call's failure goes to
/// `run.on_hang` at once, as in a real run (what the simulation did is on the stuck thread and
/// cannot be reported then); the simulation returns once the call does, which may be never.
pub(super) fn watched<T: Send>(
    scheduler: &SchedulerInstance<'_>,
    run: &RunConfig,
    body: impl FnOnce(&AtomicBool) -> T + Send,
) -> Result<(T, Found), RunError> {
    let (done, hung) = (AtomicBool::new(false), AtomicBool::new(false));
    let limit_ms = u64::try_from(run.scheduler_call_timeout.as_millis()).unwrap_or(u64::MAX);
    let watcher = std::thread::current();
    std::thread::scope(|scope| {
        let simulation = std::thread::Builder::new()
            .name(THREAD_NAME.to_owned())
            .spawn_scoped(scope, || {
                let result = body(&hung);
                done.store(true, Ordering::Release);
                watcher.unpark();
                result
            })
            .map_err(|error| RunError::Internal(format!("cannot start the simulation's thread: {error}")))?;
        let start = Instant::now();
        let mut found = Found::default();
        while !done.load(Ordering::Acquire) {
            std::thread::park_timeout(WATCH_EVERY);
            let now_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
            if found.hang.is_some() {
                continue;
            }
            let Some((worker, call)) = scheduler.watchdog().look(now_ms, limit_ms, u64::MAX, &[]) else { continue };
            let hang = || RunError::SchedulerHang {
                scheduler: scheduler.plugin().name.to_owned(),
                call: call.name(),
                worker: if worker == TOMII_NO_WORKER { "the host thread".into() } else { format!("worker {worker}") },
                timeout_ms: run.scheduler_call_timeout.as_millis(),
            };
            found.hang = Some(hang());
            hung.store(true, Ordering::Relaxed);
            if let Some(on_hang) = &run.on_hang {
                found.handed = true;
                (on_hang.0)(Err(RunFailure { error: hang(), partial: None }));
            }
        }
        match simulation.join() {
            Ok(result) => Ok((result, found)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
