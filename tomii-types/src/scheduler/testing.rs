//! Test helpers for scheduler crates: builders for [`InitInfo`] and [`Task`], pop loops, and the
//! checks that every scheduler's unit tests share, the chief one being
//! [`assert_exactly_once_under_concurrency`]. They call the [`Scheduler`] trait directly, without
//! the ABI; the host-level conformance suite (tomii-core/tests/conformance.rs) is separate.
//!
//! Compiled only with the cargo feature `testing` (and for this crate's own tests), so it never
//! ends up in a plugin: a scheduler crate enables it in `[dev-dependencies]` with
//! `tomii-types = { workspace = true, features = ["testing"] }`. Every helper panics on failure,
//! like `assert!`.

#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use super::{InitInfo, NO_WORKER, NodeSummary, Scheduler, Task};

/// The slots of every run [`init`] describes.
pub const SLOTS: u32 = 4;

/// A run of `workers` workers and [`SLOTS`] slots over a graph of one node per range (node `i` is
/// named `n{i}`, factor 1, priority 0), with the user's options `knobs`.
pub fn init(workers: u32, ranges: &[(u32, u32)], knobs: &[(&str, &str)]) -> InitInfo {
    let node = |(i, &(worker_lo, worker_hi)): (usize, &(u32, u32))| NodeSummary {
        name: format!("n{i}"),
        factor: 1,
        priority: 0,
        worker_lo,
        worker_hi,
    };
    InitInfo {
        workers,
        slots: SLOTS,
        tasks_per_frame: ranges.len() as u64,
        max_ready: u64::from(SLOTS) * ranges.len() as u64,
        frames: 0,
        nodes: ranges.iter().enumerate().map(node).collect(),
        knobs: knobs.iter().map(|&(k, v)| (k.to_owned(), v.to_owned())).collect(),
    }
}

/// Checks `knobs` as the export shim does, then creates an `S` for [`init`]`(workers, ranges, knobs)`.
pub fn create<S: Scheduler>(workers: u32, ranges: &[(u32, u32)], knobs: &[(&str, &str)]) -> S {
    create_from(&init(workers, ranges, knobs))
}

/// Checks `init`'s options as the export shim does, then creates an `S` for it.
pub fn create_from<S: Scheduler>(init: &InitInfo) -> S {
    let name = S::NAME.to_string_lossy();
    init.check_knobs(S::KNOBS).unwrap_or_else(|e| panic!("{name} refused the options {:?}: {e}", init.knobs));
    S::create(init).unwrap_or_else(|e| panic!("{name} failed to create: {e}"))
}

/// A task of node 0 allowed on workers `worker_lo .. worker_hi`, made ready by the host.
pub fn task(handle: u64, (worker_lo, worker_hi): (u32, u32)) -> Task {
    Task { handle, worker_lo, worker_hi, locality: NO_WORKER, ..Task::default() }
}

/// Like [`task`], made ready by worker `producer` (its `locality`).
pub fn task_from(handle: u64, range: (u32, u32), producer: u32) -> Task {
    Task { locality: producer, ..task(handle, range) }
}

/// Pops once for `worker` with a buffer of `max`; the handles it got.
pub fn pop_once<S: Scheduler>(s: &S, worker: u32, max: usize) -> Vec<u64> {
    let mut out = vec![Task::default(); max];
    let n = s.pop(worker, &mut out).unwrap_or_else(|e| panic!("pop by worker {worker} failed: {e}"));
    assert!(n <= max, "pop returned {n} tasks for a buffer of {max}");
    out[..n].iter().map(|t| t.handle).collect()
}

/// Pops with a buffer of `max` until the scheduler has nothing for `worker`; the handles it got.
pub fn pop_all<S: Scheduler>(s: &S, worker: u32, max: usize) -> Vec<u64> {
    let mut handles = Vec::new();
    loop {
        let got = pop_once(s, worker, max);
        if got.is_empty() {
            return handles;
        }
        handles.extend(got);
    }
}

/// The graph of the concurrency scenario on `workers` workers: node 0 on every worker, node 1 on
/// worker 1 alone, node 2 on the upper half.
pub fn scenario_ranges(workers: u32) -> [(u32, u32); 3] {
    [(0, workers), (1, 2), (workers / 2, workers)]
}

/// The `i`th of the `per` tasks pushed by worker `t`: mostly of node 0, every fifth restricted;
/// producers, frames, slots, priorities, ranks and costs vary, so that every policy has work.
fn scenario_task(workers: u32, t: u32, i: u64, per: u64) -> Task {
    let node = match i % 10 {
        0 => 1,
        5 => 2,
        _ => 0,
    };
    let producer = match i % 3 {
        0 => NO_WORKER,
        _ => (t + i as u32) % workers,
    };
    Task {
        node,
        frame: i / 64,
        slot: (i / 64 % u64::from(SLOTS)) as u32,
        priority: (i % 5) as i32,
        rank: i % 7,
        cost_ns: i % 4,
        ready_ns: i,
        ..task_from(u64::from(t) * per + i, scenario_ranges(workers)[node as usize], producer)
    }
}

