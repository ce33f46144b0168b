//! One call of a 1.2 kernel: the C-ABI entry ([`call`]) and the argument views the expansion of
//! `#[tomii_export]` reads its parameters through ([`Args12`]), as 1.2 passed them:
//!
//! - primitives and strings by value, converted as this runtime's own kernels convert them;
//! - `&T` of a shared object borrowed under its read lock ([`Borrowed`]), never copied;
//! - `&mut T` under its write lock ([`BorrowedMut`]), mutated in place for every other holder;
//! - owned `T` cloned from the object; the last `Vec<T>` of a variadic kernel from every
//!   argument from its position on.
//!
//! Arguments past the parameters are ignored, as 1.2 ignored them. Every failure names the
//! kernel, the argument and what was expected; a panic fails the call, never the process.

use std::any::Any;

use parking_lot::{RwLockReadGuard, RwLockWriteGuard};
use sdk::abi::*;
use sdk::export::FromArg;
use sdk::kernel::{Args, KernelError, Value};

use crate::object::{TOMII12_OBJECT_TYPE_ID, from_value, held, natural};
use crate::value::{CmTypes, Complex32, Complex64};

/// A 1.2 kernel's signature, for its messages.
pub struct Signature12 {
    pub kernel: &'static str,
    pub params: &'static [&'static str],
}

/// The arguments of one call, with the kernel's signature.
pub struct Args12<'a> {
    raw: &'a [TomiiValue],
    args: Args<'a>,
    sig: &'static Signature12,
}

/// Calls a 1.2 kernel from its C shim: checks pointers, catches panics, writes the result.
///
/// # Safety
/// The pointers must be valid as the kernel ABI describes.
#[inline(always)]
pub unsafe fn call<K>(
    args: *const TomiiValue,
    nargs: usize,
    out: *mut TomiiValue,
    ctx: *const TomiiCallCtx,
    sig: &'static Signature12,
    kernel: K,
) -> i32
where
    K: FnOnce(&Args12<'_>) -> Result<Value, KernelError>,
{
    if out.is_null() || ctx.is_null() || (args.is_null() && nargs > 0) {
        return TOMII_ERR_INVALID;
    }
    let raw: &[TomiiValue] = if nargs == 0 {
        &[]
    } else {
        // SAFETY: checked non-NULL; `nargs` values valid for the call (kernel ABI).
        unsafe { std::slice::from_raw_parts(args, nargs) }
    };
    // SAFETY: checked non-NULL; valid for the call.
    let err = unsafe { (*ctx).err };
    // SAFETY: the host's values are valid for the call.
    let view = Args12 { raw, args: unsafe { Args::from_raw(raw) }, sig };
    let written = sdk::catch_panic(|| match kernel(&view) {
        Ok(value) => {
            // SAFETY: `out` checked non-NULL; the host takes ownership of the value.
            unsafe { *out = value.into_raw() };
            TOMII_OK
        }
        Err(error) => failed(err, &error.0, TOMII_ERR),
    });
    written.unwrap_or_else(|panic| failed(err, &format!("{} panicked: {panic}", sig.kernel), TOMII_ERR_PANIC))
}

#[cold]
#[inline(never)]
fn failed(err: TomiiErrorBuf, message: &str, status: i32) -> i32 {
    // SAFETY: the host's error buffer is valid for `cap` bytes.
    unsafe { sdk::write_error(err, message) };
    status
}

/// `&T` of an argument: the shared object under its read lock, or a value's one-call copy.
pub struct Borrowed<'a> {
    inner: Held<'a>,
    at: (&'static Signature12, usize),
}

enum Held<'a> {
    Locked(RwLockReadGuard<'a, Box<dyn Any + Send + Sync>>),
    Unlocked(&'a (dyn Any + Send + Sync)),
    Copied(Box<dyn Any + Send + Sync>),
}

/// `&mut T` of an argument: the shared object under its write lock.
pub struct BorrowedMut<'a> {
    guard: RwLockWriteGuard<'a, Box<dyn Any + Send + Sync>>,
    at: (&'static Signature12, usize),
}

impl Borrowed<'_> {
    pub fn get<T: Any>(&self) -> Result<&T, KernelError> {
        let value: &dyn Any = match &self.inner {
            Held::Locked(guard) => &***guard,
            Held::Unlocked(value) => *value,
            Held::Copied(value) => &**value,
        };
        value.downcast_ref::<T>().ok_or_else(|| wrong_type::<T>(self.at))
    }
}

impl BorrowedMut<'_> {
    pub fn get_mut<T: Any>(&mut self) -> Result<&mut T, KernelError> {
        let at = self.at;
        self.guard.downcast_mut::<T>().ok_or_else(|| wrong_type::<T>(at))
    }
}

