//! The simulator's slot table: the host core's counters (`host/counters.rs`) over plain cells,
//! and each slot's frame, as the engine's `SlotTable` holds them over atomics. Single-threaded:
//! nothing here orders anything. It holds no result (no kernel runs) and must never decide
//! readiness, claims or completion itself: those are the host core's.

use std::cell::Cell;

use crate::host::{ClaimError, Counters, FIRST_GENERATION, SlotView, TaskRef, Word, frame_complete};

/// A slot: the frame in it.
pub(super) struct Slot {
    /// How many frames this slot has started, minus one (`FIRST_GENERATION` before the first).
    pub(super) generation: u32,
    pub(super) frame: u64,
    pub(super) start_ns: u64,
    /// Whether a frame occupies the slot (started and not yet complete).
    pub(super) busy: bool,
    /// Sink tasks completed in this slot, over all its generations.
    done: Cell<u64>,
}

pub(super) struct Table {
    instances: usize,
    /// Sinks per frame: a frame is complete when all of them are.
    sinks: u64,
    pub(super) slots: Vec<Slot>,
    pub(super) counters: Counters<Cell<u64>>,
}

impl Table {
    /// Bytes one (slot, instance) pair's counters take.
    pub(super) const CELL_BYTES: usize = Counters::<Cell<u64>>::CELL_BYTES;

    pub(super) fn new(slots: u32, instances: usize, sinks: usize) -> Self {
        Table {
            instances,
            sinks: sinks as u64,
            slots: (0..slots)
                .map(|_| Slot { generation: FIRST_GENERATION, frame: 0, start_ns: 0, busy: false, done: Cell::make(0) })
                .collect(),
            counters: Counters::new(slots, instances),
        }
    }

    /// Starts the slot's next generation with `frame`, at `now`; returns the generation.
    pub(super) fn begin_frame(&mut self, slot: u32, frame: u64, now: u64) -> u32 {
        let state = &mut self.slots[slot as usize];
        state.generation = state.generation.wrapping_add(1);
        (state.frame, state.start_ns, state.busy) = (frame, now, true);
        state.generation
    }

    /// Records a completed sink task; true when it completed the slot's frame.
    pub(super) fn complete_sink(&self, slot: u32, generation: u32) -> bool {
        frame_complete(&self.slots[slot as usize].done, generation, self.sinks)
    }
}

impl SlotView for Table {
    type Slot = Slot;

    #[inline]
    fn slot(&self, task: TaskRef) -> Option<&Slot> {
        if (task.instance as usize) < self.instances { self.slots.get(task.slot as usize) } else { None }
    }

    #[inline]
    fn generation(slot: &Slot) -> u32 {
        slot.generation
    }

    #[inline]
    fn frame(slot: &Slot) -> u64 {
        slot.frame
    }

    #[inline]
    fn claim(&self, slot: u32, instance: u32, generation: u32, deps: u32) -> Result<(), ClaimError> {
        self.counters.claim(slot, instance, generation, deps)
    }
}
