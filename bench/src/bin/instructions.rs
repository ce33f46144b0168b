//! Instructions per task by callgrind at 1 worker, for W1 (a 10,000-node chain) and W4 (a 4×16
//! pipeline at slots 4), per scheduler: runs the real `tomii run` under callgrind twice per case,
//! with few and with many frames, and divides the difference of the worker thread's instructions
//! by the difference in tasks, so that start-up (loading, parsing, thread start) cancels.
//!
//! Prints a markdown table and the exact commands run. Needs valgrind; never times anything.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use tomii_bench::callgrind::{self, PerTask};
use tomii_bench::{CHAIN_LEN, Kernel, PIPELINE, SHIPPED_SCHEDULERS, chain_text, pipeline_text, plugin_dir};
use tomii_bench::{synthetic_file, thousands};

const USAGE: &str = "usage: instructions [--quick] [--schedulers A,B,...] [--tomii PATH] [--out DIR]
  --quick          small sizes (W1 a 200-node chain, W4 4 vs 12 frames), for CI
  --schedulers     the rows, by scheduler name; NAME+inline runs NAME with --inline-continuation
                   (default: every shipped scheduler, then fifo+inline)
  --tomii PATH     the tomii binary (default: the one beside this binary); its schedulers and
                   libtomii_synthetic.so are taken from beside it
  --out DIR        keep the graphs and callgrind's files in DIR (default: a temporary directory)";

/// The suffix of a row that runs its scheduler with inline continuation.
const INLINE: &str = "+inline";
/// Slots of W4: the issue's pipeline target is at slots 4.
const W4_SLOTS: u32 = 4;

#[derive(Debug, PartialEq, Eq)]
struct Options {
    quick: bool,
    schedulers: Vec<String>,
    tomii: Option<PathBuf>,
    out: Option<PathBuf>,
}

fn parse_options(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options { quick: false, schedulers: default_rows(), tomii: None, out: None };
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--quick" => options.quick = true,
            "--schedulers" => options.schedulers = scheduler_list(&value()?)?,
            "--tomii" => options.tomii = Some(PathBuf::from(value()?)),
            "--out" => options.out = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(options)
}

/// Every shipped scheduler, then fifo with inline continuation.
fn default_rows() -> Vec<String> {
    SHIPPED_SCHEDULERS.iter().map(|s| s.to_string()).chain([format!("fifo{INLINE}")]).collect()
}

fn scheduler_list(text: &str) -> Result<Vec<String>, String> {
    let names: Vec<String> = text.split(',').map(|s| s.trim().to_owned()).collect();
    match names.iter().find(|n| n.is_empty() || n.as_str() == INLINE) {
        Some(_) => Err(format!("--schedulers {text:?}: a scheduler name is empty")),
        None => Ok(names),
    }
}

/// One graph and the two frame counts it runs with.
struct Workload {
    name: &'static str,
    about: String,
    file: PathBuf,
    tasks_per_frame: u64,
    slots: u32,
    frames: [u64; 2],
}

impl Workload {
    fn extra_tasks(&self) -> u64 {
        (self.frames[1] - self.frames[0]) * self.tasks_per_frame
    }

    fn describe(&self) -> String {
        let [small, large] = self.frames;
        let extra = thousands(self.extra_tasks() as f64);
        format!("{}: {}, slots {}, frames {small} vs {large} ({extra} tasks more)", self.name, self.about, self.slots)
    }
}

