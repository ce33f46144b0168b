//! The top-level object: its name and lists, the inputs (`inputs`, and `$network` for a
//! `network_config`) and the post-nodes.

use std::borrow::Cow;

use serde_json::Value as Json;

use super::fields::{check_fields, list, name_ref};
use super::init::init;
use super::network::network;
use super::node::{factor, node};
use super::{FactorSpec, GraphSpec, NETWORK_INPUT, NodeSpec};
use crate::graph::error::{Issue, Place, invalid, quote};
use crate::graph::typed::show;

const TOP_FIELDS: &[&str] = &["name", "initializations", "inputs", "nodes", "post_nodes", "network_config"];
const INPUT_FIELDS: &[&str] = &["name", "factor"];

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
