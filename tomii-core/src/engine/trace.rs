//! The execution trace: one record per task execution, written by the worker that ran it into a
//! chunk of preallocated memory, and handed to the host thread chunk by chunk while the run goes
//! on (README.md, "Trace and counters"). The host streams full chunks to the trace file and keeps
//! them in memory, up to a bound: the trace of a run without end takes constant memory.
//!
//! Recording never allocates: a worker fills a chunk taken from the pool, hands it to the host when
//! it is full and takes an empty one. No record is ever dropped: if the host has fallen so far
//! behind that the pool is empty, the worker waits until the host gives a chunk back (the trace
//! then sets the run's pace, and the report's `trace_wait_s` says how long the workers waited).
//! The wait is outside every call the watchdog marks, so a worker waiting for the trace is never
//! taken for a stuck one, and the host takes chunks for a bounded time between its looks at the
//! run ([`TraceSink::drain_for`]), so a backlog never delays a stop or the watchdog. Only once the
//! host has stopped taking chunks ([`TracePool::close`]) does a worker count its records lost.
//! Formatting happens only on the host thread, and so do trace taps ([`TraceTap`]): other writers
//! of the trace, handed each chunk as the host takes it. The host turns each chunk into the
//! exported record ([`TaskRecord`], in ns) once, for the CSV file and every tap.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering, fence};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;

use super::clock::{Clock, Ticks};
use super::csv_trace::CsvTrace;
use super::task_record::TaskRecord;

/// Records per chunk.
const CHUNK: usize = 4096;
/// Empty chunks per worker in the pool, besides the one each worker fills.
const CHUNKS_PER_WORKER: usize = 8;

/// One task execution, as a worker records it. Times are clock ticks during the run; the trace
/// leaves the run as [`TaskRecord`]s.
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
    /// When the worker had counted its arrivals on its successors and pushed those it made ready
    /// (the dependency resolution after it); measured only for a record tap ([`RecordTap`]), else
    /// 0. Under groups, set on the group's last member.
    pub resolved: Ticks,
}

/// What the engine does besides running tasks, as the scheduler record shows it (README.md,
/// "Trace and counters"): measured on the thread that did it, once per frame start or packet,
/// never per task, and only for a record tap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemKind {
    /// A frame started in its slot: its root tasks staged and pushed and its inputs given.
    Dispatch,
    /// One value a source delivered on its own (a network packet) given to its input instance,
    /// and the tasks it made ready pushed.
    Delivery,
}

/// One [`SystemKind`] activity, in ns since the run started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemRecord {
    pub kind: SystemKind,
    pub frame: u64,
    pub slot: u32,
    /// The worker that did it (`TOMII_NO_WORKER`: the host thread).
    pub worker: u32,
    /// The input instance's index in its input (Delivery), else 0.
    pub instance: u32,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The scheduler record's view of the trace (see `RunConfig::record_taps`), called on the host
/// thread: every chunk of task records with, per record, when its dependency resolution ended
/// (ns; 0 where none was measured), and the engine's other activities as they are taken.
pub trait RecordTap: Send + Sync {
    fn tasks(&self, records: &[TaskRecord], resolved_ns: &[u64]);
    /// `lost`: activities the log had no room for so far (the host fell behind).
    fn system(&self, records: &[SystemRecord], lost: u64);
}

/// Shared handle of a [`RecordTap`].
#[derive(Clone)]
pub struct RecordTapRef(pub Arc<dyn RecordTap>);

impl std::fmt::Debug for RecordTapRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordTap")
    }
}

/// Room for system activities between two of the host's looks; beyond it they are counted lost.
const SYSTEM_LOG: usize = 1 << 16;

/// The system activities of a run with a record tap, queued by the threads that did them (frame
/// starts, deliveries: never per task) and taken by the host thread.
pub struct SystemLog {
    queue: ArrayQueue<(SystemKind, u64, u32, u32, u32, Ticks, Ticks)>,
    lost: AtomicU64,
    host: Thread,
}

