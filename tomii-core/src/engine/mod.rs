//! The frame/slot engine: runs a compiled graph over the frames a frame source gives, `slots` of
//! them in flight, on the runtime's own worker threads, asking the loaded scheduler what to run.
//!
//! `run_with` is the whole life of a run: check the configuration, bind kernels, create the
//! scheduler, ask the source for the first frames, run the workers, then build the report. `run`
//! is a run of `frames` frames without inputs (the counted source); [`Session`] keeps a run open
//! and takes frames from the program. The protocols (frames and their source, slots and
//! generations, readiness, idle workers, shutdown) are described in README.md beside this file.

mod advice;
mod affinity;
mod analysis;
mod chrome_trace;
mod clock;
mod csv_trace;
mod door;
mod durations;
mod fence;
mod latencies;
pub(crate) mod memory;
mod pool;
mod report;
mod report_schema;
mod session;
mod sleep;
mod slots;
mod source;
mod task_record;
mod trace;
mod worker;

pub use advice::Suggestion;
pub(crate) use affinity::Placement;
pub use analysis::{CriticalPathReport, NodeTimes, OverheadDiagnostic, ResourceUtilization, Summary};
pub use chrome_trace::{ChromeLayout, ChromeTrace, ChromeTraceFile};
pub(crate) use clock::Clock;
pub use csv_trace::{CSV_COLUMNS, CsvTrace};
pub use door::{Door, Opened, Refused};
pub(crate) use durations::Durations;
pub(crate) use latencies::Latencies;
pub(crate) use report::latency as latency_summary;
pub use report::{Latency, NodeReport, Report, SchedulerReport, WorkerReport};
pub(crate) use report::{NodeCounters, Parts as ReportParts, WorkerCounters, assemble as assemble_report};
pub use report_schema::report_schema;
pub use session::{FrameResult, Session, SubmitError, Ticket};
pub use slots::MAX_SLOTS;
pub use source::{Capabilities, Counted, FrameDone, FrameSource, NextFrame};
pub use task_record::{Field, FieldType, TaskRecord};
pub(crate) use trace::TraceSink;
pub use trace::{RecordTap, RecordTapRef, SystemKind, SystemRecord, TraceRecord, TraceTap};
pub(crate) use worker::{scheduler_setup, templates};

/// The computation of a graph's initializations before it compiles (`graph::Evaluate`), with
/// `kernels`: the run's own initialization code, on the calling thread. The values stay valid as
/// long as `kernels` stay loaded: give the run these kernels.
pub fn evaluator(
    kernels: &crate::plugin::KernelSet,
) -> impl FnMut(
    &crate::graph::PendingInits<'_>,
    &mut Vec<Vec<tomii_types::kernel::Value>>,
) -> Result<(), crate::graph::InitFailure>
+ '_ {
    move |pending, values| {
        worker::compute_into(pending, kernels, values).map_err(|error| match error {
            RunError::Init { init, kernel, element, message } => crate::graph::InitFailure {
                init,
                message: format!("kernel {} failed at element {element}: {message}", quote_name(&kernel)),
            },
            other => crate::graph::InitFailure {
                init: pending.computed.get(values.len()).map(|init| init.name.clone()).unwrap_or_default(),
                message: other.to_string(),
            },
        })
    }
}

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::graph::{CompiledGraph, quote_name};
use crate::network::{NetworkOptions, NetworkSource};
use crate::plugin::{KernelSet, PluginError, SchedulerPlugin};

/// The most workers a run may have: each is a thread, with its own buffers.
pub const MAX_WORKERS: u32 = 1024;
/// The most tasks a worker may take from the scheduler at once (its buffer is made for them).
pub const MAX_POP_BATCH: u32 = 4096;

