//! Python functions as kernels: a kernel library made in this process, whose every entry is the
//! same C-ABI trampoline with the Python function as the entry's `data` (kernel ABI v1.1).
//!
//! Protocol of one call, on a worker thread that holds nothing:
//! 1. take the GIL (`Python::attach`), the only lock of the call;
//! 2. turn the borrowed arguments into Python objects (see `to_python`);
//! 3. call the function; its result becomes an owned value (see `from_python`), or its exception
//!    fails the frame: the traceback goes to the error buffer and the exception itself is kept so
//!    that `run()` raises `KernelError` from it;
//! 4. release the GIL.
//!
//! Values: Python results that a Rust or C kernel can read natively (None, bool, int, float,
//! complex, str, bytes, C-contiguous NumPy arrays of a scalar dtype) cross as the matching tag;
//! everything else as an OBJECT holding a strong reference. A NumPy array crosses without a copy:
//! the ARRAY value points into the array's memory and keeps the array alive in `ctx`; when a Python
//! kernel reads it back, it gets the same array object. Values from Rust or C kernels are copied
//! into new Python objects, since they are only borrowed for the call.

use std::ffi::c_void;
use std::sync::Mutex;

use numpy::prelude::*;
use numpy::{Complex32, Complex64, Element, PyArray1, PyArrayDescr, PyUntypedArray, dtype};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyComplex, PyFloat, PyInt, PyList, PyString, PyTuple};
use tomii_core::plugin::{Kernel, KernelLibrary};
use tomii_types::abi::*;
use tomii_types::{catch_panic_marked, write_error};

/// The type id of an OBJECT value holding a Python object (ASCII "PyOb"): `data` is a strong
/// reference. Other libraries must not use this id.
pub const PYTHON_OBJECT_TYPE: u32 = u32::from_be_bytes(*b"PyOb");

/// One Python function registered as a kernel.
pub struct PythonKernel {
    name: String,
    function: Py<PyAny>,
    variadic: bool,
    /// The first exception this kernel raised in the run.
    exception: Mutex<Option<PyErr>>,
}

/// The Python kernels of one run. Must outlive the run: entries point into it (a boxed slice never
/// moves its items).
pub struct PythonKernels(Box<[PythonKernel]>);

impl PythonKernels {
    /// `(registry name, function, variadic)` for every Python function of the graph.
    pub fn new(functions: Vec<(String, Py<PyAny>, bool)>) -> Self {
        PythonKernels(
            functions
                .into_iter()
                .map(|(name, function, variadic)| PythonKernel {
                    name,
                    function,
                    variadic,
                    exception: Mutex::new(None),
                })
                .collect(),
        )
    }

    /// The kernel library that calls them.
    pub fn library(&self) -> KernelLibrary {
        let kernels = self
            .0
            .iter()
            .map(|kernel| {
                let flags = if kernel.variadic { TOMII_KERNEL_VARIADIC } else { 0 };
                let data = (kernel as *const PythonKernel).cast_mut().cast::<c_void>();
                (kernel.name.clone(), Kernel { func: call_python, data, flags })
            })
            .collect();
        KernelLibrary::in_process("python", kernels)
    }

