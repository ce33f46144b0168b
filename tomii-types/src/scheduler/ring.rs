//! [`HandleRing`]: a bounded multi-producer, multi-consumer queue of task handles, first in, first
//! out, for central-queue policies (`fifo` keeps one per worker-range class).
//!
//! It is D. Vyukov's bounded MPMC queue: a ring of cells, each a sequence number and a value, and
//! two counters, `tail` (the next push) and `head` (the next pop). A cell whose sequence equals
//! `tail` is free for that push; one whose sequence equals `head + 1` holds the value for that pop.
//! A push or a pop is one compare-and-swap of its counter, a load and a store of the cell, and no
//! backoff (a push that finds its cell still being emptied, or a pop that finds it still being
//! filled, waits the few instructions until it is, as `ArrayQueue` does: "full" and "empty" are
//! only said of a ring that is): an uncontended push or pop is a dozen instructions, against ≈ 45 for
//! `crossbeam_queue::ArrayQueue`'s generic one (bench/README.md, "Instructions per task").
//! Values are `u64` handles held in atomics, so nothing here is `unsafe`.
//!
//! # Memory ordering
//! A push stores the value Relaxed and then the cell's sequence Release; a pop loads the sequence
//! Acquire before it loads the value, so it sees the value of the push whose sequence it saw. A
//! pop stores the cell's next sequence Release after it loaded the value, and the next push of
//! that cell loads it Acquire, so the value is never overwritten before it was read. The counters
//! themselves only hand out positions: Relaxed.

#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// One cell of the ring: its sequence number and the handle it holds.
struct Cell {
    sequence: AtomicUsize,
    value: AtomicU64,
}

/// A counter on a cache line of its own, so that pushes and pops do not share one.
#[repr(align(128))]
struct Padded(AtomicUsize);

/// A bounded FIFO of `u64` handles, safe to push and pop from any number of threads.
pub struct HandleRing {
    cells: Box<[Cell]>,
    /// `cells.len() - 1`; the length is a power of two.
    mask: usize,
    head: Padded,
    tail: Padded,
}

impl HandleRing {
    /// A ring with room for at least `capacity` handles (at least 1; rounded up to a power of two).
    pub fn new(capacity: usize) -> HandleRing {
        let len = capacity.max(1).next_power_of_two();
        let cells = (0..len).map(|i| Cell { sequence: AtomicUsize::new(i), value: AtomicU64::new(0) }).collect();
        HandleRing { cells, mask: len - 1, head: Padded(AtomicUsize::new(0)), tail: Padded(AtomicUsize::new(0)) }
    }

