//! `CmTypes`, Tomii 1.2's type-erased value, with the variants and helpers 1.2 plugins use
//! (`from_any`, `with_any`, `with_any_mut`, `as_mut_ptr`, `new_string`, `new_vec`, `Bytes`...).
//!
//! Only hand-written bridges and `CmTypes` parameters see it; `#[tomii_export]` functions get
//! their own types. It never enters the ABI as such: [`crate::object`] converts at the boundary.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use parking_lot::RwLock;

pub use num_complex::{Complex32, Complex64};

/// A shared 1.2 object: the value under a lock, behind a reference count.
pub type AnyCell = Arc<RwLock<Box<dyn Any + Send + Sync>>>;

/// A complex f32 as 1.2 stored it in `CmTypes::Complex32`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct C32(pub Complex32);

/// A complex f64 as 1.2 stored it in `CmTypes::Complex64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct C64(pub Complex64);

impl From<Complex32> for C32 {
    fn from(v: Complex32) -> Self {
        C32(v)
    }
}

impl From<C32> for Complex32 {
    fn from(v: C32) -> Self {
        v.0
    }
}

impl From<Complex64> for C64 {
    fn from(v: Complex64) -> Self {
        C64(v)
    }
}

impl From<C64> for Complex64 {
    fn from(v: C64) -> Self {
        v.0
    }
}

/// A pre-resolved object, as 1.2's bulk path passed it. This runtime never makes one (its calls
/// lock the object instead); the type exists so that bridges matching on it compile.
#[derive(Clone)]
pub struct AnyHeldData {
    cell: AnyCell,
}

impl AnyHeldData {
    pub fn new(cell: AnyCell) -> Self {
        AnyHeldData { cell }
    }

    /// The object as `&T`, without taking its lock.
    ///
    /// # Safety
    /// No writer may hold the object's lock while the reference lives.
    pub unsafe fn downcast_ref<T: Any + Send + Sync>(&self) -> Option<&T> {
        // SAFETY: the caller guarantees no concurrent writer; the Arc keeps the value alive.
        unsafe { (*self.cell.data_ptr()).downcast_ref::<T>() }
    }

    pub fn lock(&self) -> &AnyCell {
        &self.cell
    }
}

/// A raw pointer into a shared object, keeping the object alive (1.2's `as_mut_ptr`).
pub struct RawMutGuard<T> {
    pub ptr: *mut T,
    _keepalive: AnyCell,
}

// SAFETY: the guard only carries the pointer; what is done through it is the caller's contract
// (`CmTypes::as_mut_ptr`), as in 1.2.
unsafe impl<T: Send> Send for RawMutGuard<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for RawMutGuard<T> {}

/// Tomii 1.2's value type. The graph-reference variants (`Ref`, `Res`, `Dep`, `Barrier`, `Init`)
/// exist so that code naming them compiles; a kernel never receives them here.
#[derive(Clone, Default)]
pub enum CmTypes {
    Bool(bool),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
    Char(char),
    Usize(usize),
    Isize(isize),
    I128(Arc<i128>),
    U128(Arc<u128>),
    String(Arc<str>),
    Complex32(Arc<C32>),
    Complex64(Arc<C64>),
    VecCmt(Arc<Vec<CmTypes>>),
    Ref(usize),
    Res(usize),
    Dep(usize),
    Barrier(Arc<str>),
    #[default]
    None,
    Init,
    Any(AnyCell),
    VecAny(Arc<RwLock<Vec<Box<dyn Any + Send + Sync>>>>),
    Bytes(Arc<Vec<u8>>),
    AnyHeld(AnyHeldData),
}

impl CmTypes {
    pub fn new_string<S: AsRef<str>>(s: S) -> Self {
        CmTypes::String(Arc::from(s.as_ref()))
    }

    pub fn new_i128(v: i128) -> Self {
        CmTypes::I128(Arc::new(v))
    }

    pub fn new_u128(v: u128) -> Self {
        CmTypes::U128(Arc::new(v))
    }

    pub fn new_complex32(v: C32) -> Self {
        CmTypes::Complex32(Arc::new(v))
    }

    pub fn new_complex64(v: C64) -> Self {
        CmTypes::Complex64(Arc::new(v))
    }

    pub fn new_vec(v: Vec<CmTypes>) -> Self {
        CmTypes::VecCmt(Arc::new(v))
    }

