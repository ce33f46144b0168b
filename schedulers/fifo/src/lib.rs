//! `fifo`: ready tasks run in the order they became ready.
//!
//! One lock-free bounded queue per class of allowed workers (nearly always a single class: every
//! worker). The queues are sized at create time for the most tasks that can be ready at once, so
//! push and pop never allocate. See README.md for the policy and its costs.

#![deny(unsafe_code)]

use crossbeam_queue::ArrayQueue;
use tomii_types::scheduler::{InitInfo, RangeClasses, Scheduler, Task, fill};

pub struct Fifo {
    /// The distinct worker ranges among the graph's nodes, in order of first appearance.
    classes: RangeClasses,
    /// One queue per class: tasks allowed on the same workers share a queue.
    queues: Box<[ArrayQueue<Task>]>,
}

impl Scheduler for Fifo {
    const NAME: &'static std::ffi::CStr = c"fifo";

    fn create(init: &InitInfo) -> Result<Self, String> {
        let classes = RangeClasses::new(init);
        let queues = (0..classes.len()).map(|class| ArrayQueue::new(classes.capacity(class).max(1))).collect();
        Ok(Fifo { classes, queues })
    }

    #[inline]
    fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        if let ([queue], true) = (&*self.queues, self.classes.is_single()) {
            for task in tasks {
                queue.push(*task).map_err(|_| full())?;
            }
            return Ok(());
        }
        for task in tasks {
            self.queues[self.classes.class_of(task)?].push(*task).map_err(|_| full())?;
        }
        Ok(())
    }

    #[inline]
    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        if let ([queue], true) = (&*self.queues, self.classes.is_single()) {
            return Ok(fill(out, || queue.pop()));
        }
        let mut count = 0;
        for &class in self.classes.classes_of(worker) {
            count += fill(&mut out[count..], || self.queues[class].pop());
        }
        Ok(count)
    }
}

#[cold]
fn full() -> String {
    "fifo queue is full: more tasks were pushed than can be ready".to_owned()
}

tomii_types::export_scheduler!(Fifo);
