//! The call watchdog (engine/README.md, "Stuck callbacks"): every call into the scheduler, and
//! every kernel call when the run limits kernels, is marked, per thread, with the host's tick when
//! it began; the host thread, watching, finds a call that has not returned within the limit. The
//! ports (`scheduler.rs`, `kernel_call.rs`) mark their calls; nobody else does. It must never
//! take a lock or allocate: per call, one relaxed load and two relaxed stores to the thread's own
//! cache line. A kernel call of a run that does not limit kernels is only noted: two relaxed
//! stores of its subject, so that a run that cannot stop can say which kernel it waits for
//! ([`Watchdog::in_call`]).
//!
//! # Memory ordering
//! Everything is Relaxed. A mark is a hint read by a thread that only compares its age with a
//! limit many times the host's period; no other data is published through it. A mark seen late
//! is found at the host's next look; one seen stale (its call returned) is at most one period old.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;
use tomii_types::abi::TOMII_NO_WORKER;

/// A call into a plugin, as a mark names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Call {
    Push = 1,
    Pop,
    TaskStarted,
    TaskCompleted,
    FrameStarted,
    FrameCompleted,
    /// A kernel (marked only when the run limits kernels: `RunConfig::kernel_timeout`; else noted).
    Kernel,
}

impl Call {
    const ALL: [Call; 7] = [
        Call::Push,
        Call::Pop,
        Call::TaskStarted,
        Call::TaskCompleted,
        Call::FrameStarted,
        Call::FrameCompleted,
        Call::Kernel,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Call::Push => "push",
            Call::Pop => "pop",
            Call::TaskStarted => "task_started",
            Call::TaskCompleted => "task_completed",
            Call::FrameStarted => "frame_started",
            Call::FrameCompleted => "frame_completed",
            Call::Kernel => "a kernel",
        }
    }
}

/// One thread's mark: its current call, and what the call works on (a kernel call's `slot << 32 |
/// instance`), on a cache line of their own.
#[derive(Default)]
pub(crate) struct MarkCell {
    /// `tick << 8 | call` while a call runs, else 0.
    call: AtomicU64,
    /// The subject of the last marked or noted call that has one; with [`NOTED_RUNNING`] while a
    /// noted (unlimited) kernel call runs.
    subject: AtomicU64,
}

/// In a subject: a noted kernel call, unmarked, is running. A subject is `slot << 32 |
/// instance`, and a slot has 24 bits: the top bit is free.
const NOTED_RUNNING: u64 = 1 << 63;

pub(crate) struct Watchdog {
    /// Milliseconds since the run started, as the host thread last looked (a coarse clock the
    /// workers read without a system call).
    tick: AtomicU64,
    /// Per worker, then one for the host thread.
    marks: Box<[CachePadded<MarkCell>]>,
}

/// A thread's handle on its mark: the calls it makes through a port are marked on it.
#[derive(Clone, Copy)]
pub(crate) struct Mark<'w> {
    tick: &'w AtomicU64,
    cell: &'w MarkCell,
}

impl Mark<'_> {
    /// Runs `body`, `call` of a plugin, marked.
    #[inline(always)]
    pub(crate) fn watch<T>(self, call: Call, body: impl FnOnce() -> T) -> T {
        self.cell.call.store(self.tick.load(Ordering::Relaxed) << 8 | call as u64, Ordering::Relaxed);
        let result = body();
        self.cell.call.store(0, Ordering::Relaxed);
        result
    }

    /// [`watch`](Self::watch), with the call's subject recorded first, for the host to name it.
    #[inline(always)]
    pub(crate) fn watch_subject<T>(self, call: Call, subject: u64, body: impl FnOnce() -> T) -> T {
        self.cell.subject.store(subject, Ordering::Relaxed);
        self.watch(call, body)
    }

    /// Runs `body`, a kernel call without a time limit, noted: its subject, flagged as running
    /// while it runs. No limit applies; the host reads it only to name a call a run waits for.
    #[inline(always)]
    pub(crate) fn note_kernel<T>(self, subject: u64, body: impl FnOnce() -> T) -> T {
        self.cell.subject.store(subject | NOTED_RUNNING, Ordering::Relaxed);
        let result = body();
        self.cell.subject.store(subject, Ordering::Relaxed);
        result
    }
}

impl Watchdog {
    pub(crate) fn new(workers: u32) -> Self {
        let marks = (0..=workers).map(|_| CachePadded::new(MarkCell::default())).collect();
        Watchdog { tick: AtomicU64::new(0), marks }
    }

    /// The mark of `worker`'s calls; TOMII_NO_WORKER (u32::MAX) lands on the last, the host's.
    #[inline]
    pub(crate) fn cell(&self, worker: u32) -> &MarkCell {
        &self.marks[(worker as usize).min(self.marks.len() - 1)]
    }

