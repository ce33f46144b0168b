//! Record and replay of scheduling decisions (`--record-decisions FILE`, `tomii replay FILE`).
//!
//! **The file.** One JSON line, the header: the format and its version, how the run was made (a
//! real run or a simulation), the graph itself in the current format, the knobs, the scheduler's
//! identity (name, path, size) and its options, the kernel libraries, and for a simulation its
//! seed, cost model and arrivals. Then one line per task execution, `worker,frame,node,instance,
//! start_ns,end_ns` (node: its index in the graph; instance: its index in the node), each worker's in the
//! order it ran them. It is written from the trace as it streams in (a trace tap: nothing is
//! added to the hot path), so it costs what recording a trace costs. Last, when the run's files are
//! ended, one JSON line says how the run ended, `{"end": {"status", "error", "frames", "tasks"}}`
//! ([`Ending`], from the report: "completed", "interrupted", or "failed" with the run's error). A
//! checker that found a problem in the recorded run (`tomii.check`) may append one more,
//! `{"found": {"by", "problems"}}` ([`Found`]). A file without an ending (version 1, or a process
//! that died mid-run) replays all the same. A replay reads it only when it is a regular file of at
//! most 1 GiB ([`MAX_FILE_BYTES`]).
//!
//! **Replay.** `tomii replay FILE` runs the same graph with the same knobs, on the real engine or
//! in simulation, with the replay scheduler (schedulers/replay, `libtomii_replay.so`,
//! option `decisions=FILE`): it holds
//! every pushed task and hands each worker the tasks it ran, in the recorded order, and nothing
//! else. Every push then wakes every sleeping worker (`RunConfig::wake_all_on_push`), since only
//! the scheduler knows which worker a task waits for. The replay's trace is compared with the
//! file worker by worker; the first task where they differ is named (`diverged`), and a replay
//! that cannot go on (the recorded task is never made ready) says which worker waits for what.
//! A recording that ends with a failure (a lost task, a broken contract, a kernel's error) or with
//! a checker's finding is replayed to that point and compared: the replay says the violation and
//! whether it reproduced it (every recorded task in the recorded order, and, after a failure, the
//! replay stopped where the recording stops, naming the tasks left ready and never run).

use std::collections::BTreeMap;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::engine::{Report, TaskRecord, TraceTap};
use crate::graph::CompiledGraph;

/// The header's `format`.
pub const FORMAT: &str = "tomii-decisions";
/// The header's `version` (2: the file ends with how the run ended); a file of a version outside
/// [`OLDEST_VERSION`]..=[`VERSION`] is refused, naming them.
pub const VERSION: u32 = 2;
/// The oldest version read (1: without an ending line).
pub const OLDEST_VERSION: u32 = 1;
/// The largest decisions file read (1 GiB, some 30 million decisions): a bigger one is refused
/// before it is read.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// How the recorded run was made, and what a replay needs to make it again.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Header {
    pub format: String,
    pub version: u32,
    /// "run" (the engine) or "simulate".
    pub mode: String,
    /// The graph file it came from (for messages).
    pub graph_source: String,
    /// The graph, in the current format.
    pub graph: serde_json::Value,
    pub workers: u32,
    pub slots: u32,
    pub frames: u64,
    pub warmup_frames: u64,
    pub pop_batch: u32,
    pub scheduler: SchedulerIdentity,
    pub scheduler_options: Vec<(String, String)>,
    /// Kernel libraries of a real run.
    #[serde(default)]
    pub dylibs: Vec<PathBuf>,
    /// A simulation's seed, cost model (its JSON) and arrival interval.
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub cost_model: Option<serde_json::Value>,
    #[serde(default)]
    pub arrival_interval_ns: Option<u64>,
}

/// How the recorded run ended: the file's `{"end": ...}` line, from the run's report.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Ending {
    /// The report's status: "completed", "interrupted" or "failed".
    pub status: String,
    /// Why it failed (status "failed"): the run's error.
    #[serde(default)]
    pub error: Option<String>,
    /// Frames and tasks completed (warm-up frames included).
    #[serde(default)]
    pub frames: u64,
    #[serde(default)]
    pub tasks: u64,
}

impl Ending {
    /// The ending of a run with `report`.
    pub fn of(report: &Report) -> Ending {
        Ending {
            status: report.status.to_owned(),
            error: report.error.clone(),
            frames: report.frames + report.frames_excluded,
            tasks: report.tasks,
        }
    }

    pub fn failed(&self) -> bool {
        self.status == "failed"
    }
}

/// What a checker (`tomii.check`) found wrong in the recorded run: the file's `{"found": ...}`
/// line, appended after the run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Found {
    /// Who found it, as a message names it (`tomii.check property "outputs"`).
    pub by: String,
    pub problems: Vec<String>,
}

/// A JSON line after the decisions.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
enum Trailer {
    End(Ending),
    Found(Found),
}

