//! `locality`: a task runs on the worker that produced its inputs; idle workers steal.
//!
//! Tasks allowed on the same workers form a class; a class has one lock-free FIFO queue per worker
//! in it, so every task in a queue may run on every worker that looks at that queue and no pop ever
//! has to skip a task. A pop never returns nothing while a queue the worker may serve holds a task.
//! See README.md for the policy and its costs.
//!
//! # Memory ordering
//! The queues synchronise pushes with pops. The statistics are relaxed counters read after the run.

#![deny(unsafe_code)]

use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crossbeam_queue::SegQueue;
use crossbeam_utils::CachePadded;
use tomii_types::abi::TomiiKnobDesc;
use tomii_types::scheduler::{InitInfo, NO_WORKER, RangeClasses, Scheduler, Task, fill, knob};

/// Which victims an idle worker tries, and in what order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StealOrder {
    /// `w+1, w+2, …` around the class's workers: neighbours first.
    Nearest,
    /// The same ring, starting at a random victim on each pop.
    Random,
}

impl std::str::FromStr for StealOrder {
    type Err = ();

    fn from_str(text: &str) -> Result<Self, ()> {
        match text {
            "nearest" => Ok(StealOrder::Nearest),
            "random" => Ok(StealOrder::Random),
            _ => Err(()),
        }
    }
}

/// Tasks whose allowed workers are `lo .. hi`, one queue per allowed worker.
struct Class {
    lo: u32,
    hi: u32,
    /// `queues[w - lo]`: the tasks whose home is worker `w`, oldest first.
    queues: Box<[SegQueue<Task>]>,
    /// Round-robin cursor for tasks that no worker produced.
    next_home: AtomicU32,
}

impl Class {
    fn width(&self) -> u32 {
        self.hi - self.lo
    }

    fn queue(&self, worker: u32) -> &SegQueue<Task> {
        &self.queues[(worker - self.lo) as usize]
    }
}

/// Per-worker counters, each on its own cache line (the host's pushes use one more entry).
#[derive(Default)]
struct Counters {
    own_pops: AtomicU64,
    stolen: AtomicU64,
    placed_at_producer: AtomicU64,
    placed_round_robin: AtomicU64,
    placed_first_allowed: AtomicU64,
}

pub struct Locality {
    workers: u32,
    /// The distinct worker ranges of the graph's nodes; `classes[c]` holds the tasks of range `c`.
    ranges: RangeClasses,
    classes: Vec<Class>,
    order: StealOrder,
    /// Source of random start victims for `steal_order=random`.
    seed: AtomicU64,
    /// `workers + 1` entries: one per worker, then the host's.
    counters: Box<[CachePadded<Counters>]>,
}

impl Locality {
    fn class_of(&self, task: &Task) -> Result<&Class, String> {
        Ok(&self.classes[self.ranges.class_of(task)?])
    }

    /// The worker whose queue receives `task` (pushed by the host when `from_host`), counted by why.
    fn home(&self, class: &Class, task: &Task, from_host: bool, counters: &Counters) -> u32 {
        if from_host || task.locality == NO_WORKER {
            counters.placed_round_robin.fetch_add(1, Ordering::Relaxed);
            class.lo + class.next_home.fetch_add(1, Ordering::Relaxed) % class.width()
        } else if (class.lo..class.hi).contains(&task.locality) {
            counters.placed_at_producer.fetch_add(1, Ordering::Relaxed);
            task.locality
        } else {
            counters.placed_first_allowed.fetch_add(1, Ordering::Relaxed);
            class.lo
        }
    }

    /// The other workers of `class`, in the order `worker` tries them.
    fn victims(&self, class: &Class, worker: u32) -> impl Iterator<Item = u32> {
        let (lo, width, me) = (class.lo, class.width(), worker - class.lo);
        let others = width - 1;
        let start = match self.order {
            StealOrder::Nearest => 0,
            StealOrder::Random if others > 0 => random(&self.seed, worker) % others,
            StealOrder::Random => 0,
        };
        (0..others).map(move |k| lo + (me + 1 + (start + k) % others) % width)
    }

