//! Quick engine figures for issue notes: runs every configuration of `benches/engine.rs` R times
//! (`--repeats N`, default 15) and prints markdown tables of median and best figures, the issue's
//! targets, and the cost of trace and task timing as time ratios.
//!
//! Runs are interleaved (one of each configuration per round) so that drift on a noisy machine
//! spreads over all of them. No statistics beyond median and min: `cargo bench` has those.

use std::process::ExitCode;
use std::time::Instant;

use tomii_bench::{
    CHAIN_LEN, FAN_WIDTH, PIPELINE, PIPELINE_FRAMES, PIPELINE_SLOTS, Plugins, TRACE_COST_SLOTS, TRACE_COST_VARIANTS,
    WORKERS, chain, config, fan_out, median, pipeline, plugins, thousands,
};
use tomii_core::engine::RunConfig;
use tomii_core::graph::CompiledGraph;

const USAGE: &str = "usage: engine_figures [--repeats N]   (N ≥ 1, default 15)";

/// One measured configuration and its samples (seconds per run).
struct Case<'g> {
    workload: &'static str,
    label: String,
    graph: &'g CompiledGraph,
    config: RunConfig,
    target: Target,
    /// Engine wall time (`report.wall_time_s`) of each run.
    wall: Vec<f64>,
    /// The whole `engine::run` call of each run.
    call: Vec<f64>,
}

/// How a case's time is shown, and the target for it if any.
#[derive(Clone, Copy)]
enum Target {
    /// ns/task, with an optional "at most" target.
    NsPerTask(Option<f64>),
    /// frames/s, with an optional "at least" target.
    FramesPerS(Option<f64>),
}

impl Case<'_> {
    /// `seconds` of one run in this case's unit.
    fn figure(&self, seconds: f64) -> f64 {
        match self.target {
            Target::NsPerTask(_) => seconds * 1e9 / self.graph.instance_count() as f64,
            Target::FramesPerS(_) => self.config.frames as f64 / seconds,
        }
    }

    fn unit(&self) -> &'static str {
        match self.target {
            Target::NsPerTask(_) => "ns/task",
            Target::FramesPerS(_) => "frames/s",
        }
    }

    fn run_once(&mut self, plugins: &Plugins) {
        let start = Instant::now();
        let outcome = plugins.run(self.graph, &self.config);
        self.call.push(start.elapsed().as_secs_f64());
        self.wall.push(outcome.report.wall_time_s);
    }

    /// The table row: median, best, whole-call median, target, median ÷ target.
    fn row(&self) -> String {
        let best = self.wall.iter().copied().fold(f64::INFINITY, f64::min);
        let median_figure = self.figure(median(&self.wall));
        let (target, verdict) = match self.target {
            Target::NsPerTask(Some(t)) => (format!("≤ {t:.0} ns/task"), ratio(median_figure / t, median_figure <= t)),
            Target::FramesPerS(Some(t)) => {
                (format!("≥ {} frames/s", thousands(t)), ratio(median_figure / t, median_figure >= t))
            }
            _ => ("–".to_owned(), "–".to_owned()),
        };
        format!(
            "| {} | {} | {} {unit} | {} {unit} | {} {unit} | {target} | {verdict} |",
            self.workload,
            self.label,
            thousands(median_figure),
            thousands(self.figure(best)),
            thousands(self.figure(median(&self.call))),
            unit = self.unit(),
        )
    }
}

fn ratio(value: f64, met: bool) -> String {
    format!("{value:.2} {}", if met { "✓" } else { "✗" })
}

