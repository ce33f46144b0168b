//! The trace as Chrome's trace-event JSON (the "JSON Object Format" that Perfetto and
//! chrome://tracing open): `tomii run --trace FILE --trace-format chrome`, `run_graph(trace=FILE,
//! trace_format="chrome")` and `RunResult.save_trace(FILE, format="chrome")`.
//!
//! Layout (README.md, "Trace and counters"):
//! - process 1 "workers": one thread per worker; each task execution is a complete event (`"ph":
//!   "X"`) named after its node, from its start to its end, with its instance, frame, slot and the
//!   time it waited ready (`queued_us`) as args. A task's slice on a worker's lane is the
//!   scheduler's decision: which worker ran it, and when.
//! - process 2 "frames": one thread per slot; each frame is a complete event "frame N" from its
//!   first task's ready time to its last task's end, so frames take colours of their own.
//! - instant events (`"ph": "i"`) for what happened once: the end of the warm-up, a scheduler
//!   ejected (with the violation), the run's end (its status and error), and the frames the
//!   network source dropped, with their counts.
//!
//! Written as the trace streams in, on the host thread: events are formatted into the file chunk
//! by chunk; a frame's event is written once its tasks are all seen (or at the end, for frames
//! whose tasks were not all recorded). Times are microseconds since the run started, with
//! nanosecond decimals.

use std::collections::HashMap;
use std::io::{BufWriter, Write};

use serde_json::json;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{RunConfig, TaskRecord, TraceTap};
use crate::graph::CompiledGraph;

/// What the trace is of: the lanes and the frames' shape.
#[derive(Clone, Debug)]
pub struct ChromeLayout {
    pub node_names: Vec<String>,
    pub workers: u32,
    pub slots: u32,
    /// Task executions a frame records when every task runs: a frame's event is written as soon
    /// as this many are seen.
    pub tasks_per_frame: u64,
    /// Frames 0..warmup_frames are the warm-up (an instant event marks its end).
    pub warmup_frames: u64,
}

const WORKERS_PID: u32 = 1;
const FRAMES_PID: u32 = 2;

/// A frame seen so far.
#[derive(Clone, Copy)]
struct Span {
    first_ready_ns: u64,
    last_end_ns: u64,
    tasks: u64,
    slot: u32,
}

/// Writes a Chrome trace to `out` as records come.
pub struct ChromeTrace<W: Write> {
    out: W,
    layout: ChromeLayout,
    open: HashMap<u64, Span>,
    /// The node names as JSON strings, quoted and escaped once.
    names: Vec<String>,
    last_ns: u64,
    /// Every event is preceded by a comma except the first.
    first: bool,
}

impl<W: Write> ChromeTrace<W> {
    /// Starts the file: its header and the lanes' names.
    pub fn begin(mut out: W, layout: ChromeLayout) -> std::io::Result<Self> {
        out.write_all(b"{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n")?;
        let names = layout.node_names.iter().map(|name| serde_json::Value::from(name.as_str()).to_string()).collect();
        let mut trace = ChromeTrace { out, layout, open: HashMap::new(), names, last_ns: 0, first: true };
        trace.event(&json!({"ph": "M", "pid": WORKERS_PID, "name": "process_name", "args": {"name": "workers"}}))?;
        trace.event(
            &json!({"ph": "M", "pid": FRAMES_PID, "name": "process_name", "args": {"name": "frames (by slot)"}}),
        )?;
        for worker in 0..trace.layout.workers {
            let name = format!("worker {worker}");
            trace.event(
                &json!({"ph": "M", "pid": WORKERS_PID, "tid": worker, "name": "thread_name", "args": {"name": name}}),
            )?;
        }
        for slot in 0..trace.layout.slots {
            let name = format!("slot {slot}");
            trace.event(
                &json!({"ph": "M", "pid": FRAMES_PID, "tid": slot, "name": "thread_name", "args": {"name": name}}),
            )?;
        }
        Ok(trace)
    }

