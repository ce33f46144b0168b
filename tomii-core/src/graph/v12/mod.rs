//! The Tomii 1.2 front end: a graph file as Tomii 1.2 wrote it, rewritten as the current format's
//! JSON with the same meaning, which the usual reader (`spec/` → `resolve.rs` → `compile.rs`)
//! then compiles; `tomii convert` writes that JSON out. README.md, "Tomii 1.2 graph files", says
//! what is read and how, and which meanings needed a warning.
//!
//! Every 1.2 specific is checked here, so an error names the node and the 1.2 field; what both
//! dialects share (names, cycles) is left to the reader. Never panics on any JSON.

mod detect;
mod grouped;
mod indexes;
pub(crate) mod rule;
mod schema;
mod values;

use std::collections::HashMap;

use serde_json::{Map, Value as Json, json};

pub use detect::Dialect;
pub(crate) use detect::detect;
pub use schema::schema;

use super::counts::{Counts, Evaluated};
use super::error::{Issue, quote};
use super::inits::Evaluate;
use super::literal::Literal;
use super::spec::NETWORK_INPUT;
use super::typed::show;
use grouped::NodeGroups;
use indexes::Known;

/// A 1.2 file in the current format, with one warning per node whose 1.2 meaning the current
/// format spells differently.
pub(crate) struct Translation {
    pub json: Json,
    pub warnings: Vec<String>,
    /// The computed initializations evaluated for the counts that name one, and those counts
    /// (`graph/counts.rs`); none when no count names one.
    pub precomputed: Option<Evaluated>,
}

const TOP_FIELDS: &[&str] = &["initializations", "nodes", "post_nodes", "network_config"];
const INIT_FIELDS: &[&str] = &["name", "function", "func", "args", "factor"];
const NODE_FIELDS: &[&str] =
    &["name", "function", "factor", "args", "priority", "use_workers", "group_size", "condition", "loop", "loop_args"];
const CONDITION_FIELDS: &[&str] = &["operation", "value", "value_type", "function", "func", "args"];
const OPERATIONS: &[&str] = &["Eq", "Neq", "Gt", "Lt"];
/// `network_config` fields holding a number (or the name of an initialization holding one).
pub(crate) const NETWORK_NUMBERS: &[&str] =
    &["num_sockets", "packet_length", "frame_packets", "stream_packets", "buffer_depth", "start_port"];
const NETWORK_TEXTS: &[&str] = &["socket_type", "address", "extract_packet_func", "id_function"];

/// Rewrites the 1.2 file `root` in the current format; `workers` is the worker count a factor of
/// `"$workers"` stands for (none: such a factor is an error saying to give it); `evaluate`
/// computes the initializations a count names (none: such a count is an error saying how to give
/// its value); `source` names the file.
pub(crate) fn translate(
    root: &Json,
    workers: Option<u32>,
    evaluate: Option<Evaluate<'_>>,
    source: &str,
) -> Result<Translation, Issue> {
    let Json::Object(top) = root else {
        return invalid(format!("the top level must be an object with a \"nodes\" list, got {}", show(root)));
    };
    if let Some(key) = top.keys().find(|key| !TOP_FIELDS.contains(&key.as_str())) {
        return invalid(format!(
            "unknown field {} in a Tomii 1.2 graph; its fields are {}",
            quote(key),
            listed(TOP_FIELDS)
        ));
    }
    let mut front = Front { workers, ..Front::default() };
    let mut out = Map::new();
    let mut counts = Counts::new(evaluate, workers, source, Dialect::Tomii12);
    let mut inits = Vec::new();
    for (k, init) in list(top, "initializations")?.iter().enumerate() {
        let mut translated = front.init(init, k)?;
        if let Json::Object(object) = &mut translated
            && object.contains_key("function")
        {
            let name = object.get("name").and_then(Json::as_str).unwrap_or_default().to_owned();
            counts.init_factor(object, &format!("initialization {}", quote(&name)), &inits)?;
            counts.add(&name);
        }
        inits.push(translated);
    }
    let rewritten = counts.file(top, &inits)?;
    let top = rewritten.as_ref().unwrap_or(top);
    counts.finish(&inits)?;
    let nodes = list(top, "nodes")?;
    let post_nodes = list(top, "post_nodes")?;
    front.read_factors(nodes, post_nodes, top.get("network_config"))?;
    if !inits.is_empty() {
        out.insert("initializations".to_owned(), Json::Array(inits));
    }
    let nodes = nodes.iter().enumerate().map(|(k, node)| front.node(node, "nodes", k)).collect::<Result<_, _>>()?;
    out.insert("nodes".to_owned(), Json::Array(nodes));
    if !post_nodes.is_empty() {
        let post = post_nodes.iter().enumerate().map(|(k, node)| front.node(node, "post_nodes", k));
        out.insert("post_nodes".to_owned(), Json::Array(post.collect::<Result<_, _>>()?));
    }
    if let Some(network) = top.get("network_config").filter(|n| !n.is_null()) {
        out.insert("network_config".to_owned(), front.network(network)?);
    }
    Ok(Translation { json: Json::Object(out), warnings: front.warnings, precomputed: counts.evaluated() })
}

