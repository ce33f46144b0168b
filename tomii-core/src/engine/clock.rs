//! The run's clock: raw cycle-counter ticks on the hot path, nanoseconds at the edges.
//!
//! `quanta` reads the TSC where it is invariant (a few ns) and falls back to the OS monotonic clock
//! elsewhere. Raw ticks are only ever compared within one run and converted with `to_ns`.

/// Ticks since an arbitrary origin; convert with [`Clock::ns_since_start`].
pub type Ticks = u64;

#[derive(Clone)]
pub struct Clock {
    clock: quanta::Clock,
    start: Ticks,
}

impl Clock {
    /// A clock starting now. The process's `quanta` clock is made once and shared: making one
    /// asks the CPU for its features (`cpuid`, which a virtual machine traps), microseconds a run.
    pub fn new() -> Self {
        static SHARED: std::sync::OnceLock<quanta::Clock> = std::sync::OnceLock::new();
        let clock = SHARED.get_or_init(quanta::Clock::new).clone();
        let start = clock.raw();
        Clock { clock, start }
    }

    /// The clock of a simulated run (`sim/`): a tick is a nanosecond of virtual time, counted
    /// from 0, and the clock is never read; times come from the simulation's events.
    pub fn simulated() -> Self {
        let (clock, _mock) = quanta::Clock::mock();
        Clock { clock, start: 0 }
    }

    /// The current time in raw ticks.
    #[inline]
    pub fn now(&self) -> Ticks {
        self.clock.raw()
    }

    /// The current time, read only once every earlier load has completed. The cycle counter
    /// alone may be read early, while an earlier load is still waiting for its cache line: a
    /// task's start, read that way, could come before the end, on another core, of the
    /// predecessor whose completion that load observed (10–150 ns before it, in about one frame
    /// in 8,000 of a 2-worker fork-join: tests/python/test_trace_order.py). A task's start is read
    /// with this.
    #[inline]
    pub fn now_after_loads(&self) -> Ticks {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: LFENCE has no operands and no effect but ordering; every x86-64 CPU has SSE2.
        unsafe {
            std::arch::x86_64::_mm_lfence()
        };
        self.clock.raw()
    }

    /// Nanoseconds from the clock's creation to `ticks` (0 for ticks before it).
    #[inline]
    pub fn ns_since_start(&self, ticks: Ticks) -> u64 {
        if ticks <= self.start { 0 } else { self.clock.delta_as_nanos(self.start, ticks) }
    }

    /// A duration in ticks, in nanoseconds.
    #[inline]
    pub fn ticks_to_ns(&self, ticks: Ticks) -> u64 {
        self.clock.delta_as_nanos(0, ticks)
    }

    /// Nanoseconds between two tick readings (0 if `end` precedes `start`).
    #[inline]
    pub fn ns_between(&self, start: Ticks, end: Ticks) -> u64 {
        if end <= start { 0 } else { self.clock.delta_as_nanos(start, end) }
    }
}
