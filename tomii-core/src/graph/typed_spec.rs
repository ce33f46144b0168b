//! The typed path (README.md, "Two ways in"): a graph file of the current format deserialised
//! straight into a [`GraphSpec`] with serde derive, without a JSON value tree or dialect detection.
//!
//! It accepts a strict subset of what `spec::read` accepts and must never accept anything else: a
//! form it does not know (a condition, a computed initialization, `network_config`, any form of
//! Tomii 1.2) or any error makes it give up, and `parse_str` reads the file again the precise way.
//! Every field's meaning comes from the same functions of `spec.rs` the JSON-value path uses;
//! errors here carry no message worth showing, since they are never shown.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value as Json;

use super::error::{ArgGroup, Issue, Place};
use super::spec::{self, ArgSpec, EdgeKind, GraphSpec, InitSpec, NodeFields, NodeSpec};
use super::strict::Strict;
use super::typed;

/// Why the typed path gave up; never shown to a user.
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
pub(crate) fn read(text: &str) -> Result<GraphSpec, GaveUp> {
    let file: File = serde_json::from_str(text)?;
    let inits = file.initializations.unwrap_or_default().into_iter().map(Init::spec).collect::<Result<_, _>>()?;
    let mut nodes = file.nodes.0;
    for input in file.inputs.unwrap_or_default() {
        spec::add_input(&mut nodes, input.spec()?)?;
    }
    let post_nodes = file.post_nodes.map(|nodes| nodes.0).unwrap_or_default();
    spec::check_post_nodes(&post_nodes)?;
    Ok(GraphSpec { name: file.name, inits, nodes, post_nodes, network: None })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: Option<String>,
    initializations: Option<Vec<Init>>,
    inputs: Option<Vec<Input>>,
    nodes: Nodes,
    post_nodes: Option<Nodes>,
}

/// A list of nodes, each made a [`NodeSpec`] as soon as it is read (no list of `Node`s between).
struct Nodes(Vec<NodeSpec>);

impl<'de> Deserialize<'de> for Nodes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(ListVisitor(Node::spec, PhantomData)).map(Nodes)
    }
}

/// An argument list, each made an [`ArgSpec`] as soon as it is read. Argument places are only
/// for messages, which this path never shows, so every argument is read as argument 0 of a node
/// without a name.
struct Args(Vec<ArgSpec>);

impl<'de> Deserialize<'de> for Args {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spec = |arg: Arg<'de>| arg.spec("", ArgGroup::Kernel, 0);
        deserializer.deserialize_seq(ListVisitor(spec, PhantomData)).map(Args)
    }
}

/// Reads a list of `T`, making each an `S` with the function.
struct ListVisitor<F, T, S>(F, PhantomData<fn(T) -> S>);

impl<'de, T: Deserialize<'de>, S, F: FnMut(T) -> Result<S, GaveUp>> Visitor<'de> for ListVisitor<F, T, S> {
    type Value = Vec<S>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Vec<S>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<T>()? {
            items.push((self.0)(item).map_err(|_| de::Error::custom("gave up"))?);
        }
        Ok(items)
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
    fn spec(self) -> Result<InitSpec, GaveUp> {
        Ok(spec::literal_init(non_empty(self.name)?, &self.value.0)?)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    name: String,
    factor: Option<Strict>,
}

impl Input {
    fn spec(self) -> Result<NodeSpec, GaveUp> {
        let name = non_empty(self.name)?;
        let factor = spec::factor(json(&self.factor), Place::Input(&name))?;
        Ok(spec::input_spec(name, factor))
    }
}

/// A node without a condition (one with a condition gives up).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Node {
    name: String,
    function: String,
    factor: Option<Strict>,
    args: Option<Args>,
    priority: Option<Strict>,
    use_workers: Option<Strict>,
    #[serde(rename = "loop")]
    loop_: Option<Strict>,
    loop_args: Option<Args>,
    group_size: Option<Strict>,
}

impl Node {
    fn spec(self) -> Result<NodeSpec, GaveUp> {
        let (name, function) = (non_empty(self.name)?, non_empty(self.function)?);
        let args = self.args.map(|args| args.0).unwrap_or_default();
        let loop_args = self.loop_args.map(|args| args.0).unwrap_or_default();
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

/// A field's value as the JSON-value path sees it: absent and null alike.
fn json(field: &Option<Strict>) -> Option<&Json> {
    field.as_ref().map(|strict| &strict.0)
}

fn non_empty(text: String) -> Result<String, GaveUp> {
    if text.is_empty() { Err(GaveUp) } else { Ok(text) }
}

/// One argument as written: a plain literal, or an object of these fields (a `type` with an
/// escape in it gives up).
enum Arg<'de> {
    Plain(Json),
    Object { kind: &'de str, name: Option<String>, predecessor: Option<Pred>, value: Option<Strict> },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Pred {
    name: String,
    index: Option<Strict>,
    group_by: Option<Strict>,
    wrap: Option<Strict>,
}

impl Arg<'_> {
    fn spec(self, node: &str, group: ArgGroup, k: usize) -> Result<ArgSpec, GaveUp> {
        let at = Place::Arg(node, group, k);
        let (kind, name, predecessor, value) = match self {
            Arg::Plain(value) => return Ok(ArgSpec::Literal(typed::plain(&value)?)),
            Arg::Object { kind, name, predecessor, value } => (kind, name, predecessor, value),
        };
        let edge = match (kind, name, predecessor, value) {
            ("$ref", Some(name), None, None) => return Ok(ArgSpec::Ref(non_empty(name)?)),
            ("$index", None, None, None) => return Ok(ArgSpec::Index),
            ("$workers", None, None, None) => return Ok(ArgSpec::Workers),
            ("$res", None, Some(pred), None) => (EdgeKind::Res, pred),
            ("$dep", None, Some(pred), None) => (EdgeKind::Dep, pred),
            ("$barrier", None, Some(pred), None) => (EdgeKind::Barrier, pred),
            (ty, None, None, Some(Strict(value))) if !ty.starts_with('$') && !twelve_value(ty, &value) => {
                return Ok(ArgSpec::Literal(typed::of_type(ty.trim(), &value)?));
            }
            _ => return Err(GaveUp),
        };
        let (kind, pred) = edge;
        let fields = [json(&pred.index), json(&pred.group_by), json(&pred.wrap)];
        let spec = spec::edge(kind, non_empty(pred.name)?, fields, at, Place::Pred(node, group, k))?;
        Ok(ArgSpec::Edge(spec))
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

impl<'de> Deserialize<'de> for Arg<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ArgVisitor)
    }
}

struct ArgVisitor;

/// The keys an argument object may have.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum ArgKey {
    Type,
    Name,
    Predecessor,
    Value,
}

impl<'de> Visitor<'de> for ArgVisitor {
    type Value = Arg<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an argument")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Arg<'de>, E> {
        Ok(Arg::Plain(Json::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Arg<'de>, E> {
        Ok(Arg::Plain(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Arg<'de>, E> {
        Ok(Arg::Plain(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Arg<'de>, E> {
        serde_json::Number::from_f64(v).map(|n| Arg::Plain(Json::Number(n))).ok_or_else(|| E::custom("not finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Arg<'de>, E> {
        Ok(Arg::Plain(Json::String(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Arg<'de>, E> {
        Ok(Arg::Plain(Json::String(v)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Arg<'de>, A::Error> {
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
