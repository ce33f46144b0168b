//! The execution trace: one record per task execution, written by the worker that ran it into
//! memory reserved before the run, and merged and written out after it.
//!
//! Recording never allocates: each worker fills fixed-size chunks taken from a pool sized at start
//! for every task of the run. Formatting happens only in `write_csv`, after the run.

use std::io::Write;
use std::path::Path;

use crossbeam_queue::ArrayQueue;

use super::clock::{Clock, Ticks};

/// Records per chunk.
const CHUNK: usize = 4096;

/// One task execution. Times are clock ticks during the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceRecord {
    pub frame: u64,
    pub ready: Ticks,
    pub start: Ticks,
    pub end: Ticks,
    pub node: u32,
    pub instance: u32,
    pub slot: u32,
    pub worker: u32,
}

/// Chunks reserved for a run, shared by the workers.
pub struct TracePool {
    chunks: ArrayQueue<Vec<TraceRecord>>,
}

impl TracePool {
    /// Reserves room for `tasks` records spread over `workers` workers in any proportion.
    pub fn new(tasks: u64, workers: u32) -> Self {
        let count = (tasks as usize).div_ceil(CHUNK) + workers as usize;
        let chunks = ArrayQueue::new(count.max(1));
        for _ in 0..count {
            let _ = chunks.push(Vec::with_capacity(CHUNK));
        }
        TracePool { chunks }
    }

    fn take(&self) -> Vec<TraceRecord> {
        // The pool covers every task of the run, so it only runs dry if the engine ran more tasks
        // than it planned; allocating then keeps the record rather than losing it.
        self.chunks.pop().unwrap_or_else(|| Vec::with_capacity(CHUNK))
    }
}

/// One worker's records.
#[derive(Default)]
pub struct WorkerTrace {
    full: Vec<Vec<TraceRecord>>,
    current: Vec<TraceRecord>,
}

impl WorkerTrace {
    #[inline]
    pub fn record(&mut self, pool: &TracePool, record: TraceRecord) {
        if self.current.len() == self.current.capacity() {
            self.refill(pool);
        }
        self.current.push(record);
    }

    #[cold]
    fn refill(&mut self, pool: &TracePool) {
        let next = pool.take();
        let done = std::mem::replace(&mut self.current, next);
        if !done.is_empty() {
            self.full.push(done);
        }
    }

    pub fn into_records(self) -> impl Iterator<Item = TraceRecord> {
        self.full.into_iter().chain(std::iter::once(self.current)).flatten()
    }
}

/// Writes records as CSV, sorted by start time, with times in nanoseconds since the run started.
pub fn write_csv(path: &Path, records: &[TraceRecord], node_names: &[String], clock: &Clock) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut out = std::io::BufWriter::new(file);
    writeln!(out, "node,instance,frame,slot,worker,ready_ns,start_ns,end_ns")?;
    let names: Vec<String> = node_names.iter().map(|name| csv_field(name)).collect();
    for r in records {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{}",
            names[r.node as usize],
            r.instance,
            r.frame,
            r.slot,
            r.worker,
            clock.ns_since_start(r.ready),
            clock.ns_since_start(r.start),
            clock.ns_since_start(r.end)
        )?;
    }
    out.flush()
}

/// A CSV field: quoted, with inner quotes doubled, when it holds a separator or a quote.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_owned() }
}
