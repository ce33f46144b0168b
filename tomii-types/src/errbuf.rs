//! The plugin side of the boundary: writing messages into a caller-owned [`TomiiErrorBuf`], and
//! turning panics into messages without printing anything.
//!
//! A plugin carries its own copy of the standard library, with its own panic hook; left alone it
//! would print a panic report on the host's stderr before the shim catches the panic. The entry
//! symbol installs, once per copy, a hook that records the message and location instead of printing, for
//! panics on the runtime's worker threads (named `tomii-worker-N`, where every hot-path call runs)
//! and inside `catch_panic_marked` (the cold calls, on any thread). Other panics still reach the
//! previous hook. The hot path touches no thread-local: in a dylib each access is a function call.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use crate::abi::TomiiErrorBuf;

thread_local! {
    /// Whether this thread is inside a `catch_panic_marked` call.
    static AT_BOUNDARY: Cell<bool> = const { Cell::new(false) };
    /// The message the quiet hook recorded for the panic being unwound.
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

static QUIET_HOOK: Once = Once::new();

/// Name prefix of the runtime's worker threads.
pub const WORKER_PREFIX: &str = "tomii-worker-";

/// Installs the quiet hook in this copy of the standard library (once). The export macros call it
/// from the entry symbol, which the host calls before anything else, so the hot-path shims need
/// not check.
pub fn install_quiet_hook() {
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if AT_BOUNDARY.with(Cell::get) || on_worker_thread() {
                let place = info.location().map(|l| format!(" (at {}:{})", l.file(), l.line())).unwrap_or_default();
                let text = format!("{}{place}", panic_message(info.payload()));
                CAUGHT.with(|caught| *caught.borrow_mut() = Some(text));
            } else {
                previous(info);
            }
        }));
    });
}

/// Whether the current thread is one of the runtime's workers. Called only while panicking.
fn on_worker_thread() -> bool {
    if std::thread::current().name().is_some_and(|name| name.starts_with(WORKER_PREFIX)) {
        return true;
    }
    // A plugin's own copy of the standard library does not know the names the host's copy gave
    // its threads; the operating system's record of the thread name does.
    #[cfg(target_os = "linux")]
    if let Ok(name) = std::fs::read_to_string("/proc/thread-self/comm") {
        return name.starts_with(WORKER_PREFIX);
    }
    false
}

/// Runs `body` (a hot-path call, on a worker thread); a panic becomes `Err(message with its
/// location)`, printed nowhere once `install_quiet_hook` ran (the entry symbol runs it).
#[inline]
pub fn catch_panic<R>(body: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(body)).map_err(|payload| caught_message(&*payload))
}

/// Like [`catch_panic`], for calls that may run on any thread (create, destroy, stats...).
pub fn catch_panic_marked<R>(body: impl FnOnce() -> R) -> Result<R, String> {
    install_quiet_hook();
    let outer = AT_BOUNDARY.with(|flag| flag.replace(true));
    let result = catch_unwind(AssertUnwindSafe(body));
    AT_BOUNDARY.with(|flag| flag.set(outer));
    result.map_err(|payload| caught_message(&*payload))
}

#[cold]
fn caught_message(payload: &(dyn Any + Send)) -> String {
    CAUGHT.with(|caught| caught.borrow_mut().take()).unwrap_or_else(|| panic_message(payload))
}

/// Copies `message` into `buf`, truncated at a UTF-8 boundary to fit, and NUL-terminates it.
///
/// # Safety
/// `buf.ptr` must be NULL or valid for writes of `buf.cap` bytes.
pub unsafe fn write_error(buf: TomiiErrorBuf, message: &str) {
    if buf.ptr.is_null() || buf.cap == 0 {
        return;
    }
    let mut len = message.len().min(buf.cap - 1);
    while !message.is_char_boundary(len) {
        len -= 1;
    }
    // SAFETY: `len + 1 <= cap` bytes are written into a buffer the caller guarantees is that large.
    unsafe {
        std::ptr::copy_nonoverlapping(message.as_ptr(), buf.ptr.cast::<u8>(), len);
        *buf.ptr.add(len) = 0;
    }
}

/// The text of a panic payload (`&str` or `String`), or a placeholder.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic with a non-text payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caught_panics_carry_message_and_location() {
        let error = catch_panic_marked(|| panic!("boom {}", 7)).unwrap_err();
        assert!(error.starts_with("boom 7 (at "), "{error}");
        assert!(error.contains("errbuf.rs"), "{error}");
        assert_eq!(catch_panic_marked(|| 5), Ok(5));
        let on_worker = std::thread::Builder::new()
            .name(format!("{WORKER_PREFIX}0"))
            .spawn(|| catch_panic(|| panic!("quiet")))
            .unwrap()
            .join()
            .unwrap();
        assert!(on_worker.unwrap_err().starts_with("quiet (at "));
    }

    #[test]
    fn messages_are_truncated_at_a_char_boundary() {
        let mut buf = [0xAAu8; 5];
        // SAFETY: a 5-byte buffer.
        unsafe { write_error(TomiiErrorBuf { ptr: buf.as_mut_ptr().cast(), cap: 5 }, "aéé") };
        assert_eq!(&buf, b"a\xc3\xa9\0\xAA");
    }
}
