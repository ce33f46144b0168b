//! The safe Rust side of the kernel ABI: borrowed arguments ([`Args`], [`ValueRef`]), owned results
//! ([`Value`]), and [`export_kernels!`](crate::export_kernels), which builds the registry.
//!
//! A Rust kernel is `fn(&CallCtx, &Args) -> Result<Value, KernelError>`. Memory a [`Value`] owns is
//! released by code of the library that allocated it, through the buffer's `release` pointer.

use std::ffi::{CStr, c_void};
use std::fmt;

use crate::abi::*;
use crate::errbuf::{catch_panic, write_error};

/// A kernel's failure; its message fails the frame and is shown to the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelError(pub String);

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for KernelError {
    fn from(message: String) -> Self {
        KernelError(message)
    }
}

impl From<&str> for KernelError {
    fn from(message: &str) -> Self {
        KernelError(message.to_owned())
    }
}

/// The signature of a safe Rust kernel.
pub type KernelFn = fn(&CallCtx, &Args) -> Result<Value, KernelError>;

/// What a kernel knows about its call.
#[derive(Clone, Copy, Debug)]
pub struct CallCtx<'a> {
    pub worker: u32,
    pub frame: u64,
    pub slot: u32,
    pub instance: u32,
    raw: &'a TomiiCallCtx,
}

impl CallCtx<'_> {
    /// The node's name (read from the host's NUL-terminated string on demand).
    pub fn node(&self) -> &str {
        if self.raw.node.is_null() {
            return "";
        }
        // SAFETY: the host passes a NUL-terminated node name valid for the call.
        unsafe { CStr::from_ptr(self.raw.node) }.to_str().unwrap_or("")
    }
}

/// A borrowed view of one argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueRef<'a> {
    None,
    Bool(bool),
    /// Any signed integer up to 64 bits (i8 … i64, isize).
    Int(i64),
    /// Any unsigned integer up to 64 bits (u8 … u64, usize).
    UInt(u64),
    I128(i128),
    U128(u128),
    F32(f32),
    F64(f64),
    C32([f32; 2]),
    C64([f64; 2]),
    Char(char),
    Str(&'a str),
    Bytes(&'a [u8]),
    /// A typed array: element tag and raw bytes (use [`Args::array`] for a typed slice).
    Array(TomiiTag, &'a [u8]),
    List(Args<'a>),
    /// An opaque object: type id and pointer.
    Object(u32, *const c_void),
}

/// Borrowed kernel arguments.
#[derive(Clone, Copy)]
pub struct Args<'a> {
    raw: &'a [TomiiValue],
}

impl fmt::Debug for Args<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Args<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl<'a> Args<'a> {
    /// # Safety
    /// Every value in `raw` must be valid as the ABI describes (a tag and the matching payload,
    /// buffers valid for their length) for the lifetime `'a`.
    pub unsafe fn from_raw(raw: &'a [TomiiValue]) -> Self {
        Args { raw }
    }

    pub fn len(&self) -> usize {
        self.raw.len()
    }

    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = ValueRef<'a>> + 'a {
        let raw = self.raw;
        // SAFETY: `from_raw`'s contract covers every element.
        raw.iter().map(|value| unsafe { view(value) })
    }

    /// The argument at `index`.
    pub fn get(&self, index: usize) -> Result<ValueRef<'a>, KernelError> {
        let value = self.raw.get(index).ok_or_else(|| {
            KernelError(format!("argument {index} is missing: the kernel got {} argument(s)", self.raw.len()))
        })?;
        // SAFETY: `from_raw`'s contract covers every element.
        Ok(unsafe { view(value) })
    }

    /// The argument at `index` as an unsigned integer (any non-negative integer type is accepted).
    pub fn u64(&self, index: usize) -> Result<u64, KernelError> {
        match self.get(index)? {
            ValueRef::UInt(v) => Ok(v),
            ValueRef::Int(v) if v >= 0 => Ok(v as u64),
            other => Err(mismatch(index, "an unsigned integer", &other)),
        }
    }

    /// The argument at `index` as a signed integer.
    pub fn i64(&self, index: usize) -> Result<i64, KernelError> {
        match self.get(index)? {
            ValueRef::Int(v) => Ok(v),
            ValueRef::UInt(v) if v <= i64::MAX as u64 => Ok(v as i64),
            other => Err(mismatch(index, "a signed integer", &other)),
        }
    }

    /// The argument at `index` as a float (integers convert).
    pub fn f64(&self, index: usize) -> Result<f64, KernelError> {
        match self.get(index)? {
            ValueRef::F64(v) => Ok(v),
            ValueRef::F32(v) => Ok(v.into()),
            ValueRef::Int(v) => Ok(v as f64),
            ValueRef::UInt(v) => Ok(v as f64),
            other => Err(mismatch(index, "a number", &other)),
        }
    }

    pub fn bool(&self, index: usize) -> Result<bool, KernelError> {
        match self.get(index)? {
            ValueRef::Bool(v) => Ok(v),
            other => Err(mismatch(index, "a bool", &other)),
        }
    }

    pub fn str(&self, index: usize) -> Result<&'a str, KernelError> {
        match self.get(index)? {
            ValueRef::Str(v) => Ok(v),
            other => Err(mismatch(index, "a string", &other)),
        }
    }

    /// The argument at `index` as a typed array of `T`.
    pub fn array<T: Element>(&self, index: usize) -> Result<&'a [T], KernelError> {
        let value = self.raw.get(index).ok_or_else(|| KernelError(format!("argument {index} is missing")))?;
        if value.tag != TOMII_TAG_ARRAY || value.elem != T::TAG {
            // SAFETY: `from_raw`'s contract.
            return Err(mismatch(index, T::NAME, &unsafe { view(value) }));
        }
        // SAFETY: an ARRAY of elem T::TAG holds `len` elements of T at `data` (ABI contract).
        Ok(unsafe { slice_of(value.payload.buf.data.cast::<T>(), value.payload.buf.len) })
    }
}