/// Everything a run is told besides the graph and the plugins.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub workers: u32,
    pub slots: u32,
    /// Frames of a counted or network run ([`run`]); 0 runs until a stop is requested. Other
    /// sources decide for themselves.
    pub frames: u64,
    /// The most tasks a worker asks the scheduler for at once; 0 (the default) leaves it to the
    /// scheduler ([`RunConfig::pop_room`]).
    pub pop_batch: u32,
    /// A worker runs one of the tasks its completion made ready itself, without the scheduler
    /// (README.md, "Inline continuation").
    pub inline_continuation: bool,
    /// Record one trace record per task and keep them in memory ([`RunOutcome::trace`]; at most
    /// 4 Mi records, the oldest released beyond).
    pub trace: bool,
    /// Stream the trace to this CSV file as the run goes (records in the order workers hand them
    /// over, not sorted).
    pub trace_file: Option<PathBuf>,
    /// Called on the host thread with every chunk of trace records as the run goes (in the order
    /// workers hand them over), for writers of other trace formats (`tomii run --timing`,
    /// `--record`). Setting one records the trace, as `trace_file` does. Every record reaches every
    /// tap: when the taps (and the trace file) are slower than the workers, the workers wait for
    /// them (`Report::trace_wait_s`; README.md, "Trace and counters").
    pub trace_taps: Vec<TraceTap>,
    /// The scheduler record's taps (`--record`): like trace taps, with each task's dependency
    /// resolution time and the engine's frame starts and deliveries (`RecordTap`). Setting one
    /// records the trace and measures those, off the path of runs without one.
    pub record_taps: Vec<RecordTapRef>,
    /// Warm-up: the frames numbered below this run as any other, but the report's figures leave
    /// them out (latencies, throughput and wall time, per-node and per-worker figures) and count
    /// them in `frames_excluded` (README.md, "Warm-up frames"). 0: none.
    pub warmup_frames: u64,
    /// Measure every kernel's duration (per-node times, busy fractions, cost estimates).
    pub task_timing: bool,
    /// Keep the results of sink instances (those without successors) of every frame.
    pub collect_outputs: bool,
    /// How long every worker may be idle, with frames incomplete and the scheduler handing out
    /// nothing, before the run stops as stalled.
    pub stall_timeout: Duration,
    /// The scheduler's own `key=value` options.
    pub scheduler_options: Vec<(String, String)>,
    /// What to do when the scheduler breaks its contract.
    pub on_fault: FaultPolicy,
    /// How a graph with a `network_config` receives its packets.
    pub network: NetworkOptions,
    /// How long a call into the scheduler (push, pop, a hook) may run before the run is stopped
    /// as stuck in it (README.md, "Stuck callbacks").
    pub scheduler_call_timeout: Duration,
    /// How long a kernel call may run before the run is stopped as stuck in it; `None` (the
    /// default): without limit.
    pub kernel_timeout: Option<Duration>,
    /// What to do with the outcome of a run that a stuck call keeps from ending: the stuck thread
    /// cannot be stopped or joined. Called once the other workers exited, with the run's failure
    /// (or, after the scheduler was ejected under `FaultPolicy::Fallback`, its outcome), made of
    /// what they did; the CLI writes the report and exits. The run itself returns only once the
    /// stuck call does, which may be never.
    pub on_hang: Option<HangFn>,
    /// Called from the host thread about four times a second while the run goes on, and once at
    /// the end.
    pub progress: Option<ProgressFn>,
    /// Set it to stop the run: no frame starts any more, the frames in flight complete, and the
    /// run ends with its report (`report.interrupted`).
    pub stop: Option<Arc<AtomicBool>>,
    /// How long the run may take to end once it was asked to stop (`stop`) or failed: past it,
    /// the frames in flight are given up (README.md, "A run that cannot stop"): the run fails with
    /// [`RunError::StopCutShort`], naming the calls workers are still in, and the workers still
    /// in one are left to `on_hang`, as stuck ones are. `None` (the default): as long as it takes.
    pub stop_grace: Option<Duration>,
    /// Set it (after `stop`) to end the run at once, without the frames in flight: as when
    /// `stop_grace` runs out, now (the CLI's second Ctrl-C).
    pub stop_now: Option<Arc<AtomicBool>>,
    /// Pin worker `w` to the `w mod n`-th of the `n` CPUs the process may use, for the run
    /// (README.md, "Pinned workers").
    pub pin_workers: bool,
    /// Every push wakes every sleeping worker, instead of one per task no awake worker will take
    /// (README.md, "Idle workers"): for a replay (`tomii replay`), whose scheduler holds each task
    /// for the one worker that ran it when it was recorded.
    pub wake_all_on_push: bool,
    /// How an idle worker spins before it parks (README.md, "Idle workers").
    pub idle_spin: IdleSpin,
}

