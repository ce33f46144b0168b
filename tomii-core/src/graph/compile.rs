//! Expands a resolved graph into per-instance flat arrays: instance ids, kernel arguments, and
//! deduplicated predecessor and successor lists (CSR), then orders them (`order.rs`).
//!
//! Runs in time linear in instances plus edges (plus a sort of each instance's own predecessor
//! list). Every size is checked before anything proportional to it is allocated; never panics.

use super::compiled::{ArgSource, CompiledGraph, CompiledNode, ComputedInit, PostNode};
use super::error::{ArgGroup, Issue, quote};
use super::order;
use super::resolve::{Arg, Edge, MAX_INSTANCES, Resolved, Rule};
use super::select::Selection;
use super::spec::EdgeKind;
use super::v12::rule::{self, Meaning};

/// The most entries a CSR array may hold: its offsets are u32.
const MAX_ENTRIES: u64 = u32::MAX as u64;

/// Builds the compiled graph. `source` names the input in messages; `default_name` is used when
/// the file has no `"name"`.
pub(crate) fn compile(resolved: Resolved, source: &str, default_name: &str) -> Result<CompiledGraph, Issue> {
    let Resolved { name, inits, mut nodes, mut args, arg_starts, groups, consts, computed, mut post, network } =
        resolved;
    apply_rules(&nodes, &mut args, &arg_starts, &groups, &mut post)?;
    let args: Vec<&[Arg]> = arg_starts.windows(2).map(|span| &args[span[0]..span[1]]).collect();
    let count = assign_instances(&mut nodes)?;
    check_selections(&nodes, &args, &groups)?;
    check_post_selections(&nodes, &post)?;
    let computed = computed_inits(computed);
    check_elements(&nodes, &args, &groups, &computed)?;
    check_init_elements(&computed)?;
    check_post_elements(&post, &computed)?;
    let sizes = check_sizes(&nodes, &args)?;
    let mut graph = CompiledGraph {
        name: name.unwrap_or_else(|| default_name.to_owned()),
        source: source.to_owned(),
        nodes,
        inits,
        consts,
        computed,
        network,
        ..CompiledGraph::default()
    };
    build_instances(&mut graph, &args, &groups, count, sizes);
    if graph.nodes.iter().any(|node| node.group_size > 1) {
        group_tasks(&mut graph)?;
    }
    build_successors(&mut graph);
    order::finish(&mut graph)?;
    graph.post = post.into_iter().map(|(node, args)| post_node(&mut graph, node, &args)).collect();
    Ok(graph)
}

/// Decides what each `"rule": "tomii-1.2"` edge selects, with the factors (`v12/rule.rs`).
fn apply_rules(
    nodes: &[CompiledNode],
    args: &mut [Arg],
    arg_starts: &[usize],
    groups: &[[usize; 2]],
    post: &mut [(CompiledNode, Vec<Arg>)],
) -> Result<(), Issue> {
    let decide = |node: &CompiledNode, (group, k): (ArgGroup, usize), edge: &mut Edge| -> Result<(), Issue> {
        let Some(edge_rule) = edge.rule.take() else { return Ok(()) };
        let pred = &nodes[edge.pred as usize];
        let offsets: Vec<i64> = match &edge.sel {
            Selection::Range(a, b) => (*a..*b).collect(),
            Selection::Offsets(offsets) => offsets.clone(),
            _ => Vec::new(),
        };
        let refused = |e: String| {
            Issue::Invalid(format!(
                "node {} {group} {k} ({} from {}, rule \"tomii-1.2\"): {e}",
                quote(&node.name),
                edge.kind.name(),
                quote(&pred.name)
            ))
        };
        let meaning = match edge_rule {
            Rule::Groups { size } => {
                edge.sel = Selection::Group(rule::groups(&offsets, size, node.factor).map_err(refused)?);
                return Ok(());
            }
            Rule::Offsets => rule::meaning(edge.kind, &offsets, node.factor, pred.factor).map_err(refused)?,
        };
        edge.sel = match (meaning, std::mem::replace(&mut edge.sel, Selection::All)) {
            (Meaning::AsWritten { wrap: false }, sel) => sel,
            (Meaning::AsWritten { wrap: true }, Selection::Range(a, b)) => Selection::WrappedRange(a, b),
            (Meaning::AsWritten { wrap: true }, Selection::Offsets(offsets)) => Selection::WrappedOffsets(offsets),
            (Meaning::AsWritten { .. }, sel) => sel,
            (Meaning::Offset { k, wrap: false }, _) => Selection::offset(k),
            (Meaning::Offset { k, wrap: true }, _) => Selection::WrappedOffsets(vec![k]),
            (Meaning::All, _) => Selection::All,
            (Meaning::Absolute { lo, hi }, _) => Selection::Absolute(lo, hi),
        };
        Ok(())
    };
    for (id, node) in nodes.iter().enumerate() {
        for (k, arg) in args[arg_starts[id]..arg_starts[id + 1]].iter_mut().enumerate() {
            if let Arg::Edge(edge) = arg {
                decide(node, position(k, groups[id]), edge)?;
            }
        }
    }
    for (node, node_args) in post.iter_mut() {
        for (k, arg) in node_args.iter_mut().enumerate() {
            if let Arg::Edge(edge) = arg {
                decide(node, (ArgGroup::Kernel, k), edge)?;
            }
        }
    }
    Ok(())
}

