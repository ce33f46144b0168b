//! `hook-checker`: a test scheduler that wraps another one (the library named by
//! `$TOMII_HOOK_CHECKER_INNER`), forwards every call to it, and checks every promise the host
//! makes about hooks (README.md lists them). A broken promise fails the next push or pop with a
//! message naming it; `stats` reports it as well. For the conformance suite only.
//!
//! This file is the C boundary: the entry symbol, the table (the wrapped scheduler's flags but
//! `TOMII_SCHED_POP_HANDLES`, all four hooks) and the shims, which check pointers, catch panics
//! and turn results into status codes. The checks themselves are safe code in `ledger.rs` and `occupancy.rs`.

use std::cell::RefCell;
use std::ffi::{CString, c_char, c_void};
use std::sync::OnceLock;

use tomii_types::abi::{
    TOMII_ERR, TOMII_ERR_INVALID, TOMII_ERR_PANIC, TOMII_KEEP_NONE, TOMII_OK, TOMII_SCHED_ABI_MAJOR,
    TOMII_SCHED_ABI_MINOR, TOMII_SCHED_POP_HANDLES, TOMII_SCHED_SERIAL, TomiiAbiHeader, TomiiErrorBuf, TomiiSchedInit,
    TomiiSchedulerVtable, TomiiTask,
};
use tomii_types::{catch_panic, catch_panic_marked, write_error};

mod checker;
mod inner;
mod ledger;
mod occupancy;

use checker::Checker;
use inner::Inner;

pub use inner::INNER_VAR;

/// The wrapped scheduler (or why it could not be loaded) and the table that wraps it.
struct Loaded {
    inner: Result<Inner, String>,
    table: TomiiSchedulerVtable,
}

// SAFETY: the table holds function pointers and a leaked name, immutable for the process once
// made; `Inner` is `Send` for the same reason.
unsafe impl Send for Loaded {}

/// Made by the first call of the entry symbol, for the process.
static LOADED: OnceLock<Loaded> = OnceLock::new();

thread_local! {
    /// The message of the last failed push or pop on this thread, for `last_error`.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// The C entry point: loads the wrapped scheduler on first use. When it cannot be loaded, the
/// table still loads, and its `create` fails with the reason.
#[unsafe(no_mangle)]
pub extern "C" fn tomii_scheduler_v1() -> *const TomiiSchedulerVtable {
    tomii_types::install_quiet_hook();
    &LOADED.get_or_init(load).table
}

fn load() -> Loaded {
    let inner = Inner::from_env(tomii_scheduler_v1);
    let (name, flags) = match &inner {
        // Not TOMII_SCHED_POP_HANDLES: with its hooks the checker pops whole descriptors.
        Ok(inner) => (format!("hook-checker({})", inner.name), inner.table.header.flags & !TOMII_SCHED_POP_HANDLES),
        Err(_) => ("hook-checker".to_owned(), 0),
    };
    // Leaked: the table's name must live for the process.
    let name = CString::new(name.replace('\0', " ")).unwrap_or_default().into_raw();
    let table = TomiiSchedulerVtable {
        header: TomiiAbiHeader {
            abi_major: TOMII_SCHED_ABI_MAJOR,
            abi_minor: TOMII_SCHED_ABI_MINOR,
            struct_size: size_of::<TomiiSchedulerVtable>() as u32,
            flags,
            name,
        },
        create: Some(create),
        destroy: Some(destroy),
        push: Some(push),
        pop: Some(pop),
        task_started: Some(task_started),
        task_completed: Some(task_completed),
        frame_started: Some(frame_started),
        frame_completed: Some(frame_completed),
        set_knob: Some(set_knob),
        // Takes no state: the wrapped scheduler's own, unchanged.
        describe_knobs: inner.as_ref().ok().and_then(|inner| inner.table.describe_knobs),
        stats: Some(stats),
        last_error: Some(last_error),
        push_keep: inner.as_ref().ok().and_then(|inner| inner.table.push_keep).map(|_| push_keep as PushKeepFn),
        // Not forwarded: every keep goes through `push_keep`, where the checker sees it.
        keep_gate: None,
    };
    Loaded { inner, table }
}

/// Turns a push or pop outcome (or its panic) into a status code, remembering the message.
fn status(outcome: Result<Result<(), String>, String>) -> i32 {
    let (code, message) = match outcome {
        Ok(Ok(())) => return TOMII_OK,
        Ok(Err(message)) => (TOMII_ERR, message),
        Err(panic) => (TOMII_ERR_PANIC, format!("the hook checker panicked: {panic}")),
    };
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|slot| *slot.borrow_mut() = text);
    code
}

