//! `work-stealing`: each worker keeps the tasks it made ready in its own deque; idle workers steal.
//!
//! A worker pushes and pops the bottom of its own `crossbeam_deque::Worker`; everyone else steals
//! from the top through its `Stealer`. The host's pushes go to a global `Injector`. Tasks restricted
//! to some workers bypass the deques and wait in one shared queue per worker range, served only by
//! the workers of that range, so a deque holds only tasks any thief may run. A pop never returns
//! nothing while a queue the worker may serve holds a task. See README.md for the policy and costs.
//!
//! # Memory ordering
//! The deques, the injector and the range queues synchronise pushes with pops. Each deque's owner
//! side sits behind a mutex that only its own worker takes (`try_lock`, never waiting): if a second
//! thread ever used the same worker id, it would fall back to the injector and to stealing. The
//! statistics are relaxed counters read after the run.

#![deny(unsafe_code)]

use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_queue::SegQueue;
use crossbeam_utils::CachePadded;
use tomii_types::abi::TomiiKnobDesc;
use tomii_types::scheduler::{InitInfo, RangeClasses, Scheduler, Task, fill, knob};

/// One worker's deque: the owner's end and the thieves' end.
struct Deque {
    owner: Mutex<Worker<Task>>,
    stealer: Stealer<Task>,
    /// Where this worker's next round of stealing starts.
    next_victim: AtomicU32,
}

/// Per-worker counters, each on its own cache line (the host's pushes use one more entry).
#[derive(Default)]
struct Counters {
    /// Calls to `pop` by this worker: every `INJECTOR_INTERVAL`-th looks at the shared queue first.
    ticks: AtomicU64,
    local_pops: AtomicU64,
    injector_pops: AtomicU64,
    restricted_pops: AtomicU64,
    steals: AtomicU64,
    pushed_local: AtomicU64,
    pushed_injector: AtomicU64,
    pushed_restricted: AtomicU64,
    /// Tasks this worker kept at a push, to run next (`push_keep`): the bottom of its own deque.
    kept: AtomicU64,
}

/// A worker looks at the shared queue before its own deque once every this many pops (as tokio's
/// scheduler does with its global queue), so that tasks pushed by the host are never starved.
const INJECTOR_INTERVAL: u64 = 61;

pub struct WorkStealing {
    workers: u32,
    lifo: bool,
    deques: Box<[CachePadded<Deque>]>,
    injector: Injector<Task>,
    /// The distinct worker ranges of the graph's nodes.
    classes: RangeClasses,
    /// Per class: the queue of its tasks, oldest first, when its range is restricted; `None` for
    /// the class of every worker, whose tasks go to the deques and the injector.
    restricted: Box<[Option<SegQueue<Task>>]>,
    /// `workers + 1` entries: one per worker, then the host's.
    counters: Box<[CachePadded<Counters>]>,
}

