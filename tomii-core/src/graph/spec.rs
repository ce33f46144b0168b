//! Reads the graph JSON into a syntax-level description ([`GraphSpec`]): every field checked for
//! its shape, unknown and unsupported fields rejected by name. Names are not resolved here
//! (`resolve.rs` does that), so nodes may refer to nodes further down the file.
//!
//! Never panics on any JSON; every error names the node, argument or field at fault.

use std::borrow::Cow;
use std::ops::Range;

use serde_json::{Map, Value as Json};

use super::error::{ArgGroup, Issue, Place, invalid, quote};
use super::literal::Literal;
use super::typed::{self, show};

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
    /// `group_by` g: instance i reads the predecessor's instances i·g … i·g + g − 1.
    pub group_by: Option<u32>,
    /// `wrap`: offsets and ranges are taken modulo the predecessor's factor.
    pub wrap: bool,
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

const TOP_FIELDS: &[&str] = &["name", "initializations", "inputs", "nodes", "post_nodes", "network_config"];
const INPUT_FIELDS: &[&str] = &["name", "factor"];
const NETWORK_FIELDS: &[&str] = &[
    "socket_type",
    "address",
    "start_port",
    "num_sockets",
    "packet_length",
    "frame_packets",
    "stream_packets",
    "buffer_depth",
    "extract_packet_func",
    "id_function",
    "index_function",
];
const INDEX_FUNCTION_FIELDS: &[&str] = &["function", "args"];
const INIT_FIELDS: &[&str] = &["name", "value", "function", "func", "args", "factor"];
const NODE_FIELDS: &[&str] =
    &["name", "function", "factor", "args", "priority", "use_workers", "loop", "loop_args", "condition", "group_size"];
const LOOP_FIELDS: &[&str] = &["name", "factor"];
const CONDITION_FIELDS: &[&str] = &["operation", "value", "value_type", "function", "func", "args"];
const EDGE_FIELDS: &[&str] = &["type", "predecessor"];
const PRED_FIELDS: &[&str] = &["name", "index", "group_by", "wrap"];
const REF_FIELDS: &[&str] = &["type", "name"];
/// Fields of `$index` and `$workers`.
const PLAIN_FIELDS: &[&str] = &["type"];

