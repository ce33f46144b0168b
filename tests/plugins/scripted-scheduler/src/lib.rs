//! `scripted`: a scheduler that lets a test choose every task the engine runs, so that a
//! property test can drive the real engine one step at a time (tests/python/test_stateful.py).
//!
//! Protocol, for a run with one worker (the host's calls on the left, the test's on the right):
//! 1. The host pushes ready tasks; they wait in `pending`.
//! 2. The worker calls `pop` and blocks until the test has chosen one of `pending`.
//! 0. Before starting the run, the test calls `tomii_scripted_expect_run()`.
//! 3. The test calls `tomii_scripted_wait(timeout_ms, out, cap)`: it returns once the worker is
//!    blocked in `pop` (everything the previous step made ready has been pushed by then), with
//!    the pending tasks copied to `out`; it returns -1 once the expected run ended, -2 on timeout
//!    (also while the run has not started yet).
//! 4. The test calls `tomii_scripted_choose(index)`: `pop` hands that task to the worker.
//!
//! A `pop` with nothing pending returns at once with no task: with one worker and a correct
//! engine that only happens once the run is over, so a stall there is the engine's bug, which the
//! host's stall watchdog reports. One run at a time per process (the controller is global).

#![deny(unsafe_code)]

use std::ffi::CStr;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tomii_types::abi::TomiiKnobDesc;
use tomii_types::scheduler::{InitInfo, Scheduler, Task};

/// What the test sees of a pending task.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ScriptedTask {
    pub frame: u64,
    pub node: u32,
    pub instance: u32,
    pub slot: u32,
    pub reserved: u32,
}

#[derive(Default)]
struct Control {
    pending: Vec<Task>,
    /// The worker is blocked in `pop`, waiting for a choice.
    waiting: bool,
    /// The index into `pending` the test chose, until `pop` takes it.
    chosen: Option<usize>,
    /// A run is in progress (between `create` and `drop`).
    running: bool,
    /// The run the test expects has ended (set by `drop`, cleared by `tomii_scripted_expect_run`).
    ended: bool,
}

static CONTROL: Mutex<Control> =
    Mutex::new(Control { pending: Vec::new(), waiting: false, chosen: None, running: false, ended: false });
static CHANGED: Condvar = Condvar::new();

fn lock() -> MutexGuard<'static, Control> {
    CONTROL.lock().unwrap_or_else(PoisonError::into_inner)
}

pub struct Scripted;

impl Scheduler for Scripted {
    const NAME: &'static CStr = c"scripted";
    const KNOBS: &'static [TomiiKnobDesc] = &[];

    fn create(init: &InitInfo) -> Result<Self, String> {
        if init.workers != 1 {
            return Err(format!("the scripted scheduler drives one worker; the run has {}", init.workers));
        }
        let mut control = lock();
        if control.running {
            return Err("another scripted run is in progress in this process".to_owned());
        }
        *control = Control { running: true, ..Control::default() };
        Ok(Scripted)
    }

    fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        lock().pending.extend_from_slice(tasks);
        Ok(())
    }

    fn pop(&self, _worker: u32, out: &mut [Task]) -> Result<usize, String> {
        let mut control = lock();
        if out.is_empty() || control.pending.is_empty() {
            return Ok(0);
        }
        control.waiting = true;
        CHANGED.notify_all();
        let mut control =
            CHANGED.wait_while(control, |c| c.chosen.is_none() && c.running).unwrap_or_else(PoisonError::into_inner);
        control.waiting = false;
        let Some(index) = control.chosen.take() else { return Ok(0) };
        out[0] = control.pending.remove(index);
        Ok(1)
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        let mut control = lock();
        control.running = false;
        control.ended = true;
        control.pending.clear();
        CHANGED.notify_all();
    }
}

tomii_types::export_scheduler!(Scripted);

/// Step 3 of the protocol: waits until the worker is blocked in `pop`, copies up to `cap` pending
/// tasks to `out` and returns how many are pending; -1 when no run is in progress (it ended),
/// -2 after `timeout_ms`.
///
/// # Safety
/// `out` must be valid for writes of `cap` tasks.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tomii_scripted_wait(timeout_ms: u64, out: *mut ScriptedTask, cap: usize) -> i64 {
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    let mut control = lock();
    loop {
        if control.waiting && control.chosen.is_none() {
            break;
        }
        if control.ended {
            return -1;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return -2;
        }
        control = CHANGED.wait_timeout(control, left).unwrap_or_else(PoisonError::into_inner).0;
    }
    for (i, task) in control.pending.iter().take(cap).enumerate() {
        let copy =
            ScriptedTask { frame: task.frame, node: task.node, instance: task.instance, slot: task.slot, reserved: 0 };
        // SAFETY: `i < cap`, and the caller guarantees `cap` writable tasks at `out`.
        unsafe { out.add(i).write(copy) };
    }
    control.pending.len() as i64
}

/// Step 0 of the protocol: the next `tomii_scripted_wait` waits for a run that has not started yet.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn tomii_scripted_expect_run() {
    lock().ended = false;
}

/// Step 4 of the protocol: hands pending task `index` to the blocked worker. Returns 0, or -1
/// when the worker is not waiting or `index` is out of range.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn tomii_scripted_choose(index: usize) -> i32 {
    let mut control = lock();
    if !control.waiting || control.chosen.is_some() || index >= control.pending.len() {
        return -1;
    }
    control.chosen = Some(index);
    CHANGED.notify_all();
    0
}
