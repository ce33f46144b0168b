//! A Tomii 1.2 predecessor (`{"name", "indexes", "group_by"}`) in the current format, with its 1.2
//! meaning: a literal range end is inclusive, a name end exclusive, and every offset is taken
//! modulo the predecessor's factor (README.md, "Tomii 1.2 graph files"). Where the current format
//! would select otherwise, the note says what the edge selects and how it is written now.
//!
//! Works per edge on the factors known when the file is read; nothing here panics.

use std::collections::HashMap;

use serde_json::{Map, Value as Json, json};

use super::super::literal::Literal;
use super::super::spec::EdgeKind;
use super::super::typed::show;
use super::rule::{self, Meaning};

/// What the translation knows: the constant initializations and every node's factor.
pub(crate) struct Known<'a> {
    pub consts: &'a HashMap<String, Literal>,
    /// Factor of each node (and of `$network`), when it could be read.
    pub factors: &'a HashMap<String, u32>,
}

/// A predecessor in the current format, and a note when its 1.2 meaning needed spelling out.
pub(crate) struct Translated {
    pub pred: Json,
    pub note: Option<String>,
}

/// What `indexes` says, before the factors are applied.
pub(super) enum Indexes {
    /// Absent: offset 0 (a `$barrier`: every instance).
    Default,
    /// `"all"`.
    All,
    /// `"k"`, `"a,b,c"`: offsets; `index` is how the current format writes them.
    Offsets(Vec<i64>, Json),
    /// `"a-b"`: offsets lo..hi (hi exclusive); `inclusive` when the end was a literal.
    Range { lo: i64, hi: i64, text: String, inclusive: bool },
}

