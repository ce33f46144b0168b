//! Tomii 1.2's command line on `tomii run`: every 1.2 spelling means what it meant (or warns that it
//! means nothing here), `--exclude-streams` leaves its warm-up frames out of every figure, and the
//! timing file and scheduler record say what the trace says, in 1.2's layouts (a parser of the
//! timing file is written here from the layout in README.md).
//!
//! Needs `cargo build --workspace` first (plugins).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::cli::{Run, assert_error, finish, tomii};
use common::{graph_path, synthetic_lib};

/// `tomii run --json <fixture> --dylib <synthetic> EXTRA...`, in `dir`.
fn run_in(dir: &Path, graph: &str, extra: &[&str]) -> Run {
    let mut command = tomii();
    command.current_dir(dir).arg("run").arg("--json").arg(graph_path(graph)).arg("--dylib").arg(synthetic_lib());
    finish({
        command.args(extra);
        command
    })
}

fn ok(run: Run) -> Run {
    assert!(run.status.success(), "the run failed:\nstdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    run
}

fn report(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("r.json")).expect("the report was written");
    serde_json::from_str(&text).expect("the report is JSON")
}

// ---- spellings ----

#[test]
fn frame_counts_and_schedulers_keep_their_1_2_spellings() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], u64, &str)] = &[
        (&["--max-frames", "7"], 7, "fifo"),
        (&["--max-streams", "5"], 5, "fifo"),
        (&["--frames", "3", "--fifo"], 3, "fifo"),
        (&["--frames", "3", "--custom"], 3, "priority"),
        (&["--frames", "3", "--custom", "work-stealing"], 3, "work-stealing"),
    ];
    for (flags, frames, scheduler) in cases {
        ok(run_in(dir.path(), "diamond.json", &[flags, &["--report", "r.json", "--quiet"][..]].concat()));
        let report = report(dir.path());
        assert_eq!(report["frames"], *frames, "{flags:?}");
        assert_eq!(report["scheduler"]["name"], *scheduler, "{flags:?}");
    }
    ok(run_in(dir.path(), "diamond.json", &["--inline-continuation", "--report", "r.json", "--quiet"]));
    assert_eq!(report(dir.path())["inline_continuation"], true);
}

#[test]
fn two_schedulers_at_once_is_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    for flags in [&["--fifo", "--scheduler", "priority"][..], &["--custom", "--scheduler", "fifo"]] {
        assert_error(&run_in(dir.path(), "diamond.json", flags), &["cannot be used with"]);
    }
}

/// Tomii 1.2 ran `--fifo --custom` on its fifo scheduler; so does this runtime, saying so once.
#[test]
fn fifo_wins_over_custom_as_in_1_2() {
    let dir = tempfile::tempdir().unwrap();
    for flags in [&["--fifo", "--custom"][..], &["--custom", "--fifo"], &["--custom", "work-stealing", "--fifo"]] {
        let run =
            ok(run_in(dir.path(), "diamond.json", &[flags, &["--frames", "2", "--report", "r.json"][..]].concat()));
        assert_eq!(report(dir.path())["scheduler"]["name"], "fifo", "{flags:?}");
        let warnings: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("warning: ")).collect();
        assert_eq!(warnings.len(), 1, "{flags:?}: {}", run.stderr);
        assert!(warnings[0].contains("--fifo wins"), "{}", warnings[0]);
    }
}

#[test]
fn output_takes_what_stdout_would_have_printed() {
    let dir = tempfile::tempdir().unwrap();
    let run = ok(run_in(dir.path(), "diamond.json", &["--frames", "4", "--output", "out.txt"]));
    assert!(run.stdout.is_empty(), "stdout: {}", run.stdout);
    let written = std::fs::read_to_string(dir.path().join("out.txt")).unwrap();
    assert!(written.contains("4 frames") && written.ends_with('\n'), "out.txt: {written}");
    let run = ok(run_in(dir.path(), "diamond.json", &["--frames", "4", "--output", "stdout"]));
    assert!(run.stdout.contains("4 frames"), "stdout: {}", run.stdout);
}

/// Every flag of Tomii 1.2's `main` without effect here, with a value it took.
const WITHOUT_EFFECT: &[&[&str]] = &[
    &["--system-threads", "2"],
    &["--coalesce-barriers"],
    &["--batching-size", "8"],
    &["--batching-limit", "10"],
    &["--core-offset", "1"],
    &["--use-rdtsc"],
    &["--debug"],
    &["--no-fanout-bulk"],
    &["--batch-queue-capacity", "65536"],
    &["--spin-iterations", "32"],
    &["--sched-flush-threshold", "32"],
    &["--recv-pool-size", "1024"],
    &["--spin-wait-spin-iters", "64"],
    &["--spin-wait-yield-iters", "256"],
    &["--spin-wait-park-ns", "100"],
    &["--resolution-strategy", "multi-slot-batch"],
];

