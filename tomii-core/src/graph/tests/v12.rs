//! Tomii 1.2 files that must not load: each error names the node (or initialization) and the 1.2
//! field at fault, in one line starting with the source name.

use serde_json::{Value as Json, json};

use super::{assert_mentions, error};

/// A 1.2 graph: constant `n` = 4, node `up` (4 instances) and node `x` with `fields` added.
fn graph(fields: Json) -> Json {
    let mut node = json!({"name": "x", "function": "f"});
    node.as_object_mut().unwrap().extend(fields.as_object().expect("fields").clone());
    json!({"initializations": [{"name": "n", "args": [{"type": "usize", "value": "4"}]}],
           "nodes": [{"name": "up", "function": "f", "factor": "n"}, node]})
}

fn arg(arg: Json) -> String {
    error(graph(json!({"args": [arg]})))
}

#[test]
fn a_value_that_does_not_fit_names_the_node_and_the_field() {
    let message = arg(json!({"type": "u8", "value": "300"}));
    assert_mentions(&message, &[r#"node "x" args[0] value"#, "300 does not fit in u8"]);
    let message = arg(json!({"type": "Vec<f64>", "value": "1.0,x"}));
    assert_mentions(&message, &[r#"node "x" args[0] value"#, "element 1"]);
    let message = error(json!({"initializations": [{"name": "n", "args": [{"type": "bool", "value": "yes"}]}],
                               "nodes": [{"name": "a", "function": "f"}]}));
    assert_mentions(&message, &[r#"initialization "n" args[0] value"#, "not a bool"]);
}

#[test]
fn selections_name_the_indexes_field() {
    let edge = |indexes: &str| json!({"type": "$res", "predecessor": {"name": "up", "indexes": indexes}});
    assert_mentions(&arg(edge("0-zz")), &[r#"node "x" args[0] predecessor"#, "indexes", r#""zz""#]);
    assert_mentions(&arg(edge("1,a")), &[r#"node "x" args[0] predecessor"#, r#"indexes "1,a""#]);
    assert_mentions(&arg(edge("3-1")), &[r#"indexes "3-1" selects nothing"#]);
    // wait(group_by=n) as 1.2's builder wrote it: fewer instances than a group.
    let both = json!({"type": "$barrier", "predecessor": {"name": "up", "indexes": "0", "group_by": "n"}});
    assert_mentions(&arg(both), &[r#"node "x" args[0] predecessor"#, "fewer than one group"]);
    let unknown = json!({"type": "$res", "predecessor": {"name": "up", "indexes": "0", "index": 0}});
    // "index" is the current format's: the file mixes the two.
    assert_mentions(&arg(unknown), &["mixes two graph formats", r#"node "x" argument 0"#]);
}

#[test]
fn fields_of_nodes_and_conditions_are_named() {
    assert_mentions(&error(graph(json!({"colour": "red"}))), &[r#"unknown field "colour" in node "x""#, "Tomii 1.2"]);
    assert_mentions(
        &error(graph(json!({"factor": "$workers"}))),
        &[r#"node "x": factor "$workers""#, "tomii convert --workers N"],
    );
    assert_mentions(&error(graph(json!({"group_size": "nope"}))), &[r#"node "x": group_size "nope""#]);
    let condition = |fields: Json| error(graph(json!({"condition": fields})));
    let no_type =
        condition(json!({"operation": "Eq", "value": "1", "function": "c", "args": [{"type": "$ref", "value": "n"}]}));
    assert_mentions(&no_type, &[r#"node "x" condition"#, r#""value_type" is missing"#]);
    let bad = condition(json!({"operation": "Eq", "value": "abc", "value_type": "usize", "function": "c"}));
    assert_mentions(&bad, &[r#"node "x" condition value"#, r#""abc" is not an integer"#]);
    let op = condition(json!({"operation": "Ne", "value": "1", "value_type": "u8", "function": "c"}));
    assert_mentions(&op, &[r#"node "x" condition"#, r#"operation "Ne""#, "Eq, Neq, Gt, Lt"]);
}

#[test]
fn references_and_constants_name_their_fields() {
    assert_mentions(&arg(json!({"type": "$ref", "value": ""})), &[r#"node "x" args[0]"#, r#"needs "value""#]);
    assert_mentions(&arg(json!({"type": "$network"})), &[r#"node "x" args[0]"#, r#""$network""#]);
    let two = error(
        json!({"initializations": [{"name": "n", "args": [{"type": "u8", "value": "1"}, {"type": "u8", "value": "2"}]}],
                           "nodes": [{"name": "a", "function": "f"}]}),
    );
    assert_mentions(&two, &[r#"initialization "n""#, "exactly one typed value"]);
}
