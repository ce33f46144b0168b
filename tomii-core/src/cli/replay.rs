//! `--record-decisions FILE` (of `tomii run` and `tomii simulate`) and `tomii replay FILE`: the
//! decisions file and its replay (`replay.rs`, where the protocol is written down).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;

use super::app::{say, write_report};
use crate::engine::{self, RunConfig};
use crate::graph::{self, CompiledGraph};
use crate::plugin::{KernelSet, SchedulerPlugin};
use crate::replay::{self, DecisionsFile, FORMAT, Header, Recorded, SchedulerIdentity, VERSION};
use crate::sim::{self, CostSpec, SimConfig};

#[derive(Args)]
pub struct ReplayArgs {
    /// The decisions file (`--record-decisions`).
    #[arg(value_name = "FILE")]
    pub decisions: PathBuf,
    /// Replay in simulation, whatever the file recorded (a real run's file then replays its
    /// order on virtual workers, each task drawn from the durations recorded for its node).
    #[arg(long)]
    pub simulate: bool,
    /// Kernel libraries for a real replay, instead of those the file names.
    #[arg(long = "dylib", value_name = "PATH")]
    pub dylibs: Vec<PathBuf>,
    /// Write the replay's report as JSON.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The knobs of a recorded run, as the header keeps them.
pub struct Knobs<'a> {
    pub workers: u32,
    pub slots: u32,
    pub frames: u64,
    pub warmup_frames: u64,
    pub pop_batch: u32,
    pub scheduler_options: &'a [(String, String)],
}

/// The graph a decisions file records: its source name and JSON text.
pub struct Recording<'a> {
    pub source: &'a str,
    pub text: &'a str,
}

/// Starts the decisions file of a run of `graph` (`mode` "run" or "simulate") with `scheduler`
/// and `knobs`; a simulation also gives its seed, cost model and arrivals. The graph goes into
/// the file in the current format.
pub fn start(
    path: &Path,
    mode: &str,
    graph: Recording<'_>,
    scheduler: &SchedulerPlugin,
    knobs: &Knobs<'_>,
    dylibs: &[PathBuf],
    simulation: Option<&SimConfig>,
) -> Result<DecisionsFile> {
    let source = graph.source.to_owned();
    let converted = graph::convert_str(&source, graph.text, Some(knobs.workers))?;
    let header = Header {
        format: FORMAT.to_owned(),
        version: VERSION,
        mode: mode.to_owned(),
        graph_source: source,
        graph: serde_json::from_str(&converted.text).context("the graph in the current format")?,
        workers: knobs.workers,
        slots: knobs.slots,
        frames: knobs.frames,
        warmup_frames: knobs.warmup_frames,
        pop_batch: knobs.pop_batch,
        scheduler: SchedulerIdentity::of(scheduler.name, &scheduler.path),
        scheduler_options: knobs.scheduler_options.to_vec(),
        dylibs: dylibs.iter().map(|d| d.canonicalize().unwrap_or_else(|_| d.clone())).collect(),
        seed: simulation.map_or(0, |s| s.seed),
        cost_model: simulation.map(|s| serde_json::to_value(&s.cost)).transpose()?,
        arrival_interval_ns: simulation.and_then(|s| s.arrival_interval_ns),
    };
    DecisionsFile::create(path, &header).map_err(anyhow::Error::msg)
}

