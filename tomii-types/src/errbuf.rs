//! Writing messages into a caller-owned [`TomiiErrorBuf`], and reading panic payloads.
//! Nothing here allocates except `panic_message` on the error path.

use std::any::Any;

use crate::abi::TomiiErrorBuf;

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
