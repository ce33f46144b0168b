//! The frames being received (README.md, "Frames from packets"): which frame ids are open, in
//! which slot, which of their packets arrived, and why a packet is dropped. One `Window` per
//! network source, behind a lock taken once per packet (a few dozen instructions inside; it never
//! allocates, but for the rare frame ids kept for latencies past the expected number in flight).
//!
//! A frame id `f` is looked at while `low <= f < low + capacity`. `low` starts at the first
//! packet's id; it moves down to an older id within `capacity` of the newest seen (reordering at
//! the start) until the window first moved on, and to any older id until a second packet came
//! near the first (a lone first packet far from the rest is a stray); it moves on, when a newer
//! id needs room, over ids whose frames are over or in the engine, and over frames still
//! receiving (given up as incomplete), never over a frame waiting for a slot with its packets
//! (the receiver waits). An id more than `capacity` beyond the newest seen is dropped and moves
//! nothing, unless the next packet confirms it: the window then jumps there. Ids are compared by
//! differences, so that an id near `u64::MAX` overflows nothing.

use std::ops::Range;
use std::sync::atomic::Ordering;

use hdrhistogram::Histogram;
use tomii_types::kernel::Value;

pub(crate) use super::drops::{Cause, Counts};
use crate::engine::{Opened, Refused};

/// What the frames do with their slots: the door, or a stand-in in tests.
pub(crate) trait Slots {
    /// Opens a frame whose inputs come one by one.
    fn open(&self, tag: u64) -> Result<Opened, Refused>;
    /// The value of packet `index` of an open frame.
    fn deliver(&self, frame: Opened, index: u32, value: Value);
    /// No more values for the frame.
    fn abandon(&self, frame: Opened);
    /// No more frames.
    fn end(&self);
}

impl Slots for crate::engine::Door {
    fn open(&self, tag: u64) -> Result<Opened, Refused> {
        crate::engine::Door::open(self, tag)
    }
    fn deliver(&self, frame: Opened, index: u32, value: Value) {
        crate::engine::Door::deliver(self, frame, index, value);
    }
    fn abandon(&self, frame: Opened) {
        crate::engine::Door::abandon(self, frame);
    }
    fn end(&self) {
        crate::engine::Door::end(self);
    }
}

/// What to do with a packet, once the window has looked at it.
pub(crate) enum Verdict {
    /// Deliver `value` as input `index` of `frame` (packet-driven dispatch).
    Deliver { frame: Opened, value: Value },
    /// The window keeps the packet until its frame is complete (collecting dispatch).
    Held,
    /// The frame `tag` is complete: start it with these inputs, in index order (collecting);
    /// then, if it is the `last` frame the run asked for, end the door.
    Submit { tag: u64, inputs: Vec<Value>, last: bool },
    /// Dropped (and counted).
    Dropped,
    /// The run has all the frames it asked for: packets of new frames are not looked at.
    Ignored,
    /// The frame is beyond the window, with `on_slots_busy = wait`: offer `value` again once the
    /// window moved (the frame in the way completed, or passed its deadline).
    Full { value: Value },
}

/// Why the window has no entry for a frame id.
enum Miss {
    /// Dropped, for this cause.
    Drop(Cause),
    /// Not yet: the window is full, and the receiver waits.
    Full,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// No frame: never seen, or done and forgotten.
    Free,
    /// Receiving packets.
    Open,
    /// Receiving packets, holding them: every slot was busy at its first packet (with
    /// `on_slots_busy = wait`); it opens when a slot is free (`open_waiting`).
    Waiting,
    /// Reception over; the frame is in the engine until `frame_done`.
    InFlight,
    /// Dropped at its first packet (every slot busy): its other packets are dropped too.
    Dropped,
    /// Not seen yet, but a later id was (at `deadline_ns` minus the timeout): frame ids are
    /// consecutive, so it is given up on at its deadline, or when the window moves past it.
    Expected,
    /// Reception closed without the frame completing it (timed out or failed), or the frame
    /// completed in the engine; kept until the window moves past it, to tell late packets and
    /// duplicates from new frames.
    Done { complete: bool },
}

struct Entry {
    id: u64,
    state: State,
    frame: Opened,
    /// Packets received.
    got: u32,
    /// Bit per index: received.
    received: Box<[u64]>,
    /// Collecting: the packets so far, by index.
    held: Vec<Option<Value>>,
    first_ns: u64,
    deadline_ns: u64,
}

/// How the window is set up.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    pub frame_packets: u32,
    /// Frame ids looked at, from the oldest one kept.
    pub capacity: u32,
    /// Collect a frame's packets before starting it (otherwise each packet is delivered as it
    /// arrives).
    pub collect: bool,
    /// Wait for a slot when every one is busy (otherwise drop the frame).
    pub wait: bool,
    pub timeout_ns: u64,
    /// Frames to take in all; 0: without end.
    pub frames: u64,
    /// The run's slots: frames in the engine at once.
    pub slots: u32,
}

pub(crate) struct Window {
    shape: Shape,
    low: Option<u64>,
    entries: Box<[Entry]>,
    /// Entries in state `Open` or `Waiting`.
    open: u64,
    /// Entries in state `Waiting`.
    waiting: u64,
    /// Entries in state `Expected`.
    expected: u64,
    /// The newest frame id given an entry.
    newest: Option<u64>,
    /// Whether a packet other than the first came near it: until then, an older id far from the
    /// first packet restarts the window there (the first was a stray).
    settled: bool,
    /// Whether the window moved on over ids (their frames are over): it no longer moves down.
    moved: bool,
    /// The id and index of the packet just dropped as far ahead of the window: the next packet,
    /// if near it (and not the same packet again), confirms a jump.
    candidate: Option<(u64, u32)>,
    /// Frames in the engine that came with every packet: their id and first packet's time, for
    /// their latency at `frame_done` (the window may have moved past them meanwhile).
    flying: Vec<(u64, u64)>,
    /// Frames whose reception is over (complete, incomplete, failed or dropped).
    taken: u64,
    /// From a frame's first packet to its completion, for frames that completed with every
    /// packet.
    pub latency: Histogram<u64>,
}