/// Locks a deque's owner side if nobody else holds it; never waits.
fn try_own(deque: &Deque) -> Option<MutexGuard<'_, Worker<Task>>> {
    match deque.owner.try_lock() {
        Ok(guard) => Some(guard),
        Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// Repeats a steal until it gives a definite answer (`Retry` means another thread made progress).
fn steal_definite(mut attempt: impl FnMut() -> Steal<Task>) -> Option<Task> {
    loop {
        match attempt() {
            Steal::Success(task) => return Some(task),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}

/// Takes up to `out.len()` tasks from a shared source: one steal hands a task back and moves up to
/// `out.len() - 1` more into the caller's own deque, from which they are then popped.
fn take_batch(
    own: Option<&Worker<Task>>,
    out: &mut [Task],
    batch: impl Fn(&Worker<Task>, usize) -> Steal<Task>,
    single: impl Fn() -> Steal<Task>,
) -> usize {
    let Some(own) = own else {
        return (0..out.len()).map_while(|i| steal_definite(&single).map(|task| out[i] = task)).count();
    };
    match steal_definite(|| batch(own, out.len())) {
        None => 0,
        Some(task) => {
            out[0] = task;
            1 + fill(&mut out[1..], || own.pop())
        }
    }
}

impl WorkStealing {
    /// Queues `tasks` but the one at `except`: a worker's own in its deque, the host's in the
    /// injector, restricted ones in their range's queue.
    fn push_except(&self, worker: Option<u32>, tasks: &[Task], except: Option<usize>) -> Result<(), String> {
        if worker.is_some_and(|w| w >= self.workers) {
            return Err(format!("push from unknown worker {}", worker.unwrap_or_default()));
        }
        let counters = &self.counters[worker.unwrap_or(self.workers) as usize];
        let guard = worker.and_then(|w| try_own(&self.deques[w as usize]));
        for (index, task) in tasks.iter().enumerate() {
            if Some(index) == except {
                continue;
            }
            if self.is_restricted(task) {
                self.push_restricted(task)?;
                counters.pushed_restricted.fetch_add(1, Ordering::Relaxed);
            } else if let Some(own) = &guard {
                own.push(*task);
                counters.pushed_local.fetch_add(1, Ordering::Relaxed);
            } else {
                self.injector.push(*task);
                counters.pushed_injector.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    fn is_restricted(&self, task: &Task) -> bool {
        task.worker_lo != 0 || task.worker_hi < self.workers
    }

    fn push_restricted(&self, task: &Task) -> Result<(), String> {
        let queue = self.restricted[self.classes.class_of(task)?].as_ref();
        queue.expect("a restricted task's class has a queue").push(*task);
        Ok(())
    }

    /// Steals from the other workers' deques, round-robin from this worker's cursor, until `out`
    /// is full or a whole round found every deque empty.
    fn steal(&self, worker: u32, own: Option<&Worker<Task>>, out: &mut [Task]) -> usize {
        let others = self.workers - 1;
        if others == 0 || out.is_empty() {
            return 0;
        }
        let start = self.deques[worker as usize].next_victim.fetch_add(1, Ordering::Relaxed);
        let mut count = 0;
        for k in 0..others {
            let victim = &self.deques[((worker + 1 + (start.wrapping_add(k)) % others) % self.workers) as usize];
            let stealer = &victim.stealer;
            count += take_batch(
                own,
                &mut out[count..],
                |dest, limit| stealer.steal_batch_with_limit_and_pop(dest, limit),
                || stealer.steal(),
            );
            if count == out.len() {
                break;
            }
        }
        count
    }

    /// Fills `out` for `worker`: own deque, then restricted queues, then the injector, then steals.
    fn take(&self, worker: u32, out: &mut [Task], counters: &Counters) -> usize {
        let deque = &self.deques[worker as usize];
        let guard = try_own(deque);
        let own = guard.as_deref();
        let mut count = 0;
        // Fairness: a worker whose own deque never runs dry would otherwise leave the host's
        // pushes (the first frames' roots) in the shared queue until the end of the run.
        if counters.ticks.fetch_add(1, Ordering::Relaxed).is_multiple_of(INJECTOR_INTERVAL) && !out.is_empty() {
            count = fill(&mut out[..1], || steal_definite(|| self.injector.steal()));
            counters.injector_pops.fetch_add(count as u64, Ordering::Relaxed);
        }
        let local = own.map_or(0, |own| fill(&mut out[count..], || own.pop()));
        counters.local_pops.fetch_add(local as u64, Ordering::Relaxed);
        count += local;
        for queue in self.classes.classes_of(worker).iter().filter_map(|&c| self.restricted[c].as_ref()) {
            let n = fill(&mut out[count..], || queue.pop());
            counters.restricted_pops.fetch_add(n as u64, Ordering::Relaxed);
            count += n;
        }
        if count < out.len() {
            let injector = &self.injector;
            let n = take_batch(
                own,
                &mut out[count..],
                |dest, limit| injector.steal_batch_with_limit_and_pop(dest, limit),
                || injector.steal(),
            );
            counters.injector_pops.fetch_add(n as u64, Ordering::Relaxed);
            count += n;
        }
        if count < out.len() {
            let n = self.steal(worker, own, &mut out[count..]);
            counters.steals.fetch_add(n as u64, Ordering::Relaxed);
            count += n;
        }
        count
    }
}

impl Scheduler for WorkStealing {
    const NAME: &'static CStr = c"work-stealing";
    const KEEPS: bool = true;
    const KNOBS: &'static [TomiiKnobDesc] = &[knob(
        c"lifo",
        c"bool",
        c"true",
        c"true|false",
        c"A worker runs the task it made ready last first (true, cache-friendly) or its oldest (false).",
    )];

    fn create(init: &InitInfo) -> Result<Self, String> {
        let lifo = init.knob_or("lifo", true)?;
        let workers = init.workers;
        init.check_worker_ranges()?;
        let classes = RangeClasses::new(init);
        let restricted = (0..classes.len()).map(|c| (classes.range(c) != (0, workers)).then(SegQueue::new)).collect();
        let deques = (0..workers)
            .map(|_| {
                let owner = if lifo { Worker::new_lifo() } else { Worker::new_fifo() };
                let stealer = owner.stealer();
                CachePadded::new(Deque { owner: Mutex::new(owner), stealer, next_victim: AtomicU32::new(0) })
            })
            .collect();
        let counters = (0..=workers).map(|_| CachePadded::default()).collect();
        Ok(WorkStealing { workers, lifo, deques, injector: Injector::new(), classes, restricted, counters })
    }

    fn push(&self, worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        self.push_except(worker, tasks, None)
    }

    /// With LIFO deques, the pushing worker's next pop would take the last task pushed to its own
    /// deque: it keeps that one instead, unless that pop is its turn to look at the shared queue
    /// first (`INJECTOR_INTERVAL`), which keeping would skip.
    fn push_keep(&self, worker: u32, tasks: &[Task]) -> Result<Option<usize>, String> {
        let last_local = tasks.iter().rposition(|task| !self.is_restricted(task));
        let Some(counters) = self.counters.get(worker as usize).filter(|_| self.lifo && worker < self.workers) else {
            return self.push_except(Some(worker), tasks, None).map(|()| None);
        };
        // Only this worker pops as `worker`, so only it moves its own tick.
        let tick = counters.ticks.load(Ordering::Relaxed);
        let kept = last_local.filter(|_| !tick.is_multiple_of(INJECTOR_INTERVAL));
        if kept.is_some() {
            counters.ticks.store(tick + 1, Ordering::Relaxed);
            counters.kept.fetch_add(1, Ordering::Relaxed);
        }
        self.push_except(Some(worker), tasks, kept)?;
        Ok(kept)
    }

    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        if worker >= self.workers {
            return Err(format!("pop by unknown worker {worker}"));
        }
        Ok(self.take(worker, out, &self.counters[worker as usize]))
    }

    fn stats(&self) -> String {
        let sum = |field: fn(&Counters) -> &AtomicU64| -> u64 {
            self.counters.iter().map(|c| field(c).load(Ordering::Relaxed)).sum()
        };
        format!(
            concat!(
                r#"{{"local_pops":{},"injector_pops":{},"restricted_pops":{},"steals":{},"#,
                r#""pushed_local":{},"pushed_injector":{},"pushed_restricted":{},"kept":{},"lifo":{}}}"#
            ),
            sum(|c| &c.local_pops),
            sum(|c| &c.injector_pops),
            sum(|c| &c.restricted_pops),
            sum(|c| &c.steals),
            sum(|c| &c.pushed_local),
            sum(|c| &c.pushed_injector),
            sum(|c| &c.pushed_restricted),
            sum(|c| &c.kept),
            self.lifo,
        )
    }
}

tomii_types::export_scheduler!(WorkStealing);

/// The trait called directly; the harnesses shared with the other schedulers come from
/// `tomii_types::scheduler::testing`, the other tests check this policy.
#[cfg(test)]
mod tests {
    use tomii_types::scheduler::testing::{
        assert_exactly_once_under_concurrency, assert_options_are_checked, create, init, pop_all, task, task_from,
    };

    use super::*;

    const ALL4: (u32, u32) = (0, 4);

    #[test]
    fn every_task_once_under_concurrency_with_lifo_and_fifo_deques() {
        for (workers, lifo) in [(2, "true"), (4, "true"), (4, "false")] {
            assert_exactly_once_under_concurrency::<WorkStealing>(workers, 20_000, &[("lifo", lifo)]);
        }
    }

    #[test]
    fn a_worker_runs_its_newest_task_first_unless_lifo_is_off() {
        let s: WorkStealing = create(2, &[(0, 2)], &[]);
        s.push(Some(0), &(0..3).map(|h| task_from(h, (0, 2), 0)).collect::<Vec<_>>()).unwrap();
        assert_eq!(pop_all(&s, 0, 8), [2, 1, 0]);
        let s: WorkStealing = create(2, &[(0, 2)], &[("lifo", "false")]);
        s.push(Some(0), &(0..3).map(|h| task_from(h, (0, 2), 0)).collect::<Vec<_>>()).unwrap();
        assert_eq!(pop_all(&s, 0, 8), [0, 1, 2]);
    }

    #[test]
    fn an_idle_worker_steals_the_oldest_task_of_another() {
        let s: WorkStealing = create(4, &[ALL4], &[]);
        s.push(Some(2), &(0..6).map(|h| task_from(h, ALL4, 2)).collect::<Vec<_>>()).unwrap();
        assert_eq!(pop_all(&s, 0, 1)[0], 0);
        let s: WorkStealing = create(4, &[ALL4], &[]);
        s.push(Some(2), &(0..6).map(|h| task_from(h, ALL4, 2)).collect::<Vec<_>>()).unwrap();
        let mut stolen = pop_all(&s, 3, 4);
        stolen.sort();
        assert_eq!(stolen, [0, 1, 2, 3, 4, 5]);
        let stats: serde_json::Value = serde_json::from_str(&s.stats()).unwrap();
        assert_eq!((stats["steals"].as_u64(), stats["pushed_local"].as_u64()), (Some(6), Some(6)));
    }

    #[test]
    fn host_pushes_go_through_the_injector_oldest_first() {
        let s: WorkStealing = create(2, &[(0, 2)], &[]);
        s.push(None, &(0..5).map(|h| task(h, (0, 2))).collect::<Vec<_>>()).unwrap();
        assert_eq!(pop_all(&s, 1, 3), [0, 1, 2, 3, 4]);
        let stats: serde_json::Value = serde_json::from_str(&s.stats()).unwrap();
        assert_eq!((stats["injector_pops"].as_u64(), stats["pushed_injector"].as_u64()), (Some(5), Some(5)));
    }

    #[test]
    fn worker_ranges_are_honoured() {
        let s: WorkStealing = create(4, &[ALL4, (1, 2), (2, 4)], &[]);
        let tasks = [task_from(0, (1, 2), 0), task_from(1, ALL4, 0), task_from(2, (2, 4), 0), task_from(3, (1, 2), 3)];
        s.push(Some(0), &tasks).unwrap();
        assert_eq!(pop_all(&s, 3, 8), [2, 1]);
        assert!(pop_all(&s, 0, 8).is_empty());
        assert_eq!(pop_all(&s, 1, 8), [0, 3]);
    }

    #[test]
    fn pops_respect_the_buffer_length() {
        let s: WorkStealing = create(2, &[(0, 2)], &[]);
        s.push(Some(0), &(0..10).map(|h| task_from(h, (0, 2), 0)).collect::<Vec<_>>()).unwrap();
        s.push(None, &(10..20).map(|h| task_from(h, (0, 2), 0)).collect::<Vec<_>>()).unwrap();
        assert_eq!(s.pop(0, &mut []).unwrap(), 0);
        assert_eq!(s.pop(1, &mut [Task::default(); 3]).unwrap(), 3);
        assert_eq!(s.pop(0, &mut [Task::default(); 4]).unwrap(), 4);
        assert_eq!(pop_all(&s, 1, 5).len() + pop_all(&s, 0, 16).len(), 13);
    }

    #[test]
    fn bad_options_and_unknown_ranges_are_reported() {
        assert_options_are_checked::<WorkStealing>(&[("lifo", "yes")], "steal");
        assert!(WorkStealing::create(&init(2, &[(1, 1)], &[])).err().unwrap().contains("empty"));
        let s: WorkStealing = create(2, &[(0, 2)], &[]);
        assert!(s.push(Some(0), &[task_from(0, (1, 2), 0)]).unwrap_err().contains("1..2"));
        assert!(s.pop(2, &mut [Task::default()]).is_err());
        assert!(s.push(Some(2), &[]).is_err());
    }

    #[test]
    fn a_worker_keeps_its_newest_task_but_not_on_its_turn_for_the_shared_queue() {
        let s: WorkStealing = create(2, &[(0, 2), (1, 2)], &[]);
        let tasks = [task_from(1, (0, 2), 0), task_from(2, (0, 2), 0), task_from(3, (1, 2), 0)];
        // Its first pop (tick 0) looks at the shared queue first: nothing is kept before it.
        assert_eq!(s.push_keep(0, &tasks), Ok(None));
        assert_eq!(pop_all(&s, 0, 8), [2, 1]);
        assert_eq!(s.push_keep(0, &[task_from(4, (0, 2), 0), task_from(5, (0, 2), 0)]), Ok(Some(1)));
        assert_eq!(pop_all(&s, 0, 8), [4]);
        assert_eq!(pop_all(&s, 1, 8), [3]);
        let stats: serde_json::Value = serde_json::from_str(&s.stats()).unwrap();
        assert_eq!(stats["kept"].as_u64(), Some(1));
        let fifo_deques: WorkStealing = create(2, &[(0, 2)], &[("lifo", "false")]);
        assert_eq!(fifo_deques.push_keep(0, &[task_from(6, (0, 2), 0)]), Ok(None), "not with FIFO deques");
    }

    #[test]
    fn host_pushes_are_not_starved_by_a_busy_deque() {
        let s: WorkStealing = create(1, &[(0, 1)], &[]);
        s.push(None, &[task_from(1_000, (0, 1), 0)]).unwrap();
        // Worker 0 keeps refilling its own deque; the host's task must still come out.
        let mut out = [Task::default()];
        let found = (0..INJECTOR_INTERVAL + 1).any(|h| {
            s.push(Some(0), &[task_from(h, (0, 1), 0)]).unwrap();
            s.pop(0, &mut out).unwrap() == 1 && out[0].handle == 1_000
        });
        assert!(found, "the injector's task was not taken within {INJECTOR_INTERVAL} pops");
    }
}
