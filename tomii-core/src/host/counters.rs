//! A task's counters in one slot, and a frame's completion (engine/README.md, "Slots and
//! generations"): per (slot, instance) one 64-bit word, arrivals from predecessors in its high 32
//! bits and claims in its low 32, both over every generation and modulo 2^32. Nothing is ever
//! reset: a target derived from the slot's generation says when a task is ready, claimable or its
//! frame complete. Written once over [`Word`], a cell the engine makes atomic and the simulator
//! plain; it must never hold anything but the words.
//!
//! # Memory ordering
//! The orderings are stated here, once, and an atomic [`Word`] applies them (a plain one has no
//! other thread to order against). Arrivals are SeqCst read-modify-writes, so the increment that
//! makes an instance ready acquires every predecessor's result write (each predecessor stores its
//! result, then increments; all increments form one release sequence), and fault containment
//! orders them against an ejection (engine/worker/fault.rs). A claim is an AcqRel
//! compare-and-swap (Acquire on failure). A slot's sink count is AcqRel: the completion of its
//! frame is ordered after every sink, hence after every task. The scans of an ejection load
//! SeqCst.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::graph::CompiledGraph;

/// A slot's generation before its first frame: the first `begin` makes it 0.
pub(crate) const FIRST_GENERATION: u32 = u32::MAX;

/// One arrival, as added to a counter word.
const ARRIVAL: u64 = 1 << 32;

/// A 64-bit counter the host core reads and writes: atomic in the engine, plain in the simulator.
pub(crate) trait Word {
    fn make(value: u64) -> Self;
    fn load(&self, order: Ordering) -> u64;
    /// Adds `value`; returns the word before.
    fn fetch_add(&self, value: u64, order: Ordering) -> u64;
    /// Replaces `current` by `new`; the word found, as `Err` when it was not `current`.
    fn compare_exchange(&self, current: u64, new: u64, success: Ordering, failure: Ordering) -> Result<u64, u64>;
}

impl Word for AtomicU64 {
    #[inline(always)]
    fn make(value: u64) -> Self {
        AtomicU64::new(value)
    }

    #[inline(always)]
    fn load(&self, order: Ordering) -> u64 {
        AtomicU64::load(self, order)
    }

    #[inline(always)]
    fn fetch_add(&self, value: u64, order: Ordering) -> u64 {
        AtomicU64::fetch_add(self, value, order)
    }

    #[inline(always)]
    fn compare_exchange(&self, current: u64, new: u64, success: Ordering, failure: Ordering) -> Result<u64, u64> {
        AtomicU64::compare_exchange(self, current, new, success, failure)
    }
}

impl Word for Cell<u64> {
    #[inline(always)]
    fn make(value: u64) -> Self {
        Cell::new(value)
    }

    #[inline(always)]
    fn load(&self, _: Ordering) -> u64 {
        self.get()
    }

    #[inline(always)]
    fn fetch_add(&self, value: u64, _: Ordering) -> u64 {
        let before = self.get();
        self.set(before.wrapping_add(value));
        before
    }

    #[inline(always)]
    fn compare_exchange(&self, current: u64, new: u64, _: Ordering, _: Ordering) -> Result<u64, u64> {
        let found = self.get();
        if found == current {
            self.set(new);
            Ok(found)
        } else {
            Err(found)
        }
    }
}

/// The arrivals that make an instance with `deps` predecessors ready in `generation`: `(g + 1) ·
/// deps` modulo 2^32. Exact because each generation adds exactly `deps` (< 2^32) arrivals.
#[inline(always)]
fn ready_at(generation: u32, deps: u32) -> u32 {
    generation.wrapping_add(1).wrapping_mul(deps)
}

/// Why a claim failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClaimError {
    /// The task was claimed already in this generation.
    Twice,
    /// The task is not ready in this generation (never pushed, or of another frame).
    NotReady,
}

/// The counter words of every (slot, instance) pair, indexed `slot * instances + instance`.
pub(crate) struct Counters<W> {
    instances: usize,
    words: Box<[W]>,
}

