//! The busy-wait kernel: the loop of plugins/synthetic's `spin`, unchanged, so that a kernel of
//! N µs costs the same here as in Tomii. Never call it for an empty kernel (Tomii runs `noop`).

use std::time::{Duration, Instant};

use crate::dag::Dag;
use crate::executor::Body;

/// The DAG file's body: task t spins its `cost_us` (nothing for 0).
impl Body for Dag {
    fn run(&self, _slot: usize, _frame: u64, task: u32) -> bool {
        let us = self.cost(task);
        if us > 0 {
            spin(us);
        }
        true
    }
}

/// Busy-waits until the monotonic clock has advanced `us` microseconds.
pub fn spin(us: u64) {
    let duration = Duration::from_micros(us);
    let start = Instant::now();
    while start.elapsed() < duration {
        std::hint::spin_loop();
    }
}
