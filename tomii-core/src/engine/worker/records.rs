//! The hot path's view of the graph: one compact record per instance (README.md, "The per-task
//! record"), and instance ids that are in range by construction, so that the loop reads its
//! records and successor lists without a bounds check.
//!
//! Built once before the run; never written afterwards. Nothing here allocates after `new`.

use crate::graph::CompiledGraph;

/// An instance id checked against the graph: `0 <= id < instances`. Only [`Records`] makes one,
/// so a record or slot cell indexed by it is always in bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub(in crate::engine) struct Inst(u32);

impl Inst {
    /// The id as the graph numbers it.
    #[inline(always)]
    pub(in crate::engine) fn get(self) -> u32 {
        self.0
    }
}

/// Flag of [`Record::flags`]: a successor reads the result, or the instance is a sink's member.
pub(super) const KEEPS_RESULT: u32 = 1;
/// Flag: the instance is a task without successors (its completion counts towards its frame's).
pub(super) const SINK: u32 = 2;

/// What one task of the loop reads about its instance, in one 32-byte record.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub(super) struct Record {
    /// The instance's node.
    pub(super) node: u32,
    /// Distinct predecessors: the arrivals that make it ready in one generation.
    pub(super) deps: u32,
    /// The workers allowed to run it: `worker_lo .. worker_hi`.
    pub(super) worker_lo: u32,
    pub(super) worker_hi: u32,
    /// Its successors: `successors[succ_start .. succ_end]` of [`Records`].
    succ_start: u32,
    succ_end: u32,
    /// Its index within its node (`$index`, the kernel's `ctx.instance`).
    pub(super) index: u32,
    /// [`KEEPS_RESULT`], [`SINK`].
    pub(super) flags: u32,
}

/// One [`Record`] per instance and the successor lists they point into.
pub(super) struct Records {
    records: Box<[Record]>,
    successors: Box<[Inst]>,
}

impl Records {
    /// The records of `graph` for a run on `workers` workers. `keeps_result[i]` says whether
    /// instance i's result is stored; `sink[i]` whether it is a task without successors.
    pub(super) fn new(graph: &CompiledGraph, workers: u32, keeps_result: &[bool], sink: &[bool]) -> Records {
        let instances = graph.instance_count();
        assert!(instances <= u32::MAX as usize, "instance ids are u32");
        let successors: Box<[Inst]> = graph
            .succs
            .iter()
            .map(|&next| {
                assert!((next as usize) < instances, "a successor id is out of range");
                Inst(next)
            })
            .collect();
        let records = (0..instances)
            .map(|i| {
                let node = &graph.nodes[graph.inst_node[i] as usize];
                let (worker_lo, worker_hi) = node.use_workers.unwrap_or((0, workers));
                let (succ_start, succ_end) = (graph.succ_offsets[i], graph.succ_offsets[i + 1]);
                assert!(succ_start <= succ_end && succ_end as usize <= successors.len(), "successor rows");
                let flags = if keeps_result[i] { KEEPS_RESULT } else { 0 } | if sink[i] { SINK } else { 0 };
                Record {
                    node: graph.inst_node[i],
                    deps: graph.dep_count[i],
                    worker_lo,
                    worker_hi,
                    succ_start,
                    succ_end,
                    index: graph.inst_index[i],
                    flags,
                }
            })
            .collect();
        Records { records, successors }
    }

    /// The instance `id`, if the graph has it.
    #[inline(always)]
    pub(super) fn check(&self, id: u32) -> Option<Inst> {
        ((id as usize) < self.records.len()).then_some(Inst(id))
    }

    /// The record of `inst`.
    #[inline(always)]
    pub(super) fn get(&self, inst: Inst) -> &Record {
        // SAFETY: an `Inst` is made only by `check` or from the successor lists, which `new`
        // checked, so it is below `records.len()`.
        unsafe { self.records.get_unchecked(inst.0 as usize) }
    }

    /// The successors of the instance whose record is `record`.
    #[inline(always)]
    pub(super) fn successors(&self, record: &Record) -> &[Inst] {
        // SAFETY: `new` checked every record's row against `successors.len()`, and records are
        // never written afterwards.
        unsafe { self.successors.get_unchecked(record.succ_start as usize..record.succ_end as usize) }
    }

    /// Whether `worker` may run the instance of `record`.
    #[inline(always)]
    pub(super) fn may_run(record: &Record, worker: u32) -> bool {
        (record.worker_lo..record.worker_hi).contains(&worker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: usize) -> CompiledGraph {
        let nodes: Vec<String> = (0..n)
            .map(|i| match i {
                0 => r#"{"name": "n0", "function": "noop"}"#.to_owned(),
                _ => format!(
                    r#"{{"name": "n{i}", "function": "noop", "args": [{{"type": "$dep", "predecessor": {{"name": "n{}"}}}}]}}"#,
                    i - 1
                ),
            })
            .collect();
        crate::graph::parse_str("chain.json", &format!(r#"{{"nodes": [{}]}}"#, nodes.join(","))).unwrap()
    }

    #[test]
    fn records_carry_what_the_loop_reads() {
        let graph = chain(3);
        let sink = [false, false, true];
        let records = Records::new(&graph, 2, &[false, false, true], &sink);
        let last = records.check(2).unwrap();
        assert_eq!(records.check(3), None, "out of range");
        let record = records.get(last);
        assert_eq!((record.node, record.deps, record.worker_lo, record.worker_hi), (2, 1, 0, 2));
        assert_eq!(record.flags, KEEPS_RESULT | SINK);
        assert!(records.successors(record).is_empty());
        let first = records.get(records.check(0).unwrap());
        assert_eq!(records.successors(first), [records.check(1).unwrap()]);
        assert!(Records::may_run(first, 1) && !Records::may_run(first, 2));
        assert_eq!(size_of::<Record>(), 32);
    }
}
