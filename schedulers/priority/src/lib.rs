//! `priority`: the ready task of the highest node priority runs first, then the oldest frame's,
//! then the one that became ready first.
//!
//! One binary heap per class of allowed workers, each behind its own mutex. Push and pop never
//! wait for anything but those mutexes. See README.md for the policy and its costs.
//!
//! # Memory ordering
//! The counters behind `stats` and the push sequence number are relaxed atomics: the sequence
//! number only needs to be unique, and the counters are statistics. Tasks pass from push to pop
//! through the heaps' mutexes, which order them.

#![deny(unsafe_code)]

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use tomii_types::abi::TOMII_SCHED_NEEDS_TIMING;
use tomii_types::scheduler::{InitInfo, Scheduler, Task};

/// The order of two tasks: greater runs first.
type Key = (i32, Reverse<u64>, Reverse<u64>, Reverse<u64>);

/// A queued task and its push sequence number, the last tie-break.
#[derive(Debug)]
struct Entry {
    task: Task,
    seq: u64,
}

impl Entry {
    /// Larger priority, then smaller frame, then earlier ready time, then earlier push.
    fn key(&self) -> Key {
        (self.task.priority, Reverse(self.task.frame), Reverse(self.task.ready_ns), Reverse(self.seq))
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

/// Tasks allowed on the same workers share a heap.
#[derive(Debug)]
struct Bucket {
    worker_lo: u32,
    worker_hi: u32,
    heap: Mutex<BinaryHeap<Entry>>,
}

#[derive(Debug)]
pub struct Priority {
    /// One bucket per distinct worker range among the graph's nodes, in order of first appearance.
    buckets: Vec<Bucket>,
    /// For each worker, the buckets whose range contains it.
    buckets_of: Vec<Vec<usize>>,
    /// Push sequence numbers handed out so far, which is also the number of tasks pushed.
    next_seq: AtomicU64,
    pops: AtomicU64,
    empty_pops: AtomicU64,
}

impl Priority {
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
            .map_err(|_| "priority: a heap lock was poisoned by an earlier panic".to_owned())
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

impl Scheduler for Priority {
    const NAME: &'static CStr = c"priority";
    const FLAGS: u32 = TOMII_SCHED_NEEDS_TIMING;

    fn create(init: &InitInfo) -> Result<Self, String> {
        let buckets = buckets(init);
        Ok(Priority {
            buckets_of: buckets_by_worker(init.workers, &buckets),
            buckets,
            next_seq: AtomicU64::new(0),
            pops: AtomicU64::new(0),
            empty_pops: AtomicU64::new(0),
        })
    }

    fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        let first = self.next_seq.fetch_add(tasks.len() as u64, Relaxed);
        for (seq, task) in (first..).zip(tasks) {
            self.lock(self.bucket_of(task)?)?.push(Entry { task: *task, seq });
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

    fn stats(&self) -> String {
        format!(
            r#"{{"pushes":{},"pops":{},"empty_pops":{}}}"#,
            self.next_seq.load(Relaxed),
            self.pops.load(Relaxed),
            self.empty_pops.load(Relaxed)
        )
    }
}

tomii_types::export_scheduler!(Priority);

#[cfg(test)]
mod tests {
    use super::*;
    use tomii_types::scheduler::{NO_WORKER, NodeSummary};

    const ALL: (u32, u32) = (0, 2);

    /// A graph of one node per range, on `workers` workers, with 64 slots.
    fn init(workers: u32, ranges: &[(u32, u32)]) -> InitInfo {
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
            knobs: Vec::new(),
        }
    }

    fn task(handle: u64, (worker_lo, worker_hi): (u32, u32)) -> Task {
        Task { handle, worker_lo, worker_hi, locality: NO_WORKER, ..Task::default() }
    }

    /// A task allowed everywhere with the given priority, frame and ready time.
    fn ranked(handle: u64, priority: i32, frame: u64, ready_ns: u64) -> Task {
        Task { priority, frame, ready_ns, ..task(handle, ALL) }
    }

    /// Pops for `worker`, `batch` at a time, until it gets nothing.
    fn drain(s: &Priority, worker: u32, batch: usize) -> Vec<u64> {
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

    #[test]
    fn priority_then_frame_then_ready_time_then_push_order() {
        let s = Priority::create(&init(2, &[ALL])).unwrap();
        s.push(
            None,
            &[
                ranked(0, 0, 5, 10),
                ranked(1, 1, 9, 90),
                ranked(2, 0, 3, 50),
                ranked(3, 0, 3, 20),
                ranked(4, -1, 0, 0),
                ranked(5, 0, 3, 20),
                ranked(6, 1, 2, 99),
            ],
        )
        .unwrap();
        s.push(Some(1), &[ranked(7, 0, 3, 20)]).unwrap();
        assert_eq!(drain(&s, 0, 1), [6, 1, 3, 5, 7, 2, 0, 4]);
    }

    #[test]
    fn best_task_across_worker_ranges() {
        let s = Priority::create(&init(2, &[(0, 1), ALL, (1, 2)])).unwrap();
        s.push(None, &[Task { priority: 2, ..task(0, (1, 2)) }, task(1, (0, 1)), task(2, ALL)]).unwrap();
        s.push(None, &[Task { priority: 1, ..task(3, (0, 1)) }, Task { priority: 3, ..task(4, ALL) }]).unwrap();
        assert_eq!(drain(&s, 0, 2), [4, 3, 1, 2]);
        assert_eq!(drain(&s, 1, 2), [0]);
    }

    #[test]
    fn worker_ranges_are_honoured_and_nothing_is_held_back() {
        let ranges = [(0, 1), (1, 2), ALL];
        let s = Priority::create(&init(2, &ranges)).unwrap();
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
    fn unknown_worker_range_is_an_error() {
        let s = Priority::create(&init(2, &[ALL])).unwrap();
        assert!(s.push(None, &[task(0, (1, 2))]).unwrap_err().contains("1..2"));
    }

    #[test]
    fn pop_respects_the_buffer_length() {
        let s = Priority::create(&init(1, &[(0, 1)])).unwrap();
        s.push(None, &(0..10).map(|h| task(h, (0, 1))).collect::<Vec<_>>()).unwrap();
        assert_eq!(s.pop(0, &mut []).unwrap(), 0);
        assert_eq!(s.pop(0, &mut [Task::default(); 3]).unwrap(), 3);
        assert_eq!(s.pop(0, &mut [Task::default(); 20]).unwrap(), 7);
    }

    #[test]
    fn concurrent_push_and_pop_hand_out_each_task_once() {
        const PER_THREAD: u64 = 5_000;
        // Two ranges both workers share, so pops scan several heaps while the other thread pushes.
        let s = Priority::create(&init(2, &[ALL, (0, 3)])).unwrap();
        let popped: Vec<Vec<u64>> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..2u32)
                .map(|w| {
                    let s = &s;
                    scope.spawn(move || {
                        let mut mine = Vec::new();
                        let mut out = [Task::default(); 3];
                        for i in 0..PER_THREAD {
                            let range = if i % 3 == 0 { (0, 3) } else { ALL };
                            let t = Task { priority: (i % 5) as i32, ..task(u64::from(w) * PER_THREAD + i, range) };
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
