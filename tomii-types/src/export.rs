//! The run-time half of [`#[tomii_export]`](crate::tomii_export): parameters from borrowed
//! arguments ([`FromArg`], with errors naming the kernel, the argument and the expected and found
//! types), results into values ([`IntoValue`], opaque objects with a type id from their type's name),
//! and the registry that [`kernel_library!`](crate::kernel_library) exports, collected from every
//! annotated function of the library.
//!
//! The attribute generates every call into this module; it builds on the safe layer of
//! [`kernel`](crate::kernel) and never changes the ABI.

use std::ffi::{CStr, CString};
use std::fmt::Display;
use std::sync::OnceLock;

use crate::abi::*;
use crate::kernel::{Args, Element, KernelError, Value, ValueRef, element_size};

/// A parameter type of an exported function: what it accepts, and the conversion from the host's
/// argument. Implemented for the integers, `f32`, `f64`, `bool`, `char`, complex numbers as
/// `[f32; 2]`/`[f64; 2]`, `&str`, `String`, `&[T]` and `Vec<T>` of array elements, and the raw
/// views [`ValueRef`] and [`Args`] (a list).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a parameter of a #[tomii_export] function",
    note = "parameters are integers, f32, f64, bool, char, [f32; 2], [f64; 2], &str, String, &[T] or Vec<T> of array elements, ValueRef, Args, or `&T` of an opaque object type"
)]
pub trait FromArg<'a>: Sized {
    /// What the parameter accepts, for messages ("an i32").
    const EXPECTED: &'static str;

    /// The argument at `index` of `args`, or `None` when it has another type or does not fit.
    fn from_arg(args: &Args<'a>, index: usize) -> Option<Self>;
}

/// A result type of an exported function: the conversion into an owned [`Value`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned by a #[tomii_export] function",
    note = "results are (), integers, f32, f64, bool, char, [f32; 2], [f64; 2], String, Vec<T> of array elements, Option of these, Value, or an opaque object type"
)]
pub trait IntoValue {
    fn into_value(self) -> Value;
}

macro_rules! integers {
    ($($ty:ty: $expected:literal, |$v:ident| $into:expr;)*) => {$(
        impl FromArg<'_> for $ty {
            const EXPECTED: &'static str = $expected;
            fn from_arg(args: &Args<'_>, index: usize) -> Option<Self> {
                match args.get(index).ok()? {
                    ValueRef::Int(v) => v.try_into().ok(),
                    ValueRef::UInt(v) => v.try_into().ok(),
                    ValueRef::I128(v) => v.try_into().ok(),
                    ValueRef::U128(v) => v.try_into().ok(),
                    _ => None,
                }
            }
        }

        impl IntoValue for $ty {
            fn into_value(self) -> Value {
                let $v = self;
                $into
            }
        }
    )*};
}

// Narrow integers are stored widened, sign-extended for the signed types (kernel ABI).
integers! {
    u8: "a u8", |v| Value::int(TOMII_TAG_U8, v.into());
    u16: "a u16", |v| Value::int(TOMII_TAG_U16, v.into());
    u32: "a u32", |v| Value::int(TOMII_TAG_U32, v.into());
    u64: "a u64", |v| Value::u64(v);
    usize: "a usize", |v| Value::usize(v);
    u128: "a u128", |v| Value::wide(TOMII_TAG_U128, v);
    i8: "an i8", |v| Value::int(TOMII_TAG_I8, i64::from(v) as u64);
    i16: "an i16", |v| Value::int(TOMII_TAG_I16, i64::from(v) as u64);
    i32: "an i32", |v| Value::int(TOMII_TAG_I32, i64::from(v) as u64);
    i64: "an i64", |v| Value::i64(v);
    isize: "an isize", |v| Value::int(TOMII_TAG_ISIZE, v as i64 as u64);
    i128: "an i128", |v| Value::wide(TOMII_TAG_I128, v as u128);
}

/// Floats accept any number: graph literals such as `2` are integers.
impl FromArg<'_> for f64 {
    const EXPECTED: &'static str = "a number (f64)";
    fn from_arg(args: &Args<'_>, index: usize) -> Option<Self> {
        match args.get(index).ok()? {
            ValueRef::F64(v) => Some(v),
            ValueRef::F32(v) => Some(v.into()),
            ValueRef::Int(v) => Some(v as f64),
            ValueRef::UInt(v) => Some(v as f64),
            _ => None,
        }
    }
}

impl FromArg<'_> for f32 {
    const EXPECTED: &'static str = "a number (f32)";
    fn from_arg(args: &Args<'_>, index: usize) -> Option<Self> {
        f64::from_arg(args, index).map(|v| v as f32)
    }
}

