//! The programmatic source: a run kept open while a program feeds it frames (README.md, "Frames
//! and their source"). [`Session::start`] compiles nothing: it takes a compiled graph, loaded
//! kernels and a loaded scheduler, creates the scheduler and starts the workers once; then every
//! [`Session::submit`] hands one frame's inputs in through the door and returns a [`Ticket`] whose
//! [`Ticket::wait`] gives that frame's sink outputs. [`Session::close`] drains the frames in flight
//! and returns the run's report.
//!
//! The run itself goes on on a host thread of its own, the session's; the program's threads only
//! hand frames in and wait for tickets.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tomii_types::kernel::Value;

use super::door::{Door, Refused};
use super::source::{FrameDone, FrameSource, NextFrame};
use super::{FrameOutputs, RunConfig, RunError, RunFailure, RunOutcome};
use crate::graph::CompiledGraph;
use crate::plugin::{KernelSet, SchedulerPlugin};

/// Why a frame was not handed in.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The inputs do not match the graph's.
    #[error("{0}")]
    Inputs(String),
    /// Every slot stayed busy for the whole timeout.
    #[error("every slot is busy: {slots} frame(s) in flight; wait for one, or submit with a longer timeout")]
    Busy { slots: u32 },
    /// The session was closed, or its run failed (the reason, when it did).
    #[error("the session has ended{}", .0.as_ref().map(|why| format!(": {why}")).unwrap_or_default())]
    Ended(Option<String>),
}

/// What became of one frame.
#[derive(Debug)]
pub struct FrameResult {
    /// The engine's number of the frame (frames are numbered in the order they start).
    pub frame: u64,
    /// From its start to its last task's completion, in nanoseconds.
    pub latency_ns: u64,
    /// Its sink outputs, (node, instance, value) per sink instance; or why it did not complete
    /// (the run failed or ended first).
    pub outputs: Result<FrameOutputs, String>,
}

/// Where one frame's result arrives.
#[derive(Default)]
struct Cell {
    result: Mutex<Option<FrameResult>>,
    ready: Condvar,
}

impl Cell {
    fn fill(&self, result: FrameResult) {
        *self.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
        self.ready.notify_all();
    }
}

/// A frame handed in; `wait` gives its result.
pub struct Ticket {
    cell: Arc<Cell>,
}

impl Ticket {
    /// Waits for the frame's result, up to `timeout` (`None`: without limit). `None` when it
    /// has not come in time, or was taken already.
    pub fn wait(&self, timeout: Option<Duration>) -> Option<FrameResult> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut result = self.cell.result.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(done) = result.take() {
                return Some(done);
            }
            result = match deadline {
                None => self.cell.ready.wait(result).unwrap_or_else(|p| p.into_inner()),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return None;
                    }
                    self.cell.ready.wait_timeout(result, deadline - now).unwrap_or_else(|p| p.into_inner()).0
                }
            };
        }
    }

    /// Whether the result has come (and not been taken).
    pub fn is_done(&self) -> bool {
        self.cell.result.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }
}

/// The source side of a session, shared by the program's threads and the run.
struct Feed {
    /// Tickets of the frames handed in and not yet done, by tag.
    waiting: Mutex<HashMap<u64, Arc<Cell>>>,
    next_tag: AtomicU64,
    /// Where `attach` sends the door, once, when the run has started.
    started: Mutex<Option<SyncSender<Arc<Door>>>>,
    /// Why the run ended, once it has.
    ended: Mutex<Option<String>>,
    /// The run's door, once it has started: a stuck call ends it.
    door: std::sync::OnceLock<Arc<Door>>,
    /// The run's outcome, when a call stuck in a plugin kept the run from returning it (the
    /// engine's `on_hang`): `close` returns it.
    handed: Mutex<Option<Result<RunOutcome, RunFailure>>>,
}

impl FrameSource for Feed {
    fn next_frame(&self) -> NextFrame {
        NextFrame::NotYet
    }

    fn wants_outputs(&self) -> bool {
        true
    }

