//! Who is inside the checker: every call (push, pop, the hooks, stats, set_knob) enters on
//! arrival and leaves on return, so a call that arrives while another is inside is seen. For a
//! SERIAL scheduler that is a broken promise of the host.
//!
//! # Memory ordering
//! `inside` is a counter whose only reader is the same `fetch_add` that changes it: `Relaxed`
//! suffices, since it orders nothing else. `running` and `most` are for messages and statistics.

#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU32, Ordering};

/// The calls into the checker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Push,
    Pop,
    TaskStarted,
    TaskCompleted,
    FrameStarted,
    FrameCompleted,
    Stats,
    SetKnob,
}

impl Call {
    /// Every call, in the order of their numbers.
    const ALL: [Call; 8] = [
        Call::Push,
        Call::Pop,
        Call::TaskStarted,
        Call::TaskCompleted,
        Call::FrameStarted,
        Call::FrameCompleted,
        Call::Stats,
        Call::SetKnob,
    ];

    /// The call's name in the ABI.
    pub fn name(self) -> &'static str {
        match self {
            Call::Push => "push",
            Call::Pop => "pop",
            Call::TaskStarted => "task_started",
            Call::TaskCompleted => "task_completed",
            Call::FrameStarted => "frame_started",
            Call::FrameCompleted => "frame_completed",
            Call::Stats => "stats",
            Call::SetKnob => "set_knob",
        }
    }
}

/// A count of the calls inside the checker.
#[derive(Default)]
pub struct Occupancy {
    inside: AtomicU32,
    /// The number (`Call as u32`) of the call that entered last.
    running: AtomicU32,
    /// The most calls seen inside at once.
    most: AtomicU32,
}

/// A call inside; it leaves when this is dropped.
pub struct Inside<'a>(&'a Occupancy);

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.inside.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Occupancy {
    /// `call` enters. With it: the call that was already inside, if one was.
    pub fn enter(&self, call: Call) -> (Inside<'_>, Option<Call>) {
        let before = self.inside.fetch_add(1, Ordering::Relaxed);
        let other = self.running.swap(call as u32, Ordering::Relaxed);
        self.most.fetch_max(before + 1, Ordering::Relaxed);
        (Inside(self), (before > 0).then(|| Call::ALL[other as usize]))
    }

    /// The most calls that were inside at once.
    pub fn most(&self) -> u32 {
        self.most.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_arriving_while_another_is_inside_is_seen() {
        let occupancy = Occupancy::default();
        let (first, none) = occupancy.enter(Call::Pop);
        assert_eq!(none, None);
        let (second, other) = occupancy.enter(Call::TaskStarted);
        assert_eq!(other, Some(Call::Pop));
        drop((first, second));
        assert_eq!(occupancy.enter(Call::Push).1, None);
        assert_eq!(occupancy.most(), 2);
    }
}