fn mismatch(index: usize, expected: &str, got: &ValueRef<'_>) -> KernelError {
    KernelError(format!("argument {index}: expected {expected}, got {got:?}"))
}

unsafe fn slice_of<'a, T>(data: *const T, len: usize) -> &'a [T] {
    if data.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the caller guarantees `len` valid elements at `data`.
        unsafe { std::slice::from_raw_parts(data, len) }
    }
}

/// # Safety
/// `value` must be valid as the ABI describes, for `'a`.
unsafe fn view<'a>(value: &'a TomiiValue) -> ValueRef<'a> {
    // SAFETY: the tag selects the payload member, per the ABI.
    unsafe {
        let p = &value.payload;
        match value.tag {
            TOMII_TAG_BOOL => ValueRef::Bool(p.b),
            TOMII_TAG_I8 | TOMII_TAG_I16 | TOMII_TAG_I32 | TOMII_TAG_I64 | TOMII_TAG_ISIZE => ValueRef::Int(p.i),
            TOMII_TAG_U8 | TOMII_TAG_U16 | TOMII_TAG_U32 | TOMII_TAG_U64 | TOMII_TAG_USIZE => ValueRef::UInt(p.u),
            TOMII_TAG_I128 => ValueRef::I128((u128::from(p.wide[1]) << 64 | u128::from(p.wide[0])) as i128),
            TOMII_TAG_U128 => ValueRef::U128(u128::from(p.wide[1]) << 64 | u128::from(p.wide[0])),
            TOMII_TAG_F32 => ValueRef::F32(p.f32),
            TOMII_TAG_F64 => ValueRef::F64(p.f64),
            TOMII_TAG_C32 => ValueRef::C32(p.c32),
            TOMII_TAG_C64 => ValueRef::C64(p.c64),
            TOMII_TAG_CHAR => ValueRef::Char(char::from_u32(p.u as u32).unwrap_or(char::REPLACEMENT_CHARACTER)),
            TOMII_TAG_STR => {
                let bytes = slice_of(p.buf.data.cast::<u8>(), p.buf.len);
                ValueRef::Str(std::str::from_utf8(bytes).unwrap_or("<invalid UTF-8>"))
            }
            TOMII_TAG_BYTES => ValueRef::Bytes(slice_of(p.buf.data.cast::<u8>(), p.buf.len)),
            TOMII_TAG_ARRAY => {
                let size = element_size(value.elem);
                ValueRef::Array(value.elem, slice_of(p.buf.data.cast::<u8>(), p.buf.len * size))
            }
            TOMII_TAG_LIST => ValueRef::List(Args { raw: slice_of(p.buf.data.cast::<TomiiValue>(), p.buf.len) }),
            TOMII_TAG_OBJECT => ValueRef::Object(value.elem, p.buf.data),
            _ => ValueRef::None,
        }
    }
}

