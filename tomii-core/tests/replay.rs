//! Record and replay (`replay.rs`, schedulers/replay): a decisions file written by `tomii run` and
//! by `tomii simulate` replays on the engine and in simulation with every worker running the
//! recorded tasks in the recorded order; a file whose task is missing stops the replay naming
//! what each worker waits for; a file that is no decisions file is named.

mod common;

use std::path::{Path, PathBuf};

use common::cli::{assert_error, finish, tomii};
use common::{graph_path, plugin, synthetic_lib};

fn record_run(dir: &Path, scheduler: &str) -> PathBuf {
    let decisions = dir.join(format!("{scheduler}.decisions"));
    let mut command = tomii();
    command.arg("run").arg(graph_path("diamond.json")).arg("--dylib").arg(synthetic_lib());
    command.arg("--scheduler-plugin").arg(plugin(&format!("libtomii_sched_{}.so", scheduler.replace('-', "_"))));
    command.args(["--workers", "2", "--slots", "2", "--frames", "20", "--quiet", "--record-decisions"]).arg(&decisions);
    let done = finish(command);
    assert!(done.status.success(), "{}", done.stderr);
    decisions
}

fn replay(file: &Path, extra: &[&str]) -> common::cli::Run {
    let mut command = tomii();
    command.arg("replay").arg(file).args(extra).env("TOMII_SCHEDULER_PATH", common::plugin_dir());
    finish(command)
}

#[test]
fn every_shipped_schedulers_run_replays_on_the_engine_and_in_simulation() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for scheduler in
        ["fifo", "c-fifo", "random", "priority", "critical-path", "locality", "work-stealing", "multi-slot-batch"]
    {
        let file = record_run(dir.path(), scheduler);
        let text = std::fs::read_to_string(&file).expect("the decisions");
        let header: serde_json::Value = serde_json::from_str(text.lines().next().expect("a header")).expect("JSON");
        assert_eq!((header["format"].as_str(), header["version"].as_u64()), (Some("tomii-decisions"), Some(1)));
        assert_eq!(header["scheduler"]["name"], scheduler);
        assert_eq!(text.lines().count(), 1 + 60, "one line per task");
        for extra in [&[][..], &["--simulate"][..]] {
            let done = replay(&file, extra);
            assert!(done.status.success(), "{scheduler} {extra:?}: {}", done.stderr);
            assert!(
                done.stdout.contains("replayed 60 task(s) of 20 frame(s)")
                    && done.stdout.contains("every worker ran the recorded tasks in the recorded order"),
                "{}",
                done.stdout
            );
        }
    }
}

#[test]
fn a_simulation_replays_exactly() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let graph = dir.path().join("g.json");
    std::fs::write(
        &graph,
        r#"{"nodes": [{"name": "a", "function": "spin", "factor": 12, "args": [7]},
                      {"name": "b", "function": "spin", "args": [3, {"type": "$res", "predecessor": {"name": "a", "index": "all"}}]}]}"#,
    )
    .expect("a graph");
    let file = dir.path().join("s.decisions");
    let report = dir.path().join("r.json");
    let mut command = tomii();
    command.arg("simulate").arg(&graph).args(["--workers", "8", "--slots", "3", "--frames", "15", "--seed", "4"]);
    command
        .arg("--scheduler-plugin")
        .arg(plugin("libtomii_sched_random.so"))
        .arg("-q")
        .arg("--record-decisions")
        .arg(&file);
    let done = finish(command);
    assert!(done.status.success(), "{}", done.stderr);
    let done = replay(&file, &["--report", report.to_str().expect("a path")]);
    assert!(done.status.success(), "{}", done.stderr);
    assert!(
        done.stdout.contains("replayed 195 task(s) of 15 frame(s) in simulation on 8 worker(s)"),
        "{}",
        done.stdout
    );
    let replayed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("r")).expect("JSON");
    assert_eq!(replayed["scheduler"]["name"], "replay");
    assert_eq!(replayed["scheduler"]["stats"]["replayed"], 195);
}

#[test]
fn a_missing_task_stops_the_replay_naming_what_waits() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = record_run(dir.path(), "fifo");
    let text = std::fs::read_to_string(&file).expect("the decisions");
    let mut lines: Vec<&str> = text.lines().collect();
    // Drop frame 3's sink (node 1): nobody runs it, so frame 3 never completes.
    let sink = lines.iter().position(|line| line.split(',').nth(1) == Some("3") && line.split(',').nth(2) == Some("1"));
    lines.remove(sink.expect("frame 3's sink"));
    let broken = dir.path().join("broken.decisions");
    std::fs::write(&broken, lines.join("\n") + "\n").expect("a file");
    let done = replay(&broken, &["--simulate"]);
    // Which one it names depends on the recorded run's order: a worker whose next recorded task
    // waits for the missing one, or, when the missing task was its worker's last, the task itself.
    let line = assert_error(&done, &["the replay in simulation stopped"]);
    assert!(line.contains("waits for") || line.contains("sink[0] of frame 3"), "{line}");
}

#[test]
fn a_file_that_is_no_decisions_file_is_named() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("x.decisions");
    std::fs::write(&file, "node,instance\n").expect("a file");
    assert_error(&replay(&file, &[]), &["x.decisions: line 1: not the header of a decisions file"]);
    let text = std::fs::read_to_string(record_run(dir.path(), "fifo")).expect("the decisions");
    std::fs::write(&file, text.replacen("\"version\":1", "\"version\":9", 1)).expect("a file");
    assert_error(&replay(&file, &[]), &["version 9 of the decisions format", "reads version 1"]);
}
