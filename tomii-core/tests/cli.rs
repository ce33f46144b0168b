//! The `tomii` command end to end: every bad input ends with one `error:` line on stderr naming
//! the thing at fault and a non-zero exit, never a panic report or a hang; a good run prints its
//! summary and writes a trace CSV and a report JSON with exact counts.
//!
//! Each child runs under a 60 s watchdog. Needs `cargo build --workspace` first (plugins).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::cli::{Run, assert_error, finish, tomii};
use common::{fifo_lib, graph_path, plugin_dir, synthetic_lib};

/// `tomii ARGS...`.
fn run(args: &[&str]) -> Run {
    let mut command = tomii();
    command.args(args);
    finish(command)
}

/// `tomii run GRAPH --dylib <synthetic> EXTRA...`.
fn run_graph(graph: &Path, extra: &[&str]) -> Run {
    let mut command = tomii();
    command.arg("run").arg(graph).arg("--dylib").arg(synthetic_lib()).args(extra);
    finish(command)
}

fn fixture(name: &str) -> PathBuf {
    graph_path(name)
}

fn text(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// Asserts no summary line reached stdout.
fn assert_no_summary(run: &Run) {
    assert!(!run.stdout.contains("frames/s"), "a summary was printed:\n{}", run.stdout);
}

// ---- graphs ----

#[test]
fn malformed_json_names_the_file_and_line() {
    let graph = fixture("malformed.json");
    assert_error(&run_graph(&graph, &[]), &[text(&graph), "line 3"]);
}

#[test]
fn unknown_predecessor_is_named() {
    let graph = fixture("unknown_predecessor.json");
    assert_error(&run_graph(&graph, &[]), &[text(&graph), "\"a\"", "\"ghost\""]);
}

#[test]
fn duplicate_node_name_is_named() {
    let graph = fixture("duplicate_node.json");
    assert_error(&run_graph(&graph, &[]), &[text(&graph), "\"twin\""]);
}

#[test]
fn cycle_names_its_nodes() {
    let graph = fixture("cycle.json");
    assert_error(&run_graph(&graph, &[]), &[text(&graph), "cycle", "first[0]", "second[0]"]);
}

#[test]
fn edge_to_a_missing_instance_is_named() {
    let graph = fixture("offset_beyond_factor.json");
    assert_error(&run_graph(&graph, &[]), &[text(&graph), "\"down\"", "\"up\"", "instance 4"]);
}

#[test]
fn factor_zero_is_named() {
    let graph = fixture("factor_zero.json");
    assert_error(&run_graph(&graph, &[]), &[text(&graph), "\"nothing\"", "factor"]);
}

#[test]
fn empty_graph_is_rejected() {
    let graph = fixture("empty.json");
    assert_error(&run_graph(&graph, &[]), &[text(&graph), "no nodes"]);
}

#[test]
fn missing_graph_file_is_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("absent.json");
    let line = assert_error(&run_graph(&graph, &[]), &[text(&graph)]);
    // The cause (an io error) is part of the message once, not repeated.
    assert_eq!(line.matches("os error").count(), 1, "the cause is repeated: {line}");
}

// ---- run options ----

#[test]
fn zero_workers_is_rejected() {
    assert_error(&run_graph(&fixture("checksum_chain.json"), &["--workers", "0"]), &["workers"]);
}

#[test]
fn zero_slots_is_rejected() {
    assert_error(&run_graph(&fixture("checksum_chain.json"), &["--slots", "0"]), &["slots"]);
}

/// `--frames 0` runs until Ctrl-C; the interrupt completes the frames in flight, and the report
/// and the streamed trace hold every frame that ran.
#[test]
fn an_unbounded_run_stops_cleanly_on_ctrl_c() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (report, trace) = (dir.path().join("report.json"), dir.path().join("trace.csv"));
    let mut command = tomii();
    command.arg("run").arg(fixture("diamond.json")).arg("--dylib").arg(synthetic_lib());
    command.args(["--frames", "0", "--slots", "2", "--workers", "2", "--quiet", "--report"]).arg(&report);
    command.arg("--trace").arg(&trace);
    let report = interrupt_once_traced(command, &trace, &report, libc::SIGINT);
    let frames = report["frames"].as_u64().expect("frames");
    assert!(frames > 0, "no frame ran: {report}");
    assert_eq!(report["tasks"].as_u64(), Some(frames * 3), "every frame completed all of its 3 tasks");
    let rows = std::fs::read_to_string(&trace).expect("a trace").lines().count() as u64 - 1;
    assert_eq!((rows, report["trace_lost"].as_u64()), (frames * 3, Some(0)), "one trace row per task");
}