/// Size in bytes of one element of an ARRAY with element tag `elem` (0 for non-scalar tags).
pub const fn element_size(elem: TomiiTag) -> usize {
    match elem {
        TOMII_TAG_BOOL | TOMII_TAG_I8 | TOMII_TAG_U8 => 1,
        TOMII_TAG_I16 | TOMII_TAG_U16 => 2,
        TOMII_TAG_I32 | TOMII_TAG_U32 | TOMII_TAG_F32 | TOMII_TAG_CHAR => 4,
        TOMII_TAG_I64 | TOMII_TAG_U64 | TOMII_TAG_F64 | TOMII_TAG_USIZE | TOMII_TAG_ISIZE | TOMII_TAG_C32 => 8,
        TOMII_TAG_I128 | TOMII_TAG_U128 | TOMII_TAG_C64 => 16,
        _ => 0,
    }
}

/// A scalar type that can be the element of a typed array.
pub trait Element: Copy + Send + Sync + 'static {
    const TAG: TomiiTag;
    const NAME: &'static str;
}

macro_rules! elements {
    ($($ty:ty => $tag:ident),* $(,)?) => {
        $(impl Element for $ty {
            const TAG: TomiiTag = $tag;
            const NAME: &'static str = concat!("an array of ", stringify!($ty));
        })*
    };
}

elements! {
    u8 => TOMII_TAG_U8, i8 => TOMII_TAG_I8, u16 => TOMII_TAG_U16, i16 => TOMII_TAG_I16,
    u32 => TOMII_TAG_U32, i32 => TOMII_TAG_I32, u64 => TOMII_TAG_U64, i64 => TOMII_TAG_I64,
    f32 => TOMII_TAG_F32, f64 => TOMII_TAG_F64, usize => TOMII_TAG_USIZE, isize => TOMII_TAG_ISIZE,
    [f32; 2] => TOMII_TAG_C32, [f64; 2] => TOMII_TAG_C64,
}

/// An owned value: what a kernel returns. Dropping it releases its memory.
pub struct Value(TomiiValue);

// SAFETY: a Value owns its payload exclusively; buffers come from `Send` Rust values or from foreign
// code that the ABI requires to be freeable from any thread.
unsafe impl Send for Value {}
// SAFETY: shared access only reads the payload.
unsafe impl Sync for Value {}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: a Value is always valid.
        f.debug_tuple("Value").field(&unsafe { view(&self.0) }).finish()
    }
}

impl PartialEq for Value {
    /// Equal when the contents are (objects: the same object).
    fn eq(&self, other: &Value) -> bool {
        self.view() == other.view()
    }
}

