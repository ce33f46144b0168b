//! Writes a graph's JSON for people to read (`tomii convert`): fields in the order README.md lists
//! them (a node's name first, its arguments last), and every object or list that fits on a line
//! kept on one, as the example graphs are written.
//!
//! Changes only layout and field order, never a value: the text parses back to the same JSON.

use serde_json::Value as Json;

/// Fields in the order they are written; others follow, in alphabetical order.
const ORDER: &[&str] = &[
    "type",
    "name",
    "operation",
    "value",
    "value_type",
    "function",
    "func",
    "factor",
    "predecessor",
    "index",
    "group_by",
    "size",
    "from",
    "shared",
    "take",
    "wrap",
    "args",
    "loop",
    "loop_args",
    "condition",
    "priority",
    "use_workers",
    "group_size",
    "initializations",
    "inputs",
    "nodes",
    "post_nodes",
    "network_config",
];

/// The widest line an object or list is kept on.
const WIDTH: usize = 100;

/// `json` as indented text, ending with a newline.
pub(crate) fn pretty(json: &Json) -> String {
    let mut out = String::new();
    write(json, 0, &mut out);
    out.push('\n');
    out
}

fn write(json: &Json, indent: usize, out: &mut String) {
    let flat = flat(json);
    let (open, close, items): (char, char, Vec<(Option<&str>, &Json)>) = match json {
        _ if indent + flat.len() <= WIDTH => return out.push_str(&flat),
        Json::Array(items) => ('[', ']', items.iter().map(|item| (None, item)).collect()),
        Json::Object(_) => ('{', '}', fields(json).into_iter().map(|(k, v)| (Some(k), v)).collect()),
        _ => return out.push_str(&flat),
    };
    let pad = " ".repeat(indent + 2);
    out.push(open);
    for (k, (key, value)) in items.iter().enumerate() {
        out.push('\n');
        out.push_str(&pad);
        if let Some(key) = key {
            out.push_str(&Json::String((*key).to_owned()).to_string());
            out.push_str(": ");
        }
        write(value, indent + 2, out);
        if k + 1 < items.len() {
            out.push(',');
        }
    }
    out.push('\n');
    out.push_str(&" ".repeat(indent));
    out.push(close);
}

/// `json` on one line, fields in order, a space after each `,` and `:`.
pub(crate) fn flat(json: &Json) -> String {
    match json {
        Json::Array(items) => format!("[{}]", items.iter().map(flat).collect::<Vec<_>>().join(", ")),
        Json::Object(_) => {
            let fields: Vec<String> =
                fields(json).into_iter().map(|(k, v)| format!("{}: {}", Json::String(k.to_owned()), flat(v))).collect();
            format!("{{{}}}", fields.join(", "))
        }
        scalar => scalar.to_string(),
    }
}

/// The fields of an object in writing order.
fn fields(json: &Json) -> Vec<(&str, &Json)> {
    let Json::Object(object) = json else { return Vec::new() };
    let rank = |key: &str| ORDER.iter().position(|k| *k == key).unwrap_or(ORDER.len());
    let mut fields: Vec<(&str, &Json)> = object.iter().map(|(k, v)| (k.as_str(), v)).collect();
    fields.sort_by(|a, b| rank(a.0).cmp(&rank(b.0)).then(a.0.cmp(b.0)));
    fields
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::pretty;

    #[test]
    fn the_text_parses_back_to_the_same_json() {
        let graph = json!({"nodes": [{"args": [{"type": "f64", "value": 0.1}, "a\"b"], "name": "n", "function": "f",
            "factor": 3}], "initializations": [{"value": u64::MAX, "name": "big"}]});
        let text = pretty(&graph);
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), graph);
        assert!(text.find("\"initializations\"") < text.find("\"nodes\""), "{text}");
        assert!(text.contains(r#"{"name": "n", "function": "f", "factor": 3, "args": ["#), "{text}");
    }
}
