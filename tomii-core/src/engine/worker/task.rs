//! Task execution, the hot path (README.md, "The per-task record", "Inline continuation"): a
//! popped task verified and claimed, its body run (`body.rs`), its result kept, its counters and
//! trace record, the arrivals counted on its successors and the newly ready batch pushed. It
//! allocates nothing, takes no lock and formats nothing except to name a contract violation.
//!
//! # Memory ordering
//! `claim` verifies through the host core (`host::verify`), which loads the slot's `generation`
//! through the slot table's `SlotView`: Acquire, pairing with the Release increment of
//! `SlotTable::begin_frame`, so the frame number read with it belongs to that generation. The
//! claim itself and the arrivals are the slot table's read-modify-writes (slots.rs, "Memory
//! ordering"): a successor's claim sees its predecessors' results. Costs and ready times are
//! Relaxed estimates.

use std::sync::atomic::Ordering;

use tomii_types::abi::{TOMII_NO_WORKER, TomiiTask, TomiiValue};
use tomii_types::kernel::Value;

use super::Engine;
use super::local::{Local, PUSH_CHUNK, Pusher};
use super::records::{GROUPED, Inst, KEEPS_RESULT, Record, Records, SINK};
use crate::engine::RunError;
use crate::engine::clock::Ticks;
use crate::engine::report::WorkerCounters;
use crate::engine::trace::{TracePool, TraceRecord, WorkerTrace};
use crate::host::{self, Claim, Need, Violation, decode_handle, encode_handle};

/// A worker publishes its mean duration of a node every this many executions of it.
const COST_PUBLISH_EVERY: u64 = 16;

/// A claimed task: where it runs, in which generation of its slot, for which frame.
#[derive(Clone, Copy)]
pub(super) struct Claimed {
    pub(super) slot: u32,
    pub(super) inst: Inst,
    pub(super) generation: u32,
    pub(super) frame: u64,
}

