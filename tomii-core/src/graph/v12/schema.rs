//! The JSON Schema (draft 2020-12) of a graph file as Tomii 1.2 wrote it (graph/README.md, "Tomii
//! 1.2 graph files"): `tomii schema --dialect tomii-1.2` prints it, so an editor can check an old file as it is. Every literal value is a
//! string; the front end (`mod.rs`) reads what the schema cannot express (a value that fits its
//! type, names, selections). `tests/schema.rs` validates every 1.2 file of the repository against
//! it and keeps it from accepting the current format's own forms.

use serde_json::{Value as Json, json};

use super::super::schema::{self as shared, closed_object, name, network_properties, type_names, with};

/// The JSON Schema of a Tomii 1.2 graph file.
pub fn schema() -> Json {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Tomii 1.2 graph",
        "description": "A graph file as Tomii 1.2 wrote it; this runtime reads it unchanged and `tomii convert` \
            rewrites it in the current format (tomii-core/src/graph/README.md, \"Tomii 1.2 graph files\").",
        "type": "object",
        "required": ["nodes"],
        "additionalProperties": false,
        "properties": {
            "initializations": {"type": ["array", "null"], "items": {"$ref": "#/$defs/initialization"}},
            "nodes": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/node"}},
            "post_nodes": {"type": ["array", "null"], "items": {"$ref": "#/$defs/node"}},
            "network_config": network_config()
        },
        "$defs": {
            "initialization": initialization(),
            "node": node(),
            "count": {
                "description": "A positive integer, a string holding one, or the name of an initialization; a \
                    node's factor may also be \"$workers\" (the run's worker count).",
                "anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "minLength": 1}, {"type": "null"}]
            },
            "arg": {
                "anyOf": [
                    {"$ref": "#/$defs/literal_arg"},
                    {"$ref": "#/$defs/ref"},
                    {"$ref": "#/$defs/context"},
                    {"$ref": "#/$defs/edge"}
                ]
            },
            "literal": literal(),
            "literal_arg": {
                "description": "A literal; the condition of its own is a legacy form this runtime leaves out.",
                "allOf": [{"$ref": "#/$defs/literal"}],
                "properties": {"type": true, "value": true, "condition": legacy_condition()},
                "unevaluatedProperties": false
            },
            "ref": with(
                closed_object(&["type", "value"], json!({"type": {"const": "$ref"}, "value": name()})),
                json!({
                    "description": "An initialization by name; \"$index\" is the instance's index, \"$workers\" \
                        the worker count."
                })
            ),
            "context": with(
                closed_object(&["type"], json!({"type": {"enum": ["$factor", "$worker"]}})),
                json!({"description": "Older spellings: $factor is the instance's index, $worker the worker count."})
            ),
            "edge": edge()
        }
    })
}

fn initialization() -> Json {
    let properties = json!({
        "name": name(),
        "function": {"type": ["string", "null"]},
        "func": {"type": ["string", "null"]},
        "args": {"type": ["array", "null"], "items": {"$ref": "#/$defs/arg"}},
        "factor": {"$ref": "#/$defs/count"}
    });
    let constant = json!({"type": "array", "minItems": 1, "maxItems": 1, "items": {"$ref": "#/$defs/literal"}});
    with(
        closed_object(&["name"], properties),
        json!({
            "description": "A constant {\"name\", \"args\": [one typed value]}, or computed {\"name\", \
                \"function\", \"args\", \"factor\"}.",
            "anyOf": [
                {"required": ["function"]},
                {"required": ["func"]},
                {"required": ["args"], "not": {"required": ["factor"]}, "properties": {"args": constant}}
            ]
        }),
    )
}

fn node() -> Json {
    let args = json!({"type": ["array", "null"], "items": {"$ref": "#/$defs/arg"}});
    let properties = json!({
        "name": name(),
        "function": name(),
        "factor": {"$ref": "#/$defs/count"},
        "args": args,
        "priority": {"enum": ["high", "normal", "low", null]},
        "use_workers": {
            "description": "\"k\" or \"a-b\" (inclusive).",
            "anyOf": [{"type": "string", "pattern": r"^\s*[0-9]+\s*(-\s*[0-9]+\s*)?$"}, {"type": "null"}]
        },
        "group_size": {"$ref": "#/$defs/count"},
        "condition": {
            "type": ["object", "null"],
            "required": ["operation", "value", "value_type"],
            "additionalProperties": false,
            "properties": {
                "operation": {"enum": ["Eq", "Neq", "Gt", "Lt"]},
                "value": value(),
                "value_type": type_name(),
                "function": {"type": "string", "minLength": 1},
                "func": {"type": "string", "minLength": 1},
                "args": args
            }
        },
        "loop": {
            "type": ["object", "null"],
            "additionalProperties": false,
            "properties": {"name": {"type": "string"}, "factor": {"$ref": "#/$defs/count"}}
        },
        "loop_args": args
    });
    closed_object(&["name", "function"], properties)
}

fn edge() -> Json {
    let selection = json!({
        "indexes": {
            "description": "\"k\" (an offset or a name), \"a,b,c\", or \"a-b\" (a literal end inclusive, a \
                name end exclusive); offsets taken modulo the predecessor's factor.",
            "type": ["string", "null"]
        },
        "group_by": {
            "description": "With indexes: the selected instances split into groups of this many, shared evenly by \
                the node's instances.",
            "$ref": "#/$defs/count"
        }
    });
    shared::edge(
        "$res passes the selected instances' results; $dep and $barrier only order. The virtual predecessor \
            \"$network\" reads packets.",
        selection,
        json!({}),
    )
}

/// `{"type": T, "value": "..."}`: T one of the scalar types or `Vec<T>`.
fn literal() -> Json {
    json!({
        "type": "object",
        "required": ["type", "value"],
        "properties": {"type": type_name(), "value": value()}
    })
}

/// A 1.2 value: a string (a `Vec<T>` a comma list), or a complex as `{"re", "im"}`.
fn value() -> Json {
    let part = json!({"type": ["string", "number"]});
    json!({
        "anyOf": [
            {"type": "string"},
            closed_object(&["re", "im"], json!({"re": part, "im": part}))
        ]
    })
}

fn type_name() -> Json {
    json!({"enum": type_names()})
}

fn legacy_condition() -> Json {
    json!({
        "type": ["object", "null"],
        "additionalProperties": false,
        "properties": {
            "operation": {"enum": ["Eq", "Neq", "Gt", "Lt"]},
            "value": value(),
            "value_type": type_name()
        }
    })
}

fn network_config() -> Json {
    let number = json!({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "minLength": 1}]});
    json!({
        "description": "Frames made of packets (Tomii 1.2's fields; frame_packets also spelled stream_packets). \
            Numbers may be strings or the names of initializations.",
        "type": ["object", "null"],
        "additionalProperties": false,
        "properties": network_properties(&number, number.clone(), json!(["object", "null"]))
    })
}
