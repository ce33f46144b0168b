//! `initializations`: named literals, and values a kernel computes when a run starts.

use serde_json::Value as Json;

use super::arg::arg;
use super::fields::{check_fields, dollar_type, literal, name_field};
use super::node::factor;
use super::{ArgSpec, InitSpec, InitValue};
use crate::graph::error::{ArgGroup, Issue, Place, invalid};
use crate::graph::typed::show;

const INIT_FIELDS: &[&str] = &["name", "value", "function", "func", "args", "factor"];

pub(crate) fn init(json: &Json, position: usize) -> Result<InitSpec<'_>, Issue> {
    let Json::Object(object) = json else {
        return invalid(format!(r#"initializations[{position}] must be an object {{"name": ..., "value": ...}}"#));
    };
    let name = name_field(object, "name", Place::InitAt(position), "give it a unique name")?;
    let at = Place::Init(&name);
    check_fields(object, INIT_FIELDS, &[], at)?;
    let function = match (object.get("function"), object.get("func")) {
        (Some(Json::String(f)), _) | (None, Some(Json::String(f))) if !f.is_empty() => Some(f.clone()),
        (None | Some(Json::Null), None | Some(Json::Null)) => None,
        _ => return invalid(format!(r#"{at}: "function" must be the name of a kernel"#)),
    };
    if let Some(function) = function {
        if object.get("value").is_some_and(|v| !v.is_null()) {
            return invalid(format!(r#"{at}: give either "value" or "function", not both"#));
        }
        let args = match object.get("args") {
            None | Some(Json::Null) => Vec::new(),
            Some(Json::Array(items)) => {
                items.iter().enumerate().map(|(k, item)| init_arg(item, &name, k)).collect::<Result<_, _>>()?
            }
            Some(other) => return invalid(format!(r#"{at}: "args" must be a list, got {}"#, show(other))),
        };
        let factor = factor(object.get("factor"), at)?;
        return Ok(InitSpec { name, value: InitValue::Computed { function, args, factor } });
    }
    if object.get("args").is_some_and(|v| !v.is_null()) || object.get("factor").is_some_and(|v| !v.is_null()) {
        return invalid(format!(r#"{at}: "args" and "factor" belong to a computed initialization; add "function""#));
    }
    let Some(value) = object.get("value") else {
        return invalid(format!(
            r#"{at}: "value" is missing; give it a value such as 4, or a "function" to compute it"#
        ));
    };
    literal_init(name, value)
}

/// The initialization `name` holding the literal `value`.
pub(crate) fn literal_init(name: String, value: &Json) -> Result<InitSpec<'static>, Issue> {
    let at = Place::Init(&name);
    if dollar_type(value).is_some() {
        return invalid(format!("{at}: the value must be a literal, not a {} argument", show(&value["type"])));
    }
    let value = literal(value).map_err(|e| Issue::Invalid(format!("{at}: {e}")))?;
    Ok(InitSpec { name, value: InitValue::Literal(value) })
}

/// Argument `k` of a computed initialization: a literal, `$ref`, `$index` or `$workers`.
fn init_arg<'a>(json: &'a Json, init: &str, k: usize) -> Result<ArgSpec<'a>, Issue> {
    let spec = arg(json, init, ArgGroup::Kernel, k).map_err(|issue| match issue {
        Issue::Invalid(text) => {
            Issue::Invalid(text.replacen(&format!("node {init:?}"), &format!("initialization {init:?}"), 1))
        }
        other => other,
    })?;
    if matches!(spec, ArgSpec::Edge(_)) {
        return invalid(format!(
            "{}: an initialization is computed before any frame, so it cannot read a node; pass literals, $ref, $index or $workers",
            Place::InitArg(init, k)
        ));
    }
    Ok(spec)
}