impl SystemLog {
    pub fn new(host: Thread) -> Self {
        SystemLog { queue: ArrayQueue::new(SYSTEM_LOG), lost: AtomicU64::new(0), host }
    }

    /// Logs one activity of `worker`: `kind` for (`frame`, `slot`, `instance`) from `start` to
    /// `end` (ticks). Never blocks: a full log counts it lost.
    pub fn log(
        &self,
        kind: SystemKind,
        (frame, slot, instance): (u64, u32, u32),
        worker: u32,
        (start, end): (Ticks, Ticks),
    ) {
        if self.queue.push((kind, frame, slot, worker, instance, start, end)).is_err() {
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
        if self.queue.len() == SYSTEM_LOG / 2 {
            self.host.unpark();
        }
    }

    /// Activities lost because the log was full.
    fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }
}
/// A consumer of the trace as the run goes (see `RunConfig::trace_taps`): called on the host
/// thread with every chunk of records the workers hand over, and with what is left of each
/// worker's chunk when it stops. A slow tap loses nothing but slows the run: once the pool's chunks
/// are all full, the workers wait for the host to take them (`Report::trace_wait_s`).
#[derive(Clone)]
pub struct TraceTap(pub Arc<TapFn>);

/// What a [`TraceTap`] calls with each chunk of exported records.
pub type TapFn = dyn Fn(&[TaskRecord]) + Send + Sync;

impl std::fmt::Debug for TraceTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceTap")
    }
}

/// Chunks shared between the workers and the host: empty ones to fill, full ones to take.
pub struct TracePool {
    empty: ArrayQueue<Vec<TraceRecord>>,
    full: ArrayQueue<Vec<TraceRecord>>,
    /// Records dropped because the host had stopped taking chunks ([`close`](Self::close)).
    lost: AtomicU64,
    /// Woken when a chunk is full.
    host: Thread,
    /// Workers waiting for an empty chunk ([`wait_for_empty`](Self::wait_for_empty)), on
    /// `returned`; the host notifies it when it gives a chunk back and one waits.
    waiting: AtomicU32,
    wait_lock: Mutex<()>,
    returned: Condvar,
    /// Set once the host takes no more chunks: a worker then no longer waits.
    closed: AtomicBool,
    /// Time workers waited for an empty chunk, in ns, summed over the workers.
    waited_ns: AtomicU64,
}

/// The longest a waiting worker sleeps before it looks at the pool again, should a notification
/// be missed (none is: the waiting count and the queue form a Dekker pair; see `wait_for_empty`).
const WAIT_RECHECK: Duration = Duration::from_millis(10);

impl TracePool {
    pub fn new(workers: u32, host: Thread) -> Self {
        let count = workers as usize * (CHUNKS_PER_WORKER + 1) + CHUNKS_PER_WORKER;
        let empty = ArrayQueue::new(count);
        for _ in 0..count {
            let _ = empty.push(Vec::with_capacity(CHUNK));
        }
        TracePool {
            empty,
            full: ArrayQueue::new(count + workers as usize),
            lost: AtomicU64::new(0),
            host,
            waiting: AtomicU32::new(0),
            wait_lock: Mutex::new(()),
            returned: Condvar::new(),
            closed: AtomicBool::new(false),
            waited_ns: AtomicU64::new(0),
        }
    }

    /// A chunk for a worker to fill (workers take theirs when they start, before any task).
    pub fn take_empty(&self) -> Vec<TraceRecord> {
        self.empty.pop().unwrap_or_else(|| Vec::with_capacity(CHUNK))
    }

    /// A chunk back to the pool, emptied; wakes a worker waiting for one.
    fn give_back(&self, mut chunk: Vec<TraceRecord>) {
        chunk.clear();
        let _ = self.empty.push(chunk);
        // Pairs with the fence in `wait_for_empty`: either the waiter's look at the queue finds
        // this chunk, or this load finds the waiter.
        fence(Ordering::SeqCst);
        if self.waiting.load(Ordering::Relaxed) > 0 {
            let _guard = self.wait_lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.returned.notify_one();
        }
    }

