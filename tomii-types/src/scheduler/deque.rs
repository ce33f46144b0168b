//! [`HandleDeque`]: a bounded work-stealing deque of task handles, for stealing policies
//! (`work-stealing` keeps one per worker): its owner pushes and pops one end, any thread steals
//! the other.
//!
//! It is the Chase–Lev deque in the form Lê, Pop, Cohen and Zappa Nardelli proved for weak memory
//! models ("Correct and Efficient Work-Stealing for Weak Memory Models", PPoPP 2013), on a fixed
//! ring: `bottom` is the owner's next push, `top` the next steal, and the handles between them are
//! queued. The owner's push is a load of `top`, a store of the cell and a store of `bottom`; its
//! pop of the newest handle is a store of `bottom`, a `SeqCst` fence and, only for the last
//! handle, a compare-and-swap of `top`; a steal is one compare-and-swap of `top`. No allocation
//! after `new`, no lock, no epoch to pin: a ring that is full refuses the push, and the caller
//! puts the handle elsewhere (`work-stealing` puts it in its shared queue).
//! Values are `u64` handles held in atomics, so nothing here is `unsafe`.
//!
//! # The owner's end
//! Only one thread at a time may push and pop the owner's end: [`HandleDeque::owner`] hands out an
//! [`Owner`] to the first caller and `None` to any other until that one is dropped (a swap and a
//! store, never a wait). A host that keeps the ABI's contract calls a worker's push and pop from
//! that worker's thread only, so the owner's end is never refused in a run; if it ever were, the
//! scheduler would use its shared queue and steal instead of corrupting the deque.
//!
//! # Memory ordering
//! A push stores the handle Relaxed, then `bottom` Release; a steal loads `top` Acquire, fences
//! `SeqCst`, loads `bottom` Acquire, so it sees the handle of every push whose `bottom` it saw, and
//! claims it with a `SeqCst` compare-and-swap of `top`. The owner's pop publishes its decrement of
//! `bottom` before it reads `top` (the `SeqCst` fence, paired with the steal's): when both go for
//! the last handle, at least one sees the other, and the compare-and-swap of `top` decides. A cell
//! is rewritten only by a push that loaded (Acquire) a `top` past it, so a steal that read the cell
//! and then won its compare-and-swap read the handle it claimed.

#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering, fence};

/// An index on a cache line of its own, so that the owner's and the thieves' ends do not share one.
#[repr(align(128))]
struct Padded(AtomicIsize);

/// A bounded deque of `u64` handles: one owner pushes and pops the newest end, anyone steals the
/// oldest.
pub struct HandleDeque {
    cells: Box<[AtomicU64]>,
    /// `cells.len() - 1`; the length is a power of two.
    mask: usize,
    /// The next steal's position.
    top: Padded,
    /// The owner's next push's position.
    bottom: Padded,
    /// Whether an [`Owner`] is out.
    owned: AtomicBool,
}

/// The owner's end of a [`HandleDeque`], held by one thread at a time; dropping it gives it back.
pub struct Owner<'a> {
    deque: &'a HandleDeque,
}

impl HandleDeque {
    /// A deque with room for at least `capacity` handles (at least 1; rounded up to a power of two).
    pub fn new(capacity: usize) -> HandleDeque {
        let len = capacity.max(1).next_power_of_two();
        HandleDeque {
            cells: (0..len).map(|_| AtomicU64::new(0)).collect(),
            mask: len - 1,
            top: Padded(AtomicIsize::new(0)),
            bottom: Padded(AtomicIsize::new(0)),
            owned: AtomicBool::new(false),
        }
    }

    /// How many handles it can hold.
    pub fn capacity(&self) -> usize {
        self.cells.len()
    }