/// Reads the top-level object.
pub(crate) fn read(root: &Json) -> Result<GraphSpec<'_>, Issue> {
    let Json::Object(top) = root else {
        return invalid(format!(r#"the top level must be an object with a "nodes" list, got {}"#, show(root)));
    };
    check_fields(top, TOP_FIELDS, &[], Place::Top)?;
    let name = match top.get("name") {
        None | Some(Json::Null) => None,
        Some(Json::String(name)) => Some(name.clone()),
        Some(other) => return invalid(format!(r#""name" must be a string, got {}"#, show(other))),
    };
    let inits = list(top.get("initializations"), "initializations", false)?;
    let inits = inits.iter().enumerate().map(|(k, json)| init(json, k)).collect::<Result<_, _>>()?;
    let nodes = list(top.get("nodes"), "nodes", true)?;
    let mut args = Vec::new();
    let mut nodes: Vec<NodeSpec> =
        nodes.iter().enumerate().map(|(k, json)| node(json, k, &mut args)).collect::<Result<_, _>>()?;
    let inputs = list(top.get("inputs"), "inputs", false)?;
    for (k, json) in inputs.iter().enumerate() {
        add_input(&mut nodes, input(json, k)?)?;
    }
    let network = match top.get("network_config") {
        None | Some(Json::Null) => None,
        Some(json) => {
            let (network, frame_packets) = network(json)?;
            if nodes.iter().any(|node| node.name == NETWORK_INPUT) {
                return invalid(format!(
                    "{} is the name of the packets of network_config; rename the node or input called so",
                    quote(NETWORK_INPUT)
                ));
            }
            nodes.push(input_spec(Cow::Borrowed(NETWORK_INPUT), frame_packets));
            Some(network)
        }
    };
    let post_nodes = list(top.get("post_nodes"), "post_nodes", false)?;
    let post_nodes: Vec<NodeSpec> =
        post_nodes.iter().enumerate().map(|(k, json)| node(json, k, &mut args)).collect::<Result<_, _>>()?;
    check_post_nodes(&post_nodes)?;
    Ok(GraphSpec { name, inits, nodes, post_nodes, args, network })
}

/// Adds `input` after the nodes (and the inputs before it); its name must be new.
pub(crate) fn add_input<'a>(nodes: &mut Vec<NodeSpec<'a>>, input: NodeSpec<'a>) -> Result<(), Issue> {
    if nodes.iter().any(|node| node.name == input.name) {
        return invalid(format!(
            "input {} has the name of a node (or of another input); give every node and input a unique name",
            quote(&input.name)
        ));
    }
    nodes.push(input);
    Ok(())
}

/// Refuses post-nodes with what only nodes may have yet.
pub(crate) fn check_post_nodes(post_nodes: &[NodeSpec]) -> Result<(), Issue> {
    match post_nodes.iter().find(|n| n.iterations.is_some() || n.condition.is_some() || n.group_size.is_some()) {
        Some(post) => Err(Issue::Unsupported(format!(
            "{}: a post-node with a loop, a condition or a group_size is not supported by this runtime yet",
            Place::Node(&post.name)
        ))),
        None => Ok(()),
    }
}

/// `network_config` (README.md, "Network sources"), and the factor of `$network`: its
/// `frame_packets` (or `stream_packets`).
fn network(json: &Json) -> Result<(NetworkSpec<'_>, FactorSpec), Issue> {
    let at = Place::Network;
    let Json::Object(object) = json else {
        return invalid(format!("{at} must be an object {{\"start_port\": ..., \"packet_length\": ..., ...}}"));
    };
    check_fields(object, NETWORK_FIELDS, &[], at)?;
    let text = |field: &str| -> Result<Option<String>, Issue> {
        match object.get(field) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(text)) if !text.is_empty() => Ok(Some(text.clone())),
            Some(other) => invalid(format!("{at}: {} must be a non-empty string, got {}", quote(field), show(other))),
        }
    };
    let number = |field: &str, default: Option<u64>| -> Result<FactorSpec, Issue> {
        match (object.get(field), default) {
            (None | Some(Json::Null), Some(default)) => Ok(FactorSpec::Count(default)),
            (None | Some(Json::Null), None) => invalid(format!("{at}: {} is missing; give a number", quote(field))),
            (Some(Json::Number(n)), _) if n.as_u64().is_some() => Ok(FactorSpec::Count(n.as_u64().unwrap_or(0))),
            (Some(Json::String(name)), _) if !name.is_empty() => Ok(FactorSpec::Var(name.clone())),
            (Some(other), _) => invalid(format!(
                "{at}: {} must be a non-negative integer or the name of an initialization holding one, got {}",
                quote(field),
                show(other)
            )),
        }
    };
    let frame_packets = match (object.get("frame_packets"), object.get("stream_packets")) {
        (Some(_), Some(_)) => {
            return invalid(format!(r#"{at}: give "frame_packets" or its other spelling "stream_packets", not both"#));
        }
        (None, Some(_)) => number("stream_packets", None)?,
        _ => number("frame_packets", None)?,
    };
    let index_function = match object.get("index_function") {
        None | Some(Json::Null) => None,
        Some(Json::Object(index)) if index.is_empty() => None,
        Some(Json::Object(index)) => {
            check_fields(index, INDEX_FUNCTION_FIELDS, &[], at)?;
            let function = name_field(index, "function", at, "name the kernel that gives a packet's index")?;
            let args = arg_list(index.get("args"), "index_function.args", NETWORK_INPUT, ArgGroup::Kernel)?;
            if args.iter().any(|arg| matches!(arg, ArgSpec::Edge(_))) {
                return invalid(format!(
                    "{at}: index_function's args are passed with each packet; give literals or $ref"
                ));
            }
            Some((function, args))
        }
        Some(other) => {
            return invalid(format!(
                r#"{at}: "index_function" must be {{"function": KERNEL, "args": [...]}}, got {}"#,
                show(other)
            ));
        }
    };
    let network = NetworkSpec {
        socket_type: text("socket_type")?.unwrap_or_else(|| "udp".to_owned()),
        address: text("address")?.unwrap_or_else(|| "127.0.0.1".to_owned()),
        start_port: number("start_port", None)?,
        num_sockets: number("num_sockets", Some(1))?,
        packet_length: number("packet_length", None)?,
        buffer_depth: number("buffer_depth", Some(128))?,
        extract_packet_func: text("extract_packet_func")?,
        id_function: text("id_function")?,
        index_function,
    };
    Ok((network, frame_packets))
}

/// A top-level list; absent or null is empty unless `required`.
fn list<'a>(json: Option<&'a Json>, field: &str, required: bool) -> Result<&'a [Json], Issue> {
    match json {
        Some(Json::Array(items)) => Ok(items),
        None | Some(Json::Null) if !required => Ok(&[]),
        None | Some(Json::Null) => invalid(format!("the graph has no {field:?} list; add one")),
        Some(other) => invalid(format!("{field:?} must be a list, got {}", show(other))),
    }
}