impl Window {
    pub(crate) fn new(shape: Shape) -> Self {
        let words = shape.frame_packets.div_ceil(64) as usize;
        let entries = (0..shape.capacity.max(1))
            .map(|_| Entry {
                id: 0,
                state: State::Free,
                frame: Opened { slot: 0, serial: 0 },
                got: 0,
                received: vec![0; words].into_boxed_slice(),
                held: if shape.collect || shape.wait {
                    (0..shape.frame_packets).map(|_| None).collect()
                } else {
                    Vec::new()
                },
                first_ns: 0,
                deadline_ns: 0,
            })
            .collect();
        let latency = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds");
        Window {
            shape,
            low: None,
            entries,
            open: 0,
            waiting: 0,
            expected: 0,
            newest: None,
            settled: false,
            moved: false,
            candidate: None,
            flying: Vec::with_capacity(shape.slots as usize + 64),
            taken: 0,
            latency,
        }
    }

    /// Frame ids the window looks at.
    fn capacity(&self) -> u64 {
        u64::from(self.shape.capacity.max(1))
    }

    /// Whether another frame may still open.
    fn takes_frames(&self) -> bool {
        self.shape.frames == 0 || self.taken + self.open + self.expected < self.shape.frames
    }

    /// Whether every frame asked for has been taken and none is open.
    #[cfg(test)]
    pub(crate) fn is_over(&self) -> bool {
        self.shape.frames > 0 && self.taken >= self.shape.frames && self.open == 0
    }

    /// The frames the run asked for (0: without end).
    pub(crate) fn planned(&self) -> u64 {
        self.shape.frames
    }

    /// Frames open now.
    pub(crate) fn open_frames(&self) -> u64 {
        self.open
    }

    /// Whether a frame has a deadline: one open (receiving, or waiting for a slot) or expected.
    pub(crate) fn has_deadlines(&self) -> bool {
        self.open > 0 || self.expected > 0
    }

    /// Frames whose reception is over (complete, incomplete, failed or dropped).
    pub(crate) fn taken(&self) -> u64 {
        self.taken
    }

    /// The newest frame id a packet named, if any.
    pub(crate) fn newest(&self) -> Option<u64> {
        self.newest
    }

    /// The entry of `id` in the window, if it has one (nothing moves).
    fn find(&self, id: u64) -> Option<usize> {
        let offset = id.checked_sub(self.low?)?;
        let at = (id % self.capacity()) as usize;
        (offset < self.capacity() && self.entries[at].id == id).then_some(at)
    }

    /// The entry for `id`, which is in the window: a stale entry of another id is made free.
    fn place(&mut self, id: u64) -> usize {
        let at = (id % self.capacity()) as usize;
        let entry = &mut self.entries[at];
        if entry.id != id {
            entry.id = id;
            entry.state = State::Free;
        }
        at
    }

    /// The entry of `id` for its packet `index`, making room for it (README.md, "Frames from
    /// packets"), and the ids now in the window that were never seen, to be expected once this
    /// packet's frame is in (when the window moved down to `id`, or jumped to it); `Err` when the
    /// id is not in the window and cannot be now.
    fn entry(
        &mut self,
        counts: &Counts,
        slots: &dyn Slots,
        (id, index): (u64, u32),
    ) -> Result<(usize, Option<Range<u64>>), Miss> {
        let capacity = self.capacity();
        let candidate = self.candidate.take();
        let Some(low) = self.low else {
            self.low = Some(id); // the first packet
            return Ok((self.place(id), None));
        };
        let newest = self.newest.unwrap_or(low);
        if id < low {
            if !self.moved && newest - id < capacity {
                // Reordered at the start: the window reaches down to it.
                (self.low, self.settled) = (Some(id), true);
                return Ok((self.place(id), Some(id + 1..low)));
            }
            if !self.settled {
                // The first packet was alone, far from this one: a stray.
                self.restart(counts, slots, id);
                return Ok((self.place(id), None));
            }
            return Err(Miss::Drop(Cause::Late));
        }
        if id > newest && id - newest > capacity {
            // Far ahead: a stray, unless the packet before it was far ahead too, near it.
            let near = |&(first, at): &(u64, u32)| first.abs_diff(id) < capacity && (first, at) != (id, index);
            let Some((first, _)) = candidate.filter(near) else {
                self.candidate = Some((id, index));
                return Err(Miss::Drop(Cause::OutsideWindow));
            };
            let start = first.min(id);
            self.jump(counts, slots, start);
            return Ok((self.place(id), Some(start..id)));
        }
        self.settled = true;
        if id - low >= capacity {
            // Move on to make room for `id`, over ids whose frames are over, in the engine or
            // expected (they will not come now), and over frames still receiving, given up; never
            // over a frame waiting for a slot with its packets (on_slots_busy = wait).
            let target = id - capacity + 1;
            let mut next = low;
            while next < target {
                let at = (next % capacity) as usize;
                if self.entries[at].id == next {
                    match self.entries[at].state {
                        State::Waiting => break,
                        State::Open => {
                            counts.incomplete.fetch_add(1, Ordering::Relaxed);
                            self.give_up(slots, counts, at);
                        }
                        State::Expected => self.missed(counts, slots, at),
                        _ => {}
                    }
                }
                next += 1;
            }
            self.moved |= next > low;
            self.low = Some(next);
            if next < target {
                // The receiver waits for the frame in the way to leave the window: as a slot frees
                // for it, or at its deadline.
                return Err(Miss::Full);
            }
        }
        Ok((self.place(id), None))
    }

    /// The window was not settled, and `id` is far below its first packet: it starts again at
    /// `id`, and the first packet's frame is dropped as a stray.
    fn restart(&mut self, counts: &Counts, slots: &dyn Slots, id: u64) {
        for at in 0..self.entries.len() {
            self.drop_stray(slots, counts, at);
        }
        (self.low, self.newest, self.moved) = (Some(id), None, false);
    }

