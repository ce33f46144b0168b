//! Per-slot state: dependency counters, claim counters, results and frame bookkeeping, for every
//! (slot, instance) pair, in flat arrays indexed `slot * instances + instance`. A task's two
//! counters share one 64-bit word, so one compare-and-swap both checks that a task is ready and
//! claims it (README.md, "Slots and generations"). The words' arithmetic and the frame's sink
//! count are the host core's (`host/counters.rs`), here over atomics; the simulator runs the same
//! over plain cells.
//!
//! Nothing here is ever reset: every counter grows monotonically and is compared against a target
//! derived from the slot's generation, which makes recycling a slot O(1). See README.md, "Slots and
//! generations", for the argument.
//!
//! # Memory ordering
//! The counter words' and the `done` count's orderings are stated in `host/counters.rs`, which
//! applies them: arrivals SeqCst (the increment that makes an instance ready acquires every
//! predecessor's result write), claims AcqRel, `done` AcqRel (a slot's completion after every
//! sink, hence every task). Generations are published with release before a frame's roots are
//! pushed (`begin_frame`) and read with acquire when validating a popped handle (`SlotView`).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

use tomii_types::abi::TomiiValue;
use tomii_types::kernel::Value;

use super::memory;
pub use crate::host::MAX_SLOTS;
use crate::host::{ClaimError, Counters, FIRST_GENERATION, SlotView, TaskRef, frame_complete};

/// One task's result. Written only by the task itself, read only by its successors in the same
/// generation; overwritten (old value released) when the slot's next frame runs the task.
struct ResultCell(UnsafeCell<TomiiValue>);

// SAFETY: access follows the protocol above: one writer per generation, readers only after the
// writer's release (the arrival counter), and the next write only after every reader of the
// previous generation has finished (the slot's done counter).
unsafe impl Sync for ResultCell {}

/// Frame bookkeeping of one slot.
pub struct Slot {
    /// How many frames this slot has started, minus one (wraps from `u32::MAX` to 0 at the first).
    pub generation: AtomicU32,
    /// Frame number of the frame in the slot.
    pub frame: AtomicU64,
    /// When the frame started, in clock ticks.
    pub started: AtomicU64,
    /// The frame source's tag of the frame (`NextFrame::Start`).
    pub tag: AtomicU64,
    /// The door's serial number of the frame (`Opened::serial`; 0 when started with its inputs).
    pub serial: AtomicU64,
    /// Whether a frame occupies the slot (started and not yet done).
    pub busy: AtomicBool,
    /// Whether the frame's source gave up on it (README.md, "Inputs delivered one by one"): its
    /// tasks not yet run are skipped.
    pub abandoned: AtomicBool,
    /// Sink tasks completed in this slot, over all its generations. On its own cache line: it is
    /// written by every sink, while the fields above are read by every task.
    pub done: CachePadded<AtomicU64>,
}

pub struct SlotTable {
    /// Sink instances per frame: a frame is complete when all of them are.
    sinks: u64,
    slots: Box<[CachePadded<Slot>]>,
    counters: Counters<AtomicU64>,
    results: Box<[ResultCell]>,
}

impl SlotTable {
    /// Bytes one (slot, instance) pair takes.
    pub const CELL_BYTES: usize = Counters::<AtomicU64>::CELL_BYTES + size_of::<ResultCell>();
    /// Bytes one slot's bookkeeping takes (two cache lines, at the least).
    pub const SLOT_BYTES: usize = size_of::<CachePadded<Slot>>();

    /// The table of `slots` slots of `instances` instances each; an error naming the array when
    /// the system refuses its memory (a run's largest arrays are these), instead of an abort.
    pub fn new(slots: u32, instances: usize, sinks: usize) -> Result<Self, String> {
        let cells = slots as usize * instances;
        let shape = || format!("{slots} slot(s) × {instances} instances");
        let slot = |_| {
            CachePadded::new(Slot {
                generation: AtomicU32::new(FIRST_GENERATION),
                frame: AtomicU64::new(0),
                started: AtomicU64::new(0),
                tag: AtomicU64::new(0),
                serial: AtomicU64::new(0),
                busy: AtomicBool::new(false),
                abandoned: AtomicBool::new(false),
                done: CachePadded::new(AtomicU64::new(0)),
            })
        };
        Ok(SlotTable {
            sinks: sinks as u64,
            slots: memory::try_boxed(slots as usize, || format!("the bookkeeping of {slots} slot(s)"), slot)?,
            counters: Counters::try_new(slots, instances, || format!("the task counters of {}", shape()))?,
            results: memory::try_boxed(
                cells,
                || format!("the result cells of {}", shape()),
                |_| ResultCell(UnsafeCell::new(TomiiValue::NONE)),
            )?,
        })
    }

    #[inline]
    pub fn slot(&self, slot: u32) -> &Slot {
        &self.slots[slot as usize]
    }

    #[inline]
    fn index(&self, slot: u32, instance: u32) -> usize {
        self.counters.index(slot, instance)
    }

