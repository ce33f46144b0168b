//! Resolves names in a [`GraphSpec`]: unique node and initialization names, factors given by an
//! initialization, `$ref` values into the constant pool, predecessors into node ids, and `index`
//! strings into [`Selection`]s.
//!
//! Works per node and per argument, never per instance; bounds are checked later by `compile.rs`.

use super::compiled::{CompiledNode, ComputedInit, Condition, NetworkConfig, SocketType};
use super::error::{ArgGroup, Issue, Place, invalid, quote};
use super::literal::Literal;
use super::names::{self, NameMap};
use super::select::{self, Selection};
use super::spec::{
    ArgSpec, EdgeKind, EdgeSpec, FactorSpec, GraphSpec, IndexSpec, InitSpec, InitValue, NETWORK_INPUT, NetworkSpec,
    NodeSpec,
};

/// The most instances a graph may have (2^28, the engine's most task cells of a run): the
/// compiled graph's per-instance arrays are sized by it, so a larger graph is refused before they
/// are made.
pub(crate) const MAX_INSTANCES: u64 = 1 << 28;

/// A graph with every name resolved; `nodes[n].first` is not assigned yet.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub name: Option<String>,
    pub inits: Vec<(String, Literal)>,
    pub nodes: Vec<CompiledNode>,
    /// Arguments of every node, node after node; each node's are its kernel arguments, then its
    /// loop arguments, then its condition's arguments.
    pub args: Vec<Arg>,
    /// Where each node's arguments start in `args`, and (last) their end.
    pub arg_starts: Vec<usize>,
    /// Per node: how many of `args` are kernel arguments and how many loop arguments.
    pub groups: Vec<[usize; 2]>,
    pub consts: Vec<Literal>,
    /// Computed initializations, in file order; their arguments are resolved too.
    pub computed: Vec<(ComputedInit, Vec<Arg>)>,
    /// Post-nodes with their (kernel) arguments; their edges name regular nodes.
    pub post: Vec<(CompiledNode, Vec<Arg>)>,
    pub network: Option<NetworkConfig>,
}

/// The largest UDP payload over IPv4.
const MAX_DATAGRAM: u64 = 65_507;
/// The largest packet a TCP stream may carry.
const MAX_STREAM_PACKET: u64 = 1 << 26;

#[derive(Debug)]
pub(crate) enum Arg {
    Const(u32),
    /// A computed initialization (per-instance element when it has several).
    Computed(u32),
    Edge(Edge),
    Index,
    Workers,
}

#[derive(Debug)]
pub(crate) struct Edge {
    pub kind: EdgeKind,
    pub pred: u32,
    pub sel: Selection,
    /// `"rule": "tomii-1.2"`: `sel` holds the offsets as written; compile decides what they
    /// select with the factors (`v12/rule.rs`).
    pub rule: Option<Rule>,
}

/// What a `"rule": "tomii-1.2"` edge decides when the graph compiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    /// What its offsets select.
    Offsets,
    /// How its range splits into groups of `size` (a `group_by` beside the range).
    Groups { size: u32 },
}

/// What an initialization name refers to.
#[derive(Clone, Copy, Debug)]
enum InitRef {
    /// Position in the literal initializations.
    Literal(usize),
    /// Position in the computed initializations.
    Computed(u32),
}

/// Names and the constant pool, shared by the per-node passes.
struct Scope<'a> {
    inits: &'a [(String, Literal)],
    init_ids: NameMap<&'a str, InitRef>,
    /// Computed initializations resolved so far (a `$ref` may name only those).
    computed_done: u32,
    node_ids: NameMap<&'a str, usize>,
    /// Post-node names, so that an edge naming one gets a precise message.
    post_names: NameMap<&'a str, usize>,
    consts: Vec<Literal>,
    /// Pool index of each initialization already passed by `$ref`.
    ref_consts: NameMap<usize, u32>,
}