#[test]
fn flags_without_meaning_here_warn_once_each() {
    let dir = tempfile::tempdir().unwrap();
    for flag in WITHOUT_EFFECT {
        let run =
            ok(run_in(dir.path(), "diamond.json", &[flag, &["--frames", "2", "--report", "r.json"][..]].concat()));
        let warnings: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("warning: ")).collect();
        assert_eq!(warnings.len(), 1, "{flag:?}: {}", run.stderr);
        assert!(
            warnings[0].starts_with(&format!("warning: {} (Tomii 1.2) has no effect here: ", flag[0])),
            "{}",
            warnings[0]
        );
        assert_eq!(report(dir.path())["frames"], 2, "{flag:?}");
    }
    let all: Vec<&str> = WITHOUT_EFFECT.iter().flat_map(|flag| flag.iter().copied()).collect();
    let run = ok(run_in(dir.path(), "diamond.json", &[&all[..], &["--report", "r.json"]].concat()));
    assert_eq!(run.stderr.lines().filter(|l| l.starts_with("warning: ")).count(), WITHOUT_EFFECT.len());
    assert_eq!(report(dir.path())["status"], "completed");
    let quiet = ok(run_in(dir.path(), "diamond.json", &["--use-rdtsc", "--quiet"]));
    assert!(quiet.stderr.is_empty(), "--quiet prints no warning: {}", quiet.stderr);
}

/// The values Tomii 1.2 refused are refused, with its message and its exit status 1; a value
/// that is not a number is a usage error (exit 2), as clap made it there.
#[test]
fn values_1_2_refused_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path(), "diamond.json", &["--resolution-strategy", "greedy"]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert_error(&run, &["Unknown resolution strategy 'greedy'. Available: multi-slot-batch"]);
    let run = run_in(dir.path(), "diamond.json", &["--batch-queue-capacity", "0"]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert_error(&run, &["invalid config: batch_queue_capacity must be > 0 (got 0)"]);
    let run = run_in(dir.path(), "diamond.json", &["--spin-iterations", "-3"]);
    assert_eq!(run.status.code(), Some(2), "{}", run.stderr);
}

/// `--inits` prints the compiled graph in Tomii 1.2's layout, then the run goes on as usual.
#[test]
fn inits_prints_the_graph_and_its_objects_then_runs() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.json");
    let text = r#"{
      "initializations": [
        {"name": "n", "args": [{"type": "usize", "value": "3"}]},
        {"name": "table", "function": "checksum", "factor": "n", "args": [{"type": "$ref", "value": "$index"}]}
      ],
      "nodes": [
        {"name": "each", "function": "checksum", "factor": "n", "args": [{"type": "$ref", "value": "table"}]},
        {"name": "all", "function": "checksum_list", "args": [{"type": "$res", "predecessor": {"name": "each", "indexes": "0-n"}}]}
      ],
      "post_nodes": [{"name": "last", "function": "noop", "args": []}]
    }"#;
    std::fs::write(&graph, text).unwrap();
    let mut command = tomii();
    command.current_dir(dir.path()).arg("--json").arg(&graph).arg("--dylib").arg(synthetic_lib());
    command.args(["--workers", "2", "--max-streams", "2", "--inits", "--report", "r.json"]);
    let run = ok(finish(command));
    let expected = [
        "",
        "Graph:",
        "  0: \"each\" (3)",
        "  1: \"all\" (1)",
        "Post Nodes:",
        "  0: \"last\" (1)",
        "Initial Nodes: [0]",
        "Successors: [[1], []]",
        "",
        "Initialized Objects:",
        "  0: [$index]",
        "  1: [Usize(2)] $workers",
        "  2: [Usize(3)] n",
        "  3: checksum($index) x 3, computed when the run starts: table",
        "",
        "",
    ]
    .join("\n");
    assert!(run.stdout.starts_with(&expected), "stdout:\n{}", run.stdout);
    assert_eq!(report(dir.path())["frames"], 2);
    // With --output, the listing goes where stdout's lines go.
    let mut command = tomii();
    command.current_dir(dir.path()).arg("--json").arg(&graph).arg("--dylib").arg(synthetic_lib());
    command.args(["--inits", "--output", "out.txt"]);
    let run = ok(finish(command));
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let written = std::fs::read_to_string(dir.path().join("out.txt")).unwrap();
    assert!(written.contains("Initialized Objects:") && written.contains("1 frames"), "{written}");
}

/// `--record-stream N` keeps frame N's rows only.
#[test]
fn record_stream_keeps_one_frame() {
    let dir = tempfile::tempdir().unwrap();
    ok(run_in(dir.path(), "diamond.json", &["--slots", "2", "--max-streams", "5", "--record", "--record-stream", "3"]));
    let text = std::fs::read_to_string(dir.path().join("scheduler_record.csv")).unwrap();
    let frames: BTreeMap<String, usize> = text.lines().skip(1).fold(BTreeMap::new(), |mut seen, line| {
        *seen.entry(line.split(',').nth(1).unwrap().to_owned()).or_default() += 1;
        seen
    });
    let everything = ok(run_in(dir.path(), "diamond.json", &["--max-streams", "1", "--record"]));
    drop(everything);
    let one_frame = std::fs::read_to_string(dir.path().join("scheduler_record.csv")).unwrap().lines().count() - 1;
    assert_eq!(frames.into_iter().collect::<Vec<_>>(), vec![("3".to_owned(), one_frame)]);
}

