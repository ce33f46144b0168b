//! `fifo`: ready tasks run in the order they became ready.
//!
//! One lock-free bounded queue of task handles per class of allowed workers (nearly always a
//! single class: every worker); pop writes only handles (`TOMII_SCHED_POP_HANDLES`). The queues
//! are sized at create time for the most tasks that can be ready at once, so push and pop never
//! allocate. See README.md for the policy and its costs.

#![deny(unsafe_code)]

use crossbeam_queue::ArrayQueue;
use tomii_types::abi::TOMII_SCHED_POP_HANDLES;
use tomii_types::scheduler::{InitInfo, RangeClasses, Scheduler, Task, fill_handles};

pub struct Fifo {
    /// The distinct worker ranges among the graph's nodes, in order of first appearance.
    classes: RangeClasses,
    /// One queue of handles per class: tasks allowed on the same workers share a queue.
    queues: Box<[ArrayQueue<u64>]>,
}

impl Scheduler for Fifo {
    const NAME: &'static std::ffi::CStr = c"fifo";
    const FLAGS: u32 = TOMII_SCHED_POP_HANDLES;

    fn create(init: &InitInfo) -> Result<Self, String> {
        let classes = RangeClasses::new(init);
        let queues = (0..classes.len()).map(|class| ArrayQueue::new(classes.capacity(class).max(1))).collect();
        Ok(Fifo { classes, queues })
    }

    #[inline]
    fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        if let ([queue], true) = (&*self.queues, self.classes.is_single()) {
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

    #[inline]
    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        if let ([queue], true) = (&*self.queues, self.classes.is_single()) {
            return Ok(fill_handles(out, || queue.pop()));
        }
        let mut count = 0;
        for &class in self.classes.classes_of(worker) {
            count += fill_handles(&mut out[count..], || self.queues[class].pop());
        }
        Ok(count)
    }
}

#[cold]
fn full() -> String {
    "fifo queue is full: more tasks were pushed than can be ready".to_owned()
}

tomii_types::export_scheduler!(Fifo);