impl FromArg<'_> for [f32; 2] {
    const EXPECTED: &'static str = "a complex number ([f32; 2])";
    fn from_arg(args: &Args<'_>, index: usize) -> Option<Self> {
        <[f64; 2]>::from_arg(args, index).map(|[re, im]| [re as f32, im as f32])
    }
}

impl FromArg<'_> for [f64; 2] {
    const EXPECTED: &'static str = "a complex number ([f64; 2])";
    fn from_arg(args: &Args<'_>, index: usize) -> Option<Self> {
        match args.get(index).ok()? {
            ValueRef::C64(v) => Some(v),
            ValueRef::C32([re, im]) => Some([re.into(), im.into()]),
            _ => None,
        }
    }
}

/// The types an argument of one kind holds as it is.
macro_rules! as_held {
    ($($ty:ty: $kind:ident, $expected:literal;)*) => {$(
        impl<'a> FromArg<'a> for $ty {
            const EXPECTED: &'static str = $expected;
            fn from_arg(args: &Args<'a>, index: usize) -> Option<Self> {
                match args.get(index).ok()? {
                    ValueRef::$kind(v) => Some(v),
                    _ => None,
                }
            }
        }
    )*};
}

as_held! {
    bool: Bool, "a bool";
    char: Char, "a char";
    &'a str: Str, "a string";
    // A LIST, such as the trailing results of a variadic kernel.
    Args<'a>: List, "a list";
}

impl FromArg<'_> for String {
    const EXPECTED: &'static str = "a string";
    fn from_arg(args: &Args<'_>, index: usize) -> Option<Self> {
        <&str>::from_arg(args, index).map(str::to_owned)
    }
}

impl<'a, T: Element> FromArg<'a> for &'a [T] {
    const EXPECTED: &'static str = T::NAME;
    fn from_arg(args: &Args<'a>, index: usize) -> Option<Self> {
        args.array::<T>(index).ok()
    }
}

impl<T: Element> FromArg<'_> for Vec<T> {
    const EXPECTED: &'static str = T::NAME;
    fn from_arg(args: &Args<'_>, index: usize) -> Option<Self> {
        args.array::<T>(index).ok().map(<[T]>::to_vec)
    }
}

/// Any value, as the host passed it.
impl<'a> FromArg<'a> for ValueRef<'a> {
    const EXPECTED: &'static str = "any value";
    fn from_arg(args: &Args<'a>, index: usize) -> Option<Self> {
        args.get(index).ok()
    }
}

impl IntoValue for () {
    fn into_value(self) -> Value {
        Value::none()
    }
}

/// The types one constructor of `Value` takes as they are.
macro_rules! made_by {
    ($($ty:ty: $make:path;)*) => {$(
        impl IntoValue for $ty {
            fn into_value(self) -> Value {
                $make(self)
            }
        }
    )*};
}

made_by! {
    bool: Value::bool;
    f32: Value::f32;
    f64: Value::f64;
    char: Value::char;
    String: Value::string;
}

impl IntoValue for [f32; 2] {
    fn into_value(self) -> Value {
        Value::c32(self[0], self[1])
    }
}

impl IntoValue for [f64; 2] {
    fn into_value(self) -> Value {
        Value::c64(self[0], self[1])
    }
}

impl<T: Element> IntoValue for Vec<T> {
    fn into_value(self) -> Value {
        Value::array(self)
    }
}

/// `None` is the NONE value.
impl<T: IntoValue> IntoValue for Option<T> {
    fn into_value(self) -> Value {
        self.map_or_else(Value::none, T::into_value)
    }
}

impl IntoValue for Value {
    fn into_value(self) -> Value {
        self
    }
}

/// The type id of the opaque objects of type `T`: FNV-1a (32 bits) of the type's name, then of its
/// size. Producer and reader are the same library in practice, so they agree on the name; the size
/// tells apart two versions of a type that kept its name.
pub fn object_type_id<T>() -> u32 {
    const PRIME: u32 = 0x0100_0193;
    let name = std::any::type_name::<T>().bytes();
    let size = size_of::<T>().to_le_bytes();
    name.chain(size).fold(0x811c_9dc5, |hash, byte| (hash ^ u32::from(byte)).wrapping_mul(PRIME))
}

/// `v` as an opaque object, for the kernels that take `&T`.
pub fn object_value<T: Send + Sync + 'static>(v: T) -> Value {
    Value::object(object_type_id::<T>(), v)
}

/// The message of a function's `Err`, failing the call.
pub fn failure(error: impl Display) -> KernelError {
    KernelError(error.to_string())
}

