//! Tomii's kernel ABI v1 as the peer needs it (tomii-types/include/tomii/kernel.h, mirrored here so
//! that the peer depends on no crate of ours): the value and context layouts, a kernel library
//! opened with `dlopen` and its registry's entries by name. Every `unsafe` of the peer is here.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int, c_void};

pub const TAG_NONE: u32 = 0;
pub const TAG_BOOL: u32 = 1;
pub const TAG_I8: u32 = 2;
pub const TAG_I64: u32 = 5;
pub const TAG_U8: u32 = 7;
pub const TAG_U64: u32 = 10;
pub const TAG_USIZE: u32 = 12;
pub const TAG_ISIZE: u32 = 13;
pub const TAG_F32: u32 = 14;
pub const TAG_F64: u32 = 15;
pub const TAG_STR: u32 = 19;
pub const TAG_ARRAY: u32 = 21;
pub const TAG_LIST: u32 = 22;
const VARIADIC: u32 = 1;
const ABI_MAJOR: u32 = 1;

type ReleaseFn = unsafe extern "C" fn(*mut c_void, usize, *mut c_void);
type KernelFn = unsafe extern "C" fn(*const Value, usize, *mut Value, *const CallCtx) -> i32;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Buffer {
    pub data: *mut c_void,
    pub len: usize,
    pub ctx: *mut c_void,
    pub release: Option<ReleaseFn>,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union Payload {
    pub b: bool,
    pub i: i64,
    pub u: u64,
    pub f32: f32,
    pub f64: f64,
    pub wide: [u64; 2],
    pub buf: Buffer,
}

/// `TomiiValue`: a tag and its payload.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Value {
    pub tag: u32,
    pub elem: u32,
    pub payload: Payload,
}

// SAFETY: a value is plain data; the kernel ABI lets any thread read a value lent to a call and
// release it, and the executor's edges order every writer before its readers.
unsafe impl Send for Value {}
// SAFETY: as for Send; a shared value is only ever read.
unsafe impl Sync for Value {}

impl Value {
    pub const NONE: Value = Value { tag: TAG_NONE, elem: 0, payload: Payload { u: 0 } };

    pub fn unsigned(tag: u32, u: u64) -> Value {
        Value { tag, elem: 0, payload: Payload { u } }
    }

    pub fn signed(tag: u32, i: i64) -> Value {
        Value { tag, elem: 0, payload: Payload { i } }
    }

    pub fn float(tag: u32, f: f64) -> Value {
        let payload = if tag == TAG_F32 { Payload { f32: f as f32 } } else { Payload { f64: f } };
        Value { tag, elem: 0, payload }
    }

    /// A borrowed buffer value (never released): `data` must outlive every use of the value.
    pub fn borrowed(tag: u32, data: *const c_void, len: usize) -> Value {
        let buf = Buffer { data: data.cast_mut(), len, ctx: std::ptr::null_mut(), release: None };
        Value { tag, elem: 0, payload: Payload { buf } }
    }

    fn has_buffer(&self) -> bool {
        (TAG_STR..=23).contains(&self.tag)
    }

    /// Frees the value per the ABI (its buffer's `release`, when it has one) and leaves NONE.
    pub fn release(&mut self) {
        if self.has_buffer() {
            // SAFETY: a buffer tag means `buf` is the valid member.
            let buf = unsafe { self.payload.buf };
            if let Some(release) = buf.release {
                // SAFETY: the host releases a value it owns once, with its own fields (kernel.h).
                unsafe { release(buf.data, buf.len, buf.ctx) };
            }
        }
        *self = Value::NONE;
    }