impl Engine<'_> {
    /// Verifies a popped task, by its handle, and claims it (the host core's `verify`, over the
    /// slot table); returns where it runs, or `None` for a task to skip (a violation under the
    /// fallback policy, or a task the host FIFO holds twice after an ejection).
    #[inline(always)]
    pub(super) fn claim(&self, worker: u32, handle: u64) -> Result<Option<Claimed>, RunError> {
        let records = &self.plan.records;
        let need = |id| {
            records.check(id).map(|inst| {
                let record = records.get(inst);
                (inst, Need { deps: record.deps, worker_lo: record.worker_lo, worker_hi: record.worker_hi })
            })
        };
        match host::verify(&self.shared.table, worker, handle, need) {
            Ok((inst, Claim { slot, generation, frame, .. })) => Ok(Some(Claimed { slot, inst, generation, frame })),
            Err(violation) => self.refused(violation),
        }
    }

    /// Claims the task of `handle`, which the scheduler kept for `worker` at its push (README.md,
    /// "Kept tasks"): the host described it at that push, as `kept`, so its handle needs no
    /// decoding; what is checked is the scheduler's choice (that `worker` may run it) and the claim
    /// itself. When either fails, the full verification names the violation, as for a popped task.
    #[inline(always)]
    pub(super) fn claim_kept(&self, worker: u32, handle: u64, kept: Claimed) -> Result<Option<Claimed>, RunError> {
        let record = self.plan.records.get(kept.inst);
        if Records::may_run(record, worker)
            && self.shared.table.claim(kept.slot, kept.inst.get(), kept.generation, record.deps).is_ok()
        {
            return Ok(Some(kept));
        }
        self.claim(worker, handle)
    }

    /// A popped task that failed verification (`claim`).
    #[cold]
    #[inline(never)]
    pub(super) fn refused<T>(&self, violation: Violation) -> Result<Option<T>, RunError> {
        self.rejected(violation.message(self.plan.graph))
    }

    /// A popped task the host will not run: a violation, unless the scheduler is already ejected
    /// (then it is a stale or duplicate entry, skipped).
    #[cold]
    pub(super) fn rejected<T>(&self, violation: String) -> Result<Option<T>, RunError> {
        if self.shared.containment.is_ejected() {
            return Ok(None);
        }
        self.contract_violation(violation).map(|()| None)
    }

    /// Runs one popped task and everything that follows its completion, then the tasks it leads
    /// to without a pop: continuations it kept for itself and tasks the scheduler kept for this
    /// worker (README.md, "Inline continuation", "Kept tasks").
    #[inline]
    pub(super) fn execute(&self, local: &mut Local, task: &TomiiTask) -> Result<(), RunError> {
        let Some(claimed) = self.claim(local.pusher.worker, task.handle)? else {
            return Ok(());
        };
        let mut next = self.run_task(local, Some(task), false, claimed)?;
        loop {
            next = match next {
                Next::Pop => return Ok(()),
                _ if self.shared.stop.load(Ordering::Relaxed) => return Ok(()),
                Next::Inline(claimed) => self.run_task(local, None, true, claimed)?,
                Next::Gated(claimed) => {
                    self.counters(local, claimed.frame).kept += 1;
                    self.run_task(local, None, false, claimed)?
                }
                Next::Kept(kept) => {
                    let handle = local.pusher.kept_handle;
                    let Some(claimed) = self.claim_kept(local.pusher.worker, handle, kept)? else { return Ok(()) };
                    self.counters(local, claimed.frame).kept += 1;
                    if self.plan.task_hooks {
                        let task = local.pusher.kept;
                        self.run_task(local, Some(&task), false, claimed)?
                    } else {
                        self.run_task(local, None, false, claimed)?
                    }
                }
            };
        }
    }

    /// Runs a claimed task: its body (each member's, under groups), its successors' release and its
    /// frame's completion. `popped`: the descriptor the scheduler handed out, which its hooks hear
    /// of (`None` without hooks, and for a continuation, which the scheduler never saw); `inlined`:
    /// whether it is a continuation. Returns the continuation it kept, claimed, if any. Inlined
    /// with the rest of the per-task path (README.md, "The per-task record").
    #[inline(always)]
    pub(super) fn run_task(
        &self,
        local: &mut Local,
        popped: Option<&TomiiTask>,
        inlined: bool,
        claimed: Claimed,
    ) -> Result<Next, RunError> {
        let Claimed { slot, inst, generation, frame } = claimed;
        let instance = inst.get();
        let record = self.plan.records.get(inst);
        if self.plan.task_hooks
            && let Some(task) = popped
        {
            self.scheduler.task_started_by(local.pusher.scheduler, task);
        }
        let first_start = if self.plan.timing { self.shared.clock.now_after_loads() } else { 0 };
        let end = if record.flags & GROUPED == 0 {
            self.run_member(local, record, slot, (instance, instance), frame, inlined, first_start)?
        } else {
            self.run_group(local, record, slot, instance, frame, inlined, first_start)?
        };
        if self.plan.task_hooks
            && let Some(task) = popped
        {
            let ns = self.shared.clock.ns_between(first_start, end);
            self.scheduler.task_completed_by(local.pusher.scheduler, task, ns);
        }
        let next = self.release_successors(&mut local.pusher, claimed, end, self.plan.continuation)?;
        if self.plan.recording {
            local.trace.resolved(self.shared.clock.now());
        }
        if record.flags & SINK != 0 && self.shared.table.complete_sink(slot, generation) {
            self.finish_frame(&mut local.pusher, slot, frame, &mut local.latency)?;
        }
        Ok(next)
    }

    /// Runs one instance of the task (`member` of the task scheduled as `task`; both the same
    /// without groups), whose record is `record`, from `start`: its body, its result kept or
    /// dropped, its counters. Returns when it ended.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_member(
        &self,
        local: &mut Local,
        record: &Record,
        slot: u32,
        (member, task): (u32, u32),
        frame: u64,
        inlined: bool,
        start: Ticks,
    ) -> Result<Ticks, RunError> {
        let result = self.run_body(local, record, slot, member, frame);
        let end = if self.plan.timing { self.shared.clock.now() } else { 0 };
        let node = record.node;
        self.store(local, node, slot, member, frame, record.flags & KEEPS_RESULT != 0, result?);
        let counters = if frame < self.plan.config.warmup_frames { &mut local.warmup } else { &mut local.counters };
        counters.inlined += u64::from(inlined);
        self.account(counters, &mut local.trace, local.pusher.worker, node, (slot, member, task, frame), (start, end));
        Ok(end)
    }

    /// Runs the instances of the group the task `leader` (whose record is `record`) runs, in order.
    /// Returns when the last ended.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_group(
        &self,
        local: &mut Local,
        record: &Record,
        slot: u32,
        leader: u32,
        frame: u64,
        inlined: bool,
        mut start: Ticks,
    ) -> Result<Ticks, RunError> {
        for member in self.plan.graph.group_of(leader) {
            let member_record = if member == leader { record } else { self.plan.records.get(self.inst(member)) };
            start = self.run_member(local, member_record, slot, (member, leader), frame, inlined, start)?;
        }
        Ok(start)
    }

    /// The counters a task of `frame` counts in: those of warm-up frames are left out of the
    /// report (README.md, "Warm-up frames").
    #[inline]
    pub(super) fn counters<'l>(&self, local: &'l mut Local, frame: u64) -> &'l mut WorkerCounters {
        if frame < self.plan.config.warmup_frames { &mut local.warmup } else { &mut local.counters }
    }

    /// Keeps or releases one instance's result; a skipped instance (its condition did not hold)
    /// leaves NONE as its result.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn store(
        &self,
        local: &mut Local,
        node: u32,
        slot: u32,
        instance: u32,
        frame: u64,
        keeps: bool,
        result: Option<TomiiValue>,
    ) {
        if result.is_none() {
            self.counters(local, frame).per_node[node as usize].skipped += 1;
        }
        let result = result.unwrap_or(TomiiValue::NONE);
        if keeps {
            // SAFETY: this task owns its cell in this generation; the value is owned.
            unsafe { self.shared.table.store_result(slot, instance, result) };
        } else {
            // SAFETY: the kernel handed over ownership; nobody reads this result.
            drop(unsafe { Value::from_raw(result) });
        }
    }

    /// Counters, cost estimate and trace record of one execution of `instance` (in `slot`, of
    /// `frame`) on `worker`, a member of the task scheduled as `task` (itself without groups): the
    /// task's ready time is the member's. `counters` are those the frame counts in.
    #[inline(always)]
    pub(super) fn account(
        &self,
        counters: &mut WorkerCounters,
        trace: &mut WorkerTrace,
        worker: u32,
        node: u32,
        (slot, instance, task, frame): (u32, u32, u32, u64),
        (start, end): (Ticks, Ticks),
    ) {
        counters.tasks += 1;
        let per_node = &mut counters.per_node[node as usize];
        per_node.count += 1;
        if self.plan.timing {
            let ticks = end.saturating_sub(start);
            counters.busy += ticks;
            per_node.ticks += ticks;
            per_node.max_ticks = per_node.max_ticks.max(ticks);
            counters.durations.record(node, ticks);
            if per_node.count % COST_PUBLISH_EVERY == 1 {
                let mean = self.shared.clock.ticks_to_ns(per_node.ticks / per_node.count);
                self.shared.costs[node as usize].store(mean, Ordering::Relaxed);
            }
        }
        if let Some(pool) = &self.shared.trace_pool {
            self.trace_task(pool, trace, worker, node, (slot, instance, task, frame), (start, end));
        }
    }

    /// The trace record of one execution (`account`'s arguments), apart from the per-task path.
    #[inline(never)]
    pub(super) fn trace_task(
        &self,
        pool: &TracePool,
        trace: &mut WorkerTrace,
        worker: u32,
        node: u32,
        (slot, instance, task, frame): (u32, u32, u32, u64),
        (start, end): (Ticks, Ticks),
    ) {
        let cell = slot as usize * self.plan.graph.instance_count() + task as usize;
        let record = TraceRecord {
            frame,
            ready: self.shared.ready_at[cell].load(Ordering::Relaxed),
            start,
            end,
            node,
            instance: self.plan.graph.inst_index[instance as usize],
            slot,
            worker,
            resolved: 0,
        };
        trace.record(pool, record);
    }

    /// Counts this task's arrival on each successor and pushes those it made ready, except, with
    /// `Continuation::Inline` (`inline_continuation`), the first one this worker may run: that one
    /// is claimed at once and returned, for the worker to run next without the scheduler. With
    /// `Continuation::Gate` that one is kept the same way while the worker's keep gate is open
    /// (ABI v1.4); otherwise, and with `Continuation::Keep`, the scheduler is asked whether it
    /// keeps one of them for this worker (`push_keep`). No task is kept while the worker holds
    /// tasks of its last pop, which run first (`Pusher::keep_barred`).
    #[inline(always)]
    pub(super) fn release_successors(
        &self,
        pusher: &mut Pusher,
        claimed: Claimed,
        now: Ticks,
        continuation: Continuation,
    ) -> Result<Next, RunError> {
        let Claimed { slot, inst, generation, frame } = claimed;
        let worker = pusher.worker;
        let mut next = Next::Pop;
        pusher.self_take = true;
        // Whether the first successor this worker may run is still to be looked at.
        let mut first =
            continuation == Continuation::Inline || (continuation == Continuation::Gate && !pusher.keep_barred);
        for &next_inst in self.plan.records.successors(self.plan.records.get(inst)) {
            let (successor, record) = (next_inst.get(), self.plan.records.get(next_inst));
            if !self.shared.table.arrive(slot, successor, generation, record.deps) {
                continue;
            }
            // Only this worker saw `successor` become ready, so the claim succeeds, unless a faulty
            // scheduler handed it out early and a worker claimed it already (or, after an
            // ejection, the scan queued it and another worker took it): then it is pushed like
            // any other, and a second claim of it is caught or skipped.
            if first && Records::may_run(record, worker) {
                first = false;
                let inline = continuation == Continuation::Inline;
                if (inline || self.keeps_at_gate(worker))
                    && self.shared.table.claim(slot, successor, generation, record.deps).is_ok()
                {
                    self.mark_ready(successor, slot, now);
                    let claimed = Claimed { slot, inst: next_inst, generation, frame };
                    next = if inline { Next::Inline(claimed) } else { Next::Gated(claimed) };
                    // The worker runs that task next: it takes none of the pushed tasks itself.
                    pusher.self_take = false;
                    continue;
                }
            }
            self.stage(pusher, next_inst, slot, generation, frame, now, worker)?;
        }
        if matches!(continuation, Continuation::Keep | Continuation::Gate)
            && matches!(next, Next::Pop)
            && !pusher.keep_barred
            && !pusher.ready.is_empty()
        {
            if !self.push_keeping(pusher)? {
                return Ok(Next::Pop);
            }
            // A successor of this task: of its slot, generation and frame.
            let inst = self.inst(decode_handle(pusher.kept_handle).instance);
            return Ok(Next::Kept(Claimed { slot, inst, generation, frame }));
        }
        self.flush(pusher)?;
        Ok(next)
    }

    /// Whether `worker`'s keep gate is open (ABI v1.4); an ejected scheduler's is never read.
    #[inline(always)]
    fn keeps_at_gate(&self, worker: u32) -> bool {
        !self.shared.containment.is_ejected() && self.scheduler.gate_open(worker)
    }

    /// Adds a ready task to the pusher's batch, pushing the batch when it is full.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn stage(
        &self,
        pusher: &mut Pusher,
        inst: Inst,
        slot: u32,
        generation: u32,
        frame: u64,
        now: Ticks,
        locality: u32,
    ) -> Result<(), RunError> {
        self.mark_ready(inst.get(), slot, now);
        // Described where it is pushed from: the 72-byte descriptor is copied once.
        pusher.ready.push(*self.plan.records.template(inst));
        if let Some(task) = pusher.ready.last_mut() {
            self.fill_in(task, inst.get(), slot, generation, frame, now, locality);
        }
        if pusher.ready.len() == PUSH_CHUNK { self.flush(pusher) } else { Ok(()) }
    }

    /// Records when a task became ready, for its trace record (only with a trace).
    #[inline]
    pub(super) fn mark_ready(&self, instance: u32, slot: u32, now: Ticks) {
        if !self.shared.ready_at.is_empty() {
            self.shared.ready_at[slot as usize * self.plan.graph.instance_count() + instance as usize]
                .store(now, Ordering::Relaxed);
        }
    }

    /// The descriptor of a task that became ready at `now`.
    pub(super) fn describe(
        &self,
        inst: Inst,
        slot: u32,
        generation: u32,
        frame: u64,
        now: Ticks,
        locality: u32,
    ) -> TomiiTask {
        let mut task = *self.plan.records.template(inst);
        self.fill_in(&mut task, inst.get(), slot, generation, frame, now, locality);
        task
    }

    /// Fills in the per-frame fields of `task`, a copy of `instance`'s template.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fill_in(
        &self,
        task: &mut TomiiTask,
        instance: u32,
        slot: u32,
        generation: u32,
        frame: u64,
        now: Ticks,
        locality: u32,
    ) {
        task.handle = encode_handle(slot, instance, generation);
        task.frame = frame;
        task.slot = slot;
        task.locality = locality;
        if self.plan.timing {
            task.ready_ns = self.shared.clock.ns_since_start(now);
            task.cost_ns = self.shared.costs[task.node as usize].load(Ordering::Relaxed);
        }
    }

    /// Pushes the staged batch, if any (most completions of a chain or a pipeline stage none).
    #[inline(always)]
    pub(super) fn flush(&self, pusher: &mut Pusher) -> Result<(), RunError> {
        if pusher.ready.is_empty() { Ok(()) } else { self.push_staged(pusher) }
    }

    /// Pushes the staged batch and wakes workers for what no awake worker will take. Out of line,
    /// as `push_keeping` is: inlined, they made the per-task path too large to stay inlined in the
    /// worker loop (bench/README.md, "Instructions per task").
    #[inline(never)]
    pub(super) fn push_staged(&self, pusher: &mut Pusher) -> Result<(), RunError> {
        if self.shared.containment.is_ejected() {
            self.shared.containment.fifo().push(&pusher.ready);
        } else if let Err(violation) = self.scheduler.push_by(pusher.scheduler, &pusher.ready) {
            // Under the fallback policy the ejection requeues these tasks from the counters.
            self.contract_violation(violation)?;
        }
        self.notify_pushed(pusher, None);
        Ok(())
    }

    /// Pushes the staged batch of a worker that asks for work next through `push_keep`: whether
    /// the scheduler kept one of the tasks for it (then in `pusher.kept`, README.md, "Kept
    /// tasks"). Wakes workers for what no awake worker will take.
    #[inline(never)]
    pub(super) fn push_keeping(&self, pusher: &mut Pusher) -> Result<bool, RunError> {
        if self.shared.containment.is_ejected() {
            self.push_staged(pusher)?;
            return Ok(false);
        }
        let kept = match self.scheduler.push_keep_by(pusher.scheduler, &pusher.ready) {
            Ok(kept) => kept,
            Err(violation) => {
                // Under the fallback policy the ejection requeues these tasks from the counters.
                self.contract_violation(violation)?;
                None
            }
        };
        if let Some(task) = kept.and_then(|index| pusher.ready.get(index)) {
            pusher.kept_handle = task.handle;
            if self.plan.task_hooks {
                pusher.kept = *task;
            }
            // The worker runs the kept task next: it takes none of the queued ones itself.
            pusher.self_take = false;
        }
        self.notify_pushed(pusher, kept);
        Ok(kept.is_some())
    }

    /// After a push of the staged batch (but for the task at `kept`, which its pusher runs next):
    /// wakes workers for what no awake worker will take, and empties the batch. A chain's step,
    /// whose one task was kept, queued nothing and wakes nobody.
    #[inline]
    fn notify_pushed(&self, pusher: &mut Pusher, kept: Option<usize>) {
        if pusher.ready.len() > usize::from(kept.is_some()) {
            let taker = (pusher.self_take && pusher.worker != TOMII_NO_WORKER).then_some(pusher.worker);
            let queued = pusher.ready.iter().enumerate().filter(|&(index, _)| Some(index) != kept);
            self.shared.sleep.notify(taker, queued.map(|(_, t)| (t.worker_lo, t.worker_hi)));
        }
        pusher.self_take = false;
        pusher.ready.clear();
    }
}

/// What a worker runs after a task, before it pops again.
pub(super) enum Next {
    /// Nothing: it pops.
    Pop,
    /// Its inline continuation, claimed (README.md, "Inline continuation").
    Inline(Claimed),
    /// The task the scheduler kept for it, in `Pusher::kept`, not yet claimed (README.md, "Kept
    /// tasks").
    Kept(Claimed),
    /// The task kept at the worker's open keep gate, claimed (README.md, "Kept tasks").
    Gated(Claimed),
}

/// How a completing worker may go on without popping: the run's choice, made once.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Continuation {
    /// It pushes every task its completion made ready and pops.
    None,
    /// It runs the first of them itself, unseen by the scheduler (`inline_continuation`).
    Inline,
    /// It asks the scheduler, which may keep one of them for it (`push_keep`).
    Keep,
    /// As `Keep`, for a scheduler that gave some worker a keep gate (ABI v1.4): while the
    /// worker's is open, it keeps the first task it may run without asking.
    Gate,
}
