//! Per-slot state: dependency counters, claim counters, results and frame bookkeeping, for every
//! (slot, instance) pair, in flat arrays indexed `slot * instances + instance`. A task's two
//! counters share one 64-bit word, so one compare-and-swap both checks that a task is ready and
//! claims it (README.md, "Slots and generations").
//!
//! Nothing here is ever reset: every counter grows monotonically and is compared against a target
//! derived from the slot's generation, which makes recycling a slot O(1). See README.md, "Slots and
//! generations", for the argument.
//!
//! # Memory ordering
//! Arrivals (the word's high half) use SeqCst read-modify-writes, so the increment that makes an instance ready
//! acquires every predecessor's result write (each predecessor stores its result, then increments
//! with release; all increments form one release sequence). The `done` counter orders a slot's
//! completion after every sink of the frame, hence after every task (every task precedes a sink). Generations are published with release before a
//! frame's roots are pushed and read with acquire when validating a popped handle.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

use tomii_types::abi::TomiiValue;
use tomii_types::kernel::Value;

/// Bits of a handle holding the instance index.
const INSTANCE_BITS: u32 = 32;
/// Bits of a handle holding the slot index.
const SLOT_BITS: u32 = 24;
/// The most slots a run may have.
pub const MAX_SLOTS: u32 = 1 << SLOT_BITS;

/// Where a handle points, once decoded and range-checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRef {
    pub slot: u32,
    pub instance: u32,
    /// The low 8 bits of the generation the handle was issued for.
    pub tag: u32,
}

/// Encodes a task handle: generation tag (8 bits), slot (24 bits), instance (32 bits).
#[inline]
pub fn encode_handle(slot: u32, instance: u32, generation: u32) -> u64 {
    (u64::from(generation & 0xFF) << (INSTANCE_BITS + SLOT_BITS))
        | (u64::from(slot) << INSTANCE_BITS)
        | u64::from(instance)
}

/// Decodes a handle without checking it against the table.
#[inline]
pub fn decode_handle(handle: u64) -> TaskRef {
    TaskRef {
        slot: ((handle >> INSTANCE_BITS) & u64::from(MAX_SLOTS - 1)) as u32,
        instance: handle as u32,
        tag: (handle >> (INSTANCE_BITS + SLOT_BITS)) as u32,
    }
}

/// The counters of one task in one slot, in one word: arrivals from predecessors in the high 32
/// bits, claims by workers in the low 32, both over all generations and modulo 2^32. An arrival
/// adds `1 << 32` (its carry leaves the word), a claim moves the low half from `g` to `g + 1`.
struct Counters {
    word: AtomicU64,
}

/// One arrival, as added to a counter word.
const ARRIVAL: u64 = 1 << 32;

/// The arrivals that make an instance with `deps` predecessors ready in `generation`: `(g + 1) ·
/// deps` modulo 2^32. Exact because each generation adds exactly `deps` (< 2^32) arrivals.
#[inline(always)]
fn ready_at(generation: u32, deps: u32) -> u32 {
    generation.wrapping_add(1).wrapping_mul(deps)
}

/// Why a claim failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimError {
    /// The task was claimed already in this generation.
    Twice,
    /// The task is not ready in this generation (never pushed, or of another frame).
    NotReady,
}

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
    instances: usize,
    /// Sink instances per frame: a frame is complete when all of them are.
    sinks: u64,
    slots: Box<[CachePadded<Slot>]>,
    counters: Box<[Counters]>,
    results: Box<[ResultCell]>,
}

impl SlotTable {
    /// Bytes one (slot, instance) pair takes.
    pub const CELL_BYTES: usize = size_of::<Counters>() + size_of::<ResultCell>();

    pub fn new(slots: u32, instances: usize, sinks: usize) -> Self {
        let cells = slots as usize * instances;
        SlotTable {
            instances,
            sinks: sinks as u64,
            slots: (0..slots)
                .map(|_| {
                    CachePadded::new(Slot {
                        generation: AtomicU32::new(u32::MAX),
                        frame: AtomicU64::new(0),
                        started: AtomicU64::new(0),
                        tag: AtomicU64::new(0),
                        serial: AtomicU64::new(0),
                        busy: AtomicBool::new(false),
                        abandoned: AtomicBool::new(false),
                        done: CachePadded::new(AtomicU64::new(0)),
                    })
                })
                .collect(),
            counters: (0..cells).map(|_| Counters { word: AtomicU64::new(0) }).collect(),
            results: (0..cells).map(|_| ResultCell(UnsafeCell::new(TomiiValue::NONE))).collect(),
        }
    }

    #[inline]
    pub fn slot(&self, slot: u32) -> &Slot {
        &self.slots[slot as usize]
    }

    #[inline]
    fn index(&self, slot: u32, instance: u32) -> usize {
        slot as usize * self.instances + instance as usize
    }

