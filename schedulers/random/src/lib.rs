//! `random`: each pop hands out a task chosen uniformly among the ready tasks the worker may run.
//!
//! A baseline with no policy at all. One `Vec` per class of allowed workers, all behind one mutex
//! together with a seeded SplitMix64 generator, so a run is reproducible for a given seed and the
//! same sequence of calls. Push and pop never wait for anything but that mutex. See README.md.
//!
//! # Memory ordering
//! The counters behind `stats` are relaxed atomics: statistics only, never used to synchronise.
//! Tasks pass from push to pop through the mutex, which orders them.

#![deny(unsafe_code)]

use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use tomii_types::abi::TomiiKnobDesc;
use tomii_types::scheduler::{InitInfo, Scheduler, Task, knob};

/// SplitMix64 (Steele, Lea and Flood, 2014): tiny, fast and good enough to pick tasks.
#[derive(Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`, `n > 0`, by multiply-shift: the bias is at most `n / 2^64`.
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// Everything behind the lock: the ready tasks, one bucket per worker range, and the generator.
#[derive(Debug)]
struct Queues {
    buckets: Vec<Vec<Task>>,
    rng: SplitMix64,
}

impl Queues {
    /// Removes a task chosen uniformly among those in `buckets`: a bucket weighted by its size,
    /// then a position in it.
    fn take_random(&mut self, buckets: &[usize]) -> Option<Task> {
        let total: usize = buckets.iter().map(|&b| self.buckets[b].len()).sum();
        if total == 0 {
            return None;
        }
        let mut pick = self.rng.below(total);
        for &b in buckets {
            let bucket = &mut self.buckets[b];
            if pick < bucket.len() {
                return Some(bucket.swap_remove(pick));
            }
            pick -= bucket.len();
        }
        unreachable!("the pick is below the total size of the buckets")
    }
}

#[derive(Debug)]
pub struct Random {
    /// The worker range of each bucket: the distinct ranges of the graph's nodes.
    ranges: Vec<(u32, u32)>,
    /// For each worker, the buckets whose range contains it.
    buckets_of: Vec<Vec<usize>>,
    queues: Mutex<Queues>,
    pushes: AtomicU64,
    pops: AtomicU64,
    empty_pops: AtomicU64,
}

impl Random {
    /// The bucket holding tasks of `task`'s worker range.
    fn bucket_of(&self, task: &Task) -> Result<usize, String> {
        self.ranges.iter().position(|&range| range == (task.worker_lo, task.worker_hi)).ok_or_else(|| {
            format!(
                "task of node {} has worker range {}..{} that no node declared",
                task.node, task.worker_lo, task.worker_hi
            )
        })
    }

    fn lock(&self) -> Result<MutexGuard<'_, Queues>, String> {
        self.queues.lock().map_err(|_| "random: the queue lock was poisoned by an earlier panic".to_owned())
    }
}

/// The distinct worker ranges of the graph's nodes, in order of first appearance, each with the
/// most tasks of that range that can be ready at once.
fn worker_ranges(init: &InitInfo) -> Vec<((u32, u32), usize)> {
    let mut ranges: Vec<((u32, u32), usize)> = Vec::new();
    for node in &init.nodes {
        let tasks = node.factor as usize * init.slots as usize;
        match ranges.iter_mut().find(|(range, _)| *range == (node.worker_lo, node.worker_hi)) {
            Some((_, capacity)) => *capacity += tasks,
            None => ranges.push(((node.worker_lo, node.worker_hi), tasks)),
        }
    }
    ranges
}

/// For each of `workers`, the indices of the `ranges` that contain it.
fn buckets_by_worker(workers: u32, ranges: &[(u32, u32)]) -> Vec<Vec<usize>> {
    let contains = |b: usize, w: u32| (ranges[b].0..ranges[b].1).contains(&w);
    (0..workers).map(|w| (0..ranges.len()).filter(|&b| contains(b, w)).collect()).collect()
}

fn parse_seed(text: &str) -> Result<u64, String> {
    text.parse().map_err(|_| format!("invalid value {text:?} for scheduler option \"seed\" (an integer 0..2^64)"))
}

