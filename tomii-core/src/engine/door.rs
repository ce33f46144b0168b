//! The injection door: how threads outside the worker pool start frames (README.md, "Frames and
//! their source"). A thread hands in a frame's inputs with a slot reserved for it; the first worker
//! to look (every pop looks first, with one load) starts it. The door also keeps the run's frame
//! accounting: which slots are free, how many frames are in flight, and whether the source ended.
//!
//! A source may also open a frame without its inputs and deliver them one by one as they arrive
//! (`open`, `deliver`, `abandon`: the network source does, one per packet). Requests are served in
//! the order they were queued, by one worker at a time (`serve`), so a frame's start is always
//! served before the deliveries queued after it.
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

/// Room in the request queue beyond the frames in flight, for deliveries a receiver pushes after
/// its frame was abandoned (each receiver thread has at most one in hand).
const LATE_DELIVERIES: usize = 1024;

/// Why the door refused a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the run has ended (its source was closed, a stop was requested, or it failed)")]
    Ended,
    #[error("every slot is busy")]
    Busy,
}

/// A frame opened through the door ([`Door::open`]), whose inputs come one by one: its slot, and
/// the serial number that tells it from the frames the slot holds before and after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opened {
    pub slot: u32,
    pub serial: u64,
}

/// What a thread outside the pool asked for, served by a worker in queue order.
pub(super) enum Request {
    /// Start a frame in `slot`, reserved for it: with its inputs' values, or, with `None`, with
    /// values delivered one by one afterwards (`serial` names it then).
    Start { slot: u32, serial: u64, tag: u64, inputs: Option<Vec<Value>> },
    /// The value of input instance `input` (a position in `CompiledGraph::inputs`) of the frame
    /// `frame`. Dropped if the frame is no longer in its slot (it was abandoned and completed).
    Deliver { frame: Opened, input: u32, value: Value },
    /// The frame gets no more values: its inputs without one become NONE, and its tasks that have
    /// not run yet are skipped.
    Abandon { frame: Opened },
    /// Change one of the scheduler's options (its `set_knob`); the outcome goes to `reply`.
    SetOption { key: String, value: String, reply: std::sync::mpsc::SyncSender<Result<(), String>> },
}