    /// The exception raised by the Python kernel `name`, if it raised one.
    pub fn exception(&self, name: &str) -> Option<PyErr> {
        let kernel = self.0.iter().find(|k| k.name == name)?;
        kernel.exception.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// The trampoline of every Python kernel (see the module's protocol).
unsafe extern "C" fn call_python(
    args: *const TomiiValue,
    nargs: usize,
    out: *mut TomiiValue,
    ctx: *const TomiiCallCtx,
) -> i32 {
    // SAFETY: the host passes a valid context; `data` was set by `PythonKernels::library` to a
    // kernel that outlives the run.
    let (ctx, kernel) = unsafe { (&*ctx, &*(*ctx).data.cast::<PythonKernel>()) };
    // SAFETY: `nargs` borrowed values, valid for the call.
    let args = unsafe { std::slice::from_raw_parts(args, nargs) };
    let outcome = catch_panic_marked(|| {
        keep_thread_state();
        CURRENT.set(Some(CallInfo::of(ctx)));
        Python::attach(|py| {
            let call = || -> PyResult<TomiiValue> {
                let items = args.iter().map(|arg| to_python(py, arg)).collect::<PyResult<Vec<_>>>()?;
                let result = kernel.function.bind(py).call1(PyTuple::new(py, items)?)?;
                from_python(&result)
            };
            call().map_err(|error| {
                let message = describe(py, &error);
                let mut first = kernel.exception.lock().unwrap_or_else(|p| p.into_inner());
                first.get_or_insert(error);
                message
            })
        })
    });
    CURRENT.set(None);
    match outcome {
        Ok(Ok(value)) => {
            // SAFETY: `out` is valid for writes; the value is owned and releasable by the host.
            unsafe { *out = value };
            TOMII_OK
        }
        Ok(Err(message)) | Err(message) => {
            // SAFETY: the host's error buffer is valid for the call.
            unsafe { write_error(ctx.err, &message) };
            1
        }
    }
}

/// What a Python kernel can ask about the call it serves (`tomii.call_context()`).
#[derive(Clone, Copy)]
pub struct CallInfo {
    pub node: *const std::ffi::c_char,
    pub instance: u32,
    pub frame: u64,
    pub slot: u32,
    pub worker: u32,
}

impl CallInfo {
    fn of(ctx: &TomiiCallCtx) -> CallInfo {
        CallInfo { node: ctx.node, instance: ctx.instance, frame: ctx.frame, slot: ctx.slot, worker: ctx.worker }
    }
}

thread_local! {
    /// The call this thread is serving, while it calls a Python kernel.
    static CURRENT: std::cell::Cell<Option<CallInfo>> = const { std::cell::Cell::new(None) };
}

/// The call the calling thread serves: `(node, instance, frame, slot, worker)`, or None outside a
/// kernel call. `worker` is None for calls outside any worker (initializations, post-nodes).
pub fn current_call() -> Option<(String, u32, u64, u32, Option<u32>)> {
    let info = CURRENT.get()?;
    let node = if info.node.is_null() {
        String::new()
    } else {
        // SAFETY: the host's NUL-terminated node name, valid during the call, which is running.
        unsafe { std::ffi::CStr::from_ptr(info.node) }.to_string_lossy().into_owned()
    };
    let worker = (info.worker != TOMII_NO_WORKER).then_some(info.worker);
    Some((node, info.instance, info.frame, info.slot, worker))
}

/// Gives a runtime worker thread a Python thread state that lives as long as the thread.
///
/// Taking the GIL on a thread without one creates a thread state and deletes it on release: about
/// 10 µs per call, measured. Kept, each call costs a GIL acquire and release only. The thread's
/// state is deleted when the thread ends (the runtime joins its workers before `run()` returns).
/// Threads that already have a thread state (the one that called `run()`) are left alone.
pub(crate) fn keep_thread_state() {
    struct Kept {
        saved: *mut pyo3::ffi::PyThreadState,
        gil: pyo3::ffi::PyGILState_STATE,
    }
    impl Drop for Kept {
        fn drop(&mut self) {
            // SAFETY: the thread state made by `keep_thread_state` on this thread, released by it;
            // the interpreter outlives the run whose worker this is.
            unsafe {
                if pyo3::ffi::Py_IsInitialized() != 0 {
                    pyo3::ffi::PyEval_RestoreThread(self.saved);
                    pyo3::ffi::PyGILState_Release(self.gil);
                }
            }
        }
    }
    thread_local! {
        static KEPT: std::cell::RefCell<Option<Kept>> = const { std::cell::RefCell::new(None) };
    }
    KEPT.with(|kept| {
        let mut kept = kept.borrow_mut();
        // SAFETY: plain CPython calls on this thread; the state is released by `PyEval_SaveThread`
        // at once, so the GIL is not held when this returns.
        unsafe {
            if kept.is_none() && pyo3::ffi::PyGILState_GetThisThreadState().is_null() {
                let gil = pyo3::ffi::PyGILState_Ensure();
                let saved = pyo3::ffi::PyEval_SaveThread();
                *kept = Some(Kept { saved, gil });
            }
        }
    });
}

/// The exception and the end of its traceback, the part that fits an error message.
pub(crate) fn describe(py: Python<'_>, error: &PyErr) -> String {
    let formatted = py
        .import("traceback")
        .and_then(|tb| tb.call_method1("format_exception", (error.get_type(py), error.value(py), error.traceback(py))))
        .and_then(|lines| lines.extract::<Vec<String>>());
    match formatted {
        Ok(lines) => {
            let text = lines.concat();
            // Keep the exception line whole: the error buffer holds a few KiB.
            const KEEP: usize = 3000;
            if text.len() <= KEEP {
                return text.trim_end().to_owned();
            }
            let mut start = text.len() - KEEP;
            while !text.is_char_boundary(start) {
                start += 1;
            }
            format!("...{}", text[start..].trim_end())
        }
        Err(_) => error.to_string(),
    }
}

/// A borrowed value as a Python object (see the module's value rules).
fn to_python<'py>(py: Python<'py>, value: &TomiiValue) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: the payload member read matches the tag, per the ABI.
    unsafe {
        let p = &value.payload;
        Ok(match value.tag {
            TOMII_TAG_NONE => py.None().into_bound(py),
            TOMII_TAG_BOOL => PyBool::new(py, p.b).to_owned().into_any(),
            TOMII_TAG_I8 | TOMII_TAG_I16 | TOMII_TAG_I32 | TOMII_TAG_I64 | TOMII_TAG_ISIZE => {
                p.i.into_pyobject(py)?.into_any()
            }
            TOMII_TAG_U8 | TOMII_TAG_U16 | TOMII_TAG_U32 | TOMII_TAG_U64 | TOMII_TAG_USIZE => {
                p.u.into_pyobject(py)?.into_any()
            }
            TOMII_TAG_I128 => {
                ((u128::from(p.wide[1]) << 64 | u128::from(p.wide[0])) as i128).into_pyobject(py)?.into_any()
            }
            TOMII_TAG_U128 => (u128::from(p.wide[1]) << 64 | u128::from(p.wide[0])).into_pyobject(py)?.into_any(),
            TOMII_TAG_F32 => PyFloat::new(py, p.f32.into()).into_any(),
            TOMII_TAG_F64 => PyFloat::new(py, p.f64).into_any(),
            TOMII_TAG_C32 => PyComplex::from_doubles(py, p.c32[0].into(), p.c32[1].into()).into_any(),
            TOMII_TAG_C64 => PyComplex::from_doubles(py, p.c64[0], p.c64[1]).into_any(),
            TOMII_TAG_CHAR => char::from_u32(p.u as u32).unwrap_or('\u{fffd}').into_pyobject(py)?.into_any(),
            TOMII_TAG_STR => PyString::new(py, &String::from_utf8_lossy(bytes(p.buf, 1))).into_any(),
            TOMII_TAG_BYTES => PyBytes::new(py, bytes(p.buf, 1)).into_any(),
            // Ours when released by `release_array`; were the address to differ (the comparison
            // is not guaranteed), the array would be copied: slower, same values.
            TOMII_TAG_ARRAY
                if p.buf.release.is_some_and(|f| std::ptr::fn_addr_eq(f, release_array as TomiiReleaseFn)) =>
            {
                Bound::from_borrowed_ptr(py, p.buf.ctx.cast())
            }
            TOMII_TAG_ARRAY => array_copy(py, value.elem, p.buf)?,
            TOMII_TAG_LIST => {
                let items = std::slice::from_raw_parts(p.buf.data.cast::<TomiiValue>().cast_const(), p.buf.len);
                PyList::new(py, items.iter().map(|item| to_python(py, item)).collect::<PyResult<Vec<_>>>()?)?.into_any()
            }
            TOMII_TAG_OBJECT if value.elem == PYTHON_OBJECT_TYPE => Bound::from_borrowed_ptr(py, p.buf.data.cast()),
            TOMII_TAG_OBJECT => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "an argument is an opaque object (type id {:#x}) made by a Rust or C kernel; \
                     Python cannot read it: return a number, a string, bytes or an array instead",
                    value.elem
                )));
            }
            tag => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!("an argument has the unknown tag {tag}")));
            }
        })
    }
}