/// How an idle worker spins before it parks (README.md, "Idle workers").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IdleSpin {
    /// As long as work has come within a spin: a full spin while it does, an eighth of one
    /// after idle times longer than a spin.
    #[default]
    Adaptive,
    /// Always the full spin: the soonest start for work that comes after a long gap, a core
    /// busy for the spin's length each time.
    Full,
}

/// What the host does when the scheduler breaks its contract (a task popped twice or never
/// pushed, a worker outside a task's range, an error status, a stall).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FaultPolicy {
    /// End the run with an error naming the scheduler, the violation and the task.
    #[default]
    Stop,
    /// Eject the scheduler and finish the run on the host's own FIFO; the report records it.
    Fallback,
}

/// A scheduler ejection, as the report records it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Ejection {
    /// The contract violation that caused it.
    pub violation: String,
    /// Frames completed before it.
    pub frames_done: u64,
    /// Ready tasks the host recovered from its counters and queued on its own FIFO.
    pub requeued_tasks: u64,
}

/// How far a run has come.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    pub frames_done: u64,
    /// The frames the source will give, when it knows; 0 otherwise.
    pub frames: u64,
    pub elapsed: Duration,
}

/// What a run does with a stuck call (see [`RunConfig::on_hang`]); called once, on the host
/// thread, with the run's outcome: its failure with what ran, or the outcome of a run that finished
/// without the stuck worker.
#[derive(Clone)]
pub struct HangFn(pub Arc<dyn Fn(Result<RunOutcome, RunFailure>) + Send + Sync>);

impl std::fmt::Debug for HangFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HangFn")
    }
}

/// A progress callback (see [`RunConfig::progress`]).
#[derive(Clone)]
pub struct ProgressFn(pub Arc<dyn Fn(Progress) + Send + Sync>);

impl std::fmt::Debug for ProgressFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressFn")
    }
}

impl RunConfig {
    /// Refuses an integer option outside the knob catalog's domain, which is thereby the one
    /// statement of what a run accepts. The network options are checked whatever the graph: a
    /// value outside its domain is a mistake even where it has no effect.
    pub(crate) fn check_ranges(&self) -> Result<(), RunError> {
        let millis = |time: Duration| u64::try_from(time.as_millis()).unwrap_or(u64::MAX);
        let network = &self.network;
        let integers = [
            ("workers", u64::from(self.workers)),
            ("slots", u64::from(self.slots)),
            ("pop_batch", u64::from(self.pop_batch)),
            ("stall_timeout_ms", millis(self.stall_timeout)),
            ("scheduler_call_timeout_ms", millis(self.scheduler_call_timeout)),
            ("receiver_threads", u64::from(network.receiver_threads)),
            ("socket_recv_buf_bytes", network.socket_recv_buf_bytes),
            ("frame_timeout_ms", millis(network.frame_timeout)),
            ("frame_window", u64::from(network.frame_window)),
            ("network_idle_timeout_ms", network.idle_timeout.map_or(0, millis)),
        ];
        integers
            .into_iter()
            .try_for_each(|(name, value)| crate::knobs::check_int(name, value).map_err(RunError::Config))
    }
}