/// `--slot-priority` on a network graph makes frames that find every slot busy wait for one, as
/// Tomii 1.2's buffering slots did; on a graph without a network source it warns (1.2 hung).
#[test]
fn slot_priority_waits_for_a_slot_or_says_it_has_no_effect() {
    let dir = tempfile::tempdir().unwrap();
    let run = ok(run_in(dir.path(), "diamond.json", &["--slot-priority", "--max-streams", "3", "--report", "r.json"]));
    assert_eq!(report(dir.path())["frames"], 3);
    let warnings: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(warnings[0].contains("--slot-priority (Tomii 1.2) has no effect on a graph without a network source"));
    let mut command = tomii();
    command
        .current_dir(dir.path())
        .arg("--json")
        .arg(graph_path("v12/network.json"))
        .arg("--dylib")
        .arg(synthetic_lib());
    command.args(["--slot-priority", "--slots", "2", "--max-streams", "0", "--max-runtime", "1", "--report", "r.json"]);
    let run = ok(finish(command));
    assert!(!run.stderr.contains("--slot-priority"), "{}", run.stderr);
    let report = report(dir.path());
    assert_eq!(report["network"]["on_slots_busy"], "wait", "{report}");
    let clash = run_in(dir.path(), "diamond.json", &["--slot-priority", "--on-slots-busy", "drop"]);
    assert_error(&clash, &["cannot be used with"]);
}

/// 1.2's scripts call the binary without a subcommand, often by the name `main`.
#[test]
fn the_subcommand_less_and_main_named_forms_are_tomii_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = tomii();
    command.current_dir(dir.path()).arg("--json").arg(graph_path("diamond.json")).arg("--dylib").arg(synthetic_lib());
    command.args(["--max-streams", "3", "--report", "r.json"]);
    ok(finish(command));
    assert_eq!(report(dir.path())["frames"], 3);
    let main = dir.path().join("target/release/main");
    std::fs::create_dir_all(main.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_tomii"), &main).unwrap();
    let mut command = std::process::Command::new(&main);
    command.current_dir(dir.path()).arg("--json").arg(graph_path("diamond.json")).arg("--dylib").arg(synthetic_lib());
    command.args(["--workers", "2", "--max-streams", "4", "--custom", "--timing", "t.txt", "--report", "r.json"]);
    ok(finish(command));
    assert_eq!(report(dir.path())["frames"], 4);
    assert_eq!(report(dir.path())["scheduler"]["name"], "priority");
    assert!(dir.path().join("t.txt").is_file());
    let help = finish({
        let mut command = std::process::Command::new(&main);
        command.arg("--help");
        command
    });
    assert!(help.status.success() && help.stdout.contains("--dylib"), "{}", help.stdout);
    let version = finish({
        let mut command = std::process::Command::new(&main);
        command.arg("--version");
        command
    });
    assert!(version.status.success() && version.stdout.starts_with("tomii "), "{}", version.stdout);
    let bare_help = finish({
        let mut command = tomii();
        command.arg("--help");
        command
    });
    assert!(bare_help.stdout.contains("schedulers"), "tomii --help is the command's own: {}", bare_help.stdout);
}

#[test]
fn max_runtime_stops_the_run_as_ctrl_c_does() {
    let dir = tempfile::tempdir().unwrap();
    let spin = dir.path().join("spin.json");
    let graph =
        r#"{"nodes": [{"name": "wait", "function": "spin", "factor": 2, "args": [{"type": "u64", "value": 200}]}]}"#;
    std::fs::write(&spin, graph).unwrap();
    let started = Instant::now();
    let mut command = tomii();
    command.current_dir(dir.path()).arg("run").arg(&spin).arg("--dylib").arg(synthetic_lib());
    command.args(["--frames", "0", "--max-runtime", "1", "--report", "r.json"]);
    let run = ok(finish(command));
    assert!(started.elapsed() < Duration::from_secs(30), "the run did not stop");
    assert!(run.stderr.contains("stopped: --max-runtime-s 1 reached"), "stderr: {}", run.stderr);
    let report = report(dir.path());
    assert_eq!(report["status"], "interrupted");
    assert_eq!(report["interrupted"], true);
    let frames = report["frames"].as_u64().unwrap();
    assert!(frames > 0, "no frame completed in a second");
    assert_eq!(report["tasks"], 2 * frames, "every frame that started completed");
}

// ---- warm-up frames ----

