//! `broken`: a FIFO scheduler that breaks the scheduler contract on purpose, for the host's fault
//! tests (tomii-core/tests/faults.rs) only. Never use it to run anything.
//!
//! Option `fault` chooses the misbehaviour and `after` how many tasks are first handed out
//! correctly; see README.md. With `fault=none` it is a correct (if slow) FIFO: the control.

#![deny(unsafe_code)]

use std::collections::VecDeque;
use std::ffi::CStr;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tomii_types::abi::TomiiKnobDesc;
use tomii_types::scheduler::{InitInfo, Scheduler, Task, knob};

/// The handle `garbage` returns: the host never issues it.
pub const GARBAGE_HANDLE: u64 = u64::MAX;

/// How the scheduler breaks its contract, once `after` tasks were handed out correctly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Behaves: the control.
    None,
    /// Hands out a task with successors and keeps a copy at the front, so it is handed out again.
    Duplicate,
    /// Silently discards one pushed task: it is never handed out and the run stalls.
    Drop,
    /// Hands out a handle the host never issued ([`GARBAGE_HANDLE`]).
    Garbage,
    /// Hands a worker any task outside its allowed range that it holds (worker ranges ignored).
    WrongWorker,
    /// Panics inside `pop`.
    Panic,
    /// `push` returns `Err("injected error")`.
    Error,
    /// `push_keep` keeps an index past the tasks pushed.
    KeepOutOfRange,
    /// `push_keep` keeps a task the pushing worker may not run, if the push holds one.
    KeepWrongWorker,
}

impl Fault {
    const CHOICES: &'static [(&'static str, Fault)] = &[
        ("none", Fault::None),
        ("duplicate", Fault::Duplicate),
        ("drop", Fault::Drop),
        ("garbage", Fault::Garbage),
        ("wrong-worker", Fault::WrongWorker),
        ("panic", Fault::Panic),
        ("error", Fault::Error),
        ("keep-out-of-range", Fault::KeepOutOfRange),
        ("keep-wrong-worker", Fault::KeepWrongWorker),
    ];

    fn parse(text: &str) -> Result<Fault, String> {
        Fault::CHOICES.iter().find(|(name, _)| *name == text).map(|&(_, fault)| fault).ok_or_else(|| {
            let names: Vec<&str> = Fault::CHOICES.iter().map(|(name, _)| *name).collect();
            format!("invalid value {text:?} for scheduler option \"fault\"; expected one of {}", names.join("|"))
        })
    }
}

/// The queue and the count of tasks handed out, behind one lock.
#[derive(Default)]
struct Queue {
    tasks: VecDeque<Task>,
    /// Tasks handed out correctly so far.
    handed_out: u64,
    /// Whether a one-shot fault (duplicate, drop, garbage) already happened.
    fired: bool,
}

pub struct Broken {
    fault: Fault,
    after: u64,
    queue: Mutex<Queue>,
}

impl Broken {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the fault is due: `after` tasks were handed out and a one-shot fault has not fired.
    fn due(&self, queue: &Queue) -> bool {
        queue.handed_out >= self.after && !queue.fired
    }

    /// The misbehaving pop, when the fault is due and shows in `pop`; `None` to pop normally.
    fn misbehave(&self, queue: &mut Queue, worker: u32, out: &mut [Task]) -> Option<usize> {
        let position = match self.fault {
            Fault::Garbage => {
                out[0] = Task { handle: GARBAGE_HANDLE, ..Task::default() };
                queue.fired = true;
                return Some(1);
            }
            // A task with successors (rank > 1): its frame cannot end before the copy is handed out.
            Fault::Duplicate => queue.tasks.iter().position(|t| allowed(t, worker) && t.rank > 1)?,
            Fault::WrongWorker => queue.tasks.iter().position(|t| !allowed(t, worker))?,
            _ => return None,
        };
        let task = queue.tasks.remove(position)?;
        out[0] = task;
        if self.fault == Fault::Duplicate {
            // The first hand-out is correct; the copy at the front is the fault.
            queue.handed_out += 1;
            queue.tasks.push_front(task);
            queue.fired = true;
        }
        Some(1)
    }
}

/// Whether `worker` may run `task`.
fn allowed(task: &Task, worker: u32) -> bool {
    (task.worker_lo..task.worker_hi).contains(&worker)
}

