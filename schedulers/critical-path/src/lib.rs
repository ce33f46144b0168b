//! `critical-path`: the ready task with the longest path to the end of its frame runs first, then
//! the oldest frame's, then the first pushed. With `weighted`, the path length is scaled by the
//! task's measured cost, HEFT-like.
//!
//! One binary heap per class of allowed workers, each behind its own mutex. Push and pop never
//! wait for anything but those mutexes. See README.md for the policy and its costs.
//!
//! # Memory ordering
//! `weighted`, the largest cost seen, the push sequence number and the counters behind `stats` are
//! relaxed atomics: the sequence number only needs to be unique, the flag and the largest cost are
//! read once per pushed task and a change may reach pushes a little late, and the counters are
//! statistics. Tasks pass from push to pop through
//! the heaps' mutexes, which order them.

#![deny(unsafe_code)]

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use tomii_types::abi::{TOMII_SCHED_NEEDS_TIMING, TomiiKnobDesc};
use tomii_types::scheduler::{InitInfo, Scheduler, Task, knob};

/// The order of two tasks: greater runs first.
type Key = (u128, Reverse<u64>, Reverse<u64>);

/// A queued task with its urgency, computed when it was pushed, and its push sequence number.
#[derive(Debug)]
struct Entry {
    task: Task,
    urgency: u128,
    seq: u64,
}

