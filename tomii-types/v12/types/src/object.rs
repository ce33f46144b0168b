//! How 1.2 values cross this runtime's kernel ABI. Primitives, strings, bytes, complex numbers
//! and lists become the matching ABI values, so this runtime's own kernels and graph literals
//! read them; every other `CmTypes` (a shared object above all) crosses as one OBJECT value of
//! type id [`TOMII12_OBJECT_TYPE_ID`] holding the `CmTypes`, which consumers borrow.
//!
//! Never copies a shared object: a copy would lose the writes of a `&mut` consumer.

use std::any::Any;
use std::sync::Arc;

use sdk::abi::*;
use sdk::kernel::{Value, ValueRef};

use crate::value::{C32, C64, CmTypes, Complex32, Complex64};

/// The type id of the OBJECT values that hold a `CmTypes` ("t12" and a version byte).
pub const TOMII12_OBJECT_TYPE_ID: u32 = 0x7431_3201;

/// `value` as an OBJECT holding it (a shared object, borrowed by every consumer).
pub fn object_value(value: CmTypes) -> Value {
    Value::object(TOMII12_OBJECT_TYPE_ID, value)
}

/// The `CmTypes` held by an OBJECT of this crate, borrowed.
pub(crate) fn held(raw: &TomiiValue) -> Option<&CmTypes> {
    if raw.tag != TOMII_TAG_OBJECT || raw.elem != TOMII12_OBJECT_TYPE_ID {
        return None;
    }
    // SAFETY: an OBJECT's payload is a buffer; with this type id its data is the `CmTypes` boxed
    // by `object_value` (type ids name layouts, kernel ABI), alive while the host holds the value.
    let data = unsafe { raw.payload.buf.data };
    // SAFETY: as above; checked non-NULL.
    (!data.is_null()).then(|| unsafe { &*data.cast::<CmTypes>() })
}

/// A 1.2 value as the ABI value this runtime reads.
pub fn into_value(value: CmTypes) -> Value {
    match value {
        CmTypes::Bool(v) => Value::bool(v),
        CmTypes::I8(v) => Value::int(TOMII_TAG_I8, i64::from(v) as u64),
        CmTypes::I16(v) => Value::int(TOMII_TAG_I16, i64::from(v) as u64),
        CmTypes::I32(v) => Value::int(TOMII_TAG_I32, i64::from(v) as u64),
        CmTypes::I64(v) => Value::i64(v),
        CmTypes::Isize(v) => Value::int(TOMII_TAG_ISIZE, v as i64 as u64),
        CmTypes::U8(v) => Value::int(TOMII_TAG_U8, v.into()),
        CmTypes::U16(v) => Value::int(TOMII_TAG_U16, v.into()),
        CmTypes::U32(v) => Value::int(TOMII_TAG_U32, v.into()),
        CmTypes::U64(v) => Value::u64(v),
        CmTypes::Usize(v) => Value::usize(v),
        CmTypes::I128(v) => Value::wide(TOMII_TAG_I128, *v as u128),
        CmTypes::U128(v) => Value::wide(TOMII_TAG_U128, *v),
        CmTypes::F32(v) => Value::f32(v),
        CmTypes::F64(v) => Value::f64(v),
        CmTypes::Char(v) => Value::char(v),
        CmTypes::String(v) => Value::string(v.to_string()),
        CmTypes::Complex32(v) => Value::c32(v.0.re, v.0.im),
        CmTypes::Complex64(v) => Value::c64(v.0.re, v.0.im),
        CmTypes::VecCmt(items) => {
            let items = Arc::try_unwrap(items).unwrap_or_else(|shared| (*shared).clone());
            Value::list(items.into_iter().map(into_value).collect())
        }
        CmTypes::Bytes(bytes) => Value::bytes(Arc::try_unwrap(bytes).unwrap_or_else(|shared| (*shared).clone())),
        CmTypes::None => Value::none(),
        other => object_value(other),
    }
}

/// An ABI value as the 1.2 value a hand-written bridge or a `CmTypes` parameter reads; `None` for
/// an object of another library, which no 1.2 code can read.
pub fn from_value(raw: &TomiiValue) -> Option<CmTypes> {
    if raw.tag == TOMII_TAG_OBJECT {
        return held(raw).cloned();
    }
    // SAFETY: the host passes values valid as the kernel ABI describes.
    let view = unsafe { sdk::kernel::Args::from_raw(std::slice::from_ref(raw)) }.get(0).ok()?;
    // SAFETY: the tag selects the payload member (kernel ABI).
    let (i, u) = unsafe { (raw.payload.i, raw.payload.u) };
    Some(match raw.tag {
        TOMII_TAG_I8 => CmTypes::I8(i as i8),
        TOMII_TAG_I16 => CmTypes::I16(i as i16),
        TOMII_TAG_I32 => CmTypes::I32(i as i32),
        TOMII_TAG_I64 => CmTypes::I64(i),
        TOMII_TAG_ISIZE => CmTypes::Isize(i as isize),
        TOMII_TAG_U8 => CmTypes::U8(u as u8),
        TOMII_TAG_U16 => CmTypes::U16(u as u16),
        TOMII_TAG_U32 => CmTypes::U32(u as u32),
        TOMII_TAG_U64 => CmTypes::U64(u),
        TOMII_TAG_USIZE => CmTypes::Usize(u as usize),
        _ => from_view(view),
    })
}

