//! `tomii-peer-rayon --dag FILE [--workers N] [--frames F] [--slots S]`: the Rayon peer of the
//! head-to-head suite (bench/suite). Reads the DAG, builds a Rayon pool of N threads and starts
//! them, then times one run of F frames (at most S in flight) and prints one JSON line:
//! `{"runtime": "rayon", "threads": N, "frames": F, "tasks": T, "wall_time_s": S}`.
//! Only the run is timed: never the file, the counters or the pool's creation.

mod dag;
mod executor;
mod spin;

use std::process::ExitCode;
use std::time::Instant;

use dag::Dag;
use executor::Run;

struct Options {
    dag: String,
    workers: usize,
    frames: usize,
    slots: usize,
}

fn parse_options(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options { dag: String::new(), workers: 2, frames: 1, slots: 1 };
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let count = || {
            value.parse::<usize>().ok().filter(|&n| n > 0).ok_or(format!("{flag}: {value:?} is not a positive integer"))
        };
        match flag.as_str() {
            "--dag" => options.dag = value.clone(),
            "--workers" => options.workers = count()?,
            "--frames" => options.frames = count()?,
            "--slots" => options.slots = count()?,
            _ => return Err(format!("unknown option {flag}; see the usage at the top of main.rs")),
        }
    }
    if options.dag.is_empty() {
        return Err("--dag FILE is required".into());
    }
    Ok(options)
}

fn run(options: &Options) -> Result<String, String> {
    let text = std::fs::read_to_string(&options.dag).map_err(|e| format!("{}: {e}", options.dag))?;
    let dag = Dag::parse(&text).map_err(|e| format!("{}: {e}", options.dag))?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(options.workers).build().map_err(|e| e.to_string())?;
    pool.broadcast(|_| ()); // every thread started before the clock does
    let frames = Run::new(&dag, options.slots, options.frames);
    let start = Instant::now();
    let completed = pool.install(|| frames.execute());
    let wall = start.elapsed().as_secs_f64();
    if completed != options.frames {
        return Err(format!("completed {completed} frames of {}", options.frames));
    }
    let tasks = completed * dag.len();
    let threads = pool.current_num_threads();
    Ok(format!(
        r#"{{"runtime": "rayon", "threads": {threads}, "frames": {completed}, "tasks": {tasks}, "wall_time_s": {wall:.9}}}"#
    ))
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
