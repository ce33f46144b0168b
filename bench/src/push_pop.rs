//! Drives a scheduler directly through its vtable, as the engine's workers do, for the push/pop
//! benchmarks (`benches/schedulers.rs` and the `scheduler_figures` binary): one created instance
//! kept at a small, steady queue depth ([`PREFILL`] tasks), fed realistic task descriptors, and
//! timed push-one/pop-one loops on one thread or on two at once.
//!
//! It only measures: a scheduler whose call fails panics with its name. Nothing inside a timed
//! loop may allocate or format, except on that failure path.
//!
//! # Memory ordering
//!
//! The two-thread start line is one counter: each thread adds itself (`AcqRel`) and spins
//! (`Acquire`) until both have. It orders nothing but the start; the tasks themselves are ordered
//! by the scheduler's own synchronisation, which is what is being measured.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use tomii_core::plugin::{SchedulerInstance, SchedulerPlugin, SchedulerSetup};
use tomii_types::abi::{TOMII_NO_WORKER, TomiiTask};

use crate::WORKERS;

/// Slots the scheduler is created for (as in tomii-core's conformance suite).
pub const SLOTS: u32 = 4;
/// Tasks queued before timing starts; push-one/pop-one then keeps the depth at this, plus one per
/// thread between its push and its pop.
pub const PREFILL: u64 = 16;
/// The target for fifo: one push plus one pop, uncontended, in less than this (ns).
pub const FIFO_TARGET_NS: f64 = 50.0;

/// The nodes of the task set, in graph order: (name, factor, priority, rank, cost_ns). Every node
/// runs on every worker. A graph `source(4) → stage(16) → sink(4)`, so rank is 3, 2, 1.
const NODES: [(&str, u32, i32, u64, u64); 3] =
    [("source", 4, 1, 3, 2_000), ("stage", 16, 0, 2, 5_000), ("sink", 4, -1, 1, 1_000)];
/// Tasks of one frame: the sum of the factors.
const TASKS_PER_FRAME: u64 = NODES[0].1 as u64 + NODES[1].1 as u64 + NODES[2].1 as u64;
/// Where handles start: any value works, the scheduler treats them as opaque.
const HANDLE_BASE: u64 = 0xB000_0000_0000;

/// What the scheduler is told at create time: [`WORKERS`] workers, [`SLOTS`] slots, the nodes above.
pub fn setup() -> SchedulerSetup<'static> {
    SchedulerSetup {
        workers: WORKERS,
        slots: SLOTS,
        frames: 0,
        tasks_per_frame: TASKS_PER_FRAME,
        nodes: NODES.iter().map(|&(name, factor, priority, ..)| (name, factor, priority, 0, WORKERS)).collect(),
        knobs: &[],
    }
}

/// The `seq`-th task made ready in the run, pushed by `pusher` (a worker, or `TOMII_NO_WORKER` for
/// the host): frames of [`TASKS_PER_FRAME`] tasks in node order, so `handle`, `frame` and
/// `ready_ns` all increase with `seq`; the other fields are those of its node.
#[inline]
pub fn task(seq: u64, pusher: u32) -> TomiiTask {
    let frame = seq / TASKS_PER_FRAME;
    let (mut node, mut instance) = (0, (seq % TASKS_PER_FRAME) as u32);
    while instance >= NODES[node].1 {
        instance -= NODES[node].1;
        node += 1;
    }
    let (_, _, priority, rank, cost_ns) = NODES[node];
    TomiiTask {
        handle: HANDLE_BASE + seq,
        frame,
        ready_ns: seq * 250,
        cost_ns,
        rank,
        node: node as u32,
        instance,
        slot: (frame % u64::from(SLOTS)) as u32,
        priority,
        worker_lo: 0,
        worker_hi: WORKERS,
        locality: pusher,
        reserved: 0,
    }
}

/// One scheduler instance with [`PREFILL`] tasks queued, and the sequence number of the next task.
pub struct PushPop<'p> {
    name: &'p str,
    instance: SchedulerInstance<'p>,
    next: u64,
}

impl<'p> PushPop<'p> {
    /// Creates an instance of `plugin` (called `name`) and has the host push [`PREFILL`] tasks.
    pub fn new(name: &'p str, plugin: &'p SchedulerPlugin) -> Self {
        let instance = SchedulerInstance::create(plugin, &setup())
            .unwrap_or_else(|e| panic!("scheduler {name:?}: create failed: {e}"));
        let prefill: Vec<TomiiTask> = (0..PREFILL).map(|seq| task(seq, TOMII_NO_WORKER)).collect();
        instance.push(TOMII_NO_WORKER, &prefill).unwrap_or_else(|e| fail(name, &e));
        PushPop { name, instance, next: PREFILL }
    }

