//! Tomii 1.2's two files about a run, which its users' scripts read: the timing file (`--timing
//! FILE`: plain-text statistics) and the scheduler record (`--record FILE`: Tomii 1.2's CSV rows: task
//! executions, latencies, resolutions, dispatches, packets). Both are made from the run's trace through trace taps (`RunConfig::trace_taps`),
//! on the host thread, chunk by chunk as the trace streams in: the workers record exactly what
//! they record for `--trace` (the record adds each task's resolution time and the engine's frame
//! starts and packets, measured only when a record is written), and memory stays constant however
//! long the run. The repository's
//! README.md, "Tomii 1.2's timing file and scheduler record", gives both layouts.
//!
//! Nothing here runs on a worker; a write error is kept and reported once, when the file is done.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::engine::{RecordTap, RecordTapRef, Report, RunConfig, SystemKind, SystemRecord, TaskRecord, TraceTap};
use crate::graph::CompiledGraph;

/// The scheduler record, written row by row as the trace comes in (rows in the order workers hand
/// them over: sort by `start_ns` for time order), with the row kinds Tomii 1.2 wrote (README.md,
/// "Tomii 1.2's timing file and scheduler record"): task executions, scheduling latencies,
/// dependency resolutions, frame dispatches and packets.
pub struct Record {
    path: PathBuf,
    out: Arc<Mutex<RecordOut>>,
}

struct RecordOut {
    file: Option<std::io::BufWriter<std::fs::File>>,
    /// The first write error; nothing is written after it.
    error: Option<String>,
    rows: Rows,
    /// System activities the engine's log had no room for.
    lost: u64,
}

/// How records become rows: Tomii 1.2's ids, slots and worker numbers for this graph and run.
struct Rows {
    /// Per node: its Tomii 1.2 id (with a network, `$network` is 0 and the nodes follow from 1).
    ids: Vec<u32>,
    /// Task slots; system slots follow from here (`slots + worker`), then the packet slot.
    slots: u32,
    /// Per worker: the number the `worker` column gives it (its CPU when workers are pinned).
    workers: Vec<u64>,
    /// Only this frame's rows, if given (Tomii 1.2's `--record-stream`).
    frame: Option<u64>,
}

/// Tomii 1.2's `IdType::MAX`: the resolution row's task id, and the base of latency rows' ids.
pub const RESOLUTION_ID: u32 = 65535;
/// The dispatch row's task id.
pub const DISPATCH_ID: u32 = 65534;
/// The packet row's task id.
pub const PACKET_ID: u32 = 0;
/// The largest node id whose latency rows 1.2's scripts recognise (`offset / 3` in 1..=999).
pub const MAX_LATENCY_NODE: u32 = 999;

impl Rows {
    fn new(graph: &CompiledGraph, config: &RunConfig, frame: Option<u64>) -> Rows {
        let network = graph.network.as_ref().map(|n| n.input);
        let mut next = u32::from(network.is_some());
        let ids = (0..graph.nodes.len() as u32)
            .map(|node| {
                if Some(node) == network {
                    return 0;
                }
                next += 1;
                next - 1
            })
            .collect();
        // The engine pins worker `w` to the `w mod n`-th CPU this thread may use (affinity.rs).
        let cpus = config.pin_workers.then(crate::engine::Placement::of_this_thread).and_then(Result::ok);
        let workers = (0..=config.workers)
            .map(|w| cpus.as_ref().filter(|_| w < config.workers).map_or(u64::from(w), |p| p.cpu_of(w) as u64))
            .collect();
        Rows { ids, slots: config.slots, workers, frame }
    }

    /// The `worker` column of `worker` (the host thread: one past the last worker).
    fn worker(&self, worker: u32) -> u64 {
        let host = self.workers.len() - 1;
        self.workers[(worker as usize).min(host)]
    }

    /// The system slot of `worker`'s own scheduling work (the host's: the first).
    fn system_slot(&self, worker: u32) -> u32 {
        let workers = self.workers.len() as u32 - 1;
        self.slots + if worker < workers { worker } else { 0 }
    }