impl Entry {
    /// Greater urgency, then smaller frame, then earlier push.
    fn key(&self) -> Key {
        (self.urgency, Reverse(self.task.frame), Reverse(self.seq))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Entry {}

/// `rank × cost` when weighted, else `rank`. The cost is the node's measured `cost_ns`, or, for a
/// node not measured yet, the largest cost measured so far (`fallback_cost`, at least 1): an
/// unknown node is assumed expensive rather than free.
fn urgency(task: &Task, weighted: bool, fallback_cost: u64) -> u128 {
    if !weighted {
        return u128::from(task.rank);
    }
    let cost = if task.cost_ns > 0 { task.cost_ns } else { fallback_cost.max(1) };
    u128::from(task.rank) * u128::from(cost)
}

/// Tasks allowed on the same workers share a heap.
#[derive(Debug)]
struct Bucket {
    worker_lo: u32,
    worker_hi: u32,
    heap: Mutex<BinaryHeap<Entry>>,
}

#[derive(Debug)]
pub struct CriticalPath {
    /// One bucket per distinct worker range among the graph's nodes, in order of first appearance.
    buckets: Vec<Bucket>,
    /// For each worker, the buckets whose range contains it.
    buckets_of: Vec<Vec<usize>>,
    weighted: AtomicBool,
    /// The largest `cost_ns` seen in a pushed task: the cost assumed for unmeasured nodes.
    max_cost: AtomicU64,
    /// Push sequence numbers handed out so far, which is also the number of tasks pushed.
    next_seq: AtomicU64,
    pops: AtomicU64,
    empty_pops: AtomicU64,
}

impl CriticalPath {
    /// The bucket holding tasks of `task`'s worker range.
    fn bucket_of(&self, task: &Task) -> Result<usize, String> {
        self.buckets.iter().position(|b| (b.worker_lo, b.worker_hi) == (task.worker_lo, task.worker_hi)).ok_or_else(
            || {
                format!(
                    "task of node {} has worker range {}..{} that no node declared",
                    task.node, task.worker_lo, task.worker_hi
                )
            },
        )
    }

    fn lock(&self, bucket: usize) -> Result<MutexGuard<'_, BinaryHeap<Entry>>, String> {
        self.buckets[bucket]
            .heap
            .lock()
            .map_err(|_| "critical-path: a heap lock was poisoned by an earlier panic".to_owned())
    }

    /// Takes up to `out.len()` tasks from one bucket, best first, under one lock.
    fn take_from(&self, bucket: usize, out: &mut [Task]) -> Result<usize, String> {
        let mut heap = self.lock(bucket)?;
        let mut count = 0;
        while count < out.len() {
            let Some(entry) = heap.pop() else { break };
            out[count] = entry.task;
            count += 1;
        }
        Ok(count)
    }

    /// Takes up to `out.len()` tasks from several buckets, each time from the bucket whose best
    /// task is the best. Locks one bucket at a time, so a concurrent pop may take the task seen
    /// by the scan first; the pop then takes that bucket's next best, or scans again if it is empty.
    fn take_best(&self, buckets: &[usize], out: &mut [Task]) -> Result<usize, String> {
        let mut count = 0;
        while count < out.len() {
            let Some(bucket) = self.best_bucket(buckets)? else { break };
            if let Some(entry) = self.lock(bucket)?.pop() {
                out[count] = entry.task;
                count += 1;
            }
        }
        Ok(count)
    }

    /// The bucket among `buckets` whose best task is the best, or `None` when all are empty.
    fn best_bucket(&self, buckets: &[usize]) -> Result<Option<usize>, String> {
        let mut best: Option<(usize, Key)> = None;
        for &bucket in buckets {
            let Some(key) = self.lock(bucket)?.peek().map(Entry::key) else { continue };
            if best.as_ref().is_none_or(|(_, best_key)| key > *best_key) {
                best = Some((bucket, key));
            }
        }
        Ok(best.map(|(bucket, _)| bucket))
    }
}

/// One bucket per distinct worker range of the graph's nodes, in order of first appearance, each
/// with room for the most tasks of that range that can be ready at once.
fn buckets(init: &InitInfo) -> Vec<Bucket> {
    let mut ranges: Vec<(u32, u32, usize)> = Vec::new();
    for node in &init.nodes {
        let tasks = node.factor as usize * init.slots as usize;
        match ranges.iter_mut().find(|(lo, hi, _)| (*lo, *hi) == (node.worker_lo, node.worker_hi)) {
            Some((_, _, capacity)) => *capacity += tasks,
            None => ranges.push((node.worker_lo, node.worker_hi, tasks)),
        }
    }
    ranges
        .into_iter()
        .map(|(worker_lo, worker_hi, capacity)| Bucket {
            worker_lo,
            worker_hi,
            heap: Mutex::new(BinaryHeap::with_capacity(capacity)),
        })
        .collect()
}

/// For each of `workers`, the indices of the `buckets` whose range contains it.
fn buckets_by_worker(workers: u32, buckets: &[Bucket]) -> Vec<Vec<usize>> {
    let contains = |b: usize, w: u32| (buckets[b].worker_lo..buckets[b].worker_hi).contains(&w);
    (0..workers).map(|w| (0..buckets.len()).filter(|&b| contains(b, w)).collect()).collect()
}

impl Scheduler for CriticalPath {
    const NAME: &'static CStr = c"critical-path";
    const FLAGS: u32 = TOMII_SCHED_NEEDS_TIMING;
    const KNOBS: &'static [TomiiKnobDesc] = &[knob(
        c"weighted",
        c"bool",
        c"true",
        c"true|false",
        c"Order by rank times the node's mean kernel time once that is known (HEFT-like), instead of by rank alone.",
    )];

    fn create(init: &InitInfo) -> Result<Self, String> {
        let buckets = buckets(init);
        Ok(CriticalPath {
            buckets_of: buckets_by_worker(init.workers, &buckets),
            buckets,
            weighted: AtomicBool::new(init.knob_or("weighted", true)?),
            max_cost: AtomicU64::new(0),
            next_seq: AtomicU64::new(0),
            pops: AtomicU64::new(0),
            empty_pops: AtomicU64::new(0),
        })
    }

    fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        let weighted = self.weighted.load(Relaxed);
        let first = self.next_seq.fetch_add(tasks.len() as u64, Relaxed);
        for (seq, task) in (first..).zip(tasks) {
            if task.cost_ns > self.max_cost.load(Relaxed) {
                self.max_cost.fetch_max(task.cost_ns, Relaxed);
            }
            let entry = Entry { task: *task, urgency: urgency(task, weighted, self.max_cost.load(Relaxed)), seq };
            self.lock(self.bucket_of(task)?)?.push(entry);
        }
        Ok(())
    }

    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        let count = match self.buckets_of.get(worker as usize).map_or(&[][..], Vec::as_slice) {
            [] => 0,
            &[only] => self.take_from(only, out)?,
            several => self.take_best(several, out)?,
        };
        self.pops.fetch_add(count as u64, Relaxed);
        if count == 0 {
            self.empty_pops.fetch_add(1, Relaxed);
        }
        Ok(count)
    }

    /// `weighted` may be changed while running; it applies to tasks pushed afterwards.
    fn set_knob(&self, key: &str, value: &str) -> Result<(), String> {
        if key != "weighted" {
            return Err(format!("unknown option {key:?}; its options are: weighted"));
        }
        let weighted = value
            .parse()
            .map_err(|_| format!("invalid value {value:?} for scheduler option \"weighted\" (true or false)"))?;
        self.weighted.store(weighted, Relaxed);
        Ok(())
    }

    fn stats(&self) -> String {
        format!(
            r#"{{"pushes":{},"pops":{},"empty_pops":{},"weighted":{}}}"#,
            self.next_seq.load(Relaxed),
            self.pops.load(Relaxed),
            self.empty_pops.load(Relaxed),
            self.weighted.load(Relaxed)
        )
    }
}

