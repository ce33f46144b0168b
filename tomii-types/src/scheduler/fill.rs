//! Filling a pop's buffer from a queue: the loop at the end of nearly every `pop`, with whole
//! descriptors or, for `TOMII_SCHED_POP_HANDLES`, handles only.
//!
//! Never allocates and never takes more from the queue than the buffer has room for.

#![forbid(unsafe_code)]

use super::Task;

/// Moves tasks from `next` (a queue's pop) into `out` until `out` is full or `next` returns `None`,
/// and returns how many it moved. `next` is not called once `out` is full.
#[inline]
pub fn fill(out: &mut [Task], mut next: impl FnMut() -> Option<Task>) -> usize {
    let mut count = 0;
    while count < out.len() {
        let Some(task) = next() else { break };
        out[count] = task;
        count += 1;
    }
    count
}

/// Like [`fill`], for a scheduler that queues handles (`TOMII_SCHED_POP_HANDLES`): writes only
/// the `handle` of each descriptor of `out` it fills, and returns how many.
#[inline]
pub fn fill_handles(out: &mut [Task], mut next: impl FnMut() -> Option<u64>) -> usize {
    let mut count = 0;
    while count < out.len() {
        let Some(handle) = next() else { break };
        out[count].handle = handle;
        count += 1;
    }
    count
}

/// The part of `out` a pop that takes a fair share (`TOMII_SCHED_BATCH_POPS`) fills from a shared
/// queue holding `waiting` tasks: that many divided among `workers`, rounded up, at least one and
/// at most `out`'s room, so one worker never empties a queue the others wait on.
#[inline]
pub fn fair_share(out: &mut [Task], waiting: usize, workers: u32) -> &mut [Task] {
    let room = waiting.div_ceil(workers.max(1) as usize).max(1).min(out.len());
    &mut out[..room]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fair_share_divides_what_waits_among_the_workers() {
        let mut out = [Task::default(); 8];
        assert_eq!(fair_share(&mut out, 5, 2).len(), 3);
        assert_eq!(fair_share(&mut out, 1, 2).len(), 1);
        assert_eq!(fair_share(&mut out, 0, 2).len(), 1, "a queue that looked empty may not be");
        assert_eq!(fair_share(&mut out, 100, 1).len(), 8, "at most the room");
        assert_eq!(fair_share(&mut [], 100, 1).len(), 0);
    }

    #[test]
    fn fill_handles_writes_handles_only_and_stops_when_full() {
        let mut queue = vec![7u64, 8, 9];
        let mut out = [Task { node: 5, ..Task::default() }; 2];
        assert_eq!(fill_handles(&mut out, || queue.pop()), 2);
        assert_eq!(handles(&out), [9, 8]);
        assert!(out.iter().all(|t| t.node == 5), "only the handles are written");
        assert_eq!(queue, [7]);
        assert_eq!(fill_handles(&mut out, || queue.pop()), 1);
        assert!(queue.is_empty());
    }

    fn handles(tasks: &[Task]) -> Vec<u64> {
        tasks.iter().map(|t| t.handle).collect()
    }

    #[test]
    fn stops_when_the_buffer_is_full_without_taking_more() {
        let mut queue: Vec<Task> = (0..5).map(|handle| Task { handle, ..Task::default() }).collect();
        let mut out = [Task::default(); 3];
        assert_eq!(fill(&mut out, || queue.pop()), 3);
        assert_eq!(handles(&out), [4, 3, 2]);
        assert_eq!(queue.len(), 2);
        assert_eq!(fill(&mut [], || queue.pop()), 0);
        assert_eq!(queue.len(), 2);
    }

    #[test]
    fn stops_when_the_queue_runs_out() {
        let mut queue = vec![Task { handle: 9, ..Task::default() }];
        let mut out = [Task::default(); 3];
        assert_eq!(fill(&mut out, || queue.pop()), 1);
        assert_eq!(out[0].handle, 9);
    }
}
