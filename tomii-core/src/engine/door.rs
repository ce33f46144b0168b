//! The injection door: how threads outside the worker pool start frames (README.md, "Frames and
//! their source"). A thread hands in a frame's inputs with a slot reserved for it; the first worker
//! to look (every pop looks first, with one load) starts it. The door also keeps the run's frame
//! accounting: which slots are free, how many frames are in flight, and whether the source ended.
//!
//! Nothing here runs per task except `has_requests`, one relaxed load per pop.
//!
//! # Memory ordering
//! - A submitter increments `entering`, then reads `ended`; closing stores `ended`, then waits for
//!   `entering` to be 0 (SeqCst both): a frame is either refused or counted in `in_flight` and
//!   queued before `drain` looks, so no handed-in frame is lost without being reported.
//! - A completing worker decrements `in_flight`, then reads `ended`; `end` stores `ended`, then
//!   reads `in_flight` (SeqCst both): whichever comes second sees the run is over and ends it.
//! - A request is queued, then the sleepers are checked (the idle workers' Dekker pair, sleep.rs):
//!   a parked worker is woken for it unless a spinning one will look.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;
use tomii_types::kernel::Value;

use super::sleep::Sleep;

/// Why the door refused a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the run has ended (its source was closed, a stop was requested, or it failed)")]
    Ended,
    #[error("every slot is busy")]
    Busy,
}

/// A frame handed in through the door, with the slot reserved for it.
pub(super) struct Request {
    pub(super) slot: u32,
    pub(super) tag: u64,
    pub(super) inputs: Vec<Value>,
}

pub struct Door {
    workers: u32,
    /// Slots without a frame.
    free: ArrayQueue<u32>,
    /// Frames handed in, not yet started (at most one per reserved slot).
    requests: ArrayQueue<Request>,
    /// Whether `requests` may hold something: the pop path's one load.
    pending: AtomicBool,
    /// Frames started or handed in, not yet done.
    in_flight: AtomicU64,
    /// No frame is accepted any more: the source ended, a stop was requested or the run is over.
    ended: AtomicBool,
    /// Submitters between their `ended` check and queueing their request.
    entering: AtomicU32,
    /// Submitters waiting for a free slot, and where they wait.
    waiters: AtomicU32,
    lock: Mutex<()>,
    freed: Condvar,
    sleep: Arc<Sleep>,
    /// The run's host thread: woken when the door ends with nothing in flight.
    host: Thread,
}

impl Door {
    pub(super) fn new(slots: u32, workers: u32, sleep: Arc<Sleep>, host: Thread) -> Self {
        Door {
            workers,
            free: ArrayQueue::new(slots.max(1) as usize),
            requests: ArrayQueue::new(slots.max(1) as usize),
            pending: AtomicBool::new(false),
            in_flight: AtomicU64::new(0),
            ended: AtomicBool::new(false),
            entering: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
            lock: Mutex::new(()),
            freed: Condvar::new(),
            sleep,
            host,
        }
    }

    /// Hands in a frame: `inputs` holds one value per input instance of the graph (in
    /// `CompiledGraph::inputs` order); `tag` comes back in the source's `frame_done`. When every
    /// slot is busy, waits for one up to `timeout` (`None`: without limit; zero: not at all).
    pub fn submit(&self, tag: u64, inputs: Vec<Value>, timeout: Option<Duration>) -> Result<(), Refused> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            self.entering.fetch_add(1, Ordering::SeqCst);
            if self.ended.load(Ordering::SeqCst) {
                self.entering.fetch_sub(1, Ordering::SeqCst);
                return Err(Refused::Ended);
            }
            if let Some(slot) = self.free.pop() {
                self.in_flight.fetch_add(1, Ordering::SeqCst);
                // Cannot be full: it holds at most one request per reserved slot.
                let queued = self.requests.push(Request { slot, tag, inputs });
                debug_assert!(queued.is_ok());
                self.pending.store(true, Ordering::SeqCst);
                self.entering.fetch_sub(1, Ordering::SeqCst);
                self.sleep.notify(None, std::iter::once((0, self.workers)));
                return Ok(());
            }
            self.entering.fetch_sub(1, Ordering::SeqCst);
            if !self.wait_for_slot(deadline) {
                return Err(Refused::Busy);
            }
        }
    }

    /// Waits until a slot may be free or the door ended; false when `deadline` passed first.
    fn wait_for_slot(&self, deadline: Option<Instant>) -> bool {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut in_time = true;
        while self.free.is_empty() && !self.ended.load(Ordering::SeqCst) {
            match deadline {
                None => guard = self.freed.wait(guard).unwrap_or_else(|p| p.into_inner()),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        in_time = false;
                        break;
                    }
                    guard = self.freed.wait_timeout(guard, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
                }
            }
        }
        drop(guard);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        in_time
    }

    /// No frame will be accepted any more: the run ends once the frames in flight are done.
    pub fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
        self.wake_waiters();
        if self.in_flight.load(Ordering::SeqCst) == 0 {
            self.host.unpark();
        }
    }

    /// Whether the door accepts no frame any more.
    pub fn is_ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// Frames started or handed in and not yet done.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Whether the run's frames are all done and no more will come.
    pub(super) fn is_finished(&self) -> bool {
        self.ended.load(Ordering::SeqCst) && self.in_flight.load(Ordering::SeqCst) == 0
    }

    /// Whether a handed-in frame may be waiting (one load; the pop path checks it first).
    #[inline]
    pub(super) fn has_requests(&self) -> bool {
        self.pending.load(Ordering::Relaxed)
    }

    /// The next handed-in frame, if any.
    pub(super) fn take_request(&self) -> Option<Request> {
        let request = self.requests.pop();
        if self.requests.is_empty() {
            self.pending.store(false, Ordering::SeqCst);
            // A submitter may have queued between the pop and the store: keep the flag up for it.
            if !self.requests.is_empty() {
                self.pending.store(true, Ordering::SeqCst);
            }
        }
        request
    }

    /// A frame is about to start in a slot the engine holds (not through the door).
    pub(super) fn count_start(&self) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
    }

    /// A frame is done; true when it was the run's last (the door ended and nothing is in flight).
    pub(super) fn count_done(&self) -> bool {
        self.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 && self.ended.load(Ordering::SeqCst)
    }

    /// `slot` has no frame: it is free for the next one handed in.
    pub(super) fn release_slot(&self, slot: u32) {
        let _ = self.free.push(slot);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.wake_waiters();
        }
    }

    fn wake_waiters(&self) {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.freed.notify_all();
    }

    /// After the run: ends the door, waits for submitters in the middle of handing in a frame, and
    /// returns every frame handed in that never started.
    pub(super) fn drain(&self) -> Vec<Request> {
        self.ended.store(true, Ordering::SeqCst);
        self.wake_waiters();
        while self.entering.load(Ordering::SeqCst) > 0 {
            std::thread::yield_now();
        }
        std::iter::from_fn(|| self.requests.pop()).collect()
    }
}
