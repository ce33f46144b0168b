//! The threads in-process runs run on, so that the Python caller can give up on a run stuck in a
//! plugin.
//!
//! A call stuck in a scheduler or a kernel cannot be stopped, and a run cannot end while one of its
//! workers is stuck (tomii-core's engine README, "Stuck callbacks"). So a run does not run on the
//! caller's thread: it runs on a runner, a thread kept for the runs of the process, and the caller
//! waits for its message. When the engine finds a stuck call it hands its partial outcome to
//! `on_hang`, which sends it; the caller then raises, and the runner, still inside the run, is
//! left behind. A second Ctrl-C leaves it behind too.
//!
//! Runners wait in a list of idle ones; a run takes one, or starts one when none is idle, so that
//! runs from several Python threads (a gym environment's episode beside the agent, a thread pool)
//! run side by side, and a runner left behind is never waited for. A runner puts itself back on
//! the list before it hands its result over, so a caller that runs again at once finds it there.
//!
//! Cost per run: one message each way to a parked thread, instead of a thread started per run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;

/// A run, or whatever else must run on a runner; it calls its argument, which puts the runner
/// back on the idle list, once the runner's work for it is done.
type Job = Box<dyn FnOnce(&dyn Fn()) + Send>;

/// The idle runners' queues, with the id of the process whose threads read them: a process
/// forked from one with runners has no runner thread, only their queues.
static IDLE: Mutex<(u32, Vec<Sender<Job>>)> = Mutex::new((0, Vec::new()));

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

/// Runs `job` on the runner and waits for its result, the GIL released. `job` gets a sender for a
/// stuck call's message (for `on_hang`); `interrupts` looks for Ctrl-C while the caller waits, and
/// at two the caller stops waiting.
pub fn run<T, H>(
    py: Python<'_>,
    job: impl FnOnce(Sender<Finished<T, H>>) -> T + Send + 'static,
    interrupts: &mut Interrupts,
) -> Result<T, GaveUp<H>>
where
    T: Send + 'static,
    H: Send + 'static,
{
    let (sender, receiver) = mpsc::channel();
    let on_hang = sender.clone();
    submit(Box::new(move |idle_again: &dyn Fn()| {
        let done = job(on_hang);
        idle_again();
        let _ = sender.send(Finished::Done(Box::new(done)));
    }));
    let waiting = &mut *interrupts;
    let waited = py.detach(move || {
        loop {
            match receiver.recv_timeout(LOOK_EVERY) {
                Ok(Finished::Done(done)) => return Ok(*done),
                Ok(Finished::Hung(hung)) => return Err(GaveUp::Hung(hung)),
                Err(RecvTimeoutError::Timeout) => {
                    Python::attach(|py| waiting.look(py));
                    if waiting.count >= 2 {
                        return Err(GaveUp::Interrupted);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return Err(GaveUp::Lost),
            }
        }
    });
    // A Ctrl-C in the last moments of the run: its exception comes with the result.
    interrupts.look(py);
    waited
}

/// Hands `job` to an idle runner, or to a new one when none is idle.
fn submit(mut job: Job) {
    loop {
        let idle = {
            let mut idle = IDLE.lock().unwrap_or_else(|p| p.into_inner());
            let pid = std::process::id();
            if idle.0 != pid {
                // Forked: the queues' threads are not in this process (leaked, never touched).
                std::mem::forget(std::mem::take(&mut idle.1));
                idle.0 = pid;
            }
            idle.1.pop()
        };
        let Some(queue) = idle else { break };
        match queue.send(job) {
            Ok(()) => return,
            Err(mpsc::SendError(back)) => job = back, // a runner that is gone
        }
    }
    let (queue, jobs) = mpsc::channel::<Job>();
    let own = queue.clone();
    let started = std::thread::Builder::new().name("tomii-run".into()).stack_size(STACK_BYTES).spawn(move || {
        let idle_again = || IDLE.lock().unwrap_or_else(|p| p.into_inner()).1.push(own.clone());
        for job in jobs {
            job(&idle_again);
        }
    });
    match started {
        Ok(_) => {
            let _ = queue.send(job);
        }
        // No thread to spare: the run goes on the caller's thread, without the escape from a hang.
        Err(_) => job(&|| {}),
    }
}

/// Ctrl-C while a caller waits for a run. Python runs its SIGINT handler only when the main thread
/// runs Python code, so the waiting caller looks every `LOOK_EVERY` and once the run has returned:
/// it runs the handlers of the signals that came meanwhile (`PyErr_CheckSignals`, which does
/// nothing off the main thread). Whatever a handler raises (KeyboardInterrupt, by default) sets
/// `stop`, the run's stop request, and the first such exception is kept, to be raised with the
/// run's result; at a second, the caller stops waiting. A handler that raises nothing (a program's
/// own) leaves the run going, as it would leave Python code going.
///
/// Python's handler is the one place a Ctrl-C is seen: `_thread.interrupt_main()` and a handler
/// installed by `signal.signal` act on a run as on Python code.
pub struct Interrupts {
    stop: Arc<AtomicBool>,
    raised: Option<PyErr>,
    count: usize,
}

impl Interrupts {
    pub fn new(stop: Arc<AtomicBool>) -> Self {
        Interrupts { stop, raised: None, count: 0 }
    }

    /// Runs the handlers of the signals that came since the last look.
    pub fn look(&mut self, py: Python<'_>) {
        if let Err(raised) = py.check_signals() {
            self.stop.store(true, Ordering::Relaxed);
            self.count += 1;
            self.raised.get_or_insert(raised);
        }
    }

    /// The first exception a signal's handler raised, if any.
    pub fn raised(self) -> Option<PyErr> {
        self.raised
    }
}
