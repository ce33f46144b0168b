//! The JSON Schema (draft 2020-12) of the graph format described in `README.md` beside this file;
//! `tomii schema` prints it, so editors and graph builders can check a graph without the runtime.
//!
//! The schema describes the format, the parser is the final word: it also rejects what a schema
//! cannot express (unknown or duplicate names, cycles, selections outside a predecessor, an empty
//! range, an integer like `3.0`, a `network_config` without `start_port`). Must never drift from
//! `spec/`: `tests/schema.rs` validates every graph in the repository against it.

use serde_json::{Value as Json, json};

use super::literal::LiteralType;

/// The JSON Schema of a graph file.
pub fn schema() -> Json {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Tomii graph",
        "description": "A task graph replayed over many frames by the Tomii runtime (tomii-core/src/graph/README.md). \
            Fields marked 'not supported yet' belong to the full format; this runtime rejects them when non-empty.",
        "type": "object",
        "required": ["nodes"],
        "additionalProperties": false,
        "properties": {
            "name": {
                "type": ["string", "null"],
                "description": "The graph's name; default: the file stem of the source."
            },
            "initializations": {
                "type": ["array", "null"],
                "items": {"$ref": "#/$defs/initialization"},
                "description": "Named constants, usable as arguments ($ref), factors and index bounds."
            },
            "inputs": {
                "type": ["array", "null"],
                "items": closed_object(&["name"], json!({"name": name(), "factor": {"$ref": "#/$defs/factor"}})),
                "description": "Values each frame is given by its source (one per instance); nodes read them by name."
            },
            "nodes": {
                "type": "array",
                "minItems": 1,
                "items": {"$ref": "#/$defs/node"},
                "description": "The nodes; a node's id is its position in this list."
            },
            "post_nodes": {
                "type": ["array", "null"],
                "items": {"$ref": "#/$defs/node"},
                "description": "Nodes run once after the last frame, reading its results (regular nodes only)."
            },
            "network_config": {"$ref": "#/$defs/network_config"}
        },
        "$defs": defs()
    })
}

/// Every named part of the format.
fn defs() -> Json {
    json!({
        "initialization": initialization(),
        "node": node(),
        "factor": {
            "description": "Instances: a positive integer, or the name of an initialization holding one.",
            "anyOf": [
                {"type": "integer", "minimum": 1},
                {"type": "string", "minLength": 1},
                {"type": "null"}
            ]
        },
        "arg": {
            "description": "A kernel argument: a literal, a reference to an initialization, or an edge from a predecessor.",
            "anyOf": [
                {"$ref": "#/$defs/plain_literal"},
                {"$ref": "#/$defs/typed_literal"},
                {"$ref": "#/$defs/ref_arg"},
                {"$ref": "#/$defs/context_arg"},
                {"$ref": "#/$defs/edge_arg"}
            ]
        },
        "literal": {
            "anyOf": [{"$ref": "#/$defs/plain_literal"}, {"$ref": "#/$defs/typed_literal"}]
        },
        "plain_literal": {
            "description": "A plain value: non-negative integer = usize, negative integer = i64, \
                other number = f64, bool, string = String.",
            "type": ["number", "boolean", "string"]
        },
        "typed_literal": typed_literal(),
        "ref_arg": with(
            closed_object(&["type", "name"], json!({"type": {"const": "$ref"}, "name": name()})),
            json!({"description": "The value of an initialization, as one argument."})
        ),
        "context_arg": with(
            closed_object(&["type"], json!({"type": {"enum": ["$index", "$workers"]}})),
            json!({
                "description": "$index: the instance's index within its node; $workers: the run's number of \
                    workers. Both are passed as a usize."
            })
        ),
        "edge_arg": edge_arg(),
        "selection": {
            "description": "Predecessor instances relative to the successor's instance i: an offset, a list \
                of offsets, \"k\", \"VAR\", \"a-b\" (half-open) or \"all\"; absent or null: offset 0 \
                ($barrier: every instance).",
            "anyOf": [
                {"type": "integer"},
                {"type": "array", "minItems": 1, "items": {"type": "integer"}},
                {"type": "string"},
                {"type": "null"}
            ]
        },
        "network_config": network_config()
    })
}

fn initialization() -> Json {
    let properties = json!({
        "name": name(),
        "value": {"$ref": "#/$defs/literal"},
        "function": {"type": ["string", "null"], "description": "The kernel that computes the value."},
        "func": {"type": ["string", "null"], "description": "Another spelling of function."},
        "args": {
            "type": ["array", "null"],
            "items": {"$ref": "#/$defs/arg"},
            "description": "Literals, $ref (to initializations above), $index (the element) or $workers."
        },
        "factor": {"$ref": "#/$defs/factor", "description": "Elements: kernel calls, one per element."}
    });
    with(
        closed_object(&["name"], properties),
        json!({
            "description": "A named value: a literal {\"name\", \"value\"}, or computed when a run starts \
                {\"name\", \"function\", \"args\", \"factor\"} by calling the kernel once per element.",
            "anyOf": [{"required": ["value"]}, {"required": ["function"]}, {"required": ["func"]}]
        }),
    )
}

