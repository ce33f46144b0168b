//! The run's outcome, made on the host thread once every worker released the run: the workers'
//! counters, latencies and trace merged, the post-nodes run on the last frame, every frame the
//! source has not heard of handed back, and the report assembled (README.md, "Shutdown",
//! "Post-nodes"). It must never run while a worker still runs the run's tasks.
//!
//! # Memory ordering
//! `report` loads `frames_done` Acquire, pairing with the AcqRel increment at each frame's end;
//! the workers' release of the run (the pool's latch, pool.rs) already orders everything they did
//! before it, so the other loads are Relaxed.

use std::ffi::CString;
use std::sync::atomic::Ordering;

use tomii_types::abi::{TOMII_KERNEL_VARIADIC, TOMII_TAG_LIST, TomiiBuffer, TomiiPayload, TomiiValue};

use super::Engine;
use super::body::usize_value;
use super::plan::CALL_ONCE_ERROR_CAPACITY;
use crate::engine::latencies::Latencies;
use crate::engine::report::{self, NodeCounters, WorkerCounters};
use crate::engine::source::FrameDone;
use crate::engine::trace::{TracePool, TraceSink};
use crate::engine::{Output, Report, RunError, RunFailure, RunOutcome};
use crate::graph::ArgSource;
use crate::plugin::KernelCaller;

impl Engine<'_> {
    /// Builds the outcome once every worker has returned: runs the post-nodes, hands the source
    /// what it has not received yet, and reports.
    /// The run's outcome from what the workers put in `finished` (a worker that did not is
    /// reported as such): whole, or partial with the run's failure.
    pub(super) fn outcome(
        &self,
        host_latency: &Latencies,
        sink: &mut TraceSink,
        wall_s: f64,
    ) -> Result<RunOutcome, RunFailure> {
        let mut latency = host_latency.clone();
        let mut counters = Vec::with_capacity(self.shared.finished.len());
        // The full chunks the host had not taken yet, before each worker's last, partly filled one.
        if let Some(pool) = &self.shared.trace_pool {
            sink.drain(pool, &self.shared.clock);
        }
        let mut unreported = Vec::new();
        for (worker, finished) in self.shared.finished.iter().enumerate() {
            match finished.lock().unwrap_or_else(|p| p.into_inner()).take() {
                Some((worker_counters, chunk, worker_latency)) => {
                    sink.take(chunk, None, &self.shared.clock);
                    latency.add(worker_latency);
                    counters.push(worker_counters);
                }
                None => {
                    unreported.push(worker as u32);
                    let per_node = vec![NodeCounters::default(); self.plan.graph.nodes.len()];
                    counters.push(WorkerCounters { per_node, ..WorkerCounters::default() });
                }
            }
        }
        if let Some(log) = &self.shared.system_log {
            sink.drain_system(log, &self.shared.clock);
        }
        let trace_error = sink.finish();
        let mut failure = self.shared.failure.lock().unwrap_or_else(|p| p.into_inner()).take();
        if failure.is_none() && !self.shared.door.is_finished() {
            failure = Some(RunError::Internal(format!(
                "the run ended with {} frame(s) in flight",
                self.shared.door.in_flight()
            )));
        }
        if failure.is_none() {
            failure = self.source.failure();
        }
        let mut post_outputs = Vec::new();
        if failure.is_none() {
            match self.run_post_nodes() {
                Ok(outputs) => post_outputs = outputs,
                Err(error) => failure = Some(error),
            }
        }
        for (slot, held) in self.shared.held.iter().enumerate() {
            if let Some(done) = held.lock().unwrap_or_else(|p| p.into_inner()).take() {
                self.hand_over(slot as u32, done);
            }
        }
        self.hand_back_lost();
        let section = self.source.finish();
        if let (None, Err(reason)) = (&failure, trace_error) {
            failure = Some(RunError::Io { path: self.plan.config.trace_file.clone().unwrap_or_default(), reason });
        }
        let mut report = self.report(&counters, &latency, sink, wall_s, failure.as_ref(), unreported);
        report.source_section.extend(section.map(|section| (self.source.kind(), section)));
        let trace = sink.take_records();
        let outcome = RunOutcome { report, trace, outputs: Vec::new(), post_outputs, clock: self.shared.clock.clone() };
        match failure {
            None => Ok(outcome),
            Some(error) => Err(RunFailure { error, partial: Some(Box::new(outcome)) }),
        }
    }

    /// Tells the source of every frame that will not complete: handed in but never started, or in
    /// a slot when the run ended.
    pub(super) fn hand_back_lost(&self) {
        let lost =
            |tag, frame, abandoned| FrameDone { tag, frame, latency_ns: 0, outputs: None, completed: false, abandoned };
        for tag in self.shared.door.drain() {
            self.source.frame_done(lost(tag, u64::MAX, false));
        }
        for slot in 0..self.plan.config.slots {
            let state = self.shared.table.slot(slot);
            if state.busy.swap(false, Ordering::Relaxed) {
                let (tag, frame) = (state.tag.load(Ordering::Relaxed), state.frame.load(Ordering::Relaxed));
                self.source.frame_done(lost(tag, frame, state.abandoned.load(Ordering::Relaxed)));
            }
        }
    }

    pub(super) fn report(
        &self,
        counters: &[WorkerCounters],
        latency: &Latencies,
        trace: &TraceSink,
        wall_s: f64,
        failure: Option<&RunError>,
        workers_unreported: Vec<u32>,
    ) -> Report {
        let stats = if self.shared.containment.is_ejected() { None } else { self.scheduler.stats() };
        let frames_excluded = self.shared.frames_excluded.load(Ordering::Relaxed);
        report::assemble(report::Parts {
            graph: self.plan.graph,
            plugin: self.scheduler.plugin(),
            stats,
            ejected: self.shared.containment.ejection(),
            workers: self.plan.config.workers,
            slots: self.plan.config.slots,
            inline_continuation: self.plan.config.inline_continuation,
            pop_batch: self.plan.pop_room,
            counters,
            clock: &self.shared.clock,
            timing: self.plan.timing,
            latency,
            frames: self.shared.frames_done.load(Ordering::Acquire).saturating_sub(frames_excluded),
            frames_excluded,
            frames_abandoned: self.shared.frames_abandoned.load(Ordering::Relaxed),
            wall_s,
            interrupted: self.shared.interrupted.load(Ordering::Relaxed),
            failure,
            workers_unreported,
            source: self.source.kind(),
            trace: self.shared.trace_pool.is_some(),
            trace_records: trace.records,
            trace_lost: self.shared.trace_pool.as_ref().map_or(0, TracePool::lost),
            trace_wait_s: self.shared.trace_pool.as_ref().map_or(0.0, TracePool::waited_s),
            trace_released: trace.released,
        })
    }
}