    /// Two packets in a row far ahead of the window, near each other: the window starts again at
    /// `start`. The frames it held are given up; once it was settled, those still receiving are
    /// incomplete and the ids skipped are frames lost (ids are consecutive), as many as the run
    /// still takes; before, the first packet's frame was a stray.
    fn jump(&mut self, counts: &Counts, slots: &dyn Slots, start: u64) {
        let settled = self.settled;
        for at in 0..self.entries.len() {
            match self.entries[at].state {
                State::Open | State::Waiting if settled => {
                    counts.incomplete.fetch_add(1, Ordering::Relaxed);
                    self.give_up(slots, counts, at);
                }
                State::Open | State::Waiting => self.drop_stray(slots, counts, at),
                State::Expected => self.missed(counts, slots, at),
                _ => {}
            }
        }
        if settled {
            let newest = self.newest.or(self.low).unwrap_or(start);
            let mut skipped = start.saturating_sub(newest).saturating_sub(1);
            if self.shape.frames > 0 {
                skipped = skipped.min(self.shape.frames.saturating_sub(self.taken + self.open + self.expected));
            }
            counts.incomplete.fetch_add(skipped, Ordering::Relaxed);
            let missing = skipped.saturating_mul(u64::from(self.shape.frame_packets));
            counts.missing.fetch_add(missing, Ordering::Relaxed);
            self.close_receptions(slots, skipped, true);
        }
        (self.low, self.newest, self.moved, self.settled) = (Some(start), None, settled, true);
    }

    /// The frame at `at`, if still receiving, was a stray: given up, not counted among the run's
    /// frames; its packets count as `outside_window`.
    fn drop_stray(&mut self, slots: &dyn Slots, counts: &Counts, at: usize) {
        let entry = &mut self.entries[at];
        if !matches!(entry.state, State::Open | State::Waiting) {
            return;
        }
        counts.stray.fetch_add(1, Ordering::Relaxed);
        counts.accepted.fetch_sub(u64::from(entry.got), Ordering::Relaxed);
        counts.drop_packets(Cause::OutsideWindow, u64::from(entry.got));
        self.let_go(slots, at);
    }

    /// A packet of frame `id`, input `index`, decoded into `value`, arrived at `now_ns`.
    pub(crate) fn packet(
        &mut self,
        slots: &dyn Slots,
        counts: &Counts,
        id: u64,
        index: u32,
        value: Value,
        now_ns: u64,
    ) -> Verdict {
        let dropped = |cause| {
            counts.drop_packet(cause);
            Verdict::Dropped
        };
        if index >= self.shape.frame_packets {
            return dropped(Cause::BadIndex);
        }
        let (at, unseen) = match self.entry(counts, slots, (id, index)) {
            Ok(found) => found,
            Err(Miss::Drop(cause)) => return dropped(cause),
            Err(Miss::Full) => return Verdict::Full { value },
        };
        self.expect_up_to(id, now_ns);
        let first = match self.entries[at].state {
            State::Open | State::Waiting => Ok(()),
            State::Free | State::Expected => self.first_packet(slots, counts, at, id, now_ns),
            State::InFlight | State::Done { complete: true } => return dropped(Cause::Duplicate),
            State::Done { complete: false } => return dropped(Cause::Late),
            State::Dropped => return dropped(Cause::SlotsBusy),
        };
        // The older ids the window now reaches, after this packet's frame: when the run takes
        // few frames, the ones that came first are its frames.
        if let Some(unseen) = unseen {
            self.expect(unseen, now_ns);
        }
        match first {
            Ok(()) => self.accept(slots, counts, at, (id, index), value),
            Err(verdict) => verdict,
        }
    }

    /// The first packet of frame `id` (entry `at`) arrived at `now_ns`: the frame opens, waits
    /// for a slot, or, collecting, starts holding its packets. A verdict when the packet goes no
    /// further.
    fn first_packet(
        &mut self,
        slots: &dyn Slots,
        counts: &Counts,
        at: usize,
        id: u64,
        now_ns: u64,
    ) -> Result<(), Verdict> {
        if self.entries[at].state == State::Expected {
            self.expected -= 1;
            self.entries[at].state = State::Free;
        }
        if !self.takes_frames() {
            return Err(Verdict::Ignored);
        }
        let mut state = State::Open;
        if self.waiting > 0 {
            self.open_waiting(slots, counts); // frames open in the order they came
        }
        if self.waiting > 0 {
            state = State::Waiting;
            self.waiting += 1;
        } else if !self.shape.collect {
            match slots.open(id) {
                Ok(frame) => self.entries[at].frame = frame,
                Err(Refused::Ended) => return Err(Verdict::Ignored),
                Err(Refused::Busy) if self.shape.wait => {
                    state = State::Waiting;
                    self.waiting += 1;
                }
                Err(Refused::Busy) => {
                    self.entries[at].state = State::Dropped;
                    counts.dropped_frames.fetch_add(1, Ordering::Relaxed);
                    self.close_reception(slots, true);
                    counts.drop_packet(Cause::SlotsBusy);
                    return Err(Verdict::Dropped);
                }
            }
        }
        let entry = &mut self.entries[at];
        entry.state = state;
        entry.got = 0;
        entry.received.fill(0);
        entry.first_ns = now_ns;
        entry.deadline_ns = now_ns.saturating_add(self.shape.timeout_ns);
        self.open += 1;
        Ok(())
    }

