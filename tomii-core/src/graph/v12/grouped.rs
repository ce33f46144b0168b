//! Tomii 1.2's grouped edges: a predecessor with `indexes` and `group_by` together, and a `$res`
//! whose meaning a sibling's `group_by` changes, written as the current format's `group_by`
//! object (README.md, "Tomii 1.2 graph files", "Grouped edges").
//!
//! The range L selects predecessor instances min(L)..=max(L); they split into groups of G; B =
//! |L| / G groups; group g is read by successor instances [g·E, (g+1)·E) with E = F / B. Where 1.2
//! never released a successor instance (it hung), an error names the edge and what to write.
//! Works on the factors known when the file is read; nothing here panics.

use std::collections::HashMap;

use serde_json::{Map, Value as Json, json};

use super::indexes::{Indexes, Known, indexes};
use crate::graph::select::Selection;
use crate::graph::typed::show;

/// What a node's edges share: the groups of its grouped `$barrier`s and, per predecessor, the
/// `group_by` any of its arguments gives (1.2 kept one table per pair of nodes).
pub(crate) struct NodeGroups {
    /// The node's factor F, when known.
    factor: Option<u32>,
    /// The node's `group_size`, when it has one above 1.
    group_size: Option<u32>,
    /// B and E of the node's grouped `$barrier`s (all of them give the same B).
    barrier: Option<(u64, u32)>,
    /// Per predecessor: the `group_by` of the pair.
    pairs: HashMap<String, u32>,
}

/// A grouped edge's predecessor `{"name", "indexes", "group_by"}`, read.
struct Grouped<'j> {
    name: &'j str,
    indexes: Option<&'j Json>,
    /// L: its smallest and largest offset and how many it holds.
    min: u64,
    max: u64,
    count: u64,
    /// G.
    size: u32,
}

impl NodeGroups {
    /// The groups of a node of `factor` instances and `group_size` with the arguments `args`.
    pub(crate) fn of(
        args: Option<&Json>,
        factor: Option<u32>,
        group_size: Option<u32>,
        known: &Known<'_>,
    ) -> Result<NodeGroups, String> {
        let mut groups =
            NodeGroups { factor, group_size: group_size.filter(|&g| g > 1), barrier: None, pairs: HashMap::new() };
        let mut barrier_b: Option<(u64, String)> = None;
        for (k, arg) in args.and_then(Json::as_array).into_iter().flatten().enumerate() {
            let Some(Json::Object(pred)) = arg.get("predecessor") else { continue };
            if !is_grouped(pred) {
                continue;
            }
            let grouped = read(pred, known).map_err(|e| format!("args[{k}] predecessor: {e}"))?;
            groups.pairs.insert(grouped.name.to_owned(), grouped.size);
            if arg.get("type").and_then(Json::as_str) != Some("$barrier") {
                continue;
            }
            let b = grouped.count / u64::from(grouped.size);
            if b == 0 {
                return Err(format!(
                    "args[{k}] predecessor: indexes {} selects {} instance(s) of {:?}, fewer than one group of \
                     group_by {}, so Tomii 1.2 never released this node (the run hung); give indexes over whole \
                     groups, e.g. \"0-{}\", or leave group_by out to wait for the selected instances",
                    shown(grouped.indexes),
                    grouped.count,
                    grouped.name,
                    grouped.size,
                    grouped.size
                ));
            }
            match &barrier_b {
                Some((earlier, at)) if *earlier != b => {
                    return Err(format!(
                        "args[{k}] predecessor: its {b} group(s) differ from the {earlier} of {at}; Tomii 1.2 shared \
                         one count of groups among a node's grouped barriers; give them the same number of groups"
                    ));
                }
                _ => barrier_b = Some((b, format!("args[{k}]"))),
            }
        }
        if let Some((b, at)) = barrier_b {
            let f = factor
                .ok_or_else(|| format!("{at} predecessor: the node's factor must be known to split it into groups"))?;
            let e = u64::from(f) / b;
            if e == 0 || u64::from(f) % b != 0 {
                return Err(format!(
                    "{at} predecessor: its {b} group(s) do not share the node's {f} instance(s) evenly (Tomii 1.2 gave \
                     each group {e} and never released instance(s) {}..{f}, so the run hung); give the node a multiple \
                     of {b} instances",
                    e * b
                ));
            }
            groups.barrier = Some((b, e as u32));
        }
        Ok(groups)
    }

