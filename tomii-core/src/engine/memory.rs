//! Whether a run's state fits in the memory the system has available: a run (or a simulation)
//! that cannot fit is refused before it starts, naming both figures, rather than aborted by a
//! failed allocation or killed by the system part way through (or, worse, making the system kill
//! another process). What still fails to allocate while the host makes a run's largest arrays
//! (per slot, per cell) is a refusal too ([`try_boxed`], [`probe`]), and an abort the host's own
//! allocations still cause is never blamed on the plugins ([`HostAllocating`]).

use std::sync::atomic::{AtomicUsize, Ordering};

/// State from which a run asks the system what is available (below, any machine has it). Reading
/// the system's figures costs ≈ 16 µs, a third of a small run's start.
const CHECKED_FROM: u64 = 256 << 20;

/// Refuses state of `needed` bytes, which the run will write before its first frame, when the
/// system has less memory available; `what` names the state's shape for the message ("4 slot(s)
/// × 1000 instances"), which says how many of the run's `slots` would fit (the state grows with
/// them).
pub(crate) fn refuse_beyond_available(needed: u64, slots: u32, what: impl FnOnce() -> String) -> Result<(), String> {
    if needed <= CHECKED_FROM {
        return Ok(());
    }
    match available() {
        Some(available) if needed > available => Err(beyond(&what(), needed, available, slots)),
        _ => Ok(()),
    }
}

fn beyond(what: &str, needed: u64, available: u64, slots: u32) -> String {
    let fit = u128::from(slots) * u128::from(available) / u128::from(needed.max(1));
    let fit = match fit {
        0 => "not even 1 fits".to_owned(),
        fit => format!("about {fit} fit"),
    };
    format!(
        "{what} need at least {} of state, more than the {} of memory available; use fewer slots or fewer instances \
         (--slots {slots}: {fit})",
        bytes(needed),
        bytes(available)
    )
}

/// `len` values made by `make`, in a boxed slice; an error saying so, with `what` the array names
/// ("the result cells of 4 slot(s) × 1000 instances"), when the memory cannot be had, instead of
/// an abort. For the run's largest arrays, made once per run.
pub(crate) fn try_boxed<T>(
    len: usize,
    what: impl FnOnce() -> String,
    make: impl FnMut(usize) -> T,
) -> Result<Box<[T]>, String> {
    let mut values = Vec::new();
    values.try_reserve_exact(len).map_err(|_| cannot_allocate(&what(), len.saturating_mul(size_of::<T>()) as u64))?;
    values.extend((0..len).map(make));
    Ok(values.into_boxed_slice())
}

/// Whether `count` bytes can be had at once for `what`, for an array made by code that aborts
/// when they cannot (a library's queue): they are reserved and given back at once, so that the
/// array made next most likely gets them.
pub(crate) fn probe(count: u64, what: impl FnOnce() -> String) -> Result<(), String> {
    if count <= CHECKED_FROM {
        return Ok(());
    }
    let mut bytes = Vec::<u8>::new();
    let reserved = usize::try_from(count).ok().is_some_and(|count| bytes.try_reserve_exact(count).is_ok());
    if reserved { Ok(()) } else { Err(cannot_allocate(&what(), count)) }
}

fn cannot_allocate(what: &str, count: u64) -> String {
    format!("cannot allocate {} for {what}: the system refused the memory; use fewer slots", bytes(count))
}

/// Runs in progress whose host is making their state: a crash meanwhile (an allocation that
/// failed and aborted) is the host's, not a plugin's (`cli/crash.rs` reads it).
static HOST_ALLOCATING: AtomicUsize = AtomicUsize::new(0);

/// Marks the host making a run's state, while it lives.
pub(crate) struct HostAllocating(());

impl HostAllocating {
    pub(crate) fn start() -> HostAllocating {
        HOST_ALLOCATING.fetch_add(1, Ordering::SeqCst);
        HostAllocating(())
    }
}

impl Drop for HostAllocating {
    fn drop(&mut self) {
        HOST_ALLOCATING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether the host of some run is making its state now (one atomic load: a signal handler may
/// call it).
pub(crate) fn host_allocating() -> bool {
    HOST_ALLOCATING.load(Ordering::SeqCst) > 0
}

/// `count` bytes for a person: MiB below 10 GiB, GiB above.
pub(crate) fn bytes(count: u64) -> String {
    if count < 10 << 30 {
        format!("{} MiB", count >> 20)
    } else {
        format!("{:.1} GiB", count as f64 / f64::from(1 << 30))
    }
}

/// The memory this process may still take without the system killing it or it thrashing: the
/// kernel's estimate of what is available without swapping, plus free swap, and no more than its
/// cgroup's limit, and no more than the address space left under `ulimit -v`. The cgroup's limit
/// is taken whole, not less its usage: that usage counts page cache the kernel would reclaim, and
/// a refused run that fits would be worse than an unrefused one that does not. `None` when it
/// cannot be read (not Linux): no check then.
fn available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = meminfo.lines().find(|line| line.starts_with(name))?;
        let kib = line[name.len()..].trim().trim_end_matches("kB").trim().parse::<u64>().ok()?;
        Some(kib << 10)
    };
    let system = field("MemAvailable:")?.saturating_add(field("SwapFree:").unwrap_or(0));
    Some([cgroup_limit(), address_space_left()].into_iter().flatten().fold(system, u64::min))
}

/// Under `ulimit -v`, the address space this process may still map: the limit less what it maps
/// now (address space, unlike a cgroup's page cache, is not given back by the kernel on demand).
fn address_space_left() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given and nothing else.
    let read = unsafe { libc::getrlimit(libc::RLIMIT_AS, &raw mut limit) } == 0;
    if !read || limit.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let mapped_kib = status.lines().find_map(|line| line.strip_prefix("VmSize:"))?;
    let mapped = mapped_kib.trim().trim_end_matches("kB").trim().parse::<u64>().ok()? << 10;
    Some(limit.rlim_cur.saturating_sub(mapped))
}

