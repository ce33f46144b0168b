//! A frame's life in its slot (README.md, "Frames and their source"): the first frames the
//! source gives, a frame's start with its inputs, inputs delivered one by one and abandoned frames
//! through the door, and a frame's end, which hands its outputs to the source and gives the slot
//! its next frame. Runs once per frame or door request, never per task; it must never start a
//! frame the source did not ask for.
//!
//! # Memory ordering
//! `opened` loads the slot's `generation` Acquire, pairing with the Release increment of
//! `SlotTable::begin_frame`: the serial and frame number read with it are the frame's.
//! `abandon_frame` stores the slot's `abandoned` flag Release before any of its inputs gets NONE,
//! so the tasks those arrivals make ready see it (`shared.rs`). `finish_frame` counts the frame in
//! `frames_done` AcqRel; the Acquire loads of the stall check, an ejection and the report pair
//! with it.

use std::sync::atomic::Ordering;
use std::time::Instant;

use tomii_types::abi::TOMII_NO_WORKER;
use tomii_types::kernel::Value;

use super::Engine;
use super::local::{Local, Pusher};
use super::records::{KEEPS_RESULT, SINK};
use super::task::{Claimed, Continuation};
use crate::engine::clock::Ticks;
use crate::engine::door::{Opened, Request, Serving};
use crate::engine::latencies::Latencies;
use crate::engine::source::{FrameDone, NextFrame};
use crate::engine::trace::SystemKind;
use crate::engine::{FrameOutputs, Output, RunError};

/// The longest frame latency recorded (an hour, in ns); longer ones count as it.
const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