tomii_types::export_scheduler!(CriticalPath);

#[cfg(test)]
mod tests {
    use super::*;
    use tomii_types::scheduler::{NO_WORKER, NodeSummary};

    const ALL: (u32, u32) = (0, 2);

    /// A graph of one node per range, on `workers` workers, with 64 slots.
    fn init(workers: u32, ranges: &[(u32, u32)], knobs: &[(&str, &str)]) -> InitInfo {
        let nodes: Vec<NodeSummary> = ranges
            .iter()
            .enumerate()
            .map(|(i, &(worker_lo, worker_hi))| NodeSummary {
                name: format!("n{i}"),
                factor: 1,
                priority: 0,
                worker_lo,
                worker_hi,
            })
            .collect();
        InitInfo {
            workers,
            slots: 64,
            tasks_per_frame: nodes.len() as u64,
            max_ready: 64 * nodes.len() as u64,
            frames: 0,
            nodes,
            knobs: knobs.iter().map(|&(k, v)| (k.to_owned(), v.to_owned())).collect(),
        }
    }

    fn task(handle: u64, (worker_lo, worker_hi): (u32, u32)) -> Task {
        Task { handle, worker_lo, worker_hi, locality: NO_WORKER, ..Task::default() }
    }

    /// A task allowed everywhere with the given rank, cost and frame.
    fn ranked(handle: u64, rank: u64, cost_ns: u64, frame: u64) -> Task {
        Task { rank, cost_ns, frame, ..task(handle, ALL) }
    }

    /// Pops for `worker`, `batch` at a time, until it gets nothing.
    fn drain(s: &CriticalPath, worker: u32, batch: usize) -> Vec<u64> {
        let mut out = vec![Task::default(); batch];
        let mut handles = Vec::new();
        loop {
            let n = s.pop(worker, &mut out).unwrap();
            if n == 0 {
                return handles;
            }
            handles.extend(out[..n].iter().map(|t| t.handle));
        }
    }

    /// Rank 3 cost 10 (30), rank 2 cost 40 (80), rank 5 cost unknown (5 × the largest cost seen
    /// so far, 40: 200), and two rank-1 cost-30 (30) tasks of frames 1 and 0.
    fn mixed() -> Vec<Task> {
        vec![ranked(0, 3, 10, 0), ranked(1, 2, 40, 0), ranked(2, 5, 0, 0), ranked(3, 1, 30, 1), ranked(4, 1, 30, 0)]
    }

    #[test]
    fn weighted_orders_by_rank_times_cost_then_frame_then_push_order() {
        let s = CriticalPath::create(&init(2, &[ALL], &[])).unwrap();
        s.push(None, &mixed()).unwrap();
        s.push(Some(0), &[ranked(5, 3, 10, 0)]).unwrap();
        // 200 (unmeasured, assumed as costly as the costliest seen); 80; then 30 × four: frame 0
        // before frame 1, and push order within frame 0.
        assert_eq!(drain(&s, 0, 1), [2, 1, 0, 4, 5, 3]);
    }

    #[test]
    fn unweighted_orders_by_rank_then_frame_then_push_order() {
        let s = CriticalPath::create(&init(2, &[ALL], &[("weighted", "false")])).unwrap();
        s.push(None, &mixed()).unwrap();
        s.push(Some(0), &[ranked(5, 3, 10, 0)]).unwrap();
        assert_eq!(drain(&s, 1, 2), [2, 0, 5, 1, 4, 3]);
    }