    /// The predecessor of an edge of `kind` in the current format when 1.2's groups decide what
    /// it selects: one with `group_by`, or a single-offset `$res` of a node with a group size
    /// whose pair has a `group_by` elsewhere. None: the edge is translated as any other.
    pub(crate) fn edge(
        &self,
        pred: &Map<String, Json>,
        kind: &str,
        pred_group_size: Option<u32>,
        known: &Known<'_>,
    ) -> Result<Option<Json>, String> {
        if pred.get("group_by").is_none_or(Json::is_null) {
            return self.sibling(pred, kind, pred_group_size, known);
        }
        if !is_grouped(pred) {
            return Ok(None);
        }
        let grouped = read(pred, known)?;
        let name = grouped.name;
        let size = grouped.size;
        let span = grouped.max - grouped.min + 1;
        if kind == "$res" {
            return self.grouped_res(&grouped, pred_group_size, known).map(Some);
        }
        let (shared, take) = match self.barrier {
            Some((b, e)) => {
                let highest = (span - 1) / u64::from(size);
                if kind != "$barrier" && highest >= b {
                    return Err(hung(&grouped, b));
                }
                (e, size)
            }
            // One group: every instance waits for all the selected ones.
            None if span <= u64::from(size) => (self.factor.unwrap_or(1).max(1), span as u32),
            None => return Err(hung(&grouped, 1)),
        };
        let take = take.min(size);
        let size = if self.barrier.is_some() { size } else { take };
        Ok(Some(json!({"name": name, "group_by": groups_json(size, grouped.min, shared, take)})))
    }

    /// A `$res` with `group_by` (§ "Data" of the fact sheet): a single offset l reads as without
    /// it, or, in a node with a group size, `pred[(i / gs)·E′ + l]`; several offsets (other than
    /// one per instance) give every instance all of them, rotated by its index.
    fn grouped_res(
        &self,
        grouped: &Grouped<'_>,
        pred_group_size: Option<u32>,
        known: &Known<'_>,
    ) -> Result<Json, String> {
        let name = grouped.name;
        if grouped.count == 1 {
            if let Some(gs) = self.group_size {
                let stride = pred_group_size.unwrap_or(grouped.size);
                return Ok(json!({"name": name, "group_by": groups_json(stride, grouped.min, gs, 1)}));
            }
            return Ok(offsets(name, Selection::offset(grouped.min as i64), json!(grouped.min), self.factor, known));
        }
        if self.barrier.is_none() && grouped.max - grouped.min >= u64::from(grouped.size) {
            return Err(hung(grouped, 1));
        }
        if Some(grouped.count) == self.factor.map(u64::from) {
            return Err(format!(
                "a \"$res\" from {name:?} with indexes {} and group_by selects one instance per instance of the node: \
                 Tomii 1.2 gave each the result of whichever instance completed next, which has no fixed meaning; \
                 read one offset (\"indexes\": \"0\") or a \"$barrier\" with group_by and a \"$res\" of the instance \
                 wanted",
                shown(grouped.indexes)
            ));
        }
        match indexes(grouped.indexes, known)? {
            Indexes::Offsets(list, written) => Ok(offsets(name, Selection::Offsets(list), written, self.factor, known)),
            Indexes::Range { lo, hi, text, .. } => {
                Ok(offsets(name, Selection::Range(lo, hi), Json::String(text), self.factor, known))
            }
            Indexes::Default | Indexes::All => Ok(json!({"name": name, "index": "all"})),
        }
    }

    /// A single-offset `$res` without `group_by` in a node with a group size, whose pair has a
    /// `group_by` from another argument: 1.2 read `pred[(i / gs)·E′ + l]`, E′ the predecessor's
    /// group size, else the pair's `group_by`.
    fn sibling(
        &self,
        pred: &Map<String, Json>,
        kind: &str,
        pred_group_size: Option<u32>,
        known: &Known<'_>,
    ) -> Result<Option<Json>, String> {
        let (Some(gs), "$res", Some(name)) = (self.group_size, kind, pred.get("name").and_then(Json::as_str)) else {
            return Ok(None);
        };
        let Some(&pair) = self.pairs.get(name) else { return Ok(None) };
        let Indexes::Offsets(list, _) = indexes(pred.get("indexes"), known)? else { return Ok(None) };
        let [l] = list[..] else { return Ok(None) };
        let Ok(l) = u32::try_from(l) else { return Ok(None) };
        let stride = pred_group_size.unwrap_or(pair);
        Ok(Some(json!({"name": name, "group_by": groups_json(stride, u64::from(l), gs, 1)})))
    }
}