/// An exported function's signature, for checking and converting its arguments.
#[derive(Clone, Copy, Debug)]
pub struct Signature {
    /// The registry name.
    pub kernel: &'static str,
    /// The names of the parameters fed by graph arguments (a `&CallCtx` is not one).
    pub params: &'static [&'static str],
    /// The last parameter takes the trailing results as one list.
    pub variadic: bool,
}

impl Signature {
    /// Fails unless the host passed one argument per parameter.
    pub fn check_count(&self, args: &Args<'_>) -> Result<(), KernelError> {
        if args.len() == self.params.len() {
            return Ok(());
        }
        let list = if self.variadic { "; the last is the list of trailing results" } else { "" };
        Err(KernelError(format!(
            "kernel {} takes {} argument(s) ({}{list}), got {}",
            self.kernel,
            self.params.len(),
            self.params.join(", "),
            args.len()
        )))
    }

    /// Argument `index` as `T`.
    pub fn arg<'a, T: FromArg<'a>>(&self, args: &Args<'a>, index: usize) -> Result<T, KernelError> {
        T::from_arg(args, index).ok_or_else(|| self.mismatch(args, index, None, T::EXPECTED))
    }

    /// Argument `index` as a borrowed object of type `T`, checked by its type id.
    pub fn object<'a, T>(&self, args: &Args<'a>, index: usize) -> Result<&'a T, KernelError> {
        let id = object_type_id::<T>();
        match args.get(index)? {
            ValueRef::Object(found, data) if found == id && !data.is_null() => {
                // SAFETY: an OBJECT's type id names its layout (kernel ABI); this id is `T`'s, given
                // only by `object_value::<T>`, which boxed a `T` at `data`. The host keeps the value
                // alive for the call, which `'a` spans.
                Ok(unsafe { &*data.cast::<T>() })
            }
            _ => {
                let expected = format!("an object of type {} (type id {id:#010x})", std::any::type_name::<T>());
                Err(self.mismatch(args, index, None, &expected))
            }
        }
    }

    /// Argument `index`, a list, with each item as `T`.
    pub fn list<'a, T: FromArg<'a>>(&self, args: &Args<'a>, index: usize) -> Result<Vec<T>, KernelError> {
        let items: Args<'a> = self.arg(args, index)?;
        (0..items.len())
            .map(|item| T::from_arg(&items, item).ok_or_else(|| self.mismatch(&items, item, Some(index), T::EXPECTED)))
            .collect()
    }

    /// "kernel K, argument I (NAME)[, item J]: expected X, found Y".
    fn mismatch(&self, args: &Args<'_>, index: usize, list: Option<usize>, expected: &str) -> KernelError {
        let found = args.get(index).map_or_else(|_| "nothing".to_owned(), |value| describe(&value));
        let (argument, item) = match list {
            Some(argument) => (argument, format!(", item {index}")),
            None => (index, String::new()),
        };
        let name = self.params.get(argument).copied().unwrap_or("?");
        KernelError(format!(
            "kernel {}, argument {argument} ({name}){item}: expected {expected}, found {found}",
            self.kernel
        ))
    }
}

/// A value's type, with the value when it is short, for messages.
pub fn describe(value: &ValueRef<'_>) -> String {
    match *value {
        ValueRef::None => "no value (NONE)".to_owned(),
        ValueRef::Bool(v) => format!("a bool ({v})"),
        ValueRef::Int(v) => format!("a signed integer ({v})"),
        ValueRef::UInt(v) => format!("an unsigned integer ({v})"),
        ValueRef::I128(v) => format!("an i128 ({v})"),
        ValueRef::U128(v) => format!("a u128 ({v})"),
        ValueRef::F32(v) => format!("an f32 ({v})"),
        ValueRef::F64(v) => format!("an f64 ({v})"),
        ValueRef::C32([re, im]) => format!("a complex f32 ({re}{im:+}i)"),
        ValueRef::C64([re, im]) => format!("a complex f64 ({re}{im:+}i)"),
        ValueRef::Char(v) => format!("a char ({v:?})"),
        ValueRef::Str(v) if v.chars().count() <= 40 => format!("a string ({v:?})"),
        ValueRef::Str(v) => format!("a string of {} bytes", v.len()),
        ValueRef::Bytes(v) => format!("{} bytes", v.len()),
        ValueRef::Array(tag, bytes) => {
            let count = bytes.len().checked_div(element_size(tag)).unwrap_or(0);
            format!("an array of {} ({count} elements)", tag_name(tag))
        }
        ValueRef::List(items) => format!("a list of {} values", items.len()),
        ValueRef::Object(id, _) => format!("an object of type id {id:#010x}"),
    }
}