/// W1 and W4, their graph files written into `dir`.
fn workloads(quick: bool, dir: &Path) -> Result<[Workload; 2], String> {
    let chain_len = if quick { 200 } else { CHAIN_LEN };
    let (stages, width) = PIPELINE;
    let w1 = Workload {
        name: "W1",
        about: format!("chain of {} noop nodes", thousands(f64::from(chain_len))),
        file: dir.join("w1_chain.json"),
        tasks_per_frame: u64::from(chain_len),
        slots: 1,
        frames: [1, 3],
    };
    let w4 = Workload {
        name: "W4",
        about: format!("pipeline of {stages} noop nodes of factor {width}, instance to instance"),
        file: dir.join("w4_pipeline.json"),
        tasks_per_frame: u64::from(stages * width),
        slots: W4_SLOTS,
        frames: if quick { [4, 12] } else { [20, 220] },
    };
    write(&w1.file, &chain_text(chain_len, Kernel::Noop))?;
    write(&w4.file, &pipeline_text(stages, width, Kernel::Noop))?;
    Ok([w1, w4])
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The binaries and the directory every run uses.
struct Setup {
    tomii: PathBuf,
    kernels: PathBuf,
    dir: PathBuf,
}

impl Setup {
    /// Runs `row` on `workload` for `frames` under callgrind; returns the command and its threads.
    fn run(
        &self,
        row: &str,
        workload: &Workload,
        frames: u64,
    ) -> Result<(String, Vec<callgrind::ThreadInstructions>), String> {
        let out = self.dir.join(format!("{}-{}-{frames}", workload.name, row.replace('+', "-")));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
        let args = self.valgrind_args(row, workload, frames, &out);
        let command = format!("valgrind {}", args.join(" "));
        let output = Command::new("valgrind").args(&args).output().map_err(|e| format!("{command}: {e}"))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(format!("{command}\nfailed ({}):\n{}", output.status, stderr.trim_end()));
        }
        Ok((command, callgrind::read_run(&out)?))
    }

    /// valgrind's arguments for one run, callgrind's files going into `out`.
    fn valgrind_args(&self, row: &str, workload: &Workload, frames: u64, out: &Path) -> Vec<String> {
        let (scheduler, inline) = match row.strip_suffix(INLINE) {
            Some(scheduler) => (scheduler, true),
            None => (row, false),
        };
        let callgrind = ["-q", "--tool=callgrind", "--separate-threads=yes"].map(str::to_owned);
        let mut args = Vec::from(callgrind);
        args.push(format!("--callgrind-out-file={}", out.join("callgrind.out").display()));
        args.extend([self.tomii.display().to_string(), "run".into(), workload.file.display().to_string()]);
        args.extend(["--dylib".into(), self.kernels.display().to_string()]);
        args.extend(["--scheduler".into(), scheduler.to_owned(), "--workers".into(), "1".into()]);
        args.extend(["--slots".into(), workload.slots.to_string(), "--frames".into(), frames.to_string()]);
        args.extend(["--quiet".into(), "--no-task-timing".into()]);
        if inline {
            args.push("--inline-continuation".into());
        }
        args
    }

    /// `row`'s per-task figures on `workload`: the large run minus the small one.
    fn measure(&self, row: &str, workload: &Workload, commands: &mut Vec<String>) -> Result<PerTask, String> {
        let mut runs = Vec::with_capacity(2);
        for frames in workload.frames {
            eprintln!("{} {row}: frames {frames}", workload.name);
            let (command, threads) = self.run(row, workload, frames)?;
            commands.push(command);
            runs.push(threads);
        }
        let figures = callgrind::per_task(&runs[0], &runs[1], workload.extra_tasks());
        figures.map_err(|e| format!("{row} on {}: {e}", workload.name))
    }
}

/// The temporary directory of a run without `--out`, removed at the end.
struct Scratch(Option<PathBuf>);

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn valgrind_version() -> Result<String, String> {
    let missing = "valgrind is not installed: apt-get install valgrind";
    let output = Command::new("valgrind").arg("--version").output().map_err(|_| missing.to_owned())?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn main() -> ExitCode {
    let options = match tomii_bench::command_line("instructions", USAGE, parse_options) {
        Ok(options) => options,
        Err(code) => return code,
    };
    match measure_all(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("instructions: {message}");
            ExitCode::FAILURE
        }
    }
}

fn measure_all(options: &Options) -> Result<(), String> {
    let valgrind = valgrind_version()?;
    let tomii = options.tomii.clone().unwrap_or_else(|| plugin_dir().join("tomii"));
    let beside = tomii.parent().unwrap_or(Path::new("."));
    let kernels = beside.join(synthetic_file());
    for needed in [&tomii, &kernels] {
        if !needed.is_file() {
            return Err(format!("{} is missing: run `cargo build --release --workspace` first", needed.display()));
        }
    }
    let (dir, _scratch) = match &options.out {
        Some(dir) => (dir.clone(), Scratch(None)),
        None => {
            let dir = std::env::temp_dir().join(format!("tomii-instructions-{}", std::process::id()));
            (dir.clone(), Scratch(Some(dir)))
        }
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let workloads = workloads(options.quick, &dir)?;
    let setup = Setup { tomii, kernels, dir };
    let mut commands = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    for row in &options.schedulers {
        let w1 = setup.measure(row, &workloads[0], &mut commands)?;
        let w4 = setup.measure(row, &workloads[1], &mut commands)?;
        rows.push((row.as_str(), [w1, w4]));
    }
    print_report(&valgrind, &setup.tomii, &workloads, &rows, &commands);
    Ok(())
}

fn print_report(valgrind: &str, tomii: &Path, workloads: &[Workload; 2], rows: &[Row], commands: &[String]) {
    println!("Instructions per task on the worker thread by callgrind ({valgrind}), 1 worker, noop kernels,");
    println!("no task timing: a large run minus a small one, so that start-up cancels.\n");
    for workload in workloads {
        println!("- {}", workload.describe());
    }
    println!("\n| scheduler | W1 instr/task | W4 instr/task |\n|---|---:|---:|");
    for (row, [w1, w4]) in rows {
        let name = match row.strip_suffix(INLINE) {
            Some(scheduler) => format!("{scheduler} + inline continuation"),
            None => row.to_string(),
        };
        println!("| {name} | {} | {} |", thousands(w1.instructions), thousands(w4.instructions));
    }
    println!("\n{}", worker_threads(rows));
    println!("The main thread is left out: its start-up calibrates the clock for a fixed time, so its count");
    println!("(and the whole process's) varies by millions of instructions between identical runs.");
    println!("\nCommands (tomii: {}):\n\n```sh", tomii.display());
    for command in commands {
        println!("{command}");
    }
    println!("```");
}

/// A row of the table: its name (`--schedulers`) and its W1 and W4 figures.
type Row<'a> = (&'a str, [PerTask; 2]);

