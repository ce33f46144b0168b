//! Tomii 1.2's literal values, which are JSON strings whatever their type (`"200"` for a usize,
//! `"1.0,2.0"` for a `Vec<f64>`, `"1+2i"` for a complex), rewritten as the current format's typed
//! JSON values and checked by the same reader (`typed.rs`) as any other literal.
//!
//! Errors are plain messages (the caller names the node and the 1.2 field); nothing here panics.

use serde_json::{Value as Json, json};

use super::super::literal::{Literal, LiteralType};
use super::super::typed::{self, show};

/// `{"type": ty, "value": value}` of a 1.2 file as a current-format typed value and its literal.
pub(crate) fn typed_value(ty: &str, value: &Json) -> Result<(Json, Literal), String> {
    let ty = ty.trim();
    let converted = match value {
        Json::String(text) => of_text(ty, text)?,
        // A complex written as an object; anything else non-string is read as the current format
        // reads it (the dialect check has made sure the file is not a mix).
        Json::Object(_) => complex_object(ty, value)?,
        other => other.clone(),
    };
    let literal = typed::of_type(ty, &converted)?;
    Ok((json!({"type": ty, "value": converted}), literal))
}

/// The JSON value the current format writes for `text` of type `ty`.
fn of_text(ty: &str, text: &str) -> Result<Json, String> {
    if let Some(inner) = ty.strip_prefix("Vec<").and_then(|rest| rest.strip_suffix('>')) {
        let inner = inner.trim();
        if text.trim().is_empty() {
            return Ok(Json::Array(Vec::new()));
        }
        let items = text.split(',').enumerate().map(|(k, item)| {
            let item = if matches!(inner, "String" | "char") { item } else { item.trim() };
            scalar(inner, item).map_err(|e| format!("element {k} of {text:?}: {e}"))
        });
        return items.collect::<Result<Vec<_>, _>>().map(Json::Array);
    }
    scalar(ty, text)
}

/// One scalar of type `ty` written as `text`.
fn scalar(ty: &str, text: &str) -> Result<Json, String> {
    let Some(kind) = LiteralType::from_name(ty) else {
        // The typed reader names the unknown type and lists the known ones.
        return Ok(Json::String(text.to_owned()));
    };
    let trimmed = text.trim();
    match kind {
        LiteralType::Str | LiteralType::Char => Ok(Json::String(text.to_owned())),
        LiteralType::Bool => match trimmed {
            "true" => Ok(Json::Bool(true)),
            "false" => Ok(Json::Bool(false)),
            _ => Err(format!("{text:?} is not a bool; write \"true\" or \"false\"")),
        },
        // The current format reads 128-bit integers from decimal strings too.
        LiteralType::I128 | LiteralType::U128 => Ok(Json::String(trimmed.to_owned())),
        LiteralType::F32 | LiteralType::F64 => float(trimmed, ty).map(Json::from),
        LiteralType::C32 | LiteralType::C64 => complex_text(trimmed, ty),
        _ => integer(trimmed, ty),
    }
}

fn integer(text: &str, ty: &str) -> Result<Json, String> {
    let value = text.parse::<i128>().map_err(|_| format!("{text:?} is not an integer (a {ty})"))?;
    if let Ok(v) = u64::try_from(value) {
        return Ok(Json::from(v));
    }
    i64::try_from(value).map(Json::from).map_err(|_| format!("{text} does not fit in {ty}"))
}

fn float(text: &str, ty: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(format!("{text:?} is not a finite number; a graph file holds finite {ty} values only")),
        Err(_) => Err(format!("{text:?} is not a number (a {ty})")),
    }
}

/// `"re,im"` or `"a+bi"` (also `"a-bi"`, `"bi"`, `"a"`, with `i` or `j`) as `[re, im]`.
fn complex_text(text: &str, ty: &str) -> Result<Json, String> {
    let bad = || format!("{text:?} is not a complex number; write \"re,im\", \"a+bi\" or {{\"re\": ..., \"im\": ...}}");
    let (re, im) = match text.split_once(',') {
        Some((re, im)) => (re.trim().to_owned(), im.trim().to_owned()),
        None => algebraic(text).ok_or_else(bad)?,
    };
    let re = float(&re, ty).map_err(|_| bad())?;
    let im = float(&im, ty).map_err(|_| bad())?;
    Ok(json!([re, im]))
}