impl Drop for Value {
    fn drop(&mut self) {
        if matches!(self.0.tag, TOMII_TAG_STR | TOMII_TAG_BYTES | TOMII_TAG_ARRAY | TOMII_TAG_LIST | TOMII_TAG_OBJECT) {
            // SAFETY: for buffer tags the payload is a buffer, and `release` is the owner's free
            // function, called once since the value is being dropped.
            unsafe {
                let buf = self.0.payload.buf;
                if let Some(release) = buf.release {
                    release(buf.data, buf.len, buf.ctx);
                }
            }
        }
    }
}

fn scalar(tag: TomiiTag, payload: TomiiPayload) -> Value {
    Value(TomiiValue { tag, elem: 0, payload })
}

impl Value {
    pub fn none() -> Value {
        Value(TomiiValue::NONE)
    }
    pub fn bool(v: bool) -> Value {
        scalar(TOMII_TAG_BOOL, TomiiPayload { b: v })
    }
    pub fn u64(v: u64) -> Value {
        scalar(TOMII_TAG_U64, TomiiPayload { u: v })
    }
    pub fn usize(v: usize) -> Value {
        scalar(TOMII_TAG_USIZE, TomiiPayload { u: v as u64 })
    }
    pub fn i64(v: i64) -> Value {
        scalar(TOMII_TAG_I64, TomiiPayload { i: v })
    }
    pub fn f64(v: f64) -> Value {
        scalar(TOMII_TAG_F64, TomiiPayload { f64: v })
    }
    pub fn f32(v: f32) -> Value {
        scalar(TOMII_TAG_F32, TomiiPayload { f32: v })
    }
    /// A scalar of any tag whose payload fits `u`/`i` (integers narrower than 64 bits are widened).
    pub fn int(tag: TomiiTag, bits: u64) -> Value {
        scalar(tag, TomiiPayload { u: bits })
    }
    pub fn wide(tag: TomiiTag, v: u128) -> Value {
        scalar(tag, TomiiPayload { wide: [v as u64, (v >> 64) as u64] })
    }
    pub fn c32(re: f32, im: f32) -> Value {
        scalar(TOMII_TAG_C32, TomiiPayload { c32: [re, im] })
    }
    pub fn c64(re: f64, im: f64) -> Value {
        scalar(TOMII_TAG_C64, TomiiPayload { c64: [re, im] })
    }
    pub fn char(v: char) -> Value {
        scalar(TOMII_TAG_CHAR, TomiiPayload { u: u64::from(v) })
    }
    pub fn string(v: String) -> Value {
        Self::vec_buffer(TOMII_TAG_STR, 0, v.into_bytes())
    }
    pub fn bytes(v: Vec<u8>) -> Value {
        Self::vec_buffer(TOMII_TAG_BYTES, 0, v)
    }
    pub fn array<T: Element>(v: Vec<T>) -> Value {
        Self::vec_buffer(TOMII_TAG_ARRAY, T::TAG, v)
    }
    pub fn list(items: Vec<Value>) -> Value {
        // Value is a transparent owner of TomiiValue; releasing the list drops each element.
        let raw: Vec<TomiiValue> = items.into_iter().map(Value::into_raw).collect();
        let mut raw = std::mem::ManuallyDrop::new(raw);
        let buf = TomiiBuffer {
            data: raw.as_mut_ptr().cast(),
            len: raw.len(),
            ctx: raw.capacity() as *mut c_void,
            release: Some(release_list),
        };
        Value(TomiiValue { tag: TOMII_TAG_LIST, elem: 0, payload: TomiiPayload { buf } })
    }
    /// An opaque object with a type id of the library's choosing.
    pub fn object<T: Send + Sync + 'static>(type_id: u32, v: T) -> Value {
        let buf = TomiiBuffer {
            data: Box::into_raw(Box::new(v)).cast(),
            len: size_of::<T>(),
            ctx: std::ptr::null_mut(),
            release: Some(release_box::<T>),
        };
        Value(TomiiValue { tag: TOMII_TAG_OBJECT, elem: type_id, payload: TomiiPayload { buf } })
    }

    fn vec_buffer<T>(tag: TomiiTag, elem: TomiiTag, v: Vec<T>) -> Value {
        let mut v = std::mem::ManuallyDrop::new(v);
        let buf = TomiiBuffer {
            data: v.as_mut_ptr().cast(),
            len: v.len(),
            ctx: v.capacity() as *mut c_void,
            release: Some(release_vec::<T>),
        };
        Value(TomiiValue { tag, elem, payload: TomiiPayload { buf } })
    }

    /// A borrowed view of this value.
    pub fn view(&self) -> ValueRef<'_> {
        // SAFETY: a Value is always valid.
        unsafe { view(&self.0) }
    }

    /// The raw value, borrowed: valid while `self` lives; never release it.
    pub fn as_raw(&self) -> &TomiiValue {
        &self.0
    }

    /// Gives up ownership; the caller must eventually release the buffer (see [`Value::from_raw`]).
    pub fn into_raw(self) -> TomiiValue {
        let raw = self.0;
        std::mem::forget(self);
        raw
    }

    /// Takes ownership of a raw value.
    ///
    /// # Safety
    /// `raw` must be valid as the ABI describes and owned by nobody else: its `release` will be
    /// called when the returned value drops.
    pub unsafe fn from_raw(raw: TomiiValue) -> Value {
        Value(raw)
    }
}

