//! The callback watchdog (README.md, "Stuck callbacks"): every call into the scheduler is marked,
//! per worker, with the host's tick when it began; the host thread, watching, finds a call that
//! has not returned within the limit. A thread stuck in foreign code cannot be stopped from inside
//! the process: the run's `on_hang` decides what happens then (the CLI reports and exits).
//!
//! Per call: one relaxed load of the tick and two relaxed stores to the worker's own cache line.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;
use tomii_types::abi::TOMII_NO_WORKER;

/// A call into the scheduler, as a mark names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Call {
    Push = 1,
    Pop,
    TaskStarted,
    TaskCompleted,
    FrameStarted,
    FrameCompleted,
    /// A kernel (marked only when the run limits kernels: `RunConfig::kernel_timeout`).
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

    pub(super) fn name(self) -> &'static str {
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

pub(super) struct Watchdog {
    /// Milliseconds since the run started, as the host thread last looked (a coarse clock the
    /// workers read without a system call).
    tick: AtomicU64,
    /// Per worker, then one for the host thread: `tick << 8 | call` while a call runs, else 0.
    marks: Box<[CachePadded<AtomicU64>]>,
}

impl Watchdog {
    pub(super) fn new(workers: u32) -> Self {
        let marks = (0..=workers).map(|_| CachePadded::new(AtomicU64::new(0))).collect();
        Watchdog { tick: AtomicU64::new(0), marks }
    }

    /// The mark of `worker`'s calls; TOMII_NO_WORKER (u32::MAX) lands on the last, the host's. A
    /// worker looks its mark up once and keeps it ([`watch_at`](Self::watch_at)).
    #[inline]
    pub(super) fn mark(&self, worker: u32) -> &AtomicU64 {
        &self.marks[(worker as usize).min(self.marks.len() - 1)]
    }

    /// Runs `call` of the scheduler on `worker`, marked.
    #[inline]
    pub(super) fn watch<T>(&self, worker: u32, call: Call, body: impl FnOnce() -> T) -> T {
        self.watch_at(self.mark(worker), call, body)
    }

    /// Runs `call` of the scheduler, marked on `mark` (one of this watchdog's, from `mark`).
    #[inline(always)]
    pub(super) fn watch_at<T>(&self, mark: &AtomicU64, call: Call, body: impl FnOnce() -> T) -> T {
        mark.store(self.tick.load(Ordering::Relaxed) << 8 | call as u64, Ordering::Relaxed);
        let result = body();
        mark.store(0, Ordering::Relaxed);
        result
    }

    /// The host's look at `now_ms` (since the run started): sets the tick and returns a call that
    /// began `limit_ms` ago or more and has not returned, with its worker (`TOMII_NO_WORKER` for
    /// the host). A call's start is known to the precision of the host's looks.
    /// Kernel calls (marked only when limited) are limited to `kernel_limit_ms`. Marks whose index
    /// (the worker, then the host) is set in `known` are left out: calls already found.
    pub(super) fn look(&self, now_ms: u64, limit_ms: u64, kernel_limit_ms: u64, known: &[bool]) -> Option<(u32, Call)> {
        let now = self.tick.fetch_max(now_ms, Ordering::Relaxed).max(now_ms);
        let workers = self.marks.len() as u32 - 1;
        self.marks.iter().enumerate().filter(|(at, _)| !known.get(*at).copied().unwrap_or(false)).find_map(
            |(at, mark)| {
                let mark = mark.load(Ordering::Relaxed);
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

    #[test]
    fn a_call_that_does_not_return_is_found_after_the_limit() {
        let dog = Watchdog::new(2);
        assert_eq!(dog.look(10, 100, u64::MAX, &[]), None);
        dog.watch(1, Call::Push, || ());
        assert_eq!(dog.look(20, 1, u64::MAX, &[]), None, "a call that returned leaves no mark");
        // A pop that began at 20 ms and never returned.
        dog.mark(1).store(dog.tick.load(Ordering::Relaxed) << 8 | Call::Pop as u64, Ordering::Relaxed);
        assert_eq!(dog.look(119, 100, u64::MAX, &[]), None);
        assert_eq!(dog.look(120, 100, u64::MAX, &[]), Some((1, Call::Pop)));
        dog.mark(TOMII_NO_WORKER).store(120 << 8 | Call::Push as u64, Ordering::Relaxed);
        dog.mark(1).store(0, Ordering::Relaxed);
        assert_eq!(dog.look(300, 100, u64::MAX, &[]), Some((TOMII_NO_WORKER, Call::Push)));
        assert_eq!(dog.look(300, 100, u64::MAX, &[false, false, true]), None, "a call already found is left out");
    }
}