    /// Fills `out` from `worker`'s own queues, then from the other workers' queues, oldest first.
    fn take(&self, worker: u32, classes: &[usize], out: &mut [Task]) -> (usize, usize) {
        let mut own = 0;
        for class in classes.iter().map(|&c| &self.classes[c]) {
            own += fill(&mut out[own..], || class.queue(worker).pop());
        }
        let mut count = own;
        for class in classes.iter().map(|&c| &self.classes[c]) {
            for victim in self.victims(class, worker) {
                if count == out.len() {
                    return (own, count - own);
                }
                count += fill(&mut out[count..], || class.queue(victim).pop());
            }
        }
        (own, count - own)
    }
}

/// A well-mixed pseudo-random number (splitmix64 over a shared counter); no lock, no allocation.
fn random(seed: &AtomicU64, worker: u32) -> u32 {
    let mut z = seed.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed) ^ u64::from(worker);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as u32
}

impl Scheduler for Locality {
    const NAME: &'static CStr = c"locality";
    const KNOBS: &'static [TomiiKnobDesc] = &[knob(
        c"steal_order",
        c"choice",
        c"nearest",
        c"nearest|random",
        c"Which other workers an idle worker steals from first: its neighbours w+1, w+2, ... or a random one.",
    )];

    fn create(init: &InitInfo) -> Result<Self, String> {
        let order = init.knob_or("steal_order", StealOrder::Nearest)?;
        init.check_worker_ranges()?;
        let ranges = RangeClasses::new(init);
        let classes = (0..ranges.len())
            .map(|class| {
                let (lo, hi) = ranges.range(class);
                Class { lo, hi, queues: (lo..hi).map(|_| SegQueue::new()).collect(), next_home: AtomicU32::new(0) }
            })
            .collect();
        let counters = (0..=init.workers).map(|_| CachePadded::default()).collect();
        Ok(Locality { workers: init.workers, ranges, classes, order, seed: AtomicU64::new(0), counters })
    }

    fn push(&self, worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        let counters = match worker {
            None => &self.counters[self.workers as usize],
            Some(w) if w < self.workers => &self.counters[w as usize],
            Some(w) => return Err(format!("push from unknown worker {w}")),
        };
        for task in tasks {
            let class = self.class_of(task)?;
            class.queue(self.home(class, task, worker.is_none(), counters)).push(*task);
        }
        Ok(())
    }

    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        if worker >= self.workers {
            return Err(format!("pop by unknown worker {worker}"));
        }
        let (own, stolen) = self.take(worker, self.ranges.classes_of(worker), out);
        let counters = &self.counters[worker as usize];
        counters.own_pops.fetch_add(own as u64, Ordering::Relaxed);
        counters.stolen.fetch_add(stolen as u64, Ordering::Relaxed);
        Ok(own + stolen)
    }

    fn stats(&self) -> String {
        let sum = |field: fn(&Counters) -> &AtomicU64| -> u64 {
            self.counters.iter().map(|c| field(c).load(Ordering::Relaxed)).sum()
        };
        let order = match self.order {
            StealOrder::Nearest => "nearest",
            StealOrder::Random => "random",
        };
        format!(
            r#"{{"own_pops":{},"stolen":{},"placed_at_producer":{},"placed_round_robin":{},"placed_first_allowed":{},"steal_order":"{order}"}}"#,
            sum(|c| &c.own_pops),
            sum(|c| &c.stolen),
            sum(|c| &c.placed_at_producer),
            sum(|c| &c.placed_round_robin),
            sum(|c| &c.placed_first_allowed),
        )
    }
}