/// A 32-wide pipeline of noop tasks, four stages deep (128 tasks a frame), written into `dir`.
fn wide_noop_pipeline(dir: &Path) -> PathBuf {
    let stage = |i: usize| {
        let args = match i {
            0 => String::new(),
            _ => format!(r#"{{"type": "$res", "predecessor": {{"name": "s{}"}}}}"#, i - 1),
        };
        format!(r#"{{"name": "s{i}", "function": "noop", "factor": 32, "args": [{args}]}}"#)
    };
    let nodes: Vec<String> = (0..4).map(stage).collect();
    let path = dir.join("wide.json");
    std::fs::write(&path, format!(r#"{{"name": "wide", "nodes": [{}]}}"#, nodes.join(", "))).expect("the graph");
    path
}

/// An unbounded run of many tiny tasks with every file made from the trace (issue 30, item 7):
/// the host formats them slower than two workers run them, yet `--max-runtime-s` stops the run
/// on time, and each file holds every task once: the CSV trace, the decisions, the record's task
/// rows and the timing file's executions (the workers wait for the trace rather than drop it).
#[test]
fn a_trace_that_cannot_keep_up_stops_on_time_and_every_file_holds_every_task() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = |name: &str| dir.path().join(name);
    let (report, trace, decisions, record, timing) =
        (path("report.json"), path("trace.csv"), path("decisions"), path("record.csv"), path("timing.txt"));
    let mut command = tomii();
    command.arg("run").arg(wide_noop_pipeline(dir.path())).arg("--dylib").arg(synthetic_lib());
    command.args(["--frames", "0", "--max-runtime-s", "1", "--slots", "4", "--workers", "2"]);
    command.arg("--report").arg(&report).arg("--trace").arg(&trace).arg("--record-decisions").arg(&decisions);
    command.arg("--record").arg(&record).arg("--timing").arg(&timing);
    // Well past the second it runs and the time to write what the workers handed over at its end.
    let run = common::cli::finish_within(command, Duration::from_secs(30));
    assert!(run.status.success(), "{}", run.stderr);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("a report")).expect("the report is JSON");
    let tasks = report["tasks"].as_u64().expect("tasks");
    assert!(tasks > 0 && report["status"] == "interrupted", "{report}");
    assert_eq!((report["trace_lost"].as_u64(), report["trace_records"].as_u64()), (Some(0), Some(tasks)));
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let trace_rows = read(&trace).lines().count() as u64 - 1;
    let numbers = |line: &str| line.split(',').map(|f| f.parse::<u64>().ok()).collect::<Option<Vec<u64>>>();
    let decision_rows = read(&decisions).lines().filter(|l| numbers(l).is_some_and(|n| n.len() == 6)).count();
    // Task execution rows are those of the frames' slots, 0..4 (README.md, "--record").
    let record_rows = read(&record).lines().skip(1).filter(|l| numbers(l).is_some_and(|n| n[0] < 4)).count();
    let timing_text = read(&timing);
    let executions: u64 = timing_text
        .lines()
        .filter_map(|line| line.split_once("Total Executions: ").and_then(|(_, n)| n.trim().parse::<u64>().ok()))
        .sum();
    assert_eq!(
        (trace_rows, decision_rows as u64, record_rows as u64, executions),
        (tasks, tasks, tasks, tasks),
        "rows of the trace, the decisions, the record's tasks and the timing file's executions, for {tasks} tasks"
    );
    let waited = report["trace_wait_s"].as_f64().expect("trace_wait_s");
    let worker_s = 2.0 * report["wall_time_s"].as_f64().expect("wall_time_s");
    if waited > 0.01 * worker_s {
        assert!(run.stderr.contains("note: the trace could not keep up"), "{}", run.stderr);
    }
}

/// A simulation of more frames than it could finish stops on Ctrl-C as a run does: the frames in
/// flight complete, and the report and the trace hold every frame simulated.
#[test]
fn a_long_simulation_stops_cleanly_on_ctrl_c() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (report, trace) = (dir.path().join("report.json"), dir.path().join("trace.csv"));
    let costs = dir.path().join("costs.json");
    std::fs::write(&costs, r#"{"default": {"fixed": {"ns": 10000}}}"#).expect("the cost model");
    let mut command = tomii();
    command.arg("simulate").arg(fixture("diamond.json")).arg("--cost-model").arg(&costs);
    command.args(["--frames", "1000000000000", "--slots", "2"]);
    command.args(["--workers", "2", "--quiet", "--report"]).arg(&report).arg("--trace").arg(&trace);
    let report = interrupt_once_traced(command, &trace, &report, libc::SIGINT);
    let frames = report["frames"].as_u64().expect("frames");
    assert!(frames > 0 && report["source"] == "simulated", "{report}");
    assert_eq!(report["tasks"].as_u64(), Some(frames * 3), "every frame completed all of its 3 tasks");
    let rows = std::fs::read_to_string(&trace).expect("a trace").lines().count() as u64 - 1;
    assert_eq!(rows, frames * 3, "one trace row per task");
}

/// SIGTERM (a `kill`, a supervisor's stop) ends a long simulation as Ctrl-C does, within seconds:
/// the frames in flight complete and the report holds every frame simulated.
#[test]
fn a_long_simulation_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (report, trace) = (dir.path().join("report.json"), dir.path().join("trace.csv"));
    let costs = dir.path().join("costs.json");
    std::fs::write(&costs, r#"{"default": {"fixed": {"ns": 10000}}}"#).expect("the cost model");
    let mut command = tomii();
    command.arg("simulate").arg(fixture("diamond.json")).arg("--cost-model").arg(&costs);
    command.args(["--frames", "1000000000000", "--quiet", "--report"]).arg(&report).arg("--trace").arg(&trace);
    let report = interrupt_once_traced(command, &trace, &report, libc::SIGTERM);
    assert!(report["frames"].as_u64().is_some_and(|frames| frames > 0), "{report}");
}

/// How soon a stopped run or simulation must have exited: its frames in flight complete in
/// milliseconds; the rest is a debug build on a busy machine.
const STOP_LIMIT: Duration = Duration::from_secs(10);

/// Starts `command`, which streams its trace to `trace` and runs until stopped; sends it one
/// `signal` (SIGINT: Ctrl-C) once the trace has rows (a fixed pause could end before the run
/// started, on a loaded machine), and returns the report it wrote to `report`, having checked
/// that it exited 0 within [`STOP_LIMIT`] saying it was interrupted.
fn interrupt_once_traced(mut command: Command, trace: &Path, report: &Path, signal: libc::c_int) -> serde_json::Value {
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("tomii");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !std::fs::metadata(trace).is_ok_and(|m| m.len() > 0) {
        assert!(child.try_wait().expect("waiting").is_none(), "an unbounded run ended on its own");
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("no trace row within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(child.try_wait().expect("waiting").is_none(), "an unbounded run ended on its own");
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    let stopped = std::time::Instant::now();
    while child.try_wait().expect("waiting").is_none() {
        if stopped.elapsed() > STOP_LIMIT {
            let _ = child.kill();
            panic!("still running {STOP_LIMIT:?} after signal {signal}; killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("tomii's exit");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr:\n{stderr}");
    assert!(stderr.contains("interrupted: stopped after"), "stderr:\n{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report).expect("a report")).expect("the report is JSON");
    assert_eq!(report["interrupted"], true);
    report
}

/// Under `ulimit -v 3 GB`, a run whose task cells alone take 5 GB (4 million instances × 32 slots)
/// is refused before it starts, naming both figures, instead of aborting on a failed allocation.
#[test]
fn a_run_beyond_the_address_space_left_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let graph = dir.path().join("wide.json");
    std::fs::write(&graph, r#"{"nodes": [{"name": "wide", "function": "noop", "factor": 4000000}]}"#).expect("graph");
    let tomii = env!("CARGO_BIN_EXE_tomii");
    let run = format!(
        "ulimit -v 3000000 && exec {tomii} run {} --dylib {} --slots 32",
        graph.display(),
        synthetic_lib().display()
    );
    let mut command = Command::new("sh");
    command.arg("-c").arg(run).env_remove("RUST_BACKTRACE");
    let run = finish(command);
    assert_eq!(run.status.code(), Some(1), "stderr: {}", run.stderr);
    assert!(run.stderr.starts_with("error: 32 slot(s) × 4000000 instances need at least"), "{}", run.stderr);
    assert!(run.stderr.contains("of memory available; use fewer slots or fewer instances"), "{}", run.stderr);
}

#[test]
fn use_workers_beyond_the_worker_count_is_named() {
    let graph = fixture("use_workers.json");
    assert_error(&run_graph(&graph, &["--workers", "1"]), &[text(&graph), "\"pinned\"", "use_workers", "1 worker"]);
}

#[test]
fn sched_opt_without_equals_is_rejected() {
    let run = run_graph(&fixture("checksum_chain.json"), &["--sched-opt", "verbose"]);
    assert_error(&run, &["--sched-opt", "KEY=VALUE", "verbose"]);
}

// ---- kernels ----

#[test]
fn missing_kernel_names_the_kernel_and_the_library() {
    let run = run_graph(&fixture("missing_kernel.json"), &[]);
    assert_error(&run, &["\"no_such_kernel\"", "\"a\"", text(&synthetic_lib())]);
}

#[test]
fn no_dylib_names_the_kernel_and_the_option() {
    let run = run(&["run", text(&fixture("checksum_chain.json"))]);
    assert_error(&run, &["\"checksum\"", "--dylib"]);
}

#[test]
fn nonexistent_dylib_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("libnothing.so");
    let run = run(&["run", text(&fixture("checksum_chain.json")), "--dylib", text(&missing)]);
    assert_error(&run, &[text(&missing)]);
}

#[test]
fn non_library_dylib_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("libfake.so");
    std::fs::write(&fake, "this is not an ELF file\n").unwrap();
    let run = run(&["run", text(&fixture("checksum_chain.json")), "--dylib", text(&fake)]);
    assert_error(&run, &[text(&fake), "cannot load"]);
}

#[test]
fn scheduler_library_as_dylib_is_not_a_kernel_library() {
    let fifo = fifo_lib();
    let run = run(&["run", text(&fixture("checksum_chain.json")), "--dylib", text(&fifo)]);
    assert_error(&run, &[text(&fifo), "tomii_kernels_v1"]);
}

#[test]
fn relative_dylib_path_is_found_from_the_working_directory() {
    let (dir, file) = copy_to_temp_dir(&synthetic_lib(), "libcopied_kernels.so");
    let mut command = tomii();
    command.current_dir(dir.path()).arg("run").arg(fixture("checksum_chain.json")).args(["--dylib", file]);
    let run = finish(command);
    assert!(run.status.success(), "a relative --dylib path in the working directory failed:\n{}", run.stderr);
}

/// Copies `library` into a new directory, off the loader's search path (cargo puts target/<profile>
/// on LD_LIBRARY_PATH), as `file`.
fn copy_to_temp_dir<'f>(library: &Path, file: &'f str) -> (tempfile::TempDir, &'f str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(library, dir.path().join(file)).unwrap();
    (dir, file)
}

#[test]
fn kernel_error_names_node_frame_and_message() {
    let run = run_graph(&fixture("fail.json"), &["--workers", "2", "--slots", "4", "--frames", "50"]);
    assert_error(&run, &["disk on fire", "\"breaker\"", "\"fail\"", "frame "]);
    assert_no_summary(&run);
}

/// A run that fails keeps what it did: the report says how it ended and how far it got, the trace
/// holds every task that ran, and a second line says so.
#[test]
fn a_failed_run_writes_its_report_and_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (report, trace) = (dir.path().join("report.json"), dir.path().join("trace.csv"));
    let run = run_graph(&fixture("fail.json"), &["--frames", "50", "--report", text(&report), "--trace", text(&trace)]);
    assert_error(&run, &["disk on fire"]);
    assert!(run.stderr.contains("the run stopped after 0 frame(s) of 50"), "{}", run.stderr);
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(written["status"], "failed");
    assert!(written["error"].as_str().unwrap().contains("disk on fire"), "{written}");
    assert_eq!(written["frames"], 0);
    // The four `src` instances of frame 0 ran before `breaker` failed.
    let rows: Vec<String> = std::fs::read_to_string(&trace).unwrap().lines().skip(1).map(str::to_owned).collect();
    assert_eq!(rows.iter().filter(|row| row.starts_with("src,")).count(), 4, "{rows:?}");
    assert_eq!(written["tasks"].as_u64(), Some(rows.len() as u64), "{written}");
}

#[test]
fn panicking_kernel_is_one_error_line() {
    let run = run_graph(&fixture("panic.json"), &["--frames", "3"]);
    assert_error(&run, &["\"bomb\"", "panic kernel called", "frame 0"]);
    assert_no_summary(&run);
}

// ---- outputs ----

#[test]
fn unwritable_trace_fails_before_the_run() {
    // The run of fail.json would fail in its first frame; naming the trace path instead shows the
    // check came first.
    assert_path_checked_before_the_run("--trace", "/nonexistent-dir/t.csv");
}

#[test]
fn unwritable_report_fails_before_the_run() {
    assert_path_checked_before_the_run("--report", "/nonexistent-dir/r.json");
}

/// `tomii run fail.json OPTION PATH`, PATH not writable, fails naming PATH, not the failure of
/// fail.json's first frame: the path is checked before the run starts.
fn assert_path_checked_before_the_run(option: &str, path: &str) {
    let run = run_graph(&fixture("fail.json"), &[option, path]);
    let line = assert_error(&run, &[path]);
    assert!(!line.contains("disk on fire"), "the run started before the path was checked: {line}");
    assert_no_summary(&run);
}

// ---- schedulers ----

#[test]
fn unknown_scheduler_names_it_and_the_search_path() {
    let run = run_graph(&fixture("checksum_chain.json"), &["--scheduler", "nosuch"]);
    assert_error(&run, &["\"nosuch\"", "libtomii_sched_nosuch.so", text(&plugin_dir())]);
}

#[test]
fn kernel_library_as_scheduler_plugin_is_not_a_scheduler() {
    let synthetic = synthetic_lib();
    let run = run_graph(&fixture("checksum_chain.json"), &["--scheduler-plugin", text(&synthetic)]);
    assert_error(&run, &[text(&synthetic), "tomii_scheduler_v1"]);
}

#[test]
fn relative_scheduler_plugin_path_is_found_from_the_working_directory() {
    let (dir, file) = copy_to_temp_dir(&fifo_lib(), "libcopied_scheduler.so");
    let mut command = tomii();
    command.current_dir(dir.path()).arg("run").arg(fixture("checksum_chain.json"));
    command.args(["--dylib", text(&synthetic_lib()), "--scheduler-plugin", file]);
    let run = finish(command);
    assert!(
        run.status.success(),
        "a relative --scheduler-plugin path in the working directory failed:\n{}",
        run.stderr
    );
}

// ---- success ----

#[test]
fn help_mentions_every_run_flag() {
    let run = run(&["--help"]);
    assert!(run.status.success(), "tomii --help failed:\n{}", run.stderr);
    let flags = [
        "--dylib",
        "--workers",
        "--slots",
        "--frames",
        "--scheduler",
        "--scheduler-plugin",
        "--sched-opt",
        "--trace",
        "--report",
        "--pop-batch",
    ];
    for flag in flags {
        assert!(run.stdout.contains(flag), "--help does not mention {flag}:\n{}", run.stdout);
    }
}

/// The commands the Python package's `tomii` runs itself (python/tomii/cli.py) are in the
/// native binary's help too, and there each says where to find it instead of being unknown.
#[test]
fn every_python_package_command_is_listed_and_points_at_the_package() {
    let help = run(&["--help"]);
    for command in ["sweep", "tune", "new", "sdk"] {
        assert!(help.stdout.contains(&format!("tomii {command}")), "--help does not list {command}:\n{}", help.stdout);
        let line = assert_error(&run(&[command, "x"]), &[&format!("`tomii {command}`"), "part of the Python package"]);
        assert!(line.contains("pip install ."), "{line}");
    }
}

/// checksum_chain.json: (node, factor) in file order.
const CHAIN: [(&str, u64); 3] = [("a", 4), ("b", 4), ("c", 1)];

#[test]
fn run_prints_summary_and_writes_trace_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, report) = (dir.path().join("trace.csv"), dir.path().join("report.json"));
    let frames = 20u64;
    let options =
        ["--workers", "2", "--slots", "3", "--frames", "20", "--trace", text(&trace), "--report", text(&report)];
    let run = run_graph(&fixture("checksum_chain.json"), &options);
    assert!(run.status.success(), "the run failed:\n{}", run.stderr);
    assert!(run.stdout.starts_with("fifo on checksum_chain: 20 frames (180 tasks)"), "summary: {}", run.stdout);
    check_trace_csv(&std::fs::read_to_string(&trace).unwrap(), frames);
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    check_report(&json, frames, 2);
}

/// The header, then exactly one row per (node, instance, frame).
fn check_trace_csv(csv: &str, frames: u64) {
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("node,instance,frame,slot,worker,ready_ns,start_ns,end_ns"));
    let mut seen = std::collections::BTreeSet::new();
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), 8, "row {line:?}");
        for number in &fields[1..] {
            number.parse::<u64>().unwrap_or_else(|_| panic!("row {line:?}: {number:?} is not a number"));
        }
        assert!(
            seen.insert((fields[0].to_owned(), fields[1].to_owned(), fields[2].to_owned())),
            "duplicate row {line:?}"
        );
    }
    let instances: u64 = CHAIN.iter().map(|(_, factor)| factor).sum();
    assert_eq!(seen.len() as u64, frames * instances, "rows");
    for (node, factor) in CHAIN {
        for (instance, frame) in (0..factor).flat_map(|i| (0..frames).map(move |f| (i, f))) {
            let key = (node.to_owned(), instance.to_string(), frame.to_string());
            assert!(seen.contains(&key), "no row for {key:?}");
        }
    }
}

