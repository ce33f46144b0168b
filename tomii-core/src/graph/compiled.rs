//! The compiled graph: flat per-instance arrays (CSR lists) that the engine reads on its hot path
//! without allocating. Built once by `compile.rs`; read-only afterwards.
//!
//! Instance ids are global `u32`s: node `n`'s instances are `nodes[n].first .. first + factor`.
//! Accessors take an instance id below `instance_count()` and panic otherwise (a caller bug).

use super::literal::Literal;
pub use super::spec::CmpOp;
use super::v12::Dialect;

/// A graph ready to run. See the README ("Compiled form") for the meaning of each array.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompiledGraph {
    pub name: String,
    /// The source name (usually the file path), for messages.
    pub source: String,
    /// In file order; a node's id is its index.
    pub nodes: Vec<CompiledNode>,
    /// Literal initializations in file order.
    pub inits: Vec<(String, Literal)>,
    /// Computed initializations in file order (an `ArgSource::Computed` indexes this).
    pub computed: Vec<ComputedInit>,
    /// Post-nodes, run once after the last frame, in file order (README, "Post-nodes").
    pub post: Vec<PostNode>,
    /// Pool of constant arguments (inline literals and `$ref` values), indexed by `ArgSource::Const`.
    pub consts: Vec<Literal>,
    /// Node id of each instance.
    pub inst_node: Vec<u32>,
    /// Index of each instance within its node (0..factor).
    pub inst_index: Vec<u32>,
    /// Number of distinct predecessor instances of each instance (over `$res`, `$dep`, `$barrier`).
    pub dep_count: Vec<u32>,
    /// CSR offsets into `succs`; length = instance count + 1.
    pub succ_offsets: Vec<u32>,
    /// Distinct successor instances of each instance, ascending.
    pub succs: Vec<u32>,
    /// CSR offsets into `preds`; length = instance count + 1.
    pub pred_offsets: Vec<u32>,
    /// Distinct predecessor instances of each instance, ascending (`dep_count[i]` of them).
    pub preds: Vec<u32>,
    /// CSR offsets into `args`; length = instance count + 1. An instance's row holds its kernel
    /// arguments, then from `loop_start` its loop arguments, then from `cond_start` its
    /// condition's arguments.
    pub arg_offsets: Vec<u32>,
    /// Per instance: where its loop arguments start in `args`.
    pub loop_start: Vec<u32>,
    /// Per instance: where its condition's arguments start in `args`.
    pub cond_start: Vec<u32>,
    /// Kernel arguments of each instance, in call order.
    pub args: Vec<ArgSource>,
    /// Tasks with no predecessor, ascending (inputs are not tasks).
    pub roots: Vec<u32>,
    /// The instances of the inputs, in input order then instance order: a frame's values, in
    /// `NextFrame::Start`, come in this order.
    pub inputs: Vec<u32>,
    /// Number of tasks on the longest path from each instance to a sink, itself included.
    pub rank: Vec<u32>,
    /// Per instance: the first instance of its task's group (itself when `group_size` is 1). Only
    /// leaders are tasks: the other members have no predecessors, successors or root entry of
    /// their own, and run inside their leader's task.
    pub leader: Vec<u32>,
    /// Where the `$network` input's packets come from (README, "Network sources").
    pub network: Option<NetworkConfig>,
    /// The dialect the file was written in (README, "Tomii 1.2 graph files").
    pub dialect: Dialect,
    /// One line per node whose Tomii 1.2 meaning the current format writes otherwise: what it
    /// selects and how it is written now (printed as `warning: ...`).
    pub warnings: Vec<String>,
    /// The computed initializations evaluated while the graph compiled, because a count named
    /// one (README.md, "Computed counts"): the first run takes them instead of computing them.
    pub precomputed: super::inits::Precomputed,
}

/// A graph's `network_config`, resolved: sockets `start_port + i` for `i < num_sockets` (0: ports
/// the system chooses), packets of exactly `packet_length` bytes, `frame_packets` of them a frame
/// (the factor of the `$network` input, node `input`).
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkConfig {
    pub socket_type: SocketType,
    pub address: std::net::IpAddr,
    pub start_port: u16,
    pub num_sockets: u16,
    pub packet_length: u32,
    pub frame_packets: u32,
    /// Packet buffers per socket beyond those the frames in flight hold.
    pub buffer_depth: u32,
    /// Kernel: the packet's bytes → the value its `$network` instance holds.
    pub extract_packet_func: Option<String>,
    /// Kernel: the decoded packet → its frame id (absent: the packet header's).
    pub id_function: Option<String>,
    /// Kernel and constant arguments: the decoded packet, then these → its index within its frame
    /// (absent: the packet header's).
    pub index_function: Option<(String, Vec<Literal>)>,
    /// The node id of the `$network` input.
    pub input: u32,
}

/// How packets arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocketType {
    /// One datagram per packet.
    Udp,
    /// Streams of packets, each preceded by its length (a little-endian u32), on any number of
    /// connections per port.
    Tcp,
}

impl SocketType {
    pub fn name(self) -> &'static str {
        match self {
            SocketType::Udp => "udp",
            SocketType::Tcp => "tcp",
        }
    }

    /// `"udp"` or `"tcp"`, in any case.
    pub fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "udp" => Some(SocketType::Udp),
            "tcp" => Some(SocketType::Tcp),
            _ => None,
        }
    }
}

impl std::fmt::Display for SocketType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl NetworkConfig {
    /// Whether the packet header is read, for the frame id or the index.
    pub fn reads_header(&self) -> bool {
        self.id_function.is_none() || self.index_function.is_none()
    }
}

