//! Reads a literal from JSON: plain values (`4`, `-2`, `1.5`, `true`, `"text"`) and typed values
//! (`{"type": "u8", "value": 7}`), with every integer range-checked for its type.
//!
//! Errors are plain messages without location (the caller prefixes the node and argument). Never
//! panics and never rounds silently: a value that does not fit its type is an error.

use serde_json::{Map, Number, Value as Json};

use super::literal::{Literal, LiteralType};

/// A plain JSON value as a literal: non-negative integer → usize, negative → i64, float → f64,
/// bool, string.
pub(crate) fn plain(json: &Json) -> Result<Literal, String> {
    match json {
        Json::Bool(v) => Ok(Literal::Bool(*v)),
        Json::String(v) => Ok(Literal::Str(v.clone())),
        Json::Number(n) => Ok(plain_number(n)),
        Json::Null => Err("null is not a value; write a number, a string, a bool or a typed value".to_owned()),
        Json::Array(_) => {
            Err(r#"a plain list has no element type; write {"type": "Vec<f64>", "value": [...]}"#.to_owned())
        }
        Json::Object(_) => Err(r#"an object value needs a "type" field, e.g. {"type": "u8", "value": 7}"#.to_owned()),
    }
}

fn plain_number(n: &Number) -> Literal {
    match (n.as_u64(), n.as_i64()) {
        (Some(v), _) if usize::try_from(v).is_ok() => Literal::Usize(v),
        (None, Some(v)) => Literal::I64(v),
        _ => Literal::F64(n.as_f64().unwrap_or(f64::NAN)),
    }
}

/// A typed value `{"type": T, "value": V}` given as its object (the `"type"` is not a `$` type).
pub(crate) fn typed(object: &Map<String, Json>) -> Result<Literal, String> {
    if let Some(key) = object.keys().find(|key| *key != "type" && *key != "value") {
        return Err(format!(r#"unknown field {key:?} in a typed value; it has only "type" and "value""#));
    }
    let type_name = match object.get("type") {
        Some(Json::String(name)) => name.trim(),
        _ => return Err(r#"the "type" of a typed value must be a string such as "u8""#.to_owned()),
    };
    let value =
        object.get("value").ok_or_else(|| format!(r#"the typed value of type {type_name:?} has no "value""#))?;
    of_type(type_name, value)
}

/// `value` read as the type called `type_name` (a scalar type or `Vec<T>`).
pub(crate) fn of_type(type_name: &str, value: &Json) -> Result<Literal, String> {
    if let Some(inner) = type_name.strip_prefix("Vec<").and_then(|rest| rest.strip_suffix('>')) {
        let elem = scalar_type(inner.trim(), type_name)?;
        return vector(elem, value);
    }
    scalar(scalar_type(type_name, type_name)?, value)
}

fn scalar_type(name: &str, full: &str) -> Result<LiteralType, String> {
    LiteralType::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = LiteralType::ALL.iter().map(|ty| ty.name()).collect();
        format!("unknown type {full:?}; use one of {} or Vec<T> of one of them", known.join(", "))
    })
}

fn vector(elem: LiteralType, value: &Json) -> Result<Literal, String> {
    let Json::Array(items) = value else {
        return Err(format!("expected a JSON list for Vec<{}>, got {}", elem.name(), show(value)));
    };
    let items = items
        .iter()
        .enumerate()
        .map(|(k, item)| scalar(elem, item).map_err(|e| format!("element {k}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Literal::Vec(elem, items))
}

/// `value` read as the scalar type `ty`.
pub(crate) fn scalar(ty: LiteralType, value: &Json) -> Result<Literal, String> {
    match ty {
        LiteralType::Bool => value.as_bool().map(Literal::Bool).ok_or_else(|| expected("true or false", ty, value)),
        LiteralType::Str => {
            value.as_str().map(|s| Literal::Str(s.to_owned())).ok_or_else(|| expected("a string", ty, value))
        }
        LiteralType::Char => char_of(value).map(Literal::Char),
        LiteralType::F32 => f32_of(value, ty).map(Literal::F32),
        LiteralType::F64 => f64_of(value, ty).map(Literal::F64),
        LiteralType::C32 => {
            let [re, im] = complex(value, ty)?;
            Ok(Literal::C32([f32_of(re, ty)?, f32_of(im, ty)?]))
        }
        LiteralType::C64 => {
            let [re, im] = complex(value, ty)?;
            Ok(Literal::C64([f64_of(re, ty)?, f64_of(im, ty)?]))
        }
        LiteralType::I128 => wide_int(value, ty).map(Literal::I128),
        LiteralType::U128 => wide_uint(value, ty),
        _ => narrow_int(ty, value),
    }
}

/// Integers of up to 64 bits: range-checked conversion from the JSON integer.
fn narrow_int(ty: LiteralType, value: &Json) -> Result<Literal, String> {
    let v = json_int(value, ty)?;
    let too_big = || format!("{v} does not fit in {}", ty.name());
    Ok(match ty {
        LiteralType::I8 => Literal::I8(v.try_into().map_err(|_| too_big())?),
        LiteralType::I16 => Literal::I16(v.try_into().map_err(|_| too_big())?),
        LiteralType::I32 => Literal::I32(v.try_into().map_err(|_| too_big())?),
        LiteralType::I64 => Literal::I64(v.try_into().map_err(|_| too_big())?),
        LiteralType::U8 => Literal::U8(v.try_into().map_err(|_| too_big())?),
        LiteralType::U16 => Literal::U16(v.try_into().map_err(|_| too_big())?),
        LiteralType::U32 => Literal::U32(v.try_into().map_err(|_| too_big())?),
        LiteralType::U64 => Literal::U64(v.try_into().map_err(|_| too_big())?),
        LiteralType::Usize => Literal::Usize(usize::try_from(v).map_err(|_| too_big())? as u64),
        LiteralType::Isize => Literal::Isize(isize::try_from(v).map_err(|_| too_big())? as i64),
        _ => return Err(format!("internal: {} is not a narrow integer type", ty.name())),
    })
}

/// A JSON integer (of at most 64 bits, either sign) widened to i128.
fn json_int(value: &Json, ty: LiteralType) -> Result<i128, String> {
    let Json::Number(n) = value else {
        return Err(expected("an integer", ty, value));
    };
    if let Some(v) = n.as_u64() {
        return Ok(v.into());
    }
    if let Some(v) = n.as_i64() {
        return Ok(v.into());
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 => Err(format!("{n} does not fit in {}", ty.name())),
        _ => Err(expected("an integer", ty, value)),
    }
}

fn wide_int(value: &Json, ty: LiteralType) -> Result<i128, String> {
    match value {
        Json::String(text) => text.trim().parse::<i128>().map_err(|_| not_decimal(text, ty)),
        _ => json_int(value, ty).map_err(|e| format!("{e}{}", WIDE_HINT)),
    }
}

fn wide_uint(value: &Json, ty: LiteralType) -> Result<Literal, String> {
    let v = match value {
        Json::String(text) => text.trim().parse::<u128>().map_err(|_| not_decimal(text, ty))?,
        _ => {
            let v = json_int(value, ty).map_err(|e| format!("{e}{}", WIDE_HINT))?;
            u128::try_from(v).map_err(|_| format!("{v} does not fit in {}", ty.name()))?
        }
    };
    Ok(Literal::U128(v))
}

const WIDE_HINT: &str =
    r#" (write 128-bit values beyond 64 bits as a decimal string, e.g. "170141183460469231731687303715884105727")"#;

fn not_decimal(text: &str, ty: LiteralType) -> String {
    format!("{text:?} is not a decimal integer that fits in {}", ty.name())
}

fn f64_of(value: &Json, ty: LiteralType) -> Result<f64, String> {
    value.as_f64().ok_or_else(|| expected("a number", ty, value))
}

fn f32_of(value: &Json, ty: LiteralType) -> Result<f32, String> {
    let wide = f64_of(value, ty)?;
    let narrow = wide as f32;
    if wide.is_finite() && !narrow.is_finite() {
        return Err(format!("{wide} does not fit in f32"));
    }
    Ok(narrow)
}

fn complex(value: &Json, ty: LiteralType) -> Result<[&Json; 2], String> {
    match value.as_array().map(Vec::as_slice) {
        Some([re, im]) => Ok([re, im]),
        _ => Err(expected("a list [re, im]", ty, value)),
    }
}

fn char_of(value: &Json) -> Result<char, String> {
    let text = value.as_str().ok_or_else(|| expected("a one-character string", LiteralType::Char, value))?;
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => Ok(c),
        _ => Err(format!("{text:?} is not exactly one character (char)")),
    }
}

fn expected(what: &str, ty: LiteralType, got: &Json) -> String {
    format!("expected {what} for {}, got {}", ty.name(), show(got))
}

/// A short one-line rendering of a JSON value for messages.
pub(crate) fn show(value: &Json) -> String {
    let text = value.to_string();
    if text.chars().count() <= 40 {
        return text;
    }
    let head: String = text.chars().take(37).collect();
    format!("{head}...")
}