    /// Waits until the host gives an empty chunk back and takes it (the trace's back-pressure, on
    /// a worker, never inside a marked call); `None` once the pool is closed.
    #[cold]
    fn wait_for_empty(&self) -> Option<Vec<TraceRecord>> {
        let began = Instant::now();
        self.waiting.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        self.host.unpark();
        let mut guard = self.wait_lock.lock().unwrap_or_else(PoisonError::into_inner);
        let chunk = loop {
            if let Some(chunk) = self.empty.pop() {
                break Some(chunk);
            }
            if self.closed.load(Ordering::Acquire) {
                break None;
            }
            guard = self.returned.wait_timeout(guard, WAIT_RECHECK).unwrap_or_else(PoisonError::into_inner).0;
        };
        drop(guard);
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        let waited = u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.waited_ns.fetch_add(waited, Ordering::Relaxed);
        chunk
    }

    /// The host takes no more chunks (it left the run): workers stop waiting for one, and count
    /// the records they can no longer hand over as lost.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _guard = self.wait_lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.returned.notify_all();
    }

    /// Records lost so far because the host had stopped taking chunks.
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }

    /// How long workers waited for an empty chunk, summed over the workers, in seconds.
    pub fn waited_s(&self) -> f64 {
        self.waited_ns.load(Ordering::Relaxed) as f64 * 1e-9
    }
}

/// The chunk one worker fills.
pub struct WorkerTrace {
    current: Vec<TraceRecord>,
}

impl WorkerTrace {
    pub fn new(pool: Option<&TracePool>) -> Self {
        WorkerTrace { current: pool.map(TracePool::take_empty).unwrap_or_default() }
    }

    #[inline]
    pub fn record(&mut self, pool: &TracePool, record: TraceRecord) {
        if self.current.len() == CHUNK {
            self.hand_over(pool);
        }
        self.current.push(record);
    }

    /// Sets when the dependency resolution after the last record ended.
    #[inline]
    pub fn resolved(&mut self, at: Ticks) {
        if let Some(last) = self.current.last_mut() {
            last.resolved = at;
        }
    }

    #[cold]
    fn hand_over(&mut self, pool: &TracePool) {
        let next = match pool.empty.pop() {
            Some(next) => Some(next),
            None if pool.closed.load(Ordering::Acquire) => None,
            None => pool.wait_for_empty(),
        };
        match next {
            Some(next) => {
                let full = std::mem::replace(&mut self.current, next);
                // `full` has room for every chunk there is.
                let _ = pool.full.push(full);
                pool.host.unpark();
            }
            None => {
                pool.lost.fetch_add(self.current.len() as u64, Ordering::Relaxed);
                self.current.clear();
            }
        }
    }

    /// The partly filled chunk, once the worker has stopped.
    pub fn into_chunk(self) -> Vec<TraceRecord> {
        self.current
    }
}

/// Where the host puts the trace: a CSV file written as the run goes, and memory.
pub struct TraceSink {
    file: Option<(PathBuf, CsvTrace<std::io::BufWriter<std::fs::File>>)>,
    /// The first write error; the file is not written to after it.
    file_error: Option<String>,
    taps: Vec<TraceTap>,
    record_taps: Vec<RecordTapRef>,
    /// The chunk's resolution ends in ns, for the record taps.
    resolved_ns: Vec<u64>,
    /// System activities taken from the log, in ns.
    system: Vec<SystemRecord>,
    /// The chunk being taken, as exported records (for the file and the taps).
    exported: Vec<TaskRecord>,
    memory: Option<VecDeque<Vec<TraceRecord>>>,
    /// The most records kept in memory; older chunks are released beyond it.
    memory_limit: usize,
    kept: usize,
    /// Records streamed to the file, or kept, over the run.
    pub records: u64,
    /// Records released from memory to respect `memory_limit` (still in the file, if any).
    pub released: u64,
}

