//! Graph generators for the benchmarks: chains, fan-outs, fan-ins and pipelines of `noop` or
//! `spin` nodes.
//!
//! Each generator writes graph JSON text and compiles it with `graph::parse_str`, the path a user's
//! file takes, so a benchmark runs exactly what the format produces; `chain_text` and
//! `pipeline_text` give that text itself, for a benchmark that hands a file to the `tomii` CLI. A
//! generator that produces a graph the compiler rejects is a bug here, so it panics.

use serde_json::{Value, json};
use tomii_core::graph::{self, CompiledGraph};

/// The kernel every node of a generated graph runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// `noop`: the cost measured is the runtime's alone.
    Noop,
    /// `spin` for `us` microseconds, passed as the first argument (a `u64` literal).
    Spin { us: u64 },
}

impl Kernel {
    fn function(self) -> &'static str {
        match self {
            Kernel::Noop => "noop",
            Kernel::Spin { .. } => "spin",
        }
    }

    /// The arguments that come before a node's edges.
    fn leading_args(self) -> Vec<Value> {
        match self {
            Kernel::Noop => Vec::new(),
            Kernel::Spin { us } => vec![json!({"type": "u64", "value": us})],
        }
    }
}

/// `n` nodes of factor 1 in a line, `noop`: see [`chain_with`].
pub fn chain(n: u32) -> CompiledGraph {
    chain_with(n, Kernel::Noop)
}

/// `n` nodes `n0 … n{n-1}` of factor 1; node i has a `$dep` on node i − 1. n tasks, n − 1 edges.
pub fn chain_with(n: u32, kernel: Kernel) -> CompiledGraph {
    compile(&format!("chain_{n}"), chain_nodes(n, kernel))
}

/// The JSON text of [`chain_with`]`(n, kernel)`.
pub fn chain_text(n: u32, kernel: Kernel) -> String {
    graph_text(&format!("chain_{n}"), chain_nodes(n, kernel))
}

fn chain_nodes(n: u32, kernel: Kernel) -> Vec<Value> {
    assert!(n > 0, "a chain needs at least one node");
    (0..n)
        .map(|i| {
            let edges = if i == 0 { Vec::new() } else { vec![edge("$dep", &format!("n{}", i - 1), None)] };
            node(&format!("n{i}"), kernel, 1, edges)
        })
        .collect()
}

/// `a(1) → b(n) → c(1)`, `noop`: see [`fan_out_with`].
pub fn fan_out(n: u32) -> CompiledGraph {
    fan_out_with(n, Kernel::Noop)
}

/// `a(1) → b(n) → c(1)`: every `b` instance has a `$dep` on `a` (index `"all"`), and `c` a `$dep`
/// on every `b` instance (index `"all"`). n + 2 tasks, 2n edges.
pub fn fan_out_with(n: u32, kernel: Kernel) -> CompiledGraph {
    assert!(n > 0, "a fan-out needs at least one middle instance");
    let all = || Some(json!("all"));
    let nodes = vec![
        node("a", kernel, 1, Vec::new()),
        node("b", kernel, n, vec![edge("$dep", "a", all())]),
        node("c", kernel, 1, vec![edge("$dep", "b", all())]),
    ];
    compile(&format!("fan_out_{n}"), nodes)
}

/// `a(1) → b(n)`, `noop`: every `b` instance has a `$dep` on `a` (index `"all"`) and nothing
/// follows them, so `a`'s one completion releases all n. n + 1 tasks, n edges.
pub fn scatter(n: u32) -> CompiledGraph {
    assert!(n > 0, "a scatter needs at least one successor");
    let nodes = vec![
        node("a", Kernel::Noop, 1, Vec::new()),
        node("b", Kernel::Noop, n, vec![edge("$dep", "a", Some(json!("all")))]),
    ];
    compile(&format!("scatter_{n}"), nodes)
}

