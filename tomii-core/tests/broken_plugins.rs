//! Broken plugins written in C against the real header, through the real `tomii run` binary: a
//! scheduler that drops, duplicates or invents tasks, reports too many, fails, sleeps, hangs in
//! push or pop, segfaults, aborts, calls exit(), overflows its stack or writes past the pop
//! buffer; tables the loader refuses; a create that fails; a kernel that never returns. Every case
//! ends within its limit with a short `error:` line naming the plugin (a slow scheduler completes),
//! and never with a panic report or death by a signal ("Segmentation fault").
//!
//! One test per case; each child runs under a hard wall-clock limit ([`LIMIT`]) and is killed,
//! failing the test as hung, past it. The fixtures (tests/c/*.c, one `-D` macro per fault) are
//! compiled once per test binary with `$CC` (default `cc`). Needs `cargo build --workspace` first.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::c_fixtures::{CFixtures, Fixture};
use common::cli::{Run, finish_within, tomii};
use common::{graph_path, synthetic_lib};

/// How long one `tomii run` may take before the test kills it and fails it as hung. The plugins'
/// own limits are 300 ms; the rest is a debug build on a busy machine.
const LIMIT: Duration = Duration::from_secs(20);

/// Every library built from tests/c: (library stem, source file, extra compiler arguments).
const FIXTURES: &[Fixture] = &[
    ("broken_drop", "broken_runtime.c", &["-DFAULT_DROP"]),
    ("broken_duplicate", "broken_runtime.c", &["-DFAULT_DUPLICATE"]),
    ("broken_garbage", "broken_runtime.c", &["-DFAULT_GARBAGE"]),
    ("broken_overflow", "broken_runtime.c", &["-DFAULT_OVERFLOW"]),
    ("broken_error", "broken_runtime.c", &["-DFAULT_ERROR"]),
    ("crash_segfault", "crash_sched.c", &["-DCRASH_SEGFAULT"]),
    ("crash_abort", "crash_sched.c", &["-DCRASH_ABORT"]),
    ("crash_exit", "crash_sched.c", &["-DCRASH_EXIT"]),
    ("crash_stack", "crash_sched.c", &["-DCRASH_STACK"]),
    ("crash_overrun", "crash_sched.c", &["-DCRASH_OVERRUN"]),
    ("crash_heap", "crash_sched.c", &["-DCRASH_HEAP"]),
    ("crash_sleep_pop", "crash_sched.c", &["-DSLEEP_POP_US=2000"]),
    ("crash_hang_pop", "crash_sched.c", &["-DHANG_POP"]),
    ("crash_hang_push", "crash_sched.c", &["-DHANG_PUSH_AFTER"]),
    ("crash_hang_pop_once", "crash_sched.c", &["-DHANG_POP_ONCE"]),
    ("crash_null_create", "crash_sched.c", &["-DNULL_CREATE"]),
    ("crash_fail_create", "crash_sched.c", &["-DFAIL_CREATE"]),
    ("bad_major", "bad_sched.c", &["-DBAD_MAJOR"]),
    ("bad_size", "bad_sched.c", &["-DBAD_SIZE=40"]),
    ("bad_null_push", "bad_sched.c", &["-DNULL_PUSH"]),
    ("c_kernels", "kernels.c", &[]),
    ("c_kernels_interrupting", "kernels.c", &["-DINTERRUPT_ON_LOAD"]),
];

static BUILT: CFixtures = CFixtures::new(FIXTURES);

/// The plugin a case loads.
#[derive(Clone, Copy, Debug)]
enum Plugin {
    /// A C scheduler fixture, with the synthetic kernels.
    Scheduler(&'static str),
    /// The C kernels fixture, with the default scheduler.
    Kernels,
}

/// How the command must end.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ends {
    /// Exit status 0: the run completed.
    Completes,
    /// A non-zero exit status (never a signal), with the error line last on stderr.
    Fails,
    /// This exit status, the plugin's own (`exit(3)`), with the error line last on stderr.
    Exits(i32),
}

/// One broken plugin and what the command must say about it.
#[derive(Debug)]
struct Case {
    plugin: Plugin,
    /// Options of `tomii run` beyond the graph and the plugins.
    options: &'static [&'static str],
    ends: Ends,
    /// Texts the error line must contain, besides the plugin's name or path.
    says: &'static [&'static str],
    /// Lines the plugin itself may write to stderr before the error line.
    own_lines: usize,
}