pub(crate) fn resolve(mut spec: GraphSpec) -> Result<Resolved, Issue> {
    if spec.nodes.is_empty() {
        return invalid(r#"the graph has no nodes; add at least one to "nodes""#.to_owned());
    }
    let positions = unique(spec.inits.iter().map(|init| init.name.as_str()), "initializations", "initialization")?;
    let (inits, computed_specs, init_ids) = split_inits(&spec.inits, &positions);
    let mut scope = Scope {
        init_ids,
        computed_done: 0,
        node_ids: unique(spec.nodes.iter().map(|node| node.name.as_ref()), "nodes", "node")?,
        post_names: unique_post_names(&spec)?,
        inits: &inits,
        consts: Vec::new(),
        ref_consts: names::map(0),
    };
    let mut computed = Vec::with_capacity(computed_specs.len());
    for spec in computed_specs {
        computed.push(scope.computed(spec)?);
        scope.computed_done += 1;
    }
    let mut nodes = Vec::with_capacity(spec.nodes.len());
    let mut args = Vec::with_capacity(spec.nodes.len());
    let mut arg_starts = Vec::with_capacity(spec.nodes.len() + 1);
    let mut groups = Vec::with_capacity(spec.nodes.len());
    for node in &spec.nodes {
        arg_starts.push(args.len());
        nodes.push(scope.node(node)?);
        let cond_args = node.condition.as_ref().map_or(&[][..], |c| &c.args[..]);
        let lists = [
            (ArgGroup::Kernel, &spec.args[node.args.clone()]),
            (ArgGroup::Loop, &spec.args[node.loop_args.clone()]),
            (ArgGroup::Condition, cond_args),
        ];
        for (group, list) in lists {
            for (k, arg) in list.iter().enumerate() {
                args.push(scope.arg(node, group, k, arg)?);
            }
        }
        groups.push([node.args.len(), node.loop_args.len()]);
    }
    arg_starts.push(args.len());
    let mut post = Vec::with_capacity(spec.post_nodes.len());
    for node in &spec.post_nodes {
        let resolved = scope.node(node)?;
        let args = spec.args[node.args.clone()].iter().enumerate();
        let args = args.map(|(k, arg)| scope.arg(node, ArgGroup::Kernel, k, arg));
        post.push((resolved, args.collect::<Result<_, _>>()?));
    }
    let network = match &spec.network {
        Some(network) => Some(scope.network(network, &nodes)?),
        None => None,
    };
    let consts = std::mem::take(&mut scope.consts);
    // Names are looked up no more: the nodes take theirs from the spec instead of copies.
    let specs = spec.nodes.iter_mut().chain(&mut spec.post_nodes);
    for (compiled, node) in nodes.iter_mut().chain(post.iter_mut().map(|(node, _)| node)).zip(specs) {
        compiled.name = std::mem::take(&mut node.name).into_owned();
        compiled.function = std::mem::take(&mut node.function).into_owned();
    }
    Ok(Resolved { name: spec.name, inits, nodes, args, arg_starts, groups, consts, computed, post, network })
}

/// Computed initializations with their arguments, and the constant pool they use.
pub(crate) type ResolvedInits = (Vec<(ComputedInit, Vec<Arg>)>, Vec<Literal>);

/// The computed initializations of `specs` alone, resolved as [`resolve`] resolves them first
/// (so their constants have the same places in the pool): what is evaluated before the graph
/// compiles when a count names one (`inits.rs`).
pub(crate) fn resolve_inits(specs: &[InitSpec]) -> Result<ResolvedInits, Issue> {
    let positions = unique(specs.iter().map(|init| init.name.as_str()), "initializations", "initialization")?;
    let (inits, computed_specs, init_ids) = split_inits(specs, &positions);
    let mut scope = Scope {
        init_ids,
        computed_done: 0,
        node_ids: names::map(0),
        post_names: names::map(0),
        inits: &inits,
        consts: Vec::new(),
        ref_consts: names::map(0),
    };
    let mut computed = Vec::with_capacity(computed_specs.len());
    for spec in computed_specs {
        computed.push(scope.computed(spec)?);
        scope.computed_done += 1;
    }
    Ok((computed, scope.consts))
}

/// The post-nodes' names: unique among themselves and distinct from every node's.
fn unique_post_names<'a>(spec: &'a GraphSpec<'_>) -> Result<NameMap<&'a str, usize>, Issue> {
    let names = unique(spec.post_nodes.iter().map(|node| node.name.as_ref()), "post_nodes", "post-node")?;
    match spec.nodes.iter().find(|node| names.contains_key(node.name.as_ref())) {
        Some(node) => invalid(format!(
            "node {} and a post-node share the name; give every node and post-node a unique name",
            quote(&node.name)
        )),
        None => Ok(names),
    }
}

/// Maps each name to its position; a repeated name is an error naming both positions.
fn unique<'a>(
    names: impl ExactSizeIterator<Item = &'a str>,
    list: &str,
    what: &str,
) -> Result<NameMap<&'a str, usize>, Issue> {
    let mut ids = names::map(names.len());
    for (position, name) in names.enumerate() {
        if let Some(earlier) = ids.insert(name, position) {
            return invalid(format!(
                "{list}[{earlier}] and {list}[{position}] are both named {}; give every {what} a unique name",
                quote(name)
            ));
        }
    }
    Ok(ids)
}

