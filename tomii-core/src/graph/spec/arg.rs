//! A node's arguments: literals, `$ref`, `$index`, `$workers` and the edges `$res`, `$dep` and
//! `$barrier` with their predecessor's selection.

use std::borrow::Cow;
use std::ops::Range;

use serde_json::Value as Json;

use super::fields::{check_fields, dollar_type, literal, name_field, name_ref};
use super::{ArgSpec, EdgeKind, EdgeSpec, Groups, IndexSpec};
use crate::graph::error::{ArgGroup, Issue, Place, invalid, quote};
use crate::graph::typed::show;

const EDGE_FIELDS: &[&str] = &["type", "predecessor"];
const PRED_FIELDS: &[&str] = &["name", "index", "group_by", "wrap", "absolute", "rule"];
const REF_FIELDS: &[&str] = &["type", "name"];
/// Fields of `$index` and `$workers`.
const PLAIN_FIELDS: &[&str] = &["type"];

/// A list of arguments (a condition's `args`, `index_function`'s); absent or null is empty.
pub(super) fn arg_list<'a>(
    json: Option<&'a Json>,
    field: &str,
    node: &str,
    group: ArgGroup,
) -> Result<Vec<ArgSpec<'a>>, Issue> {
    let mut list = Vec::new();
    args_into(json, field, node, group, &mut list)?;
    Ok(list)
}

/// A list of arguments appended to `pool`: their range there.
pub(super) fn args_into<'a>(
    json: Option<&'a Json>,
    field: &str,
    node: &str,
    group: ArgGroup,
    pool: &mut Vec<ArgSpec<'a>>,
) -> Result<Range<usize>, Issue> {
    let start = pool.len();
    match json {
        None | Some(Json::Null) => {}
        Some(Json::Array(items)) => {
            for (k, item) in items.iter().enumerate() {
                pool.push(arg(item, node, group, k)?);
            }
        }
        Some(other) => {
            return invalid(format!(r#"{}: "{field}" must be a list, got {}"#, Place::Node(node), show(other)));
        }
    }
    Ok(start..pool.len())
}

/// Argument `k` of node `node`.
pub(super) fn arg<'a>(json: &'a Json, node: &str, group: ArgGroup, k: usize) -> Result<ArgSpec<'a>, Issue> {
    let at = Place::Arg(node, group, k);
    let Some(kind) = dollar_type(json) else {
        return literal(json).map(ArgSpec::Literal).map_err(|e| Issue::Invalid(format!("{at}: {e}")));
    };
    let object = json.as_object().ok_or_else(|| Issue::Invalid(format!("{at}: internal: not an object")))?;
    let kind = match kind {
        "$ref" => {
            check_fields(object, REF_FIELDS, &[], at)?;
            return name_field(object, "name", at, "name the initialization to pass").map(ArgSpec::Ref);
        }
        "$index" | "$workers" => {
            check_fields(object, PLAIN_FIELDS, &[], at)?;
            return Ok(if kind == "$index" { ArgSpec::Index } else { ArgSpec::Workers });
        }
        "$res" => EdgeKind::Res,
        "$dep" => EdgeKind::Dep,
        "$barrier" => EdgeKind::Barrier,
        "$network" => {
            return invalid(format!(
                r#"{at}: "$network" is the name of the packets, not an argument type; read them with {{"type": "$res", "predecessor": {{"name": "$network", "index": ...}}}} and give the graph a "network_config""#
            ));
        }
        other => return Err(Issue::Unsupported(format!("{at}: argument type {}", quote(other)))),
    };
    check_fields(object, EDGE_FIELDS, &[], at)?;
    let pred_at = Place::Pred(node, group, k);
    let Some(Json::Object(pred)) = object.get("predecessor") else {
        return invalid(format!(r#"{at}: a {} argument needs "predecessor": {{"name": NODE}}"#, kind.name()));
    };
    check_fields(pred, PRED_FIELDS, &[], pred_at)?;
    let pred_name = Cow::Borrowed(name_ref(pred, "name", pred_at, "name the node to read from")?);
    let fields = ["index", "group_by", "wrap", "absolute", "rule"].map(|field| pred.get(field));
    edge(kind, pred_name, fields, at, pred_at).map(ArgSpec::Edge)
}

/// An edge of `kind` from `pred_name` with the predecessor's `[index, group_by, wrap, absolute,
/// rule]` as written;
/// `at` is the argument's place, `pred_at` its predecessor's.
pub(crate) fn edge<'a>(
    kind: EdgeKind,
    pred_name: Cow<'a, str>,
    [index_json, group_by, wrap, absolute, rule]: [Option<&Json>; 5],
    at: Place<'_>,
    pred_at: Place<'_>,
) -> Result<EdgeSpec<'a>, Issue> {
    let index = index(index_json, at)?;
    let group_by = match group_by {
        None | Some(Json::Null) => None,
        Some(json) => Some(groups(json, pred_at)?),
    };
    let wrap = match wrap {
        None | Some(Json::Null) => false,
        Some(Json::Bool(wrap)) => *wrap,
        Some(other) => return invalid(format!("{pred_at}: wrap must be true or false, got {}", show(other))),
    };
    let absolute = match absolute {
        None | Some(Json::Null) => false,
        Some(Json::Bool(absolute)) => *absolute,
        Some(other) => return invalid(format!("{pred_at}: absolute must be true or false, got {}", show(other))),
    };
    let rule = match rule {
        None | Some(Json::Null) => false,
        Some(Json::String(rule)) if rule == "tomii-1.2" => true,
        Some(other) => {
            return invalid(format!(
                r#"{pred_at}: rule {} is not a rule; the one rule is "tomii-1.2" (the index means what Tomii 1.2 made of it)"#,
                show(other)
            ));
        }
    };
    let grouped_range = rule && matches!(index, IndexSpec::Text(_));
    if rule && group_by.is_some_and(|g| !grouped_range || !g.is_plain()) {
        return invalid(format!(
            r#"{pred_at}: "rule": "tomii-1.2" with group_by is Tomii 1.2's grouped range: give the range "a-b" as the index and group_by as an integer"#
        ));
    }
    if group_by.is_some() && !rule && (wrap || absolute || !matches!(index, IndexSpec::Default)) {
        return invalid(format!(
            "{pred_at}: group_by selects the instances itself; give either group_by or an index (with wrap), not both"
        ));
    }
    if absolute && wrap {
        return invalid(format!("{pred_at}: absolute instances do not wrap; give absolute or wrap, not both"));
    }
    if rule && (absolute || wrap) {
        return invalid(format!(
            r#"{pred_at}: "rule": "tomii-1.2" decides the selection itself; leave out absolute and wrap"#
        ));
    }
    Ok(EdgeSpec { kind, pred: pred_name, index, group_by, wrap, absolute, rule })
}