/// `"a+bi"` split into its real and imaginary texts.
fn algebraic(text: &str) -> Option<(String, String)> {
    let Some(body) = text.strip_suffix('i').or_else(|| text.strip_suffix('j')) else {
        return Some((text.to_owned(), "0".to_owned()));
    };
    let bytes = body.as_bytes();
    // The sign that starts the imaginary part: not the first character, not an exponent's sign.
    let split =
        (1..bytes.len()).rev().find(|&k| matches!(bytes[k], b'+' | b'-') && !matches!(bytes[k - 1], b'e' | b'E'));
    let (re, im) = match split {
        Some(k) => (body[..k].trim(), body[k..].trim()),
        None => ("0", body.trim()),
    };
    let im = match im {
        "" | "+" => "1",
        "-" => "-1",
        other => other.strip_prefix('+').unwrap_or(other),
    };
    Some((re.to_owned(), im.to_owned()))
}

/// `{"re": R, "im": I}`, each a number or a string holding one.
fn complex_object(ty: &str, value: &Json) -> Result<Json, String> {
    let Json::Object(parts) = value else { return Ok(value.clone()) };
    let part = |key: &str| -> Result<f64, String> {
        match parts.get(key) {
            Some(Json::Number(n)) => n.as_f64().ok_or_else(|| format!("{key} {n} is not a number")),
            Some(Json::String(text)) => float(text.trim(), ty),
            _ => Err(format!("a complex value {} needs numbers \"re\" and \"im\"", show(value))),
        }
    };
    if let Some(key) = parts.keys().find(|key| *key != "re" && *key != "im") {
        return Err(format!("unknown field {key:?} in a complex value; it has only \"re\" and \"im\""));
    }
    Ok(json!([part("re")?, part("im")?]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(ty: &str, text: &str) -> Json {
        typed_value(ty, &Json::String(text.to_owned())).unwrap_or_else(|e| panic!("{ty} {text:?}: {e}")).0["value"]
            .clone()
    }

    #[test]
    fn every_scalar_type_reads_its_string() {
        assert_eq!(value("usize", " 200 "), json!(200));
        assert_eq!(value("i8", "-128"), json!(-128));
        assert_eq!(value("f64", "5.0"), json!(5.0));
        assert_eq!(value("f32", "1e-3"), json!(1e-3));
        assert_eq!(value("bool", "true"), json!(true));
        assert_eq!(value("String", " result.txt"), json!(" result.txt"));
        assert_eq!(value("char", "é"), json!("é"));
        assert_eq!(
            value("u128", "340282366920938463463374607431768211455"),
            json!("340282366920938463463374607431768211455")
        );
    }

    #[test]
    fn complex_numbers_read_every_spelling() {
        for (text, expected) in [
            ("1.5,-2", json!([1.5, -2.0])),
            ("1.5-2i", json!([1.5, -2.0])),
            ("1+2j", json!([1.0, 2.0])),
            ("-3i", json!([0.0, -3.0])),
            ("i", json!([0.0, 1.0])),
            ("4", json!([4.0, 0.0])),
            ("1e-2+1e+2i", json!([0.01, 100.0])),
        ] {
            assert_eq!(value("Complex64", text), expected, "{text}");
        }
        let object = typed_value("Complex32", &json!({"re": "0.5", "im": 2})).unwrap().0;
        assert_eq!(object["value"], json!([0.5, 2.0]));
    }

    #[test]
    fn vectors_are_comma_lists() {
        assert_eq!(value("Vec<f64>", "1.0, 2.0,3"), json!([1.0, 2.0, 3.0]));
        assert_eq!(value("Vec<u8>", ""), json!([]));
        assert_eq!(value("Vec<String>", "a,b"), json!(["a", "b"]));
        assert_eq!(value("Vec<Complex64>", "1+2i,3-4i"), json!([[1.0, 2.0], [3.0, -4.0]]));
    }

    #[test]
    fn values_that_do_not_fit_say_why() {
        let error = |ty: &str, text: &str| typed_value(ty, &Json::String(text.to_owned())).unwrap_err();
        assert!(error("u8", "300").contains("300 does not fit in u8"), "{}", error("u8", "300"));
        assert!(error("usize", "1.5").contains("not an integer"));
        assert!(error("bool", "yes").contains("not a bool"));
        assert!(error("f64", "inf").contains("finite"));
        assert!(error("Vec<u8>", "1,x").contains("element 1"));
        assert!(error("Complex64", "1+").contains("not a complex number"));
        assert!(error("u9", "1").contains("unknown type"));
    }
}
