//! One test per error: each asserts that the one-line message names the node, argument or field
//! at fault (the helpers check the source prefix and the single line).

use serde_json::{Value as Json, json};

use super::{assert_mentions, error, error_text, nodes};
use crate::graph::{GraphError, load_file, parse_str};

fn one(node: Json) -> Json {
    nodes(json!([node]))
}

/// A graph of node "a" (factor 4) and node "b" (factor `factor`) with the given arguments.
fn pair(factor: u32, args: Json) -> Json {
    nodes(json!([
        {"name": "a", "function": "f", "factor": 4},
        {"name": "b", "function": "f", "factor": factor, "args": args},
    ]))
}

fn arg_error(arg: Json) -> String {
    error(one(json!({"name": "gen", "function": "f", "args": [arg]})))
}

#[test]
fn invalid_json() {
    assert_mentions(&error_text("{\"nodes\": [}"), &["not valid JSON", "line 1"]);
    assert_mentions(&error_text(""), &["not valid JSON"]);
}

#[test]
fn top_level_shape() {
    assert_mentions(&error(json!([1])), &["top level must be an object"]);
    assert_mentions(&error(json!({})), &[r#"no "nodes" list"#]);
    assert_mentions(&error(json!({"nodes": 3})), &[r#""nodes" must be a list"#]);
    assert_mentions(&error(json!({"nodes": [], "name": 1})), &[r#""name" must be a string"#]);
    assert_mentions(&error(json!({"nodes": [3]})), &["nodes[0] must be an object"]);
}

#[test]
fn no_nodes() {
    assert_mentions(&error(json!({"nodes": []})), &["the graph has no nodes"]);
}

#[test]
fn unknown_fields() {
    let top = error(json!({"nodes": [], "nodez": 1}));
    assert_mentions(&top, &[r#"unknown field "nodez""#, "top-level"]);
    let node = error(one(json!({"name": "x", "function": "f", "fator": 2})));
    assert_mentions(&node, &[r#"unknown field "fator" in node "x""#, r#""factor""#]);
    let pred = error(pair(1, json!([{"type": "$res", "predecessor": {"name": "a", "idx": 0}}])));
    assert_mentions(&pred, &[r#""idx""#, r#"predecessor of node "b" argument 0"#]);
    let edge = arg_error(json!({"type": "$dep", "predecessor": {"name": "a"}, "extra": 1}));
    assert_mentions(&edge, &[r#""extra""#, r#"node "gen" argument 0"#]);
    let reference = arg_error(json!({"type": "$ref", "name": "v", "value": 1}));
    assert_mentions(&reference, &[r#""value""#, r#"node "gen" argument 0"#]);
    let init = error(json!({"initializations": [{"name": "v", "value": 1, "vlaue": 2}], "nodes": []}));
    assert_mentions(&init, &[r#""vlaue""#, r#"initialization "v""#]);
    assert_mentions(&arg_error(json!({"type": "u8", "value": 1, "unit": "s"})), &[r#""unit""#, "argument 0"]);
}

#[test]
fn unsupported_features() {
    let message = error(one(json!({"name": "x", "function": "f", "group_size": 0})));
    assert_mentions(&message, &[r#"node "x": group_size 0 is not a positive integer"#]);
}

/// A graph reading packets, with `network_config` as given.
fn network(config: serde_json::Value) -> String {
    error(json!({
        "network_config": config,
        "nodes": [{"name": "x", "function": "f", "args": [{"type": "$res", "predecessor": {"name": "$network"}}]}]
    }))
}

#[test]
fn network_config_errors_name_the_field() {
    let ok = json!({"start_port": 9000, "packet_length": 64, "frame_packets": 4});
    let with = |key: &str, value: serde_json::Value| {
        let mut config = ok.clone();
        config[key] = value;
        network(config)
    };
    assert_mentions(&network(json!([{"name": "p"}])), &["network_config must be an object"]);
    assert_mentions(
        &network(json!({"packet_length": 64, "frame_packets": 4})),
        &["network_config", r#""start_port" is missing"#],
    );
    assert_mentions(&with("packet_length", json!(8)), &["packet_length 8", "16-byte packet header", "id_function"]);
    assert_mentions(&with("packet_length", json!(70000)), &["packet_length 70000", "65507"]);
    assert_mentions(&with("address", json!("example.org")), &[r#"address "example.org" is not an IP address"#]);
    assert_mentions(&with("socket_type", json!("sctp")), &[r#"socket_type "sctp""#]);
    let mut beyond = ok.clone();
    (beyond["start_port"], beyond["num_sockets"]) = (json!(65535), json!(2));
    assert_mentions(&network(beyond), &["ports 65535..65536 go beyond 65535"]);
    assert_mentions(&with("frame_packets", json!("n")), &[r#"factor "n" is not an initialization"#]);
    assert_mentions(&with("porrt", json!(1)), &[r#"unknown field "porrt" in network_config"#]);
    let both = with("stream_packets", json!(4));
    assert_mentions(&both, &[r#""frame_packets" or its other spelling "stream_packets""#]);
    let without = error(json!({"nodes": [{"name": "x", "function": "f",
        "args": [{"type": "$res", "predecessor": {"name": "$network"}}]}]}));
    assert_mentions(&without, &[r#"reads "$network""#, r#"no "network_config"; add one"#]);
    let as_type = arg_error(json!({"type": "$network", "port": 1}));
    assert_mentions(&as_type, &[r#""$network" is the name of the packets"#, r#""predecessor": {"name": "$network""#]);
}

#[test]
fn duplicate_names() {
    let message = error(nodes(json!([
        {"name": "a", "function": "f"}, {"name": "b", "function": "f"}, {"name": "a", "function": "f"},
    ])));
    assert_mentions(&message, &["nodes[0] and nodes[2]", r#"named "a""#]);
    let inits = json!({"initializations": [{"name": "v", "value": 1}, {"name": "v", "value": 2}],
                       "nodes": [{"name": "a", "function": "f"}]});
    assert_mentions(&error(inits), &["initializations[0] and initializations[1]", r#""v""#]);
}

#[test]
fn names_and_functions() {
    assert_mentions(&error(one(json!({"function": "f"}))), &[r#"nodes[0]: "name" is missing"#]);
    assert_mentions(&error(one(json!({"name": "x"}))), &[r#"node "x": "function" is missing"#]);
    assert_mentions(&error(one(json!({"name": "x", "function": ""}))), &[r#"node "x": "function" must be"#]);
    let multi = error(one(json!({"name": "x\ny", "function": 3})));
    assert_mentions(&multi, &[r#"node "x\ny""#]);
}

#[test]
fn factors() {
    let zero = error(one(json!({"name": "x", "function": "f", "factor": 0})));
    assert_mentions(&zero, &[r#"node "x": factor is 0; a node needs at least one instance"#]);
    assert_mentions(&error(one(json!({"name": "x", "function": "f", "factor": -2}))), &[r#"node "x": factor -2"#]);
    assert_mentions(&error(one(json!({"name": "x", "function": "f", "factor": 1.5}))), &["factor 1.5"]);
    let unknown = error(one(json!({"name": "x", "function": "f", "factor": "nm"})));
    assert_mentions(&unknown, &[r#"node "x": factor "nm" is not an initialization"#]);
    let inits = |value: Json| {
        json!({"initializations": [{"name": "n", "value": value}],
               "nodes": [{"name": "x", "function": "f", "factor": "n"}]})
    };
    assert_mentions(&error(inits(json!(0))), &[r#"node "x": factor is 0 (from initialization "n")"#]);
    assert_mentions(&error(inits(json!(-4))), &[r#"factor "n" holds a value of type i64"#]);
    assert_mentions(&error(inits(json!("4"))), &[r#"factor "n" holds a value of type String"#]);
    let huge = error(one(json!({"name": "x", "function": "f", "factor": u32::MAX})));
    assert_mentions(&huge, &[r#"node "x": factor 4294967295 is too large"#]);
}

#[test]
fn too_many_instances() {
    let message = error(nodes(json!([
        {"name": "a", "function": "f", "factor": 200_000_000u32},
        {"name": "b", "function": "f", "factor": 200_000_000u32},
    ])));
    assert_mentions(&message, &[r#"node "b" brings the graph to 400000000 instances"#, "268435456"]);
}

#[test]
fn too_many_edges() {
    let message = error(nodes(json!([
        {"name": "a", "function": "f", "factor": 70000},
        {"name": "b", "function": "f", "factor": 70000,
         "args": [{"type": "$barrier", "predecessor": {"name": "a"}}]},
    ])));
    assert_mentions(&message, &[r#"node "b" brings the graph to more than"#, "select fewer"]);
}

#[test]
fn priority_and_workers() {
    let bad = error(one(json!({"name": "x", "function": "f", "priority": "urgent"})));
    assert_mentions(&bad, &[r#"node "x": priority "urgent" is not valid"#, r#""high""#]);
    let wide = error(one(json!({"name": "x", "function": "f", "priority": 1u64 << 40})));
    assert_mentions(&wide, &["priority 1099511627776"]);
    for workers in [json!("3-1"), json!("a-b"), json!(""), json!(-1), json!([0, 1]), json!("4294967295")] {
        let message = error(one(json!({"name": "x", "function": "f", "use_workers": workers})));
        assert_mentions(&message, &[r#"node "x": use_workers"#, "not a worker range"]);
    }
}

#[test]
fn unknown_reference() {
    let message = arg_error(json!({"type": "$ref", "name": "buf"}));
    assert_mentions(&message, &[r#"node "gen" argument 0"#, r#""buf""#, "not an initialization"]);
    assert_mentions(&arg_error(json!({"type": "$ref"})), &[r#"node "gen" argument 0: "name" is missing"#]);
}

#[test]
fn unknown_predecessor() {
    let message = error(pair(1, json!([1, {"type": "$res", "predecessor": {"name": "zz"}}])));
    assert_mentions(&message, &[r#"node "b" argument 1: predecessor "zz" is not a node"#]);
    let missing = error(pair(1, json!([{"type": "$res"}])));
    assert_mentions(&missing, &[r#"node "b" argument 0: a $res argument needs "predecessor""#]);
}

#[test]
fn selection_out_of_range() {
    let message = error(pair(4, json!([{"type": "$res", "predecessor": {"name": "a", "index": 1}}])));
    let want = r#"graph.json: node "b" instance 3, argument 0 ($res from "a"): offset 1 selects instance 4, but "a" has 4 instances (0..3)"#;
    assert!(message.starts_with(want), "{message}");
    let negative = error(pair(2, json!([{"type": "$dep", "predecessor": {"name": "a", "index": [0, -1]}}])));
    assert_mentions(&negative, &["instance 0, argument 0 ($dep from \"a\"): offset -1 selects instance -1"]);
    let range = error(pair(1, json!([{"type": "$barrier", "predecessor": {"name": "a", "index": "2-6"}}])));
    assert_mentions(&range, &["instance 0, argument 0 ($barrier from \"a\"): offset 4 selects instance 4"]);
    let late = error(pair(3, json!([{"type": "$res", "predecessor": {"name": "a", "index": "1-3"}}])));
    assert_mentions(&late, &["instance 2, argument 0", "offset 2 selects instance 4"]);
    let longer = error(pair(5, json!([{"type": "$res", "predecessor": {"name": "a"}}])));
    assert_mentions(&longer, &["node \"b\" instance 4", "offset 0 selects instance 4"]);
}

#[test]
fn bad_selections() {
    let index = |index: Json| error(pair(1, json!([{"type": "$res", "predecessor": {"name": "a", "index": index}}])));
    assert_mentions(&index(json!("3-3")), &[r#"node "b" argument 0: index "3-3": the range 3-3 is empty"#]);
    assert_mentions(&index(json!("4-1")), &["the range 4-1 is empty"]);
    assert_mentions(&index(json!("0-num")), &[r#"index "0-num""#, r#""num" is neither"#]);
    assert_mentions(&index(json!("some")), &[r#"index "some": it is not an offset"#]);
    assert_mentions(&index(json!([])), &["index is an empty list"]);
    assert_mentions(&index(json!(1.5)), &["index 1.5 is not a selection"]);
    assert_mentions(&index(json!([0, "x"])), &[r#"index [0,"x"] is not a selection"#]);
    let text = json!({"initializations": [{"name": "t", "value": "x"}],
                      "nodes": [{"name": "a", "function": "f"},
                                {"name": "b", "function": "f", "args": [
                                    {"type": "$res", "predecessor": {"name": "a", "index": "0-t"}}]}]});
    assert_mentions(&error(text), &[r#"initialization "t" holds a value of type String"#]);
}

#[test]
fn literal_range_errors() {
    let cases = [
        (json!({"type": "u8", "value": 300}), "300 does not fit in u8"),
        (json!({"type": "i8", "value": -129}), "-129 does not fit in i8"),
        (json!({"type": "u64", "value": -1}), "-1 does not fit in u64"),
        (json!({"type": "u32", "value": 1.5}), "expected an integer for u32, got 1.5"),
        (json!({"type": "i64", "value": 1e30}), "does not fit in i64"),
        (json!({"type": "u128", "value": "-3"}), r#""-3" is not a decimal integer that fits in u128"#),
        (json!({"type": "i128", "value": 1e30}), "decimal string"),
        (json!({"type": "f32", "value": 1e39}), "does not fit in f32"),
        (json!({"type": "f64", "value": true}), "expected a number for f64"),
        (json!({"type": "char", "value": "ab"}), r#""ab" is not exactly one character"#),
        (json!({"type": "bool", "value": 1}), "expected true or false for bool"),
        (json!({"type": "Complex64", "value": [1]}), "expected a list [re, im] for Complex64"),
        (json!({"type": "u9", "value": 1}), r#"unknown type "u9""#),
        (json!({"type": "Vec<u8>", "value": [1, 256]}), "element 1: 256 does not fit in u8"),
        (json!({"type": "Vec<Vec<u8>>", "value": []}), r#"unknown type "Vec<Vec<u8>>""#),
        (json!({"type": "Vec<u8>", "value": 1}), "expected a JSON list for Vec<u8>"),
        (json!({"type": "u8"}), r#"the typed value of type "u8" has no "value""#),
        (json!({"type": 8, "value": 1}), r#"the "type" of a typed value must be a string"#),
        (json!(null), "null is not a value"),
        (json!([1, 2]), "a plain list has no element type"),
        (json!({"value": 1}), r#"needs a "type" field"#),
    ];
    for (arg, want) in cases {
        assert_mentions(&arg_error(arg), &[r#"node "gen" argument 0: "#, want]);
    }
}

#[test]
fn initialization_values() {
    let init = |value: Json| error(json!({"initializations": [{"name": "v", "value": value}], "nodes": []}));
    assert_mentions(&init(json!({"type": "u8", "value": -1})), &[r#"initialization "v": -1 does not fit in u8"#]);
    assert_mentions(
        &init(json!({"type": "$ref", "name": "w"})),
        &[r#"initialization "v": the value must be a literal"#],
    );
    let missing = error(json!({"initializations": [{"name": "v"}], "nodes": []}));
    assert_mentions(&missing, &[r#"initialization "v": "value" is missing"#]);
}

#[test]
fn cycles() {
    let two = error(nodes(json!([
        {"name": "a", "function": "f", "args": [{"type": "$res", "predecessor": {"name": "b"}}]},
        {"name": "b", "function": "f", "args": [{"type": "$dep", "predecessor": {"name": "a"}}]},
    ])));
    assert_eq!(two, "graph.json: the graph has a cycle: a[0] → b[0] → a[0]; remove one of these edges");
    let own = error(one(json!({"name": "w", "function": "f", "factor": 2,
                               "args": [{"type": "$barrier", "predecessor": {"name": "w"}}]})));
    assert_mentions(&own, &["the graph has a cycle: w[0] → w[0]"]);
}

#[test]
fn long_cycles_are_shortened() {
    let mut chain: Vec<Json> = (0..20)
        .map(|k| {
            json!({"name": format!("n{k}"), "function": "f",
                        "args": [{"type": "$dep", "predecessor": {"name": format!("n{}", (k + 19) % 20)}}]})
        })
        .collect();
    chain.push(json!({"name": "tail", "function": "f", "args": [{"type": "$dep", "predecessor": {"name": "n3"}}]}));
    let message = error(nodes(Json::Array(chain)));
    assert_mentions(&message, &["n0[0] → n1[0] → ", "(12 more)", "n19[0] → n0[0]; remove one"]);
}

#[test]
fn missing_file_names_the_file() {
    let path = std::path::Path::new("/nonexistent/dir/graph-404.json");
    let e = load_file(path).unwrap_err();
    assert!(matches!(e, GraphError::Read { .. }));
    assert_mentions(&e.to_string(), &["/nonexistent/dir/graph-404.json: cannot read the graph file"]);
    assert_eq!(e.file(), "/nonexistent/dir/graph-404.json");
}

#[test]
fn file_that_is_not_utf8() {
    let path = std::env::temp_dir().join(format!("tomii-graph-test-binary-{}.json", std::process::id()));
    std::fs::write(&path, b"{\"nodes\": \xff}").unwrap();
    let loaded = load_file(&path);
    std::fs::remove_file(&path).unwrap();
    let message = loaded.unwrap_err().to_string();
    assert_mentions(&message, &[&path.display().to_string(), "not UTF-8", "offset 10"]);
}

#[test]
fn error_kinds() {
    let post = r#"{"nodes": [{"name": "x", "function": "f"}],
                   "post_nodes": [{"name": "p", "function": "f", "loop": {"name": "l", "factor": 2}}]}"#;
    assert!(matches!(parse_str("g.json", post).unwrap_err(), GraphError::Unsupported { .. }));
    let e = parse_str("g.json", "[").unwrap_err();
    assert!(matches!(e, GraphError::Syntax { .. }));
}

#[test]
fn loop_and_condition_errors_name_the_node_and_what_to_do() {
    let node = |fields: Json| {
        let mut node = json!({"name": "x", "function": "f"});
        node.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
        error(one(node))
    };
    assert_mentions(&node(json!({"loop": {"name": "i", "factor": 0}})), &[r#"node "x": loop factor is 0"#]);
    assert_mentions(&node(json!({"loop": {"name": "i"}})), &[r#"node "x""#, r#"needs a "factor""#]);
    assert_mentions(&node(json!({"loop_args": [1]})), &[r#"node "x""#, r#""loop_args" without a "loop""#]);
    let condition = |fields: Json| node(json!({ "condition": fields }));
    assert_mentions(&condition(json!({"operation": "Ne", "value": 1, "function": "c"})), &["operation \"Ne\"", "Neq"]);
    assert_mentions(&condition(json!({"operation": "Eq", "value": 1})), &[r#"needs "function""#]);
    assert_mentions(&condition(json!({"operation": "Eq", "function": "c"})), &[r#"needs "value""#]);
    assert_mentions(
        &condition(json!({"operation": "Eq", "value": [1], "value_type": "usize", "function": "c"})),
        &[r#"node "x": condition value"#, "usize"],
    );
    let edge = condition(json!({"operation": "Eq", "value": 1, "function": "c",
                                "args": [{"type": "$res", "predecessor": {"name": "nope"}}]}));
    assert_mentions(&edge, &[r#"node "x" condition argument 0"#, r#""nope""#]);
}

#[test]
fn condition_and_loop_arguments_are_dependencies() {
    let g = super::compile(nodes(json!([
        {"name": "a", "function": "f", "factor": 2},
        {"name": "b", "function": "f", "factor": 2, "loop": {"name": "i", "factor": 2},
         "loop_args": [{"type": "$res", "predecessor": {"name": "a"}}],
         "condition": {"operation": "Eq", "value": 0, "function": "c",
                       "args": [{"type": "$dep", "predecessor": {"name": "a", "index": "all"}}]}}
    ])));
    // b[i] reads a[i] in its loop arguments and waits for all of a in its condition's.
    assert_eq!(g.dep_count[2..], [2, 2]);
    assert_eq!(g.args_of(2), []);
    assert_eq!(g.loop_args_of(2), [crate::graph::ArgSource::Result(0)]);
    assert_eq!(g.condition_args_of(2), []);
    assert_eq!(g.nodes[1].iterations, 2);
}

#[test]
fn computed_initialization_errors_name_it_and_what_to_do() {
    let graph = |inits: Json, node: Json| error(json!({"initializations": inits, "nodes": [node]}));
    let plain = json!({"name": "x", "function": "f"});
    let later = graph(
        json!([{"name": "a", "function": "k", "args": [{"type": "$ref", "name": "b"}]}, {"name": "b", "function": "k"}]),
        plain.clone(),
    );
    assert_mentions(&later, &[r#"initialization "a" argument 0"#, "computed later"]);
    let edge = graph(
        json!([{"name": "a", "function": "k", "args": [{"type": "$res", "predecessor": {"name": "x"}}]}]),
        plain.clone(),
    );
    assert_mentions(&edge, &[r#"initialization "a" argument 0"#, "cannot read a node"]);
    let both = graph(json!([{"name": "a", "function": "k", "value": 1}]), plain.clone());
    assert_mentions(&both, &[r#"initialization "a""#, "not both"]);
    let factor = graph(json!([{"name": "a", "function": "k"}]), json!({"name": "x", "function": "f", "factor": "a"}));
    assert_mentions(&factor, &[r#"node "x": factor names the computed initialization "a""#, "--dylib"]);
    let elements = graph(
        json!([{"name": "a", "function": "k", "factor": 2}]),
        json!({"name": "x", "function": "f", "factor": 3, "args": [{"type": "$ref", "name": "a"}]}),
    );
    assert_mentions(&elements, &[r#"node "x" argument 0"#, "2 elements", "3 instances"]);
    let args_only = graph(json!([{"name": "a", "value": 1, "args": []}]), plain);
    assert_mentions(&args_only, &[r#"initialization "a""#, r#"add "function""#]);
}

#[test]
fn post_node_errors_name_the_post_node() {
    let graph = |post: Json| error(json!({"nodes": [{"name": "a", "function": "f"}], "post_nodes": [post]}));
    let reads_post = json!({"nodes": [{"name": "a", "function": "f"}], "post_nodes": [
        {"name": "p", "function": "f"},
        {"name": "q", "function": "f", "args": [{"type": "$res", "predecessor": {"name": "p"}}]}]});
    assert_mentions(&error(reads_post), &[r#"node "q" argument 0"#, r#""p" is a post-node"#]);
    assert_mentions(&graph(json!({"name": "a", "function": "g"})), &[r#"node "a" and a post-node share the name"#]);
    let beyond = graph(
        json!({"name": "p", "function": "g", "factor": 2, "args": [{"type": "$res", "predecessor": {"name": "a"}}]}),
    );
    assert_mentions(&beyond, &[r#"node "p" instance 1"#, r#""a" has 1 instance"#]);
    let looped = graph(json!({"name": "p", "function": "g", "loop": {"name": "i", "factor": 2}}));
    assert_mentions(&looped, &[r#"node "p""#, "not supported"]);
}

#[test]
fn group_by_and_wrap_errors() {
    let edge = |pred: Json, factor: u32| error(pair(factor, json!([{"type": "$res", "predecessor": pred}])));
    assert_mentions(&edge(json!({"name": "a", "group_by": 3}), 1), &["group_by 3 does not divide", "factor 4"]);
    assert_mentions(&edge(json!({"name": "a", "group_by": 2}), 3), &[r#"node "b" instance 2"#]);
    assert_mentions(&edge(json!({"name": "a", "group_by": 2, "index": 0}), 2), &["either group_by or an index"]);
    assert_mentions(&edge(json!({"name": "a", "group_by": 0}), 2), &["group_by 0 is not a positive integer"]);
    assert_mentions(
        &edge(json!({"name": "a", "index": "all", "wrap": true}), 2),
        &["wrap applies to offsets and ranges"],
    );
    assert_mentions(&edge(json!({"name": "a", "wrap": "yes"}), 2), &["wrap must be true or false"]);
}

#[test]
fn group_by_on_a_barrier_groups_the_dependencies() {
    let g = super::compile(pair(2, json!([{"type": "$barrier", "predecessor": {"name": "a", "group_by": 2}}])));
    // b[0] waits for a[0], a[1]; b[1] for a[2], a[3]; a barrier passes no argument.
    assert_eq!(g.predecessors(4), [0, 1]);
    assert_eq!(g.predecessors(5), [2, 3]);
    assert!(g.args_of(4).is_empty());
}