fn check_report(json: &serde_json::Value, frames: u64, workers: usize) {
    let instances: u64 = CHAIN.iter().map(|(_, factor)| factor).sum();
    assert_eq!(json["frames"].as_u64(), Some(frames), "frames in {json}");
    assert_eq!(json["tasks"].as_u64(), Some(frames * instances), "tasks in {json}");
    let throughput = json["throughput_frames_per_s"].as_f64().expect("throughput is a number");
    assert!(throughput > 0.0 && throughput.is_finite(), "throughput {throughput}");
    let latency = |p: &str| json["latency_us"][p].as_f64().unwrap_or_else(|| panic!("latency_us.{p} in {json}"));
    let (p50, p95, p99) = (latency("p50"), latency("p95"), latency("p99"));
    assert!(0.0 <= p50 && p50 <= p95 && p95 <= p99, "latency percentiles {p50} {p95} {p99}");
    let per_node = json["per_node"].as_array().expect("per_node is a list");
    assert_eq!(per_node.len(), CHAIN.len());
    for (node, factor) in CHAIN {
        let entry = per_node.iter().find(|e| e["name"].as_str() == Some(node)).unwrap_or_else(|| panic!("{node}"));
        assert_eq!(entry["count"].as_u64(), Some(factor * frames), "per_node count of {node}");
    }
    let per_worker = json["per_worker"].as_array().expect("per_worker is a list");
    assert_eq!(per_worker.len(), workers);
    for entry in per_worker {
        let busy = entry["busy_fraction"].as_f64().unwrap_or_else(|| panic!("busy_fraction in {entry}"));
        assert!((0.0..=1.0).contains(&busy), "busy_fraction {busy}");
    }
}

