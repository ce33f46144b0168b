//! `tomii simulate GRAPH --workers N ...`: the graph on virtual workers with the same scheduler
//! dylib (`sim/README.md`), its report and trace written as `tomii run` writes them.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{ArgMatches, Args, FromArgMatches};

use super::app::{exit_when_stuck, progress_line, say, stop_on_interrupt, summary};
use crate::engine::{RunFailure, RunOutcome};
use crate::knobs::{Entry, Value};
use crate::launch::{self, Hooks, Launch, Outputs};
use crate::plugin::KernelSet;
use crate::sim::{CostSpec, SimConfig};

/// `tomii simulate`'s arguments: the graph, every knob the catalog lists for a simulation, and
/// the simulation's own.
pub struct SimulateArgs {
    pub graph: PathBuf,
    /// The options, defaults included, as the launcher takes them.
    pub options: Vec<(String, Value)>,
    pub own: SimulationArgs,
}

/// The graph file of `tomii simulate`.
#[derive(Args)]
struct SimulatedGraph {
    /// The graph JSON file.
    #[arg(value_name = "GRAPH")]
    graph: PathBuf,
}

/// What only a simulation takes.
#[derive(Args)]
pub struct SimulationArgs {
    /// Task durations: a JSON cost model ({"default": D, "nodes": {NAME: D}}) or the trace CSV of
    /// a real run (its durations per node as samples), a regular file of at most 1 GiB. Default:
    /// what the graph says (spin nodes their µs argument, noop nothing).
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
}

impl SimulationArgs {
    /// The simulation's own settings.
    fn config(&self) -> Result<SimConfig> {
        let cost = match &self.cost_model {
            Some(path) => CostSpec::read(path).map_err(|error| anyhow::anyhow!("--cost-model {error}"))?,
            None => CostSpec::default(),
        };
        let arrival_interval_ns = match self.arrival_interval_us {
            Some(us) if us.is_finite() && us >= 0.0 => Some((us * 1e3).round() as u64),
            Some(us) => anyhow::bail!("--arrival-interval-us {us}: give a non-negative number of µs"),
            None => None,
        };
        Ok(SimConfig {
            seed: self.seed,
            cost,
            arrival_interval_ns,
            overhead_pop_ns: self.overhead_pop_ns,
            overhead_task_ns: self.overhead_task_ns,
        })
    }
}

impl FromArgMatches for SimulateArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(SimulateArgs {
            graph: SimulatedGraph::from_arg_matches(matches)?.graph,
            options: super::options::given(matches, Entry::Simulate),
            own: SimulationArgs::from_arg_matches(matches)?,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = SimulateArgs::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for SimulateArgs {
    fn augment_args(command: clap::Command) -> clap::Command {
        let command = super::options::augment(SimulatedGraph::augment_args(command), Entry::Simulate);
        SimulationArgs::augment_args(command)
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        SimulateArgs::augment_args(command)
    }
}

pub fn simulate(args: &SimulateArgs) -> Result<()> {
    // First of all, as `tomii run`: a Ctrl-C before the first frame stops the simulation there.
    let interrupt = stop_on_interrupt(false)?;
    let settings = launch::settings(Entry::Simulate, args.options.clone()).map_err(anyhow::Error::msg)?;
    // The kernels of the options' libraries, loaded only if a count names a computed
    // initialization (it is computed before the graph compiles); kept until the command ends.
    let mut kernels = None;
    let input = launch::graph_from_file_evaluating(
        &args.graph,
        settings.run.workers,
        &mut launch::lazy_evaluator(|| settings.kernels(None), &mut kernels),
    )?;
    super::convert::warn(&input.graph.warnings, settings.verbose);
    let scheduler = settings.scheduler()?;
    let sim = args.own.config()?;
    let launch = Launch::new(input, settings)?;
    let ending = Ending { outputs: launch.outputs(), quiet: launch.settings().quiet };
    let hooks = Hooks {
        stop: Some(Arc::clone(&interrupt.stop)),
        progress: (!ending.quiet && std::io::stderr().is_terminal()).then(progress_line),
        on_hang: Some(exit_when_stuck(None, {
            let ending = ending.clone();
            move |result| ending.finish(result)
        })),
        ..Hooks::default()
    };
    let progress = hooks.progress.is_some();
    // A crash in the scheduler (or in a kernel library a count's computation loaded) ends the
    // command with the crash line naming them, as a run's does.
    let report = launch.settings().files.report.clone();
    let no_kernels = KernelSet::default();
    let in_progress =
        super::crash::RunInProgress::start(&scheduler, kernels.as_ref().unwrap_or(&no_kernels), report.as_deref());
    let result = launch.simulate(&scheduler, &sim, hooks);
    drop(in_progress);
    drop(interrupt);
    if progress {
        eprint!("\r\x1b[2K");
    }
    ending.finish(result)
}

/// What the command does with a simulation's outcome: end its files (the report, the traces, the
/// decisions) with it, and say how it went. A scheduler call stuck past its limit ends the command
/// here too, with the outcome the watchdog hands over.
#[derive(Clone)]
struct Ending {
    outputs: Arc<Outputs>,
    quiet: bool,
}

impl Ending {
    fn finish(&self, result: Result<RunOutcome, RunFailure>) -> Result<()> {
        let (outcome, error) = match result {
            Ok(outcome) => (outcome, None),
            Err(failure) => match failure.partial {
                Some(partial) => (*partial, Some(failure.error)),
                None => {
                    // Nothing is kept: the files are ended all the same, so that they stay readable.
                    let _ = self.outputs.finish(None);
                    return Err(failure.error.into());
                }
            },
        };
        let report = &outcome.report;
        self.outputs.finish(Some(report)).result().map_err(anyhow::Error::msg)?;
        if let Some(error) = error {
            return Err(anyhow::Error::from(error)).with_context(|| {
                format!("the simulation stopped after {} frame(s)", report.frames + report.frames_excluded)
            });
        }
        if !self.quiet {
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
}
