//! `fifo`: ready tasks run in the order they became ready.
//!
//! One lock-free bounded queue per class of allowed workers (nearly always a single class: every
//! worker). The queues are sized at create time for the most tasks that can be ready at once, so
//! push and pop never allocate. See README.md for the policy and its costs.

#![deny(unsafe_code)]

use crossbeam_queue::ArrayQueue;
use tomii_types::scheduler::{InitInfo, Scheduler, Task};

/// Tasks allowed on the same workers share a queue.
struct RangeQueue {
    worker_lo: u32,
    worker_hi: u32,
    tasks: ArrayQueue<Task>,
}

pub struct Fifo {
    /// One queue per distinct worker range among the graph's nodes, in order of first appearance.
    queues: Vec<RangeQueue>,
}

impl Fifo {
    #[inline]
    fn queue_for(&self, task: &Task) -> Result<&ArrayQueue<Task>, String> {
        if let [only] = &self.queues[..] {
            return Ok(&only.tasks); // every node shares one range: the usual case
        }
        self.queues
            .iter()
            .find(|q| q.worker_lo == task.worker_lo && q.worker_hi == task.worker_hi)
            .map(|q| &q.tasks)
            .ok_or_else(|| {
                format!(
                    "task of node {} has worker range {}..{} that no node declared",
                    task.node, task.worker_lo, task.worker_hi
                )
            })
    }
}

impl Scheduler for Fifo {
    const NAME: &'static std::ffi::CStr = c"fifo";

    fn create(init: &InitInfo) -> Result<Self, String> {
        let mut queues: Vec<(u32, u32, u64)> = Vec::new();
        for node in &init.nodes {
            let tasks = u64::from(node.factor) * u64::from(init.slots);
            match queues.iter_mut().find(|(lo, hi, _)| (*lo, *hi) == (node.worker_lo, node.worker_hi)) {
                Some((_, _, capacity)) => *capacity += tasks,
                None => queues.push((node.worker_lo, node.worker_hi, tasks)),
            }
        }
        let queues = queues
            .into_iter()
            .map(|(worker_lo, worker_hi, capacity)| RangeQueue {
                worker_lo,
                worker_hi,
                tasks: ArrayQueue::new(capacity.max(1) as usize),
            })
            .collect();
        Ok(Fifo { queues })
    }

    fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        for task in tasks {
            self.queue_for(task)?
                .push(*task)
                .map_err(|_| "fifo queue is full: more tasks were pushed than can be ready".to_owned())?;
        }
        Ok(())
    }

    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        let mut count = 0;
        for queue in self.queues.iter().filter(|q| (q.worker_lo..q.worker_hi).contains(&worker)) {
            while count < out.len() {
                let Some(task) = queue.tasks.pop() else { break };
                out[count] = task;
                count += 1;
            }
        }
        Ok(count)
    }
}

tomii_types::export_scheduler!(Fifo);
