//! Asymmetric fences for the idle-worker handshake (README.md, "Idle workers"): the pusher, on the
//! hot path, issues only a compiler fence; the parking worker, on the cold path, issues a heavy
//! fence that forces a full memory barrier on every running thread of the process (Linux
//! `membarrier`, private expedited). Where that is unavailable both sides use a SeqCst fence.
//!
//! # Memory ordering
//! With `heavy` on one side and `light` on the other, a store before either fence and a load after
//! the other cannot both miss each other: the forced barrier lands on the pusher's thread either
//! before its store (then the pusher's later load sees the parker's earlier store) or after it
//! (then the parker's later load sees the pusher's store). A descheduled thread is covered by the
//! barrier implied by its context switch.

use std::sync::atomic::{Ordering, compiler_fence, fence};

/// Which pair of fences this process uses, decided once per process.
#[derive(Clone, Copy, Debug)]
pub struct Fences {
    membarrier: bool,
}

impl Fences {
    /// Uses `membarrier` when the kernel offers the private expedited command (asked, and the
    /// process registered, by the first run; a registration holds for the process's life).
    pub fn new() -> Self {
        static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        Fences { membarrier: *REGISTERED.get_or_init(membarrier::register) }
    }

    /// The hot side: a compiler fence, or a full fence without `membarrier`.
    #[inline]
    pub fn light(self) {
        if self.membarrier {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
    }

    /// The cold side: a barrier on every running thread of the process.
    pub fn heavy(self) {
        if !(self.membarrier && membarrier::barrier()) {
            fence(Ordering::SeqCst);
        }
    }
}

#[cfg(target_os = "linux")]
mod membarrier {
    const QUERY: libc::c_long = 0;
    const PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    const REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    fn call(command: libc::c_long) -> libc::c_long {
        // SAFETY: membarrier takes two integer arguments and touches no memory of ours.
        unsafe { libc::syscall(libc::SYS_membarrier, command, 0 as libc::c_long, 0 as libc::c_long) }
    }

    /// Registers the process for private expedited barriers; false if the kernel cannot.
    pub fn register() -> bool {
        let supported = call(QUERY);
        supported >= 0 && supported & PRIVATE_EXPEDITED != 0 && call(REGISTER_PRIVATE_EXPEDITED) == 0
    }

    /// Issues the barrier; false if it failed (the caller then fences itself).
    pub fn barrier() -> bool {
        call(PRIVATE_EXPEDITED) == 0
    }
}

#[cfg(not(target_os = "linux"))]
mod membarrier {
    pub fn register() -> bool {
        false
    }

    pub fn barrier() -> bool {
        false
    }
}