    /// The owner's end, or `None` while another [`Owner`] of this deque is alive. Never waits.
    #[inline]
    pub fn owner(&self) -> Option<Owner<'_>> {
        (!self.owned.swap(true, Ordering::Acquire)).then_some(Owner { deque: self })
    }

    /// Takes the oldest handle, if any: what a thief calls (and an owner that wants its oldest).
    /// A steal that loses its race for a handle to another steal or to the owner tries again, so
    /// `None` means the deque was empty at some moment of the call.
    #[inline]
    pub fn steal(&self) -> Option<u64> {
        loop {
            let top = self.top.0.load(Ordering::Acquire);
            fence(Ordering::SeqCst);
            let bottom = self.bottom.0.load(Ordering::Acquire);
            if top >= bottom {
                return None;
            }
            let handle = self.cells[top as usize & self.mask].load(Ordering::Relaxed);
            if self.top.0.compare_exchange(top, top + 1, Ordering::SeqCst, Ordering::Relaxed).is_ok() {
                return Some(handle);
            }
            std::hint::spin_loop();
        }
    }

    /// How many handles it held when looked at: exact when nobody pushes, pops or steals meanwhile.
    #[inline]
    pub fn len(&self) -> usize {
        let bottom = self.bottom.0.load(Ordering::Relaxed);
        let top = self.top.0.load(Ordering::Relaxed);
        usize::try_from(bottom - top).unwrap_or(0)
    }

    /// Whether it looked empty: exact when nobody pushes, pops or steals meanwhile, a hint otherwise.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Owner<'_> {
    /// Adds `handle` at the newest end; gives it back when the deque is full.
    #[inline]
    pub fn push(&self, handle: u64) -> Result<(), u64> {
        let deque = self.deque;
        let bottom = deque.bottom.0.load(Ordering::Relaxed);
        let top = deque.top.0.load(Ordering::Acquire);
        if bottom - top > deque.mask as isize {
            return Err(handle);
        }
        deque.cells[bottom as usize & deque.mask].store(handle, Ordering::Relaxed);
        deque.bottom.0.store(bottom + 1, Ordering::Release);
        Ok(())
    }

    /// Takes the newest handle, if any.
    #[inline]
    pub fn pop(&self) -> Option<u64> {
        let deque = self.deque;
        let bottom = deque.bottom.0.load(Ordering::Relaxed) - 1;
        deque.bottom.0.store(bottom, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let top = deque.top.0.load(Ordering::Relaxed);
        if top > bottom {
            // Empty: put `bottom` back where it was.
            deque.bottom.0.store(bottom + 1, Ordering::Relaxed);
            return None;
        }
        let handle = deque.cells[bottom as usize & deque.mask].load(Ordering::Relaxed);
        if top == bottom {
            // The last handle: a thief may be taking it too, and `top` decides who has it.
            let won = deque.top.0.compare_exchange(top, top + 1, Ordering::SeqCst, Ordering::Relaxed).is_ok();
            deque.bottom.0.store(bottom + 1, Ordering::Relaxed);
            return won.then_some(handle);
        }
        Some(handle)
    }

    /// Takes the oldest handle, if any: the thieves' end, for an owner that runs oldest first.
    #[inline]
    pub fn pop_oldest(&self) -> Option<u64> {
        self.deque.steal()
    }
}

impl Drop for Owner<'_> {
    #[inline]
    fn drop(&mut self) {
        self.deque.owned.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_pops_newest_first_thieves_take_oldest_and_a_full_deque_refuses() {
        let deque = HandleDeque::new(3);
        assert_eq!(deque.capacity(), 4);
        let owner = deque.owner().expect("nobody owns it yet");
        assert!(deque.owner().is_none(), "one owner at a time");
        assert!(owner.pop().is_none() && deque.steal().is_none() && deque.is_empty());
        for handle in 1..=4 {
            assert_eq!(owner.push(handle), Ok(()));
        }
        assert_eq!(owner.push(5), Err(5), "full");
        assert_eq!(deque.len(), 4);
        assert_eq!((deque.steal(), owner.pop(), owner.pop_oldest()), (Some(1), Some(4), Some(2)));
        for handle in 5..=7 {
            assert_eq!(owner.push(handle), Ok(()), "room again, across the wrap");
        }
        assert_eq!(owner.push(8), Err(8));
        assert_eq!(
            [owner.pop(), owner.pop(), owner.pop(), owner.pop(), owner.pop()],
            [Some(7), Some(6), Some(5), Some(3), None]
        );
        drop(owner);
        assert!(deque.owner().is_some(), "given back when dropped");
    }

    /// The owner pushes and pops while three thieves steal: every handle comes out exactly once,
    /// including when the owner and a thief race for the last one.
    #[test]
    fn every_handle_comes_out_once_under_an_owner_and_three_thieves() {
        const HANDLES: u64 = 200_000;
        let deque = HandleDeque::new(64);
        let done = AtomicBool::new(false);
        let mut all: Vec<u64> = std::thread::scope(|scope| {
            let thieves: Vec<_> = (0..3)
                .map(|_| {
                    scope.spawn(|| {
                        let mut got = Vec::new();
                        while !done.load(Ordering::Acquire) || !deque.is_empty() {
                            match deque.steal() {
                                Some(handle) => got.push(handle),
                                None => std::hint::spin_loop(),
                            }
                        }
                        got
                    })
                })
                .collect();
            let owner = deque.owner().unwrap();
            let mut mine = Vec::new();
            for handle in 0..HANDLES {
                while owner.push(handle).is_err() {
                    mine.extend(owner.pop());
                }
                // Pop every third push, so the deque is often down to its last handle.
                if handle % 3 == 0 {
                    mine.extend(owner.pop());
                }
            }
            mine.extend(std::iter::from_fn(|| owner.pop()));
            drop(owner);
            done.store(true, Ordering::Release);
            thieves.into_iter().flat_map(|t| t.join().unwrap()).chain(mine).collect()
        });
        all.sort_unstable();
        assert_eq!(all, (0..HANDLES).collect::<Vec<_>>(), "lost or duplicated handles");
    }
}