    /// Its counters of pushes and pops, through which a host sees whether it is empty without a
    /// call ([`Scheduler::keep_gate`](super::Scheduler::keep_gate)): `tail` and `head`, which are equal
    /// when nothing waits (a push under way already counts).
    pub fn keep_gate(&self) -> super::KeepGate<'_> {
        super::KeepGate { queued: &self.tail.0, taken: &self.head.0 }
    }

    /// How many handles it can hold.
    pub fn capacity(&self) -> usize {
        self.cells.len()
    }

    /// Appends `handle`; gives it back when the ring is full.
    #[inline]
    pub fn push(&self, handle: u64) -> Result<(), u64> {
        let mut position = self.tail.0.load(Ordering::Relaxed);
        loop {
            let cell = &self.cells[position & self.mask];
            let sequence = cell.sequence.load(Ordering::Acquire);
            match sequence.wrapping_sub(position) as isize {
                0 => match self.tail.0.compare_exchange_weak(
                    position,
                    position.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        cell.value.store(handle, Ordering::Relaxed);
                        cell.sequence.store(position.wrapping_add(1), Ordering::Release);
                        return Ok(());
                    }
                    Err(now) => position = now,
                },
                // The cell still holds the value of a push one lap ago: the ring is full, unless
                // the pop that took that value has not yet released the cell (then it is about to).
                lag if lag < 0 => {
                    if self.head.0.load(Ordering::Relaxed).wrapping_add(self.cells.len()) == position {
                        return Err(handle);
                    }
                    std::hint::spin_loop();
                    position = self.tail.0.load(Ordering::Relaxed);
                }
                // Another push took this position: try the current tail.
                _ => position = self.tail.0.load(Ordering::Relaxed),
            }
        }
    }

    /// Takes the oldest handle, if any.
    #[inline]
    pub fn pop(&self) -> Option<u64> {
        let mut position = self.head.0.load(Ordering::Relaxed);
        loop {
            let cell = &self.cells[position & self.mask];
            let sequence = cell.sequence.load(Ordering::Acquire);
            match sequence.wrapping_sub(position.wrapping_add(1)) as isize {
                0 => match self.head.0.compare_exchange_weak(
                    position,
                    position.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        let handle = cell.value.load(Ordering::Relaxed);
                        cell.sequence.store(position.wrapping_add(self.mask + 1), Ordering::Release);
                        return Some(handle);
                    }
                    Err(now) => position = now,
                },
                // No push has filled this position yet: the ring is empty, unless a push took the
                // position and has not yet released its value (then it is about to).
                lag if lag < 0 => {
                    if self.tail.0.load(Ordering::Relaxed) == position {
                        return None;
                    }
                    std::hint::spin_loop();
                    position = self.head.0.load(Ordering::Relaxed);
                }
                // Another pop took this position: try the current head.
                _ => position = self.head.0.load(Ordering::Relaxed),
            }
        }
    }

    /// How many handles the ring held when looked at: exact when nobody pushes or pops meanwhile,
    /// a hint otherwise (a push or pop under way may or may not be counted).
    #[inline]
    pub fn len(&self) -> usize {
        let head = self.head.0.load(Ordering::Relaxed);
        let tail = self.tail.0.load(Ordering::Relaxed);
        // The two loads are not one snapshot: a pop between them can make `head` pass the `tail`
        // loaded before it.
        (tail.wrapping_sub(head) as isize).clamp(0, self.cells.len() as isize) as usize
    }

    /// Whether the ring looked empty: exact when nobody pushes or pops meanwhile, a hint otherwise.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head.0.load(Ordering::Relaxed) == self.tail.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    #[test]
    fn first_in_first_out_until_full_then_refuses() {
        let ring = HandleRing::new(3);
        assert_eq!(ring.capacity(), 4);
        assert!(ring.is_empty() && ring.pop().is_none());
        for handle in 1..=4 {
            assert_eq!(ring.push(handle), Ok(()));
        }
        assert_eq!(ring.push(5), Err(5), "full");
        assert_eq!((ring.pop(), ring.pop()), (Some(1), Some(2)));
        for handle in 5..=6 {
            assert_eq!(ring.push(handle), Ok(()), "room again after two pops, across the wrap");
        }
        assert_eq!(
            [ring.pop(), ring.pop(), ring.pop(), ring.pop(), ring.pop()],
            [Some(3), Some(4), Some(5), Some(6), None]
        );
        assert!(ring.is_empty());
    }

    /// A ring at its capacity, each thread popping one handle and pushing it back: a push only
    /// ever follows its own pop, so the ring always has room for it, even while another thread's
    /// pop of the very cell it needs has taken the value and not yet released the cell.
    #[test]
    fn a_push_that_a_pop_made_room_for_never_finds_the_ring_full() {
        let ring = HandleRing::new(4);
        (0..4).for_each(|handle| ring.push(handle).unwrap());
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..100_000 {
                        let handle = loop {
                            match ring.pop() {
                                Some(handle) => break handle,
                                None => std::hint::spin_loop(),
                            }
                        };
                        assert_eq!(ring.push(handle), Ok(()), "full with a handle out");
                    }
                });
            }
        });
        let mut left: Vec<u64> = std::iter::from_fn(|| ring.pop()).collect();
        left.sort_unstable();
        assert_eq!(left, [0, 1, 2, 3]);
    }

    #[test]
    fn every_handle_comes_out_once_under_four_pushers_and_four_poppers() {
        const PER_PUSHER: u64 = 50_000;
        let ring = HandleRing::new(64);
        let done = AtomicBool::new(false);
        let popped: Vec<Vec<u64>> = std::thread::scope(|scope| {
            let poppers: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        let mut got = Vec::new();
                        loop {
                            match ring.pop() {
                                Some(handle) => got.push(handle),
                                None if done.load(Ordering::Acquire) && ring.is_empty() => return got,
                                None => std::hint::spin_loop(),
                            }
                        }
                    })
                })
                .collect();
            let pushers: Vec<_> = (0..4u64)
                .map(|p| {
                    let ring = &ring;
                    scope.spawn(move || {
                        for i in 0..PER_PUSHER {
                            while ring.push(p * PER_PUSHER + i).is_err() {
                                std::hint::spin_loop();
                            }
                        }
                    })
                })
                .collect();
            pushers.into_iter().for_each(|p| p.join().unwrap());
            done.store(true, Ordering::Release);
            poppers.into_iter().map(|p| p.join().unwrap()).collect()
        });
        // Each popper sees each pusher's handles in the order they were pushed.
        for got in &popped {
            for p in 0..4 {
                let mine: Vec<u64> = got.iter().copied().filter(|h| h / PER_PUSHER == p).collect();
                assert!(mine.windows(2).all(|w| w[0] < w[1]), "out of order");
            }
        }
        let mut all: Vec<u64> = popped.into_iter().flatten().collect();
        all.sort_unstable();
        assert_eq!(all, (0..4 * PER_PUSHER).collect::<Vec<_>>());
    }
}