    /// Packet `index` of frame `id` (entry `at`, open, waiting or collecting), decoded into
    /// `value`: counted, then delivered, held, or, as the last one collected, submitted.
    fn accept(
        &mut self,
        slots: &dyn Slots,
        counts: &Counts,
        at: usize,
        (id, index): (u64, u32),
        value: Value,
    ) -> Verdict {
        let entry = &mut self.entries[at];
        let (word, bit) = ((index / 64) as usize, 1u64 << (index % 64));
        if entry.received[word] & bit != 0 {
            counts.drop_packet(Cause::Duplicate);
            return Verdict::Dropped;
        }
        entry.received[word] |= bit;
        entry.got += 1;
        counts.accepted.fetch_add(1, Ordering::Relaxed);
        let complete = entry.got == self.shape.frame_packets;
        if entry.state == State::Waiting {
            entry.held[index as usize] = Some(value);
            return Verdict::Held;
        }
        if !self.shape.collect {
            let frame = entry.frame;
            if complete {
                self.complete(slots, counts, at, true);
            }
            return Verdict::Deliver { frame, value };
        }
        entry.held[index as usize] = Some(value);
        if !complete {
            return Verdict::Held;
        }
        let inputs = entry.held.iter_mut().map(|held| held.take().unwrap_or_else(Value::none)).collect();
        // The door ends only once this frame is in: the receiver ends it after submitting.
        let last = self.complete(slots, counts, at, false);
        Verdict::Submit { tag: id, inputs, last }
    }
    /// `id` is the newest frame seen: the ids between the previous newest and it, not seen yet,
    /// are expected by `now_ns` + the timeout.
    fn expect_up_to(&mut self, id: u64, now_ns: u64) {
        let Some(newest) = self.newest.filter(|&newest| newest < id) else {
            self.newest = self.newest.max(Some(id));
            return;
        };
        self.newest = Some(id);
        let low = self.low.unwrap_or(id);
        self.expect((newest + 1).max(low)..id, now_ns);
    }

    /// The ids of `ids` (in the window) not seen yet are expected by `now_ns` + the timeout, as
    /// many as the run still takes.
    fn expect(&mut self, ids: Range<u64>, now_ns: u64) {
        let capacity = self.capacity();
        for id in ids {
            let takes = self.takes_frames();
            let entry = &mut self.entries[(id % capacity) as usize];
            if takes && (entry.id != id || entry.state == State::Free) {
                (entry.id, entry.state) = (id, State::Expected);
                entry.deadline_ns = now_ns.saturating_add(self.shape.timeout_ns);
                self.expected += 1;
            }
        }
    }

    /// The expected frame at `at` never came: it is taken, every packet missing.
    fn missed(&mut self, counts: &Counts, slots: &dyn Slots, at: usize) {
        self.entries[at].state = State::Done { complete: false };
        self.expected -= 1;
        counts.incomplete.fetch_add(1, Ordering::Relaxed);
        counts.missing.fetch_add(u64::from(self.shape.frame_packets), Ordering::Relaxed);
        self.close_reception(slots, true);
    }

    /// The frame at `at` has every packet; true when it was the last the run asked for.
    fn complete(&mut self, slots: &dyn Slots, counts: &Counts, at: usize, end: bool) -> bool {
        let entry = &mut self.entries[at];
        entry.state = State::InFlight;
        self.flying.push((entry.id, entry.first_ns));
        self.open -= 1;
        counts.complete.fetch_add(1, Ordering::Relaxed);
        self.close_reception(slots, end)
    }

    /// One more frame's reception is over; the last one the run asked for ends the door (with
    /// `end`) and returns true.
    fn close_reception(&mut self, slots: &dyn Slots, end: bool) -> bool {
        self.close_receptions(slots, 1, end)
    }

    /// `count` more frames' receptions are over; when they reach the frames the run asked for,
    /// the door ends (with `end`) and it returns true.
    fn close_receptions(&mut self, slots: &dyn Slots, count: u64, end: bool) -> bool {
        let before = self.taken;
        self.taken += count;
        let last = self.shape.frames > 0 && before < self.shape.frames && self.taken >= self.shape.frames;
        if last && end {
            slots.end();
        }
        last
    }

    /// Whether frames wait for a slot.
    pub(crate) fn has_waiting(&self) -> bool {
        self.waiting > 0
    }

    /// Opens the frames waiting for a slot, oldest first, while slots are free, and delivers the
    /// packets they hold.
    pub(crate) fn open_waiting(&mut self, slots: &dyn Slots, counts: &Counts) {
        let (Some(low), capacity) = (self.low, self.capacity()) else { return };
        for offset in 0..capacity {
            let Some(id) = low.checked_add(offset) else { return };
            if self.waiting == 0 {
                return;
            }
            let at = (id % capacity) as usize;
            if self.entries[at].id != id || self.entries[at].state != State::Waiting {
                continue;
            }
            let frame = match slots.open(id) {
                Ok(frame) => frame,
                Err(Refused::Busy) => return,
                Err(Refused::Ended) => {
                    counts.incomplete.fetch_add(1, Ordering::Relaxed);
                    self.give_up(slots, counts, at);
                    continue;
                }
            };
            self.waiting -= 1;
            let entry = &mut self.entries[at];
            (entry.state, entry.frame) = (State::Open, frame);
            for (index, held) in entry.held.iter_mut().enumerate() {
                if let Some(value) = held.take() {
                    slots.deliver(frame, index as u32, value);
                }
            }
            if entry.got == self.shape.frame_packets {
                self.complete(slots, counts, at, true);
            }
        }
    }

    /// A source kernel failed on a packet of frame `id`, at `now_ns`: the frame is abandoned.
    pub(crate) fn fail(&mut self, slots: &dyn Slots, counts: &Counts, id: u64, now_ns: u64) {
        counts.drop_packet(Cause::SourceError);
        let Ok((at, unseen)) = self.entry(counts, slots, (id, u32::MAX)) else { return };
        match self.entries[at].state {
            State::Open | State::Waiting => {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                self.give_up(slots, counts, at);
            }
            State::Expected => {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                self.expected -= 1;
                self.entries[at].state = State::Done { complete: false };
                self.close_reception(slots, true);
            }
            State::Free if self.takes_frames() => {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                self.entries[at].state = State::Done { complete: false };
                self.close_reception(slots, true);
            }
            _ => {}
        }
        self.expect_up_to(id, now_ns);
        if let Some(unseen) = unseen {
            self.expect(unseen, now_ns);
        }
    }

