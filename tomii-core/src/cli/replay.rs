//! `--record-decisions FILE` (of `tomii run` and `tomii simulate`) and `tomii replay FILE`: the
//! decisions file and its replay (`replay.rs`, where the protocol is written down).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;

use super::app::say;
use crate::engine::RunError;
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

/// How long every worker of a replay on the engine may be idle, with nothing handed out, before
/// it stops.
const REPLAY_STALL_MS: u64 = 500;

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
    if !args.quiet
        && let Some(note) = scheduler_note(&header.scheduler)
    {
        eprintln!("note: {note}");
    }
    let simulated = args.simulate || header.mode == "simulate";
    let dylibs = if args.dylibs.is_empty() { header.dylibs.clone() } else { args.dylibs.clone() };
    if !simulated && args.dylibs.is_empty() {
        missing_kernels(&args.decisions, &dylibs)?;
    }
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
    let tasks: usize = replayed.values().map(Vec::len).sum();
    let stats = outcome.report.scheduler.stats.as_ref();
    let replay = Replayed {
        mode: if simulated { "in simulation" } else { "on the engine" },
        diverged: replay::divergence(graph, &recorded.by_worker, &replayed),
        stopped: failure,
        tasks,
        waiting: waiting(graph, stats),
        left: left_ready(graph, stats),
    };
    let verdict = compare(&recorded, &replay)?;
    if !args.quiet {
        let verdict = verdict.unwrap_or_else(|| {
            format!(
                "replayed {tasks} task(s) of {} frame(s) {} on {} worker(s): every worker ran the recorded tasks in \
                 the recorded order",
                outcome.report.frames + outcome.report.frames_excluded,
                replay.mode,
                header.workers
            )
        });
        say(verdict)?;
    }
    Ok(())
}

/// What a replay did, to compare with how the recording ended.
struct Replayed {
    /// "on the engine" or "in simulation".
    mode: &'static str,
    /// Where its order first differs from the recording's.
    diverged: Option<String>,
    /// Why it stopped before its last frame (the replay scheduler had nothing more to hand out,
    /// or the run failed).
    stopped: Option<RunError>,
    /// Tasks it ran.
    tasks: usize,
    /// What each worker waited for when it stopped (`: worker 0 waits for ...`, or empty).
    waiting: String,
    /// Tasks ready when it stopped that no worker's recording runs next.
    left: Vec<String>,
}

/// Compares the replay with how the recording ended: `Ok(Some(text))` when the recording ends
/// with a failure or a checker's finding and the replay reproduced it (the text names both),
/// `Ok(None)` when the recording and the replay both ran every frame in the same order, an error
/// naming both when the replay did not reproduce the recording.
fn compare(recorded: &Recorded, replay: &Replayed) -> Result<Option<String>> {
    let mode = replay.mode;
    let ending = recorded.ending.as_ref().filter(|ending| ending.status != "completed");
    let mut ends = Vec::new();
    if let Some(ending) = ending {
        ends.push(match (ending.status.as_str(), &ending.error) {
            ("failed", Some(error)) => format!("the recording ends with its run failing: {error}"),
            ("interrupted", _) => {
                format!("the recording ends with its run interrupted after {} frame(s)", ending.frames)
            }
            (status, _) => format!("the recording ends with its run {status}"),
        });
    }
    if let Some(found) = &recorded.found {
        let problems: Vec<&str> = found.problems.iter().take(5).map(String::as_str).collect();
        ends.push(format!("the recording ends with what {} found in its run: {}", found.by, problems.join("; ")));
    }
    let ends = ends.join("\n");
    let differs = |what: String| {
        if ends.is_empty() {
            anyhow::anyhow!("{what}")
        } else {
            anyhow::anyhow!("{}; the replay {mode} did not reproduce it: {what}", ends.replace('\n', "; "))
        }
    };
    let diverged = replay.diverged.as_ref().map(|diverged| format!("the replay {mode} diverged: {diverged}"));
    let stopped = replay.stopped.as_ref().map(|error| format!("the replay {mode} stopped ({error}){}", replay.waiting));
    let ran = format!("every worker ran its recorded tasks in the recorded order ({} in all)", replay.tasks);
    let Some(ending) = ending else {
        // The recording ran every frame: so must the replay, in the same order (a replay that
        // stopped is named for where it stopped, before the tasks it did not run).
        if let Some(what) = stopped.or(diverged) {
            return Err(differs(what));
        }
        return Ok(recorded.found.is_some().then(|| {
            format!("{ends}\nthe replay {mode} reproduced the run it was found in: {ran}, as the recording does")
        }));
    };
    // The recording stops early: the replay must run every task it recorded, in the same order,
    // and stop there.
    if let Some(diverged) = diverged {
        return Err(differs(diverged));
    }
    let (Some(error), Some(stopped)) = (&replay.stopped, stopped) else {
        return Err(differs(format!("the replay {mode} ran every frame ({ran})")));
    };
    let left = match replay.left.as_slice() {
        [] => String::new(),
        [one] => format!(", with {one} ready and never run"),
        many => format!(", with {} ready and never run", many.join(", ")),
    };
    let recorded_error = ending.error.as_deref().unwrap_or_default();
    let same_error = |name: &str| {
        let quoted = |name: &str| format!("scheduler {name:?}");
        error.to_string().replace(&quoted("replay"), &quoted(name)) == recorded_error
    };
    let stall = matches!(error, RunError::Stall { .. });
    let verdict = if !stall && same_error(&recorded.header.scheduler.name) {
        // A kernel's error, made again by the same task.
        format!("the replay {mode} reproduced it: {ran}, then failed the same way")
    } else if stall && recorded_error.contains(" stalled: ") && !replay.left.is_empty() {
        // The engine's stall check, made again: the task the recorded scheduler lost is held by
        // the replay's, and no worker's recording runs it.
        format!(
            "the replay {mode} reproduced it: {ran}, then stalled as the recording did{left}: the recorded scheduler \
             was given {} and never handed {} out (a lost task)",
            if replay.left.len() == 1 { "that task" } else { "those tasks" },
            if replay.left.len() == 1 { "it" } else { "them" },
        )
    } else if stall && ending.status == "interrupted" {
        format!("the replay {mode} reproduced it: {ran}, then stopped where the recording stops")
    } else if stall {
        // A broken contract or a stuck call: in the recorded scheduler's next call, which the
        // replay's, handing out nothing but the recorded tasks, does not make.
        format!(
            "the replay {mode} reproduced the run up to it: {ran}, then stopped where the recording stops{left}; the \
             violation was in the recorded scheduler's next call, which a replay (handing out nothing but the \
             recorded tasks) does not make: run the recorded scheduler on the same graph and knobs to see that call \
             again"
        )
    } else {
        return Err(differs(stopped));
    };
    Ok(Some(format!("{ends}\n{verdict}")))
}