/// The trace CSV (`--trace`): rows of node, instance, frame, slot, worker, ready, start, end.
fn trace_rows(path: &Path) -> Vec<(String, Vec<u64>)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("node,instance,frame,slot,worker,ready_ns,start_ns,end_ns"));
    lines
        .map(|line| {
            let (node, rest) = line.split_once(',').unwrap();
            (node.to_owned(), rest.split(',').map(|f| f.parse().unwrap()).collect())
        })
        .collect()
}

/// Field indexes of a trace row's numbers.
const INSTANCE: usize = 0;
const FRAME: usize = 1;
const SLOT: usize = 2;
const WORKER: usize = 3;
const READY: usize = 4;
const START: usize = 5;
const END: usize = 6;

#[test]
fn exclude_streams_leaves_the_warm_up_frames_out_of_every_figure() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--workers", "2", "--slots", "3", "--frames", "30", "--trace", "t.csv", "--report", "r.json"];
    ok(run_in(dir.path(), "diamond.json", &[&flags[..], &["--exclude-streams", "10"]].concat()));
    let excluded = report(dir.path());
    let trace = trace_rows(&dir.path().join("t.csv"));
    assert_eq!(trace.len(), 90, "the trace keeps every frame");
    assert_eq!((excluded["frames"].as_u64(), excluded["frames_excluded"].as_u64()), (Some(20), Some(10)));
    assert_eq!(excluded["tasks"], 60);
    // per_node is sorted by kernel time, which two nodes of noop-like kernels may swap.
    let counts: std::collections::BTreeMap<&str, u64> = excluded["per_node"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["name"].as_str().unwrap(), n["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(counts, [("sink", 20), ("src", 40)].into());
    let per_worker: u64 = excluded["per_worker"].as_array().unwrap().iter().map(|w| w["tasks"].as_u64().unwrap()).sum();
    assert_eq!(per_worker, 60);
    // Each node's time is the trace's over the measured frames, and only theirs.
    for node in excluded["per_node"].as_array().unwrap() {
        let name = node["name"].as_str().unwrap();
        let sum = |measured_only: bool| -> f64 {
            let rows = trace.iter().filter(|(n, f)| n == name && (!measured_only || f[FRAME] >= 10));
            rows.map(|(_, f)| (f[END] - f[START]) as f64 / 1e3).sum()
        };
        let total = node["total_us"].as_f64().unwrap();
        assert!((total - sum(true)).abs() < 0.01 + total * 1e-6, "{name}: {total} µs, trace {}", sum(true));
        assert!(sum(false) - total > 0.0, "{name}: the warm-up frames' time is not left out");
    }
    // Without warm-up, the same run counts every frame.
    ok(run_in(dir.path(), "diamond.json", &flags));
    let all = report(dir.path());
    assert_eq!(
        (all["frames"].as_u64(), all["frames_excluded"].as_u64(), all["tasks"].as_u64()),
        (Some(30), Some(0), Some(90))
    );
}

#[test]
fn a_warm_up_of_every_frame_is_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    assert_error(
        &run_in(dir.path(), "diamond.json", &["--frames", "5", "--exclude-streams", "5"]),
        &["warm-up", "5 frames"],
    );
}

// ---- the timing file ----