    /// Gives up on the open frame at `at`: abandoned in its slot, or its held packets released.
    fn give_up(&mut self, slots: &dyn Slots, counts: &Counts, at: usize) {
        let entry = &mut self.entries[at];
        counts.missing.fetch_add(u64::from(self.shape.frame_packets - entry.got), Ordering::Relaxed);
        self.let_go(slots, at);
        self.close_reception(slots, true);
    }

    /// Lets go of the open frame at `at`: its held packets released (or its frame, in the engine
    /// already, abandoned in its slot); it is no longer open, nor waiting for a slot.
    fn let_go(&mut self, slots: &dyn Slots, at: usize) {
        let entry = &mut self.entries[at];
        if entry.state == State::Waiting {
            self.waiting -= 1;
        }
        if self.shape.collect || entry.state == State::Waiting {
            entry.held.iter_mut().for_each(|held| *held = None);
            entry.state = State::Done { complete: false };
        } else {
            slots.abandon(entry.frame);
            entry.state = State::InFlight;
        }
        self.open -= 1;
    }

    /// Abandons every open frame whose deadline passed by `now_ns` (all of them with `u64::MAX`).
    pub(crate) fn expire(&mut self, slots: &dyn Slots, counts: &Counts, now_ns: u64) {
        if self.open == 0 && self.expected == 0 {
            return;
        }
        for at in 0..self.entries.len() {
            let entry = &self.entries[at];
            if entry.deadline_ns > now_ns {
                continue;
            }
            match entry.state {
                State::Open | State::Waiting => {
                    counts.incomplete.fetch_add(1, Ordering::Relaxed);
                    self.give_up(slots, counts, at);
                }
                State::Expected => self.missed(counts, slots, at),
                _ => {}
            }
        }
    }

    /// Collecting: the engine refused the complete frame `tag` (every slot busy, or the run over).
    pub(crate) fn refused(&mut self, counts: &Counts, tag: u64, why: Refused) {
        if let Some(k) = self.flying.iter().position(|&(id, _)| id == tag) {
            self.flying.swap_remove(k);
        }
        if let Some(at) = self.find(tag) {
            self.entries[at].state = State::Done { complete: false };
        }
        if why == Refused::Ended {
            // The run ended between the frame's last packet and its start: it never ran.
            counts.complete.fetch_sub(1, Ordering::Relaxed);
            counts.incomplete.fetch_add(1, Ordering::Relaxed);
        }
        if why == Refused::Busy {
            counts.complete.fetch_sub(1, Ordering::Relaxed);
            counts.dropped_frames.fetch_add(1, Ordering::Relaxed);
            counts.drop_packets(Cause::SlotsBusy, u64::from(self.shape.frame_packets));
            counts.accepted.fetch_sub(u64::from(self.shape.frame_packets), Ordering::Relaxed);
        }
    }

