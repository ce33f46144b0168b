//! `multi-slot-batch`: ready tasks of one node, gathered across the slots in flight, go out together.
//!
//! Each node has its own queue, split by slot; a slot holds one frame at a time, so each part is in
//! frame order and the node's oldest task is at the front of one of them. A pop picks, among the
//! nodes the worker may run, the one whose oldest task has the smallest frame, and hands out up to
//! `batch` of its tasks, oldest frame first. A pop never returns nothing while a node the worker may
//! run has a task. See README.md for the policy and its costs.
//!
//! # The index
//! Nodes are grouped by worker range (most graphs have one range: every worker). Each range keeps
//! a min-heap of `(frame, node)` entries, so a pop looks at one heap top per range its worker is
//! in, not at every node. A node's new oldest frame is published together with its entry, both
//! under the heap's lock (unless the node's newest entry already has that frame: a node emptied
//! and refilled within a frame keeps its entry); an entry is *stale* when the node's oldest frame
//! is no longer its frame, and stale entries are dropped when they reach the top. Invariant: a
//! node with tasks has an entry for its current oldest frame (a pop, holding the heap's lock,
//! reads either a frame whose entry is there or `EMPTY`). Entries stay while their node has
//! tasks, so a second worker popping meanwhile finds the node too.
//!
//! # Memory ordering
//! Each node's queue and each range's heap sit behind a mutex, taken with `try_lock` and a short
//! backoff, never by waiting in the kernel; locks nest only node → heap. `NodeQueue::oldest`
//! mirrors the queue's oldest frame: written under the node's lock (a new frame under the heap's
//! too, with its entry), read relaxed under the heap's lock to check an entry, and confirmed under
//! the node's lock, so a stale read costs a retry, never a wrong answer. A push's entry is in the heap before `push` returns, so the host's fence
//! pair (tomii-core/src/engine/README.md, "Idle workers") orders it before a parking worker's
//! re-check. The statistics are relaxed counters read after the run.

#![deny(unsafe_code)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

use crossbeam_utils::{Backoff, CachePadded};
use tomii_types::abi::TomiiKnobDesc;
use tomii_types::scheduler::{InitInfo, Scheduler, Task, knob};

/// `NodeQueue::oldest` of a node with no ready task.
const EMPTY: u64 = u64::MAX;
/// The domain of the `batch` option.
const BATCH_RANGE: std::ops::RangeInclusive<usize> = 1..=1024;

/// One node's ready tasks, one FIFO per slot.
struct SlotQueues {
    by_slot: Box<[VecDeque<Task>]>,
}

impl SlotQueues {
    /// The slot whose front task has the smallest frame, and that frame.
    fn oldest(&self) -> Option<(usize, u64)> {
        self.by_slot
            .iter()
            .enumerate()
            .filter_map(|(slot, queue)| queue.front().map(|task| (slot, task.frame)))
            .min_by_key(|&(slot, frame)| (frame, slot))
    }

    /// Moves tasks into `out`, oldest frame first, until `out` is full or the node has none left.
    fn take(&mut self, out: &mut [Task]) -> usize {
        let mut count = 0;
        while count < out.len() {
            let Some((slot, frame)) = self.oldest() else { break };
            let queue = &mut self.by_slot[slot];
            while count < out.len() && queue.front().is_some_and(|task| task.frame == frame) {
                out[count] = queue.pop_front().unwrap_or_default();
                count += 1;
            }
        }
        count
    }
}

struct NodeQueue {
    /// The node's index in the graph.
    node: u32,
    worker_lo: u32,
    worker_hi: u32,
    /// The range (an index of `MultiSlotBatch::ranges`) whose heap holds the node's entries.
    range: usize,
    /// The frame of the oldest queued task, or `EMPTY`. Written only while `tasks` is locked, and
    /// a frame other than `EMPTY` only while the range's heap is locked too.
    oldest: AtomicU64,
    /// The frame of the node's newest entry in its range's heap, or `EMPTY` once that entry was
    /// dropped; accessed only while the heap is locked. A node emptied and refilled in the same
    /// frame keeps its entry instead of adding another.
    indexed: AtomicU64,
    tasks: Mutex<SlotQueues>,
}

