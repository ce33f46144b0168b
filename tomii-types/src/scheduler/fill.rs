//! Filling a pop's buffer from a queue: the loop at the end of nearly every `pop`.
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

#[cfg(test)]
mod tests {
    use super::*;

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
