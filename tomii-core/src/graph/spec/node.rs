//! A node and its fields: factor, priority, workers, loop, condition and group size.

use std::borrow::Cow;
use std::ops::Range;

use serde_json::{Map, Value as Json};

use super::arg::{arg_list, args_into};
use super::fields::{check_fields, literal, name_ref};
use super::{ArgSpec, CmpOp, ConditionSpec, FactorSpec, NodeSpec};
use crate::graph::error::{ArgGroup, Issue, Place, invalid, quote};
use crate::graph::literal::Literal;
use crate::graph::typed::show;

const NODE_FIELDS: &[&str] =
    &["name", "function", "factor", "args", "priority", "use_workers", "loop", "loop_args", "condition", "group_size"];
const LOOP_FIELDS: &[&str] = &["name", "factor"];
const CONDITION_FIELDS: &[&str] = &["operation", "value", "value_type", "function", "func", "args"];

pub(super) fn node<'a>(json: &'a Json, position: usize, pool: &mut Vec<ArgSpec<'a>>) -> Result<NodeSpec<'a>, Issue> {
    let Json::Object(object) = json else {
        return invalid(format!(r#"nodes[{position}] must be an object {{"name": ..., "function": ...}}"#));
    };
    let name = name_ref(object, "name", Place::NodeAt(position), "give every node a unique name")?;
    let at = Place::Node(name);
    check_fields(object, NODE_FIELDS, &[], at)?;
    let function = name_ref(object, "function", at, "name the kernel this node runs")?;
    let args = args_into(object.get("args"), "args", name, ArgGroup::Kernel, pool)?;
    let loop_args = args_into(object.get("loop_args"), "loop_args", name, ArgGroup::Loop, pool)?;
    let fields = NodeFields {
        factor: object.get("factor"),
        priority: object.get("priority"),
        use_workers: object.get("use_workers"),
        loop_: object.get("loop"),
        group_size: object.get("group_size"),
    };
    let condition = |name: &str| condition(object.get("condition"), name);
    node_spec(Cow::Borrowed(name), Cow::Borrowed(function), args, loop_args, fields, condition)
}

/// The fields of a node besides its name, function and argument lists, as written.
pub(crate) struct NodeFields<'j> {
    pub factor: Option<&'j Json>,
    pub priority: Option<&'j Json>,
    pub use_workers: Option<&'j Json>,
    pub loop_: Option<&'j Json>,
    pub group_size: Option<&'j Json>,
}

/// A node from its parts, read by either path (`node` here, `typed_spec`); `condition` reads
/// its condition, given the node's name.
pub(crate) fn node_spec<'a>(
    name: Cow<'a, str>,
    function: Cow<'a, str>,
    args: Range<usize>,
    loop_args: Range<usize>,
    fields: NodeFields<'_>,
    condition: impl FnOnce(&str) -> Result<Option<ConditionSpec<'a>>, Issue>,
) -> Result<NodeSpec<'a>, Issue> {
    let at = Place::Node(&name);
    let iterations = loop_spec(fields.loop_, at)?;
    if iterations.is_none() && !loop_args.is_empty() {
        return invalid(format!(r#"{at}: "loop_args" without a "loop"; add "loop": {{"name": ..., "factor": N}}"#));
    }
    Ok(NodeSpec {
        factor: factor(fields.factor, at)?,
        priority: priority(fields.priority, at)?,
        use_workers: use_workers(fields.use_workers, at)?,
        condition: condition(&name)?.map(Box::new),
        group_size: group_size(fields.group_size, at)?,
        iterations,
        loop_args,
        name,
        input: false,
        function,
        args,
    })
}

/// `group_size`: a positive integer; 1 (or absent) runs every instance as its own task.
pub(crate) fn group_size(json: Option<&Json>, at: Place<'_>) -> Result<Option<u32>, Issue> {
    match json {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Number(n)) => match n.as_u64().filter(|&g| g >= 1).and_then(|g| u32::try_from(g).ok()) {
            Some(g) => Ok(Some(g)),
            None => invalid(format!("{at}: group_size {n} is not a positive integer")),
        },
        Some(other) => invalid(format!(
            "{at}: group_size must be a positive integer (or name a computed initialization), got {}",
            show(other)
        )),
    }
}

