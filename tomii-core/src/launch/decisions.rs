//! The decisions file's header (`replay.rs` is its protocol): what a run of a graph with its
//! settings, scheduler and, for a simulation, its seed, cost model and arrivals records before
//! its first decision.

use std::path::Path;

use crate::engine::RunError;
use crate::graph;
use crate::plugin::SchedulerPlugin;
use crate::replay::{DecisionsFile, FORMAT, Header, SchedulerIdentity, VERSION};
use crate::sim::SimConfig;

use super::{GraphInput, Settings};

/// Starts the decisions file at `path` of a run (`mode` "run" or "simulate") of `input` with
/// `scheduler` and `settings`; the graph goes into the file in the current format.
pub(super) fn start(
    path: &Path,
    mode: &str,
    input: &GraphInput,
    scheduler: &SchedulerPlugin,
    settings: &Settings,
    simulation: Option<&SimConfig>,
) -> Result<DecisionsFile, RunError> {
    let failed = |reason: String| RunError::Io { path: path.to_owned(), reason };
    let run = &settings.run;
    let converted = graph::convert_str(&input.source, &input.text, Some(run.workers))
        .map_err(|error| RunError::Config(error.to_string()))?;
    let header = Header {
        format: FORMAT.to_owned(),
        version: VERSION,
        mode: mode.to_owned(),
        graph_source: input.source.clone(),
        graph: serde_json::from_str(&converted.text)
            .map_err(|e| failed(format!("the graph in the current format: {e}")))?,
        workers: run.workers,
        slots: run.slots,
        frames: run.frames,
        warmup_frames: run.warmup_frames,
        pop_batch: run.pop_room(scheduler),
        scheduler: SchedulerIdentity::of(scheduler.name, &scheduler.path),
        scheduler_options: run.scheduler_options.clone(),
        dylibs: settings.dylibs.iter().map(|d| d.canonicalize().unwrap_or_else(|_| d.clone())).collect(),
        seed: simulation.map_or(0, |s| s.seed),
        cost_model: simulation.map(|s| serde_json::to_value(&s.cost)).transpose().map_err(|e| failed(e.to_string()))?,
        arrival_interval_ns: simulation.and_then(|s| s.arrival_interval_ns),
    };
    DecisionsFile::create(path, &header).map_err(|message| {
        let prefix = format!("{}: ", path.display());
        failed(message.strip_prefix(&prefix).map(str::to_owned).unwrap_or(message))
    })
}