/// What the translation has learnt so far.
#[derive(Default)]
struct Front {
    /// Constant initializations' values (factors, selections and group sizes may name them).
    consts: HashMap<String, Literal>,
    /// Every node's factor, when known from the file alone.
    factors: HashMap<String, u32>,
    /// Every node's `group_size` above 1, when known from the file alone.
    group_sizes: HashMap<String, u32>,
    /// The groups of the node being read (README.md, "Grouped edges").
    groups: Option<NodeGroups>,
    /// The worker count of the run the file is loaded for, which a factor of `"$workers"` is.
    workers: Option<u32>,
    warnings: Vec<String>,
}

impl Front {
    fn known(&self) -> Known<'_> {
        Known { consts: &self.consts, factors: &self.factors }
    }

    /// `{"name", "args": [one typed value]}` (a constant) or `{"name", "function", "args", "factor"}`.
    fn init(&mut self, json: &Json, position: usize) -> Result<Json, Issue> {
        let Json::Object(init) = json else {
            return invalid(format!(
                "initializations[{position}] must be an object {{\"name\": ..., \"args\": [...]}}"
            ));
        };
        let name = match init.get("name") {
            Some(Json::String(name)) if !name.is_empty() => name.clone(),
            _ => return invalid(format!("initializations[{position}]: \"name\" is missing; give it a unique name")),
        };
        let at = format!("initialization {}", quote(&name));
        check_fields(init, INIT_FIELDS, &at)?;
        let function = init.get("function").or_else(|| init.get("func")).filter(|f| !f.is_null());
        let args = init.get("args").filter(|a| !a.is_null());
        let Some(function) = function else {
            if init.get("factor").is_some_and(|f| !f.is_null()) {
                return invalid(format!("{at}: \"factor\" belongs to a computed initialization; add \"function\""));
            }
            let value = match args.and_then(Json::as_array).map(Vec::as_slice) {
                Some([value]) => value,
                _ => {
                    return invalid(format!(
                        "{at}: \"args\" of a constant must hold exactly one typed value {{\"type\": T, \"value\": \"...\"}}"
                    ));
                }
            };
            let (value, literal) = self.literal(value, &format!("{at} args[0]"))?;
            self.consts.insert(name.clone(), literal);
            return Ok(json!({"name": name, "value": value}));
        };
        let Some(function) = function.as_str().filter(|f| !f.is_empty()) else {
            return invalid(format!("{at}: \"function\" must be the name of a kernel, got {}", show(function)));
        };
        let mut out = Map::new();
        out.insert("name".to_owned(), json!(name));
        out.insert("function".to_owned(), json!(function));
        let args = self.args(args, &at, "args", None)?;
        out.insert("args".to_owned(), Json::Array(args.into_iter().map(|(arg, _)| arg).collect()));
        if let Some(factor) = init.get("factor").filter(|f| !f.is_null()) {
            out.insert("factor".to_owned(), self.factor(factor, &at, "factor")?.0);
        }
        Ok(Json::Object(out))
    }

    /// Every node's (and post-node's, and `$network`'s) factor, before any edge is read: a node
    /// may read one further down the file.
    fn read_factors(&mut self, nodes: &[Json], post: &[Json], network: Option<&Json>) -> Result<(), Issue> {
        for (list, items) in [("nodes", nodes), ("post_nodes", post)] {
            for (k, node) in items.iter().enumerate() {
                let Some(name) = node.get("name").and_then(Json::as_str) else {
                    return invalid(format!("{list}[{k}]: \"name\" is missing; give every node a unique name"));
                };
                let at = format!("node {}", quote(name));
                let factor = match node.get("factor").filter(|f| !f.is_null()) {
                    None => Some(1),
                    Some(factor) => self.factor(factor, &at, "factor")?.1,
                };
                factor.map(|f| self.factors.insert(name.to_owned(), f));
                if let Some(Ok(gs)) = node.get("group_size").filter(|g| !g.is_null()).map(|g| self.group_size(g, &at)) {
                    self.group_sizes.insert(name.to_owned(), gs as u32);
                }
            }
        }
        if let Some(Json::Object(network)) = network {
            let packets = network.get("frame_packets").or_else(|| network.get("stream_packets"));
            if let Some(packets) = packets.filter(|p| !p.is_null()) {
                let factor = self.factor(packets, "network_config", "frame_packets")?.1;
                factor.map(|f| self.factors.insert(NETWORK_INPUT.to_owned(), f));
            }
        }
        Ok(())
    }

    /// A count: an integer, a string holding one, or an initialization's name. Returns the current
    /// format's spelling and the value when it is known here.
    fn factor(&self, json: &Json, at: &str, field: &str) -> Result<(Json, Option<u32>), Issue> {
        let bad = || {
            invalid(format!(
                "{at}: {field} {} is not a positive integer, a string holding one or the name of an initialization",
                show(json)
            ))
        };
        match json {
            Json::Number(n) => match n.as_u64().and_then(|v| u32::try_from(v).ok()) {
                Some(v) if v > 0 => Ok((json!(v), Some(v))),
                _ => bad(),
            },
            Json::String(text) if text.trim() == "$workers" => match self.workers {
                Some(workers) => Ok((json!(workers), Some(workers))),
                None => invalid(format!(
                    "{at}: {field} \"$workers\" is the worker count of the run, and none is given here: the \
                     instances are fixed when the graph is compiled; give the workers (tomii convert --workers N) \
                     or write the count"
                )),
            },
            Json::String(text) => match text.trim().parse::<u32>() {
                Ok(v) if v > 0 => Ok((json!(v), Some(v))),
                Ok(_) => bad(),
                Err(_) if text.trim().is_empty() => bad(),
                // The reader reports a name that is not an integer initialization.
                Err(_) => {
                    let value =
                        self.consts.get(text.trim()).and_then(Literal::as_u64).and_then(|v| u32::try_from(v).ok());
                    Ok((json!(text.trim()), value))
                }
            },
            _ => bad(),
        }
    }

    fn node(&mut self, json: &Json, list: &str, position: usize) -> Result<Json, Issue> {
        let Json::Object(node) = json else {
            return invalid(format!("{list}[{position}] must be an object {{\"name\": ..., \"function\": ...}}"));
        };
        let name = node.get("name").and_then(Json::as_str).unwrap_or_default().to_owned();
        let at = format!("node {}", quote(&name));
        check_fields(node, NODE_FIELDS, &at)?;
        let factor = self.factors.get(&name).copied();
        let groups = NodeGroups::of(node.get("args"), factor, self.group_sizes.get(&name).copied(), &self.known())
            .map_err(|e| Issue::Invalid(format!("{at} {e}")))?;
        self.groups = Some(groups);
        let mut out = Map::new();
        let mut notes = Vec::new();
        for (key, value) in node {
            if value.is_null() {
                continue;
            }
            let value = match key.as_str() {
                "factor" => {
                    let (factor, count) = self.factor(value, &at, "factor")?;
                    if value.as_str().is_some_and(|text| text.trim() == "$workers") {
                        notes.push(format!(
                            "factor \"$workers\" is this run's {} worker(s): the current format writes the count, \
                             so a converted file keeps it whatever the workers of a later run",
                            count.unwrap_or_default()
                        ));
                    }
                    factor
                }
                "group_size" => json!(self.group_size(value, &at)?),
                "args" | "loop_args" => {
                    let args = self.args(Some(value), &at, key, factor)?;
                    keep_notes(args, &mut notes)
                }
                "condition" => self.condition(value, &at, factor, &mut notes)?,
                "loop" => self.loop_spec(value, &at)?,
                _ => value.clone(),
            };
            out.insert(key.clone(), value);
        }
        self.groups = None;
        if !notes.is_empty() {
            self.warnings.push(format!("{at}: {}", notes.join("; ")));
        }
        Ok(Json::Object(out))
    }

    fn group_size(&self, json: &Json, at: &str) -> Result<u64, Issue> {
        let value = match json {
            Json::Number(n) => n.as_u64(),
            Json::String(text) => {
                text.trim().parse::<u64>().ok().or_else(|| self.consts.get(text.trim()).and_then(Literal::as_u64))
            }
            _ => None,
        };
        value.filter(|&g| g >= 1 && g <= u64::from(u32::MAX)).ok_or_else(|| {
            Issue::Invalid(format!(
                "{at}: group_size {} is not a positive integer or the name of a constant initialization holding one",
                show(json)
            ))
        })
    }

    /// `"loop": {"name", "factor"}`; the factor as for nodes.
    fn loop_spec(&self, json: &Json, at: &str) -> Result<Json, Issue> {
        let Json::Object(spec) = json else {
            return invalid(format!("{at}: \"loop\" must be {{\"name\": ..., \"factor\": N}}, got {}", show(json)));
        };
        let mut out = spec.clone();
        if let Some(factor) = spec.get("factor").filter(|f| !f.is_null()) {
            out.insert("factor".to_owned(), self.factor(factor, at, "loop.factor")?.0);
        }
        Ok(Json::Object(out))
    }

    /// A condition `{"operation", "value", "value_type", "function", "args"}` with its value a string.
    fn condition(
        &mut self,
        json: &Json,
        at: &str,
        factor: Option<u32>,
        notes: &mut Vec<String>,
    ) -> Result<Json, Issue> {
        let Json::Object(condition) = json else {
            return invalid(format!("{at}: \"condition\" must be an object, got {}", show(json)));
        };
        if condition.is_empty() {
            return Ok(json!({}));
        }
        let at_field = format!("{at} condition");
        check_fields(condition, CONDITION_FIELDS, &at_field)?;
        let op = condition.get("operation").and_then(Json::as_str).unwrap_or_default();
        if !OPERATIONS.contains(&op) {
            return invalid(format!(
                "{at_field}: operation {} is not one of Tomii 1.2's {}",
                show(condition.get("operation").unwrap_or(&Json::Null)),
                OPERATIONS.join(", ")
            ));
        }
        if matches!(op, "Gt" | "Lt") {
            notes.push(format!(
                "its condition {op} was always false in Tomii 1.2 (no instance ran); here it compares: the instances \
                 whose function result is {} the value run",
                if op == "Gt" { "greater than" } else { "less than" }
            ));
        }
        let Some(ty) = condition.get("value_type").and_then(Json::as_str) else {
            return invalid(format!("{at_field}: \"value_type\" is missing; name the type of \"value\", e.g. \"u64\""));
        };
        let value = condition.get("value").unwrap_or(&Json::Null);
        let (typed, _) =
            values::typed_value(ty, value).map_err(|e| Issue::Invalid(format!("{at_field} value: {e}")))?;
        let mut out = Map::new();
        out.insert("operation".to_owned(), json!(op));
        out.insert("value".to_owned(), typed["value"].clone());
        out.insert("value_type".to_owned(), json!(ty.trim()));
        if let Some(function) = condition.get("function").or_else(|| condition.get("func")) {
            out.insert("function".to_owned(), function.clone());
        }
        let args = self.args(condition.get("args"), at, "condition.args", factor)?;
        out.insert("args".to_owned(), keep_notes(args, notes));
        Ok(Json::Object(out))
    }

    /// An argument list; each argument with its note, if its 1.2 meaning needed one.
    fn args(
        &mut self,
        json: Option<&Json>,
        at: &str,
        field: &str,
        factor: Option<u32>,
    ) -> Result<Vec<(Json, Option<String>)>, Issue> {
        match json {
            None | Some(Json::Null) => Ok(Vec::new()),
            Some(Json::Array(items)) => {
                items.iter().enumerate().map(|(k, arg)| self.arg(arg, &format!("{at} {field}[{k}]"), factor)).collect()
            }
            Some(other) => invalid(format!("{at}: \"{field}\" must be a list, got {}", show(other))),
        }
    }

    fn arg(&mut self, json: &Json, at: &str, factor: Option<u32>) -> Result<(Json, Option<String>), Issue> {
        let Json::Object(arg) = json else {
            return invalid(format!(
                "{at}: an argument must be an object {{\"type\": T, \"value\": \"...\"}}, got {}",
                show(json)
            ));
        };
        let kind = arg.get("type").and_then(Json::as_str).unwrap_or_default();
        let only = |fields: &[&str]| check_fields(arg, fields, at);
        let edge = match kind {
            "$ref" => {
                only(&["type", "value"])?;
                return match arg.get("value").and_then(Json::as_str) {
                    Some("$index") => Ok((json!({"type": "$index"}), None)),
                    Some("$workers") => Ok((json!({"type": "$workers"}), None)),
                    Some(name) if !name.is_empty() => Ok((json!({"type": "$ref", "name": name}), None)),
                    _ => invalid(format!(
                        "{at}: a \"$ref\" needs \"value\": the initialization's name, \"$index\" or \"$workers\""
                    )),
                };
            }
            "$factor" | "$worker" => {
                only(&["type"])?;
                return Ok((json!({"type": if kind == "$factor" { "$index" } else { "$workers" }}), None));
            }
            "$res" | "$dep" | "$barrier" => kind,
            other if other.starts_with('$') => {
                return invalid(format!("{at}: argument type {} is not one of Tomii 1.2's", quote(other)));
            }
            _ => return self.literal_arg(arg, at),
        };
        only(&["type", "predecessor"])?;
        let Some(Json::Object(pred)) = arg.get("predecessor") else {
            return invalid(format!(
                "{at}: a {edge} argument needs \"predecessor\": {{\"name\": NODE, \"indexes\": ...}}"
            ));
        };
        if let Some(groups) = &self.groups {
            let pred_group_size =
                pred.get("name").and_then(Json::as_str).and_then(|n| self.group_sizes.get(n)).copied();
            let grouped = groups
                .edge(pred, edge, pred_group_size, &self.known())
                .map_err(|e| Issue::Invalid(format!("{at} predecessor: {e}")))?;
            if let Some(pred) = grouped {
                return Ok((json!({"type": edge, "predecessor": pred}), None));
            }
        }
        let translated = indexes::predecessor(pred, edge, factor, &self.known())
            .map_err(|e| Issue::Invalid(format!("{at} predecessor: {e}")))?;
        let note = translated.note.map(|note| format!("{} {note}", field_of(at)));
        Ok((json!({"type": edge, "predecessor": translated.pred}), note))
    }

    /// A literal argument, with its legacy condition (if any) reported and left out.
    fn literal_arg(&mut self, arg: &Map<String, Json>, at: &str) -> Result<(Json, Option<String>), Issue> {
        check_fields(arg, &["type", "value", "condition"], at)?;
        let note = arg.get("condition").filter(|c| !c.is_null()).map(|condition| {
            format!(
                "{} carries a legacy condition {}, which this runtime does not evaluate (it is left out); to run the \
                 node only when a value compares so, give the node a \"condition\" with a function",
                field_of(at),
                show(condition)
            )
        });
        let plain: Map<String, Json> =
            arg.iter().filter(|(k, _)| *k != "condition").map(|(k, v)| (k.clone(), v.clone())).collect();
        let (value, _) = self.literal(&Json::Object(plain), at)?;
        Ok((value, note))
    }

    /// `{"type": T, "value": "..."}` in the current format, and its literal.
    fn literal(&self, json: &Json, at: &str) -> Result<(Json, Literal), Issue> {
        let ty = json.get("type").and_then(Json::as_str);
        let (Some(ty), Some(value)) = (ty, json.get("value")) else {
            return invalid(format!("{at}: a literal is {{\"type\": T, \"value\": \"...\"}}, got {}", show(json)));
        };
        values::typed_value(ty, value).map_err(|e| Issue::Invalid(format!("{at} value: {e}")))
    }

    /// `network_config`, its numbers written as integers or names, its index function's args read.
    fn network(&mut self, json: &Json) -> Result<Json, Issue> {
        let at = "network_config";
        let Json::Object(network) = json else {
            return invalid(format!("{at} must be an object {{\"start_port\": ..., \"packet_length\": ..., ...}}"));
        };
        let mut out = Map::new();
        for (key, value) in network {
            let value = match key.as_str() {
                _ if value.is_null() => continue,
                key if NETWORK_NUMBERS.contains(&key) => self.number(value, at, key)?,
                key if NETWORK_TEXTS.contains(&key) => value.clone(),
                "index_function" => self.index_function(value)?,
                other => {
                    let known: Vec<&str> =
                        NETWORK_NUMBERS.iter().chain(NETWORK_TEXTS).copied().chain(["index_function"]).collect();
                    return invalid(format!(
                        "unknown field {} in {at}; its fields are {}",
                        quote(other),
                        listed(&known)
                    ));
                }
            };
            out.insert(key.clone(), value);
        }
        Ok(Json::Object(out))
    }

    /// A number of `network_config`: an integer, a string holding one, or a name.
    fn number(&self, json: &Json, at: &str, field: &str) -> Result<Json, Issue> {
        match json {
            Json::Number(_) => Ok(json.clone()),
            Json::String(text) => Ok(text.trim().parse::<u64>().map_or_else(|_| json!(text.trim()), Json::from)),
            other => {
                invalid(format!("{at}: {field} {} is not an integer or the name of an initialization", show(other)))
            }
        }
    }

    fn index_function(&mut self, json: &Json) -> Result<Json, Issue> {
        let at = "network_config index_function";
        let Json::Object(function) = json else {
            return invalid(format!("{at} must be {{\"function\": KERNEL, \"args\": [...]}}, got {}", show(json)));
        };
        check_fields(function, &["function", "args"], at)?;
        let mut out = function.clone();
        let args = self.args(function.get("args"), at, "args", None)?;
        out.insert("args".to_owned(), Json::Array(args.into_iter().map(|(arg, _)| arg).collect()));
        Ok(Json::Object(out))
    }
}