impl<W: Word> Counters<W> {
    /// Bytes one (slot, instance) pair's word takes.
    pub(crate) const CELL_BYTES: usize = size_of::<W>();

    pub(crate) fn new(slots: u32, instances: usize) -> Self {
        Counters { instances, words: (0..slots as usize * instances).map(|_| W::make(0)).collect() }
    }

    /// [`new`](Self::new), or an error naming `what` when the memory cannot be had.
    pub(crate) fn try_new(slots: u32, instances: usize, what: impl FnOnce() -> String) -> Result<Self, String> {
        let words = crate::engine::memory::try_boxed(slots as usize * instances, what, |_| W::make(0))?;
        Ok(Counters { instances, words })
    }

    /// Instances per slot.
    #[inline(always)]
    pub(crate) fn instances(&self) -> usize {
        self.instances
    }

    /// Where the pair (slot, instance) is in a flat per-pair array (this one's, and the
    /// executor's own, such as the engine's results).
    #[inline(always)]
    pub(crate) fn index(&self, slot: u32, instance: u32) -> usize {
        slot as usize * self.instances + instance as usize
    }

    #[inline]
    fn word(&self, slot: u32, instance: u32) -> &W {
        &self.words[self.index(slot, instance)]
    }

    /// Records one arrival on `instance`; true when it was the last of the `deps` it waits for in
    /// `generation`, i.e. the instance just became ready.
    #[inline]
    pub(crate) fn arrive(&self, slot: u32, instance: u32, generation: u32, deps: u32) -> bool {
        let before = self.word(slot, instance).fetch_add(ARRIVAL, Ordering::SeqCst);
        ((before >> 32) as u32).wrapping_add(1) == ready_at(generation, deps)
    }

    /// Whether `instance` has all its `deps` arrivals in `generation`.
    #[inline]
    pub(crate) fn is_ready(&self, slot: u32, instance: u32, generation: u32, deps: u32) -> bool {
        (self.word(slot, instance).load(Ordering::SeqCst) >> 32) as u32 == ready_at(generation, deps)
    }

    /// Claims the task for execution in `generation` if it is ready (all its `deps` arrivals are
    /// in) and not yet claimed: one compare-and-swap of its word, which checks both.
    #[inline]
    pub(crate) fn claim(&self, slot: u32, instance: u32, generation: u32, deps: u32) -> Result<(), ClaimError> {
        let ready = u64::from(ready_at(generation, deps)) << 32;
        match self.word(slot, instance).compare_exchange(
            ready | u64::from(generation),
            ready | u64::from(generation.wrapping_add(1)),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => Ok(()),
            Err(found) if found as u32 == generation.wrapping_add(1) && found & !0xFFFF_FFFF == ready => {
                Err(ClaimError::Twice)
            }
            Err(_) => Err(ClaimError::NotReady),
        }
    }

    /// Whether the task has not been claimed in `generation`.
    #[inline]
    pub(crate) fn is_unclaimed(&self, slot: u32, instance: u32, generation: u32) -> bool {
        self.word(slot, instance).load(Ordering::SeqCst) as u32 == generation
    }
}

/// Records a completed sink task on a slot's sink count `done` (over all its generations); true
/// when it completed the slot's frame of `generation`, whose frames have `sinks` sinks each.
#[inline]
pub(crate) fn frame_complete<W: Word>(done: &W, generation: u32, sinks: u64) -> bool {
    let before = done.fetch_add(1, Ordering::AcqRel);
    before + 1 == (u64::from(generation) + 1) * sinks
}