/// `a(n) → c(1)`, `noop`: n roots and one join with a `$dep` on every `a` instance (index
/// `"all"`), so each completion counts one predecessor of `c`. n + 1 tasks, n edges.
pub fn gather(n: u32) -> CompiledGraph {
    assert!(n > 0, "a gather needs at least one predecessor");
    let nodes = vec![
        node("a", Kernel::Noop, n, Vec::new()),
        node("c", Kernel::Noop, 1, vec![edge("$dep", "a", Some(json!("all")))]),
    ];
    compile(&format!("gather_{n}"), nodes)
}

/// One node `a` of factor n, `noop`, no edges: n roots, the baseline of [`scatter`] and [`gather`].
pub fn independent(n: u32) -> CompiledGraph {
    assert!(n > 0, "a node needs at least one instance");
    compile(&format!("independent_{n}"), vec![node("a", Kernel::Noop, n, Vec::new())])
}

/// `stages` nodes of factor `width`, `noop`: see [`pipeline_with`].
pub fn pipeline(stages: u32, width: u32) -> CompiledGraph {
    pipeline_with(stages, width, Kernel::Noop)
}

/// `stages` nodes `s0 … s{stages-1}` of factor `width`; instance i of stage s takes the result of
/// instance i of stage s − 1 (`$res`, offset 0). stages × width tasks, (stages − 1) × width edges.
pub fn pipeline_with(stages: u32, width: u32, kernel: Kernel) -> CompiledGraph {
    compile(&format!("pipeline_{stages}x{width}"), pipeline_nodes(stages, width, kernel))
}

/// The JSON text of [`pipeline_with`]`(stages, width, kernel)`.
pub fn pipeline_text(stages: u32, width: u32, kernel: Kernel) -> String {
    graph_text(&format!("pipeline_{stages}x{width}"), pipeline_nodes(stages, width, kernel))
}

fn pipeline_nodes(stages: u32, width: u32, kernel: Kernel) -> Vec<Value> {
    assert!(stages > 0 && width > 0, "a pipeline needs at least one stage of width 1");
    (0..stages)
        .map(|s| {
            let edges = if s == 0 { Vec::new() } else { vec![edge("$res", &format!("s{}", s - 1), Some(json!(0)))] };
            node(&format!("s{s}"), kernel, width, edges)
        })
        .collect()
}

fn node(name: &str, kernel: Kernel, factor: u32, edges: Vec<Value>) -> Value {
    let mut args = kernel.leading_args();
    args.extend(edges);
    json!({"name": name, "function": kernel.function(), "factor": factor, "args": args})
}

/// An edge argument (`$dep`, `$res`, `$barrier`) from `predecessor`, with an optional `index`.
fn edge(kind: &str, predecessor: &str, index: Option<Value>) -> Value {
    let mut from = json!({"name": predecessor});
    if let Some(index) = index {
        from["index"] = index;
    }
    json!({"type": kind, "predecessor": from})
}

fn graph_text(name: &str, nodes: Vec<Value>) -> String {
    json!({"name": name, "nodes": nodes}).to_string()
}