/// The bytes of a buffer of `len` elements of `size` bytes.
///
/// # Safety
/// The buffer must be valid for the call.
unsafe fn bytes<'a>(buf: TomiiBuffer, size: usize) -> &'a [u8] {
    if buf.len == 0 || buf.data.is_null() {
        return &[];
    }
    // SAFETY: per the caller.
    unsafe { std::slice::from_raw_parts(buf.data.cast::<u8>(), buf.len * size) }
}

/// A new NumPy array holding a copy of an ARRAY buffer made by a Rust or C kernel.
///
/// # Safety
/// `buf` must be a valid ARRAY buffer of `elem` elements for the call.
unsafe fn array_copy<'py>(py: Python<'py>, elem: TomiiTag, buf: TomiiBuffer) -> PyResult<Bound<'py, PyAny>> {
    unsafe fn copy<'py, T: Element + Copy>(py: Python<'py>, buf: TomiiBuffer) -> Bound<'py, PyAny> {
        let items: &[T] = if buf.len == 0 || buf.data.is_null() {
            &[]
        } else {
            // SAFETY: per the caller, `len` elements of `T`'s layout.
            unsafe { std::slice::from_raw_parts(buf.data.cast::<T>().cast_const(), buf.len) }
        };
        PyArray1::from_slice(py, items).into_any()
    }
    // SAFETY: `elem` names the buffer's element type; complex values are two floats, the layout of
    // NumPy's complex types.
    unsafe {
        Ok(match elem {
            TOMII_TAG_U8 => copy::<u8>(py, buf),
            TOMII_TAG_I8 => copy::<i8>(py, buf),
            TOMII_TAG_U16 => copy::<u16>(py, buf),
            TOMII_TAG_I16 => copy::<i16>(py, buf),
            TOMII_TAG_U32 => copy::<u32>(py, buf),
            TOMII_TAG_I32 => copy::<i32>(py, buf),
            TOMII_TAG_U64 | TOMII_TAG_USIZE => copy::<u64>(py, buf),
            TOMII_TAG_I64 | TOMII_TAG_ISIZE => copy::<i64>(py, buf),
            TOMII_TAG_F32 => copy::<f32>(py, buf),
            TOMII_TAG_F64 => copy::<f64>(py, buf),
            TOMII_TAG_C32 => copy::<Complex32>(py, buf),
            TOMII_TAG_C64 => copy::<Complex64>(py, buf),
            other => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "an argument is an array of the unknown element tag {other}"
                )));
            }
        })
    }
}