tomii_types::export_scheduler!(Locality);

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
    fn every_task_once_under_concurrency_with_either_steal_order() {
        for (workers, steal_order) in [(2, "nearest"), (4, "nearest"), (4, "random")] {
            assert_exactly_once_under_concurrency::<Locality>(workers, 20_000, &[("steal_order", steal_order)]);
        }
    }

    #[test]
    fn a_worker_runs_its_own_tasks_first_then_steals_oldest_first() {
        let s: Locality = create(2, &[(0, 2)], &[]);
        s.push(Some(0), &[task_from(0, (0, 2), 0), task_from(1, (0, 2), 0), task_from(2, (0, 2), 0)]).unwrap();
        s.push(Some(1), &[task_from(10, (0, 2), 1), task_from(11, (0, 2), 1), task_from(12, (0, 2), 1)]).unwrap();
        assert_eq!(pop_all(&s, 1, 8), [10, 11, 12, 0, 1, 2]);
    }

    #[test]
    fn nearest_victims_are_tried_in_ring_order() {
        let s: Locality = create(4, &[ALL4], &[]);
        for w in 0..4 {
            s.push(Some(w), &[task_from(u64::from(w), ALL4, w)]).unwrap();
        }
        assert_eq!(pop_all(&s, 2, 1), [2, 3, 0, 1]);
    }

    #[test]
    fn tasks_without_a_producer_are_spread_round_robin() {
        let s: Locality = create(3, &[(0, 3)], &[]);
        let tasks: Vec<Task> = (0..6).map(|h| task(h, (0, 3))).collect();
        s.push(None, &tasks).unwrap();
        let mut out = [Task::default(); 2];
        for w in 0..3 {
            assert_eq!(s.pop(w, &mut out).unwrap(), 2);
            assert_eq!([out[0].handle, out[1].handle], [u64::from(w), u64::from(w) + 3]);
        }
    }

    #[test]
    fn a_producer_outside_the_range_sends_the_task_to_the_first_allowed_worker() {
        let s: Locality = create(3, &[(0, 3), (1, 3)], &[]);
        s.push(Some(0), &[task_from(7, (1, 3), 0)]).unwrap();
        let mut out = [Task::default(); 4];
        assert_eq!(s.pop(0, &mut out).unwrap(), 0);
        assert_eq!(s.pop(1, &mut out).unwrap(), 1);
        let stats: serde_json::Value = serde_json::from_str(&s.stats()).unwrap();
        assert_eq!((stats["placed_first_allowed"].as_u64(), stats["own_pops"].as_u64()), (Some(1), Some(1)));
    }

    #[test]
    fn worker_ranges_are_honoured() {
        let s: Locality = create(4, &[ALL4, (1, 2), (2, 4)], &[]);
        let tasks = [task_from(0, (1, 2), 0), task_from(1, ALL4, 0), task_from(2, (2, 4), 0), task_from(3, (1, 2), 3)];
        s.push(Some(0), &tasks).unwrap();
        assert_eq!(pop_all(&s, 0, 8), [1]);
        assert_eq!(pop_all(&s, 3, 8), [2]);
        assert_eq!(pop_all(&s, 1, 8), [0, 3]);
    }

    #[test]
    fn pops_respect_the_buffer_length() {
        let s: Locality = create(2, &[(0, 2)], &[]);
        s.push(Some(0), &(0..10).map(|h| task_from(h, (0, 2), 0)).collect::<Vec<_>>()).unwrap();
        assert_eq!(s.pop(0, &mut []).unwrap(), 0);
        assert_eq!(s.pop(1, &mut [Task::default(); 3]).unwrap(), 3);
        assert_eq!(s.pop(0, &mut [Task::default(); 4]).unwrap(), 4);
        assert_eq!(pop_all(&s, 1, 16).len(), 3);
    }

    #[test]
    fn an_idle_worker_steals_what_another_pushed() {
        let s: Locality = create(4, &[ALL4], &[("steal_order", "random")]);
        s.push(Some(3), &(0..5).map(|h| task_from(h, ALL4, 3)).collect::<Vec<_>>()).unwrap();
        assert_eq!(pop_all(&s, 0, 2), [0, 1, 2, 3, 4]);
        let stats: serde_json::Value = serde_json::from_str(&s.stats()).unwrap();
        assert_eq!((stats["stolen"].as_u64(), stats["steal_order"].as_str()), (Some(5), Some("random")));
    }

    #[test]
    fn bad_options_and_unknown_ranges_are_reported() {
        assert_options_are_checked::<Locality>(&[("steal_order", "far")], "steal");
        assert!(Locality::create(&init(2, &[(0, 3)], &[])).err().unwrap().contains("beyond"));
        let s: Locality = create(2, &[(0, 2)], &[]);
        assert!(s.push(Some(0), &[task_from(0, (1, 2), 0)]).unwrap_err().contains("1..2"));
        assert!(s.pop(2, &mut [Task::default()]).is_err());
        assert!(s.push(Some(2), &[]).is_err());
    }
}