// ---- sizes and special files ----

#[test]
fn sizes_that_drive_allocations_are_refused_before_allocating() {
    let graph = fixture("checksum_chain.json");
    assert_error(
        &run_graph(&graph, &["--pop-batch", "1000000000"]),
        &["pop_batch is 1000000000", "4096", "--pop-batch"],
    );
    assert_error(&run_graph(&graph, &["--workers", "100000"]), &["workers is 100000", "1024"]);
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge.json");
    std::fs::write(&huge, r#"{"nodes": [{"name": "a", "function": "noop", "factor": 300000000}]}"#).unwrap();
    assert_error(&run_graph(&huge, &[]), &[r#"node "a": factor 300000000 is too large"#, "268435456"]);
}

/// A FIFO named `fifo` in `dir`.
fn make_fifo(dir: &Path) -> PathBuf {
    let fifo = dir.join("fifo");
    let path = std::ffi::CString::new(text(&fifo)).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    fifo
}

/// A sparse file of `bytes` bytes in `dir`: over a reader's limit without taking the disk.
fn sparse_file(dir: &Path, name: &str, bytes: u64) -> PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path).and_then(|file| file.set_len(bytes)).expect("a sparse file");
    path
}

#[test]
fn special_files_are_refused_instead_of_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = make_fifo(dir.path());
    assert_error(&run_graph(&fifo, &[]), &[text(&fifo), "is a FIFO, not a regular file"]);
    let graph = fixture("checksum_chain.json");
    assert_error(&run_graph(&graph, &["--trace", text(&fifo)]), &["--trace", text(&fifo), "is a FIFO"]);
    assert_error(&run_graph(&graph, &["--report", text(&fifo)]), &["--report", text(&fifo), "is a FIFO"]);
}