impl RunConfig {
    /// Whether a run with this configuration records a trace (in memory, to a file or for a tap).
    pub fn tracing(&self) -> bool {
        self.trace || self.trace_file.is_some() || !self.trace_taps.is_empty() || !self.record_taps.is_empty()
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            workers: 1,
            slots: 1,
            frames: 1,
            pop_batch: 0,
            inline_continuation: false,
            trace: false,
            trace_file: None,
            trace_taps: Vec::new(),
            record_taps: Vec::new(),
            warmup_frames: 0,
            task_timing: true,
            collect_outputs: false,
            stall_timeout: Duration::from_secs(2),
            scheduler_options: Vec::new(),
            progress: None,
            stop: None,
            stop_grace: None,
            stop_now: None,
            on_fault: FaultPolicy::Stop,
            idle_spin: IdleSpin::Adaptive,
            network: NetworkOptions::default(),
            scheduler_call_timeout: Duration::from_secs(10),
            kernel_timeout: None,
            on_hang: None,
            pin_workers: false,
            wake_all_on_push: false,
        }
    }
}

/// Why a run failed. Each message is one line naming what failed and what to do.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Plugin(#[from] PluginError),
    #[error("kernel {} failed in node {} instance {instance}, frame {frame}: {message}", quote_name(.kernel), quote_name(.node))]
    Kernel { node: String, kernel: String, instance: u32, frame: u64, message: String },
    #[error("kernel {} failed computing initialization {} (element {element}): {message}", quote_name(.kernel), quote_name(.init))]
    Init { init: String, kernel: String, element: u32, message: String },
    #[error("scheduler {scheduler:?} broke its contract: {violation}")]
    SchedulerFault { scheduler: String, violation: String },
    #[error(
        "scheduler {scheduler:?} stalled: every worker was idle for {timeout_ms} ms with {incomplete} frame(s) incomplete and nothing handed out (was a pushed task lost?)"
    )]
    Stall { scheduler: String, timeout_ms: u128, incomplete: u64 },
    #[error(
        "scheduler {scheduler:?} did not return from {call} on {worker} within {timeout_ms} ms; a thread stuck in a plugin cannot be stopped (raise --scheduler-call-timeout-ms if the scheduler is only slow)"
    )]
    SchedulerHang { scheduler: String, call: &'static str, worker: String, timeout_ms: u128 },
    #[error(
        "kernel {} did not return within {timeout_ms} ms in node {} instance {instance}, frame {frame} (worker {worker}); a thread stuck in a plugin cannot be stopped (raise --kernel-timeout-ms if the kernel is only slow)",
        crate::graph::quote_name(.kernel), crate::graph::quote_name(.node)
    )]
    KernelHang { kernel: String, node: String, instance: u32, frame: u64, worker: u32, timeout_ms: u128 },
    #[error(
        "no packet for {idle_ms} ms {}: {taken} of {frames} frames taken{}{}; the network source stopped the run as \
         Ctrl-C does (did the sender stop early, or are its packets lost? the report's packets_dropped counts what \
         came; raise --network-idle-timeout-ms for a sender that pauses, 0 waits forever)",
        idle_since(.newest), ended_as(.taken_as), still_receiving(*.receiving)
    )]
    NetworkIdle {
        idle_ms: u128,
        /// The newest frame id a packet named; `None` when no packet's frame was known (every
        /// one was dropped before it was read).
        newest: Option<u64>,
        /// Frames whose reception was over (complete, abandoned, failed or dropped) when it stopped.
        taken: u64,
        /// How they ended, as `30 complete, 7 incomplete, 1 dropped` (the kinds with frames).
        taken_as: String,
        frames: u64,
        /// Frames still receiving then, abandoned.
        receiving: u64,
    },
    /// The run was asked to stop, or failed, and did not end within `RunConfig::stop_grace`
    /// (`grace_ms`), or was asked to end at once (`RunConfig::stop_now`, `grace_ms` `None`): it
    /// ended without its frames in flight. `calls` names each call a worker was still in
    /// ("worker 0 in kernel ...").
    #[error("{}", cut_short(*.grace_ms, .calls))]
    StopCutShort { grace_ms: Option<u128>, calls: Vec<String> },
    #[error("{path}: {reason}")]
    Io { path: PathBuf, reason: String },
    #[error("internal error (please report it): {0}")]
    Internal(String),
}

