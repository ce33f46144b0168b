//! The one launcher: turns a graph and a list of (name, value) options into a run, a session or a
//! simulation — its `RunConfig`, the frame source, the trace taps (timing file, scheduler record,
//! Chrome trace, decisions file), the time limit and the output files. Every front end (the CLI,
//! the Python binding, `tomii replay`) goes through it; none builds a run by hand. README.md beside
//! this file is the protocol.
//!
//! It never prints and never exits: what to say, and when to stop, is the front end's.

mod decisions;
mod outputs;
mod settings;
mod stamps;
mod timer;
mod timing;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub use outputs::{Outputs, Written, write_report};
pub use settings::{Files, RecordAt, Settings, TraceFormat, settings};
pub use stamps::LibraryStamps;
pub use timer::StopTimer;
pub use timing::{Record, Timing};

use crate::engine::{self, HangFn, ProgressFn, Report, RunConfig, RunError, RunFailure, RunOutcome, Session};
use crate::graph::CompiledGraph;
use crate::network::NetworkSource;
use crate::plugin::{KernelSet, SchedulerPlugin};
use crate::sim::{self, SimConfig};

/// The graph a run is launched on: compiled, with the text it came from (the decisions file
/// records it) and its file, when it came from one (no output may overwrite it).
#[derive(Clone)]
pub struct GraphInput {
    pub graph: Arc<CompiledGraph>,
    /// The name messages give it: its path, or "graph".
    pub source: String,
    pub text: String,
    pub file: Option<PathBuf>,
}

/// What a front end hooks into a run: how it asks the run to stop, how it shows progress, what it
/// does with the outcome of a run a stuck call keeps from ending (`RunConfig::on_hang`), and what
/// it says once a network source listens.
#[derive(Clone, Default)]
pub struct Hooks {
    pub stop: Option<Arc<AtomicBool>>,
    /// `RunConfig::stop_grace` and `stop_now`: how long a stopping run may take, and how to end
    /// it at once.
    pub stop_grace: Option<Duration>,
    pub stop_now: Option<Arc<AtomicBool>>,
    pub progress: Option<ProgressFn>,
    pub on_hang: Option<HangFn>,
    pub on_listening: Option<SayFn>,
}

/// A front end's way of saying a line (for example where a network source listens).
pub type SayFn = Arc<dyn Fn(&str) + Send + Sync>;

/// A run made ready: its settings applied and its files open.
pub struct Launch {
    input: GraphInput,
    settings: Settings,
    outputs: Arc<Outputs>,
    /// Set when the time limit stopped the run.
    timed_out: Arc<AtomicBool>,
}

impl Launch {
    /// Makes the run of `input` with `settings` ready: checks every output path and opens the
    /// files written through trace taps.
    pub fn new(input: GraphInput, settings: Settings) -> Result<Launch, RunError> {
        let outputs = Outputs::create(&settings.files, &input.graph, &settings.run, input.file.as_deref())
            .map_err(RunError::Config)?;
        Ok(Launch { input, settings, outputs: Arc::new(outputs), timed_out: Arc::default() })
    }

    pub fn graph(&self) -> &Arc<CompiledGraph> {
        &self.input.graph
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The run's files, to end them from wherever the outcome arrives (a stuck call's hook).
    pub fn outputs(&self) -> Arc<Outputs> {
        Arc::clone(&self.outputs)
    }

