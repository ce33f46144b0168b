//! The dependency-counting executor on Rayon, written as a Rayon user would: every task has a
//! counter of predecessors still running; the task that brings a successor's counter to zero
//! spawns it with `Scope::spawn`, except the last such successor, which it runs itself next (what
//! oneTBB's flow graph does by task bypass). Frames in flight: one counter set per slot; the task
//! completing a frame's last sink re-arms its slot and starts the next frame there, so at most
//! `slots` frames run at once, as in Tomii. It must never busy-wait for anything but a kernel.
//! What a task does is its `Body`: spin (the DAG file) or call a C kernel (the kernel DAG file); a
//! body that fails stops its frame there (no successor runs), so the run ends short of its frames.
//!
//! # Memory ordering
//!
//! A counter decrement is `AcqRel`: the decrement that reaches zero acquires every other
//! predecessor's release, so the successor runs after all of them. The sink counter works the same
//! way for a frame, so the task that completes it sees every task of the frame done and may re-arm
//! the slot's counters and its frame number with `Relaxed` stores: `Scope::spawn` publishes them to
//! whichever thread runs the next frame's roots. `next_frame` and `completed` are plain counters
//! (`Relaxed`). The same edges order a body's writes before its successors' reads.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use rayon::Scope;

use crate::dag::Dag;

/// What running a task means.
pub trait Body: Sync {
    /// Runs `task` of frame `frame` in slot `slot`; false (it failed, and kept why) stops that frame.
    fn run(&self, slot: usize, frame: u64, task: u32) -> bool;
}

/// The counters of one frame in flight.
struct Slot {
    waiting: Vec<AtomicU32>,
    sinks_left: AtomicU32,
    frame: AtomicU64,
}

/// `frames` frames of one DAG, at most `slots` at once.
pub struct Run<'d, B: Body> {
    dag: &'d Dag,
    body: &'d B,
    slots: Vec<Slot>,
    frames: usize,
    next_frame: AtomicUsize,
    completed: AtomicUsize,
}

impl<'d, B: Body> Run<'d, B> {
    /// Builds and arms the counters (outside the timed part); slot s starts with frame s.
    pub fn new(dag: &'d Dag, body: &'d B, slots: usize, frames: usize) -> Run<'d, B> {
        let in_flight = slots.min(frames);
        let slots = (0..in_flight)
            .map(|s| Slot {
                waiting: dag.pred_counts().iter().map(|&n| AtomicU32::new(n)).collect(),
                sinks_left: AtomicU32::new(dag.sinks()),
                frame: AtomicU64::new(s as u64),
            })
            .collect();
        Run { dag, body, slots, frames, next_frame: AtomicUsize::new(in_flight), completed: AtomicUsize::new(0) }
    }

    /// Runs every frame; returns the frames completed. Call it inside the pool (`install`).
    pub fn execute(&self) -> usize {
        rayon::scope(|s| (0..self.slots.len()).for_each(|slot| self.start_frame(s, slot)));
        self.completed.load(Ordering::Relaxed)
    }

    fn start_frame<'s>(&'s self, s: &Scope<'s>, slot: usize) {
        for &root in self.dag.roots() {
            s.spawn(move |s| self.run_from(s, slot, root));
        }
    }

    /// Runs `task`, then keeps running one successor it made ready, spawning the others.
    fn run_from<'s>(&'s self, s: &Scope<'s>, slot: usize, mut task: u32) {
        let counters = &self.slots[slot];
        let frame = counters.frame.load(Ordering::Relaxed);
        loop {
            if !self.body.run(slot, frame, task) {
                return;
            }
            let successors = self.dag.successors(task);
            let mut next = None;
            for &succ in successors {
                if counters.waiting[succ as usize].fetch_sub(1, Ordering::AcqRel) == 1
                    && let Some(ready) = next.replace(succ)
                {
                    s.spawn(move |s| self.run_from(s, slot, ready));
                }
            }
            if successors.is_empty() && counters.sinks_left.fetch_sub(1, Ordering::AcqRel) == 1 {
                self.finish_frame(s, slot);
            }
            match next {
                Some(ready) => task = ready,
                None => return,
            }
        }
    }

    fn finish_frame<'s>(&'s self, s: &Scope<'s>, slot: usize) {
        self.completed.fetch_add(1, Ordering::Relaxed);
        let frame = self.next_frame.fetch_add(1, Ordering::Relaxed);
        if frame < self.frames {
            let counters = &self.slots[slot];
            counters.frame.store(frame as u64, Ordering::Relaxed);
            for (counter, &n) in counters.waiting.iter().zip(self.dag.pred_counts()) {
                counter.store(n, Ordering::Relaxed);
            }
            counters.sinks_left.store(self.dag.sinks(), Ordering::Relaxed);
            self.start_frame(s, slot);
        }
    }
}