/// The message of [`RunError::StopCutShort`].
fn cut_short(grace_ms: Option<u128>, calls: &[String]) -> String {
    let why = match grace_ms {
        Some(ms) => format!("the run did not end within {ms} ms of its stop (the stop grace)"),
        None => "the run was stopped at once, by a second stop request".to_owned(),
    };
    match calls {
        [] => format!("{why}; it ended without the frames in flight"),
        calls => format!(
            "{why}: {}; it ended without the frames in flight, and a thread stuck in a plugin cannot be stopped \
             (--kernel-timeout-ms limits kernels)",
            calls.join(", ")
        ),
    }
}

/// Where a network source's packets stopped, for [`RunError::NetworkIdle`].
fn idle_since(newest: &Option<u64>) -> String {
    match newest {
        Some(frame) => format!("after frame {frame}"),
        None => "and no frame id known (every packet was dropped before its frame was read)".to_owned(),
    }
}

/// How the frames a network source took ended, for [`RunError::NetworkIdle`].
fn ended_as(kinds: &str) -> String {
    if kinds.is_empty() { String::new() } else { format!(" ({kinds})") }
}

/// The frames a network source abandoned when it stopped, for [`RunError::NetworkIdle`].
fn still_receiving(receiving: u64) -> String {
    match receiving {
        0 => String::new(),
        n => format!(", {n} still receiving abandoned"),
    }
}

/// One output value, owned by the caller.
#[derive(Debug, PartialEq)]
pub enum Output {
    None,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Text(String),
    Bytes(Vec<u8>),
    /// Anything else (wide integers, complex numbers, chars, arrays, lists, objects): the kernel's
    /// value itself, moved out of its slot, so an object or array reaches the caller uncopied.
    Value(tomii_types::kernel::Value),
}

impl Output {
    /// Takes ownership of `value`: the simple kinds are copied out, the rest kept as they are.
    pub fn from_value(value: tomii_types::kernel::Value) -> Output {
        use tomii_types::kernel::ValueRef;
        match value.view() {
            ValueRef::None => Output::None,
            ValueRef::Bool(b) => Output::Bool(b),
            ValueRef::Int(v) => Output::Int(v),
            ValueRef::UInt(v) => Output::UInt(v),
            ValueRef::F32(v) => Output::Float(v.into()),
            ValueRef::F64(v) => Output::Float(v),
            ValueRef::Str(s) => Output::Text(s.to_owned()),
            ValueRef::Bytes(b) => Output::Bytes(b.to_vec()),
            _ => Output::Value(value),
        }
    }
}

/// The outputs of one frame: (node, instance, value) for every sink instance.
pub type FrameOutputs = Vec<(u32, u32, Output)>;

/// A run that failed, with what it did until then.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct RunFailure {
    pub error: RunError,
    /// What ran before the failure: the report (`status` "failed", the error, the frames done)
    /// and the trace of every task that ran. `None` when the run failed before it started (a bad
    /// option, a kernel or scheduler that could not be set up).
    pub partial: Option<Box<RunOutcome>>,
}

impl From<RunError> for RunFailure {
    /// A failure before the run started.
    fn from(error: RunError) -> Self {
        RunFailure { error, partial: None }
    }
}