    pub fn new_barrier<S: AsRef<str>>(s: S) -> Self {
        CmTypes::Barrier(Arc::from(s.as_ref()))
    }

    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        CmTypes::Bytes(Arc::new(bytes))
    }

    /// A shared object holding `value`.
    pub fn from_any<T: Any + Send + Sync>(value: T) -> Self {
        CmTypes::Any(Arc::new(RwLock::new(Box::new(value))))
    }

    pub fn from_any_vec<T: Any + Send + Sync>(items: Vec<T>) -> Self {
        let boxed = items.into_iter().map(|item| Box::new(item) as Box<dyn Any + Send + Sync>).collect();
        CmTypes::VecAny(Arc::new(RwLock::new(boxed)))
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            CmTypes::String(s) | CmTypes::Barrier(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_string(&self) -> Option<String> {
        self.as_str().map(str::to_owned)
    }

    /// The text of a string, or the value as `Display` shows it.
    pub fn to_string_owned(&self) -> String {
        self.as_string().unwrap_or_else(|| self.to_string())
    }

    pub fn as_i128(&self) -> Option<i128> {
        match self {
            CmTypes::I128(v) => Some(**v),
            _ => None,
        }
    }

    pub fn as_u128(&self) -> Option<u128> {
        match self {
            CmTypes::U128(v) => Some(**v),
            _ => None,
        }
    }

    pub fn as_vec(&self) -> Option<&Vec<CmTypes>> {
        match self {
            CmTypes::VecCmt(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_complex32(&self) -> Option<C32> {
        match self {
            CmTypes::Complex32(v) => Some(**v),
            _ => None,
        }
    }

    pub fn as_complex64(&self) -> Option<C64> {
        match self {
            CmTypes::Complex64(v) => Some(**v),
            _ => None,
        }
    }

    /// The bytes of `Bytes`, or of a shared `Vec<u8>` object.
    pub fn with_bytes<F: FnOnce(&[u8]) -> R, R>(&self, f: F) -> Option<R> {
        match self {
            CmTypes::Bytes(bytes) => Some(f(bytes)),
            CmTypes::Any(cell) => cell.read().downcast_ref::<Vec<u8>>().map(|bytes| f(bytes)),
            _ => None,
        }
    }

    /// Reads the shared object as `&T` under its read lock; `None` when it holds another type.
    pub fn with_any<T: Any + Send + Sync, F: FnOnce(&T) -> R, R>(&self, f: F) -> Option<R> {
        match self {
            CmTypes::Any(cell) => cell.read().downcast_ref::<T>().map(f),
            // SAFETY: an AnyHeld is read only while no writer runs (its contract).
            CmTypes::AnyHeld(held) => unsafe { held.downcast_ref::<T>() }.map(f),
            _ => None,
        }
    }

    /// Mutates the shared object under its write lock: every other holder sees the change.
    pub fn with_any_mut<T: Any + Send + Sync, F: FnOnce(&mut T) -> R, R>(&self, f: F) -> Option<R> {
        let cell = match self {
            CmTypes::Any(cell) => cell,
            CmTypes::AnyHeld(held) => held.lock(),
            _ => return None,
        };
        cell.write().downcast_mut::<T>().map(f)
    }

    pub fn as_vec_any<T: Any + Clone>(&self) -> Option<Vec<T>> {
        match self {
            CmTypes::VecAny(cell) => cell.read().iter().map(|item| item.downcast_ref::<T>().cloned()).collect(),
            _ => None,
        }
    }

    pub fn vec_any_len(&self) -> Option<usize> {
        match self {
            CmTypes::VecAny(cell) => Some(cell.read().len()),
            _ => None,
        }
    }

    /// A raw pointer to the shared object's value, with no lock held (1.2's lock-free writes).
    ///
    /// # Safety
    /// The caller keeps writes through the pointer from racing with each other and with any
    /// reader or `with_any_mut` of the same object.
    pub unsafe fn as_mut_ptr<T: Any + Send + Sync>(&self) -> Option<RawMutGuard<T>> {
        let CmTypes::Any(cell) = self else { return None };
        let ptr = cell.read().downcast_ref::<T>().map(|value| value as *const T as *mut T)?;
        Some(RawMutGuard { ptr, _keepalive: Arc::clone(cell) })
    }

    /// Any non-negative integer as a usize.
    pub fn valid_number_to_usize(&self) -> Option<usize> {
        match *self {
            CmTypes::Usize(v) => Some(v),
            CmTypes::U8(v) => Some(v.into()),
            CmTypes::U16(v) => Some(v.into()),
            CmTypes::U32(v) => usize::try_from(v).ok(),
            CmTypes::U64(v) => usize::try_from(v).ok(),
            CmTypes::I8(v) => usize::try_from(v).ok(),
            CmTypes::I16(v) => usize::try_from(v).ok(),
            CmTypes::I32(v) => usize::try_from(v).ok(),
            CmTypes::I64(v) => usize::try_from(v).ok(),
            CmTypes::Isize(v) => usize::try_from(v).ok(),
            CmTypes::U128(ref v) => usize::try_from(**v).ok(),
            CmTypes::I128(ref v) => usize::try_from(**v).ok(),
            _ => None,
        }
    }

    pub fn is_result(&self) -> bool {
        matches!(self, CmTypes::Res(_))
    }

    pub fn is_dep(&self) -> bool {
        matches!(self, CmTypes::Dep(_))
    }

    pub fn is_reference(&self) -> bool {
        matches!(self, CmTypes::Ref(_))
    }

    pub fn is_barrier(&self) -> bool {
        matches!(self, CmTypes::Barrier(_))
    }

    /// The variant's name, for messages.
    pub fn variant(&self) -> &'static str {
        match self {
            CmTypes::Bool(_) => "Bool",
            CmTypes::I8(_) => "I8",
            CmTypes::I16(_) => "I16",
            CmTypes::I32(_) => "I32",
            CmTypes::I64(_) => "I64",
            CmTypes::U8(_) => "U8",
            CmTypes::U16(_) => "U16",
            CmTypes::U32(_) => "U32",
            CmTypes::U64(_) => "U64",
            CmTypes::F32(_) => "F32",
            CmTypes::F64(_) => "F64",
            CmTypes::Char(_) => "Char",
            CmTypes::Usize(_) => "Usize",
            CmTypes::Isize(_) => "Isize",
            CmTypes::I128(_) => "I128",
            CmTypes::U128(_) => "U128",
            CmTypes::String(_) => "String",
            CmTypes::Complex32(_) => "Complex32",
            CmTypes::Complex64(_) => "Complex64",
            CmTypes::VecCmt(_) => "VecCmt",
            CmTypes::Ref(_) => "Ref",
            CmTypes::Res(_) => "Res",
            CmTypes::Dep(_) => "Dep",
            CmTypes::Barrier(_) => "Barrier",
            CmTypes::None => "None",
            CmTypes::Init => "Init",
            CmTypes::Any(_) => "Any",
            CmTypes::VecAny(_) => "VecAny",
            CmTypes::Bytes(_) => "Bytes",
            CmTypes::AnyHeld(_) => "AnyHeld",
        }
    }
}

impl fmt::Display for CmTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CmTypes::Bool(v) => write!(f, "{v}"),
            CmTypes::I8(v) => write!(f, "{v}"),
            CmTypes::I16(v) => write!(f, "{v}"),
            CmTypes::I32(v) => write!(f, "{v}"),
            CmTypes::I64(v) => write!(f, "{v}"),
            CmTypes::U8(v) => write!(f, "{v}"),
            CmTypes::U16(v) => write!(f, "{v}"),
            CmTypes::U32(v) => write!(f, "{v}"),
            CmTypes::U64(v) => write!(f, "{v}"),
            CmTypes::F32(v) => write!(f, "{v}"),
            CmTypes::F64(v) => write!(f, "{v}"),
            CmTypes::Char(v) => write!(f, "{v}"),
            CmTypes::Usize(v) | CmTypes::Ref(v) | CmTypes::Res(v) | CmTypes::Dep(v) => write!(f, "{v}"),
            CmTypes::Isize(v) => write!(f, "{v}"),
            CmTypes::I128(v) => write!(f, "{v}"),
            CmTypes::U128(v) => write!(f, "{v}"),
            CmTypes::String(v) | CmTypes::Barrier(v) => f.write_str(v),
            CmTypes::Complex32(v) => write!(f, "{}+{}i", v.0.re, v.0.im),
            CmTypes::Complex64(v) => write!(f, "{}+{}i", v.0.re, v.0.im),
            CmTypes::VecCmt(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            CmTypes::Bytes(bytes) => write!(f, "<{} bytes>", bytes.len()),
            other => write!(f, "<{}>", other.variant()),
        }
    }
}

impl fmt::Debug for CmTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({self})", self.variant())
    }
}
