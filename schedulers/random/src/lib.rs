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
use tomii_types::scheduler::{InitInfo, RangeClasses, Scheduler, Task, fill, knob};

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

/// Everything behind the lock: the ready tasks, one bucket per worker-range class, and the generator.
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
    /// The distinct worker ranges of the graph's nodes: bucket `c` holds the tasks of class `c`.
    classes: RangeClasses,
    queues: Mutex<Queues>,
    pushes: AtomicU64,
    pops: AtomicU64,
    empty_pops: AtomicU64,
}

impl Random {
    fn lock(&self) -> Result<MutexGuard<'_, Queues>, String> {
        self.queues.lock().map_err(|_| "random: the queue lock was poisoned by an earlier panic".to_owned())
    }
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
        let classes = RangeClasses::new(init);
        let buckets = (0..classes.len()).map(|class| Vec::with_capacity(classes.capacity(class))).collect();
        Ok(Random {
            classes,
            queues: Mutex::new(Queues { buckets, rng: SplitMix64(seed) }),
            pushes: AtomicU64::new(0),
            pops: AtomicU64::new(0),
            empty_pops: AtomicU64::new(0),
        })
    }

    fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        let mut queues = self.lock()?;
        for task in tasks {
            queues.buckets[self.classes.class_of(task)?].push(*task);
        }
        drop(queues);
        self.pushes.fetch_add(tasks.len() as u64, Relaxed);
        Ok(())
    }

    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        let mine = self.classes.classes_of(worker);
        let mut queues = self.lock()?;
        let count = fill(out, || queues.take_random(mine));
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
    use tomii_types::scheduler::testing::{
        assert_exactly_once_under_concurrency, assert_options_are_checked, assert_pop_respects_the_buffer_length,
        assert_ranges_honoured_and_nothing_held_back, create, pop_all, task,
    };

    const ALL: (u32, u32) = (0, 2);

    /// Pushes 100 tasks in batches of 10 and drains them through workers 0 and 1 alternately.
    fn run(knobs: &[(&str, &str)]) -> Vec<u64> {
        let s: Random = create(2, &[ALL], knobs);
        let tasks: Vec<Task> = (0..100).map(|h| task(h, ALL)).collect();
        let mut order = Vec::new();
        let mut out = [Task::default(); 3];
        for (i, batch) in tasks.chunks(10).enumerate() {
            s.push(None, batch).unwrap();
            let n = s.pop(i as u32 % 2, &mut out).unwrap();
            order.extend(out[..n].iter().map(|t| t.handle));
        }
        order.extend(pop_all(&s, 0, 4));
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
        let s: Random = create(1, &[(0, 1)], &[("seed", "3")]);
        let t: Random = create(1, &[(0, 1)], &[]);
        t.set_knob("seed", "3").unwrap();
        let tasks: Vec<Task> = (0..50).map(|h| task(h, (0, 1))).collect();
        s.push(None, &tasks).unwrap();
        t.push(None, &tasks).unwrap();
        assert_eq!(pop_all(&s, 0, 1), pop_all(&t, 0, 1));
        assert!(t.set_knob("seed", "-1").is_err());
        assert!(t.set_knob("bogus", "1").unwrap_err().contains("seed"));
    }

    #[test]
    fn bad_options_are_rejected() {
        assert_options_are_checked::<Random>(&[("seed", "x")], "bogus");
    }

    #[test]
    fn worker_ranges_are_honoured_and_nothing_is_held_back() {
        assert_ranges_honoured_and_nothing_held_back::<Random>();
    }

    #[test]
    fn buckets_are_chosen_by_their_size() {
        // One task in each of two buckets: over several seeds, both come out first sometimes.
        let firsts: Vec<u64> = (0..32)
            .map(|seed| {
                let s: Random = create(2, &[(0, 1), ALL], &[("seed", &seed.to_string())]);
                s.push(None, &[task(0, (0, 1)), task(1, ALL)]).unwrap();
                pop_all(&s, 0, 1)[0]
            })
            .collect();
        assert!(firsts.contains(&0) && firsts.contains(&1), "{firsts:?}");
    }

    #[test]
    fn pop_respects_the_buffer_length() {
        assert_pop_respects_the_buffer_length::<Random>();
    }

    #[test]
    fn concurrent_push_and_pop_hand_out_each_task_once() {
        let s = assert_exactly_once_under_concurrency::<Random>(2, 10_000, &[]);
        let stats = s.stats();
        assert!(stats.contains(r#""pushes":10000"#) && stats.contains(r#""pops":10000"#), "{stats}");
    }
}