/// The nodes of one worker range that have tasks, by oldest frame (see "The index" above).
struct RangeIndex {
    worker_lo: u32,
    worker_hi: u32,
    /// Min-heap of `(oldest frame, node)`; ties go to the node first in the graph.
    heap: Mutex<BinaryHeap<Reverse<(u64, u32)>>>,
}

/// Per-worker counters, each on its own cache line (the host's pushes use one more entry).
#[derive(Default)]
struct Counters {
    batches: AtomicU64,
    tasks: AtomicU64,
    full_batches: AtomicU64,
    largest_batch: AtomicU64,
    contended: AtomicU64,
}

pub struct MultiSlotBatch {
    batch: usize,
    slots: u32,
    nodes: Box<[CachePadded<NodeQueue>]>,
    /// One per distinct worker range of the graph's nodes.
    ranges: Box<[CachePadded<RangeIndex>]>,
    /// Per worker: the ranges (indices of `ranges`) it is inside.
    runnable: Vec<Box<[usize]>>,
    /// `workers + 1` entries: one per worker, then the host's.
    counters: Box<[CachePadded<Counters>]>,
}

/// Locks `mutex` without waiting in the kernel: spins, then yields, until it is free.
fn lock<'a, T>(mutex: &'a Mutex<T>, counters: &Counters) -> MutexGuard<'a, T> {
    let backoff = Backoff::new();
    loop {
        match mutex.try_lock() {
            Ok(guard) => return guard,
            Err(TryLockError::Poisoned(poisoned)) => return poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                counters.contended.fetch_add(1, Ordering::Relaxed);
                backoff.snooze();
            }
        }
    }
}

impl MultiSlotBatch {
    /// The node `worker` may run whose oldest task has the smallest frame (the first such node):
    /// the smallest valid heap top among the worker's ranges, dropping stale tops on the way.
    fn oldest_node(&self, worker: u32, counters: &Counters) -> Option<&NodeQueue> {
        let mut best: Option<(u64, u32)> = None;
        for &range in self.runnable[worker as usize].iter() {
            let mut heap = lock(&self.ranges[range].heap, counters);
            while let Some(&Reverse((frame, node))) = heap.peek() {
                let queue = &self.nodes[node as usize];
                if queue.oldest.load(Ordering::Relaxed) == frame {
                    if best.is_none_or(|oldest| (frame, node) < oldest) {
                        best = Some((frame, node));
                    }
                    break;
                }
                if queue.indexed.load(Ordering::Relaxed) == frame {
                    queue.indexed.store(EMPTY, Ordering::Relaxed);
                }
                heap.pop();
            }
        }
        best.map(|(_, node)| &*self.nodes[node as usize])
    }

    /// Publishes the oldest frame of `queue`, whose `tasks` the caller holds locked; a new one gets
    /// an entry in its range's heap.
    fn publish_oldest(&self, queue: &NodeQueue, tasks: &SlotQueues, counters: &Counters) {
        let oldest = tasks.oldest().map_or(EMPTY, |(_, frame)| frame);
        if queue.oldest.load(Ordering::Relaxed) == oldest {
            return;
        }
        if oldest == EMPTY {
            queue.oldest.store(EMPTY, Ordering::Relaxed);
            return;
        }
        // A new oldest frame is published under the heap's lock, with its entry: a pop that reads
        // it finds the entry too, instead of dropping the old one and finding nothing.
        let mut heap = lock(&self.ranges[queue.range].heap, counters);
        queue.oldest.store(oldest, Ordering::Relaxed);
        if queue.indexed.load(Ordering::Relaxed) != oldest {
            queue.indexed.store(oldest, Ordering::Relaxed);
            heap.push(Reverse((oldest, queue.node)));
        }
    }

    /// The queue of `task`'s node, after checking that the task matches what the graph declared.
    fn queue_of(&self, task: &Task) -> Result<&NodeQueue, String> {
        let queue = self.nodes.get(task.node as usize).ok_or_else(|| format!("task of unknown node {}", task.node))?;
        if (queue.worker_lo, queue.worker_hi) != (task.worker_lo, task.worker_hi) {
            return Err(format!(
                "task of node {} has worker range {}..{}, but the node declared {}..{}",
                task.node, task.worker_lo, task.worker_hi, queue.worker_lo, queue.worker_hi
            ));
        }
        if task.slot >= self.slots {
            return Err(format!("task of node {} is in slot {} of {}", task.node, task.slot, self.slots));
        }
        Ok(queue)
    }