/// A duration as the timing file writes it (`12.3450µs`), in ns.
fn duration_ns(text: &str) -> f64 {
    let text = text.trim();
    let (number, scale) = [("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)]
        .iter()
        .find_map(|(unit, scale)| text.strip_suffix(unit).map(|n| (n, *scale)))
        .unwrap_or_else(|| panic!("{text:?} is not a duration"));
    number.parse::<f64>().unwrap_or_else(|_| panic!("{text:?} is not a duration")) * scale
}

/// One task's entry of the per-task table.
#[derive(Debug, Default)]
struct TaskEntry {
    workers: u64,
    executions: u64,
    /// Avg/Stream, Avg/Task, Std, Min, Max, Total, in ns.
    timing: BTreeMap<String, f64>,
    /// Per worker: executions and total ns.
    per_worker: BTreeMap<u64, (u64, f64)>,
}

/// What a Tomii 1.2 script reads from a timing file.
#[derive(Debug, Default)]
struct TimingFile {
    summary: BTreeMap<String, String>,
    streams_per_slot: Vec<u64>,
    excluded: Option<(u64, u64)>,
    tasks: BTreeMap<String, TaskEntry>,
}

/// Parses the layout of README.md ("Tomii 1.2's timing file and scheduler record").
fn parse_timing(text: &str) -> TimingFile {
    let mut file = TimingFile::default();
    let mut task: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(slots) = trimmed.strip_prefix("Streams per Slot: ") {
            file.streams_per_slot = slots.split(", ").map(|s| s.split_once(": ").unwrap().1.parse().unwrap()).collect();
        } else if let Some(rest) = trimmed.strip_prefix("Excluded Streams (warm-up): ") {
            let (excluded, steady) = rest.split_once(" (Steady-state: ").unwrap();
            file.excluded = Some((excluded.parse().unwrap(), steady.trim_end_matches(" streams)").parse().unwrap()));
        } else if let Some(rest) = trimmed.strip_prefix("Task '") {
            let (name, counts) = rest.split_once("' - Workers: ").unwrap();
            let (workers, executions) = counts.split_once(", Total Executions: ").unwrap();
            let entry = TaskEntry {
                workers: workers.parse().unwrap(),
                executions: executions.parse().unwrap(),
                ..TaskEntry::default()
            };
            file.tasks.insert(name.to_owned(), entry);
            task = Some(name.to_owned());
        } else if let Some(parts) = trimmed.strip_prefix("Timing - ") {
            let entry = file.tasks.get_mut(task.as_ref().unwrap()).unwrap();
            for part in parts.split(", ") {
                let (key, value) = part.split_once(": ").unwrap();
                entry.timing.insert(key.to_owned(), duration_ns(value));
            }
        } else if let Some(parts) = trimmed.strip_prefix("Worker Summary: ") {
            let entry = file.tasks.get_mut(task.as_ref().unwrap()).unwrap();
            for part in parts.split(", ") {
                let (worker, rest) = part.strip_prefix("W-").unwrap().split_once(": ").unwrap();
                let (count, time) = rest.split_once(" (").unwrap();
                let time = time.split_once(") - ").unwrap().1;
                entry.per_worker.insert(worker.parse().unwrap(), (count.parse().unwrap(), duration_ns(time)));
            }
        } else if let Some((key, value)) = trimmed.split_once(": ") {
            file.summary.insert(key.to_owned(), value.to_owned());
        }
    }
    file
}

/// A duration of the file matches `ns`: to its 4 decimals, in the unit it was written in.
fn close(written: f64, ns: f64) -> bool {
    (written - ns).abs() <= ns * 1e-4 + 1.0
}

#[test]
fn the_timing_file_says_what_the_report_and_the_trace_say() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--workers", "2", "--slots", "2", "--frames", "24", "--exclude-streams", "4"];
    ok(run_in(
        dir.path(),
        "diamond.json",
        &[&flags[..], &["--timing", "t.txt", "--trace", "t.csv", "--report", "r.json"]].concat(),
    ));
    let text = std::fs::read_to_string(dir.path().join("t.txt")).unwrap();
    let timing = parse_timing(&text);
    let report = report(dir.path());
    let trace = trace_rows(&dir.path().join("t.csv"));

    assert!(text.starts_with("Time Statistics for t.txt\n"), "{text}");
    assert_eq!(timing.summary["Total Slots"], "2");
    assert_eq!(timing.summary["Total Streams Processed"], "24");
    assert_eq!(timing.excluded, Some((4, 20)));
    assert_eq!(timing.streams_per_slot.iter().sum::<u64>(), 24);
    for (slot, count) in timing.streams_per_slot.iter().enumerate() {
        let in_trace = trace.iter().filter(|(n, f)| n == "sink" && f[SLOT] == slot as u64).count() as u64;
        assert_eq!(*count, in_trace, "slot {slot}");
    }
    // The scripts' own pattern: `Avg Time Per Stream:\s+([\d.]+)(ms|µs|us|s)`.
    let (average, std) = timing.summary["Avg Time Per Stream"].split_once(" (std: ").expect("D (std: D)");
    let std = std.strip_suffix(')').expect("D (std: D)");
    assert!(
        close(duration_ns(std), report["latency_us"]["stdev"].as_f64().unwrap() * 1e3),
        "std {std} against {}",
        report["latency_us"]
    );
    assert!(
        ["ms", "µs", "s"].iter().any(|unit| average.strip_suffix(unit).is_some_and(|n| n.parse::<f64>().is_ok())),
        "{average}"
    );
    assert!(
        close(duration_ns(average), report["latency_us"]["mean"].as_f64().unwrap() * 1e3),
        "{average} against {}",
        report["latency_us"]
    );
    let (min, max) = timing.summary["Min/Max Per Stream"].split_once(" / ").unwrap();
    assert!(close(duration_ns(min), report["latency_us"]["min"].as_f64().unwrap() * 1e3));
    assert!(close(duration_ns(max), report["latency_us"]["max"].as_f64().unwrap() * 1e3));
    assert!(close(duration_ns(&timing.summary["Total Runtime"]), report["wall_time_s"].as_f64().unwrap() * 1e9));

    assert_eq!(timing.tasks.keys().collect::<Vec<_>>(), ["sink", "src"], "tasks by name");
    let mut compute = 0.0;
    for (name, entry) in &timing.tasks {
        let measured: Vec<&Vec<u64>> =
            trace.iter().filter(|(n, f)| n == name && f[FRAME] >= 4).map(|(_, f)| f).collect();
        let node = report["per_node"].as_array().unwrap().iter().find(|n| n["name"] == name.as_str()).unwrap();
        assert_eq!(entry.executions, node["count"].as_u64().unwrap(), "{name}");
        assert_eq!(entry.executions, measured.len() as u64, "{name}");
        let durations: Vec<f64> = measured.iter().map(|f| (f[END] - f[START]) as f64).collect();
        let total: f64 = durations.iter().sum();
        compute += total;
        assert!(close(entry.timing["Total"], total), "{name}: {} against {total}", entry.timing["Total"]);
        assert!(close(entry.timing["Min"], durations.iter().cloned().fold(f64::MAX, f64::min)), "{name} min");
        assert!(close(entry.timing["Max"], durations.iter().cloned().fold(0.0, f64::max)), "{name} max");
        assert!(close(entry.timing["Avg/Task"], (total / durations.len() as f64).floor()), "{name} avg/task");
        assert!(close(entry.timing["Avg/Stream"], (total / 20.0).floor()), "{name} avg/stream");
        assert_eq!(entry.workers, entry.per_worker.len() as u64);
        for (worker, (count, time)) in &entry.per_worker {
            let mine: Vec<&&Vec<u64>> = measured.iter().filter(|f| f[WORKER] == *worker).collect();
            assert_eq!(*count, mine.len() as u64, "{name} on worker {worker}");
            assert!(close(*time, mine.iter().map(|f| (f[END] - f[START]) as f64).sum()), "{name} on worker {worker}");
        }
    }
    assert!(close(duration_ns(&timing.summary["Total Compute Time"]), compute));
}

