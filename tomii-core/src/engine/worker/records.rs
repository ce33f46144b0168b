//! The hot path's view of the graph: one compact record per instance (README.md, "The per-task
//! record"), and instance ids that are in range by construction, so that the loop reads its
//! records and successor lists without a bounds check.
//!
//! Built once before the run; never written afterwards. Nothing here allocates after `new`.

use std::ffi::{CString, c_char, c_void};

use tomii_types::abi::{TomiiKernelFn, TomiiTask};

use super::body::NodeRun;
use crate::graph::{ArgSource, CompiledGraph};

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
/// Flag: its node's body is simple (`NodeRun::simple`): gather `args`, call `kernel` once.
pub(super) const SIMPLE: u32 = 4;
/// Flag: its node's tasks run groups of instances (`NodeRun::grouped`).
pub(super) const GROUPED: u32 = 8;

/// What one task of the loop reads about its instance, in one 64-byte record (a cache line).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
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
    /// [`KEEPS_RESULT`], [`SINK`], [`SIMPLE`], [`GROUPED`].
    pub(super) flags: u32,
    /// Its kernel arguments: `args[args_start .. args_end]` of [`Records`].
    args_start: u32,
    args_end: u32,
    /// Its node's kernel and the kernel's registry data.
    pub(super) kernel: TomiiKernelFn,
    pub(super) kernel_data: *mut c_void,
    /// Its node's name, NUL-terminated (owned by [`Records`]), for the kernel's call context.
    pub(super) node_name: *const c_char,
}

// SAFETY: `kernel_data` is opaque to the host and the kernel ABI requires a kernel (and so its
// data) to accept calls from any worker thread; `node_name` points into the `CString`s of the
// `Records` holding the record, which are never written.
unsafe impl Send for Record {}
// SAFETY: as above; the host never dereferences `kernel_data`.
unsafe impl Sync for Record {}

/// One [`Record`] per instance, the successor lists and argument lists they point into, each
/// instance's descriptor template (its per-frame fields left blank) and the nodes' names.
pub(super) struct Records<'g> {
    records: Box<[Record]>,
    successors: Box<[Inst]>,
    args: &'g [ArgSource],
    templates: Box<[TomiiTask]>,
    names: Box<[CString]>,
}

impl<'g> Records<'g> {
    /// The records of `graph` for a run on `workers` workers. Per node: `runs` (how its tasks
    /// run) and `names`; per instance: `keeps_result[i]` (whether its result is stored), `sink[i]`
    /// (whether it is a task without successors) and `templates[i]` (its descriptor template).
    pub(super) fn new(
        graph: &'g CompiledGraph,
        workers: u32,
        runs: &[NodeRun],
        names: Vec<CString>,
        keeps_result: &[bool],
        sink: &[bool],
        templates: Vec<TomiiTask>,
    ) -> Records<'g> {
        let instances = graph.instance_count();
        assert!(instances <= u32::MAX as usize, "instance ids are u32");
        assert_eq!(templates.len(), instances, "one template per instance");
        assert!(runs.len() == graph.nodes.len() && names.len() == graph.nodes.len(), "one run and name per node");
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
                let run = &runs[graph.inst_node[i] as usize];
                // The row of `graph.args_of(i)`.
                let (args_start, args_end) = (graph.arg_offsets[i], graph.loop_start[i]);
                assert!(args_start <= args_end && args_end as usize <= graph.args.len(), "argument rows");
                let flags =
                    [(keeps_result[i], KEEPS_RESULT), (sink[i], SINK), (run.simple, SIMPLE), (run.grouped, GROUPED)]
                        .iter()
                        .fold(0, |flags, &(set, flag)| if set { flags | flag } else { flags });
                Record {
                    node: graph.inst_node[i],
                    deps: graph.dep_count[i],
                    worker_lo,
                    worker_hi,
                    succ_start,
                    succ_end,
                    index: graph.inst_index[i],
                    flags,
                    args_start,
                    args_end,
                    kernel: run.kernel.func,
                    kernel_data: run.kernel.data,
                    node_name: names[graph.inst_node[i] as usize].as_ptr(),
                }
            })
            .collect();
        Records {
            records,
            successors,
            args: &graph.args,
            templates: templates.into_boxed_slice(),
            names: names.into_boxed_slice(),
        }
    }

    /// The name of node `node`, NUL-terminated.
    pub(super) fn node_name(&self, node: u32) -> &CString {
        &self.names[node as usize]
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

    /// The descriptor template of `inst`.
    #[inline(always)]
    pub(super) fn template(&self, inst: Inst) -> &TomiiTask {
        // SAFETY: as in `get`; `new` checked that there is one template per record.
        unsafe { self.templates.get_unchecked(inst.0 as usize) }
    }

    /// The successors of the instance whose record is `record`.
    #[inline(always)]
    pub(super) fn successors(&self, record: &Record) -> &[Inst] {
        // SAFETY: `new` checked every record's row against `successors.len()`, and records are
        // never written afterwards.
        unsafe { self.successors.get_unchecked(record.succ_start as usize..record.succ_end as usize) }
    }

    /// The kernel arguments of the instance whose record is `record`.
    #[inline(always)]
    pub(super) fn args(&self, record: &Record) -> &'g [ArgSource] {
        // SAFETY: `new` checked every record's row against `args.len()`, and records are never
        // written afterwards.
        unsafe { self.args.get_unchecked(record.args_start as usize..record.args_end as usize) }
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
        let templates = crate::engine::worker::templates(&graph, 2);
        let run = NodeRun { kernel: crate::plugin::NEVER_CALLED, variadic: false, simple: true, grouped: false };
        let names = ["n0", "n1", "n2"].map(|n| CString::new(n).unwrap()).to_vec();
        let records = Records::new(&graph, 2, &[run; 3], names, &[false, false, true], &sink, templates);
        let last = records.check(2).unwrap();
        assert_eq!(records.check(3), None, "out of range");
        let record = records.get(last);
        assert_eq!((record.node, record.deps, record.worker_lo, record.worker_hi), (2, 1, 0, 2));
        assert_eq!(record.flags, KEEPS_RESULT | SINK | SIMPLE);
        assert!(records.args(record).is_empty());
        assert_eq!(unsafe { std::ffi::CStr::from_ptr(record.node_name) }, c"n2");
        assert!(records.successors(record).is_empty());
        let first = records.get(records.check(0).unwrap());
        assert_eq!(records.successors(first), [records.check(1).unwrap()]);
        assert!(Records::may_run(first, 1) && !Records::may_run(first, 2));
        assert_eq!(records.template(last).node, 2);
        assert_eq!(size_of::<Record>(), 64);
    }
}
