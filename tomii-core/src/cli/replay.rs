//! `--record-decisions FILE` (of `tomii run` and `tomii simulate`) and `tomii replay FILE`: the
//! decisions file and its replay (`replay.rs`, where the protocol is written down).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;

use super::app::say;
use crate::graph::{self, CompiledGraph};
use crate::knobs::{Entry, Value};
use crate::launch::{self, GraphInput, Hooks, Launch, write_report};
use crate::plugin::SchedulerPlugin;
use crate::replay::{self, Recorded, SchedulerIdentity};
use crate::sim::{CostSpec, SimConfig};

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

/// `tomii replay FILE`.
pub fn replay(args: &ReplayArgs) -> Result<()> {
    let recorded = Recorded::read(&args.decisions).map_err(anyhow::Error::msg)?;
    if let Some(path) = &args.report {
        // Before the replay is spent, and never over the file it replays.
        crate::files::check_writable(path, "--report", Some(("the decisions file", &args.decisions)))
            .map_err(anyhow::Error::msg)?;
    }
    let header = &recorded.header;
    let graph = graph::parse_str(&header.graph_source, &header.graph.to_string())
        .with_context(|| format!("{}: the recorded graph", args.decisions.display()))?;
    let scheduler = SchedulerPlugin::replay()?;
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
    let dylibs = if args.dylibs.is_empty() { header.dylibs.clone() } else { args.dylibs.clone() };
    let launch = replay_launch(&recorded, graph, &args.decisions, simulated, dylibs)?;
    let result = if simulated {
        let cost = match &header.cost_model {
            Some(model) => serde_json::from_value::<CostSpec>(model.clone()).context("the recorded cost model")?,
            // A real run's tasks last as long as they did.
            None => recorded.durations(launch.graph()),
        };
        let sim = SimConfig {
            seed: header.seed,
            cost,
            arrival_interval_ns: header.arrival_interval_ns,
            ..SimConfig::default()
        };
        launch.simulate(&scheduler, &sim, Hooks::default())
    } else {
        launch.run(&launch.settings().kernels(None)?, &scheduler, Hooks::default())
    };
    let (outcome, failure) = match result {
        Ok(outcome) => (outcome, None),
        Err(failure) => match failure.partial {
            Some(partial) => (*partial, Some(failure.error)),
            None => return Err(failure.error.into()),
        },
    };
    if let Some(path) = &args.report {
        write_report(path, &outcome.report).map_err(anyhow::Error::msg)?;
    }
    let graph = launch.graph();
    let replayed = replay::decisions_of(&outcome.task_records());
    let mode = if simulated { "in simulation" } else { "on the engine" };
    if let Some(error) = failure {
        bail!("the replay {mode} stopped ({error}){}", waiting(graph, outcome.report.scheduler.stats.as_ref()));
    }
    if let Some(diverged) = replay::divergence(graph, &recorded.by_worker, &replayed) {
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

/// The recorded run made again: its graph and knobs, each worker given by the replay scheduler
/// (its `decisions` option, the file) the tasks it ran, in order; every push wakes every worker, one
/// task a pop, and the trace is kept to compare the orders.
fn replay_launch(
    recorded: &Recorded,
    graph: CompiledGraph,
    decisions: &std::path::Path,
    simulated: bool,
    dylibs: Vec<std::path::PathBuf>,
) -> Result<Launch> {
    let header = &recorded.header;
    let mut given = vec![
        ("workers", Value::Int(header.workers.into())),
        ("slots", Value::Int(header.slots.into())),
        ("frames", Value::Int(header.frames)),
        ("warmup_frames", Value::Int(header.warmup_frames)),
        ("pop_batch", Value::Int(1)),
        ("sched_opt", Value::Pairs(vec![("decisions".to_owned(), decisions.display().to_string())])),
    ];
    if !simulated {
        given.push(("dylib", Value::Paths(dylibs)));
    }
    let entry = if simulated { Entry::Simulate } else { Entry::Run };
    let mut settings = launch::settings(entry, given.into_iter().map(|(name, value)| (name.to_owned(), value)))
        .map_err(anyhow::Error::msg)?;
    settings.run.trace = true;
    settings.run.wake_all_on_push = true;
    let input = GraphInput {
        graph: std::sync::Arc::new(graph),
        source: header.graph_source.clone(),
        text: header.graph.to_string(),
        file: None,
    };
    Ok(Launch::new(input, settings)?)
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