fn node() -> Json {
    let properties = json!({
        "name": {"type": "string", "minLength": 1, "description": "Unique among the nodes."},
        "function": {"type": "string", "minLength": 1, "description": "The kernel this node runs."},
        "factor": {"$ref": "#/$defs/factor"},
        "args": {"type": ["array", "null"], "items": {"$ref": "#/$defs/arg"}},
        "priority": {
            "description": "\"high\" = 1, \"normal\" = 0, \"low\" = -1, or any i32.",
            "anyOf": [
                {"enum": ["high", "normal", "low"]},
                {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX},
                {"type": "null"}
            ]
        },
        "use_workers": {
            "description": "Workers allowed to run this node: \"lo-hi\" (inclusive) or one worker \"k\" or k.",
            "anyOf": [
                {"type": "string", "pattern": r"^\s*[0-9]+\s*(-\s*[0-9]+\s*)?$"},
                {"type": "integer", "minimum": 0, "maximum": u32::MAX - 1},
                {"type": "null"}
            ]
        },
        "loop": {
            "description": "Call the kernel `factor` times per instance; each call after the first gets the \
                previous call's result in place of loop_args. An empty object is no loop.",
            "type": ["object", "null"],
            "additionalProperties": false,
            "properties": {"name": {"type": "string"}, "factor": {"$ref": "#/$defs/factor"}}
        },
        "loop_args": {
            "description": "Appended to args in the loop's first call (needs a loop).",
            "type": ["array", "null"],
            "items": {"$ref": "#/$defs/arg"}
        },
        "condition": {
            "description": "Run an instance only if function(args) <operation> value; a skipped instance \
                passes no value (NONE) to its successors. An empty object is no condition.",
            "type": ["object", "null"],
            "additionalProperties": false,
            "properties": {
                "operation": {"enum": ["Eq", "Neq", "Gt", "Ge", "Lt", "Le"]},
                "value": true,
                "value_type": {"type": "string"},
                "function": {"type": "string", "minLength": 1},
                "func": {"type": "string", "minLength": 1},
                "args": {"type": ["array", "null"], "items": {"$ref": "#/$defs/arg"}}
            }
        },
        "group_size": {
            "type": ["integer", "null"],
            "minimum": 1,
            "description": "Instances run by one task, in index order (the last group may be smaller)."
        }
    });
    closed_object(&["name", "function"], properties)
}

fn edge_arg() -> Json {
    let selection = json!({
        "index": {"$ref": "#/$defs/selection"},
        "group_by": {
            "description": "Instance i reads the predecessor's instances i*g .. i*g+g-1 (no index then); or groups \
                of size instances from `from`, group i/shared read by instance i, its first `take` instances.",
            "oneOf": [
                {"type": "integer", "minimum": 1},
                {"type": "null"},
                {
                    "type": "object",
                    "required": ["size"],
                    "additionalProperties": false,
                    "properties": {
                        "size": {"type": "integer", "minimum": 1},
                        "from": {"type": "integer", "minimum": 0},
                        "shared": {"type": "integer", "minimum": 1},
                        "take": {"type": "integer", "minimum": 1}
                    }
                }
            ]
        },
        "wrap": {
            "type": ["boolean", "null"],
            "description": "Offsets and ranges modulo the predecessor's factor (a ring)."
        },
        "absolute": {
            "type": ["boolean", "null"],
            "description": "The index names predecessor instances (k or \"a-b\"), the same for every successor instance."
        },
        "rule": {
            "enum": ["tomii-1.2", null],
            "description": "The index means what Tomii 1.2 made of it, decided with the factors when the graph compiles \
                (offsets modulo the factor; a barrier's offset: every instance, or the one instance a factor-1 \
                successor of a larger predecessor waited for). No wrap or absolute with it."
        }
    });
    edge(
        "An edge from a predecessor: $res passes the selected instances' results as arguments; $dep and \
            $barrier only order.",
        selection,
        json!({}),
    )
}

fn network_config() -> Json {
    let start_port = json!({
        "description": "Socket i binds start_port + i; 0: ports the system chooses.",
        "anyOf": [{"type": "integer", "minimum": 0, "maximum": 65535}, {"type": "string", "minLength": 1}]
    });
    json!({
        "description": "Frames made of packets from UDP or TCP sockets; nodes read them from the input \
            \"$network\" (README.md, \"Network sources\"). Numbers may be the names of initializations.",
        "type": ["object", "null"],
        "additionalProperties": false,
        "required": ["start_port", "packet_length"],
        "properties": network_properties(&json!({"$ref": "#/$defs/factor"}), start_port, json!("object"))
    })
}

