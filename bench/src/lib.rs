//! Benchmarks of the Tomii engine and its schedulers: graph generators (`graphs`), run-time plugin
//! loading (`plugins`), the direct push/pop drive of a scheduler (`push_pop`), direct kernel calls
//! through the kernel ABI (`kernel_call`), callgrind's per-thread counts (`callgrind`, for the
//! `instructions` binary), and the workloads that `benches/*.rs` (criterion) and the binaries
//! share. What each benchmark measures is in README.md.
//!
//! A leaf crate (scripts/check_deps.py holds it to that): it depends on tomii-core (and tomii-types, for the task
//! descriptor) only and must never link a scheduler or kernel plugin crate; it loads their dylibs
//! at run time.

pub mod callgrind;
mod graphs;
pub mod kernel_call;
mod plugins;
mod push_pop;
mod startup;

pub use graphs::{
    Kernel, chain, chain_text, chain_with, fan_out, fan_out_with, gather, independent, pipeline, pipeline_text,
    pipeline_with, scatter,
};
pub use plugins::{Plugins, SHIPPED_SCHEDULERS, plugin_dir, plugins, schedulers, synthetic_file};
pub use push_pop::{FIFO_TARGET_NS, PREFILL, PushPop, SLOTS, TwoThreads, setup, task};
pub use startup::{
    StartupParse, chain_json, rich_json, run_graph_1_task, run_graph_1_task_as_before, run_graph_config,
};

use tomii_core::engine::RunConfig;

/// Worker threads of every benchmark run (the benchmark machines have 2 cores).
pub const WORKERS: u32 = 2;
/// Nodes of the `chain_10k` graph.
pub const CHAIN_LEN: u32 = 10_000;
/// Middle instances of the `fanout_10k` graph.
pub const FAN_WIDTH: u32 = 10_000;
/// Stages and width of the `pipeline_4x16` graph.
pub const PIPELINE: (u32, u32) = (4, 16);
/// Frames of every pipeline run.
pub const PIPELINE_FRAMES: u64 = 1000;
/// The slot counts `pipeline_4x16` is measured at.
pub const PIPELINE_SLOTS: [u32; 3] = [1, 4, 16];
/// The slot count of the `trace_cost` runs (and of the pipeline target).
pub const TRACE_COST_SLOTS: u32 = 4;

/// Workers of the engine-part benchmarks (`successors`, `slot_recycle`): one, so that a figure is
/// one thread's work, with no hand-off between threads and no parking.
pub const PART_WORKERS: u32 = 1;
/// The fan-out and fan-in widths n of the `successors` benchmarks.
pub const FAN_COUNTS: [u32; 4] = [10, 100, 1_000, 10_000];
/// Successors (predecessors, tasks) per `successors` run: n-wide runs have this ÷ n frames.
pub const FAN_TASKS_PER_RUN: u64 = 10_000;
/// Frames of every `slot_recycle` run.
pub const RECYCLE_FRAMES: u64 = 10_000;
/// The slot counts `slot_recycle` is measured at.
pub const RECYCLE_SLOTS: [u32; 3] = [1, 4, 16];

/// A run on [`WORKERS`] workers with neither trace nor task timing: what the engine costs alone.
pub fn config(slots: u32, frames: u64) -> RunConfig {
    RunConfig { workers: WORKERS, slots, frames, trace: false, task_timing: false, ..RunConfig::default() }
}

/// [`config`] on [`PART_WORKERS`] worker.
pub fn part_config(slots: u32, frames: u64) -> RunConfig {
    RunConfig { workers: PART_WORKERS, ..config(slots, frames) }
}

/// The frames of a `successors` run `n` wide: [`FAN_TASKS_PER_RUN`] ÷ n, at least 1.
pub fn fan_frames(n: u32) -> u64 {
    (FAN_TASKS_PER_RUN / u64::from(n)).max(1)
}

/// The `trace_cost` variants: (label, trace, task_timing), the baseline first.
pub const TRACE_COST_VARIANTS: [(&str, bool, bool); 4] = [
    ("trace=off,timing=off", false, false),
    ("trace=off,timing=on", false, true),
    ("trace=on,timing=off", true, false),
    ("trace=on,timing=on", true, true),
];

/// The options of a measuring binary called `name` from its command line, read by `parse`; `Err`
/// is the exit code once `--help` printed `usage`, or a bad option was reported with it.
pub fn command_line<T>(
    name: &str,
    usage: &str,
    parse: impl FnOnce(std::vec::IntoIter<String>) -> Result<T, String>,
) -> Result<T, std::process::ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{usage}");
        return Err(std::process::ExitCode::SUCCESS);
    }
    parse(args.into_iter()).map_err(|message| {
        eprintln!("{name}: {message}\n{usage}");
        std::process::ExitCode::from(2)
    })
}

/// The words of `text` as the arguments `command_line` hands to `parse`: what the binaries' tests
/// give their parsers.
pub fn arguments(text: &str) -> std::vec::IntoIter<String> {
    text.split_whitespace().map(str::to_owned).collect::<Vec<_>>().into_iter()
}

/// The median of `values` (the mean of the middle two for an even count); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// `x` as a whole number with thousands separators, or to one decimal below 100.
pub fn thousands(x: f64) -> String {
    if x < 100.0 {
        return format!("{x:.1}");
    }
    let digits = format!("{:.0}", x);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(74.44), "74.4");
        assert_eq!(thousands(1234.4), "1,234");
        assert_eq!(thousands(400_000.0), "400,000");
        assert_eq!(thousands(123.0), "123");
    }

    #[test]
    fn every_fan_run_releases_the_same_number_of_tasks() {
        assert!(FAN_COUNTS.iter().all(|&n| fan_frames(n) * u64::from(n) == FAN_TASKS_PER_RUN));
        assert_eq!(fan_frames(20_000), 1);
        assert_eq!(part_config(4, 9).workers, PART_WORKERS);
    }
}