/// `tomii simulate diamond.json` with a fixed cost per task and `extra` options.
fn simulate(dir: &Path, extra: &[&str]) -> Run {
    let costs = dir.join("costs.json");
    std::fs::write(&costs, r#"{"default": {"fixed": {"ns": 1000}}}"#).expect("the cost model");
    run(&[&["simulate", text(&fixture("diamond.json")), "--cost-model", text(&costs), "--quiet"], extra].concat())
}

/// A decisions file of a 3-frame simulation of diamond.json, written in `dir`.
fn recorded_decisions(dir: &Path) -> PathBuf {
    let decisions = dir.join("decisions.jsonl");
    let recorded = simulate(dir, &["--frames", "3", "--record-decisions", text(&decisions)]);
    assert!(recorded.status.success(), "{}", recorded.stderr);
    decisions
}

/// Every command holds its inputs and outputs to `tomii run`'s rule (`files.rs`): a FIFO or a
/// device is refused with one line naming the option and the file, never waited on or read
/// without end. Each child runs under the 60 s watchdog: a regression fails, it does not hang.
#[test]
fn every_command_refuses_special_files_naming_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = make_fifo(dir.path());
    let (graph, fifo) = (fixture("diamond.json"), text(&fifo));
    let a_fifo = "is a FIFO, not a regular file";
    for option in ["--report", "--trace", "--record-decisions"] {
        assert_error(&simulate(dir.path(), &[option, fifo]), &[&format!("{option} {fifo}: {a_fifo}")]);
    }
    for (model, says) in [(fifo, a_fifo), ("/dev/zero", "is a character device, not a regular file")] {
        let refused = run(&["simulate", text(&graph), "--cost-model", model]);
        assert_error(&refused, &[&format!("--cost-model {model}: {says}")]);
    }
    assert_error(&run(&["simulate", fifo]), &[&format!("{fifo}: {a_fifo}")]);
    assert_error(&run(&["convert", text(&graph), "-o", fifo]), &[&format!("--output {fifo}: {a_fifo}")]);
    assert_error(&run(&["send", "--graph", fifo]), &[&format!("--graph {fifo}: {a_fifo}")]);
    assert_error(&run(&["replay", fifo]), &[&format!("{fifo}: {a_fifo}")]);
    assert_error(&run(&["replay", "/dev/zero"]), &["/dev/zero: is a character device, not a regular file"]);
    let decisions = recorded_decisions(dir.path());
    let replayed = run(&["replay", text(&decisions), "--report", fifo]);
    assert_error(&replayed, &[&format!("--report {fifo}: {a_fifo}")]);
}