/// Which scheduler made the decisions.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SchedulerIdentity {
    pub name: String,
    pub path: PathBuf,
    /// The library's size in bytes when it was recorded (a changed library is named on replay).
    pub size: u64,
}

impl SchedulerIdentity {
    pub fn of(name: &str, path: &Path) -> Self {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        SchedulerIdentity { name: name.to_owned(), path: path.to_owned(), size }
    }
}

/// One recorded decision: `worker` ran `instance` of `node` in `frame`, from `start_ns` to
/// `end_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub worker: u32,
    pub frame: u64,
    pub node: u32,
    pub instance: u32,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl Decision {
    /// What it ran, as a message names it: `node[instance] of frame F`.
    pub fn describe(&self, graph: &CompiledGraph) -> String {
        let name = graph.nodes.get(self.node as usize).map_or("?", |node| node.name.as_str());
        format!("{name}[{}] of frame {}", self.instance, self.frame)
    }

    fn same_task(&self, other: &Decision) -> bool {
        (self.frame, self.node, self.instance) == (other.frame, other.node, other.instance)
    }
}

/// A decisions file being written from the trace.
pub struct DecisionsFile {
    path: PathBuf,
    out: Arc<Mutex<Writing>>,
}

struct Writing {
    file: Option<BufWriter<std::fs::File>>,
    error: Option<String>,
}

