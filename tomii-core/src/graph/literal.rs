//! Constant values of a graph (initializations and literal arguments) and their conversion to the
//! kernel ABI's [`Value`]. Parsing from JSON lives in `typed.rs`.
//!
//! A `Literal` is always well-formed: integers are in range for their type and a `Vec` holds only
//! elements of its declared type. Nothing here may panic.

use tomii_types::abi::*;
use tomii_types::kernel::Value;

/// The scalar types a literal (or the element of a `Vec` literal) can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LiteralType {
    Bool,
    I8,
    I16,
    I32,
    I64,
    I128,
    U8,
    U16,
    U32,
    U64,
    U128,
    Usize,
    Isize,
    F32,
    F64,
    C32,
    C64,
    Char,
    Str,
}

impl LiteralType {
    /// Every scalar type, in the order the documentation lists them.
    pub const ALL: [LiteralType; 19] = [
        LiteralType::I8,
        LiteralType::I16,
        LiteralType::I32,
        LiteralType::I64,
        LiteralType::I128,
        LiteralType::U8,
        LiteralType::U16,
        LiteralType::U32,
        LiteralType::U64,
        LiteralType::U128,
        LiteralType::Usize,
        LiteralType::Isize,
        LiteralType::F32,
        LiteralType::F64,
        LiteralType::Bool,
        LiteralType::Char,
        LiteralType::Str,
        LiteralType::C32,
        LiteralType::C64,
    ];

    /// The name used in the JSON `"type"` field (a Rust type name).
    pub fn name(self) -> &'static str {
        match self {
            LiteralType::Bool => "bool",
            LiteralType::I8 => "i8",
            LiteralType::I16 => "i16",
            LiteralType::I32 => "i32",
            LiteralType::I64 => "i64",
            LiteralType::I128 => "i128",
            LiteralType::U8 => "u8",
            LiteralType::U16 => "u16",
            LiteralType::U32 => "u32",
            LiteralType::U64 => "u64",
            LiteralType::U128 => "u128",
            LiteralType::Usize => "usize",
            LiteralType::Isize => "isize",
            LiteralType::F32 => "f32",
            LiteralType::F64 => "f64",
            LiteralType::C32 => "Complex32",
            LiteralType::C64 => "Complex64",
            LiteralType::Char => "char",
            LiteralType::Str => "String",
        }
    }

    /// The type called `name` in JSON, if any.
    pub fn from_name(name: &str) -> Option<LiteralType> {
        LiteralType::ALL.into_iter().find(|ty| ty.name() == name)
    }
}

/// A constant value. `Usize` and `Isize` are stored as 64-bit values that fit the host's `usize`.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Bool(bool),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    I128(i128),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    U128(u128),
    Usize(u64),
    Isize(i64),
    F32(f32),
    F64(f64),
    C32([f32; 2]),
    C64([f64; 2]),
    Char(char),
    Str(String),
    /// A homogeneous vector: the element type (kept so that an empty vector still has one) and
    /// the elements, each a scalar of that type.
    Vec(LiteralType, Vec<Literal>),
}

impl Literal {
    /// The scalar type of this literal; `None` for a `Vec`.
    pub fn scalar_type(&self) -> Option<LiteralType> {
        Some(match self {
            Literal::Bool(_) => LiteralType::Bool,
            Literal::I8(_) => LiteralType::I8,
            Literal::I16(_) => LiteralType::I16,
            Literal::I32(_) => LiteralType::I32,
            Literal::I64(_) => LiteralType::I64,
            Literal::I128(_) => LiteralType::I128,
            Literal::U8(_) => LiteralType::U8,
            Literal::U16(_) => LiteralType::U16,
            Literal::U32(_) => LiteralType::U32,
            Literal::U64(_) => LiteralType::U64,
            Literal::U128(_) => LiteralType::U128,
            Literal::Usize(_) => LiteralType::Usize,
            Literal::Isize(_) => LiteralType::Isize,
            Literal::F32(_) => LiteralType::F32,
            Literal::F64(_) => LiteralType::F64,
            Literal::C32(_) => LiteralType::C32,
            Literal::C64(_) => LiteralType::C64,
            Literal::Char(_) => LiteralType::Char,
            Literal::Str(_) => LiteralType::Str,
            Literal::Vec(..) => return None,
        })
    }

    /// The type as written in JSON: `u8`, `String`, `Complex64`, `Vec<f32>`...
    pub fn type_name(&self) -> String {
        match self {
            Literal::Vec(elem, _) => format!("Vec<{}>", elem.name()),
            scalar => scalar.scalar_type().map_or("?", LiteralType::name).to_owned(),
        }
    }