    /// Writes the task executions `records`, and the frames they complete.
    pub fn records(&mut self, records: &[TaskRecord]) -> std::io::Result<()> {
        for r in records {
            self.task(r)?;
            self.last_ns = self.last_ns.max(r.end_ns);
            let span = self.open.entry(r.frame).or_insert(Span {
                first_ready_ns: r.ready_ns,
                last_end_ns: r.end_ns,
                tasks: 0,
                slot: r.slot,
            });
            span.first_ready_ns = span.first_ready_ns.min(r.ready_ns);
            span.last_end_ns = span.last_end_ns.max(r.end_ns);
            span.tasks += 1;
            if span.tasks >= self.layout.tasks_per_frame {
                let span = *span;
                self.open.remove(&r.frame);
                self.frame(r.frame, span)?;
            }
        }
        Ok(())
    }

    /// Ends the file: the frames not complete yet, the run's instant events from its report (the
    /// report's JSON, if the run got far enough to have one) and its description; returns the
    /// writer.
    pub fn finish(mut self, report: Option<&serde_json::Value>) -> std::io::Result<W> {
        let mut open: Vec<(u64, Span)> = self.open.drain().collect();
        open.sort_unstable_by_key(|(frame, _)| *frame);
        for (frame, span) in open {
            self.frame(frame, span)?;
        }
        let end = us(self.last_ns);
        let mut described = serde_json::Map::new();
        if let Some(report) = report {
            let ejection = &report["scheduler"]["ejected"];
            if !ejection.is_null() {
                let args = json!({"violation": ejection["violation"], "frames_done": ejection["frames_done"]});
                self.instant("scheduler ejected", end, args)?;
            }
            let network = &report["network"];
            if network["frames_dropped"].as_u64().is_some_and(|n| n > 0) {
                let args =
                    json!({"frames_dropped": network["frames_dropped"], "packets_dropped": network["packets_dropped"]});
                self.instant("network drops", end, args)?;
            }
            let args = json!({"status": report["status"], "error": report["error"], "frames": report["frames"]});
            self.instant("run ends", end, args)?;
            for key in
                ["graph", "scheduler", "workers", "slots", "frames", "frames_excluded", "status", "tomii_version"]
            {
                let value = if key == "scheduler" { &report[key]["name"] } else { &report[key] };
                described.insert(key.to_owned(), value.clone());
            }
        }
        write!(self.out, "\n], \"otherData\": {}}}\n", serde_json::Value::Object(described))?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn task(&mut self, r: &TaskRecord) -> std::io::Result<()> {
        let queued = r.start_ns.saturating_sub(r.ready_ns);
        self.separator()?;
        let name = self.names.get(r.node as usize).map_or("\"?\"", String::as_str);
        // Formatted directly: this is every task's line, the bulk of the file.
        write!(
            self.out,
            "{{\"ph\":\"X\",\"pid\":{WORKERS_PID},\"tid\":{},\"ts\":{},\"dur\":{},\"name\":{},\"cat\":\"task\",\
             \"args\":{{\"instance\":{},\"frame\":{},\"slot\":{},\"queued_us\":{}}}}}",
            r.worker,
            us(r.start_ns),
            us(r.end_ns.saturating_sub(r.start_ns)),
            name,
            r.instance,
            r.frame,
            r.slot,
            us(queued)
        )
    }

    fn frame(&mut self, frame: u64, span: Span) -> std::io::Result<()> {
        if frame == self.layout.warmup_frames && frame > 0 {
            self.instant("warm-up ends", us(span.first_ready_ns), json!({"warmup_frames": frame}))?;
        }
        let name = format!("frame {frame}");
        let event = json!({
            "ph": "X", "pid": FRAMES_PID, "tid": span.slot, "name": name, "cat": "frame",
            "ts": us(span.first_ready_ns), "dur": us(span.last_end_ns.saturating_sub(span.first_ready_ns)),
            "args": {"frame": frame, "tasks": span.tasks, "warm_up": frame < self.layout.warmup_frames}
        });
        self.event(&event)
    }

    fn instant(&mut self, name: &str, ts: f64, args: serde_json::Value) -> std::io::Result<()> {
        self.event(&json!({"ph": "i", "s": "g", "pid": WORKERS_PID, "tid": 0, "ts": ts, "name": name, "cat": "run", "args": args}))
    }

    fn event(&mut self, event: &serde_json::Value) -> std::io::Result<()> {
        self.separator()?;
        serde_json::to_writer(&mut self.out, event).map_err(std::io::Error::other)
    }

    fn separator(&mut self) -> std::io::Result<()> {
        if !std::mem::take(&mut self.first) {
            self.out.write_all(b",\n")?;
        }
        Ok(())
    }
}

/// Nanoseconds as the microseconds of a trace event.
fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

impl ChromeLayout {
    /// The lanes and frames of a run of `graph` with `config`.
    pub fn of(graph: &CompiledGraph, config: &RunConfig) -> Self {
        ChromeLayout::new(graph, (config.workers, config.slots), config.warmup_frames)
    }

