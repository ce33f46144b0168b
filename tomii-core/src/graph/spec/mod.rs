//! Reads the graph JSON into a syntax-level description ([`GraphSpec`]): every field checked for
//! its shape, unknown and unsupported fields rejected by name. Names are not resolved here
//! (`resolve.rs` does that), so nodes may refer to nodes further down the file.
//!
//! Never panics on any JSON; every error names the node, argument or field at fault. This file
//! holds the description; the readers are split by what they read: the top-level object and its
//! inputs (`file.rs`), `network_config` (`network.rs`), initializations (`init.rs`), nodes and
//! their fields (`node.rs`), arguments and edges (`arg.rs`), and the shape checks they share
//! (`fields.rs`).

use std::borrow::Cow;
use std::ops::Range;

use super::literal::Literal;

mod arg;
mod fields;
mod file;
mod init;
mod network;
mod node;

pub(crate) use arg::edge;
pub(crate) use file::{add_input, check_post_nodes, input_spec, read};
pub(crate) use init::{init as read_init, literal_init};
pub(crate) use node::{NodeFields, factor, node_spec};

/// The whole file, checked for shape.
#[derive(Debug)]
pub(crate) struct GraphSpec<'a> {
    pub name: Option<String>,
    pub inits: Vec<InitSpec<'a>>,
    /// The nodes, then the inputs (nodes with `input` set, no function and no arguments).
    pub nodes: Vec<NodeSpec<'a>>,
    /// Nodes run once, after the last frame.
    pub post_nodes: Vec<NodeSpec<'a>>,
    /// The `args` and `loop_args` of every node and post-node, in file order (each node holds
    /// the ranges of its own), so that reading a node makes no list of its own.
    pub args: Vec<ArgSpec<'a>>,
    /// `network_config`: packets feed the `$network` input (its node is among `nodes`).
    pub network: Option<NetworkSpec<'a>>,
}

/// The name of the input a `network_config` block adds: nodes read packets from it.
pub const NETWORK_INPUT: &str = "$network";

/// `network_config`, checked for shape; numbers may be initializations' names.
#[derive(Debug)]
pub(crate) struct NetworkSpec<'a> {
    pub socket_type: String,
    /// A literal address, or the name of a String initialization holding one.
    pub address: String,
    pub start_port: FactorSpec,
    pub num_sockets: FactorSpec,
    pub packet_length: FactorSpec,
    pub buffer_depth: FactorSpec,
    pub extract_packet_func: Option<String>,
    pub id_function: Option<String>,
    /// `index_function`: its kernel and the arguments passed after the packet.
    pub index_function: Option<(String, Vec<ArgSpec<'a>>)>,
}

#[derive(Debug)]
pub(crate) struct InitSpec<'a> {
    pub name: String,
    pub value: InitValue<'a>,
}

/// What an initialization holds.
#[derive(Debug)]
pub(crate) enum InitValue<'a> {
    /// `"value"`: a literal.
    Literal(Literal),
    /// `"function"` (with `"args"` and `"factor"`): computed by a kernel when a run starts.
    Computed { function: String, args: Vec<ArgSpec<'a>>, factor: FactorSpec },
}

/// Names are borrowed from the text (or its JSON tree) where they can be.
#[derive(Debug)]
pub(crate) struct NodeSpec<'a> {
    pub name: Cow<'a, str>,
    /// An input: its values come from the frame source, not from a kernel.
    pub input: bool,
    pub function: Cow<'a, str>,
    pub factor: FactorSpec,
    pub priority: i32,
    /// Half-open worker range.
    pub use_workers: Option<(u32, u32)>,
    /// Its `args`: a range of [`GraphSpec::args`].
    pub args: Range<usize>,
    /// `loop.factor`: iterations per instance (absent: one).
    pub iterations: Option<FactorSpec>,
    /// `loop_args`, appended to `args` in the loop's first iteration: a range of
    /// [`GraphSpec::args`].
    pub loop_args: Range<usize>,
    pub condition: Option<Box<ConditionSpec<'a>>>,
    /// `group_size`: instances per task (absent: one).
    pub group_size: Option<u32>,
}

