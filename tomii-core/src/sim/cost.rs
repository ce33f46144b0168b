//! What a simulated task lasts: a distribution per node (README.md, "Cost models"), given as JSON
//! (`--cost-model FILE.json`), read from a real run's trace CSV (`--cost-model trace.csv`), or, for
//! a node the model does not name, read from the graph (`spin` nodes their µs argument).

use std::collections::BTreeMap;
use std::path::Path;

use rand::Rng;
use rand_distr::{Distribution, LogNormal};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

use crate::engine::CSV_COLUMNS;
use crate::graph::{ArgSource, CompiledGraph, quote_name};

/// One node's durations, in nanoseconds.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Dist {
    /// Always `ns`.
    Fixed { ns: u64 },
    /// Uniform in `lo_ns..=hi_ns`.
    Uniform { lo_ns: u64, hi_ns: u64 },
    /// exp(N(ln median_ns, sigma²)): median `median_ns`, heavy-tailed as `sigma` grows.
    Lognormal { median_ns: f64, sigma: f64 },
    /// One of `ns`, uniformly (the durations a real run recorded).
    Samples { ns: Vec<u64> },
}

/// A node's distribution, ready to draw from.
#[derive(Clone, Debug)]
enum Drawn {
    Fixed(u64),
    Uniform(u64, u64),
    LogNormal(LogNormal<f64>),
    Samples(Vec<u64>),
}

impl Drawn {
    fn draw(&self, rng: &mut Pcg64Mcg) -> u64 {
        match self {
            Drawn::Fixed(ns) => *ns,
            Drawn::Uniform(lo, hi) => rng.random_range(*lo..=*hi),
            // Durations beyond u64 nanoseconds (585 years) saturate.
            Drawn::LogNormal(dist) => dist.sample(rng).round() as u64,
            Drawn::Samples(ns) => ns[rng.random_range(0..ns.len())],
        }
    }
}

/// The largest cost model file read (a JSON model or a trace CSV, 1 GiB): a bigger one is refused
/// before it is read.
pub const MAX_COST_MODEL_BYTES: u64 = 1 << 30;

/// The cost model as a file gives it: a distribution per node name, and one for the others.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CostSpec {
    /// For nodes `nodes` does not name; without it they are read from the graph.
    #[serde(default)]
    pub default: Option<Dist>,
    #[serde(default)]
    pub nodes: BTreeMap<String, Dist>,
}

impl CostSpec {
    /// A cost model file: JSON (`{"default": D, "nodes": {NAME: D}}`, D one of `{"fixed": {"ns":
    /// N}}`, `{"uniform": {"lo_ns", "hi_ns"}}`, `{"lognormal": {"median_ns", "sigma"}}`,
    /// `{"samples": {"ns": [...]}}`), or a trace CSV of a real run (`tomii run --trace`, the
    /// header `node,instance,frame,...`): every node's recorded durations as samples. Only a
    /// regular file of at most [`MAX_COST_MODEL_BYTES`] is read (`files::read_input`); every
    /// distribution is checked, an error naming it (`default`, or `nodes."a"`) and its field.
    pub fn read(path: &Path) -> Result<CostSpec, String> {
        let at = |error: String| format!("{}: {error}", path.display());
        let bytes = crate::files::read_input(path, MAX_COST_MODEL_BYTES).map_err(|error| at(error.to_string()))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| at("is not UTF-8 text; give a JSON cost model or a trace CSV".into()))?;
        if text.starts_with(&CSV_COLUMNS.join(",")) {
            return CostSpec::from_trace(&text).map_err(at);
        }
        let spec: CostSpec = serde_json::from_str(&text).map_err(|error| {
            at(format!(
                "not a cost model ({error}); write {{\"default\": {{\"fixed\": {{\"ns\": 1000}}}}, \"nodes\": {{...}}}} \
                 or give a trace CSV"
            ))
        })?;
        spec.check_distributions().map_err(at)?;
        Ok(spec)
    }

    /// Refuses a distribution that cannot be drawn from, naming it (`default`, or `nodes."a"`) and
    /// its field; [`CostModel::new`] refuses the same, naming the graph's node instead.
    fn check_distributions(&self) -> Result<(), String> {
        let named = self.nodes.iter().map(|(name, dist)| (format!("nodes.{}", quote_name(name)), dist));
        for (at, dist) in self.default.iter().map(|dist| ("default".to_owned(), dist)).chain(named) {
            check(dist).map_err(|error| format!("{at}: {error}"))?;
        }
        Ok(())
    }

    /// Every node's durations recorded in a trace CSV (`node,instance,frame,slot,worker,ready_ns,
    /// start_ns,end_ns`), as samples.
    pub fn from_trace(text: &str) -> Result<CostSpec, String> {
        let mut nodes: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for (number, line) in text.lines().enumerate().skip(1).filter(|(_, line)| !line.is_empty()) {
            let bad = || format!("line {}: not a trace row ({})", number + 1, CSV_COLUMNS.join(","));
            // The node name may be quoted (and hold commas): the numbers are the last 7 fields.
            let fields: Vec<&str> = line.rsplitn(8, ',').collect();
            let [end, start, ..] = fields[..] else { return Err(bad()) };
            let name = fields.last().ok_or_else(bad)?;
            let name = name
                .strip_prefix('"')
                .and_then(|n| n.strip_suffix('"'))
                .map_or(name.to_string(), |n| n.replace("\"\"", "\""));
            let (start, end): (u64, u64) = (start.parse().map_err(|_| bad())?, end.parse().map_err(|_| bad())?);
            nodes.entry(name).or_default().push(end.saturating_sub(start));
        }
        if nodes.is_empty() {
            return Err("the trace has no rows to take durations from".to_owned());
        }
        Ok(CostSpec {
            default: None,
            nodes: nodes.into_iter().map(|(name, ns)| (name, Dist::Samples { ns })).collect(),
        })
    }
}