/// Whether the predecessor gives `indexes` and `group_by` together, 1.2's grouped form (1.2
/// required `indexes`; `group_by` alone is read as the current format's groups).
fn is_grouped(pred: &Map<String, Json>) -> bool {
    let given = |field: &str| pred.get(field).is_some_and(|v| !v.is_null() && v.as_str() != Some(""));
    given("indexes") && given("group_by")
}

/// A predecessor with `group_by`: its name, L and G.
fn read<'j>(pred: &'j Map<String, Json>, known: &Known<'_>) -> Result<Grouped<'j>, String> {
    let name = pred.get("name").and_then(Json::as_str).filter(|n| !n.is_empty());
    let name = name.ok_or_else(|| r#""predecessor" needs "name": the node to read from"#.to_owned())?;
    let indexes_json = pred.get("indexes").filter(|i| !i.is_null());
    let (min, max, count) = match indexes(indexes_json, known)? {
        Indexes::Default => (0, 0, 1),
        Indexes::All => {
            let p = known.factors.get(name).copied().ok_or_else(|| format!("the factor of {name:?} must be known"))?;
            (0, u64::from(p.max(1)) - 1, u64::from(p))
        }
        Indexes::Offsets(list, _) => {
            let negative = || format!("indexes {} holds a negative offset; Tomii 1.2 had none", shown(indexes_json));
            let min = list.iter().copied().min().unwrap_or(0);
            let max = list.iter().copied().max().unwrap_or(0);
            (u64::try_from(min).map_err(|_| negative())?, max as u64, list.len() as u64)
        }
        Indexes::Range { lo, hi, .. } => (lo as u64, hi as u64 - 1, (hi - lo) as u64),
    };
    let size = super::indexes::group_by_value(pred.get("group_by").unwrap_or(&Json::Null), known)? as u32;
    Ok(Grouped { name, indexes: indexes_json, min, max, count, size })
}

/// The current format's `group_by` object, the integer form when it is one.
fn groups_json(size: u32, from: u64, shared: u32, take: u32) -> Json {
    if from == 0 && shared == 1 && take == size {
        return json!(size);
    }
    let mut object = Map::new();
    object.insert("size".to_owned(), json!(size));
    if from != 0 {
        object.insert("from".to_owned(), json!(from));
    }
    if shared != 1 {
        object.insert("shared".to_owned(), json!(shared));
    }
    if take != size {
        object.insert("take".to_owned(), json!(take));
    }
    Json::Object(object)
}

/// Offsets read relative to the instance, modulo the predecessor's factor where needed.
fn offsets(name: &str, selection: Selection, index: Json, factor: Option<u32>, known: &Known<'_>) -> Json {
    let mut out = Map::new();
    out.insert("name".to_owned(), json!(name));
    out.insert("index".to_owned(), index);
    let wraps = match (factor, known.factors.get(name)) {
        (Some(f), Some(&p)) => selection.first_out_of_range(f, p).is_some(),
        _ => true,
    };
    if wraps {
        out.insert("wrap".to_owned(), Json::Bool(true));
    }
    Json::Object(out)
}

/// The error for a grouped `$res`/`$dep` whose groups beyond the node's `groups` 1.2 dropped.
fn hung(grouped: &Grouped<'_>, groups: u64) -> String {
    format!(
        "indexes {} with group_by {} from {:?} makes more groups than the node's {groups}: Tomii 1.2 dropped the \
         completions of the others, released some instances and then hung; give the node a \"$barrier\" with the \
         same indexes and group_by (it then waits group by group), or leave group_by out to wait for every selected \
         instance",
        shown(grouped.indexes),
        grouped.size,
        grouped.name
    )
}

fn shown(indexes: Option<&Json>) -> String {
    indexes.map_or_else(|| "(none)".to_owned(), show)
}