/// The element tag of a NumPy dtype an ARRAY value can carry, if any.
fn element_tag(py: Python<'_>, dtype_of: &Bound<'_, PyArrayDescr>) -> Option<TomiiTag> {
    let candidates = [
        (dtype::<f64>(py), TOMII_TAG_F64),
        (dtype::<f32>(py), TOMII_TAG_F32),
        (dtype::<i64>(py), TOMII_TAG_I64),
        (dtype::<u64>(py), TOMII_TAG_U64),
        (dtype::<i32>(py), TOMII_TAG_I32),
        (dtype::<u32>(py), TOMII_TAG_U32),
        (dtype::<i16>(py), TOMII_TAG_I16),
        (dtype::<u16>(py), TOMII_TAG_U16),
        (dtype::<i8>(py), TOMII_TAG_I8),
        (dtype::<u8>(py), TOMII_TAG_U8),
        (dtype::<Complex32>(py), TOMII_TAG_C32),
        (dtype::<Complex64>(py), TOMII_TAG_C64),
    ];
    candidates.into_iter().find(|(candidate, _)| dtype_of.is_equiv_to(candidate)).map(|(_, tag)| tag)
}

/// A Python result as an owned value (see the module's value rules).
fn from_python(object: &Bound<'_, PyAny>) -> PyResult<TomiiValue> {
    let py = object.py();
    let value = |tag, payload| TomiiValue { tag, elem: 0, payload };
    if object.is_none() {
        return Ok(TomiiValue::NONE);
    }
    if let Ok(b) = object.cast::<PyBool>() {
        return Ok(value(TOMII_TAG_BOOL, TomiiPayload { b: b.is_true() }));
    }
    if let Ok(int) = object.cast::<PyInt>() {
        if let Ok(i) = int.extract::<i64>() {
            return Ok(value(TOMII_TAG_I64, TomiiPayload { i }));
        }
        if let Ok(u) = int.extract::<u64>() {
            return Ok(value(TOMII_TAG_U64, TomiiPayload { u }));
        }
        // Wider integers stay Python objects.
    } else if let Ok(f) = object.cast::<PyFloat>() {
        return Ok(value(TOMII_TAG_F64, TomiiPayload { f64: f.value() }));
    } else if let Ok(c) = object.cast::<PyComplex>() {
        return Ok(value(TOMII_TAG_C64, TomiiPayload { c64: [c.real(), c.imag()] }));
    } else if let Ok(s) = object.cast::<PyString>() {
        return Ok(tomii_types::kernel::Value::string(s.to_cow()?.into_owned()).into_raw());
    } else if let Ok(b) = object.cast::<PyBytes>() {
        return Ok(tomii_types::kernel::Value::bytes(b.as_bytes().to_vec()).into_raw());
    } else if let Ok(array) = object.cast::<PyUntypedArray>()
        && array.is_c_contiguous()
        && let Some(elem) = element_tag(py, &array.dtype())
    {
        // SAFETY: a NumPy array object; its data pointer stays valid while the reference held
        // in `ctx` keeps the array alive.
        let data = unsafe { (*array.as_array_ptr()).data }.cast::<c_void>();
        let buf =
            TomiiBuffer { data, len: array.len(), ctx: object.clone().into_ptr().cast(), release: Some(release_array) };
        return Ok(TomiiValue { tag: TOMII_TAG_ARRAY, elem, payload: TomiiPayload { buf } });
    }
    let buf = TomiiBuffer {
        data: object.clone().into_ptr().cast(),
        len: 0,
        ctx: std::ptr::null_mut(),
        release: Some(release_object),
    };
    Ok(TomiiValue { tag: TOMII_TAG_OBJECT, elem: PYTHON_OBJECT_TYPE, payload: TomiiPayload { buf } })
}