/// The cost model of one graph: a distribution per node.
#[derive(Clone, Debug)]
pub struct CostModel {
    nodes: Vec<Drawn>,
    /// Per node, how its cost was chosen (the report's `simulation.cost_model`).
    pub described: BTreeMap<String, String>,
}

impl CostModel {
    /// `spec` applied to `graph`: an error names a node the spec names but the graph lacks, a
    /// distribution that cannot be drawn from, or a node neither the spec nor the graph costs.
    pub fn new(graph: &CompiledGraph, spec: &CostSpec) -> Result<CostModel, String> {
        if let Some(unknown) = spec.nodes.keys().find(|name| graph.node_id(name).is_none()) {
            return Err(format!("the cost model names node {}, which the graph does not have", quote_name(unknown)));
        }
        let mut nodes = Vec::with_capacity(graph.nodes.len());
        let mut described = BTreeMap::new();
        for node in &graph.nodes {
            let at = || format!("node {}", quote_name(&node.name));
            let (dist, how) = match spec.nodes.get(&node.name).or(spec.default.as_ref()) {
                Some(dist) => (ready(dist).map_err(|e| format!("{}: {e}", at()))?, describe(dist)),
                None if node.input => (Drawn::Fixed(0), "an input: 0".to_owned()),
                None => from_graph(graph, node.first).ok_or_else(|| {
                    format!(
                        "{}: its kernel {} has no cost the graph tells; give the node (or a default) a distribution in \
                         the cost model",
                        at(),
                        quote_name(&node.function)
                    )
                })?,
            };
            described.insert(node.name.clone(), how);
            nodes.push(dist);
        }
        Ok(CostModel { nodes, described })
    }

    /// One draw of `node`'s duration.
    #[inline]
    pub fn draw(&self, node: u32, rng: &mut Pcg64Mcg) -> u64 {
        self.nodes[node as usize].draw(rng)
    }
}

/// Refuses a distribution that cannot be drawn from, naming it and its field.
fn check(dist: &Dist) -> Result<(), String> {
    match dist {
        Dist::Uniform { lo_ns, hi_ns } if lo_ns > hi_ns => {
            Err(format!("uniform: hi_ns {hi_ns} is below lo_ns {lo_ns}"))
        }
        Dist::Lognormal { median_ns, .. } if !(median_ns.is_finite() && *median_ns > 0.0) => {
            Err(format!("lognormal: median_ns must be positive, got {median_ns}"))
        }
        Dist::Lognormal { sigma, .. } if !(sigma.is_finite() && *sigma >= 0.0) => {
            Err(format!("lognormal: sigma must be 0 or more (0: every draw is the median), got {sigma}"))
        }
        Dist::Samples { ns } if ns.is_empty() => Err("samples: give at least one duration".to_owned()),
        _ => Ok(()),
    }
}