    /// Starts the slot's next generation, for the frame the source tagged `tag` (the door's
    /// `serial`); returns it.
    pub fn begin_frame(&self, slot: u32, frame: u64, tag: u64, serial: u64, now: u64) -> u32 {
        let s = self.slot(slot);
        s.frame.store(frame, Ordering::Relaxed);
        s.serial.store(serial, Ordering::Relaxed);
        s.started.store(now, Ordering::Relaxed);
        s.tag.store(tag, Ordering::Relaxed);
        s.busy.store(true, Ordering::Relaxed);
        s.abandoned.store(false, Ordering::Relaxed);
        s.generation.fetch_add(1, Ordering::Release).wrapping_add(1)
    }

    /// Records one arrival on `instance`; true when it was the last of the `deps` it waits for in
    /// `generation`, i.e. the instance just became ready.
    #[inline]
    pub fn arrive(&self, slot: u32, instance: u32, generation: u32, deps: u32) -> bool {
        self.counters.arrive(slot, instance, generation, deps)
    }

    /// Whether `instance` has all its `deps` arrivals in `generation`.
    #[inline]
    pub fn is_ready(&self, slot: u32, instance: u32, generation: u32, deps: u32) -> bool {
        self.counters.is_ready(slot, instance, generation, deps)
    }

    /// Claims the task for execution in `generation` if it is ready and not yet claimed.
    #[inline]
    pub fn claim(&self, slot: u32, instance: u32, generation: u32, deps: u32) -> Result<(), ClaimError> {
        self.counters.claim(slot, instance, generation, deps)
    }

    /// Whether the task has not been claimed in `generation`.
    pub fn is_unclaimed(&self, slot: u32, instance: u32, generation: u32) -> bool {
        self.counters.is_unclaimed(slot, instance, generation)
    }

    /// Records a completed sink task; true when it completed the slot's frame.
    #[inline]
    pub fn complete_sink(&self, slot: u32, generation: u32) -> bool {
        frame_complete(&*self.slot(slot).done, generation, self.sinks)
    }

    /// The stored result of `instance`, borrowed as a raw value (never release it).
    ///
    /// # Safety
    /// The instance must have completed in the slot's current generation, and the caller must be a
    /// successor of it (or the frame's completer) that observed that completion.
    #[inline]
    pub unsafe fn result(&self, slot: u32, instance: u32) -> TomiiValue {
        // SAFETY: per the caller's guarantee, no write to this cell races with this read.
        unsafe { *self.results[self.index(slot, instance)].0.get() }
    }

    /// Moves the stored result of `instance` out of its cell, leaving no value.
    ///
    /// # Safety
    /// As for [`SlotTable::result`], and no task may read the result afterwards: the frame is
    /// complete and nothing else of it reads this cell.
    pub unsafe fn take_result(&self, slot: u32, instance: u32) -> Value {
        let cell = self.results[self.index(slot, instance)].0.get();
        // SAFETY: per the caller's guarantee, nothing else reads or writes the cell meanwhile; the
        // cell owned the value and now owns nothing.
        unsafe { Value::from_raw(std::ptr::replace(cell, TomiiValue::NONE)) }
    }

    /// Stores the result of `instance`, releasing the previous generation's value.
    ///
    /// # Safety
    /// The caller must be the task that owns this cell in the current generation, and `value` must
    /// be an owned value whose release the host may call.
    #[inline]
    pub unsafe fn store_result(&self, slot: u32, instance: u32, value: TomiiValue) {
        let cell = self.results[self.index(slot, instance)].0.get();
        // SAFETY: exclusive access per the protocol; the previous value was owned by the cell.
        unsafe {
            drop(Value::from_raw(std::ptr::replace(cell, value)));
        }
    }
}

impl SlotView for SlotTable {
    type Slot = Slot;

    #[inline(always)]
    fn slot(&self, task: TaskRef) -> Option<&Slot> {
        let known = (task.slot as usize) < self.slots.len() && (task.instance as usize) < self.counters.instances();
        if known { Some(&self.slots[task.slot as usize]) } else { None }
    }

    #[inline(always)]
    fn generation(slot: &Slot) -> u32 {
        slot.generation.load(Ordering::Acquire)
    }

    #[inline(always)]
    fn frame(slot: &Slot) -> u64 {
        slot.frame.load(Ordering::Relaxed)
    }

    #[inline(always)]
    fn claim(&self, slot: u32, instance: u32, generation: u32, deps: u32) -> Result<(), ClaimError> {
        self.counters.claim(slot, instance, generation, deps)
    }
}

impl Drop for SlotTable {
    fn drop(&mut self) {
        for cell in self.results.iter() {
            // SAFETY: `&mut self`: no task runs any more; each cell owns its value.
            drop(unsafe { Value::from_raw(std::ptr::replace(cell.0.get(), TomiiValue::NONE)) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_begin_in_new_generations_and_complete_with_their_last_sink() {
        let table = SlotTable::new(1, 2, 2).expect("a small table");
        for frame in 0..3u64 {
            let generation = table.begin_frame(0, frame, frame, 0, 0);
            assert_eq!(generation, frame as u32);
            assert!(!table.arrive(0, 1, generation, 2));
            assert!(table.arrive(0, 1, generation, 2));
            assert!(table.claim(0, 1, generation, 2).is_ok());
            assert_eq!(table.claim(0, 1, generation, 2), Err(ClaimError::Twice), "second claim must fail");
            assert!(table.claim(0, 0, generation, 0).is_ok());
            assert!(!table.complete_sink(0, generation));
            assert!(table.complete_sink(0, generation));
        }
    }
}