pub struct Door {
    workers: u32,
    /// Slots without a frame.
    free: ArrayQueue<u32>,
    /// Requests not yet served: at most one start per reserved slot, and per frame at most one
    /// delivery per input instance and one abandonment.
    requests: ArrayQueue<Request>,
    /// Whether `requests` may hold something: the pop path's one load.
    pending: AtomicBool,
    /// Whether a worker is serving the requests (one at a time, so they are served in order).
    serving: AtomicBool,
    /// Frames opened so far (`Opened::serial` counts from 1; 0 is a frame started with its inputs).
    opened: AtomicU64,
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
    /// Called whenever a slot becomes free, if set (`on_slot_free`).
    slot_freed: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl Door {
    /// A door for `slots` slots, whose frames get `deliveries` values one by one each (0 for a
    /// source that gives a frame's inputs at its start). Its queues are made at once, for every
    /// slot: memory the system refuses them is an error, not an abort.
    pub(super) fn new(
        slots: u32,
        deliveries: usize,
        workers: u32,
        sleep: Arc<Sleep>,
        host: Thread,
    ) -> Result<Self, String> {
        let requests = Door::request_room(slots, deliveries);
        let slots = slots.max(1) as usize;
        super::memory::probe(Door::state_bytes(slots as u32, deliveries), || {
            format!("the queues of the run's door ({slots} slot(s), {requests} requests)")
        })?;
        Ok(Door {
            workers,
            free: ArrayQueue::new(slots),
            requests: ArrayQueue::new(requests),
            pending: AtomicBool::new(false),
            serving: AtomicBool::new(false),
            opened: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            ended: AtomicBool::new(false),
            entering: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
            lock: Mutex::new(()),
            freed: Condvar::new(),
            sleep,
            host,
            slot_freed: std::sync::OnceLock::new(),
        })
    }

    /// The room of the request queue: a start, the deliveries and an abandonment per frame in
    /// flight, and room for deliveries pushed late, after their frame was abandoned (dropped when
    /// served).
    fn request_room(slots: u32, deliveries: usize) -> usize {
        let late = if deliveries > 0 { LATE_DELIVERIES } else { 0 };
        (slots.max(1) as usize).saturating_mul(deliveries.saturating_add(2)).saturating_add(late)
    }

    /// The bytes the queues of a door for `slots` slots and `deliveries` values per frame take:
    /// an entry of the free list per slot and the request queue's room, each entry its value and a
    /// stamp (`ArrayQueue`'s), at the least.
    pub(crate) fn state_bytes(slots: u32, deliveries: usize) -> u64 {
        let free = u64::from(slots.max(1)) * size_of::<(usize, u32)>() as u64;
        let requests = Door::request_room(slots, deliveries) as u64 * size_of::<(usize, Request)>() as u64;
        free.saturating_add(requests)
    }

    /// Calls `notify` whenever a slot becomes free (once per frame that leaves its slot, from the
    /// worker that completed it; it must be quick). Set once: a second call is ignored.
    pub fn on_slot_free(&self, notify: Box<dyn Fn() + Send + Sync>) {
        let _ = self.slot_freed.set(notify);
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
                self.queue(Request::Start { slot, serial: 0, tag, inputs: Some(inputs) });
                self.entering.fetch_sub(1, Ordering::SeqCst);
                return Ok(());
            }
            self.entering.fetch_sub(1, Ordering::SeqCst);
            if !self.wait_for_slot(deadline) {
                return Err(Refused::Busy);
            }
        }
    }

    /// Opens a frame whose inputs come later, one by one (`deliver`), in a free slot, without
    /// waiting. Its start is served before anything queued after this returns.
    pub fn open(&self, tag: u64) -> Result<Opened, Refused> {
        self.entering.fetch_add(1, Ordering::SeqCst);
        let opened = if self.ended.load(Ordering::SeqCst) {
            Err(Refused::Ended)
        } else if let Some(slot) = self.free.pop() {
            self.in_flight.fetch_add(1, Ordering::SeqCst);
            let serial = self.opened.fetch_add(1, Ordering::Relaxed) + 1;
            self.queue(Request::Start { slot, serial, tag, inputs: None });
            Ok(Opened { slot, serial })
        } else {
            Err(Refused::Busy)
        };
        self.entering.fetch_sub(1, Ordering::SeqCst);
        opened
    }

    /// The value of input instance `input` (its position in `CompiledGraph::inputs`) of the frame
    /// `frame`; each is delivered at most once. Works after the door ended: the frame is in
    /// flight. A value that comes after the frame's `abandon` is dropped.
    pub fn deliver(&self, frame: Opened, input: u32, value: Value) {
        self.queue(Request::Deliver { frame, input, value });
    }

    /// The frame gets no more values: those not delivered become NONE and its tasks that have not
    /// run are skipped; it then completes as abandoned.
    pub fn abandon(&self, frame: Opened) {
        self.queue(Request::Abandon { frame });
    }

    /// Changes one of the scheduler's options while the run goes on (its `set_knob`, called by a
    /// worker between tasks); waits up to `timeout` for the answer.
    pub fn set_scheduler_option(&self, key: &str, value: &str, timeout: Duration) -> Result<(), String> {
        if self.is_ended() {
            return Err("the run has ended".into());
        }
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        self.queue(Request::SetOption { key: key.to_owned(), value: value.to_owned(), reply });
        match answer.recv_timeout(timeout) {
            Ok(outcome) => outcome,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                Err(format!("no worker took the option change within {timeout:?}"))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err("the run ended first".into()),
        }
    }

    /// Queues a request and wakes a worker for it, as a push does.
    fn queue(&self, mut request: Request) {
        // Its capacity covers every request the frames in flight can have; were it ever full, the
        // workers empty it: wait for room rather than lose a request.
        while let Err(back) = self.requests.push(request) {
            request = back;
            self.pending.store(true, Ordering::SeqCst);
            self.sleep.notify(None, std::iter::once((0, self.workers)));
            std::thread::yield_now();
        }
        self.pending.store(true, Ordering::SeqCst);
        self.sleep.notify(None, std::iter::once((0, self.workers)));
    }

    /// Waits until a slot may be free or the door ended; false when `deadline` passed first.
    pub fn wait_for_slot(&self, deadline: Option<Instant>) -> bool {
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
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.wake_waiters();
        }
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

    /// Whether the run's frames are all done and no more will come (no submitter is between its
    /// check of `ended` and counting its frame in flight).
    pub(super) fn is_finished(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
            && self.in_flight.load(Ordering::SeqCst) == 0
            && self.entering.load(Ordering::SeqCst) == 0
    }

    /// Whether requests are queued.
    pub(super) fn has_queued(&self) -> bool {
        !self.requests.is_empty()
    }

    /// Whether a handed-in frame may be waiting (one load; the pop path checks it first).
    #[inline]
    pub(super) fn has_requests(&self) -> bool {
        self.pending.load(Ordering::Relaxed)
    }

    /// The right to serve the requests, unless another worker is serving them. (The guard is made
    /// only on success: dropping one releases the right.)
    pub(super) fn serve(&self) -> Option<Serving<'_>> {
        self.serving.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok().then(|| Serving(self))
    }

    /// The next request, if any; only while serving.
    pub(super) fn take_request(&self, _serving: &Serving<'_>) -> Option<Request> {
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

    /// A frame is done; true when it was the run's last (the door ended, nothing is in flight and
    /// no submitter is entering; otherwise the host, watching, ends the run when it is).
    pub(super) fn count_done(&self) -> bool {
        self.in_flight.fetch_sub(1, Ordering::SeqCst) == 1
            && self.ended.load(Ordering::SeqCst)
            && self.entering.load(Ordering::SeqCst) == 0
    }

    /// `slot` has no frame: it is free for the next one handed in.
    pub(super) fn release_slot(&self, slot: u32) {
        let _ = self.free.push(slot);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.wake_waiters();
        }
        if let Some(notify) = self.slot_freed.get() {
            notify();
        }
    }

    fn wake_waiters(&self) {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.freed.notify_all();
    }

    /// After the run: ends the door, waits for submitters in the middle of handing in a frame, and
    /// returns the tag of every frame handed in that never started (deliveries never served are
    /// dropped).
    pub(super) fn drain(&self) -> Vec<u64> {
        self.ended.store(true, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.wake_waiters();
        }
        while self.entering.load(Ordering::SeqCst) > 0 {
            std::thread::yield_now();
        }
        std::iter::from_fn(|| self.requests.pop())
            .filter_map(|request| match request {
                Request::Start { tag, .. } => Some(tag),
                Request::Deliver { .. } | Request::Abandon { .. } | Request::SetOption { .. } => None,
            })
            .collect()
    }
}

/// A worker's right to serve the door's requests; released when dropped.
pub(super) struct Serving<'d>(&'d Door);

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        self.0.serving.store(false, Ordering::Release);
    }
}