/// The Rust name of a scalar tag.
fn tag_name(tag: TomiiTag) -> &'static str {
    match tag {
        TOMII_TAG_BOOL => "bool",
        TOMII_TAG_I8 => "i8",
        TOMII_TAG_I16 => "i16",
        TOMII_TAG_I32 => "i32",
        TOMII_TAG_I64 => "i64",
        TOMII_TAG_I128 => "i128",
        TOMII_TAG_U8 => "u8",
        TOMII_TAG_U16 => "u16",
        TOMII_TAG_U32 => "u32",
        TOMII_TAG_U64 => "u64",
        TOMII_TAG_U128 => "u128",
        TOMII_TAG_USIZE => "usize",
        TOMII_TAG_ISIZE => "isize",
        TOMII_TAG_F32 => "f32",
        TOMII_TAG_F64 => "f64",
        TOMII_TAG_C32 => "[f32; 2]",
        TOMII_TAG_C64 => "[f64; 2]",
        TOMII_TAG_CHAR => "char",
        _ => "an unknown element type",
    }
}

/// One exported function, as `#[tomii_export]` registers it.
pub struct Registration {
    name: &'static CStr,
    func: TomiiKernelFn,
    flags: u32,
}

impl Registration {
    pub const fn new(name: &'static CStr, func: TomiiKernelFn, variadic: bool) -> Registration {
        Registration { name, func, flags: if variadic { TOMII_KERNEL_VARIADIC } else { 0 } }
    }

    /// The registry entry. Fields this crate does not set (appended by later ABI minors) are zero,
    /// which every such field must accept as "absent".
    fn entry(&self) -> TomiiKernelEntry {
        TomiiKernelEntry { name: self.name.as_ptr(), func: Some(self.func), flags: self.flags, ..ZERO_ENTRY }
    }
}

// SAFETY: every field of an entry is a pointer, an optional function pointer or an integer, for
// which all-zero bytes are valid (NULL, None, 0).
const ZERO_ENTRY: TomiiKernelEntry = unsafe { std::mem::zeroed() };

inventory::collect!(Registration);

/// The registry of one library: every `#[tomii_export]` function linked into it, by name. Built on
/// the host's first call to the entry symbol, then static.
pub struct LibraryRegistry {
    library: &'static str,
    table: OnceLock<Table>,
}

struct Table {
    registry: TomiiKernelRegistry,
    // Pointed to by `registry`; never moved once the table is built.
    _entries: Box<[TomiiKernelEntry]>,
    _library: CString,
}

// SAFETY: a table is immutable once built and points only at its own heap data and at static
// names and functions, so it may be shared and dropped anywhere.
unsafe impl Send for Table {}
// SAFETY: as above.
unsafe impl Sync for Table {}

impl LibraryRegistry {
    pub const fn new(library: &'static str) -> LibraryRegistry {
        LibraryRegistry { library, table: OnceLock::new() }
    }

    /// The registry, built on first use.
    pub fn get(&self) -> *const TomiiKernelRegistry {
        &self.table.get_or_init(|| self.build()).registry
    }

    fn build(&self) -> Table {
        let mut registrations: Vec<&Registration> = inventory::iter::<Registration>.into_iter().collect();
        // Link order decides the collection order; the registry lists kernels by name instead.
        registrations.sort_by_key(|registration| registration.name);
        let entries: Box<[TomiiKernelEntry]> = registrations.iter().map(|r| r.entry()).collect();
        // A NUL inside a library name would cut it short; drop them rather than fail the load.
        let library = CString::new(self.library.replace('\0', "")).unwrap_or_default();
        let registry = TomiiKernelRegistry {
            abi_major: TOMII_KERNEL_ABI_MAJOR,
            abi_minor: TOMII_KERNEL_ABI_MINOR,
            struct_size: size_of::<TomiiKernelRegistry>() as u32,
            entry_size: size_of::<TomiiKernelEntry>() as u32,
            library: library.as_ptr(),
            entries: entries.as_ptr(),
            count: entries.len(),
        };
        Table { registry, _entries: entries, _library: library }
    }
}

/// Exports the registry of every [`#[tomii_export]`](crate::tomii_export) function of the crate as
/// `tomii_kernels_v1`: `tomii_types::kernel_library!("library-name");` (or `kernel_library!();`
/// for the package's name), once, at the root of a `cdylib` crate.
#[macro_export]
macro_rules! kernel_library {
    () => {
        $crate::kernel_library!(env!("CARGO_PKG_NAME"));
    };
    ($library:expr $(,)?) => {
        /// The kernel registry of this library: every `#[tomii_export]` function of the crate.
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        pub extern "C" fn tomii_kernels_v1() -> *const $crate::abi::TomiiKernelRegistry {
            static REGISTRY: $crate::export::LibraryRegistry = $crate::export::LibraryRegistry::new($library);
            $crate::install_quiet_hook();
            REGISTRY.get()
        }
    };
}
