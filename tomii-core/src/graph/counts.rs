//! Counts that name a computed initialization (a factor, `group_size`, `loop.factor`, a
//! `group_by`, a range end, a network number, `address`, an initialization's own `factor`), in
//! either dialect: the initializations run before the graph compiles, through the caller's
//! [`Evaluate`], in file order, and instance 0 of the named one is written into the file in its
//! place; the values are kept for the run, which does not compute them again (README.md,
//! "Computed counts"). Tomii 1.2 did the same while it loaded a graph. Without an evaluator such a
//! count is refused, naming the field and the initialization and saying how to give its value.
//!
//! The dialects differ in how a value is written: a Tomii 1.2 range's end is inclusive (a name
//! end, exclusive, becomes the literal end before it) and its numbers are strings; the current
//! format's range ends are exclusive and its counts are numbers.
//!
//! Never panics on any JSON.

use std::collections::HashMap;

use serde_json::{Map, Value as Json};
use tomii_types::kernel::Value;

use crate::graph::error::{Issue, quote};
use crate::graph::inits::{Evaluate, PendingInits, ShapeUse, ShapeValue, count_of, describe};
use crate::graph::v12::{Dialect, NETWORK_NUMBERS};
use crate::graph::{ArgSource, compile, resolve, spec};

/// The computed initializations' values and the counts that took one.
pub(crate) type Evaluated = (Vec<Vec<Value>>, Vec<ShapeUse>);

/// A current-format file with every count that names a computed initialization replaced by its
/// value (a copy; none when no count names one), and what was evaluated for it.
pub(crate) fn in_current(
    root: &Json,
    workers: Option<u32>,
    evaluate: Option<Evaluate<'_>>,
    source: &str,
) -> Result<(Option<Json>, Option<Evaluated>), Issue> {
    let Json::Object(top) = root else { return Ok((None, None)) };
    let Some(Json::Array(listed)) = top.get("initializations") else { return Ok((None, None)) };
    let mut counts = Counts::new(evaluate, workers, source, Dialect::Tomii);
    let mut inits = Vec::with_capacity(listed.len());
    for init in listed {
        let mut init = init.clone();
        if let Json::Object(object) = &mut init
            && object.contains_key("function")
        {
            let name = object.get("name").and_then(Json::as_str).unwrap_or_default().to_owned();
            counts.init_factor(object, &format!("initialization {}", quote(&name)), &inits)?;
            counts.add(&name);
        }
        inits.push(init);
    }
    let file = counts.file(top, &inits)?;
    if counts.shape.is_empty() {
        return Ok((None, None));
    }
    let mut file = file.unwrap_or_else(|| top.clone());
    counts.finish(&inits)?;
    file.insert("initializations".to_owned(), Json::Array(inits));
    Ok((Some(Json::Object(file)), counts.evaluated()))
}

/// What a field needs of the value it names.
#[derive(Clone, Copy, PartialEq)]
enum Want {
    /// A non-negative integer.
    Count,
    /// The exclusive end of a range (in a Tomii 1.2 file, written as the literal end before it).
    RangeEnd,
    /// A String (`network_config` `address`).
    Text,
}

/// The computed initializations of a file, evaluated as far as its counts need them.
pub(super) struct Counts<'e, 'f> {
    /// Position among the computed initializations, by name.
    positions: HashMap<String, usize>,
    evaluate: Option<Evaluate<'e>>,
    workers: Option<u32>,
    source: &'f str,
    dialect: Dialect,
    /// The values made so far, in file order.
    pub values: Vec<Vec<Value>>,
    /// The fields that took a value.
    pub shape: Vec<ShapeUse>,
}

impl<'e, 'f> Counts<'e, 'f> {
    pub(crate) fn new(evaluate: Option<Evaluate<'e>>, workers: Option<u32>, source: &'f str, dialect: Dialect) -> Self {
        Counts { positions: HashMap::new(), evaluate, workers, source, dialect, values: Vec::new(), shape: Vec::new() }
    }

    /// The computed initializations and the counts that took a value, once any did.
    pub(crate) fn evaluated(self) -> Option<Evaluated> {
        (!self.shape.is_empty()).then_some((self.values, self.shape))
    }

    /// Records that the next computed initialization is `name`.
    pub(crate) fn add(&mut self, name: &str) {
        let position = self.positions.len();
        self.positions.insert(name.to_owned(), position);
    }

    pub(crate) fn is_computed(&self, name: &str) -> bool {
        self.positions.contains_key(name)
    }