    #[inline]
    fn cell(&self, slot: u32, instance: u32) -> &Counters {
        &self.counters[self.index(slot, instance)]
    }

    /// Whether a decoded handle names an existing slot and instance.
    #[inline]
    pub fn contains(&self, task: TaskRef) -> bool {
        (task.slot as usize) < self.slots.len() && (task.instance as usize) < self.instances
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
        // SeqCst (the same instruction as AcqRel on x86): fault containment orders arrivals against
        // the scheduler's ejection (worker/fault.rs).
        let before = self.cell(slot, instance).word.fetch_add(ARRIVAL, Ordering::SeqCst);
        ((before >> 32) as u32).wrapping_add(1) == ready_at(generation, deps)
    }

    /// Whether `instance` has all its `deps` arrivals in `generation`.
    #[inline]
    pub fn is_ready(&self, slot: u32, instance: u32, generation: u32, deps: u32) -> bool {
        (self.cell(slot, instance).word.load(Ordering::SeqCst) >> 32) as u32 == ready_at(generation, deps)
    }

    /// Claims the task for execution in `generation` if it is ready (all its `deps` arrivals are
    /// in) and not yet claimed: one compare-and-swap of its word, which checks both.
    #[inline]
    pub fn claim(&self, slot: u32, instance: u32, generation: u32, deps: u32) -> Result<(), ClaimError> {
        let ready = u64::from(ready_at(generation, deps)) << 32;
        let cell = &self.cell(slot, instance).word;
        match cell.compare_exchange(
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
    pub fn is_unclaimed(&self, slot: u32, instance: u32, generation: u32) -> bool {
        self.cell(slot, instance).word.load(Ordering::SeqCst) as u32 == generation
    }

    /// Records a completed sink task; true when it completed the slot's frame.
    #[inline]
    pub fn complete_sink(&self, slot: u32, generation: u32) -> bool {
        let before = self.slot(slot).done.fetch_add(1, Ordering::AcqRel);
        before + 1 == (u64::from(generation) + 1) * self.sinks
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
    fn handles_round_trip() {
        let handle = encode_handle(MAX_SLOTS - 1, u32::MAX, 0x1234);
        assert_eq!(decode_handle(handle), TaskRef { slot: MAX_SLOTS - 1, instance: u32::MAX, tag: 0x34 });
    }

    #[test]
    fn counters_need_no_reset_between_generations() {
        let table = SlotTable::new(1, 2, 2);
        for frame in 0..3u64 {
            let generation = table.begin_frame(0, frame, frame, 0, 0);
            assert_eq!(generation, frame as u32);
            // instance 1 waits for two arrivals; instance 0 for none.
            assert!(!table.arrive(0, 1, generation, 2));
            assert!(table.arrive(0, 1, generation, 2));
            assert!(table.claim(0, 1, generation, 2).is_ok());
            assert_eq!(table.claim(0, 1, generation, 2), Err(ClaimError::Twice), "second claim must fail");
            assert!(table.claim(0, 0, generation, 0).is_ok());
            assert!(!table.complete_sink(0, generation));
            assert!(table.complete_sink(0, generation));
        }
    }

    #[test]
    fn a_claim_checks_readiness_in_the_same_step() {
        let table = SlotTable::new(1, 1, 1);
        let generation = table.begin_frame(0, 0, 0, 0, 0);
        assert_eq!(table.claim(0, 0, generation, 2), Err(ClaimError::NotReady));
        assert!(!table.arrive(0, 0, generation, 2));
        assert_eq!(table.claim(0, 0, generation, 2), Err(ClaimError::NotReady), "one arrival of two");
        assert!(table.is_unclaimed(0, 0, generation), "a refused claim leaves no trace");
        assert!(table.arrive(0, 0, generation, 2));
        assert_eq!(table.claim(0, 0, generation, 2), Ok(()));
        assert_eq!(table.claim(0, 0, generation, 2), Err(ClaimError::Twice));
        assert_eq!(table.claim(0, 0, generation.wrapping_add(1), 2), Err(ClaimError::NotReady), "a later generation");
    }

    #[test]
    fn counters_wrap_modulo_2_to_the_32() {
        // A slot at its last generation before the counter words wrap: the targets still hold.
        let table = SlotTable::new(1, 1, 1);
        let generation = u32::MAX;
        let base = u64::from(ready_at(generation.wrapping_sub(1), 3)) << 32 | u64::from(generation);
        table.counters[0].word.store(base, Ordering::Relaxed);
        assert!(!table.arrive(0, 0, generation, 3));
        assert!(!table.arrive(0, 0, generation, 3));
        assert!(table.arrive(0, 0, generation, 3));
        assert_eq!(table.claim(0, 0, generation, 3), Ok(()));
        // The next generation, 0, starts where a fresh slot starts.
        assert_eq!(table.counters[0].word.load(Ordering::Relaxed), 0);
    }
}