    /// A handle on `worker`'s mark, with the tick: a thread looks it up once and keeps it.
    #[inline]
    pub(crate) fn mark(&self, worker: u32) -> Mark<'_> {
        Mark { tick: &self.tick, cell: self.cell(worker) }
    }

    /// Runs `body`, `call` of a plugin, marked on `cell` (one of this watchdog's).
    #[inline(always)]
    pub(crate) fn watch<T>(&self, cell: &MarkCell, call: Call, body: impl FnOnce() -> T) -> T {
        Mark { tick: &self.tick, cell }.watch(call, body)
    }

    /// The subject of `worker`'s last marked or noted call that had one (0 if none).
    pub(crate) fn subject(&self, worker: u32) -> u64 {
        self.cell(worker).subject.load(Ordering::Relaxed) & !NOTED_RUNNING
    }

    /// The call `worker` is in now, if any: a marked call, with when it began (ms since the run
    /// started, to the precision of the host's looks), or a noted kernel call, begun when not
    /// known. A hint, as every mark is: a call seen may have just returned.
    pub(crate) fn in_call(&self, worker: u32) -> Option<(Call, Option<u64>)> {
        let cell = self.cell(worker);
        let mark = cell.call.load(Ordering::Relaxed);
        if let Some(call) = Call::ALL.into_iter().find(|call| *call as u64 == mark & 0xff) {
            return Some((call, Some(mark >> 8)));
        }
        (cell.subject.load(Ordering::Relaxed) & NOTED_RUNNING != 0).then_some((Call::Kernel, None))
    }

    /// The host's look at `now_ms` (since the run started): sets the tick and returns a call that
    /// began `limit_ms` ago or more and has not returned, with its worker (`TOMII_NO_WORKER` for
    /// the host). A call's start is known to the precision of the host's looks.
    /// Kernel calls (marked only when limited) are limited to `kernel_limit_ms`. Marks whose index
    /// (the worker, then the host) is set in `known` are left out: calls already found.
    pub(crate) fn look(&self, now_ms: u64, limit_ms: u64, kernel_limit_ms: u64, known: &[bool]) -> Option<(u32, Call)> {
        let now = self.tick.fetch_max(now_ms, Ordering::Relaxed).max(now_ms);
        let workers = self.marks.len() as u32 - 1;
        self.marks.iter().enumerate().filter(|(at, _)| !known.get(*at).copied().unwrap_or(false)).find_map(
            |(at, mark)| {
                let mark = mark.call.load(Ordering::Relaxed);
                let call = Call::ALL.into_iter().find(|call| *call as u64 == mark & 0xff)?;
                let worker = if at as u32 == workers { TOMII_NO_WORKER } else { at as u32 };
                let limit = if call == Call::Kernel { kernel_limit_ms } else { limit_ms };
                (now.saturating_sub(mark >> 8) >= limit).then_some((worker, call))
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Leaves `worker`'s mark as a call that began at the watchdog's tick and never returned.
    fn leave_marked(dog: &Watchdog, worker: u32, call: Call) {
        dog.cell(worker).call.store(dog.tick.load(Ordering::Relaxed) << 8 | call as u64, Ordering::Relaxed);
    }

    #[test]
    fn a_call_that_does_not_return_is_found_after_the_limit() {
        let dog = Watchdog::new(2);
        assert_eq!(dog.look(10, 100, u64::MAX, &[]), None);
        dog.mark(1).watch(Call::Push, || ());
        assert_eq!(dog.look(20, 1, u64::MAX, &[]), None, "a call that returned leaves no mark");
        // A pop that began at 20 ms and never returned.
        leave_marked(&dog, 1, Call::Pop);
        assert_eq!(dog.look(119, 100, u64::MAX, &[]), None);
        assert_eq!(dog.look(120, 100, u64::MAX, &[]), Some((1, Call::Pop)));
        leave_marked(&dog, TOMII_NO_WORKER, Call::Push);
        dog.cell(1).call.store(0, Ordering::Relaxed);
        assert_eq!(dog.look(300, 100, u64::MAX, &[]), Some((TOMII_NO_WORKER, Call::Push)));
        assert_eq!(dog.look(300, 100, u64::MAX, &[false, false, true]), None, "a call already found is left out");
    }

    #[test]
    fn a_kernel_call_keeps_its_subject_and_its_own_limit() {
        let dog = Watchdog::new(1);
        dog.mark(0).watch_subject(Call::Kernel, 3 << 32 | 7, || ());
        assert_eq!(dog.subject(0), 3 << 32 | 7);
        leave_marked(&dog, 0, Call::Kernel);
        assert_eq!(dog.look(500, 100, u64::MAX, &[]), None, "kernels are limited apart");
        assert_eq!(dog.look(500, 100, 400, &[]), Some((0, Call::Kernel)));
        assert_eq!(dog.in_call(0), Some((Call::Kernel, Some(0))));
    }

    #[test]
    fn a_noted_kernel_call_is_seen_while_it_runs_and_never_found_stuck() {
        let dog = Watchdog::new(1);
        dog.look(100, 10, u64::MAX, &[]);
        let seen = dog.mark(0).note_kernel(2 << 32 | 5, || dog.in_call(0));
        assert_eq!(seen, Some((Call::Kernel, None)), "running");
        assert_eq!(dog.subject(0), 2 << 32 | 5);
        assert_eq!(dog.in_call(0), None, "returned");
        dog.cell(0).subject.store(2 << 32 | 5 | NOTED_RUNNING, Ordering::Relaxed);
        assert_eq!(dog.look(1_000_000, 10, 10, &[]), None, "a noted call has no limit");
        assert_eq!(dog.subject(0), 2 << 32 | 5, "the flag is not part of the subject");
        dog.mark(0).watch(Call::Pop, || assert_eq!(dog.in_call(0), Some((Call::Pop, Some(1_000_000)))));
    }
}
