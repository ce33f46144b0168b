//! One run's checker: the wrapped scheduler's state, the ledger of what the host did, and the
//! forwarding of every call. A broken promise is kept, and the next push or pop fails with it,
//! so that the run stops naming it; `stats` reports it too, for one found after the last pop.

use std::ffi::{CStr, c_char, c_void};
use std::sync::{Mutex, MutexGuard};

use serde_json::{Value, json};
use tomii_types::abi::{TOMII_KEEP_NONE, TOMII_OK, TOMII_SCHED_POP_HANDLES, TomiiErrorBuf, TomiiTask};

use crate::inner::Inner;
use crate::ledger::Ledger;
use crate::occupancy::{Call, Inside, Occupancy};

/// The most bytes of the wrapped scheduler's stats that are read.
const MAX_STATS_BYTES: usize = 1 << 20;

/// The state the checker's `create` makes.
pub struct Checker {
    inner: &'static Inner,
    /// The wrapped scheduler's state, from its `create`.
    inner_state: *mut c_void,
    /// Whether the wrapped scheduler is SERIAL: then no call may arrive while another is inside.
    serial: bool,
    occupancy: Occupancy,
    ledger: Mutex<Ledger>,
}

impl Checker {
    pub fn new(inner: &'static Inner, inner_state: *mut c_void, serial: bool, workers: u32, slots: u32) -> Checker {
        let ledger = Mutex::new(Ledger::new(workers, slots));
        Checker { inner, inner_state, serial, occupancy: Occupancy::default(), ledger }
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `call` enters; for a SERIAL scheduler, finding another call inside breaks the host's
    /// promise.
    fn enter(&self, call: Call) -> Inside<'_> {
        let (inside, other) = self.occupancy.enter(call);
        if self.serial
            && let Some(other) = other
        {
            let (this, other) = (call.name(), other.name());
            self.ledger().broken(format!("{this} entered while {other} was running, but the scheduler is SERIAL"));
        }
        inside
    }

    /// Fails with the first broken promise, if there is one.
    fn healthy(&self) -> Result<(), String> {
        match self.ledger().violation() {
            Some(violation) => Err(format!("the hook checker caught a broken promise: {violation}")),
            None => Ok(()),
        }
    }

    /// The wrapped scheduler's `call` returned `status`: its message when that is a failure.
    fn inner_outcome(&self, call: &str, status: i32) -> Result<(), String> {
        if status == TOMII_OK {
            return Ok(());
        }
        let message = self
            .inner
            .table
            .last_error
            // SAFETY: the wrapped state; the text lives until this thread's next failing call.
            .map(|last_error| unsafe { last_error(self.inner_state) })
            .filter(|text| !text.is_null())
            // SAFETY: non-NULL and NUL-terminated, by the ABI.
            .map(|text| unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned());
        Err(message.unwrap_or_else(|| format!("{} ({call} returned status {status})", self.inner.name)))
    }

    pub fn push(&self, worker: u32, tasks: &[TomiiTask]) -> Result<(), String> {
        let _inside = self.enter(Call::Push);
        // Recorded before the tasks reach the wrapped scheduler, where another worker may pop them.
        self.ledger().pushed(worker, tasks);
        self.healthy()?;
        let push = self.inner.table.push.expect("checked at load");
        // SAFETY: the wrapped state from its `create`; `tasks` is a live slice.
        let status = unsafe { push(self.inner_state, worker, tasks.as_ptr(), tasks.len()) };
        self.inner_outcome("push", status)
    }

    /// Forwards a `push_keep` (the wrapped scheduler has one): the task it kept counts as popped
    /// by `worker`, which runs it next.
    pub fn push_keep(&self, worker: u32, tasks: &[TomiiTask]) -> Result<Option<usize>, String> {
        let _inside = self.enter(Call::Push);
        self.ledger().pushed(worker, tasks);
        self.healthy()?;
        let push_keep = self.inner.table.push_keep.expect("forwarded only when the wrapped scheduler has it");
        let mut kept = TOMII_KEEP_NONE;
        // SAFETY: the wrapped state from its `create`; `tasks` is a live slice; `kept` a live usize.
        let status = unsafe { push_keep(self.inner_state, worker, tasks.as_ptr(), tasks.len(), &mut kept) };
        self.inner_outcome("push_keep", status)?;
        if kept == TOMII_KEEP_NONE {
            return Ok(None);
        }
        let Some(task) = tasks.get(kept) else {
            return Err(format!("{} kept task index {kept} of the {} pushed", self.inner.name, tasks.len()));
        };
        let mut ledger = self.ledger();
        let mut task = [*task];
        ledger.restore(&mut task);
        ledger.popped(worker, &task);
        drop(ledger);
        self.healthy()?;
        Ok(Some(kept))
    }

