//! Orders the instance graph: Kahn's algorithm for a topological order, then roots and
//! critical-path ranks; when the order is incomplete, finds one cycle and reports it.
//!
//! Linear in instances plus edges; works on instances (not nodes), so a node may read its own
//! other instances as long as no instance depends on itself.

use super::compiled::CompiledGraph;
use super::error::{Issue, one_line};

/// Sets `roots` and `rank`, or reports a cycle.
pub(crate) fn finish(graph: &mut CompiledGraph) -> Result<(), Issue> {
    let order = topological_order(graph);
    if order.len() < graph.instance_count() {
        let cycle = find_cycle(graph, &order);
        return Err(Issue::Cycle(describe(graph, &cycle)));
    }
    let count = graph.instance_count() as u32;
    graph.roots =
        (0..count).filter(|&i| graph.dep_count[i as usize] == 0 && graph.is_task(i) && !graph.is_input(i)).collect();
    graph.inputs = (0..count).filter(|&i| graph.is_input(i)).collect();
    graph.rank = ranks(graph, &order);
    if !graph.leader.is_empty() {
        // A group's members share its leader's rank.
        for inst in 0..graph.instance_count() {
            graph.rank[inst] = graph.rank[graph.leader[inst] as usize];
        }
    }
    Ok(())
}

/// Kahn's algorithm; the result misses every instance on or behind a cycle.
fn topological_order(graph: &CompiledGraph) -> Vec<u32> {
    let mut waiting = graph.dep_count.clone();
    let mut order: Vec<u32> = (0..graph.instance_count() as u32).filter(|&i| waiting[i as usize] == 0).collect();
    let mut head = 0;
    while let Some(&inst) = order.get(head) {
        head += 1;
        for &succ in graph.successors(inst) {
            let left = &mut waiting[succ as usize];
            *left -= 1;
            if *left == 0 {
                order.push(succ);
            }
        }
    }
    order
}

/// Longest path to a sink, counted in tasks, from the reverse topological order.
fn ranks(graph: &CompiledGraph, order: &[u32]) -> Vec<u32> {
    let mut rank = vec![1u32; graph.instance_count()];
    for &inst in order.iter().rev() {
        let below = graph.successors(inst).iter().map(|&s| rank[s as usize]).max().unwrap_or(0);
        rank[inst as usize] = below + 1;
    }
    rank
}

/// One cycle, in edge direction (each instance is a predecessor of the next), starting at its
/// smallest instance id. Walks predecessors among the unordered instances: each of them has at
/// least one unordered predecessor, so the walk must revisit an instance.
fn find_cycle(graph: &CompiledGraph, order: &[u32]) -> Vec<u32> {
    let n = graph.instance_count();
    let mut ordered = vec![false; n];
    order.iter().for_each(|&i| ordered[i as usize] = true);
    let Some(start) = (0..n).find(|&i| !ordered[i]) else { return Vec::new() };
    let mut seen_at = vec![u32::MAX; n];
    let mut path = Vec::new();
    let mut inst = start as u32;
    while seen_at[inst as usize] == u32::MAX {
        seen_at[inst as usize] = path.len() as u32;
        path.push(inst);
        match graph.predecessors(inst).iter().find(|&&p| !ordered[p as usize]) {
            Some(&pred) => inst = pred,
            None => return Vec::new(),
        }
    }
    let mut cycle = path.split_off(seen_at[inst as usize] as usize);
    cycle.reverse();
    let smallest = cycle.iter().enumerate().min_by_key(|&(_, &i)| i).map_or(0, |(at, _)| at);
    cycle.rotate_left(smallest);
    cycle
}

/// `a[0] → b[0] → a[0]`, shortened in the middle when long.
fn describe(graph: &CompiledGraph, cycle: &[u32]) -> String {
    const SHOWN: usize = 10;
    let name = |&inst: &u32| one_line(&graph.instance_name(inst));
    let Some(first) = cycle.first() else {
        return "(internal: no cycle found)".to_owned();
    };
    let mut parts: Vec<String> = if cycle.len() <= SHOWN {
        cycle.iter().map(name).collect()
    } else {
        let mut parts: Vec<String> = cycle[..SHOWN / 2].iter().map(name).collect();
        parts.push(format!("… ({} more) …", cycle.len() - SHOWN + 2));
        parts.extend(cycle[cycle.len() - SHOWN / 2 + 2..].iter().map(name));
        parts
    };
    parts.push(name(first));
    parts.join(" → ")
}