#[cold]
fn wrong_type<T>((sig, index): (&'static Signature12, usize)) -> KernelError {
    KernelError(format!(
        "{}: expected a {} object, but the object holds another type",
        sig.at(index),
        std::any::type_name::<T>()
    ))
}

impl Signature12 {
    /// "kernel K, argument I (NAME)".
    fn at(&self, index: usize) -> String {
        let name = self.params.get(index).copied().unwrap_or("?");
        format!("kernel {}, argument {index} ({name})", self.kernel)
    }
}

impl<'a> Args12<'a> {
    fn get(&self, index: usize) -> Result<&'a TomiiValue, KernelError> {
        self.raw.get(index).ok_or_else(|| self.missing(index))
    }

    #[cold]
    fn missing(&self, index: usize) -> KernelError {
        KernelError(format!(
            "kernel {} takes {} argument(s) ({}), got {}; argument {index} is missing",
            self.sig.kernel,
            self.sig.params.len(),
            self.sig.params.join(", "),
            self.raw.len()
        ))
    }

    #[cold]
    fn mismatch(&self, index: usize, expected: &str) -> KernelError {
        let found = match self.raw.get(index) {
            Some(raw) if raw.tag == TOMII_TAG_OBJECT && raw.elem != TOMII12_OBJECT_TYPE_ID => {
                format!("an object of type id {:#010x}, made by a kernel that is not a Tomii 1.2 kernel", raw.elem)
            }
            Some(raw) => match held(raw) {
                Some(value) => format!("a Tomii 1.2 {} value", value.variant()),
                None => self.args.get(index).map_or_else(|_| "nothing".into(), |v| sdk::export::describe(&v)),
            },
            None => "nothing".into(),
        };
        KernelError(format!("{}: expected {expected}, found {found}", self.sig.at(index)))
    }

    /// A primitive or string parameter, converted as this runtime's kernels convert it.
    #[inline(always)]
    pub fn value<T: FromArg<'a>>(&self, index: usize) -> Result<T, KernelError> {
        self.get(index)?;
        T::from_arg(&self.args, index).ok_or_else(|| self.mismatch(index, T::EXPECTED))
    }

    /// A `Complex32` parameter: a complex value or a shared `Complex32`.
    pub fn complex32(&self, index: usize) -> Result<Complex32, KernelError> {
        match <[f32; 2]>::from_arg(&self.args, index) {
            Some([re, im]) => Ok(Complex32::new(re, im)),
            None => self.read(index)?.get::<Complex32>().copied(),
        }
    }

    /// A `Complex64` parameter.
    pub fn complex64(&self, index: usize) -> Result<Complex64, KernelError> {
        match <[f64; 2]>::from_arg(&self.args, index) {
            Some([re, im]) => Ok(Complex64::new(re, im)),
            None => self.read(index)?.get::<Complex64>().copied(),
        }
    }

    /// A `CmTypes` parameter (of a bridge, or of a kernel that takes one).
    pub fn cm(&self, index: usize) -> Result<CmTypes, KernelError> {
        from_value(self.get(index)?).ok_or_else(|| self.mismatch(index, "a value a Tomii 1.2 kernel can read"))
    }

    /// Every argument from `index` on, as `CmTypes` (a bridge's `&[CmTypes]`).
    pub fn cm_tail(&self, index: usize) -> Result<Vec<CmTypes>, KernelError> {
        (index..self.raw.len()).map(|i| self.cm(i)).collect()
    }

    /// `&T`: the shared object under its read lock; a value that is no object, copied once into
    /// the type 1.2 would have held (`Vec<f64>` for an array of f64...).
    #[inline(always)]
    pub fn read(&self, index: usize) -> Result<Borrowed<'a>, KernelError> {
        let raw = self.get(index)?;
        let at = (self.sig, index);
        let inner = match held(raw) {
            Some(CmTypes::Any(cell)) => Held::Locked(cell.read()),
            Some(CmTypes::AnyHeld(data)) => Held::Locked(data.lock().read()),
            Some(CmTypes::Bytes(bytes)) => Held::Unlocked(&**bytes),
            Some(other) => Held::Unlocked(other),
            None => match natural(raw) {
                Some(copy) => Held::Copied(copy),
                None => return Err(self.mismatch(index, "a Tomii 1.2 object")),
            },
        };
        Ok(Borrowed { inner, at })
    }

    /// `&mut T`: the shared object under its write lock. Anything else is refused: a copy would
    /// lose the writes.
    #[inline(always)]
    pub fn write(&self, index: usize) -> Result<BorrowedMut<'a>, KernelError> {
        let raw = self.get(index)?;
        let cell = match held(raw) {
            Some(CmTypes::Any(cell)) => cell,
            Some(CmTypes::AnyHeld(data)) => data.lock(),
            _ => return Err(self.not_mutable(index)),
        };
        if let Some(other) = self.aliases(index, raw) {
            return Err(KernelError(format!(
                "{} is `&mut` and argument {other} is the same object: a kernel cannot borrow one \
                 object mutably and again in one call; pass it once",
                self.sig.at(index)
            )));
        }
        Ok(BorrowedMut { guard: cell.write(), at: (self.sig, index) })
    }

    #[cold]
    fn not_mutable(&self, index: usize) -> KernelError {
        let expected = "a shared object returned by a Tomii 1.2 kernel: a `&mut` parameter mutates it in \
                        place, and a value that is no such object (a graph literal, a result of another \
                        kind of kernel) would be a copy whose writes are lost";
        self.mismatch(index, expected)
    }

    /// Another argument that is the same object as argument `index`.
    fn aliases(&self, index: usize, raw: &TomiiValue) -> Option<usize> {
        // SAFETY: `raw` is an OBJECT (checked by `held`), whose payload is a buffer.
        let data = unsafe { raw.payload.buf.data };
        self.raw.iter().enumerate().position(|(i, other)| {
            // SAFETY: an OBJECT's payload is a buffer.
            i != index && other.tag == TOMII_TAG_OBJECT && unsafe { other.payload.buf.data } == data
        })
    }

    /// The last `Vec<T>` of a variadic kernel, T a number: every argument from `index` on,
    /// converted with `as` as 1.2 did; NONE values (no result) are skipped.
    pub fn numbers<T: FromF64>(&self, index: usize) -> Result<Vec<T>, KernelError> {
        let mut out = Vec::with_capacity(self.raw.len().saturating_sub(index));
        for i in index..self.raw.len() {
            if self.raw[i].tag == TOMII_TAG_NONE {
                continue;
            }
            let number = match from_value(&self.raw[i]) {
                Some(CmTypes::F64(v)) => v,
                Some(CmTypes::F32(v)) => v.into(),
                Some(CmTypes::Bool(v)) => f64::from(u8::from(v)),
                Some(other) => match (other.valid_number_to_usize(), &other) {
                    (Some(v), _) => v as f64,
                    (None, CmTypes::I64(v)) => *v as f64,
                    (None, CmTypes::I32(v)) => f64::from(*v),
                    _ => return Err(self.mismatch(i, "a number (an item of the variadic list)")),
                },
                None => return Err(self.mismatch(i, "a number (an item of the variadic list)")),
            };
            out.push(T::from_f64(number));
        }
        Ok(out)
    }

    /// The last `Vec<T>` of a variadic kernel, T an object type: each argument from `index` on
    /// cloned out of its object (1.2 cloned them too); NONE values are skipped.
    pub fn objects<T: Any + Clone>(&self, index: usize) -> Result<Vec<T>, KernelError> {
        let mut out = Vec::with_capacity(self.raw.len().saturating_sub(index));
        for i in index..self.raw.len() {
            if self.raw[i].tag != TOMII_TAG_NONE {
                out.push(self.read(i)?.get::<T>()?.clone());
            }
        }
        Ok(out)
    }

    /// The last `Vec<String>` of a variadic kernel.
    pub fn strings(&self, index: usize) -> Result<Vec<String>, KernelError> {
        (index..self.raw.len()).filter(|&i| self.raw[i].tag != TOMII_TAG_NONE).map(|i| self.value(i)).collect()
    }
}

/// A number an item of a variadic list converts to, with `as`.
pub trait FromF64 {
    fn from_f64(v: f64) -> Self;
}

macro_rules! from_f64 {
    ($($ty:ty),*) => {$(
        impl FromF64 for $ty {
            fn from_f64(v: f64) -> Self {
                v as $ty
            }
        }
    )*};
}

from_f64!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);