    #[test]
    fn set_knob_switches_weighting_for_later_pushes() {
        let s = CriticalPath::create(&init(1, &[(0, 1)], &[])).unwrap();
        s.set_knob("weighted", "false").unwrap();
        s.push(
            None,
            &[Task { rank: 2, cost_ns: 1, ..task(0, (0, 1)) }, Task { rank: 1, cost_ns: 9, ..task(1, (0, 1)) }],
        )
        .unwrap();
        assert_eq!(drain(&s, 0, 1), [0, 1]);
        assert!(s.stats().contains(r#""weighted":false"#));
        assert!(s.set_knob("weighted", "yes").is_err());
        assert!(s.set_knob("bogus", "1").unwrap_err().contains("weighted"));
    }

    #[test]
    fn bad_options_are_rejected() {
        assert!(CriticalPath::create(&init(1, &[ALL], &[("weighted", "1")])).unwrap_err().contains("weighted"));
        let unknown = init(1, &[ALL], &[("bogus", "1")]).check_knobs(CriticalPath::KNOBS).unwrap_err();
        assert!(unknown.contains("bogus") && unknown.contains("weighted"), "{unknown}");
    }

    #[test]
    fn best_task_across_worker_ranges() {
        let s = CriticalPath::create(&init(2, &[(0, 1), ALL, (1, 2)], &[])).unwrap();
        let r = |handle, rank, range| Task { rank, ..task(handle, range) };
        s.push(None, &[r(0, 9, (1, 2)), r(1, 1, (0, 1)), r(2, 1, ALL), r(3, 2, (0, 1)), r(4, 3, ALL)]).unwrap();
        assert_eq!(drain(&s, 0, 2), [4, 3, 1, 2]);
        assert_eq!(drain(&s, 1, 2), [0]);
    }

    #[test]
    fn worker_ranges_are_honoured_and_nothing_is_held_back() {
        let ranges = [(0, 1), (1, 2), ALL];
        let s = CriticalPath::create(&init(2, &ranges, &[])).unwrap();
        let tasks: Vec<Task> = (0..30).map(|h| task(h, ranges[h as usize % 3])).collect();
        s.push(Some(0), &tasks).unwrap();
        let zero = drain(&s, 0, 2);
        assert_eq!(zero.len(), 20, "worker 0 may run the 10 tasks of 0..1 and the 10 of 0..2");
        assert!(zero.iter().all(|&h| h % 3 != 1));
        let one = drain(&s, 1, 2);
        assert_eq!(one.len(), 10);
        assert!(one.iter().all(|&h| h % 3 == 1));
        assert!(drain(&s, 7, 2).is_empty(), "a worker outside every range gets nothing");
    }

    #[test]
    fn pop_respects_the_buffer_length() {
        let s = CriticalPath::create(&init(1, &[(0, 1)], &[])).unwrap();
        s.push(None, &(0..10).map(|h| task(h, (0, 1))).collect::<Vec<_>>()).unwrap();
        assert_eq!(s.pop(0, &mut []).unwrap(), 0);
        assert_eq!(s.pop(0, &mut [Task::default(); 3]).unwrap(), 3);
        assert_eq!(s.pop(0, &mut [Task::default(); 20]).unwrap(), 7);
    }

    #[test]
    fn concurrent_push_and_pop_hand_out_each_task_once() {
        const PER_THREAD: u64 = 5_000;
        // Two ranges both workers share, so pops scan several heaps while the other thread pushes.
        let s = CriticalPath::create(&init(2, &[ALL, (0, 3)], &[])).unwrap();
        let popped: Vec<Vec<u64>> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..2u32)
                .map(|w| {
                    let s = &s;
                    scope.spawn(move || {
                        let mut mine = Vec::new();
                        let mut out = [Task::default(); 3];
                        for i in 0..PER_THREAD {
                            let range = if i % 3 == 0 { (0, 3) } else { ALL };
                            let t = Task { rank: i % 7, cost_ns: i % 4, ..task(u64::from(w) * PER_THREAD + i, range) };
                            s.push(Some(w), &[t]).unwrap();
                            if i % 2 == 0 {
                                let n = s.pop(w, &mut out).unwrap();
                                mine.extend(out[..n].iter().map(|t| t.handle));
                            }
                        }
                        mine
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let mut all = popped.concat();
        all.extend(drain(&s, 1, 5));
        all.sort_unstable();
        assert_eq!(all, (0..2 * PER_THREAD).collect::<Vec<_>>());
        let stats = s.stats();
        assert!(stats.contains(r#""pushes":10000"#) && stats.contains(r#""pops":10000"#), "{stats}");
    }
}
