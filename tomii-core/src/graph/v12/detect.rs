//! Which dialect a graph file is written in: the current format or Tomii 1.2's. Each dialect has
//! forms the other never writes (README.md, "Tomii 1.2 graph files"); a file that has forms of
//! both is refused, naming one of each, so a file is never read in a dialect it was not written in.
//!
//! Only looks at the JSON's shape; never fails on a malformed file (the reader reports that).

use serde_json::{Map, Value as Json};

use super::super::error::{Issue, quote};

/// The dialect of a graph file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dialect {
    /// The current format (README.md).
    #[default]
    Tomii,
    /// Tomii 1.2's graph JSON (README.md, "Tomii 1.2 graph files").
    Tomii12,
}

impl Dialect {
    /// The name the run report gives it (`graph_dialect`).
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Tomii => "tomii",
            Dialect::Tomii12 => "tomii-1.2",
        }
    }
}

/// The first form found of each dialect, with where it is.
#[derive(Default)]
struct Marks {
    v12: Option<String>,
    current: Option<String>,
}

impl Marks {
    fn v12(&mut self, at: &str, what: &str) {
        self.v12.get_or_insert_with(|| format!("{at}: {what}"));
    }
    fn current(&mut self, at: &str, what: &str) {
        self.current.get_or_insert_with(|| format!("{at}: {what}"));
    }
}