fn from_view(view: ValueRef<'_>) -> CmTypes {
    match view {
        ValueRef::None | ValueRef::Object(..) => CmTypes::None,
        ValueRef::Bool(v) => CmTypes::Bool(v),
        ValueRef::Int(v) => CmTypes::I64(v),
        ValueRef::UInt(v) => CmTypes::U64(v),
        ValueRef::I128(v) => CmTypes::new_i128(v),
        ValueRef::U128(v) => CmTypes::new_u128(v),
        ValueRef::F32(v) => CmTypes::F32(v),
        ValueRef::F64(v) => CmTypes::F64(v),
        ValueRef::C32([re, im]) => CmTypes::new_complex32(C32(Complex32::new(re, im))),
        ValueRef::C64([re, im]) => CmTypes::new_complex64(C64(Complex64::new(re, im))),
        ValueRef::Char(v) => CmTypes::Char(v),
        ValueRef::Str(v) => CmTypes::new_string(v),
        ValueRef::Bytes(v) => CmTypes::from_bytes(v.to_vec()),
        ValueRef::Array(..) => CmTypes::None,
        ValueRef::List(items) => CmTypes::new_vec(items.iter().map(from_view).collect()),
    }
}

/// A value that is not a 1.2 object (a graph literal, a result of this runtime's own kernels) as
/// the Rust value 1.2 code would have held: `Vec<f64>` for an array of f64, `String` for a string,
/// `Vec<Complex32>` for an array of complex f32... A copy, made once per call; `None` when the
/// value has no such counterpart.
pub(crate) fn natural(raw: &TomiiValue) -> Option<Box<dyn Any + Send + Sync>> {
    // SAFETY: the host passes values valid as the kernel ABI describes.
    let args = unsafe { sdk::kernel::Args::from_raw(std::slice::from_ref(raw)) };
    fn array<T: sdk::kernel::Element>(args: &sdk::kernel::Args<'_>) -> Option<Vec<T>> {
        args.array::<T>(0).ok().map(<[T]>::to_vec)
    }
    let boxed: Box<dyn Any + Send + Sync> = match raw.tag {
        TOMII_TAG_ARRAY => match raw.elem {
            TOMII_TAG_F64 => Box::new(array::<f64>(&args)?),
            TOMII_TAG_F32 => Box::new(array::<f32>(&args)?),
            TOMII_TAG_I64 => Box::new(array::<i64>(&args)?),
            TOMII_TAG_I32 => Box::new(array::<i32>(&args)?),
            TOMII_TAG_U64 => Box::new(array::<u64>(&args)?),
            TOMII_TAG_U32 => Box::new(array::<u32>(&args)?),
            TOMII_TAG_U8 => Box::new(array::<u8>(&args)?),
            TOMII_TAG_USIZE => Box::new(array::<usize>(&args)?),
            TOMII_TAG_C32 => Box::new(
                array::<[f32; 2]>(&args)?.into_iter().map(|[re, im]| Complex32::new(re, im)).collect::<Vec<_>>(),
            ),
            TOMII_TAG_C64 => Box::new(
                array::<[f64; 2]>(&args)?.into_iter().map(|[re, im]| Complex64::new(re, im)).collect::<Vec<_>>(),
            ),
            _ => return None,
        },
        TOMII_TAG_STR => Box::new(args.str(0).ok()?.to_owned()),
        TOMII_TAG_BYTES => match args.get(0).ok()? {
            ValueRef::Bytes(bytes) => Box::new(bytes.to_vec()),
            _ => return None,
        },
        TOMII_TAG_C32 => match args.get(0).ok()? {
            ValueRef::C32([re, im]) => Box::new(Complex32::new(re, im)),
            _ => return None,
        },
        TOMII_TAG_C64 => match args.get(0).ok()? {
            ValueRef::C64([re, im]) => Box::new(Complex64::new(re, im)),
            _ => return None,
        },
        TOMII_TAG_LIST => match from_value(raw)? {
            CmTypes::VecCmt(items) => Box::new((*items).clone()),
            _ => return None,
        },
        _ => return None,
    };
    Some(boxed)
}
