//! `priority`: the ready task of the highest node priority runs first, then the oldest frame's,
//! then the one that became ready first.
//!
//! One binary heap per class of allowed workers, each behind its own mutex
//! ([`ClassHeaps`](tomii_types::scheduler::ClassHeaps), which also counts pushes and pops); this
//! crate supplies the order. Push and pop never wait for anything but those mutexes. See README.md
//! for the policy and its costs.

#![deny(unsafe_code)]

use std::cmp::Reverse;
use std::ffi::CStr;

use tomii_types::abi::TOMII_SCHED_NEEDS_TIMING;
use tomii_types::scheduler::{ClassHeaps, InitInfo, Scheduler, Task};

/// The order of two tasks: greater runs first; equal keys go in push order.
type Key = (i32, Reverse<u64>, Reverse<u64>);

/// Larger priority, then smaller frame, then earlier ready time.
fn key(task: &Task) -> Key {
    (task.priority, Reverse(task.frame), Reverse(task.ready_ns))
}

#[derive(Debug)]
pub struct Priority {
    /// One heap per distinct worker range among the graph's nodes.
    heaps: ClassHeaps<Key>,
}

impl Scheduler for Priority {
    const NAME: &'static CStr = c"priority";
    const FLAGS: u32 = TOMII_SCHED_NEEDS_TIMING;

    fn create(init: &InitInfo) -> Result<Self, String> {
        Ok(Priority { heaps: ClassHeaps::new(init, Self::NAME) })
    }

    fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        self.heaps.push(tasks, key)
    }

    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        self.heaps.pop(worker, out)
    }

    fn stats(&self) -> String {
        format!(
            r#"{{"pushes":{},"pops":{},"empty_pops":{}}}"#,
            self.heaps.pushed(),
            self.heaps.popped(),
            self.heaps.empty_pops()
        )
    }
}

tomii_types::export_scheduler!(Priority);

#[cfg(test)]
mod tests {
    use super::*;
    use tomii_types::scheduler::testing::{
        assert_exactly_once_under_concurrency, assert_pop_respects_the_buffer_length,
        assert_ranges_honoured_and_nothing_held_back, create, pop_all, task,
    };

    const ALL: (u32, u32) = (0, 2);

    /// A task allowed everywhere with the given priority, frame and ready time.
    fn ranked(handle: u64, priority: i32, frame: u64, ready_ns: u64) -> Task {
        Task { priority, frame, ready_ns, ..task(handle, ALL) }
    }

    #[test]
    fn priority_then_frame_then_ready_time_then_push_order() {
        let s: Priority = create(2, &[ALL], &[]);
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
        assert_eq!(pop_all(&s, 0, 1), [6, 1, 3, 5, 7, 2, 0, 4]);
    }

    #[test]
    fn best_task_across_worker_ranges() {
        let s: Priority = create(2, &[(0, 1), ALL, (1, 2)], &[]);
        s.push(None, &[Task { priority: 2, ..task(0, (1, 2)) }, task(1, (0, 1)), task(2, ALL)]).unwrap();
        s.push(None, &[Task { priority: 1, ..task(3, (0, 1)) }, Task { priority: 3, ..task(4, ALL) }]).unwrap();
        assert_eq!(pop_all(&s, 0, 2), [4, 3, 1, 2]);
        assert_eq!(pop_all(&s, 1, 2), [0]);
    }

    #[test]
    fn worker_ranges_are_honoured_and_nothing_is_held_back() {
        assert_ranges_honoured_and_nothing_held_back::<Priority>();
    }

    #[test]
    fn unknown_worker_range_is_an_error() {
        let s: Priority = create(2, &[ALL], &[]);
        assert!(s.push(None, &[task(0, (1, 2))]).unwrap_err().contains("1..2"));
    }

    #[test]
    fn pop_respects_the_buffer_length() {
        assert_pop_respects_the_buffer_length::<Priority>();
    }

    #[test]
    fn concurrent_push_and_pop_hand_out_each_task_once() {
        // Workers of several ranges scan several heaps while the others push.
        let s = assert_exactly_once_under_concurrency::<Priority>(4, 10_000, &[]);
        let stats = s.stats();
        assert!(stats.contains(r#""pushes":10000"#) && stats.contains(r#""pops":10000"#), "{stats}");
    }
}
