//! `fifo`: ready tasks run in the order they became ready.
//!
//! One lock-free bounded ring of task handles (`HandleRing`) per class of allowed workers (nearly always a
//! single class: every worker); pop writes only handles (`TOMII_SCHED_POP_HANDLES`). The queues
//! are sized at create time for the most tasks that can be ready at once, so push and pop never
//! allocate. A pop takes a fair share of what waits (`TOMII_SCHED_BATCH_POPS`): at most the
//! queue's length divided among the workers, rounded up, so one worker never empties a queue the
//! others are waiting on. See README.md for the policy and its costs.

#![deny(unsafe_code)]

use tomii_types::abi::{TOMII_SCHED_BATCH_POPS, TOMII_SCHED_POP_HANDLES};
use tomii_types::scheduler::{HandleRing, InitInfo, KeepGate, RangeClasses, Scheduler, Task, fair_share, fill_handles};

pub struct Fifo {
    /// The distinct worker ranges among the graph's nodes, in order of first appearance.
    classes: RangeClasses,
    /// One queue of handles per class: tasks allowed on the same workers share a queue.
    queues: Box<[HandleRing]>,
    /// The run's workers, among whom a pop shares what waits.
    workers: u32,
}

impl Fifo {
    /// The one queue, when every task may run on every worker (nearly always).
    #[inline]
    fn single_queue(&self) -> Option<&HandleRing> {
        match (&*self.queues, self.classes.is_single()) {
            ([queue], true) => Some(queue),
            _ => None,
        }
    }
}

impl Scheduler for Fifo {
    const NAME: &'static std::ffi::CStr = c"fifo";
    const FLAGS: u32 = TOMII_SCHED_POP_HANDLES | TOMII_SCHED_BATCH_POPS;
    const KEEPS: bool = true;

    fn create(init: &InitInfo) -> Result<Self, String> {
        let classes = RangeClasses::new(init);
        let queues = (0..classes.len()).map(|class| HandleRing::new(classes.capacity(class))).collect();
        Ok(Fifo { classes, queues, workers: init.workers })
    }

    #[inline]
    fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        if let Some(queue) = self.single_queue() {
            for task in tasks {
                queue.push(task.handle).map_err(|_| full())?;
            }
            return Ok(());
        }
        for task in tasks {
            self.queues[self.classes.class_of(task)?].push(task.handle).map_err(|_| full())?;
        }
        Ok(())
    }

    /// The pushing worker asks for work right after: when nothing older waits in a queue it
    /// serves, the first task it may run is the one it would pop next, so it keeps that one.
    #[inline]
    fn push_keep(&self, worker: u32, tasks: &[Task]) -> Result<Option<usize>, String> {
        if let Some(queue) = self.single_queue() {
            let keep = !tasks.is_empty() && queue.is_empty();
            for task in &tasks[usize::from(keep)..] {
                queue.push(task.handle).map_err(|_| full())?;
            }
            return Ok(keep.then_some(0));
        }
        let idle = self.classes.classes_of(worker).iter().all(|&class| self.queues[class].is_empty());
        let kept = idle.then(|| tasks.iter().position(|t| (t.worker_lo..t.worker_hi).contains(&worker))).flatten();
        for (index, task) in tasks.iter().enumerate() {
            if Some(index) != kept {
                self.queues[self.classes.class_of(task)?].push(task.handle).map_err(|_| full())?;
            }
        }
        Ok(kept)
    }

    /// With a single queue, `push_keep`'s rule is "keep the first task when the queue is empty":
    /// the host applies it from the queue's counters, without a call.
    fn keep_gate(&self, _worker: u32) -> Option<KeepGate<'_>> {
        self.single_queue().map(HandleRing::keep_gate)
    }

    #[inline]
    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        if let Some(queue) = self.single_queue() {
            return Ok(fill_handles(fair_share(out, queue.len(), self.workers), || queue.pop()));
        }
        let mut count = 0;
        for &class in self.classes.classes_of(worker) {
            let queue = &self.queues[class];
            count += fill_handles(fair_share(&mut out[count..], queue.len(), self.workers), || queue.pop());
        }
        Ok(count)
    }
}

#[cold]
fn full() -> String {
    "fifo queue is full: more tasks were pushed than can be ready".to_owned()
}

tomii_types::export_scheduler!(Fifo);

/// The trait called directly, with the helpers of `tomii_types::scheduler::testing`.
#[cfg(test)]
mod tests {
    use tomii_types::scheduler::testing::{create, create_from, init, pop_all, task};

    use super::*;

    #[test]
    fn a_worker_keeps_the_first_task_only_when_nothing_older_waits() {
        let s: Fifo = create(2, &[(0, 2)], &[]);
        assert_eq!(s.push_keep(0, &[task(1, (0, 2)), task(2, (0, 2))]), Ok(Some(0)));
        assert_eq!(s.push_keep(1, &[task(3, (0, 2))]), Ok(None), "task 2 is older: 3 is queued behind it");
        assert_eq!(pop_all(&s, 1, 8), [2, 3]);
    }

    #[test]
    fn a_pop_takes_a_fair_share_of_what_waits() {
        let s: Fifo = create_from(&InitInfo { slots: 8, ..init(2, &[(0, 2)], &[]) });
        s.push(None, &(1..=5).map(|h| task(h, (0, 2))).collect::<Vec<_>>()).unwrap();
        let mut out = [Task::default(); 16];
        assert_eq!(s.pop(0, &mut out), Ok(3), "5 waiting, 2 workers: 3");
        assert_eq!(s.pop(1, &mut out), Ok(1), "2 waiting: 1");
        assert_eq!(s.pop(1, &mut out), Ok(1), "the last one");
        assert_eq!(s.pop(0, &mut out), Ok(0));
        let alone: Fifo = create_from(&InitInfo { slots: 8, ..init(1, &[(0, 1)], &[]) });
        alone.push(None, &(1..=5).map(|h| task(h, (0, 1))).collect::<Vec<_>>()).unwrap();
        assert_eq!(alone.pop(0, &mut out[..4]), Ok(4), "a worker alone takes what fits");
        assert_eq!(pop_all(&alone, 0, 8), [5]);
    }

    #[test]
    fn with_worker_ranges_a_worker_keeps_only_a_task_it_may_run() {
        let s: Fifo = create(2, &[(0, 2), (1, 2)], &[]);
        assert_eq!(s.push_keep(0, &[task(1, (1, 2)), task(2, (0, 2))]), Ok(Some(1)));
        assert_eq!(s.push_keep(0, &[task(3, (1, 2))]), Ok(None), "worker 0 may not run it");
        assert_eq!(pop_all(&s, 1, 8), [1, 3]);
        assert_eq!(s.push_keep(0, &[task(4, (0, 2))]), Ok(Some(0)), "worker 0's queues are empty again");
    }
}