    /// Set once the time limit (`max_runtime_s`) has stopped the run.
    pub fn timed_out(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.timed_out)
    }

    /// Runs the graph over its frames: counted, or received by its network source.
    pub fn run(
        &self,
        kernels: &KernelSet,
        scheduler: &SchedulerPlugin,
        hooks: Hooks,
    ) -> Result<RunOutcome, RunFailure> {
        let mut config = self.config(hooks.clone());
        if let Some(path) = &self.settings.files.decisions {
            let file = decisions::start(path, "run", &self.input, scheduler, &self.settings, None)?;
            config.trace_taps.push(self.outputs.keep_decisions(file));
        }
        let _timer = self.start_timer(&mut config)?;
        let graph = &*self.input.graph;
        let Some(source) = NetworkSource::for_graph(graph, kernels, &config)? else {
            return engine::run_keeping_partial(graph, kernels, scheduler, &config);
        };
        if let Some(say) = &hooks.on_listening {
            say(&source.describe());
        }
        let result = engine::run_with_keeping_partial(graph, kernels, scheduler, &config, &source);
        engine::with_outputs(result, source.into_outputs())
    }

    /// Opens a session: the run kept open, fed frames by the program.
    pub fn session(&self, kernels: Arc<KernelSet>, scheduler: Arc<SchedulerPlugin>) -> Result<Session, RunError> {
        Session::start(Arc::clone(&self.input.graph), kernels, scheduler, self.config(Hooks::default()))
    }

    /// Simulates the run on virtual workers (`sim/`), with the simulation's own `sim` settings.
    pub fn simulate(
        &self,
        scheduler: &SchedulerPlugin,
        sim: &SimConfig,
        hooks: Hooks,
    ) -> Result<RunOutcome, RunFailure> {
        let mut config = self.config(hooks);
        if let Some(path) = &self.settings.files.decisions {
            let file = decisions::start(path, "simulate", &self.input, scheduler, &self.settings, Some(sim))?;
            config.trace_taps.push(self.outputs.keep_decisions(file));
        }
        sim::simulate(&self.input.graph, scheduler, &config, sim)
    }

    /// Ends the files with the run's report (none: the run never started).
    pub fn finish(&self, report: Option<&Report>) -> Written {
        self.outputs.finish(report)
    }

    /// The engine's configuration: the settings', with the trace taps of the files and the hooks.
    fn config(&self, hooks: Hooks) -> RunConfig {
        let mut config = self.settings.run.clone();
        config.trace_file = self.settings.files.csv_trace();
        config.trace_taps.extend(self.outputs.taps());
        config.record_taps.extend(self.outputs.record_taps());
        config.stop = hooks.stop;
        config.stop_grace = hooks.stop_grace;
        config.stop_now = hooks.stop_now;
        config.progress = hooks.progress;
        config.on_hang = hooks.on_hang;
        config
    }

    /// Starts the time limit's timer, if the options set one (with a stop flag of its own when
    /// the front end gave none).
    fn start_timer(&self, config: &mut RunConfig) -> Result<Option<StopTimer>, RunError> {
        if self.settings.max_runtime_s == 0 {
            return Ok(None);
        }
        let stop = Arc::clone(config.stop.get_or_insert_with(|| Arc::new(AtomicBool::new(false))));
        let limit = Duration::from_secs(self.settings.max_runtime_s);
        let timer = StopTimer::start(stop, Arc::clone(&self.timed_out), limit)
            .map_err(|error| RunError::Config(format!("cannot start the max_runtime_s timer: {error}")))?;
        Ok(Some(timer))
    }
}

/// The graph file at `path`, compiled for a run on `workers` workers, with its text.
pub fn graph_from_file(path: &Path, workers: u32) -> Result<GraphInput, crate::graph::GraphError> {
    let text = crate::graph::read_file(path)?;
    let source = path.display().to_string();
    let graph = crate::graph::parse_str_for_run(&source, &text, workers)?;
    Ok(GraphInput { graph: Arc::new(graph), source, text, file: Some(path.to_owned()) })
}

/// [`graph_from_file`] with the kernels at hand: the initializations a count of the graph names
/// are computed by `evaluate` before it compiles, once, and kept for the first run (graph
/// README, "Computed counts"). Every entry point that runs, opens a session on or simulates a
/// graph compiles it through this or [`graph_from_text`].
pub fn graph_from_file_evaluating(
    path: &Path,
    workers: u32,
    evaluate: crate::graph::Evaluate<'_>,
) -> Result<GraphInput, crate::graph::GraphError> {
    let text = crate::graph::read_file(path)?;
    graph_from_text(&path.display().to_string(), text, workers, Some(path.to_owned()), evaluate)
}

/// The graph `text` (named `source`) compiled for a run on `workers` workers, as
/// [`graph_from_file_evaluating`].
pub fn graph_from_text(
    source: &str,
    text: String,
    workers: u32,
    file: Option<PathBuf>,
    evaluate: crate::graph::Evaluate<'_>,
) -> Result<GraphInput, crate::graph::GraphError> {
    let graph = crate::graph::parse_str_evaluating(source, &text, workers, evaluate)?;
    Ok(GraphInput { graph: Arc::new(graph), source: source.to_owned(), text, file })
}

/// Computes initializations with the kernels `load` gives, calling it on first use (a graph whose
/// counts name none never loads them here; `|| settings.kernels(None)` loads a run's libraries);
/// `loaded` keeps them, and must outlive the graph and its runs.
pub fn lazy_evaluator<'a>(
    load: impl FnOnce() -> Result<KernelSet, crate::plugin::PluginError> + 'a,
    loaded: &'a mut Option<KernelSet>,
) -> impl FnMut(
    &crate::graph::PendingInits<'_>,
    &mut Vec<Vec<tomii_types::kernel::Value>>,
) -> Result<(), crate::graph::InitFailure>
+ 'a {
    let mut load = Some(load);
    move |pending, values| {
        let failure = |message: String| crate::graph::InitFailure {
            init: pending.computed.get(values.len()).map(|init| init.name.clone()).unwrap_or_default(),
            message,
        };
        if let Some(load) = load.take() {
            *loaded = Some(load().map_err(|error| failure(error.to_string()))?);
        }
        let kernels = loaded.as_ref().ok_or_else(|| failure("its kernels could not be loaded".to_owned()))?;
        engine::evaluator(kernels)(pending, values)
    }
}
