//! The thread in-process runs run on, so that the Python caller can give up on a run stuck in a
//! plugin.
//!
//! A call stuck in a scheduler or a kernel cannot be stopped, and a run cannot end while one of its
//! workers is stuck (tomii-core's engine README, "Stuck callbacks"). So a run does not run on the
//! caller's thread: it runs on the runner, a thread kept for every run of the process, and the
//! caller waits for its message. When the engine finds a stuck call it hands its partial outcome
//! to `on_hang`, which sends it; the caller then raises, and the runner, still inside the run, is
//! left behind: the next run starts a new one. A second Ctrl-C leaves it behind too.
//!
//! Cost per run: one message each way to a parked thread, instead of a thread started per run.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A run, or whatever else must run on the runner.
type Job = Box<dyn FnOnce() + Send>;

/// The runner's queue, with the id of the process whose thread reads it; `None` before the first
/// run and after a runner was left behind.
static RUNNER: Mutex<Option<(u32, Sender<Job>)>> = Mutex::new(None);

/// The runner's stack: what the caller's main thread would have had (post-node kernels and the
/// host's part of the run execute there).
const STACK_BYTES: usize = 8 << 20;
/// How often the caller looks at the interrupt count while it waits.
const LOOK_EVERY: Duration = Duration::from_millis(20);

/// What the caller waits for: the run's end, or a stuck call's partial outcome. The end is boxed:
/// a channel's first message allocates room for 31, zeroed, so a large one would cost a run more
/// than its message.
pub enum Finished<T, H> {
    Done(Box<T>),
    Hung(H),
}

/// Why the caller stopped waiting without the run's end.
pub enum GaveUp<H> {
    /// A call was stuck: what the engine handed over.
    Hung(H),
    /// Ctrl-C was pressed twice while the run did not end.
    Interrupted,
    /// The runner died (a panic outside the engine's catch).
    Lost,
}

/// Runs `job` on the runner and waits for its result. `job` gets a sender for a stuck call's
/// message (for `on_hang`); `interrupts` counts Ctrl-C presses during the wait, and at two the
/// caller stops waiting.
pub fn run<T, H>(
    job: impl FnOnce(Sender<Finished<T, H>>) -> T + Send + 'static,
    interrupts: &AtomicUsize,
) -> Result<T, GaveUp<H>>
where
    T: Send + 'static,
    H: Send + 'static,
{
    let (sender, receiver) = mpsc::channel();
    let on_hang = sender.clone();
    submit(Box::new(move || {
        let done = job(on_hang);
        let _ = sender.send(Finished::Done(Box::new(done)));
    }));
    let gave_up = loop {
        match receiver.recv_timeout(LOOK_EVERY) {
            Ok(Finished::Done(done)) => return Ok(*done),
            Ok(Finished::Hung(hung)) => break GaveUp::Hung(hung),
            Err(RecvTimeoutError::Timeout) if interrupts.load(Ordering::Relaxed) >= 2 => break GaveUp::Interrupted,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break GaveUp::Lost,
        }
    };
    // The runner is still inside the run: the next one gets a new thread.
    RUNNER.lock().unwrap_or_else(|p| p.into_inner()).take();
    Err(gave_up)
}

/// Queues `job` on the runner, starting one if there is none (or it is gone). A process forked
/// from one with a runner has no runner thread, only its queue: the queue is forgotten (leaked,
/// never touched) and the child starts its own runner.
fn submit(job: Job) {
    let mut runner = RUNNER.lock().unwrap_or_else(|p| p.into_inner());
    let pid = std::process::id();
    if runner.as_ref().is_some_and(|(owner, _)| *owner != pid) {
        std::mem::forget(runner.take());
    }
    let job = match runner.as_ref() {
        Some((_, queue)) => match queue.send(job) {
            Ok(()) => return,
            Err(mpsc::SendError(job)) => job,
        },
        None => job,
    };
    let (queue, jobs) = mpsc::channel::<Job>();
    let started = std::thread::Builder::new().name("tomii-run".into()).stack_size(STACK_BYTES).spawn(move || {
        for job in jobs {
            job();
        }
    });
    if started.is_err() {
        // No thread to spare: the run goes on the caller's thread, without the escape from a hang.
        drop(runner);
        return job();
    }
    let _ = queue.send(job);
    *runner = Some((pid, queue));
}

/// While it lives, SIGINT sets `stop` (the run's stop request) and is counted, after Python's own
/// handler, which it chains (so Python raises KeyboardInterrupt when it next looks).
pub struct Interrupts {
    pub count: Arc<AtomicUsize>,
    hook: Option<signal_hook::SigId>,
}

impl Interrupts {
    pub fn install(stop: Arc<AtomicBool>) -> Self {
        let count = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&count);
        // SAFETY: the action only stores to atomics, which is async-signal-safe.
        let hook = unsafe {
            signal_hook::low_level::register(signal_hook::consts::SIGINT, move || {
                stop.store(true, Ordering::Relaxed);
                counted.fetch_add(1, Ordering::Relaxed);
            })
        };
        Interrupts { count, hook: hook.ok() }
    }

    /// Whether Ctrl-C was pressed.
    pub fn pressed(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }
}

impl Drop for Interrupts {
    fn drop(&mut self) {
        if let Some(hook) = self.hook.take() {
            signal_hook::low_level::unregister(hook);
        }
    }
}