    /// The rows of task records: each execution, its scheduling latency (ready → start) and the
    /// dependency resolution after it (end → its successors pushed), where measured.
    fn tasks(&self, file: &mut impl std::io::Write, records: &[TaskRecord], resolved: &[u64]) -> std::io::Result<()> {
        for (r, &resolved_ns) in records.iter().zip(resolved.iter().chain(std::iter::repeat(&0))) {
            if self.frame.is_some_and(|frame| r.frame != frame) {
                continue;
            }
            let (worker, id) = (self.worker(r.worker), self.ids[r.node as usize]);
            writeln!(file, "{},{},{},{},{worker},{id},{}", r.slot, r.frame, r.start_ns, r.end_ns, r.instance)?;
            // In the executing worker's system slot, not the task's: 1.2's average_time counts
            // every row of a worker slot as busy time, and a task waits while others run.
            let slot = self.system_slot(r.worker);
            if (1..=MAX_LATENCY_NODE).contains(&id) && r.ready_ns <= r.start_ns {
                let latency = RESOLUTION_ID - 3 * id;
                writeln!(file, "{slot},{},{},{},{worker},{latency},{}", r.frame, r.ready_ns, r.start_ns, r.instance)?;
            }
            if resolved_ns >= r.end_ns && resolved_ns > 0 {
                writeln!(file, "{slot},{},{},{resolved_ns},{worker},{RESOLUTION_ID},0", r.frame, r.end_ns)?;
            }
        }
        Ok(())
    }

    /// The rows of the engine's other activities: frame dispatches and packets.
    fn system(&self, file: &mut impl std::io::Write, records: &[SystemRecord]) -> std::io::Result<()> {
        for r in records.iter().filter(|r| self.frame.is_none_or(|frame| r.frame == frame)) {
            let worker = self.worker(r.worker);
            let (slot, id, index) = match r.kind {
                SystemKind::Dispatch => (self.system_slot(r.worker), DISPATCH_ID, 0),
                SystemKind::Delivery => (self.slots + self.workers.len() as u32 - 1, PACKET_ID, r.instance),
            };
            writeln!(file, "{slot},{},{},{},{worker},{id},{index}", r.frame, r.start_ns, r.end_ns)?;
        }
        Ok(())
    }
}

impl Record {
    /// The CSV's header: `job_id` is the frame, `task_id` the node's Tomii 1.2 id (or a system
    /// row's), `index` the instance of that node, times in ns since the run started.
    pub const HEADER: &'static str = "slot,job_id,start_ns,end_ns,worker,task_id,index";

