//! What the checker saw, and the promises about hooks it checks against it: every task pushed,
//! popped, started and completed, every frame started and completed, and the first broken
//! promise. Plain safe Rust behind one mutex (`lib.rs` holds it for each call, never across a call
//! into the wrapped scheduler); never on anyone's hot path but a test's.

#![forbid(unsafe_code)]

use std::collections::HashMap;

use tomii_types::abi::{TOMII_NO_WORKER, TomiiTask};

/// Where a task is between its push and its completion (a completed task is forgotten).
#[derive(Clone, Copy, Debug)]
enum Stage {
    Pushed,
    /// Popped by `worker`, as `task` (the descriptor its hooks must carry).
    Popped {
        worker: u32,
        task: TomiiTask,
    },
    Started {
        worker: u32,
    },
}

impl Stage {
    fn describe(&self) -> String {
        match self {
            Stage::Pushed => "pushed but not popped".to_owned(),
            Stage::Popped { worker, .. } => format!("popped by worker {worker} but not started"),
            Stage::Started { worker } => format!("started on worker {worker} but not completed"),
        }
    }
}

/// One frame between its `frame_started` and its `frame_completed`.
struct Frame {
    slot: u32,
    completed: bool,
    /// The frame's tasks not yet completed, by handle.
    tasks: HashMap<u64, Stage>,
}

/// How many times each call was seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub pushed: u64,
    pub popped: u64,
    pub task_started: u64,
    pub task_completed: u64,
    pub frame_started: u64,
    pub frame_completed: u64,
}

/// The record of one run, and the promises it checks.
pub struct Ledger {
    workers: u32,
    /// Per slot, the frame that holds it.
    holders: Vec<Option<u64>>,
    frames: HashMap<u64, Frame>,
    /// The descriptors pushed and not yet popped, by handle: a wrapped scheduler that pops
    /// handles only (`TOMII_SCHED_POP_HANDLES`) gets them back whole from here.
    pushed_as: HashMap<u64, TomiiTask>,
    counts: Counts,
    violations: u64,
    first_violation: Option<String>,
}

/// "task 0x… (node 2, instance 1, frame 7)".
fn name(task: &TomiiTask) -> String {
    format!("task {:#x} (node {}, instance {}, frame {})", task.handle, task.node, task.instance, task.frame)
}

impl Ledger {
    /// The record of a run with `workers` workers and `slots` slots.
    pub fn new(workers: u32, slots: u32) -> Ledger {
        Ledger {
            workers,
            holders: vec![None; slots as usize],
            frames: HashMap::new(),
            pushed_as: HashMap::new(),
            counts: Counts::default(),
            violations: 0,
            first_violation: None,
        }
    }

    /// Records a broken promise; the first one is kept for the error message.
    pub fn broken(&mut self, violation: String) {
        self.violations += 1;
        self.first_violation.get_or_insert(violation);
    }

    /// The first broken promise, if any.
    pub fn violation(&self) -> Option<&str> {
        self.first_violation.as_deref()
    }

    pub fn counts(&self) -> Counts {
        self.counts
    }

    pub fn violations(&self) -> u64 {
        self.violations
    }

    /// Frames started and not completed.
    pub fn frames_in_flight(&self) -> usize {
        self.frames.values().filter(|frame| !frame.completed).count()
    }

    /// Tasks pushed and not completed.
    pub fn tasks_in_flight(&self) -> usize {
        self.frames.values().map(|frame| frame.tasks.len()).sum()
    }

    /// `worker` pushed `tasks`: each belongs to a frame in flight, in its slot, and is new.
    pub fn pushed(&mut self, worker: u32, tasks: &[TomiiTask]) {
        if worker != TOMII_NO_WORKER && worker >= self.workers {
            self.broken(format!("push from worker {worker}, in a run of {} workers", self.workers));
        }
        for task in tasks {
            self.counts.pushed += 1;
            self.pushed_as.insert(task.handle, *task);
            let problem = match self.frames.get_mut(&task.frame) {
                None => Some(format!("{} was pushed before frame_started of its frame", name(task))),
                Some(frame) if frame.completed => {
                    Some(format!("{} was pushed after frame_completed of its frame", name(task)))
                }
                Some(frame) if frame.slot != task.slot => Some(format!(
                    "{} was pushed with slot {}, but frame_started gave its frame slot {}",
                    name(task),
                    task.slot,
                    frame.slot
                )),
                Some(frame) => frame
                    .tasks
                    .insert(task.handle, Stage::Pushed)
                    .map(|before| format!("{} was pushed again while {}", name(task), before.describe())),
            };
            if let Some(problem) = problem {
                self.broken(problem);
            }
        }
    }

    /// Rewrites each of `tasks`, popped by a wrapped scheduler that writes handles only, as the
    /// descriptor pushed with its handle (one never pushed is left as it is, and `popped` then
    /// reports it).
    pub fn restore(&mut self, tasks: &mut [TomiiTask]) {
        for task in tasks {
            if let Some(pushed) = self.pushed_as.remove(&task.handle) {
                *task = pushed;
            }
        }
    }