impl TraceSink {
    /// `file`: stream the CSV there (its header is written at once); `memory_limit`: keep up to
    /// this many records in memory (`None`: none); `taps`: hand every chunk to these too.
    pub fn new(
        file: Option<&Path>,
        memory_limit: Option<usize>,
        node_names: &[String],
        taps: Vec<TraceTap>,
    ) -> std::io::Result<Self> {
        let file = match file {
            Some(path) => {
                let out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
                Some((path.to_owned(), CsvTrace::begin(out, node_names)?))
            }
            None => None,
        };
        Ok(TraceSink {
            file,
            file_error: None,
            taps,
            record_taps: Vec::new(),
            resolved_ns: Vec::new(),
            system: Vec::new(),
            exported: Vec::new(),
            memory: memory_limit.map(|_| VecDeque::new()),
            memory_limit: memory_limit.unwrap_or(0),
            kept: 0,
            records: 0,
            released: 0,
        })
    }

    /// Hands every chunk to these record taps too.
    pub fn with_record_taps(mut self, taps: Vec<RecordTapRef>) -> Self {
        self.record_taps = taps;
        self
    }

    /// Takes the system activities logged so far and hands them to the record taps.
    pub fn drain_system(&mut self, log: &SystemLog, clock: &Clock) {
        self.system.clear();
        while let Some((kind, frame, slot, worker, instance, start, end)) = log.queue.pop() {
            let (start_ns, end_ns) = (clock.ns_since_start(start), clock.ns_since_start(end));
            self.system.push(SystemRecord { kind, frame, slot, worker, instance, start_ns, end_ns });
        }
        if !self.system.is_empty() || log.lost() > 0 {
            for tap in &self.record_taps {
                tap.0.system(&self.system, log.lost());
            }
        }
    }

    /// Takes every full chunk the workers handed over (once they have stopped: the run's end).
    pub fn drain(&mut self, pool: &TracePool, clock: &Clock) {
        while let Some(chunk) = pool.full.pop() {
            self.take(chunk, Some(pool), clock);
        }
    }

    /// Takes the full chunks the workers handed over for about `budget` at most (the chunk taken
    /// when it runs out is finished), so that the host still looks at the run while workers hand
    /// chunks over faster than it takes them. Returns whether some were left.
    pub fn drain_for(&mut self, pool: &TracePool, clock: &Clock, budget: Duration) -> bool {
        let began = Instant::now();
        while let Some(chunk) = pool.full.pop() {
            self.take(chunk, Some(pool), clock);
            if began.elapsed() >= budget {
                return !pool.full.is_empty();
            }
        }
        false
    }

    /// Takes one chunk: handed to the taps, written to the file, kept in memory, and the memory's
    /// oldest released beyond its limit. A chunk that is not kept goes back to `pool`; one that is, is replaced
    /// in it by a new allocation (here, on the host thread, never on a worker).
    pub fn take(&mut self, chunk: Vec<TraceRecord>, pool: Option<&TracePool>, clock: &Clock) {
        self.records += chunk.len() as u64;
        self.export(&chunk, clock);
        let Some(memory) = &mut self.memory else {
            if let Some(pool) = pool {
                pool.give_back(chunk);
            }
            return;
        };
        self.kept += chunk.len();
        memory.push_back(chunk);
        while self.kept > self.memory_limit
            && let Some(oldest) = memory.pop_front()
        {
            self.kept -= oldest.len();
            self.released += oldest.len() as u64;
        }
        if let Some(pool) = pool {
            pool.give_back(Vec::with_capacity(CHUNK));
        }
    }

    /// Hands `chunk`, as exported records, to the taps and the file.
    fn export(&mut self, chunk: &[TraceRecord], clock: &Clock) {
        if self.taps.is_empty() && self.record_taps.is_empty() && self.file.is_none() {
            return;
        }
        self.exported.clear();
        self.exported.extend(chunk.iter().map(|record| TaskRecord::of(record, clock)));
        for tap in &self.taps {
            (tap.0)(&self.exported);
        }
        if !self.record_taps.is_empty() {
            self.resolved_ns.clear();
            let ns = |r: &TraceRecord| if r.resolved == 0 { 0 } else { clock.ns_since_start(r.resolved) };
            self.resolved_ns.extend(chunk.iter().map(ns));
            for tap in &self.record_taps {
                tap.0.tasks(&self.exported, &self.resolved_ns);
            }
        }
        let Some((path, out)) = &mut self.file else { return };
        if let Err(error) = out.records(&self.exported) {
            self.file_error = Some(format!("{}: cannot write the trace: {error}", path.display()));
            self.file = None;
        }
    }