    fn frame_done(&self, done: FrameDone) {
        if !done.completed {
            return; // answered when the run has ended, with the reason (`fail_waiting`)
        }
        let cell = self.waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&done.tag);
        if let Some(cell) = cell {
            let outputs = Ok(done.outputs.unwrap_or_default());
            cell.fill(FrameResult { frame: done.frame, latency_ns: done.latency_ns, outputs });
        }
    }

    fn attach(&self, door: &Arc<Door>) -> Result<(), RunError> {
        let _ = self.door.set(Arc::clone(door));
        if let Some(started) = self.started.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = started.send(Arc::clone(door));
        }
        Ok(())
    }

    fn kind(&self) -> &'static str {
        "session"
    }
}

impl Feed {
    /// A call stuck in a plugin (past `scheduler_call_timeout_ms` or `kernel_timeout_ms`) keeps
    /// the run from ending: it takes no more frames, every frame waiting gets the reason, and the
    /// outcome waits for `close`.
    fn stuck(&self, outcome: Result<RunOutcome, RunFailure>) {
        if let Some(door) = self.door.get() {
            door.end();
        }
        let why = match &outcome {
            Ok(_) => "the session was closed before the frame completed".to_owned(),
            Err(failure) => failure.error.to_string(),
        };
        self.fail_waiting(&why);
        *self.handed.lock().unwrap_or_else(|p| p.into_inner()) = Some(outcome);
    }

    /// The run has ended: every frame still waiting gets `why`.
    fn fail_waiting(&self, why: &str) {
        // A run that failed before `attach` never sent the door: `start` learns it from this.
        drop(self.started.lock().unwrap_or_else(|p| p.into_inner()).take());
        // The first reason stands: a stuck call's, before the run's own return says it was handed.
        self.ended.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(|| why.to_owned());
        let waiting = std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|p| p.into_inner()));
        for cell in waiting.into_values() {
            cell.fill(FrameResult { frame: u64::MAX, latency_ns: 0, outputs: Err(why.to_owned()) });
        }
    }
}

/// A run kept open, taking frames from the program (see the module's documentation).
pub struct Session {
    door: Arc<Door>,
    feed: Arc<Feed>,
    host: Option<JoinHandle<Result<RunOutcome, RunError>>>,
    inputs: usize,
    slots: u32,
}

impl Session {
    /// Starts the run: binds the kernels, creates the scheduler, starts the workers; returns once
    /// they wait for frames, or with the error that kept the run from starting. The graph's inputs
    /// are what each frame is given; it may have none. Post-nodes need a last frame, which a
    /// session does not have: a graph with some is refused.
    pub fn start(
        graph: Arc<CompiledGraph>,
        kernels: Arc<KernelSet>,
        scheduler: Arc<SchedulerPlugin>,
        mut config: RunConfig,
    ) -> Result<Session, RunError> {
        if let Some(post) = graph.post.first() {
            return Err(RunError::Config(format!(
                "{}: post-node {:?} runs after a run's last frame, and a session has none; run the graph with \
                 a number of frames instead",
                graph.source, post.node.name
            )));
        }
        let (started, door) = sync_channel(1);
        let feed = Arc::new(Feed {
            waiting: Mutex::new(HashMap::new()),
            next_tag: AtomicU64::new(0),
            started: Mutex::new(Some(started)),
            ended: Mutex::new(None),
            door: std::sync::OnceLock::new(),
            handed: Mutex::new(None),
        });
        let stuck_feed = Arc::clone(&feed);
        config.on_hang = Some(super::HangFn(Arc::new(move |outcome| stuck_feed.stuck(outcome))));
        let inputs = graph.inputs.len();
        let slots = config.slots;
        let run_feed = Arc::clone(&feed);
        let host = std::thread::Builder::new()
            .name("tomii-session".into())
            .spawn(move || {
                let outcome = super::run_with(&graph, &kernels, &scheduler, &config, &*run_feed);
                let why = match &outcome {
                    Ok(_) => "the session was closed before the frame completed".to_owned(),
                    Err(error) => error.to_string(),
                };
                run_feed.fail_waiting(&why);
                outcome
            })
            .map_err(|e| RunError::Internal(format!("cannot start the session's thread: {e}")))?;
        match door.recv() {
            Ok(door) => Ok(Session { door, feed, host: Some(host), inputs, slots }),
            // The run ended before its first frame: it failed to start.
            Err(_) => match host.join() {
                Ok(Err(error)) => Err(error),
                Ok(Ok(_)) => Err(RunError::Internal("the session's run ended before it started".into())),
                Err(payload) => Err(RunError::Internal(format!(
                    "the session's thread panicked: {}",
                    tomii_types::panic_message(&*payload)
                ))),
            },
        }
    }