impl Engine<'_> {
    /// Asks the source for a frame for every slot, then gives it the door (so that the slots it
    /// does not take are free before its threads use the door), from the host thread.
    pub(super) fn start_first_frames(&self, latency: &mut Latencies) -> Result<(), RunError> {
        let mut pusher = self.host_pusher();
        for slot in 0..self.plan.config.slots {
            match self.next_frame() {
                NextFrame::Start { tag, inputs } => {
                    self.shared.door.count_start();
                    self.start_frame(&mut pusher, slot, (tag, 0), Some(inputs), latency)?;
                }
                NextFrame::NotYet => self.shared.door.release_slot(slot),
                NextFrame::Done => break,
            }
        }
        self.source.attach(&self.shared.door)?;
        if self.shared.door.is_finished() {
            self.stop_run(); // a source without frames
        }
        Ok(())
    }

    /// What a free slot does next: what the source says, or nothing once the door has ended.
    pub(super) fn next_frame(&self) -> NextFrame {
        if self.shared.door.is_ended() {
            return NextFrame::Done;
        }
        let next = self.source.next_frame();
        if matches!(next, NextFrame::Done) {
            self.shared.door.end();
        }
        next
    }

    /// Starts the frame the source tagged `tag` in `slot`, which the caller holds: a new
    /// generation, its root tasks, then its inputs, unless they come later, one by one (README.md,
    /// "Frames and their source").
    pub(super) fn start_frame(
        &self,
        pusher: &mut Pusher,
        slot: u32,
        (tag, serial): (u64, u64),
        inputs: Option<Vec<Value>>,
        latency: &mut Latencies,
    ) -> Result<(), RunError> {
        if let Some(held) = self.shared.held.get(slot as usize) {
            let done = held.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(done) = done {
                self.hand_over(slot, done);
            }
        }
        let now = self.shared.clock.now();
        let frame = self.shared.frames_started.fetch_add(1, Ordering::Relaxed);
        if frame == self.plan.config.warmup_frames && frame > 0 {
            let _ = self.shared.measured_from.set(Instant::now());
        }
        let generation = self.shared.table.begin_frame(slot, frame, tag, serial, now);
        self.scheduler.frame_started_by(pusher.scheduler, frame, slot);
        for &root in &self.plan.graph.roots {
            self.stage(pusher, self.inst(root), slot, generation, frame, now, TOMII_NO_WORKER)?;
        }
        let mut completed = false;
        for (&instance, value) in self.plan.graph.inputs.iter().zip(inputs.into_iter().flatten()) {
            let claimed = Claimed { slot, inst: self.inst(instance), generation, frame };
            completed |= self.give_input(pusher, claimed, value, now)?;
        }
        self.flush(pusher)?;
        if let Some(log) = &self.shared.system_log {
            log.log(SystemKind::Dispatch, (frame, slot, 0), pusher.worker, (now, self.shared.clock.now()));
        }
        if completed {
            self.finish_frame(pusher, slot, frame, latency)?;
        }
        Ok(())
    }

    /// Gives input instance `claimed.instance` of the frame its value: stored like a task's
    /// result, its arrival counted on its successors (pushing those it made ready). True when
    /// that completed the frame (the input is a sink). An input that already has its value (its
    /// frame was abandoned first) keeps it, and `value` is dropped.
    pub(super) fn give_input(
        &self,
        pusher: &mut Pusher,
        claimed: Claimed,
        value: Value,
        now: Ticks,
    ) -> Result<bool, RunError> {
        let Claimed { slot, inst, generation, .. } = claimed;
        let (instance, record) = (inst.get(), self.plan.records.get(inst));
        // The input's own claim: it is never run, and an ejection's scan must not queue it.
        if self.shared.table.claim(slot, instance, generation, record.deps).is_err() {
            return Ok(false);
        }
        let raw = value.into_raw();
        if record.flags & KEEPS_RESULT != 0 {
            // SAFETY: the claim gives this call the input's cell in this generation.
            unsafe { self.shared.table.store_result(slot, instance, raw) };
        } else {
            // SAFETY: an owned value nobody reads.
            drop(unsafe { Value::from_raw(raw) });
        }
        self.release_successors(pusher, claimed, now, Continuation::None)?;
        Ok(record.flags & SINK != 0 && self.shared.table.complete_sink(slot, generation))
    }

    /// Serves the door's requests in order, unless another worker is serving them (README.md,
    /// "Frames and their source").
    #[cold]
    pub(super) fn serve_door(&self, local: &mut Local) -> Result<(), RunError> {
        // A request queued while this worker let go of the right is served at once, not left to
        // a worker that tried meanwhile and went to sleep.
        loop {
            let Some(serving) = self.shared.door.serve() else { return Ok(()) };
            self.serve_requests(local, &serving)?;
            drop(serving);
            if !self.shared.door.has_queued() {
                return Ok(());
            }
        }
    }

    /// Serves the door's requests while there are any.
    pub(super) fn serve_requests(&self, local: &mut Local, serving: &Serving<'_>) -> Result<(), RunError> {
        while let Some(request) = self.shared.door.take_request(serving) {
            let (pusher, latency) = (&mut local.pusher, &mut local.latency);
            match request {
                Request::Start { slot, serial, tag, inputs } => {
                    // This worker pops next: it takes one of the frame's first tasks itself.
                    pusher.self_take = true;
                    self.start_frame(pusher, slot, (tag, serial), inputs, latency)?;
                }
                Request::Deliver { frame, input, value } => {
                    let instance = self.plan.graph.inputs[input as usize];
                    // A value for a frame no longer in its slot (abandoned, then completed) is
                    // dropped: it must not reach the slot's next frame.
                    let Some(claimed) = self.opened(frame, instance) else { continue };
                    let now = self.shared.clock.now();
                    if self.give_input(pusher, claimed, value, now)? {
                        self.finish_frame(pusher, frame.slot, claimed.frame, latency)?;
                    }
                    self.flush(pusher)?;
                    if let Some(log) = &self.shared.system_log {
                        let at = (claimed.frame, frame.slot, self.plan.graph.inst_index[instance as usize]);
                        log.log(SystemKind::Delivery, at, pusher.worker, (now, self.shared.clock.now()));
                    }
                }
                Request::Abandon { frame } => self.abandon_frame(pusher, frame, latency)?,
                Request::SetOption { key, value, reply } => {
                    let outcome = if self.shared.containment.is_ejected() {
                        Err("the scheduler was ejected; the run goes on on the host's FIFO".into())
                    } else {
                        self.scheduler.set_knob(&key, &value)
                    };
                    let _ = reply.send(outcome);
                }
            }
        }
        Ok(())
    }

    /// `instance` in the frame the door opened as `frame`, if that frame is still in its slot.
    pub(super) fn opened(&self, frame: Opened, instance: u32) -> Option<Claimed> {
        let state = self.shared.table.slot(frame.slot);
        let generation = state.generation.load(Ordering::Acquire);
        (state.busy.load(Ordering::Relaxed) && state.serial.load(Ordering::Relaxed) == frame.serial).then(|| Claimed {
            slot: frame.slot,
            inst: self.inst(instance),
            generation,
            frame: state.frame.load(Ordering::Relaxed),
        })
    }

    /// The source gave up on `frame`: its tasks not yet run are skipped from now on, and its inputs
    /// without a value get NONE, so that the frame completes (as abandoned).
    pub(super) fn abandon_frame(
        &self,
        pusher: &mut Pusher,
        frame: Opened,
        latency: &mut Latencies,
    ) -> Result<(), RunError> {
        if self.opened(frame, 0).is_none() {
            return Ok(());
        }
        // Before any NONE is given: a task they make ready sees the flag.
        self.shared.table.slot(frame.slot).abandoned.store(true, Ordering::Release);
        let now = self.shared.clock.now();
        let mut completed = None;
        for &instance in &self.plan.graph.inputs {
            let Some(claimed) = self.opened(frame, instance) else { break };
            if self.give_input(pusher, claimed, Value::none(), now)? {
                completed = Some(claimed.frame);
            }
        }
        self.flush(pusher)?;
        if let Some(number) = completed {
            self.finish_frame(pusher, frame.slot, number, latency)?;
        }
        Ok(())
    }

    /// The last task of `frame` completed: record it, hand its outputs to the source, and give the
    /// slot its next frame, or free it (README.md, "Frames and their source").
    pub(super) fn finish_frame(
        &self,
        pusher: &mut Pusher,
        slot: u32,
        frame: u64,
        latency: &mut Latencies,
    ) -> Result<(), RunError> {
        let state = self.shared.table.slot(slot);
        let latency_ns = self.shared.clock.ns_between(state.started.load(Ordering::Relaxed), self.shared.clock.now());
        let abandoned = state.abandoned.load(Ordering::Relaxed);
        if abandoned {
            self.shared.frames_abandoned.fetch_add(1, Ordering::Relaxed);
        } else if frame < self.plan.config.warmup_frames {
            self.shared.frames_excluded.fetch_add(1, Ordering::Relaxed);
        } else {
            latency.record(latency_ns.min(MAX_LATENCY_NS));
        }
        self.scheduler.frame_completed_by(pusher.scheduler, frame, slot, latency_ns);
        let tag = state.tag.load(Ordering::Relaxed);
        let next = self.next_frame();
        if matches!(next, NextFrame::Start { .. }) {
            self.shared.door.count_start();
        }
        let last = self.shared.door.count_done();
        if !abandoned {
            self.shared.frames_done.fetch_add(1, Ordering::AcqRel);
        }
        state.busy.store(false, Ordering::Relaxed);
        let outputs = self.plan.wants_outputs.then_some(Vec::new());
        let done = FrameDone { tag, frame, latency_ns, outputs, completed: true, abandoned };
        match self.shared.held.get(slot as usize) {
            // The post-nodes may read this frame's results: they stay in the slot until it is
            // reused, or until the post-nodes ran.
            Some(held) => *held.lock().unwrap_or_else(|p| p.into_inner()) = Some(done),
            None => self.hand_over(slot, done),
        }
        match next {
            NextFrame::Start { tag, inputs } => self.start_frame(pusher, slot, (tag, 0), Some(inputs), latency)?,
            NextFrame::NotYet => self.shared.door.release_slot(slot),
            NextFrame::Done => {}
        }
        if last {
            self.stop_run();
        }
        Ok(())
    }

    /// Hands a frame that left `slot` to the source, with its sink results moved out of the slot
    /// when the source wants them.
    pub(super) fn hand_over(&self, slot: u32, mut done: FrameDone) {
        if let Some(outputs) = &mut done.outputs {
            *outputs = self.take_outputs(slot);
        }
        self.source.frame_done(done);
    }

    /// Moves the sink results of the frame in `slot` out of it.
    pub(super) fn take_outputs(&self, slot: u32) -> FrameOutputs {
        self.plan
            .sinks
            .iter()
            .flat_map(|&sink| self.plan.graph.group_of(sink))
            .map(|instance| {
                // SAFETY: the frame completed, so every result of the slot is written; no task of
                // the slot runs until the next frame starts in it, which happens after this, and
                // sinks have no successor that could read the moved value.
                let value = unsafe { self.shared.table.take_result(slot, instance) };
                (
                    self.plan.graph.inst_node[instance as usize],
                    self.plan.graph.inst_index[instance as usize],
                    Output::from_value(value),
                )
            })
            .collect()
    }
}
