//! Positive tests: the compiled arrays of small graphs, checked element by element, and the node
//! fields (factor, priority, workers, name) as compiled.

use serde_json::json;

use super::{compile, nodes};
use crate::graph::{ArgSource, CompiledGraph, Literal};

use ArgSource::{Const, Result as Res};

fn res(pred: &str) -> serde_json::Value {
    json!({"type": "$res", "predecessor": {"name": pred}})
}

fn res_at(pred: &str, index: serde_json::Value) -> serde_json::Value {
    json!({"type": "$res", "predecessor": {"name": pred, "index": index}})
}

/// Checks the invariants every compiled graph has, whatever its shape.
fn check_consistent(g: &CompiledGraph) {
    let n = g.instance_count();
    assert_eq!((g.succ_offsets.len(), g.arg_offsets.len(), g.pred_offsets.len()), (n + 1, n + 1, n + 1));
    assert_eq!((g.dep_count.len(), g.rank.len(), g.inst_index.len()), (n, n, n));
    for inst in 0..n as u32 {
        assert_eq!(g.predecessors(inst).len(), g.dep_count[inst as usize] as usize);
        for &pred in g.predecessors(inst) {
            assert!(g.successors(pred).contains(&inst));
            assert!(g.rank[pred as usize] > g.rank[inst as usize]);
        }
    }
}