/// The options of most cases: 2 workers, 3 slots, 30 frames of checksum_chain.json, and 300 ms
/// limits for stalls and stuck scheduler calls.
const RUN: &[&str] = &[
    "--workers",
    "2",
    "--slots",
    "3",
    "--frames",
    "30",
    "--stall-timeout-ms",
    "300",
    "--scheduler-call-timeout-ms",
    "300",
];

const fn fails(plugin: &'static str, says: &'static [&'static str]) -> Case {
    Case { plugin: Plugin::Scheduler(plugin), options: RUN, ends: Ends::Fails, says, own_lines: 0 }
}

/// Defines one test per case.
macro_rules! cases {
    ($($name:ident => $case:expr;)*) => {
        $(#[test] fn $name() { check(&$case) })*
    };
}

cases! {
    drop => fails("broken_drop", &["stalled", "300 ms", "was a pushed task lost?"]);
    duplicate => fails("broken_duplicate", &["returned the same task twice"]);
    garbage_handle => fails("broken_garbage", &["pop returned handle 0xffffffffffffffff, which the host never issued"]);
    count_over_max => fails("broken_overflow", &["pop reported 2 tasks for a buffer of 1"]);
    injected_error => fails("broken_error", &["pop failed: injected C error"]);
    sleep_in_pop => Case { ends: Ends::Completes, ..fails("crash_sleep_pop", &[]) };
    infinite_loop_in_pop => fails("crash_hang_pop", &["did not return from pop", "300 ms"]);
    infinite_loop_in_push => fails("crash_hang_push", &["did not return from push", "300 ms"]);
    kernel_never_returns => Case {
        plugin: Plugin::Kernels,
        options: &["--workers", "2", "--kernel-timeout-ms", "300"],
        ends: Ends::Fails,
        says: &[r#"kernel "spin_forever""#, r#"node "stuck""#, "300 ms"],
        own_lines: 0,
    };
    segfault => fails("crash_segfault", &["crashed with SIGSEGV", "cannot be contained in the process"]);
    abort => Case { own_lines: 1, ..fails("crash_abort", &["crashed with SIGABRT", "abort()"]) };
    exit => Case { ends: Ends::Exits(3), ..fails("crash_exit", &["exit() was called during the run"]) };
    stack_overflow => Case { own_lines: 3, ..fails("crash_stack", &["crashed with SIGSEGV (a stack overflow)"]) };
    write_past_the_buffer => Case {
        options: &["--workers", "2", "--slots", "3", "--frames", "30", "--pop-batch", "3"],
        ..fails("crash_overrun", &["wrote past the end of the 3 descriptors pop may write"])
    };
    wrong_major => fails("bad_major", &["scheduler ABI v2"]);
    small_vtable => fails("bad_size", &["scheduler table is 40 bytes"]);
    null_callback => fails("bad_null_push", &["NULL `push` callback"]);
    create_returns_a_null_state => fails("crash_null_create", &["failed to start", "NULL state"]);
    create_fails_without_a_message => fails("crash_fail_create", &["failed to start", "create returned status 1"]);
}

/// One pop that never returns, under `--on-scheduler-fault fallback`: the scheduler is ejected,
/// the run completes on the host's FIFO without the stuck worker, and the report says both.
#[test]
fn a_stuck_pop_under_fallback_ejects_the_scheduler_and_the_run_completes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report = dir.path().join("report.json");
    let mut command = tomii();
    command.arg("run").arg(graph_path("checksum_chain.json")).arg("--dylib").arg(synthetic_lib());
    command.arg("--scheduler-plugin").arg(BUILT.path("crash_hang_pop_once")).args(RUN);
    command.args(["--on-scheduler-fault", "fallback", "--report"]).arg(&report);
    let run = finish_within(command, LIMIT);
    let context = format!("status: {:?}\nstdout:\n{}\nstderr:\n{}", run.status, run.stdout, run.stderr);
    assert_eq!(run.status.code(), Some(0), "the run did not complete\n{context}");
    assert!(run.stdout.contains("c-crash on checksum_chain: 30 frames"), "no summary\n{context}");
    assert!(run.stderr.contains("was ejected") && run.stderr.contains("stayed stuck"), "{context}");
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(written["status"], "completed", "{written}");
    assert_eq!(written["frames"], 30, "{written}");
    assert_eq!(written["workers_unreported"].as_array().map(Vec::len), Some(1), "{written}");
    let violation = written["scheduler"]["ejected"]["violation"].as_str().unwrap_or_default();
    assert!(violation.contains("did not return from pop"), "{written}");
}

/// A simulation whose scheduler never returns from pop, or from push, ends as a run does: the
/// simulator's watchdog finds the call after `scheduler_call_timeout_ms` (a simulation's default,
/// 10 s) and the command exits with the engine's message, instead of spinning until killed. Both
/// run at once, each under [`LIMIT`].
#[test]
fn a_stuck_call_ends_a_simulation() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let costs = dir.path().join("costs.json");
    std::fs::write(&costs, r#"{"default": {"fixed": {"ns": 1000}}}"#).expect("the cost model");
    let simulate = |stem: &str| {
        let mut command = tomii();
        command.arg("simulate").arg(graph_path("checksum_chain.json")).arg("--cost-model").arg(&costs);
        command.arg("--scheduler-plugin").arg(BUILT.path(stem)).args(["--workers", "2", "--frames", "30"]);
        finish_within(command, LIMIT)
    };
    std::thread::scope(|scope| {
        let pop = scope.spawn(|| simulate("crash_hang_pop"));
        let push = scope.spawn(|| simulate("crash_hang_push"));
        for (call, ended) in [("pop", pop), ("push", push)] {
            let run = ended.join().expect("the simulation's command");
            let says = format!("did not return from {call} on ");
            common::cli::assert_error(&run, &["scheduler \"c-crash\"", &says, "within 10000 ms"]);
        }
    });
}

/// A Ctrl-C while the plugins load (the kernel library raises SIGINT as it is loaded) stops the
/// run before it starts, and the run still writes its report, saying it was interrupted: the
/// handler is in place before anything is loaded, so the signal does not kill the command.
#[test]
fn ctrl_c_while_the_plugins_load_stops_the_run_with_its_report() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report = dir.path().join("report.json");
    let mut command = tomii();
    command.arg("run").arg(graph_path("checksum_chain.json")).arg("--dylib").arg(synthetic_lib());
    command.arg("--dylib").arg(BUILT.path("c_kernels_interrupting"));
    command.args(["--frames", "0", "--report"]).arg(&report);
    let run = finish_within(command, LIMIT);
    let context = format!("status: {:?}\nstdout:\n{}\nstderr:\n{}", run.status, run.stdout, run.stderr);
    assert_eq!(run.status.code(), Some(0), "killed, or failed\n{context}");
    assert!(run.stderr.contains("interrupted: stopped after"), "{context}");
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(written["interrupted"], true, "{written}");
    assert!(written["frames"].as_u64().is_some_and(|frames| frames <= 1), "{written}");
}

/// A scheduler that writes past a heap block of its own: the run completes and writes its report;
/// glibc finds the corruption only when the library frees the block as it is unloaded, prints
/// "double free or corruption" and aborts. The command still ends with the crash line, naming the
/// scheduler that ran (not "if it was loading a plugin"), and saying the report was written.
/// (The fixture's overrun is laid out for glibc's heap, as the test machines have it.)
#[test]
fn a_corruption_found_after_the_run_names_the_plugins_that_ran() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report = dir.path().join("report.json");
    let mut command = tomii();
    command.arg("run").arg(graph_path("checksum_chain.json")).arg("--dylib").arg(synthetic_lib());
    command.arg("--scheduler-plugin").arg(BUILT.path("crash_heap")).args(RUN).arg("--report").arg(&report);
    let run = finish_within(command, LIMIT);
    let context = format!("status: {:?}\nstdout:\n{}\nstderr:\n{}", run.status, run.stdout, run.stderr);
    assert_no_crash_text(&run, &context);
    assert_eq!(run.status.code(), Some(128 + libc::SIGABRT), "not ended by the crash handler\n{context}");
    let line = run.stderr.lines().last().unwrap_or_default();
    assert!(line.starts_with("error: tomii crashed with SIGABRT"), "the crash line is not last\n{context}");
    for says in [" after the run, which ran ", "the scheduler \"c-crash\"", "test it with tomii.check"] {
        assert!(line.contains(says), "the crash line does not say {says:?}\n{context}");
    }
    assert!(line.ends_with(&format!("the report ({}) was written before the crash", report.display())), "{context}");
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!((&written["status"], &written["frames"]), (&"completed".into(), &30.into()), "{written}");
}