    fn record(&self, counters: &Counters, count: usize, limit: usize) {
        counters.batches.fetch_add(1, Ordering::Relaxed);
        counters.tasks.fetch_add(count as u64, Ordering::Relaxed);
        counters.full_batches.fetch_add(u64::from(count == limit), Ordering::Relaxed);
        counters.largest_batch.fetch_max(count as u64, Ordering::Relaxed);
    }
}

impl Scheduler for MultiSlotBatch {
    const NAME: &'static CStr = c"multi-slot-batch";
    const KNOBS: &'static [TomiiKnobDesc] = &[knob(
        c"batch",
        c"int",
        c"8",
        c"1..1024",
        c"Most tasks of one node handed out by one pop; the host must ask for several (--pop-batch N).",
    )];

    fn create(init: &InitInfo) -> Result<Self, String> {
        let batch = init.knob_or("batch", 8usize)?;
        if !BATCH_RANGE.contains(&batch) {
            return Err(format!("scheduler option \"batch\" must be in 1..1024, not {batch}"));
        }
        init.check_worker_ranges()?;
        let mut distinct: Vec<(u32, u32)> = init.nodes.iter().map(|n| (n.worker_lo, n.worker_hi)).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let mut nodes = Vec::with_capacity(init.nodes.len());
        let mut per_range = vec![0usize; distinct.len()];
        for (id, node) in init.nodes.iter().enumerate() {
            let by_slot = (0..init.slots).map(|_| VecDeque::with_capacity(node.factor as usize)).collect();
            let range = distinct.binary_search(&(node.worker_lo, node.worker_hi)).unwrap_or_default();
            per_range[range] += 1;
            nodes.push(CachePadded::new(NodeQueue {
                node: id as u32,
                worker_lo: node.worker_lo,
                worker_hi: node.worker_hi,
                range,
                oldest: AtomicU64::new(EMPTY),
                indexed: AtomicU64::new(EMPTY),
                tasks: Mutex::new(SlotQueues { by_slot }),
            }));
        }
        // Room for an entry per node and slot (a live one each, plus as many stale): the heaps
        // rarely grow during a run.
        let ranges: Box<[_]> = distinct
            .iter()
            .zip(&per_range)
            .map(|(&(worker_lo, worker_hi), &count)| {
                let heap = BinaryHeap::with_capacity(2 * count * init.slots as usize);
                CachePadded::new(RangeIndex { worker_lo, worker_hi, heap: Mutex::new(heap) })
            })
            .collect();
        let runnable = (0..init.workers)
            .map(|w| (0..ranges.len()).filter(|&r| (ranges[r].worker_lo..ranges[r].worker_hi).contains(&w)).collect())
            .collect();
        let counters = (0..=init.workers).map(|_| CachePadded::default()).collect();
        Ok(MultiSlotBatch { batch, slots: init.slots, nodes: nodes.into(), ranges, runnable, counters })
    }

    fn push(&self, worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        let counters = match worker {
            None => &self.counters[self.runnable.len()],
            Some(w) if (w as usize) < self.runnable.len() => &self.counters[w as usize],
            Some(w) => return Err(format!("push from unknown worker {w}")),
        };
        for group in tasks.chunk_by(|a, b| a.node == b.node) {
            let queue = self.queue_of(&group[0])?;
            for task in &group[1..] {
                self.queue_of(task)?;
            }
            let mut queued = lock(&queue.tasks, counters);
            for task in group {
                queued.by_slot[task.slot as usize].push_back(*task);
            }
            self.publish_oldest(queue, &queued, counters);
        }
        Ok(())
    }

    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        if worker as usize >= self.runnable.len() {
            return Err(format!("pop by unknown worker {worker}"));
        }
        let counters = &self.counters[worker as usize];
        let limit = out.len().min(self.batch);
        if limit == 0 {
            return Ok(0);
        }
        // A node chosen from a stale `oldest` may be empty by the time it is locked: choose again.
        while let Some(queue) = self.oldest_node(worker, counters) {
            let mut queued = lock(&queue.tasks, counters);
            let count = queued.take(&mut out[..limit]);
            self.publish_oldest(queue, &queued, counters);
            if count > 0 {
                self.record(counters, count, limit);
                return Ok(count);
            }
        }
        Ok(0)
    }

    fn stats(&self) -> String {
        let sum = |field: fn(&Counters) -> &AtomicU64| -> u64 {
            self.counters.iter().map(|c| field(c).load(Ordering::Relaxed)).sum()
        };
        let largest = self.counters.iter().map(|c| c.largest_batch.load(Ordering::Relaxed)).max().unwrap_or(0);
        format!(
            r#"{{"batches":{},"tasks":{},"full_batches":{},"largest_batch":{largest},"contended":{},"batch":{}}}"#,
            sum(|c| &c.batches),
            sum(|c| &c.tasks),
            sum(|c| &c.full_batches),
            sum(|c| &c.contended),
            self.batch,
        )
    }
}

