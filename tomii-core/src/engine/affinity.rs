//! Worker threads pinned to CPUs (`RunConfig::pin_workers`, README.md, "Pinned workers"): worker
//! `w` of a run runs on the `w mod n`-th of the `n` CPUs the process may use when the run starts,
//! for that run only. Pooled threads outlive runs, so a pin is undone when the worker's part of the
//! run ends, and the next run finds the thread as it was.
//!
//! The only `unsafe` here is libc's affinity calls, on a `cpu_set_t` owned by the caller.

use std::mem::MaybeUninit;

/// The CPUs a run's workers are pinned to, in order.
#[derive(Clone, Debug)]
pub(crate) struct Placement {
    cpus: Vec<usize>,
}

impl Placement {
    /// The CPUs the calling thread may run on (the host's, when a run starts).
    pub(crate) fn of_this_thread() -> Result<Placement, String> {
        let set =
            affinity().map_err(|error| format!("pin_workers: cannot read the CPUs this process may use: {error}"))?;
        // SAFETY: `set` is an initialised cpu_set_t; CPU_ISSET reads it only, below CPU_SETSIZE.
        let cpus: Vec<usize> =
            (0..libc::CPU_SETSIZE as usize).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) }).collect();
        if cpus.is_empty() {
            return Err("pin_workers: this process may use no CPU".to_owned());
        }
        Ok(Placement { cpus })
    }

    /// The CPU worker `worker` runs on.
    pub(crate) fn cpu_of(&self, worker: u32) -> usize {
        self.cpus[worker as usize % self.cpus.len()]
    }

    /// Pins the calling thread, worker `worker`, to its CPU until the guard is dropped, which gives
    /// the thread back the CPUs it had.
    pub(crate) fn pin(&self, worker: u32) -> Result<Pinned, String> {
        let cpu = self.cpu_of(worker);
        let before = affinity().map_err(|error| format!("pin_workers: worker {worker}: {error}"))?;
        let mut only = empty_set();
        // SAFETY: `only` is an initialised cpu_set_t and `cpu` is below CPU_SETSIZE (it came from
        // CPU_ISSET's range).
        unsafe { libc::CPU_SET(cpu, &mut only) };
        set_affinity(&only)
            .map_err(|error| format!("pin_workers: worker {worker} cannot be pinned to CPU {cpu}: {error}"))?;
        Ok(Pinned { before })
    }
}

/// A pinned thread; dropping it gives the thread back the CPUs it had.
pub(crate) struct Pinned {
    before: libc::cpu_set_t,
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // The thread may use what it used before; failing to widen it again only narrows a
        // thread the pool will reuse, and there is no one to tell.
        let _ = set_affinity(&self.before);
    }
}

fn empty_set() -> libc::cpu_set_t {
    let mut set = MaybeUninit::<libc::cpu_set_t>::zeroed();
    // SAFETY: a zeroed cpu_set_t is a valid (empty) set; CPU_ZERO makes sure of it.
    unsafe {
        libc::CPU_ZERO(set.assume_init_mut());
        set.assume_init()
    }
}

/// The calling thread's CPUs.
fn affinity() -> std::io::Result<libc::cpu_set_t> {
    let mut set = empty_set();
    // SAFETY: `set` is a cpu_set_t of the size passed; pid 0 is the calling thread.
    let status = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if status == 0 { Ok(set) } else { Err(std::io::Error::last_os_error()) }
}

/// Sets the calling thread's CPUs.
fn set_affinity(set: &libc::cpu_set_t) -> std::io::Result<()> {
    // SAFETY: `set` is a cpu_set_t of the size passed; pid 0 is the calling thread.
    let status = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
    if status == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_thread_runs_on_its_cpu_and_gets_its_cpus_back() {
        std::thread::spawn(|| {
            let placement = Placement::of_this_thread().unwrap();
            let before = Placement::of_this_thread().unwrap().cpus;
            let pinned = placement.pin(1).unwrap();
            assert_eq!(Placement::of_this_thread().unwrap().cpus, vec![placement.cpu_of(1)]);
            drop(pinned);
            assert_eq!(Placement::of_this_thread().unwrap().cpus, before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn workers_go_round_the_cpus() {
        let placement = Placement { cpus: vec![3, 5] };
        assert_eq!([0, 1, 2, 3].map(|w| placement.cpu_of(w)), [3, 5, 3, 5]);
    }
}