    /// The wrapped scheduler handed `tasks` to `worker`: each was pushed and not yet popped.
    pub fn popped(&mut self, worker: u32, tasks: &[TomiiTask]) {
        for task in tasks {
            self.counts.popped += 1;
            let problem = match self.stage(task) {
                Some(Stage::Pushed) => {
                    self.set_stage(task, Stage::Popped { worker, task: *task });
                    None
                }
                Some(other) => Some(format!("{} was popped again while {}", name(task), other.describe())),
                None => Some(format!("{} was popped but never pushed (or already completed)", name(task))),
            };
            if let Some(problem) = problem {
                self.broken(problem);
            }
        }
    }

    /// `task_started(worker, task)`: the task was popped by `worker`, as this descriptor, and
    /// has not started yet.
    pub fn task_started(&mut self, worker: u32, task: &TomiiTask) {
        self.counts.task_started += 1;
        let problem = match self.stage(task) {
            Some(Stage::Popped { worker: popper, task: popped }) if popper == worker && popped == *task => {
                self.set_stage(task, Stage::Started { worker });
                None
            }
            Some(Stage::Popped { worker: popper, .. }) if popper != worker => {
                Some(format!("task_started for {} on worker {worker}, but worker {popper} popped it", name(task)))
            }
            Some(Stage::Popped { .. }) => {
                Some(format!("task_started for {} with a descriptor other than the one popped", name(task)))
            }
            Some(Stage::Started { .. }) => Some(format!("task_started twice for {}", name(task))),
            Some(Stage::Pushed) => Some(format!("task_started for {} before it was popped", name(task))),
            None => Some(format!("task_started for {}, which was never popped (or already completed)", name(task))),
        };
        if let Some(problem) = problem {
            self.broken(problem);
        }
    }

    /// `task_completed(worker, task)`: the task started on `worker` and has not completed yet.
    pub fn task_completed(&mut self, worker: u32, task: &TomiiTask) {
        self.counts.task_completed += 1;
        let problem = match self.stage(task) {
            Some(Stage::Started { worker: starter }) if starter == worker => {
                self.frames.get_mut(&task.frame).expect("the task's frame is known").tasks.remove(&task.handle);
                None
            }
            Some(Stage::Started { worker: starter }) => Some(format!(
                "task_completed for {} on worker {worker}, but it started on worker {starter}",
                name(task)
            )),
            Some(other) => Some(format!("task_completed for {} while {}", name(task), other.describe())),
            None => Some(format!("task_completed for {}, which was never started (or already completed)", name(task))),
        };
        if let Some(problem) = problem {
            self.broken(problem);
        }
    }

    /// `frame_started(frame, slot)`: a new frame, in a slot that exists and is free.
    pub fn frame_started(&mut self, frame: u64, slot: u32) {
        self.counts.frame_started += 1;
        let slots = self.holders.len();
        let problem = if self.frames.contains_key(&frame) {
            Some(format!("frame_started twice for frame {frame}"))
        } else {
            match self.holders.get(slot as usize).copied() {
                None => Some(format!("frame_started for frame {frame} in slot {slot}, in a run of {slots} slots")),
                Some(Some(holder)) => {
                    Some(format!("frame_started for frame {frame} in slot {slot}, which frame {holder} still holds"))
                }
                Some(None) => {
                    self.holders[slot as usize] = Some(frame);
                    self.frames.insert(frame, Frame { slot, completed: false, tasks: HashMap::new() });
                    None
                }
            }
        };
        if let Some(problem) = problem {
            self.broken(problem);
        }
    }

    /// `frame_completed(frame, slot)`: the frame is in flight in `slot`, and every task of it that
    /// was pushed has completed.
    pub fn frame_completed(&mut self, frame: u64, slot: u32) {
        self.counts.frame_completed += 1;
        let problem = match self.frames.get_mut(&frame) {
            None => Some(format!("frame_completed for frame {frame}, which never started")),
            Some(record) if record.completed => Some(format!("frame_completed twice for frame {frame}")),
            Some(record) if record.slot != slot => Some(format!(
                "frame_completed for frame {frame} in slot {slot}, but it started in slot {}",
                record.slot
            )),
            Some(record) => {
                record.completed = true;
                self.holders[slot as usize] = None;
                let unfinished = record.tasks.iter().min_by_key(|(handle, _)| **handle).map(|(handle, stage)| {
                    format!(
                        "frame_completed for frame {frame} while task {handle:#x} of it was {} ({} tasks of the frame not completed)",
                        stage.describe(),
                        record.tasks.len()
                    )
                });
                record.tasks = HashMap::new();
                unfinished
            }
        };
        if let Some(problem) = problem {
            self.broken(problem);
        }
    }