/// A plugin that crashes during the run leaves no report file, not an empty one that looks like a
/// report, and the crash line says none was written.
#[test]
fn a_crash_leaves_no_empty_report() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report = dir.path().join("report.json");
    let mut command = tomii();
    command.arg("run").arg(graph_path("checksum_chain.json")).arg("--dylib").arg(synthetic_lib());
    command.arg("--scheduler-plugin").arg(BUILT.path("crash_abort")).args(RUN).arg("--report").arg(&report);
    let run = finish_within(command, LIMIT);
    let context = format!("status: {:?}\nstdout:\n{}\nstderr:\n{}", run.status, run.stdout, run.stderr);
    assert_eq!(run.status.code(), Some(128 + libc::SIGABRT), "{context}");
    let line = error_line(&run, 1, &context);
    assert!(line.contains("crashed with SIGABRT") && line.contains("\"c-crash\""), "{context}");
    assert!(line.ends_with(&format!("; no report was written (--report {})", report.display())), "{context}");
    assert!(!report.exists(), "the crash left a report file\n{context}");
}

/// With no kernel time limit (the default), a kernel that never returns: one SIGTERM stops the
/// run, whose frame in flight never completes. After the stop grace (5 s) the command writes the
/// report of what ran, names the stuck kernel and exits with status 1, instead of ignoring the
/// signal for ever.
#[test]
fn a_stop_ends_a_run_stuck_in_a_kernel_after_the_grace() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report = dir.path().join("report.json");
    let (run, after) = stuck_run_signalled(dir.path(), &report, &[libc::SIGTERM]);
    let context = format!("status: {:?} {after:?} after the signal\nstderr:\n{}", run.status, run.stderr);
    assert_no_crash_text(&run, &context);
    assert_eq!(run.status.code(), Some(1), "{context}");
    assert!(after >= Duration::from_millis(4900), "it did not wait for the grace\n{context}");
    let line = error_line(&run, 0, &context);
    for says in ["within 5000 ms of its stop (the stop grace)", r#"in kernel "spin_forever" (node "stuck""#] {
        assert!(line.contains(says), "the error does not say {says:?}\n{context}");
    }
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!((&written["status"], &written["interrupted"]), (&"failed".into(), &true.into()), "{written}");
    assert!(written["error"].as_str().is_some_and(|e| e.contains("spin_forever")), "{written}");
    assert!(written["workers_unreported"].as_array().is_some_and(|stuck| !stuck.is_empty()), "{written}");
}