fn compile(name: &str, nodes: Vec<Value>) -> CompiledGraph {
    let text = graph_text(name, nodes);
    graph::parse_str(&format!("{name}.json"), &text)
        .unwrap_or_else(|e| panic!("the generated graph {name} does not compile (a bug in tomii-bench): {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tomii_core::graph::{ArgSource, Literal};

    fn edges(graph: &CompiledGraph) -> u32 {
        graph.dep_count.iter().sum()
    }

    #[test]
    fn chain_is_a_line() {
        let g = chain(5);
        assert_eq!(g.instance_count(), 5);
        assert_eq!(g.dep_count, [0, 1, 1, 1, 1]);
        assert_eq!(g.roots, [0]);
        assert_eq!(edges(&g), 4);
        assert_eq!(g.rank[0], 5);
        assert!((1..5).all(|i| g.predecessors(i) == [i - 1]));
        assert!(g.nodes.iter().all(|n| n.function == "noop" && n.factor == 1));
    }

    #[test]
    fn chain_of_one_has_no_edges() {
        let g = chain(1);
        assert_eq!(g.instance_count(), 1);
        assert_eq!(edges(&g), 0);
    }

    #[test]
    fn fan_out_joins_every_middle_instance() {
        let g = fan_out(4);
        assert_eq!(g.instance_count(), 6);
        assert_eq!(g.dep_count, [0, 1, 1, 1, 1, 4]);
        assert_eq!(g.successors(0), [1, 2, 3, 4]);
        assert_eq!(g.predecessors(5), [1, 2, 3, 4]);
        assert_eq!(edges(&g), 8);
        assert_eq!(g.roots, [0]);
    }

    #[test]
    fn scatter_releases_every_successor_from_one_task() {
        let g = scatter(4);
        assert_eq!(g.instance_count(), 5);
        assert_eq!(g.dep_count, [0, 1, 1, 1, 1]);
        assert_eq!(g.successors(0), [1, 2, 3, 4]);
        assert!((1..5).all(|i| g.successors(i).is_empty()));
        assert_eq!((g.roots.as_slice(), edges(&g)), (&[0][..], 4));
    }

    #[test]
    fn gather_joins_every_root() {
        let g = gather(4);
        assert_eq!(g.instance_count(), 5);
        assert_eq!(g.dep_count, [0, 0, 0, 0, 4]);
        assert_eq!(g.roots, [0, 1, 2, 3]);
        assert_eq!(g.predecessors(4), [0, 1, 2, 3]);
        assert_eq!(edges(&g), 4);
    }

    #[test]
    fn independent_is_all_roots() {
        let g = independent(3);
        assert_eq!((g.instance_count(), edges(&g)), (3, 0));
        assert_eq!(g.roots, [0, 1, 2]);
    }

    #[test]
    fn pipeline_links_instance_to_instance() {
        let g = pipeline(3, 4);
        assert_eq!(g.instance_count(), 12);
        assert_eq!(g.dep_count, [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(g.roots, [0, 1, 2, 3]);
        assert_eq!(edges(&g), 8);
        for inst in 4..12 {
            assert_eq!(g.args_of(inst), [ArgSource::Result(inst - 4)]);
        }
        assert!(g.nodes.iter().all(|n| n.factor == 4));
    }

    #[test]
    fn spin_duration_is_the_first_argument() {
        let spin = Kernel::Spin { us: 7 };
        for g in [chain_with(3, spin), fan_out_with(3, spin), pipeline_with(2, 3, spin)] {
            assert!(g.nodes.iter().all(|n| n.function == "spin"), "{}", g.name);
            for inst in 0..g.instance_count() as u32 {
                let ArgSource::Const(first) = g.args_of(inst)[0] else {
                    panic!("{}: instance {inst} does not start with a constant", g.name)
                };
                assert_eq!(g.consts[first as usize], Literal::U64(7));
            }
        }
        let g = pipeline_with(2, 3, spin);
        assert_eq!(g.args_of(4)[1], ArgSource::Result(1));
    }

    #[test]
    fn texts_compile_to_the_generated_graphs() {
        let compiled = |text: &str| graph::parse_str("text.json", text).unwrap();
        assert_eq!(compiled(&chain_text(7, Kernel::Noop)).dep_count, chain(7).dep_count);
        let (text, graph) = (compiled(&pipeline_text(4, 16, Kernel::Noop)), pipeline(4, 16));
        assert_eq!((text.name.as_str(), text.instance_count()), (graph.name.as_str(), graph.instance_count()));
        assert_eq!(text.dep_count, graph.dep_count);
    }

    #[test]
    fn spin_adds_no_dependencies() {
        let spin = Kernel::Spin { us: 1 };
        assert_eq!(chain_with(10, spin).dep_count, chain(10).dep_count);
        assert_eq!(fan_out_with(10, spin).dep_count, fan_out(10).dep_count);
        assert_eq!(pipeline_with(4, 16, spin).dep_count, pipeline(4, 16).dep_count);
    }
}
