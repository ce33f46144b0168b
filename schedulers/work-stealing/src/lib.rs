//! `work-stealing`: each worker keeps the tasks it made ready in its own deque; idle workers steal.
//!
//! A worker pushes and pops the bottom of its own `HandleDeque` (tomii-types' bounded Chase–Lev
//! deque of handles); everyone else steals from the top. The host's pushes, and a worker's that
//! its deque has no room for, go to a shared `HandleRing`, the injector. Tasks restricted to some
//! workers bypass the deques and wait in one shared ring per worker range, served only by the
//! workers of that range, so a deque holds only tasks any thief may run. A pop never returns
//! nothing while a queue the worker may serve holds a task. Every queue holds handles only and pop
//! writes only handles (`TOMII_SCHED_POP_HANDLES`). See README.md for the policy and costs.
//!
//! # Memory ordering
//! The deques and the rings synchronise pushes with pops (their modules say how). A deque's owner
//! end is taken with `HandleDeque::owner`, which never waits: if a second thread ever used the
//! same worker id, it would fall back to the injector and to stealing. The statistics are relaxed
//! counters read after the run.

#![deny(unsafe_code)]

use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crossbeam_utils::CachePadded;
use tomii_types::abi::{TOMII_SCHED_BATCH_POPS, TOMII_SCHED_KEEP_BEFORE_BATCH, TOMII_SCHED_POP_HANDLES, TomiiKnobDesc};
use tomii_types::scheduler::{
    HandleDeque, HandleRing, InitInfo, RangeClasses, Scheduler, Task, fair_share, fill_handles, knob,
};

/// One worker's deque and where its next round of stealing starts.
struct Deque {
    handles: HandleDeque,
    next_victim: AtomicU32,
}