/// The same stuck run, Ctrl-C twice: the second ends it at once (well before the grace), with its
/// report written and the stuck kernel named, and status 130; it never leaves an empty report.
#[test]
fn a_second_ctrl_c_ends_a_stuck_run_at_once_with_its_report() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report = dir.path().join("report.json");
    let (run, after) = stuck_run_signalled(dir.path(), &report, &[libc::SIGINT, libc::SIGINT]);
    let context = format!("status: {:?} {after:?} after the last signal\nstderr:\n{}", run.status, run.stderr);
    assert_no_crash_text(&run, &context);
    assert_eq!(run.status.code(), Some(130), "{context}");
    assert!(after < Duration::from_millis(4500), "it waited for the grace\n{context}");
    let line = error_line(&run, 0, &context);
    assert!(line.contains("stopped at once, by a second stop request"), "{context}");
    assert!(line.contains(r#"in kernel "spin_forever""#), "{context}");
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(written["status"], "failed", "{written}");
    assert!(written["error"].as_str().is_some_and(|e| e.contains("second stop request")), "{written}");
}

/// `tomii run` of a graph whose kernel never returns (`--kernel-timeout-ms` left at 0), with its
/// `report`: once the kernel runs (it creates a mark file), the command gets `signals`, 200 ms
/// apart. What it did, and how long it took to end after the last signal.
fn stuck_run_signalled(dir: &Path, report: &Path, signals: &[libc::c_int]) -> (Run, Duration) {
    use std::io::Read;
    use std::process::Stdio;
    use std::time::Instant;
    let graph = dir.join("stuck.json");
    std::fs::write(&graph, r#"{"nodes": [{"name": "stuck", "function": "spin_forever", "factor": 2}]}"#).unwrap();
    let mark = dir.join("spinning");
    let mut command = tomii();
    command.arg("run").arg(&graph).arg("--dylib").arg(BUILT.path("c_kernels"));
    command.args(["--workers", "2", "--frames", "3", "--report"]).arg(report).env("TOMII_TEST_SPIN_MARK", &mark);
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let kill = |child: &mut std::process::Child, why: &str| -> ! {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{why}");
    };
    while !mark.exists() {
        if started.elapsed() > LIMIT || child.try_wait().unwrap().is_some() {
            kill(&mut child, "the kernel never started spinning");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for (at, &signal) in signals.iter().enumerate() {
        if at > 0 {
            std::thread::sleep(Duration::from_millis(200));
        }
        // SAFETY: a signal to our own child, which has not been waited for (it still exists).
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    }
    let signalled = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if signalled.elapsed() > LIMIT {
            kill(&mut child, "the command did not end after the signals");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let after = signalled.elapsed();
    let run = Run { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() };
    (run, after)
}

// ---- running ----

/// Runs the case's command under [`LIMIT`] and checks how it ended.
fn check(case: &Case) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (command, plugin) = command(case, dir.path());
    let run = finish_within(command, LIMIT);
    let context = format!("{case:?}\nstatus: {:?}\nstdout:\n{}\nstderr:\n{}", run.status, run.stdout, run.stderr);
    assert_no_crash_text(&run, &context);
    let Some(code) = run.status.code() else { panic!("killed by a signal\n{context}") };
    match case.ends {
        Ends::Completes => {
            assert_eq!(code, 0, "the run did not complete\n{context}");
            assert!(run.stdout.contains("c-crash on checksum_chain: 30 frames"), "no summary\n{context}");
            return;
        }
        Ends::Fails => assert_ne!(code, 0, "expected a failure\n{context}"),
        Ends::Exits(status) => assert_eq!(code, status, "expected the plugin's exit status\n{context}"),
    }
    let line = error_line(&run, case.own_lines, &context);
    let names = plugin_names(case, &plugin);
    assert!(names.iter().any(|name| line.contains(name.as_str())), "the error names none of {names:?}\n{context}");
    for needle in case.says {
        assert!(line.contains(needle), "the error does not say {needle:?}\n{context}");
    }
}

/// `tomii run` of the case's graph with its plugin, and the plugin's path.
fn command(case: &Case, dir: &Path) -> (Command, PathBuf) {
    let mut command = tomii();
    command.arg("run");
    let plugin = match case.plugin {
        Plugin::Scheduler(stem) => {
            let path = BUILT.path(stem);
            command.arg(graph_path("checksum_chain.json")).arg("--dylib").arg(synthetic_lib());
            command.arg("--scheduler-plugin").arg(&path);
            path
        }
        Plugin::Kernels => {
            let graph = dir.join("stuck.json");
            let text = r#"{"nodes": [{"name": "stuck", "function": "spin_forever", "factor": 2}]}"#;
            std::fs::write(&graph, text).expect("writing the graph");
            let path = BUILT.path("c_kernels");
            command.arg(&graph).arg("--dylib").arg(&path);
            path
        }
    };
    command.args(case.options);
    (command, plugin)
}

/// What may name the case's plugin: its path, or a scheduler's or kernel's name.
fn plugin_names(case: &Case, path: &Path) -> Vec<String> {
    let name = match case.plugin {
        Plugin::Scheduler(stem) if stem.starts_with("broken_") => "\"c-broken\"",
        Plugin::Scheduler(_) => "\"c-crash\"",
        Plugin::Kernels => "kernel \"spin_forever\"",
    };
    vec![path.display().to_string(), name.to_owned()]
}

/// Nothing on stderr looks like a panic report or an unexplained crash.
fn assert_no_crash_text(run: &Run, context: &str) {
    for text in ["panicked", "RUST_BACKTRACE", "stack backtrace", "Segmentation fault", "core dumped"] {
        assert!(!run.stderr.contains(text), "stderr shows {text:?}\n{context}");
    }
}

/// The `error:` line, last on stderr (before the line saying how far the run got, if it started),
/// after at most `own_lines` lines the plugin wrote itself.
fn error_line<'r>(run: &'r Run, own_lines: usize, context: &str) -> &'r str {
    let lines: Vec<&str> = run.stderr.lines().filter(|line| !line.starts_with("the run stopped after ")).collect();
    assert!(!lines.is_empty() && lines.len() <= own_lines + 1, "expected one error line on stderr\n{context}");
    let line = lines[lines.len() - 1];
    assert!(line.starts_with("error: "), "the last line does not start with \"error: \"\n{context}");
    assert!(line.len() < 2100, "an error line of {} bytes\n{context}", line.len());
    line
}