#[test]
fn pipeline_one_to_one() {
    let g = compile(nodes(json!([
        {"name": "a", "function": "gen", "factor": 4},
        {"name": "b", "function": "sum", "factor": 4, "args": [res("a")]},
    ])));
    check_consistent(&g);
    assert_eq!(g.instance_count(), 8);
    assert_eq!((g.nodes[0].first, g.nodes[1].first), (0, 4));
    assert_eq!(g.inst_node, [0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(g.inst_index, [0, 1, 2, 3, 0, 1, 2, 3]);
    assert_eq!(g.dep_count, [0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(g.succ_offsets, [0, 1, 2, 3, 4, 4, 4, 4, 4]);
    assert_eq!(g.succs, [4, 5, 6, 7]);
    assert_eq!(g.arg_offsets, [0, 0, 0, 0, 0, 1, 2, 3, 4]);
    assert_eq!(g.args, [Res(0), Res(1), Res(2), Res(3)]);
    assert_eq!(g.roots, [0, 1, 2, 3]);
    assert_eq!(g.rank, [2, 2, 2, 2, 1, 1, 1, 1]);
    assert_eq!((g.max_args(), g.max_successors()), (1, 1));
    assert_eq!(g.args_of(6), [Res(2)]);
    assert_eq!(g.instance_name(6), "b[2]");
}

#[test]
fn fan_in_with_a_range() {
    let g = compile(nodes(json!([
        {"name": "a", "function": "gen", "factor": 4},
        {"name": "s", "function": "sum", "args": [res_at("a", json!("0-4"))]},
    ])));
    check_consistent(&g);
    assert_eq!(g.nodes[1].factor, 1);
    assert_eq!(g.dep_count, [0, 0, 0, 0, 4]);
    assert_eq!(g.args_of(4), [Res(0), Res(1), Res(2), Res(3)]);
    assert_eq!(g.succ_offsets, [0, 1, 2, 3, 4, 4]);
    assert_eq!(g.succs, [4, 4, 4, 4]);
    assert_eq!(g.predecessors(4), [0, 1, 2, 3]);
    assert_eq!(g.roots, [0, 1, 2, 3]);
    assert_eq!(g.max_args(), 4);
}

#[test]
fn fan_out_with_all() {
    let g = compile(nodes(json!([
        {"name": "a", "function": "gen"},
        {"name": "b", "function": "work", "factor": 3, "args": [res_at("a", json!("all"))]},
    ])));
    check_consistent(&g);
    assert_eq!(g.dep_count, [0, 1, 1, 1]);
    assert_eq!(g.successors(0), [1, 2, 3]);
    assert_eq!(g.args, [Res(0), Res(0), Res(0)]);
    assert_eq!(g.arg_offsets, [0, 0, 1, 2, 3]);
    assert_eq!(g.roots, [0]);
    assert_eq!(g.rank, [2, 1, 1, 1]);
    assert_eq!(g.max_successors(), 3);
}

#[test]
fn repeated_predecessor_counts_once() {
    let g = compile(nodes(json!([
        {"name": "a", "function": "gen", "factor": 2},
        {"name": "b", "function": "work", "factor": 2, "args": [
            {"type": "$dep", "predecessor": {"name": "a"}},
            res("a"),
            {"type": "$barrier", "predecessor": {"name": "a"}},
            res("a"),
        ]},
    ])));
    check_consistent(&g);
    assert_eq!(g.dep_count, [0, 0, 2, 2]);
    assert_eq!(g.args_of(2), [Res(0), Res(0)]);
    assert_eq!(g.args_of(3), [Res(1), Res(1)]);
    assert_eq!(g.successors(0), [2, 3]);
    assert_eq!(g.successors(1), [2, 3]);
}

#[test]
fn dep_and_res_on_the_same_instance() {
    let g = compile(nodes(json!([
        {"name": "a", "function": "gen", "factor": 3},
        {"name": "b", "function": "work", "factor": 3, "args": [
            {"type": "$dep", "predecessor": {"name": "a", "index": 0}}, res("a"),
        ]},
    ])));
    assert_eq!(g.dep_count, [0, 0, 0, 1, 1, 1]);
    assert_eq!(g.args, [Res(0), Res(1), Res(2)]);
    assert_eq!(g.succs, [3, 4, 5]);
}

#[test]
fn positive_offset() {
    let g = compile(nodes(json!([
        {"name": "a", "function": "gen", "factor": 4},
        {"name": "b", "function": "work", "factor": 3, "args": [res_at("a", json!(1))]},
    ])));
    check_consistent(&g);
    assert_eq!(g.args, [Res(1), Res(2), Res(3)]);
    assert_eq!(g.arg_offsets, [0, 0, 0, 0, 0, 1, 2, 3]);
    assert_eq!(g.succ_offsets, [0, 0, 1, 2, 3, 3, 3, 3]);
    assert_eq!(g.succs, [4, 5, 6]);
    assert_eq!(g.rank, [1, 2, 2, 2, 1, 1, 1]);
}

#[test]
fn list_of_offsets_keeps_its_order() {
    let g = compile(nodes(json!([
        {"name": "a", "function": "gen", "factor": 4},
        {"name": "b", "function": "work", "factor": 2, "args": [res_at("a", json!([2, 0]))]},
    ])));
    assert_eq!(g.args_of(4), [Res(2), Res(0)]);
    assert_eq!(g.args_of(5), [Res(3), Res(1)]);
    assert_eq!(g.predecessors(5), [1, 3]);
}

#[test]
fn ranks_on_a_chain() {
    let g = compile(nodes(json!([
        {"name": "a", "function": "f"},
        {"name": "b", "function": "f", "args": [res("a")]},
        {"name": "c", "function": "f", "args": [{"type": "$barrier", "predecessor": {"name": "b"}}]},
    ])));
    assert_eq!(g.rank, [3, 2, 1]);
    assert_eq!(g.roots, [0]);
    assert_eq!(g.args_of(2), []);
}

#[test]
fn nodes_may_refer_forward() {
    let g = compile(nodes(json!([
        {"name": "late", "function": "f", "args": [res("early")]},
        {"name": "early", "function": "f"},
    ])));
    assert_eq!(g.roots, [1]);
    assert_eq!(g.rank, [1, 2]);
}

#[test]
fn factor_and_range_from_initializations() {
    let g = compile(json!({
        "initializations": [{"name": "num", "value": 4}, {"name": "two", "value": {"type": "u8", "value": 2}}],
        "nodes": [
            {"name": "a", "function": "gen", "factor": "num"},
            {"name": "s", "function": "sum", "args": [res_at("a", json!("0-num"))]},
            {"name": "t", "function": "sum", "args": [res_at("a", json!("two-num")), res_at("a", json!("two"))]},
        ]
    }));
    assert_eq!(g.nodes[0].factor, 4);
    assert_eq!(g.args_of(4), [Res(0), Res(1), Res(2), Res(3)]);
    assert_eq!(g.args_of(5), [Res(2), Res(3), Res(2)]);
}

#[test]
fn index_strings() {
    let g = compile(nodes(json!([
        {"name": "a", "function": "gen", "factor": 5},
        {"name": "b", "function": "f", "args": [res_at("a", json!("3")), res_at("a", json!(" 1 - 3 "))]},
    ])));
    assert_eq!(g.args_of(5), [Res(3), Res(1), Res(2)]);
}

#[test]
fn constants_and_refs() {
    let g = compile(json!({
        "initializations": [{"name": "buf", "value": {"type": "usize", "value": 100}}],
        "nodes": [
            {"name": "a", "function": "gen", "factor": 2, "args": [
                {"type": "u64", "value": 7}, {"type": "$ref", "name": "buf"}, "text"]},
            {"name": "b", "function": "f", "args": [{"type": "$ref", "name": "buf"}, res("a")]},
        ]
    }));
    assert_eq!(g.consts, [Literal::U64(7), Literal::Usize(100), Literal::Str("text".into())]);
    assert_eq!(g.inits, [("buf".to_owned(), Literal::Usize(100))]);
    assert_eq!(g.args_of(0), [Const(0), Const(1), Const(2)]);
    assert_eq!(g.args_of(1), [Const(0), Const(1), Const(2)]);
    assert_eq!(g.args_of(2), [Const(1), Res(0)]);
}

#[test]
fn node_fields() {
    let g = compile(json!({
        "name": "demo",
        "nodes": [
            {"name": "a", "function": "f", "priority": "high", "use_workers": "0-3"},
            {"name": "b", "function": "f", "priority": "low", "use_workers": "2"},
            {"name": "c", "function": "f", "priority": 7, "loop": null, "condition": {}},
            {"name": "d", "function": "f", "priority": "normal", "args": null},
        ]
    }));
    assert_eq!(g.name, "demo");
    assert_eq!(g.source, "graph.json");
    let fields: Vec<_> = g.nodes.iter().map(|n| (n.priority, n.use_workers)).collect();
    assert_eq!(fields, [(1, Some((0, 4))), (-1, Some((2, 3))), (7, None), (0, None)]);
    assert_eq!(g.nodes[2].function, "f");
    assert_eq!(g.node_id("c"), Some(2));
}

#[test]
fn default_name_is_the_file_stem() {
    let g = compile(nodes(json!([{"name": "a", "function": "f"}])));
    assert_eq!(g.name, "graph");
}

#[test]
fn load_file_reads_a_file() {
    let path = std::env::temp_dir().join(format!("tomii-graph-test-{}.json", std::process::id()));
    std::fs::write(&path, r#"{"nodes": [{"name": "a", "function": "f", "factor": 3}]}"#).unwrap();
    let loaded = crate::graph::load_file(&path);
    std::fs::remove_file(&path).unwrap();
    let g = loaded.unwrap();
    assert_eq!(g.instance_count(), 3);
    assert_eq!(g.source, path.display().to_string());
}

#[test]
fn large_graph_compiles() {
    // 2^18 instances with about two edges each (shape of the performance target).
    let g = compile(nodes(json!([
        {"name": "a", "function": "gen", "factor": 65536},
        {"name": "b", "function": "f", "factor": 65535, "args": [res("a"), res_at("a", json!(1))]},
        {"name": "c", "function": "f", "factor": 65535, "args": [res("b"), {"type": "$dep", "predecessor": {"name": "a"}}]},
        {"name": "d", "function": "f", "factor": 65535, "args": [res("c"), res("b")]},
    ])));
    check_consistent(&g);
    assert_eq!(g.instance_count(), 65536 + 3 * 65535);
    assert_eq!(g.roots.len(), 65536);
    assert_eq!(g.rank[0], 4);
}