/// Sets each node's `first` and returns the instance count (at most [`MAX_INSTANCES`]).
fn assign_instances(nodes: &mut [CompiledNode]) -> Result<u32, Issue> {
    let mut next: u64 = 0;
    for node in nodes.iter_mut() {
        node.first = u32::try_from(next).unwrap_or(u32::MAX);
        next += u64::from(node.factor);
        if next > MAX_INSTANCES {
            return Err(Issue::TooLarge(format!(
                "node {} brings the graph to {next} instances, more than the {MAX_INSTANCES} this runtime \
                 supports; lower some factors",
                quote(&node.name)
            )));
        }
    }
    Ok(u32::try_from(next).unwrap_or(u32::MAX))
}

/// Every selection of every instance must stay inside its predecessor's instances.
fn check_selections(nodes: &[CompiledNode], args: &[&[Arg]], groups: &[[usize; 2]]) -> Result<(), Issue> {
    for ((node, node_args), &group_sizes) in nodes.iter().zip(args).zip(groups) {
        for (k, arg) in node_args.iter().enumerate() {
            let Arg::Edge(edge) = arg else { continue };
            let pred = &nodes[edge.pred as usize];
            check_group(node, position(k, group_sizes), edge, pred)?;
            if let Some((i, offset)) = edge.sel.first_out_of_range(node.factor, pred.factor) {
                return Err(out_of_range(node, position(k, group_sizes), edge, pred, i, offset));
            }
        }
    }
    Ok(())
}

/// The computed initializations with their arguments as sources (no edges: the parser refused
/// them).
pub(crate) fn computed_inits(computed: Vec<(ComputedInit, Vec<Arg>)>) -> Vec<ComputedInit> {
    computed
        .into_iter()
        .map(|(init, args)| {
            let args = args
                .iter()
                .filter_map(|arg| match arg {
                    Arg::Const(c) => Some(ArgSource::Const(*c)),
                    Arg::Computed(k) => Some(ArgSource::Computed(*k)),
                    Arg::Index => Some(ArgSource::Index),
                    Arg::Workers => Some(ArgSource::Workers),
                    Arg::Edge(_) => None,
                })
                .collect();
            ComputedInit { args, ..init }
        })
        .collect()
}

/// A node reading a computed initialization of several elements gets the element at its
/// instance's index: it must not have more instances than the initialization has elements.
fn check_elements(
    nodes: &[CompiledNode],
    args: &[&[Arg]],
    groups: &[[usize; 2]],
    computed: &[ComputedInit],
) -> Result<(), Issue> {
    for ((node, node_args), &group_sizes) in nodes.iter().zip(args).zip(groups) {
        for (k, arg) in node_args.iter().enumerate() {
            let Arg::Computed(c) = arg else { continue };
            let init = &computed[*c as usize];
            if init.count > 1 && node.factor > init.count {
                let (group, k) = position(k, group_sizes);
                return Err(Issue::Invalid(format!(
                    "node {} {group} {k}: initialization {} has {} elements, one per instance, but the node has {} \
                     instances; give them the same factor",
                    quote(&node.name),
                    quote(&init.name),
                    init.count,
                    node.factor
                )));
            }
        }
    }
    Ok(())
}