tomii_types::export_scheduler!(MultiSlotBatch);

/// The trait called directly; the harnesses shared with the other schedulers come from
/// `tomii_types::scheduler::testing`, the other tests check this policy.
#[cfg(test)]
mod tests {
    use tomii_types::scheduler::testing::{
        assert_exactly_once_under_concurrency, assert_options_are_checked, create, init, pop_all, pop_once, task,
        task_from,
    };

    use super::*;

    const ALL4: (u32, u32) = (0, 4);

    #[test]
    fn every_task_once_under_concurrency_batched_or_not() {
        for (workers, batch) in [(2, "8"), (4, "8"), (4, "1")] {
            assert_exactly_once_under_concurrency::<MultiSlotBatch>(workers, 20_000, &[("batch", batch)]);
        }
    }

    /// A task of `node` (all of a 2-worker run) in `frame`, which occupies slot `frame % 4`.
    fn framed(handle: u64, node: u32, frame: u64) -> Task {
        Task { node, frame, slot: (frame % 4) as u32, ..task(handle, (0, 2)) }
    }

    #[test]
    fn a_pop_hands_out_one_node_across_slots_oldest_frame_first() {
        let s: MultiSlotBatch = create(2, &[(0, 2), (0, 2)], &[]);
        s.push(Some(0), &[framed(21, 0, 2), framed(22, 0, 2), framed(10, 1, 1), framed(11, 0, 1)]).unwrap();
        s.push(None, &[framed(30, 1, 3), framed(12, 1, 1), framed(23, 1, 2), framed(13, 0, 1)]).unwrap();
        s.push(Some(1), &[framed(0, 1, 0)]).unwrap();
        assert_eq!(pop_once(&s, 0, 8), [0, 10, 12, 23, 30]);
        assert_eq!(pop_once(&s, 1, 8), [11, 13, 21, 22]);
        assert!(pop_once(&s, 0, 8).is_empty());
        let stats: serde_json::Value = serde_json::from_str(&s.stats()).unwrap();
        assert_eq!((stats["batches"].as_u64(), stats["tasks"].as_u64()), (Some(2), Some(9)));
        assert_eq!(stats["largest_batch"].as_u64(), Some(5));
    }

    #[test]
    fn refilled_nodes_and_late_older_frames_still_come_out_oldest_first() {
        let s: MultiSlotBatch = create(2, &[(0, 2), (0, 2)], &[]);
        s.push(Some(0), &[framed(50, 0, 5), framed(30, 1, 3)]).unwrap();
        assert_eq!(pop_once(&s, 0, 8), [30]);
        // Node 0 gets an older frame than the one it holds; node 1 is refilled.
        s.push(Some(1), &[framed(20, 0, 2), framed(40, 1, 4)]).unwrap();
        assert_eq!(pop_once(&s, 1, 8), [20, 50]);
        assert_eq!(pop_once(&s, 0, 8), [40]);
        assert!(pop_once(&s, 0, 8).is_empty());
        s.push(None, &[framed(60, 1, 6)]).unwrap();
        assert_eq!(pop_once(&s, 1, 8), [60]);
    }

    #[test]
    fn the_index_stays_small_over_a_long_run() {
        // 10,000 frames through a 3-node chain, one task at a time: stale entries are dropped as
        // they reach the top, so the heap never holds more than a few.
        let s: MultiSlotBatch = create(1, &[(0, 1), (0, 1), (0, 1)], &[]);
        let mut largest = 0;
        for frame in 0..10_000u64 {
            for node in 0..3 {
                let t = Task { node, frame, slot: (frame % 4) as u32, ..task(frame * 3 + u64::from(node), (0, 1)) };
                s.push(Some(0), &[t]).unwrap();
                assert_eq!(pop_once(&s, 0, 1), [t.handle]);
                largest = largest.max(s.ranges[0].heap.lock().unwrap().len());
            }
        }
        assert!(largest <= 3, "the heap grew to {largest} entries");
    }

