//! The process's worker threads, kept between runs (README.md, "The worker pool"): a run hires
//! one parked thread per worker index, hands each its part of the run, and gets it back when that
//! part returned. It must never hand a run to a thread whose previous job has not returned, nor
//! give back a thread the host found stuck in a call.
//!
//! # Memory ordering
//! A job goes to its thread through the hand's mutex (the mutex orders it). The latch's `left`
//! is decremented with `Release` by each job after its last touch of the run and read with
//! `Acquire` by the host, so everything a job did happens before the host's return from
//! [`Crew::run`]. `retired` flags are only advisory for the thread's own fate: `SeqCst` on both
//! sides, so a flag set before the thread looks is seen.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;

/// A run's part for one worker: `work(worker)`. The borrow's lifetime is erased (see `Crew::run`).
struct Job {
    work: &'static (dyn Fn(u32) + Sync),
    worker: u32,
    latch: Arc<Latch>,
}

/// One pooled thread: where its next job is put, and how to wake it.
struct Hand {
    worker: u32,
    job: Mutex<Option<Job>>,
    thread: Thread,
}

/// Idle threads, per worker index, of the process `pid`.
struct Idle {
    pid: u32,
    hands: Vec<Vec<Arc<Hand>>>,
}

static IDLE: Mutex<Idle> = Mutex::new(Idle { pid: 0, hands: Vec::new() });

/// The idle threads of this process. A child forked from a process with a pool has only the
/// forking thread: the hands it inherited name threads it does not have, and a job handed to one
/// would never run. They are forgotten (leaked, never touched), and the child starts its own.
/// (A fork while another thread held this lock leaves it held in the child, as for any lock.)
fn idle() -> std::sync::MutexGuard<'static, Idle> {
    let mut idle = IDLE.lock().unwrap_or_else(|p| p.into_inner());
    let pid = std::process::id();
    if idle.pid != pid {
        std::mem::forget(std::mem::take(&mut idle.hands));
        idle.pid = pid;
    }
    idle
}

/// What the host of a run waits on: how many jobs have not released yet, and which workers were
/// found stuck (their threads end instead of going back to the pool).
struct Latch {
    left: AtomicU32,
    host: Thread,
    retired: Box<[AtomicBool]>,
}

impl Latch {
    /// The job's last touch of the run.
    fn release(&self) {
        if self.left.fetch_sub(1, Ordering::Release) == 1 {
            self.host.unpark();
        }
    }
}

/// Threads hired for one run, not yet working.
pub struct Crew {
    hands: Vec<Arc<Hand>>,
}

/// The crew while it works: what the host may do meanwhile.
pub struct Running<'c> {
    latch: &'c Latch,
}

impl Running<'_> {
    /// Marks `worker` as found stuck in a call: its thread ends when (if ever) its job returns.
    pub fn retire(&self, worker: u32) {
        if let Some(flag) = self.latch.retired.get(worker as usize) {
            flag.store(true, Ordering::SeqCst);
        }
    }
}

/// Hires one thread per worker index `0..workers`: an idle one, or a new one. On failure to start
/// a thread, those hired go back to the pool.
pub fn hire(workers: u32) -> std::io::Result<Crew> {
    let mut crew = Crew { hands: Vec::with_capacity(workers as usize) };
    let mut missing = Vec::new();
    {
        let mut idle = idle();
        for worker in 0..workers {
            match idle.hands.get_mut(worker as usize).and_then(Vec::pop) {
                Some(hand) => crew.hands.push(hand),
                None => missing.push(worker),
            }
        }
    }
    for worker in missing {
        crew.hands.push(start(worker)?); // on failure, `crew`'s drop gives back those hired
    }
    Ok(crew)
}

impl Crew {
    /// No threads: a run that could not hire its workers.
    pub fn none() -> Self {
        Crew { hands: Vec::new() }
    }

    /// How many threads were hired.
    pub fn len(&self) -> u32 {
        self.hands.len() as u32
    }

    /// Hands `work(i)` to worker `i` of the crew, runs `host` on this thread meanwhile, and returns
    /// its result once every worker returned from `work`, also when `host` unwinds (it must make
    /// the workers return then: the engine stops the run).
    pub fn run<R>(mut self, work: &(dyn Fn(u32) + Sync), host: impl FnOnce(&Running<'_>) -> R) -> R {
        let hands = std::mem::take(&mut self.hands);
        let latch = Arc::new(Latch {
            left: AtomicU32::new(hands.len() as u32),
            host: std::thread::current(),
            retired: hands.iter().map(|_| AtomicBool::new(false)).collect(),
        });
        // SAFETY: only the lifetime is changed. `Wait` below does not let this function return or
        // unwind before every job released the latch, and a job touches `work` only before its
        // release (`serve`), so `work` is never used after the borrow ends (README.md, "Why the
        // borrow is sound").
        let work: &'static (dyn Fn(u32) + Sync) = unsafe { std::mem::transmute(work) };
        let wait = Wait(&latch);
        for hand in &hands {
            let job = Job { work, worker: hand.worker, latch: Arc::clone(&latch) };
            *hand.job.lock().unwrap_or_else(|p| p.into_inner()) = Some(job);
            hand.thread.unpark();
        }
        drop(hands);
        let result = host(&Running { latch: &latch });
        drop(wait);
        result
    }
}

impl Drop for Crew {
    /// Threads hired and never handed a job go back to the pool.
    fn drop(&mut self) {
        let hands = std::mem::take(&mut self.hands);
        hands.into_iter().for_each(give_back);
    }
}

/// Waits, when dropped, until every job of the latch released it.
struct Wait<'l>(&'l Latch);

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        while self.0.left.load(Ordering::Acquire) != 0 {
            std::thread::park();
        }
    }
}