    /// The value as JSON: null, a bool, a number (floats to 17 digits) or an array of numbers.
    pub fn json(&self) -> Result<String, String> {
        // SAFETY: each arm reads the member its tag selects.
        unsafe {
            match self.tag {
                TAG_NONE => Ok("null".into()),
                TAG_BOOL => Ok(self.payload.b.to_string()),
                TAG_ARRAY => {
                    let buf = self.payload.buf;
                    let size = scalar_size(self.elem).ok_or(format!("an array of tag {}", self.elem))?;
                    let items = (0..buf.len)
                        .map(|k| scalar_json(self.elem, buf.data.cast::<u8>().add(k * size).cast()))
                        .collect::<Vec<_>>();
                    Ok(format!("[{}]", items.join(", ")))
                }
                TAG_I8..=TAG_I64 | TAG_ISIZE => Ok(self.payload.i.to_string()),
                TAG_U8..=TAG_U64 | TAG_USIZE => Ok(self.payload.u.to_string()),
                TAG_F32 => Ok(format!("{:.8e}", self.payload.f32)),
                TAG_F64 => Ok(format!("{:.16e}", self.payload.f64)),
                tag => Err(format!("a value of tag {tag}, which the peer does not print")),
            }
        }
    }
}

/// The size of a scalar of `tag` in an ARRAY (booleans are not printed).
fn scalar_size(tag: u32) -> Option<usize> {
    match tag {
        TAG_I8 | TAG_U8 => Some(1),
        3 | 8 => Some(2),
        4 | 9 | TAG_F32 => Some(4),
        TAG_I64 | TAG_U64 | TAG_USIZE | TAG_ISIZE | TAG_F64 => Some(8),
        _ => None,
    }
}

/// # Safety
/// `at` points at a scalar of `tag` (`scalar_size(tag)` bytes, or a widened payload).
unsafe fn scalar_json(tag: u32, at: *const u8) -> String {
    // SAFETY: the caller's contract; reads are unaligned-safe.
    unsafe {
        match tag {
            TAG_I8 => at.cast::<i8>().read_unaligned().to_string(),
            3 => at.cast::<i16>().read_unaligned().to_string(),
            4 => at.cast::<i32>().read_unaligned().to_string(),
            TAG_I64 | TAG_ISIZE => at.cast::<i64>().read_unaligned().to_string(),
            TAG_U8 => at.read().to_string(),
            8 => at.cast::<u16>().read_unaligned().to_string(),
            9 => at.cast::<u32>().read_unaligned().to_string(),
            TAG_U64 | TAG_USIZE => at.cast::<u64>().read_unaligned().to_string(),
            TAG_F32 => format!("{:.8e}", at.cast::<f32>().read_unaligned()),
            _ => format!("{:.16e}", at.cast::<f64>().read_unaligned()),
        }
    }
}

/// `TomiiErrorBuf`.
#[repr(C)]
pub struct ErrorBuf {
    pub ptr: *mut c_char,
    pub cap: usize,
}

/// `TomiiCallCtx` (v1.1, with `data`).
#[repr(C)]
pub struct CallCtx {
    pub struct_size: u32,
    pub worker: u32,
    pub frame: u64,
    pub slot: u32,
    pub instance: u32,
    pub node: *const c_char,
    pub err: ErrorBuf,
    pub data: *mut c_void,
}

#[repr(C)]
struct Entry {
    name: *const c_char,
    func: KernelFn,
    flags: u32,
    reserved: u32,
    data: *mut c_void,
}

#[repr(C)]
struct Registry {
    abi_major: u32,
    abi_minor: u32,
    struct_size: u32,
    entry_size: u32,
    library: *const c_char,
    entries: *const u8,
    count: usize,
}

/// A kernel of the library: its function, whether it is variadic and its entry's `data`.
#[derive(Clone, Copy)]
pub struct Kernel {
    func: KernelFn,
    pub variadic: bool,
    data: *mut c_void,
}

// SAFETY: a registry entry is static for the life of the process and its kernels may be called
// from any thread (kernel.h).
unsafe impl Send for Kernel {}
// SAFETY: as for Send.
unsafe impl Sync for Kernel {}