/// `tomii replay FILE`.
pub fn replay(args: &ReplayArgs) -> Result<()> {
    let recorded = Recorded::read(&args.decisions).map_err(anyhow::Error::msg)?;
    let header = &recorded.header;
    let graph = graph::parse_str(&header.graph_source, &header.graph.to_string())
        .with_context(|| format!("{}: the recorded graph", args.decisions.display()))?;
    let scheduler = SchedulerPlugin::replay()?;
    let options = vec![("decisions".to_owned(), args.decisions.display().to_string())];
    if !args.quiet {
        let now = SchedulerIdentity::of(&header.scheduler.name, &header.scheduler.path);
        if now.size != header.scheduler.size {
            eprintln!(
                "note: {} has changed since it was recorded ({} bytes then, {} now); the replay gives the recorded \
                 order all the same",
                header.scheduler.path.display(),
                header.scheduler.size,
                now.size
            );
        }
    }
    let simulated = args.simulate || header.mode == "simulate";
    let result = if simulated {
        let cost = match &header.cost_model {
            Some(model) => serde_json::from_value::<CostSpec>(model.clone()).context("the recorded cost model")?,
            // A real run's tasks last as long as they did.
            None => recorded.durations(&graph),
        };
        let config = SimConfig {
            workers: header.workers,
            slots: header.slots,
            frames: header.frames,
            warmup_frames: header.warmup_frames,
            pop_batch: 1,
            seed: header.seed,
            cost,
            arrival_interval_ns: header.arrival_interval_ns,
            scheduler_options: options,
            trace: true,
            wake_all_on_push: true,
            ..SimConfig::default()
        };
        sim::simulate(&graph, &scheduler, &config)
    } else {
        let dylibs = if args.dylibs.is_empty() { header.dylibs.clone() } else { args.dylibs.clone() };
        let kernels = KernelSet::load(&dylibs)?;
        let config = RunConfig {
            workers: header.workers,
            slots: header.slots,
            frames: header.frames,
            warmup_frames: header.warmup_frames,
            pop_batch: 1,
            trace: true,
            scheduler_options: options,
            stall_timeout: Duration::from_secs(2),
            wake_all_on_push: true,
            ..RunConfig::default()
        };
        engine::run_keeping_partial(&graph, &kernels, &scheduler, &config)
    };
    let (outcome, failure) = match result {
        Ok(outcome) => (outcome, None),
        Err(failure) => match failure.partial {
            Some(partial) => (*partial, Some(failure.error)),
            None => return Err(failure.error.into()),
        },
    };
    if let Some(path) = &args.report {
        write_report(path, &outcome.report)?;
    }
    let replayed = replay::decisions_of(&outcome.trace, |ticks| outcome.ns(ticks));
    let mode = if simulated { "in simulation" } else { "on the engine" };
    if let Some(error) = failure {
        bail!("the replay {mode} stopped ({error}){}", waiting(&graph, outcome.report.scheduler.stats.as_ref()));
    }
    if let Some(diverged) = replay::divergence(&graph, &recorded.by_worker, &replayed) {
        bail!("the replay {mode} diverged: {diverged}");
    }
    if !args.quiet {
        let tasks: usize = replayed.values().map(Vec::len).sum();
        say(format!(
            "replayed {tasks} task(s) of {} frame(s) {mode} on {} worker(s): every worker ran the recorded tasks in \
             the recorded order",
            outcome.report.frames + outcome.report.frames_excluded,
            header.workers
        ))?;
    }
    Ok(())
}

/// What the replay scheduler's stats say each worker waited for when the replay stopped.
fn waiting(graph: &CompiledGraph, stats: Option<&serde_json::Value>) -> String {
    let Some(stats) = stats else { return String::new() };
    let task = |t: &serde_json::Value| {
        let node = t["node"].as_u64().and_then(|n| graph.nodes.get(n as usize)).map_or("?", |n| n.name.as_str());
        format!("{node}[{}] of frame {}", t["instance"], t["frame"])
    };
    let list = |key: &str| stats[key].as_array().cloned().unwrap_or_default();
    let mut named: Vec<String> = list("waiting")
        .iter()
        .map(|w| {
            let held = if w["held"].as_bool() == Some(true) { "ready" } else { "never made ready" };
            format!("worker {} waits for {} ({held})", w["worker"], task(w))
        })
        .collect();
    let unasked: Vec<String> = list("unasked").iter().map(task).collect();
    if !unasked.is_empty() {
        named.push(format!("ready, but no worker's recording runs it next: {}", unasked.join(", ")));
    }
    if named.is_empty() { String::new() } else { format!(": {}", named.join("; ")) }
}