/// This process's cgroup memory limit, v2 (`memory.max`, "max" when there is none) or v1
/// (`memory.limit_in_bytes`, a huge number when there is none).
fn cgroup_limit() -> Option<u64> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    limit_of(&membership, |file| std::fs::read_to_string(file).ok())
}

/// The memory limit of the cgroups listed in `membership` (the text of /proc/self/cgroup), each
/// limit file read by `read`.
fn limit_of(membership: &str, read: impl Fn(&str) -> Option<String>) -> Option<u64> {
    let number = |file: String| read(&file)?.trim().parse::<u64>().ok();
    membership.lines().find_map(|line| {
        if let Some(path) = line.strip_prefix("0::") {
            number(format!("/sys/fs/cgroup{}/memory.max", path.trim_end_matches('/')))
        } else {
            let path = line.split_once(":memory:")?.1;
            number(format!("/sys/fs/cgroup/memory{}/memory.limit_in_bytes", path.trim_end_matches('/')))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_beyond_the_memory_available_is_refused_naming_both() {
        assert_eq!(
            beyond("4 slot(s) × 1000 instances", 40 << 30, 12 << 30, 4),
            "4 slot(s) × 1000 instances need at least 40.0 GiB of state, more than the 12.0 GiB of memory \
             available; use fewer slots or fewer instances (--slots 4: about 1 fit)"
        );
        assert!(beyond("x", 600 << 20, 500 << 20, 1).contains("at least 600 MiB of state, more than the 500 MiB"));
        assert!(beyond("x", 600 << 20, 500 << 20, 1).ends_with("(--slots 1: not even 1 fits)"));
        assert_eq!(refuse_beyond_available(CHECKED_FROM, 1, || unreachable!("small state is not checked")), Ok(()));
        let huge = refuse_beyond_available(u64::MAX, 1, || "every slot × every instance".to_owned());
        assert!(huge.is_err_and(|m| m.starts_with("every slot × every instance need at least")));
    }

    #[test]
    fn an_allocation_beyond_the_address_space_is_an_error_not_an_abort() {
        let refused = try_boxed(usize::MAX / 16, || "the cells".to_owned(), |_| 0u64);
        assert!(refused.is_err_and(|m| m.starts_with("cannot allocate ") && m.contains(" for the cells: ")));
        assert_eq!(try_boxed(3, || unreachable!(), |at| at as u32).as_deref(), Ok(&[0, 1, 2][..]));
        let probed = probe(u64::MAX / 2, || "the door's queue".to_owned());
        assert!(probed.is_err_and(|m| m.contains("for the door's queue: the system refused the memory")));
        assert_eq!(probe(1 << 20, || unreachable!("small arrays are not probed")), Ok(()));
        // Other tests' runs may mark it too: only this mark's effect is certain.
        let marked = HostAllocating::start();
        assert!(host_allocating());
        drop(marked);
    }

    #[test]
    fn the_memory_available_is_read_from_the_system_and_capped_by_the_cgroup() {
        let available = available().expect("/proc/meminfo is readable on Linux");
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let total_kib: u64 = ["MemTotal:", "SwapTotal:"]
            .iter()
            .filter_map(|name| meminfo.lines().find(|l| l.starts_with(name)))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum();
        assert!(available > 0 && available <= total_kib << 10, "{available} of {total_kib} KiB");
        let files = |file: &str| match file {
            "/sys/fs/cgroup/user.slice/memory.max" => Some("1073741824\n".to_owned()),
            "/sys/fs/cgroup/memory/job/7/memory.limit_in_bytes" => Some("2147483648\n".to_owned()),
            "/sys/fs/cgroup/unlimited/memory.max" => Some("max\n".to_owned()),
            _ => None,
        };
        assert_eq!(limit_of("0::/user.slice\n", files), Some(1 << 30), "cgroup v2");
        assert_eq!(limit_of("4:memory:/job/7\n0::/\n", files), Some(2 << 30), "cgroup v1");
        assert_eq!(limit_of("0::/unlimited\n", files), None, "no v2 limit");
        assert_eq!(limit_of("1:cpu:/\n", files), None, "no memory controller");
    }
}