/// What to say about the recorded scheduler's library: missing, or not the size it was.
fn scheduler_note(recorded: &SchedulerIdentity) -> Option<String> {
    let path = recorded.path.display();
    match std::fs::metadata(&recorded.path) {
        Err(_) => Some(format!(
            "the recorded scheduler's library {path} is missing (deleted or moved since it was recorded); the replay \
             does not need it and gives the recorded order all the same (to run that scheduler again, build it at \
             that path)"
        )),
        Ok(now) if now.len() != recorded.size => Some(format!(
            "{path} has changed since it was recorded ({} bytes then, {} now); the replay gives the recorded order all \
             the same",
            recorded.size,
            now.len()
        )),
        Ok(_) => None,
    }
}

/// Refuses a real replay whose recorded kernel libraries are gone, naming them and what to do.
fn missing_kernels(decisions: &std::path::Path, dylibs: &[PathBuf]) -> Result<()> {
    let missing: Vec<String> =
        dylibs.iter().filter(|path| !path.exists()).map(|path| path.display().to_string()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    bail!(
        "{}: the kernel librar{} it recorded {} missing (deleted or moved since the recording): {}; give the \
         kernels' path with --dylib PATH, or replay with --simulate (the recorded durations, no kernels)",
        decisions.display(),
        if missing.len() == 1 { "y" } else { "ies" },
        if missing.len() == 1 { "is" } else { "are" },
        missing.join(", ")
    )
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
        // Every worker idle with nothing handed out is the end of a replay (only a completion
        // makes a task ready), so it need not wait long to say so; a recording that ends with a
        // failure ends there.
        given.push(("stall_timeout_ms", Value::Int(REPLAY_STALL_MS)));
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

/// A task of the replay scheduler's stats, as messages name it: `node[instance] of frame F`.
fn task_name(graph: &CompiledGraph, task: &serde_json::Value) -> String {
    let node = task["node"].as_u64().and_then(|n| graph.nodes.get(n as usize)).map_or("?", |n| n.name.as_str());
    format!("{node}[{}] of frame {}", task["instance"], task["frame"])
}

fn stats_list(stats: Option<&serde_json::Value>, key: &str) -> Vec<serde_json::Value> {
    stats.and_then(|stats| stats[key].as_array().cloned()).unwrap_or_default()
}

/// The tasks ready when the replay stopped that no worker's recording runs next (the replay
/// scheduler's stats: the first few).
fn left_ready(graph: &CompiledGraph, stats: Option<&serde_json::Value>) -> Vec<String> {
    stats_list(stats, "unasked").iter().map(|task| task_name(graph, task)).collect()
}

/// What the replay scheduler's stats say each worker waited for when the replay stopped.
fn waiting(graph: &CompiledGraph, stats: Option<&serde_json::Value>) -> String {
    let mut named: Vec<String> = stats_list(stats, "waiting")
        .iter()
        .map(|w| {
            let held = if w["held"].as_bool() == Some(true) { "ready" } else { "never made ready" };
            format!("worker {} waits for {} ({held})", w["worker"], task_name(graph, w))
        })
        .collect();
    let unasked = left_ready(graph, stats);
    if !unasked.is_empty() {
        named.push(format!("ready, but no worker's recording runs it next: {}", unasked.join(", ")));
    }
    if named.is_empty() { String::new() } else { format!(": {}", named.join("; ")) }
}
