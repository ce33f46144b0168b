//! Kernel ABI v1: the tagged value that crosses the boundary, the kernel function signature and
//! the registry table a kernel library exports through `tomii_kernels_v1()`.
//!
//! This file is the source of `include/tomii/kernel.h`; keep it to plain `#[repr(C)]` items.
//!
//! Ownership: arguments are borrowed for the duration of one call; a kernel never frees or keeps
//! them (it copies what it needs). The value a kernel writes to `out` belongs to the host from then
//! on, which frees it by calling its buffer's `release` (code of the library that allocated it).

use std::ffi::{c_char, c_void};

use super::common::TomiiErrorBuf;

/// Major version of the kernel ABI described here.
pub const TOMII_KERNEL_ABI_MAJOR: u32 = 1;
/// Minor version: the number of optional extensions appended since v1.0.
pub const TOMII_KERNEL_ABI_MINOR: u32 = 0;

/// Value type tags. Append-only.
pub type TomiiTag = u32;
/// No value (a kernel that returns nothing).
pub const TOMII_TAG_NONE: TomiiTag = 0;
pub const TOMII_TAG_BOOL: TomiiTag = 1;
pub const TOMII_TAG_I8: TomiiTag = 2;
pub const TOMII_TAG_I16: TomiiTag = 3;
pub const TOMII_TAG_I32: TomiiTag = 4;
pub const TOMII_TAG_I64: TomiiTag = 5;
/// 128-bit signed integer in `wide` (low word first).
pub const TOMII_TAG_I128: TomiiTag = 6;
pub const TOMII_TAG_U8: TomiiTag = 7;
pub const TOMII_TAG_U16: TomiiTag = 8;
pub const TOMII_TAG_U32: TomiiTag = 9;
pub const TOMII_TAG_U64: TomiiTag = 10;
/// 128-bit unsigned integer in `wide` (low word first).
pub const TOMII_TAG_U128: TomiiTag = 11;
pub const TOMII_TAG_USIZE: TomiiTag = 12;
pub const TOMII_TAG_ISIZE: TomiiTag = 13;
pub const TOMII_TAG_F32: TomiiTag = 14;
pub const TOMII_TAG_F64: TomiiTag = 15;
/// Complex number of two f32 in `c32` (re, im).
pub const TOMII_TAG_C32: TomiiTag = 16;
/// Complex number of two f64 in `c64` (re, im).
pub const TOMII_TAG_C64: TomiiTag = 17;
/// A Unicode scalar value in `u`.
pub const TOMII_TAG_CHAR: TomiiTag = 18;
/// UTF-8 text in `buf` (`len` bytes, not NUL-terminated).
pub const TOMII_TAG_STR: TomiiTag = 19;
/// Raw bytes in `buf`.
pub const TOMII_TAG_BYTES: TomiiTag = 20;
/// A typed array in `buf`: `len` elements of the scalar type `elem`.
pub const TOMII_TAG_ARRAY: TomiiTag = 21;
/// A list of values in `buf`: `data` points at `len` `TomiiValue`s.
pub const TOMII_TAG_LIST: TomiiTag = 22;
/// An opaque object in `buf`; `elem` is a type id chosen by the library that made it.
pub const TOMII_TAG_OBJECT: TomiiTag = 23;

/// Frees a buffer. Called by the host, at most once, with the buffer's own fields.
pub type TomiiReleaseFn = unsafe extern "C" fn(data: *mut c_void, len: usize, ctx: *mut c_void);

/// Memory owned by the library that allocated it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TomiiBuffer {
    pub data: *mut c_void,
    /// Length in units of the tag: bytes for STR and BYTES, elements for ARRAY and LIST.
    pub len: usize,
    /// Whatever `release` needs (a capacity, an allocator, a refcount...).
    pub ctx: *mut c_void,
    /// NULL when the memory is static or borrowed and must not be freed.
    pub release: Option<TomiiReleaseFn>,
}

/// The payload of a value; which member is valid is given by the tag.
#[repr(C)]
#[derive(Clone, Copy)]
pub union TomiiPayload {
    pub b: bool,
    pub i: i64,
    pub u: u64,
    pub f32_: f32,
    pub f64_: f64,
    pub wide: [u64; 2],
    pub c32: [f32; 2],
    pub c64: [f64; 2],
    pub buf: TomiiBuffer,
}

/// A tagged value. Integers narrower than 64 bits are stored widened in `i` or `u`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TomiiValue {
    /// One of `TOMII_TAG_*`.
    pub tag: TomiiTag,
    /// Element tag for ARRAY; type id for OBJECT; 0 otherwise.
    pub elem: u32,
    pub payload: TomiiPayload,
}

/// What a kernel learns about the call it serves. Valid only during the call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TomiiCallCtx {
    /// `sizeof(TomiiCallCtx)` as the host was compiled.
    pub struct_size: u32,
    /// Worker running the call.
    pub worker: u32,
    /// Frame number, counting from 0.
    pub frame: u64,
    /// Slot of the frame.
    pub slot: u32,
    /// Instance index within the node.
    pub instance: u32,
    /// Node name, NUL-terminated.
    pub node: *const c_char,
    /// Where a failing kernel writes its message.
    pub err: TomiiErrorBuf,
}

/// A kernel: reads `nargs` borrowed arguments, writes its result to `out` (pre-set to NONE) and
/// returns `TOMII_OK`, or returns non-zero after writing a message to `ctx->err`. A failing kernel
/// must leave `out` as NONE or as a value whose release the host may call.
pub type TomiiKernelFn =
    unsafe extern "C" fn(args: *const TomiiValue, nargs: usize, out: *mut TomiiValue, ctx: *const TomiiCallCtx) -> i32;

/// Kernel flag: the trailing result arguments are passed as one LIST value.
pub const TOMII_KERNEL_VARIADIC: u32 = 1;

/// One kernel of a library.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TomiiKernelEntry {
    /// NUL-terminated name that graphs use in `function`.
    pub name: *const c_char,
    pub func: Option<TomiiKernelFn>,
    /// `TOMII_KERNEL_*` flags.
    pub flags: u32,
    pub reserved: u32,
}

/// The table a kernel library exports through `tomii_kernels_v1()`. Static for the life of the
/// process.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TomiiKernelRegistry {
    pub abi_major: u32,
    pub abi_minor: u32,
    /// `sizeof(TomiiKernelRegistry)` as the library was compiled.
    pub struct_size: u32,
    /// `sizeof(TomiiKernelEntry)` as the library was compiled.
    pub entry_size: u32,
    /// NUL-terminated library name, for messages.
    pub library: *const c_char,
    pub entries: *const TomiiKernelEntry,
    pub count: usize,
}

/// The entry symbol's signature: `const TomiiKernelRegistry *tomii_kernels_v1(void)`.
pub type TomiiKernelsEntryFn = unsafe extern "C" fn() -> *const TomiiKernelRegistry;