    /// The value as an unsigned integer, if it is an integer of any type and non-negative.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Literal::U8(v) => Some(v.into()),
            Literal::U16(v) => Some(v.into()),
            Literal::U32(v) => Some(v.into()),
            Literal::U64(v) | Literal::Usize(v) => Some(v),
            Literal::U128(v) => u64::try_from(v).ok(),
            Literal::I8(v) => u64::try_from(v).ok(),
            Literal::I16(v) => u64::try_from(v).ok(),
            Literal::I32(v) => u64::try_from(v).ok(),
            Literal::I64(v) | Literal::Isize(v) => u64::try_from(v).ok(),
            Literal::I128(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as a kernel argument, with the matching `TOMII_TAG_*`. See the README ("Values
    /// passed to kernels") for how vectors map.
    pub fn to_value(&self) -> Value {
        match self {
            Literal::Bool(v) => Value::bool(*v),
            Literal::I8(v) => signed(TOMII_TAG_I8, (*v).into()),
            Literal::I16(v) => signed(TOMII_TAG_I16, (*v).into()),
            Literal::I32(v) => signed(TOMII_TAG_I32, (*v).into()),
            Literal::I64(v) => signed(TOMII_TAG_I64, *v),
            Literal::Isize(v) => signed(TOMII_TAG_ISIZE, *v),
            Literal::I128(v) => Value::wide(TOMII_TAG_I128, *v as u128),
            Literal::U8(v) => Value::int(TOMII_TAG_U8, (*v).into()),
            Literal::U16(v) => Value::int(TOMII_TAG_U16, (*v).into()),
            Literal::U32(v) => Value::int(TOMII_TAG_U32, (*v).into()),
            Literal::U64(v) => Value::int(TOMII_TAG_U64, *v),
            Literal::Usize(v) => Value::int(TOMII_TAG_USIZE, *v),
            Literal::U128(v) => Value::wide(TOMII_TAG_U128, *v),
            Literal::F32(v) => Value::f32(*v),
            Literal::F64(v) => Value::f64(*v),
            Literal::C32([re, im]) => Value::c32(*re, *im),
            Literal::C64([re, im]) => Value::c64(*re, *im),
            Literal::Char(v) => Value::char(*v),
            Literal::Str(v) => Value::string(v.clone()),
            Literal::Vec(elem, items) => vec_value(*elem, items),
        }
    }
}

/// A signed integer widened to 64 bits, stored as its two's-complement bits.
fn signed(tag: TomiiTag, v: i64) -> Value {
    Value::int(tag, v as u64)
}

/// Collects the elements of variant `$variant` converted by `$conv` into a typed array value.
macro_rules! typed_array {
    ($items:expr, $variant:ident, $ty:ty, |$v:ident| $conv:expr) => {
        Value::array::<$ty>(
            $items
                .iter()
                .filter_map(|item| match item {
                    Literal::$variant($v) => Some($conv),
                    _ => None,
                })
                .collect(),
        )
    };
}

/// A vector literal as a typed ARRAY, or as a LIST for element types the array form cannot carry.
fn vec_value(elem: LiteralType, items: &[Literal]) -> Value {
    match elem {
        LiteralType::Bool => typed_array!(items, Bool, u8, |v| u8::from(*v)),
        LiteralType::I8 => typed_array!(items, I8, i8, |v| *v),
        LiteralType::I16 => typed_array!(items, I16, i16, |v| *v),
        LiteralType::I32 => typed_array!(items, I32, i32, |v| *v),
        LiteralType::I64 => typed_array!(items, I64, i64, |v| *v),
        LiteralType::U8 => typed_array!(items, U8, u8, |v| *v),
        LiteralType::U16 => typed_array!(items, U16, u16, |v| *v),
        LiteralType::U32 => typed_array!(items, U32, u32, |v| *v),
        LiteralType::U64 => typed_array!(items, U64, u64, |v| *v),
        LiteralType::Usize => typed_array!(items, Usize, usize, |v| usize::try_from(*v).unwrap_or(usize::MAX)),
        LiteralType::Isize => typed_array!(items, Isize, isize, |v| isize::try_from(*v).unwrap_or(isize::MAX)),
        LiteralType::F32 => typed_array!(items, F32, f32, |v| *v),
        LiteralType::F64 => typed_array!(items, F64, f64, |v| *v),
        LiteralType::C32 => typed_array!(items, C32, [f32; 2], |v| *v),
        LiteralType::C64 => typed_array!(items, C64, [f64; 2], |v| *v),
        LiteralType::I128 | LiteralType::U128 | LiteralType::Char | LiteralType::Str => {
            Value::list(items.iter().map(Literal::to_value).collect())
        }
    }
}