    /// Forwards a pop into `out`, room for `max` descriptors, and returns how many were written.
    ///
    /// # Safety
    /// `out` must be valid for writes of `max` descriptors.
    pub unsafe fn pop(&self, worker: u32, out: *mut TomiiTask, max: usize) -> Result<usize, String> {
        let _inside = self.enter(Call::Pop);
        self.healthy()?;
        let pop = self.inner.table.pop.expect("checked at load");
        let mut count = 0usize;
        // SAFETY: the wrapped state; `out` has room for `max` descriptors (the caller's promise).
        let status = unsafe { pop(self.inner_state, worker, out, max, &mut count) };
        self.inner_outcome("pop", status)?;
        if count > max {
            return Err(format!("{} popped {count} tasks for a buffer of {max}", self.inner.name));
        }
        // SAFETY: the wrapped scheduler wrote `count <= max` descriptors to `out` (or their handles).
        let popped = unsafe { std::slice::from_raw_parts_mut(out, count) };
        let mut ledger = self.ledger();
        if self.inner.table.header.flags & TOMII_SCHED_POP_HANDLES != 0 {
            // The host's hooks carry whole descriptors: the checker hands out what was pushed.
            ledger.restore(popped);
        }
        ledger.popped(worker, popped);
        drop(ledger);
        self.healthy()?;
        Ok(count)
    }

    pub fn task_started(&self, worker: u32, task: &TomiiTask) {
        let _inside = self.enter(Call::TaskStarted);
        self.ledger().task_started(worker, task);
        if let Some(hook) = self.inner.table.task_started {
            // SAFETY: the wrapped state; a live descriptor.
            unsafe { hook(self.inner_state, worker, task) };
        }
    }

    pub fn task_completed(&self, worker: u32, task: &TomiiTask, duration_ns: u64) {
        let _inside = self.enter(Call::TaskCompleted);
        self.ledger().task_completed(worker, task);
        if let Some(hook) = self.inner.table.task_completed {
            // SAFETY: the wrapped state; a live descriptor.
            unsafe { hook(self.inner_state, worker, task, duration_ns) };
        }
    }

    pub fn frame_started(&self, frame: u64, slot: u32) {
        let _inside = self.enter(Call::FrameStarted);
        self.ledger().frame_started(frame, slot);
        if let Some(hook) = self.inner.table.frame_started {
            // SAFETY: the wrapped state.
            unsafe { hook(self.inner_state, frame, slot) };
        }
    }

    pub fn frame_completed(&self, frame: u64, slot: u32, latency_ns: u64) {
        let _inside = self.enter(Call::FrameCompleted);
        self.ledger().frame_completed(frame, slot);
        if let Some(hook) = self.inner.table.frame_completed {
            // SAFETY: the wrapped state.
            unsafe { hook(self.inner_state, frame, slot, latency_ns) };
        }
    }

    /// Forwards `set_knob`; its status, with the message in `err` on failure.
    ///
    /// # Safety
    /// `key` and `value` must be NUL-terminated strings and `err` a valid error buffer.
    pub unsafe fn set_knob(&self, key: *const c_char, value: *const c_char, err: TomiiErrorBuf) -> i32 {
        let _inside = self.enter(Call::SetKnob);
        match self.inner.table.set_knob {
            // SAFETY: the wrapped state and the host's arguments, valid for the call.
            Some(set_knob) => unsafe { set_knob(self.inner_state, key, value, err) },
            None => {
                let message = format!("scheduler {:?} has no set_knob: its options are fixed", self.inner.name);
                // SAFETY: the host's buffer is valid for `cap` bytes.
                unsafe { tomii_types::write_error(err, &message) };
                tomii_types::abi::TOMII_ERR
            }
        }
    }

    /// The checker's counts and findings, with the wrapped scheduler's own stats under "inner".
    pub fn stats(&self) -> String {
        let _inside = self.enter(Call::Stats);
        let inner =
            self.inner_stats().map_or(Value::Null, |text| serde_json::from_str(&text).unwrap_or(Value::String(text)));
        let ledger = self.ledger();
        let counts = ledger.counts();
        let checker = json!({
            "inner": self.inner.name,
            "serial": self.serial,
            "pushed": counts.pushed,
            "popped": counts.popped,
            "task_started": counts.task_started,
            "task_completed": counts.task_completed,
            "frame_started": counts.frame_started,
            "frame_completed": counts.frame_completed,
            "frames_in_flight": ledger.frames_in_flight(),
            "tasks_in_flight": ledger.tasks_in_flight(),
            "most_calls_at_once": self.occupancy.most(),
            "violations": ledger.violations(),
            "first_violation": ledger.violation(),
        });
        json!({ "hook_checker": checker, "inner": inner }).to_string()
    }

    /// The wrapped scheduler's stats text, if it has a `stats` hook.
    fn inner_stats(&self) -> Option<String> {
        let stats = self.inner.table.stats?;
        let mut buf = vec![0u8; 4096];
        // SAFETY: the wrapped state; `buf` has the stated capacity.
        let needed = unsafe { stats(self.inner_state, buf.as_mut_ptr().cast(), buf.len()) };
        if needed >= buf.len() && needed <= MAX_STATS_BYTES {
            buf.resize(needed + 1, 0);
            // SAFETY: as above, with the larger buffer.
            unsafe { stats(self.inner_state, buf.as_mut_ptr().cast(), buf.len()) };
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        Some(String::from_utf8_lossy(&buf[..end]).into_owned())
    }
}

impl Drop for Checker {
    fn drop(&mut self) {
        let destroy = self.inner.table.destroy.expect("checked at load");
        // SAFETY: the wrapped state from its `create`; the host destroys the checker once, after
        // every other call returned, so nothing else uses it.
        unsafe { destroy(self.inner_state) };
    }
}