/// The same rule between computed initializations: element i of one reads element i of a
/// multi-element one it names, which must have at least as many elements.
pub(crate) fn check_init_elements(computed: &[ComputedInit]) -> Result<(), Issue> {
    for init in computed {
        for source in &init.args {
            let ArgSource::Computed(c) = source else { continue };
            let read = &computed[*c as usize];
            if read.count > 1 && init.count > read.count {
                return Err(Issue::Invalid(format!(
                    "initialization {} has {} elements and reads initialization {}, which has {}, one per \
                     element; give them the same factor",
                    quote(&init.name),
                    init.count,
                    quote(&read.name),
                    read.count
                )));
            }
        }
    }
    Ok(())
}

/// The same rule for post-nodes, whose instance i reads element i.
fn check_post_elements(post: &[(CompiledNode, Vec<Arg>)], computed: &[ComputedInit]) -> Result<(), Issue> {
    for (node, args) in post {
        for arg in args {
            let Arg::Computed(c) = arg else { continue };
            let init = &computed[*c as usize];
            if init.count > 1 && node.factor > init.count {
                return Err(Issue::Invalid(format!(
                    "post-node {}: initialization {} has {} elements, one per instance, but the post-node has \
                     {} instances; give them the same factor",
                    quote(&node.name),
                    quote(&init.name),
                    init.count,
                    node.factor
                )));
            }
        }
    }
    Ok(())
}

/// A `group_by` must divide the predecessor's factor into whole groups.
fn check_group(
    node: &CompiledNode,
    (group, k): (ArgGroup, usize),
    edge: &Edge,
    pred: &CompiledNode,
) -> Result<(), Issue> {
    match edge.sel {
        Selection::Group(groups) if groups.is_plain() && !pred.factor.is_multiple_of(groups.size) => {
            let g = groups.size;
            Err(Issue::Invalid(format!(
                "node {} {group} {k} ({} from {}): group_by {g} does not divide {}'s factor {}; choose a divisor",
                quote(&node.name),
                edge.kind.name(),
                quote(&pred.name),
                quote(&pred.name),
                pred.factor
            )))
        }
        _ => Ok(()),
    }
}

/// A post-node's selections must stay inside the regular nodes they read.
fn check_post_selections(nodes: &[CompiledNode], post: &[(CompiledNode, Vec<Arg>)]) -> Result<(), Issue> {
    for (node, node_args) in post {
        for (k, arg) in node_args.iter().enumerate() {
            let Arg::Edge(edge) = arg else { continue };
            let pred = &nodes[edge.pred as usize];
            check_group(node, (ArgGroup::Kernel, k), edge, pred)?;
            if let Some((i, offset)) = edge.sel.first_out_of_range(node.factor, pred.factor) {
                return Err(out_of_range(node, (ArgGroup::Kernel, k), edge, pred, i, offset));
            }
        }
    }
    Ok(())
}

/// A post-node with one argument row per instance; its results come from the last frame.
fn post_node(graph: &mut CompiledGraph, node: CompiledNode, node_args: &[Arg]) -> PostNode {
    let start = graph.args.len();
    let mut offsets = vec![0];
    let mut ignored = Vec::new();
    for i in 0..node.factor {
        instance_row(graph, node_args, i, &mut ignored);
        offsets.push(len_u32(&graph.args) - start as u32);
    }
    let args = graph.args.split_off(start);
    PostNode { node, args, offsets }
}

