//! What Tomii 1.2's `--inits` printed before a run, made from the graph this runtime compiled, in
//! 1.2's layout: the nodes with their factors, the post-nodes, the initial nodes, each node's
//! successors, and the initialized objects (ids 0 and 1 are the `$index` and `$workers`
//! placeholders, as they were in 1.2; literal initializations follow, then computed ones).
//!
//! Computed initializations are shown as the calls that make them: their kernels run when the run
//! starts, once, and are never called twice for this listing (a kernel may create or truncate a
//! file, as 1.2's `get_out_file` does).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::graph::{ArgSource, CompiledGraph};

/// The `--inits` listing of `graph`, for `workers` workers; it ends with an empty line.
pub fn listing(graph: &CompiledGraph, workers: u32) -> String {
    let mut out = String::from("\nGraph:\n");
    for (id, node) in graph.nodes.iter().enumerate() {
        let _ = writeln!(out, "  {id}: {:?} ({})", node.name, node.factor);
    }
    if graph.post.is_empty() {
        out.push_str("No post nodes.\n");
    } else {
        out.push_str("Post Nodes:\n");
        for (id, post) in graph.post.iter().enumerate() {
            let _ = writeln!(out, "  {id}: {:?} ({})", post.node.name, post.node.factor);
        }
    }
    let (initial, successors) = node_edges(graph);
    let _ = writeln!(out, "Initial Nodes: {initial:?}");
    let _ = writeln!(out, "Successors: {successors:?}");
    out.push_str("\nInitialized Objects:\n");
    out.push_str("  0: [$index]\n");
    let _ = writeln!(out, "  1: [Usize({workers})] $workers");
    let mut id = 2;
    for (name, literal) in &graph.inits {
        let _ = writeln!(out, "  {id}: [{literal:?}] {name}");
        id += 1;
    }
    for init in &graph.computed {
        let args: Vec<String> = init.args.iter().map(|&arg| argument(graph, arg)).collect();
        let _ = writeln!(
            out,
            "  {id}: {}({}) x {}, computed when the run starts: {}",
            init.function,
            args.join(", "),
            init.count,
            init.name
        );
        id += 1;
    }
    out.push('\n');
    out
}

/// The nodes no other node precedes (inputs left out), and each node's successor nodes.
fn node_edges(graph: &CompiledGraph) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut successors = vec![BTreeSet::new(); graph.nodes.len()];
    let mut preceded = vec![false; graph.nodes.len()];
    for inst in 0..graph.instance_count() as u32 {
        let node = graph.inst_node[inst as usize] as usize;
        for &next in graph.successors(inst) {
            let next = graph.inst_node[next as usize] as usize;
            successors[node].insert(next);
            preceded[next] = true;
        }
    }
    let initial =
        (0..graph.nodes.len()).filter(|&node| !preceded[node] && !graph.nodes[node].input).collect::<Vec<_>>();
    (initial, successors.into_iter().map(|set| set.into_iter().collect()).collect())
}

fn argument(graph: &CompiledGraph, arg: ArgSource) -> String {
    match arg {
        ArgSource::Const(k) => graph.consts.get(k as usize).map(|c| format!("{c:?}")).unwrap_or_default(),
        ArgSource::Computed(k) => graph.computed.get(k as usize).map(|c| c.name.clone()).unwrap_or_default(),
        ArgSource::Index => "$index".to_owned(),
        ArgSource::Workers => "$workers".to_owned(),
        ArgSource::Result(inst) => graph.instance_name(inst),
    }
}
