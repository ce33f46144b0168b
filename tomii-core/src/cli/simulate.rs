//! `tomii simulate GRAPH --workers N ...`: the graph on virtual workers with the same scheduler
//! dylib (`sim/README.md`), its report and trace written as `tomii run` writes them.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;

use super::app::{progress_line, say, stop_on_interrupt, summary, write_report};
use super::{SchedulerArgs, TraceFormat};
use crate::engine::{ChromeLayout, ChromeTraceFile};
use crate::sim::{self, CostSpec, SimConfig};

#[derive(Args)]
pub struct SimulateArgs {
    /// The graph JSON file.
    #[arg(value_name = "GRAPH")]
    pub graph: PathBuf,
    /// Virtual workers.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub workers: u32,
    /// Frames in flight at once.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub slots: u32,
    /// Frames to simulate; Ctrl-C stops sooner, as it stops a run (the frames in flight complete,
    /// the report and trace hold them).
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub frames: u64,
    /// Frames numbered below N run but are left out of every figure.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub warmup_frames: u64,
    /// The most tasks a virtual worker takes from the scheduler at once.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub pop_batch: u32,
    #[command(flatten)]
    pub sched: SchedulerArgs,
    /// Task durations: a JSON cost model ({"default": D, "nodes": {NAME: D}}) or the trace CSV of
    /// a real run (its durations per node as samples). Default: what the graph says (spin nodes
    /// their µs argument, noop nothing).
    #[arg(long, value_name = "FILE")]
    pub cost_model: Option<PathBuf>,
    /// The seed of every draw: the same seed, the same run.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub seed: u64,
    /// Frame k arrives at k × this many µs (a paced source, such as packets); without it a frame
    /// starts whenever a slot is free.
    #[arg(long, value_name = "US")]
    pub arrival_interval_us: Option<f64>,
    /// The host's cost of one pop, added to virtual time (ns).
    #[arg(long, default_value_t = 0, value_name = "NS")]
    pub overhead_pop_ns: u64,
    /// The host's cost of one task, added to virtual time (ns).
    #[arg(long, default_value_t = 0, value_name = "NS")]
    pub overhead_task_ns: u64,
    /// Write the report as JSON.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Write the trace (virtual times).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The trace file's format: csv or chrome.
    #[arg(long, value_enum, default_value_t = TraceFormat::Csv, value_name = "FORMAT", requires = "trace")]
    pub trace_format: TraceFormat,
    /// Record every scheduling decision, for `tomii replay FILE`.
    #[arg(long, value_name = "FILE")]
    pub record_decisions: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn simulate(args: &SimulateArgs) -> Result<()> {
    let graph = super::convert::load(&args.graph, args.workers)?;
    let scheduler = args.sched.load(None)?;
    let cost = match &args.cost_model {
        Some(path) => CostSpec::read(path).map_err(anyhow::Error::msg)?,
        None => CostSpec::default(),
    };
    let arrival_interval_ns = match args.arrival_interval_us {
        Some(us) if us.is_finite() && us >= 0.0 => Some((us * 1e3).round() as u64),
        Some(us) => anyhow::bail!("--arrival-interval-us {us}: give a non-negative number of µs"),
        None => None,
    };
    let chrome = match (&args.trace, args.trace_format) {
        (Some(path), TraceFormat::Chrome) => {
            let layout = ChromeLayout::new(&graph, (args.workers, args.slots), args.warmup_frames);
            Some(Arc::new(ChromeTraceFile::create(path, layout).map_err(anyhow::Error::msg)?))
        }
        _ => None,
    };
    let mut config = SimConfig {
        workers: args.workers,
        slots: args.slots,
        frames: args.frames,
        warmup_frames: args.warmup_frames,
        pop_batch: args.pop_batch,
        seed: args.seed,
        cost,
        arrival_interval_ns,
        overhead_pop_ns: args.overhead_pop_ns,
        overhead_task_ns: args.overhead_task_ns,
        scheduler_options: args.sched.sched_opts.clone(),
        trace: false,
        trace_file: args.trace.clone().filter(|_| args.trace_format == TraceFormat::Csv),
        trace_taps: chrome.iter().map(|c| c.tap()).collect(),
        wake_all_on_push: false,
        stop: Some(stop_on_interrupt()?),
        progress: (!args.quiet && std::io::stderr().is_terminal()).then(progress_line),
    };
    let decisions = match &args.record_decisions {
        Some(path) => {
            let knobs = super::replay::Knobs {
                workers: args.workers,
                slots: args.slots,
                frames: args.frames,
                warmup_frames: args.warmup_frames,
                pop_batch: args.pop_batch,
                scheduler_options: &args.sched.sched_opts,
            };
            let (source, text) = (args.graph.display().to_string(), crate::graph::read_file(&args.graph)?);
            let graph_text = super::replay::Recording { source: &source, text: &text };
            Some(super::replay::start(path, "simulate", graph_text, &scheduler, &knobs, &[], Some(&config))?)
        }
        None => None,
    };
    config.trace_taps.extend(decisions.iter().map(|d| d.tap()));
    let result = sim::simulate(&graph, &scheduler, &config);
    if config.progress.is_some() {
        eprint!("\r\x1b[2K");
    }
    let (outcome, error) = match result {
        Ok(outcome) => (outcome, None),
        Err(failure) => match failure.partial {
            Some(partial) => (*partial, Some(failure.error)),
            None => {
                if let Some(chrome) = &chrome {
                    let _ = chrome.finish(None);
                }
                return Err(failure.error.into());
            }
        },
    };
    let report = &outcome.report;
    if let Some(path) = &args.report {
        write_report(path, report)?;
    }
    if let Some(chrome) = &chrome {
        chrome.finish(Some(report)).map_err(anyhow::Error::msg)?;
    }
    if let Some(decisions) = &decisions {
        decisions.finish().map_err(anyhow::Error::msg)?;
    }
    if let Some(error) = error {
        return Err(anyhow::Error::from(error)).with_context(|| {
            format!("the simulation stopped after {} frame(s)", report.frames + report.frames_excluded)
        });
    }
    if !args.quiet {
        say(format!("simulated: {}", summary(report)))?;
    }
    if report.interrupted {
        eprintln!(
            "interrupted: stopped after {} frame(s); the report and trace hold them (Ctrl-C again quits at once)",
            report.frames + report.frames_excluded
        );
    }
    Ok(())
}