/// Which argument list the `k`-th of a node's arguments belongs to, and its index there.
fn position(k: usize, [kernel, looped]: [usize; 2]) -> (ArgGroup, usize) {
    if k < kernel {
        (ArgGroup::Kernel, k)
    } else if k < kernel + looped {
        (ArgGroup::Loop, k - kernel)
    } else {
        (ArgGroup::Condition, k - kernel - looped)
    }
}

fn out_of_range(
    node: &CompiledNode,
    (group, k): (ArgGroup, usize),
    edge: &Edge,
    pred: &CompiledNode,
    i: u32,
    offset: i64,
) -> Issue {
    let plural = if pred.factor == 1 { "instance" } else { "instances" };
    Issue::Invalid(format!(
        "node {} instance {i}, {group} {k} ({} from {}): offset {offset} selects instance {}, but {} has {} {plural} \
         (0..{}); narrow the selection or change the factors",
        quote(&node.name),
        edge.kind.name(),
        quote(&pred.name),
        i64::from(i) + offset,
        quote(&pred.name),
        pred.factor,
        pred.factor - 1,
    ))
}

/// Totals of kernel arguments and of (not yet deduplicated) predecessor entries.
#[derive(Clone, Copy, Debug, Default)]
struct Sizes {
    args: u64,
    edges: u64,
}

/// Counts arguments and edges over all instances; both must fit the u32 CSR offsets.
fn check_sizes(nodes: &[CompiledNode], args: &[&[Arg]]) -> Result<Sizes, Issue> {
    let mut total = Sizes::default();
    for (node, node_args) in nodes.iter().zip(args) {
        let mut per = Sizes::default();
        for arg in node_args.iter() {
            match arg {
                Arg::Const(_) | Arg::Computed(_) | Arg::Index | Arg::Workers => per.args += 1,
                Arg::Edge(edge) => {
                    let len = edge.sel.len(nodes[edge.pred as usize].factor);
                    per.edges = per.edges.saturating_add(len);
                    if edge.kind == EdgeKind::Res {
                        per.args = per.args.saturating_add(len);
                    }
                }
            }
        }
        let factor = u64::from(node.factor);
        total.args = total.args.saturating_add(per.args.saturating_mul(factor));
        total.edges = total.edges.saturating_add(per.edges.saturating_mul(factor));
        if total.args > MAX_ENTRIES || total.edges > MAX_ENTRIES {
            return Err(Issue::TooLarge(format!(
                "node {} brings the graph to more than {MAX_ENTRIES} kernel arguments or edges, the most this \
                 runtime supports; select fewer predecessor instances",
                quote(&node.name)
            )));
        }
    }
    Ok(total)
}

/// Fills the per-instance arrays: node, index, arguments, predecessors and dependency counts.
fn build_instances(graph: &mut CompiledGraph, args: &[&[Arg]], groups: &[[usize; 2]], count: u32, sizes: Sizes) {
    let n = count as usize;
    graph.inst_node.reserve_exact(n);
    graph.inst_index.reserve_exact(n);
    graph.dep_count.reserve_exact(n);
    graph.arg_offsets.reserve_exact(n + 1);
    graph.loop_start.reserve_exact(n);
    graph.cond_start.reserve_exact(n);
    graph.pred_offsets.reserve_exact(n + 1);
    graph.args.reserve_exact(usize::try_from(sizes.args).unwrap_or(0));
    graph.preds.reserve(usize::try_from(sizes.edges).unwrap_or(0));
    graph.arg_offsets.push(0);
    graph.pred_offsets.push(0);
    let mut scratch = Vec::new();
    for (id, (node_args, &[kernel, looped])) in args.iter().zip(groups).enumerate() {
        let node = u32::try_from(id).unwrap_or(u32::MAX);
        for i in 0..graph.nodes[id].factor {
            graph.inst_node.push(node);
            graph.inst_index.push(i);
            scratch.clear();
            instance_row(graph, &node_args[..kernel], i, &mut scratch);
            graph.loop_start.push(len_u32(&graph.args));
            instance_row(graph, &node_args[kernel..kernel + looped], i, &mut scratch);
            graph.cond_start.push(len_u32(&graph.args));
            instance_row(graph, &node_args[kernel + looped..], i, &mut scratch);
            scratch.sort_unstable();
            scratch.dedup();
            graph.dep_count.push(len_u32(&scratch));
            graph.preds.extend_from_slice(&scratch);
            graph.arg_offsets.push(len_u32(&graph.args));
            graph.pred_offsets.push(len_u32(&graph.preds));
        }
    }
}