/// Rejects unknown fields and fields of the full format this runtime does not implement.
/// `at` is the object's place, e.g. `node "gen"`.
fn check_fields(object: &Map<String, Json>, known: &[&str], unsupported: &[&str], at: Place<'_>) -> Result<(), Issue> {
    for (key, value) in object {
        if known.contains(&key.as_str()) {
            continue;
        }
        if unsupported.contains(&key.as_str()) {
            if is_empty(value) {
                continue;
            }
            let prefix = if let Place::Top = at { String::new() } else { format!("{at}: ") };
            return Err(Issue::Unsupported(format!("{prefix}{}", quote(key))));
        }
        let known: Vec<String> = known.iter().map(|k| quote(k)).collect();
        return invalid(format!("unknown field {} in {at}; the known fields are {}", quote(key), known.join(", ")));
    }
    Ok(())
}

/// Null, `[]`, `{}` and `""` count as absent.
fn is_empty(value: &Json) -> bool {
    match value {
        Json::Null => true,
        Json::Array(items) => items.is_empty(),
        Json::Object(fields) => fields.is_empty(),
        Json::String(text) => text.is_empty(),
        _ => false,
    }
}

/// A required, non-empty string field of `object`.
fn name_field(object: &Map<String, Json>, field: &str, at: Place<'_>, hint: &str) -> Result<String, Issue> {
    name_ref(object, field, at, hint).map(str::to_owned)
}

/// [`name_field`], borrowed from the JSON.
fn name_ref<'a>(object: &'a Map<String, Json>, field: &str, at: Place<'_>, hint: &str) -> Result<&'a str, Issue> {
    match object.get(field) {
        Some(Json::String(text)) if !text.is_empty() => Ok(text),
        None | Some(Json::Null) => invalid(format!("{at}: {} is missing; {hint}", quote(field))),
        Some(other) => invalid(format!("{at}: {} must be a non-empty string, got {}", quote(field), show(other))),
    }
}