// ---- the scheduler record ----

/// A record row: `slot,job_id,start_ns,end_ns,worker,task_id,index`.
type Row = [u64; 7];
const R_SLOT: usize = 0;
const R_START: usize = 2;
const R_END: usize = 3;
const R_WORKER: usize = 4;
const R_TASK: usize = 5;

fn record_rows(path: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("slot,job_id,start_ns,end_ns,worker,task_id,index"));
    lines.map(|l| l.split(',').map(|f| f.parse().unwrap()).collect::<Vec<u64>>().try_into().unwrap()).collect()
}

/// The record read as Tomii 1.2's analysis scripts read it (TOMII-1.2 scripts `utils.py`,
/// `analyze_sched.py`, `average_time.py`, as the fact sheet describes them): IdType::MAX is the
/// largest task id; a latency row is one whose offset from it is a positive multiple of 3 with
/// offset / 3 in 1..=999; slots holding MAX or MAX − 1 are system slots, slots holding only task
/// id 0 receiver slots, the others worker slots.
struct AsScriptsRead {
    max: u64,
    latency: Vec<Row>,
    /// Rows of worker slots that are not latency rows: executions.
    executions: Vec<Row>,
    system_slots: Vec<u64>,
    receiver_slots: Vec<u64>,
    worker_slots: Vec<u64>,
    /// Every row (average_time's span is over all of them).
    all: Vec<Row>,
}

fn as_scripts_read(rows: &[Row]) -> AsScriptsRead {
    let max = rows.iter().map(|r| r[R_TASK]).max().unwrap();
    let is_latency = |r: &Row| {
        let offset = max - r[R_TASK];
        offset > 0 && offset.is_multiple_of(3) && (1..=999).contains(&(offset / 3))
    };
    let (latency, rest): (Vec<Row>, Vec<Row>) = rows.iter().partition(|r| is_latency(r));
    let mut by_slot: BTreeMap<u64, Vec<Row>> = BTreeMap::new();
    rest.iter().for_each(|r| by_slot.entry(r[R_SLOT]).or_default().push(*r));
    let (mut system_slots, mut receiver_slots, mut worker_slots) = (vec![], vec![], vec![]);
    for (slot, rows) in &by_slot {
        if max >= 10_000 && rows.iter().any(|r| r[R_TASK] == max || r[R_TASK] == max - 1) {
            system_slots.push(*slot);
        } else if rows.iter().all(|r| r[R_TASK] == 0) {
            receiver_slots.push(*slot);
        } else {
            worker_slots.push(*slot);
        }
    }
    let executions = rest.iter().filter(|r| worker_slots.contains(&r[R_SLOT])).copied().collect();
    AsScriptsRead { max, latency, executions, system_slots, receiver_slots, worker_slots, all: rows.to_vec() }
}

impl AsScriptsRead {
    /// average_time's per-worker idle: the span of all rows less the worker's busy time (its rows
    /// of worker slots, latency rows included, as average_time leaves them in), as a percentage
    /// of the worker's own span.
    fn idle_percent(&self) -> BTreeMap<u64, f64> {
        let start = self.all.iter().map(|r| r[R_START]).min().unwrap();
        let end = self.all.iter().map(|r| r[R_END]).max().unwrap();
        let mut per_worker: BTreeMap<u64, Vec<Row>> = BTreeMap::new();
        let in_worker_slots =
            self.latency.iter().chain(&self.executions).filter(|r| self.worker_slots.contains(&r[R_SLOT]));
        in_worker_slots.for_each(|r| per_worker.entry(r[R_WORKER]).or_default().push(*r));
        per_worker
            .into_iter()
            .map(|(worker, rows)| {
                let busy: u64 = rows.iter().map(|r| r[R_END] - r[R_START]).sum();
                let first = rows.iter().map(|r| r[R_START]).min().unwrap();
                let last = rows.iter().map(|r| r[R_END]).max().unwrap();
                (worker, 100.0 * ((end - start) as f64 - busy as f64) / (last - first) as f64)
            })
            .collect()
    }
}