/// Starts the thread of a new hand for `worker`.
fn start(worker: u32) -> std::io::Result<Arc<Hand>> {
    let (sender, receiver) = std::sync::mpsc::sync_channel::<Arc<Hand>>(1);
    let thread =
        std::thread::Builder::new().name(format!("{}{worker}", tomii_types::WORKER_PREFIX)).spawn(move || {
            if let Ok(hand) = receiver.recv() {
                serve(&hand);
            }
        })?;
    let hand = Arc::new(Hand { worker, job: Mutex::new(None), thread: thread.thread().clone() });
    let _ = sender.send(Arc::clone(&hand));
    Ok(hand)
}

/// A pooled thread's life: take a job, run it, go back to the pool, release the run; until a run
/// retires it.
fn serve(hand: &Arc<Hand>) {
    loop {
        let job = take_job(hand);
        // The engine's work catches its own panics; this one only keeps the latch honest.
        let _ = catch_unwind(AssertUnwindSafe(|| (job.work)(job.worker)));
        let retired = job.latch.retired[job.worker as usize].load(Ordering::SeqCst);
        if !retired {
            give_back(Arc::clone(hand));
        }
        job.latch.release();
        if retired {
            return;
        }
    }
}

/// Parks until a job is in the hand's slot, and takes it.
fn take_job(hand: &Hand) -> Job {
    loop {
        if let Some(job) = hand.job.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return job;
        }
        std::thread::park();
    }
}

/// Puts `hand` back on its index's idle list.
fn give_back(hand: Arc<Hand>) {
    let mut idle = idle();
    let index = hand.worker as usize;
    if idle.hands.len() <= index {
        idle.hands.resize_with(index + 1, Vec::new);
    }
    idle.hands[index].push(hand);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::thread::ThreadId;

    /// Runs a crew of `workers`, retiring `retire` while its job runs (as the host retires a worker
    /// stuck in a call); the name and id of each worker's thread.
    fn names_and_ids(workers: u32, retire: Option<u32>) -> Vec<(String, ThreadId)> {
        let seen = Mutex::new(vec![None; workers as usize]);
        let retired = AtomicBool::new(false);
        let work = |worker: u32| {
            let me = std::thread::current();
            seen.lock().unwrap()[worker as usize] = Some((me.name().unwrap_or_default().to_owned(), me.id()));
            while retire == Some(worker) && !retired.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
        };
        hire(workers).expect("threads").run(&work, |crew| {
            retire.iter().for_each(|&w| crew.retire(w));
            retired.store(true, Ordering::SeqCst);
        });
        seen.into_inner().unwrap().into_iter().map(|seen| seen.expect("every worker ran")).collect()
    }

    #[test]
    fn every_worker_runs_once_on_a_thread_named_after_its_index() {
        for workers in [1, 3, 2] {
            for (worker, (name, _)) in names_and_ids(workers, None).iter().enumerate() {
                assert_eq!(name, &format!("{}{worker}", tomii_types::WORKER_PREFIX));
            }
        }
    }

    #[test]
    fn a_retired_thread_is_never_hired_again() {
        let retired = names_and_ids(2, Some(1))[1].1;
        for _ in 0..20 {
            assert!(names_and_ids(2, None).iter().all(|(_, id)| *id != retired));
        }
    }

    #[test]
    fn runs_on_several_threads_at_once_each_get_their_own_workers() {
        let runs = AtomicU64::new(0);
        std::thread::scope(|scope| {
            for workers in 1..=4 {
                let runs = &runs;
                scope.spawn(move || {
                    for _ in 0..25 {
                        let ran: Vec<AtomicU32> = (0..workers).map(|_| AtomicU32::new(0)).collect();
                        hire(workers).expect("threads").run(
                            &|worker| {
                                ran[worker as usize].fetch_add(1, Ordering::Relaxed);
                            },
                            |_| {},
                        );
                        assert!(ran.iter().all(|count| count.load(Ordering::Relaxed) == 1));
                        runs.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(runs.into_inner(), 100);
    }

    #[test]
    fn the_host_unwinding_still_waits_for_its_workers() {
        let finished = AtomicBool::new(false);
        let unwound = catch_unwind(AssertUnwindSafe(|| {
            hire(1).expect("threads").run(
                &|_| {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    finished.store(true, Ordering::SeqCst);
                },
                |_| panic!("the host fails"),
            )
        }));
        assert!(unwound.is_err());
        assert!(finished.load(Ordering::SeqCst), "run returned before its worker did");
    }
}
