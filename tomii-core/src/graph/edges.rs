//! The compiled edges of a graph as text (`tomii convert --edges`): for every instance, the
//! predecessor instances it waits for and the results it reads, in call order. Runs of
//! consecutive instances of one node are written `a[0..4]` (0 to 3), so that a dense fan-in stays
//! one line. Used to see what a graph file means once compiled, and to check that a change of the
//! format keeps a graph's meaning.

use std::fmt::Write;

use super::compiled::{ArgSource, CompiledGraph};

/// The compiled edges of `graph`, one line per instance with predecessors or results, then one
/// line per post-node instance that reads results.
pub fn edges_text(graph: &CompiledGraph) -> String {
    let mut out = String::new();
    for inst in 0..graph.instance_count() as u32 {
        let waits = graph.predecessors(inst);
        let reads: Vec<u32> = [graph.args_of(inst), graph.loop_args_of(inst), graph.condition_args_of(inst)]
            .into_iter()
            .flatten()
            .filter_map(|arg| match arg {
                ArgSource::Result(pred) => Some(*pred),
                _ => None,
            })
            .collect();
        if waits.is_empty() && reads.is_empty() {
            continue;
        }
        let _ =
            writeln!(out, "{} waits {}; reads {}", graph.instance_name(inst), runs(graph, waits), runs(graph, &reads));
    }
    for post in &graph.post {
        for i in 0..post.node.factor {
            let reads: Vec<u32> = post
                .args_of(i)
                .iter()
                .filter_map(|arg| match arg {
                    ArgSource::Result(pred) => Some(*pred),
                    _ => None,
                })
                .collect();
            if !reads.is_empty() {
                let _ = writeln!(out, "post {}[{i}] reads {}", post.node.name, runs(graph, &reads));
            }
        }
    }
    out
}

/// `instances` in order, each run of consecutive instances of one node as `name[a..b]`.
fn runs(graph: &CompiledGraph, instances: &[u32]) -> String {
    if instances.is_empty() {
        return "-".to_owned();
    }
    let mut parts = Vec::new();
    let mut start = 0;
    while start < instances.len() {
        let node = graph.inst_node[instances[start] as usize];
        let mut end = start + 1;
        while end < instances.len()
            && instances[end] == instances[end - 1].wrapping_add(1)
            && graph.inst_node[instances[end] as usize] == node
        {
            end += 1;
        }
        let name = &graph.nodes[node as usize].name;
        let first = graph.inst_index[instances[start] as usize];
        parts.push(if end - start == 1 {
            format!("{name}[{first}]")
        } else {
            format!("{name}[{first}..{}]", first as usize + (end - start))
        });
        start = end;
    }
    parts.join(" ")
}