    #[test]
    fn a_node_refilled_within_a_frame_keeps_one_entry() {
        // A 1:1 stage: each upstream completion pushes one task of the node in the same frame,
        // and a pop empties the node before the next arrives.
        let s: MultiSlotBatch = create(2, &[(0, 2)], &[]);
        for handle in 0..1_000 {
            s.push(Some(0), &[framed(handle, 0, 7)]).unwrap();
            assert_eq!(pop_once(&s, 0, 8), [handle]);
            assert!(s.ranges[0].heap.lock().unwrap().len() <= 1);
        }
    }

    #[test]
    fn equal_frames_go_to_the_first_node() {
        let s: MultiSlotBatch = create(2, &[(0, 2), (0, 2)], &[]);
        s.push(Some(0), &[framed(1, 1, 0), framed(0, 0, 0)]).unwrap();
        assert_eq!(pop_once(&s, 1, 8), [0]);
        assert_eq!(pop_once(&s, 1, 8), [1]);
    }

    #[test]
    fn a_batch_is_capped_by_the_option_and_the_buffer() {
        let s: MultiSlotBatch = create(2, &[(0, 2)], &[("batch", "3")]);
        s.push(None, &(0..10).map(|h| framed(h, 0, h / 4)).collect::<Vec<_>>()).unwrap();
        assert!(pop_once(&s, 0, 0).is_empty());
        assert_eq!(pop_once(&s, 0, 8), [0, 1, 2]);
        assert_eq!(pop_once(&s, 1, 2), [3, 4]);
        assert_eq!(pop_once(&s, 1, 1), [5]);
        assert_eq!(pop_all(&s, 0, 8), [6, 7, 8, 9]);
        let stats: serde_json::Value = serde_json::from_str(&s.stats()).unwrap();
        assert_eq!((stats["full_batches"].as_u64(), stats["batch"].as_u64()), (Some(4), Some(3)));
    }

    #[test]
    fn worker_ranges_are_honoured() {
        let s: MultiSlotBatch = create(4, &[ALL4, (1, 2), (2, 4)], &[]);
        let pinned = |handle, node, range, frame| Task { node, frame, ..task_from(handle, range, 0) };
        s.push(Some(0), &[pinned(0, 1, (1, 2), 0), pinned(1, 0, ALL4, 5), pinned(2, 2, (2, 4), 1)]).unwrap();
        assert_eq!(pop_all(&s, 0, 8), [1]);
        assert_eq!(pop_all(&s, 1, 8), [0]);
        s.push(Some(0), &[pinned(3, 1, (1, 2), 0), pinned(4, 0, ALL4, 5)]).unwrap();
        assert_eq!(pop_all(&s, 3, 8), [2, 4]);
        assert_eq!(pop_all(&s, 1, 8), [3]);
    }

    #[test]
    fn an_idle_worker_gets_what_another_pushed() {
        let s: MultiSlotBatch = create(4, &[ALL4], &[]);
        s.push(Some(3), &(0..5).map(|h| task_from(h, ALL4, 3)).collect::<Vec<_>>()).unwrap();
        assert_eq!(pop_all(&s, 0, 2), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn bad_options_and_tasks_are_reported() {
        assert_options_are_checked::<MultiSlotBatch>(&[("batch", "0"), ("batch", "1025"), ("batch", "many")], "size");
        assert!(MultiSlotBatch::create(&init(2, &[(0, 3)], &[])).err().unwrap().contains("beyond"));
        let s: MultiSlotBatch = create(2, &[(0, 2)], &[]);
        assert!(s.push(Some(0), &[task_from(0, (1, 2), 0)]).unwrap_err().contains("1..2"));
        assert!(s.push(Some(0), &[Task { node: 1, ..task_from(0, (0, 2), 0) }]).unwrap_err().contains("unknown node"));
        assert!(s.push(Some(0), &[Task { slot: 4, ..task_from(0, (0, 2), 0) }]).unwrap_err().contains("slot 4"));
        assert!(s.pop(2, &mut [Task::default()]).is_err());
        assert!(s.push(Some(2), &[]).is_err());
    }
}
