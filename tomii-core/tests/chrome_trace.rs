//! The trace in Chrome's trace-event format (`--trace-format chrome`, engine/chrome_trace.rs):
//! valid JSON in the object format Perfetto and chrome://tracing open, one complete event per
//! task execution on its worker's lane, one per frame on its slot's lane, the run's events as
//! instants; the same tasks as the CSV trace; still a readable file when the run fails.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::cli::{finish, tomii};
use common::{fifo_lib, graph_path, synthetic_lib};
use serde_json::{Value as Json, json};
use tomii_core::engine::{ChromeLayout, ChromeTrace, TaskRecord};

fn run(graph: &str, trace: &Path, extra: &[&str]) -> common::cli::Run {
    let mut command = tomii();
    command
        .arg("run")
        .arg(graph_path(graph))
        .arg("--dylib")
        .arg(synthetic_lib())
        .arg("--scheduler-plugin")
        .arg(fifo_lib())
        .arg("--trace")
        .arg(trace)
        .args(["--quiet"])
        .args(extra);
    finish(command)
}

fn read(path: &Path) -> Json {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON ({e}):\n{text}", path.display()))
}

fn events<'a>(trace: &'a Json, ph: &str, cat: Option<&str>) -> Vec<&'a Json> {
    let all = trace["traceEvents"].as_array().expect("traceEvents is a list");
    all.iter().filter(|e| e["ph"] == ph && cat.is_none_or(|cat| e["cat"] == cat)).collect()
}

/// (node, instance, frame, slot, worker) of every task, from the Chrome trace.
fn chrome_tasks(trace: &Json) -> BTreeSet<(String, u64, u64, u64, u64)> {
    events(trace, "X", Some("task"))
        .into_iter()
        .map(|e| {
            let args = &e["args"];
            let field = |key: &str| args[key].as_u64().unwrap_or_else(|| panic!("{key} in {e}"));
            (
                e["name"].as_str().expect("a name").to_owned(),
                field("instance"),
                field("frame"),
                field("slot"),
                e["tid"].as_u64().expect("tid"),
            )
        })
        .collect()
}

#[test]
fn a_run_writes_every_task_frame_and_lane() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (chrome, csv) = (dir.path().join("t.json"), dir.path().join("t.csv"));
    let args = ["--workers", "2", "--slots", "2", "--frames", "5", "--warmup-frames", "1"];
    let done = run("diamond.json", &chrome, &[&args[..], &["--trace-format", "chrome"]].concat());
    assert!(done.status.success(), "{}", done.stderr);
    let trace = read(&chrome);
    assert_eq!(trace["displayTimeUnit"], "ns");
    assert_eq!(trace["otherData"]["status"], "completed");
    assert_eq!((trace["otherData"]["workers"].as_u64(), trace["otherData"]["slots"].as_u64()), (Some(2), Some(2)));
    // Lanes: a thread per worker and per slot, named.
    let names: BTreeSet<String> = events(&trace, "M", None)
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().expect("a lane name").to_owned())
        .collect();
    assert_eq!(names, ["slot 0", "slot 1", "worker 0", "worker 1"].map(String::from).into());
    // Three tasks a frame, five frames (the warm-up included), each task once.
    let tasks = events(&trace, "X", Some("task"));
    assert_eq!(tasks.len(), 15);
    for task in &tasks {
        assert!(task["dur"].as_f64().expect("dur") >= 0.0 && task["ts"].as_f64().expect("ts") >= 0.0, "{task}");
        assert!(task["args"]["queued_us"].as_f64().expect("queued_us") >= 0.0, "{task}");
    }
    let frames: Vec<u64> = {
        let mut frames: Vec<u64> =
            events(&trace, "X", Some("frame")).iter().map(|e| e["args"]["frame"].as_u64().expect("frame")).collect();
        frames.sort_unstable();
        frames
    };
    assert_eq!(frames, [0, 1, 2, 3, 4]);
    let instants: Vec<&str> = events(&trace, "i", None).iter().map(|e| e["name"].as_str().expect("a name")).collect();
    assert_eq!(instants, ["warm-up ends", "run ends"]);

    // The same tasks as the CSV trace of the same run shape.
    let done = run("diamond.json", &csv, &args);
    assert!(done.status.success(), "{}", done.stderr);
    let text = std::fs::read_to_string(&csv).expect("the CSV trace");
    // Which slot a frame takes, and which worker a task, depend on timing: compared without them.
    let rows: BTreeSet<(String, u64, u64)> = text
        .lines()
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            (f[0].to_owned(), f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    let from_chrome: BTreeSet<(String, u64, u64)> =
        chrome_tasks(&trace).into_iter().map(|(n, i, f, _, _)| (n, i, f)).collect();
    assert_eq!(rows, from_chrome);
}

#[test]
fn a_failed_run_still_writes_a_readable_trace() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("t.json");
    let done = run("fail.json", &path, &["--frames", "3", "--trace-format", "chrome"]);
    assert!(!done.status.success());
    let trace = read(&path);
    assert_eq!(trace["otherData"]["status"], "failed");
    let end = events(&trace, "i", None).into_iter().find(|e| e["name"] == "run ends").expect("a run-ends event");
    assert!(end["args"]["error"].as_str().is_some_and(|e| e.contains("disk on fire")), "{end}");
    assert!(!events(&trace, "X", Some("task")).is_empty());
}

#[test]
fn the_format_needs_a_trace_file() {
    let mut command = tomii();
    command.arg("run").arg(graph_path("diamond.json")).args(["--trace-format", "chrome"]);
    let done = finish(command);
    assert!(!done.status.success());
    assert!(done.stderr.contains("not provided: --trace <FILE>"), "{}", done.stderr);
}

#[test]
fn frames_are_written_once_complete_and_the_rest_at_the_end() {
    let layout = ChromeLayout {
        node_names: vec!["a \"quoted\" node".to_owned(), "b".to_owned()],
        workers: 1,
        slots: 2,
        tasks_per_frame: 2,
        warmup_frames: 0,
    };
    let task = |frame, node, start_ns| TaskRecord {
        frame,
        ready_ns: start_ns / 2,
        start_ns,
        end_ns: start_ns + 1_500,
        node,
        instance: 0,
        slot: (frame % 2) as u32,
        worker: 0,
    };
    let mut trace = ChromeTrace::begin(Vec::new(), layout).expect("in memory");
    trace.records(&[task(0, 0, 1_000), task(1, 0, 2_000), task(0, 1, 3_000)]).expect("in memory");
    let text = String::from_utf8(trace.finish(None).expect("in memory")).expect("UTF-8");
    let parsed: Json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    let frames = events(&parsed, "X", Some("frame"));
    // Frame 0 completes with its second task; frame 1 never does and is written at the end.
    assert_eq!(frames.iter().map(|e| &e["args"]["frame"]).collect::<Vec<_>>(), [&json!(0), &json!(1)]);
    assert_eq!((frames[0]["ts"].as_f64(), frames[0]["dur"].as_f64()), (Some(0.5), Some(4.0)));
    assert_eq!(frames[1]["args"]["tasks"], 1);
    let names: Vec<&str> = events(&parsed, "X", Some("task")).iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a \"quoted\" node", "a \"quoted\" node", "b"]);
    assert_eq!(parsed["otherData"], json!({}));
}
