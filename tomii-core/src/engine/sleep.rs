//! Parking idle workers and waking them when work arrives. The protocol is described in README.md,
//! "Idle workers"; the comments below point at its steps.
//!
//! A worker parks on its own thread handle, so a wake can target a worker that may run the task
//! (tasks carry an allowed worker range). Nothing here spins; spinning is the worker loop's choice.
//!
//! # Memory ordering
//! Parking and waking form a Dekker pair: the sleeper publishes `SLEEPING` and increments
//! `sleepers`, issues the heavy fence, then re-checks the scheduler; the pusher pushes, issues the
//! light fence, then reads `sleepers` (fence.rs explains the asymmetric pair). In every
//! interleaving either the sleeper's re-check sees the task or the pusher sees the sleeper, so no
//! task is left behind while a worker that could run it sleeps.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, Ordering};
use std::thread::Thread;
use std::time::Duration;

const AWAKE: u8 = 0;
const SLEEPING: u8 = 1;

/// How a park ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Wake {
    /// Another thread woke this worker (or the wake raced with the park).
    Woken,
    /// The timeout passed with nobody waking the worker.
    TimedOut,
}

use super::fence::Fences;

pub struct Sleep {
    fences: Fences,
    /// Per worker: AWAKE or SLEEPING.
    state: Box<[AtomicU8]>,
    /// Per worker: its thread, registered when it starts.
    threads: Box<[OnceLock<Thread>]>,
    /// Per worker: whether it left the run (its thread, a pooled one, may be in another run now).
    left: Box<[AtomicBool]>,
    /// Workers between `prepare` and `finish`.
    sleepers: AtomicU32,
    /// Workers spinning in search of work (they will find a task without being woken).
    spinners: AtomicU32,
    /// Where wakes start scanning, so that they spread over the workers.
    next_scan: AtomicU32,
    /// Every push wakes every sleeping worker (`new`).
    wake_all: bool,
}

impl Sleep {
    /// `wake_all`: every push wakes every sleeping worker (a replay, whose scheduler holds each
    /// task for one worker the wake-up rule cannot know; `RunConfig::wake_all_on_push`).
    pub fn new(workers: u32, wake_all: bool) -> Self {
        Sleep {
            wake_all,
            fences: Fences::new(),
            state: (0..workers).map(|_| AtomicU8::new(AWAKE)).collect(),
            threads: (0..workers).map(|_| OnceLock::new()).collect(),
            left: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            sleepers: AtomicU32::new(0),
            spinners: AtomicU32::new(0),
            next_scan: AtomicU32::new(0),
        }
    }

    /// Called by each worker thread when it starts.
    pub fn register(&self, worker: u32) {
        let _ = self.threads[worker as usize].set(std::thread::current());
    }

    /// Called by each worker thread when it leaves the run: `wake_all` no longer unparks it.
    pub fn leave(&self, worker: u32) {
        self.left[worker as usize].store(true, Ordering::Relaxed);
    }

    pub fn start_spinning(&self) {
        self.spinners.fetch_add(1, Ordering::Relaxed);
    }

    pub fn stop_spinning(&self) {
        self.spinners.fetch_sub(1, Ordering::Relaxed);
    }

    /// Step 1 of parking: announce the intention. The caller must then re-check the scheduler and
    /// call `cancel` if it found work, or `park` if it did not.
    pub fn prepare(&self, worker: u32) {
        self.state[worker as usize].store(SLEEPING, Ordering::SeqCst);
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        self.fences.heavy();
    }

    /// The re-check found work: stop being a sleeper.
    pub fn cancel(&self, worker: u32) {
        self.state[worker as usize].store(AWAKE, Ordering::Relaxed);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Step 2 of parking: sleep until woken or `timeout` passes. Call `finish` afterwards.
    pub fn park(&self, worker: u32, timeout: Duration) -> Wake {
        let state = &self.state[worker as usize];
        let deadline = std::time::Instant::now() + timeout;
        while state.load(Ordering::Acquire) == SLEEPING {
            let now = std::time::Instant::now();
            if now >= deadline {
                return Wake::TimedOut;
            }
            std::thread::park_timeout(deadline - now);
        }
        Wake::Woken
    }

    /// Step 3: the worker is awake again (woken, timed out or cancelled by itself).
    pub fn finish(&self, worker: u32) {
        self.cancel(worker);
    }

    /// Whether every worker is parked or about to park: then nobody runs a task.
    pub fn all_asleep(&self) -> bool {
        self.sleepers.load(Ordering::SeqCst) as usize == self.state.len()
    }

    /// After pushing tasks: wakes sleeping workers for those that no awake worker will take.
    ///
    /// `ranges` yields each pushed task's allowed workers; `pusher` is the pushing worker, which
    /// takes one task in its range itself (`None` when the host pushed).
    #[inline]
    pub fn notify<I>(&self, pusher: Option<u32>, ranges: I)
    where
        I: IntoIterator<Item = (u32, u32)>,
    {
        self.fences.light();
        if self.sleepers.load(Ordering::SeqCst) == 0 {
            return;
        }
        self.wake_for(pusher, ranges);
    }

    #[cold]
    fn wake_for<I: IntoIterator<Item = (u32, u32)>>(&self, mut pusher: Option<u32>, ranges: I) {
        let workers = self.state.len() as u32;
        if self.wake_all {
            (0..workers).for_each(|worker| {
                self.wake(worker);
            });
            return;
        }
        let mut spinners = self.spinners.load(Ordering::Relaxed);
        for (lo, hi) in ranges {
            if pusher.is_some_and(|me| (lo..hi).contains(&me)) {
                pusher = None;
                continue;
            }
            if spinners > 0 && lo == 0 && hi >= workers {
                spinners -= 1;
                continue;
            }
            if self.sleepers.load(Ordering::SeqCst) == 0 {
                return;
            }
            self.wake_one_in(lo, hi.min(workers));
        }
    }

    /// Wakes one sleeping worker in `lo..hi`, if any. Returns whether it woke one.
    fn wake_one_in(&self, lo: u32, hi: u32) -> bool {
        if lo >= hi {
            return false;
        }
        let span = hi - lo;
        let start = self.next_scan.fetch_add(1, Ordering::Relaxed) % span;
        (0..span).map(|i| lo + (start + i) % span).any(|worker| self.wake(worker))
    }

    /// Wakes `worker` if it sleeps. Returns whether it did.
    fn wake(&self, worker: u32) -> bool {
        let woke =
            self.state[worker as usize].compare_exchange(SLEEPING, AWAKE, Ordering::AcqRel, Ordering::Relaxed).is_ok();
        if woke && let Some(thread) = self.threads[worker as usize].get() {
            thread.unpark();
        }
        woke
    }

    /// Wakes every worker still in the run (the run finished or failed).
    pub fn wake_all(&self) {
        for worker in 0..self.state.len() as u32 {
            self.wake(worker);
            if let Some(thread) = self.threads[worker as usize].get()
                && !self.left[worker as usize].load(Ordering::Relaxed)
            {
                thread.unpark();
            }
        }
    }
}
