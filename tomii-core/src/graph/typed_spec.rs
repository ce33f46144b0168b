//! The typed path (README.md, "Two ways in"): a graph file of the current format deserialised
//! straight into a [`GraphSpec`] with serde derive, without a JSON value tree or dialect detection.
//!
//! It accepts a strict subset of what `spec::read` accepts and must never accept anything else: a
//! form it does not know (a condition, a computed initialization, `network_config`, any form of
//! Tomii 1.2), an unknown or repeated key, or any error makes it give up, and `parse_str` reads the
//! file again the precise way. Every field's meaning comes from the same functions of `spec.rs` the
//! JSON-value path uses; errors here carry no message worth showing, since they are never shown.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value as Json;

use super::error::{ArgGroup, Issue, Place};
use super::spec::{self, ArgSpec, EdgeKind, EdgeSpec, GraphSpec, InitSpec, NodeFields, NodeSpec};
use super::strict::Strict;
use super::typed;

/// Why the typed path gave up; never shown to a user.
#[derive(Debug)]
pub(crate) struct GaveUp;

/// Every error of the path is a reason to give up: the JSON's, a field's (`Issue`) and a
/// literal's (`String`).
macro_rules! gives_up {
    ($($error:ty),*) => {$(
        impl From<$error> for GaveUp {
            fn from(_: $error) -> GaveUp {
                GaveUp
            }
        }
    )*};
}
gives_up!(serde_json::Error, Issue, String);

/// `text` read the typed way, or [`GaveUp`] if it is not (or not only) the forms this path reads.
pub(crate) fn read(text: &str) -> Result<GraphSpec<'_>, GaveUp> {
    let file: File = serde_json::from_str(text)?;
    let inits = file.initializations.unwrap_or_default().into_iter().map(Init::spec).collect::<Result<_, _>>()?;
    let Nodes { mut nodes, mut args } = file.nodes;
    for input in file.inputs.unwrap_or_default() {
        spec::add_input(&mut nodes, input.spec()?)?;
    }
    let mut post_nodes = Vec::new();
    if let Some(post) = file.post_nodes {
        // The post-nodes' arguments follow the nodes' in the one list of the spec.
        let shift = |range: Range<usize>| range.start + args.len()..range.end + args.len();
        post_nodes = post.nodes;
        for node in &mut post_nodes {
            (node.args, node.loop_args) = (shift(node.args.clone()), shift(node.loop_args.clone()));
        }
        args.extend(post.args);
    }
    spec::check_post_nodes(&post_nodes)?;
    Ok(GraphSpec { name: file.name, inits, nodes, post_nodes, args, network: None })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File<'a> {
    name: Option<String>,
    initializations: Option<Vec<Init>>,
    #[serde(borrow)]
    inputs: Option<Vec<Input<'a>>>,
    #[serde(borrow)]
    nodes: Nodes<'a>,
    #[serde(borrow)]
    post_nodes: Option<Nodes<'a>>,
}

/// A list of nodes, each made a [`NodeSpec`] as soon as it is read (no list of `Node`s between),
/// and their arguments in one list, which each node holds ranges of.
struct Nodes<'a> {
    nodes: Vec<NodeSpec<'a>>,
    args: Vec<ArgSpec<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Nodes<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(NodesVisitor(PhantomData))
    }
}

struct NodesVisitor<'a>(PhantomData<Nodes<'a>>);

impl<'de: 'a, 'a> Visitor<'de> for NodesVisitor<'a> {
    type Value = Nodes<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of nodes")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Nodes<'a>, A::Error> {
        let mut list = Nodes { nodes: Vec::with_capacity(seq.size_hint().unwrap_or(0)), args: Vec::new() };
        while let Some(node) = seq.next_element::<Node>()? {
            let spec = node.spec(&mut list.args).map_err(|_| de::Error::custom("gave up"))?;
            list.nodes.push(spec);
        }
        Ok(list)
    }
}

/// A literal initialization (a computed one gives up).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Init {
    name: String,
    value: Strict,
}

impl Init {
    fn spec(self) -> Result<InitSpec<'static>, GaveUp> {
        Ok(spec::literal_init(non_empty(self.name)?, &self.value.0)?)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    factor: Option<Strict>,
}

impl<'a> Input<'a> {
    fn spec(self) -> Result<NodeSpec<'a>, GaveUp> {
        let name = non_empty(self.name)?;
        let factor = spec::factor(json(&self.factor), Place::Input(&name))?;
        Ok(spec::input_spec(name, factor))
    }
}

/// A node without a condition (one with a condition gives up).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Node<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    function: Cow<'a, str>,
    factor: Option<Strict>,
    #[serde(borrow)]
    args: Option<Vec<Arg<'a>>>,
    priority: Option<Strict>,
    use_workers: Option<Strict>,
    #[serde(rename = "loop")]
    loop_: Option<Strict>,
    #[serde(borrow)]
    loop_args: Option<Vec<Arg<'a>>>,
    group_size: Option<Strict>,
}