impl DecisionsFile {
    /// Creates the file and writes its header.
    pub fn create(path: &Path, header: &Header) -> Result<DecisionsFile, String> {
        let failed = |error: std::io::Error| format!("{}: cannot write the decisions: {error}", path.display());
        let mut file = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).map_err(failed)?);
        serde_json::to_writer(&mut file, header).map_err(|e| failed(e.into()))?;
        writeln!(file).map_err(failed)?;
        let out = Writing { file: Some(file), error: None };
        Ok(DecisionsFile { path: path.to_owned(), out: Arc::new(Mutex::new(out)) })
    }

    /// The tap that writes the trace's records here.
    pub fn tap(&self) -> TraceTap {
        let (out, path) = (Arc::clone(&self.out), self.path.clone());
        TraceTap(Arc::new(move |records: &[TaskRecord]| {
            let mut out = out.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let Some(file) = &mut out.file else { return };
            let written = records.iter().try_for_each(|r| {
                writeln!(file, "{},{},{},{},{},{}", r.worker, r.frame, r.node, r.instance, r.start_ns, r.end_ns)
            });
            if let Err(error) = written {
                out.error = Some(format!("{}: cannot write the decisions: {error}", path.display()));
                out.file = None;
            }
        }))
    }

    /// Ends the file with how the run of `report` ended (none: the run never started, and the
    /// file has no ending) and flushes it; the first write error, if any.
    pub fn finish(&self, report: Option<&Report>) -> Result<(), String> {
        let mut out = self.out.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(mut file) = out.file.take() {
            let ending = report.map(|report| serde_json::json!({"end": Ending::of(report)}));
            let written = ending.map_or(Ok(()), |ending| writeln!(file, "{ending}")).and_then(|()| file.flush());
            if let Err(error) = written {
                out.error = Some(format!("{}: cannot write the decisions: {error}", self.path.display()));
            }
        }
        out.error.clone().map_or(Ok(()), Err)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A decisions file, read: its header, each worker's decisions in order, how the run ended and
/// what a checker found in it (when the file says).
pub struct Recorded {
    pub header: Header,
    pub by_worker: BTreeMap<u32, Vec<Decision>>,
    pub ending: Option<Ending>,
    pub found: Option<Found>,
}

impl Recorded {
    /// Reads the file at `path`, a regular file of at most [`MAX_FILE_BYTES`] (`files::open_input`);
    /// the header's workers, slots and pop batch are checked against the catalog's ranges as given
    /// options are. Errors name the file and the line.
    pub fn read(path: &Path) -> Result<Recorded, String> {
        let at = |line: usize, what: String| format!("{}: line {line}: {what}", path.display());
        let file = crate::files::open_input(path, MAX_FILE_BYTES).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut lines = std::io::BufReader::new(file).lines();
        let first = lines.next().transpose().map_err(|e| at(1, e.to_string()))?.unwrap_or_default();
        let header: Header = serde_json::from_str(&first).map_err(|e| {
            at(1, format!("not the header of a decisions file ({e}); record one with --record-decisions"))
        })?;
        if header.format != FORMAT {
            return Err(at(1, format!("format {:?} is not {FORMAT:?}", header.format)));
        }
        if !(OLDEST_VERSION..=VERSION).contains(&header.version) {
            return Err(at(
                1,
                format!(
                    "version {} of the decisions format; this runtime reads versions {OLDEST_VERSION} to {VERSION}",
                    header.version
                ),
            ));
        }
        // The sizes that drive allocations, within the catalog's ranges (a replay runs with a pop
        // batch of 1, but a header outside them was not written by this runtime).
        let sizes = [("workers", header.workers), ("slots", header.slots), ("pop_batch", header.pop_batch)];
        for (name, value) in sizes.map(|(name, value)| (name, u64::from(value))) {
            crate::knobs::check_int(name, value).map_err(|error| at(1, error))?;
        }
        let mut recorded = Recorded { header, by_worker: BTreeMap::new(), ending: None, found: None };
        for (index, line) in lines.enumerate() {
            let number = index + 2;
            let line = line.map_err(|e| at(number, e.to_string()))?;
            if line.is_empty() {
                continue;
            }
            if line.starts_with('{') {
                let trailer = serde_json::from_str(&line).map_err(|e| {
                    at(
                        number,
                        format!(
                            "not the run's ending ({{\"end\": ...}}) nor a checker's finding ({{\"found\": ...}}): {e}"
                        ),
                    )
                })?;
                match trailer {
                    Trailer::End(ending) => recorded.ending = Some(ending),
                    Trailer::Found(found) => recorded.found = Some(found),
                }
                continue;
            }
            let decision =
                parse_row(&line).ok_or_else(|| at(number, "not worker,frame,node,instance,start_ns,end_ns".into()))?;
            recorded.by_worker.entry(decision.worker).or_default().push(decision);
        }
        Ok(recorded)
    }
}

fn parse_row(line: &str) -> Option<Decision> {
    let mut fields = line.split(',');
    let mut next = || fields.next()?.trim().parse::<u64>().ok();
    let decision = Decision {
        worker: u32::try_from(next()?).ok()?,
        frame: next()?,
        node: u32::try_from(next()?).ok()?,
        instance: u32::try_from(next()?).ok()?,
        start_ns: next()?,
        end_ns: next()?,
    };
    Some(decision)
}

/// Each worker's decisions in a trace (the trace of a replay), in the order it ran them.
pub fn decisions_of(trace: &[TaskRecord]) -> BTreeMap<u32, Vec<Decision>> {
    let mut by_worker: BTreeMap<u32, Vec<Decision>> = BTreeMap::new();
    for r in trace {
        let decision = Decision {
            worker: r.worker,
            frame: r.frame,
            node: r.node,
            instance: r.instance,
            start_ns: r.start_ns,
            end_ns: r.end_ns,
        };
        by_worker.entry(r.worker).or_default().push(decision);
    }
    for decisions in by_worker.values_mut() {
        decisions.sort_by_key(|d| d.start_ns);
    }
    by_worker
}

/// Where a replay first differs from the recording, worker by worker; `None`: the same tasks in
/// the same order on every worker.
pub fn divergence(
    graph: &CompiledGraph,
    recorded: &BTreeMap<u32, Vec<Decision>>,
    replayed: &BTreeMap<u32, Vec<Decision>>,
) -> Option<String> {
    let workers: std::collections::BTreeSet<u32> = recorded.keys().chain(replayed.keys()).copied().collect();
    for worker in workers {
        let (was, now) = (
            recorded.get(&worker).map_or(&[][..], Vec::as_slice),
            replayed.get(&worker).map_or(&[][..], Vec::as_slice),
        );
        for (k, pair) in was.iter().zip(now).enumerate() {
            if !pair.0.same_task(pair.1) {
                return Some(format!(
                    "worker {worker}, its task #{}: recorded {}, replayed {}",
                    k + 1,
                    pair.0.describe(graph),
                    pair.1.describe(graph)
                ));
            }
        }
        if was.len() != now.len() {
            let (longer, what) =
                if was.len() > now.len() { (was, "was not replayed") } else { (now, "was not recorded") };
            let extra = &longer[was.len().min(now.len())];
            return Some(format!(
                "worker {worker}, its task #{}: {} {what} ({} recorded, {} replayed)",
                was.len().min(now.len()) + 1,
                extra.describe(graph),
                was.len(),
                now.len()
            ));
        }
    }
    None
}

impl Recorded {
    /// Each node's recorded durations, as a cost model of samples (a real run replayed in
    /// simulation runs each task as long as the recording says the node's tasks ran).
    pub fn durations(&self, graph: &CompiledGraph) -> crate::sim::CostSpec {
        let mut nodes: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for decision in self.by_worker.values().flatten() {
            if let Some(node) = graph.nodes.get(decision.node as usize) {
                nodes.entry(node.name.clone()).or_default().push(decision.end_ns.saturating_sub(decision.start_ns));
            }
        }
        let nodes = nodes.into_iter().map(|(name, ns)| (name, crate::sim::Dist::Samples { ns })).collect();
        crate::sim::CostSpec { default: Some(crate::sim::Dist::Fixed { ns: 0 }), nodes }
    }
}
