//! Per-run state is bounded by slots, never by frames: a million frames take the memory of a
//! hundred thousand (once both have cycled through the trace's fixed pool of chunks). Alone in its
//! test binary, so that the peak resident size of this process's children
//! (`getrusage(RUSAGE_CHILDREN)`) is only that of the runs below.
//!
//! Needs `cargo build --workspace` first (plugins).

mod common;

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