    /// Hands in one frame: `inputs` holds one value per input instance (`CompiledGraph::inputs`
    /// order). When every slot is busy, waits up to `timeout` (`None`: without limit; zero: not at
    /// all) for one to free.
    pub fn submit(&self, inputs: Vec<Value>, timeout: Option<Duration>) -> Result<Ticket, SubmitError> {
        if inputs.len() != self.inputs {
            return Err(SubmitError::Inputs(format!(
                "the graph takes {} input value(s) per frame, {} given",
                self.inputs,
                inputs.len()
            )));
        }
        let tag = self.feed.next_tag.fetch_add(1, Ordering::Relaxed);
        let cell = Arc::new(Cell::default());
        self.feed.waiting.lock().unwrap_or_else(|p| p.into_inner()).insert(tag, Arc::clone(&cell));
        match self.door.submit(tag, inputs, timeout) {
            Ok(()) => Ok(Ticket { cell }),
            Err(refused) => {
                self.feed.waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&tag);
                Err(match refused {
                    Refused::Busy => SubmitError::Busy { slots: self.slots },
                    Refused::Ended => SubmitError::Ended(self.ended_because()),
                })
            }
        }
    }

    /// Changes one of the scheduler's options while the session runs (the scheduler's
    /// `set_knob`, called between tasks under its SERIAL lock); the scheduler's message when it
    /// refuses, or has no `set_knob`.
    pub fn set_scheduler_option(&self, key: &str, value: &str) -> Result<(), String> {
        self.door.set_scheduler_option(key, value, Duration::from_secs(10))
    }

    /// Why the run ended, once it has (a failure's message, or the close).
    pub fn ended_because(&self) -> Option<String> {
        self.feed.ended.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Frames handed in and not yet done.
    pub fn in_flight(&self) -> u64 {
        self.door.in_flight()
    }

    /// Waits up to `within` for a free slot: whether one is free (or the session has ended, and
    /// `submit` says so). A caller that must stay responsive (to Ctrl-C) waits in slices with
    /// this before `submit`.
    pub fn wait_for_slot(&self, within: Duration) -> bool {
        self.door.wait_for_slot(Some(Instant::now() + within))
    }

    /// Takes no more frames; those in flight go on. [`Session::close`] then returns once they are
    /// done; a caller that must stay responsive waits for `in_flight` to reach 0 first.
    pub fn stop_taking_frames(&self) {
        self.door.end();
    }

    /// Whether the run still takes frames.
    pub fn is_open(&self) -> bool {
        !self.door.is_ended()
    }

    /// Takes no more frames, waits for those in flight, and returns the run's outcome (its
    /// report; the frames' outputs went to their tickets).
    pub fn close(mut self) -> Result<RunOutcome, RunError> {
        self.finish()
    }

    fn finish(&mut self) -> Result<RunOutcome, RunError> {
        self.door.end();
        let Some(host) = self.host.take() else {
            return Err(RunError::Internal("the session was already closed".into()));
        };
        // A run whose call is stuck handed its outcome over and will not return: its thread is
        // left (dropping the handle detaches it), as the stuck worker is.
        if let Some(handed) = self.feed.handed.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return handed.map_err(|failure| failure.error);
        }
        host.join().unwrap_or_else(|payload| {
            Err(RunError::Internal(format!("the session's thread panicked: {}", tomii_types::panic_message(&*payload))))
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.host.is_some() {
            let _ = self.finish();
        }
    }
}
