//! One start-up operation repeated N times, for `valgrind --tool=callgrind` (bench/README.md,
//! "Start-up"): loading a scheduler plugin, parsing a generated graph (`parse`: a chain of `$dep`
//! nodes; `parse-rich`: the graph of `rich_json`, which uses most of the format), or a whole 1-task
//! run as the Python binding makes it ready and launches it the first time (load the kernels and
//! the scheduler, parse, run).
//!
//! Instructions per operation = (count at N − count at 1) ÷ (N − 1), so process start-up cancels.
//! The elapsed time it prints is for orientation only: criterion's `startup` suite times them.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use tomii_bench::{StartupParse, chain_json, plugin_dir, rich_json, run_graph_1_task, run_graph_1_task_as_before};
use tomii_core::plugin::{SchedulerPlugin, scheduler_file_name};

const USAGE: &str = "usage: startup_probe (plugin [N] | plugin-uncached [N] | parse NODES [fast|fallback|auto] [N] | parse-rich NODES [fast|fallback|auto] [N] | run1 [N] | run1-as-before [N])";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let repeats = |at: usize| args.get(at).map_or(Some(1), |n| n.parse::<u32>().ok().filter(|&n| n > 0));
    let started = Instant::now();
    let ran = match args.first().map(String::as_str) {
        Some(kind @ ("plugin" | "plugin-uncached")) => {
            repeats(1).map(|n| (0..n).for_each(|_| load_scheduler(kind == "plugin")))
        }
        Some(kind @ ("parse" | "parse-rich")) => {
            let nodes = args.get(1).and_then(|n| n.parse::<u32>().ok());
            let how = args.get(2).map_or(Some(StartupParse::Auto), |how| StartupParse::from_name(how));
            match (nodes, how, repeats(3)) {
                (Some(nodes), Some(how), Some(n)) => {
                    let text = if kind == "parse" { chain_json(nodes) } else { rich_json(nodes) };
                    (0..n).for_each(|_| drop(black_box(how.parse("chain.json", &text))));
                    Some(())
                }
                _ => None,
            }
        }
        Some("run1") => repeats(1).map(|n| (0..n).for_each(|_| drop(black_box(run_graph_1_task(&plugin_dir()))))),
        Some("run1-as-before") => {
            repeats(1).map(|n| (0..n).for_each(|_| drop(black_box(run_graph_1_task_as_before(&plugin_dir())))))
        }
        _ => None,
    };
    match ran {
        Some(()) => {
            eprintln!("{:.1} µs", started.elapsed().as_secs_f64() * 1e6);
            ExitCode::SUCCESS
        }
        None => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// `plugin`: through the process's record of checked files; `plugin-uncached`: every check.
fn load_scheduler(cached: bool) {
    let path = plugin_dir().join(scheduler_file_name("fifo"));
    let plugin = if cached { SchedulerPlugin::load(&path) } else { SchedulerPlugin::load_and_check(&path) };
    black_box(plugin.unwrap_or_else(|e| panic!("{e}")));
}