/// The tasks whose completions complete a frame: those without successors. Every instance
/// precedes one, and a task has made all its arrivals before any successor runs, so when the last
/// completes no task of the frame still touches the slot's counters.
pub(crate) fn sinks(graph: &CompiledGraph) -> Vec<u32> {
    (0..graph.instance_count() as u32).filter(|&i| graph.is_task(i) && graph.successors(i).is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(test: impl Fn(&dyn Fn(u32, usize) -> Box<dyn Table>)) {
        test(&|slots, instances| Box::new(Counters::<AtomicU64>::new(slots, instances)));
        test(&|slots, instances| Box::new(Counters::<Cell<u64>>::new(slots, instances)));
    }

    /// The counters, whatever their word, for the tests to run over both.
    trait Table {
        fn arrive(&self, instance: u32, generation: u32, deps: u32) -> bool;
        fn claim(&self, instance: u32, generation: u32, deps: u32) -> Result<(), ClaimError>;
        fn is_unclaimed(&self, instance: u32, generation: u32) -> bool;
        fn set(&self, instance: u32, word: u64);
        fn get(&self, instance: u32) -> u64;
    }

    impl<W: Word> Table for Counters<W> {
        fn arrive(&self, instance: u32, generation: u32, deps: u32) -> bool {
            Counters::arrive(self, 0, instance, generation, deps)
        }
        fn claim(&self, instance: u32, generation: u32, deps: u32) -> Result<(), ClaimError> {
            Counters::claim(self, 0, instance, generation, deps)
        }
        fn is_unclaimed(&self, instance: u32, generation: u32) -> bool {
            Counters::is_unclaimed(self, 0, instance, generation)
        }
        fn set(&self, instance: u32, word: u64) {
            let before = self.word(0, instance).load(Ordering::Relaxed);
            self.word(0, instance).fetch_add(word.wrapping_sub(before), Ordering::Relaxed);
        }
        fn get(&self, instance: u32) -> u64 {
            self.word(0, instance).load(Ordering::Relaxed)
        }
    }

    #[test]
    fn counters_need_no_reset_between_generations() {
        both(|make| {
            let table = make(1, 2);
            let done = AtomicU64::new(0);
            for generation in 0..3 {
                // instance 1 waits for two arrivals; instance 0 for none.
                assert!(!table.arrive(1, generation, 2));
                assert!(table.arrive(1, generation, 2));
                assert!(table.claim(1, generation, 2).is_ok());
                assert_eq!(table.claim(1, generation, 2), Err(ClaimError::Twice), "second claim must fail");
                assert!(table.claim(0, generation, 0).is_ok());
                assert!(!frame_complete(&done, generation, 2));
                assert!(frame_complete(&done, generation, 2));
            }
        });
    }

    #[test]
    fn a_claim_checks_readiness_in_the_same_step() {
        both(|make| {
            let table = make(1, 1);
            let generation = FIRST_GENERATION.wrapping_add(1);
            assert_eq!(table.claim(0, generation, 2), Err(ClaimError::NotReady));
            assert!(!table.arrive(0, generation, 2));
            assert_eq!(table.claim(0, generation, 2), Err(ClaimError::NotReady), "one arrival of two");
            assert!(table.is_unclaimed(0, generation), "a refused claim leaves no trace");
            assert!(table.arrive(0, generation, 2));
            assert_eq!(table.claim(0, generation, 2), Ok(()));
            assert_eq!(table.claim(0, generation, 2), Err(ClaimError::Twice));
            assert_eq!(table.claim(0, generation.wrapping_add(1), 2), Err(ClaimError::NotReady), "a later generation");
        });
    }

    #[test]
    fn counters_wrap_modulo_2_to_the_32() {
        both(|make| {
            // A slot at its last generation before the counter words wrap: the targets still hold.
            let table = make(1, 1);
            let generation = u32::MAX;
            table.set(0, u64::from(ready_at(generation.wrapping_sub(1), 3)) << 32 | u64::from(generation));
            assert!(!table.arrive(0, generation, 3));
            assert!(!table.arrive(0, generation, 3));
            assert!(table.arrive(0, generation, 3));
            assert_eq!(table.claim(0, generation, 3), Ok(()));
            // The next generation, 0, starts where a fresh slot starts.
            assert_eq!(table.get(0), 0);
        });
    }
}