impl Scheduler for Random {
    const NAME: &'static CStr = c"random";
    const KNOBS: &'static [TomiiKnobDesc] = &[knob(
        c"seed",
        c"int",
        c"0",
        c"0..18446744073709551615",
        c"Seed of the random generator: a run is reproducible for a given seed and the same sequence of calls.",
    )];

    fn create(init: &InitInfo) -> Result<Self, String> {
        let seed = init.knob_or("seed", 0u64)?;
        let ranges = worker_ranges(init);
        let buckets = ranges.iter().map(|&(_, capacity)| Vec::with_capacity(capacity)).collect();
        let ranges: Vec<(u32, u32)> = ranges.into_iter().map(|(range, _)| range).collect();
        Ok(Random {
            buckets_of: buckets_by_worker(init.workers, &ranges),
            ranges,
            queues: Mutex::new(Queues { buckets, rng: SplitMix64(seed) }),
            pushes: AtomicU64::new(0),
            pops: AtomicU64::new(0),
            empty_pops: AtomicU64::new(0),
        })
    }

    fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        let mut queues = self.lock()?;
        for task in tasks {
            queues.buckets[self.bucket_of(task)?].push(*task);
        }
        drop(queues);
        self.pushes.fetch_add(tasks.len() as u64, Relaxed);
        Ok(())
    }

    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        let mine = self.buckets_of.get(worker as usize).map_or(&[][..], Vec::as_slice);
        let mut queues = self.lock()?;
        let mut count = 0;
        while count < out.len() {
            let Some(task) = queues.take_random(mine) else { break };
            out[count] = task;
            count += 1;
        }
        drop(queues);
        self.pops.fetch_add(count as u64, Relaxed);
        if count == 0 {
            self.empty_pops.fetch_add(1, Relaxed);
        }
        Ok(count)
    }

    /// `seed` may be changed while running: the generator restarts from the new seed.
    fn set_knob(&self, key: &str, value: &str) -> Result<(), String> {
        if key != "seed" {
            return Err(format!("unknown option {key:?}; its options are: seed"));
        }
        let seed = parse_seed(value)?;
        self.lock()?.rng = SplitMix64(seed);
        Ok(())
    }

    fn stats(&self) -> String {
        format!(
            r#"{{"pushes":{},"pops":{},"empty_pops":{}}}"#,
            self.pushes.load(Relaxed),
            self.pops.load(Relaxed),
            self.empty_pops.load(Relaxed)
        )
    }
}

tomii_types::export_scheduler!(Random);

#[cfg(test)]
mod tests {
    use super::*;
    use tomii_types::scheduler::{NO_WORKER, NodeSummary};

    const ALL: (u32, u32) = (0, 2);

    /// A graph of one node per range, on `workers` workers, with 64 slots.
    fn init(workers: u32, ranges: &[(u32, u32)], knobs: &[(&str, &str)]) -> InitInfo {
        let nodes: Vec<NodeSummary> = ranges
            .iter()
            .enumerate()
            .map(|(i, &(worker_lo, worker_hi))| NodeSummary {
                name: format!("n{i}"),
                factor: 1,
                priority: 0,
                worker_lo,
                worker_hi,
            })
            .collect();
        InitInfo {
            workers,
            slots: 64,
            tasks_per_frame: nodes.len() as u64,
            max_ready: 64 * nodes.len() as u64,
            frames: 0,
            nodes,
            knobs: knobs.iter().map(|&(k, v)| (k.to_owned(), v.to_owned())).collect(),
        }
    }

    fn task(handle: u64, (worker_lo, worker_hi): (u32, u32)) -> Task {
        Task { handle, worker_lo, worker_hi, locality: NO_WORKER, ..Task::default() }
    }

    /// Pops for `worker`, `batch` at a time, until it gets nothing.
    fn drain(s: &Random, worker: u32, batch: usize) -> Vec<u64> {
        let mut out = vec![Task::default(); batch];
        let mut handles = Vec::new();
        loop {
            let n = s.pop(worker, &mut out).unwrap();
            if n == 0 {
                return handles;
            }
            handles.extend(out[..n].iter().map(|t| t.handle));
        }
    }

    /// Pushes 100 tasks in batches of 10 and drains them through workers 0 and 1 alternately.
    fn run(knobs: &[(&str, &str)]) -> Vec<u64> {
        let s = Random::create(&init(2, &[ALL], knobs)).unwrap();
        let tasks: Vec<Task> = (0..100).map(|h| task(h, ALL)).collect();
        let mut order = Vec::new();
        let mut out = [Task::default(); 3];
        for (i, batch) in tasks.chunks(10).enumerate() {
            s.push(None, batch).unwrap();
            let n = s.pop(i as u32 % 2, &mut out).unwrap();
            order.extend(out[..n].iter().map(|t| t.handle));
        }
        order.extend(drain(&s, 0, 4));
        order
    }

    #[test]
    fn same_seed_same_order_and_every_task_once() {
        let order = run(&[("seed", "7")]);
        assert_eq!(order, run(&[("seed", "7")]));
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_ne!(order, sorted, "100 tasks came out in push order");
    }