impl Engine<'_> {
    /// Runs the post-nodes once, in file order, on the calling thread, after the last frame: their
    /// results arguments read the last frame's slot. Returns what each instance returned.
    /// The last frame is the one started last: nothing reused its slot after it, and its outputs
    /// are still held there. Without a completed frame there is nothing to read: they do not run.
    pub(super) fn run_post_nodes(&self) -> Result<Vec<(String, u32, Output)>, RunError> {
        let mut outputs = Vec::new();
        let last = self.shared.held.iter().enumerate().filter_map(|(slot, held)| {
            let held = held.lock().unwrap_or_else(|p| p.into_inner());
            held.as_ref().map(|done| (done.frame, slot as u32))
        });
        let Some((last_frame, slot)) = last.max() else {
            return Ok(outputs);
        };
        let mut caller = KernelCaller::outside_run(CALL_ONCE_ERROR_CAPACITY);
        for (post, &kernel) in self.plan.graph.post.iter().zip(&self.plan.post_kernels) {
            let variadic = kernel.flags & TOMII_KERNEL_VARIADIC != 0;
            let name = CString::new(post.node.name.as_str()).map_err(|_| {
                RunError::Config(format!("{}: a post-node name contains a NUL character", self.plan.graph.source))
            })?;
            for i in 0..post.node.factor {
                let sources = post.args_of(i);
                let mut args: Vec<TomiiValue> = sources.iter().map(|&source| self.post_arg(source, slot, i)).collect();
                let mut list = Vec::new();
                if variadic {
                    let trailing = sources.iter().rev().take_while(|s| matches!(s, ArgSource::Result(_))).count();
                    list = args.split_off(args.len() - trailing);
                    let buf = TomiiBuffer {
                        data: list.as_mut_ptr().cast(),
                        len: list.len(),
                        ctx: std::ptr::null_mut(),
                        release: None,
                    };
                    args.push(TomiiValue { tag: TOMII_TAG_LIST, elem: 0, payload: TomiiPayload { buf } });
                }
                let value =
                    caller.call_from(kernel, &args, &name, i, last_frame).map_err(|message| RunError::Kernel {
                        node: post.node.name.clone(),
                        kernel: post.node.function.clone(),
                        instance: i,
                        frame: last_frame,
                        message,
                    })?;
                drop(list);
                outputs.push((post.node.name.clone(), i, Output::from_value(value)));
            }
        }
        Ok(outputs)
    }

    /// One argument of post-node instance `i`; results come from `slot`, the last frame's.
    pub(super) fn post_arg(&self, source: ArgSource, slot: u32, i: u32) -> TomiiValue {
        match source {
            // SAFETY: every worker has stopped and the last frame completed in `slot`, so its
            // results are written and nothing writes them any more.
            ArgSource::Result(pred) => unsafe { self.shared.table.result(slot, pred) },
            ArgSource::Const(c) => *self.plan.consts[c as usize].as_raw(),
            ArgSource::Computed(k) => {
                let values = &self.plan.computed[k as usize];
                *values[if values.len() == 1 { 0 } else { i as usize }].as_raw()
            }
            ArgSource::Index => usize_value(u64::from(i)),
            ArgSource::Workers => usize_value(u64::from(self.plan.config.workers)),
        }
    }
}