unsafe extern "C" fn release_vec<T>(data: *mut c_void, len: usize, ctx: *mut c_void) {
    // SAFETY: made by `vec_buffer::<T>` from a Vec with this pointer, length and capacity.
    drop(unsafe { Vec::from_raw_parts(data.cast::<T>(), len, ctx as usize) });
}

unsafe extern "C" fn release_list(data: *mut c_void, len: usize, ctx: *mut c_void) {
    // SAFETY: made by `Value::list` from a Vec<TomiiValue> of owned values.
    let raw = unsafe { Vec::from_raw_parts(data.cast::<TomiiValue>(), len, ctx as usize) };
    // SAFETY: each element was an owned Value.
    raw.into_iter().for_each(|v| drop(unsafe { Value::from_raw(v) }));
}

unsafe extern "C" fn release_box<T>(data: *mut c_void, _len: usize, _ctx: *mut c_void) {
    // SAFETY: made by `Value::object::<T>` from `Box::into_raw`.
    drop(unsafe { Box::from_raw(data.cast::<T>()) });
}

/// Calls a safe kernel from its C shim: checks pointers, catches panics, writes the result or the
/// error message. Used by [`export_kernels!`](crate::export_kernels) and `#[tomii_export]`.
///
/// Generic over the kernel, so that each shim is compiled with its kernel inlined into it (the
/// macros pass the function itself, not a pointer to it): a small kernel then costs no second
/// call and no moves of its result through memory.
///
/// # Safety
/// The pointers must be valid as the kernel ABI describes.
#[inline(always)]
pub unsafe fn call<K>(
    args: *const TomiiValue,
    nargs: usize,
    out: *mut TomiiValue,
    ctx: *const TomiiCallCtx,
    kernel: K,
) -> i32
where
    K: FnOnce(&CallCtx, &Args) -> Result<Value, KernelError>,
{
    if out.is_null() || ctx.is_null() || (args.is_null() && nargs > 0) {
        return TOMII_ERR_INVALID;
    }
    // SAFETY: checked non-NULL; valid for the call per the ABI.
    let (raw_ctx, args) = unsafe { (&*ctx, Args { raw: slice_of(args, nargs) }) };
    let ctx = CallCtx {
        worker: raw_ctx.worker,
        frame: raw_ctx.frame,
        slot: raw_ctx.slot,
        instance: raw_ctx.instance,
        raw: raw_ctx,
    };
    // The result is written inside the panic boundary, so only a status crosses it.
    let written = catch_panic(|| match kernel(&ctx, &args) {
        Ok(value) => {
            // SAFETY: `out` checked non-NULL; the host takes ownership of the value.
            unsafe { *out = value.into_raw() };
            TOMII_OK
        }
        Err(error) => kernel_failed(raw_ctx.err, &error.0, TOMII_ERR),
    });
    written.unwrap_or_else(|panic| kernel_failed(raw_ctx.err, &format!("panicked: {panic}"), TOMII_ERR_PANIC))
}