    #[test]
    fn seeds_differ_and_default_is_zero() {
        assert_ne!(run(&[("seed", "7")]), run(&[("seed", "8")]));
        assert_eq!(run(&[]), run(&[("seed", "0")]));
    }

    #[test]
    fn set_knob_reseeds() {
        let s = Random::create(&init(1, &[(0, 1)], &[("seed", "3")])).unwrap();
        let t = Random::create(&init(1, &[(0, 1)], &[])).unwrap();
        t.set_knob("seed", "3").unwrap();
        let tasks: Vec<Task> = (0..50).map(|h| task(h, (0, 1))).collect();
        s.push(None, &tasks).unwrap();
        t.push(None, &tasks).unwrap();
        assert_eq!(drain(&s, 0, 1), drain(&t, 0, 1));
        assert!(t.set_knob("seed", "-1").is_err());
        assert!(t.set_knob("bogus", "1").unwrap_err().contains("seed"));
    }

    #[test]
    fn bad_options_are_rejected() {
        assert!(Random::create(&init(1, &[ALL], &[("seed", "x")])).unwrap_err().contains("seed"));
        let unknown = init(1, &[ALL], &[("bogus", "1")]).check_knobs(Random::KNOBS).unwrap_err();
        assert!(unknown.contains("bogus") && unknown.contains("seed"), "{unknown}");
    }

    #[test]
    fn worker_ranges_are_honoured_and_nothing_is_held_back() {
        let ranges = [(0, 1), (1, 2), ALL];
        let s = Random::create(&init(2, &ranges, &[])).unwrap();
        let tasks: Vec<Task> = (0..30).map(|h| task(h, ranges[h as usize % 3])).collect();
        s.push(Some(0), &tasks).unwrap();
        let zero = drain(&s, 0, 2);
        assert_eq!(zero.len(), 20, "worker 0 may run the 10 tasks of 0..1 and the 10 of 0..2");
        assert!(zero.iter().all(|&h| h % 3 != 1));
        let one = drain(&s, 1, 2);
        assert_eq!(one.len(), 10);
        assert!(one.iter().all(|&h| h % 3 == 1));
        assert!(drain(&s, 7, 2).is_empty(), "a worker outside every range gets nothing");
    }

    #[test]
    fn buckets_are_chosen_by_their_size() {
        // One task in each of two buckets: over several seeds, both come out first sometimes.
        let firsts: Vec<u64> = (0..32)
            .map(|seed| {
                let s = Random::create(&init(2, &[(0, 1), ALL], &[("seed", &seed.to_string())])).unwrap();
                s.push(None, &[task(0, (0, 1)), task(1, ALL)]).unwrap();
                drain(&s, 0, 1)[0]
            })
            .collect();
        assert!(firsts.contains(&0) && firsts.contains(&1), "{firsts:?}");
    }

    #[test]
    fn pop_respects_the_buffer_length() {
        let s = Random::create(&init(1, &[(0, 1)], &[])).unwrap();
        s.push(None, &(0..10).map(|h| task(h, (0, 1))).collect::<Vec<_>>()).unwrap();
        assert_eq!(s.pop(0, &mut []).unwrap(), 0);
        assert_eq!(s.pop(0, &mut [Task::default(); 3]).unwrap(), 3);
        assert_eq!(s.pop(0, &mut [Task::default(); 20]).unwrap(), 7);
    }

    #[test]
    fn concurrent_push_and_pop_hand_out_each_task_once() {
        const PER_THREAD: u64 = 5_000;
        let s = Random::create(&init(2, &[ALL], &[])).unwrap();
        let popped: Vec<Vec<u64>> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..2u32)
                .map(|w| {
                    let s = &s;
                    scope.spawn(move || {
                        let mut mine = Vec::new();
                        let mut out = [Task::default(); 3];
                        for i in 0..PER_THREAD {
                            s.push(Some(w), &[task(u64::from(w) * PER_THREAD + i, ALL)]).unwrap();
                            if i % 2 == 0 {
                                let n = s.pop(w, &mut out).unwrap();
                                mine.extend(out[..n].iter().map(|t| t.handle));
                            }
                        }
                        mine
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let mut all = popped.concat();
        all.extend(drain(&s, 1, 5));
        all.sort_unstable();
        assert_eq!(all, (0..2 * PER_THREAD).collect::<Vec<_>>());
        let stats = s.stats();
        assert!(stats.contains(r#""pushes":10000"#) && stats.contains(r#""pops":10000"#), "{stats}");
    }
}