    /// An initialization's own `factor` naming an earlier computed one, replaced by its value;
    /// `inits` are the initializations translated so far (current format).
    pub(crate) fn init_factor(&mut self, init: &mut Map<String, Json>, at: &str, inits: &[Json]) -> Result<(), Issue> {
        let Some(Json::String(name)) = init.get("factor") else { return Ok(()) };
        let name = name.trim().to_owned();
        if !self.is_computed(&name) {
            return Ok(());
        }
        let value = self.value(&name, &format!("{at}: factor"), Want::Count, inits)?;
        let count = value.as_str().and_then(|text| text.parse::<u64>().ok()).map_or(value, Json::from);
        init.insert("factor".to_owned(), count);
        Ok(())
    }

    /// Every count of the nodes and `network_config` of `top` that names a computed
    /// initialization, replaced by its value (a copy of the file); none when no count names one.
    pub(crate) fn file(&mut self, top: &Map<String, Json>, inits: &[Json]) -> Result<Option<Map<String, Json>>, Issue> {
        if self.positions.is_empty() {
            return Ok(None);
        }
        let mut out = top.clone();
        let mut changed = false;
        for list in ["nodes", "post_nodes"] {
            let Some(Json::Array(nodes)) = out.get_mut(list) else { continue };
            for node in nodes {
                let Json::Object(node) = node else { continue };
                let at = format!("node {}", quote(node.get("name").and_then(Json::as_str).unwrap_or_default()));
                changed |= self.node(node, &at, inits)?;
            }
        }
        if let Some(Json::Object(network)) = out.get_mut("network_config") {
            for field in NETWORK_NUMBERS.iter().copied().chain(["address"]) {
                let want = if field == "address" { Want::Text } else { Want::Count };
                changed |= self.field(network, field, &format!("network_config {field}"), want, inits)?;
            }
        }
        Ok(changed.then_some(out))
    }

    fn node(&mut self, node: &mut Map<String, Json>, at: &str, inits: &[Json]) -> Result<bool, Issue> {
        let mut changed = false;
        for field in ["factor", "group_size"] {
            changed |= self.field(node, field, &format!("{at}: {field}"), Want::Count, inits)?;
        }
        if let Some(Json::Object(spec)) = node.get_mut("loop") {
            changed |= self.field(spec, "factor", &format!("{at}: loop.factor"), Want::Count, inits)?;
        }
        for list in ["args", "loop_args"] {
            let Some(Json::Array(args)) = node.get_mut(list) else { continue };
            for (k, arg) in args.iter_mut().enumerate() {
                let Some(Json::Object(pred)) = arg.get_mut("predecessor") else { continue };
                let place = format!("{at} {list}[{k}] predecessor");
                changed |= self.field(pred, "group_by", &format!("{place} group_by"), Want::Count, inits)?;
                let field = self.index_field();
                if let Some(Json::String(indexes)) = pred.get(field) {
                    let indexes = indexes.clone();
                    if let Some(written) =
                        self.indexes(&indexes, &format!("{place} {field} {}", quote(&indexes)), inits)?
                    {
                        pred.insert(field.to_owned(), Json::String(written));
                        changed = true;
                    }
                }
            }
        }
        Ok(changed)
    }

