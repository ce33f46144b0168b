//! Quick push/pop figures for issue notes: drives every scheduler the way `benches/schedulers.rs`
//! does, `--repeats` times (default 15) of `--pairs` push+pop pairs (default 200,000), and prints a
//! markdown table of ns per pair, uncontended and on two threads, against the fifo target.
//!
//! Runs are interleaved (every scheduler and mode once per round) so that drift on a noisy machine
//! spreads over all of them. No statistics beyond median and min: `cargo bench` has those.

use std::process::ExitCode;
use std::time::Duration;

use tomii_bench::{FIFO_TARGET_NS, PREFILL, PushPop, SLOTS, WORKERS, median, schedulers};
use tomii_core::plugin::SchedulerPlugin;

const USAGE: &str = "usage: scheduler_figures [--repeats N] [--pairs N]   (N ≥ 1; defaults 15 and 200000)";

#[derive(Debug, PartialEq, Eq)]
struct Options {
    repeats: usize,
    pairs: u64,
}

/// One scheduler: an instance per mode, and ns per pair of each run.
struct Case<'p> {
    solo: PushPop<'p>,
    duo: PushPop<'p>,
    solo_ns: Vec<f64>,
    duo_ns: Vec<f64>,
    /// The share of each two-thread run during which both threads ran (`TwoThreads::overlap`).
    overlap: Vec<f64>,
    /// Pops on two threads that found nothing, over every run.
    empty: u64,
}

impl<'p> Case<'p> {
    fn new(name: &'p str, plugin: &'p SchedulerPlugin) -> Self {
        let (solo, duo) = (PushPop::new(name, plugin), PushPop::new(name, plugin));
        Case { solo, duo, solo_ns: Vec::new(), duo_ns: Vec::new(), overlap: Vec::new(), empty: 0 }
    }

    fn run_once(&mut self, pairs: u64) {
        self.solo_ns.push(ns_per_pair(self.solo.uncontended(pairs), pairs));
        let run = self.duo.two_threads(pairs);
        self.duo_ns.push(ns_per_pair(run.elapsed, pairs));
        self.overlap.push(run.overlap);
        self.empty += run.empty;
    }

    fn clear(&mut self) {
        self.solo_ns.clear();
        self.duo_ns.clear();
        self.overlap.clear();
        self.empty = 0;
    }

    /// The table row; `fifo` is fifo's uncontended median.
    fn row(&self, fifo: f64) -> String {
        let solo = median(&self.solo_ns);
        let name = self.solo.name();
        let target = format!("{:.2}", solo / FIFO_TARGET_NS);
        let target = if name == "fifo" {
            format!("{target} {}", if solo < FIFO_TARGET_NS { "✓" } else { "✗" })
        } else {
            target
        };
        format!(
            "| {name} | {solo:.1} | {:.1} | {:.1} | {:.0}% | {:.2} | {target} |",
            min(&self.solo_ns),
            median(&self.duo_ns),
            100.0 * median(&self.overlap),
            solo / fifo,
        )
    }
}

fn ns_per_pair(elapsed: Duration, pairs: u64) -> f64 {
    elapsed.as_secs_f64() * 1e9 / pairs as f64
}

fn min(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::INFINITY, f64::min)
}

fn parse_options(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options { repeats: 15, pairs: 200_000 };
    while let Some(arg) = args.next() {
        let value = match arg.as_str() {
            "--repeats" | "--pairs" => args.next().ok_or(format!("{arg} needs a number"))?,
            other => return Err(format!("unknown argument {other:?}")),
        };
        let number: u64 = value.parse().map_err(|_| format!("{arg} {value:?}: not a whole number"))?;
        if number == 0 {
            return Err(format!("{arg} 0: at least 1 is needed"));
        }
        match arg.as_str() {
            "--repeats" => options.repeats = number as usize,
            _ => options.pairs = number,
        }
    }
    Ok(options)
}

fn main() -> ExitCode {
    let options = match tomii_bench::command_line("scheduler_figures", USAGE, parse_options) {
        Ok(options) => options,
        Err(code) => return code,
    };
    let schedulers = schedulers();
    let mut cases: Vec<Case<'_>> = schedulers.iter().map(|(name, plugin)| Case::new(name, plugin)).collect();
    for case in &mut cases {
        case.run_once(options.pairs); // warm-up: page in the library, fill the scheduler's buffers
        case.clear();
    }
    for _ in 0..options.repeats {
        for case in &mut cases {
            case.run_once(options.pairs);
        }
    }
    print_table(&cases, &options);
    ExitCode::SUCCESS
}

fn print_table(cases: &[Case<'_>], options: &Options) {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let Options { repeats, pairs } = options;
    println!("{repeats} runs of {pairs} push+pop pairs per scheduler and mode, interleaved; {PREFILL} tasks queued;");
    println!("created for {WORKERS} workers and {SLOTS} slots; pop buffer 1; {cores} cores available. ns per pair");
    println!("(per thread on 2 threads); overlap: the share of a 2-thread run during which both threads ran");
    println!("(median). The target, < {FIFO_TARGET_NS:.0} ns uncontended, is fifo's.\n");
    print!("| scheduler | uncontended median | uncontended min | 2 threads median | 2 threads overlap ");
    println!("| uncontended ÷ fifo | uncontended ÷ {FIFO_TARGET_NS:.0} ns target |");
    println!("|---|---:|---:|---:|---:|---:|---|");
    let fifo = cases.iter().find(|c| c.solo.name() == "fifo").map_or(f64::NAN, |c| median(&c.solo_ns));
    for case in cases {
        println!("{}", case.row(fifo));
    }
    for case in cases.iter().filter(|c| c.empty > 0) {
        println!(
            "\n{}: {} pops found nothing on 2 threads (each left one more task queued)",
            case.solo.name(),
            case.empty
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tomii_bench::arguments as args;

    #[test]
    fn options_default_and_override() {
        assert_eq!(parse_options(args("")), Ok(Options { repeats: 15, pairs: 200_000 }));
        assert_eq!(parse_options(args("--pairs 10 --repeats 3")), Ok(Options { repeats: 3, pairs: 10 }));
        assert!(parse_options(args("--repeats")).is_err());
        assert!(parse_options(args("--pairs 0")).is_err());
        assert!(parse_options(args("--repeats x")).is_err());
        assert!(parse_options(args("--frames 3")).is_err());
    }
}