/// Fields of a `group_by` object.
const GROUP_FIELDS: &[&str] = &["size", "from", "shared", "take"];

/// `group_by`: a positive integer g, or `{"size": g, "from": a, "shared": e, "take": t}`.
fn groups(json: &Json, pred_at: Place<'_>) -> Result<Groups, Issue> {
    let count = |json: &Json, least: u64| json.as_u64().filter(|&v| v >= least && v <= u64::from(u32::MAX));
    if let Some(g) = count(json, 1) {
        return Ok(Groups::plain(g as u32));
    }
    let Json::Object(object) = json else {
        return invalid(format!(
            r#"{pred_at}: group_by {} is not a positive integer (or the name of a computed initialization) or {{"size": G, "from": A, "shared": E, "take": T}}"#,
            show(json)
        ));
    };
    check_fields(object, GROUP_FIELDS, &[], pred_at)?;
    let field = |name: &str, least: u64, default: Option<u32>| -> Result<u32, Issue> {
        match object.get(name) {
            None | Some(Json::Null) => default.ok_or_else(|| {
                Issue::Invalid(format!("{pred_at}: group_by needs \"size\": the instances of one group"))
            }),
            Some(value) => count(value, least).map(|v| v as u32).ok_or_else(|| {
                let what = if least == 0 { "a non-negative" } else { "a positive" };
                Issue::Invalid(format!("{pred_at}: group_by {name} {} is not {what} integer", show(value)))
            }),
        }
    };
    let size = field("size", 1, None)?;
    let groups = Groups {
        size,
        from: field("from", 0, Some(0))?,
        shared: field("shared", 1, Some(1))?,
        take: field("take", 1, Some(size))?,
    };
    if groups.take > groups.size {
        return invalid(format!(
            "{pred_at}: group_by take {} is more than the group's size {}; a group gives at most its own instances",
            groups.take, groups.size
        ));
    }
    Ok(groups)
}

fn index(json: Option<&Json>, at: Place<'_>) -> Result<IndexSpec, Issue> {
    let bad = |got: &Json| {
        invalid(format!(
            r#"{at}: index {} is not a selection; write an offset, a list of offsets, a range "a-b" or "all""#,
            show(got)
        ))
    };
    match json {
        None | Some(Json::Null) => Ok(IndexSpec::Default),
        Some(number @ Json::Number(n)) => match n.as_i64() {
            Some(k) => Ok(IndexSpec::Offset(k)),
            None => bad(number),
        },
        Some(Json::String(text)) => Ok(IndexSpec::Text(text.trim().to_owned())),
        Some(all @ Json::Array(items)) => {
            let offsets: Option<Vec<i64>> = items.iter().map(Json::as_i64).collect();
            match offsets {
                Some(offsets) if !offsets.is_empty() => Ok(IndexSpec::Offsets(offsets)),
                Some(_) => {
                    invalid(format!("{at}: index is an empty list, which selects nothing; list at least one offset"))
                }
                None => bad(all),
            }
        }
        Some(other) => bad(other),
    }
}