    /// The predecessor's field that holds its selection.
    fn index_field(&self) -> &'static str {
        match self.dialect {
            Dialect::Tomii12 => "indexes",
            Dialect::Tomii => "index",
        }
    }

    /// `"k"` or `"a-b"` with its computed names replaced by their values.
    fn indexes(&mut self, indexes: &str, at: &str, inits: &[Json]) -> Result<Option<String>, Issue> {
        let whole = indexes.trim();
        if self.is_computed(whole) {
            return Ok(Some(self.text(whole, at, Want::Count, inits)?));
        }
        let Some((start, end)) = whole.split_once('-') else { return Ok(None) };
        let (start, end) = (start.trim(), end.trim());
        if !self.is_computed(start) && !self.is_computed(end) {
            return Ok(None);
        }
        let start = if self.is_computed(start) { self.text(start, at, Want::Count, inits)? } else { start.to_owned() };
        let end = if self.is_computed(end) { self.text(end, at, Want::RangeEnd, inits)? } else { end.to_owned() };
        Ok(Some(format!("{start}-{end}")))
    }

    /// `object[field]`, when it names a computed initialization, replaced by its value.
    fn field(
        &mut self,
        object: &mut Map<String, Json>,
        field: &str,
        at: &str,
        want: Want,
        inits: &[Json],
    ) -> Result<bool, Issue> {
        let Some(Json::String(name)) = object.get(field) else { return Ok(false) };
        let name = name.trim().to_owned();
        if !self.is_computed(&name) {
            return Ok(false);
        }
        let value = self.value(&name, at, want, inits)?;
        object.insert(field.to_owned(), value);
        Ok(true)
    }

    fn text(&mut self, name: &str, at: &str, want: Want, inits: &[Json]) -> Result<String, Issue> {
        Ok(match self.value(name, at, want, inits)? {
            Json::String(text) => text,
            other => other.to_string(),
        })
    }

    /// Instance 0 of the computed initialization `name`, as the JSON written in its place;
    /// evaluates the initializations up to it first (`inits`: those translated so far).
    fn value(&mut self, name: &str, at: &str, want: Want, inits: &[Json]) -> Result<Json, Issue> {
        let position = self.positions[name];
        if self.evaluate.is_none() {
            return Err(Issue::Invalid(format!(
                "{at} names the computed initialization {}, whose instance 0 is known once its kernel has run: \
                 give the kernel libraries, so that it is computed before the graph compiles (tomii \
                 run/simulate/convert --dylib LIB, run_graph(dylibs=[...]), or Python kernels), or write its value \
                 there",
                quote(name)
            )));
        }
        if self.values.len() <= position {
            self.evaluate_upto(inits, at, name)?;
        }
        let Some(value) = self.values.get(position).and_then(|values| values.first()) else {
            return Err(Issue::Invalid(format!(
                "{at} names the computed initialization {}, which made no element; give it a factor of at least 1",
                quote(name)
            )));
        };
        let refused = |what: String, need: &str| {
            Issue::Invalid(format!(
                "{at} names the computed initialization {}, whose instance 0 is {what}; {need}: make its kernel return \
                 one, or write the value there",
                quote(name)
            ))
        };
        let (json, shape) = match want {
            Want::Text => match value.view() {
                tomii_types::kernel::ValueRef::Str(text) => {
                    (Json::String(text.to_owned()), ShapeValue::Text(text.to_owned()))
                }
                _ => return Err(refused(describe(value), "an address is a String")),
            },
            Want::Count | Want::RangeEnd => {
                let count = count_of(value).map_err(|what| {
                    refused(
                        what,
                        "a count is an unsigned integer or a non-negative signed one (not an isize or a float)",
                    )
                })?;
                if want == Want::RangeEnd && count == 0 {
                    return Err(refused("0".to_owned(), "the range it ends (exclusive) would be empty"));
                }
                let written = match (self.dialect, want) {
                    (Dialect::Tomii12, Want::RangeEnd) => Json::String((count - 1).to_string()),
                    (Dialect::Tomii12, _) => Json::String(count.to_string()),
                    (Dialect::Tomii, Want::RangeEnd) => Json::String(count.to_string()),
                    (Dialect::Tomii, _) => Json::from(count),
                };
                (written, ShapeValue::Count(count))
            }
        };
        self.shape.push(ShapeUse { init: position as u32, at: at.to_owned(), value: shape });
        Ok(json)
    }

    /// Evaluates the computed initializations of `inits` not evaluated yet (all of them up to the
    /// one `at` needs).
    fn evaluate_upto(&mut self, inits: &[Json], at: &str, name: &str) -> Result<(), Issue> {
        self.evaluate_all(inits).map_err(|message| {
            Issue::Invalid(format!(
                "{at} names the computed initialization {}, which could not be computed before the graph compiled: \
                 {message}",
                quote(name)
            ))
        })
    }

    /// Evaluates every computed initialization not evaluated yet, once some value was taken (the
    /// run is handed them all).
    pub(crate) fn finish(&mut self, inits: &[Json]) -> Result<(), Issue> {
        if self.shape.is_empty() || self.values.len() >= self.positions.len() {
            return Ok(());
        }
        self.evaluate_all(inits).map_err(|message| {
            Issue::Invalid(format!("{message} (while the initializations the graph's counts name were computed)"))
        })
    }

    /// Runs the evaluator over the computed initializations of `inits` (current format).
    fn evaluate_all(&mut self, inits: &[Json]) -> Result<(), String> {
        let specs = inits
            .iter()
            .enumerate()
            .map(|(k, json)| spec::read_init(json, k))
            .collect::<Result<Vec<_>, _>>()
            .map_err(Issue::into_message)?;
        let (computed, consts) = resolve::resolve_inits(&specs).map_err(Issue::into_message)?;
        let computed = compile::computed_inits(computed);
        compile::check_init_elements(&computed).map_err(Issue::into_message)?;
        if self.workers.is_none()
            && let Some(init) = computed.iter().find(|init| init.args.contains(&ArgSource::Workers))
        {
            return Err(format!(
                "initialization {} reads $workers, and no worker count is given here; give it (tomii convert \
                 --workers N)",
                quote(&init.name)
            ));
        }
        let workers = self.workers.unwrap_or(1);
        let pending = PendingInits { source: self.source, computed: &computed, consts: &consts, workers };
        let Some(evaluate) = self.evaluate.as_mut() else { return Err("no kernels to compute it".to_owned()) };
        evaluate(&pending, &mut self.values)
            .map_err(|failure| format!("initialization {} failed: {}", quote(&failure.init), failure.message))
    }
}
