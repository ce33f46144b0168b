//! `tomii-peer-rayon (--dag FILE | --kernels FILE) [--workers N] [--frames F] [--slots S]`: the
//! Rayon peer of the head-to-head suite (bench/suite). Reads the DAG (spin kernels) or the kernel
//! DAG (C kernels of a library), builds a Rayon pool of N threads and starts them, then times one
//! run of F frames (at most S in flight) and prints one JSON line:
//! `{"runtime": "rayon", "threads": N, "frames": F, "tasks": T, "wall_time_s": S}`, with
//! `"sinks"` (the last frame's sink values) for a kernel DAG. Only the run is timed: never the
//! file, the library, the initializations, the counters or the pool's creation.

mod abi;
mod dag;
mod executor;
mod kernels;
mod spin;

use std::process::ExitCode;
use std::time::Instant;

use dag::Dag;
use executor::{Body, Run};
use kernels::Kernels;

struct Options {
    dag: String,
    kernels: bool,
    workers: usize,
    frames: usize,
    slots: usize,
}

fn parse_options(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options { dag: String::new(), kernels: false, workers: 2, frames: 1, slots: 1 };
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let count = || {
            value.parse::<usize>().ok().filter(|&n| n > 0).ok_or(format!("{flag}: {value:?} is not a positive integer"))
        };
        match flag.as_str() {
            "--dag" | "--kernels" => (options.dag, options.kernels) = (value.clone(), flag == "--kernels"),
            "--workers" => options.workers = count()?,
            "--frames" => options.frames = count()?,
            "--slots" => options.slots = count()?,
            _ => return Err(format!("unknown option {flag}; see the usage at the top of main.rs")),
        }
    }
    if options.dag.is_empty() {
        return Err("--dag FILE or --kernels FILE is required".into());
    }
    Ok(options)
}

fn run(options: &Options) -> Result<String, String> {
    let text = std::fs::read_to_string(&options.dag).map_err(|e| format!("{}: {e}", options.dag))?;
    let in_file = |e: String| format!("{}: {e}", options.dag);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(options.workers).build().map_err(|e| e.to_string())?;
    if !options.kernels {
        let dag = Dag::parse(&text).map_err(in_file)?;
        let (line, completed) = timed(options, &pool, &dag, &dag)?;
        check_completed(options, completed)?;
        return Ok(line + "}");
    }
    let (mut body, dag) = Kernels::load(&text, options.slots.min(options.frames)).map_err(in_file)?;
    let (line, completed) = timed(options, &pool, &dag, &body)?;
    if let Some(message) = body.error() {
        return Err(message);
    }
    check_completed(options, completed)?;
    let sinks: Vec<u32> = (0..dag.len() as u32).filter(|&t| dag.successors(t).is_empty()).collect();
    Ok(format!("{line}, \"sinks\": {}}}", body.sink_json(&sinks, options.frames as u64 - 1)?))
}

/// Runs every frame on `pool` and times it: the JSON line without its closing brace, and the
/// frames completed (all of them, unless a body failed).
fn timed<B: Body>(options: &Options, pool: &rayon::ThreadPool, dag: &Dag, body: &B) -> Result<(String, usize), String> {
    pool.broadcast(|_| ()); // every thread started before the clock does
    let frames = Run::new(dag, body, options.slots, options.frames);
    let start = Instant::now();
    let completed = pool.install(|| frames.execute());
    let wall = start.elapsed().as_secs_f64();
    let tasks = completed * dag.len();
    let threads = pool.current_num_threads();
    let line = format!(
        r#"{{"runtime": "rayon", "threads": {threads}, "frames": {completed}, "tasks": {tasks}, "wall_time_s": {wall:.9}"#
    );
    Ok((line, completed))
}

fn check_completed(options: &Options, completed: usize) -> Result<(), String> {
    if completed != options.frames {
        return Err(format!("completed {completed} frames of {}", options.frames));
    }
    Ok(())
}

fn main() -> ExitCode {
    match parse_options(std::env::args().skip(1)).and_then(|options| run(&options)) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