/// The initializations split by kind: literal ones (name, value), computed ones, and one map from
/// every name to its place.
type SplitInits<'a> = (Vec<(String, Literal)>, Vec<&'a InitSpec<'a>>, NameMap<&'a str, InitRef>);

/// Splits the initializations into literal ones and computed ones, with one map over both.
fn split_inits<'a>(specs: &'a [InitSpec], positions: &NameMap<&'a str, usize>) -> SplitInits<'a> {
    let (mut literals, mut computed, mut ids) = (Vec::new(), Vec::new(), names::map(positions.len()));
    for spec in specs.iter().filter(|s| positions.contains_key(s.name.as_str())) {
        let id = match &spec.value {
            InitValue::Literal(value) => {
                literals.push((spec.name.clone(), value.clone()));
                InitRef::Literal(literals.len() - 1)
            }
            InitValue::Computed { .. } => {
                computed.push(spec);
                InitRef::Computed(computed.len() as u32 - 1)
            }
        };
        ids.insert(spec.name.as_str(), id);
    }
    (literals, computed, ids)
}

impl Scope<'_> {
    fn lookup(&self, name: &str) -> Option<&Literal> {
        match self.init_ids.get(name) {
            Some(&InitRef::Literal(id)) => Some(&self.inits[id].1),
            _ => None,
        }
    }

    /// A computed initialization: its function, element count and arguments.
    fn computed(&mut self, spec: &InitSpec) -> Result<(ComputedInit, Vec<Arg>), Issue> {
        let InitValue::Computed { function, args, factor } = &spec.value else {
            return invalid(format!("{}: internal: not a computed initialization", Place::Init(&spec.name)));
        };
        let at = Place::Init(&spec.name);
        let count = self.count(factor, at, "factor", "it needs at least one element")?;
        let args = args
            .iter()
            .enumerate()
            .map(|(k, arg)| self.resolve_arg(arg, Place::InitArg(&spec.name, k)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((ComputedInit { name: spec.name.clone(), function: function.clone(), count, args: Vec::new() }, args))
    }

    /// The node without its name and function: `resolve` moves them in from the spec once no name
    /// is looked up any more.
    fn node(&self, node: &NodeSpec) -> Result<CompiledNode, Issue> {
        Ok(CompiledNode {
            name: String::new(),
            input: node.input,
            function: String::new(),
            factor: self.factor(node)?,
            first: 0,
            priority: node.priority,
            use_workers: node.use_workers,
            iterations: match &node.iterations {
                None => 1,
                Some(spec) => {
                    self.count(spec, Place::Node(&node.name), "loop factor", "a loop runs at least one iteration")?
                }
            },
            group_size: node.group_size.unwrap_or(1),
            condition: node.condition.as_ref().map(|c| Condition {
                op: c.op,
                value: c.value.clone(),
                function: c.function.clone(),
            }),
        })
    }

    fn factor(&self, node: &NodeSpec) -> Result<u32, Issue> {
        self.count(&node.factor, Place::Node(&node.name), "factor", "a node needs at least one instance")
    }

    /// A positive count written as a number or as the name of an integer initialization.
    fn count(&self, spec: &FactorSpec, at: Place<'_>, what: &str, why: &str) -> Result<u32, Issue> {
        let (count, origin) = match spec {
            FactorSpec::Count(count) => (*count, String::new()),
            FactorSpec::Var(name) => {
                if let Some(InitRef::Computed(_)) = self.init_ids.get(name.as_str()) {
                    return invalid(format!(
                        "{at}: {what} {} is computed when the run starts; a {what} must be a number or a literal \
                         initialization",
                        quote(name)
                    ));
                }
                let literal = self.lookup(name).ok_or_else(|| {
                    Issue::Invalid(format!(
                        r#"{at}: {what} {} is not an initialization; define it in "initializations" or write a number"#,
                        quote(name)
                    ))
                })?;
                let count = literal.as_u64().ok_or_else(|| {
                    Issue::Invalid(format!(
                        "{at}: {what} {} holds a value of type {}, not a non-negative integer; give it an integer value",
                        quote(name),
                        literal.type_name()
                    ))
                })?;
                (count, format!(" (from initialization {})", quote(name)))
            }
        };
        if count == 0 {
            return invalid(format!("{at}: {what} is 0{origin}; {why}"));
        }
        u32::try_from(count).ok().filter(|&c| u64::from(c) <= MAX_INSTANCES).ok_or_else(|| {
            Issue::TooLarge(format!("{at}: {what} {count}{origin} is too large; the most is {MAX_INSTANCES}"))
        })
    }

    /// A number of `network_config` (0 allowed) written as a number or an initialization's name.
    fn number(&self, spec: &FactorSpec, field: &str) -> Result<u64, Issue> {
        let at = Place::Network;
        match spec {
            FactorSpec::Count(count) => Ok(*count),
            FactorSpec::Var(name) => self.lookup(name).and_then(Literal::as_u64).ok_or_else(|| {
                Issue::Invalid(format!(
                    "{at}: {field} {} is not a literal initialization holding a non-negative integer; define it in \
                     \"initializations\" or write a number",
                    quote(name)
                ))
            }),
        }
    }

    /// `network_config`, resolved and checked (README, "Network sources"); `nodes` holds the
    /// `$network` input, whose factor is `frame_packets`.
    fn network(&mut self, spec: &NetworkSpec, nodes: &[CompiledNode]) -> Result<NetworkConfig, Issue> {
        let at = Place::Network;
        let Some(socket_type) = SocketType::parse(&spec.socket_type) else {
            return invalid(format!(r#"{at}: socket_type {} is not "udp" or "tcp""#, quote(&spec.socket_type)));
        };
        let address = self.network_address(spec)?;
        let start_port = self.number(&spec.start_port, "start_port")?;
        let num_sockets = self.number(&spec.num_sockets, "num_sockets")?;
        if num_sockets == 0 {
            return invalid(format!("{at}: num_sockets is 0; a network source needs at least one socket"));
        }
        if start_port > 0 && start_port + num_sockets - 1 > u64::from(u16::MAX) {
            return invalid(format!(
                "{at}: ports {start_port}..{} go beyond 65535; lower start_port or num_sockets",
                start_port + num_sockets - 1
            ));
        }
        let packet_length = self.number(&spec.packet_length, "packet_length")?;
        let most = if socket_type == SocketType::Udp { MAX_DATAGRAM } else { MAX_STREAM_PACKET };
        if packet_length == 0 || packet_length > most {
            return invalid(format!(
                "{at}: packet_length {packet_length} is not between 1 and {most} bytes (the largest {} packet)",
                socket_type.name()
            ));
        }
        let index_function = self.index_function(spec)?;
        let input = self.node_ids.get(NETWORK_INPUT).copied().unwrap_or(0) as u32;
        let config = NetworkConfig {
            socket_type,
            address,
            start_port: start_port as u16,
            num_sockets: u16::try_from(num_sockets)
                .map_err(|_| Issue::Invalid(format!("{at}: num_sockets {num_sockets} is more than 65535")))?,
            packet_length: packet_length as u32,
            frame_packets: nodes[input as usize].factor,
            buffer_depth: u32::try_from(self.number(&spec.buffer_depth, "buffer_depth")?.max(1))
                .map_err(|_| Issue::Invalid(format!("{at}: buffer_depth is too large")))?,
            extract_packet_func: spec.extract_packet_func.clone(),
            id_function: spec.id_function.clone(),
            index_function,
            input,
        };
        if config.reads_header() && (config.packet_length as usize) < crate::network::HEADER_LEN {
            return invalid(format!(
                "{at}: packet_length {packet_length} is shorter than the {}-byte packet header the runtime reads \
                 the frame id and index from; lengthen the packets or give id_function and index_function",
                crate::network::HEADER_LEN
            ));
        }
        Ok(config)
    }

    /// `network_config.address`: a literal, or a String initialization holding one.
    fn network_address(&self, spec: &NetworkSpec) -> Result<std::net::IpAddr, Issue> {
        let at = Place::Network;
        let address = match self.lookup(&spec.address) {
            Some(Literal::Str(text)) => text.clone(),
            Some(other) => {
                return invalid(format!(
                    "{at}: address {} is an initialization of type {}; give it a String value such as \"127.0.0.1\"",
                    quote(&spec.address),
                    other.type_name()
                ));
            }
            None => spec.address.clone(),
        };
        address.parse::<std::net::IpAddr>().map_err(|_| {
            Issue::Invalid(format!(
                "{at}: address {} is not an IP address; write one such as \"127.0.0.1\", \"0.0.0.0\" or \"::1\"",
                quote(&address)
            ))
        })
    }

    /// `network_config.index_function`: its kernel and literal arguments.
    fn index_function(&mut self, spec: &NetworkSpec) -> Result<Option<(String, Vec<Literal>)>, Issue> {
        let at = Place::Network;
        Ok(match &spec.index_function {
            None => None,
            Some((function, args)) => {
                let mut literals = Vec::with_capacity(args.len());
                for arg in args {
                    match self.resolve_arg(arg, at)? {
                        Arg::Const(id) => literals.push(self.consts[id as usize].clone()),
                        _ => {
                            return invalid(format!(
                                "{at}: index_function's args must be literals or $ref of literal initializations"
                            ));
                        }
                    }
                }
                Some((function.clone(), literals))
            }
        })
    }

    fn arg(&mut self, node: &NodeSpec, group: ArgGroup, k: usize, arg: &ArgSpec) -> Result<Arg, Issue> {
        self.resolve_arg(arg, Place::Arg(&node.name, group, k))
    }

    fn resolve_arg(&mut self, arg: &ArgSpec, at: Place<'_>) -> Result<Arg, Issue> {
        match arg {
            ArgSpec::Literal(literal) => self.push_const(literal.clone(), at).map(Arg::Const),
            ArgSpec::Ref(name) => self.reference(name, at),
            ArgSpec::Edge(edge) => self.edge(edge, at).map(Arg::Edge),
            ArgSpec::Index => Ok(Arg::Index),
            ArgSpec::Workers => Ok(Arg::Workers),
        }
    }

    fn push_const(&mut self, literal: Literal, at: Place<'_>) -> Result<u32, Issue> {
        let id = u32::try_from(self.consts.len())
            .map_err(|_| Issue::TooLarge(format!("{at}: the graph has more than {} constants", u32::MAX)))?;
        self.consts.push(literal);
        Ok(id)
    }

    /// A `$ref`: a literal initialization enters the pool once, however many arguments pass it; a
    /// computed one is referred to by position, and only after it is computed.
    fn reference(&mut self, name: &str, at: Place<'_>) -> Result<Arg, Issue> {
        let init = match self.init_ids.get(name) {
            None => {
                return invalid(format!(
                    r#"{at}: "$ref" names {}, which is not an initialization; define it in "initializations""#,
                    quote(name)
                ));
            }
            Some(&InitRef::Computed(k)) if k >= self.computed_done => {
                return invalid(format!(
                    "{at}: \"$ref\" names {}, which is computed later (or is this very initialization); an \
                     initialization may use only those above it",
                    quote(name)
                ));
            }
            Some(&InitRef::Computed(k)) => return Ok(Arg::Computed(k)),
            Some(&InitRef::Literal(init)) => init,
        };
        if let Some(&id) = self.ref_consts.get(&init) {
            return Ok(Arg::Const(id));
        }
        let id = self.push_const(self.inits[init].1.clone(), at)?;
        self.ref_consts.insert(init, id);
        Ok(Arg::Const(id))
    }

    fn edge(&self, edge: &EdgeSpec, at: Place<'_>) -> Result<Edge, Issue> {
        if !self.post_names.is_empty() && self.post_names.contains_key(edge.pred.as_ref()) {
            return invalid(format!(
                "{at}: predecessor {} is a post-node; post-nodes run after the last frame and can be read by \
                 nothing (a post-node reads regular nodes only)",
                quote(&edge.pred)
            ));
        }
        let pred = self.node_ids.get(edge.pred.as_ref()).copied().ok_or_else(|| {
            if edge.pred == NETWORK_INPUT {
                return Issue::Invalid(format!(
                    "{at}: reads {}, the packets of a network source, but the graph has no \"network_config\"; add one",
                    quote(NETWORK_INPUT)
                ));
            }
            Issue::Invalid(format!(
                "{at}: predecessor {} is not a node of this graph; check the name",
                quote(&edge.pred)
            ))
        })?;
        let rule = edge.rule.then_some(match edge.group_by {
            Some(groups) => Rule::Groups { size: groups.size },
            None => Rule::Offsets,
        });
        let sel = match (&edge.index, edge.group_by.filter(|_| rule.is_none())) {
            (_, Some(groups)) => Selection::Group(groups),
            (IndexSpec::Default, None) if edge.kind == EdgeKind::Barrier && rule.is_none() => Selection::All,
            (IndexSpec::Default, None) => Selection::offset(0),
            (IndexSpec::Offset(k), None) => Selection::offset(*k),
            (IndexSpec::Offsets(offsets), None) => Selection::Offsets(offsets.clone()),
            (IndexSpec::Text(text), None) => select::parse_text(text, |name| self.lookup(name))
                .map_err(|e| Issue::Invalid(format!("{at}: index {}: {e}", quote(text))))?,
        };
        let sel = match (edge.absolute, sel) {
            (false, sel) => sel,
            (true, Selection::Range(a, b)) if a >= 0 => Selection::Absolute(a, b),
            (true, _) => {
                return invalid(format!(
                    r#"{at}: absolute selects instances by number: give one instance k or a range "a-b" of them"#
                ));
            }
        };
        if matches!(rule, Some(Rule::Groups { .. })) && !matches!(sel, Selection::Range(..)) {
            return invalid(format!(
                r#"{at}: "rule": "tomii-1.2" with group_by splits a range "a-b" into groups; give the range as the index"#
            ));
        }
        if rule.is_some() && !matches!(sel, Selection::Range(..) | Selection::Offsets(_)) {
            return invalid(format!(
                r#"{at}: "rule": "tomii-1.2" applies to offsets and ranges; "all" and group_by select absolutely"#
            ));
        }
        let sel = match (edge.wrap, sel) {
            (false, sel) => sel,
            (true, Selection::Offsets(offsets)) => Selection::WrappedOffsets(offsets),
            (true, Selection::Range(a, b)) => Selection::WrappedRange(a, b),
            (true, _) => {
                return invalid(format!("{at}: wrap applies to offsets and ranges; this selection is absolute"));
            }
        };
        let pred = u32::try_from(pred).map_err(|_| Issue::TooLarge(format!("{at}: too many nodes")))?;
        Ok(Edge { kind: edge.kind, pred, sel, rule })
    }
}