/// The predecessor `pred` of an edge of kind `kind` (`$res`, `$dep`, `$barrier`) read by a node of
/// `factor` instances (None: not known).
pub(crate) fn predecessor(
    pred: &Map<String, Json>,
    kind: &str,
    factor: Option<u32>,
    known: &Known<'_>,
) -> Result<Translated, String> {
    if let Some(key) = pred.keys().find(|key| !matches!(key.as_str(), "name" | "indexes" | "group_by")) {
        return Err(format!(
            r#"unknown field {key:?} in "predecessor"; Tomii 1.2 knows "name", "indexes", "group_by""#
        ));
    }
    let name = match pred.get("name") {
        Some(Json::String(name)) if !name.is_empty() => name.clone(),
        _ => return Err(r#""predecessor" needs "name": the node to read from"#.to_owned()),
    };
    let indexes = indexes(pred.get("indexes"), known)?;
    if let Some(group_by) = pred.get("group_by").filter(|g| !g.is_null()) {
        if !matches!(indexes, Indexes::Default) {
            return Err(r#"give "indexes" or "group_by", not both"#.to_owned());
        }
        let g = group_by_value(group_by, known)?;
        return Ok(Translated { pred: json!({"name": name, "group_by": g}), note: None });
    }
    let mut out = Map::new();
    out.insert("name".to_owned(), Json::String(name.clone()));
    let (offsets, written): (Vec<i64>, Json) = match &indexes {
        // Absent (which 1.2's own files never are) is what the current format makes of it:
        // every instance for a barrier, else offset 0, wrapped where needed; "all" every instance.
        Indexes::Default if kind != "$barrier" => (vec![0], Json::Null),
        Indexes::Default | Indexes::All => {
            if matches!(indexes, Indexes::All) {
                out.insert("index".to_owned(), json!("all"));
            }
            return Ok(Translated { pred: Json::Object(out), note: None });
        }
        Indexes::Offsets(offsets, index) => (offsets.clone(), index.clone()),
        Indexes::Range { lo, hi, text, .. } => ((*lo..*hi).collect(), Json::String(text.clone())),
    };
    let edge_kind = match kind {
        "$barrier" => EdgeKind::Barrier,
        "$dep" => EdgeKind::Dep,
        _ => EdgeKind::Res,
    };
    let pred_factor = known.factors.get(&name).copied();
    let (Some(factor), Some(pred_factor)) = (factor, pred_factor) else {
        // A factor given by a computed initialization: the compiler decides with the factors.
        out.insert("index".to_owned(), if written.is_null() { json!(0) } else { written });
        out.insert("rule".to_owned(), json!("tomii-1.2"));
        return Ok(Translated { pred: Json::Object(out), note: None });
    };
    let meaning = rule::meaning(edge_kind, &offsets, factor, pred_factor).map_err(|e| {
        format!("reads {name:?} with indexes {}: {e}", show(pred.get("indexes").unwrap_or(&Json::Null)))
    })?;
    let mut parts = Vec::new();
    if let Indexes::Range { lo, hi, inclusive: true, .. } = &indexes {
        parts.push(format!(
            "Tomii 1.2 read the literal end inclusively: offsets {lo}..={} ({} instances)",
            hi - 1,
            hi - lo
        ));
    }
    let ring = |i: i64, k: i64| {
        let at = i + k;
        format!(
            "instance {i} selects {at}, outside the {pred_factor} instance(s) of {name:?}, which Tomii 1.2 took \
             modulo {pred_factor}: instance {}",
            at.rem_euclid(i64::from(pred_factor.max(1)))
        )
    };
    // The first instance that leaves the predecessor: i + largest offset = P.
    let first_wrap = |offsets: &[i64]| {
        let largest = offsets.iter().copied().max().unwrap_or(0);
        Some(ring((i64::from(pred_factor) - largest).max(0), largest))
    };
    match meaning {
        Meaning::AsWritten { wrap } => {
            if !written.is_null() {
                out.insert("index".to_owned(), written);
            }
            if wrap {
                out.insert("wrap".to_owned(), Json::Bool(true));
                parts.extend(first_wrap(&offsets));
            }
        }
        Meaning::Offset { k, wrap } => {
            if offsets.len() > 1 {
                parts.push(format!(
                    "Tomii 1.2 gave each of the {factor} instances one of the {} selected instances, instance i the \
                     i-th (offset {k})",
                    offsets.len()
                ));
            }
            match written {
                _ if offsets.len() > 1 => drop(out.insert("index".to_owned(), json!(k))),
                Json::Null => {}
                written => drop(out.insert("index".to_owned(), written)),
            }
            if wrap {
                out.insert("wrap".to_owned(), Json::Bool(true));
                parts.extend(first_wrap(&[k]));
            }
        }
        Meaning::All => {
            // A barrier without an index waits for every instance.
            if edge_kind != EdgeKind::Barrier {
                out.insert("index".to_owned(), json!("all"));
            }
            parts.push(format!(
                "Tomii 1.2 made every instance wait for all {pred_factor} instance(s) of {name:?}{}",
                if edge_kind == EdgeKind::Res { "" } else { " (the edge passes no value)" }
            ));
        }
        Meaning::Absolute { lo, hi } => {
            out.insert("index".to_owned(), if hi == lo + 1 { json!(lo) } else { json!(format!("{lo}-{hi}")) });
            out.insert("absolute".to_owned(), Json::Bool(true));
            parts.push(format!("Tomii 1.2 made every instance wait for instances {lo}..={} of {name:?}", hi - 1));
        }
    }
    let note = (!parts.is_empty()).then(|| {
        let shown = pred.get("indexes").map_or_else(|| "no indexes".to_owned(), |i| format!("indexes {}", show(i)));
        let written = super::super::write::flat(&Json::Object(out.clone()));
        format!(
            "reads {name:?} with {shown}: {}; in the current format: \"predecessor\": {written}",
            parts.join("; and ")
        )
    });
    Ok(Translated { pred: Json::Object(out), note })
}

/// A 1.2 `indexes` string.
pub(super) fn indexes(json: Option<&Json>, known: &Known<'_>) -> Result<Indexes, String> {
    let text = match json {
        None | Some(Json::Null) => return Ok(Indexes::Default),
        Some(Json::String(text)) if text.trim().is_empty() => return Ok(Indexes::Default),
        Some(Json::String(text)) => text.trim(),
        // An integer offset, as a builder may have written it.
        Some(Json::Number(n)) if n.as_i64().is_some() => {
            let k = n.as_i64().unwrap_or(0);
            return Ok(Indexes::Offsets(vec![k], json!(k)));
        }
        Some(other) => return Err(format!(r#"indexes {} is not a string such as "0", "0,2,4" or "0-4""#, show(other))),
    };
    if text == "all" {
        return Ok(Indexes::All);
    }
    if let Ok(k) = text.parse::<i64>() {
        return Ok(Indexes::Offsets(vec![k], json!(k)));
    }
    if text.contains(',') {
        let offsets = text.split(',').map(|k| k.trim().parse::<i64>());
        let offsets = offsets.collect::<Result<Vec<_>, _>>().map_err(|_| {
            format!("indexes {text:?} is not a list of integer offsets; a list \"a,b,c\" holds integers only")
        })?;
        return Ok(Indexes::Offsets(offsets.clone(), json!(offsets)));
    }
    if known.consts.contains_key(text) {
        let k = bound(text, known)?;
        return Ok(Indexes::Offsets(vec![k], Json::String(text.to_owned())));
    }
    range(text, known)
}

/// `"a-b"`: each end a non-negative integer or an integer initialization's name (a name may hold
/// `-`: the first split with two valid ends is used, as the current format does).
fn range(text: &str, known: &Known<'_>) -> Result<Indexes, String> {
    let mut first_error = None;
    for (at, _) in text.match_indices('-') {
        let (left, right) = (text[..at].trim(), text[at + 1..].trim());
        if left.is_empty() || right.is_empty() {
            continue;
        }
        match (end(left, known), end(right, known)) {
            (Ok((lo, _)), Ok((hi, literal))) => {
                // A literal end was inclusive in 1.2, a name end exclusive.
                let hi = if literal { hi + 1 } else { hi };
                if hi <= lo {
                    return Err(format!("indexes {text:?} selects nothing; write \"a-b\" with a below b"));
                }
                let right = if literal { hi.to_string() } else { right.to_owned() };
                return Ok(Indexes::Range { lo, hi, text: format!("{left}-{right}"), inclusive: literal });
            }
            (Err(e), _) | (_, Err(e)) => first_error = first_error.or(Some(e)),
        }
    }
    Err(first_error.unwrap_or_else(|| {
        format!(r#"indexes {text:?} is not an offset "k", a list "a,b,c", a range "a-b" or an initialization's name"#)
    }))
}

/// A range end: its value, and whether it was written as a literal.
fn end(text: &str, known: &Known<'_>) -> Result<(i64, bool), String> {
    match text.parse::<u32>() {
        Ok(v) => Ok((i64::from(v), true)),
        Err(_) => bound(text, known).map(|v| (v, false)),
    }
}

/// The value of the constant initialization `name`: a non-negative integer.
fn bound(name: &str, known: &Known<'_>) -> Result<i64, String> {
    let literal = known.consts.get(name).ok_or_else(|| {
        format!(
            "{name:?} in indexes is neither an integer nor a constant initialization; define it in \"initializations\""
        )
    })?;
    literal.as_u64().and_then(|v| i64::try_from(v).ok()).ok_or_else(|| {
        format!("initialization {name:?} in indexes holds a {}, not a non-negative integer", literal.type_name())
    })
}

/// `group_by`: a positive integer, a string holding one, or an integer initialization's name.
pub(super) fn group_by_value(json: &Json, known: &Known<'_>) -> Result<u64, String> {
    let value = match json {
        Json::Number(n) => n.as_u64(),
        Json::String(text) => match text.trim().parse::<u64>() {
            Ok(v) => Some(v),
            Err(_) => Some(bound(text.trim(), known).map_err(|e| format!("group_by: {e}"))? as u64),
        },
        _ => None,
    };
    value.filter(|&g| g >= 1 && g <= u64::from(u32::MAX)).ok_or_else(|| {
        format!("group_by {} is not a positive integer or the name of an initialization holding one", show(json))
    })
}