impl Scheduler for Broken {
    const NAME: &'static CStr = c"broken";
    const KEEPS: bool = true;
    const KNOBS: &'static [TomiiKnobDesc] = &[
        knob(
            c"fault",
            c"choice",
            c"none",
            c"none|duplicate|drop|garbage|wrong-worker|panic|error|keep-out-of-range|keep-wrong-worker",
            c"How to break the scheduler contract once `after` tasks were handed out correctly.",
        ),
        knob(c"after", c"int", c"5", c"0..18446744073709551615", c"Tasks handed out correctly before the fault."),
    ];

    fn create(init: &InitInfo) -> Result<Self, String> {
        let fault = init.knob("fault").map_or(Ok(Fault::None), Fault::parse)?;
        let after = init.knob_or("after", 5u64)?;
        Ok(Broken { fault, after, queue: Mutex::default() })
    }

    fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        let mut queue = self.lock();
        let due = self.due(&queue);
        match self.fault {
            Fault::Error if due => return Err("injected error".to_owned()),
            Fault::Drop if due && !tasks.is_empty() => {
                queue.fired = true;
                queue.tasks.extend(&tasks[1..]);
            }
            _ => queue.tasks.extend(tasks),
        }
        Ok(())
    }

    /// Pushes as `push` does, unless a `keep-*` fault is due: then keeps a bad task.
    fn push_keep(&self, worker: u32, tasks: &[Task]) -> Result<Option<usize>, String> {
        let kept = match self.fault {
            _ if !self.due(&self.lock()) => None,
            Fault::KeepOutOfRange => Some(tasks.len()),
            Fault::KeepWrongWorker => tasks.iter().position(|t| !allowed(t, worker)),
            _ => None,
        };
        let Some(kept) = kept else { return self.push(Some(worker), tasks).map(|()| None) };
        let mut queue = self.lock();
        queue.fired = true;
        queue.tasks.extend(tasks.iter().enumerate().filter(|&(index, _)| index != kept).map(|(_, t)| *t));
        Ok(Some(kept))
    }

    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        if out.is_empty() {
            return Ok(0);
        }
        let mut queue = self.lock();
        if self.due(&queue) {
            if self.fault == Fault::Panic {
                drop(queue); // never poison the lock
                panic!("injected panic");
            }
            if let Some(count) = self.misbehave(&mut queue, worker, out) {
                return Ok(count);
            }
        }
        let mut count = 0;
        let mut index = 0;
        while count < out.len() && index < queue.tasks.len() {
            if allowed(&queue.tasks[index], worker) {
                out[count] = queue.tasks.remove(index).unwrap_or_default();
                count += 1;
            } else {
                index += 1;
            }
        }
        queue.handed_out += count as u64;
        Ok(count)
    }
}

tomii_types::export_scheduler!(Broken);

#[cfg(test)]
mod tests {
    use tomii_types::scheduler::testing::{create, init, pop_once, task};

    use super::*;

    /// A task allowed on workers `range` with `rank` tasks on its longest path (itself included).
    fn ranked(handle: u64, rank: u64, range: (u32, u32)) -> Task {
        Task { rank, ..task(handle, range) }
    }

    #[test]
    fn bogus_fault_names_the_choices() {
        let error = Broken::create(&init(2, &[], &[("fault", "bogus")])).err().unwrap();
        assert!(error.contains("\"bogus\"") && error.contains("wrong-worker"), "{error}");
    }

    #[test]
    fn duplicate_hands_out_a_task_twice_after_the_correct_ones() {
        let s: Broken = create(2, &[], &[("fault", "duplicate"), ("after", "1")]);
        s.push(None, &[ranked(1, 2, (0, 2)), ranked(2, 2, (0, 2)), ranked(3, 1, (0, 2))]).unwrap();
        let handles: Vec<u64> = (0..4).flat_map(|_| pop_once(&s, 0, 1)).collect();
        assert_eq!(handles, [1, 2, 2, 3]);
    }

    #[test]
    fn drop_loses_one_pushed_task() {
        let s: Broken = create(2, &[], &[("fault", "drop"), ("after", "0")]);
        s.push(None, &[ranked(1, 1, (0, 2)), ranked(2, 1, (0, 2))]).unwrap();
        s.push(None, &[ranked(3, 1, (0, 2))]).unwrap();
        let handles: Vec<u64> = (0..3).flat_map(|_| pop_once(&s, 0, 1)).collect();
        assert_eq!(handles, [2, 3]);
    }

    #[test]
    fn wrong_worker_prefers_tasks_outside_the_range() {
        let s: Broken = create(2, &[], &[("fault", "wrong-worker"), ("after", "0")]);
        s.push(None, &[ranked(1, 1, (0, 2)), ranked(2, 1, (1, 2))]).unwrap();
        assert_eq!(pop_once(&s, 0, 1), [2]);
    }

    #[test]
    fn garbage_error_and_panic_happen_after_the_correct_pops() {
        let s: Broken = create(2, &[], &[("fault", "garbage"), ("after", "1")]);
        s.push(None, &[ranked(1, 1, (0, 2)), ranked(2, 1, (0, 2))]).unwrap();
        assert_eq!(pop_once(&s, 0, 1), [1]);
        assert_eq!(pop_once(&s, 0, 1), [GARBAGE_HANDLE]);
        let s: Broken = create(2, &[], &[("fault", "error"), ("after", "0")]);
        assert_eq!(s.push(None, &[ranked(1, 1, (0, 2))]), Err("injected error".to_owned()));
        let s: Broken = create(2, &[], &[("fault", "panic"), ("after", "0")]);
        assert!(std::panic::catch_unwind(|| pop_once(&s, 0, 1)).is_err());
    }
}