/// Per-worker counters, each on its own cache line (the host's pushes use one more entry).
#[derive(Default)]
struct Counters {
    /// Pops by this worker before the one that looks at the shared queue first (every
    /// `INJECTOR_INTERVAL`-th, the first included); only this worker moves it. A kept task counts
    /// as a pop.
    until_injector: AtomicU64,
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

/// The most handles a worker's deque holds (32 KiB); a push beyond goes to the injector, which is
/// sized for every task that can be ready at once, so memory stays bounded however many slots run.
const DEQUE_CAPACITY: usize = 4096;

pub struct WorkStealing {
    workers: u32,
    lifo: bool,
    deques: Box<[CachePadded<Deque>]>,
    injector: HandleRing,
    /// The distinct worker ranges of the graph's nodes.
    classes: RangeClasses,
    /// Per class: the queue of its tasks, oldest first, when its range is restricted; `None` for
    /// the class of every worker, whose tasks go to the deques and the injector.
    restricted: Box<[Option<HandleRing>]>,
    /// `workers + 1` entries: one per worker, then the host's.
    counters: Box<[CachePadded<Counters>]>,
}

impl WorkStealing {
    /// Queues `tasks` but the one at `except`: a worker's own in its deque (or the injector when
    /// the deque is full), the host's in the injector, restricted ones in their range's queue.
    #[inline]
    fn push_except(&self, worker: Option<u32>, tasks: &[Task], except: Option<usize>) -> Result<(), String> {
        if let Some(worker) = worker.filter(|&w| w >= self.workers) {
            return Err(unknown_worker("push from", worker));
        }
        let counters = &self.counters[worker.unwrap_or(self.workers) as usize];
        let owner = worker.and_then(|w| self.deques[w as usize].handles.owner());
        for (index, task) in tasks.iter().enumerate() {
            if Some(index) == except {
                continue;
            }
            if self.is_restricted(task) {
                let queue = self.restricted[self.classes.class_of(task)?].as_ref();
                queue.expect("a restricted task's class has a queue").push(task.handle).map_err(|_| full())?;
                counters.pushed_restricted.fetch_add(1, Ordering::Relaxed);
            } else if owner.as_ref().is_some_and(|own| own.push(task.handle).is_ok()) {
                counters.pushed_local.fetch_add(1, Ordering::Relaxed);
            } else {
                self.injector.push(task.handle).map_err(|_| full())?;
                counters.pushed_injector.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    #[inline]
    fn is_restricted(&self, task: &Task) -> bool {
        task.worker_lo != 0 || task.worker_hi < self.workers
    }

    /// Steals from the other workers' deques, round-robin from this worker's cursor: from the first
    /// that has work, its fair share (its length divided among the workers, rounded up: half of
    /// it on two workers), so that with many idle workers each thief takes a task or a few and
    /// the others find the rest; 0 when a whole round found every deque empty.
    fn steal(&self, worker: u32, out: &mut [Task]) -> usize {
        let others = self.workers - 1;
        if others == 0 || out.is_empty() {
            return 0;
        }
        let start = self.deques[worker as usize].next_victim.fetch_add(1, Ordering::Relaxed);
        let mut count = 0;
        for k in 0..others {
            let victim = &self.deques[((worker + 1 + (start.wrapping_add(k)) % others) % self.workers) as usize];
            let share = fair_share(&mut out[count..], victim.handles.len(), self.workers);
            count += fill_handles(share, || victim.handles.steal());
            if count > 0 {
                break;
            }
        }
        count
    }

    /// Fills `out` for `worker` from the first source that has work: own deque, then restricted
    /// queues, then the injector, then steals; from it, a fair share (`TOMII_SCHED_BATCH_POPS`), so
    /// that what it leaves stays for thieves and for the other workers. A worker with work of its
    /// own never takes shared work or steals in the same pop.
    fn take(&self, worker: u32, out: &mut [Task], counters: &Counters) -> usize {
        let deque = &self.deques[worker as usize].handles;
        let owner = deque.owner();
        let mut count = 0;
        // Fairness: a worker whose own deque never runs dry would otherwise leave the host's
        // pushes (the first frames' roots) in the shared queue until the end of the run.
        let until_injector = counters.until_injector.load(Ordering::Relaxed);
        if until_injector > 0 {
            counters.until_injector.store(until_injector - 1, Ordering::Relaxed);
        } else if !out.is_empty() {
            counters.until_injector.store(INJECTOR_INTERVAL - 1, Ordering::Relaxed);
            count = fill_handles(&mut out[..1], || self.injector.pop());
            counters.injector_pops.fetch_add(count as u64, Ordering::Relaxed);
        }
        let local = owner.map_or(0, |own| {
            let share = fair_share(&mut out[count..], deque.len(), self.workers);
            fill_handles(share, || if self.lifo { own.pop() } else { own.pop_oldest() })
        });
        counters.local_pops.fetch_add(local as u64, Ordering::Relaxed);
        count += local;
        for queue in self.classes.classes_of(worker).iter().filter_map(|&c| self.restricted[c].as_ref()) {
            if count > 0 {
                return count;
            }
            let n = fill_handles(fair_share(&mut out[count..], queue.len(), self.workers), || queue.pop());
            counters.restricted_pops.fetch_add(n as u64, Ordering::Relaxed);
            count += n;
        }
        if count == 0 {
            let n =
                fill_handles(fair_share(&mut out[count..], self.injector.len(), self.workers), || self.injector.pop());
            counters.injector_pops.fetch_add(n as u64, Ordering::Relaxed);
            count += n;
        }
        if count == 0 {
            let n = self.steal(worker, &mut out[count..]);
            counters.steals.fetch_add(n as u64, Ordering::Relaxed);
            count += n;
        }
        count
    }
}

#[cold]
fn unknown_worker(what: &str, worker: u32) -> String {
    format!("{what} unknown worker {worker}")
}

#[cold]
fn full() -> String {
    "work-stealing queue is full: more tasks were pushed than can be ready".to_owned()
}

impl Scheduler for WorkStealing {
    const NAME: &'static CStr = c"work-stealing";
    /// A kept task is the newest ready one, which a LIFO order runs first: before the rest of the
    /// worker's last pop too (`TOMII_SCHED_KEEP_BEFORE_BATCH`; with `lifo=false` it keeps none).
    const FLAGS: u32 = TOMII_SCHED_POP_HANDLES | TOMII_SCHED_BATCH_POPS | TOMII_SCHED_KEEP_BEFORE_BATCH;
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
        let restricted = (0..classes.len())
            .map(|c| (classes.range(c) != (0, workers)).then(|| HandleRing::new(classes.capacity(c))))
            .collect();
        // Every task a deque or the injector can hold is of the class of every worker.
        let shared = (0..classes.len()).find(|&c| classes.range(c) == (0, workers)).map_or(0, |c| classes.capacity(c));
        let deques = (0..workers)
            .map(|_| {
                let handles = HandleDeque::new(shared.min(DEQUE_CAPACITY));
                CachePadded::new(Deque { handles, next_victim: AtomicU32::new(0) })
            })
            .collect();
        let counters = (0..=workers).map(|_| CachePadded::default()).collect();
        Ok(WorkStealing { workers, lifo, deques, injector: HandleRing::new(shared), classes, restricted, counters })
    }

    fn push(&self, worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        self.push_except(worker, tasks, None)
    }

    /// With LIFO deques, the pushing worker's next pop would take the last task pushed to its own
    /// deque: it keeps that one instead, unless that pop is its turn to look at the shared queue
    /// first (`INJECTOR_INTERVAL`), which keeping would skip.
    #[inline]
    fn push_keep(&self, worker: u32, tasks: &[Task]) -> Result<Option<usize>, String> {
        if worker >= self.workers {
            return Err(unknown_worker("push from", worker));
        }
        let counters = &self.counters[worker as usize];
        let until_injector = counters.until_injector.load(Ordering::Relaxed);
        // Keeping would skip the pop that is this worker's turn at the shared queue.
        let keeps = self.lifo && until_injector > 0;
        let kept = tasks.iter().rposition(|task| keeps && !self.is_restricted(task));
        if kept.is_some() {
            counters.until_injector.store(until_injector - 1, Ordering::Relaxed);
            counters.kept.fetch_add(1, Ordering::Relaxed);
            if tasks.len() == 1 {
                return Ok(kept); // a chain's every step: nothing to queue
            }
        }
        self.push_except(Some(worker), tasks, kept)?;
        Ok(kept)
    }

    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        if worker >= self.workers {
            return Err(unknown_worker("pop by", worker));
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
        assert_exactly_once_under_concurrency, assert_options_are_checked, create_from, init, pop_all, task, task_from,
    };

    use super::*;

    const ALL4: (u32, u32) = (0, 4);

    /// A scheduler whose queues have room for the few dozen tasks a test pushes (64 slots).
    fn create(workers: u32, ranges: &[(u32, u32)], knobs: &[(&str, &str)]) -> WorkStealing {
        create_from(&InitInfo { slots: 64, ..init(workers, ranges, knobs) })
    }

    #[test]
    fn every_task_once_under_concurrency_with_lifo_and_fifo_deques() {
        for (workers, lifo) in [(2, "true"), (4, "true"), (4, "false")] {
            assert_exactly_once_under_concurrency::<WorkStealing>(workers, 20_000, &[("lifo", lifo)]);
        }
    }

    #[test]
    fn a_worker_runs_its_newest_task_first_unless_lifo_is_off() {
        let s = create(2, &[(0, 2)], &[]);
        s.push(Some(0), &(0..3).map(|h| task_from(h, (0, 2), 0)).collect::<Vec<_>>()).unwrap();
        assert_eq!(pop_all(&s, 0, 8), [2, 1, 0]);
        let s = create(2, &[(0, 2)], &[("lifo", "false")]);
        s.push(Some(0), &(0..3).map(|h| task_from(h, (0, 2), 0)).collect::<Vec<_>>()).unwrap();
        assert_eq!(pop_all(&s, 0, 8), [0, 1, 2]);
    }

    #[test]
    fn an_idle_worker_steals_the_oldest_task_of_another() {
        let s = create(4, &[ALL4], &[]);
        s.push(Some(2), &(0..6).map(|h| task_from(h, ALL4, 2)).collect::<Vec<_>>()).unwrap();
        assert_eq!(pop_all(&s, 0, 1)[0], 0);
        let s = create(4, &[ALL4], &[]);
        s.push(Some(2), &(0..6).map(|h| task_from(h, ALL4, 2)).collect::<Vec<_>>()).unwrap();
        let mut stolen = pop_all(&s, 3, 4);
        stolen.sort();
        assert_eq!(stolen, [0, 1, 2, 3, 4, 5]);
        let stats: serde_json::Value = serde_json::from_str(&s.stats()).unwrap();
        assert_eq!((stats["steals"].as_u64(), stats["pushed_local"].as_u64()), (Some(6), Some(6)));
    }

    #[test]
    fn host_pushes_go_through_the_injector_oldest_first() {
        let s = create(2, &[(0, 2)], &[]);
        s.push(None, &(0..5).map(|h| task(h, (0, 2))).collect::<Vec<_>>()).unwrap();
        assert_eq!(pop_all(&s, 1, 3), [0, 1, 2, 3, 4]);
        let stats: serde_json::Value = serde_json::from_str(&s.stats()).unwrap();
        assert_eq!((stats["injector_pops"].as_u64(), stats["pushed_injector"].as_u64()), (Some(5), Some(5)));
    }

    #[test]
    fn worker_ranges_are_honoured() {
        let s = create(4, &[ALL4, (1, 2), (2, 4)], &[]);
        let tasks = [task_from(0, (1, 2), 0), task_from(1, ALL4, 0), task_from(2, (2, 4), 0), task_from(3, (1, 2), 3)];
        s.push(Some(0), &tasks).unwrap();
        assert_eq!(pop_all(&s, 3, 8), [2, 1]);
        assert!(pop_all(&s, 0, 8).is_empty());
        assert_eq!(pop_all(&s, 1, 8), [0, 3]);
    }

    #[test]
    fn pops_respect_the_buffer_length_and_take_a_fair_share() {
        let s = create(2, &[(0, 2)], &[]);
        s.push(Some(0), &(0..10).map(|h| task_from(h, (0, 2), 0)).collect::<Vec<_>>()).unwrap();
        s.push(None, &(10..20).map(|h| task_from(h, (0, 2), 0)).collect::<Vec<_>>()).unwrap();
        assert_eq!(s.pop(0, &mut []).unwrap(), 0);
        let thief = s.pop(1, &mut [Task::default(); 3]).unwrap();
        assert!((1..=3).contains(&thief), "worker 1 took {thief}");
        let owner = s.pop(0, &mut [Task::default(); 16]).unwrap();
        assert!((1..=6).contains(&owner), "one from the injector (its turn), at most half of its own 10: {owner}");
        assert_eq!(pop_all(&s, 1, 5).len() + pop_all(&s, 0, 16).len() + thief + owner, 20);
    }

    #[test]
    fn bad_options_and_unknown_ranges_are_reported() {
        assert_options_are_checked::<WorkStealing>(&[("lifo", "yes")], "steal");
        assert!(WorkStealing::create(&init(2, &[(1, 1)], &[])).err().unwrap().contains("empty"));
        let s = create(2, &[(0, 2)], &[]);
        assert!(s.push(Some(0), &[task_from(0, (1, 2), 0)]).unwrap_err().contains("1..2"));
        assert!(s.pop(2, &mut [Task::default()]).is_err());
        assert!(s.push(Some(2), &[]).is_err());
    }

    #[test]
    fn a_worker_keeps_its_newest_task_but_not_on_its_turn_for_the_shared_queue() {
        let s = create(2, &[(0, 2), (1, 2)], &[]);
        let tasks = [task_from(1, (0, 2), 0), task_from(2, (0, 2), 0), task_from(3, (1, 2), 0)];
        // Its first pop (tick 0) looks at the shared queue first: nothing is kept before it.
        assert_eq!(s.push_keep(0, &tasks), Ok(None));
        assert_eq!(pop_all(&s, 0, 8), [2, 1]);
        assert_eq!(s.push_keep(0, &[task_from(4, (0, 2), 0), task_from(5, (0, 2), 0)]), Ok(Some(1)));
        assert_eq!(pop_all(&s, 0, 8), [4]);
        assert_eq!(pop_all(&s, 1, 8), [3]);
        let stats: serde_json::Value = serde_json::from_str(&s.stats()).unwrap();
        assert_eq!(stats["kept"].as_u64(), Some(1));
        let fifo_deques = create(2, &[(0, 2)], &[("lifo", "false")]);
        assert_eq!(fifo_deques.push_keep(0, &[task_from(6, (0, 2), 0)]), Ok(None), "not with FIFO deques");
    }

    #[test]
    fn a_worker_whose_deque_is_full_pushes_to_the_injector() {
        let tasks = DEQUE_CAPACITY as u64 + 100;
        let s = create_from::<WorkStealing>(&InitInfo { slots: tasks as u32, ..init(2, &[(0, 2)], &[]) });
        s.push(Some(0), &(0..tasks).map(|h| task_from(h, (0, 2), 0)).collect::<Vec<_>>()).unwrap();
        let stats: serde_json::Value = serde_json::from_str(&s.stats()).unwrap();
        assert_eq!((stats["pushed_local"].as_u64(), stats["pushed_injector"].as_u64()), (Some(4096), Some(100)));
        let mut all = pop_all(&s, 1, 64);
        all.sort_unstable();
        assert_eq!(all, (0..tasks).collect::<Vec<_>>(), "the injector's and the stolen tasks");
    }

    #[test]
    fn host_pushes_are_not_starved_by_a_busy_deque() {
        let s = create(1, &[(0, 1)], &[]);
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