/// The inputs of a simulation and a replay are checked before they are used: a cost model's
/// distributions, the sizes a decisions file's header gives, and the size of either file.
#[test]
fn simulation_and_replay_inputs_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model.json");
    for (spec, field) in [
        (r#"{"default": {"lognormal": {"median_ns": 1000, "sigma": -0.5}}}"#, "default: lognormal: sigma"),
        (
            r#"{"nodes": {"src": {"lognormal": {"median_ns": 1000, "sigma": -0.5}}}}"#,
            r#"nodes."src": lognormal: sigma"#,
        ),
    ] {
        std::fs::write(&model, spec).unwrap();
        let refused = run(&["simulate", text(&fixture("diamond.json")), "--cost-model", text(&model)]);
        assert_error(&refused, &["--cost-model", text(&model), field, "must be 0 or more", "got -0.5"]);
    }
    let huge = sparse_file(dir.path(), "huge", (1 << 30) + 1);
    let refused = run(&["simulate", text(&fixture("diamond.json")), "--cost-model", text(&huge)]);
    assert_error(&refused, &["--cost-model", text(&huge), "has 1073741825 bytes, more than the 1073741824 read"]);
    assert_error(&run(&["replay", text(&huge)]), &[text(&huge), "has 1073741825 bytes"]);
    // A header whose pop batch is beyond the engine's (engine::MAX_POP_BATCH, the catalog's).
    let decisions = recorded_decisions(dir.path());
    let recorded = std::fs::read_to_string(&decisions).unwrap();
    let (header, rows) = recorded.split_once('\n').unwrap();
    let mut header: serde_json::Value = serde_json::from_str(header).unwrap();
    header["pop_batch"] = 1_000_000_000.into();
    let edited = dir.path().join("edited.jsonl");
    std::fs::write(&edited, format!("{header}\n{rows}")).unwrap();
    let refused = run(&["replay", text(&edited)]);
    assert_error(&refused, &[text(&edited), "line 1", "pop_batch is 1000000000", "between 0 and 4096", "--pop-batch"]);
}