/// # Safety
/// `state` must come from `create` and not yet be destroyed.
unsafe fn checker<'a>(state: *mut c_void) -> &'a Checker {
    // SAFETY: guaranteed by the caller.
    unsafe { &*state.cast::<Checker>() }
}

unsafe extern "C" fn create(init: *const TomiiSchedInit, state: *mut *mut c_void, err: TomiiErrorBuf) -> i32 {
    if init.is_null() || state.is_null() {
        return TOMII_ERR_INVALID;
    }
    let loaded = LOADED.get().expect("the entry symbol ran before create");
    let inner = match &loaded.inner {
        Ok(inner) => inner,
        Err(reason) => {
            // SAFETY: the host's error buffer is valid for `cap` bytes.
            unsafe { write_error(err, reason) };
            return TOMII_ERR;
        }
    };
    let inner_create = inner.table.create.expect("checked at load");
    let mut inner_state = std::ptr::null_mut();
    // SAFETY: the host's init block and error buffer, valid for this call, passed on unchanged.
    let status = unsafe { inner_create(init, &mut inner_state, err) };
    if status != TOMII_OK {
        return status;
    }
    if inner_state.is_null() {
        let message = format!("{} returned TOMII_OK from create but a NULL state", inner.name);
        // SAFETY: as above.
        unsafe { write_error(err, &message) };
        return TOMII_ERR;
    }
    // SAFETY: checked non-NULL; the host's init block is valid for this call.
    let (workers, slots) = unsafe { ((*init).workers, (*init).slots) };
    let serial = inner.table.header.flags & TOMII_SCHED_SERIAL != 0;
    let checker = Box::new(Checker::new(inner, inner_state, serial, workers, slots));
    // SAFETY: checked non-NULL above.
    unsafe { *state = Box::into_raw(checker).cast() };
    TOMII_OK
}

unsafe extern "C" fn destroy(state: *mut c_void) {
    if !state.is_null() {
        // SAFETY: `state` came from `Box::into_raw` in `create`; the host destroys it once.
        let checker = unsafe { Box::from_raw(state.cast::<Checker>()) };
        let _ = catch_panic_marked(move || drop(checker));
    }
}

unsafe extern "C" fn push(state: *mut c_void, worker: u32, tasks: *const TomiiTask, n: usize) -> i32 {
    if state.is_null() || (tasks.is_null() && n > 0) {
        return TOMII_ERR_INVALID;
    }
    // SAFETY: the host passes the state from `create` and `n` valid descriptors.
    let (checker, tasks) =
        unsafe { (checker(state), if n == 0 { &[][..] } else { std::slice::from_raw_parts(tasks, n) }) };
    status(catch_panic(|| checker.push(worker, tasks)))
}

type PushKeepFn = unsafe extern "C" fn(*mut c_void, u32, *const TomiiTask, usize, *mut usize) -> i32;