/// `"loop": {"name": NAME, "factor": N | VAR}`: the number of iterations per instance.
pub(crate) fn loop_spec(json: Option<&Json>, at: Place<'_>) -> Result<Option<FactorSpec>, Issue> {
    let object = match json {
        None | Some(Json::Null) => return Ok(None),
        Some(Json::Object(object)) if object.is_empty() => return Ok(None),
        Some(Json::Object(object)) => object,
        Some(other) => {
            return invalid(format!(r#"{at}: "loop" must be {{"name": ..., "factor": N}}, got {}"#, show(other)));
        }
    };
    check_fields(object, LOOP_FIELDS, &[], at)?;
    match object.get("factor") {
        Some(Json::Number(n)) if n.as_u64() == Some(0) => {
            invalid(format!("{at}: loop factor is 0; a loop runs at least one iteration (remove the loop instead)"))
        }
        None | Some(Json::Null) => invalid(format!(r#"{at}: "loop" needs a "factor": the number of iterations"#)),
        factor_json => factor(factor_json, at).map(Some),
    }
}

/// `"condition": {"operation": OP, "value": V, "value_type": T, "function": F, "args": [...]}`.
fn condition<'a>(json: Option<&'a Json>, node: &str) -> Result<Option<ConditionSpec<'a>>, Issue> {
    let at = Place::Node(node);
    let object = match json {
        None | Some(Json::Null) => return Ok(None),
        Some(Json::Object(object)) if object.is_empty() => return Ok(None),
        Some(Json::Object(object)) => object,
        Some(other) => return invalid(format!(r#"{at}: "condition" must be an object, got {}"#, show(other))),
    };
    check_fields(object, CONDITION_FIELDS, &[], at)?;
    let op_name = object.get("operation").and_then(Json::as_str).unwrap_or_default();
    let names: Vec<&str> = CmpOp::ALL.iter().map(|(name, _)| *name).collect();
    let Some(&(_, op)) = CmpOp::ALL.iter().find(|(name, _)| *name == op_name) else {
        return invalid(format!(
            "{at}: condition operation {} is not one of {}",
            show(object.get("operation").unwrap_or(&Json::Null)),
            names.join(", ")
        ));
    };
    let function = match (object.get("function"), object.get("func")) {
        (Some(Json::String(f)), _) | (None, Some(Json::String(f))) if !f.is_empty() => f.clone(),
        _ => return invalid(format!(r#"{at}: the condition needs "function": the kernel whose result is compared"#)),
    };
    let value = condition_value(object, at)?;
    let args = arg_list(object.get("args"), "condition.args", node, ArgGroup::Condition)?;
    Ok(Some(ConditionSpec { op, value, function, args }))
}

/// The condition's `value`, typed by `value_type` when given (else inferred like a plain literal).
fn condition_value(object: &Map<String, Json>, at: Place<'_>) -> Result<Literal, Issue> {
    let value = object.get("value").ok_or_else(|| {
        Issue::Invalid(format!(r#"{at}: the condition needs "value": what the function's result is compared with"#))
    })?;
    let typed = match object.get("value_type") {
        None | Some(Json::Null) => value.clone(),
        Some(ty) => serde_json::json!({"type": ty, "value": value}),
    };
    literal(&typed).map_err(|e| Issue::Invalid(format!("{at}: condition value: {e}")))
}

pub(crate) fn factor(json: Option<&Json>, at: Place<'_>) -> Result<FactorSpec, Issue> {
    let bad = |what: String| {
        invalid(format!("{at}: factor {what}; write a positive integer or the name of an initialization holding one"))
    };
    match json {
        None | Some(Json::Null) => Ok(FactorSpec::Count(1)),
        Some(Json::String(name)) if !name.is_empty() => Ok(FactorSpec::Var(name.clone())),
        Some(Json::Number(n)) => match n.as_u64() {
            Some(0) => invalid(format!("{at}: factor is 0; a node needs at least one instance")),
            Some(count) => Ok(FactorSpec::Count(count)),
            None => bad(format!("{n} is not a positive integer")),
        },
        Some(other) => bad(format!("must be a number or a name, got {}", show(other))),
    }
}

pub(crate) fn priority(json: Option<&Json>, at: Place<'_>) -> Result<i32, Issue> {
    let level = match json {
        None | Some(Json::Null) => Some(0),
        Some(Json::String(level)) => match level.as_str() {
            "high" => Some(1),
            "normal" => Some(0),
            "low" => Some(-1),
            _ => None,
        },
        Some(Json::Number(n)) => n.as_i64().and_then(|p| i32::try_from(p).ok()),
        Some(_) => None,
    };
    level.ok_or_else(|| {
        Issue::Invalid(format!(
            r#"{at}: priority {} is not valid; write "high", "normal", "low" or an integer (i32)"#,
            json.map_or_else(String::new, show)
        ))
    })
}

/// `"lo-hi"` (inclusive) or `"k"` (or the integer k), stored half-open.
pub(crate) fn use_workers(json: Option<&Json>, at: Place<'_>) -> Result<Option<(u32, u32)>, Issue> {
    let text = match json {
        None | Some(Json::Null) => return Ok(None),
        Some(Json::String(text)) => text.trim().to_owned(),
        Some(Json::Number(n)) => n.to_string(),
        Some(other) => return bad_workers(at, &show(other)),
    };
    let (lo, hi) = text.split_once('-').unwrap_or((&text, &text));
    match (lo.trim().parse::<u32>(), hi.trim().parse::<u32>()) {
        (Ok(lo), Ok(hi)) if lo <= hi && hi < u32::MAX => Ok(Some((lo, hi + 1))),
        _ => bad_workers(at, &quote(&text)),
    }
}

fn bad_workers<T>(at: Place<'_>, got: &str) -> Result<T, Issue> {
    invalid(format!(
        r#"{at}: use_workers {got} is not a worker range; write "lo-hi" with lo <= hi (inclusive, e.g. "0-3") or one worker "k""#
    ))
}