impl<'a> Node<'a> {
    /// The node's spec, its arguments appended to `pool`.
    fn spec(self, pool: &mut Vec<ArgSpec<'a>>) -> Result<NodeSpec<'a>, GaveUp> {
        let (name, function) = (non_empty(self.name)?, non_empty(self.function)?);
        let args = args_into(self.args, pool)?;
        let loop_args = args_into(self.loop_args, pool)?;
        let fields = NodeFields {
            factor: json(&self.factor),
            priority: json(&self.priority),
            use_workers: json(&self.use_workers),
            loop_: json(&self.loop_),
            group_size: json(&self.group_size),
        };
        Ok(spec::node_spec(name, function, args, loop_args, fields, |_| Ok(None))?)
    }
}

/// An argument list (absent: empty) appended to `pool`: its range there.
fn args_into<'a>(args: Option<Vec<Arg<'a>>>, pool: &mut Vec<ArgSpec<'a>>) -> Result<Range<usize>, GaveUp> {
    let start = pool.len();
    for arg in args.unwrap_or_default() {
        pool.push(arg.spec()?);
    }
    Ok(start..pool.len())
}

/// A field's value as the JSON-value path sees it: absent and null alike.
fn json(field: &Option<Strict>) -> Option<&Json> {
    field.as_ref().map(|strict| &strict.0)
}

fn non_empty<T: AsRef<str>>(text: T) -> Result<T, GaveUp> {
    if text.as_ref().is_empty() { Err(GaveUp) } else { Ok(text) }
}

/// One argument as written: a plain literal, or an object of these fields (a `type` with an
/// escape in it gives up).
enum Arg<'a> {
    Plain(Json),
    Object { kind: &'a str, name: Option<String>, predecessor: Option<Pred<'a>>, value: Option<Strict> },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Pred<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    index: Option<Strict>,
    group_by: Option<Strict>,
    wrap: Option<Strict>,
}

/// Argument places are only for messages, which this path never shows, so every argument is read
/// as argument 0 of a node without a name.
const AT: Place<'static> = Place::Arg("", ArgGroup::Kernel, 0);
const PRED_AT: Place<'static> = Place::Pred("", ArgGroup::Kernel, 0);

impl<'a> Arg<'a> {
    fn spec(self) -> Result<ArgSpec<'a>, GaveUp> {
        let (kind, name, predecessor, value) = match self {
            Arg::Plain(value) => return Ok(ArgSpec::Literal(typed::plain(&value)?)),
            Arg::Object { kind, name, predecessor, value } => (kind, name, predecessor, value),
        };
        let edge = |kind, pred: Pred<'a>| -> Result<ArgSpec<'a>, GaveUp> {
            let fields = [json(&pred.index), json(&pred.group_by), json(&pred.wrap), None, None];
            let spec: EdgeSpec = spec::edge(kind, non_empty(pred.name)?, fields, AT, PRED_AT)?;
            Ok(ArgSpec::Edge(spec))
        };
        match (kind, name, predecessor, value) {
            ("$ref", Some(name), None, None) => Ok(ArgSpec::Ref(non_empty(name)?)),
            ("$index", None, None, None) => Ok(ArgSpec::Index),
            ("$workers", None, None, None) => Ok(ArgSpec::Workers),
            ("$res", None, Some(pred), None) => edge(EdgeKind::Res, pred),
            ("$dep", None, Some(pred), None) => edge(EdgeKind::Dep, pred),
            ("$barrier", None, Some(pred), None) => edge(EdgeKind::Barrier, pred),
            (ty, None, None, Some(Strict(value))) if !ty.starts_with('$') && !twelve_value(ty, &value) => {
                Ok(ArgSpec::Literal(typed::of_type(ty.trim(), &value)?))
            }
            _ => Err(GaveUp),
        }
    }
}

/// Whether a typed value's `value` is written as only Tomii 1.2 writes it (`v12/detect.rs`,
/// `arg_marks`): a string for a type both dialects do not write as the same string, or an object
/// (a complex `{"re", "im"}`).
fn twelve_value(ty: &str, value: &Json) -> bool {
    match value {
        Json::String(_) => !matches!(ty.trim(), "String" | "char" | "i128" | "u128"),
        Json::Object(_) => true,
        _ => false,
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Arg<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ArgVisitor(PhantomData))
    }
}

struct ArgVisitor<'a>(PhantomData<Arg<'a>>);

/// The keys an argument object may have.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum ArgKey {
    Type,
    Name,
    Predecessor,
    Value,
}

impl<'de: 'a, 'a> Visitor<'de> for ArgVisitor<'a> {
    type Value = Arg<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an argument")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Arg<'a>, E> {
        Ok(Arg::Plain(Json::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Arg<'a>, E> {
        Ok(Arg::Plain(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Arg<'a>, E> {
        Ok(Arg::Plain(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Arg<'a>, E> {
        serde_json::Number::from_f64(v).map(|n| Arg::Plain(Json::Number(n))).ok_or_else(|| E::custom("not finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Arg<'a>, E> {
        Ok(Arg::Plain(Json::String(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Arg<'a>, E> {
        Ok(Arg::Plain(Json::String(v)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Arg<'a>, A::Error> {
        let (mut kind, mut name, mut predecessor, mut value) = (None, None, None, None);
        while let Some(key) = map.next_key::<ArgKey>()? {
            let repeated = match key {
                ArgKey::Type => kind.replace(map.next_value::<&'de str>()?).is_some(),
                ArgKey::Name => name.replace(map.next_value::<String>()?).is_some(),
                ArgKey::Predecessor => predecessor.replace(map.next_value::<Pred>()?).is_some(),
                ArgKey::Value => value.replace(map.next_value::<Strict>()?).is_some(),
            };
            if repeated {
                return Err(de::Error::custom("a repeated key"));
            }
        }
        let kind = kind.ok_or_else(|| de::Error::custom("no type"))?;
        Ok(Arg::Object { kind, name, predecessor, value })
    }
}
