//! Record and replay (`replay.rs`, schedulers/replay): a decisions file written by `tomii run` and
//! by `tomii simulate` replays on the engine and in simulation with every worker running the
//! recorded tasks in the recorded order; a file whose task is missing stops the replay naming
//! what each worker waits for; a file that is no decisions file is named. A recording that ends
//! with a violation (a task the scheduler lost, a broken contract) or with a checker's finding
//! replays to it and names it; a recorded library that is gone is named missing.

mod common;

use std::path::{Path, PathBuf};

use common::cli::{assert_error, finish, tomii};
use common::{broken_lib, graph_path, plugin, synthetic_lib};

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

/// Records a run of the broken scheduler (tests/broken_scheduler) with `fault` from the start,
/// which fails; the file's last line says so.
fn record_failing_run(dir: &Path, fault: &str) -> PathBuf {
    let decisions = dir.join(format!("{fault}.decisions"));
    let mut command = tomii();
    command.arg("run").arg(graph_path("diamond.json")).arg("--dylib").arg(synthetic_lib());
    command.arg("--scheduler-plugin").arg(broken_lib()).args(["--sched-opt", &format!("fault={fault}")]);
    command.args(["--sched-opt", "after=2", "--workers", "1", "--slots", "1", "--frames", "2"]);
    command.args(["--stall-timeout-ms", "200", "--quiet", "--record-decisions"]).arg(&decisions);
    let done = finish(command);
    assert!(!done.status.success(), "the broken scheduler's run failed: {}", done.stdout);
    decisions
}

/// The file's last line: how the run ended.
fn ending(file: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(file).expect("the decisions");
    let last: serde_json::Value = serde_json::from_str(text.lines().last().expect("a line")).expect("JSON");
    last["end"].clone()
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
        assert_eq!((header["format"].as_str(), header["version"].as_u64()), (Some("tomii-decisions"), Some(2)));
        assert_eq!(header["scheduler"]["name"], scheduler);
        assert_eq!(text.lines().count(), 1 + 60 + 1, "one line per task, then the ending");
        let end = ending(&file);
        assert_eq!(
            (end["status"].as_str(), end["frames"].as_u64(), end["tasks"].as_u64()),
            (Some("completed"), Some(20), Some(60))
        );
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
    std::fs::write(&file, text.replacen("\"version\":2", "\"version\":9", 1)).expect("a file");
    assert_error(&replay(&file, &[]), &["version 9 of the decisions format", "reads versions 1 to 2"]);
    std::fs::write(&file, text.replacen("{\"end\":", "{\"ended\":", 1)).expect("a file");
    assert_error(&replay(&file, &[]), &["x.decisions: line 62: not the run's ending"]);
}

#[test]
fn a_file_of_version_1_without_its_ending_replays() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let text = std::fs::read_to_string(record_run(dir.path(), "fifo")).expect("the decisions");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.pop();
    let file = dir.path().join("v1.decisions");
    std::fs::write(&file, lines.join("\n").replacen("\"version\":2", "\"version\":1", 1) + "\n").expect("a file");
    let done = replay(&file, &[]);
    assert!(done.status.success() && done.stdout.contains("every worker ran the recorded tasks"), "{}", done.stderr);
}

#[test]
fn a_lost_task_replays_as_the_same_stall_naming_the_task() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = record_failing_run(dir.path(), "drop");
    let end = ending(&file);
    assert_eq!(end["status"], "failed");
    let error = end["error"].as_str().expect("the run's error");
    assert!(error.starts_with("scheduler \"broken\" stalled"), "{error}");
    for extra in [&[][..], &["--simulate"][..]] {
        let done = replay(&file, extra);
        assert!(done.status.success(), "{extra:?}: {}", done.stderr);
        let lines: Vec<&str> = done.stdout.lines().collect();
        assert_eq!(lines[0], format!("the recording ends with its run failing: {error}"), "{}", done.stdout);
        assert!(
            lines[1].contains("reproduced it: every worker ran its recorded tasks in the recorded order (2 in all)")
                && lines[1].contains("then stalled as the recording did, with sink[0] of frame 0 ready and never run")
                && lines[1].ends_with("never handed it out (a lost task)"),
            "{}",
            done.stdout
        );
    }
}