    /// The stage of `task` in its frame, if the ledger knows it.
    fn stage(&self, task: &TomiiTask) -> Option<Stage> {
        self.frames.get(&task.frame)?.tasks.get(&task.handle).copied()
    }

    /// Moves `task`, which the ledger knows, to `stage`.
    fn set_stage(&mut self, task: &TomiiTask, stage: Stage) {
        self.frames.get_mut(&task.frame).expect("the task's frame is known").tasks.insert(task.handle, stage);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(handle: u64, frame: u64, slot: u32) -> TomiiTask {
        TomiiTask { handle, frame, slot, worker_hi: 2, ..TomiiTask::default() }
    }

    /// A ledger of 2 workers and 2 slots with frame 0 started in slot 0 and `t` pushed and popped
    /// by worker 1.
    fn popped(t: &TomiiTask) -> Ledger {
        let mut ledger = Ledger::new(2, 2);
        ledger.frame_started(0, 0);
        ledger.pushed(TOMII_NO_WORKER, &[*t]);
        ledger.popped(1, &[*t]);
        ledger
    }

    fn assert_broken(ledger: &Ledger, needle: &str) {
        let violation = ledger.violation().unwrap_or_else(|| panic!("no violation; expected {needle:?}"));
        assert!(violation.contains(needle), "{violation:?} does not say {needle:?}");
    }

    #[test]
    fn a_correct_life_breaks_nothing() {
        let t = task(7, 0, 0);
        let mut ledger = popped(&t);
        ledger.task_started(1, &t);
        ledger.task_completed(1, &t);
        ledger.frame_completed(0, 0);
        ledger.frame_started(1, 0);
        assert_eq!(ledger.violation(), None);
        assert_eq!((ledger.frames_in_flight(), ledger.tasks_in_flight()), (1, 0));
        let counts = ledger.counts();
        assert_eq!((counts.popped, counts.task_started, counts.task_completed, counts.frame_started), (1, 1, 1, 2));
    }

    #[test]
    fn a_task_started_twice_or_elsewhere_or_unpopped_is_caught() {
        let t = task(7, 0, 0);
        let mut ledger = popped(&t);
        ledger.task_started(1, &t);
        ledger.task_started(1, &t);
        assert_broken(&ledger, "task_started twice");

        let mut ledger = popped(&t);
        ledger.task_started(0, &t);
        assert_broken(&ledger, "on worker 0, but worker 1 popped it");

        let mut ledger = popped(&t);
        ledger.task_started(1, &TomiiTask { rank: 9, ..t });
        assert_broken(&ledger, "descriptor other than the one popped");

        let mut ledger = popped(&t);
        ledger.task_started(1, &task(8, 0, 0));
        assert_broken(&ledger, "never popped");
    }

    #[test]
    fn a_completion_without_its_start_or_twice_is_caught() {
        let t = task(7, 0, 0);
        let mut ledger = popped(&t);
        ledger.task_completed(1, &t);
        assert_broken(&ledger, "task_completed for task 0x7 (node 0, instance 0, frame 0) while popped by worker 1");

        let mut ledger = popped(&t);
        ledger.task_started(1, &t);
        ledger.task_completed(1, &t);
        ledger.task_completed(1, &t);
        assert_broken(&ledger, "never started (or already completed)");
    }

    #[test]
    fn a_frame_completed_before_its_tasks_is_caught() {
        let t = task(7, 0, 0);
        let mut ledger = popped(&t);
        ledger.task_started(1, &t);
        ledger.frame_completed(0, 0);
        assert_broken(&ledger, "while task 0x7 of it was started on worker 1 but not completed");
    }

    #[test]
    fn pushes_outside_a_started_frame_are_caught() {
        let mut ledger = Ledger::new(2, 2);
        ledger.pushed(0, &[task(1, 0, 0)]);
        assert_broken(&ledger, "pushed before frame_started");

        let mut ledger = Ledger::new(2, 2);
        ledger.frame_started(0, 1);
        ledger.pushed(0, &[task(1, 0, 0)]);
        assert_broken(&ledger, "frame_started gave its frame slot 1");

        let mut ledger = Ledger::new(2, 2);
        ledger.frame_started(0, 0);
        ledger.frame_completed(0, 0);
        ledger.pushed(0, &[task(1, 0, 0)]);
        assert_broken(&ledger, "pushed after frame_completed");
    }

    #[test]
    fn slots_hold_one_frame_at_a_time() {
        let mut ledger = Ledger::new(2, 2);
        ledger.frame_started(0, 0);
        ledger.frame_started(1, 0);
        assert_broken(&ledger, "slot 0, which frame 0 still holds");

        let mut ledger = Ledger::new(2, 2);
        ledger.frame_started(0, 2);
        assert_broken(&ledger, "in a run of 2 slots");

        let mut ledger = Ledger::new(2, 2);
        ledger.frame_started(0, 0);
        ledger.frame_completed(0, 0);
        ledger.frame_completed(0, 0);
        assert_broken(&ledger, "frame_completed twice");
    }
}
