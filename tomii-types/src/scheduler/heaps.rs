//! `ClassHeaps`: best-first queues, one binary heap per worker-range class, each behind its own
//! mutex. The policy supplies a key per task (greater runs first); ties go to the earlier push. A
//! pop takes the best tasks among the classes of the popping worker.
//!
//! It never holds two heap locks at once, and never waits for anything but those locks.
//!
//! # Memory ordering
//! The push sequence number and the pop counters are relaxed atomics: the sequence number only
//! needs to be unique, and the counters are statistics. Tasks pass from push to pop through the
//! heaps' mutexes, which order them.

#![forbid(unsafe_code)]

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use super::{InitInfo, RangeClasses, Task, fill};

/// A queued task with its key and its push sequence number, the last tie-break.
#[derive(Debug)]
struct Queued<K> {
    key: K,
    seq: u64,
    task: Task,
}

impl<K: Ord> Ord for Queued<K> {
    /// Greater key first, then earlier push.
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key).then_with(|| other.seq.cmp(&self.seq))
    }
}

impl<K: Ord> PartialOrd for Queued<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K: Ord> PartialEq for Queued<K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<K: Ord> Eq for Queued<K> {}

/// Ready tasks in one heap per [`RangeClasses`] class, ordered by a key `K` the scheduler computes
/// at push time (greater first), then by push order.
///
/// Push locks the task's heap once per task: O(log n). A pop by a worker of a single class locks
/// that heap once and takes up to `out.len()` tasks. A worker of several classes scans, for each
/// task taken, the heads of its heaps one lock at a time, then locks the best heap to take it; a
/// concurrent pop may win the task the scan saw, and the pop then takes that heap's next best, or
/// scans again if it emptied.
#[derive(Debug)]
pub struct ClassHeaps<K> {
    /// Named in the error for a poisoned lock.
    scheduler: &'static CStr,
    classes: RangeClasses,
    heaps: Box<[Mutex<BinaryHeap<Queued<K>>>]>,
    /// Push sequence numbers handed out so far, which is also the number of tasks pushed.
    next_seq: AtomicU64,
    /// Tasks handed out, and pops that handed out nothing.
    popped: AtomicU64,
    empty_pops: AtomicU64,
}

impl<K: Ord + Clone> ClassHeaps<K> {
    /// One empty heap per worker-range class of `init`, with room for the most tasks of that class
    /// that can be ready at once. `scheduler` names the scheduler in error messages.
    pub fn new(init: &InitInfo, scheduler: &'static CStr) -> ClassHeaps<K> {
        let classes = RangeClasses::new(init);
        let heaps = (0..classes.len()).map(|class| Mutex::new(BinaryHeap::with_capacity(classes.capacity(class))));
        ClassHeaps {
            scheduler,
            heaps: heaps.collect(),
            classes,
            next_seq: AtomicU64::new(0),
            popped: AtomicU64::new(0),
            empty_pops: AtomicU64::new(0),
        }
    }

    /// Queues `tasks` in push order, each under `key(task)`, computed just before it is queued.
    /// Fails on a task whose worker range no node declared; the tasks before it stay queued.
    pub fn push(&self, tasks: &[Task], mut key: impl FnMut(&Task) -> K) -> Result<(), String> {
        let first = self.next_seq.fetch_add(tasks.len() as u64, Relaxed);
        for (seq, task) in (first..).zip(tasks) {
            let key = key(task);
            self.lock(self.classes.class_of(task)?)?.push(Queued { key, seq, task: *task });
        }
        Ok(())
    }