/// The arguments as a JSON list, their notes moved to `notes`.
fn keep_notes(args: Vec<(Json, Option<String>)>, notes: &mut Vec<String>) -> Json {
    let mut list = Vec::with_capacity(args.len());
    for (arg, note) in args {
        notes.extend(note);
        list.push(arg);
    }
    Json::Array(list)
}

/// `node "x" args[2]` → `args[2]`: the field within the node, for notes that follow the node's name.
fn field_of(at: &str) -> &str {
    at.rsplit_once(' ').map_or(at, |(_, field)| field)
}

/// A top-level list; absent or null is empty.
fn list<'a>(top: &'a Map<String, Json>, field: &str) -> Result<&'a [Json], Issue> {
    match top.get(field) {
        None | Some(Json::Null) => Ok(&[]),
        Some(Json::Array(items)) => Ok(items),
        Some(other) => invalid(format!("{field:?} must be a list, got {}", show(other))),
    }
}

fn check_fields(object: &Map<String, Json>, known: &[&str], at: &str) -> Result<(), Issue> {
    match object.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => {
            invalid(format!("unknown field {} in {at}; Tomii 1.2's fields there are {}", quote(key), listed(known)))
        }
        None => Ok(()),
    }
}

fn listed(fields: &[&str]) -> String {
    fields.iter().map(|f| quote(f)).collect::<Vec<_>>().join(", ")
}

fn invalid<T>(message: String) -> Result<T, Issue> {
    Err(Issue::Invalid(message))
}