/// No output of `tomii simulate` or `tomii replay` may be the file it reads, under its own path or
/// another (a hard or symbolic link): refused before anything is written, the file intact.
#[test]
fn simulate_and_replay_never_write_over_their_input() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("graph.json");
    let original = std::fs::read_to_string(fixture("diamond.json")).unwrap();
    std::fs::write(&graph, &original).unwrap();
    let (hard, soft) = (dir.path().join("hard.json"), dir.path().join("soft.json"));
    std::fs::hard_link(&graph, &hard).unwrap();
    std::os::unix::fs::symlink(&graph, &soft).unwrap();
    let costs = dir.path().join("costs.json");
    std::fs::write(&costs, r#"{"default": {"fixed": {"ns": 1000}}}"#).unwrap();
    for (option, path) in [("--report", &graph), ("--trace", &hard), ("--record-decisions", &soft)] {
        let refused = run(&["simulate", text(&graph), "--cost-model", text(&costs), option, text(path)]);
        assert_error(&refused, &[option, text(path), "is the graph file itself"]);
        assert_eq!(std::fs::read_to_string(&graph).unwrap(), original, "{option} wrote over the graph");
    }
    let decisions = recorded_decisions(dir.path());
    let recorded = std::fs::read_to_string(&decisions).unwrap();
    let linked = dir.path().join("linked.jsonl");
    std::fs::hard_link(&decisions, &linked).unwrap();
    for path in [&decisions, &linked] {
        let refused = run(&["replay", text(&decisions), "--report", text(path)]);
        assert_error(&refused, &["--report", text(path), "is the decisions file itself"]);
        assert_eq!(std::fs::read_to_string(&decisions).unwrap(), recorded, "the report wrote over the decisions");
    }
}

