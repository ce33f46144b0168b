//! The command line of the `tomii` command, as clap derive structs. It lives in the library so that
//! tests can walk it ([`command`]) and check it against the knob catalog (`knobs.rs`), and so that
//! the Python package's `tomii` command is the same program ([`app::main`]).
//!
//! Only the shape of the command line is here; what each command does is in [`app`]. Every `tomii run` flag has an entry
//! in `knobs::CATALOG` with the same default and choices; `tests/knobs.rs` fails when they drift.
//! Tomii 1.2's spellings are hidden aliases and the hidden flags of [`legacy`], listed in
//! `legacy::SPELLINGS`.

pub mod app;
pub mod convert;
pub mod crash;
pub mod legacy;
pub mod replay;
pub mod send;
pub mod simulate;
pub mod timing;

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

use crate::plugin::{PluginError, SchedulerPlugin};

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

#[derive(Args)]
pub struct RunArgs {
    /// The graph JSON file.
    #[arg(value_name = "GRAPH", required_unless_present = "json", conflicts_with = "json")]
    pub graph: Option<PathBuf>,
    /// The graph JSON file (alternative spelling of GRAPH).
    #[arg(long, value_name = "GRAPH", hide_short_help = true)]
    pub json: Option<PathBuf>,
    /// A kernel library (.so) whose kernels the graph's nodes call; repeat for several.
    #[arg(long = "dylib", value_name = "PATH")]
    pub dylibs: Vec<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub workers: u32,
    /// Frames in flight at once.
    #[arg(long, default_value_t = 1, value_name = "S")]
    pub slots: u32,
    /// Frames to run; 0 runs until Ctrl-C, which completes the frames in flight and reports.
    #[arg(long, aliases = ["max-frames", "max-streams"], default_value_t = 1, value_name = "F")]
    pub frames: u64,
    /// Warm-up: the first N frames run, but every figure of the report and the timing file leaves
    /// them out (the report counts them in frames_excluded).
    #[arg(long, alias = "exclude-streams", default_value_t = 0, value_name = "N")]
    pub warmup_frames: u64,
    /// Stop after this many seconds, as Ctrl-C does: the frames in flight complete and the run
    /// reports (as interrupted); 0: no limit.
    #[arg(long, alias = "max-runtime", default_value_t = 0, value_name = "S")]
    pub max_runtime_s: u64,
    #[command(flatten)]
    pub sched: SchedulerArgs,
    /// Stream the trace (one row per task execution, in the order workers hand them over) to this
    /// CSV file.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The trace file's format: csv (one row per task execution) or chrome (the trace-event JSON
    /// that Perfetto and chrome://tracing open: workers as threads, frames by slot, the run's
    /// events as instants).
    #[arg(long, value_enum, default_value_t = TraceFormat::Csv, value_name = "FORMAT", requires = "trace")]
    pub trace_format: TraceFormat,
    /// Write the report (throughput, latency percentiles, per-node and per-worker figures) as JSON.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Write Tomii 1.2's timing file (plain-text statistics: frames, their mean time, a per-node
    /// table) from the trace.
    #[arg(long, value_name = "FILE")]
    pub timing: Option<PathBuf>,
    /// Write Tomii 1.2's scheduler record (CSV: slot,job_id,start_ns,end_ns,worker,task_id,index)
    /// from the trace; without FILE, beside --timing's file as NAME_sched.csv, else
    /// scheduler_record.csv.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub record: Option<Option<PathBuf>>,
    /// Record every scheduling decision (which task each worker ran, in order) with the graph,
    /// knobs and scheduler, for `tomii replay FILE`.
    #[arg(long, value_name = "FILE")]
    pub record_decisions: Option<PathBuf>,
    /// The most tasks a worker takes from the scheduler at once.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub pop_batch: u32,
    /// A worker runs one task its completion made ready itself, without the scheduler (which never
    /// sees that task).
    #[arg(long)]
    pub inline_continuation: bool,
    /// Do not time each kernel (per-node times and busy fractions are then absent).
    #[arg(long)]
    pub no_task_timing: bool,
    /// Stop with an error when every worker has been idle this long while frames are incomplete.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    pub stall_timeout_ms: u64,
    /// Stop with an error when a call into the scheduler (push, pop, a hook) has not returned
    /// after this long.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    pub scheduler_call_timeout_ms: u64,
    /// Stop with an error when a kernel call has not returned after this long; 0: no limit.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub kernel_timeout_ms: u64,
    /// When the scheduler breaks its contract: `stop` the run with an error, or `fallback`: eject it
    /// and finish the run on the host's own FIFO (the report records the ejection).
    #[arg(long, value_enum, default_value_t = OnFault::Stop, value_name = "POLICY")]
    pub on_scheduler_fault: OnFault,
    /// Network source: threads that read the sockets (each socket is read by one; at most
    /// num_sockets are used).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub receiver_threads: u32,
    /// Network source: SO_RCVBUF asked for each socket, in bytes (the system may grant less).
    #[arg(long, default_value_t = 16 << 20, value_name = "BYTES")]
    pub socket_recv_buf_bytes: u64,
    /// Network source: `packet` runs a packet's tasks as it arrives; `frame` collects a frame's
    /// packets, then starts it.
    #[arg(long, value_enum, default_value_t = NetworkDispatch::Packet, value_name = "WHEN")]
    pub network_dispatch: NetworkDispatch,
    /// Network source: a new frame that finds every slot busy is dropped, or waits in the window,
    /// holding its packets, until a slot is free.
    #[arg(long, value_enum, default_value_t = OnSlotsBusy::Drop, value_name = "POLICY")]
    pub on_slots_busy: OnSlotsBusy,
    /// Network source: a frame whose packets have not all arrived this long after its first one is
    /// abandoned and reported incomplete.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pub frame_timeout_ms: u64,
    /// Network source: frame ids accepted from the oldest frame in flight on (at least slots).
    #[arg(long, default_value_t = 64, value_name = "FRAMES")]
    pub frame_window: u32,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub legacy: legacy::LegacyArgs,
}

/// Which scheduler runs, and its options: the same flags for `tomii run` and `tomii simulate`.
#[derive(Args)]
pub struct SchedulerArgs {
    /// Scheduler by name: loads libtomii_sched_NAME.so from $TOMII_SCHEDULER_PATH or beside this
    /// binary.
    #[arg(long, value_name = "NAME", default_value = "fifo", conflicts_with = "scheduler_plugin")]
    pub scheduler: String,
    /// Scheduler by path to its .so (Rust or C).
    #[arg(long, value_name = "PATH")]
    pub scheduler_plugin: Option<PathBuf>,
    /// An option of the scheduler, KEY=VALUE; repeat for several.
    #[arg(long = "sched-opt", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub sched_opts: Vec<(String, String)>,
}

impl SchedulerArgs {
    /// The scheduler: `--scheduler-plugin`'s file, else the one named `name` (`--scheduler`'s
    /// when `None`) on the search path.
    pub fn load(&self, name: Option<&str>) -> Result<SchedulerPlugin, PluginError> {
        match &self.scheduler_plugin {
            Some(path) => SchedulerPlugin::load(path),
            None => SchedulerPlugin::find(name.unwrap_or(&self.scheduler)),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TraceFormat {
    Csv,
    Chrome,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum OnFault {
    Stop,
    Fallback,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum NetworkDispatch {
    Packet,
    Frame,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum OnSlotsBusy {
    Drop,
    Wait,
}

/// The whole command line as a clap `Command`, for tests and tools that walk it.
pub fn command() -> clap::Command {
    Cli::command()
}

fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got {text:?}")),
    }
}