/// Which thread was the worker: one line when it was the same in every case.
fn worker_threads(rows: &[Row]) -> String {
    let all: Vec<(u32, usize)> = rows.iter().flat_map(|(_, p)| p.map(|p| (p.worker_thread, p.threads))).collect();
    let rule = "of the threads the main one started, the one whose count grew most";
    match all.first() {
        Some(&first) if all.iter().all(|&t| t == first) => {
            format!("Worker ({rule}): thread {} of {} in every case.", first.0, first.1)
        }
        _ => {
            let case =
                |row: &str, name: &str, p: &PerTask| format!("{row} {name}: {} of {}", p.worker_thread, p.threads);
            let cases = rows.iter().flat_map(|(row, [w1, w4])| [case(row, "W1", w1), case(row, "W4", w4)]);
            format!("Worker ({rule}), by case: {}.", cases.collect::<Vec<_>>().join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tomii_bench::arguments as args;

    #[test]
    fn defaults_are_every_shipped_scheduler_then_fifo_inline() {
        let options = parse_options(args("")).unwrap();
        assert_eq!(options.schedulers.len(), SHIPPED_SCHEDULERS.len() + 1);
        assert_eq!(
            (options.schedulers[0].as_str(), options.schedulers.last().unwrap().as_str()),
            ("fifo", "fifo+inline")
        );
        assert!(!options.quick && options.tomii.is_none() && options.out.is_none());
    }

    #[test]
    fn options_override() {
        let options = parse_options(args("--quick --schedulers fifo,c-fifo --tomii t/tomii --out o")).unwrap();
        let expected = Options {
            quick: true,
            schedulers: vec!["fifo".into(), "c-fifo".into()],
            tomii: Some("t/tomii".into()),
            out: Some("o".into()),
        };
        assert_eq!(options, expected);
    }

    #[test]
    fn bad_options_are_refused() {
        for bad in ["--schedulers", "--schedulers fifo,,c-fifo", "--schedulers +inline", "--tomii", "--frames 3"] {
            assert!(parse_options(args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn extra_tasks_are_the_frames_between_the_runs() {
        let dir = tempfile::tempdir().unwrap();
        let [w1, w4] = workloads(false, dir.path()).unwrap();
        assert_eq!((w1.extra_tasks(), w4.extra_tasks()), (20_000, 12_800));
        assert!(w1.file.is_file() && w4.file.is_file());
        let [w1, w4] = workloads(true, dir.path()).unwrap();
        assert_eq!((w1.extra_tasks(), w4.extra_tasks()), (400, 512));
    }

    #[test]
    fn a_run_is_the_real_cli_on_one_worker_under_callgrind() {
        let dir = tempfile::tempdir().unwrap();
        let [_, w4] = workloads(false, dir.path()).unwrap();
        let setup = Setup { tomii: "bin/tomii".into(), kernels: "bin/libk.so".into(), dir: "d".into() };
        let args = setup.valgrind_args("fifo+inline", &w4, 220, Path::new("d/W4"));
        let tail = "bin/tomii run {file} --dylib bin/libk.so --scheduler fifo --workers 1 --slots 4 --frames 220 \
            --quiet --no-task-timing --inline-continuation";
        let expected = format!(
            "-q --tool=callgrind --separate-threads=yes --callgrind-out-file=d/W4/callgrind.out {}",
            tail.replace("{file}", &w4.file.display().to_string())
        );
        assert_eq!(args.join(" "), expected);
        let plain = setup.valgrind_args("c-fifo", &w4, 20, Path::new("d"));
        assert!(plain.contains(&"c-fifo".to_owned()) && !plain.contains(&"--inline-continuation".to_owned()));
    }
}