/// `dist`, checked, ready to draw from.
fn ready(dist: &Dist) -> Result<Drawn, String> {
    check(dist)?;
    Ok(match dist {
        Dist::Fixed { ns } => Drawn::Fixed(*ns),
        Dist::Uniform { lo_ns, hi_ns } => Drawn::Uniform(*lo_ns, *hi_ns),
        Dist::Lognormal { median_ns, sigma } => Drawn::LogNormal(
            LogNormal::new(median_ns.ln(), *sigma).map_err(|e| format!("lognormal: sigma {sigma}: {e}"))?,
        ),
        Dist::Samples { ns } => Drawn::Samples(ns.clone()),
    })
}

fn describe(dist: &Dist) -> String {
    match dist {
        Dist::Fixed { ns } => format!("fixed {ns} ns"),
        Dist::Uniform { lo_ns, hi_ns } => format!("uniform {lo_ns}..={hi_ns} ns"),
        Dist::Lognormal { median_ns, sigma } => format!("lognormal median {median_ns} ns, sigma {sigma}"),
        Dist::Samples { ns } => {
            format!("{} samples, mean {} ns", ns.len(), ns.iter().sum::<u64>() / ns.len().max(1) as u64)
        }
    }
}

/// What the graph says a node costs: `spin` its first argument in µs, `noop` nothing.
fn from_graph(graph: &CompiledGraph, first: u32) -> Option<(Drawn, String)> {
    match graph.node_of(first).function.as_str() {
        "noop" => Some((Drawn::Fixed(0), "noop: 0".to_owned())),
        "spin" => {
            let us = match graph.args_of(first).first()? {
                ArgSource::Const(index) => graph.consts.get(*index as usize)?.as_u64()?,
                _ => return None,
            };
            Some((Drawn::Fixed(us.saturating_mul(1000)), format!("spin {us} µs (the graph's argument)")))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn files_and_traces_read_into_specs() {
        let spec: CostSpec = serde_json::from_str(
            r#"{"default": {"fixed": {"ns": 5}}, "nodes": {"a": {"lognormal": {"median_ns": 1000, "sigma": 0.5}},
                 "b": {"uniform": {"lo_ns": 1, "hi_ns": 3}}, "c": {"samples": {"ns": [7, 9]}}}}"#,
        )
        .expect("a spec");
        assert_eq!(spec.default, Some(Dist::Fixed { ns: 5 }));
        assert_eq!(spec.nodes["c"], Dist::Samples { ns: vec![7, 9] });
        let trace =
            "node,instance,frame,slot,worker,ready_ns,start_ns,end_ns\n\"x,y\",0,0,0,0,1,10,25\nz,1,0,0,0,0,5,6\n";
        let from = CostSpec::from_trace(trace).expect("a trace");
        assert_eq!(from.nodes["x,y"], Dist::Samples { ns: vec![15] });
        assert_eq!(from.nodes["z"], Dist::Samples { ns: vec![1] });
        assert!(CostSpec::from_trace("node,instance,frame\nbad").is_err());
    }

    #[test]
    fn draws_follow_their_distribution_and_seed() {
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let lognormal = ready(&Dist::Lognormal { median_ns: 1000.0, sigma: 0.5 }).expect("drawable");
        let mut draws: Vec<u64> = (0..10_001).map(|_| lognormal.draw(&mut rng)).collect();
        draws.sort_unstable();
        let median = draws[5_000] as f64;
        assert!((median - 1000.0).abs() < 50.0, "median {median}");
        let uniform = ready(&Dist::Uniform { lo_ns: 10, hi_ns: 12 }).expect("drawable");
        assert!((0..100).all(|_| (10..=12).contains(&uniform.draw(&mut rng))));
        let again: Vec<u64> = {
            let mut rng = Pcg64Mcg::seed_from_u64(7);
            (0..5).map(|_| lognormal.draw(&mut rng)).collect()
        };
        let first: Vec<u64> = {
            let mut rng = Pcg64Mcg::seed_from_u64(7);
            (0..5).map(|_| lognormal.draw(&mut rng)).collect()
        };
        assert_eq!(again, first);
        assert!(ready(&Dist::Uniform { lo_ns: 3, hi_ns: 1 }).is_err());
        assert!(ready(&Dist::Samples { ns: vec![] }).is_err());
        let negative = ready(&Dist::Lognormal { median_ns: 1000.0, sigma: -0.5 }).expect_err("a negative sigma");
        assert!(negative.contains("sigma must be 0 or more") && negative.contains("-0.5"), "{negative}");
    }
}
