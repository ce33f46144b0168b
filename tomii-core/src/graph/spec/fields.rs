//! The shape checks every reader of `spec` shares: lists, known and unsupported fields, names,
//! literals and `$` types.

use serde_json::{Map, Value as Json};

use crate::graph::error::{Issue, Place, invalid, quote};
use crate::graph::literal::Literal;
use crate::graph::typed::{self, show};

/// A top-level list; absent or null is empty unless `required`.
pub(super) fn list<'a>(json: Option<&'a Json>, field: &str, required: bool) -> Result<&'a [Json], Issue> {
    match json {
        Some(Json::Array(items)) => Ok(items),
        None | Some(Json::Null) if !required => Ok(&[]),
        None | Some(Json::Null) => invalid(format!("the graph has no {field:?} list; add one")),
        Some(other) => invalid(format!("{field:?} must be a list, got {}", show(other))),
    }
}

/// Rejects unknown fields and fields of the full format this runtime does not implement.
/// `at` is the object's place, e.g. `node "gen"`.
pub(super) fn check_fields(
    object: &Map<String, Json>,
    known: &[&str],
    unsupported: &[&str],
    at: Place<'_>,
) -> Result<(), Issue> {
    for (key, value) in object {
        if known.contains(&key.as_str()) {
            continue;
        }
        if unsupported.contains(&key.as_str()) {
            if is_empty(value) {
                continue;
            }
            let prefix = if let Place::Top = at { String::new() } else { format!("{at}: ") };
            return Err(Issue::Unsupported(format!("{prefix}{}", quote(key))));
        }
        let known: Vec<String> = known.iter().map(|k| quote(k)).collect();
        return invalid(format!("unknown field {} in {at}; the known fields are {}", quote(key), known.join(", ")));
    }
    Ok(())
}

/// Null, `[]`, `{}` and `""` count as absent.
pub(super) fn is_empty(value: &Json) -> bool {
    match value {
        Json::Null => true,
        Json::Array(items) => items.is_empty(),
        Json::Object(fields) => fields.is_empty(),
        Json::String(text) => text.is_empty(),
        _ => false,
    }
}

/// A required, non-empty string field of `object`.
pub(super) fn name_field(object: &Map<String, Json>, field: &str, at: Place<'_>, hint: &str) -> Result<String, Issue> {
    name_ref(object, field, at, hint).map(str::to_owned)
}

/// [`name_field`], borrowed from the JSON.
pub(super) fn name_ref<'a>(
    object: &'a Map<String, Json>,
    field: &str,
    at: Place<'_>,
    hint: &str,
) -> Result<&'a str, Issue> {
    match object.get(field) {
        Some(Json::String(text)) if !text.is_empty() => Ok(text),
        None | Some(Json::Null) => invalid(format!("{at}: {} is missing; {hint}", quote(field))),
        Some(other) => invalid(format!("{at}: {} must be a non-empty string, got {}", quote(field), show(other))),
    }
}

pub(crate) fn literal(json: &Json) -> Result<Literal, String> {
    match json {
        Json::Object(object) if object.contains_key("type") => typed::typed(object),
        _ => typed::plain(json),
    }
}

/// The `"type"` of an object whose type starts with `$` (a reference or an edge).
pub(super) fn dollar_type(json: &Json) -> Option<&str> {
    json.get("type").and_then(Json::as_str).filter(|ty| ty.starts_with('$'))
}