unsafe extern "C" fn push_keep(
    state: *mut c_void,
    worker: u32,
    tasks: *const TomiiTask,
    n: usize,
    kept: *mut usize,
) -> i32 {
    if state.is_null() || kept.is_null() || (tasks.is_null() && n > 0) {
        return TOMII_ERR_INVALID;
    }
    // SAFETY: the host passes the state from `create` and `n` valid descriptors.
    let (checker, tasks) =
        unsafe { (checker(state), if n == 0 { &[][..] } else { std::slice::from_raw_parts(tasks, n) }) };
    let mut index = TOMII_KEEP_NONE;
    let code = status(catch_panic(|| {
        index = checker.push_keep(worker, tasks)?.unwrap_or(TOMII_KEEP_NONE);
        Ok(())
    }));
    // SAFETY: checked non-NULL above.
    unsafe { *kept = if code == TOMII_OK { index } else { TOMII_KEEP_NONE } };
    code
}

unsafe extern "C" fn pop(state: *mut c_void, worker: u32, out: *mut TomiiTask, max: usize, n_out: *mut usize) -> i32 {
    if state.is_null() || n_out.is_null() || (out.is_null() && max > 0) {
        return TOMII_ERR_INVALID;
    }
    // SAFETY: the state from `create`.
    let checker = unsafe { checker(state) };
    let mut count = 0;
    let code = status(catch_panic(|| {
        // SAFETY: the host lends room for `max` descriptors at `out`.
        count = unsafe { checker.pop(worker, out, max) }?;
        Ok(())
    }));
    // SAFETY: checked non-NULL above.
    unsafe { *n_out = if code == TOMII_OK { count } else { 0 } };
    code
}

unsafe extern "C" fn task_started(state: *mut c_void, worker: u32, task: *const TomiiTask) {
    if !state.is_null() && !task.is_null() {
        // SAFETY: the state from `create` and a descriptor valid for the call.
        let (checker, task) = unsafe { (checker(state), &*task) };
        let _ = catch_panic(|| checker.task_started(worker, task));
    }
}

unsafe extern "C" fn task_completed(state: *mut c_void, worker: u32, task: *const TomiiTask, duration_ns: u64) {
    if !state.is_null() && !task.is_null() {
        // SAFETY: the state from `create` and a descriptor valid for the call.
        let (checker, task) = unsafe { (checker(state), &*task) };
        let _ = catch_panic(|| checker.task_completed(worker, task, duration_ns));
    }
}

unsafe extern "C" fn frame_started(state: *mut c_void, frame: u64, slot: u32) {
    if !state.is_null() {
        // SAFETY: the state from `create`.
        let checker = unsafe { checker(state) };
        let _ = catch_panic_marked(|| checker.frame_started(frame, slot));
    }
}

unsafe extern "C" fn frame_completed(state: *mut c_void, frame: u64, slot: u32, latency_ns: u64) {
    if !state.is_null() {
        // SAFETY: the state from `create`.
        let checker = unsafe { checker(state) };
        let _ = catch_panic_marked(|| checker.frame_completed(frame, slot, latency_ns));
    }
}

unsafe extern "C" fn set_knob(state: *mut c_void, key: *const c_char, value: *const c_char, err: TomiiErrorBuf) -> i32 {
    if state.is_null() || key.is_null() || value.is_null() {
        return TOMII_ERR_INVALID;
    }
    // SAFETY: the state from `create`.
    let checker = unsafe { checker(state) };
    // SAFETY: NUL-terminated strings and an error buffer, valid for the call, as the ABI requires.
    catch_panic_marked(|| unsafe { checker.set_knob(key, value, err) }).unwrap_or(TOMII_ERR_PANIC)
}

unsafe extern "C" fn stats(state: *mut c_void, buf: *mut c_char, cap: usize) -> usize {
    if state.is_null() {
        return 0;
    }
    // SAFETY: the state from `create`.
    let checker = unsafe { checker(state) };
    let Ok(text) = catch_panic_marked(|| checker.stats()) else { return 0 };
    // SAFETY: the host's buffer is valid for `cap` bytes.
    unsafe { write_error(TomiiErrorBuf { ptr: buf, cap }, &text) };
    text.len()
}

unsafe extern "C" fn last_error(_state: *mut c_void) -> *const c_char {
    // Valid until this thread's next failing call, as the ABI states.
    LAST_ERROR.with(|slot| slot.borrow().as_ptr())
}