    /// The lanes and frames of a run of `graph` on `workers` workers and `slots` slots.
    pub fn new(graph: &CompiledGraph, (workers, slots): (u32, u32), warmup_frames: u64) -> Self {
        ChromeLayout {
            node_names: graph.nodes.iter().map(|node| node.name.clone()).collect(),
            workers,
            slots,
            tasks_per_frame: (graph.instance_count() - graph.inputs.len()) as u64,
            warmup_frames,
        }
    }
}

/// A Chrome trace file written from a run's trace taps (`RunConfig::trace_taps`) as the trace
/// streams in; [`ChromeTraceFile::finish`] ends it with the report.
pub struct ChromeTraceFile {
    path: PathBuf,
    state: Arc<Mutex<Writing>>,
}

enum Writing {
    Open(ChromeTrace<BufWriter<std::fs::File>>),
    /// The first write error; nothing is written after it.
    Failed(String),
    Done,
}

impl ChromeTraceFile {
    /// Creates the file and writes its header.
    pub fn create(path: &Path, layout: ChromeLayout) -> Result<Self, String> {
        let failed = |error: std::io::Error| format!("{}: cannot write the trace: {error}", path.display());
        let file = std::fs::File::create(path).map_err(failed)?;
        let trace = ChromeTrace::begin(BufWriter::with_capacity(1 << 20, file), layout).map_err(failed)?;
        Ok(ChromeTraceFile { path: path.to_owned(), state: Arc::new(Mutex::new(Writing::Open(trace))) })
    }

    /// The tap that writes the trace's records here.
    pub fn tap(&self) -> TraceTap {
        let (state, path) = (Arc::clone(&self.state), self.path.clone());
        TraceTap(Arc::new(move |records: &[TaskRecord]| {
            let mut state = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let Writing::Open(trace) = &mut *state else { return };
            if let Err(error) = trace.records(records) {
                *state = Writing::Failed(format!("{}: cannot write the trace: {error}", path.display()));
            }
        }))
    }

    /// Ends the file with the run's `report` (None: the run failed before it had one); the first
    /// write error, if any.
    pub fn finish(&self, report: Option<&super::Report>) -> Result<(), String> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match std::mem::replace(&mut *state, Writing::Done) {
            Writing::Open(trace) => {
                let report = report.map(serde_json::to_value).transpose().map_err(|e| e.to_string())?;
                trace
                    .finish(report.as_ref())
                    .map(drop)
                    .map_err(|error| format!("{}: cannot write the trace: {error}", self.path.display()))
            }
            Writing::Failed(error) => Err(error),
            Writing::Done => Ok(()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}