/// The configurations of `benches/engine.rs`, with the targets.
fn cases<'g>(chain: &'g CompiledGraph, fan: &'g CompiledGraph, pipe: &'g CompiledGraph) -> Vec<Case<'g>> {
    let case = |workload, label: String, graph, config, target| Case {
        workload,
        label,
        graph,
        config,
        target,
        wall: Vec::new(),
        call: Vec::new(),
    };
    let single = format!("1 frame, 1 slot, {WORKERS} workers");
    let mut cases = vec![
        case("chain_10k", single.clone(), chain, config(1, 1), Target::NsPerTask(Some(75.0))),
        case("fanout_10k", single, fan, config(1, 1), Target::NsPerTask(Some(150.0))),
    ];
    for slots in PIPELINE_SLOTS {
        let target = (slots == 4).then_some(400_000.0);
        let label = format!("{PIPELINE_FRAMES} frames, slots {slots}, {WORKERS} workers");
        cases.push(case("pipeline_4x16", label, pipe, config(slots, PIPELINE_FRAMES), Target::FramesPerS(target)));
    }
    for (label, trace, task_timing) in TRACE_COST_VARIANTS {
        let config = RunConfig { trace, task_timing, ..config(TRACE_COST_SLOTS, PIPELINE_FRAMES) };
        cases.push(case(
            "trace_cost",
            format!("slots {TRACE_COST_SLOTS}, {label}"),
            pipe,
            config,
            Target::FramesPerS(None),
        ));
    }
    cases
}

/// The trace/timing cost rows: median time with the feature on over the baseline's.
fn cost_rows(cases: &[Case<'_>]) -> Vec<String> {
    let find = |trace: bool, timing: bool| {
        cases
            .iter()
            .find(|c| c.workload == "trace_cost" && c.config.trace == trace && c.config.task_timing == timing)
            .expect("every trace_cost variant is measured")
    };
    let base = find(false, false);
    let ratio_to_base =
        |case: &Case<'_>| (median(&case.wall) / median(&base.wall), median(&case.call) / median(&base.call));
    [
        ("timing on / off (trace off)", false, true),
        ("trace on / off (timing off)", true, false),
        ("both on / both off", true, true),
    ]
    .into_iter()
    .map(|(what, trace, timing)| {
        let (wall, call) = ratio_to_base(find(trace, timing));
        format!("| {what} | {wall:.3} | {call:.3} |")
    })
    .collect()
}

fn parse_repeats(mut args: impl Iterator<Item = String>) -> Result<usize, String> {
    let mut repeats = 15;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--repeats" => {
                let value = args.next().ok_or("--repeats needs a number")?;
                repeats = value.parse().map_err(|_| format!("--repeats {value:?}: not a whole number"))?;
                if repeats == 0 {
                    return Err("--repeats 0: at least one run is needed".into());
                }
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(repeats)
}

fn main() -> ExitCode {
    let repeats = match tomii_bench::command_line("engine_figures", USAGE, parse_repeats) {
        Ok(repeats) => repeats,
        Err(code) => return code,
    };
    let plugins = plugins();
    let (chain, fan, pipe) = (chain(CHAIN_LEN), fan_out(FAN_WIDTH), pipeline(PIPELINE.0, PIPELINE.1));
    let mut cases = cases(&chain, &fan, &pipe);
    for case in &mut cases {
        case.run_once(&plugins); // warm-up: page in the libraries and the allocator
        case.wall.clear();
        case.call.clear();
    }
    for _ in 0..repeats {
        for case in &mut cases {
            case.run_once(&plugins);
        }
    }
    print_tables(&cases, repeats);
    ExitCode::SUCCESS
}

fn print_tables(cases: &[Case<'_>], repeats: usize) {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("{repeats} runs per configuration, interleaved; fifo scheduler, noop kernels; {cores} cores available.");
    println!("Median and best use the engine's wall time (`report.wall_time_s`: first frames to last worker");
    println!("joined); \"whole run()\" is the median of the entire `engine::run` call, setup and report included.\n");
    println!("| workload | config | median | best | whole run() | target | median ÷ target |");
    println!("|---|---|---:|---:|---:|---|---|");
    for case in cases {
        println!("{}", case.row());
    }
    println!(
        "\n| cost (pipeline_4x16, slots {TRACE_COST_SLOTS}) | time ratio, engine wall | time ratio, whole run() |"
    );
    println!("|---|---:|---:|");
    for row in cost_rows(cases) {
        println!("{row}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tomii_bench::arguments as args;

    #[test]
    fn repeats_default_and_override() {
        assert_eq!(parse_repeats(args("")), Ok(15));
        assert_eq!(parse_repeats(args("--repeats 3")), Ok(3));
        assert!(parse_repeats(args("--repeats")).is_err());
        assert!(parse_repeats(args("--repeats 0")).is_err());
        assert!(parse_repeats(args("--repeats x")).is_err());
        assert!(parse_repeats(args("--frames 3")).is_err());
    }
}
