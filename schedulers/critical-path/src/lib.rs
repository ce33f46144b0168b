//! `critical-path`: the ready task with the longest path to the end of its frame runs first, then
//! the oldest frame's, then the first pushed. With `weighted`, the path length is scaled by the
//! task's measured cost, HEFT-like.
//!
//! One binary heap per class of allowed workers, each behind its own mutex
//! ([`ClassHeaps`](tomii_types::scheduler::ClassHeaps), which also counts pushes and pops); this
//! crate supplies the order. Push and pop never wait for anything but those mutexes. See README.md
//! for the policy and its costs.
//!
//! # Memory ordering
//! `weighted` and the largest cost seen are relaxed atomics: both are read once per pushed task,
//! and a change may reach pushes a little late. Tasks pass from push to pop through the heaps'
//! mutexes, which order them.

#![deny(unsafe_code)]

use std::cmp::Reverse;
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use tomii_types::abi::{TOMII_SCHED_NEEDS_TIMING, TomiiKnobDesc};
use tomii_types::scheduler::{ClassHeaps, InitInfo, Scheduler, Task, knob};

/// The order of two tasks: greater urgency, then smaller frame; equal keys go in push order.
type Key = (u128, Reverse<u64>);

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

#[derive(Debug)]
pub struct CriticalPath {
    /// One heap per distinct worker range among the graph's nodes, keyed when a task is pushed.
    heaps: ClassHeaps<Key>,
    weighted: AtomicBool,
    /// The largest `cost_ns` seen in a pushed task: the cost assumed for unmeasured nodes.
    max_cost: AtomicU64,
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
        Ok(CriticalPath {
            heaps: ClassHeaps::new(init, Self::NAME),
            weighted: AtomicBool::new(init.knob_or("weighted", true)?),
            max_cost: AtomicU64::new(0),
        })
    }

    fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        let weighted = self.weighted.load(Relaxed);
        self.heaps.push(tasks, |task| {
            if task.cost_ns > self.max_cost.load(Relaxed) {
                self.max_cost.fetch_max(task.cost_ns, Relaxed);
            }
            (urgency(task, weighted, self.max_cost.load(Relaxed)), Reverse(task.frame))
        })
    }

    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        self.heaps.pop(worker, out)
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
            self.heaps.pushed(),
            self.heaps.popped(),
            self.heaps.empty_pops(),
            self.weighted.load(Relaxed)
        )
    }
}

tomii_types::export_scheduler!(CriticalPath);

#[cfg(test)]
mod tests {
    use super::*;
    use tomii_types::scheduler::testing::{
        assert_exactly_once_under_concurrency, assert_options_are_checked, assert_pop_respects_the_buffer_length,
        assert_ranges_honoured_and_nothing_held_back, create, pop_all, task,
    };

    const ALL: (u32, u32) = (0, 2);

    /// A task allowed everywhere with the given rank, cost and frame.
    fn ranked(handle: u64, rank: u64, cost_ns: u64, frame: u64) -> Task {
        Task { rank, cost_ns, frame, ..task(handle, ALL) }
    }

    /// Rank 3 cost 10 (30), rank 2 cost 40 (80), rank 5 cost unknown (5 × the largest cost seen
    /// so far, 40: 200), and two rank-1 cost-30 (30) tasks of frames 1 and 0.
    fn mixed() -> Vec<Task> {
        vec![ranked(0, 3, 10, 0), ranked(1, 2, 40, 0), ranked(2, 5, 0, 0), ranked(3, 1, 30, 1), ranked(4, 1, 30, 0)]
    }

    #[test]
    fn weighted_orders_by_rank_times_cost_then_frame_then_push_order() {
        let s: CriticalPath = create(2, &[ALL], &[]);
        s.push(None, &mixed()).unwrap();
        s.push(Some(0), &[ranked(5, 3, 10, 0)]).unwrap();
        // 200 (unmeasured, assumed as costly as the costliest seen); 80; then 30 × four: frame 0
        // before frame 1, and push order within frame 0.
        assert_eq!(pop_all(&s, 0, 1), [2, 1, 0, 4, 5, 3]);
    }

    #[test]
    fn unweighted_orders_by_rank_then_frame_then_push_order() {
        let s: CriticalPath = create(2, &[ALL], &[("weighted", "false")]);
        s.push(None, &mixed()).unwrap();
        s.push(Some(0), &[ranked(5, 3, 10, 0)]).unwrap();
        assert_eq!(pop_all(&s, 1, 2), [2, 0, 5, 1, 4, 3]);
    }

    #[test]
    fn set_knob_switches_weighting_for_later_pushes() {
        let s: CriticalPath = create(1, &[(0, 1)], &[]);
        s.set_knob("weighted", "false").unwrap();
        s.push(
            None,
            &[Task { rank: 2, cost_ns: 1, ..task(0, (0, 1)) }, Task { rank: 1, cost_ns: 9, ..task(1, (0, 1)) }],
        )
        .unwrap();
        assert_eq!(pop_all(&s, 0, 1), [0, 1]);
        assert!(s.stats().contains(r#""weighted":false"#));
        assert!(s.set_knob("weighted", "yes").is_err());
        assert!(s.set_knob("bogus", "1").unwrap_err().contains("weighted"));
    }

    #[test]
    fn bad_options_are_rejected() {
        assert_options_are_checked::<CriticalPath>(&[("weighted", "1")], "bogus");
    }

    #[test]
    fn best_task_across_worker_ranges() {
        let s: CriticalPath = create(2, &[(0, 1), ALL, (1, 2)], &[]);
        let r = |handle, rank, range| Task { rank, ..task(handle, range) };
        s.push(None, &[r(0, 9, (1, 2)), r(1, 1, (0, 1)), r(2, 1, ALL), r(3, 2, (0, 1)), r(4, 3, ALL)]).unwrap();
        assert_eq!(pop_all(&s, 0, 2), [4, 3, 1, 2]);
        assert_eq!(pop_all(&s, 1, 2), [0]);
    }

    #[test]
    fn worker_ranges_are_honoured_and_nothing_is_held_back() {
        assert_ranges_honoured_and_nothing_held_back::<CriticalPath>();
    }

    #[test]
    fn pop_respects_the_buffer_length() {
        assert_pop_respects_the_buffer_length::<CriticalPath>();
    }

    #[test]
    fn concurrent_push_and_pop_hand_out_each_task_once() {
        // Workers of several ranges scan several heaps while the others push; ranks and costs vary.
        let s = assert_exactly_once_under_concurrency::<CriticalPath>(4, 10_000, &[]);
        let stats = s.stats();
        assert!(stats.contains(r#""pushes":10000"#) && stats.contains(r#""pops":10000"#), "{stats}");
    }
}