#[test]
fn the_report_never_overwrites_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("graph.json");
    let original = std::fs::read_to_string(fixture("checksum_chain.json")).unwrap();
    std::fs::write(&graph, &original).unwrap();
    assert_error(&run_graph(&graph, &["--report", text(&graph)]), &[text(&graph), "is the graph file itself"]);
    assert_eq!(std::fs::read_to_string(&graph).unwrap(), original);
}

#[test]
fn a_key_given_twice_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("twice.json");
    std::fs::write(&graph, r#"{"nodes": [{"name": "a", "function": "noop", "factor": 2, "factor": 3}]}"#).unwrap();
    assert_error(&run_graph(&graph, &[]), &[text(&graph), r#"the key "factor" appears twice"#]);
}

#[test]
fn a_megabyte_name_gives_a_short_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("long.json");
    let name = "x".repeat(1 << 20);
    std::fs::write(&graph, format!(r#"{{"nodes": [{{"name": "{name}", "function": "no_such_kernel"}}]}}"#)).unwrap();
    let run = run_graph(&graph, &[]);
    let line = assert_error(&run, &["no_such_kernel"]);
    assert!(line.len() < 2100, "an error line of {} bytes", line.len());
}

// ---- listing schedulers ----

/// `$TOMII_SCHEDULER_PATH` holding fifo as `libtomii_sched_my-fifo.so` and a library that is no
/// scheduler at all.
fn odd_scheduler_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fifo_lib(), dir.path().join("libtomii_sched_my-fifo.so")).unwrap();
    std::fs::write(dir.path().join("libtomii_sched_broken.so"), b"not a library").unwrap();
    dir
}

#[test]
fn every_listed_scheduler_loads_by_its_listed_name_and_a_bad_one_hides_none() {
    let dir = odd_scheduler_dir();
    let mut command = tomii();
    command.arg("schedulers").env("TOMII_SCHEDULER_PATH", dir.path());
    let run = finish(command);
    assert!(run.status.success(), "{}", run.stderr);
    assert!(run.stdout.contains("my-fifo  "), "{}", run.stdout);
    assert!(run.stdout.contains("broken  (cannot load:"), "{}", run.stdout);
    assert!(run.stdout.contains("fifo  "), "the shipped schedulers are still listed: {}", run.stdout);
    let mut command = tomii();
    command.arg("run").arg(fixture("checksum_chain.json")).arg("--dylib").arg(synthetic_lib());
    command.args(["--scheduler", "my-fifo", "--quiet"]).env("TOMII_SCHEDULER_PATH", dir.path());
    let run = finish(command);
    assert!(run.status.success(), "--scheduler my-fifo: {}", run.stderr);
}

#[test]
fn a_reader_that_goes_away_ends_the_listing_quietly() {
    for command in ["knobs", "schema", "schedulers"] {
        // The reader is gone before the command starts, so its first write fails.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let child = tomii().arg(command).stdout(writer).stderr(Stdio::piped()).spawn().unwrap();
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "tomii {command}");
        assert_eq!(String::from_utf8_lossy(&output.stderr), "", "tomii {command}: nothing on stderr");
    }
}

#[test]
fn a_kernel_past_its_limit_ends_the_command_with_a_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("slow.json");
    // One instance spins for a minute.
    std::fs::write(&graph, r#"{"nodes": [{"name": "slow", "function": "spin", "factor": 2, "args": [60000000]}]}"#)
        .unwrap();
    let started = std::time::Instant::now();
    let run = run_graph(&graph, &["--kernel-timeout-ms", "300", "--workers", "2"]);
    assert_error(&run, &[r#"kernel "spin""#, r#"node "slow""#, "frame 0", "300 ms"]);
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
}