    /// Moves up to `out.len()` of the best tasks `worker` may run into `out`, best first, and
    /// returns how many.
    pub fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        let count = match self.classes.classes_of(worker) {
            [] => 0,
            &[only] => self.take_from(only, out)?,
            several => self.take_best(several, out)?,
        };
        self.popped.fetch_add(count as u64, Relaxed);
        if count == 0 {
            self.empty_pops.fetch_add(1, Relaxed);
        }
        Ok(count)
    }

    /// How many tasks were pushed so far.
    pub fn pushed(&self) -> u64 {
        self.next_seq.load(Relaxed)
    }

    /// How many tasks were popped so far.
    pub fn popped(&self) -> u64 {
        self.popped.load(Relaxed)
    }

    /// How many pops so far found nothing for their worker.
    pub fn empty_pops(&self) -> u64 {
        self.empty_pops.load(Relaxed)
    }

    fn lock(&self, class: usize) -> Result<MutexGuard<'_, BinaryHeap<Queued<K>>>, String> {
        self.heaps[class]
            .lock()
            .map_err(|_| format!("{}: a heap lock was poisoned by an earlier panic", self.scheduler.to_string_lossy()))
    }

    /// Takes up to `out.len()` tasks from one class, best first, under one lock.
    fn take_from(&self, class: usize, out: &mut [Task]) -> Result<usize, String> {
        let mut heap = self.lock(class)?;
        Ok(fill(out, || heap.pop().map(|queued| queued.task)))
    }

    /// Takes up to `out.len()` tasks from several classes, each time from the class whose best task
    /// is the best. Locks one heap at a time (see the type's documentation).
    fn take_best(&self, classes: &[usize], out: &mut [Task]) -> Result<usize, String> {
        let mut count = 0;
        while count < out.len() {
            let Some(class) = self.best_class(classes)? else { break };
            if let Some(queued) = self.lock(class)?.pop() {
                out[count] = queued.task;
                count += 1;
            }
        }
        Ok(count)
    }

    /// The class among `classes` whose best task is the best, or `None` when all are empty.
    fn best_class(&self, classes: &[usize]) -> Result<Option<usize>, String> {
        let mut best: Option<(usize, (K, Reverse<u64>))> = None;
        for &class in classes {
            // The heaps' own order: greater key, then earlier push.
            let Some(rank) = self.lock(class)?.peek().map(|q| (q.key.clone(), Reverse(q.seq))) else { continue };
            if best.as_ref().is_none_or(|(_, best_rank)| rank > *best_rank) {
                best = Some((class, rank));
            }
        }
        Ok(best.map(|(class, _)| class))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{init, task};
    use super::*;

    const ALL: (u32, u32) = (0, 2);

    fn pop_all<K: Ord + Clone>(heaps: &ClassHeaps<K>, worker: u32, max: usize) -> Vec<u64> {
        let mut out = vec![Task::default(); max];
        let mut handles = Vec::new();
        loop {
            let n = heaps.pop(worker, &mut out).unwrap();
            if n == 0 {
                return handles;
            }
            handles.extend(out[..n].iter().map(|t| t.handle));
        }
    }

    #[test]
    fn greater_key_first_then_push_order() {
        let heaps = ClassHeaps::new(&init(2, &[ALL], &[]), c"test");
        heaps.push(&[task(0, ALL), task(1, ALL), task(2, ALL)], |t| t.handle % 2).unwrap();
        heaps.push(&[task(3, ALL), task(4, ALL)], |t| t.handle % 2).unwrap();
        assert_eq!(pop_all(&heaps, 0, 8), [1, 3, 0, 2, 4]);
        assert_eq!((heaps.pushed(), heaps.popped(), heaps.empty_pops()), (5, 5, 1));
    }

    #[test]
    fn a_worker_of_several_classes_gets_the_best_across_them() {
        let heaps = ClassHeaps::new(&init(2, &[(0, 1), ALL, (1, 2)], &[]), c"test");
        let keys = [2, 0, 0, 1, 3];
        let tasks = [task(0, (1, 2)), task(1, (0, 1)), task(2, ALL), task(3, (0, 1)), task(4, ALL)];
        heaps.push(&tasks, |t| keys[t.handle as usize]).unwrap();
        // Equal keys 0 and 0 in two heaps: task 1 was pushed before task 2.
        assert_eq!(pop_all(&heaps, 0, 2), [4, 3, 1, 2]);
        assert_eq!(pop_all(&heaps, 1, 2), [0]);
        assert!(pop_all(&heaps, 7, 2).is_empty(), "a worker outside every range gets nothing");
    }

    #[test]
    fn an_undeclared_range_fails_after_queuing_the_tasks_before_it() {
        let heaps = ClassHeaps::new(&init(2, &[ALL], &[]), c"test");
        assert!(heaps.push(&[task(0, ALL), task(1, (1, 2))], |_| 0).unwrap_err().contains("1..2"));
        assert_eq!(heaps.pushed(), 2);
        assert_eq!(pop_all(&heaps, 0, 4), [0]);
    }
}