/// The dialect of the file `root`; a file with forms of both is an error naming one of each. A
/// file with forms of neither is read as the current format (README.md says why it means the same
/// in both).
pub(crate) fn detect(root: &Json) -> Result<Dialect, Issue> {
    let Json::Object(top) = root else { return Ok(Dialect::Tomii) };
    let mut marks = Marks::default();
    for field in ["name", "inputs"] {
        if top.get(field).is_some_and(|v| !v.is_null()) {
            marks.current(&format!("the top-level field {}", quote(field)), "Tomii 1.2 has no such field");
        }
    }
    for (k, init) in items(top.get("initializations")) {
        let at = format!("initialization {}", name_of(init, "initializations", k));
        let Json::Object(init) = init else { continue };
        let computed = ["function", "func"].iter().any(|f| init.get(*f).is_some_and(|v| !v.is_null()));
        if init.contains_key("value") {
            marks.current(&at, r#"a "value" (Tomii 1.2 writes a constant as "args")"#);
        } else if !computed && init.contains_key("args") {
            marks.v12(&at, r#"a constant written as "args" (the current format writes "value")"#);
        }
        args(init.get("args"), &at, &mut marks);
    }
    for (list, nodes) in [("nodes", top.get("nodes")), ("post_nodes", top.get("post_nodes"))] {
        for (k, node) in items(nodes) {
            node_marks(node, &format!("node {}", name_of(node, list, k)), &mut marks);
        }
    }
    if let Some(Json::Object(network)) = top.get("network_config") {
        args(network.get("index_function").and_then(|f| f.get("args")), "network_config", &mut marks);
    }
    match marks {
        Marks { v12: Some(old), current: Some(new) } => Err(Issue::Invalid(format!(
            "the file mixes two graph formats: {old} is Tomii 1.2's, {new} is the current format's; write the \
             whole file in one of them (`tomii convert` rewrites a Tomii 1.2 file in the current format)"
        ))),
        Marks { v12: Some(_), .. } => Ok(Dialect::Tomii12),
        _ => Ok(Dialect::Tomii),
    }
}

fn node_marks(node: &Json, at: &str, marks: &mut Marks) {
    let Json::Object(node) = node else { return };
    args(node.get("args"), at, marks);
    args(node.get("loop_args"), at, marks);
    if let Some(Json::Object(condition)) = node.get("condition") {
        condition_marks(condition, &format!("{at} condition"), marks);
        args(condition.get("args"), at, marks);
    }
}

fn condition_marks(condition: &Map<String, Json>, at: &str, marks: &mut Marks) {
    if let Some(op @ ("Ge" | "Le")) = condition.get("operation").and_then(Json::as_str) {
        marks.current(at, &format!("the operation {op} (Tomii 1.2 has none)"));
    }
    // Without a value_type, a string is a String in both.
    let ty = condition.get("value_type").and_then(Json::as_str).unwrap_or("String");
    match condition.get("value") {
        Some(Json::String(_)) if !text_is_neutral(ty) => {
            marks.v12(at, "a value written as a string (the current format writes a JSON value)");
        }
        Some(Json::Number(_) | Json::Bool(_) | Json::Array(_)) => {
            marks.current(at, "a value that is not a string (Tomii 1.2 writes every value as a string)");
        }
        _ => {}
    }
}

fn args(list: Option<&Json>, at: &str, marks: &mut Marks) {
    for (k, arg) in items(list) {
        arg_marks(arg, &format!("{at} argument {k}"), marks);
    }
}

fn arg_marks(arg: &Json, at: &str, marks: &mut Marks) {
    let Json::Object(arg) = arg else {
        marks.current(at, "a plain value (Tomii 1.2 writes every literal as {\"type\", \"value\"})");
        return;
    };
    if arg.get("condition").is_some_and(|c| !c.is_null()) {
        marks.v12(at, "a condition of its own (an argument-level condition)");
    }
    let ty = arg.get("type").and_then(Json::as_str).unwrap_or("");
    match ty {
        "$ref" if arg.contains_key("name") => marks.current(at, r#"a "$ref" with "name" (Tomii 1.2: "value")"#),
        "$ref" if arg.contains_key("value") => marks.v12(at, r#"a "$ref" with "value" (the current format: "name")"#),
        "$factor" | "$worker" => marks.v12(at, &format!("the argument type {ty}")),
        "$index" | "$workers" => marks.current(at, &format!("the argument type {ty} (Tomii 1.2: a \"$ref\" to it)")),
        "$res" | "$dep" | "$barrier" => {
            if let Some(Json::Object(pred)) = arg.get("predecessor") {
                pred_marks(pred, at, marks);
            }
        }
        _ if ty.starts_with('$') => {}
        _ => match arg.get("value") {
            Some(Json::String(_)) if !text_is_neutral(ty) => {
                marks.v12(at, &format!("a {ty} value written as a string"));
            }
            Some(Json::Object(_)) => marks.v12(at, "a complex value written as an object"),
            Some(Json::Number(_) | Json::Bool(_) | Json::Array(_)) => {
                marks.current(at, "a value that is not a string (Tomii 1.2 writes every value as a string)");
            }
            _ => {}
        },
    }
}

fn pred_marks(pred: &Map<String, Json>, at: &str, marks: &mut Marks) {
    if pred.contains_key("indexes") {
        marks.v12(at, r#"a predecessor's "indexes" (the current format: "index")"#);
    }
    for field in ["index", "wrap"] {
        if pred.contains_key(field) {
            marks.current(at, &format!("a predecessor's {} (Tomii 1.2 has \"indexes\")", quote(field)));
        }
    }
}

/// Types whose values both dialects write as the same string.
fn text_is_neutral(ty: &str) -> bool {
    matches!(ty.trim(), "String" | "char" | "i128" | "u128")
}

/// The items of a list field (none if it is not a list), with their positions.
fn items(list: Option<&Json>) -> impl Iterator<Item = (usize, &Json)> {
    list.and_then(Json::as_array).into_iter().flatten().enumerate()
}

/// `"name"` of an item, or `list[k]` when it has none.
fn name_of(item: &Json, list: &str, k: usize) -> String {
    match item.get("name").and_then(Json::as_str) {
        Some(name) => quote(name),
        None => format!("{list}[{k}]"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn dialect(graph: Json) -> Result<Dialect, String> {
        detect(&graph).map_err(|issue| format!("{issue:?}"))
    }

    #[test]
    fn each_dialect_is_known_by_its_own_forms() {
        let v12 = json!({"initializations": [{"name": "n", "args": [{"type": "usize", "value": "4"}]}],
                         "nodes": [{"name": "a", "function": "f", "factor": "n"}]});
        assert_eq!(dialect(v12), Ok(Dialect::Tomii12));
        let edge = json!({"nodes": [{"name": "a", "function": "f"},
            {"name": "b", "function": "f", "args": [{"type": "$res", "predecessor": {"name": "a", "indexes": "0"}}]}]});
        assert_eq!(dialect(edge), Ok(Dialect::Tomii12));
        let current = json!({"nodes": [{"name": "a", "function": "f", "args": [7, {"type": "u8", "value": 7}]}]});
        assert_eq!(dialect(current), Ok(Dialect::Tomii));
    }

    #[test]
    fn a_file_with_forms_of_neither_is_the_current_format() {
        let neutral = json!({"nodes": [{"name": "a", "function": "f", "args": [{"type": "String", "value": "x"}]}]});
        assert_eq!(dialect(neutral), Ok(Dialect::Tomii));
    }

    #[test]
    fn a_mix_is_refused_naming_one_form_of_each() {
        let mixed = json!({"initializations": [{"name": "n", "value": 4}],
            "nodes": [{"name": "a", "function": "f", "args": [{"type": "$ref", "value": "n"}]}]});
        let error = dialect(mixed).unwrap_err();
        assert!(error.contains(r#"node \"a\" argument 0"#) && error.contains(r#"initialization \"n\""#), "{error}");
        assert!(error.contains("tomii convert"), "{error}");
    }
}