/// What a run produced: all of it when it succeeded, what it did until then when it failed
/// ([`RunFailure::partial`]).
pub struct RunOutcome {
    pub report: Report,
    /// Every task execution, sorted by start time (empty unless `trace` was set).
    pub trace: Vec<TraceRecord>,
    /// Per frame, when `collect_outputs` was set (counted runs; other sources take them).
    pub outputs: Vec<FrameOutputs>,
    /// What each post-node instance returned: (post-node, instance, value), in file order.
    pub post_outputs: Vec<(String, u32, Output)>,
    clock: clock::Clock,
}

impl std::fmt::Debug for RunOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOutcome").field("report", &self.report).field("trace", &self.trace.len()).finish()
    }
}

impl RunOutcome {
    /// The outcome of a run the engine did not make (a simulated one, `sim/`), timed by `clock`.
    pub(crate) fn made(report: Report, trace: Vec<TraceRecord>, clock: Clock) -> Self {
        RunOutcome { report, trace, outputs: Vec::new(), post_outputs: Vec::new(), clock }
    }

    /// Nanoseconds since the run started, for a trace time.
    pub fn ns(&self, ticks: u64) -> u64 {
        self.clock.ns_since_start(ticks)
    }
}

/// Runs `graph` over `config.frames` frames (0: until a stop is requested) with the kernels of
/// `kernels` and the scheduler `scheduler`: frames without inputs, or, for a graph with a
/// `network_config`, frames made of the packets its sockets receive.
pub fn run(
    graph: &CompiledGraph,
    kernels: &KernelSet,
    scheduler: &SchedulerPlugin,
    config: &RunConfig,
) -> Result<RunOutcome, RunError> {
    run_keeping_partial(graph, kernels, scheduler, config).map_err(|failure| failure.error)
}

/// [`run`], which on failure also gives what ran before it ([`RunFailure::partial`]).
pub fn run_keeping_partial(
    graph: &CompiledGraph,
    kernels: &KernelSet,
    scheduler: &SchedulerPlugin,
    config: &RunConfig,
) -> Result<RunOutcome, RunFailure> {
    if let Some(source) = NetworkSource::for_graph(graph, kernels, config)? {
        return with_outputs(
            run_with_keeping_partial(graph, kernels, scheduler, config, &source),
            source.into_outputs(),
        );
    }
    let source = Counted::new(config.frames, config.collect_outputs);
    with_outputs(run_with_keeping_partial(graph, kernels, scheduler, config, &source), source.into_outputs())
}

/// The run's outcome, partial or whole, with the outputs its source collected.
pub(crate) fn with_outputs(
    result: Result<RunOutcome, RunFailure>,
    outputs: Vec<FrameOutputs>,
) -> Result<RunOutcome, RunFailure> {
    match result {
        Ok(mut outcome) => {
            outcome.outputs = outputs;
            Ok(outcome)
        }
        Err(mut failure) => {
            if let Some(partial) = &mut failure.partial {
                partial.outputs = outputs;
            }
            Err(failure)
        }
    }
}

/// Runs `graph` over the frames `source` gives, until it says it is done (or a stop is requested)
/// and the frames in flight completed.
pub fn run_with(
    graph: &CompiledGraph,
    kernels: &KernelSet,
    scheduler: &SchedulerPlugin,
    config: &RunConfig,
    source: &dyn FrameSource,
) -> Result<RunOutcome, RunError> {
    run_with_keeping_partial(graph, kernels, scheduler, config, source).map_err(|failure| failure.error)
}

/// [`run_with`], which on failure also gives what ran before it ([`RunFailure::partial`]).
pub fn run_with_keeping_partial(
    graph: &CompiledGraph,
    kernels: &KernelSet,
    scheduler: &SchedulerPlugin,
    config: &RunConfig,
    source: &dyn FrameSource,
) -> Result<RunOutcome, RunFailure> {
    worker::Engine::run(graph, kernels, scheduler, config, source)
}
