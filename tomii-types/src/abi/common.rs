//! Definitions shared by both ABIs: status codes, the error buffer a plugin writes its message
//! into, and the fixed header that opens every versioned table.
//!
//! This file is the source of `include/tomii/common.h`; keep it to plain `#[repr(C)]` items.

use std::ffi::c_char;

use abi_stable::StableAbi;

/// The call succeeded.
pub const TOMII_OK: i32 = 0;
/// The call failed; a message was written to the error buffer (or is returned by `last_error`).
pub const TOMII_ERR: i32 = 1;
/// A Rust plugin panicked; the export shim caught the panic at the boundary.
pub const TOMII_ERR_PANIC: i32 = 2;
/// An argument was invalid (NULL where a pointer was required, a size out of range...).
pub const TOMII_ERR_INVALID: i32 = 3;

/// A buffer owned by the caller into which the callee may write a NUL-terminated UTF-8 message.
///
/// The callee writes at most `cap` bytes including the terminating NUL and never frees `ptr`.
/// `ptr` may be NULL (then `cap` is 0) when the caller does not want a message.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct TomiiErrorBuf {
    pub ptr: *mut c_char,
    pub cap: usize,
}

/// The header that opens every versioned table (scheduler vtable, kernel registry).
///
/// It never changes: a loader reads it before anything else. `struct_size` is the size in bytes of
/// the whole table as the plugin was compiled; fields appended after v1.0 are read only when
/// `struct_size` covers them.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct TomiiAbiHeader {
    /// Bumped on a breaking change, together with the entry symbol's name (`..._v1` → `..._v2`).
    pub abi_major: u32,
    /// Bumped when optional fields are appended.
    pub abi_minor: u32,
    /// `sizeof` the table this header opens.
    pub struct_size: u32,
    /// Capability flags; their meaning is defined per table.
    pub flags: u32,
    /// NUL-terminated UTF-8 name of the plugin, static for the life of the process.
    pub name: *const c_char,
}