    /// Flushes the file; returns the first write error, if any.
    pub fn finish(&mut self) -> Result<(), String> {
        if let Some((path, out)) = self.file.take()
            && let Err(error) = out.finish()
        {
            self.file_error = Some(format!("{}: cannot write the trace: {error}", path.display()));
        }
        self.file_error.take().map_or(Ok(()), Err)
    }

    /// Takes the records kept in memory, sorted by start time.
    pub fn take_records(&mut self) -> Vec<TraceRecord> {
        let mut records: Vec<TraceRecord> = self.memory.iter_mut().flat_map(std::mem::take).flatten().collect();
        self.kept = 0;
        records.sort_unstable_by_key(|r| (r.start, r.worker));
        records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(frame: u64) -> TraceRecord {
        TraceRecord { frame, ..TraceRecord::default() }
    }

    /// A worker records far more than the pool holds while the host takes nothing: it waits for
    /// the host (never drops), and once the host takes chunks every record arrives once, in order.
    #[test]
    fn a_worker_waits_for_the_host_and_loses_nothing() {
        let pool = Arc::new(TracePool::new(1, std::thread::current()));
        let total = (CHUNK * (2 * CHUNKS_PER_WORKER + 5) + 7) as u64;
        let recorded = Arc::new(AtomicU64::new(0));
        let worker = {
            let (pool, recorded) = (Arc::clone(&pool), Arc::clone(&recorded));
            std::thread::spawn(move || {
                let mut trace = WorkerTrace::new(Some(&pool));
                for frame in 0..total {
                    trace.record(&pool, record(frame));
                    recorded.fetch_add(1, Ordering::Relaxed);
                }
                trace.into_chunk()
            })
        };
        // The pool holds 1 + 8 + 8 chunks for one worker: the worker fills them all, then waits.
        let held = (CHUNK * (2 * CHUNKS_PER_WORKER + 1)) as u64;
        let began = Instant::now();
        while recorded.load(Ordering::Relaxed) < held && began.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(recorded.load(Ordering::Relaxed), held, "the worker went on without a chunk to fill");
        let clock = Clock::simulated();
        let mut sink = TraceSink::new(None, Some(usize::MAX), &[], Vec::new()).unwrap();
        while !worker.is_finished() {
            sink.drain_for(&pool, &clock, Duration::from_millis(1));
            std::thread::yield_now();
        }
        sink.drain(&pool, &clock);
        sink.take(worker.join().unwrap(), None, &clock);
        let mut frames: Vec<u64> = sink.take_records().iter().map(|r| r.frame).collect();
        frames.sort_unstable();
        assert_eq!(frames, (0..total).collect::<Vec<u64>>(), "every record, once");
        assert_eq!(pool.lost(), 0);
        assert!(pool.waited_s() > 0.0, "the worker never waited");
    }

    /// Once the host has left (the pool closed), a waiting worker stops waiting and counts what
    /// it could not hand over.
    #[test]
    fn a_closed_pool_lets_a_waiting_worker_go_and_counts_its_records_lost() {
        let pool = Arc::new(TracePool::new(1, std::thread::current()));
        let total = CHUNK * (2 * CHUNKS_PER_WORKER + 3);
        let worker = {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || {
                let mut trace = WorkerTrace::new(Some(&pool));
                (0..total as u64).for_each(|frame| trace.record(&pool, record(frame)));
                trace.into_chunk().len()
            })
        };
        let began = Instant::now();
        while pool.waiting.load(Ordering::Relaxed) == 0 && began.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(1));
        }
        pool.close();
        let left = worker.join().unwrap();
        let handed = pool.full.len() * CHUNK;
        assert_eq!(handed as u64 + pool.lost() + left as u64, total as u64, "every record handed over or counted");
        assert!(pool.lost() > 0);
    }
}