/// Appends the arguments `node_args` of instance `i` to `graph.args` and the predecessors they
/// select to `preds` (not deduplicated).
fn instance_row(graph: &mut CompiledGraph, node_args: &[Arg], i: u32, preds: &mut Vec<u32>) {
    for arg in node_args {
        match arg {
            Arg::Const(c) => graph.args.push(ArgSource::Const(*c)),
            Arg::Computed(k) => graph.args.push(ArgSource::Computed(*k)),
            Arg::Index => graph.args.push(ArgSource::Index),
            Arg::Workers => graph.args.push(ArgSource::Workers),
            Arg::Edge(edge) => {
                let pred = &graph.nodes[edge.pred as usize];
                let (first, factor) = (pred.first, pred.factor);
                edge.sel.for_each(i, factor, |j| {
                    if edge.kind == EdgeKind::Res {
                        graph.args.push(ArgSource::Result(first + j));
                    }
                    preds.push(first + j);
                });
            }
        }
    }
}

/// Turns groups of instances into tasks (README, "Groups of instances"): a group's leader takes
/// the union of its members' predecessors (mapped to their own leaders); the other members keep
/// their arguments but lose their predecessors, so that they are never scheduled on their own.
fn group_tasks(graph: &mut CompiledGraph) -> Result<(), Issue> {
    let n = graph.instance_count();
    let mut leader = Vec::with_capacity(n);
    for node in &graph.nodes {
        leader.extend((0..node.factor).map(|i| node.first + i / node.group_size * node.group_size));
    }
    let (mut preds, mut offsets, mut deps) = (Vec::new(), vec![0u32], Vec::with_capacity(n));
    let mut scratch = Vec::new();
    for inst in 0..n as u32 {
        scratch.clear();
        if leader[inst as usize] == inst {
            for member in graph.group_of(inst) {
                for &pred in graph.predecessors(member) {
                    let pred_leader = leader[pred as usize];
                    if pred_leader != inst {
                        scratch.push(pred_leader);
                    } else if pred >= member {
                        return Err(Issue::Invalid(format!(
                            "{} reads {}, which its group (group_size {}) runs after it; use a smaller group_size \
                             or read only earlier instances",
                            graph.instance_name(member),
                            graph.instance_name(pred),
                            graph.node_of(inst).group_size
                        )));
                    }
                }
            }
            scratch.sort_unstable();
            scratch.dedup();
        }
        preds.extend_from_slice(&scratch);
        offsets.push(len_u32(&preds));
        deps.push(len_u32(&scratch));
    }
    graph.preds = preds;
    graph.pred_offsets = offsets;
    graph.dep_count = deps;
    graph.leader = leader;
    Ok(())
}

/// Builds the successor CSR from the predecessor CSR. Each list comes out ascending because
/// successors are visited in id order.
fn build_successors(graph: &mut CompiledGraph) {
    let n = graph.instance_count();
    let mut offsets = vec![0u32; n + 1];
    for &pred in &graph.preds {
        offsets[pred as usize + 1] += 1;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let mut cursor = offsets.clone();
    let mut succs = vec![0u32; graph.preds.len()];
    for succ in 0..n {
        let (lo, hi) = (graph.pred_offsets[succ] as usize, graph.pred_offsets[succ + 1] as usize);
        for &pred in &graph.preds[lo..hi] {
            let slot = &mut cursor[pred as usize];
            succs[*slot as usize] = succ as u32;
            *slot += 1;
        }
    }
    graph.succ_offsets = offsets;
    graph.succs = succs;
}

/// A length known to fit u32 (checked by `check_sizes` and `assign_instances`).
fn len_u32<T>(items: &[T]) -> u32 {
    u32::try_from(items.len()).unwrap_or(u32::MAX)
}