/// Runs `threads` threads as the workers of an `S` created over [`scenario_ranges`] with the
/// options `knobs`. Each pushes its share of `tasks` tasks in chunks of 1 to 5 (every fourth chunk
/// of worker 0 as the host; a worker's through `push_keep` when `S::KEEPS`, a kept task counting
/// as popped by it) and pops 1 to 4 after each chunk, then all pop until every task is out.
///
/// Asserts that every task comes out exactly once, on a worker of its range, that no pop overfills
/// its buffer, and that no task is lost (all are out within 60 s). Returns the scheduler, for its
/// statistics. `threads` must be at least 2, and every pushed task is counted by its pop.
pub fn assert_exactly_once_under_concurrency<S: Scheduler>(threads: u32, tasks: u64, knobs: &[(&str, &str)]) -> S {
    assert!(threads >= 2, "the scenario needs at least 2 workers");
    let per = tasks / u64::from(threads);
    let total = (per * u64::from(threads)) as usize;
    // Any number of the tasks may be queued at once: slots enough for a queue sized by `max_ready`.
    let mut room = init(threads, &scenario_ranges(threads), knobs);
    room.slots = u32::try_from(tasks).unwrap_or(u32::MAX);
    room.max_ready = tasks.saturating_mul(room.nodes.len() as u64);
    let s: S = create_from(&room);
    let popped = AtomicUsize::new(0);
    let deadline = Instant::now() + Duration::from_secs(60);
    let results: Vec<Vec<(u64, u32)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (s, popped) = (&s, &popped);
                scope.spawn(move || {
                    let mut got = Vec::new();
                    let pop = |max: usize, got: &mut Vec<(u64, u32)>| {
                        let handles = pop_once(s, t, max);
                        popped.fetch_add(handles.len(), Relaxed);
                        got.extend(handles.into_iter().map(|handle| (handle, t)));
                    };
                    let mut i = 0;
                    while i < per {
                        let chunk = ((i % 5) + 1).min(per - i);
                        let tasks: Vec<Task> = (i..i + chunk).map(|i| scenario_task(threads, t, i, per)).collect();
                        let pusher = if t == 0 && i % 4 == 0 { None } else { Some(t) };
                        match pusher {
                            Some(worker) if S::KEEPS => {
                                let kept = s.push_keep(worker, &tasks);
                                let kept = kept.unwrap_or_else(|e| panic!("push_keep by worker {t} failed: {e}"));
                                if let Some(index) = kept {
                                    assert!(index < tasks.len(), "push_keep kept {index} of {}", tasks.len());
                                    popped.fetch_add(1, Relaxed);
                                    got.push((tasks[index].handle, t));
                                }
                            }
                            _ => s.push(pusher, &tasks).unwrap_or_else(|e| panic!("push by worker {t} failed: {e}")),
                        }
                        pop((i % 4) as usize + 1, &mut got);
                        i += chunk;
                    }
                    while popped.load(Relaxed) < total {
                        assert!(Instant::now() < deadline, "tasks were lost");
                        pop(4, &mut got);
                    }
                    got
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let mut seen = vec![0u32; total];
    for (handle, worker) in results.into_iter().flatten() {
        seen[handle as usize] += 1;
        let expected = scenario_task(threads, (handle / per) as u32, handle % per, per);
        assert!((expected.worker_lo..expected.worker_hi).contains(&worker), "task {handle} ran on {worker}");
    }
    assert!(seen.iter().all(|&n| n == 1), "a task was popped twice or never");
    s
}

/// On 2 workers with ranges `0..1`, `1..2` and `0..2`: each worker gets every task of its ranges
/// and none other, and a worker outside every range gets nothing (for schedulers that answer an
/// unknown worker with nothing rather than an error).
pub fn assert_ranges_honoured_and_nothing_held_back<S: Scheduler>() {
    let ranges = [(0, 1), (1, 2), (0, 2)];
    let s: S = create(2, &ranges, &[]);
    let tasks: Vec<Task> = (0..30).map(|h| task(h, ranges[h as usize % 3])).collect();
    s.push(Some(0), &tasks).unwrap();
    let zero = pop_all(&s, 0, 2);
    assert_eq!(zero.len(), 20, "worker 0 may run the 10 tasks of 0..1 and the 10 of 0..2");
    assert!(zero.iter().all(|&h| h % 3 != 1));
    let one = pop_all(&s, 1, 2);
    assert_eq!(one.len(), 10);
    assert!(one.iter().all(|&h| h % 3 == 1));
    assert!(pop_all(&s, 7, 2).is_empty(), "a worker outside every range gets nothing");
}

/// On 1 worker, with 10 tasks queued: pops with buffers of 0, 3 and 20 get 0, 3 and 7.
pub fn assert_pop_respects_the_buffer_length<S: Scheduler>() {
    let s: S = create(1, &[(0, 1)], &[]);
    s.push(None, &(0..10).map(|h| task(h, (0, 1))).collect::<Vec<_>>()).unwrap();
    assert_eq!(s.pop(0, &mut []).unwrap(), 0);
    assert_eq!(s.pop(0, &mut [Task::default(); 3]).unwrap(), 3);
    assert_eq!(s.pop(0, &mut [Task::default(); 20]).unwrap(), 7);
}

/// Each `(key, value)` of `bad` makes `create` fail with a message naming both; the option
/// `unknown` is refused before `create` with a message naming it and every key of `bad`.
pub fn assert_options_are_checked<S: Scheduler>(bad: &[(&str, &str)], unknown: &str) {
    for &(key, value) in bad {
        let error = S::create(&init(2, &[(0, 2)], &[(key, value)])).err().expect("a bad option was accepted");
        assert!(error.contains(key) && error.contains(value), "{error}");
    }
    let error = init(2, &[(0, 2)], &[(unknown, "1")]).check_knobs(S::KNOBS).unwrap_err();
    assert!(error.contains(unknown), "{error}");
    for &(key, _) in bad {
        assert!(error.contains(key), "{error}");
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::ffi::CStr;
    use std::sync::Mutex;
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::abi::TomiiKnobDesc;
    use crate::scheduler::knob;

    /// A correct FIFO that honours worker ranges or, with `dup`, one that hands out task 0 twice.
    struct Fifo {
        queue: Mutex<VecDeque<Task>>,
        dup: bool,
        duplicated: AtomicBool,
    }

    impl Scheduler for Fifo {
        const NAME: &'static CStr = c"fifo";
        const KNOBS: &'static [TomiiKnobDesc] = &[knob(c"dup", c"bool", c"false", c"true|false", c"Break.")];

        fn create(init: &InitInfo) -> Result<Self, String> {
            Ok(Fifo { queue: Mutex::default(), dup: init.knob_or("dup", false)?, duplicated: AtomicBool::new(false) })
        }

        fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
            self.queue.lock().unwrap().extend(tasks);
            Ok(())
        }

        fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
            let mut queue = self.queue.lock().unwrap();
            let (mut count, mut index) = (0, 0);
            while count < out.len() && index < queue.len() {
                let task = queue[index];
                if !(task.worker_lo..task.worker_hi).contains(&worker) {
                    index += 1;
                    continue;
                }
                out[count] = task;
                count += 1;
                if task.handle == 0 && self.dup && !self.duplicated.swap(true, Relaxed) {
                    index += 1; // leaves a copy behind
                } else {
                    queue.remove(index);
                }
            }
            Ok(count)
        }
    }

    #[test]
    fn a_correct_scheduler_passes_every_check() {
        assert_exactly_once_under_concurrency::<Fifo>(2, 2_000, &[]);
        assert_exactly_once_under_concurrency::<Fifo>(4, 2_000, &[("dup", "false")]);
        assert_ranges_honoured_and_nothing_held_back::<Fifo>();
        assert_pop_respects_the_buffer_length::<Fifo>();
        assert_options_are_checked::<Fifo>(&[("dup", "maybe")], "bogus");
    }

    #[test]
    #[should_panic(expected = "a task was popped twice or never")]
    fn a_duplicate_is_caught() {
        assert_exactly_once_under_concurrency::<Fifo>(2, 200, &[("dup", "true")]);
    }

    #[test]
    fn builders_describe_one_node_per_range() {
        let init = init(3, &[(0, 3), (1, 2)], &[("k", "v")]);
        assert_eq!((init.workers, init.slots, init.nodes.len()), (3, SLOTS, 2));
        assert_eq!((init.nodes[1].name.as_str(), init.nodes[1].worker_lo, init.nodes[1].worker_hi), ("n1", 1, 2));
        assert_eq!(init.knob("k"), Some("v"));
        assert_eq!(task_from(5, (1, 2), 1).locality, 1);
        assert_eq!(task(5, (1, 2)).locality, NO_WORKER);
        let s: Fifo = create(2, &[(0, 2)], &[]);
        s.push(None, &[task(0, (0, 2)), task(1, (0, 2)), task(2, (0, 2))]).unwrap();
        assert_eq!(pop_once(&s, 1, 2), [0, 1]);
        assert_eq!(pop_all(&s, 0, 2), [2]);
    }
}
