//! The command line of the `tomii` command, as clap derive structs. It lives in the library so that
//! tests can walk it ([`command`]) and check it against the knob catalog (`knobs.rs`), and so that
//! the Python package's `tomii` command is the same program ([`app::main`]).
//!
//! Only the shape of the command line is here; what each command does is in [`app`]. The run
//! options of `tomii run` and `tomii simulate` are made from `knobs::CATALOG` ([`options`]).
//! Tomii 1.2's spellings are the catalog's hidden aliases and the hidden flags of [`legacy`],
//! listed in `legacy::OWN` and `legacy::WITHOUT_EFFECT`; [`inits`] prints what `--inits` shows.

pub mod app;
pub mod convert;
pub mod crash;
pub mod inits;
pub mod legacy;
pub mod options;
pub mod replay;
pub mod send;
pub mod simulate;

use std::path::PathBuf;

use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::knobs::{Entry, Value};

/// Tomii: replay a streaming task graph over many frames with a pluggable scheduler.
#[derive(Parser)]
#[command(name = "tomii", version, flatten_help = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run a graph: load its kernels and a scheduler, replay it over FRAMES frames (0: until Ctrl-C),
    /// report.
    Run(Box<RunArgs>),
    /// List the schedulers found by name (on $TOMII_SCHEDULER_PATH and beside this binary), with
    /// their options.
    Schedulers(SchedulersArgs),
    /// List every option of `tomii run` (the knob catalog): type, default, domain, role and search
    /// hint.
    Knobs(KnobsArgs),
    /// Print the JSON Schema of the graph format (with --report, of the run report).
    Schema(SchemaArgs),
    /// Rewrite a Tomii 1.2 graph file in the current format, with exactly its meaning; warnings
    /// say where the two formats write the same selection differently.
    Convert(convert::ConvertArgs),
    /// Compare schedulers over graphs and knobs as CONFIG (TOML) describes: a table and figures.
    /// Part of the Python package (`pip install .`), whose `tomii` command runs it.
    Sweep(SweepArgs),
    /// Compare tuning strategies on one budget as CONFIG (TOML) describes (`tomii tune CONFIG`):
    /// the trials, the best configurations and figures. Part of the Python package, whose `tomii`
    /// command runs it.
    Tune(PythonOnlyArgs),
    /// Write a new scheduler project (`tomii new scheduler NAME --lang rust|c`), ready to build
    /// against the installed SDK. Part of the Python package, whose `tomii` command runs it.
    New(PythonOnlyArgs),
    /// Print the plugin SDK's directory. Part of the Python package, whose `tomii` command runs it.
    Sdk(PythonOnlyArgs),
    /// Build a kernel plugin (a Rust crate, a Tomii 1.2 crate as it is, or a C header) into the
    /// library `tomii run --dylib` loads. Part of the Python package, whose `tomii` command runs it.
    Build(PythonOnlyArgs),
    /// Point a Tomii 1.2 checkout at this installation (`tomii migrate [--undo] CHECKOUT`). Part of
    /// the Python package, whose `tomii` command runs it.
    Migrate(PythonOnlyArgs),
    /// Send packets to a graph's network source (UDP or TCP) at a given rate: generated frames with
    /// frame-id/index headers, or packets from a file.
    Send(send::SendArgs),
    /// Run a graph on N virtual workers: the same scheduler dylib, no kernels, task durations from
    /// a cost model; the same report and trace as `tomii run`.
    Simulate(Box<simulate::SimulateArgs>),
    /// Run again what a decisions file recorded (`--record-decisions`): the same graph and knobs,
    /// each worker given the tasks it ran, in the recorded order; says where a replay diverges.
    Replay(replay::ReplayArgs),
}

/// The arguments of a command the Python package's `tomii` runs, left to it.
#[derive(Args)]
pub struct PythonOnlyArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub rest: Vec<String>,
}

#[derive(Args)]
pub struct SweepArgs {
    /// The sweep's TOML file (see experiments/README.md).
    pub config: PathBuf,
    /// Everything after CONFIG, for the Python package's sweep.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub rest: Vec<String>,
}

#[derive(Args)]
pub struct SchedulersArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct KnobsArgs {
    /// Print JSON ({"version": 1, "knobs": [...]}) instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct SchemaArgs {
    /// Print the schema of the run report (`tomii run --report FILE`) instead of the graph's.
    #[arg(long, conflicts_with = "dialect")]
    pub report: bool,
    /// The graph format described: "tomii" (the current one) or "tomii-1.2" (files as Tomii 1.2
    /// wrote them, which this runtime reads unchanged).
    #[arg(long, value_name = "DIALECT", default_value = "tomii", value_parser = ["tomii", "tomii-1.2"])]
    pub dialect: String,
}

/// `tomii run`'s arguments: the graph, every knob the catalog lists for a run (`options.rs` makes
/// their flags from it), and Tomii 1.2's flags of its own.
pub struct RunArgs {
    pub graph: GraphArgs,
    /// The options, defaults included, as the launcher takes them.
    pub options: Vec<(String, Value)>,
    pub legacy: legacy::LegacyArgs,
}

/// The graph file of `tomii run`.
#[derive(Args)]
pub struct GraphArgs {
    /// The graph JSON file.
    #[arg(value_name = "GRAPH", required_unless_present = "json", conflicts_with = "json")]
    pub graph: Option<PathBuf>,
    /// The graph JSON file (alternative spelling of GRAPH).
    #[arg(long, value_name = "GRAPH", hide_short_help = true)]
    pub json: Option<PathBuf>,
}

impl GraphArgs {
    pub fn path(&self) -> &std::path::Path {
        self.graph.as_deref().or(self.json.as_deref()).expect("clap requires GRAPH or --json")
    }
}

impl FromArgMatches for RunArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(RunArgs {
            graph: GraphArgs::from_arg_matches(matches)?,
            options: options::given(matches, Entry::Run),
            legacy: legacy::LegacyArgs::from_matches(matches)?,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = RunArgs::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for RunArgs {
    fn augment_args(command: clap::Command) -> clap::Command {
        let command = options::augment(GraphArgs::augment_args(command), Entry::Run);
        legacy::LegacyArgs::augment(command)
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        RunArgs::augment_args(command)
    }
}

/// The whole command line as a clap `Command`, for tests and tools that walk it.
pub fn command() -> clap::Command {
    Cli::command()
}