fn init(json: &Json, position: usize) -> Result<InitSpec<'_>, Issue> {
    let Json::Object(object) = json else {
        return invalid(format!(r#"initializations[{position}] must be an object {{"name": ..., "value": ...}}"#));
    };
    let name = name_field(object, "name", Place::InitAt(position), "give it a unique name")?;
    let at = Place::Init(&name);
    check_fields(object, INIT_FIELDS, &[], at)?;
    let function = match (object.get("function"), object.get("func")) {
        (Some(Json::String(f)), _) | (None, Some(Json::String(f))) if !f.is_empty() => Some(f.clone()),
        (None | Some(Json::Null), None | Some(Json::Null)) => None,
        _ => return invalid(format!(r#"{at}: "function" must be the name of a kernel"#)),
    };
    if let Some(function) = function {
        if object.get("value").is_some_and(|v| !v.is_null()) {
            return invalid(format!(r#"{at}: give either "value" or "function", not both"#));
        }
        let args = match object.get("args") {
            None | Some(Json::Null) => Vec::new(),
            Some(Json::Array(items)) => {
                items.iter().enumerate().map(|(k, item)| init_arg(item, &name, k)).collect::<Result<_, _>>()?
            }
            Some(other) => return invalid(format!(r#"{at}: "args" must be a list, got {}"#, show(other))),
        };
        let factor = factor(object.get("factor"), at)?;
        return Ok(InitSpec { name, value: InitValue::Computed { function, args, factor } });
    }
    if object.get("args").is_some_and(|v| !v.is_null()) || object.get("factor").is_some_and(|v| !v.is_null()) {
        return invalid(format!(r#"{at}: "args" and "factor" belong to a computed initialization; add "function""#));
    }
    let Some(value) = object.get("value") else {
        return invalid(format!(
            r#"{at}: "value" is missing; give it a value such as 4, or a "function" to compute it"#
        ));
    };
    literal_init(name, value)
}

/// The initialization `name` holding the literal `value`.
pub(crate) fn literal_init(name: String, value: &Json) -> Result<InitSpec<'static>, Issue> {
    let at = Place::Init(&name);
    if dollar_type(value).is_some() {
        return invalid(format!("{at}: the value must be a literal, not a {} argument", show(&value["type"])));
    }
    let value = literal(value).map_err(|e| Issue::Invalid(format!("{at}: {e}")))?;
    Ok(InitSpec { name, value: InitValue::Literal(value) })
}

/// Argument `k` of a computed initialization: a literal, `$ref`, `$index` or `$workers`.
fn init_arg<'a>(json: &'a Json, init: &str, k: usize) -> Result<ArgSpec<'a>, Issue> {
    let spec = arg(json, init, ArgGroup::Kernel, k).map_err(|issue| match issue {
        Issue::Invalid(text) => {
            Issue::Invalid(text.replacen(&format!("node {init:?}"), &format!("initialization {init:?}"), 1))
        }
        other => other,
    })?;
    if matches!(spec, ArgSpec::Edge(_)) {
        return invalid(format!(
            "{}: an initialization is computed before any frame, so it cannot read a node; pass literals, $ref, $index or $workers",
            Place::InitArg(init, k)
        ));
    }
    Ok(spec)
}

pub(crate) fn literal(json: &Json) -> Result<Literal, String> {
    match json {
        Json::Object(object) if object.contains_key("type") => typed::typed(object),
        _ => typed::plain(json),
    }
}

/// The `"type"` of an object whose type starts with `$` (a reference or an edge).
fn dollar_type(json: &Json) -> Option<&str> {
    json.get("type").and_then(Json::as_str).filter(|ty| ty.starts_with('$'))
}

/// `inputs[position]`: `{"name": N, "factor": F}`, a node whose instances' values each frame's
/// source gives.
fn input(json: &Json, position: usize) -> Result<NodeSpec<'_>, Issue> {
    let Json::Object(object) = json else {
        return invalid(format!(r#"inputs[{position}] must be an object {{"name": ..., "factor": ...}}"#));
    };
    let name = name_ref(object, "name", Place::InputAt(position), "give every input a unique name")?;
    check_fields(object, INPUT_FIELDS, &[], Place::Input(name))?;
    let factor = factor(object.get("factor"), Place::Input(name))?;
    Ok(input_spec(Cow::Borrowed(name), factor))
}

/// An input called `name` with `factor` instances.
pub(crate) fn input_spec(name: Cow<'_, str>, factor: FactorSpec) -> NodeSpec<'_> {
    NodeSpec {
        name,
        input: true,
        function: Cow::Borrowed(""),
        factor,
        priority: 0,
        use_workers: None,
        args: 0..0,
        iterations: None,
        loop_args: 0..0,
        condition: None,
        group_size: None,
    }
}

fn node<'a>(json: &'a Json, position: usize, pool: &mut Vec<ArgSpec<'a>>) -> Result<NodeSpec<'a>, Issue> {
    let Json::Object(object) = json else {
        return invalid(format!(r#"nodes[{position}] must be an object {{"name": ..., "function": ...}}"#));
    };
    let name = name_ref(object, "name", Place::NodeAt(position), "give every node a unique name")?;
    let at = Place::Node(name);
    check_fields(object, NODE_FIELDS, &[], at)?;
    let function = name_ref(object, "function", at, "name the kernel this node runs")?;
    let args = args_into(object.get("args"), "args", name, ArgGroup::Kernel, pool)?;
    let loop_args = args_into(object.get("loop_args"), "loop_args", name, ArgGroup::Loop, pool)?;
    let fields = NodeFields {
        factor: object.get("factor"),
        priority: object.get("priority"),
        use_workers: object.get("use_workers"),
        loop_: object.get("loop"),
        group_size: object.get("group_size"),
    };
    let condition = |name: &str| condition(object.get("condition"), name);
    node_spec(Cow::Borrowed(name), Cow::Borrowed(function), args, loop_args, fields, condition)
}

/// The fields of a node besides its name, function and argument lists, as written.
pub(crate) struct NodeFields<'j> {
    pub factor: Option<&'j Json>,
    pub priority: Option<&'j Json>,
    pub use_workers: Option<&'j Json>,
    pub loop_: Option<&'j Json>,
    pub group_size: Option<&'j Json>,
}

/// A node from its parts, read by either path (`node` here, `typed_spec`); `condition` reads
/// its condition, given the node's name.
pub(crate) fn node_spec<'a>(
    name: Cow<'a, str>,
    function: Cow<'a, str>,
    args: Range<usize>,
    loop_args: Range<usize>,
    fields: NodeFields<'_>,
    condition: impl FnOnce(&str) -> Result<Option<ConditionSpec<'a>>, Issue>,
) -> Result<NodeSpec<'a>, Issue> {
    let at = Place::Node(&name);
    let iterations = loop_spec(fields.loop_, at)?;
    if iterations.is_none() && !loop_args.is_empty() {
        return invalid(format!(r#"{at}: "loop_args" without a "loop"; add "loop": {{"name": ..., "factor": N}}"#));
    }
    Ok(NodeSpec {
        factor: factor(fields.factor, at)?,
        priority: priority(fields.priority, at)?,
        use_workers: use_workers(fields.use_workers, at)?,
        condition: condition(&name)?.map(Box::new),
        group_size: group_size(fields.group_size, at)?,
        iterations,
        loop_args,
        name,
        input: false,
        function,
        args,
    })
}

/// `group_size`: a positive integer; 1 (or absent) runs every instance as its own task.
pub(crate) fn group_size(json: Option<&Json>, at: Place<'_>) -> Result<Option<u32>, Issue> {
    match json {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Number(n)) => match n.as_u64().filter(|&g| g >= 1).and_then(|g| u32::try_from(g).ok()) {
            Some(g) => Ok(Some(g)),
            None => invalid(format!("{at}: group_size {n} is not a positive integer")),
        },
        Some(other) => invalid(format!("{at}: group_size must be a positive integer, got {}", show(other))),
    }
}

/// A list of arguments (a condition's `args`, `index_function`'s); absent or null is empty.
fn arg_list<'a>(json: Option<&'a Json>, field: &str, node: &str, group: ArgGroup) -> Result<Vec<ArgSpec<'a>>, Issue> {
    let mut list = Vec::new();
    args_into(json, field, node, group, &mut list)?;
    Ok(list)
}

/// A list of arguments appended to `pool`: their range there.
fn args_into<'a>(
    json: Option<&'a Json>,
    field: &str,
    node: &str,
    group: ArgGroup,
    pool: &mut Vec<ArgSpec<'a>>,
) -> Result<Range<usize>, Issue> {
    let start = pool.len();
    match json {
        None | Some(Json::Null) => {}
        Some(Json::Array(items)) => {
            for (k, item) in items.iter().enumerate() {
                pool.push(arg(item, node, group, k)?);
            }
        }
        Some(other) => {
            return invalid(format!(r#"{}: "{field}" must be a list, got {}"#, Place::Node(node), show(other)));
        }
    }
    Ok(start..pool.len())
}

/// `"loop": {"name": NAME, "factor": N | VAR}`: the number of iterations per instance.
pub(crate) fn loop_spec(json: Option<&Json>, at: Place<'_>) -> Result<Option<FactorSpec>, Issue> {
    let object = match json {
        None | Some(Json::Null) => return Ok(None),
        Some(Json::Object(object)) if object.is_empty() => return Ok(None),
        Some(Json::Object(object)) => object,
        Some(other) => {
            return invalid(format!(r#"{at}: "loop" must be {{"name": ..., "factor": N}}, got {}"#, show(other)));
        }
    };
    check_fields(object, LOOP_FIELDS, &[], at)?;
    match object.get("factor") {
        Some(Json::Number(n)) if n.as_u64() == Some(0) => {
            invalid(format!("{at}: loop factor is 0; a loop runs at least one iteration (remove the loop instead)"))
        }
        None | Some(Json::Null) => invalid(format!(r#"{at}: "loop" needs a "factor": the number of iterations"#)),
        factor_json => factor(factor_json, at).map(Some),
    }
}

/// `"condition": {"operation": OP, "value": V, "value_type": T, "function": F, "args": [...]}`.
fn condition<'a>(json: Option<&'a Json>, node: &str) -> Result<Option<ConditionSpec<'a>>, Issue> {
    let at = Place::Node(node);
    let object = match json {
        None | Some(Json::Null) => return Ok(None),
        Some(Json::Object(object)) if object.is_empty() => return Ok(None),
        Some(Json::Object(object)) => object,
        Some(other) => return invalid(format!(r#"{at}: "condition" must be an object, got {}"#, show(other))),
    };
    check_fields(object, CONDITION_FIELDS, &[], at)?;
    let op_name = object.get("operation").and_then(Json::as_str).unwrap_or_default();
    let names: Vec<&str> = CmpOp::ALL.iter().map(|(name, _)| *name).collect();
    let Some(&(_, op)) = CmpOp::ALL.iter().find(|(name, _)| *name == op_name) else {
        return invalid(format!(
            "{at}: condition operation {} is not one of {}",
            show(object.get("operation").unwrap_or(&Json::Null)),
            names.join(", ")
        ));
    };
    let function = match (object.get("function"), object.get("func")) {
        (Some(Json::String(f)), _) | (None, Some(Json::String(f))) if !f.is_empty() => f.clone(),
        _ => return invalid(format!(r#"{at}: the condition needs "function": the kernel whose result is compared"#)),
    };
    let value = condition_value(object, at)?;
    let args = arg_list(object.get("args"), "condition.args", node, ArgGroup::Condition)?;
    Ok(Some(ConditionSpec { op, value, function, args }))
}

/// The condition's `value`, typed by `value_type` when given (else inferred like a plain literal).
fn condition_value(object: &Map<String, Json>, at: Place<'_>) -> Result<Literal, Issue> {
    let value = object.get("value").ok_or_else(|| {
        Issue::Invalid(format!(r#"{at}: the condition needs "value": what the function's result is compared with"#))
    })?;
    let typed = match object.get("value_type") {
        None | Some(Json::Null) => value.clone(),
        Some(ty) => serde_json::json!({"type": ty, "value": value}),
    };
    literal(&typed).map_err(|e| Issue::Invalid(format!("{at}: condition value: {e}")))
}

pub(crate) fn factor(json: Option<&Json>, at: Place<'_>) -> Result<FactorSpec, Issue> {
    let bad = |what: String| {
        invalid(format!("{at}: factor {what}; write a positive integer or the name of an initialization holding one"))
    };
    match json {
        None | Some(Json::Null) => Ok(FactorSpec::Count(1)),
        Some(Json::String(name)) if !name.is_empty() => Ok(FactorSpec::Var(name.clone())),
        Some(Json::Number(n)) => match n.as_u64() {
            Some(0) => invalid(format!("{at}: factor is 0; a node needs at least one instance")),
            Some(count) => Ok(FactorSpec::Count(count)),
            None => bad(format!("{n} is not a positive integer")),
        },
        Some(other) => bad(format!("must be a number or a name, got {}", show(other))),
    }
}

pub(crate) fn priority(json: Option<&Json>, at: Place<'_>) -> Result<i32, Issue> {
    let level = match json {
        None | Some(Json::Null) => Some(0),
        Some(Json::String(level)) => match level.as_str() {
            "high" => Some(1),
            "normal" => Some(0),
            "low" => Some(-1),
            _ => None,
        },
        Some(Json::Number(n)) => n.as_i64().and_then(|p| i32::try_from(p).ok()),
        Some(_) => None,
    };
    level.ok_or_else(|| {
        Issue::Invalid(format!(
            r#"{at}: priority {} is not valid; write "high", "normal", "low" or an integer (i32)"#,
            json.map_or_else(String::new, show)
        ))
    })
}

/// `"lo-hi"` (inclusive) or `"k"` (or the integer k), stored half-open.
pub(crate) fn use_workers(json: Option<&Json>, at: Place<'_>) -> Result<Option<(u32, u32)>, Issue> {
    let text = match json {
        None | Some(Json::Null) => return Ok(None),
        Some(Json::String(text)) => text.trim().to_owned(),
        Some(Json::Number(n)) => n.to_string(),
        Some(other) => return bad_workers(at, &show(other)),
    };
    let (lo, hi) = text.split_once('-').unwrap_or((&text, &text));
    match (lo.trim().parse::<u32>(), hi.trim().parse::<u32>()) {
        (Ok(lo), Ok(hi)) if lo <= hi && hi < u32::MAX => Ok(Some((lo, hi + 1))),
        _ => bad_workers(at, &quote(&text)),
    }
}

fn bad_workers<T>(at: Place<'_>, got: &str) -> Result<T, Issue> {
    invalid(format!(
        r#"{at}: use_workers {got} is not a worker range; write "lo-hi" with lo <= hi (inclusive, e.g. "0-3") or one worker "k""#
    ))
}

/// Argument `k` of node `node`.
fn arg<'a>(json: &'a Json, node: &str, group: ArgGroup, k: usize) -> Result<ArgSpec<'a>, Issue> {
    let at = Place::Arg(node, group, k);
    let Some(kind) = dollar_type(json) else {
        return literal(json).map(ArgSpec::Literal).map_err(|e| Issue::Invalid(format!("{at}: {e}")));
    };
    let object = json.as_object().ok_or_else(|| Issue::Invalid(format!("{at}: internal: not an object")))?;
    let kind = match kind {
        "$ref" => {
            check_fields(object, REF_FIELDS, &[], at)?;
            return name_field(object, "name", at, "name the initialization to pass").map(ArgSpec::Ref);
        }
        "$index" | "$workers" => {
            check_fields(object, PLAIN_FIELDS, &[], at)?;
            return Ok(if kind == "$index" { ArgSpec::Index } else { ArgSpec::Workers });
        }
        "$res" => EdgeKind::Res,
        "$dep" => EdgeKind::Dep,
        "$barrier" => EdgeKind::Barrier,
        "$network" => {
            return invalid(format!(
                r#"{at}: "$network" is the name of the packets, not an argument type; read them with {{"type": "$res", "predecessor": {{"name": "$network", "index": ...}}}} and give the graph a "network_config""#
            ));
        }
        other => return Err(Issue::Unsupported(format!("{at}: argument type {}", quote(other)))),
    };
    check_fields(object, EDGE_FIELDS, &[], at)?;
    let pred_at = Place::Pred(node, group, k);
    let Some(Json::Object(pred)) = object.get("predecessor") else {
        return invalid(format!(r#"{at}: a {} argument needs "predecessor": {{"name": NODE}}"#, kind.name()));
    };
    check_fields(pred, PRED_FIELDS, &[], pred_at)?;
    let pred_name = Cow::Borrowed(name_ref(pred, "name", pred_at, "name the node to read from")?);
    edge(kind, pred_name, [pred.get("index"), pred.get("group_by"), pred.get("wrap")], at, pred_at).map(ArgSpec::Edge)
}

/// An edge of `kind` from `pred_name` with the predecessor's `[index, group_by, wrap]` as written;
/// `at` is the argument's place, `pred_at` its predecessor's.
pub(crate) fn edge<'a>(
    kind: EdgeKind,
    pred_name: Cow<'a, str>,
    [index_json, group_by, wrap]: [Option<&Json>; 3],
    at: Place<'_>,
    pred_at: Place<'_>,
) -> Result<EdgeSpec<'a>, Issue> {
    let index = index(index_json, at)?;
    let group_by = match group_by {
        None | Some(Json::Null) => None,
        Some(Json::Number(n)) if n.as_u64().is_some_and(|g| g >= 1 && g <= u64::from(u32::MAX)) => {
            n.as_u64().map(|g| g as u32)
        }
        Some(other) => return invalid(format!("{pred_at}: group_by {} is not a positive integer", show(other))),
    };
    let wrap = match wrap {
        None | Some(Json::Null) => false,
        Some(Json::Bool(wrap)) => *wrap,
        Some(other) => return invalid(format!("{pred_at}: wrap must be true or false, got {}", show(other))),
    };
    if group_by.is_some() && (wrap || !matches!(index, IndexSpec::Default)) {
        return invalid(format!(
            "{pred_at}: group_by selects the instances itself; give either group_by or an index (with wrap), not both"
        ));
    }
    Ok(EdgeSpec { kind, pred: pred_name, index, group_by, wrap })
}

fn index(json: Option<&Json>, at: Place<'_>) -> Result<IndexSpec, Issue> {
    let bad = |got: &Json| {
        invalid(format!(
            r#"{at}: index {} is not a selection; write an offset, a list of offsets, a range "a-b" or "all""#,
            show(got)
        ))
    };
    match json {
        None | Some(Json::Null) => Ok(IndexSpec::Default),
        Some(number @ Json::Number(n)) => match n.as_i64() {
            Some(k) => Ok(IndexSpec::Offset(k)),
            None => bad(number),
        },
        Some(Json::String(text)) => Ok(IndexSpec::Text(text.trim().to_owned())),
        Some(all @ Json::Array(items)) => {
            let offsets: Option<Vec<i64>> = items.iter().map(Json::as_i64).collect();
            match offsets {
                Some(offsets) if !offsets.is_empty() => Ok(IndexSpec::Offsets(offsets)),
                Some(_) => {
                    invalid(format!("{at}: index is an empty list, which selects nothing; list at least one offset"))
                }
                None => bad(all),
            }
        }
        Some(other) => bad(other),
    }
}
