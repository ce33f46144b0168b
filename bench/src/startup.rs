//! What the start-up benchmarks share (`benches/startup.rs`, `startup_probe`): the graph text they
//! parse, the ways of parsing it, and a 1-task run as the Python binding makes it.

use std::path::Path;

use tomii_core::engine::{self, RunConfig, RunOutcome};
use tomii_core::graph::{self, CompiledGraph, GraphError, ParsePath};
use tomii_core::plugin::{KernelSet, PluginError, SchedulerPlugin, scheduler_file_name};

use crate::plugins::synthetic_file;

/// `tomii.run_graph`'s defaults: 1 worker, 1 slot, 1 frame, task timing on, outputs collected.
pub fn run_graph_config() -> RunConfig {
    RunConfig { workers: 1, slots: 1, frames: 1, task_timing: true, collect_outputs: true, ..RunConfig::default() }
}

/// What `tomii.run_graph` asks of the runtime for a 1-task graph the first time (the binding's
/// `prepare_run` and `PreparedRun.run`): parse it, load the kernels and the scheduler from `dir`,
/// run it with [`run_graph_config`].
pub fn run_graph_1_task(dir: &Path) -> RunOutcome {
    run_1_task(dir, ParsePath::Auto, SchedulerPlugin::load)
}

/// [`run_graph_1_task`] as it was before plugins were checked once per process and graphs parsed
/// the typed way: the JSON-value path and every check of the scheduler on every run (the kernel
/// library's check, a tenth of the scheduler's, is still cached).
pub fn run_graph_1_task_as_before(dir: &Path) -> RunOutcome {
    run_1_task(dir, ParsePath::Value, SchedulerPlugin::load_and_check)
}

fn run_1_task(dir: &Path, parse: ParsePath, load: fn(&Path) -> Result<SchedulerPlugin, PluginError>) -> RunOutcome {
    let graph = graph::parse_str_via("one.json", &chain_json(1), parse).unwrap_or_else(|e| panic!("{e}"));
    let kernels = KernelSet::load(&[dir.join(synthetic_file())]).unwrap_or_else(|e| panic!("{e}"));
    let scheduler = load(&dir.join(scheduler_file_name("fifo"))).unwrap_or_else(|e| panic!("{e}"));
    engine::run(&graph, &kernels, &scheduler, &run_graph_config()).unwrap_or_else(|e| panic!("{e}"))
}

/// The text of `chain(n)` (`graphs::chain`): `n` nodes `n0 … n{n-1}` of factor 1, `noop`, each
/// but the first with a `$dep` on the one before, one node per line.
pub fn chain_json(n: u32) -> String {
    let mut text = format!("{{\"name\": \"chain_{n}\", \"nodes\": [\n");
    for i in 0..n {
        let args = if i == 0 {
            String::new()
        } else {
            format!("{{\"type\": \"$dep\", \"predecessor\": {{\"name\": \"n{}\"}}}}", i - 1)
        };
        let comma = if i + 1 < n { "," } else { "" };
        text.push_str(&format!(
            "  {{\"name\": \"n{i}\", \"function\": \"noop\", \"factor\": 1, \"args\": [{args}]}}{comma}\n"
        ));
    }
    text.push_str("]}\n");
    text
}

/// The text of a graph of `n` nodes that uses most of the format, one node per line: two
/// initializations, every node of factor `"width"` (4) with priority `"high"`, and each but the
/// first with 7 arguments: a plain and a typed literal, a `$ref`, `$index`, and three `$res` from
/// the node before (instance i, i − 1 around the ring, and the range i … i + 1 around it); every
/// fourth node also waits on all of it with a `$barrier`.
pub fn rich_json(n: u32) -> String {
    let mut text = format!(
        "{{\"name\": \"rich_{n}\", \"initializations\": [{{\"name\": \"width\", \"value\": 4}}, \
         {{\"name\": \"scale\", \"value\": {{\"type\": \"f64\", \"value\": 0.5}}}}],\n\"nodes\": [\n"
    );
    for i in 0..n {
        let mut args = String::from(
            "[7, {\"type\": \"u64\", \"value\": 5}, {\"type\": \"$ref\", \"name\": \"scale\"}, {\"type\": \"$index\"}",
        );
        if i > 0 {
            let p = i - 1;
            args.push_str(&format!(
                ", {{\"type\": \"$res\", \"predecessor\": {{\"name\": \"n{p}\"}}}}, \
                 {{\"type\": \"$res\", \"predecessor\": {{\"name\": \"n{p}\", \"index\": -1, \"wrap\": true}}}}, \
                 {{\"type\": \"$res\", \"predecessor\": {{\"name\": \"n{p}\", \"index\": \"0-2\", \"wrap\": true}}}}"
            ));
            if i % 4 == 0 {
                args.push_str(&format!(", {{\"type\": \"$barrier\", \"predecessor\": {{\"name\": \"n{p}\"}}}}"));
            }
        }
        args.push(']');
        let comma = if i + 1 < n { "," } else { "" };
        text.push_str(&format!(
            "  {{\"name\": \"n{i}\", \"function\": \"spin\", \"factor\": \"width\", \"priority\": \"high\", \"args\": {args}}}{comma}\n"
        ));
    }
    text.push_str("]}\n");
    text
}

/// How a benchmark parses a graph: as `graph::parse_str` does, or through one of its two paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartupParse {
    /// `graph::parse_str`: the typed path, and the JSON-value path if that fails.
    Auto,
    /// The typed path alone (serde derive into the graph's structs).
    Fast,
    /// The JSON-value path alone (dialect detection, the precise errors).
    Fallback,
}

impl StartupParse {
    pub const ALL: [StartupParse; 3] = [StartupParse::Auto, StartupParse::Fast, StartupParse::Fallback];

    pub fn name(self) -> &'static str {
        match self {
            StartupParse::Auto => "auto",
            StartupParse::Fast => "fast",
            StartupParse::Fallback => "fallback",
        }
    }

    pub fn from_name(name: &str) -> Option<StartupParse> {
        StartupParse::ALL.into_iter().find(|how| how.name() == name)
    }

    /// Parses and compiles `text`; a generated graph that fails is a bug here, so it panics.
    pub fn parse(self, source: &str, text: &str) -> CompiledGraph {
        let path = match self {
            StartupParse::Auto => ParsePath::Auto,
            StartupParse::Fast => ParsePath::Typed,
            StartupParse::Fallback => ParsePath::Value,
        };
        graph::parse_str_via(source, text, path)
            .unwrap_or_else(|e: GraphError| panic!("{source} through the {} path: {e}", self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::{StartupParse, chain_json, rich_json};

    #[test]
    fn the_start_up_graphs_compile_alike_every_way() {
        for (source, text) in [("chain.json", chain_json(50)), ("rich.json", rich_json(50))] {
            let graphs = StartupParse::ALL.map(|how| how.parse(source, &text));
            assert!(graphs.iter().all(|graph| *graph == graphs[0]), "{source}: the ways differ");
        }
        let rich = StartupParse::Fast.parse("rich.json", &rich_json(50));
        assert_eq!((rich.nodes.len(), rich.instance_count()), (50, 200));
    }
}
