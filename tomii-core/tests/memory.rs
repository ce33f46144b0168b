//! Per-run state is bounded by slots, never by frames: a million frames take the memory of a
//! hundred thousand (once both have cycled through the trace's fixed pool of chunks). Alone in its
//! test binary, so that the peak resident size of this process's children
//! (`getrusage(RUSAGE_CHILDREN)`) is only that of the runs below.
//!
//! Needs `cargo build --workspace` first (plugins).
//!
//! Also: the memory a run needs is estimated whole (every per-slot array, the scheduler's queue
//! included) and refused before anything is made; the refused run's child stays small, so the
//! peak measured above is not its.

mod common;

use std::os::unix::process::CommandExt;

use common::cli::{finish, tomii};
use common::{graph_path, synthetic_lib};

/// The largest peak resident size of any child waited for so far, in KiB.
fn children_peak_kib() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: a valid out-pointer; RUSAGE_CHILDREN reads this process's waited-for children.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) }, 0);
    // SAFETY: getrusage filled it.
    unsafe { usage.assume_init() }.ru_maxrss
}

/// Peak resident KiB of a run of `frames` frames (report and trace streamed to /dev/null).
fn peak_of(frames: u64) -> i64 {
    let mut command = tomii();
    command.arg("run").arg(graph_path("diamond.json")).arg("--dylib").arg(synthetic_lib());
    command.args(["--workers", "2", "--slots", "4", "--quiet", "--frames", &frames.to_string()]);
    command.args(["--trace", "/dev/null", "--report", "/dev/null", "--no-task-timing"]);
    let run = finish(command);
    assert!(run.status.success(), "the run of {frames} frames failed:\n{}", run.stderr);
    children_peak_kib()
}

#[test]
fn a_million_frames_run_in_the_memory_of_a_hundred_thousand() {
    let small = peak_of(100_000);
    let large = peak_of(1_000_000);
    eprintln!("peak resident size: {small} KiB for 100,000 frames, {large} KiB for 1,000,000");
    // The peak of the children is a maximum: `large` is the larger run's own peak if it exceeds
    // the smaller's. A per-frame cost of even 8 bytes (one u64 per frame) would add 8 MB.
    assert!(large <= small + 2048, "peak resident size grew from {small} KiB to {large} KiB over 10× the frames");
}

/// The documented maximum of slots, 2^24, on a one-task graph under a 3 GB address space: the
/// task cells alone take 0.8 GB, which fit, but each slot's own state (its bookkeeping, the door's
/// queues, the scheduler's queue) takes ten times that. The run is refused before anything is
/// made, naming --slots and the estimate, instead of aborting on a failed allocation with a crash
/// line that blamed the plugins; and it leaves no (empty) report behind.
#[test]
fn the_most_slots_beyond_the_address_space_are_refused_counting_every_per_slot_array() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let graph = dir.path().join("one.json");
    std::fs::write(&graph, r#"{"nodes": [{"name": "one", "function": "noop", "factor": 1}]}"#).expect("graph");
    let report = dir.path().join("report.json");
    let mut command = tomii();
    command.arg("run").arg(&graph).arg("--dylib").arg(synthetic_lib());
    command.args(["--slots", "16777216", "--report"]).arg(&report);
    // SAFETY: between fork and exec, setrlimit only (async-signal-safe).
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 3 << 30, rlim_max: 3 << 30 };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
        });
    }
    let run = finish(command);
    let context = format!("status: {:?}\nstderr:\n{}", run.status, run.stderr);
    assert_eq!(run.status.code(), Some(1), "not refused\n{context}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line\n{context}");
    assert!(lines[0].starts_with("error: 16777216 slot(s) × 1 instances need at least "), "{context}");
    assert!(
        lines[0].contains("of memory available; use fewer slots") && lines[0].contains("(--slots 16777216: "),
        "{context}"
    );
    assert!(!run.stderr.contains("crashed"), "{context}");
    assert!(!report.exists(), "a refused run left a report file\n{context}");
}