    /// The frame `tag` left the engine at `now_ns`; `whole`: with every packet.
    pub(crate) fn frame_done(&mut self, tag: u64, whole: bool, now_ns: u64) {
        if let Some(k) = self.flying.iter().position(|&(id, _)| id == tag) {
            let (_, first_ns) = self.flying.swap_remove(k);
            if whole {
                self.latency.saturating_record(now_ns.saturating_sub(first_ns).max(1));
            }
        }
        if let Some(at) = self.find(tag)
            && self.entries[at].state == State::InFlight
        {
            self.entries[at].state = State::Done { complete: whole };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Slots as a test sees them: `free` of them; what was opened, abandoned and ended.
    #[derive(Default)]
    struct FakeSlots {
        free: RefCell<Vec<u32>>,
        opened: RefCell<Vec<u64>>,
        abandoned: RefCell<Vec<u32>>,
        delivered: RefCell<Vec<(u32, u32, Value)>>,
        serial: RefCell<u64>,
        ended: RefCell<bool>,
    }

    impl FakeSlots {
        fn with(slots: u32) -> Self {
            let fake = FakeSlots::default();
            *fake.free.borrow_mut() = (0..slots).rev().collect();
            fake
        }
        fn release(&self, slot: u32) {
            self.free.borrow_mut().push(slot);
        }
    }

    impl Slots for FakeSlots {
        fn open(&self, tag: u64) -> Result<Opened, Refused> {
            if *self.ended.borrow() {
                return Err(Refused::Ended);
            }
            let slot = self.free.borrow_mut().pop().ok_or(Refused::Busy)?;
            self.opened.borrow_mut().push(tag);
            *self.serial.borrow_mut() += 1;
            Ok(Opened { slot, serial: *self.serial.borrow() })
        }
        fn deliver(&self, frame: Opened, index: u32, value: Value) {
            self.delivered.borrow_mut().push((frame.slot, index, value));
        }
        fn abandon(&self, frame: Opened) {
            self.abandoned.borrow_mut().push(frame.slot);
        }
        fn end(&self) {
            *self.ended.borrow_mut() = true;
        }
    }

    fn shape(frame_packets: u32, capacity: u32, frames: u64) -> Shape {
        Shape { frame_packets, capacity, collect: false, wait: false, timeout_ns: 1_000, frames, slots: 4 }
    }

    fn offer(window: &mut Window, slots: &FakeSlots, counts: &Counts, id: u64, index: u32) -> Verdict {
        window.packet(slots, counts, id, index, Value::u64(id.wrapping_mul(100).wrapping_add(u64::from(index))), 0)
    }

    #[test]
    fn a_frame_opens_at_its_first_packet_and_is_taken_at_its_last() {
        let (slots, counts) = (FakeSlots::with(2), Counts::default());
        let mut window = Window::new(shape(3, 8, 0));
        for index in [2, 0, 1] {
            assert!(matches!(
                offer(&mut window, &slots, &counts, 7, index),
                Verdict::Deliver { frame: Opened { slot: 0, .. }, .. }
            ));
        }
        assert_eq!(*slots.opened.borrow(), vec![7]);
        assert_eq!(counts.complete.load(Ordering::Relaxed), 1);
        assert_eq!(window.open_frames(), 0);
        // Every later packet of frame 7 is a duplicate, before and after it left the engine.
        assert!(matches!(offer(&mut window, &slots, &counts, 7, 0), Verdict::Dropped));
        window.frame_done(7, true, 50);
        assert!(matches!(offer(&mut window, &slots, &counts, 7, 1), Verdict::Dropped));
        assert_eq!(counts.dropped(Cause::Duplicate), 2);
        assert_eq!(window.latency.len(), 1);
    }

    #[test]
    fn every_drop_has_its_cause() {
        let (slots, counts) = (FakeSlots::with(1), Counts::default());
        let mut window = Window::new(shape(2, 4, 0));
        assert!(matches!(offer(&mut window, &slots, &counts, 10, 0), Verdict::Deliver { .. }));
        assert!(matches!(offer(&mut window, &slots, &counts, 10, 0), Verdict::Dropped)); // duplicate
        assert!(matches!(offer(&mut window, &slots, &counts, 10, 2), Verdict::Dropped)); // bad index
        assert!(matches!(offer(&mut window, &slots, &counts, 1, 0), Verdict::Dropped)); // late
        assert!(matches!(offer(&mut window, &slots, &counts, 11, 0), Verdict::Dropped)); // slots busy
        assert!(matches!(offer(&mut window, &slots, &counts, 11, 1), Verdict::Dropped)); // its frame dropped
        assert!(matches!(offer(&mut window, &slots, &counts, 100, 0), Verdict::Dropped)); // far ahead
        assert_eq!(counts.dropped(Cause::Duplicate), 1);
        assert_eq!(counts.dropped(Cause::BadIndex), 1);
        assert_eq!(counts.dropped(Cause::Late), 1);
        assert_eq!(counts.dropped(Cause::SlotsBusy), 2);
        assert_eq!(counts.dropped(Cause::OutsideWindow), 1);
        assert_eq!(counts.dropped_frames.load(Ordering::Relaxed), 1);
        assert_eq!(counts.accepted.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn the_window_moves_on_over_frames_in_flight_and_keeps_their_latency() {
        let (slots, counts) = (FakeSlots::with(4), Counts::default());
        let mut window = Window::new(shape(1, 2, 0));
        assert!(matches!(offer(&mut window, &slots, &counts, 0, 0), Verdict::Deliver { .. }));
        assert!(matches!(offer(&mut window, &slots, &counts, 1, 0), Verdict::Deliver { .. }));
        // Frames 0 and 1 are in the engine: the window moves past them for frame 2.
        assert!(matches!(offer(&mut window, &slots, &counts, 2, 0), Verdict::Deliver { .. }));
        window.frame_done(0, true, 7);
        assert_eq!(window.latency.len(), 1, "frame 0's latency, though the window moved past it");
        assert!(matches!(offer(&mut window, &slots, &counts, 0, 0), Verdict::Dropped)); // now late
        assert_eq!(counts.dropped(Cause::Late), 1);
        assert_eq!(counts.complete.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn a_frame_still_receiving_is_given_up_when_a_newer_one_needs_its_place_but_one_waiting_is_not() {
        let (slots, counts) = (FakeSlots::with(4), Counts::default());
        let mut window = Window::new(shape(2, 2, 3));
        offer(&mut window, &slots, &counts, 0, 0);
        offer(&mut window, &slots, &counts, 1, 0);
        offer(&mut window, &slots, &counts, 1, 1);
        // Frame 0 misses a packet; frame 2 needs its place: frame 0 is incomplete, the run over.
        assert!(matches!(offer(&mut window, &slots, &counts, 2, 0), Verdict::Deliver { .. }));
        assert_eq!(*slots.abandoned.borrow(), vec![0]);
        assert_eq!((counts.incomplete.load(Ordering::Relaxed), counts.missing.load(Ordering::Relaxed)), (1, 1));
        assert!(matches!(offer(&mut window, &slots, &counts, 0, 1), Verdict::Dropped)); // late
        assert_eq!(counts.dropped(Cause::OutsideWindow), 0);

        // Waiting for a slot, frame 0 holds its place: the receiver waits, until it has a slot.
        let (slots, counts) = (FakeSlots::with(0), Counts::default());
        let mut window = Window::new(Shape { wait: true, ..shape(2, 2, 0) });
        assert!(matches!(offer(&mut window, &slots, &counts, 0, 0), Verdict::Held));
        assert!(matches!(offer(&mut window, &slots, &counts, 2, 0), Verdict::Full { .. }));
        slots.release(0);
        window.open_waiting(&slots, &counts);
        assert!(matches!(offer(&mut window, &slots, &counts, 2, 0), Verdict::Held)); // frame 2 waits now
        assert_eq!(*slots.abandoned.borrow(), vec![0]);
        assert_eq!(counts.incomplete.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_lone_first_packet_far_from_the_rest_is_a_stray() {
        let (slots, counts) = (FakeSlots::with(4), Counts::default());
        let mut window = Window::new(shape(2, 4, 3));
        assert!(matches!(offer(&mut window, &slots, &counts, 1_000_000_000, 0), Verdict::Deliver { .. }));
        assert!(matches!(offer(&mut window, &slots, &counts, u64::MAX, 0), Verdict::Dropped)); // far ahead
        // 10^9 was alone: frame 0, far below it, starts the window again.
        for id in 0..3 {
            for index in 0..2 {
                assert!(matches!(offer(&mut window, &slots, &counts, id, index), Verdict::Deliver { .. }));
            }
        }
        assert_eq!(counts.stray.load(Ordering::Relaxed), 1);
        assert_eq!(counts.dropped(Cause::OutsideWindow), 2);
        assert_eq!(counts.accepted.load(Ordering::Relaxed), 6);
        assert_eq!(counts.complete.load(Ordering::Relaxed), 3);
        assert_eq!(*slots.abandoned.borrow(), vec![0]);
        assert!(window.is_over() && *slots.ended.borrow(), "the strays are not among the 3 frames");
        // Settled, the window no longer moves down: a stray below is late.
        assert!(matches!(offer(&mut window, &slots, &counts, u64::MAX - 1_000, 0), Verdict::Dropped));
    }

    #[test]
    fn frames_reordered_at_the_start_are_all_taken() {
        let (slots, counts) = (FakeSlots::with(8), Counts::default());
        let mut window = Window::new(shape(1, 8, 0));
        for id in [5, 3, 0, 1, 4, 2] {
            assert!(matches!(offer(&mut window, &slots, &counts, id, 0), Verdict::Deliver { .. }), "frame {id}");
        }
        assert_eq!(counts.complete.load(Ordering::Relaxed), 6);
        assert!(!window.has_deadlines(), "no id left expected");
        // Once the window moved on (frame 12 needs 8 places from 5), it no longer reaches down.
        offer(&mut window, &slots, &counts, 12, 0);
        assert!(matches!(offer(&mut window, &slots, &counts, 4, 0), Verdict::Dropped));
        assert_eq!(counts.dropped(Cause::Late), 1);
    }

    #[test]
    fn the_ids_below_the_first_reached_are_expected() {
        let (slots, counts) = (FakeSlots::with(8), Counts::default());
        let mut window = Window::new(shape(1, 8, 4));
        offer(&mut window, &slots, &counts, 3, 0);
        offer(&mut window, &slots, &counts, 0, 0);
        // Frames 1 and 2 are expected: never coming, they are taken as incomplete.
        window.expire(&slots, &counts, 1_000);
        assert_eq!((counts.complete.load(Ordering::Relaxed), counts.incomplete.load(Ordering::Relaxed)), (2, 2));
        assert!(window.is_over());
    }

    #[test]
    fn two_packets_in_a_row_far_ahead_make_the_window_jump_and_count_the_ids_skipped() {
        let (slots, counts) = (FakeSlots::with(8), Counts::default());
        let mut window = Window::new(shape(2, 4, 0));
        for index in 0..2 {
            offer(&mut window, &slots, &counts, 0, index);
        }
        offer(&mut window, &slots, &counts, 1, 0); // frame 1 misses a packet
        // A stray between two packets of the window moves nothing.
        assert!(matches!(offer(&mut window, &slots, &counts, 500, 0), Verdict::Dropped));
        assert!(matches!(offer(&mut window, &slots, &counts, 2, 0), Verdict::Deliver { .. }));
        // The same datagram twice is no confirmation; two packets near each other are.
        assert!(matches!(offer(&mut window, &slots, &counts, 101, 1), Verdict::Dropped));
        assert!(matches!(offer(&mut window, &slots, &counts, 101, 1), Verdict::Dropped));
        assert!(matches!(offer(&mut window, &slots, &counts, 100, 0), Verdict::Deliver { .. }));
        assert_eq!(counts.dropped(Cause::OutsideWindow), 3);
        // Frames 1 and 2 were given up, frames 3..100 skipped; frame 101 is expected.
        assert_eq!(counts.incomplete.load(Ordering::Relaxed), 2 + 97);
        assert_eq!(counts.missing.load(Ordering::Relaxed), 1 + 1 + 97 * 2);
        assert!(matches!(offer(&mut window, &slots, &counts, 101, 0), Verdict::Deliver { .. }));
        assert!(matches!(offer(&mut window, &slots, &counts, 2, 1), Verdict::Dropped)); // late
        assert_eq!(counts.dropped(Cause::Late), 1);

        // A run of 10 frames counts the ids skipped up to its 10th frame.
        let (slots, counts) = (FakeSlots::with(8), Counts::default());
        let mut window = Window::new(shape(1, 4, 10));
        offer(&mut window, &slots, &counts, 0, 0);
        offer(&mut window, &slots, &counts, 1, 0);
        offer(&mut window, &slots, &counts, 1_000, 0);
        assert!(matches!(offer(&mut window, &slots, &counts, 1_001, 0), Verdict::Ignored));
        assert_eq!(counts.incomplete.load(Ordering::Relaxed), 8);
        assert!(window.is_over() && *slots.ended.borrow());
    }

    #[test]
    fn frame_ids_at_the_end_of_the_range_overflow_nothing() {
        let (slots, counts) = (FakeSlots::with(8), Counts::default());
        let mut window = Window::new(Shape { wait: true, ..shape(1, 4, 0) });
        for id in u64::MAX - 5..=u64::MAX {
            assert!(matches!(offer(&mut window, &slots, &counts, id, 0), Verdict::Deliver { .. }), "frame {id}");
        }
        window.frame_done(u64::MAX, true, 9);
        assert_eq!(window.latency.len(), 1);
        window.open_waiting(&slots, &counts);
        window.expire(&slots, &counts, u64::MAX);
        assert!(matches!(offer(&mut window, &slots, &counts, u64::MAX, 0), Verdict::Dropped)); // duplicate
        assert_eq!(counts.complete.load(Ordering::Relaxed), 6);
    }

    #[test]
    fn a_stray_id_far_ahead_moves_nothing() {
        let (slots, counts) = (FakeSlots::with(4), Counts::default());
        let mut window = Window::new(shape(1, 4, 0));
        offer(&mut window, &slots, &counts, 0, 0);
        for stray in [1 << 40, u64::MAX, u64::MAX] {
            assert!(matches!(offer(&mut window, &slots, &counts, stray, 0), Verdict::Dropped));
        }
        assert_eq!(counts.dropped(Cause::OutsideWindow), 3);
        assert!(matches!(offer(&mut window, &slots, &counts, 1, 0), Verdict::Deliver { .. }));
        assert_eq!(counts.dropped(Cause::Late), 0);
        window.expire(&slots, &counts, u64::MAX - 1);
        assert_eq!(counts.incomplete.load(Ordering::Relaxed), 0, "no frame was expected by the strays");
    }

    #[test]
    fn an_id_skipped_and_never_seen_is_a_frame_missing_every_packet() {
        let (slots, counts) = (FakeSlots::with(4), Counts::default());
        let mut window = Window::new(shape(1, 8, 3));
        assert!(matches!(offer(&mut window, &slots, &counts, 0, 0), Verdict::Deliver { .. }));
        assert!(matches!(offer(&mut window, &slots, &counts, 2, 0), Verdict::Deliver { .. }));
        assert!(!*slots.ended.borrow(), "frame 1 may still come");
        window.expire(&slots, &counts, 1_000);
        assert_eq!(counts.incomplete.load(Ordering::Relaxed), 1);
        assert_eq!(counts.missing.load(Ordering::Relaxed), 1);
        assert!(*slots.ended.borrow(), "frames 0, 1 and 2 are taken");
        assert!(matches!(offer(&mut window, &slots, &counts, 1, 0), Verdict::Dropped)); // late
    }

    #[test]
    fn an_expected_frame_that_comes_in_time_runs() {
        let (slots, counts) = (FakeSlots::with(4), Counts::default());
        let mut window = Window::new(shape(1, 8, 0));
        offer(&mut window, &slots, &counts, 0, 0);
        offer(&mut window, &slots, &counts, 2, 0);
        assert!(matches!(offer(&mut window, &slots, &counts, 1, 0), Verdict::Deliver { .. }));
        window.expire(&slots, &counts, 1_000);
        assert_eq!(counts.incomplete.load(Ordering::Relaxed), 0);
        assert_eq!(counts.complete.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn a_frame_missing_packets_is_abandoned_at_its_deadline() {
        let (slots, counts) = (FakeSlots::with(1), Counts::default());
        let mut window = Window::new(shape(2, 4, 1));
        assert!(matches!(
            offer(&mut window, &slots, &counts, 5, 0),
            Verdict::Deliver { frame: Opened { slot: 0, .. }, .. }
        ));
        window.expire(&slots, &counts, 999);
        assert!(slots.abandoned.borrow().is_empty());
        window.expire(&slots, &counts, 1_000);
        assert_eq!(*slots.abandoned.borrow(), vec![0]);
        assert_eq!(counts.incomplete.load(Ordering::Relaxed), 1);
        // The run asked for one frame: it is over, and the door ended.
        assert!(window.is_over());
        assert!(*slots.ended.borrow());
        assert!(matches!(offer(&mut window, &slots, &counts, 5, 1), Verdict::Dropped)); // late
    }

    #[test]
    fn no_frame_opens_beyond_the_frames_asked_for() {
        let (slots, counts) = (FakeSlots::with(4), Counts::default());
        let mut window = Window::new(shape(2, 8, 2));
        assert!(matches!(offer(&mut window, &slots, &counts, 0, 0), Verdict::Deliver { .. }));
        assert!(matches!(offer(&mut window, &slots, &counts, 1, 0), Verdict::Deliver { .. }));
        assert!(matches!(offer(&mut window, &slots, &counts, 2, 0), Verdict::Ignored));
        assert!(matches!(offer(&mut window, &slots, &counts, 0, 1), Verdict::Deliver { .. }));
        assert!(!*slots.ended.borrow());
        assert!(matches!(offer(&mut window, &slots, &counts, 1, 1), Verdict::Deliver { .. }));
        assert!(*slots.ended.borrow());
        assert!(window.is_over());
    }

    #[test]
    fn collecting_holds_the_packets_and_submits_the_frame_in_index_order() {
        let (slots, counts) = (FakeSlots::with(1), Counts::default());
        let mut window = Window::new(Shape { collect: true, ..shape(3, 4, 0) });
        assert!(matches!(offer(&mut window, &slots, &counts, 3, 2), Verdict::Held));
        assert!(matches!(offer(&mut window, &slots, &counts, 3, 0), Verdict::Held));
        let Verdict::Submit { tag, inputs, last: false } = offer(&mut window, &slots, &counts, 3, 1) else {
            panic!("not submitted")
        };
        assert_eq!(tag, 3);
        assert_eq!(inputs, vec![Value::u64(300), Value::u64(301), Value::u64(302)]);
        assert!(slots.opened.borrow().is_empty());
    }

    #[test]
    fn with_busy_slots_a_frame_waits_holding_its_packets_and_opens_when_one_is_free() {
        let (slots, counts) = (FakeSlots::with(0), Counts::default());
        let mut window = Window::new(Shape { wait: true, ..shape(2, 4, 0) });
        assert!(matches!(offer(&mut window, &slots, &counts, 0, 1), Verdict::Held));
        assert!(matches!(offer(&mut window, &slots, &counts, 1, 0), Verdict::Held));
        assert!(window.has_waiting());
        window.open_waiting(&slots, &counts); // still no slot
        assert!(slots.opened.borrow().is_empty());
        slots.release(0);
        window.open_waiting(&slots, &counts);
        // The oldest frame opened with its packet; frame 1 waits for the next slot.
        assert_eq!(*slots.opened.borrow(), vec![0]);
        assert_eq!(*slots.delivered.borrow(), vec![(0, 1, Value::u64(1))]);
        assert!(matches!(
            offer(&mut window, &slots, &counts, 0, 0),
            Verdict::Deliver { frame: Opened { slot: 0, .. }, .. }
        ));
        assert_eq!(counts.complete.load(Ordering::Relaxed), 1);
        assert!(window.has_waiting());
        // A waiting frame past its deadline is given up, its packets released.
        window.expire(&slots, &counts, 10_000);
        assert!(!window.has_waiting());
        assert_eq!(counts.incomplete.load(Ordering::Relaxed), 1);
    }
}