/// One node of the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct CompiledNode {
    pub name: String,
    /// An input of the graph (README, "Inputs"): no kernel; each frame's source gives the values
    /// of its instances. Inputs follow the other nodes.
    pub input: bool,
    /// Kernel name (empty for an input).
    pub function: String,
    /// Number of instances (at least 1).
    pub factor: u32,
    /// Global id of instance 0.
    pub first: u32,
    /// 1 = high, 0 = normal, -1 = low, or any i32.
    pub priority: i32,
    /// Allowed workers, half-open `(lo, hi)`; `None` = any worker. Not yet checked against the
    /// worker count (the engine does that).
    pub use_workers: Option<(u32, u32)>,
    /// Kernel calls per instance: a `loop`'s factor, 1 without a loop (README, "Loops").
    pub iterations: u32,
    /// Run an instance only if this holds (README, "Conditions").
    pub condition: Option<Condition>,
    /// Instances run by one task, in index order (README, "Groups of instances"); 1 by default.
    pub group_size: u32,
}

/// A node run once, after the last frame; its `Result` arguments read the last frame.
#[derive(Clone, Debug, PartialEq)]
pub struct PostNode {
    pub node: CompiledNode,
    /// Arguments of every instance, one row each (CSR with `offsets`).
    pub args: Vec<ArgSource>,
    pub offsets: Vec<u32>,
}

impl PostNode {
    /// The arguments of instance `i`.
    pub fn args_of(&self, i: u32) -> &[ArgSource] {
        &self.args[self.offsets[i as usize] as usize..self.offsets[i as usize + 1] as usize]
    }
}

/// An initialization computed by a kernel when a run starts (README, "Computed initializations").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComputedInit {
    pub name: String,
    /// Kernel name.
    pub function: String,
    /// Elements: the kernel is called this many times, call i with `$index` = i.
    pub count: u32,
    /// The kernel's arguments: `Const`, `Computed` (of an earlier one), `Index`, `Workers`.
    pub args: Vec<ArgSource>,
}

/// A node's condition: the instance runs only if `function(condition args) <op> value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub op: CmpOp,
    pub value: Literal,
    pub function: String,
}

/// Where one kernel argument comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgSource {
    /// The result of this predecessor instance (global id).
    Result(u32),
    /// The constant at this index of `consts`.
    Const(u32),
    /// `$index`: the instance's index within its node, as a `usize`.
    Index,
    /// `$workers`: the run's number of workers, as a `usize`.
    Workers,
    /// A computed initialization: its element at the instance's index, or its only element.
    Computed(u32),
}

impl CompiledGraph {
    /// Number of instances over all nodes.
    pub fn instance_count(&self) -> usize {
        self.inst_node.len()
    }

    /// The largest number of kernel arguments of any instance (O(instances)).
    pub fn max_args(&self) -> usize {
        max_row(&self.arg_offsets)
    }

    /// The largest number of successors of any instance (O(instances)).
    pub fn max_successors(&self) -> usize {
        max_row(&self.succ_offsets)
    }

    /// Distinct successor instances of `inst`, ascending.
    pub fn successors(&self, inst: u32) -> &[u32] {
        row(&self.succ_offsets, &self.succs, inst)
    }

    /// Distinct predecessor instances of `inst`, ascending.
    pub fn predecessors(&self, inst: u32) -> &[u32] {
        row(&self.pred_offsets, &self.preds, inst)
    }

    /// Kernel arguments of `inst`, in call order.
    pub fn args_of(&self, inst: u32) -> &[ArgSource] {
        let i = inst as usize;
        &self.args[self.arg_offsets[i] as usize..self.loop_start[i] as usize]
    }

    /// What the first iteration of `inst`'s loop receives after its kernel arguments.
    pub fn loop_args_of(&self, inst: u32) -> &[ArgSource] {
        let i = inst as usize;
        &self.args[self.loop_start[i] as usize..self.cond_start[i] as usize]
    }

    /// The instances run by the task of `leader`, in order (just `leader` without groups).
    pub fn group_of(&self, leader: u32) -> std::ops::Range<u32> {
        let node = self.node_of(leader);
        leader..(leader.saturating_add(node.group_size)).min(node.first + node.factor)
    }

    /// Whether `inst` is an instance of an input.
    pub fn is_input(&self, inst: u32) -> bool {
        self.node_of(inst).input
    }

    /// Whether `inst` is a task (the leader of its group).
    pub fn is_task(&self, inst: u32) -> bool {
        self.leader.get(inst as usize).is_none_or(|&leader| leader == inst)
    }

    /// The arguments of `inst`'s condition function.
    pub fn condition_args_of(&self, inst: u32) -> &[ArgSource] {
        let i = inst as usize;
        &self.args[self.cond_start[i] as usize..self.arg_offsets[i + 1] as usize]
    }

    /// The node of `inst`.
    pub fn node_of(&self, inst: u32) -> &CompiledNode {
        &self.nodes[self.inst_node[inst as usize] as usize]
    }

    /// `inst` as `name[index]`, for messages.
    pub fn instance_name(&self, inst: u32) -> String {
        format!("{}[{}]", self.node_of(inst).name, self.inst_index[inst as usize])
    }

    /// The id of the node called `name`, if any (O(nodes)).
    pub fn node_id(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|node| node.name == name)
    }
}

fn row<'a, T>(offsets: &[u32], items: &'a [T], inst: u32) -> &'a [T] {
    let i = inst as usize;
    &items[offsets[i] as usize..offsets[i + 1] as usize]
}

fn max_row(offsets: &[u32]) -> usize {
    offsets.windows(2).map(|pair| (pair[1] - pair[0]) as usize).max().unwrap_or(0)
}