#[test]
fn the_record_holds_the_trace_in_1_2_columns_and_1_2_row_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--workers", "2", "--slots", "3", "--frames", "12", "--trace", "t.csv", "--record", "rec.csv"];
    ok(run_in(dir.path(), "diamond.json", &flags));
    let rows = record_rows(&dir.path().join("rec.csv"));
    let read = as_scripts_read(&rows);
    let node_index = |name: &str| ["src", "sink"].iter().position(|n| *n == name).unwrap() as u64;
    let traced = trace_rows(&dir.path().join("t.csv"));
    let mut trace: Vec<Vec<u64>> = traced
        .iter()
        .map(|(name, f)| vec![f[SLOT], f[FRAME], f[START], f[END], f[WORKER], node_index(name), f[INSTANCE]])
        .collect();
    let mut executions: Vec<Vec<u64>> = read.executions.iter().map(|r| r.to_vec()).collect();
    trace.sort();
    executions.sort();
    // Every task row, and nothing else, is what the scripts take for an execution.
    assert_eq!(executions.len(), 36);
    assert_eq!(executions, trace);
    assert_eq!(read.max, 65535);
    assert_eq!((read.worker_slots.clone(), read.receiver_slots.clone()), (vec![0, 1, 2], vec![]));
    // System slots follow the task slots, one per worker: resolution and dispatch rows only.
    assert!(!read.system_slots.is_empty() && read.system_slots.iter().all(|s| (3..5).contains(s)));
    let system: Vec<&Row> = rows.iter().filter(|r| r[R_SLOT] >= 3).collect();
    assert!(system.iter().all(|r| [65535, 65534, 65532].contains(&r[R_TASK])));
    assert_eq!(system.iter().filter(|r| r[R_TASK] == 65534).count(), 12, "one dispatch per frame");
    assert_eq!(system.iter().filter(|r| r[R_TASK] == 65532).count(), 12, "the latency rows are there too");
    assert_eq!(system.iter().filter(|r| r[R_TASK] == 65535).count(), 36, "one resolution per task");
    // A resolution row starts where its task ended, on the same worker.
    for r in system.iter().filter(|r| r[R_TASK] == 65535) {
        assert!(traced.iter().any(|(_, f)| f[END] == r[R_START] && f[WORKER] == r[R_WORKER] && f[FRAME] == r[1]));
        assert!(r[R_END] >= r[R_START]);
    }
    // Latency rows: node 1 (sink) only, ready -> start of each of its executions; node 0's would
    // carry 65535, the resolution id, and are left out.
    assert_eq!(read.latency.len(), 12);
    for r in &read.latency {
        assert_eq!(r[R_TASK], 65535 - 3);
        let ran = traced.iter().find(|(n, f)| n == "sink" && f[FRAME] == r[1]).unwrap();
        assert_eq!((r[R_START], r[R_END], r[R_WORKER]), (ran.1[READY], ran.1[START], ran.1[WORKER]));
        assert_eq!(r[R_SLOT], 3 + ran.1[WORKER], "in the executing worker's system slot");
    }
}

/// A Tomii 1.2 graph file of kernels that take real time: a stage of 4 instances of 300 µs, each
/// followed by its own of 200 µs, gathered by one of 100 µs.
const STEADY: &str = r#"{
  "initializations": [{"name": "width", "args": [{"type": "usize", "value": "4"}]}],
  "nodes": [
    {"name": "front", "function": "spin", "factor": "width", "args": [{"type": "u64", "value": "300"}]},
    {"name": "back", "function": "spin", "factor": "width",
     "args": [{"type": "u64", "value": "200"}, {"type": "$res", "predecessor": {"name": "front", "indexes": "0"}}]},
    {"name": "gather", "function": "spin", "factor": 1,
     "args": [{"type": "u64", "value": "100"}, {"type": "$res", "predecessor": {"name": "back", "indexes": "0-4"}}]}
  ]
}"#;

#[test]
fn tomii_1_2_scripts_find_workers_busy_within_the_span_on_a_steady_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("steady.json"), STEADY).unwrap();
    let flags = ["--workers", "2", "--slots", "2", "--max-streams", "30", "--record", "rec.csv"];
    let mut command = tomii();
    command.current_dir(dir.path()).args(["run", "--json", "steady.json", "--dylib"]).arg(synthetic_lib());
    command.args(flags);
    ok(finish(command));
    let read = as_scripts_read(&record_rows(&dir.path().join("rec.csv")));
    assert_eq!(read.max, 65535);
    assert_eq!(read.worker_slots, vec![0, 1]);
    assert_eq!(read.system_slots, vec![2, 3]);
    // 30 frames of 9 tasks: every one is an execution, and those of nodes 1 and 2 have latency rows.
    assert_eq!(read.executions.len(), 30 * 9);
    assert_eq!(read.latency.len(), 30 * 5);
    let idle = read.idle_percent();
    assert_eq!(idle.len(), 2, "{idle:?}");
    assert!(idle.values().all(|p| (0.0..=100.0).contains(p)), "per-worker idle as average_time reads it: {idle:?}");
}