#[test]
fn a_broken_contract_replays_up_to_its_violation_and_names_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = record_failing_run(dir.path(), "duplicate");
    let error = ending(&file)["error"].as_str().expect("the run's error").to_owned();
    assert!(error.contains("broke its contract: returned the same task twice"), "{error}");
    let done = replay(&file, &[]);
    assert!(done.status.success(), "{}", done.stderr);
    assert!(done.stdout.starts_with(&format!("the recording ends with its run failing: {error}\n")), "{}", done.stdout);
    assert!(
        done.stdout.contains("reproduced the run up to it: every worker ran its recorded tasks in the recorded order")
            && done.stdout.contains("the violation was in the recorded scheduler's next call"),
        "{}",
        done.stdout
    );
    // A replay that cannot reach the violation says so, naming it.
    let text = std::fs::read_to_string(&file).expect("the decisions");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.remove(1);
    std::fs::write(&file, lines.join("\n") + "\n").expect("a file");
    let line = assert_error(
        &replay(&file, &[]),
        &["the recording ends with its run failing: ", "returned the same task twice"],
    );
    assert!(
        line.contains("; the replay on the engine did not reproduce it: the replay on the engine diverged"),
        "{line}"
    );
}

#[test]
fn a_checkers_finding_is_named_with_the_replay_that_reproduces_its_run() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = record_run(dir.path(), "fifo");
    let found = r#"{"found": {"by": "tomii.check property \"trace invariants\"", "problems": ["fifo order: sink[0] of frame 2 started before src[1] of frame 2"]}}"#;
    let text = std::fs::read_to_string(&file).expect("the decisions") + found + "\n";
    std::fs::write(&file, text).expect("a file");
    let done = replay(&file, &[]);
    assert!(done.status.success(), "{}", done.stderr);
    assert_eq!(
        done.stdout.lines().collect::<Vec<_>>(),
        [
            "the recording ends with what tomii.check property \"trace invariants\" found in its run: fifo order: sink[0] \
             of frame 2 started before src[1] of frame 2",
            "the replay on the engine reproduced the run it was found in: every worker ran its recorded tasks in the \
             recorded order (60 in all), as the recording does",
        ]
    );
}

#[test]
fn a_recorded_library_that_is_gone_is_named_missing() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let text = std::fs::read_to_string(record_run(dir.path(), "fifo")).expect("the decisions");
    let mut header: serde_json::Value = serde_json::from_str(text.lines().next().expect("a header")).expect("JSON");
    header["scheduler"]["path"] = dir.path().join("gone/libmy_sched.so").display().to_string().into();
    let file = dir.path().join("gone.decisions");
    let rest: Vec<&str> = text.lines().skip(1).collect();
    std::fs::write(&file, format!("{header}\n{}\n", rest.join("\n"))).expect("a file");
    let done = replay(&file, &[]);
    assert!(done.status.success(), "{}", done.stderr);
    assert!(
        done.stderr.contains("note: the recorded scheduler's library ")
            && done.stderr.contains("gone/libmy_sched.so is missing (deleted or moved since it was recorded)")
            && !done.stderr.contains("changed"),
        "{}",
        done.stderr
    );
    header["scheduler"]["path"] = plugin("libtomii_sched_fifo.so").display().to_string().into();
    header["dylibs"] = serde_json::json!([dir.path().join("gone/libkernels.so")]);
    std::fs::write(&file, format!("{header}\n{}\n", rest.join("\n"))).expect("a file");
    assert_error(
        &replay(&file, &[]),
        &[
            "gone.decisions: the kernel library it recorded is missing",
            "gone/libkernels.so",
            "--dylib PATH",
            "--simulate",
        ],
    );
    // Neither is needed to replay in simulation, nor the kernels when --dylib gives them.
    assert!(replay(&file, &["--simulate"]).status.success());
    let kernels = synthetic_lib();
    assert!(replay(&file, &["--dylib", kernels.to_str().expect("a path")]).status.success());
}