/// Writes a failed kernel's message to the host's error buffer and returns `status`.
#[cold]
#[inline(never)]
fn kernel_failed(err: TomiiErrorBuf, message: &str, status: i32) -> i32 {
    // SAFETY: the host's error buffer is valid for `cap` bytes.
    unsafe { write_error(err, message) };
    status
}

/// Kernel flags by name, for `export_kernels!`'s `[flag]` prefix.
#[allow(non_upper_case_globals)]
pub mod flags {
    /// The trailing result arguments arrive as one LIST value (a fan-in of any width).
    pub const variadic: u32 = crate::abi::TOMII_KERNEL_VARIADIC;
}

/// Exports safe Rust kernels as a registry: `export_kernels!("library-name"; fn_a, [variadic] fn_b)`.
///
/// Each function has the signature [`KernelFn`](crate::kernel::KernelFn) and is registered under
/// its own name; a `[flag]` before it sets a flag of [`flags`](crate::kernel::flags). Call it once, at the root of a `cdylib` crate; such a crate can use
/// `#![deny(unsafe_code)]`, since the macro allows the exported symbol locally.
#[macro_export]
macro_rules! export_kernels {
    ($library:literal; $($([$flag:ident])? $kernel:ident),+ $(,)?) => {
        #[doc(hidden)]
        #[allow(non_snake_case, unsafe_code)]
        mod __tomii_kernel_shims {
            $(
                pub unsafe extern "C" fn $kernel(
                    args: *const $crate::abi::TomiiValue,
                    nargs: usize,
                    out: *mut $crate::abi::TomiiValue,
                    ctx: *const $crate::abi::TomiiCallCtx,
                ) -> i32 {
                    // SAFETY: the host calls with pointers valid per the kernel ABI.
                    unsafe { $crate::kernel::call(args, nargs, out, ctx, super::$kernel) }
                }
            )+
        }

        const TOMII_KERNEL_ENTRIES: &[$crate::abi::TomiiKernelEntry] = &[$(
            $crate::abi::TomiiKernelEntry {
                name: concat!(stringify!($kernel), "\0").as_ptr().cast(),
                func: Some(__tomii_kernel_shims::$kernel),
                flags: 0 $(| $crate::kernel::flags::$flag)?,
                reserved: 0,
                data: ::core::ptr::null_mut(),
            }
        ),+];

        static TOMII_KERNEL_REGISTRY: $crate::abi::TomiiKernelRegistry = $crate::abi::TomiiKernelRegistry {
            abi_major: $crate::abi::TOMII_KERNEL_ABI_MAJOR,
            abi_minor: $crate::abi::TOMII_KERNEL_ABI_MINOR,
            struct_size: ::core::mem::size_of::<$crate::abi::TomiiKernelRegistry>() as u32,
            entry_size: ::core::mem::size_of::<$crate::abi::TomiiKernelEntry>() as u32,
            library: concat!($library, "\0").as_ptr().cast(),
            entries: TOMII_KERNEL_ENTRIES.as_ptr(),
            count: TOMII_KERNEL_ENTRIES.len(),
        };

        /// The kernel registry of this library.
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        pub extern "C" fn tomii_kernels_v1() -> *const $crate::abi::TomiiKernelRegistry {
            $crate::install_quiet_hook();
            &TOMII_KERNEL_REGISTRY
        }
    };
}