    /// Creates the file for a run of `graph` with `config` and writes its header; with `frame`,
    /// only that frame's rows follow.
    pub fn create(
        path: &Path,
        graph: &CompiledGraph,
        config: &RunConfig,
        frame: Option<u64>,
    ) -> Result<Record, String> {
        let failed = |error: std::io::Error| format!("{}: cannot write the scheduler record: {error}", path.display());
        let mut file = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).map_err(failed)?);
        writeln!(file, "{}", Self::HEADER).map_err(failed)?;
        let out = RecordOut { file: Some(file), error: None, rows: Rows::new(graph, config, frame), lost: 0 };
        Ok(Record { path: path.to_owned(), out: Arc::new(Mutex::new(out)) })
    }

    /// The tap that writes the trace's records and the engine's activities here.
    pub fn tap(&self) -> RecordTapRef {
        RecordTapRef(Arc::new(RecordWriter { out: Arc::clone(&self.out), path: self.path.clone() }))
    }

    /// Flushes the file; the first write error, if any.
    pub fn finish(&self) -> Result<(), String> {
        let mut out = lock(&self.out);
        if let Some(mut file) = out.file.take()
            && let Err(error) = file.flush()
        {
            out.error = Some(format!("{}: cannot write the scheduler record: {error}", self.path.display()));
        }
        out.error.clone().map_or(Ok(()), Err)
    }

    /// Frame dispatches and packets the run did but the record could not keep (the host thread
    /// fell behind the engine's log of them).
    pub fn lost(&self) -> u64 {
        lock(&self.out).lost
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The record's tap.
struct RecordWriter {
    out: Arc<Mutex<RecordOut>>,
    path: PathBuf,
}

impl RecordWriter {
    fn write(&self, rows: impl FnOnce(&Rows, &mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>) {
        let mut out = lock(&self.out);
        let RecordOut { file, rows: layout, .. } = &mut *out;
        let Some(file) = file else { return };
        if let Err(error) = rows(layout, file) {
            out.error = Some(format!("{}: cannot write the scheduler record: {error}", self.path.display()));
            out.file = None;
        }
    }
}

impl RecordTap for RecordWriter {
    fn tasks(&self, records: &[TaskRecord], resolved_ns: &[u64]) {
        self.write(|rows, file| rows.tasks(file, records, resolved_ns));
    }

    fn system(&self, records: &[SystemRecord], lost: u64) {
        lock(&self.out).lost = lost;
        self.write(|rows, file| rows.system(file, records));
    }
}

/// The timing file: per-node execution times gathered from the trace (warm-up frames left out),
/// the frame figures from the report, written when the run is over.
#[derive(Clone)]
pub struct Timing {
    path: PathBuf,
    stats: Arc<Mutex<Stats>>,
}

/// What the trace says, gathered as it comes in.
struct Stats {
    warmup: u64,
    names: Vec<String>,
    /// The node whose instance 0 runs once in every frame: its records count frames per slot.
    marker: Option<u32>,
    /// Frames per slot, warm-up included.
    per_slot: Vec<u64>,
    nodes: Vec<NodeTimes>,
}

/// The executions of one node in the frames after the warm-up.
#[derive(Clone, Default)]
struct NodeTimes {
    count: u64,
    total_ns: u64,
    /// Sum of squared durations, for the standard deviation.
    square_ns: f64,
    min_ns: u64,
    max_ns: u64,
    /// Per worker: executions and their summed time.
    per_worker: Vec<(u64, u64)>,
}

impl Timing {
    /// A timing file for a run of `graph` with `config`, written to `path` by [`Timing::write`].
    pub fn new(path: &Path, graph: &CompiledGraph, config: &RunConfig) -> Timing {
        let node = NodeTimes { per_worker: vec![(0, 0); config.workers as usize], ..NodeTimes::default() };
        let stats = Stats {
            warmup: config.warmup_frames,
            names: graph.nodes.iter().map(|n| n.name.clone()).collect(),
            marker: graph.nodes.iter().position(|n| !n.input).map(|i| i as u32),
            per_slot: vec![0; config.slots as usize],
            nodes: vec![node; graph.nodes.len()],
        };
        Timing { path: path.to_owned(), stats: Arc::new(Mutex::new(stats)) }
    }

    /// The tap that gathers the trace's figures.
    pub fn tap(&self) -> TraceTap {
        let stats = Arc::clone(&self.stats);
        TraceTap(Arc::new(move |records: &[TaskRecord]| lock(&stats).take(records)))
    }

    /// Writes the file: what the trace gathered, and `report`'s frame figures.
    pub fn write(&self, report: &Report) -> Result<(), String> {
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let text = lock(&self.stats).text(&name, report);
        std::fs::write(&self.path, text)
            .map_err(|error| format!("{}: cannot write the timing file: {error}", self.path.display()))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Tomii 1.2's separator line.
const FILLER: &str = "****************";

impl Stats {
    fn take(&mut self, records: &[TaskRecord]) {
        for r in records {
            if Some(r.node) == self.marker && r.instance == 0 {
                self.per_slot[r.slot as usize] += 1;
            }
            if r.frame < self.warmup {
                continue;
            }
            let ns = r.end_ns.saturating_sub(r.start_ns);
            let node = &mut self.nodes[r.node as usize];
            node.min_ns = if node.count == 0 { ns } else { node.min_ns.min(ns) };
            node.max_ns = node.max_ns.max(ns);
            node.count += 1;
            node.total_ns += ns;
            node.square_ns += (ns as f64) * (ns as f64);
            let worker = &mut node.per_worker[r.worker as usize];
            worker.0 += 1;
            worker.1 += ns;
        }
    }

    fn text(&self, name: &str, report: &Report) -> String {
        let slots = self.per_slot.len();
        let mut out = format!(
            "Time Statistics for {name}\nTotal Slots: {slots}\nTiming Method: cycle counter (quanta)\n\
             Worker Slots: 0..{slots}, System Thread Slots: {slots}..{slots}\n"
        );
        self.summary(&mut out, report);
        self.per_task(&mut out, report.frames);
        out
    }

    /// The "Aggregated Statistics" block: frames, their latency, the compute time.
    fn summary(&self, out: &mut String, report: &Report) {
        let measured = report.frames;
        let _ = writeln!(out, "{FILLER}\nAggregated Statistics (All Slots):");
        let _ = writeln!(out, "  Total Streams Processed: {}", measured + report.frames_excluded);
        let per_slot: Vec<String> = self.per_slot.iter().enumerate().map(|(s, n)| format!("Slot {s}: {n}")).collect();
        let _ = writeln!(out, "  Streams per Slot: {}", per_slot.join(", "));
        if report.frames_excluded > 0 {
            let _ = writeln!(
                out,
                "  Excluded Streams (warm-up): {} (Steady-state: {measured} streams)",
                report.frames_excluded
            );
        }
        if measured == 0 {
            return;
        }
        let latency = &report.latency_us;
        let compute: u64 = self.nodes.iter().map(|n| n.total_ns).sum();
        let _ = writeln!(out, "  Total Runtime: {}", from_us(report.wall_time_s * 1e6));
        let _ = writeln!(out, "  Avg Time Per Stream: {} (std: {})", from_us(latency.mean), from_us(latency.stdev));
        let _ = writeln!(out, "  Min/Max Per Stream: {} / {}", from_us(latency.min), from_us(latency.max));
        let _ = writeln!(out, "  Total Compute Time: {}", ns(compute));
        let _ = writeln!(out, "  Avg Compute Time Per Stream: {}", ns(compute / measured));
    }

    /// The "Per-Task Analysis" block: one entry per node that ran, by name.
    fn per_task(&self, out: &mut String, measured: u64) {
        let _ = writeln!(out, "{FILLER}\nPer-Task Analysis (Aggregated):");
        let mut ran: Vec<(&String, &NodeTimes)> =
            self.names.iter().zip(&self.nodes).filter(|(_, n)| n.count > 0).collect();
        ran.sort_by_key(|(name, _)| *name);
        for (name, node) in ran {
            let workers: Vec<String> = node
                .per_worker
                .iter()
                .enumerate()
                .filter(|(_, (count, _))| *count > 0)
                .map(|(w, &(count, total))| {
                    let pct = 100.0 * count as f64 / node.count as f64;
                    format!("W-{w}: {count} ({pct:.1}%) - {}", ns(total))
                })
                .collect();
            let mean = node.total_ns as f64 / node.count as f64;
            let std = (node.square_ns / node.count as f64 - mean * mean).max(0.0).sqrt();
            let _ = writeln!(out, "  {FILLER}");
            let _ = writeln!(out, "  Task '{name}' - Workers: {}, Total Executions: {}", workers.len(), node.count);
            let _ = writeln!(
                out,
                "    Timing - Avg/Stream: {}, Avg/Task: {}, Std: {}, Min: {}, Max: {}, Total: {}",
                ns(node.total_ns / measured.max(1)),
                ns(node.total_ns / node.count),
                ns(std.round() as u64),
                ns(node.min_ns),
                ns(node.max_ns),
                ns(node.total_ns)
            );
            let _ = writeln!(out, "    Worker Summary: {}", workers.join(", "));
        }
    }
}

/// A duration as Tomii 1.2 wrote them: Rust's `{:.4?}` of a `Duration` (`12.3456µs`, `1.5000ms`).
fn ns(ns: u64) -> String {
    format!("{:.4?}", Duration::from_nanos(ns))
}

fn from_us(us: f64) -> String {
    ns((us * 1e3).round() as u64)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_as_tomii_1_2_wrote_them() {
        assert_eq!(ns(1_500_000), "1.5000ms");
        assert_eq!(ns(12_345), "12.3450µs");
        assert_eq!(ns(2_000_000_000), "2.0000s");
        assert_eq!(from_us(0.75), "750.0000ns");
    }
}