    pub fn name(&self) -> &'p str {
        self.name
    }

    /// Worker 0 pushes one task and pops one, `pairs` times; the time of the whole loop. Panics if
    /// a pop finds nothing: with [`PREFILL`] tasks queued that is a scheduler bug.
    pub fn uncontended(&mut self, pairs: u64) -> Duration {
        let first = self.take(pairs);
        let start = Instant::now();
        let empty = push_pop_loop(self.name, &self.instance, 0, first, 1, pairs);
        let elapsed = start.elapsed();
        assert_eq!(empty, 0, "scheduler {:?}: {empty} pops found nothing with {PREFILL} tasks queued", self.name);
        elapsed
    }

    /// Workers 0 and 1, each on its own thread, push one task and pop one `pairs` times, released
    /// together from a spinning start line.
    pub fn two_threads(&mut self, pairs: u64) -> TwoThreads {
        // Thread w pushes tasks first + w, first + w + 2, …: together, consecutive tasks of the run.
        let first = self.take(2 * pairs);
        let (name, instance, ready) = (self.name, &self.instance, AtomicU32::new(0));
        let runs: Vec<(Instant, Instant, u64)> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..2u32)
                .map(|worker| {
                    let ready = &ready;
                    scope.spawn(move || {
                        ready.fetch_add(1, Ordering::AcqRel);
                        while ready.load(Ordering::Acquire) < 2 {
                            std::hint::spin_loop();
                        }
                        let start = Instant::now();
                        let empty = push_pop_loop(name, instance, worker, first + u64::from(worker), 2, pairs);
                        (start, Instant::now(), empty)
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().expect("a push/pop thread panicked")).collect()
        });
        TwoThreads::from_runs(&runs)
    }

    /// Reserves `count` sequence numbers; returns the first.
    fn take(&mut self, count: u64) -> u64 {
        let first = self.next;
        self.next += count;
        first
    }
}

/// What one two-thread loop took.
#[derive(Clone, Copy, Debug)]
pub struct TwoThreads {
    /// From the first thread's start to the last one's end.
    pub elapsed: Duration,
    /// The share of `elapsed` during which both threads were in their loops: below 1 when one
    /// started late (descheduled) or finished early (the policy or its lock favoured it).
    pub overlap: f64,
    /// Pops that found nothing; each leaves one more task queued.
    pub empty: u64,
}

impl TwoThreads {
    /// From each thread's (start, end, empty pops).
    fn from_runs(runs: &[(Instant, Instant, u64)]) -> Self {
        let first_start = runs.iter().map(|r| r.0).min().expect("threads ran");
        let last_end = runs.iter().map(|r| r.1).max().expect("threads ran");
        let last_start = runs.iter().map(|r| r.0).max().expect("threads ran");
        let first_end = runs.iter().map(|r| r.1).min().expect("threads ran");
        let elapsed = last_end - first_start;
        let both = first_end.saturating_duration_since(last_start);
        let overlap = if elapsed.is_zero() { 1.0 } else { both.as_secs_f64() / elapsed.as_secs_f64() };
        TwoThreads { elapsed, overlap, empty: runs.iter().map(|r| r.2).sum() }
    }
}

/// `worker` pushes task `seq` and pops one task, for `seq` = start, start + step, … (`pairs`
/// times); returns how many pops found nothing.
fn push_pop_loop(name: &str, instance: &SchedulerInstance<'_>, worker: u32, start: u64, step: u64, pairs: u64) -> u64 {
    let mut out = [TomiiTask::default()];
    let mut empty = 0;
    for i in 0..pairs {
        let pushed = task(start + i * step, worker);
        instance.push(worker, std::slice::from_ref(&pushed)).unwrap_or_else(|e| fail(name, &e));
        match instance.pop(worker, &mut out) {
            Ok(0) => empty += 1,
            Ok(_) => {}
            Err(e) => fail(name, &e),
        }
    }
    std::hint::black_box(out);
    empty
}

#[cold]
fn fail(name: &str, error: &str) -> ! {
    panic!("scheduler {name:?}: {error}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_follow_the_frame_layout() {
        let all: Vec<TomiiTask> = (0..2 * TASKS_PER_FRAME).map(|seq| task(seq, 1)).collect();
        assert_eq!(TASKS_PER_FRAME, 24);
        assert!(all.windows(2).all(|w| w[0].handle < w[1].handle && w[0].frame <= w[1].frame));
        assert_eq!((all[0].node, all[0].instance, all[0].rank), (0, 0, 3));
        assert_eq!((all[4].node, all[4].instance, all[4].priority), (1, 0, 0));
        assert_eq!((all[23].node, all[23].instance, all[23].rank), (2, 3, 1));
        assert_eq!((all[24].frame, all[24].slot, all[24].node), (1, 1, 0));
        assert!(all.iter().all(|t| (t.worker_lo, t.worker_hi, t.locality) == (0, WORKERS, 1)));
    }

    #[test]
    fn overlap_is_the_share_both_threads_ran() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let half = TwoThreads::from_runs(&[(at(0), at(30), 1), (at(10), at(40), 2)]);
        assert_eq!((half.elapsed, half.overlap, half.empty), (Duration::from_millis(40), 0.5, 3));
        assert_eq!(TwoThreads::from_runs(&[(at(0), at(10), 0), (at(20), at(30), 0)]).overlap, 0.0);
    }

    #[test]
    fn setup_covers_the_task_set() {
        let setup = setup();
        let factors: u64 = setup.nodes.iter().map(|n| u64::from(n.1)).sum();
        assert_eq!(factors, setup.tasks_per_frame);
        assert!(setup.nodes.iter().all(|n| (n.3, n.4) == (0, WORKERS)));
    }
}