/// A node's `condition`: run the instance only if `function(args) <op> value`.
#[derive(Debug)]
pub(crate) struct ConditionSpec<'a> {
    pub op: CmpOp,
    pub value: Literal,
    pub function: String,
    pub args: Vec<ArgSpec<'a>>,
}

/// A condition's comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Neq,
    Gt,
    Ge,
    Lt,
    Le,
}

impl CmpOp {
    pub const ALL: [(&'static str, CmpOp); 6] = [
        ("Eq", CmpOp::Eq),
        ("Neq", CmpOp::Neq),
        ("Gt", CmpOp::Gt),
        ("Ge", CmpOp::Ge),
        ("Lt", CmpOp::Lt),
        ("Le", CmpOp::Le),
    ];

    pub fn name(self) -> &'static str {
        CmpOp::ALL.iter().find(|(_, op)| *op == self).map_or("?", |(name, _)| name)
    }

    /// Whether `ordering` (of the function's value against the condition's value) satisfies it.
    pub fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match self {
            CmpOp::Eq => ordering == Equal,
            CmpOp::Neq => ordering != Equal,
            CmpOp::Gt => ordering == Greater,
            CmpOp::Ge => ordering != Less,
            CmpOp::Lt => ordering == Less,
            CmpOp::Le => ordering != Greater,
        }
    }
}

#[derive(Debug)]
pub(crate) enum FactorSpec {
    /// A positive count.
    Count(u64),
    /// The name of an initialization.
    Var(String),
}

#[derive(Debug)]
pub(crate) enum ArgSpec<'a> {
    Literal(Literal),
    Ref(String),
    Edge(EdgeSpec<'a>),
    /// `$index`: the instance's own index within its node.
    Index,
    /// `$workers`: the number of workers of the run.
    Workers,
}

/// The three kinds of edge: `$res` passes results, `$dep` and `$barrier` only order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EdgeKind {
    Res,
    Dep,
    Barrier,
}

impl EdgeKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            EdgeKind::Res => "$res",
            EdgeKind::Dep => "$dep",
            EdgeKind::Barrier => "$barrier",
        }
    }
}

#[derive(Debug)]
pub(crate) struct EdgeSpec<'a> {
    pub kind: EdgeKind,
    pub pred: Cow<'a, str>,
    pub index: IndexSpec,
    /// `group_by`: instance i reads a group of the predecessor's instances ([`Groups`]).
    pub group_by: Option<Groups>,
    /// `wrap`: offsets and ranges are taken modulo the predecessor's factor.
    pub wrap: bool,
    /// `absolute`: the index names predecessor instances, the same for every successor instance.
    pub absolute: bool,
    /// `"rule": "tomii-1.2"`: the index means what Tomii 1.2 made of it, decided with the factors
    /// when the graph compiles (`v12/rule.rs`).
    pub rule: bool,
}

/// `group_by`: the predecessor's instances from `from` on, in groups of `size` consecutive ones;
/// successor instance i reads group i / `shared`, its first `take` instances. The integer form g
/// is `{size: g, from: 0, shared: 1, take: g}` (README.md, "Selections").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Groups {
    pub size: u32,
    pub from: u32,
    pub shared: u32,
    pub take: u32,
}

impl Groups {
    /// The integer form: instance i reads i·g … i·g + g − 1.
    pub(crate) fn plain(g: u32) -> Groups {
        Groups { size: g, from: 0, shared: 1, take: g }
    }

    /// Whether this is the integer form.
    pub(crate) fn is_plain(&self) -> bool {
        *self == Groups::plain(self.size)
    }

    /// The first predecessor instance that successor instance `i` reads.
    pub(crate) fn start(&self, i: u32) -> u64 {
        u64::from(self.from) + u64::from(i / self.shared) * u64::from(self.size)
    }
}

/// The `index` of a predecessor, as written.
#[derive(Debug)]
pub(crate) enum IndexSpec {
    /// Absent or null.
    Default,
    /// An integer.
    Offset(i64),
    /// A list of integers.
    Offsets(Vec<i64>),
    /// A string: "all", "k", "name", "a-b"; parsed once initializations are known.
    Text(String),
}