/// `{"type": T, "value": V}`: the type names come from [`LiteralType::ALL`] (as the parser reads
/// them), each with the shape of its value.
fn typed_literal() -> Json {
    let mut cases = Vec::new();
    for ty in LiteralType::ALL {
        cases.push(case(ty.name(), value_schema(ty)));
        cases.push(case(&format!("Vec<{}>", ty.name()), json!({"type": "array", "items": value_schema(ty)})));
    }
    with(
        closed_object(&["type", "value"], json!({"type": {"enum": type_names()}, "value": true})),
        json!({
            "description": "A typed value; Vec<T> is a list of values of the scalar type T (no nesting).",
            "allOf": cases
        }),
    )
}

/// The value shape for type `name`, applied when `"type"` is `name`.
fn case(name: &str, value: Json) -> Json {
    json!({"if": {"properties": {"type": {"const": name}}}, "then": {"properties": {"value": value}}})
}

/// The JSON shape of a value of the scalar type `ty`.
fn value_schema(ty: LiteralType) -> Json {
    match ty {
        LiteralType::I8 => int_range(i8::MIN, i8::MAX),
        LiteralType::I16 => int_range(i16::MIN, i16::MAX),
        LiteralType::I32 => int_range(i32::MIN, i32::MAX),
        LiteralType::I64 | LiteralType::Isize => int_range(i64::MIN, i64::MAX),
        LiteralType::U8 => int_range(0, u8::MAX),
        LiteralType::U16 => int_range(0, u16::MAX),
        LiteralType::U32 => int_range(0, u32::MAX),
        LiteralType::U64 | LiteralType::Usize => int_range(0, u64::MAX),
        // Beyond 64 bits, a decimal string.
        LiteralType::I128 => json!({"anyOf": [int_range(i64::MIN, u64::MAX), decimal(r"[+-]?")]}),
        LiteralType::U128 => json!({"anyOf": [int_range(0, u64::MAX), decimal(r"\+?")]}),
        LiteralType::F32 | LiteralType::F64 => json!({"type": "number"}),
        LiteralType::Bool => json!({"type": "boolean"}),
        LiteralType::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
        LiteralType::Str => json!({"type": "string"}),
        LiteralType::C32 | LiteralType::C64 => {
            json!({"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2, "description": "[re, im]"})
        }
    }
}

fn int_range(min: impl Into<Json>, max: impl Into<Json>) -> Json {
    json!({"type": "integer", "minimum": min.into(), "maximum": max.into()})
}

/// A decimal integer as a string, with the given sign prefix.
fn decimal(sign: &str) -> Json {
    json!({"type": "string", "pattern": format!(r"^\s*{sign}[0-9]+\s*$")})
}

// What both dialects' schemas are made of (`v12/schema.rs` uses these too).

/// An object with these `properties` and no other, the `required` ones among them.
pub(super) fn closed_object(required: &[&str], properties: Json) -> Json {
    json!({"type": "object", "required": required, "additionalProperties": false, "properties": properties})
}

/// `schema` with the keys of `more` (an object) added.
pub(super) fn with(mut schema: Json, more: Json) -> Json {
    if let (Json::Object(keys), Json::Object(more)) = (&mut schema, more) {
        keys.extend(more);
    }
    schema
}

/// A name: a non-empty string.
pub(super) fn name() -> Json {
    json!({"type": "string", "minLength": 1})
}

/// The type names of the typed literals, in [`LiteralType::ALL`]'s order: each scalar type, then
/// its `Vec<T>`.
pub(super) fn type_names() -> Vec<Json> {
    let mut names = Vec::new();
    for ty in LiteralType::ALL {
        names.push(json!(ty.name()));
        names.push(json!(format!("Vec<{}>", ty.name())));
    }
    names
}

/// An edge argument, `{"type": "$res" | "$dep" | "$barrier", "predecessor": {"name", ...}}`: the
/// predecessor object holds its name and the dialect's `selection` properties, plus the keys of
/// `predecessor_more`.
pub(super) fn edge(description: &str, selection: Json, predecessor_more: Json) -> Json {
    let predecessor = with(closed_object(&["name"], with(json!({"name": name()}), selection)), predecessor_more);
    with(
        closed_object(
            &["type", "predecessor"],
            json!({"type": {"enum": ["$res", "$dep", "$barrier"]}, "predecessor": predecessor}),
        ),
        json!({"description": description}),
    )
}

/// The properties of a `network_config` block: its counts of the shape `count`, the dialect's
/// `start_port`, and an `index_function` whose object is of the JSON type `index_function_type`.
pub(super) fn network_properties(count: &Json, start_port: Json, index_function_type: Json) -> Json {
    let text = json!({"type": "string"});
    let index_function = with(
        closed_object(
            &["function"],
            json!({"function": text, "args": {"type": "array", "items": {"$ref": "#/$defs/arg"}}}),
        ),
        json!({"type": index_function_type}),
    );
    json!({
        "socket_type": {"enum": ["udp", "tcp", "UDP", "TCP"]},
        "num_sockets": count,
        "packet_length": count,
        "frame_packets": count,
        "stream_packets": count,
        "buffer_depth": count,
        "address": text,
        "start_port": start_port,
        "extract_packet_func": text,
        "id_function": text,
        "index_function": index_function
    })
}