/// A Python object as an owned kernel value, by the same rules as a Python kernel's result: a
/// C-contiguous NumPy array is passed without a copy (the value keeps the array alive).
pub fn value_from_python(object: &Bound<'_, PyAny>) -> PyResult<tomii_types::kernel::Value> {
    // SAFETY: `from_python` returns an owned value whose release the host may call.
    Ok(unsafe { tomii_types::kernel::Value::from_raw(from_python(object)?) })
}

/// Turns an owned value (a sink's output) into a Python object, consuming it.
pub fn into_python(py: Python<'_>, value: tomii_types::kernel::Value) -> PyResult<Py<PyAny>> {
    // The value stays alive (and owned) while it is read; `to_python` takes its own references.
    Ok(to_python(py, value.as_raw())?.unbind())
}

/// Drops the reference held by an OBJECT value.
unsafe extern "C" fn release_object(data: *mut c_void, _len: usize, _ctx: *mut c_void) {
    // SAFETY: `data` is the strong reference `from_python` took.
    Python::attach(|py| drop(unsafe { Py::<PyAny>::from_owned_ptr(py, data.cast()) }));
}

/// Drops the reference to the NumPy array an ARRAY value points into.
unsafe extern "C" fn release_array(_data: *mut c_void, _len: usize, ctx: *mut c_void) {
    // SAFETY: `ctx` is the strong reference `from_python` took.
    Python::attach(|py| drop(unsafe { Py::<PyAny>::from_owned_ptr(py, ctx.cast()) }));
}