/// A Tomii 1.2 network graph: `$network` packets decoded one by one, then combined.
const NETWORK: &str = r#"{
  "initializations": [{"name": "antennas", "args": [{"type": "usize", "value": "4"}]}],
  "nodes": [
    {"name": "decode", "function": "checksum", "factor": "antennas",
     "args": [{"type": "$res", "predecessor": {"name": "$network", "indexes": "0"}}]},
    {"name": "combine", "function": "checksum_list",
     "args": [{"type": "$res", "predecessor": {"name": "decode", "indexes": "0-3"}}]}
  ],
  "network_config": {"socket_type": "udp", "num_sockets": 1, "packet_length": 64, "stream_packets": "antennas",
                     "address": "127.0.0.1", "start_port": 0}
}"#;

#[test]
fn a_network_record_has_1_2_packet_rows_and_numbers_network_0() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("net.json"), NETWORK).unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tomii"));
    command.current_dir(dir.path()).args(["run", "--json", "net.json", "--dylib"]).arg(synthetic_lib());
    // Frames that find both slots busy wait for one: with the default (drop), a dropped frame has no rows.
    command.args([
        "--workers",
        "2",
        "--slots",
        "2",
        "--max-streams",
        "5",
        "--record",
        "rec.csv",
        "--on-slots-busy",
        "wait",
    ]);
    let mut child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    // "listening on udp 127.0.0.1:PORT (Ctrl-C stops)" on stderr, its line ended later.
    let mut out = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = Vec::new();
    while !String::from_utf8_lossy(&line).contains("stops)") {
        let before = line.len();
        out.read_until(b')', &mut line).unwrap();
        assert!(line.len() > before, "the run ended before it listened: {}", String::from_utf8_lossy(&line));
    }
    let line = String::from_utf8_lossy(&line).into_owned();
    let port = line
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{line}"));
    let sent = std::process::Command::new(env!("CARGO_BIN_EXE_tomii"))
        .args(["send", "--udp", "--quiet", "--port", port, "--packet-length", "64", "--frame-packets", "4"])
        .args(["--frames", "5", "--rate", "2000"])
        .status()
        .unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the run did not end after its 5 frames");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(child.wait().unwrap().success());
    let rows = record_rows(&dir.path().join("rec.csv"));
    let read = as_scripts_read(&rows);
    assert_eq!(read.max, 65535);
    // Slots 0, 1 run tasks; 2, 3 are the workers' system slots; 4 (slots + system threads) the packets.
    // (A worker that ran no task of its own has no system slot: either or both may show.)
    assert_eq!(read.worker_slots, vec![0, 1]);
    assert!(
        !read.system_slots.is_empty() && read.system_slots.iter().all(|s| [2, 3].contains(s)),
        "{:?}",
        read.system_slots
    );
    assert_eq!(read.receiver_slots, vec![4]);
    let packets: Vec<&Row> = rows.iter().filter(|r| r[R_SLOT] == 4).collect();
    assert_eq!(packets.len(), 20, "one row per packet");
    let mut indexes: Vec<u64> = packets.iter().map(|r| r[6]).collect();
    indexes.sort();
    assert_eq!(indexes, [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3]);
    // `$network` is node 0 and never runs: decode is 1, combine 2, as 1.2 numbered them.
    let mut ran: Vec<u64> = read.executions.iter().map(|r| r[R_TASK]).collect();
    ran.dedup();
    assert_eq!(read.executions.len(), 25);
    assert!(ran.iter().all(|id| *id == 1 || *id == 2), "{ran:?}");
    let latency: BTreeMap<u64, usize> = read.latency.iter().fold(BTreeMap::new(), |mut m, r| {
        *m.entry((65535 - r[R_TASK]) / 3).or_default() += 1;
        m
    });
    assert_eq!(latency, BTreeMap::from([(1, 20), (2, 5)]));
}

#[test]
fn a_bare_record_goes_where_1_2_put_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    ok(run_in(dir.path(), "diamond.json", &["--frames", "2", "--timing", "out/run.1.txt", "--record"]));
    assert!(dir.path().join("out/run_sched.csv").is_file(), "no out/run_sched.csv");
    ok(run_in(dir.path(), "diamond.json", &["--frames", "2", "--record"]));
    let text = std::fs::read_to_string(dir.path().join("scheduler_record.csv")).expect("scheduler_record.csv");
    let tasks = text.lines().skip(1).filter(|l| l.split(',').nth(5).is_some_and(|id| id == "0" || id == "1"));
    assert_eq!(tasks.filter(|l| l.split(',').next() == Some("0")).count(), 2 * 3, "one row per task");
}