const ERROR_CAP: usize = 1024;

impl Kernel {
    /// Calls the kernel with `args`; its result, or the message it wrote to `ctx.err`.
    pub fn call(
        &self,
        args: &[Value],
        worker: u32,
        frame: u64,
        slot: u32,
        instance: u32,
        node: &CStr,
    ) -> Result<Value, String> {
        let mut message = [0 as c_char; ERROR_CAP];
        let ctx = CallCtx {
            struct_size: size_of::<CallCtx>() as u32,
            worker,
            frame,
            slot,
            instance,
            node: node.as_ptr(),
            err: ErrorBuf { ptr: message.as_mut_ptr(), cap: ERROR_CAP },
            data: self.data,
        };
        let mut out = Value::NONE;
        // SAFETY: the arguments are valid values borrowed for the call, `out` is NONE and `ctx`
        // lives through the call, as the kernel ABI requires.
        let status = unsafe { (self.func)(args.as_ptr(), args.len(), &mut out, &ctx) };
        if status == 0 {
            return Ok(out);
        }
        out.release();
        // SAFETY: the buffer is zeroed and a kernel writes a NUL-terminated message into it.
        let text = unsafe { CStr::from_ptr(message.as_ptr()) }.to_string_lossy();
        Err(format!("status {status}: {}", if text.is_empty() { "(no message)" } else { &text }))
    }
}

unsafe extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}
const RTLD_NOW: c_int = 2;

fn dl_error(what: &str) -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated message.
    let text = unsafe { dlerror() };
    let detail =
        if text.is_null() { "unknown error".into() } else { unsafe { CStr::from_ptr(text) }.to_string_lossy() };
    format!("{what}: {detail}")
}

/// The kernels of the library at `path` by name (the library stays loaded for the process).
pub fn load(path: &str) -> Result<HashMap<String, Kernel>, String> {
    let name = CString::new(path).map_err(|_| format!("{path:?}: a NUL in the path"))?;
    // SAFETY: a valid C string; loading a kernel library runs its initializers, as Tomii does.
    let handle = unsafe { dlopen(name.as_ptr(), RTLD_NOW) };
    if handle.is_null() {
        return Err(dl_error(&format!("dlopen {path}")));
    }
    // SAFETY: a valid handle and a NUL-terminated symbol name.
    let symbol = unsafe { dlsym(handle, c"tomii_kernels_v1".as_ptr()) };
    if symbol.is_null() {
        return Err(dl_error(&format!("{path}: no tomii_kernels_v1")));
    }
    // SAFETY: the symbol is the registry entry point (`TomiiKernelsEntryFn`).
    let entry: unsafe extern "C" fn() -> *const Registry = unsafe { std::mem::transmute(symbol) };
    // SAFETY: the entry point returns NULL or a registry static for the life of the process.
    let registry = unsafe { entry().as_ref() }.ok_or(format!("{path}: tomii_kernels_v1() returned NULL"))?;
    if registry.abi_major != ABI_MAJOR || (registry.entry_size as usize) < size_of::<Entry>() {
        let (major, minor) = (registry.abi_major, registry.abi_minor);
        return Err(format!("{path}: kernel ABI {major}.{minor}, not 1.1 or later; rebuild it with tomii.build"));
    }
    let mut kernels = HashMap::new();
    for k in 0..registry.count {
        // SAFETY: `count` entries of `entry_size` (>= size_of::<Entry>()) bytes each.
        let entry = unsafe { &*registry.entries.add(k * registry.entry_size as usize).cast::<Entry>() };
        // SAFETY: an entry's name is NUL-terminated and static.
        let name = unsafe { CStr::from_ptr(entry.name) }.to_string_lossy().into_owned();
        kernels.insert(name, Kernel { func: entry.func, variadic: entry.flags & VARIADIC != 0, data: entry.data });
    }
    Ok(kernels)
}
